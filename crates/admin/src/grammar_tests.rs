#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;
use AdminCommand::*;
use Layer::*;

fn cmd(s: &str) -> AdminCommand {
    match parse(s) {
        Ok(Parsed::Command(c)) => c,
        other => panic!("{s:?} did not parse to a command: {other:?}"),
    }
}

fn err(s: &str) -> String {
    match parse(s) {
        Err(e) => e.to_string(),
        other => panic!("{s:?} should be an error, got {other:?}"),
    }
}

#[test]
fn every_load_save_form_for_every_module() {
    let forms: [(&str, Layer, Layer); 14] = [
        ("LOAD {} TO RUNTIME", Memory, Runtime),
        ("LOAD {} TO RUN", Memory, Runtime),
        ("LOAD {} FROM MEMORY", Memory, Runtime),
        ("LOAD {} FROM MEM", Memory, Runtime),
        ("SAVE {} TO DISK", Memory, Disk),
        ("SAVE {} FROM MEMORY", Memory, Disk),
        ("SAVE {} FROM MEM", Memory, Disk),
        ("LOAD {} FROM DISK", Disk, Memory),
        ("LOAD {} TO MEMORY", Disk, Memory),
        ("LOAD {} TO MEM", Disk, Memory),
        ("SAVE {} TO MEMORY", Runtime, Memory),
        ("SAVE {} TO MEM", Runtime, Memory),
        ("SAVE {} FROM RUNTIME", Runtime, Memory),
        ("LOAD {} FROM CONFIG", Config, Memory),
    ];
    for module in Module::ALL {
        for (form, from, to) in forms {
            let expected = Copy { module, from, to };
            let upper = form.replace("{}", module.as_str());
            assert_eq!(cmd(&upper), expected, "{upper}");
            assert_eq!(cmd(&format!("{upper};")), expected, "{upper};");
            let lower = upper.to_lowercase();
            assert_eq!(cmd(&lower), expected, "{lower}");
            let spaced = format!("  {}\n ;  ", upper.replace(' ', " \t\n  "));
            assert_eq!(cmd(&spaced), expected, "{spaced:?}");
            let commented = format!(
                "/* c */ {} -- tail\n# more\n;",
                upper.replace(' ', " /**/ ")
            );
            assert_eq!(cmd(&commented), expected, "{commented:?}");
        }
    }
}

#[test]
fn seed_statements_verbatim() {
    // Every LOAD/SAVE/SET mysql-/SHOW MYSQL/PROXYSQL statement found in ../shared/seeds/*.txt.
    let seeds = [
        "LOAD MYSQL QUERY RULES TO RUNTIME",
        "LOAD MYSQL QUERY RULES TO RUNTIME;",
        "LOAD MYSQL SERVERS TO RUNTIME;",
        "LOAD MYSQL USERS TO RUNTIME;",
        "LOAD MYSQL VARIABLES TO RUNTIME",
        "LOAD MYSQL VARIABLES TO RUNTIME;",
        "SAVE MYSQL QUERY RULES TO DISK;",
        "SAVE MYSQL SERVERS TO DISK;",
        "SAVE MYSQL USERS TO DISK;",
        "SAVE MYSQL VARIABLES TO DISK;",
        // seed 002 (shell script; the CLI splits on ';' and sends this part):
        "set mysql-default_query_delay = $delay ",
        "set mysql-default_query_delay = 100 ",
    ];
    for s in seeds {
        cmd(s);
    }
    assert_eq!(
        cmd("set mysql-default_query_delay = 100 "),
        SetVariable {
            name: "mysql-default_query_delay".into(),
            value: "100".into()
        }
    );
    // Seed 003 mentions "LOAD MYSQL VARIABLES TO DISK" in prose; it is not a valid command.
    assert!(err("LOAD MYSQL VARIABLES TO DISK").contains("SAVE MYSQL VARIABLES TO DISK"));
}

