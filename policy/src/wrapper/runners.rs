//! Package runners, version and environment managers and task runners
//! that run a command or a package (`npx`, `uvx`, `npm exec`, `uv run`,
//! `poetry run`, `nix develop -c`, `hyperfine`, `concurrently`,
//! `nodemon --exec`). The subcommand ones (`npm exec`) are read by
//! `sub_spec`; `npm`, `uv`, `poetry` and the like alone are programs, not
//! wrappers.

use super::{NONE, Spec, Unwrap, WrapInfo, join_script_sep};
use crate::arg::Arg;
use crate::options::global::{self, Sub};
use crate::options::{Opt, Role, flag, value};

const HELP: Opt = flag(b'h', "help").role(Role::Itself);

/// `npm exec` / `npx [opts] PACKAGE args…`: fetches and runs a package.
const NPM_EXEC: &[Opt] = &[
    value(b'p', "package"),
    value(b'c', "call").role(Role::Script), // a shell command line
    value(0, "shell").role(Role::Runs),     // the shell that runs `-c` (older npx)
    value(0, "script-shell").role(Role::Runs), // the same
    value(b'w', "workspace"),
    flag(0, "workspaces"),
    flag(0, "include-workspace-root"),
    value(0, "prefix"),
    value(0, "cache"),
    value(0, "registry"),
    value(0, "userconfig"),
    value(0, "loglevel"),
    flag(b'y', "yes"),
    flag(0, "no"),
    flag(0, "no-install"),
    flag(0, "ignore-existing"),
    flag(b'q', "quiet"),
    flag(0, "silent"),
    flag(0, "offline"),
    flag(0, "prefer-offline"),
    flag(0, "prefer-online"),
    HELP,
    flag(b'v', "version").role(Role::Itself),
];

/// `npx`: `npm exec`, and a package name comes first.
const NPX: Spec = Spec {
    opts: NPM_EXEC,
    package: true,
    ..NONE
};

/// `bunx` / `bun x PACKAGE args…`: fetches and runs a package.
const BUNX: Spec = Spec {
    opts: &[
        value(b'p', "package"),
        flag(0, "bun"),
        flag(0, "no-install"),
        flag(0, "verbose"),
        flag(0, "silent"),
        HELP,
    ],
    package: true,
    ..NONE
};

/// `uv tool run` / `uvx [--from P] TOOL args…`: fetches and runs a Python tool.
const UVX: Spec = Spec {
    opts: &[
        value(0, "from"),
        value(0, "with"),
        value(0, "with-editable"),
        value(0, "with-requirements"),
        value(b'p', "python"),
        value(0, "index-url"),
        value(0, "extra-index-url"),
        value(0, "index"),
        value(0, "default-index"),
        value(b'c', "constraints"),
        value(0, "overrides"),
        value(0, "cache-dir"),
        flag(0, "isolated"),
        flag(b'n', "no-cache"),
        flag(b'q', "quiet"),
        flag(b'v', "verbose"),
        flag(0, "offline"),
        flag(0, "refresh"),
        flag(b'U', "upgrade"),
        HELP,
        flag(b'V', "version").role(Role::Itself),
    ],
    package: true,
    ..NONE
};

/// `uv run [opts] cmd…`: runs the command in the project's environment.
const UV_RUN: Spec = Spec {
    opts: &[
        value(0, "with"),
        value(0, "with-editable"),
        value(0, "with-requirements"),
        value(b'p', "python"),
        value(0, "project"),
        value(0, "directory"),
        value(0, "package"),
        value(0, "extra"),
        value(0, "group"),
        value(0, "only-group"),
        value(0, "no-group"),
        value(0, "index-url"),
        value(0, "extra-index-url"),
        value(0, "index"),
        value(0, "default-index"),
        value(0, "env-file"),
        value(0, "cache-dir"),
        value(0, "color"),
        flag(0, "all-extras"),
        flag(0, "all-groups"),
        flag(0, "all-packages"),
        flag(0, "no-default-groups"),
        flag(0, "no-dev"),
        flag(0, "dev"),
        flag(0, "only-dev"),
        flag(0, "no-sync"),
        flag(0, "frozen"),
        flag(0, "locked"),
        flag(0, "isolated"),
        flag(0, "no-project"),
        flag(0, "active"),
        flag(0, "exact"),
        flag(0, "no-env-file"),
        flag(0, "no-editable"),
        flag(0, "compile-bytecode"),
        flag(0, "refresh"),
        flag(0, "reinstall"),
        flag(b'U', "upgrade"),
        flag(b'm', "module"),
        flag(b's', "script"),
        flag(b'n', "no-cache"),
        flag(b'q', "quiet"),
        flag(b'v', "verbose"),
        flag(0, "offline"),
        HELP,
    ],
    ..NONE
};

