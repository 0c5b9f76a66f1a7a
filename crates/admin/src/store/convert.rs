//! Conversion between the config tables in SQLite and the typed rows of `weir-config`:
//! [`read_tables`] checks every value against its Rust type and names the table, row and column
//! of any that does not fit; [`write_module`] replaces one module's tables in one transaction.

use super::error::StoreError;
use super::Target;
use crate::Module;
use rusqlite::types::Value;
use rusqlite::Connection;
use std::str::FromStr;
use weir_config::{
    ConfigTables, Password, QueryRuleRow, ReplicationHostgroupRow, ServerRow, ServerStatus,
    UserRow, Variables,
};

/// The columns of one config table, in table order, and its primary key (also the read order).
struct TableSpec {
    name: &'static str,
    columns: &'static [&'static str],
    key: &'static [&'static str],
}

const SERVERS: TableSpec = TableSpec {
    name: "mysql_servers",
    columns: &[
        "hostgroup_id",
        "hostname",
        "port",
        "gtid_port",
        "status",
        "weight",
        "compression",
        "max_connections",
        "max_replication_lag",
        "use_ssl",
        "max_latency_ms",
        "comment",
    ],
    key: &["hostgroup_id", "hostname", "port"],
};

const USERS: TableSpec = TableSpec {
    name: "mysql_users",
    columns: &[
        "username",
        "password",
        "active",
        "use_ssl",
        "default_hostgroup",
        "default_schema",
        "schema_locked",
        "transaction_persistent",
        "fast_forward",
        "backend",
        "frontend",
        "max_connections",
        "attributes",
        "comment",
    ],
    key: &["username", "backend"],
};

const RULES: TableSpec = TableSpec {
    name: "mysql_query_rules",
    columns: &[
        "rule_id",
        "active",
        "username",
        "schemaname",
        "flagIN",
        "client_addr",
        "proxy_addr",
        "proxy_port",
        "digest",
        "match_digest",
        "match_pattern",
        "negate_match_pattern",
        "re_modifiers",
        "flagOUT",
        "replace_pattern",
        "destination_hostgroup",
        "cache_ttl",
        "cache_empty_result",
        "cache_timeout",
        "reconnect",
        "timeout",
        "retries",
        "delay",
        "next_query_flagIN",
        "mirror_flagOUT",
        "mirror_hostgroup",
        "error_msg",
        "OK_msg",
        "sticky_conn",
        "multiplex",
        "gtid_from_hostgroup",
        "log",
        "apply",
        "attributes",
        "comment",
    ],
    key: &["rule_id"],
};

const REPLICATION: TableSpec = TableSpec {
    name: "mysql_replication_hostgroups",
    columns: &[
        "writer_hostgroup",
        "reader_hostgroup",
        "check_type",
        "comment",
    ],
    key: &["writer_hostgroup"],
};

const VARIABLES: TableSpec = TableSpec {
    name: "global_variables",
    columns: &["variable_name", "variable_value"],
    key: &["variable_name"],
};

/// The schema-qualified name of config table `base` in `target`.
fn qualified(target: Target, base: &str) -> String {
    match target {
        Target::Memory => format!("main.{base}"),
        Target::Disk => format!("disk.{base}"),
        Target::Runtime => format!("main.runtime_{base}"),
    }
}

/// A value as a DBA would type it, for naming rows in messages.
fn literal(v: &Value) -> String {
    match v {
        Value::Null => "NULL".to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Real(r) => r.to_string(),
        Value::Text(s) => format!("'{}'", s.replace('\'', "''")),
        Value::Blob(b) => format!("<{} bytes of binary data>", b.len()),
    }
}

