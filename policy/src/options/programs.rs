//! Option tables of programs in the deny-template and program-running
//! classes that are not wrappers: what each option takes, and a line on why
//! each dangerous one matters. An option a table does not list makes the
//! segment opaque ([`unknown_option`]): `rm --recu` must be read as
//! `--recursive`, and an option berth cannot read might be one that is.

use super::{HELP_VERSION, Opt, Parsed, Role, Syntax, flag, optional, parse, value};
use crate::arg::Arg;

/// GNU `rm`.
pub const RM: &[Opt] = &[
    flag(b'r', "recursive"), // reaches everything below: the deny templates read it
    flag(b'R', ""),          // the same
    flag(b'f', "force"),
    flag(b'i', ""),
    flag(b'I', ""),
    optional(0, "interactive"),
    flag(b'd', "dir"),
    flag(b'v', "verbose"),
    flag(0, "one-file-system"),
    flag(0, "no-preserve-root"), // lets `rm -r /` run: the templates deny it either way
    optional(0, "preserve-root"),
    HELP_VERSION[0],
    HELP_VERSION[1],
];

/// GNU `chmod`: its mode may look like options (`chmod -w f`, `-rwx`), so
/// the mode letters are listed as flags, as chmod's own getopt string does.
pub const CHMOD: &[Opt] = &[
    flag(b'R', "recursive"), // reaches everything below: `chmod -R … /` is denied
    flag(b'c', "changes"),
    flag(b'f', "silent"),
    flag(0, "quiet"),
    flag(b'v', "verbose"),
    flag(0, "no-preserve-root"),
    flag(0, "preserve-root"),
    value(0, "reference"),
    flag(b'r', ""),
    flag(b'w', ""),
    flag(b'x', ""),
    flag(b'X', ""),
    flag(b's', ""),
    flag(b't', ""),
    flag(b'u', ""),
    flag(b'g', ""),
    flag(b'o', ""),
    flag(b'a', ""),
    flag(b',', ""),
    flag(b'+', ""),
    flag(b'=', ""),
    flag(b'0', ""),
    flag(b'1', ""),
    flag(b'2', ""),
    flag(b'3', ""),
    flag(b'4', ""),
    flag(b'5', ""),
    flag(b'6', ""),
    flag(b'7', ""),
    HELP_VERSION[0],
    HELP_VERSION[1],
];

/// GNU `chown` and `chgrp`.
pub const CHOWN: &[Opt] = &[
    flag(b'R', "recursive"), // reaches everything below: `chown -R … /` is denied
    flag(b'c', "changes"),
    flag(b'f', "silent"),
    flag(0, "quiet"),
    flag(b'v', "verbose"),
    flag(0, "dereference"),
    flag(b'h', "no-dereference"),
    value(0, "from"),
    value(0, "reference"),
    flag(0, "no-preserve-root"),
    flag(0, "preserve-root"),
    flag(b'H', ""),
    flag(b'L', ""),
    flag(b'P', ""),
    HELP_VERSION[0],
    HELP_VERSION[1],
];

/// GNU `sed`.
pub const SED: &[Opt] = &[
    value(b'e', "expression"), // sed's own language: `e` and `s///e` run commands (sed.rs reads it)
    value(b'f', "file").role(Role::Runs), // a script from a file berth cannot see
    optional(b'i', "in-place"),
    flag(b'n', "quiet"),
    flag(0, "silent"),
    flag(b'E', "regexp-extended"),
    flag(b'r', ""),
    flag(b's', "separate"),
    flag(b'u', "unbuffered"),
    flag(b'z', "null-data"),
    value(b'l', "line-length"),
    flag(b'b', "binary"),
    flag(0, "posix"),
    flag(0, "debug"),
    flag(0, "sandbox"),
    flag(0, "follow-symlinks"),
    HELP_VERSION[0],
    HELP_VERSION[1],
];

/// GNU `tar`'s options that run a program, by their full long names; a
/// long option that abbreviates one of them is it.
pub const TAR_RUNS: &[Opt] = &[
    value(0, "to-command").role(Role::Runs), // pipes each extracted file to a shell command
    value(b'I', "use-compress-program").role(Role::Runs), // the compressor is any program
    value(b'F', "info-script").role(Role::Runs), // runs a script at the end of each volume
    value(0, "new-volume-script").role(Role::Runs), // the same
    value(0, "rsh-command").role(Role::Runs), // the remote shell for `host:file` archives
    value(0, "checkpoint-action").role(Role::Runs), // `exec=CMD` runs a command
    value(0, "rmt-command").role(Role::Runs), // the remote tape program
];

