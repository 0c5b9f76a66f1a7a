//! The monitor end to end against the test kit's primary and two replicas: its log tables,
//! replication-lag shunning (a replica delayed with MASTER_DELAY), and servers moving between
//! the writer and reader hostgroups when read_only flips.
//!
//! The tests change the shared topology's replication and read_only, so they take turns.
#![allow(clippy::unwrap_used)]
mod common;

use common::admin::{admin, start, table, Row};
use common::{opts_for, topo};
use mysql_async::prelude::*;
use mysql_async::Conn;
use std::time::{Duration, Instant};
use weir_testkit::{WeirProcess, WEIR_PASS, WEIR_USER};

/// One test at a time: they reconfigure the shared servers.
async fn turn() -> tokio::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::OnceLock<tokio::sync::Mutex<()>> = std::sync::OnceLock::new();
    LOCK.get_or_init(|| tokio::sync::Mutex::new(()))
        .lock()
        .await
}

/// A weir with the monitor on and short intervals; the writer is not also a reader, so that
/// hostgroup 1 holds the replicas only.
fn start_monitored() -> WeirProcess {
    monitored_with(
        "monitor_connect_interval = 500\n\
         monitor_ping_interval = 200\n\
         monitor_read_only_interval = 200\n\
         monitor_replication_lag_interval = 200\n\
         monitor_replication_lag_count = 1",
    )
}

async fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn pool_rows(w: &WeirProcess) -> Vec<Row> {
    table(
        w,
        "SELECT hostgroup, srv_port, status FROM stats_mysql_connection_pool ORDER BY hostgroup, srv_port",
    )
}

fn status_of(w: &WeirProcess, hostgroup: u32, port: u16) -> Option<String> {
    pool_rows(w)
        .into_iter()
        .find(|r| r["hostgroup"] == hostgroup.to_string() && r["srv_port"] == port.to_string())
        .map(|r| r["status"].clone())
}

/// A weir with the monitor on, the writer not also a reader, and `vars` (intervals...).
fn monitored_with(vars: &str) -> WeirProcess {
    start(&format!(
        "monitor_enabled = true\n\
         monitor_writer_is_also_reader = false\n\
         monitor_username = \"monitor\"\n\
         monitor_password = \"monitor\"\n{vars}"
    ))
}

/// Waits until hostgroup 0 holds `writer` and not `other`.
async fn writer_becomes(w: &WeirProcess, writer: u16, other: u16) {
    wait_for(
        &format!("port {writer} alone in the writer hostgroup"),
        Duration::from_secs(5),
        || status_of(w, 0, writer).as_deref() == Some("ONLINE") && status_of(w, 0, other).is_none(),
    )
    .await;
}

