//! SQL text analysis for routing and multiplexing: one pass over the query bytes that finds the
//! statement kinds and what ties a session to its backend connection. Pure, no allocation on
//! the common path, never panics on any input.
#![forbid(unsafe_code)]

mod command;
mod scan;

pub use command::SqlCommand;
pub use scan::{scan, Pin, QueryScan, StatementKind};
