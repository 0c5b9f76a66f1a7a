//! Table tests of the rule semantics the crate docs describe: rewrites, modifiers, messages,
//! flagOUT and its loop guard, criteria details, compile errors, stats.

mod common;

use common::{compile, hits, rule, Q};
use weir_config::QueryRuleRow;
use weir_rules::{CompiledRules, Decision, QueryInput, RuleError};

fn text(d: &Decision) -> Option<&str> {
    d.rewritten
        .as_deref()
        .map(|b| std::str::from_utf8(b).expect("utf8"))
}

#[test]
fn replace_with_capture_groups() {
    let mut r = rule(10);
    r.match_pattern = Some(r"^SELECT (\w+) FROM sbtest(\d+)".into());
    r.replace_pattern = Some(r"SELECT \1 FROM archive.sbtest\2".into());
    r.destination_hostgroup = Some(3);
    let rules = compile(&[r]);
    let d = Q::new("SELECT c FROM sbtest12 WHERE id=1").eval(&rules);
    assert_eq!(text(&d), Some("SELECT c FROM archive.sbtest12 WHERE id=1"));
    assert_eq!(d.destination_hostgroup, Some(3));
    // Matching but nothing to replace cannot happen here; no match, no rewrite.
    assert_eq!(text(&Q::new("UPDATE sbtest1 SET c=1").eval(&rules)), None);
}

#[test]
fn global_replaces_every_match_first_only_otherwise() {
    let mk = |mods: &str| {
        let mut r = rule(1);
        r.match_pattern = Some("sbtest1".into());
        r.replace_pattern = Some("t".into());
        r.re_modifiers = mods.into();
        compile(&[r])
    };
    let q = Q::new("SELECT * FROM sbtest1 JOIN sbtest1 USING (id)");
    assert_eq!(
        text(&q.eval(&mk("CASELESS"))),
        Some("SELECT * FROM t JOIN sbtest1 USING (id)")
    );
    assert_eq!(
        text(&q.eval(&mk("CASELESS,GLOBAL"))),
        Some("SELECT * FROM t JOIN t USING (id)")
    );
}

#[test]
fn caseless_off() {
    let mut r = rule(1);
    r.match_pattern = Some("^SELECT".into());
    r.re_modifiers = String::new();
    r.destination_hostgroup = Some(2);
    let rules = compile(&[r]);
    assert_eq!(
        Q::new("SELECT 1").eval(&rules).destination_hostgroup,
        Some(2)
    );
    assert!(Q::new("select 1").eval(&rules).is_empty());
    // Same for a literal-less pattern (the regex-set path) and match_digest.
    let mut r = rule(1);
    r.match_digest = Some(r"^S\w+ \?$".into());
    r.re_modifiers = "GLOBAL".into();
    let rules = compile(&[r]);
    assert!(!Q::new("SELECT 1").eval(&rules).is_empty());
    assert!(Q::new("select 1").eval(&rules).is_empty());
}

#[test]
fn later_rules_see_the_rewritten_text_but_the_original_digest() {
    let mut r1 = rule(1);
    r1.match_pattern = Some("FROM t_old".into());
    r1.replace_pattern = Some("FROM t_new".into());
    let mut r2 = rule(2);
    r2.match_pattern = Some("t_new".into());
    r2.destination_hostgroup = Some(7);
    let mut r3 = rule(3);
    r3.match_digest = Some("t_old".into());
    r3.delay = Some(5);
    let mut r4 = rule(4);
    r4.match_pattern = Some("t_old".into());
    r4.error_msg = Some("never".into());
    let rules = compile(&[r1, r2, r3, r4]);
    let d = Q::new("SELECT * FROM t_old").eval(&rules);
    assert_eq!(text(&d), Some("SELECT * FROM t_new"));
    assert_eq!(
        (d.destination_hostgroup, d.delay, d.error_msg),
        (Some(7), Some(5), None)
    );
    assert_eq!(hits(&rules), vec![(1, 1), (2, 1), (3, 1), (4, 0)]);
}

#[test]
fn error_and_ok_messages_are_carried() {
    let mut r1 = rule(1);
    r1.match_pattern = Some(r"^DROP\b".into());
    r1.error_msg = Some("DROP is not allowed through the proxy".into());
    r1.apply = true;
    let mut r2 = rule(2);
    r2.match_pattern = Some("^SET autocommit".into());
    r2.ok_msg = Some("ignored".into());
    let rules = compile(&[r1, r2]);
    let d = Q::new("DROP TABLE t").eval(&rules);
    assert_eq!(
        d.error_msg.as_deref(),
        Some("DROP is not allowed through the proxy")
    );
    assert_eq!(d.ok_msg, None);
    let d = Q::new("SET autocommit=1").eval(&rules);
    assert_eq!(
        (d.error_msg.as_deref(), d.ok_msg.as_deref()),
        (None, Some("ignored"))
    );
}

