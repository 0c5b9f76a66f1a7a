//! The client socket with its buffers: reads whole commands, writes packets.

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use weir_backend::Stream;
use weir_wire::msg::{write_ok, ErrInfo, OkInfo};
use weir_wire::packet::{take_logical_packet, Framed};

/// A command as received: raw frames (ready to forward) and how many there are.
pub struct Command {
    /// Frames exactly as the client sent them, headers included.
    pub raw: BytesMut,
    /// Number of frames.
    pub frames: usize,
    /// Sequence id of the last frame.
    pub last_seq: u8,
}

impl Command {
    /// A COM_QUERY carrying `text` (a rule's rewrite), framed from sequence id 0.
    pub fn query(text: &[u8]) -> Command {
        let mut payload = Vec::with_capacity(text.len() + 1);
        payload.push(weir_wire::com::QUERY);
        payload.extend_from_slice(text);
        Command::from_payload(&payload)
    }

    /// A command built by weir from its payload (command byte first), framed from sequence id 0.
    pub fn from_payload(payload: &[u8]) -> Command {
        let mut raw = BytesMut::with_capacity(payload.len() + 8);
        let next = weir_wire::packet::write_packet(&mut raw, 0, payload);
        Command {
            raw,
            frames: payload.len() / weir_wire::MAX_PAYLOAD + 1,
            last_seq: next.wrapping_sub(1),
        }
    }

    /// The command byte.
    pub fn code(&self) -> u8 {
        self.raw.get(4).copied().unwrap_or(0)
    }

    /// The payload (command byte included), joined across frames if needed.
    pub fn payload(&self) -> std::borrow::Cow<'_, [u8]> {
        weir_wire::packet::payload_of(&self.raw, self.frames)
    }
}

/// Why reading from the client stopped.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Socket error.
    #[error("client i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The client closed the connection.
    #[error("client closed the connection")]
    Closed,
    /// A packet above max_allowed_packet.
    #[error("client sent a packet of {0} bytes, over max_allowed_packet")]
    TooLarge(usize),
}

/// Smallest read from a client: commands are small; 10,000 idle clients cost 10,000 of these.
const READ_MIN: usize = 1024;
/// Largest single read of a big packet.
const READ_MAX: usize = 1 << 20;

/// One client connection.
pub struct ClientConn {
    /// The socket.
    pub stream: Stream,
    rbuf: BytesMut,
    /// Scratch buffer for packets weir builds itself.
    pub wbuf: BytesMut,
    /// Negotiated capabilities.
    pub caps: u32,
    /// Negotiated MariaDB extended capabilities (`weir_wire::mariadb_cap`).
    pub mariadb_caps: u32,
    /// Peer address for messages.
    pub host: String,
    /// Peer port.
    pub port: u16,
    /// Local address the client connected to (rules' proxy_addr).
    pub local_host: String,
    /// Local port the client connected to (rules' proxy_port).
    pub local_port: u16,
    /// The scramble of the greeting, against which COM_CHANGE_USER is checked too.
    pub scramble: [u8; 20],
    /// Bytes read from the client (Queries_frontends_bytes_recv).
    pub bytes_in: u64,
    /// Bytes sent to the client (Queries_frontends_bytes_sent).
    pub bytes_out: u64,
    /// How long a write may wait for a client that reads nothing, seconds: the session's
    /// net_write_timeout.
    pub write_timeout_s: u32,
    /// Cancelled when the session is killed (KILL CONNECTION, not a shutdown): a write
    /// waiting for a client that reads nothing gives up then (the session and its backend
    /// connection go at once, as on the server).
    pub killed: Option<tokio_util::sync::CancellationToken>,
}

/// The server's default net_write_timeout, seconds: how long weir waits for a client that
/// reads nothing of what it is sent, unless the session set net_write_timeout itself.
pub(crate) const NET_WRITE_TIMEOUT_S: u32 = 60;

/// Writes all of `bytes` to a client, as the server does: an error (`TimedOut`) once the client
/// has read nothing for `timeout_s` seconds. Otherwise a client that stops reading a result
/// would keep the session, and the backend connection the result comes from, for as long as
/// it stays connected. The common case (the socket takes it all at once) arms no timer.
pub(crate) async fn write_all_timed(
    stream: &mut Stream,
    bytes: &[u8],
    timeout_s: u32,
    killed: Option<&tokio_util::sync::CancellationToken>,
) -> std::io::Result<()> {
    use std::io::ErrorKind;
    let mut rest = bytes;
    match stream.try_write(rest) {
        Ok(n) => rest = &rest[n.min(rest.len())..],
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    let limit = std::time::Duration::from_secs(u64::from(timeout_s.max(1)));
    while !rest.is_empty() {
        let written = tokio::select! {
            w = tokio::time::timeout(limit, stream.write(rest)) => w,
            () = async {
                match killed {
                    Some(k) => k.cancelled().await,
                    None => std::future::pending().await,
                }
            } => {
                return Err(std::io::Error::new(
                    ErrorKind::ConnectionAborted,
                    "the session was killed while its client read nothing",
                ))
            }
        };
        match written {
            Ok(Ok(0)) => return Err(ErrorKind::WriteZero.into()),
            Ok(Ok(n)) => rest = &rest[n..],
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(std::io::Error::new(
                    ErrorKind::TimedOut,
                    format!("the client read nothing for {timeout_s} s (net_write_timeout)"),
                ))
            }
        }
    }
    Ok(())
}

