//! Claude Code's settings files as the hook reads them: with Claude Code's
//! habits, not berth's.
//!
//! berth's own `permissions.json` is all or nothing (POLICY.md: a broken file
//! is an error). Claude Code reads its settings more leniently, and a hook
//! that reads them stricter than Claude Code would make one odd entry
//! (`Bash(echo don't)`) turn every call into a prompt. So, before the
//! entries reach the policy's rule parser:
//!
//! - an allow entry berth cannot read is skipped with a warning on stderr
//!   (skipping an allow only ever asks more); an unreadable deny or ask entry
//!   still fails closed (the file is an error, naming its line and column);
//! - an allow entry with a glob in the tool-name position (`*`, `B*`,
//!   `mcp__*`) is skipped: Claude Code's permissions documentation, "An
//!   unanchored allow glob such as `"*"`, `"B*"`, or `"mcp__*"` is skipped
//!   with a warning and doesn't auto-approve anything";
//! - a deny or ask entry with such a glob covers every tool whose full name
//!   it matches ("`"*"` matches every tool"): it becomes the rules for the
//!   tools berth governs (`Bash`, `Read`, `Edit`);
//! - an allow path rule for `Write`, `MultiEdit` or `NotebookEdit` is skipped:
//!   "Claude Code checks file permissions against `Edit(path)` and
//!   `Read(path)` rules only. If you write a path rule for `Write`,
//!   `NotebookEdit`, `Glob`, or the legacy `MultiEdit` tool instead, Claude
//!   Code accepts the rule but never consults it". A deny or ask one is kept:
//!   it only ever holds more than Claude Code would.
//!
//! Skipped entries are blanked in the text (same length), so the policy's
//! parser still names every other entry at its own line and column.

use std::path::Path;

use berth_policy::RuleSet;
use berth_policy::decision::SourceLoc;
use serde_json::Value;

/// The tools berth governs, by the name a rule gives them.
const GOVERNED_TOOLS: &[&str] = &["Bash", "Read", "Edit"];

/// The path tools whose path rules Claude Code never consults.
const UNCONSULTED_PATH_TOOLS: &[&str] = &["Write", "MultiEdit", "NotebookEdit"];

/// The rules of one Claude Code settings file and the warnings about
/// entries skipped.
pub(super) fn load(path: &Path) -> Result<(RuleSet, Vec<String>), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let file = path.display().to_string();
    // Malformed JSON: the policy's parser names the line and column.
    if serde_json::from_str::<Value>(&text).is_err() {
        return RuleSet::from_json(&text, &file)
            .map(|set| (set, Vec::new()))
            .map_err(|e| e.to_string());
    }
    let entries = permission_entries(&text);
    let mut blanked = text.clone().into_bytes();
    let mut extra = RuleSet::default();
    let mut warnings = Vec::new();
    for entry in &entries {
        let loc = SourceLoc {
            file: file.clone().into(),
            line: entry.line,
            column: entry.column,
        };
        match classify(entry) {
            Keep::AsWritten => continue,
            Keep::Ignore => {}
            Keep::Skip(why) => warnings.push(format!("{loc}: `{}` {why}: skipped", entry.value)),
            Keep::Expanded(rules) => {
                for rule in rules {
                    let lists: [&[String]; 3] = match entry.list {
                        "ask" => [&[], std::slice::from_ref(&rule), &[]],
                        _ => [&[], &[], std::slice::from_ref(&rule)],
                    };
                    let mut set = RuleSet::from_lists(lists[0], lists[1], lists[2])
                        .map_err(|e| format!("{loc}: {e}"))?;
                    for r in &mut set.commands {
                        r.source = Some(loc.clone());
                    }
                    for r in &mut set.paths {
                        r.source = Some(loc.clone());
                    }
                    extra.extend(set);
                }
            }
        }
        blank(&mut blanked, entry.start, entry.end);
    }
    let blanked =
        String::from_utf8(blanked).map_err(|e| format!("{file}: blanking skipped entries: {e}"))?;
    let mut set = RuleSet::from_json(&blanked, &file).map_err(|e| e.to_string())?;
    set.extend(extra);
    Ok((set, warnings))
}

/// What becomes of one entry.
enum Keep {
    AsWritten,
    /// Left out quietly: a rule for tools berth does not run.
    Ignore,
    /// Skipped, with the reason.
    Skip(String),
    /// Replaced by these entries of the same list.
    Expanded(Vec<String>),
}

