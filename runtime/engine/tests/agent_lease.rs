//! Which driver drives an agent (`agent_lease.rs`): one holder at a time,
//! a takeover only after the lease runs out and with the next fencing
//! token, and an old holder that stops at its next effect — against a real
//! store shared by two engines (two processes' views) and the real noop
//! delivery chain.

use std::time::Duration;

use berth_engine::agent_lease::AgentLease;
use berth_engine::{
    ActionStatus, AgentImpl, AgentRun, Approval, Engine, EngineError, Task, TaskStatus,
};

use crate::common::{self, Fixture, named, user};

const LONG: Duration = Duration::from_secs(600);

/// Agent dev-1 with a task, its lease taken by server-a (token 1) for no
/// time, then by server-b (token 2) on a second engine over the same state.
struct Handover {
    f: Fixture,
    other: Engine,
    task: Task,
    stale: AgentLease,
    fresh: AgentLease,
}

impl Handover {
    async fn new() -> Handover {
        let f = Fixture::new().await;
        f.agent("dev-1", AgentImpl::Noop).await;
        let other = f.second().await;
        let task = f
            .engine
            .create_task("demo", "Add a file", &user())
            .await
            .unwrap();
        let stale = f
            .engine
            .take_agent_lease("dev-1", "server-a", Duration::ZERO)
            .await
            .unwrap()
            .unwrap();
        let fresh = other
            .take_agent_lease("dev-1", "server-b", LONG)
            .await
            .unwrap()
            .unwrap();
        Handover {
            f,
            other,
            task,
            stale,
            fresh,
        }
    }
}

