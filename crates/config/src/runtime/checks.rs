//! Row and table constraints of the config tables (ProxySQL 2.x CHECKs, primary and unique
//! keys), plus the warnings for configurations that are legal but suspicious.

use super::origin;
use crate::error::ConfigError;
use crate::rows::{
    ConfigTables, QueryRuleRow, ReplicationHostgroupRow, ServerRow, UserRow, CHECK_TYPES,
};
use crate::typed::AdminVariables;
use std::collections::{BTreeSet, HashMap};

const MAX_WEIGHT: u32 = 10_000_000;
const MAX_COMPRESSION: u32 = 102_400;
const MAX_REPLICATION_LAG: u32 = 126_144_000;
const MAX_RETRIES: u32 = 1000;
const RE_MODIFIERS: &[&str] = &["CASELESS", "GLOBAL"];

/// Collects errors for rows of one table, addressed by their source index.
struct Table<'a> {
    name: &'static str,
    origins: &'a [usize],
    errors: &'a mut Vec<ConfigError>,
}

impl Table<'_> {
    fn row_path(&self, i: usize) -> String {
        format!("{}[{}]", self.name, origin(self.origins, i))
    }

    fn row_err(&mut self, i: usize, message: impl Into<String>) {
        let path = self.row_path(i);
        self.errors.push(ConfigError::new(path, message));
    }

    fn field_err(&mut self, i: usize, field: &str, message: impl Into<String>) {
        let path = format!("{}.{field}", self.row_path(i));
        self.errors.push(ConfigError::new(path, message));
    }
}

/// `mysql_servers`: hostname, port, ranges, PK (hostgroup_id, hostname, port).
pub(super) fn servers(rows: &[ServerRow], origins: &[usize], errors: &mut Vec<ConfigError>) {
    let mut t = Table {
        name: "mysql_servers",
        origins,
        errors,
    };
    let mut seen: HashMap<(u32, &str, u16), usize> = HashMap::new();
    for (i, s) in rows.iter().enumerate() {
        if s.hostname.trim().is_empty() {
            t.field_err(i, "hostname", "must not be empty");
        }
        if s.port == 0 && !s.is_unix_socket() {
            t.field_err(
                i,
                "port",
                "must be 1..=65535 (0 only for a Unix socket hostname starting with '/')",
            );
        }
        if s.weight > MAX_WEIGHT {
            t.field_err(
                i,
                "weight",
                format!("value {} out of range: expected 0..={MAX_WEIGHT}", s.weight),
            );
        }
        if s.compression > MAX_COMPRESSION {
            t.field_err(
                i,
                "compression",
                format!(
                    "value {} out of range: expected 0..={MAX_COMPRESSION}",
                    s.compression
                ),
            );
        }
        if s.max_replication_lag > MAX_REPLICATION_LAG {
            t.field_err(
                i,
                "max_replication_lag",
                format!(
                    "value {} out of range: expected 0..={MAX_REPLICATION_LAG}",
                    s.max_replication_lag
                ),
            );
        }
        if let Some(first) = seen.insert((s.hostgroup_id, s.hostname.as_str(), s.port), i) {
            let first_path = t.row_path(first);
            t.row_err(
                i,
                format!(
                    "duplicate server (hostgroup_id {}, hostname '{}', port {}): already at {first_path}",
                    s.hostgroup_id, s.hostname, s.port
                ),
            );
        }
    }
}

/// `mysql_users`: username, PK (username, backend), UNIQUE (username, frontend).
pub(super) fn users(rows: &[UserRow], origins: &[usize], errors: &mut Vec<ConfigError>) {
    let mut t = Table {
        name: "mysql_users",
        origins,
        errors,
    };
    let mut by_backend: HashMap<(&str, bool), usize> = HashMap::new();
    let mut by_frontend: HashMap<(&str, bool), usize> = HashMap::new();
    for (i, u) in rows.iter().enumerate() {
        if u.username.is_empty() {
            t.field_err(i, "username", "must not be empty");
        }
        if let Some(first) = by_backend.insert((u.username.as_str(), u.backend), i) {
            let first_path = t.row_path(first);
            t.row_err(
                i,
                format!(
                    "duplicate user (username '{}', backend {}): already at {first_path}",
                    u.username, u.backend
                ),
            );
        } else if let Some(first) = by_frontend.insert((u.username.as_str(), u.frontend), i) {
            let first_path = t.row_path(first);
            t.row_err(
                i,
                format!(
                    "duplicate user (username '{}', frontend {}): already at {first_path}",
                    u.username, u.frontend
                ),
            );
        }
    }
}

