//! The DDL of every table in the four schemas (`main`, `disk`, `stats`, `monitor`), and the
//! code that creates them and fills `mysql_collations`.
//!
//! Column names, defaults and CHECKs follow ProxySQL 2.x's documentation so that DBAs' scripts
//! work unchanged. CHECK expressions are written out in full (`port >= 0 AND port <= 65535`)
//! because SQLite's refusal message quotes the expression: it then names the column and the
//! allowed range.

use super::error::StoreError;
use rusqlite::Connection;
use weir_sql::COLLATIONS;

/// Placeholder for the schema-qualified table name in the DDL templates below.
const T: &str = "{t}";

const MYSQL_SERVERS: &str = "CREATE TABLE {t} (
    hostgroup_id INT NOT NULL DEFAULT 0 CHECK (hostgroup_id >= 0),
    hostname VARCHAR NOT NULL,
    port INT NOT NULL DEFAULT 3306 CHECK (port >= 0 AND port <= 65535),
    gtid_port INT NOT NULL DEFAULT 0 CHECK (gtid_port >= 0 AND gtid_port <= 65535),
    status VARCHAR NOT NULL DEFAULT 'ONLINE'
        CHECK (UPPER(status) IN ('ONLINE', 'SHUNNED', 'OFFLINE_SOFT', 'OFFLINE_HARD')),
    weight INT NOT NULL DEFAULT 1 CHECK (weight >= 0 AND weight <= 10000000),
    compression INT NOT NULL DEFAULT 0 CHECK (compression >= 0 AND compression <= 102400),
    max_connections INT NOT NULL DEFAULT 1000 CHECK (max_connections >= 0),
    max_replication_lag INT NOT NULL DEFAULT 0
        CHECK (max_replication_lag >= 0 AND max_replication_lag <= 126144000),
    use_ssl INT NOT NULL DEFAULT 0 CHECK (use_ssl IN (0, 1)),
    max_latency_ms INT UNSIGNED NOT NULL DEFAULT 0 CHECK (max_latency_ms >= 0),
    comment VARCHAR NOT NULL DEFAULT '',
    PRIMARY KEY (hostgroup_id, hostname, port)
)";

// `password` stays nullable as in ProxySQL (NULL reads as an empty password); `attributes`
// must be JSON or empty, as in ProxySQL 2.x.
const MYSQL_USERS: &str = "CREATE TABLE {t} (
    username VARCHAR NOT NULL,
    password VARCHAR,
    active INT NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
    use_ssl INT NOT NULL DEFAULT 0 CHECK (use_ssl IN (0, 1)),
    default_hostgroup INT NOT NULL DEFAULT 0 CHECK (default_hostgroup >= 0),
    default_schema VARCHAR,
    schema_locked INT NOT NULL DEFAULT 0 CHECK (schema_locked IN (0, 1)),
    transaction_persistent INT NOT NULL DEFAULT 1 CHECK (transaction_persistent IN (0, 1)),
    fast_forward INT NOT NULL DEFAULT 0 CHECK (fast_forward IN (0, 1)),
    backend INT NOT NULL DEFAULT 1 CHECK (backend IN (0, 1)),
    frontend INT NOT NULL DEFAULT 1 CHECK (frontend IN (0, 1)),
    max_connections INT NOT NULL DEFAULT 10000 CHECK (max_connections >= 0),
    attributes VARCHAR NOT NULL DEFAULT '' CHECK (attributes = '' OR JSON_VALID(attributes)),
    comment VARCHAR NOT NULL DEFAULT '',
    PRIMARY KEY (username, backend),
    UNIQUE (username, frontend)
)";

