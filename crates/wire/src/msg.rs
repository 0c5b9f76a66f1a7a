//! OK, ERR and EOF packets: building them for clients and reading them from servers.

use crate::io::{put_lenenc, put_lenenc_bytes, Reader};
use crate::packet::{begin_packet, finish_packet};
use crate::{cap, WireError};
use bytes::{BufMut, BytesMut};

/// The fields of an OK packet that weir acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OkInfo {
    /// Rows changed by the statement.
    pub affected_rows: u64,
    /// Value of LAST_INSERT_ID() after the statement.
    pub last_insert_id: u64,
    /// Server status flags.
    pub status: u16,
    /// Number of warnings.
    pub warnings: u16,
}

impl OkInfo {
    /// Parses an OK payload (first byte 0x00, or 0xFE when it ends a result set).
    pub fn parse(payload: &[u8]) -> Result<OkInfo, WireError> {
        let mut r = Reader::new(payload);
        r.u8("OK header")?;
        let affected_rows = r.lenenc("affected rows")?;
        let last_insert_id = r.lenenc("last insert id")?;
        let status = r.u16("status flags")?;
        let warnings = if r.remaining().len() >= 2 {
            r.u16("warnings")?
        } else {
            0
        };
        Ok(OkInfo {
            affected_rows,
            last_insert_id,
            status,
            warnings,
        })
    }

    /// Appends the OK a client without CLIENT_SESSION_TRACK gets for `payload`, an OK sent
    /// to a connection with it: the session state changes and their status flag left out,
    /// the info kept (a length-encoded string either way, empty ones dropped, as servers do).
    pub fn write_untracked(out: &mut BytesMut, seq: u8, payload: &[u8]) -> Result<(), WireError> {
        let mut ok = OkInfo::parse(payload)?;
        let mut r = Reader::new(payload);
        r.u8("OK header")?;
        r.lenenc("affected rows")?;
        r.lenenc("last insert id")?;
        r.take(4, "status and warnings")?;
        let info = if r.is_empty() {
            &[][..]
        } else {
            r.lenenc_bytes("info")?
        };
        ok.status &= !crate::status::SESSION_STATE_CHANGED;
        write_ok(out, seq, &ok, info);
        Ok(())
    }
}

/// An error, as a server sends it or as weir answers a client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrInfo {
    /// MySQL error code.
    pub code: u16,
    /// Five-character SQLSTATE.
    pub state: [u8; 5],
    /// Human-readable message.
    pub message: Box<str>,
    /// The server's bytes of the message when they are not UTF-8 (a `character_set_results`
    /// such as latin1): what is sent on, so that the client reads what the server wrote.
    /// Behind one thin pointer: an error sits in the future of every running command.
    pub raw_message: Option<Box<RawMessage>>,
}

/// The bytes of a server's error message that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawMessage(pub Box<[u8]>);

impl ErrInfo {
    /// An error with the given code, SQLSTATE and message.
    pub fn new(code: u16, state: &str, message: impl Into<String>) -> Self {
        let mut st = *b"HY000";
        if state.len() == 5 {
            st.copy_from_slice(state.as_bytes());
        }
        ErrInfo {
            code,
            state: st,
            message: message.into().into_boxed_str(),
            raw_message: None,
        }
    }

    /// Parses an ERR payload (first byte 0xFF).
    pub fn parse(payload: &[u8]) -> Result<ErrInfo, WireError> {
        let mut r = Reader::new(payload);
        r.u8("ERR header")?;
        let code = r.u16("error code")?;
        let mut state = *b"HY000";
        if r.remaining().first() == Some(&b'#') && r.remaining().len() >= 6 {
            r.u8("#")?;
            state.copy_from_slice(r.take(5, "sqlstate")?);
        }
        let rest = r.rest();
        let (message, raw_message) = match std::str::from_utf8(rest) {
            Ok(m) => (m.into(), None),
            Err(_) => (
                String::from_utf8_lossy(rest).into(),
                Some(Box::new(RawMessage(rest.into()))),
            ),
        };
        Ok(ErrInfo {
            code,
            state,
            message,
            raw_message,
        })
    }

    /// Puts `prefix` before the message, in both its forms.
    pub fn prefix_message(&mut self, prefix: &str) {
        self.message = format!("{prefix}{}", self.message).into_boxed_str();
        if let Some(raw) = &self.raw_message {
            let bytes = [prefix.as_bytes(), &raw.0].concat();
            self.raw_message = Some(Box::new(RawMessage(bytes.into())));
        }
    }

    /// The message as the server wrote it (as weir wrote it, for weir's own errors).
    pub fn message_bytes(&self) -> &[u8] {
        match &self.raw_message {
            Some(raw) => &raw.0,
            None => self.message.as_bytes(),
        }
    }

