//! Runs one admin statement: admin commands (LOAD/SAVE, SET, SHOW ... VARIABLES, PAUSE...),
//! the connect-time chatter of MySQL clients, and plain SQL on the store with the dynamic
//! tables (runtime_*, stats) filled just before they are read.

use crate::control::{Control, StatsReset};
use crate::grammar::{parse, AdminCommand, Layer, Module, Parsed};
use crate::stats_tables;
use crate::store::{ResultSet, SqlOutcome, Store, StoreError, Target};
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use weir_config::{ConfigTables, Runtime, Variables};

/// What an admin user may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `admin-admin_credentials`: everything.
    Admin,
    /// `admin-stats_credentials`: read-only.
    Stats,
}

/// One admin connection's state.
#[derive(Debug, Clone)]
pub struct AdminSession {
    /// Login name.
    pub user: String,
    /// What the user may do.
    pub role: Role,
    /// Client address, for USER().
    pub host: String,
    /// Current schema as the client sees it (`USE`, COM_INIT_DB).
    pub schema: String,
    /// weir's id for this admin connection.
    pub connection_id: u32,
    /// Notes of the last statement, for SHOW WARNINGS.
    pub warnings: Vec<String>,
}

/// The answer to one statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// An OK packet.
    Ok {
        /// Rows changed.
        affected: u64,
        /// Last AUTOINCREMENT value.
        last_insert_id: u64,
        /// Text the mysql CLI prints under "Query OK" (notes such as "needs a restart").
        info: String,
    },
    /// A result set.
    Rows(ResultSet),
}

impl Reply {
    fn ok() -> Reply {
        Reply::Ok {
            affected: 0,
            last_insert_id: 0,
            info: String::new(),
        }
    }

    fn ok_with(affected: u64, info: impl Into<String>) -> Reply {
        Reply::Ok {
            affected,
            last_insert_id: 0,
            info: info.into(),
        }
    }
}

/// An admin statement that failed: becomes an ERR packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AdminError {
    /// MySQL error code.
    pub code: u16,
    /// SQLSTATE.
    pub state: &'static str,
    /// What went wrong, for the DBA.
    pub message: String,
}

impl AdminError {
    fn new(code: u16, state: &'static str, message: impl Into<String>) -> Self {
        AdminError {
            code,
            state,
            message: message.into(),
        }
    }

    /// A failure with no better MySQL code (ER_UNKNOWN_ERROR).
    fn general(message: impl Into<String>) -> Self {
        Self::new(1105, "HY000", message)
    }

    fn locked() -> Self {
        Self::new(
            1290,
            "HY000",
            "the admin interface runs with admin-read_only=true and refuses changes \
             (SET admin-read_only=false; LOAD ADMIN VARIABLES TO RUNTIME lifts it)",
        )
    }

    fn read_only(user: &str) -> Self {
        Self::new(
            1227,
            "42000",
            format!(
                "Access denied: '{user}' is a stats user (admin-stats_credentials) and may only read (SELECT, SHOW)"
            ),
        )
    }
}

impl From<StoreError> for AdminError {
    /// SQLite's message, under the MySQL code a client expects for that kind of failure.
    fn from(e: StoreError) -> Self {
        let message = e.to_string();
        let (code, state) = if matches!(e, StoreError::TimeLimit(_)) {
            (3024, "HY000")
        } else if matches!(e, StoreError::ResultTooLarge(_)) {
            // ER_TOO_BIG_SELECT: the server's answer to a result past a bound.
            (1104, "42000")
        } else if message.contains("CHECK constraint failed") {
            (3819, "HY000")
        } else if message.contains("UNIQUE constraint failed") {
            (1062, "23000")
        } else if message.contains("NOT NULL constraint failed") {
            (1048, "23000")
        } else if message.contains("no such table") {
            (1146, "42S02")
        } else if message.contains("no such column") || message.contains("has no column named") {
            (1054, "42S22")
        } else if message.contains("syntax error") || message.contains("incomplete input") {
            (1064, "42000")
        } else if message.contains("values were supplied")
            || (message.contains(" values for ") && message.contains(" columns"))
        {
            (1136, "21S01")
        } else {
            (1105, "HY000")
        };
        AdminError::new(code, state, message)
    }
}

/// The admin interface's state: the store and the proxy it controls.
pub struct Admin {
    store: Mutex<Store>,
    control: Arc<dyn Control>,
    /// What the process started with: restart-only variables keep these values until the
    /// next start, whatever is loaded since.
    startup: Arc<Runtime>,
    config_path: PathBuf,
    /// PROXYSQL SHUTDOWN was accepted: the shutdown starts once its OK is on the wire
    /// ([`Admin::after_reply`]), so that the DBA's client sees the OK, not a lost connection.
    shutdown_pending: AtomicBool,
}

/// Tables that hold a module's rows, for SQL copies between `main` and `disk`.
fn module_tables(module: Module) -> &'static [&'static str] {
    match module {
        Module::MysqlServers => &["mysql_servers", "mysql_replication_hostgroups"],
        Module::MysqlUsers => &["mysql_users"],
        Module::MysqlQueryRules => &["mysql_query_rules"],
        Module::MysqlVariables | Module::AdminVariables => &["global_variables"],
    }
}

fn variable_prefix(module: Module) -> Option<&'static str> {
    match module {
        Module::MysqlVariables => Some("mysql-"),
        Module::AdminVariables => Some("admin-"),
        _ => None,
    }
}

/// Replaces `module`'s part of `into` with that of `from`.
fn take_module(into: &mut ConfigTables, from: &ConfigTables, module: Module) {
    match module {
        Module::MysqlServers => {
            into.mysql_servers = from.mysql_servers.clone();
            into.mysql_replication_hostgroups = from.mysql_replication_hostgroups.clone();
        }
        Module::MysqlUsers => into.mysql_users = from.mysql_users.clone(),
        Module::MysqlQueryRules => into.mysql_query_rules = from.mysql_query_rules.clone(),
        Module::MysqlVariables => into.mysql_variables = from.mysql_variables.clone(),
        Module::AdminVariables => into.admin_variables = from.admin_variables.clone(),
    }
}

impl Admin {
    /// The admin interface over `store`, controlling the proxy through `control`;
    /// `config_path` is re-read by `LOAD ... FROM CONFIG`.
    pub fn new(store: Store, control: Arc<dyn Control>, config_path: PathBuf) -> Admin {
        Admin {
            store: Mutex::new(store),
            startup: control.runtime(),
            control,
            config_path,
            shutdown_pending: AtomicBool::new(false),
        }
    }

