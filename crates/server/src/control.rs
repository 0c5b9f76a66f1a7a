//! The admin interface's handle on the running proxy.

use crate::listen::{self, Listener};
use crate::{pool_settings, server_specs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use weir_admin::{Control, StatsReset};
use weir_config::{ListenAddr, Runtime};
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
    /// read_only as the monitor saw it: moves servers between replication hostgroups.
    pub read_only: Arc<weir_monitor::ReadOnlyMap>,
    /// Where the admin thread learns of admin listeners to add or stop.
    pub admin_ifaces: tokio::sync::mpsc::UnboundedSender<IfaceChange>,
}

/// admin-mysql_ifaces changed by a LOAD: listeners already bound for the new addresses, and
/// the addresses to stop listening on.
pub struct IfaceChange {
    /// New addresses, bound.
    pub add: Vec<(ListenAddr, Listener)>,
    /// Addresses no longer listed.
    pub remove: Vec<ListenAddr>,
}

/// Binds the addresses of `new` that `old` lacks. Binding happens before the LOAD takes
/// effect, so an address that cannot be listened on refuses the LOAD (runtime unchanged)
/// instead of leaving the admin interface short of a listener it reports.
fn bind_changed(old: &[ListenAddr], new: &[ListenAddr]) -> Result<IfaceChange, Vec<String>> {
    let remove: Vec<ListenAddr> = old.iter().filter(|a| !new.contains(a)).cloned().collect();
    let mut add = Vec::new();
    for a in new.iter().filter(|a| !old.contains(a)) {
        match listen::bind_one(a) {
            Ok(l) => add.push((a.clone(), l)),
            Err(e) => {
                let in_use = matches!(&e, crate::StartError::Io { source, .. }
                    if source.kind() == std::io::ErrorKind::AddrInUse);
                let hint = if in_use && !remove.is_empty() {
                    " (if weir holds it through an address this LOAD removes, such as \
                     0.0.0.0:6032 for 127.0.0.1:6032, that one is released only after the \
                     LOAD: move through another port in two LOADs, or restart)"
                } else {
                    ""
                };
                // Listeners bound so far close as `add` drops.
                return Err(vec![format!("admin-mysql_ifaces: {e}{hint}")]);
            }
        }
    }
    Ok(IfaceChange { add, remove })
}

impl Control for ProxyControl {
    fn runtime(&self) -> Arc<Runtime> {
        self.shared.runtime.load_full()
    }

    fn server_version(&self) -> String {
        weir_session::announced_version(&self.shared.runtime.load().mysql.server_version)
    }

    fn apply(&self, runtime: Runtime) -> Result<(), Vec<String>> {
        // Compiled rules are kept while they are unchanged: recompiling thousands of rules
        // takes time, and their hit counters would restart.
        let current = self.shared.runtime.load_full();
        let rules = if current.query_rules == runtime.query_rules {
            None
        } else {
            Some(compile_rules(&runtime)?)
        };
        let ifaces = if current.admin.mysql_ifaces == runtime.admin.mysql_ifaces {
            None
        } else {
            Some(bind_changed(
                &current.admin.mysql_ifaces,
                &runtime.admin.mysql_ifaces,
            )?)
        };
        // The servers and the runtime change together for the monitor, which places servers
        // by the runtime it reads.
        let placing = self.read_only.placing();
        self.read_only.loading(&current, &runtime);
        drop(current);
        // Settings and servers first: a session that loads the new snapshot must find the
        // servers it names.
        self.pool.set_settings(pool_settings(&runtime));
        self.pool
            .apply_servers(&server_specs(&runtime, &self.read_only));
        self.shared
            .digests
            .set_max_entries(runtime.mysql.query_digests_max_entries as usize);
        self.shared
            .cache
            .set_capacity(weir_session::cache_bytes(&runtime));
        if let Some(rules) = rules {
            self.shared.set_rules(rules);
        }
        self.shared.runtime.store(Arc::new(runtime));
        drop(placing);
        self.read_only.loaded();
        if let Some(change) = ifaces {
            if self.admin_ifaces.send(change).is_err() {
                tracing::warn!("admin-mysql_ifaces changed while weir stops: not applied");
            }
        }
        Ok(())
    }

    fn check(&self, runtime: &Runtime) -> Result<(), Vec<String>> {
        // The rules in force compiled already (LOAD, then SAVE: the usual order).
        if self.shared.runtime.load().query_rules == runtime.query_rules {
            return Ok(());
        }
        compile_rules(runtime).map(drop)
    }

    fn stats(&self, reset: StatsReset) -> weir_stats::Snapshot {
        weir_session::stats_snapshot_reset(
            &self.shared,
            reset.connection_pool,
            reset.errors,
            reset.digests,
        )
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

    fn flush_query_cache(&self) -> u64 {
        let n = self.shared.cache.clear();
        tracing::info!(entries = n, "query cache flushed");
        n
    }

    fn kill_session(&self, id: u64, query_only: bool) -> bool {
        weir_session::kill_from_admin(&self.shared, id, query_only)
    }
}

/// The runtime's query rules, compiled; every problem as one line naming its rule.
pub fn compile_rules(runtime: &Runtime) -> Result<weir_rules::CompiledRules, Vec<String>> {
    weir_rules::CompiledRules::compile(&runtime.query_rules)
        .map_err(|errors| errors.iter().map(ToString::to_string).collect())
}
