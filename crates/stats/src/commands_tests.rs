#![allow(clippy::unwrap_used)]

use super::*;

fn row<'a>(rows: &'a [CommandRow], name: &str) -> &'a CommandRow {
    rows.iter().find(|r| r.command == name).unwrap()
}

#[test]
fn buckets_are_exclusive_ranges() {
    assert_eq!(bucket(0), 0);
    assert_eq!(bucket(100), 0);
    assert_eq!(bucket(101), 1);
    assert_eq!(bucket(500), 1);
    assert_eq!(bucket(501), 2);
    assert_eq!(bucket(1_000), 2);
    assert_eq!(bucket(10_000_000), 10);
    assert_eq!(bucket(10_000_001), 11);
    assert_eq!(bucket(u64::MAX), 11);
}

#[test]
fn every_command_has_a_row_even_when_zero() {
    let c = CommandCounters::new(2);
    let rows = c.snapshot();
    assert_eq!(rows.len(), SqlCommand::COUNT);
    assert_eq!(rows[0].command, "ALTER_TABLE");
    assert_eq!(rows.last().unwrap().command, "UNKNOWN");
    assert!(rows
        .iter()
        .all(|r| r.total_cnt == 0 && r.total_time_us == 0));
}

#[test]
fn record_counts_time_and_bucket() {
    let c = CommandCounters::new(3);
    c.record(SqlCommand::Select, Duration::from_micros(50));
    c.record(SqlCommand::Select, Duration::from_micros(700));
    c.record(SqlCommand::Select, Duration::from_secs(11));
    c.record(SqlCommand::Insert, Duration::from_millis(2));
    let rows = c.snapshot();
    let s = row(&rows, "SELECT");
    assert_eq!(s.total_cnt, 3);
    assert_eq!(s.total_time_us, 50 + 700 + 11_000_000);
    assert_eq!(s.buckets, [1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let i = row(&rows, "INSERT");
    assert_eq!((i.total_cnt, i.total_time_us, i.buckets[3]), (1, 2_000, 1));
    assert_eq!(row(&rows, "UPDATE").total_cnt, 0);
    for r in &rows {
        assert_eq!(r.buckets.iter().sum::<u64>(), r.total_cnt, "{}", r.command);
    }
}

#[test]
fn shards_are_summed_across_threads() {
    let c = std::sync::Arc::new(CommandCounters::new(4));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let c = c.clone();
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    c.record(SqlCommand::Update, Duration::from_micros(200));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let rows = c.snapshot();
    let u = row(&rows, "UPDATE");
    assert_eq!(u.total_cnt, 8000);
    assert_eq!(u.total_time_us, 8000 * 200);
    assert_eq!(u.buckets[1], 8000);
}
