//! The servers the pool runs with: the configured ones, moved between the writer and reader
//! hostgroups of mysql_replication_hostgroups by the read_only the monitor saw.

use crate::Target;
use parking_lot::RwLock;
use std::collections::HashMap;
use weir_config::Runtime;
use weir_pool::{ServerSpec, ServerStatus};

/// The last read_only seen per server (servers of replication hostgroups only).
#[derive(Debug, Default)]
pub struct ReadOnlyMap {
    seen: RwLock<HashMap<Target, bool>>,
}

impl ReadOnlyMap {
    /// Records a server's read_only; true when it changed (or was not known).
    pub fn set(&self, target: &Target, read_only: bool) -> bool {
        let mut seen = self.seen.write();
        seen.insert(target.clone(), read_only) != Some(read_only)
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
}
