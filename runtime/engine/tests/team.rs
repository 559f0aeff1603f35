#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Growing a team only by a person's decision: `parallelize` proposed by
//! berth when work piles up, `raise_max_parallel` and `instruction_patch`;
//! none auto-approved even in auto mode; what each did is in the log.

use crate::common;

use berth_engine::{
    ActionFilter, ActionParams, ActionResult, ActionStatus, AgentImpl, EventFilter, Proposal,
    ProposeStatus,
};
use berth_policy::{Action, Approval};
use common::{Fixture, named, user};

async fn parallelize_actions(f: &Fixture) -> Vec<berth_engine::ActionRecord> {
    f.engine
        .actions(&ActionFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|a| a.action == Action::Parallelize)
        .collect()
}

#[tokio::test]
async fn piled_up_work_proposes_a_twin_that_inherits_impl_and_instructions_with_the_seeded_autonomy()
 {
    let f = Fixture::new().await;
    let path = f.state().project_config("demo");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replace("max_parallel = 1", "max_parallel = 2");
    std::fs::write(&path, text).unwrap();
    f.agent("dev-1", AgentImpl::Noop).await;
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();
    f.engine
        .set_autonomy("dev-1", "git_merge", Approval::AutoApprove, &user())
        .await
        .unwrap();
    // Auto mode on: parallelize still asks.
    f.engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap();
    let instructions = f.engine.instructions_path("dev-1");
    std::fs::create_dir_all(instructions.parent().unwrap()).unwrap();
    std::fs::write(&instructions, "be brief\n").unwrap();

    f.engine.create_task("demo", "one", &user()).await.unwrap();
    assert!(
        parallelize_actions(&f).await.is_empty(),
        "one task is no pile"
    );
    // Pipeline tasks are not claimed: they do not count.
    f.engine
        .create_task_with(
            berth_engine::NewTask {
                steps: Some(vec![berth_engine::PipelineStep {
                    command: "true".into(),
                    write: false,
                }]),
                ..berth_engine::NewTask::new("demo", "pipeline")
            },
            &user(),
        )
        .await
        .unwrap();
    assert!(parallelize_actions(&f).await.is_empty());
    f.engine.create_task("demo", "two", &user()).await.unwrap();
    f.engine
        .create_task("demo", "three", &user())
        .await
        .unwrap();
    let proposed = parallelize_actions(&f).await;
    assert_eq!(proposed.len(), 1, "asked once per team size");
    assert_eq!(proposed[0].status, ActionStatus::Pending);
    assert_eq!(proposed[0].agent, "dev-1");

    let approved = f
        .engine
        .approve(&proposed[0].id, &user(), false, None)
        .await
        .unwrap();
    assert!(approved.outcome.succeeded, "{approved:?}");
    let Some(ActionResult::Parallelize {
        agent,
        of,
        implementation,
        autonomy_rows,
    }) = approved.outcome.result
    else {
        panic!("{approved:?}")
    };
    assert_eq!(
        (agent.as_str(), of.as_str(), implementation.as_str()),
        ("dev-1-2", "dev-1", "noop")
    );
    let twin = f.engine.agent("dev-1-2").await.unwrap();
    assert_eq!(twin.implementation, AgentImpl::Noop);
    let a: Vec<_> = f
        .engine
        .autonomy("dev-1")
        .await
        .unwrap()
        .iter()
        .map(|(k, m)| (k.to_string(), m))
        .collect();
    let b: Vec<_> = f
        .engine
        .autonomy("dev-1-2")
        .await
        .unwrap()
        .iter()
        .map(|(k, m)| (k.to_string(), m))
        .collect();
    // The twin gets the seed's fixed set (ADR 0018), not the base agent's
    // widenings: no terminal, never git_merge.
    let seeded: Vec<_> = berth_engine::ACTIVATION_SEEDS
        .iter()
        .map(|k| (k.to_string(), Approval::AutoApprove))
        .collect();
    let mut b_sorted = b.clone();
    b_sorted.sort();
    let mut seeded_sorted = seeded.clone();
    seeded_sorted.sort();
    assert_eq!(b_sorted, seeded_sorted);
    assert!(a.iter().any(|(k, _)| k == "git_merge"), "{a:?}");
    assert!(
        !b.iter().any(|(k, _)| k == "git_merge" || k == "terminal"),
        "{b:?}"
    );
    assert_eq!(autonomy_rows as usize, b.len());
    assert_eq!(
        std::fs::read_to_string(f.engine.instructions_path("dev-1-2")).unwrap(),
        "be brief\n"
    );
    let executed = f
        .engine
        .events(&EventFilter {
            action: Some(proposed[0].id.clone()),
            kind: Some("action.executed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(executed[0].payload["result"]["agent"], "dev-1-2");
    // The team is at max_parallel: no more proposals.
    f.engine.create_task("demo", "four", &user()).await.unwrap();
    assert_eq!(parallelize_actions(&f).await.len(), 1);
}

#[tokio::test]
async fn raising_the_limit_and_patching_instructions_always_ask_and_are_logged() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    f.engine
        .set_auto_mode("dev-1", true, &user())
        .await
        .unwrap();
    let propose = |action: Action, params: ActionParams| {
        f.engine.propose(
            Proposal::by_agent(&named("dev-1"), action).params(params),
            None,
        )
    };
    let raise = propose(Action::RaiseMaxParallel, ActionParams::default())
        .await
        .unwrap();
    assert!(
        matches!(raise.status, ProposeStatus::Pending { .. }),
        "{raise:?}"
    );
    let r = f
        .engine
        .approve(&raise.id, &user(), false, None)
        .await
        .unwrap();
    assert_eq!(
        r.outcome.result,
        Some(ActionResult::RaiseMaxParallel {
            project: "demo".into(),
            from: 1,
            to: 2
        })
    );
    let (config, _) = f.engine.load_project_files("demo").unwrap();
    assert_eq!(config.agents.max_parallel, 2);

    let patch = propose(
        Action::InstructionPatch,
        ActionParams {
            content: Some("run the tests first\n".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(matches!(patch.status, ProposeStatus::Pending { .. }));
    let r = f
        .engine
        .approve(&patch.id, &user(), false, None)
        .await
        .unwrap();
    assert!(r.outcome.succeeded, "{r:?}");
    assert_eq!(
        std::fs::read_to_string(f.engine.instructions_path("dev-1")).unwrap(),
        "run the tests first\n"
    );
    let empty = propose(Action::InstructionPatch, ActionParams::default())
        .await
        .unwrap();
    let r = f
        .engine
        .approve(&empty.id, &user(), false, None)
        .await
        .unwrap();
    assert!(!r.outcome.succeeded);
    assert!(r.outcome.diagnostic.unwrap().contains("has none"));
}
