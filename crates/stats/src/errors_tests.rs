#![allow(clippy::unwrap_used)]

use super::*;

fn key(errno: u16, client: &str) -> ErrorKey<'_> {
    ErrorKey {
        hostgroup: 1,
        hostname: "db1",
        port: 3306,
        username: "app",
        client_address: client,
        schemaname: "shop",
        errno,
    }
}

#[test]
fn groups_by_key_and_keeps_the_last_message() {
    let log = ErrorLog::new();
    log.record_at(&key(1064, "10.0.0.1"), "syntax error near 'x'", 100);
    log.record_at(&key(1064, "10.0.0.1"), "syntax error near 'y'", 105);
    log.record_at(&key(1146, "10.0.0.1"), "no such table", 103);
    log.record_at(&key(1064, "10.0.0.2"), "syntax error", 104);
    let rows = log.snapshot();
    assert_eq!(rows.len(), 3);
    let r = &rows[0];
    assert_eq!(
        (r.errno, r.client_address.as_str(), r.count_star),
        (1064, "10.0.0.1", 2)
    );
    assert_eq!((r.first_seen, r.last_seen), (100, 105));
    assert_eq!(r.last_error, "syntax error near 'y'");
    assert_eq!((r.hostgroup, r.hostname.as_str(), r.port), (1, "db1", 3306));
    assert_eq!(
        (r.username.as_str(), r.schemaname.as_str()),
        ("app", "shop")
    );
    // Sorted by key: hostgroup, host, port, user, client, schema, errno.
    assert_eq!((rows[1].errno, rows[1].count_star), (1146, 1));
    assert_eq!(
        (rows[2].errno, rows[2].client_address.as_str()),
        (1064, "10.0.0.2")
    );
}

#[test]
fn reset_returns_the_rows_and_empties_the_log() {
    let log = ErrorLog::new();
    log.record(&key(2003, "c"), "can't connect");
    assert!(!log.is_empty());
    let taken = log.snapshot_and_reset();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].count_star, 1);
    assert!(taken[0].first_seen > 1_600_000_000);
    assert!(log.is_empty());
    assert!(log.snapshot().is_empty());
    log.record(&key(2003, "c"), "can't connect");
    assert_eq!(log.snapshot()[0].count_star, 1);
}

#[test]
fn distinct_keys_are_bounded() {
    let log = ErrorLog::new();
    for i in 0..MAX_ERROR_ENTRIES + 10 {
        let c = i.to_string();
        log.record_at(&key(1, &c), "x", 1);
    }
    assert_eq!(log.len(), MAX_ERROR_ENTRIES);
    // A known key still counts once the log is full.
    log.record_at(&key(1, "0"), "x", 2);
    let rows = log.snapshot();
    let r = rows.iter().find(|r| r.client_address == "0").unwrap();
    assert_eq!((r.count_star, r.last_seen), (2, 2));
}
