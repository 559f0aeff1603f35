//! git: the global options (`-C`, `-c`, `--git-dir`, …) split from the
//! subcommand, so deny rules and the privileged limit see `git push` in
//! every spelling, and the options, config keys and subcommands that make
//! git run another program (`-c core.pager=…`, `--upload-pack`,
//! `rebase -x`, `filter-branch`).

use super::{Facts, Inner};
use crate::arg::Arg;

/// git's global options that take a value.
const GIT_GLOBAL_VALUE: &[&str] = &[
    "-C",
    "-c",
    "--git-dir",
    "--work-tree",
    "--namespace",
    "--super-prefix",
    "--config-env",
    "--attr-source",
    "--list-cmds",
];

/// The result of splitting git's global options from its subcommand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitSplit {
    /// Index in argv of the subcommand, if any.
    pub sub: Option<usize>,
    /// Why a global option makes git run another program.
    pub opaque: Option<String>,
    /// `-C` directories in order (relative args resolve against them).
    pub dirs: Vec<Arg>,
}

/// Splits git's global options (`-C D`, `-c K=V`, `--git-dir=…`, …) from the
/// subcommand.
pub fn git_split(argv: &[Arg]) -> GitSplit {
    let mut out = GitSplit::default();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            // A dynamic word where the subcommand or an option would be.
            out.sub = Some(i);
            return out;
        }
        let t = a.text.as_str();
        if !t.starts_with('-') || t == "-" {
            out.sub = Some(i);
            return out;
        }
        if t == "--" {
            out.sub = (i + 1 < argv.len()).then_some(i + 1);
            return out;
        }
        let name = t.split('=').next().unwrap_or(t);
        match name {
            "-c" | "--config-env" => {
                out.opaque.get_or_insert_with(|| {
                    format!("git's global `{name}` can set a program git runs")
                });
            }
            "--exec-path" => {
                out.opaque.get_or_insert_with(|| {
                    "git's `--exec-path` chooses the programs git runs".to_string()
                });
            }
            "-p" | "--paginate" => {
                out.opaque
                    .get_or_insert_with(|| format!("git's `{name}` runs a pager"));
            }
            "-C" => {
                if let Some(d) = argv.get(i + 1) {
                    out.dirs.push(d.clone());
                }
            }
            _ => {}
        }
        // `-C.` / `-cK=V` attached forms.
        if let Some(rest) = t
            .strip_prefix("-C")
            .filter(|r| !r.is_empty() && !t.starts_with("--"))
        {
            out.dirs.push(Arg {
                text: rest.to_string(),
                ..a.clone()
            });
            i += 1;
            continue;
        }
        if t.starts_with("-c") && t.len() > 2 && !t.starts_with("--") {
            i += 1;
            continue;
        }
        if GIT_GLOBAL_VALUE.contains(&name) && !t.contains('=') {
            i += 2;
        } else {
            i += 1;
        }
    }
    out
}

/// argv with git's global options removed (`git -C /work push` → `git push`).
pub fn git_normalized(argv: &[Arg]) -> Vec<Arg> {
    let split = git_split(argv);
    let mut out = vec![argv[0].clone()];
    if let Some(s) = split.sub {
        out.extend_from_slice(&argv[s..]);
    }
    out
}

/// `git fetch|pull|ls-remote` options that run a program.
const FETCH_RUNS: &[&str] = &[
    "--upload-pack", // the program run for the other side of the fetch
];

/// `git clone` options that run or install programs.
const CLONE_RUNS: &[&str] = &[
    "--upload-pack", // the program run for the other side of the clone
    "-u",            // short for --upload-pack
    "--config",      // sets config in the new repository: any key, hooks included
    "-c",            // short for --config
    "--template",    // copies a template directory: hooks that later run
];

/// `git push|send-pack` options that run a program.
const PUSH_RUNS: &[&str] = &[
    "--receive-pack", // the program run for the other side of the push
    "--exec",         // the same, by its older name
];

/// `git archive` options that run a program.
const ARCHIVE_RUNS: &[&str] = &[
    "--exec",   // the program run for the other side of `--remote`
    "--remote", // runs `git-upload-archive` (or `--exec`) through a transport
];

/// `git grep` options that run a program.
const GREP_RUNS: &[&str] = &[
    "-O",                    // opens the matching files in a pager it names
    "--open-files-in-pager", // the same, long
];

/// `git difftool` options that run a program.
const DIFFTOOL_RUNS: &[&str] = &[
    "-x",       // the diff command to run
    "--extcmd", // the same, long
];

/// Options of the diff family (`diff`, `log`, `show`, …) that run a program.
const DIFF_RUNS: &[&str] = &[
    "--ext-diff", // runs the external diff driver config names
];

