//! Listener (`host:port;/socket`) and credential (`user:pass;...`) lists, as the
//! `mysql-interfaces`, `admin-mysql_ifaces` and `admin-*_credentials` variables hold them.

use std::fmt;
use std::path::PathBuf;

/// One listening address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ListenAddr {
    /// `host:port`, ready for `TcpListener::bind` (IPv6 hosts are bracketed: `[::]:6033`).
    Tcp(String),
    /// A Unix socket path.
    Unix(PathBuf),
}

impl fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ListenAddr::Tcp(hp) => f.write_str(hp),
            ListenAddr::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Parses an interface list such as `0.0.0.0:6033;[::1]:6033;/tmp/weir.sock`.
///
/// Entries are separated by `;` (`,` is accepted too); empty entries are ignored; entries
/// starting with `/` are Unix socket paths; others are `host:port`, where an IPv6 host may be
/// written bare (`:::6033`) or bracketed (`[::]:6033`). Port 0 asks the OS for a free port.
pub fn parse_interfaces(s: &str) -> Result<Vec<ListenAddr>, String> {
    let mut out: Vec<ListenAddr> = Vec::new();
    for entry in s.split([';', ',']).map(str::trim).filter(|e| !e.is_empty()) {
        let addr = parse_one_interface(entry)?;
        if out.contains(&addr) {
            return Err(format!("'{entry}' is listed twice"));
        }
        out.push(addr);
    }
    Ok(out)
}

fn parse_one_interface(entry: &str) -> Result<ListenAddr, String> {
    if entry.starts_with('/') {
        return Ok(ListenAddr::Unix(PathBuf::from(entry)));
    }
    let Some((host, port)) = entry.rsplit_once(':') else {
        return Err(format!(
            "'{entry}': expected host:port or an absolute Unix socket path"
        ));
    };
    let port: u16 = port
        .parse()
        .map_err(|_| format!("'{entry}': invalid port '{port}' (expected 0..=65535)"))?;
    if host.is_empty() || host == "[]" {
        return Err(format!("'{entry}': missing host"));
    }
    if host.chars().any(char::is_whitespace) {
        return Err(format!("'{entry}': the host contains spaces"));
    }
    let bracketed = host.starts_with('[') || host.ends_with(']');
    if bracketed && !(host.starts_with('[') && host.ends_with(']')) {
        return Err(format!("'{entry}': unbalanced brackets around the host"));
    }
    let host = if !bracketed && host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_string()
    };
    Ok(ListenAddr::Tcp(format!("{host}:{port}")))
}

/// Parses a credential list `user:pass;user2:pass2`. Empty entries are ignored; the password
/// is everything after the first `:` of an entry. Messages never include passwords.
pub fn parse_credentials(s: &str) -> Result<Vec<(String, String)>, String> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (n, entry) in s
        .split(';')
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .enumerate()
    {
        let n = n + 1;
        let Some((user, pass)) = entry.split_once(':') else {
            return Err(format!(
                "credential {n} has no ':' between user and password"
            ));
        };
        if user.is_empty() {
            return Err(format!("credential {n} has an empty user name"));
        }
        if pass.is_empty() {
            return Err(format!(
                "credential {n} (user '{user}') has an empty password"
            ));
        }
        if out.iter().any(|(u, _)| u == user) {
            return Err(format!("user '{user}' is listed twice"));
        }
        out.push((user.to_string(), pass.to_string()));
    }
    Ok(out)
}
