//! The project's `permissions.json`: the default written at `project add`, and
//! the allow rules `berth approve --always` appends.
//!
//! `--always` turns what a person just approved into a rule per segment — the
//! segment's argv as a word prefix — but never for a program that would allow
//! far more than what was approved: a shell or an interpreter (any script),
//! a wrapper (any command), a privileged or external-effect command (the policy
//! asks for those whatever the rules say), or a segment the parser could not
//! see into.

use std::path::Path;

use berth_policy::{Decision, RuleMatch};
use serde::Serialize;

use crate::error::{EngineError, Result};

/// The default rules: read-only inspection commands that stay inside the
/// project scope (the scope limit still applies to every path they name).
pub const DEFAULT_PERMISSIONS: &str = r#"{
  "allow": [
    "ls",
    "pwd",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "rg",
    "git status",
    "git diff",
    "git log",
    "git show"
  ],
  "ask": [],
  "deny": []
}
"#;

const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "csh", "tcsh", "ash", "busybox",
];
const INTERPRETERS: &[&str] = &[
    "python",
    "python2",
    "python3",
    "node",
    "nodejs",
    "deno",
    "bun",
    "perl",
    "ruby",
    "php",
    "lua",
    "luajit",
    "tclsh",
    "wish",
    "osascript",
    "pwsh",
    "powershell",
    "awk",
    "gawk",
    "mawk",
    "sed",
    "java",
    "jshell",
    "irb",
    "R",
    "Rscript",
    "julia",
    "ghci",
    "runghc",
    "erl",
    "elixir",
    "iex",
    "scala",
    "groovy",
    "kotlin",
    "swift",
    "dotnet",
    "make",
    "gdb",
    "vim",
    "vi",
    "nvim",
    "emacs",
];
const WRAPPERS: &[&str] = &[
    "env", "command", "builtin", "exec", "nohup", "time", "timeout", "nice", "ionice", "stdbuf",
    "setsid", "flock", "watch", "xargs", "find", "coproc", "npx", "npm", "pnpm", "yarn", "bunx",
    "pipx", "uvx", "eval", "trap", "source", ".", "chroot", "unshare", "nsenter", "strace",
    "ltrace", "taskset", "chrt", "script", "parallel", "ssh", "docker", "kubectl", "su", "sudo",
    "doas",
];

/// What `--always` did with one segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleChange {
    pub pattern: Option<String>,
    pub argv: Vec<String>,
    /// Why no rule was added, when none was.
    pub skipped: Option<String>,
}

/// The rules `--always` adds for an approved action: for a
/// `network_connect`, its host as a `WebFetch(domain:…)` allow rule (the
/// network rule a rules file holds); for the rest, [`rules_for`].
pub fn rules_for_action(action: &berth_policy::Action, decision: &Decision) -> Vec<RuleChange> {
    let berth_policy::Action::NetworkConnect { host, port } = action else {
        return rules_for(decision);
    };
    let argv = vec!["connect".to_string(), format!("{host}:{port}")];
    vec![match berth_policy::network::Host::parse(host) {
        Ok(h) => RuleChange {
            pattern: Some(format!("WebFetch(domain:{h})")),
            argv,
            skipped: None,
        },
        Err(why) => RuleChange {
            pattern: None,
            argv,
            skipped: Some(why),
        },
    }]
}

