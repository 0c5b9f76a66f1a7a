//! Running one command on a backend connection: the statement timer (a rule's `timeout`, else
//! mysql-default_query_timeout) that stops a statement with KILL QUERY over another connection,
//! the re-run on another connection when a backend fails before replying (a rule's `retries`,
//! else mysql-query_retries_on_failure), and KILL on behalf of clients.
//!
//! # Timeouts
//!
//! Every command sent to a backend runs under the session's timer. The timer is one `Sleep`
//! per session, moved only when a command's deadline comes before the one it is armed for,
//! or that one passed: with the same long timeout statement after statement, it stays armed
//! for an earlier statement's deadline, and when it fires during a later statement it is
//! re-armed for that statement's own (a reset per statement moved it in the timer wheel each
//! time). A command with a shorter deadline (a rule's timeout after the default) re-arms it.
//!
//! When the timer fires, weir sends `KILL QUERY <backend thread>` over a new connection, from
//! the session's task (the worker goes on serving other sessions), then:
//! - if no byte of the reply reached the client yet, the reply the server still sends (ERR 1317,
//!   or for `SELECT SLEEP(n)` an ordinary row) is read to its end without being forwarded, and
//!   the client gets weir's own ERR 1907 naming the limit; the connection stays usable. If the
//!   KILL cannot be delivered, or the server has not ended the statement [`KILL_GRACE`] after
//!   it, the connection is closed instead and the client gets the same ERR.
//! - if part of the reply already reached the client (a long result set being streamed), an
//!   ERR can no longer be inserted: the relay goes on and the client gets what the server
//!   sends after the KILL, normally ERR 1317 "Query execution was interrupted".
//!
//! In both cases the connection is only reused once the KILL QUERY has completed, so that a
//! KILL still in flight can never hit the next statement on it.

use crate::client::{ClientError, Command};
use crate::pipeline::Piped;
use crate::registry::Running;
use crate::relay::{
    forward_command, relay_reply, Capture, RelayError, RelayExtras, ReplyGuard, ReplyOutcome,
};
use crate::session::{lost_backend, Session};
use crate::GlobalStats;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Sleep;
use weir_backend::{BackendConn, ConnectParams};
use weir_config::MysqlVariables;
use weir_pool::{LoginTemplate, ServerState};
use weir_wire::msg::ErrInfo;
use weir_wire::reply::Expect;
use weir_wire::{com, errcode};

/// How long the server gets to end a timed-out statement once its KILL QUERY went through,
/// before weir closes the connection instead (a statement rolling back a large change can
/// take long to notice the KILL).
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);

/// How long a command may run and how often it is re-run after a backend failure.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// How long the command may run on the backend.
    pub(crate) timeout: Duration,
    /// The rule whose `timeout` this is; `None` for mysql-default_query_timeout.
    pub(crate) timeout_rule: Option<u32>,
    /// Re-runs on another connection when the backend fails before replying.
    pub(crate) retries: u32,
}

impl Limits {
    /// The global defaults.
    pub(crate) fn defaults(m: &MysqlVariables) -> Limits {
        Limits {
            timeout: m.default_query_timeout,
            timeout_rule: None,
            retries: m.query_retries_on_failure,
        }
    }

    /// The rules' `timeout` and `retries` where set, else the defaults. A timeout of 0 sets
    /// nothing, as in ProxySQL.
    pub(crate) fn decided(d: &weir_rules::Decision, m: &MysqlVariables) -> Limits {
        let mut l = Limits::defaults(m);
        if let Some(ms) = d.timeout.filter(|ms| *ms > 0) {
            l.timeout = Duration::from_millis(u64::from(ms));
            l.timeout_rule = d.timeout_rule;
        }
        if let Some(r) = d.retries {
            l.retries = r;
        }
        l
    }

