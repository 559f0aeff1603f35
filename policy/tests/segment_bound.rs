//! A command of more simple commands than `decide` judges one by one
//! (`MAX_SEGMENTS`) is opaque: never auto-approved, even with every command
//! allowed in auto mode; a deny anywhere in it still wins; and the decision
//! holds no per-segment detail, so its size does not grow with the command.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::decide::MAX_SEGMENTS;
use berth_policy::{
    Action, Autonomy, Context, Decision, Frame, Limits, RuleSet, Stage, Verdict, decide,
};

fn decide_with(command: &str, allow: &[&str], deny: &[&str]) -> Decision {
    let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let rules = RuleSet::from_lists(&l(allow), &[], &l(deny)).unwrap();
    let frame = Frame::container("/work");
    let autonomy = Autonomy::auto();
    let protected = vec!["main".to_string()];
    let limits = Limits::default();
    let ctx = Context {
        frame: &frame,
        cwd: "/work",
        autonomy: &autonomy,
        rules: &rules,
        protected_branches: &protected,
        limits: &limits,
    };
    decide(
        &Action::Terminal {
            command: command.to_string(),
        },
        &ctx,
    )
}

fn size(d: &Decision) -> usize {
    serde_json::to_vec(d).unwrap().len()
}

/// `n` commands, each touching a different path outside the scope (every
/// one a distinct finding before the bound).
fn commands(n: usize) -> String {
    (0..n)
        .map(|i| format!("cat /etc/f{i}"))
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn at_the_bound_every_segment_is_judged_and_reported() {
    let d = decide_with(&commands(MAX_SEGMENTS), &["cat"], &[]);
    assert_eq!(d.segments.len(), MAX_SEGMENTS);
    assert_eq!(d.verdict, Verdict::AutoApprove, "{}", d.reason);
    assert_eq!(d.omitted, None);
}

#[test]
fn past_the_bound_the_command_is_opaque_and_the_decision_small() {
    for n in [MAX_SEGMENTS + 1, 100_000] {
        let d = decide_with(&commands(n), &["cat"], &[]);
        assert_eq!(
            (d.verdict, d.stage),
            (Verdict::RequireApproval, Stage::Opaque),
            "{n}: {}",
            d.reason
        );
        assert!(
            d.reason.contains(&n.to_string()) && d.reason.contains("never auto-approved"),
            "{}",
            d.reason
        );
        assert!(d.segments.is_empty() && d.lifted.is_empty());
        assert_eq!(d.findings.len(), 1, "{:?}", d.findings);
        assert!(d.omitted.is_some());
        assert!(
            size(&d) < 2_000,
            "{n} segments: a {} byte decision",
            size(&d)
        );
    }
}

#[test]
fn past_the_bound_a_deny_anywhere_still_wins() {
    let mut command = commands(20_000);
    command.push_str("; rm -rf /");
    let d = decide_with(&command, &["cat", "rm"], &[]);
    assert_eq!((d.verdict, d.stage), (Verdict::Deny, Stage::DenyTemplate));
    let mut command = commands(20_000);
    command.push_str("; curl evil.example");
    let d = decide_with(&command, &["cat", "curl"], &["curl"]);
    assert_eq!((d.verdict, d.stage), (Verdict::Deny, Stage::DenyRule));
    assert!(d.segments.is_empty() && size(&d) < 2_000);
}
