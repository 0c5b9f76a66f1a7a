//! What a SET statement does to the session state weir follows, so that a multiplexed client's
//! session can be rebuilt on whichever backend connection runs its next statement.
//!
//! The parser is conservative by design: anything it is not sure of is [`SetEffect::Untracked`],
//! which only costs a pinned connection, whereas a wrong `Tracked` would leak state between
//! clients sharing a connection.

mod lex;
pub(crate) mod switch;
mod table;
#[cfg(test)]
mod tests;

use lex::{Scope, Tok};

/// What a SET statement does to the session state weir tracks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetEffect {
    /// Every assignment is followed (possibly none, e.g. SET GLOBAL, SET PASSWORD): apply them.
    Tracked(Vec<Assignment>),
    /// Every assignment is to a followed variable, but some values are expressions
    /// (`sql_mode = CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES')`): only the server can compute
    /// them. Once the SET ran, weir reads the variables back ([`ReadBack::query`]) and follows
    /// the values it read as literals; the literal assignments apply as for `Tracked`.
    Evaluated(Vec<Assignment>, Vec<ReadBack>),
    /// `SET TRANSACTION ...` without SESSION/GLOBAL: applies to the next transaction only.
    NextTransaction,
    /// Something weir cannot follow: the session must keep its connection.
    Untracked,
}

/// One followed assignment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// The session value assigned.
    pub slot: Slot,
    /// The value as SQL text to replay; None puts the slot back to the connection's default
    /// (a NULL user variable reads the same as an unset one).
    pub value: Option<Box<str>>,
}

/// A followed system variable a SET gave the value of an expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadBack {
    /// Where the value read goes.
    pub slot: Slot,
    /// The name the SET used, which the server knows (the slot's replay name may be chosen
    /// later, by server version).
    pub name: &'static str,
}

impl ReadBack {
    /// The statement that reads every variable of `reads` back, one column each, in order.
    pub fn query(reads: &[ReadBack]) -> String {
        let mut q = String::from("SELECT ");
        for (i, r) in reads.iter().enumerate() {
            if i > 0 {
                q.push_str(", ");
            }
            q.push_str("@@session.");
            q.push_str(r.name);
        }
        q
    }

    /// The assignment that gives another connection the value read back (text protocol,
    /// None for SQL NULL); None when weir cannot write that value as a literal it is sure
    /// of: the session must then keep its connection.
    pub fn assignment(&self, value: Option<&str>) -> Option<Assignment> {
        let Slot::System { key, name } = self.slot else {
            return None;
        };
        let raw = match value {
            None => Raw::Word("NULL"),
            Some(v) if is_plain_number(v) => Raw::Number(v.to_owned()),
            // A backslash means something else under NO_BACKSLASH_ESCAPES; a control byte
            // is no value a followed variable takes.
            Some(v) if v.bytes().any(|b| b == b'\\' || b < b' ') => return None,
            Some(v) => Raw::Str(None, v),
        };
        let value = system_value(key, name, &raw)?;
        Some(Assignment {
            slot: self.slot.clone(),
            value,
        })
    }
}

/// `-?digits(.digits)?`: how the server shows a numeric variable.
fn is_plain_number(v: &str) -> bool {
    let digits = v.strip_prefix('-').unwrap_or(v);
    let (int, frac) = digits.split_once('.').unwrap_or((digits, "0"));
    let all = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    all(int) && all(frac)
}

/// A piece of session state that one assignment sets.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Slot {
    /// A system variable slot: (slot key, name to replay with). An empty name means the server
    /// version picks it at replay (`tx_isolation` or `transaction_isolation`, ...).
    System {
        /// One key per server value, whichever name set it.
        key: &'static str,
        /// The name the value was set with; `names` for `character_set_results` set by
        /// `SET NAMES cs COLLATE coll` (value `cs COLLATE coll`, replayed as that SET NAMES).
        name: &'static str,
    },
    /// A user variable, name lowercased without the '@' (backquoted names: content, lowercased).
    User(Box<str>),
}

