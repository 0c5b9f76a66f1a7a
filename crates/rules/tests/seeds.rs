//! The seeds' rule sets, as their INSERTs write them (rule_ids as AUTOINCREMENT would give
//! them), routing the way the seeds describe.

mod common;

use common::{compile, hits, rule, Q};
use weir_config::QueryRuleRow;

/// Seed 003: `INSERT INTO mysql_query_rules (rule_id, active, match_pattern,
/// destination_hostgroup, apply) VALUES (1,1,'^SELECT.*FOR UPDATE$',1,1), (2,1,'^SELECT',2,1)`.
#[test]
fn seed_003_read_write_split() {
    let mut r1 = rule(1);
    r1.match_pattern = Some("^SELECT.*FOR UPDATE$".into());
    r1.destination_hostgroup = Some(1);
    r1.apply = true;
    let mut r2 = rule(2);
    r2.match_pattern = Some("^SELECT".into());
    r2.destination_hostgroup = Some(2);
    r2.apply = true;
    let rules = compile(&[r1, r2]);

    let d = Q::new("SELECT @@hostname").eval(&rules);
    assert_eq!((d.destination_hostgroup, d.applied), (Some(2), true));
    let d = Q::new("SELECT c FROM sbtest1 WHERE id=10 FOR UPDATE").eval(&rules);
    assert_eq!(d.destination_hostgroup, Some(1));
    // CASELESS is the default re_modifiers.
    let d = Q::new("select c from sbtest1 where id=10 for update").eval(&rules);
    assert_eq!(d.destination_hostgroup, Some(1));
    // Writes match nothing: the user's default_hostgroup applies.
    let d = Q::new("UPDATE sbtest1 SET k=k+1 WHERE id=3").eval(&rules);
    assert!(d.is_empty());
    assert_eq!(d.destination_hostgroup, None);
    let d = Q::new("INSERT INTO sbtest1 VALUES (1)").eval(&rules);
    assert!(d.is_empty());
    assert_eq!(hits(&rules), vec![(1, 2), (2, 1)]);
}

/// Seed 003, later: digest-shaped patterns sending sysbench's point selects to hostgroup 1.
#[test]
fn seed_003_sysbench_patterns() {
    let mut r1 = rule(1);
    r1.match_pattern = Some(r"^SELECT c FROM sbtest1 WHERE id=\d+$".into());
    r1.destination_hostgroup = Some(1);
    r1.apply = true;
    let mut r2 = rule(2);
    r2.match_pattern = Some(
        r"^SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN \d+ AND \d+\+\d+ ORDER BY c$".into(),
    );
    r2.destination_hostgroup = Some(1);
    r2.apply = true;
    let rules = compile(&[r1, r2]);
    assert_eq!(
        Q::new("SELECT c FROM sbtest1 WHERE id=4987")
            .eval(&rules)
            .destination_hostgroup,
        Some(1)
    );
    assert_eq!(
        Q::new("SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 5 AND 5+99 ORDER BY c")
            .eval(&rules)
            .destination_hostgroup,
        Some(1)
    );
    assert!(Q::new("SELECT c FROM sbtest1 WHERE id=4987 LIMIT 1")
        .eval(&rules)
        .is_empty());
}

/// Seed 002, "ProxySQL Binary Search Solution for Rules": the base case (one rule per shard)
/// and the binary-search chains, written with `replace into` (rule_ids 1..5 in order):
/// ```text
/// (1,'\/\* [0-1]',flagIN 0,flagOUT 1,apply 0,hg 999)
/// (1,'\/\* 0',    flagIN 1,flagOUT 0,apply 1,hg 0)
/// (1,'\/\* 1',    flagIN 1,flagOUT 0,apply 1,hg 1)
/// (1,'\/\* 2',    flagIN 0,flagOUT 0,apply 1,hg 2)
/// (1,'\/\* 3',    flagIN 0,flagOUT 0,apply 1,hg 3)
/// ```
/// Shards 0 and 1 go through rule 1 then into chain 1; shards 2 and 3 skip chain 1.
#[test]
fn seed_002_binary_search_chains() {
    let spec: [(&str, i32, i32, bool, u32); 5] = [
        (r"\/\* [0-1]", 0, 1, false, 999),
        (r"\/\* 0", 1, 0, true, 0),
        (r"\/\* 1", 1, 0, true, 1),
        (r"\/\* 2", 0, 0, true, 2),
        (r"\/\* 3", 0, 0, true, 3),
    ];
    let rows: Vec<QueryRuleRow> = spec
        .iter()
        .enumerate()
        .map(|(i, &(pattern, flag_in, flag_out, apply, hg))| {
            let mut r = rule(i as u32 + 1);
            r.match_pattern = Some(pattern.into());
            r.flag_in = flag_in;
            r.flag_out = Some(flag_out);
            r.apply = apply;
            r.destination_hostgroup = Some(hg);
            r
        })
        .collect();
    let rules = compile(&rows);
    for shard in 0..4u32 {
        let q = Q::new(&format!("/* {shard} */ select 'test' from dual;"));
        let d = q.eval(&rules);
        assert_eq!(d.destination_hostgroup, Some(shard), "shard {shard}");
        assert!(d.applied);
        // Shards 0 and 1 matched rule 1 (hg 999) first, then their chain-1 rule.
        let expected_matches = if shard < 2 { 2 } else { 1 };
        assert_eq!(d.matched_rules, expected_matches, "shard {shard}");
    }
    assert_eq!(hits(&rules), vec![(1, 2), (2, 1), (3, 1), (4, 1), (5, 1)]);
    // A query of no shard: only rule 1 may match, and it does not.
    assert!(Q::new("/* 7 */ select 'test' from dual;")
        .eval(&rules)
        .is_empty());
}

