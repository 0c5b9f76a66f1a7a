use super::Template;
use regex::bytes::Regex;

fn rewrite(pattern: &str, template: &str, text: &str, global: bool) -> String {
    let re = Regex::new(pattern).expect("pattern");
    let t = Template::parse(template).expect("template");
    let out = if global {
        re.replace_all(text.as_bytes(), &t)
    } else {
        re.replace(text.as_bytes(), &t)
    };
    String::from_utf8(out.into_owned()).expect("utf8")
}

#[test]
fn groups_and_literals() {
    assert_eq!(
        rewrite(r"(\w+)@(\w+)", r"\2 at \1", "x joe@host y", false),
        "x host at joe y"
    );
    assert_eq!(rewrite("b+", r"<\0>", "abbc", false), "a<bb>c");
    assert_eq!(rewrite("o", "0", "foo boo", false), "f0o boo");
    assert_eq!(rewrite("o", "0", "foo boo", true), "f00 b00");
}

#[test]
fn dollar_is_literal_and_double_backslash_is_one() {
    assert_eq!(rewrite("(a)", r"$1\\${1}", "xay", false), r"x$1\${1}y");
}

#[test]
fn group_that_did_not_participate_is_empty() {
    assert_eq!(rewrite("(a)|(b)", r"[\1|\2]", "b", false), "[|b]");
}

#[test]
fn errors() {
    assert!(Template::parse(r"\n").is_err());
    assert!(Template::parse(r"abc\").is_err());
    assert!(Template::parse(r"é\x").is_err());
    assert_eq!(Template::parse(r"\1\3").map(|t| t.max_group()), Ok(Some(3)));
    assert_eq!(Template::parse("plain").map(|t| t.max_group()), Ok(None));
    assert_eq!(Template::parse("").map(|t| t.max_group()), Ok(None));
}
