//! Busy polling (`mysql-busy_poll_us`, off by default): a worker whose clients sent a command
//! within the last few microseconds polls its sockets instead of sleeping in epoll_wait, so
//! that the backend's reply and the client's next command are read without waking a sleeping
//! thread. On a virtual machine such a wake-up costs tens of microseconds, more than weir's
//! own work on a statement; the price is a CPU kept busy while clients are active.

use std::cell::Cell;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use crate::Shared;

thread_local! {
    /// Client commands read on this worker thread.
    static COMMANDS: Cell<u64> = const { Cell::new(0) };
    /// The poller of this worker, while it waits for a command.
    static WAITING: Cell<Option<Waker>> = const { Cell::new(None) };
}

/// How often a poller that is switched off looks whether it was switched on.
const OFF_RECHECK: Duration = Duration::from_secs(1);

/// Notes a client command on this worker and wakes the worker's poller if it waits for one.
pub(crate) fn note_command() {
    COMMANDS.with(|c| c.set(c.get().wrapping_add(1)));
    WAITING.with(|w| {
        if let Some(w) = w.take() {
            w.wake();
        }
    });
}

fn commands() -> u64 {
    COMMANDS.with(Cell::get)
}

/// Runs on a worker's event loop until dropped: once a client command arrives, keeps the loop
/// turning (each turn an epoll_wait that does not block, then a sched_yield so that other
/// runnable threads on this CPU go first) until mysql-busy_poll_us passes without a command.
/// The setting is read at each start of polling, so LOAD MYSQL VARIABLES TO RUNTIME applies it.
pub async fn poll_while_busy(shared: Arc<Shared>) {
    loop {
        let window = shared.runtime.load().mysql.busy_poll;
        if window.is_zero() {
            tokio::time::sleep(OFF_RECHECK).await;
            continue;
        }
        let base = commands();
        std::future::poll_fn(|cx| {
            if commands() != base {
                Poll::Ready(())
            } else {
                WAITING.with(|w| w.set(Some(cx.waker().clone())));
                Poll::Pending
            }
        })
        .await;
        let mut seen = commands();
        let mut last = Instant::now();
        loop {
            // Deferred until the worker has polled its sockets without blocking.
            tokio::task::yield_now().await;
            std::thread::yield_now();
            let now = commands();
            if now != seen {
                seen = now;
                last = Instant::now();
            } else if last.elapsed() >= window {
                break;
            }
        }
    }
}
