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
            "cmake" | "rimraf" => removal_by_other_name(inv, &removal),
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
    if inv
        .first()
        .is_some_and(|a| !a.dynamic && (a.basename() == "git" || a.basename().starts_with("git-")))
    {
        // `git status`: no global option, not dashed — nothing to change.
        if inv[0].basename() == "git" && git_split(inv).sub == Some(1) {
            return Cow::Borrowed(inv);
        }
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

/// How dangerous an operand is for a template: it names the target, it
/// may (a word that cannot be known), or it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Danger {
    No,
    Maybe,
    Yes,
}

/// What a removal template needs besides the operand.
struct Removal<'a> {
    cwd: &'a Cwd,
    home: &'a str,
    /// What `{}` stands for under `find -exec`.
    find_roots: &'a [Arg],
    /// More operands come from stdin or a file (`xargs`).
    trailing: bool,
    /// Those operands, when a pipe from `echo`/`printf` shows them.
    stdin_words: Option<&'a [Arg]>,
}

/// One program's options, as far as the templates read them: which short
/// letters recurse, which take a value, and the long options (GNU
/// `getopt_long` accepts any unambiguous prefix of one).
struct Options {
    recursive_short: &'static [u8],
    /// Short letters the program knows that take no value.
    flag_short: &'static [u8],
    /// Short letters that take a value (attached or the next word).
    value_short: &'static [u8],
    /// Long options that recurse.
    recursive_long: &'static [&'static str],
    /// Every long option (those that take a value with a trailing `=`).
    long: &'static [&'static str],
}

/// GNU coreutils `rm`.
const RM: Options = Options {
    recursive_short: b"rR",
    flag_short: b"fiIdv",
    value_short: b"",
    recursive_long: &["recursive"],
    long: &[
        "force",
        "interactive",
        "one-file-system",
        "no-preserve-root",
        "preserve-root",
        "recursive",
        "dir",
        "verbose",
        "help",
        "version",
    ],
};

/// GNU coreutils `chmod` (a word like `-rwx` is a mode, not options).
const CHMOD: Options = Options {
    recursive_short: b"R",
    flag_short: b"cfv",
    value_short: b"",
    recursive_long: &["recursive"],
    long: &[
        "changes",
        "silent",
        "quiet",
        "verbose",
        "no-preserve-root",
        "preserve-root",
        "reference=",
        "recursive",
        "help",
        "version",
    ],
};

/// GNU coreutils `chown` and `chgrp`.
const CHOWN: Options = Options {
    recursive_short: b"R",
    flag_short: b"cfvhHLP",
    value_short: b"",
    recursive_long: &["recursive"],
    long: &[
        "changes",
        "dereference",
        "no-dereference",
        "from=",
        "silent",
        "quiet",
        "no-preserve-root",
        "preserve-root",
        "reference=",
        "recursive",
        "verbose",
        "help",
        "version",
    ],
};

/// GNU coreutils `cp` (`-a` is `-dR --preserve=all`).
const CP: Options = Options {
    recursive_short: b"rRa",
    flag_short: b"bdfHilLnPpsuvxT",
    value_short: b"St",
    recursive_long: &["recursive", "archive"],
    long: &[
        "archive",
        "attributes-only",
        "backup",
        "copy-contents",
        "debug",
        "dereference",
        "force",
        "interactive",
        "link",
        "no-clobber",
        "no-dereference",
        "no-preserve=",
        "no-target-directory",
        "one-file-system",
        "parents",
        "preserve",
        "recursive",
        "reflink",
        "remove-destination",
        "sparse=",
        "strip-trailing-slashes",
        "suffix=",
        "symbolic-link",
        "target-directory=",
        "update",
        "verbose",
        "context",
        "help",
        "version",
    ],
};

/// GNU coreutils `mv` (it moves trees whatever its options).
const MV: Options = Options {
    recursive_short: b"",
    flag_short: b"bfinTuvZ",
    value_short: b"St",
    recursive_long: &[],
    long: &[
        "backup",
        "context",
        "debug",
        "exchange",
        "force",
        "interactive",
        "no-clobber",
        "no-copy",
        "no-target-directory",
        "strip-trailing-slashes",
        "suffix=",
        "target-directory=",
        "update",
        "verbose",
        "help",
        "version",
    ],
};

/// GNU `grep` (`-d recurse` and `--directories=recurse` recurse too).
const GREP: Options = Options {
    recursive_short: b"rR",
    flag_short: b"EFGPiyvwxcLloqsbHhnTZUzaIV0123456789",
    value_short: b"efmABCdD",
    recursive_long: &["recursive", "dereference-recursive"],
    long: &[
        "extended-regexp",
        "fixed-strings",
        "basic-regexp",
        "perl-regexp",
        "regexp=",
        "file=",
        "ignore-case",
        "no-ignore-case",
        "word-regexp",
        "line-regexp",
        "null-data",
        "no-messages",
        "invert-match",
        "version",
        "help",
        "max-count=",
        "byte-offset",
        "line-number",
        "line-buffered",
        "with-filename",
        "no-filename",
        "label=",
        "only-matching",
        "quiet",
        "silent",
        "binary-files=",
        "text",
        "directories=",
        "devices=",
        "recursive",
        "dereference-recursive",
        "include=",
        "exclude=",
        "exclude-from=",
        "exclude-dir=",
        "files-without-match",
        "files-with-matches",
        "count",
        "initial-tab",
        "null",
        "before-context=",
        "after-context=",
        "context=",
        "group-separator=",
        "no-group-separator",
        "color",
        "colour",
        "binary",
    ],
};

