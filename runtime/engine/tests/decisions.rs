#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The pipeline with the real policy: activation seeds auto-approve the
//! delivery chain, allow rules and `--always`, refusals, the host-side
//! symlink guard, and what auto mode lifts.

use crate::common;

use berth_engine::{
    ActionParams, ActionResult, ActionStatus, AgentImpl, AgentRun, CreatedStatus, EventFilter,
    Proposal, ProposeStatus, TaskStatus,
};
use berth_policy::{Action, Approval, Stage, Verdict};
use common::{Fixture, named, terminal_proposal, user};

async fn up(f: &Fixture, agent: &str) -> std::path::PathBuf {
    f.agent(agent, AgentImpl::Real).await;
    f.engine
        .up(&named(agent), &named("demo"), None, &user())
        .await
        .unwrap()
        .worktree
        .unwrap()
}

#[tokio::test]
async fn the_seeded_noop_agent_delivers_to_review_with_no_human_approval() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Noop).await;
    let task = f
        .engine
        .create_task("demo", "Add a file", &user())
        .await
        .unwrap();
    let report = f.engine.run_agent(&named("dev-1"), true).await.unwrap();
    assert_eq!(
        report.stopped,
        AgentRun::InReview {
            task: task.id.clone()
        }
    );
    assert_eq!(
        report.delivered,
        [(task.id.clone(), "in_review".to_string())]
    );
    assert_eq!(
        f.engine.task(&task.id).await.unwrap().status,
        TaskStatus::InReview
    );

    let created = f
        .engine
        .events(&EventFilter {
            kind: Some("proposed_action.created".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let summary: Vec<(String, String, String)> = created
        .iter()
        .map(|e| {
            (
                e.payload["action"]["type"].as_str().unwrap().to_string(),
                e.payload["status"].as_str().unwrap().to_string(),
                e.actor.to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = ["git_commit", "git_push", "pr_open"]
        .iter()
        .map(|k| {
            (
                k.to_string(),
                "auto_approved".to_string(),
                "agent:dev-1".to_string(),
            )
        })
        .collect();
    assert_eq!(summary, want);
    let m = f.engine.metrics(None).await.unwrap();
    assert_eq!((m.auto_approved, m.human_approvals, m.executed), (3, 0, 3));
    let author = f.forge_git(&[
        "log",
        "-1",
        "--format=%an",
        &format!("agent/dev-1/{}", &task.id[..8]),
    ]);
    assert_eq!(author.trim(), "dev-1[bot]");
    // A second run replays nothing and proposes nothing.
    assert_eq!(
        f.engine
            .run_agent(&named("dev-1"), true)
            .await
            .unwrap()
            .stopped,
        AgentRun::InReview { task: task.id }
    );
    assert_eq!(f.engine.metrics(None).await.unwrap().proposed, 3);
}

/// A long-lived engine (a server) keeps its project's files parsed while
/// they are unchanged: a rule written afterwards decides the very next
/// proposal.
#[tokio::test]
async fn a_long_lived_engine_decides_with_the_rules_as_they_are_now() {
    let f = Fixture::new().await;
    up(&f, "dev-1").await;
    let rules = f.state().project_rules("demo");
    let before = std::fs::read_to_string(&rules).unwrap();
    assert!(before.contains("\"ls\""), "{before}");
    // Settled (older than the engine's 2 s): the first load is kept, the
    // second reads it.
    tokio::time::sleep(std::time::Duration::from_millis(2300)).await;
    for _ in 0..2 {
        let p = f
            .engine
            .propose(terminal_proposal("dev-1", "ls"), None)
            .await
            .unwrap();
        assert_eq!(p.decision.stage, Stage::AllowRule, "{:?}", p.decision);
    }

    // `ls` moved from allow to deny, written at once.
    let after = before
        .replacen("\"ls\",", "", 1)
        .replacen("\"deny\": []", "\"deny\": [\"ls\"]", 1);
    assert_ne!(after, before);
    std::fs::write(&rules, &after).unwrap();
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "ls"), None)
        .await
        .unwrap();
    assert_eq!(p.decision.verdict, Verdict::Deny, "{:?}", p.decision);
    assert!(
        matches!(p.status, ProposeStatus::Refused { .. }),
        "{:?}",
        p.status
    );
}

#[tokio::test]
async fn allow_rules_auto_approve_and_always_adds_them() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    std::fs::write(wt.join("notes.txt"), "n\n").unwrap();
    // `ls` is allowed by the default permissions.json.
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "ls /work"), None)
        .await
        .unwrap();
    let ProposeStatus::Executed { outcome } = &p.status else {
        panic!("{:?}", p.status)
    };
    let Some(ActionResult::Terminal { stdout, .. }) = &outcome.result else {
        panic!()
    };
    assert!(stdout.contains("notes.txt"), "{stdout}");
    assert_eq!(p.decision.stage, Stage::AllowRule);

    let p = f
        .engine
        .propose(
            terminal_proposal("dev-1", "wc -l notes.txt && bash -c 'echo hi'"),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Pending { .. }),
        "{:?}",
        p.status
    );
    let approved = f.engine.approve(&p.id, &user(), true, None).await.unwrap();
    let rules: Vec<(Option<String>, Option<String>)> = approved
        .rules
        .iter()
        .map(|r| (r.pattern.clone(), r.skipped.clone()))
        .collect();
    assert_eq!(
        rules[0],
        (None, Some("already allowed".into())),
        "{rules:?}"
    );
    assert_eq!(
        rules[1].0, None,
        "never for a command run through a shell: {rules:?}"
    );
    // A rule that was added makes the same command auto-approved next time.
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "echo hi"), None)
        .await
        .unwrap();
    let approved = f.engine.approve(&p.id, &user(), true, None).await.unwrap();
    assert_eq!(approved.rules[0].pattern.as_deref(), Some("echo hi"));
    let rules_file = std::fs::read_to_string(f.state().project_rules("demo")).unwrap();
    assert!(rules_file.contains("\"echo hi\""), "{rules_file}");
    let again = f
        .engine
        .propose(terminal_proposal("dev-1", "echo hi"), None)
        .await
        .unwrap();
    assert!(
        matches!(again.status, ProposeStatus::Executed { .. }),
        "{:?}",
        again.status
    );
    assert_eq!(again.decision.stage, Stage::AllowRule);
}

