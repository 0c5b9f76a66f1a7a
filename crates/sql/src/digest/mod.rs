//! The query digest: the normalized text of a query (literals → `?`, comments stripped,
//! whitespace collapsed, long value lists folded) and its stable 64-bit hash, computed in one
//! pass over the bytes with no allocation once the caller's buffer has grown.
//!
//! The text follows what ProxySQL shows in `stats_mysql_query_digest` for the statements DBAs
//! know (sysbench's among them), so that their `match_digest` rules and greps carry over:
//!
//! - literals of every kind become `?`: strings (`'..'`, `".."`, backslash and doubled-quote
//!   escapes, with a glued introducer `_utf8mb4'..'`, `N'..'`), numbers (integer, decimal,
//!   exponent), hex and bit values (`0x1F`, `X'1F'`, `0b01`, `b'01'`), and the `?` of prepared
//!   statements. A `+`/`-` in front of a literal where it can only be a sign (after an operator,
//!   `(`, `,`, a keyword such as `WHERE`/`AND`/`BETWEEN`, or at the start) goes with it:
//!   `id = -1` → `id = ?`, but `k-1` → `k-?`;
//! - `NULL`, `TRUE` and `FALSE` stay words (`NULL` becomes `?` with `replace_null`);
//! - comments (`/* */`, `-- `, `#`) are dropped and count as whitespace; with `keep_comment`,
//!   `/* */` comments stay as written (line comments never do: a digest is one line).
//!   Executable comments (`/*! .. */`, `/*!50110 .. */`, MariaDB's `/*M!100100 .. */`) are
//!   unwrapped: their content is SQL the server runs, so it is digested like the rest
//!   (ProxySQL copies it verbatim, literals included);
//! - whitespace is kept where the query has some, as one space: none at the ends, none before
//!   `,`, `)` or `;`, none after `(`. `id=5` and `id = 5` therefore stay two digests, as in
//!   ProxySQL 1.x/2.0 (`INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)`); ProxySQL
//!   2.4+ also removes the spaces after commas and around arithmetic operators;
//! - inside parentheses, a run of more than `grouping_limit + 1` lone literals keeps the first
//!   `grouping_limit` and folds the rest into `...` (`IN (?,?,?,...)`); a run of rows whose
//!   values are all literals folds the same way (`VALUES (?,?),(?,?),(?,?),...`), also at the
//!   top level after `VALUES`. Folding needs at least two values to replace, so four values
//!   with the default limit of 3 stay four, as in ProxySQL. Rows use the same limit (ProxySQL
//!   2.5 never folds rows; 2.6 folds only rows that were folded themselves): a bulk INSERT
//!   has one digest whatever its number of rows;
//! - `lowercase` lower-cases ASCII letters of words, quoted identifiers and kept comments;
//!   `no_digits` replaces each run of digits inside identifiers by `?`;
//! - backquoted identifiers are copied as written; bytes that are not ASCII (UTF-8 or not)
//!   are copied byte for byte.
//!
//! Only the first `max_query_length` bytes of a query are read, and the text is cut at
//! `max_digest_length` bytes (never inside a UTF-8 character). The hash is xxh3-64 of the
//! text: stable across builds, processes and machines, so it can be stored and compared. Its
//! values are weir's own (ProxySQL hashes with SpookyHash): a `digest` copied into a query rule
//! from a ProxySQL install must be read again from weir's stats_mysql_query_digest.

mod lex;
mod normalize;

use normalize::Digester;
use xxhash_rust::xxh3::xxh3_64;

/// Options from the mysql-query_digests_* variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DigestOptions {
    /// `query_digests_lowercase`: lower-case the digest text.
    pub lowercase: bool,
    /// `query_digests_max_digest_length`: longest digest text, in bytes.
    pub max_digest_length: usize,
    /// `query_digests_max_query_length`: how much of the query is read, in bytes.
    pub max_query_length: usize,
    /// `query_digests_no_digits`: digits inside identifiers become `?`.
    pub no_digits: bool,
    /// `query_digests_replace_null`: `NULL` becomes `?`.
    pub replace_null: bool,
    /// `query_digests_keep_comment`: keep `/* */` comments.
    pub keep_comment: bool,
    /// `query_digests_grouping_limit`: values of a list kept before the rest fold into `...`;
    /// 0 disables folding.
    pub grouping_limit: usize,
}

impl Default for DigestOptions {
    /// ProxySQL's defaults.
    fn default() -> Self {
        DigestOptions {
            lowercase: false,
            max_digest_length: 2048,
            max_query_length: 65000,
            no_digits: false,
            replace_null: false,
            keep_comment: false,
            grouping_limit: 3,
        }
    }
}

/// Writes the normalized digest text of `query` into `out` (cleared first; reuse it across
/// queries so that no allocation happens after warm-up) and returns its 64-bit hash (xxh3_64 of
/// the digest text — stable across builds and processes).
pub fn digest_into(query: &[u8], opts: &DigestOptions, out: &mut Vec<u8>) -> u64 {
    out.clear();
    let q = &query[..query.len().min(opts.max_query_length)];
    // The text never gets longer than the query: one reservation covers the whole pass.
    out.reserve(q.len());
    let mut d = Digester::new(q, opts, out);
    d.run();
    cut(out, opts.max_digest_length);
    xxh3_64(out)
}

/// `0x` + 16 upper-case hex digits, as stats_mysql_query_digest shows it.
pub fn format_digest(hash: u64) -> String {
    let mut buf = [0u8; 18];
    format_digest_into(hash, &mut buf).to_owned()
}

/// [`format_digest`] without allocating: writes into `buf` and returns it as text.
pub fn format_digest_into(hash: u64, buf: &mut [u8; 18]) -> &str {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    buf[0] = b'0';
    buf[1] = b'x';
    for (k, b) in buf[2..].iter_mut().enumerate() {
        *b = HEX[((hash >> (60 - 4 * k)) & 0xF) as usize];
    }
    // Only ASCII was written.
    std::str::from_utf8(buf).unwrap_or_default()
}

/// Reads a digest as shown by [`format_digest`] (`0x` prefix, hex digits in either case), e.g.
/// from the `digest` column of mysql_query_rules.
pub fn parse_digest(text: &str) -> Option<u64> {
    let t = text.trim();
    let hex = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X"))?;
    if hex.is_empty() || hex.len() > 16 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(hex, 16).ok()
}

/// Cuts the text at `max` bytes, backing up to the start of a UTF-8 character that the cut
/// would split (at most 3 bytes: invalid sequences are cut where they are), and drops a space
/// left at the end.
fn cut(out: &mut Vec<u8>, max: usize) {
    if out.len() > max {
        let mut k = max;
        while k > 0 && max - k < 3 && out[k] & 0xC0 == 0x80 {
            k -= 1;
        }
        out.truncate(k);
    }
    while out.last() == Some(&b' ') {
        out.pop();
    }
}

#[cfg(test)]
mod tests;
