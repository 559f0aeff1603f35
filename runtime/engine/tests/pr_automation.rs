#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Per-PR automation against a real store, forge, checks and noop agent:
//! the auto-fix cycle step by step (pending checks end it, a failed check
//! prompts once, the agent's fix commit sends the task back to review, a
//! green head is clean), identical snapshots never prompt twice (also from
//! another process), ten distinct failures give exactly ten rounds and the
//! eleventh pauses, a busy session's pending prompt is replaced without a
//! round, no promptable session is a per-PR error that opens none;
//! auto-merge proposes once per readiness, waits for a person into a
//! protected branch, is not retried after a refusal until the readiness
//! changes, and a crash before its record proposes nothing twice;
//! lifecycle prompts (review requested with its quiet baseline and
//! re-arming, reviewer rebinding, terminal entry once); archiving stops
//! it all.

use crate::common;

use berth_engine::pr_automation::{FixPass, MergePass, SwitchChange};
use berth_engine::{AgentImpl, Engine, NewComment, PromptStatus, TaskStatus};
use common::{Fixture, named, user};

/// `[[checks]]` that fails until the noop agent's fix file is on the head.
const FIX_CHECK: &str =
    "\n[[checks]]\nname = \"fixed\"\ncommand = \"cat noop/*.fix.md\"\ntimeout_secs = 60\n";

fn edit_config(f: &Fixture, edit: impl FnOnce(String) -> String) {
    let cfg = f.dir.path().join("state/projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, edit(text)).unwrap();
}

/// Project `demo` (with `extra` appended to its berth.toml), noop agent
/// `dev-1` with PR #1 open for its task; the task's id.
async fn pr_open(extra: &str) -> (Fixture, String) {
    let f = Fixture::new().await;
    edit_config(&f, |t| format!("{t}{extra}"));
    f.agent("dev-1", AgentImpl::Noop).await;
    let task = f
        .engine
        .create_task("demo", "automated", &user())
        .await
        .unwrap();
    f.engine.run_agent(&named("dev-1"), true).await.unwrap();
    assert_eq!(f.engine.pr("1").await.unwrap().status.as_str(), "open");
    (f, task.id)
}

fn fix_on() -> SwitchChange {
    SwitchChange {
        fix: Some(true),
        ..SwitchChange::default()
    }
}

async fn pending_kinds(engine: &Engine) -> Vec<String> {
    engine
        .prompt_queue(Some("dev-1"))
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.kind)
        .collect()
}

async fn count_events(engine: &Engine, kind: &str) -> usize {
    engine
        .events(&Default::default())
        .await
        .unwrap()
        .iter()
        .filter(|e| e.kind == kind)
        .count()
}

async fn comment(engine: &Engine, body: &str) {
    let c = NewComment {
        body: body.into(),
        ..NewComment::default()
    };
    engine.comment_pr("1", &c, &user()).await.unwrap();
}

/// The agent's side of a turn, without a program: take the prompt, accept
/// it, end the turn.
async fn take_prompt(engine: &Engine) -> berth_engine::Prompt {
    let r = engine.reserve_prompt("dev-1").await.unwrap().unwrap();
    engine.acknowledge_prompt(&r.token).await.unwrap();
    engine.finish_turn(&r.session.id, false).await.unwrap();
    r.prompt
}

