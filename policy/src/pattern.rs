//! Command patterns of rules files, and how they match a segment's argv.
//!
//! A plain pattern is a word prefix: `"npm test"` matches argv starting with
//! the words `npm`, `test` — whole words, so `ls` does not match `lsof` and
//! `npm run test` does not match `npm run test:e2e`. Claude Code's forms:
//! `Bash(npm test:*)` (and `Bash(npm test *)`) is the prefix `npm test`,
//! `Bash(npm test)` the exact command, `Bash(*)`/`Bash` every command; a `*`
//! elsewhere is a glob over the words joined by spaces.

use crate::arg::{Arg, basename};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Prefix(Vec<String>),
    Exact(Vec<String>),
    Glob(String),
    All,
}

/// A compiled command pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    /// As written in the rules file.
    pub raw: String,
    pub kind: Kind,
    /// The pattern as a modelled tool reads it (global options removed,
    /// subcommand canonical), when that differs: deny, ask and privileged
    /// matching try it too. Computed once here, not per invocation.
    pub canonical: Option<Kind>,
}

/// Whether a pattern matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    Yes,
    No,
    /// A dynamic word sits where the pattern compares: it might.
    Maybe,
}

/// How the program name is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Allow rules: as written (a path matches a basename rule only in a
    /// system directory — the caller passes the name accordingly).
    Allow,
    /// Deny, ask and privileged patterns: by basename on both sides.
    Restrict,
}

impl Pattern {
    fn new(raw: String, kind: Kind) -> Pattern {
        let canonical = match &kind {
            Kind::Prefix(w) => canonical_words(w).map(Kind::Prefix),
            Kind::Exact(w) => canonical_words(w).map(Kind::Exact),
            Kind::Glob(g) => {
                let words: Vec<String> = g.split(' ').map(str::to_string).collect();
                canonical_words(&words).map(|c| Kind::Glob(c.join(" ")))
            }
            Kind::All => None,
        }
        .filter(|c| *c != kind);
        Pattern {
            raw,
            kind,
            canonical,
        }
    }

    /// A plain word-prefix pattern (native `permissions.json`, berth.toml).
    pub fn plain(raw: &str) -> Result<Pattern, String> {
        let words = split_words(raw)?;
        if words.is_empty() {
            return Err("an empty pattern".into());
        }
        if raw.ends_with(":*") {
            return Pattern::claude_inner(raw, raw);
        }
        if words.iter().any(|w| w.contains('*')) {
            return Ok(Pattern::new(raw.to_string(), glob_kind(raw)));
        }
        Ok(Pattern::new(raw.to_string(), Kind::Prefix(words)))
    }

    /// The inside of Claude Code's `Bash(…)`.
    pub fn claude_inner(raw: &str, inner: &str) -> Result<Pattern, String> {
        let inner = inner.trim();
        if inner.is_empty() || inner == "*" {
            return Ok(Pattern::new(raw.to_string(), Kind::All));
        }
        let (body, prefix) = if let Some(b) = inner.strip_suffix(":*") {
            (b, true)
        } else if let Some(b) = inner.strip_suffix(" *") {
            (b, true)
        } else {
            (inner, false)
        };
        if body.contains('*') {
            return Ok(Pattern::new(raw.to_string(), glob_kind(inner)));
        }
        let words = split_words(body)?;
        if words.is_empty() {
            return Err(format!("an empty command in `{raw}`"));
        }
        let kind = if prefix {
            Kind::Prefix(words)
        } else {
            Kind::Exact(words)
        };
        Ok(Pattern::new(raw.to_string(), kind))
    }

    /// The pattern's first word (the program), if it has a fixed one.
    pub fn program(&self) -> Option<&str> {
        match &self.kind {
            Kind::Prefix(w) | Kind::Exact(w) => w.first().map(String::as_str),
            _ => None,
        }
    }

    /// Matches an invocation for a deny, ask or privileged pattern: as
    /// written (`kubectl --context prod` meets its global option) or as the
    /// tool reads it (`norm`: global options removed, subcommand canonical).
    pub fn matches_restrict(&self, written: &[Arg], norm: &[Arg], trailing_dynamic: bool) -> Match {
        let read = self.matches(norm, trailing_dynamic, Side::Restrict);
        // Mostly `norm` is `written` itself (nothing to normalise): the
        // same slice is equal without comparing each word.
        let same = std::ptr::eq(written, norm) || written.len() == norm.len() && written == norm;
        if read == Match::Yes || same {
            return read;
        }
        either(
            read,
            self.matches(written, trailing_dynamic, Side::Restrict),
        )
    }

