//! The stats snapshot built from a session driven by hand (no backend needed): what each
//! table shows before, during and after a command, and the `_reset` semantics.
#![allow(clippy::unwrap_used)]

use super::*;
use crate::client::{ClientConn, Command};
use crate::session::{Prepared, Session};
use bytes::BytesMut;
use std::sync::atomic::Ordering;
use std::time::Duration;
use weir_backend::{Credential, Stream};
use weir_config::{ConfigTables, Password, Runtime, UserRow};
use weir_pool::{LoginTemplate, Pool, ServerSpec, ServerStatus};
use weir_sql::SqlCommand;
use weir_wire::com;

fn shared() -> Arc<Shared> {
    let mut tables = ConfigTables::default();
    let mut app = UserRow::new("app", Password::Clear("x".into()));
    app.max_connections = 5;
    let mut ro = UserRow::new("ro", Password::Clear("y".into()));
    ro.max_connections = 7;
    tables.mysql_users = vec![ro, app];
    let runtime = Arc::new(Runtime::build(&tables).unwrap());
    let pool = Arc::new(Pool::default());
    let spec = |hg, host: &str, port, status| ServerSpec {
        hostgroup: hg,
        hostname: host.into(),
        port,
        status,
        weight: 1,
        max_connections: 10,
        max_replication_lag: 0,
    };
    pool.apply_servers(&[
        spec(0, "db-a", 3306, ServerStatus::Online),
        spec(1, "db-b", 3307, ServerStatus::Shunned),
    ]);
    Shared::new(runtime, pool)
}

async fn session(shared: &Arc<Shared>) -> (Session, crate::registry::Registration) {
    let (a, _b) = tokio::net::UnixStream::pair().unwrap();
    let client = ClientConn::new(Stream::Unix(a));
    let reg = shared
        .registry
        .register(client.host.clone(), client.port, &shared.shutdown);
    assert!(shared.registry.enter_user("app", 5));
    *reg.handle.user.lock() = "app".into();
    let user = shared.runtime.load().frontend_users["app"].clone();
    let s = Session {
        shared: shared.clone(),
        handle: reg.handle.clone(),
        client,
        login: Arc::new(LoginTemplate::new(
            "app",
            Credential::Clear("x".into()),
            Some("shop".into()),
        )),
        user,
        schema: Some("shop".into()),
        hostgroup: 0,
        backend: None,
        pins: 0,
        keep_for: 0,
        keep_until: None,
        hold_next: false,
        vars: weir_sql::SessionVars::default(),
        held: crate::state::Held::default(),
        effects: crate::state::Effects::default(),
        last_insert_id: 0,
        row_count: None,
        found_rows: None,
        after_hit: false,
        on_borrowed_reader: false,
        failed_change_user: 0,
        no_diagnostics: true,
        diag_on: None,
        carry_diag: None,
        warnings_carried: 0,
        held_gen: 0,
        long_data_held: 0,
        last_error: None,
        prepared: Default::default(),
        next_stmt_id: 0,
        last_prepared: None,
        reply_stmt_id: None,
        early_kill_columns: None,
        counted: None,
        reply_end: None,
        cmd_started: std::time::Instant::now(),
        digest_buf: Vec::new(),
        decision: weir_rules::Decision::default(),
        flag_in: 0,
        hold_until: None,
        idle: crate::session::IdleClock::new(),
        timer: Box::pin(tokio::time::sleep(std::time::Duration::MAX)),
        cache_key: Vec::new(),
        capture: None,
        cache_hit: false,
        repeatable: true,
        replacing_schema: false,
        mode_status: 0,
        pipelinable: false,
        pipe: None,
    };
    (s, reg)
}

fn command(code: u8, body: &[u8]) -> Command {
    let mut payload = vec![code];
    payload.extend_from_slice(body);
    let mut raw = BytesMut::new();
    weir_wire::packet::write_packet(&mut raw, 0, &payload);
    Command {
        raw,
        frames: 1,
        last_seq: 0,
    }
}

fn global(s: &Snapshot, name: &str) -> u64 {
    let v = &s.global.iter().find(|(k, _)| k == name).unwrap().1;
    v.parse().unwrap()
}

