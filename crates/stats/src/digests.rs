//! The digest table (`stats_mysql_query_digest`): executions counted per (hostgroup, schema,
//! user, client address, digest), recorded by every statement and bounded in memory.
//!
//! Recording is sharded by thread (see [`crate::shard`]): each shard is a map behind its own
//! mutex, which only its worker takes on the data path, so the lock is uncontended. An
//! execution of a known key hashes the key fields (xxh3, a few ns), finds the entry by that
//! 64-bit hash and compares the stored fields: no allocation. A new key copies its fields and
//! the digest text once, into one allocation.
//!
//! The same key may sit in several shards (a client's statements land on whichever worker
//! runs them); a snapshot merges them into one row.
//!
//! Memory is bounded by `mysql-query_digests_max_entries`, over all shards together (one
//! busy worker may hold them all). A new key arriving while the table is full first evicts
//! the least-used tenth of its own shard (fewest executions, then least recently seen) in one
//! O(n) pass, so the cost is amortized over the next tenth's worth of new keys; a shard
//! always takes at least one key. Evicted entries are counted (`Query_Digests_evicted`).

use crate::errors::unix_now;
use crate::snapshot::DigestRow;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use xxhash_rust::xxh3::xxh3_64_with_seed;

/// The hostgroup of executions the query cache answered, as ProxySQL shows them.
pub const CACHE_HOSTGROUP: i64 = -1;

/// Default of `mysql-query_digests_max_entries`.
pub const DEFAULT_MAX_DIGEST_ENTRIES: usize = 100_000;

/// What one row of the digest table groups executions by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DigestKey<'a> {
    /// Hostgroup the statement was sent to; [`CACHE_HOSTGROUP`] when the query cache answered.
    pub hostgroup: i64,
    /// Schema the session was in ('' when none).
    pub schemaname: &'a str,
    /// Client user.
    pub username: &'a str,
    /// Client address: '' unless mysql-query_digests_track_hostname.
    pub client_address: &'a str,
    /// The digest hash (`weir_sql::digest_into`).
    pub digest: u64,
}

/// Counters of one entry.
#[derive(Debug, Clone, Copy)]
struct Counters {
    count: u64,
    first_seen: u64,
    last_seen: u64,
    sum_time: u64,
    min_time: u64,
    max_time: u64,
    sum_rows_affected: u64,
    sum_rows_sent: u64,
}

impl Counters {
    fn one(us: u64, rows_affected: u64, rows_sent: u64, now: u64) -> Counters {
        Counters {
            count: 1,
            first_seen: now,
            last_seen: now,
            sum_time: us,
            min_time: us,
            max_time: us,
            sum_rows_affected: rows_affected,
            sum_rows_sent: rows_sent,
        }
    }

    /// Adds `o`'s executions: the hot path adds one, a snapshot merges shards.
    fn merge(&mut self, o: &Counters) {
        self.count = self.count.saturating_add(o.count);
        // The clock may step back: keep first ≤ last all the same.
        self.first_seen = self.first_seen.min(o.first_seen);
        self.last_seen = self.last_seen.max(o.last_seen);
        self.sum_time = self.sum_time.saturating_add(o.sum_time);
        self.min_time = self.min_time.min(o.min_time);
        self.max_time = self.max_time.max(o.max_time);
        self.sum_rows_affected = self.sum_rows_affected.saturating_add(o.sum_rows_affected);
        self.sum_rows_sent = self.sum_rows_sent.saturating_add(o.sum_rows_sent);
    }
}

/// One key's fields and counters. Cloning it (for a snapshot) copies no text.
#[derive(Debug, Clone)]
struct Entry {
    hostgroup: i64,
    digest: u64,
    /// Ends of schemaname, username and client_address in `text`.
    ends: [usize; 3],
    /// schemaname, username, client_address and the digest text, end to end: one allocation.
    text: Arc<[u8]>,
    counters: Counters,
}

impl Entry {
    fn schemaname(&self) -> &[u8] {
        &self.text[..self.ends[0]]
    }

    fn username(&self) -> &[u8] {
        &self.text[self.ends[0]..self.ends[1]]
    }

    fn client_address(&self) -> &[u8] {
        &self.text[self.ends[1]..self.ends[2]]
    }

    fn digest_text(&self) -> &[u8] {
        &self.text[self.ends[2]..]
    }

    fn matches(&self, k: &DigestKey<'_>) -> bool {
        self.digest == k.digest
            && self.hostgroup == k.hostgroup
            && same(self.username(), k.username.as_bytes())
            && same(self.schemaname(), k.schemaname.as_bytes())
            && same(self.client_address(), k.client_address.as_bytes())
    }

    /// Eviction order: fewest executions first, then least recently seen.
    fn rank(&self) -> (u64, u64) {
        (self.counters.count, self.counters.last_seen)
    }

