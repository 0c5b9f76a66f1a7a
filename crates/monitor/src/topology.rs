//! The servers the pool runs with: the configured ones, moved between the writer and reader
//! hostgroups of mysql_replication_hostgroups by the read_only the monitor saw.

use crate::Target;
use parking_lot::{Mutex, MutexGuard, RwLock};
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use tokio::sync::Notify;
use weir_config::Runtime;
use weir_pool::{ServerSpec, ServerStatus};

/// The last read_only seen per server (servers of replication hostgroups only), and what the
/// admin's LOADs tell the monitor.
#[derive(Debug, Default)]
pub struct ReadOnlyMap {
    seen: RwLock<HashMap<Target, bool>>,
    /// Bumped when a LOAD moved servers of replication hostgroups: read_only values read
    /// before may predate what the DBA did (a switchover flips read_only, then moves the
    /// servers), so results of checks started before are dropped.
    generation: AtomicU64,
    /// A LOAD moved servers of replication hostgroups: their read_only is checked at once.
    recheck: AtomicBool,
    /// Wakes the monitor's check loops after a LOAD (new intervals, servers to check).
    loaded: Notify,
    /// Held while the servers are computed and put in force, by a LOAD or by the monitor, so
    /// that neither undoes the other with an older view.
    placing: Mutex<()>,
}

impl ReadOnlyMap {
    /// Records a server's read_only, read by a check started at `generation`; true when it
    /// changed (or was not known). A value read before a LOAD moved servers is dropped.
    pub fn set(&self, target: &Target, read_only: bool, generation: u64) -> bool {
        let mut seen = self.seen.write();
        if self.generation.load(Ordering::Acquire) != generation {
            return false;
        }
        seen.insert(target.clone(), read_only) != Some(read_only)
    }

    /// The generation a check starting now records its results with.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Forgets everything; true when something was known.
    pub fn clear(&self) -> bool {
        let mut seen = self.seen.write();
        let had = !seen.is_empty();
        seen.clear();
        had
    }

    /// A copy.
    pub fn snapshot(&self) -> HashMap<Target, bool> {
        self.seen.read().clone()
    }

    /// Before `after` is put in force in place of `before` (a LOAD): the read_only seen for
    /// a server whose place in the replication hostgroups the LOAD changes is forgotten, so
    /// the server goes where it is configured, as the DBA just said, rather than where a
    /// value read before the change would put it (the old primary of a switchover back in
    /// the writer hostgroup); the monitor then checks those servers at once. Servers the
    /// LOAD leaves in place keep what the monitor saw.
    pub fn loading(&self, before: &Runtime, after: &Runtime) {
        let moved: Vec<Target> = if before.replication_hostgroups != after.replication_hostgroups {
            self.seen.read().keys().cloned().collect()
        } else {
            let (was, is) = (placements(before), placements(after));
            was.symmetric_difference(&is)
                .map(|(host, port, _)| (host.clone(), *port))
                .collect()
        };
        if moved.is_empty() {
            return;
        }
        let mut seen = self.seen.write();
        self.generation.fetch_add(1, Ordering::AcqRel);
        for t in &moved {
            seen.remove(t);
        }
        self.recheck.store(true, Ordering::Release);
    }

    /// After a LOAD: wakes the monitor's check loops.
    pub fn loaded(&self) {
        self.loaded.notify_waiters();
    }

    /// Completes at the next [`ReadOnlyMap::loaded`].
    pub(crate) fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.loaded.notified()
    }

    /// Whether a LOAD asked for read_only to be checked at once (the request is taken).
    pub(crate) fn take_recheck(&self) -> bool {
        self.recheck.swap(false, Ordering::AcqRel)
    }

    /// Held while the servers are computed and put in force.
    pub fn placing(&self) -> MutexGuard<'_, ()> {
        self.placing.lock()
    }
}

/// (host, port, hostgroup) of the configured servers in replication hostgroups.
fn placements(rt: &Runtime) -> BTreeSet<(String, u16, u32)> {
    rt.servers
        .iter()
        .filter(|s| {
            rt.replication_hostgroups.iter().any(|r| {
                r.writer_hostgroup == s.hostgroup_id || r.reader_hostgroup == s.hostgroup_id
            })
        })
        .map(|s| (s.hostname.clone(), s.port, s.hostgroup_id))
        .collect()
}

fn status(s: weir_config::ServerStatus) -> ServerStatus {
    match s {
        weir_config::ServerStatus::Online => ServerStatus::Online,
        weir_config::ServerStatus::Shunned => ServerStatus::Shunned,
        weir_config::ServerStatus::OfflineSoft => ServerStatus::OfflineSoft,
        weir_config::ServerStatus::OfflineHard => ServerStatus::OfflineHard,
    }
}

