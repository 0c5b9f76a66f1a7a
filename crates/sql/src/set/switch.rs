//! `optimizer_switch`, the one tracked variable whose assignments accumulate: `'a=off'` then
//! `'b=off'` leaves both off. Its slot holds the merged list since the last DEFAULT, so that
//! `optimizer_switch=DEFAULT, optimizer_switch=<merged>` reproduces it on any connection.

/// The slot key (and replay name) of `optimizer_switch`.
pub(crate) const OPTIMIZER_SWITCH: &str = "optimizer_switch";

/// The element that resets every flag to its compiled-in default before the others apply.
const RESET: &str = "default";

/// The canonical form (`'default,flag=on,...'`, lowercase, no spaces) of a string value, or
/// None when it is not a list the merge can reason about. A flag named twice is refused:
/// the server rejects it too.
pub(crate) fn canonical(content: &str) -> Option<String> {
    let elements = elements(content)?;
    Some(quote(&elements))
}

/// The slot value after `new` (canonical) is assigned over `old`: None when no flag is left,
/// which is the connection's own state.
pub(crate) fn merge(old: Option<&str>, new: &str) -> Option<Box<str>> {
    let Some(new) = new
        .strip_prefix('\'')
        .and_then(|s| s.strip_suffix('\''))
        .and_then(elements)
    else {
        // Not a list this module produced: nothing sensible to merge with.
        return Some(new.into());
    };
    let mut merged = match old.and_then(|o| o.strip_prefix('\'')?.strip_suffix('\'')) {
        Some(old) if new.first().is_none_or(|e| *e != RESET) => elements(old).unwrap_or_default(),
        _ => Vec::new(),
    };
    for element in new {
        let flag = element.split('=').next();
        merged.retain(|e| e.split('=').next() != flag);
        merged.push(element);
    }
    // `default` always leads, wherever it came from, as the server applies it first.
    merged.sort_by_key(|e| *e != RESET);
    (!merged.is_empty()).then(|| quote(&merged).into())
}

fn quote(elements: &[String]) -> String {
    format!("'{}'", elements.join(","))
}

/// The elements of a list, `default` first; None when malformed or a name repeats.
fn elements(content: &str) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    if content.is_empty() {
        return Some(out);
    }
    for element in content.split(',') {
        let element = element.to_ascii_lowercase();
        let name = match element.split_once('=') {
            None if element == RESET => RESET,
            Some((name, "on" | "off" | "default"))
                if !name.is_empty()
                    && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
            {
                name
            }
            _ => return None,
        };
        if out.iter().any(|e| e.split('=').next() == Some(name)) {
            return None;
        }
        out.push(element);
    }
    out.sort_by_key(|e| *e != RESET);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_forms() {
        assert_eq!(canonical("MRR=Off").as_deref(), Some("'mrr=off'"));
        assert_eq!(canonical("a=on,default").as_deref(), Some("'default,a=on'"));
        assert_eq!(canonical("").as_deref(), Some("''"));
        assert_eq!(canonical("a=on,a=off"), None);
        assert_eq!(canonical("a = on"), None);
        assert_eq!(canonical("a=maybe"), None);
        assert_eq!(canonical("default,default"), None);
    }

    #[test]
    fn merging() {
        assert_eq!(merge(None, "'a=off'").as_deref(), Some("'a=off'"));
        assert_eq!(
            merge(Some("'a=off,b=on'"), "'a=on,c=off'").as_deref(),
            Some("'b=on,a=on,c=off'")
        );
        assert_eq!(
            merge(Some("'a=off'"), "'default,b=on'").as_deref(),
            Some("'default,b=on'")
        );
        assert_eq!(
            merge(Some("'default,a=off'"), "'b=on'").as_deref(),
            Some("'default,a=off,b=on'")
        );
        assert_eq!(merge(None, "''"), None);
        assert_eq!(merge(Some("'a=off'"), "''").as_deref(), Some("'a=off'"));
    }
}