/// `mysql_query_rules`: unique rule_id, patterns, digests, modifiers, ranges.
pub(super) fn query_rules(rows: &[QueryRuleRow], origins: &[usize], errors: &mut Vec<ConfigError>) {
    let mut t = Table {
        name: "mysql_query_rules",
        origins,
        errors,
    };
    let mut seen: HashMap<u32, usize> = HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        if let Some(first) = seen.insert(r.rule_id, i) {
            let first_path = t.row_path(first);
            t.field_err(
                i,
                "rule_id",
                format!("duplicate rule_id {}: already at {first_path}", r.rule_id),
            );
        }
        for (field, value) in [
            ("match_digest", &r.match_digest),
            ("match_pattern", &r.match_pattern),
        ] {
            if value.as_deref().is_some_and(str::is_empty) {
                t.field_err(
                    i,
                    field,
                    "must not be empty (leave it out to match everything)",
                );
            }
        }
        if let Some(d) = &r.digest {
            if !is_digest(d) {
                t.field_err(
                    i,
                    "digest",
                    format!("invalid digest '{d}': expected 0x followed by 1 to 16 hex digits"),
                );
            }
        }
        for token in r
            .re_modifiers
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            if !RE_MODIFIERS.iter().any(|m| m.eq_ignore_ascii_case(token)) {
                t.field_err(
                    i,
                    "re_modifiers",
                    format!("unknown modifier '{token}': expected CASELESS and/or GLOBAL"),
                );
            }
        }
        if let Some(m) = r.multiplex.filter(|m| *m > 2) {
            t.field_err(
                i,
                "multiplex",
                format!("value {m} out of range: expected 0, 1 or 2"),
            );
        }
        if let Some(n) = r.retries.filter(|n| *n > MAX_RETRIES) {
            t.field_err(
                i,
                "retries",
                format!("value {n} out of range: expected 0..={MAX_RETRIES}"),
            );
        }
        if r.cache_ttl == Some(0) {
            t.field_err(
                i,
                "cache_ttl",
                "must be greater than 0 (leave it out for no caching)",
            );
        }
    }
}

