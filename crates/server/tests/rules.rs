//! Query rules and digests end to end: the seeds' rules typed into the admin interface with the
//! `mariadb` CLI, traffic through weir with mysql_async, and `SELECT @@port` telling which
//! server answered (primary = hostgroup 0, the two replicas = hostgroup 1, as the testkit
//! configures them; other hostgroups are added per test through the admin).
//!
//! Every test starts its own weir in front of the shared topology, so that the rules one test
//! loads do not route another's traffic. Timeouts, retries and fast_forward are in
//! rules_actions.rs.
#![allow(clippy::unwrap_used)]
mod common;

use common::admin::{admin, admin_err, pool_queries, start, table, value, Row};
use common::{connect_to, on_primary, topo};
use mysql_async::prelude::*;
use mysql_async::Conn;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use weir_testkit::{WeirProcess, ED_PASS, ED_USER, WEIR_PASS, WEIR_USER};

/// stats_mysql_query_rules as rule_id → hits.
fn hits(w: &WeirProcess) -> BTreeMap<u32, u64> {
    table(w, "SELECT rule_id, hits FROM stats_mysql_query_rules")
        .iter()
        .map(|r| (r["rule_id"].parse().unwrap(), r["hits"].parse().unwrap()))
        .collect()
}

/// The rules whose hits grew from `before` to `after`, with how much.
fn hits_delta(before: &BTreeMap<u32, u64>, after: &BTreeMap<u32, u64>) -> BTreeMap<u32, u64> {
    after
        .iter()
        .filter_map(|(id, h)| {
            let d = h - before.get(id).copied().unwrap_or(0);
            (d > 0).then_some((*id, d))
        })
        .collect()
}

async fn connect(w: &WeirProcess) -> Conn {
    connect_to(w, WEIR_USER, WEIR_PASS, "weirtest").await
}

