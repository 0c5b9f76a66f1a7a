//! Rule evaluation cost against the number of rules, with seed 004's rule shape:
//! `(from|into|update|into table) sbtestN\b` on the digest text, one rule per table, user
//! `testuser_rw`, no apply — so a query that matches none of them has every rule of the chain to
//! consider (ProxySQL's worst case in seed 004).
//!
//! - `no_match`: a 100-byte point-select on `sbtest100001`, a table no rule names; its name
//!   starts like sbtest1, sbtest10, sbtest100… so those rules' literals are found and their
//!   regexes run (and fail on `\b`): the adversarial case for a literal prefilter.
//! - `one_match`: the same query on `sbtest7`: exactly one rule matches.
//! - `naive_no_match`: each rule's regex tried in turn, as ProxySQL does (for scale).
//!
//! Run: `cargo bench -p weir-rules --bench rules`.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use regex::bytes::RegexBuilder;
use weir_config::QueryRuleRow;
use weir_rules::{CompiledRules, Decision, QueryInput};

const SIZES: [u32; 4] = [10, 100, 1000, 10_000];

fn rules(n: u32) -> Vec<QueryRuleRow> {
    (1..=n)
        .map(|i| {
            let mut r = QueryRuleRow::new(i);
            r.active = true;
            r.username = Some("testuser_rw".into());
            r.destination_hostgroup = Some(600);
            r.retries = Some(3);
            r.match_digest = Some(format!(r"(from|into|update|into table) sbtest{i}\b"));
            r
        })
        .collect()
}

fn query(table: &str) -> (Vec<u8>, Vec<u8>) {
    let q = format!("SELECT c FROM {table} WHERE id=50321 AND k BETWEEN 4011 AND 4111 ORDER BY c LIMIT 10 /* bench */");
    let d = format!("SELECT c FROM {table} WHERE id=? AND k BETWEEN ? AND ? ORDER BY c LIMIT ?");
    (q.into_bytes(), d.into_bytes())
}

fn input<'a>(q: &'a [u8], d: &'a [u8]) -> QueryInput<'a> {
    QueryInput {
        username: "testuser_rw",
        schemaname: "sbtest",
        client_addr: "10.0.0.7",
        proxy_addr: "10.0.0.1",
        proxy_port: 6033,
        query: q,
        digest_text: d,
        digest: 0x1234_5678_9abc_def0,
        ..QueryInput::default()
    }
}

fn bench(c: &mut Criterion) {
    let (q_none, d_none) = query("sbtest100001");
    let (q_one, d_one) = query("sbtest7");
    assert!((95..=110).contains(&q_none.len()), "{}", q_none.len());
    let mut group = c.benchmark_group("rules");
    for n in SIZES {
        let compiled = CompiledRules::compile(&rules(n)).expect("rules compile");
        let mut out = Decision::default();
        let none = input(&q_none, &d_none);
        compiled.evaluate(&none, &mut out);
        assert!(out.is_empty());
        group.bench_with_input(BenchmarkId::new("no_match", n), &none, |b, q| {
            b.iter(|| {
                compiled.evaluate(black_box(q), &mut out);
                black_box(out.destination_hostgroup)
            })
        });
        let one = input(&q_one, &d_one);
        compiled.evaluate(&one, &mut out);
        assert_eq!((out.matched_rules, out.last_matched_rule), (1, Some(7)));
        group.bench_with_input(BenchmarkId::new("one_match", n), &one, |b, q| {
            b.iter(|| {
                compiled.evaluate(black_box(q), &mut out);
                black_box(out.destination_hostgroup)
            })
        });
        if n <= 1000 {
            let naive: Vec<_> = (1..=n)
                .map(|i| {
                    RegexBuilder::new(&format!(r"(from|into|update|into table) sbtest{i}\b"))
                        .unicode(false)
                        .case_insensitive(true)
                        .build()
                        .expect("regex")
                })
                .collect();
            group.bench_with_input(BenchmarkId::new("naive_no_match", n), &d_none, |b, d| {
                b.iter(|| naive.iter().filter(|re| re.is_match(black_box(d))).count())
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
