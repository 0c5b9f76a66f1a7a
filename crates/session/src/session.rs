//! The session: accept → handshake → command loop → cleanup, and the backend connection it
//! holds between statements only when something ties it there.

use crate::activity::{self, SLEEP};
use crate::auth::{handshake, LoginError};
use crate::client::{ClientConn, ClientError, Command};
use crate::registry::{Running, SessionHandle};
use crate::state::SyncOutcome;
use crate::{GlobalStats, Shared};
use std::collections::HashMap;

/// A session's prepared statements by client statement id. Weir assigns the ids, so a fast
/// non-keyed hasher is safe (with SipHash, the lookups were a few % of a cached execution).
pub(crate) type PreparedMap = HashMap<u32, Prepared, foldhash::fast::RandomState>;
use std::sync::Arc;
use std::time::{Duration, Instant};
use weir_backend::{BackendError, Stream};
use weir_config::User;
use weir_pool::{LoginTemplate, PoolError, PoolKey, PooledConn, ServerState};
use weir_sql::SqlCommand;
use weir_stats::ErrorKey;
use weir_wire::msg::ErrInfo;
use weir_wire::{com, errcode, status};

/// One client session.
pub struct Session {
    pub(crate) shared: Arc<Shared>,
    pub(crate) handle: Arc<SessionHandle>,
    pub(crate) client: ClientConn,
    pub(crate) user: Arc<User>,
    /// How to log in to backends as this client; shared with the registry (cheap to clone).
    pub(crate) login: Arc<LoginTemplate>,
    /// Schema the client is in; brought onto whichever backend runs its next statement.
    pub(crate) schema: Option<String>,
    pub(crate) hostgroup: u32,
    /// The backend connection held across statements, if any.
    pub(crate) backend: Option<PooledConn>,
    /// Reasons (weir_sql::Pin bits) that keep `backend` with this session until it ends.
    pub(crate) pins: u32,
    /// Statements left during which the connection stays by affinity (after an auto-increment
    /// insert, or a statement with warnings) unless other statements wait for a connection.
    pub(crate) keep_for: u32,
    /// When the auto-increment affinity of `keep_for` ends whatever statements remain
    /// (mysql-auto_increment_delay_multiplex_timeout_ms).
    pub(crate) keep_until: Option<tokio::time::Instant>,
    /// The next statement must run on the held connection (after SQL_CALC_FOUND_ROWS, or SET
    /// TRANSACTION for the next transaction).
    pub(crate) hold_next: bool,
    /// The session variables the client set, replayed on whichever connection it gets.
    pub(crate) vars: weir_sql::SessionVars,
    /// Locks and named statements the client holds on its connection.
    pub(crate) held: crate::state::Held,
    /// What the current statement changes when it succeeds.
    pub(crate) effects: crate::state::Effects,
    /// The client's LAST_INSERT_ID(), from the last OK packet that carried one.
    pub(crate) last_insert_id: u64,
    /// What ROW_COUNT() returns on the server after the client's last statement, when weir
    /// saw its reply whole (`None`: unknown, the server is asked).
    pub(crate) row_count: Option<i64>,
    /// What FOUND_ROWS() returns on the server after the client's last statement, when that
    /// was a SELECT whose rows weir relayed or answered from the cache (`None`: the server
    /// is asked).
    pub(crate) found_rows: Option<u64>,
    /// The client's last statement was answered from the query cache: what a statement reads
    /// of it is known to weir, whatever connection the session holds.
    pub(crate) after_hit: bool,
    /// The statement runs on the reader hostgroup in place of an absent writer
    /// ([`Session::state_to_reader_while_writer_away`]): nothing it leaves may pin there.
    pub(crate) on_borrowed_reader: bool,
    /// COM_CHANGE_USER attempts refused so far: after 3, the server refuses the command.
    pub(crate) failed_change_user: u8,
    /// Whether the client's last statement left no warning or error on the server (a fresh
    /// session has none): `SHOW WARNINGS` and the like are then answered by weir, empty,
    /// rather than from whichever connection they would land on.
    pub(crate) no_diagnostics: bool,
    /// The server's error for the last query, when it failed: what `SHOW WARNINGS` / `SHOW
    /// ERRORS` show then, answered by weir once the connection is gone.
    pub(crate) last_error: Option<ErrInfo>,
    /// The connection, as held then ([`Session::held_conn`]), that holds the client's
    /// current diagnostics on the server: where its last statement that raised or cleared
    /// them ran. Statements reading them run there while the session still holds it, and are
    /// answered by weir otherwise (from `last_error`), never from another connection.
    pub(crate) diag_on: Option<HeldConn>,
    /// For a statement that leaves the diagnostics in place, while it runs: `diag_on` before
    /// it, and whether they were warnings on that connection (`after_reply`).
    pub(crate) carry_diag: Option<(Option<HeldConn>, bool)>,
    /// Statements that left warnings in place, each keeping their connection one more
    /// statement, since those warnings came (bounded by [`MAX_WARNINGS_CARRIED`]).
    pub(crate) warnings_carried: u8,
    /// Counts the connections the session took (pool or pipe), so that one taken again later
    /// is not mistaken for the one it held before.
    pub(crate) held_gen: u32,
    /// Bytes of COM_STMT_SEND_LONG_DATA held for the client's statements, as a running total
    /// that may count some already let go (`Session::long_data`).
    pub(crate) long_data_held: usize,
    /// Prepared statements by id: their command and text, for the commands counters and the
    /// processlist of COM_STMT_EXECUTE.
    /// The client's statements by the ids weir gave them; looked up at every execution.
    pub(crate) prepared: PreparedMap,
    /// The last statement id handed to the client.
    pub(crate) next_stmt_id: u32,
    /// The statement of the last successful COM_STMT_PREPARE, which MariaDB's statement id
    /// 0xFFFFFFFF names (clients that send PREPARE and EXECUTE back to back use it); `None`
    /// after a failed prepare or once it is closed.
    pub(crate) last_prepared: Option<u32>,
    /// For a COM_STMT_PREPARE being relayed: the id the client gets instead of the server's.
    pub(crate) reply_stmt_id: Option<u32>,
    /// For a COM_STMT_EXECUTE: the column definitions of its statement, sent before weir's
    /// own ERR 1317 when the execution is killed before it reached a backend.
    pub(crate) early_kill_columns: Option<crate::stmt::ColumnDefs>,
    /// The statement command of the command being handled, counted when it ends.
    pub(crate) counted: Option<SqlCommand>,
    /// When the backend's reply to the current command was fully relayed (the relay reads
    /// the clock there anyway; reused rather than read again).
    pub(crate) reply_end: Option<Instant>,
    /// When the current command arrived.
    pub(crate) cmd_started: Instant,
    /// Digest text of the current query; reused so that digests allocate nothing.
    pub(crate) digest_buf: Vec<u8>,
    /// What the rules decided for the current query; reused across queries.
    pub(crate) decision: weir_rules::Decision,
    /// Flag the next query starts its rule evaluation with (a rule's next_query_flagIN).
    pub(crate) flag_in: i32,
    /// Until when an idle connection stays with the session (mysql-connection_delay_multiplex_ms).
    pub(crate) hold_until: Option<tokio::time::Instant>,
    /// When an idle client is disconnected.
    pub(crate) idle: IdleClock,
    /// The statement timer, reset for each command sent to a backend (see `exec`).
    pub(crate) timer: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// The query cache key of the current statement; reused across statements.
    pub(crate) cache_key: Vec<u8>,
    /// Where the reply of a statement that fills the query cache is copied while relayed.
    pub(crate) capture: Option<crate::relay::Capture>,
    /// Whether the query cache answered the current command.
    pub(crate) cache_hit: bool,
    /// Whether the current command may run again on another connection after the backend
    /// failed once it had been sent: true unless it may have changed something.
    pub(crate) repeatable: bool,
    /// The current command replaces the session's schema (`USE`, COM_INIT_DB): the schema
    /// it had is not brought to the connection first (it may be gone, dropped by another
    /// client, and the command must still work).
    pub(crate) replacing_schema: bool,
    /// The sql_mode status flags (NO_BACKSLASH_ESCAPES, ANSI_QUOTES) of the last reply the
    /// session got from a backend, repeated in the OKs weir makes itself.
    pub(crate) mode_status: u16,
    /// Whether the current statement may go through a pipe, behind other clients' statements
    /// (see `pipeline`); decided with the rules, used by the first attempt only.
    pub(crate) pipelinable: bool,
    /// When the current statement went through a pipe: the held connection is to be passed
    /// on to the statements behind it.
    pub(crate) pipe: Option<crate::pipeline::PipeGuard>,
}