    /// The proxy this admin controls.
    pub fn control(&self) -> &Arc<dyn Control> {
        &self.control
    }

    /// To be called once the reply to a statement has been sent: starts the shutdown that a
    /// `PROXYSQL SHUTDOWN` asked for (which stops the admin listener and its connections).
    pub fn after_reply(&self) {
        if self.shutdown_pending.swap(false, Ordering::AcqRel) {
            self.control.shutdown();
        }
    }

    /// Runs one statement for `session`. After sending its reply, call [`Admin::after_reply`].
    pub fn execute(&self, session: &mut AdminSession, sql: &str) -> Result<Reply, AdminError> {
        let unwrapped = unwrap_versioned_comments(sql);
        let sql = trim_statement(&unwrapped);
        let asks_warnings =
            sql.split_whitespace()
                .map(str::to_ascii_lowercase)
                .eq(["show", "warnings"].iter().map(|w| w.to_string()));
        if !asks_warnings {
            session.warnings.clear();
        }
        if sql.is_empty() {
            return Err(AdminError::new(1065, "42000", "Query was empty"));
        }
        let parsed = parse(sql).map_err(|e| AdminError::new(1064, "42000", e.message))?;
        match parsed {
            Parsed::Command(cmd) => self.command(session, cmd),
            Parsed::Sql => {
                if let Some(reply) = self.chatter(session, sql)? {
                    return Ok(reply);
                }
                if !is_read_statement(sql) {
                    if session.role == Role::Stats {
                        return Err(AdminError::read_only(&session.user));
                    }
                    if self.control.runtime().admin.read_only {
                        return Err(AdminError::locked());
                    }
                }
                let store = self.store.lock();
                self.refresh_dynamic(&store, sql)?;
                let outcome = if session.role == Role::Stats {
                    store.execute_stats_only(sql).map_err(|e| {
                        let m = e.to_string();
                        if m.contains("not authorized") || m.contains("prohibited") {
                            AdminError::new(
                                1142,
                                "42000",
                                format!(
                                    "'{}' is a stats user: it may only read the stats and monitor schemas",
                                    session.user
                                ),
                            )
                        } else {
                            e.into()
                        }
                    })?
                } else {
                    store.execute_dba(sql).map_err(|e| match e {
                        StoreError::Refused(m) => AdminError::new(1142, "42000", m),
                        e => e.into(),
                    })?
                };
                Ok(match outcome {
                    SqlOutcome::Rows(rs) => Reply::Rows(rs),
                    SqlOutcome::Affected {
                        rows,
                        last_insert_id,
                    } => Reply::Ok {
                        affected: rows,
                        last_insert_id,
                        info: String::new(),
                    },
                })
            }
        }
    }

    fn command(&self, session: &mut AdminSession, cmd: AdminCommand) -> Result<Reply, AdminError> {
        let read_only = matches!(
            cmd,
            AdminCommand::ShowVariables { .. }
                | AdminCommand::ShowMysqlStatus { .. }
                | AdminCommand::ShowTables { .. }
        );
        // Variables hold credentials (admin-*, mysql-monitor_password): not for stats users.
        let stats_may = matches!(
            cmd,
            AdminCommand::ShowMysqlStatus { .. } | AdminCommand::ShowTables { .. }
        );
        if session.role == Role::Stats && !stats_may {
            return Err(AdminError::read_only(&session.user));
        }
        // admin-read_only must stay reversible: its own SET and LOAD remain allowed.
        let unlocks = match &cmd {
            AdminCommand::SetVariable { name, .. } => name.eq_ignore_ascii_case("admin-read_only"),
            AdminCommand::Copy { module, from, to } => {
                *module == Module::AdminVariables && *from == Layer::Memory && *to == Layer::Runtime
            }
            _ => false,
        };
        if !read_only && !unlocks && self.control.runtime().admin.read_only {
            return Err(AdminError::locked());
        }
        match cmd {
            AdminCommand::Copy { module, from, to } => self.copy(session, module, from, to),
            AdminCommand::SetVariable { name, value } => self.set_variable(&name, &value),
            AdminCommand::ShowVariables { module, like } => self.show_variables(module, like),
            AdminCommand::ShowTables { schema, like } => {
                let schema = match schema {
                    // Listing disk's tables is harmless; only `USE disk` is refused.
                    Some(s) if s.eq_ignore_ascii_case("disk") => Some(s),
                    Some(s) => {
                        self.check_schema(&s)?;
                        Some(s)
                    }
                    None if session.schema != "main" => Some(session.schema.clone()),
                    None => None,
                };
                let store = self.store.lock();
                Ok(Reply::Rows(
                    store.show_tables(schema.as_deref(), like.as_deref())?,
                ))
            }
            AdminCommand::ShowMysqlStatus { like } => {
                let snap = self.control.stats(StatsReset::default());
                let mut rs = ResultSet {
                    columns: vec!["Variable_name".into(), "Value".into()],
                    rows: Vec::new(),
                };
                for (k, v) in snap.global {
                    if like.as_deref().is_none_or(|p| like_matches(p, &k)) {
                        rs.rows.push(vec![Some(k), Some(v)]);
                    }
                }
                Ok(Reply::Rows(rs))
            }
            AdminCommand::FlushQueryCache => {
                let n = self.control.flush_query_cache();
                Ok(Reply::ok_with(n, ""))
            }
            AdminCommand::Pause => Ok(if self.control.pause() {
                Reply::ok()
            } else {
                Reply::ok_with(0, "weir was already paused")
            }),
            AdminCommand::Resume => Ok(if self.control.resume() {
                Reply::ok()
            } else {
                Reply::ok_with(0, "weir was not paused")
            }),
            AdminCommand::Shutdown => {
                self.shutdown_pending.store(true, Ordering::Release);
                Ok(Reply::ok())
            }
        }
    }

