//! The query cache end to end: rules with cache_ttl typed into the admin interface, traffic
//! through weir with mysql_async (text queries and prepared statements) and a raw client, and
//! the server itself asked what ran there (a stored function that logs each run counts executions).
//!
//! Every test starts its own weir in front of the shared topology, so that one test's rules
//! and cache do not answer another's queries.
#![allow(clippy::unwrap_used)]
mod common;

use common::admin::{admin, pool_queries, start, table};
use common::raw::RawClient;
use common::{connect_to, on_primary, topo};
use mysql_async::prelude::*;
use mysql_async::Conn;
use std::collections::BTreeMap;
use std::time::Duration;
use weir_testkit::{WeirProcess, ED_PASS, ED_USER, WEIR_PASS, WEIR_USER};

/// Query_Cache_* counters of stats_mysql_global, names without the prefix.
fn cache_stats(w: &WeirProcess) -> BTreeMap<String, u64> {
    table(
        w,
        "SELECT Variable_Name, Variable_Value FROM stats_mysql_global WHERE Variable_Name LIKE 'Query_Cache%'",
    )
    .iter()
    .map(|r| {
        (
            r["Variable_Name"]["Query_Cache_".len()..].to_string(),
            r["Variable_Value"].parse().unwrap(),
        )
    })
    .collect()
}

async fn connect(w: &WeirProcess) -> Conn {
    connect_to(w, WEIR_USER, WEIR_PASS, "weirtest").await
}

/// A weir with one rule caching what matches `pattern` for `ttl_ms`.
fn weir_caching(pattern: &str, ttl_ms: u32) -> WeirProcess {
    let w = start("");
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, cache_ttl, apply) \
             VALUES (1, 1, '{pattern}', {ttl_ms}, 1); LOAD MYSQL QUERY RULES TO RUNTIME;"
        ),
    );
    w
}

/// Runs each query twice: a second run would be a hit if the first had been stored.
async fn run_twice(c: &mut Conn, queries: &[&str]) {
    for q in queries {
        c.query_drop(*q).await.unwrap();
        c.query_drop(*q).await.unwrap();
    }
}

/// Backend connections in use (checked out) in hostgroup 0.
fn conns_used(w: &WeirProcess) -> u64 {
    table(
        w,
        "SELECT SUM(ConnUsed) AS n FROM stats_mysql_connection_pool WHERE hostgroup = 0",
    )[0]["n"]
        .parse()
        .unwrap()
}

/// A table `table` with one row (id 1, v = `value`), a weir started with `vars` whose rule
/// caches `SELECT v FROM table ...`, and a client that put that row in the cache: (weir, the
/// query, the client).
async fn cached_row(table: &str, value: i64, vars: &str) -> (WeirProcess, String, Conn) {
    on_primary(&format!(
        "CREATE OR REPLACE TABLE weirtest.{table} (id INT AUTO_INCREMENT PRIMARY KEY, v INT); \
         INSERT INTO weirtest.{table} (v) VALUES ({value})"
    ));
    let w = start(vars);
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, cache_ttl, apply) \
             VALUES (1, 1, '^SELECT v FROM {table}', 60000, 1); LOAD MYSQL QUERY RULES TO RUNTIME;"
        ),
    );
    let q = format!("SELECT v FROM {table} WHERE id = 1");
    let mut primer = connect(&w).await;
    assert_eq!(one_string(&mut primer, &q).await, value.to_string());
    (w, q, primer)
}

