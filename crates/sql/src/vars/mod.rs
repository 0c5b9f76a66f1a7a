//! The session state weir follows for a client or a backend connection, and the SET statement
//! that brings a connection's state to a client's. Both sides are the same type so that the
//! caller can compare and sync them, then record the connection as `conn = client.clone()`.

#[cfg(test)]
mod tests;

use crate::collations::{collation_by_id, is_default_collation};
use crate::set::switch::{self, OPTIMIZER_SWITCH};
use crate::set::{parse_set, Assignment, SetEffect, Slot, NAMES};

/// A client's or a backend connection's tracked session state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct SessionVars {
    /// Set system slots, sorted by key; a slot back at the connection default is absent.
    system: Vec<SystemValue>,
    /// Set user variables `(name, value)`, sorted by name; NULL ones are absent.
    user: Vec<(Box<str>, Box<str>)>,
    /// What the sql_mode slot says of how statements are lexed (NO_BACKSLASH_ESCAPES,
    /// ANSI_QUOTES): kept with the slot, since every statement's scan asks
    /// ([`SessionVars::lexing`]).
    mode_lexing: ModeLexing,
}

/// The lexing flags of a sql_mode value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
struct ModeLexing {
    no_backslash_escapes: bool,
    ansi_quotes: bool,
}

impl ModeLexing {
    /// Reads the modes named in a sql_mode value as set (`'ANSI,NO_BACKSLASH_ESCAPES'`):
    /// ANSI_QUOTES, or a combination mode that includes it.
    fn of(value: &str) -> ModeLexing {
        let mut m = ModeLexing::default();
        for mode in value
            .split(|c: char| c == ',' || c == '\'' || c == '"' || c.is_ascii_whitespace())
            .filter(|w| !w.is_empty())
        {
            let is = |name: &str| mode.eq_ignore_ascii_case(name);
            m.no_backslash_escapes |= is("NO_BACKSLASH_ESCAPES");
            m.ansi_quotes |= is("ANSI_QUOTES")
                || is("ANSI")
                || is("DB2")
                || is("MAXDB")
                || is("MSSQL")
                || is("ORACLE")
                || is("POSTGRESQL");
        }
        m
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SystemValue {
    key: &'static str,
    name: &'static str,
    value: Box<str>,
}

/// What sync needs to know about the connection.
#[derive(Debug, Clone, Copy)]
pub struct SyncContext<'a> {
    /// The collation id the client's handshake asked for, which its charset slots start at.
    pub handshake_collation: u8,
    /// The collation id the connection's charset slots start at (its handshake's, or that of
    /// the last session that synced it); another than the client's costs a `SET NAMES`.
    pub connection_collation: u8,
    /// The server's version string, which decides between `tx_*` and `transaction_*` names.
    pub server_version: &'a str,
    /// Whether the client's handshake had CLIENT_IGNORE_SPACE, which adds IGNORE_SPACE to
    /// the session's sql_mode on top of the server default.
    pub ignore_space: bool,
    /// Whether the connection's sql_mode starts with IGNORE_SPACE added (its handshake's
    /// flag, or that of the last session that synced it).
    pub connection_ignore_space: bool,
}

/// The charset slots, which the handshake sets rather than the server defaults, in the order
/// they are replayed.
const CHARSET_KEYS: [&str; 3] = [
    "character_set_client",
    "character_set_results",
    "collation_connection",
];

const RESULTS_KEY: &str = "character_set_results";

const SQL_MODE: &str = "sql_mode";

/// The sql_mode a session whose handshake had CLIENT_IGNORE_SPACE starts with.
const IGNORE_SPACE_MODE: &str = "CONCAT_WS(',', NULLIF(@@global.sql_mode, ''), 'IGNORE_SPACE')";

/// The slots that change how the server reads a statement's text when it prepares it: the
/// charset of the text and of its literals, and sql_mode (ANSI_QUOTES, PIPES_AS_CONCAT,
/// NO_BACKSLASH_ESCAPES...).
const PARSE_KEYS: [&str; 3] = ["character_set_client", "collation_connection", "sql_mode"];

impl SessionVars {
    /// Only the slots that change how a statement's text is parsed (see [`PARSE_KEYS`]): what a
    /// prepared statement keeps of the session it was prepared in.
    pub fn parse_context(&self) -> SessionVars {
        SessionVars {
            system: self
                .system
                .iter()
                .filter(|s| PARSE_KEYS.contains(&s.key))
                .cloned()
                .collect(),
            user: Vec::new(),
            // sql_mode is one of the parse slots.
            mode_lexing: self.mode_lexing,
        }
    }

