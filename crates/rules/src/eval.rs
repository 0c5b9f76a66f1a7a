//! Evaluation of one query: walk the candidates of the current chain in rule_id order, apply
//! matches, follow flagOUT, stop at apply.

use crate::candidates::{Candidates, Merge};
use crate::compile::CompiledRules;
use crate::stats::Examined;
use crate::{Decision, QueryInput};
use std::time::Instant;

impl CompiledRules {
    /// Evaluates the rules for one query into `out` (reset first). Once a thread has evaluated
    /// a few queries (the regex engines keep per-thread caches), nothing is allocated unless a
    /// rule rewrites the query or a query makes more than 64 rules of one chain candidates
    /// (`tests/alloc.rs` counts).
    pub fn evaluate(&self, q: &QueryInput<'_>, out: &mut Decision) {
        *out = Decision {
            final_flag: q.flag_in,
            ..Decision::default()
        };
        if self.chains.is_empty() {
            return;
        }
        let started = q.track_time.then(Instant::now);
        let mut examined = Examined::new();
        let mut rewritten: Option<Vec<u8>> = None;
        let mut cands = Candidates::new();
        let mut flag = q.flag_in;
        let mut restarts = q.query_processor_iterations;
        // Where to resume in the chain of `flag`: after this rule_id, or at its first rule.
        let mut after: Option<u32> = None;
        'chains: while let Some(chain) = self.chain(flag) {
            let from = chain.resume_after(after);
            chain.collect(q, rewritten.as_deref().unwrap_or(q.query), from, &mut cands);
            for pos in Merge::new(cands.as_slice(), chain.always_from(from)) {
                let ri = chain.members[pos as usize];
                let rule = &self.rules[ri as usize];
                if started.is_some() {
                    examined.push(ri);
                }
                let text = rewritten.as_deref().unwrap_or(q.query);
                if !rule.matches(q, text) {
                    continue;
                }
                self.counters[ri as usize].hit();
                out.matched_rules += 1;
                out.last_matched_rule = Some(rule.rule_id);
                rule.apply_actions(out);
                let changed = match rule.rewrite(text) {
                    Some(new) => {
                        rewritten = Some(new);
                        true
                    }
                    None => false,
                };
                // ProxySQL sets the flag before testing apply: it shows in `final_flag`.
                let previous = rule.flag_out.map(|next| std::mem::replace(&mut flag, next));
                if rule.apply {
                    out.applied = true;
                    break 'chains;
                }
                if let Some(previous) = previous {
                    if restarts > 0 {
                        // "re-evaluated again against the first rule with said flagIN"
                        restarts -= 1;
                        after = None;
                        continue 'chains;
                    }
                    if flag != previous {
                        // ProxySQL keeps walking its rule list from here with the new flag.
                        after = Some(rule.rule_id);
                        continue 'chains;
                    }
                }
                if changed {
                    // The candidates were found in the old text: look again from here.
                    after = Some(rule.rule_id);
                    continue 'chains;
                }
            }
            break;
        }
        out.final_flag = flag;
        out.rewritten = rewritten;
        if let Some(t0) = started {
            let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
            out.eval_time_ns = ns;
            examined.attribute(ns, &self.counters);
        }
    }
}
