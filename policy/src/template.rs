//! Built-in deny templates: a short list no configuration can allow, matched
//! by meaning rather than spelling.
//!
//! `rm` recursive on `/`, `/*`, `~`, `~/`, `~/*` or the frame's home in any
//! spelling (`-rf`, `-fr`, `-r -f`, `-R`, `--recursive`, with or without
//! `--no-preserve-root`, through any wrapper, after `cd /`); a fork bomb;
//! `mkfs` on a device; writing a block device; a recursive permission change
//! of `/`. Projects may add templates (patterns), never remove these.

use std::borrow::Cow;

use crate::arg::Arg;
use crate::pattern::{Match, Pattern};
use crate::program::git_normalized;
use crate::scope::normalize;
use crate::segment::{Cwd, Segment};

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
            "fork bomb: a function that runs itself in a pipeline or in the background".into(),
        ));
    }
    for r in &seg.redirects {
        if r.writes
            && !r.target.dynamic
            && is_block_device(&normalize_with(&seg.cwd, &r.target.text))
        {
            return Some(Hit::Deny(format!(
                "writing the block device {}",
                r.target.text
            )));
        }
    }
    let mut maybe = None;
    for inv in seg.invocations() {
        let Some(name) = inv.first() else { continue };
        if name.dynamic {
            continue;
        }
        let hit = match name.basename() {
            "rm" => rm(inv, &seg.cwd, home),
            n if n == "mkfs"
                || n.starts_with("mkfs.")
                || matches!(
                    n,
                    "mke2fs"
                        | "mkswap"
                        | "mkdosfs"
                        | "mkntfs"
                        | "mkexfatfs"
                        | "wipefs"
                        | "blkdiscard"
                ) =>
            {
                operands(inv)
                    .iter()
                    .find(|a| !a.dynamic && a.text.starts_with("/dev/"))
                    .map(|a| Hit::Deny(format!("`{n}` on the device {}", a.text)))
            }
            "dd" => inv.iter().skip(1).find_map(|a| {
                let t = a.text.strip_prefix("of=")?;
                is_block_device(&normalize_with(&seg.cwd, t))
                    .then(|| Hit::Deny(format!("`dd` writing the block device {t}")))
            }),
            "tee" | "shred" => operands(inv)
                .iter()
                .find(|a| !a.dynamic && is_block_device(&normalize_with(&seg.cwd, &a.text)))
                .map(|a| Hit::Deny(format!("writing the block device {}", a.text))),
            "cp" | "mv" | "install" | "cat" => {
                let ops = operands(inv);
                ops.last()
                    .filter(|a| {
                        !a.dynamic
                            && ops.len() > 1
                            && is_block_device(&normalize_with(&seg.cwd, &a.text))
                    })
                    .map(|a| Hit::Deny(format!("writing the block device {}", a.text)))
            }
            "chmod" | "chown" | "chgrp" => recursive_on_root(inv, &seg.cwd),
            "find" => find_delete(inv, &seg.cwd, home),
            "kill" | "pkill" | "killall" => kill_all(inv),
            _ => None,
        };
        match hit {
            Some(Hit::Deny(d)) => return Some(Hit::Deny(d)),
            Some(Hit::Maybe(m)) => maybe = maybe.or(Some(m)),
            None => {}
        }
        let normalized = normalized_argv(inv);
        for p in extra {
            match p.matches_restrict(inv, &normalized, seg.trailing_dynamic) {
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
    if inv
        .first()
        .is_some_and(|a| !a.dynamic && a.basename() == "git")
    {
        Cow::Owned(git_normalized(inv))
    } else {
        without_toolchain(inv)
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
    let proxy = inv
        .first()
        .is_some_and(|a| !a.dynamic && RUSTUP_PROXIES.contains(&a.basename()));
    if proxy
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

/// Non-option arguments (everything after `--`, too).
fn operands(inv: &[Arg]) -> Vec<&Arg> {
    let mut out = Vec::new();
    let mut options_done = false;
    for a in inv.iter().skip(1) {
        if !options_done && !a.dynamic {
            if a.text == "--" {
                options_done = true;
                continue;
            }
            if a.text.starts_with('-') && a.text.len() > 1 {
                continue;
            }
        }
        out.push(a);
    }
    out
}

fn normalize_with(cwd: &Cwd, path: &str) -> String {
    match cwd {
        Cwd::Known(d) if !d.is_empty() => normalize(&d[0], path),
        _ => normalize("/", path),
    }
}

fn rm(inv: &[Arg], cwd: &Cwd, home: &str) -> Option<Hit> {
    // Options read as rm reads them (`--recu`, `-fR`, `x -r`); options it
    // cannot read might be `-r`: what they would deny is only a maybe.
    let certain = match crate::options::programs::rm_is_recursive(inv) {
        Some(true) => true,
        Some(false) => return None,
        None => false,
    };
    let hit = rm_operands(inv, cwd, home);
    match hit {
        Some(Hit::Deny(d)) if !certain => Some(Hit::Maybe(format!(
            "{d}, if an option berth cannot read is recursive"
        ))),
        other => other,
    }
}

fn rm_operands(inv: &[Arg], cwd: &Cwd, home: &str) -> Option<Hit> {
    let mut maybe = None;
    for op in operands(inv) {
        match dangerous_operand(op, cwd, home) {
            Some(true) => return Some(Hit::Deny(format!("`rm -r` of {}", describe(op)))),
            None => {
                maybe = Some(Hit::Maybe(format!(
                    "`rm -r` of {}, which may expand to / or the home directory",
                    describe(op)
                )))
            }
            Some(false) => {}
        }
    }
    maybe
}

fn describe(a: &Arg) -> String {
    if a.dynamic {
        format!("a dynamic operand (`{}` once expanded)", a.text)
    } else {
        format!("`{}`", a.text)
    }
}

/// `Some(true)`: names `/`, `/*`, the home or its contents. `None`: might.
fn dangerous_operand(op: &Arg, cwd: &Cwd, home: &str) -> Option<bool> {
    let home = normalize("/", home);
    let is_bad = |abs: &str| {
        abs == "/"
            || abs == "/*"
            || abs == home
            || abs == format!("{home}/*")
            || abs == format!("{home}/.*")
    };
    if op.dynamic {
        // The static skeleton: `$X/` or `"$Y"` could be anything at all.
        let skel = op.text.trim_end_matches('/');
        if skel.is_empty() || skel == "/*" || skel == "*" {
            return None;
        }
        let dirs = match cwd {
            Cwd::Known(d) => d.clone(),
            Cwd::Unknown => vec!["/".to_string()],
        };
        return if dirs.iter().any(|d| is_bad(&normalize(d, &op.text))) {
            None
        } else {
            Some(false)
        };
    }
    let t = op.text.as_str();
    if t.starts_with('/') {
        return Some(is_bad(&normalize("/", t)));
    }
    match cwd {
        Cwd::Known(dirs) => Some(dirs.iter().any(|d| is_bad(&normalize(d, t)))),
        // `rm -rf *` with an unknown cwd could be at `/`.
        Cwd::Unknown => {
            if t == "*" || t == "." || t.starts_with("..") {
                None
            } else {
                Some(false)
            }
        }
    }
}

fn recursive_on_root(inv: &[Arg], cwd: &Cwd) -> Option<Hit> {
    // In any spelling (`--recu`); options berth cannot read count as recursive.
    let recursive = crate::options::programs::chmod_is_recursive(inv) != Some(false);
    if !recursive {
        return None;
    }
    let name = inv[0].basename();
    for op in operands(inv) {
        if op.dynamic {
            continue;
        }
        let abs = normalize_with(cwd, &op.text);
        if abs == "/" || abs == "/*" {
            return Some(Hit::Deny(format!("recursive `{name}` of /")));
        }
    }
    None
}

/// `find / -delete` (or `find ~ -delete`): `rm -rf /` by another name.
fn find_delete(inv: &[Arg], cwd: &Cwd, home: &str) -> Option<Hit> {
    if !inv.iter().any(|a| a.is("-delete")) {
        return None;
    }
    let mut maybe = None;
    for root in inv
        .iter()
        .skip(1)
        .take_while(|a| a.dynamic || !(a.text.starts_with('-') || a.text == "(" || a.text == "!"))
    {
        match dangerous_operand(root, cwd, home) {
            Some(true) => return Some(Hit::Deny(format!("`find {} -delete`", root.text))),
            None => {
                maybe = Some(Hit::Maybe(
                    "`find -delete` from a dynamic start path".to_string(),
                ))
            }
            Some(false) => {}
        }
    }
    maybe
}

/// `kill -9 -1`: every process the user may signal.
fn kill_all(inv: &[Arg]) -> Option<Hit> {
    if inv[0].basename() != "kill" {
        return None;
    }
    // `-1` is a signal number in `kill -1 PID`, and the pid of every process
    // after another option or `--` (`kill -9 -1`, `kill -- -1`).
    let options = inv
        .iter()
        .skip(1)
        .filter(|x| !x.dynamic && x.text.starts_with('-'))
        .count();
    let mut options_done = false;
    for a in inv.iter().skip(1) {
        if a.is("--") {
            options_done = true;
            continue;
        }
        if a.is("-1") && (options_done || options > 1 || inv.len() == 2) {
            return Some(Hit::Deny("`kill -1`: signals every process".to_string()));
        }
    }
    None
}

/// Block devices and raw memory: `/dev/sda`, `/dev/nvme0n1`, `/dev/mapper/x`, …
pub fn is_block_device(path: &str) -> bool {
    let Some(dev) = path.strip_prefix("/dev/") else {
        return false;
    };
    if dev.starts_with("disk/")
        || dev.starts_with("mapper/")
        || matches!(dev, "mem" | "kmem" | "port")
    {
        return true;
    }
    let letters = |prefix: &str| {
        dev.strip_prefix(prefix)
            .is_some_and(|r| r.chars().next().is_some_and(|c| c.is_ascii_lowercase()))
    };
    let digits = |prefix: &str| {
        dev.strip_prefix(prefix)
            .is_some_and(|r| r.chars().next().is_some_and(|c| c.is_ascii_digit()))
    };
    letters("sd")
        || letters("hd")
        || letters("vd")
        || letters("xvd")
        || digits("nvme")
        || digits("mmcblk")
        || digits("loop")
        || digits("dm-")
        || digits("md")
        || digits("sr")
        || digits("nbd")
        || digits("zram")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_devices() {
        for p in [
            "/dev/sda",
            "/dev/sdb1",
            "/dev/nvme0n1",
            "/dev/mapper/root",
            "/dev/vda",
            "/dev/mem",
            "/dev/disk/by-id/x",
        ] {
            assert!(is_block_device(p), "{p}");
        }
        for p in [
            "/dev/null",
            "/dev/tty",
            "/dev/stdout",
            "/dev/fd/1",
            "/tmp/sda",
            "/dev/shm/x",
        ] {
            assert!(!is_block_device(p), "{p}");
        }
    }
}
