//! One compiled rule: its criteria checked exactly, its actions, its rewrite. Built from a
//! `QueryRuleRow`, every problem reported with the rule_id and the column.

use crate::error::RuleError;
use crate::template::Template;
use crate::{Decision, QueryInput};
use regex::bytes::{Regex, RegexBuilder};
use std::borrow::Cow;
use std::sync::Arc;
use weir_config::QueryRuleRow;

/// Size limits for one rule's regex: generous for hand-written patterns, bounded against a
/// pattern that would compile into hundreds of megabytes.
const REGEX_SIZE_LIMIT: usize = 32 << 20;
const REGEX_DFA_SIZE_LIMIT: usize = 8 << 20;

/// A compiled `match_digest` / `match_pattern`.
#[derive(Debug)]
pub(crate) struct Pattern {
    pub(crate) source: Box<str>,
    pub(crate) caseless: bool,
    pub(crate) regex: Regex,
}

/// `client_addr`: exact, or a prefix up to the first `%`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum AddrMatch {
    Exact(Box<str>),
    Prefix(Box<str>),
}

impl AddrMatch {
    fn parse(s: &str) -> AddrMatch {
        match s.find('%') {
            Some(pos) => AddrMatch::Prefix(s[..pos].into()),
            None => AddrMatch::Exact(s.into()),
        }
    }

    fn matches(&self, addr: &str) -> bool {
        match self {
            AddrMatch::Exact(a) => **a == *addr,
            AddrMatch::Prefix(p) => addr.starts_with(&**p),
        }
    }
}

/// The actions of a rule; `None` leaves the decision as earlier rules set it.
#[derive(Debug, Default)]
struct Actions {
    destination_hostgroup: Option<u32>,
    cache_ttl: Option<u32>,
    cache_empty_result: Option<bool>,
    cache_timeout: Option<u32>,
    reconnect: Option<bool>,
    timeout: Option<u32>,
    retries: Option<u32>,
    delay: Option<u32>,
    next_query_flag_in: Option<i32>,
    mirror_flag_out: Option<i32>,
    mirror_hostgroup: Option<u32>,
    error_msg: Option<Arc<str>>,
    ok_msg: Option<Arc<str>>,
    sticky_conn: Option<bool>,
    multiplex: Option<u8>,
    gtid_from_hostgroup: Option<u32>,
    log: Option<bool>,
}

impl Actions {
    fn from_row(r: &QueryRuleRow) -> Actions {
        Actions {
            destination_hostgroup: r.destination_hostgroup,
            cache_ttl: r.cache_ttl,
            cache_empty_result: r.cache_empty_result,
            cache_timeout: r.cache_timeout,
            reconnect: r.reconnect,
            timeout: r.timeout,
            retries: r.retries,
            delay: r.delay,
            next_query_flag_in: non_negative(r.next_query_flag_in),
            mirror_flag_out: non_negative(r.mirror_flag_out),
            mirror_hostgroup: r.mirror_hostgroup,
            error_msg: r.error_msg.as_deref().map(Arc::from),
            ok_msg: r.ok_msg.as_deref().map(Arc::from),
            sticky_conn: r.sticky_conn,
            multiplex: r.multiplex,
            gtid_from_hostgroup: r.gtid_from_hostgroup,
            log: r.log,
        }
    }

    fn apply_to(&self, d: &mut Decision) {
        fn set<T: Clone>(dst: &mut Option<T>, src: &Option<T>) {
            if let Some(v) = src {
                *dst = Some(v.clone());
            }
        }
        set(&mut d.destination_hostgroup, &self.destination_hostgroup);
        set(&mut d.cache_ttl, &self.cache_ttl);
        set(&mut d.cache_empty_result, &self.cache_empty_result);
        set(&mut d.cache_timeout, &self.cache_timeout);
        set(&mut d.reconnect, &self.reconnect);
        set(&mut d.timeout, &self.timeout);
        set(&mut d.retries, &self.retries);
        set(&mut d.delay, &self.delay);
        set(&mut d.next_query_flag_in, &self.next_query_flag_in);
        set(&mut d.mirror_flag_out, &self.mirror_flag_out);
        set(&mut d.mirror_hostgroup, &self.mirror_hostgroup);
        set(&mut d.error_msg, &self.error_msg);
        set(&mut d.ok_msg, &self.ok_msg);
        set(&mut d.sticky_conn, &self.sticky_conn);
        set(&mut d.multiplex, &self.multiplex);
        set(&mut d.gtid_from_hostgroup, &self.gtid_from_hostgroup);
        set(&mut d.log, &self.log);
    }
}

