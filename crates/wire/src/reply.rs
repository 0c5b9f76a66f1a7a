//! Where a server's reply to one command ends, decided packet by packet from each packet's
//! first bytes only, so that replies can be relayed without being buffered.
//!
//! weir connects to backends without CLIENT_DEPRECATE_EOF, so the tracker reads the classic
//! form (EOF packets after definitions and rows); the session translates for clients that
//! negotiated CLIENT_DEPRECATE_EOF.

use crate::io::Reader;
use crate::msg::{is_eof, parse_eof, OkInfo};
use crate::packet::MAX_PAYLOAD;
use crate::{status, PacketHeader, WireError};

/// How many payload bytes [`ReplyTracker::feed`] needs at most to classify a packet.
pub const CLASSIFY_BYTES: usize = 32;

/// The shape of reply a command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// COM_QUERY and COM_STMT_EXECUTE: OK, ERR, LOCAL INFILE request or result sets, repeated
    /// while SERVER_MORE_RESULTS_EXISTS is set.
    ResultSets,
    /// COM_STMT_EXECUTE asking for a cursor: as `ResultSets`, except that a result set whose
    /// definitions end with SERVER_STATUS_CURSOR_EXISTS ends the reply (its rows come through
    /// COM_STMT_FETCH). Elsewhere the flag only says that some cursor is open (a stored
    /// procedure's own, while it sends a result set), and rows follow.
    CursorResultSets,
    /// COM_FIELD_LIST: column definitions then EOF.
    FieldList,
    /// COM_STMT_PREPARE: prepare-OK, parameter and column definitions.
    Prepare,
    /// COM_STMT_FETCH: rows then EOF.
    Fetch,
    /// COM_STATISTICS: a single text packet.
    Single,
    /// Commands answered by one OK, EOF or ERR (INIT_DB, PING, RESET_CONNECTION, SET_OPTION...).
    Status,
}

/// What one packet of a reply is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A further frame of a payload of 16 MiB or more.
    Continuation,
    /// The column count that opens a result set.
    ColumnCount(u64),
    /// A column or parameter definition.
    Definition,
    /// The EOF after definitions (dropped for CLIENT_DEPRECATE_EOF clients).
    DefinitionsEof {
        /// Status flags it carries.
        status: u16,
    },
    /// A row (text or binary).
    Row,
    /// The EOF that ends rows (rewritten as an OK for CLIENT_DEPRECATE_EOF clients).
    EndOfRows {
        /// Warnings count.
        warnings: u16,
        /// Status flags.
        status: u16,
    },
    /// An OK packet.
    Ok(OkInfo),
    /// An ERR packet; ends the reply.
    Err,
    /// The server asks for a local file (LOAD DATA LOCAL INFILE).
    LocalInfile,
    /// The prepare-OK packet.
    PrepareOk {
        /// Statement id on this backend connection.
        statement_id: u32,
        /// Number of result columns.
        columns: u16,
        /// Number of parameters.
        params: u16,
    },
    /// COM_STATISTICS text.
    Text,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Start,
    ColumnDefs(u64),
    ColumnsEof,
    Rows,
    PrepareParams { params: u16, columns: u16 },
    PrepareParamsEof { columns: u16 },
    PrepareColumns(u16),
    PrepareColumnsEof,
    LocalInfileData,
    Done,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Start => "start of reply",
            State::ColumnDefs(_) => "column definitions",
            State::ColumnsEof => "end of column definitions",
            State::Rows => "rows",
            State::PrepareParams { .. } => "parameter definitions",
            State::PrepareParamsEof { .. } => "end of parameter definitions",
            State::PrepareColumns(_) => "prepared column definitions",
            State::PrepareColumnsEof => "end of prepared column definitions",
            State::LocalInfileData => "local infile transfer",
            State::Done => "finished reply",
        }
    }
}

/// Follows one reply, packet by packet.
#[derive(Debug, Clone)]
pub struct ReplyTracker {
    expect: Expect,
    state: State,
    continuation: bool,
    last_status: Option<u16>,
    cursor_opened: bool,
}

impl ReplyTracker {
    /// Starts tracking the reply to a command of the given shape.
    pub fn new(expect: Expect) -> Self {
        ReplyTracker {
            expect,
            state: State::Start,
            continuation: false,
            last_status: None,
            cursor_opened: false,
        }
    }

    /// Whether the reply ended after a result set's definitions because the execution opened
    /// a cursor (its rows come through COM_STMT_FETCH).
    pub fn cursor_opened(&self) -> bool {
        self.cursor_opened
    }

