//! One handler per client command.

use crate::cache::{cacheable_statement, CacheRule, RunQuery};
use crate::client::{ClientError, Command};
use crate::exec::Limits;
use crate::relay::ReplyOutcome;
use crate::session::{lost_backend, Flow, Session};
use crate::{GlobalStats, SessionHandle, Shared};
use std::sync::Arc;
use weir_backend::BackendError;
use weir_sql::{Pin, StatementKind};
use weir_wire::handshake::ChangeUser;
use weir_wire::msg::ErrInfo;
use weir_wire::reply::Expect;
use weir_wire::{com, errcode, status};

/// Errors a SET gets before the server applies any of its assignments (parsing, an unknown
/// or read-only variable, a wrong value or type, a missing privilege): the SET changed
/// nothing. Others (1621, a session variable set back to DEFAULT that is read-only) come as
/// it applies them, after those before.
pub(crate) const SET_REFUSED_WHOLE: [u16; 8] = [1064, 1193, 1227, 1228, 1229, 1231, 1232, 1238];

impl Session {
    pub(crate) async fn dispatch(&mut self, cmd: Command) -> Result<Flow, ClientError> {
        let seq = cmd.last_seq.wrapping_add(1);
        self.early_kill_columns = None;
        if !matches!(
            cmd.code(),
            com::PING | com::QUERY | com::STMT_CLOSE | com::STMT_SEND_LONG_DATA
        ) {
            // The error a query failed with is shown by SHOW WARNINGS until the next
            // statement; other commands end that too (a reset, a change of user, a prepare,
            // an execution), but for those the server leaves the diagnostics alone after.
            self.last_error = None;
        }
        if !matches!(
            cmd.code(),
            com::PING | com::QUERY | com::STMT_CLOSE | com::STMT_SEND_LONG_DATA
        ) {
            // A query reads it first, then sets it again when it is a SELECT.
            self.found_rows = None;
            self.after_hit = false;
        }
        if !matches!(cmd.code(), com::PING | com::QUERY | com::STMT_EXECUTE) {
            // Known again only where the reply of a statement is seen; a query may read it
            // first. The server leaves ROW_COUNT() alone for a successful prepare, a close
            // and long data (a failed prepare and a reset are seen below).
            if !matches!(
                cmd.code(),
                com::STMT_PREPARE | com::STMT_CLOSE | com::STMT_SEND_LONG_DATA | com::STMT_RESET
            ) {
                self.row_count = None;
            }
            self.no_diagnostics = false;
        }
        match cmd.code() {
            com::QUIT => return Ok(Flow::Quit),
            com::QUERY => return self.query(cmd).await,
            com::PING => {
                // The server's ROW_COUNT() is 0 after a ping.
                self.row_count = self.row_count.map(|_| 0);
                self.client.send_ok(seq, &self.ok_status()).await?
            }
            com::INIT_DB => self.init_db(&cmd).await?,
            com::FIELD_LIST => return self.forward(cmd, Expect::FieldList, 0).await,
            com::STATISTICS => return self.forward(cmd, Expect::Single, 0).await,
            com::SET_OPTION => {
                // Multi-statements on (0) or off (1) is followed: the connection a statement
                // of the session gets is set the same way first. Anything else the server
                // takes pins; what it refuses (an unknown option, a malformed payload)
                // changed nothing.
                let option = match cmd.payload().get(1..) {
                    Some([lo, hi]) => Some(u16::from_le_bytes([*lo, *hi])),
                    _ => None,
                };
                self.effects = Default::default();
                match option {
                    Some(0) if !self.shared.runtime.load().mysql.client_multi_statements => {
                        let e = ErrInfo::new(
                            errcode::ER_NOT_SUPPORTED_YET,
                            "42000",
                            "multi-statements are disabled on this proxy \
                             (mysql-client_multi_statements = false)",
                        );
                        self.client.send_err(seq, &e).await?;
                        return Ok(Flow::Continue);
                    }
                    Some(o @ (0 | 1)) => self.effects.multi_statements = Some(o == 0),
                    _ => self.effects.pins_on_success = Pin::UNTRACKED,
                }
                return self.forward(cmd, Expect::Status, 0).await;
            }
            com::STMT_PREPARE => return self.prepare(cmd).await,
            com::STMT_EXECUTE => return self.execute(cmd).await,
            com::STMT_FETCH => return self.fetch(cmd).await,
            com::STMT_RESET => {
                // The server's ROW_COUNT() is 0 after a reset, as after a ping.
                self.row_count = self.row_count.map(|_| 0);
                return self.reset_statement(cmd).await;
            }
            // No reply to either.
            com::STMT_SEND_LONG_DATA => self.long_data(&cmd),
            com::STMT_CLOSE => return self.close_statement(&cmd).await,
            com::RESET_CONNECTION => {
                self.forget_session().await;
                self.client.send_ok(seq, &self.ok_status()).await?;
            }
            com::CHANGE_USER => return self.change_user(&cmd).await,
            com::PROCESS_KILL => {
                let p = cmd.payload();
                let id = p
                    .get(1..5)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u64);
                match id {
                    Some(id) => self.kill(id, false, seq).await?,
                    None => {
                        let e = ErrInfo::new(
                            errcode::ER_MALFORMED_PACKET,
                            "HY000",
                            "Malformed COM_PROCESS_KILL packet",
                        );
                        self.client.send_err(seq, &e).await?;
                    }
                }
            }
            other => {
                let e = ErrInfo::new(
                    errcode::ER_UNKNOWN_COM_ERROR,
                    "08S01",
                    format!(
                        "Unknown command: weir does not support {} (0x{other:02x})",
                        com::name(other)
                    ),
                );
                self.client.send_err(seq, &e).await?;
            }
        }
        Ok(Flow::Continue)
    }

    async fn query(&mut self, cmd: Command) -> Result<Flow, ClientError> {
        let seq = cmd.last_seq.wrapping_add(1);
        let lexing = self.lexing();
        let scan = {
            let p = cmd.payload();
            weir_sql::scan_with(p.get(1..).unwrap_or_default(), lexing)
        };
        self.counted = Some(scan.command);
        self.repeatable = crate::stmt::repeatable(&scan);
        let previous_row_count = self.row_count.take();
        let previous_found_rows = self.found_rows.take();
        let after_hit = std::mem::take(&mut self.after_hit);
        let no_diagnostics = std::mem::take(&mut self.no_diagnostics);
        let last_error = self.last_error.take();
        // A statement reading what the previous one left on its connection would read another
        // client's there.
        self.pipelinable =
            self.repeatable && !scan.reads_previous_result && !scan.reads_last_insert_id;
        if scan.kind == StatementKind::Kill || scan.kill_in_batch {
            if let (Some((query_only, id)), false) = (scan.kill, scan.kill_in_batch) {
                self.kill(id, query_only, seq).await?;
                return Ok(Flow::Continue);
            }
            // Ids through weir are weir's sessions; a KILL the server ran would hit a pooled
            // connection, possibly another client's statement.
            let e = ErrInfo::new(
                errcode::ER_NOT_SUPPORTED_YET,
                "42000",
                "weir runs KILL [HARD | SOFT] [CONNECTION | QUERY] <id> alone in its statement, \
                 with the id of a weir session (stats_mysql_processlist); KILL USER, KILL QUERY ID \
                 and KILL among other statements are refused",
            );
            self.client.send_err(seq, &e).await?;
            return Ok(Flow::Continue);
        }
        if scan.load_data_local && self.client.caps & weir_wire::cap::LOCAL_FILES == 0 {
            // The server's refusal, before anything runs: backend connections take files (so
            // that clients with and without CLIENT_LOCAL_FILES share them), and would run the
            // statement, and the rest of its batch, with no file.
            let version =
                crate::auth::announced_version(&self.shared.runtime.load().mysql.server_version);
            let e = crate::relay::local_infile_refusal(&version);
            self.client.send_err(seq, &e).await?;
            self.row_count = Some(-1);
            self.last_error = Some(e);
            return Ok(Flow::Continue);
        }
        let rt = self.shared.runtime.load_full();
        let m = &rt.mysql;
        let digest = self.process_query(&cmd, m);
        let mut decision = std::mem::take(&mut self.decision);
        let pins = {
            let p = cmd.payload();
            self.plan_effects(p.get(1..).unwrap_or_default(), &scan, lexing)
        };
        let plain = decision.error_msg.is_none()
            && decision.ok_msg.is_none()
            && decision.rewritten.is_none();
        // A statement reading the client's diagnostics (SHOW WARNINGS, `SELECT @@warning_count`
        // ...) runs where they are, on the connection the session still holds since they came;
        // anywhere else it would read another client's.
        let reads_diagnostics = scan.reads_diagnostics;
        if reads_diagnostics && diagnostics_on_held(self) {
            if let Some(b) = &self.backend {
                decision.destination_hostgroup = Some(b.server().spec().hostgroup);
            }
        } else if reads_diagnostics && plain {
            // Answered by weir: none, or the error the last statement failed with (warnings
            // whose connection gave way to waiting statements, or went elsewhere, are lost).
            let (shown, local) = {
                let p = cmd.payload();
                let text = p.get(1..).unwrap_or_default();
                (diagnostics_query(text), previous_fact_query(text))
            };
            if !no_diagnostics && last_error.is_none() {
                tracing::debug!(
                    session = self.handle.id,
                    "the last statement's warnings went with the connection it gave up"
                );
            }
            let answered = if let Some(count) = shown {
                self.answer_no_diagnostics(count, seq, last_error.as_ref())
                    .await?;
                self.row_count = Some(-1);
                true
            } else if let Some((PreviousFact::WarningCount | PreviousFact::ErrorCount, alias)) =
                local
            {
                let value = Fact::UnsignedVariable(u64::from(last_error.is_some()));
                let rows = self.answer_fact(&alias, value, seq).await?;
                self.row_count = Some(-1);
                self.found_rows = Some(rows);
                true
            } else {
                // A form weir does not answer (GET DIAGNOSTICS, SHOW WARNINGS LIMIT ..., a
                // count in a larger query) runs where it is sent: a connection taken from
                // the pool has another client's diagnostics cleared first (`acquire`).
                false
            };
            if answered {
                // A diagnostic statement leaves the diagnostics as they were.
                self.no_diagnostics = no_diagnostics;
                self.last_error = last_error;
                self.decision = decision;
                self.effects = Default::default();
                return Ok(Flow::Continue);
            }
        } else if (scan.reads_last_insert_id || scan.reads_previous_result) && plain {
            // A lone ROW_COUNT() / FOUND_ROWS() weir knows the answer to is answered from the
            // last reply, whatever connection the session holds (the statement before may
            // have been answered by weir and never reached it); LAST_INSERT_ID() too when
            // the session holds none.
            let local = {
                let p = cmd.payload();
                previous_fact_query(p.get(1..).unwrap_or_default())
            };
            let no_connection = self.backend.is_none() || after_hit;
            let answer = local.and_then(|(fact, alias)| match fact {
                PreviousFact::LastInsertId => {
                    no_connection.then_some((alias, Fact::Unsigned(self.last_insert_id)))
                }
                PreviousFact::RowCount => previous_row_count.map(|n| (alias, Fact::Signed(n))),
                PreviousFact::FoundRows => previous_found_rows
                    .and_then(|n| i64::try_from(n).ok())
                    .map(|n| (alias, Fact::Signed(n))),
                PreviousFact::WarningCount | PreviousFact::ErrorCount => None,
            });
            if let Some((alias, value)) = answer {
                let rows = self.answer_fact(&alias, value, seq).await?;
                self.row_count = Some(-1);
                self.found_rows = Some(rows);
                // A statement that reads no table leaves the diagnostics of the one before.
                self.no_diagnostics = no_diagnostics;
                self.last_error = last_error;
                self.decision = decision;
                self.effects = Default::default();
                return Ok(Flow::Continue);
            }
            // Otherwise it is read on the connection the session still keeps for the
            // previous statement (mysql-auto_increment_delay_multiplex, the statement right
            // after SQL_CALC_FOUND_ROWS), wherever the rules route it.
            if self.keep_for > 0 || self.hold_next {
                if let Some(b) = &self.backend {
                    decision.destination_hostgroup = Some(b.server().spec().hostgroup);
                }
            }
        } else if (scan.reads_last_insert_id || scan.reads_previous_result)
            && (self.keep_for > 0 || self.hold_next)
        {
            if let Some(b) = &self.backend {
                decision.destination_hostgroup = Some(b.server().spec().hostgroup);
            }
        }
        let cache_rule = CacheRule::from_decision(&decision).filter(|_| {
            decision.error_msg.is_none()
                && decision.ok_msg.is_none()
                // What runs is what must be cacheable.
                && match &decision.rewritten {
                    Some(text) => cacheable_statement(&weir_sql::scan_with(text, lexing)),
                    None => cacheable_statement(&scan),
                }
                && self.cache_usable()
        });
        // MariaDB leaves the diagnostics in place for a statement naming no table, MySQL only
        // for the statements reading them; what runs is what counts.
        let keeps = {
            let judged = match &decision.rewritten {
                Some(text) => std::borrow::Cow::Owned(weir_sql::scan_with(text, lexing)),
                None => std::borrow::Cow::Borrowed(&scan),
            };
            judged.diagnostics_statement
                || (judged.keeps_diagnostics && weir_backend::backend_is_mariadb())
        };
        let warnings_before = !no_diagnostics && last_error.is_none();
        self.carry_diag = keeps.then_some((self.diag_on, warnings_before));
        // A changed character_set_results would show a kept error's text in the wrong one.
        let results_before = (keeps && scan.kind == StatementKind::Set && last_error.is_some())
            .then(|| self.vars.results_collation(self.login.collation));
        let flow = match cache_rule {
            Some(rule) => {
                let run = RunQuery {
                    decision: &decision,
                    mysql: m,
                    pins,
                    seq,
                    limits_timeout: Limits::decided(&decision, m).timeout,
                };
                self.query_through_cache(cmd, run, rule).await
            }
            None => {
                self.replacing_schema = scan.use_schema.is_some();
                let flow = self
                    .run_decided(cmd, &decision, m, pins, scan.use_schema, seq)
                    .await;
                self.replacing_schema = false;
                flow
            }
        };
        let outcome = flow.as_ref().ok().and_then(|o| o.as_ref());
        // A COMMIT that failed (or that a rule refused) leaves the same transaction open.
        self.idle.transaction_boundary =
            scan.transaction_boundary && outcome.is_some_and(|o| o.error.is_none());
        self.carry_diag = None;
        let own_diagnostics = outcome.is_none_or(|o| o.error.is_some() || o.warned);
        if keeps && !own_diagnostics {
            // The server leaves the previous statement's warnings or error in place. An error
            // weir shows itself; warnings stay only where they are, on the connection the
            // session still holds (elsewhere they are lost, and none are shown rather than
            // another client's).
            let kept_warnings = warnings_before && diagnostics_on_held(self);
            let recoded = results_before.is_some_and(|before| {
                before != self.vars.results_collation(self.login.collation)
                    && last_error
                        .as_ref()
                        .is_some_and(|e| !e.message_bytes().is_ascii())
            });
            self.no_diagnostics = (last_error.is_none() || recoded) && !kept_warnings;
            self.last_error = last_error.filter(|_| !recoded);
        } else {
            self.no_diagnostics = !own_diagnostics;
            // An error is the only diagnostic of a statement that failed (warnings before it
            // are not counted in an ERR): weir can show it when asked.
            self.last_error = outcome.and_then(|o| o.error.clone());
        }
        self.row_count = flow
            .as_ref()
            .ok()
            .and_then(|o| o.as_ref())
            .filter(|o| {
                !(o.several_results && (scan.kind == StatementKind::Call || scan.statements == 1))
            })
            .and_then(ReplyOutcome::row_count);
        self.found_rows = flow
            .as_ref()
            .ok()
            .and_then(|o| o.as_ref())
            .filter(|o| {
                scan.kind == StatementKind::Select
                    && scan.statements == 1
                    && !scan.calc_found_rows
                    && decision.rewritten.is_none()
                    && o.error.is_none()
                    && o.ended_with_rows
                    && !o.several_results
            })
            .map(|o| o.rows);
        if m.query_digests {
            self.record_digest(
                digest,
                m.query_digests_track_hostname,
                flow.as_ref().ok().and_then(|o| o.as_ref()),
            );
        }
        self.decision = decision;
        flow?;
        Ok(Flow::Continue)
    }

    /// Digest and rules for the query in `cmd`: fills `self.digest_buf` and `self.decision`
    /// and returns the digest hash (0 when digests are off and no rule needs one).
    fn process_query(&mut self, cmd: &Command, m: &weir_config::MysqlVariables) -> u64 {
        self.digest_and_rules(cmd, m, true)
    }

    /// As [`Session::process_query`]; with `rules` false only the digest is computed (a
    /// statement that cannot be routed anyway: no rule hit is counted for it).
    pub(crate) fn digest_and_rules(
        &mut self,
        cmd: &Command,
        m: &weir_config::MysqlVariables,
        rules_on: bool,
    ) -> u64 {
        let rules = self.shared.rules.load();
        let payload = cmd.payload();
        let text = payload.get(1..).unwrap_or_default();
        let digest = if m.query_digests || !rules.is_empty() {
            let opts = weir_sql::DigestOptions {
                lowercase: m.query_digests_lowercase,
                max_digest_length: m.query_digests_max_digest_length as usize,
                max_query_length: m.query_digests_max_query_length as usize,
                no_digits: m.query_digests_no_digits,
                replace_null: m.query_digests_replace_null,
                keep_comment: m.query_digests_keep_comment,
                grouping_limit: m.query_digests_grouping_limit as usize,
            };
            weir_sql::digest_into(text, &opts, &mut self.digest_buf)
        } else {
            self.digest_buf.clear();
            0
        };
        if !rules_on {
            self.decision = weir_rules::Decision::default();
            return digest;
        }
        let flag_in = std::mem::take(&mut self.flag_in);
        if rules.is_empty() {
            self.decision = weir_rules::Decision::default();
            return digest;
        }
        let input = weir_rules::QueryInput {
            username: &self.user.username,
            schemaname: self.schema.as_deref().unwrap_or(""),
            client_addr: &self.client.host,
            proxy_addr: &self.client.local_host,
            proxy_port: self.client.local_port,
            query: text,
            digest_text: &self.digest_buf,
            digest,
            flag_in,
            query_processor_iterations: m.query_processor_iterations,
            // Two clock reads per query: only when the DBA asks, as in ProxySQL.
            track_time: m.stats_time_query_processor,
        };
        rules.evaluate(&input, &mut self.decision);
        GlobalStats::add(
            &self.shared.stats.query_processor_time_nsec,
            self.decision.eval_time_ns,
        );
        self.flag_in = self.decision.next_query_flag_in.unwrap_or(0);
        digest
    }

    /// Carries out what the rules decided: answer locally, or route (hostgroup, rewrite,
    /// delay) and run the statement. `Ok(None)` when no backend answered.
    pub(crate) async fn run_decided(
        &mut self,
        cmd: Command,
        d: &weir_rules::Decision,
        m: &weir_config::MysqlVariables,
        pins: u32,
        use_schema: Option<String>,
        seq: u8,
    ) -> Result<Option<ReplyOutcome>, ClientError> {
        if let Some(msg) = &d.error_msg {
            // ProxySQL's code for a query refused by a rule.
            let e = ErrInfo::new(errcode::ER_NOT_ALLOWED_COMMAND, "42000", msg.to_string());
            self.client.send_err(seq, &e).await?;
            return Ok(None);
        }
        if let Some(msg) = &d.ok_msg {
            let ok = self.ok_status();
            let mut out = bytes::BytesMut::new();
            weir_wire::msg::write_ok(&mut out, seq, &ok, msg.as_bytes());
            self.client.wbuf.extend_from_slice(&out);
            self.client.flush_wbuf().await?;
            return Ok(None);
        }
        self.route_to(
            d.destination_hostgroup
                .unwrap_or(self.user.default_hostgroup),
        );
        // As ProxySQL: mysql-default_query_delay for every query, plus the rule's delay.
        let delay = m.default_query_delay
            + std::time::Duration::from_millis(u64::from(d.delay.unwrap_or(0)));
        if !delay.is_zero() {
            // Only this session waits: the worker goes on serving the others.
            tokio::time::sleep(delay).await;
        }
        // A rule's multiplex: 0 (and sticky_conn) keeps the connection with this client from
        // now on, 1 lifts what a rule set, 2 keeps this query from pinning by itself.
        let pins = match d.multiplex {
            Some(0) => pins | crate::pins::RULE,
            Some(1) => {
                self.pins &= !crate::pins::RULE;
                pins
            }
            Some(2) => 0,
            _ => pins,
        };
        let pins = if d.sticky_conn == Some(true) {
            pins | crate::pins::RULE
        } else {
            pins
        };
        self.on_borrowed_reader = false;
        if pins == 0
            && d.rewritten.is_none()
            && (self.effects.only_replayed_state() || (use_schema.is_some() && self.effects.is_none()))
            // autocommit = 0 would then hold the reader's connection, and writes would follow.
            && !(m.autocommit_false_is_transaction && self.effects.sets("autocommit"))
        {
            self.state_to_reader_while_writer_away();
        }
        let cmd = match &d.rewritten {
            Some(text) => Command::query(text),
            None => cmd,
        };
        let limits = Limits::decided(d, m);
        self.pipelinable &= m.pipeline_depth > 1
            // Sessions meant to keep their connection (an affinity) keep it.
            && m.multiplexing
            && m.connection_delay_multiplex.is_zero()
            && d.rewritten.is_none()
            && pins == 0
            && self.pins == 0
            && !self.hold_next
            && self.keep_for == 0
            && self.backend.is_none()
            && self.autocommit()
            && use_schema.is_none()
            // A KILL QUERY for the timeout could hit the statement after it.
            && limits.timeout_rule.is_none()
            && self.effects.is_none()
            && cmd.code() == weir_wire::com::QUERY;
        self.forward_with(cmd, Expect::ResultSets, pins, use_schema, &limits)
            .await
    }

    /// Points the next statement at `hostgroup`. A connection held for another hostgroup
    /// goes back to the pool first, unless the session is tied to it (open transaction, state
    /// weir does not replay): then the statement stays where that state lives, which also
    /// keeps a transaction on the hostgroup where it started.
    pub(crate) fn route_to(&mut self, hostgroup: u32) {
        if let Some(b) = &self.backend {
            let held = b.server().spec().hostgroup;
            if held == hostgroup {
                return;
            }
            if self.tied() {
                self.hostgroup = held;
                return;
            }
            self.keep_for = 0;
            if let Some(b) = self.backend.take() {
                self.shared.pool.checkin(b, true);
            }
        }
        self.hostgroup = hostgroup;
    }

    /// A statement that only changes state weir replays (a SET of followed variables, USE,
    /// COM_INIT_DB) runs in the reader hostgroup paired with its writer hostgroup while the writer
    /// hostgroup has no ONLINE server: the state follows the session to whichever connection
    /// its next statements use, so clients keep connecting (drivers send SETs at login) and
    /// reading while the writer is away. ProxySQL answers such SETs without a backend; here a
    /// server still checks the values and gives the warnings.
    pub(crate) fn state_to_reader_while_writer_away(&mut self) {
        // Nothing the statement leaves may tie the session to the reader's connection (a
        // failed statement under autocommit = 0 holds it as a transaction would), or the
        // writes after it would follow there.
        if self.backend.is_some() || self.pins != 0 || !self.autocommit() {
            return;
        }
        let pool = &self.shared.pool;
        if pool.has_usable(self.hostgroup) {
            return;
        }
        let reader = self
            .shared
            .runtime
            .load()
            .replication_hostgroups
            .iter()
            .find(|p| p.writer_hostgroup == self.hostgroup)
            .map(|p| p.reader_hostgroup)
            .filter(|&r| pool.has_usable(r));
        if let Some(reader) = reader {
            tracing::debug!(
                session = self.handle.id,
                writer = self.hostgroup,
                reader,
                "no ONLINE server in the writer hostgroup: session state set on a reader"
            );
            self.hostgroup = reader;
            self.on_borrowed_reader = true;
        }
    }

    /// One more execution of the current digest (stats_mysql_query_digest).
    fn record_digest(&self, digest: u64, track_hostname: bool, outcome: Option<&ReplyOutcome>) {
        self.record_digest_text(digest, &self.digest_buf, track_hostname, outcome);
    }

    /// As [`Session::record_digest`], for a digest text kept elsewhere (prepared statements).
    pub(crate) fn record_digest_text(
        &self,
        digest: u64,
        text: &[u8],
        track_hostname: bool,
        outcome: Option<&ReplyOutcome>,
    ) {
        let elapsed = self
            .reply_end
            .unwrap_or_else(std::time::Instant::now)
            .saturating_duration_since(self.cmd_started);
        let key = weir_stats::DigestKey {
            hostgroup: if self.cache_hit {
                weir_stats::CACHE_HOSTGROUP
            } else {
                i64::from(self.hostgroup)
            },
            schemaname: self.schema.as_deref().unwrap_or(""),
            username: &self.user.username,
            client_address: if track_hostname {
                &self.client.host
            } else {
                ""
            },
            digest,
        };
        let (affected, sent) = outcome.map_or((0, 0), |o| {
            (o.last_ok.map_or(0, |ok| ok.affected_rows), o.rows)
        });
        self.shared
            .digests
            .record(&key, text, elapsed, affected, sent);
    }

    /// Sends a command that may start a statement (acquiring a backend) and relays the reply.
    async fn forward(
        &mut self,
        cmd: Command,
        expect: Expect,
        pins: u32,
    ) -> Result<Flow, ClientError> {
        let limits = Limits::defaults(&self.shared.runtime.load().mysql);
        self.forward_with(cmd, expect, pins, None, &limits).await?;
        Ok(Flow::Continue)
    }

    /// As [`Session::forward`]; `use_schema` is the schema a lone `USE db` switches to.
    /// Returns how the reply ended, `None` when no backend answered.
    async fn forward_with(
        &mut self,
        cmd: Command,
        expect: Expect,
        pins: u32,
        use_schema: Option<String>,
        limits: &Limits,
    ) -> Result<Option<ReplyOutcome>, ClientError> {
        let outcome = self.run_with_retries(&cmd, expect, limits).await?;
        if let Some(outcome) = &outcome {
            // A statement read on the connection would clear the SET's warnings, which the
            // client may still ask for: then the SET is replayed as written.
            if outcome.error.is_none() && outcome.warnings == 0 {
                self.resolve_database_charset().await;
            }
            self.reread_schema(outcome).await;
            let pins = pins | self.read_back(outcome).await;
            self.after_reply(outcome, pins, use_schema);
        }
        Ok(outcome)
    }

    /// `SET CHARACTER SET` gives the connection the character set of the schema it is in
    /// now: it is read back on that connection, so that another connection, in another
    /// schema, gets the same collation rather than its own schema's.
    async fn resolve_database_charset(&mut self) {
        let Some(set) = self.effects.set.as_mut() else {
            return;
        };
        let Some(a) = set
            .iter_mut()
            .find(|a| a.value.as_deref() == Some(weir_sql::DATABASE_CHARSET))
        else {
            return;
        };
        let Some(b) = self.backend.as_mut() else {
            return;
        };
        match b.conn().query_rows("SELECT @@collation_connection").await {
            Ok(rows) => {
                let collation = rows.value().map(str::to_owned);
                match collation {
                    Some(c) if c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => {
                        a.slot = weir_sql::Slot::System {
                            key: "collation_connection",
                            name: "collation_connection",
                        };
                        a.value = Some(format!("'{c}'").into());
                    }
                    other => {
                        tracing::debug!(collation = ?other, "SET CHARACTER SET: unexpected collation_connection")
                    }
                }
            }
            Err(e) => {
                // The SET ran; the next statement finds out whether the connection is usable.
                tracing::debug!(error = %e, "SET CHARACTER SET: collation_connection not read");
            }
        }
    }

    /// Follows what a relayed reply changed (schema, pins, the insert id) and returns the
    /// connection to the pool unless something keeps it.
    pub(crate) fn after_reply(
        &mut self,
        outcome: &ReplyOutcome,
        pins: u32,
        use_schema: Option<String>,
    ) {
        let succeeded = outcome.error.is_none();
        if !succeeded && !self.autocommit() {
            // With autocommit off even a failing statement may open a transaction (and hold
            // locks), and an ERR carries no status flags: the connection stays with the
            // session until a reply says whether one is open. Clients are not told one is
            // (weir's own OKs carry the server's last flags).
            if let Some(b) = self.backend.as_mut() {
                b.conn().transaction_assumed = true;
            }
        }
        if succeeded && !self.effects.statement_scoped_set {
            self.mode_status = outcome.status & status::SQL_MODE_FLAGS;
        }
        let refused_whole = outcome
            .error
            .as_ref()
            .is_some_and(|e| SET_REFUSED_WHOLE.contains(&e.code));
        // The server checks every assignment of a SET before it applies any: refused at that
        // stage, the SET changed nothing, even one weir would not follow.
        let pins = if refused_whole && self.effects.set_statement {
            0
        } else {
            pins
        };
        if refused_whole {
            self.effects.pins_on_failure = 0;
        }
        let hold_next = self.apply_effects(succeeded);
        if succeeded {
            if let Some(db) = use_schema {
                if let Some(b) = self.backend.as_mut() {
                    b.conn().schema = Some(db.clone());
                }
                self.schema = Some(db.clone());
                Arc::make_mut(&mut self.login).schema = Some(db);
            }
        }
        self.pins |= pins;
        // Characteristics set for the next transaction are used up once one starts (it then
        // holds the connection by itself).
        if self.pins & crate::pins::NEXT_TRANSACTION != 0
            && self
                .backend
                .as_ref()
                .is_some_and(|b| b.conn_ref().in_transaction())
        {
            self.pins &= !crate::pins::NEXT_TRANSACTION;
        }
        let last_id = outcome.last_ok.map(|o| o.last_insert_id).unwrap_or(0);
        if last_id != 0 {
            self.last_insert_id = last_id;
            if let Some(b) = self.backend.as_mut() {
                b.conn().last_insert_id = last_id;
            }
            let m = &self.shared.runtime.load().mysql;
            self.keep_for = m.auto_increment_delay_multiplex;
            self.keep_until = m
                .auto_increment_delay_multiplex_timeout
                .map(|t| tokio::time::Instant::now() + t);
        } else {
            self.keep_for = self.keep_for.saturating_sub(1);
        }
        // SQL_CALC_FOUND_ROWS: the next statement runs on this
        // connection; after warnings it does too if it can (SHOW WARNINGS must find them).
        self.hold_next = hold_next;
        let here = self.held_conn();
        let own = !succeeded || outcome.warned;
        let warnings_stay = match self.carry_diag.take() {
            // Left in place, wherever they are.
            Some((before, warnings)) if !own => {
                self.diag_on = before;
                let stay = warnings
                    && before.is_some()
                    && before == here
                    && self.warnings_carried < crate::session::MAX_WARNINGS_CARRIED;
                self.warnings_carried = self.warnings_carried.saturating_add(1);
                stay
            }
            // Its own are on this connection. None otherwise, as weir answers then.
            _ => {
                self.diag_on = own.then_some(here).flatten();
                self.warnings_carried = 0;
                outcome.warned
            }
        };
        if own {
            if let Some(b) = self.backend.as_mut() {
                b.conn().diagnostics_left = true;
            }
        }
        if warnings_stay {
            // Kept one statement more, so that SHOW WARNINGS finds them (an error weir shows
            // itself).
            self.keep_for = self.keep_for.max(1);
        }
        self.release();
    }

    /// Answers `SHOW WARNINGS` / `SHOW ERRORS` or their `COUNT(*)` forms for a client whose
    /// last statement left no warning: no row (0), or the row of the error it failed with
    /// (1), as the server would.
    async fn answer_no_diagnostics(
        &mut self,
        count: Option<&str>,
        seq: u8,
        error: Option<&ErrInfo>,
    ) -> Result<(), ClientError> {
        let status = self.ok_status().status;
        let mut out = bytes::BytesMut::new();
        match count {
            Some(name) => {
                // Described as `SELECT @@session.warning_count` is: computed, nullable.
                let col = [weir_wire::msg::ColumnSpec {
                    flags: 32 | 128,
                    named_column: false,
                    ..weir_wire::msg::ColumnSpec::unsigned_bigint(name)
                }];
                let mut set = weir_wire::msg::TextResultSet::begin_columns_for(
                    &mut out,
                    seq,
                    (self.client.caps, self.client.mariadb_caps),
                    &col,
                    status,
                );
                let n: &[u8] = if error.is_some() { b"1" } else { b"0" };
                set.row(&[Some(n)]);
                set.finish(status);
            }
            None => {
                // As the server describes them: texts in character_set_results (their
                // length in its bytes a character); a driver reads Code as a number.
                let results = match self.vars.results_collation(self.login.collation) {
                    Some(c) => c,
                    // NULL, no conversion: described in the system character set, utf8mb3.
                    None if self
                        .vars
                        .system("character_set_results")
                        .is_some_and(|v| v.trim().eq_ignore_ascii_case("NULL")) =>
                    {
                        33
                    }
                    None => u32::from(self.login.collation),
                };
                let bytes_per_char = weir_sql::max_bytes_per_char(results);
                // NOT_FIXED_DEC: MariaDB's is 39, MySQL's 31.
                let decimals = match weir_backend::backend_server_version() {
                    Some(v) if !v.contains("MariaDB") => 31,
                    _ => 39,
                };
                let text = |name, chars: u32| weir_wire::msg::ColumnSpec {
                    name,
                    col_type: weir_wire::coltype::VAR_STRING,
                    charset: u16::try_from(results).unwrap_or(u16::from(self.login.collation)),
                    length: chars * bytes_per_char,
                    flags: 1,
                    named_column: false,
                    decimals,
                };
                let cols = [
                    text("Level", 7),
                    weir_wire::msg::ColumnSpec {
                        name: "Code",
                        col_type: weir_wire::coltype::LONG,
                        charset: 63,
                        length: 4,
                        flags: 161,
                        named_column: false,
                        decimals: 0,
                    },
                    text("Message", 512),
                ];
                let mut set = weir_wire::msg::TextResultSet::begin_columns_for(
                    &mut out,
                    seq,
                    (self.client.caps, self.client.mariadb_caps),
                    &cols,
                    status,
                );
                if let Some(e) = error {
                    let code = e.code.to_string();
                    set.row(&[
                        Some(b"Error".as_slice()),
                        Some(code.as_bytes()),
                        Some(e.message_bytes()),
                    ]);
                }
                set.finish(status);
            }
        }
        self.client.wbuf.extend_from_slice(&out);
        self.client.flush_wbuf().await?;
        Ok(())
    }

    /// Answers `SELECT LAST_INSERT_ID()` or `SELECT ROW_COUNT()` with the value weir keeps.
    async fn answer_fact<'a>(
        &mut self,
        alias: &'a str,
        value: Fact,
        seq: u8,
    ) -> Result<u64, ClientError> {
        let status = self.ok_status().status;
        let mut out = bytes::BytesMut::new();
        use weir_wire::msg::ColumnSpec;
        // Computed by the server: no original column name.
        let computed = |spec: ColumnSpec<'a>| ColumnSpec {
            named_column: false,
            ..spec
        };
        let (col, text) = match value {
            Fact::Unsigned(v) => (computed(ColumnSpec::unsigned_bigint(alias)), v.to_string()),
            Fact::Signed(v) => (computed(ColumnSpec::bigint(alias)), v.to_string()),
            Fact::UnsignedVariable(v) => (
                ColumnSpec {
                    flags: 32 | 128,
                    ..computed(ColumnSpec::unsigned_bigint(alias))
                },
                v.to_string(),
            ),
        };
        let mut set = weir_wire::msg::TextResultSet::begin_columns_for(
            &mut out,
            seq,
            (self.client.caps, self.client.mariadb_caps),
            &[col],
            status,
        );
        // `SET sql_select_limit = 0` holds for these SELECTs too.
        let limited = self
            .vars
            .system("sql_select_limit")
            .is_some_and(|v| v.trim() == "0");
        if !limited {
            set.row(&[Some(text.as_bytes())]);
        }
        set.finish(status);
        self.client.wbuf.extend_from_slice(&out);
        self.client.flush_wbuf().await?;
        Ok(u64::from(!limited))
    }

    async fn init_db(&mut self, cmd: &Command) -> Result<(), ClientError> {
        let seq = cmd.last_seq.wrapping_add(1);
        let db = String::from_utf8_lossy(cmd.payload().get(1..).unwrap_or_default()).into_owned();
        GlobalStats::inc(&self.shared.stats.com_frontend_init_db);
        self.state_to_reader_while_writer_away();
        self.replacing_schema = true;
        let acquired = self.acquire(seq).await.map(|b| b.is_some());
        self.replacing_schema = false;
        if !acquired? {
            return Ok(());
        }
        let Some(b) = self.backend.as_mut() else {
            return Ok(());
        };
        let server = b.server().clone();
        match b.conn().init_db(&db).await {
            Ok(()) => {
                self.schema = Some(db.clone());
                Arc::make_mut(&mut self.login).schema = Some(db);
                self.row_count = Some(0);
                self.no_diagnostics = true;
                let ok = self.ok_status();
                self.client.send_ok(seq, &ok).await?;
                self.release();
            }
            Err(BackendError::Server(e)) => {
                self.log_error(Some(&server), e.code, &e.message);
                self.client.send_err(seq, &e).await?;
                self.release();
                // What SHOW WARNINGS / @@error_count show next, as on the server.
                self.no_diagnostics = false;
                self.diag_on = None;
                self.last_error = Some(e);
            }
            Err(e) => {
                let tied = self.tied();
                let err = lost_backend(&e);
                self.log_error(Some(&server), err.code, &err.message);
                self.drop_backend().await;
                self.client.send_err(seq, &err).await?;
                if tied {
                    return Err(ClientError::Closed);
                }
            }
        }
        Ok(())
    }

    async fn change_user(&mut self, cmd: &Command) -> Result<Flow, ClientError> {
        let seq = cmd.last_seq.wrapping_add(1);
        let req = match ChangeUser::parse(&cmd.payload(), self.client.caps) {
            Ok(r) => r,
            Err(e) => {
                let e = ErrInfo::new(
                    errcode::ER_MALFORMED_PACKET,
                    "HY000",
                    format!("Malformed COM_CHANGE_USER: {e}"),
                );
                self.client.send_err(seq, &e).await?;
                return Ok(Flow::Continue);
            }
        };
        if self.failed_change_user >= MAX_FAILED_CHANGE_USER {
            // As MariaDB: against password guessing, no more attempts on this connection.
            let e = ErrInfo::new(
                errcode::ER_UNKNOWN_COM_ERROR,
                "08S01",
                "Unknown command: COM_CHANGE_USER was refused 3 times on this connection",
            );
            self.client.send_err(seq, &e).await?;
            return Ok(Flow::Continue);
        }
        let (user, cred, seq) =
            match crate::auth::change_user(&self.shared, &mut self.client, &req, seq).await {
                Ok(v) => v,
                Err(crate::auth::LoginError::Refused) => {
                    // The client got 1045. As on the server, the session is reset all the same
                    // (transaction, variables, statements, to the packet's character set) and
                    // stays logged in as its user, in its schema.
                    self.failed_change_user += 1;
                    self.change_user_collation(None);
                    self.forget_session().await;
                    return Ok(Flow::Continue);
                }
                Err(crate::auth::LoginError::Io(e)) => return Err(e),
            };
        // The session is reset whether or not the schema is accepted, as on MariaDB; first,
        // so that the connection it held is free for the probe below.
        self.change_user_collation(None);
        self.forget_session().await;
        // A schema the new user cannot use fails the change, as on the server; the session
        // stays logged in as its user, in its schema (rather than every later statement
        // failing).
        let refusal = req
            .collation
            .and_then(crate::auth::client_charset_refused)
            .or_else(|| {
                req.database
                    .as_deref()
                    .and_then(crate::auth::database_name_refused)
            });
        if let Some(e) = refusal {
            self.client.send_err(seq, &e).await?;
            return Ok(Flow::Continue);
        }
        if let Some(db) = &req.database {
            let probe = weir_pool::LoginTemplate {
                key: weir_pool::PoolKey {
                    username: user.username.as_str().into(),
                    ..self.login.key.clone()
                },
                credential: cred.clone(),
                schema: None,
                collation: self.login.collation,
                ignore_space: self.login.ignore_space,
                multi_statements: self.login.multi_statements,
            };
            if let Some(e) = self
                .schema_refused(user.default_hostgroup, &probe, db)
                .await
            {
                self.client.send_err(seq, &e).await?;
                return Ok(Flow::Continue);
            }
        }
        self.change_user_collation(req.collation);
        let old = self.handle.user.lock().clone();
        if old != user.username {
            if !self
                .shared
                .registry
                .enter_user(&user.username, user.max_connections)
            {
                let e = ErrInfo::new(errcode::ER_CON_COUNT_ERROR, "08004", "Too many connections");
                self.client.send_err(seq, &e).await?;
                return Ok(Flow::Quit);
            }
            self.shared.registry.leave_user(&old);
            *self.handle.user.lock() = user.username.clone();
        }
        self.schema = req.database.clone().or_else(|| user.default_schema.clone());
        self.hostgroup = user.default_hostgroup;
        let login = Arc::make_mut(&mut self.login);
        login.key.username = user.username.as_str().into();
        login.credential = cred;
        login.schema = self.schema.clone();
        self.user = user;
        let ok = self.ok_status();
        self.client.send_ok(seq, &ok).await?;
        Ok(Flow::Continue)
    }

    /// The character set a session starts from after a COM_CHANGE_USER: the one the packet
    /// names when the change succeeds, the server's default (the one weir announces) when it
    /// fails, as on MariaDB, whatever the session had.
    /// A collation past the handshake's one byte (608, utf8mb4_croatian_ci) starts the
    /// session from its charset's default and sets it by name as session state, which then
    /// follows the client to any connection (call it after the session's state is reset).
    fn change_user_collation(&mut self, named: Option<u16>) {
        let wide = named
            .filter(|c| *c > 255)
            .and_then(|c| weir_sql::collation_by_id(u32::from(c)));
        let c = match (named, wide) {
            (_, Some((charset, name))) => {
                let names = format!("SET NAMES '{charset}' COLLATE '{name}'");
                if let weir_sql::SetEffect::Tracked(a) = weir_sql::parse_set(names.as_bytes()) {
                    self.vars.apply(&a);
                }
                weir_sql::default_collation_id(charset)
                    .and_then(|id| u8::try_from(id).ok())
                    .unwrap_or(crate::auth::DEFAULT_COLLATION)
            }
            (Some(c), None) if c > 0 && c < 256 => c as u8,
            _ => crate::auth::DEFAULT_COLLATION,
        };
        Arc::make_mut(&mut self.login).collation = c;
    }

    /// Forgets everything the client set (COM_RESET_CONNECTION, COM_CHANGE_USER): the held
    /// connection goes back to the pool, or is closed when it holds state of the session.
    async fn forget_session(&mut self) {
        if let Some(b) = self.backend.take() {
            if self.tied() || b.conn_ref().in_transaction() {
                b.close().await;
            } else {
                self.shared.pool.checkin(b, true);
            }
        }
        self.reset_state();
    }

    /// `COM_INIT_DB` weir sends of its own accord (Com_backend_init_db).
    async fn counted_init_db(
        &self,
        conn: &mut weir_backend::BackendConn,
        db: &str,
    ) -> Result<(), BackendError> {
        GlobalStats::inc(&self.shared.stats.com_backend_init_db);
        conn.init_db(db).await
    }

    /// The server's error when `login` cannot select `db` on a connection of `hostgroup`
    /// (unknown database, no privilege); `None` when it can, or when no server answers (the
    /// next statement will tell).
    async fn schema_refused(
        &self,
        hostgroup: u32,
        login: &weir_pool::LoginTemplate,
        db: &str,
    ) -> Option<ErrInfo> {
        match self.shared.pool.checkout(hostgroup, login).await {
            Ok(mut c) => match self.counted_init_db(c.conn(), db).await {
                Ok(()) => {
                    self.shared.pool.checkin(c, true);
                    None
                }
                Err(BackendError::Server(e)) => {
                    self.shared.pool.checkin(c, true);
                    Some(e)
                }
                Err(_) => {
                    c.close().await;
                    None
                }
            },
            Err(weir_pool::PoolError::Refused(BackendError::Server(e))) => Some(e),
            // Not known to exist: the change cannot be confirmed.
            Err(e) => Some(crate::session::pool_error(&e)),
        }
    }

    /// KILL [QUERY] on weir session ids.
    async fn kill(&mut self, id: u64, query_only: bool, seq: u8) -> Result<(), ClientError> {
        let target = u32::try_from(id)
            .ok()
            .and_then(|i| self.shared.registry.get(i));
        let Some(target) = target else {
            let e = ErrInfo::new(
                errcode::ER_NO_SUCH_THREAD,
                "HY000",
                format!("Unknown thread id: {id}"),
            );
            self.client.send_err(seq, &e).await?;
            return Ok(());
        };
        if *target.user.lock() != self.user.username {
            let e = ErrInfo::new(
                errcode::ER_KILL_DENIED_ERROR,
                "HY000",
                format!("You are not owner of thread {id}"),
            );
            self.client.send_err(seq, &e).await?;
            return Ok(());
        }
        mark_killed(&self.shared, &target, query_only).await;
        let answered = if target.id == self.handle.id && !query_only {
            // Killing oneself: the server answers with an error and closes.
            self.client
                .send_err(seq, &crate::session::connection_killed())
                .await
        } else {
            self.client.send_ok(seq, &self.ok_status()).await
        };
        target.wake_query_killed();
        answered?;
        Ok(())
    }
}