// `active` defaults to 0 on purpose (ProxySQL does the same): a rule typed by hand does not
// route traffic until it is switched on. `re_modifiers` is NOT NULL because the typed row has
// no "unset" for it: refusing NULL at INSERT beats failing later at LOAD. `cache_ttl` must be
// > 0, as in ProxySQL and the config file's validation (0 would mean "cache for no time").
const MYSQL_QUERY_RULES: &str = "CREATE TABLE {t} (
    rule_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    active INT NOT NULL DEFAULT 0 CHECK (active IN (0, 1)),
    username VARCHAR,
    schemaname VARCHAR,
    flagIN INT NOT NULL DEFAULT 0,
    client_addr VARCHAR,
    proxy_addr VARCHAR,
    proxy_port INT CHECK (proxy_port IS NULL OR (proxy_port >= 0 AND proxy_port <= 65535)),
    digest VARCHAR,
    match_digest VARCHAR,
    match_pattern VARCHAR,
    negate_match_pattern INT NOT NULL DEFAULT 0 CHECK (negate_match_pattern IN (0, 1)),
    re_modifiers VARCHAR NOT NULL DEFAULT 'CASELESS',
    flagOUT INT,
    replace_pattern VARCHAR,
    destination_hostgroup INT DEFAULT NULL
        CHECK (destination_hostgroup IS NULL OR destination_hostgroup >= 0),
    cache_ttl INT CHECK (cache_ttl IS NULL OR cache_ttl > 0),
    cache_empty_result INT CHECK (cache_empty_result IS NULL OR cache_empty_result IN (0, 1)),
    cache_timeout INT CHECK (cache_timeout IS NULL OR cache_timeout >= 0),
    reconnect INT CHECK (reconnect IS NULL OR reconnect IN (0, 1)),
    timeout INT UNSIGNED CHECK (timeout IS NULL OR timeout >= 0),
    retries INT CHECK (retries IS NULL OR (retries >= 0 AND retries <= 1000)),
    delay INT UNSIGNED CHECK (delay IS NULL OR delay >= 0),
    next_query_flagIN INT,
    mirror_flagOUT INT,
    mirror_hostgroup INT CHECK (mirror_hostgroup IS NULL OR mirror_hostgroup >= 0),
    error_msg VARCHAR,
    OK_msg VARCHAR,
    sticky_conn INT CHECK (sticky_conn IS NULL OR sticky_conn IN (0, 1)),
    multiplex INT CHECK (multiplex IS NULL OR multiplex IN (0, 1, 2)),
    gtid_from_hostgroup INT CHECK (gtid_from_hostgroup IS NULL OR gtid_from_hostgroup >= 0),
    log INT CHECK (log IS NULL OR log IN (0, 1)),
    apply INT NOT NULL DEFAULT 0 CHECK (apply IN (0, 1)),
    attributes VARCHAR NOT NULL DEFAULT '' CHECK (attributes = '' OR JSON_VALID(attributes)),
    comment VARCHAR
)";

const GLOBAL_VARIABLES: &str = "CREATE TABLE {t} (
    variable_name VARCHAR NOT NULL PRIMARY KEY,
    variable_value VARCHAR NOT NULL
)";

const MYSQL_COLLATIONS: &str = "CREATE TABLE {t} (
    Id INT NOT NULL PRIMARY KEY,
    Collation_name VARCHAR NOT NULL,
    Charset VARCHAR NOT NULL,
    `Default` VARCHAR NOT NULL
)";

/// `mysql_replication_hostgroups`, with the check_type list taken from the config crate so
/// both refuse the same values.
fn mysql_replication_hostgroups() -> String {
    let check_types = weir_config::CHECK_TYPES
        .iter()
        .map(|c| format!("'{c}'"))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "CREATE TABLE {T} (
    writer_hostgroup INT NOT NULL PRIMARY KEY CHECK (writer_hostgroup >= 0),
    reader_hostgroup INT NOT NULL UNIQUE
        CHECK (reader_hostgroup >= 0 AND reader_hostgroup <> writer_hostgroup),
    check_type VARCHAR NOT NULL DEFAULT 'read_only' CHECK (check_type IN ({check_types})),
    comment VARCHAR NOT NULL DEFAULT ''
)"
    )
}

const STATS_MYSQL_GLOBAL: &str = "CREATE TABLE {t} (
    Variable_Name VARCHAR NOT NULL PRIMARY KEY,
    Variable_Value VARCHAR NOT NULL
)";

