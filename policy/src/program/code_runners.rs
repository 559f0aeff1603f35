//! Programs that run code given on their command line under another name
//! than an interpreter's `-c`/`-e` (POLICY.md, point 2: an option that
//! makes an allowed program run another program is opaque): Python modules
//! whose operands are statements or debugger commands, IPython, lldb's
//! commands, rake's inline Ruby. One const per program, a why per option.

use super::{Facts, opt_runs};
use crate::arg::Arg;

/// `python -m MODULE …` for modules that run code from their operands or
/// from stdin.
const PYTHON_CODE_MODULES: &[&str] = &[
    "timeit",  // its operands and `-s SETUP` are statements it runs
    "IPython", // `-c CODE`, `-i`; without a file it reads stdin
    "code",    // an interactive interpreter reading stdin
    "idlelib", // IDLE: `-c CODE`, `-r FILE`
    "asyncio", // a REPL reading stdin
    "rlcompleter",
];

/// `python -m MODULE` where the module runs code given to it: opaque.
pub(super) fn python_module(argv: &[Arg]) -> Facts {
    match super::python_module_argv(argv) {
        Some(m) if m[0].dynamic => Facts::opaque("`python -m` of a module named at run time"),
        Some(m) if PYTHON_CODE_MODULES.contains(&m[0].text.as_str()) => Facts::opaque(format!(
            "`python -m {}` runs code given on its command line or stdin",
            m[0].text
        )),
        // `pdb -c CMD`: debugger commands, and `!stmt` runs Python (a
        // script alone is debugged with commands from a person).
        Some(m) if m[0].is("pdb") => opt_runs(
            &m[1..],
            &["--command"],
            b"c",
            "`python -m pdb -c` runs debugger commands (`!stmt` is Python)",
        ),
        _ => Facts::default(),
    }
}

/// IPython's front ends: `-c CODE` runs it; without a script they read
/// stdin. Only a script file (the project's code, as `python3 x.py`) or
/// help and version are ordinary.
pub(super) fn ipython(name: &str, args: &[Arg]) -> Facts {
    let script = args.iter().find(|a| a.dynamic || !a.text.starts_with('-'));
    let code = args.iter().any(|a| {
        !a.dynamic && (a.is("-c") || a.text.starts_with("--c=") || a.is("-i") || a.is("--i"))
    });
    if code || script.is_none_or(|s| s.dynamic) {
        let itself =
            matches!(args, [a] if matches!(a.text.as_str(), "--version" | "-h" | "--help"));
        if !itself {
            return Facts::opaque(format!("`{name}` runs code given to it or read from stdin"));
        }
    }
    Facts::default()
}

/// lldb's options whose values are debugger commands (`script …` runs
/// Python, `platform shell …` a command).
const LLDB_RUNS_LONG: &[&str] = &[
    "--one-line",             // a command after loading
    "--one-line-before-file", // a command before loading
    "--one-line-on-crash",    // a command if the target crashes
    "--source",               // a file of commands
    "--source-before-file",
    "--source-on-crash",
];
const LLDB_RUNS_SHORT: &[u8] = b"oOksSK";

pub(super) fn lldb(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        LLDB_RUNS_LONG,
        LLDB_RUNS_SHORT,
        "`lldb` with commands to run",
    )
}

/// rake's options whose value is Ruby it evaluates.
const RAKE_RUNS_LONG: &[&str] = &[
    "--execute",          // `-e CODE`: runs it, then exits
    "--execute-continue", // `-E CODE`: runs it, then the tasks
    "--execute-print",    // `-p CODE`: runs it and prints the result
    "--require",          // `-r MODULE`: loads Ruby before the Rakefile
];
const RAKE_RUNS_SHORT: &[u8] = b"eEpr";

pub(super) fn rake(args: &[Arg]) -> Facts {
    opt_runs(
        args,
        RAKE_RUNS_LONG,
        RAKE_RUNS_SHORT,
        "`rake` with inline Ruby",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<Arg> {
        line.split(' ').map(Arg::lit).collect()
    }

    #[test]
    fn code_runners() {
        for (line, opaque) in [
            ("python3 -m timeit x", true),
            ("python3 -Bm timeit x", true),
            ("python3 -m pdb -c c x.py", true),
            ("python3 -m pdb x.py", false),
            ("python3 -m code", true),
            ("python3 -m pytest -q", false),
            ("python3 -m http.server", false),
        ] {
            assert_eq!(
                python_module(&words(line)).opaque.is_some(),
                opaque,
                "{line}"
            );
        }
        for (line, opaque) in [
            ("-c x", true),
            ("", true),
            ("-i x.py", true),
            ("x.py", false),
            ("--version", false),
        ] {
            let w: Vec<Arg> = if line.is_empty() { vec![] } else { words(line) };
            assert_eq!(ipython("ipython", &w).opaque.is_some(), opaque, "{line}");
        }
        assert!(lldb(&words("-b -o x")).opaque.is_some());
        assert!(lldb(&words("--one-line=x")).opaque.is_some());
        assert!(lldb(&words("./a.out")).opaque.is_none());
        assert!(rake(&words("-e x")).opaque.is_some());
        assert!(rake(&words("-I lib build")).opaque.is_none());
        assert!(rake(&words("build test")).opaque.is_none());
    }
}
