//! A minimal client speaking the protocol by hand with weir's own wire crate, for commands and
//! malformed input that driver libraries do not let a test send.
#![allow(dead_code, clippy::unwrap_used)]

use bytes::BytesMut;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;
use weir_wire::auth::{native_scramble_from_stage1, native_stage1};
use weir_wire::cap;
use weir_wire::handshake::{Greeting, HandshakeResponse};
use weir_wire::packet::{take_logical_packet, write_packet, Framed};
use weir_wire::reply::{Expect, ReplyTracker, CLASSIFY_BYTES};

pub struct RawClient {
    pub stream: TcpStream,
    buf: BytesMut,
    pub greeting: Greeting,
}

impl RawClient {
    pub fn connect_only(port: u16) -> RawClient {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let mut c = RawClient {
            stream,
            buf: BytesMut::new(),
            greeting: Greeting {
                server_version: String::new(),
                connection_id: 0,
                scramble: vec![],
                capabilities: 0,
                mariadb_capabilities: 0,
                collation: 0,
                status: 0,
                auth_plugin: String::new(),
            },
        };
        let (_, g) = c.read_packet().unwrap();
        c.greeting = Greeting::parse(&g).unwrap();
        c
    }

    /// Connects and logs in with mysql_native_password; returns the first packet after the
    /// handshake response (OK or ERR payload) alongside the client.
    pub fn login(port: u16, user: &str, pass: &str, db: Option<&str>) -> (RawClient, Vec<u8>) {
        Self::login_caps(port, user, pass, db, 0)
    }

    /// As [`RawClient::login`], asking for extra capability flags.
    pub fn login_caps(
        port: u16,
        user: &str,
        pass: &str,
        db: Option<&str>,
        extra: u32,
    ) -> (RawClient, Vec<u8>) {
        Self::login_collation(port, user, pass, db, extra, 45)
    }

    /// As [`RawClient::login_caps`], with the given handshake collation id.
    pub fn login_collation(
        port: u16,
        user: &str,
        pass: &str,
        db: Option<&str>,
        extra: u32,
        collation: u8,
    ) -> (RawClient, Vec<u8>) {
        Self::login_mariadb(port, user, pass, db, (extra, 0), collation)
    }

    /// As [`RawClient::login_collation`], asking for MariaDB extended capabilities too (then
    /// as a MariaDB client: without CLIENT_MYSQL, when the greeting offers them).
    pub fn login_mariadb(
        port: u16,
        user: &str,
        pass: &str,
        db: Option<&str>,
        (extra, mariadb_capabilities): (u32, u32),
        collation: u8,
    ) -> (RawClient, Vec<u8>) {
        Self::login_without(
            port,
            user,
            pass,
            db,
            (extra, mariadb_capabilities),
            0,
            collation,
        )
    }

    /// As [`RawClient::login_mariadb`], without the capabilities `removed` of those a raw
    /// client asks for by default (MULTI_STATEMENTS, MULTI_RESULTS, ...).
    pub fn login_without(
        port: u16,
        user: &str,
        pass: &str,
        db: Option<&str>,
        (extra, mariadb_capabilities): (u32, u32),
        removed: u32,
        collation: u8,
    ) -> (RawClient, Vec<u8>) {
        let mut c = Self::connect_only(port);
        let proof =
            native_scramble_from_stage1(&c.greeting.scramble, &native_stage1(pass.as_bytes()));
        let mut caps = cap::PROTOCOL_41
            | cap::SECURE_CONNECTION
            | cap::PLUGIN_AUTH
            | cap::LONG_PASSWORD
            | cap::TRANSACTIONS
            | cap::MULTI_RESULTS
            | cap::MULTI_STATEMENTS
            | extra;
        if db.is_some() {
            caps |= cap::CONNECT_WITH_DB;
        }
        caps &= !removed;
        let mariadb_capabilities = mariadb_capabilities & c.greeting.mariadb_capabilities;
        if c.greeting.capabilities & cap::LONG_PASSWORD == 0 && mariadb_capabilities != 0 {
            caps &= !cap::LONG_PASSWORD;
        }
        let resp = HandshakeResponse {
            capabilities: caps,
            max_packet: 1 << 24,
            collation,
            username: user.into(),
            auth_response: proof.to_vec(),
            database: db.map(str::to_string),
            auth_plugin: Some("mysql_native_password".into()),
            attributes: vec![],
            mariadb_capabilities,
        };
        let mut out = BytesMut::new();
        resp.write(&mut out, 1);
        c.stream.write_all(&out).unwrap();
        let (_, p) = c.read_packet().unwrap();
        (c, p)
    }