    /// Whether the next packet is in a result set's rows (and not a further frame of a big
    /// one): [`pass_rows`] may then skip the plain rows.
    pub fn in_rows(&self) -> bool {
        self.state == State::Rows && !self.continuation
    }

    /// Whether the reply is complete.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Whether the server waits for the client's local file data.
    pub fn awaits_local_infile(&self) -> bool {
        self.state == State::LocalInfileData
    }

    /// Call once the client's file data (ending with an empty packet) has been relayed.
    pub fn local_infile_sent(&mut self) {
        if self.state == State::LocalInfileData {
            self.state = State::Start;
        }
    }

    /// Status flags of the last OK or EOF seen; `None` when the reply had none (an ERR, a
    /// prepare's reply without EOFs, COM_STATISTICS): the server's state is then unchanged
    /// as far as weir can tell.
    pub fn last_status(&self) -> Option<u16> {
        self.last_status
    }

    /// Classifies the next physical packet from its length and first bytes
    /// (at least `min(len, CLASSIFY_BYTES)` of them).
    pub fn feed(&mut self, len: usize, head: &[u8]) -> Result<Role, WireError> {
        if self.continuation {
            self.continuation = len == MAX_PAYLOAD;
            return Ok(Role::Continuation);
        }
        self.continuation = len == MAX_PAYLOAD;
        let first = *head
            .first()
            .ok_or(WireError::Truncated("empty reply packet"))?;
        let unexpected = |state: State| WireError::Unexpected {
            first,
            state: state.name(),
        };
        match self.state {
            State::Done | State::LocalInfileData => Err(unexpected(self.state)),
            State::Start => self.start(len, first, head),
            State::ColumnDefs(n) => {
                if first == 0xff {
                    self.state = State::Done;
                    return Ok(Role::Err);
                }
                self.state = if n <= 1 {
                    State::ColumnsEof
                } else {
                    State::ColumnDefs(n - 1)
                };
                Ok(Role::Definition)
            }
            State::ColumnsEof => {
                if first == 0xff {
                    // The statement failed once the definitions were out (MariaDB does this
                    // when a cursor's query fails as it is materialized).
                    self.state = State::Done;
                    return Ok(Role::Err);
                }
                if !is_eof(len, first) {
                    return Err(unexpected(self.state));
                }
                let (_, status) = parse_eof(head)?;
                self.last_status = Some(status);
                // A read-only cursor was opened: rows come later through COM_STMT_FETCH.
                self.cursor_opened =
                    status & status::CURSOR_EXISTS != 0 && self.expect == Expect::CursorResultSets;
                self.state = if self.cursor_opened {
                    State::Done
                } else {
                    State::Rows
                };
                Ok(Role::DefinitionsEof { status })
            }
            State::Rows => {
                if is_eof(len, first) {
                    let (warnings, status) = parse_eof(head)?;
                    self.last_status = Some(status);
                    self.state = if status & status::MORE_RESULTS_EXISTS != 0
                        && matches!(self.expect, Expect::ResultSets | Expect::CursorResultSets)
                    {
                        State::Start
                    } else {
                        State::Done
                    };
                    Ok(Role::EndOfRows { warnings, status })
                } else if first == 0xff {
                    self.state = State::Done;
                    Ok(Role::Err)
                } else {
                    Ok(Role::Row)
                }
            }
            State::PrepareParams { params, columns } => {
                self.state = if params <= 1 {
                    State::PrepareParamsEof { columns }
                } else {
                    State::PrepareParams {
                        params: params - 1,
                        columns,
                    }
                };
                Ok(Role::Definition)
            }
            State::PrepareParamsEof { columns } => {
                if !is_eof(len, first) {
                    return Err(unexpected(self.state));
                }
                let (_, status) = parse_eof(head)?;
                self.state = if columns > 0 {
                    State::PrepareColumns(columns)
                } else {
                    State::Done
                };
                Ok(Role::DefinitionsEof { status })
            }
            State::PrepareColumns(n) => {
                self.state = if n <= 1 {
                    State::PrepareColumnsEof
                } else {
                    State::PrepareColumns(n - 1)
                };
                Ok(Role::Definition)
            }
            State::PrepareColumnsEof => {
                if !is_eof(len, first) {
                    return Err(unexpected(self.state));
                }
                let (_, status) = parse_eof(head)?;
                self.state = State::Done;
                Ok(Role::DefinitionsEof { status })
            }
        }
    }

