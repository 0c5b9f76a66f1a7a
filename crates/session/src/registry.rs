//! Every live client session by id: for KILL, the process list and connection limits.

use crate::activity::Activity;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use weir_pool::{LoginTemplate, ServerState};

/// What a session is running on a backend right now (for KILL QUERY).
#[derive(Clone)]
pub struct Running {
    /// The server.
    pub server: Arc<ServerState>,
    /// Backend thread id.
    pub backend_thread: u32,
    /// weir's end of the backend connection.
    pub local: Option<std::net::SocketAddr>,
    /// How to log in to that server as the session's user.
    pub login: Arc<LoginTemplate>,
    /// The connection's count of KILL QUERYs weir sent (`BackendConn::kill_queries`).
    pub kill_queries: Arc<AtomicU64>,
}

/// The shared view of one session.
pub struct SessionHandle {
    /// weir's connection id, shown to the client as its thread id.
    pub id: u32,
    /// Authenticated user ('' before authentication).
    pub user: Mutex<String>,
    /// Client address.
    pub host: String,
    /// Client port (0 for Unix sockets).
    pub port: u16,
    /// Index of the worker thread (event loop) the session runs on.
    pub worker: u32,
    /// Cancelled to end the session (KILL CONNECTION).
    pub kill: CancellationToken,
    /// Set by a KILL CONNECTION before `kill` is cancelled and the killer answered: read
    /// before each command (an atomic load, where `kill.is_cancelled()` takes a lock).
    pub killed: AtomicBool,
    /// Cancelled by a KILL CONNECTION only (`kill` is also cancelled when weir shuts down,
    /// where replies under way must still reach their clients): ends a write to a client
    /// that reads nothing.
    pub killed_write: CancellationToken,
    /// The statement running on a backend, if any.
    pub running: Mutex<Option<Running>>,
    /// A client asked for a KILL QUERY of this session's command: an ERR 1317 it gets is
    /// its own, not the effect of a KILL meant for a statement before it on a pipe. Cleared
    /// when the session starts its next command.
    pub kill_query_requested: AtomicBool,
    /// A KILL QUERY (or KILL) came while the command had no statement on a backend thread to
    /// stop: it waits for a connection or for its turn on a pipe, or is on its way there. The
    /// session ends the command with ERR 1317 instead of running it. Cleared with
    /// `kill_query_requested`. Changed under `running`'s lock, so that a statement is either
    /// published there for the KILL or stopped by its session, never neither.
    kill_query_pending: AtomicBool,
    /// Wakes a session waiting for a connection or its turn when `kill_query_pending` is set.
    kill_query_wake: Notify,
    /// What the session is doing (processlist); only the session writes it.
    pub(crate) activity: Mutex<Activity>,
    /// Bytes read from the client so far, as last published by the session (which alone
    /// writes it, at each command and at its end: no shared cache line per query).
    pub bytes_in: AtomicU64,
    /// Bytes sent to the client so far, published as `bytes_in`.
    pub bytes_out: AtomicU64,
}

impl SessionHandle {
    /// KILL QUERY of the session's command: the statement to stop on a backend thread (the
    /// KILL already counted as started on its connection: stop it with
    /// `exec::kill_query_marked`), or `None` when it has none there yet. The session then ends the command with ERR 1317
    /// itself, at once if it waits for a connection or for its turn on a pipe, else before
    /// its statement would reach a backend. A KILL never waits for the session: it goes to
    /// the server over a connection of its own, outside the pool.
    pub fn kill_query(&self) -> Option<Running> {
        let running = self.mark_query_killed();
        self.wake_query_killed();
        running
    }

    /// The first half of [`SessionHandle::kill_query`]: the command is marked killed (a
    /// session about to send it to a backend stops), but one waiting for a connection or for
    /// its turn is not woken yet ([`SessionHandle::wake_query_killed`]).
    pub fn mark_query_killed(&self) -> Option<Running> {
        self.kill_query_requested.store(true, Ordering::SeqCst);
        let running = self.running.lock();
        match running.as_ref() {
            None => self.kill_query_pending.store(true, Ordering::SeqCst),
            // Counted before the session can say its statement ended (under this lock):
            // then it sees the KILL under way and keeps the connection from other clients.
            Some(r) => {
                r.kill_queries
                    .fetch_add(crate::exec::KILL_STARTED, Ordering::Relaxed);
            }
        }
        running.clone()
    }

