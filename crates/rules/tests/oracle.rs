//! The compiled engine against the naive oracle: random rule sets (chains, flagOUT, apply,
//! negation, rewrites, every criterion) and random queries must give identical decisions and
//! identical hit counts.

mod naive;

use naive::Naive;
use proptest::prelude::*;
use proptest::sample::select;
use weir_config::QueryRuleRow;
use weir_rules::{CompiledRules, Decision, QueryInput};

/// Query-text patterns and their capture group counts: literal-bearing ones (prefiltered by the
/// automaton) and literal-less ones (prefiltered by the regex sets).
const PATTERNS: &[(&str, usize)] = &[
    ("select", 0),
    ("^select", 0),
    ("^SELECT", 0),
    ("from t1", 0),
    ("t[12]", 0),
    (r"(from|into) t(\d)\b", 2),
    ("x*", 0),
    (".", 0),
    ("^.*$", 0),
    ("where", 0),
    ("(a)(b)?", 2),
    (r"\bt1\b", 0),
    ("FOR UPDATE$", 0),
    (r"\d+", 0),
    ("(?i)WHERE id", 0),
    (r"\/\* [0-1]", 0),
    ("Y", 0),
    ("é", 0),
    (r"^(\w+) ", 1),
    (r"^\s*(select|insert)", 1),
    ("=", 0),
];

const DIGEST_PATTERNS: &[&str] = &[
    "select",
    r"\?",
    r"from t\d",
    "^SELECT",
    r"IN \(\?",
    ".",
    "id=",
    "^$",
    r"[st]\d",
];

/// Rewrites and the groups they need; `select` and `t2` create text later rules match.
const TEMPLATES: &[(&str, usize)] = &[
    ("X", 0),
    (r"\0\0", 0),
    (r"<\1>", 1),
    (r"\2-\1", 2),
    ("$1", 0),
    (r"\\", 0),
    ("", 0),
    ("select ", 0),
    ("t2", 0),
];

const FRAGMENTS: &[&str] = &[
    "SELECT",
    "select",
    " *",
    " c",
    " FROM",
    " from",
    " t1",
    " t2",
    " t3",
    " WHERE",
    " id=1",
    " id=22",
    " INTO",
    " x",
    "xx",
    " FOR UPDATE",
    "/* 0 */",
    "/* 1 */",
    " é",
    "$",
    "ab",
    " b",
    "\n",
    " IN (1,2)",
    "  ",
    "Y",
];

fn opt<T: Clone + std::fmt::Debug + 'static>(values: Vec<T>) -> impl Strategy<Value = Option<T>> {
    prop_oneof![1 => Just(None), 1 => select(values).prop_map(Some)]
}

fn opt_str(values: &'static [&'static str]) -> impl Strategy<Value = Option<String>> {
    opt(values.to_vec()).prop_map(|v| v.map(str::to_string))
}

