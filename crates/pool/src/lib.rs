//! Hostgroups, live server status and pooled backend connections: pick a usable server by
//! weight, check a connection out for a statement, take it back when it is clean.
//!
//! The pool never parses SQL and never sees clients. Connections are pooled per
//! [`PoolKey`] (user, correctness-relevant capabilities), because a connection authenticated as
//! one user with one set of protocol options can only serve the same. The collation a
//! connection's handshake asked for is not part of the key: a statement can bring it to
//! another (`SET NAMES`), so a checkout prefers a connection with the client's collation and
//! takes one with another rather than opening a new one.
#![forbid(unsafe_code)]

mod server;
#[cfg(test)]
mod tests;
pub mod worker;

pub use server::{
    clock_ms, ServerSnapshot, ServerSpec, ServerState, ServerStats, ServerStatus, Shun,
};

use arc_swap::ArcSwap;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_backend::{BackendConn, BackendError, ConnectParams, Credential};

/// What a pooled connection must match to be reused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PoolKey {
    /// Backend user.
    pub username: Arc<str>,
    /// Capabilities from `weir_backend::pool_key_capabilities`.
    pub capabilities: u32,
    /// MariaDB extended capabilities the client negotiated (extended metadata changes the
    /// format of column definitions).
    pub mariadb_capabilities: u32,
}

/// How to log in when a new connection must be opened for a [`PoolKey`].
#[derive(Debug, Clone)]
pub struct LoginTemplate {
    /// The key the connection will be pooled under.
    pub key: PoolKey,
    /// Secret for `key.username`.
    pub credential: Credential,
    /// Schema to select at handshake.
    pub schema: Option<String>,
    /// Collation id of the client's handshake: a new connection's handshake asks for it, and
    /// idle connections with it are taken first.
    pub collation: u8,
    /// Whether the client's handshake had CLIENT_IGNORE_SPACE: the same, for the sql_mode it
    /// starts with.
    pub ignore_space: bool,
    /// Whether the client has multi-statements on (its handshake, then COM_SET_OPTION).
    pub multi_statements: bool,
}

impl PoolKey {
    /// Whether a connection pooled under `self` may serve a checkout of `want`.
    pub fn serves(&self, want: &PoolKey) -> bool {
        self.capabilities == want.capabilities
            && self.mariadb_capabilities == want.mariadb_capabilities
            && self.username == want.username
    }
}

impl LoginTemplate {
    /// A login as `username` with no protocol options, utf8mb4_general_ci (45) and nothing
    /// the session changes yet.
    pub fn new(username: &str, credential: Credential, schema: Option<String>) -> LoginTemplate {
        LoginTemplate {
            key: PoolKey {
                username: username.into(),
                capabilities: 0,
                mariadb_capabilities: 0,
            },
            credential,
            schema,
            collation: 45,
            ignore_space: false,
            multi_statements: false,
        }
    }

    /// The capabilities a new connection asks for on top of the key's: those the client's
    /// session has now, which a statement may change later (`weir_backend::SESSION_CAPS`).
    pub fn session_capabilities(&self) -> u32 {
        let bit = |on: bool, cap: u32| if on { cap } else { 0 };
        bit(self.ignore_space, weir_wire::cap::IGNORE_SPACE)
            | bit(self.multi_statements, weir_wire::cap::MULTI_STATEMENTS)
    }
}

/// Timeouts and limits the pool applies; replaced live on LOAD MYSQL VARIABLES.
#[derive(Debug, Clone)]
pub struct PoolSettings {
    /// Limit for one connect plus handshake (mysql-connect_timeout_server).
    pub connect_timeout: Duration,
    /// How long a statement waits for a usable server (mysql-connect_timeout_server_max).
    pub connect_timeout_max: Duration,
    /// Connect attempts before giving up (mysql-connect_retries_on_failure).
    pub connect_retries: u32,
    /// Share of max_connections kept idle per server (mysql-free_connections_pct).
    pub free_connections_pct: u32,
    /// Idle connections older than this are pinged before reuse (mysql-ping_interval_server_msec);
    /// zero: never.
    pub ping_interval: Duration,
    /// Connect errors within one second that shun a server (mysql-shun_on_failures; 0 = never).
    pub shun_on_failures: u32,
    /// How long such a server stays shunned (mysql-shun_recovery_time_sec).
    pub shun_recovery_time: Duration,
    /// Connections older than this are closed instead of reused
    /// (mysql-connection_max_age_ms; `None` = no limit).
    pub max_age: Option<Duration>,
    /// How long the ping of an idle connection before its reuse may take
    /// (mysql-ping_timeout_server); a connection that does not answer in time is closed.
    pub ping_timeout: Duration,
    /// Pause before another connect attempt after one failed (mysql-connect_retries_delay).
    pub connect_retries_delay: Duration,
    /// Connections with autocommit off are closed rather than pooled
    /// (mysql-autocommit_false_not_reusable).
    pub autocommit_false_not_reusable: bool,
    /// Statements run on every new connection before its first use (mysql-init_connect).
    pub init_connect: Option<Arc<str>>,
    /// Whether a connection whose charsets start at this collation id can be brought to
    /// another, and one of another brought to it: only then does a checkout take an idle
    /// connection of a collation other than the client's. Never, by default.
    pub collation_portable: fn(u8) -> bool,
    /// The monitor checks replication lag (mysql-monitor_enabled): a server with a
    /// max_replication_lag takes no traffic until its lag was read ([`Shun::LAG_UNKNOWN`]).
    pub lag_checked: bool,
}