    fn start(&mut self, len: usize, first: u8, head: &[u8]) -> Result<Role, WireError> {
        if first == 0xff {
            self.state = State::Done;
            return Ok(Role::Err);
        }
        match self.expect {
            Expect::ResultSets | Expect::CursorResultSets => match first {
                0x00 => {
                    let ok = OkInfo::parse(head)?;
                    self.last_status = Some(ok.status);
                    if ok.status & status::MORE_RESULTS_EXISTS == 0 {
                        self.state = State::Done;
                    }
                    Ok(Role::Ok(ok))
                }
                0xfb => {
                    self.state = State::LocalInfileData;
                    Ok(Role::LocalInfile)
                }
                _ => {
                    let n = Reader::new(head).lenenc("column count")?;
                    if n == 0 {
                        return Err(WireError::Invalid("zero column count"));
                    }
                    self.state = State::ColumnDefs(n);
                    Ok(Role::ColumnCount(n))
                }
            },
            Expect::FieldList => {
                if is_eof(len, first) {
                    let (warnings, status) = parse_eof(head)?;
                    self.last_status = Some(status);
                    self.state = State::Done;
                    Ok(Role::EndOfRows { warnings, status })
                } else {
                    Ok(Role::Definition)
                }
            }
            Expect::Prepare => {
                if first != 0x00 {
                    return Err(WireError::Unexpected {
                        first,
                        state: "prepare reply",
                    });
                }
                let mut r = Reader::new(head);
                r.u8("header")?;
                let statement_id = r.u32("statement id")?;
                let columns = r.u16("column count")?;
                let params = r.u16("parameter count")?;
                self.state = if params > 0 {
                    State::PrepareParams { params, columns }
                } else if columns > 0 {
                    State::PrepareColumns(columns)
                } else {
                    State::Done
                };
                Ok(Role::PrepareOk {
                    statement_id,
                    columns,
                    params,
                })
            }
            Expect::Fetch => {
                self.state = State::Rows;
                self.feed_rows_again(len, first, head)
            }
            Expect::Single => {
                self.state = State::Done;
                Ok(Role::Text)
            }
            Expect::Status => {
                self.state = State::Done;
                match first {
                    0x00 => {
                        let ok = OkInfo::parse(head)?;
                        self.last_status = Some(ok.status);
                        Ok(Role::Ok(ok))
                    }
                    0xfe if len < 9 => {
                        let (warnings, status) = parse_eof(head)?;
                        self.last_status = Some(status);
                        Ok(Role::EndOfRows { warnings, status })
                    }
                    _ => Err(WireError::Unexpected {
                        first,
                        state: "status reply",
                    }),
                }
            }
        }
    }

    fn feed_rows_again(&mut self, len: usize, first: u8, head: &[u8]) -> Result<Role, WireError> {
        if is_eof(len, first) {
            let (warnings, status) = parse_eof(head)?;
            self.last_status = Some(status);
            self.state = State::Done;
            Ok(Role::EndOfRows { warnings, status })
        } else {
            Ok(Role::Row)
        }
    }
}

mod replay;
pub use replay::{replay, Replayed};

/// What [`pass_rows`] went over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowsPassed {
    /// Bytes of whole row packets, headers included.
    pub bytes: usize,
    /// Rows.
    pub rows: u64,
    /// The sequence id the next packet gets.
    pub next_seq: u8,
}

/// Goes over the whole row packets at the start of `buf`, renumbering their sequence ids from
/// `seq`, and stops at the first packet that is not a plain row (the EOF or ERR that ends the
/// rows, a frame of 16 MiB or more) or not whole in `buf`. For a reply whose tracker is
/// [`ReplyTracker::in_rows`]: rows are most of a big result, and this loop is all they need,
/// without the tracker (rows do not change its state).
pub fn pass_rows(buf: &mut [u8], mut seq: u8) -> RowsPassed {
    let mut pos = 0;
    let mut rows = 0;
    while let Some(h) = PacketHeader::parse(&buf[pos..]) {
        let end = pos + 4 + h.len;
        if h.len >= MAX_PAYLOAD || h.len == 0 || end > buf.len() {
            break;
        }
        let first = buf[pos + 4];
        if first == 0xff || is_eof(h.len, first) {
            break;
        }
        buf[pos + 3] = seq;
        seq = seq.wrapping_add(1);
        rows += 1;
        pos = end;
    }
    RowsPassed {
        bytes: pos,
        rows,
        next_seq: seq,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
