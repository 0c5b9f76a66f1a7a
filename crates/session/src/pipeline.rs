//! Pipelining (`mysql-pipeline_depth` > 1): autocommit plain SELECTs of different clients that
//! arrive together, in the same session state, go to one backend connection in one write, and
//! their replies are relayed in turn.
//!
//! Why: on a loaded proxy each statement costs weir a write and a read on the backend side and
//! wakes a server thread up. A batch of statements costs one write, and the server thread that
//! wakes up for it finds the other commands in its buffer and answers them back to back.
//!
//! How: a session about to take a connection while other statements of its worker are on
//! backends opens a batch and yields once, so that the sessions whose commands the worker read
//! in the same turn of its event loop can join. A session joins when its statement is eligible
//! and its hostgroup, backend login and session state (schema, variables) are the opener's.
//! The opener then takes a connection as usual, brings it to that state, writes its command
//! and the followers' in one write and relays its own reply. The connection then passes from
//! session to session in the order of the commands (ownership moves through a oneshot channel,
//! so exactly one session reads it at a time), each relaying its own reply with the usual
//! relay; the last one gives it back to the pool.
//!
//! Failures: only statements that change nothing are pipelined, so a follower whose turn never
//! comes (the connection failed, a session before it went away) runs its statement again on
//! its own. The reply of a follower that went away before its turn is read and dropped, so
//! that the next follower finds its own.

use crate::client::{ClientError, Command};
use crate::session::Session;
use crate::Shared;
use bytes::BytesMut;
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::sync::Arc;
use tokio::sync::oneshot;
use weir_pool::{LoginTemplate, PooledConn};
use weir_wire::reply::Expect;

/// A session whose command was sent after the holder's, waiting for the connection.
pub(crate) struct Follower {
    turn: oneshot::Sender<Turn>,
}

/// The sessions whose replies follow on the held connection, in order.
pub(crate) type Chain = VecDeque<Follower>;

/// What a follower gets when its turn comes: the connection, its reply next on it, and the
/// followers after it.
struct Turn(PooledConn, Chain);

/// How a statement goes to its backend.
pub(crate) enum Piped {
    /// Not pipelined: the session takes a connection as usual.
    No,
    /// The session opened a batch and holds the connection: these bytes (its command, then
    /// the followers') are to be written to it.
    Lead(BytesMut),
    /// The session joined a batch: it holds the connection, its command already sent.
    Follow,
    /// The client got an ERR (no connection could be had).
    Answered,
}

/// A batch open for followers while its opener yields.
struct OpenBatch {
    id: u64,
    max_followers: usize,
    hostgroup: u32,
    login: Arc<LoginTemplate>,
    schema: Option<String>,
    vars: weir_sql::SessionVars,
    commands: BytesMut,
    followers: Chain,
}

thread_local! {
    /// Batches open on this worker (a session's future never leaves its worker's thread).
    static OPEN: RefCell<Vec<OpenBatch>> = const { RefCell::new(Vec::new()) };
    static NEXT_BATCH: Cell<u64> = const { Cell::new(0) };
    /// Statements of this worker's sessions on backends right now.
    static ON_BACKENDS: Cell<usize> = const { Cell::new(0) };
}

/// Counts a statement on a backend for as long as it lives: only then can another statement
/// be expected in the same turn of the event loop, so only then is a batch worth a yield.
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

impl OpenBatch {
    fn takes(&self, s: &Session) -> bool {
        self.followers.len() < self.max_followers
            && self.hostgroup == s.hostgroup
            && (Arc::ptr_eq(&self.login, &s.login) || self.login.key == s.login.key)
            && self.schema == s.schema
            && self.vars == s.vars
    }
}

