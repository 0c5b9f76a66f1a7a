//! The monitor: connect, ping, read_only and replication-lag checks of every backend server, on
//! their own intervals and with their own timeouts, as mysql-monitor_username. Results go to
//! the `monitor` schema's log tables ([`weir_stats::MonitorLog`]); what they mean goes to the
//! pool: a server that stops answering pings or lags behind its max_replication_lag is SHUNNED
//! (on top of its configured status, which the monitor never changes) and comes back when it
//! recovers; servers of mysql_replication_hostgroups move between the writer and the reader
//! hostgroup with their read_only.
//!
//! The monitor runs on its own thread ([`Monitor::run`]); sessions never wait for it.
#![forbid(unsafe_code)]

mod checks;
mod topology;

pub use topology::{server_specs, ReadOnlyMap};

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;
use weir_backend::{BackendConn, ConnectParams, Credential, Endpoint};
use weir_config::Runtime;
use weir_pool::{Pool, ServerState, Shun};
use weir_stats::{MonitorCheck, MonitorLog, MonitorRow};

/// Where the monitor reads the configuration in force.
pub type RuntimeSource = Arc<dyn Fn() -> Arc<Runtime> + Send + Sync>;

/// A server as the monitor sees it: one endpoint, whatever hostgroups it is in.
type Target = (String, u16);

/// The monitor of one weir process.
pub struct Monitor {
    pool: Arc<Pool>,
    runtime: RuntimeSource,
    log: Arc<MonitorLog>,
    read_only: Arc<ReadOnlyMap>,
}

/// A check's interval and timeout variables.
fn schedule(check: MonitorCheck, m: &weir_config::MysqlVariables) -> (Duration, Duration) {
    match check {
        MonitorCheck::Connect => (m.monitor_connect_interval, m.monitor_connect_timeout),
        MonitorCheck::Ping => (m.monitor_ping_interval, m.monitor_ping_timeout),
        MonitorCheck::ReadOnly => (m.monitor_read_only_interval, m.monitor_read_only_timeout),
        MonitorCheck::ReplicationLag => (
            m.monitor_replication_lag_interval,
            m.monitor_replication_lag_timeout,
        ),
    }
}

/// Shortest pause between two rounds of a check, whatever its interval says.
const MIN_INTERVAL: Duration = Duration::from_millis(100);

impl Monitor {
    /// A monitor of `pool`'s servers, logging to `log`, recording read_only in `read_only`.
    pub fn new(
        pool: Arc<Pool>,
        runtime: RuntimeSource,
        log: Arc<MonitorLog>,
        read_only: Arc<ReadOnlyMap>,
    ) -> Monitor {
        Monitor {
            pool,
            runtime,
            log,
            read_only,
        }
    }

    /// Runs every check until `stop`.
    pub async fn run(self: Arc<Self>, stop: CancellationToken) {
        tokio::join!(
            self.clone().check_loop(MonitorCheck::Connect, stop.clone()),
            self.clone().check_loop(MonitorCheck::Ping, stop.clone()),
            self.clone()
                .check_loop(MonitorCheck::ReadOnly, stop.clone()),
            self.clone().check_loop(MonitorCheck::ReplicationLag, stop),
        );
    }

    async fn check_loop(self: Arc<Self>, check: MonitorCheck, stop: CancellationToken) {
        // Connections kept from one round to the next (not for connect checks, which measure
        // a new connection each time).
        let mut conns: HashMap<Target, BackendConn> = HashMap::new();
        let mut state = checks::LoopState::default();
        // When the last round ran, and whether the monitor was on then.
        let mut last_round: Option<(std::time::Instant, bool)> = None;
        // When the lag of servers waiting for it was last read outside the regular rounds.
        let mut last_unknown_round = std::time::Instant::now() - MIN_INTERVAL;
        loop {
            // Registered before the runtime is read: a LOAD from then on wakes the loop, which
            // then goes by the new interval at once (and checks read_only at once when the
            // LOAD moved servers).
            let loaded = self.read_only.notified();
            tokio::pin!(loaded);
            loaded.as_mut().enable();
            let rt = (self.runtime)();
            let m = &rt.mysql;
            let interval = schedule(check, m).0.max(MIN_INTERVAL);
            let recheck = match check {
                MonitorCheck::ReadOnly => self.read_only.take_recheck(),
                // Servers waiting for their lag to be read are checked at once (at most every
                // MIN_INTERVAL).
                MonitorCheck::ReplicationLag => {
                    lag_unknown(&self.pool) && last_unknown_round.elapsed() >= MIN_INTERVAL
                }
                _ => false,
            };
            let due =
                last_round.is_none_or(|(t, on)| on != m.monitor_enabled || t.elapsed() >= interval);
            if recheck || due {
                if due || check != MonitorCheck::ReplicationLag {
                    last_round = Some((std::time::Instant::now(), m.monitor_enabled));
                } else {
                    last_unknown_round = std::time::Instant::now();
                }
                if m.monitor_enabled {
                    // A round only for servers waiting for their lag: the others' checks keep
                    // their interval (and their count of checks in a row over the limit).
                    let only_unknown = recheck && !due && check == MonitorCheck::ReplicationLag;
                    self.round(check, &rt, &mut conns, &mut state, only_unknown)
                        .await;
                } else {
                    conns.clear();
                    self.forget(check);
                }
            }
            let mut wait = last_round.map_or(Duration::ZERO, |(t, _)| {
                interval.saturating_sub(t.elapsed())
            });
            if check == MonitorCheck::ReplicationLag && lag_unknown(&self.pool) {
                wait = wait.min(MIN_INTERVAL.saturating_sub(last_unknown_round.elapsed()));
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
                _ = &mut loaded => {}
            }
        }
    }

