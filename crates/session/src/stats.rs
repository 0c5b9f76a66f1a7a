//! Global counters (stats_mysql_global), plain atomics read when asked.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Counters for the whole proxy. Each is bumped with one relaxed atomic add where the event
/// happens; gauges (connected clients, open transactions...) are computed at snapshot time
/// instead of being maintained on the data path.
#[derive(Debug)]
pub struct GlobalStats {
    /// When weir started (ProxySQL_Uptime).
    pub started: Instant,
    /// Client connections accepted.
    pub client_connections_created: AtomicU64,
    /// Client connections refused or failed at handshake.
    pub client_connections_aborted: AtomicU64,
    /// Client commands received.
    pub questions: AtomicU64,
    /// Backend connection failures seen by sessions.
    pub backend_errors: AtomicU64,
    /// Backend connections closed by sessions after an error on them (with the pool's failed
    /// connects: Server_Connections_aborted).
    pub server_connections_aborted: AtomicU64,
    /// Time of commands relayed from a backend, from receipt to the end of the reply.
    pub backend_query_time_nsec: AtomicU64,
    /// Statements slower than mysql-long_query_time.
    pub slow_queries: AtomicU64,
    /// COM_STMT_PREPARE received from clients.
    pub com_frontend_stmt_prepare: AtomicU64,
    /// COM_STMT_EXECUTE received from clients.
    pub com_frontend_stmt_execute: AtomicU64,
    /// COM_STMT_CLOSE received from clients.
    pub com_frontend_stmt_close: AtomicU64,
    /// COM_STMT_PREPARE sent to backends.
    pub com_backend_stmt_prepare: AtomicU64,
    /// COM_STMT_EXECUTE sent to backends.
    pub com_backend_stmt_execute: AtomicU64,
    /// COM_STMT_CLOSE sent to backends.
    pub com_backend_stmt_close: AtomicU64,
    /// Time spent evaluating query rules.
    pub query_processor_time_nsec: AtomicU64,
    /// KILL QUERY weir sent to backends (statement timeouts, client KILL QUERY).
    pub killed_backend_queries: AtomicU64,
    /// KILL weir sent to backends (client KILL, clients gone mid-statement).
    pub killed_backend_connections: AtomicU64,
    /// Statements re-run on another connection after their backend failed.
    pub query_retries: AtomicU64,
    /// Statements stopped by their timeout (rule or mysql-default_query_timeout).
    pub query_timeouts: AtomicU64,
    /// Statements sent to a backend connection behind another client's (mysql-pipeline_depth).
    pub pipelined_statements: AtomicU64,
    /// Pipelined statements whose turn had not come within mysql-pipeline_max_wait_ms, run on
    /// a connection of their own instead.
    pub pipelined_statements_left_line: AtomicU64,
    /// Logins refused for an unknown user or a wrong password (Access_Denied_Wrong_Password).
    pub access_denied_wrong_password: AtomicU64,
    /// Logins refused by mysql-max_connections (Access_Denied_Max_Connections).
    pub access_denied_max_connections: AtomicU64,
    /// Logins refused by the user's max_connections (Access_Denied_Max_User_Connections).
    pub access_denied_max_user_connections: AtomicU64,
    /// COM_INIT_DB received from clients (Com_frontend_init_db).
    pub com_frontend_init_db: AtomicU64,
    /// COM_INIT_DB weir sent to bring a connection to a client's schema (Com_backend_init_db).
    pub com_backend_init_db: AtomicU64,
    /// SETs weir sent to bring a connection to a client's session variables (weir's own
    /// Backend_state_syncs; ProxySQL counts some of them as Com_backend_set_names).
    pub backend_state_syncs: AtomicU64,
    /// SET statements from clients that assign autocommit (Com_autocommit).
    pub com_autocommit: AtomicU64,
}

impl Default for GlobalStats {
    fn default() -> Self {
        GlobalStats {
            started: Instant::now(),
            client_connections_created: AtomicU64::new(0),
            client_connections_aborted: AtomicU64::new(0),
            questions: AtomicU64::new(0),
            backend_errors: AtomicU64::new(0),
            server_connections_aborted: AtomicU64::new(0),
            backend_query_time_nsec: AtomicU64::new(0),
            slow_queries: AtomicU64::new(0),
            com_frontend_stmt_prepare: AtomicU64::new(0),
            com_frontend_stmt_execute: AtomicU64::new(0),
            com_frontend_stmt_close: AtomicU64::new(0),
            com_backend_stmt_prepare: AtomicU64::new(0),
            com_backend_stmt_execute: AtomicU64::new(0),
            com_backend_stmt_close: AtomicU64::new(0),
            query_processor_time_nsec: AtomicU64::new(0),
            killed_backend_queries: AtomicU64::new(0),
            killed_backend_connections: AtomicU64::new(0),
            query_retries: AtomicU64::new(0),
            query_timeouts: AtomicU64::new(0),
            pipelined_statements: AtomicU64::new(0),
            pipelined_statements_left_line: AtomicU64::new(0),
            access_denied_wrong_password: AtomicU64::new(0),
            access_denied_max_connections: AtomicU64::new(0),
            access_denied_max_user_connections: AtomicU64::new(0),
            com_frontend_init_db: AtomicU64::new(0),
            com_backend_init_db: AtomicU64::new(0),
            backend_state_syncs: AtomicU64::new(0),
            com_autocommit: AtomicU64::new(0),
        }
    }
}

impl GlobalStats {
    /// Adds one to a counter.
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds a duration, in nanoseconds, to a counter.
    pub fn add_nanos(counter: &AtomicU64, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        counter.fetch_add(ns, Ordering::Relaxed);
    }

    /// Adds `n` to a counter.
    pub fn add(counter: &AtomicU64, n: u64) {
        if n != 0 {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }

    /// Reads a counter.
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
