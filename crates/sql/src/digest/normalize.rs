//! The one-pass normalizer behind [`super::digest_into`]: tokens are written as they are read,
//! and list folding and signs are settled by truncating what was written.

use super::lex::{
    class, is_expr_keyword, is_ident, is_introducer, is_values, scan_number, skip_string, DIGIT,
    ID, WS,
};
use super::DigestOptions;

/// The last significant token, for telling a sign from a minus and a qualifier from a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start of a statement.
    Start,
    /// An operator.
    Op,
    /// `(`.
    Open,
    /// `,`.
    Comma,
    /// `.`.
    Dot,
    /// An unquoted word: its span in the query.
    Word(usize, usize),
    /// A literal, a quoted identifier or `)`.
    Value,
    /// Anything else (`@`, `{`, ...).
    Other,
}

/// What the current element of a list (between `(`/`,` and `,`/`)`) holds so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Elem {
    /// Nothing yet.
    #[default]
    Empty,
    /// One literal.
    Lit,
    /// A parenthesised group still open.
    Open,
    /// One parenthesised group of literals only.
    Group,
    /// Anything else.
    Complex,
}

/// Which kind of lone elements the current run is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Run {
    #[default]
    None,
    Lit,
    Group,
}

/// Folding state of one parenthesis level (level 0 is outside any).
#[derive(Debug, Clone, Copy, Default)]
struct Level {
    elem: Elem,
    /// Where the current element starts in the output.
    elem_start: usize,
    run: Run,
    run_len: usize,
    /// Start of the run's element `grouping_limit + 1`, where `...` goes.
    cut: usize,
    /// End of the `...` once the run is folded.
    fold_end: usize,
    /// Elements finished at this level.
    count: usize,
    /// Whether every finished element was a lone literal.
    lits: bool,
}

impl Level {
    fn new() -> Self {
        Level {
            lits: true,
            ..Level::default()
        }
    }

    /// Lowest output position that finishing elements of this level may still truncate to.
    fn floor(&self, limit: usize, len: usize) -> usize {
        if limit == 0 || self.elem == Elem::Complex {
            // Finishing this element ends the run: nothing to fold. The next one starts later.
            len
        } else if self.run_len >= limit + 2 {
            self.fold_end
        } else if self.run_len == limit + 1 {
            self.cut
        } else if self.elem != Elem::Empty {
            // If it becomes the run's element `limit + 1`, `...` goes here.
            self.elem_start
        } else {
            len
        }
    }
}

/// Parenthesis levels whose lists can fold; deeper ones are copied as they are.
const MAX_LEVELS: usize = 16;

/// A sign written before we know whether a literal follows it.
#[derive(Debug, Clone, Copy)]
struct Sign {
    /// Output length before the sign (and the space before it).
    pos: usize,
    /// Whether a space was pending before the sign.
    space: bool,
    /// The element state before the sign.
    elem: Elem,
    elem_start: usize,
}

/// What a token is, for the element and sign bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Literal,
    Sign,
    Other,
}

pub(super) struct Digester<'a> {
    q: &'a [u8],
    i: usize,
    out: &'a mut Vec<u8>,
    opts: &'a DigestOptions,
    /// Whitespace or a dropped comment since the last token.
    space: bool,
    prev: Prev,
    /// Inside an executable comment whose content is being digested.
    exec_comment: bool,
    /// Open parentheses.
    depth: usize,
    levels: [Level; MAX_LEVELS],
    sign: Option<Sign>,
}

impl<'a> Digester<'a> {
    pub(super) fn new(q: &'a [u8], opts: &'a DigestOptions, out: &'a mut Vec<u8>) -> Self {
        Digester {
            q,
            i: 0,
            out,
            opts,
            space: false,
            prev: Prev::Start,
            exec_comment: false,
            depth: 0,
            levels: [Level::new(); MAX_LEVELS],
            sign: None,
        }
    }

    pub(super) fn run(&mut self) {
        let n = self.q.len();
        while self.i < n {
            if self.out.len() > self.opts.max_digest_length && self.settled() {
                return;
            }
            let b = self.q[self.i];
            match class(b) {
                WS => {
                    self.space = true;
                    self.i += 1;
                }
                ID => self.word(),
                DIGIT => self.digits(),
                _ => self.punct(b),
            }
        }
        // Also inside a parenthesis left open (a query cut at max_query_length): a last
        // value of a folded run goes into its `...`.
        self.finish_elem();
    }