#[tokio::test]
async fn a_failed_check_prompts_once_the_fix_goes_back_to_review_and_a_green_head_is_clean() {
    let (f, task) = pr_open(FIX_CHECK).await;
    // Turned on before any check ran: pending checks end the cycle.
    let e = f
        .engine
        .set_pr_automation("1", fix_on(), &user())
        .await
        .unwrap();
    assert_eq!(e.fix, FixPass::ChecksPending, "{e:?}");
    assert!(pending_kinds(&f.engine).await.is_empty());

    // The watcher runs the check (it fails) and prompts: round 1.
    f.engine.watch_prs().await.unwrap();
    let a = f.engine.pr_automation("1").await.unwrap();
    assert_eq!(a.fix_rounds, 1, "{a:?}");
    assert_eq!(a.chips, vec!["Auto-fix 1/10".to_string()]);
    let queue = f.engine.prompt_queue(Some("dev-1")).await.unwrap();
    assert_eq!(queue.len(), 1, "{queue:?}");
    assert_eq!(queue[0].kind, "auto_fix");
    assert!(
        queue[0].body.contains("Check `fixed` failed"),
        "{}",
        queue[0].body
    );
    assert!(!queue[0].body.contains("{{pr.feedback}}"));

    // The same snapshot again, here and from another process: no prompt.
    f.engine.watch_prs().await.unwrap();
    let other = f.second().await;
    let e = other.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(e.fix, FixPass::Unchanged);
    assert_eq!(f.engine.prompt_queue(Some("dev-1")).await.unwrap().len(), 1);
    assert_eq!(count_events(&f.engine, "automation.fix_prompted").await, 1);

    // The noop agent answers with a fix commit: the task went back to work
    // on delivery, and back to review when the watcher saw the head move.
    let head_before = f.engine.pr_feedback("1").await.unwrap().head;
    f.engine.run_agent(&named("dev-1"), true).await.unwrap();
    assert_eq!(
        f.engine.task(&task).await.unwrap().status,
        TaskStatus::InProgress
    );
    let fb = f.engine.pr_feedback("1").await.unwrap();
    assert_ne!(
        fb.head, head_before,
        "the fix was pushed to the PR's branch"
    );
    f.engine.watch_prs().await.unwrap();
    assert_eq!(
        f.engine.task(&task).await.unwrap().status,
        TaskStatus::InReview
    );
    assert_eq!(count_events(&f.engine, "task.back_to_work").await, 1);
    let fb = f.engine.pr_feedback("1").await.unwrap();
    assert!(fb.checks_green(), "{fb:?}");
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(e.fix, FixPass::Clean);
    assert!(pending_kinds(&f.engine).await.is_empty());
}

#[tokio::test]
async fn ten_distinct_failures_are_ten_rounds_the_eleventh_pauses_and_off_on_starts_over() {
    let (f, _) = pr_open("").await;
    f.engine
        .set_pr_automation("1", fix_on(), &user())
        .await
        .unwrap();
    for round in 1..=10 {
        comment(&f.engine, &format!("problem {round}")).await;
        let e = f.engine.evaluate_pr_automation("1").await.unwrap();
        let FixPass::Prompted { round: r, .. } = e.fix else {
            panic!("round {round}: {e:?}")
        };
        assert_eq!(r, round);
        let p = take_prompt(&f.engine).await;
        assert!(p.body.contains(&format!("problem {round}")), "{}", p.body);
    }
    comment(&f.engine, "problem 11").await;
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(e.fix, FixPass::Paused, "{e:?}");
    assert_eq!(e.automation.chips, vec!["Auto-fix 10/10", "paused"]);
    assert!(
        e.automation
            .last_error
            .as_deref()
            .unwrap()
            .contains("10/10")
    );
    assert!(pending_kinds(&f.engine).await.is_empty());
    // Exhausted: later passes do no feedback work, and send nothing.
    comment(&f.engine, "problem 12").await;
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(e.fix, FixPass::Exhausted);
    assert_eq!(count_events(&f.engine, "automation.fix_paused").await, 1);

    // Off and on again: the rounds start over.
    let off = SwitchChange {
        fix: Some(false),
        ..SwitchChange::default()
    };
    f.engine.set_pr_automation("1", off, &user()).await.unwrap();
    let e = f
        .engine
        .set_pr_automation("1", fix_on(), &user())
        .await
        .unwrap();
    let FixPass::Prompted { round, .. } = e.fix else {
        panic!("{e:?}")
    };
    assert_eq!(round, 1);
    assert!(!e.automation.fix_paused);
}