impl PoolSettings {
    /// Whether `conn` has reached max_age.
    fn too_old(&self, conn: &BackendConn) -> bool {
        self.max_age
            .is_some_and(|max| conn.created.elapsed() >= max)
    }
}

impl Default for PoolSettings {
    fn default() -> Self {
        PoolSettings {
            connect_timeout: Duration::from_millis(3000),
            connect_timeout_max: Duration::from_millis(10000),
            connect_retries: 10,
            free_connections_pct: 10,
            ping_interval: Duration::from_millis(120_000),
            shun_on_failures: 5,
            shun_recovery_time: Duration::from_secs(10),
            max_age: None,
            ping_timeout: Duration::from_millis(500),
            init_connect: None,
            connect_retries_delay: Duration::from_millis(1),
            autocommit_false_not_reusable: false,
            collation_portable: |_| false,
            lag_checked: false,
        }
    }
}

/// Why no connection could be handed out.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// No usable server in the hostgroup within connect_timeout_server_max.
    #[error(
        "Max connect timeout reached while reaching hostgroup {hostgroup} after {waited_ms}ms"
    )]
    NoServer {
        /// Hostgroup asked for.
        hostgroup: u32,
        /// Time waited.
        waited_ms: u128,
    },
    /// The server refused the login (wrong backend credentials, unknown schema...).
    #[error("{0}")]
    Refused(BackendError),
    /// Every connect attempt failed.
    #[error("cannot connect to hostgroup {hostgroup}: {last}")]
    ConnectFailed {
        /// Hostgroup asked for.
        hostgroup: u32,
        /// The last failure.
        last: BackendError,
    },
    /// weir is shutting down.
    #[error("weir is shutting down")]
    ShuttingDown,
}

#[derive(Default)]
struct Topology {
    hostgroups: HashMap<u32, Vec<Arc<ServerState>>>,
    all: Vec<Arc<ServerState>>,
}

/// Counters over the pool's whole life: unlike the per-server ConnOK/ConnERR they survive
/// `stats_mysql_connection_pool_reset` and servers leaving the configuration
/// (stats_mysql_global's Server_Connections_*, MyHGM_myconnpoll_*, ConnPool_get_conn_*,
/// Queries_backends_bytes_*). The per-server ones are added here when their server goes.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    connects_ok: AtomicU64,
    connects_failed: AtomicU64,
    pub(crate) idle_found: AtomicU64,
    pub(crate) idle_found_other_worker: AtomicU64,
    pub(crate) idle_missed: AtomicU64,
    pub(crate) idle_returns: AtomicU64,
    pub(crate) bytes_sent: AtomicU64,
    pub(crate) bytes_recv: AtomicU64,
    /// Connections the pool opened that are gone (`BackendConn::close_counter`).
    pub(crate) closed: Arc<AtomicU64>,
}

/// A copy of the pool-wide totals since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolTotals {
    /// Backend connections opened since start.
    pub connects_ok: u64,
    /// Backend connect attempts that failed since start.
    pub connects_failed: u64,
    /// Looks for an idle connection (MyHGM_myconnpoll_get).
    pub idle_looks: u64,
    /// Looks that found one (MyHGM_myconnpoll_get_ok, ConnPool_get_conn_success).
    pub idle_found: u64,
    /// Of those, found among the connections of the checkout's own worker
    /// (ConnPool_get_conn_immediate).
    pub idle_found_own_worker: u64,
    /// Connections put back on the idle list (MyHGM_myconnpoll_push).
    pub idle_returns: u64,
    /// Bytes sent to backends (Queries_backends_bytes_sent).
    pub bytes_sent: u64,
    /// Bytes received from backends (Queries_backends_bytes_recv).
    pub bytes_recv: u64,
    /// Connections opened that are closed now, whatever closed them
    /// (MyHGM_myconnpoll_destroy).
    pub closed: u64,
    /// Connections open now (in use and idle), those to servers a LOAD removed while they
    /// drain included (Server_Connections_connected).
    pub open: u64,
}

