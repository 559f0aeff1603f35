//! Wrappers: programs whose arguments are a command they run.
//!
//! A deny rule must match through them (`nohup rm -rf x` meets `deny: rm`),
//! and an allow rule must judge what really runs (`timeout 30 npm test` is
//! `npm test`). Claude Code's deny rules were bypassed by wrappers it did not
//! know; this table is the class, so it lists the usual ones broadly: process
//! control (`timeout`, `nice`, `nohup`, …), privilege (`sudo`, `doas`, …),
//! environment (`env`, version managers' `exec`/`run`), package runners
//! (`npx`, `uvx`, …), shells with `-c`, `eval`, `trap`, `watch`, `xargs`.
//!
//! `find -exec` and git's command-running subcommands are handled with the
//! programs themselves (`program.rs`): find is a program in its own right.

use crate::arg::Arg;

/// What a wrapper invocation runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwrap {
    /// Not a wrapper: the invocation is the program.
    NotAWrapper,
    /// Runs the command that starts at `start`.
    Command { start: usize, info: WrapInfo },
    /// Runs a shell command line.
    Script {
        script: Arg,
        /// Runs in a new process (`sh -c`) rather than the current shell
        /// (`eval`, `trap`): cwd changes do not come back.
        new_process: bool,
        info: WrapInfo,
    },
    /// Runs nothing else (`env` alone, `command -v x`, `sudo -l`).
    Itself,
    /// Runs something berth cannot see.
    Opaque(String),
}

/// What a wrapper adds to the command it runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrapInfo {
    /// Environment assignments it makes (`env X=1 cmd`).
    pub assigns: Vec<(String, Arg)>,
    /// The directory it runs the command in (`env -C dir`).
    pub chdir: Option<Arg>,
    /// Arguments are appended from stdin (`xargs`).
    pub trailing_dynamic: bool,
    /// Occurrences of this string in the command are replaced from stdin
    /// (`xargs -I {}`).
    pub replace: Option<String>,
    /// The command is a package name (`npx`, `uvx`, …).
    pub package: bool,
    /// The wrapper grants privilege (`sudo`, `doas`, …).
    pub privileged: bool,
    /// The wrapper is a shell (`bash -c`).
    pub shell: bool,
}

/// Option syntax of a simple wrapper.
struct Spec {
    /// Short options that take a value (attached or the next word).
    short_val: &'static [u8],
    /// Long options that take a value (`--x=v` or the next word).
    long_val: &'static [&'static str],
    /// Positional arguments before the command (`timeout DURATION cmd`).
    positional: usize,
    /// Options whose value is a shell command line.
    script_short: &'static [u8],
    script_long: &'static [&'static str],
    /// Options after which nothing else runs.
    itself_short: &'static [u8],
    itself_long: &'static [&'static str],
    privileged: bool,
    package: bool,
}

const NONE: Spec = Spec {
    short_val: b"",
    long_val: &[],
    positional: 0,
    script_short: b"",
    script_long: &[],
    itself_short: b"",
    itself_long: &[],
    privileged: false,
    package: false,
};

