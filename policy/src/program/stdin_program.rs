//! Programs that read the program they run from stdin (POLICY.md, "Spelling
//! does not change meaning", point 5): an interpreter given no script
//! operand and no code option (`python3 <<'EOF'`, `perl <<< '…'`, `node -`),
//! a script operand that is stdin or a descriptor (`-`, `/dev/stdin`,
//! `/proc/self/fd/0`, `<(…)`), a program file option naming stdin
//! (`make -f -`, `awk -f /dev/stdin`, `sed -f -`), and command readers whose
//! commands always come from stdin (`ed`, `ex`/`vim -e`, `sqlite3 DB` with
//! no SQL operand, `psql`/`mysql` without `-c`/`-e`, `dc`, `at`, `batch`,
//! `crontab -`, debuggers not in batch mode, REPLs given no program). What
//! they run is not on the command line: opaque.
//!
//! Stdin given to a program that has its program elsewhere is data:
//! `python3 script.py < input.txt`, `jq . < f.json`, `cat <<EOF > file`.

use crate::arg::Arg;

/// How an interpreter finds its program, as its option parser reads it.
struct Interpreter {
    /// Short options that take a value (attached, or the next word).
    short_val: &'static [u8],
    /// Short options that take the rest of their word only (`perl -i.bak`).
    short_rest: &'static [u8],
    /// Short options followed by optional digits (`perl -l`, `-0777`).
    short_digits: &'static [u8],
    /// Long options that take a value (`--x v` or `--x=v`).
    long_val: &'static [&'static str],
    /// Options whose value (or presence) is the program: stdin is data.
    program_short: &'static [u8],
    program_long: &'static [&'static str],
    /// Options after which nothing runs (version, help, a syntax check).
    itself_short: &'static [u8],
    itself_long: &'static [&'static str],
    /// Options that read code from stdin even with a program (`python -i`).
    interactive_short: &'static [u8],
    interactive_long: &'static [&'static str],
    /// Whether the first operand is the program file (R's is not).
    operand_is_program: bool,
}

const NONE: Interpreter = Interpreter {
    short_val: b"",
    short_rest: b"",
    short_digits: b"",
    long_val: &[],
    program_short: b"",
    program_long: &[],
    itself_short: b"",
    itself_long: &["--version", "--help"],
    interactive_short: b"",
    interactive_long: &[],
    operand_is_program: true,
};

const PYTHON: Interpreter = Interpreter {
    short_val: b"cmWXQ",
    program_short: b"cm", // -c code, -m module
    long_val: &["--check-hash-based-pycs"],
    itself_short: b"Vh?",
    interactive_short: b"i", // a REPL on stdin after the script
    ..NONE
};

const NODE: Interpreter = Interpreter {
    short_val: b"eprC",
    program_short: b"ep", // -e/-p code
    long_val: &[
        "--eval",
        "--print",
        "--require",
        "--import",
        "--loader",
        "--experimental-loader",
        "--conditions",
        "--input-type",
        "--env-file",
        "--title",
        "--inspect-port",
        "--redirect-warnings",
        "--stack-trace-limit",
        "--test-name-pattern",
        "--test-reporter",
        "--test-reporter-destination",
        "--watch-path",
        "--run",
    ],
    program_long: &["--eval", "--print", "--test", "--run"],
    itself_short: b"vhc", // -c: --check, a syntax check
    itself_long: &["--version", "--help", "--check", "--v8-options"],
    interactive_short: b"i",
    interactive_long: &["--interactive"],
    ..NONE
};

const PERL: Interpreter = Interpreter {
    short_val: b"eEIMm",
    short_rest: b"ixCdDV",
    short_digits: b"l0",
    program_short: b"eE",
    itself_short: b"vVh",
    ..NONE
};

const RUBY: Interpreter = Interpreter {
    short_val: b"eIrCEF",
    short_rest: b"ixKWT",
    short_digits: b"0",
    long_val: &["--encoding", "--external-encoding", "--internal-encoding"],
    program_short: b"e",
    itself_short: b"vhcy", // -c: a syntax check
    itself_long: &["--version", "--help", "--yydebug"],
    ..NONE
};

