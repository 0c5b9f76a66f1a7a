//! Prepared statements across the pool.
//!
//! A client's COM_STMT_PREPARE runs on whichever connection the session has at that moment;
//! the statement then belongs to the session, not to the connection: it is recorded in a global
//! registry (one entry per user, schema and text, shared by every session that prepares the same
//! statement) and the client gets weir's own statement id. When the client executes it, the
//! connection in use prepares it first if it has not yet (each connection keeps an LRU of the
//! statements it holds, bounded by mysql-max_stmts_per_connection), and weir rewrites the
//! statement id in the packet. The connection goes back to the pool after each execution like
//! after any statement.
//!
//! What lives on a connection only for the length of a statement is kept by the session and
//! sent again where needed: parameter types (a client sends them once, with its first
//! execution; weir adds them to executions that go to another connection) and
//! COM_STMT_SEND_LONG_DATA chunks (buffered, sent right before the execution). COM_STMT_CLOSE
//! is answered locally; COM_STMT_RESET too, unless a cursor is open on the server. A cursor
//! (an execution with a cursor type) keeps the connection with the session until the statement
//! is reset or closed, and its server statement is neither evicted nor run by another of the
//! session's statements meanwhile: a statement of the same text then runs on a server
//! statement of its own (the server keeps one cursor per statement).

use crate::client::{ClientError, Command};
use crate::commands::diagnostics_on_held;
use crate::exec::{Limits, Step};
use crate::pipeline::Opened;
use crate::session::{lost_backend, Flow, Prepared, Session};
use crate::GlobalStats;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use weir_backend::BackendError;
use weir_wire::msg::{ErrInfo, OkInfo};
use weir_wire::reply::Expect;
use weir_wire::{com, errcode, status};

/// A statement as known across sessions and connections.
#[derive(Debug)]
pub struct GlobalStmt {
    /// weir's id for it, the key of every connection's statement cache.
    pub id: u64,
    /// Its full text.
    pub text: Box<[u8]>,
    /// The schema it was prepared in (it resolves names there).
    pub schema: Option<Box<str>>,
    /// The charsets and sql_mode it was prepared in (they decide how its text is read:
    /// `||`, `"..."`, the charset of its literals).
    pub parse_context: weir_sql::SessionVars,
    /// `parse_context.fingerprint()`, for cache keys.
    pub parse_fingerprint: u64,
    /// Parameter count.
    pub params: u16,
    /// Result column count when prepared.
    pub columns: u16,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct StmtKey {
    username: Box<str>,
    schema: Option<Box<str>>,
    parse_context: weir_sql::SessionVars,
    text: Box<[u8]>,
}

/// Every prepared statement sessions hold, by user, schema, parse context and text.
#[derive(Debug, Default)]
pub struct StmtRegistry {
    by_key: Mutex<HashMap<StmtKey, Arc<GlobalStmt>>>,
    next_id: AtomicU64,
}

impl StmtRegistry {
    /// The statement for (user, schema, parse context, text): the known one when its parameter
    /// and column counts are the same, else a new one (a table changed since it was first
    /// prepared). Past `limit` entries (mysql-max_stmts_cache), statements no session holds any
    /// more are forgotten.
    pub fn intern(
        &self,
        username: &str,
        schema: Option<&str>,
        parse_context: &weir_sql::SessionVars,
        text: &[u8],
        counts: (u16, u16),
        limit: usize,
    ) -> Arc<GlobalStmt> {
        let (params, columns) = counts;
        let key = StmtKey {
            username: username.into(),
            schema: schema.map(Into::into),
            parse_context: parse_context.clone(),
            text: text.into(),
        };
        let mut map = self.by_key.lock();
        if let Some(g) = map.get(&key) {
            if g.params == params && g.columns == columns {
                return g.clone();
            }
        }
        if map.len() >= limit {
            // Connections may still cache the ids of forgotten statements: they age out of the
            // LRUs; a statement prepared again gets a new id.
            map.retain(|_, g| Arc::strong_count(g) > 1);
        }
        let g = Arc::new(GlobalStmt {
            id: self.next_id.fetch_add(1, Ordering::Relaxed) + 1,
            text: key.text.clone(),
            schema: key.schema.clone(),
            parse_context: key.parse_context.clone(),
            parse_fingerprint: key.parse_context.fingerprint(),
            params,
            columns,
        });
        map.insert(key, g.clone());
        g
    }

    /// Number of statements known.
    pub fn len(&self) -> usize {
        self.by_key.lock().len()
    }

    /// Whether none is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// For stats_mysql_global's Stmt_* rows.
    pub fn counts(&self) -> StmtCounts {
        let map = self.by_key.lock();
        let mut out = StmtCounts {
            cached: map.len() as u64,
            max_id: self.next_id.load(Ordering::Relaxed),
            ..StmtCounts::default()
        };
        for g in map.values() {
            // The registry's own reference aside, each is a client's statement (or a
            // statement a session is preparing or executing right now).
            let held = Arc::strong_count(g).saturating_sub(1) as u64;
            out.client_total += held;
            out.client_unique += u64::from(held > 0);
        }
        out
    }
}

/// What the statement registry holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct StmtCounts {
    /// Statements known (Stmt_Cached).
    pub cached: u64,
    /// The highest id given to one (Stmt_Max_Stmt_id).
    pub max_id: u64,
    /// Of the known statements, those some client holds (Stmt_Client_Active_Unique).
    pub client_unique: u64,
    /// Client statements open across sessions (Stmt_Client_Active_Total).
    pub client_total: u64,
}

/// COM_STMT_EXECUTE flags asking for a cursor.
const CURSOR_TYPE_MASK: u8 = 0x0f;

/// Where the parameter types of an execute packet are: (offset of the new-params-bound byte,
/// parameter count). `None` when the statement has no parameter or the packet is too short.
fn bound_flag_offset(payload: &[u8], params: u16) -> Option<usize> {
    if params == 0 {
        return None;
    }
    let at = 10 + usize::from(params).div_ceil(8);
    (payload.len() > at).then_some(at)
}

/// The parts of an execute packet that make one execution differ from another besides the
/// parameter types: flags, iteration count and null bitmap, then the values. `None` when the
/// packet is shorter than its statement's parameters say.
fn execute_params(payload: &[u8], params: u16) -> Option<(&[u8], &[u8])> {
    payload.get(5..10)?;
    let Some(at) = bound_flag_offset(payload, params) else {
        return (params == 0).then(|| (&payload[5..10], &[][..]));
    };
    let values_at = if payload[at] == 1 {
        at + 1 + 2 * usize::from(params)
    } else {
        at + 1
    };
    Some((&payload[5..at], payload.get(values_at..)?))
}

/// The execute packet for a connection that knows the statement as `server_id`, with the
/// parameter types added when the client sent none this time (they are bound per connection).
fn execute_for(payload: &[u8], server_id: u32, params: u16, types: Option<&[u8]>) -> Command {
    let mut out = Vec::with_capacity(payload.len() + 2 * usize::from(params) + 1);
    out.extend_from_slice(payload);
    if let Some(id) = out.get_mut(1..5) {
        id.copy_from_slice(&server_id.to_le_bytes());
    }
    if let (Some(at), Some(types)) = (bound_flag_offset(payload, params), types) {
        if payload[at] == 0 {
            out[at] = 1;
            out.splice(at + 1..at + 1, types.iter().copied());
        }
    }
    Command::from_payload(&out)
}

/// A COM_STMT_* packet with its statement id replaced.
fn with_server_id(payload: &[u8], server_id: u32) -> Vec<u8> {
    let mut out = payload.to_vec();
    if let Some(id) = out.get_mut(1..5) {
        id.copy_from_slice(&server_id.to_le_bytes());
    }
    out
}