async fn port_of(c: &mut Conn, sql: &str) -> u16 {
    c.query_first::<u16, _>(sql).await.unwrap().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_tables_fill_up() {
    let _turn = turn().await;
    let w = start_monitored();
    let ports: Vec<u16> = topo().all().map(|s| s.port).collect();
    wait_for("ping and connect log rows", Duration::from_secs(5), || {
        let pings = table(
            &w,
            "SELECT DISTINCT port FROM monitor.mysql_server_ping_log WHERE ping_error IS NULL",
        );
        let connects = table(
            &w,
            "SELECT DISTINCT port FROM monitor.mysql_server_connect_log WHERE connect_error IS NULL",
        );
        pings.len() == ports.len() && connects.len() == ports.len()
    })
    .await;
    // The seed's column names and the _us ones show the same values.
    let rows = table(
        &w,
        "SELECT time_start, time_start_us, ping_success_time, ping_success_time_us \
         FROM monitor.mysql_server_ping_log LIMIT 1",
    );
    assert_eq!(rows[0]["time_start"], rows[0]["time_start_us"]);
    assert_eq!(
        rows[0]["ping_success_time"],
        rows[0]["ping_success_time_us"]
    );
    // read_only of the replication hostgroups' servers: the primary writable, replicas not.
    wait_for("read_only rows", Duration::from_secs(5), || {
        table(
            &w,
            "SELECT DISTINCT port FROM monitor.mysql_server_read_only_log WHERE error IS NULL",
        )
        .len()
            == ports.len()
    })
    .await;
    let ro = table(
        &w,
        &format!(
            "SELECT read_only FROM monitor.mysql_server_read_only_log WHERE port = {} \
             ORDER BY time_start_us DESC LIMIT 1",
            topo().primary.port
        ),
    );
    assert_eq!(ro[0]["read_only"], "0");
    // Latency_us comes from the pings.
    let lat = table(
        &w,
        "SELECT MIN(Latency_us) AS l FROM stats_mysql_connection_pool",
    );

    assert!(lat[0]["l"].parse::<u64>().unwrap() > 0, "{lat:?}");
    // A wrong monitor password shows as errors, and shuns nothing that still answers traffic.
    admin(
        &w,
        "SET mysql-monitor_password = 'wrong'; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    wait_for("connect errors in the log", Duration::from_secs(5), || {
        !table(
            &w,
            "SELECT 1 FROM monitor.mysql_server_connect_log WHERE connect_error LIKE '%Access denied%'",
        )
        .is_empty()
    })
    .await;
    // Servers that answer, if only to refuse the monitor, are not shunned: after more than
    // mysql-monitor_ping_max_failures failed pings, traffic still flows.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        pool_rows(&w).iter().all(|r| r["status"] == "ONLINE"),
        "{:?}",
        pool_rows(&w)
    );
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    assert_eq!(port_of(&mut c, "SELECT @@port").await, topo().primary.port);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_replica_is_shunned_until_it_catches_up() {
    let _turn = turn().await;
    let w = start_monitored();
    let lagging = &topo().replicas[0];
    let other = &topo().replicas[1];
    admin(
        &w,
        "UPDATE mysql_servers SET max_replication_lag = 2 WHERE hostgroup_id = 1; \
         INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) \
         VALUES (1, 1, '^SELECT @@port', 1, 1); \
         LOAD MYSQL SERVERS TO RUNTIME; LOAD MYSQL QUERY RULES TO RUNTIME",
    );
    lagging
        .exec("STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 30; START SLAVE")
        .unwrap();
    topo()
        .primary
        .exec(
            "CREATE TABLE IF NOT EXISTS weirtest.lag_t (id INT PRIMARY KEY AUTO_INCREMENT, v INT)",
        )
        .unwrap();
    let writes = tokio::spawn(async {
        for _ in 0..40 {
            topo()
                .primary
                .exec("INSERT INTO weirtest.lag_t (v) VALUES (1)")
                .unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let lag_shunned =
        || status_of(&w, 1, lagging.port).as_deref() == Some("SHUNNED_REPLICATION_LAG");
    wait_for(
        "the delayed replica SHUNNED",
        Duration::from_secs(15),
        lag_shunned,
    )
    .await;
    let runtime = table(
        &w,
        &format!(
            "SELECT status FROM runtime_mysql_servers WHERE hostgroup_id = 1 AND port = {}",
            lagging.port
        ),
    );
    assert_eq!(runtime[0]["status"], "SHUNNED");
    // No lag check any more (max_replication_lag = 0): nothing keeps it out.
    admin(
        &w,
        &format!(
            "UPDATE mysql_servers SET max_replication_lag = 0 WHERE port = {0}; \
             LOAD MYSQL SERVERS TO RUNTIME; \
             UPDATE mysql_servers SET max_replication_lag = 2 WHERE port = {0}",
            lagging.port
        ),
    );
    assert_eq!(status_of(&w, 1, lagging.port).as_deref(), Some("ONLINE"));
    admin(&w, "LOAD MYSQL SERVERS TO RUNTIME");
    wait_for(
        "the delayed replica SHUNNED again",
        Duration::from_secs(15),
        lag_shunned,
    )
    .await;
    // Reads go to the other replica only, and the configuration still says ONLINE.
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    for _ in 0..20 {
        assert_eq!(port_of(&mut c, "SELECT @@port").await, other.port);
    }
    let configured = table(
        &w,
        &format!(
            "SELECT status FROM mysql_servers WHERE hostgroup_id = 1 AND port = {}",
            lagging.port
        ),
    );
    assert_eq!(configured[0]["status"], "ONLINE");
    let lag_rows = table(
        &w,
        &format!(
            "SELECT MAX(repl_lag) AS lag FROM monitor.mysql_server_replication_lag_log WHERE port = {}",
            lagging.port
        ),
    );
    assert!(
        lag_rows[0]["lag"].parse::<i64>().unwrap() > 2,
        "{lag_rows:?}"
    );
    writes.abort();
    lagging
        .exec("STOP SLAVE; CHANGE MASTER TO MASTER_DELAY = 0; START SLAVE")
        .unwrap();
    wait_for("the replica back ONLINE", Duration::from_secs(30), || {
        status_of(&w, 1, lagging.port).as_deref() == Some("ONLINE")
    })
    .await;
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..40 {
        seen.insert(port_of(&mut c, "SELECT @@port").await);
    }
    assert!(
        seen.contains(&lagging.port),
        "reads reach it again: {seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn promoting_a_replica_by_read_only_moves_writes() {
    let _turn = turn().await;
    let w = start_monitored();
    let primary = &topo().primary;
    let replica = &topo().replicas[0];
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    // Hostgroup 0 (the user's default) is the writer.
    writer_becomes(&w, primary.port, replica.port).await;
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary.port);
    replica.exec("SET GLOBAL read_only = 0").unwrap();
    primary.exec("SET GLOBAL read_only = 1").unwrap();
    let flipped = Instant::now();
    writer_becomes(&w, replica.port, primary.port).await;
    // Within two read_only intervals (200 ms) plus slack: a slow machine adds the admin
    // polls' own time (writer_becomes' deadline is 5 s).
    assert!(
        flipped.elapsed() < Duration::from_secs(4),
        "{:?}",
        flipped.elapsed()
    );
    for _ in 0..10 {
        assert_eq!(port_of(&mut c, "SELECT @@port").await, replica.port);
    }
    // runtime_mysql_servers shows where the servers run; mysql_servers what was configured.
    let runtime = table(
        &w,
        "SELECT hostgroup_id, port FROM runtime_mysql_servers WHERE hostgroup_id = 0",
    );
    assert_eq!(runtime.len(), 1);
    assert_eq!(runtime[0]["port"], replica.port.to_string());
    let configured = table(&w, "SELECT port FROM mysql_servers WHERE hostgroup_id = 0");
    assert_eq!(configured[0]["port"], primary.port.to_string());
    // SAVE MYSQL SERVERS FROM RUNTIME keeps that placement (so that SAVE ... TO DISK
    // persists the topology after a failover), with the configured statuses.
    admin(&w, "SAVE MYSQL SERVERS FROM RUNTIME");
    let saved = table(
        &w,
        "SELECT hostgroup_id, port, status FROM mysql_servers ORDER BY hostgroup_id, port",
    );
    let placed: Vec<(String, String, String)> = saved
        .iter()
        .map(|r| {
            (
                r["hostgroup_id"].clone(),
                r["port"].clone(),
                r["status"].clone(),
            )
        })
        .collect();
    let mut readers: Vec<u16> = vec![primary.port, topo().replicas[1].port];
    readers.sort();
    let mut expected = vec![(
        "0".to_string(),
        replica.port.to_string(),
        "ONLINE".to_string(),
    )];
    expected.extend(
        readers
            .iter()
            .map(|p| ("1".to_string(), p.to_string(), "ONLINE".to_string())),
    );
    assert_eq!(placed, expected);
    // Back as it was.
    primary.exec("SET GLOBAL read_only = 0").unwrap();
    replica.exec("SET GLOBAL read_only = 1").unwrap();
    writer_becomes(&w, primary.port, replica.port).await;
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary.port);
}

/// A switchover by hand with the monitor on (docs/howto-switchover.md): read_only flipped on
/// the servers, then the admin swaps them in mysql_servers and loads that, before the
/// monitor's next read_only check (a long interval here). The loaded placement is in force at
/// once: writes never go to the old primary, now read only, on the strength of the read_only
/// it had at the last check. Moving back works the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_switchover_loaded_before_the_next_read_only_check_moves_writes_at_once() {
    let _turn = turn().await;
    let w = monitored_with("monitor_read_only_interval = 600000");
    let primary = &topo().primary;
    let replica = &topo().replicas[0];
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    // The monitor's first round: it knows the primary writable and the replica read only.
    wait_for("read_only rows", Duration::from_secs(5), || {
        table(
            &w,
            "SELECT DISTINCT port FROM monitor.mysql_server_read_only_log WHERE error IS NULL",
        )
        .len()
            == 3
    })
    .await;
    let swap = |writer: u16, reader: u16| {
        admin(
            &w,
            &format!(
                "UPDATE mysql_servers SET hostgroup_id = 1 WHERE port = {reader};\
                 UPDATE mysql_servers SET hostgroup_id = 0 WHERE port = {writer};\
                 LOAD MYSQL SERVERS TO RUNTIME"
            ),
        );
    };
    replica.exec("SET GLOBAL read_only = 0").unwrap();
    primary.exec("SET GLOBAL read_only = 1").unwrap();
    swap(replica.port, primary.port);
    let runtime_writers = || {
        table(
            &w,
            "SELECT port FROM runtime_mysql_servers WHERE hostgroup_id = 0",
        )
        .into_iter()
        .map(|r| r["port"].clone())
        .collect::<Vec<_>>()
    };
    assert_eq!(runtime_writers(), vec![replica.port.to_string()]);
    for _ in 0..5 {
        assert_eq!(port_of(&mut c, "SELECT @@port").await, replica.port);
    }
    // The monitor checked the moved servers at once and agrees.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(runtime_writers(), vec![replica.port.to_string()]);
    // Back as it was.
    primary.exec("SET GLOBAL read_only = 0").unwrap();
    replica.exec("SET GLOBAL read_only = 1").unwrap();
    swap(primary.port, replica.port);
    assert_eq!(runtime_writers(), vec![primary.port.to_string()]);
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary.port);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(runtime_writers(), vec![primary.port.to_string()]);
}