/// The simple wrappers, by program name.
fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        "nohup" | "builtin" | "setsid" | "catchsegv" | "dbus-run-session" | "entr"
        | "with-contenv" | "chronic" | "unbuffer" | "pv-wrap" => Spec {
            itself_short: b"",
            ..NONE
        },
        "command" => Spec {
            itself_short: b"vV",
            ..NONE
        },
        "exec" => Spec {
            short_val: b"a",
            ..NONE
        },
        "timeout" => Spec {
            short_val: b"sk",
            long_val: &["--signal", "--kill-after"],
            positional: 1,
            ..NONE
        },
        "nice" => Spec {
            short_val: b"n",
            long_val: &["--adjustment"],
            ..NONE
        },
        "ionice" => Spec {
            short_val: b"cnpPu",
            long_val: &["--class", "--classdata", "--pid", "--pgid", "--uid"],
            itself_short: b"p",
            ..NONE
        },
        "stdbuf" => Spec {
            short_val: b"ioe",
            long_val: &["--input", "--output", "--error"],
            ..NONE
        },
        "time" => Spec {
            short_val: b"fo",
            long_val: &["--format", "--output"],
            ..NONE
        },
        "taskset" => Spec {
            positional: 1,
            itself_short: b"p",
            ..NONE
        },
        "chrt" => Spec {
            short_val: b"T",
            positional: 1,
            itself_short: b"pm",
            ..NONE
        },
        "prlimit" => Spec {
            short_val: b"p",
            long_val: &["--pid"],
            ..NONE
        },
        "faketime" => Spec {
            short_val: b"f",
            positional: 1,
            ..NONE
        },
        "fakeroot" => Spec {
            short_val: b"ls",
            long_val: &["--lib", "--faked", "-s", "-i"],
            ..NONE
        },
        "chroot" => Spec {
            long_val: &["--userspec", "--groups"],
            positional: 1,
            privileged: true,
            ..NONE
        },
        "unshare" => Spec {
            short_val: b"S",
            long_val: &["--setuid", "--setgid", "--wd", "--root"],
            privileged: true,
            ..NONE
        },
        "nsenter" => Spec {
            short_val: b"tSGwr",
            long_val: &["--target", "--setuid", "--setgid"],
            privileged: true,
            ..NONE
        },
        "systemd-run" => Spec {
            short_val: b"pEMH",
            long_val: &[
                "--unit",
                "--property",
                "--setenv",
                "--uid",
                "--gid",
                "--working-directory",
                "--machine",
                "--host",
                "--slice",
                "--description",
                "--nice",
                "--service-type",
            ],
            ..NONE
        },
        "strace" => Spec {
            short_val: b"eoOpPsSuUXabI",
            long_val: &["--output", "--trace", "--signal"],
            ..NONE
        },
        "ltrace" => Spec {
            short_val: b"eoOpPsSuUXaAbDFlnx",
            long_val: &["--output"],
            ..NONE
        },
        "valgrind" | "caffeinate" => NONE,
        "firejail" => NONE,
        "su-exec" | "gosu" | "setuidgid" => Spec {
            positional: 1,
            privileged: true,
            ..NONE
        },
        "setpriv" => Spec {
            long_val: &[
                "--reuid",
                "--regid",
                "--groups",
                "--inh-caps",
                "--bounding-set",
            ],
            privileged: true,
            ..NONE
        },
        "sudo" => Spec {
            short_val: b"ughpCDrtTUR",
            long_val: &[
                "--user",
                "--group",
                "--host",
                "--prompt",
                "--close-from",
                "--chdir",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--chroot",
            ],
            itself_short: b"lvkKVe",
            itself_long: &[
                "--list",
                "--validate",
                "--reset-timestamp",
                "--remove-timestamp",
                "--version",
                "--edit",
            ],
            privileged: true,
            ..NONE
        },
        "doas" => Spec {
            short_val: b"uC",
            itself_short: b"L",
            privileged: true,
            ..NONE
        },
        "pkexec" => Spec {
            long_val: &["--user"],
            privileged: true,
            ..NONE
        },
        "run0" => Spec {
            short_val: b"ugD",
            long_val: &[
                "--user",
                "--group",
                "--chdir",
                "--setenv",
                "--unit",
                "--property",
                "--description",
                "--slice",
                "--nice",
                "--background",
                "--machine",
            ],
            privileged: true,
            ..NONE
        },
        "sudoedit" => Spec {
            privileged: true,
            ..NONE
        },
        // Version and environment managers that run a command.
        "direnv" | "rustup" | "nvm" | "conda" | "mamba" | "micromamba" | "poetry" | "pipenv"
        | "pdm" | "hatch" | "rye" | "bundle" | "rbenv" | "pyenv" | "asdf" | "mise" | "rtx"
        | "volta" | "fnm" | "devbox" | "nix" | "dotenvx" | "uv" | "bun" | "npm" | "pnpm"
        | "yarn" | "pipx" => return None,
        // Package runners.
        "npx" => Spec {
            short_val: b"p",
            long_val: &["--package", "--prefix", "--cache"],
            script_short: b"c",
            script_long: &["--call"],
            package: true,
            ..NONE
        },
        "bunx" => Spec {
            short_val: b"p",
            long_val: &["--package"],
            package: true,
            ..NONE
        },
        "uvx" => Spec {
            short_val: b"p",
            long_val: &[
                "--from",
                "--with",
                "--with-requirements",
                "--python",
                "--index-url",
                "--extra-index-url",
                "--index",
                "--constraints",
                "--overrides",
            ],
            package: true,
            ..NONE
        },
        "dotenv" => Spec {
            short_val: b"evc",
            ..NONE
        },
        // Less common process wrappers (deny rules must see through them too).
        "eatmydata" | "nocache" | "torsocks" | "tsocks" | "rlwrap" | "run-one" | "ifne"
        | "daemonize" | "gnohup" | "fakechroot" | "linux32" | "linux64" | "ccache" | "sccache"
        | "distcc" | "icecc" => NONE,
        "setarch" => Spec {
            positional: 1,
            ..NONE
        },
        "proxychains" | "proxychains4" => Spec {
            short_val: b"f",
            ..NONE
        },
        "trickle" => Spec {
            short_val: b"dulwtn",
            ..NONE
        },
        "cpulimit" => Spec {
            short_val: b"lpei",
            long_val: &["--limit", "--pid", "--exe", "--path"],
            itself_short: b"pPe",
            ..NONE
        },
        "timelimit" => Spec {
            short_val: b"tTsSpP",
            ..NONE
        },
        "lckdo" => Spec {
            short_val: b"W",
            positional: 1,
            ..NONE
        },
        "with-lock-ex" => Spec {
            positional: 1,
            ..NONE
        },
        "chpst" => Spec {
            short_val: b"uUbeglmdosctfp",
            ..NONE
        },
        "cgexec" => Spec {
            short_val: b"g",
            ..NONE
        },
        "numactl" => Spec {
            short_val: b"NCmpiP",
            long_val: &[
                "--cpunodebind",
                "--physcpubind",
                "--membind",
                "--preferred",
                "--interleave",
            ],
            ..NONE
        },
        "gtimeout" => Spec {
            short_val: b"sk",
            long_val: &["--signal", "--kill-after"],
            positional: 1,
            ..NONE
        },
        "gnice" => Spec {
            short_val: b"n",
            long_val: &["--adjustment"],
            ..NONE
        },
        "gstdbuf" => Spec {
            short_val: b"ioe",
            long_val: &["--input", "--output", "--error"],
            ..NONE
        },
        "flatpak-spawn" => Spec {
            long_val: &["--directory", "--env", "--forward-fd"],
            ..NONE
        },
        "schroot" => Spec {
            short_val: b"cud",
            long_val: &["--chroot", "--user", "--directory"],
            ..NONE
        },
        "arch" => NONE,
        "sandbox-exec" => Spec {
            short_val: b"fpD",
            ..NONE
        },
        "xvfb-run" => Spec {
            short_val: b"nsfpe",
            long_val: &[
                "--server-num",
                "--server-args",
                "--auth-file",
                "--xauth-protocol",
                "--error-file",
            ],
            ..NONE
        },
        _ => return None,
    })
}

