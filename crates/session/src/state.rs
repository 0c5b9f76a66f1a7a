//! The client's session state and what keeps a backend connection with the client.
//!
//! weir returns the backend connection to the pool after every statement unless the session
//! holds something on it that cannot be recreated elsewhere. What it can recreate, it tracks:
//! the schema, the variables set by SET statements weir understands (`weir_sql::parse_set`:
//! charset and collation, autocommit, sql_mode, time_zone, isolation, user variables set to
//! literals...), and LAST_INSERT_ID(). Before a statement runs, the connection it gets is
//! brought in line with the client's state by one SET carrying only what differs
//! ([`Session::sync_state`]). Everything else keeps the connection (see `weir_sql::Pin` and
//! [`crate::pins`]): an open transaction, LOCK TABLES until UNLOCK TABLES, user locks until
//! released, temporary tables, named text PREPAREs until deallocated, a SET weir cannot
//! follow, a user variable assigned outside SET, an open cursor, a rule's multiplex=0.

use crate::client::ClientError;
use crate::relay::ReplyOutcome;
use crate::session::{lost_backend, Session};
use std::sync::Arc;
use weir_backend::{BackendConn, BackendError};
use weir_sql::{Assignment, LockCall, SessionVars, SetEffect, TextPrepare};

/// What the current statement changes on success, applied once its reply is relayed.
#[derive(Debug, Default)]
pub(crate) struct Effects {
    /// Tracked SET assignments.
    pub(crate) set: Option<Vec<Assignment>>,
    /// Variables a SET gave the value of an expression: read back once it ran
    /// ([`Session::read_back`]).
    pub(crate) read_back: Vec<weir_sql::ReadBack>,
    /// UNLOCK TABLES.
    pub(crate) unlock_tables: bool,
    /// DROP DATABASE: the connection's current schema is read back once it ran.
    pub(crate) drops_schema: bool,
    /// A named text PREPARE created or dropped.
    pub(crate) text_prepare: Option<TextPrepare>,
    /// User locks taken or released.
    pub(crate) locks: Vec<LockCall>,
    /// The next statement must run on the same connection (SQL_CALC_FOUND_ROWS, SET
    /// TRANSACTION for the next transaction).
    pub(crate) hold_next: bool,
    /// The statement reads LAST_INSERT_ID(): the connection must know the client's.
    pub(crate) reads_last_insert_id: bool,
    /// `SET STATEMENT ... FOR`: the reply's sql_mode flags are not the session's.
    pub(crate) statement_scoped_set: bool,
    /// COM_SET_OPTION: multi-statements on or off.
    pub(crate) multi_statements: Option<bool>,
    /// Reasons to pin if the statement succeeds (a command whose failure changes nothing).
    pub(crate) pins_on_success: u32,
    /// A lone SET statement: one the server refused before applying anything
    /// ([`crate::commands::SET_REFUSED_WHOLE`]) pins nothing, whatever it names.
    pub(crate) set_statement: bool,
    /// Reasons to pin if it fails: a SET of several assignments that fails may have applied
    /// the ones before the failing one (MariaDB does, for ERROR 1621), which weir cannot tell.
    pub(crate) pins_on_failure: u32,
    /// The connection just taken from the pool holds diagnostics another statement left:
    /// they are cleared first ([`CLEAR_DIAGNOSTICS`]).
    pub(crate) clear_diagnostics: bool,
}

/// Clears a MariaDB connection's diagnostics (a statement that uses a table does; this one
/// starts no transaction under autocommit = 0), so that a statement reading them reads none
/// rather than another client's.
const CLEAR_DIAGNOSTICS: &str = "DO (SELECT 1 FROM information_schema.COLLATIONS LIMIT 0)";

/// The same for MySQL, which clears them at every statement but those reading them (its
/// information_schema is made of InnoDB tables).
const CLEAR_DIAGNOSTICS_MYSQL: &str = "DO 0";