    /// The error a client gets for a statement stopped by this timeout.
    pub(crate) fn timeout_error(&self) -> ErrInfo {
        let source = match self.timeout_rule {
            Some(id) => format!("query rule {id} timeout"),
            None => "mysql-default_query_timeout".to_string(),
        };
        // ProxySQL's words first, so that what matches them goes on matching.
        ErrInfo::new(
            errcode::ER_STATEMENT_TIMEOUT,
            "70100",
            format!(
                "Query execution was interrupted, query_timeout exceeded: weir stopped the \
                 statement after {} ms ({source})",
                self.timeout.as_millis()
            ),
        )
    }
}

/// How a command sent to a backend ended.
pub(crate) enum Step {
    /// A reply was relayed (it may end with the server's ERR), or, for a timed-out statement,
    /// read to its end while the client got weir's ERR (`error` then holds it): the connection
    /// is usable.
    Replied(ReplyOutcome),
    /// The client has its answer (an ERR) and the connection is gone or was never there.
    Answered,
    /// The backend failed; its connection is closed and the client is not answered yet.
    Failed(Failure),
    /// A KILL QUERY meant for the statement before it on a pipe stopped this one before any
    /// of its reply reached the client; the connection is usable. It changes nothing, so it
    /// runs again on a connection of its own.
    Interrupted,
}

/// A backend failure during a command.
pub(crate) struct Failure {
    /// The error for the client.
    pub(crate) err: ErrInfo,
    /// The sequence id it goes out with.
    pub(crate) next_seq: u8,
    /// Whether the command may run again elsewhere: nothing reached the client and nothing the
    /// session needs lived on the lost connection.
    pub(crate) retryable: bool,
    /// Whether session state (a transaction, variables...) died with the connection.
    pub(crate) tied: bool,
}

/// How the relay under the timer ended.
enum Timed {
    /// Before the timer fired.
    Done(Result<ReplyOutcome, RelayError>),
    /// The timer fired. `discarded`: no reply byte had reached the client, so the reply was
    /// read without being forwarded. `result` is `None` when the server did not end the
    /// statement (KILL failed, or no end within [`KILL_GRACE`]).
    TimedOut {
        discarded: bool,
        result: Option<Result<ReplyOutcome, RelayError>>,
    },
}

/// What a KILL of a backend statement needs, borrowed from the session.
struct KillTarget<'a> {
    shared: &'a crate::Shared,
    server: &'a Arc<ServerState>,
    backend_thread: u32,
    login: &'a Arc<LoginTemplate>,
    kill_queries: &'a Arc<std::sync::atomic::AtomicU64>,
}

/// Whether a reply read in full is a lone OK: the statement ran to its end (a write, a
/// COMMIT), and no row of it is missing from what weir can tell the client.
fn completed_with_ok(o: &ReplyOutcome) -> bool {
    o.error.is_none()
        && o.last_ok.is_some()
        && !o.ended_with_rows
        && !o.several_results
        && o.prepared_id.is_none()
}

