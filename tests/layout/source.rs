//! Just enough of Rust's lexical structure to read imports and measure functions:
//! comments and literals blanked out, paths and braces found by scanning.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// `text` with comments, string and character literals replaced by spaces (newlines
/// kept, so line numbers stay).
pub fn strip(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let rest = &text[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(b.len(), |n| i + n + 2);
            blank(&mut out, i, end);
            i = end;
        } else if raw_string_at(b, i) {
            let hashes = rest[1..].bytes().take_while(|&c| c == b'#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let open = 1 + hashes + 1;
            let end = rest[open..]
                .find(&close)
                .map_or(b.len(), |n| i + open + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime ('a).
            let len = char_literal(rest);
            blank(&mut out, i, i + len);
            i += len.max(1);
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("only ASCII was replaced")
}

/// Whether a raw string (`r"..."`, `r#"..."#`, `br"..."`) starts at `b[i]`, not a raw
/// identifier (`r#type`) or the end of a word.
fn raw_string_at(b: &[u8], i: usize) -> bool {
    let word_before = |k: usize| k > 0 && is_word(b[k - 1]);
    let prefix_ok = !word_before(i) || (b[i - 1] == b'b' && !word_before(i - 1));
    let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
    b[i] == b'r' && prefix_ok && b.get(i + 1 + hashes) == Some(&b'"')
}

/// Length of the character literal `rest` starts with, else 0.
fn char_literal(rest: &str) -> usize {
    let mut chars = rest.char_indices().skip(1);
    match chars.next() {
        Some((_, '\\')) => rest
            .get(3..)
            .and_then(|r| r.find('\''))
            .map_or(0, |n| n + 4),
        Some((_, c)) => match chars.next() {
            Some((j, '\'')) if c != '\'' => j + 1,
            _ => 0,
        },
        None => 0,
    }
}

/// The first segment of every `crate::X` path in `text`, and of every path in a
/// `use crate::{..}` group.
pub fn crate_paths(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in text.match_indices("crate::") {
        if i > 0 && is_word(text.as_bytes()[i - 1]) {
            continue;
        }
        let rest = &text[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..matching_brace(group)];
            names.extend(group_heads(group));
        } else {
            names.insert(word(rest).to_string());
        }
    }
    names.retain(|n| !n.is_empty());
    names
}

/// The first segments of the paths in a `{..}` group (nested groups included).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut start = true;
    let mut i = 0;
    while i < group.len() {
        let c = group.as_bytes()[i];
        match c {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b',' if depth == 0 => start = true,
            c if start && depth == 0 && is_word(c) => {
                let w = word(&group[i..]);
                heads.push(w.to_string());
                i += w.len();
                start = false;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    heads
}

/// Index of the `}` closing a group whose `{` came just before `s`.
fn matching_brace(s: &str) -> usize {
    let mut depth = 1;
    for (i, c) in s.bytes().enumerate() {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
    }
    s.len()
}

fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The identifier `s` starts with.
fn word(s: &str) -> &str {
    let end = s.bytes().position(|c| !is_word(c)).unwrap_or(s.len());
    &s[..end]
}

/// `text` up to its `#[cfg(test)] mod tests {` (unit tests may name any sibling).
pub fn without_unit_tests(text: &str) -> &str {
    let mut from = 0;
    while let Some(n) = text[from..].find("#[cfg(test)]") {
        let at = from + n;
        let after = text[at + "#[cfg(test)]".len()..].trim_start();
        if let Some(rest) = after.strip_prefix("mod tests") {
            if rest.trim_start().starts_with('{') {
                return &text[..at];
            }
        }
        from = at + 1;
    }
    text
}

/// The sibling names of files in `dir`: its files' stems (but `mod`) and its folders.
pub fn siblings(dir: &Path, all: &BTreeSet<PathBuf>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for path in all {
        let Ok(rest) = path.strip_prefix(dir) else {
            continue;
        };
        let first = rest
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let name = first.trim_end_matches(".rs");
        if !["mod", "lib", "main"].contains(&name) {
            names.insert(name.to_string());
        }
    }
    names
}

/// Whether `text`, in module `module` (`a::b`, empty at the crate root), names its
/// sibling `sibling`: `super::sibling`, `super::{.., sibling, ..}` or
/// `crate::module::sibling`.
pub fn names_sibling(text: &str, module: &str, sibling: &str) -> bool {
    let whole = |rest: &str| rest.starts_with(sibling) && word(rest) == sibling;
    for (i, _) in text.match_indices("super::") {
        if i > 0 && is_word(text.as_bytes()[i - 1]) {
            continue;
        }
        let rest = &text[i + "super::".len()..];
        if whole(rest) {
            return true;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..matching_brace(group)];
            if contains_word(group, sibling) {
                return true;
            }
        }
    }
    if module.is_empty() {
        return false;
    }
    let full = format!("crate::{module}::");
    text.match_indices(&full)
        .any(|(i, _)| whole(&text[i + full.len()..]))
}

fn contains_word(text: &str, w: &str) -> bool {
    text.match_indices(w).any(|(i, _)| {
        let before = i == 0 || !is_word(text.as_bytes()[i - 1]);
        let end = i + w.len();
        let after = end == text.len() || !is_word(text.as_bytes()[end]);
        before && after
    })
}

/// A function with a body.
pub struct Function {
    pub name: String,
    /// Line of its `fn` (1-based).
    pub line: usize,
    /// Lines from its `fn` to its closing brace.
    pub lines: usize,
}

/// Every function with a body in `text` (stripped), nested ones included.
pub fn functions(text: &str) -> Vec<Function> {
    let b = text.as_bytes();
    let mut found = Vec::new();
    for (i, _) in text.match_indices("fn ") {
        if i > 0 && is_word(b[i - 1]) {
            continue;
        }
        let name = word(text[i + 3..].trim_start());
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` before any `;` (a declaration has none).
        let Some(open) = text[i..].find(['{', ';']).map(|n| i + n) else {
            continue;
        };
        if b[open] == b';' {
            continue;
        }
        let close = open + 1 + matching_brace(&text[open + 1..]);
        let line = text[..i].matches('\n').count() + 1;
        let last = text[..close].matches('\n').count() + 1;
        found.push(Function {
            name: name.to_string(),
            line,
            lines: last - line + 1,
        });
    }
    found
}
