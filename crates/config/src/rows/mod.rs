//! Typed rows of the configuration tables, shaped like ProxySQL 2.x's `mysql_*` tables so that
//! the file parser and the SQLite admin store share them. Constructors fill the column defaults.

#[cfg(test)]
mod tests;

use crate::vars::Variables;
use std::fmt;
use std::str::FromStr;

/// Administrative status of a backend server (`mysql_servers.status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ServerStatus {
    /// Fully usable.
    #[default]
    Online,
    /// Temporarily unused (too many errors, lag); the monitor may bring it back.
    Shunned,
    /// Draining: no new traffic, running transactions finish.
    OfflineSoft,
    /// Unused; connections to it are closed.
    OfflineHard,
}

impl ServerStatus {
    /// Every status, in ProxySQL's order.
    pub const ALL: [ServerStatus; 4] = [
        ServerStatus::Online,
        ServerStatus::Shunned,
        ServerStatus::OfflineSoft,
        ServerStatus::OfflineHard,
    ];

    /// The spelling used in the tables (`ONLINE`, `OFFLINE_SOFT`...).
    pub fn as_str(self) -> &'static str {
        match self {
            ServerStatus::Online => "ONLINE",
            ServerStatus::Shunned => "SHUNNED",
            ServerStatus::OfflineSoft => "OFFLINE_SOFT",
            ServerStatus::OfflineHard => "OFFLINE_HARD",
        }
    }
}

impl fmt::Display for ServerStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `status` value that is not one of the four known ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownStatus(pub String);

impl fmt::Display for UnknownStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown server status '{}' (expected ONLINE, SHUNNED, OFFLINE_SOFT or OFFLINE_HARD)",
            self.0
        )
    }
}

impl std::error::Error for UnknownStatus {}

impl FromStr for ServerStatus {
    type Err = UnknownStatus;

    /// Case-insensitive: DBAs type `online` as often as `ONLINE`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        ServerStatus::ALL
            .into_iter()
            .find(|st| st.as_str().eq_ignore_ascii_case(t))
            .ok_or_else(|| UnknownStatus(s.to_string()))
    }
}

/// One backend server in one hostgroup (`mysql_servers`). PK (hostgroup_id, hostname, port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerRow {
    /// Hostgroup the server belongs to (default 0).
    pub hostgroup_id: u32,
    /// Host name, IP address, or a Unix socket path starting with `/`.
    pub hostname: String,
    /// TCP port (default 3306); 0 is allowed for Unix sockets.
    pub port: u16,
    /// Port of the GTID binlog reader, 0 = none.
    pub gtid_port: u16,
    /// Administrative status (default ONLINE).
    pub status: ServerStatus,
    /// Relative weight when picking a server in the hostgroup (default 1).
    pub weight: u32,
    /// Compression level requested to the backend, 0 = off.
    pub compression: u32,
    /// Connection limit to this server from this hostgroup (default 1000).
    pub max_connections: u32,
    /// Shun when replication lag exceeds this many seconds; 0 = no check.
    pub max_replication_lag: u32,
    /// Connect to the backend with TLS.
    pub use_ssl: bool,
    /// Ignore the server when its ping latency exceeds this; 0 = no check.
    pub max_latency_ms: u32,
    /// Free text.
    pub comment: String,
}

impl ServerRow {
    /// A server row with every other column at its default.
    pub fn new(hostgroup_id: u32, hostname: impl Into<String>, port: u16) -> Self {
        ServerRow {
            hostgroup_id,
            hostname: hostname.into(),
            port,
            gtid_port: 0,
            status: ServerStatus::Online,
            weight: 1,
            compression: 0,
            max_connections: 1000,
            max_replication_lag: 0,
            use_ssl: false,
            max_latency_ms: 0,
            comment: String::new(),
        }
    }

    /// Whether `hostname` names a Unix socket rather than a TCP host.
    pub fn is_unix_socket(&self) -> bool {
        self.hostname.starts_with('/')
    }
}

/// A user's password as configured: clear text, or a `mysql_native_password` hash.
#[derive(Clone, PartialEq, Eq, Hash)]
pub enum Password {
    /// The password itself (may be empty).
    Clear(String),
    /// `SHA1(SHA1(password))`, written `*` + 40 hex digits in the tables.
    NativeHash([u8; 20]),
}

impl Password {
    /// Reads a table value: `*` followed by exactly 40 hex digits (any case) is a native hash,
    /// anything else is clear text.
    pub fn parse(s: &str) -> Password {
        match s.strip_prefix('*').and_then(decode_hash) {
            Some(h) => Password::NativeHash(h),
            None => Password::Clear(s.to_string()),
        }
    }

