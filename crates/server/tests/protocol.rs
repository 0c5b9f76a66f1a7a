//! Commands and bad input at the protocol level, with a hand-written client.
#![allow(clippy::unwrap_used)]
mod common;
use common::raw::{err_code, RawClient};
use std::time::{Duration, Instant};
use weir_testkit::{WEIR_PASS, WEIR_USER};
use weir_wire::reply::Expect;

fn login() -> RawClient {
    let (c, p) = RawClient::login(common::weir().port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    assert_eq!(p[0], 0, "login failed: {:?}", String::from_utf8_lossy(&p));
    c
}

#[test]
fn wrong_password_and_unknown_user_are_denied() {
    let (mut c, p) = RawClient::login(common::weir().port, WEIR_USER, "nope", None);
    assert_eq!(err_code(&p), Some(1045));
    let msg = String::from_utf8_lossy(&p[9..]).into_owned();
    assert!(
        msg.starts_with("Access denied for user 'weir'@'127.0.0.1'"),
        "{msg}"
    );
    assert_eq!(&p[3..9], b"#28000");
    assert!(c.is_closed());
    let (_, p) = RawClient::login(common::weir().port, "nobody", "x", None);
    assert_eq!(err_code(&p), Some(1045));
}

#[test]
fn greeting_scramble_is_fresh_per_connection() {
    let a = RawClient::connect_only(common::weir().port);
    let b = RawClient::connect_only(common::weir().port);
    assert_eq!(a.greeting.scramble.len(), 20);
    assert_ne!(a.greeting.scramble, b.greeting.scramble);
    assert_ne!(a.greeting.connection_id, b.greeting.connection_id);
}

#[test]
fn ping_statistics_field_list() {
    let mut c = login();
    let r = c.command(&[0x0e], Expect::Status);
    assert_eq!(r[0][0], 0);
    let r = c.command(&[0x09], Expect::Single);
    assert!(String::from_utf8_lossy(&r[0]).contains("Uptime"), "{:?}", r);
    c.query("CREATE TABLE IF NOT EXISTS weirtest.fl (a INT, b VARCHAR(10))");
    let mut p = vec![0x04];
    p.extend_from_slice(b"fl\0");
    let r = c.command(&p, Expect::FieldList);
    assert_eq!(r.len(), 3, "two column definitions and an EOF");
    assert_eq!(r[2][0], 0xfe);
}

#[test]
fn set_option_turns_multi_statements_off() {
    let mut c = login();
    let r = c.query("SELECT 1; SELECT 2");
    assert!(r.iter().all(|p| p[0] != 0xff));
    // MYSQL_OPTION_MULTI_STATEMENTS_OFF = 1
    let r = c.command(&[0x1b, 1, 0], Expect::Status);
    assert_ne!(r[0][0], 0xff);
    let r = c.query("SELECT 1; SELECT 2");
    assert_eq!(err_code(r.last().unwrap()), Some(1064));
}

#[test]
fn unknown_command_keeps_connection_usable() {
    let mut c = login();
    for cmd in [0x12u8, 0x20, 0x05, 0x7f] {
        let r = c.command(&[cmd, 0, 0], Expect::Status);
        assert_eq!(err_code(&r[0]), Some(1047), "command 0x{cmd:02x}");
    }
    let r = c.query("SELECT 42");
    assert_eq!(r.len(), 5);
}

#[test]
fn init_db_and_kill_unknown_thread() {
    let mut c = login();
    let mut p = vec![0x02];
    p.extend_from_slice(b"no_such_db");
    let r = c.command(&p, Expect::Status);
    assert_eq!(err_code(&r[0]), Some(1049));
    let mut p = vec![0x02];
    p.extend_from_slice(b"sbtest");
    let r = c.command(&p, Expect::Status);
    assert_eq!(r[0][0], 0);
    let r = c.query("SELECT DATABASE()");
    assert_eq!(&r[3][1..], b"sbtest");
    let r = c.command(&[0x0c, 0xff, 0xff, 0xff, 0x7f], Expect::Status);
    assert_eq!(err_code(&r[0]), Some(1094));
    let r = c.query("KILL 2147483000");
    assert_eq!(err_code(&r[0]), Some(1094));
}

#[test]
fn garbage_handshake_gets_an_error() {
    let mut c = RawClient::connect_only(common::weir().port);
    c.send_raw(&[5, 0, 0, 1, 1, 2, 3, 4, 5]);
    let (_, p) = c.read_packet().unwrap();
    assert_eq!(err_code(&p), Some(1043));
    assert!(c.is_closed());
}

#[test]
fn silent_client_is_disconnected_and_big_packet_refused() {
    let w = common::start_weir("connect_timeout_client = 500\nmax_allowed_packet = 1048576");
    let mut c = RawClient::connect_only(w.port);
    let t = Instant::now();
    assert!(c.is_closed());
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());

    let (mut c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0);
    let mut q = vec![0x03];
    q.extend(std::iter::repeat_n(b' ', 2 << 20));
    let mut out = bytes::BytesMut::new();
    weir_wire::packet::write_packet(&mut out, 0, &q);
    let mut writer = c.stream.try_clone().unwrap();
    let t = std::thread::spawn(move || {
        use std::io::Write;
        // weir refuses after the header and closes: the rest of the write may fail.
        let _ = writer.write_all(&out);
    });
    match c.read_packet() {
        Ok((_, p)) => assert_eq!(err_code(&p), Some(1153)),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
    t.join().unwrap();
    assert!(c.is_closed());
    let (_, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0, "weir still serves other clients");
}

/// Logs in claiming `plugin` with `proof` as the first auth response; answers one auth switch
/// with a native proof. Returns the packets after the handshake response, up to OK/ERR.
fn login_with_plugin(
    port: u16,
    plugin: &str,
    proof: impl Fn(&[u8]) -> Vec<u8>,
    pass: &str,
) -> Vec<Vec<u8>> {
    use std::io::Write;
    use weir_wire::handshake::HandshakeResponse;
    let mut c = RawClient::connect_only(port);
    let caps = weir_wire::cap::PROTOCOL_41
        | weir_wire::cap::SECURE_CONNECTION
        | weir_wire::cap::PLUGIN_AUTH
        | weir_wire::cap::PLUGIN_AUTH_LENENC_CLIENT_DATA;
    let resp = HandshakeResponse {
        capabilities: caps,
        max_packet: 1 << 24,
        collation: 45,
        username: WEIR_USER.into(),
        auth_response: proof(&c.greeting.scramble),
        database: None,
        auth_plugin: Some(plugin.into()),
        attributes: vec![],
        mariadb_capabilities: 0,
    };
    let mut out = bytes::BytesMut::new();
    resp.write(&mut out, 1);
    c.stream.write_all(&out).unwrap();
    let mut got = Vec::new();
    loop {
        let (seq, p) = c.read_packet().unwrap();
        got.push(p.clone());
        match p[0] {
            0x00 | 0xff => return got,
            0xfe => {
                let (name, data) = weir_wire::handshake::parse_auth_switch(&p).unwrap();
                assert_eq!(name, "mysql_native_password");
                let scramble = &data[..20];
                let proof = weir_wire::auth::native_scramble_from_stage1(
                    scramble,
                    &weir_wire::auth::native_stage1(pass.as_bytes()),
                );
                let mut out = bytes::BytesMut::new();
                weir_wire::packet::write_packet(&mut out, seq.wrapping_add(1), &proof);
                c.stream.write_all(&out).unwrap();
            }
            0x01 => {}
            other => panic!("unexpected packet 0x{other:02x}"),
        }
    }
}

/// caching_sha2_password: the fast path when weir presents itself as MySQL 8; as MariaDB (the
/// backends' version, by default), a switch to mysql_native_password, as MariaDB answers
/// (MySQL Connector/J cannot read a fast-auth reply from a "5.5.5-" server). Unknown plugins
/// are switched to mysql_native_password.
#[test]
fn caching_sha2_fast_path_and_auth_switch() {
    let sha2 = |s: &[u8]| weir_wire::auth::sha2_scramble(&s[..20], WEIR_PASS.as_bytes()).to_vec();
    let wrong = |s: &[u8]| weir_wire::auth::sha2_scramble(&s[..20], b"wrong").to_vec();
    let mysql8 = common::admin::start("server_version = \"8.0.36\"");
    let r = login_with_plugin(mysql8.port, "caching_sha2_password", sha2, WEIR_PASS);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0], vec![0x01, 0x03], "fast auth success");
    assert_eq!(r[1][0], 0);
    let r = login_with_plugin(mysql8.port, "caching_sha2_password", wrong, WEIR_PASS);
    assert_eq!(err_code(r.last().unwrap()), Some(1045));
    let mariadb = common::weir().port;
    let r = login_with_plugin(mariadb, "caching_sha2_password", sha2, WEIR_PASS);
    assert_eq!(r[0][0], 0xfe, "auth switch: {r:?}");
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[1][0], 0);
    let r = login_with_plugin(mariadb, "caching_sha2_password", wrong, "bad");
    assert_eq!(err_code(r.last().unwrap()), Some(1045));
    let r = login_with_plugin(mariadb, "dialog", |_| b"whatever".to_vec(), WEIR_PASS);
    assert_eq!(r[0][0], 0xfe);
    assert_eq!(r.last().unwrap()[0], 0, "{r:?}");
    let r = login_with_plugin(mariadb, "dialog", |_| b"whatever".to_vec(), "bad");
    assert_eq!(err_code(r.last().unwrap()), Some(1045));
}

