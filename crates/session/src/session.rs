//! The session: accept → handshake → command loop → cleanup, and the backend connection it
//! holds between statements only when something ties it there.

use crate::auth::{handshake, LoginError};
use crate::client::{ClientConn, ClientError};
use crate::registry::{Running, SessionHandle};
use crate::{GlobalStats, Shared};
use std::sync::Arc;
use weir_backend::{BackendError, Stream, CORRECTNESS_CAPS};
use weir_config::User;
use weir_pool::{LoginTemplate, PoolError, PoolKey, PooledConn};
use weir_wire::msg::ErrInfo;
use weir_wire::{errcode, status};

/// One client session.
pub struct Session {
    pub(crate) shared: Arc<Shared>,
    pub(crate) handle: Arc<SessionHandle>,
    pub(crate) client: ClientConn,
    pub(crate) user: Arc<User>,
    /// How to log in to backends as this client; shared with the registry (cheap to clone).
    pub(crate) login: Arc<LoginTemplate>,
    /// Schema the client is in; brought onto whichever backend runs its next statement.
    pub(crate) schema: Option<String>,
    pub(crate) hostgroup: u32,
    /// The backend connection held across statements, if any.
    pub(crate) backend: Option<PooledConn>,
    /// Reasons (weir_sql::Pin bits) that keep `backend` with this session until it ends.
    pub(crate) pins: u32,
    /// Statements left during which the connection stays after an auto-increment insert.
    pub(crate) keep_for: u32,
}

/// What the command loop does next.
pub(crate) enum Flow {
    Continue,
    Quit,
}

/// Serves one accepted client connection until it ends.
pub async fn serve(shared: Arc<Shared>, stream: Stream) {
    let mut client = ClientConn::new(stream);
    GlobalStats::inc(&shared.stats.client_connections_created);
    let runtime = shared.runtime.load_full();
    let registration = shared
        .registry
        .register(client.host.clone(), &shared.shutdown);
    let handle = registration.handle.clone();
    if shared.registry.len() > runtime.mysql.max_connections as usize {
        GlobalStats::inc(&shared.stats.client_connections_aborted);
        let e = ErrInfo::new(errcode::ER_CON_COUNT_ERROR, "08004", "Too many connections");
        let _ = client.send_err(0, &e).await;
        return;
    }
    let timeout = runtime.mysql.connect_timeout_client;
    let login =
        match tokio::time::timeout(timeout, handshake(&shared, &mut client, handle.id)).await {
            Ok(Ok(l)) => l,
            Ok(Err(LoginError::Refused)) | Ok(Err(LoginError::Io(_))) => {
                GlobalStats::inc(&shared.stats.client_connections_aborted);
                return;
            }
            Err(_) => {
                GlobalStats::inc(&shared.stats.client_connections_aborted);
                tracing::info!(host = %client.host, "client handshake timed out");
                return;
            }
        };
    if !shared
        .registry
        .enter_user(&login.user.username, login.user.max_connections)
    {
        GlobalStats::inc(&shared.stats.client_connections_aborted);
        let e = ErrInfo::new(
            errcode::ER_CON_COUNT_ERROR,
            "08004",
            format!(
                "Too many connections for user '{}' (max_connections {})",
                login.user.username, login.user.max_connections
            ),
        );
        let _ = client.send_err(login.next_seq, &e).await;
        return;
    }
    *handle.user.lock() = login.user.username.clone();
    let schema = login
        .database
        .clone()
        .or_else(|| login.user.default_schema.clone());
    let key = PoolKey {
        username: login.user.username.as_str().into(),
        capabilities: client.caps & CORRECTNESS_CAPS,
        collation: login.collation,
    };
    let mut session = Session {
        hostgroup: login.user.default_hostgroup,
        login: Arc::new(LoginTemplate {
            key,
            credential: login.credential.clone(),
            schema: schema.clone(),
        }),
        shared,
        handle,
        client,
        user: login.user.clone(),
        schema,
        backend: None,
        pins: 0,
        keep_for: 0,
    };
    let ok = weir_wire::msg::OkInfo {
        status: status::AUTOCOMMIT,
        ..Default::default()
    };
    if session.client.send_ok(login.next_seq, &ok).await.is_err() {
        return;
    }
    session.run().await;
    session.finish().await;
    drop(registration);
}

impl Session {
    async fn run(&mut self) {
        loop {
            let max = self.shared.runtime.load().mysql.max_allowed_packet as usize;
            let cmd = tokio::select! {
                biased;
                r = self.client.read_command(max) => r,
                _ = self.handle.kill.cancelled() => break,
            };
            let cmd = match cmd {
                Ok(c) => c,
                Err(ClientError::TooLarge(n)) => {
                    let e = ErrInfo::new(
                        errcode::ER_NET_PACKET_TOO_LARGE,
                        "08S01",
                        format!(
                            "Got a packet bigger than 'max_allowed_packet' bytes ({n} > {max})"
                        ),
                    );
                    let _ = self.client.send_err(1, &e).await;
                    break;
                }
                Err(_) => break,
            };
            GlobalStats::inc(&self.shared.stats.questions);
            match self.dispatch(cmd).await {
                Ok(Flow::Continue) => {}
                Ok(Flow::Quit) => break,
                Err(e) => {
                    tracing::debug!(session = self.handle.id, error = %e, "session ends");
                    break;
                }
            }
        }
    }

