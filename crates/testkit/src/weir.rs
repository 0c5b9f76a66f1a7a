//! Running the weir binary under test: a config file and datadir in scratch space, stderr captured
//! to a file, readiness by polling its ports, and memory readings from /proc.

use std::ffi::OsString;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::error::{Result, TestkitError};
use crate::procs::{kill_and_reap, send_signal, wait_timeout, POLL};
use crate::reaper;
use crate::tools::file_tail;
use crate::topology::Topology;
use crate::{ED_PASS, ED_USER, WEIR_PASS, WEIR_USER};

/// How long weir may take to accept connections on its ports.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// A running weir process; SIGKILLed on drop if still running.
#[derive(Debug)]
pub struct WeirProcess {
    /// Client port (first TCP address of `mysql_variables.interfaces`).
    pub port: u16,
    /// Admin port (first TCP address of `admin_variables.mysql_ifaces`), 0 when not configured.
    pub admin_port: u16,
    /// Directory given with `-D`.
    pub datadir: PathBuf,
    /// The config file given with `-c`.
    pub config_path: PathBuf,
    /// File receiving the process's stderr and stdout.
    pub stderr_path: PathBuf,
    child: Child,
    exited: Option<ExitStatus>,
    bin: PathBuf,
    dir: PathBuf,
    extra_args: Vec<OsString>,
}

impl WeirProcess {
    /// Writes `config_toml` to a scratch dir, runs `bin -c CONFIG -D DATADIR` and waits (up to
    /// 20 s) until the client and admin ports named in the config accept TCP connections.
    pub fn spawn(bin: &Path, config_toml: &str) -> Result<WeirProcess> {
        Self::spawn_with_args(bin, config_toml, &[])
    }

    /// Like [`WeirProcess::spawn`], with extra command-line arguments (e.g. `--initial`).
    pub fn spawn_with_args(
        bin: &Path,
        config_toml: &str,
        extra_args: &[&str],
    ) -> Result<WeirProcess> {
        let (port, admin_port) = config_ports(config_toml)?;
        let dir = reaper::scratch_dir("weir")?;
        let datadir = dir.join("data");
        std::fs::create_dir_all(&datadir)
            .map_err(|e| TestkitError::io(format!("create {}", datadir.display()), e))?;
        let config_path = dir.join("weir.toml");
        std::fs::write(&config_path, config_toml)
            .map_err(|e| TestkitError::io(format!("write {}", config_path.display()), e))?;
        let stderr_path = dir.join("stderr.log");
        let extra_args: Vec<OsString> = extra_args.iter().map(OsString::from).collect();
        let child = launch(bin, &config_path, &datadir, &stderr_path, &extra_args)?;
        let mut weir = WeirProcess {
            port,
            admin_port,
            datadir,
            config_path,
            stderr_path,
            child,
            exited: None,
            bin: bin.to_path_buf(),
            dir,
            extra_args,
        };
        weir.wait_ready(READY_TIMEOUT)?;
        Ok(weir)
    }

