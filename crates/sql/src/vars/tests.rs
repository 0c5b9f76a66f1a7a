//! Tests of [`SessionVars`]: applying, syncing, and the model property that replaying the sync
//! statements on a connection gives it the client's state.

#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

const MARIADB: SyncContext<'static> = SyncContext {
    handshake_collation: 45,
    connection_collation: 45,
    server_version: "10.11.6-MariaDB-1:10.11.6+maria~ubu2204",
    ignore_space: false,
    connection_ignore_space: false,
};

fn assignments(q: &str) -> Vec<Assignment> {
    match parse_set(q.as_bytes()) {
        SetEffect::Tracked(a) => a,
        other => panic!("{q}: {other:?}"),
    }
}

fn state(statements: &[&str]) -> SessionVars {
    let mut vars = SessionVars::default();
    for q in statements {
        vars.apply(&assignments(q));
    }
    vars
}

fn sync(client: &SessionVars, conn: &SessionVars, ctx: &SyncContext<'_>) -> Vec<String> {
    let mut out = Vec::new();
    assert!(client.sync_statements(conn, ctx, &mut out));
    out
}

#[test]
fn apply_and_read() {
    let mut vars = state(&["SET autocommit=OFF, sql_mode='A'", "SET sql_mode='B'"]);
    assert_eq!(vars.autocommit(), Some(false));
    assert_eq!(vars.system("sql_mode"), Some("'B'"));
    assert!(!vars.is_empty());
    vars.apply(&assignments("SET autocommit=DEFAULT, @a=1"));
    assert_eq!(vars.autocommit(), None);
    vars.apply(&assignments("SET @a=NULL, sql_mode=DEFAULT"));
    assert_eq!(vars.system("sql_mode"), Some("DEFAULT"));
    assert_eq!(vars.system("autocommit"), None);
    assert_eq!(state(&["SET @a=1", "SET @A=NULL"]), SessionVars::default());
    assert!(SessionVars::default().is_empty());
    assert_eq!(state(&["SET autocommit=1"]).autocommit(), Some(true));
}

#[test]
fn one_slot_for_connection_charset_and_collation() {
    let vars = state(&["SET collation_connection=utf8mb4_bin", "SET NAMES latin1"]);
    assert_eq!(vars.system("collation_connection"), Some("latin1"));
    let vars = state(&["SET NAMES latin1", "SET collation_connection=latin1_bin"]);
    assert_eq!(vars.system("collation_connection"), Some("latin1_bin"));
}

#[test]
fn equal_states_need_nothing() {
    let a = state(&["SET NAMES latin1, sql_mode='', @a=1"]);
    assert_eq!(sync(&a, &a.clone(), &MARIADB), Vec::<String>::new());
    assert_eq!(
        sync(&SessionVars::default(), &SessionVars::default(), &MARIADB),
        Vec::<String>::new()
    );
}

#[test]
fn only_differences_in_one_statement() {
    let client = state(&[
        "SET sql_mode='', autocommit=0, time_zone='+00:00'",
        "SET @a=1, @b='x'",
    ]);
    let conn = state(&["SET sql_mode='', time_zone='+01:00', @a=1"]);
    assert_eq!(
        sync(&client, &conn, &MARIADB),
        vec!["SET autocommit=0, time_zone='+00:00', @`b`='x'"]
    );
}

#[test]
fn restores_defaults() {
    let conn = state(&["SET sql_mode='X', wait_timeout=10, @w=1, @`q``x`=2"]);
    assert_eq!(
        sync(&SessionVars::default(), &conn, &MARIADB),
        vec!["SET sql_mode=DEFAULT, wait_timeout=DEFAULT, @`q``x`=NULL, @`w`=NULL"]
    );
}

