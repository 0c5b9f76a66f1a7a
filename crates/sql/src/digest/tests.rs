#![allow(clippy::unwrap_used)]

use super::*;
use proptest::prelude::*;

fn digest_with(q: &str, opts: &DigestOptions) -> String {
    let mut out = Vec::new();
    digest_into(q.as_bytes(), opts, &mut out);
    String::from_utf8(out).unwrap()
}

fn d(q: &str) -> String {
    digest_with(q, &DigestOptions::default())
}

fn hash(q: &str) -> u64 {
    digest_into(q.as_bytes(), &DigestOptions::default(), &mut Vec::new())
}

const C: &str = "83868641912-28773972837-60736120486-75162659906-27563526494-20381887404-41576422241-93426793964-56405065102-33518432330";
const PAD: &str = "67847967377-48000963322-62604785301-91415491898-96926520291";

/// sysbench 1.0 oltp_read_write with --db-ps-mode=disable, then the old sysbench 0.4 ranges
/// seen in ProxySQL's own posts: every statement kind and the digest DBAs know.
#[test]
fn sysbench_statements() {
    let cases = [
        (
            "SELECT c FROM sbtest1 WHERE id=50148",
            "SELECT c FROM sbtest1 WHERE id=?",
        ),
        (
            "SELECT c FROM sbtest1 WHERE id BETWEEN 49960 AND 50059",
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?",
        ),
        (
            "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN 50116 AND 50215",
            "SELECT SUM(k) FROM sbtest1 WHERE id BETWEEN ? AND ?",
        ),
        (
            "SELECT c FROM sbtest1 WHERE id BETWEEN 4996 AND 5095 ORDER BY c",
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
        ),
        (
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 1 AND 100 ORDER BY c",
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ? ORDER BY c",
        ),
        (
            "UPDATE sbtest1 SET k=k+1 WHERE id=50251",
            "UPDATE sbtest1 SET k=k+? WHERE id=?",
        ),
        (
            &format!("UPDATE sbtest1 SET c='{C}' WHERE id=49737"),
            "UPDATE sbtest1 SET c=? WHERE id=?",
        ),
        (
            "DELETE FROM sbtest1 WHERE id=50089",
            "DELETE FROM sbtest1 WHERE id=?",
        ),
        (
            &format!("INSERT INTO sbtest1 (id, k, c, pad) VALUES (50089, 49862, '{C}', '{PAD}')"),
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)",
        ),
        ("BEGIN", "BEGIN"),
        ("COMMIT", "COMMIT"),
        (
            "SELECT c FROM sbtest1 WHERE id BETWEEN 5 AND 5+99",
            "SELECT c FROM sbtest1 WHERE id BETWEEN ? AND ?+?",
        ),
        (
            "SELECT SUM(K) FROM sbtest1 WHERE id BETWEEN 5 AND 5+99",
            "SELECT SUM(K) FROM sbtest1 WHERE id BETWEEN ? AND ?+?",
        ),
        (
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN 7 AND 7+99 ORDER BY c",
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN ? AND ?+? ORDER BY c",
        ),
    ];
    for (q, want) in cases {
        assert_eq!(d(q), want, "query: {q}");
    }
}

#[test]
fn hash_is_stable() {
    // xxh3-64 of the text: a change here means every stored digest and rule changes.
    let h = hash("SELECT c FROM sbtest1 WHERE id=50148");
    assert_eq!(h, xxh3_64(b"SELECT c FROM sbtest1 WHERE id=?"));
    assert_eq!(format_digest(h), "0xF0A999CB989E6AE5");
}

#[test]
fn format_and_parse() {
    assert_eq!(format_digest(0x13781C1DBF001A0C), "0x13781C1DBF001A0C");
    assert_eq!(format_digest(1), "0x0000000000000001");
    let mut buf = [0u8; 18];
    assert_eq!(format_digest_into(u64::MAX, &mut buf), "0xFFFFFFFFFFFFFFFF");
    assert_eq!(parse_digest("0x13781c1dbf001a0c"), Some(0x13781C1DBF001A0C));
    assert_eq!(parse_digest(" 0X01 "), Some(1));
    assert_eq!(parse_digest("13781C1DBF001A0C"), None);
    assert_eq!(parse_digest("0x"), None);
    assert_eq!(parse_digest("0x10000000000000000"), None);
    assert_eq!(parse_digest("0xZZ"), None);
}