/// `col=value, ...` for the key columns of a row given in table column order.
fn describe_key(spec: &TableSpec, values: &[Value]) -> String {
    spec.key
        .iter()
        .map(|k| {
            let v = spec
                .columns
                .iter()
                .position(|c| c == k)
                .and_then(|i| values.get(i))
                .map_or_else(|| "?".to_string(), literal);
            format!("{k}={v}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// An integer type a column converts to, with its range for messages.
trait IntColumn: TryFrom<i64> {
    const RANGE: &'static str;
}

impl IntColumn for u8 {
    const RANGE: &'static str = "0..=255";
}
impl IntColumn for u16 {
    const RANGE: &'static str = "0..=65535";
}
impl IntColumn for u32 {
    const RANGE: &'static str = "0..=4294967295";
}
impl IntColumn for i32 {
    const RANGE: &'static str = "-2147483648..=2147483647";
}

/// One stored row being converted; every accessor names the column on failure.
struct Fields<'a> {
    table: &'a str,
    spec: &'a TableSpec,
    values: Vec<Value>,
}

impl Fields<'_> {
    fn error(&self, column: &str, message: impl Into<String>) -> StoreError {
        StoreError::BadValue {
            table: self.table.to_string(),
            key: describe_key(self.spec, &self.values),
            column: column.to_string(),
            message: message.into(),
        }
    }

    fn value(&self, column: &str) -> Result<&Value, StoreError> {
        self.spec
            .columns
            .iter()
            .position(|c| *c == column)
            .and_then(|i| self.values.get(i))
            .ok_or_else(|| self.error(column, "column missing from the query (internal error)"))
    }

    fn opt_text(&self, column: &str) -> Result<Option<String>, StoreError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Text(s) => Ok(Some(s.clone())),
            // A number typed into a text column: its decimal form is what the DBA meant.
            Value::Integer(i) => Ok(Some(i.to_string())),
            Value::Real(r) => Ok(Some(r.to_string())),
            Value::Blob(b) => String::from_utf8(b.clone())
                .map(Some)
                .map_err(|_| self.error(column, "binary data where text was expected")),
        }
    }

    fn text(&self, column: &str) -> Result<String, StoreError> {
        self.opt_text(column)?
            .ok_or_else(|| self.error(column, "NULL is not allowed here"))
    }

    fn opt_int<T: IntColumn>(&self, column: &str) -> Result<Option<T>, StoreError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Integer(i) => T::try_from(*i).map(Some).map_err(|_| {
                self.error(
                    column,
                    format!("value {i} out of range: expected {}", T::RANGE),
                )
            }),
            other => Err(self.error(
                column,
                format!("expected an integer, found {}", literal(other)),
            )),
        }
    }

    fn int<T: IntColumn>(&self, column: &str) -> Result<T, StoreError> {
        self.opt_int(column)?
            .ok_or_else(|| self.error(column, "NULL is not allowed here"))
    }

    fn opt_bool(&self, column: &str) -> Result<Option<bool>, StoreError> {
        match self.value(column)? {
            Value::Null => Ok(None),
            Value::Integer(0) => Ok(Some(false)),
            Value::Integer(1) => Ok(Some(true)),
            other => Err(self.error(column, format!("expected 0 or 1, found {}", literal(other)))),
        }
    }

    fn boolean(&self, column: &str) -> Result<bool, StoreError> {
        self.opt_bool(column)?
            .ok_or_else(|| self.error(column, "NULL is not allowed here"))
    }
}

