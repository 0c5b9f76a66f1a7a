//! Tests of [`parse_set`]: every form of the grammar, and the doubts that must stay untracked.

#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

fn sys(key: &'static str, name: &'static str, value: &str) -> Assignment {
    Assignment {
        slot: Slot::System { key, name },
        value: Some(value.into()),
    }
}

fn var(name: &'static str, value: &str) -> Assignment {
    sys(name, name, value)
}

fn user(name: &str, value: Option<&str>) -> Assignment {
    Assignment {
        slot: Slot::User(name.into()),
        value: value.map(Into::into),
    }
}

fn tracked(q: &str) -> Vec<Assignment> {
    match parse_set(q.as_bytes()) {
        SetEffect::Tracked(a) => a,
        other => panic!("{q}: {other:?}"),
    }
}

fn evaluated(q: &str) -> (Vec<Assignment>, Vec<ReadBack>) {
    match parse_set(q.as_bytes()) {
        SetEffect::Evaluated(a, r) => (a, r),
        other => panic!("{q}: {other:?}"),
    }
}

fn read(name: &'static str) -> ReadBack {
    ReadBack {
        slot: Slot::System { key: name, name },
        name,
    }
}

fn untracked(q: &str) {
    assert_eq!(parse_set(q.as_bytes()), SetEffect::Untracked, "{q}");
}

#[test]
fn plain_assignments() {
    assert_eq!(tracked("SET sql_mode=''"), vec![var("sql_mode", "''")]);
    assert_eq!(
        tracked("SET time_zone='+00:00'"),
        vec![var("time_zone", "'+00:00'")]
    );
    assert_eq!(
        tracked("set SQL_MODE := \"ANSI\";"),
        vec![var("sql_mode", "'ANSI'")]
    );
    assert_eq!(
        tracked("SET sql_mode = TRADITIONAL"),
        vec![var("sql_mode", "TRADITIONAL")]
    );
    assert_eq!(
        tracked("SET `sql_select_limit` = -10"),
        vec![var("sql_select_limit", "-10")]
    );
    assert_eq!(
        tracked("SET long_query_time = 1.5e-1, max_error_count = 0x10"),
        vec![
            var("long_query_time", "1.5e-1"),
            var("max_error_count", "0x10")
        ]
    );
    assert_eq!(
        tracked("SET lc_time_names = _utf8mb4 'de_DE'"),
        vec![var("lc_time_names", "_utf8mb4'de_DE'")]
    );
    assert_eq!(
        tracked("SET sql_mode = 'it''s'"),
        vec![var("sql_mode", "'it''s'")]
    );
    assert_eq!(
        tracked("SET sql_mode = DEFAULT"),
        vec![var("sql_mode", "DEFAULT")]
    );
    assert_eq!(
        tracked("SET character_set_results = NULL"),
        vec![var("character_set_results", "NULL")]
    );
}

#[test]
fn scopes() {
    assert_eq!(
        tracked("SET @@SESSION.sql_mode = 'A'"),
        vec![var("sql_mode", "'A'")]
    );
    assert_eq!(
        tracked("SET LOCAL sql_mode = 'A'"),
        vec![var("sql_mode", "'A'")]
    );
    assert_eq!(
        tracked("SET @@local.sql_mode = 'A'"),
        vec![var("sql_mode", "'A'")]
    );
    assert_eq!(
        tracked("SET @@sql_mode = 'A'"),
        vec![var("sql_mode", "'A'")]
    );
    assert_eq!(
        tracked("SET SESSION `sql_mode` = 'A'"),
        vec![var("sql_mode", "'A'")]
    );
    assert_eq!(tracked("SET GLOBAL max_connections = 10"), vec![]);
    assert_eq!(tracked("SET PERSIST_ONLY sql_log_bin = 0"), vec![]);
    assert_eq!(tracked("SET @@persist.anything = 'x'"), vec![]);
    // A keyword holds until the next one; an @@x. prefix only for its own assignment.
    assert_eq!(
        tracked("SET sql_mode='A', GLOBAL wait_timeout=5, sql_mode='B', @@session.time_zone='C', max_connections=1, SESSION sql_notes=0"),
        vec![
            var("sql_mode", "'A'"),
            var("time_zone", "'C'"),
            var("sql_notes", "0")
        ]
    );
    assert_eq!(
        tracked("SET @@global.sql_mode='A', wait_timeout=5"),
        vec![var("wait_timeout", "5")]
    );
    untracked("SET GLOBAL max_connections = @@max_connections");
    untracked("SET GLOBAL max_connections = 1 + 1");
    untracked("SET SESSION @@session.sql_mode = 'A'");
    untracked("SET GLOBAL @a = 1");
}

