//! Streams a backend's reply to the client packet by packet, with backpressure: bytes are
//! written to the client before more are read from the server, so memory stays bounded by
//! the read buffer whatever the size of the result.
//!
//! Packets are forwarded in place (only their sequence byte is rewritten); the only packets
//! weir builds itself are the EOF translations for clients that negotiated
//! CLIENT_DEPRECATE_EOF, since backends are always spoken to in the classic EOF form.
//!
//! A [`ReplyGuard`] lets the statement timer withhold a reply that has not started to reach
//! the client: the relay then reads it to its end without forwarding it (so the connection
//! stays usable), and the session answers with its own error.

use crate::client::ClientConn;
use bytes::{Buf, BytesMut};
use std::sync::atomic::{AtomicU8, Ordering};
use tokio::io::AsyncWriteExt;
use weir_backend::{BackendConn, BackendError};
use weir_wire::msg::{ErrInfo, OkInfo};
use weir_wire::packet::write_packet;
use weir_wire::reply::{pass_rows, Expect, ReplyTracker, Role, CLASSIFY_BYTES};
use weir_wire::{cap, errcode, status, PacketHeader};

/// How a relayed reply ended.
#[derive(Debug, Default, Clone)]
pub struct ReplyOutcome {
    /// Status flags of the last OK/EOF.
    pub status: u16,
    /// The last OK packet, when the reply ended with one.
    pub last_ok: Option<OkInfo>,
    /// The error, when the reply ended with one.
    pub error: Option<ErrInfo>,
    /// For COM_STMT_PREPARE: the server's statement id, result columns and parameters.
    pub prepared_id: Option<u32>,
    /// For COM_STMT_PREPARE: result columns.
    pub prepared_columns: u16,
    /// For COM_STMT_PREPARE: parameters.
    pub prepared_params: u16,
    /// Rows relayed.
    pub rows: u64,
    /// Warnings of the last OK/EOF.
    pub warnings: u16,
    /// Bytes received from the backend.
    pub bytes: u64,
    /// Whether the last result was rows (not an OK).
    pub ended_with_rows: bool,
    /// Whether the reply held more than one result (multi-statements, CALL).
    pub several_results: bool,
    /// Whether any result of the reply had warnings (with multi-statements, the last one may
    /// have none and leave the earlier ones' in place).
    pub warned: bool,
    /// The reply ended with ERR 1317 before any of it reached the client, and was not
    /// forwarded ([`RelayExtras::withhold_interrupted`]): the session answers or runs the
    /// command again.
    pub withheld: bool,
}

impl ReplyOutcome {
    /// What `ROW_COUNT()` returns on the server after this reply, when that is certain: the
    /// affected rows of the last OK, -1 after rows or an error. Not for a `CALL` (see
    /// `several_results`), whose final OK says nothing of the procedure's statements.
    pub fn row_count(&self) -> Option<i64> {
        if self.error.is_some() {
            return Some(-1);
        }
        if self.ended_with_rows {
            return Some(-1);
        }
        self.last_ok
            .map(|ok| i64::try_from(ok.affected_rows).unwrap_or(i64::MAX))
    }

    fn end_result(&mut self, st: u16, rows: bool, warnings: u16) {
        self.warnings = warnings;
        self.warned |= warnings > 0;
        self.ended_with_rows = rows;
        if st & status::MORE_RESULTS_EXISTS != 0 {
            self.several_results = true;
        }
    }
}

/// Why a relay stopped before the reply ended.
#[derive(Debug, thiserror::Error)]
pub enum RelayError {
    /// The backend failed; `client_bytes` says whether the client already got part of a reply.
    #[error("{source}")]
    Backend {
        /// The failure.
        source: BackendError,
        /// Whether any reply byte reached the client.
        client_bytes: bool,
        /// Whether the command was written to the backend (it may then have run).
        sent: bool,
        /// Next sequence id for the client.
        next_seq: u8,
    },
    /// The client went away or sent a bad local-infile stream.
    #[error("client: {0}")]
    Client(std::io::Error),
}

