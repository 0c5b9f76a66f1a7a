//! The one-pass scanner: skips string literals, quoted identifiers and comments, and looks at
//! the first keyword of every statement plus a few identifiers anywhere.

use crate::command::{command_of, SqlCommand};

/// The first keyword of a statement, as far as weir cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatementKind {
    /// SELECT (and WITH ... SELECT, parenthesised SELECT, VALUES, TABLE).
    Select,
    /// INSERT, REPLACE.
    Insert,
    /// UPDATE.
    Update,
    /// DELETE.
    Delete,
    /// BEGIN, START TRANSACTION.
    Begin,
    /// COMMIT.
    Commit,
    /// ROLLBACK (not ROLLBACK TO SAVEPOINT: that keeps the transaction).
    Rollback,
    /// SET ...
    Set,
    /// USE db.
    Use,
    /// SHOW, DESCRIBE, EXPLAIN, HELP.
    Show,
    /// KILL [CONNECTION | QUERY] id.
    Kill,
    /// CALL.
    Call,
    /// Anything else (DDL, LOCK, PREPARE, DO, ...).
    Other,
    /// Only whitespace and comments.
    Empty,
}

/// Why a statement ties the session to its backend connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pin(pub u32);

impl Pin {
    /// SET of a session variable.
    pub const SET: u32 = 1;
    /// LOCK TABLES / FLUSH TABLES WITH READ LOCK.
    pub const LOCK_TABLES: u32 = 1 << 1;
    /// GET_LOCK(), RELEASE_LOCK() and friends.
    pub const USER_LOCK: u32 = 1 << 2;
    /// CREATE TEMPORARY TABLE.
    pub const TEMP_TABLE: u32 = 1 << 3;
    /// A user variable assigned outside SET (`@v := ...`, `... INTO @v`).
    pub const USER_VARIABLE: u32 = 1 << 4;
    /// Text-protocol PREPARE / EXECUTE / DEALLOCATE.
    pub const PREPARED: u32 = 1 << 5;
    /// Anything else whose effect weir does not follow (HANDLER, XA, ...).
    pub const UNTRACKED: u32 = 1 << 7;

    /// Whether any reason is present.
    pub fn any(self) -> bool {
        self.0 != 0
    }
}

/// A named text-protocol prepared statement being created or dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TextPrepare {
    /// `PREPARE name FROM ...`.
    Prepare(String),
    /// `DEALLOCATE PREPARE name` / `DROP PREPARE name`.
    Deallocate(String),
}

/// What the scanner found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryScan {
    /// Kind of the first statement.
    pub kind: StatementKind,
    /// Number of statements (more than one with multi-statements).
    pub statements: u32,
    /// Reasons to pin.
    pub pin: Pin,
    /// Whether LAST_INSERT_ID() is read.
    pub reads_last_insert_id: bool,
    /// For a lone `USE db`: the schema (backquotes removed).
    pub use_schema: Option<String>,
    /// For a lone `KILL [QUERY|CONNECTION] n`: (query only, id).
    pub kill: Option<(bool, u64)>,
    /// Whether the statement reads what the previous one left on its connection: FOUND_ROWS(),
    /// ROW_COUNT(), SHOW WARNINGS / ERRORS / COUNT(*), GET DIAGNOSTICS.
    pub reads_previous_result: bool,
    /// Whether it reads the diagnostics (warnings and errors) in particular: SHOW WARNINGS /
    /// ERRORS / COUNT(*), GET DIAGNOSTICS, `@@warning_count`, `@@error_count`, anywhere in it.
    pub reads_diagnostics: bool,
    /// Whether SQL_CALC_FOUND_ROWS is used (FOUND_ROWS() must then run on the same connection).
    pub calc_found_rows: bool,
    /// Whether a statement is UNLOCK TABLES.
    pub unlock_tables: bool,
    /// Whether a statement is DROP DATABASE / DROP SCHEMA: the connection that runs it has no
    /// current schema afterwards when it was the one dropped.
    pub drops_schema: bool,
    /// For a lone text-protocol PREPARE or DEALLOCATE/DROP PREPARE: the statement name.
    pub text_prepare: Option<TextPrepare>,
    /// ProxySQL's command for the first statement (stats_mysql_commands_counters).
    pub command: SqlCommand,
    /// Whether a statement is a locking read: FOR UPDATE, FOR SHARE, LOCK IN SHARE MODE.
    pub locking_read: bool,
    /// Whether the word INTO appears (`SELECT ... INTO @v / OUTFILE / DUMPFILE`, INSERT INTO).
    pub into: bool,
    /// Whether a KILL is one of several statements (its id would reach the server).
    pub kill_in_batch: bool,
    /// Whether a statement is `SET STATEMENT ... FOR`: its reply's status reflects values that
    /// last for that statement only.
    pub statement_scoped_set: bool,
    /// Whether a statement advances or sets a sequence (NEXTVAL(), SETVAL(), NEXT VALUE FOR):
    /// even a SELECT then changes something, so it must not run twice.
    pub sequence_write: bool,
    /// Whether a statement calls a function that may be a stored one (a name called that is
    /// not a built-in function, or one qualified by a schema): it may write, so even a SELECT
    /// must not run twice, and it may change the session ([`QueryScan::run_pins`]).
    pub calls_routine: bool,
    /// Whether a SELECT, DO, INSERT, REPLACE, UPDATE or DELETE among the statements calls a
    /// function that may be a stored one (a table's column list, `INSERT INTO t (a)`, is not
    /// a call): it runs with the session, which it may change.
    pub runs_stored_function: bool,
    /// Whether a statement is `LOAD DATA | XML [LOW_PRIORITY | CONCURRENT] LOCAL INFILE`: it
    /// asks the client for a file.
    pub load_data_local: bool,
    /// Whether a statement begins or ends a transaction (BEGIN, START TRANSACTION, COMMIT,
    /// ROLLBACK): the transaction open after it, if any, is a new one.
    pub transaction_boundary: bool,
    /// Whether the statement leaves the previous statement's warnings and errors in place, as
    /// the server does for a lone statement naming no table (a SELECT without FROM, SET, DO,
    /// BEGIN, COMMIT, ROLLBACK, USE, and SHOW WARNINGS and the like) that raises none of its
    /// own. Conservative: FROM anywhere,
    /// or a sequence, counts as a table.
    pub keeps_diagnostics: bool,
    /// Whether the statement is a lone diagnostics statement (SHOW WARNINGS / ERRORS / COUNT(*)
    /// ..., GET [CURRENT] DIAGNOSTICS): MySQL, which clears the diagnostics at every other
    /// statement, leaves them in place for these too.
    pub diagnostics_statement: bool,
}

impl QueryScan {
    /// What running the statement pins: [`QueryScan::pin`], and for a statement calling a
    /// function that may be a stored one ([`QueryScan::runs_stored_function`]),
    /// [`Pin::UNTRACKED`]: a stored function runs with the session and may set variables, take
    /// locks or create temporary tables weir would not see, as a CALL may. A reply from the
    /// query cache runs nothing: the statement's own [`QueryScan::pin`] decides whether it
    /// may come from there.
    pub fn run_pins(&self) -> u32 {
        if self.runs_stored_function {
            self.pin.0 | Pin::UNTRACKED
        } else {
            self.pin.0
        }
    }
}

/// Bytes of an unquoted identifier or keyword: ASCII letters and digits, `_`, `$`, and any
/// byte of a multi-byte UTF-8 character.
const IDENT_BYTES: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80;
        b += 1;
    }
    t
};

/// A table rather than the comparisons: every byte of every query goes through it, and how
/// LLVM compiled those varied with the code around (+260 instructions per point select).
#[inline(always)]
fn is_ident_byte(b: u8) -> bool {
    IDENT_BYTES[usize::from(b)]
}

/// What a backquoted name called as a function tells about the statement (the unquoted ones
/// are read inline in [`scan`], the same way). Returns whether it names a sequence.
#[cold]
#[inline(never)]
fn note_function(out: &mut QueryScan, w: &[u8]) -> bool {
    let is = |name: &[u8]| w.eq_ignore_ascii_case(name);
    match w.len() {
        6 if is(b"SETVAL") => out.sequence_write = true,
        7 if is(b"NEXTVAL") => out.sequence_write = true,
        7 if is(b"LASTVAL") || is(b"CURRVAL") => {
            out.reads_previous_result = true;
            return true;
        }
        8 if is(b"GET_LOCK") => out.pin.0 |= Pin::USER_LOCK,
        9 if is(b"ROW_COUNT") => out.reads_previous_result = true,
        10 if is(b"FOUND_ROWS") => out.reads_previous_result = true,
        12 if is(b"RELEASE_LOCK") || is(b"IS_USED_LOCK") => out.pin.0 |= Pin::USER_LOCK,
        14 if is(b"LAST_INSERT_ID") => out.reads_last_insert_id = true,
        17 if is(b"RELEASE_ALL_LOCKS") => out.pin.0 |= Pin::USER_LOCK,
        _ => {}
    }
    false
}

