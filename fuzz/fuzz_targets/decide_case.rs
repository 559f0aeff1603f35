//! `decide` on a structured case: any command, rules lists (patterns that do
//! not compile are an error, never a panic), mode or autonomy map, frame,
//! paths and action type. Checks the order of stages: a segment that meets
//! a deny rule is denied, whatever else holds.
#![no_main]

use arbitrary::Arbitrary;
use berth_policy::Verdict;
use berth_policy::case::{Case, CaseMount, CaseRules};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    command: String,
    allow: Vec<String>,
    ask: Vec<String>,
    deny: Vec<String>,
    mode: u8,
    autonomy: Option<Vec<(String, u8)>>,
    container: bool,
    project_root: Option<String>,
    cwd: Option<String>,
    home: Option<String>,
    mounts: Option<Vec<(String, bool, bool, bool)>>,
    action: u8,
    path: Option<String>,
    branch: Option<String>,
    protected: Option<Vec<String>>,
}

const ACTIONS: &[&str] = &[
    "terminal",
    "file_read",
    "file_write",
    "git_commit",
    "git_push",
    "pr_open",
    "git_merge",
    "instruction_patch",
    "parallelize",
    "raise_max_parallel",
    "container_remove",
    "pr_comment",
    "pr_resolve_thread",
    "launch_missiles",
];

/// Reserved words are no command on their own.
const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc",
];

const MODES: &[&str] = &["auto_approve", "require_approval", "deny", "bogus"];

fuzz_target!(|input: Input| {
    let action = ACTIONS[usize::from(input.action) % ACTIONS.len()];
    let case = Case {
        id: Some("fuzz".into()),
        action: Some(action.into()),
        command: Some(input.command.clone()),
        path: input.path,
        branch: input.branch,
        rules: Some(CaseRules {
            allow: input.allow,
            ask: input.ask,
            deny: input.deny.clone(),
        }),
        mode: Some(
            if input.mode % 2 == 0 {
                "auto"
            } else {
                "manual"
            }
            .into(),
        ),
        autonomy: input.autonomy.map(|v| {
            v.into_iter()
                .map(|(k, m)| (k, MODES[usize::from(m) % MODES.len()].to_string()))
                .collect()
        }),
        frame: Some(if input.container { "container" } else { "host" }.into()),
        project_root: input.project_root,
        cwd: input.cwd,
        home: input.home,
        mounts: input.mounts.map(|v| {
            v.into_iter()
                .map(|(target, project, host, in_scope)| CaseMount {
                    target,
                    project,
                    host,
                    in_scope,
                })
                .collect()
        }),
        protected_branches: input.protected,
        ..Case::default()
    };
    // A case may be refused (a pattern that does not compile, an unknown
    // mode); it must never panic.
    let Ok(inputs) = case.inputs() else { return };
    let d = inputs.decide();
    // Deny always wins: a terminal command whose whole text is a plain word
    // that a deny rule names exactly is denied.
    if action == "terminal"
        && !input.command.is_empty()
        && input.command.bytes().all(|b| b.is_ascii_lowercase())
        && !RESERVED.contains(&input.command.as_str())
        && input.deny.iter().any(|p| p == &input.command)
    {
        assert_eq!(
            d.verdict,
            Verdict::Deny,
            "deny rule {:?} did not deny",
            input.command
        );
    }
});
