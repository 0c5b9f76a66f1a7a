//! Real MariaDB servers for weir's tests and demo scripts: a primary and N replicas with GTID
//! replication on free ports of 127.0.0.1 and Unix sockets, in scratch datadirs, plus a harness
//! for running the weir binary itself. Everything is torn down even when the test process
//! panics or is killed: a watchdog process removes them when the test process goes away.
//!
//! ```no_run
//! let topo = weir_testkit::Topology::shared();
//! topo.primary.exec("CREATE TABLE weirtest.t (id INT PRIMARY KEY)").unwrap();
//! topo.wait_replicas_caught_up(std::time::Duration::from_secs(10)).unwrap();
//! ```
#![forbid(unsafe_code)]

mod datadir;
mod error;
mod ports;
mod procs;
mod reaper;
mod server;
mod tools;
mod topology;
mod weir;

pub use error::{Result, TestkitError};
pub use ports::{free_port, try_free_port};
pub use reaper::{scratch_dir, scratch_root};
pub use server::MariaDb;
pub use tools::{find_binary, require_binary};
pub use topology::Topology;
pub use weir::{config_ports, weir_config, WeirProcess};

/// Application user weir logs in with (ALL PRIVILEGES ON *.*: it must KILL other sessions' queries).
pub const WEIR_USER: &str = "weir";
/// Password of [`WEIR_USER`] (mysql_native_password).
pub const WEIR_PASS: &str = "weirpass";
/// Monitor user (REPLICATION CLIENT, SLAVE MONITOR: enough for SHOW SLAVE STATUS and read_only).
pub const MONITOR_USER: &str = "monitor";
/// Password of [`MONITOR_USER`].
pub const MONITOR_PASS: &str = "monitor";
/// Application user authenticated with the ed25519 plugin (ALL PRIVILEGES ON *.*).
pub const ED_USER: &str = "weir_ed";
/// Password of [`ED_USER`].
pub const ED_PASS: &str = "edpass";
/// Replication user the replicas connect to the primary with.
pub const REPL_USER: &str = "repl";
/// Password of [`REPL_USER`].
pub const REPL_PASS: &str = "replpass";
/// Databases created on every server.
pub const DATABASES: &[&str] = &["weirtest", "sbtest"];