/// Subcommand-style wrappers: `tool SUB [opts] cmd…` (`npm exec`, `uv run`).
/// Returns the spec and the number of words of the wrapper prefix.
fn sub_spec(argv: &[Arg]) -> Option<(Spec, usize)> {
    let name = argv.first()?.basename();
    let sub = argv.get(1).and_then(Arg::known)?;
    let pkg_npm = Spec {
        short_val: b"pw",
        long_val: &["--package", "--workspace", "--prefix"],
        script_short: b"c",
        script_long: &["--call"],
        package: true,
        ..NONE
    };
    Some(match (name, sub) {
        ("npm", "exec" | "x") => (pkg_npm, 2),
        ("pnpm", "dlx") => (
            Spec {
                long_val: &["--package"],
                script_short: b"c",
                script_long: &["--shell-mode"],
                package: true,
                ..NONE
            },
            2,
        ),
        ("pnpm", "exec") => (
            Spec {
                script_short: b"c",
                script_long: &["--shell-mode"],
                ..NONE
            },
            2,
        ),
        ("yarn", "dlx") => (
            Spec {
                short_val: b"p",
                long_val: &["--package"],
                package: true,
                ..NONE
            },
            2,
        ),
        ("yarn", "exec") => (NONE, 2),
        ("bun", "x") => (
            Spec {
                short_val: b"p",
                long_val: &["--package"],
                package: true,
                ..NONE
            },
            2,
        ),
        ("pipx", "run") => (
            Spec {
                long_val: &["--spec", "--python", "--pip-args", "--index-url"],
                package: true,
                ..NONE
            },
            2,
        ),
        ("uv", "run") => (
            Spec {
                short_val: b"p",
                long_val: &[
                    "--with",
                    "--with-editable",
                    "--with-requirements",
                    "--python",
                    "--project",
                    "--directory",
                    "--package",
                    "--extra",
                    "--group",
                    "--index-url",
                    "--extra-index-url",
                    "--env-file",
                    "--from",
                ],
                ..NONE
            },
            2,
        ),
        ("uv", "tool") if argv.get(2).is_some_and(|a| a.is("run")) => (
            Spec {
                short_val: b"p",
                long_val: &["--from", "--with", "--python", "--index-url"],
                package: true,
                ..NONE
            },
            3,
        ),
        ("poetry" | "pipenv" | "pdm" | "hatch" | "rye" | "devbox" | "volta" | "dotenvx", "run") => {
            (NONE, 2)
        }
        ("bundle" | "rbenv" | "pyenv" | "asdf", "exec") => (NONE, 2),
        ("conda" | "mamba" | "micromamba", "run") => (
            Spec {
                short_val: b"np",
                long_val: &["--name", "--prefix", "--cwd"],
                ..NONE
            },
            2,
        ),
        ("mise" | "rtx", "exec" | "x") => (
            Spec {
                short_val: b"C",
                long_val: &["--cd"],
                ..NONE
            },
            2,
        ),
        ("fnm", "exec") => (
            Spec {
                long_val: &["--using"],
                ..NONE
            },
            2,
        ),
        ("nvm", "exec") => (
            Spec {
                positional: 1,
                ..NONE
            },
            2,
        ),
        ("rustup", "run") => (
            Spec {
                positional: 1,
                ..NONE
            },
            2,
        ),
        ("direnv", "exec") => (
            Spec {
                positional: 1,
                ..NONE
            },
            2,
        ),
        ("nix", "develop" | "shell") => {
            // `nix develop -c cmd…` / `--command cmd…`
            let mut i = 2;
            while let Some(a) = argv.get(i) {
                if a.is("-c") || a.is("--command") {
                    return Some((Spec { ..NONE }, i + 1));
                }
                i += 1;
            }
            return None;
        }
        _ => return None,
    })
}

