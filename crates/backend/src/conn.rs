//! A backend connection: connect, authenticate, run simple commands, and expose the raw stream
//! and read buffer to the session relay.

use crate::auth::Exchange;
use crate::net::Stream;
use crate::stmts::StmtCache;
use crate::BackendError;
use bytes::BytesMut;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use weir_wire::handshake::{parse_auth_switch, Greeting, HandshakeResponse};
use weir_wire::msg::{ErrInfo, OkInfo};
use weir_wire::packet::{take_logical_packet, write_packet, Framed};
use weir_wire::reply::{Expect, ReplyTracker, Role, CLASSIFY_BYTES};
use weir_wire::{cap, com, PacketHeader};

/// Capabilities weir always asks of backends. CLIENT_DEPRECATE_EOF is deliberately absent:
/// the reply tracker reads classic EOFs and the session translates per client.
pub const BACKEND_BASE_CAPS: u32 = cap::LONG_PASSWORD
    | cap::LONG_FLAG
    | cap::PROTOCOL_41
    | cap::TRANSACTIONS
    | cap::SECURE_CONNECTION
    | cap::PLUGIN_AUTH
    | cap::PLUGIN_AUTH_LENENC_CLIENT_DATA
    | cap::CONNECT_ATTRS;

/// Client capabilities that change what the server does, so a pooled connection may only serve
/// clients that negotiated the same ones, except those in [`crate::adapted_caps`].
/// CLIENT_PS_MULTI_RESULTS is one on MariaDB too: without it, a prepared CALL's OUT
/// parameters are not sent (the Go driver never asks for it).
pub const CORRECTNESS_CAPS: u32 = cap::FOUND_ROWS
    | cap::LOCAL_FILES
    | cap::MULTI_RESULTS
    | cap::PS_MULTI_RESULTS
    // The server's OKs then carry session state changes (drivers such as mysql2 follow the
    // character set through them) and their info in the format the client expects.
    | cap::SESSION_TRACK;

/// Client capabilities a connection is opened with for the client that needs it, but which
/// do not keep it from serving others: CLIENT_IGNORE_SPACE only adds IGNORE_SPACE to the
/// session's sql_mode, which a statement can change ([`BackendConn::ignore_space`]), and
/// COM_SET_OPTION turns CLIENT_MULTI_STATEMENTS on and off ([`BackendConn::multi_statements`]).
pub const SESSION_CAPS: u32 = cap::IGNORE_SPACE | cap::MULTI_STATEMENTS;

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// Host name or IP, and port.
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
    /// Unix socket path.
    Unix(PathBuf),
}

impl Endpoint {
    /// A hostname starting with '/' is a Unix socket path, as in ProxySQL.
    pub fn new(hostname: &str, port: u16) -> Endpoint {
        if hostname.starts_with('/') {
            Endpoint::Unix(PathBuf::from(hostname))
        } else {
            Endpoint::Tcp {
                host: hostname.to_string(),
                port,
            }
        }
    }
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Tcp { host, port } => write!(f, "{host}:{port}"),
            Endpoint::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The secret weir logs in to backends with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// Clear-text password: every plugin works.
    Clear(String),
    /// `SHA1(password)`, learned from a client's mysql_native_password login.
    NativeStage1([u8; 20]),
}

/// Everything needed to open one backend connection.
#[derive(Debug, Clone)]
pub struct ConnectParams {
    /// Server address.
    pub endpoint: Endpoint,
    /// User to log in as.
    pub username: String,
    /// Its secret.
    pub credential: Credential,
    /// Initial schema.
    pub schema: Option<String>,
    /// Collation id sent in the handshake.
    pub collation: u8,
    /// Client capabilities from [`CORRECTNESS_CAPS`] to ask for, on top of the base set; also
    /// CLIENT_DEPRECATE_EOF, only for a connection whose replies weir never reads itself (a
    /// fast_forward client's: [`BackendConn::command`] expects classic EOFs).
    pub capabilities: u32,
    /// MariaDB extended capabilities to ask for (`weir_wire::mariadb_cap`): the connect fails
    /// when the server does not offer all of them.
    pub mariadb_capabilities: u32,
    /// Limit for TCP connect plus handshake.
    pub connect_timeout: Duration,
}

