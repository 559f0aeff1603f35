//! Shells and the builtins that run a command line: `sh -c`, `bash -lc`,
//! `eval`, `trap`, `script -c`; which programs are shells and which
//! interpret code given to them.

use super::{Unwrap, WrapInfo, join_script};
use crate::arg::Arg;
use crate::options::{HELP_VERSION, Opt, Problem, Role, Syntax, flag, optional, parse, value};

/// Options of the Bourne-family shells (`sh`, `bash`, `dash`, `ksh`,
/// `zsh`, `csh`, …): `-c` makes the first operand the script; `-s`/`-i`
/// read it from stdin; the set options (`-e`, `-x`, `+o posix`, …) change
/// nothing the decision judges.
const SHELL: &[Opt] = &[
    flag(b'c', "command").role(Role::Script), // the first operand is a command line it runs
    flag(b's', ""),                           // reads the script from stdin
    flag(b'i', ""),                           // interactive: reads commands from stdin
    value(b'o', ""),
    value(b'O', ""),
    value(0, "rcfile").role(Role::Runs), // a startup file berth cannot see
    value(0, "init-file").role(Role::Runs), // the same
    flag(b'l', "login"),
    flag(b'r', "restricted"),
    flag(b'D', "dump-strings"),
    flag(0, "dump-po-strings"),
    flag(0, "noprofile"),
    flag(0, "norc"),
    flag(0, "posix"),
    flag(0, "noediting"),
    flag(0, "verbose"),
    flag(0, "debugger"),
    flag(0, "pretty-print"),
    flag(b'a', ""),
    flag(b'b', ""),
    flag(b'd', ""),
    flag(b'e', ""),
    flag(b'f', ""),
    flag(b'h', ""),
    flag(b'k', ""),
    flag(b'm', ""),
    flag(b'n', ""),
    flag(b'p', ""),
    flag(b't', ""),
    flag(b'u', ""),
    flag(b'v', ""),
    flag(b'x', ""),
    flag(b'B', ""),
    flag(b'C', ""),
    flag(b'E', ""),
    flag(b'H', ""),
    flag(b'P', ""),
    flag(b'T', ""),
    flag(b'V', ""),
    flag(b'X', ""),
    HELP_VERSION[0],
    HELP_VERSION[1],
];

/// fish: `-c` takes the command line as its value; `-C` runs one first.
const FISH: &[Opt] = &[
    value(b'c', "command").role(Role::Script), // a command line it runs
    value(b'C', "init-command").role(Role::Runs), // runs a command line before anything else
    value(b'd', "debug"),
    value(b'o', "debug-output"),
    value(b'f', "features"),
    value(b'p', "profile"),
    value(0, "profile-startup"),
    flag(b'i', "interactive"),
    flag(b'l', "login"),
    flag(b'n', "no-execute"),
    flag(b'N', "no-config"),
    flag(b'P', "private"),
    flag(0, "print-rusage-self"),
    flag(0, "print-debug-categories").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
    flag(b'v', "version").role(Role::Itself),
];

/// Programs that are shells (`-c` runs a script).
pub fn is_shell(name: &str) -> bool {
    // Every name below ends in `sh`: most programs (`git`, `echo`, a
    // 4-letter name compared with 11 shells) are answered without a
    // comparison each.
    if !name.ends_with("sh") {
        return false;
    }
    matches!(
        name,
        "sh" | "bash"
            | "zsh"
            | "dash"
            | "ksh"
            | "mksh"
            | "ash"
            | "yash"
            | "fish"
            | "rbash"
            | "tcsh"
            | "csh"
            | "pdksh"
            | "oksh"
            | "loksh" // OpenBSD ksh, ported
            | "lksh" // mksh's legacy mode
            | "osh" // Oils' bash-compatible shell
            | "hush" // BusyBox's hush, on its own
            | "posh" // Debian's policy-compliant shell
            | "bosh" // the Schily Bourne shell
    )
}

/// Programs that interpret code given to them (never rule-approved with
/// `--always`).
pub fn is_interpreter(name: &str) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        base,
        "python"
            | "pypy"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "perl"
            | "ruby"
            | "php"
            | "lua"
            | "luajit"
            | "Rscript"
            | "R"
            | "tclsh"
            | "wish"
            | "awk"
            | "gawk"
            | "mawk"
            | "nawk"
            | "julia"
            | "osascript"
            | "pwsh"
            | "powershell"
            | "irb"
            | "ghci"
            | "racket"
            | "guile"
            | "sbcl"
            | "clojure"
            | "scala"
            | "groovy"
            | "jshell"
            | "elixir"
            | "erl"
            | "escript"
            | "swift"
            | "kotlin"
            | "dotnet"
            | "java"
    ) || is_shell(name)
}