/// All hostgroups and their connections.
pub struct Pool {
    topology: ArcSwap<Topology>,
    settings: ArcSwap<PoolSettings>,
    changed: Arc<tokio::sync::Notify>,
    totals: Arc<Totals>,
    /// Servers taken out of the configuration whose connections are still in use: their
    /// counters count in [`Pool::totals`] until they go (and are added to `totals`).
    retiring: parking_lot::Mutex<Vec<std::sync::Weak<ServerState>>>,
}

impl Default for Pool {
    fn default() -> Self {
        Self::new(PoolSettings::default())
    }
}

/// A connection checked out of the pool; return it with [`Pool::checkin`] or drop it to close.
pub struct PooledConn {
    // Boxed: a connection moves between the pool and sessions at every statement, and a
    // pointer moves for free where the struct would be copied.
    conn: Option<Box<BackendConn>>,
    server: Arc<ServerState>,
    key: PoolKey,
    /// [`ServerState::key_bucket`] of `key`: counted as in use there while checked out.
    bucket: usize,
}

impl PooledConn {
    /// The server this connection belongs to.
    pub fn server(&self) -> &Arc<ServerState> {
        &self.server
    }

    /// The connection.
    pub fn conn(&mut self) -> &mut BackendConn {
        // Only `take` empties it, and that consumes self.
        match self.conn.as_mut() {
            Some(c) => c,
            None => unreachable_conn(),
        }
    }

    /// The connection, read-only.
    pub fn conn_ref(&self) -> &BackendConn {
        match self.conn.as_ref() {
            Some(c) => c,
            None => unreachable_conn(),
        }
    }

    /// The key it is pooled under.
    pub fn key(&self) -> &PoolKey {
        &self.key
    }

    /// Closes the connection without returning it (a connection that saw an error).
    pub async fn close(mut self) {
        if let Some(mut c) = self.conn.take() {
            c.quit().await;
        }
    }
}

#[allow(clippy::panic)]
fn unreachable_conn() -> ! {
    panic!("PooledConn used after its connection was taken")
}

/// A slot reserved on a server for a checkout of key `bucket` (counted in use from now on,
/// so that the key's other checkouts know a connection is coming): given back unless it
/// becomes a [`PooledConn`] (no connection in the end, or the checkout dropped half way).
struct Reserved {
    server: Option<Arc<ServerState>>,
    bucket: usize,
}

impl Reserved {
    fn new(server: Arc<ServerState>, bucket: usize) -> Reserved {
        server.took_key(bucket);
        Reserved {
            server: Some(server),
            bucket,
        }
    }

    /// The connection exists: its [`PooledConn`] holds the slot from now on.
    fn into_pooled(mut self, conn: Box<BackendConn>, key: PoolKey) -> PooledConn {
        let server = match self.server.take() {
            Some(s) => s,
            None => unreachable_conn(),
        };
        PooledConn {
            conn: Some(conn),
            server,
            key,
            bucket: self.bucket,
        }
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            server.put_back_key(self.bucket);
            server.release_slot();
        }
    }
}

impl Drop for PooledConn {
    fn drop(&mut self) {
        // Returned or closed: the slot frees up.
        self.server.put_back_key(self.bucket);
        self.server.release_slot();
    }
}

/// How long after a server refused a connection for lack of room weir asks it for no other:
/// statements meanwhile take weir's connections to it as they come back.
const SERVER_FULL_RETRY: Duration = Duration::from_millis(100);

/// How long after closing one of its idle connections to make room on a full server weir
/// waits before it connects again: time for the server to see that connection go.
const ROOM_MADE_RETRY: Duration = Duration::from_millis(5);

/// The error code when a connect failed only because the server has no room for another
/// connection now: ER_CON_COUNT_ERROR (max_connections), ER_TOO_MANY_USER_CONNECTIONS
/// (max_user_connections), ER_USER_LIMIT_REACHED (the account's MAX_USER_CONNECTIONS).
fn connections_exhausted(e: &BackendError) -> Option<u16> {
    match e {
        BackendError::Server(info) if matches!(info.code, 1040 | 1203 | 1226) => Some(info.code),
        _ => None,
    }
}

/// How long, at most, a statement waits for a connection of its own key to come back rather
/// than close another key's idle one to open its own, when its server is at max_connections.
/// About what a connect costs on a LAN: a connection in use comes back sooner than that when
/// it serves short statements (the case that matters, clients of two keys taking turns on
/// a full server would otherwise close each other's connections at every statement), and a
/// statement whose key's connections are all held for longer loses no more than a connect.
const KEY_AFFINITY_WAIT: Duration = Duration::from_millis(10);