async fn one_string(c: &mut Conn, sql: &str) -> String {
    c.query_first::<String, _>(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_else(|| panic!("{sql}: no row"))
}

// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_misses_and_ttl() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.cache_hits (id INT PRIMARY KEY, v VARCHAR(20)); \
         INSERT INTO weirtest.cache_hits VALUES (1, 'one'), (2, 'two')",
    );
    // A TTL long enough for the checks before the expiry on a slow machine.
    let w = weir_caching("^SELECT v FROM cache_hits", 4000);
    let mut c = connect(&w).await;
    let before = pool_queries(&w);
    let q = "SELECT v FROM cache_hits WHERE id = 1";
    assert_eq!(one_string(&mut c, q).await, "one");
    let after_miss = pool_queries(&w);
    assert_eq!(after_miss - before, 1, "the miss runs on a backend");
    for _ in 0..20 {
        assert_eq!(one_string(&mut c, q).await, "one");
    }
    assert_eq!(pool_queries(&w), after_miss, "hits do not reach a backend");
    let s = cache_stats(&w);
    assert_eq!(s["count_GET"], 21);
    assert_eq!(s["count_GET_OK"], 20);
    assert_eq!(s["count_SET"], 1);
    assert_eq!(s["Entries"], 1);
    assert!(s["bytes_IN"] > 0 && s["bytes_OUT"] == 20 * s["bytes_IN"]);
    assert!(s["Memory_bytes"] >= s["bytes_IN"]);

    // A query no rule caches, and another text, are separate.
    assert_eq!(
        one_string(&mut c, "SELECT v FROM cache_hits WHERE id = 2").await,
        "two"
    );
    assert_eq!(
        c.query_first::<String, _>("select v from cache_hits where id = 1")
            .await
            .unwrap()
            .unwrap(),
        "one"
    );
    assert_eq!(
        one_string(&mut c, "/* other */ SELECT v FROM cache_hits WHERE id = 1").await,
        "one"
    );
    assert_eq!(
        cache_stats(&w)["count_SET"],
        3,
        "a cached text is its own key"
    );

    // A stale hit until the TTL runs out, then the new value.
    // (Reads go to the primary: no need to wait for the replicas.)
    topo()
        .primary
        .exec("UPDATE weirtest.cache_hits SET v = 'uno' WHERE id = 1")
        .unwrap();
    assert_eq!(one_string(&mut c, q).await, "one", "served from the cache");
    tokio::time::sleep(Duration::from_millis(4100)).await;
    assert_eq!(one_string(&mut c, q).await, "uno", "expired: read again");

    // The digest table shows hits in hostgroup -1, as ProxySQL does.
    let rows = table(
        &w,
        "SELECT hostgroup, count_star FROM stats_mysql_query_digest WHERE digest_text = 'SELECT v FROM cache_hits WHERE id = ?' ORDER BY hostgroup",
    );
    let by_hg: BTreeMap<&str, &str> = rows
        .iter()
        .map(|r| (r["hostgroup"].as_str(), r["count_star"].as_str()))
        .collect();
    // 20 hits and the stale one; on the primary the first miss, id = 2, the commented text
    // (same digest) and the miss after expiry.
    assert_eq!(by_hg.get("-1"), Some(&"21"), "{rows:?}");
    assert_eq!(by_hg.get("0"), Some(&"4"), "{rows:?}");

    // Expired entries are purged in the background (every second): the last one stored
    // expires 4 s after the read above.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let s = loop {
        let s = cache_stats(&w);
        if s["Entries"] == 0 || std::time::Instant::now() > deadline {
            break s;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(s["Entries"], 0, "{s:?}");
    assert!(s["Purged"] >= 3, "{s:?}");
    assert_eq!(s["Memory_bytes"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_separate_user_schema_and_charset() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.cache_keys (v VARCHAR(20) CHARACTER SET utf8mb4); \
         INSERT INTO weirtest.cache_keys VALUES ('weirtest-é'); \
         CREATE OR REPLACE TABLE sbtest.cache_keys (v VARCHAR(20) CHARACTER SET utf8mb4); \
         INSERT INTO sbtest.cache_keys VALUES ('sbtest'); \
         GRANT SELECT ON sbtest.* TO 'weir_ed'@'%'; GRANT SELECT ON weirtest.* TO 'weir_ed'@'%'",
    );
    let w = weir_caching("cache_keys", 60_000);
    let q = "SELECT v FROM cache_keys";
    let mut a = connect(&w).await;
    let mut b = connect_to(&w, WEIR_USER, WEIR_PASS, "sbtest").await;
    assert_eq!(one_string(&mut a, q).await, "weirtest-é");
    assert_eq!(
        one_string(&mut b, q).await,
        "sbtest",
        "schema is in the key"
    );
    // Another user: its own entry (not the first user's), same content.
    let mut ed = connect_to(&w, ED_USER, ED_PASS, "weirtest").await;
    assert_eq!(one_string(&mut ed, q).await, "weirtest-é");
    assert_eq!(cache_stats(&w)["count_SET"], 3, "user is in the key");
    // The same session after SET NAMES latin1 gets latin1 bytes, not the utf8mb4 entry.
    a.query_drop("SET NAMES latin1").await.unwrap();
    let raw: Vec<u8> = a.query_first(q).await.unwrap().unwrap();
    assert_eq!(raw, b"weirtest-\xe9", "latin1 bytes");
    a.query_drop("SET NAMES utf8mb4").await.unwrap();
    assert_eq!(one_string(&mut a, q).await, "weirtest-é");
    let s = cache_stats(&w);
    assert_eq!(s["count_SET"], 5, "{s:?}");
    assert_eq!(
        s["count_GET_OK"], 0,
        "every lookup had a different key: {s:?}"
    );
    // And each key hits its own entry.
    assert_eq!(one_string(&mut b, q).await, "sbtest");
    assert_eq!(one_string(&mut ed, q).await, "weirtest-é");
    assert_eq!(cache_stats(&w)["count_GET_OK"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_is_never_cached() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.cache_never (id INT PRIMARY KEY, v INT); \
         INSERT INTO weirtest.cache_never VALUES (1, 10)",
    );
    let w = weir_caching("cache_never", 60_000);
    let mut c = connect(&w).await;
    let sets = |w: &WeirProcess| cache_stats(w)["count_SET"];
    run_twice(
        &mut c,
        &[
            "SELECT v FROM cache_never WHERE id = 1 FOR UPDATE",
            "SELECT v FROM cache_never WHERE id = 1 LOCK IN SHARE MODE",
        ],
    )
    .await;
    assert_eq!(sets(&w), 0, "locking reads");
    // SELECT INTO @x pins its session (weir does not follow that variable): another one.
    let mut pinned = connect(&w).await;
    for _ in 0..2 {
        pinned
            .query_drop("SELECT v INTO @x FROM cache_never WHERE id = 1")
            .await
            .unwrap();
    }
    assert_eq!(sets(&w), 0, "SELECT INTO");
    // Errors.
    for _ in 0..2 {
        let e = c
            .query_drop("SELECT nosuchcolumn FROM cache_never")
            .await
            .unwrap_err();
        assert!(e.to_string().contains("1054"), "{e}");
    }
    assert_eq!(sets(&w), 0, "errors");
    // Inside a transaction, and with autocommit off.
    let gets = cache_stats(&w)["count_GET"];
    assert_eq!(gets, 2, "the two erring queries were looked up");
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("SELECT v FROM cache_never WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("COMMIT").await.unwrap();
    c.query_drop("SET autocommit = 0").await.unwrap();
    c.query_drop("SELECT v FROM cache_never WHERE id = 1")
        .await
        .unwrap();
    c.query_drop("ROLLBACK").await.unwrap();
    c.query_drop("SET autocommit = 1").await.unwrap();
    assert_eq!(sets(&w), 0, "transactions");
    assert_eq!(cache_stats(&w)["count_GET"], gets, "not even looked up");
    // Warnings: not stored.
    c.query_drop("SELECT CAST('1x' AS SIGNED) FROM cache_never")
        .await
        .unwrap();
    assert_eq!(sets(&w), 0, "a reply with warnings");
    // Empty results: only with cache_empty_result or the global variable.
    c.query_drop("SELECT v FROM cache_never WHERE id = 99")
        .await
        .unwrap();
    assert_eq!(
        sets(&w),
        1,
        "mysql-query_cache_stores_empty_result defaults to true"
    );
    admin(
        &w,
        "UPDATE mysql_query_rules SET cache_empty_result = 0; LOAD MYSQL QUERY RULES TO RUNTIME; PROXYSQL FLUSH QUERY CACHE",
    );
    c.query_drop("SELECT v FROM cache_never WHERE id = 98")
        .await
        .unwrap();
    assert_eq!(sets(&w), 1, "cache_empty_result = 0");
    // A temporary table pins the session to its connection: the key cannot cover it.
    c.query_drop("CREATE TEMPORARY TABLE cache_never (id INT, v INT)")
        .await
        .unwrap();
    let v: Option<i32> = c
        .query_first("SELECT v FROM cache_never WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(v, None, "the temporary table shadows the cached one");
    assert_eq!(sets(&w), 1);
}

/// Statements whose reply must come from a run of their own: sequence functions (each call
/// advances the sequence), reads of the session's warning and error counts, and a SELECT a
/// rule rewrites into something else (what runs is what must be cacheable).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequences_session_counts_and_rewrites_are_never_cached() {
    on_primary(
        "CREATE OR REPLACE SEQUENCE weirtest.cache_seq_nc; \
         CREATE OR REPLACE TABLE weirtest.cache_rw (v INT)",
    );
    let w = weir_caching("cache_me_too", 60_000);
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, replace_pattern, \
         cache_ttl, apply) VALUES (2, 1, '^SELECT 77 /\\* cache_rw \\*/$', \
         'INSERT INTO cache_rw (v) VALUES (77)', 60000, 1); LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    let sets = |w: &WeirProcess| cache_stats(w)["count_SET"];
    let mut seen = Vec::new();
    for q in [
        "SELECT NEXTVAL(cache_seq_nc) /* cache_me_too */",
        "SELECT NEXTVAL(cache_seq_nc) /* cache_me_too */",
        "SELECT NEXT VALUE FOR cache_seq_nc /* cache_me_too */",
    ] {
        let v: i64 = c.query_first(q).await.unwrap().unwrap();
        seen.push(v);
    }
    assert!(seen.windows(2).all(|p| p[1] > p[0]), "{seen:?}");
    run_twice(
        &mut c,
        &[
            "SELECT @@warning_count /* cache_me_too */",
            "SELECT @@session.error_count + 0 /* cache_me_too */",
        ],
    )
    .await;
    assert_eq!(sets(&w), 0, "sequences and session counts");
    for _ in 0..3 {
        c.query_drop("SELECT 77 /* cache_rw */").await.unwrap();
    }
    let rows: u64 = c
        .query_first("SELECT COUNT(*) FROM cache_rw")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(rows, 3, "every rewritten INSERT ran");
    assert_eq!(sets(&w), 0, "a rewrite into an INSERT");
}

/// A statement an application keeps prepared follows the rules loaded after its prepare:
/// a cache rule removed stops caching it, and a rule sending it elsewhere routes its next
/// execution there (LOAD MYSQL QUERY RULES TO RUNTIME, no new prepare).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_follow_rules_loaded_after_their_prepare() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.cache_reload (id INT PRIMARY KEY, v INT); \
         INSERT INTO weirtest.cache_reload VALUES (1, 6)",
    );
    let w = weir_caching("^SELECT v FROM cache_reload", 600_000);
    let mut c = connect(&w).await;
    let stmt = c
        .prep("SELECT v FROM cache_reload WHERE id = ?")
        .await
        .unwrap();
    let v: i32 = c.exec_first(&stmt, (1,)).await.unwrap().unwrap();
    assert_eq!(v, 6);
    on_primary("UPDATE weirtest.cache_reload SET v = 106 WHERE id = 1");
    let v: i32 = c.exec_first(&stmt, (1,)).await.unwrap().unwrap();
    assert_eq!(v, 6, "cached");
    admin(
        &w,
        "UPDATE mysql_query_rules SET cache_ttl = NULL WHERE rule_id = 1; \
         LOAD MYSQL QUERY RULES TO RUNTIME; PROXYSQL FLUSH QUERY CACHE",
    );
    let sets = cache_stats(&w)["count_SET"];
    for _ in 0..2 {
        let v: i32 = c.exec_first(&stmt, (1,)).await.unwrap().unwrap();
        assert_eq!(v, 106, "no longer cached");
    }
    assert_eq!(cache_stats(&w)["count_SET"], sets, "nothing stored again");
    // Routing: the same statement's executions go where the new rules send them.
    let who = c.prep("SELECT @@server_id /* route_me */").await.unwrap();
    let primary: u32 = c.exec_first(&who, ()).await.unwrap().unwrap();
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, \
         apply) VALUES (2, 1, 'route_me', 1, 1); LOAD MYSQL QUERY RULES TO RUNTIME",
    );
    let replica: u32 = c.exec_first(&who, ()).await.unwrap().unwrap();
    assert_ne!(replica, primary, "sent to a replica (hostgroup 1)");
    let replica_ids: Vec<u32> = topo().replicas.iter().map(|r| r.server_id).collect();
    assert!(
        replica_ids.contains(&replica),
        "{replica} in {replica_ids:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_are_cached_by_parameters() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.cache_ps (id INT PRIMARY KEY, v VARCHAR(20), d DATETIME); \
         INSERT INTO weirtest.cache_ps VALUES (1, 'a', '2020-01-01 10:00:00'), (2, 'b', NULL), (3, 'c', '2021-06-30 23:59:59')",
    );
    let w = weir_caching("^SELECT v, d FROM cache_ps", 60_000);
    let mut c = connect(&w).await;
    let stmt = c
        .prep("SELECT v, d FROM cache_ps WHERE id = ?")
        .await
        .unwrap();
    type Row = (String, Option<mysql_async::Value>);
    let mut first: BTreeMap<i32, Vec<Row>> = BTreeMap::new();
    for id in [1, 2, 3, 4] {
        first.insert(id, c.exec(&stmt, (id,)).await.unwrap());
    }
    let s = cache_stats(&w);
    assert_eq!((s["count_SET"], s["count_GET_OK"]), (4, 0), "{s:?}");
    let before = pool_queries(&w);
    for _ in 0..3 {
        for id in [1, 2, 3, 4] {
            let rows: Vec<Row> = c.exec(&stmt, (id,)).await.unwrap();
            assert_eq!(rows, first[&id], "id {id}");
        }
    }
    assert_eq!(pool_queries(&w), before, "every execution was a hit");
    assert_eq!(cache_stats(&w)["count_GET_OK"], 12);
    assert_eq!(first[&1][0].0, "a");
    assert_eq!(first[&2][0].1, None, "NULL");
    assert!(first[&4].is_empty());
    // A string parameter of another type is another key; the text protocol is another key.
    let rows: Vec<Row> = c.exec(&stmt, ("1",)).await.unwrap();
    assert_eq!(rows, first[&1]);
    let text: Vec<(String, Option<String>)> = c
        .query("SELECT v, d FROM cache_ps WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(text[0].0, "a");
    assert_eq!(cache_stats(&w)["count_SET"], 6);
    // Another session preparing the same statement shares the entries.
    let mut other = connect(&w).await;
    let s2 = other
        .prep("SELECT v, d FROM cache_ps WHERE id = ?")
        .await
        .unwrap();
    let rows: Vec<Row> = other.exec(&s2, (3,)).await.unwrap();
    assert_eq!(rows, first[&3]);
    assert_eq!(cache_stats(&w)["count_GET_OK"], 13);
}

