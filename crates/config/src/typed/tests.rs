use super::*;
use std::path::PathBuf;

fn tcp(s: &str) -> ListenAddr {
    ListenAddr::Tcp(s.to_string())
}

#[test]
fn interfaces_tcp_and_unix() {
    assert_eq!(
        parse_interfaces("0.0.0.0:6033;/tmp/weir.sock"),
        Ok(vec![
            tcp("0.0.0.0:6033"),
            ListenAddr::Unix(PathBuf::from("/tmp/weir.sock"))
        ])
    );
    assert_eq!(
        parse_interfaces(" a:1 ;; b.example:2; "),
        Ok(vec![tcp("a:1"), tcp("b.example:2")]),
        "empty entries are ignored, spaces trimmed"
    );
    assert_eq!(
        parse_interfaces("127.0.0.1:1,127.0.0.1:2"),
        Ok(vec![tcp("127.0.0.1:1"), tcp("127.0.0.1:2")])
    );
    assert_eq!(parse_interfaces(""), Ok(vec![]));
    assert_eq!(
        parse_interfaces("localhost:0"),
        Ok(vec![tcp("localhost:0")])
    );
}

#[test]
fn interfaces_ipv6() {
    assert_eq!(parse_interfaces(":::6033"), Ok(vec![tcp("[::]:6033")]));
    assert_eq!(parse_interfaces("[::1]:6033"), Ok(vec![tcp("[::1]:6033")]));
    assert_eq!(
        parse_interfaces("fe80::1:7000"),
        Ok(vec![tcp("[fe80::1]:7000")])
    );
}

#[test]
fn interfaces_errors() {
    for bad in [
        "127.0.0.1",
        "127.0.0.1:",
        "127.0.0.1:65536",
        "127.0.0.1:-1",
        "h:x",
        ":6033",
        "[::1:6033",
        "a b:1",
        "a:1;a:1",
    ] {
        assert!(parse_interfaces(bad).is_err(), "{bad}");
    }
    let e = parse_interfaces("ok:1;bad:port").err().unwrap_or_default();
    assert!(e.contains("bad:port"), "{e}");
}

#[test]
fn credentials() {
    assert_eq!(
        parse_credentials("admin:admin; radmin:p:w ;"),
        Ok(vec![
            ("admin".into(), "admin".into()),
            ("radmin".into(), "p:w".into())
        ])
    );
    assert_eq!(parse_credentials(""), Ok(vec![]));
    for bad in ["admin", ":pw", "admin:", "a:1;a:2"] {
        assert!(parse_credentials(bad).is_err(), "{bad}");
    }
}

#[test]
fn mysql_defaults_build() {
    let m = MysqlVariables::from_variables(&Variables::mysql_defaults());
    let Ok(m) = m else { panic!("{m:?}") };
    assert_eq!(m.threads, 4);
    assert_eq!(m.interfaces, vec![tcp("0.0.0.0:6033")]);
    assert_eq!(m.connect_timeout_server, Duration::from_millis(3000));
    assert_eq!(m.connect_timeout_server_max, Duration::from_secs(10));
    assert_eq!(m.connect_timeout_client, Duration::from_secs(10));
    assert_eq!(m.shun_recovery_time, Duration::from_secs(10));
    assert_eq!(m.ping_interval_server, Duration::from_secs(120));
    assert_eq!(m.default_query_timeout, Duration::from_secs(36_000));
    assert_eq!(m.shutdown_grace_period, Duration::from_secs(10));
    assert_eq!(m.busy_poll, Duration::ZERO);
    assert_eq!(m.pipeline_depth, 1);
    assert_eq!(m.pipeline_max_wait, Duration::from_millis(50));
    assert_eq!(m.query_cache_size_mb, 256);
    assert_eq!(m.max_allowed_packet, 64 << 20);
    assert_eq!(m.connection_max_age, None);
    assert_eq!(
        m.auto_increment_delay_multiplex_timeout,
        Some(Duration::from_secs(10))
    );
    assert_eq!(m.default_sql_mode, None);
    assert_eq!(
        m.keep_multiplexing_variables,
        vec!["tx_isolation", "transaction_isolation", "version"]
    );
    assert!(m.multiplexing && m.monitor_enabled && m.monitor_writer_is_also_reader);
    assert_eq!(m.monitor_read_only_timeout, Duration::from_millis(500));
}

#[test]
fn admin_defaults_build() {
    let a = AdminVariables::from_variables(&Variables::admin_defaults());
    let Ok(a) = a else { panic!("{a:?}") };
    assert_eq!(
        a.admin_credentials,
        vec![("admin".to_string(), "admin".to_string())]
    );
    assert_eq!(
        a.stats_credentials,
        vec![("stats".to_string(), "stats".to_string())]
    );
    assert_eq!(a.mysql_ifaces, vec![tcp("127.0.0.1:6032")]);
    assert_eq!((a.web_port, a.restapi_port), (6080, 6070));
    assert!(!a.web_enabled && !a.restapi_enabled && !a.hash_passwords);
    assert_eq!(a.cluster_username, None);
}

#[test]
fn admin_cross_checks() {
    let mut v = Variables::admin_defaults();
    for (k, val) in [
        ("admin_credentials", ""),
        ("stats_credentials", "stats:stats;admin:x"),
        ("web_enabled", "true"),
        ("restapi_enabled", "true"),
        ("restapi_port", "6080"),
    ] {
        assert_eq!(v.set(k, val), Ok(()), "{k}");
    }
    let errs = AdminVariables::from_variables(&v).err().unwrap_or_default();
    let paths: Vec<&str> = errs.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "admin_variables.admin_credentials",
            "admin_variables.restapi_port"
        ],
        "{errs:?}"
    );

    assert_eq!(v.set("admin_credentials", "admin:a"), Ok(()));
    let errs = AdminVariables::from_variables(&v).err().unwrap_or_default();
    assert!(errs.iter().any(|e| e.path == "admin_variables.stats_credentials" && e.message.contains("'admin'")), "{errs:?}");
}
