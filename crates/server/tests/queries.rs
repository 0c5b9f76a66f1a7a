//! Statements through weir with a real driver (mysql_async, which negotiates
//! CLIENT_DEPRECATE_EOF) and the mariadb CLI (which does not).
#![allow(clippy::unwrap_used)]
mod common;
use mysql_async::prelude::*;
use mysql_async::{Conn, Row, TxOpts, Value};
use weir_testkit::{ED_PASS, ED_USER};

#[tokio::test]
async fn ed25519_backend_user_logs_in() {
    let mut c = Conn::new(common::opts_for(
        common::weir().port,
        ED_USER,
        ED_PASS,
        None,
    ))
    .await
    .unwrap();
    let u: Option<String> = c.query_first("SELECT CURRENT_USER()").await.unwrap();
    assert!(u.unwrap().starts_with("weir_ed@"));
}

#[tokio::test]
async fn multi_statements_and_procedure_result_sets() {
    let mut c = common::connect().await;
    let mut r = c
        .query_iter("SELECT 1 AS a; SELECT 2 AS b, 3 AS c; DO 1")
        .await
        .unwrap();
    let first: Vec<i64> = r.collect().await.unwrap();
    assert_eq!(first, vec![1]);
    let second: Vec<(i64, i64)> = r.collect().await.unwrap();
    assert_eq!(second, vec![(2, 3)]);
    drop(r);
    c.query_drop("DROP PROCEDURE IF EXISTS weirtest.three")
        .await
        .unwrap();
    c.query_drop(
        "CREATE PROCEDURE weirtest.three() BEGIN SELECT 1; SELECT 'two', 2; SELECT 3 UNION SELECT 4; END",
    )
    .await
    .unwrap();
    let mut r = c.query_iter("CALL weirtest.three()").await.unwrap();
    let a: Vec<i64> = r.collect().await.unwrap();
    let b: Vec<(String, i64)> = r.collect().await.unwrap();
    let d: Vec<i64> = r.collect().await.unwrap();
    drop(r);
    assert_eq!(a, vec![1]);
    assert_eq!(b, vec![("two".to_string(), 2)]);
    assert_eq!(d, vec![3, 4]);
    let v: Option<i64> = c.query_first("SELECT 5").await.unwrap();
    assert_eq!(v, Some(5));
}