#[test]
fn charsets_go_back_to_the_handshake_collation() {
    let conn = state(&["SET NAMES latin1"]);
    assert_eq!(
        sync(&SessionVars::default(), &conn, &MARIADB),
        vec![
            "SET character_set_client='utf8mb4', character_set_results='utf8mb4', \
             collation_connection='utf8mb4_general_ci'"
        ]
    );
    let conn = state(&["SET character_set_results=NULL"]);
    assert_eq!(
        sync(&SessionVars::default(), &conn, &MARIADB),
        vec!["SET character_set_results='utf8mb4'"]
    );
}

#[test]
fn unknown_handshake_collation_fails_without_output() {
    let ctx = SyncContext {
        handshake_collation: 255,
        connection_collation: 255,
        server_version: "8.0.36",
        ignore_space: false,
        connection_ignore_space: false,
    };
    let conn = state(&["SET NAMES latin1, sql_mode=''"]);
    let mut out = vec!["kept".to_owned()];
    assert!(!SessionVars::default().sync_statements(&conn, &ctx, &mut out));
    assert_eq!(out, vec!["kept"]);
    // Charsets the client set itself need no handshake lookup.
    let client = state(&["SET NAMES utf8mb4"]);
    assert!(client.sync_statements(&conn, &ctx, &mut out));
}

#[test]
fn charsets_first_then_by_key_then_user_variables() {
    let client =
        state(&["SET @z=1, wait_timeout=5, NAMES 'latin1' COLLATE latin1_bin, autocommit=1"]);
    assert_eq!(
        sync(&client, &SessionVars::default(), &MARIADB),
        vec!["SET NAMES 'latin1' COLLATE latin1_bin, autocommit=1, wait_timeout=5, @`z`=1"]
    );
    let client = state(&["SET CHARACTER SET cp1251"]);
    assert_eq!(
        sync(&client, &SessionVars::default(), &MARIADB),
        vec![
            "SET character_set_client=cp1251, character_set_results=cp1251, \
             character_set_connection=@@character_set_database"
        ]
    );
}

#[test]
fn names_with_a_collation_is_replayed_as_set_names() {
    let names = state(&["SET NAMES utf8mb4 COLLATE utf8mb4_bin"]);
    assert_eq!(
        sync(&names, &SessionVars::default(), &MARIADB),
        vec!["SET NAMES utf8mb4 COLLATE utf8mb4_bin"]
    );
    // The same charsets and connection collation, but character_set_results without the
    // collation (result columns described as 45, not 46): not the same state.
    let one_by_one = state(&["SET NAMES utf8mb4", "SET collation_connection=utf8mb4_bin"]);
    assert_ne!(names, one_by_one);
    assert_ne!(names.fingerprint(), one_by_one.fingerprint());
    assert_eq!(
        sync(&names, &one_by_one, &MARIADB),
        vec!["SET NAMES utf8mb4 COLLATE utf8mb4_bin"]
    );
    assert_eq!(
        sync(&one_by_one, &names, &MARIADB),
        vec!["SET character_set_results=utf8mb4"]
    );
    // What the session set after the SET NAMES goes right after it.
    let then_client = state(&[
        "SET NAMES utf8mb4 COLLATE utf8mb4_bin",
        "SET character_set_client=latin1, sql_mode=''",
    ]);
    assert_eq!(
        sync(&then_client, &state(&["SET NAMES latin1"]), &MARIADB),
        vec!["SET NAMES utf8mb4 COLLATE utf8mb4_bin, character_set_client=latin1, sql_mode=''"]
    );
    // Nothing SET NAMES already put right is repeated.
    let conn = state(&["SET character_set_client=latin1, collation_connection=utf8mb4_bin"]);
    assert_eq!(
        sync(&names, &conn, &MARIADB),
        vec!["SET NAMES utf8mb4 COLLATE utf8mb4_bin"]
    );
    // character_set_results set afterwards holds the charset's default collation again.
    let reset = state(&[
        "SET NAMES utf8mb4 COLLATE utf8mb4_bin",
        "SET character_set_results=utf8mb4",
    ]);
    assert_eq!(
        sync(&reset, &SessionVars::default(), &MARIADB),
        vec![
            "SET character_set_client=utf8mb4, character_set_results=utf8mb4, \
              collation_connection=utf8mb4_bin"
        ]
    );
    // So does SET NAMES without COLLATE, and SET CHARACTER SET.
    for plain in ["SET NAMES utf8mb4", "SET CHARACTER SET utf8mb4"] {
        let vars = state(&["SET NAMES utf8mb4 COLLATE utf8mb4_bin", plain]);
        assert_eq!(
            vars.system("character_set_results"),
            Some("utf8mb4"),
            "{plain}"
        );
        assert!(
            !sync(&vars, &names, &MARIADB)[0].contains("NAMES"),
            "{plain}"
        );
    }
}