/// Kills the session `target` (`query_only`: its running statement only). Never waits for
/// the target, nor for a free connection: the KILL QUERY goes to the server over a connection
/// of its own, outside the pool. A statement not on a backend yet is ended by its session
/// (see `SessionHandle::kill_query`), which the caller wakes with
/// [`SessionHandle::wake_query_killed`] once it has answered: as on the server, the killer's
/// OK comes before the victim's ERR 1317 (Connector/J tells its own query timeout from
/// another's KILL by that order).
async fn mark_killed(shared: &Arc<Shared>, target: &SessionHandle, query_only: bool) {
    if !query_only {
        // First: a session that waits for a connection or its turn on a pipe ends as
        // killed, not as if only its statement were.
        target
            .killed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        target.killed_write.cancel();
        target.kill.cancel();
    }
    if let Some(r) = target.mark_query_killed() {
        crate::exec::kill_query_marked(shared, &r).await;
    }
}

/// `KILL [CONNECTION | QUERY] id` from the admin interface, for any user's session: false
/// when there is no session `id`. The kill runs in the background; the caller answers at once.
pub fn kill_from_admin(shared: &Arc<Shared>, id: u64, query_only: bool) -> bool {
    let Some(target) = u32::try_from(id).ok().and_then(|i| shared.registry.get(i)) else {
        return false;
    };
    let shared = shared.clone();
    tokio::spawn(async move {
        mark_killed(&shared, &target, query_only).await;
        target.wake_query_killed();
    });
    true
}

