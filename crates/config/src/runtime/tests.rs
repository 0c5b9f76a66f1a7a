use super::*;
use crate::rows::ServerStatus;

fn tables() -> ConfigTables {
    let mut r1 = QueryRuleRow::new(20);
    r1.active = true;
    r1.match_digest = Some("^SELECT".into());
    r1.destination_hostgroup = Some(1);
    let mut r2 = QueryRuleRow::new(10);
    r2.active = true;
    r2.match_digest = Some("^SELECT.*FOR UPDATE$".into());
    r2.destination_hostgroup = Some(0);
    let inactive = QueryRuleRow::new(5);
    ConfigTables {
        mysql_servers: vec![
            ServerRow::new(0, "db1", 3306),
            ServerRow::new(1, "db2", 3306),
        ],
        mysql_users: vec![UserRow::new("app", Password::parse("secret"))],
        mysql_query_rules: vec![r1, r2, inactive],
        mysql_replication_hostgroups: vec![ReplicationHostgroupRow::new(0, 1)],
        ..ConfigTables::default()
    }
}

fn paths(e: &ConfigErrors) -> Vec<&str> {
    e.iter().map(|e| e.path.as_str()).collect()
}

#[test]
fn builds_a_valid_set() {
    let rt = Runtime::build(&tables());
    let Ok(rt) = rt else { panic!("{rt:?}") };
    assert_eq!(
        rt.query_rules.iter().map(|r| r.rule_id).collect::<Vec<_>>(),
        vec![10, 20],
        "active, sorted"
    );
    assert!(rt.frontend_users.contains_key("app") && rt.backend_users.contains_key("app"));
    assert_eq!(rt.servers.len(), 2);
    assert_eq!(rt.mysql.threads, 4);
    assert_eq!(rt.tables, tables());
    assert!(rt.warnings.is_empty(), "{:?}", rt.warnings);
}

#[test]
fn user_maps_follow_active_frontend_backend() {
    let mut t = tables();
    let mut front = UserRow::new("split", Password::parse("a"));
    front.backend = false;
    let mut back = UserRow::new("split", Password::parse("b"));
    back.frontend = false;
    let mut off = UserRow::new("off", Password::default());
    off.active = false;
    t.mysql_users.extend([front, back, off]);
    let rt = Runtime::build(&t);
    let Ok(rt) = rt else { panic!("{rt:?}") };
    assert_eq!(
        rt.frontend_users.get("split").map(|u| u.password.clone()),
        Some(Password::parse("a"))
    );
    assert_eq!(
        rt.backend_users.get("split").map(|u| u.password.clone()),
        Some(Password::parse("b"))
    );
    assert!(!rt.frontend_users.contains_key("off") && !rt.backend_users.contains_key("off"));
}

#[test]
fn server_constraints() {
    let mut t = tables();
    let mut bad_weight = ServerRow::new(2, "db3", 3306);
    bad_weight.weight = 10_000_001;
    let mut sock = ServerRow::new(2, "/run/mysqld/mysqld.sock", 0);
    sock.status = ServerStatus::OfflineSoft;
    t.mysql_servers.extend([
        ServerRow::new(0, "db1", 3306), // duplicate of [0]
        ServerRow::new(0, "db1", 3307), // other port: fine
        ServerRow::new(2, "db9", 0),    // TCP port 0
        ServerRow::new(2, " ", 3306),   // empty hostname
        bad_weight,
        sock, // Unix socket with port 0: fine
    ]);
    let e = Runtime::build(&t).err().unwrap_or_default();
    assert_eq!(
        paths(&e),
        [
            "mysql_servers[2]",
            "mysql_servers[4].port",
            "mysql_servers[5].hostname",
            "mysql_servers[6].weight"
        ],
        "{e}"
    );
    assert!(
        e.0[0].message.contains("already at mysql_servers[0]"),
        "{e}"
    );
}

#[test]
fn user_keys() {
    let mut t = tables();
    let mut split = UserRow::new("app", Password::default());
    split.frontend = false; // same username, backend=1 again: PK violation
    let mut fe_only = UserRow::new("x", Password::default());
    fe_only.backend = false;
    let mut fe_only2 = UserRow::new("x", Password::default());
    fe_only2.backend = true;
    t.mysql_users.extend([
        split,
        fe_only,
        fe_only2,
        UserRow::new("", Password::default()),
    ]);
    let e = Runtime::build(&t).err().unwrap_or_default();
    assert_eq!(
        paths(&e),
        [
            "mysql_users[1]",
            "mysql_users[3]",
            "mysql_users[4].username"
        ],
        "{e}"
    );
    assert!(e.0[0].message.contains("backend"), "{e}");
    assert!(e.0[1].message.contains("frontend"), "{e}");
}

