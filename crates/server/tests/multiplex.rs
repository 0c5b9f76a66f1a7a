//! Multiplexing end to end: many clients over few backend connections, with each client's
//! session state (schema, charset, autocommit, sql_mode, time_zone, user variables,
//! transactions) following the client and never the connection; what keeps a connection with
//! its client, and only for as long as it must; prepared statements across the pool.
//!
//! Every test starts its own weir with its primary's max_connections lowered through the admin
//! interface, so that clients have to share connections.
#![allow(clippy::unwrap_used)]
mod common;

use common::admin::{admin, start, table, value};
use common::{opts_for, topo};
use mysql_async::prelude::*;
use mysql_async::{Conn, Value};
use std::time::{Duration, Instant};
use weir_testkit::{WeirProcess, WEIR_PASS, WEIR_USER};

/// A weir whose primary (hostgroup 0) takes at most `max` connections from it.
fn start_with_max(max: u32, extra_vars: &str) -> WeirProcess {
    let w = start(extra_vars);
    admin(
        &w,
        &format!(
            "UPDATE mysql_servers SET max_connections = {max} WHERE hostgroup_id = 0; \
             LOAD MYSQL SERVERS TO RUNTIME"
        ),
    );
    w
}

async fn connect(w: &WeirProcess, db: Option<&str>) -> Conn {
    Conn::new(opts_for(w.port, WEIR_USER, WEIR_PASS, db))
        .await
        .unwrap_or_else(|e| panic!("connect through weir: {e}\n{}", w.stderr_tail(30)))
}

/// Runs SQL on the primary directly, as root.
fn primary(sql: &str) -> Vec<Vec<String>> {
    topo().primary.query_rows(sql).unwrap()
}

/// The mariadb CLI through weir, as in the seed's examples: (stdout, stderr).
fn mariadb(w: &WeirProcess, args: &[&str], sql: &str) -> (String, String) {
    let (ok, stdout, stderr) = common::cli_at(w.port, args, sql);
    assert!(ok, "{sql}: {stderr}");
    (stdout, stderr)
}

/// Backend connections weir opened to hostgroup 0 (ConnOK).
fn backend_connects(w: &WeirProcess) -> u64 {
    let rows = table(
        w,
        "SELECT ConnOK FROM stats_mysql_connection_pool WHERE hostgroup = 0",
    );
    rows[0]["ConnOK"].parse().unwrap()
}

/// Backend connections in use in hostgroup 0 (held by sessions) and the most ever used.
fn pool_use(w: &WeirProcess) -> (u64, u64) {
    let rows = table(
        w,
        "SELECT ConnUsed, MaxConnUsed FROM stats_mysql_connection_pool WHERE hostgroup = 0",
    );
    let n = |c: &str| rows[0][c].parse::<u64>().unwrap();
    (n("ConnUsed"), n("MaxConnUsed"))
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::NULL => None,
        Value::Bytes(b) => Some(String::from_utf8_lossy(b).into_owned()),
        Value::Int(i) => Some(i.to_string()),
        Value::UInt(u) => Some(u.to_string()),
        other => Some(format!("{other:?}")),
    }
}

/// Seed 003's four MaxScale scenarios, verbatim with the mariadb CLI, through a weir whose
/// primary takes ONE connection: every client gets the very connection the previous one used,
/// so any state left on it would show.
#[tokio::test]
async fn seed_003_scenarios_behave_like_proxysql() {
    let w = start_with_max(1, "");
    primary(
        "CREATE TABLE IF NOT EXISTS weirtest.seed3 (id INT PRIMARY KEY, v INT); \
         DELETE FROM weirtest.seed3; \
         INSERT INTO weirtest.seed3 SELECT seq, seq FROM weirtest.seq_1_to_100",
    );

    // Schema: each client is in the schema it asked for.
    let (out, _) = mariadb(&w, &["weirtest"], "SELECT DATABASE()");
    assert!(out.contains("weirtest"), "{out}");
    let (out, _) = mariadb(&w, &["mysql"], "SELECT DATABASE()");
    assert!(out.contains("mysql") && !out.contains("weirtest"), "{out}");

    // Charset: SET NAMES latin1 in one client does not reach the next.
    let q = "SELECT DATABASE(), @@session.character_set_client";
    let (before, _) = mariadb(&w, &["mysql", "--default-character-set=utf8"], q);
    mariadb(&w, &["mysql"], "SET NAMES latin1");
    let (after, _) = mariadb(&w, &["mysql", "--default-character-set=utf8"], q);
    assert_eq!(before, after);
    assert!(
        after.contains("utf8") && !after.contains("latin1"),
        "{after}"
    );

    // autocommit: SET autocommit=0 in one client does not reach the next.
    let show = "SHOW VARIABLES LIKE 'autocommit'";
    let (out, _) = mariadb(&w, &[], show);
    assert!(out.contains("ON"), "{out}");
    mariadb(&w, &[], "SET autocommit=0");
    let (out, _) = mariadb(&w, &[], show);
    assert!(out.contains("ON") && !out.contains("OFF"), "{out}");

    // Transactions: a client that leaves mid-transaction leaves nothing open, and its change
    // is rolled back — whether the transaction came from autocommit=0 or START TRANSACTION.
    mariadb(
        &w,
        &[],
        "SET autocommit=0; DELETE FROM weirtest.seed3 WHERE id < 50",
    );
    mariadb(
        &w,
        &[],
        "START TRANSACTION; DELETE FROM weirtest.seed3 WHERE id >= 50",
    );
    let (out, _) = mariadb(&w, &[], "SELECT COUNT(*) FROM weirtest.seed3");
    assert!(out.contains("100"), "{out}");
    // No transaction still holds the deleted rows: locking them all succeeds at once (other
    // tests' transactions run meanwhile, so information_schema.innodb_trx is not empty).
    let locked = primary(
        "SET SESSION innodb_lock_wait_timeout = 1; \
         SELECT COUNT(*) FROM weirtest.seed3 FOR UPDATE",
    );
    assert_eq!(locked, vec![vec!["100".to_string()]]);

    // A characteristic set for the next transaction only does not reach the next client.
    mariadb(&w, &[], "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
    let (out, _) = mariadb(
        &w,
        &[],
        "START TRANSACTION WITH CONSISTENT SNAPSHOT; \
         SELECT trx_isolation_level FROM information_schema.innodb_trx \
         WHERE trx_mysql_thread_id = CONNECTION_ID(); COMMIT",
    );
    assert!(out.contains("REPEATABLE READ"), "{out}");
    assert!(pool_use(&w).1 <= 1);
}

/// A random client's operations, with the model of what it set.
struct Model {
    schema: &'static str,
    charset: &'static str,
    autocommit: bool,
    sql_mode: String,
    time_zone: String,
    user_var: Option<String>,
    explicit_txn: bool,
    pending: u64,
    committed: u64,
}

const SCHEMAS: [&str; 3] = ["weirtest", "mp_a", "mp_b"];
const CHARSETS: [&str; 3] = ["latin1", "utf8mb4", "utf8mb3"];
const SQL_MODES: [&str; 4] = [
    "",
    "ANSI_QUOTES",
    "NO_ENGINE_SUBSTITUTION",
    "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION",
];
const TIME_ZONES: [&str; 4] = ["+00:00", "+05:30", "SYSTEM", "-03:00"];

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Reads each client makes first, in the state all clients log in with, so that statements of
/// clients in the same state meet (pipes) however the random part spreads them apart.
const SHARED_STATE_READS: u64 = 16;

/// One client's random run; returns (operations, mismatches found).
async fn random_client(
    port: u16,
    id: u64,
    ops: u64,
    defaults: (String, String),
    start: std::sync::Arc<tokio::sync::Barrier>,
) -> (u64, u64) {
    let mut c = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
        .await
        .unwrap();
    start.wait().await;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ (id + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
    let mut m = Model {
        schema: "weirtest",
        charset: "utf8mb4",
        autocommit: true,
        sql_mode: defaults.0.clone(),
        time_zone: defaults.1.clone(),
        user_var: None,
        explicit_txn: false,
        pending: 0,
        committed: 0,
    };
    // mysql_async logs in with utf8mb4.
    let mut mismatches = 0u64;
    let mut prepared_in: Option<&str> = None;
    for op in 0..ops {
        let r = if op < SHARED_STATE_READS {
            0
        } else {
            rng.below(103)
        };
        let sql = match r {
            0..=29 => {
                // The client's id and the operation number make every reply this client's own:
                // a reply relayed to the wrong client (pipelining) shows.
                // Every other read is a prepared statement (binary protocol, executed on
                // whichever connection, pipelined too).
                let row: mysql_async::Row = if op % 2 == 1 {
                    c.exec_first(
                        "SELECT DATABASE(), @@character_set_client, @@autocommit, @@sql_mode, \
                         @@time_zone, @v, CONCAT(?, '.', ?)",
                        (id, op),
                    )
                    .await
                } else {
                    c.query_first(format!(
                        "SELECT DATABASE(), @@character_set_client, @@autocommit, @@sql_mode, \
                         @@time_zone, @v, '{id}.{op}'"
                    ))
                    .await
                }
                .unwrap()
                .unwrap();
                let got: Vec<Option<String>> = (0..7).map(|i| text(&row[i])).collect();
                // The server resolves DATABASE() in a prepared statement when it is prepared
                // (mysql_async prepares it once per connection, at its first use).
                let schema = if op % 2 == 1 {
                    *prepared_in.get_or_insert(m.schema)
                } else {
                    m.schema
                };
                let want = vec![
                    Some(schema.to_string()),
                    Some(m.charset.to_string()),
                    Some(if m.autocommit { "1" } else { "0" }.to_string()),
                    Some(m.sql_mode.clone()),
                    Some(m.time_zone.clone()),
                    m.user_var.clone(),
                    Some(format!("{id}.{op}")),
                ];
                if got != want {
                    mismatches += 1;
                    eprintln!("client {id} op {op}: got {got:?}, model {want:?}");
                }
                continue;
            }
            30..=37 => {
                m.schema = SCHEMAS[rng.below(3) as usize];
                format!("USE {}", m.schema)
            }
            38..=45 => {
                m.charset = CHARSETS[rng.below(3) as usize];
                format!("SET NAMES {}", m.charset)
            }
            46..=53 => {
                let mode = SQL_MODES[rng.below(4) as usize];
                m.sql_mode = mode.to_string();
                if rng.below(2) == 0 {
                    format!("SET SESSION sql_mode = '{mode}'")
                } else {
                    // Evaluated by the server and read back by weir.
                    format!(
                        "SET SESSION sql_mode = IF(@@sql_mode = '{mode}', @@sql_mode, '{mode}')"
                    )
                }
            }
            54..=61 => {
                let tz = TIME_ZONES[rng.below(4) as usize];
                m.time_zone = tz.to_string();
                if rng.below(2) == 0 {
                    format!("SET @@time_zone = '{tz}'")
                } else {
                    format!("SET @@time_zone = CONCAT('', '{tz}')")
                }
            }
            62..=71 => {
                if rng.below(4) == 0 {
                    m.user_var = None;
                    "SET @v = NULL".to_string()
                } else if rng.below(2) == 0 {
                    let n = rng.below(1_000_000) as i64 - 500_000;
                    m.user_var = Some(n.to_string());
                    format!("SET @v = {n}")
                } else {
                    let s = format!("s{}", rng.below(1_000_000));
                    m.user_var = Some(s.clone());
                    format!("SET @v = '{s}'")
                }
            }
            72..=77 => {
                let on = rng.below(2) == 0;
                if on && !m.autocommit {
                    // Turning autocommit on commits what is open (setting it to what it
                    // already is changes nothing).
                    m.committed += m.pending;
                    m.pending = 0;
                    m.explicit_txn = false;
                }
                m.autocommit = on;
                format!("SET autocommit = {}", u8::from(on))
            }
            78..=82 => {
                // BEGIN commits whatever was open.
                m.committed += m.pending;
                m.pending = 0;
                m.explicit_txn = true;
                "BEGIN".to_string()
            }
            83..=88 => {
                let commit = rng.below(2) == 0;
                if commit {
                    m.committed += m.pending;
                }
                m.pending = 0;
                m.explicit_txn = false;
                if commit { "COMMIT" } else { "ROLLBACK" }.to_string()
            }
            89..=90 => {
                // A failing statement changes nothing, not even an open transaction.
                if c.query_drop("SELECT * FROM weirtest.no_such_table")
                    .await
                    .is_ok()
                {
                    mismatches += 1;
                    eprintln!("client {id} op {op}: a query of a missing table succeeded");
                }
                continue;
            }
            91..=99 => {
                if m.explicit_txn || !m.autocommit {
                    m.pending += 1;
                } else {
                    m.committed += 1;
                }
                format!("INSERT INTO weirtest.mp_rows (client) VALUES ({id})")
            }
            _ => {
                // Back to the login state, where other clients are likely to be too.
                m.schema = "weirtest";
                m.charset = "utf8mb4";
                m.sql_mode = defaults.0.clone();
                m.time_zone = defaults.1.clone();
                m.user_var = None;
                if let Err(e) = c.query_drop("USE weirtest").await {
                    mismatches += 1;
                    eprintln!("client {id} op {op}: USE weirtest: {e}");
                }
                "SET NAMES utf8mb4, sql_mode = DEFAULT, time_zone = DEFAULT, @v = NULL".to_string()
            }
        };
        if let Err(e) = c.query_drop(&sql).await {
            mismatches += 1;
            eprintln!("client {id} op {op}: {sql}: {e}");
        }
    }
    c.query_drop("ROLLBACK").await.unwrap();
    let n: Option<u64> = c
        .query_first(format!(
            "SELECT COUNT(*) FROM weirtest.mp_rows WHERE client = {id}"
        ))
        .await
        .unwrap();
    if n != Some(m.committed) {
        mismatches += 1;
        eprintln!("client {id}: {n:?} rows committed, model {}", m.committed);
    }
    c.disconnect().await.unwrap();
    (ops, mismatches)
}

/// 64 clients over at most 8 backend connections, each a random sequence of state changes,
/// transactions, inserts, failing statements and reads of its state (text and prepared),
/// compared with a model of what it set: 100,000 operations, no mismatch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_session_state_follows_each_client() {
    let total = std::env::var("WEIR_STATE_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    random_state_run("auto_increment_delay_multiplex = 0", total, 0).await;
}

/// The same with mysql-pipeline_depth = 8: the SELECTs of clients in the same state share
/// writes to a backend connection, and each still gets its own reply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_session_state_follows_each_client_when_pipelined() {
    let w = random_state_run(
        "auto_increment_delay_multiplex = 0\npipeline_depth = 8",
        40_000,
        1000,
    )
    .await;
    let pipelined: u64 = value(
        &w,
        "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = 'Pipelined_statements'",
    )
    .parse()
    .unwrap();
    eprintln!("{pipelined} statements pipelined");
    assert!(pipelined > 0, "no statement was pipelined");
}

/// A statement with what its third column is for n.
type PipedStatement = (&'static str, fn(i64) -> i64);

/// Executions of prepared statements join pipes too: 24 clients in 3 schemas run 3 different
/// statements over 2 backend connections of one worker, each checking that every reply
/// carries its own parameters and schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_are_pipelined_with_their_own_replies() {
    let w = start_with_max(2, "threads = 1\npipeline_depth = 16");
    primary("CREATE DATABASE IF NOT EXISTS mp_a; CREATE DATABASE IF NOT EXISTS mp_b");
    let stat = |w: &WeirProcess, name: &str| -> u64 {
        value(
            w,
            &format!(
                "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = '{name}'"
            ),
        )
        .parse()
        .unwrap()
    };
    let statements: [PipedStatement; 3] = [
        ("SELECT ?, DATABASE(), ? + 1", |n| n + 1),
        ("SELECT ? AS a, DATABASE() AS d, ? * 2 AS b", |n| n * 2),
        ("SELECT CONCAT(?, ''), DATABASE(), ? - 1 FROM DUAL", |n| {
            n - 1
        }),
    ];
    // Joining a pipe takes an execution arriving while another of the same state is in
    // flight: on a slow machine a round may see none, so up to 5 rounds.
    for round in 0..5 {
        prepared_round(&w, &statements).await;
        if stat(&w, "Pipelined_statements") > 0 {
            break;
        }
        eprintln!("round {round}: nothing pipelined yet");
    }
    assert!(
        stat(&w, "Pipelined_statements") > 0,
        "no execution was pipelined"
    );
    assert!(pool_use(&w).1 <= 2);
}

/// One round of [`prepared_statements_are_pipelined_with_their_own_replies`]: every reply
/// checked.
async fn prepared_round(w: &WeirProcess, statements: &[PipedStatement; 3]) {
    let mut tasks = Vec::new();
    for client in 0..24u64 {
        let port = w.port;
        let schema = SCHEMAS[(client % 3) as usize];
        let (text, third) = statements[(client / 3 % 3) as usize];
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some(schema)))
                .await
                .unwrap();
            let stmt = c.prep(text).await.unwrap();
            let mut wrong = 0u64;
            for n in 0..1500i64 {
                let tag = format!("{client}.{n}");
                let row: (String, String, i64) =
                    c.exec_first(&stmt, (&tag, n)).await.unwrap().unwrap();
                if row != (tag.clone(), schema.to_string(), third(n)) {
                    wrong += 1;
                    eprintln!("client {client}: got {row:?} for {tag} in {schema}");
                }
            }
            c.disconnect().await.unwrap();
            wrong
        }));
    }
    let mut wrong = 0;
    for t in tasks {
        wrong += t.await.unwrap();
    }
    assert_eq!(wrong, 0, "weir:\n{}", w.stderr_tail(20));
}

/// 64 clients (ids from `first_id`) running random_client for `total` operations in all, over
/// at most 8 backend connections of a weir started with `extra_vars`.
async fn random_state_run(extra_vars: &str, total: u64, first_id: u64) -> WeirProcess {
    let w = start_with_max(8, extra_vars);
    primary(&format!(
        "CREATE DATABASE IF NOT EXISTS mp_a; CREATE DATABASE IF NOT EXISTS mp_b; \
         CREATE TABLE IF NOT EXISTS weirtest.mp_rows \
         (id BIGINT AUTO_INCREMENT PRIMARY KEY, client INT NOT NULL, KEY (client)); \
         DELETE FROM weirtest.mp_rows WHERE client BETWEEN {first_id} AND {first_id} + 63",
    ));
    let row = primary("SELECT @@global.sql_mode, @@global.time_zone");
    let defaults = (row[0][0].clone(), row[0][1].clone());
    let clients = 64u64;
    let started = Instant::now();
    let mut tasks = Vec::new();
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(clients as usize));
    for id in first_id..first_id + clients {
        let defaults = defaults.clone();
        let port = w.port;
        let start = start.clone();
        tasks.push(tokio::spawn(async move {
            random_client(port, id, total / clients, defaults, start).await
        }));
    }
    let (mut ops, mut mismatches) = (0, 0);
    for t in tasks {
        let (o, m) = t.await.unwrap();
        ops += o;
        mismatches += m;
    }
    eprintln!(
        "{ops} operations by {clients} clients in {:?}",
        started.elapsed()
    );
    assert_eq!(mismatches, 0, "weir:\n{}", w.stderr_tail(20));
    let (_, max_used) = pool_use(&w);
    assert!(max_used <= 8, "MaxConnUsed {max_used}");
    w
}

/// What keeps a connection with its client, and only until the reason ends.
#[tokio::test]
async fn pins_last_as_long_as_their_reason() {
    let w = start_with_max(4, "auto_increment_delay_multiplex = 0");
    let mut c = connect(&w, Some("weirtest")).await;
    c.query_drop("CREATE TABLE IF NOT EXISTS pin_t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    let held = |w: &WeirProcess| pool_use(w).0;
    assert_eq!(held(&w), 0, "an idle session holds no connection");

    let cases: &[(&str, &str)] = &[
        ("LOCK TABLES pin_t WRITE", "UNLOCK TABLES"),
        (
            "SELECT GET_LOCK('weir_pin', 5)",
            "SELECT RELEASE_LOCK('weir_pin')",
        ),
        ("BEGIN", "COMMIT"),
        ("SET autocommit = 0", "SET autocommit = 1"),
        ("PREPARE s1 FROM 'SELECT 1'", "DEALLOCATE PREPARE s1"),
        (
            "SELECT GET_LOCK('a', 1), GET_LOCK('b', 1)",
            "SELECT RELEASE_ALL_LOCKS()",
        ),
    ];
    for (pin, unpin) in cases {
        c.query_drop(*pin).await.unwrap();
        if pin.starts_with("SET autocommit") {
            // autocommit=0 alone holds nothing; the first statement that reads a table opens
            // a transaction.
            assert_eq!(held(&w), 0, "after {pin}");
            c.query_drop("SELECT 1").await.unwrap();
            assert_eq!(held(&w), 0, "after {pin} and SELECT 1");
            c.query_drop("SELECT COUNT(*) FROM pin_t").await.unwrap();
        }
        assert_eq!(held(&w), 1, "after {pin}");
        c.query_drop("SELECT 1").await.unwrap();
        assert_eq!(held(&w), 1, "still after {pin}");
        c.query_drop(*unpin).await.unwrap();
        assert_eq!(held(&w), 0, "after {unpin}");
    }
    // A lock released twice by name: still held once.
    c.query_drop("SELECT GET_LOCK('x', 1), GET_LOCK('x', 1)")
        .await
        .unwrap();
    c.query_drop("SELECT RELEASE_LOCK('x')").await.unwrap();
    assert_eq!(held(&w), 1);
    c.query_drop("SELECT RELEASE_LOCK('x')").await.unwrap();
    assert_eq!(held(&w), 0);

    // Followed state holds nothing: it is replayed where the next statement runs.
    for sql in [
        "SET NAMES latin1",
        "SET sql_mode = 'ANSI_QUOTES', time_zone = '+01:00'",
        "SET @v = 'kept', @w = 2",
        "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED",
        "SET wait_timeout = 3600, group_concat_max_len = 4096",
        "SELECT @v",
    ] {
        c.query_drop(sql).await.unwrap();
        assert_eq!(held(&w), 0, "after {sql}");
    }
    let row: (String, String, String, i64) = c
        .query_first("SELECT @v, @@character_set_client, @@tx_isolation, @@group_concat_max_len")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        row,
        (
            "kept".into(),
            "latin1".into(),
            "READ-COMMITTED".into(),
            4096
        )
    );

    // State weir does not follow pins for the rest of the session.
    let mut p = connect(&w, Some("weirtest")).await;
    p.query_drop("SET sql_log_bin = 0").await.unwrap_or(());
    p.query_drop("SET @x = NOW()").await.unwrap();
    assert_eq!(held(&w), 1, "SET weir cannot replay keeps the connection");
    drop(p);

    // SQL_CALC_FOUND_ROWS: FOUND_ROWS() runs where it was counted.
    let found: Option<u64> = {
        c.query_drop("SELECT SQL_CALC_FOUND_ROWS * FROM pin_t LIMIT 0")
            .await
            .unwrap();
        c.query_first("SELECT FOUND_ROWS()").await.unwrap()
    };
    let count: Option<u64> = c.query_first("SELECT COUNT(*) FROM pin_t").await.unwrap();
    assert_eq!(found, count);

    // LAST_INSERT_ID() from the last OK packet, the connection long gone back to the pool.
    c.query_drop("INSERT INTO pin_t (v) VALUES (1)")
        .await
        .unwrap();
    let id = c.last_insert_id().unwrap();
    let mut other = connect(&w, Some("weirtest")).await;
    other
        .query_drop("INSERT INTO pin_t (v) VALUES (2)")
        .await
        .unwrap();
    let got: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    assert_eq!(got, Some(id));
    let got: Option<u64> = c
        .query_first("SELECT LAST_INSERT_ID() + 0 FROM DUAL")
        .await
        .unwrap();
    assert_eq!(got, Some(id), "replayed where a statement reads it");
    assert_eq!(held(&w), 0);
}

