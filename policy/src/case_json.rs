//! Reads the usual shape of a policy-case line without serde: a batch's
//! lines are nearly all one flat object of string fields and a `rules`
//! object of string lists, and serde's general machinery (a visitor per
//! field, a field-name match per key, a byte at a time through each string)
//! cost about a tenth of the whole batch.
//!
//! Why it reads what serde reads: [`read`] accepts only a subset of the
//! JSON serde accepts for [`CaseLine`] and answers `None` for anything
//! else, which the batch then hands to serde as before (so every error and
//! its message stay serde's). Accepted: one object and nothing after it but
//! JSON whitespace; keys without escapes, each at most once; for the string
//! fields a string or `null` (`None`, as serde reads `null` for an
//! `Option`); for `rules` an object of `allow`, `ask` and `deny`, each once,
//! each an array of strings (a missing list is empty, as serde's
//! `#[serde(default)]` makes it), or `null`; for `extra_roots` and
//! `protected_branches` an array of strings or `null`; any other key only
//! with a string value, skipped (serde ignores unknown fields). The line
//! holds no control character (serde refuses one in a string; whitespace
//! of that kind between tokens is rare) and strings only the escapes `\"`
//! `\\` `\/` `\b` `\f` `\n` `\r` `\t`, unescaped as serde does; a `\u`
//! escape, `autonomy`, `mounts`, a number, a boolean, or a nested value
//! where a string is read sends the line to serde. A test compares the two
//! readers on the case files and on lines changed at random.

use std::borrow::Cow;

use crate::case::{CaseLine, CaseRulesLine, Text};

/// The case on this line, when it has the usual shape; `None` sends the
/// line to serde.
pub fn read(text: &str) -> Option<CaseLine<'_>> {
    // A control character is whitespace between tokens or an error in a
    // string: either way, rare enough to leave to serde.
    if text.bytes().fold(false, |any, b| any | (b < 0x20)) {
        return None;
    }
    let mut r = Reader {
        s: text.as_bytes(),
        text,
        i: 0,
    };
    let case = r.case()?;
    r.ws();
    (r.i == r.s.len()).then_some(case)
}

struct Reader<'a> {
    s: &'a [u8],
    text: &'a str,
    i: usize,
}

/// The fields of [`CaseLine`] this reader fills, as bits of a seen-set.
#[derive(Clone, Copy)]
enum Field {
    Id,
    Action,
    Command,
    Path,
    Branch,
    Rules,
    Mode,
    Frame,
    ProjectRoot,
    Cwd,
    Home,
    ExtraRoots,
    ProtectedBranches,
    Expect,
}

impl Field {
    fn of(key: &str) -> Option<Field> {
        Some(match key {
            "id" => Field::Id,
            "action" => Field::Action,
            "command" => Field::Command,
            "path" => Field::Path,
            "branch" => Field::Branch,
            "rules" => Field::Rules,
            "mode" => Field::Mode,
            "frame" => Field::Frame,
            "project_root" => Field::ProjectRoot,
            "cwd" => Field::Cwd,
            "home" => Field::Home,
            "extra_roots" => Field::ExtraRoots,
            "protected_branches" => Field::ProtectedBranches,
            "expect" => Field::Expect,
            _ => return None,
        })
    }
}