/// An execution is keyed by where its statement was prepared (schema, sql_mode), which the
/// session may have left since: another client preparing the same text elsewhere never gets
/// its reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_are_cached_by_where_they_were_prepared() {
    on_primary(
        "CREATE DATABASE IF NOT EXISTS cache_ps_other; \
         CREATE OR REPLACE TABLE weirtest.cache_ps_where (id INT PRIMARY KEY, v VARCHAR(20)); \
         INSERT INTO weirtest.cache_ps_where VALUES (1, 'weirtest'); \
         CREATE OR REPLACE TABLE cache_ps_other.cache_ps_where (id INT PRIMARY KEY, v VARCHAR(20)); \
         INSERT INTO cache_ps_other.cache_ps_where VALUES (1, 'other')",
    );
    let w = weir_caching("cache_ps_where", 60_000);
    // `1 || 0` is '10' with PIPES_AS_CONCAT, 1 (OR) without.
    let text = "SELECT CONCAT(v, ?, 1 || 0) FROM cache_ps_where WHERE id = 1";
    // Prepared in weirtest with PIPES_AS_CONCAT, executed after both changed.
    let mut a = connect(&w).await;
    a.query_drop("SET sql_mode = 'PIPES_AS_CONCAT'")
        .await
        .unwrap();
    let stmt = a.prep(text).await.unwrap();
    a.query_drop("USE cache_ps_other").await.unwrap();
    a.query_drop("SET sql_mode = DEFAULT").await.unwrap();
    let got: Option<String> = a.exec_first(&stmt, ("!",)).await.unwrap();
    assert_eq!(got.as_deref(), Some("weirtest!10"), "as prepared");
    // Another client, in the schema and sql_mode the first one is in now.
    let mut b = connect_to(&w, WEIR_USER, WEIR_PASS, "cache_ps_other").await;
    b.query_drop("SET sql_mode = DEFAULT").await.unwrap();
    let got: Option<String> = b.exec_first(text, ("!",)).await.unwrap();
    assert_eq!(got.as_deref(), Some("other!1"), "its own statement's reply");
    let s = cache_stats(&w);
    assert_eq!((s["count_SET"], s["count_GET_OK"]), (2, 0), "{s:?}");
    // Each gets its own entry after that.
    let got: Option<String> = a.exec_first(&stmt, ("!",)).await.unwrap();
    assert_eq!(got.as_deref(), Some("weirtest!10"));
    let got: Option<String> = b.exec_first(text, ("!",)).await.unwrap();
    assert_eq!(got.as_deref(), Some("other!1"));
    assert_eq!(cache_stats(&w)["count_GET_OK"], 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_misses_run_once_on_the_server() {
    // Each execution on the server logs a row (sequence functions are never cached: a
    // stored function with a side effect weir cannot see counts executions instead; declared
    // DETERMINISTIC because the primary writes a binary log, which asks for it).
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.cache_runs (id INT AUTO_INCREMENT PRIMARY KEY);\n\
         DELIMITER //\nCREATE OR REPLACE FUNCTION weirtest.cache_run() RETURNS INT \
         DETERMINISTIC MODIFIES SQL DATA \
         BEGIN INSERT INTO weirtest.cache_runs VALUES (NULL); RETURN LAST_INSERT_ID(); END //\n\
         DELIMITER ;",
    );
    let w = weir_caching("cache_run\\(\\)", 60_000);
    let mut clients = Vec::new();
    for _ in 0..100 {
        clients.push(connect(&w).await);
    }
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(clients.len()));
    let mut tasks = Vec::new();
    for mut c in clients {
        let barrier = barrier.clone();
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let v: (i64, i64) = c
                .query_first("SELECT cache_run(), SLEEP(0.5)")
                .await
                .unwrap()
                .unwrap();
            v.0
        }));
    }
    let mut values = Vec::new();
    for t in tasks {
        values.push(t.await.unwrap());
    }
    assert!(
        values.iter().all(|v| *v == 1),
        "every client got the one execution's row: {values:?}"
    );
    let runs = topo()
        .primary
        .query_value("SELECT COUNT(*) FROM weirtest.cache_runs")
        .unwrap();
    assert_eq!(runs, "1", "the statement ran once on the server");
    let s = cache_stats(&w);
    assert_eq!(
        (s["count_GET"], s["count_GET_OK"], s["count_SET"]),
        (100, 99, 1),
        "{s:?}"
    );
}

