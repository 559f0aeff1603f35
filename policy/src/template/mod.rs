//! Built-in deny templates: a short list no configuration can allow, matched
//! by meaning rather than spelling (POLICY.md, "Spelling does not change
//! meaning", point 12).
//!
//! - `rm` recursive — any spelling of `-r` (`-R`, `-fr`, `--recursive`,
//!   `--recu`), through any wrapper, after `cd` — of `/`, the home or any
//!   directory above it, in any path spelling (`//`, `~/..`, `$HOME/..`,
//!   `/proc/self/root`, `/proc/self/cwd/..`) or glob that can match one or
//!   every child of one (`/**`, `/?*`, `/[!.]*`, `~/.[!.]*`);
//!   `find … -delete` and `find … -exec rm {}` from there;
//! - `chmod`/`chown`/`chgrp -R` (or through `find -exec … {}`) of `/` or a
//!   system directory; of the home or above it, held for a person;
//! - recursive removal by another name: `cmake -E remove_directory`,
//!   `cmake -E rm -r`, `rimraf`;
//! - a block device written by any program (`dd of=`, `mkfs.*`, `wipefs`,
//!   `sgdisk`, `curl -o`, `tee`, `cp`, a redirection) in any path spelling
//!   (`//dev/sda`, `./../../dev/sda`, `sda` after `cd /dev`, `/dev/sd[a]`);
//! - a fork bomb in any shape (see `segment::mark_fork_bombs`);
//! - `kill -1`, and `pkill`/`killall -u USER` with no pattern (every process
//!   of the user);
//! - `chattr -R` of `/` or a system directory.
//!
//! What might meet a template — a variable where an option or operand is
//! read, operands from stdin (`xargs rm -rf`), a glob where a subcommand is
//! read (`git p?sh`) — is a `Maybe`: never auto-approved. Whether a command
//! recurses is asked of one function, [`recursion`]. Projects may add
//! templates (patterns), never remove these.

use std::borrow::Cow;

use crate::arg::Arg;
use crate::pattern::{Match, Pattern};
use crate::program::{git_normalized, git_split};
use crate::scope::{self, normalize};
use crate::segment::{Cwd, Segment};

mod devices;
mod options;
mod removal;
mod signals;
mod subcommands;

pub use devices::is_block_device;
use devices::{device_danger, device_write};
use options::operands;
pub use options::{pattern_operand, recursion, walks_operands};
use removal::{find_delete, mv_away, recursive_on_root, removal_by_other_name, rm, rsync_delete};
use signals::kill_all;
use subcommands::subcommand_glob;

/// A template hit: its name, or that it might hit (an operand could not be
/// known) — the caller treats the latter as opaque.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    Deny(String),
    Maybe(String),
}

/// Matches the built-in templates and the project's extra ones.
pub fn check(seg: &Segment, home: &str, extra: &[Pattern]) -> Option<Hit> {
    if seg.fork_bomb {
        return Some(Hit::Deny(
            "fork bomb: a function that runs itself in a child process (a pipeline, the \
             background, a subshell, a substitution or a coproc)"
                .into(),
        ));
    }
    let mut maybe = None;
    for r in seg.redirects.iter().filter(|r| r.writes) {
        match device_danger(&r.target, &seg.cwd, false) {
            Danger::Yes => {
                return Some(Hit::Deny(format!(
                    "writing the block device {}",
                    r.target.text
                )));
            }
            Danger::Maybe => {
                maybe = maybe.or(Some(format!(
                    "a redirection to {}, which may be a block device",
                    describe(&r.target)
                )))
            }
            Danger::No => {}
        }
    }
    let removal = Removal {
        cwd: &seg.cwd,
        home,
        find_roots: &seg.find_roots,
        trailing: seg.trailing_dynamic,
        stdin_words: seg.stdin_words.as_deref(),
    };
    for view in seg.invocations_normalized() {
        let inv = view.written;
        let Some(name) = inv.first() else { continue };
        if name.dynamic {
            continue;
        }
        let n = name.basename();
        let hit = match n {
            "rm" => rm(inv, &removal),
            "chmod" | "chown" | "chgrp" | "chattr" => recursive_on_root(inv, &removal),
            "find" => find_delete(inv, &removal),
            "rsync" => rsync_delete(inv, &removal),
            "mv" => mv_away(inv, &removal),
            "kill" | "pkill" | "killall" => kill_all(inv),
            "cmake" | "gio" => removal_by_other_name(inv, &removal),
            "git" => removal::git_clean(inv, &removal),
            _ if removal::REMOVERS.contains(&n) => removal_by_other_name(inv, &removal),
            _ => None,
        }
        .or_else(|| device_write(inv, &seg.cwd))
        .or_else(|| subcommand_glob(inv, &view.normalized));
        match hit {
            Some(Hit::Deny(d)) => return Some(Hit::Deny(d)),
            Some(Hit::Maybe(m)) => maybe = maybe.or(Some(m)),
            None => {}
        }
        for p in extra {
            match p.matches_restrict(inv, &view.normalized, seg.trailing_dynamic) {
                Match::Yes => {
                    return Some(Hit::Deny(format!(
                        "the project's deny template `{}`",
                        p.raw
                    )));
                }
                Match::Maybe => {
                    maybe = maybe.or(Some(format!(
                        "a dynamic word where the deny template `{}` compares",
                        p.raw
                    )))
                }
                Match::No => {}
            }
        }
    }
    maybe.map(Hit::Maybe)
}