/// Monitor variables take effect at LOAD MYSQL VARIABLES TO RUNTIME: turning the monitor on,
/// or shortening an interval, does not wait for the interval read before to run out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitor_intervals_take_effect_at_load() {
    let w = start(
        "monitor_enabled = false\n\
         monitor_username = \"monitor\"\n\
         monitor_password = \"monitor\"\n\
         monitor_ping_interval = 600000",
    );
    let pings = || {
        table(
            &w,
            "SELECT COUNT(*) AS n FROM monitor.mysql_server_ping_log WHERE ping_error IS NULL",
        )[0]["n"]
            .parse::<u64>()
            .unwrap()
    };
    // Off for a while: every loop has slept with its long interval.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(pings(), 0);
    admin(
        &w,
        "SET mysql-monitor_enabled = 'true'; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    wait_for("the first pings", Duration::from_secs(3), || pings() >= 3).await;
    let first = pings();
    admin(
        &w,
        "SET mysql-monitor_ping_interval = 200; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    // 600 s would pass before the next round at the old interval.
    wait_for("pings every 200 ms", Duration::from_secs(3), || {
        pings() >= first + 6
    })
    .await;
}

/// A server that stops answering (frozen: SIGSTOP, as a hung host or a partition) with a
/// statement running on it: once the monitor's pings shun it, weir cuts the connections to
/// it, so the statement fails then, not when the server comes back or the client gives up
/// (ProxySQL kills them too). Once the server answers again, traffic resumes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_on_a_frozen_server_fails_once_pings_shun_it() {
    let _turn = turn().await;
    let w = start(
        "monitor_enabled = true\n\
         monitor_username = \"monitor\"\n\
         monitor_password = \"monitor\"\n\
         monitor_ping_interval = 200\n\
         monitor_ping_timeout = 200\n\
         monitor_ping_max_failures = 2\n\
         monitor_read_only_interval = 600000\n\
         connect_timeout_server_max = 3000",
    );
    let primary = &topo().primary;
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary.port);
    let running = tokio::spawn(async move {
        let r = c.query_drop("SELECT SLEEP(8)").await;
        (r, Instant::now())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    primary.freeze().unwrap();
    let frozen = Instant::now();
    // The server wakes up after 6 s whatever happens (the statement would then end well).
    let wake = std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(6));
        topo().primary.thaw().unwrap();
    });
    let (r, ended) = tokio::time::timeout(Duration::from_secs(30), running)
        .await
        .expect("the statement never ended")
        .unwrap();
    wake.join().unwrap();
    let took = ended - frozen;
    assert!(r.is_err(), "the statement on the frozen server succeeded");
    assert!(
        took < Duration::from_secs(5),
        "the statement failed {took:?} after the server froze"
    );
    // Back: the monitor's pings bring it back, and statements run there again.
    wait_for("the primary back ONLINE", Duration::from_secs(10), || {
        status_of(&w, 0, primary.port).as_deref() == Some("ONLINE")
    })
    .await;
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary.port);
}