fn is_digest(s: &str) -> bool {
    let hex = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X"));
    hex.is_some_and(|h| (1..=16).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `mysql_replication_hostgroups`: PK writer, UNIQUE reader, reader ≠ writer, check_type.
pub(super) fn replication_hostgroups(
    rows: &[ReplicationHostgroupRow],
    origins: &[usize],
    errors: &mut Vec<ConfigError>,
) {
    let mut t = Table {
        name: "mysql_replication_hostgroups",
        origins,
        errors,
    };
    let mut writers: HashMap<u32, usize> = HashMap::new();
    let mut readers: HashMap<u32, usize> = HashMap::new();
    for (i, r) in rows.iter().enumerate() {
        if r.reader_hostgroup == r.writer_hostgroup {
            t.field_err(
                i,
                "reader_hostgroup",
                format!("must differ from writer_hostgroup ({})", r.writer_hostgroup),
            );
        }
        if let Some(first) = writers.insert(r.writer_hostgroup, i) {
            let first_path = t.row_path(first);
            t.field_err(
                i,
                "writer_hostgroup",
                format!(
                    "duplicate writer_hostgroup {}: already at {first_path}",
                    r.writer_hostgroup
                ),
            );
        }
        if let Some(first) = readers.insert(r.reader_hostgroup, i) {
            let first_path = t.row_path(first);
            t.field_err(
                i,
                "reader_hostgroup",
                format!(
                    "duplicate reader_hostgroup {}: already at {first_path}",
                    r.reader_hostgroup
                ),
            );
        }
        if !CHECK_TYPES.contains(&r.check_type.as_str()) {
            t.field_err(
                i,
                "check_type",
                format!(
                    "invalid check_type '{}': expected one of {}",
                    r.check_type,
                    CHECK_TYPES.join(", ")
                ),
            );
        }
    }
}

/// Legal but probably unintended: routing to hostgroups without servers, admin users that
/// are also MySQL users.
pub(super) fn warnings(tables: &ConfigTables, admin: &AdminVariables) -> Vec<String> {
    let mut known: BTreeSet<u32> = tables
        .mysql_servers
        .iter()
        .map(|s| s.hostgroup_id)
        .collect();
    // The monitor moves servers between the two hostgroups of a replication pair.
    for r in &tables.mysql_replication_hostgroups {
        if known.contains(&r.writer_hostgroup) || known.contains(&r.reader_hostgroup) {
            known.insert(r.writer_hostgroup);
            known.insert(r.reader_hostgroup);
        }
    }
    let mut out = Vec::new();
    for (name, what) in [
        ("auditlog_filename", "audit log"),
        ("eventslog_filename", "events log"),
    ] {
        if tables
            .mysql_variables
            .get(name)
            .is_some_and(|v| !v.is_empty())
        {
            out.push(format!(
                "mysql_variables.{name}: set, but weir writes no {what} yet (the variable is \
                 accepted for compatibility only)"
            ));
        }
    }
    for (i, u) in tables
        .mysql_users
        .iter()
        .enumerate()
        .filter(|(_, u)| u.active && u.frontend)
    {
        if !known.contains(&u.default_hostgroup) {
            out.push(format!(
                "mysql_users[{i}]: user '{}' has default_hostgroup {} which has no servers",
                u.username, u.default_hostgroup
            ));
        }
        // weir logs in to backends with SHA1(password), which only a client's login reveals:
        // a hash no client password matches is no use.
        let backend_row = tables
            .mysql_users
            .iter()
            .find(|b| b.active && b.backend && !b.frontend && b.username == u.username);
        if let Some(b) = backend_row {
            if b.password.is_hash() && u.password.is_hash() && b.password != u.password {
                out.push(format!(
                    "mysql_users[{i}]: user '{}' has a backend row whose password is a hash other \
                     than its client row's: weir cannot log in to backends with it (give that \
                     row's password in clear text)",
                    u.username
                ));
            }
        }
    }
    for (i, r) in tables
        .mysql_query_rules
        .iter()
        .enumerate()
        .filter(|(_, r)| r.active)
    {
        for (field, hg) in [
            ("destination_hostgroup", r.destination_hostgroup),
            ("mirror_hostgroup", r.mirror_hostgroup),
        ] {
            if let Some(hg) = hg.filter(|hg| !known.contains(hg)) {
                out.push(format!(
                    "mysql_query_rules[{i}]: rule {} has {field} {hg} which has no servers",
                    r.rule_id
                ));
            }
        }
        if r.replace_pattern.is_some() && r.match_pattern.is_none() {
            out.push(format!(
                "mysql_query_rules[{i}]: rule {} has replace_pattern but no match_pattern: nothing is rewritten",
                r.rule_id
            ));
        }
        let stored_only: Vec<&str> = [
            ("mirror_hostgroup", r.mirror_hostgroup.is_some()),
            ("mirror_flagOUT", r.mirror_flag_out.is_some()),
            ("gtid_from_hostgroup", r.gtid_from_hostgroup.is_some()),
            ("log", r.log == Some(true)),
            ("reconnect", r.reconnect.is_some()),
        ]
        .into_iter()
        .filter_map(|(field, set)| set.then_some(field))
        .collect();
        if !stored_only.is_empty() {
            out.push(format!(
                "mysql_query_rules[{i}]: rule {} sets {}, which weir stores but does not act on yet",
                r.rule_id,
                stored_only.join(", ")
            ));
        }
    }
    let admins = admin
        .admin_credentials
        .iter()
        .chain(&admin.stats_credentials);
    for (user, _) in admins {
        if tables
            .mysql_users
            .iter()
            .any(|u| u.frontend && &u.username == user)
        {
            out.push(format!(
                "admin user '{user}' is also a frontend user in mysql_users"
            ));
        }
    }
    out
}