#[tokio::test]
async fn prepared_statements_round_trip_every_type() {
    let mut c = common::connect().await;
    c.query_drop("DROP TABLE IF EXISTS weirtest.types")
        .await
        .unwrap();
    c.query_drop(
        "CREATE TABLE weirtest.types (id INT PRIMARY KEY, ti TINYINT, si SMALLINT, mi MEDIUMINT, \
         bi BIGINT, ubi BIGINT UNSIGNED, f FLOAT, d DOUBLE, dec1 DECIMAL(20,6), dt DATE, tm TIME(6), \
         dtm DATETIME(6), ts TIMESTAMP(6) NULL, y YEAR, ch CHAR(5), vc VARCHAR(100), bl BLOB, \
         tx TEXT, bits BIT(12), en ENUM('a','b'), st SET('x','y'), js JSON, vb VARBINARY(10))",
    )
    .await
    .unwrap();
    let insert =
        "INSERT INTO weirtest.types VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";
    let full: Vec<Value> = vec![
        1.into(),
        Value::Int(-128),
        Value::Int(-32768),
        Value::Int(8388607),
        Value::Int(i64::MIN),
        Value::UInt(u64::MAX),
        Value::Float(1.5),
        Value::Double(-2.25e100),
        Value::Bytes(b"12345678901234.123456".to_vec()),
        Value::Date(2024, 2, 29, 0, 0, 0, 0),
        Value::Time(true, 1, 2, 3, 4, 5),
        Value::Date(1999, 12, 31, 23, 59, 58, 999999),
        Value::Date(2030, 1, 2, 3, 4, 5, 6),
        Value::Int(2155),
        Value::Bytes(b"abc".to_vec()),
        Value::Bytes("héllo wörld ☃".as_bytes().to_vec()),
        Value::Bytes(vec![0, 1, 2, 255, 254]),
        Value::Bytes(b"text".to_vec()),
        Value::Bytes(vec![0x0f, 0xff]),
        Value::Bytes(b"b".to_vec()),
        Value::Bytes(b"x,y".to_vec()),
        Value::Bytes(br#"{"k": [1, 2]}"#.to_vec()),
        Value::Bytes(vec![0, 0, 7]),
    ];
    let mut nulls = vec![Value::NULL; 23];
    nulls[0] = 2.into();
    c.exec_drop(insert, full.clone()).await.unwrap();
    c.exec_drop(insert, nulls.clone()).await.unwrap();
    let stmt = c
        .prep("SELECT * FROM weirtest.types WHERE id = ?")
        .await
        .unwrap();
    let row: Row = c.exec_first(&stmt, (1,)).await.unwrap().unwrap();
    let got: Vec<Value> = row.unwrap();
    assert_eq!(got.len(), 23);
    assert_eq!(got[0], Value::Int(1));
    assert_eq!(got[4], Value::Int(i64::MIN));
    assert_eq!(got[5], Value::UInt(u64::MAX));
    assert_eq!(got[6], Value::Float(1.5));
    assert_eq!(got[7], Value::Double(-2.25e100));
    assert_eq!(got[8], Value::Bytes(b"12345678901234.123456".to_vec()));
    assert_eq!(got[9], Value::Date(2024, 2, 29, 0, 0, 0, 0));
    assert_eq!(got[10], Value::Time(true, 1, 2, 3, 4, 5));
    assert_eq!(got[11], Value::Date(1999, 12, 31, 23, 59, 58, 999999));
    assert_eq!(got[12], Value::Date(2030, 1, 2, 3, 4, 5, 6));
    assert_eq!(got[13], Value::Int(2155));
    for i in [14, 15, 16, 17, 18, 19, 20, 22] {
        assert_eq!(got[i], full[i], "column {i}");
    }
    let row: Row = c.exec_first(&stmt, (2,)).await.unwrap().unwrap();
    let got: Vec<Value> = row.unwrap();
    assert!(got[1..].iter().all(|v| *v == Value::NULL), "{got:?}");
    c.close(stmt).await.unwrap();
    // The text protocol agrees.
    let s: Option<String> = c
        .query_first("SELECT vc FROM weirtest.types WHERE id = 1")
        .await
        .unwrap();
    assert_eq!(s.as_deref(), Some("héllo wörld ☃"));
}

#[tokio::test]
async fn twenty_mib_blob_both_ways() {
    let mut c = common::connect().await;
    c.query_drop("DROP TABLE IF EXISTS weirtest.big")
        .await
        .unwrap();
    c.query_drop("CREATE TABLE weirtest.big (id INT PRIMARY KEY, b LONGBLOB)")
        .await
        .unwrap();
    let blob: Vec<u8> = (0..20 * 1024 * 1024).map(|i| (i * 7 % 256) as u8).collect();
    c.exec_drop("INSERT INTO weirtest.big VALUES (1, ?)", (blob.clone(),))
        .await
        .unwrap();
    let back: Option<Vec<u8>> = c
        .query_first("SELECT b FROM weirtest.big WHERE id = 1")
        .await
        .unwrap();
    assert!(back.as_ref() == Some(&blob), "text protocol blob differs");
    let back: Option<Vec<u8>> = c
        .exec_first("SELECT b FROM weirtest.big WHERE id = ?", (1,))
        .await
        .unwrap();
    assert!(back.as_ref() == Some(&blob), "binary protocol blob differs");
    // And through a text-protocol INSERT of over 16 MiB (split frames from the client).
    let hex: String = blob[..9 * 1024 * 1024]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    c.query_drop(format!("INSERT INTO weirtest.big VALUES (2, x'{hex}')"))
        .await
        .unwrap();
    let n: Option<u64> = c
        .query_first("SELECT LENGTH(b) FROM weirtest.big WHERE id = 2")
        .await
        .unwrap();
    assert_eq!(n, Some(9 * 1024 * 1024));
}

#[tokio::test]
async fn commit_and_rollback() {
    let mut c = common::connect().await;
    c.query_drop("CREATE TABLE IF NOT EXISTS weirtest.tx (id INT PRIMARY KEY) ENGINE=InnoDB")
        .await
        .unwrap();
    c.query_drop("DELETE FROM weirtest.tx").await.unwrap();
    let mut t = c.start_transaction(TxOpts::default()).await.unwrap();
    t.query_drop("INSERT INTO weirtest.tx VALUES (1)")
        .await
        .unwrap();
    t.commit().await.unwrap();
    let mut t = c.start_transaction(TxOpts::default()).await.unwrap();
    t.query_drop("INSERT INTO weirtest.tx VALUES (2)")
        .await
        .unwrap();
    let inside: Vec<i64> = t
        .query("SELECT id FROM weirtest.tx ORDER BY id")
        .await
        .unwrap();
    assert_eq!(inside, vec![1, 2], "the transaction sees its own write");
    t.rollback().await.unwrap();
    let after: Vec<i64> = c
        .query("SELECT id FROM weirtest.tx ORDER BY id")
        .await
        .unwrap();
    assert_eq!(after, vec![1]);
}

#[tokio::test]
async fn session_state_stays_with_the_client() {
    let mut c = common::connect().await;
    c.query_drop("SET @v = 41").await.unwrap();
    let v: Option<i64> = c.query_first("SELECT @v + 1").await.unwrap();
    assert_eq!(
        v,
        Some(42),
        "a user variable pins the session to its backend connection"
    );
    c.query_drop("USE sbtest").await.unwrap();
    let mut other = common::connect().await;
    let db: Option<String> = other.query_first("SELECT DATABASE()").await.unwrap();
    assert_eq!(
        db.as_deref(),
        Some("weirtest"),
        "schema does not leak between clients"
    );
    let db: Option<String> = c.query_first("SELECT DATABASE()").await.unwrap();
    assert_eq!(db.as_deref(), Some("sbtest"));
    c.reset().await.unwrap();
    let v: Option<Option<i64>> = c.query_first("SELECT @v").await.unwrap();
    assert_eq!(v, Some(None), "COM_RESET_CONNECTION forgets user variables");
    c.change_user(Default::default()).await.unwrap();
    let v: Option<i64> = c.query_first("SELECT 7").await.unwrap();
    assert_eq!(v, Some(7));
}

#[tokio::test]
async fn warnings_are_relayed() {
    let mut c = common::connect().await;
    c.query_drop("SELECT CAST('12abc' AS INTEGER)")
        .await
        .unwrap();
    let w: Vec<Row> = c.query("SHOW WARNINGS").await.unwrap();
    assert!(!w.is_empty());
}

#[tokio::test]
async fn many_concurrent_clients() {
    let mut tasks = Vec::new();
    for i in 0..500i64 {
        tasks.push(tokio::spawn(async move {
            let mut c = common::connect().await;
            for j in 0..3i64 {
                let v: Option<i64> = c
                    .query_first(format!("SELECT {i} * 10 + {j}"))
                    .await
                    .unwrap();
                assert_eq!(v, Some(i * 10 + j));
            }
            c.disconnect().await.unwrap();
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

/// The test user in `weirtest` at `port`: the primary directly, or weir, for tests that run
/// the same steps on both and compare.
async fn weirtest_at(port: u16) -> Conn {
    let opts = common::opts_for(
        port,
        weir_testkit::WEIR_USER,
        weir_testkit::WEIR_PASS,
        Some("weirtest"),
    );
    Conn::new(opts).await.unwrap()
}

/// COM_CHANGE_USER to a schema that does not exist fails as on the server (1049), which resets
/// the session (MariaDB 10.11), also while the session holds a pinned connection; clients
/// asking for unknown schemas never shun the server.
#[tokio::test]
async fn change_user_to_an_unknown_schema_fails_and_resets_the_session() {
    let direct = common::topo().primary.port;
    let mut seen = Vec::new();
    for port in [direct, common::weir().port] {
        let mut c = weirtest_at(port).await;
        c.query_drop("SET @kept = 41").await.unwrap();
        // Pins the session to its connection through weir.
        c.query_drop("CREATE TEMPORARY TABLE cu_tmp (k INT)")
            .await
            .unwrap();
        let started = std::time::Instant::now();
        let e = c
            .change_user(
                mysql_async::ChangeUserOpts::default().with_db_name(Some("no_such_db_weir".into())),
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains("1049"), "{e}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        type State = (Option<i64>, Option<String>);
        let after: Option<State> = c.query_first("SELECT @kept, DATABASE()").await.unwrap();
        let temp = c.query_drop("SELECT * FROM cu_tmp").await.is_ok();
        seen.push(format!("{after:?}, temporary table {temp}"));
    }
    assert_eq!(seen[1], seen[0], "through weir, then directly");
    // A fresh client on the same weir, and many asking for the unknown schema.
    for _ in 0..12 {
        let opts = common::opts_for(
            common::weir().port,
            weir_testkit::WEIR_USER,
            weir_testkit::WEIR_PASS,
            Some("no_such_db_weir"),
        );
        if let Ok(mut bad) = Conn::new(opts).await {
            let e = bad.query_drop("SELECT 1").await.unwrap_err();
            assert!(e.to_string().contains("1049"), "{e}");
        }
    }
    let mut other = common::connect().await;
    let v: Option<i64> = other.query_first("SELECT 5").await.unwrap();
    assert_eq!(
        v,
        Some(5),
        "the server was shunned by clients asking for an unknown schema"
    );
    let db: Option<String> = other.query_first("SELECT DATABASE()").await.unwrap();
    assert_eq!(db.as_deref(), Some("weirtest"));
}

/// A refused COM_CHANGE_USER behaves as on the server: the client gets 1045, its session is
/// reset (transaction rolled back, variables gone) and stays logged in as before; after three
/// refusals the command itself is refused. Run against the server directly, then through weir.
#[tokio::test]
async fn a_refused_change_user_resets_the_session_and_keeps_it() {
    let direct = common::topo().primary.port;
    let mut seen = Vec::new();
    for port in [direct, common::weir().port] {
        let mut c = weirtest_at(port).await;
        c.query_drop("CREATE TABLE IF NOT EXISTS weirtest.cu_t (id INT PRIMARY KEY)")
            .await
            .unwrap();
        c.query_drop("DELETE FROM weirtest.cu_t").await.unwrap();
        c.query_drop("SET @kept = 41").await.unwrap();
        // The server takes the change's character set even when it refuses the change.
        c.query_drop("SET NAMES latin1").await.unwrap();
        c.query_drop("BEGIN").await.unwrap();
        c.query_drop("INSERT INTO weirtest.cu_t VALUES (1)")
            .await
            .unwrap();
        let mut log = Vec::new();
        for attempt in 0..4 {
            let e = c
                .change_user(
                    mysql_async::ChangeUserOpts::default()
                        .with_user(Some(weir_testkit::WEIR_USER.into()))
                        .with_pass(Some("wrong password".into())),
                )
                .await
                .unwrap_err();
            // The code and SQLSTATE (weir's 1047 message says why).
            let e = e.to_string();
            let code = e.find("ERROR ").map(|i| &e[i..i + 20]);
            log.push(format!("attempt {attempt}: {code:?}"));
        }
        type State = (Option<i64>, Option<String>, i64);
        let after: Result<Option<State>, _> = c
            .query_first("SELECT @kept, DATABASE(), (SELECT COUNT(*) FROM weirtest.cu_t)")
            .await;
        log.push(format!("after: {after:?}"));
        let charsets: Option<(String, String)> = c
            .query_first("SELECT @@collation_connection, @@character_set_results")
            .await
            .unwrap();
        log.push(format!("charsets: {charsets:?}"));
        seen.push(log);
    }
    assert_eq!(seen[1], seen[0], "through weir, then directly");
    assert!(seen[0][0].contains("1045 (28000)"), "{seen:?}");
    assert!(seen[0][3].contains("1047 (08S01)"), "{seen:?}");
    assert_eq!(seen[0][4], "after: Ok(Some((None, Some(\"weirtest\"), 0)))");
}