/// ProxySQL keeps NULL as -1 in these columns and acts only on values `>= 0`.
fn non_negative(v: Option<i32>) -> Option<i32> {
    v.filter(|v| *v >= 0)
}

/// An empty string is no criterion (ProxySQL tests `strlen`).
fn non_empty(v: &Option<String>) -> Option<Box<str>> {
    v.as_deref().filter(|s| !s.is_empty()).map(Box::from)
}

/// A rule ready to evaluate.
#[derive(Debug)]
pub(crate) struct Rule {
    pub(crate) rule_id: u32,
    pub(crate) flag_in: i32,
    pub(crate) username: Option<Box<str>>,
    pub(crate) schemaname: Option<Box<str>>,
    client_addr: Option<AddrMatch>,
    proxy_addr: Option<Box<str>>,
    proxy_port: Option<u16>,
    pub(crate) digest: Option<u64>,
    pub(crate) match_digest: Option<Pattern>,
    pub(crate) match_pattern: Option<Pattern>,
    pub(crate) negate: bool,
    global: bool,
    rewrite: Option<Template>,
    pub(crate) flag_out: Option<i32>,
    pub(crate) apply: bool,
    actions: Actions,
}

impl Rule {
    /// Compiles a row; every problem of the row is pushed to `errors`.
    pub(crate) fn compile(r: &QueryRuleRow, errors: &mut Vec<RuleError>) -> Option<Rule> {
        let n = errors.len();
        let id = r.rule_id;
        let (caseless, global) = parse_modifiers(id, &r.re_modifiers, errors);
        let digest = r.digest.as_deref().and_then(|d| match parse_digest(d) {
            Ok(v) => Some(v),
            Err(msg) => {
                errors.push(RuleError::new(id, "digest", msg));
                None
            }
        });
        let match_digest = compile_pattern(
            id,
            "match_digest",
            r.match_digest.as_deref(),
            caseless,
            errors,
        );
        let match_pattern = compile_pattern(
            id,
            "match_pattern",
            r.match_pattern.as_deref(),
            caseless,
            errors,
        );
        let rewrite = r
            .replace_pattern
            .as_deref()
            .and_then(|s| match Template::parse(s) {
                Ok(t) => Some(t),
                Err(msg) => {
                    errors.push(RuleError::new(id, "replace_pattern", msg));
                    None
                }
            });
        if let (Some(t), Some(p)) = (&rewrite, &match_pattern) {
            let groups = p.regex.captures_len() - 1;
            if let Some(g) = t.max_group().filter(|g| *g > groups) {
                errors.push(RuleError::new(
                    id,
                    "replace_pattern",
                    format!(
                        "refers to \\{g} but match_pattern '{}' has {groups} capture group(s)",
                        p.source
                    ),
                ));
            }
        }
        if let Some(m) = r.multiplex.filter(|m| *m > 2) {
            errors.push(RuleError::new(
                id,
                "multiplex",
                format!("value {m} out of range: expected 0, 1 or 2"),
            ));
        }
        if errors.len() > n {
            return None;
        }
        Some(Rule {
            rule_id: id,
            flag_in: r.flag_in,
            username: non_empty(&r.username),
            schemaname: non_empty(&r.schemaname),
            client_addr: non_empty(&r.client_addr).map(|s| AddrMatch::parse(&s)),
            proxy_addr: non_empty(&r.proxy_addr),
            proxy_port: r.proxy_port,
            digest,
            match_digest,
            match_pattern,
            negate: r.negate_match_pattern,
            global,
            rewrite,
            flag_out: non_negative(r.flag_out),
            apply: r.apply,
            actions: Actions::from_row(r),
        })
    }