    /// LOAD/SAVE between layers.
    fn copy(
        &self,
        session: &mut AdminSession,
        module: Module,
        from: Layer,
        to: Layer,
    ) -> Result<Reply, AdminError> {
        let store = self.store.lock();
        match (from, to) {
            (Layer::Memory, Layer::Runtime) => {
                let memory = store.read_module(Target::Memory, module).map_err(|e| {
                    AdminError::general(format!("LOAD {module} TO RUNTIME: {e}; runtime unchanged"))
                })?;
                let current = self.control.runtime();
                let mut tables = current.tables.clone();
                take_module(&mut tables, &memory, module);
                let runtime = Runtime::build(&tables).map_err(|errors| {
                    let lines: Vec<String> = errors
                        .iter()
                        .map(|e| describe_error(&tables, &e.path, &e.message))
                        .collect();
                    AdminError::general(format!(
                        "LOAD {module} TO RUNTIME refused, runtime unchanged: {}",
                        lines.join("; ")
                    ))
                })?;
                let notes = restart_notes(&self.startup, &runtime, module);
                for w in &runtime.warnings {
                    tracing::warn!("{w}");
                }
                self.control.apply(runtime).map_err(|problems| {
                    AdminError::general(format!(
                        "LOAD {module} TO RUNTIME refused, runtime unchanged: {}",
                        problems.join("; ")
                    ))
                })?;
                // A variable whose row was deleted runs with its default: show it again.
                store.add_missing_variables(
                    Target::Memory,
                    module,
                    &self.control.runtime().tables,
                )?;
                tracing::info!("LOAD {module} TO RUNTIME by {}", session.user);
                for n in &notes {
                    tracing::warn!("{n}");
                }
                session.warnings = notes.clone();
                Ok(Reply::ok_with(0, notes.join("; ")))
            }
            (Layer::Runtime, Layer::Memory) => {
                let mut tables = self.control.runtime().tables.clone();
                if module == Module::MysqlServers {
                    // Where the monitor placed the servers (a failover it followed), as
                    // runtime_mysql_servers shows them, so that SAVE ... TO DISK keeps the
                    // topology; with their configured statuses (a shun is not a setting).
                    let snap = self.control.stats(StatsReset::default());
                    crate::stats_tables::placed_servers(&mut tables, &snap, false);
                }
                store.write_module(Target::Memory, module, &tables)?;
                Ok(Reply::ok())
            }
            (Layer::Memory, Layer::Disk) => {
                // weir starts from the disk: what LOAD would refuse would keep it from
                // starting (or, for the rules, from routing as the DBA meant).
                let memory = store.read_module(Target::Memory, module).map_err(|e| {
                    AdminError::general(format!("SAVE {module} TO DISK: {e}; disk unchanged"))
                })?;
                let mut tables = self.control.runtime().tables.clone();
                take_module(&mut tables, &memory, module);
                let refused = |lines: Vec<String>| {
                    AdminError::general(format!(
                        "SAVE {module} TO DISK refused, disk unchanged (weir could not start with it): {}",
                        lines.join("; ")
                    ))
                };
                let runtime = Runtime::build(&tables).map_err(|errors| {
                    refused(
                        errors
                            .iter()
                            .map(|e| describe_error(&tables, &e.path, &e.message))
                            .collect(),
                    )
                })?;
                self.control.check(&runtime).map_err(refused)?;
                copy_sql(&store, module, "main", "disk")?;
                Ok(Reply::ok())
            }
            (Layer::Disk, Layer::Memory) => {
                copy_sql(&store, module, "disk", "main")?;
                Ok(Reply::ok())
            }
            (Layer::Config, Layer::Memory) => {
                let file = weir_config::load_config_file(&self.config_path).map_err(|errors| {
                    AdminError::general(format!(
                        "LOAD {module} FROM CONFIG: {} has errors, memory unchanged: {}",
                        self.config_path.display(),
                        errors
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join("; ")
                    ))
                })?;
                store.write_module(Target::Memory, module, &file.tables)?;
                Ok(Reply::ok())
            }
            (from, to) => Err(AdminError::new(
                1064,
                "42000",
                format!("cannot copy {module} from {from} to {to}"),
            )),
        }
    }

    /// `SET mysql-x = v`: validated now so that a typo fails here, not at LOAD.
    fn set_variable(&self, name: &str, value: &str) -> Result<Reply, AdminError> {
        let lower = name.to_ascii_lowercase();
        let mut vars = if lower.starts_with("mysql-") {
            Variables::mysql_defaults()
        } else {
            Variables::admin_defaults()
        };
        if vars.spec(name).is_none() {
            return Err(AdminError::new(
                1193,
                "HY000",
                format!("Unknown system variable '{name}'"),
            ));
        }
        vars.set(name, value).map_err(|e| {
            AdminError::new(
                1231,
                "42000",
                format!("Variable '{name}' can't be set to the value of '{value}': {e}"),
            )
        })?;
        let normalized = vars.get(name).unwrap_or(value).to_string();
        // The spec's spelling (query_cache_size_MB), whatever case the DBA typed: one row
        // per variable.
        let canonical = vars
            .spec(name)
            .map_or(strip_prefix(&lower, vars.prefix()), |sp| sp.name);
        let full = format!("{}{}", vars.prefix(), canonical);
        let store = self.store.lock();
        store.execute(&format!(
            "REPLACE INTO main.global_variables (variable_name, variable_value) VALUES ({}, {})",
            sql_quote(&full),
            sql_quote(&normalized)
        ))?;
        Ok(Reply::ok_with(1, ""))
    }

    fn show_variables(&self, module: Module, like: Option<String>) -> Result<Reply, AdminError> {
        let prefix = variable_prefix(module).unwrap_or("mysql-");
        let mut sql = format!(
            "SELECT variable_name AS Variable_name, variable_value AS Value FROM main.global_variables WHERE variable_name LIKE '{prefix}%'"
        );
        if let Some(p) = like {
            sql.push_str(&format!(" AND variable_name LIKE {}", sql_quote(&p)));
        }
        sql.push_str(" ORDER BY variable_name");
        let store = self.store.lock();
        match store.execute(&sql)? {
            SqlOutcome::Rows(rs) => Ok(Reply::Rows(rs)),
            SqlOutcome::Affected { .. } => Ok(Reply::ok()),
        }
    }