const PHP: Interpreter = Interpreter {
    short_val: b"rBRFEfcdztS",
    program_short: b"rBRFEfS", // code, a file, or the built-in server
    long_val: &["--rf", "--rc", "--re", "--rz", "--ri"],
    program_long: &["--rf", "--rc", "--re", "--rz", "--ri"],
    itself_short: b"vhimlsw", // version, help, info, modules, lint, highlight, strip
    itself_long: &["--version", "--help", "--ini"],
    interactive_short: b"a",
    ..NONE
};

const LUA: Interpreter = Interpreter {
    short_val: b"elbjO",
    program_short: b"eb", // -e code; luajit -b saves bytecode
    itself_short: b"vh",
    interactive_short: b"i",
    ..NONE
};

const RSCRIPT: Interpreter = Interpreter {
    short_val: b"e",
    program_short: b"e",
    ..NONE
};

const R: Interpreter = Interpreter {
    short_val: b"fe",
    long_val: &["--file"],
    program_short: b"fe",
    program_long: &["--file"],
    itself_long: &["--version", "--help", "RHOME"],
    operand_is_program: false,
    ..NONE
};

const JULIA: Interpreter = Interpreter {
    short_val: b"eEtpLJC",
    long_val: &["--project", "--threads", "--procs", "--load", "--sysimage"],
    program_short: b"eE",
    itself_short: b"vh",
    interactive_short: b"i",
    ..NONE
};

const TCLSH: Interpreter = Interpreter {
    long_val: &["-encoding"],
    ..NONE
};

/// The interpreter table for a program name (`python3.12` is `python`).
fn interpreter(name: &str) -> Option<&'static Interpreter> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-');
    Some(match base {
        "python" | "pypy" => &PYTHON,
        "node" | "nodejs" => &NODE,
        "perl" => &PERL,
        "ruby" => &RUBY,
        "php" => &PHP,
        "lua" | "luajit" => &LUA,
        "Rscript" => &RSCRIPT,
        "R" => &R,
        "julia" => &JULIA,
        "tclsh" | "wish" => &TCLSH,
        _ => return None,
    })
}

/// Whether an operand names stdin or a descriptor (a pipe, a process
/// substitution): what is read there is not on the command line.
pub fn is_stdin_alias(a: &Arg) -> bool {
    if a.proc_sub {
        return true;
    }
    if a.dynamic {
        return false;
    }
    let t = crate::scope::normalize("/", &a.text);
    let t = if a.text.starts_with('/') {
        t.as_str()
    } else {
        a.text.as_str()
    };
    if t == "-" || t == "/dev/stdin" {
        return true;
    }
    if t.starts_with("/dev/fd/") {
        return true;
    }
    // `/proc/self/fd/0`, `/proc/1234/fd/3`, `/proc/thread-self/fd/0`
    if let Some(rest) = t.strip_prefix("/proc/") {
        let mut it = rest.splitn(3, '/');
        let _pid = it.next();
        return it.next() == Some("fd");
    }
    false
}

