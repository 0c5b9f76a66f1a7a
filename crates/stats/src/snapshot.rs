//! Plain-data copies of every stats table's rows, taken at one moment.

/// Everything the `stats_mysql_*` tables show, copied at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// `stats_mysql_global`: (Variable_Name, Variable_Value), values as decimal strings.
    pub global: Vec<(String, String)>,
    /// `stats_mysql_processlist`: one row per client session.
    pub processlist: Vec<ProcessRow>,
    /// `stats_mysql_commands_counters`: one row per command, zero rows included.
    pub commands: Vec<CommandRow>,
    /// `stats_mysql_users`: one row per frontend user of the runtime configuration.
    pub users: Vec<UserRow>,
    /// `stats_mysql_errors`: one row per distinct error key.
    pub errors: Vec<ErrorRow>,
    /// `stats_mysql_connection_pool`: one row per server in each hostgroup.
    pub connection_pool: Vec<PoolRow>,
    /// `stats_mysql_query_digest`: one row per (hostgroup, schema, user, client address,
    /// digest).
    pub digests: Vec<DigestRow>,
    /// `stats_mysql_query_rules`: one row per runtime query rule.
    pub rules: Vec<RuleRow>,
    /// The `monitor` schema's log tables, all checks together.
    pub monitor: Vec<crate::MonitorRow>,
}

/// A row of `stats_mysql_processlist`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessRow {
    /// Worker thread (event loop) index the session runs on (`ThreadID`).
    pub thread_id: u32,
    /// weir's connection id, the thread id the client sees (`SessionID`).
    pub session_id: u32,
    /// Authenticated user ('' during the handshake).
    pub user: String,
    /// Current schema ('' when none).
    pub db: String,
    /// Client address.
    pub cli_host: String,
    /// Client port (0 for Unix sockets).
    pub cli_port: u16,
    /// Hostgroup of the backend connection in use or held; else the session's hostgroup
    /// while a command runs; `None` for an idle session holding nothing.
    pub hostgroup: Option<u32>,
    /// Local address of the backend connection ('' when unknown).
    pub l_srv_host: String,
    /// Local port of the backend connection (0 when unknown).
    pub l_srv_port: u16,
    /// Backend server in use or held ('' when none).
    pub srv_host: String,
    /// Its port (0 when none).
    pub srv_port: u16,
    /// What the session does: "Sleep", "Query", "Execute", "Prepare", "Connect", ...
    pub command: String,
    /// Milliseconds since the current command started, or since the last one ended when idle.
    pub time_ms: u64,
    /// The statement being run (truncated), `None` when idle.
    pub info: Option<String>,
}

/// A row of `stats_mysql_commands_counters`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommandRow {
    /// Command name (`SELECT`, `INSERT`, ... `UNKNOWN`).
    pub command: String,
    /// Sum of latencies, in microseconds.
    pub total_time_us: u64,
    /// Number of statements.
    pub total_cnt: u64,
    /// Statements per latency bucket: each counts latencies above the previous bound and at
    /// most its own, as ProxySQL does (not cumulative). Bounds: [`BUCKET_BOUNDS_US`], then
    /// everything above 10 s. Column names: [`BUCKET_NAMES`].
    ///
    /// [`BUCKET_BOUNDS_US`]: crate::BUCKET_BOUNDS_US
    /// [`BUCKET_NAMES`]: crate::BUCKET_NAMES
    pub buckets: [u64; 12],
}

/// A row of `stats_mysql_users`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserRow {
    /// Frontend user.
    pub username: String,
    /// Client connections logged in as this user now.
    pub frontend_connections: u64,
    /// Its configured `max_connections`.
    pub frontend_max_connections: u64,
}

/// A row of `stats_mysql_errors`: errors grouped by where they happened and their code.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorRow {
    /// Hostgroup of the backend (or the one the session tried to reach).
    pub hostgroup: u32,
    /// Backend host ('' when no server could be picked).
    pub hostname: String,
    /// Backend port.
    pub port: u16,
    /// Client user.
    pub username: String,
    /// Client address.
    pub client_address: String,
    /// Schema the session was in.
    pub schemaname: String,
    /// MySQL error code.
    pub errno: u16,
    /// How many times.
    pub count_star: u64,
    /// First occurrence, unix seconds.
    pub first_seen: u64,
    /// Last occurrence, unix seconds.
    pub last_seen: u64,
    /// Message of the last occurrence.
    pub last_error: String,
}

/// A row of `stats_mysql_connection_pool`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolRow {
    /// Hostgroup.
    pub hostgroup: u32,
    /// Server host.
    pub srv_host: String,
    /// Server port.
    pub srv_port: u16,
    /// ONLINE, SHUNNED, OFFLINE_SOFT or OFFLINE_HARD.
    pub status: String,
    /// Connections checked out now (`ConnUsed`).
    pub conn_used: u64,
    /// Idle connections (`ConnFree`).
    pub conn_free: u64,
    /// Successful connects (`ConnOK`).
    pub conn_ok: u64,
    /// Failed connects (`ConnERR`).
    pub conn_err: u64,
    /// Highest `conn_used` seen (`MaxConnUsed`).
    pub max_conn_used: u64,
    /// Statements sent (`Queries`).
    pub queries: u64,
    /// Bytes sent to the server (`Bytes_data_sent`).
    pub bytes_sent: u64,
    /// Bytes received from it (`Bytes_data_recv`).
    pub bytes_recv: u64,
    /// Last measured ping, in microseconds (0 until the monitor measures it).
    pub latency_us: u64,
}

/// A row of `stats_mysql_query_digest`: executions grouped by where they ran, who ran them
/// and their digest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DigestRow {
    /// Hostgroup the statement was sent to; -1 when the query cache answered.
    pub hostgroup: i64,
    /// Schema the session was in ('' when none).
    pub schemaname: String,
    /// Client user.
    pub username: String,
    /// Client address; '' unless mysql-query_digests_track_hostname.
    pub client_address: String,
    /// The digest hash (shown as `0x` + 16 hex digits: `weir_sql::format_digest`).
    pub digest: u64,
    /// Normalized text of the first statement seen with this key (bytes that are not UTF-8
    /// shown as U+FFFD).
    pub digest_text: String,
    /// Executions.
    pub count_star: u64,
    /// First execution, unix seconds.
    pub first_seen: u64,
    /// Last execution, unix seconds.
    pub last_seen: u64,
    /// Sum of execution times, microseconds.
    pub sum_time: u64,
    /// Shortest execution, microseconds.
    pub min_time: u64,
    /// Longest execution, microseconds.
    pub max_time: u64,
    /// Sum of rows affected.
    pub sum_rows_affected: u64,
    /// Sum of rows sent to the client.
    pub sum_rows_sent: u64,
}

/// A row of `stats_mysql_query_rules`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleRow {
    /// The rule's `rule_id`.
    pub rule_id: u32,
    /// Statements the rule matched.
    pub hits: u64,
    /// Time spent evaluating the rule, nanoseconds (weir; ProxySQL issue #966).
    pub time_ns: u64,
}