#[test]
fn comments_and_whitespace() {
    assert_eq!(
        tracked("/* hi */ SET /* a */ @@session.sql_mode /* b */ = -- c\n 'A' # d\n ; /* e */ "),
        vec![var("sql_mode", "'A'")]
    );
    assert_eq!(
        tracked("\n\tSET\nautocommit\n=\n0\n"),
        vec![var("autocommit", "0")]
    );
    assert_eq!(
        tracked("SET /* café */ sql_mode='' -- naïve"),
        vec![var("sql_mode", "''")]
    );
    untracked("/*!40101 SET NAMES utf8 */");
    untracked("SET /*!40101 sql_mode='' */");
    untracked("SET sql_mode='' /* open");
}

#[test]
fn autocommit_is_normalized() {
    for (q, v) in [
        ("SET autocommit=OFF", "0"),
        ("SET autocommit=off", "0"),
        ("SET autocommit=false", "0"),
        ("SET autocommit=0", "0"),
        ("SET autocommit='OFF'", "0"),
        ("SET AUTOCOMMIT=ON", "1"),
        ("SET autocommit=TRUE", "1"),
        ("SET @@autocommit:=1", "1"),
    ] {
        assert_eq!(tracked(q), vec![var("autocommit", v)], "{q}");
    }
    assert_eq!(
        tracked("SET autocommit=DEFAULT"),
        vec![Assignment {
            slot: Slot::System {
                key: "autocommit",
                name: "autocommit"
            },
            value: None
        }]
    );
    // What weir does not know for autocommit is the server's to accept or refuse.
    for q in [
        "SET autocommit=2",
        "SET autocommit='1'",
        "SET autocommit=yes",
        "SET autocommit=1.0",
    ] {
        assert_eq!(evaluated(q), (vec![], vec![read("autocommit")]), "{q}");
    }
}

#[test]
fn names_and_charset() {
    let client = |v: &str| var("character_set_client", v);
    let results = |v: &str| var("character_set_results", v);
    assert_eq!(
        tracked("SET NAMES utf8mb4"),
        vec![
            client("utf8mb4"),
            results("utf8mb4"),
            sys(
                "collation_connection",
                "character_set_connection",
                "utf8mb4"
            )
        ]
    );
    // The collation stays in character_set_results too (result columns carry its id): that
    // slot is replayed as the SET NAMES it came from.
    assert_eq!(
        tracked("SET NAMES 'utf8mb4' COLLATE utf8mb4_unicode_ci"),
        vec![
            client("'utf8mb4'"),
            sys(
                "character_set_results",
                "names",
                "'utf8mb4' COLLATE utf8mb4_unicode_ci"
            ),
            sys(
                "collation_connection",
                "collation_connection",
                "utf8mb4_unicode_ci"
            )
        ]
    );
    assert_eq!(
        tracked("SET NAMES utf8mb4 COLLATE 'utf8mb4_bin'")[1],
        sys(
            "character_set_results",
            "names",
            "utf8mb4 COLLATE 'utf8mb4_bin'"
        )
    );
    assert_eq!(
        tracked("SET NAMES latin1, @a = 1"),
        vec![
            client("latin1"),
            results("latin1"),
            sys("collation_connection", "character_set_connection", "latin1"),
            user("a", Some("1"))
        ]
    );
    let database = |cs: &str| {
        vec![
            client(cs),
            results(cs),
            sys(
                "collation_connection",
                "character_set_connection",
                "@@character_set_database",
            ),
        ]
    };
    assert_eq!(tracked("SET CHARACTER SET latin1"), database("latin1"));
    assert_eq!(tracked("SET CHARSET 'latin1'"), database("'latin1'"));
    assert_eq!(
        tracked("SET character_set_connection = @@character_set_database"),
        vec![sys(
            "collation_connection",
            "character_set_connection",
            "@@character_set_database"
        )]
    );
    assert_eq!(
        tracked("SET collation_connection = utf8mb4_bin"),
        vec![sys(
            "collation_connection",
            "collation_connection",
            "utf8mb4_bin"
        )]
    );
    untracked("SET NAMES DEFAULT");
    untracked("SET NAMES utf8mb4 COLLATE DEFAULT");
    untracked("SET CHARACTER SET DEFAULT");
    untracked("SET CHARSET DEFAULT");
    untracked("SET SESSION NAMES utf8");
    untracked("SET NAMES = utf8");
    assert_eq!(
        evaluated("SET collation_connection = @@character_set_database"),
        (vec![], vec![read("collation_connection")])
    );
    assert_eq!(
        evaluated("SET character_set_client = @@character_set_database"),
        (vec![], vec![read("character_set_client")])
    );
}

