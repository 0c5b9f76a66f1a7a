//! One `mariadbd` process: its command line, readiness, SQL through the `mariadb` CLI, and the
//! stop / kill / restart operations that failure tests need.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use parking_lot::Mutex;

use crate::error::{Result, TestkitError};
use crate::procs::{kill_and_reap, send_signal, wait_timeout, POLL};
use crate::reaper;
use crate::tools::file_tail;

/// How long a server may take to accept connections after being spawned.
pub(crate) const READY_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a graceful shutdown may take before the server is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// Unix socket paths longer than this do not fit in `sockaddr_un`.
const MAX_SOCKET_PATH: usize = 100;

/// What a server needs to be spawned; everything lives under `dir`.
pub(crate) struct ServerSpec {
    pub name: String,
    pub dir: PathBuf,
    pub port: u16,
    pub server_id: u32,
    pub read_only: bool,
}

/// A running (or deliberately stopped) MariaDB server owned by the kit.
#[derive(Debug)]
pub struct MariaDb {
    /// Role name: `primary`, `replica1`, `replica2`, ...
    pub name: String,
    /// TCP port on 127.0.0.1.
    pub port: u16,
    /// Unix socket path.
    pub socket: PathBuf,
    /// Data directory.
    pub datadir: PathBuf,
    /// `server_id` (1 for the primary, 2.. for replicas).
    pub server_id: u32,
    /// Error log (also receives the process's stdout/stderr).
    pub log_path: PathBuf,
    pid: AtomicU32,
    child: Mutex<Option<Child>>,
    mariadbd: PathBuf,
    client: PathBuf,
    args: Vec<OsString>,
}

