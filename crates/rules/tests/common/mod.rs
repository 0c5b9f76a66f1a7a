//! Helpers shared by the table tests: rules written like the seeds' INSERTs, queries with a
//! crude digest.

#![allow(dead_code)]

use weir_config::QueryRuleRow;
use weir_rules::{CompiledRules, Decision, QueryInput};

/// An active rule with every other column at its default.
pub fn rule(rule_id: u32) -> QueryRuleRow {
    let mut r = QueryRuleRow::new(rule_id);
    r.active = true;
    r
}

pub fn compile(rules: &[QueryRuleRow]) -> CompiledRules {
    match CompiledRules::compile(rules) {
        Ok(c) => c,
        Err(errors) => panic!("rules refused: {errors:?}"),
    }
}

/// Numbers (digit runs that do not continue an identifier) become `?`: enough of a digest for
/// these tests (`sbtest15` stays, `id=4242` becomes `id=?`).
pub fn crude_digest(text: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut prev_word = false;
    let mut in_number = false;
    for b in text.bytes() {
        if b.is_ascii_digit() && (in_number || !prev_word) {
            if !in_number {
                out.push(b'?');
            }
            in_number = true;
        } else {
            out.push(b);
            in_number = false;
        }
        prev_word = b.is_ascii_alphanumeric() || b == b'_';
    }
    out
}

/// A query from `user` with a crude digest text.
pub struct Q {
    pub user: &'static str,
    pub text: Vec<u8>,
    pub digest_text: Vec<u8>,
    pub digest: u64,
    pub flag_in: i32,
    pub iterations: u32,
}

impl Q {
    pub fn new(text: &str) -> Q {
        Q {
            user: "app",
            text: text.as_bytes().to_vec(),
            digest_text: crude_digest(text),
            digest: 0,
            flag_in: 0,
            iterations: 0,
        }
    }

    pub fn user(mut self, user: &'static str) -> Q {
        self.user = user;
        self
    }

    pub fn digest(mut self, digest: u64) -> Q {
        self.digest = digest;
        self
    }

    pub fn iterations(mut self, n: u32) -> Q {
        self.iterations = n;
        self
    }

    pub fn flag(mut self, flag: i32) -> Q {
        self.flag_in = flag;
        self
    }

    pub fn input(&self) -> QueryInput<'_> {
        QueryInput {
            username: self.user,
            schemaname: "sbtest",
            client_addr: "10.0.0.7",
            proxy_addr: "10.0.0.1",
            proxy_port: 6033,
            query: &self.text,
            digest_text: &self.digest_text,
            digest: self.digest,
            flag_in: self.flag_in,
            query_processor_iterations: self.iterations,
            track_time: false,
        }
    }

    pub fn eval(&self, rules: &CompiledRules) -> Decision {
        let mut out = Decision::default();
        rules.evaluate(&self.input(), &mut out);
        out
    }
}

/// Hits per rule_id, in rule_id order.
pub fn hits(rules: &CompiledRules) -> Vec<(u32, u64)> {
    rules.stats().iter().map(|s| (s.rule_id, s.hits)).collect()
}