fn unknown_statement(id: u32, code: u8) -> ErrInfo {
    // The server's own words, which name its functions rather than the commands.
    let to = match code {
        com::STMT_EXECUTE => "mysqld_stmt_execute",
        com::STMT_FETCH => "mysqld_stmt_fetch",
        com::STMT_RESET => "mysqld_stmt_reset",
        other => com::name(other),
    };
    ErrInfo::new(
        errcode::ER_UNKNOWN_STMT_HANDLER,
        "HY000",
        format!("Unknown prepared statement handler ({id}) given to {to}"),
    )
}

/// The most statements one session may keep prepared: MariaDB's default
/// max_prepared_stmt_count, which the server applies to all sessions together. weir's
/// connections never reach the server's limit (they keep a bounded few each), so without a
/// limit of its own a client preparing without closing would grow weir's memory for ever.
const MAX_STATEMENTS_PER_SESSION: usize = 16_382;

/// Keys of client statements' own server statements ([`Prepared::own_key`]), apart from the
/// global ids (which count up from 1).
static OWN_KEYS: AtomicU64 = AtomicU64::new(1 << 63);

/// A new key for a client statement's own server statement.
pub(crate) fn new_own_key() -> u64 {
    OWN_KEYS.fetch_add(1, Ordering::Relaxed)
}

/// How bringing a statement onto the held connection went.
/// How a prepare under the statement's timeout ended.
enum PrepareTimed {
    /// In time.
    Done(Result<weir_backend::PreparedInfo, BackendError>),
    /// After the KILL QUERY the timeout sent; the connection is usable.
    Stopped(Result<weir_backend::PreparedInfo, BackendError>),
    /// Not even after the KILL QUERY (or it could not be sent), or the connection failed.
    Stuck,
}

enum Ensure {
    /// Prepared there under this id.
    Ready(u32),
    /// The client got an ERR (the server refused the statement); the connection is usable.
    Refused,
    /// The connection failed and was closed.
    Lost(BackendError),
}

impl Session {
    /// COM_STMT_PREPARE: routed by the rules like a query, prepared on the connection in use,
    /// recorded in the global registry; the client gets weir's statement id.
    pub(crate) async fn prepare(&mut self, cmd: Command) -> Result<Flow, ClientError> {
        GlobalStats::inc(&self.shared.stats.com_frontend_stmt_prepare);
        if self.prepared.len() >= MAX_STATEMENTS_PER_SESSION {
            let e = ErrInfo::new(
                errcode::ER_MAX_PREPARED_STMT_COUNT_REACHED,
                "42000",
                format!(
                    "Can't create more than max_prepared_stmt_count statements (current value: \
                     {MAX_STATEMENTS_PER_SESSION}): weir keeps at most that many per client \
                     connection; close statements with COM_STMT_CLOSE"
                ),
            );
            self.last_prepared = None;
            self.row_count = Some(-1);
            self.client
                .send_err(cmd.last_seq.wrapping_add(1), &e)
                .await?;
            return Ok(Flow::Continue);
        }
        let (
            command,
            info,
            cacheable,
            exec_pins,
            repeatable,
            pipelinable,
            statement_scoped_set,
            reads,
        ) = {
            let p = cmd.payload();
            let q = p.get(1..).unwrap_or_default();
            let mut text = String::new();
            crate::activity::fill_info(&mut text, q);
            let scan = weir_sql::scan_with(q, self.lexing());
            let cacheable = crate::cache::cacheable_statement(&scan);
            (
                scan.command,
                text.into_boxed_str(),
                cacheable,
                prepared_pins(&scan),
                repeatable(&scan),
                repeatable(&scan) && !scan.reads_previous_result && !scan.reads_last_insert_id,
                scan.statement_scoped_set,
                (
                    scan.reads_last_insert_id,
                    scan.reads_previous_result,
                    scan.reads_diagnostics,
                    scan.calc_found_rows,
                ),
            )
        };
        let rt = self.shared.runtime.load_full();
        let rules_generation = self.shared.rules_generation.load(Ordering::Acquire);
        let flag_in = self.flag_in;
        // The digest is computed whatever happens: executions are counted under it.
        let tied = self.tied();
        let digest = self.digest_and_rules(&cmd, &rt.mysql, !tied);
        let limits = if tied {
            Limits::defaults(&rt.mysql)
        } else {
            let hostgroup = self
                .decision
                .destination_hostgroup
                .unwrap_or(self.user.default_hostgroup);
            self.route_to(hostgroup);
            Limits::decided(&self.decision, &rt.mysql)
        };
        self.last_prepared = None;
        // Never 0, nor u32::MAX, which names the last statement prepared.
        self.next_stmt_id = match self.next_stmt_id.wrapping_add(1) {
            0 | u32::MAX => 1,
            n => n,
        };
        let client_id = self.next_stmt_id;
        self.reply_stmt_id = Some(client_id);
        self.capture = Some(crate::relay::Capture::new(PREPARE_CAPTURE_LIMIT));
        let outcome = self.run_with_retries(&cmd, Expect::Prepare, &limits).await;
        self.reply_stmt_id = None;
        let captured = self.capture.take();
        let Some(o) = outcome? else {
            // Refused before any server saw it: the server's value is not known.
            self.row_count = None;
            return Ok(Flow::Continue);
        };
        if let (None, Some(server_id)) = (&o.error, o.prepared_id) {
            GlobalStats::inc(&self.shared.stats.com_backend_stmt_prepare);
            let text = cmd.payload();
            let global = self.shared.statements.intern(
                &self.user.username,
                self.schema.as_deref(),
                &self
                    .vars
                    .parse_context_from(self.login.collation, self.login.ignore_space),
                text.get(1..).unwrap_or_default(),
                (o.prepared_params, o.prepared_columns),
                rt.mysql.max_stmts_cache as usize,
            );
            let max = rt.mysql.max_stmts_per_connection as usize;
            let mut closed = Vec::new();
            let own_key = new_own_key();
            let protected = self.cursor_keys();
            // Prepared again while a cursor is open on the statement of that text: this one is
            // its own (the server statement under the cursor stays).
            let key = if protected.contains(&global.id) {
                own_key
            } else {
                global.id
            };
            if let Some(b) = self.backend.as_mut() {
                b.conn()
                    .stmts
                    .insert(key, server_id, max, &protected, &mut closed);
                GlobalStats::add(
                    &self.shared.stats.com_backend_stmt_close,
                    closed.len() as u64,
                );
                if let Err(e) = b.conn().close_statements(&closed).await {
                    tracing::debug!(error = %e, "backend failed closing evicted statements");
                    self.lose_backend().await?;
                }
            }
            let timeout = limits.timeout_rule.map(|rule| (limits.timeout, rule));
            self.last_prepared = Some(client_id);
            self.prepared.insert(
                client_id,
                Prepared {
                    command,
                    text: info,
                    timeout,
                    digest,
                    digest_text: self.digest_buf.as_slice().into(),
                    cache: crate::cache::CacheRule::from_decision(&self.decision)
                        .filter(|_| cacheable && !tied),
                    cacheable,
                    // Read from the rules when the session is free to follow them again.
                    rules_generation: if tied { 0 } else { rules_generation },
                    flag_in,
                    global,
                    hostgroup: self.hostgroup,
                    rule_answer: if tied {
                        None
                    } else {
                        crate::session::RuleAnswer::of(&self.decision)
                    },
                    param_types: None,
                    long_data: LongData::default(),
                    long_data_overflow: false,
                    long_data_refused: false,
                    cursor: None,
                    own_key,
                    exec_pins,
                    repeatable,
                    pipelinable,
                    statement_scoped_set,
                    reads_last_insert_id: reads.0,
                    reads_previous_result: reads.1,
                    reads_diagnostics: reads.2,
                    calc_found_rows: reads.3,
                    column_defs: captured
                        .filter(|c| !c.overflow)
                        .and_then(|c| ColumnDefs::of_prepare_reply(&c.buf)),
                },
            );
        }
        if o.error.is_some() {
            // As any failed statement on the server.
            self.row_count = Some(-1);
        }
        self.after_reply(&o, 0, None);
        Ok(Flow::Continue)
    }

