//! The query cache: replies stored whole under a key, each with its own expiry, in memory
//! bounded by a byte budget, with concurrent misses of one key coalesced into a single fill.
//!
//! The cache knows no sessions and no SQL. A key is an opaque byte string that the caller
//! builds from everything that changes the bytes of a reply (user, schema, query text, the
//! session state that shapes results, the protocol); a value is the reply exactly as the backend
//! sent it. Storage is `quick_cache` (byte-weighted CLOCK-Pro eviction, sharded locks), which
//! also provides the placeholder that makes concurrent misses of one key wait for one fill:
//!
//! - [`QueryCache::get`] answers a fresh reply without waiting; after a miss,
//!   [`QueryCache::wait_or_fill`] gives [`Lookup::Fill`] to the first caller of the key, while
//!   later callers of that key wait (bounded by the caller's `wait`) for it to be filled.
//! - [`Fill::store`] wakes the waiters with the reply; a fill dropped without storing (the reply
//!   was not cacheable, failed, or the session went away) wakes them with a marker that makes
//!   each of them run the statement itself ([`Lookup::Bypass`]), so an uncacheable reply never
//!   turns waiting callers into a queue that runs one at a time.
//!
//! Expired entries are dropped when met by a lookup and by [`QueryCache::purge_expired`], which
//! the proxy calls periodically; both count them in `Query_Cache_Purged`, as do evictions.
#![forbid(unsafe_code)]

use bytes::Bytes;
use quick_cache::sync::{Cache, PlaceholderGuard};
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[cfg(test)]
mod tests;

/// Bytes an entry costs beyond its key and reply: the map slot, the entry and the `Bytes`
/// header, rounded up. Counted so that a flood of tiny replies is bounded too.
pub const ENTRY_OVERHEAD: u64 = 128;

/// Average entry size the storage is first sized for; it grows as entries arrive.
const ESTIMATED_ENTRY_BYTES: u64 = 4096;

/// Shards of the storage. Each holds an equal part of the budget, so one entry can take at
/// most a shard's part ([`QueryCache::max_entry_bytes`]).
const SHARDS: usize = 16;

#[derive(Clone, Debug)]
enum Entry {
    /// A reply, fresh until `expires`.
    Reply { reply: Bytes, expires: Instant },
    /// Left by a fill that stored nothing: callers waiting on the fill run the statement
    /// themselves. Removed right after it woke them.
    Abandoned,
}

impl Entry {
    fn fresh_reply(&self, now: Instant) -> Option<&Bytes> {
        match self {
            Entry::Reply { reply, expires } if *expires > now => Some(reply),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, Default)]
struct EntryWeight;

impl Weighter<Vec<u8>, Entry> for EntryWeight {
    fn weight(&self, key: &Vec<u8>, val: &Entry) -> u64 {
        let reply = match val {
            Entry::Reply { reply, .. } => reply.len() as u64,
            Entry::Abandoned => 0,
        };
        key.len() as u64 + reply + ENTRY_OVERHEAD
    }
}

/// Counts evicted replies into `Query_Cache_Purged`.
#[derive(Clone, Debug)]
struct CountEvictions(Arc<Counters>);

impl Lifecycle<Vec<u8>, Entry> for CountEvictions {
    // As quick_cache's default: evicted items are dropped after the shard lock is released.
    type RequestState = [Option<(Vec<u8>, Entry)>; 2];