impl Pool {
    /// An empty pool.
    pub fn new(settings: PoolSettings) -> Pool {
        Pool {
            topology: ArcSwap::from_pointee(Topology::default()),
            settings: ArcSwap::from_pointee(settings),
            changed: Arc::new(tokio::sync::Notify::new()),
            totals: Arc::default(),
            retiring: parking_lot::Mutex::default(),
        }
    }

    /// Replaces the timeouts and limits.
    pub fn set_settings(&self, settings: PoolSettings) {
        self.settings.store(Arc::new(settings));
    }

    /// Current settings.
    pub fn settings(&self) -> Arc<PoolSettings> {
        self.settings.load_full()
    }

    /// Applies a new server list. Servers keep their connections and counters when their
    /// (hostgroup, hostname, port) stays; removed servers drain: they take no new work and their
    /// connections close as they come back.
    pub fn apply_servers(&self, specs: &[ServerSpec]) {
        let old = self.topology.load_full();
        let mut by_key: HashMap<(u32, String, u16), Arc<ServerState>> =
            old.all.iter().map(|s| (s.identity(), s.clone())).collect();
        // Under the lock `totals` reads under: a server is in the topology or retiring,
        // never both nor neither, for it.
        let mut retiring = self.retiring.lock();
        retiring.retain(|s| s.strong_count() > 0);
        let mut topo = Topology::default();
        for spec in specs {
            let id = (spec.hostgroup, spec.hostname.clone(), spec.port);
            // A server added back while its connections still drain takes them back: they
            // count against its max_connections, and in its stats, again.
            let draining = || {
                let i = retiring
                    .iter()
                    .position(|w| w.upgrade().is_some_and(|s| s.identity() == id))?;
                retiring.swap_remove(i).upgrade()
            };
            let state = match by_key.remove(&id).or_else(draining) {
                Some(s) => {
                    s.update(spec.clone());
                    s
                }
                None => {
                    let s = Arc::new(ServerState::new(
                        spec.clone(),
                        self.changed.clone(),
                        self.totals.clone(),
                    ));
                    // A replica that joins may be far behind: it waits for the monitor's first
                    // look at its lag, which the monitor takes at once.
                    if spec.max_replication_lag > 0 && self.settings.load().lag_checked {
                        s.shun(Shun::LAG_UNKNOWN);
                    }
                    s
                }
            };
            topo.hostgroups
                .entry(spec.hostgroup)
                .or_default()
                .push(state.clone());
            topo.all.push(state);
        }
        for (_, gone) in by_key {
            gone.retire();
            retiring.push(Arc::downgrade(&gone));
        }
        self.topology.store(Arc::new(topo));
        drop(retiring);
        self.changed.notify_waiters();
    }

    /// A snapshot of every server and its counters (stats_mysql_connection_pool).
    pub fn snapshot(&self) -> Vec<ServerSnapshot> {
        self.topology
            .load()
            .all
            .iter()
            .map(|s| s.snapshot())
            .collect()
    }

    /// As [`Pool::snapshot`], zeroing each server's cumulative counters
    /// (`stats_mysql_connection_pool_reset`); see [`ServerState::snapshot_and_reset`].
    pub fn snapshot_and_reset(&self) -> Vec<ServerSnapshot> {
        // The counters zeroed go to the totals since start under the lock `totals` reads
        // under: never counted twice, nor missing, there.
        let _totals = self.retiring.lock();
        self.topology
            .load()
            .all
            .iter()
            .map(|s| s.snapshot_and_reset())
            .collect()
    }

    /// Counters since start, never reset: those of servers gone included.
    pub fn totals(&self) -> PoolTotals {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let retiring_list = self.retiring.lock();
        // Held first, so that none of these adds its counters to `totals` while they are
        // read: each server is counted here or there, once.
        let retiring: Vec<_> = retiring_list
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .collect();
        let topology = self.topology.load();
        let t = &self.totals;
        let mut out = PoolTotals {
            connects_ok: get(&t.connects_ok),
            connects_failed: get(&t.connects_failed),
            idle_looks: get(&t.idle_found) + get(&t.idle_missed),
            idle_found: get(&t.idle_found),
            idle_found_own_worker: get(&t.idle_found)
                .saturating_sub(get(&t.idle_found_other_worker)),
            idle_returns: get(&t.idle_returns),
            bytes_sent: get(&t.bytes_sent),
            bytes_recv: get(&t.bytes_recv),
            closed: get(&t.closed),
            open: 0,
        };
        for s in topology.all.iter().chain(&retiring) {
            let st = &s.stats;
            out.open += u64::from(st.conn_used.load(Ordering::Relaxed))
                + u64::from(st.conn_free.load(Ordering::Relaxed));
            let found = get(&st.idle_found);
            out.idle_looks += found + get(&st.idle_missed);
            out.idle_found += found;
            out.idle_found_own_worker += found.saturating_sub(get(&st.idle_found_other_worker));
            out.idle_returns += get(&st.idle_returns);
            out.bytes_sent += get(&st.bytes_sent);
            out.bytes_recv += get(&st.bytes_recv);
        }
        drop(retiring_list);
        out
    }