impl<'a> Reader<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    /// The next non-whitespace byte, consumed when it is `b`.
    fn eat(&mut self, b: u8) -> bool {
        self.ws();
        if self.s.get(self.i) == Some(&b) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// `null`, consumed.
    fn null(&mut self) -> bool {
        self.ws();
        if self.s.get(self.i..self.i + 4) == Some(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    /// The members of an object, `{` already read: calls `member` with each
    /// key (none with an escape) and the reader before its value.
    fn members(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            if !self.eat(b'"') {
                return None;
            }
            let key = match self.string_body()? {
                Cow::Borrowed(k) => k,
                Cow::Owned(_) => return None,
            };
            if !self.eat(b':') {
                return None;
            }
            member(self, key)?;
            if self.eat(b',') {
                continue;
            }
            return self.eat(b'}').then_some(());
        }
    }

    fn case(&mut self) -> Option<CaseLine<'a>> {
        if !self.eat(b'{') {
            return None;
        }
        let mut case = CaseLine::default();
        let mut seen = 0u32;
        self.members(|r, key| {
            let Some(field) = Field::of(key) else {
                // An unknown field: skipped when its value is a string.
                return r.string().map(drop);
            };
            let bit = 1u32 << field as u32;
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match field {
                Field::Id => case.id = r.opt_string()?,
                Field::Action => case.action = r.opt_string()?,
                Field::Command => case.command = r.opt_string()?,
                Field::Path => case.path = r.opt_string()?,
                Field::Branch => case.branch = r.opt_string()?,
                Field::Rules => case.rules = r.opt_rules()?,
                Field::Mode => case.mode = r.opt_string()?,
                Field::Frame => case.frame = r.opt_string()?,
                Field::ProjectRoot => case.project_root = r.opt_string()?,
                Field::Cwd => case.cwd = r.opt_string()?,
                Field::Home => case.home = r.opt_string()?,
                Field::ExtraRoots => case.extra_roots = r.opt_list()?,
                Field::ProtectedBranches => case.protected_branches = r.opt_list()?,
                Field::Expect => case.expect = r.opt_string()?,
            }
            Some(())
        })?;
        Some(case)
    }

    /// A string or `null`; `None` for anything else.
    fn opt_string(&mut self) -> Option<Option<Text<'a>>> {
        if self.null() {
            return Some(None);
        }
        self.string().map(Some)
    }

    fn opt_list(&mut self) -> Option<Option<Vec<Text<'a>>>> {
        if self.null() {
            return Some(None);
        }
        self.list().map(Some)
    }

    fn opt_rules(&mut self) -> Option<Option<CaseRulesLine<'a>>> {
        if self.null() {
            return Some(None);
        }
        if !self.eat(b'{') {
            return None;
        }
        let mut rules = CaseRulesLine::default();
        let mut seen = 0u8;
        self.members(|r, key| {
            let (bit, list) = match key {
                "allow" => (1, &mut rules.allow),
                "ask" => (2, &mut rules.ask),
                "deny" => (4, &mut rules.deny),
                // serde skips an unknown key whatever its value; only a
                // string is skipped here.
                _ => return r.string().map(drop),
            };
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            *list = r.list()?;
            Some(())
        })?;
        Some(Some(rules))
    }

    /// An array of strings.
    fn list(&mut self) -> Option<Vec<Text<'a>>> {
        if !self.eat(b'[') {
            return None;
        }
        if self.eat(b']') {
            return Some(Vec::new());
        }
        // Room for the rules of most lists at once.
        let mut list = Vec::with_capacity(16);
        loop {
            list.push(self.string()?);
            if self.eat(b',') {
                continue;
            }
            return self.eat(b']').then_some(list);
        }
    }

    /// A string value.
    fn string(&mut self) -> Option<Text<'a>> {
        if !self.eat(b'"') {
            return None;
        }
        self.string_body().map(Text)
    }

    /// The rest of a string after its opening quote: borrowed when it has
    /// no escape. The line holds no control character ([`read`]).
    fn string_body(&mut self) -> Option<Cow<'a, str>> {
        let start = self.i;
        let end = start + quote_or_backslash(self.s.get(start..)?)?;
        if self.s.get(end) == Some(&b'"') {
            self.i = end + 1;
            return self.text.get(start..end).map(Cow::Borrowed);
        }
        let (owned, after) = unescaped(self.s, start, end)?;
        self.i = after;
        Some(Cow::Owned(owned))
    }
}

/// The string that starts at `start` in `s`, `first` the index of its
/// first backslash: unescaped, with the index after its closing quote.
///
/// A command's escapes (`\"`, `\n`) come every few dozen bytes, so the
/// plain runs between them are copied eight bytes a step, each word
/// written whole and the bytes past the run's end taken back (the length
/// set back), not searched for and then copied by `memcpy` a run. Every
/// escape it reads stands for one ASCII byte, and the rest is copied
/// from between ASCII bytes of a `str`: the result is UTF-8, which
/// `String::from_utf8` checks rather than assumes.
fn unescaped(s: &[u8], start: usize, first: usize) -> Option<(String, usize)> {
    // Whole words may overrun the string by seven bytes: room for them.
    let mut out = Vec::with_capacity(s.len().saturating_sub(start) + 8);
    out.extend_from_slice(s.get(start..first)?);
    let mut i = first;
    // `s[i]` is a quote or a backslash.
    while *s.get(i)? == b'\\' {
        out.push(match *s.get(i + 1)? {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0c,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            _ => return None,
        });
        i += 2;
        // The plain run after the escape, to the next quote or backslash.
        loop {
            let Some(word) = s.get(i..i + 8).and_then(|w| <[u8; 8]>::try_from(w).ok()) else {
                let run = s.get(i..)?.iter().position(|&c| c == b'"' || c == b'\\')?;
                out.extend_from_slice(s.get(i..i + run)?);
                i += run;
                break;
            };
            out.extend_from_slice(&word);
            let found = quotes_or_backslashes(u64::from_le_bytes(word));
            if found != 0 {
                let run = found.trailing_zeros() as usize / 8;
                out.truncate(out.len() - (8 - run));
                i += run;
                break;
            }
            i += 8;
        }
    }
    let text = String::from_utf8(out).ok()?;
    Some((text, i + 1))
}

