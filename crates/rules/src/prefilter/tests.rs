use super::{required_literals, PrefilterBuilder};
use crate::candidates::Candidates;

fn lits(p: &str) -> Option<Vec<String>> {
    required_literals(p).map(|v| {
        v.into_iter()
            .map(|l| String::from_utf8(l).expect("utf8"))
            .collect()
    })
}

fn strs(v: &[&str]) -> Option<Vec<String>> {
    let mut v: Vec<String> = v.iter().map(|s| s.to_string()).collect();
    v.sort();
    Some(v)
}

#[test]
fn literals_of_typical_rules() {
    // The longer, rarer literal wins.
    assert_eq!(lits(r"^SELECT.*FOR UPDATE$"), strs(&["for update"]));
    assert_eq!(lits(r"^SELECT"), strs(&["select"]));
    // One literal every match contains beats four alternatives of the same length.
    assert_eq!(
        lits(r"(from|into|update|into table) sbtest12\b"),
        strs(&[" sbtest12"])
    );
    assert_eq!(
        lits(r"(from|into|update|into table) t\b"),
        strs(&["from t", "into t", "into table t", "update t"])
    );
    assert_eq!(lits(r"\/\* [0-1]"), strs(&["/* 0", "/* 1"]));
    // The prefix of the whole pattern is useless here; a part every match contains is not.
    assert_eq!(lits(r"^\s*select"), strs(&["select"]));
    assert_eq!(lits(r"(?i)select"), strs(&["select"]));
    assert_eq!(lits(r"\bt1\b"), strs(&["t1"]));
    assert_eq!(lits(r"x+(abc)"), strs(&["abc"]));
}

#[test]
fn no_literals() {
    assert_eq!(lits(r"^.*$"), None);
    assert_eq!(lits(r"x*"), None);
    assert_eq!(lits(r"a|b"), None);
    assert_eq!(lits(r"\d+"), None);
    assert_eq!(lits(r"(?<=a)b"), None);
}

#[test]
fn collect_from_both_kinds() {
    let mut b = PrefilterBuilder::default();
    b.add_literals(0, vec![b"from t1".to_vec()]);
    b.add_set_pattern(1, r"^\d", false);
    b.add_literals(2, vec![b"from t".to_vec()]);
    b.add_set_pattern(3, "Z$", false);
    b.add_set_pattern(4, "z$", true);
    let (pf, unindexed) = b.build();
    assert!(unindexed.is_empty());
    let mut c = Candidates::new();
    pf.collect(b"1 FROM T1 z", 0, &mut c);
    c.sort_dedup();
    assert_eq!(c.as_slice(), &[0, 1, 2, 4]);
    c.clear();
    pf.collect(b"1 FROM T1 z", 2, &mut c);
    c.sort_dedup();
    assert_eq!(c.as_slice(), &[2, 4]);
}