#[test]
fn a_handshake_collation_that_is_not_the_default_comes_back_with_set_names() {
    let bin = SyncContext {
        handshake_collation: 46,
        connection_collation: 46,
        ..MARIADB
    };
    let latin1 = state(&["SET NAMES latin1"]);
    assert_eq!(
        sync(&SessionVars::default(), &latin1, &bin),
        vec!["SET NAMES 'utf8mb4' COLLATE 'utf8mb4_bin'"]
    );
    let client = state(&["SET character_set_client=latin1, time_zone='+00:00'"]);
    assert_eq!(
        sync(&client, &latin1, &bin),
        vec![
            "SET NAMES 'utf8mb4' COLLATE 'utf8mb4_bin', character_set_client=latin1, \
              time_zone='+00:00'"
        ]
    );
    // character_set_results still at the handshake collation: the other slots one by one.
    let conn = state(&["SET character_set_client=latin1, collation_connection=latin1_bin"]);
    assert_eq!(
        sync(&SessionVars::default(), &conn, &bin),
        vec!["SET character_set_client='utf8mb4', collation_connection='utf8mb4_bin'"]
    );
    // A default handshake collation needs no SET NAMES (charsets_go_back_to_the_handshake_...).
    assert_eq!(
        sync(&SessionVars::default(), &latin1, &MARIADB),
        vec![
            "SET character_set_client='utf8mb4', character_set_results='utf8mb4', \
             collation_connection='utf8mb4_general_ci'"
        ]
    );
}

#[test]
fn transaction_names_follow_the_server_version() {
    let client = state(&["SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED, READ ONLY"]);
    let conn = SessionVars::default();
    for (version, expected) in [
        (
            "10.11.6-MariaDB",
            "SET tx_isolation='READ-COMMITTED', tx_read_only=1",
        ),
        (
            "5.5.5-10.6.1-MariaDB-log",
            "SET tx_isolation='READ-COMMITTED', tx_read_only=1",
        ),
        (
            "11.4.2-MariaDB",
            "SET transaction_isolation='READ-COMMITTED', transaction_read_only=1",
        ),
        (
            "8.0.36",
            "SET transaction_isolation='READ-COMMITTED', transaction_read_only=1",
        ),
        (
            "5.7.44-log",
            "SET tx_isolation='READ-COMMITTED', tx_read_only=1",
        ),
        ("", "SET tx_isolation='READ-COMMITTED', tx_read_only=1"),
    ] {
        let ctx = SyncContext {
            handshake_collation: 45,
            connection_collation: 45,
            server_version: version,
            ignore_space: false,
            connection_ignore_space: false,
        };
        assert_eq!(sync(&client, &conn, &ctx), vec![expected], "{version}");
        assert_eq!(
            sync(&conn, &client, &ctx),
            vec![expected
                .replace("'READ-COMMITTED'", "DEFAULT")
                .replace("=1", "=DEFAULT")],
            "{version}"
        );
    }
}