#[test]
fn transactions() {
    let iso = |v: &str| sys("transaction_isolation", "", v);
    let ro = |v: &str| sys("transaction_read_only", "", v);
    assert_eq!(
        parse_set(b"SET TRANSACTION READ ONLY"),
        SetEffect::NextTransaction
    );
    assert_eq!(
        parse_set(b"set transaction isolation level serializable"),
        SetEffect::NextTransaction
    );
    assert_eq!(
        tracked("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY"),
        vec![iso("'READ-COMMITTED'"), ro("1")]
    );
    assert_eq!(
        tracked("SET LOCAL TRANSACTION READ WRITE, ISOLATION LEVEL REPEATABLE READ"),
        vec![ro("0"), iso("'REPEATABLE-READ'")]
    );
    assert_eq!(
        tracked("SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"),
        vec![iso("'READ-UNCOMMITTED'")]
    );
    assert_eq!(
        tracked("SET GLOBAL TRANSACTION ISOLATION LEVEL SERIALIZABLE"),
        vec![]
    );
    assert_eq!(
        tracked("SET tx_isolation = 'READ-COMMITTED', transaction_read_only = OFF"),
        vec![iso("'READ-COMMITTED'"), ro("OFF")]
    );
    // `@@name` with no scope: the next transaction only, as on the server.
    for q in [
        "SET @@tx_read_only = 1",
        "SET @@TX_ISOLATION='READ-UNCOMMITTED'",
        "SET @@transaction_isolation = @iso",
        "SET @@transaction_read_only = DEFAULT",
    ] {
        assert_eq!(parse_set(q.as_bytes()), SetEffect::NextTransaction, "{q}");
    }
    untracked("SET @@tx_read_only = 1, sql_mode = ''");
    assert_eq!(
        tracked("SET @@session.tx_read_only = 1, @@local.tx_isolation = 'SERIALIZABLE'"),
        vec![ro("1"), iso("'SERIALIZABLE'")]
    );
    untracked("SET TRANSACTION ISOLATION LEVEL");
    untracked("SET TRANSACTION READ");
    untracked("SET SESSION TRANSACTION READ ONLY, sql_mode = ''");
    untracked("SET TRANSACTION READ ONLY,");
}

#[test]
fn user_variables() {
    assert_eq!(
        tracked("SET @a=1, @b='x'"),
        vec![user("a", Some("1")), user("b", Some("'x'"))]
    );
    assert_eq!(
        tracked(
            "SET @A := NULL, @'Q x'=-2.5, @\"d\"=0x1F, @`b``c`=TRUE, @e.f$=_latin1'y', @g=b'01'"
        ),
        vec![
            user("a", None),
            user("q x", Some("-2.5")),
            user("d", Some("0x1F")),
            user("b`c", Some("TRUE")),
            user("e.f$", Some("_latin1'y'")),
            user("g", Some("b'01'")),
        ]
    );
    assert_eq!(
        tracked("SET @a=1, sql_mode='X'"),
        vec![user("a", Some("1")), var("sql_mode", "'X'")]
    );
    untracked("SET @a=@b");
    untracked("SET @a=@@sql_mode");
    untracked("SET @a=DEFAULT");
    untracked("SET @a=col");
    untracked("SET @a=NOW()");
    untracked("SET @a=(SELECT 1)");
    untracked("SET @a=1+1");
    untracked("SET @a='x' 'y'");
    untracked("SET @a='é'");
    untracked("SET @a='a\\'b'");
    untracked("SET @=1");
    untracked("SET @a=1, @b=@a");
}

#[test]
fn statements_without_session_effect() {
    assert_eq!(tracked("SET PASSWORD = 'secret'"), vec![]);
    assert_eq!(tracked("SET PASSWORD FOR 'app'@'%' = 'secret'"), vec![]);
    untracked("SET PASSWORD = 'x'; SELECT 1");
}

