//! What each check runs on a server and what its result does to the pool.

use crate::Target;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use weir_backend::{BackendConn, ConnectParams};
use weir_config::{MysqlVariables, Runtime};
use weir_pool::{ServerState, Shun};
use weir_stats::MonitorCheck;

/// The servers a check applies to.
pub(crate) fn targets(
    check: MonitorCheck,
    rt: &Runtime,
    servers: &[Arc<ServerState>],
) -> BTreeSet<Target> {
    let replication: BTreeSet<u32> = rt
        .replication_hostgroups
        .iter()
        .flat_map(|r| [r.writer_hostgroup, r.reader_hostgroup])
        .collect();
    servers
        .iter()
        .map(|s| s.spec())
        .filter(|spec| match check {
            MonitorCheck::Connect | MonitorCheck::Ping => true,
            MonitorCheck::ReadOnly => replication.contains(&spec.hostgroup),
            MonitorCheck::ReplicationLag => spec.max_replication_lag > 0,
        })
        .map(|spec| (spec.hostname.clone(), spec.port))
        .collect()
}

/// How a read_only check combines the variables it reads (mysql_replication_hostgroups'
/// check_type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Combine {
    /// The one variable.
    One,
    /// Read only when either is on (`read_only|innodb_read_only`).
    Either,
    /// Read only when both are on (`read_only&innodb_read_only`).
    Both,
}

/// What a check sends, decided from the configuration before the check runs.
#[derive(Debug, Clone)]
pub(crate) struct CheckQuery {
    sql: String,
    combine: Combine,
    /// The lag a replica whose Seconds_Behind_Master is NULL counts as.
    null_lag: i64,
}

pub(crate) fn query_for(check: MonitorCheck, rt: &Runtime, target: &Target) -> CheckQuery {
    let null_lag = i64::from(rt.mysql.monitor_slave_lag_when_null);
    match check {
        MonitorCheck::ReadOnly => {
            let groups: BTreeSet<u32> = rt
                .servers
                .iter()
                .filter(|s| s.hostname == target.0 && s.port == target.1)
                .map(|s| s.hostgroup_id)
                .collect();
            let check_type = rt
                .replication_hostgroups
                .iter()
                .find(|r| {
                    groups.contains(&r.writer_hostgroup) || groups.contains(&r.reader_hostgroup)
                })
                .map_or("read_only", |r| r.check_type.as_str());
            let (sql, combine) = match check_type {
                "innodb_read_only" => ("SELECT @@global.innodb_read_only", Combine::One),
                "super_read_only" => ("SELECT @@global.super_read_only", Combine::One),
                "read_only|innodb_read_only" => (
                    "SELECT @@global.read_only, @@global.innodb_read_only",
                    Combine::Either,
                ),
                "read_only&innodb_read_only" => (
                    "SELECT @@global.read_only, @@global.innodb_read_only",
                    Combine::Both,
                ),
                _ => ("SELECT @@global.read_only", Combine::One),
            };
            CheckQuery {
                sql: sql.to_string(),
                combine,
                null_lag,
            }
        }
        _ => CheckQuery {
            sql: String::new(),
            combine: Combine::One,
            null_lag,
        },
    }
}

/// How one check went: its value (read_only 0/1, lag in seconds, `None` for checks without
/// one or a server that is not a replica) or the error.
pub(crate) type CheckResult = Result<Option<i64>, CheckError>;

/// A failed check.
#[derive(Debug, Clone)]
pub(crate) struct CheckError {
    /// What went wrong, for the log table.
    pub(crate) message: String,
    /// Whether the server did not answer (I/O error, timeout), as opposed to answering with an
    /// error (wrong monitor credentials, missing privilege): only the former makes a server
    /// unreachable.
    pub(crate) unreachable: bool,
}

impl From<weir_backend::BackendError> for CheckError {
    fn from(e: weir_backend::BackendError) -> CheckError {
        use weir_backend::BackendError as B;
        let unreachable = !matches!(e, B::Server(_) | B::Auth(_));
        CheckError {
            message: e.to_string(),
            unreachable,
        }
    }
}

/// Runs one check; returns how it went and the connection when it is still usable.
pub(crate) async fn run(
    check: MonitorCheck,
    conn: Option<BackendConn>,
    params: &ConnectParams,
    query: CheckQuery,
) -> (CheckResult, Option<BackendConn>) {
    let mut conn = match conn {
        Some(c) => c,
        None => match BackendConn::connect(params).await {
            Ok(c) => c,
            Err(e) => return (Err(e.into()), None),
        },
    };
    let result = match check {
        MonitorCheck::Connect => {
            conn.quit().await;
            return (Ok(None), None);
        }
        MonitorCheck::Ping => conn
            .command(weir_wire::com::PING, &[])
            .await
            .map(|_| None)
            .map_err(CheckError::from),
        MonitorCheck::ReadOnly => read_only(&mut conn, &query).await,
        MonitorCheck::ReplicationLag => lag(&mut conn, &query).await,
    };
    match result {
        Ok(v) => (Ok(v), Some(conn)),
        Err(e) => (Err(e), None),
    }
}

