//! Tests of the configuration store's typed side: round trips through every layer, defaults,
//! conversion and variable errors, and opening real (good, garbage, damaged) files.

use super::*;
use crate::Module;
use weir_config::{
    Password, QueryRuleRow, ReplicationHostgroupRow, ServerRow, ServerStatus, UserRow,
};

pub(super) fn store() -> Store {
    Store::open_in_memory().expect("open in memory")
}

pub(super) fn rows(store: &Store, sql: &str) -> ResultSet {
    match store.execute(sql).expect(sql) {
        SqlOutcome::Rows(rs) => rs,
        other => panic!("{sql}: expected rows, got {other:?}"),
    }
}

pub(super) fn affected(store: &Store, sql: &str) -> (u64, u64) {
    match store.execute(sql).expect(sql) {
        SqlOutcome::Affected {
            rows,
            last_insert_id,
        } => (rows, last_insert_id),
        other => panic!("{sql}: expected affected rows, got {other:?}"),
    }
}

/// The single value of a one-row, one-column query.
pub(super) fn scalar(store: &Store, sql: &str) -> Option<String> {
    let rs = rows(store, sql);
    assert_eq!(rs.rows.len(), 1, "{sql}: {rs:?}");
    rs.rows[0][0].clone()
}

fn hash_password() -> Password {
    Password::parse("*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9")
}

/// Tables where every column differs from its default, and Option columns are both set
/// (rule 10) and NULL (rule 20).
fn sample_tables() -> ConfigTables {
    let mysql_servers = vec![
        ServerRow {
            hostgroup_id: 7,
            hostname: "db-a.example".to_string(),
            port: 3307,
            gtid_port: 3400,
            status: ServerStatus::OfflineSoft,
            weight: 250,
            compression: 3,
            max_connections: 77,
            max_replication_lag: 30,
            use_ssl: true,
            max_latency_ms: 1500,
            comment: "primary's \"twin\"".to_string(),
        },
        ServerRow::new(1, "/run/mysqld/mysqld.sock", 0),
        ServerRow::new(1, "db-b", 3306),
    ];
    let mut mysql_users = vec![
        UserRow {
            username: "app".to_string(),
            password: hash_password(),
            active: false,
            use_ssl: true,
            default_hostgroup: 9,
            default_schema: Some("shop".to_string()),
            schema_locked: true,
            transaction_persistent: false,
            fast_forward: true,
            backend: false,
            frontend: true,
            max_connections: 12,
            attributes: r#"{"spiffe_id":"x"}"#.to_string(),
            comment: "the app".to_string(),
        },
        UserRow::new("app", Password::Clear("s3cret".to_string())),
        UserRow::new("report", Password::Clear(String::new())),
    ];
    mysql_users[1].frontend = false;
    let mysql_query_rules = vec![
        QueryRuleRow {
            rule_id: 10,
            active: true,
            username: Some("app".to_string()),
            schemaname: Some("shop".to_string()),
            flag_in: 3,
            client_addr: Some("10.0.0.%".to_string()),
            proxy_addr: Some("127.0.0.1".to_string()),
            proxy_port: Some(6033),
            digest: Some("0x1A2B3C4D5E6F7A8B".to_string()),
            match_digest: Some("^SELECT .* FOR UPDATE".to_string()),
            match_pattern: Some("^SELECT (.*) FROM t$".to_string()),
            negate_match_pattern: true,
            re_modifiers: "CASELESS,GLOBAL".to_string(),
            flag_out: Some(-4),
            replace_pattern: Some("SELECT \\1 FROM t2".to_string()),
            destination_hostgroup: Some(2),
            cache_ttl: Some(5000),
            cache_empty_result: Some(false),
            cache_timeout: Some(100),
            reconnect: Some(true),
            timeout: Some(30000),
            retries: Some(1000),
            delay: Some(5),
            next_query_flag_in: Some(6),
            mirror_flag_out: Some(7),
            mirror_hostgroup: Some(8),
            error_msg: Some("nope".to_string()),
            ok_msg: Some("fine".to_string()),
            sticky_conn: Some(true),
            multiplex: Some(2),
            gtid_from_hostgroup: Some(1),
            log: Some(false),
            apply: true,
            attributes: "{}".to_string(),
            comment: Some("a rule".to_string()),
        },
        QueryRuleRow::new(20),
    ];
    let mysql_replication_hostgroups = vec![
        ReplicationHostgroupRow {
            writer_hostgroup: 1,
            reader_hostgroup: 2,
            check_type: "read_only&innodb_read_only".to_string(),
            comment: "cluster 1".to_string(),
        },
        ReplicationHostgroupRow::new(10, 11),
    ];
    let mut t = ConfigTables {
        mysql_servers,
        mysql_users,
        mysql_query_rules,
        mysql_replication_hostgroups,
        ..ConfigTables::default()
    };
    for (name, value) in [
        ("mysql-threads", "8"),
        ("mysql-monitor_username", "watcher"),
        ("mysql-multiplexing", "OFF"),
        ("mysql-server_version", "5.7.99"),
    ] {
        t.mysql_variables.set(name, value).expect(name);
    }
    for (name, value) in [
        ("admin-admin_credentials", "admin:admin;dba:pw"),
        ("admin-web_port", "6081"),
        ("admin-read_only", "1"),
    ] {
        t.admin_variables.set(name, value).expect(name);
    }
    t
}

