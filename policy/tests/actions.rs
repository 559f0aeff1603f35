//! File actions, structured git actions, path rules from a Claude Code
//! settings file, and `explain`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::{
    Action, Approval, Autonomy, Context, Frame, Limits, RuleMatch, RuleSet, Stage, Verdict, decide,
};

fn run(
    action: &Action,
    autonomy: &Autonomy,
    rules: &RuleSet,
    frame: &Frame,
) -> berth_policy::Decision {
    let protected = vec!["main".to_string(), "release/*".to_string()];
    let limits = Limits::default();
    let ctx = Context {
        frame,
        cwd: "/work",
        autonomy,
        rules,
        protected_branches: &protected,
        limits: &limits,
    };
    decide(action, &ctx)
}

const SETTINGS: &str = r#"{
  "permissions": {
    "allow": ["Bash(npm run test:*)", "Edit(src/**)", "Read(/docs/**)"],
    "ask": ["Edit(package.json)"],
    "deny": ["Read(./.env)", "Edit(//etc/**)", "Bash(curl:*)"]
  },
  "model": "whatever"
}"#;

#[test]
fn file_actions_with_path_rules() {
    let rules = RuleSet::from_json(SETTINGS, ".claude/settings.json").unwrap();
    let manual = Autonomy::manual().with("file_read", Approval::AutoApprove);
    let host = Frame::host("/work");
    let fr = |p: &str| Action::FileRead { path: p.into() };
    let fw = |p: &str| Action::FileWrite { path: p.into() };
    let cases = [
        (fr("src/main.rs"), Verdict::AutoApprove, Stage::Autonomy),
        (fr(".env"), Verdict::Deny, Stage::DenyRule),
        (fr("/work/.env"), Verdict::Deny, Stage::DenyRule),
        (fr("/etc/passwd"), Verdict::RequireApproval, Stage::Scope),
        (fw("src/lib.rs"), Verdict::AutoApprove, Stage::AllowRule),
        (fw("src/a/b/c.rs"), Verdict::AutoApprove, Stage::AllowRule),
        (fw("package.json"), Verdict::RequireApproval, Stage::AskRule),
        (fw("README.md"), Verdict::RequireApproval, Stage::Autonomy),
        (fw("/etc/hosts"), Verdict::Deny, Stage::DenyRule),
        (fw("../outside.txt"), Verdict::RequireApproval, Stage::Scope),
    ];
    for (action, verdict, stage) in cases {
        let d = run(&action, &manual, &rules, &host);
        assert_eq!(
            (d.verdict, d.stage),
            (verdict, stage),
            "{action:?}: {}",
            d.reason
        );
    }
    // A Read deny rule also holds for a command that names the file.
    let d = run(
        &Action::Terminal {
            command: "npm run test -- --env-file .env".into(),
        },
        &manual,
        &rules,
        &host,
    );
    assert_eq!(
        (d.verdict, d.stage),
        (Verdict::Deny, Stage::DenyRule),
        "{}",
        d.reason
    );
    let d = run(
        &Action::Terminal {
            command: "npm run test -- --watch=false".into(),
        },
        &manual,
        &rules,
        &host,
    );
    assert_eq!(
        (d.verdict, d.stage),
        (Verdict::AutoApprove, Stage::AllowRule),
        "{}",
        d.reason
    );
    assert_eq!(rules.warnings.len(), 0);
}

