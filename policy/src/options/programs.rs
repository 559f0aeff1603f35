//! Option tables of programs in the deny-template and program-running
//! classes that are not wrappers: what each option takes, and a line on why
//! each dangerous one matters. An option a table does not list makes the
//! segment opaque ([`unknown_option`]): `rm --recu` must be read as
//! `--recursive`, and an option berth cannot read might be one that is.

use super::{HELP_VERSION, Opt, Parsed, Role, Syntax, digits, flag, optional, parse, value};
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

/// CPython's options: `-c` is code and ends the options, as `-m` does.
pub const PYTHON: &[Opt] = &[
    value(b'c', "").role(Role::Code).ends(), // code in python: its calls are judged
    value(b'm', "").ends(),                  // runs a module as a script
    value(b'W', ""),
    value(b'X', ""),
    value(0, "check-hash-based-pycs"),
    flag(b'b', ""),
    flag(b'B', ""),
    flag(b'd', ""),
    flag(b'E', ""),
    flag(b'i', ""),
    flag(b'I', ""),
    flag(b'O', ""),
    flag(b'P', ""),
    flag(b'q', ""),
    flag(b's', ""),
    flag(b'S', ""),
    flag(b'u', ""),
    flag(b'v', ""),
    flag(b'x', ""),
    flag(b'h', "help").role(Role::Itself),
    flag(b'V', "version").role(Role::Itself),
    flag(0, "help-env").role(Role::Itself),
    flag(0, "help-xoptions").role(Role::Itself),
    flag(0, "help-all").role(Role::Itself),
];

/// perl's switches (`perlrun`): `-le` is `-l -e`, `-M` code is inserted as
/// `use …;`, so it is code too.
pub const PERL: &[Opt] = &[
    value(b'e', "").role(Role::Code), // a line of perl
    value(b'E', "").role(Role::Code), // the same, with features on
    value(b'M', "").role(Role::Code), // `use MODULE…;`: its text is code
    value(b'm', "").role(Role::Code), // `use MODULE ();`: the same
    value(b'I', ""),
    digits(b'l'),
    digits(b'0'),
    optional(b'C', ""),
    optional(b'd', ""),
    optional(b'D', ""),
    optional(b'F', ""),
    optional(b'i', ""),
    optional(b'x', ""),
    optional(b'V', ""),
    flag(b'a', ""),
    flag(b'c', ""),
    flag(b'f', ""),
    flag(b'n', ""),
    flag(b'p', ""),
    flag(b's', ""),
    flag(b'S', ""),
    flag(b't', ""),
    flag(b'T', ""),
    flag(b'u', ""),
    flag(b'U', ""),
    flag(b'w', ""),
    flag(b'W', ""),
    flag(b'X', ""),
    flag(b'h', "").role(Role::Itself),
    flag(b'v', "").role(Role::Itself),
];

/// ruby's switches.
pub const RUBY: &[Opt] = &[
    value(b'e', "").role(Role::Code), // a line of ruby
    value(b'r', ""),
    value(b'I', ""),
    value(b'C', ""),
    value(b'E', "encoding"),
    value(0, "external-encoding"),
    value(0, "internal-encoding"),
    value(0, "enable"),
    value(0, "disable"),
    value(0, "dump"),
    value(0, "backtrace-limit"),
    digits(b'0'),
    optional(b'F', ""),
    optional(b'i', ""),
    optional(b'W', ""),
    optional(b'x', ""),
    flag(b'a', ""),
    flag(b'c', ""),
    flag(b'd', "debug"),
    flag(b'l', ""),
    flag(b'n', ""),
    flag(b'p', ""),
    flag(b's', ""),
    flag(b'S', ""),
    flag(b'w', ""),
    flag(0, "verbose"),
    flag(0, "jit"),
    flag(0, "yjit"),
    flag(b'v', "").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
    flag(0, "version").role(Role::Itself),
    flag(0, "copyright").role(Role::Itself),
];

