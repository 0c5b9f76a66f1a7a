//! The TOML configuration file, with ProxySQL's section and key names. The file is walked as a
//! `toml::Table` rather than deserialized, so that every unknown key and bad value is reported
//! — with its path — instead of only the first.

mod row;
#[cfg(test)]
mod tests;

use crate::error::{ConfigError, ConfigErrors};
use crate::rows::{
    ConfigTables, Password, QueryRuleRow, ReplicationHostgroupRow, ServerRow, ServerStatus, UserRow,
};
use crate::runtime::{build_at, RowOrigins, Runtime};
use crate::vars::Variables;
use row::Row;
use std::path::{Path, PathBuf};
use toml::{Table, Value};

/// What a configuration file holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    /// `datadir`: where weir keeps its database; the command line may override it.
    pub datadir: Option<PathBuf>,
    /// The tables the file seeds the database with.
    pub tables: ConfigTables,
}

/// Parses and validates a configuration; every error of the file is returned at once.
pub fn parse_config_str(text: &str) -> Result<ConfigFile, ConfigErrors> {
    check_str(text).map(|(file, _)| file)
}

/// Reads and parses a configuration file; a read failure is one error with an empty path.
pub fn load_config_file(path: &Path) -> Result<ConfigFile, ConfigErrors> {
    parse_config_str(&read(path)?)
}

/// The tables of a configuration file as far as they parse, whatever errors it has; `None`
/// when it cannot be read or is not TOML. `check-config` compiles the query rules of these to
/// report bad regular expressions alongside the file's other errors.
pub fn tables_as_parsed(path: &Path) -> Option<ConfigTables> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc: Table = text.parse().ok()?;
    let mut parser = Parser::default();
    Some(parser.document(&doc).tables)
}