/// With no ONLINE server to run a miss on, concurrent misses of one key do not wait for one
/// another: each fails after one wait of connect_timeout_server_max, not after the filler's
/// wait and then its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn misses_with_no_server_wait_once() {
    let w = start("connect_timeout_server_max = 1000");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, cache_ttl, apply) \
         VALUES (1, 1, 'no_server_miss', 60000, 1); LOAD MYSQL QUERY RULES TO RUNTIME",
    );
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(connect(&w).await);
    }
    admin(
        &w,
        "UPDATE mysql_servers SET status = 'OFFLINE_HARD' WHERE hostgroup_id = 0; \
         LOAD MYSQL SERVERS TO RUNTIME",
    );
    let started = std::time::Instant::now();
    let mut tasks = Vec::new();
    for mut c in clients {
        tasks.push(tokio::spawn(async move {
            let e = c.query_drop("SELECT 'no_server_miss'").await.unwrap_err();
            (e.to_string(), started.elapsed())
        }));
    }
    for t in tasks {
        let (e, took) = t.await.unwrap();
        assert!(e.contains("9001"), "{e}");
        assert!(took < Duration::from_millis(1800), "failed after {took:?}");
    }
}

/// A session waiting for another session's fill of the same key is stopped by KILL QUERY
/// (1317 at once, as for a statement waiting for a connection) and by KILL (1927, and the
/// session ends), instead of waiting out the filler's statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_stops_a_session_waiting_for_another_ones_fill() {
    let w = weir_caching("kill_waiter", 60_000);
    for (kill, code) in [("KILL QUERY", 1317), ("KILL", 1927)] {
        let mut filler = connect(&w).await;
        let mut waiter = connect(&w).await;
        let mut killer = connect(&w).await;
        let waiter_id = waiter.id();
        let sql = format!("SELECT SLEEP(3), 'kill_waiter', '{kill}'");
        let fill = tokio::spawn(async move {
            let _: Option<(u8, String, String)> = filler.query_first(sql).await.unwrap();
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sql = format!("SELECT SLEEP(3), 'kill_waiter', '{kill}'");
        let started = std::time::Instant::now();
        let wait = tokio::spawn(async move {
            let r: Result<Option<(u8, String, String)>, _> = waiter.query_first(sql).await;
            (r.map(|_| ()), started.elapsed())
        });
        tokio::time::sleep(Duration::from_millis(300)).await;
        killer
            .query_drop(format!("{kill} {waiter_id}"))
            .await
            .unwrap();
        let (r, took) = wait.await.unwrap();
        let e = r.unwrap_err();
        assert!(e.to_string().contains(&code.to_string()), "{kill}: {e}");
        assert!(
            took < Duration::from_millis(2000),
            "{kill}: answered after {took:?}"
        );
        fill.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_is_bounded_and_flush_empties() {
    let rows: Vec<String> = (1..=3000)
        .map(|i| format!("({i}, REPEAT('x', 1000))"))
        .collect();
    on_primary(&format!(
        "CREATE OR REPLACE TABLE weirtest.cache_flood (id INT PRIMARY KEY, pad VARCHAR(1000)); \
         INSERT INTO weirtest.cache_flood VALUES {}",
        rows.join(",")
    ));
    let w = weir_caching("cache_flood", 600_000);
    admin(
        &w,
        "SET mysql-query_cache_size_MB = 1; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    let mut c = connect(&w).await;
    for id in 1..=3000 {
        let _: Option<String> = c
            .query_first(format!("SELECT pad FROM cache_flood WHERE id = {id}"))
            .await
            .unwrap();
        if id % 500 == 0 {
            let s = cache_stats(&w);
            assert!(s["Memory_bytes"] <= 1 << 20, "{s:?}");
        }
    }
    let s = cache_stats(&w);
    assert_eq!(s["count_SET"], 3000, "{s:?}");
    assert!(s["Entries"] < 1000, "{s:?}");
    assert!(
        s["Purged"] >= 3000 - s["Entries"],
        "evictions are counted: {s:?}"
    );
    assert!(s["Memory_bytes"] <= 1 << 20);
    // The most recent entries answer.
    let hits = s["count_GET_OK"];
    let _: Option<String> = c
        .query_first("SELECT pad FROM cache_flood WHERE id = 3000")
        .await
        .unwrap();
    assert_eq!(cache_stats(&w)["count_GET_OK"], hits + 1);
    // Flush (both spellings) empties it; the next query is a miss.
    let out = admin(&w, "PROXYSQL FLUSH QUERY CACHE");
    assert!(out.is_empty(), "{out}");
    let s = cache_stats(&w);
    assert_eq!((s["Entries"], s["Memory_bytes"]), (0, 0), "{s:?}");
    let _: Option<String> = c
        .query_first("SELECT pad FROM cache_flood WHERE id = 3000")
        .await
        .unwrap();
    let s2 = cache_stats(&w);
    assert_eq!(s2["count_GET_OK"], s["count_GET_OK"]);
    assert_eq!(s2["Entries"], 1);
    admin(&w, "WEIR FLUSH QUERY CACHE");
    assert_eq!(cache_stats(&w)["Entries"], 0);
    // Size 0 turns the cache off: no lookups.
    admin(
        &w,
        "SET mysql-query_cache_size_MB = 0; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    let gets = cache_stats(&w)["count_GET"];
    let _: Option<String> = c
        .query_first("SELECT pad FROM cache_flood WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(cache_stats(&w)["count_GET"], gets);
}

/// Reads one text result set (or OK/ERR) as packets, for a client with or without
/// CLIENT_DEPRECATE_EOF.
fn read_result(c: &mut RawClient, deprecate_eof: bool) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let first = c.read_packet().unwrap();
    let n = first.1[0];
    out.push(first.clone());
    if n == 0 || n == 0xff {
        return out;
    }
    for _ in 0..n {
        out.push(c.read_packet().unwrap());
    }
    if !deprecate_eof {
        out.push(c.read_packet().unwrap());
    }
    loop {
        let p = c.read_packet().unwrap();
        let end = p.1[0] == 0xfe && p.1.len() < 0xff_ffff && (deprecate_eof || p.1.len() < 9);
        out.push(p);
        if end {
            return out;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hits_are_byte_identical_for_either_eof_style() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.cache_bytes (id INT PRIMARY KEY, v VARCHAR(20), n DECIMAL(10,2)); \
         INSERT INTO weirtest.cache_bytes VALUES (1, 'x', 1.50), (2, NULL, -3.25), (3, 'zzz', 0)",
    );
    let w = weir_caching("cache_bytes", 60_000);
    let q = "SELECT id, v, n FROM cache_bytes ORDER BY id";
    let mut replies = BTreeMap::new();
    for (name, caps) in [
        ("classic", 0),
        ("deprecate_eof", weir_wire::cap::DEPRECATE_EOF),
    ] {
        // Each client's first run is relayed from the server, its second replayed.
        admin(&w, "PROXYSQL FLUSH QUERY CACHE");
        let (mut c, ok) =
            RawClient::login_caps(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"), caps);
        assert_eq!(ok[0], 0, "login: {ok:?}");
        let mut p = vec![0x03];
        p.extend_from_slice(q.as_bytes());
        let mut got = Vec::new();
        for _ in 0..2 {
            c.send(&p);
            got.push(read_result(&mut c, caps != 0));
        }
        assert_eq!(
            got[0], got[1],
            "{name}: a hit is the bytes of the relayed reply"
        );
        replies.insert(name, got.remove(0));
    }
    let s = cache_stats(&w);
    assert_eq!((s["count_SET"], s["count_GET_OK"]), (2, 2), "{s:?}");
    // Same rows either way; the deprecate_eof client has no EOF after the definitions.
    assert_eq!(replies["classic"].len(), replies["deprecate_eof"].len() + 1);
}

/// A hit is the session's last statement: the connection an insert left with the session
/// (mysql-auto_increment_delay_multiplex) goes back to the pool, since what it holds of the
/// insert (ROW_COUNT(), warnings) is no longer what the client's next statement must read;
/// LAST_INSERT_ID() is still the insert's, brought to whichever connection reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hit_lets_the_auto_increment_affinity_go() {
    let (w, q, mut primer) = cached_row(
        "cache_ai",
        7,
        "auto_increment_delay_multiplex = 2\nauto_increment_delay_multiplex_timeout_ms = 0",
    )
    .await;
    let q = q.as_str();
    let mut c = connect(&w).await;
    c.query_drop("INSERT INTO cache_ai (v) VALUES (8)")
        .await
        .unwrap();
    let id: u64 = c
        .query_first("SELECT MAX(id) FROM cache_ai")
        .await
        .unwrap()
        .unwrap();
    c.query_drop("INSERT INTO cache_ai (v) VALUES (9)")
        .await
        .unwrap();
    assert_eq!(
        conns_used(&w),
        1,
        "the insert's connection stays with the session"
    );
    assert_eq!(one_string(&mut c, q).await, "7");
    assert_eq!(conns_used(&w), 0, "the hit let it go");
    // Another client's insert on that connection meanwhile.
    primer
        .query_drop("INSERT INTO cache_ai (v) VALUES (10)")
        .await
        .unwrap();
    let last: u64 = c
        .query_first("SELECT LAST_INSERT_ID()")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(last, id + 1, "the client's own insert");
    assert_eq!(cache_stats(&w)["count_GET_OK"], 1);
}

/// With mysql-multiplexing = false a hit leaves the connection with the session, as any
/// statement does; what the next statement reads of the hit is still the hit's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hit_with_multiplexing_off_keeps_the_connection() {
    let (w, q, primer) = cached_row("cache_mx", 5, "multiplexing = false").await;
    let q = q.as_str();
    drop(primer.disconnect().await);
    let mut c = connect(&w).await;
    c.query_drop("INSERT INTO cache_mx (v) VALUES (6)")
        .await
        .unwrap();
    assert_eq!(one_string(&mut c, q).await, "5");
    assert_eq!(cache_stats(&w)["count_GET_OK"], 1, "a hit");
    assert_eq!(conns_used(&w), 1, "the connection stays with the session");
    let n: i64 = c.query_first("SELECT ROW_COUNT()").await.unwrap().unwrap();
    assert_eq!(n, -1, "the hit's, not the insert's");
}

/// What a statement reads of the one before (ROW_COUNT(), FOUND_ROWS(), warnings and errors)
/// after a cache hit, or after a SELECT whose connection went back to the pool: packet for
/// packet what the server answers when the statement before really ran. These lone reads
/// are answered by weir; inside larger statements they read the connection they land on
/// (documented).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_hit_leaves_is_what_the_server_would_leave() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.cache_prev (id INT PRIMARY KEY); \
         INSERT INTO weirtest.cache_prev VALUES (1), (2), (3), (4); \
         CREATE OR REPLACE TABLE weirtest.cache_prev_ai \
         (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
    );
    let w = weir_caching("cache_hit_me", 60_000);
    let hit = "SELECT id FROM cache_prev /* cache_hit_me */";
    let insert = "INSERT INTO cache_prev_ai (v) VALUES (1)";
    let warn = "INSERT IGNORE INTO cache_prev_ai (v) VALUES ('1x')";
    let fail = "SELECT * FROM cache_prev_nosuch";
    let cases: [&[&str]; 9] = [
        &[insert, hit, "SELECT ROW_COUNT()"],
        &[insert, hit, "SELECT FOUND_ROWS()"],
        &[warn, hit, "SHOW WARNINGS"],
        &[warn, hit, "SELECT @@warning_count"],
        &[fail, hit, "SELECT @@session.error_count AS e"],
        // No hit: a SELECT whose connection went back to the pool.
        &[
            "SELECT id FROM cache_prev WHERE id > 1",
            "SELECT FOUND_ROWS()",
        ],
        // Statements that read no table leave the diagnostics of the one before.
        &[fail, "SELECT ROW_COUNT()", "SHOW WARNINGS"],
        &[
            fail,
            "SELECT @@warning_count",
            "SELECT @@error_count",
            "SHOW ERRORS",
        ],
        // Nor do the diagnostic statements themselves.
        &[
            fail,
            "SHOW WARNINGS",
            "SELECT @@error_count",
            "SHOW WARNINGS",
        ],
    ];
    let run = |port: u16, case: &[&str]| {
        let (mut c, p) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        let mut replies = Vec::new();
        for sql in case {
            replies.push(c.query(sql));
        }
        replies
    };
    // Fill the cache.
    run(w.port, &[hit]);
    let hits_before = cache_stats(&w)["count_GET_OK"];
    for case in cases {
        let direct = run(topo().primary.port, case);
        let through_weir = run(w.port, case);
        // The first statement (an auto-increment id, an error) and the hit may differ in
        // nothing that matters here; what follows must be the server's, byte for byte.
        let k = case.iter().position(|s| *s == hit).map_or(1, |i| i + 1);
        assert_eq!(through_weir[k..], direct[k..], "{case:?}");
    }
    assert_eq!(
        cache_stats(&w)["count_GET_OK"] - hits_before,
        5,
        "every case's hit was one"
    );
}

/// The destination hostgroup is part of the key: a text the rules send to another hostgroup
/// (here by a flag the previous statement set) is not answered with the first hostgroup's
/// reply. Before, a client routed to the replicas got the primary's cached rows.
#[tokio::test]
async fn keys_separate_hostgroups() {
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, next_query_flagIN, apply) \
         VALUES (1, 1, '^SELECT ''to readers''', 5, 1); \
         INSERT INTO mysql_query_rules (rule_id, active, flagIN, match_pattern, destination_hostgroup, cache_ttl, apply) \
         VALUES (2, 1, 5, '^SELECT @@port', 1, 60000, 1), (3, 1, 0, '^SELECT @@port', 0, 60000, 1); \
         LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let primary = topo().primary.port.to_string();
    let mut a = connect(&w).await;
    assert_eq!(one_string(&mut a, "SELECT @@port").await, primary);
    assert_eq!(one_string(&mut a, "SELECT @@port").await, primary, "a hit");
    let mut b = connect(&w).await;
    b.query_drop("SELECT 'to readers'").await.unwrap();
    let port = one_string(&mut b, "SELECT @@port").await;
    assert_ne!(
        port, primary,
        "a replica's port, not the primary's cached one"
    );
    assert!(cache_stats(&w)["count_GET_OK"] >= 1);
}

/// A SELECT calling a stored function keeps its connection with the session, as a CALL
/// does: the function may set session variables weir does not see. Before, the connection
/// went back to the pool with the function's `time_zone`, and other clients got it.
#[tokio::test]
async fn a_select_calling_a_stored_function_keeps_its_connection() {
    common::create_routine(
        "CREATE OR REPLACE FUNCTION set_tz(z VARCHAR(10)) RETURNS INT DETERMINISTIC \
         BEGIN SET time_zone = z; RETURN 1; END",
    )
    .await;
    let w = start("");
    admin(
        &w,
        "UPDATE mysql_servers SET max_connections = 2 WHERE hostgroup_id = 0; LOAD MYSQL SERVERS TO RUNTIME;",
    );
    let mut a = connect(&w).await;
    a.query_drop("SELECT set_tz('+05:00')").await.unwrap();
    assert_eq!(one_string(&mut a, "SELECT @@time_zone").await, "+05:00");
    for _ in 0..4 {
        let mut b = connect(&w).await;
        let tz = one_string(&mut b, "SELECT @@time_zone").await;
        assert_ne!(tz, "+05:00", "another client's time_zone");
        b.disconnect().await.unwrap();
    }
    assert_eq!(one_string(&mut a, "SELECT @@time_zone").await, "+05:00");
}

/// FOUND_ROWS() after a prepared statement's execution, a hit or not, counts its rows, as on
/// the server. Before, weir asked whichever connection the next statement got.
#[tokio::test]
async fn found_rows_after_a_prepared_execution_counts_its_rows() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.fr_kv (k INT PRIMARY KEY); \
         INSERT INTO weirtest.fr_kv VALUES (1), (2), (3)",
    );
    let w = weir_caching("^SELECT k FROM fr_kv", 60000);
    let mut c = connect(&w).await;
    let mut other = connect(&w).await;
    for round in 0..3 {
        let rows: Vec<i64> = c.exec("SELECT k FROM fr_kv", ()).await.unwrap();
        assert_eq!(rows.len(), 3);
        // Another client's statement in between, on whatever connection.
        let _: Vec<i64> = other.query("SELECT 1 UNION SELECT 2").await.unwrap();
        let found = one_string(&mut c, "SELECT FOUND_ROWS()").await;
        assert_eq!(found, "3", "round {round}");
    }
    assert!(cache_stats(&w)["count_GET_OK"] >= 2, "prepared hits");
    // With SQL_CALC_FOUND_ROWS, the server's count of all the rows, not those sent.
    let rows: Vec<i64> = c
        .exec("SELECT SQL_CALC_FOUND_ROWS k FROM fr_kv LIMIT 1", ())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(one_string(&mut c, "SELECT FOUND_ROWS()").await, "3");
}