/// mysql-autocommit_false_is_transaction keeps the connection while autocommit is off;
/// mysql-auto_increment_delay_multiplex keeps it for N statements after an insert, but no
/// longer than mysql-auto_increment_delay_multiplex_timeout_ms with the client idle.
#[tokio::test]
async fn autocommit_and_auto_increment_settings() {
    let w = start_with_max(
        4,
        "autocommit_false_is_transaction = true\nauto_increment_delay_multiplex = 3\nauto_increment_delay_multiplex_timeout_ms = 2000",
    );
    let held = |w: &WeirProcess| pool_use(w).0;
    let mut c = connect(&w, Some("weirtest")).await;
    c.query_drop("CREATE TABLE IF NOT EXISTS ai_t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    assert_eq!(held(&w), 0);
    c.query_drop("SET autocommit = 0").await.unwrap();
    assert_eq!(
        held(&w),
        1,
        "autocommit=0 is a transaction with this setting"
    );
    c.query_drop("SELECT 1").await.unwrap();
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(held(&w), 1, "until autocommit is back on, not until COMMIT");
    c.query_drop("SET autocommit = 1").await.unwrap();
    assert_eq!(held(&w), 0);

    // After an insert: kept for the next statements...
    c.query_drop("INSERT INTO ai_t (v) VALUES (1)")
        .await
        .unwrap();
    // The timeout runs from the insert's reply, just before this instant.
    let inserted_at = Instant::now();
    let inserted = c.last_insert_id();
    assert_eq!(held(&w), 1, "auto-increment affinity");
    c.query_drop("SELECT 1").await.unwrap();
    assert_eq!(held(&w), 1);
    // ... but an idle client lets go when the timeout runs out. (The checks above take well
    // under the 2 s timeout; the deadlines are loose for slow machines.)
    while held(&w) == 1 {
        assert!(
            inserted_at.elapsed() < std::time::Duration::from_secs(8),
            "the affinity outlived auto_increment_delay_multiplex_timeout_ms"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        inserted_at.elapsed() >= std::time::Duration::from_millis(1900),
        "the affinity ended before auto_increment_delay_multiplex_timeout_ms"
    );
    // LAST_INSERT_ID() still answers right on any connection.
    let id: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    assert_eq!(id, inserted);
}

/// A connection kept only by affinity (here the auto-increment delay after an insert) goes
/// back at once when its server starts draining (OFFLINE_SOFT, as in a switchover), while the
/// client sits idle: the drain does not wait for the affinity's timeout.
#[tokio::test]
async fn an_idle_affinity_gives_way_to_a_draining_server() {
    let w = start_with_max(
        4,
        "auto_increment_delay_multiplex = 5\nauto_increment_delay_multiplex_timeout_ms = 20000",
    );
    let held = |w: &WeirProcess| pool_use(w).0;
    let mut c = connect(&w, Some("weirtest")).await;
    c.query_drop("CREATE TABLE IF NOT EXISTS ai_drain (id INT AUTO_INCREMENT PRIMARY KEY)")
        .await
        .unwrap();
    c.query_drop("INSERT INTO ai_drain VALUES ()")
        .await
        .unwrap();
    let inserted = c.last_insert_id();
    assert_eq!(held(&w), 1, "auto-increment affinity");
    let status = |s: &str| {
        admin(
            &w,
            &format!(
                "UPDATE mysql_servers SET status = '{s}' WHERE hostgroup_id = 0; \
                 LOAD MYSQL SERVERS TO RUNTIME"
            ),
        );
    };
    status("OFFLINE_SOFT");
    let drained = Instant::now();
    while held(&w) == 1 {
        assert!(
            drained.elapsed() < std::time::Duration::from_secs(5),
            "the idle session kept its connection to a draining server"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    status("ONLINE");
    // The session goes on; LAST_INSERT_ID() is still its own.
    let id: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
    assert_eq!(id, inserted);
}

/// A reply without status flags (an error, a prepared statement's definitions) says nothing
/// about the transaction: the connection stays with its client until the transaction ends,
/// and another client's statement waits for it rather than landing in that transaction.
#[tokio::test]
async fn a_transaction_keeps_its_connection_through_errors_and_prepares() {
    let w = start_with_max(1, "");
    let mut c = connect(&w, Some("weirtest")).await;
    c.query_drop("CREATE TABLE IF NOT EXISTS tx_keep (id INT PRIMARY KEY)")
        .await
        .unwrap();
    c.query_drop("DELETE FROM tx_keep").await.unwrap();
    let held = |w: &WeirProcess| pool_use(w).0;
    for (n, step) in ["error", "prepare"].into_iter().enumerate() {
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop(format!("INSERT INTO tx_keep VALUES ({n})"))
            .await
            .unwrap();
        match step {
            "error" => {
                assert!(c.query_drop("SELECT * FROM no_such_table").await.is_err());
                assert!(c
                    .query_drop(format!("INSERT INTO tx_keep VALUES ({n})"))
                    .await
                    .is_err());
            }
            _ => {
                // mysql_async asks for no EOF packets: the prepare reply carries no status.
                c.prep(format!("SELECT id FROM tx_keep WHERE id > ? + {n}"))
                    .await
                    .unwrap();
            }
        }
        assert_eq!(held(&w), 1, "after the {step} inside a transaction");
        // Another client's autocommit insert waits for the connection.
        let port = w.port;
        let other = tokio::spawn(async move {
            let mut o = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
                .await
                .unwrap();
            o.query_drop(format!("INSERT INTO tx_keep VALUES ({})", 100 + n))
                .await
                .unwrap();
            o.disconnect().await.unwrap();
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let mine: Option<u64> = c
            .query_first(format!("SELECT COUNT(*) FROM tx_keep WHERE id = {n}"))
            .await
            .unwrap();
        assert_eq!(mine, Some(1), "the transaction's row, after the {step}");
        let theirs: Option<u64> = c
            .query_first(format!(
                "SELECT COUNT(*) FROM tx_keep WHERE id = {}",
                100 + n
            ))
            .await
            .unwrap();
        assert_eq!(
            theirs,
            Some(0),
            "another client's insert ran inside this transaction"
        );
        c.query_drop("ROLLBACK").await.unwrap();
        other.await.unwrap();
        let rows = primary("SELECT id FROM weirtest.tx_keep ORDER BY id");
        assert_eq!(rows, vec![vec![(100 + n).to_string()]], "after the {step}");
        primary("DELETE FROM weirtest.tx_keep");
    }
}

/// Two ways a connection used to go back to the pool with server state another client would
/// trip over: a statement that fails with autocommit off (it opens a transaction all the
/// same, and an ERR carries no status flags), and a READ ONLY transaction ended by
/// `SET autocommit = 1` (MariaDB keeps the session read-only after it).
#[tokio::test]
async fn no_transaction_state_reaches_the_next_client() {
    let w = start_with_max(1, "");
    let mut c = connect(&w, Some("weirtest")).await;
    let mut other = connect(&w, Some("weirtest")).await;
    c.query_drop("CREATE TABLE IF NOT EXISTS tx_next (id INT PRIMARY KEY)")
        .await
        .unwrap();
    c.query_drop("DELETE FROM tx_next").await.unwrap();
    c.query_drop("INSERT INTO tx_next VALUES (1)")
        .await
        .unwrap();

    c.query_drop("SET autocommit = 0").await.unwrap();
    assert!(c
        .query_drop("INSERT INTO tx_next VALUES (1)")
        .await
        .is_err());
    assert_eq!(
        pool_use(&w).0,
        1,
        "the failed statement's transaction keeps the connection"
    );
    let in_trans: Option<i64> = c.query_first("SELECT @@in_transaction").await.unwrap();
    assert_eq!(in_trans, Some(1), "as on the server");
    c.query_drop("ROLLBACK").await.unwrap();
    c.query_drop("SET autocommit = 1").await.unwrap();
    assert_eq!(pool_use(&w).0, 0);

    c.query_drop("START TRANSACTION READ ONLY").await.unwrap();
    c.query_drop("SET autocommit = 0").await.unwrap();
    c.query_drop("SET autocommit = 1").await.unwrap();
    other
        .query_drop("INSERT INTO tx_next VALUES (2)")
        .await
        .unwrap();
    other.query_drop("BEGIN").await.unwrap();
    other
        .query_drop("INSERT INTO tx_next VALUES (3)")
        .await
        .unwrap();
    other.query_drop("COMMIT").await.unwrap();
    let n: Option<i64> = other
        .query_first("SELECT COUNT(*) FROM tx_next")
        .await
        .unwrap();
    assert_eq!(n, Some(3));
}

/// `SHOW WARNINGS` / `SHOW ERRORS` never show another client's: a client whose last statement
/// left none gets an empty list (and 0 from the COUNT(*) forms), whichever connection is free.
#[tokio::test]
async fn another_clients_warnings_and_errors_are_never_shown() {
    let w = start_with_max(1, "");
    let mut b = connect(&w, Some("weirtest")).await;
    let mut a = connect(&w, Some("weirtest")).await;
    b.query_drop("SELECT CAST('12abc' AS SIGNED)")
        .await
        .unwrap();
    let shown: Vec<mysql_async::Row> = a.query("SHOW WARNINGS").await.unwrap();
    assert!(shown.is_empty(), "a fresh client saw another's warning");
    // Described as the server describes its own (a driver reads Code as a number).
    let r = a.query_iter("SHOW WARNINGS").await.unwrap();
    let types: Vec<_> = r.columns_ref().iter().map(|c| c.column_type()).collect();
    r.drop_result().await.unwrap();
    use mysql_async::consts::ColumnType::{MYSQL_TYPE_LONG, MYSQL_TYPE_VAR_STRING};
    assert_eq!(
        types,
        [
            MYSQL_TYPE_VAR_STRING,
            MYSQL_TYPE_LONG,
            MYSQL_TYPE_VAR_STRING
        ]
    );
    assert!(b.query_drop("SELECT * FROM no_such_table").await.is_err());
    let shown: Vec<mysql_async::Row> = a.query("/* x */ show errors;").await.unwrap();
    assert!(shown.is_empty(), "a fresh client saw another's error");
    let n: Option<u64> = a.query_first("SHOW COUNT(*) WARNINGS").await.unwrap();
    assert_eq!(n, Some(0));
    // Its own still show, on the connection it ran on.
    a.query_drop("SELECT CAST('7x' AS SIGNED)").await.unwrap();
    let shown: Vec<(String, u32, String)> = a.query("SHOW WARNINGS").await.unwrap();
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert_eq!(shown[0].1, 1292);
    a.query_drop("SELECT 1").await.unwrap();
    b.query_drop("SELECT CAST('12abc' AS SIGNED)")
        .await
        .unwrap();
    let n: Option<u64> = a.query_first("SHOW COUNT(*) ERRORS").await.unwrap();
    assert_eq!(n, Some(0));
    // Its warning's connection gives way to another client waiting for it, whose own warning
    // is then on it: not shown to the first (found with drivers: mysql2, go-sql-driver).
    a.query_drop("SELECT CAST('mine' AS SIGNED)").await.unwrap();
    b.query_drop("SELECT CAST('theirs' AS SIGNED)")
        .await
        .unwrap();
    let shown: Vec<(String, u32, String)> = a.query("SHOW WARNINGS").await.unwrap();
    assert!(
        shown.iter().all(|w| !w.2.contains("theirs")),
        "another client's warning: {shown:?}"
    );
}

/// The `SHOW WARNINGS` weir answers itself (the client's last statement failed; another
/// client ran on the connection since) describes its columns in the client's
/// character_set_results, as the server does, and shows the message in the server's bytes:
/// packet for packet the server's reply.
#[test]
fn show_warnings_after_an_error_is_described_in_the_results_charset() {
    use common::raw::RawClient;
    let run = |port: u16, names: &str| {
        let (mut c, p) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        let (mut other, _) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        c.query(names);
        // A name the error message repeats, in the client's character set: in latin1 the
        // message is not UTF-8, and must come back byte for byte.
        let e_acute: &[u8] = if names.contains("latin1") {
            b"\xe9"
        } else {
            "\u{e9}".as_bytes()
        };
        let failed = c.command(
            &[b"\x03SELECT * FROM no_such_table_sw_", e_acute].concat(),
            weir_wire::reply::Expect::ResultSets,
        );
        assert_eq!(common::raw::err_code(&failed[0]), Some(1146));
        // Through weir the connection now serves another client first.
        other.query("SELECT 1");
        c.query("SHOW WARNINGS")
    };
    let w = start_with_max(1, "");
    for names in [
        "SET NAMES latin1",
        "SET NAMES utf8mb4 COLLATE utf8mb4_bin",
        "SET character_set_results = utf8mb3",
        "SET character_set_results = NULL",
        "SET NAMES utf8mb4",
    ] {
        let direct = run(topo().primary.port, names);
        let through_weir = run(w.port, names);
        assert_eq!(through_weir, direct, "{names}");
    }
}

/// ROW_COUNT() reads the client's own last statement, not whatever last ran on the connection
/// it gets: weir answers it from the reply it relayed (affected rows of an OK, -1 after rows or
/// an error). One backend connection, so every other client's statement runs in between on it.
#[tokio::test]
async fn row_count_follows_the_client_not_the_connection() {
    let w = start_with_max(1, "");
    let mut c = connect(&w, Some("weirtest")).await;
    let mut other = connect(&w, Some("weirtest")).await;
    c.query_drop("CREATE TABLE IF NOT EXISTS rc_t (id INT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    c.query_drop("DELETE FROM rc_t").await.unwrap();
    c.query_drop("INSERT INTO rc_t VALUES (1, 1), (2, 2), (3, 3)")
        .await
        .unwrap();
    other.query_drop("SELECT 1").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, 3);

    c.query_drop("UPDATE rc_t SET v = v + 1 WHERE id <= 2")
        .await
        .unwrap();
    other
        .query_drop("UPDATE rc_t SET v = v WHERE id = 3")
        .await
        .unwrap();
    assert_eq!(row_count(&mut c, "select row_count() AS n;").await, 2);
    // The answer is a result set itself: the next ROW_COUNT() is -1.
    other
        .query_drop("DELETE FROM rc_t WHERE id = 99")
        .await
        .unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, -1);

    c.query_drop("SELECT * FROM rc_t").await.unwrap();
    other.query_drop("UPDATE rc_t SET v = v + 1").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, -1);

    assert!(c.query_drop("SELECT * FROM no_such_table").await.is_err());
    other.query_drop("UPDATE rc_t SET v = v + 1").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, -1);

    // A prepared statement's OK counts too.
    let stmt = c
        .prep("UPDATE rc_t SET v = v + 1 WHERE id >= ?")
        .await
        .unwrap();
    c.exec_drop(&stmt, (2,)).await.unwrap();
    other.query_drop("SELECT 2").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, 2);

    // A prepare or a close in between leaves it as it was, a failed prepare makes it -1, as on
    // the server (drivers that close their statement after each execution do this all the
    // time).
    c.query_drop("UPDATE rc_t SET v = v + 1 WHERE id <= 2")
        .await
        .unwrap();
    let between = c.prep("SELECT 99").await.unwrap();
    other.query_drop("SELECT 4").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, 2);
    c.query_drop("UPDATE rc_t SET v = v + 1 WHERE id <= 2")
        .await
        .unwrap();
    c.close(between).await.unwrap();
    other.query_drop("SELECT 5").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, 2);
    c.query_drop("UPDATE rc_t SET v = v + 1 WHERE id <= 2")
        .await
        .unwrap();
    assert!(c.prep("SELEC broken").await.is_err());
    other.query_drop("UPDATE rc_t SET v = v + 1").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, -1);

    // The last result of several counts; a ping resets it, as on the server.
    c.query_drop("SELECT 1; UPDATE rc_t SET v = v + 1 WHERE id = 1")
        .await
        .unwrap();
    other.query_drop("SELECT 3").await.unwrap();
    assert_eq!(row_count(&mut c, "/* app */ SELECT ROW_COUNT()").await, 1);
    c.query_drop("UPDATE rc_t SET v = v + 1").await.unwrap();
    c.ping().await.unwrap();
    other.query_drop("UPDATE rc_t SET v = v + 1").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, 0);

    // Inside a transaction the server answers, on the connection the client holds.
    c.query_drop("BEGIN").await.unwrap();
    c.query_drop("UPDATE rc_t SET v = v + 1").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, 3);
    c.query_drop("COMMIT").await.unwrap();
    assert_eq!(row_count(&mut c, "SELECT ROW_COUNT()").await, 0);
    assert_eq!(pool_use(&w).0, 0);
}

async fn row_count(c: &mut Conn, q: &str) -> i64 {
    c.query_first::<i64, _>(q).await.unwrap().unwrap()
}