fn classify(entry: &Entry) -> Keep {
    let e = entry.value.trim();
    let (name, inner) = match e.split_once('(') {
        Some((name, rest)) => (name, Some(rest.strip_suffix(')').unwrap_or(rest))),
        None => (e, None),
    };
    let allow = entry.list == "allow";
    if name.contains(['*', '?']) {
        if allow && anchored_mcp_glob(name) {
            // A glob over one MCP server's tools: valid in Claude Code, and
            // for tools berth does not run.
            return Keep::Ignore;
        }
        if allow {
            return Keep::Skip(
                "is an allow glob in the tool-name position, which Claude Code skips and which approves nothing"
                    .into(),
            );
        }
        return Keep::Expanded(
            GOVERNED_TOOLS
                .iter()
                .filter(|tool| name_glob(name, tool))
                .map(|tool| match inner {
                    Some(i) => format!("{tool}({i})"),
                    None => (*tool).to_string(),
                })
                .collect(),
        );
    }
    if allow && inner.is_some() && UNCONSULTED_PATH_TOOLS.contains(&name) {
        return Keep::Skip(format!(
            "is a path rule for {name}, which Claude Code accepts but never consults (write `Edit(…)`)"
        ));
    }
    if allow && let Err(e) = RuleSet::from_lists(std::slice::from_ref(&entry.value), &[], &[]) {
        // The error names a placeholder location; the warning names the file's.
        let why = e.to_string();
        let why = why.split_once(": ").map_or(why.as_str(), |(_, m)| m);
        return Keep::Skip(format!("is an allow entry berth cannot read ({why})"));
    }
    Keep::AsWritten
}

/// `mcp__<server>__<glob>` with a glob-free server: the one form of allow
/// glob Claude Code accepts ("Allow rules accept tool-name globs only after a
/// literal `mcp__<server>__` prefix").
fn anchored_mcp_glob(name: &str) -> bool {
    name.strip_prefix("mcp__")
        .and_then(|rest| rest.split_once("__"))
        .is_some_and(|(server, _)| !server.is_empty() && !server.contains(['*', '?']))
}

/// A glob over a whole tool name: `*` any run of characters, `?` one.
fn name_glob(glob: &str, name: &str) -> bool {
    let g: Vec<char> = glob.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // Classic two-pointer match with backtracking to the last `*`.
    let (mut gi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        match g.get(gi) {
            Some('*') => {
                star = Some((gi, ni));
                gi += 1;
            }
            Some(c) if *c == '?' || *c == n[ni] => {
                gi += 1;
                ni += 1;
            }
            _ => match star {
                Some((sg, sn)) => {
                    gi = sg + 1;
                    ni = sn + 1;
                    star = Some((sg, sn + 1));
                }
                None => return false,
            },
        }
    }
    g[gi..].iter().all(|c| *c == '*')
}

/// Replaces an array element (byte range `start..end`) and the comma that
/// separates it from its neighbours with spaces: the positions of every
/// other character stay.
fn blank(text: &mut [u8], start: usize, end: usize) {
    let space = |b: &mut u8| {
        if !b.is_ascii_whitespace() {
            *b = b' ';
        }
    };
    text[start..end].iter_mut().for_each(space);
    // The comma after it, else the one before it (it was the last element).
    let after = text[end..]
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .map(|i| end + i);
    if let Some(i) = after
        && text[i] == b','
    {
        text[i] = b' ';
        return;
    }
    let before = text[..start].iter().rposition(|b| !b.is_ascii_whitespace());
    if let Some(i) = before
        && text[i] == b','
    {
        text[i] = b' ';
    }
}

/// One string of `permissions.allow`, `.ask` or `.deny`.
#[derive(Debug)]
struct Entry {
    list: &'static str,
    value: String,
    /// Byte range of the literal, quotes included.
    start: usize,
    end: usize,
    /// Where the literal starts, both from 1 (columns count characters).
    line: usize,
    column: usize,
}

/// Every string entry of the permission lists, in order. The text is JSON
/// (checked by the caller), so the walk meets only well-formed values.
fn permission_entries(text: &str) -> Vec<Entry> {
    let mut walk = Walk {
        text,
        bytes: text.as_bytes(),
        at: 0,
        out: Vec::new(),
    };
    walk.value(Place::Top);
    walk.out
}

#[derive(Clone, Copy)]
enum Place {
    Top,
    Permissions,
    List(&'static str),
    Other,
}

struct Walk<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
    out: Vec<Entry>,
}