/// `ls -R`.
const LS: Options = Options {
    recursive_short: b"R",
    flag_short: b"aAbBcCdfFgGhHiklLmnNopqQrsStuUvxXZ1",
    value_short: b"ITw",
    recursive_long: &["recursive"],
    long: &[
        "all",
        "almost-all",
        "author",
        "escape",
        "block-size=",
        "ignore-backups",
        "color",
        "classify",
        "file-type",
        "format=",
        "full-time",
        "group-directories-first",
        "no-group",
        "human-readable",
        "si",
        "dereference-command-line",
        "dereference-command-line-symlink-to-dir",
        "hide=",
        "hyperlink",
        "indicator-style=",
        "inode",
        "ignore=",
        "kibibytes",
        "dereference",
        "numeric-uid-gid",
        "literal",
        "hide-control-chars",
        "show-control-chars",
        "quote-name",
        "quoting-style=",
        "reverse",
        "recursive",
        "size",
        "sort=",
        "time=",
        "time-style=",
        "tabsize=",
        "width=",
        "context",
        "zero",
        "directory",
        "help",
        "version",
    ],
};

/// `zip -r`: recursion; other letters are not read (an unknown one counts
/// as possibly recursive, which only widens what it reaches).
const ZIP: Options = Options {
    recursive_short: b"rR",
    flag_short: b"",
    value_short: b"",
    recursive_long: &["recurse-paths", "recurse-patterns"],
    long: &["recurse-paths", "recurse-patterns"],
};

/// `rsync -r`, `-a` (archive implies recursion).
const RSYNC: Options = Options {
    recursive_short: b"ra",
    flag_short: b"",
    value_short: b"",
    recursive_long: &["recursive", "archive"],
    long: &["recursive", "archive"],
};

/// `scp -r`.
const SCP: Options = Options {
    recursive_short: b"r",
    flag_short: b"346ABCOpqRTv",
    value_short: b"cDFiJlmoPsSX",
    recursive_long: &[],
    long: &[],
};

/// The option table of a program whose recursion is an option.
fn options_of(program: &str) -> Option<&'static Options> {
    Some(match program {
        "rm" => &RM,
        "chmod" => &CHMOD,
        "chown" | "chgrp" => &CHOWN,
        "cp" => &CP,
        "mv" => &MV,
        "grep" | "egrep" | "fgrep" => &GREP,
        "ls" => &LS,
        "zip" => &ZIP,
        "rsync" => &RSYNC,
        "scp" => &SCP,
        _ => return None,
    })
}

/// Programs that always walk the directories they are given.
const ALWAYS_WALK: &[&str] = &[
    "find", "du", "rg", "ag", "ack", "fd", "fdfind", "tree", "chattr",
];

/// A long option as `getopt_long` reads it: an exact name, or the one
/// option an abbreviation names. `None`: unknown or ambiguous (the program
/// refuses it).
fn long_option(word: &str, table: &'static [&'static str]) -> Option<&'static str> {
    let name = word.split('=').next().unwrap_or(word);
    let bare = |o: &'static str| o.trim_end_matches('=');
    if let Some(o) = table.iter().find(|o| bare(o) == name) {
        return Some(bare(o));
    }
    let mut found = table.iter().filter(|o| bare(o).starts_with(name));
    match (found.next(), found.next()) {
        (Some(o), None) if !name.is_empty() => Some(bare(o)),
        _ => None,
    }
}

/// Whether an invocation recurses into the directories it names: the one
/// question every recursion template asks (`rm -r`, `rm -fR`,
/// `rm --recu`, `cp -a`, `grep -d recurse`). `None` when a word that may
/// be an option cannot be read (a variable, an unknown option): the
/// caller treats that as possibly recursive.
pub fn recursion(inv: &[Arg]) -> Option<bool> {
    let own = recursion_by_table(inv);
    // rm's and chmod's own option tables (the getopt reads `--recu`, `-fR`
    // as they do): recursive when either reading says so, known not
    // recursive only when both do.
    let by_getopt = match inv.first().filter(|a| !a.dynamic).map(Arg::basename) {
        Some("rm") => crate::options::programs::rm_is_recursive(inv),
        Some("chmod" | "chown" | "chgrp") => crate::options::programs::chmod_is_recursive(inv),
        _ => return own,
    };
    match (own, by_getopt) {
        (Some(true), _) | (_, Some(true)) => Some(true),
        (Some(false), Some(false)) => Some(false),
        _ => None,
    }
}

fn recursion_by_table(inv: &[Arg]) -> Option<bool> {
    let name = inv.first()?;
    if name.dynamic {
        return None;
    }
    let program = name.basename();
    if ALWAYS_WALK.contains(&program) {
        return Some(true);
    }
    if program == "tar" {
        return Some(tar_creates(inv));
    }
    let opts = options_of(program)?;
    let mut recursive = false;
    let mut unknown = false;
    let mut i = 1;
    while i < inv.len() {
        let a = &inv[i];
        i += 1;
        if a.dynamic {
            // `$FLAGS` may be `-r`; `"$dir/x"` cannot be an option.
            let t = a.text.as_str();
            if t.is_empty() || t.starts_with('-') {
                unknown = true;
            }
            continue;
        }
        let t = a.text.as_str();
        if t == "--" {
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            match long_option(long, opts.long) {
                Some(o) if opts.recursive_long.contains(&o) => recursive = true,
                Some("directories") => {
                    recursive |= long
                        .split_once('=')
                        .is_some_and(|(_, v)| "recurse".starts_with(v) && !v.is_empty())
                }
                Some(o) => {
                    let takes_value = opts.long.iter().any(|l| l.strip_suffix('=') == Some(o));
                    if takes_value && !long.contains('=') {
                        i += 1;
                    }
                }
                None => unknown = true,
            }
            continue;
        }
        let Some(cluster) = t.strip_prefix('-') else {
            continue;
        };
        if cluster.is_empty() {
            continue;
        }
        if program == "chmod"
            && cluster
                .bytes()
                .all(|b| b"rwxXstugoa+-=,0123456789".contains(&b))
        {
            // `chmod -w f`: a mode.
            continue;
        }
        let bytes = cluster.as_bytes();
        for (k, &c) in bytes.iter().enumerate() {
            if opts.recursive_short.contains(&c) {
                recursive = true;
            } else if opts.value_short.contains(&c) {
                let attached = &cluster[k + 1..];
                let value = if attached.is_empty() {
                    let v = inv.get(i).map(|v| v.text.as_str());
                    i += 1;
                    v
                } else {
                    Some(attached)
                };
                if c == b'd' && value.is_some_and(|v| v == "recurse") {
                    recursive = true;
                }
                break;
            } else if !opts.flag_short.contains(&c) {
                unknown = true;
            }
        }
    }
    if recursive {
        Some(true)
    } else if unknown {
        None
    } else {
        Some(false)
    }
}