/// Unwraps one invocation: does `argv` wrap another command, and which?
pub fn unwrap(argv: &[Arg]) -> Unwrap {
    let Some(first) = argv.first() else {
        return Unwrap::NotAWrapper;
    };
    if first.dynamic {
        return Unwrap::NotAWrapper;
    }
    let name = first.basename();
    match name {
        "env" => return unwrap_env(argv),
        "xargs" => return unwrap_xargs(argv),
        "watch" => return unwrap_watch(argv),
        "eval" => return unwrap_eval(argv),
        "trap" => return unwrap_trap(argv),
        "flock" => return unwrap_flock(argv),
        "su" => return unwrap_su(argv, false),
        "runuser" => return unwrap_su(argv, true),
        "script" => return unwrap_script_cmd(argv),
        "busybox" | "toybox" => {
            return if argv.len() > 1 {
                Unwrap::Command {
                    start: 1,
                    info: WrapInfo::default(),
                }
            } else {
                Unwrap::Itself
            };
        }
        "source" | "." => return Unwrap::Opaque(format!("`{name}` runs a file berth cannot see")),
        "parallel" => return Unwrap::Opaque("`parallel` builds commands from its input".into()),
        "expect" => return Unwrap::Opaque("`expect` runs a Tcl script".into()),
        "tmux" | "screen" => {
            return Unwrap::Opaque(format!(
                "`{name}` runs commands in a session berth cannot see"
            ));
        }
        "nix-shell" => return unwrap_nix_shell(argv),
        "sg" => return unwrap_sg(argv),
        "hyperfine" => return unwrap_hyperfine(argv),
        "cross-env" | "cross-env-shell" => return unwrap_env(argv),
        "concurrently" => return unwrap_concurrently(argv),
        "nodemon" => return unwrap_nodemon(argv),
        "bwrap" | "proot" | "firejail" | "systemd-nspawn" | "pee" => {
            return Unwrap::Opaque(format!(
                "`{name}` runs commands with options berth does not follow"
            ));
        }
        // Secret managers and runners that take the command after `--`.
        "op" | "doppler" | "aws-vault" | "infisical" | "teller" | "env-cmd" | "with-env"
        | "dotenv-cli" => {
            return match argv.iter().position(|a| a.is("--")) {
                Some(i) if i + 1 < argv.len() => Unwrap::Command {
                    start: i + 1,
                    info: WrapInfo::default(),
                },
                _ if name == "env-cmd" => unwrap_with(
                    argv,
                    1,
                    &Spec {
                        short_val: b"fer",
                        long_val: &["--file", "--environments", "--rc-file"],
                        ..NONE
                    },
                ),
                _ => Unwrap::NotAWrapper,
            };
        }
        _ => {}
    }
    if is_shell(name) {
        return unwrap_shell(argv);
    }
    if let Some((spec, skip)) = sub_spec(argv) {
        return unwrap_with(argv, skip, &spec);
    }
    if let Some(spec) = spec(name) {
        return unwrap_with(argv, 1, &spec);
    }
    Unwrap::NotAWrapper
}

