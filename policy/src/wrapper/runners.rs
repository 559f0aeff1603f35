//! Package runners, version and environment managers and task runners
//! that run a command or a package (`npx`, `uvx`, `npm exec`, `uv run`,
//! `poetry run`, `nix develop -c`, `hyperfine`, `concurrently`,
//! `nodemon --exec`). The subcommand ones (`npm exec`) are read by
//! `sub_spec`; `npm`, `uv`, `poetry` and the like alone are programs, not
//! wrappers.

use super::{NONE, Spec, Unwrap, WrapInfo, join_script_sep};
use crate::arg::Arg;

/// `npx [opts] PACKAGE args…`: fetches and runs a package; `-c`/`--call` run a shell command line.
const NPX: Spec = Spec {
    short_val: b"p",
    long_val: &["--package", "--prefix", "--cache"],
    script_short: b"c",       // `-c CMDLINE` runs a shell command line
    script_long: &["--call"], // long for -c
    package: true,
    ..NONE
};

/// `bunx PACKAGE args…`: fetches and runs a package.
const BUNX: Spec = Spec {
    short_val: b"p",
    long_val: &["--package"],
    package: true,
    ..NONE
};

/// `uvx [--from P] TOOL args…`: fetches and runs a Python tool.
const UVX: Spec = Spec {
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
};

/// `dotenv [-e FILE] cmd…`: runs the command with variables from a file.
const DOTENV: Spec = Spec {
    short_val: b"evc",
    ..NONE
};

pub(super) fn spec(name: &str) -> Option<Spec> {
    Some(match name {
        "npx" => NPX,
        "bunx" => BUNX,
        "uvx" => UVX,
        "dotenv" => DOTENV,
        _ => return None,
    })
}

/// Subcommand-style wrappers: `tool SUB [opts] cmd…` (`npm exec`, `uv run`).
/// Returns the spec and the number of words of the wrapper prefix.
pub(super) fn sub_spec(argv: &[Arg]) -> Option<(Spec, usize)> {
    let name = argv.first()?.basename();
    let sub = argv.get(1).and_then(Arg::known)?;
    let pkg_npm = Spec {
        short_val: b"pw",
        long_val: &["--package", "--workspace", "--prefix"],
        script_short: b"c",       // `-c CMDLINE` runs a shell command line
        script_long: &["--call"], // long for -c
        package: true,
        ..NONE
    };
    Some(match (name, sub) {
        ("npm", "exec" | "x") => (pkg_npm, 2),
        ("pnpm", "dlx") => (
            Spec {
                long_val: &["--package"],
                script_short: b"c", // `-c CMDLINE` runs a shell command line
                script_long: &["--shell-mode"], // runs the command through a shell
                package: true,
                ..NONE
            },
            2,
        ),
        ("pnpm", "exec") => (
            Spec {
                script_short: b"c",             // `-c CMDLINE` runs a shell command line
                script_long: &["--shell-mode"], // runs the command through a shell
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