/// An open, authenticated backend connection.
#[derive(Debug)]
pub struct BackendConn {
    /// The socket.
    pub stream: Stream,
    /// Bytes read from the server and not consumed yet.
    pub rbuf: BytesMut,
    /// Server thread id (for KILL QUERY).
    pub connection_id: u32,
    /// KILL QUERYs weir sent to this server thread: how many started (high 32 bits) and how
    /// many landed (low 32 bits). A statement queued behind another on the connection that
    /// gets ERR 1317 can tell from them whether a KILL meant for another may have stopped it.
    pub kill_queries: Arc<AtomicU64>,
    /// Server version string.
    pub server_version: String,
    /// Negotiated capabilities.
    pub capabilities: u32,
    /// Negotiated MariaDB extended capabilities (the column definitions of a connection
    /// with extended metadata carry one more field).
    pub mariadb_capabilities: u32,
    /// Schema in use, as far as weir knows.
    pub schema: Option<String>,
    /// The collation its charset variables start from when [`BackendConn::vars`] holds none:
    /// the handshake's, then that of each session that brought the connection to its own
    /// (`SET NAMES`).
    pub collation: u8,
    /// Whether its sql_mode starts with IGNORE_SPACE added, when [`BackendConn::vars`] holds
    /// none: its handshake's CLIENT_IGNORE_SPACE, then that of each session that synced it.
    pub ignore_space: bool,
    /// Whether the server takes several statements in one COM_QUERY from it: its handshake's
    /// CLIENT_MULTI_STATEMENTS, then as COM_SET_OPTION left it.
    pub multi_statements: bool,
    /// Status flags of the last reply.
    pub status: u16,
    /// Whether a transaction may be open that no reply reported: a statement failed with
    /// autocommit off (it may have opened one, and an ERR carries no status flags). The next
    /// reply with status flags says.
    pub transaction_assumed: bool,
    /// Whether a READ ONLY transaction ever ran here: MariaDB may keep the session read-only
    /// after it ends by `SET autocommit = 1`, so the connection is not reused by another
    /// client.
    pub read_only_trx_seen: bool,
    /// When it was opened.
    pub created: Instant,
    /// When it last finished a statement.
    pub last_used: Instant,
    /// Statements prepared on it, by global statement id.
    pub stmts: StmtCache,
    /// LAST_INSERT_ID() on this connection, as far as weir knows (from OK packets).
    pub last_insert_id: u64,
    /// Session variables set on it (by weir, replaying clients' SETs).
    pub vars: weir_sql::SessionVars,
    /// weir's end of the connection (processlist's l_srv_host / l_srv_port); `None` for Unix
    /// sockets.
    pub local_addr: Option<std::net::SocketAddr>,
    /// Counts the connection when it goes (the pool's closed connections), if set.
    pub close_counter: Option<Arc<AtomicU64>>,
    /// A second handle on the socket, through which the pool cuts the connection from another
    /// task when its server stops answering (a statement waiting on it then fails at once);
    /// it goes with the connection.
    pub cut_handle: Option<Arc<socket2::Socket>>,
    /// A statement left warnings or an error in this connection's server session: the next
    /// client to take it gets them cleared first, so that it never reads another client's.
    pub diagnostics_left: bool,
}

impl Drop for BackendConn {
    fn drop(&mut self) {
        if let Some(counter) = &self.close_counter {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// A result set read as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextRows {
    /// Column names.
    pub columns: Vec<String>,
    /// Rows; `None` is SQL NULL.
    pub rows: Vec<Vec<Option<String>>>,
}

impl TextRows {
    /// The value of column `name` (case-insensitive) in the first row.
    pub fn first(&self, name: &str) -> Option<&str> {
        let i = self
            .columns
            .iter()
            .position(|c| c.eq_ignore_ascii_case(name))?;
        self.rows.first()?.get(i)?.as_deref()
    }

    /// The first column of the first row (`SELECT @@x`); `None` also for SQL NULL.
    pub fn value(&self) -> Option<&str> {
        self.rows.first()?.first()?.as_deref()
    }
}

/// What the server said about a statement it prepared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreparedInfo {
    /// The server's statement id on this connection.
    pub statement_id: u32,
    /// Result columns.
    pub columns: u16,
    /// Parameters.
    pub params: u16,
}

const READ_CHUNK: usize = 64 * 1024;

impl BackendConn {
    /// Opens and authenticates a connection within `params.connect_timeout`.
    pub async fn connect(params: &ConnectParams) -> Result<BackendConn, BackendError> {
        let t = params.connect_timeout;
        match tokio::time::timeout(t, Self::connect_inner(params)).await {
            Ok(r) => r,
            Err(_) => Err(BackendError::Timeout(t)),
        }
    }