/// mysql-free_connections_pct bounds idle connections without closing the ones a burst of
/// statements is still using: a burst of 16 clients over a server whose idle limit is 2 opens
/// about 16 connections, not one per statement; once idle, the excess is closed.
#[tokio::test]
async fn idle_connections_over_the_limit_are_trimmed_not_churned() {
    let w = start_with_max(20, "free_connections_pct = 10");
    let pool = |w: &WeirProcess| {
        let rows = table(
            w,
            "SELECT ConnUsed, ConnFree, ConnOK FROM stats_mysql_connection_pool WHERE hostgroup = 0",
        );
        let n = |c: &str| rows[0][c].parse::<u64>().unwrap();
        (n("ConnUsed"), n("ConnFree"), n("ConnOK"))
    };
    let mut clients = Vec::new();
    for _ in 0..16 {
        clients.push(connect(&w, Some("weirtest")).await);
    }
    let before = pool(&w).2;
    let mut tasks = Vec::new();
    for mut c in clients {
        tasks.push(tokio::spawn(async move {
            for _ in 0..200 {
                let _: Option<i64> = c.query_first("SELECT 1").await.unwrap();
            }
            c
        }));
    }
    let mut clients = Vec::new();
    for t in tasks {
        clients.push(t.await.unwrap());
    }
    let (_, free, ok) = pool(&w);
    assert!(
        ok - before <= 20,
        "3,200 statements by 16 clients opened {} connections",
        ok - before
    );
    // More connections than the idle limit were open (a slow machine may already have
    // trimmed some of them when this runs, so the burst's peak rather than `free`).
    let (_, peak) = pool_use(&w);
    assert!(
        peak > 2,
        "the burst used {peak} connections at most (free now: {free})"
    );
    let started = Instant::now();
    loop {
        let (_, free, _) = pool(&w);
        if free == 2 {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "idle connections over mysql-free_connections_pct stay: {free}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    drop(clients);
}

/// What one client sees of prepared statements read under a sql_mode and charset it changed
/// afterwards, and of the same texts prepared by a client in the default ones: (a's results,
/// b's results), each `'a' || 'b'` then `CHARSET('x')`.
async fn parse_context_run(port: u16) -> (Vec<String>, Vec<String>) {
    let opts = || opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    let (mut a, mut b) = (
        Conn::new(opts()).await.unwrap(),
        Conn::new(opts()).await.unwrap(),
    );
    let texts = [
        "SELECT CONCAT('a' || 'b', ?)",
        "SELECT CONCAT(CHARSET('x'), ?)",
    ];
    a.query_drop("SET sql_mode = 'PIPES_AS_CONCAT', NAMES latin1")
        .await
        .unwrap();
    let mut a_stmts = Vec::new();
    for t in texts {
        a_stmts.push(a.prep(t).await.unwrap());
    }
    // Other statements push them out of the connection's statement cache (weir: one per
    // connection), so the next executions prepare them again.
    for n in 0..3 {
        let s = a.prep(format!("SELECT {n}")).await.unwrap();
        a.exec_drop(&s, ()).await.unwrap();
    }
    a.query_drop("SET sql_mode = DEFAULT, NAMES utf8mb4")
        .await
        .unwrap();
    let mut a_seen = Vec::new();
    for s in &a_stmts {
        let v: Option<String> = a.exec_first(s, ("",)).await.unwrap();
        a_seen.push(v.unwrap_or_default());
    }
    let mut b_seen = Vec::new();
    for t in texts {
        let v: Option<String> = b.exec_first(t, ("",)).await.unwrap();
        b_seen.push(v.unwrap_or_default());
    }
    // And a's again, after b's went through the same connection.
    for s in &a_stmts {
        let v: Option<String> = a.exec_first(s, ("",)).await.unwrap();
        a_seen.push(v.unwrap_or_default());
    }
    a.disconnect().await.unwrap();
    b.disconnect().await.unwrap();
    (a_seen, b_seen)
}

/// A prepared statement is read in the sql_mode and charsets in force when the client prepared
/// it, as on the server, even when weir prepares it again later on another connection; a
/// client preparing the same text in other ones gets its own reading.
#[tokio::test]
async fn prepared_statements_keep_the_sql_mode_and_charset_they_were_prepared_in() {
    let w = start_with_max(
        1,
        "auto_increment_delay_multiplex = 0\nmax_stmts_per_connection = 1",
    );
    let direct = parse_context_run(topo().primary.port).await;
    assert_eq!(
        direct,
        (
            vec!["ab".into(), "latin1".into(), "ab".into(), "latin1".into()],
            vec!["0".into(), "utf8mb4".into()]
        ),
        "the server itself"
    );
    let through_weir = parse_context_run(w.port).await;
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
}

/// Prepared statements across the pool: prepared once per connection, executed by many
/// clients over few connections; CLOSE local; parameter types re-sent on another connection.
#[tokio::test]
async fn prepared_statements_run_on_any_connection() {
    let w = start_with_max(
        2,
        "auto_increment_delay_multiplex = 0\nmax_stmts_per_connection = 3",
    );
    let mut tasks = Vec::new();
    for i in 0..20i64 {
        let port = w.port;
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
                .await
                .unwrap();
            for j in 0..30i64 {
                // Five distinct statements, more than a connection keeps: they are evicted and
                // prepared again as they come back.
                let sql = format!("SELECT ? * 100 + {} AS v", j % 5);
                let stmt = c.prep(&sql).await.unwrap();
                let v: Option<i64> = c.exec_first(&stmt, (i,)).await.unwrap();
                assert_eq!(v, Some(i * 100 + j % 5));
                let v: Option<i64> = c.exec_first(&stmt, (i + 1,)).await.unwrap();
                assert_eq!(v, Some((i + 1) * 100 + j % 5));
                c.close(stmt).await.unwrap();
            }
            c.disconnect().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert!(pool_use(&w).1 <= 2);
    let backend: u64 = value(
        &w,
        "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = 'Com_backend_stmt_prepare'",
    )
    .parse()
    .unwrap();
    let frontend: u64 = value(
        &w,
        "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = 'Com_frontend_stmt_prepare'",
    )
    .parse()
    .unwrap();
    assert_eq!(frontend, 600);
    assert!(backend > 0);
    // Statements evicted beyond max_stmts_per_connection are closed on their connection.
    let closed: u64 = value(
        &w,
        "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = 'Com_backend_stmt_close'",
    )
    .parse()
    .unwrap();
    assert!(closed > 0 && closed <= backend, "{closed} of {backend}");
}

/// sysbench with prepared statements (--db-ps-mode=auto) through 4 backend connections.
#[test]
fn sysbench_prepared_through_four_connections() {
    let w = start_with_max(4, "");
    let run = |args: &[&str]| {
        let mut all = vec!["--mysql-db=weirtest", "--tables=4", "--table-size=10000"];
        all.extend_from_slice(args);
        let (ok, text) = common::sysbench("oltp_read_write", w.port, &all);
        assert!(ok, "sysbench {args:?}:\n{text}");
        text
    };
    run(&["cleanup"]);
    run(&["prepare"]);
    let report = run(&[
        "run",
        "--db-ps-mode=auto",
        "--threads=16",
        "--time=10",
        "--mysql-ignore-errors=1213",
    ]);
    // Any error but an InnoDB deadlock (which the workload itself causes now and then, and
    // sysbench retries) ends sysbench with FATAL and a failure status.
    assert!(!report.contains("FATAL"), "{report}");
    let reconnects = report
        .lines()
        .find(|l| l.trim_start().starts_with("reconnects:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok());
    assert_eq!(reconnects, Some(0), "{report}");
    assert!(pool_use(&w).1 <= 4);
}

/// What a client leaves on a connection in ways weir cannot follow — a procedure that opened a
/// transaction and then failed, state set through prepared statements, executable comments,
/// EXECUTE IMMEDIATE, SET TRANSACTION for the next transaction — never reaches the next client
/// of that connection: the primary takes ONE connection, so the next client would get the very
/// same one if weir gave it back.
#[tokio::test]
async fn state_weir_cannot_follow_never_reaches_the_next_client() {
    let w = start_with_max(1, "connect_timeout_server_max = 3000");
    let db = &topo().primary;
    db.exec(
        "CREATE TABLE IF NOT EXISTS weirtest.leak_t (id INT PRIMARY KEY, v VARCHAR(20)); \
         DELETE FROM weirtest.leak_t; INSERT INTO weirtest.leak_t VALUES (1, 'x');\n\
         DELIMITER //\n\
         CREATE OR REPLACE PROCEDURE weirtest.p_partial() BEGIN \
           START TRANSACTION; INSERT INTO weirtest.leak_t VALUES (200, 'partial'); \
           INSERT INTO weirtest.leak_t VALUES (1, 'dup'); END //\n\
         DELIMITER ;\n",
    )
    .unwrap();
    async fn leave(w: &WeirProcess, run: impl AsyncFnOnce(&mut Conn)) {
        let mut a = connect(w, Some("weirtest")).await;
        run(&mut a).await;
        a.disconnect().await.unwrap();
    }
    async fn next_client(w: &WeirProcess, sql: &str) -> Option<String> {
        let mut b = connect(w, Some("weirtest")).await;
        let rows: Vec<mysql_async::Row> =
            b.query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
        let v = rows.first().and_then(|r| r.as_ref(0)).and_then(text);
        b.disconnect().await.unwrap();
        v
    }

    // A procedure opens a transaction, then fails: the ERR carries no status flags.
    leave(&w, async |a| {
        let e = a.query_drop("CALL p_partial()").await.unwrap_err();
        assert!(e.to_string().contains("1062"), "{e}");
    })
    .await;
    assert_eq!(
        next_client(&w, "SELECT COUNT(*) FROM leak_t WHERE id = 200")
            .await
            .as_deref(),
        Some("0"),
        "the failed procedure's transaction reached another client"
    );

    // State set with the binary protocol.
    leave(&w, async |a| {
        a.exec_drop("SET SESSION sql_mode = 'ANSI_QUOTES'", ())
            .await
            .unwrap();
        a.exec_drop("SET @ps_v = ?", ("leak",)).await.unwrap();
        a.exec_drop("SELECT GET_LOCK(?, 0)", ("weir_ps_lock",))
            .await
            .unwrap();
    })
    .await;
    let mode = next_client(&w, "SELECT @@sql_mode")
        .await
        .unwrap_or_default();
    assert!(!mode.contains("ANSI_QUOTES"), "{mode}");
    assert_eq!(next_client(&w, "SELECT @ps_v").await, None);
    assert_eq!(
        next_client(&w, "SELECT IS_FREE_LOCK('weir_ps_lock')")
            .await
            .as_deref(),
        Some("1")
    );

    // Executable comments, as mysqldump writes them, and EXECUTE IMMEDIATE.
    leave(&w, async |a| {
        a.query_drop("/*!40101 SET @ec_v = 'leak' */")
            .await
            .unwrap();
        a.query_drop("/*!40101 SET SESSION sql_mode = 'ANSI_QUOTES' */")
            .await
            .unwrap();
        a.query_drop("EXECUTE IMMEDIATE 'SET @ei_v = 5'")
            .await
            .unwrap();
        a.query_drop("create /*!32302 TEMPORARY */ table ec_tmp (a int)")
            .await
            .unwrap();
    })
    .await;
    assert_eq!(next_client(&w, "SELECT @ec_v").await, None);
    assert_eq!(next_client(&w, "SELECT @ei_v").await, None);
    let mode = next_client(&w, "SELECT @@sql_mode")
        .await
        .unwrap_or_default();
    assert!(!mode.contains("ANSI_QUOTES"), "{mode}");
    assert_eq!(
        next_client(
            &w,
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = 'ec_tmp'"
        )
        .await
        .as_deref(),
        Some("0")
    );

    // SET TRANSACTION for the next transaction, then a statement that starts none.
    leave(&w, async |a| {
        a.query_drop("SET TRANSACTION READ ONLY").await.unwrap();
        a.query_drop("SELECT 1").await.unwrap();
    })
    .await;
    let mut b = connect(&w, Some("weirtest")).await;
    b.query_drop("INSERT INTO leak_t VALUES (2, 'rw')")
        .await
        .unwrap();
    // ... and the characteristics go with the transaction that uses them.
    b.query_drop("SET TRANSACTION READ ONLY").await.unwrap();
    b.query_drop("START TRANSACTION").await.unwrap();
    let e = b
        .query_drop("INSERT INTO leak_t VALUES (3, 'ro')")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("1792"), "{e}");
    b.query_drop("COMMIT").await.unwrap();
    b.query_drop("INSERT INTO leak_t VALUES (3, 'rw')")
        .await
        .unwrap();

    // KILL reaches only weir's sessions, never the server.
    // KILL QUERY ID takes a query id, which weir does not have.
    for sql in ["KILL USER weir", "SELECT 1; KILL 5", "KILL QUERY ID 5"] {
        let e = b.query_drop(sql).await.unwrap_err();
        assert!(e.to_string().contains("1235"), "{sql}: {e}");
    }
    let e = b.query_drop("KILL HARD QUERY 987654").await.unwrap_err();
    assert!(e.to_string().contains("1094"), "{e}");
    b.disconnect().await.unwrap();
}

/// A statement that reached the server and may have changed something is not run again when
/// its connection dies: only a plain SELECT is (mysql-query_retries_on_failure).
#[tokio::test]
async fn a_write_cut_off_by_a_lost_connection_is_not_run_twice() {
    let w = start_with_max(4, "");
    let db = &topo().primary;
    db.exec("CREATE OR REPLACE TABLE weirtest.retry_log (n INT) ENGINE = MyISAM")
        .unwrap();
    let mut c = connect(&w, Some("weirtest")).await;
    let q = tokio::spawn(async move {
        let r = c
            .query_drop(
                // 5 s: the KILL half a second in lands long before it could finish.
                "INSERT INTO retry_log SELECT seq FROM seq_1_to_10 WHERE SLEEP(0.5) = 0 /* retry_test */",
            )
            .await;
        (r, c)
    });
    kill_on_primary_when_running("INSERT INTO retry_log%", 500).await;
    let (r, mut c) = q.await.unwrap();
    let e = r.unwrap_err().to_string();
    assert!(e.contains("1158"), "{e}");
    let n = db
        .query_value("SELECT COUNT(*) FROM weirtest.retry_log")
        .unwrap();
    let n: u32 = n.parse().unwrap();
    assert!(n < 10, "the INSERT ran again: {n} rows");
    // A SELECT cut off the same way runs again on another connection.
    let v: Option<i64> = c.query_first("SELECT 7").await.unwrap();
    assert_eq!(v, Some(7));
}

/// Kills, directly on the primary, the connection running the statement whose text is LIKE
/// `pattern`, `after_ms` after it shows in the processlist.
async fn kill_on_primary_when_running(pattern: &str, after_ms: u64) {
    let db = &topo().primary;
    let mut id = String::new();
    for _ in 0..100 {
        id = db
            .query_value(&format!(
                "SELECT COALESCE(MAX(ID), '') FROM information_schema.PROCESSLIST WHERE INFO LIKE '{pattern}'"
            ))
            .unwrap();
        if !id.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!id.is_empty(), "{pattern} never showed on the primary");
    tokio::time::sleep(std::time::Duration::from_millis(after_ms)).await;
    db.exec(&format!("KILL {id}")).unwrap();
}

/// A SELECT that advances a sequence changes something: cut off by a lost connection, it is
/// not run again (the sequence would skip a value the client never saw).
#[tokio::test]
async fn a_select_advancing_a_sequence_is_not_run_twice() {
    let w = start_with_max(4, "");
    topo()
        .primary
        .exec("CREATE OR REPLACE SEQUENCE weirtest.retry_seq")
        .unwrap();
    let mut c = connect(&w, Some("weirtest")).await;
    let q = tokio::spawn(async move {
        c.query_drop("SELECT NEXTVAL(retry_seq), SLEEP(2) /* seq_retry_test */")
            .await
    });
    kill_on_primary_when_running("SELECT NEXTVAL(retry_seq)%", 200).await;
    let e = q.await.unwrap().unwrap_err().to_string();
    assert!(e.contains("1158"), "{e}");
    let next = topo()
        .primary
        .query_value("SELECT NEXTVAL(weirtest.retry_seq)")
        .unwrap();
    assert_eq!(next, "2", "the sequence was advanced twice");
}

/// A connection kept only by affinity (warnings for SHOW WARNINGS, an insert for
/// LAST_INSERT_ID()) goes to a statement that waits for one even while its client is idle:
/// the waiting client never gets ERROR 9001 for it.
#[tokio::test]
async fn an_idle_affinity_gives_way_to_a_waiting_statement() {
    let w = start_with_max(1, "connect_timeout_server_max = 3000");
    let mut a = connect(&w, Some("weirtest")).await;
    a.query_drop("CREATE TABLE IF NOT EXISTS aff_t (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
        .await
        .unwrap();
    for affinity in ["SELECT 1/0", "INSERT INTO aff_t (v) VALUES (1)"] {
        a.query_drop(affinity).await.unwrap();
        assert_eq!(
            pool_use(&w).0,
            1,
            "after {affinity}: the session keeps its connection"
        );
        let mut b = connect(&w, Some("weirtest")).await;
        let t = Instant::now();
        let v: Option<i64> = b
            .query_first("SELECT 2")
            .await
            .unwrap_or_else(|e| panic!("after {affinity}: {e}"));
        assert_eq!(v, Some(2));
        assert!(
            t.elapsed() < std::time::Duration::from_secs(2),
            "after {affinity}: waited {:?}",
            t.elapsed()
        );
        b.disconnect().await.unwrap();
    }
    // A's next statement runs on whatever connection it gets.
    let v: Option<i64> = a.query_first("SELECT 3").await.unwrap();
    assert_eq!(v, Some(3));
}

/// A client with CLIENT_IGNORE_SPACE (mysql2's default) has IGNORE_SPACE in its sql_mode on
/// whichever connection it gets, even one another client left with another sql_mode: weir's
/// "back to the default" adds what the handshake flag adds.
#[test]
fn ignore_space_from_the_handshake_survives_reuse() {
    use common::raw::RawClient;
    let w = start_with_max(1, "");
    let login = || {
        let (c, p) = RawClient::login_caps(
            w.port,
            WEIR_USER,
            WEIR_PASS,
            Some("weirtest"),
            weir_wire::cap::IGNORE_SPACE,
        );
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let mode = |c: &mut RawClient| {
        let r = c.query("SELECT @@sql_mode");
        // column count, column definition, (EOF), row: the row is the last before the end.
        let row = &r[r.len() - 2];
        String::from_utf8_lossy(&row[1..]).into_owned()
    };
    let mut a = login();
    assert!(mode(&mut a).contains("IGNORE_SPACE"), "{}", mode(&mut a));
    a.query("SET sql_mode = 'TRADITIONAL'");
    assert!(!mode(&mut a).contains("IGNORE_SPACE"));
    drop(a);
    let mut b = login();
    let m = mode(&mut b);
    assert!(m.contains("IGNORE_SPACE"), "{m}");
    let r = b.query("SELECT COUNT (*) FROM (SELECT 1) t");
    assert_ne!(r[0][0], 0xff, "{:?}", String::from_utf8_lossy(&r[0]));
    // As on the server, COM_RESET_CONNECTION goes back to the global sql_mode: no IGNORE_SPACE.
    let r = b.command(&[0x1f], weir_wire::reply::Expect::Status);
    assert_eq!(r[0][0], 0, "{r:?}");
    let m = mode(&mut b);
    assert!(!m.contains("IGNORE_SPACE"), "{m}");
    let global = primary("SELECT @@global.sql_mode");
    assert_eq!(m, global[0][0]);
    // (The server itself.)
    let (mut d, p) = RawClient::login_caps(
        topo().primary.port,
        WEIR_USER,
        WEIR_PASS,
        Some("weirtest"),
        weir_wire::cap::IGNORE_SPACE,
    );
    assert_eq!(p[0], 0);
    assert!(mode(&mut d).contains("IGNORE_SPACE"));
    d.command(&[0x1f], weir_wire::reply::Expect::Status);
    assert_eq!(mode(&mut d), global[0][0]);
}

/// `SET CHARACTER SET` gives the connection the charset of the schema the client is in at that
/// moment; on another connection, in another schema, the client keeps that charset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_character_set_follows_the_schema_it_ran_in() {
    let w = start_with_max(2, "auto_increment_delay_multiplex = 0");
    primary(
        "CREATE DATABASE IF NOT EXISTS mp_latin1 CHARACTER SET latin1; \
         CREATE DATABASE IF NOT EXISTS mp_utf8mb4 CHARACTER SET utf8mb4",
    );
    let mut a = connect(&w, Some("mp_latin1")).await;
    a.query_drop("SET CHARACTER SET utf8mb4").await.unwrap();
    let first: Option<u64> = a.query_first("SELECT CONNECTION_ID()").await.unwrap();
    a.query_drop("USE mp_utf8mb4").await.unwrap();
    // The connection a used is gone: its next statement runs on another one.
    primary(&format!("KILL {}", first.unwrap()));
    let row: Option<(String, String, u64)> = a
        .query_first("SELECT CHARSET('x'), @@collation_connection, CONNECTION_ID()")
        .await
        .unwrap();
    let (charset, collation, a_on) = row.unwrap();
    assert_ne!(Some(a_on), first, "a moved to another connection");
    assert_eq!(
        (charset.as_str(), collation.as_str()),
        ("latin1", "latin1_swedish_ci"),
        "the charset of the schema SET CHARACTER SET ran in, as on the server"
    );
}

/// KILL of a session that waits for a backend connection ends the wait at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_ends_a_wait_for_a_connection() {
    let w = start_with_max(1, "connect_timeout_server_max = 8000");
    // Connected first: a driver's connect runs statements of its own.
    let mut a = connect(&w, Some("weirtest")).await;
    let mut d = connect(&w, Some("weirtest")).await;
    let mut e = connect(&w, None).await;
    a.query_drop("BEGIN").await.unwrap();
    a.query_drop("SELECT 1").await.unwrap();
    let d_id = d.id();
    let waiting = tokio::spawn(async move {
        let t = Instant::now();
        let r = d.query_drop("SELECT 42").await;
        (r, t.elapsed())
    });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    e.query_drop(format!("KILL {d_id}")).await.unwrap();
    let (r, took) = waiting.await.unwrap();
    assert!(r.is_err(), "the killed session ran its statement");
    assert!(
        took < std::time::Duration::from_secs(3),
        "it waited {took:?}"
    );
    a.query_drop("ROLLBACK").await.unwrap();
}

/// mysql-pipeline_depth with clients that leave while their SELECT is on a shared connection
/// (the future dropped mid-reply, the socket closed): the other clients still get exactly
/// their own replies, with no error, and no connection goes out of step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_statements_survive_clients_that_leave() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let w = start_with_max(4, "pipeline_depth = 8");
    let stop = Arc::new(AtomicBool::new(false));
    let mut readers = Vec::new();
    for id in 0..24u32 {
        let mut c = connect(&w, Some("weirtest")).await;
        let stop = stop.clone();
        readers.push(tokio::spawn(async move {
            let (mut n, mut bad) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                let want = format!("{id}.{n}");
                match c
                    .query_first::<String, _>(format!(
                        "SELECT '{want}' FROM DUAL WHERE SLEEP(0) = 0"
                    ))
                    .await
                {
                    Ok(Some(got)) if got == want => {}
                    other => {
                        bad += 1;
                        eprintln!("client {id}: wanted {want}, got {other:?}");
                    }
                }
                n += 1;
            }
            (n, bad)
        }));
    }
    let mut leavers = Vec::new();
    for _ in 0..4 {
        let port = w.port;
        let stop = stop.clone();
        leavers.push(tokio::spawn(async move {
            let mut left = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let mut c = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
                    .await
                    .unwrap();
                let q = c.query_drop("SELECT REPEAT('x', 2000000) FROM DUAL WHERE SLEEP(0) = 0");
                let _ = tokio::time::timeout(std::time::Duration::from_millis(1), q).await;
                drop(c);
                left += 1;
            }
            left
        }));
    }
    // 4 s, longer on a machine too slow to have pipelined anything or cut a client off yet.
    let pipelined = |w: &WeirProcess| -> u64 {
        value(
            w,
            "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = 'Pipelined_statements'",
        )
        .parse()
        .unwrap()
    };
    let started = Instant::now();
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    while pipelined(&w) == 0 && started.elapsed() < std::time::Duration::from_secs(30) {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let (mut total, mut bad) = (0, 0);
    for r in readers {
        let (n, b) = r.await.unwrap();
        total += n;
        bad += b;
    }
    let mut left = 0;
    for l in leavers {
        left += l.await.unwrap();
    }
    let pipelined = pipelined(&w);
    eprintln!("{total} statements, {left} clients left mid-statement, {pipelined} pipelined");
    assert_eq!(bad, 0, "weir:\n{}", w.stderr_tail(20));
    assert!(
        left > 0 && pipelined > 0,
        "{left} left, {pipelined} pipelined"
    );
    // Every connection is still in step: a fresh client gets its own answers.
    let mut c = connect(&w, None).await;
    for i in 0..50 {
        let got: Option<String> = c.query_first(format!("SELECT 'after.{i}'")).await.unwrap();
        assert_eq!(got.as_deref(), Some(format!("after.{i}").as_str()));
    }
}

/// mysql-pipeline_depth and KILL QUERY: a KILL QUERY for a pipelined statement the server has
/// already finished (its reply still on its way to a slow client) lands on the statement behind
/// it on the connection, another client's. That one runs again on a connection of its own: its
/// client gets its result, not ERROR 1317.
#[test]
fn a_kill_meant_for_a_pipelined_statement_stops_no_other_client() {
    use common::raw::{err_code, RawClient};
    use std::time::Duration;
    use weir_wire::reply::Expect;
    // One worker: pipes are per worker thread. The statement behind waits in line as long as
    // the first reply takes (by default it would run on its own after 50 ms).
    let w = start("pipeline_depth = 8\nthreads = 1\npipeline_max_wait_ms = 10000");
    let login = |db: Option<&str>| {
        let (c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, db);
        assert_eq!(<[u8]>::first(&p), Some(&0), "login: {p:?}");
        c
    };
    let pipelined = || common::admin::pipelined_statements(&w);
    let query = |sql: &str| [&[0x03u8][..], sql.as_bytes()].concat();
    // Idle connections in the pool, so that the first statement opens its pipe at once.
    let _warm = common::raw::warm_pool(w.port, 4);
    // 6 MB: more than the socket buffers between weir and a client that reads nothing, so
    // weir is still relaying it when the server has sent it all and moved on.
    let first = "SELECT REPEAT('x', 1000) FROM seq_1_to_6000";
    // About a second of work for the server, interrupted by KILL QUERY with ERROR 1317.
    let behind = "SELECT COUNT(*) FROM seq_1_to_10000 a, seq_1_to_2000 b WHERE a.seq + b.seq = 7";
    for _attempt in 0..10 {
        // A statement on a backend: pipes only open while others run.
        let mut busy = login(Some("weirtest"));
        busy.send(&query("SELECT SLEEP(1)"));
        std::thread::sleep(Duration::from_millis(50));
        let mut slow_reader = login(Some("weirtest"));
        let mut other = login(Some("weirtest"));
        let before = pipelined();
        slow_reader.send(&query(first));
        other.send(&query(behind));
        std::thread::sleep(Duration::from_millis(100));
        // Only once the server runs the second statement is the first over there (a KILL
        // before that rightly stops the client's own statement).
        let behind_running = || {
            let deadline = std::time::Instant::now() + Duration::from_secs(2);
            while std::time::Instant::now() < deadline {
                let n = primary(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                     WHERE INFO LIKE 'SELECT COUNT(*) FROM seq_1_to_10000 a%'",
                );
                if n[0][0] != "0" {
                    return true;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            false
        };
        let joined = pipelined() > before && behind_running();
        let mut killed = false;
        if joined {
            // The first statement is over on the server; the second runs there now.
            let mut killer = login(None);
            let ok = killer.query(&format!(
                "KILL QUERY {}",
                slow_reader.greeting.connection_id
            ));
            assert_eq!(<[u8]>::first(&ok[0]), Some(&0), "KILL QUERY: {ok:?}");
            // Sent to the server only if weir was still relaying the first reply.
            killed = value(
                &w,
                "SELECT Variable_Value FROM stats_mysql_global \
                 WHERE Variable_Name = 'mysql_killed_backend_queries'",
            ) != "0";
        }
        let rows = slow_reader.read_reply(Expect::ResultSets);
        assert!(rows.iter().all(|p| err_code(p).is_none()), "{rows:?}");
        assert_eq!(
            rows.len(),
            3 + 6000 + 1,
            "column count, definition, EOF, rows, EOF"
        );
        let reply = other.read_reply(Expect::ResultSets);
        busy.read_reply(Expect::ResultSets);
        if !killed {
            continue;
        }
        let errors: Vec<_> = reply.iter().filter_map(|p| err_code(p)).collect();
        assert!(
            errors.is_empty(),
            "the statement behind got ERROR {errors:?}\nweir:\n{}",
            w.stderr_tail(20)
        );
        assert_eq!(reply[3], b"\x016", "{reply:?}");
        assert!(
            w.stderr_tail(50).contains("running it again"),
            "{}",
            w.stderr_tail(20)
        );
        return;
    }
    panic!("in 10 attempts, never a KILL QUERY for a statement with another's behind it");
}

/// LAST_INSERT_ID() read by a prepared statement is the client's own, on whichever connection
/// the execution runs (found with drivers: mysql2's execute(), Connector/J server prepares).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prepared_statement_reads_the_clients_own_last_insert_id() {
    let w = start_with_max(2, "auto_increment_delay_multiplex = 0");
    primary(
        "CREATE TABLE IF NOT EXISTS weirtest.ps_last_id \
         (id INT AUTO_INCREMENT PRIMARY KEY, who INT)",
    );
    let mut clients = Vec::new();
    for who in 0..8u32 {
        let mut c = connect(&w, Some("weirtest")).await;
        clients.push(tokio::spawn(async move {
            let mut wrong = Vec::new();
            for _ in 0..20 {
                c.exec_drop("INSERT INTO ps_last_id (who) VALUES (?)", (who,))
                    .await
                    .unwrap();
                let mine = c.last_insert_id().unwrap();
                let read: Option<u64> = c.exec_first("SELECT LAST_INSERT_ID()", ()).await.unwrap();
                let identity: Option<u64> = c.exec_first("SELECT @@identity", ()).await.unwrap();
                if read != Some(mine) || identity != Some(mine) {
                    wrong.push((who, mine, read, identity));
                }
            }
            wrong
        }));
    }
    let mut wrong = Vec::new();
    for c in clients {
        wrong.extend(c.await.unwrap());
    }
    assert!(
        wrong.is_empty(),
        "(client, its id, LAST_INSERT_ID(), @@identity): {wrong:?}"
    );
}

/// A client without a schema never reads in another client's: on a connection another client
/// left in its schema, DATABASE() is not that schema and its tables are not found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_a_schema_never_gets_another_clients() {
    let w = start_with_max(1, "");
    primary("CREATE TABLE IF NOT EXISTS weirtest.only_here (k INT)");
    let mut with_schema = connect(&w, Some("weirtest")).await;
    let mut without = connect(&w, None).await;
    for _ in 0..3 {
        with_schema
            .query_drop("SELECT COUNT(*) FROM only_here")
            .await
            .unwrap();
        let db: Option<Option<String>> = without.query_first("SELECT DATABASE()").await.unwrap();
        assert_ne!(db.flatten().as_deref(), Some("weirtest"));
        let e = without
            .query_drop("SELECT COUNT(*) FROM only_here")
            .await
            .expect_err("a table of another client's schema");
        assert!(
            e.to_string().contains("only_here") || e.to_string().contains("database"),
            "{e}"
        );
    }
}

/// mysql-pipeline_depth: statements do not queue behind a slow one. A pipe whose oldest
/// statement has been running for a millisecond takes no more statements, so quick SELECTs
/// arriving while a slow SELECT runs go to connections of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_statements_do_not_wait_behind_a_slow_one() {
    // One worker: pipes are per worker thread.
    let w = start("pipeline_depth = 8\nthreads = 1");
    let mut slow_a = connect(&w, Some("weirtest")).await;
    let mut slow_b = connect(&w, Some("weirtest")).await;
    let mut quick = connect(&w, Some("weirtest")).await;
    // Two slow statements at once: the second finds the first on a backend and opens a pipe.
    let a = tokio::spawn(async move {
        slow_a.query_drop("SELECT SLEEP(2)").await.unwrap();
    });
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let b = tokio::spawn(async move {
        slow_b.query_drop("SELECT SLEEP(2)").await.unwrap();
    });
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    for i in 0..20 {
        let started = Instant::now();
        let got: Option<u32> = quick.query_first(format!("SELECT {i}")).await.unwrap();
        assert_eq!(got, Some(i));
        let took = started.elapsed();
        assert!(
            // Waiting behind SLEEP(2) would take seconds; the margin is for slow machines.
            took < std::time::Duration::from_millis(1200),
            "SELECT {i} took {took:?}: it waited behind a slow statement"
        );
    }
    a.await.unwrap();
    b.await.unwrap();
}

/// mysql-pipeline_depth: a statement that joined a pipe just before the statement ahead of it
/// turned out slow does not wait for the slow one to end: after a short wait it leaves the
/// line and runs on a connection of its own, and its reply on the pipe is dropped, so the
/// statements after it on either connection get their own replies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipelined_statement_behind_a_slow_one_leaves_the_line() {
    let w = start("pipeline_depth = 8\nthreads = 1");
    let mut busy = connect(&w, Some("weirtest")).await;
    let mut slow = connect(&w, Some("weirtest")).await;
    let mut quick = connect(&w, Some("weirtest")).await;
    // Joining takes the quick statement arriving within a millisecond of the slow one: on a
    // slow machine an attempt may miss it, so up to 5 attempts.
    let mut joined = false;
    for attempt in 0..5 {
        // A pipe opens only while another statement of the worker is on a backend.
        let hold = tokio::spawn(async move {
            busy.query_drop("SELECT SLEEP(3)").await.unwrap();
            busy
        });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let before = common::admin::pipelined_statements(&w);
        let left_before = common::admin::global_stat(&w, "Pipelined_statements_left_line");
        // Both commands leave in one poll, the slow one first.
        let (slept, (got, quick_took)) =
            tokio::join!(slow.query_first::<u32, _>("SELECT SLEEP(2)"), async {
                let started = Instant::now();
                let got = quick
                    .query_first::<u32, _>(format!("SELECT {attempt} + 40"))
                    .await;
                (got, started.elapsed())
            },);
        assert_eq!(slept.unwrap(), Some(0));
        assert_eq!(got.unwrap(), Some(attempt + 40));
        let joined_now = common::admin::pipelined_statements(&w) > before;
        joined |= joined_now;
        if joined_now {
            assert!(
                common::admin::global_stat(&w, "Pipelined_statements_left_line") > left_before,
                "attempt {attempt}: the quick SELECT joined the pipe, but no statement left its line"
            );
        }
        assert!(
            // Waiting for SLEEP(2) would take two seconds.
            quick_took < std::time::Duration::from_millis(1500),
            "attempt {attempt}: the quick SELECT took {quick_took:?}: it waited for the slow one"
        );
        // Each connection's next reply is its own.
        for (c, n) in [(&mut slow, 7u32), (&mut quick, 8)] {
            let got: Option<u32> = c.query_first(format!("SELECT {n}")).await.unwrap();
            assert_eq!(got, Some(n));
        }
        busy = hold.await.unwrap();
        if joined {
            break;
        }
        eprintln!("attempt {attempt}: nothing was pipelined");
    }
    assert!(joined, "the quick SELECT never joined the slow one's pipe");
}