    /// [`SessionVars::parse_context`] of this state on a connection (or for a client) whose
    /// charsets start at `collation`, with the charset slots it holds no value for spelled
    /// out: two clients that set nothing but logged in with different collations have
    /// different contexts, since their statements read differently.
    /// The sql_mode a handshake with CLIENT_IGNORE_SPACE (`ignore_space`) starts with is
    /// spelled out the same way.
    pub fn parse_context_from(&self, collation: u8, ignore_space: bool) -> SessionVars {
        let mut context = match self.with_charsets_from(collation) {
            Some(spelled) => spelled.parse_context(),
            // An id weir has no name for: connections of that collation serve its clients only.
            None => self.parse_context(),
        };
        if ignore_space && context.system_value(SQL_MODE).is_none() {
            context.set_system(SQL_MODE, SQL_MODE, Some(IGNORE_SPACE_MODE));
        }
        context
    }

    /// Whether a statement prepared under `self` would be read as under `context` (a
    /// [`SessionVars::parse_context`]).
    pub fn parses_as(&self, context: &SessionVars) -> bool {
        PARSE_KEYS
            .iter()
            .all(|k| self.system_value(k) == context.system_value(k))
    }

    /// `self` with the parse slots of `context` instead of its own: the state to prepare a
    /// statement in on a connection, then sync back from.
    pub fn with_parse_context(&self, context: &SessionVars) -> SessionVars {
        let mut out = self.clone();
        out.system.retain(|s| !PARSE_KEYS.contains(&s.key));
        out.mode_lexing = ModeLexing::default();
        for s in &context.system {
            if PARSE_KEYS.contains(&s.key) {
                out.set_system(s.key, s.name, Some(&s.value));
            }
        }
        out
    }

    /// How the server reads this session's statements (see [`crate::Lexing`]), for a
    /// client whose charsets started at the handshake's `handshake` collation. Cheap: read per
    /// statement. A sql_mode or charset set in a way weir does not follow has pinned the
    /// session; its statements are read with what weir last knew.
    pub fn lexing(&self, handshake: u8) -> crate::Lexing {
        let ModeLexing {
            no_backslash_escapes,
            ansi_quotes,
        } = self.mode_lexing;
        if self.system.is_empty() {
            return crate::Lexing {
                no_backslash_escapes,
                ansi_quotes,
                multibyte: crate::Multibyte::of_collation(handshake),
            };
        }
        let multibyte = match self.system_value("character_set_client") {
            Some(set) => {
                let charset = set
                    .value
                    .split_once(" COLLATE ")
                    .map_or(&*set.value, |p| p.0);
                crate::Multibyte::of_charset(
                    charset
                        .trim()
                        .trim_matches(|c| c == '\'' || c == '"' || c == '`'),
                )
            }
            None => crate::Multibyte::of_collation(handshake),
        };
        crate::Lexing {
            no_backslash_escapes,
            ansi_quotes,
            multibyte,
        }
    }

    /// Applies assignments in order.
    pub fn apply(&mut self, assignments: &[Assignment]) {
        for a in assignments {
            match &a.slot {
                Slot::System { key, name } => self.set_system(key, name, a.value.as_deref()),
                Slot::User(name) => set_sorted(&mut self.user, name, a.value.as_deref()),
            }
        }
    }

    fn set_system(&mut self, key: &'static str, name: &'static str, value: Option<&str>) {
        let found = self.system.binary_search_by(|s| s.key.cmp(key));
        let value = match value {
            Some(v) if key == OPTIMIZER_SWITCH => {
                let old = found.ok().and_then(|i| self.system.get(i));
                switch::merge(old.map(|s| &*s.value), v)
            }
            v => v.map(Box::from),
        };
        match (found, value) {
            (Ok(i), Some(value)) => {
                if let Some(slot) = self.system.get_mut(i) {
                    *slot = SystemValue { key, name, value };
                }
            }
            (Ok(i), None) => {
                self.system.remove(i);
            }
            (Err(i), Some(value)) => self.system.insert(i, SystemValue { key, name, value }),
            (Err(_), None) => {}
        }
        if key == SQL_MODE {
            self.mode_lexing = self
                .system_value(SQL_MODE)
                .map_or(ModeLexing::default(), |s| ModeLexing::of(&s.value));
        }
    }

    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.system.is_empty() && self.user.is_empty()
    }