/// `tar` creating, appending or updating an archive: it walks its operands
/// (unless `--no-recursion`).
fn tar_creates(inv: &[Arg]) -> bool {
    let mut creates = false;
    for (i, a) in inv.iter().enumerate().skip(1) {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if t == "--no-recursion" {
            return false;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            if ["create", "append", "update"]
                .iter()
                .any(|o| name.len() >= 2 && o.starts_with(name))
            {
                creates = true;
            }
        } else if let Some(c) = t.strip_prefix('-') {
            creates |= c.bytes().any(|b| matches!(b, b'c' | b'r' | b'u'));
        } else if i == 1 && t.bytes().all(|b| b.is_ascii_alphabetic()) {
            // Old style: `tar cf x.tar dir`.
            creates |= t.bytes().any(|b| matches!(b, b'c' | b'r' | b'u'));
        }
    }
    creates
}

/// Whether a command walks everything below the paths it names (`rm -r`,
/// `grep -r`, `find`, `du`, `tar c`, …): a directory it is given reaches
/// every mount below it. A recursion that cannot be read counts.
pub fn walks_operands(inv: &[Arg]) -> bool {
    let Some(name) = inv.first() else {
        return false;
    };
    if name.dynamic {
        return false;
    }
    let program = name.basename();
    if options_of(program).is_none() && !ALWAYS_WALK.contains(&program) && program != "tar" {
        return false;
    }
    recursion(inv) != Some(false)
}

/// Searchers whose first operand is the pattern, not a path — unless an
/// option gives the pattern (`-e`, `-f`, `--regexp`, `--file`).
pub fn pattern_operand(inv: &[Arg]) -> bool {
    let Some(name) = inv.first().filter(|a| !a.dynamic) else {
        return false;
    };
    if !matches!(
        name.basename(),
        "grep" | "egrep" | "fgrep" | "rg" | "ag" | "ack"
    ) {
        return false;
    }
    !inv[1..].iter().any(|a| {
        let t = a.text.as_str();
        !a.dynamic
            && (t.starts_with("--regexp")
                || t.starts_with("--file")
                || (t.starts_with('-')
                    && !t.starts_with("--")
                    && t[1..].bytes().any(|b| b == b'e' || b == b'f')))
    })
}

/// Non-option arguments (everything after `--`, too); for a program with
/// an option table, option values are skipped.
fn operands(inv: &[Arg]) -> Vec<&Arg> {
    let opts = inv
        .first()
        .filter(|a| !a.dynamic)
        .and_then(|a| options_of(a.basename()));
    let mut out = Vec::new();
    let mut options_done = false;
    let mut skip_next = false;
    for a in inv.iter().skip(1) {
        if skip_next {
            skip_next = false;
            continue;
        }
        if !options_done && !a.dynamic {
            if a.text == "--" {
                options_done = true;
                continue;
            }
            if a.text.starts_with('-') && a.text.len() > 1 {
                if let Some(o) = opts {
                    if let Some(long) = a.text.strip_prefix("--") {
                        skip_next = !long.contains('=')
                            && long_option(long, o.long).is_some_and(|n| {
                                o.long.iter().any(|l| l.strip_suffix('=') == Some(n))
                            });
                    } else {
                        let c = &a.text.as_bytes()[1..];
                        if let Some(k) = c.iter().position(|b| o.value_short.contains(b)) {
                            skip_next = k + 1 == c.len();
                        }
                    }
                }
                continue;
            }
        }
        out.push(a);
    }
    out
}

/// Where a static path may resolve, once per possible cwd; `None` where
/// it cannot be known (a relative path in an unknown cwd, another
/// process's cwd).
fn places(cwd: &Cwd, text: &str) -> Vec<Option<String>> {
    match cwd {
        Cwd::Known(dirs) if !dirs.is_empty() => dirs
            .iter()
            .map(|d| scope::resolve(d, text, Some(d)).ok())
            .collect(),
        _ if text.starts_with('/') => vec![scope::resolve("/", text, None).ok()],
        _ => vec![None],
    }
}

/// The operating system's own directories: a recursive removal of one is
/// the removal of `/` in part. Site and user data (`/srv`, `/opt`, `/mnt`)
/// are not the system; `/home` is guarded as the home's parent.
const SYSTEM_DIRS: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/root",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/usr/bin",
    "/usr/lib",
    "/usr/local",
    "/usr/sbin",
    "/usr/share",
    "/var",
    "/var/lib",
];

/// `/`, the system's directories, the home and every directory above it:
/// what a recursive removal must never reach.
fn guarded(home: &str) -> Vec<String> {
    let mut out = vec!["/".to_string()];
    out.extend(SYSTEM_DIRS.iter().map(|d| (*d).to_string()));
    let mut h = normalize("/", home);
    while h != "/" {
        out.push(h.clone());
        h = match h.rfind('/') {
            Some(0) | None => "/".to_string(),
            Some(i) => h[..i].to_string(),
        };
    }
    out
}

