//! `sqlite3`: its arguments after the database are SQL or dot-commands,
//! and several dot-commands and SQL functions run programs or load code
//! (`.shell`, `.system`, `.once |cmd`, `load_extension()`, `edit()`).
//! A dot-command is judged by a positive list: one the model does not
//! list makes the segment opaque.

use super::Facts;
use crate::arg::Arg;

/// Dot-commands that only read the database or set how output looks.
const SQLITE_READ_DOTS: &[&str] = &[
    ".tables",
    ".schema",
    ".indexes",
    ".indices",
    ".databases",
    ".dbinfo",
    ".fullschema",
    ".headers",
    ".header",
    ".mode",
    ".help",
    ".quit",
    ".exit",
    ".show",
    ".stats",
    ".timer",
    ".width",
    ".separator",
    ".nullvalue",
    ".echo",
    ".bail",
    ".changes",
    ".eqp",
    ".explain",
    ".lint",
    ".print",
    ".dump",
    ".sha3sum",
    ".selftest",
    ".version",
    ".timeout",
    ".limit",
    ".parameter",
    ".prompt",
    ".scanstats",
    ".vfsinfo",
    ".vfslist",
];
// Not listed, so opaque: `.shell`/`.system` (run a command), `.once`/`.output`
// (write a file, or run a program with `|`), `.excel` (opens a program),
// `.import`/`.read` (read a file, or a program's output with `|`), `.load`
// (loads code), `.open`/`.save`/`.backup`/`.restore`/`.clone` (write files),
// `.cd`, `.log`, `.trace` (write files or change directory).

/// SQL functions of the shell that run programs, load code or write files.
const SQLITE_RUNS_FUNCTIONS: &[&str] = &[
    "load_extension", // loads a shared library: any code
    "edit",           // runs an editor on a value
    "writefile",      // writes a file anywhere
    "readfile",       // reads a file anywhere
    "fts3_tokenizer", // can register a function pointer
];

/// sqlite3's options that take a value.
const SQLITE_VALUE_OPTIONS: &[&str] = &[
    "-cmd",       // a command run before the input (judged like an argument)
    "-init",      // a file of commands (not read by the policy)
    "-separator", // column separator
    "-newline",   // row separator
    "-nullvalue", // text for NULL
    "-vfs",       // the VFS to use
    "-maxsize",   // for --deserialize
    "-mmap",      // mmap size
    "-pagecache", // page cache size
    "-lookaside", // lookaside size
    "-heap",      // heap size
];

pub(super) fn sqlite3(args: &[Arg]) -> Facts {
    let mut commands: Vec<&Arg> = Vec::new();
    let mut db_seen = false;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if a.dynamic {
            return Facts::opaque("`sqlite3` with an argument computed at run time");
        }
        let t = a.text.as_str();
        let opt = t
            .strip_prefix('-')
            .map(|o| format!("-{}", o.trim_start_matches('-')));
        if let Some(o) = opt.as_deref().filter(|_| !db_seen && t.len() > 1) {
            if o == "-init" {
                return Facts::opaque("`sqlite3 -init` runs the commands of a file");
            }
            if SQLITE_VALUE_OPTIONS.contains(&o) {
                if o == "-cmd"
                    && let Some(c) = args.get(i + 1)
                {
                    commands.push(c);
                }
                i += 2;
                continue;
            }
            i += 1;
            continue;
        }
        if db_seen {
            commands.push(a);
        }
        db_seen = true;
        i += 1;
    }
    for c in commands {
        if c.dynamic {
            return Facts::opaque("`sqlite3` runs a command computed at run time");
        }
        if let Some(why) = sqlite_command_runs(&c.text) {
            return Facts::opaque(why);
        }
    }
    Facts::default()
}

/// Why one sqlite3 argument (SQL or dot-commands, one per line) is opaque.
fn sqlite_command_runs(text: &str) -> Option<String> {
    for line in text.lines() {
        let l = line.trim_start();
        if let Some(rest) = l.strip_prefix('.') {
            let word = rest.split_whitespace().next().unwrap_or("");
            let dot = format!(".{word}");
            if !SQLITE_READ_DOTS.contains(&dot.as_str()) {
                return Some(format!(
                    "`sqlite3 {dot}` is not on the list of dot-commands that only read"
                ));
            }
        }
    }
    let lower = text.to_ascii_lowercase();
    for f in SQLITE_RUNS_FUNCTIONS {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(f) {
            let at = from + pos;
            let before_ok = at == 0
                || !lower.as_bytes()[at - 1].is_ascii_alphanumeric()
                    && lower.as_bytes()[at - 1] != b'_';
            let after = lower[at + f.len()..].trim_start();
            if before_ok && after.starts_with('(') {
                return Some(format!("`sqlite3` SQL calls `{f}()`"));
            }
            from = at + f.len();
        }
    }
    None
}
