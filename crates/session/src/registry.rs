//! Every live client session by id: for KILL, the process list and connection limits.

use crate::activity::Activity;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
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
    /// The statement running on a backend, if any.
    pub running: Mutex<Option<Running>>,
    /// A client asked for a KILL QUERY of this session's statement: an ERR 1317 it gets is
    /// its own, not the effect of a KILL meant for a statement before it on a pipe.
    pub kill_query_requested: AtomicBool,
    /// What the session is doing (processlist); only the session writes it.
    pub(crate) activity: Mutex<Activity>,
}

/// All sessions.
#[derive(Default)]
pub struct Registry {
    next_id: AtomicU32,
    sessions: Mutex<HashMap<u32, Arc<SessionHandle>>>,
    per_user: Mutex<HashMap<String, u32>>,
}

/// Removes the session from the registry when dropped.
pub struct Registration {
    registry: Arc<Registry>,
    /// The handle.
    pub handle: Arc<SessionHandle>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.registry.sessions.lock().remove(&self.handle.id);
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
            activity: Mutex::new(Activity::new(Instant::now())),
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