    fn row(&self) -> DigestRow {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let c = &self.counters;
        DigestRow {
            hostgroup: self.hostgroup,
            schemaname: text(self.schemaname()),
            username: text(self.username()),
            client_address: text(self.client_address()),
            digest: self.digest,
            digest_text: text(self.digest_text()),
            count_star: c.count,
            first_seen: c.first_seen,
            last_seen: c.last_seen,
            sum_time: c.sum_time,
            min_time: c.min_time,
            max_time: c.max_time,
            sum_rows_affected: c.sum_rows_affected,
            sum_rows_sent: c.sum_rows_sent,
        }
    }
}

/// `a == b`, without calling `memcmp` for empty slices: an empty `&str` literal (an untracked
/// client address) points nowhere, and glibc's AVX-512 memcmp reads it with a masked load that
/// costs ~85 ns of fault-suppression assist on this hardware — more than the rest of a hit.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && (a.is_empty() || a == b)
}

/// Hasher for keys that already are a good 64-bit hash: passes them through.
#[derive(Debug, Default, Clone, Copy)]
struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is used by `u64` keys; this keeps any other use correct.
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type EntryMap = HashMap<u64, Entry, BuildHasherDefault<PassThrough>>;

/// The 64-bit hash an entry is found by: every key field, each hashed with the previous
/// result as seed (so field boundaries cannot blur). In memory only, never shown.
fn key_hash(k: &DigestKey<'_>) -> u64 {
    let h = xxh3_64_with_seed(&k.hostgroup.to_le_bytes(), k.digest);
    let h = xxh3_64_with_seed(k.username.as_bytes(), h);
    let h = xxh3_64_with_seed(k.schemaname.as_bytes(), h);
    xxh3_64_with_seed(k.client_address.as_bytes(), h)
}

#[derive(Debug, Default)]
struct ShardMap {
    /// Entries by key hash. Two keys with the same hash (never seen in practice, but
    /// possible) do not share an entry: the second goes to the next free hash value
    /// (hash + 1, + 2, ...). After an eviction a key may be found anew at its first free
    /// slot while an older entry of it stays further on; snapshots merge rows by key, so
    /// counts stay right either way.
    map: EntryMap,
    /// Where a new entry's text is assembled before its one allocation.
    scratch: Vec<u8>,
}

impl ShardMap {
    /// Removes entries, least used first, until at most `keep` are left. Returns how many
    /// were removed. O(n): one selection, one pass.
    fn trim(&mut self, keep: usize) -> usize {
        let len = self.map.len();
        let n = len.saturating_sub(keep);
        if n == 0 {
            return 0;
        }
        if n == len {
            self.map.clear();
            return n;
        }
        let mut ranks: Vec<(u64, u64)> = self.map.values().map(Entry::rank).collect();
        let (below, &mut nth, _) = ranks.select_nth_unstable(n - 1);
        // Everything ranked below `nth` goes, and enough of the entries ranked equal to it.
        let mut ties = n - below.iter().filter(|&&r| r < nth).count();
        self.map.retain(|_, e| {
            let r = e.rank();
            if r < nth {
                false
            } else if r == nth && ties > 0 {
                ties -= 1;
                false
            } else {
                true
            }
        });
        n
    }
}

/// One shard, aligned so that two shards' locks never share a cache line.
#[derive(Debug, Default)]
#[repr(align(128))]
struct Shard {
    inner: Mutex<ShardMap>,
}

/// Statement executions per (hostgroup, schema, user, client address, digest), bounded by
/// `max_entries` (see the module docs).
#[derive(Debug)]
pub struct DigestStats {
    shards: Box<[Shard]>,
    max_entries: AtomicUsize,
    /// Keys held over all shards (kept with each change of a shard, under its lock).
    held: AtomicUsize,
    evicted: AtomicU64,
}

impl Default for DigestStats {
    /// One shard per available CPU, [`DEFAULT_MAX_DIGEST_ENTRIES`].
    fn default() -> Self {
        let n = std::thread::available_parallelism().map_or(4, |n| n.get());
        DigestStats::new(n, DEFAULT_MAX_DIGEST_ENTRIES)
    }
}

impl DigestStats {
    /// An empty table with `shards` shards (at least one; the number of worker threads is a
    /// good choice) holding at most `max_entries` keys over all shards, but at least one per
    /// shard that records, so the bound is `max(max_entries, shards)`.
    pub fn new(shards: usize, max_entries: usize) -> DigestStats {
        DigestStats {
            shards: (0..shards.max(1)).map(|_| Shard::default()).collect(),
            max_entries: AtomicUsize::new(max_entries),
            held: AtomicUsize::new(0),
            evicted: AtomicU64::new(0),
        }
    }

    /// Changes the bound (mysql-query_digests_max_entries set live). Above the new bound,
    /// each shard is trimmed now to its share of it (in proportion to what it holds),
    /// least-used entries first, and the entries removed counted as evicted.
    pub fn set_max_entries(&self, n: usize) {
        self.max_entries.store(n, Ordering::Relaxed);
        let held = self.held.load(Ordering::Relaxed);
        if held <= n {
            return;
        }
        for shard in self.shards.iter() {
            let mut s = shard.inner.lock();
            let share = (s.map.len() * n / held).max(1);
            if s.map.len() > share {
                let removed = s.trim(share);
                s.map.shrink_to(share);
                self.held.fetch_sub(removed, Ordering::Relaxed);
                self.evicted.fetch_add(removed as u64, Ordering::Relaxed);
            }
        }
    }

