//! The admin interface end to end, as DBAs use it: the real `mariadb` CLI (and mysql_async)
//! against weir's admin port, every admin statement of the seeds verbatim, reloads under
//! sysbench load, persistence across `kill -9`, constraints, the stats user, the stats tables,
//! PAUSE / RESUME / SHUTDOWN, draining a removed server, LOAD FROM CONFIG and a corrupt
//! database file.
//!
//! Every test starts its own weir (client and admin port free ports) in front of the shared
//! topology, so that what one test loads does not disturb another.
#![allow(clippy::unwrap_used)]
mod common;

use common::admin::{parse_table, Row};
use common::{opts_for, topo, weir_bin};
use mysql_async::prelude::*;
use mysql_async::Conn;
use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};
use weir_testkit::{free_port, require_binary, weir_config, WeirProcess, WEIR_PASS, WEIR_USER};

/// A weir in front of the shared topology with its admin interface on a free port.
fn start(extra_vars: &str) -> WeirProcess {
    let cfg = weir_config(topo(), free_port(), free_port(), extra_vars);
    WeirProcess::spawn(&weir_bin(), &cfg).unwrap_or_else(|e| panic!("weir did not start: {e}"))
}

struct CliOut {
    ok: bool,
    stdout: String,
    stderr: String,
}

/// The mariadb CLI as a DBA runs it: `mariadb -h127.0.0.1 -PPORT -uUSER -pPASS -e "SQL"`.
/// The CLI splits `sql` on `;` and sends the statements one by one, stopping at the first error.
fn mariadb(port: u16, user: &str, pass: &str, args: &[&str], sql: &str) -> CliOut {
    let out = Command::new(require_binary("mariadb"))
        .args(["-h", "127.0.0.1", "-P", &port.to_string(), "-u", user])
        .arg(format!("-p{pass}"))
        .args(["--protocol=TCP", "--ssl=0", "--connect-timeout=10"])
        .args(args)
        .args(["-e", sql])
        .output()
        .unwrap();
    CliOut {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `sql` as `user` on the admin port (batch output with column names, no escaping);
/// panics with the CLI's and weir's words if any statement fails.
fn admin_as(w: &WeirProcess, user: &str, pass: &str, sql: &str) -> String {
    let o = mariadb(w.admin_port, user, pass, &["--batch", "--raw"], sql);
    assert!(
        o.ok,
        "admin statement failed: {sql}\n{}\nweir:\n{}",
        o.stderr,
        w.stderr_tail(20)
    );
    o.stdout
}

/// Runs `sql` as admin; returns the CLI's output.
fn admin(w: &WeirProcess, sql: &str) -> String {
    admin_as(w, "admin", "admin", sql)
}

/// The rows of `sql` (run as admin) as column → value maps; NULL reads `NULL`.
fn table(w: &WeirProcess, sql: &str) -> Vec<Row> {
    parse_table(&admin(w, sql))
}

/// The records of `\G` output as column → value maps.
fn parse_vertical(out: &str) -> Vec<Row> {
    let mut records: Vec<Row> = Vec::new();
    for line in out.lines() {
        if line.starts_with("***") {
            records.push(Row::new());
        } else if let (Some(rec), Some((k, v))) = (records.last_mut(), line.split_once(": ")) {
            rec.insert(k.trim().to_string(), v.to_string());
        }
    }
    records
}

/// The one value `sql` returns.
fn value(w: &WeirProcess, sql: &str) -> String {
    let rows = table(w, sql);
    assert_eq!(rows.len(), 1, "{sql} returned {rows:?}");
    rows[0].values().next().cloned().unwrap()
}

/// Column `col` of every row.
fn column(rows: &[Row], col: &str) -> Vec<String> {
    rows.iter()
        .map(|r| {
            r.get(col)
                .cloned()
                .unwrap_or_else(|| panic!("no column {col} in {r:?}"))
        })
        .collect()
}

/// Code and message of the CLI's `ERROR nnnn (state) ...: message`.
fn parse_err(stderr: &str) -> (u16, String) {
    let at = stderr
        .find("ERROR ")
        .unwrap_or_else(|| panic!("no ERROR in: {stderr}"));
    let rest = &stderr[at + 6..];
    let code = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no error code in: {stderr}"));
    let msg = rest.split_once(": ").map_or("", |(_, m)| m).trim();
    (code, msg.to_string())
}

/// Runs `sql` as `user`, which must fail: returns the error's code and message.
fn admin_err_as(w: &WeirProcess, user: &str, pass: &str, sql: &str) -> (u16, String) {
    let o = mariadb(w.admin_port, user, pass, &["--batch", "--raw"], sql);
    assert!(!o.ok, "expected an error from {sql}, got:\n{}", o.stdout);
    parse_err(&o.stderr)
}

fn admin_err(w: &WeirProcess, sql: &str) -> (u16, String) {
    admin_err_as(w, "admin", "admin", sql)
}

/// Runs `sql` through weir's client port as the test user.
fn client(w: &WeirProcess, sql: &str) -> CliOut {
    mariadb(
        w.port,
        WEIR_USER,
        WEIR_PASS,
        &["--batch", "--raw", "-N", "-D", "weirtest"],
        sql,
    )
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(t.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn server_code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(s) => Some(s.code),
        _ => None,
    }
}

async fn connect(w: &WeirProcess, user: &str, pass: &str) -> Conn {
    Conn::new(opts_for(w.port, user, pass, Some("weirtest")))
        .await
        .unwrap_or_else(|e| {
            panic!(
                "connect through weir as {user} failed: {e}\n{}",
                w.stderr_tail(20)
            )
        })
}

/// The hostgroup/port/weight of each row of a mysql_servers-like table, sorted.
fn servers_of(w: &WeirProcess, t: &str) -> Vec<(String, String, String, String)> {
    let mut v: Vec<_> = table(
        w,
        &format!("SELECT hostgroup_id, hostname, port, weight FROM {t}"),
    )
    .into_iter()
    .map(|r| {
        (
            r["hostgroup_id"].clone(),
            r["hostname"].clone(),
            r["port"].clone(),
            r["weight"].clone(),
        )
    })
    .collect();
    v.sort();
    v
}

/// The servers of the generated config: primary in hostgroup 0, replicas in 1, weight 1.
fn config_servers() -> Vec<(String, String, String, String)> {
    let mut v: Vec<_> = std::iter::once((&topo().primary, 0))
        .chain(topo().replicas.iter().map(|r| (r, 1)))
        .map(|(s, hg)| {
            (
                hg.to_string(),
                "127.0.0.1".to_string(),
                s.port.to_string(),
                "1".to_string(),
            )
        })
        .collect();
    v.sort();
    v
}

fn users_of(w: &WeirProcess, t: &str) -> Vec<String> {
    let mut v = column(
        &table(w, &format!("SELECT username FROM {t} ORDER BY username")),
        "username",
    );
    v.dedup();
    v
}

fn variable(w: &WeirProcess, t: &str, name: &str) -> String {
    value(
        w,
        &format!("SELECT variable_value FROM {t} WHERE variable_name = '{name}'"),
    )
}

// ---------------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_chatter_and_show_statements() {
    let w = start("");
    let v = value(&w, "select @@version_comment limit 1");
    assert!(v.contains("weir"), "{v}");
    assert_eq!(value(&w, "SELECT DATABASE()"), "main");
    admin(&w, "SET NAMES utf8");

    let out = admin(&w, "SHOW DATABASES");
    assert_eq!(out.lines().next(), Some("seq\tname\tfile"), "{out}");
    let dbs = parse_table(&out);
    assert_eq!(
        column(&dbs, "name"),
        ["main", "disk", "stats", "monitor"],
        "{out}"
    );
    let disk_file = &dbs[1]["file"];
    assert!(
        disk_file.ends_with("weir.db") && disk_file.contains(w.datadir.to_str().unwrap()),
        "{out}"
    );

    let tables = column(&table(&w, "SHOW TABLES"), "tables");
    for t in [
        "mysql_servers",
        "mysql_users",
        "mysql_query_rules",
        "global_variables",
        "mysql_collations",
        "mysql_replication_hostgroups",
        "runtime_mysql_servers",
        "runtime_mysql_users",
        "runtime_mysql_query_rules",
        "runtime_global_variables",
    ] {
        assert!(tables.iter().any(|x| x == t), "{t} missing from {tables:?}");
    }
    let stats = column(&table(&w, "SHOW TABLES FROM stats"), "tables");
    for t in [
        "stats_mysql_global",
        "stats_mysql_processlist",
        "stats_mysql_commands_counters",
        "stats_mysql_users",
        "stats_mysql_errors",
        "stats_mysql_connection_pool",
        "stats_mysql_connection_pool_reset",
        "stats_mysql_query_digest",
        "stats_mysql_query_digest_reset",
        "stats_mysql_query_rules",
    ] {
        assert!(stats.iter().any(|x| x == t), "{t} missing from {stats:?}");
    }
    assert!(!stats.iter().any(|x| x == "mysql_servers"), "{stats:?}");
    assert_eq!(
        column(
            &table(&w, "SHOW TABLES FROM stats LIKE '%connection\\_pool%'"),
            "tables"
        ),
        [
            "stats_mysql_connection_pool",
            "stats_mysql_connection_pool_reset"
        ]
    );
    let (code, msg) = admin_err(&w, "SHOW TABLES WHERE 1");
    assert_eq!(code, 1064, "{msg}");
    assert!(msg.contains("LIKE 'pattern'"), "{msg}");
    let monitor = column(&table(&w, "SHOW TABLES FROM monitor"), "tables");
    for t in [
        "mysql_server_connect_log",
        "mysql_server_ping_log",
        "mysql_server_read_only_log",
        "mysql_server_replication_lag_log",
    ] {
        assert!(
            monitor.iter().any(|x| x == t),
            "{t} missing from {monitor:?}"
        );
    }

    let out = admin(&w, "SHOW CREATE TABLE mysql_users\\G");
    let rec = parse_vertical(&out);
    assert_eq!(rec.len(), 1, "{out}");
    assert_eq!(rec[0]["table"], "mysql_users", "{out}");
    for part in [
        "CREATE TABLE",
        "username VARCHAR NOT NULL",
        "transaction_persistent",
        "PRIMARY KEY (username, backend)",
        "UNIQUE (username, frontend)",
    ] {
        assert!(out.contains(part), "{part} not in {out}");
    }
    let out = admin(&w, "SHOW CREATE TABLE mysql_servers\\G");
    assert_eq!(parse_vertical(&out)[0]["table"], "mysql_servers", "{out}");
    for part in [
        "hostgroup_id INT NOT NULL",
        "hostname VARCHAR NOT NULL",
        "max_replication_lag",
        "PRIMARY KEY (hostgroup_id, hostname, port)",
    ] {
        assert!(out.contains(part), "{part} not in {out}");
    }

    // All of it in one CLI session, as a DBA's paste would do.
    let out = admin(
        &w,
        "select @@version_comment limit 1; SELECT DATABASE(); SET NAMES utf8; USE stats; \
         SELECT DATABASE(); SHOW TABLES; USE main; SELECT COUNT(*) AS n FROM mysql_servers",
    );
    assert!(out.contains("\nstats\n"), "{out}");
    assert!(out.contains("stats_mysql_global"), "{out}");
    assert!(out.ends_with("n\n3\n"), "{out}");

    // A driver's own connect chatter (mysql_async reads @@max_allowed_packet, @@wait_timeout).
    let mut c = Conn::new(opts_for(w.admin_port, "admin", "admin", None))
        .await
        .unwrap_or_else(|e| panic!("mysql_async as admin: {e}\n{}", w.stderr_tail(20)));
    let servers: Vec<(u32, String, u16)> = c
        .query("SELECT hostgroup_id, hostname, port FROM mysql_servers ORDER BY hostgroup_id, port")
        .await
        .unwrap();
    let mut expected: Vec<(u32, String, u16)> = std::iter::once((0, topo().primary.port))
        .chain(topo().replicas.iter().map(|r| (1, r.port)))
        .map(|(hg, p)| (hg, "127.0.0.1".to_string(), p))
        .collect();
    expected.sort();
    assert_eq!(servers, expected);
    let db: Option<String> = c.query_first("SELECT DATABASE()").await.unwrap();
    assert_eq!(db.as_deref(), Some("main"));
    let e = c.query_drop("SELEC 1").await.unwrap_err();
    assert_eq!(server_code(&e), Some(1064), "{e}");
    let n: Option<u32> = c
        .query_first("SELECT COUNT(*) FROM mysql_users")
        .await
        .unwrap();
    assert_eq!(n, Some(2), "the connection stays usable after an error");
    // Statements with a leading comment, as drivers send their own (Connector/J prefixes
    // `/* mysql-connector-java-... */`), are answered as without it; a comment alone is an
    // empty query.
    let v: Option<String> = c
        .query_first("/* mysql-connector-java-9.5.0 */SELECT @@version_comment")
        .await
        .unwrap();
    assert!(v.is_some_and(|v| v.contains("weir")));
    let db: Option<String> = c.query_first("/* c */ SELECT DATABASE()").await.unwrap();
    assert_eq!(db.as_deref(), Some("main"));
    let dbs: Vec<(u32, String, String)> = c.query("-- c\nSHOW DATABASES").await.unwrap();
    assert_eq!(dbs.len(), 4);
    let e = c.query_drop("-- nothing else").await.unwrap_err();
    assert_eq!(server_code(&e), Some(1065), "{e}");
    // disk's tables can be listed; names quoted part by part; DESCRIBE.
    let disk: Vec<String> = c.query("SHOW TABLES FROM disk").await.unwrap();
    assert!(disk.iter().any(|t| t == "mysql_servers"), "{disk:?}");
    let (name, _): (String, String) = c
        .query_first("SHOW CREATE TABLE `main`.`mysql_servers`")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(name, "mysql_servers");
    let columns: Vec<(String, String, String, String, Option<String>, String)> =
        c.query("DESCRIBE disk.mysql_servers").await.unwrap();
    let key: Vec<&str> = columns
        .iter()
        .filter(|c| c.3 == "PRI")
        .map(|c| c.0.as_str())
        .collect();
    assert_eq!(key, ["hostgroup_id", "hostname", "port"], "{columns:?}");
    let status = columns.iter().find(|c| c.0 == "status").unwrap();
    assert_eq!(status.4.as_deref(), Some("ONLINE"), "{columns:?}");
    let e = c.query_drop("DESCRIBE no_such_table").await.unwrap_err();
    assert_eq!(server_code(&e), Some(1146), "{e}");
    // Versioned comments run (mariadb-admin's `show /*!40003 GLOBAL */ variables`), and
    // SHOW MYSQL STATUS takes LIKE. mysql_async sends the text as typed.
    let rows: Vec<(String, String)> = c.query("show /*!40003 GLOBAL */ variables").await.unwrap();
    assert!(rows.is_empty(), "{rows:?}");
    let one: Option<u32> = c.query_first("SELECT /*!40101 1 + */ 1").await.unwrap();
    assert_eq!(one, Some(2));
    let rows: Vec<(String, String)> = c
        .query("SHOW MYSQL STATUS LIKE 'query_cache_count%'")
        .await
        .unwrap();
    let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| n.starts_with("Query_Cache_count")),
        "{names:?}"
    );
    c.disconnect().await.unwrap();
}