/// The rows of `tables` in the order the store returns them (primary-key order).
fn sorted(mut t: ConfigTables) -> ConfigTables {
    t.mysql_servers.sort_by(|a, b| {
        (a.hostgroup_id, &a.hostname, a.port).cmp(&(b.hostgroup_id, &b.hostname, b.port))
    });
    t.mysql_users
        .sort_by(|a, b| (&a.username, a.backend).cmp(&(&b.username, b.backend)));
    t.mysql_query_rules.sort_by_key(|r| r.rule_id);
    t.mysql_replication_hostgroups
        .sort_by_key(|r| r.writer_hostgroup);
    t
}

fn write_all(store: &Store, target: Target, tables: &ConfigTables) {
    for module in Module::ALL {
        store
            .write_module(target, module, tables)
            .unwrap_or_else(|e| panic!("{module:?} to {target:?}: {e}"));
    }
}

#[test]
fn round_trip_through_every_layer() {
    let tables = sample_tables();
    for target in [Target::Memory, Target::Disk, Target::Runtime] {
        let s = store();
        write_all(&s, target, &tables);
        let back = s.read_tables(target).expect("read back");
        assert_eq!(back, sorted(tables.clone()), "{target:?}");
        // The other layers saw nothing.
        for other in [Target::Memory, Target::Disk, Target::Runtime] {
            if other != target {
                assert_eq!(s.read_tables(other).expect("read"), ConfigTables::default());
            }
        }
    }
}

#[test]
fn values_are_stored_as_proxysql_shows_them() {
    let s = store();
    write_all(&s, Target::Memory, &sample_tables());
    assert_eq!(
        scalar(
            &s,
            "SELECT password FROM mysql_users WHERE username='app' AND backend=0"
        ),
        Some("*6BB4837EB74329105EE4568DDA7DC67ED2CA2AD9".to_string())
    );
    assert_eq!(
        scalar(&s, "SELECT status FROM mysql_servers WHERE hostgroup_id=7"),
        Some("OFFLINE_SOFT".to_string())
    );
    assert_eq!(
        scalar(
            &s,
            "SELECT variable_value FROM global_variables WHERE variable_name='mysql-multiplexing'"
        ),
        Some("false".to_string())
    );
    assert_eq!(
        scalar(
            &s,
            "SELECT cache_ttl FROM mysql_query_rules WHERE rule_id=20"
        ),
        None
    );
    // Every variable of both prefixes is written, under its full name.
    let count = |prefix: &str| {
        scalar(
            &s,
            &format!("SELECT count(*) FROM global_variables WHERE variable_name LIKE '{prefix}%'"),
        )
    };
    let tables = ConfigTables::default();
    assert_eq!(
        count("mysql-"),
        Some(tables.mysql_variables.iter().count().to_string())
    );
    assert_eq!(
        count("admin-"),
        Some(tables.admin_variables.iter().count().to_string())
    );
}

#[test]
fn write_module_touches_only_its_module() {
    let s = store();
    let tables = sample_tables();
    write_all(&s, Target::Memory, &tables);
    let empty = ConfigTables::default();
    s.write_module(Target::Memory, Module::MysqlUsers, &empty)
        .expect("users");
    s.write_module(Target::Memory, Module::MysqlVariables, &empty)
        .expect("mysql variables");
    let back = s.read_tables(Target::Memory).expect("read");
    let mut expected = sorted(tables);
    expected.mysql_users.clear();
    expected.mysql_variables = empty.mysql_variables.clone();
    assert_eq!(back, expected);
    // Servers and replication hostgroups travel together.
    s.write_module(Target::Memory, Module::MysqlServers, &empty)
        .expect("servers");
    let back = s.read_tables(Target::Memory).expect("read");
    assert!(back.mysql_servers.is_empty() && back.mysql_replication_hostgroups.is_empty());
    assert_eq!(back.mysql_query_rules.len(), 2);
    assert_eq!(back.admin_variables.get("web_port"), Some("6081"));
}

