//! Pipelining (`mysql-pipeline_depth` > 1): autocommit plain SELECTs of different clients in
//! the same session state go to a backend connection that is already busy with another's, and
//! their replies are relayed in turn.
//!
//! Why: on a loaded proxy each statement costs weir a write and a read on the backend side and
//! wakes a server thread up. On a pipelined connection the server thread finds the next
//! command in its buffer when it finishes one, and weir reads several replies at once.
//!
//! How: a session whose statement is eligible, while other statements of its worker are on
//! backends, takes a connection as usual, brings it to its state, writes its command and
//! opens a *pipe* on it: until the pipe closes, the eligible statements of sessions in the
//! same state (hostgroup, backend login, schema, variables) are written behind it, up to
//! `pipeline_depth` statements in flight. The connection then passes from session to session
//! in the order of the commands (ownership moves through a oneshot channel, so exactly one
//! session reads it at a time), each relaying its own reply with the usual relay; the last one
//! closes the pipe and gives the connection back to the pool. Sessions joining write through a
//! second handle on the socket (a dup of its descriptor, non-blocking): all of a worker's
//! sessions run on its thread, so writes never interleave, and one that cannot go at once
//! whole means the session runs its statement as usual instead.
//!
//! Failures: only statements that change nothing are pipelined, so a follower whose turn
//! never comes (the connection failed, a session before it went away mid-reply) runs its
//! statement again on its own. The reply of a follower that went away before its turn is read
//! and dropped, so that the next one finds its own.
//!
//! KILL: a follower whose client's statement is killed (KILL QUERY) while it waits for its
//! turn takes the turn if it comes within [`KILLED_TURN_GRACE`]: its statement is stopped on
//! the server with KILL QUERY and the server's reply relayed, as for a running statement.
//! Otherwise (and at once for KILL) it leaves the line with ERR 1317, as if it had gone away;
//! its statement is stopped on the server with KILL QUERY when its turn comes, unless its
//! reply is arriving already. A KILL QUERY that lands on a statement behind it is noticed there
//! ([`crate::exec::kill_may_have_hit`]) and that statement runs again.

use crate::client::{ClientError, Command};
use crate::registry::Running;
use crate::session::Session;
use crate::Shared;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use weir_pool::{LoginTemplate, PooledConn};
use weir_wire::reply::Expect;

/// Commands larger than this are never pipelined: a write that does not go whole at once
/// would leave the connection out of step.
const MAX_PIPELINED_COMMAND: usize = 16 * 1024;

/// A pipe whose oldest statement has been running longer than this takes no one else: a slow
/// statement delays only those that joined before it turned out slow.
const SLOW_HEAD: Duration = Duration::from_millis(1);

/// How long a follower whose statement was killed (KILL QUERY) still waits for its turn
/// before it leaves the line with weir's own ERR 1317.
const KILLED_TURN_GRACE: Duration = Duration::from_millis(200);

/// How a statement goes to its backend.
pub(crate) enum Piped {
    /// Not pipelined: the session runs it as usual (it may already hold a connection).
    No,
    /// The session holds the connection and its command was sent.
    Sent,
    /// The client got an ERR (no connection could be had).
    Answered,
}

/// Whether a session opened a pipe with its command.
pub(crate) enum Opened {
    /// Its command was sent; the pipe takes others behind it.
    Yes,
    /// Nothing was sent: the session sends its command as usual.
    No,
    /// The connection failed on the write and was dropped.
    Lost,
}

/// A place in a pipe's line, from [`Pipe::join`].
pub(crate) struct Turn {
    pipe: u64,
    /// The follower's place in the pipe's line (see [`Pipe::left_waiting`]).
    place: u64,
    kills_at_write: u64,
    /// Receives the connection when the replies before this command have been relayed.
    turn: oneshot::Receiver<PooledConn>,
}

