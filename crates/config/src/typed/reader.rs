//! Reading typed values out of [`Variables`], with a located error for anything unusable.

use super::lists::{parse_credentials, parse_interfaces, ListenAddr};
use crate::error::ConfigError;
use crate::vars::{parse_bool, Variables};
use std::time::Duration;

/// Reads typed values out of [`Variables`], recording a located error for anything unusable.
pub(super) struct Reader<'a> {
    vars: &'a Variables,
    section: &'static str,
    pub(super) errors: Vec<ConfigError>,
}

impl<'a> Reader<'a> {
    pub(super) fn new(vars: &'a Variables, section: &'static str) -> Self {
        Reader {
            vars,
            section,
            errors: Vec::new(),
        }
    }

    pub(super) fn err(&mut self, name: &str, message: impl Into<String>) {
        self.errors.push(ConfigError::new(
            format!("{}.{name}", self.section),
            message,
        ));
    }

    pub(super) fn raw(&mut self, name: &str) -> Option<&'a str> {
        let v = self.vars.get(name);
        if v.is_none() {
            self.err(name, "variable missing from the registry");
        }
        v
    }

    pub(super) fn int(&mut self, name: &str, min: i64, max: i64) -> Option<i64> {
        let raw = self.raw(name)?;
        match raw.trim().parse::<i64>() {
            Ok(n) if (min..=max).contains(&n) => Some(n),
            Ok(n) => {
                self.err(
                    name,
                    format!("value {n} out of range: expected {min}..={max}"),
                );
                None
            }
            Err(_) => {
                self.err(name, format!("invalid value '{raw}': expected an integer"));
                None
            }
        }
    }

    pub(super) fn u32(&mut self, name: &str) -> u32 {
        self.int(name, 0, i64::from(u32::MAX))
            .and_then(|n| u32::try_from(n).ok())
            .unwrap_or(0)
    }

    pub(super) fn u16(&mut self, name: &str) -> u16 {
        self.int(name, 0, i64::from(u16::MAX))
            .and_then(|n| u16::try_from(n).ok())
            .unwrap_or(0)
    }

    pub(super) fn usize(&mut self, name: &str) -> usize {
        self.int(name, 0, i64::from(u32::MAX))
            .and_then(|n| usize::try_from(n).ok())
            .unwrap_or(0)
    }

    pub(super) fn ms(&mut self, name: &str) -> Duration {
        self.int(name, 0, i64::MAX)
            .and_then(|n| u64::try_from(n).ok())
            .map(Duration::from_millis)
            .unwrap_or_default()
    }

    /// `None` when the variable is 0 ("off"/"no limit").
    pub(super) fn opt_ms(&mut self, name: &str) -> Option<Duration> {
        Some(self.ms(name)).filter(|d| !d.is_zero())
    }

    pub(super) fn secs(&mut self, name: &str) -> Duration {
        self.int(name, 0, i64::MAX)
            .and_then(|n| u64::try_from(n).ok())
            .map(Duration::from_secs)
            .unwrap_or_default()
    }

    pub(super) fn bool(&mut self, name: &str) -> bool {
        let Some(raw) = self.raw(name) else {
            return false;
        };
        parse_bool(raw).unwrap_or_else(|| {
            self.err(name, format!("invalid value '{raw}': expected a boolean"));
            false
        })
    }

    pub(super) fn string(&mut self, name: &str) -> String {
        self.raw(name).unwrap_or_default().to_string()
    }

    /// `None` when the variable is empty.
    pub(super) fn opt_string(&mut self, name: &str) -> Option<String> {
        Some(self.string(name)).filter(|s| !s.is_empty())
    }

    pub(super) fn ifaces(&mut self, name: &str) -> Vec<ListenAddr> {
        let Some(raw) = self.raw(name) else {
            return Vec::new();
        };
        match parse_interfaces(raw) {
            Ok(list) if list.is_empty() => {
                self.err(
                    name,
                    "expected at least one address (host:port or /socket/path)",
                );
                list
            }
            Ok(list) => list,
            Err(e) => {
                self.err(name, e);
                Vec::new()
            }
        }
    }

    pub(super) fn credentials(&mut self, name: &str) -> Vec<(String, String)> {
        let Some(raw) = self.raw(name) else {
            return Vec::new();
        };
        parse_credentials(raw).unwrap_or_else(|e| {
            self.err(name, e);
            Vec::new()
        })
    }

    pub(super) fn finish<T>(self, value: T) -> Result<T, Vec<ConfigError>> {
        if self.errors.is_empty() {
            Ok(value)
        } else {
            Err(self.errors)
        }
    }
}