/// What a query rule answers instead of running a statement.
#[derive(Clone)]
pub(crate) enum RuleAnswer {
    /// `error_msg`: ERROR 1148 with this message.
    Error(Arc<str>),
    /// `OK_msg`: OK with this message.
    Ok(Arc<str>),
}

impl RuleAnswer {
    /// The answer a decision carries, `error_msg` first as for queries.
    pub(crate) fn of(d: &weir_rules::Decision) -> Option<RuleAnswer> {
        match (&d.error_msg, &d.ok_msg) {
            (Some(m), _) => Some(RuleAnswer::Error(m.clone())),
            (None, Some(m)) => Some(RuleAnswer::Ok(m.clone())),
            (None, None) => None,
        }
    }
}

/// A statement prepared by the client.
pub(crate) struct Prepared {
    /// Its command (SELECT, INSERT...), under which its executions are counted.
    pub(crate) command: SqlCommand,
    /// Its text, truncated to [`activity::INFO_MAX`] bytes.
    pub(crate) text: Box<str>,
    /// The timeout a query rule gave it when it was prepared, with that rule's id.
    pub(crate) timeout: Option<(Duration, u32)>,
    /// Its digest hash and text: executions are counted in stats_mysql_query_digest.
    pub(crate) digest: u64,
    /// Its digest text.
    pub(crate) digest_text: Box<[u8]>,
    /// What a query rule said about caching its executions, when it is cacheable at all.
    pub(crate) cache: Option<crate::cache::CacheRule>,
    /// Whether its text may be cached at all (`cache::cacheable_statement`).
    pub(crate) cacheable: bool,
    /// The generation of the rules `hostgroup`, `cache` and `timeout` come from (0: none,
    /// the session was tied at its prepare): after a LOAD MYSQL QUERY RULES TO RUNTIME, the
    /// next execution reads them again from the new rules.
    pub(crate) rules_generation: u64,
    /// The rule chain's flag its prepare was evaluated with (`next_query_flagIN`), for that.
    pub(crate) flag_in: i32,
    /// The statement in the global registry.
    pub(crate) global: Arc<crate::stmt::GlobalStmt>,
    /// The hostgroup the rules sent it to when it was prepared; its executions go there.
    pub(crate) hostgroup: u32,
    /// A rule's `error_msg` or `OK_msg` for its text: its executions get that answer
    /// instead of running (a rule refusing a statement is not bypassed by preparing it).
    pub(crate) rule_answer: Option<RuleAnswer>,
    /// Parameter types of the last execution that sent them.
    pub(crate) param_types: Option<Box<[u8]>>,
    /// COM_STMT_SEND_LONG_DATA payloads waiting for the next execution.
    pub(crate) long_data: crate::stmt::LongData,
    /// Whether the long data went over mysql-max_allowed_packet (and was dropped).
    pub(crate) long_data_overflow: bool,
    /// Whether long data came for a parameter it does not have: as on the server, its
    /// executions fail until COM_STMT_RESET.
    pub(crate) long_data_refused: bool,
    /// The key (in the held connection's statement cache) of the server statement its last
    /// execution left a cursor open on.
    pub(crate) cursor: Option<u64>,
    /// Its key for a server statement of its own, used while another statement of the session
    /// has a cursor open on the one shared by their text (running that one would close it).
    pub(crate) own_key: u64,
    /// What running it ties the session to its connection with: the state a prepared
    /// statement can change is not followed (its parameters are not read), so any is pinned.
    pub(crate) exec_pins: u32,
    /// Whether an execution changes nothing, so that it may run again after a failure.
    pub(crate) repeatable: bool,
    /// Whether it may also go behind another client's statement (mysql-pipeline_depth): it
    /// is repeatable and reads nothing the previous statement left on the connection.
    pub(crate) pipelinable: bool,
    /// Whether it is `SET STATEMENT ... FOR`, whose reply's sql_mode flags are not the session's.
    pub(crate) statement_scoped_set: bool,
    /// Whether it reads LAST_INSERT_ID(): the client's is brought to the connection first.
    pub(crate) reads_last_insert_id: bool,
    /// Whether it reads what the previous statement left (ROW_COUNT(), FOUND_ROWS()): it
    /// runs on the connection the session still keeps for that statement, if any.
    pub(crate) reads_previous_result: bool,
    /// Whether it reads the diagnostics (SHOW WARNINGS, `@@warning_count`...).
    pub(crate) reads_diagnostics: bool,
    /// Whether it uses SQL_CALC_FOUND_ROWS: FOUND_ROWS() after it is the server's count.
    pub(crate) calc_found_rows: bool,
    /// The column definitions of its prepare's reply (packets with headers), if it has
    /// columns: a server sends them before the ERR of an execution killed while it runs,
    /// and weir does too for one killed before it reached a server.
    pub(crate) column_defs: Option<crate::stmt::ColumnDefs>,
}