    /// Reads the greeting of the server at `endpoint` and hangs up without logging in: the
    /// version it announces, also noted for [`crate::backend_server_version`].
    pub async fn probe_version(
        endpoint: &Endpoint,
        timeout: Duration,
    ) -> Result<String, BackendError> {
        let probe = async {
            let mut stream = match endpoint {
                Endpoint::Tcp { host, port } => {
                    Stream::Tcp(TcpStream::connect((host.as_str(), *port)).await?)
                }
                Endpoint::Unix(p) => Stream::Unix(UnixStream::connect(p).await?),
            };
            let mut buf = BytesMut::with_capacity(256);
            loop {
                if let Some(h) = PacketHeader::parse(&buf) {
                    if buf.len() >= 4 + h.len {
                        break;
                    }
                }
                if stream.read_buf(&mut buf).await? == 0 {
                    return Err(BackendError::Io(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "server closed the connection before its greeting",
                    )));
                }
            }
            let body = &buf[4..];
            if body.first() == Some(&0xff) {
                return Err(BackendError::Server(ErrInfo::parse(body)?));
            }
            let g = Greeting::parse(body)?;
            crate::note_server_version(&g.server_version);
            crate::note_mariadb_capabilities(g.mariadb_capabilities);
            Ok(g.server_version)
        };
        match tokio::time::timeout(timeout, probe).await {
            Ok(r) => r,
            Err(_) => Err(BackendError::Timeout(timeout)),
        }
    }

