//! One configured server: its spec, live status, counters and idle connections.

use crate::{LoginTemplate, PoolKey};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;
use weir_backend::{BackendConn, Endpoint};

/// Server status, as in mysql_servers.status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerStatus {
    /// Takes traffic.
    Online,
    /// Temporarily out (failures, lag); comes back by itself.
    Shunned,
    /// Takes no new work; sessions on it finish what they started.
    OfflineSoft,
    /// Out; its connections close.
    OfflineHard,
}

impl ServerStatus {
    fn to_u8(self) -> u8 {
        match self {
            ServerStatus::Online => 0,
            ServerStatus::Shunned => 1,
            ServerStatus::OfflineSoft => 2,
            ServerStatus::OfflineHard => 3,
        }
    }

    fn from_u8(v: u8) -> ServerStatus {
        match v {
            0 => ServerStatus::Online,
            1 => ServerStatus::Shunned,
            2 => ServerStatus::OfflineSoft,
            _ => ServerStatus::OfflineHard,
        }
    }

    /// The name used in admin tables.
    pub fn as_str(self) -> &'static str {
        match self {
            ServerStatus::Online => "ONLINE",
            ServerStatus::Shunned => "SHUNNED",
            ServerStatus::OfflineSoft => "OFFLINE_SOFT",
            ServerStatus::OfflineHard => "OFFLINE_HARD",
        }
    }
}

/// The configured attributes of a server in a hostgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    /// Hostgroup id.
    pub hostgroup: u32,
    /// Host name, IP, or Unix socket path (starting with '/').
    pub hostname: String,
    /// TCP port (ignored for Unix sockets).
    pub port: u16,
    /// Configured status.
    pub status: ServerStatus,
    /// Relative share of new connections.
    pub weight: u32,
    /// Most connections weir opens to it in this hostgroup.
    pub max_connections: u32,
    /// Seconds of replication lag over which the monitor shuns it; 0 = not checked.
    pub max_replication_lag: u32,
}

/// Counters shown in stats_mysql_connection_pool.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Connections checked out now.
    pub conn_used: AtomicU32,
    /// Idle connections.
    pub conn_free: AtomicU32,
    /// Successful connects.
    pub conn_ok: AtomicU64,
    /// Failed connects.
    pub conn_err: AtomicU64,
    /// Highest conn_used seen.
    pub max_conn_used: AtomicU32,
    /// Statements sent.
    pub queries: AtomicU64,
    /// Bytes sent to the server.
    pub bytes_sent: AtomicU64,
    /// Bytes received from the server.
    pub bytes_recv: AtomicU64,
    /// Last ping time the monitor measured, µs.
    pub latency_us: AtomicU64,
    /// Looks for an idle connection (one per checkout that may reuse one; a stale one found
    /// makes it look again) that found one; never reset.
    pub idle_found: AtomicU64,
    /// Of those, found among the connections another worker than the checkout's keeps;
    /// never reset.
    pub idle_found_other_worker: AtomicU64,
    /// Looks that found none; never reset.
    pub idle_missed: AtomicU64,
    /// Connections put back on the idle list; never reset.
    pub idle_returns: AtomicU64,
}

/// A point-in-time copy of a server's state.
#[derive(Debug, Clone)]
pub struct ServerSnapshot {
    /// Configured attributes.
    pub spec: ServerSpec,
    /// Runtime status.
    pub status: ServerStatus,
    /// Shunned for replication lag alone (ProxySQL's SHUNNED_REPLICATION_LAG).
    pub lag_shunned: bool,
    /// Connections checked out.
    pub conn_used: u32,
    /// Idle connections.
    pub conn_free: u32,
    /// Successful connects.
    pub conn_ok: u64,
    /// Failed connects.
    pub conn_err: u64,
    /// Highest conn_used.
    pub max_conn_used: u32,
    /// Statements sent.
    pub queries: u64,
    /// Bytes sent.
    pub bytes_sent: u64,
    /// Bytes received.
    pub bytes_recv: u64,
    /// Last ping time the monitor measured, µs.
    pub latency_us: u64,
}

struct Idle {
    key: PoolKey,
    conn: Box<BackendConn>,
    since: Instant,
}