    /// A hash of everything set, equal for equal states: the query cache keys replies by it,
    /// since any of these may change a result's bytes (charset, time_zone, sql_mode, a user
    /// variable the query reads...). 0 when nothing is set.
    pub fn fingerprint(&self) -> u64 {
        use xxhash_rust::xxh3::xxh3_64_with_seed;
        let mut h = 0u64;
        for s in &self.system {
            h = xxh3_64_with_seed(s.key.as_bytes(), h);
            h = xxh3_64_with_seed(s.value.as_bytes(), h);
        }
        for (name, value) in &self.user {
            // A marker between the two lists: a user variable never hashes like a slot.
            h = xxh3_64_with_seed(b"@", h);
            h = xxh3_64_with_seed(name.as_bytes(), h);
            h = xxh3_64_with_seed(value.as_bytes(), h);
        }
        h
    }

    /// autocommit as set (Some(false) after SET autocommit=0/OFF/false), None when never set or
    /// reset to DEFAULT.
    pub fn autocommit(&self) -> Option<bool> {
        match self.system("autocommit")? {
            "1" => Some(true),
            "0" => Some(false),
            _ => None,
        }
    }

    /// The collation the server describes text result columns with in this session, on a
    /// connection that logged in with `handshake`: the handshake's, the one `SET NAMES ...
    /// COLLATE` gave, or the default one of the charset `character_set_results` was set to.
    /// `None` when weir cannot tell (`NULL`, `DEFAULT`, a name it does not know).
    pub fn results_collation(&self, handshake: u8) -> Option<u32> {
        fn unquote(s: &str) -> &str {
            s.trim().trim_matches(|c| c == '\'' || c == '"' || c == '`')
        }
        match self.system_value(RESULTS_KEY) {
            None => collation_by_id(u32::from(handshake)).map(|_| u32::from(handshake)),
            Some(s) if s.name == NAMES => {
                let (charset, collation) = match s.value.split_once(" COLLATE ") {
                    Some((cs, coll)) => (cs, Some(coll)),
                    None => (&*s.value, None),
                };
                match collation {
                    Some(c) => crate::collations::collation_id(unquote(c)),
                    None => crate::collations::default_collation_id(unquote(charset)),
                }
            }
            Some(s) => crate::collations::default_collation_id(unquote(&s.value)),
        }
    }

    /// The charset and collation a string literal without an introducer takes in this
    /// session (`character_set_connection`, `collation_connection`), whose charsets start at
    /// the handshake's `handshake`; `None` when weir cannot tell (a name it does not know,
    /// `DEFAULT`, the schema's charset).
    /// The collation is `None` when only the charset was named (`SET NAMES cs`,
    /// `character_set_connection`): the server's default one for it, which a replay gets by
    /// naming the charset alone.
    pub fn literal_collation(&self, handshake: u8) -> Option<(&'static str, Option<&'static str>)> {
        fn unquote(s: &str) -> &str {
            s.trim().trim_matches(|c| c == '\'' || c == '"' || c == '`')
        }
        let spelled;
        let slot = match self.system_value("collation_connection") {
            Some(set) => set,
            None => {
                spelled = self.with_charsets_from(handshake)?;
                spelled.system_value("collation_connection")?
            }
        };
        if slot.name == "collation_connection" {
            let (charset, collation) =
                collation_by_id(crate::collations::collation_id(unquote(&slot.value))?)?;
            Some((charset, Some(collation)))
        } else {
            let id = crate::collations::default_collation_id(unquote(&slot.value))?;
            collation_by_id(id).map(|(charset, _)| (charset, None))
        }
    }

    /// Gives the plain string literals assigned to user variables in `assignments` the
    /// charset and collation they get in this session (a SET's literals are read before any
    /// of its assignments run: `self` is the state before the statement), so that a replay on
    /// a connection in another character set makes the same variable: `@s = 'x'` becomes
    /// `@s = _utf8mb4'x' COLLATE utf8mb4_general_ci` (`@s = _latin1'x'` after `SET NAMES
    /// latin1`, which names no collation). False when a literal's collation cannot
    /// be told: the variable cannot be replayed as it was.
    pub fn pin_literal_collations(&self, assignments: &mut [Assignment], handshake: u8) -> bool {
        for a in assignments.iter_mut() {
            let Slot::User(_) = a.slot else { continue };
            let Some(value) = a.value.as_mut().filter(|v| v.starts_with('\'')) else {
                continue;
            };
            let Some((charset, collation)) = self.literal_collation(handshake) else {
                return false;
            };
            // The lexer takes printable ASCII only: the same bytes in every charset that
            // extends ASCII; those that do not are converted to.
            let wide = matches!(charset, "ucs2" | "utf16" | "utf16le" | "utf32");
            let mut replay = if wide {
                format!("CONVERT({value} USING {charset})")
            } else {
                format!("_{charset}{value}")
            };
            if let Some(collation) = collation {
                // Quoted: `binary` is a reserved word (`COLLATE binary` is a syntax error).
                replay.push_str(" COLLATE `");
                replay.push_str(collation);
                replay.push('`');
            }
            *value = replay.into();
        }
        true
    }

