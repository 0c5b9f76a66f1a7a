//! Copies of the live counters into [`weir_stats::Snapshot`] for the admin's `stats_*`
//! tables. Cheap for the data path: atomics are read, the registry lock is held only to clone
//! the list of sessions, and each session's activity lock only to copy its record.

use crate::activity::{CONNECT, SLEEP};
use crate::registry::SessionHandle;
use crate::{GlobalStats, Shared};
use std::sync::Arc;
use std::time::Instant;
use weir_pool::ServerSnapshot;
use weir_stats::{PoolRow, ProcessRow, Snapshot, UserRow};

/// Every stats table's rows, as they are now.
pub fn stats_snapshot(shared: &Shared) -> Snapshot {
    build(shared, false, false, false)
}

/// As [`stats_snapshot`], and the counters behind the `_reset` tables zeroed as they are
/// read: the pool's cumulative counters when `pool` (stats_mysql_connection_pool_reset), the
/// error log when `errors` (stats_mysql_errors_reset). The returned snapshot holds the values
/// from before the reset.
pub fn stats_snapshot_reset(shared: &Shared, pool: bool, errors: bool, digests: bool) -> Snapshot {
    build(shared, pool, errors, digests)
}

/// Gauges counted while walking the sessions.
#[derive(Default)]
struct SessionGauges {
    non_idle: u64,
    in_transaction: u64,
}

fn build(shared: &Shared, reset_pool: bool, reset_errors: bool, reset_digests: bool) -> Snapshot {
    let now = Instant::now();
    let sessions = shared.registry.all();
    let mut gauges = SessionGauges::default();
    let mut processlist: Vec<ProcessRow> = sessions
        .iter()
        .map(|h| process_row(h, now, &mut gauges))
        .collect();
    processlist.sort_unstable_by_key(|r| r.session_id);
    let servers = if reset_pool {
        shared.pool.snapshot_and_reset()
    } else {
        shared.pool.snapshot()
    };
    let errors = if reset_errors {
        shared.errors.snapshot_and_reset()
    } else {
        shared.errors.snapshot()
    };
    Snapshot {
        monitor: shared.monitor_log.all(),
        global: global_rows(shared, sessions.len() as u64, &gauges),
        processlist,
        commands: shared.commands.snapshot(),
        users: user_rows(shared),
        errors,
        connection_pool: servers.iter().map(pool_row).collect(),
        digests: if reset_digests {
            shared.digests.snapshot_and_reset()
        } else {
            shared.digests.snapshot()
        },
        rules: shared
            .rules
            .load()
            .stats()
            .into_iter()
            .map(|r| weir_stats::RuleRow {
                rule_id: r.rule_id,
                hits: r.hits,
                time_ns: r.time_ns,
            })
            .collect(),
    }
}

fn process_row(h: &SessionHandle, now: Instant, gauges: &mut SessionGauges) -> ProcessRow {
    // Each lock is taken alone, never nested: the session takes them one at a time too.
    let (command, since, info, db, hostgroup, held, held_local, in_trans) = {
        let a = h.activity.lock();
        (
            a.command,
            a.since,
            a.has_info.then(|| a.info.clone()),
            a.schema.clone(),
            a.hostgroup,
            a.held.clone(),
            a.held_local,
            a.in_trans,
        )
    };
    let (running, running_local) = match h.running.lock().as_ref() {
        Some(r) => (Some(r.server.clone()), r.local),
        None => (None, None),
    };
    let local = if running.is_some() {
        running_local
    } else {
        held_local
    };
    let user = h.user.lock().clone();
    let idle = command == SLEEP || command == CONNECT;
    if !idle {
        gauges.non_idle += 1;
    }
    if in_trans {
        gauges.in_transaction += 1;
    }
    let server = running.or(held);
    let spec = server.as_ref().map(|s| s.spec());
    ProcessRow {
        thread_id: h.worker,
        session_id: h.id,
        user,
        db,
        cli_host: h.host.clone(),
        cli_port: h.port,
        hostgroup: match &spec {
            Some(s) => Some(s.hostgroup),
            None if !idle => Some(hostgroup),
            None => None,
        },
        l_srv_host: local.map(|a| a.ip().to_string()).unwrap_or_default(),
        l_srv_port: local.map_or(0, |a| a.port()),
        srv_host: spec
            .as_ref()
            .map(|s| s.hostname.clone())
            .unwrap_or_default(),
        srv_port: spec.as_ref().map_or(0, |s| s.port),
        command: command.to_string(),
        time_ms: u64::try_from(now.saturating_duration_since(since).as_millis())
            .unwrap_or(u64::MAX),
        info,
    }
}

fn pool_row(s: &ServerSnapshot) -> PoolRow {
    PoolRow {
        hostgroup: s.spec.hostgroup,
        srv_host: s.spec.hostname.clone(),
        srv_port: s.spec.port,
        status: s.status_name().to_string(),
        conn_used: u64::from(s.conn_used),
        conn_free: u64::from(s.conn_free),
        conn_ok: s.conn_ok,
        conn_err: s.conn_err,
        max_conn_used: u64::from(s.max_conn_used),
        queries: s.queries,
        bytes_sent: s.bytes_sent,
        bytes_recv: s.bytes_recv,
        latency_us: s.latency_us,
    }
}