    async fn connect_inner(params: &ConnectParams) -> Result<BackendConn, BackendError> {
        let mut local_addr = None;
        let stream = match &params.endpoint {
            Endpoint::Tcp { host, port } => {
                let s = TcpStream::connect((host.as_str(), *port)).await?;
                s.set_nodelay(true)?;
                local_addr = s.local_addr().ok();
                let sock = socket2::SockRef::from(&s);
                let _ = sock.set_keepalive(true);
                Stream::Tcp(s)
            }
            Endpoint::Unix(p) => Stream::Unix(UnixStream::connect(p).await?),
        };
        let unix = matches!(stream, Stream::Unix(_));
        let mut conn = BackendConn {
            stream,
            rbuf: BytesMut::with_capacity(READ_CHUNK),
            connection_id: 0,
            kill_queries: Arc::default(),
            server_version: String::new(),
            capabilities: 0,
            mariadb_capabilities: 0,
            schema: None,
            collation: params.collation,
            ignore_space: false,
            multi_statements: false,
            status: 0,
            transaction_assumed: false,
            read_only_trx_seen: false,
            created: Instant::now(),
            last_used: Instant::now(),
            stmts: StmtCache::default(),
            last_insert_id: 0,
            vars: weir_sql::SessionVars::default(),
            local_addr,
            close_counter: None,
            cut_handle: None,
            diagnostics_left: false,
        };
        let (seq, greeting) = conn.read_packet().await?;
        if greeting.first() == Some(&0xff) {
            return Err(BackendError::Server(ErrInfo::parse(&greeting)?));
        }
        let g = Greeting::parse(&greeting)?;
        conn.connection_id = g.connection_id;
        conn.server_version = g.server_version.clone();
        crate::note_server_version(&g.server_version);
        crate::note_mariadb_capabilities(g.mariadb_capabilities);
        if params.mariadb_capabilities & !g.mariadb_capabilities != 0 {
            // The client reads column definitions in a format this server would not send.
            return Err(BackendError::Server(ErrInfo::new(
                weir_wire::errcode::ER_HANDSHAKE_ERROR,
                "08S01",
                format!(
                    "the backend (version {}) does not offer the MariaDB extended capabilities \
                     0x{:x} this client negotiated with weir (extended metadata); connect \
                     again to get a greeting without them",
                    g.server_version,
                    params.mariadb_capabilities & !g.mariadb_capabilities
                ),
            )));
        }
        let mut caps = BACKEND_BASE_CAPS
            | (params.capabilities & (CORRECTNESS_CAPS | SESSION_CAPS | cap::DEPRECATE_EOF));
        if params.schema.is_some() {
            caps |= cap::CONNECT_WITH_DB;
        }
        caps &= g.capabilities | cap::LONG_PASSWORD;
        if params.mariadb_capabilities != 0 {
            // Without CLIENT_MYSQL, as a MariaDB client: the server then reads the extended
            // capabilities from the response.
            caps &= !cap::LONG_PASSWORD;
        }
        conn.capabilities = caps;
        conn.ignore_space = caps & cap::IGNORE_SPACE != 0;
        conn.multi_statements = caps & cap::MULTI_STATEMENTS != 0;
        conn.mariadb_capabilities = params.mariadb_capabilities;
        let (mut exchange, first) =
            Exchange::start(&g.auth_plugin, &g.scramble, &params.credential, unix)?;
        let resp = HandshakeResponse {
            capabilities: caps,
            max_packet: 1 << 30,
            collation: params.collation,
            username: params.username.clone(),
            auth_response: first,
            database: params.schema.clone(),
            auth_plugin: Some(g.auth_plugin.clone()),
            attributes: vec![("program_name".into(), "weir".into())],
            mariadb_capabilities: params.mariadb_capabilities,
        };
        let mut out = BytesMut::new();
        resp.write(&mut out, seq.wrapping_add(1));
        conn.stream.write_all(&out).await?;
        loop {
            let (seq, p) = conn.read_packet().await?;
            match p.first() {
                Some(0x00) => {
                    conn.set_status(OkInfo::parse(&p)?.status);
                    conn.schema = params.schema.clone();
                    return Ok(conn);
                }
                Some(0xff) => return Err(BackendError::Server(ErrInfo::parse(&p)?)),
                Some(0xfe) => {
                    let (plugin, data) = parse_auth_switch(&p)?;
                    let (ex, first) = Exchange::start(&plugin, &data, &params.credential, unix)?;
                    exchange = ex;
                    conn.send_raw_payload(seq.wrapping_add(1), &first).await?;
                }
                Some(0x01) => {
                    if let Some(reply) = exchange.more(&p[1..], &params.credential, unix)? {
                        conn.send_raw_payload(seq.wrapping_add(1), &reply).await?;
                    }
                }
                _ => {
                    return Err(BackendError::Auth(
                        "unexpected packet during authentication".into(),
                    ))
                }
            }
        }
    }

    async fn send_raw_payload(&mut self, seq: u8, payload: &[u8]) -> Result<(), BackendError> {
        let mut out = BytesMut::new();
        write_packet(&mut out, seq, payload);
        self.stream.write_all(&out).await?;
        Ok(())
    }

    /// Reads one whole logical packet; returns its first sequence id and payload.
    pub async fn read_packet(&mut self) -> Result<(u8, Vec<u8>), BackendError> {
        loop {
            match take_logical_packet(&mut self.rbuf, usize::MAX) {
                Ok(Framed::Packet {
                    raw, seq, frames, ..
                }) => {
                    return Ok((
                        seq,
                        weir_wire::packet::payload_of(&raw, frames).into_owned(),
                    ));
                }
                Ok(Framed::Incomplete) => {}
                Err(_) => {
                    return Err(BackendError::Protocol(weir_wire::WireError::Invalid(
                        "packet too large",
                    )))
                }
            }
            self.fill().await?;
        }
    }