    /// SQLSTATE as text.
    pub fn sqlstate(&self) -> &str {
        std::str::from_utf8(&self.state).unwrap_or("HY000")
    }

    /// Appends this error as a packet with sequence id `seq`.
    pub fn write(&self, out: &mut BytesMut, seq: u8) {
        let start = begin_packet(out, seq);
        out.put_u8(0xff);
        out.put_u16_le(self.code);
        out.put_u8(b'#');
        out.put_slice(&self.state);
        // Keep well under one frame whatever the message.
        let msg = self.message_bytes();
        out.put_slice(&msg[..msg.len().min(16_000)]);
        finish_packet(out, start);
    }
}

impl std::fmt::Display for ErrInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "ERROR {} ({}): {}",
            self.code,
            self.sqlstate(),
            self.message
        )
    }
}

/// Appends an OK packet. A non-empty `info` is written as a length-encoded string, as
/// MySQL and MariaDB servers do (clients read it that way whatever CLIENT_SESSION_TRACK says).
pub fn write_ok(out: &mut BytesMut, seq: u8, ok: &OkInfo, info: &[u8]) {
    let start = begin_packet(out, seq);
    out.put_u8(0x00);
    put_lenenc(out, ok.affected_rows);
    put_lenenc(out, ok.last_insert_id);
    out.put_u16_le(ok.status);
    out.put_u16_le(ok.warnings);
    if !info.is_empty() {
        put_lenenc_bytes(out, info);
    }
    finish_packet(out, start);
}

/// Appends the packet that ends a result set: an EOF, or an OK with header 0xFE when the client
/// negotiated CLIENT_DEPRECATE_EOF.
pub fn write_end_of_rows(
    out: &mut BytesMut,
    seq: u8,
    client_caps: u32,
    status: u16,
    warnings: u16,
) {
    let start = begin_packet(out, seq);
    out.put_u8(0xfe);
    if client_caps & cap::DEPRECATE_EOF != 0 {
        out.put_u8(0);
        out.put_u8(0);
    }
    if client_caps & cap::DEPRECATE_EOF != 0 {
        out.put_u16_le(status);
        out.put_u16_le(warnings);
    } else {
        out.put_u16_le(warnings);
        out.put_u16_le(status);
    }
    finish_packet(out, start);
}

/// Appends a classic EOF packet (warnings, then status).
pub fn write_eof(out: &mut BytesMut, seq: u8, status: u16, warnings: u16) {
    let start = begin_packet(out, seq);
    out.put_u8(0xfe);
    out.put_u16_le(warnings);
    out.put_u16_le(status);
    finish_packet(out, start);
}

/// Reads warnings and status from a classic EOF payload.
pub fn parse_eof(payload: &[u8]) -> Result<(u16, u16), WireError> {
    let mut r = Reader::new(payload);
    r.u8("EOF header")?;
    let warnings = r.u16("warnings")?;
    let status = r.u16("status")?;
    Ok((warnings, status))
}

/// Whether a payload is an EOF marker (as opposed to a row that starts with 0xFE).
#[inline]
pub fn is_eof(payload_len: usize, first: u8) -> bool {
    first == 0xfe && payload_len < 9
}

/// One column of a result set weir builds.
#[derive(Debug, Clone, Copy)]
pub struct ColumnSpec<'a> {
    /// Column name (and alias).
    pub name: &'a str,
    /// Type (`crate::coltype`).
    pub col_type: u8,
    /// Character set id (63 = binary, for numbers).
    pub charset: u16,
    /// Display length.
    pub length: u32,
    /// Column flags (NOT_NULL 1, BINARY 128, UNSIGNED 32...).
    pub flags: u16,
    /// Whether `name` is also the original column name (a table's column, or weir's own
    /// tables); false for what the server computes (an expression, `SHOW WARNINGS`), whose
    /// definition has an empty org_name.
    pub named_column: bool,
    /// Decimals byte (39, NOT_FIXED_DEC, for the server's computed strings).
    pub decimals: u8,
}

impl<'a> ColumnSpec<'a> {
    /// A VARCHAR column in utf8.
    pub fn text(name: &'a str) -> Self {
        ColumnSpec {
            name,
            col_type: crate::coltype::VAR_STRING,
            charset: 33,
            length: 1024,
            flags: 0,
            named_column: true,
            decimals: 0,
        }
    }

    /// A BIGINT UNSIGNED NOT NULL column.
    pub fn unsigned_bigint(name: &'a str) -> Self {
        ColumnSpec {
            name,
            col_type: crate::coltype::LONGLONG,
            charset: 63,
            length: 21,
            flags: 1 | 32 | 128,
            named_column: true,
            decimals: 0,
        }
    }