    /// Every server currently configured.
    pub fn servers(&self) -> Vec<Arc<ServerState>> {
        self.topology.load().all.clone()
    }

    /// Whether `hostgroup` has a server that takes new statements now (ONLINE).
    pub fn has_usable(&self, hostgroup: u32) -> bool {
        self.topology
            .load()
            .hostgroups
            .get(&hostgroup)
            .is_some_and(|servers| servers.iter().any(|s| s.usable()))
    }

    /// Sets the runtime status of every server matching host and port (monitor, tests).
    pub fn set_status(&self, hostname: &str, port: u16, status: ServerStatus) {
        for s in &self.topology.load().all {
            if s.spec().hostname == hostname && s.spec().port == port {
                s.set_status(status);
            }
        }
        self.changed.notify_waiters();
    }

    /// A usable server of `hostgroup` by weight; with `free`, only among those with a free slot.
    fn pick(&self, hostgroup: u32, free: bool) -> Option<Arc<ServerState>> {
        let topo = self.topology.load();
        let servers = topo.hostgroups.get(&hostgroup)?;
        let ok = |s: &ServerState| s.usable() && (!free || s.has_free_slot());
        let mut total = 0u64;
        for s in servers {
            if ok(s) {
                total += s.spec().weight as u64;
            }
        }
        if total == 0 {
            return None;
        }
        let mut r = rand::random::<u64>() % total;
        for s in servers {
            if ok(s) {
                let w = s.spec().weight as u64;
                if r < w {
                    return Some(s.clone());
                }
                r -= w;
            }
        }
        None
    }

    /// Checks out a connection to a usable server of `hostgroup`: an idle one for the same key
    /// when there is one, a new one otherwise. Waits up to connect_timeout_server_max for a
    /// server to become usable.
    pub async fn checkout(
        &self,
        hostgroup: u32,
        login: &LoginTemplate,
    ) -> Result<PooledConn, PoolError> {
        self.checkout_inner(hostgroup, login, true).await
    }

    /// Opens a new connection to a usable server of `hostgroup`, never an idle one, for a
    /// client that keeps it to itself (fast_forward users). It counts as used on its server
    /// like any checked-out connection; close it, never check it in. `login.key.capabilities`
    /// may carry CLIENT_DEPRECATE_EOF, for a connection spoken to only in the client's own
    /// protocol.
    pub async fn connect_dedicated(
        &self,
        hostgroup: u32,
        login: &LoginTemplate,
    ) -> Result<PooledConn, PoolError> {
        self.checkout_inner(hostgroup, login, false).await
    }

