//! The admin interface's handle on the running proxy.

use crate::{pool_settings, server_specs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use weir_admin::{Control, StatsReset};
use weir_config::Runtime;
use weir_pool::Pool;
use weir_session::Shared;

/// Implements [`Control`] over the shared session state and the pool.
pub struct ProxyControl {
    /// What sessions read.
    pub shared: Arc<Shared>,
    /// Hostgroups and connections.
    pub pool: Arc<Pool>,
    /// Set by PROXYSQL PAUSE; the accept loops read it.
    pub paused: Arc<AtomicBool>,
    /// Cancelled by PROXYSQL SHUTDOWN; the main thread waits on it next to the signals.
    pub shutdown: CancellationToken,
}

impl Control for ProxyControl {
    fn runtime(&self) -> Arc<Runtime> {
        self.shared.runtime.load_full()
    }

    fn apply(&self, runtime: Runtime) {
        // Settings and servers first: a session that loads the new snapshot must find the
        // servers it names.
        self.pool.set_settings(pool_settings(&runtime));
        self.pool.apply_servers(&server_specs(&runtime));
        self.shared.runtime.store(Arc::new(runtime));
    }

    fn stats(&self, reset: StatsReset) -> weir_stats::Snapshot {
        weir_session::stats_snapshot_reset(&self.shared, reset.connection_pool, reset.errors)
    }

    fn pause(&self) -> bool {
        let was = self.paused.swap(true, Ordering::Relaxed);
        if !was {
            tracing::info!("paused: new client connections are refused");
        }
        !was
    }

    fn resume(&self) -> bool {
        let was = self.paused.swap(false, Ordering::Relaxed);
        if was {
            tracing::info!("resumed: accepting client connections");
        }
        was
    }

    fn shutdown(&self) {
        self.shutdown.cancel();
    }
}
