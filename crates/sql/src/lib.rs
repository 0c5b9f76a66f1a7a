//! SQL text analysis for routing, multiplexing and stats: one pass over the query bytes that
//! finds the statement kinds and what ties a session to its backend connection, and one that
//! computes the query digest (normalized text and stable hash). Pure, no allocation on the
//! common path, never panics on any input.
//!
//! For multiplexing it also follows session state: what SET statements change
//! ([`parse_set`]), the state itself and the statement that replays it on another backend
//! connection ([`SessionVars`]), and user-level locks taken and released ([`lock_calls`]).
#![forbid(unsafe_code)]

mod builtins;
mod collations;
mod command;
mod digest;
mod locks;
mod scan;
mod set;
mod vars;

pub use collations::{collation_by_id, default_collation_id, max_bytes_per_char, COLLATIONS};
pub use command::SqlCommand;
pub use digest::{digest_into, format_digest, format_digest_into, parse_digest, DigestOptions};
pub use locks::{lock_calls, LockCall};
pub use scan::{scan, scan_with, Lexing, Multibyte, Pin, QueryScan, StatementKind, TextPrepare};
pub use set::{parse_set, Assignment, ReadBack, SetEffect, Slot, DATABASE_CHARSET};
pub use vars::{SessionVars, SyncContext};