    async fn checkout_inner(
        &self,
        hostgroup: u32,
        login: &LoginTemplate,
        reuse: bool,
    ) -> Result<PooledConn, PoolError> {
        let settings = self.settings.load_full();
        let started = Instant::now();
        let deadline = started + settings.connect_timeout_max;
        let mut attempts = 0u32;
        let mut last_err: Option<BackendError> = None;
        // When this checkout started waiting for a connection of its key to come back.
        let mut affinity_since: Option<Instant> = None;
        let mut looked_before = false;
        loop {
            // The clock is read once in the common case (a free slot and an idle connection
            // at the first look); a later look, or one that found no free slot, may follow a
            // wait.
            let first_look = !std::mem::replace(&mut looked_before, true);
            // The common case first: a free slot, nothing to register for.
            let free = match self.pick(hostgroup, true) {
                Some(server) if server.reserve() => Some(server),
                // Lost the race for the last free slot: look again.
                Some(_) => continue,
                None => None,
            };
            let at_once = first_look && free.is_some();
            let server = if let Some(server) = free {
                server
            } else {
                // Registered before looking again, so a change between the look and the wait is
                // not lost.
                let notified = self.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                match self.pick(hostgroup, true) {
                    Some(server) => {
                        if !server.reserve() {
                            continue;
                        }
                        server
                    }
                    None => match self.pick(hostgroup, false) {
                        Some(server) => {
                            // Every slot is taken: queue for one on a server chosen by weight,
                            // until a slot frees up, a status changes, or the deadline.
                            tokio::select! {
                                () = server.reserve_wait() => {}
                                _ = notified => continue,
                                _ = tokio::time::sleep_until(deadline.into()) => {
                                    return Err(PoolError::NoServer {
                                        hostgroup,
                                        waited_ms: started.elapsed().as_millis(),
                                    });
                                }
                            }
                            if !server.usable() {
                                server.release_slot();
                                continue;
                            }
                            server
                        }
                        None => {
                            let now = Instant::now();
                            if now >= deadline {
                                return Err(match last_err {
                                    Some(last) => PoolError::ConnectFailed { hostgroup, last },
                                    None => PoolError::NoServer {
                                        hostgroup,
                                        waited_ms: started.elapsed().as_millis(),
                                    },
                                });
                            }
                            // Woken by status changes; the short cap covers servers whose shun
                            // period simply runs out.
                            let wait = (deadline - now).min(Duration::from_millis(100));
                            tokio::select! {
                                _ = notified => {}
                                _ = tokio::time::sleep(wait) => {}
                            }
                            continue;
                        }
                    },
                }
            };
            let now = if at_once { started } else { Instant::now() };
            let bucket = server.key_bucket(&login.key);
            let slot = Reserved::new(server.clone(), bucket);
            let idle = if reuse {
                server.take_idle(login, settings.collation_portable)
            } else {
                None
            };
            if let Some(conn) = idle {
                let mut pooled = slot.into_pooled(conn, login.key.clone());
                // A connection the server closed while it sat idle (restart, wait_timeout) is
                // dropped here, before a client statement could fail on it.
                let stale = !pooled.conn().idle_ok()
                    || settings.too_old(pooled.conn_ref())
                    || (!settings.ping_interval.is_zero()
                        && now.saturating_duration_since(pooled.conn_ref().last_used)
                            >= settings.ping_interval
                        && !matches!(
                            // Boxed, as the connect below: rare, and large.
                            Box::pin(tokio::time::timeout(
                                settings.ping_timeout,
                                pooled.conn().command(weir_wire_ping(), &[])
                            ))
                            .await,
                            Ok(Ok(_))
                        ));
                if stale {
                    drop(pooled);
                    continue;
                }
                return Ok(pooled);
            }
            if let Some(full_for) = server.full_gate(&login.key.username, SERVER_FULL_RETRY) {
                // The server refused a connection for lack of room a moment ago: wait for one
                // of weir's to come back rather than ask again (each refused connect costs the
                // server a thread and a log line).
                let now = Instant::now();
                if now >= deadline {
                    return Err(match last_err {
                        Some(last) => PoolError::Refused(last),
                        None => PoolError::NoServer {
                            hostgroup,
                            waited_ms: started.elapsed().as_millis(),
                        },
                    });
                }
                let (_waiting, returned) = server.watch_returns();
                tokio::pin!(returned);
                returned.as_mut().enable();
                drop(slot);
                tokio::select! {
                    () = returned => {}
                    () = tokio::time::sleep_until((now + full_for).min(deadline).into()) => {}
                }
                continue;
            }
            let affinity_until =
                *affinity_since.get_or_insert_with(Instant::now) + KEY_AFFINITY_WAIT;
            if reuse
                && server.full_with_idle()
                && server.key_in_use_by_others(bucket)
                && Instant::now() < affinity_until
            {
                // Opening a connection would close another key's idle one, and one of this
                // key's is in use: wait a little for it instead, slot given back meanwhile.
                let (_waiting, returned) = server.watch_returns();
                tokio::pin!(returned);
                returned.as_mut().enable();
                drop(slot);
                let until = affinity_until.min(deadline);
                tokio::select! {
                    () = returned => {}
                    () = tokio::time::sleep_until(until.into()) => {}
                }
                continue;
            }
            server.evict_idle_for_connect();
            // The checkout may be dropped while it connects (its client hung up, a KILL): the
            // slot must not go with it (`slot` gives it back).
            // Boxed: the connect, the handshake and mysql-init_connect make a large future,
            // which would otherwise be part of every checkout's state (and of every idle
            // client's task) for a rare event.
            let connected = match Box::pin(open_connection(
                &server, login, reuse, &settings, deadline,
            ))
            .await
            {
                Opened::Ready(conn) => Ok(conn),
                Opened::InitFailed(e) => {
                    // The DBA's statements failed, not the server: every client is told, and
                    // the server is not shunned for it.
                    drop(slot);
                    server.stats.conn_err.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(server = %server.endpoint(), error = %e, "mysql-init_connect failed on a new backend connection");
                    return Err(PoolError::Refused(e));
                }
                Opened::Failed(e) => Err(e),
            };
            match connected {
                Ok(conn) => {
                    server.has_room(&login.key.username);
                    server.stats.conn_ok.fetch_add(1, Ordering::Relaxed);
                    self.totals.connects_ok.fetch_add(1, Ordering::Relaxed);
                    return Ok(slot.into_pooled(conn, login.key.clone()));
                }
                Err(e) => {
                    drop(slot);
                    server.stats.conn_err.fetch_add(1, Ordering::Relaxed);
                    self.totals.connects_failed.fetch_add(1, Ordering::Relaxed);
                    if let Some(code) = connections_exhausted(&e) {
                        // The server is up but takes no more connections now (its
                        // max_connections, or the backend user's limit, reached by other
                        // clients than weir): the statement waits for one of weir's to come
                        // back, or for room to connect, as when weir's own max_connections is
                        // reached. No reason to shun the server.
                        let now = Instant::now();
                        if now >= deadline {
                            return Err(PoolError::Refused(e));
                        }
                        last_err = Some(e);
                        // weir's own idle connections may be what fills it: one of this key
                        // that came back meanwhile is taken next time round (before any
                        // pause); else one of another key (of another user too when the
                        // server's max_connections is reached) goes, and the connect is
                        // tried again once the server had time to see it go.
                        let room = server.make_room(
                            login,
                            reuse,
                            settings.collation_portable,
                            code != 1040,
                        );
                        let pause = match room {
                            server::Room::OwnIdle => SERVER_FULL_RETRY,
                            server::Room::Closed => {
                                tracing::debug!(server = %server.endpoint(), code, "backend full, an idle connection closed to make room");
                                ROOM_MADE_RETRY
                            }
                            server::Room::None => {
                                tracing::debug!(server = %server.endpoint(), code, "backend full, waiting");
                                SERVER_FULL_RETRY
                            }
                        };
                        server.mark_full(code, &login.key.username, pause);
                        continue;
                    }
                    // A schema that does not exist is the client's mistake, which it is told
                    // of (ERROR 1049): not worth a warning per attempt in the proxy's log.
                    if matches!(&e, BackendError::Server(info) if info.code == 1049) {
                        tracing::debug!(server = %server.endpoint(), error = %e, "backend connect refused: unknown schema");
                    } else {
                        tracing::warn!(server = %server.endpoint(), error = %e, "backend connect failed");
                    }
                    // A refusal of this login (unknown schema, no privilege, wrong backend
                    // password) is no reason to shun the server for every other client: a
                    // client asking for a schema that does not exist must not take it away.
                    let login_refused = match &e {
                        BackendError::Auth(_) => true,
                        BackendError::Server(info) => {
                            matches!(info.code, 1044 | 1045 | 1049 | 1698 | 1227)
                        }
                        _ => false,
                    };
                    if !login_refused {
                        server
                            .connect_failed(settings.shun_on_failures, settings.shun_recovery_time);
                    }
                    if let BackendError::Server(_) | BackendError::Auth(_) = e {
                        // The server is up and said no: retrying will not change its mind.
                        return Err(PoolError::Refused(e));
                    }
                    attempts += 1;
                    if attempts > settings.connect_retries || Instant::now() >= deadline {
                        return Err(PoolError::ConnectFailed { hostgroup, last: e });
                    }
                    last_err = Some(e);
                    if !settings.connect_retries_delay.is_zero() {
                        let until = (Instant::now() + settings.connect_retries_delay).min(deadline);
                        tokio::time::sleep_until(until.into()).await;
                    }
                }
            }
        }
    }