/// What MariaDB refuses at login, weir refuses at login, with the server's error: a client
/// character set statements cannot be read in (ucs2...: 1231), a schema name over 64
/// characters (1102); in COM_CHANGE_USER too. Before, weir accepted them and every statement
/// of the session failed, `SET NAMES` and `USE` included.
#[test]
fn logins_the_server_refuses_are_refused() {
    let port = common::weir().port;
    let direct = common::topo().primary.port;
    for p in [port, direct] {
        let (_, r) = RawClient::login_collation(p, WEIR_USER, WEIR_PASS, None, 0, 35);
        assert_eq!(err_code(&r), Some(1231), "ucs2 at port {p}: {r:?}");
        let long = "d".repeat(65);
        let (_, r) = RawClient::login(p, WEIR_USER, WEIR_PASS, Some(&long));
        assert_eq!(err_code(&r), Some(1102), "long name at port {p}: {r:?}");
    }
    let (mut c, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0);
    // COM_CHANGE_USER asking for ucs2 (collation 35).
    let proof = weir_wire::auth::native_scramble_from_stage1(
        &c.greeting.scramble,
        &weir_wire::auth::native_stage1(WEIR_PASS.as_bytes()),
    );
    let mut payload = vec![0x11];
    payload.extend_from_slice(WEIR_USER.as_bytes());
    payload.push(0);
    payload.push(proof.len() as u8);
    payload.extend_from_slice(&proof);
    payload.push(0);
    payload.extend_from_slice(&35u16.to_le_bytes());
    payload.extend_from_slice(b"mysql_native_password\0");
    let mut out = bytes::BytesMut::new();
    weir_wire::packet::write_packet(&mut out, 0, &payload);
    std::io::Write::write_all(&mut c.stream, &out).unwrap();
    let (_, r) = c.read_packet().unwrap();
    assert_eq!(err_code(&r), Some(1231), "{r:?}");
    let r = c.query("SET NAMES utf8mb4");
    assert_eq!(r[0][0], 0, "the session goes on: {r:?}");
}

#[test]
fn prepared_statement_long_data_cursor_fetch_reset() {
    let mut c = login();
    c.query("CREATE TABLE IF NOT EXISTS weirtest.ps (id INT PRIMARY KEY, b BLOB)");
    c.query("DELETE FROM weirtest.ps");
    c.query("INSERT INTO weirtest.ps VALUES (1, 'a'), (2, 'b'), (3, 'c')");
    // PREPARE: OK, 1 param definition + EOF, no columns.
    let mut p = vec![0x16];
    p.extend_from_slice(b"INSERT INTO weirtest.ps VALUES (10, ?)");
    let r = c.command(&p, Expect::Prepare);
    assert_eq!(r[0][0], 0, "{r:?}");
    let stmt = [r[0][1], r[0][2], r[0][3], r[0][4]];
    // SEND_LONG_DATA for param 0 twice (no reply), then EXECUTE.
    for chunk in [&b"hello "[..], b"world"] {
        let mut p = vec![0x18];
        p.extend_from_slice(&stmt);
        p.extend_from_slice(&[0, 0]);
        p.extend_from_slice(chunk);
        c.send(&p);
    }
    let mut p = vec![0x17];
    p.extend_from_slice(&stmt);
    p.push(0); // no cursor
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(0); // null bitmap
    p.push(1); // new params bound
    p.extend_from_slice(&[0xfc, 0]); // BLOB
    let r = c.command(&p, Expect::ResultSets);
    assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
    let r = c.query("SELECT b FROM weirtest.ps WHERE id = 10");
    assert_eq!(&r[3][1..], b"hello world");
    // STMT_RESET, STMT_CLOSE (no reply), then the id is unknown.
    let mut p = vec![0x1a];
    p.extend_from_slice(&stmt);
    assert_eq!(c.command(&p, Expect::Status)[0][0], 0);
    let mut p = vec![0x19];
    p.extend_from_slice(&stmt);
    c.send(&p);
    let mut p = vec![0x1a];
    p.extend_from_slice(&stmt);
    assert_eq!(err_code(&c.command(&p, Expect::Status)[0]), Some(1243));

    // A read-only cursor: EXECUTE returns metadata only, FETCH returns rows.
    let mut p = vec![0x16];
    p.extend_from_slice(b"SELECT id FROM weirtest.ps WHERE id < 10 ORDER BY id");
    let r = c.command(&p, Expect::Prepare);
    let stmt = [r[0][1], r[0][2], r[0][3], r[0][4]];
    let mut p = vec![0x17];
    p.extend_from_slice(&stmt);
    p.push(1); // CURSOR_TYPE_READ_ONLY
    p.extend_from_slice(&1u32.to_le_bytes());
    let r = c.command(&p, Expect::CursorResultSets);
    assert_eq!(
        r.len(),
        3,
        "column count, definition, EOF with cursor flag: {r:?}"
    );
    let mut p = vec![0x1c];
    p.extend_from_slice(&stmt);
    p.extend_from_slice(&2u32.to_le_bytes());
    let r = c.command(&p, Expect::Fetch);
    assert_eq!(r.len(), 3, "two rows and an EOF: {r:?}");
    let mut p = vec![0x1c];
    p.extend_from_slice(&stmt);
    p.extend_from_slice(&2u32.to_le_bytes());
    let r = c.command(&p, Expect::Fetch);
    assert_eq!(r.len(), 2, "last row and EOF: {r:?}");
    // After COM_STMT_RESET the cursor is gone: a FETCH gets 1421, as from the server.
    let mut reset = vec![0x1a];
    reset.extend_from_slice(&stmt);
    assert_eq!(c.command(&reset, Expect::Status)[0][0], 0);
    let r = c.command(&p, Expect::Fetch);
    assert_eq!(err_code(&r[0]), Some(1421), "{r:?}");
    assert!(
        String::from_utf8_lossy(&r[0]).contains("has no open cursor"),
        "{r:?}"
    );
    // A cursor whose query fails as it is filled: the server's error, after the definitions
    // it sent, reaches the client, and the session goes on.
    let mut p = vec![0x16];
    p.extend_from_slice(b"SELECT (SELECT 1 UNION SELECT 2) AS x");
    let r = c.command(&p, Expect::Prepare);
    let failing = [r[0][1], r[0][2], r[0][3], r[0][4]];
    let mut p = vec![0x17];
    p.extend_from_slice(&failing);
    p.push(1); // CURSOR_TYPE_READ_ONLY
    p.extend_from_slice(&1u32.to_le_bytes());
    let r = c.command(&p, Expect::CursorResultSets);
    let last = r.last().map(|p| err_code(p));
    assert_eq!(last, Some(Some(1242)), "{r:?}");
    let r = c.query("SELECT 5");
    assert_eq!(&r[3][1..], b"5", "{r:?}");
    // Executing an id that was never prepared on this session.
    let r = c.command(&[0x17, 0x99, 0, 0, 0, 0, 1, 0, 0, 0], Expect::ResultSets);
    assert_eq!(err_code(&r[0]), Some(1243));
    assert!(
        String::from_utf8_lossy(&r[0]).ends_with("given to mysqld_stmt_execute"),
        "{r:?}"
    );
}