#[test]
fn optimizer_switch_accumulates_and_replays_from_default() {
    let client = state(&[
        "SET optimizer_switch='mrr=off'",
        "SET optimizer_switch='index_merge=off,mrr=on'",
    ]);
    assert_eq!(
        client.system("optimizer_switch"),
        Some("'index_merge=off,mrr=on'")
    );
    let conn = state(&["SET optimizer_switch='derived_merge=off'"]);
    assert_eq!(
        sync(&client, &conn, &MARIADB),
        vec!["SET optimizer_switch=DEFAULT, optimizer_switch='index_merge=off,mrr=on'"]
    );
    assert_eq!(
        sync(&client, &SessionVars::default(), &MARIADB),
        vec!["SET optimizer_switch='index_merge=off,mrr=on'"]
    );
    assert_eq!(
        sync(&SessionVars::default(), &conn, &MARIADB),
        vec!["SET optimizer_switch=DEFAULT"]
    );
    assert_eq!(
        state(&[
            "SET optimizer_switch='mrr=off'",
            "SET optimizer_switch=DEFAULT"
        ]),
        SessionVars::default()
    );
}

/// The collation the server describes result columns with after `vars` on a connection that
/// logged in with `handshake`, as the server decides it: the handshake's, the one `SET NAMES
/// ... COLLATE` gave, or the default one of the charset `character_set_results` was set to.
fn results_collation(vars: &SessionVars, handshake: u8) -> String {
    let unquote = |s: &str| s.trim_matches('\'').to_ascii_lowercase();
    match vars.system_value("character_set_results") {
        None => collation_by_id(u32::from(handshake)).unwrap().1.to_owned(),
        Some(s) if s.name == NAMES => unquote(s.value.split_once(" COLLATE ").unwrap().1),
        Some(s) => {
            let charset = unquote(&s.value);
            crate::COLLATIONS
                .iter()
                .find(|c| c.3 && c.2 == charset)
                .map_or(charset, |c| c.1.to_owned())
        }
    }
}

/// Assignments that combine in one SET statement.
const ITEMS: &[&str] = &[
    "sql_mode=''",
    "sql_mode='TRADITIONAL'",
    "SESSION sql_mode = \"ANSI_QUOTES\"",
    "@@sql_mode=DEFAULT",
    "sql_mode=traditional",
    "autocommit=0",
    "autocommit=ON",
    "@@session.autocommit=DEFAULT",
    "time_zone='+00:00'",
    "time_zone=SYSTEM",
    "LOCAL time_zone=DEFAULT",
    "character_set_client=latin1",
    "character_set_results=NULL",
    "character_set_client=DEFAULT",
    "collation_connection=utf8mb4_bin",
    "character_set_connection='latin1'",
    "character_set_connection=@@character_set_database",
    "NAMES utf8mb4",
    "NAMES 'latin1' COLLATE latin1_bin",
    "NAMES utf8mb4 COLLATE utf8mb4_bin",
    "NAMES latin1 COLLATE 'latin1_swedish_ci'",
    "character_set_results=utf8mb4",
    "character_set_results='latin1'",
    "CHARACTER SET cp1251",
    "CHARSET utf8mb4",
    "tx_isolation='READ-COMMITTED'",
    "transaction_isolation=DEFAULT",
    "transaction_read_only=1",
    "tx_read_only=OFF",
    "sql_select_limit=10",
    "sql_select_limit=DEFAULT",
    "max_execution_time=+1000",
    "long_query_time=.5",
    "optimizer_switch='mrr=off'",
    "optimizer_switch='index_merge=off,mrr=on'",
    "optimizer_switch='default,mrr=off'",
    "optimizer_switch=DEFAULT",
    "optimizer_switch=''",
    "SESSION sql_notes=0",
    "@a=1",
    "@A='x'",
    "@b=NULL",
    "@`c``d`=0x41",
    "@'e f'=-2.5e3",
    "@a=_utf8mb4'it''s'",
    "@b=TRUE",
];

/// Statements that stand alone.
const STATEMENTS: &[&str] = &[
    "SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY",
    "SET LOCAL TRANSACTION READ WRITE",
    "SET GLOBAL TRANSACTION READ ONLY",
    "SET PASSWORD = 'x'",
    "SET GLOBAL max_connections=10, sql_mode='', @@session.sql_notes=1, SESSION wait_timeout=3",
    "/* c */ set names latin1 ;",
];