    /// Whether every criterion holds; `text` is the current (possibly rewritten) query text.
    /// Cheap comparisons first, regexes last.
    pub(crate) fn matches(&self, q: &QueryInput<'_>, text: &[u8]) -> bool {
        if self.username.as_deref().is_some_and(|u| u != q.username)
            || self
                .schemaname
                .as_deref()
                .is_some_and(|s| s != q.schemaname)
            || self.proxy_port.is_some_and(|p| p != q.proxy_port)
            || self.digest.is_some_and(|d| d != q.digest)
            || self
                .proxy_addr
                .as_deref()
                .is_some_and(|a| a != q.proxy_addr)
            || self
                .client_addr
                .as_ref()
                .is_some_and(|a| !a.matches(q.client_addr))
        {
            return false;
        }
        if let Some(p) = &self.match_digest {
            if p.regex.is_match(q.digest_text) == self.negate {
                return false;
            }
        }
        if let Some(p) = &self.match_pattern {
            if p.regex.is_match(text) == self.negate {
                return false;
            }
        }
        true
    }

    /// Records the rule's actions in the decision.
    pub(crate) fn apply_actions(&self, d: &mut Decision) {
        self.actions.apply_to(d);
        if self.actions.timeout.is_some() {
            d.timeout_rule = Some(self.rule_id);
        }
    }

    /// The text after this rule's `replace_pattern`, or `None` when the rule has none or its
    /// regex finds nothing to replace.
    pub(crate) fn rewrite(&self, text: &[u8]) -> Option<Vec<u8>> {
        let (p, t) = (self.match_pattern.as_ref()?, self.rewrite.as_ref()?);
        let out = if self.global {
            p.regex.replace_all(text, t)
        } else {
            p.regex.replace(text, t)
        };
        match out {
            Cow::Owned(v) => Some(v),
            Cow::Borrowed(_) => None,
        }
    }
}

/// `CASELESS` and/or `GLOBAL`, comma-separated, any case; "" is neither.
fn parse_modifiers(id: u32, s: &str, errors: &mut Vec<RuleError>) -> (bool, bool) {
    let (mut caseless, mut global) = (false, false);
    for token in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
        if token.eq_ignore_ascii_case("CASELESS") {
            caseless = true;
        } else if token.eq_ignore_ascii_case("GLOBAL") {
            global = true;
        } else {
            errors.push(RuleError::new(
                id,
                "re_modifiers",
                format!("unknown modifier '{token}': expected CASELESS and/or GLOBAL"),
            ));
        }
    }
    (caseless, global)
}

/// `0x` + 1 to 16 hex digits, not zero (ProxySQL refuses a zero digest too).
pub(crate) fn parse_digest(s: &str) -> Result<u64, String> {
    let hex = s
        .trim()
        .strip_prefix("0x")
        .or_else(|| s.trim().strip_prefix("0X"));
    let value = hex
        .filter(|h| (1..=16).contains(&h.len()) && h.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|h| u64::from_str_radix(h, 16).ok());
    match value {
        Some(0) => Err(format!("invalid digest '{s}': a digest is never 0")),
        Some(v) => Ok(v),
        None => Err(format!(
            "invalid digest '{s}': expected 0x followed by 1 to 16 hex digits"
        )),
    }
}

/// Builds the regex of one rule the way the set and the automaton assume it is built.
pub(crate) fn build_regex(source: &str, caseless: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(source)
        .unicode(false)
        .case_insensitive(caseless)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_DFA_SIZE_LIMIT)
        .build()
}

