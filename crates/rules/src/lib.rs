//! The query processor's rule engine: `mysql_query_rules` compiled once per
//! `LOAD MYSQL QUERY RULES TO RUNTIME` into per-flagIN chains, and evaluated per query as a pure
//! function `(user, schema, addresses, query, digest, flag) →` [`Decision`]. No I/O, no locks on
//! the hot path; hit and time counters are relaxed atomics inside [`CompiledRules`].
//!
//! # Semantics
//!
//! They follow ProxySQL 2.x's `Query_Processor::process_mysql_query` (read in
//! `sysown/proxysql` `lib/Query_Processor.cpp`), the `mysql_query_rules` documentation, and the
//! behaviour DBAs observed and wrote about (seeds 002 and 004; Pythian's "ProxySQL query rules:
//! notes from production"). Where weir differs it says so below.
//!
//! - **Order.** Rules are evaluated in `rule_id` order among those whose `flagIN` equals the
//!   current flag; the flag starts at [`QueryInput::flag_in`] (0, or the session's
//!   `next_query_flagIN`, or the `mirror_flagOUT` of a mirrored query).
//! - **Criteria.** A rule matches when every criterion it sets holds. `username`,
//!   `schemaname`, `proxy_addr` compare exactly; an empty string is no criterion (ProxySQL tests
//!   `strlen`). `client_addr` compares exactly, or, when it contains `%`, as a prefix up to the
//!   first `%` (`'10.0.%'`, and `'%'` alone matches every client), as ProxySQL's
//!   `client_addr_wildcard_position`. `proxy_port` compares exactly. `digest` is the `0x…` hash
//!   text, parsed once and compared with [`QueryInput::digest`]. `match_digest` is a regex
//!   searched (not anchored) in the digest text, `match_pattern` in the query text;
//!   `negate_match_pattern` inverts both. `re_modifiers`: `CASELESS` (the default) makes both
//!   case-insensitive (ASCII), `GLOBAL` makes `replace_pattern` replace every match instead of the
//!   first.
//! - **Which text.** `match_digest` always sees the digest of the original query.
//!   `match_pattern` sees the current text: once a rule has rewritten the query, later rules see
//!   the rewritten text (ProxySQL: "if we already rewrote the query, process the new query").
//! - **Actions.** On a match the rule's hit counter increments and each action it sets
//!   (destination_hostgroup, cache_ttl, timeout, error_msg, …) overrides what earlier matches
//!   set; actions left NULL keep earlier values. Negative `flagOUT`, `next_query_flagIN` and
//!   `mirror_flagOUT` are NULL, as in ProxySQL which stores NULL as -1 and tests `>= 0`.
//! - **Rewrite.** `replace_pattern` rewrites the current text with `match_pattern`'s regex.
//!   Its syntax is RE2's and pcrecpp's: `\0`…`\9` insert a capture group (a group that did not
//!   participate inserts nothing), `\\` a backslash, anything else is literal (`$1` is the two
//!   characters `$1`). A backslash before anything else, or a group the pattern does not have,
//!   makes ProxySQL silently skip the rewrite; weir refuses the rule at LOAD instead, naming it.
//!   [`Decision::rewritten`] is set only when a replacement happened (ProxySQL also copies the
//!   text unchanged when the regex finds nothing to replace; the bytes sent are the same).
//! - **Continuing.** Without `apply` and without `flagOUT`, evaluation continues with the next
//!   rule of the same chain: several rules can match and pile up their actions. `apply = 1` on a
//!   matching rule stops evaluation (tested before `flagOUT`, as in ProxySQL).
//! - **flagOUT.** A matching rule with `flagOUT` sets the current flag. With
//!   `mysql-query_processor_iterations = 0` (ProxySQL's default, [`QueryInput::query_processor_iterations`])
//!   evaluation then continues in the chain of the new flag *with the rules whose rule_id is
//!   greater than the matching rule's*: ProxySQL keeps walking its single rule list from where it
//!   is, so a chain's rules must have larger rule_ids than the rule that jumps into it (a
//!   surprise DBAs report; seeds 002 and 004 write their chains in that order). `flagOUT` equal
//!   to the current flag then simply continues the chain. With `iterations = N > 0`, each of the
//!   first N matches that set `flagOUT` (equal to the current flag or not) restarts evaluation at
//!   the *first* rule of the new flag's chain — the documented "re-evaluated again against the
//!   first rule with said flagIN"; after N restarts it continues forward as with 0.
//! - **Loop guard.** Forward evaluation only moves to larger rule_ids, and restarts are capped
//!   by `iterations` (0..=1,000,000 by the variable's range), so every evaluation ends: a rule
//!   whose `flagOUT` loops back to its own chain is evaluated at most `iterations + 1` times.
//! - **No match** leaves every field `None`: the session applies the user's default_hostgroup.
//!
//! # Regex dialect
//!
//! Patterns are compiled by the `regex` crate on bytes, with Unicode off (`.` is one byte, `\w`
//! `\d` `\s` `\b` are ASCII), like ProxySQL's PCRE/RE2 without UTF mode. Look-around and
//! backreferences are not supported by this engine (nor by RE2, ProxySQL's
//! `mysql-query_processor_regex=2`; PCRE, its default `=1`, has them): such a rule is refused at
//! LOAD with an error naming the rule and the construct, so it can never silently not match.
//! Known small differences with PCRE: `$` matches only at the very end (PCRE also before a final
//! newline), and `\Z`, `\Q…\E`, `\h`, `\e` are refused, as are possessive quantifiers (which
//! this engine would read as nested repetitions) and repeat counts PCRE refuses (over 65535).
//!
//! # How evaluation stays flat in the number of rules
//!
//! ProxySQL tries each rule's regex in turn (seed 004: 100 rules cost a visible share of the
//! throughput; seed 002: 200 shards, up to 200 regex runs per query). weir indexes each chain at
//! LOAD, picking for every rule one *driver* criterion that makes it a candidate:
//!
//! 1. an exact `digest` → a hash map digest → rules;
//! 2. a (non-negated) `match_digest` / `match_pattern` from which literals can be extracted
//!    (every match contains one of them: `(from|into) sbtest12\b` → `from sbtest12`,
//!    `into sbtest12`) → one Aho-Corasick automaton per chain and subject (digest text, query
//!    text), searched once per query with overlapping matches, ASCII case-insensitive;
//! 3. other non-negated regexes → `RegexSet`-style multi-pattern sets (regex-automata `meta`,
//!    shards of 256 patterns, large lazy-DFA cache, per-pattern `(?i)` for CASELESS);
//! 4. `username`, then `schemaname` → hash maps;
//! 5. everything else (negated patterns, address-only rules, catch-alls) → checked in turn.
//!
//! A query then costs one automaton pass per subject and chain visited, plus a full check of the
//! few candidate rules, in rule_id order, with their own regex (the prefilters only propose).
//! After a rewrite the query-text prefilter is run again on the new text for the rest of the
//! chain. Measured figures are in `bench/RESULTS.md`; the literal automaton replaced a pure
//! RegexSet design because at 10,000 rules a single set took minutes to build and shards cost
//! 10 µs per query (see the crate's bench notes there).
//!
//! # Stats
//!
//! [`CompiledRules::stats`] reports per rule its hits and `time_ns`. Timing every rule with its
//! own clock reads would cost more than evaluating it, so when [`QueryInput::track_time`] is set
//! the whole evaluation is timed (two clock reads) and the time is split equally among the rules
//! that were examined individually for that query (the candidates: at most the first 32 of them
//! receive a share). Prefilter passes are part of the time being split; a query for which no
//! rule was a candidate attributes its (small) time to no rule — it is in
//! [`Decision::eval_time_ns`], which the session adds to `Query_Processor_time_nsec`.
//! Counters live in the compiled set, so a LOAD resets them, as in ProxySQL.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod candidates;
mod chain;
mod compile;
mod error;
mod eval;
mod prefilter;
mod rule;
mod stats;
mod template;