#[test]
fn kill_query_of_own_session() {
    let (mut a, p) = RawClient::login(common::weir().port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0);
    let a_id = a.greeting.connection_id;
    let t = std::time::Instant::now();
    let handle = std::thread::spawn(move || {
        let r = a.query("SELECT SLEEP(20)");
        (r, a)
    });
    let mut b = login();
    // Wait until the statement runs on the backend, so that there is something to kill.
    let primary = &common::topo().primary;
    let waited = Instant::now();
    while primary
        .query_value(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = 'SELECT SLEEP(20)'",
        )
        .unwrap()
        == "0"
    {
        assert!(
            waited.elapsed() < Duration::from_secs(10),
            "the statement never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let r = b.query(&format!("KILL QUERY {a_id}"));
    assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
    let (r, mut a) = handle.join().unwrap();
    assert!(t.elapsed() < Duration::from_secs(10));
    // SLEEP interrupted returns 1 (MariaDB) or an error 1317, depending on timing.
    let last = r.last().unwrap();
    assert!(last[0] == 0xfe || err_code(last) == Some(1317), "{r:?}");
    let r = a.query("SELECT 9");
    assert_eq!(&r[3][1..], b"9");
    // KILL CONNECTION ends the other session.
    let r = b.query(&format!("KILL {a_id}"));
    assert_eq!(r[0][0], 0);
    assert!(a.is_closed());
}

/// `KILL <id>` of a session whose statement runs closes its connection without a word, as the
/// server does (the client reads a lost connection, 2013). Before, the victim got ERR 1317
/// first, which says the connection is still usable: Connector/J then failed its next
/// statement instead of discarding the connection.
#[test]
fn kill_of_a_running_statements_session_closes_it_without_an_error() {
    let (mut a, p) = RawClient::login(common::weir().port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0);
    let a_id = a.greeting.connection_id;
    a.send(b"\x03SELECT SLEEP(21)");
    let waited = Instant::now();
    wait_running_on_primary("SELECT SLEEP(21)");
    let mut b = login();
    let r = b.query(&format!("KILL {a_id}"));
    assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
    match a.read_packet() {
        Err(e) => assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::ConnectionReset
            ),
            "{e}"
        ),
        Ok((_, p)) => panic!(
            "the killed session got a packet: {:?}",
            String::from_utf8_lossy(&p)
        ),
    }
    assert!(waited.elapsed() < Duration::from_secs(15));
}