/// The first column of `sql`'s first row: the server's port for `SELECT @@port ...`.
async fn port_of(c: &mut Conn, sql: &str) -> u16 {
    c.query_first::<u16, _>(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_else(|| panic!("{sql}: no row"))
}

fn primary() -> u16 {
    topo().primary.port
}

fn replicas() -> Vec<u16> {
    topo().replicas.iter().map(|r| r.port).collect()
}

fn server_code(e: &mysql_async::Error) -> Option<(u16, String)> {
    match e {
        mysql_async::Error::Server(s) => Some((s.code, s.message.clone())),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------

/// Seed 003 (lines 33-36), the read/write split of the MaxScale comparison, with the seed's
/// writer hostgroup 1 / reader hostgroup 2 mapped onto the topology's 0 / 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_003_read_write_split() {
    on_primary(
        "CREATE OR REPLACE TABLE weirtest.rules_rw (id INT PRIMARY KEY, ins_port INT, upd_port INT); \
         CREATE OR REPLACE TABLE weirtest.rules_ai (id INT AUTO_INCREMENT PRIMARY KEY, v INT)",
    );
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) VALUES(1,1,'^SELECT.*FOR UPDATE$', 0, 1);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) VALUES(2,1,'^SELECT', 1, 1);
LOAD MYSQL QUERY RULES TO RUNTIME;
SAVE MYSQL QUERY RULES TO DISK;",
    );
    let rt = table(
        &w,
        "SELECT rule_id, active, match_pattern, destination_hostgroup, apply FROM runtime_mysql_query_rules ORDER BY rule_id",
    );
    let rt: Vec<Vec<&str>> = rt
        .iter()
        .map(|r| {
            [
                "rule_id",
                "active",
                "match_pattern",
                "destination_hostgroup",
                "apply",
            ]
            .iter()
            .map(|c| r[*c].as_str())
            .collect()
        })
        .collect();
    assert_eq!(
        rt,
        [
            ["1", "1", "^SELECT.*FOR UPDATE$", "0", "1"],
            ["2", "1", "^SELECT", "1", "1"]
        ]
    );
    assert_eq!(
        value(&w, "SELECT COUNT(*) FROM disk.mysql_query_rules"),
        "2"
    );

    let mut c = connect(&w).await;
    let before = hits(&w);
    let mut seen = BTreeSet::new();
    for _ in 0..50 {
        let p = port_of(&mut c, "SELECT @@port").await;
        assert!(replicas().contains(&p), "SELECT went to {p}");
        seen.insert(p);
    }
    assert_eq!(seen.len(), 2, "both replicas serve reads: {seen:?}");
    for _ in 0..10 {
        assert_eq!(port_of(&mut c, "SELECT @@port FOR UPDATE").await, primary());
    }
    // No rule matches writes: the user's default hostgroup 0, the primary. Where each ran
    // is recorded by the statement itself; a replica would have kept the row to itself.
    c.query_drop("INSERT INTO rules_rw (id, ins_port) VALUES (1, @@port)")
        .await
        .unwrap();
    c.query_drop("UPDATE rules_rw SET upd_port = @@port WHERE id = 1")
        .await
        .unwrap();
    let p = primary().to_string();
    assert_eq!(
        topo()
            .primary
            .query_rows("SELECT ins_port, upd_port FROM weirtest.rules_rw WHERE id = 1")
            .unwrap(),
        [[p.clone(), p]]
    );
    // In a transaction (BEGIN goes to hostgroup 0) every statement stays on the primary,
    // whatever the rules say; after COMMIT reads go back to the replicas.
    c.query_drop("BEGIN").await.unwrap();
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary());
    assert_eq!(port_of(&mut c, "SELECT @@port FOR UPDATE").await, primary());
    c.query_drop("COMMIT").await.unwrap();
    assert!(replicas().contains(&port_of(&mut c, "SELECT @@port").await));
    // Hits count the queries each rule matched, routed or not (inside the transaction too).
    let after = hits(&w);
    assert_eq!(
        hits_delta(&before, &after),
        BTreeMap::from([(1, 11), (2, 52)])
    );

    // `SELECT LAST_INSERT_ID()` matches `^SELECT` but reads the id on the primary connection
    // that generated it (kept for mysql-auto_increment_delay_multiplex statements).
    for want in 1..=3u64 {
        c.query_drop("INSERT INTO rules_ai (v) VALUES (1)")
            .await
            .unwrap();
        let id: Option<u64> = c.query_first("SELECT LAST_INSERT_ID()").await.unwrap();
        assert_eq!(id, Some(want));
        assert!(replicas().contains(&port_of(&mut c, "SELECT @@port").await));
    }

    // Evaluation time: per rule (weir's time_ns) and in total, measured only with
    // mysql-stats_time_query_processor (off by default, as in ProxySQL: two clock reads).
    let qp_time = |w: &WeirProcess| -> u64 {
        value(
            w,
            "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = 'Query_Processor_time_nsec'",
        )
        .parse()
        .unwrap()
    };
    assert_eq!(qp_time(&w), 0, "not timed by default");
    admin(
        &w,
        "SET mysql-stats_time_query_processor = 'true'; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    for _ in 0..10 {
        port_of(&mut c, "SELECT @@port").await;
    }
    let t = table(
        &w,
        "SELECT rule_id, time_ns FROM stats_mysql_query_rules WHERE rule_id = 2",
    );
    assert!(t[0]["time_ns"].parse::<u64>().unwrap() > 0, "{t:?}");
    assert!(qp_time(&w) > 0);

    // Prepared statements are routed when prepared (the rules see the COM_STMT_PREPARE).
    let mut p1 = connect(&w).await;
    let mut p2 = connect(&w).await;
    let after = hits(&w);
    let got: Option<u16> = p1.exec_first("SELECT @@port", ()).await.unwrap();
    assert!(replicas().contains(&got.unwrap()), "{got:?}");
    let got: Option<u16> = p2.exec_first("SELECT @@port FOR UPDATE", ()).await.unwrap();
    assert_eq!(got, Some(primary()));
    assert_eq!(
        hits_delta(&after, &hits(&w)),
        BTreeMap::from([(1, 1), (2, 1)])
    );
    drop((c, p1, p2));
}

/// Runs sysbench oltp_read_only against `port` on `db` (1 small table).
fn sysbench(port: u16, db: &str, args: &[&str]) -> String {
    let db = format!("--mysql-db={db}");
    let mut all = vec![db.as_str(), "--tables=1", "--table-size=1000"];
    all.extend_from_slice(args);
    let (ok, text) = common::sysbench("oltp_read_only", port, &all);
    assert!(ok, "sysbench {args:?} failed:\n{text}");
    text
}