const STATS_MYSQL_PROCESSLIST: &str = "CREATE TABLE {t} (
    ThreadID INT NOT NULL,
    SessionID INTEGER PRIMARY KEY,
    user VARCHAR,
    db VARCHAR,
    cli_host VARCHAR,
    cli_port INT,
    hostgroup INT,
    l_srv_host VARCHAR,
    l_srv_port INT,
    srv_host VARCHAR,
    srv_port INT,
    command VARCHAR,
    time_ms INT NOT NULL,
    info VARCHAR,
    status_flags INT,
    extended_info VARCHAR
)";

const STATS_MYSQL_COMMANDS_COUNTERS: &str = "CREATE TABLE {t} (
    Command VARCHAR NOT NULL PRIMARY KEY,
    Total_Time_us INT NOT NULL,
    Total_cnt INT NOT NULL,
    cnt_100us INT NOT NULL,
    cnt_500us INT NOT NULL,
    cnt_1ms INT NOT NULL,
    cnt_5ms INT NOT NULL,
    cnt_10ms INT NOT NULL,
    cnt_50ms INT NOT NULL,
    cnt_100ms INT NOT NULL,
    cnt_500ms INT NOT NULL,
    cnt_1s INT NOT NULL,
    cnt_5s INT NOT NULL,
    cnt_10s INT NOT NULL,
    cnt_INFs INT NOT NULL
)";

const STATS_MYSQL_USERS: &str = "CREATE TABLE {t} (
    username VARCHAR PRIMARY KEY,
    frontend_connections INT NOT NULL,
    frontend_max_connections INT NOT NULL
)";

const STATS_MYSQL_ERRORS: &str = "CREATE TABLE {t} (
    hostgroup INT NOT NULL,
    hostname VARCHAR NOT NULL,
    port INT NOT NULL,
    username VARCHAR NOT NULL,
    client_address VARCHAR NOT NULL,
    schemaname VARCHAR NOT NULL,
    errno INT NOT NULL,
    count_star INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    last_error VARCHAR NOT NULL DEFAULT '',
    PRIMARY KEY (hostgroup, hostname, port, username, client_address, schemaname, errno)
)";

const STATS_MYSQL_CONNECTION_POOL: &str = "CREATE TABLE {t} (
    hostgroup INT,
    srv_host VARCHAR,
    srv_port INT,
    status VARCHAR,
    ConnUsed INT,
    ConnFree INT,
    ConnOK INT,
    ConnERR INT,
    MaxConnUsed INT,
    Queries INT,
    Queries_GTID_sync INT,
    Bytes_data_sent INT,
    Bytes_data_recv INT,
    Latency_us INT
)";

const STATS_MYSQL_QUERY_DIGEST: &str = "CREATE TABLE {t} (
    hostgroup INT,
    schemaname VARCHAR NOT NULL,
    username VARCHAR NOT NULL,
    client_address VARCHAR NOT NULL,
    digest VARCHAR NOT NULL,
    digest_text VARCHAR NOT NULL,
    count_star INTEGER NOT NULL,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    sum_time INTEGER NOT NULL,
    min_time INTEGER NOT NULL,
    max_time INTEGER NOT NULL,
    sum_rows_affected INTEGER NOT NULL,
    sum_rows_sent INTEGER NOT NULL,
    PRIMARY KEY (hostgroup, schemaname, username, client_address, digest)
)";

const STATS_MYSQL_QUERY_RULES: &str = "CREATE TABLE {t} (
    rule_id INTEGER PRIMARY KEY,
    hits INT NOT NULL,
    time_ns INT NOT NULL DEFAULT 0
)";