fn statement() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::collection::vec(proptest::sample::select(ITEMS), 1..4)
            .prop_map(|items| format!("SET {}", items.join(", "))),
        1 => proptest::sample::select(STATEMENTS).prop_map(String::from),
    ]
}

proptest! {
    #[test]
    fn replaying_the_sync_gives_the_clients_state(
        client_statements in proptest::collection::vec(statement(), 0..10),
        conn_statements in proptest::collection::vec(statement(), 0..10),
        mysql in any::<bool>(),
        handshake in proptest::sample::select(&[45u8, 46, 8, 47][..]),
    ) {
        let ctx = SyncContext {
            handshake_collation: handshake,
            connection_collation: handshake,
            server_version: if mysql { "8.0.36" } else { "10.11.6-MariaDB" },
            ignore_space: false,
            connection_ignore_space: false,
        };
        let mut client = SessionVars::default();
        for q in &client_statements {
            client.apply(&assignments(q));
        }
        let mut conn = SessionVars::default();
        for q in &conn_statements {
            conn.apply(&assignments(q));
        }
        prop_assert!(sync(&client, &client.clone(), &ctx).is_empty());
        let replay = sync(&client, &conn, &ctx);
        prop_assert!(replay.len() <= 1);
        for q in &replay {
            conn.apply(&assignments(q));
        }
        for mine in &client.system {
            prop_assert_eq!(conn.system_value(mine.key), Some(mine), "{:?}", replay);
        }
        let (charset, collation) = collation_by_id(u32::from(handshake)).unwrap();
        for theirs in &conn.system {
            if client.system_value(theirs.key).is_none() {
                let restored = match theirs.key {
                    "character_set_results" if !is_default_collation(u32::from(handshake)) => {
                        format!("'{charset}' COLLATE '{collation}'")
                    }
                    "character_set_client" | "character_set_results" => format!("'{charset}'"),
                    "collation_connection" => format!("'{collation}'"),
                    _ => "DEFAULT".to_owned(),
                };
                prop_assert_eq!(&*theirs.value, restored, "{:?} {:?}", theirs, replay);
            }
        }
        prop_assert_eq!(
            results_collation(&conn, handshake),
            results_collation(&client, handshake),
            "{:?}",
            replay
        );
        prop_assert_eq!(&conn.user, &client.user, "{:?}", replay);
    }
}

#[test]
fn fingerprint_follows_the_state_not_its_history() {
    assert_eq!(SessionVars::default().fingerprint(), 0);
    let a = state(&["SET NAMES latin1", "SET time_zone = '+00:00'"]);
    let b = state(&["SET time_zone='+00:00'", "SET NAMES latin1"]);
    assert_eq!(a.fingerprint(), b.fingerprint());
    let c = state(&["SET NAMES utf8mb4", "SET time_zone = '+00:00'"]);
    assert_ne!(a.fingerprint(), c.fingerprint());
    let d = state(&["SET NAMES latin1", "SET time_zone = '+00:00'", "SET @v = 1"]);
    assert_ne!(a.fingerprint(), d.fingerprint());
    let back = state(&[
        "SET NAMES latin1",
        "SET time_zone = '+00:00'",
        "SET @v = 1",
        "SET @v = NULL",
    ]);
    assert_eq!(a.fingerprint(), back.fingerprint());
}

#[test]
fn default_sql_mode_keeps_ignore_space_from_the_handshake() {
    let conn = state(&["SET sql_mode = 'TRADITIONAL'"]);
    let client = SessionVars::default();
    let ctx = SyncContext {
        ignore_space: true,
        connection_ignore_space: true,
        ..MARIADB
    };
    let mut out = Vec::new();
    assert!(client.sync_statements(&conn, &ctx, &mut out));
    assert_eq!(
        out,
        vec!["SET sql_mode=CONCAT_WS(',', NULLIF(@@global.sql_mode, ''), 'IGNORE_SPACE')"]
    );
    let mut out = Vec::new();
    assert!(client.sync_statements(&conn, &MARIADB, &mut out));
    assert_eq!(out, vec!["SET sql_mode=DEFAULT"]);
}