    fn on_evict(&self, state: &mut Self::RequestState, key: Vec<u8>, val: Entry) {
        if matches!(val, Entry::Reply { .. }) {
            self.0.purged.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(slot) = state.iter_mut().find(|s| s.is_none()) {
            *slot = Some((key, val));
        }
    }
}

type Storage = Cache<Vec<u8>, Entry, EntryWeight, DefaultHashBuilder, CountEvictions>;

#[derive(Debug, Default)]
struct Counters {
    get: AtomicU64,
    get_ok: AtomicU64,
    set: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    purged: AtomicU64,
}

/// The cache's counters, as stats_mysql_global shows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Bytes the entries take, overhead included (`Query_Cache_Memory_bytes`).
    pub memory_bytes: u64,
    /// Lookups (`Query_Cache_count_GET`).
    pub count_get: u64,
    /// Lookups answered from the cache (`Query_Cache_count_GET_OK`).
    pub count_get_ok: u64,
    /// Replies stored (`Query_Cache_count_SET`).
    pub count_set: u64,
    /// Bytes of replies stored (`Query_Cache_bytes_IN`).
    pub bytes_in: u64,
    /// Bytes of replies served (`Query_Cache_bytes_OUT`).
    pub bytes_out: u64,
    /// Replies dropped because they expired or to make room (`Query_Cache_Purged`).
    pub purged: u64,
    /// Entries held (`Query_Cache_Entries`).
    pub entries: u64,
}

/// What a lookup found.
pub enum Lookup<'a> {
    /// A fresh reply.
    Hit(Bytes),
    /// No fresh reply: the caller runs the statement and stores its reply through this (or
    /// drops it), while other callers of the same key wait for it.
    Fill(Fill<'a>),
    /// Run the statement without storing: the fill this caller waited for stored nothing,
    /// or the wait ran out.
    Bypass,
}

impl std::fmt::Debug for Lookup<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lookup::Hit(r) => write!(f, "Hit({} bytes)", r.len()),
            Lookup::Fill(_) => f.write_str("Fill"),
            Lookup::Bypass => f.write_str("Bypass"),
        }
    }
}

/// The right to fill one missing key. Dropping it without [`Fill::store`] wakes the callers
/// waiting for the key, who then run the statement themselves.
pub struct Fill<'a> {
    cache: &'a QueryCache,
    key: Vec<u8>,
    guard: Option<
        PlaceholderGuard<'a, Vec<u8>, Entry, EntryWeight, DefaultHashBuilder, CountEvictions>,
    >,
}

impl Fill<'_> {
    /// Stores `reply` for `ttl` and hands it to the callers waiting for it. A reply larger
    /// than [`QueryCache::max_entry_bytes`] is not stored (the waiters run the statement).
    pub fn store(mut self, reply: Bytes, ttl: Duration) {
        let Some(guard) = self.guard.take() else {
            return;
        };
        let len = reply.len() as u64;
        if len + self.key.len() as u64 + ENTRY_OVERHEAD > self.cache.max_entry_bytes() {
            self.guard = Some(guard);
            return;
        }
        let entry = Entry::Reply {
            reply,
            expires: Instant::now() + ttl,
        };
        if guard.insert(entry).is_ok() {
            let c = &self.cache.counters;
            c.set.fetch_add(1, Ordering::Relaxed);
            c.bytes_in.fetch_add(len, Ordering::Relaxed);
        }
    }
}

impl Drop for Fill<'_> {
    fn drop(&mut self) {
        if let Some(guard) = self.guard.take() {
            // Waiters read the marker from the placeholder itself; the cache need not keep it.
            let _ = guard.insert(Entry::Abandoned);
            self.cache
                .entries
                .remove_if(self.key.as_slice(), |e| matches!(e, Entry::Abandoned));
        }
    }
}

/// The query cache.
pub struct QueryCache {
    entries: Storage,
    counters: Arc<Counters>,
    capacity: AtomicU64,
}

impl std::fmt::Debug for QueryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryCache")
            .field("capacity", &self.capacity())
            .field("entries", &self.entries.len())
            .finish_non_exhaustive()
    }
}

impl QueryCache {
    /// A cache holding at most `capacity` bytes (entries, keys and overhead).
    pub fn new(capacity: u64) -> QueryCache {
        let counters = Arc::new(Counters::default());
        // The storage never has a zero budget (its options refuse it); a cache of capacity 0
        // is off, which the callers check with `capacity()` before any lookup.
        let budget = capacity.max(SHARDS as u64 * ENTRY_OVERHEAD * 4);
        let estimated = (budget / ESTIMATED_ENTRY_BYTES).clamp(256, 1 << 20) as usize;
        let options = OptionsBuilder::new()
            .shards(SHARDS)
            .estimated_items_capacity(estimated)
            .weight_capacity(budget)
            .build();
        let entries = match options {
            Ok(o) => Cache::with_options(
                o,
                EntryWeight,
                DefaultHashBuilder::default(),
                CountEvictions(counters.clone()),
            ),
            // Only invalid numbers fail, and these are not: a plain cache of the same budget.
            Err(_) => Cache::with(
                estimated,
                budget,
                EntryWeight,
                DefaultHashBuilder::default(),
                CountEvictions(counters.clone()),
            ),
        };
        QueryCache {
            entries,
            counters,
            capacity: AtomicU64::new(capacity),
        }
    }