/// A connection taking statements behind the one being relayed.
struct Pipe {
    id: u64,
    /// A second handle on the connection's socket, for sessions that join.
    writer: socket2::Socket,
    /// Statements sent and not relayed yet, the one being relayed included.
    in_flight: usize,
    max_in_flight: usize,
    /// A write went out in part: the connection is out of step and closes when its holder is
    /// done.
    broken: bool,
    /// Since when the statement whose reply comes next has been the oldest in flight.
    head_since: Instant,
    server: Arc<weir_pool::ServerState>,
    hostgroup: u32,
    login: Arc<LoginTemplate>,
    schema: Option<String>,
    vars: weir_sql::SessionVars,
    /// The sessions whose replies come next, in order, with their places in the line.
    followers: VecDeque<(oneshot::Sender<PooledConn>, u64)>,
    /// Places given so far.
    joined: u64,
    /// Places of followers that left the line because their turn was long in coming, with
    /// that wait (mysql-pipeline_max_wait_ms): their statements get as long to end by
    /// themselves when their turns come before they are stopped, as most are quick.
    left_waiting: Vec<(u64, Duration)>,
    /// The connection's `kill_queries`.
    kill_queries: Arc<AtomicU64>,
    /// (global id, server id) of the statements prepared on the connection, for executions
    /// that join; empty when a text query opened the pipe. Nothing is prepared or closed on
    /// a connection while its pipe lives: only executions of statements it has join.
    stmts: Vec<(u64, u32)>,
}

thread_local! {
    /// Pipes of this worker (a session's future never leaves its worker's thread).
    static PIPES: RefCell<Vec<Pipe>> = const { RefCell::new(Vec::new()) };
    static NEXT_PIPE: Cell<u64> = const { Cell::new(0) };
    /// Statements of this worker's sessions on backends right now.
    static ON_BACKENDS: Cell<usize> = const { Cell::new(0) };
}

/// Counts a statement on a backend for as long as it lives: a pipe is only worth opening
/// while other statements run.
pub(crate) struct OnBackend(());

impl OnBackend {
    pub(crate) fn enter() -> OnBackend {
        ON_BACKENDS.with(|c| c.set(c.get() + 1));
        OnBackend(())
    }
}

impl Drop for OnBackend {
    fn drop(&mut self) {
        ON_BACKENDS.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// The holder's end of a pipe: passed on with the connection, or, dropped (the connection
/// failed or was closed), the pipe closes and its followers run their statements on their own.
pub(crate) struct PipeGuard {
    id: u64,
    /// The connection's `kill_queries` when the session's command was written, for
    /// [`crate::exec::kill_may_have_hit`].
    pub(crate) kills_at_write: u64,
}

impl PipeGuard {
    fn into_id(self) -> u64 {
        let id = self.id;
        std::mem::forget(self);
        id
    }
}

impl Drop for PipeGuard {
    fn drop(&mut self) {
        drop(remove_pipe(self.id));
    }
}

fn remove_pipe(id: u64) -> Option<Pipe> {
    PIPES.with(|pipes| {
        let mut pipes = pipes.borrow_mut();
        let i = pipes.iter().position(|p| p.id == id)?;
        Some(pipes.swap_remove(i))
    })
}

impl Pipe {
    fn takes(&self, s: &Session) -> bool {
        !self.broken
            && self.in_flight < self.max_in_flight
            && self.hostgroup == s.hostgroup
            && (Arc::ptr_eq(&self.login, &s.login)
                || (self.login.key.serves(&s.login.key)
                    && self.login.collation == s.login.collation
                    && self.login.ignore_space == s.login.ignore_space
                    && self.login.multi_statements == s.login.multi_statements))
            && self.schema == s.schema
            && self.vars == s.vars
            // A server set OFFLINE_SOFT (or worse) takes no new statements.
            && !self.server.draining()
            && self.head_since.elapsed() < SLOW_HEAD
    }
}

impl Pipe {
    /// Writes `wire` behind the statements in flight: the pipe's id and the turn to wait for,
    /// or `None` when it did not go out whole at once.
    fn join(&mut self, wire: &[u8]) -> Option<Turn> {
        if wire.len() > MAX_PIPELINED_COMMAND {
            return None;
        }
        let kills_at_write = self.kill_queries.load(Ordering::Relaxed);
        match write_whole(&self.writer, wire) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(()) => {
                self.broken = true;
                return None;
            }
        }
        self.in_flight += 1;
        self.joined += 1;
        let place = self.joined;
        let (tx, rx) = oneshot::channel();
        self.followers.push_back((tx, place));
        Some(Turn {
            pipe: self.id,
            place,
            kills_at_write,
            turn: rx,
        })
    }
}

/// Writes `bytes` whole through `writer` without waiting; false when nothing went out.
/// `Err(())`: part of it went out (or the socket failed), the connection is out of step.
fn write_whole(writer: &socket2::Socket, bytes: &[u8]) -> Result<bool, ()> {
    let mut w = writer;
    match w.write(bytes) {
        Ok(n) if n == bytes.len() => Ok(true),
        Ok(0) => Ok(false),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(false),
        _ => Err(()),
    }
}

impl Session {
    /// Sends the statement in `cmd` through a pipe when it can: joins one of this worker's, or
    /// opens one on a connection of its own while other statements are on backends. `depth`
    /// is mysql-pipeline_depth; the caller checked that the statement is eligible.
    pub(crate) async fn pipeline(
        &mut self,
        cmd: &Command,
        seq: u8,
        depth: u32,
    ) -> Result<Piped, ClientError> {
        if cmd.raw.len() > MAX_PIPELINED_COMMAND {
            return Ok(Piped::No);
        }
        let joined = PIPES.with(|pipes| {
            let mut pipes = pipes.borrow_mut();
            let pipe = pipes.iter_mut().find(|p| p.takes(self))?;
            pipe.join(&cmd.raw)
        });
        if let Some(turn) = joined {
            if self.wait_turn(turn).await {
                return Ok(Piped::Sent);
            }
            if self.handle.kill_query_pending() || self.handle.kill.is_cancelled() {
                self.answer_early_kill(seq, None).await?;
                return Ok(Piped::Answered);
            }
            return Ok(Piped::No);
        }
        if ON_BACKENDS.with(Cell::get) == 0 {
            return Ok(Piped::No);
        }
        if self.acquire(seq).await?.is_none() {
            return Ok(Piped::Answered);
        }
        Ok(match self.open_pipe(&cmd.raw, depth, false).await {
            Opened::Yes => Piped::Sent,
            Opened::No | Opened::Lost => Piped::No,
        })
    }