/// The digest table after a sysbench run shows sysbench's statements normalized, with their
/// counts and times; a rule made from it (seed 003's how-to) routes that digest; `_reset`
/// empties it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digests_after_sysbench_and_reset() {
    // Its own schema: sysbench.rs uses sbtest, admin.rs sbadmin.
    let db = "sbrules";
    topo()
        .primary
        .exec(&format!("CREATE DATABASE IF NOT EXISTS {db}"))
        .unwrap();
    sysbench(primary(), db, &["cleanup"]);
    sysbench(primary(), db, &["prepare"]);
    topo()
        .wait_replicas_caught_up(Duration::from_secs(30))
        .unwrap();
    let w = start("");
    // Text protocol: executions of prepared statements are not digested yet (see
    // prepared_statement_executions_are_digested below).
    sysbench(
        w.port,
        db,
        &[
            "--threads=2",
            "--time=2",
            "--db-ps-mode=disable",
            "--report-interval=0",
            "run",
        ],
    );
    let rows = table(
        &w,
        &format!("SELECT * FROM stats_mysql_query_digest WHERE schemaname = '{db}'"),
    );
    let by_text: BTreeMap<&str, &Row> = rows
        .iter()
        .map(|r| (r["digest_text"].as_str(), r))
        .collect();
    for text in [
        "BEGIN",
        "COMMIT",
        "SELECT c FROM sbtest1 WHERE id=?",
        "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?",
        "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
        "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
    ] {
        let r = by_text
            .get(text)
            .unwrap_or_else(|| panic!("no digest {text:?} in {:#?}", by_text.keys()));
        let n = |c: &str| -> u64 { r[c].parse().unwrap_or_else(|_| panic!("{c} in {r:?}")) };
        assert!(n("count_star") > 0, "{r:?}");
        assert!(n("sum_time") > 0, "{r:?}");
        assert!(n("min_time") <= n("max_time"), "{r:?}");
        assert!(n("first_seen") <= n("last_seen"), "{r:?}");
        assert_eq!(r["hostgroup"], "0", "{r:?}");
        assert_eq!(r["username"], WEIR_USER, "{r:?}");
        let d = &r["digest"];
        assert!(
            d.len() == 18 && d.starts_with("0x") && d[2..].bytes().all(|b| b.is_ascii_hexdigit()),
            "{r:?}"
        );
    }
    // Every point select found its row.
    let point = by_text["SELECT c FROM sbtest1 WHERE id=?"];
    assert_eq!(point["sum_rows_sent"], point["count_star"], "{point:?}");

    // Seed 003's how-to: the heaviest SELECT digest becomes a rule, by digest.
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_query_rules (active, digest, destination_hostgroup, apply) \
             SELECT 1, digest, 1, 1 FROM stats_mysql_query_digest WHERE schemaname = '{db}' \
             AND digest_text LIKE 'SELECT%' ORDER BY sum_time DESC LIMIT 1; \
             LOAD MYSQL QUERY RULES TO RUNTIME"
        ),
    );
    let heaviest = value(
        &w,
        &format!(
            "SELECT digest_text FROM stats_mysql_query_digest d JOIN runtime_mysql_query_rules r \
             ON r.digest = d.digest WHERE d.schemaname = '{db}'"
        ),
    );
    let query = match heaviest.as_str() {
        "SELECT c FROM sbtest1 WHERE id=?" => "SELECT c FROM sbtest1 WHERE id=7",
        "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?" => {
            "SELECT c FROM sbtest1 WHERE id BETWEEN 7 AND 9"
        }
        "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?" => {
            "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 7 AND 9"
        }
        "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c" => {
            "SELECT c FROM sbtest1 WHERE id BETWEEN 7 AND 9 ORDER BY c"
        }
        "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c" => {
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 7 AND 9 ORDER BY c"
        }
        other => panic!("unexpected heaviest digest {other:?}"),
    };
    let mut c = connect_to(&w, WEIR_USER, WEIR_PASS, db).await;
    c.query_drop(query).await.unwrap();
    let routed = table(
        &w,
        &format!(
            "SELECT hostgroup, count_star FROM stats_mysql_query_digest \
             WHERE schemaname = '{db}' AND digest_text = '{heaviest}' AND hostgroup = 1"
        ),
    );
    assert_eq!(routed.len(), 1, "{routed:?}");
    assert_eq!(routed[0]["count_star"], "1", "{routed:?}");
    drop(c);

    // _reset returns the table and empties it.
    let n: u64 = value(&w, "SELECT COUNT(*) FROM stats_mysql_query_digest_reset")
        .parse()
        .unwrap();
    assert!(n >= 7, "{n}");
    assert_eq!(
        value(&w, "SELECT COUNT(*) FROM stats_mysql_query_digest"),
        "0"
    );
    sysbench(primary(), db, &["cleanup"]);
}

/// Each COM_STMT_EXECUTE counts under the digest of the statement's text, as in ProxySQL
/// (sysbench's default `--db-ps-mode=auto` workload shows up in stats_mysql_query_digest).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statement_executions_are_digested() {
    let w = start("");
    let mut c = connect(&w).await;
    for i in 0..3 {
        let v: Option<i64> = c
            .exec_first("SELECT ? + 40 AS ps_digest", (i,))
            .await
            .unwrap();
        assert_eq!(v, Some(i + 40));
    }
    let rows = table(
        &w,
        "SELECT digest_text, count_star FROM stats_mysql_query_digest WHERE digest_text LIKE '%ps_digest'",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["count_star"], "3", "{rows:?}");
    drop(c);
}

