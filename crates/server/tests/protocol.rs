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