#[test]
fn parse_context_is_the_text_charsets_and_sql_mode() {
    let prepared_in =
        state(&["SET NAMES latin1, sql_mode='ANSI_QUOTES', time_zone='+01:00', @a=1"]);
    let context = prepared_in.parse_context();
    assert_eq!(context.system("sql_mode"), Some("'ANSI_QUOTES'"));
    assert_eq!(context.system("character_set_client"), Some("latin1"));
    assert_eq!(context.system("collation_connection"), Some("latin1"));
    assert_eq!(context.system("character_set_results"), None);
    assert_eq!(context.system("time_zone"), None);
    assert!(prepared_in.parses_as(&context));

    // Later: another sql_mode and charset, other variables changed too.
    let now = state(&["SET NAMES utf8mb4, time_zone='+02:00', wait_timeout=5"]);
    assert!(!now.parses_as(&context));
    let to_prepare = now.with_parse_context(&context);
    assert!(to_prepare.parses_as(&context));
    assert_eq!(to_prepare.system("time_zone"), Some("'+02:00'"));
    assert_eq!(to_prepare.system("wait_timeout"), Some("5"));
    assert_eq!(to_prepare.system("character_set_results"), Some("utf8mb4"));
    assert_eq!(
        sync(&to_prepare, &now, &MARIADB),
        vec!["SET character_set_client=latin1, character_set_connection=latin1, sql_mode='ANSI_QUOTES'"]
    );
    assert_eq!(
        sync(&now, &to_prepare, &MARIADB),
        vec![
            "SET character_set_client=utf8mb4, character_set_connection=utf8mb4, sql_mode=DEFAULT"
        ]
    );
    // A context with nothing set takes the connection's handshake charsets and default mode.
    let plain = SessionVars::default().parse_context();
    assert!(!now.parses_as(&plain));
    assert_eq!(
        sync(&now.with_parse_context(&plain), &now, &MARIADB),
        vec!["SET character_set_client='utf8mb4', collation_connection='utf8mb4_general_ci'"]
    );
}

#[test]
fn a_connection_from_another_handshake_collation_is_brought_to_the_clients() {
    let on = |client: u8, conn: u8| SyncContext {
        handshake_collation: client,
        connection_collation: conn,
        ..MARIADB
    };
    let nothing = SessionVars::default();
    // A default collation: every charset slot to it, results by charset (columns get 45).
    assert_eq!(
        sync(&nothing, &nothing, &on(45, 46)),
        vec!["SET character_set_client='utf8mb4', character_set_results='utf8mb4', collation_connection='utf8mb4_general_ci'"]
    );
    // Another collation: as its handshake would, with SET NAMES ... COLLATE.
    assert_eq!(
        sync(&nothing, &nothing, &on(46, 45)),
        vec!["SET NAMES 'utf8mb4' COLLATE 'utf8mb4_bin'"]
    );
    assert_eq!(
        sync(&nothing, &nothing, &on(8, 45)),
        vec!["SET character_set_client='latin1', character_set_results='latin1', collation_connection='latin1_swedish_ci'"]
    );
    // What the client set goes over whatever the connection started from.
    let latin1 = state(&["SET NAMES latin1"]);
    assert_eq!(
        sync(&latin1, &nothing, &on(45, 46)),
        vec!["SET character_set_client=latin1, character_set_results=latin1, character_set_connection=latin1"]
    );
    // Slots the connection set itself stay as set; only those it left at its start move.
    let conn = state(&["SET character_set_client = latin1"]);
    assert_eq!(
        sync(&nothing, &conn, &on(46, 45)),
        vec!["SET NAMES 'utf8mb4' COLLATE 'utf8mb4_bin'"]
    );
    // Unknown collation ids cannot be spelled out.
    let mut out = Vec::new();
    assert!(!nothing.sync_statements(&nothing, &on(45, 255), &mut out));
    assert!(out.is_empty());
}

