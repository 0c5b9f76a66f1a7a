//! Counters recorded on the data path and the typed snapshots that the admin's `stats_*`
//! tables (and later Prometheus) are filled from. No I/O, no SQLite, no async.
//!
//! The recorders here are the ones that do not belong to a narrower crate: per-command
//! latency histograms ([`CommandCounters`]), the backend error log ([`ErrorLog`]) and the
//! bounded digest table ([`DigestStats`]). Pool and session counters live with what they
//! count; the session crate copies everything into a [`Snapshot`] when the admin asks.
#![forbid(unsafe_code)]

mod commands;
mod digests;
mod errors;
mod monitor;
mod shard;
mod snapshot;

pub use commands::{CommandCounters, BUCKET_BOUNDS_US, BUCKET_NAMES};
pub use digests::{DigestKey, DigestStats, CACHE_HOSTGROUP, DEFAULT_MAX_DIGEST_ENTRIES};
pub use errors::{ErrorKey, ErrorLog, MAX_ERROR_ENTRIES};
pub use monitor::{MonitorCheck, MonitorLog, MonitorRow, MAX_MONITOR_ROWS};
pub use snapshot::{
    CommandRow, DigestRow, ErrorRow, PoolRow, ProcessRow, RuleRow, Snapshot, UserRow,
};
/// The statement commands counted in `stats_mysql_commands_counters`; weir_sql's scanner
/// finds them, so the classification stays in one pass over the query.
pub use weir_sql::SqlCommand as Command;