/// `sh -c 'script'`, `bash -lc …`; a shell with neither `-c` nor a script
/// file reads its script from stdin.
pub(super) fn unwrap_shell(argv: &[Arg]) -> Unwrap {
    let mut info = WrapInfo {
        shell: true,
        ..WrapInfo::default()
    };
    let name = argv[0].basename().to_string();
    let opts = if name == "fish" { FISH } else { SHELL };
    let parsed = parse(
        argv,
        1,
        &Syntax {
            plus: true,
            ..Syntax::wrapper(opts)
        },
    );
    match &parsed.problem {
        Some(Problem::Dynamic(_)) => return dynamic_among_options(argv, &name, info),
        Some(p) => return Unwrap::Opaque(p.describe(&name)),
        None => {}
    }
    if let Some(f) = parsed.first_with(Role::Runs) {
        return Unwrap::Opaque(format!(
            "`{name} {}` runs a startup file or command berth cannot see",
            f.opt.display()
        ));
    }
    // Opaque, but the script is still walked: deny rules see it.
    if name != "fish"
        && let Some(why) = changes_how_words_read(&parsed)
    {
        info.opaque = Some(format!("`{name}` {why}"));
    }
    if parsed.first_with(Role::Itself).is_some() {
        return Unwrap::Itself;
    }
    let mut i = parsed.end;
    if argv.get(i).is_some_and(|a| a.is("-")) {
        if parsed.first_with(Role::Script).is_none() {
            // `bash - x`: the script is read from stdin.
            return Unwrap::Opaque(format!("`{name} -` reads its script from stdin"));
        }
        i += 1;
    }
    if let Some(v) = parsed
        .first_with(Role::Script)
        .and_then(|f| f.value.as_ref())
    {
        // fish's `-c CMDLINE`.
        return if v.dynamic {
            Unwrap::Opaque(format!("`{name} -c` with a dynamic script"))
        } else {
            Unwrap::Script {
                script: v.clone(),
                new_process: true,
                info,
            }
        };
    }
    let dash_c = parsed.first_with(Role::Script).is_some();
    let reads_stdin = parsed.has_short(b's') || parsed.has_short(b'i');
    if !dash_c && argv.get(i).is_some_and(|a| a.dynamic) && i + 1 < argv.len() {
        // `bash $X -c '…'`: the dynamic word may be options.
        return dynamic_among_options(argv, &name, info);
    }
    if dash_c {
        return match argv.get(i) {
            Some(s) if s.dynamic => Unwrap::Opaque(format!("`{name} -c` with a dynamic script")),
            Some(s) => Unwrap::Script {
                script: s.clone(),
                new_process: true,
                info,
            },
            None => Unwrap::Opaque(format!("`{name} -c` without a script")),
        };
    }
    if reads_stdin || i >= argv.len() {
        return Unwrap::Opaque(format!("`{name}` reads its script from stdin"));
    }
    if crate::program::is_stdin_alias(&argv[i]) {
        // `bash /dev/stdin <<< '…'`, `bash <(curl …)`, `sh /proc/self/fd/0`
        return Unwrap::Opaque(format!("`{name}` reads its script from `{}`", argv[i].text));
    }
    // `bash script.sh`: the shell runs a file; it is the program judged.
    Unwrap::NotAWrapper
}

/// The shell options that change what the script's text means, as `set`
/// and `shopt` in the script would: history expansion (`-H`), every
/// `NAME=value` word an assignment (`-k`), and by name (`-o`, `-O`; a
/// dynamic name may be any) those two, `lastpipe` and `cdable_vars`, which
/// move where later commands run.
fn changes_how_words_read(parsed: &crate::options::Parsed) -> Option<&'static str> {
    const NAMED: &[&str] = &["histexpand", "keyword", "lastpipe", "cdable_vars"];
    if parsed.has_short(b'H') {
        return Some("with `-H`: history expansion runs earlier text in later lines");
    }
    if parsed.has_short(b'k') {
        return Some("with `-k`: every `NAME=value` argument is an assignment");
    }
    parsed
        .found
        .iter()
        .filter(|f| matches!(f.opt.short, b'o' | b'O'))
        .filter_map(|f| f.value.as_ref())
        .any(|v| v.dynamic || NAMED.contains(&v.text.as_str()))
        .then_some("with a shell option that changes how its script is read or where it runs")
}

/// `bash $X -c '…'`: `$X` may be any option (`--rcfile`, `-s`), so the
/// segment is opaque; a visible `-c` further on still gives the script, which
/// is walked so deny rules see it (POLICY.md amendment, point 1).
fn dynamic_among_options(argv: &[Arg], name: &str, info: WrapInfo) -> Unwrap {
    let why = format!("`{name}` with a dynamic word among its options");
    let dash_c = argv.iter().rposition(|w| {
        !w.dynamic
            && (w.text == "--command"
                || (w.text.starts_with('-')
                    && !w.text.starts_with("--")
                    && w.text[1..].contains('c')))
    });
    match dash_c.and_then(|p| argv.get(p + 1)) {
        Some(s) if !s.dynamic => Unwrap::Script {
            script: s.clone(),
            new_process: true,
            info: WrapInfo {
                opaque: Some(why),
                ..info
            },
        },
        _ => Unwrap::Opaque(why),
    }
}