#[test]
fn untracked_forms() {
    for q in [
        "SET sql_log_bin=0",
        "SET timestamp=1",
        "SET insert_id=5",
        "SET last_insert_id=5",
        "SET gtid_next='AUTOMATIC'",
        "SET pseudo_thread_id=3",
        "SET rand_seed1=1",
        "SET profiling=1",
        "SET max_join_size=1000",
        "SET ROLE ALL",
        "SET DEFAULT ROLE ALL TO u",
        "SET STATEMENT max_statement_time=1 FOR SELECT 1",
        "set names utf8; select 1",
        "SET sql_mode='' ; SET @a=1",
        "SET",
        "SET ;",
        "SET sql_mode",
        "SET sql_mode=",
        "SET sql_mode='',",
        "SELECT 1",
        "SET sql_select_limit = 1e",
        "SET @@foo.sql_mode = 1",
        "SET myisam.key_buffer_size = 1",
        "",
        ";",
    ] {
        untracked(q);
    }
}

#[test]
fn expressions_are_left_to_the_server_and_read_back() {
    // Connector/J 3.5's connect-time SETs, and the ORMs' usual ones.
    for q in [
        "SET sql_mode=CONCAT(@@sql_mode,',X')",
        "set sql_mode=concat(@@sql_mode,',STRICT_TRANS_TABLES')",
        "SET sql_mode=@@global.sql_mode",
        "SET SESSION sql_mode = (SELECT REPLACE(@@sql_mode,'ONLY_FULL_GROUP_BY',''))",
        "SET sql_mode = REPLACE(REPLACE(@@sql_mode, 'NO_ZERO_DATE', ''), ',,', ',')",
        "SET sql_mode = IF(@@sql_mode = '', 'ANSI', CONCAT(@@sql_mode, ',ANSI'))",
        "SET sql_mode = `ANSI`",
        "SET sql_mode = 'x' COLLATE utf8mb4_bin",
        "SET @@session.sql_mode := @old_mode",
    ] {
        assert_eq!(evaluated(q), (vec![], vec![read("sql_mode")]), "{q}");
    }
    assert_eq!(
        evaluated("SET session_track_system_variables=CONCAT(@@global.session_track_system_variables,',redirect_url')"),
        (vec![], vec![read("session_track_system_variables")])
    );
    assert_eq!(
        evaluated("SET time_zone = CURRENT_TIMESTAMP"),
        (vec![], vec![read("time_zone")])
    );
    assert_eq!(
        evaluated("SET sql_select_limit = - - 1"),
        (vec![], vec![read("sql_select_limit")])
    );
    for q in [
        "SET optimizer_switch = 'a=on,a=off'",
        "SET optimizer_switch = 'a=on, b=off'",
        "SET optimizer_switch = on",
    ] {
        assert_eq!(
            evaluated(q),
            (vec![], vec![read("optimizer_switch")]),
            "{q}"
        );
    }
    // Literal assignments beside an expression are followed as written.
    assert_eq!(
        evaluated("SET time_zone = '+00:00', sql_mode = CONCAT(@@sql_mode, ',ANSI'), @a = 1, GLOBAL wait_timeout = 5"),
        (
            vec![var("time_zone", "'+00:00'"), user("a", Some("1"))],
            vec![read("sql_mode")]
        )
    );
    // MariaDB Connector/J 3.5.11's one statement at connect: NAMES beside expressions.
    let (literal, reads) = evaluated("set sql_mode=CONCAT(@@sql_mode,',STRICT_TRANS_TABLES'),session_track_system_variables=CONCAT('autocommit,character_set_client,character_set_connection,character_set_results,time_zone,tx_isolation',IF(LOCATE('*',@@session_track_system_variables)>0 OR FIND_IN_SET('last_gtid',LOWER(REPLACE(@@session_track_system_variables,' ','')))>0,',last_gtid','')),session_track_schema=1,NAMES utf8mb4");
    assert_eq!(
        reads,
        vec![read("sql_mode"), read("session_track_system_variables")]
    );
    assert_eq!(literal.len(), 4, "{literal:?}");
    assert_eq!(literal[0], var("session_track_schema", "1"));
    // The name read back is the one the server accepted; the slot is shared.
    assert_eq!(
        evaluated("SET tx_isolation = @@global.tx_isolation"),
        (
            vec![],
            vec![ReadBack {
                slot: ISOLATION,
                name: "tx_isolation"
            }]
        )
    );
}

