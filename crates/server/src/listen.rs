//! Listeners on every configured interface (TCP and Unix sockets) and their accept loops.

use crate::StartError;
use std::sync::Arc;
use tokio::net::{TcpListener, UnixListener};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use weir_backend::Stream;
use weir_config::ListenAddr;
use weir_session::Shared;

/// A bound listener.
pub enum Listener {
    /// TCP.
    Tcp(TcpListener),
    /// Unix socket (the path is removed on shutdown).
    Unix(UnixListener, std::path::PathBuf),
}

/// Binds every interface; any failure stops startup with the address in the message.
pub async fn bind_all(addrs: &[ListenAddr]) -> Result<Vec<Listener>, StartError> {
    let mut out = Vec::new();
    for a in addrs {
        match a {
            ListenAddr::Tcp(hp) => {
                let l = bind_tcp(hp).await.map_err(|e| StartError::Io {
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
                let l = UnixListener::bind(p).map_err(|e| StartError::Io {
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

async fn bind_tcp(hp: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for addr in tokio::net::lookup_host(hp).await? {
        let sock = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            Some(socket2::Protocol::TCP),
        )?;
        sock.set_reuse_address(true)?;
        sock.set_nonblocking(true)?;
        match sock.bind(&addr.into()) {
            Ok(()) => {
                sock.listen(1024)?;
                return TcpListener::from_std(sock.into());
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("address resolves to nothing")))
}

/// Accepts until `stop` is cancelled, one session task per connection.
pub async fn accept_loop(
    l: Listener,
    shared: Arc<Shared>,
    tracker: TaskTracker,
    stop: CancellationToken,
) {
    loop {
        let accepted = match &l {
            Listener::Tcp(t) => tokio::select! {
                _ = stop.cancelled() => break,
                r = t.accept() => r.map(|(s, _)| {
                    let _ = s.set_nodelay(true);
                    Stream::Tcp(s)
                }),
            },
            Listener::Unix(u, _) => tokio::select! {
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
    if let Listener::Unix(_, p) = &l {
        let _ = std::fs::remove_file(p);
    }
}
