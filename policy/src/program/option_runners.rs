//! Everyday programs that run a command, a shell or code through an option
//! or by design (the GTFOBins class; POLICY.md, point 2: an option that
//! makes an allowed program run another program is opaque). One const per
//! program, a why per option; programs whose purpose is to run a command
//! line berth does not unwrap are in [`RUNS_COMMANDS`].

use super::{Facts, opt_runs};
use crate::arg::Arg;

/// Programs that run a command, a directory of programs or a login shell
/// given on their command line, in a form berth does not unwrap: opaque
/// unless they are only asked for help or their version.
const RUNS_COMMANDS: &[(&str, &str)] = &[
    ("logsave", "runs the command after its log file"),
    ("run-parts", "runs every program in a directory"),
    ("start-stop-daemon", "starts the program `-x`/`-a` names"),
    ("dtach", "runs a command in a detached session"),
    ("abduco", "runs a command in a detached session"),
    ("softlimit", "runs a command under limits (daemontools)"),
    ("pexec", "runs command lines in parallel"),
    ("rr", "`rr record` runs the command it records"),
    ("xterm", "`-e` runs a command in the terminal"),
    ("uxterm", "`-e` runs a command in the terminal"),
    ("x-terminal-emulator", "`-e` runs a command in the terminal"),
    ("gnome-terminal", "`--`/`-x` runs a command in the terminal"),
    ("konsole", "`-e` runs a command in the terminal"),
    ("xfce4-terminal", "`-x`/`-e` runs a command in the terminal"),
    ("alacritty", "`-e` runs a command in the terminal"),
    ("kitty", "runs a command in the terminal"),
    ("urxvt", "`-e` runs a command in the terminal"),
    ("terminator", "`-x`/`-e` runs a command in the terminal"),
    ("tilix", "`-e` runs a command in the terminal"),
    ("wezterm", "`start` runs a command in the terminal"),
    (
        "telnetd",
        "`-l` names the login program it serves on the network",
    ),
];

/// `split` options that run a command.
const SPLIT_RUNS_LONG: &[&str] = &[
    "--filter", // writes each piece to a shell command's stdin
];

/// `tcpdump` options that run a command.
const TCPDUMP_RUNS_SHORT: &[u8] = b"z"; // `-z CMD`: runs it on each file rotated

/// aria2's hooks: each runs a command when a download changes state.
const ARIA2_RUNS_LONG: &[&str] = &[
    "--on-download-start",
    "--on-download-pause",
    "--on-download-stop",
    "--on-download-complete",
    "--on-download-error",
    "--on-bt-download-complete",
    "--conf-path", // a config file that may set the hooks
];

/// rpm's options whose value is macro text it expands (`%(cmd)` runs a
/// shell command, `%{lua:…}` Lua).
const RPM_RUNS_LONG: &[&str] = &["--eval", "--define", "--macros", "--load", "--rcfile"];
const RPM_RUNS_SHORT: &[u8] = b"ED";

/// latexmk's options that name a program or are Perl code.
const LATEXMK_RUNS_LONG: &[&str] = &[
    "-pdflatex", // the program run as pdflatex
    "-latex",
    "-lualatex",
    "-xelatex",
    "-e", // Perl code
    "-r", // an rc file of Perl code
    "-pdflualatex",
    "-pdfxelatex",
];

/// Options whose value is code in the program's own language, one that can
/// run a command (`system()`, `!`).
const CODE_OPTIONS: &[(&str, &[&str], &[u8])] = &[
    ("gnuplot", &["--eval"], b"e"),   // `system("…")`, `! cmd`
    ("octave", &["--eval"], b""),     // `system("…")`
    ("octave-cli", &["--eval"], b""), // `system("…")`
    ("jrunscript", &[], b"e"),        // JavaScript with Java's `Runtime`
    ("pry", &["--exec"], b"e"),       // Ruby
    ("mail", &["--exec"], b"E"),      // mail commands (`!` runs a shell)
    ("mailx", &["--exec"], b"E"),     // mail commands (`!` runs a shell)
    ("s-nail", &[], b"Y"),            // mail commands (`!` runs a shell)
];