/// Live state of one server in one hostgroup.
pub struct ServerState {
    spec: parking_lot::RwLock<Arc<ServerSpec>>,
    endpoint: Endpoint,
    status: AtomicU8,
    retired: AtomicBool,
    /// Idle connections, one shard per worker thread: a worker reuses the connections its own
    /// event loop drives, and takes another worker's only when it has none.
    idle: Box<[Mutex<Vec<Idle>>]>,
    /// Counters.
    pub stats: ServerStats,
    changed: Arc<tokio::sync::Notify>,
    /// Free connection slots (max_connections minus connections in use). Statements that find
    /// every slot taken queue here in arrival order: a released slot goes to the longest
    /// waiter, never to a statement that just arrived, so none starves under load.
    slots: tokio::sync::Semaphore,
    /// Slots still to take away after max_connections was lowered while they were in use.
    slot_debt: AtomicU32,
    /// The max_connections the slots were sized for.
    slots_for: AtomicU32,
    /// Statements queued for a slot right now.
    waiting: AtomicU32,
    /// Notified when a statement starts waiting for a slot: idle sessions that keep a
    /// connection only by affinity give it up.
    wanted: tokio::sync::Notify,
    /// The connections open to the server (their `cut_handle`s): cut when it stops answering.
    open: parking_lot::Mutex<Vec<std::sync::Weak<socket2::Socket>>>,
    /// Why the monitor or the traffic took the server out ([`Shun`] bits), on top of its
    /// configured status, which they never change.
    shunned: AtomicU8,
    /// Until when (ms on [`clock_ms`]) connect errors keep it shunned.
    errors_shun_until: AtomicU64,
    /// Until when (ms on [`clock_ms`]) the server is taken to have no room for another
    /// connection (it refused one with 1040, its max_connections): checkouts wait for one of
    /// weir's to come back instead of asking it again.
    full_until: AtomicU64,
    /// The same for backend users at their own limit (1203, 1226: max_user_connections, the
    /// account's MAX_USER_CONNECTIONS), which other users' checkouts need not wait for.
    users_full: Mutex<Vec<(Arc<str>, u64)>>,
    /// Whether `users_full` has entries (read without its lock by every connect).
    any_user_full: AtomicBool,
    /// Connect errors in the current one-second window: (window start ms, count).
    recent_errors: Mutex<(u64, u32)>,
    /// Connections in use per key, by [`key_bucket`] (keys that share a bucket count
    /// together: a statement may then wait for a connection of another key, never longer
    /// than the affinity wait).
    key_use: [AtomicU32; KEY_BUCKETS],
    /// Statements waiting for a connection to come back ([`ServerState::returned`]).
    return_waiters: AtomicU32,
    /// Notified when a connection goes back to the idle list while statements wait for one.
    returned: tokio::sync::Notify,
    /// The pool's counters since start, which this server's are added to when it goes (and
    /// its reset ones when stats_mysql_connection_pool_reset zeroes them).
    lifetime: Arc<crate::Totals>,
}

impl Drop for ServerState {
    fn drop(&mut self) {
        let (st, to) = (&self.stats, &self.lifetime);
        let fold = |from: &AtomicU64, into: &AtomicU64| {
            into.fetch_add(from.load(Ordering::Relaxed), Ordering::Relaxed);
        };
        fold(&st.idle_found, &to.idle_found);
        fold(&st.idle_found_other_worker, &to.idle_found_other_worker);
        fold(&st.idle_missed, &to.idle_missed);
        fold(&st.idle_returns, &to.idle_returns);
        fold(&st.bytes_sent, &to.bytes_sent);
        fold(&st.bytes_recv, &to.bytes_recv);
    }
}

const KEY_BUCKETS: usize = 16;

/// Counts a statement waiting for a returned connection until dropped.
pub(crate) struct ReturnWait<'a>(&'a ServerState);

impl Drop for ReturnWait<'_> {
    fn drop(&mut self) {
        self.0.return_waiters.fetch_sub(1, Ordering::SeqCst);
        self.0.waiting.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What [`ServerState::make_room`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Room {
    /// An idle connection would serve the checkout: take it.
    OwnIdle,
    /// An idle connection of another key was closed: connect again shortly.
    Closed,
    /// Nothing weir holds idle can make room.
    None,
}

/// Reasons a server is SHUNNED by weir rather than by its configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shun;

impl Shun {
    /// Replication lag over max_replication_lag.
    pub const LAG: u8 = 1;
    /// mysql-monitor_ping_max_failures pings in a row failed.
    pub const PING: u8 = 2;
    /// It has a max_replication_lag and the monitor has not read its lag since it joined the
    /// pool or came back from a ping shun: it may be far behind.
    pub const LAG_UNKNOWN: u8 = 4;
}

/// Milliseconds since weir started, for deadlines kept in atomics.
pub fn clock_ms() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_millis() as u64
}

impl std::fmt::Debug for ServerState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerState")
            .field("endpoint", &self.endpoint)
            .field("status", &self.status())
            .finish()
    }
}