/// php's CLI options.
pub const PHP: &[Opt] = &[
    value(b'r', "").role(Role::Code), // php code, without `<?php`
    value(b'B', "").role(Role::Code), // code run before the input lines
    value(b'R', "").role(Role::Code), // code run for each input line
    value(b'E', "").role(Role::Code), // code run after the input lines
    value(b'c', "").role(Role::Runs), // an ini file: `auto_prepend_file` runs any code
    value(b'd', "").role(Role::Runs), // an ini setting: the same
    value(b'z', "").role(Role::Runs), // loads a Zend extension: native code
    value(b'f', ""),
    value(b'F', ""),
    value(b'S', ""),
    value(b't', ""),
    flag(b'a', ""),
    flag(b'e', ""),
    flag(b'H', ""),
    flag(b'n', ""),
    flag(b'q', ""),
    flag(b's', ""),
    flag(b'w', ""),
    flag(b'l', ""),
    flag(b'i', "").role(Role::Itself),
    flag(b'm', "").role(Role::Itself),
    flag(b'h', "").role(Role::Itself),
    flag(b'v', "").role(Role::Itself),
];

/// node's options that berth reads; its many other `--flags` (V8's) are
/// read as flags.
pub const NODE: &[Opt] = &[
    value(b'e', "eval").role(Role::Code),  // javascript to run
    value(b'p', "print").role(Role::Code), // the same, printing the result
    value(b'r', "require"),
    value(0, "import"),
    value(0, "loader"),
    value(0, "experimental-loader"),
    value(0, "input-type"),
    value(b'C', "conditions"),
    value(0, "env-file"),
    value(0, "title"),
    value(0, "stack-size"),
    value(0, "max-old-space-size"),
    optional(0, "inspect"),
    optional(0, "inspect-brk"),
    flag(b'i', "interactive"),
    flag(b'c', "check"),
    flag(0, "watch"),
    flag(0, "test"),
    flag(b'v', "version").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
];

/// The code an interpreter runs from its options (`perl -le CODE`,
/// `python3 -Sc CODE`, `node --eval=CODE`), read as it reads its options;
/// `None` when the interpreter has no table here, `Err` when its options
/// cannot be read or one names a program.
pub fn interpreter_code(argv: &[Arg]) -> Option<Result<Vec<Arg>, String>> {
    let name = argv.first()?.basename();
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let syntax = match base {
        "python" | "pypy" => Syntax::wrapper(PYTHON),
        "perl" => Syntax::wrapper(PERL),
        "ruby" => Syntax::wrapper(RUBY),
        "php" => Syntax::wrapper(PHP),
        "node" | "nodejs" => Syntax {
            lenient_long: true,
            ..Syntax::wrapper(NODE)
        },
        _ => return None,
    };
    let parsed = parse(argv, 1, &syntax);
    if let Some(p) = &parsed.problem {
        return Some(Err(p.describe(name)));
    }
    if let Some(f) = parsed.first_with(Role::Runs) {
        return Some(Err(format!(
            "`{name} {}` names code berth cannot see",
            f.opt.display()
        )));
    }
    Some(Ok(parsed
        .found
        .iter()
        .filter(|f| f.opt.role == Role::Code)
        .filter_map(|f| f.value.clone())
        .collect()))
}