/// `cmake -D VAR=…` variables that name a program cmake runs while it
/// configures (its compiler checks) or builds. As for make's `CC=`, a
/// program found on `PATH` or in a system directory is the toolchain; a
/// file elsewhere, or a value with arguments or shell text, is not.
const CMAKE_PROGRAM_VARS: &[&str] = &[
    "_COMPILER",   // CMAKE_<LANG>_COMPILER and its _LAUNCHER
    "_LAUNCHER",   // CMAKE_<LANG>_COMPILER_LAUNCHER, _LINKER_LAUNCHER
    "_CLANG_TIDY", // runs clang-tidy (any program) beside the compiler
    "_CPPCHECK",   // the same for cppcheck
    "_CPPLINT",    // the same for cpplint
    "_INCLUDE_WHAT_YOU_USE",
    "CMAKE_MAKE_PROGRAM", // the build tool
    "CMAKE_LINKER",
    "CMAKE_AR",
    "CMAKE_RANLIB",
];

/// Where an installed toolchain's programs live.
const SYSTEM_BIN_DIRS: &[&str] = &["/usr/bin/", "/usr/local/bin/", "/bin/", "/usr/lib/ccache/"];

/// apt's configuration items (`-o ITEM=VALUE`, compared lowercased) that
/// name a command or program it runs, or options it passes dpkg.
const APT_RUNS_ITEMS: &[&str] = &[
    "invoke",                  // APT::Update::Pre-Invoke, DPkg::Post-Invoke, …: shell commands
    "install-pkgs",            // DPkg::Pre-Install-Pkgs: commands given the packages
    "dir::bin",                // Dir::Bin::dpkg, ::methods, …: the programs apt runs
    "dpkg::options",           // options given to dpkg
    "dpkg::tools",             // tool hooks
    "methods",                 // the transport programs
    "apt::changelogs::server", // not code, but a URL apt trusts
];

/// `apt`/`apt-get` run what a configuration item names; `-c FILE` reads
/// such items from a file.
fn apt(name: &str, args: &[Arg]) -> Facts {
    let mut words = args.iter().peekable();
    while let Some(a) = words.next() {
        let t = a.text.as_str();
        if a.dynamic && t.starts_with('-') {
            return Facts::opaque(format!("`{name}` with an option computed at run time"));
        }
        let item = if t == "-o" || t == "--option" {
            words
                .next()
                .map(|v| (v.dynamic, v.text.to_ascii_lowercase()))
        } else {
            t.strip_prefix("--option=")
                .or(t.strip_prefix("-o"))
                .map(|v| (a.dynamic, v.to_ascii_lowercase()))
        };
        if let Some((dynamic, item)) = item {
            let key = item.split('=').next().unwrap_or(&item);
            if dynamic || APT_RUNS_ITEMS.iter().any(|k| key.contains(k)) {
                return Facts::opaque(format!("`{name} -o {key}` names a command apt runs"));
            }
        }
        if t == "-c"
            || t.starts_with("--config-file")
            || t.starts_with("-c") && !t.starts_with("--")
        {
            return Facts::opaque(format!(
                "`{name} -c` reads a configuration file that may name commands"
            ));
        }
    }
    Facts::default()
}

/// yq's `--split-exp` (mikefarah's `-s`) writes one file per document,
/// named by an expression over the data: paths no argument names.
fn yq(args: &[Arg]) -> Facts {
    let splits = args.iter().take_while(|a| !a.is("--")).any(|a| {
        let t = a.text.as_str();
        let long = t.split('=').next().unwrap_or(t);
        !a.dynamic && (t.starts_with("-s") || long.len() >= 4 && "--split-exp".starts_with(long))
    });
    if splits {
        Facts::opaque("`yq --split-exp` writes files named by the data")
    } else {
        Facts::default()
    }
}

/// Whether `name` has a model here.
pub(super) fn has_model(name: &str) -> bool {
    RUNS_COMMANDS.iter().any(|(n, _)| *n == name)
        || CODE_OPTIONS.iter().any(|(n, _, _)| *n == name)
        || matches!(
            name,
            "split"
                | "gsplit"
                | "tcpdump"
                | "aria2c"
                | "rpm"
                | "latexmk"
                | "dc"
                | "m4"
                | "gm4"
                | "apt"
                | "apt-get"
                | "yq"
        )
}