/// Seed 002's base case: `insert into mysql_query_rules (active,match_pattern,apply,
/// destination_hostgroup) values (1,'\/\* 000',1,0)` … one rule per shard, the app sending
/// `/* 000 */ select 'test' from dual;`.
#[test]
fn seed_002_one_rule_per_shard() {
    let rows: Vec<QueryRuleRow> = (0..200u32)
        .map(|shard| {
            let mut r = rule(shard + 1);
            r.match_pattern = Some(format!(r"\/\* {shard:03}"));
            r.apply = true;
            r.destination_hostgroup = Some(shard % 4);
            r
        })
        .collect();
    let rules = compile(&rows);
    for shard in [0u32, 1, 57, 199] {
        let d = Q::new(&format!("/* {shard:03} */ select 'test' from dual;")).eval(&rules);
        assert_eq!(
            (d.last_matched_rule, d.destination_hostgroup),
            (Some(shard + 1), Some(shard % 4))
        );
    }
}

/// Seed 004's chained rules, with the backslashes the blog's rendering lost restored
/// (`sbtest1.\b`, `sbtest11\b`):
/// ```text
/// insert into mysql_query_rules (flagin,flagout,username,active,retries,match_digest,apply) VALUES
///   (0,1000,'testuser_rw',1,3,'(from|into|update|into table) sbtest.\b',0),
///   (0,1100,'testuser_rw',1,3,'(from|into|update|into table) sbtest1.\b',0), … sbtest9.\b → 1900
/// insert into mysql_query_rules (flagin,destination_hostgroup,active,match_digest,apply) VALUES
///   (1100,600,1,'(from|into|update|into table) sbtest11\b',1), … sbtest19\b
/// ```
/// and the same second level for 1200…1900.
fn seed_004_chained_rows() -> Vec<QueryRuleRow> {
    let mut rows = Vec::new();
    let mut next_id = 1;
    let mut push = |mut r: QueryRuleRow| {
        r.rule_id = next_id;
        next_id += 1;
        rows.push(r);
    };
    for (flag_out, digits) in [(1000, ".".to_string())]
        .into_iter()
        .chain((1..=9).map(|x| (1000 + 100 * x, format!("{x}."))))
    {
        let mut r = rule(0);
        r.flag_out = Some(flag_out);
        r.username = Some("testuser_rw".into());
        r.retries = Some(3);
        r.match_digest = Some(format!(r"(from|into|update|into table) sbtest{digits}\b"));
        push(r);
    }
    for x in 1..=9 {
        for y in 1..=9 {
            let mut r = rule(0);
            r.flag_in = 1000 + 100 * x;
            r.destination_hostgroup = Some(600);
            r.match_digest = Some(format!(r"(from|into|update|into table) sbtest{x}{y}\b"));
            r.apply = true;
            push(r);
        }
    }
    rows
}