pub(super) fn unwrap_eval(argv: &[Arg]) -> Unwrap {
    // `eval -- cmd` is `eval cmd`; any other option is an error.
    let mut words = &argv[1..];
    if words.first().is_some_and(|w| w.is("--")) {
        words = &words[1..];
    } else if let Some(w) = words
        .first()
        .filter(|w| w.text.len() > 1 && w.text.starts_with('-') && !w.dynamic)
    {
        return Unwrap::Opaque(format!(
            "`eval` with the option `{}`, which berth does not know",
            w.text
        ));
    }
    if words.is_empty() {
        return Unwrap::Itself;
    }
    if words.iter().any(|w| w.dynamic) {
        return Unwrap::Opaque("`eval` of a dynamic string".into());
    }
    join_script(words, false)
}

pub(super) fn unwrap_trap(argv: &[Arg]) -> Unwrap {
    let Some(first) = argv.get(1) else {
        return Unwrap::Itself;
    };
    if first.dynamic {
        return Unwrap::Opaque("`trap` with a dynamic handler".into());
    }
    let t = first.text.as_str();
    if matches!(t, "-p" | "-l" | "-" | "")
        || argv.len() == 2
            && t.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return Unwrap::Itself;
    }
    let script = if t == "--" {
        match argv.get(2) {
            Some(s) if !s.dynamic => s.clone(),
            Some(_) => return Unwrap::Opaque("`trap` with a dynamic handler".into()),
            None => return Unwrap::Itself,
        }
    } else {
        first.clone()
    };
    Unwrap::Script {
        script,
        new_process: false,
        info: WrapInfo::default(),
    }
}

/// util-linux `script`: records a terminal session; `-c` runs a command
/// line in it (options anywhere, as GNU getopt permutes them).
const SCRIPT: &[Opt] = &[
    value(b'c', "command").role(Role::Script), // a command line run with the user's shell
    value(b'E', "echo"),
    value(b'B', "log-io").role(Role::Writes), // a log of input and output
    value(b'I', "log-in").role(Role::Writes), // a log of input
    value(b'O', "log-out").role(Role::Writes), // a log of output (the operand's role)
    value(b'T', "log-timing").role(Role::Writes), // a timing log
    value(b'm', "logging-format"),
    value(b'o', "output-limit"),
    optional(b't', "timing"),
    flag(b'a', "append"),
    flag(b'e', "return"),
    flag(b'f', "flush"),
    flag(0, "force"),
    flag(b'q', "quiet"),
    flag(b'h', "help").role(Role::Itself),
    flag(b'V', "version").role(Role::Itself),
];

pub(super) fn unwrap_script_cmd(argv: &[Arg]) -> Unwrap {
    let parsed = parse(argv, 1, &Syntax::gnu(SCRIPT));
    if let Some(p) = &parsed.problem {
        return Unwrap::Opaque(p.describe("script"));
    }
    if parsed.first_with(Role::Itself).is_some() {
        return Unwrap::Itself;
    }
    // The typescript: the operand (`script -c cmd FILE`) and the log options.
    let mut info = WrapInfo::default();
    for f in parsed.found.iter().filter(|f| f.opt.role == Role::Writes) {
        if let Err(reason) = super::wrapper_writes("script", f, &mut info.writes) {
            return Unwrap::Opaque(reason);
        }
    }
    info.writes
        .extend(parsed.operands.first().map(|&i| argv[i].clone()));
    match parsed
        .first_with(Role::Script)
        .and_then(|f| f.value.clone())
    {
        Some(script) => Unwrap::Script {
            script,
            new_process: true,
            info,
        },
        // `script` without -c starts an interactive shell.
        None => Unwrap::Opaque("`script` without -c starts an interactive shell".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, script};
    use super::super::{Unwrap, unwrap};

    #[test]
    fn scripts_and_opaque() {
        assert_eq!(script("bash -c ls"), Some("ls".into()));
        assert_eq!(script("bash -lc ls"), Some("ls".into()));
        assert_eq!(script("sh -e -c ls"), Some("ls".into()));
        assert_eq!(script("bash -o pipefail -c ls"), Some("ls".into()));
        assert_eq!(script("eval git push"), Some("git push".into()));
        assert!(matches!(unwrap(&args("sh")), Unwrap::Opaque(_)));
        assert!(matches!(unwrap(&args("bash -s")), Unwrap::Opaque(_)));
        assert_eq!(unwrap(&args("bash script.sh")), Unwrap::NotAWrapper);
    }
}