pub use compile::CompiledRules;
pub use error::RuleError;
pub use stats::RuleStats;

use std::sync::Arc;

/// Everything a query's evaluation depends on. Borrowed from the session: building one costs
/// nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct QueryInput<'a> {
    /// The client's user name.
    pub username: &'a str,
    /// The session's current schema ("" when none).
    pub schemaname: &'a str,
    /// The client's address, as shown in the processlist (IP text).
    pub client_addr: &'a str,
    /// The local address the client connected to.
    pub proxy_addr: &'a str,
    /// The local port the client connected to.
    pub proxy_port: u16,
    /// The query text as the client sent it.
    pub query: &'a [u8],
    /// The normalized digest text of the query.
    pub digest_text: &'a [u8],
    /// The digest hash of the query.
    pub digest: u64,
    /// The flag evaluation starts with: 0, the previous query's `next_query_flagIN`, or the
    /// `mirror_flagOUT` for a mirrored query.
    pub flag_in: i32,
    /// `mysql-query_processor_iterations`: how many times a `flagOUT` may restart evaluation at
    /// the beginning of a chain (0 = never, ProxySQL's default; see the crate docs).
    pub query_processor_iterations: u32,
    /// Time the evaluation (two clock reads) and attribute the time to the rules examined.
    pub track_time: bool,
}

