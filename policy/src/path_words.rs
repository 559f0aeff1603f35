//! The paths one word names, found by meaning (POLICY.md, "Spelling does not
//! change meaning", point 9): the word itself when it is path-shaped; a
//! value after any `=` (`--out=/x`, `if=~root/…`, `PREFIX=~root/.local`,
//! `-Dk=/x`); a value attached to a short-option cluster, read both as the
//! value of its first letter (`-Isrc/x`) and of its last (`-czf/tmp/x`,
//! `-sSLo/home/…`) since only the program's table knows which; `@path`
//! where a program reads a file (`curl -d @file`, `-F k=@file`, response
//! files); colon lists (`/a:/b`); `file://` URLs. Other URLs are not paths.

use crate::substring::{find_byte, has_byte};

fn looks_like_path(s: &str) -> bool {
    has_byte(s, b'/') || s.starts_with('~') || s.starts_with('.')
}

pub(crate) fn url_scheme(s: &str) -> Option<&str> {
    let i = s.find("://")?;
    let scheme = &s[..i];
    let ok = !scheme.is_empty()
        && scheme.as_bytes()[0].is_ascii_alphabetic()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'));
    ok.then_some(scheme)
}

/// The paths found so far, each a piece of the word (none copied).
struct Found<'a>(Vec<&'a str>);

impl<'a> Found<'a> {
    fn add(&mut self, p: &'a str) {
        if !p.is_empty() && !self.0.contains(&p) {
            self.0.push(p);
        }
    }

    /// A value: itself when path-shaped, and the file of `@file`.
    fn value(&mut self, v: &'a str) {
        match v.strip_prefix('@') {
            Some(file) if !file.is_empty() && !file.starts_with(['{', '@']) => self.add(file),
            _ if looks_like_path(v) => self.add(v),
            _ => {}
        }
    }
}

/// The paths a word's text names (none for plain words and URLs): pieces
/// of it.
pub fn candidates(text: &str) -> Vec<&str> {
    match quick(text) {
        Some(one) => one.into_iter().collect(),
        None => read(text),
    }
}

/// [`candidates`] of most words, answered from one pass over their bytes:
/// a word that holds none of the bytes that make a value (`:`, `=`, `@`)
/// names itself or nothing, an option with no byte a path needs nothing.
/// `None`: the full reading ([`candidates`]) is needed.
pub fn quick(text: &str) -> Option<Option<&str>> {
    let seen = text
        .bytes()
        .fold(0, |seen, b| seen | BYTE_CLASS[usize::from(b)]);
    if seen & VALUE == 0 {
        if !text.starts_with('-') {
            // The word is a value itself and nothing else (`Found::value`).
            return Some((seen & SLASH != 0 || text.starts_with(['~', '.'])).then_some(text));
        }
        if seen == 0 {
            // An option with no byte a path or a value needs (`-la`,
            // `--release`).
            return Some(None);
        }
    }
    None
}

/// The classes of the bytes [`candidates`] looks for: [`SLASH`],
/// [`VALUE`] for `:`, `=` and `@`, [`LEAD`] for `~` and `.`; no other
/// byte has one.
static BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'/' as usize] = SLASH;
    table[b':' as usize] = VALUE;
    table[b'=' as usize] = VALUE;
    table[b'@' as usize] = VALUE;
    table[b'~' as usize] = LEAD;
    table[b'.' as usize] = LEAD;
    table
};
const SLASH: u8 = 1;
const VALUE: u8 = 2;
const LEAD: u8 = 4;

/// [`candidates`], every way of naming a path read.
fn read(text: &str) -> Vec<&str> {
    let mut out = Found(Vec::new());
    // Each byte looked for once: a URL and a colon list need a `:`, a value
    // after an option an `=`.
    let colon = has_byte(text, b':');
    let first_equals = find_byte(b'=', text.as_bytes());
    if let Some(scheme) = (colon && crate::substring::contains(text, "://"))
        .then(|| url_scheme(text))
        .flatten()
    {
        if scheme.eq_ignore_ascii_case("file") {
            let rest = &text[scheme.len() + 3..];
            // file://host/path or file:///path
            let path = match rest.find('/') {
                Some(i) => &rest[i..],
                None => "/",
            };
            out.add(path);
        }
        return out.0;
    }
    if let Some(opt) = text.strip_prefix('-') {
        // (The `=` of `text` is `opt`'s: `text` starts with `-`.)
        if !opt.starts_with('-') && first_equals.is_none() {
            short_cluster(opt, &mut out);
        }
    } else {
        out.value(text);
    }
    // After any `=`: `--out=/x`, `if=~root/x`, `-F k=@file`, `a=b=/x`.
    let mut next = first_equals;
    while let Some(at) = next {
        out.value(&text[at + 1..]);
        next = text
            .get(at + 1..)
            .and_then(|t| find_byte(b'=', t.as_bytes()))
            .map(|i| at + 1 + i);
    }
    if colon {
        for part in text.split(':').skip(1) {
            let part = part.split_once('=').map_or(part, |(_, v)| v);
            if part.starts_with('/') || part.starts_with('~') {
                out.add(part);
            }
        }
        // `/abs:…` (a colon list starting with a path).
        if let Some(first) = text.split(':').next()
            && first.starts_with('/')
        {
            out.add(first);
        }
    }
    out.0
}