/// A rule without its rule_id.
fn rule() -> impl Strategy<Value = QueryRuleRow> {
    let criteria = (
        opt_str(&["", "alice", "bob"]),
        opt_str(&["", "db1"]),
        opt_str(&["", "10.0.0.1", "10.0.%", "%", "10.%.9"]),
        opt_str(&["", "127.0.0.1"]),
        opt(vec![6033u16]),
        opt_str(&["0x1", "0x2", "0X3"]),
        opt(DIGEST_PATTERNS.to_vec()),
        opt((0..PATTERNS.len()).collect::<Vec<_>>()),
        prop::bool::weighted(0.2),
        select(vec![
            "CASELESS",
            "",
            "CASELESS,GLOBAL",
            "GLOBAL",
            "caseless , global",
        ]),
    );
    let flow = (
        select(vec![0i32, 0, 1, 2]),
        opt(vec![-1i32, 0, 1, 2]),
        prop::bool::weighted(0.3),
        opt((0..TEMPLATES.len()).collect::<Vec<_>>()),
    );
    let actions = (
        opt(vec![0u32, 1, 2, 3]),
        opt(vec![0u32, 5]),
        opt_str(&["e1", "e2"]),
        opt_str(&["ok"]),
        opt(vec![-1i32, 0, 1, 3]),
        opt(vec![-1i32, 1]),
        opt(vec![1u32, 100]),
        opt(vec![0u8, 1, 2]),
        opt(vec![false, true]),
        opt(vec![0u32, 3]),
    );
    (criteria, flow, actions).prop_map(|(c, f, a)| {
        let mut r = QueryRuleRow::new(0);
        r.active = true;
        (
            r.username,
            r.schemaname,
            r.client_addr,
            r.proxy_addr,
            r.proxy_port,
            r.digest,
        ) = (c.0, c.1, c.2, c.3, c.4, c.5);
        r.match_digest = c.6.map(str::to_string);
        let groups = c.7.map_or(0, |i| PATTERNS[i].1);
        r.match_pattern = c.7.map(|i| PATTERNS[i].0.to_string());
        r.negate_match_pattern = c.8;
        r.re_modifiers = c.9.to_string();
        (r.flag_in, r.flag_out, r.apply) = (f.0, f.1, f.2);
        r.replace_pattern = f.3.map(|i| {
            let (t, need) = TEMPLATES[i];
            if need > groups { r"Z\0" } else { t }.to_string()
        });
        r.destination_hostgroup = a.0;
        r.delay = a.1;
        r.error_msg = a.2;
        r.ok_msg = a.3;
        r.next_query_flag_in = a.4;
        r.mirror_flag_out = a.5;
        r.cache_ttl = a.6;
        r.multiplex = a.7;
        r.log = a.8;
        (r.timeout, r.retries) = (a.9, a.9);
        (r.sticky_conn, r.reconnect, r.cache_empty_result) = (a.8, a.8.map(|b| !b), a.8);
        (r.cache_timeout, r.mirror_hostgroup, r.gtid_from_hostgroup) = (a.6, a.0, a.1);
        r
    })
}

/// Rules with distinct rule_ids (increasing by random gaps), given in a random order, some
/// inactive.
fn rule_set(max: usize) -> impl Strategy<Value = Vec<QueryRuleRow>> {
    prop::collection::vec((rule(), prop::bool::weighted(0.9), 1u32..4), 0..max)
        .prop_map(|rules| {
            let mut id = 0;
            rules
                .into_iter()
                .map(|(mut r, active, gap)| {
                    id += gap;
                    r.rule_id = id;
                    r.active = active;
                    r
                })
                .collect::<Vec<_>>()
        })
        .prop_shuffle()
}

#[derive(Debug, Clone)]
struct Query {
    username: &'static str,
    schemaname: &'static str,
    client_addr: &'static str,
    proxy_addr: &'static str,
    proxy_port: u16,
    text: Vec<u8>,
    digest_text: Vec<u8>,
    digest: u64,
    flag_in: i32,
    iterations: u32,
}

impl Query {
    fn input(&self) -> QueryInput<'_> {
        QueryInput {
            username: self.username,
            schemaname: self.schemaname,
            client_addr: self.client_addr,
            proxy_addr: self.proxy_addr,
            proxy_port: self.proxy_port,
            query: &self.text,
            digest_text: &self.digest_text,
            digest: self.digest,
            flag_in: self.flag_in,
            query_processor_iterations: self.iterations,
            track_time: false,
        }
    }
}