/// `git filter-branch` options whose value is a shell snippet it runs, in a
/// temporary checkout, for every commit.
const FILTER_BRANCH_SCRIPTS: &[&str] = &[
    "--env-filter",      // may change the environment the commit is made in
    "--tree-filter",     // runs in a checkout of each tree
    "--index-filter",    // runs against the index of each commit
    "--parent-filter",   // reads and rewrites the parent list
    "--msg-filter",      // reads and rewrites the message
    "--commit-filter",   // runs in place of `git commit-tree`
    "--tag-name-filter", // reads and rewrites tag names
];

/// `git send-email` options that run a program.
const SEND_EMAIL_RUNS: &[&str] = &[
    "--to-cmd",       // a command whose output lists recipients
    "--cc-cmd",       // the same for Cc
    "--sendmail-cmd", // the program that sends the mail
    "--smtp-server",  // a path here is a sendmail-like program to run
];

pub(super) fn git(argv: &[Arg]) -> Facts {
    let split = git_split(argv);
    let mut facts = Facts {
        opaque: split.opaque.clone(),
        ..Facts::default()
    };
    if let Some(d) = split.dirs.last() {
        facts.arg_dir = Some(d.clone());
    }
    let Some(sub_i) = split.sub else { return facts };
    let sub = &argv[sub_i];
    let rest = &argv[sub_i + 1..];
    if facts.opaque.is_some() || sub.dynamic {
        return facts;
    }
    if rest
        .iter()
        .any(|a| !a.dynamic && (a.text.starts_with("ext::") || a.text.starts_with("fd::")))
    {
        facts.opaque = Some("a git `ext::` remote runs a command".into());
        return facts;
    }
    let has = |names: &[&str]| {
        rest.iter().any(|a| {
            !a.dynamic && {
                let n = a.text.split('=').next().unwrap_or(&a.text);
                names.contains(&n)
            }
        })
    };
    match sub.text.as_str() {
        "config" => {
            if let Some(key) = git_config_sets_program(rest) {
                facts.opaque = Some(format!(
                    "`git config` sets `{key}`, which makes git run a program"
                ));
            }
        }
        "fetch" | "pull" | "ls-remote" if has(FETCH_RUNS) => {
            facts.opaque = Some("`--upload-pack` runs a program".into());
        }
        "clone" if has(CLONE_RUNS) => {
            facts.opaque = Some(
                "`git clone` with --upload-pack, --config or --template runs or installs programs"
                    .into(),
            );
        }
        "push" | "send-pack" if has(PUSH_RUNS) => {
            facts.opaque = Some("`--receive-pack`/`--exec` runs a program".into());
        }
        "archive" if has(ARCHIVE_RUNS) => {
            facts.opaque = Some("`git archive --remote/--exec` runs a program".into());
        }
        "grep" if (has(GREP_RUNS) || rest.iter().any(|a| a.text.starts_with("-O"))) => {
            facts.opaque = Some("`git grep -O` runs a pager".into());
        }
        "difftool" if has(DIFFTOOL_RUNS) => {
            facts.opaque = Some("`git difftool --extcmd` runs a program".into());
        }
        "diff" | "log" | "show" | "format-patch" | "whatchanged" | "diff-tree" | "diff-files"
        | "diff-index"
            if has(DIFF_RUNS) =>
        {
            facts.opaque = Some("`--ext-diff` runs an external diff program".into());
        }
        "filter-branch" => {
            // Each filter is a shell snippet, run in a temporary checkout.
            let mut i = 0;
            while i < rest.len() {
                let a = &rest[i];
                let name = a.text.split('=').next().unwrap_or(&a.text);
                if !a.dynamic && FILTER_BRANCH_SCRIPTS.contains(&name) {
                    let script = match a.text.split_once('=') {
                        Some((_, v)) => Some(Arg {
                            text: v.to_string(),
                            ..a.clone()
                        }),
                        None => rest.get(i + 1).cloned(),
                    };
                    if let Some(s) = script {
                        facts.inner.push(Inner::Script(s));
                    }
                    i += if a.text.contains('=') { 1 } else { 2 };
                    continue;
                }
                i += 1;
            }
            facts.filter_in_temp_dir = true;
        }
        "filter-repo"
            if rest
                .iter()
                .any(|a| a.text.ends_with("-callback") || a.text.contains("-callback=")) =>
        {
            facts.opaque = Some("`git filter-repo` callbacks run Python code".into());
        }
        "send-email" if has(SEND_EMAIL_RUNS) => {
            facts.opaque = Some("`git send-email` with a command option runs a program".into());
        }
        "rebase" => {
            let mut i = 0;
            while i < rest.len() {
                let a = &rest[i];
                if a.is("-x") || a.is("--exec") {
                    if let Some(s) = rest.get(i + 1) {
                        facts.inner.push(Inner::Script(s.clone()));
                    }
                    i += 2;
                    continue;
                }
                if let Some(s) = a.text.strip_prefix("--exec=") {
                    facts.inner.push(Inner::Script(Arg {
                        text: s.to_string(),
                        ..a.clone()
                    }));
                } else if a.text.starts_with("-x") && a.text.len() > 2 && !a.dynamic {
                    facts.inner.push(Inner::Script(Arg {
                        text: a.text[2..].to_string(),
                        ..a.clone()
                    }));
                }
                i += 1;
            }
        }
        "bisect" if rest.first().is_some_and(|a| a.is("run")) && rest.len() > 1 => {
            facts.inner.push(Inner::Argv(rest[1..].to_vec()));
        }
        "submodule" => {
            if let Some(pos) = rest.iter().position(|a| a.is("foreach")) {
                let words: Vec<&Arg> = rest[pos + 1..]
                    .iter()
                    .filter(|a| !a.is("--recursive") && !a.is("-q") && !a.is("--quiet"))
                    .collect();
                if words.iter().any(|w| w.dynamic) {
                    facts.opaque = Some("`git submodule foreach` with a dynamic command".into());
                } else if !words.is_empty() {
                    let text = words
                        .iter()
                        .map(|w| w.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" ");
                    facts.inner.push(Inner::Script(Arg::lit(text)));
                }
            }
        }
        _ => {}
    }
    facts
}

