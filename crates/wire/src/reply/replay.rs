//! Sending a stored reply (the query cache's) to a client as if a backend had just sent it.

use super::{Expect, ReplyTracker, Role, CLASSIFY_BYTES};
use crate::msg::write_end_of_rows;
use crate::{cap, PacketHeader, WireError};
use bytes::BytesMut;

/// What a replayed reply held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Rows.
    pub rows: u64,
    /// Status flags of its last OK or EOF.
    pub status: u16,
}

/// Appends to `out` a stored reply for a client that expects sequence ids from `seq`.
///
/// `stored` holds whole packets in the form backends send them to weir (classic EOF packets);
/// for a client that negotiated CLIENT_DEPRECATE_EOF the EOF after column definitions is dropped
/// and the EOF after rows becomes an OK with header 0xFE, exactly as the relay does with a live
/// reply. Every other byte is copied unchanged. Fails, writing nothing usable, when `stored` is
/// not exactly one whole reply of the `expect` shape.
pub fn replay(
    stored: &[u8],
    expect: Expect,
    mut seq: u8,
    client_caps: u32,
    out: &mut BytesMut,
) -> Result<Replayed, WireError> {
    let deprecate_eof = client_caps & cap::DEPRECATE_EOF != 0;
    let mut tracker = ReplyTracker::new(expect);
    let mut rows = 0u64;
    let mut pos = 0usize;
    out.reserve(stored.len());
    while !tracker.is_done() {
        let h = PacketHeader::parse(&stored[pos..])
            .ok_or(WireError::Truncated("stored reply header"))?;
        let end = pos + 4 + h.len;
        let payload = stored
            .get(pos + 4..end)
            .ok_or(WireError::Truncated("stored reply packet"))?;
        let head = &payload[..h.len.min(CLASSIFY_BYTES)];
        match tracker.feed(h.len, head)? {
            Role::DefinitionsEof { status } if deprecate_eof => {
                if tracker.cursor_opened() {
                    write_end_of_rows(out, seq, client_caps, status, 0);
                    seq = seq.wrapping_add(1);
                }
                pos = end;
                continue;
            }
            Role::EndOfRows { warnings, status } if deprecate_eof => {
                write_end_of_rows(out, seq, client_caps, status, warnings);
                seq = seq.wrapping_add(1);
                pos = end;
                continue;
            }
            Role::Row => rows += 1,
            Role::LocalInfile => return Err(WireError::Invalid("stored LOCAL INFILE request")),
            _ => {}
        }
        let at = out.len();
        out.extend_from_slice(&stored[pos..end]);
        out[at + 3] = seq;
        seq = seq.wrapping_add(1);
        pos = end;
    }
    if pos != stored.len() {
        return Err(WireError::Invalid("bytes after the end of a stored reply"));
    }
    Ok(Replayed {
        rows,
        status: tracker.last_status().unwrap_or(0),
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::msg::{write_eof, write_ok, ColumnSpec, OkInfo, TextResultSet};
    use crate::packet::write_packet;
    use crate::status;

    /// A one-column result set with two rows in the classic form a backend sends.
    fn classic_result() -> BytesMut {
        let mut out = BytesMut::new();
        let cols = [ColumnSpec::text("a")];
        let mut set = TextResultSet::begin_columns(&mut out, 1, 0, &cols, status::AUTOCOMMIT);
        set.row(&[Some(b"x")]);
        set.row(&[None]);
        set.finish(status::AUTOCOMMIT);
        out
    }

    fn packets(buf: &[u8]) -> Vec<(u8, Vec<u8>)> {
        let mut v = Vec::new();
        let mut pos = 0;
        while let Some(h) = PacketHeader::parse(&buf[pos..]) {
            v.push((buf[pos + 3], buf[pos + 4..pos + 4 + h.len].to_vec()));
            pos += 4 + h.len;
        }
        assert_eq!(pos, buf.len());
        v
    }

    #[test]
    fn classic_clients_get_the_stored_bytes_renumbered() {
        let stored = classic_result();
        let mut out = BytesMut::new();
        let r = replay(&stored, Expect::ResultSets, 7, 0, &mut out).unwrap();
        assert_eq!(r.rows, 2);
        assert_eq!(r.status, status::AUTOCOMMIT);
        let (a, b) = (packets(&stored), packets(&out));
        assert_eq!(a.len(), b.len());
        for (i, ((_, pa), (sb, pb))) in a.iter().zip(&b).enumerate() {
            assert_eq!(pa, pb);
            assert_eq!(*sb as usize, 7 + i);
        }
    }

    #[test]
    fn deprecate_eof_clients_get_the_relay_translation() {
        let stored = classic_result();
        let mut out = BytesMut::new();
        let r = replay(&stored, Expect::ResultSets, 1, cap::DEPRECATE_EOF, &mut out).unwrap();
        assert_eq!(r.rows, 2);
        let p = packets(&out);
        // count, definition, two rows, OK-as-EOF: the definitions EOF is gone.
        assert_eq!(p.len(), 5);
        assert_eq!(p[4].1[0], 0xfe);
        assert!(p[4].1.len() >= 7, "an OK packet, not a classic EOF");
        assert_eq!(
            p.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
            vec![1, 2, 3, 4, 5]
        );
        // The same as what the client would be sent by a server speaking DEPRECATE_EOF.
        let mut direct = BytesMut::new();
        let cols = [ColumnSpec::text("a")];
        let mut set = TextResultSet::begin_columns(
            &mut direct,
            1,
            cap::DEPRECATE_EOF,
            &cols,
            status::AUTOCOMMIT,
        );
        set.row(&[Some(b"x")]);
        set.row(&[None]);
        set.finish(status::AUTOCOMMIT);
        assert_eq!(&out[..], &direct[..]);
    }

    #[test]
    fn an_ok_reply_replays_as_is() {
        let mut stored = BytesMut::new();
        write_ok(&mut stored, 1, &OkInfo::default(), b"");
        let mut out = BytesMut::new();
        replay(&stored, Expect::ResultSets, 1, cap::DEPRECATE_EOF, &mut out).unwrap();
        assert_eq!(&out[..], &stored[..]);
    }

    #[test]
    fn incomplete_or_overlong_replies_are_refused() {
        let stored = classic_result();
        let mut out = BytesMut::new();
        assert!(replay(
            &stored[..stored.len() - 3],
            Expect::ResultSets,
            1,
            0,
            &mut out
        )
        .is_err());
        let mut longer = stored.clone();
        write_eof(&mut longer, 9, 0, 0);
        assert!(replay(&longer, Expect::ResultSets, 1, 0, &mut out).is_err());
        let mut garbage = BytesMut::new();
        write_packet(&mut garbage, 0, &[0xfb, b'f']);
        assert!(replay(&garbage, Expect::ResultSets, 1, 0, &mut out).is_err());
        assert!(replay(b"", Expect::ResultSets, 1, 0, &mut out).is_err());
    }
}
