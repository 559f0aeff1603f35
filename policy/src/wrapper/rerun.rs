//! Wrappers that build their command from their input or rerun it
//! (`xargs`, `watch`), and `flock`, whose command may be a shell line: each
//! parses its options with a table, then finds the command it runs.
//! (The plain process wrappers are in `process.rs`.)

use super::{Unwrap, WrapInfo, join_script};
use crate::arg::Arg;
use crate::options::{HELP_VERSION, Opt, Problem, Role, Syntax, flag, optional, parse, value};

const HELP: Opt = HELP_VERSION[0];
const VERSION: Opt = HELP_VERSION[1];
/// GNU `xargs`: builds the command from its input.
const XARGS: &[Opt] = &[
    flag(b'0', "null"),
    value(b'a', "arg-file"), // operands come from a file: the command gets unknown arguments either way
    value(b'd', "delimiter"),
    value(b'E', ""),
    optional(b'e', "eof"),
    value(b'I', "").role(Role::Replace), // replaces the string in the command with each input line
    optional(b'i', "replace").role(Role::Replace), // the same, `{}` by default
    value(b'L', ""),
    optional(b'l', "max-lines"),
    value(b'n', "max-args"),
    value(b'P', "max-procs"),
    value(b's', "max-chars"),
    value(0, "process-slot-var"),
    flag(b'o', "open-tty"),
    flag(b'p', "interactive"),
    flag(b'r', "no-run-if-empty"),
    flag(b't', "verbose"),
    flag(b'x', "exit"),
    flag(0, "show-limits"),
    HELP,
    VERSION,
];

pub(super) fn unwrap_xargs(argv: &[Arg]) -> Unwrap {
    let parsed = parse(
        argv,
        1,
        &Syntax {
            guess: true,
            ..Syntax::wrapper(XARGS)
        },
    );
    let mut info = WrapInfo {
        trailing_dynamic: true,
        ..WrapInfo::default()
    };
    match &parsed.problem {
        Some(p @ (Problem::Unknown(_) | Problem::Ambiguous(_))) => {
            info.opaque = Some(p.describe("xargs"));
        }
        Some(p) => return Unwrap::Opaque(p.describe("xargs")),
        None => {}
    }
    if parsed.first_with(Role::Itself).is_some() {
        return Unwrap::Itself;
    }
    for f in parsed.found.iter().filter(|f| f.opt.role == Role::Replace) {
        info.replace = Some(
            f.value
                .as_ref()
                .map_or("{}", |v| v.text.as_str())
                .to_string(),
        );
        info.trailing_dynamic = false;
    }
    if parsed.end >= argv.len() {
        // xargs with no command runs `echo`.
        return match info.opaque {
            Some(reason) => Unwrap::Opaque(reason),
            None => Unwrap::Itself,
        };
    }
    Unwrap::Command {
        start: parsed.end,
        info,
    }
}

/// procps `watch`: reruns a command line (through `sh -c`, or as argv with
/// `-x`).
const WATCH: &[Opt] = &[
    flag(b'b', "beep"),
    flag(b'c', "color"),
    flag(b'C', "no-color"),
    optional(b'd', "differences"),
    flag(b'e', "errexit"),
    flag(b'g', "chgexit"),
    value(b'n', "interval"),
    flag(b'p', "precise"),
    value(b'q', "equexit"),
    flag(b'r', "no-rerun"),
    value(b's', "shotsdir"),
    flag(b't', "no-title"),
    flag(b'w', "no-wrap"),
    flag(b'x', "exec"), // runs the words as argv instead of through `sh -c`
    flag(b'h', "help").role(Role::Itself),
    flag(b'v', "version").role(Role::Itself),
];

pub(super) fn unwrap_watch(argv: &[Arg]) -> Unwrap {
    let parsed = parse(argv, 1, &Syntax::wrapper(WATCH));
    if let Some(p) = &parsed.problem {
        return Unwrap::Opaque(p.describe("watch"));
    }
    if parsed.first_with(Role::Itself).is_some() || parsed.end >= argv.len() {
        return Unwrap::Itself;
    }
    if parsed.has("exec") {
        return Unwrap::Command {
            start: parsed.end,
            info: WrapInfo::default(),
        };
    }
    join_script(&argv[parsed.end..], true)
}

/// util-linux `flock`: runs a command holding a lock on a file.
const FLOCK: &[Opt] = &[
    flag(b's', "shared"),
    flag(b'x', "exclusive"),
    flag(b'e', ""),
    flag(b'u', "unlock"),
    flag(b'n', "nonblock"),
    flag(0, "nb"),
    value(b'w', "wait"),
    value(0, "timeout"),
    value(b'E', "conflict-exit-code"),
    flag(b'o', "close"),
    flag(b'F', "no-fork"),
    flag(0, "verbose"),
    value(b'c', "command").role(Role::Script), // a shell command line, run with `sh -c`
    flag(b'h', "help").role(Role::Itself),
    flag(b'V', "version").role(Role::Itself),
];

pub(super) fn unwrap_flock(argv: &[Arg]) -> Unwrap {
    let parsed = parse(argv, 1, &Syntax::wrapper(FLOCK));
    if let Some(p) = &parsed.problem {
        return Unwrap::Opaque(p.describe("flock"));
    }
    if parsed.first_with(Role::Itself).is_some() {
        return Unwrap::Itself;
    }
    if let Some(f) = parsed.first_with(Role::Script) {
        return match &f.value {
            Some(s) => Unwrap::Script {
                script: s.clone(),
                new_process: true,
                info: WrapInfo::default(),
            },
            None => Unwrap::Itself,
        };
    }
    // `flock FILE cmd…`, `flock FILE -c CMDLINE`; `flock FD` alone runs nothing.
    let mut i = parsed.end + 1;
    if i >= argv.len() {
        return Unwrap::Itself;
    }
    let word = &argv[i];
    if word.is("-c") || word.is("--command") {
        return match argv.get(i + 1) {
            Some(s) => Unwrap::Script {
                script: s.clone(),
                new_process: true,
                info: WrapInfo::default(),
            },
            None => Unwrap::Itself,
        };
    }
    if word.is("--") {
        i += 1;
    }
    if i >= argv.len() {
        return Unwrap::Itself;
    }
    Unwrap::Command {
        start: i,
        info: WrapInfo::default(),
    }
}
