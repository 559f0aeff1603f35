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
//! programs themselves (`program/`): find is a program in its own right.

//!
//! One file per wrapper family, each with a table per program (`Spec`):
//! its options' arity, which options take a command line, which mean it
//! runs nothing else. This file holds what they share: the option parser
//! for a `Spec` and the dispatch by program name.

mod environment;
mod privilege;
mod process;
mod rerun;
mod runners;
mod shells;

pub use shells::{is_interpreter, is_shell};

use crate::arg::Arg;
use crate::options::{Found, Opt, Problem, Role, Syntax, flag, parse, value};

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
    /// The wrapper grants privilege (`sudo`, `doas`, …). The privileged
    /// limit reads its own table (`privileged/tables.rs`, `PRIVILEGE`); a
    /// test keeps every wrapper marked here in it.
    pub privileged: bool,
    /// The wrapper is a shell (`bash -c`).
    pub shell: bool,
    /// Why the segment is opaque although what it runs was found: an
    /// option of the wrapper berth does not know (the command found is a
    /// best guess), or a dynamic word among a shell's options with a
    /// visible script (`bash $X -c '…'`); deny rules still see it.
    pub opaque: Option<String>,
    /// Files the wrapper itself writes (`strace -o FILE`, `script FILE`).
    pub writes: Vec<Arg>,
}

/// A simple wrapper: its option table (read by [`crate::options`]), the
/// positional words before the command, and what it adds.
pub(super) struct Spec {
    /// Every option it takes, with arity and role: an option not listed
    /// makes the segment opaque.
    pub(super) opts: &'static [Opt],
    /// Positional arguments before the command (`timeout DURATION cmd`).
    pub(super) positional: usize,
    /// `-NUM` is an option (`nice -10`).
    pub(super) numeric: bool,
    pub(super) privileged: bool,
    pub(super) package: bool,
}

pub(super) const NONE: Spec = Spec {
    opts: &[],
    positional: 0,
    numeric: false,
    privileged: false,
    package: false,
};

/// `env-cmd [-f FILE] cmd…`: runs the command with variables from a file.
const ENV_CMD: &[Opt] = &[
    value(b'f', "file"),
    value(b'r', "rc-file"),
    value(b'e', "environments"),
    flag(0, "fallback"),
    flag(0, "no-override"),
    flag(0, "silent"),
    flag(0, "expand-envs"),
    flag(0, "verbose"),
    flag(0, "use-shell").role(Role::Runs), // runs the command line through a shell berth does not follow here
    flag(b'h', "help").role(Role::Itself),
    flag(b'v', "version").role(Role::Itself),
];

