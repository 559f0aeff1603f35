//! `env` and `cross-env`: the assignments they make and the directory they
//! change to belong to the command they run, and `env -S` splits a string
//! into a command line.

use super::{Unwrap, WrapInfo};
use crate::arg::Arg;

pub(super) fn unwrap_env(argv: &[Arg]) -> Unwrap {
    let mut info = WrapInfo::default();
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            if a.text.contains('=') {
                // `env "$X=1" cmd` or `env X=$Y cmd`
                if let Some((name, _)) = a.text.split_once('=')
                    && is_env_name(name)
                {
                    info.assigns.push((
                        name.to_string(),
                        Arg {
                            text: String::new(),
                            ..a.clone()
                        },
                    ));
                    i += 1;
                    continue;
                }
            }
            break;
        }
        let t = a.text.as_str();
        if t == "--" {
            i += 1;
            continue;
        }
        if t == "-"
            || t == "-i"
            || t == "--ignore-environment"
            || t == "-0"
            || t == "--null"
            || t == "-v"
            || t == "--debug"
        {
            i += 1;
            continue;
        }
        if t == "-u" || t == "--unset" || t == "-a" || t == "--argv0" {
            i += 2;
            continue;
        }
        if t.starts_with("--argv0=") {
            i += 1;
            continue;
        }
        if t.starts_with("--unset=")
            || t.starts_with("--default-signal")
            || t.starts_with("--ignore-signal")
            || t.starts_with("--block-signal")
            || t == "--list-signal-handling"
        {
            i += 1;
            continue;
        }
        if t == "-C" || t == "--chdir" {
            info.chdir = argv.get(i + 1).cloned();
            i += 2;
            continue;
        }
        if let Some(d) = t.strip_prefix("--chdir=") {
            info.chdir = Some(Arg {
                text: d.to_string(),
                ..a.clone()
            });
            i += 1;
            continue;
        }
        if t == "-S"
            || t == "--split-string"
            || t.starts_with("--split-string=")
            || (t.starts_with("-S") && t.len() > 2)
        {
            let script = if let Some(v) = t.strip_prefix("--split-string=") {
                Some(Arg {
                    text: v.to_string(),
                    ..a.clone()
                })
            } else if t.len() > 2 && t.starts_with("-S") {
                Some(Arg {
                    text: t[2..].to_string(),
                    ..a.clone()
                })
            } else {
                argv.get(i + 1).cloned()
            };
            let rest_from = if t == "-S" || t == "--split-string" {
                i + 2
            } else {
                i + 1
            };
            return match script {
                Some(s)
                    if !s.dynamic
                        && argv[rest_from.min(argv.len())..].iter().all(|r| !r.dynamic) =>
                {
                    // The split string's words come first, then the rest.
                    let mut text = s.text.clone();
                    for r in &argv[rest_from.min(argv.len())..] {
                        text.push(' ');
                        text.push_str(&shell_quote(&r.text));
                    }
                    Unwrap::Script {
                        script: Arg::lit(text),
                        new_process: true,
                        info,
                    }
                }
                Some(_) => Unwrap::Opaque("`env -S` with a dynamic string".into()),
                None => Unwrap::Itself,
            };
        }
        if t.starts_with('-') && t.len() > 1 {
            // `-iu X` style clusters: treat a trailing `u`/`C`/`S` as taking the next word.
            let last = t.as_bytes()[t.len() - 1];
            i += if matches!(last, b'u' | b'C' | b'a') {
                2
            } else {
                1
            };
            continue;
        }
        if let Some((name, value)) = t.split_once('=')
            && is_env_name(name)
        {
            info.assigns.push((
                name.to_string(),
                Arg {
                    text: value.to_string(),
                    ..a.clone()
                },
            ));
            i += 1;
            continue;
        }
        break;
    }
    if i >= argv.len() {
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

pub(super) fn is_env_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

pub(crate) fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
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