#[test]
fn set_variable_forms() {
    let sv = |n: &str, v: &str| SetVariable {
        name: n.into(),
        value: v.into(),
    };
    assert_eq!(
        cmd("SET mysql-default_query_delay = 1"),
        sv("mysql-default_query_delay", "1")
    );
    assert_eq!(cmd("SET admin-x='y'"), sv("admin-x", "y"));
    assert_eq!(cmd("set admin-x=\"y z\";"), sv("admin-x", "y z"));
    assert_eq!(
        cmd("SET mysql-interfaces='0.0.0.0:6033;/tmp/s'"),
        sv("mysql-interfaces", "0.0.0.0:6033;/tmp/s")
    );
    assert_eq!(cmd("SET mysql-x = ''"), sv("mysql-x", ""));
    assert_eq!(cmd("SET mysql-x = 'it''s'"), sv("mysql-x", "it's"));
    // Backslashes are plain characters, as in UPDATE global_variables (SQLite's strings).
    assert_eq!(
        cmd(r"SET admin-admin_credentials = 'admin:admin;r:p\w\n'"),
        sv("admin-admin_credentials", r"admin:admin;r:p\w\n")
    );
    assert_eq!(cmd("SET mysql-x = -1"), sv("mysql-x", "-1"));
    assert_eq!(
        cmd("SET MYSQL-Max_Connections=10"),
        sv("MYSQL-Max_Connections", "10")
    );
    assert!(err("SET mysql-x").contains("expected '='"));
    assert!(err("SET mysql-x =").contains("expected a value"));
    assert!(err("SET mysql-x = a b").contains("found 'b'"));
    assert!(err("SET mysql-x = 'abc").contains("unterminated string"));
}

#[test]
fn show_commands() {
    assert_eq!(
        cmd("SHOW MYSQL VARIABLES"),
        ShowVariables {
            module: Module::MysqlVariables,
            like: None
        }
    );
    assert_eq!(
        cmd("show admin variables like 'admin-%';"),
        ShowVariables {
            module: Module::AdminVariables,
            like: Some("admin-%".into())
        }
    );
    assert_eq!(cmd("SHOW MYSQL STATUS"), ShowMysqlStatus { like: None });
    assert_eq!(
        cmd("SHOW MYSQL STATUS LIKE 'Query_Cache%'"),
        ShowMysqlStatus {
            like: Some("Query_Cache%".into())
        }
    );
    assert!(err("SHOW MYSQL STATUS x").contains("found 'x'"));
    assert!(err("SHOW MYSQL VARIABLES LIKE").contains("LIKE 'pattern'"));
}

#[test]
fn control_commands() {
    assert_eq!(cmd("PROXYSQL PAUSE"), Pause);
    assert_eq!(cmd("proxysql resume;"), Resume);
    assert_eq!(cmd("PROXYSQL SHUTDOWN"), Shutdown);
    assert_eq!(cmd("WEIR PAUSE"), Pause);
    assert_eq!(cmd("weir Resume"), Resume);
    assert_eq!(cmd("WEIR SHUTDOWN;"), Shutdown);
    assert_eq!(cmd("PROXYSQL FLUSH QUERY CACHE"), FlushQueryCache);
    assert_eq!(cmd("weir flush query cache;"), FlushQueryCache);
    assert_eq!(
        err("PROXYSQL FLUSH LOGS"),
        "PROXYSQL: expected PAUSE, RESUME, SHUTDOWN or FLUSH QUERY CACHE, found 'FLUSH LOGS'"
    );
    assert!(err("PROXYSQL FLUSH QUERY").contains("found 'FLUSH QUERY'"));
    assert!(err("WEIR").contains("found end of statement"));
    assert!(err("PROXYSQL PAUSE NOW").contains("found 'PAUSE NOW'"));
}

#[test]
fn errors_name_the_problem() {
    assert_eq!(
        err("LOAD MYSQL SERVERS TO DSK"),
        "LOAD MYSQL SERVERS: expected TO RUNTIME, TO MEMORY, FROM MEMORY, FROM DISK or FROM CONFIG, found 'TO DSK'"
    );
    assert_eq!(
        err("LOAD MYSQL SERVER TO RUNTIME"),
        "LOAD: unknown module 'MYSQL SERVER' (expected MYSQL SERVERS, MYSQL USERS, MYSQL QUERY RULES, MYSQL VARIABLES or ADMIN VARIABLES)"
    );
    assert!(
        err("SAVE MYSQL USERS FROM CONFIG").contains("did you mean LOAD MYSQL USERS FROM CONFIG?")
    );
    assert!(err("LOAD MYSQL USERS TO DISK").contains("did you mean SAVE MYSQL USERS TO DISK?"));
    assert!(err("SAVE MYSQL USERS TO RUNTIME").contains("found 'TO RUNTIME'"));
    assert!(err("SAVE MYSQL USERS FROM DISK").contains("found 'FROM DISK'"));
    assert!(err("LOAD MYSQL USERS TO CONFIG").contains("found 'TO CONFIG'"));
    assert!(err("LOAD MYSQL USERS").contains("found end of statement"));
    assert!(err("LOAD").contains("unknown module end of statement"));
    assert!(err("LOAD MYSQL USERS TO RUNTIME NOW").contains("found 'TO RUNTIME NOW'"));
    assert!(err("LOAD MYSQL USERS TO RUNTIME; SELECT 1").contains("one statement at a time"));
    assert!(err("LOAD MYSQL USERS /* TO RUNTIME").contains("unterminated comment"));
    assert_eq!(err(""), "empty statement");
    assert_eq!(err(" -- nothing\n"), "empty statement");
}

