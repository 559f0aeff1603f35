//! Editors, pagers and debuggers that take commands to run on their
//! command line: `vi`/`vim`/`nvim` (`-c`, `+cmd`, `--cmd`, `-S`), `less`
//! (`+!cmd`), `man` (`-P`, `-H`), `gdb` (`-ex`, `-x`, …) and `emacs`
//! (`--eval`, `-f`).

use super::{Facts, OrOpaque, opt_runs};
use crate::arg::Arg;

/// vi's short options that run editor commands (`:!cmd` runs a program).
/// vim reads a word of letters one by one and a value attached to its last
/// letter (`-Rc:!cmd`, `'-c:!cmd'`), so any of these letters in such a word
/// counts.
// `c`: an Ex command after the first file loads; `S`: sources a file of Ex
// commands; `u`/`U`: a vimrc/gvimrc of Ex commands used instead; `s`: reads
// Normal-mode keys (`:!cmd` among them) from a file.
const VI_RUNS_SHORT: &[u8] = b"cSuUs";

/// vi's long options that run editor commands.
const VI_RUNS_LONG: &[&str] = &[
    "cmd",         // an Ex command before any vimrc
    "remote-send", // keys sent to a server vim: `:!cmd` among them
    "remote-expr", // an expression a server vim evaluates: `system()` among them
];
// `+cmd` (a `+` with more after it) is `-c cmd`.

pub(super) fn vi(name: &str, args: &[Arg]) -> Facts {
    for a in args {
        if a.dynamic {
            continue;
        }
        let t = a.text.as_str();
        if t == "--" {
            break;
        }
        let runs = if let Some(long) = t.strip_prefix("--") {
            let long = long.split('=').next().unwrap_or(long);
            VI_RUNS_LONG
                .iter()
                .any(|o| !long.is_empty() && o.starts_with(long))
        } else if let Some(letters) = t.strip_prefix('-') {
            letters.bytes().any(|b| VI_RUNS_SHORT.contains(&b))
        } else {
            t.starts_with('+') && t.len() > 1
        };
        if runs {
            return Facts::opaque(format!("`{name}` with commands to run (`{t}`)"));
        }
    }
    Facts::default()
}

/// less's options naming a lesskey file, whose `#env` section sets
/// variables less reads (`LESSOPEN`, `LESSCLOSE`: commands it runs on
/// every file) and whose key bindings may run a shell.
const LESS_KEY_FILES_LONG: &[&str] = &["--lesskey-file", "--lesskey-src", "--lesskey-content"];
const LESS_KEY_FILES_SHORT: &[u8] = b"k";

/// `less +CMD` (and `++CMD`, every file): less commands run at start, of
/// which `!` runs a shell command and `|` pipes to one.
pub(super) fn less(args: &[Arg]) -> Facts {
    let keys = opt_runs(
        args,
        LESS_KEY_FILES_LONG,
        LESS_KEY_FILES_SHORT,
        "`less` reads a lesskey file, whose `#env` section can set `LESSOPEN` (a command it runs)",
    );
    if keys.opaque.is_some() {
        return keys;
    }
    for a in args {
        let t = a.text.as_str();
        if t == "--" {
            break;
        }
        if t.starts_with('+') && (a.dynamic || t.contains('!') || t.contains('|')) {
            return Facts::opaque(format!("`less {t}` runs a shell command at start"));
        }
    }
    Facts::default()
}

/// `man` long options that run a program.
const MAN_RUNS_LONG: &[&str] = &[
    "--pager", // the pager is any program
    "--html",  // the browser is any program
];

/// `man` short options that run a program.
const MAN_RUNS_SHORT: &[u8] = b"PH"; // -P: --pager; -H: --html

pub(super) fn man(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        MAN_RUNS_LONG,
        MAN_RUNS_SHORT,
        "`man -P/-H` runs a program",
    )
}

/// `gdb` long options that run debugger commands (`shell`, `!`, `python`).
const GDB_RUNS_LONG: &[&str] = &[
    "--eval-command",      // one command after loading
    "--command",           // a file of commands
    "--init-eval-command", // one command before loading
    "--init-command",      // a file of commands before loading
];

/// `gdb` short options that run debugger commands, as whole words.
const GDB_RUNS_SHORT: &[&str] = &[
    "-ex",  // --eval-command
    "-x",   // --command
    "-iex", // --init-eval-command
    "-ix",  // --init-command
];

pub(super) fn gdb(args: &[Arg]) -> Facts {
    // gdb reads long options with one dash too (`-eval-command=…`, `-ev`).
    let long_spelled: Vec<Arg> = args
        .iter()
        .map(|a| {
            if a.text.len() > 2 && a.text.starts_with('-') && !a.text.starts_with("--") {
                Arg {
                    text: format!("-{}", a.text),
                    ..a.clone()
                }
            } else {
                a.clone()
            }
        })
        .collect();
    opt_runs(
        &long_spelled,
        GDB_RUNS_LONG,
        &[],
        "`gdb` with commands to run",
    )
    .or(
        if args.iter().any(|a| GDB_RUNS_SHORT.iter().any(|o| a.is(o))) {
            Some("`gdb` with commands to run (-ex/-x)")
        } else {
            None
        },
    )
}

/// emacs options whose value is Lisp to evaluate (`(shell-command …)`).
const EMACS_RUNS: &[&str] = &[
    "--eval",    // evaluates an expression
    "-eval",     // the same, single-dash
    "--execute", // the same, another name
    "-execute",  // the same, single-dash
    "-e",        // emacsclient: evaluates the arguments
    "-f",        // calls a function by name
    "--funcall", // the same, long
    "-funcall",  // the same, single-dash
];

pub(super) fn emacs(name: &str, args: &[Arg]) -> Facts {
    let hit = args.iter().find(|a| {
        !a.dynamic && {
            let n = a.text.split('=').next().unwrap_or(&a.text);
            EMACS_RUNS.contains(&n)
        }
    });
    match hit {
        Some(a) => Facts::opaque(format!("`{name} {}` evaluates Lisp", a.text)),
        None => Facts::default(),
    }
}
