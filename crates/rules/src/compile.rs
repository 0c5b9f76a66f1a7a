//! `CompiledRules`: the immutable rule set of one LOAD, with its chains, indexes and counters.

use crate::chain::Chain;
use crate::error::RuleError;
use crate::rule::Rule;
use crate::stats::{RuleCounters, RuleStats};
use std::collections::{BTreeMap, HashSet};
use weir_config::QueryRuleRow;

/// The runtime rule set: compiled once per `LOAD MYSQL QUERY RULES TO RUNTIME`, shared by every
/// session (`Send + Sync`), evaluated with [`CompiledRules::evaluate`].
#[derive(Debug)]
pub struct CompiledRules {
    /// Sorted by rule_id.
    pub(crate) rules: Box<[Rule]>,
    /// Sorted by flag.
    pub(crate) chains: Box<[Chain]>,
    /// Parallel to `rules`.
    pub(crate) counters: Box<[RuleCounters]>,
    /// Which compile this is: unique per process, so that what a session derived from one set
    /// of rules can tell the set changed (without keeping it alive).
    generation: u64,
}

/// The next [`CompiledRules::generation`].
static GENERATIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn next_generation() -> u64 {
    GENERATIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1
}

impl CompiledRules {
    /// Which set of rules this is: no two compiles (nor two empty sets) share one.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// No rules: every query gets an empty decision.
    pub fn empty() -> CompiledRules {
        CompiledRules {
            rules: Box::default(),
            chains: Box::default(),
            counters: Box::default(),
            generation: next_generation(),
        }
    }

    /// Compiles the active rules (inactive rows are skipped). Every rule that cannot be
    /// compiled is reported — invalid or unsupported regex, unknown `re_modifiers`, bad digest,
    /// bad `replace_pattern`, duplicate rule_id — so that LOAD can refuse the whole set with a
    /// message naming each rule.
    pub fn compile(rows: &[QueryRuleRow]) -> Result<CompiledRules, Vec<RuleError>> {
        let mut errors = Vec::new();
        let mut seen = HashSet::new();
        let mut rules = Vec::with_capacity(rows.len());
        for row in rows.iter().filter(|r| r.active) {
            if !seen.insert(row.rule_id) {
                errors.push(RuleError::new(
                    row.rule_id,
                    "rule_id",
                    format!("duplicate rule_id {}", row.rule_id),
                ));
                continue;
            }
            if let Some(rule) = Rule::compile(row, &mut errors) {
                rules.push(rule);
            }
        }
        if !errors.is_empty() {
            errors.sort_by_key(|e| e.rule_id);
            return Err(errors);
        }
        rules.sort_by_key(|r| r.rule_id);
        let mut by_flag: BTreeMap<i32, Vec<u32>> = BTreeMap::new();
        for (i, r) in rules.iter().enumerate() {
            by_flag.entry(r.flag_in).or_default().push(i as u32);
        }
        let chains = by_flag
            .into_iter()
            .map(|(flag, members)| Chain::build(flag, members, &rules))
            .collect();
        let counters = rules.iter().map(|_| RuleCounters::default()).collect();
        Ok(CompiledRules {
            rules: rules.into(),
            chains,
            counters,
            generation: next_generation(),
        })
    }

    /// Hits and attributed time of every rule, in rule_id order (`stats_mysql_query_rules`).
    pub fn stats(&self) -> Vec<RuleStats> {
        self.rules
            .iter()
            .zip(self.counters.iter())
            .map(|(r, c)| c.read(r.rule_id))
            .collect()
    }

    /// Number of rules.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    pub(crate) fn chain(&self, flag: i32) -> Option<&Chain> {
        self.chains
            .binary_search_by_key(&flag, |c| c.flag)
            .ok()
            .map(|i| &self.chains[i])
    }
}

impl Default for CompiledRules {
    fn default() -> Self {
        CompiledRules::empty()
    }
}