/// Seed 004's chained rules with the backslashes the blog lost (`\d`, `\b`), for its user
/// testuser_rw (created on the servers and in mysql_users) and hostgroup 600 (the second
/// replica). With mysql-query_processor_iterations = 0, a flagOUT continues in the new chain
/// with the rules after the matching one: the flagIN 1100 rules come later, so they are reached.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_004_chained_rules_route_as_written() {
    let tables = [1, 5, 12, 25, 150, 151, 1234];
    let mut ddl = String::from("CREATE DATABASE IF NOT EXISTS rules004;");
    for n in tables {
        ddl.push_str(&format!(
            "CREATE OR REPLACE TABLE rules004.sbtest{n} (id INT PRIMARY KEY); INSERT INTO rules004.sbtest{n} VALUES (1);"
        ));
    }
    ddl.push_str(
        "CREATE USER IF NOT EXISTS 'testuser_rw'@'%' IDENTIFIED BY 'testpass'; GRANT ALL PRIVILEGES ON *.* TO 'testuser_rw'@'%';",
    );
    on_primary(&ddl);
    let hg600 = topo().replicas[1].port;
    let w = start("");
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (600, '127.0.0.1', {hg600});
LOAD MYSQL SERVERS TO RUNTIME;
INSERT INTO mysql_users (username, password, default_hostgroup) VALUES ('testuser_rw', 'testpass', 0);
LOAD MYSQL USERS TO RUNTIME;"
        ),
    );
    admin(
        &w,
        r"insert into mysql_query_rules (username,destination_hostgroup,active,retries,match_digest,apply) values('testuser_rw',600,1,3,'(from|into|update|into table) sbtest([1-9]\d{3,}|[1-9][0-9][1-9])\b',1);",
    );
    admin(
        &w,
        r"insert into mysql_query_rules (flagin,flagout,username,active,retries,match_digest,apply) VALUES
(0,1000,'testuser_rw',1,3,'(from|into|update|into table) sbtest.\b',0),
(0,1100,'testuser_rw',1,3,'(from|into|update|into table) sbtest1.\b',0),
(0,1200,'testuser_rw',1,3,'(from|into|update|into table) sbtest2.\b',0),
(0,1300,'testuser_rw',1,3,'(from|into|update|into table) sbtest3.\b',0),
(0,1400,'testuser_rw',1,3,'(from|into|update|into table) sbtest4.\b',0),
(0,1500,'testuser_rw',1,3,'(from|into|update|into table) sbtest5.\b',0),
(0,1600,'testuser_rw',1,3,'(from|into|update|into table) sbtest6.\b',0),
(0,1700,'testuser_rw',1,3,'(from|into|update|into table) sbtest7.\b',0),
(0,1800,'testuser_rw',1,3,'(from|into|update|into table) sbtest8.\b',0),
(0,1900,'testuser_rw',1,3,'(from|into|update|into table) sbtest9.\b',0);
insert into mysql_query_rules (flagin,destination_hostgroup,active,match_digest,apply) VALUES
(1100,600,1,'(from|into|update|into table) sbtest11\b',1),
(1100,600,1,'(from|into|update|into table) sbtest12\b',1),
(1100,600,1,'(from|into|update|into table) sbtest13\b',1),
(1100,600,1,'(from|into|update|into table) sbtest14\b',1),
(1100,600,1,'(from|into|update|into table) sbtest15\b',1),
(1100,600,1,'(from|into|update|into table) sbtest16\b',1),
(1100,600,1,'(from|into|update|into table) sbtest17\b',1),
(1100,600,1,'(from|into|update|into table) sbtest18\b',1),
(1100,600,1,'(from|into|update|into table) sbtest19\b',1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    assert_eq!(
        value(&w, "SELECT COUNT(*) FROM runtime_mysql_query_rules"),
        "20"
    );
    let mut rw = connect_to(&w, "testuser_rw", "testpass", "rules004").await;
    let mut other = connect_to(&w, WEIR_USER, WEIR_PASS, "rules004").await;
    // (table, routed to hostgroup 600?, rules hit).
    let cases: [(u32, bool, &[u32]); 7] = [
        // sbtest1. → flagOUT 1100; rule 13 (sbtest12) of that chain applies.
        (12, true, &[3, 13]),
        // sbtest. → flagOUT 1000: no rule has flagIN 1000, default hostgroup.
        (1, false, &[2]),
        (5, false, &[2]),
        // sbtest2. → flagOUT 1200: no rule has flagIN 1200.
        (25, false, &[4]),
        // The catch-all first rule: > sbtest100 ...
        (151, true, &[1]),
        (1234, true, &[1]),
        // ... as written: its last digit is [1-9], so sbtest150 matches nothing.
        (150, false, &[]),
    ];
    for (n, to_600, rules) in cases {
        let before = hits(&w);
        let p = port_of(&mut rw, &format!("SELECT @@port FROM sbtest{n}")).await;
        let want = if to_600 { hg600 } else { primary() };
        assert_eq!(p, want, "sbtest{n}: routed to {p}");
        let got: Vec<u32> = hits_delta(&before, &hits(&w)).into_keys().collect();
        assert_eq!(got, rules, "rules hit by sbtest{n}");
        // The rules are testuser_rw's: another user's query goes to its default hostgroup.
        assert_eq!(
            port_of(&mut other, &format!("SELECT @@port FROM sbtest{n}")).await,
            primary()
        );
    }
    drop((rw, other));
}

/// Seed 002's "binary search" rules, after its base case (one rule per shard), with the
/// seed's hostgroups 2, 3 and 999 added through the admin (2 = first replica, 3 = second,
/// 999 = the primary). The digest table's hostgroup column tells 0 and 999 apart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_002_binary_search_chains_route_as_written() {
    let w = start("");
    let (r1, r2) = (replicas()[0], replicas()[1]);
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (2, '127.0.0.1', {r1}), (3, '127.0.0.1', {r2}), (999, '127.0.0.1', {});
LOAD MYSQL SERVERS TO RUNTIME;",
            primary()
        ),
    );
    // Base case.
    admin(
        &w,
        r"insert into mysql_query_rules (active,match_pattern,apply,destination_hostgroup) values (1,'\/\* 000',1,0);
insert into mysql_query_rules (active,match_pattern,apply,destination_hostgroup) values (1,'\/\* 001',1,0);
insert into mysql_query_rules (active,match_pattern,apply,destination_hostgroup) values (1,'\/\* 002',1,0);
insert into mysql_query_rules (active,match_pattern,apply,destination_hostgroup) values (1,'\/\* 003',1,0);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    for shard in 0..4u32 {
        let before = hits(&w);
        let p = port_of(&mut c, &format!("/* {shard:03} */ select @@port")).await;
        assert_eq!(p, primary());
        assert_eq!(
            hits_delta(&before, &hits(&w)),
            BTreeMap::from([(shard + 1, 1)]),
            "shard {shard:03}"
        );
    }

    // Binary search.
    admin(
        &w,
        r"DELETE FROM mysql_query_rules;
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* [0-1]',0,01,0,999);
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* 0' ,01, 0,1, 0);
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* 1' ,01, 0,1, 1);
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* 2' , 0, 0,1, 2);
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* 3' , 0, 0,1, 3);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let ids: BTreeMap<String, u32> = table(
        &w,
        "SELECT rule_id, match_pattern FROM runtime_mysql_query_rules",
    )
    .into_iter()
    .map(|r| (r["match_pattern"].clone(), r["rule_id"].parse().unwrap()))
    .collect();
    assert_eq!(ids.len(), 5, "{ids:?}");
    let id = |p: &str| ids[p];
    let (split, s0, s1, s2, s3) = (
        id(r"\/\* [0-1]"),
        id(r"\/\* 0"),
        id(r"\/\* 1"),
        id(r"\/\* 2"),
        id(r"\/\* 3"),
    );
    // (shard, ports it may land on, hostgroup, rules hit).
    let cases: Vec<(u32, Vec<u16>, u32, Vec<u32>)> = vec![
        (0, vec![primary()], 0, vec![split, s0]),
        (42, vec![primary()], 0, vec![split, s0]),
        (100, replicas(), 1, vec![split, s1]),
        (199, replicas(), 1, vec![split, s1]),
        (200, vec![r1], 2, vec![s2]),
        (250, vec![r1], 2, vec![s2]),
        (300, vec![r2], 3, vec![s3]),
        (400, vec![primary()], 0, vec![]),
    ];
    for (shard, ports, hostgroup, rules) in cases {
        let before = hits(&w);
        let p = port_of(
            &mut c,
            &format!("/* {shard:03} */ select @@port AS s{shard:03}"),
        )
        .await;
        assert!(ports.contains(&p), "shard {shard:03} went to {p}");
        let got: Vec<u32> = hits_delta(&before, &hits(&w)).into_keys().collect();
        assert_eq!(got, rules, "rules hit by shard {shard:03}");
        // 999 is only a waypoint: apply stops in the flag-1 chain, whose rule overrides it.
        let hgs = table(
            &w,
            &format!(
                "SELECT hostgroup FROM stats_mysql_query_digest WHERE digest_text = 'select @@port AS s{shard:03}'"
            ),
        );
        assert_eq!(
            hgs.iter()
                .map(|r| r["hostgroup"].as_str())
                .collect::<Vec<_>>(),
            [hostgroup.to_string()],
            "shard {shard:03}"
        );
    }
    drop(c);
}

