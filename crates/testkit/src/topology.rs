//! A primary and N replicas with GTID replication, the accounts weir's tests use, and the shared
//! per-test-binary instance.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::datadir::{copy_dir, install_datadir, prepare_dir};
use crate::error::{Result, TestkitError};
use crate::ports::try_free_port;
use crate::procs::POLL;
use crate::reaper;
use crate::server::{MariaDb, ServerSpec, READY_TIMEOUT};
use crate::tools::find_binary;
use crate::{
    ED_PASS, ED_USER, MONITOR_PASS, MONITOR_USER, REPL_PASS, REPL_USER, WEIR_PASS, WEIR_USER,
};

/// How long replication threads may take to reach `Yes` after `START SLAVE`.
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(30);
/// How often a server whose TCP port was taken by someone else is retried on a new port.
const BIND_RETRIES: usize = 3;

/// A primary plus replicas replicating from it with `MASTER_USE_GTID=slave_pos`.
#[derive(Debug)]
pub struct Topology {
    /// The writable primary (`server_id` 1).
    pub primary: MariaDb,
    /// Read-only replicas (`server_id` 2..), in order `replica1`, `replica2`, ...
    pub replicas: Vec<MariaDb>,
    /// Directory holding one sub-directory per server.
    pub base_dir: PathBuf,
    keep_dir: bool,
    shut_down: AtomicBool,
}

impl Topology {
    /// Starts a primary and `replicas` replicas in a fresh scratch directory removed on shutdown.
    pub fn start(replicas: usize) -> Result<Topology> {
        let dir = reaper::scratch_dir("topology")?;
        Self::start_at(dir, replicas, false)
    }

    /// Starts a topology in `dir` and keeps it on shutdown unless [`Topology::set_keep_dir`] says
    /// otherwise. `dir` is created if missing; what a previous, stopped topology left there is
    /// replaced; anything else in it makes this fail rather than delete a user's files.
    pub fn start_in(dir: &Path, replicas: usize) -> Result<Topology> {
        prepare_dir(dir)?;
        let dir = std::fs::canonicalize(dir)
            .map_err(|e| TestkitError::io(format!("canonicalize {}", dir.display()), e))?;
        Self::start_at(dir, replicas, true)
    }

    fn start_at(base_dir: PathBuf, replicas: usize, keep_dir: bool) -> Result<Topology> {
        let t0 = Instant::now();
        let mariadbd = find_binary("mariadbd")?;
        let install_db = find_binary("mariadb-install-db")?;
        let client = find_binary("mariadb")?;

        // One mariadb-install-db run, copied for every server: cheaper than N runs.
        let template = base_dir.join("template");
        install_datadir(&install_db, &template, &base_dir.join("install-db.log"))?;
        let t_install = t0.elapsed();

        let names: Vec<String> = std::iter::once("primary".to_string())
            .chain((1..=replicas).map(|i| format!("replica{i}")))
            .collect();
        let mut specs = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let dir = base_dir.join(name);
            std::fs::create_dir_all(&dir)
                .map_err(|e| TestkitError::io(format!("create {}", dir.display()), e))?;
            let data = dir.join("data");
            if i + 1 == names.len() {
                std::fs::rename(&template, &data)
                    .map_err(|e| TestkitError::io(format!("rename to {}", data.display()), e))?;
            } else {
                copy_dir(&template, &data)?;
            }
            let server_id = u32::try_from(i + 1)
                .map_err(|_| TestkitError::Invalid("too many replicas".into()))?;
            specs.push((name.clone(), dir, server_id, i > 0));
        }
        let t_copy = t0.elapsed();

        // Spawn every server first so that they initialise in parallel, then wait for each.
        let mut servers = Vec::with_capacity(specs.len());
        for (name, dir, server_id, read_only) in &specs {
            let spec = ServerSpec {
                name: name.clone(),
                dir: dir.clone(),
                port: try_free_port()?,
                server_id: *server_id,
                read_only: *read_only,
            };
            servers.push(MariaDb::spawn(spec, &mariadbd, &client)?);
        }
        for (slot, (name, dir, server_id, read_only)) in servers.iter_mut().zip(&specs) {
            let mut attempt = 0;
            while let Err(e) = slot.wait_ready(READY_TIMEOUT) {
                attempt += 1;
                if attempt > BIND_RETRIES || !is_bind_error(&e) {
                    return Err(e);
                }
                eprintln!(
                    "weir-testkit: {name}: port {} was taken, retrying",
                    slot.port
                );
                let _ = std::fs::remove_file(&slot.log_path);
                let spec = ServerSpec {
                    name: name.clone(),
                    dir: dir.clone(),
                    port: try_free_port()?,
                    server_id: *server_id,
                    read_only: *read_only,
                };
                *slot = MariaDb::spawn(spec, &mariadbd, &client)?;
            }
        }
        let t_ready = t0.elapsed();