/// The rules `--always` would add for a decision, segment by segment.
pub fn rules_for(decision: &Decision) -> Vec<RuleChange> {
    decision
        .segments
        .iter()
        .map(|seg| {
            let skip = |why: String| RuleChange {
                pattern: None,
                argv: seg.argv.clone(),
                skipped: Some(why),
            };
            let Some(program) = seg.argv.first() else {
                return skip("not a command".into());
            };
            let base = program.rsplit('/').next().unwrap_or(program);
            if let Some(why) = &seg.opaque {
                return skip(format!("opaque: {why}"));
            }
            if let Some(class) = &seg.privileged {
                return skip(format!("privileged or external effect ({class})"));
            }
            if seg.template.is_some() || matches!(seg.matched, RuleMatch::Deny { .. }) {
                return skip("matches a deny rule".into());
            }
            if matches!(seg.matched, RuleMatch::NotACommand) {
                return skip("not a command".into());
            }
            if matches!(seg.matched, RuleMatch::Allow { .. }) {
                return skip("already allowed".into());
            }
            if !seg.wrappers.is_empty() {
                return skip(format!(
                    "runs through a wrapper ({})",
                    seg.wrappers.join(", ")
                ));
            }
            let lower = base.to_ascii_lowercase();
            let family = lower.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
            if SHELLS.contains(&lower.as_str()) || SHELLS.contains(&family) {
                return skip(format!("`{base}` is a shell"));
            }
            if INTERPRETERS.contains(&base) || INTERPRETERS.contains(&family) {
                return skip(format!("`{base}` is an interpreter"));
            }
            if WRAPPERS.contains(&base) {
                return skip(format!("`{base}` runs other commands"));
            }
            if program.contains('/') {
                return skip(format!("`{program}` is a path, not a command name"));
            }
            if let Some(w) = seg.argv.iter().find(|w| {
                w.is_empty()
                    || w.chars()
                        .any(|c| c.is_whitespace() || c == '"' || c == '\'' || c == '(' || c == ')')
            }) {
                return skip(format!(
                    "the word {w:?} cannot be written as a word pattern"
                ));
            }
            RuleChange {
                pattern: Some(seg.argv.join(" ")),
                argv: seg.argv.clone(),
                skipped: None,
            }
        })
        .collect()
}

/// Appends `patterns` to the allow list of the rules file at `path` (berth's
/// form or Claude Code's `permissions` object), skipping ones already there.
/// Returns the patterns actually added. The file is replaced atomically.
/// In Claude Code's form a command prefix is written as `Bash(<p>:*)`; a
/// network rule (`WebFetch(domain:…)`) is a tool rule already and is
/// written as it is.
pub fn append_allow(path: &Path, patterns: &[String]) -> Result<Vec<String>> {
    edit_list(path, "allow", |list, claude| {
        let mut added = Vec::new();
        for p in patterns {
            let written = if claude && !p.starts_with("WebFetch(domain:") {
                format!("Bash({p}:*)")
            } else {
                p.clone()
            };
            if !list.iter().any(|v| v.as_str() == Some(written.as_str())) {
                list.push(serde_json::Value::String(written.clone()));
                added.push(written);
            }
        }
        let changed = !added.is_empty();
        (added, changed)
    })
}

/// Removes `entry` (as written) from the `list` array (`allow`, `deny`) of
/// the rules file at `path`; whether it was there. The file is replaced
/// atomically, and only when it changed.
pub fn remove_entry(path: &Path, list: &str, entry: &str) -> Result<bool> {
    edit_list(path, list, |items, _| {
        let before = items.len();
        items.retain(|v| v.as_str() != Some(entry));
        let removed = items.len() != before;
        (removed, removed)
    })
}