impl MariaDb {
    /// Spawns `mariadbd` on an initialised datadir `spec.dir/data`; does not wait for readiness.
    pub(crate) fn spawn(spec: ServerSpec, mariadbd: &Path, client: &Path) -> Result<MariaDb> {
        let datadir = spec.dir.join("data");
        let socket = spec.dir.join("mysqld.sock");
        let log_path = spec.dir.join("error.log");
        let pid_file = spec.dir.join("mysqld.pid");
        if socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(TestkitError::Invalid(format!(
                "socket path {} is too long for a Unix socket: use a shorter WEIR_TESTKIT_DIR",
                socket.display()
            )));
        }
        let mut args: Vec<OsString> = vec!["--no-defaults".into(), "--user=root".into()];
        args.push(path_arg("--datadir=", &datadir));
        // Each server gets its own tmpdir rather than the shared /tmp.
        let tmpdir = datadir.with_extension("tmp");
        std::fs::create_dir_all(&tmpdir)
            .map_err(|e| TestkitError::io(format!("create {}", tmpdir.display()), e))?;
        args.push(path_arg("--tmpdir=", &tmpdir));
        args.push(path_arg("--socket=", &socket));
        args.push(path_arg("--pid-file=", &pid_file));
        args.push(path_arg("--log-error=", &log_path));
        args.push(format!("--port={}", spec.port).into());
        args.push(format!("--server-id={}", spec.server_id).into());
        args.extend(
            [
                "--bind-address=127.0.0.1",
                "--skip-name-resolve",
                "--log-bin=mariadb-bin",
                "--relay-log=relay-bin",
                "--binlog-format=ROW",
                "--log-slave-updates",
                // Strict mode stays off: a test that writes to a replica by mistake should not
                // break replication for every later test sharing the topology.
                "--gtid-strict-mode=0",
                "--slave-net-timeout=10",
                "--plugin-load-add=auth_ed25519",
                "--innodb-buffer-pool-size=64M",
                "--innodb-log-file-size=48M",
                "--innodb-flush-log-at-trx-commit=2",
                "--sync-binlog=0",
                // Above 2,000 clients through a weir allowed 2,000 connections, with another
                // weir, the monitor and replication connected too (bench multiplex_2000).
                "--max-connections=2500",
                "--max-connect-errors=1000000",
                "--max-allowed-packet=128M",
                "--local-infile=1",
                // Debian's packaged defaults; compiled-in defaults would be latin1.
                "--character-set-server=utf8mb4",
                "--collation-server=utf8mb4_general_ci",
            ]
            .map(OsString::from),
        );
        if spec.read_only {
            args.push("--read-only=1".into());
        }
        let server = MariaDb {
            name: spec.name,
            port: spec.port,
            socket,
            datadir,
            server_id: spec.server_id,
            log_path,
            pid: AtomicU32::new(0),
            child: Mutex::new(None),
            mariadbd: mariadbd.to_path_buf(),
            client: client.to_path_buf(),
            args,
        };
        server.launch()?;
        Ok(server)
    }

    /// Starts the process with the stored command line (the previous one must be reaped).
    fn launch(&self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .map_err(|e| TestkitError::io(format!("open {}", self.log_path.display()), e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| TestkitError::io("dup log file", e))?;
        let child = Command::new(&self.mariadbd)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .process_group(0)
            .spawn()
            .map_err(|e| TestkitError::io(format!("spawn {}", self.mariadbd.display()), e))?;
        let pid = child.id();
        self.pid.store(pid, Ordering::SeqCst);
        *self.child.lock() = Some(child);
        reaper::track(pid)
    }

    /// PID of the current (or last) `mariadbd` process.
    pub fn pid(&self) -> u32 {
        self.pid.load(Ordering::SeqCst)
    }

    /// True while the process has not exited.
    pub fn is_running(&self) -> bool {
        let mut guard = self.child.lock();
        match guard.as_mut().map(|c| c.try_wait()) {
            Some(Ok(None)) => true,
            Some(_) => {
                self.forget_child(&mut guard);
                false
            }
            None => false,
        }
    }

    fn forget_child(&self, guard: &mut Option<Child>) {
        if let Some(mut child) = guard.take() {
            let _ = child.try_wait();
            reaper::untrack(child.id());
        }
    }

    /// The last `lines` lines of the server's error log.
    pub fn log_tail(&self, lines: usize) -> String {
        file_tail(&self.log_path, lines)
    }

    fn start_error(&self, reason: String) -> TestkitError {
        TestkitError::Start {
            server: self.name.clone(),
            reason,
            log: self.log_path.clone(),
            log_tail: self.log_tail(40),
        }
    }

    /// Polls until the server answers a handshake on its socket and on TCP, or fails fast with
    /// the log tail when the process exits.
    pub fn wait_ready(&self, timeout: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            {
                let mut guard = self.child.lock();
                let Some(child) = guard.as_mut() else {
                    return Err(self.start_error("the server is not running".into()));
                };
                let exited = child
                    .try_wait()
                    .map_err(|e| TestkitError::io(format!("wait for {}", self.name), e))?;
                if let Some(status) = exited {
                    self.forget_child(&mut guard);
                    return Err(
                        self.start_error(format!("mariadbd exited during startup ({status})"))
                    );
                }
            }
            if probe_unix(&self.socket) && probe_tcp(self.port) {
                return Ok(());
            }
            if start.elapsed() >= timeout {
                return Err(
                    self.start_error(format!("not accepting connections after {timeout:?}"))
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// Runs `sql` as root over the Unix socket (`mariadb -N -B`) and returns stdout.
    pub fn exec(&self, sql: &str) -> Result<String> {
        self.run_client(self.root_args(), sql, false)
    }

    /// Runs `sql` as root and returns each row as a map from column name to value (for
    /// `SHOW ... STATUS`-like statements whose columns are best addressed by name).
    pub fn query_named(&self, sql: &str) -> Result<Vec<BTreeMap<String, String>>> {
        let mut rows = split_rows(&self.run_client(self.root_args(), sql, true)?).into_iter();
        let header = rows.next().unwrap_or_default();
        Ok(rows
            .map(|row| header.iter().cloned().zip(row).collect())
            .collect())
    }

    /// `SHOW SLAVE STATUS` as a name → value map; `None` when the server is not a replica.
    pub fn slave_status(&self) -> Result<Option<BTreeMap<String, String>>> {
        Ok(self.query_named("SHOW SLAVE STATUS")?.into_iter().next())
    }

    /// CLI arguments to log in as root over the Unix socket.
    fn root_args(&self) -> Vec<OsString> {
        vec![
            "--no-defaults".into(),
            "--user=root".into(),
            path_arg("--socket=", &self.socket),
            "--protocol=SOCKET".into(),
        ]
    }

    /// Runs `sql` as `user` over TCP on 127.0.0.1, as an application would log in.
    pub fn exec_as(&self, user: &str, pass: &str, sql: &str) -> Result<String> {
        let args: Vec<OsString> = vec![
            "--no-defaults".into(),
            "--protocol=TCP".into(),
            "--host=127.0.0.1".into(),
            format!("--port={}", self.port).into(),
            format!("--user={user}").into(),
            format!("--password={pass}").into(),
        ];
        self.run_client(args, sql, false)
    }

    fn run_client(&self, mut args: Vec<OsString>, sql: &str, column_names: bool) -> Result<String> {
        args.extend(
            [
                "--connect-timeout=10",
                "--batch",
                // Tests send statements with 20 MiB blobs; the server allows 128 MiB.
                "--max-allowed-packet=1G",
            ]
            .map(OsString::from),
        );
        if !column_names {
            args.push("--skip-column-names".into());
        }
        let mut child = Command::new(&self.client)
            .args(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| TestkitError::io(format!("spawn {}", self.client.display()), e))?;
        let stdin = child.stdin.take();
        // Feed stdin from another thread so a large result cannot deadlock against our write.
        let output = std::thread::scope(|scope| {
            if let Some(mut stdin) = stdin {
                scope.spawn(move || {
                    let _ = stdin.write_all(sql.as_bytes());
                });
            }
            child.wait_with_output()
        })
        .map_err(|e| TestkitError::io(format!("run {}", self.client.display()), e))?;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(TestkitError::Sql {
                server: self.name.clone(),
                sql: shorten(sql, 300),
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr).trim().to_string(),
            })
        }
    }

    /// Runs `sql` via [`MariaDb::exec`] and splits the output into rows of tab-separated columns.
    pub fn query_rows(&self, sql: &str) -> Result<Vec<Vec<String>>> {
        Ok(split_rows(&self.exec(sql)?))
    }

    /// First column of the first row (empty string when there is no row).
    pub fn query_value(&self, sql: &str) -> Result<String> {
        Ok(self
            .query_rows(sql)?
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().next())
            .unwrap_or_default())
    }

    /// `mysql://user:pass@127.0.0.1:PORT/`.
    pub fn url(&self, user: &str, pass: &str) -> String {
        format!("mysql://{user}:{pass}@127.0.0.1:{}/", self.port)
    }

    /// Freezes the server (SIGSTOP), as a hung host or a network partition looks to clients:
    /// connections stay open and nothing answers. [`MariaDb::thaw`] ends it.
    pub fn freeze(&self) -> Result<()> {
        send_signal(self.pid(), Signal::SIGSTOP)
    }

    /// Lets a frozen server run again (SIGCONT).
    pub fn thaw(&self) -> Result<()> {
        send_signal(self.pid(), Signal::SIGCONT)
    }

    /// Sends SIGTERM without waiting (used to stop several servers in parallel).
    pub(crate) fn signal_term(&self) -> Result<()> {
        let guard = self.child.lock();
        match guard.as_ref() {
            Some(child) => send_signal(child.id(), Signal::SIGTERM),
            None => Ok(()),
        }
    }

    /// Waits for the process to exit after a signal; SIGKILLs it after `timeout`.
    pub(crate) fn wait_exit(&self, timeout: Duration) -> Result<()> {
        let mut guard = self.child.lock();
        let Some(child) = guard.as_mut() else {
            return Ok(());
        };
        let status = wait_timeout(child, timeout)?;
        if status.is_none() {
            kill_and_reap(child)?;
        }
        self.forget_child(&mut guard);
        match status {
            Some(_) => Ok(()),
            None => Err(TestkitError::Timeout {
                what: format!("{} to shut down (it was killed)", self.name),
                waited: timeout,
                detail: self.log_tail(20),
            }),
        }
    }

    /// Graceful shutdown: SIGTERM and wait (SIGKILL after 60 s). A stopped server is left alone.
    pub fn stop(&self) -> Result<()> {
        self.signal_term()?;
        self.wait_exit(STOP_TIMEOUT)
    }

    /// Crash: SIGKILL and reap. The datadir is left as a crash would leave it.
    pub fn kill(&self) -> Result<()> {
        let mut guard = self.child.lock();
        if let Some(child) = guard.as_mut() {
            kill_and_reap(child)?;
        }
        self.forget_child(&mut guard);
        Ok(())
    }

    /// Starts the server again on the same datadir, port and options (stopping it first if it
    /// runs) and waits until it accepts connections. A replica resumes replication by itself.
    pub fn restart(&self) -> Result<()> {
        if self.is_running() {
            self.stop()?;
        }
        self.launch()?;
        self.wait_ready(READY_TIMEOUT)
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        let _ = self.kill();
    }
}

