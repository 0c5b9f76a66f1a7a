//! One admin connection over the MySQL protocol, with the same wire code as the data path:
//! greeting, authentication against admin-admin_credentials / admin-stats_credentials, then
//! a command loop. Statements run on the blocking pool so that SQLite never stalls the
//! admin event loop.

use crate::exec::{Admin, AdminError, AdminSession, Reply, Role};
use bytes::BytesMut;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use weir_wire::auth::{self, AuthCheck, Secret, NATIVE_PASSWORD};
use weir_wire::handshake::{write_auth_switch, Greeting};
use weir_wire::msg::{write_end_of_rows, write_eof, write_ok, ErrInfo, OkInfo, TextResultSet};
use weir_wire::packet::{payload_of, take_logical_packet, write_packet, Framed};
use weir_wire::{cap, com, errcode, status};

/// Capabilities offered to admin clients: no TLS, no compression, one statement per query.
const ADMIN_CAPS: u32 = cap::LONG_PASSWORD
    | cap::FOUND_ROWS
    | cap::LONG_FLAG
    | cap::CONNECT_WITH_DB
    | cap::PROTOCOL_41
    | cap::INTERACTIVE
    | cap::TRANSACTIONS
    | cap::SECURE_CONNECTION
    | cap::MULTI_RESULTS
    | cap::PLUGIN_AUTH
    | cap::CONNECT_ATTRS
    | cap::PLUGIN_AUTH_LENENC_CLIENT_DATA
    | cap::DEPRECATE_EOF;

/// Largest admin statement accepted (ProxySQL scripts insert thousands of rules at once).
const MAX_ADMIN_PACKET: usize = 64 << 20;

/// Largest packet before login (a handshake response, an authentication answer), as on the
/// proxy port: a client that has not logged in makes weir hold no more.
const MAX_LOGIN_PACKET: usize = 64 << 10;

/// A silent client is dropped after this long in the connection phase.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// Where an admin client comes from.
#[derive(Debug, Clone)]
pub struct Peer {
    /// Address shown in messages (`127.0.0.1`, `localhost` for Unix sockets).
    pub host: String,
    /// Loopback TCP or a Unix socket: where the default `admin` user may log in from.
    pub local: bool,
}

struct Conn<S> {
    stream: S,
    rbuf: BytesMut,
    wbuf: BytesMut,
    caps: u32,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    /// Reads one logical packet of at most `max` bytes.
    async fn read_packet(&mut self, max: usize) -> std::io::Result<Option<(Vec<u8>, u8)>> {
        loop {
            match take_logical_packet(&mut self.rbuf, max) {
                Ok(Framed::Packet {
                    raw,
                    frames,
                    last_seq,
                    ..
                }) => return Ok(Some((payload_of(&raw, frames).into_owned(), last_seq))),
                Ok(Framed::Incomplete) => {}
                Err(n) => {
                    return Err(std::io::Error::other(format!(
                        "admin packet of {n} bytes is over the {max}-byte limit"
                    )))
                }
            }
            self.rbuf.reserve(16 * 1024);
            if self.stream.read_buf(&mut self.rbuf).await? == 0 {
                return Ok(None);
            }
        }
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if !self.wbuf.is_empty() {
            self.stream.write_all(&self.wbuf).await?;
            self.wbuf.clear();
        }
        Ok(())
    }

    async fn send_err(&mut self, seq: u8, e: &ErrInfo) -> std::io::Result<()> {
        e.write(&mut self.wbuf, seq);
        self.flush().await
    }

    async fn send_ok(
        &mut self,
        seq: u8,
        affected: u64,
        last_insert_id: u64,
        info: &str,
    ) -> std::io::Result<()> {
        let ok = OkInfo {
            affected_rows: affected,
            last_insert_id,
            status: status::AUTOCOMMIT,
            warnings: 0,
        };
        write_ok(&mut self.wbuf, seq, &ok, info.as_bytes());
        self.flush().await
    }
}

/// Serves one admin client until it quits or the connection breaks.
pub async fn serve_connection<S>(admin: Arc<Admin>, stream: S, peer: Peer)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut conn = Conn {
        stream,
        rbuf: BytesMut::with_capacity(16 * 1024),
        wbuf: BytesMut::with_capacity(16 * 1024),
        caps: 0,
    };
    let connection_id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let login = tokio::time::timeout(
        HANDSHAKE_TIMEOUT,
        authenticate(&admin, &mut conn, &peer, connection_id),
    )
    .await;
    let (mut session, _) = match login {
        Ok(Ok(Some(s))) => s,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, host = %peer.host, "admin connection failed at login");
            return;
        }
        Err(_) => {
            tracing::debug!(host = %peer.host, "admin client silent at login: closed");
            return;
        }
    };
    if let Err(e) = command_loop(&admin, &mut conn, &mut session).await {
        tracing::debug!(error = %e, user = %session.user, "admin connection closed");
    }
}

