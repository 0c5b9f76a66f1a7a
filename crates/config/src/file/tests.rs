#![allow(clippy::unwrap_used)]

use super::*;
use crate::typed::ListenAddr;
use proptest::prelude::*;
use std::time::Duration;

const SAMPLE: &str = include_str!("../../sample/weir.toml");

fn errors(text: &str) -> Vec<(String, String)> {
    match parse_config_str(text) {
        Ok(f) => panic!("expected errors, parsed: {f:?}"),
        Err(e) => e.0.into_iter().map(|e| (e.path, e.message)).collect(),
    }
}

fn paths(text: &str) -> Vec<String> {
    errors(text).into_iter().map(|(p, _)| p).collect()
}

#[test]
fn the_sample_file_parses() {
    let f = parse_config_str(SAMPLE).unwrap();
    assert_eq!(f.datadir, Some(PathBuf::from("/var/lib/weir")));
    let t = &f.tables;
    assert_eq!(t.mysql_servers.len(), 3);
    let s = &t.mysql_servers[0];
    assert_eq!(
        (
            s.hostgroup_id,
            s.hostname.as_str(),
            s.port,
            s.max_connections
        ),
        (0, "10.0.0.1", 3306, 200)
    );
    assert_eq!(s.comment, "primary");
    assert_eq!(t.mysql_servers[1].max_replication_lag, 10);
    assert!(t.mysql_servers[2].is_unix_socket());
    assert_eq!(t.mysql_users.len(), 2);
    assert_eq!(t.mysql_users[0].default_schema.as_deref(), Some("app"));
    assert!(t.mysql_users[1].password.is_hash());
    assert_eq!(t.mysql_query_rules.len(), 4);
    let r3 = &t.mysql_query_rules[2];
    assert_eq!((r3.flag_in, r3.flag_out), (0, Some(10)));
    assert_eq!(r3.match_pattern.as_deref(), Some("^/\\* 0"));
    assert_eq!(r3.comment.as_deref(), Some("shard chain"));
    assert_eq!(
        t.mysql_query_rules[3].error_msg.as_deref(),
        Some("not allowed through weir")
    );
    assert_eq!(t.mysql_replication_hostgroups[0].comment, "cluster1");
    assert_eq!(t.mysql_variables.get("multiplexing"), Some("true"));
    assert_eq!(t.admin_variables.get("restapi_enabled"), Some("true"));

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample/weir.toml");
    let rt = validate_file(&path).unwrap();
    assert!(rt.warnings.is_empty(), "{:?}", rt.warnings);
    assert_eq!(rt.mysql.interfaces.len(), 2);
    assert_eq!(rt.admin.admin_credentials.len(), 2);
    assert_eq!(rt.query_rules.len(), 4);
    assert_eq!(load_config_file(&path).unwrap(), f);
}

#[test]
fn an_empty_file_is_all_defaults() {
    let f = parse_config_str("").unwrap();
    assert_eq!(
        f,
        ConfigFile {
            datadir: None,
            tables: ConfigTables::default()
        }
    );
}

#[test]
fn the_testkit_style_file_parses() {
    let text = r#"
[admin_variables]
mysql_ifaces = "127.0.0.1:7032"

[mysql_variables]
threads = 2
interfaces = "127.0.0.1:7033"
monitor_enabled = false
connect_timeout_server = 3000

[[mysql_servers]]
address = "127.0.0.1"
port = 3310
hostgroup = 0
max_connections = 200

[[mysql_users]]
username = "weir"
password = "weirpass"
default_hostgroup = 0

[[mysql_replication_hostgroups]]
writer_hostgroup = 0
reader_hostgroup = 1
comment = "testkit"
"#;
    let f = parse_config_str(text).unwrap();
    let rt = Runtime::build(&f.tables).unwrap();
    assert_eq!(rt.mysql.threads, 2);
    assert!(!rt.mysql.monitor_enabled);
    assert_eq!(
        rt.mysql.interfaces,
        vec![ListenAddr::Tcp("127.0.0.1:7033".into())]
    );
    assert_eq!(rt.mysql.connect_timeout_server, Duration::from_secs(3));
    assert_eq!(
        rt.admin.mysql_ifaces,
        vec![ListenAddr::Tcp("127.0.0.1:7032".into())]
    );
    assert!(rt.frontend_users.contains_key("weir"));
}

