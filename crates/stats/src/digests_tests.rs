#![allow(clippy::unwrap_used)]

use super::*;

fn key(digest: u64, user: &str) -> DigestKey<'_> {
    DigestKey {
        hostgroup: 1,
        schemaname: "shop",
        username: user,
        client_address: "",
        digest,
    }
}

/// Records into shard `shard`, whatever the calling thread's shard, at `now` (unix s).
fn record_in(s: &DigestStats, shard: usize, k: &DigestKey<'_>, us: u64, now: u64) {
    record_hashed_in(s, shard, key_hash(k), k, us, now);
}

fn record_hashed_in(
    s: &DigestStats,
    shard: usize,
    hash: u64,
    k: &DigestKey<'_>,
    us: u64,
    now: u64,
) {
    let text = format!("SELECT {}", k.digest);
    s.record_hashed(
        &s.shards[shard],
        hash,
        k,
        text.as_bytes(),
        Counters::one(us, 2, 3, now),
    );
}

fn find<'a>(rows: &'a [DigestRow], digest: u64, user: &str) -> &'a DigestRow {
    rows.iter()
        .find(|r| r.digest == digest && r.username == user)
        .unwrap()
}

#[test]
fn sums_mins_and_maxes_per_key() {
    let s = DigestStats::new(1, 100);
    let k = key(7, "app");
    s.record_at(&k, b"SELECT ?", Duration::from_micros(300), 1, 10, 100);
    s.record_at(&k, b"ignored", Duration::from_micros(100), 2, 20, 105);
    s.record_at(&k, b"ignored", Duration::from_millis(2), 3, 30, 103);
    let rows = s.snapshot();
    assert_eq!(
        rows,
        vec![DigestRow {
            hostgroup: 1,
            schemaname: "shop".into(),
            username: "app".into(),
            client_address: String::new(),
            digest: 7,
            digest_text: "SELECT ?".into(),
            count_star: 3,
            first_seen: 100,
            last_seen: 105,
            sum_time: 2_400,
            min_time: 100,
            max_time: 2_000,
            sum_rows_affected: 6,
            sum_rows_sent: 60,
        }]
    );
    assert_eq!(s.len(), 1);
}

#[test]
fn every_key_field_separates_rows() {
    let s = DigestStats::new(1, 100);
    let base = key(7, "app");
    let keys = [
        base,
        DigestKey {
            hostgroup: 2,
            ..base
        },
        DigestKey {
            schemaname: "shop2",
            ..base
        },
        DigestKey {
            username: "app2",
            ..base
        },
        DigestKey {
            client_address: "10.0.0.1",
            ..base
        },
        DigestKey { digest: 8, ..base },
        // Field boundaries do not blur: "sh" + "opapp" is not "shop" + "app".
        DigestKey {
            schemaname: "sh",
            username: "opapp",
            ..base
        },
    ];
    for k in &keys {
        s.record(k, b"q", Duration::from_micros(1), 0, 0);
    }
    s.record(&base, b"q", Duration::from_micros(1), 0, 0);
    let rows = s.snapshot();
    assert_eq!(rows.len(), keys.len());
    assert_eq!(rows.iter().map(|r| r.count_star).sum::<u64>(), 8);
}

#[test]
fn shards_merge_into_one_row_per_key() {
    let s = DigestStats::new(3, 300);
    let a = key(1, "app");
    let b = key(2, "app");
    record_in(&s, 0, &a, 50, 100);
    record_in(&s, 1, &a, 10, 90);
    record_in(&s, 2, &a, 70, 120);
    record_in(&s, 2, &a, 30, 110);
    record_in(&s, 1, &b, 5, 100);
    assert_eq!(s.len(), 4, "a is held by three shards, b by one");
    let rows = s.snapshot();
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].digest, rows[1].digest), (1, 2), "sorted by key");
    let r = find(&rows, 1, "app");
    assert_eq!(r.count_star, 4);
    assert_eq!(r.sum_time, 160);
    assert_eq!((r.min_time, r.max_time), (10, 70));
    assert_eq!((r.first_seen, r.last_seen), (90, 120));
    assert_eq!((r.sum_rows_affected, r.sum_rows_sent), (8, 12));
    assert_eq!(r.digest_text, "SELECT 1");
    assert_eq!(find(&rows, 2, "app").count_star, 1);
}

#[test]
fn rows_are_sorted_by_hostgroup_schema_user_client_digest() {
    let s = DigestStats::new(2, 100);
    let base = key(5, "b");
    record_in(&s, 1, &DigestKey { digest: 1, ..base }, 1, 1);
    record_in(
        &s,
        0,
        &DigestKey {
            username: "a",
            ..base
        },
        1,
        1,
    );
    record_in(
        &s,
        1,
        &DigestKey {
            hostgroup: 0,
            ..base
        },
        1,
        1,
    );
    record_in(&s, 0, &base, 1, 1);
    let rows = s.snapshot();
    let got: Vec<_> = rows
        .iter()
        .map(|r| (r.hostgroup, r.username.as_str(), r.digest))
        .collect();
    assert_eq!(got, [(0, "b", 5), (1, "a", 5), (1, "b", 1), (1, "b", 5)]);
}