/// flagOUT with mysql-query_processor_iterations = 0 (the default) continues in the new chain
/// after the matching rule's rule_id; with 1, the first flagOUT restarts at the new chain's
/// first rule.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flag_out_ordering_and_query_processor_iterations() {
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, flagIN, match_pattern, flagOUT, apply) VALUES (10, 1, 0, 'AS ordering$', 7, 0);
INSERT INTO mysql_query_rules (rule_id, active, flagIN, match_pattern, destination_hostgroup, apply) VALUES (5, 1, 7, 'AS ordering$', 1, 1);
INSERT INTO mysql_query_rules (rule_id, active, flagIN, match_pattern, destination_hostgroup, apply) VALUES (20, 1, 7, 'AS ordering$', 0, 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    let before = hits(&w);
    assert_eq!(
        port_of(&mut c, "SELECT @@port AS ordering").await,
        primary()
    );
    let after = hits(&w);
    assert_eq!(
        hits_delta(&before, &after),
        BTreeMap::from([(10, 1), (20, 1)])
    );
    admin(
        &w,
        "SET mysql-query_processor_iterations = 1; LOAD MYSQL VARIABLES TO RUNTIME;",
    );
    assert!(replicas().contains(&port_of(&mut c, "SELECT @@port AS ordering").await));
    assert_eq!(
        hits_delta(&after, &hits(&w)),
        BTreeMap::from([(5, 1), (10, 1)])
    );
    drop(c);
}

