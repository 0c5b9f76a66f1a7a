//! Listeners on every configured interface (TCP and Unix sockets) and their accept loops.

use crate::StartError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
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
    addrs.iter().map(bind_one).collect()
}

/// Binds one interface.
pub fn bind_one(addr: &ListenAddr) -> Result<Listener, StartError> {
    match addr {
        ListenAddr::Tcp(hp) => {
            let l = bind_tcp(hp).map_err(|e| StartError::Io {
                context: format!("cannot listen on {hp}"),
                source: e,
            })?;
            tracing::info!(address = %hp, "listening");
            Ok(Listener::Tcp(l))
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
            Ok(Listener::Unix(l, p.clone()))
        }
    }
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

/// TCP keepalive on a client's socket when mysql-use_tcp_keepalive says so: a client that
/// vanished (a host down, a dropped route) is noticed even while idle.
fn keep_alive(s: &tokio::net::TcpStream, shared: &Shared) {
    let (on, idle) = {
        let rt = shared.runtime.load();
        (rt.mysql.use_tcp_keepalive, rt.mysql.tcp_keepalive_time)
    };
    if !on {
        return;
    }
    let sock = socket2::SockRef::from(s);
    let set = if idle.is_zero() {
        sock.set_keepalive(true)
    } else {
        sock.set_tcp_keepalive(&socket2::TcpKeepalive::new().with_time(idle))
    };
    if let Err(e) = set {
        tracing::debug!(error = %e, "TCP keepalive not set on a client connection");
    }
}

/// Accepts until `stop` is cancelled, one session task per connection. While `paused`
/// (PROXYSQL PAUSE), new clients get an error instead of a session.
pub async fn accept_loop(
    l: AsyncListener,
    shared: Arc<Shared>,
    tracker: TaskTracker,
    stop: CancellationToken,
    paused: Arc<AtomicBool>,
) {
    // Clients connect to the listener's own address unless it is bound to a wildcard: then
    // only the socket can tell (rules' proxy_addr), at one system call per connection.
    let local = match &l {
        AsyncListener::Tcp(t) => t.local_addr().ok().filter(|a| !a.ip().is_unspecified()),
        AsyncListener::Unix(_) => None,
    };
    loop {
        let accepted = match &l {
            AsyncListener::Tcp(t) => tokio::select! {
                _ = stop.cancelled() => break,
                r = t.accept() => r.map(|(s, peer)| {
                    let _ = s.set_nodelay(true);
                    keep_alive(&s, &shared);
                    (Stream::Tcp(s), Some(peer))
                }),
            },
            AsyncListener::Unix(u) => tokio::select! {
                _ = stop.cancelled() => break,
                r = u.accept() => r.map(|(s, _)| (Stream::Unix(s), None)),
            },
        };
        match accepted {
            Ok((stream, _)) if paused.load(Ordering::Relaxed) => {
                tracker.spawn(refuse_paused(stream));
            }
            Ok((stream, Some(peer))) => {
                let shared = shared.clone();
                tracker.spawn(weir_session::serve_tcp(shared, stream, peer, local));
            }
            Ok((stream, None)) => {
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

/// Tells a client arriving while weir is paused why it cannot connect. An ERR packet in
/// place of the greeting is what servers send when they refuse a connection outright.
async fn refuse_paused(mut stream: Stream) {
    let mut out = bytes::BytesMut::new();
    weir_wire::msg::ErrInfo::new(
        weir_wire::errcode::ER_SERVER_SHUTDOWN,
        "08S01",
        "weir is paused (PROXYSQL PAUSE): not accepting new connections until PROXYSQL RESUME",
    )
    .write(&mut out, 0);
    let _ = stream.write_all(&out).await;
    let _ = stream.shutdown().await;
}

/// Where an admin client connects from.
fn admin_peer_tcp(addr: std::net::SocketAddr) -> weir_admin::Peer {
    weir_admin::Peer {
        host: addr.ip().to_string(),
        local: addr.ip().is_loopback(),
    }
}

/// Accepts admin clients until `accepting` is cancelled (the address left
/// admin-mysql_ifaces, or weir stops); their connections end when `stop` is cancelled.
pub async fn admin_accept_loop(
    l: AsyncListener,
    admin: Arc<weir_admin::Admin>,
    accepting: CancellationToken,
    stop: CancellationToken,
) {
    loop {
        let stop2 = stop.clone();
        match &l {
            AsyncListener::Tcp(t) => {
                let r = tokio::select! {
                    _ = accepting.cancelled() => break,
                    r = t.accept() => r,
                };
                match r {
                    Ok((s, addr)) => {
                        let _ = s.set_nodelay(true);
                        let admin = admin.clone();
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = stop2.cancelled() => {}
                                _ = weir_admin::serve_connection(admin, s, admin_peer_tcp(addr)) => {}
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "admin accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
            AsyncListener::Unix(u) => {
                let r = tokio::select! {
                    _ = accepting.cancelled() => break,
                    r = u.accept() => r,
                };
                match r {
                    Ok((s, _)) => {
                        let admin = admin.clone();
                        let peer = weir_admin::Peer {
                            host: "localhost".into(),
                            local: true,
                        };
                        tokio::spawn(async move {
                            tokio::select! {
                                _ = stop2.cancelled() => {}
                                _ = weir_admin::serve_connection(admin, s, peer) => {}
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "admin accept failed");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    }
                }
            }
        }
    }
}
