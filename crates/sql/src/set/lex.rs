//! The tokens of a SET statement. Deliberately strict: whatever could be read differently by the
//! session a value is later replayed in (backslash escapes under `NO_BACKSLASH_ESCAPES`,
//! non-ASCII text under another `character_set_client`, executable comments) fails the lexing,
//! and a statement that does not lex is untracked.

/// Whether an assignment changes the session or the server (GLOBAL, PERSIST, PERSIST_ONLY).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    /// SESSION, LOCAL, `@@session.`, `@@local.`, bare `@@`.
    Session,
    /// GLOBAL, PERSIST, PERSIST_ONLY and their `@@x.` forms.
    Global,
}

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    /// An unquoted keyword or identifier, as written.
    Word(&'a str),
    /// A backquoted identifier: its content.
    Ident(String),
    /// A '..' or ".." string literal: its content. Which quote it had is dropped on purpose:
    /// replay always uses single quotes, which mean the same with or without `ANSI_QUOTES`.
    Str(String),
    /// An unsigned decimal number, as written.
    Number(&'a str),
    /// A hexadecimal or bit literal (`0x..`, `X'..'`, `0b..`, `b'..'`), as written.
    Hex(&'a str),
    /// `@name`, `@'name'`, `@"name"`, `` @`name` ``: the name, ASCII-lowercased.
    UserVar(String),
    /// `@@[scope.]name`: the explicit scope, if any, and the name, ASCII-lowercased.
    SysVar(Option<Scope>, String),
    /// `:=`.
    Assign,
    /// Any other single ASCII punctuation byte.
    Punct(u8),
}

/// The lexing met something weir does not follow.
#[derive(Debug)]
struct Bad;

/// The tokens of `q`, or None when anything in it is outside what the lexer accepts.
pub(super) fn tokens(q: &[u8]) -> Option<Vec<Tok<'_>>> {
    let mut lexer = Lexer { q, i: 0 };
    let mut out = Vec::new();
    while let Some(t) = lexer.next().ok()? {
        out.push(t);
    }
    Some(out)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// Bytes that continue an identifier for MySQL, including non-ASCII ones.
fn is_ident_byte(b: u8) -> bool {
    is_word_byte(b) || b >= 0x80
}

/// Bytes allowed inside quoted text: printable ASCII and ordinary whitespace.
fn is_text_byte(b: u8) -> bool {
    (0x20..0x7f).contains(&b) || b == b'\t' || b == b'\n' || b == b'\r'
}

struct Lexer<'a> {
    q: &'a [u8],
    i: usize,
}

impl<'a> Lexer<'a> {
    fn at(&self, k: usize) -> Option<u8> {
        self.q.get(self.i + k).copied()
    }

    fn at_is(&self, k: usize, f: impl Fn(u8) -> bool) -> bool {
        self.at(k).is_some_and(f)
    }

    fn text(&self, start: usize) -> Result<&'a str, Bad> {
        let bytes = self.q.get(start..self.i).ok_or(Bad)?;
        std::str::from_utf8(bytes).map_err(|_| Bad)
    }

    fn skip_trivia(&mut self) -> Result<(), Bad> {
        loop {
            match self.at(0) {
                Some(b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c) => self.i += 1,
                Some(b'#') => self.skip_line(),
                // MySQL only takes `--` as a comment when a space or control byte follows.
                Some(b'-') if self.at(1) == Some(b'-') && self.at(2).is_none_or(|b| b <= b' ') => {
                    self.skip_line()
                }
                Some(b'/') if self.at(1) == Some(b'*') => {
                    // `/*! ... */` and `/*M! ... */` are code, not comments.
                    if self.at(2) == Some(b'!')
                        || (self.at(2) == Some(b'M') && self.at(3) == Some(b'!'))
                    {
                        return Err(Bad);
                    }
                    let body = self.q.get(self.i + 2..).ok_or(Bad)?;
                    let end = body.windows(2).position(|w| w == b"*/").ok_or(Bad)?;
                    self.i += 2 + end + 2;
                }
                _ => return Ok(()),
            }
        }
    }

    fn skip_line(&mut self) {
        while self.at(0).is_some_and(|b| b != b'\n') {
            self.i += 1;
        }
    }

    fn next(&mut self) -> Result<Option<Tok<'a>>, Bad> {
        self.skip_trivia()?;
        let Some(b) = self.at(0) else {
            return Ok(None);
        };
        let tok = match b {
            b'\'' | b'"' => Tok::Str(self.quoted(b)?),
            b'`' => Tok::Ident(self.quoted(b'`')?),
            b'@' if self.at(1) == Some(b'@') => {
                self.i += 2;
                self.system_variable()?
            }
            b'@' => {
                self.i += 1;
                Tok::UserVar(self.user_variable()?)
            }
            b'0'..=b'9' => self.number()?,
            b'.' if self.at_is(1, |b| b.is_ascii_digit()) => self.number()?,
            b':' if self.at(1) == Some(b'=') => {
                self.i += 2;
                Tok::Assign
            }
            _ if is_word_byte(b) => self.word()?,
            b'!'..=b'~' => {
                self.i += 1;
                Tok::Punct(b)
            }
            _ => return Err(Bad),
        };
        Ok(Some(tok))
    }

    /// A quoted string or identifier starting at the quote; doubled quotes stand for one.
    /// Backslashes are refused in strings: what they mean depends on `NO_BACKSLASH_ESCAPES`.
    fn quoted(&mut self, quote: u8) -> Result<String, Bad> {
        self.i += 1;
        let mut s = String::new();
        loop {
            let b = self.at(0).ok_or(Bad)?;
            self.i += 1;
            if b == quote {
                if self.at(0) != Some(quote) {
                    return Ok(s);
                }
                self.i += 1;
            } else if (b == b'\\' && quote != b'`') || !is_text_byte(b) {
                return Err(Bad);
            }
            s.push(char::from(b));
        }
    }

    fn word(&mut self) -> Result<Tok<'a>, Bad> {
        let start = self.i;
        while self.at_is(0, is_word_byte) {
            self.i += 1;
        }
        if self.at_is(0, |b| b >= 0x80) {
            return Err(Bad);
        }
        let w = self.text(start)?;
        if self.at(0) == Some(b'\'') {
            // X'..', b'..' literals; N'..' and other prefixes are not followed.
            let digit: fn(u8) -> bool = match w {
                "x" | "X" => |b| b.is_ascii_hexdigit(),
                "b" | "B" => |b| b == b'0' || b == b'1',
                _ if w.starts_with('_') => return Ok(Tok::Word(w)),
                _ => return Err(Bad),
            };
            self.i += 1;
            while self.at_is(0, digit) {
                self.i += 1;
            }
            if self.at(0) != Some(b'\'') {
                return Err(Bad);
            }
            self.i += 1;
            return Ok(Tok::Hex(self.text(start)?));
        }
        Ok(Tok::Word(w))
    }

    /// A number, `0x..` or `0b..`. A digit run that continues into letters is an identifier
    /// for MySQL (`1e`, `1abc`, `0X1`): refused rather than guessed.
    fn number(&mut self) -> Result<Tok<'a>, Bad> {
        let start = self.i;
        let radix: Option<fn(u8) -> bool> = match (self.at(0), self.at(1)) {
            (Some(b'0'), Some(b'x')) => Some(|b: u8| b.is_ascii_hexdigit()),
            (Some(b'0'), Some(b'b')) => Some(|b: u8| b == b'0' || b == b'1'),
            _ => None,
        };
        if let Some(digit) = radix.filter(|d| self.at_is(2, d)) {
            self.i += 2;
            while self.at_is(0, digit) {
                self.i += 1;
            }
            if self.at_is(0, is_ident_byte) {
                return Err(Bad);
            }
            return Ok(Tok::Hex(self.text(start)?));
        }
        self.digits();
        if self.at(0) == Some(b'.') {
            self.i += 1;
            self.digits();
        }
        let exponent_digits = match self.at(1) {
            Some(b'+' | b'-') => 2,
            _ => 1,
        };
        if matches!(self.at(0), Some(b'e' | b'E'))
            && self.at_is(exponent_digits, |b| b.is_ascii_digit())
        {
            self.i += exponent_digits;
            self.digits();
        }
        if self.at_is(0, is_ident_byte) {
            return Err(Bad);
        }
        Ok(Tok::Number(self.text(start)?))
    }

    fn digits(&mut self) {
        while self.at_is(0, |b| b.is_ascii_digit()) {
            self.i += 1;
        }
    }

    /// A name after `@`: quoted, or unquoted letters, digits, `_`, `$` and `.`.
    fn user_variable(&mut self) -> Result<String, Bad> {
        let name = match self.at(0) {
            Some(q @ (b'\'' | b'"' | b'`')) => self.quoted(q)?,
            _ => {
                let start = self.i;
                while self.at_is(0, |b| is_word_byte(b) || b == b'.') {
                    self.i += 1;
                }
                if self.at_is(0, |b| b >= 0x80) {
                    return Err(Bad);
                }
                self.text(start)?.to_owned()
            }
        };
        if name.is_empty() || name.bytes().any(|b| !(0x20..0x7f).contains(&b)) {
            return Err(Bad);
        }
        Ok(name.to_ascii_lowercase())
    }

    /// What follows `@@`: `name`, or `scope.name`.
    fn system_variable(&mut self) -> Result<Tok<'a>, Bad> {
        let first = self.name_part()?;
        if self.at(0) != Some(b'.') {
            return Ok(Tok::SysVar(None, first));
        }
        let scope = match first.as_str() {
            "session" | "local" => Scope::Session,
            "global" | "persist" | "persist_only" => Scope::Global,
            _ => return Err(Bad),
        };
        self.i += 1;
        Ok(Tok::SysVar(Some(scope), self.name_part()?))
    }

    fn name_part(&mut self) -> Result<String, Bad> {
        let name = if self.at(0) == Some(b'`') {
            self.quoted(b'`')?
        } else {
            let start = self.i;
            while self.at_is(0, is_word_byte) {
                self.i += 1;
            }
            if self.at_is(0, |b| b >= 0x80) {
                return Err(Bad);
            }
            self.text(start)?.to_owned()
        };
        if name.is_empty() {
            return Err(Bad);
        }
        Ok(name.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(q: &str) -> Option<Vec<Tok<'_>>> {
        tokens(q.as_bytes())
    }

    #[test]
    fn literals() {
        assert_eq!(
            toks("1 -2.5e+3 .5 0x1F X'aa' b'01' 0b1"),
            Some(vec![
                Tok::Number("1"),
                Tok::Punct(b'-'),
                Tok::Number("2.5e+3"),
                Tok::Number(".5"),
                Tok::Hex("0x1F"),
                Tok::Hex("X'aa'"),
                Tok::Hex("b'01'"),
                Tok::Hex("0b1"),
            ])
        );
        assert_eq!(
            toks(r#"'it''s' "say ""hi""" `a``b`"#),
            Some(vec![
                Tok::Str("it's".into()),
                Tok::Str("say \"hi\"".into()),
                Tok::Ident("a`b".into()),
            ])
        );
        assert_eq!(
            toks("_utf8mb4'x'"),
            Some(vec![Tok::Word("_utf8mb4"), Tok::Str("x".into())])
        );
    }

    #[test]
    fn variables() {
        assert_eq!(
            toks("@A.b @'X y' @@SESSION.Sql_Mode @@global.`x` @@autocommit"),
            Some(vec![
                Tok::UserVar("a.b".into()),
                Tok::UserVar("x y".into()),
                Tok::SysVar(Some(Scope::Session), "sql_mode".into()),
                Tok::SysVar(Some(Scope::Global), "x".into()),
                Tok::SysVar(None, "autocommit".into()),
            ])
        );
        assert_eq!(toks("@@foo.bar"), None);
        assert_eq!(toks("@ x"), None);
    }

    #[test]
    fn trivia() {
        assert_eq!(
            toks("/* a */ x -- c\n# d\n := --1"),
            Some(vec![
                Tok::Word("x"),
                Tok::Assign,
                Tok::Punct(b'-'),
                Tok::Punct(b'-'),
                Tok::Number("1")
            ])
        );
        assert_eq!(toks("x --"), Some(vec![Tok::Word("x")]));
    }

    #[test]
    fn refused() {
        for q in [
            r"'a\'b'",
            "'é'",
            "café",
            "/*! SET x=1 */",
            "/*M!100000 x */",
            "/* open",
            "'open",
            "1abc",
            "0X1F",
            "N'x'",
            "X'zz'",
            "\u{1}",
        ] {
            assert_eq!(toks(q), None, "{q}");
        }
    }
}
