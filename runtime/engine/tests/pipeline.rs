#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The action pipeline with the runner: pending → approved → executed in the
//! worktree, denial, failures with diagnostics, races between processes,
//! idempotency keys, crash recovery.

use crate::common;

use berth_engine::{
    ActionParams, ActionResult, ActionStatus, ActorKind, AgentImpl, CreatedStatus, EngineError,
    EventFilter, Proposal, ProposeStatus,
};
use berth_policy::Action;
use common::{Fixture, named, terminal_proposal, user};

async fn up(f: &Fixture, agent: &str) -> std::path::PathBuf {
    f.agent(agent, AgentImpl::Real).await;
    let info = f
        .engine
        .up(&named(agent), &named("demo"), None, &user())
        .await
        .unwrap();
    info.worktree.unwrap()
}

async fn events_of(f: &Fixture, action: &str) -> Vec<berth_engine::Event> {
    f.engine
        .events(&EventFilter {
            action: Some(action.into()),
            ..Default::default()
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn a_pending_command_runs_in_the_worktree_once_approved() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    let p = f
        .engine
        .propose(
            terminal_proposal("dev-1", "echo hi > /work/out.txt && cat /work/out.txt"),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Pending { .. }),
        "{:?}",
        p.status
    );
    assert!(!wt.join("out.txt").exists(), "nothing runs before approval");

    let approved = f
        .engine
        .approve(&p.id[..8], &user(), false, None)
        .await
        .unwrap();
    assert!(approved.outcome.succeeded, "{approved:?}");
    let Some(ActionResult::Terminal {
        stdout,
        exit_code,
        command,
        host_command,
        ..
    }) = &approved.outcome.result
    else {
        panic!("{approved:?}")
    };
    assert_eq!((stdout.as_str(), *exit_code), ("hi\n", 0));
    assert_eq!(std::fs::read_to_string(wt.join("out.txt")).unwrap(), "hi\n");
    // No rewriting: `/work` is real inside the runner's exec, so what ran
    // is what was decided.
    assert!(command.contains("/work/out.txt"));
    assert_eq!(host_command, command);

    let evs = events_of(&f, &p.id).await;
    let summary: Vec<(&str, ActorKind, Option<&str>)> = evs
        .iter()
        .map(|e| {
            (
                e.kind.as_str(),
                e.actor.kind,
                e.payload.get("status").and_then(|s| s.as_str()),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("proposed_action.created", ActorKind::Agent, Some("pending")),
            ("proposed_action.approved", ActorKind::User, None),
            ("action.executed", ActorKind::System, None),
        ]
    );
    assert_eq!(evs[0].actor.id, "dev-1");
    assert_eq!(evs[1].actor.id, "ada");
    assert_eq!(
        evs[2].payload["result"]["host_command"].as_str(),
        Some(host_command.as_str())
    );
    let rec = f.engine.action(&p.id).await.unwrap();
    assert_eq!(
        (rec.created_status, rec.status),
        (CreatedStatus::Pending, ActionStatus::Executed)
    );
    let m = f.engine.metrics(None).await.unwrap();
    assert_eq!(
        (m.proposed, m.human_approvals, m.auto_approved, m.executed),
        (1, 1, 0, 1)
    );
}

#[tokio::test]
async fn denied_actions_never_run_and_cannot_be_approved_later() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "touch /work/x"), None)
        .await
        .unwrap();
    let rec = f
        .engine
        .deny(&p.id, &user(), Some("not now"))
        .await
        .unwrap();
    assert_eq!(rec.status, ActionStatus::Denied);
    assert_eq!(
        rec.propose_status(),
        ProposeStatus::Refused {
            reason: "denied by ada: not now".into()
        }
    );
    let err = f
        .engine
        .approve(&p.id, &user(), false, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "action {} is denied, not pending (denied by ada): only a pending action can be approved or denied",
            p.id
        )
    );
    assert!(!wt.join("x").exists());
    let evs = events_of(&f, &p.id).await;
    assert_eq!(evs.last().unwrap().kind, "proposed_action.denied");
    assert_eq!(evs.last().unwrap().actor.kind, ActorKind::User);
    assert_eq!(evs.last().unwrap().payload["reason"], "not now");
    assert_eq!(f.engine.metrics(None).await.unwrap().human_denials, 1);
}

