use super::*;
use crate::msg::{write_eof, write_ok};
use bytes::BytesMut;

fn feed_all(t: &mut ReplyTracker, packets: &[Vec<u8>]) -> Vec<Role> {
    packets
        .iter()
        .map(|p| {
            let head = &p[..p.len().min(CLASSIFY_BYTES)];
            t.feed(p.len(), head).unwrap()
        })
        .collect()
}

fn ok(status: u16) -> Vec<u8> {
    let mut b = BytesMut::new();
    write_ok(
        &mut b,
        0,
        &OkInfo {
            status,
            ..Default::default()
        },
        b"",
    );
    b[4..].to_vec()
}

fn eof(status: u16) -> Vec<u8> {
    let mut b = BytesMut::new();
    write_eof(&mut b, 0, status, 0);
    b[4..].to_vec()
}

#[test]
fn ok_reply_ends() {
    let mut t = ReplyTracker::new(Expect::ResultSets);
    let roles = feed_all(&mut t, &[ok(status::AUTOCOMMIT)]);
    assert!(matches!(roles[0], Role::Ok(_)));
    assert!(t.is_done());
}

#[test]
fn result_set_then_more_results() {
    let mut t = ReplyTracker::new(Expect::ResultSets);
    let packets = vec![
        vec![2],
        b"\x03defcol1".to_vec(),
        b"\x03defcol2".to_vec(),
        eof(2),
        b"\x011\x012".to_vec(),
        vec![0xfe; 12], // a row starting with 0xFE but long: not an EOF
        eof(2 | status::MORE_RESULTS_EXISTS),
        ok(2),
    ];
    let roles = feed_all(&mut t, &packets);
    assert_eq!(roles[0], Role::ColumnCount(2));
    assert_eq!(roles[3], Role::DefinitionsEof { status: 2 });
    assert_eq!(roles[5], Role::Row);
    assert!(matches!(roles[6], Role::EndOfRows { .. }));
    assert!(matches!(roles[7], Role::Ok(_)));
    assert!(t.is_done());
}

#[test]
fn local_infile_then_ok() {
    let mut t = ReplyTracker::new(Expect::ResultSets);
    assert_eq!(t.feed(6, b"\xfbfile").unwrap(), Role::LocalInfile);
    assert!(t.awaits_local_infile());
    t.local_infile_sent();
    let o = ok(2);
    assert!(matches!(t.feed(o.len(), &o).unwrap(), Role::Ok(_)));
    assert!(t.is_done());
}

#[test]
fn prepare_with_params_and_columns() {
    let mut t = ReplyTracker::new(Expect::Prepare);
    let prep = vec![0, 1, 0, 0, 0, 1, 0, 2, 0, 0, 0, 0];
    let packets = vec![prep, vec![3], vec![3], eof(2), vec![3], eof(2)];
    let roles = feed_all(&mut t, &packets);
    assert_eq!(
        roles[0],
        Role::PrepareOk {
            statement_id: 1,
            columns: 1,
            params: 2
        }
    );
    assert!(t.is_done());
}

#[test]
fn cursor_open_ends_after_definitions() {
    let mut t = ReplyTracker::new(Expect::CursorResultSets);
    feed_all(&mut t, &[vec![1], vec![3], eof(status::CURSOR_EXISTS)]);
    assert!(t.is_done());
}

#[test]
fn a_procedures_open_cursor_does_not_end_its_result_set() {
    // CALL of a procedure that sends a result set while one of its cursors is open: the flag
    // is in the definitions' EOF, and rows follow.
    let mut t = ReplyTracker::new(Expect::ResultSets);
    let more = status::CURSOR_EXISTS | status::MORE_RESULTS_EXISTS;
    feed_all(
        &mut t,
        &[vec![1], vec![3], eof(more), vec![1, b'2'], eof(more)],
    );
    assert!(!t.is_done());
    feed_all(&mut t, &[vec![0, 0, 0, 2, 0, 0, 0]]);
    assert!(t.is_done());
}