    /// `KILL [CONNECTION | QUERY] id`: a client session of any user, by its SessionID in
    /// stats_mysql_processlist (ProxySQL's admin takes `KILL CONNECTION` the same way).
    fn kill(&self, session: &AdminSession, words: &[String]) -> Result<Reply, AdminError> {
        if session.role == Role::Stats {
            return Err(AdminError::read_only(&session.user));
        }
        let words: Vec<&str> = words
            .iter()
            .map(|w| w.trim_end_matches(';'))
            .filter(|w| !w.is_empty())
            .collect();
        let (query_only, id) = match words.as_slice() {
            [_, id] if *id != "connection" && *id != "query" => (false, *id),
            [_, "connection", id] => (false, *id),
            [_, "query", id] => (true, *id),
            _ => {
                return Err(AdminError::new(
                    1064,
                    "42000",
                    "KILL: expected KILL [CONNECTION | QUERY] <SessionID> (see \
                     stats_mysql_processlist)",
                ))
            }
        };
        let Ok(id) = id.parse::<u64>() else {
            return Err(AdminError::new(
                1064,
                "42000",
                format!("KILL: '{id}' is not a SessionID (a number, see stats_mysql_processlist)"),
            ));
        };
        if !self.control.kill_session(id, query_only) {
            return Err(AdminError::new(
                1094,
                "HY000",
                format!("Unknown thread id: {id}"),
            ));
        }
        tracing::info!(
            id,
            query_only,
            "KILL by {} on the admin interface",
            session.user
        );
        Ok(Reply::ok())
    }