/// While the writer hostgroup has no ONLINE server, statements that only set session state
/// (followed SETs, USE, COM_INIT_DB) run on a reader, so clients can still log in (drivers send
/// SETs first) and read with their state; writes wait and fail as before, and once the writer
/// is back the state follows the session there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_state_is_set_on_a_reader_while_the_writer_is_away() {
    let _turn = turn().await;
    let w = start("connect_timeout_server_max = 1500");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) \
         VALUES (1, 1, '^SELECT', 1, 1); LOAD MYSQL QUERY RULES TO RUNTIME; \
         UPDATE mysql_servers SET status = 'OFFLINE_HARD' WHERE hostgroup_id = 0; \
         LOAD MYSQL SERVERS TO RUNTIME",
    );
    let replicas: Vec<u16> = topo().replicas.iter().map(|r| r.port).collect();
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, None))
        .await
        .unwrap();
    for set in [
        "SET NAMES latin1",
        "SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')",
        "SET @v = 42, time_zone = '+03:00'",
        // Evaluated, read back, and warns (truncated to the minimum): must not tie the
        // session to the reader (the SHOW below goes to the writer once it is back).
        "SET sort_buffer_size = 1 * 1",
        "USE weirtest",
    ] {
        let t = Instant::now();
        c.query_drop(set)
            .await
            .unwrap_or_else(|e| panic!("{set}: {e}"));
        assert!(
            t.elapsed() < Duration::from_secs(1),
            "{set} took {:?}",
            t.elapsed()
        );
    }
    let row: (String, i64, i64, String, String, u16) = c
        .query_first(
            "SELECT @@character_set_client, @@sql_mode LIKE '%ANSI_QUOTES%', @v, @@time_zone, \
             DATABASE(), @@port",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&row.0, "latin1");
    assert_eq!((row.1, row.2), (1, 42));
    assert_eq!((row.3.as_str(), row.4.as_str()), ("+03:00", "weirtest"));
    assert!(replicas.contains(&row.5), "read on {}", row.5);
    // A value the server refuses is refused at once, by a reader.
    let t = Instant::now();
    let e = c
        .query_drop("SET time_zone = 'Nowhere/Bogus'")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("1298"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(1));
    // COM_INIT_DB too.
    let port = w.port;
    tokio::task::spawn_blocking(move || {
        let (mut raw, ok) = common::raw::RawClient::login(port, WEIR_USER, WEIR_PASS, None);
        assert_eq!(ok[0], 0, "{ok:?}");
        let t = Instant::now();
        let r = raw.command(b"\x02sbtest", weir_wire::reply::Expect::Status);
        assert_eq!(r[0][0], 0, "COM_INIT_DB: {r:?}");
        assert!(t.elapsed() < Duration::from_secs(1));
        let r = raw.query("SELECT DATABASE()");
        assert_eq!(
            common::raw::text_first_row(&r),
            vec![Some("sbtest".to_owned())]
        );
    })
    .await
    .unwrap();
    // Writes still need the writer.
    let e = c
        .query_drop("CREATE TABLE IF NOT EXISTS writer_away (id INT)")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("9001"), "{e}");
    admin(
        &w,
        "UPDATE mysql_servers SET status = 'ONLINE' WHERE hostgroup_id = 0; \
         LOAD MYSQL SERVERS TO RUNTIME",
    );
    // Back on the writer (SHOW is not routed by the rule) with the same state.
    let shown: Vec<(String, String)> = c
        .query(
            "SHOW VARIABLES WHERE Variable_name IN ('character_set_client', 'time_zone', 'port')",
        )
        .await
        .unwrap();
    let primary = topo().primary.port.to_string();
    assert_eq!(
        shown,
        vec![
            ("character_set_client".to_owned(), "latin1".to_owned()),
            ("port".to_owned(), primary),
            ("time_zone".to_owned(), "+03:00".to_owned()),
        ]
    );
}