/// A proposal decides with its agent's autonomy as stored now, read with
/// the agent: each action type's own mode, none when it has none, and a
/// stored mode berth cannot read as the strictest (refused, not run).
#[tokio::test]
async fn a_proposal_reads_its_agents_autonomy_and_an_unreadable_mode_refuses() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    let status = |command: &'static str| {
        let engine = &f.engine;
        async move {
            let p = engine
                .propose(terminal_proposal("dev-1", command), None)
                .await;
            p.unwrap().status
        }
    };
    // No autonomy for terminal: it waits for a person.
    let waits = status("touch /work/a").await;
    assert!(matches!(waits, ProposeStatus::Pending { .. }), "{waits:?}");
    for (kind, mode) in [
        ("file_write", Approval::Deny),
        ("terminal", Approval::AutoApprove),
    ] {
        let set = f.engine.set_autonomy("dev-1", kind, mode, &user()).await;
        set.unwrap();
    }
    let runs = status("touch /work/b").await;
    assert!(matches!(runs, ProposeStatus::Executed { .. }), "{runs:?}");
    assert!(wt.join("b").exists());
    sqlx::query(
        "UPDATE autonomy SET mode = 'whenever' WHERE agent = 'dev-1' AND action_type = 'terminal'",
    )
    .execute(f.engine.store().pool())
    .await
    .unwrap();
    let refused = status("touch /work/c").await;
    assert!(
        matches!(refused, ProposeStatus::Refused { .. }),
        "{refused:?}"
    );
    assert!(!wt.join("c").exists());
}

#[tokio::test]
async fn refused_actions_are_logged_and_never_run() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::Deny, &user())
        .await
        .unwrap();
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "touch /work/x"), None)
        .await
        .unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Refused { .. }),
        "{:?}",
        p.status
    );
    assert_eq!(p.decision.verdict, Verdict::Deny);
    let rec = f.engine.action(&p.id).await.unwrap();
    assert_eq!(
        (rec.created_status, rec.status),
        (CreatedStatus::Denied, ActionStatus::Refused)
    );
    assert!(!wt.join("x").exists());
    // A deny template holds whatever autonomy says.
    f.engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap();
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "rm -rf /"), None)
        .await
        .unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Refused { .. }),
        "{:?}",
        p.status
    );
    assert_eq!(f.engine.metrics(None).await.unwrap().refused_by_policy, 2);
}

