//! The monitor's check results: the rows of the `monitor` schema's log tables, kept in memory
//! for mysql-monitor_history and bounded in number.

use parking_lot::Mutex;
use std::collections::VecDeque;

/// Which check a row comes from (one log table each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MonitorCheck {
    /// `mysql_server_connect_log`.
    Connect,
    /// `mysql_server_ping_log`.
    Ping,
    /// `mysql_server_read_only_log`.
    ReadOnly,
    /// `mysql_server_replication_lag_log`.
    ReplicationLag,
}

/// One check of one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorRow {
    /// The check.
    pub check: MonitorCheck,
    /// Server host name (or socket path).
    pub hostname: String,
    /// Server port.
    pub port: u16,
    /// When the check started, µs since the Unix epoch.
    pub time_start_us: u64,
    /// How long it took when it succeeded, µs (0 on error).
    pub success_time_us: u64,
    /// read_only (0/1) or the replication lag in seconds, when the check reads one.
    pub value: Option<i64>,
    /// The error, when the check failed.
    pub error: Option<String>,
}

/// Rows kept at most, whatever mysql-monitor_history says (a large topology checked often
/// must not grow without bound).
pub const MAX_MONITOR_ROWS: usize = 100_000;

/// The recent check results.
#[derive(Debug, Default)]
pub struct MonitorLog {
    rows: Mutex<VecDeque<MonitorRow>>,
}

impl MonitorLog {
    /// An empty log.
    pub fn new() -> MonitorLog {
        MonitorLog::default()
    }

    /// Adds a row; rows older than `history_us` before it, and the oldest beyond
    /// [`MAX_MONITOR_ROWS`], go.
    pub fn record(&self, row: MonitorRow, history_us: u64) {
        let oldest = row.time_start_us.saturating_sub(history_us);
        let mut rows = self.rows.lock();
        while rows
            .front()
            .is_some_and(|r| r.time_start_us < oldest || rows.len() >= MAX_MONITOR_ROWS)
        {
            rows.pop_front();
        }
        rows.push_back(row);
    }

    /// A copy of the rows of one check, oldest first.
    pub fn rows(&self, check: MonitorCheck) -> Vec<MonitorRow> {
        self.rows
            .lock()
            .iter()
            .filter(|r| r.check == check)
            .cloned()
            .collect()
    }

    /// A copy of every row, oldest first.
    pub fn all(&self) -> Vec<MonitorRow> {
        self.rows.lock().iter().cloned().collect()
    }

    /// Number of rows kept.
    pub fn len(&self) -> usize {
        self.rows.lock().len()
    }

    /// Whether no row is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(check: MonitorCheck, t: u64) -> MonitorRow {
        MonitorRow {
            check,
            hostname: "h".into(),
            port: 1,
            time_start_us: t,
            success_time_us: 5,
            value: None,
            error: None,
        }
    }

    #[test]
    fn history_bounds_the_log() {
        let log = MonitorLog::new();
        log.record(row(MonitorCheck::Ping, 1_000), 500);
        log.record(row(MonitorCheck::Connect, 1_200), 500);
        log.record(row(MonitorCheck::Ping, 2_000), 500);
        // 1_000 and 1_200 are older than 2_000 - 500.
        assert_eq!(log.len(), 1);
        assert_eq!(log.rows(MonitorCheck::Ping)[0].time_start_us, 2_000);
        assert!(log.rows(MonitorCheck::Connect).is_empty());
    }
}