// The monitor logs carry both column spellings: ProxySQL 2.x's `*_us` names, stored, and the
// 1.x names (`time_start`, `connect_success_time`...) as generated columns, because older
// runbooks still query those.
const MONITOR_CONNECT_LOG: &str = "CREATE TABLE {t} (
    hostname VARCHAR NOT NULL,
    port INT NOT NULL DEFAULT 3306,
    time_start_us INT NOT NULL DEFAULT 0,
    connect_success_time_us INT DEFAULT 0,
    connect_error VARCHAR,
    time_start INT GENERATED ALWAYS AS (time_start_us) VIRTUAL,
    connect_success_time INT GENERATED ALWAYS AS (connect_success_time_us) VIRTUAL,
    PRIMARY KEY (hostname, port, time_start_us)
)";

const MONITOR_PING_LOG: &str = "CREATE TABLE {t} (
    hostname VARCHAR NOT NULL,
    port INT NOT NULL DEFAULT 3306,
    time_start_us INT NOT NULL DEFAULT 0,
    ping_success_time_us INT DEFAULT 0,
    ping_error VARCHAR,
    time_start INT GENERATED ALWAYS AS (time_start_us) VIRTUAL,
    ping_success_time INT GENERATED ALWAYS AS (ping_success_time_us) VIRTUAL,
    PRIMARY KEY (hostname, port, time_start_us)
)";

const MONITOR_READ_ONLY_LOG: &str = "CREATE TABLE {t} (
    hostname VARCHAR NOT NULL,
    port INT NOT NULL DEFAULT 3306,
    time_start_us INT NOT NULL DEFAULT 0,
    success_time_us INT DEFAULT 0,
    read_only INT DEFAULT 1,
    error VARCHAR,
    time_start INT GENERATED ALWAYS AS (time_start_us) VIRTUAL,
    success_time INT GENERATED ALWAYS AS (success_time_us) VIRTUAL,
    PRIMARY KEY (hostname, port, time_start_us)
)";

const MONITOR_REPLICATION_LAG_LOG: &str = "CREATE TABLE {t} (
    hostname VARCHAR NOT NULL,
    port INT NOT NULL DEFAULT 3306,
    time_start_us INT NOT NULL DEFAULT 0,
    success_time_us INT DEFAULT 0,
    repl_lag INT DEFAULT 0,
    error VARCHAR,
    time_start INT GENERATED ALWAYS AS (time_start_us) VIRTUAL,
    success_time INT GENERATED ALWAYS AS (success_time_us) VIRTUAL,
    PRIMARY KEY (hostname, port, time_start_us)
)";

/// `(name, DDL template)` of the config tables that exist in both `main` and `disk`.
fn config_tables() -> Vec<(&'static str, String)> {
    vec![
        ("mysql_servers", MYSQL_SERVERS.to_string()),
        ("mysql_users", MYSQL_USERS.to_string()),
        ("mysql_query_rules", MYSQL_QUERY_RULES.to_string()),
        (
            "mysql_replication_hostgroups",
            mysql_replication_hostgroups(),
        ),
        ("global_variables", GLOBAL_VARIABLES.to_string()),
        ("mysql_collations", MYSQL_COLLATIONS.to_string()),
    ]
}

/// Whether `name` is a table of the `stats` or `monitor` schema.
pub(super) fn is_stats_or_monitor_table(name: &str) -> bool {
    STATS_TABLES
        .iter()
        .chain(MONITOR_TABLES)
        .any(|(t, _)| t.eq_ignore_ascii_case(name))
}

/// `(name, DDL template)` of the `stats` schema.
const STATS_TABLES: &[(&str, &str)] = &[
    ("stats_mysql_global", STATS_MYSQL_GLOBAL),
    ("stats_mysql_processlist", STATS_MYSQL_PROCESSLIST),
    (
        "stats_mysql_commands_counters",
        STATS_MYSQL_COMMANDS_COUNTERS,
    ),
    ("stats_mysql_users", STATS_MYSQL_USERS),
    ("stats_mysql_errors", STATS_MYSQL_ERRORS),
    ("stats_mysql_errors_reset", STATS_MYSQL_ERRORS),
    ("stats_mysql_connection_pool", STATS_MYSQL_CONNECTION_POOL),
    (
        "stats_mysql_connection_pool_reset",
        STATS_MYSQL_CONNECTION_POOL,
    ),
    ("stats_mysql_query_digest", STATS_MYSQL_QUERY_DIGEST),
    ("stats_mysql_query_digest_reset", STATS_MYSQL_QUERY_DIGEST),
    ("stats_mysql_query_rules", STATS_MYSQL_QUERY_RULES),
];