    /// With the monitor off, nothing it concluded stays in force (nor waits for it).
    fn forget(&self, check: MonitorCheck) {
        let reason = match check {
            MonitorCheck::Ping => Shun::PING,
            MonitorCheck::ReplicationLag => Shun::LAG | Shun::LAG_UNKNOWN,
            MonitorCheck::ReadOnly => {
                if self.read_only.clear() {
                    self.reapply();
                }
                return;
            }
            MonitorCheck::Connect => return,
        };
        for s in self.pool.servers() {
            s.unshun(reason);
        }
    }

    /// Puts the configured servers, moved by the read_only the monitor saw, in force.
    fn reapply(&self) {
        let placing = self.read_only.placing();
        let rt = (self.runtime)();
        self.pool
            .apply_servers(&server_specs(&rt, &self.read_only.snapshot()));
        drop(placing);
        // A server moved to another hostgroup may wait for its lag to be read: the lag loop
        // reads it now.
        self.read_only.loaded();
    }

    /// One round of `check` over the servers it applies to, all at once.
    async fn round(
        &self,
        check: MonitorCheck,
        rt: &Runtime,
        conns: &mut HashMap<Target, BackendConn>,
        state: &mut checks::LoopState,
        only_unknown: bool,
    ) {
        let servers = self.pool.servers();
        let generation = self.read_only.generation();
        let mut targets = checks::targets(check, rt, &servers);
        if only_unknown {
            targets.retain(|t| {
                servers.iter().any(|s| {
                    let spec = s.spec();
                    s.shun_reasons() & Shun::LAG_UNKNOWN != 0
                        && spec.hostname == t.0
                        && spec.port == t.1
                })
            });
        } else {
            conns.retain(|t, _| targets.contains(t));
        }
        let m = &rt.mysql;
        let (_, timeout) = schedule(check, m);
        let mut tasks = tokio::task::JoinSet::new();
        for target in targets {
            let conn = if check == MonitorCheck::Connect {
                None
            } else {
                conns.remove(&target)
            };
            let params = ConnectParams {
                endpoint: Endpoint::new(&target.0, target.1),
                username: m.monitor_username.clone(),
                credential: Credential::Clear(m.monitor_password.clone()),
                schema: None,
                collation: 33,
                capabilities: 0,
                mariadb_capabilities: 0,
                connect_timeout: timeout,
            };
            let query = checks::query_for(check, rt, &target);
            tasks.spawn(async move {
                let started = SystemTime::now();
                let t0 = std::time::Instant::now();
                let result =
                    tokio::time::timeout(timeout, checks::run(check, conn, &params, query)).await;
                let took = t0.elapsed();
                let (result, conn) = match result {
                    Ok((r, conn)) => (r, conn),
                    Err(_) => (
                        Err(checks::CheckError {
                            message: format!("timeout after {} ms", timeout.as_millis()),
                            unreachable: true,
                        }),
                        None,
                    ),
                };
                (target, started, took, result, conn)
            });
        }
        let history_us = m.monitor_history.as_micros() as u64;
        while let Some(done) = tasks.join_next().await {
            let Ok((target, started, took, result, conn)) = done else {
                continue;
            };
            if let Some(c) = conn {
                conns.insert(target.clone(), c);
            }
            let time_start_us = started
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_micros() as u64);
            let row = MonitorRow {
                check,
                hostname: target.0.clone(),
                port: target.1,
                time_start_us,
                success_time_us: if result.is_ok() {
                    took.as_micros() as u64
                } else {
                    0
                },
                value: result.as_ref().ok().copied().flatten(),
                error: result.as_ref().err().map(|e| e.message.clone()),
            };
            self.log.record(row, history_us);
            let on_target: Vec<Arc<ServerState>> = servers
                .iter()
                .filter(|s| {
                    let spec = s.spec();
                    spec.hostname == target.0 && spec.port == target.1
                })
                .cloned()
                .collect();
            match check {
                MonitorCheck::Connect => {}
                MonitorCheck::Ping => {
                    if state.ping(
                        &target,
                        &on_target,
                        &result,
                        took,
                        m.monitor_ping_max_failures,
                    ) {
                        // The lag loop reads it now rather than at its next round.
                        self.read_only.loaded();
                    }
                }
                MonitorCheck::ReplicationLag => state.lag(&target, &on_target, &result, m),
                MonitorCheck::ReadOnly => {
                    if let Ok(Some(v)) = result {
                        if self.read_only.set(&target, v != 0, generation) {
                            tracing::info!(server = %format!("{}:{}", target.0, target.1), read_only = v, "read_only changed: moving the server between replication hostgroups");
                            self.reapply();
                        }
                    }
                }
            }
        }
    }
}

/// Whether a server waits for the monitor to read its replication lag.
fn lag_unknown(pool: &Pool) -> bool {
    pool.servers()
        .iter()
        .any(|s| s.shun_reasons() & Shun::LAG_UNKNOWN != 0)
}