#[test]
fn seed_004_chained_rules() {
    let rows = seed_004_chained_rows();
    let rules = compile(&rows);
    let q = |t: &str| Q::new(&format!("SELECT c FROM {t} WHERE id=4242")).user("testuser_rw");

    // sbtest15: first level `sbtest1.\b` (rule 2, flagOUT 1100), then `sbtest15\b` in 1100.
    let d = q("sbtest15").eval(&rules);
    assert_eq!(d.destination_hostgroup, Some(600));
    assert_eq!(
        d.retries,
        Some(3),
        "actions of the first-level rule are kept"
    );
    assert_eq!((d.matched_rules, d.final_flag, d.applied), (2, 1100, true));
    let chain_rule = rows
        .iter()
        .find(|r| {
            r.flag_in == 1100
                && r.match_digest
                    .as_deref()
                    .is_some_and(|m| m.contains("sbtest15"))
        })
        .map(|r| r.rule_id);
    assert_eq!(d.last_matched_rule, chain_rule);

    // sbtest5: `sbtest.\b` → chain 1000, which has no rules: no hostgroup.
    let d = q("sbtest5").eval(&rules);
    assert_eq!(
        (d.destination_hostgroup, d.final_flag, d.matched_rules),
        (None, 1000, 1)
    );
    // sbtest10: `sbtest1.\b` → chain 1100, where no rule names sbtest10.
    let d = q("sbtest10").eval(&rules);
    assert_eq!((d.destination_hostgroup, d.final_flag), (None, 1100));
    // sbtest100: three digits, no first-level rule.
    assert!(q("sbtest100").eval(&rules).is_empty());
    // Another user: the first level requires testuser_rw.
    assert!(Q::new("SELECT c FROM sbtest15 WHERE id=1")
        .user("other")
        .eval(&rules)
        .is_empty());

    // Every second-level table routes to 600 through exactly two matches.
    for x in 1..=9 {
        for y in 1..=9 {
            let d = q(&format!("sbtest{x}{y}")).eval(&rules);
            assert_eq!(
                (d.destination_hostgroup, d.matched_rules),
                (Some(600), 2),
                "sbtest{x}{y}"
            );
        }
    }
    let stats = rules.stats();
    // Rule 2 (`sbtest1.\b`) saw sbtest15, sbtest10, then sbtest11..19.
    assert_eq!(stats[1].hits, 11);
    assert!(stats.iter().skip(10).all(|s| s.hits == 1 || s.hits == 2));
}

/// Seed 004's "rule ONE": one rule catching every table above sbtest100, with apply.
#[test]
fn seed_004_rule_one() {
    let mut r = rule(1);
    r.username = Some("testuser_rw".into());
    r.destination_hostgroup = Some(600);
    r.retries = Some(3);
    r.match_digest =
        Some(r"(from|into|update|into table) sbtest([1-9]\d{3,}|[1-9][0-9][1-9])\b".into());
    r.apply = true;
    let rules = compile(&[r]);
    let q = |t: &str| Q::new(&format!("SELECT c FROM {t} WHERE id=1")).user("testuser_rw");
    for t in ["sbtest101", "sbtest999", "sbtest1000", "sbtest24567"] {
        assert_eq!(q(t).eval(&rules).destination_hostgroup, Some(600), "{t}");
    }
    // As written, the pattern also leaves out tables ending in 0 below 1000.
    for t in ["sbtest1", "sbtest99", "sbtest100", "sbtest150"] {
        assert!(q(t).eval(&rules).is_empty(), "{t}");
    }
    let d = Q::new("INSERT INTO sbtest5000 VALUES (1)")
        .user("testuser_rw")
        .eval(&rules);
    assert_eq!(d.destination_hostgroup, Some(600));
}

/// Seed 002: `INSERT INTO mysql_query_rules(active,digest,multiplex,apply) SELECT DISTINCT
/// 1,digest,2,0 FROM stats_mysql_query_digest WHERE digest_text LIKE '%@%'`.
#[test]
fn seed_002_digest_rules_keep_multiplexing() {
    let rows: Vec<QueryRuleRow> = [0x9D9D_0C7E_41F2_8A51u64, 0x0000_0000_0000_00AB]
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let mut r = rule(i as u32 + 1);
            r.digest = Some(format!("0x{d:016X}"));
            r.multiplex = Some(2);
            r
        })
        .collect();
    let rules = compile(&rows);
    let d = Q::new("SELECT @@max_allowed_packet")
        .digest(0x9D9D_0C7E_41F2_8A51)
        .eval(&rules);
    assert_eq!((d.multiplex, d.last_matched_rule), (Some(2), Some(1)));
    let d = Q::new("SELECT @a").digest(0xAB).eval(&rules);
    assert_eq!((d.multiplex, d.last_matched_rule), (Some(2), Some(2)));
    assert!(Q::new("SELECT 1").digest(0xAC).eval(&rules).is_empty());
}