/// Programs that are shells (`-c` runs a script).
pub fn is_shell(name: &str) -> bool {
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

/// Whether `name` is a wrapper (for `--always`, which never adds rules for them).
pub fn is_wrapper(name: &str) -> bool {
    is_shell(name)
        || spec(name).is_some()
        || matches!(
            name,
            "env"
                | "xargs"
                | "watch"
                | "eval"
                | "trap"
                | "flock"
                | "su"
                | "runuser"
                | "script"
                | "busybox"
                | "toybox"
                | "source"
                | "."
                | "parallel"
                | "expect"
                | "tmux"
                | "screen"
                | "nix-shell"
                | "sg"
                | "hyperfine"
                | "find"
        )
}

fn long_name(a: &str) -> &str {
    a.split('=').next().unwrap_or(a)
}

/// Generic option parsing for a wrapper described by `spec`.
fn unwrap_with(argv: &[Arg], skip: usize, spec: &Spec) -> Unwrap {
    let info = WrapInfo {
        privileged: spec.privileged,
        package: spec.package,
        ..WrapInfo::default()
    };
    let mut i = skip;
    let mut positionals = 0;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            if positionals < spec.positional {
                positionals += 1;
                i += 1;
                continue;
            }
            break;
        }
        let t = a.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if let Some(long) = t.strip_prefix("--").filter(|l| !l.is_empty()) {
            let name = long_name(t);
            let _ = long;
            if spec.script_long.contains(&name) {
                let script = if t.contains('=') {
                    Some(Arg {
                        text: t[name.len() + 1..].to_string(),
                        ..a.clone()
                    })
                } else {
                    argv.get(i + 1).cloned()
                };
                return match script {
                    Some(s) => Unwrap::Script {
                        script: s,
                        new_process: true,
                        info,
                    },
                    None => Unwrap::Itself,
                };
            }
            if spec.itself_long.contains(&name) {
                return Unwrap::Itself;
            }
            if spec.long_val.contains(&name) && !t.contains('=') {
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if t.len() > 1 && t.starts_with('-') && positionals == 0 {
            let bytes = t.as_bytes();
            let mut j = 1;
            let mut consumed_next = false;
            while j < bytes.len() {
                let c = bytes[j];
                if spec.script_short.contains(&c) {
                    let script = if j + 1 < bytes.len() {
                        Some(Arg {
                            text: t[j + 1..].to_string(),
                            ..a.clone()
                        })
                    } else {
                        argv.get(i + 1).cloned()
                    };
                    return match script {
                        Some(s) => Unwrap::Script {
                            script: s,
                            new_process: true,
                            info,
                        },
                        None => Unwrap::Itself,
                    };
                }
                if spec.itself_short.contains(&c) {
                    return Unwrap::Itself;
                }
                if spec.short_val.contains(&c) {
                    if j + 1 == bytes.len() {
                        consumed_next = true;
                    }
                    break;
                }
                j += 1;
            }
            i += if consumed_next { 2 } else { 1 };
            continue;
        }
        if positionals < spec.positional {
            positionals += 1;
            i += 1;
            continue;
        }
        break;
    }
    if i >= argv.len() {
        return Unwrap::Itself;
    }
    Unwrap::Command { start: i, info }
}

fn unwrap_env(argv: &[Arg]) -> Unwrap {
    let mut info = WrapInfo::default();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            if a.text.contains('=') {
                // `env "$X=1" cmd` or `env X=$Y cmd`
                if let Some((name, _)) = a.text.split_once('=')
                    && is_env_name(name)
                {
                    info.assigns.push((
                        name.to_string(),
                        Arg {
                            text: String::new(),
                            ..a.clone()
                        },
                    ));
                    i += 1;
                    continue;
                }
            }
            break;
        }
        let t = a.text.as_str();
        if t == "--" {
            i += 1;
            continue;
        }
        if t == "-"
            || t == "-i"
            || t == "--ignore-environment"
            || t == "-0"
            || t == "--null"
            || t == "-v"
            || t == "--debug"
        {
            i += 1;
            continue;
        }
        if t == "-u" || t == "--unset" || t == "-a" || t == "--argv0" {
            i += 2;
            continue;
        }
        if t.starts_with("--argv0=") {
            i += 1;
            continue;
        }
        if t.starts_with("--unset=")
            || t.starts_with("--default-signal")
            || t.starts_with("--ignore-signal")
            || t.starts_with("--block-signal")
            || t == "--list-signal-handling"
        {
            i += 1;
            continue;
        }
        if t == "-C" || t == "--chdir" {
            info.chdir = argv.get(i + 1).cloned();
            i += 2;
            continue;
        }
        if let Some(d) = t.strip_prefix("--chdir=") {
            info.chdir = Some(Arg {
                text: d.to_string(),
                ..a.clone()
            });
            i += 1;
            continue;
        }
        if t == "-S"
            || t == "--split-string"
            || t.starts_with("--split-string=")
            || (t.starts_with("-S") && t.len() > 2)
        {
            let script = if let Some(v) = t.strip_prefix("--split-string=") {
                Some(Arg {
                    text: v.to_string(),
                    ..a.clone()
                })
            } else if t.len() > 2 && t.starts_with("-S") {
                Some(Arg {
                    text: t[2..].to_string(),
                    ..a.clone()
                })
            } else {
                argv.get(i + 1).cloned()
            };
            let rest_from = if t == "-S" || t == "--split-string" {
                i + 2
            } else {
                i + 1
            };
            return match script {
                Some(s)
                    if !s.dynamic
                        && argv[rest_from.min(argv.len())..].iter().all(|r| !r.dynamic) =>
                {
                    // The split string's words come first, then the rest.
                    let mut text = s.text.clone();
                    for r in &argv[rest_from.min(argv.len())..] {
                        text.push(' ');
                        text.push_str(&shell_quote(&r.text));
                    }
                    Unwrap::Script {
                        script: Arg::lit(text),
                        new_process: true,
                        info,
                    }
                }
                Some(_) => Unwrap::Opaque("`env -S` with a dynamic string".into()),
                None => Unwrap::Itself,
            };
        }
        if t.starts_with('-') && t.len() > 1 {
            // `-iu X` style clusters: treat a trailing `u`/`C`/`S` as taking the next word.
            let last = t.as_bytes()[t.len() - 1];
            i += if matches!(last, b'u' | b'C' | b'a') {
                2
            } else {
                1
            };
            continue;
        }
        if let Some((name, value)) = t.split_once('=')
            && is_env_name(name)
        {
            info.assigns.push((
                name.to_string(),
                Arg {
                    text: value.to_string(),
                    ..a.clone()
                },
            ));
            i += 1;
            continue;
        }
        break;
    }
    if i >= argv.len() {
        if info.assigns.is_empty() && info.chdir.is_none() {
            return Unwrap::Itself;
        }
        // `env X=1` alone prints the environment: still judge the assignments.
        return Unwrap::Command {
            start: argv.len(),
            info,
        };
    }
    Unwrap::Command { start: i, info }
}

fn is_env_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

fn unwrap_xargs(argv: &[Arg]) -> Unwrap {
    let mut info = WrapInfo {
        trailing_dynamic: true,
        ..WrapInfo::default()
    };
    let mut i = 1;
    // Options that take a value in the next word when not attached.
    const SHORT_VAL: &[u8] = b"aEdILnPs";
    const LONG_VAL: &[&str] = &[
        "--arg-file",
        "--delimiter",
        "--max-lines",
        "--max-args",
        "--max-procs",
        "--max-chars",
        "--process-slot-var",
        "--eof",
        "--replace",
    ];
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            break;
        }
        let t = a.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            let name = long_name(t);
            if name == "--replace" {
                info.replace = Some(t.split_once('=').map_or("{}", |(_, v)| v).to_string());
                info.trailing_dynamic = false;
                i += 1;
                continue;
            }
            if LONG_VAL.contains(&name) && !t.contains('=') {
                i += 2;
            } else {
                i += 1;
            }
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            let bytes = t.as_bytes();
            let c = bytes[1];
            if c == b'I' {
                let r = if t.len() > 2 {
                    Some(t[2..].to_string())
                } else {
                    argv.get(i + 1).map(|x| x.text.clone())
                };
                info.replace = r;
                info.trailing_dynamic = false;
                i += if t.len() > 2 { 1 } else { 2 };
                continue;
            }
            if c == b'i' {
                info.replace = Some(if t.len() > 2 {
                    t[2..].to_string()
                } else {
                    "{}".to_string()
                });
                info.trailing_dynamic = false;
                i += 1;
                continue;
            }
            // A cluster: the first value-taking option takes the rest or the next word.
            let mut next = false;
            for (j, &ch) in bytes.iter().enumerate().skip(1) {
                if SHORT_VAL.contains(&ch) {
                    next = j + 1 == bytes.len();
                    break;
                }
            }
            i += if next { 2 } else { 1 };
            continue;
        }
        break;
    }
    if i >= argv.len() {
        // xargs with no command runs `echo`.
        return Unwrap::Itself;
    }
    Unwrap::Command { start: i, info }
}