    /// The value text of a system slot, if set.
    pub fn system(&self, key: &str) -> Option<&str> {
        self.system_value(key).map(|s| &*s.value)
    }

    fn system_value(&self, key: &str) -> Option<&SystemValue> {
        let i = self.system.binary_search_by(|s| s.key.cmp(key)).ok()?;
        self.system.get(i)
    }

    fn user(&self, name: &str) -> Option<&str> {
        let i = self.user.binary_search_by(|(n, _)| (**n).cmp(name)).ok()?;
        self.user.get(i).map(|(_, v)| &**v)
    }

    /// Appends to `out` the SQL statements that bring a connection whose state is `conn` to
    /// `self`. Only what differs. Returns false when it cannot be done (then the caller
    /// discards that connection and opens a new one), e.g. a charset slot must go back to the
    /// handshake collation and its id is unknown.
    pub fn sync_statements(
        &self,
        conn: &SessionVars,
        ctx: &SyncContext<'_>,
        out: &mut Vec<String>,
    ) -> bool {
        let rebased;
        let conn = if ctx.connection_collation == ctx.handshake_collation {
            conn
        } else {
            match conn.with_charsets_from(ctx.connection_collation) {
                Some(r) => {
                    rebased = r;
                    &rebased
                }
                None => return false,
            }
        };
        let mut items = Vec::new();
        if !self.sync_charsets(conn, ctx, &mut items) {
            return false;
        }
        let mut keys: Vec<&str> = self
            .system
            .iter()
            .chain(&conn.system)
            .map(|s| s.key)
            .collect();
        // Neither side set sql_mode, but they start from different ones.
        let sql_mode_bases_differ = ctx.ignore_space != ctx.connection_ignore_space;
        if sql_mode_bases_differ {
            keys.push(SQL_MODE);
        }
        keys.sort_unstable();
        keys.dedup();
        let modern = modern_transaction_names(ctx.server_version);
        for key in keys.into_iter().filter(|k| !CHARSET_KEYS.contains(k)) {
            let (mine, theirs) = (self.system_value(key), conn.system_value(key));
            if mine == theirs && !(key == SQL_MODE && mine.is_none() && sql_mode_bases_differ) {
                continue;
            }
            let name = match replay_name(mine.or(theirs), modern) {
                "" => key,
                name => name,
            };
            if key == OPTIMIZER_SWITCH && theirs.is_some() {
                // Its assignments accumulate: start again from the connection default.
                items.push(format!("{name}=DEFAULT"));
                if let Some(mine) = mine {
                    items.push(format!("{name}={}", mine.value));
                }
                continue;
            }
            items.push(match mine {
                Some(mine) => format!("{name}={}", mine.value),
                // DEFAULT is the global value, without what CLIENT_IGNORE_SPACE added at login.
                None if key == SQL_MODE && ctx.ignore_space => {
                    format!("{name}={IGNORE_SPACE_MODE}")
                }
                None => format!("{name}=DEFAULT"),
            });
        }
        let mut names: Vec<&str> = self
            .user
            .iter()
            .chain(&conn.user)
            .map(|(n, _)| &**n)
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let mine = self.user(name);
            if mine != conn.user(name) {
                let name = name.replace('`', "``");
                items.push(format!("@`{name}`={}", mine.unwrap_or("NULL")));
            }
        }
        if !items.is_empty() {
            out.push(format!("SET {}", items.join(", ")));
        }
        true
    }

    /// `self`, the state of a connection whose charset slots start at `collation`, with those
    /// it holds no value for spelled out (as `SET NAMES` of that collation gives them): the
    /// same state, comparable with that of a client whose charsets start elsewhere. None
    /// for a collation id weir does not know.
    fn with_charsets_from(&self, collation: u8) -> Option<SessionVars> {
        let (charset, collation) = collation_by_id(u32::from(collation))?;
        let names = format!("SET NAMES '{charset}' COLLATE '{collation}'");
        let SetEffect::Tracked(set) = parse_set(names.as_bytes()) else {
            return None;
        };
        let mut out = self.clone();
        for a in &set {
            if let Slot::System { key, name } = a.slot {
                if out.system_value(key).is_none() {
                    out.set_system(key, name, a.value.as_deref());
                }
            }
        }
        Some(out)
    }

    /// The part of [`SessionVars::sync_statements`] for the charset slots.
    ///
    /// `character_set_results` holds a collation, which the server gives result columns, and
    /// only `SET NAMES cs COLLATE coll` or the handshake put one that is not the charset's
    /// default there: `SET character_set_results=cs` takes the default (45 for utf8mb4 where
    /// the client had 46, utf8mb4_bin). So when that slot differs and the client's came from
    /// either, `SET NAMES` goes first, and the slots it set otherwise are put right after it.
    fn sync_charsets(
        &self,
        conn: &SessionVars,
        ctx: &SyncContext<'_>,
        items: &mut Vec<String>,
    ) -> bool {
        let handshake = u32::from(ctx.handshake_collation);
        // The connection's charset slots once the `SET NAMES` below ran, if one does.
        let mut after_names = SessionVars::default();
        let mut theirs = conn;
        let mine = self.system_value(RESULTS_KEY);
        if mine != conn.system_value(RESULTS_KEY) {
            match mine {
                Some(mine) if mine.name == NAMES => {
                    let names = format!("NAMES {}", mine.value);
                    let SetEffect::Tracked(set) = parse_set(format!("SET {names}").as_bytes())
                    else {
                        // Unreachable: the value is what the parser made of a SET NAMES.
                        return false;
                    };
                    after_names.apply(&set);
                    items.push(names);
                    theirs = &after_names;
                }
                None if !is_default_collation(handshake) => {
                    let Some((charset, collation)) = collation_by_id(handshake) else {
                        return false;
                    };
                    // As the handshake: every charset slot back at the handshake collation.
                    items.push(format!("NAMES '{charset}' COLLATE '{collation}'"));
                    theirs = &after_names;
                }
                _ => {}
            }
        }
        for key in CHARSET_KEYS {
            match (self.system_value(key), theirs.system_value(key)) {
                (Some(mine), theirs) if theirs != Some(mine) => {
                    items.push(format!("{}={}", mine.name, mine.value));
                }
                (None, Some(_)) => {
                    let Some((charset, collation)) = collation_by_id(handshake) else {
                        return false;
                    };
                    let value = if key == "collation_connection" {
                        collation
                    } else {
                        charset
                    };
                    items.push(format!("{key}='{value}'"));
                }
                _ => {}
            }
        }
        true
    }
}