/// Reads the rules file at `path`, lets `edit` change its `list` array
/// (told whether the file is Claude Code's form), and writes the file back
/// when `edit` says it changed it.
fn edit_list<R>(
    path: &Path,
    list: &str,
    edit: impl FnOnce(&mut Vec<serde_json::Value>, bool) -> (R, bool),
) -> Result<R> {
    let text = std::fs::read_to_string(path).map_err(EngineError::io("reading", path))?;
    let mut doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| EngineError::Config {
            file: path.display().to_string(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
    let claude = doc.get("permissions").is_some_and(|p| p.is_object());
    let root = if claude {
        doc.get_mut("permissions")
    } else {
        Some(&mut doc)
    };
    let Some(obj) = root.and_then(|r| r.as_object_mut()) else {
        return Err(EngineError::Config {
            file: path.display().to_string(),
            line: 1,
            column: 1,
            message: "the rules file must be a JSON object".into(),
        });
    };
    let items = obj
        .entry(list)
        .or_insert_with(|| serde_json::Value::Array(Vec::new()));
    let Some(items) = items.as_array_mut() else {
        return Err(EngineError::Config {
            file: path.display().to_string(),
            line: 1,
            column: 1,
            message: format!("`{list}` must be an array of patterns"),
        });
    };
    let (out, changed) = edit(items, claude);
    if changed {
        let mut text = serde_json::to_string_pretty(&doc)
            .map_err(|e| EngineError::corrupt("writing the rules file", e))?;
        text.push('\n');
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(EngineError::io("writing", &tmp))?;
        std::fs::rename(&tmp, path).map_err(EngineError::io("replacing", path))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use berth_policy::{Approval, Autonomy, RuleList, RuleRef, SegmentReport, Stage, Verdict};

    fn seg(argv: &[&str]) -> SegmentReport {
        SegmentReport {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            wrappers: Vec::new(),
            matched: RuleMatch::None,
            opaque: None,
            privileged: None,
            template: None,
            paths: Vec::new(),
        }
    }

    fn decision(segments: Vec<SegmentReport>) -> Decision {
        Decision {
            verdict: Verdict::RequireApproval,
            stage: Stage::Autonomy,
            reason: "r".into(),
            autonomy: Autonomy::new()
                .with("terminal", Approval::RequireApproval)
                .resolve("terminal"),
            segments,
            findings: Vec::new(),
            lifted: Vec::new(),
            omitted: None,
        }
    }

    #[test]
    fn always_adds_a_rule_per_plain_segment_and_says_why_it_skips_others() {
        let mut wrapped = seg(&["rm", "x"]);
        wrapped.wrappers = vec!["timeout".into()];
        let mut privileged = seg(&["sudo", "ls"]);
        privileged.privileged = Some("privilege".into());
        let mut opaque = seg(&["x"]);
        opaque.opaque = Some("command name from a variable".into());
        let mut allowed = seg(&["ls"]);
        allowed.matched = RuleMatch::Allow {
            rule: RuleRef {
                list: RuleList::Allow,
                pattern: "ls".into(),
                source: None,
            },
        };
        let d = decision(vec![
            seg(&["cargo", "test", "-p", "x"]),
            seg(&["bash", "script.sh"]),
            seg(&["python3", "x.py"]),
            seg(&["xargs", "rm"]),
            wrapped,
            privileged,
            opaque,
            allowed,
            seg(&["/tmp/x/cat", "f"]),
            seg(&["echo", "a b"]),
        ]);
        let got: Vec<(Option<String>, Option<String>)> = rules_for(&d)
            .into_iter()
            .map(|r| (r.pattern, r.skipped))
            .collect();
        let want: Vec<(Option<&str>, Option<&str>)> = vec![
            (Some("cargo test -p x"), None),
            (None, Some("`bash` is a shell")),
            (None, Some("`python3` is an interpreter")),
            (None, Some("`xargs` runs other commands")),
            (None, Some("runs through a wrapper (timeout)")),
            (None, Some("privileged or external effect (privilege)")),
            (None, Some("opaque: command name from a variable")),
            (None, Some("already allowed")),
            (None, Some("`/tmp/x/cat` is a path, not a command name")),
            (
                None,
                Some("the word \"a b\" cannot be written as a word pattern"),
            ),
        ];
        let want: Vec<(Option<String>, Option<String>)> = want
            .into_iter()
            .map(|(a, b)| (a.map(String::from), b.map(String::from)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn append_allow_keeps_the_file_form_and_skips_duplicates() {
        let dir = tempfile::tempdir().unwrap();
        let berth = dir.path().join("permissions.json");
        std::fs::write(&berth, DEFAULT_PERMISSIONS).unwrap();
        let added = append_allow(&berth, &["cargo test".into(), "ls".into()]).unwrap();
        assert_eq!(added, ["cargo test"]);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&berth).unwrap()).unwrap();
        assert_eq!(v["allow"].as_array().unwrap().last().unwrap(), "cargo test");

        let claude = dir.path().join("settings.json");
        std::fs::write(
            &claude,
            r#"{"permissions": {"allow": ["Bash(ls:*)"], "deny": []}, "model": "x"}"#,
        )
        .unwrap();
        let added = append_allow(&claude, &["npm test".into()]).unwrap();
        assert_eq!(added, ["Bash(npm test:*)"]);
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
        assert_eq!(
            v["permissions"]["allow"],
            serde_json::json!(["Bash(ls:*)", "Bash(npm test:*)"])
        );
        assert_eq!(v["model"], "x");
        // A network rule is a tool rule already, in either form; and it
        // comes off again.
        let web = "WebFetch(domain:registry.test)".to_string();
        let added = append_allow(&claude, std::slice::from_ref(&web)).unwrap();
        assert_eq!(added, std::slice::from_ref(&web));
        assert!(remove_entry(&claude, "allow", &web).unwrap());
        assert!(!remove_entry(&claude, "allow", &web).unwrap());
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).unwrap();
        assert_eq!(
            v["permissions"]["allow"],
            serde_json::json!(["Bash(ls:*)", "Bash(npm test:*)"])
        );

        std::fs::write(&berth, "{\n  \"allow\": [,]\n}").unwrap();
        let err = append_allow(&berth, &["x".into()]).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}:2:", berth.display())), "{err}");
    }
}
