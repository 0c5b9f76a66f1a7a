//! The backend error log (`stats_mysql_errors`): errors counted by where they happened and
//! their code. Errors are rare, so a plain mutex and owned keys are fine here.

use crate::snapshot::ErrorRow;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// Most distinct keys kept: past this, errors with a new key are not logged (keys already
/// present still count), so a storm of distinct clients cannot grow memory without bound.
pub const MAX_ERROR_ENTRIES: usize = 10_000;

/// Where an error happened and its code: what `stats_mysql_errors` groups rows by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorKey<'a> {
    /// Hostgroup of the backend, or the one the session tried to reach.
    pub hostgroup: u32,
    /// Backend host ('' when no server was reached).
    pub hostname: &'a str,
    /// Backend port (0 when no server was reached).
    pub port: u16,
    /// Client user.
    pub username: &'a str,
    /// Client address.
    pub client_address: &'a str,
    /// Schema the session was in ('' when none).
    pub schemaname: &'a str,
    /// MySQL error code.
    pub errno: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct OwnedKey {
    hostgroup: u32,
    hostname: String,
    port: u16,
    username: String,
    client_address: String,
    schemaname: String,
    errno: u16,
}

impl From<&ErrorKey<'_>> for OwnedKey {
    fn from(k: &ErrorKey<'_>) -> Self {
        OwnedKey {
            hostgroup: k.hostgroup,
            hostname: k.hostname.to_string(),
            port: k.port,
            username: k.username.to_string(),
            client_address: k.client_address.to_string(),
            schemaname: k.schemaname.to_string(),
            errno: k.errno,
        }
    }
}

#[derive(Debug, Clone)]
struct Entry {
    count: u64,
    first_seen: u64,
    last_seen: u64,
    last_error: String,
}

/// Errors seen, grouped by [`ErrorKey`].
#[derive(Debug, Default)]
pub struct ErrorLog {
    entries: Mutex<HashMap<OwnedKey, Entry>>,
}

/// Now, in unix seconds (0 if the clock is before 1970).
pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl ErrorLog {
    /// An empty log.
    pub fn new() -> ErrorLog {
        ErrorLog::default()
    }

    /// Counts one error now.
    pub fn record(&self, key: &ErrorKey<'_>, message: &str) {
        self.record_at(key, message, unix_now());
    }

    /// Counts one error that happened at `unix_secs`.
    pub fn record_at(&self, key: &ErrorKey<'_>, message: &str, unix_secs: u64) {
        let owned = OwnedKey::from(key);
        let mut entries = self.entries.lock();
        if let Some(e) = entries.get_mut(&owned) {
            e.count += 1;
            e.last_seen = e.last_seen.max(unix_secs);
            e.first_seen = e.first_seen.min(unix_secs);
            e.last_error.clear();
            e.last_error.push_str(message);
            return;
        }
        if entries.len() >= MAX_ERROR_ENTRIES {
            return;
        }
        entries.insert(
            owned,
            Entry {
                count: 1,
                first_seen: unix_secs,
                last_seen: unix_secs,
                last_error: message.to_string(),
            },
        );
    }

    /// Number of distinct keys.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether nothing was logged.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every row, sorted by key.
    pub fn snapshot(&self) -> Vec<ErrorRow> {
        let entries = self.entries.lock().clone();
        rows(entries)
    }

    /// Every row, sorted by key, and an empty log (`stats_mysql_errors_reset`).
    pub fn snapshot_and_reset(&self) -> Vec<ErrorRow> {
        let entries = std::mem::take(&mut *self.entries.lock());
        rows(entries)
    }
}

fn rows(entries: HashMap<OwnedKey, Entry>) -> Vec<ErrorRow> {
    let mut v: Vec<_> = entries.into_iter().collect();
    v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    v.into_iter()
        .map(|(k, e)| ErrorRow {
            hostgroup: k.hostgroup,
            hostname: k.hostname,
            port: k.port,
            username: k.username,
            client_address: k.client_address,
            schemaname: k.schemaname,
            errno: k.errno,
            count_star: e.count,
            first_seen: e.first_seen,
            last_seen: e.last_seen,
            last_error: e.last_error,
        })
        .collect()
}

#[cfg(test)]
#[path = "errors_tests.rs"]
mod tests;
