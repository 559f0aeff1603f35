//! berth's first reading of its command line, before clap's: is this an
//! exec it can hand to a server at once, and what does it propose?
//!
//! berth reads its command line with clap, whose grammar for
//! `exec` is `berth [--state DIR] exec [--timeout N] [--cwd DIR] [--json]
//! [--local] AGENT -- WORDS…` (`--state` anywhere before `--`, flags in any
//! order around the agent, each once). This reader takes a strict part of it
//! and answers `None` for anything else — `--local`, help, a flag it does
//! not know, a repeated flag, a value it would have to guess about (empty,
//! starting with `-`, not UTF-8) — and then clap reads the same arguments
//! and berth says what is wrong, or runs it. So a command line this reader
//! takes means exactly what clap would make of it: the `berth` binary's
//! tests compare the two over a table of command lines.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::client::{ExecRequest, command_line};

/// An exec berth can hand off at once: the state it names, and the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontExec {
    /// `--state`, when given.
    pub state: Option<PathBuf>,
    pub request: ExecRequest,
}

/// `args` (with the program's name first) as an exec this reader takes, or
/// `None`: everything else is clap's.
pub fn exec_request(args: &[OsString]) -> Option<FrontExec> {
    let mut words = args.iter().skip(1).map(|a| a.to_str());
    let mut state: Option<PathBuf> = None;
    // Before the subcommand: only `--state`.
    loop {
        let word = words.next()??;
        if word == "exec" {
            break;
        }
        let value = option_value(word, "--state", &mut words)?;
        if state.replace(PathBuf::from(value)).is_some() {
            return None;
        }
    }
    let (mut agent, mut cwd, mut timeout, mut json) = (None, None, None, false);
    loop {
        let word = words.next()??;
        if word == "--" {
            break;
        }
        if word == "--json" {
            if json {
                return None;
            }
            json = true;
        } else if !word.starts_with('-') {
            if word.is_empty() || agent.replace(word.to_string()).is_some() {
                return None;
            }
        } else if word == "--state" || word.starts_with("--state=") {
            let value = option_value(word, "--state", &mut words)?;
            if state.replace(PathBuf::from(value)).is_some() {
                return None;
            }
        } else if word == "--cwd" || word.starts_with("--cwd=") {
            if cwd
                .replace(option_value(word, "--cwd", &mut words)?)
                .is_some()
            {
                return None;
            }
        } else if word == "--timeout" || word.starts_with("--timeout=") {
            let value = option_value(word, "--timeout", &mut words)?;
            if !value.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            if timeout.replace(value.parse::<u64>().ok()?).is_some() {
                return None;
            }
        } else {
            // `--local`, `--help`, `-h`, a flag of a newer or older berth.
            return None;
        }
    }
    let command: Vec<String> = words
        .map(|w| w.map(str::to_string))
        .collect::<Option<_>>()?;
    if command.is_empty() {
        return None;
    }
    Some(FrontExec {
        state,
        request: ExecRequest {
            agent: agent?,
            command: command_line(&command),
            cwd,
            timeout_secs: timeout,
            json,
        },
    })
}

/// The value of `name` given as `name=VALUE` in `word`, or as the next
/// word: non-empty, not starting with `-` (clap would read it otherwise or
/// refuse it).
fn option_value<'a>(
    word: &'a str,
    name: &str,
    rest: &mut impl Iterator<Item = Option<&'a str>>,
) -> Option<String> {
    let value = match word.strip_prefix(name)? {
        "" => rest.next()??,
        joined => joined.strip_prefix('=')?,
    };
    (!value.is_empty() && !value.starts_with('-')).then(|| value.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn read(words: &[&str]) -> Option<FrontExec> {
        let args: Vec<OsString> = std::iter::once("berth")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect();
        exec_request(&args)
    }

    #[test]
    fn the_common_forms_are_taken_with_every_field() {
        let e = read(&[
            "--state",
            "/s",
            "exec",
            "--json",
            "dev-1",
            "--cwd=/work/a",
            "--timeout",
            "30",
            "--",
            "make",
            "it's",
        ])
        .unwrap();
        assert_eq!(e.state, Some(PathBuf::from("/s")));
        assert_eq!(
            e.request,
            ExecRequest {
                agent: "dev-1".into(),
                command: "make 'it'\\''s'".into(),
                cwd: Some("/work/a".into()),
                timeout_secs: Some(30),
                json: true,
            }
        );
        let e = read(&["exec", "dev-1", "--state=/t", "--", "make && make test"]).unwrap();
        assert_eq!(e.state, Some(PathBuf::from("/t")));
        assert_eq!(e.request.command, "make && make test");
        assert!(!e.request.json && e.request.cwd.is_none() && e.request.timeout_secs.is_none());
        // After `--` every word is the command's, flags too.
        let e = read(&["exec", "dev-1", "--", "ls", "--json", "--local", "-h"]).unwrap();
        assert_eq!(e.request.command, "ls --json --local -h");
    }

    #[test]
    fn anything_unusual_is_left_to_the_full_program() {
        for words in [
            &[][..],
            &["exec"],
            &["exec", "dev-1"],
            &["exec", "dev-1", "--"],
            &["exec", "--", "true"],
            &["exec", "dev-1", "--local", "--", "true"],
            &["exec", "--help"],
            &["exec", "-h", "dev-1", "--", "true"],
            &["exec", "dev-1", "dev-2", "--", "true"],
            &["exec", "dev-1", "--json", "--json", "--", "true"],
            &["exec", "dev-1", "--cwd", "/a", "--cwd=/b", "--", "true"],
            &["exec", "dev-1", "--cwd", "--", "true"],
            &["exec", "dev-1", "--cwd=", "--", "true"],
            &["exec", "dev-1", "--cwd", "-x", "--", "true"],
            &["exec", "dev-1", "--timeout", "+5", "--", "true"],
            &[
                "exec",
                "dev-1",
                "--timeout",
                "99999999999999999999",
                "--",
                "true",
            ],
            &["exec", "dev-1", "--timeout=x", "--", "true"],
            &["exec", "dev-1", "--timeouts=5", "--", "true"],
            &["exec", "dev-1", "--statex=/s", "--", "true"],
            &["exec", "dev-1", "--no-such-flag", "--", "true"],
            &[
                "--state", "/a", "exec", "--state", "/b", "dev-1", "--", "true",
            ],
            &["--version"],
            &["ls"],
            &["-v", "exec", "dev-1", "--", "true"],
            &["exe", "dev-1", "--", "true"],
        ] {
            assert_eq!(read(words), None, "{words:?}");
        }
    }

    #[test]
    fn a_word_that_is_not_utf8_is_left_to_the_full_program() {
        use std::os::unix::ffi::OsStringExt as _;
        let args = [
            OsString::from("berth"),
            OsString::from("exec"),
            OsString::from("dev-1"),
            OsString::from("--"),
            OsString::from_vec(vec![0xff, b'x']),
        ];
        assert_eq!(exec_request(&args), None);
    }
}