#[test]
fn syntax_errors_are_one_error_with_a_location() {
    let e = errors("[mysql_variables\nthreads = 2\n");
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].0, "");
    assert!(
        e[0].1.starts_with("TOML syntax error at line 1, column "),
        "{}",
        e[0].1
    );
    assert!(!e[0].1.contains('\n'), "{}", e[0].1);
    let e = errors("threads = 2\n\nx = \"unterminated\n");
    assert!(
        e[0].1.starts_with("TOML syntax error at line 3, column "),
        "{}",
        e[0].1
    );
}

#[test]
fn unknown_sections_and_keys() {
    assert_eq!(
        paths("typo = 1\n[mysql_galera_hostgroups]\nx = 1\n[mysql_variables]\nthreadz = 4\n[admin_variables]\nfoo = 1\n"),
        ["typo", "mysql_galera_hostgroups", "mysql_variables.threadz", "admin_variables.foo"]
    );
    let e = errors("[mysql_variables]\nthreadz = 4\n");
    assert_eq!(e[0].1, "unknown variable");
    assert_eq!(
        paths("[[mysql_servers]]\naddress = \"h\"\nadress = \"x\"\n[[mysql_users]]\nusername = \"u\"\npasword = \"p\"\n"),
        ["mysql_servers[0].adress", "mysql_users[0].pasword"]
    );
}

#[test]
fn bad_values_report_their_path() {
    let text = r#"
datadir = 5
[mysql_variables]
threads = 0
connect_timeout_server = "soon"
monitor_enabled = "maybe"
interfaces = "0.0.0.0:99999"
server_version = 8.0
[admin_variables]
admin_credentials = "admin"
[[mysql_servers]]
address = "a"
port = "x"
[[mysql_servers]]
address = "b"
port = 70000
status = "UP"
weight = -1
use_ssl = 2
[[mysql_users]]
password = "p"
active = "yes"
attributes = "{bad"
[[mysql_query_rules]]
rule_id = "one"
flagIN = 1.5
multiplex = 300
attributes = '{"ok": 1} trailing'
[[mysql_replication_hostgroups]]
writer_hostgroup = 1
"#;
    let e = errors(text);
    let got: Vec<&str> = e.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        got,
        [
            "datadir",
            "mysql_variables.threads",
            "mysql_variables.connect_timeout_server",
            "mysql_variables.monitor_enabled",
            "mysql_variables.interfaces",
            "mysql_variables.server_version",
            "admin_variables.admin_credentials",
            "mysql_servers[0].port",
            "mysql_servers[1].port",
            "mysql_servers[1].status",
            "mysql_servers[1].weight",
            "mysql_servers[1].use_ssl",
            "mysql_users[0].username",
            "mysql_users[0].active",
            "mysql_users[0].attributes",
            "mysql_query_rules[0].rule_id",
            "mysql_query_rules[0].flagIN",
            "mysql_query_rules[0].multiplex",
            "mysql_query_rules[0].attributes",
            "mysql_replication_hostgroups[0].reader_hostgroup",
        ],
        "{e:#?}"
    );
    let msg = |p: &str| {
        e.iter()
            .find(|(q, _)| q == p)
            .map(|(_, m)| m.clone())
            .unwrap()
    };
    assert!(msg("mysql_variables.threads").contains("out of range"));
    assert!(msg("mysql_servers[1].port").contains("0..=65535"));
    assert!(msg("mysql_servers[1].status").contains("'UP'"));
    assert!(msg("mysql_servers[1].use_ssl").contains("got 2"));
    assert!(msg("mysql_users[0].username").contains("missing required key"));
    assert!(msg("mysql_variables.server_version").contains("quote"));
    assert!(msg("mysql_query_rules[0].flagIN").contains("a float"));
    assert!(msg("mysql_users[0].attributes").contains("not a JSON document"));
}

