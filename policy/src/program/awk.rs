//! awk: its program is a language that can run commands (`system()`,
//! pipes to and from commands, `@load`) and write files by name
//! (`print > "/etc/x"`); the scanner here finds both, so an allowed `awk`
//! is judged by what its program does.

use super::{Facts, HiddenPath};
use crate::arg::Arg;
use crate::options::{Opt, Problem, Role, Syntax, flag, optional, parse, value};

/// gawk's options (mawk's and busybox's are a subset), read as gawk's
/// getopt reads them: options end at the program text.
const AWK: &[Opt] = &[
    value(b'f', "file").role(Role::Runs), // the program from a file berth cannot see
    value(b'E', "exec").role(Role::Runs), // the same, last of the options
    value(b'i', "include").role(Role::Runs), // a source library included before the program
    value(b'l', "load").role(Role::Runs), // a compiled extension loaded into awk
    value(b'W', "").role(Role::Runs), // mawk's `-W exec FILE` and other settings berth does not read
    value(b'e', "source").role(Role::Code), // program text
    value(b'v', "assign"),
    value(b'F', "field-separator"),
    optional(b'd', "dump-variables"),
    optional(b'D', "debug"),
    optional(b'o', "pretty-print"),
    optional(b'p', "profile"),
    optional(b'L', "lint"),
    flag(b'b', "characters-as-bytes"),
    flag(b'c', "traditional"),
    flag(b'g', "gen-pot"),
    flag(b'I', "trace"),
    flag(b'k', "csv"),
    flag(b'M', "bignum"),
    flag(b'n', "non-decimal-data"),
    flag(b'N', "use-lc-numeric"),
    flag(b'O', "optimize"),
    flag(b'P', "posix"),
    flag(b'r', "re-interval"),
    flag(b's', "no-optimize"),
    flag(b'S', "sandbox"),
    flag(b't', "lint-old"),
    flag(b'C', "copyright").role(Role::Itself),
    flag(b'h', "help").role(Role::Itself),
    flag(b'V', "version").role(Role::Itself),
];

pub(super) fn awk(argv: &[Arg]) -> Facts {
    let parsed = parse(argv, 1, &Syntax::wrapper(AWK));
    if let Some(p) = &parsed.problem {
        return match p {
            Problem::Dynamic(_) => Facts::opaque("an awk program from a dynamic string"),
            _ => Facts::opaque(p.describe("awk")),
        };
    }
    if parsed.first_with(Role::Runs).is_some() {
        return Facts::opaque("an awk program from a file berth cannot see");
    }
    let mut sources: Vec<&Arg> = parsed
        .found
        .iter()
        .filter(|f| f.opt.role == Role::Code)
        .filter_map(|f| f.value.as_ref())
        .collect();
    if sources.is_empty()
        && let Some(p) = argv.get(parsed.end)
    {
        sources.push(p);
    }
    let mut facts = Facts::default();
    for src in sources {
        if src.dynamic {
            return Facts::opaque("an awk program from a dynamic string");
        }
        match awk_program(&src.text) {
            Err(reason) => return Facts::opaque(reason),
            Ok(paths) => facts.paths.extend(paths),
        }
    }
    facts
}