    /// COM_STMT_EXECUTE on whichever connection the session gets, the statement prepared
    /// there first if needed; answered from the query cache when a rule caches it.
    pub(crate) async fn execute(&mut self, cmd: Command) -> Result<Flow, ClientError> {
        self.row_count = None;
        self.no_diagnostics = false;
        let seq = cmd.last_seq.wrapping_add(1);
        let id = self.statement_id(&cmd);
        let payload = cmd.payload();
        let Some(p) = self.prepared.get_mut(&id) else {
            self.client
                .send_err(seq, &unknown_statement(id, com::STMT_EXECUTE))
                .await?;
            return Ok(Flow::Continue);
        };
        self.early_kill_columns = p.column_defs.clone();
        if p.rules_generation != self.shared.rules_generation.load(Ordering::Acquire)
            && !self.tied()
        {
            self.reread_rules(id);
        }
        let Some(p) = self.prepared.get_mut(&id) else {
            return Ok(Flow::Continue);
        };
        if let Some(at) = bound_flag_offset(&payload, p.global.params) {
            if payload[at] == 1 {
                let n = 2 * usize::from(p.global.params);
                if let Some(types) = payload.get(at + 1..at + 1 + n) {
                    if p.param_types.as_deref() != Some(types) {
                        p.param_types = Some(types.into());
                    }
                }
            }
        }
        if let Some(answer) = p.rule_answer.clone() {
            // Refused or answered by a rule: it does not run, and what it was sent is dropped
            // as after an execution.
            p.long_data.clear();
            p.long_data_overflow = false;
            p.long_data_refused = false;
            match answer {
                crate::session::RuleAnswer::Error(msg) => {
                    let e = ErrInfo::new(errcode::ER_NOT_ALLOWED_COMMAND, "42000", msg.to_string());
                    self.client.send_err(seq, &e).await?;
                }
                crate::session::RuleAnswer::Ok(msg) => {
                    let ok = self.ok_status();
                    weir_wire::msg::write_ok(&mut self.client.wbuf, seq, &ok, msg.as_bytes());
                    self.client.flush_wbuf().await?;
                }
            }
            self.row_count = None;
            return Ok(Flow::Continue);
        }
        if p.long_data_refused {
            // The server's answer, until the client resets the statement.
            p.long_data.clear();
            let e = ErrInfo::new(
                errcode::ER_WRONG_ARGUMENTS,
                "HY000",
                "Incorrect arguments to mysqld_stmt_send_long_data".to_string(),
            );
            self.client.send_err(seq, &e).await?;
            return Ok(Flow::Continue);
        }
        if p.long_data_overflow {
            // The server's error (not 08S01, which pools take for a dead connection), and as
            // on the server it lasts until COM_STMT_RESET.
            p.long_data.clear();
            let max = self.shared.runtime.load().mysql.max_allowed_packet;
            let e = ErrInfo::new(
                errcode::ER_UNKNOWN_ERROR,
                "HY000",
                format!(
                    "Parameter of prepared statement which is set through mysql_send_long_data() \
                     is longer than 'max_allowed_packet' bytes (weir's mysql-max_allowed_packet, \
                     {max} bytes, bounds all the long data a client connection holds)"
                ),
            );
            self.client.send_err(seq, &e).await?;
            return Ok(Flow::Continue);
        }
        self.repeatable = p.repeatable;
        self.effects.statement_scoped_set = p.statement_scoped_set;
        self.effects.reads_last_insert_id = p.reads_last_insert_id;
        let exec_pins = p.exec_pins;
        let wants_cursor = execute_expect(p, &payload) == Expect::CursorResultSets;
        let cache_rule = p
            .cache
            .filter(|_| !wants_cursor && p.cursor.is_none() && p.long_data.is_empty());
        let key = self.server_statement_key(id);
        let outcome = match cache_rule.filter(|_| self.cache_usable()) {
            Some(rule) if self.execute_key_for(id, &payload) => {
                self.execute_through_cache(id, &payload, seq, rule, key)
                    .await?
            }
            _ => self.execute_on_backend(id, &payload, seq, key).await?,
        };
        if let Some(p) = self.prepared.get_mut(&id) {
            // The server forgets long data once a statement ran, or failed to; and an
            // execution that never reached it must not leave it for the next one.
            p.long_data.clear();
        }
        let Some(outcome) = outcome else {
            return Ok(Flow::Continue);
        };
        if !self.cache_hit {
            let opened = wants_cursor && o_cursor(&outcome);
            if let Some(p) = self.prepared.get_mut(&id) {
                p.cursor = opened.then_some(key);
            }
            self.update_cursor_pin();
        }
        let m = &self.shared.runtime.load().mysql;
        if m.query_digests {
            let track = m.query_digests_track_hostname;
            if let Some(p) = self.prepared.get(&id) {
                self.record_digest_text(p.digest, &p.digest_text, track, Some(&outcome));
            }
        }
        self.row_count = outcome.row_count();
        // FOUND_ROWS() after it, as the server counts it: weir answers it wherever the next
        // statement goes (a hit, or a connection given back, leaves no server to ask).
        // With SQL_CALC_FOUND_ROWS it is the server's count, read where the statement ran.
        let calc_found_rows = self.prepared.get(&id).is_some_and(|p| p.calc_found_rows);
        self.found_rows = (outcome.error.is_none()
            && outcome.ended_with_rows
            && !outcome.several_results
            && !wants_cursor
            && !calc_found_rows)
            .then_some(outcome.rows);
        self.no_diagnostics = outcome.error.is_none() && !outcome.warned;
        if !self.cache_hit {
            self.after_reply(&outcome, exec_pins, None);
        }
        Ok(Flow::Continue)
    }

    /// The query rules changed since statement `id` was prepared (LOAD MYSQL QUERY RULES TO
    /// RUNTIME), or it was prepared while the session was tied to its connection: its
    /// destination hostgroup, cache rule and timeout are read again from the rules now,
    /// as a DBA changing a rule expects of statements applications keep prepared.
    fn reread_rules(&mut self, id: u32) {
        let Some(p) = self.prepared.get(&id) else {
            return;
        };
        let cmd = Command::query(&p.global.text);
        let generation = self.shared.rules_generation.load(Ordering::Acquire);
        let rt = self.shared.runtime.load_full();
        // The statement under way's decision and the rule chain's flag for the next query
        // are not this evaluation's; the flag its prepare was evaluated with is.
        let decision = std::mem::take(&mut self.decision);
        let flag_in = std::mem::replace(&mut self.flag_in, p.flag_in);
        let digest_buf = std::mem::take(&mut self.digest_buf);
        self.digest_and_rules(&cmd, &rt.mysql, true);
        self.digest_buf = digest_buf;
        let fresh = std::mem::replace(&mut self.decision, decision);
        self.flag_in = flag_in;
        let limits = Limits::decided(&fresh, &rt.mysql);
        let default_hostgroup = self.user.default_hostgroup;
        if let Some(p) = self.prepared.get_mut(&id) {
            p.hostgroup = fresh.destination_hostgroup.unwrap_or(default_hostgroup);
            p.timeout = limits.timeout_rule.map(|rule| (limits.timeout, rule));
            p.cache = crate::cache::CacheRule::from_decision(&fresh).filter(|_| p.cacheable);
            p.rule_answer = crate::session::RuleAnswer::of(&fresh);
            p.rules_generation = generation;
        }
    }

    /// Builds the cache key of an execution of statement `id`; false when it has none (the
    /// packet is malformed, or no parameter types were ever sent).
    fn execute_key_for(&mut self, id: u32, payload: &[u8]) -> bool {
        let mut key = std::mem::take(&mut self.cache_key);
        let built = self.prepared.get(&id).and_then(|p| {
            let (head, values) = execute_params(payload, p.global.params)?;
            let types = match (p.global.params, &p.param_types) {
                (0, _) => &[][..],
                (_, Some(t)) => &t[..],
                (_, None) => return None,
            };
            self.execute_key(&mut key, &p.global, types, &[head, values], p.hostgroup);
            Some(())
        });
        self.cache_key = key;
        built.is_some()
    }

