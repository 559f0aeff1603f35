//! Shells and the builtins that run a command line: `sh -c`, `bash -lc`,
//! `eval`, `trap`, `script -c`; which programs are shells and which
//! interpret code given to them.

use super::{Unwrap, WrapInfo, join_script, long_name};
use crate::arg::Arg;

/// Programs that are shells (`-c` runs a script).
pub fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "sh" | "bash"
            | "zsh"
            | "dash"
            | "ksh"
            | "mksh"
            | "ash"
            | "yash"
            | "fish"
            | "rbash"
            | "tcsh"
            | "csh"
            | "pdksh"
            | "oksh"
    )
}

/// Programs that interpret code given to them (never rule-approved with
/// `--always`).
pub fn is_interpreter(name: &str) -> bool {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    matches!(
        base,
        "python"
            | "pypy"
            | "node"
            | "nodejs"
            | "deno"
            | "bun"
            | "perl"
            | "ruby"
            | "php"
            | "lua"
            | "luajit"
            | "Rscript"
            | "R"
            | "tclsh"
            | "wish"
            | "awk"
            | "gawk"
            | "mawk"
            | "nawk"
            | "julia"
            | "osascript"
            | "pwsh"
            | "powershell"
            | "irb"
            | "ghci"
            | "racket"
            | "guile"
            | "sbcl"
            | "clojure"
            | "scala"
            | "groovy"
            | "jshell"
            | "elixir"
            | "erl"
            | "escript"
            | "swift"
            | "kotlin"
            | "dotnet"
            | "java"
    ) || is_shell(name)
}

/// `sh -c 'script'`, `bash -lc …`; a shell with neither `-c` nor a script
/// file reads its script from stdin.
pub(super) fn unwrap_shell(argv: &[Arg]) -> Unwrap {
    let mut info = WrapInfo {
        shell: true,
        ..WrapInfo::default()
    };
    let name = argv[0].basename().to_string();
    let mut i = 1;
    let mut dash_c = false;
    let mut reads_stdin = false;
    let mut dynamic_option = None;
    while i < argv.len() {
        let a = &argv[i];
        if a.dynamic {
            // `bash $X -c '…'`: `$X` may be any option (`--rcfile`, `-s`)
            // or the script's name. Look on for a visible `-c`.
            if dynamic_option.is_none() {
                dynamic_option = Some(i);
            }
            let c_follows = argv[i + 1..].iter().any(|w| {
                !w.dynamic
                    && (w.text == "--command"
                        || (w.text.starts_with('-')
                            && !w.text.starts_with("--")
                            && w.text.contains('c')))
            });
            if !c_follows {
                break;
            }
            i += 1;
            continue;
        }
        let t = a.text.as_str();
        if t == "-" {
            // `bash - x`: the script is read from stdin.
            return Unwrap::Opaque(format!("`{name} -` reads its script from stdin"));
        }
        if t == "--" {
            i += 1;
            break;
        }
        if t.starts_with("--") {
            match long_name(t) {
                "--rcfile" | "--init-file" => {
                    return Unwrap::Opaque(format!(
                        "`{name} {t}` runs a startup file berth cannot see"
                    ));
                }
                "--command" => {
                    dash_c = true;
                    i += 1;
                    continue;
                }
                _ => {
                    i += 1;
                    continue;
                }
            }
        }
        if (t.starts_with('-') || t.starts_with('+')) && t.len() > 1 {
            let bytes = t.as_bytes();
            let mut takes_next = 0;
            for &c in &bytes[1..] {
                match c {
                    b'c' => dash_c = true,
                    b's' | b'i' => reads_stdin = true,
                    b'o' | b'O' => takes_next += 1,
                    _ => {}
                }
            }
            i += 1 + takes_next;
            continue;
        }
        break;
    }
    if let Some(d) = dynamic_option {
        let why = format!(
            "`{name}` with a dynamic word among its options (`{}`)",
            argv[d].text
        );
        if !dash_c {
            return Unwrap::Opaque(why);
        }
        info.opaque = Some(why);
    }
    if dash_c {
        return match argv.get(i) {
            Some(s) if s.dynamic => Unwrap::Opaque(format!("`{name} -c` with a dynamic script")),
            Some(s) => Unwrap::Script {
                script: s.clone(),
                new_process: true,
                info,
            },
            None => Unwrap::Opaque(format!("`{name} -c` without a script")),
        };
    }
    if reads_stdin || i >= argv.len() {
        return Unwrap::Opaque(format!("`{name}` reads its script from stdin"));
    }
    if crate::program::is_stdin_alias(&argv[i]) {
        // `bash /dev/stdin <<< '…'`, `bash <(curl …)`, `sh /proc/self/fd/0`
        return Unwrap::Opaque(format!("`{name}` reads its script from `{}`", argv[i].text));
    }
    // `bash script.sh`: the shell runs a file; it is the program judged.
    Unwrap::NotAWrapper
}