    /// Statements SQLite does not know but MySQL clients send: answered here.
    fn chatter(&self, session: &mut AdminSession, sql: &str) -> Result<Option<Reply>, AdminError> {
        let words: Vec<String> = sql
            .split(|c: char| c.is_whitespace())
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_lowercase())
            .collect();
        let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
        match w(0) {
            "set" => return set_chatter(&words).map(Some),
            "use" => {
                let schema = w(1).trim_matches('`').to_string();
                self.check_schema(&schema)?;
                session.schema = schema;
                return Ok(Some(Reply::ok()));
            }
            "show" => return self.show(session, &words, sql).map(Some),
            // Every admin session shares one SQLite connection: a transaction opened by one
            // would hold everyone's writes, block SAVE and stats refreshes, and outlive its
            // client. As in ProxySQL, they are acknowledged and do nothing (each statement
            // applies on its own).
            "begin" | "commit" | "rollback" | "end" | "savepoint" | "release" => {
                return Ok(Some(Reply::ok()))
            }
            "start" if w(1) == "transaction" => return Ok(Some(Reply::ok())),
            // ProxySQL's way to clear statistics without reading them.
            "truncate" => return self.truncate(session, &words).map(Some),
            // The schemas are weir's: a dropped or altered table would break LOAD, SAVE or the
            // next start (see Store::execute_dba, which refuses them whatever the spelling).
            "create" | "drop" | "alter" | "reindex" | "analyze" | "vacuum" | "attach"
            | "detach" => {
                if session.role == Role::Stats {
                    return Err(AdminError::read_only(&session.user));
                }
                return Err(AdminError::new(
                    1142,
                    "42000",
                    format!(
                        "{} is not allowed on the admin interface: its schemas and tables are \
                         fixed (change their rows with INSERT, UPDATE, DELETE or REPLACE)",
                        w(0).to_ascii_uppercase()
                    ),
                ));
            }
            "kill" => return self.kill(session, &words).map(Some),
            "describe" | "desc" => {
                let name = words.get(1).map(|n| n.replace('`', "")).unwrap_or_default();
                if name.is_empty() {
                    return Err(AdminError::new(1064, "42000", "DESCRIBE: which table?"));
                }
                return Ok(Some(Reply::Rows(self.store.lock().describe(&name)?)));
            }
            "checksum" | "flush" => {
                return Err(AdminError::new(
                    1235,
                    "42000",
                    format!(
                        "{} is not supported by weir's admin interface (supported commands: \
                         LOAD/SAVE, SET, SHOW, SELECT, INSERT, UPDATE, DELETE, REPLACE, \
                         PROXYSQL FLUSH QUERY CACHE, PROXYSQL PAUSE/RESUME/SHUTDOWN)",
                        w(0).to_ascii_uppercase()
                    ),
                ))
            }
            "select" if w(1) == "config" && matches!(w(2), "file" | "into") => {
                return Err(AdminError::new(
                    1235,
                    "42000",
                    "SELECT CONFIG FILE / SELECT CONFIG INTO OUTFILE are not supported: weir's \
                     configuration is in the tables (SAVE ... TO DISK keeps it in the datadir)",
                ))
            }
            "select" => {}
            _ => return Ok(None),
        }
        // SELECT of session functions and @@variables only, as clients send at connect.
        let body = sql[6..].trim();
        let body_l = body.to_ascii_lowercase();
        let (list, limit_ok) = match body_l.rfind(" limit ") {
            Some(i) => (&body[..i], body_l[i + 7..].trim().parse::<u64>().is_ok()),
            None => (body, true),
        };
        if !limit_ok || body_l.contains(" from ") {
            return Ok(None);
        }
        let mut columns = Vec::new();
        let mut values = Vec::new();
        for item in split_top_level(list) {
            let item = item.trim();
            let (expr, alias) = split_alias(item);
            let Some(value) = self.session_value(session, expr) else {
                return Ok(None);
            };
            columns.push(alias.unwrap_or(expr).to_string());
            values.push(value);
        }
        if columns.is_empty() {
            return Ok(None);
        }
        Ok(Some(Reply::Rows(ResultSet {
            columns,
            rows: vec![values],
        })))
    }

    /// The value of `@@name` or of a session function, `None` if `expr` is neither.
    fn session_value(&self, session: &AdminSession, expr: &str) -> Option<Option<String>> {
        let e = expr.to_ascii_lowercase();
        let rt = self.control.runtime();
        if let Some(name) = e.strip_prefix("@@") {
            let weir_var = name.contains("mysql-") || name.contains("admin-");
            if weir_var && session.role == Role::Stats {
                // Credentials live there; answer NULL rather than leak them.
                return Some(None);
            }
            let name = name
                .strip_prefix("session.")
                .or_else(|| name.strip_prefix("global."))
                .unwrap_or(name);
            if name.starts_with("mysql-") {
                return Some(rt.tables.mysql_variables.get(name).map(str::to_string));
            }
            if name.starts_with("admin-") {
                return Some(rt.tables.admin_variables.get(name).map(str::to_string));
            }
            return Some(match name {
                "version_comment" => Some("weir admin (ProxySQL compatible)".into()),
                "version" => Some(reported_version(&self.control.server_version())),
                "max_allowed_packet" => Some(rt.mysql.max_allowed_packet.to_string()),
                "auto_increment_increment" | "autocommit" => Some("1".into()),
                "character_set_client"
                | "character_set_connection"
                | "character_set_results"
                | "character_set_server"
                | "character_set_database" => Some("utf8mb4".into()),
                "collation_connection" | "collation_server" | "collation_database" => {
                    Some("utf8mb4_general_ci".into())
                }
                "sql_mode" => Some(String::new()),
                "lower_case_table_names" => Some("0".into()),
                "tx_isolation" | "transaction_isolation" => Some("REPEATABLE-READ".into()),
                "time_zone" | "system_time_zone" => Some("SYSTEM".into()),
                "wait_timeout" | "interactive_timeout" => Some("28800".into()),
                "net_write_timeout" => Some("60".into()),
                "license" => Some("Apache-2.0".into()),
                "hostname" => Some("weir".into()),
                _ => None,
            });
        }
        let compact: String = e.chars().filter(|c| !c.is_whitespace()).collect();
        Some(match compact.as_str() {
            "database()" | "schema()" => Some(session.schema.clone()),
            "user()" | "current_user()" | "session_user()" | "system_user()" => {
                Some(format!("{}@{}", session.user, session.host))
            }
            "version()" => Some(reported_version(&self.control.server_version())),
            "connection_id()" => Some(session.connection_id.to_string()),
            _ => return None,
        })
    }

    fn check_schema(&self, schema: &str) -> Result<(), AdminError> {
        let known = ["main", "disk", "stats", "monitor"];
        if schema.eq_ignore_ascii_case("disk") {
            // SQLite looks unqualified names up in main first whatever the session's schema:
            // `USE disk; UPDATE mysql_servers ...` would change main while the session says
            // disk. Refused rather than pretended.
            return Err(AdminError::new(
                1044,
                "42000",
                "USE disk is not supported: table names without a schema always mean main \
                 (memory), whatever the default schema; write disk.mysql_servers etc. to read \
                 or change the disk copy",
            ));
        }
        if known.contains(&schema) {
            Ok(())
        } else {
            Err(AdminError::new(
                1049,
                "42000",
                format!("Unknown database '{schema}' (the admin schemas are main, disk, stats and monitor)"),
            ))
        }
    }

    /// `TRUNCATE [TABLE] [stats.]stats_mysql_query_digest` (or `_errors`, their `_reset`
    /// forms, `stats_mysql_connection_pool_reset`): clears those counters, as reading the
    /// `_reset` table does, without returning them.
    fn truncate(&self, session: &AdminSession, words: &[String]) -> Result<Reply, AdminError> {
        if session.role == Role::Stats {
            return Err(AdminError::read_only(&session.user));
        }
        if self.control.runtime().admin.read_only {
            return Err(AdminError::locked());
        }
        let name = match words.get(1).map(String::as_str) {
            Some("table") => words.get(2),
            _ => words.get(1),
        }
        .map(|t| t.trim_matches('`'))
        .unwrap_or("");
        let table = name.strip_prefix("stats.").unwrap_or(name);
        let table = table.strip_suffix("_reset").unwrap_or(table);
        let mut reset = StatsReset::default();
        match table {
            "stats_mysql_query_digest" => reset.digests = true,
            "stats_mysql_errors" => reset.errors = true,
            "stats_mysql_connection_pool" if name.ends_with("_reset") => {
                reset.connection_pool = true
            }
            _ => {
                return Err(AdminError::new(
                    1142,
                    "42000",
                    format!(
                        "TRUNCATE of '{name}' is not allowed: only the statistics \
                         stats_mysql_query_digest, stats_mysql_errors (and their _reset \
                         tables) and stats_mysql_connection_pool_reset can be truncated; \
                         config tables are emptied with DELETE"
                    ),
                ))
            }
        }
        self.control.stats(reset);
        Ok(Reply::ok())
    }

    /// The default schema of a session that logged in asking for `database`.
    pub fn login_schema(&self, database: Option<&str>) -> Result<String, AdminError> {
        match database.filter(|d| !d.is_empty()) {
            None => Ok("main".into()),
            Some(d) => {
                self.check_schema(d)?;
                Ok(d.into())
            }
        }
    }

    /// SHOW statements SQLite lacks.
    fn show(
        &self,
        session: &AdminSession,
        words: &[String],
        sql: &str,
    ) -> Result<Reply, AdminError> {
        let w = |i: usize| words.get(i).map(String::as_str).unwrap_or("");
        let empty = |cols: &[&str]| {
            Reply::Rows(ResultSet {
                columns: cols.iter().map(|c| c.to_string()).collect(),
                rows: Vec::new(),
            })
        };
        let store = self.store.lock();
        match (w(1), w(2)) {
            ("databases", _) | ("schemas", _) => Ok(Reply::Rows(store.show_databases()?)),
            ("create", "table") => {
                // `main`.`t`, `main.t` and main.t alike: names here are plain identifiers.
                let name = sql
                    .split_whitespace()
                    .nth(3)
                    .map(|n| n.trim_end_matches(';').replace('`', ""))
                    .unwrap_or_default();
                if name.is_empty() {
                    return Err(AdminError::new(
                        1064,
                        "42000",
                        "SHOW CREATE TABLE: which table?",
                    ));
                }
                Ok(Reply::Rows(store.show_create_table(&name)?))
            }
            ("processlist", _) | ("full", "processlist") => {
                self.refresh_dynamic(&store, "stats_mysql_processlist")?;
                match store.execute(
                    "SELECT SessionID AS Id, user AS User, cli_host AS Host, db, command AS Command, \
                     time_ms / 1000 AS Time, hostgroup, srv_host, srv_port, info AS Info \
                     FROM stats.stats_mysql_processlist ORDER BY SessionID",
                )? {
                    SqlOutcome::Rows(rs) => Ok(Reply::Rows(rs)),
                    SqlOutcome::Affected { .. } => Ok(Reply::ok()),
                }
            }
            ("warnings", _) => Ok(Reply::Rows(ResultSet {
                columns: vec!["Level".into(), "Code".into(), "Message".into()],
                rows: session
                    .warnings
                    .iter()
                    .map(|m| vec![Some("Note".into()), Some("1105".into()), Some(m.clone())])
                    .collect(),
            })),
            ("errors", _) => Ok(empty(&["Level", "Code", "Message"])),
            ("variables", _) | ("session", "variables") | ("global", "variables") => {
                Ok(empty(&["Variable_name", "Value"]))
            }
            ("status", _) | ("session", "status") | ("global", "status") => {
                Ok(empty(&["Variable_name", "Value"]))
            }
            ("engines", _) => Ok(empty(&["Engine", "Support", "Comment"])),
            ("charset", _) | ("character", "set") => {
                Ok(empty(&["Charset", "Description", "Default collation", "Maxlen"]))
            }
            ("collation", _) => match store.execute(
                "SELECT Collation_name AS Collation, Charset, Id, `Default` AS `Default` FROM main.mysql_collations ORDER BY Id",
            )? {
                SqlOutcome::Rows(rs) => Ok(Reply::Rows(rs)),
                SqlOutcome::Affected { .. } => Ok(Reply::ok()),
            },
            _ => Err(AdminError::new(
                1064,
                "42000",
                format!(
                    "unsupported SHOW statement: '{sql}' (supported: SHOW DATABASES, SHOW [FULL] TABLES [FROM schema] [LIKE 'pattern'], \
                     SHOW CREATE TABLE t, SHOW [FULL] PROCESSLIST, SHOW MYSQL VARIABLES, SHOW ADMIN VARIABLES, SHOW MYSQL STATUS)"
                ),
            )),
        }
    }

    /// Fills the runtime_* and stats tables `sql` mentions from live state, so a read sees
    /// what runs now. The data path never touches SQLite: the snapshots come from counters.
    fn refresh_dynamic(&self, store: &Store, sql: &str) -> Result<(), AdminError> {
        // Table names only: a `_reset` table named in a comment or a string must not zero
        // the counters.
        let lower = table_text(sql);
        if lower.contains("runtime_") {
            let rt = self.control.runtime();
            let mut tables = rt.tables.clone();
            stats_tables::live_statuses(&mut tables, &self.control.stats(StatsReset::default()));
            for m in Module::ALL {
                store.write_module(Target::Runtime, m, &tables)?;
            }
        }
        if !lower.contains("stats_") && !lower.contains("_log") {
            return Ok(());
        }
        let reset = StatsReset {
            connection_pool: lower.contains("stats_mysql_connection_pool_reset"),
            errors: lower.contains("stats_mysql_errors_reset"),
            digests: lower.contains("stats_mysql_query_digest_reset"),
        };
        let snap = self.control.stats(reset);
        stats_tables::fill(store, &lower, &snap)?;
        Ok(())
    }
}