impl ServerState {
    pub(crate) fn new(
        spec: ServerSpec,
        changed: Arc<tokio::sync::Notify>,
        lifetime: Arc<crate::Totals>,
    ) -> ServerState {
        let max = spec.max_connections;
        ServerState {
            endpoint: Endpoint::new(&spec.hostname, spec.port),
            status: AtomicU8::new(spec.status.to_u8()),
            spec: parking_lot::RwLock::new(Arc::new(spec)),
            retired: AtomicBool::new(false),
            idle: (0..crate::worker::count())
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
            stats: ServerStats::default(),
            changed,
            slots: tokio::sync::Semaphore::new(max as usize),
            slot_debt: AtomicU32::new(0),
            slots_for: AtomicU32::new(max),
            waiting: AtomicU32::new(0),
            wanted: tokio::sync::Notify::new(),
            open: parking_lot::Mutex::new(Vec::new()),
            shunned: AtomicU8::new(0),
            errors_shun_until: AtomicU64::new(0),
            full_until: AtomicU64::new(0),
            users_full: Mutex::new(Vec::new()),
            any_user_full: AtomicBool::new(false),
            recent_errors: Mutex::new((0, 0)),
            key_use: Default::default(),
            return_waiters: AtomicU32::new(0),
            returned: tokio::sync::Notify::new(),
            lifetime,
        }
    }

    pub(crate) fn identity(&self) -> (u32, String, u16) {
        let s = self.spec();
        (s.hostgroup, s.hostname.clone(), s.port)
    }

    /// Configured attributes.
    pub fn spec(&self) -> Arc<ServerSpec> {
        self.spec.read().clone()
    }

    /// Where it listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// Runtime status: the configured one, SHUNNED while weir keeps an ONLINE server out
    /// (lag, failed pings, connect errors), OFFLINE_SOFT once removed from the configuration.
    pub fn status(&self) -> ServerStatus {
        if self.retired.load(Ordering::Relaxed) {
            return ServerStatus::OfflineSoft;
        }
        let configured = ServerStatus::from_u8(self.status.load(Ordering::Relaxed));
        if configured == ServerStatus::Online && self.is_shunned() {
            return ServerStatus::Shunned;
        }
        configured
    }

    /// The configured status, whatever weir derived on top of it.
    pub fn configured_status(&self) -> ServerStatus {
        ServerStatus::from_u8(self.status.load(Ordering::Relaxed))
    }

    fn is_shunned(&self) -> bool {
        self.shunned.load(Ordering::Relaxed) != 0 || {
            let until = self.errors_shun_until.load(Ordering::Relaxed);
            until != 0 && clock_ms() < until
        }
    }

    /// Takes the server out for `reason` ([`Shun`]) until [`ServerState::unshun`]; a server
    /// that cannot be reached (PING) also loses its idle connections, and those in use are
    /// cut (see [`ServerState::cut_open_connections`]).
    pub fn shun(&self, reason: u8) {
        let before = self.shunned.fetch_or(reason, Ordering::AcqRel);
        if before & reason == 0 {
            if reason == Shun::LAG_UNKNOWN {
                tracing::info!(server = %self.endpoint, hostgroup = self.spec().hostgroup, "server waits for the monitor to read its replication lag");
            } else {
                tracing::warn!(server = %self.endpoint, hostgroup = self.spec().hostgroup, reason = shun_name(reason), configured = self.configured_status().as_str(), "server shunned");
            }
            self.clear_idle();
            if reason & Shun::PING != 0 {
                self.cut_open_connections();
            }
            self.changed.notify_waiters();
            self.wanted.notify_waiters();
        }
    }

    /// Registers a new connection's `cut_handle`.
    pub(crate) fn track_open(&self, handle: &Arc<socket2::Socket>) {
        let mut open = self.open.lock();
        open.retain(|w| w.strong_count() > 0);
        open.push(Arc::downgrade(handle));
    }