pub(super) fn facts(name: &str, args: &[Arg]) -> Facts {
    if let Some((_, why)) = RUNS_COMMANDS.iter().find(|(n, _)| *n == name) {
        let itself =
            matches!(args, [a] if matches!(a.text.as_str(), "--help" | "-h" | "--version" | "-V"));
        return if itself {
            Facts::default()
        } else {
            Facts::opaque(format!("`{name}` {why}"))
        };
    }
    if let Some((_, long, short)) = CODE_OPTIONS.iter().find(|(n, _, _)| *n == name) {
        return opt_runs(args, long, short, &format!("`{name}` with code to run"));
    }
    match name {
        "split" | "gsplit" => opt_runs(
            args,
            SPLIT_RUNS_LONG,
            &[],
            "`split --filter` runs a shell command",
        ),
        "tcpdump" => opt_runs(args, &[], TCPDUMP_RUNS_SHORT, "`tcpdump -z` runs a command"),
        "aria2c" => opt_runs(
            args,
            ARIA2_RUNS_LONG,
            &[],
            "`aria2c --on-download-…` runs a command",
        ),
        "rpm" => opt_runs(
            args,
            RPM_RUNS_LONG,
            RPM_RUNS_SHORT,
            "`rpm` expands macros given to it (`%(…)` runs a shell command)",
        ),
        "latexmk" => latexmk(args),
        "apt" | "apt-get" => apt(name, args),
        "yq" => yq(args),
        "dc" => dc(args),
        "m4" | "gm4" => m4(args),
        _ => Facts::default(),
    }
}

/// latexmk takes its options with one dash (`-pdflatex=CMD`), or two.
fn latexmk(args: &[Arg]) -> Facts {
    let runs = args.iter().any(|a| {
        let t = a.text.trim_start_matches('-');
        a.dynamic && a.text.starts_with('-')
            || a.text.starts_with('-')
                && LATEXMK_RUNS_LONG
                    .iter()
                    .any(|o| t.split('=').next() == Some(o.trim_start_matches('-')))
    });
    if runs {
        Facts::opaque("`latexmk` with a program to run or Perl code")
    } else {
        Facts::default()
    }
}

/// GNU dc's `!` runs the rest of the line as a shell command: an
/// expression (`-e`, `--expression`) holding one is opaque.
fn dc(args: &[Arg]) -> Facts {
    let mut code = false;
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        if t.starts_with("--e") || t.starts_with("-e") {
            let value = t
                .split_once('=')
                .map(|(_, v)| v)
                .or_else(|| t.strip_prefix("-e").filter(|v| !v.is_empty()))
                .map(str::to_string)
                .or_else(|| args.get(i + 1).map(|n| n.text.clone()));
            code |= a.dynamic
                || args.get(i + 1).is_some_and(|n| n.dynamic)
                || value.is_none_or(|v| v.contains('!'));
        }
    }
    if code {
        Facts::opaque("`dc` with `!`, which runs a shell command")
    } else {
        Facts::default()
    }
}

/// m4 macros defined on the command line (`-D NAME=BODY`) whose body runs
/// a command when expanded (`syscmd`, `esyscmd`).
fn m4(args: &[Arg]) -> Facts {
    let runs_attached = args
        .iter()
        .any(|a| a.text.starts_with('-') && (a.dynamic || a.text.contains("syscmd")));
    let runs_next = args.windows(2).any(|w| {
        matches!(w[0].text.as_str(), "-D" | "--define")
            && (w[1].dynamic || w[1].text.contains("syscmd"))
    });
    if runs_attached || runs_next {
        Facts::opaque("`m4` with a macro that runs a command (`syscmd`, `esyscmd`)")
    } else {
        Facts::default()
    }
}

/// `cmake -D VAR=VALUE` where VAR names a program or CMake code it runs.
pub(super) fn cmake_defines(args: &[Arg]) -> Option<String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let t = a.text.as_str();
        let def = if t == "-D" {
            i += 1;
            args.get(i)
        } else if t.starts_with("-D") {
            Some(a)
        } else {
            None
        };
        if let Some(d) = def {
            let var = d.text.trim_start_matches("-D");
            let var = var.split(['=', ':']).next().unwrap_or(var);
            let value = d.text.split_once('=').map_or("", |(_, v)| v);
            let unusual = value.contains([' ', '$', '`', ';', '|', '&', '<', '>', '\n'])
                || value.contains('/') && !SYSTEM_BIN_DIRS.iter().any(|p| value.starts_with(p));
            if CMAKE_PROGRAM_VARS.iter().any(|v| var.contains(v)) && (d.dynamic || unusual) {
                return Some(format!("`cmake -D {var}=` names a program file to run"));
            }
        }
        i += 1;
    }
    None
}
