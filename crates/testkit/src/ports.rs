//! Free TCP ports on 127.0.0.1, never handed out twice within one process.

use std::collections::HashSet;
use std::net::TcpListener;
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::error::{Result, TestkitError};

fn handed_out() -> &'static Mutex<HashSet<u16>> {
    static PORTS: OnceLock<Mutex<HashSet<u16>>> = OnceLock::new();
    PORTS.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Returns a port that was free on 127.0.0.1 a moment ago and that this process never returned before.
///
/// Panics if no port can be bound at all (the machine is unusable for tests then).
pub fn free_port() -> u16 {
    match try_free_port() {
        Ok(port) => port,
        Err(e) => panic!("weir-testkit: cannot find a free port on 127.0.0.1: {e}"),
    }
}

/// Like [`free_port`], but returns the bind error instead of panicking.
pub fn try_free_port() -> Result<u16> {
    for _ in 0..1000 {
        let listener = TcpListener::bind("127.0.0.1:0")
            .map_err(|e| TestkitError::io("bind 127.0.0.1:0", e))?;
        let port = listener
            .local_addr()
            .map_err(|e| TestkitError::io("local_addr of 127.0.0.1:0", e))?
            .port();
        if handed_out().lock().insert(port) {
            return Ok(port);
        }
    }
    Err(TestkitError::Invalid(
        "the kernel kept returning ports already handed out".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_unique() {
        let mut seen = HashSet::new();
        for _ in 0..200 {
            assert!(seen.insert(free_port()));
        }
    }
}