/// The `datadir` of a configuration file whatever else is wrong with it; `None` when the file
/// cannot be read, is not TOML or has no usable `datadir`. Lets weir start from the database a
/// file with errors points to, since such a file is not read on a restart.
pub fn datadir_as_parsed(path: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(path).ok()?;
    let doc: Table = text.parse().ok()?;
    doc.get("datadir")?
        .as_str()
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// What `weir check-config` runs: parse the file and build the runtime it describes.
pub fn validate_file(path: &Path) -> Result<Runtime, ConfigErrors> {
    check_str(&read(path)?).map(|(_, runtime)| runtime)
}

fn read(path: &Path) -> Result<String, ConfigErrors> {
    std::fs::read_to_string(path).map_err(|e| {
        ConfigErrors(vec![ConfigError::new(
            "",
            format!("cannot read {}: {e}", path.display()),
        )])
    })
}

/// Parses, then validates what parsed (errors of both steps are reported together).
fn check_str(text: &str) -> Result<(ConfigFile, Runtime), ConfigErrors> {
    let doc: Table = text
        .parse()
        .map_err(|e: toml::de::Error| ConfigErrors(vec![syntax_error(text, &e)]))?;
    let mut parser = Parser::default();
    let file = parser.document(&doc);
    let built = build_at(&file.tables, &parser.origins);
    let mut errors = parser.errors;
    match built {
        Ok(runtime) if errors.is_empty() => Ok((file, runtime)),
        Ok(_) => Err(ConfigErrors(errors)),
        Err(more) => {
            errors.extend(more);
            Err(ConfigErrors(errors))
        }
    }
}

/// A one-line message (toml's own Display spans several lines, with a snippet).
fn syntax_error(text: &str, e: &toml::de::Error) -> ConfigError {
    let message = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let Some(offset) = e.span().map(|s| s.start) else {
        return ConfigError::new("", format!("TOML syntax error: {message}"));
    };
    let end = (0..=offset.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    let before = text.get(..end).unwrap_or_default();
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    ConfigError::new(
        "",
        format!("TOML syntax error at line {line}, column {column}: {message}"),
    )
}

#[derive(Default)]
struct Parser {
    errors: Vec<ConfigError>,
    origins: RowOrigins,
}

impl Parser {
    fn err(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ConfigError::new(path, message));
    }

    fn document(&mut self, doc: &Table) -> ConfigFile {
        let mut file = ConfigFile {
            datadir: None,
            tables: ConfigTables::default(),
        };
        for (key, value) in doc {
            match key.as_str() {
                "datadir" => match value {
                    Value::String(s) if !s.trim().is_empty() => {
                        file.datadir = Some(PathBuf::from(s))
                    }
                    Value::String(_) => self.err(key, "must not be empty"),
                    other => self.err(
                        key,
                        format!("expected a string, got {}", row::type_name(other)),
                    ),
                },
                "mysql_variables" => self.variables(key, value, &mut file.tables.mysql_variables),
                "admin_variables" => self.variables(key, value, &mut file.tables.admin_variables),
                "mysql_servers" => {
                    let (rows, origins) = self.rows(key, value, server);
                    file.tables.mysql_servers = rows;
                    self.origins.servers = origins;
                }
                "mysql_users" => {
                    let (rows, origins) = self.rows(key, value, user);
                    file.tables.mysql_users = rows;
                    self.origins.users = origins;
                }
                "mysql_query_rules" => {
                    let mut next_id = 1u32;
                    let (rows, origins) = self.rows(key, value, |r| query_rule(r, &mut next_id));
                    file.tables.mysql_query_rules = rows;
                    self.origins.rules = origins;
                }
                "mysql_replication_hostgroups" => {
                    let (rows, origins) = self.rows(key, value, replication_hostgroup);
                    file.tables.mysql_replication_hostgroups = rows;
                    self.origins.replication = origins;
                }
                _ if value.is_table() || value.is_array() => self.err(key, "unknown section"),
                _ => self.err(key, "unknown key"),
            }
        }
        file
    }

    /// `[mysql_variables]` / `[admin_variables]`: every key must be a known variable.
    fn variables(&mut self, section: &str, value: &Value, vars: &mut Variables) {
        let Value::Table(table) = value else {
            self.err(
                section,
                format!(
                    "expected a table ([{section}]), got {}",
                    row::type_name(value)
                ),
            );
            return;
        };
        let mut seen: Vec<(&str, &str)> = Vec::new();
        for (key, value) in table {
            let path = format!("{section}.{key}");
            let Some(spec) = vars.spec(key) else {
                self.err(path, "unknown variable");
                continue;
            };
            if let Some((_, first)) = seen.iter().find(|(name, _)| *name == spec.name) {
                self.err(path, format!("given twice (also as '{first}')"));
                continue;
            }
            seen.push((spec.name, key));
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Integer(n) => n.to_string(),
                Value::Boolean(b) => b.to_string(),
                other => {
                    self.err(
                        path,
                        format!(
                            "expected a string, integer or boolean, got {} (quote it)",
                            row::type_name(other)
                        ),
                    );
                    continue;
                }
            };
            if let Err(e) = vars.set(spec.name, &text) {
                self.err(path, e);
            }
        }
    }

    /// `[[section]]`: parses each row; rows with errors are left out (their errors are kept),
    /// and the source index of each kept row is returned alongside.
    fn rows<T>(
        &mut self,
        section: &str,
        value: &Value,
        mut parse: impl FnMut(&mut Row<'_>) -> Option<T>,
    ) -> (Vec<T>, Vec<usize>) {
        let Value::Array(items) = value else {
            self.err(
                section,
                format!(
                    "expected an array of tables ([[{section}]]), got {}",
                    row::type_name(value)
                ),
            );
            return (Vec::new(), Vec::new());
        };
        let mut rows = Vec::new();
        let mut origins = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let path = format!("{section}[{i}]");
            let Value::Table(table) = item else {
                self.err(
                    path,
                    format!("expected a table, got {}", row::type_name(item)),
                );
                continue;
            };
            let mut r = Row::new(table, path, &mut self.errors);
            let parsed = parse(&mut r);
            if let (true, Some(parsed)) = (r.finish(), parsed) {
                rows.push(parsed);
                origins.push(i);
            }
        }
        (rows, origins)
    }
}

fn server(r: &mut Row<'_>) -> Option<ServerRow> {
    let hostname = r.required_string(&["hostname", "address"]);
    let mut s = ServerRow::new(0, hostname.unwrap_or_default(), 3306);
    s.hostgroup_id = r.u32_or(&["hostgroup_id", "hostgroup"], s.hostgroup_id);
    s.port = r.u16_or(&["port"], s.port);
    s.gtid_port = r.u16_or(&["gtid_port"], s.gtid_port);
    if let Some((key, text)) = r.string_with_key(&["status"]) {
        match text.parse::<ServerStatus>() {
            Ok(st) => s.status = st,
            Err(e) => r.error(&key, e.to_string()),
        }
    }
    s.weight = r.u32_or(&["weight"], s.weight);
    s.compression = r.u32_or(&["compression"], s.compression);
    s.max_connections = r.u32_or(&["max_connections"], s.max_connections);
    s.max_replication_lag = r.u32_or(&["max_replication_lag"], s.max_replication_lag);
    s.use_ssl = r.bool_or(&["use_ssl"], s.use_ssl);
    s.max_latency_ms = r.u32_or(&["max_latency_ms"], s.max_latency_ms);
    s.comment = r.string_or(&["comment"], "");
    Some(s)
}

