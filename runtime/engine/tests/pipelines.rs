#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Pipeline tasks with the runner: execution modes and their precedence,
//! read-only steps and the permission retry, approval and rejection, hooks,
//! followups and their choices, the circuit breaker, and the lease that keeps
//! two runs of one task apart. Real store, real git, real processes.

use crate::common;

use berth_engine::{
    ActionResult, ActionStatus, AgentImpl, AgentStatus, EngineError, EventFilter, ExecutionMode,
    NewTask, PipelineEnd, PipelineStep, Task, TaskSource, TaskStatus,
};
use berth_policy::Approval;
use common::{Fixture, user};

/// Project `demo` with agent `dev-1` (terminal auto-approved), and `extra`
/// appended to its berth.toml.
async fn fixture(extra: &str) -> Fixture {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();
    if !extra.is_empty() {
        let path = f.state().project_config("demo");
        let mut text = std::fs::read_to_string(&path).unwrap();
        match extra.strip_prefix("enabled = true\n") {
            // A generator: in place of the default `[followups]` lines.
            Some(_) => {
                let (followups, hooks) = extra.split_once("\n\n").unwrap();
                let default = "enabled = false\ncommand = \"\"\n";
                assert!(text.contains(default));
                text = text.replace(default, &format!("{followups}\n"));
                text.push_str(hooks);
            }
            None => text.push_str(extra),
        }
        std::fs::write(&path, text).unwrap();
    }
    f
}

fn steps(cmds: &[&str]) -> Option<Vec<PipelineStep>> {
    Some(
        cmds.iter()
            .map(|c| PipelineStep {
                command: c.to_string(),
                write: false,
            })
            .collect(),
    )
}

async fn pipeline(f: &Fixture, title: &str, mode: Option<ExecutionMode>, cmds: &[&str]) -> Task {
    f.engine
        .create_task_with(
            NewTask {
                execution_mode: mode,
                steps: steps(cmds),
                ..NewTask::new("demo", title)
            },
            &user(),
        )
        .await
        .unwrap()
}

