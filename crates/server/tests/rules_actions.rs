//! What happens to a statement beyond routing, end to end: a query rule's `timeout` and
//! mysql-default_query_timeout stop a statement with KILL QUERY and answer with an error;
//! statements re-run on another connection when their backend connection is lost
//! (mysql-query_retries_on_failure); fast_forward users relay bytes over one backend connection
//! of their own.
//!
//! Every test starts its own weir (client and admin ports free) in front of the shared
//! topology, so that what one test loads does not disturb another.
#![allow(clippy::unwrap_used)]
mod common;

use common::admin::{admin, start, value};
use common::{opts_for, topo};
use mysql_async::prelude::*;
use mysql_async::Conn;
use std::process::Command;
use std::time::{Duration, Instant};
use weir_testkit::{require_binary, WeirProcess, WEIR_PASS, WEIR_USER};

/// A stats_mysql_global counter.
fn global(w: &WeirProcess, name: &str) -> u64 {
    value(
        w,
        &format!("SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = '{name}'"),
    )
    .parse()
    .unwrap_or_else(|e| panic!("{name}: {e}"))
}

async fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until no thread of the primary runs a statement starting with `prefix` (the server
/// may clear a thread's statement text a moment after its reply went out); panics after 5 s,
/// well before a statement that was not stopped would end.
async fn gone_from_primary(prefix: &str) {
    wait_until(
        &format!("{prefix} to leave the primary's processlist"),
        Duration::from_secs(5),
        || {
            topo()
                .primary
                .query_value(&format!(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '{prefix}%'"
                ))
                .unwrap()
                == "0"
        },
    )
    .await;
}

async fn connect_as(w: &WeirProcess, user: &str, pass: &str) -> Conn {
    Conn::new(opts_for(w.port, user, pass, Some("weirtest")))
        .await
        .unwrap_or_else(|e| panic!("connect as {user} failed: {e}\n{}", w.stderr_tail(20)))
}

/// Runs `sql` expecting weir's timeout error; returns its message and how long it took.
async fn expect_timeout(c: &mut Conn, sql: &str) -> (String, Duration) {
    let t = Instant::now();
    let r: Result<Option<i64>, _> = c.query_first(sql).await;
    let took = t.elapsed();
    match r {
        Err(mysql_async::Error::Server(e)) => {
            assert_eq!((e.code, e.state.as_str()), (1907, "70100"), "{e:?}");
            (e.message, took)
        }
        other => panic!("{sql}: expected ERR 1907, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_timeout_kills_the_statement_and_answers_with_an_error() {
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, timeout, apply) \
         VALUES (7, 1, '^SELECT SLEEP', 1000, 1); LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect_as(&w, WEIR_USER, WEIR_PASS).await;
    let (msg, took) = expect_timeout(&mut c, "SELECT SLEEP(10) AS rule_timeout_test").await;
    assert!(
        took >= Duration::from_millis(950) && took < Duration::from_secs(4),
        "answered after {took:?}"
    );
    assert!(
        msg.contains("query_timeout exceeded") && msg.contains("1000 ms") && msg.contains("rule 7"),
        "{msg}"
    );
    // The statement is gone from the server: weir answers once the server ended it.
    gone_from_primary("SELECT SLEEP(10) AS rule_timeout_test").await;
    // The same client connection goes on; so does the backend connection, back in the pool.
    let v: Option<i64> = c.query_first("SELECT 41 + 1").await.unwrap();
    assert_eq!(v, Some(42));

    // A prepared statement carries the timeout of the rule that matched its PREPARE.
    let t = Instant::now();
    let r: Result<Option<i64>, _> = c.exec_first("SELECT SLEEP(?)", (10,)).await;
    match r {
        Err(mysql_async::Error::Server(e)) => {
            assert_eq!(e.code, 1907, "{e:?}");
            assert!(e.message.contains("rule 7"), "{}", e.message);
        }
        other => panic!("prepared SELECT SLEEP(?): expected ERR 1907, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    let v: Option<i64> = c.query_first("SELECT 43").await.unwrap();
    assert_eq!(v, Some(43));

    // Statements the rule does not match are not limited by it, even right after one it
    // limited that ended in time (its deadline, 1 s away, still armed when this one starts).
    let v: Option<i64> = c.query_first("SELECT SLEEP(0.1)").await.unwrap();
    assert_eq!(v, Some(0));
    let v: Option<i64> = c
        .query_first("SELECT 7 FROM (SELECT SLEEP(1.2)) s")
        .await
        .unwrap();
    assert_eq!(v, Some(7));
    assert!(global(&w, "Query_timeouts") >= 2);
    assert!(global(&w, "mysql_killed_backend_queries") >= 2);
    drop(c);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_query_timeout_applies_without_a_rule() {
    let w = start("default_query_timeout = 1500");
    let mut c = connect_as(&w, WEIR_USER, WEIR_PASS).await;
    let (msg, took) = expect_timeout(&mut c, "SELECT SLEEP(10) AS default_timeout_test").await;
    assert!(
        took >= Duration::from_millis(1450) && took < Duration::from_secs(5),
        "answered after {took:?}"
    );
    assert!(
        msg.contains("1500 ms") && msg.contains("mysql-default_query_timeout"),
        "{msg}"
    );
    gone_from_primary("SELECT SLEEP(10) AS default_timeout_test").await;
    let v: Option<i64> = c.query_first("SELECT 5").await.unwrap();
    assert_eq!(v, Some(5));
    // A result set already streaming to the client cannot be replaced by weir's error: the
    // client gets the rows sent so far, then the server's own ERR 1317 after the KILL.
    let t = Instant::now();
    let r: Result<Vec<(String, i64)>, _> = c
        .query("SELECT REPEAT('x', 100000), SLEEP(0.4) FROM seq_1_to_20")
        .await;
    match r {
        Err(mysql_async::Error::Server(e)) => assert_eq!(e.code, 1317, "{e:?}"),
        other => panic!("expected ERR 1317, got {:?}", other.map(|v| v.len())),
    }
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    let v: Option<i64> = c.query_first("SELECT 6").await.unwrap();
    assert_eq!(v, Some(6));
}

/// Kills the backend connection a session holds between statements (kept after an insert
/// that produced an auto-increment id), then runs one more statement; returns its result.
async fn statement_after_lost_connection(w: &WeirProcess) -> Result<Option<i64>, String> {
    let mut c = connect_as(w, WEIR_USER, WEIR_PASS).await;
    c.query_drop("INSERT INTO weirtest.retry_ai (v) VALUES (1)")
        .await
        .unwrap();
    let thread: Option<u64> = c.query_first("SELECT CONNECTION_ID()").await.unwrap();
    let thread = thread.unwrap();
    let primary = &topo().primary;
    primary.exec(&format!("KILL {thread}")).unwrap();
    wait_until("the killed thread to go", Duration::from_secs(10), || {
        primary
            .query_value(&format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = {thread}"
            ))
            .unwrap()
            == "0"
    })
    .await;
    let r = c
        .query_first::<i64, _>("SELECT 42")
        .await
        .map_err(|e| e.to_string());
    // Whatever happened, the session goes on.
    let v: Option<i64> = c.query_first("SELECT 43").await.unwrap();
    assert_eq!(v, Some(43));
    r
}

fn create_retry_table() {
    topo()
        .primary
        .exec("CREATE TABLE IF NOT EXISTS weirtest.retry_ai (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_backend_connection_is_retried_on_another() {
    create_retry_table();
    let w = start("");
    let r = statement_after_lost_connection(&w).await;
    assert_eq!(r, Ok(Some(42)), "weir:\n{}", w.stderr_tail(20));
    assert!(global(&w, "Query_retries") >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_retries_a_lost_backend_connection_is_an_error() {
    create_retry_table();
    let w = start("query_retries_on_failure = 0");
    let e = statement_after_lost_connection(&w).await.unwrap_err();
    assert!(e.contains("1158") && e.contains("Lost connection"), "{e}");
    assert_eq!(global(&w, "Query_retries"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_retries_override_the_default() {
    create_retry_table();
    let w = start("query_retries_on_failure = 0");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, retries) \
         VALUES (1, 1, '^SELECT 42', 1); LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let r = statement_after_lost_connection(&w).await;
    assert_eq!(r, Ok(Some(42)), "weir:\n{}", w.stderr_tail(20));
}

/// Connections the primary has for `user`.
fn primary_threads_of(user: &str) -> Vec<String> {
    topo()
        .primary
        .query_rows(&format!(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = '{user}' ORDER BY ID"
        ))
        .unwrap()
        .into_iter()
        .map(|r| r[0].clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_forward_user_gets_one_backend_connection_of_its_own() {
    const USER: &str = "weir_ff";
    const PASS: &str = "ffpass";
    topo()
        .primary
        .exec(&format!(
            "CREATE USER IF NOT EXISTS '{USER}'@'%' IDENTIFIED BY '{PASS}'; \
             GRANT ALL ON *.* TO '{USER}'@'%';"
        ))
        .unwrap();
    let w = start("");
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_users (username, password, default_hostgroup, fast_forward) \
             VALUES ('{USER}', '{PASS}', 0, 1); LOAD MYSQL USERS TO RUNTIME;"
        ),
    );
    // mysql_async negotiates CLIENT_DEPRECATE_EOF: the backend connection must speak it too.
    let mut c = connect_as(&w, USER, PASS).await;
    let id: Option<u64> = c.query_first("SELECT CONNECTION_ID()").await.unwrap();
    let id = id.unwrap().to_string();
    assert_eq!(primary_threads_of(USER), vec![id.clone()]);

    c.query_drop("DROP TABLE IF EXISTS weirtest.ff")
        .await
        .unwrap();
    c.query_drop("CREATE TABLE weirtest.ff (id INT PRIMARY KEY, v VARCHAR(20))")
        .await
        .unwrap();
    c.query_drop("INSERT INTO ff VALUES (1, 'one'), (2, 'two')")
        .await
        .unwrap();
    // Session state stays: it is the same server connection throughout.
    c.query_drop("SET @weir_ff = 5").await.unwrap();
    let v: Option<i64> = c.query_first("SELECT @weir_ff").await.unwrap();
    assert_eq!(v, Some(5));
    // Prepared statements, several executions of one.
    let stmt = c.prep("SELECT v FROM ff WHERE id = ?").await.unwrap();
    for (k, want) in [(1, "one"), (2, "two")] {
        let v: Option<String> = c.exec_first(&stmt, (k,)).await.unwrap();
        assert_eq!(v.as_deref(), Some(want));
    }
    c.close(stmt).await.unwrap();
    // A multi-statement with several result sets.
    let mut r = c
        .query_iter("SELECT 1 AS a; SELECT id, v FROM ff ORDER BY id; DO 1")
        .await
        .unwrap();
    let first: Vec<i64> = r.collect().await.unwrap();
    let second: Vec<(i64, String)> = r.collect().await.unwrap();
    drop(r);
    assert_eq!(first, vec![1]);
    assert_eq!(second, vec![(1, "one".into()), (2, "two".into())]);
    // A transaction.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("INSERT INTO ff VALUES (3, 'three')")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    let n: Option<i64> = c.query_first("SELECT COUNT(*) FROM ff").await.unwrap();
    assert_eq!(n, Some(2));
    // A client error is the server's own.
    let e = c
        .query_drop("SELECT * FROM no_such_table")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("1146"), "{e}");
    // Still exactly one connection, the same one.
    assert_eq!(primary_threads_of(USER), vec![id.clone()]);

    // No query processing: nothing reaches the digest table.
    assert_eq!(
        value(
            &w,
            &format!("SELECT COUNT(*) FROM stats_mysql_query_digest WHERE username = '{USER}'")
        ),
        "0"
    );

    // The mariadb CLI does not negotiate CLIENT_DEPRECATE_EOF.
    let out = Command::new(require_binary("mariadb"))
        .args(["-h", "127.0.0.1", "-P", &w.port.to_string(), "-u", USER])
        .arg(format!("-p{PASS}"))
        .args(["--protocol=TCP", "--ssl=0", "-N", "-B", "weirtest"])
        .args(["-e", "SELECT v FROM ff ORDER BY id; SELECT DATABASE()"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "one\ntwo\nweirtest\n");

    // The connection closes with the client, never pooled.
    c.disconnect().await.unwrap();
    wait_until(
        "the fast_forward backend connection to close",
        Duration::from_secs(10),
        || primary_threads_of(USER).is_empty(),
    )
    .await;
    wait_until(
        "no connection used or pooled",
        Duration::from_secs(5),
        || {
            value(
                &w,
                "SELECT SUM(ConnUsed) + SUM(ConnFree) FROM stats_mysql_connection_pool",
            ) == "0"
        },
    )
    .await;
}

/// A SELECT calling a stored function may write: when its backend connection is lost while
/// it runs, it is not run again (before, weir took it for a plain SELECT and re-ran it, and
/// the function's write happened twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_calling_a_stored_function_is_never_run_twice() {
    let primary = &topo().primary;
    primary
        .exec("CREATE TABLE IF NOT EXISTS weirtest.side_log (id INT AUTO_INCREMENT PRIMARY KEY) ENGINE=MyISAM")
        .unwrap();
    primary.exec("DELETE FROM weirtest.side_log").unwrap();
    common::create_routine(
        "CREATE OR REPLACE FUNCTION f_side() RETURNS INT DETERMINISTIC MODIFIES SQL DATA \
         BEGIN INSERT INTO side_log VALUES (NULL); DO SLEEP(3); RETURN 1; END",
    )
    .await;
    let w = start("");
    let mut c = Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    let running = tokio::spawn(async move {
        let r = c.query_first::<i64, _>("SELECT f_side()").await;
        (c, r)
    });
    let mut thread = String::new();
    wait_until("the function to run", Duration::from_secs(10), || {
        thread = primary
            .query_value(
                "SELECT COALESCE(MAX(ID), 0) FROM information_schema.PROCESSLIST \
                 WHERE ID <> CONNECTION_ID() AND (INFO LIKE '%f_side%' OR INFO LIKE 'DO SLEEP(3)%')",
            )
            .unwrap();
        thread != "0"
    })
    .await;
    primary.exec(&format!("KILL {thread}")).unwrap();
    let (mut c, r) = running.await.unwrap();
    match r {
        Err(mysql_async::Error::Server(e)) => assert_eq!(e.code, 1158, "{e:?}"),
        other => panic!("expected ERROR 1158, got {other:?}\n{}", w.stderr_tail(20)),
    }
    let writes = primary
        .query_value("SELECT COUNT(*) FROM weirtest.side_log")
        .unwrap();
    assert_eq!(writes, "1", "the function's write ran twice");
    assert_eq!(global(&w, "Query_retries"), 0);
    let v: Option<i64> = c.query_first("SELECT 7").await.unwrap();
    assert_eq!(v, Some(7));
}

/// A statement the server finished with OK before the timeout's KILL QUERY stopped anything
/// (here `DO SLEEP(3)`, which the KILL QUERY merely cuts short) gets that OK: the statement
/// happened. Before, weir answered 1907 "interrupted" for such statements, COMMITs and
/// writes included, and clients that retried them wrote twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_that_ended_with_ok_at_its_timeout_gets_the_ok() {
    let w = start("default_query_timeout = 1000");
    let mut c = connect_as(&w, WEIR_USER, WEIR_PASS).await;
    let t = Instant::now();
    c.query_drop("DO SLEEP(3)")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", w.stderr_tail(20)));
    assert!(
        t.elapsed() < Duration::from_millis(2500),
        "{:?}",
        t.elapsed()
    );
    let v: Option<i64> = c.query_first("SELECT 8").await.unwrap();
    assert_eq!(v, Some(8));
}
