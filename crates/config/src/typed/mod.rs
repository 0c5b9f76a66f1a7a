//! Typed views of the variables, built once per load and read on the hot path:
//! durations instead of millisecond integers, parsed listener and credential lists.

mod lists;
mod reader;
#[cfg(test)]
mod tests;

pub use lists::{parse_credentials, parse_interfaces, ListenAddr};

use crate::error::ConfigError;
use crate::vars::Variables;
use reader::Reader;
use std::time::Duration;

/// The `mysql-*` variables, typed. Field names follow the variables; where a variable name
/// carries its unit (`_ms`, `_msec`, `_sec`, `_MB`) the field drops it and uses `Duration`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MysqlVariables {
    /// `mysql-threads`.
    pub threads: usize,
    /// `mysql-interfaces`.
    pub interfaces: Vec<ListenAddr>,
    /// `mysql-max_connections`.
    pub max_connections: u32,
    /// `mysql-server_version`.
    pub server_version: String,
    /// `mysql-have_compress`.
    pub have_compress: bool,
    /// `mysql-have_ssl`.
    pub have_ssl: bool,
    /// `mysql-connect_timeout_client`.
    pub connect_timeout_client: Duration,
    /// `mysql-use_tcp_keepalive`.
    pub use_tcp_keepalive: bool,
    /// `mysql-tcp_keepalive_time` (zero: the system's default).
    pub tcp_keepalive_time: Duration,
    /// `mysql-wait_timeout`.
    pub wait_timeout: Duration,
    /// `mysql-max_transaction_idle_time`.
    pub max_transaction_idle_time: Duration,
    /// `mysql-max_transaction_time`.
    pub max_transaction_time: Duration,
    /// `mysql-client_found_rows`.
    pub client_found_rows: bool,
    /// `mysql-client_multi_statements`.
    pub client_multi_statements: bool,
    /// `mysql-enable_client_deprecate_eof`.
    pub enable_client_deprecate_eof: bool,
    /// `mysql-enable_server_deprecate_eof`.
    pub enable_server_deprecate_eof: bool,
    /// `mysql-enable_load_data_local_infile`.
    pub enable_load_data_local_infile: bool,
    /// `mysql-kill_backend_connection_when_disconnect`.
    pub kill_backend_connection_when_disconnect: bool,
    /// `mysql-max_allowed_packet`, bytes.
    pub max_allowed_packet: u32,
    /// `mysql-threshold_query_length`, bytes.
    pub threshold_query_length: u32,
    /// `mysql-threshold_resultset_size`, bytes.
    pub threshold_resultset_size: u32,
    /// `mysql-default_charset`.
    pub default_charset: String,
    /// `mysql-default_collation_connection`.
    pub default_collation_connection: String,
    /// `mysql-default_schema`.
    pub default_schema: String,
    /// `mysql-default_sql_mode`; `None` = the backend's.
    pub default_sql_mode: Option<String>,
    /// `mysql-default_time_zone`.
    pub default_time_zone: String,
    /// `mysql-default_isolation_level`.
    pub default_isolation_level: String,
    /// `mysql-init_connect`; `None` = nothing.
    pub init_connect: Option<String>,
    /// `mysql-autocommit_false_is_transaction`.
    pub autocommit_false_is_transaction: bool,
    /// `mysql-autocommit_false_not_reusable`.
    pub autocommit_false_not_reusable: bool,
    /// `mysql-enforce_autocommit_on_reads`.
    pub enforce_autocommit_on_reads: bool,
    /// `mysql-keep_multiplexing_variables`, split on `,`, lower-cased.
    pub keep_multiplexing_variables: Vec<String>,
    /// `mysql-connect_timeout_server`.
    pub connect_timeout_server: Duration,
    /// `mysql-connect_timeout_server_max`.
    pub connect_timeout_server_max: Duration,
    /// `mysql-connect_retries_on_failure`.
    pub connect_retries_on_failure: u32,
    /// `mysql-connect_retries_delay`.
    pub connect_retries_delay: Duration,
    /// `mysql-query_retries_on_failure`.
    pub query_retries_on_failure: u32,
    /// `mysql-shun_on_failures`.
    pub shun_on_failures: u32,
    /// `mysql-shun_recovery_time_sec`.
    pub shun_recovery_time: Duration,
    /// `mysql-multiplexing`.
    pub multiplexing: bool,
    /// `mysql-auto_increment_delay_multiplex`, statements.
    pub auto_increment_delay_multiplex: u32,
    /// `mysql-auto_increment_delay_multiplex_timeout_ms`; `None` = no limit.
    pub auto_increment_delay_multiplex_timeout: Option<Duration>,
    /// `mysql-connection_delay_multiplex_ms`.
    pub connection_delay_multiplex: Duration,
    /// `mysql-connection_max_age_ms`; `None` = no limit.
    pub connection_max_age: Option<Duration>,
    /// `mysql-free_connections_pct`.
    pub free_connections_pct: u32,
    /// `mysql-max_stmts_per_connection`.
    pub max_stmts_per_connection: u32,
    /// `mysql-max_stmts_cache`: prepared statements the global registry keeps before it
    /// forgets those no session holds.
    pub max_stmts_cache: u32,
    /// `mysql-ping_interval_server_msec`; zero = never.
    pub ping_interval_server: Duration,
    /// `mysql-ping_timeout_server`.
    pub ping_timeout_server: Duration,
    /// `mysql-default_query_delay`.
    pub default_query_delay: Duration,
    /// `mysql-default_query_timeout`.
    pub default_query_timeout: Duration,
    /// `mysql-long_query_time`.
    pub long_query_time: Duration,
    /// `mysql-verbose_query_error`.
    pub verbose_query_error: bool,
    /// `mysql-shutdown_grace_period` (weir).
    pub shutdown_grace_period: Duration,
    /// `mysql-busy_poll_us` (weir): how long a worker keeps polling after a client command.
    pub busy_poll: Duration,
    /// `mysql-pipeline_depth` (weir): most statements in flight on one backend connection
    /// (1 = no pipelining).
    pub pipeline_depth: u32,
    /// `mysql-pipeline_max_wait_ms` (weir): how long a pipelined statement waits for its turn.
    pub pipeline_max_wait: Duration,
    /// `mysql-query_digests`.
    pub query_digests: bool,
    /// `mysql-query_digests_lowercase`.
    pub query_digests_lowercase: bool,
    /// `mysql-query_digests_max_digest_length`, bytes.
    pub query_digests_max_digest_length: u32,
    /// `mysql-query_digests_max_query_length`, bytes.
    pub query_digests_max_query_length: u32,
    /// `mysql-query_digests_no_digits`.
    pub query_digests_no_digits: bool,
    /// `mysql-query_digests_replace_null`.
    pub query_digests_replace_null: bool,
    /// `mysql-query_digests_keep_comment`.
    pub query_digests_keep_comment: bool,
    /// `mysql-query_digests_grouping_limit`.
    pub query_digests_grouping_limit: u32,
    /// `mysql-query_digests_max_entries`: bound of the digest table (weir).
    pub query_digests_max_entries: u32,
    /// `mysql-query_digests_track_hostname`.
    pub query_digests_track_hostname: bool,
    /// `mysql-query_processor_iterations`: restarts of a flag chain allowed per query.
    pub query_processor_iterations: u32,
    /// `mysql-commands_stats`.
    pub commands_stats: bool,
    /// `mysql-stats_time_backend_query`.
    pub stats_time_backend_query: bool,
    /// `mysql-stats_time_query_processor`.
    pub stats_time_query_processor: bool,
    /// `mysql-query_cache_size_MB`, MiB.
    pub query_cache_size_mb: u32,
    /// `mysql-query_cache_stores_empty_result`.
    pub query_cache_stores_empty_result: bool,
    /// `mysql-eventslog_filename`; `None` = off.
    pub eventslog_filename: Option<String>,
    /// `mysql-monitor_enabled`.
    pub monitor_enabled: bool,
    /// `mysql-monitor_username`.
    pub monitor_username: String,
    /// `mysql-monitor_password`.
    pub monitor_password: String,
    /// `mysql-monitor_history`.
    pub monitor_history: Duration,
    /// `mysql-monitor_connect_interval`.
    pub monitor_connect_interval: Duration,
    /// `mysql-monitor_connect_timeout`.
    pub monitor_connect_timeout: Duration,
    /// `mysql-monitor_ping_interval`.
    pub monitor_ping_interval: Duration,
    /// `mysql-monitor_ping_timeout`.
    pub monitor_ping_timeout: Duration,
    /// `mysql-monitor_ping_max_failures`.
    pub monitor_ping_max_failures: u32,
    /// `mysql-monitor_read_only_interval`.
    pub monitor_read_only_interval: Duration,
    /// `mysql-monitor_read_only_timeout`.
    pub monitor_read_only_timeout: Duration,
    /// `mysql-monitor_read_only_max_timeout_count`.
    pub monitor_read_only_max_timeout_count: u32,
    /// `mysql-monitor_replication_lag_interval`.
    pub monitor_replication_lag_interval: Duration,
    /// `mysql-monitor_replication_lag_timeout`.
    pub monitor_replication_lag_timeout: Duration,
    /// `mysql-monitor_replication_lag_count`.
    pub monitor_replication_lag_count: u32,
    /// `mysql-monitor_slave_lag_when_null`, seconds.
    pub monitor_slave_lag_when_null: u32,
    /// `mysql-monitor_writer_is_also_reader`.
    pub monitor_writer_is_also_reader: bool,
}

