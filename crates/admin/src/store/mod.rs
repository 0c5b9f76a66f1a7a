//! The SQLite configuration store behind the admin interface: schema `main` (in-memory config
//! tables and their `runtime_*` mirrors), `disk` (the same tables persisted in
//! `<datadir>/weir.db`), `stats` and `monitor`, all on one connection so that DBAs' SQL can
//! join across them as in ProxySQL.
//!
//! The store holds configuration and answers admin SQL; it never holds live state. Callers
//! move whole modules between layers with [`Store::read_tables`] / [`Store::write_module`],
//! which convert to and from `weir-config`'s typed rows, and publish stats with
//! [`Store::replace_rows`] just before a query reads them.

mod convert;
mod error;
mod schema;
mod sql;
#[cfg(test)]
mod sql_tests;
#[cfg(test)]
mod tests;

pub use error::StoreError;

use rusqlite::config::DbConfig;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Connection, ErrorCode};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_config::ConfigTables;

/// The longest an admin statement typed by the DBA may run. Admin statements run one at a
/// time on one SQLite connection, so a runaway one (a recursive CTE without an end, a
/// cross join of the digest table with itself) would otherwise stall every admin session.
pub const STATEMENT_TIME_LIMIT: Duration = Duration::from_secs(30);

/// SQLite virtual machine steps between two looks at the clock.
const PROGRESS_STEPS: i32 = 100_000;

/// The file name of the disk database inside the datadir.
const DISK_FILE: &str = "weir.db";

/// Which copy of the config tables an operation works on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// The `main` schema: what the DBA edits with SQL.
    Memory,
    /// The `disk` schema: what survives a restart.
    Disk,
    /// The `main.runtime_*` tables: a picture of the configuration running now.
    Runtime,
}

impl Target {
    /// The layer's name as written in commands (`MEMORY`, `DISK`, `RUNTIME`).
    pub fn as_str(self) -> &'static str {
        match self {
            Target::Memory => "MEMORY",
            Target::Disk => "DISK",
            Target::Runtime => "RUNTIME",
        }
    }
}

/// Rows returned by a statement, as text the way the mysql CLI shows them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResultSet {
    /// Column names, in order.
    pub columns: Vec<String>,
    /// One entry per row, one value per column: integers in decimal, reals via `to_string`,
    /// `None` for NULL.
    pub rows: Vec<Vec<Option<String>>>,
}

/// What one SQL statement produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlOutcome {
    /// A statement with result columns (SELECT, PRAGMA ..., `RETURNING`).
    Rows(ResultSet),
    /// Any other statement, with what the OK packet reports.
    Affected {
        /// Rows inserted, updated or deleted by this statement.
        rows: u64,
        /// The rowid of the last row this statement inserted, else 0.
        last_insert_id: u64,
    },
}

/// Who runs a statement, for the authorizer.
#[derive(Clone, Copy)]
#[repr(u8)]
enum Mode {
    /// weir itself (LOAD, SAVE, refreshes): anything but ATTACH and DETACH.
    Internal,
    /// A DBA's statement: see [`Store::execute_dba`].
    Dba,
    /// A stats user's statement: reads of `stats` and `monitor` only.
    Stats,
}

/// PRAGMAs that only read, which a DBA may run (`PRAGMA table_info(mysql_servers)`).
const DBA_PRAGMAS: [&str; 14] = [
    "table_info",
    "table_xinfo",
    "table_list",
    "index_list",
    "index_info",
    "index_xinfo",
    "database_list",
    "foreign_key_list",
    "collation_list",
    "function_list",
    "pragma_list",
    "compile_options",
    "quick_check",
    "integrity_check",
];

/// Why the authorizer refused a DBA's statement, for its error message.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Refusal {
    None,
    Schema,
    Generated,
}

/// Whether `table` of `schema` is one weir fills itself each time it is read (`runtime_*`,
/// the `stats` and `monitor` schemas): a write there would be lost at the next read.
fn is_generated(schema: Option<&str>, table: &str) -> bool {
    matches!(schema, Some("stats" | "monitor")) || table.starts_with("runtime_")
}