impl ClientConn {
    /// Wraps an accepted socket.
    pub fn new(stream: Stream) -> ClientConn {
        Self::with_addrs(stream, None, None)
    }

    /// Wraps an accepted socket whose peer address (from accept) and local address (the
    /// listener's, when bound to a specific IP) are known, saving the system calls that would
    /// ask the kernel again.
    pub fn with_addrs(
        stream: Stream,
        peer: Option<std::net::SocketAddr>,
        local: Option<std::net::SocketAddr>,
    ) -> ClientConn {
        let (host, port) = match peer {
            Some(a) => (a.ip().to_string(), a.port()),
            None => (stream.peer_host(), stream.peer_port()),
        };
        let (local_host, local_port) = match local {
            Some(a) => (a.ip().to_string(), a.port()),
            None => stream.local_addr(),
        };
        ClientConn {
            local_host,
            local_port,
            stream,
            rbuf: BytesMut::with_capacity(READ_MIN),
            wbuf: BytesMut::with_capacity(256),
            caps: 0,
            mariadb_caps: 0,
            host,
            port,
            scramble: [0; 20],
            bytes_in: 0,
            bytes_out: 0,
            write_timeout_s: NET_WRITE_TIMEOUT_S,
            killed: None,
        }
    }

    /// Reads one whole logical packet.
    pub async fn read_command(&mut self, max_payload: usize) -> Result<Command, ClientError> {
        loop {
            match take_logical_packet(&mut self.rbuf, max_payload) {
                Ok(Framed::Packet {
                    raw,
                    frames,
                    last_seq,
                    ..
                }) => {
                    return Ok(Command {
                        raw,
                        frames,
                        last_seq,
                    })
                }
                Ok(Framed::Incomplete) => {}
                Err(n) => return Err(ClientError::TooLarge(n)),
            }
            // Room for the rest of the packet being read (known from its header), at least
            // READ_MIN: an idle client costs a small buffer, a big packet one allocation.
            let want = match weir_wire::PacketHeader::parse(&self.rbuf) {
                Some(h) => (4 + h.len)
                    .saturating_sub(self.rbuf.len())
                    .clamp(READ_MIN, READ_MAX),
                None => READ_MIN,
            };
            if self.rbuf.capacity() - self.rbuf.len() < want {
                self.rbuf.reserve(want);
            }
            let n = self.stream.read_buf(&mut self.rbuf).await?;
            if n == 0 {
                return Err(ClientError::Closed);
            }
            self.bytes_in += n as u64;
        }
    }

    /// Reads and drops what the client still sends, up to `max` bytes or `wait`: a socket
    /// closed with unread data is reset, and the reset may destroy the error just sent
    /// before the client reads it.
    pub async fn discard_input(&mut self, max: usize, wait: std::time::Duration) {
        let mut left = max.saturating_sub(self.rbuf.len());
        self.rbuf.clear();
        let drain = async {
            let mut scratch = vec![0u8; 64 * 1024];
            while left > 0 {
                match self.stream.read(&mut scratch).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => left = left.saturating_sub(n),
                }
            }
        };
        let _ = tokio::time::timeout(wait, drain).await;
    }

    /// Reads whatever the client sends while a statement runs (a pipelined next command is
    /// kept for later); `Ok(0)` means the client closed the connection.
    pub async fn read_more(&mut self) -> std::io::Result<usize> {
        if self.rbuf.capacity() - self.rbuf.len() < 1024 {
            self.rbuf.reserve(16 * 1024);
        }
        let n = self.stream.read_buf(&mut self.rbuf).await?;
        self.bytes_in += n as u64;
        Ok(n)
    }

    /// Takes the bytes read from the client and not consumed yet (a fast_forward session
    /// passes them on before it relays the socket itself).
    pub fn take_buffered(&mut self) -> BytesMut {
        self.rbuf.split()
    }

    /// Whether bytes of a next command are already buffered (pipelining clients).
    pub fn has_buffered(&self) -> bool {
        self.rbuf.has_remaining()
    }

    /// Sends what was built in `wbuf`.
    pub async fn flush_wbuf(&mut self) -> std::io::Result<()> {
        if !self.wbuf.is_empty() {
            self.bytes_out += self.wbuf.len() as u64;
            write_all_timed(
                &mut self.stream,
                &self.wbuf,
                self.write_timeout_s,
                self.killed.as_ref(),
            )
            .await?;
            self.wbuf.clear();
        }
        Ok(())
    }

    /// Sends an ERR packet.
    pub async fn send_err(&mut self, seq: u8, err: &ErrInfo) -> std::io::Result<()> {
        err.write(&mut self.wbuf, seq);
        self.flush_wbuf().await
    }

    /// Sends an OK packet.
    pub async fn send_ok(&mut self, seq: u8, ok: &OkInfo) -> std::io::Result<()> {
        write_ok(&mut self.wbuf, seq, ok, b"");
        self.flush_wbuf().await
    }
}