/// The simple wrappers, by program name.
fn spec(name: &str) -> Option<Spec> {
    process::spec(name)
        .or_else(|| privilege::spec(name))
        .or_else(|| runners::spec(name))
        .or_else(|| process::is_dynamic_loader(name).then_some(process::LOADER))
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
        "env" => return environment::unwrap_env(argv),
        "xargs" => return rerun::unwrap_xargs(argv),
        "watch" => return rerun::unwrap_watch(argv),
        "eval" => return shells::unwrap_eval(argv),
        "trap" => return shells::unwrap_trap(argv),
        "flock" => return rerun::unwrap_flock(argv),
        "su" => return privilege::unwrap_su(argv, false),
        "runuser" => return privilege::unwrap_su(argv, true),
        "script" => return shells::unwrap_script_cmd(argv),
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
        // `sem` is `parallel --semaphore`.
        "parallel" | "sem" => {
            return Unwrap::Opaque(format!("`{name}` builds commands from its input"));
        }
        "expect" => return Unwrap::Opaque("`expect` runs a Tcl script".into()),
        "tmux" | "screen" => {
            return Unwrap::Opaque(format!(
                "`{name}` runs commands in a session berth cannot see"
            ));
        }
        "nix-shell" => return runners::unwrap_nix_shell(argv),
        // `nix run PKG -- args`: the program is the package's, named by
        // nothing berth reads.
        "nix" if argv.get(1).is_some_and(|a| a.is("run")) => {
            return Unwrap::Opaque("`nix run` runs a package's program berth cannot name".into());
        }
        // `perf stat|record|trace [opts] cmd…`: the profiler runs the command.
        "perf"
            if argv
                .get(1)
                .is_some_and(|a| a.is("stat") || a.is("record") || a.is("trace")) =>
        {
            return unwrap_with(argv, name, 2, &NONE);
        }
        // `sops exec-env FILE 'cmd'`: a command line run by a shell, with
        // the file's secrets in its environment.
        "sops"
            if argv
                .get(1)
                .is_some_and(|a| a.is("exec-env") || a.is("exec-file")) =>
        {
            return Unwrap::Opaque(format!(
                "`sops {}` runs a command line through a shell",
                argv[1].text
            ));
        }
        // Secret injectors (and `zellij run`) whose command follows `--`,
        // or opaque without it.
        "chamber" | "summon" | "vault-exec" | "envconsul" | "secrethub" | "zellij" => {
            let verb = match name {
                "chamber" => Some("exec"),
                "zellij" => Some("run"),
                _ => None,
            };
            if verb.is_some_and(|v| !argv.get(1).is_some_and(|a| a.is(v))) {
                return Unwrap::NotAWrapper;
            }
            return match argv.iter().position(|a| a.is("--")) {
                Some(i) if i + 1 < argv.len() => Unwrap::Command {
                    start: i + 1,
                    info: WrapInfo::default(),
                },
                _ => Unwrap::Opaque(format!(
                    "`{name}` runs a command with options berth does not follow"
                )),
            };
        }
        // `docker exec [opts] CONTAINER cmd…`: the command runs in another
        // container; its own parts are judged as any command's.
        "docker" | "podman" | "nerdctl" => {
            if let Some(unwrapped) = runners::unwrap_container_exec(argv, name) {
                return unwrapped;
            }
        }
        // `lxc|incus exec C [opts] -- cmd…`: the command runs in a system
        // container, as under `docker exec`; without `--` it is not found.
        // `crictl exec` and `ctr task exec` options are not modelled.
        "lxc" | "incus" if argv.get(1).is_some_and(|a| a.is("exec")) => {
            return match argv.iter().position(|a| a.is("--")) {
                Some(i) if i + 1 < argv.len() => Unwrap::Command {
                    start: i + 1,
                    info: WrapInfo::default(),
                },
                _ => Unwrap::Opaque(format!("`{name} exec` runs a command berth cannot find")),
            };
        }
        "crictl" | "ctr" if argv.iter().skip(1).take(2).any(|a| a.is("exec")) => {
            return Unwrap::Opaque(format!(
                "`{name} exec` runs a command with options berth does not follow"
            ));
        }
        "sg" => return privilege::unwrap_sg(argv),
        "hyperfine" => return runners::unwrap_hyperfine(argv),
        "cross-env" | "cross-env-shell" => return environment::unwrap_env(argv),
        "concurrently" => return runners::unwrap_concurrently(argv),
        "nodemon" => return runners::unwrap_nodemon(argv),
        // File watchers and remote executors that run a command line,
        // often one shell string, with options berth does not follow.
        "watchexec" | "reflex" | "chokidar" | "onchange" | "watchman-make" | "watchmedo"
        | "salt-call" => {
            return Unwrap::Opaque(format!(
                "`{name}` runs a command line with options berth does not follow"
            ));
        }
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
                    name,
                    1,
                    &Spec {
                        opts: ENV_CMD,
                        ..NONE
                    },
                ),
                _ => Unwrap::NotAWrapper,
            };
        }
        _ => {}
    }
    if is_shell(name) {
        return shells::unwrap_shell(argv);
    }
    if let Some((spec, skip)) = runners::sub_spec(argv, name) {
        return unwrap_with(argv, name, skip, &spec);
    }
    if let Some(spec) = spec(name) {
        return unwrap_with(argv, name, 1, &spec);
    }
    Unwrap::NotAWrapper
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
                | "sem"
                | "expect"
                | "tmux"
                | "screen"
                | "nix-shell"
                | "sg"
                | "hyperfine"
                | "find"
                | "chamber"
                | "summon"
                | "vault-exec"
                | "envconsul"
                | "secrethub"
        )
}