impl Session {
    /// Sends the statement in `cmd` through a batch when it can: joins one open on this
    /// worker, or opens one while other statements are on backends. `depth` is
    /// mysql-pipeline_depth; the caller checked that the statement is eligible.
    pub(crate) async fn pipeline(
        &mut self,
        cmd: &Command,
        seq: u8,
        depth: u32,
    ) -> Result<Piped, ClientError> {
        let joined = OPEN.with(|open| {
            let mut open = open.borrow_mut();
            let batch = open.iter_mut().find(|b| b.takes(self))?;
            let (tx, rx) = oneshot::channel();
            batch.commands.extend_from_slice(&cmd.raw);
            batch.followers.push_back(Follower { turn: tx });
            Some(rx)
        });
        if let Some(rx) = joined {
            return Ok(match rx.await {
                Ok(Turn(conn, rest)) => {
                    self.backend = Some(conn);
                    self.chain = rest;
                    Piped::Follow
                }
                // Its command may have run on a connection that failed: it changes nothing,
                // so it runs again.
                Err(_) => Piped::No,
            });
        }
        if ON_BACKENDS.with(Cell::get) == 0 {
            return Ok(Piped::No);
        }
        let id = NEXT_BATCH.with(|n| {
            n.set(n.get().wrapping_add(1));
            n.get()
        });
        OPEN.with(|open| {
            open.borrow_mut().push(OpenBatch {
                id,
                max_followers: depth.saturating_sub(1) as usize,
                hostgroup: self.hostgroup,
                login: self.login.clone(),
                schema: self.schema.clone(),
                vars: self.vars.clone(),
                commands: BytesMut::new(),
                followers: Chain::new(),
            })
        });
        // Sessions whose commands were read in this turn of the event loop run before this
        // one resumes.
        tokio::task::yield_now().await;
        let batch = OPEN.with(|open| {
            let mut open = open.borrow_mut();
            let i = open.iter().position(|b| b.id == id)?;
            Some(open.swap_remove(i))
        });
        let Some(batch) = batch.filter(|b| !b.followers.is_empty()) else {
            return Ok(Piped::No);
        };
        // Should no connection be had, dropping the followers makes them run on their own.
        if self.acquire(seq).await?.is_none() {
            return Ok(Piped::Answered);
        }
        let mut wire = BytesMut::with_capacity(cmd.raw.len() + batch.commands.len());
        wire.extend_from_slice(&cmd.raw);
        wire.extend_from_slice(&batch.commands);
        self.chain = batch.followers;
        crate::GlobalStats::add(
            &self.shared.stats.pipelined_statements,
            self.chain.len() as u64,
        );
        Ok(Piped::Lead(wire))
    }

    /// Hands the held connection to the next follower, when the session has any; whether it
    /// did. A session still tied to the connection (which an eligible statement cannot make
    /// it) would have the followers' replies arrive for its own next statement: the
    /// connection is closed instead, and the followers run on their own.
    pub(crate) fn pass_to_followers(&mut self) -> bool {
        if self.chain.is_empty() {
            return false;
        }
        let chain = std::mem::take(&mut self.chain);
        if let Some(b) = self.backend.take() {
            if self.pins != 0 || self.hold_next || b.conn_ref().in_transaction() {
                tracing::warn!(
                    session = self.handle.id,
                    "a pipelined statement left state on its connection: closing it"
                );
                drop(chain);
                drop(b);
                return true;
            }
            pass_on(&self.shared, b, chain);
        }
        true
    }
}

/// Gives the connection to the first follower still there, else back to the pool.
pub(crate) fn pass_on(shared: &Arc<Shared>, conn: PooledConn, mut chain: Chain) {
    let Some(next) = chain.pop_front() else {
        shared.pool.checkin(conn, true);
        return;
    };
    if let Err(Turn(mut conn, rest)) = next.turn.send(Turn(conn, chain)) {
        // That session is gone: its reply comes next on the connection.
        let shared = shared.clone();
        tokio::spawn(async move {
            match conn.conn().read_reply(Expect::ResultSets).await {
                Ok(_) | Err(weir_backend::BackendError::Server(_)) => pass_on(&shared, conn, rest),
                // The followers after it run on their own.
                Err(_) => conn.close().await,
            }
        });
    }
}