/// Whether a reply still may be withheld from the client. The relay marks it sent before its
/// first write to the client; the statement timer switches it to discarding only while nothing
/// was sent. Both run in the session's task: the atomic only keeps the session future `Send`.
#[derive(Debug, Default)]
pub struct ReplyGuard(AtomicU8);

const UNSENT: u8 = 0;
const SENT: u8 = 1;
const DISCARD: u8 = 2;

impl ReplyGuard {
    /// Switches to discarding the reply; false when part of it already reached the client.
    pub fn discard(&self) -> bool {
        if self.0.load(Ordering::Relaxed) == UNSENT {
            self.0.store(DISCARD, Ordering::Relaxed);
            return true;
        }
        false
    }

    /// Whether any reply byte was written to the client.
    pub fn sent(&self) -> bool {
        self.0.load(Ordering::Relaxed) == SENT
    }

    fn discarding(&self) -> bool {
        self.0.load(Ordering::Relaxed) == DISCARD
    }

    /// Called before writing to the client: false when the reply is being discarded.
    fn begin_write(&self) -> bool {
        match self.0.load(Ordering::Relaxed) {
            SENT => true,
            DISCARD => false,
            _ => {
                self.0.store(SENT, Ordering::Relaxed);
                true
            }
        }
    }
}

/// A copy of a reply taken while it is relayed, for the query cache: whole packets as the
/// backend sent them (classic EOFs, sequence ids as relayed), up to a size limit.
#[derive(Debug, Default)]
pub struct Capture {
    /// The reply's bytes so far; emptied when the limit is passed.
    pub buf: BytesMut,
    /// The most bytes kept.
    pub limit: usize,
    /// Whether the reply went over the limit (or could not be kept): nothing to store.
    pub overflow: bool,
}

impl Capture {
    /// A capture of at most `limit` bytes.
    pub fn new(limit: usize) -> Capture {
        Capture {
            buf: BytesMut::new(),
            limit,
            overflow: false,
        }
    }

    fn take(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        if self.buf.len() + bytes.len() > self.limit {
            self.overflow = true;
            self.buf = BytesMut::new();
            return;
        }
        self.buf.extend_from_slice(bytes);
    }

    fn restart(&mut self) {
        self.buf.clear();
        self.overflow = false;
    }
}

/// What a relay does besides passing the reply on.
#[derive(Debug, Default)]
pub struct RelayExtras<'a> {
    /// For a COM_STMT_PREPARE: the statement id the client gets instead of the server's.
    pub client_stmt_id: Option<u32>,
    /// Keep a copy of the reply here.
    pub capture: Option<&'a mut Capture>,
    /// Do not forward a reply that ends with ERR 1317 (query interrupted) before any of it
    /// reached the client, when it may come from a KILL QUERY meant for the statement before
    /// it on a pipe.
    pub withhold_interrupted: Option<Withhold<'a>>,
    /// Cancelled when the session is killed (`KILL <id>`; not at shutdown, where replies under
    /// way must still reach their clients): nothing more of the reply is
    /// forwarded, since the server closes a killed connection without a word (a client
    /// reading the 1317 of weir's KILL QUERY would take the connection for usable).
    pub session_killed: Option<&'a tokio_util::sync::CancellationToken>,
}

/// When a reply ending in ERR 1317 on a pipe may not be its statement's own (see
/// [`RelayExtras::withhold_interrupted`]).
#[derive(Debug)]
pub struct Withhold<'a> {
    /// The connection's KILL QUERY count when the command was written.
    pub kills_at_write: u64,
    /// The connection's KILL QUERY count (`BackendConn::kill_queries`).
    pub kill_queries: &'a std::sync::atomic::AtomicU64,
    /// Whether the session's own client asked for a KILL QUERY of the command.
    pub requested: &'a std::sync::atomic::AtomicBool,
}