/// replace_pattern: the client gets the rewritten query's result; capture groups; GLOBAL;
/// later rules see the rewritten text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replace_pattern_rewrites() {
    let w = start("");
    admin(
        &w,
        r"INSERT INTO mysql_query_rules (rule_id, active, match_pattern, replace_pattern, apply) VALUES (10, 1, '^SELECT 1111$', 'SELECT 2222', 0);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) VALUES (11, 1, '^SELECT 2222$', 1, 1);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, replace_pattern, apply) VALUES (20, 1, '^SELECT (\d+) AS a, (\d+) AS b$', 'SELECT \2 AS a, \1 AS b', 1);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, replace_pattern, re_modifiers, apply) VALUES (30, 1, 'aaa', 'bbb', 'CASELESS,GLOBAL', 1);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, replace_pattern, apply) VALUES (40, 1, 'zzz', 'yyy', 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    let before = hits(&w);
    let v: Option<i64> = c.query_first("SELECT 1111").await.unwrap();
    assert_eq!(v, Some(2222));
    // Rule 11 matched the rewritten text.
    assert_eq!(
        hits_delta(&before, &hits(&w)),
        BTreeMap::from([(10, 1), (11, 1)])
    );
    let v: Option<(i64, i64)> = c.query_first("SELECT 7 AS a, 8 AS b").await.unwrap();
    assert_eq!(v, Some((8, 7)));
    let v: Option<(String, String)> = c.query_first("SELECT 'aaa', 'AAA'").await.unwrap();
    assert_eq!(v, Some(("bbb".into(), "bbb".into())));
    let v: Option<(String, String)> = c.query_first("SELECT 'zzz', 'zzz'").await.unwrap();
    assert_eq!(v, Some(("yyy".into(), "zzz".into())));
    // Unmatched queries are untouched.
    let v: Option<i64> = c.query_first("SELECT 1112").await.unwrap();
    assert_eq!(v, Some(1112));
    // The digest is the original query's: `SELECT ?` in hostgroup 1 can only be 1111.
    let rows = table(
        &w,
        "SELECT count_star FROM stats_mysql_query_digest WHERE digest_text = 'SELECT ?' AND hostgroup = 1",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["count_star"], "1");
    drop(c);
}

/// Times `n` runs of `sql` on `c`, in milliseconds, sorted.
async fn timed(c: &mut Conn, sql: &str, n: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        c.query_drop(sql).await.unwrap();
        v.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    v.sort_by(f64::total_cmp);
    v
}