async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    admin: &Admin,
    conn: &mut Conn<S>,
    peer: &Peer,
    connection_id: u32,
) -> std::io::Result<Option<(AdminSession, u8)>> {
    let runtime = admin.control().runtime();
    let scramble = auth::new_scramble();
    Greeting {
        server_version: admin.control().server_version(),
        connection_id,
        scramble: scramble.to_vec(),
        capabilities: ADMIN_CAPS,
        mariadb_capabilities: 0,
        collation: 45,
        status: status::AUTOCOMMIT,
        auth_plugin: NATIVE_PASSWORD.into(),
    }
    .write(&mut conn.wbuf);
    conn.flush().await?;
    let Some((payload, last_seq)) = conn.read_packet(MAX_LOGIN_PACKET).await? else {
        return Ok(None);
    };
    let mut seq = last_seq.wrapping_add(1);
    let resp = match weir_wire::handshake::accept_response(&payload, "the weir admin interface") {
        Ok(r) => r,
        Err(e) => {
            conn.send_err(seq, &e).await?;
            return Ok(None);
        }
    };
    conn.caps = resp.capabilities & ADMIN_CAPS;
    let admins = &runtime.admin.admin_credentials;
    let stats = &runtime.admin.stats_credentials;
    let found = admins
        .iter()
        .find(|(u, _)| *u == resp.username)
        .map(|(_, p)| (p.clone(), Role::Admin))
        .or_else(|| {
            stats
                .iter()
                .find(|(u, _)| *u == resp.username)
                .map(|(_, p)| (p.clone(), Role::Stats))
        });
    let denied = |with_password: bool| {
        weir_wire::handshake::access_denied(&resp.username, &peer.host, with_password)
    };
    // The well-known default account must not be reachable from the network.
    let Some((password, role)) = found.filter(|_| peer.local || resp.username != "admin") else {
        conn.send_err(seq, &denied(!resp.auth_response.is_empty()))
            .await?;
        return Ok(None);
    };
    let mut plugin = resp
        .auth_plugin
        .clone()
        .unwrap_or_else(|| NATIVE_PASSWORD.into());
    let mut proof = resp.auth_response.clone();
    let mut switched = false;
    loop {
        match auth::check(
            &plugin,
            &scramble,
            Secret::Clear(password.as_bytes()),
            &proof,
        ) {
            AuthCheck::Ok(_) => break,
            AuthCheck::SwitchTo(p) if !switched => {
                switched = true;
                let mut data = scramble.to_vec();
                data.push(0);
                write_auth_switch(&mut conn.wbuf, seq, p, &data);
                conn.flush().await?;
                let Some((reply, last)) = conn.read_packet(MAX_LOGIN_PACKET).await? else {
                    return Ok(None);
                };
                seq = last.wrapping_add(1);
                proof = reply;
                plugin = p.to_string();
            }
            _ => {
                conn.send_err(seq, &denied(!proof.is_empty())).await?;
                return Ok(None);
            }
        }
    }
    // caching_sha2 fast path succeeded: tell the client before the final OK.
    if plugin == auth::CACHING_SHA2_PASSWORD {
        weir_wire::handshake::write_auth_more_data(
            &mut conn.wbuf,
            seq,
            &[auth::SHA2_FAST_AUTH_SUCCESS],
        );
        seq = seq.wrapping_add(1);
    }
    let schema = match admin.login_schema(resp.database.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            conn.send_err(seq, &ErrInfo::new(e.code, e.state, e.message))
                .await?;
            return Ok(None);
        }
    };
    let session = AdminSession {
        user: resp.username.clone(),
        role,
        host: peer.host.clone(),
        schema,
        connection_id,
        warnings: Vec::new(),
    };
    conn.send_ok(seq, 0, 0, "").await?;
    tracing::debug!(user = %session.user, host = %peer.host, "admin login");
    Ok(Some((session, seq)))
}