    /// Reads more bytes into the buffer; a closed socket is an error.
    pub async fn fill(&mut self) -> Result<usize, BackendError> {
        if self.rbuf.capacity() - self.rbuf.len() < 4096 {
            self.rbuf.reserve(READ_CHUNK);
        }
        let n = self.stream.read_buf(&mut self.rbuf).await?;
        if n == 0 {
            return Err(BackendError::Io(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "server closed the connection",
            )));
        }
        Ok(n)
    }

    /// Reads until one whole packet is at the front of the buffer; returns its header.
    async fn buffer_packet(&mut self) -> Result<PacketHeader, BackendError> {
        loop {
            if let Some(h) = PacketHeader::parse(&self.rbuf) {
                if self.rbuf.len() >= 4 + h.len {
                    return Ok(h);
                }
            }
            self.fill().await?;
        }
    }

    /// Sends a command and reads its whole reply, discarding any rows. Returns the final OK
    /// (or EOF, as an OK without counts), or the server's error.
    /// Turns multi-statements on or off (COM_SET_OPTION), as a client's handshake would have.
    pub async fn set_multi_statements(&mut self, on: bool) -> Result<(), BackendError> {
        let option: u16 = if on { 0 } else { 1 };
        self.command(com::SET_OPTION, &option.to_le_bytes()).await?;
        self.multi_statements = on;
        Ok(())
    }

    pub async fn command(&mut self, cmd: u8, arg: &[u8]) -> Result<OkInfo, BackendError> {
        let expect = match cmd {
            com::QUERY | com::STMT_EXECUTE => Expect::ResultSets,
            com::STATISTICS => Expect::Single,
            _ => Expect::Status,
        };
        let mut payload = Vec::with_capacity(arg.len() + 1);
        payload.push(cmd);
        payload.extend_from_slice(arg);
        self.send_raw_payload(0, &payload).await?;
        self.read_reply(expect).await
    }

    /// Reads the whole reply to a command already sent, discarding any rows. Returns the
    /// final OK (or EOF, as an OK without counts), or the server's error.
    pub async fn read_reply(&mut self, expect: Expect) -> Result<OkInfo, BackendError> {
        let mut tracker = ReplyTracker::new(expect);
        let mut result = Ok(OkInfo::default());
        loop {
            let h = self.buffer_packet().await?;
            let body = &self.rbuf[4..4 + h.len];
            let role = tracker.feed(h.len, &body[..body.len().min(CLASSIFY_BYTES)])?;
            match role {
                Role::Ok(ok) => result = Ok(ok),
                Role::EndOfRows { warnings, status } => {
                    result = Ok(OkInfo {
                        status,
                        warnings,
                        ..Default::default()
                    })
                }
                Role::Err => result = Err(BackendError::Server(ErrInfo::parse(body)?)),
                Role::LocalInfile => {
                    bytes::Buf::advance(&mut self.rbuf, 4 + h.len);
                    // weir's own statements never load files: send an empty file.
                    self.send_raw_payload(h.seq.wrapping_add(1), &[]).await?;
                    tracker.local_infile_sent();
                    continue;
                }
                _ => {}
            }
            bytes::Buf::advance(&mut self.rbuf, 4 + h.len);
            if tracker.is_done() {
                break;
            }
        }
        if let Ok(ok) = &result {
            self.set_status(ok.status);
        }
        self.last_used = Instant::now();
        result
    }

    /// Prepares a statement (COM_STMT_PREPARE), reading and discarding its metadata.
    pub async fn prepare(&mut self, text: &[u8]) -> Result<PreparedInfo, BackendError> {
        let mut payload = Vec::with_capacity(text.len() + 1);
        payload.push(com::STMT_PREPARE);
        payload.extend_from_slice(text);
        self.send_raw_payload(0, &payload).await?;
        let mut tracker = ReplyTracker::new(Expect::Prepare);
        let mut result = Err(BackendError::Protocol(weir_wire::WireError::Invalid(
            "prepare reply without a statement",
        )));
        loop {
            let h = self.buffer_packet().await?;
            let body = &self.rbuf[4..4 + h.len];
            match tracker.feed(h.len, &body[..body.len().min(CLASSIFY_BYTES)])? {
                Role::PrepareOk {
                    statement_id,
                    columns,
                    params,
                } => {
                    result = Ok(PreparedInfo {
                        statement_id,
                        columns,
                        params,
                    })
                }
                Role::Err => result = Err(BackendError::Server(ErrInfo::parse(body)?)),
                _ => {}
            }
            bytes::Buf::advance(&mut self.rbuf, 4 + h.len);
            if tracker.is_done() {
                break;
            }
        }
        self.last_used = Instant::now();
        result
    }

    /// Closes server statements (COM_STMT_CLOSE has no reply).
    pub async fn close_statements(&mut self, ids: &[u32]) -> Result<(), BackendError> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut out = BytesMut::with_capacity(ids.len() * 9);
        for id in ids {
            let mut p = [0u8; 5];
            p[0] = com::STMT_CLOSE;
            p[1..].copy_from_slice(&id.to_le_bytes());
            write_packet(&mut out, 0, &p);
        }
        self.stream.write_all(&out).await?;
        Ok(())
    }

    /// Runs a text statement and returns its first result set as text: the column names and
    /// the rows (`None` for SQL NULL). For weir's own small queries (the monitor's checks).
    pub async fn query_rows(&mut self, sql: &str) -> Result<TextRows, BackendError> {
        let mut payload = Vec::with_capacity(sql.len() + 1);
        payload.push(com::QUERY);
        payload.extend_from_slice(sql.as_bytes());
        self.send_raw_payload(0, &payload).await?;
        let mut tracker = ReplyTracker::new(Expect::ResultSets);
        let mut out = TextRows::default();
        let mut error = None;
        // Only the first result set is kept; later ones (multi-results) are read and dropped.
        let mut sets = 0u32;
        loop {
            let h = self.buffer_packet().await?;
            let body = &self.rbuf[4..4 + h.len];
            let role = tracker.feed(h.len, &body[..body.len().min(CLASSIFY_BYTES)])?;
            match role {
                Role::ColumnCount(_) => sets += 1,
                Role::Definition if sets == 1 => {
                    let mut r = weir_wire::io::Reader::new(body);
                    for what in ["catalog", "schema", "table", "org_table"] {
                        r.lenenc_bytes(what)?;
                    }
                    let name = r.lenenc_bytes("name")?;
                    out.columns.push(String::from_utf8_lossy(name).into_owned());
                }
                Role::Row if sets == 1 => {
                    let mut r = weir_wire::io::Reader::new(body);
                    let mut row = Vec::with_capacity(out.columns.len());
                    for _ in 0..out.columns.len() {
                        if r.remaining().first() == Some(&0xfb) {
                            r.take(1, "NULL")?;
                            row.push(None);
                        } else {
                            let v = r.lenenc_bytes("value")?;
                            row.push(Some(String::from_utf8_lossy(v).into_owned()));
                        }
                    }
                    out.rows.push(row);
                }
                Role::Ok(ok) => self.set_status(ok.status),
                Role::EndOfRows { status, .. } => self.set_status(status),
                Role::Err => error = Some(ErrInfo::parse(body)?),
                _ => {}
            }
            bytes::Buf::advance(&mut self.rbuf, 4 + h.len);
            if tracker.is_done() {
                break;
            }
        }
        self.last_used = Instant::now();
        match error {
            Some(e) => Err(BackendError::Server(e)),
            None => Ok(out),
        }
    }

    /// Runs a text statement, discarding its result.
    pub async fn query(&mut self, sql: &str) -> Result<OkInfo, BackendError> {
        self.command(com::QUERY, sql.as_bytes()).await
    }

    /// Switches the default schema (COM_INIT_DB) and records it.
    pub async fn init_db(&mut self, schema: &str) -> Result<(), BackendError> {
        self.command(com::INIT_DB, schema.as_bytes()).await?;
        self.schema = Some(schema.to_string());
        Ok(())
    }

    /// Whether an idle connection is still usable: the server has not closed it (restart,
    /// wait_timeout, KILL) nor sent anything unasked. Costs no syscall when the event loop has
    /// seen no activity on the socket.
    pub fn idle_ok(&mut self) -> bool {
        if !self.rbuf.is_empty() {
            return false;
        }
        matches!(
            self.stream.try_read_buf(&mut self.rbuf),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
        )
    }

    /// Records the status flags of a reply.
    pub fn set_status(&mut self, status: u16) {
        self.status = status;
        self.transaction_assumed = false;
        self.read_only_trx_seen |= status & weir_wire::status::IN_TRANS_READONLY != 0;
    }

    /// Whether a client other than the one that used it last may get it.
    pub fn reusable(&self) -> bool {
        !self.in_transaction() && !self.read_only_trx_seen
    }

    /// Whether the last reply left a transaction open, or may have (see
    /// [`BackendConn::transaction_assumed`]).
    pub fn in_transaction(&self) -> bool {
        self.status & weir_wire::status::IN_TRANS != 0 || self.transaction_assumed
    }

    /// Closes the connection politely (COM_QUIT), ignoring errors.
    pub async fn quit(&mut self) {
        let _ = self.stream.write_all(&[1, 0, 0, 0, com::QUIT]).await;
        let _ = self.stream.shutdown().await;
    }
}
