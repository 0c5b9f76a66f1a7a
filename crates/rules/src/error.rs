//! The one error type of the crate: a rule that cannot be compiled, named by its rule_id.

use std::fmt;

/// A rule LOAD must refuse: which rule, which column, what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError {
    /// The offending rule.
    pub rule_id: u32,
    /// The column at fault (`match_pattern`, `re_modifiers`, …).
    pub field: &'static str,
    /// What is wrong, in one line.
    pub message: String,
}

impl RuleError {
    pub(crate) fn new(rule_id: u32, field: &'static str, message: impl Into<String>) -> Self {
        RuleError {
            rule_id,
            field,
            message: message.into(),
        }
    }
}

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rule {}: {}: {}", self.rule_id, self.field, self.message)
    }
}

impl std::error::Error for RuleError {}
