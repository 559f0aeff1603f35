//! Interpreters given code on the command line (`python -c`, `node -e`,
//! `perl -e`, `ruby -e`, `php -r`): the code is read for what runs other
//! programs, so an allowed interpreter is judged by what its code does.

use super::Facts;
use crate::arg::Arg;

/// python's option whose value is code.
const PYTHON_CODE: &[&str] = &["-c"];

/// What in python code runs another program or hides what runs.
const PYTHON_RUNS: &[&str] = &[
    "os.system",      // runs a shell command
    "subprocess",     // runs programs
    "os.popen",       // runs a shell command
    "os.exec",        // replaces the process with a program
    "os.spawn",       // runs a program
    "os.posix_spawn", // runs a program
    "pty.spawn",      // runs a program on a terminal
    "commands.",      // python 2's shell runner
    "__import__",     // imports by a computed name
    "exec(",          // runs computed code
    "eval(",          // runs computed code
    "importlib",      // imports by a computed name
    "ctypes",         // calls C, `system` included
    "os.fork",        // starts a process
    "compile(",       // builds code to run
];

/// node's, deno's and bun's options whose value is code.
const NODE_CODE: &[&str] = &["-e", "--eval", "-p", "--print"];

/// What in JavaScript runs another program or hides what runs.
const NODE_RUNS: &[&str] = &[
    "child_process",   // node's module that runs programs
    "execSync",        // runs a shell command
    "spawnSync",       // runs a program
    "execFile",        // runs a program
    "exec(",           // runs a shell command
    "spawn(",          // runs a program
    "Deno.run",        // deno runs a program
    "Deno.Command",    // deno runs a program
    "Bun.spawn",       // bun runs a program
    "Bun.$",           // bun's shell
    "eval(",           // runs computed code
    "Function(",       // builds code to run
    "process.binding", // internal bindings, spawn included
    "import(",         // imports by a computed name
    "require(\"vm\")", // runs computed code
    "require('vm')",   // the same, single-quoted
    "worker_threads",  // runs code in another thread
];

/// perl's options whose value is code.
const PERL_CODE: &[&str] = &["-e", "-E"];

/// What in perl runs another program or hides what runs.
const PERL_RUNS: &[&str] = &[
    "system",   // runs a command
    "exec",     // replaces the process with a command
    "`",        // runs a shell command
    "qx",       // the same, spelled out
    "open(",    // `open(F, "cmd|")` runs a command
    "open ",    // the same without parentheses
    "fork",     // starts a process
    "eval",     // runs computed code
    "readpipe", // runs a shell command
    "syscall",  // any system call
];

/// ruby's option whose value is code.
const RUBY_CODE: &[&str] = &["-e"];

/// What in ruby runs another program or hides what runs.
const RUBY_RUNS: &[&str] = &[
    "system",  // runs a command
    "exec",    // replaces the process with a command
    "`",       // runs a shell command
    "%x",      // the same, spelled out
    "popen",   // runs a command with pipes
    "spawn",   // runs a program
    "Open3",   // runs programs with pipes
    "fork",    // starts a process
    "eval",    // runs computed code
    "Kernel.", // the methods above, qualified
    "syscall", // any system call
];

/// php's option whose value is code.
const PHP_CODE: &[&str] = &["-r"];

/// What in php runs another program or hides what runs.
const PHP_RUNS: &[&str] = &[
    "system",     // runs a command
    "exec",       // runs a command
    "shell_exec", // runs a shell command
    "passthru",   // runs a command
    "popen",      // runs a command with a pipe
    "proc_open",  // runs a command with pipes
    "`",          // runs a shell command
    "eval",       // runs computed code
    "pcntl_exec", // replaces the process with a program
    "assert(",    // evaluates a string as code on old php
];

/// Inline code given to an interpreter (`python -c`, `node -e`, `perl -e`,
/// `ruby -e`, `php -r`): when it calls out to other programs, an allowed
/// interpreter is no longer what runs.
pub(super) fn inline_code(name: &str, args: &[Arg]) -> Facts {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    let (flags, runs): (&[&str], &[&str]) = match base {
        "python" | "pypy" => (PYTHON_CODE, PYTHON_RUNS),
        "node" | "nodejs" | "deno" | "bun" => (NODE_CODE, NODE_RUNS),
        "perl" => (PERL_CODE, PERL_RUNS),
        "ruby" | "irb" => (RUBY_CODE, RUBY_RUNS),
        "php" => (PHP_CODE, PHP_RUNS),
        _ => return Facts::default(),
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let code = if flags.contains(&a.text.as_str()) && !a.dynamic {
            i += 1;
            args.get(i)
        } else {
            None
        };
        if let Some(code) = code {
            if code.dynamic {
                return Facts::opaque(format!("`{name}` runs inline code from a dynamic string"));
            }
            if let Some(hit) = runs.iter().find(|r| code.text.contains(**r)) {
                return Facts::opaque(format!(
                    "inline `{name}` code that can run other programs (`{hit}`)"
                ));
            }
        }
        i += 1;
    }
    // `python -cCODE` attached forms.
    for a in args {
        if a.dynamic || a.text.starts_with("--") {
            continue;
        }
        for f in flags.iter().filter(|f| f.len() == 2) {
            if let Some(code) = a.text.strip_prefix(f).filter(|c| !c.is_empty())
                && let Some(hit) = runs.iter().find(|r| code.contains(**r))
            {
                return Facts::opaque(format!(
                    "inline `{name}` code that can run other programs (`{hit}`)"
                ));
            }
        }
    }
    Facts::default()
}
