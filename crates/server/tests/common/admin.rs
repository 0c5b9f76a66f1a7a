//! Helpers for tests that start their own weir and drive its admin interface with the
//! mariadb CLI.
#![allow(dead_code, clippy::unwrap_used)]

use super::{topo, weir_bin};
use std::collections::BTreeMap;
use std::process::Command;
use weir_testkit::{free_port, require_binary, weir_config, WeirProcess};

pub type Row = BTreeMap<String, String>;

/// A weir in front of the shared topology with its admin interface on a free port.
pub fn start(extra_vars: &str) -> WeirProcess {
    let cfg = weir_config(topo(), free_port(), free_port(), extra_vars);
    WeirProcess::spawn(&weir_bin(), &cfg).unwrap_or_else(|e| panic!("weir did not start: {e}"))
}

/// The mariadb CLI on weir's admin port as admin, batch output with column names.
pub fn admin_cli(w: &WeirProcess, sql: &str) -> std::process::Output {
    Command::new(require_binary("mariadb"))
        .args(["-h", "127.0.0.1", "-P", &w.admin_port.to_string()])
        .args(["-u", "admin", "-padmin", "--protocol=TCP", "--ssl=0"])
        .args(["--connect-timeout=10", "--batch", "--raw", "-e", sql])
        .output()
        .unwrap()
}

/// Runs `sql` (statements split by the CLI on `;`) as admin; panics if any fails.
pub fn admin(w: &WeirProcess, sql: &str) -> String {
    let out = admin_cli(w, sql);
    assert!(
        out.status.success(),
        "admin statement failed: {sql}\n{}\nweir:\n{}",
        String::from_utf8_lossy(&out.stderr),
        w.stderr_tail(20)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `sql` as admin, which must fail: returns the CLI's error line.
pub fn admin_err(w: &WeirProcess, sql: &str) -> String {
    let out = admin_cli(w, sql);
    assert!(
        !out.status.success(),
        "expected an error from {sql}, got:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The rows of `sql` as column → value maps (NULL reads `NULL`).
pub fn table(w: &WeirProcess, sql: &str) -> Vec<Row> {
    parse_table(&admin(w, sql))
}

/// Batch output with a header line as column → value maps.
pub fn parse_table(out: &str) -> Vec<Row> {
    let mut lines = out.lines();
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let cols: Vec<&str> = header.split('\t').collect();
    lines
        .map(|l| {
            cols.iter()
                .map(|c| c.to_string())
                .zip(l.split('\t').map(String::from))
                .collect()
        })
        .collect()
}

/// The one value `sql` returns.
pub fn value(w: &WeirProcess, sql: &str) -> String {
    let rows = table(w, sql);
    assert_eq!(rows.len(), 1, "{sql} returned {rows:?}");
    rows[0].values().next().cloned().unwrap()
}

/// A counter of stats_mysql_global.
pub fn global_stat(w: &WeirProcess, name: &str) -> u64 {
    value(
        w,
        &format!("SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = '{name}'"),
    )
    .parse()
    .unwrap()
}

/// `Pipelined_statements` of stats_mysql_global.
pub fn pipelined_statements(w: &WeirProcess) -> u64 {
    global_stat(w, "Pipelined_statements")
}

/// Statements weir sent to backends (all servers, all hostgroups).
pub fn pool_queries(w: &WeirProcess) -> u64 {
    value(
        w,
        "SELECT COALESCE(SUM(Queries), 0) FROM stats_mysql_connection_pool",
    )
    .parse()
    .unwrap()
}