const ISOLATION: Slot = Slot::System {
    key: "transaction_isolation",
    name: "",
};
const READ_ONLY: Slot = Slot::System {
    key: "transaction_read_only",
    name: "",
};
const CLIENT: Slot = Slot::System {
    key: "character_set_client",
    name: "character_set_client",
};
const RESULTS: Slot = Slot::System {
    key: "character_set_results",
    name: "character_set_results",
};
/// `character_set_results` as `SET NAMES cs COLLATE coll` leaves it: holding the collation,
/// which the server then gives result columns (46 for `utf8mb4_bin`), where any other way of
/// setting it holds the charset's default collation (45). Its value is `cs COLLATE coll`, and
/// only `SET NAMES <value>` reproduces it.
const RESULTS_BY_NAMES: Slot = Slot::System {
    key: "character_set_results",
    name: NAMES,
};
/// The replay name of [`RESULTS_BY_NAMES`].
pub(crate) const NAMES: &str = "names";
const CONNECTION_KEY: &str = "collation_connection";
/// What `SET CHARACTER SET` gives `character_set_connection`, in the server's own words (it
/// depends on the schema the connection is in: the session resolves it once the SET ran).
pub const DATABASE_CHARSET: &str = "@@character_set_database";

/// The variables whose `@@name` form, with no scope, sets the next transaction only.
const TRANSACTION_CHARACTERISTICS: [&str; 4] = [
    "tx_isolation",
    "tx_read_only",
    "transaction_isolation",
    "transaction_read_only",
];

/// Parses one statement that starts with SET (leading whitespace/comments allowed, one optional
/// trailing ';' and trailing whitespace/comments allowed). Anything after a ';' other than
/// whitespace/comments => Untracked.
pub fn parse_set(stmt: &[u8]) -> SetEffect {
    parse(stmt).unwrap_or(SetEffect::Untracked)
}

fn parse(stmt: &[u8]) -> Option<SetEffect> {
    let mut toks = lex::tokens(stmt)?;
    if toks.last() == Some(&Tok::Punct(b';')) {
        toks.pop();
    }
    if toks.contains(&Tok::Punct(b';')) {
        return None;
    }
    let mut p = Parser {
        toks: &toks,
        pos: 0,
    };
    if !p.eat_word("SET") {
        return None;
    }
    if p.eat_word("PASSWORD") {
        // Changes an account, not the session.
        return Some(SetEffect::Tracked(Vec::new()));
    }
    let start = p.pos;
    let scope = p.scope_keyword();
    if p.eat_word("TRANSACTION") {
        let characteristics = p.transaction()?;
        return Some(match scope {
            None => SetEffect::NextTransaction,
            Some(Scope::Session) => SetEffect::Tracked(characteristics),
            Some(Scope::Global) => SetEffect::Tracked(Vec::new()),
        });
    }
    p.pos = start;
    let mut reads = Vec::new();
    let assignments = p.list(&mut reads)?;
    // `@@tx_isolation` / `@@tx_read_only` (and the `transaction_` names) with no scope at all
    // set the next transaction only, as SET TRANSACTION does; among other assignments weir
    // could not replay them apart.
    let next_transaction_only = toks.iter().any(|t| {
        matches!(t, Tok::SysVar(None, name) if TRANSACTION_CHARACTERISTICS
            .iter()
            .any(|v| name.eq_ignore_ascii_case(v)))
    });
    if next_transaction_only {
        return (assignments.len() + reads.len() == 1).then_some(SetEffect::NextTransaction);
    }
    if reads.is_empty() {
        return Some(SetEffect::Tracked(assignments));
    }
    // A value read back is the variable's last, whatever the order of the assignments: with
    // two to one variable (or to two names of one value, or to charsets NAMES also sets) the
    // order of replay could not be told.
    let key = |slot: &Slot| match slot {
        Slot::System { key, .. } => Some(*key),
        Slot::User(_) => None,
    };
    let mut keys: Vec<&str> = assignments
        .iter()
        .map(|a| &a.slot)
        .chain(reads.iter().map(|r| &r.slot))
        .filter_map(key)
        .collect();
    let all = keys.len();
    keys.sort_unstable();
    keys.dedup();
    // Charsets are synced together (`SET NAMES` sets three): an evaluated one stays alone.
    let evaluated_charset = reads
        .iter()
        .filter_map(|r| key(&r.slot))
        .any(|k| k.starts_with("character_set") || k.starts_with("collation"));
    if keys.len() != all || (evaluated_charset && keys.len() > 1) {
        return None;
    }
    Some(SetEffect::Evaluated(assignments, reads))
}