#[test]
fn structured_git_actions() {
    let seeded = Autonomy::manual()
        .with("git_commit", Approval::AutoApprove)
        .with("git_push", Approval::AutoApprove)
        .with("pr_open", Approval::AutoApprove)
        .with("pr_comment", Approval::AutoApprove)
        .with("pr_resolve_thread", Approval::AutoApprove);
    let c = Frame::container("/work");
    let none = RuleSet::default();
    let cases = [
        (
            Action::GitCommit,
            &seeded,
            Verdict::AutoApprove,
            Stage::Autonomy,
        ),
        (
            Action::GitPush {
                branch: "agent/dev-1/t1".into(),
            },
            &seeded,
            Verdict::AutoApprove,
            Stage::Autonomy,
        ),
        (
            Action::GitPush {
                branch: "main".into(),
            },
            &seeded,
            Verdict::RequireApproval,
            Stage::NeverAuto,
        ),
        (
            Action::PrOpen,
            &seeded,
            Verdict::AutoApprove,
            Stage::Autonomy,
        ),
        (
            Action::PrComment,
            &seeded,
            Verdict::AutoApprove,
            Stage::Autonomy,
        ),
        (
            Action::PrResolveThread,
            &seeded,
            Verdict::AutoApprove,
            Stage::Autonomy,
        ),
        // Not seeded: a person decides, as for any action type.
        (
            Action::PrComment,
            &Autonomy::manual(),
            Verdict::RequireApproval,
            Stage::Autonomy,
        ),
        (
            Action::PrResolveThread,
            &Autonomy::manual().with("pr_resolve_thread", Approval::Deny),
            Verdict::Deny,
            Stage::AutonomyDeny,
        ),
        (
            Action::GitMerge {
                target: "feature/x".into(),
            },
            &seeded,
            Verdict::RequireApproval,
            Stage::Autonomy,
        ),
        (
            Action::GitMerge {
                target: "release/2.0".into(),
            },
            &seeded,
            Verdict::RequireApproval,
            Stage::NeverAuto,
        ),
        (
            Action::GitCommit,
            &Autonomy::new(),
            Verdict::RequireApproval,
            Stage::Autonomy,
        ),
    ];
    for (action, autonomy, verdict, stage) in cases {
        let d = run(&action, autonomy, &none, &c);
        assert_eq!(
            (d.verdict, d.stage),
            (verdict, stage),
            "{action:?}: {}",
            d.reason
        );
    }
    // A deny rule for the equivalent command holds for the structured push.
    let deny_push = RuleSet::from_lists(&[], &[], &["git push".to_string()]).unwrap();
    let d = run(
        &Action::GitPush {
            branch: "agent/dev-1/t1".into(),
        },
        &seeded,
        &deny_push,
        &c,
    );
    assert_eq!((d.verdict, d.stage), (Verdict::Deny, Stage::DenyRule));
    // ...as an ask rule for `gh pr comment` holds for a seeded pr_comment.
    let ask_comment = RuleSet::from_lists(&[], &["gh pr comment".to_string()], &[]).unwrap();
    let d = run(&Action::PrComment, &seeded, &ask_comment, &c);
    assert_eq!(
        (d.verdict, d.stage),
        (Verdict::RequireApproval, Stage::AskRule),
        "{}",
        d.reason
    );
    // The type names round-trip through the case format and serde.
    for (kind, action) in [
        ("pr_comment", Action::PrComment),
        ("pr_resolve_thread", Action::PrResolveThread),
    ] {
        assert_eq!(Action::from_parts(kind, None, None, None), action);
        assert_eq!(action.kind(), kind);
        assert!(Action::KNOWN_KINDS.contains(&kind));
        let json = serde_json::to_string(&action).unwrap();
        assert_eq!(json, format!("{{\"type\":\"{kind}\"}}"));
        assert_eq!(serde_json::from_str::<Action>(&json).unwrap(), action);
    }
    // ...and the privileged limit does not: the runtime restricts the push itself.
    let d = run(
        &Action::GitPush {
            branch: "agent/dev-1/t1".into(),
        },
        &Autonomy::auto(),
        &none,
        &c,
    );
    assert_eq!(d.verdict, Verdict::AutoApprove);
}

