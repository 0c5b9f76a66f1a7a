//! The variables registry: one static spec table per prefix (`mysql-`, `admin-`) and
//! [`Variables`], the normalized values of every spec. The file parser, admin `SET`,
//! `SHOW VARIABLES` and `global_variables` all go through it, so validation lives in one place.

mod admin_specs;
mod mysql_specs;
#[cfg(test)]
mod tests;

pub use admin_specs::ADMIN_VARIABLE_SPECS;
pub use mysql_specs::MYSQL_VARIABLE_SPECS;

use crate::typed::{parse_credentials, parse_interfaces};

/// What values a variable accepts, and how they are normalized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarKind {
    /// `true`/`false`/`1`/`0`/`on`/`off` (any case), normalized to `true`/`false`.
    Bool,
    /// A decimal integer within `min..=max`, normalized to its plain decimal form.
    Int {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// Any text, kept as given.
    Str,
    /// One of the listed words (any case), normalized to the listed spelling.
    Enum(&'static [&'static str]),
    /// A `;`-separated list of `host:port` and Unix socket paths (see [`parse_interfaces`]).
    Interfaces,
    /// A `;`-separated list of `user:password` (see [`parse_credentials`]).
    Credentials,
    /// A server version for the handshake: empty, or digits, a dot, then printable ASCII, at
    /// most [`MAX_VERSION_LEN`] characters (drivers read the leading number; the handshake
    /// ends the text with a NUL).
    Version,
}

/// Longest server version accepted ([`VarKind::Version`]).
pub const MAX_VERSION_LEN: usize = 100;

impl VarKind {
    /// Validates `value` and returns the form to store, or why it is refused.
    pub fn normalize(&self, value: &str) -> Result<String, String> {
        match *self {
            VarKind::Bool => parse_bool(value).map(|b| b.to_string()).ok_or_else(|| {
                format!("invalid value '{value}': expected a boolean (true/false/1/0/on/off)")
            }),
            VarKind::Int { min, max } => {
                let n: i64 = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("invalid value '{value}': expected an integer"))?;
                if n < min || n > max {
                    return Err(format!("value {n} out of range: expected {min}..={max}"));
                }
                Ok(n.to_string())
            }
            VarKind::Str => Ok(value.to_string()),
            VarKind::Enum(choices) => {
                let t = value.trim();
                choices
                    .iter()
                    .find(|c| c.eq_ignore_ascii_case(t))
                    .map(|c| (*c).to_string())
                    .ok_or_else(|| {
                        format!(
                            "invalid value '{value}': expected one of {}",
                            choices.join(", ")
                        )
                    })
            }
            VarKind::Interfaces => {
                let t = value.trim();
                let list =
                    parse_interfaces(t).map_err(|e| format!("invalid value '{value}': {e}"))?;
                if list.is_empty() {
                    return Err(
                        "expected at least one address (host:port or /socket/path)".to_string()
                    );
                }
                Ok(t.to_string())
            }
            VarKind::Credentials => {
                let t = value.trim();
                // The message names the offending entry, which may hold a password: do not
                // echo the whole value.
                parse_credentials(t)?;
                Ok(t.to_string())
            }
            VarKind::Version => {
                let t = value.trim();
                let digits = t.bytes().take_while(u8::is_ascii_digit).count();
                let valid = t.is_empty()
                    || (digits > 0
                        && t.as_bytes().get(digits) == Some(&b'.')
                        && t.len() <= MAX_VERSION_LEN
                        && t.bytes().all(|b| (0x20..0x7f).contains(&b)));
                if valid {
                    Ok(t.to_string())
                } else {
                    Err(format!(
                        "invalid value '{}': expected a version such as 8.0.36 or \
                         10.11.6-MariaDB (digits, a dot, then printable ASCII; at most \
                         {MAX_VERSION_LEN} characters), or empty",
                        t.chars().take(40).collect::<String>()
                    ))
                }
            }
        }
    }

    /// A short description of the accepted values, for docs and messages.
    pub fn describe(&self) -> String {
        match self {
            VarKind::Bool => "boolean".to_string(),
            VarKind::Int { min, max } => format!("integer {min}..={max}"),
            VarKind::Str => "string".to_string(),
            VarKind::Enum(c) => format!("one of {}", c.join(", ")),
            VarKind::Interfaces => "address list".to_string(),
            VarKind::Credentials => "credential list".to_string(),
            VarKind::Version => "server version".to_string(),
        }
    }
}

/// Reads a boolean the way ProxySQL's admin does, plus `on`/`off`.
pub(crate) fn parse_bool(value: &str) -> Option<bool> {
    let t = value.trim();
    if ["true", "1", "on"]
        .iter()
        .any(|w| w.eq_ignore_ascii_case(t))
    {
        Some(true)
    } else if ["false", "0", "off"]
        .iter()
        .any(|w| w.eq_ignore_ascii_case(t))
    {
        Some(false)
    } else {
        None
    }
}