impl Withhold<'_> {
    /// Whether a KILL weir sent for another statement may have stopped this one, and its
    /// client did not ask for one: only then is its 1317 held back (the statement runs
    /// again). Otherwise the reply is the statement's own and goes as the server sent it,
    /// metadata and all: drivers tell a timeout by it (Connector/J's setQueryTimeout).
    fn applies(&self) -> bool {
        !self.requested.load(Ordering::SeqCst)
            && crate::exec::kill_may_have_hit(
                self.kills_at_write,
                self.kill_queries.load(Ordering::Relaxed),
            )
    }
}

struct Relay<'a> {
    client: &'a mut ClientConn,
    conn: &'a mut BackendConn,
    tracker: ReplyTracker,
    client_seq: u8,
    deprecate_eof: bool,
    guard: &'a ReplyGuard,
    client_quiet: bool,
    out: ReplyOutcome,
    max_packet: usize,
    client_stmt_id: Option<u32>,
    capture: Option<&'a mut Capture>,
    withhold_interrupted: Option<Withhold<'a>>,
    session_killed: Option<&'a tokio_util::sync::CancellationToken>,
    /// The connection tracks session state and the client did not ask for it: its OKs lose
    /// the state changes (`weir_backend::adapted_caps`).
    untracked: bool,
    /// The connection may get LOAD DATA LOCAL file requests the client cannot answer.
    refuse_local_infile: bool,
    /// A file request was answered with no file for a client without CLIENT_LOCAL_FILES: the
    /// statement's OK becomes the error the server would have given it.
    infile_refused: bool,
}

/// Relays the reply to a command already sent to `conn`. `client_seq` is the sequence id the
/// client expects for the first reply packet; `guard` says whether it still goes to the client.
pub async fn relay_reply<'a>(
    client: &'a mut ClientConn,
    conn: &'a mut BackendConn,
    expect: Expect,
    client_seq: u8,
    max_packet: usize,
    guard: &'a ReplyGuard,
    extras: RelayExtras<'a>,
) -> Result<ReplyOutcome, RelayError> {
    let deprecate_eof = client.caps & cap::DEPRECATE_EOF != 0;
    let lacks = |c: u32| client.caps & c == 0 && conn.capabilities & c != 0;
    let untracked = lacks(cap::SESSION_TRACK);
    let refuse_local_infile = lacks(cap::LOCAL_FILES);
    let mut capture = extras.capture;
    if let Some(c) = capture.as_deref_mut() {
        c.restart();
    }
    // Replies are staged in the client's write buffer only while being relayed.
    debug_assert!(client.wbuf.is_empty());
    let mut r = Relay {
        client,
        conn,
        tracker: ReplyTracker::new(expect),
        client_seq,
        deprecate_eof,
        guard,
        client_quiet: false,
        out: ReplyOutcome::default(),
        max_packet,
        client_stmt_id: extras.client_stmt_id,
        capture,
        withhold_interrupted: extras.withhold_interrupted,
        session_killed: extras.session_killed,
        untracked,
        refuse_local_infile,
        infile_refused: false,
    };
    r.run().await?;
    // A reply without status flags leaves the connection's as they were: an error inside a
    // transaction must not make it look finished (the connection would go back to the pool
    // with the transaction open).
    if let Some(st) = r.tracker.last_status() {
        r.conn.set_status(st);
    }
    r.out.status = r.conn.status;
    r.conn.last_used = std::time::Instant::now();
    Ok(r.out)
}

