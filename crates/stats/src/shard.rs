//! Which shard the calling thread records into: each thread that records gets an index on
//! first use (round robin), shared by every sharded recorder of this crate, so worker threads
//! do not bounce the same cache lines or locks at every statement.

use std::sync::atomic::{AtomicUsize, Ordering};

static NEXT_SHARD: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    static SHARD: usize = NEXT_SHARD.fetch_add(1, Ordering::Relaxed);
}

/// The calling thread's shard among `shards` (which must be at least one).
pub(crate) fn current(shards: usize) -> usize {
    SHARD.with(|s| *s) % shards
}
