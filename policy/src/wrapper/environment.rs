//! `env` and `cross-env`: the assignments they make and the directory they
//! change to belong to the command they run, and `env -S` splits a string
//! into a command line.

use super::{Unwrap, WrapInfo};
use crate::arg::Arg;
use crate::options::{HELP_VERSION, Opt, Problem, Role, Syntax, flag, optional, parse, value};

/// GNU `env` (and `cross-env`, which takes assignments the same way).
const ENV: &[Opt] = &[
    flag(b'i', "ignore-environment"),
    flag(b'0', "null"),
    value(b'u', "unset"),
    value(b'C', "chdir").role(Role::Chdir), // the command runs in this directory
    value(b'S', "split-string").role(Role::SplitString), // the value is split into the command line
    value(b'a', "argv0"),
    optional(0, "block-signal"),
    optional(0, "default-signal"),
    optional(0, "ignore-signal"),
    flag(0, "list-signal-handling"),
    flag(b'v', "debug"),
    HELP_VERSION[0],
    HELP_VERSION[1],
];

pub(super) fn unwrap_env(argv: &[Arg]) -> Unwrap {
    let name = argv.first().map_or("env", |a| a.basename());
    let parsed = parse(
        argv,
        1,
        &Syntax {
            guess: true,
            ..Syntax::wrapper(ENV)
        },
    );
    let mut info = WrapInfo::default();
    match &parsed.problem {
        Some(p @ (Problem::Unknown(_) | Problem::Ambiguous(_))) => {
            info.opaque = Some(p.describe(name));
        }
        Some(p) => return Unwrap::Opaque(p.describe(name)),
        None => {}
    }
    if let Some(reason) = &info.opaque
        && (parsed.first_with(Role::Itself).is_some()
            || parsed.first_with(Role::SplitString).is_some())
    {
        return Unwrap::Opaque(reason.clone());
    }
    if parsed.first_with(Role::Itself).is_some() {
        return Unwrap::Itself;
    }
    for f in parsed.found.iter().filter(|f| f.opt.role == Role::Chdir) {
        info.chdir = f.value.clone();
    }
    if let Some(f) = parsed.first_with(Role::SplitString) {
        let rest = &argv[parsed.end.min(argv.len())..];
        return match &f.value {
            Some(s) if !s.dynamic && rest.iter().all(|r| !r.dynamic) => {
                // The split string's words come first, then the rest.
                let mut text = s.text.clone();
                for r in rest {
                    text.push(' ');
                    text.push_str(&crate::shell::quote_word(&r.text));
                }
                Unwrap::Script {
                    script: Arg::lit(text),
                    new_process: true,
                    info,
                }
            }
            Some(_) => Unwrap::Opaque(format!("`{name} -S` with a dynamic string")),
            None => Unwrap::Itself,
        };
    }
    let mut i = parsed.end;
    if argv.get(i).is_some_and(|a| a.is("-")) {
        // `env -` is `env -i`.
        i += 1;
    }
    while i < argv.len() {
        let a = &argv[i];
        let Some((var, val)) = a.text.split_once('=') else {
            break;
        };
        // env reads every word with a `=` before the command as an
        // assignment, whatever its name: `BASH_FUNC_ls%%=() { …; }` is one
        // (bash imports it as the function `ls`), though no shell could
        // assign it.
        if var.is_empty() {
            break;
        }
        // `env X=1 cmd`, `env "$X=1" cmd` (dynamic: its value unknown).
        info.assigns.push((
            var.to_string(),
            Arg {
                text: if a.dynamic {
                    String::new()
                } else {
                    val.to_string()
                },
                ..a.clone()
            },
        ));
        i += 1;
    }
    if i >= argv.len() {
        if let Some(reason) = info.opaque {
            return Unwrap::Opaque(reason);
        }
        if info.assigns.is_empty() && info.chdir.is_none() {
            return Unwrap::Itself;
        }
        // `env X=1` alone prints the environment: still judge the assignments.
        return Unwrap::Command {
            start: argv.len(),
            info,
        };
    }
    Unwrap::Command { start: i, info }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, assert_starts};
    use super::super::{Unwrap, unwrap};

    #[test]
    fn finds_the_wrapped_command() {
        let cases: &[(&str, Option<usize>)] = &[
            ("env -i PATH=/x FOO=1 ls", Some(4)),
            ("env -u HOME ls", Some(3)),
            ("cross-env NODE_ENV=production webpack", Some(2)),
            ("env -a name node x.js", Some(3)),
        ];
        assert_starts(cases);
    }

    #[test]
    fn scripts_and_opaque() {
        assert_eq!(unwrap(&args("env")), Unwrap::Itself);
    }
}