    /// Wakes a session waiting for a connection or its turn whose command was marked killed.
    pub fn wake_query_killed(&self) {
        self.kill_query_wake.notify_waiters();
    }

    /// Publishes the statement the session is about to run on a backend thread, for KILL
    /// QUERY; false when a KILL QUERY came for the command before (nothing is published).
    pub fn start_running(&self, r: Running) -> bool {
        let mut running = self.running.lock();
        if self.kill_query_pending.load(Ordering::SeqCst) {
            return false;
        }
        *running = Some(r);
        true
    }

    /// Whether a KILL QUERY came for the command while it had no statement on a backend.
    pub fn kill_query_pending(&self) -> bool {
        self.kill_query_pending.load(Ordering::SeqCst)
    }

    /// Resolves once a KILL QUERY is pending for the command (see
    /// [`SessionHandle::kill_query`]).
    pub async fn query_killed(&self) {
        loop {
            let notified = self.kill_query_wake.notified();
            tokio::pin!(notified);
            // Registered before the check: a KILL between the two still wakes it.
            notified.as_mut().enable();
            if self.kill_query_pending() {
                return;
            }
            notified.await;
        }
    }

    /// Publishes the client's byte counts (see `bytes_in`).
    pub fn publish_bytes(&self, bytes_in: u64, bytes_out: u64) {
        self.bytes_in.store(bytes_in, Ordering::Relaxed);
        self.bytes_out.store(bytes_out, Ordering::Relaxed);
    }

    /// A new command: KILL QUERYs that came before are not for it (on the server too, a
    /// KILL QUERY of an idle thread stops nothing).
    pub fn new_command(&self) {
        // Loads first: no write to a shared cache line per command in the common case.
        if self.kill_query_pending.load(Ordering::Relaxed) {
            let _running = self.running.lock();
            self.kill_query_pending.store(false, Ordering::SeqCst);
        }
        if self.kill_query_requested.load(Ordering::Relaxed) {
            self.kill_query_requested.store(false, Ordering::SeqCst);
        }
    }
}

/// All sessions.
#[derive(Default)]
pub struct Registry {
    next_id: AtomicU32,
    sessions: Mutex<HashMap<u32, Arc<SessionHandle>>>,
    per_user: Mutex<HashMap<String, u32>>,
    /// Client bytes (read, sent) of the sessions that ended; changed under `sessions`' lock,
    /// so that [`Registry::frontend_bytes`] counts a session exactly once.
    ended_bytes: (AtomicU64, AtomicU64),
}

/// Removes the session from the registry when dropped.
pub struct Registration {
    registry: Arc<Registry>,
    /// The handle.
    pub handle: Arc<SessionHandle>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        {
            let mut sessions = self.registry.sessions.lock();
            sessions.remove(&self.handle.id);
            let (bytes_in, bytes_out) = &self.registry.ended_bytes;
            bytes_in.fetch_add(
                self.handle.bytes_in.load(Ordering::Relaxed),
                Ordering::Relaxed,
            );
            bytes_out.fetch_add(
                self.handle.bytes_out.load(Ordering::Relaxed),
                Ordering::Relaxed,
            );
        }
        let user = self.handle.user.lock().clone();
        if !user.is_empty() {
            self.registry.leave_user(&user);
        }
    }
}

impl Registry {
    /// Registers a new session of the client at `host`:`port`, on the calling worker.
    pub fn register(
        self: &Arc<Self>,
        host: String,
        port: u16,
        parent: &CancellationToken,
    ) -> Registration {
        let id = loop {
            let id = self.next_id.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if id != 0 && !self.sessions.lock().contains_key(&id) {
                break id;
            }
        };
        let handle = Arc::new(SessionHandle {
            id,
            user: Mutex::new(String::new()),
            host,
            port,
            worker: u32::try_from(weir_pool::worker::current()).unwrap_or(u32::MAX),
            kill: parent.child_token(),
            running: Mutex::new(None),
            kill_query_requested: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            killed_write: CancellationToken::new(),
            kill_query_pending: AtomicBool::new(false),
            kill_query_wake: Notify::new(),
            activity: Mutex::new(Activity::new(Instant::now())),
            bytes_in: AtomicU64::new(0),
            bytes_out: AtomicU64::new(0),
        });
        self.sessions.lock().insert(id, handle.clone());
        Registration {
            registry: self.clone(),
            handle,
        }
    }

    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.sessions.lock().len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Looks a session up.
    pub fn get(&self, id: u32) -> Option<Arc<SessionHandle>> {
        self.sessions.lock().get(&id).cloned()
    }

