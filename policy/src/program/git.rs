//! git: the global options (`-C`, `-c`, `--git-dir`, …) split from the
//! subcommand, so deny rules and the privileged limit see `git push` in
//! every spelling, and the options, config keys and subcommands that make
//! git run another program (`-c core.pager=…`, `--upload-pack`,
//! `rebase -x`, `filter-branch`).

use std::borrow::Cow;

use super::{Facts, HiddenPath, Inner};
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
                // `-c K=V`: analysed when K cannot make git run a program.
                let setting = if t.len() > name.len() {
                    Some(Arg {
                        text: t[name.len() + 1..].to_string(),
                        ..a.clone()
                    })
                } else {
                    argv.get(i + 1).cloned()
                };
                if let Some(why) = global_config_opaque(name, setting.as_ref()) {
                    out.opaque.get_or_insert(why);
                }
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
            let setting = Arg {
                text: t[2..].to_string(),
                ..a.clone()
            };
            if let Some(why) = global_config_opaque("-c", Some(&setting)) {
                out.opaque.get_or_insert(why);
            }
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

/// Why a global `-c K=V` / `--config-env K=ENV` makes git opaque: a key
/// that is not on the list of keys that cannot run a program.
fn global_config_opaque(option: &str, setting: Option<&Arg>) -> Option<String> {
    let Some(s) = setting else {
        return Some(format!("git's global `{option}` without a setting"));
    };
    if s.dynamic {
        return Some(format!(
            "git's global `{option}` with a setting computed at run time"
        ));
    }
    let key = s.text.split('=').next().unwrap_or("");
    (!git_key_harmless(key))
        .then(|| format!("git's global `{option} {key}=…` can set a program git runs"))
}

/// git's argv as allow rules compare it: global `-c K=V` settings of keys
/// that cannot run a program removed (`git -c user.name=x commit` is
/// `git commit` to an allow rule); every other word kept.
pub fn git_without_harmless_settings(argv: &[Arg]) -> Cow<'_, [Arg]> {
    let is_git = argv
        .first()
        .is_some_and(|a| !a.dynamic && a.basename() == "git");
    if !is_git {
        return Cow::Borrowed(argv);
    }
    git_harmless_settings_removed(argv)
}

/// [`git_without_harmless_settings`] of an argv whose program, static, is
/// `git` (the caller holds its basename already).
pub(crate) fn git_harmless_settings_removed(argv: &[Arg]) -> Cow<'_, [Arg]> {
    // Nothing before the subcommand (most commands): argv as written.
    let sub = match git_split(argv).sub {
        Some(1) | None => return Cow::Borrowed(argv),
        Some(sub) => sub,
    };
    let harmless = |setting: &str| git_key_harmless(setting.split('=').next().unwrap_or(""));
    let mut out = vec![argv[0].clone()];
    let mut i = 1;
    while i < sub {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic {
            if (t == "-c" || t == "--config-env")
                && argv
                    .get(i + 1)
                    .is_some_and(|v| !v.dynamic && harmless(&v.text))
            {
                i += 2;
                continue;
            }
            let attached = t.strip_prefix("--config-env=").or_else(|| {
                t.strip_prefix("-c")
                    .filter(|r| !r.is_empty() && !t.starts_with("--"))
            });
            if attached.is_some_and(harmless) {
                i += 1;
                continue;
            }
        }
        out.push(a.clone());
        i += 1;
    }
    out.extend_from_slice(&argv[sub..]);
    Cow::Owned(out)
}

/// The dashed spelling of a git command (`git-push`,
/// `/usr/lib/git-core/git-push`) as `git push`.
pub fn git_undashed(argv: &[Arg]) -> Option<Vec<Arg>> {
    let first = argv.first()?;
    if first.dynamic || first.package {
        return None;
    }
    // git's own programs have no extension (`git-hooks.sh` is a script).
    let sub = first
        .basename()
        .strip_prefix("git-")
        .filter(|s| !s.is_empty() && !s.contains('.'))?;
    let mut out = vec![Arg::lit("git"), Arg::lit(sub)];
    out.extend_from_slice(&argv[1..]);
    Some(out)
}