    /// Sends an execution behind another client's statement, on a pipe of this worker whose
    /// connection has the statement prepared; `exec` builds the command for a server id. The
    /// command sent when it did; `None` to run the execution as usual.
    pub(crate) async fn join_pipe_with_execute(
        &mut self,
        global: u64,
        exec: impl Fn(u32) -> Command,
    ) -> Option<Command> {
        let joined = PIPES.with(|pipes| {
            let mut pipes = pipes.borrow_mut();
            let (pipe, sid) = pipes.iter_mut().find_map(|p| {
                let sid = p.stmts.iter().find(|e| e.0 == global)?.1;
                p.takes(self).then_some((p, sid))
            })?;
            let cmd = exec(sid);
            pipe.join(&cmd.raw).map(|turn| (turn, cmd))
        });
        let (turn, cmd) = joined?;
        self.wait_turn(turn).await.then_some(cmd)
    }

    /// Waits for the connection after joining a pipe; false when the turn never comes (the
    /// connection failed or a session before it left): the statement then runs on its own.
    /// Its command may have run on a connection that failed: it changes nothing, so it runs
    /// again. Also false when the client's statement is killed meanwhile: the session leaves
    /// the line (see the module's doc) and answers the KILL; and after mysql-pipeline_max_wait_ms
    /// without a turn (the statement ahead turned out slow after it joined): the statement
    /// then runs on a connection of its own.
    async fn wait_turn(&mut self, turn: Turn) -> bool {
        crate::GlobalStats::inc(&self.shared.stats.pipelined_statements);
        let mut rx = turn.turn;
        let max_wait = self.shared.runtime.load().mysql.pipeline_max_wait;
        let conn = tokio::select! {
            biased;
            r = &mut rx => r.ok(),
            () = self.handle.query_killed() => {
                // A turn that comes soon (the statements before it were short, or killed too)
                // is taken: its statement is then stopped on the server and the client gets
                // the server's own reply (column definitions, then ERR 1317), by which drivers
                // tell their query timeouts. One that does not is left at once.
                match tokio::time::timeout(KILLED_TURN_GRACE, &mut rx).await {
                    Ok(r) => r.ok(),
                    Err(_) => leave_line(&mut rx),
                }
            }
            () = self.handle.kill.cancelled() => leave_line(&mut rx),
            () = tokio::time::sleep(max_wait) => {
                let conn = leave_line(&mut rx);
                if conn.is_none() {
                    crate::GlobalStats::inc(&self.shared.stats.pipelined_statements_left_line);
                    left_waiting(turn.pipe, turn.place, max_wait);
                }
                conn
            }
        };
        match conn {
            Some(conn) => {
                self.backend = Some(conn);
                self.held_gen = self.held_gen.wrapping_add(1);
                self.pipe = Some(PipeGuard {
                    id: turn.pipe,
                    kills_at_write: turn.kills_at_write,
                });
                true
            }
            None => false,
        }
    }