    pub fn read_packet(&mut self) -> std::io::Result<(u8, Vec<u8>)> {
        loop {
            if let Ok(Framed::Packet {
                raw, seq, frames, ..
            }) = take_logical_packet(&mut self.buf, usize::MAX)
            {
                return Ok((
                    seq,
                    weir_wire::packet::payload_of(&raw, frames).into_owned(),
                ));
            }
            let mut tmp = [0u8; 65536];
            let n = self.stream.read(&mut tmp)?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "closed",
                ));
            }
            self.buf.extend_from_slice(&tmp[..n]);
        }
    }

    pub fn send(&mut self, payload: &[u8]) {
        let mut out = BytesMut::new();
        write_packet(&mut out, 0, payload);
        self.stream.write_all(&out).unwrap();
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
    }

    /// Sends a command and reads its whole reply (classic EOF form).
    pub fn command(&mut self, payload: &[u8], expect: Expect) -> Vec<Vec<u8>> {
        self.send(payload);
        self.read_reply(expect)
    }

    pub fn read_reply(&mut self, expect: Expect) -> Vec<Vec<u8>> {
        let mut t = ReplyTracker::new(expect);
        let mut out = Vec::new();
        while !t.is_done() {
            let (_, p) = self.read_packet().unwrap();
            t.feed(p.len(), &p[..p.len().min(CLASSIFY_BYTES)]).unwrap();
            out.push(p);
        }
        out
    }

    pub fn query(&mut self, sql: &str) -> Vec<Vec<u8>> {
        let mut p = vec![0x03];
        p.extend_from_slice(sql.as_bytes());
        self.command(&p, Expect::ResultSets)
    }

    /// Whether the connection is closed by the other side within `wait`: EOF or a reset
    /// (not a read timeout, nor a packet).
    pub fn closed_within(&mut self, wait: std::time::Duration) -> bool {
        self.stream.set_read_timeout(Some(wait)).unwrap();
        let mut tmp = [0u8; 64];
        let r = self.stream.read(&mut tmp);
        self.stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        match r {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    }

    /// Whether the server closed the connection (reads EOF within the timeout).
    pub fn is_closed(&mut self) -> bool {
        let mut tmp = [0u8; 64];
        matches!(self.stream.read(&mut tmp), Ok(0) | Err(_))
    }
}

pub fn err_code(p: &[u8]) -> Option<u16> {
    (p.first() == Some(&0xff)).then(|| u16::from_le_bytes([p[1], p[2]]))
}

/// Logs `n` clients in to `port` (schema weirtest), has each run a short statement at the
/// same time and returns them: the pool then holds `n` idle connections, so that a test's
/// first statement gets one at once.
pub fn warm_pool(port: u16, n: usize) -> Vec<RawClient> {
    let mut warm: Vec<RawClient> = (0..n)
        .map(|_| {
            let (c, ok) = RawClient::login(
                port,
                weir_testkit::WEIR_USER,
                weir_testkit::WEIR_PASS,
                Some("weirtest"),
            );
            assert_eq!(ok.first(), Some(&0), "login: {ok:?}");
            c
        })
        .collect();
    for c in &mut warm {
        c.send(b"\x03SELECT SLEEP(0.2)");
    }
    for c in &mut warm {
        c.read_reply(Expect::ResultSets);
    }
    warm
}

