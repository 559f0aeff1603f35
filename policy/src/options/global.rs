//! Global options and subcommand aliases of tools that take a subcommand.
//!
//! `npm --prefix . publish`, `kubectl -v 6 apply`, `git -C d -c k=v push`,
//! `docker --context x push`: a deny, ask or privileged pattern written
//! `npm publish` must see the subcommand wherever the tool's own global
//! options put it, and `npm pub`, `npm publis` are `npm publish` because npm
//! resolves abbreviations and aliases so. A table per tool lists its global
//! options with their arity ([`Opt`]); [`normalized`] removes them and names
//! the subcommand canonically. An option the table does not know before the
//! subcommand means the subcommand cannot be found: [`subcommand`] reports
//! it, and the segment is opaque.

use std::borrow::Cow;

use super::{Opt, Parsed, Problem, Role, Syntax, flag, optional, parse, value};
use crate::arg::Arg;

/// `git` global options (`git [opts] <command>`).
const GIT: &[Opt] = &[
    value(b'C', ""),
    value(b'c', ""),          // sets any config key: git.rs judges the key
    value(0, "config-env"),   // the same, from the environment
    optional(0, "exec-path"), // chooses the programs git runs: git.rs judges it
    flag(b'p', "paginate"),   // runs a pager: git.rs judges it
    flag(b'P', "no-pager"),
    value(0, "git-dir"),
    value(0, "work-tree"),
    value(0, "namespace"),
    value(0, "super-prefix"),
    value(0, "attr-source"),
    value(0, "list-cmds").role(Role::Itself),
    flag(0, "bare"),
    flag(0, "no-replace-objects"),
    flag(0, "no-lazy-fetch"),
    flag(0, "no-optional-locks"),
    flag(0, "no-advice"),
    flag(0, "literal-pathspecs"),
    flag(0, "glob-pathspecs"),
    flag(0, "noglob-pathspecs"),
    flag(0, "icase-pathspecs"),
    flag(0, "html-path").role(Role::Itself),
    flag(0, "man-path").role(Role::Itself),
    flag(0, "info-path").role(Role::Itself),
    flag(b'v', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// npm's options that may precede the command (npm reads its config from
/// `--key value` anywhere; these are the ones berth knows).
const NPM: &[Opt] = &[
    value(b'C', "prefix"),
    value(b'w', "workspace"),
    flag(0, "workspaces"),
    flag(0, "include-workspace-root"),
    value(0, "registry"),
    value(0, "userconfig"),
    value(0, "globalconfig"),
    value(0, "cache"),
    value(0, "loglevel"),
    value(0, "otp"),
    value(0, "tag"),
    value(0, "access"),
    value(0, "omit"),
    value(0, "include"),
    value(0, "color"),
    value(0, "script-shell"), // the program that runs scripts: build_tools.rs judges it
    flag(b's', "silent"),
    flag(b'q', "quiet"),
    flag(b'd', "verbose"),
    flag(b'g', "global"),
    flag(b'y', "yes"),
    flag(b'f', "force"),
    flag(0, "json"),
    flag(0, "offline"),
    flag(0, "prefer-offline"),
    flag(0, "prefer-online"),
    flag(0, "dry-run"),
    flag(0, "ignore-scripts"),
    flag(0, "legacy-peer-deps"),
    flag(0, "production"),
    flag(0, "no-audit"),
    flag(0, "no-fund"),
    flag(0, "no-color"),
    flag(0, "no-progress"),
    flag(0, "no-update-notifier"),
    flag(b'v', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// pnpm's options before the command.
const PNPM: &[Opt] = &[
    value(b'C', "dir"),
    value(b'F', "filter"),
    value(0, "filter-prod"),
    value(0, "reporter"),
    value(0, "loglevel"),
    value(0, "store-dir"),
    flag(b'r', "recursive"),
    flag(b'w', "workspace-root"),
    flag(b's', "silent"),
    flag(0, "stream"),
    flag(0, "parallel"),
    flag(0, "aggregate-output"),
    flag(0, "color"),
    flag(0, "no-color"),
    flag(0, "frozen-lockfile"),
    flag(0, "offline"),
    flag(0, "prefer-offline"),
    flag(0, "ignore-scripts"),
    flag(b'v', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// yarn's options before the command.
const YARN: &[Opt] = &[
    value(0, "cwd"),
    value(0, "modules-folder"),
    value(0, "cache-folder"),
    value(0, "registry"),
    value(0, "network-timeout"),
    flag(b's', "silent"),
    flag(0, "verbose"),
    flag(0, "offline"),
    flag(0, "prefer-offline"),
    flag(0, "frozen-lockfile"),
    flag(0, "immutable"),
    flag(0, "ignore-scripts"),
    flag(0, "non-interactive"),
    flag(0, "no-progress"),
    flag(b'v', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// bun's options before the command.
const BUN: &[Opt] = &[
    value(0, "cwd"),
    value(0, "config"),
    value(0, "env-file"),
    flag(b's', "silent"),
    flag(b'v', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// cargo's options before the command (`+toolchain` is removed first).
const CARGO: &[Opt] = &[
    value(0, "config"), // any config key: build_tools.rs judges it
    value(b'Z', ""),
    value(b'C', ""),
    value(0, "color"),
    value(0, "explain").role(Role::Itself),
    flag(b'v', "verbose"),
    flag(b'q', "quiet"),
    flag(0, "frozen"),
    flag(0, "locked"),
    flag(0, "offline"),
    flag(0, "list").role(Role::Itself),
    flag(b'V', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// uv's options before the command.
const UV: &[Opt] = &[
    value(0, "directory"),
    value(0, "project"),
    value(0, "color"),
    value(0, "cache-dir"),
    value(0, "config-file"),
    value(0, "python"),
    value(0, "allow-insecure-host"),
    flag(b'n', "no-cache"),
    flag(b'q', "quiet"),
    flag(b'v', "verbose"),
    flag(0, "offline"),
    flag(0, "native-tls"),
    flag(0, "no-progress"),
    flag(0, "no-config"),
    flag(0, "preview"),
    flag(0, "no-python-downloads"),
    flag(0, "managed-python"),
    flag(b'V', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// docker's and podman's options before the command.
const DOCKER: &[Opt] = &[
    value(0, "config"),
    value(b'c', "context"),
    value(b'H', "host"),
    value(b'l', "log-level"),
    value(0, "tlscacert"),
    value(0, "tlscert"),
    value(0, "tlskey"),
    value(0, "connection"),
    value(0, "url"),
    value(0, "root"),
    value(0, "runroot"),
    flag(b'D', "debug"),
    flag(0, "tls"),
    flag(0, "tlsverify"),
    flag(0, "remote"),
    flag(b'v', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// kubectl's options before the command.
const KUBECTL: &[Opt] = &[
    value(b'n', "namespace"),
    value(0, "context"),
    value(0, "kubeconfig"),
    value(0, "cluster"),
    value(0, "user"),
    value(b's', "server"),
    value(0, "token"),
    value(0, "as"),
    value(0, "as-group"),
    value(0, "as-uid"),
    value(0, "certificate-authority"),
    value(0, "client-certificate"),
    value(0, "client-key"),
    value(0, "request-timeout"),
    value(0, "tls-server-name"),
    value(0, "cache-dir"),
    value(0, "profile"),
    value(0, "profile-output"),
    value(0, "password"),
    value(0, "username"),
    value(b'v', "v"),
    value(0, "vmodule"),
    flag(0, "insecure-skip-tls-verify"),
    flag(0, "match-server-version"),
    flag(0, "warnings-as-errors"),
    flag(0, "disable-compression"),
    flag(b'h', "help").role(Role::Itself),
];

/// helm's options before the command.
const HELM: &[Opt] = &[
    value(b'n', "namespace"),
    value(0, "kube-context"),
    value(0, "kubeconfig"),
    value(0, "registry-config"),
    value(0, "repository-config"),
    value(0, "repository-cache"),
    value(0, "kube-apiserver"),
    value(0, "kube-as-user"),
    value(0, "kube-as-group"),
    value(0, "kube-ca-file"),
    value(0, "kube-tls-server-name"),
    value(0, "kube-token"),
    value(0, "burst-limit"),
    value(0, "qps"),
    flag(0, "debug"),
    flag(0, "kube-insecure-skip-tls-verify"),
    flag(b'h', "help").role(Role::Itself),
];

/// gh's, hub's and glab's options before the command.
const GH: &[Opt] = &[
    value(b'R', "repo"),
    value(0, "hostname"),
    flag(0, "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// pulumi's options before the command.
const PULUMI: &[Opt] = &[
    value(b'C', "cwd"),
    value(0, "color"),
    value(0, "tracing"),
    value(b'v', "verbose"),
    flag(0, "non-interactive"),
    flag(0, "emoji"),
    flag(0, "logtostderr"),
    flag(0, "logflow"),
    flag(0, "disable-integrity-checking"),
    flag(b'h', "help").role(Role::Itself),
];

/// npm's commands (`npm help commands`), for its abbreviations.
const NPM_COMMANDS: &[&str] = &[
    "access",
    "adduser",
    "audit",
    "bugs",
    "cache",
    "ci",
    "completion",
    "config",
    "dedupe",
    "deprecate",
    "diff",
    "dist-tag",
    "docs",
    "doctor",
    "edit",
    "exec",
    "explain",
    "explore",
    "find-dupes",
    "fund",
    "get",
    "help",
    "help-search",
    "hook",
    "init",
    "install",
    "install-ci-test",
    "install-test",
    "link",
    "ll",
    "login",
    "logout",
    "ls",
    "org",
    "outdated",
    "owner",
    "pack",
    "ping",
    "pkg",
    "prefix",
    "profile",
    "prune",
    "publish",
    "query",
    "rebuild",
    "repo",
    "restart",
    "root",
    "run",
    "sbom",
    "search",
    "set",
    "shrinkwrap",
    "star",
    "stars",
    "start",
    "stop",
    "team",
    "test",
    "token",
    "uninstall",
    "unpublish",
    "unstar",
    "update",
    "version",
    "view",
    "whoami",
];

/// npm's aliases (`lib/utils/cmd-list.js`): alias → command. `run` is
/// named as people write it (npm's own name is `run-script`), so a glob
/// pattern `npm run *` still matches.
const NPM_ALIASES: &[(&str, &str)] = &[
    ("author", "owner"),
    ("home", "docs"),
    ("issues", "bugs"),
    ("info", "view"),
    ("show", "view"),
    ("find", "search"),
    ("add", "install"),
    ("unlink", "uninstall"),
    ("remove", "uninstall"),
    ("rm", "uninstall"),
    ("r", "uninstall"),
    ("un", "uninstall"),
    ("rb", "rebuild"),
    ("list", "ls"),
    ("ln", "link"),
    ("create", "init"),
    ("i", "install"),
    ("it", "install-test"),
    ("cit", "install-ci-test"),
    ("up", "update"),
    ("c", "config"),
    ("s", "search"),
    ("se", "search"),
    ("tst", "test"),
    ("t", "test"),
    ("ddp", "dedupe"),
    ("v", "view"),
    ("run-script", "run"),
    ("clean-install", "ci"),
    ("clean-install-test", "install-ci-test"),
    ("x", "exec"),
    ("why", "explain"),
    ("la", "ll"),
    ("verison", "version"),
    ("ic", "ci"),
    ("innit", "init"),
    ("in", "install"),
    ("ins", "install"),
    ("inst", "install"),
    ("insta", "install"),
    ("instal", "install"),
    ("isnt", "install"),
    ("isnta", "install"),
    ("isntal", "install"),
    ("isntall", "install"),
    ("install-clean", "ci"),
    ("isntall-clean", "ci"),
    ("hlep", "help"),
    ("dist-tags", "dist-tag"),
    ("upgrade", "update"),
    ("udpate", "update"),
    ("rum", "run"),
    ("sit", "install-ci-test"),
    ("urn", "run"),
    ("ogr", "org"),
    ("add-user", "adduser"),
];

/// pnpm's aliases.
const PNPM_ALIASES: &[(&str, &str)] = &[
    ("i", "install"),
    ("add", "add"),
    ("rm", "remove"),
    ("uninstall", "remove"),
    ("un", "remove"),
    ("up", "update"),
    ("upgrade", "update"),
    ("ls", "list"),
    ("ln", "link"),
    ("t", "test"),
    ("tst", "test"),
    ("run-script", "run"),
];

/// yarn's aliases.
const YARN_ALIASES: &[(&str, &str)] = &[
    ("rm", "remove"),
    ("upgrade", "up"),
    ("ls", "list"),
    ("run-script", "run"),
];

/// cargo's built-in aliases.
const CARGO_ALIASES: &[(&str, &str)] = &[
    ("b", "build"),
    ("c", "check"),
    ("d", "doc"),
    ("t", "test"),
    ("r", "run"),
    ("rm", "remove"),
];

/// helm's aliases.
const HELM_ALIASES: &[(&str, &str)] = &[
    ("del", "uninstall"),
    ("delete", "uninstall"),
    ("un", "uninstall"),
    ("ls", "list"),
];

/// A tool that takes a subcommand: its global options and how it names
/// subcommands.
struct Tool {
    globals: &'static [Opt],
    aliases: &'static [(&'static str, &'static str)],
    /// Unambiguous prefixes of these commands (and of the aliases) name
    /// them, as npm resolves them.
    abbreviates: &'static [&'static str],
    /// `+toolchain` may come first (rustup proxies).
    toolchain: bool,
}

const fn tool(globals: &'static [Opt]) -> Tool {
    Tool {
        globals,
        aliases: &[],
        abbreviates: &[],
        toolchain: false,
    }
}

fn table(name: &str) -> Option<Tool> {
    Some(match name {
        "git" => tool(GIT),
        "npm" => Tool {
            aliases: NPM_ALIASES,
            abbreviates: NPM_COMMANDS,
            ..tool(NPM)
        },
        "pnpm" => Tool {
            aliases: PNPM_ALIASES,
            ..tool(PNPM)
        },
        "yarn" => Tool {
            aliases: YARN_ALIASES,
            ..tool(YARN)
        },
        "bun" => tool(BUN),
        "cargo" => Tool {
            aliases: CARGO_ALIASES,
            toolchain: true,
            ..tool(CARGO)
        },
        "uv" => tool(UV),
        "docker" | "podman" => tool(DOCKER),
        "kubectl" | "oc" => tool(KUBECTL),
        "helm" => Tool {
            aliases: HELM_ALIASES,
            ..tool(HELM)
        },
        "gh" | "hub" | "glab" => tool(GH),
        "pulumi" => tool(PULUMI),
        _ => return None,
    })
}

/// Whether `name` is a tool whose global options are modelled.
pub fn is_modelled(name: &str) -> bool {
    table(name).is_some()
}

/// Where a tool's subcommand stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sub<'a> {
    /// At this index, named canonically (`npm i` → `install`): borrowed
    /// from argv or the tables when it needs no new text (most commands).
    At {
        index: usize,
        canonical: Cow<'a, str>,
    },
    /// The tool runs no subcommand (`npm --version`, `git` alone).
    None,
    /// Its place cannot be found: an unknown or dynamic option before it.
    Unknown(Problem),
}

/// Finds the subcommand of `argv` (`argv[0]` is the tool), if the tool's
/// global options are modelled.
pub fn subcommand(argv: &[Arg]) -> Option<Sub<'_>> {
    let first = argv.first()?;
    if first.dynamic {
        return None;
    }
    subcommand_named(argv, first.basename())
}

/// [`subcommand`], told `name`, the basename of `argv[0]`, a static word
/// (the callers hold it already).
pub(crate) fn subcommand_named<'a>(argv: &'a [Arg], name: &str) -> Option<Sub<'a>> {
    let t = table(name)?;
    let mut start = 1;
    if t.toolchain
        && argv
            .get(1)
            .is_some_and(|a| !a.dynamic && a.text.starts_with('+') && a.text.len() > 1)
    {
        start = 2;
    }
    let syntax = Syntax::wrapper(t.globals);
    let parsed: Parsed = parse(argv, start, &syntax);
    if let Some(p) = parsed.problem {
        return Some(Sub::Unknown(p));
    }
    if parsed.first_with(Role::Itself).is_some() || parsed.end >= argv.len() {
        return Some(Sub::None);
    }
    let word = &argv[parsed.end];
    let canonical = if word.dynamic {
        Cow::Borrowed(word.text.as_str())
    } else {
        canonical_command(&t, &word.text)
    };
    Some(Sub::At {
        index: parsed.end,
        canonical,
    })
}

/// The command a tool runs for `word`, through its aliases and abbreviations.
fn canonical_command<'a>(t: &Tool, word: &'a str) -> Cow<'a, str> {
    let mut w = Cow::Borrowed(word);
    if !t.abbreviates.is_empty() && w.bytes().any(|b| b.is_ascii_uppercase()) {
        // npm reads `distTag` as `dist-tag`.
        let mut out = String::new();
        for c in w.chars() {
            if c.is_ascii_uppercase() {
                out.push('-');
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        }
        w = Cow::Owned(out);
    }
    if !t.abbreviates.is_empty() {
        let known = t
            .abbreviates
            .iter()
            .copied()
            .chain(t.aliases.iter().map(|(a, _)| *a));
        if !known.clone().any(|k| k == w) {
            let mut hits = known.filter(|k| k.starts_with(&*w));
            if let (Some(only), None) = (hits.next(), hits.next()) {
                w = Cow::Borrowed(only);
            }
        }
    }
    for _ in 0..4 {
        match t.aliases.iter().find(|(a, _)| *a == w) {
            Some((_, to)) if *to != w => w = Cow::Borrowed(*to),
            _ => break,
        }
    }
    w
}

/// argv as deny, ask and privileged patterns see it: the tool, then its
/// subcommand named canonically and what follows. `None` when the tool is
/// not modelled or its subcommand cannot be found (the caller keeps argv as
/// written; the segment is opaque for other reasons).
pub fn normalized(argv: &[Arg]) -> Option<Vec<Arg>> {
    normalized_at(argv, subcommand(argv)?)
}

/// [`normalized`] with the subcommand already found ([`subcommand`]).
pub fn normalized_at(argv: &[Arg], sub: Sub<'_>) -> Option<Vec<Arg>> {
    match sub {
        // Nothing removed and the subcommand already canonical (most
        // commands): argv as written, with no copy.
        Sub::At {
            index: 1,
            canonical,
        } if argv
            .get(1)
            .is_some_and(|a| a.dynamic || a.text == *canonical) =>
        {
            None
        }
        Sub::At { index, canonical } => {
            let mut out = Vec::with_capacity(argv.len() + 1 - index);
            out.push(argv[0].clone());
            let mut sub = argv[index].clone();
            if !sub.dynamic {
                sub.text = canonical.into_owned();
            }
            out.push(sub);
            out.extend_from_slice(&argv[index + 1..]);
            Some(out)
        }
        Sub::None | Sub::Unknown(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        let argv: Vec<Arg> = s.split_whitespace().map(Arg::lit).collect();
        match subcommand(&argv) {
            None | Some(Sub::None) | Some(Sub::Unknown(_)) => "-".into(),
            // Unchanged argv is `None` from `normalized`: read as written.
            Some(Sub::At { .. }) => normalized(&argv)
                .map(|v| {
                    v.iter()
                        .map(|a| a.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .unwrap_or_else(|| s.to_string()),
        }
    }

    #[test]
    fn global_options_removed_and_aliases_canonical() {
        let cases = [
            ("npm --prefix . exec -c x", "npm exec -c x"),
            ("npm pub", "npm publish"),
            ("npm publis", "npm publish"),
            ("npm i left-pad", "npm install left-pad"),
            ("npm -C web run build", "npm run build"),
            ("npm run-script build", "npm run build"),
            ("npm --weird publish", "-"),
            ("npm p", "npm p"),
            ("kubectl -v 6 apply -f k8s/", "kubectl apply -f k8s/"),
            ("kubectl --v=6 apply", "kubectl apply"),
            ("pnpm -r exec git push", "pnpm exec git push"),
            ("uv --directory . run pytest", "uv run pytest"),
            ("cargo +nightly --locked run", "cargo run"),
            ("cargo r --release", "cargo run --release"),
            ("helm del x", "helm uninstall x"),
            ("docker --context x push img", "docker push img"),
            ("gh -R o/r pr merge", "gh pr merge"),
            ("git -C d -c k=v push", "git push"),
            ("git -Cd -ck=v push", "git push"),
            ("git --no-pager log", "git log"),
            ("git --version", "-"),
            ("ls -l", "-"),
        ];
        for (input, want) in cases {
            assert_eq!(norm(input), want, "{input}");
        }
    }
}
