//! The semantic oracle: a line-by-line transcription of ProxySQL 2.x's
//! `Query_Processor::process_mysql_query` loop — one list of rules in rule_id order, every rule's
//! regex tried in turn, `goto __internal_loop` for the reiterations — with none of the chains,
//! indexes or prefilters of the real engine. It shares no code with it.

use regex::bytes::{Regex, RegexBuilder};
use std::borrow::Cow;
use std::sync::Arc;
use weir_config::QueryRuleRow;
use weir_rules::{Decision, QueryInput};

pub struct NaiveRule {
    row: QueryRuleRow,
    digest: Option<u64>,
    match_digest: Option<Regex>,
    match_pattern: Option<Regex>,
    global: bool,
    /// replace_pattern in the regex crate's own syntax.
    replace: Option<String>,
}

pub struct Naive {
    rules: Vec<NaiveRule>,
    pub hits: Vec<u64>,
}

/// `\N` → `${N}`, `\\` → `\`, `$` → `$$` (the regex crate's expansion syntax).
fn translate(template: &str) -> String {
    let mut out = String::new();
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(d) if d.is_ascii_digit() => {
                    out.push_str("${");
                    out.push(d);
                    out.push('}');
                }
                Some('\\') => out.push('\\'),
                other => panic!("oracle given an invalid template {template:?} ({other:?})"),
            },
            '$' => out.push_str("$$"),
            c => out.push(c),
        }
    }
    out
}

impl Naive {
    pub fn new(rows: &[QueryRuleRow]) -> Naive {
        let mut rows: Vec<QueryRuleRow> = rows.iter().filter(|r| r.active).cloned().collect();
        rows.sort_by_key(|r| r.rule_id);
        let rules: Vec<NaiveRule> = rows
            .into_iter()
            .map(|row| {
                let mods = row.re_modifiers.to_ascii_uppercase();
                let caseless = mods.split(',').any(|m| m.trim() == "CASELESS");
                let global = mods.split(',').any(|m| m.trim() == "GLOBAL");
                let re = |p: &Option<String>| {
                    p.as_ref().map(|p| {
                        RegexBuilder::new(p)
                            .unicode(false)
                            .case_insensitive(caseless)
                            .build()
                            .expect("oracle regex")
                    })
                };
                NaiveRule {
                    digest: row
                        .digest
                        .as_ref()
                        .map(|d| u64::from_str_radix(&d[2..], 16).expect("oracle digest")),
                    match_digest: re(&row.match_digest),
                    match_pattern: re(&row.match_pattern),
                    global,
                    replace: row.replace_pattern.as_deref().map(translate),
                    row,
                }
            })
            .collect();
        let hits = vec![0; rules.len()];
        Naive { rules, hits }
    }

    pub fn rule_ids(&self) -> Vec<u32> {
        self.rules.iter().map(|r| r.row.rule_id).collect()
    }

    pub fn evaluate(&mut self, q: &QueryInput<'_>) -> Decision {
        let mut ret = Decision {
            final_flag: q.flag_in,
            ..Decision::default()
        };
        let mut flag_in = q.flag_in;
        let mut reiterate = q.query_processor_iterations;
        let mut new_query: Option<Vec<u8>> = None;
        'internal_loop: loop {
            for (i, qr) in self.rules.iter().enumerate() {
                let r = &qr.row;
                if r.flag_in != flag_in {
                    continue;
                }
                if let Some(u) = r.username.as_deref().filter(|u| !u.is_empty()) {
                    if u != q.username {
                        continue;
                    }
                }
                if let Some(s) = r.schemaname.as_deref().filter(|s| !s.is_empty()) {
                    if s != q.schemaname {
                        continue;
                    }
                }
                if let Some(ca) = r.client_addr.as_deref().filter(|s| !s.is_empty()) {
                    match ca.find('%') {
                        None => {
                            if ca != q.client_addr {
                                continue;
                            }
                        }
                        Some(0) => {}
                        Some(pos) => {
                            let a = q.client_addr.as_bytes();
                            if a.len() < pos || a[..pos] != ca.as_bytes()[..pos] {
                                continue;
                            }
                        }
                    }
                }
                if let Some(pa) = r.proxy_addr.as_deref().filter(|s| !s.is_empty()) {
                    if pa != q.proxy_addr {
                        continue;
                    }
                }
                if let Some(port) = r.proxy_port {
                    if port != q.proxy_port {
                        continue;
                    }
                }
                if let Some(d) = qr.digest {
                    if d != q.digest {
                        continue;
                    }
                }
                if let Some(re) = &qr.match_digest {
                    let rc = re.is_match(q.digest_text);
                    if rc == r.negate_match_pattern {
                        continue;
                    }
                }
                if let Some(re) = &qr.match_pattern {
                    let text = new_query.as_deref().unwrap_or(q.query);
                    let rc = re.is_match(text);
                    if rc == r.negate_match_pattern {
                        continue;
                    }
                }
                // if we arrived here, we have a match
                self.hits[i] += 1;
                ret.matched_rules += 1;
                ret.last_matched_rule = Some(r.rule_id);
                let mut set_flag_out = false;
                if let Some(f) = r.flag_out.filter(|f| *f >= 0) {
                    flag_in = f;
                    set_flag_out = true;
                }
                macro_rules! copy {
                    ($($f:ident),*) => {$(
                        if let Some(v) = r.$f.clone() {
                            ret.$f = Some(v);
                        }
                    )*};
                }
                copy!(
                    reconnect,
                    timeout,
                    retries,
                    delay,
                    mirror_hostgroup,
                    cache_ttl,
                    cache_empty_result,
                    cache_timeout,
                    sticky_conn,
                    multiplex,
                    gtid_from_hostgroup,
                    log,
                    destination_hostgroup
                );
                if r.timeout.is_some() {
                    ret.timeout_rule = Some(r.rule_id);
                }
                if let Some(v) = r.next_query_flag_in.filter(|v| *v >= 0) {
                    ret.next_query_flag_in = Some(v);
                }
                if let Some(v) = r.mirror_flag_out.filter(|v| *v >= 0) {
                    ret.mirror_flag_out = Some(v);
                }
                if let Some(m) = &r.error_msg {
                    ret.error_msg = Some(Arc::from(m.as_str()));
                }
                if let Some(m) = &r.ok_msg {
                    ret.ok_msg = Some(Arc::from(m.as_str()));
                }
                if let (Some(rep), Some(re)) = (&qr.replace, &qr.match_pattern) {
                    let text = new_query.as_deref().unwrap_or(q.query);
                    let out = if qr.global {
                        re.replace_all(text, rep.as_bytes())
                    } else {
                        re.replace(text, rep.as_bytes())
                    };
                    if let Cow::Owned(v) = out {
                        new_query = Some(v);
                    }
                }
                if r.apply {
                    ret.applied = true;
                    break 'internal_loop;
                }
                if set_flag_out && reiterate > 0 {
                    reiterate -= 1;
                    continue 'internal_loop;
                }
            }
            break;
        }
        ret.final_flag = flag_in;
        ret.rewritten = new_query;
        ret
    }
}
