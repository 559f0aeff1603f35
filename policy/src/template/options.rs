//! How the templates read a command's options: which programs recurse and
//! by which spellings (`-R`, `-fr`, `--recu`), and which words are its
//! operands. One table per program whose recursion is an option, read the
//! way its getopt reads it; [`recursion`] is the one question every
//! template asks.

use super::*;

/// One program's options, as far as the templates read them: which short
/// letters recurse, which take a value, and the long options (GNU
/// `getopt_long` accepts any unambiguous prefix of one).
pub(super) struct Options {
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
pub(super) const RM: Options = Options {
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
pub(super) const CHMOD: Options = Options {
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
pub(super) const CHOWN: Options = Options {
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
pub(super) const CP: Options = Options {
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
pub(super) const MV: Options = Options {
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
pub(super) const GREP: Options = Options {
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
pub(super) const LS: Options = Options {
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
pub(super) const ZIP: Options = Options {
    recursive_short: b"rR",
    flag_short: b"",
    value_short: b"",
    recursive_long: &["recurse-paths", "recurse-patterns"],
    long: &["recurse-paths", "recurse-patterns"],
};

/// `rsync -r`, `-a` (archive implies recursion).
pub(super) const RSYNC: Options = Options {
    recursive_short: b"ra",
    flag_short: b"",
    value_short: b"",
    recursive_long: &["recursive", "archive"],
    long: &["recursive", "archive"],
};

/// `scp -r`.
pub(super) const SCP: Options = Options {
    recursive_short: b"r",
    flag_short: b"346ABCOpqRTv",
    value_short: b"cDFiJlmoPsSX",
    recursive_long: &[],
    long: &[],
};

/// The option table of a program whose recursion is an option.
pub(super) fn options_of(program: &str) -> Option<&'static Options> {
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
pub(super) const ALWAYS_WALK: &[&str] = &[
    "find", "du", "rg", "ag", "ack", "fd", "fdfind", "tree", "chattr",
];

/// A long option as `getopt_long` reads it: an exact name, or the one
/// option an abbreviation names. `None`: unknown or ambiguous (the program
/// refuses it).
pub(super) fn long_option(word: &str, table: &'static [&'static str]) -> Option<&'static str> {
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

pub(super) fn recursion_by_table(inv: &[Arg]) -> Option<bool> {
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
pub(super) fn tar_creates(inv: &[Arg]) -> bool {
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
pub(super) fn operands(inv: &[Arg]) -> Vec<&Arg> {
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
