//! SQL shells whose command lines carry client commands that run
//! programs: `sqlite3` (arguments after the database are SQL or
//! dot-commands: `.shell`, `.system`, `.once |cmd`, `load_extension()`,
//! `edit()`), `psql -c` (`\!`, `\o |cmd`, `COPY … TO PROGRAM`) and
//! `mysql -e` (`system`, `\!`, `pager`). Client commands are judged by a
//! positive list: one the model does not list makes the segment opaque.

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

/// psql's meta-commands that only read or set how output looks; any other
/// (`\!` runs a shell command, `\o |cmd`/`\g |cmd` pipe to a program,
/// `\copy … program`, `\i` reads a file of commands, `\setenv`) is opaque.
const PSQL_READ_META: &[&str] = &[
    "\\d",
    "\\dt",
    "\\di",
    "\\dv",
    "\\ds",
    "\\df",
    "\\dn",
    "\\du",
    "\\dx",
    "\\l",
    "\\x",
    "\\timing",
    "\\conninfo",
    "\\q",
    "\\?",
    "\\pset",
    "\\a",
    "\\t",
    "\\H",
    "\\echo",
    "\\encoding",
    "\\d+",
    "\\dt+",
    "\\l+",
    "\\dn+",
    "\\df+",
    "\\dp",
    "\\z",
    "\\sf",
    "\\sv",
];

/// mysql/mariadb client commands that run a program or write a file.
const MYSQL_RUNS: &[&str] = &[
    "\\!",    // runs a shell command
    "system", // the same, spelled out
    "\\p",    // `\P cmd`: a pager program (compared lowercased)
    "pager",  // the same, spelled out
    "\\t",    // `\T file`: tee to a file
    "tee",    // the same, spelled out
    "\\.",    // reads a file of commands
    "source", // the same, spelled out
];

/// mysql/mariadb options that run a program or load code.
const MYSQL_RUNS_OPTIONS: &[&str] = &[
    "--pager",        // output goes through a program
    "--plugin-dir",   // where authentication plugins (code) are loaded from
    "--default-auth", // the authentication plugin to load
    "--tee",          // writes a file
];

/// `psql -c/--command`, `mysql -e/--execute`: the inline commands are read
/// for meta-commands that run programs (`\!`, `system`, `\o |cmd`,
/// `COPY … TO PROGRAM`).
pub(super) fn sql_client(name: &str, args: &[Arg]) -> Facts {
    let psql = name == "psql";
    let (short, long): (&str, &str) = if psql {
        ("-c", "--command")
    } else {
        ("-e", "--execute")
    };
    for (i, a) in args.iter().enumerate() {
        let t = a.text.as_str();
        if !psql
            && !a.dynamic
            && MYSQL_RUNS_OPTIONS
                .iter()
                .any(|o| t == *o || t.strip_prefix(o).is_some_and(|r| r.starts_with('=')))
        {
            return Facts::opaque(format!("`{name} {t}` runs a program or loads code"));
        }
        let attached = t
            .strip_prefix(long)
            .and_then(|r| r.strip_prefix('='))
            .or_else(|| {
                t.strip_prefix(short)
                    .filter(|v| !v.is_empty() && !t.starts_with("--"))
            });
        let code = if a.is(short) || a.is(long) {
            args.get(i + 1).cloned()
        } else {
            attached.map(|v| Arg {
                text: v.to_string(),
                ..a.clone()
            })
        };
        let Some(code) = code else { continue };
        if code.dynamic {
            return Facts::opaque(format!("`{name}` runs commands computed at run time"));
        }
        let lower = code.text.to_ascii_lowercase();
        if lower.contains("program") {
            return Facts::opaque(format!("`{name}` SQL that runs a program (`… PROGRAM`)"));
        }
        if psql {
            for word in code.text.split_whitespace().filter(|w| w.starts_with('\\')) {
                let meta = word.split(['|', '\'']).next().unwrap_or(word);
                if !PSQL_READ_META.contains(&meta) {
                    return Facts::opaque(format!(
                        "`psql {meta}` is not on the list of meta-commands that only read"
                    ));
                }
            }
        } else {
            let runs = lower.split([';', '\n']).any(|stmt| {
                let stmt = stmt.trim_start();
                MYSQL_RUNS.iter().any(|r| {
                    stmt.starts_with(r)
                        && stmt[r.len()..]
                            .chars()
                            .next()
                            .is_none_or(|c| !c.is_ascii_alphanumeric() && c != '_')
                })
            }) || lower.contains("\\!");
            if runs {
                return Facts::opaque(format!(
                    "`{name}` client command that runs a program or writes a file"
                ));
            }
        }
    }
    Facts::default()
}