/// When `git config …` sets a key that makes git run a program, that key.
fn git_config_sets_program(rest: &[Arg]) -> Option<String> {
    let mut positional: Vec<&Arg> = Vec::new();
    let mut setting = false;
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if a.dynamic {
            positional.push(a);
            i += 1;
            continue;
        }
        let t = a.text.as_str();
        match t {
            "--add" | "--replace-all" => setting = true,
            "-f" | "--file" | "--blob" | "--type" | "--default" | "--comment" | "--value" => {
                i += 2;
                continue;
            }
            "--get" | "--get-all" | "--get-regexp" | "--get-urlmatch" | "-l" | "--list"
            | "--unset" | "--unset-all" | "--remove-section" | "--rename-section" | "-e"
            | "--edit" | "--show-origin" | "--show-scope" | "--name-only" => {
                return None;
            }
            _ if t.starts_with('-') => {}
            _ => positional.push(a),
        }
        i += 1;
    }
    // New syntax: `git config set [opts] key value`.
    if let Some(first) = positional.first() {
        match first.text.as_str() {
            "set" => {
                setting = true;
                positional.remove(0);
            }
            "get" | "list" | "unset" | "rename-section" | "remove-section" | "edit" => return None,
            _ => {}
        }
    }
    let key = positional.first()?;
    if !(setting || positional.len() >= 2) {
        return None;
    }
    if key.dynamic {
        return Some("a dynamic key".to_string());
    }
    git_key_runs_program(&key.text).then(|| key.text.clone())
}

/// Config keys whose value is a program git runs, or that load more config.
pub fn git_key_runs_program(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let parts: Vec<&str> = k.split('.').collect();
    let (section, last) = (
        parts.first().copied().unwrap_or(""),
        parts.last().copied().unwrap_or(""),
    );
    match section {
        "alias" | "filter" | "include" | "includeif" | "pager" | "hook" | "sendemail"
        | "instaweb" => true,
        "core" => matches!(
            last,
            "pager"
                | "editor"
                | "fsmonitor"
                | "hookspath"
                | "sshcommand"
                | "gitproxy"
                | "askpass"
                | "attributesfile"
                | "worktree"
        ),
        "diff" => matches!(last, "external" | "textconv" | "command"),
        "difftool" | "mergetool" => matches!(last, "cmd" | "path"),
        "merge" => last == "driver",
        "credential" => last == "helper",
        "gpg" => last == "program",
        "sequence" => last == "editor",
        "interactive" => last == "difffilter",
        "web" => last == "browser",
        "browser" | "man" => matches!(last, "cmd" | "path" | "viewer"),
        "uploadpack" => last == "packobjectshook",
        "remote" => matches!(last, "uploadpack" | "receivepack" | "vcs" | "proxy"),
        "url" => matches!(last, "insteadof" | "pushinsteadof"),
        "protocol" => last == "allow",
        "submodule" => last == "update",
        "trailer" => matches!(last, "command" | "cmd"),
        "receive" => last == "procreceiverefs",
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn git_config_keys() {
        for key in [
            "alias.st",
            "core.pager",
            "core.fsmonitor",
            "core.hooksPath",
            "diff.x.textconv",
            "filter.lfs.clean",
            "credential.helper",
            "include.path",
            "url.ext::sh.insteadOf",
        ] {
            assert!(git_key_runs_program(key), "{key}");
        }
        for key in [
            "user.name",
            "user.email",
            "color.ui",
            "core.autocrlf",
            "init.defaultBranch",
            "pull.rebase",
        ] {
            assert!(!git_key_runs_program(key), "{key}");
        }
    }
}
