//! The stats snapshot against real traffic: weir's session layer served in-process in front
//! of a real MariaDB (testkit), driven by a real client (mysql_async). No weir binary, no
//! admin: the test reads `weir_session::stats_snapshot` directly.
#![allow(clippy::unwrap_used)]

use mysql_async::prelude::*;
use mysql_async::{Conn, OptsBuilder};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use weir_backend::Stream;
use weir_config::{ConfigTables, Password, Runtime, ServerRow, UserRow};
use weir_pool::{Pool, ServerSpec, ServerStatus};
use weir_session::{stats_snapshot, stats_snapshot_reset, Shared};
use weir_stats::Snapshot;
use weir_testkit::{Topology, WEIR_PASS, WEIR_USER};

fn topology() -> &'static Topology {
    static T: OnceLock<Topology> = OnceLock::new();
    T.get_or_init(|| Topology::start(0).unwrap())
}

/// weir's session layer on a free port, in front of the primary as hostgroup 0.
async fn start() -> (Arc<Shared>, u16) {
    let db = &topology().primary;
    let tables = ConfigTables {
        mysql_servers: vec![ServerRow::new(0, "127.0.0.1", db.port)],
        mysql_users: vec![UserRow::new(WEIR_USER, Password::Clear(WEIR_PASS.into()))],
        ..Default::default()
    };
    let runtime = Arc::new(Runtime::build(&tables).unwrap());
    let pool = Arc::new(Pool::default());
    pool.apply_servers(&[ServerSpec {
        hostgroup: 0,
        hostname: "127.0.0.1".into(),
        port: db.port,
        status: ServerStatus::Online,
        weight: 1,
        max_connections: 100,
        max_replication_lag: 0,
    }]);
    let shared = Shared::new(runtime, pool);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let s = shared.clone();
    tokio::spawn(async move {
        loop {
            let (sock, _) = listener.accept().await.unwrap();
            sock.set_nodelay(true).unwrap();
            tokio::spawn(weir_session::serve(s.clone(), Stream::Tcp(sock)));
        }
    });
    (shared, port)
}

async fn connect(port: u16) -> Conn {
    let opts = OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some(WEIR_USER))
        .pass(Some(WEIR_PASS))
        .db_name(Some("weirtest"))
        .prefer_socket(false);
    Conn::new(opts).await.unwrap()
}

fn global(s: &Snapshot, name: &str) -> u64 {
    let v = &s.global.iter().find(|(k, _)| k == name).unwrap().1;
    v.parse().unwrap()
}

fn count(s: &Snapshot, command: &str) -> u64 {
    s.commands
        .iter()
        .find(|c| c.command == command)
        .unwrap()
        .total_cnt
}

