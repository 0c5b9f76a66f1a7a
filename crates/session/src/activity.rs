//! What a session is doing, for stats_mysql_processlist: updated by the session at the start
//! and at the end of each command (one uncontended lock each time, no allocation once the
//! buffers have grown), read by the admin when it builds a snapshot.

use std::sync::Arc;
use std::time::Instant;
use weir_pool::ServerState;

/// Most bytes of a statement kept for the processlist's `info` column.
pub const INFO_MAX: usize = 1024;

/// The command name shown while idle.
pub const SLEEP: &str = "Sleep";

/// The command name shown during the handshake.
pub const CONNECT: &str = "Connect";

/// A session's current activity.
#[derive(Debug)]
pub struct Activity {
    /// "Sleep", "Query", "Execute", ... ("Connect" until logged in).
    pub(crate) command: &'static str,
    /// When the current command started, or when the last one ended while idle.
    pub(crate) since: Instant,
    /// Text of the running statement (reused buffer; meaningful when `has_info`).
    pub(crate) info: String,
    /// Whether `info` holds the running statement.
    pub(crate) has_info: bool,
    /// Current schema ('' when none).
    pub(crate) schema: String,
    /// The session's hostgroup (where its next statement goes).
    pub(crate) hostgroup: u32,
    /// Server of the backend connection held between statements, if any.
    pub(crate) held: Option<Arc<ServerState>>,
    /// weir's end of that connection.
    pub(crate) held_local: Option<std::net::SocketAddr>,
    /// Whether the held connection has a transaction open.
    pub(crate) in_trans: bool,
}

impl Activity {
    pub(crate) fn new(now: Instant) -> Activity {
        Activity {
            command: CONNECT,
            since: now,
            info: String::new(),
            has_info: false,
            schema: String::new(),
            hostgroup: 0,
            held: None,
            held_local: None,
            in_trans: false,
        }
    }

    /// Marks the start of a command with the statement text it runs, if any.
    pub(crate) fn begin(&mut self, command: &'static str, since: Instant, info: Option<&[u8]>) {
        self.command = command;
        self.since = since;
        self.has_info = info.is_some();
        if let Some(text) = info {
            fill_info(&mut self.info, text);
        }
    }
}

/// Replaces `buf` with up to [`INFO_MAX`] bytes of `text`, invalid UTF-8 replaced; reuses the
/// buffer's memory.
pub(crate) fn fill_info(buf: &mut String, text: &[u8]) {
    buf.clear();
    let text = text.get(..INFO_MAX).unwrap_or(text);
    // Statement texts are nearly always valid UTF-8 (mostly ASCII), which from_utf8 checks a
    // word at a time; the chunk walk costs about 250 instructions for a point select.
    if let Ok(s) = std::str::from_utf8(text) {
        buf.push_str(s);
        return;
    }
    for chunk in text.utf8_chunks() {
        buf.push_str(chunk.valid());
        if !chunk.invalid().is_empty() {
            buf.push(char::REPLACEMENT_CHARACTER);
        }
    }
}

/// The processlist name of a client command.
pub(crate) fn command_name(code: u8) -> &'static str {
    use weir_wire::com;
    match code {
        com::QUERY => "Query",
        com::STMT_EXECUTE => "Execute",
        com::STMT_PREPARE => "Prepare",
        com::STMT_FETCH => "Fetch",
        com::STMT_CLOSE => "Close stmt",
        com::STMT_RESET => "Reset stmt",
        com::STMT_SEND_LONG_DATA => "Long Data",
        com::INIT_DB => "Init DB",
        com::FIELD_LIST => "Field List",
        com::PING => "Ping",
        com::STATISTICS => "Statistics",
        com::SET_OPTION => "Set option",
        com::CHANGE_USER => "Change user",
        com::RESET_CONNECTION => "Reset connection",
        com::PROCESS_KILL => "Kill",
        com::QUIT => "Quit",
        _ => "Unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_is_truncated_and_lossy_without_reallocating() {
        let mut buf = String::new();
        fill_info(&mut buf, &[b'a'; 3000]);
        assert_eq!(buf.len(), INFO_MAX);
        let cap = buf.capacity();
        fill_info(&mut buf, b"select \xff 1");
        assert_eq!(buf, "select \u{fffd} 1");
        assert_eq!(buf.capacity(), cap);
        // A multi-byte character cut by the limit is replaced, not split.
        let mut long = vec![b'x'; INFO_MAX - 1];
        long.extend_from_slice("é".as_bytes());
        fill_info(&mut buf, &long);
        assert!(buf.ends_with('\u{fffd}'));
    }
}
