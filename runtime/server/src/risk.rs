//! How much a pending action could hurt, said in one word, so a person
//! looking at twenty cards sees `rm -rf` and `curl … | sh` before `npm test`.
//!
//! Derived from the decision alone (what the policy already found), never
//! from a second parse of the command: high for an external effect
//! (`privileged`), a command next to a deny template (a recursive `rm`,
//! `chmod -R`, `dd`, a disk formatter, code fetched and run by a shell) and
//! a write outside the scope; medium for what berth cannot read (`opaque`),
//! what always asks (`never_auto`), a read outside the scope and an ask
//! rule; low for the rest. It orders the approvals page and labels each card
//! with a word and an icon, not a colour alone.

use berth_policy::access::{Access, argv_accesses};
use berth_policy::arg::Arg;
use berth_policy::{Action, Decision, Finding, Location, SegmentReport, Stage};

/// A risk level; ordered so the highest sorts last (`Ord`) — the page sorts
/// by [`std::cmp::Reverse`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    /// The word a card shows and `data-risk` holds.
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// A level and the one reason that set it, in plain words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assessment {
    pub risk: Risk,
    pub because: String,
}

impl Assessment {
    fn new(risk: Risk, because: impl Into<String>) -> Assessment {
        Assessment {
            risk,
            because: because.into(),
        }
    }
}

/// Programs that destroy in bulk when asked to recurse (the deny templates'
/// neighbours: the template denies them on `/`, anywhere else they ask).
const RECURSIVE_DESTROYERS: [&str; 4] = ["rm", "chmod", "chown", "chgrp"];
/// Programs that overwrite disks or files beyond recovery.
const DISK_WRITERS: [&str; 4] = ["dd", "shred", "wipefs", "sgdisk"];
/// Programs that run code they are given on stdin or as a string.
const INTERPRETERS: [&str; 9] = [
    "sh", "bash", "zsh", "dash", "ksh", "python", "python3", "perl", "node",
];
/// Programs that fetch from the network.
const FETCHERS: [&str; 2] = ["curl", "wget"];

/// The risk of `action` as `decision` judged it.
pub fn assess(action: &Action, decision: &Decision) -> Assessment {
    let findings: Vec<&Finding> = decision
        .findings
        .iter()
        .chain(decision.lifted.iter())
        .collect();
    let has = |stage: Stage| decision.stage == stage || findings.iter().any(|f| f.stage == stage);

    if has(Stage::Privileged) {
        return Assessment::new(Risk::High, "has an effect outside the sandbox");
    }
    if has(Stage::DenyTemplate) || decision.segments.iter().any(|s| s.template.is_some()) {
        return Assessment::new(Risk::High, "meets a deny template");
    }
    if let Some(why) = decision.segments.iter().find_map(destructive) {
        return Assessment::new(Risk::High, why);
    }
    if fetched_and_run(&decision.segments) {
        return Assessment::new(Risk::High, "runs code fetched from the network");
    }
    let outside_scope = has(Stage::Scope);
    if outside_scope && writes_outside(action, decision) {
        return Assessment::new(Risk::High, "writes outside the project");
    }
    if has(Stage::Opaque) {
        return Assessment::new(Risk::Medium, "berth cannot tell what it does");
    }
    if has(Stage::NeverAuto) {
        return Assessment::new(Risk::Medium, "a kind of action that always asks");
    }
    if outside_scope {
        return Assessment::new(Risk::Medium, "reads outside the project");
    }
    if has(Stage::AskRule) {
        return Assessment::new(Risk::Medium, "a rule says to ask");
    }
    Assessment::new(Risk::Low, "nothing risky found")
}

/// A recursive `rm`/`chmod`-family command, or a disk writer, said plainly.
fn destructive(s: &SegmentReport) -> Option<String> {
    let program = s.argv.first().map(|p| basename(p))?;
    if DISK_WRITERS.contains(&program) || program.starts_with("mkfs") {
        return Some(format!("`{program}` overwrites data beyond recovery"));
    }
    let argv: Vec<Arg> = s.argv.iter().map(Arg::lit).collect();
    if RECURSIVE_DESTROYERS.contains(&program)
        && berth_policy::template::recursion(&argv) == Some(true)
    {
        return Some(format!("a recursive `{program}`"));
    }
    if program == "find" && s.argv.iter().any(|a| a == "-delete") {
        return Some("`find -delete`".into());
    }
    None
}

/// A fetcher and an interpreter in one command line (`curl … | sh`).
fn fetched_and_run(segments: &[SegmentReport]) -> bool {
    let programs: Vec<&str> = segments
        .iter()
        .filter_map(|s| s.argv.first().map(|p| basename(p)))
        .collect();
    programs.iter().any(|p| FETCHERS.contains(p))
        && programs.iter().any(|p| INTERPRETERS.contains(p))
}

/// Whether a path outside the scope is written: a `file_write`, or a
/// segment that names it where its program may write (a path no argv word
/// names — a redirection's target — counts as written: fail closed).
fn writes_outside(action: &Action, decision: &Decision) -> bool {
    match action {
        Action::FileWrite { .. } => return true,
        Action::FileRead { .. } => return false,
        _ => {}
    }
    decision.segments.iter().any(|s| {
        let outside: Vec<&str> = s
            .paths
            .iter()
            .filter(|p| matches!(p.location, Location::Outside | Location::Unknown))
            .map(|p| p.written.as_str())
            // A description, not a path it names: "(working directory)".
            .filter(|w| !w.starts_with('('))
            .collect();
        if outside.is_empty() {
            return false;
        }
        let argv: Vec<Arg> = s.argv.iter().map(Arg::lit).collect();
        let access = argv_accesses(&argv);
        outside.iter().any(|written| {
            let named = s.argv.iter().position(|a| a == written);
            match named {
                Some(i) => access.kinds.get(i).is_none_or(|k| *k != Access::Read),
                None => {
                    !access.attached_writes.is_empty()
                        || !s.argv.iter().any(|a| a.contains(written))
                }
            }
        })
    })
}