    /// Matches argv. `trailing_dynamic`: more arguments follow from stdin.
    pub fn matches(&self, argv: &[Arg], trailing_dynamic: bool, side: Side) -> Match {
        let as_written = kind_matches(&self.kind, argv, trailing_dynamic, side);
        // Deny, ask and privileged patterns compare meanings: the argv they
        // see has its global options removed and its subcommand named
        // canonically, so the pattern is read the same way too (`npm rum
        // build` is `npm run build`); either reading matching is a match.
        match (side, as_written, &self.canonical) {
            (Side::Restrict, Match::No | Match::Maybe, Some(c)) => {
                either(as_written, kind_matches(c, argv, trailing_dynamic, side))
            }
            _ => as_written,
        }
    }
}

fn kind_matches(kind: &Kind, argv: &[Arg], trailing_dynamic: bool, side: Side) -> Match {
    match kind {
        Kind::All => Match::Yes,
        Kind::Prefix(words) => compare(words, argv, side, false, trailing_dynamic),
        Kind::Exact(words) => compare(words, argv, side, true, trailing_dynamic),
        Kind::Glob(g) => glob_matches(g, argv, trailing_dynamic, side),
    }
}

/// A pattern's words as a modelled tool reads them (see
/// [`crate::options::global`]); `None` when they are read as written.
fn canonical_words(words: &[String]) -> Option<Vec<String>> {
    if !crate::options::global::is_modelled(basename(words.first()?)) {
        return None;
    }
    let argv: Vec<Arg> = words.iter().map(Arg::lit).collect();
    let norm = crate::options::global::normalized(&argv)?;
    Some(norm.into_iter().map(|a| a.text).collect())
}

/// The stronger of two readings' matches.
fn either(a: Match, b: Match) -> Match {
    match (a, b) {
        (Match::Yes, _) | (_, Match::Yes) => Match::Yes,
        (Match::Maybe, _) | (_, Match::Maybe) => Match::Maybe,
        _ => Match::No,
    }
}

/// The last byte of `s` that is not a `/`.
fn last_name_byte(s: &str) -> Option<u8> {
    s.bytes().rev().find(|&b| b != b'/')
}

/// A glob over argv's words joined by spaces.
fn glob_matches(g: &str, argv: &[Arg], trailing_dynamic: bool, side: Side) -> Match {
    if argv.iter().any(|a| a.dynamic) || trailing_dynamic {
        return Match::Maybe;
    }
    let joined = argv
        .iter()
        .enumerate()
        .map(|(i, a)| {
            if i == 0 && side == Side::Restrict {
                a.basename()
            } else {
                a.text.as_str()
            }
        })
        .collect::<Vec<_>>()
        .join(" ");
    if glob_match(g.as_bytes(), joined.as_bytes()) {
        Match::Yes
    } else {
        Match::No
    }
}

fn glob_kind(text: &str) -> Kind {
    let t = text.trim();
    // `git push *` also matches `git push`.
    let t = t
        .strip_suffix(":*")
        .map(|s| format!("{s}*"))
        .unwrap_or_else(|| t.to_string());
    Kind::Glob(t)
}

fn compare(
    words: &[String],
    argv: &[Arg],
    side: Side,
    exact: bool,
    trailing_dynamic: bool,
) -> Match {
    let mut maybe = false;
    for (i, w) in words.iter().enumerate() {
        let Some(a) = argv.get(i) else {
            return if trailing_dynamic {
                Match::Maybe
            } else {
                Match::No
            };
        };
        if a.dynamic {
            maybe = true;
            continue;
        }
        let equal = if i == 0 && side == Side::Restrict {
            // A basename ends in its word's last byte before any trailing
            // `/` (a package name, its whole word, never equals one that
            // ends in `/`): most programs differ from the rule's there,
            // answered without finding either basename.
            last_name_byte(&a.text) == last_name_byte(w) && a.basename() == basename(w)
        } else {
            a.text == *w
        };
        if !equal {
            return Match::No;
        }
    }
    if exact && (argv.len() != words.len() || trailing_dynamic) {
        if argv.len() < words.len() || trailing_dynamic && argv.len() == words.len() {
            return if maybe || trailing_dynamic {
                Match::Maybe
            } else {
                Match::No
            };
        }
        return Match::No;
    }
    if maybe { Match::Maybe } else { Match::Yes }
}