/// Opens the store in `datadir` and decides what the proxy starts with: on first start (empty
/// disk) or with `--initial` the configuration file fills memory and disk; otherwise disk is
/// the source of truth and is copied into memory. Returns the store and the memory tables.
///
/// `check_seed` vets the file's tables before they are written: what it refuses (e.g. a rule
/// whose regular expression does not compile) never reaches the disk, where it would stop
/// every later start.
pub fn bootstrap(
    datadir: &std::path::Path,
    file: &ConfigTables,
    initial: bool,
    check_seed: &dyn Fn(&ConfigTables) -> Result<(), String>,
) -> Result<(Store, ConfigTables), AdminError> {
    let store = Store::open(datadir).map_err(|e| AdminError::general(e.to_string()))?;
    let fresh = store.disk_is_empty()?;
    if fresh || initial {
        check_seed(file).map_err(|e| {
            AdminError::general(format!(
                "the configuration file is not usable, nothing was written to {}: {e}",
                datadir.join("weir.db").display()
            ))
        })?;
        store.write_everywhere(file).map_err(|e| {
            AdminError::general(format!(
                "the configuration file could not be written to {}, which is unchanged: {e}",
                datadir.join("weir.db").display()
            ))
        })?;
        tracing::info!(
            fresh,
            initial,
            "configuration file loaded into memory and disk"
        );
    } else {
        for m in Module::ALL {
            copy_sql(&store, m, "disk", "main")?;
        }
        // Variables added by a newer weir, or rows a DBA deleted, start at their default
        // and get their row back in memory and on disk.
        let defaults = ConfigTables::default();
        for m in [Module::MysqlVariables, Module::AdminVariables] {
            store.add_missing_variables(Target::Memory, m, &defaults)?;
            store.add_missing_variables(Target::Disk, m, &defaults)?;
        }
        tracing::info!("configuration loaded from the database on disk");
    }
    let tables = store.read_tables(Target::Memory).map_err(|e| {
        AdminError::general(format!(
            "the configuration in {} is not usable: {e}",
            datadir.join("weir.db").display()
        ))
    })?;
    Ok((store, tables))
}

/// The version a statement reads (`@@version`, `VERSION()`): the announced one without the
/// `5.5.5-` a MariaDB handshake puts in front for old clients, as MariaDB itself answers.
fn reported_version(announced: &str) -> String {
    match announced.strip_prefix("5.5.5-") {
        Some(rest) if rest.to_ascii_lowercase().contains("mariadb") => rest.to_string(),
        _ => announced.to_string(),
    }
}

/// Notes for restart-only variables whose loaded value differs from the one in force since
/// the process started.
fn restart_notes(old: &Runtime, new: &Runtime, module: Module) -> Vec<String> {
    let (a, b) = match module {
        Module::MysqlVariables => (&old.tables.mysql_variables, &new.tables.mysql_variables),
        Module::AdminVariables => (&old.tables.admin_variables, &new.tables.admin_variables),
        _ => return Vec::new(),
    };
    a.iter()
        .zip(b.iter())
        .filter(|((_, va), (_, vb))| va != vb)
        .filter_map(|((name, va), (_, vb))| {
            let spec = b.spec(name)?;
            (!spec.live).then(|| {
                format!(
                    "{}{name} is '{va}' until the next restart (loaded: '{vb}')",
                    b.prefix()
                )
            })
        })
        .collect()
}

/// A `SET` that is not `SET mysql-...`/`SET admin-...`: client chatter (`SET NAMES`,
/// `SET autocommit=1`, session variables) is acknowledged and ignored; what looks like a
/// mistyped weir variable is refused, so a script's typo does not silently do nothing.
fn set_chatter(words: &[String]) -> Result<Reply, AdminError> {
    let mut name = words.get(1).map(String::as_str).unwrap_or("");
    if matches!(name, "global" | "session" | "local" | "persist") {
        name = words.get(2).map(String::as_str).unwrap_or("");
    }
    let name = name.trim_start_matches("@@");
    let name = name.split('=').next().unwrap_or(name);
    for prefix in ["mysql", "admin"] {
        let rest = name
            .strip_prefix(prefix)
            .and_then(|r| r.strip_prefix(['-', '_']));
        if let Some(rest) = rest {
            let bare = rest.split('.').next_back().unwrap_or(rest);
            return Err(AdminError::new(
                1193,
                "HY000",
                format!(
                    "Unknown system variable '{name}': weir variables are set with SET {prefix}-{bare} = value (no GLOBAL/SESSION, a '-' after the prefix)"
                ),
            ));
        }
    }
    Ok(Reply::ok())
}