    /// Runs an execution through the cache (the key is in `self.cache_key`).
    async fn execute_through_cache(
        &mut self,
        id: u32,
        payload: &[u8],
        seq: u8,
        rule: crate::cache::CacheRule,
        key: u64,
    ) -> Result<Option<crate::relay::ReplyOutcome>, ClientError> {
        if let Some(o) = self.try_cached(seq).await? {
            return Ok(Some(o));
        }
        let cache = self.shared.cache.clone();
        let wait = match rule.wait {
            Some(w) => w,
            None => self.execute_limits(id).timeout,
        };
        let hostgroup = self.prepared.get(&id).map_or(0, |p| p.hostgroup);
        let Some(lookup) = self.coalesced(&cache, hostgroup, wait, seq).await? else {
            return Ok(None);
        };
        let r = match lookup {
            weir_cache::Lookup::Hit(reply) => match self.send_cached(&reply, seq).await? {
                Some(o) => Ok(Some(o)),
                None => self.execute_on_backend(id, payload, seq, key).await,
            },
            weir_cache::Lookup::Bypass => self.execute_on_backend(id, payload, seq, key).await,
            weir_cache::Lookup::Fill(fill) => {
                self.begin_fill();
                let r = self.execute_on_backend(id, payload, seq, key).await;
                let outcome = r.as_ref().ok().and_then(|o| o.as_ref());
                self.end_fill(fill, outcome, &rule);
                r
            }
        };
        r
    }

    /// The timeout and retries of statement `id`'s executions: the rule's from PREPARE.
    fn execute_limits(&self, id: u32) -> Limits {
        let mut limits = Limits::defaults(&self.shared.runtime.load().mysql);
        if let Some((timeout, rule)) = self.prepared.get(&id).and_then(|p| p.timeout) {
            limits.timeout = timeout;
            limits.timeout_rule = Some(rule);
        }
        limits
    }

    /// The key of the server statement an execution of `id` runs on (see [`StmtCache`]): the
    /// one its cursor is open on, else the one shared by its text, unless another statement of
    /// the session has a cursor open on that one (running it would close that cursor).
    ///
    /// [`StmtCache`]: weir_backend::StmtCache
    fn server_statement_key(&self, id: u32) -> u64 {
        let Some(p) = self.prepared.get(&id) else {
            return 0;
        };
        if let Some(key) = p.cursor {
            return key;
        }
        let shared = p.global.id;
        let taken = self.pins & crate::pins::CURSOR != 0
            && self
                .prepared
                .iter()
                .any(|(other, q)| *other != id && q.cursor == Some(shared));
        if taken {
            p.own_key
        } else {
            shared
        }
    }

    /// The keys of the server statements the session's cursors are open on: never evicted.
    fn cursor_keys(&self) -> Vec<u64> {
        if self.pins & crate::pins::CURSOR == 0 {
            return Vec::new();
        }
        self.prepared.values().filter_map(|p| p.cursor).collect()
    }

    /// Runs an execution on a backend, preparing the statement there first if needed (as
    /// `key`, see [`Session::server_statement_key`]), with retries on another connection.
    /// `None` when the client was answered with an error.
    async fn execute_on_backend(
        &mut self,
        id: u32,
        payload: &[u8],
        seq: u8,
        key: u64,
    ) -> Result<Option<crate::relay::ReplyOutcome>, ClientError> {
        let Some(p) = self.prepared.get(&id) else {
            return Ok(None);
        };
        let expect = execute_expect(p, payload);
        let mut hostgroup = p.hostgroup;
        // What the previous statement left on its connection is read there while the session
        // still keeps it for that statement, as for a query; its diagnostics only where they
        // are (elsewhere, a connection from the pool has another client's cleared first).
        if p.reads_diagnostics {
            if let Some(b) = self.backend.as_ref().filter(|_| diagnostics_on_held(self)) {
                hostgroup = b.server().spec().hostgroup;
            }
        } else if (p.reads_last_insert_id || p.reads_previous_result)
            && (self.keep_for > 0 || self.hold_next)
        {
            if let Some(b) = &self.backend {
                hostgroup = b.server().spec().hostgroup;
            }
        }
        // A statement with an open cursor runs again where the cursor is.
        if p.cursor.is_none() {
            self.route_to(hostgroup);
        }
        let limits = self.execute_limits(id);
        let mut retries = limits.retries;
        let mut depth = self.pipeline_depth_for_execute(id, payload, &limits);
        let mut joined = match (depth, self.prepared.get(&id)) {
            (Some(_), Some(p)) => {
                let (global, params, types) = (p.global.id, p.global.params, p.param_types.clone());
                self.join_pipe_with_execute(global, |sid| {
                    execute_for(payload, sid, params, types.as_deref())
                })
                .await
            }
            _ => None,
        };
        loop {
            let (exec, sent) = match joined.take() {
                Some(exec) => (exec, true),
                None => {
                    if self.acquire(seq).await?.is_none() {
                        return Ok(None);
                    }
                    let server_id = match self.ensure_prepared(id, key, seq, &limits).await? {
                        Ensure::Ready(sid) => sid,
                        Ensure::Refused => return Ok(None),
                        Ensure::Lost(e) if retries > 0 && !self.tied() => {
                            retries -= 1;
                            GlobalStats::inc(&self.shared.stats.query_retries);
                            tracing::info!(session = self.handle.id, error = %e, "re-preparing on another connection");
                            continue;
                        }
                        Ensure::Lost(e) => {
                            let tied = self.tied();
                            self.client.send_err(seq, &lost_backend(&e)).await?;
                            if tied {
                                return Err(ClientError::Closed);
                            }
                            return Ok(None);
                        }
                    };
                    let Some(p) = self.prepared.get(&id) else {
                        return Ok(None);
                    };
                    let exec = execute_for(
                        payload,
                        server_id,
                        p.global.params,
                        p.param_types.as_deref(),
                    );
                    if !p.long_data.is_empty() {
                        // Written with the execution, in one write: a statement stopped before
                        // it is sent (KILL QUERY) leaves no long data on a server statement
                        // the next client may run.
                        let mut out = bytes::BytesMut::new();
                        for chunk in p.long_data.chunks() {
                            weir_wire::packet::write_packet(
                                &mut out,
                                0,
                                &with_server_id(chunk, server_id),
                            );
                        }
                        out.extend_from_slice(&exec.raw);
                        return self
                            .execute_with_long_data(&exec, &out, server_id, seq, &limits, expect)
                            .await;
                    }
                    let sent = match depth {
                        Some(depth) => match self.open_pipe(&exec.raw, depth, true).await {
                            Opened::Yes => true,
                            Opened::No => false,
                            // Nothing ran: the execution goes to another connection.
                            Opened::Lost => continue,
                        },
                        None => false,
                    };
                    (exec, sent)
                }
            };
            let wire: &[u8] = if sent { &[] } else { &exec.raw };
            match self.exchange(&exec, wire, expect, seq, &limits).await? {
                Step::Replied(o) => return Ok(Some(o)),
                Step::Answered => return Ok(None),
                Step::Interrupted => {
                    // Again on a connection of its own, not through a pipe.
                    self.release();
                    depth = None;
                    GlobalStats::inc(&self.shared.stats.query_retries);
                }
                Step::Failed(f) if f.retryable && retries > 0 => {
                    retries -= 1;
                    GlobalStats::inc(&self.shared.stats.query_retries);
                }
                Step::Failed(f) => {
                    self.report_failure(f).await?;
                    return Ok(None);
                }
            }
        }
    }

