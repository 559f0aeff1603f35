//! Build tools and package managers whose options or settings name a
//! program they run: `npm`/`pnpm`/`yarn` (`--script-shell`), `cargo`
//! (`--config`), `rustc` (`-C linker=`), `go` (`-toolexec`, `-vettool`,
//! `-ldflags=-extld=`, `go env -w CC=`) and `make` (`--eval`, `-E`,
//! `SHELL=`, `MAKEFLAGS=`, a variable holding code or a program path).

use super::Facts;
use crate::arg::Arg;

pub(super) fn npm(name: &str, args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        if a.text.starts_with("--script-shell") {
            return Facts::opaque(format!(
                "`{name} --script-shell` changes the program that runs scripts"
            ));
        }
        // `npm config set K V`, `npm set K V`, `yarn config set K V`.
        let rest = if a.is("config") || a.is("c") {
            args[i + 1..]
                .first()
                .filter(|s| s.is("set"))
                .map(|_| &args[i + 2..])
        } else if a.is("set") && i == 0 {
            Some(&args[1..])
        } else {
            None
        };
        if let Some(rest) = rest
            && let Some(k) = rest.iter().position(|k| {
                k.dynamic || CONFIG_RUNS.iter().any(|key| config_key_is(&k.text, key))
            })
        {
            let key = &rest[k];
            // `browser false` turns the browser off: no program.
            let value = key
                .text
                .split_once('=')
                .map(|(_, v)| v.to_string())
                .or_else(|| rest.get(k + 1).map(|v| v.text.clone()));
            let off = key.text.starts_with("browser")
                && matches!(value.as_deref(), Some("false" | "true"));
            if !off {
                return Facts::opaque(format!("`{name} config set` of a program-running key"));
            }
        }
    }
    Facts::default()
}

/// pnpm's and yarn's own commands: any other word after them may be a
/// program they run (`pnpm git push`; pnpm 6.6 on runs an unknown command
/// in the project's context, yarn runs a binary by name). Listed so their
/// commands named like wrappers or builtins (`pnpm env`, `yarn exec`) are
/// not read as those programs.
const OWN_COMMANDS: &[&str] = &[
    "add",
    "approve-builds",
    "audit",
    "autoclean",
    "bin",
    "cache",
    "check",
    "config",
    "c",
    "constraints",
    "create",
    "dedupe",
    "deploy",
    "dlx",
    "doctor",
    "env",
    "exec",
    "explain",
    "fetch",
    "generate-lock-entry",
    "get",
    "global",
    "help",
    "i",
    "import",
    "info",
    "init",
    "install",
    "install-test",
    "it",
    "licenses",
    "link",
    "list",
    "ln",
    "login",
    "logout",
    "ls",
    "npm",
    "outdated",
    "owner",
    "pack",
    "patch",
    "patch-commit",
    "patch-remove",
    "plugin",
    "policies",
    "prune",
    "publish",
    "rb",
    "rebuild",
    "recursive",
    "remove",
    "rm",
    "root",
    "run",
    "run-script",
    "search",
    "self-update",
    "server",
    "set",
    "setup",
    "stage",
    "start",
    "store",
    "t",
    "tag",
    "team",
    "test",
    "tst",
    "un",
    "uninstall",
    "unlink",
    "unplug",
    "up",
    "update",
    "upgrade",
    "upgrade-interactive",
    "version",
    "versions",
    "why",
    "workspace",
    "workspaces",
];

/// Whether `pnpm WORD …`/`yarn WORD …` may run WORD as a program.
pub(super) fn may_run_as_program(word: &Arg) -> bool {
    !word.dynamic && !OWN_COMMANDS.contains(&word.text.as_str())
}

/// `mvn exec:exec -Dexec.executable=git -Dexec.args=push`: the exec
/// plugin's `exec` goal runs any program, named in a property (or the
/// pom), with arguments berth does not split. (`exec:java` runs the
/// project's own main class: the project's code, like `npm test`.)
pub(super) fn mvn(args: &[Arg]) -> Facts {
    let runs = args.iter().any(|a| {
        a.dynamic || {
            let t = a.text.as_str();
            t == "exec:exec"
                || t.starts_with("org.codehaus.mojo:exec-maven-plugin:") && t.ends_with(":exec")
        }
    });
    if runs {
        Facts::opaque("`mvn exec:exec` runs the program its `exec.executable` names")
    } else {
        Facts::default()
    }
}

/// npm's and yarn's config keys whose value is a program (or code, or a
/// file of more settings) the tool runs later.
const CONFIG_RUNS: &[&str] = &[
    "script-shell",  // runs every script
    "node-options",  // `--require` preloads code
    "shell",         // `npm exec`'s shell
    "git",           // the git npm runs for git dependencies
    "editor",        // `npm edit`, `npm config edit`
    "viewer",        // `npm help`
    "browser",       // `npm docs`, `npm repo` (unless `false`)
    "onload-script", // required at npm's start
    "userconfig",    // another config file (with any of these)
    "globalconfig",
    "yarnPath",  // yarn runs this JavaScript file instead of itself
    "yarn-path", // the same, yarn classic
    "plugins",   // yarn plugins: code yarn loads
];

