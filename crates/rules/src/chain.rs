//! One flagIN chain: its rules in rule_id order and the indexes that turn a query into the few
//! rules worth checking. Each rule is indexed under exactly one *driver* criterion, the most
//! selective one it has; a rule is a candidate for a query when its driver may hold.

use crate::candidates::Candidates;
use crate::prefilter::{required_literals, Prefilter, PrefilterBuilder};
use crate::rule::Rule;
use crate::QueryInput;
use std::collections::HashMap;

/// The chain of one flag.
#[derive(Debug)]
pub(crate) struct Chain {
    pub(crate) flag: i32,
    /// Rule indices (into `CompiledRules::rules`), in rule_id order; a rule's position in the
    /// chain is its index here.
    pub(crate) members: Box<[u32]>,
    /// rule_id of each position, to resume after a given rule.
    ids: Box<[u32]>,
    /// Positions checked for every query (no indexable criterion).
    pub(crate) always: Box<[u32]>,
    by_digest: HashMap<u64, Box<[u32]>>,
    by_user: HashMap<Box<str>, Box<[u32]>>,
    by_schema: HashMap<Box<str>, Box<[u32]>>,
    digest_text: Prefilter,
    query_text: Prefilter,
}

impl Chain {
    /// Indexes the rules at `members` (indices into `rules`, in rule_id order).
    pub(crate) fn build(flag: i32, members: Vec<u32>, rules: &[Rule]) -> Chain {
        let mut always = Vec::new();
        let mut by_digest: HashMap<u64, Vec<u32>> = HashMap::new();
        let mut by_user: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        let mut by_schema: HashMap<Box<str>, Vec<u32>> = HashMap::new();
        let mut digest_text = PrefilterBuilder::default();
        let mut query_text = PrefilterBuilder::default();
        let mut digest_set = Vec::new();
        let mut query_set = Vec::new();
        for (pos, &ri) in members.iter().enumerate() {
            let pos = pos as u32;
            let r = &rules[ri as usize];
            let md = r.match_digest.as_ref().filter(|_| !r.negate);
            let mp = r.match_pattern.as_ref().filter(|_| !r.negate);
            if let Some(d) = r.digest {
                by_digest.entry(d).or_default().push(pos);
            } else if let Some(lits) = md.and_then(|p| required_literals(&p.source)) {
                digest_text.add_literals(pos, lits);
            } else if let Some(lits) = mp.and_then(|p| required_literals(&p.source)) {
                query_text.add_literals(pos, lits);
            } else if let Some(p) = md {
                digest_set.push((pos, p));
            } else if let Some(p) = mp {
                query_set.push((pos, p));
            } else if let Some(u) = &r.username {
                by_user.entry(u.clone()).or_default().push(pos);
            } else if let Some(s) = &r.schemaname {
                by_schema.entry(s.clone()).or_default().push(pos);
            } else {
                always.push(pos);
            }
        }
        for (pos, p) in digest_set {
            digest_text.add_set_pattern(pos, &p.source, p.caseless);
        }
        for (pos, p) in query_set {
            query_text.add_set_pattern(pos, &p.source, p.caseless);
        }
        let (digest_text, mut unindexed) = digest_text.build();
        let (query_text, more) = query_text.build();
        unindexed.extend(more);
        always.extend(unindexed);
        always.sort_unstable();
        always.dedup();
        let ids = members
            .iter()
            .map(|&ri| rules[ri as usize].rule_id)
            .collect();
        Chain {
            flag,
            members: members.into(),
            ids,
            always: always.into(),
            by_digest: boxed(by_digest),
            by_user: boxed(by_user),
            by_schema: boxed(by_schema),
            digest_text,
            query_text,
        }
    }

    /// The first position whose rule_id is greater than `rule_id` (`None`: the first).
    pub(crate) fn resume_after(&self, rule_id: Option<u32>) -> u32 {
        match rule_id {
            None => 0,
            Some(id) => self.ids.partition_point(|&x| x <= id) as u32,
        }
    }

    /// Fills `out` with the sorted indexed candidates at positions `>= from`; `text` is the
    /// current query text. The `always` positions are not included: the caller merges them.
    pub(crate) fn collect(&self, q: &QueryInput<'_>, text: &[u8], from: u32, out: &mut Candidates) {
        out.clear();
        if let Some(ps) = self.by_digest.get(&q.digest) {
            out.extend_from(ps, from);
        }
        self.digest_text.collect(q.digest_text, from, out);
        self.query_text.collect(text, from, out);
        if let Some(ps) = self.by_user.get(q.username) {
            out.extend_from(ps, from);
        }
        if let Some(ps) = self.by_schema.get(q.schemaname) {
            out.extend_from(ps, from);
        }
        out.sort_dedup();
    }

    /// The `always` positions `>= from`.
    pub(crate) fn always_from(&self, from: u32) -> &[u32] {
        &self.always[self.always.partition_point(|&p| p < from)..]
    }
}

fn boxed<K: Eq + std::hash::Hash>(m: HashMap<K, Vec<u32>>) -> HashMap<K, Box<[u32]>> {
    m.into_iter().map(|(k, v)| (k, v.into())).collect()
}