    /// Runs an execution whose long data `wire` carries before it, once (long data is not kept
    /// for another try). A server statement the execution failed on is reset: the server keeps
    /// some long-data errors until then, and the statement is shared with other clients.
    async fn execute_with_long_data(
        &mut self,
        exec: &Command,
        wire: &[u8],
        server_id: u32,
        seq: u8,
        limits: &Limits,
        expect: Expect,
    ) -> Result<Option<crate::relay::ReplyOutcome>, ClientError> {
        match self.exchange(exec, wire, expect, seq, limits).await? {
            Step::Replied(o) => {
                if o.error.is_some() {
                    if let Some(b) = self.backend.as_mut() {
                        let reset = b
                            .conn()
                            .command(com::STMT_RESET, &server_id.to_le_bytes())
                            .await;
                        if reset.is_err_and(|e| !e.connection_usable()) {
                            self.drop_backend().await;
                        }
                    }
                }
                Ok(Some(o))
            }
            Step::Answered | Step::Interrupted => Ok(None),
            Step::Failed(f) => {
                self.report_failure(f).await?;
                Ok(None)
            }
        }
    }

    /// mysql-pipeline_depth when an execution of statement `id` may go through a pipe: as
    /// for a text query (see `run_decided`), and no cursor or long data.
    fn pipeline_depth_for_execute(&self, id: u32, payload: &[u8], limits: &Limits) -> Option<u32> {
        let m = &self.shared.runtime.load().mysql;
        if m.pipeline_depth <= 1 {
            // Off (the default): nothing more to look up per execution.
            return None;
        }
        let p = self.prepared.get(&id)?;
        let eligible = m.multiplexing
            && m.connection_delay_multiplex.is_zero()
            && p.pipelinable
            && p.cursor.is_none()
            && p.long_data.is_empty()
            && p.exec_pins == 0
            && payload.get(5).is_none_or(|f| f & CURSOR_TYPE_MASK == 0)
            && self.pins == 0
            && !self.hold_next
            && self.keep_for == 0
            && self.backend.is_none()
            && self.autocommit()
            && limits.timeout_rule.is_none()
            && self.effects.is_none();
        eligible.then_some(m.pipeline_depth)
    }

    /// Prepares statement `id` on the held connection as `key` unless it already is. The
    /// prepare is part of the execution: KILL, KILL QUERY and the statement's timeout stop it
    /// as they would the execution (a prepare can wait long for a table's metadata lock).
    async fn ensure_prepared(
        &mut self,
        id: u32,
        key: u64,
        seq: u8,
        limits: &Limits,
    ) -> Result<Ensure, ClientError> {
        if let Some(sid) = self.backend.as_mut().and_then(|b| b.conn().stmts.get(key)) {
            return Ok(Ensure::Ready(sid));
        }
        let server = self.backend.as_ref().map(|b| b.server().clone());
        if !self.mark_running() {
            // A KILL QUERY came for the execution before anything reached the server.
            self.answer_early_kill(seq, server.as_deref()).await?;
            self.release();
            return Ok(Ensure::Refused);
        }
        let outcome = self.prepare_on_held(id, key, seq, limits).await;
        self.clear_running();
        match outcome? {
            Ensure::Lost(_) if self.kill_requested() => {
                // Its connection failed after a KILL: the execution is not run elsewhere.
                self.answer_early_kill(seq, server.as_deref()).await?;
                Ok(Ensure::Refused)
            }
            other => Ok(other),
        }
    }

    /// [`Session::ensure_prepared`] once the prepare is published for KILL QUERY.
    async fn prepare_on_held(
        &mut self,
        id: u32,
        key: u64,
        seq: u8,
        limits: &Limits,
    ) -> Result<Ensure, ClientError> {
        let Some(p) = self.prepared.get(&id) else {
            return Ok(Ensure::Refused);
        };
        let global = p.global.clone();
        let max = self.shared.runtime.load().mysql.max_stmts_per_connection as usize;
        let protected = self.cursor_keys();
        let Some(b) = self.backend.as_mut() else {
            return Ok(Ensure::Refused);
        };
        let server = b.server().clone();
        // The statement resolves names in the schema it was prepared in.
        let conn = b.conn();
        let back_to = match (&global.schema, &conn.schema) {
            (Some(want), have) if have.as_deref() != Some(&**want) => {
                let back = have.clone();
                GlobalStats::inc(&self.shared.stats.com_backend_init_db);
                if let Err(e) = conn.init_db(want).await {
                    return self.prepare_failed(e, &server, seq).await;
                }
                back
            }
            _ => None,
        };
        // And it is read in the charsets and sql_mode it was first prepared in: the connection
        // goes there for the prepare and back (two round trips, only when they differ from the
        // client's now). A failure there leaves the connection in an unknown state: closed.
        let switch = self.parse_context_switch(&global.parse_context);
        let mut prepared = None;
        let mut restored = Ok(());
        if let Some(sw) = &switch {
            restored = self.run_held(&sw.there).await;
        }
        let mut timed_out = false;
        if restored.is_ok() {
            match self.prepare_timed(&global.text, limits).await {
                PrepareTimed::Done(r) => prepared = Some(r),
                PrepareTimed::Stopped(r) => {
                    timed_out = true;
                    prepared = Some(r);
                }
                PrepareTimed::Stuck => {
                    // It did not end after the KILL QUERY: its connection is closed.
                    let err = limits.timeout_error();
                    self.log_error(Some(&server), err.code, &err.message);
                    let tied = self.tied();
                    self.drop_backend().await;
                    self.report_failure(crate::exec::Failure {
                        err,
                        next_seq: seq,
                        retryable: false,
                        tied,
                    })
                    .await?;
                    return Ok(Ensure::Refused);
                }
            }
            if let Some(sw) = &switch {
                restored = self.run_held(&sw.back).await;
            }
        }
        if let Err(e) = restored {
            self.drop_backend().await;
            return Ok(Ensure::Lost(e));
        }
        let Some(b) = self.backend.as_mut() else {
            return Ok(Ensure::Refused);
        };
        let conn = b.conn();
        if let Some(schema) = back_to {
            GlobalStats::inc(&self.shared.stats.com_backend_init_db);
            if let Err(e) = conn.init_db(&schema).await {
                return self.prepare_failed(e, &server, seq).await;
            }
        }
        let Some(prepared) = prepared else {
            return Ok(Ensure::Refused);
        };
        let info = match prepared {
            Ok(info) => info,
            Err(BackendError::Server(_)) if timed_out => {
                return self.prepare_timed_out(limits, &server, seq).await
            }
            Err(BackendError::Server(_)) if self.kill_requested() => {
                // Stopped by KILL QUERY (or KILL): answered as an execution stopped there.
                self.answer_early_kill(seq, Some(&server)).await?;
                self.release();
                return Ok(Ensure::Refused);
            }
            Err(e) => return self.prepare_failed(e, &server, seq).await,
        };
        GlobalStats::inc(&self.shared.stats.com_backend_stmt_prepare);
        let mut closed = Vec::new();
        conn.stmts
            .insert(key, info.statement_id, max, &protected, &mut closed);
        GlobalStats::add(
            &self.shared.stats.com_backend_stmt_close,
            closed.len() as u64,
        );
        if let Err(e) = conn.close_statements(&closed).await {
            self.drop_backend().await;
            return Ok(Ensure::Lost(e));
        }
        if timed_out {
            // Prepared just as the KILL QUERY came: kept, but the statement's time is up.
            return self.prepare_timed_out(limits, &server, seq).await;
        }
        Ok(Ensure::Ready(info.statement_id))
    }