/// A rule's delay slows the queries it matches only; mysql-default_query_delay slows every
/// query, and a matching rule's delay adds to it (as in ProxySQL, where seed 002's rules with
/// `delay = 0` leave the default delay in force).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rule_delay_and_default_delay() {
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, delay, apply) VALUES (1, 1, 'slow_one', 50, 1);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, delay, apply) VALUES (2, 1, 'zero_one', 0, 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    let slow = timed(&mut c, "SELECT 'slow_one'", 20).await;
    let fast = timed(&mut c, "SELECT 'fast_one'", 20).await;
    let zero = timed(&mut c, "SELECT 'zero_one'", 20).await;
    assert!(slow[0] >= 40.0, "every delayed query waits: {slow:?}");
    // Upper bounds on medians only, well under the 50 ms delay: a stall on a busy machine
    // may slow a few queries, not most of them.
    let median = |v: &[f64]| v[v.len() / 2];
    assert!(median(&fast) < 35.0, "others stay fast: {fast:?}");
    assert!(median(&zero) < 35.0, "delay 0 is no delay: {zero:?}");

    admin(
        &w,
        "SET mysql-default_query_delay = 30; LOAD MYSQL VARIABLES TO RUNTIME;",
    );
    let fast = timed(&mut c, "SELECT 'fast_one'", 10).await;
    assert!(fast[0] >= 25.0, "the default delay applies: {fast:?}");
    let zero = timed(&mut c, "SELECT 'zero_one'", 10).await;
    assert!(
        zero[0] >= 25.0,
        "a rule's delay 0 keeps the default: {zero:?}"
    );
    let slow = timed(&mut c, "SELECT 'slow_one'", 10).await;
    assert!(slow[0] >= 75.0, "default + rule delay: {slow:?}");
    drop(c);
}

/// error_msg refuses a query without a backend; OK_msg answers OK the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_msg_and_ok_msg_answer_without_a_backend() {
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, error_msg, apply) VALUES (1, 1, '^DELETE FROM precious', 'Refused by weir: use the archive job', 1);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, OK_msg, apply) VALUES (2, 1, '^SET weird_knob', 'ignored', 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    let q0 = pool_queries(&w);
    for _ in 0..3 {
        let e = c
            .query_drop("DELETE FROM precious WHERE id = 1")
            .await
            .unwrap_err();
        assert_eq!(
            server_code(&e),
            Some((1148, "Refused by weir: use the archive job".into())),
            "{e}"
        );
    }
    c.query_drop("SET weird_knob = 1").await.unwrap();
    assert_eq!(c.info(), "ignored");
    assert_eq!(pool_queries(&w), q0, "no statement reached a backend");
    assert_eq!(
        hits(&w),
        BTreeMap::from([(1, 3), (2, 1)]),
        "both rules matched"
    );
    // The session goes on; a real statement does reach a backend (the check above can fail).
    let v: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(v, Some(1));
    assert_eq!(pool_queries(&w), q0 + 1);
    drop(c);
}

/// error_msg and OK_msg apply to prepared statements too: a refused statement is not run by
/// preparing it and executing it, whether the rule was there at its prepare or loaded since.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_msg_and_ok_msg_apply_to_prepared_statements() {
    let w = start("");
    let primary_sql = |sql: &str| common::topo().primary.query_rows(sql).unwrap();
    primary_sql("CREATE TABLE IF NOT EXISTS weirtest.precious_ps (id INT PRIMARY KEY)");
    primary_sql("INSERT IGNORE INTO weirtest.precious_ps VALUES (1), (2)");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, error_msg, apply) VALUES (1, 1, '^DELETE FROM weirtest.precious_ps', 'Refused by weir', 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    let delete = c
        .prep("DELETE FROM weirtest.precious_ps WHERE id = ?")
        .await
        .unwrap();
    let update = c
        .prep("UPDATE weirtest.precious_ps SET id = id WHERE id = ?")
        .await
        .unwrap();
    for id in [1, 2] {
        let e = c.exec_drop(&delete, (id,)).await.unwrap_err();
        assert_eq!(
            server_code(&e),
            Some((1148, "Refused by weir".into())),
            "{e}"
        );
    }
    let left = || primary_sql("SELECT COUNT(*) FROM weirtest.precious_ps")[0][0].clone();
    assert_eq!(left(), "2");
    // A rule loaded after the prepare applies from the next execution.
    c.exec_drop(&update, (1,)).await.unwrap();
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, OK_msg, apply) VALUES (2, 1, '^UPDATE weirtest.precious_ps', 'not today', 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    c.exec_drop(&update, (1,)).await.unwrap();
    assert_eq!(c.info(), "not today");
    // The session goes on.
    let v: Option<i64> = c.query_first("SELECT 1").await.unwrap();
    assert_eq!(v, Some(1));
    assert_eq!(left(), "2");
    drop(c);
}