#[tokio::test]
async fn processlist_follows_the_command() {
    let shared = shared();
    let (mut s, _reg) = session(&shared).await;
    s.publish_idle(Instant::now());

    let snap = stats_snapshot(&shared);
    assert_eq!(snap.processlist.len(), 1);
    let p = &snap.processlist[0];
    assert_eq!((p.user.as_str(), p.db.as_str()), ("app", "shop"));
    assert_eq!((p.cli_host.as_str(), p.cli_port), ("localhost", 0));
    assert_eq!((p.command.as_str(), p.info.as_deref()), ("Sleep", None));
    assert_eq!(
        (p.hostgroup, p.srv_host.as_str(), p.srv_port),
        (None, "", 0)
    );
    assert_eq!(p.session_id, s.handle.id);
    assert_eq!(global(&snap, "Client_Connections_non_idle"), 0);

    let started = Instant::now();
    s.begin_command(&command(com::QUERY, b"SELECT c FROM t WHERE id=1"), started);
    s.counted = Some(SqlCommand::Select);
    let snap = stats_snapshot(&shared);
    let p = &snap.processlist[0];
    assert_eq!(p.command, "Query");
    assert_eq!(p.info.as_deref(), Some("SELECT c FROM t WHERE id=1"));
    assert_eq!(p.hostgroup, Some(0));
    assert_eq!(global(&snap, "Client_Connections_non_idle"), 1);

    s.end_command(started, Duration::from_secs(1));
    let snap = stats_snapshot(&shared);
    assert_eq!(snap.processlist[0].command, "Sleep");
    assert_eq!(snap.processlist[0].info, None);
    let select = snap
        .commands
        .iter()
        .find(|c| c.command == "SELECT")
        .unwrap();
    assert_eq!(select.total_cnt, 1);
    assert_eq!(select.buckets.iter().sum::<u64>(), 1);
    assert_eq!(snap.commands.len(), SqlCommand::COUNT);
    assert_eq!(global(&snap, "Slow_queries"), 0);
    // Not relayed from a backend: no backend time.
    assert_eq!(global(&snap, "Backend_query_time_nsec"), 0);
}

#[tokio::test]
async fn executes_count_under_the_prepared_statement_command() {
    let shared = shared();
    let (mut s, _reg) = session(&shared).await;
    s.prepared.insert(
        7,
        Prepared {
            command: SqlCommand::Update,
            text: "UPDATE t SET a=? WHERE id=?".into(),
            timeout: None,
            digest: 0,
            digest_text: Box::default(),
            global: shared.statements.intern(
                "app",
                None,
                &weir_sql::SessionVars::default(),
                b"UPDATE t SET a=? WHERE id=?",
                (2, 0),
                100,
            ),
            hostgroup: 0,
            rule_answer: None,
            param_types: None,
            long_data: Default::default(),
            long_data_overflow: false,
            long_data_refused: false,
            cursor: None,
            own_key: crate::stmt::new_own_key(),
            cache: None,
            cacheable: false,
            rules_generation: 0,
            flag_in: 0,
            exec_pins: 0,
            repeatable: false,
            pipelinable: false,
            statement_scoped_set: false,
            reads_last_insert_id: false,
            reads_previous_result: false,
            reads_diagnostics: false,
            calc_found_rows: false,
            column_defs: None,
        },
    );
    let started = Instant::now();
    s.begin_command(
        &command(com::STMT_EXECUTE, &[7, 0, 0, 0, 0, 1, 0, 0, 0]),
        started,
    );
    let p = stats_snapshot(&shared).processlist.remove(0);
    assert_eq!(p.command, "Execute");
    assert_eq!(p.info.as_deref(), Some("UPDATE t SET a=? WHERE id=?"));
    // A zero long_query_time makes every statement slow.
    s.end_command(started, Duration::ZERO);
    s.begin_command(
        &command(com::STMT_EXECUTE, &[9, 0, 0, 0, 0, 1, 0, 0, 0]),
        started,
    );
    s.end_command(started, Duration::from_secs(1));

    let snap = stats_snapshot(&shared);
    let count = |name: &str| {
        snap.commands
            .iter()
            .find(|c| c.command == name)
            .unwrap()
            .total_cnt
    };
    assert_eq!((count("UPDATE"), count("EXECUTE")), (1, 1));
    assert_eq!(global(&snap, "Com_frontend_stmt_execute"), 2);
    assert_eq!(global(&snap, "Slow_queries"), 1);
}