/// A value as the grammar sees it, before the variable it goes to decides what it may be.
enum Raw<'a> {
    /// A signed or unsigned decimal number, as written.
    Number(String),
    /// A hexadecimal or bit literal, as written.
    Hex(&'a str),
    /// A string literal: introducer, content.
    Str(Option<&'a str>, &'a str),
    /// A keyword or identifier.
    Word(&'a str),
    /// `@@name` / `@@scope.name`.
    System(Option<Scope>, &'a str),
}

impl Raw<'_> {
    /// The text a literal replays as; None for words and variable references.
    fn literal(&self) -> Option<Box<str>> {
        match self {
            Raw::Number(n) => Some(n.as_str().into()),
            Raw::Hex(h) => Some((*h).into()),
            Raw::Str(intro, content) => {
                Some(format!("{}{}", intro.unwrap_or(""), quote(content)).into())
            }
            Raw::Word(_) | Raw::System(..) => None,
        }
    }

    fn is_word(&self, keyword: &str) -> bool {
        matches!(self, Raw::Word(w) if w.eq_ignore_ascii_case(keyword))
    }
}

/// A string literal that means the same whatever the session's sql_mode.
fn quote(content: &str) -> String {
    format!("'{}'", content.replace('\'', "''"))
}

struct Parser<'t, 'a> {
    toks: &'t [Tok<'a>],
    pos: usize,
}

impl<'t, 'a> Parser<'t, 'a> {
    fn peek(&self) -> Option<&'t Tok<'a>> {
        self.toks.get(self.pos)
    }

    fn bump(&mut self) -> Option<&'t Tok<'a>> {
        let t = self.toks.get(self.pos)?;
        self.pos += 1;
        Some(t)
    }

