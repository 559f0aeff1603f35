//! Rules files: berth's `permissions.json` and Claude Code's `settings.json`.
//!
//! `permissions.json` is `{"allow": [...], "ask": [...], "deny": [...]}` of
//! command patterns (plain word prefixes, or Claude Code's `Bash(…)` forms).
//! A Claude Code `settings.json` is read as-is: `permissions.allow|ask|deny`,
//! where `Bash(…)` entries are command rules, `Read(…)` and `Edit(…)` path
//! rules for file actions, and other tools are ignored with a warning (berth
//! does not run them).
//!
//! Claude Code checks file permissions against `Edit(path)` and `Read(path)`
//! rules only: it accepts a path rule for `Write`, `MultiEdit` or
//! `NotebookEdit` but never consults it. Write `Edit(…)`. This parser still
//! reads such a rule as a write rule (a deny or ask one only holds more than
//! Claude Code would); the Claude Code hook skips an allow one, with a
//! warning, so there it approves nothing, as in Claude Code.
//!
//! A file that does not parse, or an entry berth cannot read, is an error
//! naming the file, line and column: nothing is decided from a broken file —
//! a half-read deny list would silently allow what the user meant to forbid.

use std::path::Path;

use crate::decision::{RuleList, SourceLoc};
use crate::json_spans::{self, Json, Pos, Spanned};
use crate::network::HostRule;
use crate::pattern::Pattern;

/// A command rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRule {
    pub list: RuleList,
    /// Shared: a batch of cases compiles each pattern once
    /// ([`PatternCache`]) and every set that names it holds the one copy.
    pub pattern: std::sync::Arc<Pattern>,
    pub source: Option<SourceLoc>,
}

/// The file tools of Claude Code's path rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathTool {
    /// `Read(…)`: file reads (and paths a command touches).
    Read,
    /// `Edit(…)`, `Write(…)`, `MultiEdit(…)`: file writes (and redirections).
    Write,
}

/// A path rule: a gitignore-style pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRule {
    pub list: RuleList,
    pub tool: PathTool,
    /// The pattern inside the parentheses (`./.env`, `//etc/**`, `~/x`, `src/**`).
    pub glob: String,
    pub raw: String,
    pub source: Option<SourceLoc>,
}

/// Loaded rules: command rules, path rules, and warnings about entries
/// ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuleSet {
    pub commands: Vec<CommandRule>,
    pub paths: Vec<PathRule>,
    /// Host rules for `network_connect`: `WebFetch(domain:…)` entries, and
    /// the `[sandbox.network]` lists the engine adds with [`RuleSet::add_host`].
    pub network: Vec<HostRule>,
    pub warnings: Vec<String>,
}

/// A rules file berth cannot use.
#[derive(Debug, thiserror::Error)]
pub enum RulesError {
    #[error("cannot read rules file {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{loc}: {message}")]
    Invalid { loc: SourceLoc, message: String },
}

impl RuleSet {
    /// Reads a rules file (`permissions.json` or a Claude Code `settings.json`).
    pub fn load(path: &Path) -> Result<RuleSet, RulesError> {
        let text = std::fs::read_to_string(path).map_err(|source| RulesError::Io {
            path: path.display().to_string(),
            source,
        })?;
        RuleSet::from_json(&text, &path.display().to_string())
    }

    /// Parses rules from JSON text; `file` names it in errors and `explain`.
    pub fn from_json(text: &str, file: &str) -> Result<RuleSet, RulesError> {
        let loc = |pos: Pos| SourceLoc {
            file: file.to_string().into(),
            line: pos.line,
            column: pos.column,
        };
        let doc = json_spans::parse(text).map_err(|(pos, message)| RulesError::Invalid {
            loc: loc(pos),
            message,
        })?;
        let Json::Object(fields) = &doc.value else {
            return Err(RulesError::Invalid {
                loc: loc(doc.pos),
                message: format!(
                    "expected an object with `allow`, `ask` and `deny` lists, found {}",
                    doc.value.kind()
                ),
            });
        };
        let mut set = RuleSet::default();
        let claude = fields.iter().find(|(k, _)| k == "permissions");
        if let Some((_, perms)) = claude {
            // Claude Code settings: other top-level keys are its own business.
            let Json::Object(pf) = &perms.value else {
                return Err(RulesError::Invalid {
                    loc: loc(perms.pos),
                    message: format!(
                        "`permissions` must be an object, found {}",
                        perms.value.kind()
                    ),
                });
            };
            for (k, v) in pf {
                match k.as_str() {
                    "allow" | "ask" | "deny" => set.read_list(k, v, &loc)?,
                    other => set.warnings.push(format!(
                        "{}: `permissions.{other}` is not used by berth",
                        loc(v.pos)
                    )),
                }
            }
            return Ok(set);
        }
        for (k, v) in fields {
            match k.as_str() {
                "allow" | "ask" | "deny" => set.read_list(k, v, &loc)?,
                k if k.starts_with("//")
                    || k.starts_with('$')
                    || k.starts_with('_')
                    || k == "comment" => {}
                other => {
                    return Err(RulesError::Invalid {
                        loc: loc(v.pos),
                        message: format!(
                            "unknown key `{other}`: a rules file has `allow`, `ask` and `deny`"
                        ),
                    });
                }
            }
        }
        Ok(set)
    }