#[tokio::test]
async fn a_symlink_out_of_the_worktree_holds_an_auto_approved_command() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();
    let outside = f.dir.path().join("secret");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("key"), "k\n").unwrap();
    std::os::unix::fs::symlink(&outside, wt.join("link")).unwrap();

    let plain = f
        .engine
        .propose(terminal_proposal("dev-1", "cat /work/README.md"), None)
        .await
        .unwrap();
    assert!(
        matches!(plain.status, ProposeStatus::Executed { .. }),
        "{:?}",
        plain.status
    );

    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "cat /work/link/key"), None)
        .await
        .unwrap();
    assert_eq!(
        p.decision.verdict,
        Verdict::AutoApprove,
        "the policy alone would run it"
    );
    let ProposeStatus::Pending { reason } = &p.status else {
        panic!("{:?}", p.status)
    };
    assert!(reason.contains("through the symlink"), "{reason}");
    let created = f
        .engine
        .events(&EventFilter {
            action: Some(p.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        created[0].payload["status"], "pending",
        "the log records the final status"
    );
    assert!(
        created[0].payload["held"]
            .as_str()
            .unwrap()
            .contains("symlink")
    );
    // A person may still approve it; it runs, confined: the link's target
    // is not in the exec's mount tree, so the secret stays unread.
    let a = f.engine.approve(&p.id, &user(), false, None).await.unwrap();
    let Some(ActionResult::Terminal {
        stdout, exit_code, ..
    }) = a.outcome.result
    else {
        panic!()
    };
    assert_eq!((stdout.as_str(), exit_code), ("", 1));
}

#[tokio::test]
async fn auto_mode_lifts_the_path_scope_and_nothing_else() {
    let f = Fixture::new().await;
    up(&f, "dev-1").await;
    let outside = f.dir.path().join("outside.txt");
    std::fs::write(&outside, "o\n").unwrap();
    let cmd = format!("cat {}", outside.display());
    let before = f
        .engine
        .propose(terminal_proposal("dev-1", &cmd), None)
        .await
        .unwrap();
    assert!(matches!(before.status, ProposeStatus::Pending { .. }));
    assert_eq!(before.decision.stage, Stage::Scope);

    f.engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap();
    let after = f
        .engine
        .propose(terminal_proposal("dev-1", &cmd), None)
        .await
        .unwrap();
    assert!(
        matches!(after.status, ProposeStatus::Executed { .. }),
        "{:?}",
        after.status
    );
    assert!(!after.decision.lifted.is_empty());
    let push = f
        .engine
        .propose(terminal_proposal("dev-1", "git push origin HEAD"), None)
        .await
        .unwrap();
    assert!(
        matches!(push.status, ProposeStatus::Pending { .. }),
        "{:?}",
        push.status
    );
    assert_eq!(push.decision.stage, Stage::Privileged);
}

#[tokio::test]
async fn file_read_is_seeded_and_returns_the_content() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    std::fs::write(wt.join("a.txt"), "alpha\n").unwrap();
    let p = f
        .engine
        .propose(
            Proposal::by_agent(
                &named("dev-1"),
                Action::FileRead {
                    path: "a.txt".into(),
                },
            )
            .params(ActionParams::default()),
            None,
        )
        .await
        .unwrap();
    let ProposeStatus::Executed { outcome } = p.status else {
        panic!("{:?}", p.status)
    };
    let Some(ActionResult::FileRead { path, content, .. }) = outcome.result else {
        panic!()
    };
    assert_eq!(
        (path.as_str(), content.as_str()),
        ("/work/a.txt", "alpha\n")
    );
}

#[tokio::test]
async fn file_read_of_a_directory_lists_it() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    std::fs::create_dir_all(wt.join("d/sub")).unwrap();
    std::fs::write(wt.join("d/b.txt"), "b").unwrap();
    std::os::unix::fs::symlink("b.txt", wt.join("d/a-link")).unwrap();
    let p = f
        .engine
        .propose(
            Proposal::by_agent(&named("dev-1"), Action::FileRead { path: "d".into() }),
            None,
        )
        .await
        .unwrap();
    let ProposeStatus::Executed { outcome } = p.status else {
        panic!("{:?}", p.status)
    };
    let Some(ActionResult::FileRead { path, content, .. }) = outcome.result else {
        panic!()
    };
    assert_eq!(
        (path.as_str(), content.as_str()),
        ("/work/d", "a-link@\nb.txt\nsub/\n")
    );
}
