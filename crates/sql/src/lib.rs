//! SQL text analysis for routing, multiplexing and stats: one pass over the query bytes that
//! finds the statement kinds and what ties a session to its backend connection, and one that
//! computes the query digest (normalized text and stable hash). Pure, no allocation on the
//! common path, never panics on any input.
#![forbid(unsafe_code)]

mod command;
mod digest;
mod scan;

pub use command::SqlCommand;
pub use digest::{digest_into, format_digest, format_digest_into, parse_digest, DigestOptions};
pub use scan::{scan, Pin, QueryScan, StatementKind};
