//! Digest cost per sysbench statement (issue 4's figure: ≤ 500 ns for a ~150-byte statement).
//! Run: `cargo bench -p weir-sql --bench digest`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use weir_sql::{digest_into, DigestOptions};

const C: &str = "83868641912-28773972837-60736120486-75162659906-27563526494-20381887404-41576422241-93426793964-56405065102-33518432330";
const PAD: &str = "67847967377-48000963322-62604785301-91415491898-96926520291";

fn statements() -> Vec<(&'static str, String)> {
    let in_list: Vec<String> = (0..100).map(|i| (50_000 + i * 7).to_string()).collect();
    vec![
        (
            "point_select",
            "SELECT c FROM sbtest1 WHERE id=50148".to_string(),
        ),
        (
            "distinct_range",
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 49960 AND 50059 ORDER BY c"
                .to_string(),
        ),
        (
            "non_index_update",
            format!("UPDATE sbtest1 SET c='{C}' WHERE id=49737"),
        ),
        (
            "insert",
            format!("INSERT INTO sbtest1 (id, k, c, pad) VALUES (50089, 49862, '{C}', '{PAD}')"),
        ),
        (
            "in_list_100",
            format!("SELECT c FROM sbtest1 WHERE id IN ({})", in_list.join(", ")),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let opts = DigestOptions::default();
    let mut group = c.benchmark_group("digest");
    let mut out = Vec::with_capacity(1024);
    for (name, q) in statements() {
        group.throughput(Throughput::Bytes(q.len() as u64));
        group.bench_function(format!("{name}_{}B", q.len()), |b| {
            b.iter(|| digest_into(black_box(q.as_bytes()), &opts, &mut out))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