/// Whether `(` comes next in `q` from `i`, after any whitespace or comments (a call: the
/// server reads `f/**/()` and `f -- c\n()` as `f()`).
#[inline(always)]
fn paren_follows(q: &[u8], mut i: usize) -> bool {
    loop {
        match q.get(i) {
            Some(b' ' | b'\t' | b'\n' | b'\r') => i += 1,
            Some(b'(') => return true,
            Some(b'/' | b'#' | b'-') => return paren_after_comments(q, i),
            _ => return false,
        }
    }
}

/// Whether `--` at `i` starts a comment: as the server, when a space or any control
/// character follows it.
#[inline(always)]
fn line_comment_at(q: &[u8], i: usize) -> bool {
    i + 2 < q.len() && q[i + 1] == b'-' && (q[i + 2] <= b' ' || q[i + 2] == 0x7F)
}

/// Where the line from `i` ends (its `\n`, or the end of `q`).
#[inline(always)]
fn line_end(q: &[u8], mut i: usize) -> usize {
    while i < q.len() && q[i] != b'\n' {
        i += 1;
    }
    i
}

/// [`paren_follows`] past comments (rare: kept off the per-word path).
#[cold]
#[inline(never)]
fn paren_after_comments(q: &[u8], mut i: usize) -> bool {
    let n = q.len();
    while i < n {
        match q[i] {
            b if b.is_ascii_whitespace() || b == 0x0b => i += 1,
            b'(' => return true,
            b'#' => i = line_end(q, i),
            b'-' if line_comment_at(q, i) => i = line_end(q, i),
            // `/*!` and `/*M!` hold code, not a comment: what they hold is read as such.
            b'/' if i + 1 < n
                && q[i + 1] == b'*'
                && q.get(i + 2) != Some(&b'!')
                && q.get(i + 2..i + 4) != Some(&b"M!"[..]) =>
            {
                i += 2;
                while i + 1 < n && !(q[i] == b'*' && q[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            _ => return false,
        }
    }
    false
}

/// Whether the name starting at `start` is qualified (`db.name`).
fn qualified(q: &[u8], start: usize) -> bool {
    start > 0 && q.get(start - 1) == Some(&b'.')
}

/// What a system variable read after `@@` tells about the statement; returns whether the name
/// is a scope (`SESSION`, `LOCAL`, `GLOBAL`), which the variable's name follows.
#[cold]
#[inline(never)]
fn note_system_variable(out: &mut QueryScan, name: &[u8]) -> bool {
    let is = |v: &[u8]| name.eq_ignore_ascii_case(v);
    if is(b"SESSION") || is(b"LOCAL") || is(b"GLOBAL") {
        return true;
    }
    if is(b"WARNING_COUNT") || is(b"ERROR_COUNT") {
        // What the session's previous statement left.
        out.reads_previous_result = true;
        out.reads_diagnostics = true;
    } else if is(b"LAST_GTID") {
        out.reads_previous_result = true;
    } else if is(b"IDENTITY") || is(b"LAST_INSERT_ID") {
        out.reads_last_insert_id = true;
    }
    false
}

/// How the server's lexer reads a session's statements: what changes where a quoted string
/// or a comment ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Lexing {
    /// sql_mode has NO_BACKSLASH_ESCAPES: a backslash in a string is a plain character.
    pub no_backslash_escapes: bool,
    /// sql_mode has ANSI_QUOTES (or a mode that implies it: ANSI, ORACLE...): `"..."` is an
    /// identifier, in which a backslash is a plain character.
    pub ansi_quotes: bool,
    /// The client's charset has two-byte characters whose second byte may be ASCII (a
    /// backslash or a quote).
    pub multibyte: Option<Multibyte>,
}

/// Character sets whose two-byte characters may end in an ASCII byte (`ソ` is 0x83 0x5C in
/// sjis): the server reads such a character whole, so its second byte escapes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Multibyte {
    /// sjis, cp932.
    Sjis,
    /// gbk.
    Gbk,
    /// big5.
    Big5,
}

impl Multibyte {
    /// The class of the charset named `charset`, if it has such characters.
    pub fn of_charset(charset: &str) -> Option<Multibyte> {
        let is = |name: &str| charset.eq_ignore_ascii_case(name);
        if is("sjis") || is("cp932") {
            Some(Multibyte::Sjis)
        } else if is("gbk") {
            Some(Multibyte::Gbk)
        } else if is("big5") {
            Some(Multibyte::Big5)
        } else {
            None
        }
    }

    /// The class of the charset of the collation a handshake names (`id`); looked up in a
    /// table made once, since every statement's scan asks.
    pub fn of_collation(id: u8) -> Option<Multibyte> {
        static BY_ID: std::sync::OnceLock<[Option<Multibyte>; 256]> = std::sync::OnceLock::new();
        BY_ID.get_or_init(|| {
            let mut table = [None; 256];
            for (id, class) in (0u32..).zip(table.iter_mut()) {
                *class = crate::collation_by_id(id).and_then(|(cs, _)| Multibyte::of_charset(cs));
            }
            table
        })[usize::from(id)]
    }

    /// Whether `lead` then `trail` is one two-byte character (as the server's `ismbchar`).
    #[inline]
    fn pair(self, lead: u8, trail: u8) -> bool {
        match self {
            Multibyte::Sjis => {
                matches!(lead, 0x81..=0x9F | 0xE0..=0xFC)
                    && matches!(trail, 0x40..=0x7E | 0x80..=0xFC)
            }
            Multibyte::Gbk => {
                matches!(lead, 0x81..=0xFE) && matches!(trail, 0x40..=0x7E | 0x80..=0xFE)
            }
            Multibyte::Big5 => {
                matches!(lead, 0xA1..=0xF9) && matches!(trail, 0x40..=0x7E | 0xA1..=0xFE)
            }
        }
    }
}

impl Lexing {
    /// Whether `q` reads differently under this lexing than under the default one: only a
    /// backslash, or with a multibyte charset a byte past ASCII, can change where things end.
    pub fn matters_for(&self, q: &[u8]) -> bool {
        ((self.no_backslash_escapes || self.ansi_quotes) && q.contains(&b'\\'))
            || (self.multibyte.is_some() && q.iter().any(|&b| b >= 0x80))
    }

    /// Whether a backslash escapes the next byte inside a quoted token opened by `quote`.
    #[inline]
    fn escapes_in(&self, quote: u8) -> bool {
        match quote {
            b'\'' => !self.no_backslash_escapes,
            b'"' => !self.no_backslash_escapes && !self.ansi_quotes,
            _ => false,
        }
    }

    /// Bytes of the character at `i` of `q`: 2 for a two-byte character of the client's
    /// charset, else 1.
    #[inline]
    fn char_len(&self, q: &[u8], i: usize) -> usize {
        match (self.multibyte, q.get(i), q.get(i + 1)) {
            (Some(mb), Some(&lead), Some(&trail)) if lead >= 0x80 && mb.pair(lead, trail) => 2,
            _ => 1,
        }
    }
}

/// Scans a query written in the default lexing (backslash escapes, an ASCII-safe charset).
pub fn scan(q: &[u8]) -> QueryScan {
    scan_with(q, Lexing::default())
}

/// Scans a query as the server reads it in a session with `lexing`.
pub fn scan_with(q: &[u8], lexing: Lexing) -> QueryScan {
    let mut out = QueryScan {
        kind: StatementKind::Empty,
        statements: 0,
        pin: Pin::default(),
        reads_last_insert_id: false,
        use_schema: None,
        kill: None,
        calc_found_rows: false,
        reads_previous_result: false,
        reads_diagnostics: false,
        unlock_tables: false,
        drops_schema: false,
        text_prepare: None,
        command: SqlCommand::Unknown,
        locking_read: false,
        into: false,
        kill_in_batch: false,
        load_data_local: false,
        transaction_boundary: false,
        statement_scoped_set: false,
        sequence_write: false,
        calls_routine: false,
        runs_stored_function: false,
        keeps_diagnostics: false,
        diagnostics_statement: false,
    };
    // FROM, TABLE or a sequence was named: the server clears the previous diagnostics.
    let mut names_table = false;
    // The previous word was NEXT (1) or PREVIOUS (2): `NEXT VALUE FOR seq` advances a
    // sequence, `PREVIOUS VALUE FOR seq` reads the connection's last value of it.
    let mut value_for = 0u8;
    let mut kills = 0u32;
    // Inside `/*! ... */` or `/*M! ... */`: MySQL and MariaDB run what is in it (mysqldump
    // writes `/*!40101 SET ... */`), so it is scanned as code.
    let mut in_exec_comment = false;
    // Words of the current statement we still want to look at (its first four).
    let mut words: [&[u8]; 4] = [&[]; 4];
    let mut nwords = 0usize;
    // Whether the previous word was FOR, and whether FOR UPDATE was seen in this statement.
    let mut after_for = false;
    // Whether the previous word was INTO (`SELECT ... INTO @v` assigns a user variable).
    let mut after_into = false;
    // Right after `@@` (or `@@session.`): the name of a system variable comes.
    let mut sysvar = false;
    // The current statement calls a name that may be a stored function.
    let mut stmt_calls = false;
    let mut for_update = false;
    // How far `LOCK IN SHARE MODE` has been read: 1 after LOCK, 2 after LOCK IN.
    let mut lock_in_share = 0u8;
    let mut stmt_start = 0usize;
    let mut i = 0usize;
    let n = q.len();
    let finish = |out: &mut QueryScan,
                  words: &[&[u8]; 4],
                  nwords: usize,
                  for_update: bool,
                  text: &[u8]| {
        if nwords == 0 {
            return None;
        }
        out.statements += 1;
        let (kind, pin) = if nwords > 1 && eq(words[0], "SET") && eq(words[1], "STATEMENT") {
            // `SET STATEMENT var=value [, ...] FOR stmt`: the values last for that one
            // statement; the session changes only as `stmt` changes it.
            out.statement_scoped_set = true;
            set_statement_inner(text, lexing)
        } else {
            classify(words, nwords)
        };
        if out.statements == 1 {
            out.diagnostics_statement = diagnostics_statement(words, nwords);
            out.keeps_diagnostics = out.diagnostics_statement || leaves_diagnostics(words, nwords);
            out.kind = kind;
            out.command = command_of(&words[..nwords], for_update);
            if kind == StatementKind::Use {
                out.use_schema = parse_use(text);
                if out.use_schema.is_none() {
                    // The server changes the schema; weir could not read to which.
                    out.pin.0 |= Pin::UNTRACKED;
                }
            }
            if kind == StatementKind::Kill {
                out.kill = parse_kill(text);
            }
            if pin & Pin::PREPARED != 0 {
                out.text_prepare = parse_text_prepare(words, nwords);
            }
        } else {
            out.keeps_diagnostics = false;
            out.diagnostics_statement = false;
            out.use_schema = None;
            out.kill = None;
            out.text_prepare = None;
        }
        if diagnostics_statement(words, nwords) {
            out.reads_previous_result = true;
            out.reads_diagnostics = true;
        }
        if eq(words[0], "UNLOCK") && nwords > 1 && (eq(words[1], "TABLES") || eq(words[1], "TABLE"))
        {
            out.unlock_tables = true;
        }
        if eq(words[0], "DROP")
            && nwords > 1
            && (eq(words[1], "DATABASE") || eq(words[1], "SCHEMA"))
        {
            out.drops_schema = true;
        }
        if eq(words[0], "LOAD") && nwords > 2 && (eq(words[1], "DATA") || eq(words[1], "XML")) {
            let local = if eq(words[2], "LOW_PRIORITY") || eq(words[2], "CONCURRENT") {
                nwords > 3 && eq(words[3], "LOCAL")
            } else {
                eq(words[2], "LOCAL")
            };
            out.load_data_local |= local;
        }
        out.pin.0 |= pin;
        // `BEGIN NOT ATOMIC ... END` is a compound statement, not a transaction's start.
        let compound = nwords > 1 && eq(words[0], "BEGIN") && eq(words[1], "NOT");
        out.transaction_boundary |= !compound
            && matches!(
                kind,
                StatementKind::Begin | StatementKind::Commit | StatementKind::Rollback
            );
        Some(kind)
    };
    // A USE among several statements, and a CALL given user variables (OUT parameters are
    // assigned inside the procedure): state weir cannot follow.
    let mut saw_use = false;
    let mut stmt_user_var = false;
    let mut after_statement = |out: &mut QueryScan,
                               kind: Option<StatementKind>,
                               user_var: bool,
                               get_diagnostics: bool| {
        saw_use |= kind == Some(StatementKind::Use);
        if kind == Some(StatementKind::Kill) {
            kills += 1;
        }
        // `GET DIAGNOSTICS @v = ...` assigns user variables as a CALL does.
        if (kind == Some(StatementKind::Call) || get_diagnostics) && user_var {
            out.pin.0 |= Pin::USER_VARIABLE;
        }
    };
    while i < n {
        let b = q[i];
        match b {
            b'\'' | b'"' | b'`' => {
                let start = i;
                i += 1;
                while i < n {
                    if q[i] >= 0x80 && lexing.multibyte.is_some() {
                        i += lexing.char_len(q, i);
                        continue;
                    }
                    if q[i] == b'\\' && lexing.escapes_in(b) {
                        i += 2;
                        continue;
                    }
                    if q[i] == b {
                        if i + 1 < n && q[i + 1] == b {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
                if nwords == 0 {
                    // A statement starting with a quoted token: nothing we recognise.
                    words[0] = b"?";
                    nwords = 1;
                }
                // A quoted function name (`FOUND_ROWS`()) is the function all the same, and
                // a quoted system variable (@@`warning_count`) the variable.
                let mut scope = false;
                if b == b'`' {
                    let name = q.get(start + 1..i.saturating_sub(1)).unwrap_or_default();
                    let mut j = i;
                    while j < n && q[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if sysvar {
                        scope = note_system_variable(&mut out, name) && j < n && q[j] == b'.';
                    } else if paren_follows(q, i) {
                        names_table |= note_function(&mut out, name);
                        stmt_calls |= (qualified(q, start)
                            || !crate::builtins::is_builtin_callable(name))
                            && !names_a_table(q, start, &words, nwords);
                    }
                }
                sysvar = scope;
            }
            b'#' => i = line_end(q, i),
            b'-' if line_comment_at(q, i) => i = line_end(q, i),
            b'-' if i + 2 == n && q[i + 1] == b'-' => i = n,
            b'/' if i + 2 < n && q[i + 1] == b'*' && q[i + 2] == b'!' => {
                i = skip_version(q, i + 3);
                in_exec_comment = true;
            }
            b'/' if i + 3 < n && q[i + 1] == b'*' && q[i + 2] == b'M' && q[i + 3] == b'!' => {
                i = skip_version(q, i + 4);
                in_exec_comment = true;
            }
            b'*' if in_exec_comment && i + 1 < n && q[i + 1] == b'/' => {
                in_exec_comment = false;
                i += 2;
            }
            b'/' if i + 1 < n && q[i + 1] == b'*' => {
                i += 2;
                while i + 1 < n && !(q[i] == b'*' && q[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b'@' => {
                if i + 1 < n && q[i + 1] == b'@' {
                    // @@system_variable: a read or a SET; SET is looked at by itself.
                    i += 2;
                    sysvar = true;
                } else {
                    // Reading a user variable is fine (weir replays the ones set by SET);
                    // assigning one anywhere but in SET is not followed.
                    i = skip_user_variable(q, i + 1);
                    stmt_user_var = true;
                    let mut j = i;
                    while j < n && q[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    if after_into || (j + 1 < n && q[j] == b':' && q[j + 1] == b'=') {
                        out.pin.0 |= Pin::USER_VARIABLE;
                    }
                }
                after_into = false;
            }
            b';' => {
                out.locking_read |= for_update;
                let kind = finish(&mut out, &words, nwords, for_update, &q[stmt_start..i]);
                let get_diagnostics = get_diagnostics(&words, nwords);
                after_statement(&mut out, kind, stmt_user_var, get_diagnostics);
                note_calls(&mut out, stmt_calls, kind, &words, nwords);
                stmt_calls = false;
                stmt_user_var = false;
                nwords = 0;
                after_for = false;
                after_into = false;
                for_update = false;
                i += 1;
                stmt_start = i;
            }
            _ if is_ident_byte(b) => {
                let start = i;
                if lexing.multibyte.is_none() {
                    while i < n && is_ident_byte(q[i]) {
                        i += 1;
                    }
                } else {
                    while i < n && is_ident_byte(q[i]) {
                        // A two-byte character's second byte may be `@`, `\\` or a backquote.
                        i += lexing.char_len(q, i);
                    }
                }
                let w = &q[start..i];
                if !stmt_calls && paren_follows(q, i) {
                    stmt_calls = (qualified(q, start) || !crate::builtins::is_builtin_callable(w))
                        && !names_a_table(q, start, &words, nwords);
                }
                if sysvar {
                    // The scope (`@@session.`): the name follows the dot.
                    let mut j = i;
                    while j < n && q[j].is_ascii_whitespace() {
                        j += 1;
                    }
                    sysvar = note_system_variable(&mut out, w) && j < n && q[j] == b'.';
                }
                if nwords < 4 {
                    words[nwords] = w;
                    nwords += 1;
                }
                if w.len() == 3 && w.eq_ignore_ascii_case(b"FOR") {
                    after_for = true;
                } else {
                    for_update |= after_for && w.eq_ignore_ascii_case(b"UPDATE");
                    out.locking_read |= after_for && w.eq_ignore_ascii_case(b"SHARE");
                    after_for = false;
                }
                lock_in_share = match lock_in_share {
                    _ if w.eq_ignore_ascii_case(b"LOCK") => 1,
                    1 if w.eq_ignore_ascii_case(b"IN") => 2,
                    2 if w.eq_ignore_ascii_case(b"SHARE") => {
                        out.locking_read = true;
                        0
                    }
                    _ => 0,
                };
                after_into = w.len() == 4 && w.eq_ignore_ascii_case(b"INTO");
                out.into |= after_into;
                match w.len() {
                    4 if w.eq_ignore_ascii_case(b"NEXT") => value_for = 1,
                    8 if w.eq_ignore_ascii_case(b"PREVIOUS") => value_for = 2,
                    5 if value_for != 0 && w.eq_ignore_ascii_case(b"VALUE") => {
                        if value_for == 1 {
                            out.sequence_write = true;
                        } else {
                            out.reads_previous_result = true;
                            names_table = true;
                        }
                        value_for = 0;
                    }
                    4 if w.eq_ignore_ascii_case(b"FROM") => {
                        names_table = true;
                        value_for = 0;
                    }
                    5 if w.eq_ignore_ascii_case(b"TABLE") => {
                        names_table = true;
                        value_for = 0;
                    }
                    6 if w.eq_ignore_ascii_case(b"SETVAL") => out.sequence_write = true,
                    7 if w.eq_ignore_ascii_case(b"NEXTVAL") => out.sequence_write = true,
                    7 if w.eq_ignore_ascii_case(b"LASTVAL")
                        || w.eq_ignore_ascii_case(b"CURRVAL") =>
                    {
                        out.reads_previous_result = true;
                        names_table = true;
                    }
                    _ => value_for = 0,
                }
                // The same names as `note_function`, inline: this runs for every word.
                if w.len() >= 9 {
                    if w.eq_ignore_ascii_case(b"GET_LOCK")
                        || w.eq_ignore_ascii_case(b"RELEASE_LOCK")
                        || w.eq_ignore_ascii_case(b"RELEASE_ALL_LOCKS")
                        || w.eq_ignore_ascii_case(b"IS_USED_LOCK")
                    {
                        out.pin.0 |= Pin::USER_LOCK;
                    } else if w.eq_ignore_ascii_case(b"SQL_CALC_FOUND_ROWS") {
                        out.calc_found_rows = true;
                    } else if w.eq_ignore_ascii_case(b"FOUND_ROWS")
                        || w.eq_ignore_ascii_case(b"ROW_COUNT")
                    {
                        out.reads_previous_result = true;
                    } else if w.eq_ignore_ascii_case(b"LAST_INSERT_ID") {
                        out.reads_last_insert_id = true;
                    }
                } else if w.eq_ignore_ascii_case(b"GET_LOCK") {
                    out.pin.0 |= Pin::USER_LOCK;
                } else if w.eq_ignore_ascii_case(b"IDENTITY") {
                    // @@identity is LAST_INSERT_ID() (a column of that name costs a no-op sync).
                    out.reads_last_insert_id = true;
                }
            }
            _ => i += 1,
        }
    }
    out.locking_read |= for_update;
    let end = n.min(q.len());
    let kind = finish(
        &mut out,
        &words,
        nwords,
        for_update,
        &q[stmt_start.min(end)..end],
    );
    let get_diagnostics = get_diagnostics(&words, nwords);
    after_statement(&mut out, kind, stmt_user_var, get_diagnostics);
    note_calls(&mut out, stmt_calls, kind, &words, nwords);
    if saw_use && out.statements > 1 {
        out.pin.0 |= Pin::UNTRACKED;
    }
    out.kill_in_batch = kills > 0 && out.statements > 1;
    out.keeps_diagnostics &= !names_table && !out.sequence_write;
    out
}

/// Records what a finished statement's calls of names that may be stored functions mean:
/// a SELECT, DO, INSERT, REPLACE, UPDATE or DELETE runs them with the session. In other
/// statements (DDL) a name before `(` is mostly a key's or a reference's column list.
fn note_calls(
    out: &mut QueryScan,
    calls: bool,
    kind: Option<StatementKind>,
    words: &[&[u8]; 4],
    nwords: usize,
) {
    if !calls {
        return;
    }
    out.calls_routine = true;
    out.runs_stored_function |= matches!(
        kind,
        Some(
            StatementKind::Select
                | StatementKind::Insert
                | StatementKind::Update
                | StatementKind::Delete
        )
    ) || (nwords > 0 && eq(words[0], "DO"));
}

/// Whether the name at `start`, which a `(` follows, is a table's, its `(` opening a column
/// list rather than a call's arguments: the word before it (before its `schema.` when it is
/// qualified) is INTO, INSERT, REPLACE, WITH or RECURSIVE (`INSERT INTO t (a)`, `WITH cte (a)
/// AS`), or, in an INSERT or a REPLACE, IGNORE, DELAYED, LOW_PRIORITY or HIGH_PRIORITY. Read
/// backwards only for a name that is not a built-in function: rare, so the scan of every
/// other word pays nothing. A comment between the words reads as a call (pins: safe).
#[cold]
#[inline(never)]
fn names_a_table(q: &[u8], start: usize, words: &[&[u8]; 4], nwords: usize) -> bool {
    let skip_space = |mut j: usize| {
        while j > 0 && q[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        j
    };
    // The start of the name (or of the backquoted name) ending just before `j`.
    let name_start = |j: usize| {
        if j > 0 && q[j - 1] == b'`' {
            let mut k = j - 1;
            while k > 0 && q[k - 1] != b'`' {
                k -= 1;
            }
            k.saturating_sub(1)
        } else {
            let mut k = j;
            while k > 0 && is_ident_byte(q[k - 1]) {
                k -= 1;
            }
            k
        }
    };
    let mut j = skip_space(start);
    if j > 0 && q[j - 1] == b'.' {
        // `schema.t`: the word before the schema's name.
        j = name_start(skip_space(j - 1));
    }
    let end = skip_space(j);
    let mut k = end;
    while k > 0 && is_ident_byte(q[k - 1]) {
        k -= 1;
    }
    let word = &q[k..end];
    let is = |name: &[u8]| word.eq_ignore_ascii_case(name);
    let inserting = nwords > 0 && (eq(words[0], "INSERT") || eq(words[0], "REPLACE"));
    is(b"INTO")
        || is(b"INSERT")
        || is(b"REPLACE")
        || is(b"WITH")
        || is(b"RECURSIVE")
        || (inserting
            && (is(b"IGNORE") || is(b"DELAYED") || is(b"LOW_PRIORITY") || is(b"HIGH_PRIORITY")))
}

/// Whether a statement of this kind leaves the previous statement's diagnostics in place
/// when it names no table (checked by the caller). `SET STATEMENT ... FOR` is left out: the
/// statement it runs may be anything.
fn leaves_diagnostics(words: &[&[u8]; 4], nwords: usize) -> bool {
    let w0 = words[0];
    let w1 = if nwords > 1 { words[1] } else { &[][..] };
    eq(w0, "SELECT")
        || eq(w0, "VALUES")
        || eq(w0, "DO")
        || eq(w0, "USE")
        || (eq(w0, "BEGIN") && !eq(w1, "NOT"))
        || eq(w0, "COMMIT")
        || (eq(w0, "START") && eq(w1, "TRANSACTION"))
        || (eq(w0, "ROLLBACK") && !eq(w1, "TO") && !eq(w1, "WORK"))
        || (eq(w0, "SET") && !eq(w1, "STATEMENT"))
}

/// Whether a statement of this kind reads the diagnostics (the server leaves them in place).
fn diagnostics_statement(words: &[&[u8]; 4], nwords: usize) -> bool {
    let w0 = words[0];
    let w1 = if nwords > 1 { words[1] } else { &[][..] };
    (eq(w0, "SHOW") && (eq(w1, "WARNINGS") || eq(w1, "ERRORS") || eq(w1, "COUNT")))
        || get_diagnostics(words, nwords)
}

/// Whether a statement is `GET [CURRENT | STACKED] DIAGNOSTICS`.
fn get_diagnostics(words: &[&[u8]; 4], nwords: usize) -> bool {
    nwords > 1
        && eq(words[0], "GET")
        && (eq(words[1], "DIAGNOSTICS") || eq(words[1], "CURRENT") || eq(words[1], "STACKED"))
}

/// Kind and pins of `SET STATEMENT ... FOR stmt`: those of `stmt` (state weir does not follow
/// when it cannot find it).
fn set_statement_inner(text: &[u8], lexing: Lexing) -> (StatementKind, u32) {
    let mut i = 0;
    let mut depth = 0i32;
    while i < text.len() {
        match text[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < text.len() && text[i] != q {
                    if text[i] >= 0x80 && lexing.multibyte.is_some() {
                        i += lexing.char_len(text, i);
                        continue;
                    }
                    if text[i] == b'\\' && lexing.escapes_in(q) {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth -= 1;
                i += 1;
            }
            b if is_ident_byte(b) => {
                let start = i;
                while i < text.len() && is_ident_byte(text[i]) {
                    i += 1;
                }
                if depth == 0 && text[start..i].eq_ignore_ascii_case(b"FOR") {
                    let inner = scan_with(&text[i..], lexing);
                    return (inner.kind, inner.pin.0);
                }
            }
            _ => i += 1,
        }
    }
    (StatementKind::Other, Pin::UNTRACKED)
}

/// Skips the optional server version (5 or 6 digits) after `/*!` or `/*M!`.
fn skip_version(q: &[u8], mut i: usize) -> usize {
    let start = i;
    while i < q.len() && i - start < 6 && q[i].is_ascii_digit() {
        i += 1;
    }
    i
}

fn eq(a: &[u8], b: &str) -> bool {
    a.eq_ignore_ascii_case(b.as_bytes())
}

fn classify(words: &[&[u8]; 4], nwords: usize) -> (StatementKind, u32) {
    let w0 = words[0];
    let w1 = if nwords > 1 { words[1] } else { &[][..] };
    let w2 = if nwords > 2 { words[2] } else { &[][..] };
    let w3 = if nwords > 3 { words[3] } else { &[][..] };
    use StatementKind as K;
    match () {
        _ if eq(w0, "SELECT") || eq(w0, "WITH") || eq(w0, "VALUES") || eq(w0, "TABLE") => {
            (K::Select, 0)
        }
        _ if eq(w0, "INSERT") || eq(w0, "REPLACE") => (K::Insert, 0),
        _ if eq(w0, "UPDATE") => (K::Update, 0),
        _ if eq(w0, "DELETE") => (K::Delete, 0),
        _ if eq(w0, "BEGIN") => (K::Begin, 0),
        _ if eq(w0, "START") && eq(w1, "TRANSACTION") => (K::Begin, 0),
        _ if eq(w0, "COMMIT") => (K::Commit, 0),
        _ if eq(w0, "ROLLBACK") && !(eq(w1, "TO") || (eq(w1, "WORK") && eq(w2, "TO"))) => {
            (K::Rollback, 0)
        }
        _ if eq(w0, "SET") => (K::Set, Pin::SET),
        _ if eq(w0, "USE") => (K::Use, 0),
        _ if eq(w0, "SHOW")
            || eq(w0, "DESCRIBE")
            || eq(w0, "DESC")
            || eq(w0, "EXPLAIN")
            || eq(w0, "HELP") =>
        {
            (K::Show, 0)
        }
        _ if eq(w0, "KILL") => (K::Kill, 0),
        // A procedure may open a transaction, take locks, create temporary tables or set
        // variables, none of which its CALL shows: the session keeps its connection (a rule
        // with multiplex = 2 lifts this for procedures known to leave nothing behind).
        _ if eq(w0, "CALL") => (K::Call, Pin::UNTRACKED),
        _ if eq(w0, "LOCK")
            || (eq(w0, "FLUSH") && (eq(w1, "TABLES") || eq(w1, "TABLE")))
            || (eq(w0, "BACKUP") && eq(w1, "LOCK")) =>
        {
            (K::Other, Pin::LOCK_TABLES)
        }
        _ if eq(w0, "BACKUP") => (K::Other, Pin::UNTRACKED),
        _ if eq(w0, "CREATE") && eq(w1, "TEMPORARY") => (K::Other, Pin::TEMP_TABLE),
        _ if eq(w0, "CREATE") && eq(w1, "OR") && eq(w2, "REPLACE") && eq(w3, "TEMPORARY") => {
            (K::Other, Pin::TEMP_TABLE)
        }
        _ if eq(w0, "CREATE") && eq(w1, "OR") && eq(w2, "REPLACE") => (K::Other, 0),
        // The statement it runs is not seen (a string or a variable).
        _ if eq(w0, "EXECUTE") && eq(w1, "IMMEDIATE") => (K::Other, Pin::UNTRACKED),
        _ if eq(w0, "PREPARE")
            || eq(w0, "EXECUTE")
            || eq(w0, "DEALLOCATE")
            || (eq(w0, "DROP") && eq(w1, "PREPARE")) =>
        {
            (K::Other, Pin::PREPARED)
        }
        _ if eq(w0, "HANDLER") || eq(w0, "XA") => (K::Other, Pin::UNTRACKED),
        // A savepoint lives in its transaction, which keeps the connection by itself; outside
        // one (autocommit) it is gone with the statement.
        _ if eq(w0, "SAVEPOINT") || eq(w0, "RELEASE") => (K::Other, 0),
        _ if eq(w0, "ROLLBACK") => (K::Other, 0),
        _ => (K::Other, 0),
    }
}

/// The schema of `USE name` (comments anywhere, the name bare or backquoted); `None` when the
/// text is not that.
fn parse_use(text: &[u8]) -> Option<String> {
    let t = std::str::from_utf8(text).ok()?;
    let code = without_comments(t)?;
    let code = code.trim().trim_end_matches(';').trim_end();
    let (keyword, rest) = code.split_at_checked(3)?;
    if !keyword.eq_ignore_ascii_case("USE") {
        return None;
    }
    let rest = rest.trim_start();
    if rest.len() == code.len() - 3 {
        // `USEdb`: no space after USE.
        return None;
    }
    let name = if let Some(inner) = rest.strip_prefix('`') {
        let inner = inner.strip_suffix('`')?;
        if inner.replace("``", "").contains('`') {
            return None;
        }
        inner.replace("``", "`")
    } else {
        if rest.is_empty() || rest.contains(|c: char| c.is_whitespace() || c == '`' || c == ';') {
            return None;
        }
        rest.to_string()
    };
    (!name.is_empty()).then_some(name)
}

/// `sql` with its comments replaced by a space: `/* ... */`, `-- ` and `#` to the end of the
/// line; executable comments (`/*! ... */`, `/*!50001 ... */`, `/*M! ... */`) keep their code.
/// Backquoted names are kept whole. `None` for quotes (a USE has none) or an unclosed comment.
fn without_comments(sql: &str) -> Option<String> {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let mut in_exec = false;
    while i < b.len() {
        match b[i] {
            b'`' => {
                let end = i + 1 + sql.get(i + 1..)?.find('`')?;
                out.push_str(sql.get(i..=end)?);
                i = end + 1;
            }
            b'\'' | b'"' => return None,
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let exec = match b.get(i + 2) {
                    Some(b'!') => Some(i + 3),
                    Some(b'M') if b.get(i + 3) == Some(&b'!') => Some(i + 4),
                    _ => None,
                };
                match exec {
                    Some(mut j) if !in_exec => {
                        while b.get(j).is_some_and(u8::is_ascii_digit) {
                            j += 1;
                        }
                        in_exec = true;
                        out.push(' ');
                        i = j;
                    }
                    _ => {
                        let end = i + 2 + sql.get(i + 2..)?.find("*/")?;
                        out.push(' ');
                        i = end + 2;
                    }
                }
            }
            b'*' if in_exec && b.get(i + 1) == Some(&b'/') => {
                in_exec = false;
                out.push(' ');
                i += 2;
            }
            b'#' => {
                i = sql[i..].find('\n').map_or(b.len(), |e| i + e);
                out.push(' ');
            }
            b'-' if b.get(i + 1) == Some(&b'-')
                && b.get(i + 2).is_none_or(|c| c.is_ascii_whitespace()) =>
            {
                i = sql[i..].find('\n').map_or(b.len(), |e| i + e);
                out.push(' ');
            }
            _ => {
                let len = sql[i..].chars().next().map_or(1, char::len_utf8);
                out.push_str(&sql[i..i + len]);
                i += len;
            }
        }
    }
    (!in_exec).then_some(out)
}

/// Skips a user variable name (`v`, `'v'`, `"v"`, `` `v` ``) starting at `i`.
fn skip_user_variable(q: &[u8], mut i: usize) -> usize {
    let n = q.len();
    match q.get(i) {
        Some(&quote @ (b'\'' | b'"' | b'`')) => {
            i += 1;
            while i < n && q[i] != quote {
                i += 1;
            }
            i + 1
        }
        _ => {
            while i < n && (is_ident_byte(q[i]) || q[i] == b'.') {
                i += 1;
            }
            i
        }
    }
}

fn parse_text_prepare(words: &[&[u8]; 4], nwords: usize) -> Option<TextPrepare> {
    let name = |w: &[u8]| {
        std::str::from_utf8(w)
            .ok()
            .filter(|s| !s.is_empty())
            .map(str::to_ascii_lowercase)
    };
    if eq(words[0], "PREPARE") && nwords > 1 {
        return name(words[1]).map(TextPrepare::Prepare);
    }
    if (eq(words[0], "DEALLOCATE") || eq(words[0], "DROP")) && nwords > 2 && eq(words[1], "PREPARE")
    {
        return name(words[2]).map(TextPrepare::Deallocate);
    }
    None
}

/// `KILL [HARD | SOFT] [CONNECTION | QUERY] n` → (query only, n); `None` for anything else
/// (KILL QUERY ID, whose id is a query id, KILL USER, an expression, comments inside).
fn parse_kill(text: &[u8]) -> Option<(bool, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    let mut words = text.split_ascii_whitespace().peekable();
    if !words.next()?.eq_ignore_ascii_case("KILL") {
        return None;
    }
    if words
        .peek()
        .is_some_and(|w| w.eq_ignore_ascii_case("HARD") || w.eq_ignore_ascii_case("SOFT"))
    {
        words.next();
    }
    let mut query = false;
    match words.peek() {
        Some(w) if w.eq_ignore_ascii_case("CONNECTION") => {
            words.next();
        }
        Some(w) if w.eq_ignore_ascii_case("QUERY") => {
            words.next();
            query = true;
        }
        _ => {}
    }
    let id = words.next()?.parse::<u64>().ok()?;
    words.next().is_none().then_some((query, id))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn kinds() {
        assert_eq!(scan(b"  /* x */ select 1").kind, StatementKind::Select);
        assert_eq!(scan(b"START TRANSACTION").kind, StatementKind::Begin);
        assert_eq!(scan(b"rollback to savepoint a").kind, StatementKind::Other);
        assert_eq!(
            scan(b"-- c\nINSERT INTO t VALUES (1)").kind,
            StatementKind::Insert
        );
        assert_eq!(scan(b"").kind, StatementKind::Empty);
    }

    #[test]
    fn pins() {
        assert!(scan(b"SET NAMES utf8").pin.any());
        assert!(!scan(b"select @a").pin.any());
        assert!(scan(b"select @a := 1").pin.0 & Pin::USER_VARIABLE != 0);
        assert!(scan(b"select @`a b`:=id from t").pin.0 & Pin::USER_VARIABLE != 0);
        assert!(scan(b"select id into @a from t").pin.0 & Pin::USER_VARIABLE != 0);
        assert!(!scan(b"select @a = 1, @b from t").pin.any());
        assert!(scan(b"CALL p(1, @out)").pin.0 & Pin::USER_VARIABLE != 0);
        // A procedure's effects are not seen: CALL pins, whatever its arguments.
        assert!(scan(b"CALL p(1, 2)").pin.0 & Pin::UNTRACKED != 0);
        // What MySQL and MariaDB run inside executable comments is scanned as code.
        for q in [
            "/*!40101 SET NAMES latin1 */",
            "/*!50000 select get_lock('x', 0) */",
            "create /*!32302 TEMPORARY */ table t (a int)",
            "/*M!100500 LOCK TABLES t WRITE */",
            "/*!40101 SET @v = 'x' */",
            "CREATE OR REPLACE TEMPORARY TABLE t (a int)",
            "EXECUTE IMMEDIATE 'SELECT GET_LOCK(''x'', 0)'",
            "execute immediate @sql",
            "BACKUP LOCK t",
            "BACKUP STAGE START",
        ] {
            assert!(scan(q.as_bytes()).pin.any(), "{q}");
        }
        assert_eq!(scan(b"/*!40101 SELECT 1 */").kind, StatementKind::Select);
        assert!(!scan(b"/* SET NAMES latin1 */ SELECT 1").pin.any());
        assert!(!scan(b"CREATE OR REPLACE TABLE t (a int)").pin.any());
        // SET STATEMENT ... FOR: what the inner statement does, not a session SET.
        let s = scan(b"SET STATEMENT sql_mode='NO_BACKSLASH_ESCAPES, for x' FOR SELECT 1");
        assert_eq!(s.kind, StatementKind::Select);
        assert!(!s.pin.any());
        let s = scan(b"set statement max_statement_time=(1) for call p()");
        assert_eq!(s.kind, StatementKind::Call);
        assert!(s.pin.any());
        assert!(scan(b"SET STATEMENT x=1").pin.0 & Pin::UNTRACKED != 0);
        assert!(scan(b"USE db2; SELECT 1").pin.0 & Pin::UNTRACKED != 0);
        assert!(!scan(b"USE db2").pin.any());
        assert!(!scan(b"select @@version").pin.any());
        assert!(!scan(b"insert into t values ('a@b.c')").pin.any());
        assert!(scan(b"SELECT GET_LOCK('x', 1)").pin.0 & Pin::USER_LOCK != 0);
        assert!(scan(b"create temporary table t (a int)").pin.0 & Pin::TEMP_TABLE != 0);
        assert!(scan(b"LOCK TABLES t WRITE").pin.0 & Pin::LOCK_TABLES != 0);
        assert!(scan(b"select 1; set @x=1").pin.any());
        assert!(scan(b"SELECT SQL_CALC_FOUND_ROWS * FROM t").calc_found_rows);
        assert!(!scan(b"SELECT FOUND_ROWS()").pin.any());
        assert!(scan(b"SELECT FOUND_ROWS()").reads_previous_result);
        assert!(scan(b"show warnings").reads_previous_result);
        assert!(scan(b"select @@identity").reads_last_insert_id);
        assert!(scan(b"select @@last_insert_id").reads_last_insert_id);
        assert!(!scan(b"show tables").reads_previous_result);
        assert!(scan(b"unlock tables").unlock_tables);
        assert!(scan(b"DROP DATABASE IF EXISTS x").drops_schema);
        assert!(scan(b"/* c */ drop schema `x`").drops_schema);
        assert!(scan(b"select 1; drop database x").drops_schema);
        assert!(!scan(b"drop table x").drops_schema);
        assert!(!scan(b"select 'drop database x'").drops_schema);
        assert_eq!(
            scan(b"PREPARE S1 FROM 'select 1'").text_prepare,
            Some(TextPrepare::Prepare("s1".into()))
        );
        assert_eq!(
            scan(b"drop prepare s1").text_prepare,
            Some(TextPrepare::Deallocate("s1".into()))
        );
        assert!(scan(b"deallocate prepare s1").pin.0 & Pin::PREPARED != 0);
        assert_eq!(scan(b"execute s1").text_prepare, None);
        assert!(!scan(b"select 'get_lock(' from t").pin.any());
    }

    #[test]
    fn use_and_kill() {
        assert_eq!(scan(b"USE `my db`").use_schema.as_deref(), Some("my db"));
        assert_eq!(scan(b"use test;").use_schema.as_deref(), Some("test"));
        assert_eq!(scan(b"use test; select 1").use_schema, None);
        assert!(scan(b"use test; select 1").pin.0 & Pin::UNTRACKED != 0);
        for (q, db) in [
            ("USE jt /* c */", "jt"),
            ("/* c */ USE jt", "jt"),
            ("USE jt -- c", "jt"),
            ("USE jt # c", "jt"),
            ("USE /* c */ jt", "jt"),
            ("USE jt\n-- c", "jt"),
            ("/*!USE jt*/", "jt"),
            ("/*!40000 USE jt */", "jt"),
            ("/*M!100000 use `a``b` */ ;", "a`b"),
            ("USE `x /* y */`", "x /* y */"),
            ("USE `é#`", "é#"),
            ("use\tjt ;", "jt"),
            ("USE jt;", "jt"),
        ] {
            let s = scan(q.as_bytes());
            assert_eq!(s.use_schema.as_deref(), Some(db), "{q}");
            assert!(!s.pin.any(), "{q}");
        }
        // What weir cannot read pins the connection: the schema changes where it ran.
        for q in [
            "USE jt /* open",
            "USE a b",
            "/*!USE jt",
            "USE `a` `b`",
            "USE",
            "USE 'jt'",
        ] {
            let s = scan(q.as_bytes());
            if s.kind == StatementKind::Use {
                assert_eq!(s.use_schema, None, "{q}");
                assert!(s.pin.0 & Pin::UNTRACKED != 0, "{q}");
            }
        }
        assert_eq!(scan(b"KILL QUERY 12").kill, Some((true, 12)));
        assert_eq!(scan(b"kill 7").kill, Some((false, 7)));
        assert_eq!(scan(b"kill connection 7").kill, Some((false, 7)));
        assert_eq!(scan(b"KILL HARD QUERY 9").kill, Some((true, 9)));
        assert_eq!(scan(b"kill soft connection 3;").kill, Some((false, 3)));
        assert_eq!(scan(b"KILL SOFT 4").kill, Some((false, 4)));
        for q in ["KILL USER weir", "KILL QUERY ID 9", "KILL 1+1", "KILL 5 6"] {
            let s = scan(q.as_bytes());
            assert_eq!(s.kind, StatementKind::Kill, "{q}");
            assert_eq!(s.kill, None, "{q}");
        }
        assert!(scan(b"load data local infile '/tmp/x' into table t").load_data_local);
        assert!(scan(b"LOAD XML CONCURRENT LOCAL INFILE 'x' INTO TABLE t").load_data_local);
        assert!(
            scan(b"SELECT 1; /* c */ LOAD DATA LOW_PRIORITY LOCAL INFILE 'x' INTO TABLE t")
                .load_data_local
        );
        assert!(scan(b"/*!40000 LOAD DATA LOCAL INFILE 'x' INTO TABLE t */").load_data_local);
        assert!(!scan(b"LOAD DATA INFILE 'x' INTO TABLE t").load_data_local);
        assert!(!scan(b"LOAD DATA LOW_PRIORITY INFILE 'local' INTO TABLE t").load_data_local);
        assert!(!scan(b"SELECT 'LOAD DATA LOCAL INFILE'").load_data_local);
        assert!(!scan(b"LOAD INDEX INTO CACHE t").load_data_local);
        assert!(scan(b"COMMIT AND CHAIN").transaction_boundary);
        assert!(scan(b"INSERT INTO t VALUES (1); COMMIT; BEGIN").transaction_boundary);
        assert!(scan(b"start transaction read only").transaction_boundary);
        assert!(!scan(b"ROLLBACK TO SAVEPOINT a").transaction_boundary);
        assert!(!scan(b"BEGIN NOT ATOMIC SELECT 1; END").transaction_boundary);
        assert!(!scan(b"SELECT 'COMMIT'").transaction_boundary);
        assert!(scan(b"SELECT 1; KILL 5").kill_in_batch);
        assert!(scan(b"KILL 5; SELECT 1").kill_in_batch);
        assert!(!scan(b"KILL 5").kill_in_batch);
    }

    #[test]
    fn sequence_functions() {
        for q in [
            "SELECT NEXTVAL(s)",
            "select nextval(db.s), 1",
            "SELECT NEXT VALUE FOR s",
            "SELECT next value for `s`",
            "SELECT SETVAL(s, 100)",
        ] {
            assert!(scan(q.as_bytes()).sequence_write, "{q}");
        }
        assert!(scan(b"SELECT `NEXTVAL` (s)").sequence_write);
        for q in ["SELECT LASTVAL(s)", "SELECT PREVIOUS VALUE FOR s"] {
            let r = scan(q.as_bytes());
            assert!(!r.sequence_write && r.reads_previous_result, "{q}");
        }
        for q in [
            "SELECT next_id, value FROM t",
            "INSERT INTO t VALUE (1)",
            "SELECT 1",
        ] {
            let r = scan(q.as_bytes());
            assert!(!r.sequence_write && !r.reads_previous_result, "{q}");
        }
    }

    #[test]
    fn calls_of_names_that_may_be_stored_functions() {
        assert!(
            scan(b"SELECT f_side()").run_pins() & Pin::UNTRACKED != 0,
            "pins"
        );
        assert_eq!(scan(b"SELECT f_side()").pin.0, 0, "cacheable by a rule");
        assert_eq!(scan(b"INSERT INTO t (a) VALUES (1)").run_pins(), 0);
        // Statements that run what they call, with the session.
        for q in [
            "DO f_side()",
            "DO 1; SELECT 2",
            "UPDATE t SET a = f_side(a) WHERE id = 1",
            "DELETE FROM t WHERE my_check(a)",
            "INSERT INTO t (a) VALUES (f_side(1))",
            "INSERT INTO db.t (a) SELECT db.f(b) FROM s",
            "INSERT INTO t SET a = `f_side`(1)",
            "REPLACE t (a) VALUE (f_side())",
            "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = f_side(VALUES(a))",
            "SELECT 1; UPDATE t SET a = f_side()",
            "SELECT HIGH_PRIORITY f_side() FROM t",
            "SELECT a INTO @v FROM t WHERE f_side(a)",
        ] {
            let r = scan(q.as_bytes());
            if q.starts_with("DO 1") {
                assert!(!r.runs_stored_function, "{q}");
                continue;
            }
            assert!(r.runs_stored_function && r.calls_routine, "{q}");
            assert!(r.run_pins() & Pin::UNTRACKED != 0, "{q}");
        }
        // A table's column list, a key's, a CTE's: no call.
        for q in [
            "INSERT INTO t (a, b) VALUES (1, 2), (3, 4)",
            "INSERT t(a) VALUE (1)",
            "insert into `db`.`t` (`a`) values (?)",
            "INSERT INTO db . t (a) VALUES (1)",
            "INSERT LOW_PRIORITY IGNORE INTO t (a) SELECT b FROM s",
            "INSERT HIGH_PRIORITY t (a) VALUES (1)",
            "INSERT DELAYED IGNORE t (a) VALUES (1)",
            "REPLACE INTO t (a) VALUES (REPLACE('a', 'b', 'c'))",
            "INSERT INTO t PARTITION (p0) (a) VALUES (1)",
            "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a) + 1",
            "WITH cte (a) AS (SELECT 1) SELECT a FROM cte",
            "WITH RECURSIVE r (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",
            "CREATE TABLE t (a INT, KEY k (a))",
            "UPDATE t1 JOIN t2 USING (id) SET t1.a = CONCAT(t2.b, 'x')",
            "DELETE FROM t WHERE a IN (SELECT b FROM s)",
        ] {
            let r = scan(q.as_bytes());
            assert!(!r.runs_stored_function, "{q}");
            assert_eq!(r.run_pins() & Pin::UNTRACKED, 0, "{q}");
        }
        for q in [
            "SELECT f_side()",
            "SELECT f_side ( 1 )",
            "SELECT `f_side`(1)",
            "SELECT db.concat(1)",
            "SELECT db.`f`(1) FROM t",
            "SELECT a FROM t WHERE my_check(a) > 0",
            "DO f_tz/**/()",
            "DO f_tz/*x*/ ()",
            "SELECT weirtest.`f_tz` /**/ ()",
            "DO f_tz#c\n()",
            "DO f_tz-- c\n()",
            "DO f_tz --\r\n ()",
        ] {
            assert!(scan(q.as_bytes()).calls_routine, "{q}");
        }
        for q in [
            "SELECT c FROM sbtest1 WHERE id=5",
            "SELECT COUNT(*), SUM(k), NOW(6), CONCAT('a', `b`) FROM t",
            "SELECT `count`(*) FROM t",
            "SELECT COUNT/**/(*), a - -1, b --1 FROM t",
            "SELECT CAST(a AS CHAR(10)), CONVERT(b, DECIMAL(10,2)) FROM t",
            "SELECT a FROM t1 JOIN t2 USING (id) WHERE a IN (1, 2) AND (b OR c)",
            "SELECT a FROM (SELECT 1 AS a) d WHERE EXISTS (SELECT 1)",
            "SELECT ROW_NUMBER() OVER (PARTITION BY a ORDER BY b) FROM t FORCE INDEX (i)",
            "SELECT ST_Distance(p, POINT(1, 2)), MBRContains(g, p) FROM t",
            "SELECT 'f_side()', \"g(1)\" -- h(2)",
            "SELECT SLEEP(1)",
        ] {
            assert!(!scan(q.as_bytes()).calls_routine, "{q}");
        }
    }

    /// Where a string ends depends on NO_BACKSLASH_ESCAPES and on the client's charset: read
    /// the default way, these hide an assignment, a lock and a second statement in a string.
    #[test]
    fn strings_end_where_the_session_lexing_ends_them() {
        let nbe = Lexing {
            no_backslash_escapes: true,
            ..Lexing::default()
        };
        let q = b"SELECT 'C:\\' AS p, @v := 42, GET_LOCK('lk', 0) -- '";
        let r = scan_with(q, nbe);
        assert_ne!(r.pin.0 & Pin::USER_VARIABLE, 0);
        assert_ne!(r.pin.0 & Pin::USER_LOCK, 0);
        assert_eq!(scan(q).pin.0, 0, "the default lexing reads one string");
        assert!(nbe.matters_for(q));
        let hidden = b"SELECT '\\'; SET time_zone = '+05:00' -- '";
        assert_eq!(scan_with(hidden, nbe).statements, 2);
        assert_eq!(scan(hidden).statements, 1);
        // sjis: 0x83 0x5C is one character; its second byte escapes nothing.
        let sjis = Lexing {
            multibyte: Some(Multibyte::Sjis),
            ..Lexing::default()
        };
        let q = b"SELECT '\x83\x5C', @v := 1 -- '";
        assert_ne!(scan_with(q, sjis).pin.0 & Pin::USER_VARIABLE, 0);
        assert_eq!(scan(q).pin.0, 0);
        // A backquoted name ending in a two-byte character whose second byte is a backquote.
        let q = b"SELECT `a\x83\x60`, @v := 1 FROM t";
        assert_ne!(scan_with(q, sjis).pin.0 & Pin::USER_VARIABLE, 0);
        for (mb, q) in [
            (Multibyte::Gbk, &b"SELECT '\x81\x5C', @v := 1 -- '"[..]),
            (Multibyte::Big5, b"SELECT '\xA1\x5C', @v := 1 -- '"),
        ] {
            let lexing = Lexing {
                multibyte: Some(mb),
                ..Lexing::default()
            };
            assert_ne!(scan_with(q, lexing).pin.0 & Pin::USER_VARIABLE, 0, "{mb:?}");
        }
        // A lone byte past ASCII that starts no pair is one character.
        let q = b"SELECT '\x80\\'', @v := 1";
        assert_eq!(scan_with(q, sjis).pin.0, scan(q).pin.0);
        assert!(!Lexing::default().matters_for(b"SELECT '\\'"));
        // ANSI_QUOTES: `"a\"` is an identifier ending in a backslash; strings still escape.
        let ansi = Lexing {
            ansi_quotes: true,
            ..Lexing::default()
        };
        let q = b"SELECT 1 AS \"a\\\", @v := 42, GET_LOCK('lk', 0) -- \"";
        assert_ne!(scan_with(q, ansi).pin.0 & Pin::USER_LOCK, 0);
        assert_eq!(scan(q).pin.0, 0);
        assert!(ansi.matters_for(q));
        let q = b"SELECT 'it\\'s', @v := 1";
        assert_eq!(scan_with(q, ansi).pin.0, scan(q).pin.0);
        assert_eq!(Multibyte::of_charset("CP932"), Some(Multibyte::Sjis));
        assert_eq!(Multibyte::of_charset("utf8mb4"), None);
        assert_eq!(Multibyte::of_collation(13), Some(Multibyte::Sjis));
        assert_eq!(Multibyte::of_collation(28), Some(Multibyte::Gbk));
        assert_eq!(Multibyte::of_collation(45), None);
    }

    /// `--` starts a comment before any control character, as on the server.
    #[test]
    fn double_dash_comments_end_at_control_characters_too() {
        for q in [
            &b"SELECT 1 --\r it's\n, @v := 42"[..],
            b"SELECT 1 --\x0b it's\n, @v := 42",
            b"SELECT 1 --\x01'\n, @v := 42",
        ] {
            assert_ne!(scan(q).pin.0 & Pin::USER_VARIABLE, 0, "{q:?}");
        }
        // Not a comment: `--1` is minus minus one.
        assert_eq!(scan(b"SELECT 1 --1, 'it''s'").pin.0, 0);
    }

    #[test]
    fn identifier_bytes() {
        for b in 0..=255u8 {
            let expected = b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80;
            assert_eq!(is_ident_byte(b), expected, "{b}");
        }
    }

    #[test]
    fn statements_that_leave_the_diagnostics_in_place() {
        for q in [
            "SELECT 1",
            "select @a, NOW(), f(1) ",
            "(SELECT 1) UNION (SELECT 2)",
            "SELECT 'from t', `table`",
            "SELECT 1 INTO @v",
            "SET NAMES utf8mb4",
            "SET @a = (SELECT 1), autocommit = 0",
            "DO SLEEP(0)",
            "USE db",
            "BEGIN",
            "START TRANSACTION READ ONLY",
            "COMMIT",
            "ROLLBACK",
            "SELECT ROW_COUNT();",
            "SHOW WARNINGS LIMIT 1",
            "show count(*) errors",
            "GET DIAGNOSTICS @n = NUMBER",
        ] {
            assert!(scan(q.as_bytes()).keeps_diagnostics, "{q}");
        }
        for q in [
            "SHOW WARNINGS",
            "show count(*) errors",
            "GET CURRENT DIAGNOSTICS @n = NUMBER",
        ] {
            assert!(scan(q.as_bytes()).diagnostics_statement, "{q}");
        }
        for q in ["SELECT 1", "SET @a = 1", "SHOW WARNINGS; SELECT 1"] {
            assert!(!scan(q.as_bytes()).diagnostics_statement, "{q}");
        }
        for q in [
            "SHOW WARNINGS LIMIT 1",
            "SELECT 1; SHOW ERRORS",
            "SELECT @@warning_count + 0",
            "SELECT @@local.error_count, 1",
            "GET DIAGNOSTICS CONDITION 1 @m = MESSAGE_TEXT",
        ] {
            assert!(scan(q.as_bytes()).reads_diagnostics, "{q}");
        }
        for q in [
            "SELECT @@`error_count`",
            "SELECT @@session.`warning_count` + 0",
            "SELECT @@`local` . `ERROR_COUNT` AS e",
            "SELECT @@session . error_count",
        ] {
            assert!(scan(q.as_bytes()).reads_diagnostics, "{q}");
        }
        assert!(scan(b"SELECT @@`identity`").reads_last_insert_id);
        assert!(scan(b"SELECT @@session.`last_insert_id`").reads_last_insert_id);
        for q in [
            "SELECT ROW_COUNT()",
            "SELECT @@last_gtid",
            "SELECT warning_count FROM t",
        ] {
            assert!(!scan(q.as_bytes()).reads_diagnostics, "{q}");
        }
        // GET DIAGNOSTICS assigns user variables weir does not follow.
        assert_ne!(
            scan(b"GET DIAGNOSTICS @n = NUMBER").pin.0 & Pin::USER_VARIABLE,
            0
        );
        assert_eq!(scan(b"SHOW WARNINGS").pin.0, 0);
        for q in [
            "SELECT 1 FROM DUAL",
            "SELECT a FROM t",
            "SET @a = (SELECT a FROM t)",
            "SELECT NEXTVAL(s)",
            "SELECT `nextval`(s)",
            "SELECT LASTVAL(s)",
            "SELECT `LASTVAL` (s)",
            "SELECT s.currval",
            "SELECT NEXT VALUE FOR s",
            "SELECT PREVIOUS VALUE FOR s",
            "SET STATEMENT max_statement_time = 1 FOR SELECT 1",
            "BEGIN NOT ATOMIC SELECT 1 END",
            "ROLLBACK TO s",
            "TABLE t",
            "WITH c AS (SELECT 1) SELECT * FROM c",
            "INSERT INTO t VALUES (1)",
            "SHOW VARIABLES",
            "SELECT 1; SELECT 2",
            "CALL p()",
        ] {
            assert!(!scan(q.as_bytes()).keeps_diagnostics, "{q}");
        }
    }

    #[test]
    fn what_the_previous_statement_left() {
        for q in [
            "SELECT @@warning_count",
            "select @@session.warning_count, 1",
            "SELECT @@ERROR_COUNT",
            "SELECT @@local.error_count",
            "SELECT @@last_gtid",
            "SELECT `FOUND_ROWS`()",
            "SELECT `row_count` ( ) + 0",
        ] {
            assert!(scan(q.as_bytes()).reads_previous_result, "{q}");
        }
        for q in [
            "SELECT warning_count FROM t",
            "SELECT `found_rows` FROM t",
            "SELECT @@session.sql_mode, error_count FROM t",
            "SELECT @@global.gtid_binlog_pos",
        ] {
            assert!(!scan(q.as_bytes()).reads_previous_result, "{q}");
        }
        assert!(scan(b"SELECT `LAST_INSERT_ID`()").reads_last_insert_id);
        assert!(scan(b"SELECT `get_lock`('a', 1)").pin.any());
        assert!(!scan(b"SELECT `get_lock` FROM t").pin.any());
    }

    #[test]
    fn locking_reads_and_into() {
        for q in [
            "SELECT * FROM t WHERE id = 1 FOR UPDATE",
            "select c from t for share",
            "SELECT c FROM t LOCK IN SHARE MODE",
            "select 1; select c from t where id=2 for update",
        ] {
            assert!(scan(q.as_bytes()).locking_read, "{q}");
        }
        for q in [
            "SELECT c FROM t WHERE id = 1",
            "SELECT 'for update' FROM t",
            "SELECT `lock`, `in`, share FROM t",
            "SELECT c FROM t /* FOR UPDATE */",
        ] {
            assert!(!scan(q.as_bytes()).locking_read, "{q}");
        }
        assert!(scan(b"SELECT c INTO @v FROM t").into);
        assert!(scan(b"SELECT c FROM t INTO OUTFILE '/tmp/x'").into);
        assert!(!scan(b"SELECT 'into' FROM t").into);
    }

    proptest! {
        #[test]
        fn a_use_of_any_text_never_panics(rest in ".{0,60}") {
            let q = format!("USE {rest}");
            let s = scan(q.as_bytes());
            // Either followed or pinned: never lost.
            prop_assert!(s.use_schema.is_some() || s.pin.0 & Pin::UNTRACKED != 0 || s.kind != StatementKind::Use);
        }

        #[test]
        fn never_panics(q in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = scan(&q);
        }

        #[test]
        fn never_panics_sqlish(q in "[a-zA-Z@;'\"`#/*\\- \\\\]{0,80}") {
            let _ = scan(q.as_bytes());
        }
    }
}