#[test]
fn seed_003_tutorial_verbatim() {
    // The tutorial's servers are fake 192.168.124.x addresses: this weir never gets client
    // traffic, so it never connects to them (the pool connects on demand only).
    let w = start("");
    admin(&w, "SHOW DATABASES;");
    admin(&w, "SHOW TABLES;");
    let users = table(&w, "SELECT * FROM mysql_users;");
    assert_eq!(column(&users, "username"), ["weir", "weir_ed"]);
    assert_eq!(table(&w, "SELECT * FROM mysql_servers;").len(), 3);

    // Configure backends.
    admin(
        &w,
        "INSERT INTO mysql_servers(hostgroup_id, hostname, port) VALUES (0,'192.168.124.101',3306);",
    );
    admin(
        &w,
        "INSERT INTO mysql_servers(hostgroup_id, hostname, port) VALUES (1,'192.168.124.102',3306);",
    );
    admin(
        &w,
        "INSERT INTO mysql_servers(hostgroup_id, hostname, port) VALUES (1,'192.168.124.103',3306);",
    );
    let servers = table(&w, "SELECT * FROM mysql_servers;");
    let fake: Vec<&Row> = servers
        .iter()
        .filter(|r| r["hostname"].starts_with("192.168.124."))
        .collect();
    assert_eq!(fake.len(), 3, "{servers:?}");
    for (r, (hg, host)) in fake.iter().zip([
        ("0", "192.168.124.101"),
        ("1", "192.168.124.102"),
        ("1", "192.168.124.103"),
    ]) {
        assert_eq!(r["hostgroup_id"], hg);
        assert_eq!(r["hostname"], host);
        assert_eq!(r["port"], "3306");
        assert_eq!(r["status"], "ONLINE");
        assert_eq!(r["weight"], "1");
        assert_eq!(r["compression"], "0");
        assert_eq!(r["max_connections"], "1000");
        assert_eq!(r["max_replication_lag"], "0");
    }
    admin(&w, "LOAD MYSQL SERVERS TO RUNTIME;");
    let runtime = servers_of(&w, "runtime_mysql_servers");
    assert_eq!(runtime.len(), 6, "{runtime:?}");
    assert!(
        runtime
            .iter()
            .any(|s| s.0 == "0" && s.1 == "192.168.124.101" && s.2 == "3306"),
        "{runtime:?}"
    );
    let disk = table(&w, "SELECT * FROM disk.mysql_servers;");
    assert_eq!(disk.len(), 3, "not saved yet: {disk:?}");
    assert!(!column(&disk, "hostname")
        .iter()
        .any(|h| h.starts_with("192.168.124.")));
    admin(&w, "SAVE MYSQL SERVERS TO DISK;");
    let disk = table(&w, "SELECT * FROM disk.mysql_servers;");
    assert_eq!(disk.len(), 6, "{disk:?}");
    assert_eq!(
        column(&disk, "hostname")
            .iter()
            .filter(|h| h.starts_with("192.168.124."))
            .count(),
        3
    );

    // Configure users.
    admin(
        &w,
        "INSERT INTO mysql_users (username,password) VALUES ('utest','ptest');",
    );
    let recs = parse_vertical(&admin(&w, "SELECT * FROM mysql_users\\G"));
    let utest = recs
        .iter()
        .find(|r| r["username"] == "utest")
        .unwrap_or_else(|| panic!("{recs:?}"));
    for (k, v) in [
        ("password", "ptest"),
        ("active", "1"),
        ("use_ssl", "0"),
        ("default_hostgroup", "0"),
        ("default_schema", "NULL"),
        ("schema_locked", "0"),
        ("transaction_persistent", "1"),
        ("fast_forward", "0"),
        ("backend", "1"),
        ("frontend", "1"),
        ("max_connections", "10000"),
    ] {
        assert_eq!(utest[k], v, "{k} of {utest:?}");
    }
    admin(&w, "LOAD MYSQL USERS TO RUNTIME;");
    assert!(users_of(&w, "runtime_mysql_users").contains(&"utest".to_string()));
    assert!(!users_of(&w, "disk.mysql_users").contains(&"utest".to_string()));
    admin(&w, "SAVE MYSQL USERS TO DISK;");
    let recs = parse_vertical(&admin(&w, "SELECT * FROM disk.mysql_users\\G"));
    let utest = recs
        .iter()
        .find(|r| r["username"] == "utest")
        .unwrap_or_else(|| panic!("{recs:?}"));
    assert_eq!(utest["password"], "ptest");
    assert_eq!(utest["max_connections"], "10000");

    // Read/write split.
    assert_eq!(admin(&w, "SELECT * FROM mysql_query_rules\\G"), "");
    let out = admin(&w, "SHOW CREATE TABLE mysql_query_rules\\G");
    assert!(
        out.contains("rule_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL"),
        "{out}"
    );
    admin(
        &w,
        "INSERT INTO mysql_query_rules(active,match_pattern,destination_hostgroup,apply) VALUES(1,'^SELECT.*FOR UPDATE$',0,1);",
    );
    admin(
        &w,
        "INSERT INTO mysql_query_rules(active,match_pattern,destination_hostgroup,apply) VALUES(1,'^SELECT',1,1);",
    );
    let recs = parse_vertical(&admin(&w, "SELECT * FROM mysql_query_rules\\G"));
    assert_eq!(recs.len(), 2, "{recs:?}");
    assert_eq!(recs[0]["rule_id"], "1");
    assert_eq!(recs[0]["match_pattern"], "^SELECT.*FOR UPDATE$");
    assert_eq!(recs[0]["flagIN"], "0");
    assert_eq!(recs[0]["flagOUT"], "NULL");
    assert_eq!(recs[0]["cache_ttl"], "NULL");
    assert_eq!(recs[1]["rule_id"], "2");
    assert_eq!(recs[1]["destination_hostgroup"], "1");
    let out = admin(
        &w,
        "SELECT rule_id, match_pattern,destination_hostgroup hg_id, apply FROM mysql_query_rules WHERE active=1;",
    );
    assert_eq!(
        out,
        "rule_id\tmatch_pattern\thg_id\tapply\n1\t^SELECT.*FOR UPDATE$\t0\t1\n2\t^SELECT\t1\t1\n"
    );
    admin(&w, "LOAD MYSQL QUERY RULES TO RUNTIME;");
    admin(&w, "SAVE MYSQL QUERY RULES TO DISK;");
    assert_eq!(
        column(
            &table(
                &w,
                "SELECT rule_id FROM runtime_mysql_query_rules ORDER BY rule_id"
            ),
            "rule_id"
        ),
        ["1", "2"]
    );
    assert_eq!(
        value(&w, "SELECT COUNT(*) FROM disk.mysql_query_rules"),
        "2"
    );

    // Stats.
    let stats = column(&table(&w, "SHOW TABLES FROM stats;"), "tables");
    for t in [
        "stats_mysql_query_rules",
        "stats_mysql_commands_counters",
        "stats_mysql_processlist",
        "stats_mysql_connection_pool",
        "stats_mysql_query_digest",
        "stats_mysql_query_digest_reset",
        "stats_mysql_global",
    ] {
        assert!(stats.iter().any(|x| x == t), "{t} missing from {stats:?}");
    }
    let pool = table(&w, "SELECT * FROM stats_mysql_connection_pool;");
    let p101 = pool
        .iter()
        .find(|r| r["srv_host"] == "192.168.124.101")
        .unwrap_or_else(|| panic!("{pool:?}"));
    assert_eq!(p101["hostgroup"], "0");
    assert_eq!(p101["srv_port"], "3306");
    assert_eq!(p101["status"], "ONLINE");
    assert_eq!(p101["Queries"], "0");
    assert_eq!(
        p101["ConnOK"], "0",
        "weir must not connect to a server unasked"
    );
    for col in [
        "ConnUsed",
        "ConnFree",
        "ConnERR",
        "Bytes_data_sent",
        "Bytes_data_recv",
    ] {
        assert!(p101.contains_key(col), "{col} missing: {p101:?}");
    }
    let recs = parse_vertical(&admin(
        &w,
        "SELECT hostgroup, SUM(Queries), SUM(Bytes_data_sent), SUM(Bytes_data_recv) FROM stats_mysql_connection_pool GROUP BY hostgroup\\G",
    ));
    assert_eq!(column(&recs, "hostgroup"), ["0", "1"], "{recs:?}");
    assert_eq!(recs[0]["SUM(Queries)"], "0");
    assert!(recs[1].contains_key("SUM(Bytes_data_recv)"), "{recs:?}");
    admin(&w, "SELECT * FROM stats_mysql_query_digest;");
    admin(
        &w,
        "SELECT count_star, sum_time, digest_text FROM stats_mysql_query_digest WHERE digest_text LIKE 'SELECT%' ORDER BY sum_time DESC;",
    );

    // More granular read/write split.
    admin(&w, "DELETE FROM mysql_query_rules;");
    assert_eq!(value(&w, "SELECT COUNT(*) FROM mysql_query_rules"), "0");
    admin(
        &w,
        r"INSERT INTO mysql_query_rules(active,match_pattern,destination_hostgroup,apply) VALUES(1,'^SELECT c FROM sbtest1 WHERE id=\d+$',1,1);",
    );
    admin(
        &w,
        r"INSERT INTO mysql_query_rules(active,match_pattern,destination_hostgroup,apply) VALUES(1,'^SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN \d+ AND \d+\+\d+ ORDER BY c$',1,1);",
    );
    admin(&w, "LOAD MYSQL QUERY RULES TO RUNTIME;");
    admin(
        &w,
        "SELECT rule_id, hits, destination_hostgroup hg, match_pattern pattern FROM mysql_query_rules NATURAL JOIN stats_mysql_query_rules\\G",
    );
    let rt = table(
        &w,
        "SELECT rule_id, match_pattern, destination_hostgroup FROM runtime_mysql_query_rules ORDER BY rule_id",
    );
    assert_eq!(
        column(&rt, "rule_id"),
        ["3", "4"],
        "AUTOINCREMENT never reuses ids"
    );
    assert_eq!(
        column(&rt, "match_pattern"),
        [
            r"^SELECT c FROM sbtest1 WHERE id=\d+$",
            r"^SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN \d+ AND \d+\+\d+ ORDER BY c$"
        ]
    );
    assert_eq!(column(&rt, "destination_hostgroup"), ["1", "1"]);

    // Backends monitoring.
    let vars = table(
        &w,
        "SELECT * FROM global_variables WHERE variable_name IN ('mysql-monitor_username','mysql-monitor_password','mysql-monitor_connect_interval','mysql-monitor_ping_interval','mysql-monitor_history');",
    );
    let vars: BTreeMap<&str, &str> = vars
        .iter()
        .map(|r| (r["variable_name"].as_str(), r["variable_value"].as_str()))
        .collect();
    assert_eq!(vars.len(), 5, "{vars:?}");
    assert_eq!(vars["mysql-monitor_username"], "monitor");
    assert_eq!(vars["mysql-monitor_password"], "monitor");
    assert_eq!(vars["mysql-monitor_connect_interval"], "60000");
    assert_eq!(vars["mysql-monitor_ping_interval"], "10000");
    assert_eq!(vars["mysql-monitor_history"], "600000");
    admin(
        &w,
        r#"UPDATE global_variables SET variable_value="root" WHERE variable_name="mysql-monitor_username";"#,
    );
    admin(
        &w,
        r#"UPDATE global_variables SET variable_value="root" WHERE variable_name="mysql-monitor_password";"#,
    );
    assert_eq!(
        variable(&w, "runtime_global_variables", "mysql-monitor_username"),
        "monitor",
        "not loaded yet"
    );
    admin(&w, "LOAD MYSQL VARIABLES TO RUNTIME;");
    admin(&w, "SAVE MYSQL VARIABLES TO DISK;");
    for t in [
        "global_variables",
        "runtime_global_variables",
        "disk.global_variables",
    ] {
        assert_eq!(variable(&w, t, "mysql-monitor_username"), "root", "{t}");
        assert_eq!(variable(&w, t, "mysql-monitor_password"), "root", "{t}");
    }
    let monitor = column(&table(&w, "SHOW TABLES FROM monitor;"), "tables");
    assert!(monitor.iter().any(|t| t == "mysql_server_ping_log"));
    admin(
        &w,
        "SELECT * FROM monitor.mysql_server_ping_log ORDER BY time_start DESC;",
    );
    admin(
        &w,
        "SELECT * FROM monitor.mysql_server_connect_log ORDER BY time_start DESC;",
    );
    // Monitor is off in the test config: the logs are empty, but the 1.x columns resolve.
    admin(
        &w,
        "SELECT hostname,port, AVG(connect_success_time)/1000 avg_ms\n    FROM monitor.mysql_server_connect_log\n    WHERE connect_error IS NULL\n    GROUP BY hostname,port;",
    );
    let out = admin(
        &w,
        "SELECT hostname, port, time_start, ping_success_time, ping_error FROM monitor.mysql_server_ping_log LIMIT 1",
    );
    assert_eq!(out, "", "monitor is disabled: {out}");

    // More digest queries of the tutorial.
    admin(&w, "SELECT * FROM stats_mysql_connection_pool;");
    admin(
        &w,
        "SELECT max_time, digest_text FROM stats_mysql_query_digest ORDER BY max_time DESC LIMIT 3",
    );

    // Seed 003, lines 33-36 (the MaxScale comparison's rules, with explicit rule ids).
    admin(
        &w,
        "INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) VALUES(1,1,'^SELECT.*FOR UPDATE$', 1, 1);
INSERT INTO mysql_query_rules (rule_id, active, match_pattern, destination_hostgroup, apply) VALUES(2,1,'^SELECT', 2, 1);
LOAD MYSQL QUERY RULES TO RUNTIME;
SAVE MYSQL QUERY RULES TO DISK;",
    );
    let rt = table(
        &w,
        "SELECT rule_id, active, match_pattern, destination_hostgroup, apply FROM runtime_mysql_query_rules ORDER BY rule_id",
    );
    assert_eq!(column(&rt, "rule_id"), ["1", "2", "3", "4"], "{rt:?}");
    assert_eq!(rt[1]["match_pattern"], "^SELECT");
    assert_eq!(rt[1]["destination_hostgroup"], "2");
    assert_eq!(rt[1]["active"], "1");
    assert_eq!(
        value(&w, "SELECT COUNT(*) FROM disk.mysql_query_rules"),
        "4"
    );
}