#[test]
fn row_errors_and_table_errors_are_reported_together() {
    // Row 1 fails to parse; rows 0 and 2 collide on the primary key: the duplicate is still
    // found, and reported with the file's row numbers.
    let text = r#"
[[mysql_servers]]
address = "h"
[[mysql_servers]]
address = "h"
port = "bad"
[[mysql_servers]]
hostname = "h"
port = 3306
[[mysql_servers]]
address = "tcp-without-port"
port = 0
"#;
    let e = errors(text);
    let got: Vec<&str> = e.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        got,
        [
            "mysql_servers[1].port",
            "mysql_servers[2]",
            "mysql_servers[3].port"
        ],
        "{e:#?}"
    );
    assert!(e[1].1.contains("already at mysql_servers[0]"), "{}", e[1].1);
}

#[test]
fn aliases_and_spellings() {
    let text = r#"
[[mysql_servers]]
hostname = "a"
hostgroup_id = 3
[[mysql_servers]]
ADDRESS = "b"
HostGroup = 4
[[mysql_query_rules]]
rule_id = 1
flagin = 1
FLAGOUT = 2
next_query_flagIN = 3
mirror_flagout = 4
ok_msg = "fine"
[[mysql_query_rules]]
rule_id = 2
flag_in = 5
OK_msg = "ok"
"#;
    let f = parse_config_str(text).unwrap();
    let s = &f.tables.mysql_servers;
    assert_eq!(
        (s[0].hostgroup_id, s[0].hostname.as_str(), s[0].port),
        (3, "a", 3306)
    );
    assert_eq!((s[1].hostgroup_id, s[1].hostname.as_str()), (4, "b"));
    let r = &f.tables.mysql_query_rules;
    assert_eq!(
        (
            r[0].flag_in,
            r[0].flag_out,
            r[0].next_query_flag_in,
            r[0].mirror_flag_out
        ),
        (1, Some(2), Some(3), Some(4))
    );
    assert_eq!(r[0].ok_msg.as_deref(), Some("fine"));
    assert_eq!((r[1].flag_in, r[1].ok_msg.as_deref()), (5, Some("ok")));

    let e = errors("[[mysql_servers]]\naddress = \"a\"\nhostname = \"b\"\n");
    assert_eq!(e[0].0, "mysql_servers[0].hostname");
    assert!(e[0].1.contains("given twice"), "{}", e[0].1);
    assert_eq!(
        paths("[mysql_variables]\nthreads = 2\nTHREADS = 3\n"),
        ["mysql_variables.THREADS"]
    );
}

#[test]
fn booleans_and_ints_in_rows() {
    let text = r#"
[[mysql_users]]
username = "a"
active = 0
use_ssl = true
fast_forward = "1"
frontend = "false"
max_connections = "50"
[[mysql_query_rules]]
rule_id = 9
active = true
cache_empty_result = 0
log = "true"
apply = 1
"#;
    let f = parse_config_str(text).unwrap();
    let u = &f.tables.mysql_users[0];
    assert!(!u.active && u.use_ssl && u.fast_forward && !u.frontend && u.backend);
    assert_eq!(u.max_connections, 50);
    let r = &f.tables.mysql_query_rules[0];
    assert!(r.active && r.apply);
    assert_eq!(
        (r.cache_empty_result, r.log, r.sticky_conn),
        (Some(false), Some(true), None)
    );
}