impl Walk<'_> {
    fn ws(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|b| b.is_ascii_whitespace())
        {
            self.at += 1;
        }
    }

    fn value(&mut self, place: Place) {
        self.ws();
        match self.bytes.get(self.at) {
            Some(b'{') => self.object(place),
            Some(b'[') => self.array(place),
            Some(b'"') => {
                self.string();
            }
            Some(_) => {
                while self
                    .bytes
                    .get(self.at)
                    .is_some_and(|b| !matches!(b, b',' | b']' | b'}') && !b.is_ascii_whitespace())
                {
                    self.at += 1;
                }
            }
            None => {}
        }
    }

    fn object(&mut self, place: Place) {
        self.at += 1;
        loop {
            self.ws();
            match self.bytes.get(self.at) {
                Some(b'"') => {}
                Some(b',') => {
                    self.at += 1;
                    continue;
                }
                _ => {
                    self.at += 1;
                    return;
                }
            }
            let key = self.string();
            self.ws();
            self.at += 1; // ':'
            let inner = match (place, key.as_str()) {
                (Place::Top, "permissions") => Place::Permissions,
                (Place::Permissions, "allow") => Place::List("allow"),
                (Place::Permissions, "ask") => Place::List("ask"),
                (Place::Permissions, "deny") => Place::List("deny"),
                _ => Place::Other,
            };
            self.value(inner);
        }
    }

    fn array(&mut self, place: Place) {
        self.at += 1;
        loop {
            self.ws();
            match self.bytes.get(self.at) {
                Some(b',') => {
                    self.at += 1;
                    continue;
                }
                Some(b']') | None => {
                    self.at += 1;
                    return;
                }
                Some(b'"') => {
                    if let Place::List(list) = place {
                        let start = self.at;
                        let value = self.string();
                        let before = &self.text[..start];
                        let line = before.matches('\n').count() + 1;
                        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
                        self.out.push(Entry {
                            list,
                            value,
                            start,
                            end: self.at,
                            line,
                            column: self.text[line_start..start].chars().count() + 1,
                        });
                    } else {
                        self.string();
                    }
                }
                Some(_) => self.value(Place::Other),
            }
        }
    }

    /// A string literal at `at` (its opening quote), decoded; `at` moves past
    /// the closing quote.
    fn string(&mut self) -> String {
        let start = self.at;
        self.at += 1;
        while let Some(b) = self.bytes.get(self.at) {
            match b {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    break;
                }
                _ => self.at += 1,
            }
        }
        let literal = self.text.get(start..self.at).unwrap_or_default();
        serde_json::from_str(literal).unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_a_server_anchored_mcp_glob_is_a_valid_allow_glob() {
        let cases = [
            ("mcp__github__get_*", true),
            ("mcp__puppeteer__*", true),
            ("mcp__*", false),
            ("mcp__*__x", false),
            ("mcp____*", false),
            ("*", false),
            ("B*", false),
        ];
        for (name, want) in cases {
            assert_eq!(anchored_mcp_glob(name), want, "{name}");
        }
    }

    #[test]
    fn tool_name_globs_match_whole_names() {
        let cases = [
            ("*", "Bash", true),
            ("B*", "Bash", true),
            ("B*", "Read", false),
            ("*d*", "Read", true),
            ("mcp__*", "Bash", false),
            ("?ead", "Read", true),
            ("Ba", "Bash", false),
        ];
        for (glob, name, want) in cases {
            assert_eq!(name_glob(glob, name), want, "{glob} / {name}");
        }
    }

    #[test]
    fn entries_are_found_at_their_line_and_column_and_blanked_in_place() {
        let text = "{\"hooks\": {\"allow\": [\"x\"]},\n \"permissions\": {\"allow\": [\"a\", \"b\\\"c\"],\n  \"deny\": [\"d\"]}}";
        let entries = permission_entries(text);
        let got: Vec<_> = entries
            .iter()
            .map(|e| (e.list, e.value.as_str(), e.line, e.column))
            .collect();
        assert_eq!(
            got,
            vec![
                ("allow", "a", 2, 28),
                ("allow", "b\"c", 2, 33),
                ("deny", "d", 3, 12)
            ]
        );
        for (which, want) in [(0, "[     \"b\\\"c\"]"), (1, "[\"a\"        ]")] {
            let mut bytes = text.as_bytes().to_vec();
            blank(&mut bytes, entries[which].start, entries[which].end);
            let blanked = String::from_utf8(bytes).unwrap();
            assert!(blanked.contains(want), "{blanked}");
            assert_eq!(blanked.len(), text.len());
            assert!(serde_json::from_str::<Value>(&blanked).is_ok(), "{blanked}");
        }
    }
}