#[test]
fn matching_continues_without_apply_and_actions_pile_up() {
    let mut r1 = rule(1);
    r1.match_pattern = Some("^SELECT".into());
    r1.destination_hostgroup = Some(1);
    r1.cache_ttl = Some(5000);
    let mut r2 = rule(2);
    r2.match_pattern = Some("sbtest".into());
    r2.destination_hostgroup = Some(2);
    r2.timeout = Some(100);
    let rules = compile(&[r1, r2]);
    let d = Q::new("SELECT c FROM sbtest1").eval(&rules);
    assert_eq!(
        (
            d.destination_hostgroup,
            d.cache_ttl,
            d.timeout,
            d.matched_rules,
            d.applied
        ),
        (Some(2), Some(5000), Some(100), 2, false)
    );
    assert_eq!(d.last_matched_rule, Some(2));
}

/// flagOUT with the default iterations (0): ProxySQL walks on from the jumping rule, so a chain
/// rule with a smaller rule_id is not reached; with iterations > 0 the chain restarts.
#[test]
fn flag_out_walks_forward_unless_iterations() {
    let mut early = rule(1);
    early.flag_in = 5;
    early.destination_hostgroup = Some(50);
    let mut jump = rule(2);
    jump.flag_out = Some(5);
    let mut late = rule(3);
    late.flag_in = 5;
    late.delay = Some(9);
    let rules = compile(&[early, jump, late]);
    let d = Q::new("SELECT 1").eval(&rules);
    assert_eq!(
        (d.destination_hostgroup, d.delay, d.final_flag),
        (None, Some(9), 5)
    );
    let d = Q::new("SELECT 1").iterations(1).eval(&rules);
    assert_eq!(
        (d.destination_hostgroup, d.delay, d.final_flag),
        (Some(50), Some(9), 5)
    );
}

/// flagOUT back into the same chain: with iterations N the rule is re-evaluated from the start
/// of its chain N times, then evaluation walks on; a two-chain ping-pong ends the same way.
#[test]
fn loop_guard() {
    let mut selfloop = rule(1);
    selfloop.flag_out = Some(0);
    let rules = compile(&[selfloop]);
    assert_eq!(Q::new("x").eval(&rules).matched_rules, 1);
    assert_eq!(Q::new("x").iterations(5).eval(&rules).matched_rules, 6);
    assert_eq!(hits(&rules), vec![(1, 7)]);

    let mut ping = rule(1);
    ping.flag_out = Some(1);
    let mut pong = rule(2);
    pong.flag_in = 1;
    pong.flag_out = Some(0);
    let rules = compile(&[ping, pong]);
    let d = Q::new("x").eval(&rules);
    assert_eq!((d.matched_rules, d.final_flag), (2, 0));
    // 1000 restarts, then the 1001st match (ping) walks forward into pong, which walks forward
    // past the end.
    let d = Q::new("x").iterations(1000).eval(&rules);
    assert_eq!(d.matched_rules, 1002);
    let d = Q::new("x").iterations(1_000_000).eval(&rules);
    assert_eq!(d.matched_rules, 1_000_002);
}

/// ProxySQL sets the flag from flagOUT before it tests apply: the final flag shows it.
#[test]
fn apply_with_flag_out_ends_with_the_new_flag() {
    let mut r = rule(1);
    r.flag_out = Some(4);
    r.apply = true;
    r.destination_hostgroup = Some(1);
    let mut r2 = rule(2);
    r2.flag_in = 4;
    r2.destination_hostgroup = Some(2);
    let rules = compile(&[r, r2]);
    let d = Q::new("x").eval(&rules);
    assert_eq!(
        (d.destination_hostgroup, d.final_flag, d.applied),
        (Some(1), 4, true)
    );
}

#[test]
fn negative_flags_are_null() {
    let mut r = rule(1);
    r.flag_out = Some(-1);
    r.next_query_flag_in = Some(-1);
    r.mirror_flag_out = Some(-3);
    let mut r2 = rule(2);
    r2.destination_hostgroup = Some(4);
    let rules = compile(&[r, r2]);
    let d = Q::new("x").eval(&rules);
    assert_eq!(
        (
            d.final_flag,
            d.next_query_flag_in,
            d.mirror_flag_out,
            d.destination_hostgroup
        ),
        (0, None, None, Some(4))
    );
}