/// Client-side state that is not a variable.
#[derive(Debug, Default)]
pub(crate) struct Held {
    /// User locks held by name (a name taken twice is listed twice).
    pub(crate) locks: Vec<Box<str>>,
    /// A lock whose name weir could not read is held: kept until RELEASE_ALL_LOCKS().
    pub(crate) unnamed_lock: bool,
    /// Named text-protocol prepared statements.
    pub(crate) text_prepared: Vec<String>,
}

impl Effects {
    /// Whether the statement changes nothing weir follows.
    pub(crate) fn is_none(&self) -> bool {
        self.set.is_none()
            && self.read_back.is_empty()
            && !self.clear_diagnostics
            && !self.beyond_variables()
    }

    /// Whether the statement only sets session state weir replays on any connection: a SET
    /// of followed variables (values given or read back), nothing else.
    pub(crate) fn only_replayed_state(&self) -> bool {
        self.set.is_some() && !self.beyond_variables()
    }

    /// Whether the statement changes something other than variables.
    fn beyond_variables(&self) -> bool {
        self.unlock_tables
            || self.drops_schema
            || self.text_prepare.is_some()
            || !self.locks.is_empty()
            || self.hold_next
            || self.reads_last_insert_id
            || self.statement_scoped_set
            || self.multi_statements.is_some()
            || self.pins_on_success != 0
    }

    /// Whether the statement's SET assigns the system variable `key`.
    pub(crate) fn sets(&self, key: &str) -> bool {
        let is = |slot: &weir_sql::Slot| matches!(slot, weir_sql::Slot::System { key: k, .. } if *k == key);
        self.set.iter().flatten().any(|a| is(&a.slot)) || self.read_back.iter().any(|r| is(&r.slot))
    }
}

impl Held {
    fn apply_locks(&mut self, calls: &[LockCall], succeeded: bool) {
        for call in calls {
            match call {
                // Taken even when the statement failed: keeping a connection too long is
                // harmless, releasing one that still holds a lock leaks it to another client.
                LockCall::Get(Some(name)) => self.locks.push(name.clone()),
                LockCall::Get(None) => self.unnamed_lock = true,
                LockCall::Release(Some(name)) if succeeded => {
                    if let Some(i) = self.locks.iter().position(|l| l == name) {
                        self.locks.swap_remove(i);
                    }
                }
                LockCall::Release(_) => {}
                LockCall::ReleaseAll if succeeded => {
                    self.locks.clear();
                    self.unnamed_lock = false;
                }
                LockCall::ReleaseAll => {}
            }
        }
    }
}