fn query() -> impl Strategy<Value = Query> {
    (
        (
            select(vec!["alice", "bob"]),
            select(vec!["", "db1", "db2"]),
            select(vec!["10.0.0.1", "10.1.2.3", "10.7.7.9", "192.168.1.9"]),
            select(vec!["127.0.0.1", "10.0.0.100"]),
            select(vec![6033u16, 6034]),
        ),
        prop::collection::vec(select(FRAGMENTS.to_vec()), 0..8),
        select(vec![1u64, 2, 3]),
        select(vec![0i32, 0, 0, 1, 2, 3]),
        select(vec![0u32, 0, 1, 2, 5]),
    )
        .prop_map(|(who, frags, digest, flag_in, iterations)| {
            let text: Vec<u8> = frags.concat().into_bytes();
            // A crude digest: digits become '?'.
            let digest_text = text
                .iter()
                .map(|b| if b.is_ascii_digit() { b'?' } else { *b })
                .collect();
            Query {
                username: who.0,
                schemaname: who.1,
                client_addr: who.2,
                proxy_addr: who.3,
                proxy_port: who.4,
                text,
                digest_text,
                digest,
                flag_in,
                iterations,
            }
        })
}

/// Evaluates every query with both engines and compares decisions, then hit counts.
fn check(rules: &[QueryRuleRow], queries: &[Query]) -> Result<(), TestCaseError> {
    let compiled = CompiledRules::compile(rules)
        .map_err(|e| TestCaseError::fail(format!("compile: {}", e[0])))?;
    let mut naive = Naive::new(rules);
    let mut out = Decision::default();
    for q in queries {
        let input = q.input();
        compiled.evaluate(&input, &mut out);
        let expected = naive.evaluate(&input);
        prop_assert_eq!(&out, &expected, "query {:?}", q);
    }
    let stats = compiled.stats();
    let ids: Vec<u32> = stats.iter().map(|s| s.rule_id).collect();
    prop_assert_eq!(ids, naive.rule_ids());
    let hits: Vec<u64> = stats.iter().map(|s| s.hits).collect();
    prop_assert_eq!(hits, naive.hits.clone());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn engine_agrees_with_oracle(
        rules in rule_set(24),
        queries in prop::collection::vec(query(), 1..12),
    ) {
        check(&rules, &queries)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Bigger sets: more candidates per query than the inline buffer holds, several chains.
    #[test]
    fn engine_agrees_with_oracle_on_big_sets(
        rules in rule_set(160),
        queries in prop::collection::vec(query(), 1..24),
    ) {
        check(&rules, &queries)?;
    }
}

/// Hundreds of literal-less patterns (several regex-set shards) and hundreds of literal ones
/// that all match (the candidate list spills to the heap), against the oracle.
#[test]
fn many_set_shards_and_spilled_candidates() {
    let mut rules = Vec::new();
    for i in 0..700u32 {
        let mut r = QueryRuleRow::new(i + 1);
        r.active = true;
        r.match_pattern = Some(match i % 3 {
            0 => format!(r"\d{{{}}}", i % 9 + 1),
            1 => format!("id={}", i % 50),
            _ => format!(r"^[a-z ]{{{}}}", i % 13 + 1),
        });
        r.destination_hostgroup = Some(i % 7);
        r.flag_in = (i % 2) as i32;
        r.flag_out = (i % 97 == 0).then_some(((i / 97) % 2) as i32);
        r.apply = i == 650;
        if i % 50 == 7 {
            r.replace_pattern = Some("id=4".into());
        }
        rules.push(r);
    }
    let texts = [
        "select c from t where id=42 and k=123456789",
        "select 1",
        "update t set c=1 where id=7",
        "",
    ];
    let queries: Vec<Query> = texts
        .iter()
        .flat_map(|t| {
            (0..4).map(move |k| Query {
                username: "alice",
                schemaname: "db1",
                client_addr: "10.0.0.1",
                proxy_addr: "127.0.0.1",
                proxy_port: 6033,
                text: t.as_bytes().to_vec(),
                digest_text: t.as_bytes().to_vec(),
                digest: 1,
                flag_in: (k % 2) as i32,
                iterations: [0, 3][k / 2],
            })
        })
        .collect();
    check(&rules, &queries).expect("agrees with the oracle");
}