    /// Gives back or closes the held backend connection when the client leaves.
    async fn finish(&mut self) {
        if let Some(b) = self.backend.take() {
            // A connection with state weir does not follow, or an open transaction, never goes
            // back to the pool: closing it makes the server roll back and forget everything.
            if self.pins != 0 || b.conn_ref().in_transaction() {
                b.close().await;
            } else {
                self.shared.pool.checkin(b, true);
            }
        }
    }

    /// The backend connection for the next statement: the held one, or one from the pool
    /// with the client's schema in force. On failure the client has been sent an ERR.
    pub(crate) async fn acquire(
        &mut self,
        seq: u8,
    ) -> Result<Option<&mut PooledConn>, ClientError> {
        if let Some(b) = &self.backend {
            if b.server().must_close() {
                let tied = self.pins != 0 || b.conn_ref().in_transaction();
                if let Some(b) = self.backend.take() {
                    b.close().await;
                }
                if tied {
                    let e = ErrInfo::new(
                        errcode::ER_LOST_BACKEND,
                        "HY000",
                        "Lost connection to backend server: it was set OFFLINE_HARD",
                    );
                    self.client.send_err(seq, &e).await?;
                    return Err(ClientError::Closed);
                }
            }
        }
        if self.backend.is_none() {
            match self.shared.pool.checkout(self.hostgroup, &self.login).await {
                Ok(c) => self.backend = Some(c),
                Err(e) => {
                    GlobalStats::inc(&self.shared.stats.backend_errors);
                    self.client.send_err(seq, &pool_error(&e)).await?;
                    return Ok(None);
                }
            }
        }
        // Bring the client's schema onto this connection.
        let want = self.schema.clone();
        if let (Some(want), Some(b)) = (want, self.backend.as_mut()) {
            if b.conn_ref().schema.as_deref() != Some(want.as_str()) {
                match b.conn().init_db(&want).await {
                    Ok(()) => {}
                    Err(BackendError::Server(e)) => {
                        self.client.send_err(seq, &e).await?;
                        self.release();
                        return Ok(None);
                    }
                    Err(e) => {
                        self.drop_backend().await;
                        self.client.send_err(seq, &lost_backend(&e)).await?;
                        return Ok(None);
                    }
                }
            }
        }
        Ok(self.backend.as_mut())
    }

    /// Records the statement running on the backend (for KILL QUERY).
    pub(crate) fn mark_running(&self) {
        if let Some(b) = &self.backend {
            *self.handle.running.lock() = Some(Running {
                server: b.server().clone(),
                backend_thread: b.conn_ref().connection_id,
                login: self.login.clone(),
            });
        }
    }

    pub(crate) fn clear_running(&self) {
        *self.handle.running.lock() = None;
    }

    /// Returns the held connection to the pool unless something ties it to the session.
    pub(crate) fn release(&mut self) {
        let Some(b) = &self.backend else { return };
        let in_trans = b.conn_ref().in_transaction();
        if self.pins != 0 || in_trans {
            return;
        }
        if self.keep_for > 0 && !b.server().draining() {
            return;
        }
        if let Some(b) = self.backend.take() {
            self.shared.pool.checkin(b, true);
        }
    }

    /// Closes the held connection (after an error on it).
    pub(crate) async fn drop_backend(&mut self) {
        if let Some(b) = self.backend.take() {
            b.close().await;
        }
    }

    /// Whether the session holds state on its backend that would be lost with the connection.
    pub(crate) fn tied(&self) -> bool {
        self.pins != 0
            || self
                .backend
                .as_ref()
                .is_some_and(|b| b.conn_ref().status & status::IN_TRANS != 0)
    }
}

/// The client-facing error for a pool failure.
pub(crate) fn pool_error(e: &PoolError) -> ErrInfo {
    match e {
        PoolError::NoServer { .. } => {
            ErrInfo::new(errcode::ER_PROXY_NO_BACKEND, "HY000", e.to_string())
        }
        PoolError::Refused(BackendError::Server(err)) => err.clone(),
        PoolError::Refused(other) => ErrInfo::new(
            errcode::ER_ACCESS_DENIED_ERROR,
            "28000",
            format!("weir could not log in to the backend: {other}"),
        ),
        PoolError::ConnectFailed { .. } => {
            ErrInfo::new(errcode::ER_PROXY_NO_BACKEND, "HY000", e.to_string())
        }
        PoolError::ShuttingDown => ErrInfo::new(
            errcode::ER_SERVER_SHUTDOWN,
            "08S01",
            "weir is shutting down",
        ),
    }
}

/// The client-facing error for a backend that failed mid-statement.
pub(crate) fn lost_backend(e: &dyn std::fmt::Display) -> ErrInfo {
    ErrInfo::new(
        errcode::ER_LOST_BACKEND,
        "HY000",
        format!("Lost connection to backend server during query: {e}"),
    )
}