/// Copies `module`'s rows between the `main` and `disk` schemas in one transaction.
fn copy_sql(store: &Store, module: Module, from: &str, to: &str) -> Result<(), AdminError> {
    let filter = variable_prefix(module)
        .map(|p| format!(" WHERE variable_name LIKE '{p}%'"))
        .unwrap_or_default();
    store.execute("BEGIN")?;
    let result = (|| -> Result<(), StoreError> {
        for t in module_tables(module) {
            store.execute(&format!("DELETE FROM {to}.{t}{filter}"))?;
            store.execute(&format!(
                "INSERT INTO {to}.{t} SELECT * FROM {from}.{t}{filter}"
            ))?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => {
            store.execute("COMMIT")?;
            Ok(())
        }
        Err(e) => {
            let _ = store.execute("ROLLBACK");
            Err(e.into())
        }
    }
}

/// Rewrites a runtime error path such as `mysql_servers[2].port` into the row's key, which is
/// what a DBA sees in the table: `mysql_servers (hostgroup_id=1, hostname='h', port=0).port`.
fn describe_error(tables: &ConfigTables, path: &str, message: &str) -> String {
    let row_key = |table: &str, i: usize| -> Option<String> {
        match table {
            "mysql_servers" => tables.mysql_servers.get(i).map(|s| {
                format!(
                    "hostgroup_id={}, hostname='{}', port={}",
                    s.hostgroup_id, s.hostname, s.port
                )
            }),
            "mysql_users" => tables.mysql_users.get(i).map(|u| {
                format!(
                    "username='{}', backend={}, frontend={}",
                    u.username, u.backend as u8, u.frontend as u8
                )
            }),
            "mysql_query_rules" => tables
                .mysql_query_rules
                .get(i)
                .map(|r| format!("rule_id={}", r.rule_id)),
            "mysql_replication_hostgroups" => tables
                .mysql_replication_hostgroups
                .get(i)
                .map(|r| format!("writer_hostgroup={}", r.writer_hostgroup)),
            _ => None,
        }
    };
    let described = path.split_once('[').and_then(|(table, rest)| {
        let (idx, field) = rest.split_once(']')?;
        let key = row_key(table, idx.parse().ok()?)?;
        let column = field.trim_start_matches('.');
        Some(if column.is_empty() {
            format!("{table} row ({key})")
        } else {
            format!("{table} row ({key}), column {column}")
        })
    });
    let location = match described {
        Some(d) => d,
        None => path
            .replace("mysql_variables.", "global_variables mysql-")
            .replace("admin_variables.", "global_variables admin-"),
    };
    if location.is_empty() {
        message.to_string()
    } else {
        format!("{location}: {message}")
    }
}

/// Whether a stats user may run `sql`: reads only.
fn is_read_statement(sql: &str) -> bool {
    let first = sql
        .split(|c: char| c.is_whitespace() || c == '(')
        .find(|w| !w.is_empty())
        .unwrap_or("");
    ["select", "show", "explain", "describe", "desc"]
        .iter()
        .any(|k| first.eq_ignore_ascii_case(k))
}

/// `sql` lower-cased, with comments and single-quoted strings blanked out: what can name a
/// table. Double-quoted and backquoted text stays (SQLite takes `"t"` as an identifier).
fn table_text(sql: &str) -> String {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let skip_to = if rest.starts_with(b"/*") {
            sql[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2)
        } else if rest.starts_with(b"--") || rest[0] == b'#' {
            sql[i..].find('\n').map_or(b.len(), |e| i + e)
        } else if rest[0] == b'\'' {
            // '' is an escaped quote inside; a backslash is a plain byte (SQLite's rules).
            let mut j = i + 1;
            while j < b.len() {
                match b[j] {
                    b'\'' if b.get(j + 1) == Some(&b'\'') => j += 2,
                    b'\'' => break,
                    _ => j += 1,
                }
            }
            (j + 1).min(b.len())
        } else {
            let c = sql[i..].chars().next().unwrap_or(' ');
            out.push(c.to_ascii_lowercase());
            i += c.len_utf8();
            continue;
        };
        out.push(' ');
        i = skip_to;
    }
    out
}

/// Strips whitespace, leading comments (drivers prefix their own statements with one:
/// Connector/J's `/* mysql-connector-java-... */SELECT @@session...`) and trailing `;`
/// (mysql CLI scripts end statements with one). An unterminated comment is left for the parser
/// to refuse.
fn trim_statement(sql: &str) -> &str {
    let mut s = sql.trim();
    loop {
        if let Some(rest) = s.strip_prefix("/*") {
            match rest.find("*/") {
                Some(end) => s = rest[end + 2..].trim_start(),
                None => break,
            }
        } else if s.starts_with('#')
            || s.strip_prefix("--")
                .is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace))
        {
            s = s.find('\n').map_or("", |i| s[i + 1..].trim_start());
        } else {
            break;
        }
    }
    while let Some(rest) = s.strip_suffix(';') {
        s = rest.trim_end();
    }
    s
}

/// SQL `LIKE` as SQLite and MySQL's default collations apply it: `%` any run, `_` one
/// character, `\\` escapes, ASCII letters compared without case.
fn like_matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Classic two-pointer match with backtracking to the last `%`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        let (lit, width) = match p.get(pi) {
            Some('\\') if pi + 1 < p.len() => (Some(p[pi + 1]), 2),
            Some('%') => {
                star = Some((pi, ti));
                pi += 1;
                continue;
            }
            Some('_') => (None, 1),
            Some(&c) => (Some(c), 1),
            None => (Some('\0'), 0),
        };
        let matched = width > 0 && lit.is_none_or(|c| c.eq_ignore_ascii_case(&t[ti]));
        if matched {
            pi += width;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '%')
}

/// `sql` with MySQL's versioned comments (`/*!40003 GLOBAL */`, `/*M!100100 ... */`) replaced
/// by their content, as a server runs them (`mariadb-admin variables` sends
/// `show /*!40003 GLOBAL */ variables`); SQLite would skip them as comments. Quoted text is
/// left alone.
fn unwrap_versioned_comments(sql: &str) -> std::borrow::Cow<'_, str> {
    if !sql.contains("/*!") && !sql.contains("/*M!") {
        return sql.into();
    }
    let mut out = String::with_capacity(sql.len());
    let mut rest = sql;
    let mut quote: Option<char> = None;
    while let Some(c) = rest.chars().next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
        } else if c == '\'' || c == '"' || c == '`' {
            quote = Some(c);
        } else if let Some(body) = rest
            .strip_prefix("/*!")
            .or_else(|| rest.strip_prefix("/*M!"))
        {
            if let Some(end) = body.find("*/") {
                let inner = body[..end].trim_start_matches(|d: char| d.is_ascii_digit());
                out.push(' ');
                out.push_str(inner);
                out.push(' ');
                rest = &body[end + 2..];
                continue;
            }
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.into()
}

