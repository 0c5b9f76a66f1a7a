//! Cost of recording one execution in the digest table (issue 4, item 6: every statement
//! pays it; target < 100 ns on a hit). Run: `cargo bench -p weir-stats --bench digests`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::time::Duration;
use weir_stats::{DigestKey, DigestStats};

const TEXT: &[u8] = b"SELECT c FROM sbtest1 WHERE id=?";

fn key(digest: u64) -> DigestKey<'static> {
    DigestKey {
        hostgroup: 10,
        schemaname: "sbtest",
        username: "sbtest",
        client_address: "",
        digest,
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("digest_stats");
    // A table as full as a busy server's: the hit is looked up among 10k keys.
    let stats = DigestStats::new(4, 100_000);
    for d in 0..10_000u64 {
        stats.record(&key(d), TEXT, Duration::from_micros(100), 0, 1);
    }
    let k = key(1234);
    group.bench_function("record_hit", |b| {
        b.iter(|| {
            stats.record(
                black_box(&k),
                black_box(TEXT),
                Duration::from_micros(250),
                0,
                1,
            )
        })
    });
    // The same without reading the clock: what a caller with a coarse clock would pay.
    group.bench_function("record_at_hit", |b| {
        b.iter(|| {
            stats.record_at(
                black_box(&k),
                black_box(TEXT),
                Duration::from_micros(250),
                0,
                1,
                1_700_000_000,
            )
        })
    });
    group.bench_function("system_time_now", |b| {
        b.iter(|| black_box(std::time::SystemTime::now()))
    });
    // A stream of new keys into a full table: insertion plus amortized eviction.
    let full = DigestStats::new(1, 10_000);
    let mut next = 0u64;
    group.bench_function("record_new_key_full_table", |b| {
        b.iter(|| {
            next += 1;
            full.record_at(
                &key(next),
                TEXT,
                Duration::from_micros(250),
                0,
                1,
                1_700_000_000,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