    fn error(&self, reason: String) -> TestkitError {
        TestkitError::Weir {
            reason,
            stderr_path: self.stderr_path.clone(),
            stderr_tail: self.stderr_tail(40),
        }
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            if let Some(status) = self.try_wait()? {
                return Err(self.error(format!("weir exited during startup ({status})")));
            }
            let ready = accepts(self.port) && (self.admin_port == 0 || accepts(self.admin_port));
            if ready {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                return Err(self.error(format!(
                    "ports {} / {} not accepting connections after {timeout:?}",
                    self.port, self.admin_port
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// PID of the current weir process.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The exit status if the process has exited (reaping it), `None` while it runs.
    pub fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        if self.exited.is_none() {
            self.exited = self
                .child
                .try_wait()
                .map_err(|e| TestkitError::io("wait for weir", e))?;
            if self.exited.is_some() {
                reaper::untrack(self.child.id());
            }
        }
        Ok(self.exited)
    }

    /// SIGTERM and wait up to `timeout` for a clean exit; after that it is SIGKILLed and the
    /// timeout is returned as an error (a graceful shutdown that hangs is a bug).
    pub fn terminate(&mut self, timeout: Duration) -> Result<ExitStatus> {
        if let Some(status) = self.try_wait()? {
            return Ok(status);
        }
        send_signal(self.child.id(), Signal::SIGTERM)?;
        match wait_timeout(&mut self.child, timeout)? {
            Some(status) => {
                self.exited = Some(status);
                reaper::untrack(self.child.id());
                Ok(status)
            }
            None => {
                let status = self.kill()?;
                Err(self.error(format!(
                    "did not exit within {timeout:?} of SIGTERM (killed: {status})"
                )))
            }
        }
    }

    /// SIGKILL and reap.
    pub fn kill(&mut self) -> Result<ExitStatus> {
        if let Some(status) = self.try_wait()? {
            return Ok(status);
        }
        let status = kill_and_reap(&mut self.child)?;
        self.exited = Some(status);
        reaper::untrack(self.child.id());
        Ok(status)
    }

    /// Terminates weir if it runs (20 s grace) and starts it again with the same config, datadir
    /// and arguments; waits until its ports accept connections.
    pub fn restart(&mut self) -> Result<()> {
        self.terminate(Duration::from_secs(20))?;
        self.child = launch(
            &self.bin,
            &self.config_path,
            &self.datadir,
            &self.stderr_path,
            &self.extra_args,
        )?;
        self.exited = None;
        self.wait_ready(READY_TIMEOUT)
    }

    /// Like [`WeirProcess::restart`], with `extra_args` (e.g. `--initial`) replacing the extra
    /// command-line arguments, for this start and the next ones.
    pub fn restart_with_args(&mut self, extra_args: &[&str]) -> Result<()> {
        self.extra_args = extra_args.iter().map(OsString::from).collect();
        self.restart()
    }

    /// Everything weir wrote to stderr (and stdout) so far.
    pub fn stderr(&self) -> String {
        std::fs::read(&self.stderr_path)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    }

    /// The last `lines` lines of stderr.
    pub fn stderr_tail(&self, lines: usize) -> String {
        file_tail(&self.stderr_path, lines)
    }

    /// Current resident set size (VmRSS) in KiB.
    pub fn rss_kib(&self) -> Result<u64> {
        proc_status_kib(self.child.id(), "VmRSS")
    }

    /// Peak resident set size (VmHWM) in KiB.
    pub fn peak_rss_kib(&self) -> Result<u64> {
        proc_status_kib(self.child.id(), "VmHWM")
    }

    /// `mysql://user:pass@127.0.0.1:PORT/` for weir's client port.
    pub fn url(&self, user: &str, pass: &str) -> String {
        format!("mysql://{user}:{pass}@127.0.0.1:{}/", self.port)
    }
}

impl Drop for WeirProcess {
    fn drop(&mut self) {
        let _ = self.kill();
        if std::thread::panicking() {
            eprintln!(
                "weir-testkit: weir (pid {}) stderr tail:\n{}",
                self.child.id(),
                self.stderr_tail(60)
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn launch(
    bin: &Path,
    config: &Path,
    datadir: &Path,
    stderr_path: &Path,
    extra_args: &[OsString],
) -> Result<Child> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(stderr_path)
        .map_err(|e| TestkitError::io(format!("open {}", stderr_path.display()), e))?;
    let err = out
        .try_clone()
        .map_err(|e| TestkitError::io("dup stderr file", e))?;
    let child = Command::new(bin)
        .arg("-c")
        .arg(config)
        .arg("-D")
        .arg(datadir)
        .args(extra_args)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| TestkitError::io(format!("spawn {}", bin.display()), e))?;
    reaper::track(child.id())?;
    Ok(child)
}

fn accepts(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_ok()
}

fn proc_status_kib(pid: u32, field: &str) -> Result<u64> {
    let path = format!("/proc/{pid}/status");
    let text =
        std::fs::read_to_string(&path).map_err(|e| TestkitError::io(format!("read {path}"), e))?;
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| TestkitError::Invalid(format!("no {field} in {path}")))
}

/// The client port and admin port (0 when absent) named in a weir config: the first TCP
/// address of `mysql_variables.interfaces` and of `admin_variables.mysql_ifaces`.
pub fn config_ports(config_toml: &str) -> Result<(u16, u16)> {
    let table: toml::Table = config_toml
        .parse()
        .map_err(|e| TestkitError::Invalid(format!("weir config is not valid TOML: {e}")))?;
    let lookup = |section: &str, key: &str| {
        table
            .get(section)
            .and_then(|s| s.get(key))
            .and_then(|v| v.as_str())
            .and_then(first_tcp_port)
    };
    let port = lookup("mysql_variables", "interfaces").ok_or_else(|| {
        TestkitError::Invalid("weir config has no TCP address in mysql_variables.interfaces".into())
    })?;
    Ok((port, lookup("admin_variables", "mysql_ifaces").unwrap_or(0)))
}

/// First `host:port` entry of a `;`-separated interface list (Unix socket paths are skipped).
fn first_tcp_port(list: &str) -> Option<u16> {
    list.split([';', ','])
        .map(str::trim)
        .filter(|entry| !entry.starts_with('/'))
        .find_map(|entry| entry.rsplit_once(':')?.1.parse().ok())
}

/// A weir config for `topology`: hostgroup 0 = primary, 1 = replicas, users weir and weir_ed,
/// monitor disabled. `extra_mysql_vars` are `key = value` lines added to `[mysql_variables]`;
/// a key given there replaces the default of the same name.
pub fn weir_config(
    topology: &Topology,
    port: u16,
    admin_port: u16,
    extra_mysql_vars: &str,
) -> String {
    let extra_keys: Vec<&str> = extra_mysql_vars
        .lines()
        .filter_map(|line| Some(line.split_once('=')?.0.trim()))
        .collect();
    let defaults = [
        ("threads", "2".to_string()),
        ("interfaces", format!("\"127.0.0.1:{port}\"")),
        ("monitor_enabled", "false".to_string()),
    ];
    let mut out = format!(
        "[admin_variables]\nmysql_ifaces = \"127.0.0.1:{admin_port}\"\n\n[mysql_variables]\n"
    );
    for (key, value) in &defaults {
        if !extra_keys.contains(key) {
            out.push_str(&format!("{key} = {value}\n"));
        }
    }
    for line in extra_mysql_vars
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
    {
        out.push_str(line);
        out.push('\n');
    }
    let servers =
        std::iter::once((&topology.primary, 0)).chain(topology.replicas.iter().map(|r| (r, 1)));
    for (server, hostgroup) in servers {
        out.push_str(&format!(
            "\n[[mysql_servers]]\naddress = \"127.0.0.1\"\nport = {}\nhostgroup = {hostgroup}\nmax_connections = 200\n",
            server.port
        ));
    }
    for (user, pass) in [(WEIR_USER, WEIR_PASS), (ED_USER, ED_PASS)] {
        out.push_str(&format!(
            "\n[[mysql_users]]\nusername = \"{user}\"\npassword = \"{pass}\"\ndefault_hostgroup = 0\n"
        ));
    }
    out.push_str(
        "\n[[mysql_replication_hostgroups]]\nwriter_hostgroup = 0\nreader_hostgroup = 1\ncomment = \"testkit\"\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_read_from_config() {
        let cfg = "[admin_variables]\nmysql_ifaces = \"127.0.0.1:7032\"\n[mysql_variables]\ninterfaces = \"/tmp/w.sock;127.0.0.1:7033\"\n";
        assert_eq!(config_ports(cfg).ok(), Some((7033, 7032)));
        assert_eq!(
            config_ports("[mysql_variables]\ninterfaces = \"0.0.0.0:1\"").ok(),
            Some((1, 0))
        );
        assert!(config_ports("[mysql_variables]\n").is_err());
    }
}