    /// The table value: the clear text, or `*` + 40 upper-case hex digits.
    pub fn as_config_string(&self) -> String {
        match self {
            Password::Clear(s) => s.clone(),
            Password::NativeHash(h) => {
                let mut out = String::with_capacity(41);
                out.push('*');
                for b in h {
                    out.push(hex_digit(b >> 4));
                    out.push(hex_digit(b & 0x0f));
                }
                out
            }
        }
    }

    /// Whether this is a hash rather than clear text.
    pub fn is_hash(&self) -> bool {
        matches!(self, Password::NativeHash(_))
    }
}

impl Default for Password {
    fn default() -> Self {
        Password::Clear(String::new())
    }
}

/// Never prints the secret: Debug output ends up in logs.
impl fmt::Debug for Password {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Password::Clear(s) if s.is_empty() => f.write_str("Clear(\"\")"),
            Password::Clear(_) => f.write_str("Clear(<redacted>)"),
            Password::NativeHash(_) => f.write_str("NativeHash(<redacted>)"),
        }
    }
}

fn hex_digit(n: u8) -> char {
    char::from(b"0123456789ABCDEF"[usize::from(n & 0x0f)])
}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn decode_hash(hex: &str) -> Option<[u8; 20]> {
    let bytes = hex.as_bytes();
    if bytes.len() != 40 {
        return None;
    }
    let mut out = [0u8; 20];
    for (slot, pair) in out.iter_mut().zip(bytes.chunks_exact(2)) {
        *slot = (hex_value(pair[0])? << 4) | hex_value(pair[1])?;
    }
    Some(out)
}

/// One user (`mysql_users`). PK (username, backend), UNIQUE (username, frontend).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRow {
    /// Login name, also used to log in to backends.
    pub username: String,
    /// Password or native hash.
    pub password: Password,
    /// Inactive users can neither log in nor be used for backends (default true).
    pub active: bool,
    /// Require TLS from the client.
    pub use_ssl: bool,
    /// Hostgroup for queries no rule routes (default 0).
    pub default_hostgroup: u32,
    /// Schema selected at login when the client names none; `None` = NULL.
    pub default_schema: Option<String>,
    /// Forbid the client from changing schema.
    pub schema_locked: bool,
    /// Keep a transaction on one hostgroup even if rules would route elsewhere (default true).
    pub transaction_persistent: bool,
    /// Bypass the query processor: relay bytes only.
    pub fast_forward: bool,
    /// The row is used to log in to backends (default true).
    pub backend: bool,
    /// The row is used to authenticate clients (default true).
    pub frontend: bool,
    /// Client connection limit for this user (default 10000).
    pub max_connections: u32,
    /// JSON attributes, '' = none.
    pub attributes: String,
    /// Free text.
    pub comment: String,
}

impl UserRow {
    /// A user row with every other column at its default.
    pub fn new(username: impl Into<String>, password: Password) -> Self {
        UserRow {
            username: username.into(),
            password,
            active: true,
            use_ssl: false,
            default_hostgroup: 0,
            default_schema: None,
            schema_locked: false,
            transaction_persistent: true,
            fast_forward: false,
            backend: true,
            frontend: true,
            max_connections: 10000,
            attributes: String::new(),
            comment: String::new(),
        }
    }
}

/// One query rule (`mysql_query_rules`); `None` is SQL NULL, i.e. "no criterion"/"no action".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryRuleRow {
    /// Evaluation order and identity.
    pub rule_id: u32,
    /// Only active rules reach the runtime (default false, as in ProxySQL).
    pub active: bool,
    /// Match on the client user.
    pub username: Option<String>,
    /// Match on the current schema.
    pub schemaname: Option<String>,
    /// The flag chain this rule belongs to (`flagIN`, default 0).
    pub flag_in: i32,
    /// Match on the client address.
    pub client_addr: Option<String>,
    /// Match on the local address the client connected to.
    pub proxy_addr: Option<String>,
    /// Match on the local port the client connected to.
    pub proxy_port: Option<u16>,
    /// Match on the digest hash, `0x` + hex.
    pub digest: Option<String>,
    /// Regex on the digest text.
    pub match_digest: Option<String>,
    /// Regex on the query text.
    pub match_pattern: Option<String>,
    /// Invert match_digest/match_pattern.
    pub negate_match_pattern: bool,
    /// Comma-separated `CASELESS`, `GLOBAL` (default `CASELESS`).
    pub re_modifiers: String,
    /// Continue in this flag chain (`flagOUT`).
    pub flag_out: Option<i32>,
    /// Rewrite of the matched text, `\1` for captures.
    pub replace_pattern: Option<String>,
    /// Route to this hostgroup.
    pub destination_hostgroup: Option<u32>,
    /// Cache the result set this many ms.
    pub cache_ttl: Option<u32>,
    /// Whether empty result sets are cached.
    pub cache_empty_result: Option<bool>,
    /// Wait this many ms for a cache entry being filled.
    pub cache_timeout: Option<u32>,
    /// Reserved (ProxySQL: allow reconnect).
    pub reconnect: Option<bool>,
    /// Query timeout in ms.
    pub timeout: Option<u32>,
    /// Retries on backend failure.
    pub retries: Option<u32>,
    /// Delay before execution in ms.
    pub delay: Option<u32>,
    /// Flag the next query of the session starts with (`next_query_flagIN`).
    pub next_query_flag_in: Option<i32>,
    /// Mirror the query into this flag chain (`mirror_flagOUT`).
    pub mirror_flag_out: Option<i32>,
    /// Mirror the query to this hostgroup.
    pub mirror_hostgroup: Option<u32>,
    /// Answer with this error instead of running the query.
    pub error_msg: Option<String>,
    /// Answer with OK instead of running the query (`OK_msg`).
    pub ok_msg: Option<String>,
    /// Keep the session on the backend connection.
    pub sticky_conn: Option<bool>,
    /// 0 disable multiplexing, 1 enable, 2 do not disable for this query.
    pub multiplex: Option<u8>,
    /// Read-your-writes: use the GTID of this hostgroup.
    pub gtid_from_hostgroup: Option<u32>,
    /// Log matching queries to the events log.
    pub log: Option<bool>,
    /// Stop evaluating after this rule matches.
    pub apply: bool,
    /// JSON attributes, '' = none.
    pub attributes: String,
    /// Free text.
    pub comment: Option<String>,
}