#[tokio::test]
async fn a_busy_sessions_pending_auto_fix_is_replaced_without_a_round() {
    let (f, _) = pr_open("").await;
    f.engine
        .set_pr_automation("1", fix_on(), &user())
        .await
        .unwrap();
    comment(&f.engine, "first").await;
    f.engine.evaluate_pr_automation("1").await.unwrap();
    // The agent takes it and is busy with its turn (not finished).
    let r = f.engine.reserve_prompt("dev-1").await.unwrap().unwrap();
    f.engine.acknowledge_prompt(&r.token).await.unwrap();
    comment(&f.engine, "second").await;
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    let FixPass::Prompted { round, sent, .. } = e.fix else {
        panic!("{e:?}")
    };
    assert_eq!((round, sent), (2, berth_engine::Sent::Queued));
    comment(&f.engine, "third").await;
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    let FixPass::Prompted { round, sent, .. } = e.fix else {
        panic!("{e:?}")
    };
    assert_eq!((round, sent), (2, berth_engine::Sent::Replaced));
    let queue = f.engine.prompt_queue(Some("dev-1")).await.unwrap();
    let pending: Vec<_> = queue
        .iter()
        .filter(|p| p.status == PromptStatus::Queued)
        .collect();
    assert_eq!(pending.len(), 1, "{queue:?}");
    assert!(pending[0].body.contains("third"), "{}", pending[0].body);
    assert!(pending[0].reason.as_deref().unwrap().starts_with("busy"));
}

#[tokio::test]
async fn no_promptable_session_is_an_error_on_the_pr_and_opens_none() {
    let (f, _) = pr_open("").await;
    let sessions = f.engine.sessions(Some("dev-1")).await.unwrap();
    assert_eq!(sessions.len(), 1);
    f.engine
        .end_session(&sessions[0].id, "the person ended it", &user())
        .await
        .unwrap();
    comment(&f.engine, "please fix").await;
    let e = f
        .engine
        .set_pr_automation("1", fix_on(), &user())
        .await
        .unwrap();
    let FixPass::Failed { error } = &e.fix else {
        panic!("{e:?}")
    };
    assert!(error.contains("no promptable session"), "{error}");
    assert_eq!(e.automation.last_error.as_deref(), Some(error.as_str()));
    assert_eq!(f.engine.sessions(Some("dev-1")).await.unwrap().len(), 1);
    assert!(pending_kinds(&f.engine).await.is_empty());
    assert_eq!(count_events(&f.engine, "automation.failed").await, 1);
    // Unstamped: once a session is open, the same feedback prompts.
    let task = f.engine.pr("1").await.unwrap().task.unwrap();
    f.engine
        .open_session("dev-1", &task, &user())
        .await
        .unwrap();
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert!(matches!(e.fix, FixPass::Prompted { round: 1, .. }), "{e:?}");
    assert_eq!(e.automation.last_error, None);
}

#[tokio::test]
async fn auto_merge_proposes_once_per_readiness_and_waits_for_a_person_into_main() {
    let (f, task) = pr_open("").await;
    let merge_on = SwitchChange {
        merge: Some(true),
        on_merged: Some(true),
        ..SwitchChange::default()
    };
    let e = f
        .engine
        .set_pr_automation("1", merge_on, &user())
        .await
        .unwrap();
    let MergePass::Proposed { action, status } = &e.merge else {
        panic!("{e:?}")
    };
    assert_eq!(status, "pending", "main is protected: a person approves");
    let again = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(again.merge, MergePass::Unchanged);

    // A crash after proposing, before the record: the next pass finds the
    // same proposal by its key and proposes nothing new. (The fault is
    // made by putting the row back as it was before the pass, as a kill -9
    // between proposing and recording leaves it.)
    let actions_before = f.engine.actions(&Default::default()).await.unwrap().len();
    sqlx::query("UPDATE pr_automation SET merge_signature = NULL, merge_action = NULL")
        .execute(f.engine.store().pool())
        .await
        .unwrap();
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    let MergePass::Proposed { action: same, .. } = &e.merge else {
        panic!("{e:?}")
    };
    assert_eq!(same, action);
    let actions_after = f.engine.actions(&Default::default()).await.unwrap().len();
    assert_eq!(actions_before, actions_after);

    // Approved, it merges; the terminal prompt comes once.
    f.engine
        .approve(action, &user(), false, None)
        .await
        .unwrap();
    assert_eq!(f.engine.pr("1").await.unwrap().status.as_str(), "merged");
    assert_eq!(f.engine.task(&task).await.unwrap().status, TaskStatus::Done);
    f.engine.watch_prs().await.unwrap();
    f.engine.watch_prs().await.unwrap();
    let lifecycle: Vec<_> = f
        .engine
        .prompt_queue(Some("dev-1"))
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.kind == "lifecycle")
        .collect();
    assert_eq!(lifecycle.len(), 1, "{lifecycle:?}");
    assert!(lifecycle[0].body.contains("PR #1"));
    assert!(lifecycle[0].body.contains("was merged"));
    let merges = f
        .engine
        .actions(&Default::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|a| a.action.kind() == "git_merge")
        .count();
    assert_eq!(merges, 1, "one merge, however often it was evaluated");
}