fn user(r: &mut Row<'_>) -> Option<UserRow> {
    let username = r.required_string(&["username"]);
    let password = r.string_or(&["password"], "");
    let mut u = UserRow::new(username.unwrap_or_default(), Password::parse(&password));
    u.active = r.bool_or(&["active"], u.active);
    u.use_ssl = r.bool_or(&["use_ssl"], u.use_ssl);
    u.default_hostgroup = r.u32_or(&["default_hostgroup"], u.default_hostgroup);
    u.default_schema = r.opt_string(&["default_schema"]);
    u.schema_locked = r.bool_or(&["schema_locked"], u.schema_locked);
    u.transaction_persistent = r.bool_or(&["transaction_persistent"], u.transaction_persistent);
    u.fast_forward = r.bool_or(&["fast_forward"], u.fast_forward);
    u.backend = r.bool_or(&["backend"], u.backend);
    u.frontend = r.bool_or(&["frontend"], u.frontend);
    u.max_connections = r.u32_or(&["max_connections"], u.max_connections);
    u.attributes = r.json_or_empty(&["attributes"]);
    u.comment = r.string_or(&["comment"], "");
    Some(u)
}

/// `rule_id` may be left out: like the table's AUTOINCREMENT, it is then one more than the
/// largest id seen so far in the file.
fn query_rule(r: &mut Row<'_>, next_id: &mut u32) -> Option<QueryRuleRow> {
    let rule_id = r.opt_u32(&["rule_id"]).unwrap_or(*next_id);
    *next_id = (*next_id).max(rule_id.saturating_add(1));
    let mut q = QueryRuleRow::new(rule_id);
    q.active = r.bool_or(&["active"], q.active);
    q.username = r.opt_string(&["username"]);
    q.schemaname = r.opt_string(&["schemaname"]);
    q.flag_in = r.i32_or(&["flagIN", "flag_in"], q.flag_in);
    q.client_addr = r.opt_string(&["client_addr"]);
    q.proxy_addr = r.opt_string(&["proxy_addr"]);
    q.proxy_port = r.opt_u16(&["proxy_port"]);
    q.digest = r.opt_string(&["digest"]);
    q.match_digest = r.opt_string(&["match_digest"]);
    q.match_pattern = r.opt_string(&["match_pattern"]);
    q.negate_match_pattern = r.bool_or(&["negate_match_pattern"], q.negate_match_pattern);
    if let Some(m) = r.opt_string(&["re_modifiers"]) {
        q.re_modifiers = m;
    }
    q.flag_out = r.opt_i32(&["flagOUT", "flag_out"]);
    q.replace_pattern = r.opt_string(&["replace_pattern"]);
    q.destination_hostgroup = r.opt_u32(&["destination_hostgroup"]);
    q.cache_ttl = r.opt_u32(&["cache_ttl"]);
    q.cache_empty_result = r.opt_bool(&["cache_empty_result"]);
    q.cache_timeout = r.opt_u32(&["cache_timeout"]);
    q.reconnect = r.opt_bool(&["reconnect"]);
    q.timeout = r.opt_u32(&["timeout"]);
    q.retries = r.opt_u32(&["retries"]);
    q.delay = r.opt_u32(&["delay"]);
    q.next_query_flag_in = r.opt_i32(&["next_query_flagIN", "next_query_flag_in"]);
    q.mirror_flag_out = r.opt_i32(&["mirror_flagOUT", "mirror_flag_out"]);
    q.mirror_hostgroup = r.opt_u32(&["mirror_hostgroup"]);
    q.error_msg = r.opt_string(&["error_msg"]);
    q.ok_msg = r.opt_string(&["OK_msg", "ok_msg"]);
    q.sticky_conn = r.opt_bool(&["sticky_conn"]);
    q.multiplex = r.opt_u8(&["multiplex"]);
    q.gtid_from_hostgroup = r.opt_u32(&["gtid_from_hostgroup"]);
    q.log = r.opt_bool(&["log"]);
    q.apply = r.bool_or(&["apply"], q.apply);
    q.attributes = r.json_or_empty(&["attributes"]);
    q.comment = r.opt_string(&["comment"]);
    Some(q)
}

fn replication_hostgroup(r: &mut Row<'_>) -> Option<ReplicationHostgroupRow> {
    let writer = r.required_u32(&["writer_hostgroup"]);
    let reader = r.required_u32(&["reader_hostgroup"]);
    let mut h = ReplicationHostgroupRow::new(writer.unwrap_or(0), reader.unwrap_or(0));
    if let Some(ct) = r.opt_string(&["check_type"]) {
        h.check_type = ct.trim().to_ascii_lowercase();
    }
    h.comment = r.string_or(&["comment"], "");
    Some(h)
}