    fn eat_word(&mut self, keyword: &str) -> bool {
        let hit = matches!(self.peek(), Some(Tok::Word(w)) if w.eq_ignore_ascii_case(keyword));
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn eat_punct(&mut self, p: u8) -> bool {
        let hit = self.peek() == Some(&Tok::Punct(p));
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn done(&self) -> bool {
        self.pos == self.toks.len()
    }

    fn scope_keyword(&mut self) -> Option<Scope> {
        let scope = match self.peek() {
            Some(Tok::Word(w)) => match w.to_ascii_uppercase().as_str() {
                "SESSION" | "LOCAL" => Scope::Session,
                "GLOBAL" | "PERSIST" | "PERSIST_ONLY" => Scope::Global,
                _ => return None,
            },
            _ => return None,
        };
        self.pos += 1;
        Some(scope)
    }

    /// `characteristic [, characteristic]...` after TRANSACTION, as session assignments.
    fn transaction(&mut self) -> Option<Vec<Assignment>> {
        let mut out = Vec::new();
        loop {
            let (slot, value) = if self.eat_word("ISOLATION") {
                if !self.eat_word("LEVEL") {
                    return None;
                }
                let level = if self.eat_word("READ") {
                    if self.eat_word("UNCOMMITTED") {
                        "'READ-UNCOMMITTED'"
                    } else if self.eat_word("COMMITTED") {
                        "'READ-COMMITTED'"
                    } else {
                        return None;
                    }
                } else if self.eat_word("REPEATABLE") && self.eat_word("READ") {
                    "'REPEATABLE-READ'"
                } else if self.eat_word("SERIALIZABLE") {
                    "'SERIALIZABLE'"
                } else {
                    return None;
                };
                (ISOLATION, level)
            } else if self.eat_word("READ") {
                if self.eat_word("ONLY") {
                    (READ_ONLY, "1")
                } else if self.eat_word("WRITE") {
                    (READ_ONLY, "0")
                } else {
                    return None;
                }
            } else {
                return None;
            };
            out.push(Assignment {
                slot,
                value: Some(value.into()),
            });
            if !self.eat_punct(b',') {
                break;
            }
        }
        self.done().then_some(out)
    }

    /// `item [, item]...`, where a scope keyword holds until the next one.
    fn list(&mut self, reads: &mut Vec<ReadBack>) -> Option<Vec<Assignment>> {
        let mut out = Vec::new();
        let mut scope = Scope::Session;
        loop {
            let explicit = self.scope_keyword();
            scope = explicit.unwrap_or(scope);
            let bare = explicit.is_none();
            match self.bump()? {
                Tok::Word(w) if bare && w.eq_ignore_ascii_case("NAMES") => self.names(&mut out)?,
                Tok::Word(w) if bare && w.eq_ignore_ascii_case("CHARSET") => {
                    self.charset(&mut out)?
                }
                Tok::Word(w) if bare && w.eq_ignore_ascii_case("CHARACTER") => {
                    if !self.eat_word("SET") {
                        return None;
                    }
                    self.charset(&mut out)?
                }
                Tok::UserVar(name) if bare => {
                    self.assign_op()?;
                    let value = user_value(&self.value()?)?;
                    out.push(Assignment {
                        slot: Slot::User(name.as_str().into()),
                        value,
                    });
                }
                Tok::SysVar(at_scope, name) if bare => {
                    self.system(at_scope.unwrap_or(Scope::Session), name, &mut out, reads)?
                }
                Tok::Word(name) => self.system(scope, name, &mut out, reads)?,
                Tok::Ident(name) => self.system(scope, name, &mut out, reads)?,
                _ => return None,
            }
            if !self.eat_punct(b',') {
                break;
            }
        }
        self.done().then_some(out)
    }

    fn assign_op(&mut self) -> Option<()> {
        match self.bump()? {
            Tok::Punct(b'=') | Tok::Assign => Some(()),
            _ => None,
        }
    }

    fn value(&mut self) -> Option<Raw<'t>> {
        Some(match self.bump()? {
            Tok::Punct(sign @ (b'-' | b'+')) => match self.bump()? {
                Tok::Number(n) => Raw::Number(format!("{}{n}", char::from(*sign))),
                _ => return None,
            },
            Tok::Number(n) => Raw::Number((*n).to_owned()),
            Tok::Hex(h) => Raw::Hex(h),
            Tok::Str(s) => Raw::Str(None, s),
            Tok::Word(w) if w.starts_with('_') && matches!(self.peek(), Some(Tok::Str(_))) => {
                match self.bump()? {
                    Tok::Str(s) => Raw::Str(Some(w), s),
                    _ => return None,
                }
            }
            Tok::Word(w) => Raw::Word(w),
            Tok::SysVar(scope, name) => Raw::System(*scope, name),
            _ => return None,
        })
    }

    /// `name = value` for a system variable. A value weir cannot store as written (an
    /// expression, a variable, a word it does not know for that variable) is left to the
    /// server and read back after the SET.
    fn system(
        &mut self,
        scope: Scope,
        name: &str,
        out: &mut Vec<Assignment>,
        reads: &mut Vec<ReadBack>,
    ) -> Option<()> {
        self.assign_op()?;
        let start = self.pos;
        let value = self.value();
        let alone = matches!(self.peek(), None | Some(Tok::Punct(b',')));
        if scope == Scope::Global {
            // Changes the server, not this session; a variable reference is refused all the
            // same, as it is one step from an expression.
            return (alone && !matches!(value, None | Some(Raw::System(..)))).then_some(());
        }
        let (written, key, replay) = table::lookup(name)?;
        let slot = Slot::System { key, name: replay };
        if let (Some(raw), true) = (&value, alone) {
            if let Some(value) = system_value(key, replay, raw) {
                out.push(Assignment { slot, value });
                return Some(());
            }
        }
        self.pos = start;
        self.expression()?;
        reads.push(ReadBack {
            slot,
            name: written,
        });
        Some(())
    }

    /// Skips a value expression up to the `,` that ends the assignment, refusing anything
    /// that could change more than the variable: `:=`, and a call that is not a known pure
    /// built-in ([`table::is_pure_call`]).
    fn expression(&mut self) -> Option<()> {
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(t) = self.peek() {
            let call = self.toks.get(self.pos + 1) == Some(&Tok::Punct(b'('));
            // `db.f(`: a stored function, whatever its name.
            let qualified = self.pos > 0 && self.toks.get(self.pos - 1) == Some(&Tok::Punct(b'.'));
            match t {
                Tok::Punct(b'(') => depth += 1,
                Tok::Punct(b')') => depth = depth.checked_sub(1)?,
                Tok::Punct(b',') if depth == 0 => break,
                Tok::Assign => return None,
                Tok::Word(w) if call && (qualified || !table::is_pure_call(w)) => return None,
                Tok::Ident(_) if call => return None,
                _ => {}
            }
            self.pos += 1;
        }
        (depth == 0 && self.pos > start).then_some(())
    }

    /// A charset or collation name after NAMES, CHARACTER SET or COLLATE.
    fn charset_name(&mut self) -> Option<Box<str>> {
        match self.bump()? {
            Tok::Word(w) if !w.eq_ignore_ascii_case("DEFAULT") && !table::is_niladic(w) => {
                Some((*w).into())
            }
            Tok::Str(s) => Some(quote(s).into()),
            _ => None,
        }
    }

    /// `NAMES cs [COLLATE coll]`.
    fn names(&mut self, out: &mut Vec<Assignment>) -> Option<()> {
        let charset = self.charset_name()?;
        if self.eat_word("COLLATE") {
            let collation = self.charset_name()?;
            let results = format!("{charset} COLLATE {collation}");
            push_charsets(
                out,
                charset,
                (RESULTS_BY_NAMES, results.into()),
                "collation_connection",
                collation,
            );
        } else {
            push_charsets(
                out,
                charset.clone(),
                (RESULTS, charset.clone()),
                "character_set_connection",
                charset,
            );
        }
        Some(())
    }

    /// `CHARACTER SET cs` / `CHARSET cs`.
    fn charset(&mut self, out: &mut Vec<Assignment>) -> Option<()> {
        let charset = self.charset_name()?;
        push_charsets(
            out,
            charset.clone(),
            (RESULTS, charset),
            "character_set_connection",
            DATABASE_CHARSET.into(),
        );
        Some(())
    }
}

/// The three charset assignments of `SET NAMES` / `SET CHARACTER SET`, in the order they
/// are replayed: client, results, then connection under the name `connection_name`.
fn push_charsets(
    out: &mut Vec<Assignment>,
    client: Box<str>,
    (results_slot, results): (Slot, Box<str>),
    connection_name: &'static str,
    connection: Box<str>,
) {
    out.push(Assignment {
        slot: CLIENT,
        value: Some(client),
    });
    out.push(Assignment {
        slot: results_slot,
        value: Some(results),
    });
    out.push(Assignment {
        slot: Slot::System {
            key: CONNECTION_KEY,
            name: connection_name,
        },
        value: Some(connection),
    });
}

/// The stored value of a session system variable; the outer None means untracked.
fn system_value(key: &str, name: &str, raw: &Raw<'_>) -> Option<Option<Box<str>>> {
    if key == "autocommit" {
        return autocommit(raw);
    }
    if key == switch::OPTIMIZER_SWITCH {
        return match raw {
            _ if raw.is_word("DEFAULT") => Some(None),
            Raw::Str(None, content) => switch::canonical(content).map(|c| Some(c.into())),
            _ => None,
        };
    }
    if let Some(text) = raw.literal() {
        return Some(Some(text));
    }
    match raw {
        Raw::Word(w) if w.eq_ignore_ascii_case("DEFAULT") => Some(Some("DEFAULT".into())),
        Raw::Word(w) if table::is_niladic(w) => None,
        Raw::Word(w) => Some(Some((*w).into())),
        Raw::System(None | Some(Scope::Session), var)
            if name == "character_set_connection" && *var == "character_set_database" =>
        {
            Some(Some(DATABASE_CHARSET.into()))
        }
        _ => None,
    }
}

/// autocommit as `1`/`0`, so that [`crate::SessionVars::autocommit`] can read it; DEFAULT
/// forgets it.
fn autocommit(raw: &Raw<'_>) -> Option<Option<Box<str>>> {
    let is = |w: &str, words: [&str; 2]| words.iter().any(|k| k.eq_ignore_ascii_case(w));
    let on = match raw {
        Raw::Number(n) if n == "1" => true,
        Raw::Number(n) if n == "0" => false,
        Raw::Word(w) if w.eq_ignore_ascii_case("DEFAULT") => return Some(None),
        Raw::Word(w) if is(w, ["ON", "TRUE"]) => true,
        Raw::Word(w) if is(w, ["OFF", "FALSE"]) => false,
        Raw::Str(None, s) if s.eq_ignore_ascii_case("ON") => true,
        Raw::Str(None, s) if s.eq_ignore_ascii_case("OFF") => false,
        _ => return None,
    };
    Some(Some(if on { "1" } else { "0" }.into()))
}

/// The stored value of a user variable; the outer None means untracked.
fn user_value(raw: &Raw<'_>) -> Option<Option<Box<str>>> {
    if let Some(text) = raw.literal() {
        return Some(Some(text));
    }
    match raw {
        Raw::Word(w) if w.eq_ignore_ascii_case("NULL") => Some(None),
        Raw::Word(w) if w.eq_ignore_ascii_case("TRUE") || w.eq_ignore_ascii_case("FALSE") => {
            Some(Some((*w).into()))
        }
        _ => None,
    }
}
