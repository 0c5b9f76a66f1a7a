//! Typed stats snapshots → rows of the `stats` schema, written just before a statement that
//! reads them.

use crate::store::{Store, StoreError};
use rusqlite::types::Value;
use weir_config::{ConfigTables, ServerStatus};
use weir_stats::{MonitorCheck, Snapshot};

fn int(n: impl Into<i64>) -> Value {
    Value::Integer(n.into())
}

fn uint(n: u64) -> Value {
    Value::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

fn text(s: impl Into<String>) -> Value {
    Value::Text(s.into())
}

/// Refills every stats and monitor log table named in `lower_sql` (lower-cased statement text).
pub(crate) fn fill(store: &Store, lower_sql: &str, snap: &Snapshot) -> Result<(), StoreError> {
    let wants = |t: &str| lower_sql.contains(t);
    for (table, check) in [
        ("mysql_server_connect_log", MonitorCheck::Connect),
        ("mysql_server_ping_log", MonitorCheck::Ping),
        ("mysql_server_read_only_log", MonitorCheck::ReadOnly),
        (
            "mysql_server_replication_lag_log",
            MonitorCheck::ReplicationLag,
        ),
    ] {
        if !wants(table) {
            continue;
        }
        let rows: Vec<Vec<Value>> = snap
            .monitor
            .iter()
            .filter(|r| r.check == check)
            .map(|r| {
                let mut row = vec![
                    text(r.hostname.as_str()),
                    int(r.port),
                    uint(r.time_start_us),
                    uint(r.success_time_us),
                ];
                if matches!(check, MonitorCheck::ReadOnly | MonitorCheck::ReplicationLag) {
                    row.push(r.value.map_or(Value::Null, Value::Integer));
                }
                row.push(r.error.clone().map_or(Value::Null, Value::Text));
                row
            })
            .collect();
        store.replace_rows(&format!("monitor.{table}"), &rows)?;
    }
    if wants("stats_mysql_global") {
        let rows: Vec<Vec<Value>> = snap
            .global
            .iter()
            .map(|(k, v)| vec![text(k.as_str()), text(v.as_str())])
            .collect();
        store.replace_rows("stats.stats_mysql_global", &rows)?;
    }
    if wants("stats_mysql_processlist") {
        let rows: Vec<Vec<Value>> = snap
            .processlist
            .iter()
            .map(|p| {
                vec![
                    int(p.thread_id),
                    int(p.session_id),
                    text(p.user.as_str()),
                    text(p.db.as_str()),
                    text(p.cli_host.as_str()),
                    int(p.cli_port),
                    p.hostgroup.map_or(Value::Null, int),
                    text(p.l_srv_host.as_str()),
                    int(p.l_srv_port),
                    text(p.srv_host.as_str()),
                    int(p.srv_port),
                    text(p.command.as_str()),
                    uint(p.time_ms),
                    p.info.clone().map_or(Value::Null, Value::Text),
                    int(0),
                    Value::Null,
                ]
            })
            .collect();
        store.replace_rows("stats.stats_mysql_processlist", &rows)?;
    }
    if wants("stats_mysql_commands_counters") {
        let rows: Vec<Vec<Value>> = snap
            .commands
            .iter()
            .map(|c| {
                let mut row = vec![
                    text(c.command.as_str()),
                    uint(c.total_time_us),
                    uint(c.total_cnt),
                ];
                row.extend(c.buckets.iter().map(|b| uint(*b)));
                row
            })
            .collect();
        store.replace_rows("stats.stats_mysql_commands_counters", &rows)?;
    }
    if wants("stats_mysql_users") {
        let rows: Vec<Vec<Value>> = snap
            .users
            .iter()
            .map(|u| {
                vec![
                    text(u.username.as_str()),
                    uint(u.frontend_connections),
                    uint(u.frontend_max_connections),
                ]
            })
            .collect();
        store.replace_rows("stats.stats_mysql_users", &rows)?;
    }
    if wants("stats_mysql_errors") {
        let rows: Vec<Vec<Value>> = snap
            .errors
            .iter()
            .map(|e| {
                vec![
                    int(e.hostgroup),
                    text(e.hostname.as_str()),
                    int(e.port),
                    text(e.username.as_str()),
                    text(e.client_address.as_str()),
                    text(e.schemaname.as_str()),
                    int(e.errno),
                    uint(e.count_star),
                    uint(e.first_seen),
                    uint(e.last_seen),
                    text(e.last_error.as_str()),
                ]
            })
            .collect();
        store.replace_rows("stats.stats_mysql_errors", &rows)?;
        store.replace_rows("stats.stats_mysql_errors_reset", &rows)?;
    }
    if wants("stats_mysql_query_digest") {
        let rows: Vec<Vec<Value>> = snap
            .digests
            .iter()
            .map(|d| {
                vec![
                    int(d.hostgroup),
                    text(d.schemaname.as_str()),
                    text(d.username.as_str()),
                    text(d.client_address.as_str()),
                    text(weir_sql_digest(d.digest)),
                    text(d.digest_text.as_str()),
                    uint(d.count_star),
                    uint(d.first_seen),
                    uint(d.last_seen),
                    uint(d.sum_time),
                    uint(d.min_time),
                    uint(d.max_time),
                    uint(d.sum_rows_affected),
                    uint(d.sum_rows_sent),
                ]
            })
            .collect();
        store.replace_rows("stats.stats_mysql_query_digest", &rows)?;
        store.replace_rows("stats.stats_mysql_query_digest_reset", &rows)?;
    }
    if wants("stats_mysql_query_rules") {
        let rows: Vec<Vec<Value>> = snap
            .rules
            .iter()
            .map(|r| vec![int(r.rule_id), uint(r.hits), uint(r.time_ns)])
            .collect();
        store.replace_rows("stats.stats_mysql_query_rules", &rows)?;
    }
    if wants("stats_mysql_connection_pool") {
        let rows: Vec<Vec<Value>> = snap
            .connection_pool
            .iter()
            .map(|p| {
                vec![
                    int(p.hostgroup),
                    text(p.srv_host.as_str()),
                    int(p.srv_port),
                    text(p.status.as_str()),
                    uint(p.conn_used),
                    uint(p.conn_free),
                    uint(p.conn_ok),
                    uint(p.conn_err),
                    uint(p.max_conn_used),
                    uint(p.queries),
                    int(0),
                    uint(p.bytes_sent),
                    uint(p.bytes_recv),
                    uint(p.latency_us),
                ]
            })
            .collect();
        store.replace_rows("stats.stats_mysql_connection_pool", &rows)?;
        store.replace_rows("stats.stats_mysql_connection_pool_reset", &rows)?;
    }
    Ok(())
}

/// Shows the live status of each server (drained, shunned by the monitor...) in
/// runtime_mysql_servers, as ProxySQL does; the configured status stays in mysql_servers.
pub(crate) fn live_statuses(tables: &mut ConfigTables, snap: &Snapshot) {
    placed_servers(tables, snap, true);
}

/// The servers of `tables` where they run: in the hostgroups the monitor placed them in
/// (see [`live_statuses`]), with their live status when `live`, else their configured one.
pub(crate) fn placed_servers(tables: &mut ConfigTables, snap: &Snapshot, live: bool) {
    // What runs: the pool's servers (the monitor may have moved some between replication
    // hostgroups) with their live status; attributes from the configured row of the same
    // hostgroup, else of the same server in another hostgroup. Configured servers the pool
    // does not run (moved out) are left out, as ProxySQL shows them.
    let configured = std::mem::take(&mut tables.mysql_servers);
    let mut live_rows = Vec::with_capacity(snap.connection_pool.len());
    for p in &snap.connection_pool {
        let same = |s: &&weir_config::ServerRow| s.hostname == p.srv_host && s.port == p.srv_port;
        let row = configured
            .iter()
            .filter(same)
            .find(|s| s.hostgroup_id == p.hostgroup)
            .or_else(|| configured.iter().find(same));
        let Some(row) = row else { continue };
        let mut row = row.clone();
        row.hostgroup_id = p.hostgroup;
        if !live {
            live_rows.push(row);
            continue;
        }
        // The admin tables' status column takes the four statuses: a lag shun is SHUNNED.
        let status = match p.status.as_str() {
            "SHUNNED_REPLICATION_LAG" => Ok(ServerStatus::Shunned),
            other => other.parse::<ServerStatus>(),
        };
        if let Ok(status) = status {
            row.status = status;
        }
        live_rows.push(row);
    }
    tables.mysql_servers = live_rows;
}

/// `0x` + 16 upper-case hex digits, as ProxySQL shows digests.
fn weir_sql_digest(hash: u64) -> String {
    format!("0x{hash:016X}")
}