/// Generic option parsing for a wrapper described by `spec`: the options
/// are read as the wrapper's getopt reads them (abbreviations, clusters,
/// attached values), an unknown one makes the segment opaque, and the
/// command starts after the options and positional words. `name` is the
/// basename of `argv[0]`, a static word.
pub(super) fn unwrap_with(argv: &[Arg], name: &str, skip: usize, spec: &Spec) -> Unwrap {
    let syntax = Syntax {
        numeric: spec.numeric,
        guess: true,
        ..Syntax::wrapper(spec.opts)
    };
    let parsed = parse(argv, skip, &syntax);
    let mut info = WrapInfo {
        privileged: spec.privileged,
        package: spec.package,
        ..WrapInfo::default()
    };
    match &parsed.problem {
        Some(p @ (Problem::Unknown(_) | Problem::Ambiguous(_))) => {
            info.opaque = Some(p.describe(name));
        }
        Some(p) => return Unwrap::Opaque(p.describe(name)),
        None => {}
    }
    if let Some(f) = parsed.first_with(Role::Runs) {
        return Unwrap::Opaque(runs_reason(name, f));
    }
    for f in &parsed.found {
        if let (Some(reason), Role::Itself | Role::Script) = (&info.opaque, f.opt.role) {
            return Unwrap::Opaque(reason.clone());
        }
        match f.opt.role {
            Role::Itself => return Unwrap::Itself,
            Role::Script => {
                return match &f.value {
                    Some(s) => Unwrap::Script {
                        script: s.clone(),
                        new_process: true,
                        info,
                    },
                    None => Unwrap::Itself,
                };
            }
            Role::Chdir => info.chdir = f.value.clone(),
            Role::Writes => {
                if let Err(reason) = wrapper_writes(name, f, &mut info.writes) {
                    return Unwrap::Opaque(reason);
                }
            }
            Role::Plain | Role::Runs | Role::SplitString | Role::Replace | Role::Code => {}
        }
    }
    let mut i = parsed.end;
    for _ in 0..spec.positional {
        if i < argv.len() {
            i += 1;
        }
    }
    if i >= argv.len() {
        return match info.opaque {
            Some(reason) => Unwrap::Opaque(reason),
            None => Unwrap::Itself,
        };
    }
    Unwrap::Command { start: i, info }
}

/// Notes the file a [`Role::Writes`] option names; a value that pipes
/// into a command (`strace -o '|cmd'`, `-o '!cmd'`) is a program berth
/// cannot see run.
pub(super) fn wrapper_writes(name: &str, f: &Found, writes: &mut Vec<Arg>) -> Result<(), String> {
    let Some(v) = &f.value else {
        return Ok(());
    };
    if v.dynamic && v.text.is_empty() || v.text.starts_with(['|', '!']) {
        return Err(format!(
            "`{name} {}` may pipe its output into a command",
            f.opt.display()
        ));
    }
    writes.push(v.clone());
    Ok(())
}

/// Why an option that names a program makes the segment opaque.
pub(super) fn runs_reason(name: &str, f: &Found) -> String {
    format!(
        "`{name} {}` names a program berth cannot see run",
        f.opt.display()
    )
}

/// Joins words with spaces into a script, as `eval` and `watch` do.
pub(super) fn join_script(words: &[Arg], new_process: bool) -> Unwrap {
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

pub(super) fn join_script_sep(words: &[Arg]) -> Unwrap {
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

#[cfg(test)]
mod test_support {
    use super::{Unwrap, unwrap};
    use crate::arg::Arg;

    pub(super) fn args(s: &str) -> Vec<Arg> {
        s.split_whitespace().map(Arg::lit).collect()
    }

    fn start(s: &str) -> Option<usize> {
        match unwrap(&args(s)) {
            Unwrap::Command { start, .. } => Some(start),
            _ => None,
        }
    }

    /// Asserts where the wrapped command starts in each case.
    pub(super) fn assert_starts(cases: &[(&str, Option<usize>)]) {
        for (input, want) in cases {
            assert_eq!(start(input), *want, "{input}");
        }
    }

    pub(super) fn script(s: &str) -> Option<String> {
        match unwrap(&args(s)) {
            Unwrap::Script { script, .. } => Some(script.text),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::{args, assert_starts};
    use super::{Unwrap, unwrap};

    #[test]
    fn finds_the_wrapped_command() {
        let cases: &[(&str, Option<usize>)] = &[
            ("busybox rm -rf /", Some(1)),
            ("doppler run -- rm x", Some(3)),
        ];
        assert_starts(cases);
    }

    #[test]
    fn scripts_and_opaque() {
        assert!(matches!(unwrap(&args("source x.sh")), Unwrap::Opaque(_)));
        assert!(matches!(unwrap(&args(". x.sh")), Unwrap::Opaque(_)));
        assert_eq!(unwrap(&args("ls -l")), Unwrap::NotAWrapper);
    }
}