/// `key` or `key=value` is `name` (case as written; npm also reads `_`
/// for `-`).
fn config_key_is(word: &str, name: &str) -> bool {
    let k = word.split_once('=').map_or(word, |(k, _)| k);
    k == name || k.replace('_', "-") == name
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

/// `go` build flags (`-flag v`, `-flag=v`, `--flag`) whose value is a
/// program go runs.
const GO_RUNS_FLAGS: &[&str] = &[
    "toolexec", // runs every tool (compile, link, vet) through this program
    "exec",     // `go run|test -exec`: runs the binary through this program
    "vettool",  // `go vet -vettool`: the analysis program to run
];

/// `go` flags whose value is passed to a tool that may run a program.
const GO_TOOL_FLAGS: &[&str] = &[
    "ldflags",    // `-extld`/`-extar` name the external linker or archiver
    "gccgoflags", // flags for gccgo: `-wrapper`, `-fplugin`, `-B`
    "gcflags",    // flags for the compiler (judged for `-extld` as well)
];

pub(super) fn go(args: &[Arg]) -> Facts {
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        let flag = t.strip_prefix("--").or_else(|| t.strip_prefix('-'));
        if let Some(flag) = flag.filter(|_| !a.dynamic) {
            let (name, attached) = match flag.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (flag, None),
            };
            if GO_RUNS_FLAGS.contains(&name) {
                return Facts::opaque(format!("`go -{name}` runs a program"));
            }
            if GO_TOOL_FLAGS.contains(&name) {
                let value = match attached {
                    Some(v) => Some(Arg::lit(v)),
                    None => args.get(i + 1).cloned(),
                };
                if let Some(v) = value
                    && (v.dynamic
                        || (name == "gccgoflags" && !v.text.trim().is_empty())
                        || v.text.contains("extld")
                        || v.text.contains("extar"))
                {
                    return Facts::opaque(format!(
                        "`go -{name}` names a program the toolchain runs"
                    ));
                }
            }
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
/// recipes, or the options and makefiles make reads.
const MAKE_RUNS_VARS: &[&str] = &[
    "SHELL",        // recipes run with this program
    "MAKESHELL",    // the same on some makes
    ".SHELLFLAGS",  // the flags it is given (`-c` replaced)
    "MAKEFLAGS",    // options, `--eval` included
    "MFLAGS",       // the same, older
    "GNUMAKEFLAGS", // the same, GNU make only
    "MAKEFILES",    // makefiles read before the others
];

/// `make` variables that conventionally name a program a recipe runs: a
/// path as their value runs that file.
const MAKE_PROGRAM_VARS: &[&str] = &[
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "AS",
    "FC",
    "F77",
    "RANLIB",
    "STRIP",
    "OBJCOPY",
    "OBJDUMP",
    "NM",
    "PKG_CONFIG",
    "INSTALL",
    "RM",
    "LEX",
    "YACC",
    "MAKE",
    "M4",
    "CHECK",
    "PYTHON",
    "PERL",
    "GO",
    "CARGO",
    "NPM",
    "NODE",
    "DOCKER",
    "SED",
    "AWK",
    "CCACHE",
    "HOSTCC",
    "HOSTCXX",
    "CROSS_COMPILE",
    "LINK",
    "LINKER",
    "DLLTOOL",
    "WINDRES",
];

/// `cmake -E` commands whose operands are a command it runs.
const CMAKE_E_RUNS: &[&str] = &[
    "env",   // `cmake -E env [VAR=V]… cmd…`
    "time",  // `cmake -E time cmd…`
    "chdir", // `cmake -E chdir DIR cmd…`
];

/// `cmake -E env|time|chdir … cmd…` runs a command berth does not unwrap:
/// opaque. (`cmake -E rm -rf` is judged by the deny templates.)
pub(super) fn cmake(args: &[Arg]) -> Facts {
    let Some(e) = args.iter().position(|a| a.is("-E")) else {
        return Facts::default();
    };
    match args.get(e + 1) {
        Some(c) if c.dynamic => Facts::opaque("`cmake -E` with a command computed at run time"),
        Some(c) if CMAKE_E_RUNS.contains(&c.text.as_str()) => {
            Facts::opaque(format!("`cmake -E {}` runs a command", c.text))
        }
        _ => Facts::default(),
    }
}

/// GNU make's short options that take a value (attached or the next word);
/// `-E` is `--eval`.
const MAKE_VALUE_SHORT: &[u8] = b"CfIoWE";

pub(super) fn make(args: &[Arg]) -> Facts {
    for a in args {
        if a.dynamic {
            if a.text.is_empty() || a.text.starts_with('-') || a.text.contains('=') {
                return Facts::opaque("`make` with an option or variable computed at run time");
            }
            continue;
        }
        let t = a.text.as_str();
        if let Some(long) = t.strip_prefix("--") {
            let n = long.split('=').next().unwrap_or(long);
            // GNU make reads any unambiguous prefix: `--ev` is `--eval`.
            if n.len() >= 2 && "eval".starts_with(n) {
                return Facts::opaque("`make --eval` evaluates text as a makefile (`$(shell …)`)");
            }
            continue;
        }
        if t.len() > 1 && t.starts_with('-') {
            for c in t.bytes().skip(1) {
                if c == b'E' {
                    return Facts::opaque("`make -E` evaluates text as a makefile (`$(shell …)`)");
                }
                if MAKE_VALUE_SHORT.contains(&c) {
                    break;
                }
            }
            continue;
        }
        if let Some((var, value)) = t.split_once('=') {
            let var = var.trim_end_matches([':', '+', '?', '!']);
            if MAKE_RUNS_VARS.contains(&var) {
                return Facts::opaque(format!("`make {var}=` changes how make runs recipes"));
            }
            if value.contains(['$', '`', ';', '|', '&', '<', '>', '\n']) {
                return Facts::opaque(format!(
                    "`make {var}=…` holds make or shell code that recipes expand"
                ));
            }
            if MAKE_PROGRAM_VARS.contains(&var) && value.contains('/') {
                return Facts::opaque(format!("`make {var}=` names a program file to run"));
            }
        }
    }
    Facts::default()
}