impl MysqlVariables {
    /// Builds the typed view; every unusable value is reported as `mysql_variables.<name>`.
    pub fn from_variables(v: &Variables) -> Result<Self, Vec<ConfigError>> {
        let mut r = Reader::new(v, "mysql_variables");
        let threads = r.usize("threads");
        if threads == 0 {
            r.err("threads", "must be at least 1");
        }
        let value = MysqlVariables {
            threads,
            interfaces: r.ifaces("interfaces"),
            max_connections: r.u32("max_connections"),
            server_version: r.string("server_version"),
            have_compress: r.bool("have_compress"),
            have_ssl: r.bool("have_ssl"),
            connect_timeout_client: r.ms("connect_timeout_client"),
            use_tcp_keepalive: r.bool("use_tcp_keepalive"),
            tcp_keepalive_time: r.secs("tcp_keepalive_time"),
            wait_timeout: r.ms("wait_timeout"),
            max_transaction_idle_time: r.ms("max_transaction_idle_time"),
            max_transaction_time: r.ms("max_transaction_time"),
            client_found_rows: r.bool("client_found_rows"),
            client_multi_statements: r.bool("client_multi_statements"),
            enable_client_deprecate_eof: r.bool("enable_client_deprecate_eof"),
            enable_server_deprecate_eof: r.bool("enable_server_deprecate_eof"),
            enable_load_data_local_infile: r.bool("enable_load_data_local_infile"),
            kill_backend_connection_when_disconnect: r
                .bool("kill_backend_connection_when_disconnect"),
            max_allowed_packet: r.u32("max_allowed_packet"),
            threshold_query_length: r.u32("threshold_query_length"),
            threshold_resultset_size: r.u32("threshold_resultset_size"),
            default_charset: r.string("default_charset"),
            default_collation_connection: r.string("default_collation_connection"),
            default_schema: r.string("default_schema"),
            default_sql_mode: r.opt_string("default_sql_mode"),
            default_time_zone: r.string("default_time_zone"),
            default_isolation_level: r.string("default_isolation_level"),
            init_connect: r.opt_string("init_connect"),
            autocommit_false_is_transaction: r.bool("autocommit_false_is_transaction"),
            autocommit_false_not_reusable: r.bool("autocommit_false_not_reusable"),
            enforce_autocommit_on_reads: r.bool("enforce_autocommit_on_reads"),
            keep_multiplexing_variables: r
                .string("keep_multiplexing_variables")
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect(),
            connect_timeout_server: r.ms("connect_timeout_server"),
            connect_timeout_server_max: r.ms("connect_timeout_server_max"),
            connect_retries_on_failure: r.u32("connect_retries_on_failure"),
            connect_retries_delay: r.ms("connect_retries_delay"),
            query_retries_on_failure: r.u32("query_retries_on_failure"),
            shun_on_failures: r.u32("shun_on_failures"),
            shun_recovery_time: r.secs("shun_recovery_time_sec"),
            multiplexing: r.bool("multiplexing"),
            auto_increment_delay_multiplex: r.u32("auto_increment_delay_multiplex"),
            auto_increment_delay_multiplex_timeout: r
                .opt_ms("auto_increment_delay_multiplex_timeout_ms"),
            connection_delay_multiplex: r.ms("connection_delay_multiplex_ms"),
            connection_max_age: r.opt_ms("connection_max_age_ms"),
            free_connections_pct: r.u32("free_connections_pct"),
            max_stmts_per_connection: r.u32("max_stmts_per_connection"),
            max_stmts_cache: r.u32("max_stmts_cache"),
            ping_interval_server: r.ms("ping_interval_server_msec"),
            ping_timeout_server: r.ms("ping_timeout_server"),
            default_query_delay: r.ms("default_query_delay"),
            default_query_timeout: r.ms("default_query_timeout"),
            long_query_time: r.ms("long_query_time"),
            verbose_query_error: r.bool("verbose_query_error"),
            shutdown_grace_period: r.ms("shutdown_grace_period"),
            busy_poll: Duration::from_micros(u64::from(r.u32("busy_poll_us"))),
            pipeline_depth: r.u32("pipeline_depth"),
            pipeline_max_wait: r.ms("pipeline_max_wait_ms"),
            query_digests: r.bool("query_digests"),
            query_digests_lowercase: r.bool("query_digests_lowercase"),
            query_digests_max_digest_length: r.u32("query_digests_max_digest_length"),
            query_digests_max_query_length: r.u32("query_digests_max_query_length"),
            query_digests_no_digits: r.bool("query_digests_no_digits"),
            query_digests_replace_null: r.bool("query_digests_replace_null"),
            query_digests_keep_comment: r.bool("query_digests_keep_comment"),
            query_digests_grouping_limit: r.u32("query_digests_grouping_limit"),
            query_digests_max_entries: r.u32("query_digests_max_entries"),
            query_digests_track_hostname: r.bool("query_digests_track_hostname"),
            query_processor_iterations: r.u32("query_processor_iterations"),
            commands_stats: r.bool("commands_stats"),
            stats_time_backend_query: r.bool("stats_time_backend_query"),
            stats_time_query_processor: r.bool("stats_time_query_processor"),
            query_cache_size_mb: r.u32("query_cache_size_MB"),
            query_cache_stores_empty_result: r.bool("query_cache_stores_empty_result"),
            eventslog_filename: r.opt_string("eventslog_filename"),
            monitor_enabled: r.bool("monitor_enabled"),
            monitor_username: r.string("monitor_username"),
            monitor_password: r.string("monitor_password"),
            monitor_history: r.ms("monitor_history"),
            monitor_connect_interval: r.ms("monitor_connect_interval"),
            monitor_connect_timeout: r.ms("monitor_connect_timeout"),
            monitor_ping_interval: r.ms("monitor_ping_interval"),
            monitor_ping_timeout: r.ms("monitor_ping_timeout"),
            monitor_ping_max_failures: r.u32("monitor_ping_max_failures"),
            monitor_read_only_interval: r.ms("monitor_read_only_interval"),
            monitor_read_only_timeout: r.ms("monitor_read_only_timeout"),
            monitor_read_only_max_timeout_count: r.u32("monitor_read_only_max_timeout_count"),
            monitor_replication_lag_interval: r.ms("monitor_replication_lag_interval"),
            monitor_replication_lag_timeout: r.ms("monitor_replication_lag_timeout"),
            monitor_replication_lag_count: r.u32("monitor_replication_lag_count"),
            monitor_slave_lag_when_null: r.u32("monitor_slave_lag_when_null"),
            monitor_writer_is_also_reader: r.bool("monitor_writer_is_also_reader"),
        };
        // Accepting it would pass every query a migrated ProxySQL configuration meant to block.
        if r.u32("firewall_whitelist_enabled") != 0 {
            r.err(
                "firewall_whitelist_enabled",
                "weir has no query firewall yet: with 1, queries would not be filtered. Set it \
                 to 0 (keep the whitelist rules elsewhere until weir's firewall exists)",
            );
        }
        r.finish(value)
    }
}