/// What the command loop does next.
pub(crate) enum Flow {
    Continue,
    Quit,
}

/// The schema a connection is brought to for a client that has none (see `sync_schema`).
const NO_SCHEMA: &str = "information_schema";

/// How long a schema a login found on a backend is taken to exist for later logins.
pub(crate) const LOGIN_SCHEMA_TRUST: Duration = Duration::from_secs(60);

/// How long a login waits to check its schema on a backend before it is let in unchecked
/// (the first statement then finds out, as without the check).
const LOGIN_SCHEMA_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// Entries of `Shared::login_schemas` past which the expired ones are dropped.
const LOGIN_SCHEMAS_MAX: usize = 4096;

/// Serves one accepted client connection until it ends.
pub async fn serve(shared: Arc<Shared>, stream: Stream) {
    serve_client(shared, ClientConn::new(stream)).await
}

/// As [`serve`], for a TCP connection whose peer and local addresses the listener knows.
pub async fn serve_tcp(
    shared: Arc<Shared>,
    stream: Stream,
    peer: std::net::SocketAddr,
    local: Option<std::net::SocketAddr>,
) {
    serve_client(shared, ClientConn::with_addrs(stream, Some(peer), local)).await
}

async fn serve_client(shared: Arc<Shared>, mut client: ClientConn) {
    GlobalStats::inc(&shared.stats.client_connections_created);
    let runtime = shared.runtime.load_full();
    let registration = shared
        .registry
        .register(client.host.clone(), client.port, &shared.shutdown);
    let handle = registration.handle.clone();
    client.killed = Some(handle.killed_write.clone());
    if shared.registry.len() > runtime.mysql.max_connections as usize {
        GlobalStats::inc(&shared.stats.client_connections_aborted);
        GlobalStats::inc(&shared.stats.access_denied_max_connections);
        let e = ErrInfo::new(errcode::ER_CON_COUNT_ERROR, "08004", "Too many connections");
        let _ = client.send_err(0, &e).await;
        return;
    }
    let timeout = runtime.mysql.connect_timeout_client;
    let login =
        match tokio::time::timeout(timeout, handshake(&shared, &mut client, handle.id)).await {
            Ok(Ok(l)) => l,
            Ok(Err(LoginError::Refused)) | Ok(Err(LoginError::Io(_))) => {
                GlobalStats::inc(&shared.stats.client_connections_aborted);
                return;
            }
            Err(_) => {
                GlobalStats::inc(&shared.stats.client_connections_aborted);
                tracing::info!(host = %client.host, "client handshake timed out");
                return;
            }
        };
    if !shared
        .registry
        .enter_user(&login.user.username, login.user.max_connections)
    {
        GlobalStats::inc(&shared.stats.client_connections_aborted);
        GlobalStats::inc(&shared.stats.access_denied_max_user_connections);
        let e = ErrInfo::new(
            errcode::ER_CON_COUNT_ERROR,
            "08004",
            format!(
                "Too many connections for user '{}' (max_connections {})",
                login.user.username, login.user.max_connections
            ),
        );
        let _ = client.send_err(login.next_seq, &e).await;
        return;
    }
    *handle.user.lock() = login.user.username.clone();
    let schema = login
        .database
        .clone()
        .or_else(|| login.user.default_schema.clone());
    let mut capabilities = weir_backend::pool_key_capabilities(client.caps);
    if !shared.runtime.load().mysql.client_found_rows {
        // The DBA's choice (mysql-client_found_rows = false): backends count changed rows
        // for every client, which then share connections whatever they asked for.
        capabilities &= !weir_wire::cap::FOUND_ROWS;
    }
    let key = PoolKey {
        username: login.user.username.as_str().into(),
        capabilities,
        mariadb_capabilities: client.mariadb_caps,
    };
    let ignore_space = client.caps & weir_wire::cap::IGNORE_SPACE != 0;
    let multi_statements = client.caps & weir_wire::cap::MULTI_STATEMENTS != 0;
    if login.user.fast_forward {
        let template = LoginTemplate {
            key,
            credential: login.credential.clone(),
            schema,
            collation: login.collation,
            ignore_space,
            multi_statements,
        };
        let hostgroup = login.user.default_hostgroup;
        // Boxed, as the login check below: what only some sessions run stays out of every
        // session's task.
        Box::pin(crate::fast_forward::serve(
            &shared,
            &handle,
            &mut client,
            hostgroup,
            template,
            login.next_seq,
        ))
        .await;
        handle.publish_bytes(client.bytes_in, client.bytes_out);
        drop(registration);
        return;
    }
    let mut session = Session {
        hostgroup: login.user.default_hostgroup,
        login: Arc::new(LoginTemplate {
            key,
            credential: login.credential.clone(),
            schema: schema.clone(),
            collation: login.collation,
            ignore_space,
            multi_statements,
        }),
        shared,
        handle,
        client,
        user: login.user.clone(),
        schema,
        backend: None,
        pins: 0,
        keep_for: 0,
        keep_until: None,
        hold_next: false,
        vars: weir_sql::SessionVars::default(),
        held: crate::state::Held::default(),
        effects: crate::state::Effects::default(),
        last_insert_id: 0,
        row_count: None,
        found_rows: None,
        after_hit: false,
        on_borrowed_reader: false,
        failed_change_user: 0,
        no_diagnostics: true,
        last_error: None,
        diag_on: None,
        carry_diag: None,
        warnings_carried: 0,
        held_gen: 0,
        long_data_held: 0,
        prepared: PreparedMap::default(),
        next_stmt_id: 0,
        last_prepared: None,
        reply_stmt_id: None,
        early_kill_columns: None,
        counted: None,
        reply_end: None,
        cmd_started: Instant::now(),
        digest_buf: Vec::new(),
        decision: weir_rules::Decision::default(),
        flag_in: 0,
        hold_until: None,
        idle: IdleClock::new(),
        timer: Box::pin(tokio::time::sleep(Duration::MAX)),
        cache_key: Vec::new(),
        capture: None,
        cache_hit: false,
        repeatable: true,
        replacing_schema: false,
        mode_status: 0,
        pipelinable: false,
        pipe: None,
    };
    session.publish_idle(Instant::now());
    // Boxed: a backend round trip made once per login, whose future would otherwise stay in
    // the task of every idle client.
    if login.database.is_some() && !Box::pin(session.login_schema_exists(login.next_seq)).await {
        session.finish().await;
        session
            .handle
            .publish_bytes(session.client.bytes_in, session.client.bytes_out);
        drop(registration);
        return;
    }
    let ok = weir_wire::msg::OkInfo {
        status: status::AUTOCOMMIT,
        ..Default::default()
    };
    if session.client.send_ok(login.next_seq, &ok).await.is_err() {
        return;
    }
    session.run().await;
    session.finish().await;
    session
        .handle
        .publish_bytes(session.client.bytes_in, session.client.bytes_out);
    drop(registration);
}