    /// Rules given as lists (no file: the policy-case format).
    pub fn from_lists(
        allow: &[String],
        ask: &[String],
        deny: &[String],
    ) -> Result<RuleSet, RulesError> {
        RuleSet::from_lists_cached(allow, ask, deny, &mut PatternCache::default())
    }

    /// [`RuleSet::from_lists`], its plain patterns compiled through
    /// `patterns`: a batch of cases builds many sets of the same few rules.
    pub fn from_lists_cached<S: AsRef<str>>(
        allow: &[S],
        ask: &[S],
        deny: &[S],
        patterns: &mut PatternCache,
    ) -> Result<RuleSet, RulesError> {
        let mut set = RuleSet::default();
        // Nearly every entry is a command rule: room for all at once.
        set.commands
            .reserve_exact(allow.len() + ask.len() + deny.len());
        for (list, file, entries) in [
            (RuleList::Allow, "<allow>", allow),
            (RuleList::Ask, "<ask>", ask),
            (RuleList::Deny, "<deny>", deny),
        ] {
            for (i, e) in entries.iter().enumerate() {
                let loc = SourceLoc {
                    file: file.into(),
                    line: i + 1,
                    column: 1,
                };
                set.add_entry(list, e.as_ref(), Some(loc), patterns)?;
            }
        }
        Ok(set)
    }

    /// Adds every rule and warning of `other` (a project's rules plus its
    /// Claude Code settings).
    pub fn extend(&mut self, other: RuleSet) {
        self.commands.extend(other.commands);
        self.paths.extend(other.paths);
        self.network.extend(other.network);
        self.warnings.extend(other.warnings);
    }

    pub fn is_empty(&self) -> bool {
        self.commands.is_empty() && self.paths.is_empty() && self.network.is_empty()
    }

    /// Adds a host rule (`registry.npmjs.org`, `*.pypi.org`, an address)
    /// written outside a rules file, e.g. in berth.toml's `[sandbox.network]`.
    pub fn add_host(
        &mut self,
        list: RuleList,
        host: &str,
        source: Option<SourceLoc>,
    ) -> Result<(), RulesError> {
        let rule = HostRule::new(list, host, host, source.clone()).map_err(|message| {
            RulesError::Invalid {
                loc: source.unwrap_or(SourceLoc {
                    file: "<network>".into(),
                    line: 0,
                    column: 0,
                }),
                message,
            }
        })?;
        self.network.push(rule);
        Ok(())
    }

    fn read_list(
        &mut self,
        key: &str,
        v: &Spanned,
        loc: &dyn Fn(Pos) -> SourceLoc,
    ) -> Result<(), RulesError> {
        let list = match key {
            "allow" => RuleList::Allow,
            "ask" => RuleList::Ask,
            _ => RuleList::Deny,
        };
        let Json::Array(items) = &v.value else {
            return Err(RulesError::Invalid {
                loc: loc(v.pos),
                message: format!(
                    "`{key}` must be a list of strings, found {}",
                    v.value.kind()
                ),
            });
        };
        for item in items {
            let Json::String(s) = &item.value else {
                return Err(RulesError::Invalid {
                    loc: loc(item.pos),
                    message: format!(
                        "a `{key}` entry must be a string, found {}",
                        item.value.kind()
                    ),
                });
            };
            self.add_entry(list, s, Some(loc(item.pos)), &mut PatternCache::default())?;
        }
        Ok(())
    }