    /// Whether a KILL QUERY (or KILL) came for the command.
    fn kill_requested(&self) -> bool {
        self.handle
            .kill_query_requested
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Answers an execution whose prepare outlived the statement's timeout (the connection
    /// is usable: the prepare ended).
    async fn prepare_timed_out(
        &mut self,
        limits: &Limits,
        server: &Arc<weir_pool::ServerState>,
        seq: u8,
    ) -> Result<Ensure, ClientError> {
        let err = limits.timeout_error();
        self.log_error(Some(server), err.code, &err.message);
        self.client.send_err(seq, &err).await?;
        self.release();
        Ok(Ensure::Refused)
    }

    /// Prepares `text` on the held connection under `limits.timeout`, after which a KILL
    /// QUERY stops it.
    async fn prepare_timed(&mut self, text: &[u8], limits: &Limits) -> PrepareTimed {
        let running = self.running_here();
        let shared = self.shared.clone();
        let Some(b) = self.backend.as_mut() else {
            return PrepareTimed::Stuck;
        };
        let prepare = b.conn().prepare(text);
        tokio::pin!(prepare);
        tokio::select! {
            biased;
            r = &mut prepare => return PrepareTimed::Done(r),
            () = tokio::time::sleep(limits.timeout) => {}
        }
        GlobalStats::inc(&shared.stats.query_timeouts);
        tracing::info!(
            session = self.handle.id,
            "statement timeout while preparing it on a connection: KILL QUERY"
        );
        let delivered = match &running {
            Some(r) => crate::exec::kill_on_backend(&shared, r, true).await,
            None => false,
        };
        if !delivered {
            return PrepareTimed::Stuck;
        }
        match tokio::time::timeout(crate::exec::KILL_GRACE, prepare).await {
            Ok(Ok(info)) => PrepareTimed::Stopped(Ok(info)),
            Ok(Err(e @ BackendError::Server(_))) => PrepareTimed::Stopped(Err(e)),
            Ok(Err(_)) | Err(_) => PrepareTimed::Stuck,
        }
    }

    async fn prepare_failed(
        &mut self,
        e: BackendError,
        server: &Arc<weir_pool::ServerState>,
        seq: u8,
    ) -> Result<Ensure, ClientError> {
        match e {
            BackendError::Server(err) => {
                self.log_error(Some(server), err.code, &err.message);
                self.client.send_err(seq, &err).await?;
                self.release();
                Ok(Ensure::Refused)
            }
            other => {
                self.log_error(Some(server), errcode::ER_LOST_BACKEND, &other.to_string());
                self.drop_backend().await;
                Ok(Ensure::Lost(other))
            }
        }
    }

    /// COM_STMT_FETCH: only where the statement's cursor is open.
    pub(crate) async fn fetch(&mut self, cmd: Command) -> Result<Flow, ClientError> {
        let seq = cmd.last_seq.wrapping_add(1);
        let id = self.statement_id(&cmd);
        let key = match self.prepared.get(&id) {
            Some(p) if self.backend.is_some() && p.cursor.is_some() => p.cursor.unwrap_or(0),
            Some(_) => {
                let e = ErrInfo::new(
                    errcode::ER_STMT_HAS_NO_OPEN_CURSOR,
                    "HY000",
                    format!("The statement ({id}) has no open cursor"),
                );
                self.client.send_err(seq, &e).await?;
                return Ok(Flow::Continue);
            }
            None => {
                self.client
                    .send_err(seq, &unknown_statement(id, com::STMT_FETCH))
                    .await?;
                return Ok(Flow::Continue);
            }
        };
        let sid = self.backend.as_mut().and_then(|b| b.conn().stmts.get(key));
        let Some(sid) = sid else {
            self.client
                .send_err(seq, &unknown_statement(id, com::STMT_FETCH))
                .await?;
            return Ok(Flow::Continue);
        };
        let fetch = Command::from_payload(&with_server_id(&cmd.payload(), sid));
        let limits = Limits::defaults(&self.shared.runtime.load().mysql);
        match self
            .exchange(&fetch, &fetch.raw, Expect::Fetch, seq, &limits)
            .await?
        {
            // The last row went out: the server has closed the cursor, and the connection
            // need not stay with the session for it (drivers that cache their statements
            // may not reset or close it for a long time).
            Step::Replied(o) if o.error.is_none() && o.status & status::LAST_ROW_SENT != 0 => {
                if let Some(p) = self.prepared.get_mut(&id) {
                    p.cursor = None;
                }
                self.update_cursor_pin();
                self.release();
            }
            // The server has no cursor there (whatever closed it): nor has the statement.
            Step::Replied(o)
                if o.error.as_ref().map(|e| e.code)
                    == Some(errcode::ER_STMT_HAS_NO_OPEN_CURSOR) =>
            {
                if let Some(p) = self.prepared.get_mut(&id) {
                    p.cursor = None;
                }
                self.update_cursor_pin();
                self.release();
            }
            // Never on a pipe, so never Interrupted.
            Step::Replied(_) | Step::Answered | Step::Interrupted => {}
            Step::Failed(f) => self.report_failure(f).await?,
        }
        Ok(Flow::Continue)
    }

    /// COM_STMT_RESET: long data dropped; a cursor closed on the server.
    pub(crate) async fn reset_statement(&mut self, cmd: Command) -> Result<Flow, ClientError> {
        let seq = cmd.last_seq.wrapping_add(1);
        let id = self.statement_id(&cmd);
        let Some(p) = self.prepared.get_mut(&id) else {
            self.client
                .send_err(seq, &unknown_statement(id, com::STMT_RESET))
                .await?;
            return Ok(Flow::Continue);
        };
        p.long_data.clear();
        p.long_data_overflow = false;
        p.long_data_refused = false;
        if let Some(key) = p.cursor.take() {
            self.update_cursor_pin();
            let sid = self.backend.as_mut().and_then(|b| b.conn().stmts.get(key));
            if let Some(sid) = sid {
                let reset = Command::from_payload(&with_server_id(&cmd.payload(), sid));
                let limits = Limits::defaults(&self.shared.runtime.load().mysql);
                match self
                    .exchange(&reset, &reset.raw, Expect::Status, seq, &limits)
                    .await?
                {
                    Step::Replied(o) => self.after_reply(&o, 0, None),
                    // Never on a pipe, so never Interrupted.
                    Step::Answered | Step::Interrupted => {}
                    Step::Failed(f) => self.report_failure(f).await?,
                }
                return Ok(Flow::Continue);
            }
        }
        let ok = self.ok_status();
        self.client.send_ok(seq, &ok).await?;
        self.release();
        Ok(Flow::Continue)
    }

    /// COM_STMT_CLOSE (no reply): the statement leaves the session; connections keep it for
    /// other sessions. An open cursor is closed on the server. A connection lost meanwhile
    /// ends a session it was tied to (its transaction is gone), as for any statement.
    pub(crate) async fn close_statement(&mut self, cmd: &Command) -> Result<Flow, ClientError> {
        GlobalStats::inc(&self.shared.stats.com_frontend_stmt_close);
        let id = self.statement_id(cmd);
        if self.last_prepared == Some(id) {
            self.last_prepared = None;
        }
        let Some(p) = self.prepared.remove(&id) else {
            return Ok(Flow::Continue);
        };
        let Some(key) = p.cursor else {
            return Ok(Flow::Continue);
        };
        self.update_cursor_pin();
        if let Some(b) = self.backend.as_mut() {
            if let Some(sid) = b.conn().stmts.get(key) {
                if let Err(e) = b.conn().command(com::STMT_RESET, &sid.to_le_bytes()).await {
                    tracing::debug!(error = %e, "backend failed closing a cursor");
                    if !e.connection_usable() {
                        return self.lose_backend().await;
                    }
                }
            }
        }
        self.release();
        Ok(Flow::Continue)
    }

    /// The held connection failed outside a statement's exchange: closed, and the session
    /// ended if it was tied to it (its transaction or pinned state is gone with it).
    async fn lose_backend(&mut self) -> Result<Flow, ClientError> {
        let tied = self.tied();
        self.drop_backend().await;
        if tied {
            return Err(ClientError::Closed);
        }
        Ok(Flow::Continue)
    }

    /// COM_STMT_SEND_LONG_DATA (no reply): kept until the statement runs, at most
    /// mysql-max_allowed_packet bytes per session (all its statements together: what one
    /// client makes weir hold stays bounded however many statements it prepares). Past that
    /// the statement's chunks are dropped and it is marked so that its execution fails with
    /// ER_NET_PACKET_TOO_LARGE instead of sending a truncated value.
    pub(crate) fn long_data(&mut self, cmd: &Command) {
        let max = self.shared.runtime.load().mysql.max_allowed_packet as usize;
        let id = self.statement_id(cmd);
        let payload = cmd.payload();
        let cost = LongData::cost(payload.len());
        if self.long_data_held + cost > max {
            // The running total only grows (the chunks of statements that ran, were reset or
            // closed are not taken off): counted exactly now, so that this sum over the
            // statements runs at most once per max_allowed_packet bytes received.
            self.long_data_held = self.prepared.values().map(|p| p.long_data.bytes()).sum();
        }
        let Some(p) = self.prepared.get_mut(&id) else {
            return;
        };
        // The server reads nothing of a payload shorter than its header, and refuses the
        // statement's executions after one for a parameter it does not have.
        let Some(param) = payload.get(5..7) else {
            return;
        };
        if u16::from_le_bytes([param[0], param[1]]) >= p.global.params {
            p.long_data = LongData::default();
            p.long_data_refused = true;
            return;
        }
        if p.long_data_overflow || p.long_data_refused {
            return;
        }
        if self.long_data_held + cost > max {
            p.long_data = LongData::default();
            p.long_data_overflow = true;
            return;
        }
        p.long_data.push(&payload);
        self.long_data_held += cost;
    }

    /// Keeps the connection while any statement has a cursor open on it.
    fn update_cursor_pin(&mut self) {
        if self.prepared.values().any(|p| p.cursor.is_some()) {
            self.pins |= crate::pins::CURSOR;
        } else {
            self.pins &= !crate::pins::CURSOR;
        }
    }

    /// The status for replies weir makes itself.
    pub(crate) fn ok_status(&self) -> OkInfo {
        // The transaction flags as the server last sent them (READ ONLY included).
        let mut st = self.backend.as_ref().map_or(0, |b| {
            b.conn_ref().status & (status::IN_TRANS | status::IN_TRANS_READONLY)
        });
        // A session pinned by state weir does not follow (`SET autocommit = 0` in a
        // multi-statement query, or beside an untracked variable) has the server's word for it.
        let autocommit = match &self.backend {
            Some(b) if self.pins != 0 => b.conn_ref().status & status::AUTOCOMMIT != 0,
            _ => self.autocommit(),
        };
        if autocommit {
            st |= status::AUTOCOMMIT;
        }
        // Clients choose how to escape strings from these: an OK without them while the
        // session has NO_BACKSLASH_ESCAPES would make them escape with backslashes (SQL
        // injection).
        st |= self.mode_status;
        OkInfo {
            status: st,
            ..Default::default()
        }
    }
}

/// What executing a prepared statement with this text pins. Unlike the text protocol, no
/// SET, USE or lock call is followed (values come as parameters): any ties the session.
pub(crate) fn prepared_pins(scan: &weir_sql::QueryScan) -> u32 {
    use weir_sql::{Pin, StatementKind};
    let mut pins = scan.run_pins();
    if matches!(scan.kind, StatementKind::Set | StatementKind::Use) || scan.drops_schema {
        pins |= Pin::UNTRACKED;
    }
    pins
}

/// Whether a statement with this text changes nothing, so that it may run again when its
/// backend failed after it was sent: a lone plain SELECT (no locking read, no INTO, no lock
/// function, no sequence advanced, no function that may be a stored one, nothing pinned).
pub(crate) fn repeatable(scan: &weir_sql::QueryScan) -> bool {
    scan.kind == weir_sql::StatementKind::Select
        && scan.statements == 1
        && !scan.locking_read
        && !scan.into
        && !scan.sequence_write
        && !scan.calls_routine
        && !scan.pin.any()
}

/// The most bytes of a prepare's reply kept for its column definitions.
const PREPARE_CAPTURE_LIMIT: usize = 16 * 1024;

/// The column definitions of a prepared statement, as its prepare's reply carried them.
#[derive(Debug, Clone)]
pub(crate) struct ColumnDefs {
    count: u64,
    /// The definition packets, headers included.
    packets: bytes::Bytes,
}

impl ColumnDefs {
    /// Those of a COM_STMT_PREPARE reply as relayed; None without columns or when the reply
    /// is not whole.
    pub(crate) fn of_prepare_reply(reply: &[u8]) -> Option<ColumnDefs> {
        use weir_wire::PacketHeader;
        let mut bounds = Vec::new();
        let mut pos = 0;
        while let Some(h) = PacketHeader::parse(&reply[pos..]) {
            let end = pos + 4 + h.len;
            reply.get(pos..end)?;
            bounds.push((pos, end));
            pos = end;
        }
        let &(ok_start, ok_end) = bounds.first()?;
        let ok = &reply[ok_start + 4..ok_end];
        if ok.first() != Some(&0) || ok.len() < 9 {
            return None;
        }
        let columns = usize::from(u16::from_le_bytes([ok[5], ok[6]]));
        let params = usize::from(u16::from_le_bytes([ok[7], ok[8]]));
        let first = 1 + params + usize::from(params > 0);
        let defs = bounds
            .get(first..first + columns)
            .filter(|d| !d.is_empty())?;
        Some(ColumnDefs {
            count: columns as u64,
            packets: bytes::Bytes::copy_from_slice(&reply[defs[0].0..defs[defs.len() - 1].1]),
        })
    }