/// A rule that does not compile refuses the whole LOAD, naming it; the runtime keeps the
/// rules in force, which go on routing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_regex_refuses_the_load_and_keeps_the_runtime() {
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) VALUES (1, 1, 'AS good$', 1, 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    admin(
        &w,
        r"INSERT INTO mysql_query_rules (rule_id, active, match_pattern, apply) VALUES (7, 1, '(', 1);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, apply) VALUES (8, 1, 'foo(?=bar)', 1);
INSERT INTO mysql_query_rules (rule_id, active, match_digest, apply) VALUES (9, 1, '(a)\1', 1);",
    );
    let err = admin_err(&w, "LOAD MYSQL QUERY RULES TO RUNTIME");
    for id in ["rule 7", "rule 8", "rule 9"] {
        assert!(err.contains(id), "{id} not named in: {err}");
    }
    assert!(err.contains("match_pattern"), "{err}");
    assert_eq!(
        value(
            &w,
            "SELECT GROUP_CONCAT(rule_id) FROM runtime_mysql_query_rules"
        ),
        "1"
    );
    let mut c = connect(&w).await;
    assert!(replicas().contains(&port_of(&mut c, "SELECT @@port AS good").await));
    assert_eq!(port_of(&mut c, "SELECT @@port AS other").await, primary());
    // Nor are they saved: weir would not start from that disk.
    let on_disk = || value(&w, "SELECT COUNT(*) FROM disk.mysql_query_rules");
    let saved = on_disk();
    let err = admin_err(&w, "SAVE MYSQL QUERY RULES TO DISK");
    assert!(
        err.contains("disk unchanged") && err.contains("rule 7"),
        "{err}"
    );
    assert_eq!(on_disk(), saved);
    // Fixed, it loads and saves.
    admin(
        &w,
        "DELETE FROM mysql_query_rules WHERE rule_id > 1; LOAD MYSQL QUERY RULES TO RUNTIME; SAVE MYSQL QUERY RULES TO DISK;",
    );
    assert_eq!(on_disk(), "1");
    drop(c);
}

/// next_query_flagIN: the session's next query starts in that chain, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_query_flag_in_applies_to_the_next_query() {
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, next_query_flagIN, apply) VALUES (1, 1, '^SELECT ''next''$', 5, 1);
INSERT INTO mysql_query_rules (rule_id, active, flagIN, match_pattern, destination_hostgroup, apply) VALUES (2, 1, 5, '@@port', 1, 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary());
    c.query_drop("SELECT 'next'").await.unwrap();
    assert!(replicas().contains(&port_of(&mut c, "SELECT @@port").await));
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary());
    drop(c);
}

/// username, schemaname and client_addr (with `%`) criteria.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn username_schemaname_and_client_addr_criteria() {
    let w = start("");
    let r2 = replicas()[1];
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (2, '127.0.0.1', {r2});
LOAD MYSQL SERVERS TO RUNTIME;
INSERT INTO mysql_query_rules (rule_id, active, username, match_pattern, destination_hostgroup, apply) VALUES (1, 1, 'weir_ed', '@@port', 1, 1);
INSERT INTO mysql_query_rules (rule_id, active, schemaname, match_pattern, destination_hostgroup, apply) VALUES (2, 1, 'sbtest', '@@port', 1, 1);
INSERT INTO mysql_query_rules (rule_id, active, client_addr, match_pattern, destination_hostgroup, apply) VALUES (3, 1, '10.%', 'by_addr', 1, 1);
INSERT INTO mysql_query_rules (rule_id, active, client_addr, match_pattern, destination_hostgroup, apply) VALUES (4, 1, '127.0.%', 'by_addr', 2, 1);
LOAD MYSQL QUERY RULES TO RUNTIME;"
        ),
    );
    let mut c = connect(&w).await;
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary());
    let mut ed = connect_to(&w, ED_USER, ED_PASS, "weirtest").await;
    assert!(replicas().contains(&port_of(&mut ed, "SELECT @@port").await));
    c.query_drop("USE sbtest").await.unwrap();
    assert!(replicas().contains(&port_of(&mut c, "SELECT @@port").await));
    c.query_drop("USE weirtest").await.unwrap();
    assert_eq!(port_of(&mut c, "SELECT @@port").await, primary());
    // 127.0.0.1 is not in 10.%, it is in 127.0.%: hostgroup 2, the second replica.
    assert_eq!(port_of(&mut c, "SELECT @@port AS by_addr").await, r2);
    drop((c, ed));
}

/// negate_match_pattern: the rule matches the queries its pattern does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negate_match_pattern() {
    let w = start("");
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, negate_match_pattern, destination_hostgroup, apply) VALUES (1, 1, 'FOR UPDATE$', 1, 1, 1);
LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    let mut c = connect(&w).await;
    let before = hits(&w);
    assert!(replicas().contains(&port_of(&mut c, "SELECT @@port").await));
    assert_eq!(port_of(&mut c, "SELECT @@port FOR UPDATE").await, primary());
    assert_eq!(hits_delta(&before, &hits(&w)), BTreeMap::from([(1, 1)]));
    drop(c);
}
