//! Build tools and package managers whose options or settings name a
//! program they run: `npm`/`pnpm`/`yarn` (`--script-shell`), `cargo`
//! (`--config`), `rustc` (`-C linker=`), `go` (`-toolexec`, `go env -w CC=`)
//! and `make` (`SHELL=`).

use super::Facts;
use crate::arg::Arg;

pub(super) fn npm(name: &str, args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        if a.text.starts_with("--script-shell") {
            return Facts::opaque(format!(
                "`{name} --script-shell` changes the program that runs scripts"
            ));
        }
        if a.is("config") || a.is("c") {
            let rest = &args[i + 1..];
            if rest.first().is_some_and(|s| s.is("set"))
                && rest.iter().any(|k| {
                    k.text.starts_with("script-shell")
                        || k.text.starts_with("node-options")
                        || k.text.starts_with("shell")
                })
            {
                return Facts::opaque(format!("`{name} config set` of a program-running key"));
            }
        }
    }
    Facts::default()
}

/// `cargo` options that set programs cargo runs.
const CARGO_RUNS_LONG: &[&str] = &[
    "--config", // any config key: rustc wrapper, linker, runner, aliases
];

pub(super) fn cargo(args: &[Arg]) -> Facts {
    if args.iter().any(|a| {
        CARGO_RUNS_LONG
            .iter()
            .any(|o| a.is(o) || a.text.strip_prefix(o).is_some_and(|v| v.starts_with('=')))
    }) {
        Facts::opaque(
            "`cargo --config` can set programs cargo runs (rustc wrapper, linker, runner)",
        )
    } else {
        Facts::default()
    }
}

/// `rustc -C` codegen options that run a program.
const RUSTC_RUNS_CODEGEN: &[&str] = &[
    "linker", // the linker is any program
];
// `-Clink-self-contained` (attached) is also treated as naming a linker.

pub(super) fn rustc(args: &[Arg]) -> Facts {
    let runs = args
        .windows(2)
        .any(|w| w[0].is("-C") && RUSTC_RUNS_CODEGEN.iter().any(|o| w[1].text.starts_with(o)))
        || args
            .iter()
            .any(|a| a.text.starts_with("-Clinker") || a.text.starts_with("-Clink-self-contained"));
    if runs {
        Facts::opaque("`rustc -C linker=` runs a program")
    } else {
        Facts::default()
    }
}

/// Variables `go env -w` can set that make go run a program.
const GO_ENV_RUNS: &[&str] = &[
    "GOFLAGS",     // any build flag, -toolexec included
    "CC",          // the C compiler cgo runs
    "CXX",         // the C++ compiler cgo runs
    "AR",          // the archiver
    "PKG_CONFIG",  // the pkg-config program
    "GOTOOLCHAIN", // downloads and runs another toolchain
    "GOENV",       // loads settings from another file
    "CGO_LDFLAGS", // linker flags: plugins and wrappers
    "CGO_CFLAGS",  // compiler flags: plugins and wrappers
];

pub(super) fn go(args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        if t == "-toolexec"
            || t.starts_with("-toolexec=")
            || t == "--toolexec"
            || t.starts_with("--toolexec=")
            || t == "-exec"
            || t.starts_with("-exec=")
        {
            return Facts::opaque("`go -toolexec/-exec` runs a program");
        }
        if t == "env" && args.get(i + 1).is_some_and(|w| w.is("-w")) {
            let runs = args[i + 2..].iter().any(|kv| {
                let k = kv.text.split('=').next().unwrap_or("");
                kv.dynamic || GO_ENV_RUNS.contains(&k)
            });
            if runs {
                return Facts::opaque("`go env -w` sets a variable that makes go run a program");
            }
        }
    }
    Facts::default()
}

/// `make` variables on the command line that change the program that runs
/// recipes.
const MAKE_RUNS_VARS: &[&str] = &[
    "SHELL=",       // recipes run with this program
    "MAKESHELL=",   // the same on some makes
    ".SHELLFLAGS=", // the flags it is given (`-c` replaced)
];

pub(super) fn make(args: &[Arg]) -> Facts {
    if args
        .iter()
        .any(|a| MAKE_RUNS_VARS.iter().any(|v| a.text.starts_with(v)))
    {
        Facts::opaque("`make SHELL=` changes the program that runs recipes")
    } else {
        Facts::default()
    }
}
