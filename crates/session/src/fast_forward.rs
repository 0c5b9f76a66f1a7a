//! fast_forward users (mysql_users.fast_forward = 1): after login the client gets a backend
//! connection of its own in its default hostgroup, opened with its schema, collation and
//! protocol capabilities, and bytes go both ways unparsed until either side closes. No query
//! rules, no pooling, no per-statement stats: ProxySQL's fast_forward, seed 003's "ProxySQL FF".
//!
//! The connection counts as used on its server (stats_mysql_connection_pool, max_connections)
//! and is closed at the end, never returned to the pool. The processlist shows the session as
//! idle on that server.

use crate::client::ClientConn;
use crate::registry::SessionHandle;
use crate::session::pool_error;
use crate::{GlobalStats, Shared};
use bytes::BytesMut;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_backend::{CORRECTNESS_CAPS, SESSION_CAPS};
use weir_pool::{LoginTemplate, PooledConn};
use weir_wire::msg::{ErrInfo, OkInfo};
use weir_wire::{cap, errcode};

/// Capabilities the backend must share with the client for its bytes to pass unchanged.
const PASSTHROUGH_CAPS: u32 = CORRECTNESS_CAPS | SESSION_CAPS | cap::DEPRECATE_EOF;

/// Bytes read at once in each direction.
const CHUNK: usize = 16 * 1024;

/// Serves a logged-in fast_forward client: opens its backend connection (or answers the
/// login with the error), acknowledges the login with `ok_seq`, relays until one side closes.
pub(crate) async fn serve(
    shared: &Shared,
    handle: &SessionHandle,
    client: &mut ClientConn,
    hostgroup: u32,
    mut login: LoginTemplate,
    ok_seq: u8,
) {
    login.key.capabilities = client.caps & PASSTHROUGH_CAPS;
    let mut backend = match shared.pool.connect_dedicated(hostgroup, &login).await {
        Ok(b) => b,
        Err(e) => {
            GlobalStats::inc(&shared.stats.backend_errors);
            let _ = client.send_err(ok_seq, &pool_error(&e)).await;
            return;
        }
    };
    let granted = backend.conn_ref().capabilities & PASSTHROUGH_CAPS;
    if granted != login.key.capabilities {
        let e = ErrInfo::new(
            errcode::ER_HANDSHAKE_ERROR,
            "08S01",
            format!(
                "fast_forward: the backend {} does not offer the protocol capabilities this \
                 client negotiated (0x{:08x} missing)",
                backend.server().endpoint(),
                login.key.capabilities & !granted
            ),
        );
        let _ = client.send_err(ok_seq, &e).await;
        backend.close().await;
        return;
    }
    {
        let mut a = handle.activity.lock();
        a.command = crate::activity::SLEEP;
        a.since = Instant::now();
        a.hostgroup = hostgroup;
        a.held = Some(backend.server().clone());
        a.schema.clear();
        a.schema.push_str(login.schema.as_deref().unwrap_or(""));
    }
    let ok = OkInfo {
        status: backend.conn_ref().status,
        ..Default::default()
    };
    if client.send_ok(ok_seq, &ok).await.is_ok() {
        let wait_timeout = shared.runtime.load().mysql.wait_timeout;
        let idle_limit = (!wait_timeout.is_zero()).then_some(wait_timeout);
        match relay(client, &mut backend, handle, idle_limit).await {
            Ok(()) => {}
            Err(e) => tracing::debug!(session = handle.id, error = %e, "fast_forward relay ended"),
        }
    }
    backend.close().await;
}

/// Which side had something.
enum Ready {
    Client(std::io::Result<usize>),
    Backend(std::io::Result<usize>),
    Killed,
    IdleTimer,
}

/// Copies bytes both ways until either side closes or the session is killed. Each chunk is
/// written out before more is read from its side, so memory stays bounded.
async fn relay(
    client: &mut ClientConn,
    backend: &mut PooledConn,
    handle: &SessionHandle,
    idle_limit: Option<Duration>,
) -> std::io::Result<()> {
    let server: Arc<weir_pool::ServerState> = backend.server().clone();
    let conn = backend.conn();
    // Whatever either side sent ahead of the relay goes first.
    let early = client.take_buffered();
    if !early.is_empty() {
        conn.stream.write_all(&early).await?;
    }
    if !conn.rbuf.is_empty() {
        client.stream.write_all(&conn.rbuf).await?;
        conn.rbuf.clear();
    }
    let mut up = BytesMut::with_capacity(CHUNK);
    let mut down = BytesMut::with_capacity(CHUNK);
    let (mut sent, mut received) = (early.len() as u64, 0u64);
    // mysql-wait_timeout: the timer is set for the limit after the last traffic and, when it
    // fires early (there was traffic since), set again from then. The client is idle only
    // when it is its turn to speak: the last bytes came from the server (the end of a reply,
    // as far as a relay that reads no packets can tell), or none came yet; while the server
    // has the last word to say, a long statement runs.
    let limit = idle_limit.unwrap_or(Duration::MAX);
    let mut last_traffic = Instant::now();
    let mut clients_turn = true;
    let idle = tokio::time::sleep(limit);
    tokio::pin!(idle);
    let result = loop {
        if up.capacity() < CHUNK / 2 {
            up.reserve(CHUNK);
        }
        if down.capacity() < CHUNK / 2 {
            down.reserve(CHUNK);
        }
        let ready = tokio::select! {
            r = client.stream.read_buf(&mut up) => Ready::Client(r),
            r = conn.stream.read_buf(&mut down) => Ready::Backend(r),
            _ = handle.kill.cancelled() => Ready::Killed,
            () = &mut idle, if idle_limit.is_some() => Ready::IdleTimer,
        };
        match ready {
            Ready::Client(Ok(0)) | Ready::Backend(Ok(0)) | Ready::Killed => break Ok(()),
            Ready::IdleTimer => {
                let since = last_traffic.elapsed();
                if since >= limit && clients_turn {
                    tracing::info!(
                        session = handle.id,
                        "idle fast_forward client connection closed (wait_timeout)"
                    );
                    break Ok(());
                }
                let rest = if clients_turn { limit - since } else { limit };
                idle.as_mut().reset((Instant::now() + rest).into());
                continue;
            }
            Ready::Client(Ok(n)) => {
                last_traffic = Instant::now();
                clients_turn = false;
                sent += n as u64;
                if let Err(e) = conn.stream.write_all(&up).await {
                    break Err(e);
                }
                up.clear();
            }
            Ready::Backend(Ok(n)) => {
                last_traffic = Instant::now();
                clients_turn = true;
                received += n as u64;
                if let Err(e) = client.stream.write_all(&down).await {
                    break Err(e);
                }
                down.clear();
            }
            Ready::Client(Err(e)) | Ready::Backend(Err(e)) => break Err(e),
        }
    };
    server.stats.bytes_sent.fetch_add(sent, Ordering::Relaxed);
    server
        .stats
        .bytes_recv
        .fetch_add(received, Ordering::Relaxed);
    result
}