impl Relay<'_> {
    fn backend_err(&self, e: impl Into<BackendError>) -> RelayError {
        RelayError::Backend {
            source: e.into(),
            client_bytes: self.guard.sent(),
            sent: true,
            next_seq: self.client_seq,
        }
    }

    /// Sends the client what is staged and `rbuf[from..to]`, in one write: straight from the
    /// read buffer when nothing is staged (the common case), else after the staged bytes.
    async fn write_client(&mut self, from: usize, to: usize) -> Result<(), RelayError> {
        let staged = !self.client.wbuf.is_empty();
        if to <= from && !staged {
            return Ok(());
        }
        if self
            .session_killed
            .is_some_and(tokio_util::sync::CancellationToken::is_cancelled)
        {
            // `KILL <id>` of this session: as on the server, nothing more of the reply reaches
            // the client (not the rows left, not the ERR 1317 of weir's KILL QUERY, not an OK
            // the statement ended with), and the connection closes.
            self.client.wbuf.clear();
            return Err(RelayError::Client(std::io::Error::new(
                std::io::ErrorKind::ConnectionAborted,
                "the session was killed",
            )));
        }
        if !self.guard.begin_write() {
            self.client.wbuf.clear();
            return Ok(());
        }
        if staged {
            self.stage(from, to);
        }
        let client = &mut *self.client;
        let out = if staged {
            &client.wbuf[..]
        } else {
            &self.conn.rbuf[from..to]
        };
        client.bytes_out += out.len() as u64;
        crate::client::write_all_timed(
            &mut client.stream,
            out,
            client.write_timeout_s,
            client.killed.as_ref(),
        )
        .await
        .map_err(RelayError::Client)?;
        client.wbuf.clear();
        Ok(())
    }

    /// Copies `rbuf[from..to]` to the client's write buffer, so that what a translation leaves
    /// out or adds does not split the reply into several writes (each a segment the client
    /// may wake up for).
    fn stage(&mut self, from: usize, to: usize) {
        if to > from {
            self.client
                .wbuf
                .extend_from_slice(&self.conn.rbuf[from..to]);
        }
    }

    /// Stages the OK packet with header 0xFE that ends rows for a CLIENT_DEPRECATE_EOF client.
    fn stage_ok_eof(&mut self, warnings: u16, status: u16) {
        // The EOF it is made from may say the session state changed, but carries no change
        // to go with the flag (an OK with the flag and no changes is malformed for a client
        // that tracks them); the server's OK to a client that does not track has no flag.
        let status = status & !status::SESSION_STATE_CHANGED;
        weir_wire::msg::write_end_of_rows(
            &mut self.client.wbuf,
            self.client_seq,
            cap::DEPRECATE_EOF,
            status,
            warnings,
        );
        self.client_seq = self.client_seq.wrapping_add(1);
    }

    /// Drops the first `pos` bytes of the read buffer, relayed or skipped, keeping a copy
    /// when capturing.
    fn consume(&mut self, pos: usize) {
        if let Some(c) = self.capture.as_deref_mut() {
            c.take(&self.conn.rbuf[..pos]);
        }
        self.conn.rbuf.advance(pos);
    }

    /// Flushes forwarded bytes, drops them from the buffer and reads more from the backend.
    async fn refill(&mut self, flush_from: usize, pos: usize) -> Result<(), RelayError> {
        self.write_client(flush_from, pos).await?;
        self.consume(pos);
        loop {
            // Watch the client too: one that hangs up mid-statement must not leave the
            // statement (and its transaction) running on the backend until it ends by itself.
            tokio::select! {
                biased;
                r = self.conn.fill() => {
                    return match r {
                        Ok(n) => {
                            self.out.bytes += n as u64;
                            Ok(())
                        }
                        Err(e) => Err(self.backend_err(e)),
                    };
                }
                r = self.client.read_more(), if !self.client_quiet => match r {
                    Ok(0) => {
                        return Err(RelayError::Client(std::io::Error::new(
                            std::io::ErrorKind::ConnectionAborted,
                            "client closed the connection during a statement",
                        )))
                    }
                    Ok(_) => {
                        // A pipelined command: it waits in the buffer; stop polling so a
                        // pipelining client cannot make weir buffer without bound.
                        self.client_quiet = true;
                    }
                    Err(e) => return Err(RelayError::Client(e)),
                },
            }
        }
    }

    /// Reads until the packet at `pos` (payload `len`) is whole in the buffer, keeping what
    /// comes before it for the client.
    async fn buffer_whole(
        &mut self,
        flush_from: &mut usize,
        pos: &mut usize,
        len: usize,
    ) -> Result<(), RelayError> {
        while self.conn.rbuf.len() - *pos < 4 + len {
            self.stage(*flush_from, *pos);
            self.consume(*pos);
            *pos = 0;
            *flush_from = 0;
            if let Err(e) = self.conn.fill().await {
                return Err(self.backend_err(e));
            }
        }
        Ok(())
    }

    /// Leaves the packet at `pos` (payload `len`) out of what the client gets, keeping what
    /// comes before it.
    async fn skip_packet(
        &mut self,
        flush_from: &mut usize,
        pos: &mut usize,
        len: usize,
    ) -> Result<(), RelayError> {
        self.stage(*flush_from, *pos);
        let mut left = 4 + len;
        loop {
            let n = left.min(self.conn.rbuf.len() - *pos);
            *pos += n;
            left -= n;
            if left == 0 {
                break;
            }
            self.consume(*pos);
            *pos = 0;
            if let Err(e) = self.conn.fill().await {
                return Err(self.backend_err(e));
            }
        }
        *flush_from = *pos;
        Ok(())
    }

    /// Reads the rest of a reply the client is not to see, answering any further file
    /// request with no file.
    async fn drain_rest(&mut self) -> Result<(), RelayError> {
        loop {
            if self.tracker.is_done() {
                return Ok(());
            }
            let need = match PacketHeader::parse(&self.conn.rbuf) {
                Some(h) if self.conn.rbuf.len() >= 4 + h.len.min(CLASSIFY_BYTES) => h,
                _ => {
                    if let Err(e) = self.conn.fill().await {
                        return Err(self.backend_err(e));
                    }
                    continue;
                }
            };
            let head = &self.conn.rbuf[4..4 + need.len.min(CLASSIFY_BYTES)];
            let role = self
                .tracker
                .feed(need.len, head)
                .map_err(|e| self.backend_err(e))?;
            let (mut flush_from, mut pos) = (0, 0);
            self.skip_packet(&mut flush_from, &mut pos, need.len)
                .await?;
            self.consume(pos);
            if role == Role::LocalInfile {
                let empty = [0, 0, 0, need.seq.wrapping_add(1)];
                if let Err(e) = self.conn.stream.write_all(&empty).await {
                    return Err(self.backend_err(e));
                }
                self.tracker.local_infile_sent();
            }
        }
    }

    async fn run(&mut self) -> Result<(), RelayError> {
        let mut pos = 0usize;
        let mut flush_from = 0usize;
        // Body bytes of the current packet still to pass through.
        let mut pending = 0usize;
        loop {
            if pending > 0 {
                let n = pending.min(self.conn.rbuf.len() - pos);
                pos += n;
                pending -= n;
                if pending > 0 {
                    self.refill(flush_from, pos).await?;
                    pos = 0;
                    flush_from = 0;
                    continue;
                }
            }
            if self.tracker.is_done() {
                break;
            }
            if self.tracker.awaits_local_infile() {
                self.write_client(flush_from, pos).await?;
                self.consume(pos);
                if let Some(c) = self.capture.as_deref_mut() {
                    // A LOAD DATA reply is no cacheable result.
                    c.overflow = true;
                }
                pos = 0;
                flush_from = 0;
                self.local_infile().await?;
                continue;
            }
            if self.tracker.in_rows() {
                // The bulk of a big result: whole rows pass with only their sequence ids
                // rewritten; the packet that stops the run goes through the tracker below.
                let passed = pass_rows(&mut self.conn.rbuf[pos..], self.client_seq);
                pos += passed.bytes;
                self.out.rows += passed.rows;
                self.client_seq = passed.next_seq;
            }
            let avail = self.conn.rbuf.len() - pos;
            let Some(h) = PacketHeader::parse(&self.conn.rbuf[pos..]) else {
                self.refill(flush_from, pos).await?;
                pos = 0;
                flush_from = 0;
                continue;
            };
            // Small packets are taken whole, so OK/ERR/EOF packets can be read in full; big
            // ones (rows) are classified from their first bytes and streamed through.
            let need = if h.len <= 1024 {
                4 + h.len
            } else {
                4 + CLASSIFY_BYTES
            };
            if avail < need {
                self.refill(flush_from, pos).await?;
                pos = 0;
                flush_from = 0;
                continue;
            }
            let head = &self.conn.rbuf[pos + 4..pos + 4 + h.len.min(CLASSIFY_BYTES)];
            let role = self
                .tracker
                .feed(h.len, head)
                .map_err(|e| self.backend_err(e))?;
            if role == Role::Err {
                // After a refused file, the server's own error (no such table, local_infile
                // off) stands.
                self.infile_refused = false;
            }
            match role {
                Role::LocalInfile if self.refuse_local_infile && !self.guard.discarding() => {
                    // The client cannot send a file: the server gets none, and the client the
                    // refusal it would have had directly.
                    self.skip_packet(&mut flush_from, &mut pos, h.len).await?;
                    let empty = [0, 0, 0, h.seq.wrapping_add(1)];
                    if let Err(e) = self.conn.stream.write_all(&empty).await {
                        return Err(self.backend_err(e));
                    }
                    self.tracker.local_infile_sent();
                    self.infile_refused = true;
                    if let Some(c) = self.capture.as_deref_mut() {
                        c.overflow = true;
                    }
                    continue;
                }
                Role::Ok(ok) if self.infile_refused => {
                    self.infile_refused = false;
                    self.skip_packet(&mut flush_from, &mut pos, h.len).await?;
                    let e = local_infile_refusal(&self.conn.server_version);
                    e.write(&mut self.client.wbuf, self.client_seq);
                    self.client_seq = self.client_seq.wrapping_add(1);
                    self.out.error = Some(e);
                    if ok.status & status::MORE_RESULTS_EXISTS != 0 {
                        // Directly, the error would have ended the batch: the rest of it is
                        // read but not shown.
                        self.write_client(flush_from, pos).await?;
                        self.consume(pos);
                        return self.drain_rest().await;
                    }
                    continue;
                }
                Role::Ok(ok)
                    if self.untracked && ok.status & status::SESSION_STATE_CHANGED != 0 =>
                {
                    self.out.end_result(ok.status, false, ok.warnings);
                    self.out.last_ok = Some(ok);
                    self.buffer_whole(&mut flush_from, &mut pos, h.len).await?;
                    self.stage(flush_from, pos);
                    let payload = &self.conn.rbuf[pos + 4..pos + 4 + h.len];
                    if let Err(e) =
                        OkInfo::write_untracked(&mut self.client.wbuf, self.client_seq, payload)
                    {
                        return Err(self.backend_err(e));
                    }
                    self.client_seq = self.client_seq.wrapping_add(1);
                    pos += 4 + h.len;
                    flush_from = pos;
                    if let Some(c) = self.capture.as_deref_mut() {
                        c.overflow = true;
                    }
                    continue;
                }
                Role::DefinitionsEof { status: st } if self.deprecate_eof => {
                    // Definitions EOFs are small: the whole packet is in the buffer.
                    self.stage(flush_from, pos);
                    pos += 4 + h.len;
                    flush_from = pos;
                    if self.tracker.cursor_opened() {
                        // The end of metadata must still be signalled when a cursor opened
                        // (the flag alone may be a stored procedure's cursor, rows following).
                        self.stage_ok_eof(0, st);
                    }
                    continue;
                }
                Role::EndOfRows { warnings, status } if self.deprecate_eof => {
                    self.out.end_result(status, true, warnings);
                    self.stage(flush_from, pos);
                    pos += 4 + h.len;
                    flush_from = pos;
                    self.stage_ok_eof(warnings, status);
                    continue;
                }
                Role::Row => self.out.rows += 1,
                Role::Ok(ok) => {
                    self.out.end_result(ok.status, false, ok.warnings);
                    self.out.last_ok = Some(ok);
                }
                Role::EndOfRows { warnings, status } => {
                    self.out.end_result(status, true, warnings);
                }
                Role::PrepareOk {
                    statement_id,
                    columns,
                    params,
                } => {
                    self.out.prepared_id = Some(statement_id);
                    self.out.prepared_columns = columns;
                    self.out.prepared_params = params;
                    // A prepare OK is 12 bytes: whole in the buffer.
                    if let (Some(id), Some(field)) = (
                        self.client_stmt_id,
                        self.conn.rbuf.get_mut(pos + 5..pos + 9),
                    ) {
                        field.copy_from_slice(&id.to_le_bytes());
                    }
                }
                Role::Err if avail >= 4 + h.len => {
                    self.out.error = ErrInfo::parse(&self.conn.rbuf[pos + 4..pos + 4 + h.len]).ok();
                    // The server may have sent the result's metadata before the KILL: none
                    // of it reached the client yet (the guard says so), so all of it goes.
                    if (self
                        .withhold_interrupted
                        .as_ref()
                        .is_some_and(Withhold::applies)
                        || self
                            .session_killed
                            .is_some_and(tokio_util::sync::CancellationToken::is_cancelled))
                        && self
                            .out
                            .error
                            .as_ref()
                            .is_some_and(|e| e.code == errcode::ER_QUERY_INTERRUPTED)
                        && self.guard.discard()
                    {
                        self.out.withheld = true;
                    }
                }
                _ => {}
            }
            self.conn.rbuf[pos + 3] = self.client_seq;
            self.client_seq = self.client_seq.wrapping_add(1);
            pos += 4;
            pending = h.len;
            if pending == 0 {
                continue;
            }
        }
        self.write_client(flush_from, pos).await?;
        self.consume(pos);
        Ok(())
    }

    /// Relays the client's file for LOAD DATA LOCAL INFILE until its empty closing packet.
    async fn local_infile(&mut self) -> Result<(), RelayError> {
        if self.guard.discarding() {
            // The client never saw the request: answer it with an empty file.
            let empty = [0, 0, 0, self.client_seq];
            if let Err(e) = self.conn.stream.write_all(&empty).await {
                return Err(self.backend_err(e));
            }
            self.tracker.local_infile_sent();
            return Ok(());
        }
        // The backend numbers its packets like the client here: nothing was dropped before the
        // request, so the client's sequence ids can be forwarded unchanged.
        loop {
            let cmd = match self.client.read_command(self.max_packet).await {
                Ok(c) => c,
                Err(crate::client::ClientError::Io(e)) => return Err(RelayError::Client(e)),
                Err(e) => {
                    return Err(RelayError::Client(std::io::Error::other(e.to_string())));
                }
            };
            self.client_seq = cmd.last_seq.wrapping_add(1);
            let empty = cmd.raw.len() == 4;
            if let Err(e) = self.conn.stream.write_all(&cmd.raw).await {
                return Err(self.backend_err(e));
            }
            if empty {
                break;
            }
        }
        self.tracker.local_infile_sent();
        Ok(())
    }
}

