//! One client's life: handshake and authentication, one handler per command, the backend
//! connection it holds or returns, and the relay of replies.
//!
//! This is the only crate that calls the pool and the backends on behalf of clients; nothing
//! depends on it but the server crate that wires everything.
#![forbid(unsafe_code)]

mod activity;
mod auth;
pub mod busy_poll;
mod cache;
pub mod client;
mod commands;
mod exec;
mod fast_forward;
mod pins;
mod pipeline;
pub mod registry;
pub mod relay;
mod session;
mod snapshot;
mod state;
mod stats;
pub mod stmt;

pub use auth::announced_version;
pub use commands::kill_from_admin;
pub use registry::{Registry, SessionHandle};
pub use session::{serve, serve_tcp};
pub use snapshot::{stats_snapshot, stats_snapshot_reset};
pub use stats::GlobalStats;

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use weir_config::Runtime;
use weir_pool::Pool;

/// What every session shares: the runtime snapshot, the pool, the registry.
pub struct Shared {
    /// The configuration in force; replaced atomically on LOAD ... TO RUNTIME.
    pub runtime: ArcSwap<Runtime>,
    /// Hostgroups and backend connections.
    pub pool: Arc<Pool>,
    /// Live sessions.
    pub registry: Arc<Registry>,
    /// Cancelled when weir shuts down: idle sessions close, busy ones finish their statement.
    pub shutdown: CancellationToken,
    /// Global counters.
    pub stats: GlobalStats,
    /// Statement counts and latencies per command (stats_mysql_commands_counters).
    pub commands: weir_stats::CommandCounters,
    /// Errors from backends and failed connects (stats_mysql_errors).
    pub errors: weir_stats::ErrorLog,
    /// Query rules in force, compiled at LOAD MYSQL QUERY RULES TO RUNTIME; replaced with
    /// [`Shared::set_rules`].
    pub rules: ArcSwap<weir_rules::CompiledRules>,
    /// The generation of `rules` (`CompiledRules::generation`): one relaxed load tells a
    /// prepared statement's execution whether the rules changed since its prepare.
    pub rules_generation: std::sync::atomic::AtomicU64,
    /// Executions per query digest (stats_mysql_query_digest), bounded.
    pub digests: weir_stats::DigestStats,
    /// Prepared statements of every session, shared across backend connections.
    pub statements: stmt::StmtRegistry,
    /// The monitor's check results (the `monitor` schema's log tables).
    pub monitor_log: Arc<weir_stats::MonitorLog>,
    /// Replies of queries whose rules set cache_ttl (bounded by mysql-query_cache_size_MB).
    pub cache: Arc<weir_cache::QueryCache>,
    /// `SHA1(password)` of users configured only by hash, learned from their logins, so that
    /// weir can log in to backends as them.
    learned_stage1: Mutex<HashMap<String, [u8; 20]>>,
    /// (user, hostgroup, schema) a login recently found on a backend: later logins asking for
    /// it are not checked again until [`session::LOGIN_SCHEMA_TRUST`] has passed.
    pub(crate) login_schemas: Mutex<HashMap<LoginSchema, std::time::Instant>>,
}

/// A schema asked for at login: (user, hostgroup, schema).
pub(crate) type LoginSchema = (Box<str>, u32, Box<str>);

/// The query cache's byte budget from mysql-query_cache_size_MB.
pub fn cache_bytes(runtime: &Runtime) -> u64 {
    u64::from(runtime.mysql.query_cache_size_mb) << 20
}

impl Shared {
    /// Puts `rules` in force.
    pub fn set_rules(&self, rules: weir_rules::CompiledRules) {
        let generation = rules.generation();
        self.rules.store(Arc::new(rules));
        // After the store: a statement that sees the new generation finds the new rules.
        self.rules_generation
            .store(generation, std::sync::atomic::Ordering::Release);
    }

    /// Shared state around a runtime snapshot and a pool.
    pub fn new(runtime: Arc<Runtime>, pool: Arc<Pool>) -> Arc<Shared> {
        let max_digests = runtime.mysql.query_digests_max_entries as usize;
        let cache = Arc::new(weir_cache::QueryCache::new(cache_bytes(&runtime)));
        let empty_rules = weir_rules::CompiledRules::empty();
        let empty_generation = empty_rules.generation();
        Arc::new(Shared {
            runtime: ArcSwap::new(runtime),
            pool,
            registry: Arc::new(Registry::default()),
            shutdown: CancellationToken::new(),
            stats: GlobalStats::default(),
            // One shard per worker: sessions on different event loops count apart.
            commands: weir_stats::CommandCounters::new(weir_pool::worker::count()),
            errors: weir_stats::ErrorLog::new(),
            rules: ArcSwap::from_pointee(empty_rules),
            rules_generation: std::sync::atomic::AtomicU64::new(empty_generation),
            digests: weir_stats::DigestStats::new(weir_pool::worker::count(), max_digests),
            statements: stmt::StmtRegistry::default(),
            monitor_log: Arc::new(weir_stats::MonitorLog::new()),
            cache,
            learned_stage1: Mutex::new(HashMap::new()),
            login_schemas: Mutex::new(HashMap::new()),
        })
    }
}