/// Every row of `spec` in `table`, in primary-key order, as raw values in column order.
fn select_all<'a>(
    conn: &Connection,
    table: &'a str,
    spec: &'a TableSpec,
) -> Result<Vec<Fields<'a>>, StoreError> {
    let sql = format!(
        "SELECT {} FROM {table} ORDER BY {}",
        spec.columns.join(", "),
        spec.key.join(", ")
    );
    let context = || format!("reading {table}");
    let mut stmt = conn.prepare(&sql).map_err(StoreError::sqlite(context()))?;
    let width = spec.columns.len();
    let rows = stmt
        .query_map([], |row| {
            (0..width)
                .map(|i| row.get::<_, Value>(i))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(StoreError::sqlite(context()))?;
    rows.map(|values| {
        values
            .map(|values| Fields {
                table,
                spec,
                values,
            })
            .map_err(StoreError::sqlite(context()))
    })
    .collect()
}

fn server(f: &Fields<'_>) -> Result<ServerRow, StoreError> {
    let status = f.text("status")?;
    Ok(ServerRow {
        hostgroup_id: f.int("hostgroup_id")?,
        hostname: f.text("hostname")?,
        port: f.int("port")?,
        gtid_port: f.int("gtid_port")?,
        status: ServerStatus::from_str(&status).map_err(|e| f.error("status", e.to_string()))?,
        weight: f.int("weight")?,
        compression: f.int("compression")?,
        max_connections: f.int("max_connections")?,
        max_replication_lag: f.int("max_replication_lag")?,
        use_ssl: f.boolean("use_ssl")?,
        max_latency_ms: f.int("max_latency_ms")?,
        comment: f.text("comment")?,
    })
}

fn user(f: &Fields<'_>) -> Result<UserRow, StoreError> {
    Ok(UserRow {
        username: f.text("username")?,
        // ProxySQL lets password be NULL and treats it as empty: do the same.
        password: f
            .opt_text("password")?
            .map_or_else(Password::default, |p| Password::parse(&p)),
        active: f.boolean("active")?,
        use_ssl: f.boolean("use_ssl")?,
        default_hostgroup: f.int("default_hostgroup")?,
        default_schema: f.opt_text("default_schema")?,
        schema_locked: f.boolean("schema_locked")?,
        transaction_persistent: f.boolean("transaction_persistent")?,
        fast_forward: f.boolean("fast_forward")?,
        backend: f.boolean("backend")?,
        frontend: f.boolean("frontend")?,
        max_connections: f.int("max_connections")?,
        attributes: f.text("attributes")?,
        comment: f.text("comment")?,
    })
}

fn rule(f: &Fields<'_>) -> Result<QueryRuleRow, StoreError> {
    Ok(QueryRuleRow {
        rule_id: f.int("rule_id")?,
        active: f.boolean("active")?,
        username: f.opt_text("username")?,
        schemaname: f.opt_text("schemaname")?,
        flag_in: f.int("flagIN")?,
        client_addr: f.opt_text("client_addr")?,
        proxy_addr: f.opt_text("proxy_addr")?,
        proxy_port: f.opt_int("proxy_port")?,
        digest: f.opt_text("digest")?,
        match_digest: f.opt_text("match_digest")?,
        match_pattern: f.opt_text("match_pattern")?,
        negate_match_pattern: f.boolean("negate_match_pattern")?,
        re_modifiers: f.text("re_modifiers")?,
        flag_out: f.opt_int("flagOUT")?,
        replace_pattern: f.opt_text("replace_pattern")?,
        destination_hostgroup: f.opt_int("destination_hostgroup")?,
        cache_ttl: f.opt_int("cache_ttl")?,
        cache_empty_result: f.opt_bool("cache_empty_result")?,
        cache_timeout: f.opt_int("cache_timeout")?,
        reconnect: f.opt_bool("reconnect")?,
        timeout: f.opt_int("timeout")?,
        retries: f.opt_int("retries")?,
        delay: f.opt_int("delay")?,
        next_query_flag_in: f.opt_int("next_query_flagIN")?,
        mirror_flag_out: f.opt_int("mirror_flagOUT")?,
        mirror_hostgroup: f.opt_int("mirror_hostgroup")?,
        error_msg: f.opt_text("error_msg")?,
        ok_msg: f.opt_text("OK_msg")?,
        sticky_conn: f.opt_bool("sticky_conn")?,
        multiplex: f.opt_int("multiplex")?,
        gtid_from_hostgroup: f.opt_int("gtid_from_hostgroup")?,
        log: f.opt_bool("log")?,
        apply: f.boolean("apply")?,
        attributes: f.text("attributes")?,
        comment: f.opt_text("comment")?,
    })
}

fn replication(f: &Fields<'_>) -> Result<ReplicationHostgroupRow, StoreError> {
    Ok(ReplicationHostgroupRow {
        writer_hostgroup: f.int("writer_hostgroup")?,
        reader_hostgroup: f.int("reader_hostgroup")?,
        check_type: f.text("check_type")?,
        comment: f.text("comment")?,
    })
}

/// Whether `name` starts with `prefix`, ignoring ASCII case as [`Variables`] does.
fn has_prefix(name: &str, prefix: &str) -> bool {
    name.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// Applies one `global_variables` row to the variables of its prefix. Names are matched
/// ignoring case; `seen` (the lower-case names of the rows read before) refuses a second row
/// for one variable, which would otherwise be shown but silently not used.
fn apply_variable(
    tables: &mut ConfigTables,
    table: &str,
    f: &Fields<'_>,
    seen: &mut std::collections::HashSet<String>,
) -> Result<(), StoreError> {
    let name = f.text("variable_name")?;
    let value = f.text("variable_value")?;
    if !seen.insert(name.to_ascii_lowercase()) {
        return Err(StoreError::InvalidVariable {
            table: table.to_string(),
            message: "another row names the same variable in other letter case: keep one"
                .to_string(),
            name,
        });
    }
    let vars = if has_prefix(&name, tables.mysql_variables.prefix()) {
        &mut tables.mysql_variables
    } else if has_prefix(&name, tables.admin_variables.prefix()) {
        &mut tables.admin_variables
    } else {
        return Err(StoreError::UnknownVariable {
            table: table.to_string(),
            name,
        });
    };
    if vars.spec(&name).is_none() {
        return Err(StoreError::UnknownVariable {
            table: table.to_string(),
            name,
        });
    }
    vars.set(&name, &value)
        .map_err(|message| StoreError::InvalidVariable {
            table: table.to_string(),
            name,
            message,
        })
}

/// Reads the tables of `module` in `target` into typed rows; the other modules' parts of the
/// result keep their defaults. Other modules' rows are not read, so that a bad value there
/// (say an invalid `mysql-*` variable) does not stop this module from loading; for the
/// variable modules that means only the rows with the module's prefix.
pub(super) fn read_module(
    conn: &Connection,
    target: Target,
    module: Module,
) -> Result<ConfigTables, StoreError> {
    let mut tables = ConfigTables::default();
    match module {
        Module::MysqlServers => {
            let name = qualified(target, SERVERS.name);
            for f in select_all(conn, &name, &SERVERS)? {
                tables.mysql_servers.push(server(&f)?);
            }
            let name = qualified(target, REPLICATION.name);
            for f in select_all(conn, &name, &REPLICATION)? {
                tables.mysql_replication_hostgroups.push(replication(&f)?);
            }
        }
        Module::MysqlUsers => {
            let name = qualified(target, USERS.name);
            for f in select_all(conn, &name, &USERS)? {
                tables.mysql_users.push(user(&f)?);
            }
        }
        Module::MysqlQueryRules => {
            let name = qualified(target, RULES.name);
            for f in select_all(conn, &name, &RULES)? {
                tables.mysql_query_rules.push(rule(&f)?);
            }
        }
        Module::MysqlVariables | Module::AdminVariables => {
            let prefix = if module == Module::MysqlVariables {
                tables.mysql_variables.prefix().to_string()
            } else {
                tables.admin_variables.prefix().to_string()
            };
            let name = qualified(target, VARIABLES.name);
            let mut seen = std::collections::HashSet::new();
            for f in select_all(conn, &name, &VARIABLES)? {
                if has_prefix(&f.text("variable_name")?, &prefix) {
                    apply_variable(&mut tables, &name, &f, &mut seen)?;
                }
            }
        }
    }
    Ok(tables)
}

/// Reads every config table of `target` into typed rows.
pub(super) fn read_tables(conn: &Connection, target: Target) -> Result<ConfigTables, StoreError> {
    let mut tables = ConfigTables::default();
    let name = qualified(target, SERVERS.name);
    for f in select_all(conn, &name, &SERVERS)? {
        tables.mysql_servers.push(server(&f)?);
    }
    let name = qualified(target, USERS.name);
    for f in select_all(conn, &name, &USERS)? {
        tables.mysql_users.push(user(&f)?);
    }
    let name = qualified(target, RULES.name);
    for f in select_all(conn, &name, &RULES)? {
        tables.mysql_query_rules.push(rule(&f)?);
    }
    let name = qualified(target, REPLICATION.name);
    for f in select_all(conn, &name, &REPLICATION)? {
        tables.mysql_replication_hostgroups.push(replication(&f)?);
    }
    let name = qualified(target, VARIABLES.name);
    let mut seen = std::collections::HashSet::new();
    for f in select_all(conn, &name, &VARIABLES)? {
        apply_variable(&mut tables, &name, &f, &mut seen)?;
    }
    Ok(tables)
}

fn int(n: impl Into<i64>) -> Value {
    Value::Integer(n.into())
}

fn opt_int<T: Into<i64>>(n: Option<T>) -> Value {
    n.map_or(Value::Null, |n| Value::Integer(n.into()))
}

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn opt_text(s: Option<&str>) -> Value {
    s.map_or(Value::Null, text)
}

fn server_values(s: &ServerRow) -> Vec<Value> {
    vec![
        int(s.hostgroup_id),
        text(&s.hostname),
        int(s.port),
        int(s.gtid_port),
        text(s.status.as_str()),
        int(s.weight),
        int(s.compression),
        int(s.max_connections),
        int(s.max_replication_lag),
        int(s.use_ssl),
        int(s.max_latency_ms),
        text(&s.comment),
    ]
}

fn user_values(u: &UserRow) -> Vec<Value> {
    vec![
        text(&u.username),
        Value::Text(u.password.as_config_string()),
        int(u.active),
        int(u.use_ssl),
        int(u.default_hostgroup),
        opt_text(u.default_schema.as_deref()),
        int(u.schema_locked),
        int(u.transaction_persistent),
        int(u.fast_forward),
        int(u.backend),
        int(u.frontend),
        int(u.max_connections),
        text(&u.attributes),
        text(&u.comment),
    ]
}

fn rule_values(r: &QueryRuleRow) -> Vec<Value> {
    vec![
        int(r.rule_id),
        int(r.active),
        opt_text(r.username.as_deref()),
        opt_text(r.schemaname.as_deref()),
        int(r.flag_in),
        opt_text(r.client_addr.as_deref()),
        opt_text(r.proxy_addr.as_deref()),
        opt_int(r.proxy_port),
        opt_text(r.digest.as_deref()),
        opt_text(r.match_digest.as_deref()),
        opt_text(r.match_pattern.as_deref()),
        int(r.negate_match_pattern),
        text(&r.re_modifiers),
        opt_int(r.flag_out),
        opt_text(r.replace_pattern.as_deref()),
        opt_int(r.destination_hostgroup),
        opt_int(r.cache_ttl),
        opt_int(r.cache_empty_result),
        opt_int(r.cache_timeout),
        opt_int(r.reconnect),
        opt_int(r.timeout),
        opt_int(r.retries),
        opt_int(r.delay),
        opt_int(r.next_query_flag_in),
        opt_int(r.mirror_flag_out),
        opt_int(r.mirror_hostgroup),
        opt_text(r.error_msg.as_deref()),
        opt_text(r.ok_msg.as_deref()),
        opt_int(r.sticky_conn),
        opt_int(r.multiplex),
        opt_int(r.gtid_from_hostgroup),
        opt_int(r.log),
        int(r.apply),
        text(&r.attributes),
        opt_text(r.comment.as_deref()),
    ]
}

fn replication_values(r: &ReplicationHostgroupRow) -> Vec<Value> {
    vec![
        int(r.writer_hostgroup),
        int(r.reader_hostgroup),
        text(&r.check_type),
        text(&r.comment),
    ]
}

/// Deletes the rows of `spec` in `target` matching `filter` (a WHERE clause, or none) and
/// inserts `rows`. Runs inside the caller's transaction.
fn replace(
    conn: &Connection,
    target: Target,
    spec: &TableSpec,
    filter: Option<&str>,
    rows: impl IntoIterator<Item = Vec<Value>>,
) -> Result<(), StoreError> {
    let table = qualified(target, spec.name);
    let delete = match filter {
        Some(w) => format!("DELETE FROM {table} WHERE {w}"),
        None => format!("DELETE FROM {table}"),
    };
    conn.execute(&delete, [])
        .map_err(StoreError::sqlite(format!("clearing {table}")))?;
    let placeholders = vec!["?"; spec.columns.len()].join(", ");
    let mut insert = conn
        .prepare(&format!(
            "INSERT INTO {table} ({}) VALUES ({placeholders})",
            spec.columns.join(", ")
        ))
        .map_err(StoreError::sqlite(format!("writing {table}")))?;
    for values in rows {
        insert
            .execute(rusqlite::params_from_iter(values.iter()))
            .map_err(|source| StoreError::WriteRow {
                table: table.clone(),
                key: describe_key(spec, &values),
                source,
            })?;
    }
    Ok(())
}

/// Replaces the `global_variables` rows of `vars`' prefix with all of `vars`.
fn replace_variables(
    conn: &Connection,
    target: Target,
    vars: &Variables,
) -> Result<(), StoreError> {
    // The prefixes are `mysql-`/`admin-`: no LIKE wildcard in them, and LIKE ignores ASCII
    // case as the variables registry does.
    let filter = format!("variable_name LIKE '{}%'", vars.prefix());
    let rows = vars
        .iter()
        .map(|(name, value)| vec![Value::Text(format!("{}{name}", vars.prefix())), text(value)]);
    replace(conn, target, &VARIABLES, Some(&filter), rows)
}

/// Adds a `global_variables` row for each variable of `vars` that has none in `target`,
/// with its value in `vars`; rows already there are left as they are.
pub(super) fn add_missing_variables(
    conn: &Connection,
    target: Target,
    vars: &Variables,
) -> Result<usize, StoreError> {
    let table = qualified(target, VARIABLES.name);
    let mut insert = conn
        .prepare(&format!(
            "INSERT OR IGNORE INTO {table} (variable_name, variable_value) VALUES (?1, ?2)"
        ))
        .map_err(StoreError::sqlite(format!("writing {table}")))?;
    let mut added = 0;
    for (name, value) in vars.iter() {
        added += insert
            .execute(rusqlite::params![format!("{}{name}", vars.prefix()), value])
            .map_err(StoreError::sqlite(format!("writing {table}")))?;
    }
    Ok(added)
}

/// Replaces the tables of each `(target, module)` of `parts` with those of `tables`, all in
/// one transaction: on any error nothing changes.
pub(super) fn write_modules(
    conn: &Connection,
    parts: &[(Target, Module)],
    tables: &ConfigTables,
) -> Result<(), StoreError> {
    let tx = conn
        .unchecked_transaction()
        .map_err(StoreError::sqlite("starting a configuration write"))?;
    for &(target, module) in parts {
        write_module_in(&tx, target, module, tables)?;
    }
    // Dropping `tx` on an early return above rolls back: nothing half-applies.
    tx.commit()
        .map_err(StoreError::sqlite("committing a configuration write"))
}

/// Replaces the tables of `module` in `target` with those of `tables`, inside the caller's
/// transaction.
fn write_module_in(
    tx: &Connection,
    target: Target,
    module: Module,
    tables: &ConfigTables,
) -> Result<(), StoreError> {
    match module {
        Module::MysqlServers => {
            replace(
                tx,
                target,
                &SERVERS,
                None,
                tables.mysql_servers.iter().map(server_values),
            )?;
            replace(
                tx,
                target,
                &REPLICATION,
                None,
                tables
                    .mysql_replication_hostgroups
                    .iter()
                    .map(replication_values),
            )?;
        }
        Module::MysqlUsers => replace(
            tx,
            target,
            &USERS,
            None,
            tables.mysql_users.iter().map(user_values),
        )?,
        Module::MysqlQueryRules => replace(
            tx,
            target,
            &RULES,
            None,
            tables.mysql_query_rules.iter().map(rule_values),
        )?,
        Module::MysqlVariables => replace_variables(tx, target, &tables.mysql_variables)?,
        Module::AdminVariables => replace_variables(tx, target, &tables.admin_variables)?,
    }
    Ok(())
}
