//! Locating the MariaDB executables, with an error that names the package to install.

use std::path::{Path, PathBuf};

use crate::error::{Result, TestkitError};

/// Directories searched after `$PATH`: Debian puts `mariadbd` in /usr/sbin, often not on a user's PATH.
const EXTRA_DIRS: &[&str] = &[
    "/usr/sbin",
    "/usr/local/sbin",
    "/sbin",
    "/usr/bin",
    "/usr/local/bin",
];

/// Debian package that ships a tool.
fn package_of(name: &str) -> &'static str {
    match name {
        "mariadb" | "mysql" | "mariadb-admin" | "mariadb-dump" => "mariadb-client",
        _ => "mariadb-server",
    }
}

/// Finds `name` on `$PATH` or in the sbin directories; the error says which package provides it.
pub fn find_binary(name: &str) -> Result<PathBuf> {
    let path_dirs = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    path_dirs
        .into_iter()
        .chain(EXTRA_DIRS.iter().map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| TestkitError::MissingBinary {
            name: name.to_string(),
            package: package_of(name),
        })
}

/// Finds `name` like [`find_binary`] or panics with the package to install: tests fail loudly, never skip.
pub fn require_binary(name: &str) -> PathBuf {
    match find_binary(name) {
        Ok(path) => path,
        Err(e) => panic!("{e}"),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The last `lines` lines of a text file, or a note saying why it could not be read.
pub(crate) fn file_tail(path: &Path, lines: usize) -> String {
    match std::fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("<cannot read {}: {e}>", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_binary_names_the_package() {
        let err = find_binary("mariadbd-does-not-exist")
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("mariadbd-does-not-exist not found: install mariadb-server (apt-get install -y mariadb-server mariadb-client)")
        );
    }

    #[test]
    fn finds_sh() {
        assert!(find_binary("sh").is_ok());
    }
}