/// The high bit of each byte of `x` that is a `"` or a `\\`, and maybe of
/// bytes after the first such one (a borrow only sets bits above a zero
/// byte): the lowest bit set is the first such byte's.
fn quotes_or_backslashes(x: u64) -> u64 {
    use crate::substring::bytes_equal_to;
    bytes_equal_to(x, b'"') | bytes_equal_to(x, b'\\')
}

/// The index of the first `"` or `\\` in `s`: `memchr2`'s answer. Most
/// strings of a case (its keys, a rule, a path) end within a few words, and
/// `memchr2` costs more to set up than they cost to read eight bytes at a
/// time; the rest of a longer one (a command) goes to `memchr2`.
fn quote_or_backslash(s: &[u8]) -> Option<usize> {
    /// Words read before `memchr2` takes over.
    const WORDS: usize = 8;
    let mut at = 0;
    for chunk in s.chunks_exact(8).take(WORDS) {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let found = quotes_or_backslashes(u64::from_le_bytes(word));
        if found != 0 {
            return Some(at + found.trailing_zeros() as usize / 8);
        }
        at += 8;
    }
    let rest = s.get(at..)?;
    if at < WORDS * 8 {
        // Fewer than eight bytes left, none found before them.
        return rest
            .iter()
            .position(|&c| c == b'"' || c == b'\\')
            .map(|i| at + i);
    }
    memchr::memchr2(b'"', b'\\', rest).map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What serde reads of a line, in the form the comparison uses.
    fn serde_read(line: &str) -> Option<String> {
        serde_json::from_str::<CaseLine<'_>>(line)
            .ok()
            .map(|c| format!("{c:?}"))
    }

    /// Whatever the fast reader accepts, serde reads the same.
    fn agrees(line: &str) {
        if let Some(fast) = read(line) {
            assert_eq!(
                Some(format!("{fast:?}")),
                serde_read(line),
                "the readers differ on {line:?}"
            );
        }
    }

    fn case_lines() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases");
        let mut lines = Vec::new();
        for entry in std::fs::read_dir(dir).expect("cases dir") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "jsonl") {
                let text = std::fs::read_to_string(&path).expect("read cases");
                lines.extend(text.lines().map(str::to_string));
            }
        }
        lines
    }

    /// [`quote_or_backslash`] finds what `memchr2` finds, wherever the
    /// byte stands and whatever comes after it.
    #[test]
    fn quotes_and_backslashes_are_found_as_memchr2_finds_them() {
        for len in 0..80 {
            for at in 0..=len {
                for found in [b'"', b'\\'] {
                    // Bytes near the two, and non-ASCII ones, around it.
                    let mut s: Vec<u8> =
                        (0..len).map(|i| [b'!', b'#', b'[', 0xe2][i % 4]).collect();
                    if at < len {
                        s[at] = found;
                        if at + 1 < len {
                            s[at + 1] = b'"';
                        }
                    }
                    assert_eq!(
                        quote_or_backslash(&s),
                        memchr::memchr2(b'"', b'\\', &s),
                        "{s:?}"
                    );
                }
            }
        }
    }

    /// Escapes at every place against a word's bytes, between plain runs
    /// of every length up to three words (non-ASCII bytes among them), the
    /// string last on its line or not: read, and read as serde reads them.
    #[test]
    fn escapes_anywhere_read_as_serde_reads_them() {
        const ESCAPES: [&str; 8] = [r#"\""#, r"\\", r"\/", r"\b", r"\f", r"\n", r"\r", r"\t"];
        let run = |len: usize| -> String { "ab\u{e9}c/d x".chars().cycle().take(len).collect() };
        for before in 0..26 {
            for between in 0..26 {
                for (k, esc) in ESCAPES.iter().enumerate() {
                    let other = ESCAPES[(k + 3) % ESCAPES.len()];
                    let body = format!("{}{esc}{}{other}{}", run(before), run(between), run(k));
                    for line in [
                        format!(r#"{{"command":"{body}"}}"#),
                        format!(r#"{{"command":"{body}","id":"x"}}"#),
                    ] {
                        assert!(read(&line).is_some(), "{line}");
                        agrees(&line);
                    }
                }
            }
        }
    }

    #[test]
    fn the_case_files_read_alike() {
        let lines = case_lines();
        let mut fast = 0;
        for line in &lines {
            agrees(line);
            fast += usize::from(read(line).is_some());
        }
        // Nearly every line is of the usual shape.
        assert!(fast * 10 > lines.len() * 9, "{fast} of {}", lines.len());
    }

    #[test]
    fn edge_lines_read_alike_or_go_to_serde() {
        let lines = [
            r#"{"command":"ls"}"#,
            r#" { "command" : "ls" , "id" : null } "#,
            "{\"command\":\"ls\"}\t\r\n",
            r#"{"command":"ls","command":"rm"}"#,
            r#"{"command":"a\"b\\c\/d\b\f\n\r\t"}"#,
            r#"{"command":"\u0041"}"#,
            r#"{"command":"\x"}"#,
            "{\"command\":\"a\tb\"}",
            r#"{"command":"ls",}"#,
            r#"{"command":"ls"} x"#,
            r#"{"command":"ls"}{}"#,
            r#"{"command":1}"#,
            r#"{"command":["ls"]}"#,
            r#"{"comm\u0061nd":"ls"}"#,
            r#"{"why":"x","tool":"Bash","command":"ls"}"#,
            r#"{"why":1,"command":"ls"}"#,
            r#"{"rules":{"allow":["ls"],"ask":[],"deny":["rm -rf"]},"command":"ls"}"#,
            r#"{"rules":{"allow":["ls"],"allow":[]},"command":"ls"}"#,
            r#"{"rules":{"allow":null},"command":"ls"}"#,
            r#"{"rules":{"other":"x"},"command":"ls"}"#,
            r#"{"rules":null,"command":"ls"}"#,
            r#"{"rules":{},"command":"ls"}"#,
            r#"{"rules":{"allow":["ls",]},"command":"ls"}"#,
            r#"{"extra_roots":["/a","/b"],"protected_branches":[],"command":"ls"}"#,
            r#"{"extra_roots":null,"protected_branches":null,"command":"ls"}"#,
            r#"{"autonomy":{"terminal":"deny"},"command":"ls"}"#,
            r#"{"mounts":[],"command":"ls"}"#,
            r#"{"command":"ünïcödé 日本 \u2028"}"#,
            r#"{"command":"ends in backslash\\"}"#,
            r#"{"command":"0123456789abcdef\"0123456789abcdef"}"#,
            r#"{}"#,
            r#"{"#,
            r#"{"command""#,
            r#"{"command":nul}"#,
            r#"{"command":nullx}"#,
            r#"[]"#,
            "",
        ];
        for line in lines {
            agrees(line);
        }
        // The usual shapes are read here, not handed on.
        for line in [lines[0], lines[1], lines[4], lines[14], lines[16]] {
            assert!(read(line).is_some(), "{line}");
        }
    }

    /// Lines of the case files with a byte deleted, doubled or replaced by
    /// a JSON-significant one, at positions spread over the line.
    #[test]
    fn changed_lines_read_alike_or_go_to_serde() {
        const BYTES: &[u8] = b"\"\\{}[]:, \tnu0\x01/";
        let lines = case_lines();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for line in lines.iter().take(400) {
            let bytes = line.as_bytes();
            for _ in 0..12 {
                let at = (next() % bytes.len().max(1) as u64) as usize;
                let b = BYTES[(next() % BYTES.len() as u64) as usize];
                let mut changed = bytes.to_vec();
                match next() % 3 {
                    0 if at < changed.len() => {
                        changed.remove(at);
                    }
                    1 => changed.insert(at.min(changed.len()), b),
                    _ if at < changed.len() => changed[at] = b,
                    _ => {}
                }
                if let Ok(text) = std::str::from_utf8(&changed) {
                    agrees(text);
                }
            }
        }
    }
}
