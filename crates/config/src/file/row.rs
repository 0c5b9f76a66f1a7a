//! Reading one `[[table]]` row: keys are matched case-insensitively against the column's
//! spellings, values are checked for type and range, and leftover keys are reported.

use crate::error::ConfigError;
use crate::vars::parse_bool;
use toml::{Table, Value};

/// How a value's type is named in messages.
pub(super) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date-time",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

/// One row being read; errors go to the parser's list and mark the row as failed.
pub(super) struct Row<'a> {
    table: &'a Table,
    path: String,
    used: Vec<&'a str>,
    errors: &'a mut Vec<ConfigError>,
    ok: bool,
}

impl<'a> Row<'a> {
    pub(super) fn new(table: &'a Table, path: String, errors: &'a mut Vec<ConfigError>) -> Self {
        Row {
            table,
            path,
            used: Vec::new(),
            errors,
            ok: true,
        }
    }

    /// Records a problem with `key` of this row.
    pub(super) fn error(&mut self, key: &str, message: impl Into<String>) {
        self.ok = false;
        self.errors
            .push(ConfigError::new(format!("{}.{key}", self.path), message));
    }

    /// The value of the first key spelled like one of `names` (any case); a second spelling
    /// of the same column is an error.
    fn find(&mut self, names: &[&str]) -> Option<(&'a str, &'a Value)> {
        let table: &'a Table = self.table;
        let mut found: Option<(&'a str, &'a Value)> = None;
        for (key, value) in table {
            if !names.iter().any(|n| n.eq_ignore_ascii_case(key)) {
                continue;
            }
            self.used.push(key);
            match found {
                Some((first, _)) => self.error(key, format!("given twice (also as '{first}')")),
                None => found = Some((key, value)),
            }
        }
        found
    }

    fn missing(&mut self, names: &[&str]) {
        let what = names.join("' or '");
        let key = names.first().copied().unwrap_or("?");
        self.error(key, format!("missing required key '{what}'"));
    }

    /// A string column, with the key it was found under.
    pub(super) fn string_with_key(&mut self, names: &[&str]) -> Option<(String, String)> {
        let (key, value) = self.find(names)?;
        match value {
            Value::String(s) => Some((key.to_string(), s.clone())),
            other => {
                self.error(key, format!("expected a string, got {}", type_name(other)));
                None
            }
        }
    }

    /// A nullable string column: absent = NULL.
    pub(super) fn opt_string(&mut self, names: &[&str]) -> Option<String> {
        self.string_with_key(names).map(|(_, s)| s)
    }

    /// An `attributes` column: empty or a JSON document, as the admin table's CHECK wants
    /// (checked here so that a file weir accepts can always be written to its tables).
    pub(super) fn json_or_empty(&mut self, names: &[&str]) -> String {
        let Some((key, text)) = self.string_with_key(names) else {
            return String::new();
        };
        if !text.is_empty() {
            if let Err(e) = serde_json::from_str::<serde_json::Value>(&text) {
                self.error(
                    &key,
                    format!("not a JSON document ({e}): give '' or a JSON object such as '{{}}'"),
                );
            }
        }
        text
    }

    /// A string column with a default.
    pub(super) fn string_or(&mut self, names: &[&str], default: &str) -> String {
        self.opt_string(names)
            .unwrap_or_else(|| default.to_string())
    }

    /// A string column that must be present.
    pub(super) fn required_string(&mut self, names: &[&str]) -> Option<String> {
        if !self
            .table
            .keys()
            .any(|k| names.iter().any(|n| n.eq_ignore_ascii_case(k)))
        {
            self.missing(names);
            return None;
        }
        self.opt_string(names)
    }

    /// An integer column within `lo..=hi`; integers written as strings are accepted.
    fn int(&mut self, names: &[&str], lo: i64, hi: i64) -> Option<i64> {
        let (key, value) = self.find(names)?;
        let n = match value {
            Value::Integer(n) => *n,
            Value::String(s) => match s.trim().parse::<i64>() {
                Ok(n) => n,
                Err(_) => {
                    self.error(key, format!("expected an integer, got '{s}'"));
                    return None;
                }
            },
            other => {
                self.error(
                    key,
                    format!("expected an integer, got {}", type_name(other)),
                );
                return None;
            }
        };
        if n < lo || n > hi {
            self.error(key, format!("value {n} out of range: expected {lo}..={hi}"));
            return None;
        }
        Some(n)
    }

    /// A nullable unsigned 32-bit column.
    pub(super) fn opt_u32(&mut self, names: &[&str]) -> Option<u32> {
        self.int(names, 0, i64::from(u32::MAX))
            .and_then(|n| u32::try_from(n).ok())
    }

    /// An unsigned 32-bit column with a default.
    pub(super) fn u32_or(&mut self, names: &[&str], default: u32) -> u32 {
        self.opt_u32(names).unwrap_or(default)
    }

    /// An unsigned 32-bit column that must be present.
    pub(super) fn required_u32(&mut self, names: &[&str]) -> Option<u32> {
        if !self
            .table
            .keys()
            .any(|k| names.iter().any(|n| n.eq_ignore_ascii_case(k)))
        {
            self.missing(names);
            return None;
        }
        self.opt_u32(names)
    }

    /// A nullable port-sized column.
    pub(super) fn opt_u16(&mut self, names: &[&str]) -> Option<u16> {
        self.int(names, 0, i64::from(u16::MAX))
            .and_then(|n| u16::try_from(n).ok())
    }

    /// A port-sized column with a default.
    pub(super) fn u16_or(&mut self, names: &[&str], default: u16) -> u16 {
        self.opt_u16(names).unwrap_or(default)
    }

    /// A nullable small column.
    pub(super) fn opt_u8(&mut self, names: &[&str]) -> Option<u8> {
        self.int(names, 0, i64::from(u8::MAX))
            .and_then(|n| u8::try_from(n).ok())
    }

    /// A nullable signed 32-bit column (flags).
    pub(super) fn opt_i32(&mut self, names: &[&str]) -> Option<i32> {
        self.int(names, i64::from(i32::MIN), i64::from(i32::MAX))
            .and_then(|n| i32::try_from(n).ok())
    }

    /// A signed 32-bit column with a default.
    pub(super) fn i32_or(&mut self, names: &[&str], default: i32) -> i32 {
        self.opt_i32(names).unwrap_or(default)
    }

    /// A nullable boolean column: `true`/`false`, `0`/`1`, or those words as strings.
    pub(super) fn opt_bool(&mut self, names: &[&str]) -> Option<bool> {
        let (key, value) = self.find(names)?;
        let b = match value {
            Value::Boolean(b) => Some(*b),
            Value::Integer(0) => Some(false),
            Value::Integer(1) => Some(true),
            Value::String(s) => parse_bool(s),
            _ => None,
        };
        if b.is_none() {
            let got = match value {
                Value::Integer(n) => n.to_string(),
                Value::String(s) => format!("'{s}'"),
                other => type_name(other).to_string(),
            };
            self.error(
                key,
                format!("expected a boolean (0/1/true/false), got {got}"),
            );
        }
        b
    }

    /// A boolean column with a default.
    pub(super) fn bool_or(&mut self, names: &[&str], default: bool) -> bool {
        self.opt_bool(names).unwrap_or(default)
    }

    /// Reports every key no column claimed; returns whether the row is free of errors.
    pub(super) fn finish(mut self) -> bool {
        let table: &'a Table = self.table;
        for key in table.keys() {
            if !self.used.contains(&key.as_str()) {
                self.error(key, "unknown key");
            }
        }
        self.ok
    }
}