/// argv as deny rules see it: git's global options removed, a rustup
/// toolchain selector (`cargo +nightly build`) dropped.
///
/// Borrowed when nothing is removed (most commands): it is computed for
/// every invocation of every segment, several times.
pub fn normalized_argv(inv: &[Arg]) -> Cow<'_, [Arg]> {
    // Every modelled tool's global options removed and its subcommand
    // named canonically (`npm --prefix . pub` → `npm publish`).
    if let Some(norm) = crate::options::global::normalized(inv) {
        return Cow::Owned(norm);
    }
    normalized_argv_unmodelled(inv)
}

/// [`normalized_argv`] when the tool's table found nothing to change:
/// git's dashed or global-option spellings, a rustup toolchain selector.
pub fn normalized_argv_unmodelled(inv: &[Arg]) -> Cow<'_, [Arg]> {
    // The program's name found once: this runs for every invocation.
    let Some(name) = inv.first().filter(|a| !a.dynamic).map(Arg::basename) else {
        return Cow::Borrowed(inv);
    };
    if name == "git" || name.starts_with("git-") {
        // `git status`: no global option, not dashed — nothing to change.
        if name == "git" && git_split(inv).sub == Some(1) {
            return Cow::Borrowed(inv);
        }
        Cow::Owned(git_normalized(inv))
    } else {
        toolchain_removed(inv, name)
    }
}

/// Programs rustup proxies: `+toolchain` as their first argument selects a
/// toolchain and is not part of the command.
const RUSTUP_PROXIES: &[&str] = &[
    "cargo",
    "rustc",
    "rustdoc",
    "rustfmt",
    "cargo-fmt",
    "cargo-clippy",
    "clippy-driver",
    "rust-gdb",
    "rust-lldb",
    "rust-analyzer",
];

/// argv without a rustup `+toolchain` selector.
pub fn without_toolchain(inv: &[Arg]) -> Cow<'_, [Arg]> {
    match inv.first().filter(|a| !a.dynamic) {
        Some(program) => toolchain_removed(inv, program.basename()),
        None => Cow::Borrowed(inv),
    }
}

/// [`without_toolchain`] of an argv whose program, static, is `name`.
pub(crate) fn toolchain_removed<'a>(inv: &'a [Arg], name: &str) -> Cow<'a, [Arg]> {
    if RUSTUP_PROXIES.contains(&name)
        && inv
            .get(1)
            .is_some_and(|a| !a.dynamic && a.text.starts_with('+') && a.text.len() > 1)
    {
        let mut v = inv.to_vec();
        v.remove(1);
        Cow::Owned(v)
    } else {
        Cow::Borrowed(inv)
    }
}

/// How dangerous an operand is for a template: it names the target, it
/// may (a word that cannot be known), or it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Danger {
    No,
    Maybe,
    Yes,
}

/// What a removal template needs besides the operand.
pub(super) struct Removal<'a> {
    cwd: &'a Cwd,
    home: &'a str,
    /// What `{}` stands for under `find -exec`.
    find_roots: &'a [Arg],
    /// More operands come from stdin or a file (`xargs`).
    trailing: bool,
    /// Those operands, when a pipe from `echo`/`printf` shows them.
    stdin_words: Option<&'a [Arg]>,
}

pub(super) fn describe(a: &Arg) -> String {
    if a.dynamic {
        format!("a dynamic operand (`{}` once expanded)", a.text)
    } else {
        format!("`{}`", a.text)
    }
}

/// Where a static path may resolve, once per possible cwd; `None` where
/// it cannot be known (a relative path in an unknown cwd, another
/// process's cwd).
pub(super) fn places(cwd: &Cwd, text: &str) -> Vec<Option<String>> {
    match cwd {
        Cwd::Known(dirs) if !dirs.is_empty() => dirs
            .iter()
            .map(|d| scope::resolve(d, text, Some(d)).ok())
            .collect(),
        _ if text.starts_with('/') => vec![scope::resolve("/", text, None).ok()],
        _ => vec![None],
    }
}