/// Why the program reads the program it runs from stdin, if it does.
pub(super) fn reads_program(name: &str, args: &[Arg]) -> Option<String> {
    if let Some(spec) = interpreter(name) {
        return interpreter_reads_stdin(name, spec, args);
    }
    match name {
        "irb" => (!args
            .iter()
            .any(|a| a.is("-v") || a.is("--version") || a.is("-h")))
        .then(|| "`irb` reads ruby code from stdin".to_string()),
        "ed" | "red" => (!itself(args, &["-V", "--version", "-h", "--help"]))
            .then(|| format!("`{name}` reads its commands from stdin (`!` runs a shell command)")),
        "ex" | "vi" | "vim" | "nvim" | "view" | "gvim" | "rvim" | "vimdiff" => {
            (!itself(args, &["--version", "--help", "-h"])).then(|| {
                format!("`{name}` reads its commands from stdin (`:!` runs a shell command)")
            })
        }
        "dc" => {
            let has_program = args.iter().any(|a| {
                a.text.starts_with("-e")
                    || a.text.starts_with("--e")
                    || a.text.starts_with("-f")
                    || a.text.starts_with("--f")
                    || !a.text.starts_with('-') && !is_stdin_alias(a)
            });
            (!has_program && !itself(args, &["-V", "--version", "-h", "--help"]))
                .then(|| "`dc` reads its program from stdin (`!` runs a shell command)".to_string())
        }
        "sqlite3" | "sqlite" => sqlite(name, args),
        "psql" => command_option_or_stdin(
            name,
            args,
            &["-c", "--command", "-l", "--list"],
            &["-f", "--file"],
        ),
        "mysql" | "mariadb" => command_option_or_stdin(name, args, &["-e", "--execute"], &[]),
        "at" => (!itself(args, &["-l", "-r", "-d", "-c", "-V", "--version", "--help"]))
            .then(|| "`at` runs commands read from stdin or a file, later".to_string()),
        "batch" => Some("`batch` runs commands read from stdin, later".to_string()),
        "crontab" => (!itself(args, &["-l", "-r", "-V", "--version", "--help"]))
            .then(|| "`crontab` installs commands to run later".to_string()),
        "make" | "gmake" | "bmake" => {
            file_option_is_stdin(name, args, &["-f", "--file", "--makefile"])
        }
        "awk" | "gawk" | "mawk" | "nawk" | "busybox-awk" => {
            file_option_is_stdin(name, args, &["-f", "--file", "-i", "--include"])
        }
        "sed" | "gsed" => file_option_is_stdin(name, args, &["-f", "--file"]),
        // Program files named by an option.
        "cmake" => file_option_is_stdin(name, args, &["-P"]),
        "ninja" | "samu" => file_option_is_stdin(name, args, &["-f"]),
        "emacs" => file_option_is_stdin(name, args, &["-l", "--load", "--script"]),
        // Debuggers read their commands (`shell …`, `platform shell …`)
        // from stdin unless told to stop after their options.
        "gdb" | "gdb-multiarch" => {
            file_option_is_stdin(name, args, &["-x", "--command"]).or_else(|| {
                (!itself(args, &["-batch", "--batch", "--version", "--help"])).then(|| {
                    "`gdb` reads its commands from stdin (`shell` runs a shell command)".to_string()
                })
            })
        }
        "lldb" => file_option_is_stdin(name, args, &["-s", "--source"]).or_else(|| {
            (!itself(args, &["-b", "--batch", "--version", "-v", "--help", "-h"])).then(|| {
                "`lldb` reads its commands from stdin (`platform shell` runs a shell command)"
                    .to_string()
            })
        }),
        "mongosh" | "mongo" => command_option_or_stdin(name, args, &["--eval"], &["-f", "--file"]),
        "sqlcmd" => command_option_or_stdin(name, args, &["-Q", "-q"], &["-i"]),
        // `deno run -`, `bun run -`, and their REPLs.
        "deno" | "bun" => match args.iter().find(|a| !a.dynamic && !a.text.starts_with('-')) {
            None if args.is_empty() => Some(format!("`{name}` with no command is a REPL on stdin")),
            Some(sub) if sub.is("repl") => Some(format!("`{name} repl` reads code from stdin")),
            _ => args
                .iter()
                .any(is_stdin_alias)
                .then(|| format!("`{name}` runs a program read from stdin")),
        },
        _ => REPLS
            .iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, program)| repl_reads_stdin(name, args, program)),
    }
}

/// Interpreters and command readers that run what stdin says unless an
/// operand names their program file or an option gives it: `(name, the
/// options that give the program)`. (`m4`'s `syscmd`, an Erlang or Lisp
/// REPL's `os:cmd`/`run-program`, octave's `system` all run programs.)
const REPLS: &[(&str, &[&str])] = &[
    ("m4", &[]),
    ("guile", &["-c", "-s"]),
    ("jshell", &[]),
    ("octave", &["--eval"]),
    ("octave-cli", &["--eval"]),
    ("racket", &["-e", "--eval"]),
    ("ocaml", &[]),
    ("swipl", &["-g"]),
    ("sbcl", &["--script", "--eval"]),
    ("clisp", &["-x"]),
    ("erl", &["-eval", "-s", "-run", "-noshell"]),
    ("iex", &["-e"]),
    ("ghci", &["-e"]),
    ("scala", &["-e"]),
    ("groovysh", &[]),
    ("kotlinc", &["-script", "-e"]),
];