/// A seed from the config file is written to every module and layer at once: one bad row
/// (here a user's attributes that are not JSON) leaves every table as it was, where before the
/// servers written ahead of it stayed replaced (`--initial` lost the saved servers).
#[test]
fn a_failed_seed_changes_nothing() {
    let s = store();
    let tables = sample_tables();
    s.write_everywhere(&tables).expect("seed");
    let mut bad = ConfigTables::default();
    bad.mysql_servers.push(ServerRow::new(7, "other", 3306));
    let mut user = UserRow::new("u", Password::Clear(String::new()));
    user.attributes = "{bad".into();
    bad.mysql_users.push(user);
    s.write_everywhere(&bad).expect_err("bad attributes");
    let expected = sorted(tables);
    assert_eq!(s.read_tables(Target::Disk).expect("disk"), expected);
    assert_eq!(s.read_tables(Target::Memory).expect("memory"), expected);
}

#[test]
fn a_failed_write_changes_nothing() {
    let s = store();
    let tables = sample_tables();
    write_all(&s, Target::Disk, &tables);
    let mut bad = tables.clone();
    bad.mysql_servers[2].weight = 20_000_000;
    let err = s
        .write_module(Target::Disk, Module::MysqlServers, &bad)
        .expect_err("weight out of range");
    let msg = err.to_string();
    assert!(msg.contains("disk.mysql_servers"), "{msg}");
    assert!(
        msg.contains("hostgroup_id=1, hostname='db-b', port=3306"),
        "{msg}"
    );
    assert!(msg.contains("weight"), "{msg}");
    assert_eq!(s.read_tables(Target::Disk).expect("read"), sorted(tables));
}

#[test]
fn defaults_match_proxysql() {
    let s = store();
    s.execute("INSERT INTO mysql_servers (hostname) VALUES ('h')")
        .expect("server");
    s.execute("INSERT INTO mysql_users (username, password) VALUES ('u', 'p')")
        .expect("user");
    s.execute("INSERT INTO mysql_query_rules (match_digest) VALUES ('^SELECT')")
        .expect("rule");
    s.execute("INSERT INTO mysql_replication_hostgroups (writer_hostgroup, reader_hostgroup) VALUES (1, 2)")
        .expect("pair");
    let t = s.read_tables(Target::Memory).expect("read");
    assert_eq!(t.mysql_servers, [ServerRow::new(0, "h", 3306)]);
    assert_eq!(
        t.mysql_users,
        [UserRow::new("u", Password::Clear("p".to_string()))]
    );
    let mut rule = QueryRuleRow::new(1);
    rule.match_digest = Some("^SELECT".to_string());
    assert_eq!(t.mysql_query_rules, [rule]);
    assert_eq!(
        t.mysql_replication_hostgroups,
        [ReplicationHostgroupRow::new(1, 2)]
    );
    // A user inserted without a password has NULL, read as the empty password.
    s.execute("INSERT INTO mysql_users (username) VALUES ('nopw')")
        .expect("user");
    let t = s.read_tables(Target::Memory).expect("read");
    assert_eq!(t.mysql_users[0].password, Password::Clear(String::new()));
}

/// Inserts rows the CHECKs would refuse, as a damaged or hand-edited database could hold.
fn insert_unchecked(s: &Store, sql: &str) {
    s.execute("PRAGMA ignore_check_constraints = 1")
        .expect("pragma");
    s.execute(sql).expect(sql);
    s.execute("PRAGMA ignore_check_constraints = 0")
        .expect("pragma");
}

fn read_error(s: &Store, target: Target) -> String {
    s.read_tables(target).expect_err("bad value").to_string()
}

