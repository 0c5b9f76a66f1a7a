//! Global counters (stats_mysql_global), plain atomics read when asked.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters for the whole proxy.
#[derive(Debug, Default)]
pub struct GlobalStats {
    /// Client connections accepted.
    pub client_connections_created: AtomicU64,
    /// Client connections refused or failed at handshake.
    pub client_connections_aborted: AtomicU64,
    /// Client commands received.
    pub questions: AtomicU64,
    /// Backend connection failures seen by sessions.
    pub backend_errors: AtomicU64,
}

impl GlobalStats {
    /// Adds one to a counter.
    pub fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
