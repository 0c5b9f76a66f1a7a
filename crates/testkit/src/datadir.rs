//! Datadirs on disk: one `mariadb-install-db` run copied per server, and reuse of a directory a
//! previous (stopped) topology left behind.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Result, TestkitError};
use crate::tools::file_tail;

/// Runs `mariadb-install-db` once into `datadir`.
pub(crate) fn install_datadir(install_db: &Path, datadir: &Path, log: &Path) -> Result<()> {
    let out = std::fs::File::create(log)
        .map_err(|e| TestkitError::io(format!("create {}", log.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| TestkitError::io("dup install-db log", e))?;
    let mut datadir_arg = std::ffi::OsString::from("--datadir=");
    datadir_arg.push(datadir);
    // A private tmpdir: two topologies installing at once must not share /tmp's temp tables.
    let tmpdir = datadir.with_extension("tmp");
    std::fs::create_dir_all(&tmpdir)
        .map_err(|e| TestkitError::io(format!("create {}", tmpdir.display()), e))?;
    let mut tmpdir_arg = std::ffi::OsString::from("--tmpdir=");
    tmpdir_arg.push(&tmpdir);
    let status = Command::new(install_db)
        .arg("--no-defaults")
        .arg("--user=root")
        .arg(datadir_arg)
        .arg(tmpdir_arg)
        .args([
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            "--skip-name-resolve",
            // Same InnoDB sizes as the servers, so their first start does not resize the redo log.
            "--innodb-log-file-size=48M",
            "--innodb-buffer-pool-size=64M",
        ])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .status()
        .map_err(|e| TestkitError::io(format!("run {}", install_db.display()), e))?;
    if status.success() {
        Ok(())
    } else {
        Err(TestkitError::InstallDb {
            datadir: datadir.to_path_buf(),
            output: format!("{status}\n{}", file_tail(log, 30)),
        })
    }
}

pub(crate) fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)
        .map_err(|e| TestkitError::io(format!("create {}", to.display()), e))?;
    let entries = std::fs::read_dir(from)
        .map_err(|e| TestkitError::io(format!("read {}", from.display()), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| TestkitError::io(format!("read {}", from.display()), e))?;
        let target = to.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| TestkitError::io(format!("stat {}", entry.path().display()), e))?;
        if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target).map_err(|e| {
                TestkitError::io(
                    format!("copy {} to {}", entry.path().display(), target.display()),
                    e,
                )
            })?;
        }
    }
    Ok(())
}

/// Empties `dir` of a previous topology's files; refuses foreign files and running servers.
pub(crate) fn prepare_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .map_err(|e| TestkitError::io(format!("create {}", dir.display()), e))?;
    let entries = std::fs::read_dir(dir)
        .map_err(|e| TestkitError::io(format!("read {}", dir.display()), e))?;
    let mut ours = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| TestkitError::io(format!("read {}", dir.display()), e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let is_ours = matches!(
            name.as_str(),
            "primary"
                | "template"
                | "template.tmp"
                | "install-db.log"
                | "topology.env"
                | ".topology.env.tmp"
        ) || name
            .strip_prefix("replica")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
        if !is_ours {
            return Err(TestkitError::Invalid(format!(
                "{} holds {name}, which is not from a testkit topology: give an empty or new directory",
                dir.display()
            )));
        }
        if let Some(pid) = running_server(&entry.path()) {
            return Err(TestkitError::Invalid(format!(
                "a server of another topology still runs in {} (pid {pid})",
                entry.path().display()
            )));
        }
        ours.push(entry.path());
    }
    for path in ours {
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| TestkitError::io(format!("remove {}", path.display()), e))?;
    }
    Ok(())
}

/// The PID of a live `mariadbd` whose pid file is in `server_dir`.
fn running_server(server_dir: &Path) -> Option<u32> {
    let pid: u32 = std::fs::read_to_string(server_dir.join("mysqld.pid"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    (comm.trim() == "mariadbd").then_some(pid)
}
