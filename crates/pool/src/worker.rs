//! Which worker thread the caller runs on, so that idle connections stay with the event loop
//! that drives their sockets.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

static WORKERS: AtomicUsize = AtomicUsize::new(1);

thread_local! {
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// Declares how many worker threads there are; call before building the pool.
pub fn set_count(n: usize) {
    WORKERS.store(n.max(1), Ordering::Relaxed);
}

/// Number of worker threads.
pub fn count() -> usize {
    WORKERS.load(Ordering::Relaxed)
}

/// Marks the calling thread as worker `i`.
pub fn enter(i: usize) {
    CURRENT.with(|c| c.set(i));
}

/// The calling thread's worker index (0 outside workers).
pub fn current() -> usize {
    CURRENT.with(|c| c.get())
}