async fn command_loop<S: AsyncRead + AsyncWrite + Unpin>(
    admin: &Arc<Admin>,
    conn: &mut Conn<S>,
    session: &mut AdminSession,
) -> std::io::Result<()> {
    loop {
        let Some((payload, last_seq)) = conn.read_packet(MAX_ADMIN_PACKET).await? else {
            return Ok(());
        };
        let seq = last_seq.wrapping_add(1);
        let Some((&cmd, body)) = payload.split_first() else {
            let e = ErrInfo::new(
                errcode::ER_UNKNOWN_COM_ERROR,
                "08S01",
                "empty command packet",
            );
            conn.send_err(seq, &e).await?;
            continue;
        };
        match cmd {
            com::QUIT => return Ok(()),
            com::PING | com::RESET_CONNECTION => conn.send_ok(seq, 0, 0, "").await?,
            com::INIT_DB => {
                let schema = String::from_utf8_lossy(body).into_owned();
                let r = run(admin, session, format!("USE {schema}")).await;
                write_reply(conn, seq, r).await?;
            }
            com::QUERY => {
                let sql = String::from_utf8_lossy(body).into_owned();
                let r = run(admin, session, sql).await;
                let sent = write_reply(conn, seq, r).await;
                admin.after_reply();
                sent?;
            }
            com::FIELD_LIST => {
                // The mysql CLI asks for columns to complete names; an empty list is valid.
                write_end_of_rows(&mut conn.wbuf, seq, conn.caps, status::AUTOCOMMIT, 0);
                conn.flush().await?;
            }
            com::STATISTICS => {
                // The line `mysqladmin status` and the mysql CLI's `status` print.
                let snap = admin.control().stats(crate::StatsReset::default());
                let get = |k: &str| {
                    snap.global
                        .iter()
                        .find(|(n, _)| n == k)
                        .and_then(|(_, v)| v.parse::<u64>().ok())
                        .unwrap_or(0)
                };
                let uptime = get("ProxySQL_Uptime");
                let questions = get("Questions");
                let msg = format!(
                    "Uptime: {uptime}  Threads: {}  Questions: {questions}  Slow queries: {}  Opens: 0  Flush tables: 0  Open tables: 0  Queries per second avg: {:.3}",
                    get("Client_Connections_connected"),
                    get("Slow_queries"),
                    questions as f64 / uptime.max(1) as f64
                );
                write_packet(&mut conn.wbuf, seq, msg.as_bytes());
                conn.flush().await?;
            }
            com::SET_OPTION => {
                write_eof(&mut conn.wbuf, seq, status::AUTOCOMMIT, 0);
                conn.flush().await?;
            }
            other => {
                let e = ErrInfo::new(
                    errcode::ER_UNKNOWN_COM_ERROR,
                    "08S01",
                    format!(
                        "{} is not supported by the weir admin interface",
                        com::name(other)
                    ),
                );
                conn.send_err(seq, &e).await?;
            }
        }
    }
}

/// Runs a statement on the blocking pool: SQLite work and stats snapshots stay off the
/// event loop, so one slow admin query does not hold the others.
async fn run(
    admin: &Arc<Admin>,
    session: &mut AdminSession,
    sql: String,
) -> Result<Reply, AdminError> {
    let admin = admin.clone();
    let mut s = session.clone();
    let joined = tokio::task::spawn_blocking(move || {
        let r = admin.execute(&mut s, &sql);
        (s, r)
    })
    .await;
    match joined {
        Ok((s, r)) => {
            *session = s;
            r
        }
        Err(e) => Err(AdminError {
            code: 1105,
            state: "HY000",
            message: format!("admin statement failed: {e}"),
        }),
    }
}

async fn write_reply<S: AsyncRead + AsyncWrite + Unpin>(
    conn: &mut Conn<S>,
    seq: u8,
    reply: Result<Reply, AdminError>,
) -> std::io::Result<()> {
    match reply {
        Ok(Reply::Ok {
            affected,
            last_insert_id,
            info,
        }) => conn.send_ok(seq, affected, last_insert_id, &info).await,
        Ok(Reply::Rows(rs)) => {
            let cols: Vec<&str> = rs.columns.iter().map(String::as_str).collect();
            let mut set = TextResultSet::begin(&mut conn.wbuf, seq, conn.caps, &cols);
            let mut values: Vec<Option<&[u8]>> = Vec::with_capacity(cols.len());
            for row in &rs.rows {
                values.clear();
                values.extend(row.iter().map(|v| v.as_deref().map(str::as_bytes)));
                set.row(&values);
            }
            set.finish(status::AUTOCOMMIT);
            conn.flush().await
        }
        Err(e) => {
            let e = ErrInfo::new(e.code, e.state, e.message);
            conn.send_err(seq, &e).await
        }
    }
}
