//! Multi-pattern prefilters for one chain and one subject (query text or digest text): which
//! rules' regexes can possibly match, found in one pass whatever the number of rules.
//!
//! Rules whose pattern yields literals (every match contains one of them) go into one
//! Aho-Corasick automaton, searched with overlapping matches; the others go into multi-pattern
//! regex sets (regex-automata `meta`, the engine behind `regex::RegexSet`), in shards. Both only
//! *propose* candidates: the evaluator checks each candidate with the rule's own regex.

#[cfg(test)]
mod tests;

use crate::candidates::Candidates;
use aho_corasick::{AhoCorasick, MatchKind as AcMatchKind};
use regex_automata::util::syntax;
use regex_automata::{meta, Input, MatchKind, PatternSet};
use regex_syntax::hir::literal::{Extractor, Seq};
use regex_syntax::hir::{Hir, HirKind};
use std::cell::RefCell;

/// Patterns per regex set: CRATES.md measured 1.4–3.8 µs per query at 1000 rules for shards of
/// 250–500, while one set of 10,000 took minutes to build. Only literal-less patterns land
/// here, so shards are rarely full.
pub(crate) const SET_SHARD: usize = 256;
/// Lazy-DFA cache of a set: a small cache thrashes on hundreds of patterns (CRATES.md:
/// 686 µs vs 7 µs per query at 1000 patterns); memory is only used as states get built.
const SET_CACHE_CAPACITY: usize = 64 << 20;
/// A rule proposing more literals than this gets no literal prefilter.
const MAX_LITERALS: usize = 256;
/// Literals shorter than this match too often to be worth it (`a|b`).
const MIN_LITERAL_LEN: usize = 2;

thread_local! {
    /// Scratch for the set search: one per thread, sized for a full shard.
    static SCRATCH: RefCell<PatternSet> = RefCell::new(PatternSet::new(SET_SHARD));
}

/// Literals that every match of `pattern` contains (lowercased: the automaton is ASCII
/// case-insensitive, which is sound for CASELESS and case-sensitive rules alike since the
/// evaluator rechecks with the real regex). `None` when no useful set exists.
pub(crate) fn required_literals(pattern: &str) -> Option<Vec<Vec<u8>>> {
    let hir = regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()?;
    best_literals(&hir, &Extractor::new())
}

/// The best literal set among the pattern's own prefixes and those of the parts every match
/// must contain (concatenation members, captured groups, repetitions of at least one).
fn best_literals(hir: &Hir, ex: &Extractor) -> Option<Vec<Vec<u8>>> {
    let mut best = usable(ex.extract(hir));
    let parts: &[Hir] = match hir.kind() {
        HirKind::Concat(subs) => subs,
        HirKind::Capture(c) => std::slice::from_ref(&*c.sub),
        HirKind::Repetition(r) if r.min >= 1 => std::slice::from_ref(&*r.sub),
        _ => &[],
    };
    for part in parts {
        if let Some(lits) = best_literals(part, ex) {
            let better = match &best {
                None => true,
                Some(b) => score(&lits) > score(b),
            };
            if better {
                best = Some(lits);
            }
        }
    }
    best
}

/// Longer shortest literal first (capped: beyond 8 bytes false positives are rare anyway),
/// then fewer literals.
fn score(lits: &[Vec<u8>]) -> (usize, isize) {
    let min = lits.iter().map(Vec::len).min().unwrap_or(0);
    (min.min(8), -(lits.len() as isize))
}

fn usable(seq: Seq) -> Option<Vec<Vec<u8>>> {
    let lits = seq.literals()?;
    if lits.is_empty()
        || lits.len() > MAX_LITERALS
        || lits.iter().any(|l| l.as_bytes().len() < MIN_LITERAL_LEN)
    {
        return None;
    }
    let mut out: Vec<Vec<u8>> = lits
        .iter()
        .map(|l| l.as_bytes().to_ascii_lowercase())
        .collect();
    out.sort();
    out.dedup();
    Some(out)
}