#[tokio::test]
async fn failures_and_timeouts_have_diagnostics() {
    let f = Fixture::new().await;
    up(&f, "dev-1").await;
    let cases: &[(&str, Option<u64>, &str)] = &[
        ("echo boom >&2; exit 3", None, "exited with code 3: boom"),
        (
            "no-such-program-xyz",
            None,
            "exited with 127 (command not found)",
        ),
        (
            "sleep 1000 & wait",
            Some(1),
            "timed out after 1 s; the whole process tree was killed",
        ),
    ];
    for (cmd, timeout, want) in cases {
        let p = f
            .engine
            .propose(
                terminal_proposal("dev-1", cmd).params(ActionParams {
                    timeout_secs: *timeout,
                    ..Default::default()
                }),
                None,
            )
            .await
            .unwrap();
        let a = f.engine.approve(&p.id, &user(), false, None).await.unwrap();
        assert!(!a.outcome.succeeded, "{cmd}");
        let d = a.outcome.diagnostic.clone().unwrap();
        assert!(d.starts_with(want), "{cmd}: {d}");
        let last = events_of(&f, &p.id).await.pop().unwrap();
        assert_eq!(last.kind, "action.failed");
        assert_eq!(last.payload["diagnostic"].as_str(), Some(d.as_str()));
        assert_eq!(
            f.engine.action(&p.id).await.unwrap().status,
            ActionStatus::Failed
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_processes_approving_one_action_execute_it_once() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "echo x >> /work/count"), None)
        .await
        .unwrap();
    let (a, b) = (f.second().await, f.second().await);
    let (id1, id2) = (p.id.clone(), p.id.clone());
    let h1 = tokio::spawn(async move {
        a.approve(&id1, &common::user(), false, None)
            .await
            .map(|_| ())
    });
    let h2 = tokio::spawn(async move {
        b.approve(&id2, &common::user(), false, None)
            .await
            .map(|_| ())
    });
    let results = [h1.await.unwrap(), h2.await.unwrap()];
    let ok = results.iter().filter(|r| r.is_ok()).count();
    let not_pending = results
        .iter()
        .filter(|r| matches!(r, Err(EngineError::NotPending { .. })))
        .count();
    assert_eq!((ok, not_pending), (1, 1), "{results:?}");
    assert_eq!(std::fs::read_to_string(wt.join("count")).unwrap(), "x\n");
    assert_eq!(f.engine.metrics(None).await.unwrap().human_approvals, 1);
}

#[tokio::test]
async fn an_idempotency_key_returns_the_first_proposal() {
    let f = Fixture::new().await;
    up(&f, "dev-1").await;
    let first = f
        .engine
        .propose(terminal_proposal("dev-1", "echo a").key("k-1"), None)
        .await
        .unwrap();
    let again = f
        .second()
        .await
        .propose(terminal_proposal("dev-1", "echo a").key("k-1"), None)
        .await
        .unwrap();
    assert_eq!(
        (again.id.as_str(), again.replayed),
        (first.id.as_str(), true)
    );
    assert_eq!(again.status, first.status);
    assert_eq!(
        f.engine.metrics(None).await.unwrap().proposed,
        1,
        "one decision, logged once"
    );

    let err = f
        .engine
        .propose(terminal_proposal("dev-1", "echo b").key("k-1"), None)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::KeyConflict { .. }), "{err}");

    // A keyless action's id is its key: proposing by it is that action
    // again (read with the agent: the store holds the key).
    let keyless = f
        .engine
        .propose(terminal_proposal("dev-1", "echo c"), None)
        .await
        .unwrap();
    let by_id = f
        .engine
        .propose(
            terminal_proposal("dev-1", "echo c").key(keyless.id.clone()),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (by_id.id.as_str(), by_id.replayed),
        (keyless.id.as_str(), true)
    );

    // Once executed, a replay returns the recorded outcome and runs nothing.
    f.engine
        .approve(&first.id, &user(), false, None)
        .await
        .unwrap();
    let replay = f
        .engine
        .propose(terminal_proposal("dev-1", "echo a").key("k-1"), None)
        .await
        .unwrap();
    let ProposeStatus::Executed { outcome } = replay.status else {
        panic!()
    };
    assert!(outcome.succeeded);
    assert_eq!(f.engine.metrics(None).await.unwrap().executed, 1);
}