    /// Opens a pipe on the held connection while other statements of this worker are on
    /// backends, writing `wire` (the session's own command) first; `with_stmts` lets
    /// executions of the statements prepared there join.
    pub(crate) async fn open_pipe(&mut self, wire: &[u8], depth: u32, with_stmts: bool) -> Opened {
        if wire.len() > MAX_PIPELINED_COMMAND
            || ON_BACKENDS.with(Cell::get) == 0
            // Killed on its way: the command is not sent at all (see `Session::exchange`).
            || self.handle.kill_query_pending()
        {
            return Opened::No;
        }
        let Some((writer, server, stmts, kill_queries)) = self.backend.as_ref().and_then(|b| {
            let w = b.conn_ref().stream.writer().ok()?;
            let stmts = if with_stmts {
                b.conn_ref().stmts.ids().collect()
            } else {
                Vec::new()
            };
            Some((
                w,
                b.server().clone(),
                stmts,
                b.conn_ref().kill_queries.clone(),
            ))
        }) else {
            return Opened::No;
        };
        let kills_at_write = kill_queries.load(Ordering::Relaxed);
        // Its own command goes first, through the same handle, before anyone can join.
        match write_whole(&writer, wire) {
            Ok(true) => {}
            Ok(false) => return Opened::No,
            Err(()) => {
                self.drop_backend().await;
                return Opened::Lost;
            }
        }
        let id = NEXT_PIPE.with(|n| {
            n.set(n.get().wrapping_add(1));
            n.get()
        });
        PIPES.with(|pipes| {
            pipes.borrow_mut().push(Pipe {
                id,
                writer,
                in_flight: 1,
                max_in_flight: depth as usize,
                broken: false,
                head_since: Instant::now(),
                server,
                hostgroup: self.hostgroup,
                login: self.login.clone(),
                schema: self.schema.clone(),
                vars: self.vars.clone(),
                followers: VecDeque::new(),
                joined: 0,
                left_waiting: Vec::new(),
                kill_queries,
                stmts,
            })
        });
        self.pipe = Some(PipeGuard { id, kills_at_write });
        Opened::Yes
    }