/// One column definition of a reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: String,
    pub charset: u16,
    pub flags: u16,
    /// MariaDB's extended type info, when read as sent to a client with extended metadata.
    pub extended: Option<Vec<u8>>,
}

/// The column definitions of a reply read by [`RawClient`]: a result set (column count first)
/// or a prepare's reply (its columns after its parameters). `extended`: the definitions carry
/// MariaDB's extended type info. Panics on a definition that does not parse whole in that
/// format (the client would misread it).
pub fn column_defs(reply: &[Vec<u8>], extended: bool) -> Vec<ColumnDef> {
    use weir_wire::io::Reader;
    let (first, count) = match reply[0][0] {
        0 => {
            let columns = u16::from_le_bytes([reply[0][5], reply[0][6]]) as usize;
            let params = u16::from_le_bytes([reply[0][7], reply[0][8]]) as usize;
            // Parameter definitions and their EOF come first.
            (1 + params + usize::from(params > 0), columns)
        }
        _ => (1, Reader::new(&reply[0]).lenenc("count").unwrap() as usize),
    };
    reply[first..first + count]
        .iter()
        .map(|def| {
            let mut r = Reader::new(def);
            for what in ["catalog", "schema", "table", "org_table"] {
                r.lenenc_bytes(what).unwrap();
            }
            let name = String::from_utf8_lossy(r.lenenc_bytes("name").unwrap()).into_owned();
            r.lenenc_bytes("org_name").unwrap();
            let extended = extended.then(|| r.lenenc_bytes("extended").unwrap().to_vec());
            assert_eq!(r.u8("fixed").unwrap(), 0x0c, "{name}: {def:?}");
            let charset = r.u16("charset").unwrap();
            r.take(5, "length, type").unwrap();
            let flags = r.u16("flags").unwrap();
            r.take(3, "decimals, filler").unwrap();
            assert!(r.is_empty(), "{name}: trailing bytes in {def:?}");
            ColumnDef {
                name,
                charset,
                flags,
                extended,
            }
        })
        .collect()
}

/// The first row packet of a result set and its column count.
fn first_row(reply: &[Vec<u8>]) -> (&[u8], usize) {
    let count = weir_wire::io::Reader::new(&reply[0])
        .lenenc("count")
        .unwrap() as usize;
    let is_eof = |p: &&Vec<u8>| p.first() == Some(&0xfe) && p.len() < 9;
    let row = reply[1 + count..].iter().find(|p| !is_eof(p)).unwrap();
    (row, count)
}

/// The first row of a text result set (None for NULL).
pub fn text_first_row(reply: &[Vec<u8>]) -> Vec<Option<String>> {
    let (row, count) = first_row(reply);
    let mut r = weir_wire::io::Reader::new(row);
    (0..count)
        .map(|_| {
            if r.remaining().first() == Some(&0xfb) {
                r.take(1, "NULL").unwrap();
                return None;
            }
            let v = r.lenenc_bytes("value").unwrap();
            Some(String::from_utf8_lossy(v).into_owned())
        })
        .collect()
}

/// The first row of a binary-protocol result set whose columns are all strings.
pub fn binary_first_row(reply: &[Vec<u8>]) -> Vec<Option<String>> {
    let (row, count) = first_row(reply);
    let mut r = weir_wire::io::Reader::new(row);
    r.take(1, "header").unwrap();
    let nulls = r.take((count + 9) / 8, "nulls").unwrap().to_vec();
    (0..count)
        .map(|i| {
            let bit = i + 2;
            if nulls[bit / 8] & (1 << (bit % 8)) != 0 {
                return None;
            }
            let v = r.lenenc_bytes("value").unwrap();
            Some(String::from_utf8_lossy(v).into_owned())
        })
        .collect()
}