/// A replica added by a LOAD takes no read before the monitor read its lag (at once, not at
/// the next lag round): one whose replication stopped never serves a stale read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_joining_takes_reads_only_once_its_lag_is_read() {
    let _turn = turn().await;
    let w = monitored_with(
        "monitor_ping_interval = 500\n\
         monitor_read_only_interval = 500\n\
         monitor_replication_lag_interval = 3000\n\
         monitor_replication_lag_count = 1",
    );
    let stale = &topo().replicas[0];
    let other = topo().replicas[1].port;
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) \
             VALUES (1, 1, '^SELECT @@port', 1, 1); LOAD MYSQL QUERY RULES TO RUNTIME; \
             DELETE FROM mysql_servers WHERE port = {0}; LOAD MYSQL SERVERS TO RUNTIME",
            stale.port
        ),
    );
    stale.exec("STOP SLAVE SQL_THREAD").unwrap();
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port, max_replication_lag) \
             VALUES (1, '127.0.0.1', {}, 5); LOAD MYSQL SERVERS TO RUNTIME",
            stale.port
        ),
    );
    for _ in 0..100 {
        assert_eq!(port_of(&mut c, "SELECT @@port").await, other);
    }
    assert_eq!(
        status_of(&w, 1, stale.port).as_deref(),
        Some("SHUNNED_REPLICATION_LAG")
    );
    stale.exec("START SLAVE SQL_THREAD").unwrap();
    wait_for("the replica back ONLINE", Duration::from_secs(10), || {
        status_of(&w, 1, stale.port).as_deref() == Some("ONLINE")
    })
    .await;
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..40 {
        seen.insert(port_of(&mut c, "SELECT @@port").await);
    }
    assert!(seen.contains(&stale.port), "{seen:?}");
}