#[test]
fn same_digest_modulo_literals_whitespace_comments() {
    let a = hash("SELECT c FROM sbtest1 WHERE id=1");
    for q in [
        "SELECT c FROM sbtest1 WHERE id=987654321",
        "  SELECT   c\tFROM\n sbtest1  WHERE id='x'  ",
        "/* app: x */ SELECT c FROM sbtest1 WHERE id=-5",
        "SELECT c /* c */ FROM sbtest1 -- tail\n WHERE id=1.5e3",
        "SELECT c FROM sbtest1 # c\nWHERE id=0x1F",
        "SELECT/**/c FROM sbtest1 WHERE id=?",
        "SELECT c FROM sbtest1 WHERE id=_utf8mb4'7'",
    ] {
        assert_eq!(hash(q), a, "query: {q}");
    }
    assert_ne!(hash("SELECT c FROM sbtest2 WHERE id=1"), a);
}

#[test]
fn strings() {
    assert_eq!(
        d(r"SELECT 'it''s', 'a\'b', 'c\\', 'd'"),
        "SELECT ?, ?, ?, ?"
    );
    assert_eq!(d(r#"SELECT "x""y", "a\"b""#), "SELECT ?, ?");
    assert_eq!(
        d("SELECT N'x', n'y', _utf8'z', _binary\"w\""),
        "SELECT ?, ?, ?, ?"
    );
    assert_eq!(
        d("SELECT X'0F', x'ab', B'01', b'1', 0x1F, 0b101"),
        "SELECT ?, ?, ?, ?, ?, ?"
    );
    assert_eq!(d("SELECT 'a -- b', '/* c */', '#'"), "SELECT ?, ?, ?");
    assert_eq!(d("SELECT 'unterminated"), "SELECT ?");
    assert_eq!(
        d("SELECT '' FROM t WHERE a = ''"),
        "SELECT ? FROM t WHERE a = ?"
    );
    // A word glued to a string is an introducer only when it can be one.
    assert_eq!(d("SELECT abc'x'"), "SELECT abc?");
}

#[test]
fn numbers() {
    assert_eq!(
        d("SELECT 1, 1.5, .5, 1e10, 1.5E-3, 2e+9, 12345678901234567890"),
        "SELECT ?, ?, ?, ?, ?, ?, ?"
    );
    // Identifiers that start with digits, and qualified names, stay.
    assert_eq!(d("SELECT * FROM 1_value"), "SELECT * FROM 1_value");
    assert_eq!(
        d("SELECT t.1a, t.5 FROM db1.t2"),
        "SELECT t.1a, t.5 FROM db1.t2"
    );
    assert_eq!(d("SELECT 0xZZ"), "SELECT 0xZZ");
    assert_eq!(d("SELECT col1+1 FROM t1"), "SELECT col1+? FROM t1");
}

#[test]
fn signs_and_minus() {
    assert_eq!(d("UPDATE t SET k=k-1"), "UPDATE t SET k=k-?");
    assert_eq!(d("UPDATE t SET k = k - 1"), "UPDATE t SET k = k - ?");
    assert_eq!(
        d("SELECT * FROM t WHERE a = -1"),
        "SELECT * FROM t WHERE a = ?"
    );
    assert_eq!(d("SELECT * FROM t WHERE a=-1"), "SELECT * FROM t WHERE a=?");
    assert_eq!(
        d("SELECT * FROM t WHERE a = - 1"),
        "SELECT * FROM t WHERE a = ?"
    );
    assert_eq!(d("SELECT -1, +2, - -3"), "SELECT ?, ?, ?");
    assert_eq!(d("SELECT 1 -1"), "SELECT ? -?");
    assert_eq!(d("SELECT (1)-1"), "SELECT (?)-?");
    assert_eq!(
        d("SELECT a FROM t WHERE b BETWEEN -5 AND -1"),
        "SELECT a FROM t WHERE b BETWEEN ? AND ?"
    );
    assert_eq!(d("SELECT k - -1"), "SELECT k - ?");
    assert_eq!(d("SELECT -a, -(1)"), "SELECT -a, -(?)");
    assert_eq!(d("SELECT - /* c */ 1"), "SELECT ?");
    assert_eq!(
        d("INSERT INTO t VALUES (-1, -2.5, -'x')"),
        "INSERT INTO t VALUES (?, ?, ?)"
    );
    assert_eq!(d("SELECT 1--1"), "SELECT ?-?");
    assert_eq!(d("SELECT 1 -- 1"), "SELECT ?");
}

#[test]
fn nulls_and_booleans() {
    assert_eq!(
        d("SELECT NULL, TRUE, false FROM t WHERE a IS NULL"),
        "SELECT NULL, TRUE, false FROM t WHERE a IS NULL"
    );
    let opts = DigestOptions {
        replace_null: true,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with(
            "SELECT NULL, nUlL, NULL8, null_c FROM t WHERE a IS NULL",
            &opts
        ),
        "SELECT ?, ?, NULL8, null_c FROM t WHERE a IS ?"
    );
}

#[test]
fn comments() {
    for q in [
        "select /* COMMENT */ 1",
        "select/* COMMENT */1",
        "/* COMMENT */select 1",
        "/* COMMENT */ select 1 ",
        "select 1/* COMMENT */  ",
        "# random_comment \n   select 1.1",
        "-- random_comment \n select 1.1",
        "   --   random_comment\nselect 1.1",
        "# random_comment\n select 1.1 #final_comment\n   ",
        "-- random_comment\n select 1.1-- final_comment   \n",
        "select 1 --",
        "select 1 /* unterminated",
    ] {
        assert_eq!(d(q), "select ?", "query: {q:?}");
    }
    // Executable comments are SQL: unwrapped and digested.
    assert_eq!(
        d("SELECT /*!40001 SQL_NO_CACHE */ * FROM t WHERE a=1"),
        "SELECT SQL_NO_CACHE * FROM t WHERE a=?"
    );
    assert_eq!(d("/*!40101 SET NAMES utf8 */"), "SET NAMES utf8");
    assert_eq!(d("SELECT /*M!100101 1, */ 2"), "SELECT ?, ?");
    assert_eq!(d("SELECT /*! 'a' */ 2*3"), "SELECT ? ?*?");
    // Optimizer hints are comments.
    assert_eq!(
        d("SELECT /*+ MAX_EXECUTION_TIME(1000) */ a FROM t"),
        "SELECT a FROM t"
    );
    let keep = DigestOptions {
        keep_comment: true,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with("SELECT /* app:\n  x=1 */ a FROM t WHERE b=2 -- bye", &keep),
        "SELECT /* app: x=1 */ a FROM t WHERE b=?"
    );
    assert_eq!(
        digest_with("SELECT /*!40001 SQL_NO_CACHE */ 1", &keep),
        "SELECT /*!40001 SQL_NO_CACHE */ ?"
    );
    assert_eq!(
        digest_with("SELECT - /* c */ 1", &keep),
        "SELECT - /* c */ ?"
    );
}

#[test]
fn whitespace_and_parentheses() {
    assert_eq!(d("  SELECT\n\t a ,  b  FROM t  "), "SELECT a, b FROM t");
    assert_eq!(d("SELECT f( a , b ) FROM t"), "SELECT f(a, b) FROM t");
    assert_eq!(
        d("INSERT INTO db.table  ( col1 )  VALUES ( 'val' )"),
        "INSERT INTO db.table (col1) VALUES (?)"
    );
    assert_eq!(
        d("INSERT INTO db.table(col1) VALUES ('val')"),
        "INSERT INTO db.table(col1) VALUES (?)"
    );
    assert_eq!(d("SELECT 1 ; SELECT 2;"), "SELECT ?; SELECT ?;");
    assert_eq!(d(""), "");
    assert_eq!(d("  /* only a comment */  "), "");
    assert_eq!(
        d("SELECT `my  col`, `a``b` FROM `t`"),
        "SELECT `my  col`, `a``b` FROM `t`"
    );
}

#[test]
fn in_lists_fold() {
    assert_eq!(
        d("SELECT * FROM t WHERE id IN (1,2,3)"),
        "SELECT * FROM t WHERE id IN (?,?,?)"
    );
    assert_eq!(
        d("SELECT * FROM t WHERE id IN (1,2,3,4)"),
        "SELECT * FROM t WHERE id IN (?,?,?,?)"
    );
    assert_eq!(
        d("SELECT * FROM t WHERE id IN (1,2,3,4,5)"),
        "SELECT * FROM t WHERE id IN (?,?,?,...)"
    );
    assert_eq!(
        d("SELECT * FROM t WHERE id IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)"),
        "SELECT * FROM t WHERE id IN (?, ?, ?, ...)"
    );
    assert_eq!(
        d("SELECT * FROM t WHERE id IN ('a','b','c','d','e',-6)"),
        "SELECT * FROM t WHERE id IN (?,?,?,...)"
    );
    // Lists of any length share a digest once folded.
    let folded = hash("SELECT * FROM t WHERE id IN (1,2,3,4,5)");
    let long: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    assert_eq!(
        hash(&format!("SELECT * FROM t WHERE id IN ({})", long.join(","))),
        folded
    );
    assert_eq!(hash("SELECT * FROM t WHERE id IN (?,?,?,?,?,?,?)"), folded);
    // A value that is not a lone literal ends the run.
    assert_eq!(
        d("SELECT * FROM nulltablenull WHERE null_id IN (NULL  ,2,3, 'NULL' ,5,NulL,null,NULL8,9,10)"),
        "SELECT * FROM nulltablenull WHERE null_id IN (NULL,?,?, ?,?,NulL,null,NULL8,?,?)"
    );
    assert_eq!(
        d("INSERT INTO t VALUES ('val',1, 2,3,'foo', 5 + 10, 6 - 9)"),
        "INSERT INTO t VALUES (?,?, ?,..., ? + ?, ? - ?)"
    );
    assert_eq!(d("SELECT f(1,2,3,4,5,a)"), "SELECT f(?,?,?,...,a)");
    // Top-level lists are not folded.
    assert_eq!(d("SELECT 1,2,3,4,5"), "SELECT ?,?,?,?,?");
    // Tuples.
    assert_eq!(
        d("SELECT * FROM t WHERE (a,b) IN ((1,2),(3,4),(5,6),(7,8),(9,10))"),
        "SELECT * FROM t WHERE (a,b) IN ((?,?),(?,?),(?,?),...)"
    );
    let limit1 = DigestOptions {
        grouping_limit: 1,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with("SELECT * FROM t WHERE id IN (1,2,3)", &limit1),
        "SELECT * FROM t WHERE id IN (?,...)"
    );
    let off = DigestOptions {
        grouping_limit: 0,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with("SELECT * FROM t WHERE id IN (1,2,3,4,5)", &off),
        "SELECT * FROM t WHERE id IN (?,?,?,?,?)"
    );
}

#[test]
fn multi_row_values_fold() {
    assert_eq!(
        d("INSERT INTO t (a,b) VALUES (1,2),(3,4),(5,6)"),
        "INSERT INTO t (a,b) VALUES (?,?),(?,?),(?,?)"
    );
    assert_eq!(
        d("INSERT INTO t (a,b) VALUES (1,2),(3,4),(5,6),(7,8),(9,10)"),
        "INSERT INTO t (a,b) VALUES (?,?),(?,?),(?,?),..."
    );
    assert_eq!(
        d("INSERT INTO t VALUES (1,'a'), (2,'b'), (3,'c'), (4,'d'), (5,'e');"),
        "INSERT INTO t VALUES (?,?), (?,?), (?,?), ...;"
    );
    assert_eq!(
        d("INSERT INTO t (a) VALUES (1),(2),(3),(4),(5) ON DUPLICATE KEY UPDATE a=VALUES(a)"),
        "INSERT INTO t (a) VALUES (?),(?),(?),... ON DUPLICATE KEY UPDATE a=VALUES(a)"
    );
    // Rows with long value lists fold both ways.
    assert_eq!(
        d("REPLACE INTO t VALUE (1,2,3,4,5),(1,2,3,4,5),(1,2,3,4,5),(1,2,3,4,5),(1,2,3,4,5)"),
        "REPLACE INTO t VALUE (?,?,?,...),(?,?,?,...),(?,?,?,...),..."
    );
    // A row with an expression is not a row of values.
    assert_eq!(
        d("INSERT INTO t VALUES (1),(2),(NOW()),(4),(5)"),
        "INSERT INTO t VALUES (?),(?),(NOW()),(?),(?)"
    );
    let limit1 = DigestOptions {
        grouping_limit: 1,
        ..DigestOptions::default()
    };
    let rows = vec!["(1, 'x')"; 50];
    assert_eq!(
        digest_with(
            &format!("INSERT INTO t VALUES {}", rows.join(", ")),
            &limit1
        ),
        "INSERT INTO t VALUES (?, ?), ..."
    );
}

#[test]
fn lowercase_and_no_digits() {
    let lower = DigestOptions {
        lowercase: true,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with("SELECT C FROM SBTEST1 WHERE ID='ABC' AND `Col`=1", &lower),
        "select c from sbtest1 where id=? and `col`=?"
    );
    let nd = DigestOptions {
        no_digits: true,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with(
            "INSERT INTO db.table1_25 (col_121, c2) VALUES (1, 'x2')",
            &nd
        ),
        "INSERT INTO db.table?_? (col_?, c?) VALUES (?, ?)"
    );
    assert_eq!(
        digest_with("SELECT * FROM 1_value", &nd),
        "SELECT * FROM ?_value"
    );
}

#[test]
fn limits() {
    let opts = DigestOptions {
        max_digest_length: 20,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with("SELECT c FROM sbtest1 WHERE id=1", &opts),
        "SELECT c FROM sbtest"
    );
    // Never inside a UTF-8 character, never a space at the end.
    let opts = DigestOptions {
        max_digest_length: 9,
        ..DigestOptions::default()
    };
    assert_eq!(digest_with("SELECT été FROM t", &opts), "SELECT é");
    let eight = DigestOptions {
        max_digest_length: 8,
        ..DigestOptions::default()
    };
    assert_eq!(digest_with("SELECT été FROM t", &eight), "SELECT");
    assert_eq!(digest_with("SELECT a  FROM t", &opts), "SELECT a");
    let opts = DigestOptions {
        max_query_length: 33,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with("SELECT c FROM sbtest1 WHERE id='123456'", &opts),
        "SELECT c FROM sbtest1 WHERE id=?"
    );
    let opts = DigestOptions {
        max_query_length: 40,
        ..DigestOptions::default()
    };
    assert_eq!(
        digest_with("SELECT * FROM t WHERE id IN (1,2,3,4,5,6,7,8,9)", &opts),
        "SELECT * FROM t WHERE id IN (?,?,?,..."
    );
    // A long list folded after the cut point still comes out folded.
    let opts = DigestOptions {
        max_digest_length: 40,
        ..DigestOptions::default()
    };
    let long: Vec<String> = (0..1000).map(|i| i.to_string()).collect();
    assert_eq!(
        digest_with(
            &format!("SELECT * FROM t WHERE id IN ({}) AND b=1", long.join(",")),
            &opts
        ),
        "SELECT * FROM t WHERE id IN (?,?,?,...)"
    );
    assert_eq!(
        digest_with(
            &format!("SELECT * FROM tab WHERE a=1 AND id IN ({})", long.join(",")),
            &opts
        ),
        "SELECT * FROM tab WHERE a=? AND id IN (?"
    );
    let zero = DigestOptions {
        max_digest_length: 0,
        ..DigestOptions::default()
    };
    assert_eq!(digest_with("SELECT 1", &zero), "");
}

#[test]
fn invalid_utf8_passes_through() {
    let mut out = Vec::new();
    digest_into(
        b"SELECT \xff\xfe FROM t WHERE a='\xff'",
        &DigestOptions::default(),
        &mut out,
    );
    assert_eq!(out, b"SELECT \xff\xfe FROM t WHERE a=?");
}

#[test]
fn buffer_is_reused() {
    let mut out = Vec::new();
    let opts = DigestOptions::default();
    let q = format!("INSERT INTO sbtest1 (id, k, c, pad) VALUES (50089, 49862, '{C}', '{PAD}')");
    digest_into(q.as_bytes(), &opts, &mut out);
    let cap = out.capacity();
    let ptr = out.as_ptr();
    for _ in 0..10 {
        digest_into(q.as_bytes(), &opts, &mut out);
        digest_into(b"SELECT c FROM sbtest1 WHERE id=1", &opts, &mut out);
    }
    assert_eq!((out.capacity(), out.as_ptr()), (cap, ptr));
}

fn any_opts() -> impl Strategy<Value = DigestOptions> {
    (any::<[bool; 5]>(), 0usize..300, 0usize..400, 0usize..6).prop_map(
        |(b, max_digest_length, max_query_length, grouping_limit)| DigestOptions {
            lowercase: b[0],
            max_digest_length,
            max_query_length,
            no_digits: b[1],
            replace_null: b[2],
            keep_comment: b[3] && b[4],
            grouping_limit,
        },
    )
}

/// Tokens of a query template; `L` is a literal, rendered differently each time.
const TOKENS: &[&str] = &[
    "SELECT", "FROM", "WHERE", "AND", "IN", "VALUES", "INSERT", "NULL", "BETWEEN", "c", "t1",
    "sbtest1", "`q t`", "=", "+", "-", "*", "<", "(", "(", ")", ")", ",", ",", ",", ";", "L", "L",
    "L", "L", "L", "L",
];

const LITERALS: &[&str] = &[
    "0",
    "42",
    "3.14",
    "1e10",
    "2.5E-3",
    "123456789012345678901",
    "'it''s'",
    r"'a\'b'",
    r"'c\\'",
    "''",
    "'--'",
    "'/*'",
    "'#'",
    "'('",
    "','",
    "\"x\"",
    "0x1F",
    "X'0A'",
    "b'01'",
    "_utf8mb4'x'",
    "N'y'",
    "?",
];

/// Whitespace in all its forms: each one digests to a single space.
const SEPARATORS: &[&str] = &[
    " ",
    "  ",
    "\n",
    "\t\r\n ",
    " /* c */ ",
    "/* c */",
    " -- c\n",
    "# c\n",
];

fn render(template: &[(usize, usize, usize)]) -> String {
    let mut q = String::new();
    for &(tok, lit, sep) in template {
        let t = TOKENS[tok % TOKENS.len()];
        q.push_str(if t == "L" {
            LITERALS[lit % LITERALS.len()]
        } else {
            t
        });
        q.push_str(SEPARATORS[sep % SEPARATORS.len()]);
    }
    q
}

fn template() -> impl Strategy<Value = Vec<(usize, usize, usize)>> {
    proptest::collection::vec((0usize..1000, 0usize..1000, 0usize..1000), 0..40)
}

proptest! {
    #[test]
    fn never_panics_and_stays_in_bounds(
        q in proptest::collection::vec(any::<u8>(), 0..400),
        opts in any_opts(),
    ) {
        let mut out = Vec::new();
        let h = digest_into(&q, &opts, &mut out);
        prop_assert!(out.len() <= opts.max_digest_length);
        prop_assert!(out.len() <= q.len());
        prop_assert_eq!(h, xxh3_64(&out));
        prop_assert!(out.first() != Some(&b' ') && out.last() != Some(&b' '));
    }

    #[test]
    fn never_panics_sqlish(
        q in r#"[a-zA-Z0-9_@;'"`#/*!\-+().,? \n\\xXbBN]{0,120}"#,
        opts in any_opts(),
    ) {
        let mut out = Vec::new();
        digest_into(q.as_bytes(), &opts, &mut out);
        prop_assert!(out.len() <= opts.max_digest_length);
        if !q.contains('`') && !opts.keep_comment {
            prop_assert!(!out.windows(2).any(|w| w == b"  "), "{:?}", String::from_utf8_lossy(&out));
        }
    }

    /// Queries that differ only in their literal values and in the form of their whitespace and
    /// comments share a digest, and a digest digests to itself.
    #[test]
    fn literals_and_whitespace_do_not_matter(
        t in template(),
        shift in 1usize..1000,
        lowercase in any::<bool>(),
        replace_null in any::<bool>(),
        grouping_limit in 0usize..5,
    ) {
        let opts = DigestOptions {
            lowercase,
            replace_null,
            grouping_limit,
            ..DigestOptions::default()
        };
        let a = render(&t);
        let other: Vec<_> = t.iter().map(|&(tok, lit, sep)| (tok, lit + shift, sep + shift)).collect();
        let b = render(&other);
        let (mut da, mut db) = (Vec::new(), Vec::new());
        let ha = digest_into(a.as_bytes(), &opts, &mut da);
        let hb = digest_into(b.as_bytes(), &opts, &mut db);
        prop_assert_eq!(String::from_utf8_lossy(&da), String::from_utf8_lossy(&db), "{:?} vs {:?}", a, b);
        prop_assert_eq!(ha, hb);
        let mut again = Vec::new();
        digest_into(&da, &opts, &mut again);
        prop_assert_eq!(String::from_utf8_lossy(&again), String::from_utf8_lossy(&da), "{:?}", a);
    }
}

proptest! {
    /// Reading stops early once the text up to max_digest_length is settled: the result must be
    /// the full digest cut at that length.
    #[test]
    fn max_digest_length_only_cuts(
        q in prop_oneof![
            template().prop_map(|t| render(&t)),
            "[(),1a; \\-]{0,200}",
            "(VALUES|IN|x|-|1|'s'|[(),; ]){0,120}",
        ],
        max in 0usize..120,
        grouping_limit in 0usize..4,
    ) {
        let full_opts = DigestOptions { grouping_limit, max_digest_length: usize::MAX, ..DigestOptions::default() };
        let opts = DigestOptions { max_digest_length: max, ..full_opts };
        let mut full = Vec::new();
        digest_into(q.as_bytes(), &full_opts, &mut full);
        cut(&mut full, max);
        let mut short = Vec::new();
        digest_into(q.as_bytes(), &opts, &mut short);
        prop_assert_eq!(String::from_utf8_lossy(&short), String::from_utf8_lossy(&full), "{:?}", q);
    }
}

/// A number written with a leading dot is a literal after a keyword too (it was kept as
/// written after SELECT, BETWEEN, THEN...), and stays a name after a qualifier.
#[test]
fn leading_dot_numbers_after_keywords() {
    let cases = [
        (
            "SELECT n FROM t WHERE n BETWEEN .1 AND .9",
            "SELECT n FROM t WHERE n BETWEEN ? AND ?",
        ),
        ("SELECT .5", "SELECT ?"),
        ("SELECT .5e-3", "SELECT ?"),
        ("SELECT .5E+3", "SELECT ?"),
        (
            "SELECT CASE WHEN n>0 THEN .5 ELSE -.5 END FROM t",
            "SELECT CASE WHEN n>? THEN ? ELSE ? END FROM t",
        ),
        (
            "SELECT n FROM t WHERE NOT .5",
            "SELECT n FROM t WHERE NOT ?",
        ),
        ("SELECT t.5 FROM t", "SELECT t.5 FROM t"),
    ];
    for (q, want) in cases {
        assert_eq!(d(q), want, "{q}");
    }
}