fn unwrap_watch(argv: &[Arg]) -> Unwrap {
    let mut i = 1;
    let mut exec = false;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            break;
        }
        let t = a.text.as_str();
        if t == "--" {
            i += 1;
            break;
        }
        if t == "-x" || t == "--exec" {
            exec = true;
            i += 1;
            continue;
        }
        if t == "-n" || t == "--interval" || t == "-q" || t == "--equexit" {
            i += 2;
            continue;
        }
        if t.starts_with('-') && t.len() > 1 {
            if t.starts_with("-n") || t.starts_with("--") {
                i += 1;
                continue;
            }
            if t.contains('x') {
                exec = true;
            }
            i += 1;
            continue;
        }
        break;
    }
    if i >= argv.len() {
        return Unwrap::Itself;
    }
    if exec {
        return Unwrap::Command {
            start: i,
            info: WrapInfo::default(),
        };
    }
    join_script(&argv[i..], true)
}

/// Joins words with spaces into a script, as `eval` and `watch` do.
fn join_script(words: &[Arg], new_process: bool) -> Unwrap {
    if words.iter().any(|w| w.dynamic) {
        return Unwrap::Opaque("a command line built from a dynamic string".into());
    }
    let text = words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    Unwrap::Script {
        script: Arg::lit(text),
        new_process,
        info: WrapInfo::default(),
    }
}

fn unwrap_eval(argv: &[Arg]) -> Unwrap {
    let words = &argv[1..];
    if words.is_empty() {
        return Unwrap::Itself;
    }
    if words.iter().any(|w| w.dynamic) {
        return Unwrap::Opaque("`eval` of a dynamic string".into());
    }
    join_script(words, false)
}

fn unwrap_trap(argv: &[Arg]) -> Unwrap {
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

fn unwrap_flock(argv: &[Arg]) -> Unwrap {
    let mut i = 1;
    let mut have_file = false;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic && (t == "-c" || t == "--command") {
            return match argv.get(i + 1) {
                Some(s) => Unwrap::Script {
                    script: s.clone(),
                    new_process: true,
                    info: WrapInfo::default(),
                },
                None => Unwrap::Itself,
            };
        }
        if !a.dynamic && t.starts_with("--command=") {
            return Unwrap::Script {
                script: Arg {
                    text: t["--command=".len()..].to_string(),
                    ..a.clone()
                },
                new_process: true,
                info: WrapInfo::default(),
            };
        }
        if !a.dynamic && !have_file && t.starts_with('-') && t.len() > 1 {
            i += if matches!(
                t,
                "-w" | "--wait" | "--timeout" | "-E" | "--conflict-exit-code"
            ) {
                2
            } else {
                1
            };
            continue;
        }
        if !have_file {
            have_file = true;
            i += 1;
            continue;
        }
        if a.is("--") {
            i += 1;
            continue;
        }
        return Unwrap::Command {
            start: i,
            info: WrapInfo::default(),
        };
    }
    Unwrap::Itself
}

fn unwrap_su(argv: &[Arg], runuser: bool) -> Unwrap {
    let info = WrapInfo {
        privileged: true,
        ..WrapInfo::default()
    };
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if a.dynamic {
            i += 1;
            continue;
        }
        if t == "-c" || t == "--command" || t == "--session-command" {
            return match argv.get(i + 1) {
                Some(s) => Unwrap::Script {
                    script: s.clone(),
                    new_process: true,
                    info,
                },
                None => Unwrap::Itself,
            };
        }
        if let Some(v) = t
            .strip_prefix("--command=")
            .or_else(|| t.strip_prefix("--session-command="))
        {
            return Unwrap::Script {
                script: Arg {
                    text: v.to_string(),
                    ..a.clone()
                },
                new_process: true,
                info,
            };
        }
        if runuser && (t == "-u" || t == "--user") {
            // `runuser -u user [--] cmd…`
            let mut j = i + 2;
            if argv.get(j).is_some_and(|x| x.is("--")) {
                j += 1;
            }
            return if j < argv.len() {
                Unwrap::Command { start: j, info }
            } else {
                Unwrap::Itself
            };
        }
        if matches!(
            t,
            "-s" | "--shell"
                | "-g"
                | "--group"
                | "-G"
                | "--supp-group"
                | "-w"
                | "--whitelist-environment"
        ) {
            i += 2;
            continue;
        }
        i += 1;
    }
    Unwrap::Itself
}

fn unwrap_script_cmd(argv: &[Arg]) -> Unwrap {
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic && (t == "-c" || t == "--command") {
            return match argv.get(i + 1) {
                Some(s) => Unwrap::Script {
                    script: s.clone(),
                    new_process: true,
                    info: WrapInfo::default(),
                },
                None => Unwrap::Itself,
            };
        }
        if !a.dynamic && t.starts_with("--command=") {
            return Unwrap::Script {
                script: Arg {
                    text: t["--command=".len()..].to_string(),
                    ..a.clone()
                },
                new_process: true,
                info: WrapInfo::default(),
            };
        }
        i += 1;
    }
    // `script` without -c starts an interactive shell.
    Unwrap::Opaque("`script` without -c starts an interactive shell".into())
}