#[test]
fn records_from_many_threads_add_up() {
    let s = DigestStats::new(4, 1000);
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                for i in 0..1000u64 {
                    s.record(&key(i % 10, "app"), b"q", Duration::from_micros(1), 0, 1);
                }
            });
        }
    });
    let rows = s.snapshot();
    assert_eq!(rows.len(), 10);
    assert!(rows
        .iter()
        .all(|r| r.count_star == 800 && r.sum_rows_sent == 800));
}

#[test]
fn reset_returns_the_rows_and_empties_the_table() {
    let s = DigestStats::new(2, 4);
    for d in 0..10 {
        record_in(&s, 0, &key(d, "app"), 1, 1);
    }
    let evicted = s.evicted();
    assert!(evicted > 0);
    record_in(&s, 1, &key(1, "app"), 1, 1);
    let before = s.snapshot();
    let rows = s.snapshot_and_reset();
    assert_eq!(rows, before);
    assert!(s.is_empty());
    assert!(s.snapshot().is_empty());
    assert!(s.snapshot_and_reset().is_empty());
    assert_eq!(
        s.evicted(),
        evicted,
        "the eviction counter is global, not reset"
    );
    // Recording goes on into the emptied table.
    record_in(&s, 0, &key(1, "app"), 1, 1);
    assert_eq!(s.snapshot()[0].count_star, 1);
}

#[test]
fn the_bound_holds_and_evictions_are_counted() {
    let s = DigestStats::new(2, 20);
    for d in 0..1000 {
        record_in(&s, (d % 2) as usize, &key(d, "app"), 1, d);
        assert!(s.len() <= 20, "len {} after {d}", s.len());
        assert_eq!(s.evicted() + s.len() as u64, d + 1);
    }
    for shard in s.shards.iter() {
        assert!(shard.inner.lock().map.len() <= 10);
    }
}

#[test]
fn the_least_used_go_first() {
    let s = DigestStats::new(1, 10);
    // Nine keys used 1..=9 times, in turn.
    for d in 1..=9u64 {
        for _ in 0..d {
            record_in(&s, 0, &key(d, "app"), 1, 100);
        }
    }
    // A tenth key, used once but more recently than key 1.
    record_in(&s, 0, &key(10, "app"), 1, 200);
    assert_eq!(s.len(), 10);
    assert_eq!(s.evicted(), 0);
    // The shard is full: a new key evicts a tenth (one entry), the least used and oldest.
    record_in(&s, 0, &key(11, "app"), 1, 300);
    assert_eq!(s.evicted(), 1);
    let digests: Vec<u64> = s.snapshot().iter().map(|r| r.digest).collect();
    assert_eq!(digests, (2..=11).collect::<Vec<_>>());
}

#[test]
fn trim_removes_exactly_the_count_asked_among_ties() {
    let s = DigestStats::new(1, 1000);
    for d in 0..100u64 {
        // Twenty of each count 1..=5, all at the same time: many ties.
        for _ in 0..(d % 5 + 1) {
            record_in(&s, 0, &key(d, "app"), 1, 100);
        }
    }
    let mut shard = s.shards[0].inner.lock();
    assert_eq!(shard.trim(70), 30);
    assert_eq!(shard.map.len(), 70);
    let mut counts: Vec<u64> = shard.map.values().map(|e| e.counters.count).collect();
    counts.sort_unstable();
    // The twenty used once went, then ten of the twenty used twice.
    assert_eq!(counts[..10], [2; 10]);
    assert_eq!(counts[10..30], [3; 20]);
    assert_eq!(shard.trim(70), 0);
    assert_eq!(shard.trim(0), 70);
    assert!(shard.map.is_empty());
}

#[test]
fn lowering_the_bound_trims_now() {
    let s = DigestStats::new(2, 100);
    for d in 0..100 {
        record_in(&s, (d % 2) as usize, &key(d, "app"), 1, 1);
    }
    assert_eq!((s.len(), s.evicted()), (100, 0));
    s.set_max_entries(10);
    assert_eq!((s.len(), s.evicted()), (10, 90));
    for d in 100..200 {
        record_in(&s, (d % 2) as usize, &key(d, "app"), 1, 1);
        assert!(s.len() <= 10);
    }
    // Raising it lets the table grow again.
    s.set_max_entries(1000);
    for d in 200..400 {
        record_in(&s, (d % 2) as usize, &key(d, "app"), 1, 1);
    }
    assert!(s.len() > 200);
}

