//! `replace_pattern`: ProxySQL's rewrite syntax (RE2 / pcrecpp `Rewrite`) parsed once at LOAD
//! and expanded straight from the capture groups, with no intermediate string syntax.

#[cfg(test)]
mod tests;

use regex::bytes::{Captures, Replacer};
use std::borrow::Cow;

/// A parsed `replace_pattern`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    pieces: Box<[Piece]>,
    /// The whole replacement when it refers to no group: lets the regex skip capturing.
    literal: Option<Box<[u8]>>,
    /// The highest group referred to, if any.
    max_group: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(Box<[u8]>),
    Group(usize),
}

impl Template {
    /// Parses `\0`..`\9` (a capture group) and `\\` (a backslash); every other byte is literal.
    /// A backslash followed by anything else is an error, as it makes RE2 and pcrecpp refuse
    /// the rewrite.
    pub(crate) fn parse(s: &str) -> Result<Template, String> {
        let bytes = s.as_bytes();
        let mut pieces = Vec::new();
        let mut lit = Vec::new();
        let mut max_group = None;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b != b'\\' {
                lit.push(b);
                i += 1;
                continue;
            }
            match bytes.get(i + 1) {
                Some(&d) if d.is_ascii_digit() => {
                    if !lit.is_empty() {
                        pieces.push(Piece::Literal(std::mem::take(&mut lit).into()));
                    }
                    let n = usize::from(d - b'0');
                    max_group = max_group.max(Some(n));
                    pieces.push(Piece::Group(n));
                }
                Some(b'\\') => lit.push(b'\\'),
                Some(_) => {
                    let rest: String = s[i..].chars().take(2).collect();
                    return Err(format!(
                        "invalid escape '{rest}' in '{s}': only \\0 to \\9 (capture groups) and \\\\ (a backslash) are allowed"
                    ));
                }
                None => {
                    return Err(format!(
                        "'{s}' ends with a lone backslash (write \\\\ for a backslash)"
                    ))
                }
            }
            i += 2;
        }
        if !lit.is_empty() {
            pieces.push(Piece::Literal(lit.into()));
        }
        let literal = if max_group.is_none() {
            Some(match pieces.first() {
                Some(Piece::Literal(b)) => b.clone(),
                _ => Box::default(),
            })
        } else {
            None
        };
        Ok(Template {
            pieces: pieces.into(),
            literal,
            max_group,
        })
    }

    /// The highest capture group referred to (`\0` is the whole match).
    pub(crate) fn max_group(&self) -> Option<usize> {
        self.max_group
    }
}

impl Replacer for &Template {
    fn replace_append(&mut self, caps: &Captures<'_>, dst: &mut Vec<u8>) {
        for piece in self.pieces.iter() {
            match piece {
                Piece::Literal(b) => dst.extend_from_slice(b),
                Piece::Group(n) => {
                    if let Some(m) = caps.get(*n) {
                        dst.extend_from_slice(m.as_bytes());
                    }
                }
            }
        }
    }

    fn no_expansion(&mut self) -> Option<Cow<'_, [u8]>> {
        self.literal.as_deref().map(Cow::Borrowed)
    }
}