    /// Closes idle connections over mysql-free_connections_pct (in percent of each server's
    /// max_connections) that have been idle for at least `min_idle`; returns how many. The
    /// proxy calls it periodically.
    pub fn trim_idle(&self, min_idle: Duration) -> usize {
        let pct = u64::from(self.settings.load().free_connections_pct);
        let Some(idle_before) = Instant::now().checked_sub(min_idle) else {
            return 0;
        };
        self.topology
            .load()
            .all
            .iter()
            .map(|server| {
                let keep = (u64::from(server.spec().max_connections) * pct)
                    .div_ceil(100)
                    .max(1);
                server.trim_idle(keep as usize, idle_before)
            })
            .sum()
    }

    /// Returns a connection. `clean` says the session left nothing behind on it (no open
    /// transaction, no session state that differs from its key); anything else closes it.
    pub fn checkin(&self, mut pooled: PooledConn, clean: bool) {
        let Some(conn) = pooled.conn.take() else {
            return;
        };
        let server = pooled.server.clone();
        let settings = self.settings.load();
        let autocommit_off = conn.status & weir_wire::status::AUTOCOMMIT == 0;
        let keep = !settings.too_old(&conn)
            && (!settings.autocommit_false_not_reusable || !autocommit_off);
        if clean && conn.reusable() && server.accepts_returns() && keep && !server.owes_slots() {
            // Idle connections over mysql-free_connections_pct are closed by `trim_idle`, once
            // they have sat idle a while; PooledConn::drop releases the used slot.
            server.put_idle(pooled.key.clone(), conn);
        } else {
            // Dropping the socket closes it; the server rolls back what was open.
            drop(conn);
        }
    }
}

