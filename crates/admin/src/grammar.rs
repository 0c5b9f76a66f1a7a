//! The admin command grammar: [`parse`] recognises a command or says the statement is plain SQL.

use std::fmt;

/// A configuration module that can be copied between layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Module {
    /// `MYSQL SERVERS` (mysql_servers and related tables).
    MysqlServers,
    /// `MYSQL USERS` (mysql_users).
    MysqlUsers,
    /// `MYSQL QUERY RULES` (mysql_query_rules).
    MysqlQueryRules,
    /// `MYSQL VARIABLES` (`mysql-*` rows of global_variables).
    MysqlVariables,
    /// `ADMIN VARIABLES` (`admin-*` rows of global_variables).
    AdminVariables,
}

impl Module {
    /// Every module, in the order used by error messages.
    pub const ALL: [Module; 5] = [
        Module::MysqlServers,
        Module::MysqlUsers,
        Module::MysqlQueryRules,
        Module::MysqlVariables,
        Module::AdminVariables,
    ];

    /// The module's name as written in commands, e.g. `"MYSQL SERVERS"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Module::MysqlServers => "MYSQL SERVERS",
            Module::MysqlUsers => "MYSQL USERS",
            Module::MysqlQueryRules => "MYSQL QUERY RULES",
            Module::MysqlVariables => "MYSQL VARIABLES",
            Module::AdminVariables => "ADMIN VARIABLES",
        }
    }
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A configuration layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layer {
    /// The in-memory tables edited by SQL (schema `main`).
    Memory,
    /// The persistent database file (schema `disk`).
    Disk,
    /// The configuration the proxy is running with.
    Runtime,
    /// The configuration file.
    Config,
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Layer::Memory => "MEMORY",
            Layer::Disk => "DISK",
            Layer::Runtime => "RUNTIME",
            Layer::Config => "CONFIG",
        })
    }
}

/// A recognised admin command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AdminCommand {
    /// Copy `module` from layer `from` to layer `to` (all LOAD/SAVE spellings normalised).
    Copy {
        /// The module copied.
        module: Module,
        /// The source layer.
        from: Layer,
        /// The destination layer.
        to: Layer,
    },
    /// `SET mysql-x = v` / `SET admin-x = v`: update a global variable in memory.
    SetVariable {
        /// Variable name as written, prefix included (e.g. `mysql-default_query_delay`).
        name: String,
        /// Value with any quotes removed.
        value: String,
    },
    /// `SHOW MYSQL VARIABLES` / `SHOW ADMIN VARIABLES`, optionally with `LIKE 'pattern'`.
    ShowVariables {
        /// [`Module::MysqlVariables`] or [`Module::AdminVariables`].
        module: Module,
        /// The LIKE pattern, quotes removed.
        like: Option<String>,
    },
    /// `SHOW MYSQL STATUS [LIKE p]` (the rows of stats_mysql_global).
    ShowMysqlStatus {
        /// The LIKE pattern on the variable names, if any.
        like: Option<String>,
    },
    /// `SHOW [FULL] TABLES [FROM|IN schema] [LIKE 'pattern']`.
    ShowTables {
        /// The schema named by FROM/IN, quotes removed; `None`: the session's.
        schema: Option<String>,
        /// The LIKE pattern, quotes removed.
        like: Option<String>,
    },
    /// `PROXYSQL PAUSE` / `WEIR PAUSE`: stop accepting new client connections.
    Pause,
    /// `PROXYSQL RESUME` / `WEIR RESUME`: accept client connections again.
    Resume,
    /// `PROXYSQL SHUTDOWN` / `WEIR SHUTDOWN`: stop the proxy.
    Shutdown,
    /// `PROXYSQL FLUSH QUERY CACHE` / `WEIR FLUSH QUERY CACHE`: empty the query cache.
    FlushQueryCache,
}

/// The outcome of [`parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// An admin command.
    Command(AdminCommand),
    /// Not an admin command: to be run as SQL on the configuration store.
    Sql,
}