#[test]
fn a_shard_holds_at_least_one_entry() {
    let s = DigestStats::new(4, 1);
    record_in(&s, 0, &key(1, "app"), 1, 1);
    record_in(&s, 0, &key(2, "app"), 1, 1);
    assert_eq!(s.len(), 1);
    assert_eq!(s.evicted(), 1);
    assert_eq!(s.snapshot()[0].digest, 2);
}

#[test]
fn colliding_hashes_keep_their_keys_apart() {
    let s = DigestStats::new(1, 100);
    let a = key(1, "alice");
    let b = key(2, "bob");
    let c = key(3, "carol");
    let h = 0xDEAD_BEEF;
    record_hashed_in(&s, 0, h, &a, 10, 1);
    record_hashed_in(&s, 0, h, &b, 20, 2);
    record_hashed_in(&s, 0, h, &b, 20, 2);
    record_hashed_in(&s, 0, h, &a, 10, 3);
    // c collides with b's probed slot, h + 1.
    record_hashed_in(&s, 0, h + 1, &c, 30, 4);
    assert_eq!(s.len(), 3);
    let rows = s.snapshot();
    assert_eq!(rows.len(), 3);
    assert_eq!(find(&rows, 1, "alice").count_star, 2);
    assert_eq!(find(&rows, 1, "alice").sum_time, 20);
    assert_eq!(find(&rows, 2, "bob").count_star, 2);
    assert_eq!(find(&rows, 2, "bob").digest_text, "SELECT 2");
    assert_eq!(find(&rows, 3, "carol").count_star, 1);
}

#[test]
fn a_collision_chain_broken_by_eviction_still_counts_right() {
    let s = DigestStats::new(1, 100);
    let a = key(1, "alice");
    let b = key(2, "bob");
    let h = 42;
    record_hashed_in(&s, 0, h, &a, 1, 1);
    record_hashed_in(&s, 0, h, &b, 1, 1);
    record_hashed_in(&s, 0, h, &b, 1, 1);
    // Evict a (the least used), which sat in front of b in the chain.
    assert_eq!(s.shards[0].inner.lock().trim(1), 1);
    // b is now found anew in front of its older entry; the rows merge by key.
    record_hashed_in(&s, 0, h, &b, 1, 5);
    let rows = s.snapshot();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].username, "bob");
    assert_eq!(rows[0].count_star, 3);
    assert_eq!((rows[0].first_seen, rows[0].last_seen), (1, 5));
}

#[test]
fn digest_text_is_kept_from_the_first_execution_and_may_be_any_bytes() {
    let s = DigestStats::new(1, 10);
    let k = key(9, "app");
    s.record(&k, b"SELECT '\xff'", Duration::ZERO, 0, 0);
    s.record(&k, b"other", Duration::ZERO, 0, 0);
    assert_eq!(s.snapshot()[0].digest_text, "SELECT '\u{FFFD}'");
}

#[test]
fn first_seen_never_follows_last_seen_when_the_clock_steps_back() {
    let s = DigestStats::new(1, 10);
    let k = key(9, "app");
    s.record_at(&k, b"q", Duration::ZERO, 0, 0, 200);
    s.record_at(&k, b"q", Duration::ZERO, 0, 0, 150);
    let r = &s.snapshot()[0];
    assert_eq!((r.first_seen, r.last_seen), (150, 200));
}

#[test]
fn huge_latencies_saturate() {
    let s = DigestStats::new(1, 10);
    let k = key(9, "app");
    s.record_at(&k, b"q", Duration::MAX, 0, u64::MAX, 1);
    s.record_at(&k, b"q", Duration::MAX, 0, u64::MAX, 1);
    let r = &s.snapshot()[0];
    assert_eq!(
        (r.sum_time, r.max_time, r.sum_rows_sent),
        (u64::MAX, u64::MAX, u64::MAX)
    );
}

/// The bound is over all shards: one busy worker may hold them all (each shard held
/// `max_entries / shards`, so a client on one worker lost digests at half the bound).
#[test]
fn one_shard_may_hold_the_whole_bound() {
    let s = DigestStats::new(2, 100);
    for d in 0..100 {
        record_in(&s, 0, &key(d, "app"), 1, 1);
    }
    assert_eq!((s.len(), s.evicted()), (100, 0));
    record_in(&s, 1, &key(500, "app"), 1, 1);
    assert_eq!(
        (s.len(), s.evicted()),
        (101, 0),
        "an empty shard takes one key"
    );
    record_in(&s, 0, &key(100, "app"), 1, 1);
    assert!(s.evicted() > 0 && s.len() <= 100, "{}", s.len());
    s.set_max_entries(50);
    assert!(s.len() <= 51, "{}", s.len());
    let _ = s.snapshot_and_reset();
    for d in 0..50 {
        record_in(&s, 1, &key(d, "app"), 1, 1);
    }
    assert_eq!(s.len(), 50, "the count of keys held was reset too");
}
