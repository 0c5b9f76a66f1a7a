//! The session variables weir follows, and the words it refuses as values.

/// Variables followed under their own name (slot key and replay name are the name).
///
/// Left out on purpose, beyond those the server will not let a session change:
/// `max_join_size` (setting it also flips `sql_big_selects`, which a per-slot replay cannot
/// reproduce in order) and anything that changes more than itself.
const PLAIN: &[&str] = &[
    "autocommit",
    "sql_mode",
    "time_zone",
    "character_set_client",
    "character_set_results",
    "collation_connection",
    "sql_select_limit",
    "sql_safe_updates",
    "foreign_key_checks",
    "unique_checks",
    "group_concat_max_len",
    "max_execution_time",
    "max_statement_time",
    "wait_timeout",
    "interactive_timeout",
    "net_read_timeout",
    "net_write_timeout",
    "lock_wait_timeout",
    "innodb_lock_wait_timeout",
    "sql_auto_is_null",
    "sql_big_selects",
    "sql_buffer_result",
    "sql_notes",
    "sql_warnings",
    "sql_quote_show_create",
    "lc_time_names",
    "lc_messages",
    "div_precision_increment",
    "max_heap_table_size",
    "tmp_table_size",
    "sort_buffer_size",
    "join_buffer_size",
    "optimizer_switch",
    "optimizer_search_depth",
    "long_query_time",
    "default_storage_engine",
    "default_tmp_storage_engine",
    "big_tables",
    "auto_increment_increment",
    "auto_increment_offset",
    "default_week_format",
    "max_sort_length",
    "max_sp_recursion_depth",
    "updatable_views_with_limit",
    "completion_type",
    "old_alter_table",
    "query_cache_type",
    "low_priority_updates",
    "explicit_defaults_for_timestamp",
    "block_encryption_mode",
    "max_error_count",
    "net_buffer_length",
    "max_length_for_sort_data",
    "optimizer_prune_level",
    "sql_require_primary_key",
    "session_track_system_variables",
    "session_track_schema",
    "session_track_state_change",
    "session_track_transaction_info",
];

/// `(name as written in SET, slot key, name to replay with)` for variables that share a value
/// under several names; an empty replay name is chosen by server version at replay.
const ALIASED: &[(&str, &str, &str)] = &[
    (
        "character_set_connection",
        "collation_connection",
        "character_set_connection",
    ),
    ("tx_isolation", "transaction_isolation", ""),
    ("transaction_isolation", "transaction_isolation", ""),
    ("tx_read_only", "transaction_read_only", ""),
    ("transaction_read_only", "transaction_read_only", ""),
];

/// The (name, slot key, replay name) of a tracked session variable, by name in any case.
pub(super) fn lookup(name: &str) -> Option<(&'static str, &'static str, &'static str)> {
    ALIASED
        .iter()
        .find(|(n, _, _)| n.eq_ignore_ascii_case(name))
        .copied()
        .or_else(|| {
            PLAIN
                .iter()
                .find(|n| n.eq_ignore_ascii_case(name))
                .map(|&n| (n, n, n))
        })
}

/// Functions (and keywords met before a parenthesis) an evaluated SET value may use: built-ins
/// that change nothing but their result. Anything else followed by `(` may be a stored
/// function, which could change state weir does not see, or a function with an effect
/// (GET_LOCK, LAST_INSERT_ID(n), NEXTVAL, ...).
const PURE: &[&str] = &[
    "CONCAT",
    "CONCAT_WS",
    "REPLACE",
    "REGEXP_REPLACE",
    "IF",
    "IFNULL",
    "NULLIF",
    "COALESCE",
    "LOWER",
    "UPPER",
    "LCASE",
    "UCASE",
    "TRIM",
    "LTRIM",
    "RTRIM",
    "SUBSTRING",
    "SUBSTR",
    "SUBSTRING_INDEX",
    "LEFT",
    "RIGHT",
    "LENGTH",
    "CHAR_LENGTH",
    "LOCATE",
    "INSTR",
    "FIND_IN_SET",
    "GREATEST",
    "LEAST",
    "CAST",
    "CONVERT",
    "CHAR",
    "BINARY",
    "DECIMAL",
    "ABS",
    "ROUND",
    "FLOOR",
    "CEIL",
    "CEILING",
    "MOD",
    "SELECT",
    "FROM",
    "WHERE",
    "IN",
    "EXISTS",
    "AND",
    "OR",
    "NOT",
    "XOR",
    "WHEN",
    "THEN",
    "ELSE",
];

/// Whether `word(` is allowed in an evaluated SET value (see [`PURE`]).
pub(super) fn is_pure_call(word: &str) -> bool {
    PURE.iter().any(|n| n.eq_ignore_ascii_case(word))
}

/// Keywords that MySQL evaluates as functions without parentheses: as a value they would be
/// evaluated again, with another result, at every replay.
const NILADIC: &[&str] = &[
    "CURRENT_DATE",
    "CURRENT_ROLE",
    "CURRENT_TIME",
    "CURRENT_TIMESTAMP",
    "CURRENT_USER",
    "LOCALTIME",
    "LOCALTIMESTAMP",
    "SYSDATE",
    "UTC_DATE",
    "UTC_TIME",
    "UTC_TIMESTAMP",
];

/// Whether a word is a function call in disguise.
pub(super) fn is_niladic(word: &str) -> bool {
    NILADIC.iter().any(|n| n.eq_ignore_ascii_case(word))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_lowercase_and_unique() {
        let all: Vec<(&str, &str, &str)> = PLAIN
            .iter()
            .map(|&n| (n, n, n))
            .chain(ALIASED.iter().copied())
            .collect();
        for (i, (name, key, replay)) in all.iter().enumerate() {
            assert_eq!(*name, name.to_ascii_lowercase());
            assert_eq!(*key, key.to_ascii_lowercase());
            assert!(replay.is_empty() || lookup(replay) == Some((replay, key, replay)));
            assert!(all[i + 1..].iter().all(|(n, _, _)| n != name), "{name}");
        }
    }
}