#[tokio::test]
async fn one_driver_holds_an_agent_until_its_lease_runs_out_then_the_next_token_takes_over() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Noop).await;
    let other = f.second().await;

    let a = f
        .engine
        .take_agent_lease("dev-1", "server-a", LONG)
        .await
        .unwrap()
        .expect("a free agent's lease is taken");
    assert_eq!(a.token, 1);
    assert_eq!(a.taken_from, None, "a first lease is taken from nobody");
    // Held and not run out: the other driver gets nothing, whatever it tries.
    assert_eq!(
        other
            .take_agent_lease("dev-1", "server-b", LONG)
            .await
            .unwrap(),
        None
    );
    assert_eq!(other.renew_agent_leases("server-b", LONG).await.unwrap(), 0);
    // The holder keeps it, same token, and renews it.
    let again = f
        .engine
        .take_agent_lease("dev-1", "server-a", LONG)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.token, 1);
    assert_eq!(
        f.engine.renew_agent_leases("server-a", LONG).await.unwrap(),
        1
    );

    // It runs out (renewed for no time): the other driver takes it over
    // with the next token.
    f.engine
        .renew_agent_leases("server-a", Duration::ZERO)
        .await
        .unwrap();
    let b = other
        .take_agent_lease("dev-1", "server-b", LONG)
        .await
        .unwrap()
        .expect("a lease that ran out is taken over");
    assert_eq!(b.token, 2);
    assert_eq!(b.taken_from.as_deref(), Some("server-a"));
    assert_eq!(
        f.engine.agents_leased_by("server-b").await.unwrap(),
        ["dev-1".to_string()]
    );
    assert!(
        f.engine
            .agents_leased_by("server-a")
            .await
            .unwrap()
            .is_empty()
    );
    let taken = common::events_of(&f.engine, "agent.lease_taken").await;
    let owners: Vec<(String, i64, Option<String>)> = taken
        .iter()
        .map(|e| {
            (
                e.payload["owner"].as_str().unwrap().to_string(),
                e.payload["token"].as_i64().unwrap(),
                e.payload["previous_owner"].as_str().map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        owners,
        [
            ("server-a".to_string(), 1, None),
            ("server-b".to_string(), 2, Some("server-a".to_string())),
        ],
        "a first lease and a takeover are events; keeping and renewing are not"
    );
    // The old holder cannot renew what it lost.
    assert_eq!(
        f.engine.renew_agent_leases("server-a", LONG).await.unwrap(),
        0
    );

    // Released on a clean stop: taken at once, with the next token.
    assert_eq!(other.release_agent_leases("server-b").await.unwrap(), 1);
    let c = f
        .engine
        .take_agent_lease("dev-1", "server-a", LONG)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(c.token, 3);
}

#[tokio::test]
async fn a_driver_whose_lease_was_taken_over_stops_before_its_next_effect() {
    let Handover {
        f,
        other,
        task,
        stale,
        fresh,
    } = Handover::new().await;

    // The old holder's loop stops at its first effect (the claim): the task
    // is untouched.
    let err = f
        .engine
        .run_agent_under(&named("dev-1"), true, Some(stale))
        .await
        .unwrap_err();
    match &err {
        EngineError::AgentLeaseLost {
            agent, now_held_by, ..
        } => {
            assert_eq!(agent, "dev-1");
            assert_eq!(now_held_by.as_deref(), Some("server-b"));
        }
        e => panic!("expected AgentLeaseLost, got {e}"),
    }
    assert!(err.to_string().contains("now server-b's"), "{err}");
    let t = f.engine.task(&task.id).await.unwrap();
    assert_eq!(t.status, TaskStatus::Todo);
    assert_eq!(t.agent, None);

    // The holder delivers it: commit, push and PR, once.
    other
        .run_agent_under(&named("dev-1"), true, Some(fresh))
        .await
        .unwrap();
    let t = other.task(&task.id).await.unwrap();
    assert_eq!(t.status, TaskStatus::InReview);
    assert_eq!(other.prs(None).await.unwrap().len(), 1);
}

/// The window the store's check leaves: a driver that passed its check just
/// before a takeover pushes after it. The takeover raised the token at the
/// forge first (`worker.rs`), so the forge itself refuses the old token.
#[tokio::test]
async fn the_forge_refuses_a_stale_drivers_push_after_a_takeover_raised_the_token() {
    // server-a holds token 1; server-b takes the agent over (token 2) and
    // raises the token at the forge.
    let Handover {
        f,
        other,
        task,
        fresh,
        ..
    } = Handover::new().await;
    other.take_over_agent(&fresh).await.unwrap();
    let fence = std::fs::read_to_string(f.forge().join("berth-fence/dev-1")).unwrap();
    assert_eq!(fence.trim(), "2");

    // server-a's effects past the store's check (no lease checked here):
    // its push carries token 1, and the forge refuses it.
    f.engine.run_agent(&named("dev-1"), true).await.unwrap();
    let push = f
        .engine
        .action_by_key(&format!("task:{}:git_push", task.id))
        .await
        .unwrap()
        .expect("the push was proposed");
    let diagnostic = push.diagnostic.unwrap_or_default();
    assert!(
        diagnostic.contains("fencing token 1 is stale (the forge has seen 2"),
        "{diagnostic}"
    );
    let branches = f.forge_git(&["for-each-ref", "refs/heads/agent/"]);
    assert_eq!(branches.trim(), "", "nothing reached the forge: {branches}");
}

/// An approval received by a process that does not hold the agent's worker
/// lease (`actions/route.rs`) is recorded, not run; a stale lease cannot run
/// it; the holder's next pass runs it once and says so in the log.
#[tokio::test]
async fn an_approval_received_away_from_the_holder_runs_on_the_holder_once() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Noop).await;
    for kind in ["git_push", "pr_open"] {
        f.engine
            .set_autonomy(
                "dev-1",
                kind,
                berth_policy::Approval::RequireApproval,
                &user(),
            )
            .await
            .unwrap();
    }
    f.engine.set_worker("w1").unwrap();
    let other = f.second().await;
    other.set_worker("w2").unwrap();
    let task = f
        .engine
        .create_task("demo", "Add a file", &user())
        .await
        .unwrap();
    let lease = f
        .engine
        .take_agent_lease("dev-1", "w1", LONG)
        .await
        .unwrap()
        .unwrap();
    let run = f
        .engine
        .run_agent_under(&named("dev-1"), true, Some(lease.clone()))
        .await
        .unwrap();
    let AgentRun::AwaitingApproval { action: push, .. } = run.stopped else {
        panic!("expected the push to wait: {run:?}");
    };

    let Approval::Routed(routed) = other
        .approve_anywhere(&push, &user(), false, None)
        .await
        .unwrap()
    else {
        panic!("w2 does not hold dev-1: nothing runs there");
    };
    assert_eq!(routed.runs_on.as_deref(), Some("w1"));
    assert_eq!(routed.received_by, "w2");
    assert!(routed.message.contains("runs on worker w1"), "{routed:?}");
    assert_eq!(
        other.action(&push).await.unwrap().status,
        ActionStatus::Approved
    );
    // Decided: a second approval is refused, naming who approved.
    let again = other
        .approve_anywhere(&push, &user(), false, None)
        .await
        .unwrap_err();
    assert!(matches!(again, EngineError::NotPending { .. }), "{again}");

    // A lease that is no longer the agent's runs nothing.
    let stale = AgentLease {
        token: lease.token + 1,
        ..lease.clone()
    };
    let err = f.engine.run_routed_approvals(&stale).await.unwrap_err();
    assert!(matches!(err, EngineError::AgentLeaseLost { .. }), "{err}");
    assert_eq!(
        f.engine.action(&push).await.unwrap().status,
        ActionStatus::Approved
    );

    // The holder's next pass runs it, and the chain goes on to the PR.
    let run = f
        .engine
        .run_agent_under(&named("dev-1"), true, Some(lease))
        .await
        .unwrap();
    assert_eq!(
        f.engine.action(&push).await.unwrap().status,
        ActionStatus::Executed
    );
    let AgentRun::AwaitingApproval { action: pr, .. } = run.stopped else {
        panic!("expected the PR to wait: {run:?}");
    };
    // Approved on the holder itself: it runs there and then, as before.
    let Approval::Executed(done) = f
        .engine
        .approve_anywhere(&pr, &user(), false, None)
        .await
        .unwrap()
    else {
        panic!("w1 holds dev-1: the approval runs here");
    };
    assert!(done.outcome.succeeded, "{done:?}");
    assert_eq!(
        f.engine.task(&task.id).await.unwrap().status,
        TaskStatus::InReview
    );
    let ran = common::events_of(&f.engine, "proposed_action.approval_run").await;
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0].payload["worker"], "w1");
    assert_eq!(ran[0].payload["received_by"], "w2");
    let executed = common::events_of(&f.engine, "action.executed").await;
    assert_eq!(
        executed
            .iter()
            .filter(|e| e.action.as_deref() == Some(push.as_str()))
            .count(),
        1
    );
}
