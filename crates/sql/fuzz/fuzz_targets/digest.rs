//! Fuzzes `weir_sql::digest_into` with arbitrary query bytes and options derived from the
//! first four bytes of the input. Checks that digesting never panics, that the digest text is
//! never longer than `max_digest_length` nor than the query, and that it is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use weir_sql::{digest_into, DigestOptions};

/// A length from one byte: high bit clear gives a small value (0..=127), set gives a large one
/// (`large` plus up to 127).
fn length(b: u8, large: usize) -> usize {
    if b & 0x80 == 0 {
        usize::from(b)
    } else {
        large + usize::from(b & 0x7f)
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let (head, query) = data.split_at(4);
    let flags = head[0];
    let opts = DigestOptions {
        lowercase: flags & 0x01 != 0,
        no_digits: flags & 0x02 != 0,
        replace_null: flags & 0x04 != 0,
        keep_comment: flags & 0x08 != 0,
        grouping_limit: 1 + usize::from(head[1]) % 10,
        max_digest_length: length(head[2], 2048),
        max_query_length: length(head[3], 65000),
    };

    let mut out = Vec::new();
    let hash = digest_into(query, &opts, &mut out);
    assert!(
        out.len() <= opts.max_digest_length,
        "digest {} bytes > max_digest_length {}",
        out.len(),
        opts.max_digest_length
    );
    assert!(
        out.len() <= query.len(),
        "digest {} bytes > query {} bytes",
        out.len(),
        query.len()
    );

    // Same input, reused (dirty) buffer: same text and hash.
    let first = out.clone();
    out.extend_from_slice(b"garbage");
    let again = digest_into(query, &opts, &mut out);
    assert_eq!(hash, again);
    assert_eq!(first, out);
});