/// mysql-pipeline_depth: a statement that opened a pipe nobody joined (its client's state
/// differs from everyone else's) keeps its connection as any statement does, so its warnings
/// are there for the `SHOW WARNINGS` after it, however busy the other clients are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warnings_of_a_statement_on_a_pipe_nobody_joined_are_kept() {
    let w = start("pipeline_depth = 8\nthreads = 1");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut c = connect(&w, Some("weirtest")).await;
        let stop = stop.clone();
        // Keeps statements on backends, so that a SELECT opens a pipe.
        busy.push(tokio::spawn(async move {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                c.query_drop("SELECT 1").await.unwrap();
            }
        }));
    }
    let mut c = connect(&w, Some("weirtest")).await;
    c.query_drop("CREATE TABLE IF NOT EXISTS pipe_warn (a INT)")
        .await
        .unwrap();
    c.query_drop("SET time_zone = '+01:00'").await.unwrap();
    let before = common::admin::pipelined_statements(&w);
    for i in 0..100 {
        // Naming a table, it clears the warnings before: the session lets its connection go,
        // and the next SELECT may open a pipe.
        c.query_drop("SELECT a FROM pipe_warn").await.unwrap();
        let _: Option<i64> = c
            .query_first(format!("SELECT CAST('x{i}' AS INT)"))
            .await
            .unwrap();
        assert_eq!(c.get_warnings(), 1, "round {i}");
        let shown: Vec<(String, u32, String)> = c.query("SHOW WARNINGS").await.unwrap();
        assert_eq!(shown.len(), 1, "round {i}: SHOW WARNINGS lost the warning");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for b in busy {
        b.await.unwrap();
    }
    // The busy clients' statements did share connections: pipes were open meanwhile.
    assert!(common::admin::pipelined_statements(&w) > before);
}

/// A result column as its definition describes it: name, charset (collation) id, flags.
type ColumnMeta = (String, u16, u16);

fn column_meta(columns: &[mysql_async::Column]) -> Vec<ColumnMeta> {
    columns
        .iter()
        .map(|c| {
            (
                c.name_str().into_owned(),
                c.character_set(),
                c.flags().bits(),
            )
        })
        .collect()
}

async fn query_meta(c: &mut Conn, q: &str) -> Vec<ColumnMeta> {
    let r = c.query_iter(q).await.unwrap();
    let meta = column_meta(r.columns_ref());
    r.drop_result().await.unwrap();
    meta
}

/// What three clients sharing one connection see of their result columns (a after
/// `SET NAMES utf8mb4 COLLATE utf8mb4_bin`, b in the login charsets, c with the same charsets
/// and connection collation as a but set one by one), each statement after another client's.
/// The collation id of each column, step by step.
fn collation_ids(run: &[(&'static str, Vec<ColumnMeta>)]) -> Vec<(&'static str, Vec<u16>)> {
    run.iter()
        .map(|(step, cols)| (*step, cols.iter().map(|c| c.1).collect()))
        .collect()
}

async fn names_collate_run(port: u16) -> Vec<(&'static str, Vec<ColumnMeta>)> {
    let opts = || opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    let mut a = Conn::new(opts()).await.unwrap();
    let mut b = Conn::new(opts()).await.unwrap();
    let mut c = Conn::new(opts()).await.unwrap();
    let q = "SELECT 'x' AS a, CONCAT('x', 1) AS b";
    let mut seen = Vec::new();
    a.query_drop("SET NAMES utf8mb4 COLLATE utf8mb4_bin")
        .await
        .unwrap();
    seen.push(("a", query_meta(&mut a, q).await));
    let stmt = a
        .prep("SELECT 'x' AS a, CONCAT(?, 'x') AS b")
        .await
        .unwrap();
    seen.push(("a prepared", column_meta(&stmt.columns())));
    seen.push(("b", query_meta(&mut b, q).await));
    seen.push(("a after b", query_meta(&mut a, q).await));
    let r = a.exec_iter(&stmt, ("y",)).await.unwrap();
    seen.push(("a executes after b", column_meta(r.columns_ref())));
    r.drop_result().await.unwrap();
    seen.push(("b after a", query_meta(&mut b, q).await));
    c.query_drop("SET NAMES utf8mb4").await.unwrap();
    c.query_drop("SET collation_connection = utf8mb4_bin")
        .await
        .unwrap();
    seen.push(("a after c", query_meta(&mut a, q).await));
    seen.push(("c after a", query_meta(&mut c, q).await));
    a.query_drop("SET character_set_results = utf8mb4")
        .await
        .unwrap();
    seen.push(("c", query_meta(&mut c, q).await));
    seen.push((
        "a after SET character_set_results",
        query_meta(&mut a, q).await,
    ));
    for conn in [a, b, c] {
        conn.disconnect().await.unwrap();
    }
    seen
}

/// After `SET NAMES cs COLLATE coll` the server keeps the collation in character_set_results
/// and describes result columns with it (46, utf8mb4_bin, not 45): weir replays that SET NAMES
/// wherever the client's next statement runs, and does not take a connection in that state for
/// one whose character_set_results was set on its own.
#[tokio::test]
async fn set_names_collate_describes_columns_as_on_the_server() {
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let direct = names_collate_run(topo().primary.port).await;
    assert_eq!(
        collation_ids(&direct),
        vec![
            ("a", vec![46, 46]),
            ("a prepared", vec![46, 46]),
            ("b", vec![45, 45]),
            ("a after b", vec![46, 46]),
            ("a executes after b", vec![46, 46]),
            ("b after a", vec![45, 45]),
            ("a after c", vec![46, 46]),
            ("c after a", vec![45, 45]),
            ("c", vec![45, 45]),
            ("a after SET character_set_results", vec![45, 45]),
        ],
        "the server itself: {direct:?}"
    );
    let through_weir = names_collate_run(w.port).await;
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
}

/// (name, charset, flags) of each column definition of a reply read by a raw client.
fn raw_column_meta(reply: &[Vec<u8>]) -> Vec<ColumnMeta> {
    common::raw::column_defs(reply, false)
        .into_iter()
        .map(|d| (d.name, d.charset, d.flags))
        .collect()
}

/// Two clients that logged in with collation 46 (utf8mb4_bin), on one connection: what the
/// first sees of its result columns after the second ran `SET NAMES latin1` there, by a query
/// and by a prepared statement, and what the second sees after COM_RESET_CONNECTION.
fn handshake_collation_run(port: u16) -> Vec<(&'static str, Vec<ColumnMeta>)> {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let login = || {
        let (c, p) =
            RawClient::login_collation(port, WEIR_USER, WEIR_PASS, Some("weirtest"), 0, 46);
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let (mut a, mut b) = (login(), login());
    let q = "SELECT 'x' AS a, CONCAT('x', 1) AS b";
    let mut seen = Vec::new();
    seen.push(("a", raw_column_meta(&a.query(q))));
    b.query("SET NAMES latin1");
    seen.push(("b after SET NAMES latin1", raw_column_meta(&b.query(q))));
    seen.push(("a after b", raw_column_meta(&a.query(q))));
    b.query("SELECT 1");
    let mut prepare = vec![0x16];
    prepare.extend_from_slice(q.as_bytes());
    let r = a.command(&prepare, Expect::Prepare);
    assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
    seen.push(("a prepares after b", raw_column_meta(&r)));
    b.query("SELECT 1");
    let mut execute = vec![0x17];
    execute.extend_from_slice(&r[0][1..5]);
    execute.push(0); // no cursor
    execute.extend_from_slice(&1u32.to_le_bytes());
    let r = a.command(&execute, Expect::ResultSets);
    seen.push(("a executes after b", raw_column_meta(&r)));
    b.query("SET NAMES latin1");
    let r = b.command(&[0x1f], Expect::Status);
    assert_eq!(r[0][0], 0, "{r:?}");
    seen.push(("b after COM_RESET_CONNECTION", raw_column_meta(&b.query(q))));
    seen
}

/// A handshake collation that is not its charset's default (46, utf8mb4_bin) stays in
/// character_set_results, as at login, when weir brings a connection back to the client's
/// login charsets (and after COM_RESET_CONNECTION, which goes back to them).
#[test]
fn a_handshake_collation_describes_columns_as_on_the_server() {
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let direct = handshake_collation_run(topo().primary.port);
    assert_eq!(
        collation_ids(&direct),
        vec![
            ("a", vec![46, 46]),
            ("b after SET NAMES latin1", vec![8, 8]),
            ("a after b", vec![46, 46]),
            ("a prepares after b", vec![46, 46]),
            ("a executes after b", vec![46, 46]),
            ("b after COM_RESET_CONNECTION", vec![46, 46]),
        ],
        "the server itself: {direct:?}"
    );
    let through_weir = handshake_collation_run(w.port);
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
}

/// A cursor read to its last row is closed on the server (SERVER_STATUS_LAST_ROW_SENT): the
/// session lets its connection go then, not at a COM_STMT_RESET or CLOSE that a driver caching
/// its statements may not send for a long time. One backend connection: another client's
/// statement must not wait for it.
#[test]
fn a_cursor_read_to_the_end_lets_the_connection_go() {
    use common::raw::{err_code, RawClient};
    use weir_wire::reply::Expect;
    let w = start_with_max(1, "connect_timeout_server_max = 3000");
    let (mut a, ok) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    assert_eq!(ok[0], 0);
    let mut p = vec![0x16];
    p.extend_from_slice(b"SELECT seq FROM seq_1_to_5");
    let r = a.command(&p, Expect::Prepare);
    let stmt = [r[0][1], r[0][2], r[0][3], r[0][4]];
    let mut p = vec![0x17];
    p.extend_from_slice(&stmt);
    p.push(1); // CURSOR_TYPE_READ_ONLY
    p.extend_from_slice(&1u32.to_le_bytes());
    let r = a.command(&p, Expect::CursorResultSets);
    assert_eq!(r.len(), 3, "{r:?}");
    let mut fetch = vec![0x1c];
    fetch.extend_from_slice(&stmt);
    fetch.extend_from_slice(&100u32.to_le_bytes());
    let r = a.command(&fetch, Expect::Fetch);
    assert_eq!(r.len(), 6, "five rows and an EOF: {r:?}");
    let (mut b, ok) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0);
    let started = Instant::now();
    let r = b.query("SELECT 7");
    assert_eq!(&r[3][1..], b"7", "{r:?}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(2),
        "waited {:?} for the connection the exhausted cursor held",
        started.elapsed()
    );
    // As on the server: the cursor is gone, and the statement opens another.
    let r = a.command(&fetch, Expect::Fetch);
    assert_eq!(err_code(&r[0]), Some(1421), "{r:?}");
    let r = a.command(&p, Expect::CursorResultSets);
    assert_eq!(r.len(), 3, "{r:?}");
    let r = a.command(&fetch, Expect::Fetch);
    assert_eq!(r.len(), 6, "{r:?}");
}

/// The values each client reads in [`evaluated_set_run`].
const EVALUATED_VARS: &str = "SELECT @@sql_mode, @@session_track_system_variables, @@time_zone, \
     @@sql_select_limit, @@session_track_schema, @@character_set_client";

async fn evaluated_vars(c: &mut Conn) -> Vec<Option<String>> {
    let row: mysql_async::Row = c.query_first(EVALUATED_VARS).await.unwrap().unwrap();
    row.unwrap().iter().map(text).collect()
}

/// Two clients on one connection (through weir), one setting variables to expressions of
/// their current values, the other to literals; what each reads at every step.
async fn evaluated_set_run(port: u16, weir: Option<&WeirProcess>) -> Vec<Vec<Option<String>>> {
    let opts = || opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    let mut a = Conn::new(opts()).await.unwrap();
    let mut b = Conn::new(opts()).await.unwrap();
    let held = || weir.map_or(0, |w| pool_use(w).0);
    let mut seen = Vec::new();
    for set in [
        // What MariaDB Connector/J 3.5.7 and 3.5.11 send at every connect, verbatim.
        "set sql_mode=CONCAT(@@sql_mode,',STRICT_TRANS_TABLES'),session_track_system_variables = CONCAT(@@global.session_track_system_variables,',tx_isolation'),NAMES utf8mb4",
        "set sql_mode=CONCAT(@@sql_mode,',STRICT_TRANS_TABLES'),session_track_system_variables=CONCAT('autocommit,character_set_client,character_set_connection,character_set_results,time_zone,tx_isolation',IF(LOCATE('*',@@session_track_system_variables)>0 OR FIND_IN_SET('last_gtid',LOWER(REPLACE(@@session_track_system_variables,' ','')))>0,',last_gtid','')),session_track_schema=1,NAMES utf8mb4",
        "set sql_mode=CONCAT(@@sql_mode,',ANSI_QUOTES')",
        "set session_track_system_variables=CONCAT(@@session_track_system_variables,',sql_mode')",
        "SET time_zone = IF(@@time_zone = 'SYSTEM', '+03:00', '-01:00'), sql_select_limit = 10 * 5",
    ] {
        a.query_drop(set).await.unwrap();
        assert_eq!(held(), 0, "{set} holds no connection");
    }
    b.query_drop("SET sql_mode = 'TRADITIONAL', time_zone = '+05:00', NAMES latin1")
        .await
        .unwrap();
    seen.push(evaluated_vars(&mut b).await);
    seen.push(evaluated_vars(&mut a).await);
    // Evaluated on a connection b left in its own state: from a's values, not b's.
    a.query_drop("SET sql_mode = CONCAT(@@sql_mode, ',PIPES_AS_CONCAT')")
        .await
        .unwrap();
    seen.push(evaluated_vars(&mut b).await);
    seen.push(evaluated_vars(&mut a).await);
    let concat: Option<String> = a.query_first("SELECT 'x' || 'y'").await.unwrap();
    seen.push(vec![concat]);
    for conn in [a, b] {
        conn.disconnect().await.unwrap();
    }
    seen
}

/// A SET whose values are expressions (MariaDB Connector/J 3.5 connects with two) is run once,
/// its results read back and replayed as literals wherever the client goes next: it no longer
/// pins. An expression that could change more than the variable still does.
#[tokio::test]
async fn a_set_of_expressions_is_read_back_not_pinned() {
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let direct = evaluated_set_run(topo().primary.port, None).await;
    assert!(
        direct[1][0].as_deref().unwrap().contains("ANSI_QUOTES"),
        "{direct:?}"
    );
    assert_eq!(direct[4], vec![Some("xy".to_owned())]);
    let through_weir = evaluated_set_run(w.port, Some(&w)).await;
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));

    let mut p = connect(&w, Some("weirtest")).await;
    p.query_drop("SET sql_select_limit = LAST_INSERT_ID(7)")
        .await
        .unwrap();
    assert_eq!(
        pool_use(&w).0,
        1,
        "LAST_INSERT_ID(n) changes more than the variable"
    );
}