fn basename(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use berth_policy::autonomy::{Approval, Origin, Resolved};
    use berth_policy::{PathReport, RuleMatch, Verdict};

    use super::*;

    fn segment(argv: &[&str], outside: &[&str]) -> SegmentReport {
        SegmentReport {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            wrappers: Vec::new(),
            matched: RuleMatch::None,
            opaque: None,
            privileged: None,
            template: None,
            paths: outside
                .iter()
                .map(|p| PathReport {
                    written: p.to_string(),
                    resolved: Some(p.to_string()),
                    location: Location::Outside,
                })
                .collect(),
        }
    }

    fn decision(stages: &[Stage], segments: Vec<SegmentReport>) -> Decision {
        Decision {
            verdict: Verdict::RequireApproval,
            stage: stages.first().copied().unwrap_or(Stage::Autonomy),
            reason: "r".into(),
            autonomy: Resolved {
                mode: Approval::RequireApproval,
                origin: Origin::Default,
            },
            segments,
            findings: stages
                .iter()
                .map(|s| Finding {
                    stage: *s,
                    verdict: Verdict::RequireApproval,
                    reason: "r".into(),
                    segment: None,
                })
                .collect(),
            lifted: Vec::new(),
            omitted: None,
        }
    }

    fn terminal(command: &str) -> Action {
        Action::Terminal {
            command: command.into(),
        }
    }

    #[test]
    fn each_level_from_the_decision() {
        let t = terminal("x");
        let cases: Vec<(&str, Action, Decision, Risk)> = vec![
            (
                "git push",
                Action::GitPush { branch: "b".into() },
                decision(&[Stage::Privileged], vec![]),
                Risk::High,
            ),
            (
                "rm -rf build",
                t.clone(),
                decision(
                    &[Stage::Autonomy],
                    vec![segment(&["rm", "-rf", "build"], &[])],
                ),
                Risk::High,
            ),
            (
                "rm --recursive",
                t.clone(),
                decision(&[], vec![segment(&["rm", "--recursive", "x"], &[])]),
                Risk::High,
            ),
            (
                "chmod -R",
                t.clone(),
                decision(&[], vec![segment(&["chmod", "-R", "777", "."], &[])]),
                Risk::High,
            ),
            (
                "dd",
                t.clone(),
                decision(&[], vec![segment(&["dd", "if=a", "of=b"], &[])]),
                Risk::High,
            ),
            (
                "curl | sh",
                t.clone(),
                decision(
                    &[Stage::Opaque],
                    vec![segment(&["curl", "-s", "u"], &[]), segment(&["sh"], &[])],
                ),
                Risk::High,
            ),
            (
                "cp to /etc",
                t.clone(),
                decision(
                    &[Stage::Scope],
                    vec![segment(&["cp", "a", "/etc/a"], &["/etc/a"])],
                ),
                Risk::High,
            ),
            (
                "file_write outside",
                Action::FileWrite {
                    path: "/etc/a".into(),
                },
                decision(&[Stage::Scope], vec![]),
                Risk::High,
            ),
            (
                "cat /etc/hostname",
                t.clone(),
                decision(
                    &[Stage::Scope, Stage::PartialAllow],
                    vec![segment(&["cat", "/etc/hostname"], &["/etc/hostname"])],
                ),
                Risk::Medium,
            ),
            (
                "cat into /etc (a redirection)",
                t.clone(),
                decision(
                    &[Stage::Scope],
                    vec![segment(&["cat", "a"], &["/etc/passwd"])],
                ),
                Risk::High,
            ),
            (
                "ls in a directory outside",
                t.clone(),
                decision(
                    &[Stage::Scope],
                    vec![segment(&["ls"], &["(working directory)"])],
                ),
                Risk::Medium,
            ),
            (
                "file_read outside",
                Action::FileRead {
                    path: "/etc/a".into(),
                },
                decision(&[Stage::Scope], vec![]),
                Risk::Medium,
            ),
            (
                "opaque",
                t.clone(),
                decision(&[Stage::Opaque], vec![segment(&["eval", "$X"], &[])]),
                Risk::Medium,
            ),
            (
                "never_auto",
                Action::GitMerge {
                    target: "main".into(),
                },
                decision(&[Stage::NeverAuto], vec![]),
                Risk::Medium,
            ),
            (
                "ask rule",
                t.clone(),
                decision(&[Stage::AskRule], vec![segment(&["npm", "publish"], &[])]),
                Risk::Medium,
            ),
            (
                "npm test",
                t.clone(),
                decision(&[Stage::Autonomy], vec![segment(&["npm", "test"], &[])]),
                Risk::Low,
            ),
            (
                "rm one file",
                t.clone(),
                decision(&[Stage::Autonomy], vec![segment(&["rm", "a.txt"], &[])]),
                Risk::Low,
            ),
            (
                "git commit",
                Action::GitCommit,
                decision(&[Stage::Autonomy], vec![]),
                Risk::Low,
            ),
        ];
        for (name, action, d, want) in cases {
            let got = assess(&action, &d);
            assert_eq!(got.risk, want, "{name}: {got:?}");
            assert!(!got.because.is_empty(), "{name}");
        }
    }

    #[test]
    fn levels_sort_high_first_under_reverse() {
        let mut v = vec![Risk::Low, Risk::High, Risk::Medium];
        v.sort_by_key(|r| std::cmp::Reverse(*r));
        assert_eq!(v, [Risk::High, Risk::Medium, Risk::Low]);
    }
}