/// The pool's servers: every configured row, except that a server of a replication hostgroup
/// pair whose read_only is known sits in the writer hostgroup when writable (and in the reader
/// one too with mysql-monitor_writer_is_also_reader), in the reader hostgroup only when read
/// only. A server moved to a hostgroup it is not configured in keeps its configured attributes.
pub fn server_specs(rt: &Runtime, read_only: &HashMap<Target, bool>) -> Vec<ServerSpec> {
    let spec_of = |s: &weir_config::ServerRow, hostgroup: u32| ServerSpec {
        hostgroup,
        hostname: s.hostname.clone(),
        port: s.port,
        status: status(s.status),
        weight: s.weight,
        max_connections: s.max_connections,
        max_replication_lag: s.max_replication_lag,
    };
    let mut out: Vec<ServerSpec> = Vec::with_capacity(rt.servers.len());
    let in_pair = |hg: u32| {
        rt.replication_hostgroups
            .iter()
            .find(|r| r.writer_hostgroup == hg || r.reader_hostgroup == hg)
    };
    for s in &rt.servers {
        let target = (s.hostname.clone(), s.port);
        let (Some(pair), Some(&ro)) = (in_pair(s.hostgroup_id), read_only.get(&target)) else {
            out.push(spec_of(s, s.hostgroup_id));
            continue;
        };
        let mut wanted = Vec::with_capacity(2);
        if ro {
            wanted.push(pair.reader_hostgroup);
        } else {
            wanted.push(pair.writer_hostgroup);
            if rt.mysql.monitor_writer_is_also_reader {
                wanted.push(pair.reader_hostgroup);
            }
        }
        for hg in wanted {
            let exists = out
                .iter()
                .any(|o| o.hostgroup == hg && o.hostname == s.hostname && o.port == s.port);
            if !exists {
                // The row configured in that very hostgroup wins over a copy.
                let own = rt
                    .servers
                    .iter()
                    .find(|o| o.hostgroup_id == hg && o.hostname == s.hostname && o.port == s.port);
                out.push(spec_of(own.unwrap_or(s), hg));
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use weir_config::{ConfigTables, ReplicationHostgroupRow, ServerRow};

    fn runtime(also_reader: bool) -> Runtime {
        let mut t = ConfigTables::default();
        for (hg, port) in [(0, 1), (1, 2), (1, 3)] {
            let mut s = ServerRow::new(hg, "127.0.0.1", port);
            s.weight = 7;
            t.mysql_servers.push(s);
        }
        t.mysql_replication_hostgroups
            .push(ReplicationHostgroupRow::new(0, 1));
        let mut rt = Runtime::build(&t).unwrap();
        rt.mysql.monitor_writer_is_also_reader = also_reader;
        rt
    }

    fn placed(specs: &[ServerSpec]) -> Vec<(u32, u16)> {
        let mut v: Vec<(u32, u16)> = specs.iter().map(|s| (s.hostgroup, s.port)).collect();
        v.sort();
        v
    }

    #[test]
    fn servers_follow_their_read_only() {
        let rt = runtime(false);
        assert_eq!(
            placed(&server_specs(&rt, &HashMap::new())),
            vec![(0, 1), (1, 2), (1, 3)]
        );
        // The replica on port 2 was promoted and the old primary made read only.
        let ro: HashMap<Target, bool> = [
            (("127.0.0.1".to_string(), 1), true),
            (("127.0.0.1".to_string(), 2), false),
            (("127.0.0.1".to_string(), 3), true),
        ]
        .into();
        let specs = server_specs(&rt, &ro);
        assert_eq!(placed(&specs), vec![(0, 2), (1, 1), (1, 3)]);
        assert!(specs.iter().all(|s| s.weight == 7));
        let rt = runtime(true);
        assert_eq!(
            placed(&server_specs(&rt, &ro)),
            vec![(0, 2), (1, 1), (1, 2), (1, 3)]
        );
    }

    /// A switchover by hand: read_only flipped on the servers, then a LOAD that swaps the
    /// primary (port 1) and a replica (port 2) before the monitor saw the flip. The LOAD's
    /// placement is in force at once, not the one the stale values give; the server the LOAD
    /// left alone keeps what the monitor saw; a value read before the LOAD is dropped.
    #[test]
    fn a_load_that_moves_servers_wins_over_read_only_seen_before_it() {
        let target = |port: u16| ("127.0.0.1".to_string(), port);
        let before = runtime(false);
        let map = ReadOnlyMap::default();
        let generation = map.generation();
        for (port, ro) in [(1, false), (2, true), (3, true)] {
            assert!(map.set(&target(port), ro, generation));
        }
        let mut t = ConfigTables::default();
        for (hg, port) in [(1, 1), (0, 2), (1, 3)] {
            t.mysql_servers.push(ServerRow::new(hg, "127.0.0.1", port));
        }
        t.mysql_replication_hostgroups
            .push(ReplicationHostgroupRow::new(0, 1));
        let mut after = Runtime::build(&t).unwrap();
        after.mysql.monitor_writer_is_also_reader = false;
        map.loading(&before, &after);
        assert_eq!(
            placed(&server_specs(&after, &map.snapshot())),
            vec![(0, 2), (1, 1), (1, 3)]
        );
        assert_eq!(map.snapshot().get(&target(3)), Some(&true));
        assert!(map.take_recheck());
        assert!(!map.take_recheck());
        // A check that started before the LOAD read the old values.
        assert!(!map.set(&target(1), false, generation));
        assert_eq!(map.snapshot().get(&target(1)), None);
        assert!(map.set(&target(1), true, map.generation()));
        // A LOAD that moves nothing (a weight) keeps every value and asks for no check.
        let mut reweighted = after.clone();
        reweighted.servers[0].weight = 5;
        map.loading(&after, &reweighted);
        assert_eq!(map.snapshot().len(), 2);
        assert!(!map.take_recheck());
    }
}
