//! Lexical helpers of the digest: byte classes, keywords, and the extent of string and number
//! literals.

pub(super) const WS: u8 = 1;
pub(super) const ID: u8 = 2;
pub(super) const DIGIT: u8 = 3;

/// Byte classes: whitespace, identifier (letters, `_`, `$`, any byte ≥ 0x80), digit, other.
static CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = match b {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => WS,
            b'0'..=b'9' => DIGIT,
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$' | 0x80..=0xff => ID,
            _ => 0,
        };
        i += 1;
    }
    t
};

pub(super) fn class(b: u8) -> u8 {
    CLASS[b as usize]
}

pub(super) fn is_ident(b: u8) -> bool {
    class(b) >= ID
}

/// Keywords after which `+`/`-` can only be a sign.
const EXPR_KEYWORDS: [&[u8]; 36] = [
    b"SELECT",
    b"WHERE",
    b"AND",
    b"OR",
    b"NOT",
    b"XOR",
    b"BETWEEN",
    b"LIKE",
    b"RLIKE",
    b"REGEXP",
    b"IS",
    b"IN",
    b"CASE",
    b"WHEN",
    b"THEN",
    b"ELSE",
    b"ON",
    b"HAVING",
    b"BY",
    b"LIMIT",
    b"OFFSET",
    b"SET",
    b"VALUES",
    b"VALUE",
    b"DIV",
    b"MOD",
    b"INTERVAL",
    b"RETURN",
    b"DEFAULT",
    b"ESCAPE",
    b"DISTINCT",
    b"ALL",
    b"ANY",
    b"SOME",
    b"DO",
    b"RETURNS",
];

pub(super) fn is_expr_keyword(w: &[u8]) -> bool {
    (2..=8).contains(&w.len()) && EXPR_KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(w))
}

pub(super) fn is_values(w: &[u8]) -> bool {
    w.eq_ignore_ascii_case(b"VALUES") || w.eq_ignore_ascii_case(b"VALUE")
}

/// Whether a word glued to a following quote makes one literal with it.
pub(super) fn is_introducer(w: &[u8], quote: u8) -> bool {
    match w {
        [b'_', _, ..] => true,
        [b'N' | b'n' | b'X' | b'x' | b'B' | b'b'] => quote == b'\'',
        _ => false,
    }
}

/// End of the string literal that starts with the quote at `s` (the query's end when it is
/// not closed).
pub(super) fn skip_string(q: &[u8], s: usize) -> usize {
    let quote = q[s];
    let mut i = s + 1;
    while i < q.len() {
        let b = q[i];
        if b == b'\\' {
            i += 2;
        } else if b == quote {
            if q.get(i + 1) == Some(&quote) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    q.len()
}

/// End of the number that starts at `s` (a digit, or `.` before a digit), or `None` when the
/// bytes make an identifier instead (`1_value`, `123abc`, `0xZZ`).
pub(super) fn scan_number(q: &[u8], s: usize) -> Option<usize> {
    let n = q.len();
    let digit = |i: usize| i < n && q[i].is_ascii_digit();
    if q[s] == b'0' && s + 1 < n && matches!(q[s + 1], b'x' | b'X' | b'b' | b'B') {
        let hex = q[s + 1] | 0x20 == b'x';
        let mut e = s + 2;
        while e < n
            && (if hex {
                q[e].is_ascii_hexdigit()
            } else {
                matches!(q[e], b'0' | b'1')
            })
        {
            e += 1;
        }
        return (e > s + 2 && (e == n || !is_ident(q[e]))).then_some(e);
    }
    let mut e = s;
    while digit(e) {
        e += 1;
    }
    let mut fraction = false;
    if e < n && q[e] == b'.' {
        fraction = true;
        e += 1;
        while digit(e) {
            e += 1;
        }
    }
    if e < n && q[e] | 0x20 == b'e' {
        let mut k = e + 1;
        if k < n && matches!(q[k], b'+' | b'-') {
            k += 1;
        }
        if digit(k) {
            e = k;
            while digit(e) {
                e += 1;
            }
        }
    }
    if e < n && is_ident(q[e]) && !fraction {
        return None;
    }
    Some(e)
}