fn flag(v: Option<&str>) -> bool {
    matches!(v, Some("1") | Some("ON") | Some("on"))
}

async fn read_only(conn: &mut BackendConn, q: &CheckQuery) -> CheckResult {
    let rows = conn.query_rows(&q.sql).await?;
    let row = rows.rows.first().ok_or_else(|| CheckError {
        message: "read_only check returned no row".into(),
        unreachable: false,
    })?;
    let first = flag(row.first().and_then(|v| v.as_deref()));
    let second = flag(row.get(1).and_then(|v| v.as_deref()));
    let ro = match q.combine {
        Combine::One => first,
        Combine::Either => first || second,
        Combine::Both => first && second,
    };
    Ok(Some(i64::from(ro)))
}

async fn lag(conn: &mut BackendConn, q: &CheckQuery) -> CheckResult {
    // MariaDB and MySQL before 8.0.22 know SHOW SLAVE STATUS; MySQL 8.4 only SHOW REPLICA
    // STATUS (and calls the column Seconds_Behind_Source).
    let rows = match conn.query_rows("SHOW SLAVE STATUS").await {
        Ok(r) => r,
        Err(weir_backend::BackendError::Server(_)) => {
            conn.query_rows("SHOW REPLICA STATUS").await?
        }
        Err(e) => return Err(e.into()),
    };
    if rows.rows.is_empty() {
        return Ok(None);
    }
    let value = rows
        .first("Seconds_Behind_Master")
        .or_else(|| rows.first("Seconds_Behind_Source"));
    Ok(Some(
        value
            .and_then(|v| v.parse::<i64>().ok())
            .unwrap_or(q.null_lag),
    ))
}

/// What a check loop remembers between rounds.
#[derive(Debug, Default)]
pub(crate) struct LoopState {
    ping_failures: HashMap<Target, u32>,
    lag_over: HashMap<(u32, Target), u32>,
}

impl LoopState {
    /// A ping result: consecutive failures shun, a success brings back and sets the latency.
    /// Returns true when a server back from a ping shun now waits for its lag to be read.
    pub(crate) fn ping(
        &mut self,
        target: &Target,
        servers: &[Arc<ServerState>],
        result: &CheckResult,
        took: Duration,
        max_failures: u32,
    ) -> bool {
        let mut lag_unknown = false;
        match result {
            Ok(_) => {
                self.ping_failures.remove(target);
                for s in servers {
                    s.stats
                        .latency_us
                        .store(took.as_micros() as u64, Ordering::Relaxed);
                    if s.shun_reasons() & Shun::PING != 0 && s.spec().max_replication_lag > 0 {
                        // Back from a restart or a partition, a replica may be far behind.
                        s.shun(Shun::LAG_UNKNOWN);
                        lag_unknown = true;
                    }
                    s.unshun(Shun::PING);
                    s.reachable();
                }
            }
            // A server that answers, even with an error, is reachable.
            Err(e) if !e.unreachable => {}
            Err(_) => {
                let n = self.ping_failures.entry(target.clone()).or_insert(0);
                *n += 1;
                if *n >= max_failures.max(1) {
                    for s in servers {
                        s.shun(Shun::PING);
                    }
                }
            }
        }
        lag_unknown
    }

    /// A replication lag result: over a server's max_replication_lag for
    /// mysql-monitor_replication_lag_count checks in a row shuns it; back under brings it
    /// back. A server whose lag was not read yet ([`Shun::LAG_UNKNOWN`]) comes in at its
    /// first check under the limit, or at one the server refuses. A failed check changes
    /// nothing else (the ping check judges reachability).
    pub(crate) fn lag(
        &mut self,
        target: &Target,
        servers: &[Arc<ServerState>],
        result: &CheckResult,
        m: &MysqlVariables,
    ) {
        let lag = match result {
            Ok(lag) => lag,
            // The server answered, but the check cannot be made (a missing grant): it must
            // not keep the server out.
            Err(e) if !e.unreachable => {
                for s in servers {
                    s.unshun(Shun::LAG_UNKNOWN);
                }
                return;
            }
            // Not reached (a connection kept from before a restart): read again next time.
            Err(_) => return,
        };
        for s in servers {
            let spec = s.spec();
            if spec.max_replication_lag == 0 {
                continue;
            }
            let key = (spec.hostgroup, target.clone());
            match lag {
                Some(l) if *l > i64::from(spec.max_replication_lag) => {
                    let n = self.lag_over.entry(key).or_insert(0);
                    *n += 1;
                    if *n >= m.monitor_replication_lag_count.max(1) {
                        s.shun(Shun::LAG);
                        s.unshun(Shun::LAG_UNKNOWN);
                    }
                }
                _ => {
                    self.lag_over.remove(&key);
                    s.unshun(Shun::LAG | Shun::LAG_UNKNOWN);
                }
            }
        }
    }
}
