#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A PR's review feedback in the engine, against a real store and forge:
//! berth's own status comments are marked `bot` and never block readiness;
//! an agent's `pr_comment` is written once however often its proposal is
//! retried with its key, on its task's PR by default; an agent with no PR
//! gets a failed action that says what to name.

use crate::common;

use berth_engine::{
    ActionParams, Actor, AgentImpl, AuthorKind, NewComment, Proposal, ProposeStatus,
};
use berth_policy::Action;
use common::{Fixture, named, user};

#[tokio::test]
async fn bot_threads_never_block_and_an_agents_comment_is_written_once() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Noop).await;
    let task = f.engine.create_task("demo", "t", &user()).await.unwrap();
    f.engine.run_agent(&named("dev-1"), true).await.unwrap();
    let feedback = f.engine.pr_feedback("1").await.unwrap();
    assert!(feedback.ready, "{feedback:?}");

    // berth's status comment: a bot thread, not blocking.
    let status = NewComment {
        body: "checks: 0 configured".into(),
        ..NewComment::default()
    };
    let c = f
        .engine
        .comment_pr("1", &status, &Actor::system())
        .await
        .unwrap();
    assert_eq!(c.author_kind, AuthorKind::Bot);
    let feedback = f.engine.pr_feedback("1").await.unwrap();
    assert_eq!((feedback.unresolved_threads, feedback.ready), (0, true));

    // The agent's comment (seeded auto_approve), on its task's PR; the same
    // key again replays it and writes nothing more.
    let propose = || {
        Proposal::by_agent(&named("dev-1"), Action::PrComment)
            .params(ActionParams {
                body: Some("I will fix it".into()),
                ..ActionParams::default()
            })
            .task(Some(task.id.clone()))
            .key("comment-once")
    };
    let first = f.engine.propose(propose(), None).await.unwrap();
    let ProposeStatus::Executed { outcome } = &first.status else {
        panic!("{:?}", first.status)
    };
    assert!(outcome.succeeded, "{outcome:?}");
    let again = f.engine.propose(propose(), None).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.id, first.id);
    let c = f.engine.pr_threads("1").await.unwrap();
    let by_agent: Vec<_> = c
        .threads
        .iter()
        .flat_map(|t| &t.comments)
        .filter(|m| m.author_kind == AuthorKind::Agent)
        .collect();
    assert_eq!(by_agent.len(), 1, "{c:?}");
    assert_eq!(by_agent[0].author, "dev-1");
    let feedback = f.engine.pr_feedback("1").await.unwrap();
    assert_eq!((feedback.unresolved_threads, feedback.ready), (1, false));

    // An agent with no PR for its task: the action fails, saying what to name.
    f.agent("dev-2", AgentImpl::Noop).await;
    let p = f
        .engine
        .propose(
            Proposal::by_agent(&named("dev-2"), Action::PrComment).params(ActionParams {
                body: Some("hello".into()),
                ..ActionParams::default()
            }),
            None,
        )
        .await
        .unwrap();
    let ProposeStatus::Executed { outcome } = &p.status else {
        panic!("{:?}", p.status)
    };
    assert!(!outcome.succeeded);
    assert!(
        outcome
            .diagnostic
            .as_deref()
            .unwrap()
            .contains("agent `dev-2` has no open PR for its task: name the PR (`pr`)"),
        "{outcome:?}"
    );
}
