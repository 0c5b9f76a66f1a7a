//! weir's admin interface: the ProxySQL-compatible command grammar, the SQLite configuration
//! store (schemas `main`, `disk`, `stats`, `monitor`) and the admin listener that speaks the
//! MySQL protocol to DBAs.
//!
//! Statements that start with `LOAD`, `SAVE`, `PROXYSQL` or `WEIR` (and `SET mysql-...`/`SET
//! admin-...`, `SHOW MYSQL VARIABLES`, `SHOW ADMIN VARIABLES`, `SHOW MYSQL STATUS`) must parse
//! fully as commands, or the caller gets an [`AdminParseError`] naming the problem; anything
//! else is SQL for the store.
#![forbid(unsafe_code)]

mod conn;
mod control;
mod exec;
mod grammar;
mod stats_tables;
pub mod store;

pub use conn::{serve_connection, Peer};
pub use control::{Control, StatsReset};
pub use exec::{bootstrap, Admin, AdminError, AdminSession, Reply, Role};
pub use grammar::{parse, AdminCommand, AdminParseError, Layer, Module, Parsed};