/// The `admin-*` variables, typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AdminVariables {
    /// `admin-admin_credentials`: read-write admin users.
    pub admin_credentials: Vec<(String, String)>,
    /// `admin-stats_credentials`: read-only admin users.
    pub stats_credentials: Vec<(String, String)>,
    /// `admin-mysql_ifaces`.
    pub mysql_ifaces: Vec<ListenAddr>,
    /// `admin-refresh_interval`.
    pub refresh_interval: Duration,
    /// `admin-read_only`.
    pub read_only: bool,
    /// `admin-version`.
    pub version: String,
    /// `admin-hash_passwords`.
    pub hash_passwords: bool,
    /// `admin-vacuum_stats`.
    pub vacuum_stats: bool,
    /// `admin-web_enabled`.
    pub web_enabled: bool,
    /// `admin-web_port`.
    pub web_port: u16,
    /// `admin-restapi_enabled`.
    pub restapi_enabled: bool,
    /// `admin-restapi_port`.
    pub restapi_port: u16,
    /// `admin-prometheus_memory_metrics_interval`.
    pub prometheus_memory_metrics_interval: Duration,
    /// `admin-cluster_username`; `None` = clustering off.
    pub cluster_username: Option<String>,
    /// `admin-cluster_password`.
    pub cluster_password: String,
}