#[test]
fn rule_ids_autoincrement() {
    let text =
        "[[mysql_query_rules]]\n[[mysql_query_rules]]\nrule_id = 10\n[[mysql_query_rules]]\n";
    let f = parse_config_str(text).unwrap();
    let ids: Vec<u32> = f
        .tables
        .mysql_query_rules
        .iter()
        .map(|r| r.rule_id)
        .collect();
    assert_eq!(ids, [1, 10, 11]);
    assert_eq!(
        paths("[[mysql_query_rules]]\n[[mysql_query_rules]]\nrule_id = 1\n"),
        ["mysql_query_rules[1].rule_id"],
        "an explicit id that collides with an automatic one"
    );
}

#[test]
fn sections_of_the_wrong_shape() {
    assert_eq!(
        paths("mysql_servers = 1\nmysql_variables = [1]\n[mysql_users]\nusername = \"x\"\n"),
        ["mysql_servers", "mysql_variables", "mysql_users"]
    );
    assert_eq!(
        paths("mysql_servers = [1, 2]\n"),
        ["mysql_servers[0]", "mysql_servers[1]"]
    );
}

#[test]
fn variables_accept_the_prefix_and_report_both_files_layers() {
    let f = parse_config_str("[mysql_variables]\n\"mysql-threads\" = 8\n").unwrap();
    assert_eq!(f.tables.mysql_variables.get("threads"), Some("8"));
    // A variable that is valid alone but makes the runtime invalid is reported by path too.
    assert_eq!(
        paths("[admin_variables]\nweb_enabled = 1\nrestapi_enabled = 1\nrestapi_port = 6080\n"),
        ["admin_variables.restapi_port"]
    );
}

#[test]
fn read_errors_have_an_empty_path() {
    let e = load_config_file(Path::new("/nonexistent/weir.toml"))
        .err()
        .unwrap();
    assert_eq!(e.0.len(), 1);
    assert_eq!(e.0[0].path, "");
    assert!(
        e.to_string()
            .starts_with("cannot read /nonexistent/weir.toml"),
        "{e}"
    );
    assert!(validate_file(Path::new("/nonexistent/weir.toml")).is_err());
}

#[test]
fn errors_display_one_per_line() {
    let e = parse_config_str("a = 1\nb = 2\n").err().unwrap();
    assert_eq!(e.to_string(), "a: unknown key\nb: unknown key");
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_text(text in "\\PC{0,400}") {
        let _ = parse_config_str(&text);
    }

    #[test]
    fn never_panics_on_toml_like_text(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("[mysql_variables]".to_string()),
                Just("[admin_variables]".to_string()),
                Just("[[mysql_servers]]".to_string()),
                Just("[[mysql_users]]".to_string()),
                Just("[[mysql_query_rules]]".to_string()),
                Just("[[mysql_replication_hostgroups]]".to_string()),
                ("[a-zA-Z_]{1,24}", "-?[0-9]{1,20}").prop_map(|(k, v)| format!("{k} = {v}")),
                ("[a-zA-Z_]{1,24}", "[ -~&&[^\"\\\\]]{0,30}").prop_map(|(k, v)| format!("{k} = \"{v}\"")),
                ("[a-zA-Z_]{1,24}", any::<bool>()).prop_map(|(k, v)| format!("{k} = {v}")),
            ],
            0..30,
        )
    ) {
        let _ = parse_config_str(&lines.join("\n"));
    }
}

/// The `check-config` example in docs/config-file.md shows these exact messages.
#[test]
fn the_manual_example_is_accurate() {
    let text = r#"
[mysql_variables]
threads = 0
[[mysql_servers]]
address = "10.0.0.1"
[[mysql_servers]]
address = "10.0.0.2"
port = 70000
[[mysql_servers]]
address = "10.0.0.1"
"#;
    let shown = parse_config_str(text).err().unwrap().to_string();
    let doc = include_str!("../../../../docs/config-file.md");
    for line in shown.lines() {
        assert!(doc.contains(&format!("weir.toml: {line}\n")), "{line}");
    }
    assert_eq!(shown.lines().count(), 3);
}