/// One shard of literal-less patterns.
#[derive(Debug)]
struct SetShard {
    set: meta::Regex,
    /// Set pattern index → chain position.
    owner: Box<[u32]>,
}

/// The prefilter of one subject of one chain.
#[derive(Debug, Default)]
pub(crate) struct Prefilter {
    ac: Option<AhoCorasick>,
    /// Automaton pattern index → chain position.
    ac_owner: Box<[u32]>,
    shards: Box<[SetShard]>,
}

impl Prefilter {
    /// Pushes the positions `>= from` whose pattern may match `hay`.
    pub(crate) fn collect(&self, hay: &[u8], from: u32, out: &mut Candidates) {
        if let Some(ac) = &self.ac {
            for m in ac.find_overlapping_iter(hay) {
                let pos = self.ac_owner[m.pattern().as_usize()];
                if pos >= from {
                    out.push(pos);
                }
            }
        }
        if self.shards.is_empty() {
            return;
        }
        SCRATCH.with(|scratch| {
            let mut found = scratch.borrow_mut();
            for shard in self.shards.iter() {
                if shard.owner.last().is_some_and(|&last| last < from) {
                    continue;
                }
                found.clear();
                shard
                    .set
                    .which_overlapping_matches(&Input::new(hay), &mut found);
                for pid in found.iter() {
                    let pos = shard.owner[pid.as_usize()];
                    if pos >= from {
                        out.push(pos);
                    }
                }
            }
        });
    }
}

/// Collects the patterns of one chain and subject, in chain order.
#[derive(Default)]
pub(crate) struct PrefilterBuilder {
    literals: Vec<Vec<u8>>,
    literal_owner: Vec<u32>,
    set_patterns: Vec<String>,
    set_owner: Vec<u32>,
}

impl PrefilterBuilder {
    /// Registers the (non-negated) pattern of the rule at `pos`, by literals when it has
    /// usable ones.
    pub(crate) fn add_literals(&mut self, pos: u32, literals: Vec<Vec<u8>>) {
        for lit in literals {
            self.literals.push(lit);
            self.literal_owner.push(pos);
        }
    }

    /// Registers a literal-less pattern; positions must come in increasing order.
    pub(crate) fn add_set_pattern(&mut self, pos: u32, source: &str, caseless: bool) {
        let flags = if caseless { "(?i)" } else { "" };
        self.set_patterns.push(format!("{flags}{source}"));
        self.set_owner.push(pos);
    }

    /// Builds the automaton and the sets. Positions whose automaton or set could not be built
    /// (size limits) are returned: the chain checks them one by one instead.
    pub(crate) fn build(self) -> (Prefilter, Vec<u32>) {
        let mut unindexed = Vec::new();
        let mut ac = None;
        let mut ac_owner: Box<[u32]> = Box::default();
        if !self.literals.is_empty() {
            let built = AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .match_kind(AcMatchKind::Standard)
                .build(&self.literals);
            match built {
                Ok(a) => {
                    ac = Some(a);
                    ac_owner = self.literal_owner.into();
                }
                Err(_) => {
                    unindexed.extend(self.literal_owner);
                }
            }
        }
        let mut shards = Vec::new();
        for (pats, owner) in self
            .set_patterns
            .chunks(SET_SHARD)
            .zip(self.set_owner.chunks(SET_SHARD))
        {
            match build_set(pats) {
                Some(set) => shards.push(SetShard {
                    set,
                    owner: owner.into(),
                }),
                None => unindexed.extend_from_slice(owner),
            }
        }
        unindexed.sort_unstable();
        unindexed.dedup();
        let pf = Prefilter {
            ac,
            ac_owner,
            shards: shards.into(),
        };
        (pf, unindexed)
    }
}

/// `None` when the shard exceeds the size limits (its rules are then checked one by one).
fn build_set(patterns: &[String]) -> Option<meta::Regex> {
    meta::Regex::builder()
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .configure(
            meta::Config::new()
                .match_kind(MatchKind::All)
                .hybrid_cache_capacity(SET_CACHE_CAPACITY)
                .nfa_size_limit(Some(64 << 20)),
        )
        .build_many(patterns)
        .ok()
}