/// GNU tar's long options that share a prefix with one in [`TAR_RUNS`]
/// (an exact name is never an abbreviation of another).
const TAR_PLAIN_LONG: &[&str] = &[
    "to-stdout",
    "totals",
    "touch",
    "checkpoint",
    "use-compress-program",
    "null",
    "new-volume-script",
    "newer",
    "newer-mtime",
    "numeric-owner",
    "info-script",
    "index-file",
    "ignore-case",
    "ignore-command-error",
    "ignore-failed-read",
    "ignore-zeros",
    "incremental",
    "interactive",
    "record-size",
    "recursion",
    "recursive-unlink",
    "remove-files",
    "restrict",
    "rmt-command",
    "rsh-command",
    "read-full-records",
];

/// The first option of `argv[1..]` a table does not know, as written.
pub fn unknown_option(argv: &[Arg], opts: &'static [Opt]) -> Option<String> {
    let parsed = parse(argv, 1, &Syntax::gnu(opts));
    parsed
        .problem
        .map(|p| p.describe(argv.first().map_or("", |a| a.basename())))
}

/// `rm`'s options read as rm reads them.
pub fn rm(argv: &[Arg]) -> Parsed {
    parse(argv, 1, &Syntax::gnu(RM))
}

/// Whether `rm` removes recursively, in any spelling (`-r`, `-R`,
/// `--recursive`, `--recu`, `-fr`). `None` when its options cannot be read.
pub fn rm_is_recursive(argv: &[Arg]) -> Option<bool> {
    let p = rm(argv);
    let recursive = p.has("recursive") || p.has_short(b'R');
    if recursive {
        return Some(true);
    }
    p.problem.is_none().then_some(false)
}

/// Whether `chmod`/`chown`/`chgrp` works recursively, in any spelling.
/// `None` when their options cannot be read.
pub fn chmod_is_recursive(argv: &[Arg]) -> Option<bool> {
    let opts = if argv.first().is_some_and(|a| a.basename() == "chmod") {
        CHMOD
    } else {
        CHOWN
    };
    let p = parse(argv, 1, &Syntax::gnu(opts));
    if p.has("recursive") {
        return Some(true);
    }
    p.problem.is_none().then_some(false)
}

/// The tar option that makes tar run a program, as written, if any: long
/// options by any abbreviation, `-I`/`-F` in a cluster or old-style first
/// word.
pub fn tar_runs(args: &[Arg]) -> Option<String> {
    for (i, a) in args.iter().enumerate() {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if t == "--" {
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            if name.is_empty() {
                continue;
            }
            if let Some(o) = TAR_RUNS.iter().find(|o| o.long == name) {
                return Some(format!("--{}", o.long));
            }
            if TAR_PLAIN_LONG.contains(&name) {
                continue;
            }
            if let Some(o) = TAR_RUNS.iter().find(|o| o.long.starts_with(name)) {
                return Some(format!("--{} (`{t}`)", o.long));
            }
            continue;
        }
        let cluster = if let Some(c) = t.strip_prefix('-') {
            Some(c)
        } else if i == 0 && !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphabetic()) {
            // Old style: `tar xvf f.tar`.
            Some(t)
        } else {
            None
        };
        if let Some(c) = cluster {
            // The letters before the first value-taking one are options.
            for b in c.bytes() {
                if b == b'I' || b == b'F' {
                    return Some(format!("-{}", b as char));
                }
                if matches!(
                    b,
                    b'f' | b'C' | b'T' | b'X' | b'b' | b'g' | b'K' | b'L' | b'N' | b'V' | b'H'
                ) && t.starts_with('-')
                {
                    break;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(Arg::lit).collect()
    }

    #[test]
    fn rm_recursive_in_every_spelling() {
        let cases = [
            ("rm --recu --force x", Some(true)),
            ("rm --recursive x", Some(true)),
            ("rm -fR x", Some(true)),
            ("rm x -r", Some(true)),
            ("rm -f x", Some(false)),
            ("rm -- -r", Some(false)),
            ("rm --bogus x", None),
        ];
        for (s, want) in cases {
            assert_eq!(rm_is_recursive(&argv(s)), want, "{s}");
        }
    }

    #[test]
    fn tar_program_options() {
        let cases = [
            ("-xf a.tar --to-com=x", true),
            ("-xf a.tar --to-command x", true),
            ("--use-comp=zstd -cf a .", true),
            ("-xf a.tar --to-stdout", false),
            ("-czf/tmp/Ix .", false),
            ("-cIzstd -f a .", true),
            ("xIf a", true),
            ("-czf out.tgz src", false),
        ];
        for (s, want) in cases {
            assert_eq!(tar_runs(&argv(s)).is_some(), want, "{s}");
        }
    }
}
