//! The query cache on the data path: which statements a rule's `cache_ttl` may answer from
//! memory, the key their replies are stored under, hits sent to the client, and misses run on
//! a backend with their reply captured and stored.
//!
//! # What is cached
//!
//! A lone SELECT (text protocol, or a prepared statement's execution) matching a rule with
//! `cache_ttl` > 0, when the session is not in a transaction, has autocommit on and holds
//! nothing on a backend connection that the key would not cover (temporary tables, variables
//! weir does not follow: [`Session::tied`]). Never: locking reads (FOR UPDATE, FOR SHARE, LOCK
//! IN SHARE MODE), `SELECT ... INTO`, statements that read what the previous one left
//! (FOUND_ROWS(), LAST_INSERT_ID(), SHOW WARNINGS...), multi-statements, executions that open a
//! cursor or carry long data. A reply is stored only when it is complete and ended without an
//! error or warnings, outside a transaction, and within the per-entry limit
//! (mysql-threshold_resultset_size, and a shard of the cache); an empty result set only with
//! the rule's `cache_empty_result` (else mysql-query_cache_stores_empty_result).
//!
//! # The key
//!
//! Everything that changes the bytes of a reply: text or binary protocol, the client
//! capabilities that change results, the handshake collation, every session variable the client
//! set (charset and collation, time_zone, sql_mode, user variables... as one fingerprint), user,
//! schema, then the query text after rewrites, or for an execution the statement text with its
//! parameter types and values.
//!
//! # Coalescing
//!
//! Concurrent misses of one key run once: the first session runs the statement while the
//! others wait, up to the rule's `cache_timeout` (else as long as the statement may run), and
//! are answered from the stored reply; if it stores nothing they all run the statement.

use crate::client::{ClientError, Command};
use crate::relay::{Capture, ReplyOutcome};
use crate::session::Session;
use std::time::Duration;
use weir_cache::{Fill, Lookup};
use weir_sql::{QueryScan, StatementKind};
use weir_wire::reply::Expect;
use weir_wire::status;

/// Key prefix of text-protocol queries.
const KIND_QUERY: u8 = b'Q';
/// Key prefix of prepared-statement executions (binary result sets).
const KIND_EXECUTE: u8 = b'E';

/// What the rules said about caching one statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CacheRule {
    /// How long a stored reply stays fresh (the rule's cache_ttl).
    pub(crate) ttl: Duration,
    /// Whether an empty result set is stored; `None`: mysql-query_cache_stores_empty_result.
    pub(crate) empty_result: Option<bool>,
    /// How long to wait for another session's fill of the same key (the rule's cache_timeout).
    pub(crate) wait: Option<Duration>,
}

impl CacheRule {
    /// The cache settings of a decision, when its cache_ttl is set and positive.
    pub(crate) fn from_decision(d: &weir_rules::Decision) -> Option<CacheRule> {
        let ms = |v: u32| Duration::from_millis(u64::from(v));
        let ttl = d.cache_ttl.filter(|t| *t > 0)?;
        Some(CacheRule {
            ttl: ms(ttl),
            empty_result: d.cache_empty_result,
            wait: d.cache_timeout.map(ms),
        })
    }
}

/// Whether a statement's reply depends only on what the key holds: a lone, non-locking
/// SELECT that assigns nothing and reads nothing the previous statement left behind.
pub(crate) fn cacheable_statement(scan: &QueryScan) -> bool {
    scan.kind == StatementKind::Select
        && scan.statements == 1
        && !scan.locking_read
        && !scan.into
        && !scan.pin.any()
        && !scan.reads_last_insert_id
        && !scan.reads_previous_result
        && !scan.calc_found_rows
        // NEXTVAL() and the like: each run must reach the server.
        && !scan.sequence_write
}

fn push_field(key: &mut Vec<u8>, field: &[u8]) {
    key.extend_from_slice(&(field.len() as u32).to_le_bytes());
    key.extend_from_slice(field);
}

impl Session {
    /// Whether the session may be answered from, or fill, the cache now.
    pub(crate) fn cache_usable(&self) -> bool {
        self.shared.cache.capacity() > 0 && !self.tied() && self.autocommit()
    }

