//! Tests of the SQL surface of the store: the schemas and their CHECKs, statements as DBAs
//! type them (double quotes, joins across schemas, INSERT ... SELECT from stats), the SHOW
//! statements, bulk row replacement and the collations.

use super::tests::{affected, rows, scalar, store};
use super::*;
use rusqlite::types::Value;
use weir_sql::COLLATIONS;

#[test]
fn every_schema_has_its_tables() {
    let s = store();
    let names = |schema: Option<&str>| -> Vec<String> {
        s.show_tables(schema, None)
            .expect("show tables")
            .rows
            .into_iter()
            .map(|r| r[0].clone().expect("name"))
            .collect()
    };
    let config = [
        "global_variables",
        "mysql_collations",
        "mysql_query_rules",
        "mysql_replication_hostgroups",
        "mysql_servers",
        "mysql_users",
    ];
    let mut main: Vec<String> = config.iter().map(|s| s.to_string()).collect();
    main.extend(
        [
            "runtime_global_variables",
            "runtime_mysql_query_rules",
            "runtime_mysql_replication_hostgroups",
            "runtime_mysql_servers",
            "runtime_mysql_users",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    main.sort();
    assert_eq!(names(None), main);
    assert_eq!(names(Some("MAIN")), main);
    assert_eq!(names(Some("disk")), config);
    assert_eq!(
        names(Some("stats")),
        [
            "stats_mysql_commands_counters",
            "stats_mysql_connection_pool",
            "stats_mysql_connection_pool_reset",
            "stats_mysql_errors",
            "stats_mysql_errors_reset",
            "stats_mysql_global",
            "stats_mysql_processlist",
            "stats_mysql_query_digest",
            "stats_mysql_query_digest_reset",
            "stats_mysql_query_rules",
            "stats_mysql_users",
        ]
    );
    assert_eq!(
        names(Some("monitor")),
        [
            "mysql_server_connect_log",
            "mysql_server_ping_log",
            "mysql_server_read_only_log",
            "mysql_server_replication_lag_log",
        ]
    );
    let rs = s.show_tables(None, None).expect("show tables");
    assert_eq!(rs.columns, ["tables"]);
    let like = |schema, pattern| -> Vec<String> {
        s.show_tables(schema, Some(pattern))
            .expect("show tables like")
            .rows
            .into_iter()
            .map(|r| r[0].clone().expect("name"))
            .collect()
    };
    assert_eq!(like(None, "MYSQL\\_SERVERS"), ["mysql_servers"]);
    assert_eq!(
        like(Some("stats"), "%connection_pool%"),
        [
            "stats_mysql_connection_pool",
            "stats_mysql_connection_pool_reset"
        ]
    );
    assert_eq!(like(None, "mysql_user_"), ["mysql_users"]);
    assert!(like(None, "nothing%").is_empty());
    let err = s
        .show_tables(Some("nope"), None)
        .expect_err("unknown schema");
    assert_eq!(err.to_string(), "unknown database 'nope'");
}

#[test]
fn show_databases_lists_the_four_schemas() {
    let s = store();
    let rs = s.show_databases().expect("show databases");
    assert_eq!(rs.columns, ["seq", "name", "file"]);
    let names: Vec<_> = rs
        .rows
        .iter()
        .map(|r| r[1].clone().expect("name"))
        .collect();
    assert_eq!(names, ["main", "disk", "stats", "monitor"]);
}

#[test]
fn checks_refuse_bad_values_naming_the_column() {
    let s = store();
    let cases: &[(&str, &str)] = &[
        (
            "INSERT INTO mysql_servers (hostgroup_id, hostname) VALUES (-1, 'h')",
            "hostgroup_id",
        ),
        (
            "INSERT INTO mysql_servers (hostname, port) VALUES ('h', 70000)",
            "port",
        ),
        (
            "INSERT INTO mysql_servers (hostname, port) VALUES ('h', -1)",
            "port",
        ),
        (
            "INSERT INTO mysql_servers (hostname, gtid_port) VALUES ('h', 65536)",
            "gtid_port",
        ),
        (
            "INSERT INTO mysql_servers (hostname, status) VALUES ('h', 'FOO')",
            "status",
        ),
        (
            "INSERT INTO mysql_servers (hostname, weight) VALUES ('h', -1)",
            "weight",
        ),
        (
            "INSERT INTO mysql_servers (hostname, weight) VALUES ('h', 10000001)",
            "weight",
        ),
        (
            "INSERT INTO mysql_servers (hostname, compression) VALUES ('h', 102401)",
            "compression",
        ),
        (
            "INSERT INTO mysql_servers (hostname, max_connections) VALUES ('h', -1)",
            "max_connections",
        ),
        (
            "INSERT INTO mysql_servers (hostname, max_replication_lag) VALUES ('h', 126144001)",
            "max_replication_lag",
        ),
        (
            "INSERT INTO mysql_servers (hostname, use_ssl) VALUES ('h', 2)",
            "use_ssl",
        ),
        (
            "INSERT INTO mysql_servers (hostname, max_latency_ms) VALUES ('h', -5)",
            "max_latency_ms",
        ),
        (
            "INSERT INTO mysql_servers (hostname) VALUES (NULL)",
            "hostname",
        ),
        (
            "INSERT INTO mysql_users (username, active) VALUES ('u', 2)",
            "active",
        ),
        (
            "INSERT INTO mysql_users (username, use_ssl) VALUES ('u', 2)",
            "use_ssl",
        ),
        (
            "INSERT INTO mysql_users (username, default_hostgroup) VALUES ('u', -1)",
            "default_hostgroup",
        ),
        (
            "INSERT INTO mysql_users (username, schema_locked) VALUES ('u', 2)",
            "schema_locked",
        ),
        (
            "INSERT INTO mysql_users (username, transaction_persistent) VALUES ('u', 2)",
            "transaction_persistent",
        ),
        (
            "INSERT INTO mysql_users (username, fast_forward) VALUES ('u', 2)",
            "fast_forward",
        ),
        (
            "INSERT INTO mysql_users (username, backend) VALUES ('u', 2)",
            "backend",
        ),
        (
            "INSERT INTO mysql_users (username, frontend) VALUES ('u', 2)",
            "frontend",
        ),
        (
            "INSERT INTO mysql_users (username, max_connections) VALUES ('u', -1)",
            "max_connections",
        ),
        (
            "INSERT INTO mysql_users (username, attributes) VALUES ('u', 'not json')",
            "attributes",
        ),
        (
            "INSERT INTO mysql_query_rules (active) VALUES (2)",
            "active",
        ),
        (
            "INSERT INTO mysql_query_rules (proxy_port) VALUES (65536)",
            "proxy_port",
        ),
        (
            "INSERT INTO mysql_query_rules (negate_match_pattern) VALUES (2)",
            "negate_match_pattern",
        ),
        (
            "INSERT INTO mysql_query_rules (re_modifiers) VALUES (NULL)",
            "re_modifiers",
        ),
        (
            "INSERT INTO mysql_query_rules (destination_hostgroup) VALUES (-1)",
            "destination_hostgroup",
        ),
        (
            "INSERT INTO mysql_query_rules (cache_ttl) VALUES (0)",
            "cache_ttl",
        ),
        (
            "INSERT INTO mysql_query_rules (cache_empty_result) VALUES (2)",
            "cache_empty_result",
        ),
        (
            "INSERT INTO mysql_query_rules (cache_timeout) VALUES (-1)",
            "cache_timeout",
        ),
        (
            "INSERT INTO mysql_query_rules (reconnect) VALUES (2)",
            "reconnect",
        ),
        (
            "INSERT INTO mysql_query_rules (timeout) VALUES (-1)",
            "timeout",
        ),
        (
            "INSERT INTO mysql_query_rules (retries) VALUES (1001)",
            "retries",
        ),
        ("INSERT INTO mysql_query_rules (delay) VALUES (-1)", "delay"),
        (
            "INSERT INTO mysql_query_rules (mirror_hostgroup) VALUES (-1)",
            "mirror_hostgroup",
        ),
        (
            "INSERT INTO mysql_query_rules (sticky_conn) VALUES (2)",
            "sticky_conn",
        ),
        (
            "INSERT INTO mysql_query_rules (multiplex) VALUES (3)",
            "multiplex",
        ),
        (
            "INSERT INTO mysql_query_rules (gtid_from_hostgroup) VALUES (-1)",
            "gtid_from_hostgroup",
        ),
        ("INSERT INTO mysql_query_rules (log) VALUES (2)", "log"),
        ("INSERT INTO mysql_query_rules (apply) VALUES (2)", "apply"),
        (
            "INSERT INTO mysql_query_rules (attributes) VALUES ('{')",
            "attributes",
        ),
        (
            "INSERT INTO mysql_replication_hostgroups VALUES (-1, 2, 'read_only', '')",
            "writer_hostgroup",
        ),
        (
            "INSERT INTO mysql_replication_hostgroups VALUES (1, 1, 'read_only', '')",
            "reader_hostgroup",
        ),
        (
            "INSERT INTO mysql_replication_hostgroups VALUES (1, -2, 'read_only', '')",
            "reader_hostgroup",
        ),
        (
            "INSERT INTO mysql_replication_hostgroups VALUES (1, 2, 'writable', '')",
            "check_type",
        ),
        (
            "INSERT INTO global_variables VALUES ('mysql-threads', NULL)",
            "variable_value",
        ),
    ];
    for (sql, column) in cases {
        for schema in ["main", "disk"] {
            let sql = sql.replace("INTO ", &format!("INTO {schema}."));
            let err = s.execute(&sql).expect_err(&sql);
            let msg = err.to_string();
            assert!(
                msg.contains("constraint failed") && msg.contains(column),
                "{sql}: {msg}"
            );
        }
    }
    // Status in any case, as ProxySQL 2.x's CHECK (UPPER(status) IN (...)).
    for schema in ["main", "disk"] {
        s.execute(&format!(
            "INSERT INTO {schema}.mysql_servers (hostname, status) VALUES ('lower', 'offline_soft')"
        ))
        .expect("lower-case status");
        s.execute(&format!("DELETE FROM {schema}.mysql_servers"))
            .expect("delete");
    }
    // Keys: PK and UNIQUE.
    s.execute("INSERT INTO mysql_servers (hostname) VALUES ('h')")
        .expect("first");
    let msg = s
        .execute("INSERT INTO mysql_servers (hostname) VALUES ('h')")
        .expect_err("duplicate")
        .to_string();
    assert!(msg.contains("UNIQUE constraint failed"), "{msg}");
    s.execute("INSERT INTO mysql_users (username, backend, frontend) VALUES ('u', 1, 1)")
        .expect("first user");
    let msg = s
        .execute("INSERT INTO mysql_users (username, backend, frontend) VALUES ('u', 0, 1)")
        .expect_err("same frontend")
        .to_string();
    assert!(
        msg.contains("mysql_users.username, mysql_users.frontend"),
        "{msg}"
    );
    s.execute("INSERT INTO mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup) VALUES (1, 2)")
        .expect("pair");
    let msg = s
        .execute("INSERT INTO mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup) VALUES (3, 2)")
        .expect_err("reader reused")
        .to_string();
    assert!(msg.contains("reader_hostgroup"), "{msg}");
    // Every check type of the config crate is accepted.
    for (i, check) in weir_config::CHECK_TYPES.iter().enumerate() {
        s.execute(&format!(
            "INSERT INTO disk.mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup, check_type) VALUES ({}, {}, '{check}')",
            100 + 2 * i,
            101 + 2 * i
        ))
        .expect(check);
    }
}

#[test]
fn double_quoted_strings_are_literals() {
    let s = store();
    s.execute(r#"INSERT INTO mysql_servers (hostgroup_id, hostname) VALUES (1, "x")"#)
        .expect("insert with double quotes");
    let rs = rows(&s, r#"SELECT * FROM mysql_servers WHERE hostname="x""#);
    assert_eq!(rs.rows.len(), 1);
    assert_eq!(rs.rows[0][1].as_deref(), Some("x"));
    let (n, _) = affected(
        &s,
        r#"UPDATE mysql_servers SET comment="c" WHERE hostname="x""#,
    );
    assert_eq!(n, 1);
}

#[test]
fn execute_reports_rows_and_ids() {
    let s = store();
    let (n, id) = affected(
        &s,
        "INSERT INTO mysql_query_rules (active, match_digest, apply) VALUES (1, '^SELECT', 1);",
    );
    assert_eq!((n, id), (1, 1));
    let (n, id) = affected(&s, "INSERT INTO mysql_query_rules (active) VALUES (1), (0)");
    assert_eq!((n, id), (2, 3));
    let (n, id) = affected(&s, "UPDATE mysql_query_rules SET active = 1");
    assert_eq!((n, id), (3, 0));
    // No stale counts from the previous statement.
    assert_eq!(affected(&s, "CREATE TABLE scratch (a INT)"), (0, 0));
    assert_eq!(
        affected(&s, "DELETE FROM mysql_query_rules WHERE rule_id > 100"),
        (0, 0)
    );
    assert_eq!(affected(&s, "  delete from mysql_query_rules  ; "), (3, 0));
    let rs = rows(
        &s,
        "SELECT 1 AS one, NULL AS nil, 2.5 AS half, 'x' AS t, x'41' AS b",
    );
    assert_eq!(rs.columns, ["one", "nil", "half", "t", "b"]);
    assert_eq!(
        rs.rows,
        [[
            Some("1".to_string()),
            None,
            Some("2.5".to_string()),
            Some("x".to_string()),
            Some("A".to_string())
        ]]
    );
    assert!(matches!(s.execute("  "), Err(StoreError::EmptyQuery)));
    assert!(matches!(
        s.execute("-- just a comment"),
        Err(StoreError::EmptyQuery)
    ));
    let msg = s
        .execute("SELECT * FROM nowhere")
        .expect_err("no table")
        .to_string();
    assert_eq!(msg, "no such table: nowhere");
    let msg = s
        .execute("SELECT 1; SELECT 2")
        .expect_err("two")
        .to_string();
    assert!(msg.contains("Multiple statements"), "{msg}");
}

#[test]
fn unqualified_names_resolve_across_schemas() {
    let s = store();
    s.replace_rows(
        "stats.stats_mysql_global",
        &[
            vec![Value::Text("Questions".into()), Value::Text("42".into())],
            vec![
                Value::Text("Active_Transactions".into()),
                Value::Text("0".into()),
            ],
        ],
    )
    .expect("stats");
    let rs = rows(
        &s,
        "SELECT * FROM stats_mysql_global ORDER BY Variable_Name",
    );
    assert_eq!(rs.columns, ["Variable_Name", "Variable_Value"]);
    assert_eq!(
        rs.rows[1],
        [Some("Questions".to_string()), Some("42".to_string())]
    );

    s.execute("INSERT INTO mysql_servers (hostgroup_id, hostname, port) VALUES (1, 'db1', 3306)")
        .expect("server");
    let digest_row = |hg: i64, text: &str, count: i64| {
        vec![
            Value::Integer(hg),
            Value::Text("shop".into()),
            Value::Text("app".into()),
            Value::Text(String::new()),
            Value::Text(format!("0x{count:016X}")),
            Value::Text(text.into()),
            Value::Integer(count),
            Value::Integer(1_700_000_000),
            Value::Integer(1_700_000_100),
            Value::Integer(1000 * count),
            Value::Integer(5),
            Value::Integer(500),
            Value::Integer(0),
            Value::Integer(count),
        ]
    };
    s.replace_rows(
        "stats.stats_mysql_query_digest",
        &[
            digest_row(1, "SELECT * FROM t WHERE id=?", 500),
            digest_row(1, "SELECT c FROM u", 3),
            digest_row(2, "UPDATE t SET a=?", 900),
        ],
    )
    .expect("digests");
    let rs = rows(
        &s,
        "SELECT s.hostname, d.count_star FROM stats.stats_mysql_query_digest d \
         JOIN main.mysql_servers s ON s.hostgroup_id = d.hostgroup ORDER BY d.count_star",
    );
    assert_eq!(rs.rows.len(), 2);
    assert_eq!(
        rs.rows[1],
        [Some("db1".to_string()), Some("500".to_string())]
    );

    let (n, _) = affected(
        &s,
        "INSERT INTO mysql_query_rules (active, match_digest, destination_hostgroup, apply) \
         SELECT DISTINCT 1, digest_text, 1, 1 FROM stats_mysql_query_digest \
         WHERE digest_text LIKE 'SELECT%' AND count_star > 100",
    );
    assert_eq!(n, 1);
    assert_eq!(
        scalar(&s, "SELECT match_digest FROM mysql_query_rules"),
        Some("SELECT * FROM t WHERE id=?".to_string())
    );
}

#[test]
fn monitor_logs_answer_to_old_column_names() {
    let s = store();
    let log_row = |start: i64| {
        vec![
            Value::Text("db1".into()),
            Value::Integer(3306),
            Value::Integer(start),
            Value::Integer(250),
            Value::Null,
        ]
    };
    s.replace_rows(
        "monitor.mysql_server_connect_log",
        &[log_row(1), log_row(2), log_row(3), log_row(4)],
    )
    .expect("connect log");
    let rs = rows(
        &s,
        "SELECT * FROM monitor.mysql_server_connect_log ORDER BY time_start DESC LIMIT 3",
    );
    assert_eq!(
        rs.columns,
        [
            "hostname",
            "port",
            "time_start_us",
            "connect_success_time_us",
            "connect_error",
            "time_start",
            "connect_success_time"
        ]
    );
    let starts: Vec<_> = rs
        .rows
        .iter()
        .map(|r| r[5].clone().expect("time_start"))
        .collect();
    assert_eq!(starts, ["4", "3", "2"]);
    for (table, column) in [
        ("mysql_server_ping_log", "ping_success_time"),
        ("mysql_server_read_only_log", "success_time"),
        ("mysql_server_replication_lag_log", "success_time"),
    ] {
        rows(
            &s,
            &format!("SELECT time_start, {column} FROM monitor.{table}"),
        );
    }
}

#[test]
fn replace_rows_checks_its_input() {
    let s = store();
    let err = s
        .replace_rows("stats.stats_mysql_global", &[vec![Value::Integer(1)]])
        .expect_err("width");
    assert_eq!(
        err.to_string(),
        "stats.stats_mysql_global: row 0 has 1 values but the table has 2 columns"
    );
    let err = s
        .replace_rows("stats.nope", &[])
        .expect_err("unknown table");
    assert_eq!(err.to_string(), "no such table: stats.nope");
    let err = s
        .replace_rows("stats.x; DROP TABLE y", &[])
        .expect_err("bad name");
    assert!(matches!(err, StoreError::InvalidTableName(_)), "{err}");
    // Replacing twice keeps only the second set.
    let row = |n: &str| vec![Value::Text(n.into()), Value::Text("1".into())];
    s.replace_rows("stats.stats_mysql_global", &[row("a"), row("b")])
        .expect("first");
    s.replace_rows("stats.stats_mysql_global", &[row("c")])
        .expect("second");
    assert_eq!(
        scalar(
            &s,
            "SELECT group_concat(Variable_Name) FROM stats_mysql_global"
        ),
        Some("c".to_string())
    );
}

#[test]
fn show_create_table_prints_the_ddl() {
    let s = store();
    let rs = s.show_create_table("mysql_servers").expect("main table");
    assert_eq!(rs.columns, ["table", "Create Table"]);
    assert_eq!(rs.rows[0][0].as_deref(), Some("mysql_servers"));
    let ddl = rs.rows[0][1].clone().expect("ddl");
    assert!(ddl.starts_with("CREATE TABLE mysql_servers ("), "{ddl}");
    assert!(ddl.contains("CHECK (port >= 0 AND port <= 65535)"), "{ddl}");
    let rs = s.show_create_table("disk.mysql_users").expect("disk table");
    assert!(rs.rows[0][1]
        .clone()
        .expect("ddl")
        .starts_with("CREATE TABLE mysql_users ("));
    let rs = s
        .show_create_table("stats_mysql_global")
        .expect("stats table, unqualified");
    assert_eq!(rs.rows[0][0].as_deref(), Some("stats_mysql_global"));
    let rs = s
        .show_create_table("`monitor`.`mysql_server_ping_log`")
        .expect("quoted");
    assert_eq!(rs.rows.len(), 1);
    assert_eq!(
        s.show_create_table("t").expect_err("unknown").to_string(),
        "no such table: t"
    );
    assert_eq!(
        s.show_create_table("stats.mysql_servers")
            .expect_err("wrong schema")
            .to_string(),
        "no such table: stats.mysql_servers"
    );
}

#[test]
fn collations_are_mariadbs() {
    let s = store();
    for schema in ["main", "disk"] {
        assert_eq!(
            scalar(
                &s,
                &format!("SELECT count(*) FROM {schema}.mysql_collations")
            ),
            Some(COLLATIONS.len().to_string())
        );
        let rs = rows(
            &s,
            &format!("SELECT Id, Collation_name, Charset, `Default` FROM {schema}.mysql_collations WHERE Id IN (8, 33, 45, 63) ORDER BY Id"),
        );
        let got: Vec<Vec<String>> = rs
            .rows
            .into_iter()
            .map(|r| r.into_iter().map(|v| v.unwrap_or_default()).collect())
            .collect();
        assert_eq!(
            got,
            [
                ["8", "latin1_swedish_ci", "latin1", "Yes"],
                ["33", "utf8mb3_general_ci", "utf8mb3", "Yes"],
                ["45", "utf8mb4_general_ci", "utf8mb4", "Yes"],
                ["63", "binary", "binary", "Yes"],
            ]
        );
    }
    assert_eq!(
        scalar(
            &s,
            "SELECT `Default` FROM mysql_collations WHERE Collation_name = 'utf8mb4_bin'"
        ),
        Some(String::new())
    );
}

#[test]
fn stats_users_count_rows_of_unqualified_stats_tables() {
    let s = store();
    for sql in [
        "SELECT COUNT(*) FROM stats_mysql_connection_pool",
        "SELECT 1 FROM stats_mysql_users",
        "SELECT COUNT(*) FROM mysql_server_ping_log",
        "SELECT COUNT(*) FROM stats.stats_mysql_connection_pool",
    ] {
        s.execute_stats_only(sql).expect(sql);
    }
    for sql in [
        "SELECT COUNT(*) FROM mysql_users",
        "SELECT COUNT(*) FROM global_variables",
        "SELECT COUNT(*) FROM disk.mysql_servers",
        // The authorizer is not asked about the columns these compare: a password guess.
        "SELECT COUNT(*) FROM (SELECT 'u' AS username, 'p' AS password) x NATURAL JOIN mysql_users",
        "SELECT COUNT(*) FROM (SELECT 'u' AS username) x JOIN mysql_users USING (username)",
        "SELECT COUNT(*) FROM stats_mysql_global JOIN runtime_global_variables USING (variable_name)",
        "SELECT hostgroup FROM stats_mysql_connection_pool WHERE EXISTS (SELECT 1 FROM (SELECT 'admin-admin_credentials' AS variable_name) v NATURAL JOIN global_variables)",
        "SELECT * FROM dbstat",
    ] {
        let e = s.execute_stats_only(sql).expect_err(sql).to_string();
        // The two texts of a refusal the admin interface answers with 1142.
        assert!(
            e.contains("not authorized") || e.contains("prohibited"),
            "{sql}: {e}"
        );
    }
}

#[test]
fn a_runaway_statement_is_stopped_at_the_time_limit() {
    let mut s = store();
    s.set_time_limit(std::time::Duration::from_millis(200));
    let started = std::time::Instant::now();
    let e = s
        .execute("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT COUNT(*) FROM c")
        .expect_err("endless");
    assert!(matches!(e, StoreError::TimeLimit(_)), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // The next statement runs normally, with a fresh limit.
    assert_eq!(scalar(&s, "SELECT 41 + 1").as_deref(), Some("42"));
}

/// An admin result is built whole before it is sent: one past the bound is refused instead of
/// taking gigabytes from the proxy, and so is a single value past it.
#[test]
fn a_result_past_the_memory_bound_is_refused() {
    let s = store();
    let e = s
        .execute(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) \
             SELECT x, printf('%.1000c', 'x') FROM c",
        )
        .expect_err("about 200 MB");
    assert!(matches!(e, StoreError::ResultTooLarge(_)), "{e}");
    assert!(e.to_string().contains("WHERE or LIMIT"), "{e}");
    let e = s
        .execute("SELECT zeroblob(1000000000)")
        .expect_err("one value of 1 GB");
    assert!(e.to_string().contains("too big"), "{e}");
    // Below the bound, as before.
    assert_eq!(
        scalar(&s, "SELECT length(zeroblob(1000000))").as_deref(),
        Some("1000000")
    );
}