/// The specification of one variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarSpec {
    /// Name without its prefix, e.g. `connect_timeout_server`.
    pub name: &'static str,
    /// Accepted values.
    pub kind: VarKind,
    /// Default value, already in normalized form.
    pub default: &'static str,
    /// Whether a change takes effect at `LOAD ... TO RUNTIME`; `false` = needs a restart.
    pub live: bool,
    /// One line for operators: what it does, with its unit.
    pub doc: &'static str,
}

impl VarSpec {
    pub(crate) const fn new(
        name: &'static str,
        kind: VarKind,
        default: &'static str,
        doc: &'static str,
    ) -> Self {
        VarSpec {
            name,
            kind,
            default,
            live: true,
            doc,
        }
    }

    pub(crate) const fn boolean(
        name: &'static str,
        default: &'static str,
        doc: &'static str,
    ) -> Self {
        Self::new(name, VarKind::Bool, default, doc)
    }

    pub(crate) const fn int(
        name: &'static str,
        default: &'static str,
        min: i64,
        max: i64,
        doc: &'static str,
    ) -> Self {
        Self::new(name, VarKind::Int { min, max }, default, doc)
    }

    pub(crate) const fn string(
        name: &'static str,
        default: &'static str,
        doc: &'static str,
    ) -> Self {
        Self::new(name, VarKind::Str, default, doc)
    }

    pub(crate) const fn one_of(
        name: &'static str,
        default: &'static str,
        choices: &'static [&'static str],
        doc: &'static str,
    ) -> Self {
        Self::new(name, VarKind::Enum(choices), default, doc)
    }

    /// Marks the variable as taking effect only at the next start.
    pub(crate) const fn restart(mut self) -> Self {
        self.live = false;
        self
    }
}

/// The current value of every variable of one prefix, normalized; unknown names are refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variables {
    prefix: &'static str,
    specs: &'static [VarSpec],
    /// `values[i]` belongs to `specs[i]`.
    values: Vec<String>,
}

impl Variables {
    /// Every `mysql-*` variable at its default.
    pub fn mysql_defaults() -> Self {
        Self::defaults("mysql-", MYSQL_VARIABLE_SPECS)
    }

    /// Every `admin-*` variable at its default.
    pub fn admin_defaults() -> Self {
        Self::defaults("admin-", ADMIN_VARIABLE_SPECS)
    }

    fn defaults(prefix: &'static str, specs: &'static [VarSpec]) -> Self {
        Variables {
            prefix,
            specs,
            values: specs.iter().map(|s| s.default.to_string()).collect(),
        }
    }

    /// The prefix of these variables' full names (`mysql-` or `admin-`).
    pub fn prefix(&self) -> &'static str {
        self.prefix
    }

    /// The spec table these values follow.
    pub fn specs(&self) -> &'static [VarSpec] {
        self.specs
    }

    /// Position of `name` (with or without prefix, any case) in the spec table.
    fn index(&self, name: &str) -> Option<usize> {
        let bare = strip_prefix_ci(name.trim(), self.prefix);
        self.specs
            .iter()
            .position(|s| s.name.eq_ignore_ascii_case(bare))
    }

    /// The spec of `name` (with or without prefix, any case).
    pub fn spec(&self, name: &str) -> Option<&'static VarSpec> {
        let specs: &'static [VarSpec] = self.specs;
        self.index(name).and_then(|i| specs.get(i))
    }

    /// The normalized value of `name` (with or without prefix, any case).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.index(name)
            .and_then(|i| self.values.get(i))
            .map(String::as_str)
    }

    /// Validates `value` against the spec of `name` and stores its normalized form.
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), String> {
        let Some(i) = self.index(name) else {
            return Err(format!(
                "unknown variable '{}'",
                full_name(self.prefix, name)
            ));
        };
        let (Some(spec), Some(slot)) = (self.specs.get(i), self.values.get_mut(i)) else {
            return Err(format!(
                "unknown variable '{}'",
                full_name(self.prefix, name)
            ));
        };
        *slot = spec.kind.normalize(value)?;
        Ok(())
    }

    /// Puts `name` back to its default.
    pub fn reset(&mut self, name: &str) -> Result<(), String> {
        let default = self
            .spec(name)
            .map(|s| s.default)
            .ok_or_else(|| format!("unknown variable '{}'", full_name(self.prefix, name)))?;
        self.set(name, default)
    }

    /// `(name without prefix, value)` of every variable, in spec order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.specs
            .iter()
            .zip(&self.values)
            .map(|(s, v)| (s.name, v.as_str()))
    }
}

fn strip_prefix_ci<'a>(name: &'a str, prefix: &str) -> &'a str {
    match name.get(..prefix.len()) {
        Some(head) if head.eq_ignore_ascii_case(prefix) => name.get(prefix.len()..).unwrap_or(name),
        _ => name,
    }
}

fn full_name(prefix: &str, name: &str) -> String {
    let bare = strip_prefix_ci(name.trim(), prefix);
    format!("{prefix}{bare}")
}