#[test]
fn seed_002_throttling_and_multiplexing_verbatim() {
    let w = start("");
    // The lag script's modifyProxysqlVariable, as the script sends it.
    let o = mariadb(
        w.admin_port,
        "admin",
        "admin",
        &[],
        "set mysql-default_query_delay = 1 ; LOAD MYSQL VARIABLES TO RUNTIME;",
    );
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(
        value(
            &w,
            "SELECT variable_value FROM runtime_global_variables WHERE variable_name='mysql-default_query_delay'"
        ),
        "1"
    );
    // Traffic still flows with the delay; some of it has `@` for the digest part below.
    let o = client(&w, "SELECT @@version_comment LIMIT 1; SELECT 1");
    assert!(o.ok, "{}", o.stderr);

    // Seed 002's sharding rules.
    admin(
        &w,
        r"insert into mysql_query_rules (active,match_pattern,apply,destination_hostgroup) values (1,'\/\* 000',1,0);
insert into mysql_query_rules (active,match_pattern,apply,destination_hostgroup) values (1,'\/\* 001',1,0);
insert into mysql_query_rules (active,match_pattern,apply,destination_hostgroup) values (1,'\/\* 002',1,0);
insert into mysql_query_rules (active,match_pattern,apply,destination_hostgroup) values (1,'\/\* 003',1,0);",
    );
    admin(
        &w,
        r"replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* [0-1]',0,01,0,999);
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* 0' ,01, 0,1, 0);
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* 1' ,01, 0,1, 1);
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* 2' , 0, 0,1, 2);
replace into mysql_query_rules (active,match_pattern,flagIN,flagOUT,apply,destination_hostgroup) values (1,'\/\* 3' , 0, 0,1, 3);",
    );
    // The rule-delay script's modifyRuleDelay.
    let o = mariadb(
        w.admin_port,
        "admin",
        "admin",
        &[],
        "update mysql_query_rules set delay = 1 where rule_id = 5 ; LOAD MYSQL QUERY RULES TO RUNTIME;",
    );
    assert!(o.ok, "{}", o.stderr);
    let expected = [
        ["1", "1", r"\/\* 000", "0", "NULL", "1", "0", "NULL"],
        ["2", "1", r"\/\* 001", "0", "NULL", "1", "0", "NULL"],
        ["3", "1", r"\/\* 002", "0", "NULL", "1", "0", "NULL"],
        ["4", "1", r"\/\* 003", "0", "NULL", "1", "0", "NULL"],
        ["5", "1", r"\/\* [0-1]", "0", "1", "0", "999", "1"],
        ["6", "1", r"\/\* 0", "1", "0", "1", "0", "NULL"],
        ["7", "1", r"\/\* 1", "1", "0", "1", "1", "NULL"],
        ["8", "1", r"\/\* 2", "0", "0", "1", "2", "NULL"],
        ["9", "1", r"\/\* 3", "0", "0", "1", "3", "NULL"],
    ];
    for t in ["mysql_query_rules", "runtime_mysql_query_rules"] {
        let rows = table(
            &w,
            &format!(
                "SELECT rule_id, active, match_pattern, flagIN, flagOUT, apply, destination_hostgroup, delay FROM {t} ORDER BY rule_id"
            ),
        );
        let got: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| {
                [
                    "rule_id",
                    "active",
                    "match_pattern",
                    "flagIN",
                    "flagOUT",
                    "apply",
                    "destination_hostgroup",
                    "delay",
                ]
                .iter()
                .map(|c| r[*c].as_str())
                .collect()
            })
            .collect();
        assert_eq!(got, expected, "{t}");
    }
    admin(
        &w,
        "SELECT hits, mysql_query_rules.rule_id, match_digest, match_pattern, replace_pattern, cache_ttl, apply, delay FROM mysql_query_rules NATURAL JOIN stats.stats_mysql_query_rules ORDER BY mysql_query_rules.rule_id;",
    );

    // Seed 004's rules (a catch-all first, then chained flagIN/flagOUT rules).
    admin(
        &w,
        "insert into mysql_query_rules (username,destination_hostgroup,active,retries,match_digest,apply) values('testuser_rw',600,1,3,'(from|into|update|into table) sbtest([1-9]d{3,}|[1-9][0-9][1-9])b',1);",
    );
    admin(
        &w,
        "insert into mysql_query_rules (flagin,flagout,username,active,retries,match_digest,apply) VALUES
(0,1000,'testuser_rw',1,3,'(from|into|update|into table) sbtest.b',0),
(0,1100,'testuser_rw',1,3,'(from|into|update|into table) sbtest1.b',0),
(0,1200,'testuser_rw',1,3,'(from|into|update|into table) sbtest2.b',0),
(0,1300,'testuser_rw',1,3,'(from|into|update|into table) sbtest3.b',0),
(0,1400,'testuser_rw',1,3,'(from|into|update|into table) sbtest4.b',0),
(0,1500,'testuser_rw',1,3,'(from|into|update|into table) sbtest5.b',0),
(0,1600,'testuser_rw',1,3,'(from|into|update|into table) sbtest6.b',0),
(0,1700,'testuser_rw',1,3,'(from|into|update|into table) sbtest7.b',0),
(0,1800,'testuser_rw',1,3,'(from|into|update|into table) sbtest8.b',0),
(0,1900,'testuser_rw',1,3,'(from|into|update|into table) sbtest9.b',0);
insert into mysql_query_rules (flagin,destination_hostgroup,active,match_digest,apply) VALUES
(1100,600,1,'(from|into|update|into table) sbtest11b',1),
(1100,600,1,'(from|into|update|into table) sbtest12b',1),
(1100,600,1,'(from|into|update|into table) sbtest13b',1),
(1100,600,1,'(from|into|update|into table) sbtest14b',1),
(1100,600,1,'(from|into|update|into table) sbtest15b',1),
(1100,600,1,'(from|into|update|into table) sbtest16b',1),
(1100,600,1,'(from|into|update|into table) sbtest17b',1),
(1100,600,1,'(from|into|update|into table) sbtest18b',1),
(1100,600,1,'(from|into|update|into table) sbtest19b',1);",
    );
    admin(&w, "LOAD MYSQL QUERY RULES TO RUNTIME;");
    admin(&w, "select * from stats_mysql_query_rules;");
    assert_eq!(
        value(&w, "SELECT COUNT(*) FROM runtime_mysql_query_rules"),
        "29"
    );
    let r = table(
        &w,
        "SELECT flagIN, flagOUT, username, retries, apply FROM runtime_mysql_query_rules WHERE rule_id = 12",
    );
    assert_eq!(
        column(&r, "flagOUT"),
        ["1100"],
        "second row of the VALUES list"
    );
    assert_eq!(r[0]["username"], "testuser_rw");
    assert_eq!(r[0]["retries"], "3");

    // Multiplexing: rules for every digest with `@`, created from the digest stats.
    let digests = table(
        &w,
        "SELECT DISTINCT digest, digest_text FROM stats_mysql_query_digest WHERE digest_text LIKE '%@%';",
    );
    admin(
        &w,
        "INSERT INTO mysql_query_rules(active,digest,multiplex,apply) SELECT DISTINCT 1,digest,2,0 FROM stats_mysql_query_digest WHERE digest_text LIKE '%@%';",
    );
    admin(&w, "LOAD MYSQL QUERY RULES TO RUNTIME;");
    admin(&w, "SAVE MYSQL QUERY RULES TO DISK;");
    let total = (29 + digests.len()).to_string();
    for t in [
        "mysql_query_rules",
        "runtime_mysql_query_rules",
        "disk.mysql_query_rules",
    ] {
        assert_eq!(
            value(&w, &format!("SELECT COUNT(*) FROM {t}")),
            total,
            "{t}"
        );
    }
    assert_eq!(
        value(
            &w,
            "SELECT COUNT(*) FROM runtime_mysql_query_rules WHERE multiplex = 2 AND digest IS NOT NULL"
        ),
        digests.len().to_string()
    );
    assert_eq!(
        variable(&w, "runtime_global_variables", "mysql-default_query_delay"),
        "1"
    );
}