#[test]
fn error_after_definitions_ends_reply() {
    // A cursor execution that fails once the server has sent the definitions (a subquery
    // returning several rows, an out-of-range result): ERR instead of the EOF.
    let mut t = ReplyTracker::new(Expect::ResultSets);
    feed_all(&mut t, &[vec![1], vec![3]]);
    assert_eq!(t.feed(9, b"\xff\xda\x04#21000").unwrap(), Role::Err);
    assert!(t.is_done());
}

#[test]
fn huge_row_continuations_are_not_classified() {
    let mut t = ReplyTracker::new(Expect::Fetch);
    assert_eq!(t.feed(MAX_PAYLOAD, &[0]).unwrap(), Role::Row);
    // A continuation frame starting with 0xFE and short must not end the rows.
    assert_eq!(t.feed(5, &[0xfe, 0, 0, 0, 0]).unwrap(), Role::Continuation);
    assert!(!t.is_done());
    let e = eof(0);
    t.feed(e.len(), &e).unwrap();
    assert!(t.is_done());
}

#[test]
fn error_mid_rows_ends_reply() {
    let mut t = ReplyTracker::new(Expect::ResultSets);
    feed_all(&mut t, &[vec![1], vec![3], eof(0), vec![1, b'x']]);
    assert_eq!(t.feed(9, b"\xff\x10\x04#HY000").unwrap(), Role::Err);
    assert!(t.is_done());
}

proptest::proptest! {
    #[test]
    fn never_panics(packets in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 1..40), 0..20)) {
        for expect in [Expect::ResultSets, Expect::CursorResultSets, Expect::Prepare, Expect::FieldList, Expect::Fetch, Expect::Status, Expect::Single] {
            let mut t = ReplyTracker::new(expect);
            for p in &packets {
                if t.feed(p.len(), &p[..p.len().min(CLASSIFY_BYTES)]).is_err() || t.is_done() { break; }
            }
        }
    }
}

/// A row packet with `payload`, sequence id 0.
fn framed(payload: &[u8]) -> Vec<u8> {
    let mut b = BytesMut::new();
    crate::packet::write_packet(&mut b, 0, payload);
    b.to_vec()
}

#[test]
fn pass_rows_goes_over_plain_rows_only() {
    let mut buf = Vec::new();
    buf.extend(framed(b"\x01a"));
    buf.extend(framed(b"\xfb")); // NULL first column
                                 // A row whose first column is a string with an 8-byte length: starts with 0xfe, not an EOF.
    let mut long = vec![0xfe, 9, 0, 0, 0, 0, 0, 0, 0];
    long.extend_from_slice(b"123456789");
    buf.extend(framed(&long));
    let rows_len = buf.len();
    buf.extend(framed(&eof(0)));
    let r = pass_rows(&mut buf, 5);
    assert_eq!(
        r,
        RowsPassed {
            bytes: rows_len,
            rows: 3,
            next_seq: 8
        }
    );
    let seqs: Vec<u8> = [0, 6, 11].iter().map(|&at| buf[at + 3]).collect();
    assert_eq!(seqs, [5, 6, 7]);
    // The tracker agrees on where the rows end.
    let mut t = ReplyTracker::new(Expect::Fetch);
    assert_eq!(t.feed(2, b"\x01a").unwrap(), Role::Row);
    assert!(t.in_rows());

    // Stops before an ERR and before a packet not whole in the buffer.
    let mut buf = framed(b"\x01a");
    buf.extend(framed(b"\xff\x10\x04#HY000oops"));
    assert_eq!(pass_rows(&mut buf, 1).rows, 1);
    let mut buf = framed(b"\x01a");
    let whole = buf.len();
    buf.extend(&framed(b"\x03abc")[..6]);
    let r = pass_rows(&mut buf, 1);
    assert_eq!((r.bytes, r.rows), (whole, 1));
    assert_eq!(pass_rows(&mut [0u8; 3], 0).bytes, 0);
}
