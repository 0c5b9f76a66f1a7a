//! The compiled, immutable snapshot sessions read: validated tables, typed variables and user
//! maps. [`Runtime::build`] checks the whole set (row constraints as ProxySQL's CHECKs, keys,
//! cross-table references) and reports every problem with its row path.

mod checks;
#[cfg(test)]
mod tests;

use crate::error::{ConfigError, ConfigErrors};
use crate::rows::{
    ConfigTables, Password, QueryRuleRow, ReplicationHostgroupRow, ServerRow, UserRow,
};
use crate::typed::{AdminVariables, MysqlVariables};
use std::collections::HashMap;
use std::sync::Arc;

/// A user as sessions see it; only active users reach the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// Login name.
    pub username: String,
    /// Password or native hash.
    pub password: Password,
    /// Require TLS from the client.
    pub use_ssl: bool,
    /// Hostgroup for queries no rule routes.
    pub default_hostgroup: u32,
    /// Schema selected at login when the client names none.
    pub default_schema: Option<String>,
    /// Forbid the client from changing schema.
    pub schema_locked: bool,
    /// Keep a transaction on one hostgroup.
    pub transaction_persistent: bool,
    /// Relay bytes only, no query processing.
    pub fast_forward: bool,
    /// Usable to log in to backends.
    pub backend: bool,
    /// Usable to authenticate clients.
    pub frontend: bool,
    /// Client connection limit for this user.
    pub max_connections: u32,
    /// JSON attributes, '' = none.
    pub attributes: String,
    /// Free text.
    pub comment: String,
}

impl From<&UserRow> for User {
    fn from(r: &UserRow) -> Self {
        User {
            username: r.username.clone(),
            password: r.password.clone(),
            use_ssl: r.use_ssl,
            default_hostgroup: r.default_hostgroup,
            default_schema: r.default_schema.clone(),
            schema_locked: r.schema_locked,
            transaction_persistent: r.transaction_persistent,
            fast_forward: r.fast_forward,
            backend: r.backend,
            frontend: r.frontend,
            max_connections: r.max_connections,
            attributes: r.attributes.clone(),
            comment: r.comment.clone(),
        }
    }
}

/// The configuration in force, built once per `LOAD ... TO RUNTIME` and shared read-only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Runtime {
    /// Typed `mysql-*` variables.
    pub mysql: MysqlVariables,
    /// Typed `admin-*` variables.
    pub admin: AdminVariables,
    /// Users that may authenticate clients (active and frontend), by username.
    pub frontend_users: HashMap<String, Arc<User>>,
    /// Users that may log in to backends (active and backend), by username.
    pub backend_users: HashMap<String, Arc<User>>,
    /// Every configured server, whatever its status.
    pub servers: Vec<ServerRow>,
    /// Writer/reader hostgroup pairs.
    pub replication_hostgroups: Vec<ReplicationHostgroupRow>,
    /// Active rules, sorted by rule_id.
    pub query_rules: Vec<QueryRuleRow>,
    /// The tables this snapshot was built from (the `runtime_*` tables show them).
    pub tables: ConfigTables,
    /// Things that are allowed but probably not meant, for the log and `check-config`.
    pub warnings: Vec<String>,
}

impl Runtime {
    /// Validates `tables` and compiles them; every problem is reported, with row paths such
    /// as `mysql_servers[2].port` (indexes into the table vectors).
    pub fn build(tables: &ConfigTables) -> Result<Runtime, ConfigErrors> {
        build_at(tables, &RowOrigins::default())
    }
}

/// Maps a row's position in [`ConfigTables`] to its index in the source (the file), so that
/// errors point at the file's rows even when rows that failed to parse were left out.
#[derive(Debug, Clone, Default)]
pub(crate) struct RowOrigins {
    pub servers: Vec<usize>,
    pub users: Vec<usize>,
    pub rules: Vec<usize>,
    pub replication: Vec<usize>,
}

/// Index `i` of a table, mapped through `origins` (identity when unmapped).
pub(crate) fn origin(origins: &[usize], i: usize) -> usize {
    origins.get(i).copied().unwrap_or(i)
}

pub(crate) fn build_at(
    tables: &ConfigTables,
    origins: &RowOrigins,
) -> Result<Runtime, ConfigErrors> {
    let mut errors: Vec<ConfigError> = Vec::new();
    let mysql = MysqlVariables::from_variables(&tables.mysql_variables)
        .map_err(|e| errors.extend(e))
        .ok();
    let admin = AdminVariables::from_variables(&tables.admin_variables)
        .map_err(|e| errors.extend(e))
        .ok();
    checks::servers(&tables.mysql_servers, &origins.servers, &mut errors);
    checks::users(&tables.mysql_users, &origins.users, &mut errors);
    checks::query_rules(&tables.mysql_query_rules, &origins.rules, &mut errors);
    checks::replication_hostgroups(
        &tables.mysql_replication_hostgroups,
        &origins.replication,
        &mut errors,
    );
    let (Some(mysql), Some(admin), true) = (mysql, admin, errors.is_empty()) else {
        return Err(ConfigErrors(errors));
    };
    let warnings = checks::warnings(tables, &admin);

    let mut frontend_users = HashMap::new();
    let mut backend_users = HashMap::new();
    for row in tables.mysql_users.iter().filter(|u| u.active) {
        let user = Arc::new(User::from(row));
        if row.frontend {
            frontend_users.insert(row.username.clone(), user.clone());
        }
        if row.backend {
            backend_users.insert(row.username.clone(), user);
        }
    }
    let mut query_rules: Vec<QueryRuleRow> = tables
        .mysql_query_rules
        .iter()
        .filter(|r| r.active)
        .cloned()
        .collect();
    query_rules.sort_by_key(|r| r.rule_id);

    Ok(Runtime {
        mysql,
        admin,
        frontend_users,
        backend_users,
        servers: tables.mysql_servers.clone(),
        replication_hostgroups: tables.mysql_replication_hostgroups.clone(),
        query_rules,
        tables: tables.clone(),
        warnings,
    })
}