#[tokio::test]
async fn a_refused_merge_is_not_retried_until_the_readiness_changes() {
    let (f, _) = pr_open("").await;
    f.engine
        .set_autonomy("dev-1", "git_merge", berth_policy::Approval::Deny, &user())
        .await
        .unwrap();
    let merge_on = SwitchChange {
        merge: Some(true),
        ..SwitchChange::default()
    };
    let e = f
        .engine
        .set_pr_automation("1", merge_on, &user())
        .await
        .unwrap();
    let MergePass::Proposed { status, .. } = &e.merge else {
        panic!("{e:?}")
    };
    assert_eq!(status, "refused");
    assert!(e.automation.merge_failed);
    assert_eq!(e.automation.chips, vec!["merge failed"]);
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(e.merge, MergePass::Unchanged);
    // A new approval changes the readiness: proposed again.
    f.engine
        .review_pr("1", berth_engine::ReviewState::Approve, None, &user())
        .await
        .unwrap();
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert!(matches!(e.merge, MergePass::Proposed { .. }), "{e:?}");
    assert_eq!(
        count_events(&f.engine, "automation.merge_proposed").await,
        2
    );
}

#[tokio::test]
async fn review_requests_prompt_on_each_new_edge_after_a_quiet_baseline() {
    let (f, _) = pr_open("\n[review]\nlogin = \"alice\"\n").await;
    f.engine
        .request_pr_review("1", "alice", &user())
        .await
        .unwrap();
    // Already requested at the first observation: the quiet baseline.
    let on = SwitchChange {
        on_review_request: Some(true),
        ..SwitchChange::default()
    };
    let e = f.engine.set_pr_automation("1", on, &user()).await.unwrap();
    assert!(e.lifecycle.prompted.is_empty(), "{e:?}");
    // alice reviews (the request clears): re-armed; asked again: one prompt.
    f.engine
        .review_pr(
            "1",
            berth_engine::ReviewState::Approve,
            None,
            &berth_engine::Actor::user("alice"),
        )
        .await
        .unwrap();
    f.engine.evaluate_pr_automation("1").await.unwrap();
    f.engine
        .request_pr_review("1", "alice", &user())
        .await
        .unwrap();
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(e.lifecycle.prompted, vec!["review_requested"]);
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert!(e.lifecycle.prompted.is_empty());
    assert_eq!(pending_kinds(&f.engine).await, vec!["lifecycle"]);

    // The reviewer identity changes: rebound, baseline reset, no prompt.
    edit_config(&f, |t| t.replace("login = \"alice\"", "login = \"bob\""));
    f.engine
        .request_pr_review("1", "bob", &user())
        .await
        .unwrap();
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(e.lifecycle.rebound, Some(Some("bob".to_string())));
    assert!(e.lifecycle.prompted.is_empty());
    assert_eq!(
        count_events(&f.engine, "automation.reviewer_rebound").await,
        1
    );
    assert_eq!(pending_kinds(&f.engine).await, vec!["lifecycle"]);
}