    /// Appends the start of a result set with these columns (count, definitions, and the EOF
    /// after them for a client without CLIENT_DEPRECATE_EOF) from `seq`; returns the next id.
    pub(crate) fn write(
        &self,
        out: &mut bytes::BytesMut,
        seq: u8,
        client_caps: u32,
        status: u16,
    ) -> u8 {
        let mut count = bytes::BytesMut::new();
        weir_wire::io::put_lenenc(&mut count, self.count);
        let next = weir_wire::packet::write_packet(out, seq, &count);
        let start = out.len();
        out.extend_from_slice(&self.packets);
        let mut next = weir_wire::packet::renumber(&mut out[start..], next);
        if client_caps & weir_wire::cap::DEPRECATE_EOF == 0 {
            weir_wire::msg::write_eof(out, next, status, 0);
            next = next.wrapping_add(1);
        }
        next
    }
}

/// The reply an execution of `p` gets: one that may open a cursor when it asks for one, except
/// for a CALL (the server opens none for it; a procedure's own cursors do not end its results).
fn execute_expect(p: &Prepared, payload: &[u8]) -> Expect {
    if payload.get(5).is_some_and(|f| f & CURSOR_TYPE_MASK != 0)
        && p.command != weir_sql::SqlCommand::Call
    {
        Expect::CursorResultSets
    } else {
        Expect::ResultSets
    }
}

/// Whether an execution's reply left a cursor open.
fn o_cursor(o: &crate::relay::ReplyOutcome) -> bool {
    o.error.is_none() && o.status & status::CURSOR_EXISTS != 0
}

/// The COM_STMT_SEND_LONG_DATA payloads of a statement, kept until it runs: in one buffer, so
/// that a client sending many small chunks costs their bytes rather than an allocation each.
#[derive(Debug, Default)]
pub(crate) struct LongData {
    buf: Vec<u8>,
    /// Where each payload ends in `buf` (bounded by mysql-max_allowed_packet, under 4 GiB).
    ends: Vec<u32>,
}

impl LongData {
    /// What keeping a payload of `len` bytes costs, as counted against mysql-max_allowed_packet.
    fn cost(len: usize) -> usize {
        len + std::mem::size_of::<u32>()
    }