#[test]
fn rule_constraints() {
    let mut t = tables();
    let mut r = QueryRuleRow::new(10); // duplicate id
    r.match_pattern = Some(String::new());
    r.re_modifiers = "caseless, GLOBAL,UTF8".into();
    r.multiplex = Some(3);
    r.retries = Some(1001);
    r.cache_ttl = Some(0);
    r.digest = Some("0xZZ".into());
    t.mysql_query_rules.push(r);
    let mut ok = QueryRuleRow::new(11);
    ok.digest = Some("0x3D4AB7C2E1F00A12".into());
    ok.re_modifiers = String::new();
    ok.multiplex = Some(2);
    t.mysql_query_rules.push(ok);
    let e = Runtime::build(&t).err().unwrap_or_default();
    let p = "mysql_query_rules[3]";
    assert_eq!(
        paths(&e),
        [
            format!("{p}.rule_id"),
            format!("{p}.match_pattern"),
            format!("{p}.digest"),
            format!("{p}.re_modifiers"),
            format!("{p}.multiplex"),
            format!("{p}.retries"),
            format!("{p}.cache_ttl"),
        ],
        "{e}"
    );
    assert!(e.0[3].message.contains("UTF8"), "{e}");
}

#[test]
fn replication_constraints() {
    let mut t = tables();
    let mut same = ReplicationHostgroupRow::new(5, 5);
    same.check_type = "read_only".into();
    let mut bad_type = ReplicationHostgroupRow::new(7, 8);
    bad_type.check_type = "readonly".into();
    let mut combo = ReplicationHostgroupRow::new(9, 10);
    combo.check_type = "read_only|innodb_read_only".into();
    t.mysql_replication_hostgroups.extend([
        ReplicationHostgroupRow::new(0, 2), // writer 0 again
        ReplicationHostgroupRow::new(3, 1), // reader 1 again
        same,
        bad_type,
        combo,
    ]);
    let e = Runtime::build(&t).err().unwrap_or_default();
    let p = "mysql_replication_hostgroups";
    assert_eq!(
        paths(&e),
        [
            format!("{p}[1].writer_hostgroup"),
            format!("{p}[2].reader_hostgroup"),
            format!("{p}[3].reader_hostgroup"),
            format!("{p}[4].check_type"),
        ],
        "{e}"
    );
}

#[test]
fn variable_errors_are_reported_with_rows() {
    let mut t = tables();
    assert_eq!(t.admin_variables.set("admin_credentials", ""), Ok(()));
    t.mysql_servers.push(ServerRow::new(0, "db1", 3306));
    let e = Runtime::build(&t).err().unwrap_or_default();
    assert_eq!(
        paths(&e),
        ["admin_variables.admin_credentials", "mysql_servers[2]"],
        "{e}"
    );
}

#[test]
fn warnings_for_hostgroups_without_servers() {
    let mut t = tables();
    t.mysql_replication_hostgroups.clear();
    t.mysql_servers.retain(|s| s.hostgroup_id == 0);
    let mut u = UserRow::new("reporting", Password::default());
    u.default_hostgroup = 42;
    t.mysql_users.push(u);
    t.mysql_users
        .push(UserRow::new("admin", Password::default()));
    let rt = Runtime::build(&t);
    let Ok(rt) = rt else { panic!("{rt:?}") };
    assert_eq!(rt.warnings.len(), 3, "{:?}", rt.warnings);
    assert!(rt.warnings[0].contains("default_hostgroup 42"));
    assert!(
        rt.warnings[1].contains("destination_hostgroup 1"),
        "rule 20 routes to 1: {:?}",
        rt.warnings
    );
    assert!(rt.warnings[2].contains("admin user 'admin'"));
}

#[test]
fn warnings_for_rule_actions_weir_does_not_carry_out() {
    let mut t = tables();
    let mut r = QueryRuleRow::new(77);
    r.match_pattern = Some("^SELECT".into());
    r.active = true;
    r.mirror_flag_out = Some(3);
    r.log = Some(true);
    t.mysql_query_rules.push(r);
    let rt = Runtime::build(&t);
    let Ok(rt) = rt else { panic!("{rt:?}") };
    assert_eq!(rt.warnings.len(), 1, "{:?}", rt.warnings);
    assert!(
        rt.warnings[0].contains(
            "rule 77 sets mirror_flagOUT, log, which weir stores but does not act on yet"
        ),
        "{:?}",
        rt.warnings
    );
}

#[test]
fn replication_pair_makes_both_hostgroups_known() {
    let mut t = tables();
    t.mysql_servers.retain(|s| s.hostgroup_id == 0);
    let rt = Runtime::build(&t);
    let Ok(rt) = rt else { panic!("{rt:?}") };
    assert!(rt.warnings.is_empty(), "{:?}", rt.warnings);
}

/// A firewall weir does not have is refused rather than silently off; logs it does not
/// write yet are warned about.
#[test]
fn a_firewall_and_logs_weir_lacks_are_not_silently_accepted() {
    let mut t = tables();
    t.mysql_variables
        .set("firewall_whitelist_enabled", "1")
        .expect("a valid value");
    let e = Runtime::build(&t).expect_err("firewall");
    assert_eq!(
        paths(&e),
        ["mysql_variables.firewall_whitelist_enabled"],
        "{e:?}"
    );
    assert!(e.iter().any(|e| e.message.contains("no query firewall")));
    let mut t = tables();
    t.mysql_variables
        .set("auditlog_filename", "/var/log/weir/audit.log")
        .expect("a valid value");
    let rt = Runtime::build(&t);
    let Ok(rt) = rt else { panic!("{rt:?}") };
    assert_eq!(rt.warnings.len(), 1, "{:?}", rt.warnings);
    assert!(rt.warnings[0].contains("auditlog_filename"));
}