/// A [`REPLS`] program reads what it runs from stdin when no option gives
/// its program and no operand names a file; an operand that is stdin reads
/// it too. (A value of an option the table does not list reads here as an
/// operand.)
fn repl_reads_stdin(name: &str, args: &[Arg], program: &[&str]) -> Option<String> {
    if itself(args, &["--version", "--help", "-h", "-version"]) {
        return None;
    }
    if args.iter().any(is_stdin_alias) {
        return Some(format!("`{name}` runs a program read from stdin"));
    }
    let gives = |a: &Arg| {
        program
            .iter()
            .any(|o| a.is(o) || (o.starts_with("--") && a.text.starts_with(&format!("{o}="))))
    };
    let known = args
        .iter()
        .any(|a| !a.dynamic && (gives(a) || !a.text.starts_with('-')));
    (!known).then(|| format!("`{name}` reads what it runs from stdin"))
}

/// Any of the words makes the invocation run nothing from stdin.
fn itself(args: &[Arg], words: &[&str]) -> bool {
    args.iter().any(|a| {
        !a.dynamic
            && words.iter().any(|w| {
                a.text == *w || (w.len() == 2 && a.text.starts_with(w) && !w.starts_with("--"))
            })
    })
}

fn interpreter_reads_stdin(name: &str, spec: &Interpreter, args: &[Arg]) -> Option<String> {
    let mut has_program = false;
    let mut interactive = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.dynamic && !a.proc_sub {
            // A dynamic word may be any option, or `-`: the program is not
            // known unless it was given already.
            return (!has_program)
                .then(|| format!("`{name}` with a dynamic word where its program is named"));
        }
        let t = a.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if t == "-" || !t.starts_with('-') || a.proc_sub {
            break;
        }
        if t.starts_with("--") || spec.long_val.contains(&t) || spec.itself_long.contains(&t) {
            let long = t.split('=').next().unwrap_or(t);
            if spec.itself_long.contains(&long) {
                return None;
            }
            if spec.interactive_long.contains(&long) {
                interactive = true;
            }
            if spec.program_long.contains(&long) {
                has_program = true;
            }
            i += if spec.long_val.contains(&long) && !t.contains('=') {
                2
            } else {
                1
            };
            continue;
        }
        let bytes = t.as_bytes();
        let mut j = 1;
        let mut takes_next = false;
        while j < bytes.len() {
            let c = bytes[j];
            if spec.itself_short.contains(&c) {
                return None;
            }
            if spec.interactive_short.contains(&c) {
                interactive = true;
            }
            if spec.program_short.contains(&c) {
                has_program = true;
            }
            if spec.short_val.contains(&c) {
                takes_next = j + 1 == bytes.len();
                break;
            }
            if spec.short_rest.contains(&c) {
                break;
            }
            j += 1;
            if spec.short_digits.contains(&c) {
                while j < bytes.len() && (bytes[j].is_ascii_hexdigit() || bytes[j] == b'x') {
                    j += 1;
                }
            }
        }
        i += if takes_next { 2 } else { 1 };
        if takes_next && has_program && args.get(i - 1).is_some_and(is_stdin_alias) {
            // `php -f /dev/stdin`, `Rscript -e …` never; `R -f -` yes.
            return Some(format!("`{name}` reads its program from stdin"));
        }
    }
    if interactive {
        return Some(format!("`{name} -i` reads code from stdin"));
    }
    if has_program {
        return None;
    }
    match args.get(i) {
        Some(op) if spec.operand_is_program => {
            is_stdin_alias(op).then(|| format!("`{name}` reads its program from `{}`", op.text))
        }
        Some(op) if op.is("CMD") => None,
        _ => Some(format!(
            "`{name}` with no program operand reads its program from stdin"
        )),
    }
}