/// Splits a pattern into words, honouring single and double quotes.
fn split_words(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err(format!("an unterminated quote in `{s}`")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => {
                            if let Some(x) = chars.next() {
                                cur.push(x);
                            }
                        }
                        Some(x) => cur.push(x),
                        None => return Err(format!("an unterminated quote in `{s}`")),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// `*` matches any run of bytes, `?` one byte. Iterative: linear-ish with
/// backtracking to the last star only.
pub fn glob_match(pat: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while t < text.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p] == text[t]) {
            p += 1;
            t += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some(p);
            mark = t;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            t = mark;
        } else {
            return false;
        }
    }
    while p < pat.len() && pat[p] == b'*' {
        p += 1;
    }
    p == pat.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(Arg::lit).collect()
    }

    #[test]
    fn plain_patterns_match_whole_words() {
        let cases = [
            ("ls", "ls -la", Match::Yes),
            ("ls", "lsof", Match::No),
            ("git diff", "git difftool", Match::No),
            ("npm run test", "npm run test:e2e", Match::No),
            ("npm run test", "npm run test -- --watch", Match::Yes),
            ("npm test", "npm", Match::No),
            ("git *", "git status", Match::Yes),
            ("npm test:*", "npm test --x", Match::Yes),
        ];
        for (pat, cmd, want) in cases {
            let p = Pattern::plain(pat).unwrap();
            assert_eq!(
                p.matches(&argv(cmd), false, Side::Allow),
                want,
                "{pat} vs {cmd}"
            );
        }
    }

    #[test]
    fn claude_forms() {
        let cases = [
            (
                "npm run test:*",
                "npm run test -- --watch=false",
                Match::Yes,
            ),
            ("npm run test", "npm run test -- --watch=false", Match::No),
            ("npm run test", "npm run test", Match::Yes),
            ("ls *", "ls -la", Match::Yes),
            ("ls *", "lsof", Match::No),
            ("git * main", "git merge main", Match::Yes),
            ("*", "anything at all", Match::Yes),
        ];
        for (inner, cmd, want) in cases {
            let p = Pattern::claude_inner(inner, inner).unwrap();
            assert_eq!(
                p.matches(&argv(cmd), false, Side::Allow),
                want,
                "{inner} vs {cmd}"
            );
        }
    }

    #[test]
    fn dynamic_words_might_match() {
        let p = Pattern::plain("git push").unwrap();
        let a = vec![Arg::lit("git"), Arg::dynamic(""), Arg::lit("origin")];
        assert_eq!(p.matches(&a, false, Side::Restrict), Match::Maybe);
        let b = vec![Arg::lit("git"), Arg::lit("status"), Arg::dynamic("")];
        assert_eq!(p.matches(&b, false, Side::Restrict), Match::No);
        let c = vec![Arg::lit("git")];
        assert_eq!(p.matches(&c, true, Side::Restrict), Match::Maybe);
    }

    #[test]
    fn basenames_that_differ_in_their_last_byte_differ() {
        let words = [
            "",
            "/",
            "//",
            "git",
            "/usr/bin/git",
            "git/",
            "x/git//",
            "rm",
            "/bin/rm",
            "a/b",
            "b",
            "b/",
            "é",
            "/é/",
            "@scope/pkg",
            "pkg/",
        ];
        for x in words {
            for package in [false, true] {
                let a = Arg {
                    package,
                    ..Arg::lit(x)
                };
                for y in words {
                    if last_name_byte(x) != last_name_byte(y) {
                        assert_ne!(a.basename(), basename(y), "{x:?} {package} {y:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn restrict_side_compares_basenames() {
        let p = Pattern::plain("sudo").unwrap();
        assert_eq!(
            p.matches(&argv("/usr/bin/sudo ls"), false, Side::Restrict),
            Match::Yes
        );
        assert_eq!(
            p.matches(&argv("/usr/bin/sudo ls"), false, Side::Allow),
            Match::No
        );
    }

    #[test]
    fn globs() {
        assert!(glob_match(b"a*c", b"abbbc"));
        assert!(glob_match(b"*", b""));
        assert!(!glob_match(b"a?c", b"ac"));
        assert!(glob_match(b"git push*", b"git push origin"));
    }
}