/// No limit, for idle clients (mysql-wait_timeout = 0): a year, beyond any setting.
const IDLE_FAR: Duration = Duration::from_secs(365 * 24 * 3600);

/// What decides when an idle client is disconnected ([`Session::idle_deadline`]).
pub(crate) struct IdleClock {
    /// When the transaction the session holds open began (the end of the statement whose
    /// reply first showed it), for mysql-max_transaction_time.
    trx_since: Option<Instant>,
    /// Fires at (or before) the moment the client is disconnected; re-armed only when that
    /// moment comes sooner, or when it fires early.
    timer: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// When `timer` fires.
    armed: Instant,
    /// When the client's last command ended.
    last_active: Instant,
    /// Whether the command running began or ended a transaction (`COMMIT AND CHAIN` and
    /// `COMMIT; BEGIN` leave one open, a new one).
    pub(crate) transaction_boundary: bool,
}

impl IdleClock {
    /// A clock for a client that just logged in.
    pub(crate) fn new() -> IdleClock {
        let now = Instant::now();
        IdleClock {
            trx_since: None,
            timer: Box::pin(tokio::time::sleep(Duration::MAX)),
            armed: now + IDLE_FAR,
            transaction_boundary: false,
            last_active: now,
        }
    }
}

impl Session {
    /// When an idle client is disconnected, and why: after mysql-wait_timeout (or the
    /// client's own session wait_timeout, in seconds, when smaller), sooner with a
    /// transaction open (mysql-max_transaction_idle_time, and mysql-max_transaction_time
    /// from the transaction's start).
    fn idle_deadline(&self) -> (Instant, &'static str) {
        let now = self.idle.last_active;
        let rt = self.shared.runtime.load();
        let m = &rt.mysql;
        let mut idle = if m.wait_timeout.is_zero() {
            IDLE_FAR
        } else {
            m.wait_timeout
        };
        let own = self
            .vars
            .system("wait_timeout")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|&s| s > 0)
            .map(Duration::from_secs);
        if let Some(own) = own {
            idle = idle.min(own);
        }
        let mut deadline = (now + idle, "wait_timeout");
        if let Some(since) = self.idle.trx_since {
            let trx_idle = now + m.max_transaction_idle_time;
            if trx_idle < deadline.0 {
                deadline = (trx_idle, "max_transaction_idle_time");
            }
            let trx_time = since + m.max_transaction_time;
            if trx_time < deadline.0 {
                deadline = (trx_time, "max_transaction_time");
            }
        }
        deadline
    }

    async fn run(&mut self) {
        loop {
            let (max, long_query) = {
                let rt = self.shared.runtime.load();
                (
                    rt.mysql.max_allowed_packet as usize,
                    rt.mysql.long_query_time,
                )
            };
            let hold = self.hold_until;
            // A connection kept only by affinity goes back as soon as another statement
            // waits for one, even while this client is idle.
            let affinity = match &self.backend {
                Some(b) if !self.tied() => Some(b.server().clone()),
                _ => None,
            };
            let (deadline, why) = self.idle_deadline();
            if deadline < self.idle.armed {
                self.idle.armed = deadline;
                self.idle.timer.as_mut().reset(deadline.into());
            }
            let cmd = tokio::select! {
                biased;
                r = self.client.read_command(max) => r,
                _ = self.handle.kill.cancelled() => break,
                () = &mut self.idle.timer => {
                    if Instant::now() < deadline {
                        // Armed for a sooner moment than now applies (a transaction ended).
                        self.idle.armed = deadline;
                        self.idle.timer.as_mut().reset(deadline.into());
                        continue;
                    }
                    // Closed as the server closes an idle client: without a word; a
                    // transaction left open is rolled back with the connection.
                    tracing::info!(session = self.handle.id, user = %self.login.key.username, reason = why, "idle client connection closed");
                    break;
                }
                _ = async { if let Some(s) = &affinity { s.wanted().await } }, if affinity.is_some() => {
                    self.keep_for = 0;
                    self.keep_until = None;
                    self.give_back();
                    self.publish_idle(Instant::now());
                    continue;
                }
                _ = tokio::time::sleep_until(hold.unwrap_or_else(tokio::time::Instant::now)), if hold.is_some() => {
                    // The delay ran out with the client idle: the connection goes back.
                    if !self.tied() {
                        self.keep_for = 0;
                        self.keep_until = None;
                        self.give_back();
                        self.publish_idle(Instant::now());
                    }
                    self.hold_until = None;
                    continue;
                }
            };
            let cmd = match cmd {
                Ok(c) => c,
                Err(ClientError::TooLarge(n)) => {
                    let e = ErrInfo::new(
                        errcode::ER_NET_PACKET_TOO_LARGE,
                        "08S01",
                        format!(
                            "Got a packet bigger than 'max_allowed_packet' bytes ({n} > {max})"
                        ),
                    );
                    let _ = self.client.send_err(1, &e).await;
                    break;
                }
                Err(_) => break,
            };
            if self.handle.killed.load(std::sync::atomic::Ordering::SeqCst) {
                // Killed while the command was on its way: the killer's OK came first, so
                // nothing of it runs (a COMMIT must not commit), as on the server.
                break;
            }
            let started = Instant::now();
            crate::busy_poll::note_command();
            GlobalStats::inc(&self.shared.stats.questions);
            self.handle
                .publish_bytes(self.client.bytes_in, self.client.bytes_out);
            if cmd.code() == com::QUIT {
                break;
            }
            self.begin_command(&cmd, started);
            // Boxed: a command's future is the largest part of a session's, and only a
            // running command needs it; inline, every idle client's task would carry it
            // (about 4 KiB each). One allocation per command, which the allocator hands back
            // at once; allocated before the future is made, so that it is built in place
            // rather than built on the stack and copied (Box::pin: ~650 more instructions
            // per command under callgrind, this: ~300).
            let dispatch = Box::write(Box::new_uninit(), self.dispatch(cmd));
            let flow = std::pin::Pin::from(dispatch).await;
            // The reply counts as sent once it is: an idle client's last reply must not wait
            // for its next command to show in Queries_frontends_bytes_sent.
            self.handle
                .publish_bytes(self.client.bytes_in, self.client.bytes_out);
            let ended = self.end_command(started, long_query);
            let in_trans = self
                .backend
                .as_ref()
                .is_some_and(|b| b.conn_ref().in_transaction());
            self.idle.last_active = ended;
            if !in_trans {
                self.idle.trx_since = None;
            } else if self.idle.trx_since.is_none() || self.idle.transaction_boundary {
                self.idle.trx_since = Some(self.idle.last_active);
            }
            self.idle.transaction_boundary = false;
            match flow {
                Ok(Flow::Continue) => {}
                Ok(Flow::Quit) => break,
                Err(e) => {
                    tracing::debug!(session = self.handle.id, error = %e, "session ends");
                    break;
                }
            }
        }
    }

    /// Publishes the command as running (processlist) and notes which statement command it
    /// counts as.
    pub(crate) fn begin_command(&mut self, cmd: &Command, started: Instant) {
        self.handle.new_command();
        self.counted = None;
        self.reply_end = None;
        self.cache_hit = false;
        self.repeatable = true;
        self.pipelinable = false;
        self.cmd_started = started;
        let code = cmd.code();
        // The text is in the first frame: a command split into frames has 16 MiB there.
        let text = || {
            cmd.raw
                .get(5..)
                .map(|t| t.get(..activity::INFO_MAX).unwrap_or(t))
        };
        let info: Option<&[u8]> = match code {
            com::QUERY | com::STMT_PREPARE => text(),
            com::STMT_EXECUTE => {
                GlobalStats::inc(&self.shared.stats.com_frontend_stmt_execute);
                let p = self.prepared.get(&self.statement_id(cmd));
                self.counted = Some(p.map_or(SqlCommand::Execute, |p| p.command));
                p.map(|p| p.text.as_bytes())
            }
            _ => None,
        };
        self.handle
            .activity
            .lock()
            .begin(activity::command_name(code), started, info);
    }

    /// Counts the command's latency and publishes the session as idle; returns when the
    /// command ended (its reply's last byte, or now).
    pub(crate) fn end_command(&mut self, started: Instant, long_query: Duration) -> Instant {
        let relayed = self.reply_end.take();
        let ended = relayed.unwrap_or_else(Instant::now);
        let elapsed = ended.saturating_duration_since(started);
        let stats = &self.shared.stats;
        if relayed.is_some() {
            GlobalStats::add_nanos(&stats.backend_query_time_nsec, elapsed);
        }
        if let Some(c) = self.counted.take() {
            self.shared.commands.record(c, elapsed);
            if elapsed > long_query {
                GlobalStats::inc(&stats.slow_queries);
            }
        }
        self.publish_idle(ended);
        ended
    }

    /// Publishes the session as idle since `since`, with its schema, hostgroup and the
    /// backend connection it keeps, if any.
    pub(crate) fn publish_idle(&self, since: Instant) {
        let held = self.backend.as_ref().map(|b| b.server());
        let held_local = self.backend.as_ref().and_then(|b| b.conn_ref().local_addr);
        let in_trans = self
            .backend
            .as_ref()
            .is_some_and(|b| b.conn_ref().in_transaction());
        let schema = self.schema.as_deref().unwrap_or("");
        let mut a = self.handle.activity.lock();
        a.command = SLEEP;
        a.since = since;
        a.has_info = false;
        a.hostgroup = self.hostgroup;
        a.in_trans = in_trans;
        a.held_local = held_local;
        // Cloning the Arc would touch a reference count every session shares: only on change.
        let same = match (held, &a.held) {
            (Some(h), Some(cur)) => Arc::ptr_eq(h, cur),
            (None, None) => true,
            _ => false,
        };
        if !same {
            a.held = held.cloned();
        }
        if a.schema != schema {
            a.schema.clear();
            a.schema.push_str(schema);
        }
    }

    /// Logs an error for stats_mysql_errors: from `server` when one answered or was in use,
    /// else against the session's hostgroup with no host.
    pub(crate) fn log_error(&self, server: Option<&ServerState>, errno: u16, message: &str) {
        let spec = server.map(|s| s.spec());
        let key = ErrorKey {
            hostgroup: spec.as_ref().map_or(self.hostgroup, |s| s.hostgroup),
            hostname: spec.as_ref().map_or("", |s| s.hostname.as_str()),
            port: spec.as_ref().map_or(0, |s| s.port),
            username: &self.user.username,
            client_address: &self.handle.host,
            schemaname: self.schema.as_deref().unwrap_or(""),
            errno,
        };
        self.shared.errors.record(&key, message);
    }

    /// Gives back or closes the held backend connection when the client leaves.
    async fn finish(&mut self) {
        if self.pass_to_followers() {
            return;
        }
        if let Some(b) = self.backend.take() {
            // A connection with state weir does not follow, an open transaction, or a
            // characteristic set for the next transaction, never goes back to the pool:
            // closing it makes the server roll back and forget everything.
            if self.pins != 0 || self.hold_next || b.conn_ref().in_transaction() {
                b.close().await;
            } else {
                self.shared.pool.checkin(b, true);
            }
        }
    }

    /// The backend connection for the next statement: the held one, or one from the pool
    /// with the client's schema in force. On failure the client has been sent an ERR.
    pub(crate) async fn acquire(
        &mut self,
        seq: u8,
    ) -> Result<Option<&mut PooledConn>, ClientError> {
        if let Some(b) = &self.backend {
            if b.server().must_close() {
                let tied = self.pins != 0 || b.conn_ref().in_transaction();
                if let Some(b) = self.backend.take() {
                    b.close().await;
                }
                if tied {
                    let e = ErrInfo::new(
                        errcode::ER_LOST_BACKEND,
                        "08S01",
                        "Lost connection to backend server: it was set OFFLINE_HARD",
                    );
                    self.client.send_err(seq, &e).await?;
                    return Err(ClientError::Closed);
                }
            }
        }
        // A connection that cannot take the client's state is closed and another taken; a
        // few attempts at most (a new connection always can).
        for _ in 0..8 {
            if self.backend.is_none() {
                // A KILL of this session ends a wait for a connection too. Biased: when a
                // connection is at hand the kill token is never polled (no waiter registered).
                let checkout = tokio::select! {
                    biased;
                    c = self.shared.pool.checkout(self.hostgroup, &self.login) => c,
                    _ = self.handle.kill.cancelled() => {
                        self.client.send_err(seq, &connection_killed()).await?;
                        return Err(ClientError::Closed);
                    }
                    () = self.handle.query_killed() => {
                        self.answer_early_kill(seq, None).await?;
                        return Ok(None);
                    }
                    // Nobody would read the reply: the slot goes to a statement that still
                    // has a client, and the session ends now rather than when it is served.
                    () = self.client.stream.hung_up() => {
                        tracing::debug!(session = self.handle.id, "client hung up while waiting for a backend connection");
                        return Err(ClientError::Closed);
                    }
                };
                match checkout {
                    Ok(c) => {
                        // What another client's statement left there is cleared first: a
                        // statement can read it without naming it (a procedure, a stored
                        // function, EXECUTE IMMEDIATE 'SHOW WARNINGS').
                        self.effects.clear_diagnostics |= c.conn_ref().diagnostics_left;
                        self.backend = Some(c);
                        self.held_gen = self.held_gen.wrapping_add(1);
                    }
                    Err(e) => {
                        GlobalStats::inc(&self.shared.stats.backend_errors);
                        let err = pool_error(&e);
                        self.log_error(None, err.code, &e.to_string());
                        self.client.send_err(seq, &err).await?;
                        return Ok(None);
                    }
                }
            }
            if !self.sync_schema(seq).await? {
                return Ok(None);
            }
            let tied = self.tied();
            match self.sync_state(seq).await? {
                SyncOutcome::Ready => return Ok(self.backend.as_mut()),
                SyncOutcome::Answered => return Ok(None),
                SyncOutcome::Retry if tied => {
                    let e = ErrInfo::new(
                        errcode::ER_LOST_BACKEND,
                        "08S01",
                        "Lost connection to backend server: the session's state went with it",
                    );
                    self.client.send_err(seq, &e).await?;
                    return Err(ClientError::Closed);
                }
                SyncOutcome::Retry => {}
            }
        }
        let e = ErrInfo::new(
            errcode::ER_LOST_BACKEND,
            "08S01",
            "weir could not bring a backend connection to this session's state",
        );
        self.client.send_err(seq, &e).await?;
        Ok(None)
    }

    /// Checks, as the server would at login, that the schema the client asked for in its
    /// handshake exists and is the user's to use: false when the server refused it, the
    /// server's ERR (1049, 1044) having been sent in place of the login's OK. A schema a
    /// login found recently is not checked again; a check that cannot run soon (no backend
    /// connection at hand, a server down) lets the client in, and its first statement finds
    /// out as it would have.
    async fn login_schema_exists(&mut self, seq: u8) -> bool {
        let Some(schema) = self.schema.clone() else {
            return true;
        };
        let key = (
            Box::<str>::from(self.user.username.as_str()),
            self.hostgroup,
            Box::<str>::from(schema.as_str()),
        );
        let now = Instant::now();
        if self
            .shared
            .login_schemas
            .lock()
            .get(&key)
            .is_some_and(|seen| now.duration_since(*seen) < LOGIN_SCHEMA_TRUST)
        {
            return true;
        }
        let check = async {
            // A new connection logs in with the client's schema, so the server's refusal may
            // come from the checkout itself.
            let mut conn = match self.shared.pool.checkout(self.hostgroup, &self.login).await {
                Ok(c) => c,
                Err(PoolError::Refused(BackendError::Server(e)))
                    if matches!(e.code, 1044 | 1049) =>
                {
                    return Some(Err(e))
                }
                Err(_) => return None,
            };
            let verdict = if conn.conn_ref().schema.as_deref() == Some(schema.as_str()) {
                Ok(())
            } else {
                GlobalStats::inc(&self.shared.stats.com_backend_init_db);
                conn.conn().init_db(&schema).await
            };
            Some(Ok((conn, verdict)))
        };
        let (conn, verdict) = match tokio::time::timeout(LOGIN_SCHEMA_CHECK_TIMEOUT, check).await {
            Ok(Some(Ok(checked))) => checked,
            Ok(Some(Err(e))) => {
                self.log_error(None, e.code, &e.message);
                let _ = self.client.send_err(seq, &e).await;
                return false;
            }
            Ok(None) | Err(_) => return true,
        };
        match verdict {
            Ok(()) => {
                let mut known = self.shared.login_schemas.lock();
                if known.len() >= LOGIN_SCHEMAS_MAX {
                    known.retain(|_, seen| now.duration_since(*seen) < LOGIN_SCHEMA_TRUST);
                    if known.len() >= LOGIN_SCHEMAS_MAX {
                        known.clear();
                    }
                }
                known.insert(key, now);
                drop(known);
                // In the client's schema now: its first statement may well get it back.
                self.shared.pool.checkin(conn, true);
                true
            }
            Err(BackendError::Server(e)) if matches!(e.code, 1044 | 1049) => {
                let server = conn.server().clone();
                self.shared.pool.checkin(conn, true);
                self.log_error(Some(&server), e.code, &e.message);
                let _ = self.client.send_err(seq, &e).await;
                false
            }
            // Not about the schema: the first statement will meet it, as without the check.
            Err(BackendError::Server(_)) => {
                self.shared.pool.checkin(conn, true);
                true
            }
            Err(_) => {
                conn.close().await;
                true
            }
        }
    }

    /// Brings the client's schema onto the held connection; false when the client got an ERR.
    async fn sync_schema(&mut self, seq: u8) -> Result<bool, ClientError> {
        let Some(b) = self.backend.as_mut() else {
            return Ok(true);
        };
        if self.replacing_schema {
            return Ok(true);
        }
        let want = match (&self.schema, b.conn_ref().schema.as_deref()) {
            (Some(want), have) if have != Some(want.as_str()) => Some(want.clone()),
            // A server session cannot go back to no schema: a client without one gets a
            // schema every user may use and where none of another client's tables are.
            (None, Some(have)) if !have.eq_ignore_ascii_case(NO_SCHEMA) => {
                Some(NO_SCHEMA.to_string())
            }
            _ => None,
        };
        {
            if let Some(want) = want {
                let server = b.server().clone();
                GlobalStats::inc(&self.shared.stats.com_backend_init_db);
                match b.conn().init_db(&want).await {
                    Ok(()) => {}
                    Err(BackendError::Server(e)) => {
                        self.log_error(Some(&server), e.code, &e.message);
                        self.client.send_err(seq, &e).await?;
                        self.release();
                        return Ok(false);
                    }
                    Err(e) => {
                        let err = lost_backend(&e);
                        self.log_error(Some(&server), err.code, &err.message);
                        self.drop_backend().await;
                        self.client.send_err(seq, &err).await?;
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }

    /// The statement on the held connection, as KILL QUERY sees it.
    pub(crate) fn running_here(&self) -> Option<Running> {
        self.backend.as_ref().map(|b| Running {
            server: b.server().clone(),
            backend_thread: b.conn_ref().connection_id,
            local: b.conn_ref().local_addr,
            login: self.login.clone(),
            kill_queries: b.conn_ref().kill_queries.clone(),
        })
    }

    /// Records the statement running on the backend (for KILL QUERY); false when a KILL
    /// QUERY came for the command before it got there (nothing is recorded).
    pub(crate) fn mark_running(&self) -> bool {
        match self.running_here() {
            Some(r) => self.handle.start_running(r),
            None => true,
        }
    }

    pub(crate) fn clear_running(&self) {
        *self.handle.running.lock() = None;
    }

    /// Returns the held connection to the pool unless something ties it to the session.
    /// Affinities (mysql-auto_increment_delay_multiplex, warnings, mysql-multiplexing=false,
    /// mysql-connection_delay_multiplex_ms) hold nothing weir could not restore elsewhere, so
    /// they give way when the server is draining or other statements wait for a connection:
    /// with fewer connections than clients, a session that inserts in every transaction would
    /// otherwise keep its connection for ever and starve the others.
    pub(crate) fn release(&mut self) {
        self.hold_until = None;
        if self.pass_to_followers() {
            // Their commands are queued on the connection: no affinity can keep it.
            self.keep_for = 0;
            self.keep_until = None;
            return;
        }
        let Some(b) = &self.backend else { return };
        let in_trans = b.conn_ref().in_transaction();
        if self.pins != 0 || in_trans || self.hold_next {
            return;
        }
        let server = b.server();
        if !server.draining() && !server.has_waiters() {
            if self.keep_for > 0 {
                match self.keep_until {
                    None => return,
                    Some(until) if until > tokio::time::Instant::now() => {
                        // The idle session lets go when the affinity times out.
                        self.hold_until = Some(until);
                        return;
                    }
                    Some(_) => {}
                }
            }
            let rt = self.shared.runtime.load();
            if !rt.mysql.multiplexing {
                return;
            }
            let delay = rt.mysql.connection_delay_multiplex;
            if !delay.is_zero() {
                self.hold_until = Some(tokio::time::Instant::now() + delay);
                return;
            }
        }
        self.keep_for = 0;
        self.keep_until = None;
        self.give_back();
    }

    /// Returns the held connection to the pool at once.
    pub(crate) fn give_back(&mut self) {
        self.hold_until = None;
        if self.pass_to_followers() {
            return;
        }
        if let Some(b) = self.backend.take() {
            if crate::exec::kill_under_way(
                b.conn_ref()
                    .kill_queries
                    .load(std::sync::atomic::Ordering::Relaxed),
            ) {
                // A KILL QUERY meant for this session's statement, which ended, may still
                // reach the connection: it must not stop another client's statement there.
                drop(b);
                return;
            }
            self.shared.pool.checkin(b, true);
        }
    }

    /// Closes the held connection (after an error on it).
    pub(crate) async fn drop_backend(&mut self) {
        // Followers whose commands went to it run them on their own.
        self.pipe = None;
        if let Some(b) = self.backend.take() {
            GlobalStats::inc(&self.shared.stats.server_connections_aborted);
            b.close().await;
        }
    }

    /// Whether the client's autocommit is on.
    pub(crate) fn autocommit(&self) -> bool {
        self.vars.autocommit().unwrap_or(true)
    }

    /// The connection held now, as [`HeldConn`].
    pub(crate) fn held_conn(&self) -> Option<HeldConn> {
        self.backend.as_ref().map(|b| {
            (
                Arc::as_ptr(b.server()) as usize,
                b.conn_ref().connection_id,
                self.held_gen,
            )
        })
    }

    /// Whether the session holds state on its backend that would be lost with the connection.
    pub(crate) fn tied(&self) -> bool {
        self.pins != 0
            || self.hold_next
            || self
                .backend
                .as_ref()
                .is_some_and(|b| b.conn_ref().in_transaction())
    }
}

/// The statement id of a COM_STMT_* command (0 when the packet is too short).
impl Session {
    /// The client's statement id a COM_STMT_* command names; MariaDB's 0xFFFFFFFF stands for
    /// the last statement prepared (left as is when there is none, so it is reported unknown).
    pub(crate) fn statement_id(&self, cmd: &Command) -> u32 {
        match statement_id(cmd) {
            LAST_PREPARED => self.last_prepared.unwrap_or(LAST_PREPARED),
            id => id,
        }
    }
}

/// The statement id by which MariaDB clients name the statement they prepared last.
const LAST_PREPARED: u32 = u32::MAX;

fn statement_id(cmd: &Command) -> u32 {
    cmd.raw
        .get(5..9)
        .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// A backend connection as a session held it: its server, the server's id for it, and the
/// session's count of connections taken when it took it.
pub(crate) type HeldConn = (usize, u32, u32);

/// How many statements that leave warnings in place may each keep their connection one more
/// statement: a client that keeps sending such statements (a pool's `SELECT 1` check) lets
/// its connection go after these.
pub(crate) const MAX_WARNINGS_CARRIED: u8 = 4;

/// The client-facing error for a pool failure.
pub(crate) fn pool_error(e: &PoolError) -> ErrInfo {
    match e {
        PoolError::NoServer { .. } => {
            ErrInfo::new(errcode::ER_PROXY_NO_BACKEND, "HY000", e.to_string())
        }
        PoolError::Refused(BackendError::Server(err)) => err.clone(),
        PoolError::Refused(other) => ErrInfo::new(
            errcode::ER_ACCESS_DENIED_ERROR,
            "28000",
            format!("weir could not log in to the backend: {other}"),
        ),
        PoolError::ConnectFailed { .. } => {
            ErrInfo::new(errcode::ER_PROXY_NO_BACKEND, "HY000", e.to_string())
        }
        PoolError::ShuttingDown => ErrInfo::new(
            errcode::ER_SERVER_SHUTDOWN,
            "08S01",
            "weir is shutting down",
        ),
    }
}

/// MariaDB's answer to a statement stopped by KILL QUERY; weir's own for one stopped before
/// it reached a backend (it waited for a connection or for its turn on a pipe).
pub(crate) fn query_interrupted() -> ErrInfo {
    ErrInfo::new(
        errcode::ER_QUERY_INTERRUPTED,
        "70100",
        "Query execution was interrupted",
    )
}

/// MariaDB's answer to a session killed by KILL (its own, or one that waited for a
/// connection).
pub(crate) fn connection_killed() -> ErrInfo {
    ErrInfo::new(
        errcode::ER_CONNECTION_KILLED,
        "70100",
        "Connection was killed",
    )
}

/// The client-facing error for a backend that failed mid-statement.
pub(crate) fn lost_backend(e: &dyn std::fmt::Display) -> ErrInfo {
    ErrInfo::new(
        errcode::ER_LOST_BACKEND,
        "08S01",
        format!("Lost connection to backend server during query: {e}"),
    )
}

#[cfg(test)]
mod task_size {
    /// The size of the future `f` returns when called with two arguments.
    fn future_size<A, B, R, F: Fn(A, B) -> R>(_: &F) -> usize {
        std::mem::size_of::<R>()
    }

    /// Every client's task holds a session's future for as long as the client is connected,
    /// idle or not: it must not carry the state of a running command (boxed per command) or
    /// of a backend connect (boxed in the pool). About 2.5 KiB today; 4 KiB leaves room for
    /// new fields while keeping 10,000 idle clients well under issue 5's 10 KiB each.
    #[test]
    fn an_idle_clients_task_stays_small() {
        let size = future_size(&super::serve_client);
        assert!(
            size <= 4096,
            "a client's task is {size} bytes: something large is held across an await in serve_client or Session::run"
        );
    }
}
