//! User-level locks (`GET_LOCK`, `RELEASE_LOCK`, `RELEASE_ALL_LOCKS`) belong to the backend
//! connection that took them, so a session holding one must keep that connection until it has
//! released them all. This finds the calls; the session counts.

/// A call that takes or releases a user-level lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockCall {
    /// `GET_LOCK(name, timeout)`: the name when it is a plain string literal.
    Get(Option<Box<str>>),
    /// `RELEASE_LOCK(name)`: the name when it is a plain string literal.
    Release(Option<Box<str>>),
    /// `RELEASE_ALL_LOCKS()`.
    ReleaseAll,
}

/// Appends the GET_LOCK / RELEASE_LOCK / RELEASE_ALL_LOCKS calls of `q` (skipping string
/// literals, quoted identifiers and comments), with the lock name when the first argument is a
/// plain string literal (unescaped content, case kept), else None.
pub fn lock_calls(q: &[u8], out: &mut Vec<LockCall>) {
    let mut i = 0;
    while let Some(&b) = q.get(i) {
        match b {
            b'\'' | b'"' | b'`' => i = literal(q, i).map_or(q.len(), |(end, _)| end),
            b'#' => i = line_end(q, i),
            b'-' if q.get(i + 1) == Some(&b'-') && q.get(i + 2).is_none_or(|&c| c <= b' ') => {
                i = line_end(q, i)
            }
            b'/' if q.get(i + 1) == Some(&b'*') => {
                if is_executable(q, i) {
                    // `/*! ... */` runs: read its content as code, after the version number.
                    i += if q.get(i + 2) == Some(&b'!') { 3 } else { 4 };
                    while q.get(i).is_some_and(u8::is_ascii_digit) {
                        i += 1;
                    }
                } else {
                    i = comment_end(q, i);
                }
            }
            b'@' => {
                // A variable name, not a function: `@get_lock`, `@@x`.
                i += 1;
                while q
                    .get(i)
                    .is_some_and(|&c| is_ident_byte(c) || c == b'@' || c == b'.')
                {
                    i += 1;
                }
            }
            _ if is_ident_byte(b) => {
                let start = i;
                while q.get(i).is_some_and(|&c| is_ident_byte(c)) {
                    i += 1;
                }
                let qualified = start > 0 && q.get(start - 1) == Some(&b'.');
                if let (Some(word), false) = (q.get(start..i), qualified) {
                    if let Some(call) = call(q, word, i) {
                        out.push(call);
                    }
                }
            }
            _ => i += 1,
        }
    }
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// The call `word` makes when an opening parenthesis follows at `i`.
fn call(q: &[u8], word: &[u8], i: usize) -> Option<LockCall> {
    let kind = match word.len() {
        8 if word.eq_ignore_ascii_case(b"GET_LOCK") => 0,
        12 if word.eq_ignore_ascii_case(b"RELEASE_LOCK") => 1,
        17 if word.eq_ignore_ascii_case(b"RELEASE_ALL_LOCKS") => 2,
        _ => return None,
    };
    let open = skip_trivia(q, i);
    if q.get(open) != Some(&b'(') {
        return None;
    }
    Some(match kind {
        0 => LockCall::Get(first_argument(q, open + 1)),
        1 => LockCall::Release(first_argument(q, open + 1)),
        _ => LockCall::ReleaseAll,
    })
}

/// The first argument at `i` when it is a lone string literal.
fn first_argument(q: &[u8], i: usize) -> Option<Box<str>> {
    let start = skip_trivia(q, i);
    if !matches!(q.get(start), Some(b'\'' | b'"')) {
        return None;
    }
    let (end, name) = literal(q, start)?;
    matches!(q.get(skip_trivia(q, end)), Some(b',' | b')')).then_some(name?)
}

/// The end of the quoted token at `i` and, for a string, its unescaped content when it is
/// UTF-8. None when it is not closed.
fn literal(q: &[u8], i: usize) -> Option<(usize, Option<Box<str>>)> {
    let quote = *q.get(i)?;
    let mut content = Vec::new();
    let mut j = i + 1;
    loop {
        let b = *q.get(j)?;
        j += 1;
        if b == quote {
            if q.get(j) != Some(&quote) {
                break;
            }
            j += 1;
            content.push(quote);
        } else if b == b'\\' && quote != b'`' {
            let e = *q.get(j)?;
            j += 1;
            match e {
                b'0' => content.push(0),
                b'b' => content.push(0x08),
                b'n' => content.push(b'\n'),
                b'r' => content.push(b'\r'),
                b't' => content.push(b'\t'),
                b'Z' => content.push(0x1a),
                // Kept with their backslash, as LIKE patterns need them.
                b'%' | b'_' => content.extend_from_slice(&[b'\\', e]),
                _ => content.push(e),
            }
        } else {
            content.push(b);
        }
    }
    let text = String::from_utf8(content).ok().map(String::into_boxed_str);
    Some((j, text))
}

/// Whether the comment at `i` is `/*! ... */` or `/*M! ... */`, which the server runs.
fn is_executable(q: &[u8], i: usize) -> bool {
    q.get(i + 2) == Some(&b'!') || (q.get(i + 2) == Some(&b'M') && q.get(i + 3) == Some(&b'!'))
}

fn line_end(q: &[u8], i: usize) -> usize {
    q.get(i..)
        .and_then(|rest| rest.iter().position(|&b| b == b'\n'))
        .map_or(q.len(), |p| i + p)
}

fn comment_end(q: &[u8], i: usize) -> usize {
    q.get(i + 2..)
        .and_then(|rest| rest.windows(2).position(|w| w == b"*/"))
        .map_or(q.len(), |p| i + 2 + p + 2)
}

/// The first byte at or after `i` that is not whitespace or a comment.
fn skip_trivia(q: &[u8], mut i: usize) -> usize {
    loop {
        match q.get(i) {
            Some(b) if b.is_ascii_whitespace() || *b == 0x0b => i += 1,
            Some(b'#') => i = line_end(q, i),
            Some(b'-')
                if q.get(i + 1) == Some(&b'-') && q.get(i + 2).is_none_or(|&c| c <= b' ') =>
            {
                i = line_end(q, i)
            }
            Some(b'/') if q.get(i + 1) == Some(&b'*') && !is_executable(q, i) => {
                i = comment_end(q, i)
            }
            _ => return i,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn calls(q: &str) -> Vec<LockCall> {
        let mut out = Vec::new();
        lock_calls(q.as_bytes(), &mut out);
        out
    }

    fn get(name: &str) -> LockCall {
        LockCall::Get(Some(name.into()))
    }

    #[test]
    fn finds_calls_with_names() {
        assert_eq!(calls("SELECT GET_LOCK('Job', 10)"), vec![get("Job")]);
        assert_eq!(
            calls(
                "select get_lock ( /* c */ \"a\"\"b\" , 1), release_lock('x'), RELEASE_ALL_LOCKS()"
            ),
            vec![
                get("a\"b"),
                LockCall::Release(Some("x".into())),
                LockCall::ReleaseAll
            ]
        );
        assert_eq!(calls(r"SELECT GET_LOCK('it\'s\n', 1)"), vec![get("it's\n")]);
        assert_eq!(calls("DO GET_LOCK('a''b', 0)"), vec![get("a'b")]);
    }

    #[test]
    fn names_that_are_not_plain_literals() {
        assert_eq!(
            calls("SELECT GET_LOCK(@name, 1)"),
            vec![LockCall::Get(None)]
        );
        assert_eq!(
            calls("SELECT GET_LOCK(CONCAT('a', 'b'), 1)"),
            vec![LockCall::Get(None)]
        );
        assert_eq!(
            calls("SELECT RELEASE_LOCK('a' 'b')"),
            vec![LockCall::Release(None)]
        );
        assert_eq!(
            calls("SELECT GET_LOCK(_utf8mb4'a', 1)"),
            vec![LockCall::Get(None)]
        );
    }

    #[test]
    fn skips_what_is_not_a_call() {
        for q in [
            "SELECT 'GET_LOCK(1)'",
            "SELECT `get_lock`(1)",
            "SELECT \"release_lock('x')\"",
            "SELECT 1 /* GET_LOCK('x', 1) */",
            "SELECT 1 -- GET_LOCK('x', 1)",
            "SELECT 1 # RELEASE_ALL_LOCKS()",
            "SELECT get_lock FROM t",
            "SELECT db.get_lock('x', 1)",
            "SELECT @get_lock",
            "SELECT my_get_lock('x')",
        ] {
            assert_eq!(calls(q), vec![], "{q}");
        }
    }

    #[test]
    fn executable_comments_are_code() {
        assert_eq!(calls("/*!50000 SELECT GET_LOCK('x', 1) */"), vec![get("x")]);
        assert_eq!(
            calls("/*M! SELECT RELEASE_ALL_LOCKS() */"),
            vec![LockCall::ReleaseAll]
        );
    }

    proptest! {
        #[test]
        fn never_panics(q in proptest::collection::vec(any::<u8>(), 0..300)) {
            let mut out = Vec::new();
            lock_calls(&q, &mut out);
        }

        #[test]
        fn never_panics_sqlish(q in "[GETLOCKRLASE_ a(),'\"`#/*!\\-\\\\@]{0,80}") {
            let mut out = Vec::new();
            lock_calls(q.as_bytes(), &mut out);
        }
    }
}