    /// The byte budget; 0 means the cache is off.
    pub fn capacity(&self) -> u64 {
        self.capacity.load(Ordering::Relaxed)
    }

    /// Changes the byte budget, evicting what no longer fits; 0 empties the cache and turns it
    /// off.
    pub fn set_capacity(&self, capacity: u64) {
        if capacity == self.capacity() {
            return;
        }
        self.capacity.store(capacity, Ordering::Relaxed);
        if capacity == 0 {
            self.clear();
            return;
        }
        self.entries
            .set_capacity(capacity.max(SHARDS as u64 * ENTRY_OVERHEAD * 4));
    }

    /// The largest entry (reply, key and overhead) the cache stores: one shard's part of the
    /// budget.
    pub fn max_entry_bytes(&self) -> u64 {
        self.entries.shard_capacity()
    }

    /// A fresh reply stored under `key`, if any; counts one lookup. An expired entry met here
    /// is dropped.
    pub fn get(&self, key: &[u8]) -> Option<Bytes> {
        let c = &self.counters;
        c.get.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        let e = self.entries.get(key)?;
        if let Some(reply) = e.fresh_reply(now) {
            return Some(self.hit(reply.clone()));
        }
        let removed = self
            .entries
            .remove_if(key, |e| e.fresh_reply(now).is_none());
        if matches!(removed, Some((_, Entry::Reply { .. }))) {
            c.purged.fetch_add(1, Ordering::Relaxed);
        }
        None
    }

    /// After [`QueryCache::get`] missed: the fill of `key` for the first caller; the others
    /// wait up to `wait` for it and get its reply, or [`Lookup::Bypass`] when it stores nothing
    /// or the wait runs out.
    pub async fn wait_or_fill(&self, key: &[u8], wait: Duration) -> Lookup<'_> {
        let found = tokio::time::timeout(wait, self.entries.get_value_or_guard_async(key)).await;
        match found {
            Ok(Ok(e)) => match e.fresh_reply(Instant::now()) {
                Some(reply) => Lookup::Hit(self.hit(reply.clone())),
                None => Lookup::Bypass,
            },
            Ok(Err(guard)) => Lookup::Fill(Fill {
                cache: self,
                key: key.to_vec(),
                guard: Some(guard),
            }),
            Err(_) => Lookup::Bypass,
        }
    }

    /// [`QueryCache::get`], then [`QueryCache::wait_or_fill`] on a miss.
    pub async fn lookup(&self, key: &[u8], wait: Duration) -> Lookup<'_> {
        match self.get(key) {
            Some(reply) => Lookup::Hit(reply),
            None => self.wait_or_fill(key, wait).await,
        }
    }

    fn hit(&self, reply: Bytes) -> Bytes {
        let c = &self.counters;
        c.get_ok.fetch_add(1, Ordering::Relaxed);
        c.bytes_out.fetch_add(reply.len() as u64, Ordering::Relaxed);
        reply
    }

    /// Drops every entry expired at `now`; returns how many.
    pub fn purge_expired(&self, now: Instant) -> u64 {
        let purged = AtomicU64::new(0);
        self.entries.retain(|_, e| match e {
            Entry::Reply { expires, .. } if *expires <= now => {
                purged.fetch_add(1, Ordering::Relaxed);
                false
            }
            _ => true,
        });
        let n = purged.into_inner();
        self.counters.purged.fetch_add(n, Ordering::Relaxed);
        n
    }

    /// Empties the cache (PROXYSQL FLUSH QUERY CACHE); returns how many entries it held.
    /// Fills in progress still store their reply when it arrives.
    pub fn clear(&self) -> u64 {
        let n = self.entries.len() as u64;
        self.entries.clear();
        n
    }

    /// The counters and the memory in use.
    pub fn stats(&self) -> CacheStats {
        let c = &self.counters;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        CacheStats {
            memory_bytes: self.entries.weight(),
            count_get: load(&c.get),
            count_get_ok: load(&c.get_ok),
            count_set: load(&c.set),
            bytes_in: load(&c.bytes_in),
            bytes_out: load(&c.bytes_out),
            purged: load(&c.purged),
            entries: self.entries.len() as u64,
        }
    }
}