    /// A BIGINT NOT NULL column.
    pub fn bigint(name: &'a str) -> Self {
        ColumnSpec {
            name,
            col_type: crate::coltype::LONGLONG,
            charset: 63,
            length: 21,
            flags: 1 | 128,
            named_column: true,
            decimals: 0,
        }
    }
}

/// A text-protocol result set built by weir itself (admin answers, local replies).
pub struct TextResultSet<'a> {
    out: &'a mut BytesMut,
    seq: u8,
    client_caps: u32,
}

impl<'a> TextResultSet<'a> {
    /// Writes the column count and one VARCHAR column definition per name.
    pub fn begin(out: &'a mut BytesMut, seq: u8, client_caps: u32, columns: &[&str]) -> Self {
        let specs: Vec<ColumnSpec<'_>> = columns.iter().map(|n| ColumnSpec::text(n)).collect();
        Self::begin_columns(out, seq, client_caps, &specs, crate::status::AUTOCOMMIT)
    }

    /// Writes the column count and the given column definitions; `status` goes into the EOF
    /// that ends them (classic protocol).
    pub fn begin_columns(
        out: &'a mut BytesMut,
        seq: u8,
        client_caps: u32,
        columns: &[ColumnSpec<'_>],
        status: u16,
    ) -> Self {
        Self::begin_columns_for(out, seq, (client_caps, 0), columns, status)
    }

    /// As [`TextResultSet::begin_columns`] for a client that negotiated `(capabilities,
    /// MariaDB extended capabilities)`: with extended metadata, each definition carries an
    /// (empty) extended type info after `org_name`, as the server writes it.
    pub fn begin_columns_for(
        out: &'a mut BytesMut,
        mut seq: u8,
        (client_caps, mariadb_caps): (u32, u32),
        columns: &[ColumnSpec<'_>],
        status: u16,
    ) -> Self {
        let start = begin_packet(out, seq);
        put_lenenc(out, columns.len() as u64);
        finish_packet(out, start);
        seq = seq.wrapping_add(1);
        for c in columns {
            let start = begin_packet(out, seq);
            put_lenenc_bytes(out, b"def");
            put_lenenc_bytes(out, b"");
            put_lenenc_bytes(out, b"");
            put_lenenc_bytes(out, b"");
            put_lenenc_bytes(out, c.name.as_bytes());
            put_lenenc_bytes(
                out,
                if c.named_column {
                    c.name.as_bytes()
                } else {
                    b""
                },
            );
            if mariadb_caps & crate::mariadb_cap::EXTENDED_METADATA != 0 {
                put_lenenc_bytes(out, b"");
            }
            out.put_u8(0x0c);
            out.put_u16_le(c.charset);
            out.put_u32_le(c.length);
            out.put_u8(c.col_type);
            out.put_u16_le(c.flags);
            out.put_u8(c.decimals);
            out.put_u16_le(0);
            finish_packet(out, start);
            seq = seq.wrapping_add(1);
        }
        if client_caps & cap::DEPRECATE_EOF == 0 {
            write_eof(out, seq, status, 0);
            seq = seq.wrapping_add(1);
        }
        TextResultSet {
            out,
            seq,
            client_caps,
        }
    }

    /// Writes one row; `None` is SQL NULL.
    pub fn row(&mut self, values: &[Option<&[u8]>]) {
        let start = begin_packet(self.out, self.seq);
        for v in values {
            match v {
                Some(v) => put_lenenc_bytes(self.out, v),
                None => self.out.put_u8(0xfb),
            }
        }
        if self.out.len() - start - 4 < crate::packet::MAX_PAYLOAD {
            finish_packet(self.out, start);
            self.seq = self.seq.wrapping_add(1);
        } else {
            // A row of 16 MiB or more goes in several frames, each with its sequence id.
            let payload = self.out.split_off(start + 4);
            self.out.truncate(start);
            self.seq = crate::packet::write_packet(self.out, self.seq, &payload);
        }
    }

    /// Ends the result set with the given status flags; returns the next sequence id.
    pub fn finish(self, status: u16) -> u8 {
        write_end_of_rows(self.out, self.seq, self.client_caps, status, 0);
        self.seq.wrapping_add(1)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ok_round_trip() {
        let ok = OkInfo {
            affected_rows: 300,
            last_insert_id: 1 << 40,
            status: 3,
            warnings: 2,
        };
        let mut out = BytesMut::new();
        write_ok(&mut out, 1, &ok, b"");
        assert_eq!(OkInfo::parse(&out[4..]).unwrap(), ok);
    }

    /// OKs MariaDB 10.11 sent a connection with CLIENT_SESSION_TRACK, and what it sends one
    /// without for the same statements.
    #[test]
    fn untracked_oks_are_what_a_client_without_session_tracking_gets() {
        let cases: [(&[u8], &[u8]); 3] = [
            // USE mysql: schema change tracked, no info.
            (
                &[
                    0, 0, 0, 2, 0x40, 0, 0, 0, 8, 1, 6, 5, b'm', b'y', b's', b'q', b'l',
                ],
                &[0, 0, 0, 2, 0, 0, 0],
            ),
            // SET autocommit=0: autocommit off, a variable tracked.
            (
                &[0, 0, 0, 0, 0x40, 0, 0, 0, 6, 0, 4, 1, b'a', 1, b'0'],
                &[0, 0, 0, 0, 0, 0, 0],
            ),
            // An UPDATE: info, nothing tracked (the bytes are the same either way).
            (
                &[0, 1, 0, 0x22, 0, 0, 0, 3, b'R', b'o', b'w'],
                &[0, 1, 0, 0x22, 0, 0, 0, 3, b'R', b'o', b'w'],
            ),
        ];
        for (tracked, untracked) in cases {
            let mut out = BytesMut::new();
            OkInfo::write_untracked(&mut out, 5, tracked).unwrap();
            assert_eq!(out[3], 5);
            assert_eq!(&out[4..], untracked);
        }
        // Info and a tracked change together: the info stays.
        let mut out = BytesMut::new();
        OkInfo::write_untracked(&mut out, 0, &[0, 0, 0, 0, 0x40, 1, 0, 2, b'h', b'i', 9, 9])
            .unwrap();
        assert_eq!(&out[4..], &[0, 0, 0, 0, 0, 1, 0, 2, b'h', b'i']);
        assert!(OkInfo::write_untracked(&mut out, 0, &[0, 0]).is_err());
    }

    #[test]
    fn a_row_over_16_mib_is_split_into_frames() {
        let mut out = BytesMut::new();
        let mut set = TextResultSet::begin(&mut out, 1, 0, &["a"]);
        let big = vec![b'x'; crate::packet::MAX_PAYLOAD + 10];
        set.row(&[Some(&big)]);
        set.row(&[Some(b"y")]);
        let next = set.finish(0);
        // count, definition, EOF, then the row's two frames, the next row and the EOF.
        let mut frames = Vec::new();
        let mut rest = &out[..];
        while rest.len() >= 4 {
            let len = usize::from(rest[0]) | usize::from(rest[1]) << 8 | usize::from(rest[2]) << 16;
            frames.push((len, rest[3]));
            rest = &rest[4 + len..];
        }
        assert!(rest.is_empty());
        let row_len = big.len() + 9; // lenenc prefix: 0xfe and 8 bytes
        assert_eq!(frames[3], (crate::packet::MAX_PAYLOAD, 4));
        assert_eq!(frames[4], (row_len - crate::packet::MAX_PAYLOAD, 5));
        assert_eq!(frames[5], (2, 6));
        assert_eq!(frames.len(), 7);
        assert_eq!(next, 8);
    }

    #[test]
    fn err_round_trip() {
        let e = ErrInfo::new(1045, "28000", "Access denied for user 'u'@'h'");
        let mut out = BytesMut::new();
        e.write(&mut out, 2);
        assert_eq!(out[3], 2);
        assert_eq!(ErrInfo::parse(&out[4..]).unwrap(), e);
        // A message in latin1 goes on byte for byte.
        let latin1 = b"\xff\x7a\x04#42S02Table 'db.t\xe9' doesn't exist";
        let e = ErrInfo::parse(latin1).unwrap();
        assert_eq!(&*e.message, "Table 'db.t\u{fffd}' doesn't exist");
        let mut out = BytesMut::new();
        e.write(&mut out, 1);
        assert_eq!(&out[4..], latin1);
        let mut prefixed = e.clone();
        prefixed.prefix_message("x: ");
        assert!(prefixed.message.starts_with("x: Table"));
        assert_eq!(
            prefixed.message_bytes(),
            b"x: Table 'db.t\xe9' doesn't exist"
        );
    }

    #[test]
    fn end_of_rows_forms() {
        let mut out = BytesMut::new();
        write_end_of_rows(&mut out, 0, 0, 0x22, 1);
        assert_eq!(parse_eof(&out[4..]).unwrap(), (1, 0x22));
        let mut out = BytesMut::new();
        write_end_of_rows(&mut out, 0, cap::DEPRECATE_EOF, 0x22, 1);
        let ok = OkInfo::parse(&out[4..]).unwrap();
        assert_eq!((ok.status, ok.warnings), (0x22, 1));
    }
}