/// Refused COM_CHANGE_USER attempts after which the command is refused outright.
const MAX_FAILED_CHANGE_USER: u8 = 3;

/// What a statement weir may answer itself reads from the client's previous statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PreviousFact {
    LastInsertId,
    RowCount,
    FoundRows,
    WarningCount,
    ErrorCount,
}

/// A value answered locally, with its column's signedness.
enum Fact {
    Unsigned(u64),
    Signed(i64),
    /// A system variable's value (`@@warning_count`), described as the server does them.
    UnsignedVariable(u64),
}

/// Whether the connection the session holds is the one with its current diagnostics.
pub(crate) fn diagnostics_on_held(s: &Session) -> bool {
    s.diag_on.is_some() && s.diag_on == s.held_conn()
}

/// For `SHOW WARNINGS` / `SHOW ERRORS` alone: `Some(None)`; for `SHOW COUNT(*) WARNINGS` /
/// `ERRORS`: `Some(Some(column name))`.
fn diagnostics_query(q: &[u8]) -> Option<Option<&'static str>> {
    let t = strip_leading_comments(std::str::from_utf8(q).ok()?)?;
    let t = t.strip_suffix(';').unwrap_or(t).trim_end();
    let words: Vec<&str> = t.split_whitespace().collect();
    let is = |w: &str, k: &str| w.eq_ignore_ascii_case(k);
    match words.as_slice() {
        [show, w] if is(show, "SHOW") && (is(w, "WARNINGS") || is(w, "ERRORS")) => Some(None),
        [show, count, w] if is(show, "SHOW") && is(count, "COUNT(*)") => {
            if is(w, "WARNINGS") {
                Some(Some("@@session.warning_count"))
            } else if is(w, "ERRORS") {
                Some(Some("@@session.error_count"))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `q` without the comments before its first word; `None` when one is not closed.
fn strip_leading_comments(q: &str) -> Option<&str> {
    let mut t = q.trim();
    while let Some(rest) = t.strip_prefix("/*") {
        t = rest.get(rest.find("*/")? + 2..)?.trim_start();
    }
    Some(t)
}

/// Words that start a clause where a bare alias could stand.
const CLAUSE_WORDS: [&str; 13] = [
    "FROM",
    "WHERE",
    "LIMIT",
    "UNION",
    "INTO",
    "FOR",
    "ORDER",
    "GROUP",
    "HAVING",
    "WINDOW",
    "LOCK",
    "PROCEDURE",
    "EXCEPT",
];

/// For `SELECT LAST_INSERT_ID() [[AS] alias]` or `SELECT ROW_COUNT() [[AS] alias]` alone: what
/// it reads and the column name the client gets.
fn previous_fact_query(q: &[u8]) -> Option<(PreviousFact, String)> {
    // Leading comments (ORMs and tracing tools add them).
    let t = strip_leading_comments(std::str::from_utf8(q).ok()?)?;
    let t = t.strip_suffix(';').unwrap_or(t).trim_end();
    let mut words = t.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("SELECT") {
        return None;
    }
    let rest: Vec<&str> = words.collect();
    let (call, alias) = match rest.as_slice() {
        [call] => (*call, None),
        [call, a] => (*call, Some(*a)),
        [call, kw, a] if kw.eq_ignore_ascii_case("AS") => (*call, Some(*a)),
        _ => return None,
    };
    let fact = if call.eq_ignore_ascii_case("LAST_INSERT_ID()") {
        PreviousFact::LastInsertId
    } else if call.eq_ignore_ascii_case("ROW_COUNT()") {
        PreviousFact::RowCount
    } else if call.eq_ignore_ascii_case("FOUND_ROWS()") {
        PreviousFact::FoundRows
    } else if call.eq_ignore_ascii_case("@@warning_count")
        || call.eq_ignore_ascii_case("@@session.warning_count")
    {
        PreviousFact::WarningCount
    } else if call.eq_ignore_ascii_case("@@error_count")
        || call.eq_ignore_ascii_case("@@session.error_count")
    {
        PreviousFact::ErrorCount
    } else {
        return None;
    };
    let name = match alias {
        None => call.to_string(),
        // A clause, not an alias: the server reads (or refuses) the statement.
        Some(a) if CLAUSE_WORDS.iter().any(|w| a.eq_ignore_ascii_case(w)) => return None,
        Some(a) => {
            let a = a.trim_matches('`');
            if a.is_empty() || !a.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return None;
            }
            a.to_string()
        }
    };
    Some((fact, name))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::{diagnostics_query, previous_fact_query, PreviousFact};

    #[test]
    fn lone_diagnostics_queries_are_recognised() {
        assert_eq!(diagnostics_query(b"SHOW WARNINGS"), Some(None));
        assert_eq!(diagnostics_query(b"/* c */ show errors ;"), Some(None));
        assert_eq!(
            diagnostics_query(b"SHOW COUNT(*) WARNINGS"),
            Some(Some("@@session.warning_count"))
        );
        assert_eq!(
            diagnostics_query(b"show count(*) errors"),
            Some(Some("@@session.error_count"))
        );
        for q in [
            "SHOW WARNINGS LIMIT 1",
            "SHOW TABLES",
            "SHOW COUNT(*) TABLES",
            "SELECT 1",
        ] {
            assert_eq!(diagnostics_query(q.as_bytes()), None, "{q}");
        }
    }

    fn named(q: &str) -> Option<(PreviousFact, String)> {
        previous_fact_query(q.as_bytes())
    }

    #[test]
    fn lone_reads_of_the_previous_statement_are_recognised() {
        assert_eq!(
            named("SELECT LAST_INSERT_ID()"),
            Some((PreviousFact::LastInsertId, "LAST_INSERT_ID()".into()))
        );
        assert_eq!(
            named("select last_insert_id() as id;"),
            Some((PreviousFact::LastInsertId, "id".into()))
        );
        assert_eq!(
            named(" select row_count() "),
            Some((PreviousFact::RowCount, "row_count()".into()))
        );
        assert_eq!(
            named("SELECT ROW_COUNT() `n`"),
            Some((PreviousFact::RowCount, "n".into()))
        );
        assert_eq!(
            named("/* app */ /* trace */SELECT ROW_COUNT()"),
            Some((PreviousFact::RowCount, "ROW_COUNT()".into()))
        );
        assert_eq!(
            named("select found_rows() rows_seen"),
            Some((PreviousFact::FoundRows, "rows_seen".into()))
        );
        assert_eq!(
            named("SELECT @@Warning_Count"),
            Some((PreviousFact::WarningCount, "@@Warning_Count".into()))
        );
        assert_eq!(
            named("SELECT @@session.error_count AS e"),
            Some((PreviousFact::ErrorCount, "e".into()))
        );
        for q in [
            "SELECT LAST_INSERT_ID(5)",
            "SELECT LAST_INSERT_ID() + 1",
            "SELECT LAST_INSERT_ID() FROM t",
            "SELECT ROW_COUNT(), 1",
            "SELECT ROW_COUNT() AS `a b`",
            "SELECT FOUND_ROWS() + 1",
            "SELECT FOUND_ROWS() FROM",
            "SELECT @@warning_count limit",
            "SELECT @@global.warning_count",
            "DO ROW_COUNT()",
            "/* unterminated SELECT ROW_COUNT()",
            "/*!50000 SELECT */ ROW_COUNT()",
        ] {
            assert_eq!(named(q), None, "{q}");
        }
    }
}