/// Runs sysbench oltp_read_only with `args`; returns (success, report).
fn sysbench(port: u16, db: &str, args: &[&str]) -> (bool, String) {
    let db = format!("--mysql-db={db}");
    let mut all = vec![db.as_str(), "--tables=2", "--table-size=2000"];
    all.extend_from_slice(args);
    common::sysbench("oltp_read_only", port, &all)
}

/// The number after `label` in sysbench's report (e.g. `ignored errors:`).
fn report_number(report: &str, label: &str) -> u64 {
    report
        .lines()
        .find_map(|l| l.trim_start().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no '{label}' in:\n{report}"))
}

#[test]
fn reload_under_sysbench_load_has_no_client_errors() {
    // Its own schema: sysbench.rs uses sbtest.
    let db = "sbadmin";
    topo()
        .primary
        .exec(&format!("CREATE DATABASE IF NOT EXISTS {db}"))
        .unwrap();
    let (ok, report) = sysbench(topo().primary.port, db, &["cleanup"]);
    assert!(ok, "{report}");
    let (ok, report) = sysbench(topo().primary.port, db, &["prepare"]);
    assert!(ok, "{report}");

    let w = start("");
    let reloads: u64 = 20;
    let (run, reloaded) = std::thread::scope(|s| {
        let bench = s.spawn(|| {
            sysbench(
                w.port,
                db,
                &[
                    "--threads=4",
                    "--time=12",
                    "--mysql-ignore-errors=none",
                    "--report-interval=0",
                    "run",
                ],
            )
        });
        std::thread::sleep(Duration::from_millis(700));
        let t = Instant::now();
        let mut done = 0;
        for i in 0..reloads {
            admin(
                &w,
                &format!(
                    "UPDATE mysql_servers SET weight={} WHERE hostgroup_id=0; LOAD MYSQL SERVERS TO RUNTIME; \
                     SET mysql-connect_timeout_server=2000; LOAD MYSQL VARIABLES TO RUNTIME; \
                     LOAD MYSQL USERS TO RUNTIME; LOAD MYSQL QUERY RULES TO RUNTIME",
                    i + 1
                ),
            );
            done += 1;
            if bench.is_finished() {
                break;
            }
            // Spread the reloads over the run.
            let next = Duration::from_millis(350 * (i + 1));
            if let Some(wait) = next.checked_sub(t.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        (bench.join().unwrap(), done)
    });
    let (ok, report) = run;
    assert!(
        ok,
        "sysbench failed during reloads:\n{report}\nweir:\n{}",
        w.stderr_tail(30)
    );
    // All 20 take 7 s here; a slow machine may fit fewer into the run, which still tests
    // reloads under load.
    assert!(
        reloaded >= reloads / 2,
        "sysbench ended after {reloaded} reloads:\n{report}"
    );
    eprintln!(
        "{reloaded} reloads during sysbench: {} transactions, {} queries",
        report_number(&report, "transactions:"),
        report_number(&report, "total:")
    );
    assert_eq!(report_number(&report, "ignored errors:"), 0, "{report}");
    assert_eq!(report_number(&report, "reconnects:"), 0, "{report}");
    assert!(
        report_number(&report, "transactions:") > 50,
        "too little traffic to mean anything:\n{report}"
    );
    assert_eq!(
        value(
            &w,
            "SELECT weight FROM runtime_mysql_servers WHERE hostgroup_id=0"
        ),
        reloaded.to_string()
    );
    assert_eq!(
        variable(
            &w,
            "runtime_global_variables",
            "mysql-connect_timeout_server"
        ),
        "2000"
    );
    let queries: u64 = value(
        &w,
        "SELECT SUM(Queries) FROM stats_mysql_connection_pool WHERE hostgroup=0",
    )
    .parse()
    .unwrap();
    assert!(queries > 1000, "{queries} queries on hostgroup 0");
    let (ok, report) = sysbench(topo().primary.port, db, &["cleanup"]);
    assert!(ok, "{report}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_config_survives_kill_9_and_initial_reseeds() {
    let mut w = start("");
    topo()
        .primary
        .exec(
            "CREATE USER IF NOT EXISTS 'persisted'@'%' IDENTIFIED BY 'persistpass'; \
             GRANT ALL ON weirtest.* TO 'persisted'@'%'",
        )
        .unwrap();
    // Saved: a user, a variable, a server weight.
    admin(
        &w,
        "INSERT INTO mysql_users (username, password, default_hostgroup) VALUES ('persisted', 'persistpass', 0); \
         SET mysql-connect_timeout_server = 1234; \
         UPDATE mysql_servers SET weight = 7 WHERE hostgroup_id = 1; \
         LOAD MYSQL USERS TO RUNTIME; LOAD MYSQL VARIABLES TO RUNTIME; LOAD MYSQL SERVERS TO RUNTIME; \
         SAVE MYSQL USERS TO DISK; SAVE MYSQL VARIABLES TO DISK; SAVE MYSQL SERVERS TO DISK",
    );
    let mut c = connect(&w, "persisted", "persistpass").await;
    let u: Option<String> = c.query_first("SELECT CURRENT_USER()").await.unwrap();
    assert_eq!(u.as_deref(), Some("persisted@%"));
    drop(c);
    // Not saved: memory only, and a runtime change that was never saved.
    admin(
        &w,
        "INSERT INTO mysql_users (username, password) VALUES ('unsaved', 'x'); \
         UPDATE mysql_servers SET weight = 9 WHERE hostgroup_id = 0; \
         SET mysql-default_query_timeout = 4321; \
         SET mysql-connect_retries_on_failure = 3; LOAD MYSQL VARIABLES TO RUNTIME",
    );

    w.kill().unwrap();
    w.restart()
        .unwrap_or_else(|e| panic!("weir did not restart: {e}"));
    for t in ["mysql_users", "runtime_mysql_users", "disk.mysql_users"] {
        assert_eq!(users_of(&w, t), ["persisted", "weir", "weir_ed"], "{t}");
    }
    let mut saved = config_servers();
    for s in saved.iter_mut().filter(|s| s.0 == "1") {
        s.3 = "7".into();
    }
    for t in ["mysql_servers", "runtime_mysql_servers"] {
        assert_eq!(servers_of(&w, t), saved, "{t}");
    }
    for t in ["global_variables", "runtime_global_variables"] {
        assert_eq!(
            variable(&w, t, "mysql-connect_timeout_server"),
            "1234",
            "{t}"
        );
        assert_eq!(
            variable(&w, t, "mysql-default_query_timeout"),
            "36000000",
            "{t}"
        );
        assert_eq!(
            variable(&w, t, "mysql-connect_retries_on_failure"),
            "10",
            "{t}"
        );
    }
    let mut c = connect(&w, "persisted", "persistpass").await;
    let n: Option<i64> = c.query_first("SELECT 40 + 2").await.unwrap();
    assert_eq!(n, Some(42));
    drop(c);

    // --initial: the file again, in memory, disk and runtime.
    w.restart_with_args(&["--initial"])
        .unwrap_or_else(|e| panic!("weir did not restart with --initial: {e}"));
    for t in ["mysql_users", "runtime_mysql_users", "disk.mysql_users"] {
        assert_eq!(users_of(&w, t), ["weir", "weir_ed"], "{t}");
    }
    for t in [
        "mysql_servers",
        "runtime_mysql_servers",
        "disk.mysql_servers",
    ] {
        assert_eq!(servers_of(&w, t), config_servers(), "{t}");
    }
    for t in [
        "global_variables",
        "runtime_global_variables",
        "disk.global_variables",
    ] {
        assert_eq!(
            variable(&w, t, "mysql-connect_timeout_server"),
            "3000",
            "{t}"
        );
    }
    let e = Conn::new(opts_for(w.port, "persisted", "persistpass", None))
        .await
        .unwrap_err();
    assert_eq!(server_code(&e), Some(1045), "{e}");
}

#[test]
fn bad_values_are_refused_with_the_constraint() {
    let w = start("");
    let primary_port = topo().primary.port;
    let cases: Vec<(String, u16, &str)> = vec![
        (
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (9, 'h1', 70000)".into(),
            3819,
            "port",
        ),
        (
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (-1, 'h1', 3306)".into(),
            3819,
            "hostgroup_id",
        ),
        (
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port, status) VALUES (9, 'h1', 3306, 'FOO')".into(),
            3819,
            "status",
        ),
        (
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port, weight) VALUES (9, 'h1', 3306, -1)".into(),
            3819,
            "weight",
        ),
        (
            "UPDATE mysql_servers SET weight = -1 WHERE hostgroup_id = 1".into(),
            3819,
            "weight",
        ),
        (
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port, max_connections) VALUES (9, 'h1', 3306, -1)".into(),
            3819,
            "max_connections",
        ),
        (
            "INSERT INTO mysql_users (username, password, active) VALUES ('u1', 'p', 2)".into(),
            3819,
            "active",
        ),
        (
            "INSERT INTO mysql_query_rules (active, apply) VALUES (2, 1)".into(),
            3819,
            "active",
        ),
        (
            "INSERT INTO mysql_query_rules (active, multiplex) VALUES (1, 3)".into(),
            3819,
            "multiplex",
        ),
        (
            "INSERT INTO mysql_query_rules (active, re_modifiers) VALUES (1, NULL)".into(),
            1048,
            "re_modifiers",
        ),
        (
            "INSERT INTO mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup) VALUES (7, 7)".into(),
            3819,
            "reader_hostgroup",
        ),
        (
            "INSERT INTO mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup, check_type) VALUES (7, 8, 'nope')".into(),
            3819,
            "check_type",
        ),
        (
            format!(
                "INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (0, '127.0.0.1', {primary_port})"
            ),
            1062,
            "mysql_servers.hostname",
        ),
        (
            "INSERT INTO mysql_users (username, password) VALUES ('weir', 'other')".into(),
            1062,
            "mysql_users.username",
        ),
        (
            "INSERT INTO mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup) VALUES (2, 1)".into(),
            1062,
            "reader_hostgroup",
        ),
    ];
    for (sql, code, names) in &cases {
        let (got, msg) = admin_err(&w, sql);
        assert_eq!(got, *code, "{sql}: {msg}");
        assert!(msg.contains(names), "{sql}: '{msg}' does not name {names}");
        if *code == 3819 {
            assert!(msg.contains("CHECK constraint failed"), "{sql}: {msg}");
        }
    }
    // Nothing half-applied.
    assert_eq!(servers_of(&w, "mysql_servers"), config_servers());
    assert_eq!(users_of(&w, "mysql_users"), ["weir", "weir_ed"]);
    assert_eq!(value(&w, "SELECT COUNT(*) FROM mysql_query_rules"), "0");
    assert_eq!(
        value(&w, "SELECT COUNT(*) FROM mysql_replication_hostgroups"),
        "1"
    );

    // A row SQLite takes but weir's validation refuses: LOAD names it, runtime unchanged.
    admin(
        &w,
        "INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (3, '', 3306)",
    );
    let (code, msg) = admin_err(&w, "LOAD MYSQL SERVERS TO RUNTIME");
    assert_eq!(code, 1105, "{msg}");
    assert!(
        msg.contains("hostgroup_id=3, hostname='', port=3306"),
        "the message does not name the row: {msg}"
    );
    assert!(msg.contains("runtime unchanged"), "{msg}");
    assert_eq!(servers_of(&w, "runtime_mysql_servers"), config_servers());
    admin(&w, "DELETE FROM mysql_servers WHERE hostgroup_id = 3");

    // A bad variable: named, runtime unchanged.
    admin(
        &w,
        "UPDATE global_variables SET variable_value = 'soon' WHERE variable_name = 'mysql-connect_timeout_server'",
    );
    let (code, msg) = admin_err(&w, "LOAD MYSQL VARIABLES TO RUNTIME");
    assert_eq!(code, 1105, "{msg}");
    assert!(msg.contains("mysql-connect_timeout_server"), "{msg}");
    assert_eq!(
        variable(
            &w,
            "runtime_global_variables",
            "mysql-connect_timeout_server"
        ),
        "3000"
    );
    // Modules load on their own: a bad variable in memory does not block LOAD MYSQL SERVERS.
    admin(
        &w,
        "UPDATE mysql_servers SET weight = 3 WHERE hostgroup_id = 1; LOAD MYSQL SERVERS TO RUNTIME",
    );
    assert_eq!(
        value(
            &w,
            "SELECT COUNT(*) FROM runtime_mysql_servers WHERE weight = 3"
        ),
        "2"
    );
    admin(
        &w,
        "UPDATE global_variables SET variable_value = '2500' WHERE variable_name = 'mysql-connect_timeout_server'; \
         LOAD MYSQL VARIABLES TO RUNTIME",
    );
    assert_eq!(
        variable(
            &w,
            "runtime_global_variables",
            "mysql-connect_timeout_server"
        ),
        "2500"
    );

    // SET: unknown variable, bad value.
    let (code, msg) = admin_err(&w, "SET mysql-no_such_variable = 1");
    assert_eq!(code, 1193, "{msg}");
    assert!(msg.contains("mysql-no_such_variable"), "{msg}");
    let (code, msg) = admin_err(&w, "SET mysql-connect_timeout_server = soon");
    assert_eq!(code, 1231, "{msg}");
    assert!(
        msg.contains("mysql-connect_timeout_server") && msg.contains("soon"),
        "{msg}"
    );
    assert_eq!(
        variable(&w, "global_variables", "mysql-connect_timeout_server"),
        "2500"
    );

    // Garbage commands and SQL.
    let (code, msg) = admin_err(&w, "LOAD MYSQL SERVERS TO PLANET");
    assert_eq!(code, 1064, "{msg}");
    assert!(
        msg.contains("PLANET") && msg.contains("TO RUNTIME"),
        "the message should say what was expected: {msg}"
    );
    let (code, msg) = admin_err(&w, "LOAD MYSQL SERVANTS TO RUNTIME");
    assert_eq!(code, 1064, "{msg}");
    assert!(msg.contains("MYSQL SERVERS"), "{msg}");
    let (code, msg) = admin_err(&w, "PROXYSQL RESTART NOW");
    assert_eq!(code, 1064, "{msg}");
    let (code, msg) = admin_err(&w, "SELEC * FROM mysql_servers");
    assert_eq!(code, 1064, "{msg}");
    assert!(msg.contains("SELEC"), "{msg}");
    let (code, msg) = admin_err(&w, "SELECT * FROM no_such_table");
    assert_eq!(code, 1146, "{msg}");
}

/// mysql_users: a user's row for backends (`frontend = 0, backend = 1`) is the one weir logs in
/// to the servers with, while clients log in with the other row's password; a backend row
/// holding only a hash logs in with SHA1(password) from the client's login, and a hash no client
/// password can prove is warned about at LOAD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_backend_row_logs_in_to_the_backends() {
    let w = start("");
    topo()
        .primary
        .exec(
            "CREATE USER IF NOT EXISTS 'be_split'@'%' IDENTIFIED BY 'backendpass'; \
             GRANT ALL ON weirtest.* TO 'be_split'@'%'; \
             CREATE USER IF NOT EXISTS 'be_hash'@'%' IDENTIFIED BY 'hashpass'; \
             GRANT ALL ON weirtest.* TO 'be_hash'@'%'",
        )
        .unwrap();
    let hash = |pass: &str| {
        let h = weir_wire::auth::native_stage2(pass.as_bytes());
        format!(
            "*{}",
            h.iter().map(|b| format!("{b:02X}")).collect::<String>()
        )
    };
    admin(
        &w,
        &format!(
            "INSERT INTO mysql_users (username, password, frontend, backend) VALUES \
             ('be_split', 'clientpass', 1, 0), ('be_split', 'backendpass', 0, 1), \
             ('be_hash', 'hashpass', 1, 0), ('be_hash', '{}', 0, 1), \
             ('be_lost', '{}', 1, 0), ('be_lost', '{}', 0, 1); \
             LOAD MYSQL USERS TO RUNTIME",
            hash("hashpass"),
            hash("one"),
            hash("another")
        ),
    );
    for (user, pass) in [("be_split", "clientpass"), ("be_hash", "hashpass")] {
        let mut c = connect(&w, user, pass).await;
        let who: Option<String> = c.query_first("SELECT CURRENT_USER()").await.unwrap();
        assert_eq!(who, Some(format!("{user}@%")), "{user}");
    }
    // The backend row's password is not one a client can log in with.
    let refused = Conn::new(opts_for(
        w.port,
        "be_split",
        "backendpass",
        Some("weirtest"),
    ))
    .await;
    assert_eq!(refused.err().as_ref().and_then(server_code), Some(1045));
    wait_until(
        "the LOAD's warning about be_lost",
        Duration::from_secs(5),
        || {
            w.stderr_tail(50)
                .contains("user 'be_lost' has a backend row whose password is a hash other than")
        },
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_user_reads_but_cannot_write() {
    let w = start("");
    let global = parse_table(&admin_as(
        &w,
        "stats",
        "stats",
        "SELECT * FROM stats_mysql_global",
    ));
    assert!(
        global.iter().any(|r| r["Variable_Name"] == "Questions"),
        "{global:?}"
    );
    let pool = parse_table(&admin_as(
        &w,
        "stats",
        "stats",
        "SELECT hostgroup, srv_port FROM stats_mysql_connection_pool ORDER BY hostgroup, srv_port",
    ));
    assert_eq!(pool.len(), 3, "{pool:?}");
    let status = parse_table(&admin_as(&w, "stats", "stats", "SHOW MYSQL STATUS"));
    assert!(
        status
            .iter()
            .any(|r| r.values().any(|v| v == "Client_Connections_connected")),
        "{status:?}"
    );
    let sql_writes = [
        "DELETE FROM mysql_servers",
        "UPDATE global_variables SET variable_value = '5' WHERE variable_name = 'mysql-default_query_delay'",
        "INSERT INTO mysql_users (username, password) VALUES ('intruder', 'x')",
        "REPLACE INTO mysql_query_rules (rule_id, active) VALUES (1, 1)",
        "DROP TABLE mysql_servers",
        "CREATE TABLE main.t (a INT)",
        "ATTACH DATABASE '/tmp/weir-stats-attach.db' AS x",
        "PRAGMA writable_schema = 1",
        "WITH x AS (SELECT 1) DELETE FROM mysql_servers",
    ];
    let commands = [
        "LOAD MYSQL SERVERS TO RUNTIME",
        "LOAD MYSQL USERS FROM DISK",
        "SAVE MYSQL SERVERS TO DISK",
        "SAVE MYSQL VARIABLES FROM RUNTIME",
        "SET mysql-default_query_delay = 5",
        "PROXYSQL PAUSE",
        "PROXYSQL SHUTDOWN",
        "WEIR SHUTDOWN",
    ];
    for sql in sql_writes.iter().chain(commands.iter()) {
        let (code, msg) = admin_err_as(&w, "stats", "stats", sql);
        assert_eq!(code, 1227, "{sql}: {msg}");
    }
    // A stats user's multi-statement query cannot smuggle a write behind a SELECT.
    let mut c = Conn::new(opts_for(w.admin_port, "stats", "stats", None))
        .await
        .unwrap();
    let r = c.query_drop("SELECT 1; DELETE FROM mysql_servers").await;
    assert!(r.is_err(), "a multi-statement with a write was accepted");
    drop(c);
    // Nothing changed, weir runs and is not paused.
    assert_eq!(servers_of(&w, "mysql_servers"), config_servers());
    assert_eq!(users_of(&w, "mysql_users"), ["weir", "weir_ed"]);
    assert_eq!(
        variable(&w, "global_variables", "mysql-default_query_delay"),
        "0"
    );
    let o = client(&w, "SELECT 6 * 7");
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "42");

    // Stats users read the stats and monitor schemas only: the config tables and variables
    // hold passwords (mysql_users, admin-admin_credentials, mysql-monitor_password).
    for sql in [
        "SELECT * FROM mysql_users",
        "SELECT * FROM runtime_mysql_users",
        "SELECT * FROM disk.mysql_users",
        "SELECT * FROM global_variables",
        "SELECT s.* FROM stats_mysql_global s JOIN mysql_users u",
    ] {
        let (code, msg) = admin_err_as(&w, "stats", "stats", sql);
        assert_eq!(code, 1142, "{sql}: {msg}");
        assert!(msg.contains("stats and monitor"), "{sql}: {msg}");
    }
    for sql in ["SHOW MYSQL VARIABLES", "SHOW ADMIN VARIABLES"] {
        assert_eq!(admin_err_as(&w, "stats", "stats", sql).0, 1227, "{sql}");
    }
    assert_eq!(
        admin_as(&w, "stats", "stats", "SELECT @@admin-admin_credentials").trim(),
        "@@admin-admin_credentials\nNULL"
    );
    let o = admin_as(
        &w,
        "stats",
        "stats",
        "SELECT COUNT(*) FROM monitor.mysql_server_ping_log",
    );
    assert!(o.contains('0'), "{o}");
    // Nobody attaches files or detaches the disk schema, admin users included.
    for sql in [
        "ATTACH DATABASE '/tmp/weir-admin-attach.db' AS x",
        "DETACH DATABASE disk",
    ] {
        let (code, msg) = admin_err(&w, sql);
        assert_eq!(code, 1142, "{sql}: {msg}");
        assert!(msg.contains("not allowed"), "{sql}: {msg}");
    }
    admin(&w, "SAVE MYSQL SERVERS TO DISK");

    // Wrong passwords, unknown users.
    for (user, pass) in [("admin", "wrong"), ("stats", "admin"), ("nobody", "admin")] {
        let o = mariadb(w.admin_port, user, pass, &[], "SELECT 1");
        assert!(!o.ok, "{user}:{pass} logged in");
        let (code, msg) = parse_err(&o.stderr);
        assert_eq!(code, 1045, "{msg}");
        assert!(msg.contains(&format!("'{user}'")), "{msg}");
    }
    // `admin` from a non-loopback address is refused: not tested here, since this machine's
    // only address the tests may use is loopback.
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_tables_follow_the_traffic() {
    let w = start("");
    let mut c1 = connect(&w, WEIR_USER, WEIR_PASS).await;
    let c2 = connect(&w, WEIR_USER, WEIR_PASS).await;
    for _ in 0..3 {
        let _: Option<i64> = c1.query_first("SELECT 1").await.unwrap();
    }
    let select_count = |w: &WeirProcess| -> u64 {
        value(
            w,
            "SELECT Total_cnt FROM stats_mysql_commands_counters WHERE Command = 'SELECT'",
        )
        .parse()
        .unwrap()
    };
    let before = select_count(&w);
    assert!(before >= 3, "{before}");
    for i in 0..10 {
        let v: Option<i64> = c1.query_first(format!("SELECT {i}")).await.unwrap();
        assert_eq!(v, Some(i));
    }
    let after = select_count(&w);
    assert!(after >= before + 10, "SELECT Total_cnt {before} → {after}");

    let g: BTreeMap<String, String> = table(
        &w,
        "SELECT Variable_Name, Variable_Value FROM stats_mysql_global",
    )
    .into_iter()
    .map(|r| (r["Variable_Name"].clone(), r["Variable_Value"].clone()))
    .collect();
    assert!(g["Questions"].parse::<u64>().unwrap() >= 13, "{g:?}");
    assert_eq!(g["Client_Connections_connected"], "2", "{g:?}");

    // A running statement in the processlist.
    let sleeper = tokio::spawn(async move {
        let mut c2 = c2;
        let r: Option<i64> = c2.query_first("SELECT SLEEP(2)").await.unwrap();
        (r, c2)
    });
    let mut row = None;
    wait_until(
        "SELECT SLEEP(2) in the processlist",
        Duration::from_secs(5),
        || {
            let rows = table(
            &w,
            "SELECT user, db, hostgroup, srv_port, command, info, time_ms FROM stats_mysql_processlist WHERE info LIKE 'SELECT SLEEP(2)%'",
        );
            row = rows.into_iter().next();
            // The text shows before the statement has its backend.
            row.as_ref().is_some_and(|r| r["srv_port"] != "0")
        },
    );
    let row = row.unwrap();
    assert_eq!(row["user"], WEIR_USER, "{row:?}");
    assert_eq!(row["db"], "weirtest", "{row:?}");
    assert_eq!(row["hostgroup"], "0", "{row:?}");
    assert_eq!(row["srv_port"], topo().primary.port.to_string(), "{row:?}");
    assert_eq!(row["command"], "Query", "{row:?}");
    assert_eq!(row["info"], "SELECT SLEEP(2)", "{row:?}");
    let users = table(
        &w,
        "SELECT username, frontend_connections FROM stats_mysql_users ORDER BY username",
    );
    assert_eq!(
        users
            .iter()
            .map(|r| (r["username"].as_str(), r["frontend_connections"].as_str()))
            .collect::<Vec<_>>(),
        [(WEIR_USER, "2"), ("weir_ed", "0")]
    );
    let (r, mut c2) = sleeper.await.unwrap();
    assert_eq!(r, Some(0));

    // A backend error is counted.
    let e = c1
        .query_drop("SELECT * FROM no_such_table")
        .await
        .unwrap_err();
    assert_eq!(server_code(&e), Some(1146), "{e}");
    let errs = table(
        &w,
        "SELECT hostgroup, port, username, schemaname, errno, count_star, last_error FROM stats_mysql_errors WHERE errno = 1146",
    );
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0]["hostgroup"], "0");
    assert_eq!(errs[0]["port"], topo().primary.port.to_string());
    assert_eq!(errs[0]["username"], WEIR_USER);
    assert_eq!(errs[0]["schemaname"], "weirtest");
    assert_eq!(errs[0]["count_star"], "1");
    assert!(errs[0]["last_error"].contains("no_such_table"), "{errs:?}");

    // The pool: hostgroup 0 served everything; _reset returns the counters, then zeroes them.
    let pool = table(
        &w,
        "SELECT hostgroup, srv_port, status, ConnUsed, ConnFree, ConnOK, Queries FROM stats_mysql_connection_pool ORDER BY hostgroup, srv_port",
    );
    assert_eq!(pool.len(), 3, "{pool:?}");
    assert_eq!(pool[0]["hostgroup"], "0");
    assert_eq!(pool[0]["srv_port"], topo().primary.port.to_string());
    assert_eq!(pool[0]["status"], "ONLINE");
    let q0: u64 = pool[0]["Queries"].parse().unwrap();
    assert!(q0 >= 14, "{pool:?}");
    assert!(pool[0]["ConnOK"].parse::<u64>().unwrap() >= 1, "{pool:?}");
    assert_eq!(pool[1]["Queries"], "0", "{pool:?}");
    let first = table(
        &w,
        "SELECT hostgroup, srv_port, Queries FROM stats_mysql_connection_pool_reset ORDER BY hostgroup, srv_port",
    );
    assert!(
        first[0]["Queries"].parse::<u64>().unwrap() >= q0,
        "{first:?}"
    );
    let second = table(
        &w,
        "SELECT hostgroup, srv_port, Queries FROM stats_mysql_connection_pool_reset ORDER BY hostgroup, srv_port",
    );
    assert_eq!(column(&second, "Queries"), ["0", "0", "0"], "{second:?}");
    assert_eq!(
        value(
            &w,
            "SELECT Queries FROM stats_mysql_connection_pool WHERE hostgroup = 0"
        ),
        "0"
    );
    let _: Option<i64> = c2.query_first("SELECT 5").await.unwrap();
    let q: u64 = value(
        &w,
        "SELECT Queries FROM stats_mysql_connection_pool WHERE hostgroup = 0",
    )
    .parse()
    .unwrap();
    assert!(q >= 1, "counting starts again after a reset");
    drop(c1);
    drop(c2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_resume_and_shutdown() {
    let mut w = start("");
    let mut held = connect(&w, WEIR_USER, WEIR_PASS).await;
    admin(&w, "PROXYSQL PAUSE");
    let o = client(&w, "SELECT 1");
    assert!(!o.ok, "a new connection was accepted while paused");
    let (code, msg) = parse_err(&o.stderr);
    assert_eq!(code, 1053, "{msg}");
    assert!(msg.contains("paused"), "{msg}");
    let v: Option<i64> = held.query_first("SELECT 11").await.unwrap();
    assert_eq!(v, Some(11), "an existing connection keeps working");
    admin(&w, "PROXYSQL RESUME");
    let o = client(&w, "SELECT 12");
    assert!(o.ok, "{}", o.stderr);
    assert_eq!(o.stdout.trim(), "12");
    admin(&w, "WEIR PAUSE");
    assert!(!client(&w, "SELECT 1").ok);
    admin(&w, "WEIR RESUME");
    assert!(client(&w, "SELECT 1").ok);

    // PROXYSQL SHUTDOWN with a client connected: the process exits 0, promptly.
    let o = mariadb(w.admin_port, "admin", "admin", &[], "PROXYSQL SHUTDOWN");
    assert!(o.ok, "PROXYSQL SHUTDOWN got no OK: {}", o.stderr);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = w.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "weir still runs 10 s after PROXYSQL SHUTDOWN\n{}",
            w.stderr_tail(20)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}\n{}", w.stderr_tail(20));
    assert!(held.query_drop("SELECT 1").await.is_err());
    drop(held);

    let mut w = start("");
    let o = mariadb(w.admin_port, "admin", "admin", &[], "WEIR SHUTDOWN");
    assert!(o.ok, "WEIR SHUTDOWN got no OK: {}", o.stderr);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = w.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "weir still runs 10 s after WEIR SHUTDOWN"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}\n{}", w.stderr_tail(20));
    assert!(!w.stderr().contains("panicked"), "{}", w.stderr_tail(20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_server_drains_its_transaction() {
    let w = start("");
    let primary = &topo().primary;
    primary
        .exec("CREATE TABLE IF NOT EXISTS weirtest.admin_drain (id INT PRIMARY KEY) ENGINE=InnoDB; DELETE FROM weirtest.admin_drain")
        .unwrap();
    admin(
        &w,
        "SET mysql-connect_timeout_server_max=1000; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    let mut tx = connect(&w, WEIR_USER, WEIR_PASS).await;
    let mut other = connect(&w, WEIR_USER, WEIR_PASS).await;
    tx.query_drop("BEGIN").await.unwrap();
    tx.query_drop("INSERT INTO weirtest.admin_drain VALUES (1)")
        .await
        .unwrap();

    admin(
        &w,
        "DELETE FROM mysql_servers WHERE hostgroup_id = 0; LOAD MYSQL SERVERS TO RUNTIME",
    );
    assert_eq!(
        value(
            &w,
            "SELECT COUNT(*) FROM runtime_mysql_servers WHERE hostgroup_id = 0"
        ),
        "0"
    );
    // Another client has no server for hostgroup 0 now: 9001 after connect_timeout_server_max.
    let t = Instant::now();
    let e = other.query_drop("SELECT 1").await.unwrap_err();
    let waited = t.elapsed();
    assert_eq!(server_code(&e), Some(9001), "{e}");
    assert!(e.to_string().contains("hostgroup 0"), "{e}");
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
        "waited {waited:?} with connect_timeout_server_max = 1000"
    );
    // The transaction in flight keeps its connection to the removed server and commits.
    tx.query_drop("INSERT INTO weirtest.admin_drain VALUES (2)")
        .await
        .unwrap_or_else(|e| panic!("the draining transaction failed: {e}"));
    tx.query_drop("COMMIT")
        .await
        .unwrap_or_else(|e| panic!("COMMIT on the draining server failed: {e}"));
    assert_eq!(
        primary
            .query_value("SELECT COUNT(*) FROM weirtest.admin_drain")
            .unwrap(),
        "2"
    );

    admin(
        &w,
        &format!(
            "INSERT INTO mysql_servers (hostgroup_id, hostname, port, max_connections) VALUES (0, '127.0.0.1', {}, 200); \
             LOAD MYSQL SERVERS TO RUNTIME",
            primary.port
        ),
    );
    let n: Option<i64> = other
        .query_first("SELECT COUNT(*) FROM weirtest.admin_drain")
        .await
        .unwrap_or_else(|e| panic!("hostgroup 0 is back but: {e}"));
    assert_eq!(n, Some(2));
    let n: Option<i64> = tx
        .query_first("SELECT MAX(id) FROM weirtest.admin_drain")
        .await
        .unwrap();
    assert_eq!(n, Some(2));
    drop(tx);
    drop(other);
}

#[test]
fn load_from_config_rereads_the_file() {
    let w = start("");
    let replica = topo().replicas[0].port;
    admin(
        &w,
        &format!(
            "UPDATE mysql_servers SET weight = 50, max_connections = 5; \
             DELETE FROM mysql_servers WHERE hostgroup_id = 1 AND port = {replica}; \
             INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (9, 'cfg-test-host', 3306); \
             DELETE FROM mysql_replication_hostgroups; \
             DELETE FROM mysql_users WHERE username = 'weir_ed'; \
             SET mysql-connect_timeout_server = 1234"
        ),
    );
    assert_eq!(servers_of(&w, "mysql_servers").len(), 3);
    admin(&w, "LOAD MYSQL SERVERS FROM CONFIG");
    assert_eq!(servers_of(&w, "mysql_servers"), config_servers());
    assert_eq!(
        column(
            &table(&w, "SELECT DISTINCT max_connections FROM mysql_servers"),
            "max_connections"
        ),
        ["200"]
    );
    let rh = table(
        &w,
        "SELECT writer_hostgroup, reader_hostgroup, check_type, comment FROM mysql_replication_hostgroups",
    );
    assert_eq!(rh.len(), 1, "{rh:?}");
    assert_eq!(
        (
            rh[0]["writer_hostgroup"].as_str(),
            rh[0]["reader_hostgroup"].as_str(),
            rh[0]["check_type"].as_str(),
            rh[0]["comment"].as_str()
        ),
        ("0", "1", "read_only", "testkit")
    );
    // Only the module named: users and variables are still as edited.
    assert_eq!(users_of(&w, "mysql_users"), ["weir"]);
    assert_eq!(
        variable(&w, "global_variables", "mysql-connect_timeout_server"),
        "1234"
    );
    admin(
        &w,
        "LOAD MYSQL USERS FROM CONFIG; LOAD MYSQL VARIABLES FROM CONFIG",
    );
    assert_eq!(users_of(&w, "mysql_users"), ["weir", "weir_ed"]);
    assert_eq!(
        variable(&w, "global_variables", "mysql-connect_timeout_server"),
        "3000"
    );
    assert_eq!(variable(&w, "global_variables", "mysql-threads"), "2");
    // Memory only: runtime and disk never saw the edits.
    assert_eq!(servers_of(&w, "runtime_mysql_servers"), config_servers());
    assert_eq!(servers_of(&w, "disk.mysql_servers"), config_servers());
}

#[test]
fn corrupt_database_is_refused_at_start() {
    let mut w = start("");
    let status = w.terminate(Duration::from_secs(15)).unwrap();
    assert!(status.success(), "{status}");
    let db = w.datadir.join("weir.db");
    assert!(db.exists(), "no weir.db in {}", w.datadir.display());
    let garbage = b"this is not an SQLite database, just garbage\n".repeat(200);
    std::fs::write(&db, &garbage).unwrap();
    let logged_before = w.stderr().len();
    let started = w.restart();
    assert!(
        started.is_err(),
        "weir started on a garbage weir.db\n{}",
        w.stderr_tail(20)
    );
    let status = w.try_wait().unwrap().expect("weir has exited");
    assert!(!status.success(), "{status}");
    let stderr = w.stderr();
    let this_start = &stderr[logged_before..];
    assert!(
        this_start.contains(db.to_str().unwrap()),
        "stderr does not name weir.db:\n{this_start}"
    );
    assert_eq!(
        std::fs::read(&db).unwrap(),
        garbage,
        "the corrupt file was changed"
    );
}

#[test]
fn set_statements_warnings_and_statistics() {
    let w = start("");
    // Any case of a variable name updates its one row, spelled as documented.
    admin(&w, "SET mysql-QUERY_CACHE_SIZE_mb = 100");
    let rows = table(
        &w,
        "SELECT variable_name, variable_value FROM global_variables WHERE lower(variable_name) = 'mysql-query_cache_size_mb'",
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["variable_name"], "mysql-query_cache_size_MB");
    assert_eq!(rows[0]["variable_value"], "100");
    // A mistyped weir variable is refused, not silently ignored; client chatter is fine.
    for sql in [
        "SET mysql_default_query_delay = 100",
        "SET GLOBAL mysql-default_query_delay = 100",
        "SET @@admin_read_only = 1",
    ] {
        let (code, msg) = admin_err(&w, sql);
        assert_eq!(code, 1193, "{sql}: {msg}");
        assert!(msg.contains("SET "), "{sql}: {msg}");
    }
    for sql in [
        "SET NAMES utf8mb4",
        "SET autocommit = 1",
        "SET SESSION sql_mode = ''",
    ] {
        admin(&w, sql);
    }
    // A restart-only variable: the note is in the OK and in SHOW WARNINGS.
    let o = mariadb(
        w.admin_port,
        "admin",
        "admin",
        &["-vvv"],
        "SET mysql-threads = 7; LOAD MYSQL VARIABLES TO RUNTIME; SHOW WARNINGS",
    );
    assert!(o.ok, "{}", o.stderr);
    assert!(
        o.stdout
            .contains("mysql-threads is '2' until the next restart (loaded: '7')"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("| Note"),
        "SHOW WARNINGS is empty: {}",
        o.stdout
    );
    // Back to the running value: nothing to restart for.
    let o = mariadb(
        w.admin_port,
        "admin",
        "admin",
        &["-vvv"],
        "SET mysql-threads = 2; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    assert!(o.ok, "{}", o.stderr);
    assert!(!o.stdout.contains("until the next restart"), "{}", o.stdout);
    // COM_STATISTICS answers in the server's format.
    let out = std::process::Command::new(weir_testkit::require_binary("mariadb-admin"))
        .args([
            "-h127.0.0.1",
            &format!("-P{}", w.admin_port),
            "-uadmin",
            "-padmin",
        ])
        .args(["--protocol=TCP", "--ssl=0", "status"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("Uptime: "), "{text}");
    assert!(text.contains("Questions: "), "{text}");
}

/// Statements DBAs' tools send that must not wedge the shared admin connection: transaction
/// statements are acknowledged and do nothing (ProxySQL's #1047), a `_reset` table named in a
/// comment or a string resets nothing, the stats user counts rows of unqualified stats
/// tables, a lower-case server status is accepted, a deleted variable row comes back at
/// LOAD, and commands weir lacks say so.
#[test]
fn admin_transactions_resets_and_unknown_commands() {
    let w = start("");
    // mysql-server_version is empty by default: the admin tells the version clients see.
    let o = client(&w, "SELECT 1");
    assert!(o.ok, "{}", o.stderr);
    let version = value(&w, "SELECT @@version");
    assert!(version.contains("MariaDB"), "{version}");
    // BEGIN in one session holds nothing: another session's SAVE and stats reads work, and
    // a ROLLBACK undoes nothing.
    admin(
        &w,
        "BEGIN; INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (7, 'txhost', 3306)",
    );
    admin(&w, "SAVE MYSQL SERVERS TO DISK");
    assert_eq!(
        value(
            &w,
            "SELECT COUNT(*) FROM disk.mysql_servers WHERE hostgroup_id = 7"
        ),
        "1"
    );
    table(&w, "SELECT * FROM stats_mysql_connection_pool");
    admin(&w, "START TRANSACTION; SAVEPOINT a; ROLLBACK TO SAVEPOINT a; RELEASE SAVEPOINT a; ROLLBACK; COMMIT; END");
    assert_eq!(
        value(
            &w,
            "SELECT COUNT(*) FROM mysql_servers WHERE hostgroup_id = 7"
        ),
        "1"
    );
    admin(
        &w,
        "DELETE FROM mysql_servers WHERE hostgroup_id = 7; SAVE MYSQL SERVERS TO DISK",
    );

    // Digest rows exist; naming the _reset table in a comment or a string keeps them.
    let o = client(&w, "SELECT 1");
    assert!(o.ok, "{}", o.stderr);
    let digests = || value(&w, "SELECT COUNT(*) FROM stats_mysql_query_digest");
    assert_ne!(digests(), "0");
    let o = mariadb(
        w.admin_port,
        "admin",
        "admin",
        &["--batch", "--comments"],
        "SELECT COUNT(*) FROM stats_mysql_query_digest /* not stats_mysql_query_digest_reset */",
    );
    assert!(o.ok, "{}", o.stderr);
    table(
        &w,
        "SELECT 'see stats_mysql_query_digest_reset', COUNT(*) FROM stats_mysql_query_digest",
    );
    assert_ne!(
        digests(),
        "0",
        "a mention of the _reset table emptied the digests"
    );
    table(&w, "SELECT COUNT(*) FROM stats_mysql_query_digest_reset");
    assert_eq!(digests(), "0", "reading the _reset table resets");

    // The stats user counts rows without naming the schema.
    let o = mariadb(
        w.admin_port,
        "stats",
        "stats",
        &["--batch", "--raw"],
        "SELECT COUNT(*) FROM stats_mysql_connection_pool; SELECT 1 FROM stats_mysql_users LIMIT 1",
    );
    assert!(o.ok, "{}", o.stderr);

    // Lower-case status, as ProxySQL's CHECK (UPPER(status) IN ...) allows.
    admin(
        &w,
        "INSERT INTO mysql_servers (hostgroup_id, hostname, port, status) VALUES (8, '127.0.0.1', 1, 'offline_soft'); LOAD MYSQL SERVERS TO RUNTIME",
    );
    assert_eq!(
        value(
            &w,
            "SELECT status FROM runtime_mysql_servers WHERE hostgroup_id = 8"
        ),
        "OFFLINE_SOFT"
    );
    admin(
        &w,
        "DELETE FROM mysql_servers WHERE hostgroup_id = 8; LOAD MYSQL SERVERS TO RUNTIME",
    );

    // A deleted variable row comes back with the value in force.
    admin(
        &w,
        "DELETE FROM global_variables WHERE variable_name = 'mysql-default_query_timeout'; LOAD MYSQL VARIABLES TO RUNTIME",
    );
    assert_eq!(
        variable(&w, "global_variables", "mysql-default_query_timeout"),
        "36000000"
    );

    // Commands weir lacks name themselves instead of a SQLite syntax error.
    for (sql, word) in [
        ("CHECKSUM DISK MYSQL SERVERS", "CHECKSUM"),
        ("FLUSH TABLES", "FLUSH"),
        ("SELECT CONFIG FILE", "CONFIG"),
    ] {
        let (code, msg) = admin_err(&w, sql);
        assert_eq!(code, 1235, "{sql}: {msg}");
        assert!(msg.contains(word), "{sql}: {msg}");
    }
    // ProxySQL 1.x's three-column replication hostgroup row: a column count error.
    let (code, msg) = admin_err(
        &w,
        "INSERT INTO mysql_replication_hostgroups VALUES (600,'','')",
    );
    assert_eq!(code, 1136, "{msg}");
    let (code, msg) = admin_err(&w, "INSERT INTO mysql_servers (nosuch) VALUES (1)");
    assert_eq!(code, 1054, "{msg}");
}

/// Rows change, the schemas do not: DDL and writing PRAGMAs are refused for everyone (a
/// dropped config table would break LOAD, SAVE and the next start), and `USE disk` is
/// refused rather than accepted while unqualified names still mean main.
#[test]
fn the_schemas_are_fixed_and_use_disk_is_refused() {
    let w = start("");
    let tables_before = admin(&w, "SHOW TABLES FROM main");
    for (sql, word) in [
        ("DROP TABLE mysql_servers", "DROP"),
        ("drop table disk.mysql_users", "DROP"),
        ("CREATE TABLE foo (a INT)", "CREATE"),
        ("CREATE TEMP TABLE mysql_servers (a INT)", "CREATE"),
        ("ALTER TABLE mysql_users ADD COLUMN x INT", "ALTER"),
        ("VACUUM", "VACUUM"),
        ("PRAGMA writable_schema = 1", "PRAGMA"),
        ("PRAGMA disk.journal_mode = OFF", "PRAGMA"),
    ] {
        let (code, msg) = admin_err(&w, sql);
        assert_eq!(code, 1142, "{sql}: {msg}");
        assert!(
            msg.contains(word) && msg.contains("not allowed"),
            "{sql}: {msg}"
        );
    }
    let (code, msg) = admin_err_as(&w, "stats", "stats", "DROP TABLE stats.stats_mysql_global");
    assert_eq!(code, 1227, "{msg}");
    // Tables weir fills itself at each read: a write would be lost, so it is refused.
    for sql in [
        "UPDATE runtime_mysql_servers SET status = 'OFFLINE_SOFT'",
        "DELETE FROM stats_mysql_query_digest",
        "INSERT INTO stats.stats_mysql_global VALUES ('x', '1')",
        "DELETE FROM monitor.mysql_server_ping_log",
    ] {
        let (code, msg) = admin_err(&w, sql);
        assert_eq!(code, 1142, "{sql}: {msg}");
        assert!(msg.contains("fills itself"), "{sql}: {msg}");
    }
    assert_eq!(
        value(
            &w,
            "SELECT COUNT(*) FROM runtime_mysql_servers WHERE status = 'OFFLINE_SOFT'"
        ),
        "0"
    );
    // ProxySQL's TRUNCATE TABLE of the digest statistics clears them.
    assert!(client(&w, "SELECT 1 AS truncate_me").ok);
    let digests =
        "SELECT COUNT(*) FROM stats_mysql_query_digest WHERE digest_text LIKE '%truncate_me%'";
    assert_eq!(value(&w, digests), "1");
    admin(&w, "TRUNCATE TABLE stats.stats_mysql_query_digest");
    assert_eq!(value(&w, digests), "0");
    admin(&w, "TRUNCATE stats_mysql_errors_reset");
    let (code, msg) = admin_err(&w, "TRUNCATE TABLE mysql_servers");
    assert_eq!(code, 1142, "{msg}");
    // Reading PRAGMAs and row changes still work, and so do LOAD and SAVE.
    assert!(admin(&w, "PRAGMA table_info(mysql_servers)").contains("hostgroup_id"));
    admin(
        &w,
        "UPDATE mysql_servers SET comment = 'kept' WHERE hostgroup_id = 0; \
         LOAD MYSQL SERVERS TO RUNTIME; SAVE MYSQL SERVERS TO DISK; SAVE MYSQL USERS TO DISK",
    );
    assert_eq!(
        value(
            &w,
            "SELECT comment FROM disk.mysql_servers WHERE hostgroup_id = 0"
        ),
        "kept"
    );
    assert_eq!(admin(&w, "SHOW TABLES FROM main"), tables_before);

    let (code, msg) = admin_err(&w, "USE disk");
    assert_eq!(code, 1044, "{msg}");
    assert!(msg.contains("disk.mysql_servers"), "{msg}");
    let login = mariadb(w.admin_port, "admin", "admin", &["-D", "disk"], "SELECT 1");
    assert!(!login.ok, "{}", login.stdout);
    assert_eq!(parse_err(&login.stderr).0, 1044, "{}", login.stderr);
    let login = mariadb(
        w.admin_port,
        "admin",
        "admin",
        &["-D", "nosuch"],
        "SELECT 1",
    );
    assert!(!login.ok, "{}", login.stdout);
    assert_eq!(parse_err(&login.stderr).0, 1049, "{}", login.stderr);
    assert_eq!(
        admin(&w, "USE stats; SELECT DATABASE()")
            .trim()
            .lines()
            .last(),
        Some("stats")
    );
}

/// admin-mysql_ifaces is live: LOAD ADMIN VARIABLES TO RUNTIME listens on the new addresses
/// and stops accepting on the removed ones (an open admin connection stays); an address that
/// cannot be bound refuses the LOAD and leaves the runtime as it was.
#[test]
fn admin_interfaces_change_at_load() {
    let w = start("");
    let (old, new) = (w.admin_port, free_port());
    let sock = weir_testkit::scratch_dir("adminsock")
        .unwrap()
        .join("admin.sock");
    let socket_cli = |sql: &str| {
        Command::new(require_binary("mariadb"))
            .args([
                "-S",
                sock.to_str().unwrap(),
                "-uadmin",
                "-padmin",
                "--protocol=SOCKET",
            ])
            .args(["-N", "-e", sql])
            .output()
            .unwrap()
    };
    let added = mariadb(
        old,
        "admin",
        "admin",
        &["-N"],
        &format!(
            "SET admin-mysql_ifaces = '127.0.0.1:{old};127.0.0.1:{new};{}'; \
             LOAD ADMIN VARIABLES TO RUNTIME; SHOW WARNINGS",
            sock.display()
        ),
    );
    assert!(added.ok, "{}", added.stderr);
    assert!(!added.stdout.contains("restart"), "{}", added.stdout);
    let on_new = mariadb(new, "admin", "admin", &["-N"], "SELECT 1");
    assert!(
        on_new.ok && on_new.stdout.trim() == "1",
        "{}",
        on_new.stderr
    );
    let on_sock = socket_cli("SELECT DATABASE()");
    assert!(
        on_sock.status.success() && String::from_utf8_lossy(&on_sock.stdout).trim() == "main",
        "{on_sock:?}"
    );

    // Dropped from the list, in the same session that connected through it.
    let moved = mariadb(
        old,
        "admin",
        "admin",
        &["-N"],
        &format!(
            "SET admin-mysql_ifaces = '127.0.0.1:{new}'; LOAD ADMIN VARIABLES TO RUNTIME; \
             SELECT 'still here'"
        ),
    );
    assert!(
        moved.ok && moved.stdout.contains("still here"),
        "{}",
        moved.stderr
    );
    wait_until(
        "the old admin port to close",
        Duration::from_secs(5),
        || std::net::TcpStream::connect(("127.0.0.1", old)).is_err(),
    );
    wait_until(
        "the admin socket file to go",
        Duration::from_secs(5),
        || !sock.exists(),
    );
    let on_new = mariadb(
        new,
        "admin",
        "admin",
        &["-N"],
        "SELECT @@admin-mysql_ifaces",
    );
    assert_eq!(
        on_new.stdout.trim(),
        format!("127.0.0.1:{new}"),
        "{}",
        on_new.stderr
    );

    // An address in use (weir's own client port) refuses the LOAD: nothing changes.
    let refused = mariadb(
        new,
        "admin",
        "admin",
        &["-N"],
        &format!(
            "SET admin-mysql_ifaces = '127.0.0.1:{new};127.0.0.1:{}'; LOAD ADMIN VARIABLES TO RUNTIME",
            w.port
        ),
    );
    assert!(!refused.ok);
    let (code, msg) = parse_err(&refused.stderr);
    assert_eq!(code, 1105, "{msg}");
    assert!(
        msg.contains("runtime unchanged")
            && msg.contains(&format!("cannot listen on 127.0.0.1:{}", w.port)),
        "{msg}"
    );
    let still = mariadb(
        new,
        "admin",
        "admin",
        &["-N"],
        "SELECT variable_value FROM runtime_global_variables WHERE variable_name = 'admin-mysql_ifaces'",
    );
    assert_eq!(
        still.stdout.trim(),
        format!("127.0.0.1:{new}"),
        "{}",
        still.stderr
    );
    // The client port is untouched by the attempt.
    assert!(client(&w, "SELECT 1").ok);
}

/// Queries_frontends_bytes_recv / _sent count the bytes clients send and get, exactly: a
/// command's reply is counted once it is sent (before, only when the next command came), and
/// kept once the session ends.
#[test]
fn frontend_bytes_count_what_clients_send_and_receive() {
    use common::raw::RawClient;
    use weir_wire::reply::Expect;
    let w = start("");
    let global = |name: &str| -> u64 {
        let rows = table(
            &w,
            &format!(
                "SELECT Variable_Value FROM stats_mysql_global WHERE Variable_Name = '{name}'"
            ),
        );
        rows[0]["Variable_Value"].parse().unwrap()
    };
    let frontend = || {
        (
            global("Queries_frontends_bytes_recv"),
            global("Queries_frontends_bytes_sent"),
        )
    };
    // Packets with their 4-byte headers.
    let size = |reply: &[Vec<u8>]| reply.iter().map(|p| 4 + p.len() as u64).sum::<u64>();
    let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    c.query("SELECT 1");
    // Its reply is published a moment after the client has it.
    std::thread::sleep(Duration::from_millis(300));
    let mut got = 0;
    let (recv0, sent0) = frontend();
    let mut sent = 0;
    for q in [
        "SELECT REPEAT('x', 1000)",
        "SELECT a FROM (SELECT 1 a UNION SELECT 2) t",
        "DO 1",
        "SELECT * FROM no_such_table_fb",
    ] {
        sent += 5 + q.len() as u64;
        got += size(&c.query(q));
    }
    sent += 5;
    let pong = size(&c.command(&[0x0e], Expect::Status));
    // Published just after the reply is written: a moment after the client has it.
    wait_until("the ping's reply counted", Duration::from_secs(5), || {
        frontend() == (recv0 + sent, sent0 + got + pong)
    });
    // The QUIT is counted when the client leaves.
    c.send(&[0x01]);
    drop(c);
    wait_until("the session's end counted", Duration::from_secs(5), || {
        frontend() == (recv0 + sent + 5, sent0 + got + pong)
    });
}

/// The admin port frames a result row of 16 MiB or more in several packets, as the protocol
/// wants, and holds at most 64 KiB for a client that has not logged in.
#[test]
fn admin_big_rows_are_framed_and_logins_are_small() {
    use common::raw::RawClient;
    let w = start("");
    let (mut c, ok) = RawClient::login(w.admin_port, "admin", "admin", None);
    assert_eq!(ok[0], 0, "{ok:?}");
    let n = 17_000_000;
    let reply = c.query(&format!("SELECT printf('%.*c', {n}, 'a') AS big"));
    let row = common::raw::text_first_row(&reply);
    assert_eq!(row[0].as_ref().map(String::len), Some(n));
    // The connection is still in step.
    let reply = c.query("SELECT 1 AS one");
    assert_eq!(common::raw::text_first_row(&reply)[0].as_deref(), Some("1"));

    let mut s = std::net::TcpStream::connect(("127.0.0.1", w.admin_port)).unwrap();
    use std::io::{Read, Write};
    let mut greeting = [0u8; 4];
    s.read_exact(&mut greeting).unwrap();
    let len = usize::from(greeting[0]) | usize::from(greeting[1]) << 8;
    let mut rest = vec![0u8; len];
    s.read_exact(&mut rest).unwrap();
    // A handshake response announcing 1 MiB: refused before it is read.
    s.write_all(&[0, 0, 0x10, 1]).unwrap();
    let _ = s.write_all(&[b'A'; 4096]);
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 64];
    // Closed at once (or an error sent first), not after the 10 s handshake timeout.
    match s.read(&mut buf) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the admin port kept reading a 1 MiB login packet: {e}"),
    }
}

/// `KILL [CONNECTION | QUERY] <SessionID>` on the admin interface reaches any user's client
/// session, as ProxySQL's does: before, the admin refused it (1235) and a client could kill only
/// its own user's sessions, so an operator could not end another application's stuck one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_kills_client_sessions() {
    let w = start("");
    let mut a = connect(&w, WEIR_USER, WEIR_PASS).await;
    let mut b = connect(&w, WEIR_USER, WEIR_PASS).await;
    b.query_drop("SELECT 1").await.unwrap();
    let t = Instant::now();
    let sleeper = tokio::spawn(async move {
        let slept: Result<Option<i64>, _> = a.query_first("SELECT SLEEP(30)").await;
        (slept.map_err(|e| e.to_string()), a)
    });
    let running = "SELECT SessionID FROM stats_mysql_processlist WHERE info LIKE 'SELECT SLEEP%'";
    let mut id = String::new();
    while id.is_empty() {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the SLEEP never showed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        id = value(&w, running);
    }
    admin(&w, &format!("KILL QUERY {id}"));
    let (slept, mut a) = tokio::time::timeout(Duration::from_secs(15), sleeper)
        .await
        .expect("the killed statement ended")
        .unwrap();
    // MariaDB ends a SLEEP cut short by KILL QUERY with 1317 (MySQL returns 1).
    match slept {
        Ok(v) => assert_eq!(v, Some(1)),
        Err(e) => assert!(e.contains("1317"), "{e}"),
    }
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    let one: Option<i64> = a.query_first("SELECT 1").await.unwrap();
    assert_eq!(one, Some(1), "KILL QUERY leaves the session");
    // KILL CONNECTION of the idle b: the other session.
    let b_id = value(
        &w,
        &format!("SELECT SessionID FROM stats_mysql_processlist WHERE SessionID <> {id}"),
    );
    admin(&w, &format!("KILL CONNECTION {b_id}"));
    let t = Instant::now();
    loop {
        match b.query_drop("SELECT 1").await {
            Err(_) => break,
            Ok(()) => {
                assert!(t.elapsed() < Duration::from_secs(5), "b was not killed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    // Unknown ids and bad forms are errors; a stats user may not kill.
    let (code, msg) = admin_err(&w, "KILL 999999");
    assert_eq!(code, 1094, "{msg}");
    for bad in ["KILL QUERY 1 2", "KILL CONNECTION", "KILL abc"] {
        let (code, msg) = admin_err(&w, bad);
        assert_eq!(code, 1064, "{bad}: {msg}");
    }
    let (code, msg) = admin_err_as(&w, "stats", "stats", &format!("KILL {id}"));
    assert_eq!(code, 1227, "{msg}");
}