#[test]
fn start_flag_and_next_query_flag() {
    let mut r = rule(1);
    r.flag_in = 3;
    r.next_query_flag_in = Some(0);
    r.destination_hostgroup = Some(9);
    let rules = compile(&[r]);
    assert!(Q::new("x").eval(&rules).is_empty());
    let d = Q::new("x").flag(3).eval(&rules);
    assert_eq!(
        (d.destination_hostgroup, d.next_query_flag_in),
        (Some(9), Some(0))
    );
}

fn eval_with(rules: &CompiledRules, f: impl FnOnce(&mut QueryInput<'_>)) -> Decision {
    let q = Q::new("SELECT 1");
    let mut input = q.input();
    f(&mut input);
    let mut d = Decision::default();
    rules.evaluate(&input, &mut d);
    d
}

#[test]
fn connection_criteria() {
    let mk = |f: &dyn Fn(&mut QueryRuleRow)| {
        let mut r = rule(1);
        f(&mut r);
        r.destination_hostgroup = Some(1);
        compile(&[r])
    };
    let hit = |rules: &CompiledRules, f: &dyn Fn(&mut QueryInput<'_>)| {
        !eval_with(rules, |q| f(q)).is_empty()
    };
    let exact = mk(&|r| r.client_addr = Some("10.0.0.7".into()));
    assert!(hit(&exact, &|_| {}));
    assert!(!hit(&exact, &|q| q.client_addr = "10.0.0.70"));
    let prefix = mk(&|r| r.client_addr = Some("10.0.%".into()));
    assert!(hit(&prefix, &|q| q.client_addr = "10.0.99.1"));
    assert!(!hit(&prefix, &|q| q.client_addr = "10.1.0.1"));
    let any = mk(&|r| r.client_addr = Some("%".into()));
    assert!(hit(&any, &|q| q.client_addr = "192.168.0.1"));
    let empty_is_none = mk(&|r| {
        r.username = Some(String::new());
        r.schemaname = Some(String::new());
    });
    assert!(hit(&empty_is_none, &|q| q.username = "anyone"));
    let port = mk(&|r| {
        r.proxy_port = Some(6033);
        r.proxy_addr = Some("10.0.0.1".into());
    });
    assert!(hit(&port, &|_| {}));
    assert!(!hit(&port, &|q| q.proxy_port = 6034));
    assert!(!hit(&port, &|q| q.proxy_addr = "127.0.0.1"));
    let schema = mk(&|r| r.schemaname = Some("sbtest".into()));
    assert!(hit(&schema, &|_| {}));
    assert!(!hit(&schema, &|q| q.schemaname = ""));
}

#[test]
fn negate_inverts_both_patterns() {
    let mut r = rule(1);
    r.match_pattern = Some("^SELECT".into());
    r.negate_match_pattern = true;
    r.destination_hostgroup = Some(1);
    let rules = compile(&[r]);
    assert!(Q::new("SELECT 1").eval(&rules).is_empty());
    assert_eq!(
        Q::new("UPDATE t SET a=1")
            .eval(&rules)
            .destination_hostgroup,
        Some(1)
    );
    let mut r = rule(1);
    r.match_digest = Some(r"\?".into());
    r.negate_match_pattern = true;
    let rules = compile(&[r]);
    assert!(Q::new("SELECT 1").eval(&rules).is_empty());
    assert!(!Q::new("SELECT a").eval(&rules).is_empty());
}

fn refused(rows: &[QueryRuleRow]) -> Vec<RuleError> {
    match CompiledRules::compile(rows) {
        Ok(_) => panic!("rules accepted"),
        Err(e) => e,
    }
}

#[test]
fn compile_errors_name_every_bad_rule() {
    let mut look = rule(7);
    look.match_pattern = Some(r"(?<!\d)SELECT".into());
    let mut backref = rule(8);
    backref.match_digest = Some(r"(a)\1".into());
    let mut modifier = rule(9);
    modifier.re_modifiers = "CASELESS,MULTILINE".into();
    let mut digest = rule(10);
    digest.digest = Some("abc".into());
    let mut escape = rule(11);
    escape.match_pattern = Some("x".into());
    escape.replace_pattern = Some(r"a\nb".into());
    let mut group = rule(12);
    group.match_pattern = Some("(x)".into());
    group.replace_pattern = Some(r"\2".into());
    let mut unbalanced = rule(13);
    unbalanced.match_pattern = Some("(x".into());
    let fine = rule(14);
    let mut inactive_bad = rule(15);
    inactive_bad.active = false;
    inactive_bad.match_pattern = Some("(".into());
    let errors = refused(&[
        fine,
        look,
        backref,
        modifier,
        digest,
        escape,
        group,
        unbalanced,
        inactive_bad,
    ]);
    let ids: Vec<(u32, &str)> = errors.iter().map(|e| (e.rule_id, e.field)).collect();
    assert_eq!(
        ids,
        vec![
            (7, "match_pattern"),
            (8, "match_digest"),
            (9, "re_modifiers"),
            (10, "digest"),
            (11, "replace_pattern"),
            (12, "replace_pattern"),
            (13, "match_pattern"),
        ]
    );
    let msg = errors[0].to_string();
    assert!(
        msg.starts_with("rule 7: match_pattern: invalid regular expression"),
        "{msg}"
    );
    assert!(msg.contains("look-around"), "{msg}");
    assert!(!msg.contains('\n'), "{msg}");
    assert!(errors[3].message.contains("0x"), "{}", errors[3]);
    assert!(
        errors[5].message.contains("1 capture group"),
        "{}",
        errors[5]
    );

    let dup = refused(&[rule(3), rule(3)]);
    assert_eq!((dup[0].rule_id, dup[0].field), (3, "rule_id"));
    let mut zero = rule(4);
    zero.digest = Some("0x0".into());
    assert_eq!(refused(&[zero])[0].field, "digest");
}

/// Constructs the engine reads differently from PCRE are refused, not silently changed;
/// their look-alikes that mean the same everywhere are not.
#[test]
fn possessive_quantifiers_and_huge_repeat_counts_are_refused() {
    for (i, bad) in [
        "x++x",
        "SELECT .*+ FROM",
        r"\d++",
        "a?+b",
        "a{2}+",
        "a{2,3}+",
        "(ab)++",
        "a{100000}",
        "a{1,70000}",
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = rule(i as u32 + 1);
        r.match_pattern = Some(bad.into());
        let errors = refused(&[r]);
        assert_eq!(errors.len(), 1, "{bad}");
        let msg = errors[0].to_string();
        assert!(
            msg.contains("possessive") || msg.contains("PCRE allows at most"),
            "{bad}: {msg}"
        );
    }
    for (i, fine) in [
        r"a\++",
        "[+]+",
        "[a+]+x",
        "x+?",
        "(?i)x+",
        "a{2}?",
        "a{65535}",
        r"SELECT \? FROM",
        "a+b+",
    ]
    .into_iter()
    .enumerate()
    {
        let mut r = rule(i as u32 + 1);
        r.match_pattern = Some(fine.into());
        assert!(CompiledRules::compile(&[r]).is_ok(), "{fine} refused");
    }
}

#[test]
fn empty_rules() {
    let rules = CompiledRules::empty();
    assert!(rules.is_empty());
    let d = Q::new("SELECT 1").flag(3).eval(&rules);
    assert_eq!(
        d,
        Decision {
            final_flag: 3,
            ..Decision::default()
        }
    );
    assert!(rules.stats().is_empty());
}

#[test]
fn stats_time_is_attributed_only_when_tracked() {
    let mut r1 = rule(1);
    r1.match_pattern = Some("sbtest".into());
    let mut r2 = rule(2);
    r2.match_pattern = Some("nomatch".into());
    let rules = compile(&[r1, r2]);
    let q = Q::new("SELECT c FROM sbtest1");
    let mut d = Decision::default();
    rules.evaluate(&q.input(), &mut d);
    assert_eq!(d.eval_time_ns, 0);
    assert!(rules.stats().iter().all(|s| s.time_ns == 0));
    let mut input = q.input();
    input.track_time = true;
    let mut total = 0;
    for _ in 0..100 {
        rules.evaluate(&input, &mut d);
        total += d.eval_time_ns;
    }
    let stats = rules.stats();
    assert_eq!((stats[0].hits, stats[1].hits), (101, 0));
    assert!(stats[0].time_ns > 0);
    // Rule 2 was never a candidate: its literal is not in the query.
    assert_eq!(stats[1].time_ns, 0);
    assert_eq!(stats[0].time_ns, total);
}

#[test]
fn compiled_rules_are_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<CompiledRules>();
    let mut r = rule(1);
    r.match_pattern = Some(r"\d+".into());
    let rules = std::sync::Arc::new(compile(&[r]));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let rules = rules.clone();
            std::thread::spawn(move || {
                for _ in 0..1000 {
                    assert!(!Q::new("SELECT 1").eval(&rules).is_empty());
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("thread");
    }
    assert_eq!(hits(&rules), vec![(1, 4000)]);
}