/// A replica with a max_replication_lag back from a ping shun (a restart) has its lag read
/// before it takes traffic again, at once rather than at the next lag round (10 minutes here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_back_from_a_restart_has_its_lag_read_first() {
    let _turn = turn().await;
    let w = monitored_with(
        "monitor_ping_interval = 200\n\
         monitor_ping_max_failures = 1\n\
         monitor_read_only_interval = 600000\n\
         monitor_replication_lag_interval = 600000\n\
         monitor_replication_lag_count = 1\n\
         monitor_slave_lag_when_null = 0",
    );
    let victim = &topo().replicas[1];
    admin(
        &w,
        &format!(
            "UPDATE mysql_servers SET max_replication_lag = 5 WHERE port = {}; \
             LOAD MYSQL SERVERS TO RUNTIME",
            victim.port
        ),
    );
    let lag_checks = || -> u64 {
        table(
            &w,
            &format!(
                "SELECT COUNT(*) AS n FROM monitor.mysql_server_replication_lag_log WHERE port = {}",
                victim.port
            ),
        )[0]["n"]
            .parse()
            .unwrap()
    };
    victim.kill().unwrap();
    wait_for("the replica shunned", Duration::from_secs(10), || {
        status_of(&w, 1, victim.port).as_deref() != Some("ONLINE")
    })
    .await;
    let before = lag_checks();
    victim.restart().unwrap();
    wait_for("the replica back ONLINE", Duration::from_secs(10), || {
        status_of(&w, 1, victim.port).as_deref() == Some("ONLINE")
    })
    .await;
    assert!(lag_checks() > before, "back without a lag check");
    topo()
        .wait_replicas_caught_up(Duration::from_secs(30))
        .unwrap();
}