impl Session {
    /// Reads what a query will change and which of its pin reasons weir follows instead;
    /// returns the pin reasons left.
    pub(crate) fn plan_effects(
        &mut self,
        text: &[u8],
        scan: &weir_sql::QueryScan,
        lexing: weir_sql::Lexing,
    ) -> u32 {
        use weir_sql::{Pin, StatementKind};
        let mut pins = scan.run_pins();
        // The SET and lock-call parsers read strings the default way: where this session's
        // lexing would read the text differently, what they make of it is not trusted.
        let unusual = lexing.matters_for(text);
        let fx = &mut self.effects;
        *fx = Effects::default();
        fx.reads_last_insert_id = scan.reads_last_insert_id;
        fx.statement_scoped_set = scan.statement_scoped_set;
        fx.hold_next = scan.calc_found_rows;
        fx.unlock_tables = scan.unlock_tables;
        fx.drops_schema = scan.drops_schema;
        if scan.kind == StatementKind::Set && scan.statements == 1 {
            fx.set_statement = true;
            let parsed = if unusual {
                SetEffect::Untracked
            } else {
                weir_sql::parse_set(text)
            };
            if let SetEffect::Tracked(a) | SetEffect::Evaluated(a, _) = &parsed {
                if a.iter().any(|a| {
                    matches!(
                        a.slot,
                        weir_sql::Slot::System {
                            key: "autocommit",
                            ..
                        }
                    )
                }) {
                    crate::stats::GlobalStats::inc(&self.shared.stats.com_autocommit);
                }
            }
            // A user variable's string keeps the collation it was set in, wherever it is
            // replayed; one weir cannot tell pins.
            let mut parsed = parsed;
            if let SetEffect::Tracked(a) | SetEffect::Evaluated(a, _) = &parsed {
                let reads = match &parsed {
                    SetEffect::Evaluated(_, r) => r.len(),
                    _ => 0,
                };
                if a.len() + reads > 1 {
                    fx.pins_on_failure = Pin::SET;
                }
            }
            let literals_pinned = match &mut parsed {
                SetEffect::Tracked(a) | SetEffect::Evaluated(a, _) => {
                    self.vars.pin_literal_collations(a, self.login.collation)
                }
                _ => true,
            };
            match parsed {
                SetEffect::Tracked(a) if literals_pinned => {
                    pins &= !(Pin::SET | Pin::USER_VARIABLE);
                    fx.set = Some(a);
                }
                // Evaluated on the server, once: what else the statement reads or does must
                // not be one of the things that pin by themselves.
                SetEffect::Evaluated(a, reads)
                    if pins == Pin::SET
                        && !scan.reads_last_insert_id
                        && !scan.reads_previous_result
                        && !scan.sequence_write
                        && literals_pinned =>
                {
                    pins = 0;
                    fx.set = Some(a);
                    fx.read_back = reads;
                }
                SetEffect::NextTransaction => {
                    pins &= !Pin::SET;
                    pins |= crate::pins::NEXT_TRANSACTION;
                }
                SetEffect::Tracked(_) | SetEffect::Evaluated(..) | SetEffect::Untracked => {}
            }
        }
        if pins & Pin::USER_LOCK != 0 && !unusual {
            weir_sql::lock_calls(text, &mut fx.locks);
            pins &= !Pin::USER_LOCK;
        }
        if pins & Pin::PREPARED != 0 && scan.statements == 1 {
            // A lone PREPARE/DEALLOCATE is followed by name; EXECUTE needs the connection the
            // names keep anyway. Anything else (several statements) pins for good.
            fx.text_prepare = scan.text_prepare.clone();
            pins &= !Pin::PREPARED;
        }
        pins
    }

    /// Applies what the statement just relayed changed; returns whether the next statement
    /// must run on the same connection.
    pub(crate) fn apply_effects(&mut self, succeeded: bool) -> bool {
        let fx = std::mem::take(&mut self.effects);
        if succeeded {
            self.pins |= fx.pins_on_success;
            if let Some(a) = &fx.set {
                self.vars.apply(a);
                if let Some(b) = self.backend.as_mut() {
                    b.conn().vars.apply(a);
                }
                self.client.write_timeout_s = self.net_write_timeout();
                let as_transaction = self
                    .shared
                    .runtime
                    .load()
                    .mysql
                    .autocommit_false_is_transaction;
                let off = as_transaction && !self.autocommit();
                set_bit(&mut self.pins, crate::pins::AUTOCOMMIT_OFF, off);
            }
            if fx.unlock_tables {
                self.pins &= !weir_sql::Pin::LOCK_TABLES;
            }
            if let Some(on) = fx.multi_statements {
                Arc::make_mut(&mut self.login).multi_statements = on;
                if let Some(b) = self.backend.as_mut() {
                    b.conn().multi_statements = on;
                }
            }
            match fx.text_prepare {
                Some(TextPrepare::Prepare(name)) if !self.held.text_prepared.contains(&name) => {
                    self.held.text_prepared.push(name);
                }
                Some(TextPrepare::Deallocate(name)) => {
                    self.held.text_prepared.retain(|n| *n != name);
                }
                _ => {}
            }
        }
        if !succeeded {
            self.pins |= fx.pins_on_failure;
        }
        self.held.apply_locks(&fx.locks, succeeded);
        let lock_pin = !self.held.locks.is_empty() || self.held.unnamed_lock;
        set_bit(&mut self.pins, crate::pins::USER_LOCKS, lock_pin);
        let prepared_pin = !self.held.text_prepared.is_empty();
        set_bit(&mut self.pins, crate::pins::TEXT_PREPARED, prepared_pin);
        fx.hold_next
    }