/// Waits until the primary runs the statement `info` (what there is to kill).
fn wait_running_on_primary(info: &str) {
    let primary = &common::topo().primary;
    let t = Instant::now();
    let sql = format!("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO = '{info}'");
    while primary.query_value(&sql).unwrap() == "0" {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "{info} never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `KILL <id>` of a session whose result is streaming, or whose statement the KILL ends with
/// success (`DO SLEEP`): the client gets nothing more of the reply (no ERR 1317, no OK) and
/// the connection closes, as on the server.
#[test]
fn kill_of_a_streaming_or_sleeping_session_sends_nothing_more() {
    let weir = common::weir();
    let victim_id = |c: &RawClient| c.greeting.connection_id;
    // A statement the KILL QUERY ends with OK.
    let (mut a, p) = RawClient::login(weir.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0);
    a.send(b"\x03DO SLEEP(22)");
    wait_running_on_primary("DO SLEEP(22)");
    let mut killer = login();
    let r = killer.query(&format!("KILL {}", victim_id(&a)));
    assert_eq!(r[0][0], 0);
    match a.read_packet() {
        Err(_) => {}
        Ok((_, p)) => panic!("the killed session got {:?}", String::from_utf8_lossy(&p)),
    }
    // A result that is streaming: the rows already on their way, then the close.
    let (mut b, p) = RawClient::login(weir.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    assert_eq!(p[0], 0);
    b.send(b"\x03SELECT seq, REPEAT('x', 20000) FROM seq_1_to_200000");
    for _ in 0..50 {
        b.read_packet().unwrap();
    }
    let r = killer.query(&format!("KILL {}", victim_id(&b)));
    assert_eq!(r[0][0], 0);
    let mut rows = 0u64;
    loop {
        match b.read_packet() {
            Err(_) => break,
            Ok((_, p)) => {
                assert_ne!(
                    p.first(),
                    Some(&0xff),
                    "an error after the KILL: {:?}",
                    String::from_utf8_lossy(&p)
                );
                rows += 1;
                assert!(rows < 200_000, "the result ran to its end");
            }
        }
    }
}

#[test]
fn deprecate_eof_clients_get_ok_terminated_results() {
    let (mut c, p) = RawClient::login_caps(
        common::weir().port,
        WEIR_USER,
        WEIR_PASS,
        None,
        weir_wire::cap::DEPRECATE_EOF,
    );
    assert_eq!(p[0], 0);
    // Column count, 2 definitions, 2 rows, then an OK with header 0xFE: no EOF after definitions.
    let mut q = vec![0x03];
    q.extend_from_slice(b"SELECT 1 AS a, 'x' AS b UNION ALL SELECT 2, 'y'");
    c.send(&q);
    let mut packets = Vec::new();
    loop {
        let (_, p) = c.read_packet().unwrap();
        let end = p[0] == 0xfe && p.len() < 0xff_ffff;
        packets.push(p);
        if end {
            break;
        }
    }
    assert_eq!(packets.len(), 6, "{packets:?}");
    assert_eq!(packets[0], vec![2]);
    assert_ne!(packets[3][0], 0xfe, "no EOF after the definitions");
    let ok = weir_wire::msg::OkInfo::parse(&packets[5]).unwrap();
    assert_eq!(ok.status & weir_wire::status::MORE_RESULTS_EXISTS, 0);
    // The same connection keeps working, and sequence ids stay consistent.
    let r = c.command(&[0x0e], Expect::Status);
    assert_eq!(r[0][0], 0);
}

/// COM_STMT_EXECUTE of `stmt` with `params` LONG_BLOB parameters, no NULL, types bound: their
/// values come from COM_STMT_SEND_LONG_DATA.
fn blob_execute(stmt: &[u8; 4], params: usize) -> Vec<u8> {
    let mut exec = vec![0x17];
    exec.extend_from_slice(stmt);
    exec.push(0);
    exec.extend_from_slice(&1u32.to_le_bytes());
    exec.extend(std::iter::repeat_n(0, params.div_ceil(8))); // null bitmap
    exec.push(1); // new params bound
    for _ in 0..params {
        exec.extend_from_slice(&[0xfb, 0]); // LONG_BLOB
    }
    exec
}

/// Long data is buffered up to mysql-max_allowed_packet per session: past it the executions
/// fail with the server's error for long data over max_allowed_packet (1105) until the
/// statement is reset, instead of weir holding (and forwarding) any amount.
#[test]
fn long_data_over_max_allowed_packet_is_refused() {
    let w = common::start_weir("max_allowed_packet = 65536");
    let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, Some("weirtest"));
    c.query("CREATE TABLE IF NOT EXISTS weirtest.ps_big (id INT PRIMARY KEY, b LONGBLOB)");
    c.query("DELETE FROM weirtest.ps_big");
    let mut p = vec![0x16];
    p.extend_from_slice(b"INSERT INTO weirtest.ps_big VALUES (1, ?)");
    let r = c.command(&p, Expect::Prepare);
    assert_eq!(r[0][0], 0, "{r:?}");
    let stmt = [r[0][1], r[0][2], r[0][3], r[0][4]];
    let long_data = |c: &mut RawClient, stmt: &[u8; 4], chunks: usize| {
        for _ in 0..chunks {
            let mut p = vec![0x18];
            p.extend_from_slice(stmt);
            p.extend_from_slice(&[0, 0]);
            p.extend_from_slice(&[b'x'; 30_000]);
            c.send(&p);
        }
    };
    let exec = blob_execute(&stmt, 1);
    let reset = |c: &mut RawClient, stmt: &[u8; 4]| {
        let r = c.command(&[&[0x1a][..], stmt].concat(), Expect::Status);
        assert_eq!(r[0][0], 0, "{r:?}");
    };
    long_data(&mut c, &stmt, 3);
    // The server's error (1105, HY000: not 08S01, which pools take for a dead connection),
    // and as on the server until the statement is reset.
    for _ in 0..2 {
        let r = c.command(&exec, Expect::ResultSets);
        assert_eq!(
            err_code(&r[0]),
            Some(1105),
            "{:?}",
            String::from_utf8_lossy(&r[0])
        );
        assert_eq!(&r[0][3..9], b"#HY000");
    }
    let r = c.query("SELECT COUNT(*) FROM weirtest.ps_big");
    assert_eq!(&r[3][1..], b"0");
    // Within the limit, after a reset, the same statement runs.
    reset(&mut c, &stmt);
    long_data(&mut c, &stmt, 2);
    let r = c.command(&exec, Expect::ResultSets);
    assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
    let r = c.query("SELECT LENGTH(b) FROM weirtest.ps_big WHERE id = 1");
    assert_eq!(&r[3][1..], b"60000");
    // The limit is per session: what one statement holds counts against another's.
    let mut p2 = vec![0x16];
    p2.extend_from_slice(b"INSERT INTO weirtest.ps_big VALUES (2, ?)");
    let r = c.command(&p2, Expect::Prepare);
    assert_eq!(r[0][0], 0, "{r:?}");
    let stmt2 = [r[0][1], r[0][2], r[0][3], r[0][4]];
    long_data(&mut c, &stmt, 2);
    long_data(&mut c, &stmt2, 2);
    let mut exec2 = exec.clone();
    exec2[1..5].copy_from_slice(&stmt2);
    let r = c.command(&exec2, Expect::ResultSets);
    assert_eq!(
        err_code(&r[0]),
        Some(1105),
        "{:?}",
        String::from_utf8_lossy(&r[0])
    );
    c.query("DELETE FROM weirtest.ps_big");
    let r = c.command(&exec, Expect::ResultSets);
    assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
}

/// Long data sent in many small chunks is kept whole (in one buffer per statement; the
/// session's total is not recounted at every chunk, which made 400,000 chunks take 20 s).
#[test]
fn long_data_in_many_small_chunks() {
    let mut c = login();
    let r = c.command(
        b"\x16SELECT CAST(LENGTH(?) AS CHAR), MD5(?)",
        Expect::Prepare,
    );
    assert_eq!(r[0][0], 0, "{r:?}");
    let stmt = [r[0][1], r[0][2], r[0][3], r[0][4]];
    let chunks = 200_000u32;
    let mut raw = Vec::new();
    for i in 0..chunks {
        let param = u8::try_from(i % 2).unwrap();
        let payload = [&[0x18][..], &stmt, &[param, 0], &[b'a' + (i % 26) as u8]].concat();
        raw.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_le_bytes()[..3]);
        raw.push(0);
        raw.extend_from_slice(&payload);
    }
    c.send_raw(&raw);
    let r = c.command(&blob_execute(&stmt, 2), Expect::ResultSets);
    let row = common::raw::binary_first_row(&r);
    let expected: String = (0..chunks)
        .filter(|i| i % 2 == 1)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    assert_eq!(row[0].as_deref(), Some("100000"), "{row:?}");
    let md5 = c.query(&format!("SELECT MD5('{expected}')"));
    assert_eq!(
        row[1].as_deref(),
        common::raw::text_first_row(&md5)[0].as_deref()
    );
}

/// The OKs weir makes itself (COM_PING, COM_INIT_DB) carry the session's sql_mode flags, as the
/// server's do: a client that sees no NO_BACKSLASH_ESCAPES would escape quotes with
/// backslashes, which that mode takes literally (SQL injection).
#[test]
fn weirs_own_oks_carry_the_sql_mode_flags() {
    let mut c = login();
    let status = |ok: &[u8]| {
        assert_eq!(ok[0], 0, "{ok:?}");
        // header, affected rows (1 byte), last insert id (1 byte), then the status.
        u16::from_le_bytes([ok[3], ok[4]])
    };
    let r = c.query("SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES,ANSI_QUOTES'");
    assert_eq!(status(&r[0]) & 0x8200, 0x8200, "{r:?}");
    let r = c.command(&[0x0e], Expect::Status); // COM_PING
    assert_eq!(status(&r[0]) & 0x8200, 0x8200, "COM_PING: {r:?}");
    let mut p = vec![0x02];
    p.extend_from_slice(b"weirtest");
    let r = c.command(&p, Expect::Status); // COM_INIT_DB
    assert_eq!(status(&r[0]) & 0x8200, 0x8200, "COM_INIT_DB: {r:?}");
    c.query("SET SESSION sql_mode = DEFAULT");
    let r = c.command(&[0x0e], Expect::Status);
    assert_eq!(status(&r[0]) & 0x8200, 0, "{r:?}");
    // A mode for one statement only changes nothing for the session.
    c.query("SET STATEMENT sql_mode = 'NO_BACKSLASH_ESCAPES' FOR SELECT 1");
    let r = c.command(&[0x0e], Expect::Status);
    assert_eq!(status(&r[0]) & 0x8200, 0, "after SET STATEMENT: {r:?}");
    let r = c.query("SELECT @@sql_mode LIKE '%NO_BACKSLASH%'");
    assert_eq!(&r[r.len() - 2][1..], b"0", "{r:?}");
    // In a read-only transaction, the transaction flags of weir's OKs are the server's.
    let r = c.query("START TRANSACTION READ ONLY");
    let in_trans = status(&r[0]) & 0x2001;
    assert_eq!(in_trans, 0x2001, "IN_TRANS | IN_TRANS_READONLY: {r:?}");
    let r = c.command(&p, Expect::Status); // COM_INIT_DB
    assert_eq!(status(&r[0]) & 0x2003, 0x2003, "COM_INIT_DB: {r:?}");
    c.query("COMMIT");
    let r = c.command(&[0x0e], Expect::Status);
    assert_eq!(status(&r[0]) & 0x2001, 0, "after COMMIT: {r:?}");
}

/// A client asking for the compressed protocol, which weir does not offer, is refused at
/// login instead of both sides waiting for packets the other cannot read.
#[test]
fn compression_asked_but_not_offered_is_refused() {
    let (_c, p) = RawClient::login_caps(
        common::weir().port,
        WEIR_USER,
        WEIR_PASS,
        None,
        weir_wire::cap::COMPRESS,
    );
    assert_eq!(
        err_code(&p),
        Some(1043),
        "{:?}",
        String::from_utf8_lossy(&p)
    );
    assert!(String::from_utf8_lossy(&p).contains("compressed protocol"));
}

/// With mysql-server_version empty (the default) clients see the backends' version, so that
/// drivers pick what the real server supports; a configured value wins.
#[test]
fn the_greeting_announces_the_backends_version() {
    let w = common::start_weir("");
    // weir reads a backend's greeting at start: the very first client sees its version.
    let v = RawClient::connect_only(w.port).greeting.server_version;
    assert!(v.contains("MariaDB"), "{v}");
    // Once a backend connection exists, the version is the server's own.
    let (mut c, p) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(p[0], 0);
    c.query("SELECT 1");
    let v = RawClient::connect_only(w.port).greeting.server_version;
    assert!(v.contains("MariaDB"), "{v}");
    let w = common::start_weir("server_version = \"8.0.99-configured\"");
    let (mut c, _) = RawClient::login(w.port, WEIR_USER, WEIR_PASS, None);
    c.query("SELECT 1");
    let v = RawClient::connect_only(w.port).greeting.server_version;
    assert_eq!(v, "8.0.99-configured");
}

/// CLIENT_SESSION_TRACK: a client that asks for it gets the server's session state changes
/// (drivers such as mysql2 follow the character set through them) on connections opened with
/// the same flag, so the OK's info is in the format it expects.
#[test]
fn session_tracking_reaches_clients_that_ask_for_it() {
    let (mut c, p) = RawClient::login_caps(
        common::weir().port,
        WEIR_USER,
        WEIR_PASS,
        Some("weirtest"),
        weir_wire::cap::SESSION_TRACK,
    );
    assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
    assert_ne!(c.greeting.capabilities & weir_wire::cap::SESSION_TRACK, 0);
    let r = c.query("SET NAMES latin1");
    let ok = &r[0];
    assert_eq!(ok[0], 0, "{ok:?}");
    let status = u16::from_le_bytes([ok[3], ok[4]]);
    assert_ne!(status & 0x4000, 0, "SESSION_STATE_CHANGED: {ok:?}");
    assert!(
        ok.windows(6).any(|w| w == b"latin1"),
        "the change is in the OK: {:?}",
        String::from_utf8_lossy(ok)
    );
    c.query("SET NAMES utf8mb4");
    c.query("CREATE TABLE IF NOT EXISTS weirtest.st_t (id INT PRIMARY KEY, v INT)");
    c.query("REPLACE INTO weirtest.st_t VALUES (1, 1)");
    let r = c.query("UPDATE weirtest.st_t SET v = v + 1 WHERE id = 1");
    let ok = &r[0];
    // header, affected rows, insert id, status (2), warnings (2), then info as lenenc.
    let info = &ok[7..];
    assert_eq!(
        usize::from(info[0]),
        info.len() - 1,
        "{:?}",
        String::from_utf8_lossy(ok)
    );
    assert!(
        info[1..].starts_with(b"Rows matched: 1"),
        "{:?}",
        String::from_utf8_lossy(info)
    );
}

/// COM_PROCESS_KILL of one's own session: MariaDB's answer, 1927, then the connection ends.
#[test]
fn killing_ones_own_session_is_1927() {
    let mut c = login();
    let mut p = vec![0x0c];
    p.extend_from_slice(&c.greeting.connection_id.to_le_bytes());
    let r = c.command(&p, Expect::Status);
    assert_eq!(
        err_code(&r[0]),
        Some(1927),
        "{:?}",
        String::from_utf8_lossy(&r[0])
    );
    assert!(c.is_closed());
}

/// A handshake response that is not packet 1 (the greeting was packet 0) is refused as the
/// server does: ERROR 1156 "Got packets out of order", and the connection is closed.
#[test]
fn a_handshake_response_out_of_sequence_is_refused() {
    use std::io::Write;
    let w = common::weir();
    let mut c = RawClient::connect_only(w.port);
    let resp = weir_wire::handshake::HandshakeResponse {
        capabilities: weir_wire::cap::PROTOCOL_41
            | weir_wire::cap::SECURE_CONNECTION
            | weir_wire::cap::PLUGIN_AUTH
            | weir_wire::cap::LONG_PASSWORD,
        max_packet: 1 << 24,
        collation: 45,
        username: WEIR_USER.into(),
        auth_response: vec![],
        database: None,
        auth_plugin: Some("mysql_native_password".into()),
        attributes: vec![],
        mariadb_capabilities: 0,
    };
    let mut out = bytes::BytesMut::new();
    resp.write(&mut out, 3);
    c.stream.write_all(&out).unwrap();
    let (_, p) = c.read_packet().unwrap();
    assert_eq!(
        err_code(&p),
        Some(1156),
        "{:?}",
        String::from_utf8_lossy(&p)
    );
    assert!(c.is_closed());
}

/// A schema asked for at login is checked as the server checks it: an unknown one fails the
/// login itself with the server's ERROR 1049 (in place of the handshake's OK), as a direct
/// connection does, not the client's first statement. A schema that exists logs in, also the
/// second time (when the first login's check is trusted).
#[test]
fn an_unknown_schema_fails_the_login_as_on_the_server() {
    let direct = common::topo().primary.port;
    for port in [direct, common::weir().port] {
        let (_, first) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weir_login_nosuch"));
        assert_eq!(err_code(&first), Some(1049), "port {port}: {first:?}");
        assert!(
            String::from_utf8_lossy(&first).contains("weir_login_nosuch"),
            "{first:?}"
        );
    }
    let (mut setup, ok) = RawClient::login(direct, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0);
    let r = setup.query("CREATE DATABASE IF NOT EXISTS weir_login_later");
    assert_eq!(r[0][0], 0, "{r:?}");
    for _ in 0..2 {
        let (mut c, ok) = RawClient::login(
            common::weir().port,
            WEIR_USER,
            WEIR_PASS,
            Some("weir_login_later"),
        );
        assert_eq!(ok[0], 0, "{ok:?}");
        let r = c.query("SELECT DATABASE()");
        assert_eq!(&r[3][1..], b"weir_login_later");
    }
    let r = setup.query("DROP DATABASE weir_login_later");
    assert_eq!(r[0][0], 0, "{r:?}");
}

/// MariaDB's statement id 0xFFFFFFFF names the statement prepared last (the MariaDB
/// connectors send COM_STMT_PREPARE and COM_STMT_EXECUTE back to back with it): executed,
/// reset and closed as that statement, and unknown after a failed prepare or once closed,
/// as on the server.
#[test]
fn statement_id_minus_one_is_the_last_prepared() {
    let last = u32::MAX.to_le_bytes();
    let execute = |v: u8| {
        let mut p = vec![0x17];
        p.extend_from_slice(&last);
        p.push(0);
        p.extend_from_slice(&1u32.to_le_bytes());
        p.extend_from_slice(&[0, 1, 0x01, 0, v]); // null bitmap, bound, TINY, value
        p
    };
    let prepare = |sql: &str| {
        let mut p = vec![0x16];
        p.extend_from_slice(sql.as_bytes());
        p
    };
    let run = |port: u16| -> Vec<String> {
        let (mut c, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(ok[0], 0);
        let mut seen = Vec::new();
        let outcome = |r: Vec<Vec<u8>>| match err_code(&r[0]) {
            Some(code) => format!("ERR {code}"),
            None => format!(
                "{} packets, last row {:?}",
                r.len(),
                r.get(r.len().saturating_sub(2))
            ),
        };
        let r = c.command(&prepare("SELECT ? + 1 AS a"), Expect::Prepare);
        assert_eq!(r[0][0], 0, "{r:?}");
        seen.push(outcome(c.command(&execute(41), Expect::ResultSets)));
        // Back to back, before reading the prepare's reply.
        c.send(&prepare("SELECT ? * 2 AS b"));
        let mut e = execute(21);
        // Each command starts its own sequence: send EXECUTE as a new packet 0.
        let mut raw = (e.len() as u32).to_le_bytes()[..3].to_vec();
        raw.push(0);
        raw.append(&mut e);
        c.send_raw(&raw);
        let r = c.read_reply(Expect::Prepare);
        assert_eq!(r[0][0], 0, "{r:?}");
        seen.push(outcome(c.read_reply(Expect::ResultSets)));
        // COM_STMT_RESET names it too; then closed, it is unknown.
        let mut reset = vec![0x1a];
        reset.extend_from_slice(&last);
        seen.push(outcome(c.command(&reset, Expect::Status)));
        let mut close = vec![0x19];
        close.extend_from_slice(&last);
        c.send(&close);
        seen.push(outcome(c.command(&execute(1), Expect::ResultSets)));
        // A failed prepare leaves no last statement.
        let r = c.command(&prepare("SELECT ? + 1 AS a"), Expect::Prepare);
        assert_eq!(r[0][0], 0, "{r:?}");
        let r = c.command(&prepare("SELEC broken"), Expect::Prepare);
        assert_eq!(err_code(&r[0]), Some(1064), "{r:?}");
        seen.push(outcome(c.command(&execute(1), Expect::ResultSets)));
        let r = c.query("SELECT 5");
        seen.push(String::from_utf8_lossy(&r[3][1..]).into_owned());
        seen
    };
    let direct = run(common::topo().primary.port);
    assert_eq!(
        run(common::weir().port),
        direct,
        "through weir, then directly"
    );
    assert!(direct[0].contains("packets"), "{direct:?}");
}

/// Logs in to `port`, then changes to the same user with schema weirtest and `collation`, as
/// libmariadb does: auth data computed against the greeting's scramble and, if an auth switch
/// comes, the same bytes again. Returns the client once the change succeeded.
fn change_user_native(port: u16, collation: u16) -> RawClient {
    use weir_wire::auth::{native_scramble_from_stage1, native_stage1};
    let (mut c, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0);
    let proof =
        native_scramble_from_stage1(&c.greeting.scramble, &native_stage1(WEIR_PASS.as_bytes()));
    let mut p = vec![0x11];
    p.extend_from_slice(WEIR_USER.as_bytes());
    p.push(0);
    p.push(proof.len() as u8);
    p.extend_from_slice(&proof);
    p.extend_from_slice(b"weirtest\0");
    p.extend_from_slice(&collation.to_le_bytes());
    p.extend_from_slice(b"mysql_native_password\0");
    c.send(&p);
    let (seq, reply) = c.read_packet().unwrap();
    let reply = if reply[0] == 0xfe {
        // libmariadb answers an auth switch with what it computed already.
        let mut raw = (proof.len() as u32).to_le_bytes()[..3].to_vec();
        raw.push(seq.wrapping_add(1));
        raw.extend_from_slice(&proof);
        c.send_raw(&raw);
        c.read_packet().unwrap().1
    } else {
        reply
    };
    assert_eq!(
        reply[0],
        0,
        "port {port}: {:?}",
        String::from_utf8_lossy(&reply)
    );
    c
}

/// COM_CHANGE_USER as libmariadb sends it (see `change_user_native`): accepted as on the
/// server (weir used to switch to a new scramble, which such clients cannot answer: 1045).
#[test]
fn change_user_with_the_greeting_scramble() {
    let run = |port: u16| -> String {
        let mut c = change_user_native(port, 45);
        let r = c.query("SELECT CONCAT(CURRENT_USER(), ' ', DATABASE())");
        String::from_utf8_lossy(&r[3][1..]).into_owned()
    };
    let direct = run(common::topo().primary.port);
    assert!(direct.ends_with(" weirtest"), "{direct}");
    assert_eq!(run(common::weir().port), direct);
}

/// COM_CHANGE_USER names its collation in two bytes: one past the handshake's byte (608,
/// utf8mb4_croatian_ci) is the session's after the change, as on the server, and stays so on
/// whatever connection serves the next statement. Before, weir fell back to
/// utf8mb4_general_ci.
#[test]
fn change_user_to_a_collation_past_255() {
    let run = |port: u16| -> String {
        let mut c = change_user_native(port, 608);
        let r = c.query(
            "SELECT CONCAT_WS(' ', @@character_set_client, @@collation_connection, \
             @@character_set_results)",
        );
        String::from_utf8_lossy(&r[3][1..]).into_owned()
    };
    let direct = run(common::topo().primary.port);
    assert!(direct.contains("utf8mb4_croatian_ci"), "{direct}");
    assert_eq!(run(common::weir().port), direct);
}

/// A refused COM_CHANGE_USER leaves the session in the server's default character set, as
/// the server does: not the one the client logged in or switched to, nor the one the packet
/// names.
#[test]
fn a_refused_change_user_leaves_the_default_character_set() {
    let run = |port: u16| -> String {
        // Logged in as utf8mb3_general_ci: neither the server's default nor the change's.
        let (mut c, ok) = RawClient::login_collation(port, WEIR_USER, WEIR_PASS, None, 0, 33);
        assert_eq!(ok[0], 0);
        c.query("SET NAMES utf8mb4 COLLATE utf8mb4_bin");
        let mut p = vec![0x11];
        p.extend_from_slice(WEIR_USER.as_bytes());
        p.push(0);
        p.push(20);
        p.extend_from_slice(&[7u8; 20]);
        p.push(0);
        // latin1_swedish_ci
        p.extend_from_slice(&8u16.to_le_bytes());
        p.extend_from_slice(b"mysql_native_password\0");
        c.send(&p);
        let (seq, reply) = c.read_packet().unwrap();
        let reply = if reply[0] == 0xfe {
            let mut raw = 20u32.to_le_bytes()[..3].to_vec();
            raw.push(seq.wrapping_add(1));
            raw.extend_from_slice(&[7u8; 20]);
            c.send_raw(&raw);
            c.read_packet().unwrap().1
        } else {
            reply
        };
        assert_eq!(err_code(&reply), Some(1045), "port {port}: {reply:?}");
        let r = c.query("SELECT CONCAT_WS(' ', @@character_set_client, @@collation_connection, @@character_set_results)");
        String::from_utf8_lossy(&r[3][1..]).into_owned()
    };
    let direct = run(common::topo().primary.port);
    assert_eq!(run(common::weir().port), direct);
}

/// (name, extended type info) of each column definition of a reply to a client with MariaDB's
/// extended metadata (`extended`) or without.
fn definitions(reply: &[Vec<u8>], extended: bool) -> Vec<(String, Option<Vec<u8>>)> {
    common::raw::column_defs(reply, extended)
        .into_iter()
        .map(|d| (d.name, d.extended))
        .collect()
}

/// What a MariaDB client that asks for extended metadata, and one that does not, get for
/// columns of MariaDB's own types, by query and by prepared statement.
fn extended_metadata_run(port: u16) -> (u32, Vec<Vec<Vec<u8>>>) {
    let ext = weir_wire::mariadb_cap::EXTENDED_METADATA;
    let login = |mariadb| {
        let (c, p) = RawClient::login_mariadb(
            port,
            WEIR_USER,
            WEIR_PASS,
            Some("weirtest"),
            (0, mariadb),
            45,
        );
        assert_eq!(p[0], 0, "{:?}", String::from_utf8_lossy(&p));
        c
    };
    let mut clients = [login(ext), login(0)];
    let offered = clients[0].greeting.mariadb_capabilities & ext;
    let q = "SELECT j, u, i, n FROM weirtest.extmeta";
    let mut replies = Vec::new();
    for i in [0, 1, 0] {
        let c = &mut clients[i];
        replies.push(c.query(q));
        let mut prepare = vec![0x16];
        prepare.extend_from_slice(q.as_bytes());
        let r = c.command(&prepare, Expect::Prepare);
        assert_eq!(r[0][0], 0, "{:?}", String::from_utf8_lossy(&r[0]));
        let mut execute = vec![0x17];
        execute.extend_from_slice(&r[0][1..5]);
        execute.push(0);
        execute.extend_from_slice(&1u32.to_le_bytes());
        // MariaDB numbers statements server-wide: other tests' prepares move it on.
        let mut r = r;
        r[0][1..5].fill(0);
        replies.push(r);
        replies.push(c.command(&execute, Expect::ResultSets));
    }
    (offered, replies)
}

/// MariaDB's extended metadata (the type of JSON, UUID, INET6 columns, which drivers decode
/// by): weir offers it when its backends do, keeps clients that asked for it on connections
/// that negotiated it, and relays the server's column definitions untouched; the result sets
/// weir builds itself carry the field too, as the server's do.
#[test]
fn mariadb_extended_metadata_reaches_the_clients_that_ask() {
    let primary = &common::topo().primary;
    primary
        .query_rows(
            "CREATE TABLE IF NOT EXISTS weirtest.extmeta (j JSON, u UUID, i INET6, n INT); \
             DELETE FROM weirtest.extmeta; \
             INSERT INTO weirtest.extmeta VALUES ('{\"a\": 1}', UUID(), '::1', 7)",
        )
        .unwrap();
    let (direct_offer, direct) = extended_metadata_run(primary.port);
    assert_eq!(direct_offer, weir_wire::mariadb_cap::EXTENDED_METADATA);
    let exts = definitions(&direct[0], true);
    assert_eq!(
        exts[0].1.as_deref(),
        Some(b"\x01\x04json".as_slice()),
        "{exts:?}"
    );
    let w = common::weir();
    let (offer, through_weir) = extended_metadata_run(w.port);
    assert_eq!(
        offer, direct_offer,
        "weir's greeting offers what the server does"
    );
    assert_eq!(through_weir.len(), direct.len());
    for (i, (got, want)) in through_weir.iter().zip(&direct).enumerate() {
        assert_eq!(got, want, "reply {i}");
    }
    // Replies weir builds itself, in the client's format.
    let (mut c, p) = RawClient::login_mariadb(
        w.port,
        WEIR_USER,
        WEIR_PASS,
        None,
        (0, weir_wire::mariadb_cap::EXTENDED_METADATA),
        45,
    );
    assert_eq!(p[0], 0);
    for q in [
        "SELECT LAST_INSERT_ID()",
        "SHOW WARNINGS",
        "SHOW COUNT(*) WARNINGS",
    ] {
        let defs = definitions(&c.query(q), true);
        assert!(
            defs.iter().all(|(_, ext)| ext.as_deref() == Some(&[][..])),
            "{q}: {defs:?}"
        );
    }
}

/// Every packet `c` receives until nothing comes for a while, with OK/EOF packets reduced to
/// their kind (their status flags may differ between weir and the server).
fn packets_until_quiet(c: &mut RawClient) -> Vec<String> {
    c.stream
        .set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut out = Vec::new();
    while let Ok((_, p)) = c.read_packet() {
        out.push(match p[0] {
            0xfe => "END".to_string(),
            0x00 => "OK".to_string(),
            0xff => format!("ERR {:?}", err_code(&p)),
            _ => p.iter().map(|b| format!("{b:02x}")).collect(),
        });
    }
    c.stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    out
}

/// What a client gets for `CALL p_cursor_select()` (text and prepared, with and without a
/// cursor asked for), with `caps`, on `port`.
fn procedure_with_open_cursor_run(port: u16, caps: u32) -> Vec<Vec<String>> {
    let (mut c, ok) = RawClient::login_caps(port, WEIR_USER, WEIR_PASS, Some("weirtest"), caps);
    assert_eq!(ok[0], 0, "{ok:?}");
    let mut runs = Vec::new();
    c.send(b"\x03CALL p_cursor_select()");
    runs.push(packets_until_quiet(&mut c));
    let r = c.command(b"\x16CALL p_cursor_select()", Expect::Prepare);
    assert_eq!(r[0][0], 0, "{r:?}");
    let stmt = [r[0][1], r[0][2], r[0][3], r[0][4]];
    for flags in [0u8, 1] {
        let mut p = vec![0x17];
        p.extend_from_slice(&stmt);
        p.push(flags);
        p.extend_from_slice(&1u32.to_le_bytes());
        c.send(&p);
        runs.push(packets_until_quiet(&mut c));
    }
    c.send(b"\x03SELECT 5");
    runs.push(packets_until_quiet(&mut c));
    runs
}

/// A stored procedure that sends a result set while one of its own cursors is open: the server
/// flags the result's definitions with SERVER_STATUS_CURSOR_EXISTS, but its rows follow (the
/// cursor is not the client's). Clients get the whole reply, with and without
/// CLIENT_DEPRECATE_EOF, for a CALL as a query and as a prepared statement.
#[test]
fn a_procedures_own_cursor_does_not_cut_its_results() {
    let mut c = login();
    c.query(
        "CREATE OR REPLACE PROCEDURE weirtest.p_cursor_select() BEGIN \
         DECLARE c CURSOR FOR SELECT 1; OPEN c; SELECT 2 AS x; CLOSE c; END",
    );
    for caps in [0, weir_wire::cap::DEPRECATE_EOF] {
        let direct = procedure_with_open_cursor_run(common::topo().primary.port, caps);
        assert!(
            direct[0].iter().any(|p| p == "0132"),
            "the row of SELECT 2: {direct:?}"
        );
        let through_weir = procedure_with_open_cursor_run(common::weir().port, caps);
        assert_eq!(through_weir, direct, "caps {caps:#x}");
    }
}

/// What a client with `caps` gets for a prepared `CALL` with an OUT parameter, on `port`.
fn out_parameters_run(port: u16, caps: u32) -> Vec<String> {
    let (mut c, ok) = RawClient::login_caps(port, WEIR_USER, WEIR_PASS, Some("weirtest"), caps);
    assert_eq!(ok[0], 0, "{ok:?}");
    let r = c.command(b"\x16CALL p_out_params(?, ?)", Expect::Prepare);
    assert_eq!(r[0][0], 0, "{r:?}");
    let mut p = vec![0x17];
    p.extend_from_slice(&r[0][1..5]);
    p.push(0);
    p.extend_from_slice(&1u32.to_le_bytes());
    p.push(0b10); // the OUT parameter is NULL
    p.push(1);
    p.extend_from_slice(&[0x03, 0, 0x03, 0]);
    p.extend_from_slice(&4i32.to_le_bytes());
    c.send(&p);
    packets_until_quiet(&mut c)
}

/// A prepared CALL's OUT parameters come as a result set only to clients that asked for
/// CLIENT_PS_MULTI_RESULTS, as from the server (Go's driver does not ask): the pool keeps
/// connections opened with and without it apart.
#[test]
fn a_prepared_calls_out_parameters_reach_only_clients_that_ask() {
    let mut c = login();
    c.query(
        "CREATE OR REPLACE PROCEDURE weirtest.p_out_params(IN a INT, OUT b INT) \
         BEGIN SET b = a * 10; END",
    );
    let kinds = [weir_wire::cap::PS_MULTI_RESULTS, 0];
    let direct = kinds.map(|caps| out_parameters_run(common::topo().primary.port, caps));
    assert_ne!(
        direct[0], direct[1],
        "the server sends OUT parameters only when asked"
    );
    // Alternately, so that a connection one kind of client left is idle when the other comes.
    for _ in 0..2 {
        for (caps, direct) in kinds.iter().zip(&direct) {
            let through_weir = out_parameters_run(common::weir().port, *caps);
            assert_eq!(&through_weir, direct, "caps {caps:#x}");
        }
    }
}

/// A client keeps at most 16,382 statements prepared (MariaDB's default
/// max_prepared_stmt_count, which the server counts over all sessions): the next prepare gets
/// the server's error 1461, and closing one makes room again.
#[test]
fn a_session_keeps_a_bounded_number_of_prepared_statements() {
    let mut c = login();
    let mut ids = Vec::new();
    for batch in 0..17 {
        let n = if batch < 16 { 1000 } else { 382 };
        for _ in 0..n {
            c.send(b"\x16SELECT CAST(? + 1 AS CHAR)");
        }
        for _ in 0..n {
            let r = c.read_reply(Expect::Prepare);
            assert_eq!(r[0][0], 0, "{r:?}");
            ids.push([r[0][1], r[0][2], r[0][3], r[0][4]]);
        }
    }
    let r = c.command(b"\x16SELECT CAST(? + 1 AS CHAR)", Expect::Prepare);
    assert_eq!(err_code(&r[0]), Some(1461), "{r:?}");
    assert!(String::from_utf8_lossy(&r[0]).contains("max_prepared_stmt_count"));
    c.send(&[&[0x19][..], &ids[0]].concat());
    let r = c.command(b"\x16SELECT CAST(? + 1 AS CHAR)", Expect::Prepare);
    assert_eq!(r[0][0], 0, "{r:?}");
    // The statements kept still run.
    let mut exec = vec![0x17];
    exec.extend_from_slice(&ids[16_000]);
    exec.extend_from_slice(&[0, 1, 0, 0, 0, 0, 1, 0x03, 0]);
    exec.extend_from_slice(&41i32.to_le_bytes());
    let r = c.command(&exec, Expect::ResultSets);
    assert_eq!(
        common::raw::binary_first_row(&r)[0].as_deref(),
        Some("42"),
        "{r:?}"
    );
}

/// The replies whose definitions end the reply (a prepare's parameters and columns, a field
/// list) reach a CLIENT_DEPRECATE_EOF client as the server sends them: no end-of-rows OK where
/// no rows come (MariaDB Connector/J fails on one).
#[test]
fn definitions_that_end_a_reply_are_the_servers_for_deprecate_eof_clients() {
    let run = |port: u16| {
        let (mut c, ok) = RawClient::login_caps(
            port,
            WEIR_USER,
            WEIR_PASS,
            Some("weirtest"),
            weir_wire::cap::DEPRECATE_EOF,
        );
        assert_eq!(ok[0], 0, "{ok:?}");
        let mut seen = Vec::new();
        for sql in ["SELECT ?, 1", "SELECT 1", "DO ?"] {
            c.send(&[b"\x16", sql.as_bytes()].concat());
            seen.push(packets_until_quiet(&mut c));
        }
        c.query("CREATE TABLE IF NOT EXISTS weirtest.fl_deof (a INT, b INT)");
        c.send(b"\x04fl_deof\0");
        seen.push(packets_until_quiet(&mut c));
        seen
    };
    let direct = run(common::topo().primary.port);
    assert_eq!(run(common::weir().port), direct);
}

/// With autocommit off, a statement that fails before touching anything opens no transaction
/// on the server: weir's own OKs after it (COM_PING) say so too, though weir keeps the
/// connection with the session until a reply tells (an ERR carries no status flags).
#[test]
fn a_failed_statement_with_autocommit_off_reports_no_transaction() {
    let run = |port: u16| {
        let (mut c, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(ok[0], 0, "{ok:?}");
        c.query("SET autocommit = 0");
        let r = c.query("SELECT * FROM weirtest.no_such_table_here");
        assert_eq!(err_code(&r[0]), Some(1146), "{r:?}");
        let ping = c.command(&[0x0e], Expect::Status);
        let ok = weir_wire::msg::OkInfo::parse(&ping[0]).unwrap();
        c.query("ROLLBACK");
        ok.status & (weir_wire::status::IN_TRANS | weir_wire::status::AUTOCOMMIT)
    };
    let direct = run(common::topo().primary.port);
    assert_eq!(run(common::weir().port), direct);
}

/// A session whose schema another client dropped can still change schema (`USE`,
/// COM_INIT_DB), as on the server. Before, weir brought the dropped schema to a connection
/// first, and every statement of the session failed with 1049, `USE` included.
#[test]
fn a_session_whose_schema_was_dropped_can_change_schema() {
    let primary = &common::topo().primary;
    for init_db in [false, true] {
        primary
            .exec("CREATE DATABASE IF NOT EXISTS weir_dropped")
            .unwrap();
        let (mut c, ok) = RawClient::login(
            common::weir().port,
            WEIR_USER,
            WEIR_PASS,
            Some("weir_dropped"),
        );
        assert_eq!(ok[0], 0, "{ok:?}");
        primary.exec("DROP DATABASE weir_dropped").unwrap();
        let r = if init_db {
            let mut out = bytes::BytesMut::new();
            weir_wire::packet::write_packet(&mut out, 0, b"\x02weirtest");
            std::io::Write::write_all(&mut c.stream, &out).unwrap();
            c.read_packet().unwrap().1
        } else {
            c.query("USE weirtest").remove(0)
        };
        assert_eq!(r[0], 0, "init_db {init_db}: {r:?}");
        let rows = c.query("SELECT DATABASE()");
        assert!(rows.iter().any(|p| p.ends_with(b"weirtest")), "{rows:?}");
    }
}

/// `SET autocommit = 0` inside a multi-statement query is not followed (the session keeps its
/// connection): the OKs weir makes itself then carry the server's autocommit flag, off, as
/// the server's own do. Before, they said autocommit was on.
#[test]
fn weirs_own_oks_carry_an_untracked_autocommit() {
    for port in [common::weir().port, common::topo().primary.port] {
        let (mut c, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(ok[0], 0, "{ok:?}");
        let r = c.query("SELECT 1; SET autocommit = 0");
        assert_eq!(r.last().map(|p| p[0]), Some(0), "{r:?}");
        let mut out = bytes::BytesMut::new();
        weir_wire::packet::write_packet(&mut out, 0, b"\x02weirtest");
        std::io::Write::write_all(&mut c.stream, &out).unwrap();
        let (_, p) = c.read_packet().unwrap();
        let ok = weir_wire::msg::OkInfo::parse(&p).unwrap();
        assert_eq!(
            ok.status & weir_wire::status::AUTOCOMMIT,
            0,
            "port {port}: {ok:?}"
        );
    }
}

/// What weir answers itself reads as the server's: after a failed COM_INIT_DB, SHOW WARNINGS
/// and @@error_count show its error; after `SET sql_select_limit = 0`, the SELECTs weir
/// answers (LAST_INSERT_ID(), ROW_COUNT(), @@warning_count) return no row.
#[test]
fn weirs_own_answers_follow_diagnostics_and_select_limit() {
    let run = |port: u16| {
        let (mut c, ok) = RawClient::login(port, WEIR_USER, WEIR_PASS, Some("weirtest"));
        assert_eq!(ok[0], 0, "{ok:?}");
        let mut out = bytes::BytesMut::new();
        weir_wire::packet::write_packet(&mut out, 0, b"\x02weir_no_such_db");
        std::io::Write::write_all(&mut c.stream, &out).unwrap();
        let (_, p) = c.read_packet().unwrap();
        let mut shapes = vec![(err_code(&p), 1)];
        for q in [
            "SHOW WARNINGS",
            "SELECT @@error_count",
            "SET sql_select_limit = 0",
            "SELECT LAST_INSERT_ID()",
            "SELECT ROW_COUNT()",
            "SELECT @@warning_count",
        ] {
            let r = c.query(q);
            let text: Vec<u8> = r.concat();
            let has_1049 = text.windows(4).any(|w| w == b"1049");
            shapes.push((err_code(&r[0]), r.len() + usize::from(has_1049) * 100));
        }
        shapes
    };
    let direct = run(common::topo().primary.port);
    assert_eq!(direct[0].0, Some(1049), "{direct:?}");
    assert_eq!(run(common::weir().port), direct);
}

/// A handshake response over the 64 KiB a login may take gets an error, not a reset.
#[test]
fn an_oversized_handshake_response_gets_an_error() {
    let user = "u".repeat(70_000);
    let (_, r) = RawClient::login(common::weir().port, &user, WEIR_PASS, None);
    assert_eq!(err_code(&r), Some(1043), "{:?}", &r[..r.len().min(80)]);
    let (_, ok) = RawClient::login(common::weir().port, WEIR_USER, WEIR_PASS, None);
    assert_eq!(ok[0], 0, "weir still serves other clients");
}