    /// Starts `key` with what every key of this session holds.
    fn begin_key(&self, key: &mut Vec<u8>, kind: u8, hostgroup: u32) {
        key.clear();
        key.push(kind);
        // The servers it runs on: rules may send one text to different hostgroups (by client
        // address, proxy port, a flag chain), which hold different data.
        key.extend_from_slice(&hostgroup.to_le_bytes());
        // CLIENT_PS_MULTI_RESULTS changes only a prepared CALL's reply, never cached.
        let capabilities = self.login.key.capabilities & !weir_wire::cap::PS_MULTI_RESULTS;
        key.extend_from_slice(&capabilities.to_le_bytes());
        key.extend_from_slice(&self.login.key.mariadb_capabilities.to_le_bytes());
        // Pooled connections track session state for every client; only those that asked for
        // it see the changes (in a reply's OKs and status flags).
        key.push(u8::from(
            self.client.caps & weir_wire::cap::SESSION_TRACK != 0,
        ));
        // IGNORE_SPACE changes how the text reads (and whether it does).
        key.push(u8::from(self.login.ignore_space));
        // Several statements in one text run, or fail.
        key.push(u8::from(self.login.multi_statements));
        key.push(self.login.collation);
        key.extend_from_slice(&self.vars.fingerprint().to_le_bytes());
        push_field(key, self.user.username.as_bytes());
        match &self.schema {
            Some(s) => push_field(key, s.as_bytes()),
            None => key.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
    }

    /// The key of a text-protocol query (its text after rewrites), in `self.cache_key`.
    pub(crate) fn query_key(&mut self, text: &[u8], hostgroup: u32) {
        let mut key = std::mem::take(&mut self.cache_key);
        self.begin_key(&mut key, KIND_QUERY, hostgroup);
        key.extend_from_slice(text);
        self.cache_key = key;
    }

    /// The key of a prepared statement's execution: where it was prepared (its schema, sql_mode
    /// and charsets, which may differ from the session's now), its text and parameter types,
    /// then the `params` parts of the execute packet (everything but the statement id and the
    /// types).
    pub(crate) fn execute_key(
        &self,
        key: &mut Vec<u8>,
        stmt: &crate::stmt::GlobalStmt,
        types: &[u8],
        params: &[&[u8]],
        hostgroup: u32,
    ) {
        self.begin_key(key, KIND_EXECUTE, hostgroup);
        match &stmt.schema {
            Some(s) => push_field(key, s.as_bytes()),
            None => key.extend_from_slice(&u32::MAX.to_le_bytes()),
        }
        key.extend_from_slice(&stmt.parse_fingerprint.to_le_bytes());
        push_field(key, &stmt.text);
        push_field(key, types);
        for p in params {
            key.extend_from_slice(p);
        }
    }

    /// Sends a stored reply to the client. `None` (nothing sent) when the bytes are not a
    /// whole reply, which only a bug can cause: the caller then runs the statement.
    pub(crate) async fn send_cached(
        &mut self,
        reply: &[u8],
        seq: u8,
    ) -> Result<Option<ReplyOutcome>, ClientError> {
        let start = self.client.wbuf.len();
        let caps = self.client.caps;
        match weir_wire::reply::replay(reply, Expect::ResultSets, seq, caps, &mut self.client.wbuf)
        {
            Ok(r) => {
                if self.backend.is_some() {
                    // A hit is the client's last statement now: a connection kept for what
                    // the one before left there (an auto-increment insert, warnings) would
                    // answer for that one. Those affinities end (cache_usable: nothing ties
                    // it); what a hit leaves is known to weir (no warnings, -1 changed rows,
                    // its rows found) and LAST_INSERT_ID() is brought to any connection.
                    // mysql-multiplexing=false and connection_delay_multiplex_ms still keep it.
                    self.keep_for = 0;
                    self.keep_until = None;
                    self.release();
                }
                self.after_hit = true;
                // A hit leaves no diagnostics, on no connection.
                self.diag_on = None;
                self.client.flush_wbuf().await?;
                self.cache_hit = true;
                Ok(Some(ReplyOutcome {
                    status: r.status,
                    rows: r.rows,
                    // Only result sets are stored.
                    ended_with_rows: true,
                    ..Default::default()
                }))
            }
            Err(e) => {
                self.client.wbuf.truncate(start);
                tracing::warn!(error = %e, "stored reply is not a whole reply: running the statement");
                Ok(None)
            }
        }
    }

    /// A stored reply for the key in `self.cache_key`, when fresh, sent to the client.
    pub(crate) async fn try_cached(
        &mut self,
        seq: u8,
    ) -> Result<Option<ReplyOutcome>, ClientError> {
        match self.shared.cache.get(&self.cache_key) {
            Some(reply) => self.send_cached(&reply, seq).await,
            None => Ok(None),
        }
    }

    /// Starts capturing the reply of the statement about to run for `fill`.
    pub(crate) fn begin_fill(&mut self) {
        let m = &self.shared.runtime.load().mysql;
        let limit = (m.threshold_resultset_size as u64).min(self.shared.cache.max_entry_bytes());
        self.capture = Some(Capture::new(limit as usize));
    }

    /// Stores what was captured when the reply may be cached; otherwise drops the fill, which
    /// sends the sessions waiting for it to the backend.
    pub(crate) fn end_fill(
        &mut self,
        fill: Fill<'_>,
        outcome: Option<&ReplyOutcome>,
        rule: &CacheRule,
    ) {
        let Some(capture) = self.capture.take() else {
            return;
        };
        let Some(o) = outcome else {
            return;
        };
        let stores_empty = rule.empty_result.unwrap_or(
            self.shared
                .runtime
                .load()
                .mysql
                .query_cache_stores_empty_result,
        );
        let storable = o.error.is_none()
            && !capture.overflow
            && !capture.buf.is_empty()
            && o.status & (status::IN_TRANS | status::MORE_RESULTS_EXISTS) == 0
            && !o.warned
            && (o.rows > 0 || stores_empty);
        if storable {
            fill.store(capture.buf.freeze(), rule.ttl);
        }
    }

    /// Runs a text query through the cache: the stored reply when fresh, else the query on a
    /// backend (its reply stored when this session got the fill).
    pub(crate) async fn query_through_cache(
        &mut self,
        cmd: Command,
        run: RunQuery<'_>,
        rule: CacheRule,
    ) -> Result<Option<ReplyOutcome>, ClientError> {
        let seq = cmd.last_seq.wrapping_add(1);
        let hostgroup = run
            .decision
            .destination_hostgroup
            .unwrap_or(self.user.default_hostgroup);
        match &run.decision.rewritten {
            Some(text) => self.query_key(text, hostgroup),
            None => {
                let p = cmd.payload();
                self.query_key(p.get(1..).unwrap_or_default(), hostgroup);
            }
        }
        if let Some(o) = self.try_cached(seq).await? {
            return Ok(Some(o));
        }
        let cache = self.shared.cache.clone();
        let wait = rule.wait.unwrap_or(run.limits_timeout);
        let Some(lookup) = self.coalesced(&cache, hostgroup, wait, seq).await? else {
            return Ok(None);
        };
        let r = match lookup {
            Lookup::Hit(reply) => match self.send_cached(&reply, seq).await? {
                Some(o) => Ok(Some(o)),
                None => self.run_query(cmd, run).await,
            },
            Lookup::Bypass => self.run_query(cmd, run).await,
            Lookup::Fill(fill) => {
                self.begin_fill();
                let r = self.run_query(cmd, run).await;
                let outcome = r.as_ref().ok().and_then(|o| o.as_ref());
                self.end_fill(fill, outcome, &rule);
                r
            }
        };
        r
    }

    /// [`weir_cache::QueryCache::wait_or_fill`] while `hostgroup` has an ONLINE server. With
    /// none, every session runs the statement itself: each then waits for a server once (up
    /// to connect_timeout_server_max), where a waiter would wait for the filler's attempt and
    /// then for its own. A KILL or KILL QUERY of the session ends a wait for another
    /// session's fill as it ends a wait for a connection: the client is answered (1317, or
    /// 1927 and the session ends) and `None` returned.
    pub(crate) async fn coalesced<'c>(
        &mut self,
        cache: &'c weir_cache::QueryCache,
        hostgroup: u32,
        wait: Duration,
        seq: u8,
    ) -> Result<Option<Lookup<'c>>, ClientError> {
        if !self.shared.pool.has_usable(hostgroup) {
            return Ok(Some(Lookup::Bypass));
        }
        // Biased: a hit or a fill to make is taken without registering kill waiters.
        tokio::select! {
            biased;
            l = cache.wait_or_fill(&self.cache_key, wait) => return Ok(Some(l)),
            _ = self.handle.kill.cancelled() => {}
            () = self.handle.query_killed() => {}
        }
        self.answer_early_kill(seq, None).await?;
        Ok(None)
    }

    async fn run_query(
        &mut self,
        cmd: Command,
        run: RunQuery<'_>,
    ) -> Result<Option<ReplyOutcome>, ClientError> {
        self.run_decided(cmd, run.decision, run.mysql, run.pins, None, run.seq)
            .await
    }
}

/// What running a text query needs besides the command.
pub(crate) struct RunQuery<'a> {
    pub(crate) decision: &'a weir_rules::Decision,
    pub(crate) mysql: &'a weir_config::MysqlVariables,
    pub(crate) pins: u32,
    pub(crate) seq: u8,
    /// How long the statement may run (bounds the wait for another session's fill).
    pub(crate) limits_timeout: Duration,
}