        let mut servers = servers.into_iter();
        let primary = servers
            .next()
            .ok_or_else(|| TestkitError::Invalid("no primary".into()))?;
        let topology = Topology {
            primary,
            replicas: servers.collect(),
            base_dir,
            keep_dir,
            shut_down: AtomicBool::new(false),
        };
        // Accounts are created on the primary only; replicas start from the same empty datadir
        // and replay the whole binlog, so every server ends up with identical accounts.
        create_accounts(&topology.primary)?;
        for replica in &topology.replicas {
            attach_replica(replica, &topology.primary)?;
        }
        for replica in &topology.replicas {
            wait_replica_running(replica, REPLICATION_TIMEOUT)?;
        }
        topology.wait_replicas_caught_up(REPLICATION_TIMEOUT)?;
        eprintln!(
            "weir-testkit: topology primary+{replicas} ready in {:.2}s \
             (install-db {:.2}s, copy {:.2}s, servers up {:.2}s, replication {:.2}s) in {}",
            t0.elapsed().as_secs_f64(),
            t_install.as_secs_f64(),
            (t_copy - t_install).as_secs_f64(),
            (t_ready - t_copy).as_secs_f64(),
            (t0.elapsed() - t_ready).as_secs_f64(),
            topology.base_dir.display()
        );
        Ok(topology)
    }

    /// The topology shared by all tests of this test binary: a primary and 2 replicas, started
    /// on first call. Panics with the reason (including the server log tail) when it cannot start.
    ///
    /// Tests run in parallel against it: tests that kill, stop or reconfigure servers should
    /// start their own [`Topology::start`] instead.
    pub fn shared() -> &'static Topology {
        static SHARED: OnceLock<std::result::Result<Topology, String>> = OnceLock::new();
        match SHARED.get_or_init(|| Topology::start(2).map_err(|e| e.to_string())) {
            Ok(topology) => topology,
            Err(e) => panic!(
                "weir-testkit: the shared MariaDB topology (primary + 2 replicas) failed to start:\n{e}"
            ),
        }
    }

    /// Primary first, then the replicas.
    pub fn all(&self) -> impl Iterator<Item = &MariaDb> {
        std::iter::once(&self.primary).chain(self.replicas.iter())
    }

    /// Waits until every replica has applied the primary's current `@@gtid_binlog_pos`.
    pub fn wait_replicas_caught_up(&self, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let pos = self
            .primary
            .query_value("SELECT @@GLOBAL.gtid_binlog_pos")?;
        if pos.is_empty() {
            return Ok(());
        }
        for replica in &self.replicas {
            let left = deadline.saturating_duration_since(Instant::now());
            let waited = replica.query_value(&format!(
                "SELECT MASTER_GTID_WAIT('{pos}', {:.3})",
                left.as_secs_f64()
            ))?;
            if waited != "0" {
                return Err(TestkitError::Timeout {
                    what: format!("{} to apply GTID {pos}", replica.name),
                    waited: timeout,
                    detail: replica_summary(replica),
                });
            }
        }
        Ok(())
    }

    /// Whether [`Topology::shutdown`] leaves `base_dir` on disk (default: only for `start_in`).
    pub fn set_keep_dir(&mut self, keep: bool) {
        self.keep_dir = keep;
    }

    /// Stops every server gracefully (in parallel) and removes `base_dir` unless it is kept.
    /// Idempotent; also run on drop.
    pub fn shutdown(&self) -> Result<()> {
        if self.shut_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        let mut first_error = None;
        for server in self.all() {
            if let Err(e) = server.signal_term() {
                first_error.get_or_insert(e);
            }
        }
        for server in self.all() {
            if let Err(e) = server.wait_exit(Duration::from_secs(60)) {
                first_error.get_or_insert(e);
            }
        }
        if !self.keep_dir {
            if let Err(e) = std::fs::remove_dir_all(&self.base_dir) {
                first_error.get_or_insert(TestkitError::io(
                    format!("remove {}", self.base_dir.display()),
                    e,
                ));
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Shell variable assignments describing the topology (the `topology.env` file).
    pub fn env_file(&self) -> String {
        let mut out = format!(
            "TESTKIT_PID={}\nTOPOLOGY_DIR={}\nREPLICA_COUNT={}\n",
            std::process::id(),
            shell_quote(&self.base_dir.display().to_string()),
            self.replicas.len()
        );
        for server in self.all() {
            let var = server.name.to_uppercase();
            out.push_str(&format!(
                "{var}_HOST=127.0.0.1\n{var}_PORT={}\n{var}_SOCKET={}\n{var}_DATADIR={}\n{var}_LOG={}\n",
                server.port,
                shell_quote(&server.socket.display().to_string()),
                shell_quote(&server.datadir.display().to_string()),
                shell_quote(&server.log_path.display().to_string()),
            ));
        }
        for (var, value) in [
            ("WEIR_USER", WEIR_USER),
            ("WEIR_PASS", WEIR_PASS),
            ("MONITOR_USER", MONITOR_USER),
            ("MONITOR_PASS", MONITOR_PASS),
            ("ED_USER", ED_USER),
            ("ED_PASS", ED_PASS),
            ("REPL_USER", REPL_USER),
            ("REPL_PASS", REPL_PASS),
        ] {
            out.push_str(&format!("{var}={value}\n"));
        }
        out
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        if let Err(e) = self.shutdown() {
            eprintln!("weir-testkit: topology shutdown: {e}");
        }
    }
}

fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}

fn is_bind_error(e: &TestkitError) -> bool {
    matches!(e, TestkitError::Start { log_tail, .. }
        if log_tail.contains("Address already in use") || log_tail.contains("Bind on TCP/IP port"))
}

/// Creates the test accounts and databases on the primary (binlogged, so replicas get them).
fn create_accounts(primary: &MariaDb) -> Result<()> {
    // mariadb-install-db may create anonymous accounts, which shadow user@'%' logins.
    let anonymous = primary.query_rows("SELECT host FROM mysql.user WHERE user = ''")?;
    let mut sql: String = anonymous
        .iter()
        .filter_map(|row| row.first())
        .map(|host| format!("DROP USER IF EXISTS ''@'{host}';\n"))
        .collect();
    sql.push_str(&format!(
        "CREATE USER '{WEIR_USER}'@'%' IDENTIFIED BY '{WEIR_PASS}';
GRANT ALL PRIVILEGES ON *.* TO '{WEIR_USER}'@'%';
CREATE USER '{MONITOR_USER}'@'%' IDENTIFIED BY '{MONITOR_PASS}';
GRANT USAGE, REPLICATION CLIENT, SLAVE MONITOR ON *.* TO '{MONITOR_USER}'@'%';
CREATE USER '{ED_USER}'@'%' IDENTIFIED VIA ed25519 USING PASSWORD('{ED_PASS}');
GRANT ALL PRIVILEGES ON *.* TO '{ED_USER}'@'%';
CREATE USER '{REPL_USER}'@'%' IDENTIFIED BY '{REPL_PASS}';
GRANT REPLICATION SLAVE ON *.* TO '{REPL_USER}'@'%';
CREATE DATABASE weirtest;
CREATE DATABASE sbtest;
"
    ));
    primary.exec(&sql).map(drop)
}

fn attach_replica(replica: &MariaDb, primary: &MariaDb) -> Result<()> {
    replica
        .exec(&format!(
            "CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT={}, \
             MASTER_USER='{REPL_USER}', MASTER_PASSWORD='{REPL_PASS}', \
             MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
             START SLAVE;",
            primary.port
        ))
        .map(drop)
}

/// Polls `SHOW SLAVE STATUS` until both threads run; fails fast on an SQL thread error.
fn wait_replica_running(replica: &MariaDb, timeout: Duration) -> Result<()> {
    let start = Instant::now();
    loop {
        let status = replica.slave_status()?.unwrap_or_default();
        let field = |name: &str| status.get(name).map(String::as_str).unwrap_or("");
        if field("Slave_IO_Running") == "Yes" && field("Slave_SQL_Running") == "Yes" {
            return Ok(());
        }
        if field("Slave_SQL_Running") == "No" && !matches!(field("Last_SQL_Errno"), "" | "0") {
            return Err(TestkitError::Replication {
                server: replica.name.clone(),
                detail: replica_summary(replica),
            });
        }
        if start.elapsed() >= timeout {
            return Err(TestkitError::Timeout {
                what: format!("replication threads on {} to run", replica.name),
                waited: timeout,
                detail: replica_summary(replica),
            });
        }
        std::thread::sleep(POLL);
    }
}

/// The interesting `SHOW SLAVE STATUS` fields plus the log tail, for error messages.
fn replica_summary(replica: &MariaDb) -> String {
    let status = match replica.slave_status() {
        Ok(Some(status)) => status,
        Ok(None) => return format!("{} is not configured as a replica", replica.name),
        Err(e) => return format!("SHOW SLAVE STATUS failed: {e}"),
    };
    let mut out: String = [
        "Slave_IO_Running",
        "Slave_SQL_Running",
        "Last_IO_Errno",
        "Last_IO_Error",
        "Last_SQL_Errno",
        "Last_SQL_Error",
        "Gtid_IO_Pos",
        "Seconds_Behind_Master",
    ]
    .iter()
    .map(|name| {
        format!(
            "{name}={} ",
            status.get(*name).map(String::as_str).unwrap_or("?")
        )
    })
    .collect();
    out.push_str(&format!(
        "\n--- tail of {} ---\n{}",
        replica.log_path.display(),
        replica.log_tail(15)
    ));
    out
}
