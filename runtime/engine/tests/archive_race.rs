//! Archiving a task while another engine delivers its prompts (issue 18):
//! the archive purges the task's queued and reserved rows and advances its
//! queue generation in one transaction, so once it wins no prompt of the
//! task is delivered or acknowledged, and stale work does not come back —
//! not even if the task were unarchived and a row resurrected. A real race:
//! two engines (two connection pools) on one SQLite store on disk, on two
//! runtime threads, looped a bounded number of rounds.

use std::time::{Duration, Instant};

use berth_engine::{EventFilter, NewPrompt, PromptStatus, SessionStatus};
use berth_policy::autonomy::Approval;

use crate::common::{Fixture, events_of, user};

/// Rounds of the race; each archives one task mid-delivery. Bounded for CI.
const ROUNDS: usize = 6;
/// Prompts queued for the task in each round.
const PROMPTS: usize = 12;

/// A few random microseconds (the clock's low bits): where in a delivery
/// the archive lands moves from one prompt to the next.
fn jitter() -> Duration {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    Duration::from_micros(u64::from(n % 2000))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_racing_delivery_wins_for_good() {
    let started = Instant::now();
    let f = Fixture::new().await;
    f.up_runner("dev-1").await;
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();
    let deliverer = std::sync::Arc::new(f.second().await);
    let (mut total_acked, mut total_purged, mut total_lost) = (0, 0, 0);
    for round in 0..ROUNDS {
        let task = f.done_task("dev-1", &format!("round {round}")).await;
        let s = f
            .engine
            .open_session("dev-1", &task, &user())
            .await
            .unwrap();
        let mut sent = Vec::new();
        for i in 0..PROMPTS {
            let new = NewPrompt {
                task: Some(task.clone()),
                ..NewPrompt::message("dev-1", &format!("round {round} step {i}"))
            };
            sent.push(f.engine.send_prompt(new, &user()).await.unwrap().prompt.id);
        }
        // The deliverer: another engine, on another thread.
        let worker = {
            let (deliverer, session) = (deliverer.clone(), s.id.clone());
            tokio::spawn(async move {
                let mut refused = 0;
                while let Some(r) = deliverer.reserve_prompt("dev-1").await.unwrap() {
                    std::thread::sleep(jitter());
                    if deliverer.acknowledge_prompt(&r.token).await.is_err() {
                        refused += 1;
                    }
                    let _ = deliverer.finish_turn(&session, false).await.unwrap();
                }
                refused
            })
        };
        // The archive lands after a few deliveries, at a moving point.
        let want = 1 + round % 4;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let acked = events_of(&f.engine, "prompt.acknowledged")
                .await
                .iter()
                .filter(|e| e.task.as_deref() == Some(task.as_str()))
                .count();
            if acked >= want {
                break;
            }
            assert!(Instant::now() < deadline, "nothing was delivered");
            tokio::time::sleep(jitter()).await;
        }
        f.engine.archive_task(&task, &user()).await.unwrap();
        let refused = worker.await.unwrap();

        // Nothing of the task delivered or acknowledged after the archive.
        let events = f.engine.events(&EventFilter::default()).await.unwrap();
        let archived = events
            .iter()
            .find(|e| e.kind == "task.archived" && e.task.as_deref() == Some(task.as_str()))
            .expect("task.archived")
            .id;
        for e in &events {
            let of_it = sent.iter().any(|p| e.payload["prompt"] == p.as_str());
            if of_it && (e.kind == "prompt.delivered" || e.kind == "prompt.acknowledged") {
                assert!(e.id < archived, "{} after the archive: {e:?}", e.kind);
            }
        }
        // Every prompt ended acknowledged before it or purged by it.
        let (mut acked, mut purged) = (0, 0);
        for id in &sent {
            match f.engine.prompt(id).await.unwrap().status {
                PromptStatus::Acknowledged => acked += 1,
                PromptStatus::Purged => purged += 1,
                other => panic!("{id} is {other:?} after the archive"),
            }
        }
        assert_eq!(acked + purged, PROMPTS);
        assert!(refused <= 1, "at most the one in flight loses: {refused}");
        assert_eq!(
            f.engine.session(&s.id).await.unwrap().status,
            SessionStatus::Ended
        );
        let purge = events_of(&f.engine, "prompt.purged")
            .await
            .into_iter()
            .find(|e| e.task.as_deref() == Some(task.as_str()));
        if purged > 0 {
            let purge = purge.expect("prompt.purged");
            assert_eq!(purge.payload["generation"], 1, "{purge:?}");
        }
        let late = NewPrompt {
            task: Some(task.clone()),
            ..NewPrompt::message("dev-1", "too late")
        };
        assert!(f.engine.send_prompt(late, &user()).await.is_err());

        // Stale work does not come back. Were the task unarchived (berth
        // has no such command; the store is written as one would) and a
        // row of the old generation made queued again (a writer that read
        // it before the archive), it is purged, never delivered; a prompt
        // sent now, of the new generation, is.
        let pool = f.engine.store().pool();
        sqlx::query("UPDATE tasks SET archived_at = NULL WHERE id = $1")
            .bind(&task)
            .execute(pool)
            .await
            .unwrap();
        let stale = &sent[PROMPTS - 1];
        sqlx::query(
            "UPDATE prompts SET status = 'queued', token = NULL, reason = NULL, session_id = NULL \
             WHERE id = $1",
        )
        .bind(stale)
        .execute(pool)
        .await
        .unwrap();
        let s2 = f
            .engine
            .open_session("dev-1", &task, &user())
            .await
            .unwrap();
        let fresh = NewPrompt {
            task: Some(task.clone()),
            ..NewPrompt::message("dev-1", "after the unarchive")
        };
        let fresh = f.engine.send_prompt(fresh, &user()).await.unwrap().prompt;
        assert!(fresh.generation >= 1, "{fresh:?}");
        let r = deliverer.reserve_prompt("dev-1").await.unwrap().unwrap();
        assert_eq!(r.prompt.id, fresh.id, "the stale row is not delivered");
        assert_eq!(
            f.engine.prompt(stale).await.unwrap().status,
            PromptStatus::Purged
        );
        deliverer.acknowledge_prompt(&r.token).await.unwrap();
        deliverer.finish_turn(&s2.id, false).await.unwrap();
        deliverer
            .end_session(&s2.id, "round over", &user())
            .await
            .unwrap();
        total_acked += acked;
        total_purged += purged;
        total_lost += refused;
    }
    // The race was run, not missed: some rounds purged prompts in flight.
    assert!(
        total_purged > 0,
        "every round delivered all before the archive"
    );
    eprintln!(
        "archive raced delivery: {ROUNDS} rounds, {total_acked} acknowledged, {total_purged} purged \
         ({total_lost} of them reserved in flight when the archive won), {:?}",
        started.elapsed()
    );
}