    /// The session's net_write_timeout, seconds (the server's default unless it set one).
    fn net_write_timeout(&self) -> u32 {
        self.vars
            .system("net_write_timeout")
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|&s| s > 0)
            .unwrap_or(crate::client::NET_WRITE_TIMEOUT_S)
    }

    /// Forgets everything the client set (COM_RESET_CONNECTION, COM_CHANGE_USER).
    /// How the server reads this session's statements: what weir followed of its sql_mode
    /// and charset, and the sql_mode flags of the last reply it got (a server whose global
    /// sql_mode has NO_BACKSLASH_ESCAPES or ANSI_QUOTES, a sql_mode set in a way weir did not
    /// follow). Before the session's first reply, only what weir followed.
    pub(crate) fn lexing(&self) -> weir_sql::Lexing {
        use weir_wire::status;
        let mut lexing = self.vars.lexing(self.login.collation);
        lexing.no_backslash_escapes |= self.mode_status & status::NO_BACKSLASH_ESCAPES != 0;
        lexing.ansi_quotes |= self.mode_status & status::ANSI_QUOTES != 0;
        lexing
    }

    pub(crate) fn reset_state(&mut self) {
        self.vars = weir_sql::SessionVars::default();
        self.client.write_timeout_s = crate::client::NET_WRITE_TIMEOUT_S;
        if self.login.ignore_space {
            // The server adds IGNORE_SPACE for CLIENT_IGNORE_SPACE at login only: after a
            // reset or a change of user, sql_mode is the global one.
            if let SetEffect::Tracked(a) = weir_sql::parse_set(b"SET sql_mode = DEFAULT") {
                self.vars.apply(&a);
            }
        }
        self.held = Held::default();
        self.effects = Effects::default();
        self.last_insert_id = 0;
        self.no_diagnostics = true;
        self.diag_on = None;
        self.carry_diag = None;
        self.warnings_carried = 0;
        self.mode_status = 0;
        self.pins = 0;
        self.keep_for = 0;
        self.keep_until = None;
        self.hold_next = false;
        self.hold_until = None;
        self.prepared.clear();
    }

    /// Reads back, on the connection that just ran it, what a SET with expressions gave the
    /// variables weir follows, so that they replay as literals elsewhere. Returns the pins
    /// left: [`weir_sql::Pin::SET`] when the values could not be read (or the SET left
    /// warnings, which a read would clear): the session then keeps the connection.
    /// After a DROP DATABASE: the server forgets the current schema of the connection that
    /// dropped it, and so does the client's session (which ran there in that schema). Read
    /// back rather than guessed from the statement (comments, case, several statements).
    pub(crate) async fn reread_schema(&mut self, outcome: &ReplyOutcome) {
        // Warnings (IF EXISTS of a missing one) mean nothing was dropped.
        if !std::mem::take(&mut self.effects.drops_schema)
            || outcome.error.is_some()
            || outcome.warnings > 0
        {
            return;
        }
        let Some(b) = self.backend.as_mut() else {
            return;
        };
        match b.conn().query_rows("SELECT DATABASE()").await {
            Ok(rows) => {
                let schema = rows.value().map(str::to_owned);
                b.conn().schema.clone_from(&schema);
                self.schema.clone_from(&schema);
                Arc::make_mut(&mut self.login).schema = schema;
            }
            Err(e) => {
                // The next statement finds out whether the connection is usable.
                tracing::debug!(error = %e, "schema not read back after DROP DATABASE");
            }
        }
    }

    pub(crate) async fn read_back(&mut self, outcome: &ReplyOutcome) -> u32 {
        let reads = std::mem::take(&mut self.effects.read_back);
        if reads.is_empty() || outcome.error.is_some() {
            return 0;
        }
        let Some(b) = self.backend.as_mut() else {
            return 0;
        };
        // Reading back would clear the SET's warnings, which the client may still ask for:
        // then the session keeps the connection instead. Not on a reader standing in for an
        // absent writer, where that would send the session's writes to the reader: there
        // the warnings are lost instead.
        if outcome.warnings > 0 && !std::mem::take(&mut self.on_borrowed_reader) {
            return weir_sql::Pin::SET;
        }
        let read = match b
            .conn()
            .query_rows(&weir_sql::ReadBack::query(&reads))
            .await
        {
            Ok(rows) => rows.rows.into_iter().next(),
            Err(e) => {
                // The next statement finds out whether the connection is usable.
                tracing::debug!(error = %e, "an evaluated SET was not read back");
                None
            }
        };
        let assignments: Option<Vec<Assignment>> = read.and_then(|row| {
            (row.len() == reads.len()).then_some(())?;
            reads
                .iter()
                .zip(&row)
                .map(|(r, v)| r.assignment(v.as_deref()))
                .collect()
        });
        match assignments {
            Some(a) => {
                self.effects.set.get_or_insert_with(Vec::new).extend(a);
                0
            }
            None => {
                tracing::debug!("a variable set by an expression cannot be followed");
                weir_sql::Pin::SET
            }
        }
    }

    /// Brings the held connection's variables (and LAST_INSERT_ID() when the statement reads
    /// it) in line with the client's. `Ok(false)`: the connection cannot be brought there and
    /// was closed, take another; `Err(())` inside: the client got an ERR.
    pub(crate) async fn sync_state(&mut self, seq: u8) -> Result<SyncOutcome, ClientError> {
        let Some(b) = self.backend.as_mut() else {
            return Ok(SyncOutcome::Ready);
        };
        let needs_id =
            self.effects.reads_last_insert_id && b.conn_ref().last_insert_id != self.last_insert_id;
        let conn = b.conn_ref();
        let same_start =
            conn.collation == self.login.collation && conn.ignore_space == self.login.ignore_space;
        let multi_statements = self.login.multi_statements;
        if conn.vars == self.vars
            && same_start
            && conn.multi_statements == multi_statements
            && !needs_id
            && !self.effects.clear_diagnostics
        {
            return Ok(SyncOutcome::Ready);
        }
        let server = b.server().clone();
        if b.conn_ref().multi_statements != multi_statements {
            if let Err(e) = b.conn().set_multi_statements(multi_statements).await {
                let err = lost_backend(&e);
                self.log_error(Some(&server), err.code, &err.message);
                self.drop_backend().await;
                return Ok(SyncOutcome::Retry);
            }
        }
        let mut statements = Vec::new();
        {
            let conn = b.conn_ref();
            let ctx = sync_context(&self.login, conn);
            if !self.vars.sync_statements(&conn.vars, &ctx, &mut statements) {
                self.drop_backend().await;
                return Ok(SyncOutcome::Retry);
            }
        }
        if needs_id {
            statements.push(format!("SELECT LAST_INSERT_ID({})", self.last_insert_id));
        }
        if std::mem::take(&mut self.effects.clear_diagnostics) {
            b.conn().diagnostics_left = false;
            let mariadb = b.conn_ref().server_version.contains("MariaDB");
            let clear = if mariadb {
                CLEAR_DIAGNOSTICS
            } else {
                CLEAR_DIAGNOSTICS_MYSQL
            };
            statements.push(clear.to_owned());
        }
        for sql in &statements {
            let Some(b) = self.backend.as_mut() else {
                return Ok(SyncOutcome::Retry);
            };
            crate::stats::GlobalStats::inc(&self.shared.stats.backend_state_syncs);
            match b.conn().query(sql).await {
                Ok(_) => {}
                Err(BackendError::Server(e)) => {
                    // The server refuses the client's state (a value another server took).
                    self.log_error(Some(&server), e.code, &e.message);
                    self.client.send_err(seq, &e).await?;
                    self.give_back_unless_tied();
                    return Ok(SyncOutcome::Answered);
                }
                Err(e) => {
                    let err = lost_backend(&e);
                    self.log_error(Some(&server), err.code, &err.message);
                    self.drop_backend().await;
                    return Ok(SyncOutcome::Retry);
                }
            }
        }
        if let Some(b) = self.backend.as_mut() {
            let conn = b.conn();
            conn.vars.clone_from(&self.vars);
            conn.collation = self.login.collation;
            conn.ignore_space = self.login.ignore_space;
            if needs_id {
                conn.last_insert_id = self.last_insert_id;
            }
        }
        Ok(SyncOutcome::Ready)
    }

    /// The SETs that put the held connection in a prepared statement's parse context
    /// (`weir_sql::SessionVars::parse_context`) and those that bring it back, when it is not
    /// in that context already. `None` also when either way cannot be done on this connection
    /// (a charset back to an unknown handshake collation): the statement is then prepared in
    /// the client's current charsets, as before the context was kept.
    pub(crate) fn parse_context_switch(&self, context: &SessionVars) -> Option<ContextSwitch> {
        let conn = self.backend.as_ref()?.conn_ref();
        if conn
            .vars
            .parse_context_from(conn.collation, conn.ignore_space)
            .parses_as(context)
        {
            return None;
        }
        if conn.collation != self.login.collation || conn.ignore_space != self.login.ignore_space {
            // Not synced to this session yet: not the state the statements below start from.
            return None;
        }
        let ctx = sync_context(&self.login, conn);
        let target = conn.vars.with_parse_context(context);
        let mut sw = ContextSwitch::default();
        let both = target.sync_statements(&conn.vars, &ctx, &mut sw.there)
            && conn.vars.sync_statements(&target, &ctx, &mut sw.back);
        if !both {
            tracing::debug!("cannot prepare in the statement's own charsets on this connection");
        }
        both.then_some(sw)
    }

    /// Runs statements whose results do not matter on the held connection.
    pub(crate) async fn run_held(&mut self, statements: &[String]) -> Result<(), BackendError> {
        if let Some(b) = self.backend.as_mut() {
            for sql in statements {
                b.conn().query(sql).await?;
            }
        }
        Ok(())
    }

    fn give_back_unless_tied(&mut self) {
        if !self.tied() {
            self.give_back();
        }
    }
}

/// See [`Session::parse_context_switch`].
#[derive(Debug, Default)]
pub(crate) struct ContextSwitch {
    /// To the statement's parse context.
    pub(crate) there: Vec<String>,
    /// Back to the client's state.
    pub(crate) back: Vec<String>,
}

/// How [`Session::sync_state`] went.
pub(crate) enum SyncOutcome {
    /// The connection is in the client's state.
    Ready,
    /// The connection was closed; take another.
    Retry,
    /// The client got an ERR.
    Answered,
}

/// What syncing variables on `conn` for a client that logged in with `login` needs to know.
fn sync_context<'a>(
    login: &weir_pool::LoginTemplate,
    conn: &'a BackendConn,
) -> weir_sql::SyncContext<'a> {
    weir_sql::SyncContext {
        handshake_collation: login.collation,
        connection_collation: conn.collation,
        server_version: &conn.server_version,
        ignore_space: login.ignore_space,
        connection_ignore_space: conn.ignore_space,
    }
}

fn set_bit(bits: &mut u32, bit: u32, on: bool) {
    if on {
        *bits |= bit;
    } else {
        *bits &= !bit;
    }
}