    fn add_entry(
        &mut self,
        list: RuleList,
        entry: &str,
        source: Option<SourceLoc>,
        patterns: &mut PatternCache,
    ) -> Result<(), RulesError> {
        let invalid = |message: String| RulesError::Invalid {
            loc: source.clone().unwrap_or(SourceLoc {
                file: "<rules>".into(),
                line: 0,
                column: 0,
            }),
            message,
        };
        let e = trimmed(entry);
        if e.is_empty() {
            return Err(invalid(format!("an empty `{}` entry", list.as_str())));
        }
        match tool_form(e) {
            ToolForm::Tool { tool, inner } => match tool {
                "Bash" => {
                    let pattern = match inner {
                        None => Pattern::claude_inner(e, "*"),
                        Some(i) => Pattern::claude_inner(e, i),
                    }
                    .map_err(|m| invalid(format!("cannot read `{e}`: {m}")))?;
                    self.commands.push(CommandRule {
                        list,
                        pattern: std::sync::Arc::new(pattern),
                        source,
                    });
                }
                "Read" | "Edit" | "Write" | "MultiEdit" | "NotebookEdit" => {
                    let glob = inner.unwrap_or("**").trim().to_string();
                    if glob.is_empty() {
                        return Err(invalid(format!("cannot read `{e}`: an empty path pattern")));
                    }
                    let tool = if tool == "Read" {
                        PathTool::Read
                    } else {
                        PathTool::Write
                    };
                    self.paths.push(PathRule {
                        list,
                        tool,
                        glob,
                        raw: e.to_string(),
                        source,
                    });
                }
                "WebFetch" if inner.is_some_and(|i| i.trim().starts_with("domain:")) => {
                    let host = inner
                        .and_then(|i| i.trim().strip_prefix("domain:"))
                        .unwrap_or_default()
                        .trim();
                    let rule = HostRule::new(list, host, e, source.clone())
                        .map_err(|m| invalid(format!("cannot read `{e}`: {m}")))?;
                    self.network.push(rule);
                }
                other => {
                    let at = source
                        .as_ref()
                        .map(|s| format!("{s}: "))
                        .unwrap_or_default();
                    self.warnings.push(format!(
                        "{at}`{e}` is a rule for {other}, which berth does not run: ignored"
                    ));
                }
            },
            ToolForm::Broken(reason) => {
                return Err(invalid(format!("cannot read `{e}`: {reason}")));
            }
            ToolForm::Plain => {
                let pattern = patterns
                    .plain(e)
                    .map_err(|m| invalid(format!("cannot read `{e}`: {m}")))?;
                self.commands.push(CommandRule {
                    list,
                    pattern,
                    source,
                });
            }
        }
        Ok(())
    }
}

/// Compiled plain patterns by their text ([`Pattern::plain`] is a function
/// of the text alone), bounded: past [`PatternCache::CAPACITY`] it starts
/// over.
#[derive(Debug, Default)]
pub struct PatternCache {
    compiled: rustc_hash::FxHashMap<String, std::sync::Arc<Pattern>>,
}

impl PatternCache {
    /// Most patterns kept.
    const CAPACITY: usize = 4096;

    /// [`Pattern::plain`] of `text`, compiled once.
    fn plain(&mut self, text: &str) -> Result<std::sync::Arc<Pattern>, String> {
        if let Some(p) = self.compiled.get(text) {
            return Ok(p.clone());
        }
        let p = std::sync::Arc::new(Pattern::plain(text)?);
        if self.compiled.len() >= Self::CAPACITY {
            self.compiled.clear();
        }
        self.compiled.insert(text.to_string(), p.clone());
        Ok(p)
    }
}

enum ToolForm<'a> {
    Tool {
        tool: &'a str,
        inner: Option<&'a str>,
    },
    Broken(String),
    Plain,
}

/// Known Claude Code tool names (a bare name is a rule for the whole tool).
const CLAUDE_TOOLS: &[&str] = &[
    "Bash",
    "Read",
    "Edit",
    "Write",
    "MultiEdit",
    "NotebookEdit",
    "NotebookRead",
    "WebFetch",
    "WebSearch",
    "Glob",
    "Grep",
    "LS",
    "Task",
    "TodoWrite",
    "TodoRead",
    "ExitPlanMode",
    "KillShell",
    "BashOutput",
    "SlashCommand",
    "Skill",
];

