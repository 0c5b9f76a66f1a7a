//! [`StoreError`]: everything the configuration store can refuse, worded for the DBA who reads
//! it in the admin client or in the log at start-up.

use std::path::PathBuf;

/// A failure of the SQLite configuration store.
///
/// Messages name what a DBA needs to fix it: the file for open failures, the table, the row
/// (by its primary key) and the column for values that do not fit, and SQLite's own message
/// for refused SQL (e.g. `CHECK constraint failed: port >= 0 AND port <= 65535`).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The disk database could not be opened or created (missing directory, permissions...).
    #[error("cannot open the configuration database {}: {source}", path.display())]
    Open {
        /// The database file (`<datadir>/weir.db`).
        path: PathBuf,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// The disk database exists but is not a healthy SQLite database. The file is left as it
    /// is: it may be the only copy of the configuration.
    #[error(
        "the configuration database {} is damaged or is not a SQLite database ({detail}); \
         weir left it untouched: restore it from a backup, or move it away to start with an \
         empty configuration",
        path.display()
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// SQLite's error or the lines of `PRAGMA quick_check`.
        detail: String,
    },
    /// SQLite refused an internal operation of the store; `context` says which.
    #[error("{context}: {source}")]
    Sqlite {
        /// What the store was doing, e.g. `reading main.mysql_servers`.
        context: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// SQLite refused a statement typed by the DBA; the message is SQLite's own, as ProxySQL
    /// shows it.
    #[error("{0}")]
    Sql(#[source] rusqlite::Error),
    /// A DBA's statement that would change what the admin interface does not let change: a
    /// schema, or a table weir fills itself (runtime_*, stats, monitor).
    #[error("{0}")]
    Refused(String),
    /// A statement ran past the admin time limit and was stopped.
    #[error(
        "statement stopped after {} s: admin statements run one at a time, so a longer one would \
         stall every admin session (narrow it with WHERE or LIMIT)",
        .0.as_secs()
    )]
    TimeLimit(std::time::Duration),
    /// A result would take more memory than an admin result may (see
    /// [`super::sql::RESULT_LIMIT`]).
    #[error(
        "the result is larger than {} MiB, the most an admin statement may return: narrow it \
         with WHERE or LIMIT",
        .0 >> 20
    )]
    ResultTooLarge(usize),
    /// Writing one row of a config table failed, e.g. on a CHECK constraint.
    #[error("cannot write {table} row ({key}): {source}")]
    WriteRow {
        /// Schema-qualified table.
        table: String,
        /// The row's primary key, `column=value, ...`.
        key: String,
        /// SQLite's error.
        source: rusqlite::Error,
    },
    /// A stored value does not fit the typed row (out of range, wrong type, unexpected NULL).
    #[error("{table}, row ({key}), column {column}: {message}")]
    BadValue {
        /// Schema-qualified table.
        table: String,
        /// The row's primary key, `column=value, ...`.
        key: String,
        /// The offending column.
        column: String,
        /// What is wrong with the value.
        message: String,
    },
    /// A `global_variables` row names no known variable.
    #[error("{table}: unknown variable '{name}'")]
    UnknownVariable {
        /// Schema-qualified table.
        table: String,
        /// The variable name as stored.
        name: String,
    },
    /// A `global_variables` row holds a value its variable does not accept.
    #[error("{table}: variable '{name}': {message}")]
    InvalidVariable {
        /// Schema-qualified table.
        table: String,
        /// The variable name as stored.
        name: String,
        /// Why the value is refused.
        message: String,
    },
    /// `SHOW CREATE TABLE` or [`Store::replace_rows`](super::Store::replace_rows) on a table
    /// that does not exist.
    #[error("no such table: {0}")]
    NoSuchTable(String),
    /// `SHOW TABLES FROM x` where x is not an attached schema.
    #[error("unknown database '{0}'")]
    UnknownDatabase(String),
    /// A table name that is not `[schema.]name` made of letters, digits and `_`.
    #[error("invalid table name '{0}'")]
    InvalidTableName(String),
    /// [`Store::replace_rows`](super::Store::replace_rows) got a row of the wrong width.
    #[error("{table}: row {row} has {got} values but the table has {expected} columns")]
    RowWidth {
        /// Table as given.
        table: String,
        /// Index of the row in the input.
        row: usize,
        /// Values in that row.
        got: usize,
        /// Writable columns of the table.
        expected: usize,
    },
    /// An empty statement (or only a comment), as the mysql client words it.
    #[error("No query specified")]
    EmptyQuery,
    /// The datadir path cannot be handed to SQLite.
    #[error("the datadir path {} is not valid UTF-8", .0.display())]
    NonUtf8Path(PathBuf),
}

impl StoreError {
    /// Wraps an internal SQLite error with what the store was doing.
    pub(crate) fn sqlite(context: impl Into<String>) -> impl FnOnce(rusqlite::Error) -> Self {
        let context = context.into();
        move |source| StoreError::Sqlite { context, source }
    }
}