impl AdminVariables {
    /// Builds the typed view; every unusable value is reported as `admin_variables.<name>`.
    pub fn from_variables(v: &Variables) -> Result<Self, Vec<ConfigError>> {
        let mut r = Reader::new(v, "admin_variables");
        let value = AdminVariables {
            admin_credentials: r.credentials("admin_credentials"),
            stats_credentials: r.credentials("stats_credentials"),
            mysql_ifaces: r.ifaces("mysql_ifaces"),
            refresh_interval: r.ms("refresh_interval"),
            read_only: r.bool("read_only"),
            version: r.string("version"),
            hash_passwords: r.bool("hash_passwords"),
            vacuum_stats: r.bool("vacuum_stats"),
            web_enabled: r.bool("web_enabled"),
            web_port: r.u16("web_port"),
            restapi_enabled: r.bool("restapi_enabled"),
            restapi_port: r.u16("restapi_port"),
            prometheus_memory_metrics_interval: r.secs("prometheus_memory_metrics_interval"),
            cluster_username: r.opt_string("cluster_username"),
            cluster_password: r.string("cluster_password"),
        };
        let creds_parsed = !r
            .errors
            .iter()
            .any(|e| e.path.ends_with(".admin_credentials"));
        if value.admin_credentials.is_empty() && creds_parsed {
            r.err("admin_credentials", "at least one admin user is required");
        }
        for (user, _) in &value.stats_credentials {
            if value.admin_credentials.iter().any(|(u, _)| u == user) {
                r.err(
                    "stats_credentials",
                    format!("user '{user}' is also in admin_credentials"),
                );
            }
        }
        if value.web_enabled && value.restapi_enabled && value.web_port == value.restapi_port {
            r.err(
                "restapi_port",
                format!("port {} is also web_port", value.restapi_port),
            );
        }
        r.finish(value)
    }
}