/// Sends `raw` and relays the reply until `deadline`, which `timer` is armed for or before
/// (then re-armed when it fires). On expiry: KILL QUERY, then see [`Timed::TimedOut`].
#[allow(clippy::too_many_arguments)]
async fn relay_timed(
    client: &mut crate::client::ClientConn,
    conn: &mut BackendConn,
    mut timer: Pin<&mut Sleep>,
    deadline: tokio::time::Instant,
    raw: &[u8],
    expect: Expect,
    seq: u8,
    max: usize,
    target: KillTarget<'_>,
    client_stmt_id: Option<u32>,
    capture: Option<&mut Capture>,
    withhold_interrupted: Option<crate::relay::Withhold<'_>>,
    session_killed: &tokio_util::sync::CancellationToken,
) -> Timed {
    let guard = ReplyGuard::default();
    let relay = async {
        forward_command(conn, raw)
            .await
            .map_err(|e| RelayError::Backend {
                source: e,
                client_bytes: false,
                sent: false,
                next_seq: seq,
            })?;
        let extras = RelayExtras {
            client_stmt_id,
            capture,
            withhold_interrupted,
            session_killed: Some(session_killed),
        };
        relay_reply(client, conn, expect, seq, max, &guard, extras).await
    };
    tokio::pin!(relay);
    loop {
        tokio::select! {
            biased;
            r = &mut relay => return Timed::Done(r),
            () = timer.as_mut() => {}
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        // Armed for an earlier statement's deadline.
        timer.as_mut().reset(deadline);
    }
    let discarded = guard.discard();
    let running = Running {
        server: target.server.clone(),
        backend_thread: target.backend_thread,
        local: None,
        login: target.login.clone(),
        kill_queries: target.kill_queries.clone(),
    };
    tracing::info!(
        backend_thread = target.backend_thread,
        server = %target.server.endpoint(),
        discarded,
        "statement timeout: KILL QUERY"
    );
    let kill = kill_on_backend(target.shared, &running, true);
    tokio::pin!(kill);
    let (result, delivered) = tokio::select! {
        r = &mut relay => (Some(r), (&mut kill).await),
        delivered = &mut kill => (None, delivered),
    };
    let result = match result {
        Some(r) => Some(r),
        // The client is receiving the reply: it gets the rest, however long the server takes.
        None if !discarded => Some(relay.await),
        None if delivered => tokio::time::timeout(KILL_GRACE, relay).await.ok(),
        None => None,
    };
    Timed::TimedOut { discarded, result }
}

impl Session {
    /// Acquires a backend, sends the command and relays the reply; re-runs it on another
    /// connection when the backend fails before any reply byte reached the client and nothing
    /// ties the session to the lost connection, up to `limits.retries` times. `None` when no
    /// reply was relayed (the client got an ERR).
    pub(crate) async fn run_with_retries(
        &mut self,
        cmd: &Command,
        expect: Expect,
        limits: &Limits,
    ) -> Result<Option<ReplyOutcome>, ClientError> {
        let seq = cmd.last_seq.wrapping_add(1);
        let mut retries = limits.retries;
        // Only set for a statement eligible while mysql-pipeline_depth > 1.
        let mut piped = if std::mem::take(&mut self.pipelinable) {
            let depth = self.shared.runtime.load().mysql.pipeline_depth;
            self.pipeline(cmd, seq, depth).await?
        } else {
            Piped::No
        };
        loop {
            let step = match std::mem::replace(&mut piped, Piped::No) {
                Piped::No => {
                    if self.acquire(seq).await?.is_none() {
                        return Ok(None);
                    }
                    self.exchange(cmd, &cmd.raw, expect, seq, limits).await?
                }
                Piped::Sent => self.exchange(cmd, &[], expect, seq, limits).await?,
                Piped::Answered => return Ok(None),
            };
            match step {
                Step::Replied(o) => return Ok(Some(o)),
                Step::Answered => return Ok(None),
                Step::Interrupted => {
                    // Hands the connection to the statements behind it; `piped` is No now.
                    self.release();
                    GlobalStats::inc(&self.shared.stats.query_retries);
                }
                Step::Failed(f) if f.retryable && retries > 0 => {
                    retries -= 1;
                    GlobalStats::inc(&self.shared.stats.query_retries);
                    tracing::info!(
                        session = self.handle.id,
                        error = %f.err.message,
                        "re-running the statement on another connection"
                    );
                }
                Step::Failed(f) => {
                    self.report_failure(f).await?;
                    return Ok(None);
                }
            }
        }
    }

    /// Tells the client about a backend failure; ends the session when its state was lost.
    pub(crate) async fn report_failure(&mut self, f: Failure) -> Result<(), ClientError> {
        self.client.send_err(f.next_seq, &f.err).await?;
        if f.tied {
            // Its transaction or session state died with the connection: end the session as
            // the server would, rather than go on without that state.
            return Err(ClientError::Closed);
        }
        Ok(())
    }

    /// Writes `wire` (the command, or nothing when a pipe sent it already) to the held
    /// connection and relays the command's reply, under the timeout.
    pub(crate) async fn exchange(
        &mut self,
        cmd: &Command,
        wire: &[u8],
        expect: Expect,
        seq: u8,
        limits: &Limits,
    ) -> Result<Step, ClientError> {
        let max = self.shared.runtime.load().mysql.max_allowed_packet as usize;
        if !self.mark_running() && !self.stop_killed_statement(wire).await {
            return self.interrupted_before_sending(seq).await;
        }
        let Some(b) = self.backend.as_mut() else {
            return Ok(Step::Answered);
        };
        let server = b.server().clone();
        if cmd.code() == com::STMT_EXECUTE {
            GlobalStats::inc(&self.shared.stats.com_backend_stmt_execute);
        }
        server.stats.queries.fetch_add(1, Ordering::Relaxed);
        server
            .stats
            .bytes_sent
            .fetch_add(cmd.raw.len() as u64, Ordering::Relaxed);
        let conn: &mut BackendConn = b.conn();
        let kill_queries = conn.kill_queries.clone();
        tracing::trace!(
            session = self.handle.id,
            backend_thread = conn.connection_id,
            command = com::name(cmd.code()),
            "statement"
        );
        // The timer is moved only when this deadline comes before the one it is armed for (or
        // that one passed): with the usual long timeouts each statement's deadline is later
        // than the last one's, and the timer, armed once, fires early at most once in a
        // while, to be re-armed (a reset per statement moved it in the timer wheel each time).
        let now = tokio::time::Instant::now();
        let deadline = now + limits.timeout;
        let armed = self.timer.deadline();
        if armed > deadline || armed <= now {
            self.timer.as_mut().reset(deadline);
        }
        let target = KillTarget {
            shared: &self.shared,
            server: &server,
            backend_thread: conn.connection_id,
            login: &self.login,
            kill_queries: &kill_queries,
        };
        let on_backend = crate::pipeline::OnBackend::enter();
        let timed = relay_timed(
            &mut self.client,
            conn,
            self.timer.as_mut(),
            deadline,
            wire,
            expect,
            seq,
            max,
            target,
            self.reply_stmt_id,
            self.capture.as_mut(),
            self.pipe.as_ref().map(|p| crate::relay::Withhold {
                kills_at_write: p.kills_at_write,
                kill_queries: &kill_queries,
                requested: &self.handle.kill_query_requested,
            }),
            &self.handle.killed_write,
        )
        .await;
        drop(on_backend);
        self.clear_running();
        match timed {
            Timed::Done(Ok(o)) if o.withheld && self.handle.killed_write.is_cancelled() => {
                // `KILL <id>` of this session stopped its statement: as the server, the
                // connection closes without a word (the 1317 was not forwarded).
                server
                    .stats
                    .bytes_recv
                    .fetch_add(o.bytes, Ordering::Relaxed);
                tracing::info!(session = self.handle.id, "killed while its statement ran");
                Err(ClientError::Closed)
            }
            Timed::Done(Ok(o)) if o.withheld => {
                let requested = self.handle.kill_query_requested.load(Ordering::SeqCst);
                let hit = self.pipe.as_ref().is_some_and(|p| {
                    kill_may_have_hit(p.kills_at_write, kill_queries.load(Ordering::Relaxed))
                });
                if hit && !requested {
                    tracing::info!(
                        session = self.handle.id,
                        backend_thread = self.backend.as_ref().map(|b| b.conn_ref().connection_id),
                        "a KILL QUERY meant for the statement before it on its connection stopped \
                         this one: running it again"
                    );
                    server
                        .stats
                        .bytes_recv
                        .fetch_add(o.bytes, Ordering::Relaxed);
                    return Ok(Step::Interrupted);
                }
                if let Some(e) = &o.error {
                    self.client.send_err(seq, e).await?;
                }
                self.relayed(Ok(o), &server).await
            }
            Timed::Done(r) => self.relayed(r, &server).await,
            Timed::TimedOut {
                discarded: false,
                result,
            } => {
                GlobalStats::inc(&self.shared.stats.query_timeouts);
                // The client got (part of) the server's reply, ended by its ERR 1317.
                let r = result.unwrap_or(Err(RelayError::Backend {
                    source: weir_backend::BackendError::Timeout(limits.timeout),
                    client_bytes: true,
                    sent: true,
                    next_seq: seq,
                }));
                self.relayed(r, &server).await
            }
            Timed::TimedOut {
                discarded: true,
                result,
            } => {
                GlobalStats::inc(&self.shared.stats.query_timeouts);
                let err = limits.timeout_error();
                self.log_error(Some(&server), err.code, &err.message);
                match result {
                    Some(Ok(o)) if completed_with_ok(&o) => {
                        // The server finished the statement before the KILL QUERY reached it
                        // (a COMMIT, a write): it happened, and the client is told so. An
                        // "interrupted" error would make it run the statement again.
                        server
                            .stats
                            .bytes_recv
                            .fetch_add(o.bytes, Ordering::Relaxed);
                        tracing::info!(
                            session = self.handle.id,
                            "the timed-out statement had ended with OK before its KILL QUERY: \
                             the client gets that OK"
                        );
                        let ok = o.last_ok.unwrap_or_default();
                        self.client.send_ok(seq, &ok).await?;
                        Ok(Step::Replied(o))
                    }
                    Some(Ok(mut o)) => {
                        // The statement ended and its reply was read: the connection is usable.
                        server
                            .stats
                            .bytes_recv
                            .fetch_add(o.bytes, Ordering::Relaxed);
                        self.client.send_err(seq, &err).await?;
                        o.error = Some(err);
                        o.last_ok = None;
                        o.prepared_id = None;
                        o.rows = 0;
                        Ok(Step::Replied(o))
                    }
                    Some(Err(RelayError::Client(e))) => Err(self.client_gone(e)),
                    _ => {
                        tracing::info!(
                            session = self.handle.id,
                            "timed-out statement did not end after KILL QUERY: closing its connection"
                        );
                        let tied = self.tied();
                        self.drop_backend().await;
                        self.report_failure(Failure {
                            err,
                            next_seq: seq,
                            retryable: false,
                            tied,
                        })
                        .await?;
                        Ok(Step::Answered)
                    }
                }
            }
        }
    }

    /// A KILL QUERY came for the command before its statement reached a backend thread:
    /// false when `wire` (the command) was not sent yet, so that it is not sent at all; true
    /// when a pipe sent it already: the statement is then stopped there with KILL QUERY,
    /// and its reply (normally ERR 1317) is relayed as for any KILL QUERY.
    async fn stop_killed_statement(&mut self, wire: &[u8]) -> bool {
        if !wire.is_empty() {
            return false;
        }
        let Some(r) = self.running_here() else {
            return true;
        };
        *self.handle.running.lock() = Some(r.clone());
        tracing::debug!(
            session = self.handle.id,
            backend_thread = r.backend_thread,
            "KILL QUERY for a statement that was on its way to the backend"
        );
        kill_on_backend(&self.shared, &r, true).await;
        true
    }

    /// Ends a command stopped by KILL QUERY before it was sent, as the server ends a
    /// statement killed before it started: ERR 1317. The held connection stays usable.
    async fn interrupted_before_sending(&mut self, seq: u8) -> Result<Step, ClientError> {
        let Some(b) = self.backend.as_ref() else {
            self.answer_early_kill(seq, None).await?;
            return Ok(Step::Answered);
        };
        let (server, status) = (b.server().clone(), b.conn_ref().status);
        let err = self.answer_early_kill(seq, Some(&server)).await?;
        Ok(Step::Replied(ReplyOutcome {
            status,
            error: Some(err),
            ..ReplyOutcome::default()
        }))
    }

    /// Answers a KILL of the session's command that came before its statement reached a
    /// backend thread: ERR 1317 for KILL QUERY (the error returned); for KILL, ERR 1927 and
    /// the session ends.
    pub(crate) async fn answer_early_kill(
        &mut self,
        seq: u8,
        server: Option<&ServerState>,
    ) -> Result<ErrInfo, ClientError> {
        if self.handle.kill.is_cancelled() {
            let err = crate::session::connection_killed();
            self.client.send_err(seq, &err).await?;
            return Err(ClientError::Closed);
        }
        let err = crate::session::query_interrupted();
        self.log_error(server, err.code, &err.message);
        match self.early_kill_columns.take() {
            Some(defs) => {
                // As the server ends an execution killed while it runs: its column
                // definitions, then the ERR (Connector/J tells its query timeouts by them).
                let status = self.ok_status().status;
                let mut out = std::mem::take(&mut self.client.wbuf);
                let next = defs.write(&mut out, seq, self.client.caps, status);
                err.write(&mut out, next);
                self.client.wbuf = out;
                self.client.flush_wbuf().await?;
            }
            None => self.client.send_err(seq, &err).await?,
        }
        Ok(err)
    }

    /// Accounts for a relay that ran to its end or failed.
    async fn relayed(
        &mut self,
        r: Result<ReplyOutcome, RelayError>,
        server: &Arc<ServerState>,
    ) -> Result<Step, ClientError> {
        match r {
            Ok(o) => {
                server
                    .stats
                    .bytes_recv
                    .fetch_add(o.bytes, Ordering::Relaxed);
                // The relay stamps the connection when the reply's last byte went out.
                self.reply_end = self.backend.as_ref().map(|b| b.conn_ref().last_used);
                if let Some(e) = &o.error {
                    self.log_error(Some(server), e.code, &e.message);
                }
                Ok(Step::Replied(o))
            }
            Err(RelayError::Client(e)) => Err(self.client_gone(e)),
            Err(RelayError::Backend {
                source,
                client_bytes,
                sent,
                next_seq,
            }) => {
                tracing::info!(session = self.handle.id, error = %source, "backend failed during a statement");
                let tied = self.tied();
                let err = lost_backend(&source);
                self.log_error(Some(server), err.code, &err.message);
                self.drop_backend().await;
                if matches!(source, weir_backend::BackendError::Io(_)) {
                    server.connection_lost();
                }
                Ok(Step::Failed(Failure {
                    err,
                    next_seq,
                    // A statement that reached the server may have run: only one that
                    // changes nothing runs again (an INSERT ... SELECT killed halfway must
                    // not write its rows twice).
                    retryable: !client_bytes && !tied && (!sent || self.repeatable),
                    tied,
                }))
            }
        }
    }

    /// The client is gone mid-statement: stop the statement on the server and drop the
    /// connection, which rolls back whatever it had open.
    fn client_gone(&mut self, e: std::io::Error) -> ClientError {
        // The connection is killed: followers whose commands went to it run them on their own.
        self.pipe = None;
        if let Some(b) = self.backend.take() {
            GlobalStats::inc(&self.shared.stats.server_connections_aborted);
            if !self
                .shared
                .runtime
                .load()
                .mysql
                .kill_backend_connection_when_disconnect
            {
                // The DBA's choice: the statement runs to its end on the server (it then
                // finds its connection gone; what it began, it rolls back).
                drop(b);
                return ClientError::Io(e);
            }
            let running = Running {
                server: b.server().clone(),
                backend_thread: b.conn_ref().connection_id,
                local: b.conn_ref().local_addr,
                login: self.login.clone(),
                kill_queries: b.conn_ref().kill_queries.clone(),
            };
            drop(b);
            let shared = self.shared.clone();
            tokio::spawn(async move { kill_on_backend(&shared, &running, false).await });
        }
        ClientError::Io(e)
    }
}

/// Runs `KILL [QUERY] <backend thread>` on the server over a separate connection; whether it
/// was delivered (false when the server could not be reached or refused it, e.g. because the
/// thread is already gone). The connection is opened for the KILL alone, outside the pool:
/// a KILL never waits for a free connection, however many the server's `max_connections`
/// lets weir use and however many statements wait for one.
pub(crate) async fn kill_on_backend(shared: &crate::Shared, r: &Running, query_only: bool) -> bool {
    if query_only {
        r.kill_queries.fetch_add(KILL_STARTED, Ordering::Relaxed);
    }
    // Boxed: the connect and handshake make a large future, which would otherwise be part
    // of the state of every statement's relay (and be copied with it) for a rare event.
    Box::pin(kill_over_new_connection(shared, r, query_only)).await
}

/// [`kill_on_backend`] for a KILL QUERY already counted as started on the connection (by
/// [`crate::registry::SessionHandle::mark_query_killed`], under the lock the session takes to
/// say its statement ended, so that the session sees it under way when it lets go of the
/// connection).
pub(crate) async fn kill_query_marked(shared: &crate::Shared, r: &Running) -> bool {
    Box::pin(kill_over_new_connection(shared, r, true)).await
}

/// Whether a KILL QUERY weir started on a connection has not landed yet (`kill_queries` is
/// the connection's counter): the connection must not serve another client's statement,
/// which the KILL could stop.
pub(crate) fn kill_under_way(kill_queries: u64) -> bool {
    kill_queries >> 32 != kill_queries & 0xffff_ffff
}

async fn kill_over_new_connection(shared: &crate::Shared, r: &Running, query_only: bool) -> bool {
    let settings = shared.pool.settings();
    let params = ConnectParams {
        endpoint: r.server.endpoint().clone(),
        username: r.login.key.username.to_string(),
        credential: r.login.credential.clone(),
        schema: None,
        collation: r.login.collation,
        capabilities: 0,
        mariadb_capabilities: 0,
        connect_timeout: settings.connect_timeout,
    };
    let delivered = match BackendConn::connect(&params).await {
        Ok(mut c) => {
            let what = if query_only { "KILL QUERY" } else { "KILL" };
            let done = match c.query(&format!("{what} {}", r.backend_thread)).await {
                Ok(_) => true,
                Err(e) => {
                    tracing::debug!(error = %e, "backend KILL failed (the statement may have ended)");
                    false
                }
            };
            c.quit().await;
            if done {
                let counter = if query_only {
                    &shared.stats.killed_backend_queries
                } else {
                    &shared.stats.killed_backend_connections
                };
                GlobalStats::inc(counter);
            }
            done
        }
        Err(e) => {
            // Outside the pool, so never held back by the server's max_connections in weir;
            // the server's own max_connections may still refuse it (ERROR 1040).
            tracing::warn!(
                error = %e,
                server = %r.server.endpoint(),
                backend_thread = r.backend_thread,
                "could not reach the backend to kill a statement"
            );
            false
        }
    };
    if query_only {
        r.kill_queries.fetch_add(KILL_LANDED, Ordering::Relaxed);
    }
    delivered
}

/// One KILL QUERY started, in `BackendConn::kill_queries`.
pub(crate) const KILL_STARTED: u64 = 1 << 32;
/// One KILL QUERY landed (or failed), in `BackendConn::kill_queries`.
pub(crate) const KILL_LANDED: u64 = 1;

/// Whether a KILL QUERY weir sent may have reached the server thread between the time a
/// command was written to it (`kill_queries` was `at_write`) and now: one was under way then,
/// or one started since.
pub(crate) fn kill_may_have_hit(at_write: u64, now: u64) -> bool {
    let (started, landed) = (at_write >> 32, at_write & 0xffff_ffff);
    started != landed || now >> 32 != started
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kill_may_have_hit_a_command_while_one_was_under_way_or_started_since() {
        let at = |started: u64, landed: u64| started * KILL_STARTED + landed * KILL_LANDED;
        // None under way when written, none since.
        assert!(!kill_may_have_hit(at(0, 0), at(0, 0)));
        assert!(!kill_may_have_hit(at(3, 3), at(3, 3)));
        // One started since (landed or not).
        assert!(kill_may_have_hit(at(3, 3), at(4, 3)));
        assert!(kill_may_have_hit(at(3, 3), at(4, 4)));
        // One under way when written, landed since.
        assert!(kill_may_have_hit(at(4, 3), at(4, 4)));
        assert!(kill_may_have_hit(at(4, 3), at(4, 3)));
    }
}
