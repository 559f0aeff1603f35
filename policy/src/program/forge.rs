//! Forge CLIs (`gh`): commands that define what later `gh` commands run.
//! `gh alias set` (and `import`) makes a new `gh` command that expands to
//! any other (`--shell` to any shell command), so a later `gh ship` is
//! whatever the alias says; `gh config set editor|pager|browser` names a
//! program gh runs. Neither is ever auto-approved.

use super::Facts;
use crate::arg::Arg;

/// `gh config` keys whose value is a program gh runs.
const GH_CONFIG_RUNS: &[&str] = &[
    "editor",  // run to write bodies and messages
    "pager",   // output goes through it
    "browser", // run to open URLs
];

/// gh's own commands: any other word is an alias (`gh alias set`) or an
/// extension (a program), which the policy cannot read.
const GH_COMMANDS: &[&str] = &[
    "alias",
    "api",
    "attestation",
    "auth",
    "browse",
    "cache",
    "co",
    "codespace",
    "cs",
    "completion",
    "config",
    "extension",
    "ext",
    "extensions",
    "gist",
    "gpg-key",
    "help",
    "issue",
    "label",
    "org",
    "pr",
    "preview",
    "project",
    "release",
    "repo",
    "ruleset",
    "run",
    "search",
    "secret",
    "ssh-key",
    "status",
    "variable",
    "workflow",
    "version",
    "accessibility",
    "agent-task",
    "licenses",
    "copilot",
];

/// gh's options that take a value before or among subcommand words.
const GH_VALUE_OPTIONS: &[&str] = &["-R", "--repo", "--hostname", "-h", "--host"];

pub(super) fn gh(args: &[Arg]) -> Facts {
    let mut words: Vec<&Arg> = Vec::new();
    let mut i = 0;
    while i < args.len() && words.len() < 3 {
        let a = &args[i];
        if !a.dynamic && a.text.starts_with('-') {
            i += if GH_VALUE_OPTIONS.contains(&a.text.as_str()) {
                2
            } else {
                1
            };
            continue;
        }
        words.push(a);
        i += 1;
    }
    let is = |k: usize, w: &str| words.get(k).is_some_and(|a| a.is(w));
    if let Some(first) = words.first() {
        if first.dynamic {
            return Facts::opaque("`gh` with a command computed at run time");
        }
        if !GH_COMMANDS.contains(&first.text.as_str()) {
            return Facts::opaque(format!(
                "`gh {}` is not a gh command the policy knows: an alias or an extension",
                first.text
            ));
        }
    }
    let reads_extensions = words
        .get(1)
        .is_none_or(|a| a.is("list") || a.is("ls") || a.is("browse") || a.is("search"));
    if (is(0, "extension") || is(0, "ext") || is(0, "extensions")) && !reads_extensions {
        return Facts::opaque("`gh extension` installs or runs an extension program");
    }
    if is(0, "alias") && (is(1, "set") || is(1, "import")) {
        return Facts::opaque("`gh alias set` defines a gh command that runs what the alias says");
    }
    if is(0, "alias") && words.get(1).is_some_and(|a| a.dynamic) {
        return Facts::opaque("`gh alias` with a subcommand computed at run time");
    }
    if is(0, "config") && is(1, "set") {
        match words.get(2) {
            Some(k) if k.dynamic => {
                return Facts::opaque("`gh config set` of a key computed at run time");
            }
            Some(k) if GH_CONFIG_RUNS.contains(&k.text.as_str()) => {
                return Facts::opaque(format!(
                    "`gh config set {}` names a program gh runs",
                    k.text
                ));
            }
            _ => {}
        }
    }
    Facts::default()
}