impl QueryRuleRow {
    /// A rule with every column at its default (inactive, matches everything, does nothing).
    pub fn new(rule_id: u32) -> Self {
        QueryRuleRow {
            rule_id,
            active: false,
            username: None,
            schemaname: None,
            flag_in: 0,
            client_addr: None,
            proxy_addr: None,
            proxy_port: None,
            digest: None,
            match_digest: None,
            match_pattern: None,
            negate_match_pattern: false,
            re_modifiers: "CASELESS".to_string(),
            flag_out: None,
            replace_pattern: None,
            destination_hostgroup: None,
            cache_ttl: None,
            cache_empty_result: None,
            cache_timeout: None,
            reconnect: None,
            timeout: None,
            retries: None,
            delay: None,
            next_query_flag_in: None,
            mirror_flag_out: None,
            mirror_hostgroup: None,
            error_msg: None,
            ok_msg: None,
            sticky_conn: None,
            multiplex: None,
            gtid_from_hostgroup: None,
            log: None,
            apply: false,
            attributes: String::new(),
            comment: None,
        }
    }
}

/// The allowed `mysql_replication_hostgroups.check_type` values.
pub const CHECK_TYPES: &[&str] = &[
    "read_only",
    "innodb_read_only",
    "super_read_only",
    "read_only|innodb_read_only",
    "read_only&innodb_read_only",
];

/// A writer/reader hostgroup pair the monitor maintains from `read_only`
/// (`mysql_replication_hostgroups`). PK writer_hostgroup, UNIQUE reader_hostgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicationHostgroupRow {
    /// Hostgroup of the writable server.
    pub writer_hostgroup: u32,
    /// Hostgroup of the read-only servers.
    pub reader_hostgroup: u32,
    /// Which variable says "read only" (default `read_only`), one of [`CHECK_TYPES`].
    pub check_type: String,
    /// Free text.
    pub comment: String,
}

impl ReplicationHostgroupRow {
    /// A pair with the default check type.
    pub fn new(writer_hostgroup: u32, reader_hostgroup: u32) -> Self {
        ReplicationHostgroupRow {
            writer_hostgroup,
            reader_hostgroup,
            check_type: "read_only".to_string(),
            comment: String::new(),
        }
    }
}

/// Every configuration table: what a file, the memory layer or the disk layer holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigTables {
    /// `mysql_servers`.
    pub mysql_servers: Vec<ServerRow>,
    /// `mysql_users`.
    pub mysql_users: Vec<UserRow>,
    /// `mysql_query_rules`.
    pub mysql_query_rules: Vec<QueryRuleRow>,
    /// `mysql_replication_hostgroups`.
    pub mysql_replication_hostgroups: Vec<ReplicationHostgroupRow>,
    /// `mysql-*` rows of `global_variables`.
    pub mysql_variables: Variables,
    /// `admin-*` rows of `global_variables`.
    pub admin_variables: Variables,
}

impl Default for ConfigTables {
    /// Empty tables and default variables.
    fn default() -> Self {
        ConfigTables {
            mysql_servers: Vec::new(),
            mysql_users: Vec::new(),
            mysql_query_rules: Vec::new(),
            mysql_replication_hostgroups: Vec::new(),
            mysql_variables: Variables::mysql_defaults(),
            admin_variables: Variables::admin_defaults(),
        }
    }
}
