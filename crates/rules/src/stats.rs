//! Per-rule counters: relaxed atomics, one cache line per rule so that workers hitting
//! neighbouring rules do not contend on the same line.

use std::sync::atomic::{AtomicU64, Ordering};

/// One row of `stats_mysql_query_rules`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuleStats {
    /// The rule.
    pub rule_id: u32,
    /// How many queries it matched since the rules were loaded.
    pub hits: u64,
    /// Evaluation time attributed to it, in nanoseconds (see the crate docs for how).
    pub time_ns: u64,
}

#[derive(Debug, Default)]
#[repr(align(64))]
pub(crate) struct RuleCounters {
    hits: AtomicU64,
    time_ns: AtomicU64,
}

impl RuleCounters {
    pub(crate) fn hit(&self) {
        self.hits.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn add_time(&self, ns: u64) {
        self.time_ns.fetch_add(ns, Ordering::Relaxed);
    }

    pub(crate) fn read(&self, rule_id: u32) -> RuleStats {
        RuleStats {
            rule_id,
            hits: self.hits.load(Ordering::Relaxed),
            time_ns: self.time_ns.load(Ordering::Relaxed),
        }
    }
}

/// The rules examined for one query, for time attribution: the first `CAP` of them.
pub(crate) struct Examined {
    rules: [u32; Examined::CAP],
    len: usize,
}

impl Examined {
    const CAP: usize = 32;

    pub(crate) fn new() -> Self {
        Examined {
            rules: [0; Examined::CAP],
            len: 0,
        }
    }

    pub(crate) fn push(&mut self, rule: u32) {
        if self.len < Examined::CAP {
            self.rules[self.len] = rule;
            self.len += 1;
        }
    }

    /// Splits `ns` equally among the recorded rules (the remainder to the first).
    pub(crate) fn attribute(&self, ns: u64, counters: &[RuleCounters]) {
        let n = self.len as u64;
        if n == 0 {
            return;
        }
        let (share, rest) = (ns / n, ns % n);
        for (i, &r) in self.rules[..self.len].iter().enumerate() {
            let extra = if i == 0 { rest } else { 0 };
            counters[r as usize].add_time(share + extra);
        }
    }
}