fn path_arg(flag: &str, path: &Path) -> OsString {
    let mut arg = OsString::from(flag);
    arg.push(path.as_os_str());
    arg
}

fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// Splits `mariadb -N -B` output into rows and tab-separated columns.
pub(crate) fn split_rows(output: &str) -> Vec<Vec<String>> {
    output
        .lines()
        .map(|line| line.split('\t').map(str::to_string).collect())
        .collect()
}

/// True when a MySQL handshake (protocol version 10) arrives on `stream`.
fn read_handshake(mut stream: impl Read) -> bool {
    let mut head = [0u8; 5];
    stream.read_exact(&mut head).is_ok() && head[4] == 10
}

fn probe_unix(socket: &Path) -> bool {
    match UnixStream::connect(socket) {
        Ok(stream) => {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            read_handshake(stream)
        }
        Err(_) => false,
    }
}

fn probe_tcp(port: u16) -> bool {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    match TcpStream::connect_timeout(&addr, Duration::from_secs(2)) {
        Ok(stream) => {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            read_handshake(stream)
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_split_on_tabs_and_lines() {
        assert_eq!(
            split_rows("a\tb\nc\t\n"),
            vec![
                vec!["a".to_string(), "b".into()],
                vec!["c".into(), "".into()]
            ]
        );
        assert!(split_rows("").is_empty());
    }

    #[test]
    fn shorten_cuts_long_text() {
        assert_eq!(shorten("abcdef", 3), "abc...");
        assert_eq!(shorten("ab", 3), "ab");
    }
}