/// git subcommands' options that make git run a program, with the short
/// letters that take a value (a cluster's letters after the first of them
/// are its value): git's parse-options takes any unambiguous prefix of a
/// long option (`--upload-p`) and clusters short ones (`rebase -fx CMD`).
const GIT_SUB_RUNS: &[(&[&str], &[Opt], &[u8])] = &[
    (
        &["fetch", "pull", "ls-remote"],
        &[value(0, "upload-pack")], // the program run for the other side
        b"jos",
    ),
    (
        &["clone"],
        &[
            value(b'u', "upload-pack"), // the program run for the other side
            value(b'c', "config"),      // any config key in the new repository
            value(0, "template"),       // a template directory: hooks that later run
        ],
        b"objuc",
    ),
    (
        &["push", "send-pack"],
        &[
            value(0, "receive-pack"), // the program run for the other side
            value(0, "exec"),         // the same, by its older name
        ],
        b"o",
    ),
    (
        &["archive"],
        &[
            value(0, "exec"),   // the program run for the other side of `--remote`
            value(0, "remote"), // runs `git-upload-archive` through a transport
        ],
        b"o",
    ),
    (
        &["grep"],
        &[optional(b'O', "open-files-in-pager")], // opens the files in a pager it names
        b"efABCm",
    ),
    (
        &["difftool"],
        &[value(b'x', "extcmd")], // the diff command to run
        b"t",
    ),
    (
        &["rebase"],
        &[value(b'x', "exec")], // a shell command after each commit
        b"sXSC",
    ),
    (
        &["send-email"],
        &[
            value(0, "to-cmd"),       // a command whose output lists recipients
            value(0, "cc-cmd"),       // the same for Cc
            value(0, "header-cmd"),   // a command whose output adds headers
            value(0, "sendmail-cmd"), // the program that sends the mail
            value(0, "smtp-server"),  // a path here is a program to run
        ],
        b"",
    ),
    (
        &[
            "diff",
            "log",
            "show",
            "format-patch",
            "whatchanged",
            "diff-tree",
            "diff-files",
            "diff-index",
            "stash",      // `stash show` takes the diff options
            "reflog",     // `reflog show` is `log -g`
            "range-diff", // diffs of the two ranges' patches
        ],
        &[flag(0, "ext-diff")], // runs the external diff driver config names
        b"",
    ),
];

/// The git option that makes a subcommand run a program, in any spelling
/// (`argv` is git's with its global options removed: `git SUB …`).
pub fn git_sub_runs(argv: &[Arg]) -> Option<String> {
    let sub = argv.get(1).filter(|a| !a.dynamic)?.text.as_str();
    let (_, runs, value_letters) = GIT_SUB_RUNS
        .iter()
        .find(|(subs, _, _)| subs.contains(&sub))?;
    for a in &argv[2..] {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if t == "--" {
            break;
        }
        if let Some(long) = t.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or(long);
            if let Some(o) = runs.iter().find(|o| {
                !o.long.is_empty()
                    && (o.long == name || (name.len() >= 3 && o.long.starts_with(name)))
            }) {
                return Some(format!("`git {sub} --{}` runs a program (`{t}`)", o.long));
            }
            continue;
        }
        if let Some(letters) = t.strip_prefix('-') {
            for b in letters.bytes() {
                if let Some(o) = runs.iter().find(|o| o.short == b && b != 0) {
                    return Some(format!(
                        "`git {sub} -{}` runs a program (`{t}`)",
                        o.short as char
                    ));
                }
                if value_letters.contains(&b) {
                    break;
                }
            }
        }
    }
    None
}

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

/// Walks tar's options as GNU tar reads them: `on_long(name, word)` for
/// each long option (`name` without `--` and `=value`), `on_letter` for
/// each letter of a dashed cluster up to the first that takes a value
/// (the rest is its value: `-fP.tar`), and for every letter of an
/// old-style first word (`tar xPf f.tar`). The first `Some` ends the walk.
/// Words computed at run time are skipped: callers that must fail closed
/// on them check `dynamic` themselves.
fn tar_walk<R>(
    args: &[Arg],
    mut on_long: impl FnMut(&str, &str) -> Option<R>,
    mut on_letter: impl FnMut(u8) -> Option<R>,
) -> Option<R> {
    /// Letters that take a value, attached or in the next word.
    const VALUE_LETTERS: &[u8] = b"fCTXbgKLNVHIF";
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
            if !name.is_empty()
                && let Some(r) = on_long(name, t)
            {
                return Some(r);
            }
            continue;
        }
        let (letters, dashed) = match t.strip_prefix('-') {
            Some(c) => (c, true),
            // Old style: `tar xvf f.tar`, every letter an option.
            None if i == 0 && !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphabetic()) => {
                (t, false)
            }
            None => continue,
        };
        for b in letters.bytes() {
            if let Some(r) = on_letter(b) {
                return Some(r);
            }
            if dashed && VALUE_LETTERS.contains(&b) {
                break;
            }
        }
    }
    None
}