/// What a client saw at one step: its column definitions and first row.
type Look = (&'static str, Vec<ColumnMeta>, Vec<Option<String>>);

/// Four clients that logged in with four collations (46 utf8mb4_bin, 45 utf8mb4_general_ci,
/// 224 utf8mb4_unicode_ci, 8 latin1_swedish_ci) take turns on one connection, one of them
/// changing its charsets, one preparing a statement, one resetting its session: the column
/// collations and the charset variables each one sees.
fn mixed_collations_run(port: u16) -> Vec<Look> {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let login = |collation| {
        let (c, p) =
            RawClient::login_collation(port, WEIR_USER, WEIR_PASS, Some("weirtest"), 0, collation);
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let (mut a, mut b, mut c, mut d) = (login(46), login(45), login(224), login(8));
    let q = "SELECT 'x' AS s, @@character_set_client AS cl, @@character_set_results AS re, \
             @@collation_connection AS co, CHARSET('x') AS cs, COLLATION('x') AS cc";
    let mut seen = Vec::new();
    let look = |label, client: &mut RawClient, seen: &mut Vec<_>| {
        let reply = client.query(q);
        seen.push((
            label,
            raw_column_meta(&reply),
            common::raw::text_first_row(&reply),
        ));
    };
    look("a", &mut a, &mut seen);
    look("b", &mut b, &mut seen);
    look("c", &mut c, &mut seen);
    look("d", &mut d, &mut seen);
    look("a again", &mut a, &mut seen);
    b.query("SET NAMES latin1");
    look("a after b's SET NAMES", &mut a, &mut seen);
    look("b", &mut b, &mut seen);
    c.query("SET collation_connection = utf8mb4_bin");
    look("d after c's SET", &mut d, &mut seen);
    look("c", &mut c, &mut seen);
    let mut prepare = vec![0x16];
    prepare.extend_from_slice(q.as_bytes());
    let r = a.command(&prepare, Expect::Prepare);
    assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
    look("c after a's prepare", &mut c, &mut seen);
    let mut execute = vec![0x17];
    execute.extend_from_slice(&r[0][1..5]);
    execute.push(0); // no cursor
    execute.extend_from_slice(&1u32.to_le_bytes());
    let r = a.command(&execute, Expect::ResultSets);
    let columns = raw_column_meta(&r);
    seen.push(("a executes", columns, Vec::new()));
    let r = d.command(&[0x1f], Expect::Status);
    assert_eq!(r[0][0], 0, "{r:?}");
    look("b after d's reset", &mut b, &mut seen);
    look("d after its reset", &mut d, &mut seen);
    look("a last", &mut a, &mut seen);
    seen
}

/// Clients with different handshake collations share connections: one is brought to a
/// client's collation as to the rest of its state (`SET NAMES`), rather than closed for a new
/// connection with the right handshake. Each client sees what it would on its own connection.
#[test]
fn clients_with_different_collations_share_a_connection() {
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let direct = mixed_collations_run(topo().primary.port);
    let ids: Vec<(&str, Vec<u16>)> = direct
        .iter()
        .map(|(step, cols, _)| (*step, cols.iter().map(|c| c.1).collect()))
        .collect();
    assert_eq!(ids[0], ("a", vec![46; 6]), "the server itself: {direct:?}");
    assert_eq!(ids[3], ("d", vec![8; 6]), "the server itself: {direct:?}");
    let through_weir = mixed_collations_run(w.port);
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
    assert_eq!(
        backend_connects(&w),
        1,
        "one backend connection served every collation"
    );
    // A collation weir has no name for (255, MySQL 8's utf8mb4_0900_ai_ci, which MariaDB
    // does not know) cannot be spelled out: such a client gets a connection of its own
    // collation, and its connection serves no other.
    let unknown = |port| {
        let reply = |collation| {
            let (mut c, p) = common::raw::RawClient::login_collation(
                port,
                WEIR_USER,
                WEIR_PASS,
                Some("weirtest"),
                0,
                collation,
            );
            assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
            let r = c.query("SELECT 'x' AS s, @@character_set_client, @@collation_connection");
            (raw_column_meta(&r), common::raw::text_first_row(&r))
        };
        [reply(255), reply(45), reply(255)]
    };
    assert_eq!(unknown(w.port), unknown(topo().primary.port));
    assert_eq!(
        backend_connects(&w),
        4,
        "255, 45, 255: a new connection each"
    );
}

/// Two clients with different handshake collations (45 utf8mb4_general_ci, 224
/// utf8mb4_unicode_ci) prepare the same text, which reads differently under each, and take
/// turns executing it on one connection: what each execution returns.
fn same_text_two_collations_run(port: u16) -> Vec<(&'static str, Vec<Option<String>>)> {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let login = |collation| {
        let (c, p) =
            RawClient::login_collation(port, WEIR_USER, WEIR_PASS, Some("weirtest"), 0, collation);
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let q = "SELECT COLLATION('x') AS c, CONCAT('\u{df}' = 'ss') AS eq";
    let prepare = |c: &mut RawClient| {
        let mut p = vec![0x16];
        p.extend_from_slice(q.as_bytes());
        let r = c.command(&p, Expect::Prepare);
        assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
        r[0][1..5].to_vec()
    };
    let execute = |c: &mut RawClient, id: &[u8]| {
        let mut e = vec![0x17];
        e.extend_from_slice(id);
        e.push(0);
        e.extend_from_slice(&1u32.to_le_bytes());
        common::raw::binary_first_row(&c.command(&e, Expect::ResultSets))
    };
    let (mut a, mut b) = (login(45), login(224));
    let mut seen = Vec::new();
    let pa = prepare(&mut a);
    seen.push(("a", execute(&mut a, &pa)));
    let pb = prepare(&mut b);
    seen.push(("b", execute(&mut b, &pb)));
    seen.push(("a again", execute(&mut a, &pa)));
    seen.push(("b again", execute(&mut b, &pb)));
    let pa2 = prepare(&mut a);
    seen.push(("a prepares again", execute(&mut a, &pa2)));
    seen.push(("b last", execute(&mut b, &pb)));
    seen
}

/// A statement is read in the collation of the client that prepared it, even when clients
/// with other collations prepared the same text on the same connection.
#[test]
fn the_same_text_prepared_under_two_collations_reads_as_each_client() {
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let direct = same_text_two_collations_run(topo().primary.port);
    let general = vec![Some("utf8mb4_general_ci".to_owned()), Some("0".to_owned())];
    let unicode = vec![Some("utf8mb4_unicode_ci".to_owned()), Some("1".to_owned())];
    assert_eq!(
        direct,
        vec![
            ("a", general.clone()),
            ("b", unicode.clone()),
            ("a again", general.clone()),
            ("b again", unicode.clone()),
            ("a prepares again", general),
            ("b last", unicode),
        ],
        "the server itself"
    );
    assert_eq!(
        same_text_two_collations_run(w.port),
        direct,
        "{}",
        w.stderr_tail(20)
    );
}

/// What a text query or a prepare gave: the first row, or the error code.
type RawOutcome = Result<Vec<Option<String>>, u16>;

fn raw_outcome(reply: &[Vec<u8>]) -> RawOutcome {
    match reply[0][0] {
        0xff => Err(u16::from_le_bytes([reply[0][1], reply[0][2]])),
        0 => Ok(Vec::new()),
        _ => Ok(common::raw::text_first_row(reply)),
    }
}

/// A client whose handshake had CLIENT_IGNORE_SPACE and one without take turns on one
/// connection: their sql_mode, and how `count (*)` reads, by query and by prepare.
fn ignore_space_run(port: u16) -> Vec<(&'static str, RawOutcome)> {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let login = |extra| {
        let (c, p) = RawClient::login_caps(port, WEIR_USER, WEIR_PASS, Some("weirtest"), extra);
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let mut a = login(weir_wire::cap::IGNORE_SPACE);
    let mut b = login(0);
    let spaced = "SELECT count (*) FROM (SELECT 1) t";
    let mut seen = Vec::new();
    let mut run = |label, c: &mut RawClient, q: &str| seen.push((label, raw_outcome(&c.query(q))));
    run("a sql_mode", &mut a, "SELECT @@sql_mode");
    run("b sql_mode", &mut b, "SELECT @@sql_mode");
    run("a spaced", &mut a, spaced);
    run("b spaced", &mut b, spaced);
    run("a sql_mode again", &mut a, "SELECT @@sql_mode");
    let mut prepare = vec![0x16];
    prepare.extend_from_slice(spaced.as_bytes());
    let mut prepared = Vec::new();
    for (label, c) in [("a prepares", &mut a), ("b prepares", &mut b)] {
        let r = c.command(&prepare, Expect::Prepare);
        let outcome = match r[0][0] {
            0xff => Err(u16::from_le_bytes([r[0][1], r[0][2]])),
            _ => Ok(Vec::new()),
        };
        prepared.push((label, outcome));
    }
    b.query("SET sql_mode = 'ANSI'");
    run("a after b's SET", &mut a, "SELECT @@sql_mode");
    run("b after its SET", &mut b, "SELECT @@sql_mode");
    let r = a.command(&[0x1f], Expect::Status);
    assert_eq!(r[0][0], 0, "{r:?}");
    run("a after its reset", &mut a, "SELECT @@sql_mode");
    run("b last", &mut b, "SELECT @@sql_mode");
    seen.extend(prepared);
    seen
}

/// CLIENT_IGNORE_SPACE only adds IGNORE_SPACE to the session's sql_mode: clients with and
/// without it share connections, each with its own sql_mode and parsing.
#[test]
fn clients_with_and_without_ignore_space_share_a_connection() {
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let direct = ignore_space_run(topo().primary.port);
    let mode = |r: &RawOutcome| r.clone().unwrap()[0].clone().unwrap();
    assert!(mode(&direct[0].1).contains("IGNORE_SPACE"), "{direct:?}");
    assert!(!mode(&direct[1].1).contains("IGNORE_SPACE"), "{direct:?}");
    assert_ne!(
        direct[2].1, direct[3].1,
        "the server reads `count (*)` differently"
    );
    let through_weir = ignore_space_run(w.port);
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
    assert_eq!(backend_connects(&w), 1, "one connection served both");
}

/// A client that logged in with CLIENT_MULTI_STATEMENTS and one without take turns on one
/// connection, each switching it with COM_SET_OPTION: what `SELECT 1; SELECT 2` gives each.
fn multi_statements_run(port: u16, weir: Option<&WeirProcess>) -> Vec<(&'static str, RawOutcome)> {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let login = |removed| {
        let (c, p) = RawClient::login_without(
            port,
            WEIR_USER,
            WEIR_PASS,
            Some("weirtest"),
            (0, 0),
            removed,
            45,
        );
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let mut a = login(0);
    let mut b = login(weir_wire::cap::MULTI_STATEMENTS);
    let two = "SELECT 1; SELECT 2";
    let mut seen = Vec::new();
    let held = || weir.map_or(0, |w| pool_use(w).0);
    let mut run = |label, c: &mut RawClient| seen.push((label, raw_outcome(&c.query(two))));
    run("a", &mut a);
    run("b", &mut b);
    run("a again", &mut a);
    let r = b.command(&[0x1b, 0, 0], Expect::Status);
    assert_ne!(r[0][0], 0xff, "{r:?}");
    assert_eq!(held(), 0, "COM_SET_OPTION holds no connection");
    run("b after turning them on", &mut b);
    let r = a.command(&[0x1b, 1, 0], Expect::Status);
    assert_ne!(r[0][0], 0xff, "{r:?}");
    run("a after turning them off", &mut a);
    run("b still on", &mut b);
    let r = a.command(&[0x1b, 7, 0], Expect::Status);
    seen.push(("an unknown option", raw_outcome(&r)));
    assert_eq!(held(), 0, "a refused COM_SET_OPTION holds no connection");
    seen.push(("a after them", raw_outcome(&a.query(two))));
    seen
}

/// CLIENT_MULTI_STATEMENTS can be switched with COM_SET_OPTION: clients with and without it
/// share connections (COM_SET_OPTION brings one to the client's setting), and a client's own
/// COM_SET_OPTION no longer keeps its connection.
#[test]
fn multi_statements_on_and_off_share_a_connection() {
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let direct = multi_statements_run(topo().primary.port, None);
    assert_eq!(direct[0].1, Ok(vec![Some("1".to_owned())]), "{direct:?}");
    assert!(direct[1].1.is_err(), "{direct:?}");
    let through_weir = multi_statements_run(w.port, Some(&w));
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
    assert_eq!(backend_connects(&w), 1, "one connection served both");
}

/// A client that negotiated CLIENT_SESSION_TRACK and CLIENT_LOCAL_FILES and one that did not
/// take turns on one connection: every reply each gets, packet for packet. Starts from a fresh
/// `adapted_t` (one row, 1).
fn adapted_caps_run(port: u16) -> Vec<(&'static str, Vec<Vec<u8>>)> {
    use common::raw::RawClient;
    use weir_wire::cap;
    use weir_wire::reply::Expect;
    primary(
        "DROP TABLE IF EXISTS weirtest.adapted_t; \
         CREATE TABLE weirtest.adapted_t (a INT); INSERT INTO weirtest.adapted_t VALUES (1); \
         CREATE OR REPLACE PROCEDURE weirtest.adapted_p() SELECT SUM(a) FROM weirtest.adapted_t",
    );
    let login = |extra| {
        let (c, p) = RawClient::login_without(
            port,
            WEIR_USER,
            WEIR_PASS,
            Some("weirtest"),
            (extra, 0),
            0,
            45,
        );
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let mut full = login(cap::SESSION_TRACK | cap::LOCAL_FILES);
    let mut bare = login(0);
    let mut seen = Vec::new();
    let load = "LOAD DATA LOCAL INFILE 'numbers.txt' INTO TABLE adapted_t";
    for (label, is_full, sql) in [
        ("bare USE", false, "USE mysql"),
        ("full USE", true, "USE mysql"),
        ("bare USE back", false, "USE weirtest"),
        ("full USE back", true, "USE weirtest"),
        ("bare autocommit off", false, "SET autocommit = 0"),
        ("full time_zone", true, "SET time_zone = '+01:00'"),
        ("bare autocommit on", false, "SET autocommit = 1"),
        ("bare time_zone", false, "SET time_zone = '+02:00'"),
        ("bare UPDATE", false, "UPDATE adapted_t SET a = a + 1"),
        ("bare LOAD DATA LOCAL", false, load),
    ] {
        let client = if is_full { &mut full } else { &mut bare };
        seen.push((label, client.query(sql)));
    }
    // The client with the capability sends its file.
    full.send(&[&[0x03][..], load.as_bytes()].concat());
    let (seq, request) = full.read_packet().unwrap();
    assert_eq!(request[0], 0xfb, "{request:?}");
    let mut file = bytes::BytesMut::new();
    weir_wire::packet::write_packet(&mut file, seq.wrapping_add(1), b"40\n");
    weir_wire::packet::write_packet(&mut file, seq.wrapping_add(2), b"");
    full.send_raw(&file);
    seen.push(("full LOAD DATA LOCAL", full.read_reply(Expect::ResultSets)));
    seen.push((
        "bare sum",
        bare.query("SELECT COUNT(*), SUM(a), @@time_zone FROM adapted_t"),
    ));
    seen.push(("full time_zone kept", full.query("SELECT @@time_zone")));
    // A prepared CALL. Last: a CALL keeps its connection (weir cannot tell what the
    // procedure changed).
    let prepared = bare.command(b"\x16CALL adapted_p()", Expect::Prepare);
    assert_eq!(prepared[0][0], 0, "{prepared:?}");
    let id = prepared[0][1..5].to_vec();
    let exec = [&[0x17][..], &id, &[0, 1, 0, 0, 0]].concat();
    seen.push((
        "bare prepared CALL",
        bare.command(&exec, Expect::ResultSets),
    ));
    // OKs with tracked changes amid a batch (more results follow them). Last too: the batch
    // keeps its connection.
    seen.push((
        "bare batch",
        bare.query("SET time_zone = '+03:00'; SELECT @@time_zone; USE mysql; SELECT 1"),
    ));
    seen
}

/// CLIENT_SESSION_TRACK and CLIENT_LOCAL_FILES do not split the pool: connections are opened with them, and a client without them gets
/// the very bytes the server would have sent it (no state changes in its OKs; LOAD DATA
/// LOCAL refused with the server's error, nothing loaded).
#[test]
fn clients_with_and_without_session_tracking_and_local_files_share_a_connection() {
    let w = start_with_max(
        1,
        "auto_increment_delay_multiplex = 0\nenable_load_data_local_infile = true",
    );
    let direct = adapted_caps_run(topo().primary.port);
    let tracked = &direct[1].1[0];
    assert!(
        tracked.len() > 7,
        "the server tracks the schema: {tracked:?}"
    );
    assert_eq!(direct[0].1[0], [0, 0, 0, 2, 0, 0, 0], "{direct:?}");
    let refused = &direct[9].1[0];
    assert_eq!(common::raw::err_code(refused), Some(4166), "{direct:?}");
    let through_weir = adapted_caps_run(w.port);
    for (d, t) in direct.iter().zip(&through_weir) {
        assert_eq!(t, d, "{}", w.stderr_tail(20));
    }
    assert_eq!(through_weir.len(), direct.len());
    assert_eq!(backend_connects(&w), 1, "one connection served both");
}

/// The OK that ends rows for a CLIENT_DEPRECATE_EOF client, which weir writes from the EOF of
/// its connection: byte for byte the server's, whether the client tracks session state or not
/// (a procedure that changes the time zone, then returns rows).
#[test]
fn the_ok_ending_rows_after_a_state_change_is_the_servers() {
    use common::raw::RawClient;
    use weir_wire::cap;
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    primary(
        "DELIMITER //\nCREATE OR REPLACE PROCEDURE weirtest.tz_rows() \
         BEGIN SET time_zone = '+04:00'; SELECT 1 AS one; END //\nDELIMITER ;",
    );
    let run = |port, tracks| {
        let (mut c, p) = RawClient::login_caps(
            port,
            WEIR_USER,
            WEIR_PASS,
            Some("weirtest"),
            cap::DEPRECATE_EOF | tracks,
        );
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c.send(b"\x03CALL tz_rows()");
        // Definitions, rows, then OKs (0xFE after rows); the last without MORE_RESULTS. The
        // rows here start with neither 0x00 nor 0xFE.
        let mut packets = Vec::new();
        loop {
            let (_, p) = c.read_packet().unwrap();
            let ok =
                (p[0] == 0 || p[0] == 0xfe).then(|| weir_wire::msg::OkInfo::parse(&p).unwrap());
            packets.push(p);
            if ok.is_some_and(|ok| ok.status & weir_wire::status::MORE_RESULTS_EXISTS == 0) {
                return packets;
            }
        }
    };
    let direct = run(topo().primary.port, 0);
    let through_weir = run(w.port, 0);
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
    // A client that tracks state gets the change in the reply's last OK rather than in the
    // one ending the rows (weir's connections speak EOFs, which cannot carry it); the OK
    // ending the rows is a well-formed one without the flag.
    let direct = run(topo().primary.port, cap::SESSION_TRACK);
    let through_weir = run(w.port, cap::SESSION_TRACK);
    assert_eq!(direct.len(), 5, "{direct:?}");
    assert_eq!(through_weir.len(), 5, "{through_weir:?}");
    assert_eq!(through_weir[..3], direct[..3]);
    let changed = weir_wire::status::SESSION_STATE_CHANGED;
    let rows_end = weir_wire::msg::OkInfo::parse(&direct[3]).unwrap();
    assert_ne!(rows_end.status & changed, 0, "{direct:?}");
    let rows_end = weir_wire::msg::OkInfo::parse(&through_weir[3]).unwrap();
    assert_eq!(rows_end.status & changed, 0, "{through_weir:?}");
    let last = weir_wire::msg::OkInfo::parse(&through_weir[4]).unwrap();
    assert_ne!(last.status & changed, 0, "{through_weir:?}");
    assert_eq!(through_weir[4][7..], direct[3][7..], "the same change");
}

/// A batch with LOAD DATA LOCAL from a client without CLIENT_LOCAL_FILES: the client gets the
/// server's refusal and nothing else, nothing of the batch runs (the connection would take
/// the statement and run it, and what follows, with no file), and its session goes on.
#[test]
fn a_refused_load_data_local_in_a_batch_leaves_the_session_usable() {
    use common::raw::RawClient;
    use weir_wire::cap;
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    primary(
        "CREATE TABLE IF NOT EXISTS weirtest.adapted_batch (a INT); \
         DELETE FROM weirtest.adapted_batch",
    );
    let (mut full, _) = RawClient::login_caps(
        w.port,
        WEIR_USER,
        WEIR_PASS,
        Some("weirtest"),
        cap::LOCAL_FILES,
    );
    assert_eq!(
        full.query("SELECT 1")[0],
        [1],
        "the connection has LOCAL_FILES"
    );
    let (mut bare, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    let reply = bare.query(
        "LOAD DATA LOCAL INFILE 'a.txt' INTO TABLE adapted_batch; \
         LOAD DATA LOCAL INFILE 'b.txt' INTO TABLE adapted_batch; SELECT 1",
    );
    assert_eq!(reply.len(), 1, "{reply:?}");
    assert_eq!(common::raw::err_code(&reply[0]), Some(4166));
    let after = bare.query("SELECT 2");
    assert_eq!(common::raw::text_first_row(&after), [Some("2".to_owned())]);
    // Directly the server refuses the LOAD when it comes to it and runs nothing after it;
    // through weir nothing runs, before it either.
    bare.query("SET autocommit = 0");
    let reply = bare.query(
        "INSERT INTO adapted_batch VALUES (1); \
         load data low_priority local infile 'c.txt' into table adapted_batch; \
         INSERT INTO adapted_batch VALUES (2); COMMIT",
    );
    assert_eq!(reply.len(), 1, "{reply:?}");
    assert_eq!(common::raw::err_code(&reply[0]), Some(4166));
    let status = bare.query("SELECT @@in_transaction");
    assert_eq!(common::raw::text_first_row(&status), [Some("0".to_owned())]);
    bare.query("SET autocommit = 1");
    let rows = topo()
        .primary
        .query_value("SELECT COUNT(*) FROM weirtest.adapted_batch")
        .unwrap();
    assert_eq!(rows, "0", "nothing of the batch ran");
    assert_eq!(backend_connects(&w), 1, "{}", w.stderr_tail(20));
}

/// Clients whose protocol options must not share a connection (CLIENT_FOUND_ROWS changes
/// affected-row counts) take turns on a server at max_connections: each waits for a
/// connection of its own kind to come back rather than close the other kind's idle one, so
/// the two kinds keep one connection each instead of reconnecting at every statement.
#[test]
fn clients_of_two_keys_on_a_full_server_keep_their_connections() {
    use common::raw::RawClient;
    let w = start_with_max(2, "auto_increment_delay_multiplex = 0");
    let before = backend_connects(&w);
    let clients = [0, weir_wire::cap::FOUND_ROWS, 0, weir_wire::cap::FOUND_ROWS].map(|extra| {
        let (c, p) = RawClient::login_caps(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"), extra);
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    });
    select_one_at_once(clients, 300);
    let connects = backend_connects(&w) - before;
    // Two would do (three when the first statements of one kind open two at once); a loaded
    // machine may make a statement wait past the affinity bound now and then. Without the
    // wait, or with idle connections closed under checkouts about to take them, hundreds.
    assert!(
        connects <= 6,
        "{connects} backend connects for 1,200 statements"
    );
}

/// A weir with `extra_vars` whose users include `user` (password `cappedpass`), an account
/// of the primary's limited to 2 connections (MAX_USER_CONNECTIONS).
fn with_capped_user(user: &str, extra_vars: &str) -> WeirProcess {
    let w = start(extra_vars);
    primary(&format!(
        "CREATE USER IF NOT EXISTS '{user}'@'%' IDENTIFIED BY 'cappedpass' \
         WITH MAX_USER_CONNECTIONS 2; GRANT SELECT ON weirtest.* TO '{user}'@'%'"
    ));
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_users (username, password, default_hostgroup) \
             VALUES ('{user}', 'cappedpass', 0); LOAD MYSQL USERS TO RUNTIME"
        ),
    );
    w
}

/// A server that refuses connections for lack of room (here the backend account's
/// MAX_USER_CONNECTIONS, as when other applications fill a server's max_connections): weir's
/// statements wait for one of its connections to come back instead of failing, and the
/// server is not shunned for it.
#[test]
fn statements_wait_when_the_server_has_no_room_for_another_connection() {
    use common::raw::{err_code, RawClient};
    let w = with_capped_user("capped", "auto_increment_delay_multiplex = 0");
    // Directly, a third connection is refused.
    let port = topo().primary.port;
    let direct: Vec<_> = (0..3)
        .map(|_| RawClient::login(port, "capped", "cappedpass", None))
        .collect();
    assert_eq!(err_code(&direct[2].1), Some(1226), "{:?}", direct[2].1);
    drop(direct);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let started = Instant::now();
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let port = w.port;
            std::thread::spawn(move || {
                let (mut c, p) = RawClient::login(port, "capped", "cappedpass", None);
                assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
                (0..2)
                    .map(|_| c.query("SELECT SLEEP(0.2), 7"))
                    .map(|r| {
                        err_code(&r[0]).map_or_else(|| Ok(common::raw::text_first_row(&r)), Err)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for t in threads {
        for r in t.join().unwrap() {
            assert_eq!(r, Ok(vec![Some("0".to_owned()), Some("7".to_owned())]));
        }
    }
    // Twelve statements of 0.2 s two at a time.
    assert!(started.elapsed() >= std::time::Duration::from_millis(1100));
    // Short statements from as many clients: they take the two connections in turns,
    // without asking the full server for another at every statement.
    let conn_err = || -> u64 {
        table(
            &w,
            "SELECT ConnERR FROM stats_mysql_connection_pool WHERE hostgroup = 0",
        )[0]["ConnERR"]
            .parse()
            .unwrap()
    };
    // Logged in first: only the statements count.
    let clients: Vec<_> = (0..6)
        .map(|_| RawClient::login(w.port, "capped", "cappedpass", None).0)
        .collect();
    let before = conn_err();
    let started = Instant::now();
    select_one_at_once(clients, 1000);
    let refused = conn_err() - before;
    let per_100ms = started.elapsed().as_millis() as u64 / 100 + 1;
    // A few at the start, before the first refusal is known.
    assert!(
        refused <= 8 + 2 * per_100ms,
        "{refused} refused connects in {:?}",
        started.elapsed()
    );
    let rows = table(
        &w,
        "SELECT status FROM stats_mysql_connection_pool WHERE hostgroup = 0",
    );
    assert_eq!(rows[0]["status"], "ONLINE", "{}", w.stderr_tail(20));
}

/// A backend user at its own connection limit (MAX_USER_CONNECTIONS) holds up no other user:
/// their connects are not paused with its own. And weir's idle connections of that user are
/// what frees room for one of another key (a client with CLIENT_FOUND_ROWS) instead of that
/// client waiting for its deadline.
#[test]
fn a_user_at_its_connection_limit_holds_up_no_other() {
    use common::raw::{err_code, RawClient};
    let w = with_capped_user(
        "capped2",
        "auto_increment_delay_multiplex = 0\nconnect_timeout_server_max = 4000",
    );
    let login = |extra| {
        let (c, p) = RawClient::login_caps(w.port, "capped2", "cappedpass", None, extra);
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    // Both of capped2's connections busy for 2.5 s, and 30 more of its statements waiting.
    let busy: Vec<_> = (0..32)
        .map(|_| {
            let mut c = login(0);
            std::thread::spawn(move || {
                let r = c.query("SELECT SLEEP(2.5)");
                err_code(&r[0])
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(500));
    // Another user's first statement needs a connection of its own: at once.
    let (mut other, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0);
    let started = Instant::now();
    assert_eq!(other.query("SELECT 1")[0], [1]);
    let took = started.elapsed();
    for t in busy {
        // Some may reach their deadline, in turns of 2.5 s: what matters here is the other user.
        let _ = t.join().unwrap();
    }
    // Under a millisecond here; 1.5 to 3.5 s when capped2's pause held every user up.
    assert!(
        took < std::time::Duration::from_millis(1000),
        "the other user waited {took:?}"
    );
    // capped2's two idle connections lack CLIENT_FOUND_ROWS; a client that asks for it gets
    // one of its own in their place.
    select_one_at_once([login(0), login(0)], 20);
    let mut found_rows = login(weir_wire::cap::FOUND_ROWS);
    let started = Instant::now();
    let r = found_rows.query("SELECT 1");
    assert_eq!(r[0], [1], "{r:?}\n{}", w.stderr_tail(20));
    assert!(
        started.elapsed() < std::time::Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );
}

/// What an UPDATE matching two rows and changing one reports to a client with
/// CLIENT_FOUND_ROWS and to one without, taking turns on one connection.
fn found_rows_run(port: u16) -> Vec<u64> {
    use common::raw::RawClient;
    primary(
        "CREATE OR REPLACE TABLE weirtest.found_rows_t (a INT); \
         INSERT INTO weirtest.found_rows_t VALUES (1), (2)",
    );
    let login = |extra| {
        let (c, p) = RawClient::login_caps(port, WEIR_USER, WEIR_PASS, Some("weirtest"), extra);
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let mut found = login(weir_wire::cap::FOUND_ROWS);
    let mut changed = login(0);
    let affected = |c: &mut RawClient, v: u32| {
        let r = c.query(&format!(
            "UPDATE found_rows_t SET a = {v} WHERE a IN (1, {v})"
        ));
        assert_eq!(r[0][0], 0, "{r:?}");
        weir_wire::msg::OkInfo::parse(&r[0]).unwrap().affected_rows
    };
    vec![affected(&mut found, 2), affected(&mut changed, 3)]
}

/// mysql-client_found_rows: by default a client's CLIENT_FOUND_ROWS is honoured (as
/// directly); set to false, every client gets changed-row counts and they share connections.
#[test]
fn client_found_rows_false_shares_connections_and_counts_changed_rows() {
    // Rows 1, 2: `SET a = 2 WHERE a IN (1, 2)` matches 2, changes 1; then rows 2, 2:
    // `SET a = 3 WHERE a IN (1, 3)` matches none.
    let direct = found_rows_run(topo().primary.port);
    assert_eq!(direct, [2, 0]);
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    assert_eq!(found_rows_run(w.port), direct);
    let w = start_with_max(
        1,
        "auto_increment_delay_multiplex = 0\nclient_found_rows = false",
    );
    assert_eq!(found_rows_run(w.port), [1, 0], "{}", w.stderr_tail(20));
    assert_eq!(backend_connects(&w), 1, "one connection served both");
}

/// mysql-client_multi_statements = false: weir does not offer CLIENT_MULTI_STATEMENTS, a
/// client that asks for it anyway gets it off, and COM_SET_OPTION cannot turn it on.
#[test]
fn client_multi_statements_false_keeps_them_off() {
    use common::raw::{err_code, RawClient};
    use weir_wire::cap;
    use weir_wire::reply::Expect;
    let w = start("client_multi_statements = false");
    let (mut c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
    assert_eq!(c.greeting.capabilities & cap::MULTI_STATEMENTS, 0);
    // The raw client asked for them: the server reads the text as one statement.
    assert_eq!(err_code(&c.query("SELECT 1; SELECT 2")[0]), Some(1064));
    let on = c.command(&[0x1b, 0, 0], Expect::Status);
    assert_eq!(err_code(&on[0]), Some(1235), "{on:?}");
    assert_eq!(err_code(&c.query("SELECT 1; SELECT 2")[0]), Some(1064));
    let off = c.command(&[0x1b, 1, 0], Expect::Status);
    assert_eq!(off[0][0], 0xfe, "{off:?}");
    let three = common::raw::text_first_row(&c.query("SELECT 3"));
    assert_eq!(three, [Some("3".to_owned())], "the session goes on");
    let w = start("");
    let (c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    assert_ne!(
        c.greeting.capabilities & cap::MULTI_STATEMENTS,
        0,
        "offered by default"
    );
}

/// mysql-connection_max_age_ms: a connection older than that is closed instead of reused.
#[test]
fn connections_older_than_the_max_age_are_not_reused() {
    use common::raw::RawClient;
    let run = |w: &WeirProcess| {
        let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        let before = backend_connects(w);
        for _ in 0..3 {
            let r = c.query("INSERT INTO weirtest.max_age_t VALUES (1)");
            assert_eq!(r[0][0], 0, "{r:?}");
            std::thread::sleep(std::time::Duration::from_millis(600));
        }
        backend_connects(w) - before
    };
    primary("CREATE TABLE IF NOT EXISTS weirtest.max_age_t (a INT)");
    let young = start("auto_increment_delay_multiplex = 0");
    let old = start("auto_increment_delay_multiplex = 0\nconnection_max_age_ms = 300");
    let (young, old) = (run(&young), run(&old));
    // The login may have opened the first one (its schema check): the statements after a
    // pause each open one when connections age out, none otherwise.
    assert!(young <= 1, "{young}");
    assert_eq!(old - young, 2, "{old} {young}");
}

/// mysql-init_connect runs on every new backend connection (several statements at once);
/// when it fails, clients get the server's error, named as coming from it, and the server is
/// not shunned.
#[test]
fn init_connect_runs_on_new_connections() {
    use common::raw::{err_code, RawClient};
    let w = start(
        "init_connect = \"SET SESSION group_concat_max_len = 4321; \
         SET SESSION div_precision_increment = 7\"",
    );
    let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    let r = c.query(
        "SELECT @@session.group_concat_max_len, @@session.div_precision_increment, \
         @@session.autocommit",
    );
    assert_eq!(
        common::raw::text_first_row(&r),
        [Some("4321".into()), Some("7".into()), Some("1".into())],
        "{r:?}"
    );
    let w = start("init_connect = \"SET SESSION no_such_variable = 1\"");
    let (mut c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0);
    let r = c.query("INSERT INTO weirtest.nothing VALUES (1)");
    assert_eq!(err_code(&r[0]), Some(1193), "{r:?}");
    let msg = String::from_utf8_lossy(&r[0]);
    assert!(msg.contains("mysql-init_connect failed"), "{msg}");
    let rows = table(
        &w,
        "SELECT status FROM stats_mysql_connection_pool WHERE hostgroup = 0",
    );
    assert_eq!(rows[0]["status"], "ONLINE");
    // Statements that do not end are bounded like the connect (connect_timeout_server). Not
    // SLEEP nor a lock wait: the server ends those when their connection closes; a busy
    // statement goes on (about 8 s for this one here) unless killed.
    let w = start(
        "init_connect = \"DO BENCHMARK(20000000, MD5('init'))\"\nconnect_timeout_server = 500",
    );
    let (mut c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0);
    let started = Instant::now();
    let r = c.query("SELECT 1");
    let msg = String::from_utf8_lossy(&r[0]).into_owned();
    assert_eq!(r[0][0], 0xff, "{msg}");
    assert_eq!(err_code(&r[0]), Some(9001), "{msg}");
    assert!(
        msg.contains("mysql-init_connect failed: its statements did not end within 500 ms"),
        "{msg}"
    );
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // And they do not go on running on the server.
    let running = || {
        topo()
            .primary
            .query_value(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                 WHERE INFO LIKE 'DO BENCHMARK(20000000%'",
            )
            .unwrap()
    };
    let t = Instant::now();
    while running() != "0" {
        assert!(
            t.elapsed() < std::time::Duration::from_secs(3),
            "still running"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// mysql-autocommit_false_not_reusable: a connection left with autocommit off is closed
/// rather than pooled.
#[test]
fn autocommit_false_not_reusable_closes_such_connections() {
    use common::raw::RawClient;
    let run = |w: &WeirProcess| {
        let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        let before = backend_connects(w);
        for sql in [
            "SET autocommit = 0",
            "SELECT 1",
            "COMMIT",
            "SELECT 2",
            "COMMIT",
        ] {
            let r = c.query(sql);
            assert_ne!(r[0][0], 0xff, "{sql}: {r:?}");
        }
        backend_connects(w) - before
    };
    let pooled = run(&start("auto_increment_delay_multiplex = 0"));
    let closed = run(&start(
        "auto_increment_delay_multiplex = 0\nautocommit_false_not_reusable = true",
    ));
    assert!(pooled <= 1, "{pooled}");
    assert!(closed > pooled, "{closed} vs {pooled}");
}

/// After a failed statement whose connection went back to the pool, `SHOW WARNINGS` /
/// `SHOW ERRORS` show its error, as the server does, and `SHOW COUNT(*) ...` count it.
#[test]
fn show_warnings_after_an_error_shows_it() {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let run = |port| {
        let (mut c, _) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        let mut seen = Vec::new();
        for sql in [
            "SELECT * FROM no_such_table_for_warnings",
            "SHOW WARNINGS",
            "SELECT * FROM no_such_table_for_warnings",
            "SHOW ERRORS",
            "SELECT * FROM no_such_table_for_warnings",
            "SHOW COUNT(*) WARNINGS",
            // A statement that reads a table clears them (one that reads none would not, on
            // the server).
            "SELECT COUNT(*) FROM warnings_t",
            "SHOW WARNINGS",
        ] {
            let r = c.query(sql);
            // An empty result set: column count, definitions, EOF, EOF.
            let empty = r[0][0] != 0xff && r[0][0] != 0 && r.len() == 2 + usize::from(r[0][0]) + 1;
            seen.push(if empty { Ok(vec![]) } else { raw_outcome(&r) });
        }
        // Other commands end the failed query's diagnostics too: a reset, an execution.
        // Packets of the reply: 6 for no row (count, 3 definitions, 2 EOFs), 7 for one.
        let show = |c: &mut RawClient| c.query("SHOW WARNINGS").len();
        assert_eq!(
            common::raw::err_code(&c.query("SELECT * FROM nowhere_t")[0]),
            Some(1146)
        );
        assert_eq!(c.command(&[0x1f], Expect::Status)[0][0], 0, "reset");
        seen.push(Ok(vec![Some(format!("{:?}", show(&mut c)))]));
        let prepared = c.command(b"\x16SELECT COUNT(*) FROM warnings_t", Expect::Prepare);
        assert_eq!(prepared[0][0], 0, "{prepared:?}");
        let execute = [&[0x17][..], &prepared[0][1..5], &[0, 1, 0, 0, 0]].concat();
        assert_eq!(
            common::raw::err_code(&c.query("SELECT * FROM nowhere_t")[0]),
            Some(1146)
        );
        assert_ne!(c.command(&execute, Expect::ResultSets)[0][0], 0xff);
        seen.push(Ok(vec![Some(format!("{:?}", show(&mut c)))]));
        seen
    };
    primary("CREATE TABLE IF NOT EXISTS weirtest.warnings_t (a INT)");
    let direct = run(topo().primary.port);
    assert_eq!(
        direct[1],
        Ok(vec![
            Some("Error".to_owned()),
            Some("1146".to_owned()),
            Some("Table 'weirtest.no_such_table_for_warnings' doesn't exist".to_owned())
        ])
    );
    let w = start("auto_increment_delay_multiplex = 0");
    assert_eq!(run(w.port), direct);
}

/// A statement that names no table (`SELECT 1`, a SET, BEGIN, SHOW WARNINGS itself) leaves
/// the previous statement's warnings or error in place on the server; one that reads a table
/// or raises its own replaces them. Through weir the same, packet for packet: warnings stay
/// where they are (the connection stays with the client), an error weir shows itself, even
/// once another client ran on the connection; and a connection another client left warnings
/// on never shows them, even to a statement that keeps it (a transaction, a lock).
#[test]
fn statements_naming_no_table_leave_the_diagnostics_as_the_server_does() {
    use common::raw::RawClient;
    let warned: &[&[&str]] = &[
        &["SELECT 1/0", "SELECT 1", "SHOW WARNINGS"],
        &[
            "SELECT CAST('1x' AS SIGNED)",
            "SET @dg = 1",
            "SELECT @@warning_count",
            "SHOW WARNINGS",
            "SHOW COUNT(*) WARNINGS",
            "SHOW WARNINGS",
        ],
        &["SELECT 1/0", "SET NAMES utf8mb4", "DO 1", "SHOW WARNINGS"],
        &["SELECT 1/0", "BEGIN", "SELECT 2", "COMMIT", "SHOW WARNINGS"],
        &["SELECT 1/0", "SELECT 'a' + 1", "SHOW WARNINGS"],
        &["SELECT 1/0", "SELECT COUNT(*) FROM dg_t", "SHOW WARNINGS"],
        &[
            "SELECT 1/0",
            "SELECT 1 FROM dg_t LIMIT 0",
            "SELECT 2",
            "SHOW WARNINGS",
        ],
    ];
    let failed: &[&[&str]] = &[
        &["SELECT * FROM dg_nowhere", "SELECT 1", "SHOW ERRORS"],
        &[
            "SELECT * FROM dg_nowhere",
            "SET @dg = 2",
            "SELECT @@error_count",
            "SHOW COUNT(*) ERRORS",
            "SHOW WARNINGS",
        ],
        &[
            "SELECT * FROM dg_nowhere",
            "SELECT COUNT(*) FROM dg_t",
            "SHOW ERRORS",
        ],
    ];
    // The connection a statement naming no table gets (and keeps) was another client's,
    // whose warning is on it: (whether the other client runs it, statement).
    let taken_over: &[&[(bool, &str)]] = &[
        &[
            (false, "SELECT * FROM dg_nowhere"),
            (true, "SELECT 1/0 AS theirs"),
            (false, "BEGIN"),
            (false, "SHOW WARNINGS"),
            (false, "SHOW COUNT(*) ERRORS"),
            (false, "SELECT @@warning_count"),
            (false, "COMMIT"),
            (false, "SHOW ERRORS"),
        ],
        &[
            (true, "SELECT 1/0 AS theirs"),
            (false, "SELECT GET_LOCK('dg_lock', 0)"),
            (false, "SHOW WARNINGS"),
            (false, "SHOW COUNT(*) WARNINGS"),
            (false, "GET DIAGNOSTICS @dg_n = NUMBER"),
            (false, "SELECT @dg_n"),
            (false, "SELECT RELEASE_LOCK('dg_lock')"),
        ],
        // (GET DIAGNOSTICS last: its user variable keeps the connection with the client.)
        &[
            (true, "SELECT 1/0 AS theirs"),
            (false, "SHOW WARNINGS LIMIT 5"),
            (true, "SELECT 1/0 AS theirs"),
            (false, "GET DIAGNOSTICS @dg_n = NUMBER"),
            (false, "SELECT @dg_n"),
        ],
        // Forms weir does not answer itself run on a connection cleared first.
        &[
            (true, "SELECT 1/0 AS theirs"),
            (false, "SHOW WARNINGS LIMIT 0, 5"),
            (true, "SELECT * FROM dg_theirs"),
            (false, "SHOW ERRORS LIMIT 1"),
            (true, "SELECT 1/0 AS theirs"),
            (false, "SELECT @@warning_count, @@error_count"),
            (true, "SELECT 1/0 AS theirs"),
            (false, "SELECT @@local.warning_count + 0"),
        ],
        // What weir answers itself ends the previous statement as the server's answer does.
        &[
            (false, "UPDATE dg_t SET a = a + 1"),
            (false, "SHOW WARNINGS"),
            (true, "UPDATE dg_t SET a = a"),
            (false, "SELECT ROW_COUNT()"),
        ],
        // What reads them without naming them, on a connection another client left its
        // warning on (EXECUTE IMMEDIATE and CALL keep their connection: last).
        &[
            (true, "SELECT 1/0 AS theirs"),
            (false, "EXECUTE IMMEDIATE 'SHOW WARNINGS'"),
        ],
        &[
            (true, "SELECT 1/0 AS theirs"),
            (false, "CALL dg_show_warnings()"),
        ],
        &[
            (true, "SELECT 1/0 AS theirs"),
            (false, "SELECT dg_condition_count()"),
            (true, "SELECT * FROM dg_theirs"),
            (false, "SELECT @@`error_count`, @@session . warning_count"),
        ],
        // ROW_COUNT() weir knows is answered by weir.
        &[
            (false, "BEGIN"),
            (false, "INSERT INTO dg_ins VALUES (3)"),
            (false, "SHOW WARNINGS"),
            (false, "SELECT ROW_COUNT()"),
            (false, "COMMIT"),
            (false, "UPDATE dg_t SET a = a"),
            (false, "SELECT ROW_COUNT(), @@warning_count"),
        ],
        // GET DIAGNOSTICS assigns user variables: another client never reads them.
        &[
            (true, "BEGIN"),
            (true, "SELECT * FROM dg_theirs"),
            (true, "GET DIAGNOSTICS CONDITION 1 @dg_m = MESSAGE_TEXT"),
            (true, "COMMIT"),
            (true, "QUIT"),
            (false, "SELECT @dg_m"),
        ],
    ];
    let run = |port: u16| {
        let mut seen = Vec::new();
        let login = || {
            let (c, p) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
            assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
            c
        };
        for statements in warned {
            let mut c = login();
            for sql in *statements {
                seen.push((sql.to_string(), c.query(sql)));
            }
        }
        // Another client runs between the statements, on the one connection weir has.
        let mut other = login();
        for statements in failed {
            let mut c = login();
            for sql in *statements {
                other.query("SELECT 1/0 AS theirs");
                seen.push((sql.to_string(), c.query(sql)));
            }
        }
        for steps in taken_over {
            let mut c = login();
            let mut other = login();
            for &(by_other, sql) in *steps {
                if by_other && sql == "QUIT" {
                    other = login();
                } else if by_other {
                    other.query(sql);
                } else {
                    seen.push((sql.to_string(), c.query(sql)));
                }
            }
        }
        seen
    };
    primary("CREATE TABLE IF NOT EXISTS weirtest.dg_t (a INT)");
    primary("CREATE TABLE IF NOT EXISTS weirtest.dg_ins (a INT)");
    primary("CREATE OR REPLACE PROCEDURE weirtest.dg_show_warnings() SHOW WARNINGS");
    // (The mariadb CLI runs this: DELIMITER on its own line.)
    primary(
        "DELIMITER //\nCREATE OR REPLACE FUNCTION weirtest.dg_condition_count() RETURNS INT \
         NO SQL BEGIN DECLARE n INT; GET DIAGNOSTICS n = NUMBER; RETURN n; END//\nDELIMITER ;",
    );
    primary("DELETE FROM weirtest.dg_t");
    primary("INSERT INTO weirtest.dg_t VALUES (1), (2)");
    let direct = run(topo().primary.port);
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let through_weir = run(w.port);
    for ((sql, d), (_, t)) in direct.iter().zip(&through_weir) {
        assert_eq!(t, d, "{sql}");
    }
}

/// A prepared statement reading the diagnostics (`SELECT @@warning_count`, `SHOW WARNINGS`)
/// never reads another client's, on a connection another client left warnings on.
#[test]
fn prepared_statements_read_no_other_clients_diagnostics() {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let run = |port: u16| {
        let login = || RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest")).0;
        let mut seen = Vec::new();
        for text in [
            "SELECT @@warning_count",
            "SHOW WARNINGS",
            "SHOW COUNT(*) WARNINGS",
        ] {
            let mut c = login();
            let mut other = login();
            let prepared = c.command(&[b"\x16", text.as_bytes()].concat(), Expect::Prepare);
            assert_eq!(prepared[0][0], 0, "{prepared:?}");
            let execute = [&[0x17][..], &prepared[0][1..5], &[0, 1, 0, 0, 0]].concat();
            other.query("SELECT 1/0 AS theirs");
            seen.push((text, c.command(&execute, Expect::ResultSets)));
            // In a transaction, which keeps the connection it gets.
            other.query("SELECT 1/0 AS theirs");
            c.query("BEGIN");
            seen.push((text, c.command(&execute, Expect::ResultSets)));
            c.query("COMMIT");
        }
        seen
    };
    let direct = run(topo().primary.port);
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let through_weir = run(w.port);
    for ((text, d), (_, t)) in direct.iter().zip(&through_weir) {
        assert_eq!(t, d, "{text}");
    }
}

/// A failed query's error kept across a `SET NAMES` that changes character_set_results: the
/// server shows it converted; weir, which has the server's bytes in the old character set,
/// shows none rather than text in the wrong one. An ASCII message reads the same in both: it
/// is shown.
#[test]
fn a_kept_error_is_not_shown_in_another_character_set() {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let w = start_with_max(1, "auto_increment_delay_multiplex = 0");
    let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    let (mut other, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    let failed = c.command(
        "\x03SELECT * FROM dg_nowhere_\u{e9}".as_bytes(),
        Expect::ResultSets,
    );
    assert_eq!(common::raw::err_code(&failed[0]), Some(1146));
    c.query("SET NAMES latin1");
    other.query("SELECT 1");
    // No row: column count, 3 definitions, 2 EOFs.
    assert_eq!(c.query("SHOW WARNINGS").len(), 6);
    let failed = c.query("SELECT * FROM dg_nowhere_ascii");
    assert_eq!(common::raw::err_code(&failed[0]), Some(1146));
    c.query("SET NAMES utf8mb4");
    other.query("SELECT 1");
    let shown = c.query("SHOW WARNINGS");
    assert_eq!(shown.len(), 7, "{shown:?}");
    assert_eq!(
        common::raw::text_first_row(&shown)[1].as_deref(),
        Some("1146")
    );
}

/// Each client runs `SELECT 1` `times` times, all at once (a thread each).
fn select_one_at_once(clients: impl IntoIterator<Item = common::raw::RawClient>, times: usize) {
    let threads: Vec<_> = clients
        .into_iter()
        .map(|mut c| {
            std::thread::spawn(move || {
                for _ in 0..times {
                    let r = c.query("SELECT 1");
                    assert_eq!(r[0], [1], "{r:?}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

/// A `USE` weir can read only once its comments are skipped moves the client, not the
/// connection's next client; one it cannot read keeps the connection. A client that drops
/// its own schema has none afterwards, as on the server, and the connection it ran on does
/// not pass the dropped schema's absence on to the next client in that schema.
#[tokio::test]
async fn commented_use_and_a_dropped_schema_follow_the_client() {
    let w = start_with_max(1, "");
    let mut a = connect(&w, Some("weirtest")).await;
    let mut b = connect(&w, Some("weirtest")).await;
    async fn db(c: &mut Conn) -> Option<String> {
        c.query_first::<Option<String>, _>("SELECT DATABASE()")
            .await
            .unwrap()
            .flatten()
    }
    for use_stmt in [
        "USE information_schema /* c */",
        "/* c */ USE information_schema",
        "USE information_schema -- c",
        "USE /* c */ information_schema",
        "/*!USE information_schema*/",
        "USE information_schema\n# c",
    ] {
        a.query_drop("USE weirtest").await.unwrap();
        a.query_drop(use_stmt).await.unwrap();
        assert_eq!(db(&mut b).await.as_deref(), Some("weirtest"), "{use_stmt}");
        assert_eq!(
            db(&mut a).await.as_deref(),
            Some("information_schema"),
            "{use_stmt}"
        );
    }
    // The client that drops the schema it is in has none left, and goes on.
    primary("CREATE DATABASE IF NOT EXISTS mx_dropme");
    let mut d = connect(&w, Some("mx_dropme")).await;
    d.query_drop("/* fixture */ DROP DATABASE mx_dropme")
        .await
        .unwrap();
    assert_eq!(db(&mut b).await.as_deref(), Some("weirtest"));
    // No schema: NULL, or information_schema on a connection another client had a schema on
    // (docs/multiplexing.md), never the dropped one.
    let after = db(&mut d).await;
    assert!(
        matches!(after.as_deref(), None | Some("information_schema")),
        "{after:?}"
    );
    assert_eq!(d.query_first::<i64, _>("SELECT 1").await.unwrap(), Some(1));
    // Dropped and made again (a test fixture's pattern): the next client in it is in it.
    d.query_drop("CREATE DATABASE mx_dropme").await.unwrap();
    let mut e = connect(&w, Some("mx_dropme")).await;
    assert_eq!(db(&mut e).await.as_deref(), Some("mx_dropme"));
    e.query_drop("CREATE TABLE mx_t (a INT)").await.unwrap();
    e.query_drop("DROP DATABASE mx_dropme").await.unwrap();
}

/// A LOAD that lowers max_connections applies to open connections: idle ones beyond the new
/// limit close at once, those in use as they come back.
#[tokio::test]
async fn lowering_max_connections_closes_connections_beyond_it() {
    let w = start_with_max(4, "");
    let open = |w: &WeirProcess| {
        let rows = table(
            w,
            "SELECT ConnUsed + ConnFree AS n FROM stats_mysql_connection_pool WHERE hostgroup = 0",
        );
        rows[0]["n"].parse::<u64>().unwrap()
    };
    let mut clients = Vec::new();
    for _ in 0..4 {
        clients.push(connect(&w, Some("weirtest")).await);
    }
    // Four statements at once, twice: four connections, idle afterwards.
    let sleep_all = |clients: Vec<Conn>, secs: f64| {
        let tasks: Vec<_> = clients
            .into_iter()
            .map(|mut c| {
                tokio::spawn(async move {
                    c.query_drop(format!("SELECT SLEEP({secs})")).await.unwrap();
                    c
                })
            })
            .collect();
        async move {
            let mut back = Vec::new();
            for t in tasks {
                back.push(t.await.unwrap());
            }
            back
        }
    };
    let clients = sleep_all(clients, 0.3).await;
    assert_eq!(open(&w), 4);
    let lower = |max: u32| {
        admin(
            &w,
            &format!(
                "UPDATE mysql_servers SET max_connections = {max} WHERE hostgroup_id = 0; \
                 LOAD MYSQL SERVERS TO RUNTIME"
            ),
        );
    };
    lower(2);
    assert_eq!(open(&w), 2, "idle connections beyond the new limit");
    // In use when the limit drops: closed as they come back.
    lower(4);
    let running = sleep_all(clients, 1.0);
    let running = tokio::spawn(running);
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert_eq!(pool_use(&w).0, 4);
    lower(2);
    let _clients = running.await.unwrap();
    assert!(
        open(&w) <= 2,
        "{} open after the statements ended",
        open(&w)
    );
}

/// A user variable set to a string keeps the charset and collation it was set in wherever
/// weir replays it, whatever the connection's last client set: compared with the server.
#[tokio::test]
async fn user_variable_strings_keep_their_collation_on_any_connection() {
    let w = start_with_max(1, "");
    let sequences: [&[&str]; 4] = [
        &["SET @s = 'X0'"],
        &["SET NAMES latin1", "SET @s = 'X0'"],
        &["SET NAMES utf8mb4 COLLATE utf8mb4_bin", "SET @s = 'X0'"],
        &["SET @s = 'X0'", "SET NAMES latin1"],
    ];
    let read = "SELECT COLLATION(@s), CHARSET(@s), @s = 'x0', HEX(@s)";
    for sequence in sequences {
        let run = |port: u16, other: Option<u16>| async move {
            let mut a = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
                .await
                .unwrap();
            for sql in sequence {
                a.query_drop(*sql).await.unwrap();
                if let Some(other) = other {
                    // Another client leaves the one connection in other charsets.
                    let mut b = Conn::new(opts_for(other, WEIR_USER, WEIR_PASS, Some("weirtest")))
                        .await
                        .unwrap();
                    b.query_drop("SET NAMES utf8mb3 COLLATE utf8mb3_bin")
                        .await
                        .unwrap();
                    b.query_drop("SELECT 1").await.unwrap();
                    b.disconnect().await.unwrap();
                }
            }
            let row: mysql_async::Row = a.query_first(read).await.unwrap().unwrap();
            row.unwrap().iter().map(text).collect::<Vec<_>>()
        };
        let direct = run(topo().primary.port, None).await;
        let through = run(w.port, Some(w.port)).await;
        assert_eq!(through, direct, "{sequence:?}");
    }
}

/// A server removed by a LOAD while sessions hold connections to it, then added back: those
/// connections count against its max_connections again (and in the stats), rather than the
/// server starting afresh beside them.
#[tokio::test]
async fn a_server_added_back_while_draining_keeps_its_connections_counted() {
    let w = start_with_max(2, "connect_timeout_server_max = 1000");
    let mut other = connect(&w, None).await;
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut c = connect(&w, Some("weirtest")).await;
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop("SELECT 1").await.unwrap();
        held.push(c);
    }
    admin(
        &w,
        &format!(
            "DELETE FROM mysql_servers WHERE hostgroup_id = 0; LOAD MYSQL SERVERS TO RUNTIME; \
             INSERT INTO mysql_servers (hostgroup_id, hostname, port, max_connections) \
             VALUES (0, '127.0.0.1', {}, 2); LOAD MYSQL SERVERS TO RUNTIME",
            topo().primary.port
        ),
    );
    assert_eq!(pool_use(&w).0, 2);
    let connected: u64 = value(
        &w,
        "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = 'Server_Connections_connected'",
    )
    .parse()
    .unwrap();
    assert!(connected >= 2, "Server_Connections_connected {connected}");
    // Both slots are taken: a third statement waits, then gets 9001.
    let e = other.query_drop("DO 1").await.unwrap_err();
    assert!(e.to_string().contains("9001"), "{e}");
    for mut c in held {
        c.query_drop("COMMIT").await.unwrap();
    }
    other.query_drop("DO 1").await.unwrap();
}

/// A binary-protocol parameter: its type (2 bytes) and its value (`None`: sent as long data).
type PsParam = ([u8; 2], Option<Vec<u8>>);

fn ps_int(v: i32) -> PsParam {
    ([0x03, 0], Some(v.to_le_bytes().to_vec()))
}

fn ps_str(v: &str) -> PsParam {
    let mut b = vec![u8::try_from(v.len()).unwrap()];
    b.extend_from_slice(v.as_bytes());
    ([0xfd, 0], Some(b))
}

/// Cursors and long data of prepared statements, by hand, on `port`: what each reply was, with
/// the status flags of OKs and EOFs left out.
fn cursors_and_long_data_run(port: u16) -> Vec<String> {
    use common::raw::{err_code, RawClient};
    use weir_wire::reply::Expect;
    let login = || {
        let (c, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(ok[0], 0, "login: {ok:?}");
        c
    };
    let canon = |reply: Vec<Vec<u8>>| -> String {
        let one = reply.len() == 1;
        reply
            .iter()
            .map(|p| match (err_code(p), p.as_slice().first()) {
                (Some(code), _) => format!("ERR {code}"),
                (None, Some(0xfe)) if p.len() < 9 => "EOF".into(),
                (None, Some(0)) if one => "OK".into(),
                _ => p.iter().map(|b| format!("{b:02x}")).collect(),
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let prepare = |c: &mut RawClient, sql: &str| -> [u8; 4] {
        let mut p = vec![0x16];
        p.extend_from_slice(sql.as_bytes());
        let r = c.command(&p, Expect::Prepare);
        assert_eq!(r[0][0], 0, "prepare {sql}: {r:?}");
        [r[0][1], r[0][2], r[0][3], r[0][4]]
    };
    let exec = |c: &mut RawClient, stmt: [u8; 4], cursor: bool, params: &[PsParam]| {
        let mut p = vec![0x17];
        p.extend_from_slice(&stmt);
        p.push(u8::from(cursor));
        p.extend_from_slice(&1u32.to_le_bytes());
        if !params.is_empty() {
            p.extend(std::iter::repeat_n(0u8, params.len().div_ceil(8)));
            p.push(1);
            for (t, _) in params {
                p.extend_from_slice(t);
            }
            for v in params.iter().filter_map(|(_, v)| v.as_ref()) {
                p.extend_from_slice(v);
            }
        }
        let expect = if cursor {
            Expect::CursorResultSets
        } else {
            Expect::ResultSets
        };
        canon(c.command(&p, expect))
    };
    let fetch = |c: &mut RawClient, stmt: [u8; 4], rows: u32| {
        let mut p = vec![0x1c];
        p.extend_from_slice(&stmt);
        p.extend_from_slice(&rows.to_le_bytes());
        canon(c.command(&p, Expect::Fetch))
    };
    let on_stmt = |code: u8, stmt: [u8; 4]| {
        let mut p = vec![code];
        p.extend_from_slice(&stmt);
        p
    };
    let long_data = |c: &mut RawClient, stmt: [u8; 4], param: u16, data: &[u8]| {
        let mut p = on_stmt(0x18, stmt);
        p.extend_from_slice(&param.to_le_bytes());
        p.extend_from_slice(data);
        c.send(&p);
    };
    let mut a = login();
    let mut b = login();
    let mut trace = Vec::new();
    a.query("CREATE OR REPLACE TABLE weirtest.ps_cur (id INT PRIMARY KEY)");
    a.query("INSERT INTO weirtest.ps_cur VALUES (1), (2), (3), (4), (5), (6)");
    a.query("CREATE OR REPLACE TABLE weirtest.ps_ld (a VARCHAR(20), b VARCHAR(20))");

    // Two statements of one text, each with a cursor open: the server keeps one per statement.
    let sql = "SELECT id FROM weirtest.ps_cur WHERE id >= ? ORDER BY id";
    let (s1, s2) = (prepare(&mut a, sql), prepare(&mut a, sql));
    trace.push(exec(&mut a, s1, true, &[ps_int(1)]));
    trace.push(exec(&mut a, s2, true, &[ps_int(4)]));
    for s in [s1, s2, s1] {
        trace.push(fetch(&mut a, s, 2));
    }
    // The same text prepared again and run, and more statements than a connection keeps
    // (max_stmts_per_connection), leave both cursors open.
    let s3 = prepare(&mut a, sql);
    prepare(&mut a, "SELECT 1");
    prepare(&mut a, "SELECT 2");
    trace.push(exec(&mut a, s3, false, &[ps_int(6)]));
    for s in [s1, s2] {
        trace.push(fetch(&mut a, s, 5));
    }

    // Long data for a parameter the statement lacks fails its executions until it is reset,
    // and only its own: another client's statement of the same text runs.
    let ins = "INSERT INTO weirtest.ps_ld VALUES (?, ?)";
    let (la, lb) = (prepare(&mut a, ins), prepare(&mut b, ins));
    long_data(&mut a, la, 5, b"nowhere");
    trace.push(exec(&mut a, la, false, &[ps_str("a1"), ps_str("a2")]));
    trace.push(exec(&mut b, lb, false, &[ps_str("b1"), ps_str("b2")]));
    trace.push(exec(&mut a, la, false, &[ps_str("a1"), ps_str("a2")]));
    trace.push(canon(a.command(&on_stmt(0x1a, la), Expect::Status)));
    let long = ([0xfd, 0], None);
    long_data(&mut a, la, 0, b"long ");
    long_data(&mut a, la, 0, b"value");
    trace.push(exec(&mut a, la, false, &[long.clone(), ps_str("a4")]));
    trace.push(canon(a.query("SELECT a, b FROM weirtest.ps_ld ORDER BY a")));

    // Long data sent before an execution that fails (its table is gone) is gone with it: the
    // next execution's values are its own.
    long_data(&mut a, la, 0, b"STALE");
    prepare(&mut a, "SELECT 3");
    a.query("DROP TABLE weirtest.ps_ld");
    trace.push(exec(&mut a, la, false, &[long, ps_str("x")]));
    a.query("CREATE TABLE weirtest.ps_ld (a VARCHAR(20), b VARCHAR(20))");
    trace.push(exec(&mut a, la, false, &[ps_str("A"), ps_str("B")]));
    trace.push(canon(a.query("SELECT a, b FROM weirtest.ps_ld ORDER BY a")));
    trace
}

/// Prepared statements sharing one backend connection (max_connections 1,
/// max_stmts_per_connection 1) behave as on the server: two statements of one text keep a
/// cursor each, open cursors outlive more statements than a connection keeps, long data for a
/// missing parameter fails only its own statement until reset, and long data never outlives
/// an execution that failed.
#[test]
fn cursors_and_long_data_of_shared_statements_behave_as_on_the_server() {
    let w = start_with_max(1, "max_stmts_per_connection = 1");
    let direct = cursors_and_long_data_run(topo().primary.port);
    assert!(
        direct.iter().any(|r| r.contains("ERR 1210")),
        "the server's own answers: {direct:#?}"
    );
    let through_weir = cursors_and_long_data_run(w.port);
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(30));
}

/// The execution of `stmt` (parameter 1) and how long it took, bounded: a prepare that waits
/// for a lock would otherwise wait until the end of the test.
async fn timed_execution(
    x: &mut Conn,
    stmt: &mysql_async::Statement,
) -> (Result<Option<i64>, mysql_async::Error>, Duration) {
    let t = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(20), x.exec_first(stmt, (1,)))
        .await
        .expect("the execution waited for the lock");
    (r, t.elapsed())
}

/// A statement prepared again at its execution, on a connection it was evicted from, waits
/// there for a metadata lock (an ALTER TABLE queued behind a transaction): KILL QUERY and the
/// statement timeout stop that prepare as they stop the execution, and the client's session
/// goes on. Before, the client waited for the lock, however long.
#[tokio::test]
async fn a_prepare_waiting_for_a_lock_at_execution_stops_at_kill_query_and_timeout() {
    let w = start_with_max(
        1,
        "max_stmts_per_connection = 1\ndefault_query_timeout = 4000",
    );
    let p = &topo().primary;
    p.exec("DROP TABLE IF EXISTS weirtest.mdl_wait").unwrap();
    p.exec("CREATE TABLE weirtest.mdl_wait (id INT PRIMARY KEY, v INT)")
        .unwrap();
    p.exec("INSERT INTO weirtest.mdl_wait VALUES (1, 10)")
        .unwrap();
    let mut x = connect(&w, Some("weirtest")).await;
    let x_id = x.id();
    let stmt = x.prep("SELECT v FROM mdl_wait WHERE id = ?").await.unwrap();
    // The only connection keeps one statement: this one evicts the first.
    let other = x.prep("SELECT 2").await.unwrap();
    let v: Option<i64> = x.exec_first(&other, ()).await.unwrap();
    assert_eq!(v, Some(2));

    let direct = || {
        Conn::new(opts_for(
            topo().primary.port,
            WEIR_USER,
            WEIR_PASS,
            Some("weirtest"),
        ))
    };
    let mut holder = direct().await.unwrap();
    holder.query_drop("BEGIN").await.unwrap();
    holder.query_drop("SELECT * FROM mdl_wait").await.unwrap();
    let alter = tokio::spawn(async move {
        let mut a = direct().await.unwrap();
        a.query_drop("ALTER TABLE mdl_wait ADD COLUMN c INT").await
    });
    // The ALTER now waits for the transaction; new readers of the table queue behind it.
    let mut waiting = false;
    for _ in 0..50 {
        let rows = primary(
            "SELECT COUNT(*) FROM information_schema.processlist \
             WHERE state = 'Waiting for table metadata lock' AND info LIKE 'ALTER TABLE mdl_wait%'",
        );
        if rows[0][0] == "1" {
            waiting = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(waiting, "the ALTER did not queue for the lock");

    // 1. Another client's KILL QUERY.
    let port = w.port;
    // A raw client: it logs in without statements, which would wait for the one connection.
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        let (mut k, ok) = common::raw::RawClient::login(port, WEIR_USER, WEIR_PASS, None);
        assert_eq!(ok[0], 0, "{ok:?}");
        let r = k.query(&format!("KILL QUERY {x_id}"));
        assert_eq!(r[0][0], 0, "{r:?}");
    });
    let (r, took) = timed_execution(&mut x, &stmt).await;
    killer.join().unwrap();
    match r {
        Err(mysql_async::Error::Server(e)) => assert_eq!(e.code, 1317, "{e:?}"),
        other => panic!("expected ERROR 1317, got {other:?}\n{}", w.stderr_tail(20)),
    }
    assert!(took < Duration::from_secs(3), "KILL QUERY took {took:?}");

    // 2. The statement timeout (mysql-default_query_timeout, 4 s here).
    let (r, took) = timed_execution(&mut x, &stmt).await;
    match r {
        Err(mysql_async::Error::Server(e)) => assert_eq!(e.code, 1907, "{e:?}"),
        other => panic!("expected ERROR 1907, got {other:?}\n{}", w.stderr_tail(20)),
    }
    assert!(
        took >= Duration::from_secs(3) && took < Duration::from_secs(8),
        "timed out after {took:?}"
    );

    // The lock goes; the session and its statement work again.
    holder.query_drop("COMMIT").await.unwrap();
    alter.await.unwrap().unwrap();
    let v: Option<i64> = x.exec_first(&stmt, (1,)).await.unwrap();
    assert_eq!(v, Some(10));
    x.disconnect().await.unwrap();
    holder.disconnect().await.unwrap();
}

/// `SET @@tx_read_only` / `@@tx_isolation` with no scope set the next transaction only (as
/// on the server): the client's later transactions, on whichever connection, are as before.
/// Before, weir replayed them as session settings when the client moved to another
/// connection, and every later write failed with ERROR 1792.
#[tokio::test]
async fn unscoped_transaction_characteristics_last_one_transaction() {
    topo()
        .primary
        .exec("CREATE TABLE IF NOT EXISTS weirtest.tx_once (v INT)")
        .unwrap();
    async fn run(port: u16, other: Option<&mut Conn>) -> Vec<String> {
        let mut a = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
            .await
            .unwrap();
        a.query_drop("SET @@tx_read_only = 1").await.unwrap();
        a.query_drop("SET @@tx_isolation = 'READ-UNCOMMITTED'")
            .await
            .unwrap();
        a.query_drop("BEGIN").await.unwrap();
        a.query_drop("SELECT COUNT(*) FROM tx_once").await.unwrap();
        a.query_drop("COMMIT").await.unwrap();
        if let Some(b) = other {
            // Takes the only connection, so that A's next statement runs on a fresh one.
            b.query_drop("SELECT 1").await.unwrap();
        }
        let insert = a
            .query_drop("INSERT INTO tx_once VALUES (1)")
            .await
            .map_or_else(|e| e.to_string(), |()| "ok".to_string());
        let row: Option<(i64, String)> = a
            .query_first("SELECT @@tx_read_only, @@tx_isolation")
            .await
            .unwrap();
        a.disconnect().await.unwrap();
        let (ro, iso) = row.unwrap();
        vec![insert, ro.to_string(), iso]
    }
    let direct = run(topo().primary.port, None).await;
    assert_eq!(direct, ["ok", "0", "REPEATABLE-READ"], "the server itself");
    let w = start_with_max(1, "");
    let mut b = connect(&w, Some("weirtest")).await;
    let through_weir = run(w.port, Some(&mut b)).await;
    assert_eq!(through_weir, direct, "{}", w.stderr_tail(20));
}

/// A SET of several assignments that fails may have applied those before the failing one
/// (MariaDB does for ERROR 1621): the client keeps that connection, as it would keep its
/// session on the server, and nobody else gets it. Before, weir pooled it: the next client
/// got the failed SET's `sql_safe_updates` or `autocommit = 0` (and lost its inserts).
#[tokio::test]
async fn a_half_applied_failed_set_stays_with_its_client() {
    const SET: &str = "SET sql_safe_updates = 1, group_concat_max_len = 4, autocommit = 0, \
                       net_buffer_length = DEFAULT";
    const READ: &str = "SELECT @@sql_safe_updates, @@group_concat_max_len, @@autocommit";
    type Vars = (i64, i64, i64);
    async fn failed_set_then_read(port: u16) -> (u16, Vars) {
        let mut a = Conn::new(opts_for(port, WEIR_USER, WEIR_PASS, Some("weirtest")))
            .await
            .unwrap();
        let code = match a.query_drop(SET).await {
            Err(mysql_async::Error::Server(e)) => e.code,
            other => panic!("expected an error, got {other:?}"),
        };
        let own: Option<Vars> = a.query_first(READ).await.unwrap();
        a.disconnect().await.unwrap();
        (code, own.unwrap())
    }
    let direct = failed_set_then_read(topo().primary.port).await;
    assert_eq!(direct, (1621, (1, 4, 0)), "the server itself");
    let w = start_with_max(1, "");
    assert_eq!(failed_set_then_read(w.port).await, direct);
    // The next client, on the only connection.
    let mut b = connect(&w, Some("weirtest")).await;
    let fresh: Option<Vars> = b.query_first(READ).await.unwrap();
    assert_eq!(fresh, Some((0, 1_048_576, 1)), "{}", w.stderr_tail(20));
    // A SET refused before anything applied (a wrong value: 1231) keeps nothing.
    let e = b
        .query_drop("SET group_concat_max_len = 4, sql_mode = 'NO_SUCH_MODE'")
        .await
        .unwrap_err();
    assert!(e.to_string().contains("1231"), "{e}");
    let held: Option<i64> = b
        .query_first("SELECT @@group_concat_max_len")
        .await
        .unwrap();
    assert_eq!(held, Some(1_048_576));
    // So does one weir would not follow (an unknown variable: 1193).
    let e = b.query_drop("SET no_such_variable = 1").await.unwrap_err();
    assert!(e.to_string().contains("1193"), "{e}");
    // b sits idle: the only connection is free for c.
    let t = std::time::Instant::now();
    let mut c = connect(&w, Some("weirtest")).await;
    c.query_drop("SELECT 1").await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

/// A savepoint lives in its transaction: once the transaction ends, the connection goes back
/// to the pool. Before, a session that once used a savepoint kept its connection until it
/// disconnected (ORMs nest transactions with savepoints), starving other clients and stalling
/// switchovers.
#[tokio::test]
async fn savepoints_keep_the_connection_only_for_their_transaction() {
    topo()
        .primary
        .exec("CREATE TABLE IF NOT EXISTS weirtest.sp (v INT)")
        .unwrap();
    let w = start_with_max(1, "");
    let mut a = connect(&w, Some("weirtest")).await;
    for sql in [
        "BEGIN",
        "INSERT INTO sp VALUES (1)",
        "SAVEPOINT a",
        "INSERT INTO sp VALUES (2)",
        "ROLLBACK TO SAVEPOINT a",
        "RELEASE SAVEPOINT a",
        "COMMIT",
    ] {
        a.query_drop(sql).await.unwrap();
    }
    // The only connection is free for another client at once.
    let t = Instant::now();
    let mut b = connect(&w, Some("weirtest")).await;
    let v: Option<i64> = b.query_first("SELECT 1").await.unwrap();
    assert_eq!(v, Some(1));
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(pool_use(&w).0, 0, "nothing in use while both are idle");
}

/// A stored function called by DO, UPDATE or INSERT runs with the session, as in a SELECT:
/// what it changes (here the time zone) stays with its client, which keeps its connection.
/// A table's column list (`INSERT INTO t (a)`) is no call and pins nothing. Before, only a
/// SELECT's calls pinned, and the next client on the connection got the time zone.
#[tokio::test]
async fn a_write_calling_a_stored_function_keeps_its_connection() {
    common::create_routine(
        "CREATE OR REPLACE FUNCTION set_tz_w(z VARCHAR(10)) RETURNS INT DETERMINISTIC \
         BEGIN SET time_zone = z; RETURN 1; END",
    )
    .await;
    primary("CREATE OR REPLACE TABLE weirtest.sf_w (id INT AUTO_INCREMENT PRIMARY KEY, a INT)");
    primary("INSERT INTO weirtest.sf_w (a) VALUES (0)");
    let w = start_with_max(2, "");
    for (sql, zone) in [
        ("DO set_tz_w('+05:00')", "+05:00"),
        ("UPDATE sf_w SET a = set_tz_w('+06:00')", "+06:00"),
        ("INSERT INTO sf_w (a) VALUES (set_tz_w('+07:00'))", "+07:00"),
        // The server reads a comment before `(` as a space.
        ("DO set_tz_w/**/('+08:00')", "+08:00"),
        ("UPDATE sf_w SET a = set_tz_w -- c\n ('+09:00')", "+09:00"),
    ] {
        let mut a = connect(&w, Some("weirtest")).await;
        a.query_drop(sql).await.unwrap();
        let own: Option<String> = a.query_first("SELECT @@time_zone").await.unwrap();
        assert_eq!(own.as_deref(), Some(zone), "{sql}");
        for _ in 0..4 {
            let mut b = connect(&w, Some("weirtest")).await;
            let tz: Option<String> = b.query_first("SELECT @@time_zone").await.unwrap();
            assert_ne!(
                tz.as_deref(),
                Some(zone),
                "another client's time_zone after {sql}"
            );
            b.disconnect().await.unwrap();
        }
        let own: Option<String> = a.query_first("SELECT @@time_zone").await.unwrap();
        assert_eq!(own.as_deref(), Some(zone), "{sql}");
        a.disconnect().await.unwrap();
    }
    // Column lists are not calls: the only connection goes back to the pool.
    let w = start_with_max(1, "");
    let mut x = connect(&w, Some("weirtest")).await;
    x.query_drop("INSERT INTO weirtest.sf_w (a) VALUES (1)")
        .await
        .unwrap();
    x.query_drop("INSERT INTO sf_w (id, a) VALUES (NULL, 2), (NULL, 3)")
        .await
        .unwrap();
    let t = Instant::now();
    let mut y = connect(&w, Some("weirtest")).await;
    y.query_drop("SELECT 1").await.unwrap();
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
}

/// A string user variable set under the `binary` collation is replayed on another connection
/// with its collation quoted: `COLLATE binary` is a syntax error (`binary` is a reserved
/// word), and every statement of the session failed with 1064 before.
#[tokio::test]
async fn a_user_variable_set_under_the_binary_collation_follows_its_client() {
    let w = start_with_max(2, "");
    let mut a = connect(&w, Some("weirtest")).await;
    a.query_drop("SET collation_connection = binary")
        .await
        .unwrap();
    a.query_drop("SET @bin_v = 'abc'").await.unwrap();
    // b holds a's last connection in a transaction: a's next statement runs on another one.
    let mut b = connect(&w, Some("weirtest")).await;
    b.query_drop("BEGIN").await.unwrap();
    b.query_drop("SELECT 1").await.unwrap();
    let row: Option<(Option<Vec<u8>>, String)> = a
        .query_first("SELECT @bin_v, COLLATION(@bin_v)")
        .await
        .unwrap_or_else(|e| panic!("{e}\n{}", w.stderr_tail(20)));
    assert_eq!(row, Some((Some(b"abc".to_vec()), "binary".into())));
    b.query_drop("COMMIT").await.unwrap();
}

/// Under NO_BACKSLASH_ESCAPES a backslash ends nothing: `'C:\'` is a whole string, and what
/// follows it (an assignment, a lock) is seen and keeps the connection with its client, as on
/// the server. Before, weir read on to the next quote, let the connection go, and the lock
/// stayed with the pool (another client appeared to hold it; `@v` read NULL).
#[tokio::test]
async fn no_backslash_escapes_is_read_as_the_server_reads_it() {
    let w = start_with_max(2, "");
    let mut a = connect(&w, Some("weirtest")).await;
    a.query_drop("SET sql_mode = 'NO_BACKSLASH_ESCAPES'")
        .await
        .unwrap();
    let row: Option<(String, i64, i64)> = a
        .query_first(r"SELECT 'C:\' AS p, @nbe_v := 42, GET_LOCK('lk_nbe', 0) -- '")
        .await
        .unwrap();
    assert_eq!(row, Some((r"C:\".to_string(), 42, 1)));
    // b takes whatever connection is free, in a transaction so that it keeps it.
    let mut b = connect(&w, Some("weirtest")).await;
    b.query_drop("BEGIN").await.unwrap();
    let mine: Option<Option<i64>> = b
        .query_first("SELECT IS_USED_LOCK('lk_nbe') = CONNECTION_ID()")
        .await
        .unwrap();
    assert_eq!(mine, Some(Some(0)), "b holds a's lock");
    let v: Option<Option<i64>> = a.query_first("SELECT @nbe_v").await.unwrap();
    assert_eq!(v, Some(Some(42)));
    let released: Option<Option<i64>> = a
        .query_first("SELECT RELEASE_LOCK('lk_nbe')")
        .await
        .unwrap();
    assert_eq!(released, Some(Some(1)));
    b.query_drop("COMMIT").await.unwrap();
}

/// Under ANSI_QUOTES `"a\"` is an identifier ending in a backslash: what follows it is seen
/// and keeps the connection with its client. And the sql_mode flags of the server's replies
/// count too: here `mysql-init_connect` gives every backend connection NO_BACKSLASH_ESCAPES,
/// as a server whose global sql_mode has it would, without the client setting anything.
#[tokio::test]
async fn ansi_quotes_and_the_servers_own_sql_mode_are_read_as_the_server_reads_them() {
    async fn lock_and_check(w: &WeirProcess, setup: &str, sql: &str, lock: &str) {
        let mut a = connect(w, Some("weirtest")).await;
        a.query_drop(setup).await.unwrap();
        let row: Option<(i64, i64)> = a.query_first(sql).await.unwrap();
        assert_eq!(row, Some((42, 1)), "{sql}");
        let mut b = connect(w, Some("weirtest")).await;
        b.query_drop("BEGIN").await.unwrap();
        let mine: Option<Option<i64>> = b
            .query_first(format!("SELECT IS_USED_LOCK('{lock}') = CONNECTION_ID()"))
            .await
            .unwrap();
        assert_eq!(mine, Some(Some(0)), "b holds a's lock after {sql}");
        let released: Option<Option<i64>> = a
            .query_first(format!("SELECT RELEASE_LOCK('{lock}')"))
            .await
            .unwrap();
        assert_eq!(released, Some(Some(1)), "{sql}");
        b.query_drop("COMMIT").await.unwrap();
    }
    let w = start_with_max(2, "");
    lock_and_check(
        &w,
        "SET sql_mode = 'ANSI'",
        r#"SELECT 42 AS "a\", GET_LOCK('lk_aq', 0) AS g -- ""#,
        "lk_aq",
    )
    .await;
    let w = start_with_max(
        2,
        r#"init_connect = "SET sql_mode = 'NO_BACKSLASH_ESCAPES'""#,
    );
    lock_and_check(
        &w,
        "SELECT 1",
        r"SELECT 42 AS p, g FROM (SELECT 'C:\' AS x, GET_LOCK('lk_g', 0) AS g) t -- '",
        "lk_g",
    )
    .await;
}