pub(super) fn unwrap_eval(argv: &[Arg]) -> Unwrap {
    let words = &argv[1..];
    if words.is_empty() {
        return Unwrap::Itself;
    }
    if words.iter().any(|w| w.dynamic) {
        return Unwrap::Opaque("`eval` of a dynamic string".into());
    }
    join_script(words, false)
}

pub(super) fn unwrap_trap(argv: &[Arg]) -> Unwrap {
    let Some(first) = argv.get(1) else {
        return Unwrap::Itself;
    };
    if first.dynamic {
        return Unwrap::Opaque("`trap` with a dynamic handler".into());
    }
    let t = first.text.as_str();
    if matches!(t, "-p" | "-l" | "-" | "")
        || argv.len() == 2
            && t.chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return Unwrap::Itself;
    }
    let script = if t == "--" {
        match argv.get(2) {
            Some(s) if !s.dynamic => s.clone(),
            Some(_) => return Unwrap::Opaque("`trap` with a dynamic handler".into()),
            None => return Unwrap::Itself,
        }
    } else {
        first.clone()
    };
    Unwrap::Script {
        script,
        new_process: false,
        info: WrapInfo::default(),
    }
}

pub(super) fn unwrap_script_cmd(argv: &[Arg]) -> Unwrap {
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        let t = a.text.as_str();
        if !a.dynamic && (t == "-c" || t == "--command") {
            return match argv.get(i + 1) {
                Some(s) => Unwrap::Script {
                    script: s.clone(),
                    new_process: true,
                    info: WrapInfo::default(),
                },
                None => Unwrap::Itself,
            };
        }
        if !a.dynamic && t.starts_with("--command=") {
            return Unwrap::Script {
                script: Arg {
                    text: t["--command=".len()..].to_string(),
                    ..a.clone()
                },
                new_process: true,
                info: WrapInfo::default(),
            };
        }
        i += 1;
    }
    // `script` without -c starts an interactive shell.
    Unwrap::Opaque("`script` without -c starts an interactive shell".into())
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{args, script};
    use super::super::{Unwrap, unwrap};

    #[test]
    fn scripts_and_opaque() {
        assert_eq!(script("bash -c ls"), Some("ls".into()));
        assert_eq!(script("bash -lc ls"), Some("ls".into()));
        assert_eq!(script("sh -e -c ls"), Some("ls".into()));
        assert_eq!(script("bash -o pipefail -c ls"), Some("ls".into()));
        assert_eq!(script("eval git push"), Some("git push".into()));
        assert!(matches!(unwrap(&args("sh")), Unwrap::Opaque(_)));
        assert!(matches!(unwrap(&args("bash -s")), Unwrap::Opaque(_)));
        assert_eq!(unwrap(&args("bash script.sh")), Unwrap::NotAWrapper);
    }
}