    /// Cuts every connection open to the server (it stopped answering pings): a statement
    /// waiting on one gets its error now instead of when the server or the client gives up,
    /// as ProxySQL kills them. Sessions see a lost connection, as for a server that died.
    fn cut_open_connections(&self) {
        let open = std::mem::take(&mut *self.open.lock());
        let cut = open
            .iter()
            .filter_map(std::sync::Weak::upgrade)
            .filter(|s| s.shutdown(std::net::Shutdown::Both).is_ok())
            .count();
        if cut > 0 {
            tracing::warn!(server = %self.endpoint, connections = cut, "connections to a server that stopped answering pings cut");
        }
    }

    /// Ends the shun for `reason`.
    pub fn unshun(&self, reason: u8) {
        let before = self.shunned.fetch_and(!reason, Ordering::AcqRel);
        if before & reason != 0 {
            tracing::info!(server = %self.endpoint, hostgroup = self.spec().hostgroup, reason = shun_name(before & reason), status = self.status().as_str(), "shun lifted");
            self.changed.notify_waiters();
        }
    }

    /// The monitor reached the server: a shun for connect errors ends now rather than after
    /// mysql-shun_recovery_time_sec.
    pub fn reachable(&self) {
        if self.errors_shun_until.swap(0, Ordering::AcqRel) != 0 {
            self.changed.notify_waiters();
        }
    }

    /// Why weir keeps the server out ([`Shun`] bits; 0 = not).
    pub fn shun_reasons(&self) -> u8 {
        self.shunned.load(Ordering::Relaxed)
    }

    /// Counts a failed connect; `limit` of them within one second shun the server for
    /// `recovery` (mysql-shun_on_failures, mysql-shun_recovery_time_sec).
    pub(crate) fn connect_failed(&self, limit: u32, recovery: std::time::Duration) {
        if limit == 0 {
            return;
        }
        let now = clock_ms();
        let mut w = self.recent_errors.lock();
        if now.saturating_sub(w.0) >= 1000 {
            *w = (now, 0);
        }
        w.1 += 1;
        if w.1 >= limit {
            w.1 = 0;
            let until = now + recovery.as_millis() as u64;
            self.errors_shun_until
                .store(until.max(1), Ordering::Relaxed);
            tracing::warn!(server = %self.endpoint, errors = limit, "server SHUNNED after connect errors");
            self.clear_idle();
            self.wanted.notify_waiters();
        }
    }

    /// Changes the runtime status; OFFLINE_HARD closes idle connections at once.
    pub fn set_status(&self, status: ServerStatus) {
        self.status.store(status.to_u8(), Ordering::Relaxed);
        if status != ServerStatus::Online {
            self.clear_idle();
            // Sessions keeping a connection only by affinity let go now, idle or not.
            self.wanted.notify_waiters();
        }
        self.changed.notify_waiters();
    }

    pub(crate) fn update(&self, spec: ServerSpec) {
        let status = spec.status;
        if spec.max_replication_lag == 0 {
            // No lag check runs for it any more: nothing else would lift a lag shun.
            self.unshun(Shun::LAG | Shun::LAG_UNKNOWN);
        }
        let max = spec.max_connections;
        self.resize_slots(max);
        *self.spec.write() = Arc::new(spec);
        // A lower max_connections applies to open connections too: idle ones beyond it close
        // now, and those in use close as they come back (`over_max_open`).
        if self.over_max_open() {
            let used = self.stats.conn_used.load(Ordering::Relaxed);
            self.trim_idle(
                max.saturating_sub(used) as usize,
                Instant::now() + std::time::Duration::from_secs(1),
            );
        }
        self.retired.store(false, Ordering::Relaxed);
        self.set_status(status);
    }

    pub(crate) fn retire(&self) {
        self.retired.store(true, Ordering::Relaxed);
        self.wanted.notify_waiters();
        self.clear_idle();
    }

    /// Whether sessions holding a connection to it must let go at once (OFFLINE_HARD, or
    /// shunned because it stopped answering pings).
    pub fn must_close(&self) -> bool {
        self.status() == ServerStatus::OfflineHard
            || self.shunned.load(Ordering::Relaxed) & Shun::PING != 0
    }

    /// Whether sessions should let go at the next statement boundary where nothing pins them.
    pub fn draining(&self) -> bool {
        self.status() != ServerStatus::Online
    }

    pub(crate) fn usable(&self) -> bool {
        self.status() == ServerStatus::Online
    }

    pub(crate) fn accepts_returns(&self) -> bool {
        self.status() == ServerStatus::Online
    }

    /// Whether a slot is free now (no statement is queued for one).
    pub(crate) fn has_free_slot(&self) -> bool {
        self.slots.available_permits() > 0
    }

