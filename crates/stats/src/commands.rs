//! Per-command latency histograms (`stats_mysql_commands_counters`), recorded once per
//! statement with relaxed atomics: no lock, no allocation.
//!
//! Counters are sharded by thread (see [`crate::shard`]), so worker threads do not bounce the
//! same cache lines at every statement.
//! A snapshot sums the shards.

use crate::snapshot::CommandRow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use weir_sql::SqlCommand;

/// Upper bounds (inclusive, microseconds) of the first eleven latency buckets; the twelfth
/// takes everything above the last.
pub const BUCKET_BOUNDS_US: [u64; 11] = [
    100, 500, 1_000, 5_000, 10_000, 50_000, 100_000, 500_000, 1_000_000, 5_000_000, 10_000_000,
];

/// Column names of the twelve buckets, as ProxySQL spells them.
pub const BUCKET_NAMES: [&str; 12] = [
    "cnt_100us",
    "cnt_500us",
    "cnt_1ms",
    "cnt_5ms",
    "cnt_10ms",
    "cnt_50ms",
    "cnt_100ms",
    "cnt_500ms",
    "cnt_1s",
    "cnt_5s",
    "cnt_10s",
    "cnt_INFs",
];

#[derive(Default)]
struct Row {
    time_us: AtomicU64,
    count: AtomicU64,
    buckets: [AtomicU64; 12],
}

/// One shard: a row per command. Aligned so two shards never share a cache line.
#[repr(align(128))]
struct Shard {
    rows: Box<[Row]>,
}

/// Statement counts and latency histograms per [`SqlCommand`].
pub struct CommandCounters {
    shards: Box<[Shard]>,
}

impl std::fmt::Debug for CommandCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommandCounters")
            .field("shards", &self.shards.len())
            .finish()
    }
}

impl Default for CommandCounters {
    /// One shard per available CPU.
    fn default() -> Self {
        let n = std::thread::available_parallelism().map_or(4, |n| n.get());
        Self::new(n)
    }
}

/// The bucket a latency falls in.
pub(crate) fn bucket(us: u64) -> usize {
    BUCKET_BOUNDS_US
        .iter()
        .position(|&b| us <= b)
        .unwrap_or(BUCKET_BOUNDS_US.len())
}

impl CommandCounters {
    /// Counters with `shards` shards (at least one); the number of worker threads is a good
    /// choice.
    pub fn new(shards: usize) -> CommandCounters {
        let shards = (0..shards.max(1))
            .map(|_| Shard {
                rows: (0..SqlCommand::COUNT).map(|_| Row::default()).collect(),
            })
            .collect();
        CommandCounters { shards }
    }

    /// Counts one statement of command `cmd` that took `elapsed`.
    pub fn record(&self, cmd: SqlCommand, elapsed: Duration) {
        let us = elapsed
            .as_secs()
            .saturating_mul(1_000_000)
            .saturating_add(u64::from(elapsed.subsec_micros()));
        let shard = crate::shard::current(self.shards.len());
        let Some(row) = self.shards[shard].rows.get(cmd.index()) else {
            return;
        };
        row.time_us.fetch_add(us, Ordering::Relaxed);
        row.count.fetch_add(1, Ordering::Relaxed);
        row.buckets[bucket(us)].fetch_add(1, Ordering::Relaxed);
    }

    /// How many statements of `cmd` were counted.
    pub fn count(&self, cmd: SqlCommand) -> u64 {
        self.shards
            .iter()
            .filter_map(|shard| shard.rows.get(cmd.index()))
            .map(|row| row.count.load(Ordering::Relaxed))
            .sum()
    }

    /// One row per command, in [`SqlCommand::ALL`] order, commands never seen included.
    pub fn snapshot(&self) -> Vec<CommandRow> {
        SqlCommand::ALL
            .iter()
            .map(|&cmd| {
                let mut out = CommandRow {
                    command: cmd.name().to_string(),
                    ..Default::default()
                };
                for shard in self.shards.iter() {
                    let Some(row) = shard.rows.get(cmd.index()) else {
                        continue;
                    };
                    out.total_time_us += row.time_us.load(Ordering::Relaxed);
                    out.total_cnt += row.count.load(Ordering::Relaxed);
                    for (o, b) in out.buckets.iter_mut().zip(row.buckets.iter()) {
                        *o += b.load(Ordering::Relaxed);
                    }
                }
                out
            })
            .collect()
    }
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
