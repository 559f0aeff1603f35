//! ADR 0167's proof by test: with the autonomy wildcard on (`*:
//! auto_approve`, auto mode), every limit still holds — deny rules, the
//! built-in templates, autonomy `deny`, the external-effect / privileged
//! limit, the never-auto action types, a written `ask`, an opaque command —
//! and auto mode lifts exactly two things: the path scope and the
//! synthesized partial-allow verdict.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::{
    Action, Approval, Autonomy, Context, Frame, Limits, RuleSet, Stage, Verdict, decide,
};

fn rules(allow: &[&str], ask: &[&str], deny: &[&str]) -> RuleSet {
    let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    RuleSet::from_lists(&l(allow), &l(ask), &l(deny)).unwrap()
}

fn run(
    action: Action,
    autonomy: &Autonomy,
    rules: &RuleSet,
    frame: &Frame,
) -> berth_policy::Decision {
    let protected = vec!["main".to_string(), "master".to_string()];
    let limits = Limits::default();
    let ctx = Context {
        frame,
        cwd: "/work",
        autonomy,
        rules,
        protected_branches: &protected,
        limits: &limits,
    };
    decide(&action, &ctx)
}

fn terminal(c: &str) -> Action {
    Action::Terminal {
        command: c.to_string(),
    }
}

#[test]
fn every_limit_holds_with_the_wildcard_on() {
    let auto = Autonomy::auto();
    let host = Frame::host("/work");
    let container = Frame::container("/work");
    let allow_all = rules(&["Bash(*)"], &[], &[]);
    let cases: Vec<(&str, Action, RuleSet, Frame, Verdict, Stage)> = vec![
        (
            "deny rule",
            terminal("rm -rf build"),
            rules(&["rm"], &[], &["rm"]),
            container.clone(),
            Verdict::Deny,
            Stage::DenyRule,
        ),
        (
            "deny rule through a wrapper",
            terminal("nohup timeout 5 rm x"),
            rules(&["Bash(*)"], &[], &["rm"]),
            container.clone(),
            Verdict::Deny,
            Stage::DenyRule,
        ),
        (
            "deny template",
            terminal("rm -rf /"),
            allow_all.clone(),
            container.clone(),
            Verdict::Deny,
            Stage::DenyTemplate,
        ),
        (
            "deny template, home",
            terminal("rm -rf ~"),
            allow_all.clone(),
            host.clone(),
            Verdict::Deny,
            Stage::DenyTemplate,
        ),
        (
            "privileged: push",
            terminal("git push origin main"),
            allow_all.clone(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::Privileged,
        ),
        (
            "privileged: sudo",
            terminal("sudo apt-get install -y jq"),
            allow_all.clone(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::Privileged,
        ),
        (
            "privileged: PR",
            terminal("gh pr create --fill"),
            allow_all.clone(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::Privileged,
        ),
        (
            "privileged: publish",
            terminal("npm publish"),
            allow_all.clone(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::Privileged,
        ),
        (
            "privileged: deploy",
            terminal("kubectl apply -f k8s/"),
            allow_all.clone(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::Privileged,
        ),
        (
            "written ask",
            terminal("npm publish"),
            rules(&[], &["npm publish"], &[]),
            container.clone(),
            Verdict::RequireApproval,
            Stage::Privileged,
        ),
        (
            "written ask alone",
            terminal("make check"),
            rules(&["Bash(*)"], &["make check"], &[]),
            container.clone(),
            Verdict::RequireApproval,
            Stage::AskRule,
        ),
        (
            "opaque",
            terminal("eval \"$CMD\""),
            allow_all.clone(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::Opaque,
        ),
        (
            "never-auto: merge into main",
            Action::GitMerge {
                target: "main".into(),
            },
            RuleSet::default(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::NeverAuto,
        ),
        (
            "never-auto: instruction_patch",
            Action::InstructionPatch,
            RuleSet::default(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::NeverAuto,
        ),
        (
            "never-auto: parallelize",
            Action::Parallelize,
            RuleSet::default(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::NeverAuto,
        ),
        (
            "never-auto: raise_max_parallel",
            Action::RaiseMaxParallel,
            RuleSet::default(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::NeverAuto,
        ),
        (
            "never-auto: container_remove",
            Action::ContainerRemove,
            RuleSet::default(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::NeverAuto,
        ),
        (
            "never-auto: unknown type",
            Action::Other {
                kind: "format_disk".into(),
            },
            RuleSet::default(),
            container.clone(),
            Verdict::RequireApproval,
            Stage::NeverAuto,
        ),
    ];
    for (what, action, r, frame, verdict, stage) in cases {
        let d = run(action, &auto, &r, &frame);
        assert!(d.autonomy.is_auto_mode(), "{what}");
        assert_eq!(
            (d.verdict, d.stage),
            (verdict, stage),
            "{what}: {}",
            d.reason
        );
    }
    // Autonomy deny, with the wildcard: nothing is granted.
    let deny_all = Autonomy::new().with("*", Approval::Deny);
    let d = run(
        terminal("ls"),
        &deny_all,
        &rules(&["ls"], &[], &[]),
        &container,
    );
    assert_eq!((d.verdict, d.stage), (Verdict::Deny, Stage::AutonomyDeny));
}

#[test]
fn auto_mode_lifts_only_scope_and_partial_allow() {
    let host = Frame::host("/work");
    let r = rules(&["npm test", "ls"], &[], &[]);
    // Scope: outside the project on the host.
    let manual = run(terminal("ls /tmp"), &Autonomy::manual(), &r, &host);
    assert_eq!(
        (manual.verdict, manual.stage),
        (Verdict::RequireApproval, Stage::Scope)
    );
    assert!(manual.lifted.is_empty());
    let auto = run(terminal("ls /tmp"), &Autonomy::auto(), &r, &host);
    assert_eq!(
        (auto.verdict, auto.stage),
        (Verdict::AutoApprove, Stage::AllowRule)
    );
    assert_eq!(
        auto.lifted.iter().map(|f| f.stage).collect::<Vec<_>>(),
        vec![Stage::Scope]
    );
    // Partial allow: the unruled `cd` is a file without opinion in auto mode.
    let auto = run(
        terminal("cd /work && npm test"),
        &Autonomy::auto(),
        &r,
        &Frame::container("/work"),
    );
    assert_eq!(
        (auto.verdict, auto.stage),
        (Verdict::AutoApprove, Stage::Autonomy)
    );
    assert_eq!(
        auto.lifted.iter().map(|f| f.stage).collect::<Vec<_>>(),
        vec![Stage::PartialAllow]
    );
    // A specific rule is not auto mode: it lifts nothing.
    let specific = Autonomy::manual().with("terminal", Approval::AutoApprove);
    let d = run(terminal("ls /tmp"), &specific, &RuleSet::default(), &host);
    assert_eq!(
        (d.verdict, d.stage),
        (Verdict::RequireApproval, Stage::Scope)
    );
}
