//! Reasons a session keeps its backend connection, beyond the ones a statement's text gives
//! (`weir_sql::Pin`, bits 0–15): these come from the protocol, the rules and the settings.

/// A prepared statement has a cursor open on the connection.
pub(crate) const CURSOR: u32 = 1 << 16;
/// A query rule with `multiplex = 0` matched.
pub(crate) const RULE: u32 = 1 << 17;
/// User locks (GET_LOCK) are held.
pub(crate) const USER_LOCKS: u32 = 1 << 18;
/// Named text-protocol prepared statements exist.
pub(crate) const TEXT_PREPARED: u32 = 1 << 19;
/// autocommit is off and mysql-autocommit_false_is_transaction is on: the session is treated
/// as being in a transaction until autocommit is back on.
pub(crate) const AUTOCOMMIT_OFF: u32 = 1 << 20;
/// `SET TRANSACTION ...` (without SESSION) set characteristics for the next transaction only:
/// they stay on the connection until a transaction starts there.
pub(crate) const NEXT_TRANSACTION: u32 = 1 << 21;