/// What the rules decided for one query. `None` everywhere means "no rule set this": the
/// session falls back to the user's defaults and the global variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    /// Route the query to this hostgroup.
    pub destination_hostgroup: Option<u32>,
    /// Send this text instead of the query (the digest stays the original's).
    pub rewritten: Option<Vec<u8>>,
    /// Cache the result set this many milliseconds.
    pub cache_ttl: Option<u32>,
    /// Whether an empty result set may be cached.
    pub cache_empty_result: Option<bool>,
    /// Wait this many milliseconds for a cache entry being filled by another session.
    pub cache_timeout: Option<u32>,
    /// Kill the query after this many milliseconds.
    pub timeout: Option<u32>,
    /// The rule_id of the rule whose `timeout` is in [`Decision::timeout`], so that the error
    /// a timed-out client gets can name it.
    pub timeout_rule: Option<u32>,
    /// Retries on backend failure.
    pub retries: Option<u32>,
    /// Delay the query this many milliseconds (added to `mysql-default_query_delay`).
    pub delay: Option<u32>,
    /// The flag the session's next query starts with.
    pub next_query_flag_in: Option<i32>,
    /// Mirror the query, evaluating the mirror from this flag.
    pub mirror_flag_out: Option<i32>,
    /// Mirror the query to this hostgroup.
    pub mirror_hostgroup: Option<u32>,
    /// Answer the client with this error instead of running the query.
    pub error_msg: Option<Arc<str>>,
    /// Answer the client with OK and this message instead of running the query.
    pub ok_msg: Option<Arc<str>>,
    /// Keep the session on its backend connection.
    pub sticky_conn: Option<bool>,
    /// 0 disable multiplexing, 1 enable, 2 do not disable it for this query.
    pub multiplex: Option<u8>,
    /// Log the query to the events log.
    pub log: Option<bool>,
    /// Allow re-executing the query on a new connection if the connection is lost.
    pub reconnect: Option<bool>,
    /// Read-your-writes: wait for the GTID of this hostgroup.
    pub gtid_from_hostgroup: Option<u32>,
    /// How many rule matches contributed (a rule matched twice through a restart counts twice).
    pub matched_rules: u32,
    /// The rule_id of the last matching rule.
    pub last_matched_rule: Option<u32>,
    /// The flag evaluation ended with (ProxySQL consults `mysql_query_rules_fast_routing` with
    /// it when no rule applied).
    pub final_flag: i32,
    /// Whether evaluation stopped at a matching rule with `apply = 1`.
    pub applied: bool,
    /// Nanoseconds spent evaluating, when [`QueryInput::track_time`] was set; 0 otherwise.
    pub eval_time_ns: u64,
}

impl Decision {
    /// Whether no rule matched.
    pub fn is_empty(&self) -> bool {
        self.matched_rules == 0
    }
}