    /// Whether the text up to `max_digest_length` can no longer change, so that reading
    /// further is useless.
    fn settled(&self) -> bool {
        let max = self.opts.max_digest_length;
        let len = self.out.len();
        if self.sign.is_some_and(|s| s.pos <= max) {
            return false;
        }
        let top = self.depth.min(MAX_LEVELS - 1);
        self.levels[..=top]
            .iter()
            .all(|l| l.floor(self.opts.grouping_limit, len) > max)
    }

    fn punct(&mut self, b: u8) {
        let q = self.q;
        let next = q.get(self.i + 1).copied();
        match b {
            b'\'' | b'"' => {
                self.i = skip_string(q, self.i);
                self.literal();
            }
            b'`' => self.quoted_ident(),
            b'#' => self.line_comment(),
            b'-' if next == Some(b'-') && !matches!(q.get(self.i + 2), Some(&c) if c > b' ') => {
                self.line_comment()
            }
            b'/' if next == Some(b'*') => self.block_comment(),
            b'*' if self.exec_comment && next == Some(b'/') => {
                self.i += 2;
                self.exec_comment = false;
                self.space = true;
            }
            b'+' | b'-' if self.sign_position() => {
                self.i += 1;
                let before = self.level().map(|l| (l.elem, l.elem_start));
                let space = self.space;
                let pos = self.out.len();
                self.begin(Tok::Sign);
                if self.sign.is_none() {
                    let (elem, elem_start) = before.unwrap_or((Elem::Complex, 0));
                    self.sign = Some(Sign {
                        pos,
                        space,
                        elem,
                        elem_start,
                    });
                }
                self.out.push(b);
                self.prev = Prev::Op;
            }
            b'(' => self.open(),
            b')' => self.close(),
            b',' => self.comma(),
            b';' => self.semicolon(),
            b'?' => {
                self.i += 1;
                self.literal();
            }
            // `.5` is a number where a value may start (after an operator, or a keyword such
            // as SELECT, BETWEEN, THEN); after a name it qualifies (`t.5` is column `5`).
            b'.' if next.is_some_and(|c| c.is_ascii_digit())
                && match self.prev {
                    Prev::Word(s, e) => is_expr_keyword(&q[s..e]),
                    Prev::Value | Prev::Dot => false,
                    _ => true,
                } =>
            {
                match scan_number(q, self.i) {
                    Some(e) => {
                        self.i = e;
                        self.literal();
                    }
                    None => self.single(b, Prev::Dot),
                }
            }
            b'.' => self.single(b, Prev::Dot),
            b'=' | b'<' | b'>' | b'!' | b'+' | b'-' | b'*' | b'/' | b'%' | b'^' | b'&' | b'|'
            | b'~' | b':' => self.single(b, Prev::Op),
            _ => self.single(b, Prev::Other),
        }
    }

    fn single(&mut self, b: u8, prev: Prev) {
        self.i += 1;
        self.begin(Tok::Other);
        self.out.push(b);
        self.prev = prev;
    }

    /// Whether a `+`/`-` here is a sign rather than an operator.
    fn sign_position(&self) -> bool {
        match self.prev {
            Prev::Start | Prev::Op | Prev::Open | Prev::Comma => true,
            Prev::Word(s, e) => is_expr_keyword(&self.q[s..e]),
            Prev::Dot | Prev::Value | Prev::Other => false,
        }
    }

    fn level(&self) -> Option<&Level> {
        self.levels.get(self.depth)
    }

    fn level_mut(&mut self) -> Option<&mut Level> {
        self.levels.get_mut(self.depth)
    }

