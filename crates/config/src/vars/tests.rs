use super::*;
use std::collections::HashSet;

#[test]
fn every_default_is_valid_and_normalized() {
    for (prefix, specs) in [
        ("mysql-", MYSQL_VARIABLE_SPECS),
        ("admin-", ADMIN_VARIABLE_SPECS),
    ] {
        let mut names = HashSet::new();
        for s in specs {
            assert!(
                names.insert(s.name.to_ascii_lowercase()),
                "{prefix}{} listed twice",
                s.name
            );
            assert_eq!(
                s.kind.normalize(s.default).as_deref(),
                Ok(s.default),
                "{prefix}{}",
                s.name
            );
            assert!(!s.doc.is_empty(), "{prefix}{} has no doc", s.name);
            assert!(!s.name.starts_with(prefix), "{} carries its prefix", s.name);
            if let VarKind::Int { min, max } = s.kind {
                assert!(min <= max, "{prefix}{}", s.name);
            }
        }
    }
}

#[test]
fn compat_variables_are_present_with_their_defaults() {
    let m = Variables::mysql_defaults();
    for (name, default) in [
        ("threads", "4"),
        ("interfaces", "0.0.0.0:6033"),
        ("default_query_delay", "0"),
        ("default_query_timeout", "36000000"),
        ("connect_timeout_server", "3000"),
        ("connect_timeout_server_max", "10000"),
        ("connect_retries_on_failure", "10"),
        ("query_retries_on_failure", "1"),
        ("shun_on_failures", "5"),
        ("shun_recovery_time_sec", "10"),
        ("max_connections", "2048"),
        ("multiplexing", "true"),
        ("query_cache_size_MB", "256"),
        ("free_connections_pct", "10"),
        ("max_allowed_packet", "67108864"),
        ("monitor_enabled", "true"),
        ("monitor_username", "monitor"),
        ("monitor_password", "monitor"),
        ("monitor_connect_interval", "60000"),
        ("monitor_ping_interval", "10000"),
        ("monitor_read_only_interval", "1500"),
        ("monitor_replication_lag_interval", "10000"),
        ("monitor_history", "600000"),
        ("monitor_writer_is_also_reader", "true"),
        ("monitor_slave_lag_when_null", "60"),
        ("connect_timeout_client", "10000"),
        ("ping_interval_server_msec", "120000"),
        ("default_charset", "utf8mb4"),
        ("default_collation_connection", "utf8mb4_general_ci"),
        ("server_version", ""),
        ("shutdown_grace_period", "10000"),
        ("busy_poll_us", "0"),
        ("pipeline_depth", "1"),
        ("pipeline_max_wait_ms", "50"),
    ] {
        assert_eq!(m.get(name), Some(default), "mysql-{name}");
    }
    let a = Variables::admin_defaults();
    for (name, default) in [
        ("admin_credentials", "admin:admin"),
        ("stats_credentials", "stats:stats"),
        ("mysql_ifaces", "127.0.0.1:6032"),
        ("web_enabled", "false"),
        ("web_port", "6080"),
        ("restapi_enabled", "false"),
        ("restapi_port", "6070"),
        ("hash_passwords", "false"),
    ] {
        assert_eq!(a.get(name), Some(default), "admin-{name}");
    }
    assert!(!m.spec("threads").is_some_and(|s| s.live));
    assert!(m.spec("default_query_delay").is_some_and(|s| s.live));
}

#[test]
fn booleans_normalize() {
    let mut v = Variables::mysql_defaults();
    for (input, out) in [
        ("OFF", "false"),
        ("on", "true"),
        ("0", "false"),
        ("1", "true"),
        (" True ", "true"),
        ("FALSE", "false"),
    ] {
        assert_eq!(v.set("multiplexing", input), Ok(()), "{input}");
        assert_eq!(v.get("multiplexing"), Some(out), "{input}");
    }
    for bad in ["yes", "2", "", "truee"] {
        let e = v.set("multiplexing", bad).err().unwrap_or_default();
        assert!(e.contains("boolean"), "{bad}: {e}");
    }
    assert_eq!(
        v.get("multiplexing"),
        Some("false"),
        "a refused value changes nothing"
    );
}

#[test]
fn integers_parse_and_range_check() {
    let mut v = Variables::mysql_defaults();
    assert_eq!(v.set("threads", " 0008 "), Ok(()));
    assert_eq!(v.get("threads"), Some("8"));
    assert_eq!(v.set("threads", "+3"), Ok(()));
    assert_eq!(v.get("threads"), Some("3"));
    let e = v.set("threads", "0").err().unwrap_or_default();
    assert!(e.contains("out of range") && e.contains("1..=256"), "{e}");
    let e = v.set("threads", "four").err().unwrap_or_default();
    assert!(e.contains("integer"), "{e}");
    assert!(v.set("threads", "99999999999999999999999").is_err());
    assert!(v.set("threads", "1.5").is_err());
    assert_eq!(v.get("threads"), Some("3"));
}