/// Sets or (value None) removes `name` in a Vec sorted by name.
fn set_sorted(list: &mut Vec<(Box<str>, Box<str>)>, name: &str, value: Option<&str>) {
    match (list.binary_search_by(|(n, _)| (**n).cmp(name)), value) {
        (Ok(i), Some(v)) => {
            if let Some(entry) = list.get_mut(i) {
                entry.1 = v.into();
            }
        }
        (Ok(i), None) => {
            list.remove(i);
        }
        (Err(i), Some(v)) => list.insert(i, (name.into(), v.into())),
        (Err(_), None) => {}
    }
}

/// The name to replay a slot with: its own, or for the transaction slots the one this server
/// knows.
fn replay_name(slot: Option<&SystemValue>, modern: bool) -> &'static str {
    match slot {
        Some(s) if s.name.is_empty() => match (s.key, modern) {
            ("transaction_isolation", false) => "tx_isolation",
            ("transaction_read_only", false) => "tx_read_only",
            (key, _) => key,
        },
        Some(s) => s.name,
        None => "",
    }
}

/// Whether the server knows `transaction_isolation` / `transaction_read_only` (MySQL 8.0 removed
/// the `tx_*` names; MariaDB added the new ones in 11.1).
fn modern_transaction_names(version: &str) -> bool {
    let mariadb = version.to_ascii_lowercase().contains("mariadb");
    // MariaDB's handshake may prefix its version with "5.5.5-" for old clients.
    let version = if mariadb {
        version.strip_prefix("5.5.5-").unwrap_or(version)
    } else {
        version
    };
    let mut parts = version
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let major = parts.next().unwrap_or(0);
    let minor = parts.next().unwrap_or(0);
    if mariadb {
        (major, minor) >= (11, 1)
    } else {
        major >= 8
    }
}