/// Runs mysql-init_connect on a new connection: in one query, with multi-statements on for
/// it so the server splits the statements. An error names the variable.
/// What opening a backend connection gave.
enum Opened {
    /// Connected, logged in, mysql-init_connect run.
    Ready(Box<BackendConn>),
    /// Connected, but mysql-init_connect failed on it.
    InitFailed(BackendError),
    /// The connect or the login failed.
    Failed(BackendError),
}

/// Opens a connection to `server` for `login`'s key and runs mysql-init_connect on it, each
/// within mysql-connect_timeout_server and before `deadline` (the statement's
/// mysql-connect_timeout_server_max: its whole wait for a connection).
async fn open_connection(
    server: &ServerState,
    login: &LoginTemplate,
    reuse: bool,
    settings: &PoolSettings,
    deadline: Instant,
) -> Opened {
    let limit = settings
        .connect_timeout
        .min(deadline.saturating_duration_since(Instant::now()))
        .max(Duration::from_millis(1));
    let params = ConnectParams {
        endpoint: server.endpoint().clone(),
        username: login.key.username.to_string(),
        credential: login.credential.clone(),
        schema: login.schema.clone(),
        collation: login.collation,
        // A dedicated connection speaks the client's own protocol; a pooled one is opened
        // for every client that may come, weir adapting its replies.
        capabilities: login.key.capabilities
            | login.session_capabilities()
            | if reuse {
                weir_backend::adapted_caps()
            } else {
                0
            },
        mariadb_capabilities: login.key.mariadb_capabilities,
        connect_timeout: limit,
    };
    let mut conn = match BackendConn::connect(&params).await {
        Ok(conn) => Box::new(conn),
        Err(e) => return Opened::Failed(e),
    };
    if let Some(sql) = &settings.init_connect {
        // Bounded as the connect is: a statement that blocks (a lock) must not hold the
        // checkout past every deadline.
        let ran = tokio::time::timeout(limit, run_init_connect(&mut conn, sql)).await;
        let ran = ran.unwrap_or_else(|_| {
            // Closing the connection would leave the statement running on the server, one
            // more thread at each attempt: it is killed.
            // With a connect timeout of its own: the statement's deadline may be all but gone.
            let mut killer = params.clone();
            killer.connect_timeout = settings.connect_timeout;
            tokio::spawn(kill_connection(killer, conn.connection_id));
            Err(BackendError::Server(weir_wire::msg::ErrInfo::new(
                weir_wire::errcode::ER_PROXY_NO_BACKEND,
                "HY000",
                format!(
                    "mysql-init_connect failed: its statements did not end within {} ms \
                     (mysql-connect_timeout_server)",
                    limit.as_millis()
                ),
            )))
        });
        if let Err(e) = ran {
            return Opened::InitFailed(e);
        }
    }
    // Counted from here, as Server_Connections_created counts it.
    conn.close_counter = Some(server.closed_counter());
    if let Ok(handle) = conn.stream.writer() {
        let handle = Arc::new(handle);
        server.track_open(&handle);
        conn.cut_handle = Some(handle);
    }
    Opened::Ready(conn)
}

/// `KILL <thread>` over a new connection of `params` (without its schema).
async fn kill_connection(mut params: ConnectParams, thread: u32) {
    params.schema = None;
    match BackendConn::connect(&params).await {
        Ok(mut c) => {
            if let Err(e) = c.query(&format!("KILL {thread}")).await {
                tracing::debug!(error = %e, thread, "KILL of a backend connection failed");
            }
            c.quit().await;
        }
        Err(e) => tracing::debug!(error = %e, thread, "no connection to KILL a backend thread"),
    }
}

async fn run_init_connect(conn: &mut BackendConn, sql: &str) -> Result<(), BackendError> {
    let multi = conn.multi_statements;
    let run = async {
        if !multi {
            conn.set_multi_statements(true).await?;
        }
        conn.query(sql).await?;
        if !multi {
            conn.set_multi_statements(false).await?;
        }
        Ok(())
    };
    run.await.map_err(|e| match e {
        BackendError::Server(mut info) => {
            info.prefix_message("mysql-init_connect failed: ");
            BackendError::Server(info)
        }
        other => other,
    })
}

/// COM_PING, the cheapest check that an idle connection still works.
fn weir_wire_ping() -> u8 {
    0x0e
}