/// The tar option that makes tar run a program, as written, if any: long
/// options by any abbreviation, `-I`/`-F` in a cluster or old-style first
/// word.
pub fn tar_runs(args: &[Arg]) -> Option<String> {
    tar_walk(
        args,
        |name, word| {
            if let Some(o) = TAR_RUNS.iter().find(|o| o.long == name) {
                return Some(format!("--{}", o.long));
            }
            if TAR_PLAIN_LONG.contains(&name) {
                return None;
            }
            TAR_RUNS
                .iter()
                .find(|o| o.long.starts_with(name))
                .map(|o| format!("--{} (`{word}`)", o.long))
        },
        |b| (b == b'I' || b == b'F').then(|| format!("-{}", b as char)),
    )
}

/// `tar -P`/`--absolute-names` (any unambiguous prefix: `--ab`): members
/// are written at their absolute names and with their `..` parts, not
/// beneath the directory tar runs in. An option computed at run time may
/// be it.
pub fn tar_absolute_names(args: &[Arg]) -> bool {
    args.iter()
        .any(|a| a.dynamic && (a.text.is_empty() || a.text.starts_with('-')))
        || tar_walk(
            args,
            // "ab" is the shortest prefix no other GNU tar option shares.
            |name, _| (name.len() >= 2 && "absolute-names".starts_with(name)).then_some(()),
            |b| (b == b'P').then_some(()),
        )
        .is_some()
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
    fn interpreter_code_in_every_spelling() {
        let code = |s: &str| -> Option<Result<Vec<String>, String>> {
            interpreter_code(&argv(s)).map(|r| r.map(|v| v.into_iter().map(|a| a.text).collect()))
        };
        let ok = |v: &[&str]| Some(Ok(v.iter().map(|s| s.to_string()).collect()));
        assert_eq!(code("perl -le X"), ok(&["X"]));
        assert_eq!(code("perl -l0e X"), ok(&["X"]));
        assert_eq!(code("perl -MPOSIX -e1"), ok(&["POSIX", "1"]));
        assert_eq!(code("python3 -Sc X -e Y"), ok(&["X"]));
        assert_eq!(code("python3 -m pytest -q"), ok(&[]));
        assert_eq!(code("node --eval=X"), ok(&["X"]));
        assert_eq!(code("node --no-lazy --inspect-brk server.js"), ok(&[]));
        assert_eq!(code("ruby -rjson -e X"), ok(&["X"]));
        assert!(matches!(code("python3 -Z x"), Some(Err(_))));
        assert!(matches!(
            code("php -d auto_prepend_file=x -r 1"),
            Some(Err(_))
        ));
        assert_eq!(code("ls -l"), None);
    }

    #[test]
    fn git_options_that_run_programs() {
        let cases = [
            ("git fetch --upload-p=x origin", true),
            ("git fetch --upload-pack x origin", true),
            ("git rebase -fx cmd HEAD~1", true),
            ("git rebase --exe cmd HEAD~1", true),
            ("git rebase -sx HEAD~1", false),
            ("git clone -uevil url", true),
            ("git send-email --to-c=x a.patch", true),
            ("git grep -nO x", true),
            ("git grep -e O x", false),
            ("git rebase -i HEAD~3", false),
            ("git fetch origin", false),
        ];
        for (s, want) in cases {
            assert_eq!(git_sub_runs(&argv(s)).is_some(), want, "{s}");
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