#[test]
fn plain_sql() {
    for s in [
        "SELECT * FROM mysql_servers",
        "select @@version_comment limit 1",
        "INSERT INTO mysql_servers(hostgroup_id,hostname,port) VALUES (1,'127.0.0.1',3306);",
        "UPDATE global_variables SET variable_value=\"root\" WHERE variable_name=\"mysql-monitor_username\";",
        "DELETE FROM mysql_users",
        "REPLACE INTO mysql_users(username) VALUES ('u')",
        "SHOW DATABASES",
        "SHOW CREATE TABLE mysql_servers",
        "SET NAMES utf8",
        "SET autocommit=1",
        "SET @@session.sql_mode = ''",
        "/* comment */ SELECT 'unterminated",
        "SELECT 1; SELECT 2",
    ] {
        assert_eq!(parse(s), Ok(Parsed::Sql), "{s}");
    }
}

#[test]
fn show_tables() {
    let tables = |schema: Option<&str>, like: Option<&str>| {
        Ok(Parsed::Command(AdminCommand::ShowTables {
            schema: schema.map(str::to_string),
            like: like.map(str::to_string),
        }))
    };
    assert_eq!(parse("SHOW TABLES"), tables(None, None));
    assert_eq!(parse("show full tables;"), tables(None, None));
    assert_eq!(parse("SHOW TABLES FROM stats"), tables(Some("stats"), None));
    assert_eq!(
        parse("SHOW TABLES IN `monitor`"),
        tables(Some("monitor"), None)
    );
    assert_eq!(
        parse("SHOW TABLES LIKE 'mysql%'"),
        tables(None, Some("mysql%"))
    );
    assert_eq!(
        parse("SHOW TABLES FROM stats LIKE \"%pool%\""),
        tables(Some("stats"), Some("%pool%"))
    );
    for bad in [
        "SHOW TABLES LIKE mysql",
        "SHOW TABLES WHERE 1",
        "SHOW TABLES FROM",
        "SHOW TABLES FROM stats LIKE",
    ] {
        let err = parse(bad).expect_err(bad);
        assert!(
            err.message
                .contains("expected FROM schema, LIKE 'pattern' or end of statement"),
            "{bad}: {err}"
        );
    }
}

#[test]
fn displays() {
    assert_eq!(Module::MysqlQueryRules.to_string(), "MYSQL QUERY RULES");
    assert_eq!(Module::AdminVariables.to_string(), "ADMIN VARIABLES");
    assert_eq!(Layer::Runtime.to_string(), "RUNTIME");
}

proptest! {
    #[test]
    fn never_panics(s in any::<String>()) {
        let _ = parse(&s);
    }

    #[test]
    fn never_panics_on_admin_like_input(
        words in proptest::collection::vec(
            prop_oneof![
                Just("LOAD"), Just("SAVE"), Just("MYSQL"), Just("ADMIN"), Just("SERVERS"),
                Just("VARIABLES"), Just("TO"), Just("FROM"), Just("RUNTIME"), Just("SET"),
                Just("mysql-x"), Just("="), Just("'"), Just(";"), Just("SHOW"), Just("STATUS"),
                Just("LIKE"), Just("/*"), Just("*/"), Just("--"), Just("#"), Just("\n"),
                Just("PROXYSQL"), Just("WEIR"), Just("PAUSE"), Just("\"")
            ],
            0..8,
        ),
        seps in proptest::collection::vec(prop_oneof![Just(" "), Just("")], 8),
    ) {
        let mut s = String::new();
        for (w, sep) in words.iter().zip(seps.iter()) {
            s.push_str(w);
            s.push_str(sep);
        }
        let _ = parse(&s);
    }
}