/// How dangerous a removal (or recursive change) of `op` is: it names one
/// of `guarded`, a glob can match one or every child of one, or it might.
fn target_danger(op: &Arg, r: &Removal<'_>, guarded: &[String]) -> Danger {
    if op.find_placeholder {
        // `{}` is every path find walks: each root and all below it.
        let mut worst = Danger::No;
        for root in r.find_roots {
            let sub = Arg {
                text: op.text.replace("{}", &root.text),
                find_placeholder: false,
                ..root.clone()
            };
            worst = worst.max(target_danger(&sub, r, guarded));
        }
        return worst;
    }
    if op.dynamic {
        // The static skeleton: `$X/` or `"$Y"` could be anything at all.
        // A skeleton ending in `/` may end in a dynamic part (`/tmp/$X`,
        // `build/$X`): that part may be `..` and climb anywhere.
        let skel = op.text.trim_end_matches('/');
        // A dynamic part inside `/proc/…` may be a pid: `/proc/$$/root`.
        if skel.is_empty()
            || skel == "/*"
            || skel == "*"
            || op.text.ends_with('/')
            || normalize("/", skel).starts_with("/proc")
        {
            return Danger::Maybe;
        }
        let dirs = match r.cwd {
            Cwd::Known(d) => d.to_vec(),
            Cwd::Unknown => vec!["/".to_string()],
        };
        return if dirs
            .iter()
            .any(|d| guarded.contains(&normalize(d, &op.text)))
        {
            Danger::Maybe
        } else {
            Danger::No
        };
    }
    if op.tilde_user {
        // `~agent` is the home when it names the frame's own user.
        let rest = &op.text[1..];
        let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
        if crate::arg::basename(r.home) != user {
            return Danger::No;
        }
        let own = Arg {
            text: format!("{}/{tail}", r.home),
            tilde_user: false,
            ..op.clone()
        };
        return target_danger(&own, r, guarded);
    }
    let mut worst = Danger::No;
    for place in places(r.cwd, &op.text) {
        let d = match place {
            None => unknown_place_danger(&op.text),
            Some(p) if op.glob => glob_danger(&p, guarded),
            Some(p) => {
                if guarded.contains(&p) {
                    Danger::Yes
                } else {
                    Danger::No
                }
            }
        };
        worst = worst.max(d);
    }
    // A glob that may match `..` may climb (`rm -rf .?/*` from a project
    // in the home): judged climbed too.
    if op.glob
        && worst != Danger::Yes
        && let Some(climbed) = crate::path_words::climbing(&op.text)
    {
        let up = Arg {
            text: climbed,
            ..op.clone()
        };
        worst = worst.max(target_danger(&up, r, guarded));
    }
    worst
}

/// A relative operand in an unknown cwd (or through another process's
/// cwd): `*`, `.`, `..` and the like could be `/` or the home.
fn unknown_place_danger(text: &str) -> Danger {
    let first = text.split('/').find(|c| !c.is_empty()).unwrap_or(".");
    if text.starts_with('/')
        || first == "."
        || text.split('/').any(|c| c == "..")
        || scope::first_glob(first).is_some()
    {
        Danger::Maybe
    } else {
        Danger::No
    }
}

/// A glob (absolute, normalised) judged by what it can match: one of the
/// guarded directories, every child of one (`/*`, `/.[!.]*`, `~/*`), or
/// some child of `/` (`/u*`).
fn glob_danger(pattern: &str, guarded: &[String]) -> Danger {
    if guarded.iter().any(|g| scope::pattern_matches(pattern, g)) {
        return Danger::Yes;
    }
    let (prefix, dir) = scope::glob_prefix(pattern);
    let component = prefix.rsplit('/').next().unwrap_or("");
    if guarded.contains(&dir) && matches!(component, "" | ".") {
        return Danger::Yes;
    }
    if dir == "/" {
        return Danger::Maybe;
    }
    Danger::No
}