    /// Records one execution of `key` that took `elapsed` and affected or sent so many rows,
    /// now. `digest_text` is only copied when the key is new.
    pub fn record(
        &self,
        key: &DigestKey<'_>,
        digest_text: &[u8],
        elapsed: Duration,
        rows_affected: u64,
        rows_sent: u64,
    ) {
        self.record_at(
            key,
            digest_text,
            elapsed,
            rows_affected,
            rows_sent,
            unix_now(),
        );
    }

    /// As [`record`](Self::record), at `unix_secs` (for callers that keep a coarse clock,
    /// and for tests).
    pub fn record_at(
        &self,
        key: &DigestKey<'_>,
        digest_text: &[u8],
        elapsed: Duration,
        rows_affected: u64,
        rows_sent: u64,
        unix_secs: u64,
    ) {
        let us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let shard = &self.shards[crate::shard::current(self.shards.len())];
        self.record_hashed(
            shard,
            key_hash(key),
            key,
            digest_text,
            Counters::one(us, rows_affected, rows_sent, unix_secs),
        );
    }

    /// The recording itself, with the key's hash given (tests inject colliding hashes).
    /// `one` holds this execution's figures.
    fn record_hashed(
        &self,
        shard: &Shard,
        hash: u64,
        key: &DigestKey<'_>,
        digest_text: &[u8],
        one: Counters,
    ) {
        let mut guard = shard.inner.lock();
        let s = &mut *guard;
        let mut slot = hash;
        loop {
            match s.map.get_mut(&slot) {
                Some(e) if e.matches(key) => {
                    e.counters.merge(&one);
                    return;
                }
                Some(_) => slot = slot.wrapping_add(1),
                None => break,
            }
        }
        let own = s.map.len();
        if own > 0 && self.held.load(Ordering::Relaxed) >= self.max_entries.load(Ordering::Relaxed)
        {
            // Make room for a tenth of the shard at once, so eviction is amortized.
            let n = s.trim(own - (own / 10).max(1));
            self.held.fetch_sub(n, Ordering::Relaxed);
            self.evicted.fetch_add(n as u64, Ordering::Relaxed);
        }
        s.scratch.clear();
        s.scratch.extend_from_slice(key.schemaname.as_bytes());
        let schema_end = s.scratch.len();
        s.scratch.extend_from_slice(key.username.as_bytes());
        let user_end = s.scratch.len();
        s.scratch.extend_from_slice(key.client_address.as_bytes());
        let client_end = s.scratch.len();
        s.scratch.extend_from_slice(digest_text);
        let entry = Entry {
            hostgroup: key.hostgroup,
            digest: key.digest,
            ends: [schema_end, user_end, client_end],
            text: Arc::from(&s.scratch[..]),
            counters: one,
        };
        s.map.insert(slot, entry);
        self.held.fetch_add(1, Ordering::Relaxed);
    }

    /// Every row, one per key (shards merged), sorted by hostgroup, schema, user, client
    /// address and digest. Each shard's lock is held only to copy its entries, no text.
    pub fn snapshot(&self) -> Vec<DigestRow> {
        let mut entries = Vec::new();
        for shard in self.shards.iter() {
            entries.extend(shard.inner.lock().map.values().cloned());
        }
        merged_rows(entries)
    }

    /// Every row, as [`snapshot`](Self::snapshot), and an empty table
    /// (`stats_mysql_query_digest_reset`). The eviction count is not reset: it is a global
    /// counter.
    pub fn snapshot_and_reset(&self) -> Vec<DigestRow> {
        let mut entries = Vec::new();
        for shard in self.shards.iter() {
            let map = std::mem::take(&mut shard.inner.lock().map);
            self.held.fetch_sub(map.len(), Ordering::Relaxed);
            entries.extend(map.into_values());
        }
        merged_rows(entries)
    }

    /// Entries evicted to keep the bound, since start (`Query_Digests_evicted`).
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Entries held, over all shards (a key recorded on several workers counts once per
    /// shard: this is what the bound applies to).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.inner.lock().map.len()).sum()
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Rows of `entries`, one per key (a key's entries from several shards merged), sorted.
fn merged_rows(mut entries: Vec<Entry>) -> Vec<DigestRow> {
    // Byte order of UTF-8 text is the order of its characters: rows come out sorted as text.
    entries.sort_unstable_by(|a, b| sort_key(a).cmp(&sort_key(b)));
    entries.dedup_by(|next, kept| {
        if sort_key(next) != sort_key(kept) {
            return false;
        }
        kept.counters.merge(&next.counters);
        true
    });
    entries.iter().map(Entry::row).collect()
}

fn sort_key(e: &Entry) -> (i64, &[u8], &[u8], &[u8], u64) {
    (
        e.hostgroup,
        e.schemaname(),
        e.username(),
        e.client_address(),
        e.digest,
    )
}

#[cfg(test)]
#[path = "digests_tests.rs"]
mod tests;