    /// Hands the held connection on when the session's statement went through a pipe;
    /// whether it did (not when nobody joined: the pipe then closes and the session keeps
    /// the connection as after any statement). A session still tied to the connection (which an eligible statement
    /// cannot make it) would have the followers' replies arrive for its own next statement:
    /// the connection is closed instead, and the followers run on their own.
    pub(crate) fn pass_to_followers(&mut self) -> bool {
        let Some(guard) = self.pipe.take() else {
            return false;
        };
        let alone = PIPES.with(|pipes| {
            pipes
                .borrow()
                .iter()
                .find(|p| p.id == guard.id)
                .is_some_and(|p| p.followers.is_empty())
        });
        if alone && self.backend.is_some() {
            // Nobody joined: the pipe closes and the connection is the session's as if it had
            // never opened one (it may keep it a while, for its warnings for instance).
            drop(guard);
            return false;
        }
        let Some(b) = self.backend.take() else {
            return true;
        };
        if self.pins != 0 || self.hold_next || b.conn_ref().in_transaction() {
            tracing::warn!(
                session = self.handle.id,
                "a pipelined statement left state on its connection: closing it"
            );
            drop(guard);
            drop(b);
            return true;
        }
        pass_on(&self.shared, b, guard);
        true
    }
}

/// Leaves a pipe's line: no connection, unless it was handed over already (the session then
/// holds the connection and its command's reply comes next on it).
fn leave_line(rx: &mut oneshot::Receiver<PooledConn>) -> Option<PooledConn> {
    rx.close();
    rx.try_recv().ok()
}

/// Notes that the follower at `place` left the line of pipe `id` after waiting `waited`.
fn left_waiting(id: u64, place: u64, waited: Duration) {
    PIPES.with(|pipes| {
        if let Some(p) = pipes.borrow_mut().iter_mut().find(|p| p.id == id) {
            p.left_waiting.push((place, waited));
        }
    });
}

/// What comes after a reply relayed on a pipe.
enum Next {
    /// The next follower, its login, and how long its statement may run before it is stopped
    /// should the follower have left the line (zero unless it left because of the wait).
    Follower(oneshot::Sender<PooledConn>, Arc<LoginTemplate>, Duration),
    /// Nothing more in flight: the pipe is closed and the connection clean.
    Done,
    /// The pipe is gone or out of step: the connection is closed.
    Close,
}

/// Gives the connection to the next follower still there, else back to the pool.
fn pass_on(shared: &Arc<Shared>, conn: PooledConn, guard: PipeGuard) {
    let id = guard.into_id();
    let (next, closed) = PIPES.with(|pipes| {
        let mut pipes = pipes.borrow_mut();
        let Some(i) = pipes.iter().position(|p| p.id == id) else {
            return (Next::Close, None);
        };
        let pipe = &mut pipes[i];
        pipe.in_flight = pipe.in_flight.saturating_sub(1);
        if pipe.broken {
            return (Next::Close, Some(pipes.swap_remove(i)));
        }
        match pipe.followers.pop_front() {
            Some((f, place)) => {
                pipe.head_since = Instant::now();
                let grace = match pipe.left_waiting.iter().position(|w| w.0 == place) {
                    Some(i) => pipe.left_waiting.swap_remove(i).1,
                    None => Duration::ZERO,
                };
                (Next::Follower(f, pipe.login.clone(), grace), None)
            }
            None => (Next::Done, Some(pipes.swap_remove(i))),
        }
    });
    // Dropped outside the borrow: dropping followers wakes them.
    drop(closed);
    match next {
        Next::Follower(turn, login, grace) => {
            if let Err(mut conn) = turn.send(conn) {
                // That session is gone, or left the line (its statement was killed, or its
                // turn was long in coming): its reply comes next on the connection. The
                // statement is stopped unless its reply is arriving already (or, for one that
                // left because of the wait, it ends within `grace`); the connection goes on
                // once the KILL landed.
                let shared = shared.clone();
                let guard = PipeGuard {
                    id,
                    kills_at_write: 0,
                };
                let stop = conn.conn_ref().rbuf.is_empty().then(|| Running {
                    server: conn.server().clone(),
                    backend_thread: conn.conn_ref().connection_id,
                    local: None,
                    login,
                    kill_queries: conn.conn_ref().kill_queries.clone(),
                });
                tokio::spawn(async move {
                    let read = {
                        let reply = conn.conn().read_reply(Expect::ResultSets);
                        tokio::pin!(reply);
                        let ended = match &stop {
                            Some(_) if !grace.is_zero() => tokio::select! {
                                r = &mut reply => Some(r),
                                () = tokio::time::sleep(grace) => None,
                            },
                            _ => None,
                        };
                        match ended {
                            Some(r) => r,
                            None => {
                                let kill = async {
                                    if let Some(r) = &stop {
                                        crate::exec::kill_on_backend(&shared, r, true).await;
                                    }
                                };
                                tokio::join!(reply, kill).0
                            }
                        }
                    };
                    match read {
                        Ok(_) | Err(weir_backend::BackendError::Server(_)) => {
                            pass_on(&shared, conn, guard)
                        }
                        Err(_) => {
                            drop(guard);
                            conn.close().await;
                        }
                    }
                });
            }
        }
        // A KILL QUERY under way could stop another client's statement there.
        Next::Done
            if crate::exec::kill_under_way(
                conn.conn_ref().kill_queries.load(Ordering::Relaxed),
            ) =>
        {
            drop(conn)
        }
        Next::Done => shared.pool.checkin(conn, true),
        Next::Close => drop(conn),
    }
}