/// `entry.trim()`: an entry that starts and ends with a printable ASCII
/// byte (nearly every one) has nothing to trim, and its chars are not
/// decoded to find that out (every whitespace char is ASCII at or below a
/// space, or not ASCII).
fn trimmed(entry: &str) -> &str {
    let printable = |b: Option<&u8>| b.is_some_and(|b| (b'!'..=b'~').contains(b));
    let b = entry.as_bytes();
    if printable(b.first()) && printable(b.last()) {
        entry
    } else {
        entry.trim()
    }
}

/// The tool form of an entry, read byte by byte: a tool's name is ASCII (a
/// byte past it is the first byte of a char, so `name_end` is a char
/// boundary).
fn tool_form(e: &str) -> ToolForm<'_> {
    let name_end = e
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'_'))
        .unwrap_or(e.len());
    let (name, rest) = e.split_at(name_end);
    // Every name of `CLAUDE_TOOLS` is capitalized: no other is looked up.
    let capitalized = name.as_bytes().first().is_some_and(u8::is_ascii_uppercase);
    if name.starts_with("mcp__") {
        return ToolForm::Tool {
            tool: "an MCP server",
            inner: None,
        };
    }
    if rest.is_empty() {
        return if capitalized && CLAUDE_TOOLS.contains(&name) {
            ToolForm::Tool {
                tool: name,
                inner: None,
            }
        } else {
            ToolForm::Plain
        };
    }
    if let Some(inner) = rest.strip_prefix('(') {
        if !capitalized && !CLAUDE_TOOLS.contains(&name) {
            return ToolForm::Plain;
        }
        return match inner.strip_suffix(')') {
            Some(i) => ToolForm::Tool {
                tool: name,
                inner: Some(i),
            },
            None => ToolForm::Broken(format!("`{name}(` without its closing `)`")),
        };
    }
    ToolForm::Plain
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::Kind;

    /// `tool_form` looks up capitalized names only.
    #[test]
    fn claude_tools_are_capitalized() {
        for t in CLAUDE_TOOLS {
            assert!(t.as_bytes()[0].is_ascii_uppercase(), "{t}");
        }
    }

    /// [`trimmed`] is `trim`, whatever stands at either end.
    #[test]
    fn trimmed_is_trim() {
        for e in [
            "",
            " ",
            "git",
            " git",
            "git ",
            "\tgit\n",
            "\u{a0}git",
            "git\u{3000}",
            "é",
            "\u{1c}x",
            "x\u{85}",
            "~",
            "!",
        ] {
            assert_eq!(trimmed(e), e.trim(), "{e:?}");
        }
    }

    #[test]
    fn native_file() {
        let set = RuleSet::from_json(
            r#"{"allow": ["npm test", "Bash(git status:*)"], "ask": [], "deny": ["rm"]}"#,
            "p.json",
        )
        .unwrap();
        assert_eq!(set.commands.len(), 3);
        assert_eq!(
            set.commands[1].pattern.kind,
            Kind::Prefix(vec!["git".into(), "status".into()])
        );
        assert_eq!(
            set.commands[2].source.as_ref().map(|s| (s.line, s.column)),
            Some((1, 67))
        );
    }

    #[test]
    fn claude_settings() {
        let text = r#"{
  "model": "x",
  "permissions": {
    "allow": ["Bash(npm run test:*)", "Read(src/**)", "WebFetch(domain:x.com)"],
    "deny": ["Read(./.env)", "Bash(curl:*)"],
    "defaultMode": "default"
  }
}"#;
        let set = RuleSet::from_json(text, "settings.json").unwrap();
        assert_eq!(set.commands.len(), 2);
        assert_eq!(set.paths.len(), 2);
        assert_eq!(set.network.len(), 1, "WebFetch(domain:…) is a network rule");
        assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
    }

    #[test]
    fn broken_files_name_the_place() {
        let cases = [
            ("{\"allow\": [\"ls\",]}", 1),
            ("{\n\"deny\": [\"Bash(rm\"]}", 2),
            ("{\"deny\": [3]}", 1),
            ("{\"alow\": []}", 1),
            ("[\"ls\"]", 1),
            ("{\"deny\": [\"\"]}", 1),
        ];
        for (text, line) in cases {
            match RuleSet::from_json(text, "f.json") {
                Err(RulesError::Invalid { loc, message }) => {
                    assert_eq!(loc.file, "f.json");
                    assert_eq!(loc.line, line, "{text}: {message}");
                    assert!(!message.is_empty());
                }
                other => panic!("{text}: {other:?}"),
            }
        }
    }
}