/// `dotenv [-e FILE] cmd…`: runs the command with variables from a file.
const DOTENV: Spec = Spec {
    opts: &[
        value(b'e', ""),
        value(b'v', ""),
        value(b'c', ""),
        flag(b'p', "").role(Role::Itself), // prints a variable: no command follows
        HELP,
    ],
    ..NONE
};

/// Runners with no options berth reads: any option makes the segment
/// opaque (`poetry run`, `bundle exec`, …).
const BARE: Spec = NONE;

pub(super) fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        "npx" => NPX,
        "bunx" => BUNX,
        "uvx" => UVX,
        "dotenv" => DOTENV,
        _ => return None,
    })
}

/// Subcommand-style wrappers: `tool [global opts] SUB [opts] cmd…`
/// (`npm --prefix . exec`, `uv --directory . run`). Returns the spec and the
/// number of words before the subcommand's own options.
/// `name` is the basename of `argv[0]`, a static word.
pub(super) fn sub_spec(argv: &[Arg], name: &str) -> Option<(Spec, usize)> {
    // Only the tools the `match` below names run a command by subcommand:
    // any other name needs no search for its subcommand (keep the two in step).
    if !matches!(
        name,
        "npm"
            | "pnpm"
            | "yarn"
            | "bun"
            | "pipx"
            | "uv"
            | "poetry"
            | "pipenv"
            | "pdm"
            | "hatch"
            | "rye"
            | "devbox"
            | "volta"
            | "bundle"
            | "rbenv"
            | "pyenv"
            | "asdf"
            | "dotenvx"
            | "conda"
            | "mamba"
            | "micromamba"
            | "pixi"
            | "mise"
            | "rtx"
            | "fnm"
            | "nvm"
            | "rustup"
            | "direnv"
            | "nix"
    ) {
        return None;
    }
    // Global options before the subcommand, where the tool's are modelled.
    let (sub_i, sub) = match global::subcommand_named(argv, name) {
        Some(Sub::At { index, canonical }) => (index, canonical),
        Some(_) => return None,
        None => (
            1,
            std::borrow::Cow::Borrowed(argv.get(1).and_then(Arg::known)?),
        ),
    };
    if argv[sub_i].dynamic {
        return None;
    }
    let skip = sub_i + 1;
    let spec = match (name, &*sub) {
        ("npm", "exec") => Spec {
            opts: NPM_EXEC,
            package: true,
            ..NONE
        },
        ("pnpm", "dlx") => Spec {
            opts: const {
                &[
                    value(0, "package"),
                    value(b'c', "shell-mode").role(Role::Script), // runs the command line through a shell
                    flag(b's', "silent"),
                    HELP,
                ]
            },
            package: true,
            ..NONE
        },
        ("pnpm", "exec") => Spec {
            opts: const {
                &[
                    value(b'c', "shell-mode").role(Role::Script), // runs the command line through a shell
                    flag(b'r', "recursive"),
                    flag(0, "parallel"),
                    flag(0, "report-summary"),
                    value(0, "resume-from"),
                    value(b'F', "filter"),
                    flag(0, "no-reporter-hide-prefix"),
                    HELP,
                ]
            },
            ..NONE
        },
        ("yarn", "dlx") => Spec {
            opts: const { &[value(b'p', "package"), flag(b'q', "quiet"), HELP] },
            package: true,
            ..NONE
        },
        ("yarn", "exec") => BARE,
        // `yarn node ARGS` is `node ARGS` with the project's resolution.
        ("yarn", "node") => return Some((BARE, sub_i)),
        ("bun", "x") => BUNX,
        ("pipx", "run") => Spec {
            opts: const {
                &[
                    value(0, "spec"),
                    value(0, "python"),
                    value(0, "pip-args"),
                    value(b'i', "index-url"),
                    flag(0, "no-cache"),
                    flag(0, "path"),
                    flag(0, "pypackages"),
                    flag(0, "system-site-packages"),
                    flag(b'q', "quiet"),
                    flag(b'v', "verbose"),
                    HELP,
                ]
            },
            package: true,
            ..NONE
        },
        ("uv", "run") => UV_RUN,
        ("uv", "tool") if argv.get(skip).is_some_and(|a| a.is("run")) => {
            return Some((UVX, skip + 1));
        }
        ("poetry" | "pipenv" | "pdm" | "hatch" | "rye" | "devbox" | "volta" | "pixi", "run")
        | ("bundle" | "rbenv" | "pyenv" | "asdf", "exec") => BARE,
        ("dotenvx", "run") => Spec {
            opts: const {
                &[
                    value(b'f', "env-file"),
                    value(b'e', "env"),
                    flag(b'o', "overload"),
                    flag(b'q', "quiet"),
                    flag(0, "verbose"),
                    flag(0, "debug"),
                    flag(0, "strict"),
                    HELP,
                ]
            },
            ..NONE
        },
        ("conda" | "mamba" | "micromamba", "run") => Spec {
            opts: const {
                &[
                    value(b'n', "name"),
                    value(b'p', "prefix"),
                    value(0, "cwd"),
                    flag(0, "live-stream"),
                    flag(0, "no-capture-output"),
                    flag(b'v', "verbose"),
                    flag(0, "debug-wrapper-scripts"),
                    HELP,
                ]
            },
            ..NONE
        },
        ("mise" | "rtx", "exec" | "x") => Spec {
            opts: const {
                &[
                    value(b'C', "cd").role(Role::Chdir), // the command runs in this directory
                    value(b'c', "command").role(Role::Script), // a shell command line
                    value(b'j', "jobs"),
                    flag(0, "raw"),
                    flag(b'q', "quiet"),
                    flag(b'v', "verbose"),
                    HELP,
                ]
            },
            ..NONE
        },
        ("fnm", "exec") => Spec {
            opts: const { &[value(0, "using"), value(0, "log-level"), HELP] },
            ..NONE
        },
        ("nvm", "exec") => Spec {
            opts: const { &[flag(0, "silent")] },
            positional: 1,
            ..NONE
        },
        ("rustup", "run") => Spec {
            opts: const { &[flag(0, "install"), HELP] },
            positional: 1,
            ..NONE
        },
        ("direnv", "exec") => Spec {
            positional: 1,
            ..NONE
        },
        ("nix", "develop" | "shell") => {
            // `nix develop -c cmd…` / `--command cmd…`
            let mut i = 2;
            while let Some(a) = argv.get(i) {
                if a.is("-c") || a.is("--command") {
                    return Some((NONE, i + 1));
                }
                i += 1;
            }
            return None;
        }
        _ => return None,
    };
    Some((spec, skip))
}

