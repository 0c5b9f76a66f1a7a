use super::*;

#[test]
fn native_hash_is_recognized_in_any_case() {
    let upper = "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19";
    let Password::NativeHash(h) = Password::parse(upper) else {
        panic!("not a hash");
    };
    assert_eq!(h[0], 0x24);
    assert_eq!(h[19], 0x19);
    assert_eq!(Password::parse(upper).as_config_string(), upper);
    let lower = upper.to_ascii_lowercase();
    assert_eq!(Password::parse(&lower), Password::parse(upper));
    // The table form is always upper case.
    assert_eq!(Password::parse(&lower).as_config_string(), upper);
}

#[test]
fn anything_else_is_clear_text() {
    for s in [
        "",
        "secret",
        "*",
        "2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19", // no star
        "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E1", // 39 digits
        "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E190", // 41 digits
        "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E1G", // not hex
        "*2470C0C06DEE42FD1618BB99005ADCA2EC9D1É",  // multi-byte
    ] {
        assert_eq!(Password::parse(s), Password::Clear(s.to_string()), "{s}");
        assert_eq!(Password::parse(s).as_config_string(), s);
    }
}

#[test]
fn password_debug_hides_secrets() {
    let dbg = format!("{:?}", Password::parse("hunter2"));
    assert!(!dbg.contains("hunter2"), "{dbg}");
    let dbg = format!(
        "{:?}",
        Password::parse("*2470C0C06DEE42FD1618BB99005ADCA2EC9D1E19")
    );
    assert!(!dbg.contains("2470"), "{dbg}");
}

#[test]
fn status_round_trips() {
    for st in ServerStatus::ALL {
        assert_eq!(st.to_string().parse::<ServerStatus>(), Ok(st));
    }
    assert_eq!(
        "offline_soft".parse::<ServerStatus>(),
        Ok(ServerStatus::OfflineSoft)
    );
    assert_eq!(" ONLINE ".parse::<ServerStatus>(), Ok(ServerStatus::Online));
    let err = "UP"
        .parse::<ServerStatus>()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.contains("'UP'") && err.contains("OFFLINE_HARD"),
        "{err}"
    );
}

#[test]
fn row_defaults_follow_the_tables() {
    let s = ServerRow::new(0, "db1", 3306);
    assert_eq!(
        (s.weight, s.max_connections, s.status),
        (1, 1000, ServerStatus::Online)
    );
    let u = UserRow::new("app", Password::default());
    assert!(u.active && u.frontend && u.backend && u.transaction_persistent);
    assert_eq!(u.max_connections, 10000);
    let q = QueryRuleRow::new(7);
    assert!(!q.active && !q.apply);
    assert_eq!(q.re_modifiers, "CASELESS");
    assert_eq!(ReplicationHostgroupRow::new(0, 1).check_type, "read_only");
}