/// argv with git's global options removed (`git -C /work push` → `git push`);
/// a dashed command is undashed (`git-push` → `git push`).
pub fn git_normalized(argv: &[Arg]) -> Vec<Arg> {
    if let Some(undashed) = git_undashed(argv) {
        return undashed;
    }
    let split = git_split(argv);
    let mut out = vec![argv[0].clone()];
    if let Some(s) = split.sub {
        out.extend_from_slice(&argv[s..]);
    }
    out
}

/// git's own commands (built in, or shipped with git), sorted (a test
/// checks), and with [`GIT_EXTERNAL_COMMANDS`] the only subcommands known: any
/// other word in the subcommand position is an alias (`alias.ship = push`,
/// `alias.x = !sh …`) or a `git-X` program found on PATH, which the policy
/// cannot read.
const GIT_COMMANDS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archimport",
    "archive",
    "backfill",
    "bisect",
    "blame",
    "branch",
    "bugreport",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "citool",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "credential",
    "credential-cache",
    "credential-store",
    "cvsexportcommit",
    "cvsimport",
    "cvsserver",
    "daemon",
    "describe",
    "diagnose",
    "diff",
    "diff-files",
    "diff-index",
    "diff-pairs",
    "diff-tree",
    "difftool",
    "fast-export",
    "fast-import",
    "fetch",
    "fetch-pack",
    "filter-branch",
    "fmt-merge-msg",
    "for-each-ref",
    "for-each-repo",
    "format-patch",
    "fsck",
    "fsck-objects",
    "gc",
    "get-tar-commit-id",
    "gitk",
    "grep",
    "gui",
    "hash-object",
    "help",
    "hook",
    "http-backend",
    "http-fetch",
    "http-push",
    "imap-send",
    "index-pack",
    "init",
    "init-db",
    "interpret-trailers",
    "last-modified",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "maintenance",
    "merge",
    "merge-base",
    "merge-file",
    "merge-index",
    "merge-one-file",
    "merge-tree",
    "mergetool",
    "mktag",
    "mktree",
    "multi-pack-index",
    "mv",
    "name-rev",
    "notes",
    "p4",
    "pack-objects",
    "pack-redundant",
    "pack-refs",
    "patch-id",
    "prune",
    "prune-packed",
    "pull",
    "push",
    "quiltimport",
    "range-diff",
    "read-tree",
    "rebase",
    "receive-pack",
    "reflog",
    "refs",
    "remote",
    "remote-ext",
    "remote-fd",
    "remote-ftp",
    "remote-ftps",
    "remote-http",
    "remote-https",
    "repack",
    "replace",
    "replay",
    "repo",
    "request-pull",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "scalar",
    "send-email",
    "send-pack",
    "shell",
    "shortlog",
    "show",
    "show-branch",
    "show-index",
    "show-ref",
    "sparse-checkout",
    "stage",
    "stash",
    "status",
    "stripspace",
    "submodule",
    "subtree",
    "svn",
    "switch",
    "symbolic-ref",
    "tag",
    "unpack-file",
    "unpack-objects",
    "update-index",
    "update-ref",
    "update-server-info",
    "upload-archive",
    "upload-pack",
    "var",
    "verify-commit",
    "verify-pack",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// External git commands in common use (`git-X` programs), known as
/// [`GIT_COMMANDS`] are.
const GIT_EXTERNAL_COMMANDS: &[&str] = &[
    "lfs",
    "flow",
    "filter-repo",
    "crypt",
    "annex",
    "secret",
    "secrets",
    "absorb",
    "sizer",
    "branchless",
    "machete",
    "town",
    "credential-manager",
];

/// git commands that run a program named on their command line or read
/// git commands from config.
const GIT_COMMANDS_RUN: &[(&str, &str)] = &[
    (
        "for-each-repo",
        "runs git commands in repositories a config key lists",
    ),
    ("instaweb", "runs a web server and a browser"),
    ("web--browse", "runs a browser"),
];

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

