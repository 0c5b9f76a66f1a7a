//! A byte stream that is either TCP or a Unix socket, for clients and backends alike.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

/// TCP or Unix-socket stream.
#[derive(Debug)]
pub enum Stream {
    /// A TCP connection (TCP_NODELAY set).
    Tcp(TcpStream),
    /// A Unix-domain socket connection.
    Unix(UnixStream),
}

impl Stream {
    /// Peer address for logs and error messages ("localhost" for Unix sockets).
    pub fn peer_host(&self) -> String {
        match self {
            Stream::Tcp(s) => s
                .peer_addr()
                .map(|a| a.ip().to_string())
                .unwrap_or_else(|_| "unknown".into()),
            Stream::Unix(_) => "localhost".into(),
        }
    }

    /// Peer port (0 for Unix sockets).
    pub fn peer_port(&self) -> u16 {
        match self {
            Stream::Tcp(s) => s.peer_addr().map(|a| a.port()).unwrap_or(0),
            Stream::Unix(_) => 0,
        }
    }

    /// Local address and port the peer connected to (query rules' proxy_addr/proxy_port);
    /// the socket path and 0 for Unix sockets.
    pub fn local_addr(&self) -> (String, u16) {
        match self {
            Stream::Tcp(s) => s
                .local_addr()
                .map(|a| (a.ip().to_string(), a.port()))
                .unwrap_or_else(|_| (String::new(), 0)),
            Stream::Unix(s) => (
                s.local_addr()
                    .ok()
                    .and_then(|a| a.as_pathname().map(|p| p.display().to_string()))
                    .unwrap_or_default(),
                0,
            ),
        }
    }
}

impl Stream {
    /// A second handle on the socket, for writing from elsewhere while this one is read: it
    /// shares the socket's non-blocking mode, so a write that cannot go at once fails with
    /// `WouldBlock` instead of waiting.
    pub fn writer(&self) -> io::Result<socket2::Socket> {
        match self {
            Stream::Tcp(s) => socket2::SockRef::from(s).try_clone(),
            Stream::Unix(s) => socket2::SockRef::from(s).try_clone(),
        }
    }

    /// Completes when the peer has closed the socket (or it failed), without reading anything:
    /// bytes waiting to be read mean the peer is there, and this then never completes.
    pub async fn hung_up(&self) {
        loop {
            let ready = match self {
                Stream::Tcp(s) => s.ready(tokio::io::Interest::READABLE).await,
                Stream::Unix(s) => s.ready(tokio::io::Interest::READABLE).await,
            };
            if ready.is_err() {
                return;
            }
            let mut byte = [std::mem::MaybeUninit::<u8>::uninit()];
            let peeked = match self {
                Stream::Tcp(s) => s.try_io(tokio::io::Interest::READABLE, || {
                    socket2::SockRef::from(s).peek(&mut byte)
                }),
                Stream::Unix(s) => s.try_io(tokio::io::Interest::READABLE, || {
                    socket2::SockRef::from(s).peek(&mut byte)
                }),
            };
            match peeked {
                Ok(0) => return,
                // The next command is already there: readiness would stay set.
                Ok(_) => std::future::pending::<()>().await,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    }

    /// Writes what the socket takes now without waiting: `Err(WouldBlock)` when it takes
    /// nothing.
    pub fn try_write(&self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_write(bytes),
            Stream::Unix(s) => s.try_write(bytes),
        }
    }

    /// Reads what is already available without waiting: `Err(WouldBlock)` when nothing is.
    pub fn try_read_buf(&self, buf: &mut bytes::BytesMut) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.try_read_buf(buf),
            Stream::Unix(s) => s.try_read_buf(buf),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Unix(s) => Pin::new(s).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