#[tokio::test]
async fn errors_and_their_reset() {
    let shared = shared();
    let (s, _reg) = session(&shared).await;
    let server = shared.pool.servers()[0].clone();
    s.log_error(Some(&server), 1064, "You have an error in your SQL syntax");
    s.log_error(
        Some(&server),
        1064,
        "You have an error in your SQL syntax near 'x'",
    );
    s.log_error(None, 9001, "Max connect timeout reached");

    let snap = stats_snapshot(&shared);
    assert_eq!(snap.errors.len(), 2);
    let e = snap.errors.iter().find(|e| e.errno == 1064).unwrap();
    assert_eq!(
        (e.hostgroup, e.hostname.as_str(), e.port),
        (0, "db-a", 3306)
    );
    assert_eq!(
        (e.username.as_str(), e.schemaname.as_str()),
        ("app", "shop")
    );
    assert_eq!(e.client_address, "localhost");
    assert_eq!(e.count_star, 2);
    assert!(e.last_error.ends_with("near 'x'"));
    let e = snap.errors.iter().find(|e| e.errno == 9001).unwrap();
    assert_eq!((e.hostgroup, e.hostname.as_str(), e.port), (0, "", 0));

    // Only what was asked is reset.
    let taken = stats_snapshot_reset(&shared, false, true, false);
    assert_eq!(taken.errors.len(), 2);
    assert!(stats_snapshot(&shared).errors.is_empty());
}

#[tokio::test]
async fn pool_users_and_global() {
    let shared = shared();
    let (_s, _reg) = session(&shared).await;
    let a = shared.pool.servers()[0].clone();
    a.stats.queries.fetch_add(3, Ordering::Relaxed);
    a.stats.bytes_recv.fetch_add(300, Ordering::Relaxed);
    a.stats.conn_free.fetch_add(2, Ordering::Relaxed);

    let snap = stats_snapshot(&shared);
    assert_eq!(snap.connection_pool.len(), 2);
    let p = &snap.connection_pool[0];
    assert_eq!(
        (p.hostgroup, p.srv_host.as_str(), p.srv_port),
        (0, "db-a", 3306)
    );
    assert_eq!(
        (p.status.as_str(), p.queries, p.bytes_recv),
        ("ONLINE", 3, 300)
    );
    assert_eq!(snap.connection_pool[1].status, "SHUNNED");

    assert_eq!(
        snap.users,
        vec![
            weir_stats::UserRow {
                username: "app".into(),
                frontend_connections: 1,
                frontend_max_connections: 5,
            },
            weir_stats::UserRow {
                username: "ro".into(),
                frontend_connections: 0,
                frontend_max_connections: 7,
            },
        ]
    );

    let names: Vec<&str> = snap.global.iter().map(|(k, _)| k.as_str()).collect();
    for want in [
        "ProxySQL_Uptime",
        "Active_Transactions",
        "Client_Connections_aborted",
        "Client_Connections_connected",
        "Client_Connections_created",
        "Server_Connections_aborted",
        "Server_Connections_connected",
        "Server_Connections_created",
        "Questions",
        "Query_Processor_time_nsec",
        "Query_Cache_Entries",
        "Com_backend_stmt_prepare",
    ] {
        assert!(names.contains(&want), "{want}");
    }
    assert_eq!(global(&snap, "Client_Connections_connected"), 1);
    assert_eq!(global(&snap, "Server_Connections_connected"), 2);
    assert_eq!(global(&snap, "Active_Transactions"), 0);

    // Reading the pool's _reset table zeroes its cumulative counters, and only those.
    let taken = stats_snapshot_reset(&shared, true, false, false);
    assert_eq!(taken.connection_pool[0].queries, 3);
    let after = stats_snapshot(&shared);
    assert_eq!(after.connection_pool[0].queries, 0);
    assert_eq!(after.connection_pool[0].bytes_recv, 0);
    assert_eq!(after.connection_pool[0].conn_free, 2);
    a.stats.conn_free.fetch_sub(2, Ordering::Relaxed);
}