/// `text` with each glob component that may match `..` written `..`
/// (`.?/x` → `../x`, `.*/.*/x` → `../../x`): the furthest a glob word may
/// climb, in the shells that match `..` by a pattern ([`crate::scope::may_match_dotdot`]).
/// `None` when no component may.
pub fn climbing(text: &str) -> Option<String> {
    if !crate::substring::contains(text, ".") {
        return None;
    }
    let mut changed = false;
    let parts: Vec<&str> = text
        .split('/')
        .map(|c| {
            if crate::scope::may_match_dotdot(c) {
                changed = true;
                ".."
            } else {
                c
            }
        })
        .collect();
    changed.then(|| parts.join("/"))
}

/// `-XYZvalue`: the value of the first letter (`-o/x`, `-Isrc/x`) and of
/// the last letter before a byte no option letter is (`-czf/tmp/x`).
fn short_cluster<'a>(opt: &'a str, out: &mut Found<'a>) {
    let b = opt.as_bytes();
    if b.len() < 2 {
        return;
    }
    // The first letter's value (none when the first letter is not ASCII).
    let Some(first) = opt.get(1..) else {
        return;
    };
    if matches!(b[1], b'/' | b'~' | b'.' | b'@') {
        out.value(first);
    } else if first.contains('/') && b[1].is_ascii_alphanumeric() {
        // `-Isrc/include`: a relative value.
        out.add(first);
    }
    // The last letter's value: the cluster is letters, then the value.
    if let Some(k) = b.iter().position(|c| !c.is_ascii_alphanumeric())
        && k > 1
        && matches!(b[k], b'/' | b'~' | b'.' | b'@')
        && let Some(v) = opt.get(k..)
    {
        out.value(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_that_may_match_dotdot_climbs() {
        for (word, want) in [
            (".?/x", Some("../x")),
            (".[.]/x", Some("../x")),
            (".*", Some("..")),
            ("src/.*/x", Some("src/../x")),
            (".*/.?/y", Some("../../y")),
            ("..?/x", None),
            (".g*/x", None),
            ("*/x", None),
            ("../x", None),
            (".?x", None),
        ] {
            assert_eq!(climbing(word).as_deref(), want, "{word}");
        }
    }

    /// The one-pass answers of [`quick`] (as [`candidates`] gives them)
    /// are what the full reading finds, on every short string of the
    /// bytes that matter.
    #[test]
    fn quick_answers_are_the_full_reading() {
        let same = |text: &str| assert_eq!(candidates(text), read(text), "{text:?}");
        crate::short_strings::each(b"-=:/~.@a", 6, same);
        [
            "-czf/tmp/x",
            "--out=/x",
            "file:///etc/x",
            "a/é",
            "é",
            "-é/x",
        ]
        .into_iter()
        .for_each(same);
    }

    #[test]
    fn finds_values_by_meaning() {
        let cases: &[(&str, &[&str])] = &[
            ("-czf/tmp/out.tgz", &["zf/tmp/out.tgz", "/tmp/out.tgz"]),
            (
                "-sSLo/home/agent/.bashrc",
                &["SLo/home/agent/.bashrc", "/home/agent/.bashrc"],
            ),
            ("-o/tmp/x", &["/tmp/x"]),
            ("-Isrc/include", &["src/include", "/include"]),
            ("-la", &[]),
            ("-d@/home/agent/.ssh/id_rsa", &["/home/agent/.ssh/id_rsa"]),
            ("@/home/agent/.ssh/id_rsa", &["/home/agent/.ssh/id_rsa"]),
            ("@file", &["file"]),
            ("k=@file", &["file"]),
            (
                "if=~root/.ssh/id_rsa",
                &["if=~root/.ssh/id_rsa", "~root/.ssh/id_rsa"],
            ),
            (
                "PREFIX=~root/.local",
                &["PREFIX=~root/.local", "~root/.local"],
            ),
            ("--define=X=/etc/passwd", &["X=/etc/passwd", "/etc/passwd"]),
            ("@{-1}", &[]),
            ("--out=build", &[]),
            ("https://example.com/a=/b", &[]),
            ("file:///etc/passwd", &["/etc/passwd"]),
        ];
        for (word, want) in cases {
            assert_eq!(candidates(word), want.to_vec(), "{word}");
        }
    }
}