    /// Book-keeping before a token is written: the space before it, the element it belongs
    /// to, and a pending sign (dropped with the sign itself when a literal follows).
    fn begin(&mut self, tok: Tok) {
        match (tok, self.sign) {
            (Tok::Literal, Some(sign)) => {
                self.out.truncate(sign.pos);
                self.space = sign.space;
                if let Some(l) = self.levels.get_mut(self.depth) {
                    l.elem = sign.elem;
                    l.elem_start = sign.elem_start;
                }
                self.sign = None;
            }
            (Tok::Other, Some(_)) => self.sign = None,
            _ => {}
        }
        if self.level().is_some_and(|l| l.elem == Elem::Group) {
            // A row followed by something else (`... VALUES (..),(..) ON DUPLICATE KEY`):
            // it still ends the run of rows.
            self.finish_elem();
            if let Some(l) = self.level_mut() {
                l.elem = Elem::Complex;
            }
        }
        self.put_space();
        let pos = self.out.len();
        if let Some(l) = self.level_mut() {
            match l.elem {
                Elem::Empty => {
                    l.elem = if tok == Tok::Literal {
                        Elem::Lit
                    } else {
                        Elem::Complex
                    };
                    l.elem_start = pos;
                }
                Elem::Lit | Elem::Group | Elem::Open => l.elem = Elem::Complex,
                Elem::Complex => {}
            }
        }
    }

    fn put_space(&mut self) {
        if self.space {
            self.space = false;
            if self.out.last().is_some_and(|&c| c != b'(') {
                self.out.push(b' ');
            }
        }
    }

    fn literal(&mut self) {
        self.begin(Tok::Literal);
        self.out.push(b'?');
        self.prev = Prev::Value;
    }

    fn word(&mut self) {
        let q = self.q;
        let s = self.i;
        let mut e = s + 1;
        while e < q.len() && is_ident(q[e]) {
            e += 1;
        }
        if let Some(&quote @ (b'\'' | b'"')) = q.get(e) {
            if is_introducer(&q[s..e], quote) {
                self.i = skip_string(q, e);
                self.literal();
                return;
            }
        }
        self.i = e;
        if self.opts.replace_null && q[s..e].eq_ignore_ascii_case(b"NULL") {
            self.literal();
            return;
        }
        self.begin(Tok::Other);
        self.copy_ident(s, e);
        self.prev = Prev::Word(s, e);
    }

    /// A digit: a number, or an identifier that starts with digits.
    fn digits(&mut self) {
        if self.prev != Prev::Dot {
            if let Some(e) = scan_number(self.q, self.i) {
                self.i = e;
                self.literal();
                return;
            }
        }
        self.word();
    }

    fn copy_ident(&mut self, s: usize, e: usize) {
        let bytes = &self.q[s..e];
        if !self.opts.lowercase && !self.opts.no_digits {
            self.out.extend_from_slice(bytes);
            return;
        }
        let mut in_digits = false;
        for &b in bytes {
            if self.opts.no_digits && b.is_ascii_digit() {
                if !in_digits {
                    self.out.push(b'?');
                }
                in_digits = true;
            } else {
                in_digits = false;
                self.out.push(if self.opts.lowercase {
                    b.to_ascii_lowercase()
                } else {
                    b
                });
            }
        }
    }

    fn quoted_ident(&mut self) {
        let q = self.q;
        let s = self.i;
        let mut e = s + 1;
        loop {
            match q[e.min(q.len())..].iter().position(|&c| c == b'`') {
                Some(k) if q.get(e + k + 1) == Some(&b'`') => e += k + 2,
                Some(k) => {
                    e += k + 1;
                    break;
                }
                None => {
                    e = q.len();
                    break;
                }
            }
        }
        self.i = e;
        self.begin(Tok::Other);
        self.copy_ident(s, e);
        self.prev = Prev::Value;
    }

    fn line_comment(&mut self) {
        let rest = &self.q[self.i..];
        self.i += rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
        self.space = true;
    }