/// `sqlite3 [OPTIONS] [DB [SQL…]]`: with no SQL operand, its commands
/// (`.shell`, `.system` included) come from stdin.
fn sqlite(name: &str, args: &[Arg]) -> Option<String> {
    const VALUE: &[&str] = &[
        "cmd",
        "init",
        "separator",
        "newline",
        "nullvalue",
        "mmap",
        "heap",
        "lookaside",
        "pagecache",
        "vfs",
        "maxsize",
        "A",
        "pcachetrace",
        "escape",
    ];
    let mut operands = 0;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.dynamic {
            return Some(format!("`{name}` with a dynamic word"));
        }
        let t = a.text.trim_start_matches('-');
        if a.text.starts_with('-') && a.text.len() > 1 {
            if matches!(t, "version" | "help") {
                return None;
            }
            if t == "init" {
                return Some(format!("`{name} -init` reads commands from a file"));
            }
            i += if VALUE.contains(&t) { 2 } else { 1 };
            continue;
        }
        if operands == 1 && is_stdin_alias(a) {
            return Some(format!("`{name}` reads its commands from `{}`", a.text));
        }
        operands += 1;
        i += 1;
    }
    (operands < 2).then(|| {
        format!(
            "`{name}` with no SQL operand reads its commands from stdin (`.shell` runs a program)"
        )
    })
}

/// A client that runs a command option, or a file, or else reads stdin.
fn command_option_or_stdin(
    name: &str,
    args: &[Arg],
    command: &[&str],
    file: &[&str],
) -> Option<String> {
    let long = |a: &Arg, o: &str| o.starts_with("--") && a.text.starts_with(&format!("{o}="));
    let short = |a: &Arg, o: &str| !o.starts_with("--") && a.text.starts_with(o);
    for (k, a) in args.iter().enumerate() {
        if a.dynamic {
            continue;
        }
        if a.is("--version") || a.is("--help") || a.is("-V") {
            return None;
        }
        if command.iter().any(|o| a.is(o) || long(a, o) || short(a, o)) {
            return None;
        }
        if let Some(o) = file.iter().find(|o| a.is(o) || long(a, o) || short(a, o)) {
            let value = if a.is(o) {
                args.get(k + 1).cloned()
            } else {
                Some(Arg {
                    text: a.text[o.len()..].trim_start_matches('=').to_string(),
                    ..a.clone()
                })
            };
            return match value {
                Some(v) if !is_stdin_alias(&v) => None,
                _ => Some(format!("`{name}` reads its commands from stdin")),
            };
        }
    }
    Some(format!(
        "`{name}` with no command option reads its commands from stdin (a shell escape runs programs)"
    ))
}

/// A program file option (`make -f F`, `awk -f F`) naming stdin.
fn file_option_is_stdin(name: &str, args: &[Arg], opts: &[&str]) -> Option<String> {
    for (k, a) in args.iter().enumerate() {
        if a.dynamic {
            continue;
        }
        if a.is("--") {
            break;
        }
        for o in opts {
            let value = if a.is(o) {
                args.get(k + 1).cloned()
            } else if o.starts_with("--")
                && a.text.strip_prefix(o).is_some_and(|r| r.starts_with('='))
            {
                Some(Arg {
                    text: a.text[o.len() + 1..].to_string(),
                    ..a.clone()
                })
            } else if !o.starts_with("--") && a.text.starts_with(o) && a.text.len() > 2 {
                Some(Arg {
                    text: a.text[2..].to_string(),
                    ..a.clone()
                })
            } else {
                None
            };
            if value.as_ref().is_some_and(is_stdin_alias) {
                return Some(format!("`{name} {o}` reads its program from stdin"));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Arg> {
        words
            .iter()
            .map(|w| Arg {
                text: (*w).to_string(),
                ..Arg::default()
            })
            .collect()
    }

    #[test]
    fn a_long_file_option_with_its_value_attached_names_stdin() {
        for (name, words) in [
            ("make", &["--file=-"][..]),
            ("make", &["all", "--makefile=/dev/stdin"]),
            ("awk", &["--file=-", "x"]),
            ("awk", &["--include=/dev/stdin"]),
            ("sed", &["--file=-"]),
            ("emacs", &["--script=/dev/stdin"]),
        ] {
            assert!(
                reads_program(name, &args(words)).is_some(),
                "{name} {words:?}"
            );
        }
        for (name, words) in [
            ("make", &["--file-"][..]),
            ("make", &["--filex=-"]),
            ("make", &["--fil=-"]),
            ("make", &["--file=Makefile"]),
            ("make", &["--", "--file=-"]),
            ("sed", &["--file"]),
        ] {
            assert!(
                reads_program(name, &args(words)).is_none(),
                "{name} {words:?}"
            );
        }
    }
}
