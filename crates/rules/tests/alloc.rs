//! Evaluation allocates nothing once warm, on the no-match path and on a match without rewrite,
//! measured with a counting global allocator (this test binary only).

// A global allocator is `unsafe impl` by definition; it only forwards to the system allocator.
#![allow(unsafe_code)]

mod common;

use common::{compile, rule, Q};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use weir_config::QueryRuleRow;
use weir_rules::Decision;

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A mixed set: literal rules on digest and text, literal-less ones (regex sets), digest,
/// user and catch-all rules, messages, chains.
fn rules() -> Vec<QueryRuleRow> {
    let mut rows = Vec::new();
    for i in 1..=1000u32 {
        let mut r = rule(i);
        r.username = Some("testuser_rw".into());
        r.match_digest = Some(format!(r"(from|into|update|into table) sbtest{i}\b"));
        r.destination_hostgroup = Some(600);
        r.error_msg = (i % 2 == 0).then(|| "refused".to_string());
        r.flag_out = (i == 7).then_some(5);
        rows.push(r);
    }
    let mut set = rule(2001);
    set.match_pattern = Some(r"\d+$".into());
    set.delay = Some(1);
    let mut digest = rule(2002);
    digest.digest = Some("0xABC".into());
    let mut user = rule(2003);
    user.username = Some("testuser_rw".into());
    let mut any = rule(2004);
    any.proxy_port = Some(6033);
    let mut chained = rule(2005);
    chained.flag_in = 5;
    chained.match_pattern = Some("^SELECT".into());
    chained.ok_msg = Some("ok".into());
    let mut rewrite = rule(2006);
    rewrite.match_pattern = Some("^REWRITE ME".into());
    rewrite.replace_pattern = Some("done".into());
    rows.extend([set, digest, user, any, chained, rewrite]);
    rows
}

#[test]
fn evaluation_does_not_allocate() {
    let rules = compile(&rules());
    let no_match =
        Q::new("SELECT c FROM sbtest100001 WHERE id=50321 ORDER BY c").user("testuser_rw");
    let matches = Q::new("SELECT c FROM sbtest8 WHERE id=1")
        .user("testuser_rw")
        .digest(0xABC);
    let chained = Q::new("SELECT c FROM sbtest7 WHERE id=1").user("testuser_rw");
    let mut out = Decision::default();
    for q in [&no_match, &matches, &chained] {
        for _ in 0..3 {
            rules.evaluate(&q.input(), &mut out);
        }
    }
    rules.evaluate(&matches.input(), &mut out);
    assert_eq!(out.error_msg.as_deref(), Some("refused"));
    assert_eq!(out.delay, Some(1));
    rules.evaluate(&chained.input(), &mut out);
    assert_eq!(out.ok_msg.as_deref(), Some("ok"));

    for (name, q) in [
        ("no match", &no_match),
        ("match", &matches),
        ("chain", &chained),
    ] {
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for _ in 0..100 {
            rules.evaluate(&q.input(), &mut out);
        }
        let n = ALLOCATIONS.load(Ordering::Relaxed) - before;
        assert_eq!(n, 0, "{name}: {n} allocations in 100 evaluations");
    }
    // The counter does count: a rewrite allocates the new text.
    let rewrite = Q::new("REWRITE ME");
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    rules.evaluate(&rewrite.input(), &mut out);
    assert_eq!(out.rewritten.as_deref(), Some(&b"done"[..]));
    assert!(ALLOCATIONS.load(Ordering::Relaxed) > before);
}