    fn push(&mut self, payload: &[u8]) {
        self.buf.extend_from_slice(payload);
        self.ends
            .push(u32::try_from(self.buf.len()).unwrap_or(u32::MAX));
    }

    /// Whether no payload is kept.
    pub(crate) fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Forgets the payloads, and the memory they took (a client that once sent a big value
    /// to each of many statements must not keep weir holding that much).
    pub(crate) fn clear(&mut self) {
        if self.buf.capacity() > 0 || self.ends.capacity() > 0 {
            *self = LongData::default();
        }
    }

    /// What the kept payloads cost ([`LongData::cost`] each).
    fn bytes(&self) -> usize {
        self.buf.len() + self.ends.len() * std::mem::size_of::<u32>()
    }

    /// The payloads, in the order they came.
    pub(crate) fn chunks(&self) -> impl Iterator<Item = &[u8]> {
        let mut start = 0usize;
        self.ends.iter().map(move |&end| {
            let end = end as usize;
            let chunk = self.buf.get(start..end).unwrap_or_default();
            start = end;
            chunk
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {

    #[test]
    fn long_data_keeps_each_payload_in_one_buffer() {
        let mut d = LongData::default();
        assert!(d.is_empty());
        for chunk in [&b"\x18abc"[..], b"", b"\x18d"] {
            d.push(chunk);
        }
        let chunks: Vec<&[u8]> = d.chunks().collect();
        assert_eq!(chunks, [&b"\x18abc"[..], b"", b"\x18d"]);
        assert_eq!(d.bytes(), 6 + 3 * 4);
        assert_eq!(LongData::cost(6), 10);
        d.clear();
        assert!(d.is_empty() && d.chunks().next().is_none());
    }
    use super::*;

    /// The parse context of a session that ran `set`.
    fn parsed_in(set: &str) -> weir_sql::SessionVars {
        let mut vars = weir_sql::SessionVars::default();
        match weir_sql::parse_set(set.as_bytes()) {
            weir_sql::SetEffect::Tracked(a) => vars.apply(&a),
            other => panic!("{set}: {other:?}"),
        }
        vars.parse_context()
    }

    #[test]
    fn column_defs_of_a_prepare_reply_start_a_result_set_again() {
        use weir_wire::packet::write_packet;
        // A prepare OK (1 column, 1 parameter), the parameter and its EOF, the column and its
        // EOF, sequence ids as relayed.
        let mut reply = bytes::BytesMut::new();
        let mut seq = write_packet(&mut reply, 1, &[0, 9, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0]);
        seq = write_packet(&mut reply, seq, b"param");
        seq = write_packet(&mut reply, seq, &[0xfe, 0, 0, 2, 0]);
        seq = write_packet(&mut reply, seq, b"column");
        write_packet(&mut reply, seq, &[0xfe, 0, 0, 2, 0]);
        let defs = ColumnDefs::of_prepare_reply(&reply).unwrap();
        let mut out = bytes::BytesMut::new();
        assert_eq!(defs.write(&mut out, 1, 0, 2), 4);
        assert_eq!(
            &out[..],
            b"\x01\0\0\x01\x01\x06\0\0\x02column\x05\0\0\x03\xfe\0\0\x02\0"
        );
        let mut out = bytes::BytesMut::new();
        let eofless = weir_wire::cap::DEPRECATE_EOF;
        assert_eq!(defs.write(&mut out, 5, eofless, 2), 7);
        // No columns, or a reply cut short: nothing to keep.
        let mut no_columns = bytes::BytesMut::new();
        write_packet(&mut no_columns, 1, &[0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(ColumnDefs::of_prepare_reply(&no_columns).is_none());
        assert!(ColumnDefs::of_prepare_reply(&reply[..reply.len() - 3]).is_none());
    }

    #[test]
    fn registry_shares_statements_and_renews_changed_ones() {
        let r = StmtRegistry::default();
        let plain = weir_sql::SessionVars::default();
        let a = r.intern("u", Some("db"), &plain, b"SELECT ?", (1, 1), 100);
        let b = r.intern("u", Some("db"), &plain, b"SELECT ?", (1, 1), 100);
        assert!(Arc::ptr_eq(&a, &b));
        let other_schema = r.intern("u", Some("db2"), &plain, b"SELECT ?", (1, 1), 100);
        assert_ne!(a.id, other_schema.id);
        let ansi = parsed_in("SET sql_mode = 'ANSI_QUOTES'");
        let other_mode = r.intern("u", Some("db"), &ansi, b"SELECT ?", (1, 1), 100);
        assert_ne!(a.id, other_mode.id, "read in another sql_mode");
        let same_mode = r.intern("u", Some("db"), &ansi, b"SELECT ?", (1, 1), 100);
        assert!(Arc::ptr_eq(&other_mode, &same_mode));
        assert_eq!(same_mode.parse_context, ansi);
        let other_vars = parsed_in("SET time_zone = '+01:00'");
        let same = r.intern("u", Some("db"), &other_vars, b"SELECT ?", (1, 1), 100);
        assert!(
            Arc::ptr_eq(&a, &same),
            "time_zone does not change how text is read"
        );
        drop((other_mode, same_mode, same));
        let changed = r.intern("u", Some("db"), &plain, b"SELECT ?", (1, 2), 100);
        assert_ne!(a.id, changed.id);
        assert_eq!(r.len(), 3, "db (changed), db2, db in ANSI_QUOTES");
        // At the limit, statements nobody holds are forgotten; held ones stay.
        drop((b, other_schema));
        let c = r.intern("u", None, &plain, b"SELECT 1", (0, 1), 2);
        assert_eq!(
            r.len(),
            2,
            "the db2 and ANSI_QUOTES statements, held by nobody, were forgotten"
        );
        let changed_again = r.intern("u", Some("db"), &plain, b"SELECT ?", (1, 2), 2);
        assert!(
            Arc::ptr_eq(&changed, &changed_again),
            "a held statement stays"
        );
        drop((changed, changed_again));
        let _d = r.intern("u", None, &plain, b"SELECT 2", (0, 1), 2);
        assert_eq!(r.len(), 2);
        let c_again = r.intern("u", None, &plain, b"SELECT 1", (0, 1), 2);
        assert!(Arc::ptr_eq(&c, &c_again));
    }

    #[test]
    fn execute_params_leave_out_the_id_and_the_types() {
        // 2 params, types bound: id, flags, iterations, bitmap, flag 1, 4 type bytes, values.
        let with_types = [
            0x17, 9, 0, 0, 0, 0, 1, 0, 0, 0, 0b10, 1, 3, 0, 15, 0, 7, 0, 0, 0,
        ];
        let without = [0x17, 5, 0, 0, 0, 0, 1, 0, 0, 0, 0b10, 0, 7, 0, 0, 0];
        let a = execute_params(&with_types, 2).unwrap();
        assert_eq!(a, execute_params(&without, 2).unwrap());
        assert_eq!(a, (&[0, 1, 0, 0, 0, 0b10][..], &[7, 0, 0, 0][..]));
        let other_value = [0x17, 5, 0, 0, 0, 0, 1, 0, 0, 0, 0b10, 0, 8, 0, 0, 0];
        assert_ne!(a, execute_params(&other_value, 2).unwrap());
        let none = execute_params(&[0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0], 0).unwrap();
        assert_eq!((none.0.len(), none.1.len()), (5, 0));
        assert_eq!(execute_params(&without[..10], 2), None);
        assert_eq!(execute_params(&with_types[..13], 2), None);
    }

    #[test]
    fn bound_flag_sits_after_the_null_bitmap() {
        // id, flags, iteration count, 1 byte of null bitmap for 3 params, then the flag.
        let p = [0x17, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1];
        assert_eq!(bound_flag_offset(&p, 3), Some(11));
        assert_eq!(bound_flag_offset(&p, 0), None);
        assert_eq!(bound_flag_offset(&p[..11], 3), None);
    }
}
