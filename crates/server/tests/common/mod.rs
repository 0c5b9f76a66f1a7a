//! Shared fixture for weir's end-to-end tests: one MariaDB topology and one weir process per
//! test binary, started on first use.
#![allow(dead_code, clippy::unwrap_used)]

use mysql_async::{Conn, Opts, OptsBuilder};
use std::path::PathBuf;
use std::sync::OnceLock;
pub mod admin;
pub mod raw;
use weir_testkit::{free_port, weir_config, Topology, WeirProcess, WEIR_PASS, WEIR_USER};

pub fn weir_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_weir"))
}

pub fn topo() -> &'static Topology {
    Topology::shared()
}

/// Starts a weir in front of the shared topology with extra `[mysql_variables]` lines.
pub fn start_weir(extra_vars: &str) -> WeirProcess {
    let port = free_port();
    let cfg = weir_config(topo(), port, 0, extra_vars);
    WeirProcess::spawn(&weir_bin(), &cfg).unwrap_or_else(|e| panic!("weir did not start: {e}"))
}

/// The weir every test of this binary shares.
pub fn weir() -> &'static WeirProcess {
    static W: OnceLock<WeirProcess> = OnceLock::new();
    W.get_or_init(|| start_weir(""))
}

pub fn opts_for(port: u16, user: &str, pass: &str, db: Option<&str>) -> Opts {
    OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(user))
        .pass(Some(pass))
        .db_name(db)
        .prefer_socket(false)
        .into()
}

/// A mysql_async connection through the shared weir as the test user.
pub async fn connect() -> Conn {
    connect_db(Some("weirtest")).await
}

pub async fn connect_db(db: Option<&str>) -> Conn {
    Conn::new(opts_for(weir().port, WEIR_USER, WEIR_PASS, db))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "connect through weir failed: {e}\n{}",
                weir().stderr_tail(30)
            )
        })
}

/// A mysql_async connection through the weir `w` as `user`, in schema `db`.
pub async fn connect_to(w: &WeirProcess, user: &str, pass: &str, db: &str) -> Conn {
    Conn::new(opts_for(w.port, user, pass, Some(db)))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "connect through weir as {user} failed: {e}\n{}",
                w.stderr_tail(20)
            )
        })
}

/// Runs DDL/DML on the primary as root and waits until both replicas applied it.
pub fn on_primary(sql: &str) {
    topo()
        .primary
        .exec(sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    topo()
        .wait_replicas_caught_up(std::time::Duration::from_secs(30))
        .unwrap();
}

/// Creates a stored routine on the primary (schema weirtest), over a connection of its own:
/// the CLI would split its body at each `;`.
pub async fn create_routine(sql: &str) {
    use mysql_async::prelude::Queryable;
    let mut c = Conn::new(opts_for(
        topo().primary.port,
        WEIR_USER,
        WEIR_PASS,
        Some("weirtest"),
    ))
    .await
    .unwrap_or_else(|e| panic!("connect to the primary: {e}"));
    c.query_drop(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    c.disconnect().await.unwrap_or_else(|e| panic!("{e}"));
}

/// Runs the mariadb CLI against the shared weir; returns (status success, stdout, stderr).
pub fn cli(args: &[&str], sql: &str) -> (bool, String, String) {
    cli_at(weir().port, args, sql)
}

/// Runs the mariadb CLI against the weir on `port` as the test user.
pub fn cli_at(port: u16, args: &[&str], sql: &str) -> (bool, String, String) {
    let out = std::process::Command::new(weir_testkit::require_binary("mariadb"))
        .args(["-h", "127.0.0.1", "-P", &port.to_string()])
        .args(["-u", WEIR_USER, &format!("-p{WEIR_PASS}")])
        .args(["--protocol=TCP", "--ssl=0"])
        .args(args)
        .args(["-e", sql])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs sysbench `test` (a built-in like oltp_read_write, or a script path) against weir's
/// `port` as the test user, with `args` (database, tables, command...); returns (success,
/// stdout and stderr).
pub fn sysbench(test: &str, port: u16, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(weir_testkit::require_binary("sysbench"))
        .arg(test)
        .args([
            "--db-driver=mysql",
            "--mysql-host=127.0.0.1",
            "--mysql-ssl=off",
        ])
        .arg(format!("--mysql-port={port}"))
        .arg(format!("--mysql-user={WEIR_USER}"))
        .arg(format!("--mysql-password={WEIR_PASS}"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}