    fn resize_slots(&self, max: u32) {
        let old = self.slots_for.swap(max, Ordering::AcqRel);
        if max > old {
            let mut grow = max - old;
            // Pay back slots still owed from an earlier decrease first.
            let _ = self
                .slot_debt
                .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |d| {
                    let paid = d.min(grow);
                    Some(d - paid)
                })
                .map(|d| grow -= d.min(grow));
            self.slots.add_permits(grow as usize);
        } else if max < old {
            let shrink = old - max;
            let taken = self.slots.forget_permits(shrink as usize) as u32;
            self.slot_debt
                .fetch_add(shrink - taken.min(shrink), Ordering::AcqRel);
        }
    }

    fn took_slot(&self) {
        let used = self.stats.conn_used.fetch_add(1, Ordering::AcqRel) + 1;
        self.stats.max_conn_used.fetch_max(used, Ordering::Relaxed);
    }

    /// Takes a free slot for a connection about to be handed out; false when none is free.
    pub(crate) fn reserve(&self) -> bool {
        match self.slots.try_acquire() {
            Ok(p) => {
                p.forget();
                self.took_slot();
                true
            }
            Err(_) => false,
        }
    }

    /// Waits in line for a slot.
    pub(crate) async fn reserve_wait(&self) {
        struct Queued<'a>(&'a AtomicU32);
        impl Drop for Queued<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.waiting.fetch_add(1, Ordering::Relaxed);
        self.wanted.notify_waiters();
        let _queued = Queued(&self.waiting);
        if let Ok(p) = self.slots.acquire().await {
            p.forget();
            self.took_slot();
        }
    }

    /// Whether statements are queued for a connection to this server: sessions then give up
    /// connections they keep only by affinity.
    pub fn has_waiters(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    /// Resolves once a statement waits for a connection to this server, or the server drains
    /// (not ONLINE: OFFLINE_SOFT for a switchover, shunned, removed), at once if either is
    /// already so: a connection kept only by affinity then goes back.
    pub async fn wanted(&self) {
        loop {
            // Registered before the check, so a statement that starts waiting (or a status
            // change) in between is not missed.
            let notified = self.wanted.notified();
            if self.has_waiters() || self.draining() {
                return;
            }
            notified.await;
        }
    }

    /// Gives back a slot taken by [`ServerState::reserve`] (the connection was returned or
    /// closed).
    pub(crate) fn release_slot(&self) {
        self.stats.conn_used.fetch_sub(1, Ordering::AcqRel);
        let owed = self
            .slot_debt
            .fetch_update(Ordering::AcqRel, Ordering::Relaxed, |d| d.checked_sub(1))
            .is_ok();
        if !owed {
            self.slots.add_permits(1);
        }
    }

    /// The [`ServerState::key_use`] counter `key` is counted in on this server.
    pub(crate) fn key_bucket(&self, key: &PoolKey) -> usize {
        use std::hash::BuildHasher;
        // Computed at every checkout: a fast fixed hash (SipHash took ~180 instructions here),
        // fixed so that every thread puts a key in the same bucket.
        let hash = foldhash::fast::FixedState::default().hash_one((
            &*key.username,
            key.capabilities,
            key.mariadb_capabilities,
        ));
        (hash % KEY_BUCKETS as u64) as usize
    }

    /// What counts the pool's connections when they close.
    pub(crate) fn closed_counter(&self) -> Arc<AtomicU64> {
        self.lifetime.closed.clone()
    }

    /// An idle connection for `login`'s key: one that starts in the login's collation and
    /// sql_mode if there is one, else one in its collation, else one whose charsets can be
    /// brought there (both `portable`). Each step down costs the session a `SET`, which is
    /// cheaper than a new connection.
    pub(crate) fn take_idle(
        &self,
        login: &LoginTemplate,
        portable: fn(u8) -> bool,
    ) -> Option<Box<BackendConn>> {
        let n = self.idle.len();
        let own = crate::worker::current() % n;
        for pass in 0..3 {
            // Looked up only when no connection of its own collation is idle.
            if pass == 2 && !portable(login.collation) {
                break;
            }
            for k in 0..n {
                let mut idle = self.idle[(own + k) % n].lock();
                let found = idle.iter().rposition(|i| {
                    i.key.serves(&login.key)
                        && match pass {
                            0 => {
                                i.conn.collation == login.collation
                                    && i.conn.ignore_space == login.ignore_space
                                    && i.conn.multi_statements == login.multi_statements
                            }
                            1 => i.conn.collation == login.collation,
                            _ => portable(i.conn.collation),
                        }
                });
                if let Some(pos) = found {
                    let item = idle.swap_remove(pos);
                    drop(idle);
                    self.stats.conn_free.fetch_sub(1, Ordering::Relaxed);
                    self.stats.idle_found.fetch_add(1, Ordering::Relaxed);
                    if k != 0 {
                        self.stats
                            .idle_found_other_worker
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    return Some(item.conn);
                }
            }
        }
        self.stats.idle_missed.fetch_add(1, Ordering::Relaxed);
        None
    }

    /// The server refused a connection for lack of room (`code`: 1040 for the whole server,
    /// else `user`'s own limit): no such connect is tried for `span`.
    pub(crate) fn mark_full(&self, code: u16, user: &Arc<str>, span: std::time::Duration) {
        let until = clock_ms() + span.as_millis() as u64;
        if code == 1040 {
            self.full_until.fetch_max(until, Ordering::Relaxed);
            return;
        }
        let mut users = self.users_full.lock();
        match users.iter_mut().find(|(u, _)| u == user) {
            Some((_, at)) => *at = (*at).max(until),
            None => users.push((user.clone(), until)),
        }
        self.any_user_full.store(true, Ordering::Relaxed);
    }

    /// Whether a connect for `user` may be tried now, after the server refused one for lack
    /// of room (its own or the user's): `None` when it may (never refused, or the pause is
    /// over and this caller is the one that tries: the pause is renewed for the others
    /// meanwhile), else how long to wait.
    pub(crate) fn full_gate(
        &self,
        user: &str,
        span: std::time::Duration,
    ) -> Option<std::time::Duration> {
        let until = self.full_until.load(Ordering::Relaxed);
        if until != 0 {
            let now = clock_ms();
            if now < until {
                return Some(std::time::Duration::from_millis(until - now));
            }
            let next = now + span.as_millis() as u64;
            if self
                .full_until
                .compare_exchange(until, next, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                return Some(span);
            }
            return None;
        }
        if !self.any_user_full.load(Ordering::Relaxed) {
            return None;
        }
        let mut users = self.users_full.lock();
        let (_, until) = users.iter_mut().find(|(u, _)| &**u == user)?;
        let now = clock_ms();
        if now < *until {
            return Some(std::time::Duration::from_millis(*until - now));
        }
        *until = now + span.as_millis() as u64;
        None
    }

    /// A connect for `user` succeeded: the server, and the user's limit, have room again.
    pub(crate) fn has_room(&self, user: &str) {
        if self.full_until.load(Ordering::Relaxed) != 0 {
            self.full_until.store(0, Ordering::Relaxed);
        }
        if self.any_user_full.load(Ordering::Relaxed) {
            let mut users = self.users_full.lock();
            users.retain(|(u, _)| &**u != user);
            self.any_user_full
                .store(!users.is_empty(), Ordering::Relaxed);
        }
    }

    /// Makes room for a connection for `login` that the server refused for lack of it: when
    /// an idle one would serve it (one came back meanwhile; never for a dedicated connection,
    /// `reuse` false), nothing; else closes weir's oldest idle connection to the server that
    /// would not (of the same backend user when `same_user`).
    pub(crate) fn make_room(
        &self,
        login: &LoginTemplate,
        reuse: bool,
        portable: fn(u8) -> bool,
        same_user: bool,
    ) -> Room {
        // As `take_idle` chooses.
        let usable = |i: &Idle| {
            reuse
                && i.key.serves(&login.key)
                && (i.conn.collation == login.collation
                    || (portable(login.collation) && portable(i.conn.collation)))
        };
        if self
            .idle
            .iter()
            .any(|shard| shard.lock().iter().any(usable))
        {
            return Room::OwnIdle;
        }
        let fits = |i: &Idle| !usable(i) && (!same_user || i.key.username == login.key.username);
        let oldest = self
            .idle
            .iter()
            .enumerate()
            .filter_map(|(n, shard)| {
                let idle = shard.lock();
                idle.iter().position(fits).map(|pos| (idle[pos].since, n))
            })
            .min();
        let Some((_, n)) = oldest else {
            return Room::None;
        };
        let mut idle = self.idle[n].lock();
        match idle.iter().position(fits) {
            Some(pos) => {
                idle.remove(pos);
                self.stats.conn_free.fetch_sub(1, Ordering::Relaxed);
                Room::Closed
            }
            None => Room::None,
        }
    }

    /// A connection of key `bucket` was handed out.
    pub(crate) fn took_key(&self, bucket: usize) {
        self.key_use[bucket].fetch_add(1, Ordering::Relaxed);
    }

    /// A connection of key `bucket` came back or was closed.
    pub(crate) fn put_back_key(&self, bucket: usize) {
        self.key_use[bucket].fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether another checkout of key `bucket` than the caller's holds a connection or a
    /// slot for one (a connection may come back soon).
    pub(crate) fn key_in_use_by_others(&self, bucket: usize) -> bool {
        self.key_use[bucket].load(Ordering::Relaxed) > 1
    }

    /// Whether used and idle connections fill max_connections and some are idle: a new
    /// connection would close an idle one.
    pub(crate) fn full_with_idle(&self) -> bool {
        let max = self.spec.read().max_connections as usize;
        let free = self.stats.conn_free.load(Ordering::Relaxed) as usize;
        free > 0 && self.stats.conn_used.load(Ordering::Relaxed) as usize + free > max
    }

    /// A wait for a connection to go back to the idle list: the guard counts the waiter
    /// (returns notify only while some wait), the future resolves at the next return once
    /// enabled. The waiter counts as wanting a connection too: sessions that keep theirs
    /// only by affinity give them up (the one it waits for may be such).
    pub(crate) fn watch_returns(&self) -> (ReturnWait<'_>, tokio::sync::futures::Notified<'_>) {
        self.return_waiters.fetch_add(1, Ordering::SeqCst);
        self.waiting.fetch_add(1, Ordering::Relaxed);
        self.wanted.notify_waiters();
        (ReturnWait(self), self.returned.notified())
    }

    /// Makes room for a connection about to be opened: closes the oldest idle connection when
    /// used + idle exceed max_connections. One at most: `used` counts slots reserved by
    /// checkouts that are about to take an idle connection, which must not be closed under
    /// them (the last connection of another key would go, and that key would close another
    /// to get one back). Idle connections over a lowered max_connections go this way one
    /// connect at a time, and with `trim_idle`.
    pub(crate) fn evict_idle_for_connect(&self) {
        let max = self.spec.read().max_connections as usize;
        let over = || {
            self.stats.conn_used.load(Ordering::Relaxed) as usize
                + self.stats.conn_free.load(Ordering::Relaxed) as usize
                > max
        };
        if !over() {
            return;
        }
        // Oldest first: connections are pushed at the end when they come back.
        let oldest = self
            .idle
            .iter()
            .enumerate()
            .filter_map(|(n, shard)| shard.lock().first().map(|i| (i.since, n)))
            .min();
        if let Some((_, n)) = oldest {
            let mut idle = self.idle[n].lock();
            if !idle.is_empty() && over() {
                idle.remove(0);
                self.stats.conn_free.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Whether more connections are open to it (in use and idle) than max_connections, as
    /// after a LOAD lowered it.
    fn over_max_open(&self) -> bool {
        let open = self.stats.conn_used.load(Ordering::Relaxed)
            + self.stats.conn_free.load(Ordering::Relaxed);
        open > self.slots_for.load(Ordering::Relaxed)
    }

    /// Whether more connections are in use than max_connections allows (a LOAD lowered it):
    /// one coming back then closes rather than stays idle. (Counting used + idle instead
    /// would race with concurrent check-ins, each counted idle before its slot is freed.)
    pub(crate) fn owes_slots(&self) -> bool {
        self.slot_debt.load(Ordering::Relaxed) > 0
    }

    pub(crate) fn put_idle(&self, key: PoolKey, conn: Box<BackendConn>) {
        let own = crate::worker::current() % self.idle.len();
        self.idle[own].lock().push(Idle {
            key,
            conn,
            since: Instant::now(),
        });
        self.stats.conn_free.fetch_add(1, Ordering::Relaxed);
        self.stats.idle_returns.fetch_add(1, Ordering::Relaxed);
        if self.return_waiters.load(Ordering::SeqCst) > 0 {
            self.returned.notify_waiters();
        }
    }

    /// Closes idle connections beyond `keep`, oldest first, among those idle since before
    /// `idle_before`; returns how many. Connections used a moment ago stay: a burst of
    /// statements over `keep` must not turn into a connect per statement.
    pub(crate) fn trim_idle(&self, keep: usize, idle_before: Instant) -> usize {
        let mut closed = 0;
        for shard in self.idle.iter() {
            let free = self.stats.conn_free.load(Ordering::Relaxed) as usize;
            if free <= keep {
                break;
            }
            let mut idle = shard.lock();
            // Oldest first: connections are pushed at the end when they come back.
            let stale = idle
                .iter()
                .take_while(|i| i.since < idle_before)
                .count()
                .min(free - keep);
            if stale > 0 {
                idle.drain(..stale);
                self.stats
                    .conn_free
                    .fetch_sub(stale as u32, Ordering::Relaxed);
                closed += stale;
            }
        }
        closed
    }

    /// A connection to it died (reset, closed under a statement): the idle ones likely died
    /// with it (a restart, a crash) and close now, so that the statement's retry, and the
    /// statements after it, open fresh connections instead of finding them dead one by one.
    pub fn connection_lost(&self) {
        self.clear_idle();
    }

    pub(crate) fn clear_idle(&self) {
        for shard in self.idle.iter() {
            let mut idle = shard.lock();
            let n = idle.len();
            idle.clear();
            self.stats.conn_free.fetch_sub(n as u32, Ordering::Relaxed);
        }
    }

    fn lag_shunned_only(&self) -> bool {
        let reasons = self.shunned.load(Ordering::Relaxed);
        reasons != 0
            && reasons & !(Shun::LAG | Shun::LAG_UNKNOWN) == 0
            && self.status() == ServerStatus::Shunned
    }

    /// A copy for stats tables, and the cumulative counters zeroed
    /// (`stats_mysql_connection_pool_reset`): ConnOK, ConnERR, Queries, Bytes_data_sent and
    /// Bytes_data_recv restart from 0, MaxConnUsed from the connections in use now.
    pub fn snapshot_and_reset(&self) -> ServerSnapshot {
        let st = &self.stats;
        let conn_used = st.conn_used.load(Ordering::Relaxed);
        ServerSnapshot {
            spec: (*self.spec()).clone(),
            status: self.status(),
            lag_shunned: self.lag_shunned_only(),
            conn_used,
            conn_free: st.conn_free.load(Ordering::Relaxed),
            conn_ok: st.conn_ok.swap(0, Ordering::Relaxed),
            conn_err: st.conn_err.swap(0, Ordering::Relaxed),
            max_conn_used: st.max_conn_used.swap(conn_used, Ordering::Relaxed),
            queries: st.queries.swap(0, Ordering::Relaxed),
            bytes_sent: self.reset_into(&st.bytes_sent, &self.lifetime.bytes_sent),
            bytes_recv: self.reset_into(&st.bytes_recv, &self.lifetime.bytes_recv),
            latency_us: st.latency_us.load(Ordering::Relaxed),
        }
    }

    /// Zeroes `counter`, adding what it held to the pool's count since start: its value.
    fn reset_into(&self, counter: &AtomicU64, lifetime: &AtomicU64) -> u64 {
        let v = counter.swap(0, Ordering::Relaxed);
        lifetime.fetch_add(v, Ordering::Relaxed);
        v
    }

    /// A point-in-time copy for stats tables.
    pub fn snapshot(&self) -> ServerSnapshot {
        let st = &self.stats;
        ServerSnapshot {
            spec: (*self.spec()).clone(),
            status: self.status(),
            lag_shunned: self.lag_shunned_only(),
            conn_used: st.conn_used.load(Ordering::Relaxed),
            conn_free: st.conn_free.load(Ordering::Relaxed),
            conn_ok: st.conn_ok.load(Ordering::Relaxed),
            conn_err: st.conn_err.load(Ordering::Relaxed),
            max_conn_used: st.max_conn_used.load(Ordering::Relaxed),
            queries: st.queries.load(Ordering::Relaxed),
            bytes_sent: st.bytes_sent.load(Ordering::Relaxed),
            bytes_recv: st.bytes_recv.load(Ordering::Relaxed),
            latency_us: st.latency_us.load(Ordering::Relaxed),
        }
    }
}

impl ServerSnapshot {
    /// The status as stats_mysql_connection_pool shows it: SHUNNED_REPLICATION_LAG for a
    /// server kept out for its replication lag alone, as ProxySQL.
    pub fn status_name(&self) -> &'static str {
        if self.lag_shunned {
            "SHUNNED_REPLICATION_LAG"
        } else {
            self.status.as_str()
        }
    }
}

fn shun_name(reason: u8) -> &'static str {
    match reason {
        Shun::LAG => "replication lag",
        Shun::PING => "ping failures",
        Shun::LAG_UNKNOWN => "replication lag not read yet",
        _ => "monitor",
    }
}
