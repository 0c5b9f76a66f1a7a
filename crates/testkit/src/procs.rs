//! Small process helpers shared by servers and weir processes: signals and bounded waits.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::error::{Result, TestkitError};

/// How often child state and readiness are polled.
pub(crate) const POLL: Duration = Duration::from_millis(20);

/// Sends `signal` to `pid`; a process that is already gone is not an error.
pub(crate) fn send_signal(pid: u32, signal: Signal) -> Result<()> {
    let raw = i32::try_from(pid)
        .map_err(|_| TestkitError::Invalid(format!("pid {pid} does not fit in pid_t")))?;
    match kill(Pid::from_raw(raw), signal) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
        Err(e) => Err(TestkitError::io(
            format!("kill -{signal} {pid}"),
            std::io::Error::from(e),
        )),
    }
}

/// Waits up to `timeout` for `child` to exit; `None` when it is still running afterwards.
pub(crate) fn wait_timeout(child: &mut Child, timeout: Duration) -> Result<Option<ExitStatus>> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| TestkitError::io(format!("wait for pid {}", child.id()), e))?
        {
            return Ok(Some(status));
        }
        if Instant::now() >= deadline {
            return Ok(None);
        }
        std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
    }
}

/// SIGKILLs `child` and reaps it.
pub(crate) fn kill_and_reap(child: &mut Child) -> Result<ExitStatus> {
    send_signal(child.id(), Signal::SIGKILL)?;
    child
        .wait()
        .map_err(|e| TestkitError::io(format!("wait for pid {}", child.id()), e))
}
