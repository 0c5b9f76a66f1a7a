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

/// Polling turns between two looks at how often the worker was switched out.
const CHECK_EVERY: u32 = 256;

/// Switches out of a polling worker thread within [`CHECK_EVERY`] turns that mean other
/// threads are waiting for its CPU: polling would take CPU from the server or the clients.
const CONTENDED: i64 = 8;

/// How long a worker that found its CPU contended sleeps as usual before polling again.
const BACKOFF: Duration = Duration::from_millis(200);

/// Involuntary context switches of the calling thread (also counting sched_yield handing the
/// CPU to another thread); 0 when unknown.
fn switched_out() -> i64 {
    use nix::sys::resource::{getrusage, UsageWho};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(0, |u| u.involuntary_context_switches())
}

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
/// When other threads keep taking the CPU from it (the machine is saturated), it stops for a
/// while: polling would only take CPU from the server and the clients.
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
        let mut turns = 0u32;
        let mut switches = switched_out();
        let contended = loop {
            // Deferred until the worker has polled its sockets without blocking.
            tokio::task::yield_now().await;
            std::thread::yield_now();
            let now = commands();
            if now != seen {
                seen = now;
                last = Instant::now();
            } else if last.elapsed() >= window {
                break false;
            }
            turns += 1;
            if turns.is_multiple_of(CHECK_EVERY) {
                let s = switched_out();
                if s - switches > CONTENDED {
                    break true;
                }
                switches = s;
            }
        };
        if contended {
            // The CPUs are busy: sleeping between packets costs nothing then.
            tokio::time::sleep(BACKOFF).await;
        }
    }
}
