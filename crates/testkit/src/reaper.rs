//! Teardown that survives panics, `std::process::exit` and SIGKILL of the test process.
//!
//! Each process that uses the kit gets one scratch root directory and one watchdog: a `sh` process
//! in its own process group whose stdin is a pipe held open by the test process. When the test
//! process ends in any way the kernel closes the pipe, the watchdog reads EOF, terminates every
//! process registered under `ROOT/.pids/` (SIGTERM, then SIGKILL after 3 s) and removes ROOT.
//! An EOF on a pipe, unlike polling `kill -0`, cannot be fooled by PID reuse or a zombie parent,
//! and unlike PR_SET_PDEATHSIG it does not depend on which thread spawned the server.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

use std::os::unix::process::CommandExt;

use parking_lot::Mutex;

use crate::error::{Result, TestkitError};

const WATCHDOG_SCRIPT: &str = r#"
trap '' INT HUP
root=$1
cat >/dev/null
pids=
for f in "$root"/.pids/*; do
  [ -e "$f" ] || continue
  p=${f##*/}
  kill -TERM "$p" 2>/dev/null && pids="$pids $p"
done
i=0
while [ -n "$pids" ] && [ $i -lt 30 ]; do
  alive=
  for p in $pids; do kill -0 "$p" 2>/dev/null && alive="$alive $p"; done
  pids=$alive
  [ -n "$pids" ] && sleep 0.1
  i=$((i+1))
done
for p in $pids; do kill -KILL "$p" 2>/dev/null; done
rm -rf "$root"
"#;

struct Reaper {
    root: PathBuf,
    pids: PathBuf,
    /// Write end of the watchdog's stdin; never written, closed only by process exit.
    _lifeline: Mutex<ChildStdin>,
    /// Kept so the handle is not dropped; the watchdog outlives us by design.
    _watchdog: Mutex<Child>,
}

fn reaper() -> Result<&'static Reaper> {
    static REAPER: OnceLock<std::result::Result<Reaper, String>> = OnceLock::new();
    REAPER
        .get_or_init(|| start_reaper().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| TestkitError::Invalid(format!("cannot start the testkit watchdog: {e}")))
}

fn start_reaper() -> Result<Reaper> {
    let base = std::env::var_os("WEIR_TESTKIT_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    // Servers get absolute paths whatever their working directory.
    let base = if base.is_relative() {
        std::env::current_dir()
            .map_err(|e| TestkitError::io("current_dir", e))?
            .join(base)
    } else {
        base
    };
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let root = base.join(format!("weir-testkit-{}-{:x}", std::process::id(), nanos));
    let pids = root.join(".pids");
    std::fs::create_dir_all(&pids)
        .map_err(|e| TestkitError::io(format!("create {}", pids.display()), e))?;
    let mut watchdog = Command::new("sh")
        .arg("-c")
        .arg(WATCHDOG_SCRIPT)
        .arg("weir-testkit-watchdog")
        .arg(&root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| TestkitError::io("spawn the watchdog (sh)", e))?;
    let lifeline = watchdog
        .stdin
        .take()
        .ok_or_else(|| TestkitError::Invalid("watchdog has no stdin pipe".into()))?;
    Ok(Reaper {
        root,
        pids,
        _lifeline: Mutex::new(lifeline),
        _watchdog: Mutex::new(watchdog),
    })
}

/// The per-process scratch root (created on first use, removed by the watchdog at process exit).
pub fn scratch_root() -> Result<&'static Path> {
    Ok(reaper()?.root.as_path())
}

/// Creates a fresh, uniquely named directory `ROOT/<prefix>-<n>` for one topology or weir process.
pub fn scratch_dir(prefix: &str) -> Result<PathBuf> {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    let root = scratch_root()?;
    loop {
        let dir = root.join(format!("{prefix}-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(TestkitError::io(format!("create {}", dir.display()), e)),
        }
    }
}

/// Registers a process the watchdog must kill if this process dies.
pub(crate) fn track(pid: u32) -> Result<()> {
    let path = reaper()?.pids.join(pid.to_string());
    std::fs::write(&path, b"").map_err(|e| TestkitError::io(format!("write {}", path.display()), e))
}

/// Forgets a process that has exited and been reaped (its PID may be reused from now on).
pub(crate) fn untrack(pid: u32) {
    if let Ok(r) = reaper() {
        let _ = std::fs::remove_file(r.pids.join(pid.to_string()));
    }
}