/// Is `name` one of [`GIT_COMMANDS`] (sorted: a binary search, not a scan of
/// 160 names at every `git`) or [`GIT_EXTERNAL_COMMANDS`]?
fn is_git_command(name: &str) -> bool {
    GIT_COMMANDS.binary_search(&name).is_ok() || GIT_EXTERNAL_COMMANDS.contains(&name)
}

/// The path of a `REV:path` word (`HEAD:.env`, `:0:src/x`, `:README`),
/// if it is one: not a URL, and a path after the revision.
fn rev_path(word: &str) -> Option<&str> {
    if word.contains("://") {
        return None;
    }
    let path = match word.strip_prefix(':') {
        // `:N:path`, a stage of the index.
        Some(rest) => match rest.split_once(':') {
            Some((n, p)) if n.len() == 1 && n.as_bytes()[0].is_ascii_digit() => p,
            _ => rest,
        },
        None => word.split_once(':').map(|(_, p)| p)?,
    };
    (!path.is_empty()).then_some(path)
}

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
    if !is_git_command(&sub.text) {
        facts.opaque = Some(format!(
            "`git {}` is not a git command the policy knows: an alias or a program on PATH",
            sub.text
        ));
        return facts;
    }
    if sub.is("merge-index") {
        // `git merge-index [-o] [-q] PROGRAM …`: git's own merge program, or opaque.
        let program = rest.iter().find(|a| a.dynamic || !a.text.starts_with('-'));
        if !program.is_some_and(|p| !p.dynamic && p.basename() == "git-merge-one-file") {
            facts.opaque = Some("`git merge-index` runs the merge program it is given".into());
        }
        return facts;
    }
    if let Some((_, why)) = GIT_COMMANDS_RUN.iter().find(|(c, _)| sub.is(c)) {
        facts.opaque = Some(format!("`git {}` {why}", sub.text));
        return facts;
    }
    // Long options as git reads them: an unambiguous prefix is the option
    // (`--upload-p` is `--upload-pack`); short options exactly.
    let has = |names: &[&str]| {
        rest.iter().any(|a| {
            !a.dynamic && {
                let n = a.text.split('=').next().unwrap_or(&a.text);
                names.contains(&n)
                    || (n.len() > 3
                        && n.starts_with("--")
                        && names
                            .iter()
                            .any(|full| full.starts_with("--") && full.starts_with(n)))
            }
        })
    };
    // `REV:path`, `:path`, `:N:path`: git reads that path as of REV (or
    // the index), a read of the path as far as the rules go (point 14:
    // `Read(.env)` meets `git show HEAD:.env`). Relative to the
    // repository's root, judged against the cwd: the same place when the
    // command runs at the root.
    if matches!(
        sub.text.as_str(),
        "show" | "cat-file" | "diff" | "grep" | "archive" | "difftool"
    ) {
        for a in rest
            .iter()
            .filter(|a| !a.dynamic && !a.text.starts_with('-'))
        {
            if let Some(path) = rev_path(&a.text) {
                facts.paths.push(HiddenPath {
                    path: Some(path.to_string()),
                    writes: false,
                });
            }
        }
    }
    match sub.text.as_str() {
        "config" => match git_config(rest) {
            ConfigEffect::Opaque(why) => facts.opaque = Some(why),
            ConfigEffect::Harmless { file } => {
                if let Some(f) = file {
                    facts.paths.push(HiddenPath {
                        path: f.known().map(str::to_string),
                        writes: true,
                    });
                }
            }
        },
        // `--unsafe-paths`: the patch's own file names, outside the
        // worktree included, are where it writes.
        "apply" if has(&["--unsafe-paths"]) => facts.paths.push(HiddenPath {
            path: None,
            writes: true,
        }),
        "fetch" | "pull" | "ls-remote" if has(FETCH_RUNS) => {
            facts.opaque = Some("`--upload-pack` runs a program".into());
        }
        "clone" if has(CLONE_RUNS) => {
            facts.opaque = Some(
                "`git clone` with --upload-pack, --config or --template runs or installs programs"
                    .into(),
            );
        }
        // `--template=D` copies D's hooks into the new `.git/hooks`: they
        // run at the next commit (point 10: repository-controlled code).
        "init" if has(&["--template"]) => {
            facts.opaque =
                Some("`git init --template` installs a template's hooks, which later run".into());
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
        | "diff-index" | "stash" | "reflog" | "range-diff"
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
                } else if let Some(script) = rebase_cluster_exec(a, rest.get(i + 1)) {
                    // `-x` in a cluster (`-fx CMD`, `-ixCMD`).
                    if script.1 {
                        i += 1;
                    }
                    facts.inner.push(Inner::Script(script.0));
                } else if !a.dynamic
                    && a.text.len() > 3
                    && a.text.starts_with("--")
                    && "--exec".starts_with(a.text.split('=').next().unwrap_or(""))
                {
                    // `--exe CMD` / `--ex=CMD`: a prefix of `--exec`.
                    match a.text.split_once('=') {
                        Some((_, v)) => facts.inner.push(Inner::Script(Arg {
                            text: v.to_string(),
                            ..a.clone()
                        })),
                        None => {
                            if let Some(s) = rest.get(i + 1) {
                                facts.inner.push(Inner::Script(s.clone()));
                            }
                            i += 1;
                        }
                    }
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

/// `git rebase` short options that take a value (a cluster stops there).
const REBASE_VALUE_SHORT: &[u8] = b"sXCS";

/// The script of `-x` inside a short-option cluster of `git rebase`
/// (`-fx CMD`, `-ixCMD`), and whether it is the next word.
fn rebase_cluster_exec(a: &Arg, next: Option<&Arg>) -> Option<(Arg, bool)> {
    if a.dynamic || a.text.starts_with("--") || !a.text.starts_with('-') {
        return None;
    }
    let bytes = a.text.as_bytes();
    for (k, c) in bytes.iter().enumerate().skip(1) {
        if *c == b'x' {
            let rest = a.text.get(k + 1..).unwrap_or("");
            return Some(if rest.is_empty() {
                (next.cloned().unwrap_or_else(|| Arg::dynamic("")), true)
            } else {
                (
                    Arg {
                        text: rest.to_string(),
                        ..a.clone()
                    },
                    false,
                )
            });
        }
        if REBASE_VALUE_SHORT.contains(c) {
            return None;
        }
    }
    None
}

/// `git config`'s long options (a unique prefix reads as the whole name,
/// as git's option parser does) and whether each takes a value.
const CONFIG_OPTIONS: &[(&str, bool)] = &[
    ("--global", false),      // writes ~/.gitconfig
    ("--system", false),      // writes /etc/gitconfig
    ("--local", false),       // writes .git/config (the default)
    ("--worktree", false),    // writes .git/config.worktree
    ("--file", true),         // writes the file it names
    ("--blob", true),         // reads a blob
    ("--type", true),         // how the value is read
    ("--default", true),      // the value when the key is missing
    ("--comment", true),      // a comment written beside the value
    ("--value", true),        // matches values (new syntax)
    ("--add", false),         // sets (adds a value)
    ("--replace-all", false), // sets (replaces every value)
    ("--append", false),      // sets (new syntax)
    ("--all", false),         // every value
    ("--get", false),
    ("--get-all", false),
    ("--get-regexp", false),
    ("--get-urlmatch", false),
    ("--get-color", false),
    ("--get-colorbool", false),
    ("--list", false),
    ("--unset", false),
    ("--unset-all", false),
    ("--remove-section", false),
    ("--rename-section", false),
    ("--edit", false), // an editor may write any key
    ("--show-origin", false),
    ("--show-scope", false),
    ("--name-only", false),
    ("--null", false),
    ("--includes", false),
    ("--no-includes", false),
    ("--bool", false),
    ("--int", false),
    ("--bool-or-int", false),
    ("--bool-or-str", false),
    ("--path", false),
    ("--expiry-date", false),
    ("--fixed-value", false),
    ("--regexp", false),
    ("--url", true),
];

/// `git config`'s short options and whether each takes a value.
const CONFIG_SHORT: &[(u8, bool)] = &[
    (b'f', true),  // --file
    (b'l', false), // --list
    (b'e', false), // --edit
    (b'z', false), // --null
    (b't', true),  // --type
];

/// What `git config …` does that the decision must see.
enum ConfigEffect {
    /// Reads, or sets only keys that cannot run a program.
    Harmless { file: Option<Arg> },
    /// Why the segment is opaque.
    Opaque(String),
}

/// Reads `git config …` (old and new syntax): setting a key that is not on
/// the list of keys that cannot run a program, editing, or an option the
/// model does not know, is opaque; `--file F` is a path the command writes.
fn git_config(rest: &[Arg]) -> ConfigEffect {
    let mut positional: Vec<&Arg> = Vec::new();
    let mut setting = false;
    let mut reading = false;
    let mut file: Option<Arg> = None;
    let mut i = 0;
    while i < rest.len() {
        let a = &rest[i];
        if a.dynamic {
            if a.text.starts_with('-') || a.text.is_empty() {
                return ConfigEffect::Opaque(
                    "`git config` with an option computed at run time".into(),
                );
            }
            positional.push(a);
            i += 1;
            continue;
        }
        let t = a.text.as_str();
        if t == "--" {
            positional.extend(rest[i + 1..].iter());
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (n, attached) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (long, None),
            };
            let exact = CONFIG_OPTIONS.iter().find(|(o, _)| o[2..] == *n);
            let mut hits = CONFIG_OPTIONS.iter().filter(|(o, _)| o[2..].starts_with(n));
            let found = exact.or_else(|| {
                let first = hits.next();
                first.filter(|_| hits.next().is_none())
            });
            let Some((name, takes)) = found else {
                return ConfigEffect::Opaque(format!(
                    "`git config` with the option `{t}`, which the policy does not know"
                ));
            };
            let value = match (attached, takes) {
                (Some(v), _) => Some(Arg {
                    text: v.to_string(),
                    ..a.clone()
                }),
                (None, true) => {
                    i += 1;
                    rest.get(i).cloned()
                }
                (None, false) => None,
            };
            match *name {
                "--edit" => {
                    return ConfigEffect::Opaque(
                        "`git config --edit` lets an editor write any key".into(),
                    );
                }
                "--add" | "--replace-all" | "--append" => setting = true,
                "--get" | "--get-all" | "--get-regexp" | "--get-urlmatch" | "--get-color"
                | "--get-colorbool" | "--list" | "--unset" | "--unset-all" | "--remove-section"
                | "--rename-section" | "--show-origin" | "--show-scope" | "--name-only" => {
                    reading = true;
                }
                "--file" => file = value,
                // Files outside the project that the command line does not name.
                "--global" => file = Some(Arg::lit("~/.gitconfig")),
                "--system" => file = Some(Arg::lit("/etc/gitconfig")),
                _ => {}
            }
            i += 1;
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bytes = t.as_bytes();
            for (k, c) in bytes.iter().enumerate().skip(1) {
                let Some((_, takes)) = CONFIG_SHORT.iter().find(|(s, _)| s == c) else {
                    return ConfigEffect::Opaque(format!(
                        "`git config` with the option `{t}`, which the policy does not know"
                    ));
                };
                match c {
                    b'e' => {
                        return ConfigEffect::Opaque(
                            "`git config -e` lets an editor write any key".into(),
                        );
                    }
                    b'l' => reading = true,
                    _ => {}
                }
                if *takes {
                    let value = if k + 1 < bytes.len() {
                        Some(Arg {
                            text: t[k + 1..].to_string(),
                            ..a.clone()
                        })
                    } else {
                        i += 1;
                        rest.get(i).cloned()
                    };
                    if *c == b'f' {
                        file = value;
                    }
                    break;
                }
            }
            i += 1;
            continue;
        }
        positional.push(a);
        i += 1;
    }
    // New syntax: `git config set|unset|get|list|edit …`.
    if let Some(first) = positional.first() {
        match first.text.as_str() {
            "set" => {
                setting = true;
                positional.remove(0);
            }
            "edit" => {
                return ConfigEffect::Opaque(
                    "`git config edit` lets an editor write any key".into(),
                );
            }
            "get" | "list" | "unset" | "rename-section" | "remove-section" => reading = true,
            _ => {}
        }
    }
    let sets = !reading && (setting || positional.len() >= 2);
    if sets {
        let Some(key) = positional.first() else {
            return ConfigEffect::Opaque("`git config` sets a key it does not name".into());
        };
        if key.dynamic {
            return ConfigEffect::Opaque("`git config` sets a key computed at run time".into());
        }
        if !git_key_harmless(&key.text) {
            return ConfigEffect::Opaque(format!(
                "`git config` sets `{}`, which is not on the list of keys that cannot run a program",
                key.text
            ));
        }
    }
    ConfigEffect::Harmless {
        file: if sets { file } else { None },
    }
}

/// Keys that cannot make git run a program, load more config, fetch from
/// or push to elsewhere, or write outside the repository: `git -c K=V`
/// with one of them is analysed, and `git config` may set them. Each
/// entry is `section.name`, `section.*` (any name, no subsection), or
/// `section.<>.name` (any subsection).
const HARMLESS_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "user.signingkey",
    "user.useconfigonly",
    "author.name",
    "author.email",
    "committer.name",
    "committer.email",
    "color.*",
    "color.<>.*",
    "advice.*",
    "column.*",
    "i18n.*",
    "pretty.*",
    "core.quotepath",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.filemode",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.whitespace",
    "core.abbrev",
    "core.commentchar",
    "core.commentstring",
    "core.longpaths",
    "core.symlinks",
    "core.compression",
    "core.loosecompression",
    "core.bigfilethreshold",
    "core.preloadindex",
    "core.untrackedcache",
    "core.checkstat",
    "core.trustctime",
    "core.logallrefupdates",
    "core.warnambiguousrefs",
    "core.splitindex",
    "core.multipackindex",
    "core.commitgraph",
    "core.deltabasecachelimit",
    "core.packedgitlimit",
    "core.packedgitwindowsize",
    "core.fsyncmethod",
    "init.defaultbranch",
    "log.date",
    "log.decorate",
    "log.abbrevcommit",
    "log.follow",
    "log.showroot",
    "log.showsignature",
    "log.mailmap",
    "log.graphcolors",
    "log.excludedecoration",
    "log.initialdecorationset",
    "log.diffmerges",
    "format.pretty",
    "format.subjectprefix",
    "format.signoff",
    "format.numbered",
    "format.headers",
    "format.to",
    "format.cc",
    "format.suffix",
    "format.coverletter",
    "format.thread",
    "format.signature",
    "format.attach",
    "format.from",
    "format.filenamemaxlength",
    "format.encodeemailheaders",
    "format.useautobase",
    "format.notes",
    "format.mboxrd",
    "format.forceinbodyfrom",
    "format.coverfromdescription",
    "format.noprefix",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "push.followtags",
    "fetch.prune",
    "fetch.prunetags",
    "fetch.parallel",
    "fetch.writecommitgraph",
    "fetch.showforcedupdates",
    "fetch.output",
    "rebase.autosquash",
    "rebase.autostash",
    "rebase.updaterefs",
    "rebase.stat",
    "rebase.abbreviatecommands",
    "rebase.missingcommitscheck",
    "rebase.instructionformat",
    "rebase.forkpoint",
    "rebase.rescheduledfailedexec",
    "merge.ff",
    "merge.conflictstyle",
    "merge.log",
    "merge.stat",
    "merge.verbosity",
    "merge.renames",
    "merge.directoryrenames",
    "merge.autostash",
    "merge.renamelimit",
    "diff.algorithm",
    "diff.colormoved",
    "diff.colormovedws",
    "diff.renames",
    "diff.renamelimit",
    "diff.mnemonicprefix",
    "diff.noprefix",
    "diff.relative",
    "diff.context",
    "diff.interhunkcontext",
    "diff.statgraphwidth",
    "diff.statnamewidth",
    "diff.submodule",
    "diff.ignoresubmodules",
    "diff.indentheuristic",
    "diff.suppressblankempty",
    "diff.wserrorhighlight",
    "diff.dirstat",
    "status.showuntrackedfiles",
    "status.short",
    "status.branch",
    "status.relativepaths",
    "status.submodulesummary",
    "status.showstash",
    "status.aheadbehind",
    "status.renames",
    "commit.verbose",
    "commit.status",
    "commit.cleanup",
    "commit.gpgsign",
    "tag.sort",
    "tag.gpgsign",
    "tag.forcesignannotated",
    "branch.sort",
    "branch.autosetupmerge",
    "branch.autosetuprebase",
    "branch.<>.remote",
    "branch.<>.merge",
    "branch.<>.rebase",
    "branch.<>.description",
    "gc.auto",
    "gc.autodetach",
    "gc.autopacklimit",
    "gc.pruneexpire",
    "gc.reflogexpire",
    "gc.reflogexpireunreachable",
    "gc.worktreepruneexpire",
    "rerere.enabled",
    "rerere.autoupdate",
    "grep.linenumber",
    "grep.patterntype",
    "grep.extendedregexp",
    "grep.fullname",
    "grep.column",
    "grep.threads",
    "grep.fallbacktonoindex",
    "blame.date",
    "blame.coloring",
    "blame.showemail",
    "blame.blankboundary",
    "interactive.singlekey",
    "am.threeway",
    "am.keepcr",
    "apply.whitespace",
    "clean.requireforce",
    "transfer.fsckobjects",
    "fetch.fsckobjects",
    "receive.fsckobjects",
    "pack.threads",
    "pack.windowmemory",
    "index.version",
    "index.threads",
    "feature.manyfiles",
    "feature.experimental",
    "protocol.version",
    "submodule.recurse",
    "checkout.defaultremote",
    "checkout.workers",
    "worktree.guessremote",
    "versionsort.suffix",
    "lfs.url",
    "lfs.fetchinclude",
    "lfs.fetchexclude",
    "lfs.locksverify",
    "init.defaultobjectformat",
];