#[tokio::test]
async fn a_command_needs_a_berth() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    let err = f
        .engine
        .propose(terminal_proposal("dev-1", "ls"), None)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "agent `dev-1` has no berth: run `berth up dev-1 --project demo`"
    );
    assert_eq!(
        f.engine.metrics(None).await.unwrap().proposed,
        0,
        "nothing decided, nothing logged"
    );
    let err = f
        .engine
        .propose(terminal_proposal("ghost", "ls"), None)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::UnknownAgent(_)));
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

#[tokio::test]
async fn an_action_executing_when_its_process_died_is_interrupted_not_rerun() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "touch /work/ran"), None)
        .await
        .unwrap();
    // What a crash between "executing" and its outcome leaves behind.
    sqlx::query("UPDATE proposed_actions SET status = 'executing', executor = $1 WHERE id = $2")
        .bind(format!("{}:4194305:1", hostname()))
        .bind(&p.id)
        .execute(f.engine.store().pool())
        .await
        .unwrap();
    // A live executor's action is left alone.
    let live = f
        .engine
        .propose(terminal_proposal("dev-1", "true"), None)
        .await
        .unwrap();
    sqlx::query("UPDATE proposed_actions SET status = 'executing', executor = $1 WHERE id = $2")
        .bind(berth_engine::recovery::executor_id())
        .bind(&live.id)
        .execute(f.engine.store().pool())
        .await
        .unwrap();

    let restarted = f.second().await;
    let rec = restarted.action(&p.id).await.unwrap();
    assert_eq!(rec.status, ActionStatus::Interrupted);
    assert!(
        rec.diagnostic
            .as_deref()
            .unwrap()
            .contains("was not re-run")
    );
    assert_eq!(
        restarted.action(&live.id).await.unwrap().status,
        ActionStatus::Executing
    );
    let evs = events_of(&f, &p.id).await;
    assert_eq!(evs.last().unwrap().kind, "action.interrupted");
    assert!(!wt.join("ran").exists(), "never re-run on its own");
    // Nor can it be approved into running again.
    assert!(matches!(
        restarted.approve(&p.id, &user(), false, None).await,
        Err(EngineError::NotPending { .. })
    ));
    // A second start finds nothing more to do.
    assert!(f.second().await.recover().await.unwrap().is_empty());
}

#[tokio::test]
async fn file_write_goes_through_the_path_map() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    let p = f
        .engine
        .propose(
            Proposal::by_agent(
                &named("dev-1"),
                Action::FileWrite {
                    path: "/work/docs/a.md".into(),
                },
            )
            .params(ActionParams {
                content: Some("hello\n".into()),
                ..Default::default()
            }),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Pending { .. }),
        "file_write is not seeded: {:?}",
        p.status
    );
    let a = f.engine.approve(&p.id, &user(), false, None).await.unwrap();
    let Some(ActionResult::FileWrite {
        path,
        host_path,
        bytes,
    }) = a.outcome.result
    else {
        panic!("{a:?}")
    };
    assert_eq!((path.as_str(), bytes), ("/work/docs/a.md", 6));
    assert_eq!(
        std::path::Path::new(&host_path),
        wt.canonicalize().unwrap().join("docs/a.md")
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("docs/a.md")).unwrap(),
        "hello\n"
    );
}

#[tokio::test]
async fn approving_while_the_berth_is_down_keeps_the_action_pending() {
    let f = Fixture::new().await;
    up(&f, "dev-1").await;
    let p = f
        .engine
        .propose(terminal_proposal("dev-1", "true"), None)
        .await
        .unwrap();
    f.engine.down(&named("dev-1"), true, &user()).await.unwrap();
    let err = f
        .engine
        .approve(&p.id, &user(), false, None)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::NoBerth { .. }), "{err}");
    assert_eq!(
        f.engine.action(&p.id).await.unwrap().status,
        ActionStatus::Pending
    );
    f.engine
        .up(&named("dev-1"), &named("demo"), None, &user())
        .await
        .unwrap();
    assert!(
        f.engine
            .approve(&p.id, &user(), false, None)
            .await
            .unwrap()
            .outcome
            .succeeded
    );
}