/// Scans an awk program for what runs programs (`system()`, pipes, `|&`,
/// `@load`) and the files it writes or reads by name.
pub fn awk_program(prog: &str) -> Result<Vec<HiddenPath>, String> {
    #[derive(PartialEq, Clone, Copy)]
    enum Tok {
        Start,
        Operand,
        Operator,
    }
    let b = prog.as_bytes();
    let mut paths = Vec::new();
    let mut i = 0;
    let mut prev = Tok::Start;
    let mut in_print = false;
    let mut paren = 0i32;
    let mut redirect: Option<bool> = None; // Some(writes) after `>`/`<` in a print/getline
    let mut last_word = String::new();
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' => {
                let start = i + 1;
                i += 1;
                let mut s = Vec::new();
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' && i + 1 < b.len() {
                        s.push(b[i + 1]);
                        i += 2;
                        continue;
                    }
                    s.push(b[i]);
                    i += 1;
                }
                let _ = start;
                i += 1;
                if let Some(writes) = redirect.take() {
                    paths.push(HiddenPath {
                        path: Some(String::from_utf8_lossy(&s).into_owned()),
                        writes,
                    });
                }
                prev = Tok::Operand;
                continue;
            }
            b'/' if prev != Tok::Operand => {
                // A regex literal.
                i += 1;
                while i < b.len() && b[i] != b'/' {
                    if b[i] == b'\\' {
                        i += 1;
                    } else if b[i] == b'[' {
                        // bracket expressions may hold `/`
                        i += 1;
                        while i < b.len() && b[i] != b']' {
                            i += 1;
                        }
                    }
                    i += 1;
                }
                i += 1;
                prev = Tok::Operand;
                continue;
            }
            b'#' => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'@' => {
                let rest = &prog[i + 1..];
                if rest.starts_with("load") || rest.starts_with("include") {
                    return Err("an awk program that loads code (`@load`/`@include`)".into());
                }
                i += 1;
                continue;
            }
            b'|' => {
                if b.get(i + 1) == Some(&b'|') {
                    i += 2;
                    prev = Tok::Operator;
                    continue;
                }
                return Err("an awk program that pipes to or from a command".into());
            }
            b'(' => {
                if last_word == "system" {
                    return Err("an awk program that calls `system()`".into());
                }
                paren += 1;
                prev = Tok::Operator;
            }
            b')' => {
                paren -= 1;
                prev = Tok::Operand;
            }
            b'>' if in_print && paren <= 0 => {
                if b.get(i + 1) == Some(&b'>') {
                    i += 1;
                }
                redirect = Some(true);
                prev = Tok::Operator;
            }
            b'<' if last_word == "getline" => {
                redirect = Some(false);
                prev = Tok::Operator;
            }
            b';' | b'\n' | b'{' | b'}' => {
                if let Some(writes) = redirect.take() {
                    paths.push(HiddenPath { path: None, writes });
                }
                in_print = false;
                prev = Tok::Start;
            }
            _ if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                last_word = prog[start..i].to_string();
                if last_word == "print" || last_word == "printf" {
                    in_print = true;
                    paren = 0;
                }
                if let Some(writes) = redirect.take() {
                    // A file name computed by an expression.
                    paths.push(HiddenPath { path: None, writes });
                }
                let is_keyword = matches!(
                    last_word.as_str(),
                    "print" | "printf" | "return" | "in" | "getline"
                );
                prev = if is_keyword {
                    Tok::Operator
                } else {
                    Tok::Operand
                };
                // skip spaces to check `system (`
                let mut j = i;
                while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                    j += 1;
                }
                if last_word == "system" && b.get(j) == Some(&b'(') {
                    return Err("an awk program that calls `system()`".into());
                }
                continue;
            }
            b'$' => {
                if let Some(writes) = redirect.take() {
                    paths.push(HiddenPath { path: None, writes });
                }
                prev = Tok::Operator;
            }
            b' ' | b'\t' | b'\r' => {}
            b'0'..=b'9' => prev = Tok::Operand,
            _ => prev = Tok::Operator,
        }
        if !(c.is_ascii_alphanumeric() || c == b'_' || c == b' ' || c == b'\t') {
            last_word.clear();
        }
        i += 1;
    }
    if let Some(writes) = redirect.take() {
        paths.push(HiddenPath { path: None, writes });
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awk_programs() {
        let cases: &[(&str, Result<usize, ()>)] = &[
            ("{print $5}", Ok(0)),
            ("/WARN/ {print $2}", Ok(0)),
            ("{s+=$1} END {print s}", Ok(0)),
            ("NR%3==1", Ok(0)),
            ("$0 ~ /a|b/ {print}", Ok(0)),
            ("{ if (a || b) print }", Ok(0)),
            ("{print $1 > \"/tmp/out\"}", Ok(1)),
            ("{print $1 > $2}", Ok(1)),
            ("{system(\"rm -rf /\")}", Err(())),
            ("{ system (\"id\") }", Err(())),
            ("{print | \"sh\"}", Err(())),
            ("{\"date\" | getline d}", Err(())),
            (
                "BEGIN { while ((\"ls\" | getline l) > 0) print l }",
                Err(()),
            ),
            ("@load \"x\"", Err(())),
            ("{ x = a / b / c; print x }", Ok(0)),
        ];
        for (prog, want) in cases {
            let got = awk_program(prog).map(|p| p.len()).map_err(|_| ());
            assert_eq!(got, *want, "{prog}");
        }
    }
}