    fn block_comment(&mut self) {
        let q = self.q;
        let s = self.i;
        let n = q.len();
        if !self.opts.keep_comment && !self.exec_comment {
            let mariadb = q.get(s + 2) == Some(&b'M') && q.get(s + 3) == Some(&b'!');
            if q.get(s + 2) == Some(&b'!') || mariadb {
                // Executable comment: skip the marks and the version, digest the content.
                let mut j = s + if mariadb { 4 } else { 3 };
                let version_end = j + if mariadb { 6 } else { 5 };
                while j < n.min(version_end) && q[j].is_ascii_digit() {
                    j += 1;
                }
                self.i = j;
                self.exec_comment = true;
                self.space = true;
                return;
            }
        }
        let mut j = s + 2;
        while j + 1 < n && !(q[j] == b'*' && q[j + 1] == b'/') {
            j += 1;
        }
        let end = if j + 1 < n { j + 2 } else { n };
        self.i = end;
        if !self.opts.keep_comment {
            self.space = true;
            return;
        }
        let prev = self.prev;
        self.begin(Tok::Other);
        for &b in &q[s..end] {
            if class(b) == WS {
                if self.out.last() != Some(&b' ') {
                    self.out.push(b' ');
                }
            } else {
                self.out.push(if self.opts.lowercase {
                    b.to_ascii_lowercase()
                } else {
                    b
                });
            }
        }
        // Comments do not change what a following `-` means.
        self.prev = prev;
    }

    fn open(&mut self) {
        self.i += 1;
        let after_values = matches!(self.prev, Prev::Word(s, e) if is_values(&self.q[s..e]));
        if after_values {
            // The first row after VALUES starts a list of rows.
            if let Some(l) = self.level_mut() {
                l.elem = Elem::Empty;
                l.run = Run::None;
                l.run_len = 0;
                l.lits = false;
            }
        }
        let first = self.level().is_some_and(|l| l.elem == Elem::Empty);
        self.begin(Tok::Other);
        if first {
            // The element starts with this parenthesis: a group, so far.
            if let Some(l) = self.level_mut() {
                l.elem = Elem::Open;
            }
        }
        self.out.push(b'(');
        self.depth += 1;
        if let Some(l) = self.level_mut() {
            *l = Level::new();
        }
        self.prev = Prev::Open;
    }

    fn close(&mut self) {
        self.i += 1;
        self.space = false;
        self.sign = None;
        if self.depth == 0 {
            // Unbalanced: copy it.
            self.begin(Tok::Other);
            self.out.push(b')');
            self.prev = Prev::Value;
            return;
        }
        self.finish_elem();
        let pure = self.level().is_some_and(|l| l.lits && l.count > 0);
        self.out.push(b')');
        self.depth -= 1;
        if let Some(l) = self.level_mut() {
            if l.elem == Elem::Open {
                l.elem = if pure { Elem::Group } else { Elem::Complex };
            }
        }
        self.prev = Prev::Value;
    }

    fn comma(&mut self) {
        self.i += 1;
        self.space = false;
        self.sign = None;
        self.finish_elem();
        if let Some(l) = self.level_mut() {
            l.elem = Elem::Empty;
        }
        self.out.push(b',');
        self.prev = Prev::Comma;
    }

    fn semicolon(&mut self) {
        self.i += 1;
        self.space = false;
        self.sign = None;
        if self.depth == 0 {
            self.finish_elem();
        }
        self.depth = 0;
        self.levels[0] = Level::new();
        self.out.push(b';');
        self.prev = Prev::Start;
    }

    /// Ends the current element of the current level and folds the run it belongs to.
    fn finish_elem(&mut self) {
        let limit = self.opts.grouping_limit;
        let top = self.depth == 0;
        let Some(l) = self.levels.get_mut(self.depth) else {
            return;
        };
        l.count += 1;
        l.lits &= l.elem == Elem::Lit;
        let kind = match l.elem {
            // Top-level literals (`SELECT 1, 2, 3`) are not a list of values.
            Elem::Lit if !top => Run::Lit,
            Elem::Group => Run::Group,
            _ => Run::None,
        };
        if kind == Run::None || limit == 0 {
            l.run = Run::None;
            l.run_len = 0;
            return;
        }
        if l.run == kind {
            l.run_len += 1;
        } else {
            l.run = kind;
            l.run_len = 1;
        }
        if l.run_len == limit + 1 {
            l.cut = l.elem_start;
        } else if l.run_len == limit + 2 {
            self.out.truncate(l.cut);
            self.out.extend_from_slice(b"...");
            l.fold_end = self.out.len();
        } else if l.run_len > limit + 2 {
            self.out.truncate(l.fold_end);
        }
    }
}
