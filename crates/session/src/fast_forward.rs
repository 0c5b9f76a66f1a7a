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
        client.bytes_out += conn.rbuf.len() as u64;
        crate::client::write_all_timed(
            &mut client.stream,
            &conn.rbuf,
            client.write_timeout_s,
            client.killed.as_ref(),
        )
        .await?;
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
    let mut packets = ClientPackets::default();
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
                clients_turn = packets.client_sent(&up);
                sent += n as u64;
                client.bytes_in += n as u64;
                if let Err(e) = conn.stream.write_all(&up).await {
                    break Err(e);
                }
                up.clear();
            }
            Ready::Backend(Ok(n)) => {
                last_traffic = Instant::now();
                clients_turn = true;
                packets.server_spoke();
                received += n as u64;
                client.bytes_out += n as u64;
                let timeout_s = client.write_timeout_s;
                if let Err(e) = crate::client::write_all_timed(
                    &mut client.stream,
                    &down,
                    timeout_s,
                    client.killed.as_ref(),
                )
                .await
                {
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

/// Follows the client's packets, as far as a relay that reads none of the server's can, to
/// tell whether what it sent since the server last spoke awaits a reply: COM_STMT_CLOSE and
/// COM_STMT_SEND_LONG_DATA get none, so after them it is still the client's turn.
#[derive(Debug)]
struct ClientPackets {
    /// Bytes of the current packet not seen yet; `None` once out of step (a header split
    /// between reads, a file sent for LOAD DATA LOCAL), until the server speaks again.
    rest: Option<usize>,
    /// Whether the current packet continues the last one (which had the largest length):
    /// its first byte is no command.
    continued: bool,
    /// Whether every command since the server last spoke is one that gets no reply.
    unanswered: bool,
}

impl Default for ClientPackets {
    fn default() -> Self {
        ClientPackets {
            rest: Some(0),
            continued: false,
            unanswered: true,
        }
    }
}

impl ClientPackets {
    /// The server spoke: the client's next bytes start a packet.
    fn server_spoke(&mut self) {
        *self = ClientPackets::default();
    }

    /// Follows `bytes` sent by the client; whether it is still its turn to speak.
    fn client_sent(&mut self, mut bytes: &[u8]) -> bool {
        loop {
            let Some(rest) = self.rest else {
                return false;
            };
            if rest > 0 {
                let n = rest.min(bytes.len());
                self.rest = Some(rest - n);
                bytes = &bytes[n..];
                if bytes.is_empty() {
                    return self.unanswered && rest == n;
                }
                continue;
            }
            if bytes.is_empty() {
                return self.unanswered;
            }
            let (Some(header), Some(&first)) = (bytes.get(..4), bytes.get(4)) else {
                // A header cut between reads, or an empty packet (the end of a file).
                self.rest = None;
                return false;
            };
            let len =
                usize::from(header[0]) | usize::from(header[1]) << 8 | usize::from(header[2]) << 16;
            if !self.continued {
                self.unanswered &= matches!(
                    first,
                    weir_wire::com::STMT_CLOSE | weir_wire::com::STMT_SEND_LONG_DATA
                );
            }
            self.continued = len == 0xff_ffff;
            self.rest = Some(4 + len);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ClientPackets;

    fn packet(payload: &[u8]) -> Vec<u8> {
        let len = payload.len();
        let mut p = vec![len as u8, (len >> 8) as u8, (len >> 16) as u8, 0];
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn commands_without_a_reply_leave_the_turn_to_the_client() {
        let close = packet(&[0x19, 1, 0, 0, 0]);
        let query = packet(b"\x03SELECT 1");
        let mut p = ClientPackets::default();
        assert!(p.client_sent(&close));
        assert!(!p.client_sent(&query));
        p.server_spoke();
        // Long data then a close, cut anywhere: the client's turn at the end of a packet; a
        // header cut between reads loses step, which leaves the turn to the server.
        let mut long = packet(&[&[0x18, 1, 0, 0, 0, 0, 0][..], &[7; 300]].concat());
        let first_len = long.len();
        long.extend_from_slice(&close);
        for cut in 1..long.len() {
            let mut p = ClientPackets::default();
            let first = p.client_sent(&long[..cut]);
            assert_eq!(first, cut == first_len, "cut at {cut}");
            let whole_headers = cut >= 5 && !(first_len + 1..first_len + 5).contains(&cut);
            assert_eq!(p.client_sent(&long[cut..]), whole_headers, "cut at {cut}");
        }
        // A query among them: the server owes a reply.
        let mut p = ClientPackets::default();
        assert!(!p.client_sent(&[close.clone(), query.clone()].concat()));
        p.server_spoke();
        assert!(p.client_sent(&close));
    }
}