/// `docker exec [opts] CONTAINER cmd…`, `docker container exec`.
const CONTAINER_EXEC: Spec = Spec {
    opts: &[
        flag(b'd', "detach"),
        value(0, "detach-keys"),
        value(b'e', "env"),
        value(0, "env-file"),
        flag(b'i', "interactive"),
        flag(0, "privileged"), // read by the privileged limit on the outer invocation
        flag(b't', "tty"),
        value(b'u', "user"),
        value(b'w', "workdir"),
        HELP,
    ],
    positional: 1,
    ..NONE
};

/// `docker compose exec [opts] SERVICE cmd…`.
const COMPOSE_EXEC: Spec = Spec {
    opts: &[
        flag(b'd', "detach"),
        value(b'e', "env"),
        value(0, "index"),
        flag(b'T', "no-TTY"),
        flag(0, "privileged"), // read by the privileged limit on the outer invocation
        value(b'u', "user"),
        value(b'w', "workdir"),
        HELP,
    ],
    positional: 1,
    ..NONE
};

/// A container engine's `exec`: the command runs in another container.
/// `None` when the invocation is no exec (or its shape is not read here:
/// compose's own options before `exec`), so the engine is judged as
/// itself.
pub(super) fn unwrap_container_exec(argv: &[Arg], name: &str) -> Option<Unwrap> {
    let Some(Sub::At { index, canonical }) = global::subcommand_named(argv, name) else {
        return None;
    };
    let (at, spec) = match &*canonical {
        "exec" => (index, &CONTAINER_EXEC),
        "container" | "compose" => {
            let next = argv.get(index + 1).filter(|a| !a.dynamic)?;
            if !next.is("exec") {
                return None;
            }
            let spec = if canonical == "compose" {
                &COMPOSE_EXEC
            } else {
                &CONTAINER_EXEC
            };
            (index + 1, spec)
        }
        _ => return None,
    };
    Some(super::unwrap_with(argv, name, at + 1, spec))
}