/// Sends a whole command to the backend: the client's raw frames, sequence ids as received.
pub async fn forward_command(conn: &mut BackendConn, raw: &[u8]) -> Result<(), BackendError> {
    conn.stream.write_all(raw).await?;
    Ok(())
}

/// Sends a command built by weir (not the client's bytes) to the backend.
pub async fn send_built_command(
    conn: &mut BackendConn,
    payload: &[u8],
) -> Result<(), BackendError> {
    let mut b = BytesMut::with_capacity(payload.len() + 8);
    write_packet(&mut b, 0, payload);
    conn.stream.write_all(&b).await?;
    Ok(())
}

/// The error a server gives LOAD DATA LOCAL from a client without CLIENT_LOCAL_FILES: MariaDB's
/// or MySQL's, after the server's version.
pub(crate) fn local_infile_refusal(server_version: &str) -> ErrInfo {
    if server_version.contains("MariaDB") {
        ErrInfo::new(
            errcode::ER_LOAD_INFILE_CAPABILITY_DISABLED,
            "HY000",
            "The used command is not allowed because the MariaDB server or client has disabled \
             the local infile capability",
        )
    } else {
        ErrInfo::new(
            errcode::ER_CLIENT_LOCAL_FILES_DISABLED,
            "42000",
            "Loading local data is disabled; this must be enabled on both the client and \
             server sides",
        )
    }
}