fn unwrap_nix_shell(argv: &[Arg]) -> Unwrap {
    for (i, a) in argv.iter().enumerate() {
        if a.is("--run") || a.is("--command") {
            return match argv.get(i + 1) {
                Some(s) => Unwrap::Script {
                    script: s.clone(),
                    new_process: true,
                    info: WrapInfo::default(),
                },
                None => Unwrap::Itself,
            };
        }
    }
    Unwrap::Opaque("`nix-shell` without --run starts an interactive shell".into())
}

fn unwrap_sg(argv: &[Arg]) -> Unwrap {
    let info = WrapInfo {
        privileged: true,
        ..WrapInfo::default()
    };
    // `sg group -c cmd` or `sg group cmd`
    match (argv.get(2), argv.get(3)) {
        (Some(c), Some(s)) if c.is("-c") => Unwrap::Script {
            script: s.clone(),
            new_process: true,
            info,
        },
        (Some(s), _) => Unwrap::Script {
            script: s.clone(),
            new_process: true,
            info,
        },
        _ => Unwrap::Itself,
    }
}

fn unwrap_hyperfine(argv: &[Arg]) -> Unwrap {
    // Every command and --prepare/--setup/--cleanup value is a shell string;
    // one unwrap step can return only one, so join them with `;`.
    let mut scripts = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic
            && matches!(
                t,
                "-p" | "--prepare" | "-s" | "--setup" | "-c" | "--cleanup" | "--conclude"
            )
        {
            if let Some(v) = argv.get(i + 1) {
                scripts.push(v.clone());
            }
            i += 2;
            continue;
        }
        if !a.dynamic && t.starts_with('-') {
            let takes = matches!(
                t,
                "-w" | "--warmup"
                    | "-m"
                    | "--min-runs"
                    | "-M"
                    | "--max-runs"
                    | "-r"
                    | "--runs"
                    | "-P"
                    | "--parameter-scan"
                    | "-D"
                    | "--parameter-step-size"
                    | "-L"
                    | "--parameter-list"
                    | "-S"
                    | "--shell"
                    | "--style"
                    | "--export-json"
                    | "--export-csv"
                    | "--export-markdown"
                    | "--export-asciidoc"
                    | "--export-orgmode"
                    | "-n"
                    | "--command-name"
                    | "--output"
                    | "-u"
                    | "--time-unit"
                    | "--sort"
                    | "--input"
                    | "--reference"
            );
            if matches!(t, "-S" | "--shell") {
                return Unwrap::Opaque(
                    "`hyperfine --shell` chooses the program that runs each command".into(),
                );
            }
            i += if takes { 2 } else { 1 };
            continue;
        }
        scripts.push(a.clone());
        i += 1;
    }
    if scripts.is_empty() {
        return Unwrap::Itself;
    }
    join_script_sep(&scripts)
}

/// `concurrently 'cmd1' 'cmd2'`: each argument is a shell command line.
fn unwrap_concurrently(argv: &[Arg]) -> Unwrap {
    let mut scripts = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if !a.dynamic && a.text.starts_with('-') {
            let takes = matches!(
                a.text.as_str(),
                "-n" | "--names"
                    | "-c"
                    | "--prefix-colors"
                    | "-p"
                    | "--prefix"
                    | "-s"
                    | "--success"
                    | "-k"
                    | "--kill-others-on"
                    | "--restart-tries"
                    | "--restart-after"
                    | "-m"
                    | "--max-processes"
                    | "--timestamp-format"
                    | "-l"
                    | "--prefix-length"
                    | "--default-input-target"
                    | "--handle-input"
            );
            i += if takes && !a.text.contains('=') { 2 } else { 1 };
            continue;
        }
        scripts.push(a.clone());
        i += 1;
    }
    if scripts.is_empty() {
        return Unwrap::Itself;
    }
    join_script_sep(&scripts)
}

/// `nodemon --exec 'cmd'` runs a shell command line; plain `nodemon app.js`
/// runs node.
fn unwrap_nodemon(argv: &[Arg]) -> Unwrap {
    for (i, a) in argv.iter().enumerate() {
        if a.is("-x") || a.is("--exec") {
            return match argv.get(i + 1) {
                Some(s) => Unwrap::Script {
                    script: s.clone(),
                    new_process: true,
                    info: WrapInfo::default(),
                },
                None => Unwrap::Itself,
            };
        }
        if let Some(v) = a.text.strip_prefix("--exec=") {
            return Unwrap::Script {
                script: Arg {
                    text: v.to_string(),
                    ..a.clone()
                },
                new_process: true,
                info: WrapInfo::default(),
            };
        }
    }
    Unwrap::NotAWrapper
}