#[test]
fn read_errors_name_table_row_and_column() {
    let cases: &[(&str, &str)] = &[
        (
            "INSERT INTO {t}mysql_servers (hostgroup_id, hostname, port) VALUES (1, 'db1', 70000)",
            "{t}mysql_servers, row (hostgroup_id=1, hostname='db1', port=70000), column port: value 70000 out of range: expected 0..=65535",
        ),
        (
            "INSERT INTO {t}mysql_servers (hostgroup_id, hostname) VALUES (-1, 'db1')",
            "{t}mysql_servers, row (hostgroup_id=-1, hostname='db1', port=3306), column hostgroup_id: value -1 out of range: expected 0..=4294967295",
        ),
        (
            "INSERT INTO {t}mysql_servers (hostname, weight) VALUES ('db1', -5)",
            "column weight: value -5 out of range",
        ),
        (
            "INSERT INTO {t}mysql_servers (hostname, status) VALUES ('db1', 'FOO')",
            "column status: unknown server status 'FOO'",
        ),
        (
            "INSERT INTO {t}mysql_servers (hostname, port) VALUES ('db1', 3306.5)",
            "column port: expected an integer, found 3306.5",
        ),
        (
            "INSERT INTO {t}mysql_servers (hostname, max_connections) VALUES ('db1', 'many')",
            "column max_connections: expected an integer, found 'many'",
        ),
        (
            "INSERT INTO {t}mysql_users (username, backend, use_ssl) VALUES ('bob', 1, 7)",
            "{t}mysql_users, row (username='bob', backend=1), column use_ssl: expected 0 or 1, found 7",
        ),
        (
            "INSERT INTO {t}mysql_query_rules (rule_id, flagIN) VALUES (5, 4294967296)",
            "{t}mysql_query_rules, row (rule_id=5), column flagIN: value 4294967296 out of range",
        ),
        (
            "INSERT INTO {t}mysql_query_rules (rule_id, multiplex) VALUES (6, 300)",
            "row (rule_id=6), column multiplex: value 300 out of range",
        ),
    ];
    for target in [Target::Memory, Target::Disk, Target::Runtime] {
        let prefix = match target {
            Target::Memory => "main.",
            Target::Disk => "disk.",
            Target::Runtime => "main.runtime_",
        };
        for (sql, expected) in cases {
            let s = store();
            insert_unchecked(&s, &sql.replace("{t}", prefix));
            let msg = read_error(&s, target);
            let expected = expected.replace("{t}", prefix);
            assert!(
                msg.contains(&expected),
                "{target:?}: {msg}\nexpected: {expected}"
            );
        }
    }
}

#[test]
fn a_null_in_a_column_without_null_is_an_error() {
    // Only a table created by someone else can hold such a NULL: simulate one.
    let s = store();
    s.execute("DROP TABLE main.mysql_replication_hostgroups")
        .expect("drop");
    s.execute(
        "CREATE TABLE main.mysql_replication_hostgroups \
         (writer_hostgroup INT, reader_hostgroup INT, check_type VARCHAR, comment VARCHAR)",
    )
    .expect("create");
    s.execute("INSERT INTO main.mysql_replication_hostgroups VALUES (1, 2, NULL, '')")
        .expect("insert");
    assert_eq!(
        read_error(&s, Target::Memory),
        "main.mysql_replication_hostgroups, row (writer_hostgroup=1), column check_type: NULL is not allowed here"
    );
}

#[test]
fn variable_rows_are_validated() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "mysql-nope",
            "1",
            "main.global_variables: unknown variable 'mysql-nope'",
        ),
        (
            "admin-nope",
            "1",
            "main.global_variables: unknown variable 'admin-nope'",
        ),
        (
            "other-thing",
            "1",
            "main.global_variables: unknown variable 'other-thing'",
        ),
        (
            "mysql-threads",
            "lots",
            "main.global_variables: variable 'mysql-threads': invalid value 'lots'",
        ),
        (
            "admin-web_port",
            "70000",
            "main.global_variables: variable 'admin-web_port': value 70000 out of range",
        ),
    ];
    for (name, value, expected) in cases {
        let s = store();
        s.execute(&format!(
            "INSERT INTO global_variables VALUES ('{name}', '{value}')"
        ))
        .expect("insert");
        let msg = read_error(&s, Target::Memory);
        assert!(msg.starts_with(expected), "{msg}");
    }
    // Two rows for one variable, in other letter case: refused, not one silently ignored.
    let s = store();
    s.execute(
        "INSERT INTO global_variables VALUES ('mysql-default_query_delay', '0'), \
         ('mysql-DEFAULT_QUERY_DELAY', '500')",
    )
    .expect("insert");
    let msg = read_error(&s, Target::Memory);
    assert!(
        msg.starts_with("main.global_variables: variable 'mysql-") && msg.contains("letter case"),
        "{msg}"
    );
    // Names are matched ignoring case, values normalized, missing rows keep their default.
    let s = store();
    s.execute("INSERT INTO global_variables VALUES ('MYSQL-Multiplexing', 'off')")
        .expect("insert");
    let t = s.read_tables(Target::Memory).expect("read");
    assert_eq!(t.mysql_variables.get("multiplexing"), Some("false"));
    assert_eq!(t.mysql_variables.get("threads"), Some("4"));
}