pub(super) fn unwrap_nix_shell(argv: &[Arg]) -> Unwrap {
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

pub(super) fn unwrap_hyperfine(argv: &[Arg]) -> Unwrap {
    // Every command and --prepare/--setup/--cleanup value is a shell string;
    // one unwrap step can return only one, so join them with `;`.
    let mut scripts = Vec::new();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        // Attached values of the options whose value is a command line
        // (`-p'make clean'`, `--prepare=…`, `--reference=…`).
        if !a.dynamic
            && let Some(v) = [
                "--prepare=",
                "--setup=",
                "--cleanup=",
                "--conclude=",
                "--reference=",
            ]
            .iter()
            .find_map(|o| t.strip_prefix(o))
            .or_else(|| {
                ["-p", "-s", "-c"]
                    .iter()
                    .find_map(|o| t.strip_prefix(o).filter(|v| !v.is_empty()))
            })
        {
            scripts.push(Arg {
                text: v.to_string(),
                ..a.clone()
            });
            i += 1;
            continue;
        }
        if !a.dynamic
            && matches!(
                t,
                "-p" | "--prepare"
                    | "-s"
                    | "--setup"
                    | "-c"
                    | "--cleanup"
                    | "--conclude"
                    | "--reference"
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
            );
            if t.starts_with("-S") || t == "--shell" || t.starts_with("--shell=") {
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
pub(super) fn unwrap_concurrently(argv: &[Arg]) -> Unwrap {
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
pub(super) fn unwrap_nodemon(argv: &[Arg]) -> Unwrap {
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
        if let Some(v) = a
            .text
            .strip_prefix("--exec=")
            .or_else(|| a.text.strip_prefix("-x").filter(|v| !v.is_empty()))
        {
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

#[cfg(test)]
mod tests {
    use super::super::test_support::{assert_starts, script};

    #[test]
    fn finds_the_wrapped_command() {
        let cases: &[(&str, Option<usize>)] = &[
            ("npm exec -- prettier --check .", Some(3)),
            ("npx -y prettier --check .", Some(2)),
            ("npx --package=x y", Some(2)),
            ("uvx --from ruff ruff check", Some(3)),
            ("pnpm dlx create-vite app", Some(2)),
            ("uv run pytest -q", Some(2)),
            ("uv tool run black .", Some(3)),
            ("poetry run pytest", Some(2)),
            ("rustup run nightly cargo build", Some(3)),
            ("nix develop -c cargo build", Some(3)),
        ];
        assert_starts(cases);
    }

    #[test]
    fn scripts_and_opaque() {
        assert_eq!(script("npx -c ls"), Some("ls".into()));
    }
}