/// Why an admin statement was refused; the message names the problem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct AdminParseError {
    /// Human-readable description, suitable for an ERR packet.
    pub message: String,
}

impl AdminParseError {
    fn new(message: impl Into<String>) -> Self {
        AdminParseError {
            message: message.into(),
        }
    }
}

// ---------------------------------------------------------------------------
// Tokenizer
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// A bare word: keyword, identifier, number, `mysql-x`, `$x`, ...
    Word,
    /// A quoted string (`'..'`, `".."` or `` `..` ``); `text` holds the unquoted value.
    Str,
    /// A single punctuation character (`=`, `(`, `)`, `,`).
    Punct,
    /// A `;`.
    Semi,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    /// Unquoted value for strings, the text itself otherwise.
    text: String,
    /// The text as written (for error messages).
    raw: String,
}

impl Token {
    fn is_kw(&self, kw: &str) -> bool {
        self.kind == Kind::Word && self.text.eq_ignore_ascii_case(kw)
    }
}

struct Lexed {
    tokens: Vec<Token>,
    /// Set when the input ended inside a string or comment.
    error: Option<String>,
}

fn is_word_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '\'' | '"' | '`' | '=' | ';' | '(' | ')' | ',')
}

fn tokenize(input: &str) -> Lexed {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    let at = |i: usize, s: &str| {
        s.chars()
            .enumerate()
            .all(|(k, c)| chars.get(i + k) == Some(&c))
    };
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '#'
            || (at(i, "--") && !matches!(chars.get(i + 2), Some(n) if !n.is_whitespace()))
        {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if at(i, "/*") {
            let start = i;
            i += 2;
            loop {
                if i >= chars.len() {
                    let raw: String = chars[start..].iter().take(20).collect();
                    return Lexed {
                        tokens,
                        error: Some(format!("unterminated comment starting at '{raw}'")),
                    };
                }
                if at(i, "*/") {
                    i += 2;
                    break;
                }
                i += 1;
            }
        } else if matches!(c, '\'' | '"' | '`') {
            let start = i;
            let mut value = String::new();
            i += 1;
            loop {
                match chars.get(i) {
                    None => {
                        let raw: String = chars[start..].iter().take(20).collect();
                        return Lexed {
                            tokens,
                            error: Some(format!("unterminated string starting at {raw}")),
                        };
                    }
                    Some(&q) if q == c => {
                        if chars.get(i + 1) == Some(&c) {
                            value.push(c);
                            i += 2;
                        } else {
                            i += 1;
                            break;
                        }
                    }
                    // A backslash is a plain character, as in the SQLite statements (docs/admin.md):
                    // `SET mysql-x = 'a\b'` stores what `UPDATE global_variables` would.
                    Some(&other) => {
                        value.push(other);
                        i += 1;
                    }
                }
            }
            tokens.push(Token {
                kind: Kind::Str,
                text: value,
                raw: chars[start..i].iter().collect(),
            });
        } else if c == ';' {
            tokens.push(Token {
                kind: Kind::Semi,
                text: ";".into(),
                raw: ";".into(),
            });
            i += 1;
        } else if !is_word_char(c) {
            tokens.push(Token {
                kind: Kind::Punct,
                text: c.to_string(),
                raw: c.to_string(),
            });
            i += 1;
        } else {
            let start = i;
            while i < chars.len() && is_word_char(chars[i]) && !at(i, "/*") {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            tokens.push(Token {
                kind: Kind::Word,
                raw: text.clone(),
                text,
            });
        }
    }
    Lexed {
        tokens,
        error: None,
    }
}

// ---------------------------------------------------------------------------
// Grammar
// ---------------------------------------------------------------------------

/// Parse one statement (comments and an optional trailing `;` allowed).
///
/// Returns [`Parsed::Sql`] for statements that are not admin commands, and an error for
/// admin statements that do not parse fully.
pub fn parse(statement: &str) -> Result<Parsed, AdminParseError> {
    let Lexed { mut tokens, error } = tokenize(statement);
    let Some(first) = tokens.first() else {
        return match error {
            Some(e) => Err(AdminParseError::new(e)),
            None => Err(AdminParseError::new("empty statement")),
        };
    };
    let strict = ["LOAD", "SAVE", "PROXYSQL", "WEIR"]
        .iter()
        .any(|kw| first.is_kw(kw))
        || is_admin_set(&tokens)
        || show_kind(&tokens).is_some()
        || show_tables_start(&tokens).is_some();
    if !strict {
        return Ok(Parsed::Sql);
    }
    let head = head_text(&tokens);
    if let Some(e) = error {
        return Err(AdminParseError::new(format!("{head}: {e}")));
    }
    while tokens.last().is_some_and(|t| t.kind == Kind::Semi) {
        tokens.pop();
    }
    if let Some(pos) = tokens.iter().position(|t| t.kind == Kind::Semi) {
        return Err(AdminParseError::new(format!(
            "{head}: unexpected ';' before '{}' (one statement at a time)",
            join(&tokens[pos + 1..])
        )));
    }
    let first = &tokens[0];
    let command = if first.is_kw("LOAD") {
        parse_copy(&tokens, true)?
    } else if first.is_kw("SAVE") {
        parse_copy(&tokens, false)?
    } else if first.is_kw("PROXYSQL") || first.is_kw("WEIR") {
        parse_control(&tokens)?
    } else if first.is_kw("SET") {
        parse_set(&tokens)?
    } else if let Some(start) = show_tables_start(&tokens) {
        parse_show_tables(&tokens, start)?
    } else {
        parse_show(&tokens)?
    };
    Ok(Parsed::Command(command))
}

/// The raw text of `tokens`, separated by single spaces.
fn join(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|t| t.raw.as_str())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `'found'` text for error messages.
fn found(tokens: &[Token]) -> String {
    if tokens.is_empty() {
        "end of statement".to_string()
    } else {
        format!("'{}'", join(tokens))
    }
}

/// Uppercased leading keyword(s) naming the statement in error messages.
fn head_text(tokens: &[Token]) -> String {
    let n = if tokens[0].is_kw("SHOW") { 3 } else { 1 };
    upper_words(&tokens[..n.min(tokens.len())])
}

/// `tokens` as written, upper-cased and separated by single spaces (error message heads).
fn upper_words(tokens: &[Token]) -> String {
    tokens
        .iter()
        .map(|t| t.raw.to_ascii_uppercase())
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_admin_set(tokens: &[Token]) -> bool {
    tokens.len() >= 2 && tokens[0].is_kw("SET") && tokens[1].kind == Kind::Word && {
        let n = tokens[1].text.to_ascii_lowercase();
        n.starts_with("mysql-") || n.starts_with("admin-")
    }
}

/// `Some(module)` for `SHOW MYSQL VARIABLES`/`SHOW ADMIN VARIABLES`, `Some(None)` for `SHOW MYSQL STATUS`.
fn show_kind(tokens: &[Token]) -> Option<Option<Module>> {
    if tokens.len() < 3 || !tokens[0].is_kw("SHOW") {
        return None;
    }
    let (a, b) = (&tokens[1], &tokens[2]);
    if a.is_kw("MYSQL") && b.is_kw("VARIABLES") {
        Some(Some(Module::MysqlVariables))
    } else if a.is_kw("ADMIN") && b.is_kw("VARIABLES") {
        Some(Some(Module::AdminVariables))
    } else if a.is_kw("MYSQL") && b.is_kw("STATUS") {
        Some(None)
    } else {
        None
    }
}

fn module_list() -> String {
    let names: Vec<&str> = Module::ALL.iter().map(|m| m.as_str()).collect();
    format!(
        "{} or {}",
        names[..names.len() - 1].join(", "),
        names[names.len() - 1]
    )
}

fn parse_module(words: &[Token]) -> Option<Module> {
    let kws: Vec<&str> = words
        .iter()
        .map(|t| {
            if t.kind == Kind::Word {
                t.text.as_str()
            } else {
                ""
            }
        })
        .collect();
    let eq = |expected: &[&str]| {
        kws.len() == expected.len()
            && kws
                .iter()
                .zip(expected)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    };
    Module::ALL
        .into_iter()
        .find(|m| eq(&m.as_str().split(' ').collect::<Vec<_>>()))
}

fn layer_word(t: &Token) -> Option<Layer> {
    if t.kind != Kind::Word {
        return None;
    }
    let w = t.text.to_ascii_uppercase();
    match w.as_str() {
        "MEMORY" | "MEM" => Some(Layer::Memory),
        "DISK" => Some(Layer::Disk),
        "RUNTIME" | "RUN" => Some(Layer::Runtime),
        "CONFIG" => Some(Layer::Config),
        _ => None,
    }
}

/// `LOAD <module> <TO|FROM> <layer>` / `SAVE <module> <TO|FROM> <layer>`.
fn parse_copy(tokens: &[Token], load: bool) -> Result<AdminCommand, AdminParseError> {
    let verb = if load { "LOAD" } else { "SAVE" };
    let dir_pos = tokens
        .iter()
        .position(|t| t.is_kw("TO") || t.is_kw("FROM"))
        .unwrap_or(tokens.len());
    let module_tokens = &tokens[1..dir_pos];
    let Some(module) = parse_module(module_tokens) else {
        return Err(AdminParseError::new(format!(
            "{verb}: unknown module {} (expected {})",
            found(module_tokens),
            module_list()
        )));
    };
    let expected = if load {
        "TO RUNTIME, TO MEMORY, FROM MEMORY, FROM DISK or FROM CONFIG"
    } else {
        "TO DISK, TO MEMORY, FROM MEMORY or FROM RUNTIME"
    };
    let rest = &tokens[dir_pos..];
    let bad = |hint: Option<String>| {
        let mut m = format!(
            "{verb} {module}: expected {expected}, found {}",
            found(rest)
        );
        if let Some(h) = hint {
            m.push_str(&format!(" (did you mean {h}?)"));
        }
        AdminParseError::new(m)
    };
    let (to, layer) = match rest {
        [dir, layer] => match layer_word(layer) {
            Some(l) => (dir.is_kw("TO"), l),
            None => return Err(bad(None)),
        },
        _ => return Err(bad(None)),
    };
    use Layer::*;
    let (from, dest) = match (load, to, layer) {
        // LOAD: towards runtime (from memory) or into memory (from disk/config).
        (true, true, Runtime) | (true, false, Memory) => (Memory, Runtime),
        (true, true, Memory) | (true, false, Disk) => (Disk, Memory),
        (true, false, Config) => (Config, Memory),
        // SAVE: towards disk (from memory) or into memory (from runtime).
        (false, true, Disk) | (false, false, Memory) => (Memory, Disk),
        (false, true, Memory) | (false, false, Runtime) => (Runtime, Memory),
        (true, true, Disk) => return Err(bad(Some(format!("SAVE {module} TO DISK")))),
        (true, false, Runtime) => return Err(bad(Some(format!("SAVE {module} FROM RUNTIME")))),
        (false, false, Config) => return Err(bad(Some(format!("LOAD {module} FROM CONFIG")))),
        (false, true, Runtime) => return Err(bad(Some(format!("LOAD {module} TO RUNTIME")))),
        (false, false, Disk) => return Err(bad(Some(format!("LOAD {module} FROM DISK")))),
        _ => return Err(bad(None)),
    };
    Ok(AdminCommand::Copy {
        module,
        from,
        to: dest,
    })
}

/// `PROXYSQL|WEIR PAUSE|RESUME|SHUTDOWN|FLUSH QUERY CACHE`.
fn parse_control(tokens: &[Token]) -> Result<AdminCommand, AdminParseError> {
    let cmd = match &tokens[1..] {
        [t] if t.is_kw("PAUSE") => Some(AdminCommand::Pause),
        [t] if t.is_kw("RESUME") => Some(AdminCommand::Resume),
        [t] if t.is_kw("SHUTDOWN") => Some(AdminCommand::Shutdown),
        [f, q, c] if f.is_kw("FLUSH") && q.is_kw("QUERY") && c.is_kw("CACHE") => {
            Some(AdminCommand::FlushQueryCache)
        }
        _ => None,
    };
    cmd.ok_or_else(|| {
        AdminParseError::new(format!(
            "{}: expected PAUSE, RESUME, SHUTDOWN or FLUSH QUERY CACHE, found {}",
            tokens[0].raw.to_ascii_uppercase(),
            found(&tokens[1..])
        ))
    })
}

/// `SET mysql-name = value` / `SET admin-name = value`.
fn parse_set(tokens: &[Token]) -> Result<AdminCommand, AdminParseError> {
    let name = &tokens[1];
    let err = |what: &str, rest: &[Token]| {
        AdminParseError::new(format!(
            "SET {}: expected {what}, found {}",
            name.raw,
            found(rest)
        ))
    };
    match tokens.get(2) {
        Some(t) if t.kind == Kind::Punct && t.text == "=" => {}
        _ => return Err(err("'='", &tokens[2..])),
    }
    let value = match tokens.get(3) {
        Some(t) if matches!(t.kind, Kind::Word | Kind::Str) && !t.raw.starts_with('`') => t,
        _ => return Err(err("a value", &tokens[3..])),
    };
    if tokens.len() > 4 {
        return Err(err(
            "end of statement (quote values containing spaces)",
            &tokens[4..],
        ));
    }
    Ok(AdminCommand::SetVariable {
        name: name.text.clone(),
        value: value.text.clone(),
    })
}

/// `SHOW MYSQL VARIABLES [LIKE p]`, `SHOW ADMIN VARIABLES [LIKE p]`, `SHOW MYSQL STATUS [LIKE p]`.
fn parse_show(tokens: &[Token]) -> Result<AdminCommand, AdminParseError> {
    let head = head_text(tokens);
    let rest = &tokens[3..];
    let like = match rest {
        [] => None,
        [kw, pat] if kw.is_kw("LIKE") && matches!(pat.kind, Kind::Str | Kind::Word) => {
            Some(pat.text.clone())
        }
        _ => {
            return Err(AdminParseError::new(format!(
                "{head}: expected end of statement or LIKE 'pattern', found {}",
                found(rest)
            )))
        }
    };
    Ok(match show_kind(tokens) {
        Some(Some(module)) => AdminCommand::ShowVariables { module, like },
        _ => AdminCommand::ShowMysqlStatus { like },
    })
}

/// Where the arguments of `SHOW [FULL] TABLES` start, when `tokens` is that statement.
fn show_tables_start(tokens: &[Token]) -> Option<usize> {
    if !tokens.first()?.is_kw("SHOW") {
        return None;
    }
    let second = tokens.get(1)?;
    if second.is_kw("TABLES") {
        Some(2)
    } else if second.is_kw("FULL") && tokens.get(2)?.is_kw("TABLES") {
        Some(3)
    } else {
        None
    }
}

fn parse_show_tables(tokens: &[Token], start: usize) -> Result<AdminCommand, AdminParseError> {
    let head = upper_words(&tokens[..start]);
    let mut rest = &tokens[start..];
    let mut schema = None;
    if let [kw, name, tail @ ..] = rest {
        if (kw.is_kw("FROM") || kw.is_kw("IN")) && matches!(name.kind, Kind::Word | Kind::Str) {
            schema = Some(name.text.clone());
            rest = tail;
        }
    }
    let like = match rest {
        [] => None,
        [kw, pat] if kw.is_kw("LIKE") && pat.kind == Kind::Str => Some(pat.text.clone()),
        _ => {
            return Err(AdminParseError::new(format!(
                "{head}: expected FROM schema, LIKE 'pattern' or end of statement, found {}",
                found(rest)
            )))
        }
    };
    Ok(AdminCommand::ShowTables { schema, like })
}

#[cfg(test)]
#[path = "grammar_tests.rs"]
mod tests;