/// What a DBA's statement may do: read and change rows of the config tables, not the schemas
/// or the tables weir fills itself.
fn dba_may(ctx: &AuthContext<'_>) -> (Authorization, Refusal) {
    let allow = (Authorization::Allow, Refusal::None);
    match ctx.action {
        AuthAction::Insert { table_name }
        | AuthAction::Update { table_name, .. }
        | AuthAction::Delete { table_name }
            if is_generated(ctx.database_name, table_name) =>
        {
            (Authorization::Deny, Refusal::Generated)
        }
        AuthAction::Select
        | AuthAction::Read { .. }
        | AuthAction::Insert { .. }
        | AuthAction::Update { .. }
        | AuthAction::Delete { .. }
        | AuthAction::Function { .. }
        | AuthAction::Recursive => allow,
        AuthAction::Pragma { pragma_name, .. }
            if DBA_PRAGMAS
                .iter()
                .any(|p| p.eq_ignore_ascii_case(pragma_name)) =>
        {
            allow
        }
        _ => (Authorization::Deny, Refusal::Schema),
    }
}

/// The configuration database: one SQLite connection with the four schemas attached.
///
/// Not `Sync`: callers share it behind a mutex, which also serializes admin statements the
/// way ProxySQL's single admin thread does.
pub struct Store {
    conn: Connection,
    /// Who runs the current statement: weir itself, a DBA or a stats user ([`Mode`]).
    mode: Arc<AtomicU8>,
    /// Why the authorizer last refused part of a DBA's statement ([`Refusal`]).
    refusal: Arc<AtomicU8>,
    /// When the running DBA statement must stop, in ms since `epoch`; `u64::MAX` when none.
    deadline_ms: Arc<AtomicU64>,
    /// Origin of `deadline_ms`.
    epoch: Instant,
    /// How long a DBA statement may run ([`STATEMENT_TIME_LIMIT`] outside tests).
    time_limit: Duration,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens the store with `<datadir>/weir.db` as schema `disk`, creating the file when it is
    /// missing and any missing table in it.
    ///
    /// A file that is not a healthy SQLite database is an error naming it; it is never
    /// replaced, since it may be the only copy of the configuration.
    pub fn open(datadir: &Path) -> Result<Store, StoreError> {
        let path = datadir.join(DISK_FILE);
        let name = path
            .to_str()
            .ok_or_else(|| StoreError::NonUtf8Path(path.clone()))?;
        let conn = Self::connect()?;
        conn.execute("ATTACH DATABASE ?1 AS disk", [name])
            .map_err(|e| disk_error(&path, e))?;
        check_disk(&conn, &path)?;
        Self::finish(conn)
    }

    /// Opens the store with `disk` in memory too: nothing touches the file system.
    pub fn open_in_memory() -> Result<Store, StoreError> {
        let conn = Self::connect()?;
        conn.execute_batch("ATTACH DATABASE ':memory:' AS disk")
            .map_err(StoreError::sqlite("attaching an in-memory disk schema"))?;
        Self::finish(conn)
    }