#[test]
fn explain_shows_segments_rules_paths_and_auto_mode() {
    let rules = RuleSet::from_json(
        "{\n  \"allow\": [\n    \"npm test\"\n  ]\n}",
        "permissions.json",
    )
    .unwrap();
    let d = run(
        &Action::Terminal {
            command: "cd /tmp && npm test && git push".into(),
        },
        &Autonomy::manual(),
        &rules,
        &Frame::host("/work"),
    );
    assert_eq!(
        (d.verdict, d.stage),
        (Verdict::RequireApproval, Stage::Privileged)
    );
    assert_eq!(d.segments.len(), 3);
    assert!(
        matches!(&d.segments[1].matched, RuleMatch::Allow { rule } if rule.source.as_ref().map(|s| s.line) == Some(3))
    );
    let text = berth_policy::explain::render(&d);
    for needle in [
        "verdict: require_approval (stage: privileged)",
        "1. cd /tmp",
        "allow \"npm test\" (permissions.json:3:5)",
        "/tmp (OUTSIDE the scope)",
        "lifts: [scope]",
        "lifts: [partial_allow]",
        "still asks: [privileged]",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

/// Point 13: a structured push or merge names its branch as git resolves
/// it: `+x`, `SRC:x`, `refs/heads/x` and `heads/x` are `x`.
#[test]
fn structured_branches_by_meaning() {
    let seeded = Autonomy::auto();
    let c = Frame::container("/work");
    let none = RuleSet::default();
    let push = |b: &str| Action::GitPush { branch: b.into() };
    let merge = |b: &str| Action::GitMerge { target: b.into() };
    #[rustfmt::skip]
    let cases = [
        (push("HEAD:main"), Verdict::RequireApproval),
        (push("+main"), Verdict::RequireApproval),
        (push("heads/main"), Verdict::RequireApproval),
        (push("refs/heads/main"), Verdict::RequireApproval),
        (push("+HEAD:refs/heads/main"), Verdict::RequireApproval),
        (push(":main"), Verdict::RequireApproval),
        (push("agent/x:release/2.0"), Verdict::RequireApproval),
        (push("heads/release/2.0"), Verdict::RequireApproval),
        (merge("heads/main"), Verdict::RequireApproval),
        (merge("refs/heads/release/3"), Verdict::RequireApproval),
        (push("agent/dev-1/t1"), Verdict::AutoApprove),
        (push("HEAD:agent/dev-1/t1"), Verdict::AutoApprove),
        (push("main-fix"), Verdict::AutoApprove),
        (push("feature/main"), Verdict::AutoApprove),
        (merge("feature/x"), Verdict::AutoApprove),
        // A name git would not read as one branch proves nothing; case
        // does not make another branch on a case-insensitive forge.
        (push("refs/heads//main"), Verdict::RequireApproval),
        (push("refs/heads/x/../main"), Verdict::RequireApproval),
        (push("main~0"), Verdict::RequireApproval),
        (push("main@{0}"), Verdict::RequireApproval),
        (push("main "), Verdict::RequireApproval),
        (push("main.lock"), Verdict::RequireApproval),
        (push("HEAD"), Verdict::RequireApproval),
        (push("agent/x:"), Verdict::RequireApproval),
        (push("MAIN"), Verdict::RequireApproval),
        (merge("Main"), Verdict::RequireApproval),
        (merge("x/./main"), Verdict::RequireApproval),
    ];
    for (action, verdict) in cases {
        let d = run(&action, &seeded, &none, &c);
        assert_eq!(d.verdict, verdict, "{action:?}: {}", d.reason);
        if verdict == Verdict::RequireApproval {
            assert_eq!(d.stage, Stage::NeverAuto, "{action:?}: {}", d.reason);
        }
    }
}

/// Point 13: extra roots that are empty, relative or not normalised add
/// nothing to the scope, and a warning names each.
#[test]
fn unusable_extra_roots_add_nothing() {
    let manual = Autonomy::manual().with("file_read", Approval::AutoApprove);
    let none = RuleSet::default();
    for (roots, path, verdict) in [
        (vec![""], "/etc/passwd", Verdict::RequireApproval),
        (vec!["."], "/etc/passwd", Verdict::RequireApproval),
        (vec!["a/../"], "/etc/passwd", Verdict::RequireApproval),
        (
            vec!["/opt/cache/../"],
            "/etc/passwd",
            Verdict::RequireApproval,
        ),
        (
            vec!["/opt/cache/"],
            "/opt/cache/x",
            Verdict::RequireApproval,
        ),
        (vec!["/opt/cache"], "/opt/cache/x", Verdict::AutoApprove),
        (vec!["/opt/cache"], "/etc/passwd", Verdict::RequireApproval),
    ] {
        let frame = Frame::Host {
            project_root: "/work".into(),
            extra_roots: roots.iter().map(|r| r.to_string()).collect(),
            home: "/home/agent".into(),
        };
        let d = run(
            &Action::FileRead { path: path.into() },
            &manual,
            &none,
            &frame,
        );
        assert_eq!(d.verdict, verdict, "{roots:?} {path}: {}", d.reason);
        let warned = berth_policy::scope::ignored_extra_roots(&frame);
        let usable = roots
            .iter()
            .all(|r| berth_policy::scope::usable_extra_root(r));
        assert_eq!(warned.is_empty(), usable, "{roots:?}: {warned:?}");
    }
}