fn rm(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let guarded = guarded(r.home);
    let recursive = recursion(inv);
    let mut maybe = None;
    for op in operands(inv) {
        // Without recursion only `find`'s placeholder removes a tree
        // (`find / -exec rm {} +` removes every file under `/`).
        if recursive == Some(false) && !op.find_placeholder {
            continue;
        }
        match target_danger(op, r, &guarded) {
            Danger::Yes if recursive == Some(true) || op.find_placeholder => {
                return Some(Hit::Deny(format!("`rm -r` of {}", describe(op))));
            }
            Danger::Yes => {
                maybe = Some(Hit::Maybe(format!(
                    "`rm` of {} with an option that cannot be read (it may be `-r`)",
                    describe(op)
                )))
            }
            Danger::Maybe => {
                maybe = Some(Hit::Maybe(format!(
                    "`rm -r` of {}, which may be / or the home directory",
                    describe(op)
                )))
            }
            Danger::No => {}
        }
    }
    if r.trailing
        && recursive != Some(false)
        && let Some(words) = r.stdin_words
    {
        // `echo / | xargs rm -rf`: the operands are visible.
        let mut worst = Danger::No;
        for w in words {
            match target_danger(w, r, &guarded) {
                Danger::Yes => {
                    return Some(Hit::Deny(format!(
                        "`rm -r` of `{}`, read from stdin",
                        w.text
                    )));
                }
                d => worst = worst.max(d),
            }
        }
        if worst == Danger::No && maybe.is_none() {
            return None;
        }
    }
    if maybe.is_none() && r.trailing && recursive != Some(false) {
        maybe = Some(Hit::Maybe(
            "`rm -r` of operands read from stdin or a file: they cannot be known".to_string(),
        ));
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

/// `mv ~ /tmp/x`, `mv /usr /old`: moving `/`, the home, a directory above
/// it or a system directory away removes it from where everything expects
/// it — `rm -r` by another name. Every operand but the destination is a
/// source; with `-t DIR` every operand is.
fn mv_away(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let guarded = guarded(r.home);
    let ops = operands(inv);
    // `--target-directory`, or `t` in a short cluster before the letter
    // whose value ends it (`-vt DIR`, but not `-S.txt`).
    let target_option = inv.iter().skip(1).any(|a| {
        let t = a.text.as_str();
        !a.dynamic
            && (t.starts_with("--target-directory")
                || t.strip_prefix('-').is_some_and(|cluster| {
                    !cluster.starts_with('-')
                        && cluster
                            .bytes()
                            .take_while(|b| *b != b'S')
                            .any(|b| b == b't')
                }))
    });
    let sources = if target_option {
        &ops[..]
    } else {
        &ops[..ops.len().saturating_sub(1)]
    };
    // Only a provable one: `mv "$f" "$f.bak"` is everyday renaming, and a
    // dynamic source is judged by the scope as any dynamic path is.
    sources
        .iter()
        .find(|op| target_danger(op, r, &guarded) == Danger::Yes)
        .map(|op| {
            Hit::Deny(format!(
                "`mv` of {} moves it away: its removal by another name",
                describe(op)
            ))
        })
}

/// `chmod -R`, `chown -R`, `chgrp -R` of `/` (in any spelling of `/`).
fn recursive_on_root(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let recursive = recursion(inv);
    let name = inv.first()?.basename();
    let system = system_guarded();
    let home = guarded(r.home);
    let mut maybe = None;
    // The first operand is the mode or the owner, not a file, unless
    // `--reference=F` gives them.
    let by_reference = inv
        .iter()
        .any(|a| !a.dynamic && a.text.starts_with("--reference"));
    let ops = operands(inv);
    let skip = if name == "chattr" {
        // `chattr -R +i /`; a mode starting with `-` reads as an option.
        ops.first().is_some_and(|o| o.text.starts_with(['+', '=']))
    } else {
        !by_reference
    };
    for op in ops.into_iter().skip(usize::from(skip)) {
        // Without recursion only `find`'s placeholder reaches a tree
        // (`find / -exec chmod 777 {} +` is `chmod -R 777 /`).
        if recursive == Some(false) && !op.find_placeholder {
            continue;
        }
        let whole = recursive == Some(true) || op.find_placeholder;
        match target_danger(op, r, &system) {
            Danger::Yes if whole => {
                return Some(Hit::Deny(format!(
                    "recursive `{name}` of {}: the system's files",
                    describe(op)
                )));
            }
            Danger::No => {}
            _ => {
                maybe = Some(Hit::Maybe(format!(
                    "recursive `{name}` of {}, which may be / or a system directory",
                    describe(op)
                )));
                continue;
            }
        }
        // The home and the directories above it: every file of the person
        // changes owner or mode at once. Held for a person, not denied
        // (`chown -R me ~` mends a home after a root-run tool).
        if target_danger(op, r, &home) != Danger::No {
            maybe = Some(Hit::Maybe(format!(
                "recursive `{name}` of {}, which is or may be the home directory or above it",
                describe(op)
            )));
        }
    }
    if maybe.is_none() && r.trailing && recursive == Some(true) {
        maybe = Some(Hit::Maybe(format!(
            "recursive `{name}` of operands read from stdin or a file"
        )));
    }
    maybe
}

/// `/` and the system's directories, without the home.
fn system_guarded() -> Vec<String> {
    let mut out = vec!["/".to_string()];
    out.extend(SYSTEM_DIRS.iter().map(|d| (*d).to_string()));
    out
}

/// Recursive removal by another program's name: `cmake -E remove_directory
/// D` and `cmake -E rm -r D` (its portable `rm -rf`), `rimraf D` (npm's):
/// judged as `rm -rf` of the same operands.
fn removal_by_other_name(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let name = inv.first()?.basename();
    let operands: Vec<Arg> = match name {
        "cmake" => {
            let e = inv.iter().position(|a| a.is("-E"))?;
            let verb = inv.get(e + 1)?;
            let rest = &inv[e + 2..];
            let recursive = match verb.text.as_str() {
                "remove_directory" => true,
                "rm" => rest
                    .iter()
                    .any(|a| a.text.starts_with('-') && a.text[1..].contains(['r', 'R'])),
                _ if verb.dynamic => true,
                _ => false,
            };
            if !recursive {
                return None;
            }
            rest.iter()
                .filter(|a| !a.text.starts_with('-'))
                .cloned()
                .collect()
        }
        "rimraf" => inv[1..]
            .iter()
            .filter(|a| a.dynamic || !a.text.starts_with('-'))
            .cloned()
            .collect(),
        _ => return None,
    };
    let mut argv = vec![Arg::lit("rm"), Arg::lit("-rf"), Arg::lit("--")];
    argv.extend(operands);
    rm(&argv, r).map(|hit| match hit {
        Hit::Deny(d) => Hit::Deny(format!("`{name}`: {d}")),
        Hit::Maybe(m) => Hit::Maybe(format!("`{name}`: {m}")),
    })
}

/// `rsync --delete SRC /` (any `--del…` option): whatever the source lacks
/// is removed from the destination, so into `/` or the home it is `rm -rf`
/// of what is there by another name.
fn rsync_delete(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    let deletes = inv.iter().skip(1).any(|a| {
        !a.dynamic && {
            let name = a.text.split('=').next().unwrap_or(&a.text);
            name.starts_with("--del")
        }
    });
    if !deletes {
        return None;
    }
    let dest = operands(inv).into_iter().last()?;
    match target_danger(dest, r, &guarded(r.home)) {
        Danger::Yes => Some(Hit::Deny(format!(
            "`rsync --delete` into {}: it removes everything there the source lacks",
            describe(dest)
        ))),
        Danger::Maybe => Some(Hit::Maybe(format!(
            "`rsync --delete` into {}, which may be / or the home directory",
            describe(dest)
        ))),
        Danger::No => None,
    }
}

/// `find / -delete` (or `find ~ -delete`): `rm -rf /` by another name.
/// (`find / -exec rm {} +` is the inner `rm`'s, through `{}`.)
fn find_delete(inv: &[Arg], r: &Removal<'_>) -> Option<Hit> {
    if !inv.iter().any(|a| a.is("-delete")) {
        return None;
    }
    if inv.iter().any(|a| a.is("-files0-from")) {
        return Some(Hit::Maybe(
            "`find -files0-from … -delete`: start paths read from a file".to_string(),
        ));
    }
    let guarded = guarded(r.home);
    let mut maybe = None;
    let mut roots = inv
        .iter()
        .skip(1)
        .skip_while(|a| !a.dynamic && (matches!(a.text.as_str(), "-H" | "-L" | "-P")))
        .take_while(|a| a.dynamic || !(a.text.starts_with('-') || a.text == "(" || a.text == "!"))
        .peekable();
    roots.peek()?;
    for root in roots {
        match target_danger(root, r, &guarded) {
            Danger::Yes => return Some(Hit::Deny(format!("`find {} -delete`", root.text))),
            Danger::Maybe => {
                maybe = Some(Hit::Maybe(format!(
                    "`find -delete` from {}, which may be / or the home directory",
                    describe(root)
                )))
            }
            Danger::No => {}
        }
    }
    maybe
}

/// `kill -9 -1`: every process the user may signal.
fn kill_all(inv: &[Arg]) -> Option<Hit> {
    let name = inv[0].basename();
    if matches!(name, "pkill" | "killall") {
        return every_process_of_a_user(name, inv);
    }
    if name != "kill" {
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

/// `pkill -u USER`, `killall -u USER` with no pattern or name: every
/// process of the user — `kill -1` by another name (berth's own among
/// them, in runner mode).
fn every_process_of_a_user(name: &str, inv: &[Arg]) -> Option<Hit> {
    // Short options that take a value; long ones that do.
    let values: &[u8] = if name == "pkill" {
        b"gGPstuUF"
    } else {
        b"usoyZ"
    };
    const LONG_VALUES: &[&str] = &[
        "user",
        "euid",
        "uid",
        "signal",
        "group",
        "parent",
        "session",
        "terminal",
        "pidfile",
        "older-than",
        "younger-than",
        "context",
        "ns",
        "nslist",
    ];
    let mut by_user = false;
    let mut operands = 0;
    let mut dynamic = false;
    let mut words = inv.iter().skip(1);
    while let Some(a) = words.next() {
        let t = a.text.as_str();
        if a.dynamic {
            // A dynamic option may be `-u`; a dynamic operand a pattern
            // that matches everything.
            dynamic = true;
            if !t.starts_with('-') {
                operands += 1;
            }
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (n, v) = long.split_once('=').unwrap_or((long, ""));
            by_user |= matches!(n, "user" | "euid" | "uid");
            if v.is_empty() && LONG_VALUES.contains(&n) {
                words.next();
            }
            continue;
        }
        if let Some(opts) = t.strip_prefix('-').filter(|o| !o.is_empty()) {
            // `-9`, `-KILL`: a signal.
            if opts
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
            {
                continue;
            }
            if let Some(k) = opts.bytes().position(|b| values.contains(&b)) {
                by_user |= matches!(opts.as_bytes()[k], b'u' | b'U');
                if k + 1 == opts.len() {
                    words.next();
                }
            }
            continue;
        }
        operands += 1;
    }
    if !by_user {
        return None;
    }
    match (operands, dynamic) {
        (0, false) => Some(Hit::Deny(format!(
            "`{name} -u` with no pattern: signals every process of the user"
        ))),
        (_, true) => Some(Hit::Maybe(format!(
            "`{name} -u` with a word known only at run time: it may signal every process of the user"
        ))),
        _ => None,
    }
}

/// Programs that write the devices they are given: every operand is a
/// target.
fn writes_devices(program: &str) -> bool {
    program.starts_with("mkfs")
        || matches!(
            program,
            "mke2fs"
                | "mkswap"
                | "mkdosfs"
                | "mkntfs"
                | "mkexfatfs"
                | "mkudffs"
                | "wipefs"     // erases signatures
                | "blkdiscard" // discards every block
                | "sgdisk"     // `--zap-all` and every change rewrites the table
                | "sfdisk"
                | "gdisk"
                | "cgdisk"
                | "fdisk"
                | "cfdisk"
                | "parted"
                | "shred"      // overwrites in place
                | "cryptsetup" // `luksFormat`
                | "pvcreate"
                | "mdadm"
                | "zpool"
                | "tee"
        )
}

/// Programs that only read (or only name) what they are given: a block
/// device among their arguments is not written.
fn reads_only(program: &str) -> bool {
    matches!(
        program,
        "cat"
            | "head"
            | "tail"
            | "less"
            | "more"
            | "od"
            | "hexdump"
            | "xxd"
            | "strings"
            | "file"
            | "stat"
            | "ls"
            | "lsblk"
            | "blkid"
            | "findmnt"
            | "df"
            | "du"
            | "wc"
            | "cmp"
            | "diff"
            | "md5sum"
            | "sha1sum"
            | "sha256sum"
            | "sha512sum"
            | "b2sum"
            | "cksum"
            | "smartctl"
            | "udevadm"
            | "readlink"
            | "realpath"
            | "test"
            | "["
            | "[["
            | "echo"
            | "printf"
            | "grep"
            | "dumpe2fs"
            | "pv"
    )
}

/// The device templates: a block device written by any program or path
/// spelling. Known writers (`mkfs.*`, `wipefs`, `sgdisk`, `tee`, …) on a
/// device, `dd of=`, an output option's value (`-o`, `--output=`,
/// `-sSLo/dev/sda`), the target of `cp`/`mv`/`install`: deny. A device
/// named to any other program that is not known to only read: it may
/// write it, so it is not auto-approved.
fn device_write(inv: &[Arg], cwd: &Cwd) -> Option<Hit> {
    let program = inv.first()?.basename();
    // Most commands name nothing under `/dev` and run far from it.
    if !near_dev(cwd)
        && !inv[1..]
            .iter()
            .any(|a| a.dynamic || a.glob || crate::substring::contains(&a.text, "dev"))
    {
        return None;
    }
    let listing = inv[1..]
        .iter()
        .any(|a| a.is("-l") || a.is("--list") || a.is("-L"));
    let writer =
        writes_devices(program) && !(listing && matches!(program, "fdisk" | "sfdisk" | "parted"));
    // A word that cannot be known may be the device for a disk tool and
    // `dd of=`; for `tee` or `curl -o` it is as likely a log file.
    let strict = writer && program != "tee";
    let reader = reads_only(program) || (listing && !writer);
    let mut maybe = None;
    let mut hit = |value: &Arg, output: bool| -> Option<Hit> {
        let d = device_danger(value, cwd, strict || (output && program == "dd"));
        match d {
            Danger::Yes if writer || output => Some(Hit::Deny(format!(
                "`{program}` writing the block device {}",
                value.text
            ))),
            Danger::No => None,
            _ if reader && !output => None,
            _ => {
                maybe = maybe.take().or(Some(format!(
                    "`{program}` given {}, which may be a block device it writes",
                    describe(value)
                )));
                None
            }
        }
    };
    let last_is_target = matches!(program, "cp" | "mv" | "install" | "cat");
    let ops = operands(inv);
    let mut next_is_output = false;
    for a in inv.iter().skip(1) {
        if next_is_output {
            next_is_output = false;
            if let Some(h) = hit(a, true) {
                return Some(h);
            }
            continue;
        }
        if a.dynamic {
            // `of=$OUT`: the key is known, the value is not.
            let (output, value) = match a.text.split_once('=') {
                Some((key, value)) => {
                    let key = key.trim_start_matches('-');
                    if program == "dd" && key == "if" {
                        continue;
                    }
                    let v = Arg {
                        text: value.to_string(),
                        ..a.clone()
                    };
                    (program == "dd" && key == "of" || is_output_option(key), v)
                }
                None => (false, a.clone()),
            };
            if let Some(h) = hit(&value, output) {
                return Some(h);
            }
            continue;
        }
        let t = a.text.as_str();
        // `of=/dev/sda`, `--output=/dev/sda`, `--device=/dev/sda`.
        if let Some((key, value)) = t.split_once('=') {
            let key = key.trim_start_matches('-');
            let output = program == "dd" && key == "of" || is_output_option(key);
            if program == "dd" && key == "if" {
                continue;
            }
            let v = Arg {
                text: value.to_string(),
                ..a.clone()
            };
            if let Some(h) = hit(&v, output) {
                return Some(h);
            }
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            next_is_output = is_output_option(long);
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-').filter(|c| !c.is_empty()) {
            // `-o FILE`, `-sSLo FILE`, `-o/dev/sda`, `-sSLo/dev/sda`.
            if let Some(k) = cluster.find(['o', 'O']) {
                let attached = &cluster[k + 1..];
                if attached.is_empty() {
                    next_is_output = true;
                } else if attached.starts_with(['/', '.', '~']) {
                    let v = Arg {
                        text: attached.to_string(),
                        ..a.clone()
                    };
                    if let Some(h) = hit(&v, true) {
                        return Some(h);
                    }
                }
            }
            continue;
        }
        let target =
            last_is_target && ops.len() > 1 && ops.last().is_some_and(|l| std::ptr::eq(*l, a));
        if let Some(h) = hit(a, target) {
            return Some(h);
        }
    }
    maybe.map(Hit::Maybe)
}

/// Whether a relative path from the cwd may land in `/dev` without naming
/// it (`sda` in `/dev`, `dev/sda` in `/`), or the cwd is not known.
fn near_dev(cwd: &Cwd) -> bool {
    match cwd {
        Cwd::Known(dirs) => dirs.iter().any(|d| scope::under(d, "/dev") || d == "/"),
        Cwd::Unknown => true,
    }
}

/// Long options that name where output goes.
fn is_output_option(name: &str) -> bool {
    matches!(
        name,
        "o" | "of" | "output" | "output-document" | "out" | "outfile" | "out-file" | "output-file"
    )
}

/// Device names a glob is tried against (one of each kind).
const DEVICE_SAMPLES: &[&str] = &[
    "/dev/sda",
    "/dev/sdb1",
    "/dev/hda",
    "/dev/vda",
    "/dev/xvda",
    "/dev/nvme0n1",
    "/dev/nvme0n1p1",
    "/dev/mmcblk0",
    "/dev/pmem0",
    "/dev/loop0",
    "/dev/dm-0",
    "/dev/md0",
    "/dev/sr0",
    "/dev/nbd0",
    "/dev/zram0",
    "/dev/mem",
    "/dev/kmem",
    "/dev/port",
    "/dev/mapper/root",
    "/dev/disk/by-id/x",
    "/dev/block/8:0",
    "/dev/sg0",
    "/dev/fd0",
    "/dev/mtdblock0",
    "/dev/root",
];

/// Whether a word names a block device: by any path spelling
/// (`//dev/sda`, `./../../dev/sda`, `sda` in `/dev`,
/// `/proc/self/root/dev/sda`) or a glob that can match one.
/// `strict`: for a known writer, a word that cannot be known may be one.
fn device_danger(a: &Arg, cwd: &Cwd, strict: bool) -> Danger {
    if a.proc_sub || a.package {
        return Danger::No;
    }
    if a.dynamic {
        let skel = a.text.as_str();
        return if crate::substring::contains(skel, "/dev/") || (strict && !skel.contains('/')) {
            Danger::Maybe
        } else {
            Danger::No
        };
    }
    let t = a.text.as_str();
    if !(crate::substring::contains(t, "dev") || a.glob || (near_dev(cwd) && !t.starts_with('/'))) {
        return Danger::No;
    }
    let mut worst = Danger::No;
    for place in places(cwd, t) {
        let d = match place {
            None => {
                let base = crate::arg::basename(t);
                if is_block_device(&format!("/dev/{base}")) {
                    Danger::Maybe
                } else {
                    Danger::No
                }
            }
            Some(p) if a.glob => {
                if DEVICE_SAMPLES.iter().any(|s| scope::pattern_matches(&p, s)) {
                    Danger::Yes
                } else {
                    Danger::No
                }
            }
            Some(p) => {
                if is_block_device(&p) {
                    Danger::Yes
                } else {
                    Danger::No
                }
            }
        };
        worst = worst.max(d);
    }
    worst
}

/// Programs whose first operand is a subcommand the limits compare
/// (`git push`, `npm publish`, `kubectl apply`): a glob there (`git p?sh`,
/// `git pus[h]`) could become any of them.
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "deno",
    "cargo",
    "go",
    "docker",
    "podman",
    "buildah",
    "kubectl",
    "helm",
    "gh",
    "glab",
    "hub",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "pipx",
    "conda",
    "gem",
    "bundle",
    "rustup",
    "terraform",
    "terragrunt",
    "tofu",
    "pulumi",
    "gcloud",
    "aws",
    "az",
    "systemctl",
    "apt",
    "apt-get",
    "brew",
    "dotnet",
    "fly",
    "flyctl",
    "vercel",
    "vc",
    "netlify",
    "ntl",
    "firebase",
    "heroku",
    "wrangler",
    "composer",
    "twine",
    "cdk",
    "sam",
    "serverless",
    "sls",
    "skaffold",
    "ansible-galaxy",
    "nix",
];

/// Subcommands that take a subcommand of their own (`gh pr create`,
/// `docker compose push`, `npm dist-tag add`, `git remote add`).
const SUBCOMMAND_GROUPS: &[&str] = &[
    "pr",
    "repo",
    "release",
    "issue",
    "workflow",
    "gist",
    "secret",
    "api",
    "compose",
    "buildx",
    "image",
    "container",
    "manifest",
    "network",
    "volume",
    "system",
    "context",
    "plugin",
    "rollout",
    "config",
    "set",
    "create",
    "dist-tag",
    "owner",
    "team",
    "org",
    "access",
    "hook",
    "token",
    "profile",
    "pkg",
    "remote",
    "stash",
    "submodule",
    "worktree",
    "notes",
    "lfs",
    "subtree",
    "bisect",
    "mr",
    "pages",
    "pip",
    "tool",
    "python",
    "cache",
    "deployments",
    "functions",
    "apps",
    "projects",
    "alias",
    "extension",
    "auth",
    "sites",
];

/// Programs whose commands nest deeper than one group, and how many words
/// name a command (`aws s3 cp`, `az webapp up`, `gcloud compute instances
/// create`).
const DEEP_SUBCOMMANDS: &[(&str, usize)] = &[("aws", 2), ("az", 2), ("nix", 2), ("gcloud", 3)];

/// A glob in a command's subcommand position is opaque: the leading words
/// that are not options (and not an option's value), through every
/// subcommand group.
fn subcommand_glob(inv: &[Arg], argv: &[Arg]) -> Option<Hit> {
    let name = inv.first()?;
    let program = name.basename();
    if name.dynamic || !inv.iter().any(|a| a.glob) || !SUBCOMMAND_PROGRAMS.contains(&program) {
        return None;
    }
    let mut depth = DEEP_SUBCOMMANDS
        .iter()
        .find(|(p, _)| *p == program)
        .map_or(1, |(_, d)| *d);
    let mut after_option = false;
    for a in argv.iter().skip(1) {
        if a.is("--") {
            break;
        }
        if a.glob {
            return Some(Hit::Maybe(format!(
                "a glob (`{}`) where `{program}` reads its subcommand: it could expand to any",
                a.text
            )));
        }
        if !a.dynamic && a.text.starts_with('-') && a.text.len() > 1 {
            // `-n prod apply`: the word after an option may be its value.
            after_option = !a.text.contains('=');
            continue;
        }
        if after_option {
            after_option = false;
            continue;
        }
        if !a.dynamic && SUBCOMMAND_GROUPS.contains(&a.text.as_str()) {
            depth += 1;
        }
        depth -= 1;
        if depth == 0 {
            break;
        }
    }
    None
}

/// Block devices and raw memory: `/dev/sda`, `/dev/nvme0n1`, `/dev/pmem0`,
/// `/dev/mapper/x`, `/dev/disk/by-id/x`, … (not `/dev/null`, `/dev/zero`,
/// `/dev/tty`, `/dev/stdout`).
pub fn is_block_device(path: &str) -> bool {
    let Some(dev) = path.strip_prefix("/dev/") else {
        return false;
    };
    if dev.starts_with("disk/")
        || dev.starts_with("mapper/")
        || dev.starts_with("block/")
        || dev.starts_with("md/")
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
        || digits("pmem")
        || digits("loop")
        || digits("dm-")
        || digits("md")
        || digits("sr")
        || digits("nbd")
        || digits("zram")
        || digits("ram")
        || digits("rbd")
        || digits("drbd")
        || digits("zd")
        || digits("sg")
        || digits("fd")
        || digits("mtd")
        || digits("mtdblock")
        || digits("ublkb")
        || digits("bcache")
        || dev == "root"
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