/// `(name, DDL template)` of the `monitor` schema.
const MONITOR_TABLES: &[(&str, &str)] = &[
    ("mysql_server_connect_log", MONITOR_CONNECT_LOG),
    ("mysql_server_ping_log", MONITOR_PING_LOG),
    ("mysql_server_read_only_log", MONITOR_READ_ONLY_LOG),
    (
        "mysql_server_replication_lag_log",
        MONITOR_REPLICATION_LAG_LOG,
    ),
];

/// Config tables mirrored as `main.runtime_<name>` (collations have no runtime copy).
const RUNTIME_MIRRORED: &[&str] = &[
    "mysql_servers",
    "mysql_users",
    "mysql_query_rules",
    "mysql_replication_hostgroups",
    "global_variables",
];

/// Creates `schema.name` from `template` unless it exists. The existence test (rather than
/// `IF NOT EXISTS`) keeps the stored DDL, which `SHOW CREATE TABLE` prints, a plain
/// `CREATE TABLE`.
fn create(conn: &Connection, schema: &str, name: &str, template: &str) -> Result<(), StoreError> {
    let exists: bool = conn
        .query_row(
            &format!(
                "SELECT EXISTS (SELECT 1 FROM {schema}.sqlite_master \
                 WHERE type = 'table' AND name = ?1)"
            ),
            [name],
            |r| r.get(0),
        )
        .map_err(StoreError::sqlite(format!("looking up {schema}.{name}")))?;
    if exists {
        return Ok(());
    }
    let ddl = template.replace(T, &format!("{schema}.{name}"));
    conn.execute_batch(&ddl)
        .map_err(StoreError::sqlite(format!("creating {schema}.{name}")))
}

/// Creates every table of every schema that does not exist yet and (re)fills the collations.
/// The schemas must be attached already.
pub(super) fn create_all(conn: &Connection) -> Result<(), StoreError> {
    for (name, ddl) in config_tables() {
        create(conn, "main", name, &ddl)?;
        create(conn, "disk", name, &ddl)?;
    }
    for (name, ddl) in config_tables() {
        if RUNTIME_MIRRORED.contains(&name) {
            create(conn, "main", &format!("runtime_{name}"), &ddl)?;
        }
    }
    for (name, ddl) in STATS_TABLES {
        create(conn, "stats", name, ddl)?;
    }
    for (name, ddl) in MONITOR_TABLES {
        create(conn, "monitor", name, ddl)?;
    }
    fill_collations(conn, "main")?;
    fill_collations(conn, "disk")
}

/// Replaces the rows of `schema.mysql_collations` with [`COLLATIONS`], in one transaction.
/// Rewriting the disk copy at every start keeps it in step with the list compiled in.
fn fill_collations(conn: &Connection, schema: &str) -> Result<(), StoreError> {
    let context = format!("filling {schema}.mysql_collations");
    let tx = conn
        .unchecked_transaction()
        .map_err(StoreError::sqlite(context.as_str()))?;
    tx.execute(&format!("DELETE FROM {schema}.mysql_collations"), [])
        .map_err(StoreError::sqlite(context.as_str()))?;
    {
        let mut insert = tx
            .prepare(&format!(
                "INSERT INTO {schema}.mysql_collations VALUES (?1, ?2, ?3, ?4)"
            ))
            .map_err(StoreError::sqlite(context.as_str()))?;
        for (id, name, charset, default) in COLLATIONS {
            let default = if *default { "Yes" } else { "" };
            insert
                .execute(rusqlite::params![id, name, charset, default])
                .map_err(StoreError::sqlite(context.as_str()))?;
        }
    }
    tx.commit().map_err(StoreError::sqlite(context))
}