/// A replica killed with SIGKILL under a read load: reads go on on the other replica; each
/// client sees at most the statement that was running on the dead server fail, and nothing
/// fails a second after the kill.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_replica_is_avoided_within_a_second() {
    let _turn = turn().await;
    let w = start_monitored();
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) \
         VALUES (1, 1, '^SELECT @@port', 1, 1); LOAD MYSQL QUERY RULES TO RUNTIME",
    );
    let victim = &topo().replicas[1];
    let survivor = topo().replicas[0].port;
    let started = Instant::now();
    let mut clients = Vec::new();
    for _ in 0..4 {
        let port = w.port;
        clients.push(tokio::spawn(async move {
            let mut c = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
                .await
                .unwrap();
            let mut failures: Vec<Duration> = Vec::new();
            let mut last_port = 0;
            while started.elapsed() < Duration::from_secs(4) {
                match c.query_first::<u16, _>("SELECT @@port").await {
                    Ok(p) => last_port = p.unwrap_or(0),
                    Err(_) => {
                        failures.push(started.elapsed());
                        // A client whose connection died reconnects, as applications do.
                        c = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
                            .await
                            .unwrap();
                    }
                }
            }
            (failures, last_port)
        }));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    let killed_at = started.elapsed();
    victim.kill().unwrap();
    let mut results = Vec::new();
    for c in clients {
        results.push(c.await.unwrap());
    }
    victim.restart().unwrap();
    for (failures, last_port) in &results {
        assert!(
            failures.len() <= 1,
            "failures at {failures:?} (kill at {killed_at:?})"
        );
        assert!(
            failures
                .iter()
                .all(|t| *t < killed_at + Duration::from_secs(1)),
            "failures at {failures:?} (kill at {killed_at:?})"
        );
        assert_eq!(*last_port, survivor);
    }
    wait_for("the replica back ONLINE", Duration::from_secs(10), || {
        status_of(&w, 1, victim.port).as_deref() == Some("ONLINE")
    })
    .await;
    topo()
        .wait_replicas_caught_up(Duration::from_secs(30))
        .unwrap();
}

/// The primary killed with no replacement: statements wait mysql-connect_timeout_server_max
/// and get ERROR 9001, never hang; once it is back, traffic resumes without restarting weir.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_primary_gives_9001_then_traffic_resumes() {
    let _turn = turn().await;
    let w = start_monitored();
    admin(
        &w,
        "SET mysql-connect_timeout_server_max = 1500; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    let primary = &topo().primary;
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary.port);
    primary.kill().unwrap();
    for _ in 0..2 {
        let t = Instant::now();
        let e = c.query_drop("SELECT 1").await.unwrap_err();
        let took = t.elapsed();
        let msg = e.to_string();
        // The first statement may find its connection dead (1158, lost connection);
        // after that, waiting for a usable server ends in 9001.
        assert!(took < Duration::from_secs(4), "{msg} after {took:?}");
        if msg.contains("9001") {
            assert!(took >= Duration::from_millis(1400), "{msg} after {took:?}");
        }
        if c.ping().await.is_err() {
            c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
                .await
                .unwrap();
        }
    }
    let t = Instant::now();
    let e = c.query_drop("SELECT 1").await.unwrap_err();
    assert!(e.to_string().contains("9001"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(4));
    primary.restart().unwrap();
    let t = Instant::now();
    loop {
        match c.query_first::<u16, _>("SELECT @@port").await {
            Ok(p) => {
                assert_eq!(p, Some(primary.port));
                break;
            }
            Err(e) => {
                assert!(
                    t.elapsed() < Duration::from_secs(10),
                    "traffic did not resume: {e}"
                );
                if c.ping().await.is_err() {
                    c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
                        .await
                        .unwrap();
                }
            }
        }
    }
    topo()
        .wait_replicas_caught_up(Duration::from_secs(30))
        .unwrap();
}