fn join_script_sep(words: &[Arg]) -> Unwrap {
    if words.iter().any(|w| w.dynamic) {
        return Unwrap::Opaque("a command line built from a dynamic string".into());
    }
    let text = words
        .iter()
        .map(|w| w.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    Unwrap::Script {
        script: Arg::lit(text),
        new_process: true,
        info: WrapInfo::default(),
    }
}

/// `sh -c 'script'`, `bash -lc …`; a shell with neither `-c` nor a script
/// file reads its script from stdin.
fn unwrap_shell(argv: &[Arg]) -> Unwrap {
    let info = WrapInfo {
        shell: true,
        ..WrapInfo::default()
    };
    let name = argv[0].basename().to_string();
    let mut i = 1;
    let mut dash_c = false;
    let mut reads_stdin = false;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            break;
        }
        let t = a.text.as_str();
        if t == "--" || t == "-" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            match long_name(t) {
                "--rcfile" | "--init-file" => {
                    return Unwrap::Opaque(format!(
                        "`{name} {t}` runs a startup file berth cannot see"
                    ));
                }
                "--command" => {
                    dash_c = true;
                    i += 1;
                    continue;
                }
                _ => {
                    i += 1;
                    continue;
                }
            }
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            let bytes = t.as_bytes();
            let mut takes_next = 0;
            for &c in &bytes[1..] {
                match c {
                    b'c' => dash_c = true,
                    b's' | b'i' => reads_stdin = true,
                    b'o' | b'O' => takes_next += 1,
                    _ => {}
                }
            }
            i += 1 + takes_next;
            continue;
        }
        break;
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
    // `bash script.sh`: the shell runs a file; it is the program judged.
    Unwrap::NotAWrapper
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(Arg::lit).collect()
    }

    fn start(s: &str) -> Option<usize> {
        match unwrap(&args(s)) {
            Unwrap::Command { start, .. } => Some(start),
            _ => None,
        }
    }

    #[test]
    fn finds_the_wrapped_command() {
        let cases: &[(&str, Option<usize>)] = &[
            ("timeout 30 npm test", Some(2)),
            ("timeout -s KILL 30 npm test", Some(4)),
            ("timeout --signal=KILL 1m make check", Some(3)),
            ("nice -n 10 make", Some(3)),
            ("nice -10 make", Some(2)),
            ("nohup rm -rf x", Some(1)),
            ("env -i PATH=/x FOO=1 ls", Some(4)),
            ("env -u HOME ls", Some(3)),
            ("sudo -u root -E rm x", Some(4)),
            ("sudo rm x", Some(1)),
            ("xargs -0 -n 1 rm -f", Some(4)),
            ("xargs rm", Some(1)),
            ("stdbuf -oL cmd", Some(2)),
            ("ionice -c 3 cmd", Some(3)),
            ("npm exec -- prettier --check .", Some(3)),
            ("npx -y prettier --check .", Some(2)),
            ("npx --package=x y", Some(2)),
            ("uvx --from ruff ruff check", Some(3)),
            ("pnpm dlx create-vite app", Some(2)),
            ("uv run pytest -q", Some(2)),
            ("uv tool run black .", Some(3)),
            ("poetry run pytest", Some(2)),
            ("rustup run nightly cargo build", Some(3)),
            ("busybox rm -rf /", Some(1)),
            ("flock /tmp/l make", Some(2)),
            ("flock -n /tmp/l make", Some(3)),
            ("command ls", Some(1)),
            ("builtin cd x", Some(1)),
            ("exec -a name ls", Some(3)),
            ("time -p ls", Some(2)),
            ("chroot /mnt ls", Some(2)),
            ("strace -f -o out.txt ls", Some(4)),
            ("watch -x ls", Some(2)),
            ("nix develop -c cargo build", Some(3)),
            ("cross-env NODE_ENV=production webpack", Some(2)),
            ("setarch x86_64 rm x", Some(2)),
            ("eatmydata rm x", Some(1)),
            ("doppler run -- rm x", Some(3)),
            ("env -a name node x.js", Some(3)),
        ];
        for (input, want) in cases {
            assert_eq!(start(input), *want, "{input}");
        }
    }

    #[test]
    fn scripts_and_opaque() {
        let script = |s: &str| match unwrap(&args(s)) {
            Unwrap::Script { script, .. } => Some(script.text),
            _ => None,
        };
        assert_eq!(script("bash -c ls"), Some("ls".into()));
        assert_eq!(script("bash -lc ls"), Some("ls".into()));
        assert_eq!(script("sh -e -c ls"), Some("ls".into()));
        assert_eq!(script("bash -o pipefail -c ls"), Some("ls".into()));
        assert_eq!(script("eval git push"), Some("git push".into()));
        assert_eq!(script("watch -n 1 ls -l"), Some("ls -l".into()));
        assert_eq!(script("su -c ls root"), Some("ls".into()));
        assert_eq!(script("flock /tmp/l -c ls"), Some("ls".into()));
        assert_eq!(script("npx -c ls"), Some("ls".into()));
        assert!(matches!(unwrap(&args("sh")), Unwrap::Opaque(_)));
        assert!(matches!(unwrap(&args("bash -s")), Unwrap::Opaque(_)));
        assert!(matches!(unwrap(&args("source x.sh")), Unwrap::Opaque(_)));
        assert!(matches!(unwrap(&args(". x.sh")), Unwrap::Opaque(_)));
        assert_eq!(unwrap(&args("bash script.sh")), Unwrap::NotAWrapper);
        assert_eq!(unwrap(&args("command -v ls")), Unwrap::Itself);
        assert_eq!(unwrap(&args("env")), Unwrap::Itself);
        assert_eq!(unwrap(&args("sudo -l")), Unwrap::Itself);
        assert_eq!(unwrap(&args("ls -l")), Unwrap::NotAWrapper);
    }
}