#[tokio::test]
async fn a_closed_pr_prompts_once_and_stops_fix_and_merge() {
    let (f, _) = pr_open("").await;
    let on = SwitchChange {
        fix: Some(true),
        merge: Some(true),
        on_closed: Some(true),
        ..SwitchChange::default()
    };
    // Not ready yet (an open thread), so nothing is merged first.
    comment(&f.engine, "not yet").await;
    f.engine.set_pr_automation("1", on, &user()).await.unwrap();
    take_prompt(&f.engine).await;
    f.engine
        .close_pr("1", &user(), Some("superseded"))
        .await
        .unwrap();
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(
        (e.fix.clone(), e.merge.clone()),
        (FixPass::Off, MergePass::Off)
    );
    assert_eq!(e.lifecycle.prompted, vec!["closed"]);
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert!(e.lifecycle.prompted.is_empty());
    assert_eq!(pending_kinds(&f.engine).await, vec!["lifecycle"]);
}

#[tokio::test]
async fn archiving_the_task_purges_its_automation_and_no_pass_wakes_it() {
    let (f, task) = pr_open("").await;
    let on = SwitchChange {
        fix: Some(true),
        on_closed: Some(true),
        ..SwitchChange::default()
    };
    f.engine.set_pr_automation("1", on, &user()).await.unwrap();
    // Closed (the task is returned) and archived before any pass saw it:
    // its terminal prompt never comes.
    f.engine.close_pr("1", &user(), None).await.unwrap();
    f.engine.archive_task(&task, &user()).await.unwrap();
    let passes = f.engine.automate_prs().await.unwrap();
    assert!(passes.is_empty(), "{passes:?}");
    f.engine.watch_prs().await.unwrap();
    assert!(
        f.engine
            .set_pr_automation("1", fix_on(), &user())
            .await
            .is_err()
    );
    assert!(pending_kinds(&f.engine).await.is_empty());
    assert_eq!(
        count_events(&f.engine, "automation.lifecycle_prompted").await,
        0
    );
}

#[tokio::test]
async fn a_projects_prompt_edit_is_used_and_kept_when_its_switches_change() {
    let (f, _) = pr_open("").await;
    let edited = "Fix it, please:\n{{pr.feedback}}\nThanks.";
    f.engine
        .set_prompt_template("demo", "ci-auto-fix", Some(edited), &user())
        .await
        .unwrap();
    f.engine
        .set_pr_automation("1", fix_on(), &user())
        .await
        .unwrap();
    comment(&f.engine, "the edge case").await;
    f.engine.evaluate_pr_automation("1").await.unwrap();
    let p = take_prompt(&f.engine).await;
    assert!(p.body.contains("Fix it, please:"), "{}", p.body);
    assert!(p.body.contains("the edge case"));
    let t = f
        .engine
        .prompt_template("demo", "ci-auto-fix")
        .await
        .unwrap();
    assert!(t.edited);
    assert_eq!(t.body, edited);
}

#[tokio::test]
async fn a_lifecycle_success_never_erases_a_same_pass_auto_fix_error() {
    let (f, _) = pr_open("").await;
    let sessions = f.engine.sessions(Some("dev-1")).await.unwrap();
    f.engine
        .end_session(&sessions[0].id, "ended", &user())
        .await
        .unwrap();
    comment(&f.engine, "fix this").await;
    let on = SwitchChange {
        fix: Some(true),
        on_review_request: Some(true),
        ..SwitchChange::default()
    };
    f.engine.set_pr_automation("1", on, &user()).await.unwrap();
    f.engine
        .request_pr_review("1", "carol", &user())
        .await
        .unwrap();
    // One pass: the review request prompts (queued durably, waiting for a
    // session), auto-fix fails for want of a session; its error stays.
    let e = f.engine.evaluate_pr_automation("1").await.unwrap();
    assert_eq!(e.lifecycle.prompted, vec!["review_requested"]);
    assert!(matches!(e.fix, FixPass::Failed { .. }), "{e:?}");
    let error = e.automation.last_error.unwrap();
    assert!(error.contains("no promptable session"), "{error}");
}