fn compile_pattern(
    id: u32,
    field: &'static str,
    source: Option<&str>,
    caseless: bool,
    errors: &mut Vec<RuleError>,
) -> Option<Pattern> {
    let source = source?;
    if source.is_empty() {
        errors.push(RuleError::new(
            id,
            field,
            "must not be empty (leave it NULL to match everything)",
        ));
        return None;
    }
    if let Some(problem) = pcre_difference(source) {
        errors.push(RuleError::new(
            id,
            field,
            format!("invalid regular expression '{source}': {problem}"),
        ));
        return None;
    }
    match build_regex(source, caseless) {
        Ok(regex) => Some(Pattern {
            source: source.into(),
            caseless,
            regex,
        }),
        Err(e) => {
            errors.push(RuleError::new(id, field, regex_error(source, &e)));
            None
        }
    }
}

/// Largest repeat count PCRE accepts in `{n,m}`.
const PCRE_MAX_REPEAT: u64 = 65_535;

/// A construct the regex engine accepts but reads differently from PCRE (ProxySQL's default
/// engine), so that a rule would silently match other statements than the DBA meant:
/// possessive quantifiers (`a++`, `.*+`, `a{2}+`: the engine nests the repetition, PCRE never
/// gives back) and repeat counts PCRE refuses. `None` when there is none.
pub(crate) fn pcre_difference(source: &str) -> Option<String> {
    let b = source.as_bytes();
    let mut i = 0;
    // Whether the previous token was a quantifier (a `+` now would make it possessive).
    let mut after_quantifier = false;
    while i < b.len() {
        let c = b[i];
        let quantifier = match c {
            b'\\' => {
                i += 2;
                after_quantifier = false;
                continue;
            }
            b'[' => {
                // A class: `]` right after `[` or `[^` is a member, `\]` too.
                i += 1;
                if b.get(i) == Some(&b'^') {
                    i += 1;
                }
                if b.get(i) == Some(&b']') {
                    i += 1;
                }
                while i < b.len() && b[i] != b']' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                after_quantifier = false;
                continue;
            }
            b'+' if after_quantifier => {
                return Some(format!(
                    "the possessive quantifier at byte {i} is read by weir's regex engine as a \
                     nested repetition, unlike PCRE (write it without the last '+')"
                ));
            }
            b'*' | b'+' => true,
            // `(?` opens a group with flags, not a quantifier; `+?` makes one lazy.
            b'?' => !(after_quantifier || (i > 0 && b[i - 1] == b'(')),
            b'{' => match counted_repeat(&b[i..]) {
                Some((len, max)) => {
                    if max > PCRE_MAX_REPEAT {
                        return Some(format!(
                            "repeat count {max} at byte {i}: PCRE allows at most {PCRE_MAX_REPEAT}"
                        ));
                    }
                    i += len;
                    after_quantifier = true;
                    continue;
                }
                None => false,
            },
            _ => false,
        };
        after_quantifier = quantifier;
        i += 1;
    }
    None
}

/// `{n}`, `{n,}` or `{n,m}` at the start of `b`: its length and its largest count.
fn counted_repeat(b: &[u8]) -> Option<(usize, u64)> {
    let end = b.iter().position(|&c| c == b'}')?;
    let inner = std::str::from_utf8(&b[1..end]).ok()?;
    let (lo, hi) = match inner.split_once(',') {
        Some((lo, hi)) => (lo, hi),
        None => (inner, inner),
    };
    let num = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()))
            .then(|| s.parse().unwrap_or(u64::MAX))
    };
    let lo = num(lo.trim())?;
    let max = if hi.trim().is_empty() {
        lo
    } else {
        num(hi.trim())?.max(lo)
    };
    Some((end + 1, max))
}

/// The regex crate's multi-line diagnostic, folded into one line for an admin ERR packet.
fn regex_error(source: &str, e: &regex::Error) -> String {
    let reason = match e {
        regex::Error::Syntax(text) => text
            .lines()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or(text.as_str())
            .to_string(),
        regex::Error::CompiledTooBig(limit) => {
            format!("the compiled pattern exceeds {limit} bytes")
        }
        other => other.to_string(),
    };
    let hint = if reason.contains("look-around") || reason.contains("backreference") {
        " (weir's regex engine, like RE2, has neither look-around nor backreferences)"
    } else {
        ""
    };
    format!("invalid regular expression '{source}': {reason}{hint}")
}