#[test]
fn a_connection_with_another_ignore_space_start_gets_the_clients_sql_mode() {
    let on = |client: bool, conn: bool| SyncContext {
        ignore_space: client,
        connection_ignore_space: conn,
        ..MARIADB
    };
    let nothing = SessionVars::default();
    assert_eq!(
        sync(&nothing, &nothing, &on(true, false)),
        vec!["SET sql_mode=CONCAT_WS(',', NULLIF(@@global.sql_mode, ''), 'IGNORE_SPACE')"]
    );
    assert_eq!(
        sync(&nothing, &nothing, &on(false, true)),
        vec!["SET sql_mode=DEFAULT"]
    );
    // A sql_mode set by the client, or by both alike, needs nothing more.
    let ansi = state(&["SET sql_mode = 'ANSI'"]);
    assert!(sync(&ansi, &ansi, &on(false, true)).is_empty());
    assert_eq!(
        sync(&ansi, &nothing, &on(false, true)),
        vec!["SET sql_mode='ANSI'"]
    );
    // Parse contexts tell the two starts apart.
    assert_ne!(
        nothing.parse_context_from(45, true),
        nothing.parse_context_from(45, false)
    );
    assert_eq!(
        ansi.parse_context_from(45, true),
        ansi.parse_context_from(45, false)
    );
}

/// The collation result columns are described with, as the server picks it.
#[test]
fn results_collation_follows_the_charset_statements() {
    let id = |statements: &[&str], handshake| state(statements).results_collation(handshake);
    assert_eq!(id(&[], 45), Some(45));
    assert_eq!(id(&[], 224), Some(224));
    assert_eq!(id(&[], 255), None);
    assert_eq!(id(&["SET NAMES latin1"], 45), Some(8));
    assert_eq!(id(&["SET NAMES 'utf8'"], 45), Some(33));
    assert_eq!(id(&["SET NAMES utf8mb4 COLLATE utf8mb4_bin"], 8), Some(46));
    assert_eq!(
        id(&["SET NAMES 'latin1' COLLATE 'latin1_bin'"], 45),
        Some(47)
    );
    assert_eq!(id(&["SET character_set_results = cp1251"], 45), Some(51));
    assert_eq!(id(&["SET CHARACTER SET koi8r"], 45), Some(7));
    assert_eq!(
        id(
            &["SET NAMES latin1", "SET character_set_results = utf8mb4"],
            8
        ),
        Some(45)
    );
    assert_eq!(id(&["SET character_set_results = NULL"], 45), None);
    // The test model's reading agrees.
    for statements in [
        &["SET NAMES latin1"][..],
        &["SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci"],
        &["SET character_set_results = greek"],
    ] {
        let vars = state(statements);
        let id = vars.results_collation(45).unwrap();
        assert_eq!(
            collation_by_id(id).unwrap().1,
            results_collation(&vars, 45),
            "{statements:?}"
        );
    }
}