#[test]
fn server_versions_are_checked() {
    let mut v = Variables::mysql_defaults();
    for ok in ["", "8.0.36", " 5.5.5-10.11.19-MariaDB-log ", "10.6"] {
        assert_eq!(v.set("server_version", ok), Ok(()), "{ok}");
    }
    assert_eq!(v.get("server_version"), Some("10.6"));
    for bad in [
        "v8",
        "8",
        ".8",
        "8.0\u{0}x",
        "8.0.36\u{e9}",
        &format!("8.{}", "9".repeat(99)),
    ] {
        let e = v.set("server_version", bad).err().unwrap_or_default();
        assert!(e.contains("expected a version"), "{bad}: {e}");
    }
    assert_eq!(v.get("server_version"), Some("10.6"));
}

#[test]
fn names_are_case_insensitive_and_may_carry_the_prefix() {
    let mut v = Variables::mysql_defaults();
    assert_eq!(v.get("mysql-threads"), Some("4"));
    assert_eq!(v.get("MYSQL-Threads"), Some("4"));
    assert_eq!(v.set("query_cache_size_mb", "64"), Ok(()));
    assert_eq!(v.get("mysql-query_cache_size_MB"), Some("64"));
    // iter() uses the canonical spelling.
    assert!(v
        .iter()
        .any(|(n, val)| n == "query_cache_size_MB" && val == "64"));
    assert_eq!(v.prefix(), "mysql-");
    // The other prefix is not stripped.
    assert_eq!(v.get("admin-threads"), None);
}

#[test]
fn unknown_variables_are_refused() {
    let mut v = Variables::mysql_defaults();
    assert_eq!(
        v.set("no_such_thing", "1"),
        Err("unknown variable 'mysql-no_such_thing'".to_string())
    );
    assert_eq!(
        v.set("mysql-no_such_thing", "1"),
        Err("unknown variable 'mysql-no_such_thing'".to_string())
    );
    let mut a = Variables::admin_defaults();
    assert_eq!(
        a.set("threads", "1"),
        Err("unknown variable 'admin-threads'".to_string())
    );
    assert_eq!(v.get("nope"), None);
    assert!(v.reset("nope").is_err());
}

#[test]
fn enums_strings_lists() {
    let mut v = Variables::mysql_defaults();
    assert_eq!(v.set("default_isolation_level", "repeatable read"), Ok(()));
    assert_eq!(v.get("default_isolation_level"), Some("REPEATABLE READ"));
    assert!(v.set("default_isolation_level", "chaos").is_err());
    assert_eq!(v.set("default_charset", " utf8mb4 "), Ok(()));
    assert_eq!(
        v.get("default_charset"),
        Some(" utf8mb4 "),
        "strings are kept as given"
    );
    assert_eq!(v.set("interfaces", "127.0.0.1:1;/tmp/a.sock"), Ok(()));
    assert!(v.set("interfaces", "127.0.0.1:notaport").is_err());
    assert!(v.set("interfaces", " ; ").is_err());
    let mut a = Variables::admin_defaults();
    assert_eq!(
        a.set("admin_credentials", "admin:admin;radmin:s3cret"),
        Ok(())
    );
    let e = a
        .set("admin_credentials", "admin:admin;radmin")
        .err()
        .unwrap_or_default();
    assert!(e.contains("no ':'"), "{e}");
    let e = a
        .set("admin_credentials", "admin:topsecret;admin:other")
        .err()
        .unwrap_or_default();
    assert!(e.contains("twice") && !e.contains("topsecret"), "{e}");
}

#[test]
fn reset_and_iter() {
    let mut v = Variables::mysql_defaults();
    assert_eq!(v.set("threads", "16"), Ok(()));
    assert_eq!(v.reset("threads"), Ok(()));
    assert_eq!(v.get("threads"), Some("4"));
    assert_eq!(v.iter().count(), MYSQL_VARIABLE_SPECS.len());
    assert_eq!(v, Variables::mysql_defaults());
    assert_eq!(
        Variables::admin_defaults().iter().count(),
        ADMIN_VARIABLE_SPECS.len()
    );
}

/// docs/config-file.md lists every variable with its default; keep them in step.
#[test]
fn the_manual_lists_every_variable() {
    let doc = include_str!("../../../../docs/config-file.md");
    for (prefix, specs) in [
        ("mysql-", MYSQL_VARIABLE_SPECS),
        ("admin-", ADMIN_VARIABLE_SPECS),
    ] {
        for s in specs {
            let Some(line) = doc
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", s.name)))
            else {
                panic!("docs/config-file.md does not list {prefix}{}", s.name);
            };
            if s.name == "version" {
                continue;
            }
            let default = if s.default.is_empty() {
                "''".to_string()
            } else {
                format!("`{}`", s.default)
            };
            assert!(
                line.contains(&format!("| {default} |")),
                "{prefix}{}: default {default} not in: {line}",
                s.name
            );
        }
    }
}
