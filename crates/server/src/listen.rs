//! Listeners on every configured interface (TCP and Unix sockets) and their accept loops.

use crate::StartError;
use std::sync::Arc;
use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use weir_backend::Stream;
use weir_config::ListenAddr;
use weir_session::Shared;

/// A bound listener, not yet tied to an event loop; each worker gets its own duplicate.
pub enum Listener {
    /// TCP.
    Tcp(std::net::TcpListener),
    /// Unix socket (the path is removed on shutdown).
    Unix(std::os::unix::net::UnixListener, std::path::PathBuf),
}

/// A listener registered with a worker's event loop.
pub enum AsyncListener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix socket.
    Unix(UnixListener),
}

impl Listener {
    /// A duplicate of the socket for another worker.
    pub fn try_clone(&self) -> std::io::Result<Listener> {
        Ok(match self {
            Listener::Tcp(l) => Listener::Tcp(l.try_clone()?),
            Listener::Unix(l, p) => Listener::Unix(l.try_clone()?, p.clone()),
        })
    }

    /// Registers it with the current worker's event loop.
    pub fn into_tokio(self) -> std::io::Result<AsyncListener> {
        Ok(match self {
            Listener::Tcp(l) => {
                l.set_nonblocking(true)?;
                AsyncListener::Tcp(TcpListener::from_std(l)?)
            }
            Listener::Unix(l, _) => {
                l.set_nonblocking(true)?;
                AsyncListener::Unix(UnixListener::from_std(l)?)
            }
        })
    }

    /// Removes a Unix socket's file.
    pub fn remove_socket_file(&self) {
        if let Listener::Unix(_, p) = self {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Binds every interface; any failure stops startup with the address in the message.
pub fn bind_all(addrs: &[ListenAddr]) -> Result<Vec<Listener>, StartError> {
    let mut out = Vec::new();
    for a in addrs {
        match a {
            ListenAddr::Tcp(hp) => {
                let l = bind_tcp(hp).map_err(|e| StartError::Io {
                    context: format!("cannot listen on {hp}"),
                    source: e,
                })?;
                tracing::info!(address = %hp, "listening");
                out.push(Listener::Tcp(l));
            }
            ListenAddr::Unix(p) => {
                // A stale socket file from a previous run would make bind fail.
                if p.exists() && std::os::unix::net::UnixStream::connect(p).is_err() {
                    let _ = std::fs::remove_file(p);
                }
                let l = std::os::unix::net::UnixListener::bind(p).map_err(|e| StartError::Io {
                    context: format!("cannot listen on {}", p.display()),
                    source: e,
                })?;
                tracing::info!(path = %p.display(), "listening");
                out.push(Listener::Unix(l, p.clone()));
            }
        }
    }
    Ok(out)
}

fn bind_tcp(hp: &str) -> std::io::Result<std::net::TcpListener> {
    use std::net::ToSocketAddrs;
    let mut last = None;
    for addr in hp.to_socket_addrs()? {
        let sock = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )?;
        sock.set_reuse_address(true)?;
        match sock.bind(&addr.into()) {
            Ok(()) => {
                sock.listen(1024)?;
                return Ok(sock.into());
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("address resolves to nothing")))
}

/// Accepts until `stop` is cancelled, one session task per connection.
pub async fn accept_loop(
    l: AsyncListener,
    shared: Arc<Shared>,
    tracker: TaskTracker,
    stop: CancellationToken,
) {
    loop {
        let accepted = match &l {
            AsyncListener::Tcp(t) => tokio::select! {
                _ = stop.cancelled() => break,
                r = t.accept() => r.map(|(s, _)| {
                    let _ = s.set_nodelay(true);
                    Stream::Tcp(s)
                }),
            },
            AsyncListener::Unix(u) => tokio::select! {
                _ = stop.cancelled() => break,
                r = u.accept() => r.map(|(s, _)| Stream::Unix(s)),
            },
        };
        match accepted {
            Ok(stream) => {
                let shared = shared.clone();
                tracker.spawn(weir_session::serve(shared, stream));
            }
            Err(e) => {
                // EMFILE and friends: back off instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}