fn user_rows(shared: &Shared) -> Vec<UserRow> {
    let counts = shared.registry.user_connections();
    let runtime = shared.runtime.load();
    let mut users: Vec<&Arc<weir_config::User>> = runtime.frontend_users.values().collect();
    users.sort_unstable_by(|a, b| a.username.cmp(&b.username));
    users
        .into_iter()
        .map(|u| UserRow {
            username: u.username.clone(),
            frontend_connections: u64::from(counts.get(&u.username).copied().unwrap_or(0)),
            frontend_max_connections: u64::from(u.max_connections),
        })
        .collect()
}

fn global_rows(shared: &Shared, clients: u64, gauges: &SessionGauges) -> Vec<(String, String)> {
    let st = &shared.stats;
    let get = GlobalStats::get;
    let totals = shared.pool.totals();
    let frontend_bytes = shared.registry.frontend_bytes();
    let server_connected = totals.open;
    let qc = shared.cache.stats();
    let stmts = shared.statements.counts();
    let count = |cmd| shared.commands.count(cmd);
    let rows: [(&str, u64); 60] = [
        ("ProxySQL_Uptime", st.started.elapsed().as_secs()),
        ("MySQL_Thread_Workers", weir_pool::worker::count() as u64),
        (
            "Access_Denied_Wrong_Password",
            get(&st.access_denied_wrong_password),
        ),
        (
            "Access_Denied_Max_Connections",
            get(&st.access_denied_max_connections),
        ),
        (
            "Access_Denied_Max_User_Connections",
            get(&st.access_denied_max_user_connections),
        ),
        ("Active_Transactions", gauges.in_transaction),
        (
            "Client_Connections_aborted",
            get(&st.client_connections_aborted),
        ),
        ("Client_Connections_connected", clients),
        (
            "Client_Connections_created",
            get(&st.client_connections_created),
        ),
        (
            "Server_Connections_aborted",
            totals.connects_failed + get(&st.server_connections_aborted),
        ),
        ("Server_Connections_connected", server_connected),
        ("Server_Connections_created", totals.connects_ok),
        ("Client_Connections_non_idle", gauges.non_idle),
        ("Backend_query_time_nsec", get(&st.backend_query_time_nsec)),
        (
            "Query_Processor_time_nsec",
            get(&st.query_processor_time_nsec),
        ),
        ("Query_Digests_evicted", shared.digests.evicted()),
        (
            "Com_backend_stmt_prepare",
            get(&st.com_backend_stmt_prepare),
        ),
        (
            "Com_backend_stmt_execute",
            get(&st.com_backend_stmt_execute),
        ),
        ("Com_backend_stmt_close", get(&st.com_backend_stmt_close)),
        (
            "Com_frontend_stmt_prepare",
            get(&st.com_frontend_stmt_prepare),
        ),
        (
            "Com_frontend_stmt_execute",
            get(&st.com_frontend_stmt_execute),
        ),
        ("Com_frontend_stmt_close", get(&st.com_frontend_stmt_close)),
        ("Com_frontend_init_db", get(&st.com_frontend_init_db)),
        ("Com_frontend_use_db", count(weir_sql::SqlCommand::Use)),
        ("Com_backend_init_db", get(&st.com_backend_init_db)),
        ("Com_autocommit", get(&st.com_autocommit)),
        ("Com_commit", count(weir_sql::SqlCommand::Commit)),
        ("Com_rollback", count(weir_sql::SqlCommand::Rollback)),
        ("Stmt_Client_Active_Total", stmts.client_total),
        ("Stmt_Client_Active_Unique", stmts.client_unique),
        ("Stmt_Max_Stmt_id", stmts.max_id),
        ("Stmt_Cached", stmts.cached),
        ("ConnPool_get_conn_immediate", totals.idle_found_own_worker),
        ("ConnPool_get_conn_success", totals.idle_found),
        (
            "ConnPool_get_conn_failure",
            totals.idle_looks.saturating_sub(totals.idle_found),
        ),
        ("MyHGM_myconnpoll_get", totals.idle_looks),
        ("MyHGM_myconnpoll_get_ok", totals.idle_found),
        ("MyHGM_myconnpoll_push", totals.idle_returns),
        ("MyHGM_myconnpoll_destroy", totals.closed),
        ("Queries_backends_bytes_sent", totals.bytes_sent),
        ("Queries_backends_bytes_recv", totals.bytes_recv),
        ("Queries_frontends_bytes_sent", frontend_bytes.1),
        ("Queries_frontends_bytes_recv", frontend_bytes.0),
        ("Questions", get(&st.questions)),
        (
            "mysql_killed_backend_queries",
            get(&st.killed_backend_queries),
        ),
        (
            "mysql_killed_backend_connections",
            get(&st.killed_backend_connections),
        ),
        // weir's own: ProxySQL does not count these.
        ("Query_retries", get(&st.query_retries)),
        ("Pipelined_statements", get(&st.pipelined_statements)),
        (
            "Pipelined_statements_left_line",
            get(&st.pipelined_statements_left_line),
        ),
        ("Query_timeouts", get(&st.query_timeouts)),
        ("Backend_state_syncs", get(&st.backend_state_syncs)),
        ("Slow_queries", get(&st.slow_queries)),
        ("Query_Cache_Memory_bytes", qc.memory_bytes),
        ("Query_Cache_count_GET", qc.count_get),
        ("Query_Cache_count_GET_OK", qc.count_get_ok),
        ("Query_Cache_count_SET", qc.count_set),
        ("Query_Cache_bytes_IN", qc.bytes_in),
        ("Query_Cache_bytes_OUT", qc.bytes_out),
        ("Query_Cache_Purged", qc.purged),
        ("Query_Cache_Entries", qc.entries),
    ];
    rows.iter()
        .map(|(k, v)| ((*k).to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