    /// Bytes (read from, sent to) clients since weir started, as far as their sessions
    /// published them (Queries_frontends_bytes_recv / _sent).
    pub fn frontend_bytes(&self) -> (u64, u64) {
        let sessions = self.sessions.lock();
        let (mut bytes_in, mut bytes_out) = (
            self.ended_bytes.0.load(Ordering::Relaxed),
            self.ended_bytes.1.load(Ordering::Relaxed),
        );
        for h in sessions.values() {
            bytes_in += h.bytes_in.load(Ordering::Relaxed);
            bytes_out += h.bytes_out.load(Ordering::Relaxed);
        }
        (bytes_in, bytes_out)
    }

    /// All sessions.
    pub fn all(&self) -> Vec<Arc<SessionHandle>> {
        self.sessions.lock().values().cloned().collect()
    }

    /// Counts a login of `user`; false (and nothing counted) when that reaches `max`.
    pub fn enter_user(&self, user: &str, max: u32) -> bool {
        let mut m = self.per_user.lock();
        let n = m.entry(user.to_string()).or_insert(0);
        if *n >= max {
            return false;
        }
        *n += 1;
        true
    }

    /// Logged-in sessions per user (stats_mysql_users).
    pub fn user_connections(&self) -> HashMap<String, u32> {
        self.per_user.lock().clone()
    }

    /// Releases a login counted by [`Registry::enter_user`].
    pub fn leave_user(&self, user: &str) {
        let mut m = self.per_user.lock();
        if let Some(n) = m.get_mut(user) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                m.remove(user);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;
    use weir_backend::Credential;
    use weir_pool::{Pool, ServerSpec, ServerStatus};

    fn running() -> Running {
        let pool = Pool::default();
        pool.apply_servers(&[ServerSpec {
            hostgroup: 0,
            hostname: "db".into(),
            port: 3306,
            status: ServerStatus::Online,
            weight: 1,
            max_connections: 1,
            max_replication_lag: 0,
        }]);
        Running {
            server: pool.servers()[0].clone(),
            backend_thread: 7,
            local: None,
            login: Arc::new(LoginTemplate::new(
                "app",
                Credential::Clear("x".into()),
                None,
            )),
            kill_queries: Arc::default(),
        }
    }

    #[test]
    fn kill_query_stops_a_running_statement_on_its_backend_thread() {
        let registry = Arc::new(Registry::default());
        let reg = registry.register("h".into(), 1, &CancellationToken::new());
        let h = &reg.handle;
        assert!(h.start_running(running()));
        let r = h.kill_query().unwrap();
        assert_eq!(r.backend_thread, 7);
        assert!(!h.kill_query_pending());
        assert!(h.kill_query_requested.load(Ordering::SeqCst));
        // Counted as under way on the connection before the session can see its statement
        // end: until it lands, the connection serves no other client.
        assert!(crate::exec::kill_under_way(
            r.kill_queries.load(Ordering::Relaxed)
        ));
        r.kill_queries
            .fetch_add(crate::exec::KILL_LANDED, Ordering::Relaxed);
        assert!(!crate::exec::kill_under_way(
            r.kill_queries.load(Ordering::Relaxed)
        ));
    }

    #[tokio::test]
    async fn kill_query_of_a_waiting_statement_wakes_it_and_keeps_it_off_the_backend() {
        let registry = Arc::new(Registry::default());
        let reg = registry.register("h".into(), 1, &CancellationToken::new());
        let h = reg.handle.clone();
        let waiter = tokio::spawn({
            let h = h.clone();
            async move { h.query_killed().await }
        });
        tokio::task::yield_now().await;
        assert!(h.kill_query().is_none());
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        // Already killed: resolves at once, and the statement never starts.
        h.query_killed().await;
        assert!(!h.start_running(running()));
        assert!(h.running.lock().is_none());
        // The next command is not concerned.
        h.new_command();
        assert!(!h.kill_query_pending());
        assert!(!h.kill_query_requested.load(Ordering::SeqCst));
        assert!(h.start_running(running()));
    }
}
