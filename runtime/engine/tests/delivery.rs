#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The delivery chain and the gate (ADR 0048), driven by the noop agent
//! through the shared agent code, against real git: one pending step at a
//! time, the gate only after the PR, refusals return the task, merging and
//! closing resolve the gate and recycle the worktree.

use crate::common;

use berth_engine::{
    ActionStatus, AgentImpl, AgentRun, AgentStatus, EventFilter, PrStatus, ProposeStatus,
    TaskStatus,
};
use berth_policy::Approval;
use common::{Fixture, named, user};

/// dev-1 as a noop agent whose activation seeds ask a person.
async fn manual_noop(f: &Fixture, agent: &str) {
    f.agent(agent, AgentImpl::Noop).await;
    for kind in ["git_commit", "git_push", "pr_open"] {
        f.engine
            .set_autonomy(agent, kind, Approval::RequireApproval, &user())
            .await
            .unwrap();
    }
}

async fn step(f: &Fixture, agent: &str) -> AgentRun {
    f.engine
        .run_agent(&named(agent), true)
        .await
        .unwrap()
        .stopped
}

async fn created_kinds(f: &Fixture, agent: &str) -> Vec<(String, String)> {
    f.engine
        .events(&EventFilter {
            agent: Some(agent.into()),
            kind: Some("proposed_action.created".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            (
                e.payload["action"]["type"].as_str().unwrap().to_string(),
                e.payload["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn one_pending_step_at_a_time_and_the_gate_only_after_the_pr() {
    let f = Fixture::new().await;
    manual_noop(&f, "dev-2").await;
    let task = f
        .engine
        .create_task("demo", "Add a file", &user())
        .await
        .unwrap();

    for (i, step_name) in ["git_commit", "git_push", "pr_open"].iter().enumerate() {
        let AgentRun::AwaitingApproval { action, step: s } = step(&f, "dev-2").await else {
            panic!("step {i}")
        };
        assert_eq!(&s, step_name);
        // Running again while it waits proposes nothing more.
        assert_eq!(
            step(&f, "dev-2").await,
            AgentRun::AwaitingApproval {
                action: action.clone(),
                step: s
            }
        );
        assert_eq!(created_kinds(&f, "dev-2").await.len(), i + 1);
        let t = f.engine.task(&task.id).await.unwrap();
        assert_eq!(
            t.status,
            TaskStatus::AwaitingApproval,
            "the gate stays shut before the PR"
        );
        assert_eq!(
            f.engine.agent("dev-2").await.unwrap().status,
            AgentStatus::AwaitingApproval
        );
        assert!(f.engine.prs(None).await.unwrap().is_empty());
        let approved = f
            .engine
            .approve(&action, &user(), false, None)
            .await
            .unwrap();
        assert!(approved.outcome.succeeded, "{approved:?}");
    }
    // Approving the PR executed it: pr_settled opened the gate at once.
    let t = f.engine.task(&task.id).await.unwrap();
    assert_eq!(t.status, TaskStatus::InReview);
    assert_eq!(
        step(&f, "dev-2").await,
        AgentRun::InReview {
            task: task.id.clone()
        }
    );
    assert_eq!(
        created_kinds(&f, "dev-2").await,
        [
            ("git_commit", "pending"),
            ("git_push", "pending"),
            ("pr_open", "pending")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );

    let types = f.event_types().await;
    let pos = |t: &str| {
        types
            .iter()
            .position(|x| x == t)
            .unwrap_or_else(|| panic!("{t} in {types:?}"))
    };
    assert!(pos("task.claimed") < pos("worktree.created"));
    assert!(pos("action.executed") < pos("task.pr_settled"));
    assert!(pos("task.pr_settled") < pos("task.in_review"));
    let settled = f
        .engine
        .events(&EventFilter {
            kind: Some("task.pr_settled".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0].payload["opened"], true);

    // The commit in the forge: the agent's identity, the person, the action.
    let branch = format!("agent/dev-2/{}", &task.id[..8]);
    let log = f.forge_git(&["log", "-1", "--format=%an <%ae>%n%B", &branch]);
    let commit_action = f
        .engine
        .action_by_key(&format!("task:{}:git_commit", task.id))
        .await
        .unwrap()
        .unwrap();
    assert!(
        log.starts_with("dev-2[bot] <dev-2@berth.local>\nAdd a file\n"),
        "{log}"
    );
    assert!(log.contains("Co-authored-by: "), "{log}");
    assert!(
        log.contains(&format!("Berth-Action: {}", commit_action.id)),
        "{log}"
    );
    let files = f.forge_git(&["show", "--name-only", "--format=", &branch]);
    assert_eq!(files.trim(), format!("noop/{}.md", &task.id[..8]));
    let prs = f.engine.prs(Some("demo")).await.unwrap();
    assert_eq!(prs.len(), 1);
    assert_eq!(
        (prs[0].branch.as_str(), prs[0].base.as_str(), prs[0].status),
        (branch.as_str(), "main", PrStatus::Open)
    );
    assert_eq!(prs[0].head, f.forge_git(&["rev-parse", &branch]).trim());
}

#[tokio::test]
async fn a_denied_step_returns_the_task_and_recycles_the_worktree() {
    let f = Fixture::new().await;
    manual_noop(&f, "dev-1").await;
    let task = f.engine.create_task("demo", "t", &user()).await.unwrap();
    let AgentRun::AwaitingApproval { action, .. } = step(&f, "dev-1").await else {
        panic!()
    };
    let wt = f.engine.agent("dev-1").await.unwrap().worktree.unwrap();
    assert!(wt.is_dir());
    f.engine
        .deny(&action, &user(), Some("wrong approach"))
        .await
        .unwrap();

    let t = f.engine.task(&task.id).await.unwrap();
    assert_eq!(t.status, TaskStatus::Returned);
    assert_eq!(
        t.diagnosis.as_deref(),
        Some("git_commit denied by ada: wrong approach")
    );
    let a = f.engine.agent("dev-1").await.unwrap();
    assert_eq!(
        (a.status, a.task.as_deref(), a.worktree.as_deref()),
        (AgentStatus::Idle, None, None)
    );
    assert!(!wt.exists(), "recycled once the task left the agent");
    let types = f.event_types().await;
    let tail: Vec<&str> = types
        .iter()
        .rev()
        .take(5)
        .rev()
        .map(String::as_str)
        .collect();
    // The berth goes down (its container first) before its worktree goes.
    assert_eq!(
        tail,
        [
            "proposed_action.denied",
            "task.pr_settled",
            "task.returned",
            "berth.down",
            "worktree.recycled"
        ]
    );
    // Nothing more to do.
    assert_eq!(step(&f, "dev-1").await, AgentRun::Idle);
}

#[tokio::test]
async fn merging_resolves_the_gate_closing_returns_the_task() {
    let f = Fixture::new().await;
    manual_noop(&f, "dev-1").await;
    let t1 = f
        .engine
        .create_task("demo", "first", &user())
        .await
        .unwrap();
    let t2 = f
        .engine
        .create_task("demo", "second", &user())
        .await
        .unwrap();
    for _ in 0..3 {
        let AgentRun::AwaitingApproval { action, .. } = step(&f, "dev-1").await else {
            panic!()
        };
        f.engine
            .approve(&action, &user(), false, None)
            .await
            .unwrap();
    }
    assert_eq!(
        step(&f, "dev-1").await,
        AgentRun::InReview {
            task: t1.id.clone()
        }
    );
    // While its PR waits, the agent keeps its worktree and takes nothing else.
    assert_eq!(
        f.engine.task(&t2.id).await.unwrap().status,
        TaskStatus::Todo
    );
    let err = f
        .engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("its worktree must outlive it")
            && err.to_string().contains("in review")
            && err.to_string().contains("--keep-worktree"),
        "{err}"
    );
    // Taken down keeping them, it says what it keeps and why.
    let before = f.engine.agent("dev-1").await.unwrap();
    let kept = f.engine.down(&named("dev-1"), true, &user()).await.unwrap();
    let note = kept.note.unwrap_or_default();
    let worktree = before.worktree.unwrap();
    assert!(
        note.contains("in review")
            && note.contains(&worktree.display().to_string())
            && note.contains(&before.branch.unwrap())
            && note.contains("merged or closed"),
        "{note}"
    );
    assert!(worktree.is_dir());

    // Merging into the protected base is never auto-approved.
    let merge = f.engine.merge_pr("1", &user()).await.unwrap();
    assert!(
        matches!(merge.status, ProposeStatus::Pending { .. }),
        "{:?}",
        merge.status
    );
    assert_eq!(
        merge.decision.verdict,
        berth_policy::Verdict::RequireApproval
    );
    let done = f
        .engine
        .approve(&merge.id, &user(), false, None)
        .await
        .unwrap();
    assert!(done.outcome.succeeded, "{done:?}");
    assert_eq!(
        f.engine.task(&t1.id).await.unwrap().status,
        TaskStatus::Done
    );
    assert_eq!(f.engine.pr("1").await.unwrap().status, PrStatus::Merged);
    let main_files = f.forge_git(&["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        main_files.contains(&format!("noop/{}.md", &t1.id[..8])),
        "{main_files}"
    );
    assert!(f.engine.agent("dev-1").await.unwrap().worktree.is_none());

    // The agent is free: it takes the second task; closing its PR returns it.
    for _ in 0..3 {
        let AgentRun::AwaitingApproval { action, .. } = step(&f, "dev-1").await else {
            panic!()
        };
        f.engine
            .approve(&action, &user(), false, None)
            .await
            .unwrap();
    }
    assert_eq!(
        step(&f, "dev-1").await,
        AgentRun::InReview {
            task: t2.id.clone()
        }
    );
    let closed = f
        .engine
        .close_pr("2", &user(), Some("duplicate"))
        .await
        .unwrap();
    assert_eq!(closed.status, PrStatus::Closed);
    let t = f.engine.task(&t2.id).await.unwrap();
    assert_eq!(
        (t.status, t.diagnosis.as_deref()),
        (TaskStatus::Returned, Some("PR #2 closed by ada: duplicate"))
    );
    let a = f.engine.agent("dev-1").await.unwrap();
    assert_eq!((a.status, a.task), (AgentStatus::Idle, None));
    let recycled = f
        .engine
        .events(&EventFilter {
            kind: Some("worktree.recycled".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(recycled.len(), 2);
    assert!(
        f.engine.close_pr("2", &user(), None).await.is_err(),
        "closed once"
    );
    // Every executed action of the chain is on record, none duplicated.
    let executed = f
        .engine
        .actions(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|a| a.status == ActionStatus::Executed)
        .count();
    assert_eq!(executed, 7, "3 + merge + 3");
}

#[tokio::test]
async fn a_real_agent_is_not_driven_by_agent_run() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    let err = f.engine.run_agent(&named("dev-1"), true).await.unwrap_err();
    assert!(err.to_string().contains("is a real agent"), "{err}");
}

#[tokio::test]
async fn activation_seeds_and_the_auto_switch() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Noop).await;
    let a = f.engine.autonomy("dev-1").await.unwrap();
    let written: Vec<(&str, Approval)> = a.iter().collect();
    assert_eq!(
        written,
        [
            ("file_read", Approval::AutoApprove),
            ("git_commit", Approval::AutoApprove),
            ("git_push", Approval::AutoApprove),
            ("pr_comment", Approval::AutoApprove),
            ("pr_open", Approval::AutoApprove),
            ("pr_resolve_thread", Approval::AutoApprove),
        ]
    );
    assert_eq!(
        a.resolve("git_merge").mode,
        Approval::RequireApproval,
        "never seeded"
    );
    // Re-activation keeps what a person wrote since.
    f.engine
        .set_autonomy("dev-1", "git_push", Approval::RequireApproval, &user())
        .await
        .unwrap();
    f.agent("dev-1", AgentImpl::Noop).await;
    assert_eq!(
        f.engine.autonomy("dev-1").await.unwrap().get("git_push"),
        Some(Approval::RequireApproval)
    );

    let off = f.engine.autonomy_report("dev-1").await.unwrap();
    assert!(!off.auto_mode && off.lifts.is_empty());
    f.engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap();
    let on = f.engine.autonomy_report("dev-1").await.unwrap();
    assert!(on.auto_mode);
    assert!(
        on.lifts.iter().any(|l| l.contains("path scope")),
        "{:?}",
        on.lifts
    );
    assert!(
        on.still_asks.iter().any(|s| s.contains("git push")),
        "{:?}",
        on.still_asks
    );
    assert!(
        on.still_asks
            .iter()
            .any(|s| s.starts_with("git_push: a specific")),
        "{:?}",
        on.still_asks
    );
    f.engine
        .set_auto_mode("dev-1", false, &user())
        .await
        .unwrap();
    assert_eq!(
        f.engine.autonomy("dev-1").await.unwrap().get("*"),
        Some(Approval::RequireApproval)
    );
    let err = f
        .engine
        .set_autonomy("dev-1", "teleport", Approval::AutoApprove, &user())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("use `*` or one of: terminal"),
        "{err}"
    );
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// A crash interrupts berth's own effects (the commit before it committed,
/// the push after it reached the forge): the next loop resumes each once —
/// it finds the effect when it happened — and the chain moves on with one
/// commit past main and one push, and nothing for a person to untangle.
#[tokio::test]
async fn interrupted_delivery_steps_are_resumed_once_by_the_next_loop() {
    let f = Fixture::new().await;
    manual_noop(&f, "dev-1").await;
    let task = f.engine.create_task("demo", "t", &user()).await.unwrap();
    let AgentRun::AwaitingApproval { action: commit, .. } = step(&f, "dev-1").await else {
        panic!()
    };
    // A crash while the commit was executing, before it committed.
    sqlx::query("UPDATE proposed_actions SET status = 'executing', executor = $1 WHERE id = $2")
        .bind(format!("{}:4194305:1", hostname()))
        .bind(&commit)
        .execute(f.engine.store().pool())
        .await
        .unwrap();
    let restarted = f.second().await;
    assert_eq!(
        restarted.action(&commit).await.unwrap().status,
        ActionStatus::Interrupted
    );
    // The next loop resumes the commit and goes on to the push.
    let AgentRun::AwaitingApproval {
        action: push,
        step: s,
    } = step(&f, "dev-1").await
    else {
        panic!()
    };
    assert_eq!(s, "git_push");
    assert_eq!(
        restarted.action(&commit).await.unwrap().status,
        ActionStatus::Executed
    );
    assert_ne!(
        restarted.task(&task.id).await.unwrap().status,
        TaskStatus::Blocked
    );
    let resumed = restarted
        .events(&berth_engine::EventFilter {
            action: Some(commit.clone()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.payload.get("resumed_after_crash").is_some())
        .count();
    assert_eq!(resumed, 1, "the resumption is in the log");
    let branch = format!("agent/dev-1/{}", &task.id[..8]);
    f.engine.approve(&push, &user(), false, None).await.unwrap();
    // A crash after the push reached the forge, before its outcome was recorded.
    sqlx::query("UPDATE proposed_actions SET status = 'interrupted' WHERE id = $1")
        .bind(&push)
        .execute(f.engine.store().pool())
        .await
        .unwrap();
    // The push is resumed (a no-op: the forge has the commit), not repeated.
    let AgentRun::AwaitingApproval { step: s, .. } = step(&f, "dev-1").await else {
        panic!()
    };
    assert_eq!(s, "pr_open");
    let commits = f.forge_git(&["rev-list", "--count", &format!("main..{branch}")]);
    assert_eq!(commits.trim(), "1", "one commit, never duplicated");
    let pushes = f
        .engine
        .actions(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|a| a.action.kind() == "git_push")
        .count();
    assert_eq!(pushes, 1);
    assert!(
        f.engine.retry(&push, &user(), None).await.is_err(),
        "only interrupted actions are retried"
    );
}

#[tokio::test]
async fn a_failed_delivery_step_trips_the_breaker_and_a_denial_does_not() {
    let f = Fixture::new().await;
    let path = f.state().project_config("demo");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("circuit_breaker = 3", "circuit_breaker = 1");
    std::fs::write(&path, text).unwrap();
    manual_noop(&f, "dev-1").await;

    // A person's denial returns the task and is no failure of the agent's.
    f.engine
        .create_task("demo", "denied", &user())
        .await
        .unwrap();
    let AgentRun::AwaitingApproval { action, .. } = step(&f, "dev-1").await else {
        panic!()
    };
    f.engine.deny(&action, &user(), Some("no")).await.unwrap();
    assert_eq!(f.engine.consecutive_failures("dev-1").await.unwrap(), 0);
    assert_eq!(
        f.engine.agent("dev-1").await.unwrap().status,
        AgentStatus::Idle
    );

    // A push that fails is one.
    f.engine
        .create_task("demo", "fails", &user())
        .await
        .unwrap();
    let AgentRun::AwaitingApproval { action, .. } = step(&f, "dev-1").await else {
        panic!()
    };
    f.engine
        .approve(&action, &user(), false, None)
        .await
        .unwrap();
    let AgentRun::AwaitingApproval { action, step: s } = step(&f, "dev-1").await else {
        panic!()
    };
    assert_eq!(s, "git_push");
    let refs = f.forge().join("refs");
    let aside = f.forge().join("refs.aside");
    std::fs::rename(&refs, &aside).unwrap();
    std::fs::write(&refs, "not a directory").unwrap();
    let r = f.engine.approve(&action, &user(), false, None).await;
    std::fs::remove_file(&refs).unwrap();
    std::fs::rename(&aside, &refs).unwrap();
    let r = r.unwrap();
    assert!(!r.outcome.succeeded, "{r:?}");
    let a = f.engine.agent("dev-1").await.unwrap();
    assert_eq!((a.status, a.task.as_deref()), (AgentStatus::Paused, None));
    let paused = f
        .engine
        .events(&EventFilter {
            kind: Some("agent.paused".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(paused.len(), 1);
    assert!(
        paused[0].payload["last"]
            .as_str()
            .unwrap()
            .contains("git_push failed"),
        "{paused:?}"
    );
    // Paused: no claim until a person resumes it.
    f.engine
        .create_task("demo", "waits", &user())
        .await
        .unwrap();
    assert_eq!(step(&f, "dev-1").await, AgentRun::Paused);
    f.engine.resume_agent("dev-1", &user()).await.unwrap();
    assert!(matches!(
        step(&f, "dev-1").await,
        AgentRun::AwaitingApproval { .. }
    ));
}

/// Each worker takes only its kind of work: the noop loop claims delivery
/// tasks, never a pipeline task (`berth task run` runs it) nor a manual one
/// (a person's); they stay `todo` for their own workers.
#[tokio::test]
async fn the_noop_loop_claims_only_delivery_tasks() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Noop).await;
    let pipeline = f
        .engine
        .create_task_with(
            berth_engine::NewTask {
                steps: Some(vec![berth_engine::PipelineStep {
                    command: "true".into(),
                    write: false,
                }]),
                ..berth_engine::NewTask::new("demo", "a pipeline")
            },
            &user(),
        )
        .await
        .unwrap();
    let manual = f
        .engine
        .create_task_with(
            berth_engine::NewTask {
                source: berth_engine::TaskSource::Manual,
                ..berth_engine::NewTask::new("demo", "by hand")
            },
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(pipeline.kind(), berth_engine::TaskKind::Pipeline);
    assert_eq!(manual.kind(), berth_engine::TaskKind::Manual);
    assert_eq!(step(&f, "dev-1").await, AgentRun::Idle);
    for t in [&pipeline, &manual] {
        let now = f.engine.task(&t.id).await.unwrap();
        assert_eq!((now.status, now.agent), (TaskStatus::Todo, None));
    }
    let delivery = f.engine.create_task("demo", "code", &user()).await.unwrap();
    assert_eq!(delivery.kind(), berth_engine::TaskKind::Delivery);
    assert_eq!(
        step(&f, "dev-1").await,
        AgentRun::InReview {
            task: delivery.id.clone()
        }
    );
}

/// An agent proposes only for its own task: a commit another agent names
/// with dev-1's task is refused before anything is recorded, and dev-1's
/// task does not move (before, a failure of it returned dev-1's task).
#[tokio::test]
async fn an_agent_cannot_propose_for_another_agents_task() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    f.agent("dev-2", AgentImpl::Real).await;
    let task = f.engine.create_task("demo", "one", &user()).await.unwrap();
    let claimed = f.engine.claim_task("dev-1").await.unwrap().unwrap();
    assert_eq!(claimed.id, task.id);
    let before = f.engine.task(&task.id).await.unwrap();
    let latest = f.engine.latest_event_id().await.unwrap();

    let err = f
        .engine
        .propose(
            berth_engine::Proposal::by_agent(&named("dev-2"), berth_policy::Action::GitCommit)
                .task(Some(task.id.clone())),
            None,
        )
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("an agent proposes only for its own task"),
        "{err}"
    );
    let after = f.engine.task(&task.id).await.unwrap();
    assert_eq!(
        (after.status, after.updated_at),
        (before.status, before.updated_at)
    );
    assert_eq!(f.engine.latest_event_id().await.unwrap(), latest);

    // Its own agent still proposes for it.
    f.engine
        .propose(
            berth_engine::Proposal::by_agent(&named("dev-1"), berth_policy::Action::GitCommit)
                .task(Some(task.id.clone())),
            None,
        )
        .await
        .unwrap();
}