/// Polls the snapshot until `f` holds (10 s at most).
async fn until(shared: &Shared, what: &str, f: impl Fn(&Snapshot) -> bool) -> Snapshot {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let s = stats_snapshot(shared);
        if f(&s) {
            return s;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: {s:#?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_follow_real_traffic() {
    // Starting MariaDB blocks: not on the runtime's threads.
    tokio::task::spawn_blocking(|| {
        topology();
    })
    .await
    .unwrap();
    let (shared, port) = start().await;
    let primary_port = topology().primary.port;

    let mut a = connect(port).await;
    let mut b = connect(port).await;
    let before = stats_snapshot(&shared);
    let selects = count(&before, "SELECT");

    // Text queries, an error, prepared statements.
    let one: u64 = a.query_first("SELECT 1").await.unwrap().unwrap();
    assert_eq!(one, 1);
    let err = a
        .query_drop("SELECT * FROM no_such_table_for_stats")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no_such_table_for_stats"), "{err}");
    let stmt = a.prep("SELECT ? + 1").await.unwrap();
    for i in 0..2u64 {
        let v: u64 = a.exec_first(&stmt, (i,)).await.unwrap().unwrap();
        assert_eq!(v, i + 1);
    }
    a.query_drop("BEGIN").await.unwrap();
    a.query_drop("SELECT 2").await.unwrap();

    // A session counts its statement after the reply is written: wait for the last one.
    let s = until(&shared, "the statements counted", |s| {
        count(s, "SELECT") >= selects + 5
            && count(s, "BEGIN") == 1
            && s.processlist.iter().all(|p| p.command == "Sleep")
    })
    .await;
    // 1 + the failing one + 2 executes (counted under the prepared statement's command) + 1.
    assert!(count(&s, "SELECT") >= selects + 5, "{:?}", s.commands);
    assert_eq!(count(&s, "BEGIN"), 1);
    assert!(global(&s, "Com_frontend_stmt_prepare") >= 1);
    assert_eq!(global(&s, "Com_frontend_stmt_execute"), 2);
    assert_eq!(global(&s, "Com_backend_stmt_execute"), 2);
    assert!(global(&s, "Backend_query_time_nsec") > 0);
    assert_eq!(global(&s, "Client_Connections_connected"), 2);
    assert_eq!(global(&s, "Client_Connections_created"), 2);
    assert!(global(&s, "Server_Connections_created") >= 1);
    assert!(global(&s, "Server_Connections_connected") >= 1);
    // a's transaction keeps its backend connection: shown in the processlist.
    assert_eq!(global(&s, "Active_Transactions"), 1);
    let a_row = s
        .processlist
        .iter()
        .find(|p| p.srv_port == primary_port)
        .unwrap();
    assert_eq!(a_row.command, "Sleep");
    assert_eq!(a_row.info, None);
    assert_eq!(a_row.hostgroup, Some(0));
    assert_eq!(
        (a_row.user.as_str(), a_row.db.as_str()),
        (WEIR_USER, "weirtest")
    );
    assert_eq!(a_row.cli_host, "127.0.0.1");
    assert_eq!(s.processlist.len(), 2);

    // The backend's ERR is in the error log, with where it happened.
    let e = s.errors.iter().find(|e| e.errno == 1146).unwrap();
    assert_eq!(
        (e.hostgroup, e.hostname.as_str(), e.port),
        (0, "127.0.0.1", primary_port)
    );
    assert_eq!(
        (e.username.as_str(), e.schemaname.as_str()),
        (WEIR_USER, "weirtest")
    );
    assert_eq!((e.client_address.as_str(), e.count_star), ("127.0.0.1", 1));
    assert!(e.last_error.contains("no_such_table_for_stats"));

    let u = s.users.iter().find(|u| u.username == WEIR_USER).unwrap();
    assert_eq!(u.frontend_connections, 2);

    let pool = &s.connection_pool[0];
    assert!(pool.queries >= 6 && pool.bytes_sent > 0 && pool.bytes_recv > 0);
    assert_eq!(pool.status, "ONLINE");

    // A running statement shows as Query with its text and server.
    let running = tokio::spawn(async move {
        b.query_drop("SELECT SLEEP(1) /* stats */").await.unwrap();
        b
    });
    // The text is published before a backend is picked: wait for both.
    let s = until(&shared, "a running query on its server", |s| {
        s.processlist
            .iter()
            .any(|p| p.info.as_deref() == Some("SELECT SLEEP(1) /* stats */") && p.srv_port != 0)
    })
    .await;
    let p = s.processlist.iter().find(|p| p.info.is_some()).unwrap();
    assert_eq!(p.command, "Query");
    assert_eq!(
        (p.srv_host.as_str(), p.srv_port),
        ("127.0.0.1", primary_port)
    );
    // weir's end of that backend connection.
    assert_eq!(p.l_srv_host, "127.0.0.1");
    assert_ne!(p.l_srv_port, 0);
    assert_eq!(global(&s, "Client_Connections_non_idle"), 1);
    let b = running.await.unwrap();
    let s = until(&shared, "the 1 s statement counted", |s| {
        s.commands
            .iter()
            .any(|c| c.command == "SELECT" && c.buckets[9] >= 1)
    })
    .await;
    let slept = s.commands.iter().find(|c| c.command == "SELECT").unwrap();
    // Just over 1 s: cnt_5s counts 1 s < t <= 5 s.
    assert!(
        slept.buckets[9] >= 1,
        "a 1 s statement in cnt_5s: {slept:?}"
    );

    // _reset tables: what was there, then zero.
    let taken = stats_snapshot_reset(&shared, true, true, false);
    assert!(taken.connection_pool[0].queries > 0);
    assert!(!taken.errors.is_empty());
    let after = stats_snapshot(&shared);
    assert_eq!(after.connection_pool[0].queries, 0);
    assert!(after.errors.is_empty());
    // Commands counters have no reset.
    assert!(count(&after, "SELECT") >= selects + 6);

    a.query_drop("COMMIT").await.unwrap();
    let s = until(&shared, "COMMIT counted", |s| count(s, "COMMIT") == 1).await;
    assert_eq!(global(&s, "Active_Transactions"), 0);
    assert_eq!(count(&s, "COMMIT"), 1);
    drop(a.disconnect().await);
    drop(b.disconnect().await);
    until(&shared, "clients gone", |s| s.processlist.is_empty()).await;
}

/// stats_mysql_global's pool, statement and command rows against real traffic, on a weir of
/// its own (one backend connection: each step waits for it to be back in the pool).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_statement_and_command_counters_follow_real_traffic() {
    tokio::task::spawn_blocking(|| {
        topology();
    })
    .await
    .unwrap();
    let (shared, port) = start().await;
    // Every connection back in the pool, and the session done with its statement.
    let settled = |s: &Snapshot| {
        s.connection_pool[0].conn_used == 0 && s.processlist.iter().all(|p| p.command == "Sleep")
    };
    let mut a = connect(port).await;
    until(&shared, "a's login checked", settled).await;
    let mut b = connect(port).await;
    until(&shared, "b's login checked", settled).await;
    a.query_drop("USE mysql").await.unwrap();
    until(&shared, "USE", settled).await;
    // The only connection is in a's schema: it is brought back to b's.
    b.query_drop("SELECT 1").await.unwrap();
    until(&shared, "b's SELECT", settled).await;
    // And to a's again.
    a.query_drop("SET autocommit = 1").await.unwrap();
    until(&shared, "SET", settled).await;
    a.query_drop("COMMIT").await.unwrap();
    a.query_drop("ROLLBACK").await.unwrap();
    a.query_drop("USE weirtest").await.unwrap();
    until(&shared, "USE back", settled).await;
    let text = "SELECT ? + 1 /* stmt counters */";
    let sa = a.prep(text).await.unwrap();
    let sb = b.prep(text).await.unwrap();
    let s = until(&shared, "both prepared", |s| {
        settled(s) && global(s, "Stmt_Client_Active_Total") == 2
    })
    .await;
    assert_eq!(global(&s, "Stmt_Cached"), 1);
    assert_eq!(global(&s, "Stmt_Client_Active_Unique"), 1);
    assert_eq!(global(&s, "Stmt_Max_Stmt_id"), 1);
    assert_eq!(global(&s, "Com_frontend_use_db"), 2);
    assert_eq!(global(&s, "Com_backend_init_db"), 2);
    assert_eq!(global(&s, "Com_autocommit"), 1);
    assert_eq!(global(&s, "Com_commit"), 1);
    assert_eq!(global(&s, "Com_rollback"), 1);
    assert_eq!(global(&s, "Com_frontend_init_db"), 0);
    // One connection: opened at the first look, found at every other, back after each.
    assert_eq!(global(&s, "Server_Connections_created"), 1);
    assert_eq!(global(&s, "MyHGM_myconnpoll_destroy"), 0);
    assert_eq!(global(&s, "ConnPool_get_conn_failure"), 1);
    let looks = global(&s, "MyHGM_myconnpoll_get");
    assert!(looks >= 6, "{looks}");
    assert_eq!(global(&s, "MyHGM_myconnpoll_get_ok"), looks - 1);
    assert_eq!(global(&s, "ConnPool_get_conn_success"), looks - 1);
    assert!(global(&s, "ConnPool_get_conn_immediate") < looks);
    assert_eq!(global(&s, "MyHGM_myconnpoll_push"), looks);
    let pool = &s.connection_pool[0];
    assert_eq!(global(&s, "Queries_backends_bytes_sent"), pool.bytes_sent);
    assert_eq!(global(&s, "Queries_backends_bytes_recv"), pool.bytes_recv);
    assert!(pool.bytes_sent > 0 && pool.bytes_recv > 0);

    // stats_mysql_connection_pool_reset zeroes the server's bytes, not the totals since start.
    let taken = stats_snapshot_reset(&shared, true, false, false);
    assert_eq!(taken.connection_pool[0].bytes_sent, pool.bytes_sent);
    let after = stats_snapshot(&shared);
    assert_eq!(after.connection_pool[0].bytes_sent, 0);
    assert_eq!(
        global(&after, "Queries_backends_bytes_sent"),
        pool.bytes_sent
    );
    assert_eq!(
        global(&after, "Queries_backends_bytes_recv"),
        pool.bytes_recv
    );

    a.close(sa).await.unwrap();
    let s = until(&shared, "a's statement closed", |s| {
        global(s, "Stmt_Client_Active_Total") == 1
    })
    .await;
    assert_eq!(global(&s, "Stmt_Client_Active_Unique"), 1);
    assert_eq!(global(&s, "Stmt_Cached"), 1);
    b.close(sb).await.unwrap();
    until(&shared, "b's statement closed", |s| {
        global(s, "Stmt_Client_Active_Total") == 0 && global(s, "Stmt_Client_Active_Unique") == 0
    })
    .await;

    // Closing the connection counts it destroyed: the server goes from the configuration,
    // which closes its idle connections.
    drop(a.disconnect().await);
    drop(b.disconnect().await);
    until(&shared, "clients gone", |s| s.processlist.is_empty()).await;
    shared.pool.apply_servers(&[]);
    let s = until(&shared, "the connection closed", |s| {
        global(s, "MyHGM_myconnpoll_destroy") == 1
    })
    .await;
    // The counters of the server gone are kept.
    assert!(s.connection_pool.is_empty());
    assert!(global(&s, "MyHGM_myconnpoll_get") >= looks);
    assert!(global(&s, "Queries_backends_bytes_sent") >= pool.bytes_sent);
    assert_eq!(global(&s, "Server_Connections_created"), 1);
}