#[test]
fn user_string_literals_keep_the_collation_they_were_set_in() {
    let literal = |before: &[&str], set: &str| {
        let vars = state(before);
        let mut a = assignments(set);
        assert!(vars.pin_literal_collations(&mut a, 45), "{before:?} {set}");
        a.into_iter().map(|a| a.value).collect::<Vec<_>>()
    };
    let v = |s: &str| Some(s.into());
    assert_eq!(
        literal(&[], "SET @s = 'X0'"),
        vec![v("_utf8mb4'X0' COLLATE `utf8mb4_general_ci`")]
    );
    assert_eq!(
        literal(
            &["SET NAMES latin1"],
            "SET @t = 'it''s', @n = 5, @h = X'41'"
        ),
        vec![v("_latin1'it''s'"), v("5"), v("X'41'")]
    );
    assert_eq!(
        literal(&["SET NAMES utf8mb4 COLLATE utf8mb4_bin"], "SET @s = 'a'"),
        vec![v("_utf8mb4'a' COLLATE `utf8mb4_bin`")]
    );
    // Read before the statement's own SET NAMES runs.
    assert_eq!(
        literal(&[], "SET NAMES latin1, @s = 'a'")[3],
        v("_utf8mb4'a' COLLATE `utf8mb4_general_ci`")
    );
    assert_eq!(
        literal(
            &["SET collation_connection = utf8mb4_unicode_ci"],
            "SET @s = 'a'"
        ),
        vec![v("_utf8mb4'a' COLLATE `utf8mb4_unicode_ci`")]
    );
    // `binary` is a reserved word: quoted.
    assert_eq!(
        literal(&["SET collation_connection = binary"], "SET @s = 'a'"),
        vec![v("_binary'a' COLLATE `binary`")]
    );
    assert_eq!(
        literal(&["SET character_set_connection = ucs2"], "SET @s = 'a'"),
        vec![v("CONVERT('a' USING ucs2)")]
    );
    // A collation the client set needs no known handshake collation (255: MySQL 8's).
    let vars = state(&["SET NAMES utf8mb4 COLLATE utf8mb4_unicode_ci"]);
    let mut a = assignments("SET @s = 'a'");
    assert!(vars.pin_literal_collations(&mut a, 255));
    assert_eq!(a[0].value, v("_utf8mb4'a' COLLATE `utf8mb4_unicode_ci`"));
    // An introducer says it all; NULL and DEFAULT have no collation.
    assert_eq!(
        literal(&[], "SET @s = _latin1'a', @u = NULL"),
        vec![v("_latin1'a'"), None]
    );
    // The schema's charset, not known here: not replayable as it was.
    let vars = state(&["SET CHARACTER SET latin1"]);
    let mut a = assignments("SET @s = 'a'");
    assert!(!vars.pin_literal_collations(&mut a, 45));
}

/// How statements are lexed follows the tracked sql_mode and client charset.
#[test]
fn lexing_follows_sql_mode_and_the_client_charset() {
    use crate::{Lexing, Multibyte};
    assert_eq!(state(&[]).lexing(45), Lexing::default());
    assert_eq!(state(&[]).lexing(13).multibyte, Some(Multibyte::Sjis));
    let nbe = state(&["SET sql_mode = 'ANSI,no_backslash_escapes'"]);
    assert!(nbe.lexing(45).no_backslash_escapes);
    assert!(nbe.parse_context().lexing(45).no_backslash_escapes);
    assert!(
        !state(&[])
            .with_parse_context(&state(&[]).parse_context())
            .lexing(45)
            .no_backslash_escapes
    );
    assert!(
        !nbe.with_parse_context(&state(&[]).parse_context())
            .lexing(45)
            .no_backslash_escapes
    );
    let mut back = nbe.clone();
    if let crate::SetEffect::Tracked(a) = crate::parse_set(b"SET sql_mode = DEFAULT") {
        back.apply(&a);
    }
    assert!(!back.lexing(45).no_backslash_escapes);
    assert_eq!(
        state(&["SET NAMES gbk"]).lexing(45).multibyte,
        Some(Multibyte::Gbk)
    );
    assert_eq!(
        state(&["SET NAMES 'big5' COLLATE 'big5_bin'"])
            .lexing(45)
            .multibyte,
        Some(Multibyte::Big5)
    );
    assert_eq!(
        state(&["SET character_set_client = cp932"])
            .lexing(45)
            .multibyte,
        Some(Multibyte::Sjis)
    );
    assert_eq!(state(&["SET NAMES utf8mb4"]).lexing(13).multibyte, None);
    for mode in [
        "ANSI",
        "'ansi_quotes'",
        "'ORACLE,STRICT_TRANS_TABLES'",
        "'MSSQL'",
    ] {
        let l = state(&[&format!("SET sql_mode = {mode}")]).lexing(45);
        assert!(l.ansi_quotes && !l.no_backslash_escapes, "{mode}");
    }
    assert!(
        !state(&["SET sql_mode = 'ANSI_QUOTESX,TRADITIONAL'"])
            .lexing(45)
            .ansi_quotes
    );
}