    /// The in-memory `main` database, with ProxySQL's SQL dialect switched on.
    fn connect() -> Result<Connection, StoreError> {
        let conn = Connection::open_in_memory()
            .map_err(StoreError::sqlite("opening the in-memory database"))?;
        // DBAs write `WHERE hostname="10.0.0.1"` (MySQL habit, and ProxySQL accepts it).
        // SQLite builds may default double-quoted strings off, so enable them explicitly.
        for flag in [
            DbConfig::SQLITE_DBCONFIG_DQS_DML,
            DbConfig::SQLITE_DBCONFIG_DQS_DDL,
        ] {
            conn.set_db_config(flag, true)
                .map_err(StoreError::sqlite("enabling double-quoted string literals"))?;
        }
        // No single value past what a whole result may take (`zeroblob(1e9)`).
        let longest = i32::try_from(sql::RESULT_LIMIT).unwrap_or(i32::MAX);
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, longest)
            .map_err(StoreError::sqlite("limiting the length of values"))?;
        Ok(conn)
    }

    /// Attaches `stats` and `monitor` and creates every missing table.
    fn finish(mut conn: Connection) -> Result<Store, StoreError> {
        conn.execute_batch(
            "ATTACH DATABASE ':memory:' AS stats; ATTACH DATABASE ':memory:' AS monitor;",
        )
        .map_err(StoreError::sqlite(
            "attaching the stats and monitor schemas",
        ))?;
        schema::create_all(&conn)?;
        let mode = Arc::new(AtomicU8::new(Mode::Internal as u8));
        let current = mode.clone();
        let refusal = Arc::new(AtomicU8::new(Refusal::None as u8));
        let refused = refusal.clone();
        // Installed after the schemas are attached: from here on nobody may ATTACH a file
        // or DETACH `disk` (which would break SAVE ... TO DISK until a restart).
        conn.authorizer(Some(move |ctx: AuthContext<'_>| {
            let mode = current.load(Ordering::Relaxed);
            match ctx.action {
                _ if mode == Mode::Dba as u8 => {
                    let (verdict, why) = dba_may(&ctx);
                    if why != Refusal::None {
                        refused.store(why as u8, Ordering::Relaxed);
                    }
                    verdict
                }
                AuthAction::Attach { .. } | AuthAction::Detach { .. } => Authorization::Deny,
                _ if mode == Mode::Internal as u8 => Authorization::Allow,
                AuthAction::Select | AuthAction::Function { .. } | AuthAction::Recursive => {
                    Authorization::Allow
                }
                AuthAction::Read { .. }
                    if matches!(ctx.database_name, Some("stats" | "monitor" | "temp")) =>
                {
                    Authorization::Allow
                }
                // A read of no column (`SELECT COUNT(*) FROM t`) names no schema when `t` was
                // written unqualified: allow it for the tables only `stats` and `monitor` have.
                AuthAction::Read { table_name, .. }
                    if ctx.database_name.is_none()
                        && schema::is_stats_or_monitor_table(table_name) =>
                {
                    Authorization::Allow
                }
                _ => Authorization::Deny,
            }
        }))
        .map_err(StoreError::sqlite("installing the authorizer"))?;
        let deadline_ms = Arc::new(AtomicU64::new(u64::MAX));
        let epoch = Instant::now();
        let deadline = deadline_ms.clone();
        // Returning true interrupts the statement (SQLITE_INTERRUPT).
        conn.progress_handler(
            PROGRESS_STEPS,
            Some(move || {
                let limit = deadline.load(Ordering::Relaxed);
                limit != u64::MAX && elapsed_ms(epoch) > limit
            }),
        )
        .map_err(StoreError::sqlite("installing the statement time limit"))?;
        Ok(Store {
            conn,
            mode,
            refusal,
            deadline_ms,
            epoch,
            time_limit: STATEMENT_TIME_LIMIT,
        })
    }

    /// Runs one statement that may only read the `stats` and `monitor` schemas: what a stats
    /// user (admin-stats_credentials) is allowed. Anything else fails with "not authorized".
    pub fn execute_stats_only(&self, sql: &str) -> Result<SqlOutcome, StoreError> {
        // Read as weir itself: the authorizer refuses a stats user the pragma.
        let allowed: Vec<i64> = self
            .conn
            .prepare(
                "SELECT seq FROM pragma_database_list WHERE name IN ('stats', 'monitor', 'temp')",
            )
            .and_then(|mut st| st.query_map([], |r| r.get(0))?.collect())
            .map_err(StoreError::sqlite("listing the attached schemas"))?;
        self.mode.store(Mode::Stats as u8, Ordering::Relaxed);
        let r = self
            .opens_only(&allowed, sql)
            .and_then(|()| self.execute(sql));
        self.mode.store(Mode::Internal as u8, Ordering::Relaxed);
        r
    }

    /// Refuses a stats user's statement whose program opens a table of a schema not in
    /// `allowed` (`stats`, `monitor` and `temp`), or a virtual table. SQLite does not ask the authorizer about the columns a
    /// NATURAL JOIN or a USING clause compares, so without this a stats user could test
    /// guesses against `mysql_users.password` (`... NATURAL JOIN mysql_users`).
    fn opens_only(&self, allowed: &[i64], sql: &str) -> Result<(), StoreError> {
        let Ok(mut explain) = self.conn.prepare(&format!("EXPLAIN {sql}")) else {
            // Not a statement EXPLAIN takes: running it gives the real error (or, for an
            // EXPLAIN itself, a program listing, which holds no row of any table).
            return Ok(());
        };
        let mut rows = explain.query([]).map_err(StoreError::Sql)?;
        while let Some(row) = rows.next().map_err(StoreError::Sql)? {
            let opcode: String = row.get(1).map_err(StoreError::Sql)?;
            let schema: i64 = row.get(4).map_err(StoreError::Sql)?;
            let outside = match opcode.as_str() {
                "OpenRead" | "OpenWrite" | "ReopenIdx" => !allowed.contains(&schema),
                "VOpen" => true,
                _ => false,
            };
            if outside {
                return Err(StoreError::Refused(
                    "not authorized: the statement reads a table outside the stats and monitor \
                     schemas"
                        .into(),
                ));
            }
        }
        Ok(())
    }

    /// Runs one statement a DBA typed: rows may change, the schemas may not (no CREATE,
    /// DROP, ALTER..., no PRAGMA that changes anything), so no statement can leave a table
    /// that LOAD, SAVE or a restart needs missing or different. Refused parts fail with
    /// "not authorized".
    pub fn execute_dba(&self, sql: &str) -> Result<SqlOutcome, StoreError> {
        self.refusal.store(Refusal::None as u8, Ordering::Relaxed);
        let r = self.execute_as(Mode::Dba, sql);
        let why = self.refusal.swap(Refusal::None as u8, Ordering::Relaxed);
        match r {
            Err(StoreError::Sql(_)) if why == Refusal::Generated as u8 => {
                Err(StoreError::Refused(format!(
                    "not allowed on the admin interface: '{sql}' writes to a table weir fills \
                     itself each time it is read (runtime_*, stats, monitor): the change would \
                     be lost. Change the config tables in main (mysql_servers...) and LOAD \
                     them TO RUNTIME; clear statistics with TRUNCATE TABLE \
                     stats_mysql_query_digest (or by reading the *_reset tables)"
                )))
            }
            Err(StoreError::Sql(_)) if why == Refusal::Schema as u8 => {
                Err(StoreError::Refused(format!(
                    "not allowed on the admin interface: '{sql}' (the tables of its schemas \
                     are fixed: change their rows with INSERT, UPDATE, DELETE or REPLACE; \
                     PRAGMAs may only read)"
                )))
            }
            r => r,
        }
    }

    fn execute_as(&self, mode: Mode, sql: &str) -> Result<SqlOutcome, StoreError> {
        self.mode.store(mode as u8, Ordering::Relaxed);
        let r = self.execute(sql);
        self.mode.store(Mode::Internal as u8, Ordering::Relaxed);
        r
    }

    /// Sets how long a DBA statement may run.
    #[cfg(test)]
    pub(crate) fn set_time_limit(&mut self, limit: Duration) {
        self.time_limit = limit;
    }

    /// Runs `f` with [`STATEMENT_TIME_LIMIT`] in force: past it, SQLite stops the statement
    /// and `f` gets [`StoreError::TimeLimit`].
    fn time_limited<T>(&self, f: impl FnOnce() -> Result<T, StoreError>) -> Result<T, StoreError> {
        let limit = u64::try_from(self.time_limit.as_millis()).unwrap_or(u64::MAX - 1);
        self.deadline_ms.store(
            elapsed_ms(self.epoch).saturating_add(limit),
            Ordering::Relaxed,
        );
        let r = f();
        self.deadline_ms.store(u64::MAX, Ordering::Relaxed);
        r.map_err(|e| match e {
            StoreError::Sql(rusqlite::Error::SqliteFailure(f, _))
                if f.code == ErrorCode::OperationInterrupted =>
            {
                StoreError::TimeLimit(self.time_limit)
            }
            e => e,
        })
    }

    /// True when the disk schema holds no configuration yet (no `global_variables` row): the
    /// first start, when the config file seeds the database.
    pub fn disk_is_empty(&self) -> Result<bool, StoreError> {
        self.conn
            .query_row(
                "SELECT NOT EXISTS (SELECT 1 FROM disk.global_variables)",
                [],
                |r| r.get(0),
            )
            .map_err(StoreError::sqlite("reading disk.global_variables"))
    }

    /// Reads every config table of `from` into typed rows, in primary-key order.
    ///
    /// Every value must fit its typed column (e.g. a port of 70000, a NULL where the column
    /// has no "unset", an unknown status or variable is an error naming table, row and
    /// column). Variables without a row keep their default.
    pub fn read_tables(&self, from: Target) -> Result<ConfigTables, StoreError> {
        convert::read_tables(&self.conn, from)
    }

    /// Reads only the tables of `module` in `from` (for the variable modules, only the rows of
    /// their prefix); the rest of the result is default. A bad row of another module does not
    /// make this fail, so that each module loads on its own.
    pub fn read_module(
        &self,
        from: Target,
        module: crate::Module,
    ) -> Result<ConfigTables, StoreError> {
        convert::read_module(&self.conn, from, module)
    }

    /// Replaces the tables of `module` in `target` with those of `tables`, in one transaction:
    /// on any error nothing changes.
    ///
    /// `MysqlServers` covers `mysql_servers` and `mysql_replication_hostgroups`; the variable
    /// modules write every variable of their prefix, under its full name (`mysql-threads`).
    pub fn write_module(
        &self,
        target: Target,
        module: crate::Module,
        tables: &ConfigTables,
    ) -> Result<(), StoreError> {
        convert::write_modules(&self.conn, &[(target, module)], tables)
    }

    /// Replaces the tables of every module in both memory and disk with those of `tables`,
    /// in one transaction: a seed from the config file is written whole or not at all.
    pub fn write_everywhere(&self, tables: &ConfigTables) -> Result<(), StoreError> {
        let parts: Vec<_> = crate::Module::ALL
            .into_iter()
            .flat_map(|m| [(Target::Disk, m), (Target::Memory, m)])
            .collect();
        convert::write_modules(&self.conn, &parts, tables)
    }

    /// Gives every variable of the variables `module` a `global_variables` row in `target`,
    /// with its value in `tables`, where a DBA's DELETE removed it (ProxySQL re-creates
    /// them too). Returns how many rows were added; other modules add none.
    pub fn add_missing_variables(
        &self,
        target: Target,
        module: crate::Module,
        tables: &ConfigTables,
    ) -> Result<usize, StoreError> {
        match module {
            crate::Module::MysqlVariables => {
                convert::add_missing_variables(&self.conn, target, &tables.mysql_variables)
            }
            crate::Module::AdminVariables => {
                convert::add_missing_variables(&self.conn, target, &tables.admin_variables)
            }
            _ => Ok(0),
        }
    }
}

/// Fails unless the attached disk database passes `PRAGMA quick_check`: a file with a valid
/// header can still have damaged pages, which ATTACH does not read.
fn check_disk(conn: &Connection, path: &Path) -> Result<(), StoreError> {
    let lines: Vec<String> = conn
        .prepare("PRAGMA disk.quick_check")
        .and_then(|mut stmt| {
            stmt.query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(|e| disk_error(path, e))?;
    if lines.len() == 1 && lines.first().is_some_and(|l| l == "ok") {
        Ok(())
    } else {
        Err(StoreError::Corrupt {
            path: PathBuf::from(path),
            detail: lines.join("; "),
        })
    }
}

/// Classifies a failure to open or check the disk database: damage is reported as such,
/// anything else (permissions, I/O, a missing directory, a lock) with SQLite's own words,
/// since the file itself may be fine.
fn disk_error(path: &Path, e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => StoreError::Corrupt {
            path: PathBuf::from(path),
            detail: e.to_string(),
        },
        _ => StoreError::Open {
            path: PathBuf::from(path),
            source: e,
        },
    }
}

fn elapsed_ms(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
}