fn strip_prefix<'a>(name: &'a str, prefix: &str) -> &'a str {
    name.strip_prefix(prefix).unwrap_or(name)
}

/// A SQL string literal.
pub(crate) fn sql_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Splits a select list on commas outside parentheses and quotes.
fn split_top_level(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut quote, mut start) = (0i32, None::<char>, 0usize);
    for (i, c) in list.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(&list[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out
}

/// `expr [AS] alias` → (expr, alias).
fn split_alias(item: &str) -> (&str, Option<&str>) {
    let lower = item.to_ascii_lowercase();
    if let Some(i) = lower.rfind(" as ") {
        let alias = item[i + 4..]
            .trim()
            .trim_matches(|c| c == '`' || c == '\'' || c == '"');
        return (item[..i].trim(), Some(alias));
    }
    match item.rsplit_once(char::is_whitespace) {
        Some((expr, alias)) if expr.trim_end().ends_with(')') || expr.starts_with("@@") => {
            (expr.trim(), Some(alias.trim_matches('`')))
        }
        _ => (item, None),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn statements_read_the_version_without_mariadbs_handshake_prefix() {
        assert_eq!(
            reported_version("5.5.5-10.11.19-MariaDB-0+deb12u1-log"),
            "10.11.19-MariaDB-0+deb12u1-log"
        );
        assert_eq!(reported_version("8.0.36"), "8.0.36");
        assert_eq!(reported_version("5.5.5-custom"), "5.5.5-custom");
    }

    #[test]
    fn versioned_comments_are_run() {
        assert_eq!(
            unwrap_versioned_comments("show /*!40003 GLOBAL */ variables")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["show", "GLOBAL", "variables"]
        );
        assert_eq!(
            unwrap_versioned_comments("SELECT /*M!100100 1 + */ 2")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["SELECT", "1", "+", "2"]
        );
        assert_eq!(
            unwrap_versioned_comments("SELECT '/*!1 x */' /* plain */"),
            "SELECT '/*!1 x */' /* plain */"
        );
        assert_eq!(unwrap_versioned_comments("SELECT /*!1 x"), "SELECT /*!1 x");
    }

    #[test]
    fn like_patterns() {
        for (p, t, want) in [
            ("Query_Cache%", "Query_Cache_count_GET", true),
            ("query_cache%", "Query_Cache_count_GET", true),
            ("%GET", "Query_Cache_count_GET", true),
            ("%GET", "Query_Cache_count_GET_OK", false),
            ("%_GET_%", "Query_Cache_count_GET_OK", true),
            (
                "Client_Connections_connected",
                "Client_Connections_connected",
                true,
            ),
            ("Client_Connections_", "Client_Connections_connected", false),
            ("a\\_b", "a_b", true),
            ("a\\_b", "axb", false),
            ("%%a%", "bab", true),
            ("", "", true),
            ("", "x", false),
            ("%", "", true),
        ] {
            assert_eq!(like_matches(p, t), want, "{p} LIKE {t}");
        }
    }

    #[test]
    fn trims_statements() {
        assert_eq!(trim_statement("  SELECT 1 ;; "), "SELECT 1");
        assert_eq!(trim_statement(";"), "");
        assert_eq!(
            trim_statement("/* mysql-connector-java-9.5.0 */SELECT @@version"),
            "SELECT @@version"
        );
        assert_eq!(
            trim_statement("-- c\n# d\n /* e */ SHOW DATABASES;"),
            "SHOW DATABASES"
        );
        assert_eq!(trim_statement("-- only a comment"), "");
        assert_eq!(trim_statement("--x"), "--x");
        assert_eq!(trim_statement("/* unterminated"), "/* unterminated");
    }

    #[test]
    fn splits_select_lists() {
        assert_eq!(
            split_top_level("@@a, f(1,2), 'x,y'"),
            vec!["@@a", " f(1,2)", " 'x,y'"]
        );
        assert_eq!(
            split_alias("@@version_comment"),
            ("@@version_comment", None)
        );
        assert_eq!(split_alias("DATABASE() AS db"), ("DATABASE()", Some("db")));
        assert_eq!(split_alias("@@port p"), ("@@port", Some("p")));
    }

    #[test]
    fn table_text_drops_comments_and_strings() {
        assert_eq!(
            table_text("SELECT * FROM Stats_MySQL_Query_Digest_Reset"),
            "select * from stats_mysql_query_digest_reset"
        );
        let t = table_text(
            "SELECT 'see stats_mysql_errors_reset', 'it''s stats_x_reset' /* stats_y_reset */ \
             FROM stats_mysql_errors -- stats_z_reset\n# stats_w_reset\nWHERE \"é\" = 1",
        );
        assert!(!t.contains("_reset"), "{t}");
        assert!(t.contains("from stats_mysql_errors"), "{t}");
        assert!(t.contains("where \"é\" = 1"), "{t}");
        // Unterminated string and comment: the rest is dropped, nothing panics.
        assert_eq!(table_text("SELECT 'abc"), "select  ");
        assert_eq!(table_text("SELECT 1 /* x"), "select 1  ");
    }

    #[test]
    fn read_statements() {
        assert!(is_read_statement("select 1"));
        assert!(is_read_statement("SHOW TABLES"));
        assert!(!is_read_statement("DELETE FROM x"));
        assert!(!is_read_statement("with x as (select 1) delete from y"));
    }

    #[test]
    fn error_paths_name_rows() {
        let mut t = ConfigTables::default();
        t.mysql_servers
            .push(weir_config::ServerRow::new(1, "db1", 0));
        assert_eq!(
            describe_error(&t, "mysql_servers[0].port", "must be 1..=65535"),
            "mysql_servers row (hostgroup_id=1, hostname='db1', port=0), column port: must be 1..=65535"
        );
        assert_eq!(
            describe_error(&t, "mysql_variables.threads", "bad"),
            "global_variables mysql-threads: bad"
        );
    }
}