#[test]
fn expressions_that_could_change_more_are_untracked() {
    for q in [
        // Side effects weir would not see.
        "SET sql_mode = (@m := 'ANSI')",
        "SET sql_mode = IF(GET_LOCK('x', 0), 'ANSI', '')",
        "SET sql_select_limit = LAST_INSERT_ID(5)",
        "SET sql_select_limit = NEXTVAL(s)",
        "SET sql_mode = my_function()",
        "SET sql_mode = mydb.CONCAT('a')",
        "SET sql_mode = `concat`('a')",
        "SET sql_mode = (SELECT f(1))",
        // Unbalanced or empty.
        "SET sql_mode = CONCAT('a'",
        "SET sql_mode = 'a')",
        // Two assignments to one value, in an order a replay could not tell.
        "SET sql_mode = CONCAT(@@sql_mode, ',A'), sql_mode = 'B'",
        "SET tx_isolation = @@global.tx_isolation, transaction_isolation = 'SERIALIZABLE'",
        "SET character_set_connection = @@character_set_client, collation_connection = 'utf8mb4_bin'",
        "SET NAMES utf8mb4, character_set_results = @@character_set_client",
        "SET character_set_client = @@character_set_results, time_zone = '+00:00'",
        "SET sql_mode = CONCAT(@@sql_mode, ',A'), NAMES utf8mb4, collation_connection = @@collation_database",
        // A GLOBAL expression, and untracked variables.
        "SET GLOBAL sql_mode = CONCAT(@@sql_mode, ',A')",
        "SET sql_log_bin = IF(1, 0, 1)",
        "SET sql_mode = N'x'",
        "SET sql_mode = CONCAT(@@sql_mode, ',A'), @a = NOW()",
    ] {
        untracked(q);
    }
}

#[test]
fn values_read_back_are_followed_as_literals() {
    let sql_mode = read("sql_mode");
    assert_eq!(
        sql_mode.assignment(Some("STRICT_TRANS_TABLES,ANSI")),
        Some(var("sql_mode", "'STRICT_TRANS_TABLES,ANSI'"))
    );
    assert_eq!(sql_mode.assignment(Some("")), Some(var("sql_mode", "''")));
    assert_eq!(
        sql_mode.assignment(Some("it's")),
        Some(var("sql_mode", "'it''s'"))
    );
    assert_eq!(sql_mode.assignment(Some("a\\b")), None);
    assert_eq!(sql_mode.assignment(Some("a\nb")), None);
    assert_eq!(
        read("sql_select_limit").assignment(Some("18446744073709551615")),
        Some(var("sql_select_limit", "18446744073709551615"))
    );
    assert_eq!(
        read("long_query_time").assignment(Some("10.000000")),
        Some(var("long_query_time", "10.000000"))
    );
    assert_eq!(
        read("character_set_results").assignment(None),
        Some(var("character_set_results", "NULL"))
    );
    assert_eq!(
        read("autocommit").assignment(Some("0")),
        Some(var("autocommit", "0"))
    );
    assert_eq!(read("autocommit").assignment(Some("2")), None);
    assert_eq!(
        read("optimizer_switch").assignment(Some("mrr=off,index_merge=on")),
        Some(var("optimizer_switch", "'mrr=off,index_merge=on'"))
    );
    assert_eq!(
        ReadBack::query(&[read("sql_mode"), read("time_zone")]),
        "SELECT @@session.sql_mode, @@session.time_zone"
    );
}

#[test]
fn optimizer_switch_is_canonical() {
    assert_eq!(
        tracked("SET optimizer_switch = 'MRR=off,default'"),
        vec![var("optimizer_switch", "'default,mrr=off'")]
    );
    assert_eq!(
        tracked("SET optimizer_switch = DEFAULT"),
        vec![Assignment {
            slot: Slot::System {
                key: "optimizer_switch",
                name: "optimizer_switch"
            },
            value: None
        }]
    );
}

proptest! {
    #[test]
    fn never_panics(q in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_set(&q);
    }

    #[test]
    fn never_panics_sqlish(q in "SET [a-zA-Z0-9_@=:;,.'\"`#/*!+\\- \\\\()]{0,80}") {
        let _ = parse_set(q.as_bytes());
    }
}