#[test]
fn disk_survives_reopening() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tables = sample_tables();
    {
        let s = Store::open(dir.path()).expect("first open");
        assert!(s.disk_is_empty().expect("empty"));
        write_all(&s, Target::Disk, &tables);
        assert!(!s.disk_is_empty().expect("not empty"));
        let rs = s.show_databases().expect("databases");
        let file = rs.rows[1][2].clone().expect("disk file");
        assert_eq!(std::path::Path::new(&file), dir.path().join("weir.db"));
    }
    let s = Store::open(dir.path()).expect("second open");
    assert!(!s.disk_is_empty().expect("still not empty"));
    assert_eq!(s.read_tables(Target::Disk).expect("disk"), sorted(tables));
    // Memory starts empty: loading from disk is the caller's decision.
    assert_eq!(
        s.read_tables(Target::Memory).expect("memory"),
        ConfigTables::default()
    );
}

#[test]
fn a_garbage_disk_file_is_refused_and_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("weir.db");
    let garbage: Vec<u8> = b"this is not a database, but it is someone's file\n"
        .iter()
        .copied()
        .cycle()
        .take(8192)
        .collect();
    std::fs::write(&path, &garbage).expect("write garbage");
    let err = Store::open(dir.path()).expect_err("garbage refused");
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert!(msg.contains("not a database"), "{msg}");
    assert_eq!(std::fs::read(&path).expect("read back"), garbage);
}

#[test]
fn a_missing_datadir_names_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("no/such/dir");
    let err = Store::open(&missing).expect_err("missing datadir");
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Open { .. }), "{msg}");
    assert!(
        msg.contains(&missing.join("weir.db").display().to_string()),
        "{msg}"
    );
}

#[test]
fn a_damaged_disk_file_is_refused_and_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("weir.db");
    {
        let s = Store::open(dir.path()).expect("create");
        write_all(&s, Target::Disk, &sample_tables());
    }
    // Keep the header page, scribble over every later page: ATTACH succeeds, the check fails.
    let mut bytes = std::fs::read(&path).expect("read");
    let page = usize::from(u16::from_be_bytes([bytes[16], bytes[17]]));
    assert!(
        bytes.len() > 2 * page,
        "database too small: {}",
        bytes.len()
    );
    for (i, b) in bytes.iter_mut().enumerate().skip(page) {
        *b = (i % 251) as u8;
    }
    std::fs::write(&path, &bytes).expect("write");
    let err = Store::open(dir.path()).expect_err("damage refused");
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Corrupt { .. }), "{msg}");
    assert!(msg.contains(&path.display().to_string()), "{msg}");
    assert_eq!(std::fs::read(&path).expect("read back"), bytes);
}

#[test]
fn read_module_reads_only_that_module() {
    let s = store();
    s.execute("INSERT INTO mysql_servers (hostname) VALUES ('h')")
        .expect("server");
    s.execute(
        "INSERT INTO global_variables VALUES ('mysql-connect_timeout_server', 'soon'), \
         ('admin-web_enabled', 'false')",
    )
    .expect("variables");
    // The bad mysql-* variable fails the whole read and the mysql variables module...
    assert!(s.read_tables(Target::Memory).is_err());
    let e = s
        .read_module(Target::Memory, Module::MysqlVariables)
        .expect_err("bad variable")
        .to_string();
    assert!(e.contains("mysql-connect_timeout_server"), "{e}");
    // ...but not the other modules.
    let t = s
        .read_module(Target::Memory, Module::MysqlServers)
        .expect("servers");
    assert_eq!(t.mysql_servers, [ServerRow::new(0, "h", 3306)]);
    assert!(t.mysql_users.is_empty());
    s.read_module(Target::Memory, Module::AdminVariables)
        .expect("admin variables");
    s.read_module(Target::Memory, Module::MysqlUsers)
        .expect("users");
}