/// Whether a config key is on the list of keys that cannot run a program
/// (sections and names compared as git does, case-insensitively; a
/// subsection as written).
pub fn git_key_harmless(key: &str) -> bool {
    let Some((section, rest)) = key.split_once('.') else {
        return false;
    };
    let (sub, name) = match rest.rsplit_once('.') {
        Some((sub, name)) => (Some(sub), name),
        None => (None, rest),
    };
    if name.is_empty() || sub.is_some_and(str::is_empty) || git_key_runs_program(key) {
        return false;
    }
    let section = section.to_ascii_lowercase();
    let name = name.to_ascii_lowercase();
    HARMLESS_KEYS.iter().any(|entry| {
        let parts: Vec<&str> = entry.split('.').collect();
        match (parts.as_slice(), sub) {
            ([s, n], None) => *s == section && (*n == "*" || *n == name),
            ([s, "<>", n], Some(_)) => *s == section && (*n == "*" || *n == name),
            _ => false,
        }
    })
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
                | "alternaterefscommand"
                | "excludesfile"
        ),
        "help" => matches!(last, "autocorrect" | "browser" | "format"),
        "init" => last == "templatedir",
        "imap" => last == "tunnel",
        "lfs" => matches!(last, "path" | "standalonetransferagent"),
        "diff" => matches!(last, "external" | "textconv" | "command"),
        "difftool" | "mergetool" => matches!(last, "cmd" | "path"),
        "merge" => last == "driver",
        "credential" => last == "helper",
        "gpg" => matches!(last, "program" | "defaultkeycommand"),
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
    fn a_revision_names_a_path_after_its_colon() {
        for (word, want) in [
            ("HEAD:.env", Some(".env")),
            ("origin/main:src/a.rs", Some("src/a.rs")),
            (":.env", Some(".env")),
            (":2:src/a.rs", Some("src/a.rs")),
            ("HEAD:", None),
            ("HEAD", None),
            ("https://example.com/x", None),
        ] {
            assert_eq!(rev_path(word), want, "{word}");
        }
    }

    #[test]
    fn git_commands_are_sorted_for_binary_search() {
        assert!(GIT_COMMANDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_git_command("status") && is_git_command("lfs") && !is_git_command("ship"));
    }

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