async fn task_events(f: &Fixture, task: &str) -> Vec<String> {
    f.engine
        .events(&EventFilter {
            task: Some(task.into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect()
}

fn only<'a>(events: &'a [String], wanted: &[&str]) -> Vec<&'a str> {
    events
        .iter()
        .map(String::as_str)
        .filter(|k| wanted.contains(k))
        .collect()
}

/// Whether this kernel enforces read-only /work in the runner (Landlock).
async fn read_only_enforced(f: &Fixture) -> bool {
    let t = pipeline(f, "probe", Some(ExecutionMode::Review), &["true"]).await;
    f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    let a = &f
        .engine
        .actions(&berth_engine::ActionFilter {
            task: Some(t.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap()[0];
    match &a.result {
        Some(ActionResult::Terminal { access_note, .. }) => access_note.is_none(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn auto_mode_runs_every_step_read_only_then_done_approved_completed() {
    let f = fixture("").await;
    let t = pipeline(
        &f,
        "check",
        Some(ExecutionMode::Auto),
        &["true", "echo one", "ls /work"],
    )
    .await;
    let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    assert_eq!(r.end, PipelineEnd::Done, "{r:?}");
    assert_eq!(
        (r.mode, r.run, r.agent.as_str()),
        (ExecutionMode::Auto, 1, "dev-1")
    );
    let t = f.engine.task(&t.id).await.unwrap();
    assert_eq!(t.status, TaskStatus::Done);
    let actions = f
        .engine
        .actions(&berth_engine::ActionFilter {
            task: Some(t.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(actions.len(), 3);
    assert!(actions.iter().all(|a| a.status == ActionStatus::Executed));
    assert!(
        actions.iter().all(|a| a.params.read_only),
        "steps default to read-only"
    );
    assert!(actions.iter().all(|a| a.agent == "dev-1"));
    let ev = task_events(&f, &t.id).await;
    assert_eq!(
        only(
            &ev,
            &[
                "pipeline.started",
                "task.done",
                "task_auto_approved",
                "pipeline_completed",
                "task.in_review"
            ]
        ),
        [
            "pipeline.started",
            "task.done",
            "task_auto_approved",
            "pipeline_completed"
        ]
    );
    // Done is done: running it again says so and changes nothing.
    let err = f
        .engine
        .run_pipeline(&t.id, None, &user())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is done"), "{err}");
    assert_eq!(task_events(&f, &t.id).await.len(), ev.len());
}

#[tokio::test]
async fn the_effective_mode_is_task_then_project_then_review() {
    // (project's berth.toml, task's own) → effective
    let cases: &[(Option<&str>, Option<ExecutionMode>, ExecutionMode)] = &[
        (None, None, ExecutionMode::Review),
        (Some("auto"), None, ExecutionMode::Auto),
        (Some("review"), None, ExecutionMode::Review),
        (
            Some("auto"),
            Some(ExecutionMode::Review),
            ExecutionMode::Review,
        ),
        (
            Some("review"),
            Some(ExecutionMode::Auto),
            ExecutionMode::Auto,
        ),
        (None, Some(ExecutionMode::Auto), ExecutionMode::Auto),
    ];
    let f = fixture("").await;
    for (project, task, want) in cases {
        if let Some(p) = project {
            let m = ExecutionMode::parse(p).unwrap();
            f.engine.set_project_mode("demo", m, &user()).await.unwrap();
        } else {
            // The default file says review.
            f.engine
                .set_project_mode("demo", ExecutionMode::Review, &user())
                .await
                .unwrap();
        }
        let t = pipeline(&f, "m", *task, &["true"]).await;
        let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
        assert_eq!(r.mode, *want, "{project:?} {task:?}");
        let status = f.engine.task(&t.id).await.unwrap().status;
        let expect = match want {
            ExecutionMode::Auto => TaskStatus::Done,
            ExecutionMode::Review => TaskStatus::InReview,
        };
        assert_eq!(status, expect, "{project:?} {task:?}");
    }
}

#[tokio::test]
async fn the_mode_is_computed_once_when_the_run_starts() {
    let f = fixture("").await;
    // Steps wait for a person: terminal asks.
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::RequireApproval, &user())
        .await
        .unwrap();
    let t = pipeline(&f, "once", Some(ExecutionMode::Auto), &["true", "true"]).await;
    let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    let PipelineEnd::Waiting { action, step } = r.end else {
        panic!("{r:?}")
    };
    assert_eq!(step, 1);
    assert_eq!(
        f.engine.task(&t.id).await.unwrap().status,
        TaskStatus::AwaitingApproval
    );
    // The mode changes while the run waits: the run keeps auto.
    f.engine
        .set_task_mode(&t.id, Some(ExecutionMode::Review), &user())
        .await
        .unwrap();
    // Another process approves the step.
    let other = f.second().await;
    other.approve(&action, &user(), false, None).await.unwrap();
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();
    let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    assert_eq!(
        (r.end, r.mode, r.run),
        (PipelineEnd::Done, ExecutionMode::Auto, 1)
    );
    // The approved step ran once: the run replayed it.
    let actions = f
        .engine
        .actions(&berth_engine::ActionFilter {
            task: Some(t.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(actions.len(), 2, "{actions:?}");
}

#[tokio::test]
async fn auto_mode_retries_a_permission_failure_once_with_write_access_for_the_rest() {
    let f = fixture("").await;
    if !read_only_enforced(&f).await {
        // Said plainly on every such step; nothing to retry here.
        eprintln!("Landlock unavailable: read-only cannot be enforced on this kernel");
        return;
    }
    let t = pipeline(
        &f,
        "writes",
        Some(ExecutionMode::Auto),
        &[
            "cat /work/README.md",
            "echo a > /work/out.txt",
            "echo b >> /work/out.txt",
        ],
    )
    .await;
    let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    assert_eq!(r.end, PipelineEnd::Done, "{r:?}");
    let actions = f
        .engine
        .actions(&berth_engine::ActionFilter {
            task: Some(t.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    let seen: Vec<(ActionStatus, bool)> = actions
        .iter()
        .map(|a| (a.status, a.params.read_only))
        .collect();
    assert_eq!(
        seen,
        [
            (ActionStatus::Executed, true),
            (ActionStatus::Failed, true),
            (ActionStatus::Executed, false),
            // Write access holds for the rest of the run.
            (ActionStatus::Executed, false),
        ]
    );
    let failed = &actions[1];
    // EACCES from Landlock, or EROFS from the read-only bind of /work (the
    // runner's exec, like a container).
    let diagnostic = failed.diagnostic.as_deref().unwrap().to_lowercase();
    assert!(
        diagnostic.contains("permission denied") || diagnostic.contains("read-only file system"),
        "{failed:?}"
    );
    let wt = f.engine.agent("dev-1").await.unwrap().worktree.unwrap();
    assert_eq!(
        std::fs::read_to_string(wt.join("out.txt")).unwrap(),
        "a\nb\n"
    );
    let ev = task_events(&f, &t.id).await;
    assert_eq!(
        only(
            &ev,
            &[
                "task_permission_retry",
                "task_auto_approved",
                "task.blocked"
            ]
        ),
        ["task_permission_retry", "task_auto_approved"]
    );
}

#[tokio::test]
async fn failures_block_by_mode() {
    let f = fixture("").await;
    let enforced = read_only_enforced(&f).await;
    let perm = "echo 'mkdir: cannot create directory: Permission denied' >&2; exit 1";
    // (mode, step, blocked, retries, diagnosis contains)
    let mut cases: Vec<(ExecutionMode, &str, bool, usize, &str)> = vec![
        // Any failure that is no permission error blocks at once in auto.
        (
            ExecutionMode::Auto,
            "exit 3",
            true,
            0,
            "failed in auto mode",
        ),
        // A permission error that writing does not cure: retried once, then blocked.
        (
            ExecutionMode::Auto,
            perm,
            true,
            1,
            "failed again with write access",
        ),
        // Review mode never retries.
        (
            ExecutionMode::Review,
            perm,
            true,
            0,
            "failed in review mode",
        ),
        (
            ExecutionMode::Review,
            "exit 3",
            true,
            0,
            "failed in review mode",
        ),
    ];
    if enforced {
        cases.push((
            ExecutionMode::Review,
            "touch /work/x",
            true,
            0,
            "failed in review mode",
        ));
        cases.push((ExecutionMode::Auto, "touch /work/x", false, 1, ""));
    }
    for (mode, cmd, blocked, retries, says) in cases {
        let t = pipeline(&f, cmd, Some(mode), &[cmd, "true"]).await;
        let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
        let task = f.engine.task(&t.id).await.unwrap();
        let ev = task_events(&f, &t.id).await;
        assert_eq!(
            only(&ev, &["task_permission_retry"]).len(),
            retries,
            "{mode:?} {cmd}"
        );
        if blocked {
            let PipelineEnd::Blocked { diagnosis } = &r.end else {
                panic!("{mode:?} {cmd}: {r:?}")
            };
            assert!(diagnosis.contains(says), "{mode:?} {cmd}: {diagnosis}");
            assert_eq!(task.status, TaskStatus::Blocked);
            assert_eq!(task.diagnosis.as_deref(), Some(diagnosis.as_str()));
            assert!(!ev.iter().any(|k| k == "pipeline_completed"));
            // Never run over on its own; on request, a new run.
            f.engine.resume_agent("dev-1", &user()).await.ok();
            let err = f
                .engine
                .run_pipeline(&t.id, None, &user())
                .await
                .unwrap_err();
            assert!(err.to_string().contains("--restart"), "{err}");
            f.engine.resume_agent("dev-1", &user()).await.ok();
            let again = f
                .engine
                .run_pipeline_with(&t.id, None, true, &user())
                .await
                .unwrap();
            assert_eq!(again.run, 2, "{mode:?} {cmd}");
        } else {
            assert_eq!(r.end, PipelineEnd::Done, "{mode:?} {cmd}");
        }
        // The breaker must not pause dev-1 during this table.
        f.engine.resume_agent("dev-1", &user()).await.ok();
    }
}

#[tokio::test]
async fn review_mode_waits_for_approve_or_reject() {
    let f = fixture("").await;
    let a = pipeline(&f, "a", None, &["true"]).await;
    let r = f.engine.run_pipeline(&a.id, None, &user()).await.unwrap();
    assert_eq!(
        (r.end, r.mode),
        (PipelineEnd::InReview, ExecutionMode::Review)
    );
    let ev = task_events(&f, &a.id).await;
    assert_eq!(
        only(
            &ev,
            &["task.in_review", "pipeline_completed", "task_auto_approved"]
        ),
        ["task.in_review", "pipeline_completed"]
    );
    let err = f
        .engine
        .run_pipeline(&a.id, None, &user())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("berth task approve"), "{err}");

    f.engine.approve_task(&a.id, &user()).await.unwrap();
    assert_eq!(f.engine.task(&a.id).await.unwrap().status, TaskStatus::Done);
    let approved = f
        .engine
        .events(&EventFilter {
            task: Some(a.id.clone()),
            kind: Some("task.approved".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(approved.len(), 1);
    assert_eq!(approved[0].actor, user());
    // Approving twice records nothing more.
    f.engine.approve_task(&a.id, &user()).await.unwrap_err();

    let b = pipeline(&f, "b", None, &["true"]).await;
    f.engine.run_pipeline(&b.id, None, &user()).await.unwrap();
    let err = f.engine.reject_task(&b.id, " ", &user()).await.unwrap_err();
    assert!(err.to_string().contains("--reason"), "{err}");
    let b = f
        .engine
        .reject_task(&b.id, "wrong file", &user())
        .await
        .unwrap();
    assert_eq!(
        (b.status, b.diagnosis.as_deref()),
        (TaskStatus::Returned, Some("wrong file"))
    );
    // A returned task runs again as a new run.
    let r = f.engine.run_pipeline(&b.id, None, &user()).await.unwrap();
    assert_eq!((r.end, r.run), (PipelineEnd::InReview, 2));
}

#[tokio::test]
async fn bad_tasks_and_runs_say_what_to_do() {
    let f = fixture("").await;
    let cases: Vec<(NewTask, &str)> = vec![
        (
            NewTask {
                steps: Some(Vec::new()),
                ..NewTask::new("demo", "t")
            },
            "at least one step",
        ),
        (
            NewTask {
                steps: steps(&["  "]),
                ..NewTask::new("demo", "t")
            },
            "empty",
        ),
        (
            NewTask {
                write: true,
                ..NewTask::new("demo", "t")
            },
            "`--write` applies to pipeline steps",
        ),
    ];
    for (new, says) in cases {
        let err = f.engine.create_task_with(new, &user()).await.unwrap_err();
        assert!(err.to_string().contains(says), "{err}");
    }
    let agent_task = f
        .engine
        .create_task("demo", "by an agent", &user())
        .await
        .unwrap();
    let err = f
        .engine
        .run_pipeline(&agent_task.id, None, &user())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is an agent task"), "{err}");
    f.agent("dev-2", AgentImpl::Real).await;
    let t = pipeline(&f, "t", None, &["true"]).await;
    let err = f
        .engine
        .run_pipeline(&t.id, None, &user())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("say which runs task"), "{err}");
    let r = f
        .engine
        .run_pipeline(&t.id, Some("dev-2"), &user())
        .await
        .unwrap();
    assert_eq!(r.agent, "dev-2");
}

#[tokio::test]
async fn hooks_run_on_the_host_with_the_event_and_never_block() {
    let f = fixture(
        r#"
[[hooks]]
event = "task_auto_approved"
command = "cat > approved.json"

[[hooks]]
event = "pipeline_completed"
command = "echo bad >&2; exit 7"

[[hooks]]
event = "pipeline_completed"
command = "sleep 30"
timeout_secs = 1
"#,
    )
    .await;
    let t = pipeline(&f, "hooked", Some(ExecutionMode::Auto), &["true"]).await;
    let started = std::time::Instant::now();
    let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    assert_eq!(r.end, PipelineEnd::Done);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "the hook was killed"
    );
    let out = f.state().project_dir("demo").join("approved.json");
    let event: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    assert_eq!(event["type"], "task_auto_approved");
    assert_eq!(event["task"], t.id.as_str());
    let failed = f
        .engine
        .events(&EventFilter {
            kind: Some("hook.failed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let diags: Vec<String> = failed
        .iter()
        .map(|e| e.payload["diagnostic"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(diags.len(), 2, "{diags:?}");
    assert!(diags[0].contains("exited with code 7: bad"), "{diags:?}");
    assert!(diags[1].contains("timed out"), "{diags:?}");
    assert!(
        failed
            .iter()
            .all(|e| e.payload["event"] == "pipeline_completed")
    );
}

/// Replaces the default `[followups]` lines of berth.toml.
const GENERATOR: &str = r#"enabled = true
command = "cat > input.json; echo x >> generated.count; test -f approved.json && echo '{\"title\":\"after the hook\",\"steps\":[\"true\"]}'; echo '{\"title\":\"plain\"}'; echo '{\"title\":\"needs write\",\"steps\":[\"touch /work/fixed.txt\"],\"permission_blocked\":true}'; echo '{\"title\":\"cannot\",\"steps\":[\"exit 9\"],\"permission_blocked\":true}'"

[[hooks]]
event = "task_auto_approved"
command = "cat > approved.json"
"#;

#[tokio::test]
async fn auto_followups_inherit_the_project_mode_and_resolve_blocked_items_as_rerun() {
    let f = fixture(GENERATOR).await;
    // Project review, task override auto: followups must be review (D6).
    let t = pipeline(&f, "parent", Some(ExecutionMode::Auto), &["echo from-step"]).await;
    let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    assert_eq!(r.end, PipelineEnd::Done);
    assert_eq!(r.followups.len(), 2, "{r:?}");
    let dir = f.state().project_dir("demo");
    let input: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("input.json")).unwrap()).unwrap();
    assert_eq!(input["steps"][0]["stdout"], "from-step\n");
    assert_eq!(input["task"]["id"], t.id.as_str());

    let tasks = f.engine.tasks(Some("demo")).await.unwrap();
    let followups: Vec<&Task> = tasks
        .iter()
        .filter(|x| x.parent.as_deref() == Some(&t.id))
        .collect();
    let mut titles: Vec<(&str, TaskSource, Vec<String>)> = followups
        .iter()
        .map(|x| (x.title.as_str(), x.source, x.tags.clone()))
        .collect();
    titles.sort_by(|a, b| a.0.cmp(b.0));
    assert_eq!(titles.len(), 3, "{titles:?}");
    // The hook ran before the generator (the ADR's order).
    assert!(
        titles[0]
            .0
            .starts_with("By hand: cannot (rerun of `exit 9`"),
        "{titles:?}"
    );
    let escalated = followups
        .iter()
        .find(|x| x.source == TaskSource::Manual)
        .unwrap();
    assert_eq!(escalated.tags, ["manual", "auto_escalated"]);
    assert!(followups.iter().any(|x| x.title == "after the hook"));
    for x in followups
        .iter()
        .filter(|x| x.source == TaskSource::Followup)
    {
        assert_eq!(
            x.execution_mode, None,
            "followups never take the task's override"
        );
        assert_eq!(x.tags, ["followup"]);
    }
    // The permission-blocked item with a fix ran with write access.
    let wt = f.engine.agent("dev-1").await.unwrap().worktree.unwrap();
    assert!(wt.join("fixed.txt").exists());
    let choices = f.engine.choices(false).await.unwrap();
    let mut outcomes: Vec<(String, String)> = choices
        .iter()
        .map(|c| {
            (
                c.choice.clone().unwrap(),
                c.result.as_ref().unwrap()["outcome"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    outcomes.sort();
    assert_eq!(
        outcomes,
        [
            ("rerun".to_string(), "escalated".to_string()),
            ("rerun".to_string(), "rerun_succeeded".to_string())
        ]
    );
    assert!(choices.iter().all(|c| c.status == "resolved"));

    // A followup runs in the project's mode and generates nothing itself.
    let child = followups
        .iter()
        .find(|x| x.title == "after the hook")
        .unwrap();
    let r = f
        .engine
        .run_pipeline(&child.id, None, &user())
        .await
        .unwrap();
    assert_eq!(
        (r.mode, r.end),
        (ExecutionMode::Review, PipelineEnd::InReview)
    );
    f.engine.approve_task(&child.id, &user()).await.unwrap();
    let count = std::fs::read_to_string(dir.join("generated.count")).unwrap();
    assert_eq!(
        count.lines().count(),
        1,
        "followups of followups generate none"
    );
}

#[tokio::test]
async fn review_followups_wait_for_approval_and_leave_choices_to_a_person() {
    let f = fixture(GENERATOR).await;
    let t = pipeline(&f, "parent", None, &["true"]).await;
    f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    let dir = f.state().project_dir("demo");
    assert!(
        !dir.join("generated.count").exists(),
        "no followups before approval"
    );
    let r = f.engine.approve_task(&t.id, &user()).await.unwrap();
    assert_eq!(r.followups.len(), 1, "{r:?}");
    let pending = f.engine.choices(true).await.unwrap();
    assert_eq!(pending.len(), 2);
    assert!(
        pending
            .iter()
            .all(|c| c.options == ["rerun", "manual_task", "skip"])
    );
    let err = f
        .engine
        .resolve_choice(&pending[0].id, "later", &user())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("rerun, manual_task, skip"),
        "{err}"
    );
    let manual = f
        .engine
        .resolve_choice(&pending[0].id, "manual_task", &user())
        .await
        .unwrap();
    let task_id = manual.result.unwrap()["task"].as_str().unwrap().to_string();
    let m = f.engine.task(&task_id).await.unwrap();
    assert_eq!(
        (m.source, m.tags.clone()),
        (TaskSource::Manual, vec!["manual".to_string()])
    );
    let skipped = f
        .engine
        .resolve_choice(&pending[1].id, "skip", &user())
        .await
        .unwrap();
    assert_eq!(skipped.result.unwrap()["outcome"], "skipped");
    assert!(f.engine.choices(true).await.unwrap().is_empty());
    // A resolved choice cannot be resolved again.
    f.engine
        .resolve_choice(&pending[1].id, "rerun", &user())
        .await
        .unwrap_err();
    // Approving again after everything finished is refused; nothing doubled.
    f.engine.approve_task(&t.id, &user()).await.unwrap_err();
    let count = std::fs::read_to_string(dir.join("generated.count")).unwrap();
    assert_eq!(count.lines().count(), 1);
}

#[tokio::test]
async fn the_circuit_breaker_pauses_after_n_failures_and_refusals_do_not_count() {
    let f = fixture("").await;
    let path = f.state().project_config("demo");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("circuit_breaker = 3", "circuit_breaker = 2");
    std::fs::write(&path, text).unwrap();
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();

    let fail = pipeline(&f, "f1", Some(ExecutionMode::Auto), &["exit 1"]).await;
    f.engine
        .run_pipeline(&fail.id, None, &user())
        .await
        .unwrap();
    assert_eq!(f.engine.consecutive_failures("dev-1").await.unwrap(), 1);
    // A refusal is no failure of the agent's.
    let refused = pipeline(&f, "r", Some(ExecutionMode::Auto), &["rm -rf /"]).await;
    let r = f
        .engine
        .run_pipeline(&refused.id, None, &user())
        .await
        .unwrap();
    assert!(matches!(r.end, PipelineEnd::Blocked { .. }), "{r:?}");
    assert_eq!(f.engine.consecutive_failures("dev-1").await.unwrap(), 1);
    // A success resets.
    let ok = pipeline(&f, "ok", Some(ExecutionMode::Auto), &["true"]).await;
    f.engine.run_pipeline(&ok.id, None, &user()).await.unwrap();
    assert_eq!(f.engine.consecutive_failures("dev-1").await.unwrap(), 0);
    for n in 0..2 {
        let t = pipeline(&f, &format!("x{n}"), Some(ExecutionMode::Auto), &["exit 1"]).await;
        f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    }
    let a = f.engine.agent("dev-1").await.unwrap();
    assert_eq!(a.status, AgentStatus::Paused);
    let paused = f
        .engine
        .events(&EventFilter {
            kind: Some("agent.paused".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(paused.len(), 1);
    assert_eq!(paused[0].payload["threshold"], 2);
    // No more runs, and no claims.
    let t = pipeline(&f, "after", Some(ExecutionMode::Auto), &["true"]).await;
    let err = f
        .engine
        .run_pipeline(&t.id, None, &user())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("berth agent resume dev-1"),
        "{err}"
    );
    f.engine
        .create_task("demo", "agent work", &user())
        .await
        .unwrap();
    assert!(f.engine.claim_task("dev-1").await.unwrap().is_none());
    let a = f.engine.resume_agent("dev-1", &user()).await.unwrap();
    assert_eq!(a.status, AgentStatus::Idle);
    let r = f.engine.run_pipeline(&t.id, None, &user()).await.unwrap();
    assert_eq!(r.end, PipelineEnd::Done);
    f.engine.resume_agent("dev-1", &user()).await.unwrap_err();
}

#[tokio::test]
async fn two_runs_of_one_task_never_overlap() {
    let f = fixture("").await;
    let t = pipeline(&f, "slow", Some(ExecutionMode::Auto), &["sleep 2", "true"]).await;
    let other = f.second().await;
    let id = t.id.clone();
    let first = tokio::spawn(async move { other.run_pipeline(&id, None, &user()).await });
    // Wait until the first run holds the lease and runs its first step.
    for _ in 0..100 {
        let s = f.engine.pipeline_state(&t.id).await.unwrap();
        if s.is_some_and(|s| !s["lease_owner"].is_null()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let err = f
        .engine
        .run_pipeline(&t.id, None, &user())
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("being run by another berth process"),
        "{err}"
    );
    let r = first.await.unwrap().unwrap();
    assert_eq!(r.end, PipelineEnd::Done);
    let actions = f
        .engine
        .actions(&berth_engine::ActionFilter {
            task: Some(t.id.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(actions.len(), 2, "each step ran once");
    let s = f.engine.pipeline_state(&t.id).await.unwrap().unwrap();
    assert!(s["lease_owner"].is_null(), "the lease is released: {s}");
}

#[tokio::test]
async fn an_illegal_move_is_refused_and_nothing_changes() {
    let f = fixture("").await;
    let unchanged = |before: &Task, after: &Task| {
        assert_eq!(before, after, "the task must not change");
    };
    // Never in review: it cannot be rejected.
    let todo = pipeline(&f, "not run yet", None, &["true"]).await;
    let last = f.engine.latest_event_id().await.unwrap();
    let err = f
        .engine
        .reject_task(&todo.id, "no", &user())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            EngineError::IllegalTransition { what: "task", from, to: "returned", .. } if from == "todo"
        ),
        "{err:?}"
    );
    unchanged(&todo, &f.engine.task(&todo.id).await.unwrap());
    assert_eq!(f.engine.latest_event_id().await.unwrap(), last, "no event");

    // Done is final: a rejection after an auto-mode run changes nothing.
    let done = pipeline(&f, "done", Some(ExecutionMode::Auto), &["true"]).await;
    f.engine
        .run_pipeline(&done.id, None, &user())
        .await
        .unwrap();
    let done = f.engine.task(&done.id).await.unwrap();
    assert_eq!(done.status, TaskStatus::Done);
    let last = f.engine.latest_event_id().await.unwrap();
    let err = f
        .engine
        .reject_task(&done.id, "too late", &user())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::IllegalTransition { from, .. } if from == "done"),
        "{err:?}"
    );
    unchanged(&done, &f.engine.task(&done.id).await.unwrap());
    assert_eq!(f.engine.latest_event_id().await.unwrap(), last, "no event");

    // Blocked waits for a person to run it again, not for a verdict.
    let blocked = pipeline(&f, "blocked", None, &["false"]).await;
    f.engine
        .run_pipeline(&blocked.id, None, &user())
        .await
        .unwrap();
    let blocked = f.engine.task(&blocked.id).await.unwrap();
    assert_eq!(blocked.status, TaskStatus::Blocked);
    let last = f.engine.latest_event_id().await.unwrap();
    let err = f
        .engine
        .reject_task(&blocked.id, "no", &user())
        .await
        .unwrap_err();
    assert!(
        matches!(&err, EngineError::IllegalTransition { from, .. } if from == "blocked"),
        "{err:?}"
    );
    unchanged(&blocked, &f.engine.task(&blocked.id).await.unwrap());
    assert_eq!(f.engine.latest_event_id().await.unwrap(), last, "no event");
}

/// A pipeline task that an older berth's noop loop delivered as a PR (before
/// task kinds): `task approve` said "run it" and `task run` said "approve
/// it". Both now name the PR and the way out, and the way out works. The old
/// state is written into the store as that version left it: today's code
/// cannot make it.
#[tokio::test]
async fn a_pipeline_task_delivered_as_a_pr_says_how_to_get_out() {
    let f = fixture("").await;
    let t = pipeline(&f, "t", None, &["true"]).await;
    let pool = f.engine.store().pool();
    sqlx::query("UPDATE tasks SET status = 'in_review', agent = 'dev-1' WHERE id = $1")
        .bind(&t.id)
        .execute(pool)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO prs (id, number, project, agent, task_id, action_id, branch, base, head, title, status, created_at, updated_at) \
         VALUES ('0123456789abcdef0123456789abcdef', 7, 'demo', 'dev-1', $1, 'fedcba9876543210fedcba9876543210', 'agent/dev-1/t', 'main', 'abc', 't', 'open', 0, 0)",
    )
    .bind(&t.id)
    .execute(pool)
    .await
    .unwrap();

    let approve = f.engine.approve_task(&t.id, &user()).await.unwrap_err();
    let run = f
        .engine
        .run_pipeline(&t.id, Some("dev-1"), &user())
        .await
        .unwrap_err();
    for err in [approve.to_string(), run.to_string()] {
        assert!(
            err.contains("delivered as PR #7")
                && err.contains("berth pr close 7")
                && err.contains(&format!("berth task run {}", &t.id[..8])),
            "{err}"
        );
    }
    // The way out it names: close the PR (the task returns), run the steps.
    f.engine
        .close_pr("7", &user(), Some("run the pipeline"))
        .await
        .unwrap();
    let report = f
        .engine
        .run_pipeline(&t.id, Some("dev-1"), &user())
        .await
        .unwrap();
    assert_eq!(report.agent, "dev-1");
    let task = f.engine.task(&t.id).await.unwrap();
    assert_ne!(task.status, berth_engine::TaskStatus::Returned, "{task:?}");
}
