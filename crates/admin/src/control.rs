//! The seam between the admin interface and the running proxy: the admin asks, the server
//! crate answers. The admin never reaches into the pool or the sessions itself.

use std::sync::Arc;
use weir_config::Runtime;

/// Which counters a stats read also zeroes (the `*_reset` tables).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StatsReset {
    /// `stats_mysql_connection_pool_reset` was read.
    pub connection_pool: bool,
    /// `stats_mysql_errors_reset` was read.
    pub errors: bool,
    /// `stats_mysql_query_digest_reset` was read.
    pub digests: bool,
}

/// What the admin interface needs from the proxy it configures.
pub trait Control: Send + Sync + 'static {
    /// The configuration in force.
    fn runtime(&self) -> Arc<Runtime>;
    /// Puts a validated snapshot in force: compiles what the proxy compiles (query rules),
    /// swaps it for new sessions, applies live settings (pool timeouts, servers) and leaves
    /// sessions in flight alone. On `Err` (one line per problem) nothing changed.
    fn apply(&self, runtime: Runtime) -> Result<(), Vec<String>>;
    /// Whether `apply` would take `runtime` (what it compiles compiles), without applying
    /// it: SAVE ... TO DISK refuses what weir could not start with.
    fn check(&self, _runtime: &Runtime) -> Result<(), Vec<String>> {
        Ok(())
    }
    /// Counters and live state for the stats tables, zeroing what `reset` asks for.
    fn stats(&self, reset: StatsReset) -> weir_stats::Snapshot;
    /// Stops accepting client connections; false when already paused.
    fn pause(&self) -> bool;
    /// Accepts client connections again; false when not paused.
    fn resume(&self) -> bool;
    /// Starts the same graceful shutdown as SIGTERM.
    fn shutdown(&self);
    /// Empties the query cache (PROXYSQL FLUSH QUERY CACHE); returns the entries it held.
    fn flush_query_cache(&self) -> u64;
    /// `KILL [CONNECTION | QUERY] id` of a client session (`query_only`: its statement);
    /// false when no session has that id (stats_mysql_processlist's SessionID).
    fn kill_session(&self, _id: u64, _query_only: bool) -> bool {
        false
    }
    /// The version clients are told (mysql-server_version, or the backends' own when it is
    /// empty); the admin interface tells the same.
    fn server_version(&self) -> String {
        self.runtime().mysql.server_version.clone()
    }
}
