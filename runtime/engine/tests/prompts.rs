//! Sessions and the durable prompt queue (issue 18) against the real store:
//! delivery to an idle session, queueing while busy (a running turn, an
//! agent awaiting approval), coalescing and replacement, no surprise
//! session, a task's delete racing delivery, and `kill -9` of a real
//! process between reservation and acknowledgement.

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use berth_engine::{
    AgentImpl, Engine, EventFilter, NewPrompt, PromptKey, PromptStatus, Sent, SessionStatus,
    StateDir,
};
use berth_policy::Action;

use crate::common::{Fixture, events_of, named, user};

/// `dev-1` with a todo task in `demo`: the fixture and the task's id.
async fn agent_with_task() -> (Fixture, String) {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    let t = f
        .engine
        .create_task("demo", "write the docs", &user())
        .await
        .unwrap();
    (f, t.id)
}

/// `dev-1`'s session for `task`, running a turn (its first prompt
/// delivered and accepted).
async fn in_a_turn(f: &Fixture, task: &str) -> berth_engine::Session {
    let s = f.engine.open_session("dev-1", task, &user()).await.unwrap();
    f.engine
        .send_prompt(NewPrompt::message("dev-1", "work"), &user())
        .await
        .unwrap();
    let turn = f.engine.reserve_prompt("dev-1").await.unwrap().unwrap();
    f.engine.acknowledge_prompt(&turn.token).await.unwrap();
    assert_eq!(turn.session.id, s.id);
    turn.session
}

fn key(pr: &str, event: &str) -> PromptKey {
    PromptKey {
        repository: "demo".into(),
        pr: Some(pr.into()),
        event: event.into(),
    }
}

fn observation(task: &str, kind: &str, body: &str, key: PromptKey, replace: bool) -> NewPrompt {
    NewPrompt {
        agent: "dev-1".into(),
        task: Some(task.into()),
        kind: kind.into(),
        body: body.into(),
        key: Some(key),
        replace,
    }
}

#[tokio::test]
async fn a_prompt_to_an_idle_session_is_delivered_at_once_and_acknowledged() {
    let (f, task) = agent_with_task().await;
    let s = f
        .engine
        .open_session("dev-1", &task, &user())
        .await
        .unwrap();
    assert_eq!(s.status, SessionStatus::Idle);
    assert!(s.primary);
    let again = f
        .engine
        .open_session("dev-1", &task, &user())
        .await
        .unwrap();
    assert_eq!(again.id, s.id, "one primary session per task");

    let sent = f
        .engine
        .send_prompt(NewPrompt::message("dev-1", "read README.md"), &user())
        .await
        .unwrap();
    assert_eq!(sent.sent, Sent::Queued);
    assert!(sent.deliverable, "{:?}", sent.prompt.reason);
    assert_eq!(sent.prompt.task.as_deref(), Some(task.as_str()));

    let r = f
        .engine
        .reserve_prompt("dev-1")
        .await
        .unwrap()
        .expect("delivered");
    assert_eq!(r.prompt.id, sent.prompt.id);
    assert_eq!((r.attempt, r.prompt.status), (1, PromptStatus::Reserved));
    assert_eq!(r.session.status, SessionStatus::Running);
    assert_eq!(r.prompt.session.as_deref(), Some(s.id.as_str()));
    let acked = f.engine.acknowledge_prompt(&r.token).await.unwrap();
    assert_eq!(acked.status, PromptStatus::Acknowledged);
    assert!(
        f.engine
            .prompt_queue(Some("dev-1"))
            .await
            .unwrap()
            .is_empty()
    );
    // A token acknowledges once.
    assert!(f.engine.acknowledge_prompt(&r.token).await.is_err());

    let log: Vec<(String, String)> = f
        .engine
        .events(&EventFilter::default())
        .await
        .unwrap()
        .into_iter()
        .filter(|e| e.kind.starts_with("prompt.") || e.kind.starts_with("session."))
        .map(|e| (e.kind, e.actor.to_string()))
        .collect();
    assert_eq!(
        log,
        [
            ("session.opened".to_string(), "user:ada".to_string()),
            ("prompt.queued".into(), "user:ada".into()),
            ("prompt.delivered".into(), "system:berth".into()),
            ("prompt.acknowledged".into(), "system:berth".into()),
        ]
    );
}

#[tokio::test]
async fn a_busy_session_queues_without_interrupting_and_delivers_after_the_turn() {
    let (f, task) = agent_with_task().await;
    let s = in_a_turn(&f, &task).await;

    // The turn runs: the next prompt waits, and says why.
    let second = f
        .engine
        .send_prompt(NewPrompt::message("dev-1", "second"), &user())
        .await
        .unwrap();
    assert!(!second.deliverable);
    let why = second.prompt.reason.clone().unwrap();
    assert!(why.starts_with("busy: session"), "{why}");
    assert!(f.engine.reserve_prompt("dev-1").await.unwrap().is_none());
    assert_eq!(
        f.engine.session(&s.id).await.unwrap().status,
        SessionStatus::Running
    );

    // The turn ends waiting for input: the queued prompt goes now.
    assert!(f.engine.finish_turn(&s.id, true).await.unwrap());
    assert_eq!(
        f.engine.session(&s.id).await.unwrap().status,
        SessionStatus::WaitingForInput
    );
    let next = f.engine.reserve_prompt("dev-1").await.unwrap().unwrap();
    assert_eq!(next.prompt.id, second.prompt.id);
    // A failed handoff puts it back at its place and the session back.
    let back = f
        .engine
        .release_prompt(&next.token, "the program did not start")
        .await
        .unwrap();
    assert_eq!(back.status, PromptStatus::Queued);
    assert_eq!(
        f.engine.session(&s.id).await.unwrap().status,
        SessionStatus::WaitingForInput
    );
    let again = f.engine.reserve_prompt("dev-1").await.unwrap().unwrap();
    assert_eq!(
        (again.prompt.id.as_str(), again.attempt),
        (second.prompt.id.as_str(), 2)
    );
    f.engine.acknowledge_prompt(&again.token).await.unwrap();
    assert!(f.engine.finish_turn(&s.id, false).await.unwrap());
}

#[tokio::test]
async fn an_agent_awaiting_approval_is_busy() {
    let (f, task) = agent_with_task().await;
    f.engine
        .up(&named("dev-1"), &named("demo"), None, &user())
        .await
        .unwrap();
    let claimed = f.engine.claim_task("dev-1").await.unwrap().unwrap();
    assert_eq!(claimed.id, task);
    f.engine
        .open_session("dev-1", &task, &user())
        .await
        .unwrap();
    // A commit of its delivery waits for a person: the agent awaits approval.
    f.engine
        .set_autonomy(
            "dev-1",
            "git_commit",
            berth_policy::Approval::RequireApproval,
            &user(),
        )
        .await
        .unwrap();
    let p = f
        .engine
        .propose(
            berth_engine::Proposal::by_agent(&named("dev-1"), Action::GitCommit)
                .task(Some(task.clone())),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        f.engine.agent("dev-1").await.unwrap().status,
        berth_engine::AgentStatus::AwaitingApproval
    );
    let sent = f
        .engine
        .send_prompt(NewPrompt::message("dev-1", "status?"), &user())
        .await
        .unwrap();
    assert!(!sent.deliverable);
    assert!(
        sent.prompt
            .reason
            .as_deref()
            .unwrap()
            .contains("awaits a person's approval"),
        "{:?}",
        sent.prompt.reason
    );
    assert!(f.engine.reserve_prompt("dev-1").await.unwrap().is_none());
    // Denied: the agent is not busy with it any more (its task returned).
    f.engine.deny(&p.id, &user(), None).await.unwrap();
    assert_ne!(
        f.engine.agent("dev-1").await.unwrap().status,
        berth_engine::AgentStatus::AwaitingApproval
    );
}

#[tokio::test]
async fn identical_observations_coalesce_and_different_events_or_prs_do_not() {
    let (f, task) = agent_with_task().await;
    // A turn runs, so everything below waits in the queue.
    let s = in_a_turn(&f, &task).await;

    let send = |pr: &'static str, event: &'static str| {
        let engine = &f.engine;
        let task = task.clone();
        async move {
            engine
                .send_prompt(
                    observation(&task, "lifecycle", "PR changed", key(pr, event), false),
                    &berth_engine::Actor::system(),
                )
                .await
                .unwrap()
        }
    };
    let a = send("7", "review_requested").await;
    let b = send("7", "review_requested").await;
    assert_eq!((a.sent, b.sent), (Sent::Queued, Sent::Coalesced));
    assert_eq!(b.prompt.id, a.prompt.id);
    assert_eq!(b.prompt.coalesced, 1);
    let other_event = send("7", "merged").await;
    let other_pr = send("8", "review_requested").await;
    assert_eq!(
        (other_event.sent, other_pr.sent),
        (Sent::Queued, Sent::Queued)
    );
    let queue = f.engine.prompt_queue(Some("dev-1")).await.unwrap();
    assert_eq!(queue.len(), 3, "{queue:#?}");
    assert_eq!(events_of(&f.engine, "prompt.coalesced").await.len(), 1);

    // Delivered in order, one per turn.
    let mut order = Vec::new();
    f.engine.finish_turn(&s.id, false).await.unwrap();
    while let Some(r) = f.engine.reserve_prompt("dev-1").await.unwrap() {
        order.push(r.prompt.id.clone());
        f.engine.acknowledge_prompt(&r.token).await.unwrap();
        f.engine.finish_turn(&s.id, false).await.unwrap();
    }
    assert_eq!(
        order,
        [a.prompt.id, other_event.prompt.id, other_pr.prompt.id]
    );
}

#[tokio::test]
async fn a_pending_prompt_of_the_same_kind_for_the_same_pr_is_replaced_when_asked() {
    let (f, task) = agent_with_task().await;
    in_a_turn(&f, &task).await;

    let system = berth_engine::Actor::system();
    let fix = |body: &str, pr: &str, event: &str, replace: bool| {
        observation(&task, "auto_fix", body, key(pr, event), replace)
    };
    let first = f
        .engine
        .send_prompt(fix("CI failed at a1", "7", "ci@a1", true), &system)
        .await
        .unwrap();
    let second = f
        .engine
        .send_prompt(fix("CI failed at b2", "7", "ci@b2", true), &system)
        .await
        .unwrap();
    assert_eq!((first.sent, second.sent), (Sent::Queued, Sent::Replaced));
    assert_eq!(second.prompt.id, first.prompt.id);
    assert_eq!(second.prompt.body, "CI failed at b2");
    // Another PR's, and one that does not ask to replace, are appended.
    let other_pr = f
        .engine
        .send_prompt(fix("CI failed at c3", "8", "ci@c3", true), &system)
        .await
        .unwrap();
    let appended = f
        .engine
        .send_prompt(fix("CI failed at d4", "7", "ci@d4", false), &system)
        .await
        .unwrap();
    assert_eq!((other_pr.sent, appended.sent), (Sent::Queued, Sent::Queued));
    let bodies: Vec<String> = f
        .engine
        .prompt_queue(Some("dev-1"))
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.body)
        .collect();
    assert_eq!(
        bodies,
        ["CI failed at b2", "CI failed at c3", "CI failed at d4"]
    );
    let replaced = events_of(&f.engine, "prompt.replaced").await;
    assert_eq!(replaced.len(), 1);
    assert_eq!(replaced[0].actor.to_string(), "system:berth");
    // Replacing needs the key of what it replaces.
    let mut keyless = fix("x", "7", "ci", true);
    keyless.key = None;
    assert!(f.engine.send_prompt(keyless, &system).await.is_err());
}

#[tokio::test]
async fn a_prompt_without_a_promptable_session_waits_and_never_opens_one() {
    let (f, task) = agent_with_task().await;
    let sent = f
        .engine
        .send_prompt(NewPrompt::message("dev-1", "hello"), &user())
        .await
        .unwrap();
    assert!(!sent.deliverable);
    assert!(
        sent.prompt
            .reason
            .as_deref()
            .unwrap()
            .starts_with("no promptable session"),
        "{:?}",
        sent.prompt.reason
    );
    assert!(f.engine.reserve_prompt("dev-1").await.unwrap().is_none());
    assert!(f.engine.sessions(Some("dev-1")).await.unwrap().is_empty());
    // A session opens: the prompt goes to it.
    let s = f
        .engine
        .open_session("dev-1", &task, &user())
        .await
        .unwrap();
    let r = f.engine.reserve_prompt("dev-1").await.unwrap().unwrap();
    assert_eq!(r.prompt.id, sent.prompt.id);
    assert_eq!(r.prompt.task.as_deref(), Some(task.as_str()));
    assert_eq!(r.session.id, s.id);
}

/// A task deleted while another process delivers its prompts: every prompt
/// ends acknowledged before the delete or purged by it, nothing is
/// delivered or acknowledged after it, and the task takes no prompt again.
#[tokio::test]
async fn a_delete_racing_delivery_wins_for_good() {
    let (f, task) = agent_with_task().await;
    let s = f
        .engine
        .open_session("dev-1", &task, &user())
        .await
        .unwrap();
    for i in 0..20 {
        f.engine
            .send_prompt(NewPrompt::message("dev-1", &format!("step {i}")), &user())
            .await
            .unwrap();
    }
    let deliverer = f.second().await;
    let session = s.id.clone();
    let worker = tokio::spawn(async move {
        let mut refused = 0;
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(20) {
            match deliverer.reserve_prompt("dev-1").await.unwrap() {
                Some(r) => {
                    tokio::task::yield_now().await;
                    if deliverer.acknowledge_prompt(&r.token).await.is_err() {
                        refused += 1;
                    }
                    deliverer.finish_turn(&session, false).await.unwrap();
                }
                None => break,
            }
        }
        refused
    });
    // The delete lands while delivery is under way.
    let deadline = Instant::now() + Duration::from_secs(20);
    while events_of(&f.engine, "prompt.acknowledged").await.len() < 5 {
        assert!(Instant::now() < deadline, "nothing was delivered");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    f.engine.remove_task(&task, &user()).await.unwrap();
    let refused = worker.await.unwrap();

    let events = f.engine.events(&EventFilter::default()).await.unwrap();
    let removed = events
        .iter()
        .find(|e| e.kind == "task.removed")
        .expect("task.removed")
        .id;
    for e in &events {
        if e.kind == "prompt.delivered" || e.kind == "prompt.acknowledged" {
            assert!(e.id < removed, "{} after the delete: {e:?}", e.kind);
        }
    }
    let purged = events_of(&f.engine, "prompt.purged").await;
    assert_eq!(purged.len(), 1);
    let purged_ids = purged[0].payload["prompts"].as_array().unwrap().len();
    let acked = events_of(&f.engine, "prompt.acknowledged").await.len();
    assert_eq!(
        acked + purged_ids,
        20,
        "acknowledged {acked}, purged {purged_ids}"
    );
    assert!(refused <= 1, "at most the one in flight loses: {refused}");
    assert!(
        f.engine
            .prompt_queue(Some("dev-1"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        f.engine.session(&s.id).await.unwrap().status,
        SessionStatus::Ended
    );
    assert!(f.engine.reserve_prompt("dev-1").await.unwrap().is_none());
    let late = NewPrompt {
        task: Some(task.clone()),
        ..NewPrompt::message("dev-1", "too late")
    };
    assert!(f.engine.send_prompt(late, &user()).await.is_err());
    eprintln!("delete raced delivery: {acked} acknowledged, {purged_ids} purged");
}

/// The environment that makes [`crash_child`] the delivering process.
const CRASH_STATE: &str = "BERTH_PROMPT_CRASH_STATE";
const CRASH_LOG: &str = "BERTH_PROMPT_CRASH_LOG";

/// Rounds of the kill -9 test: each starts one process (the test binary
/// itself) and kills it mid-delivery. Bounded for CI.
const CRASH_ROUNDS: usize = 3;
const CRASH_PROMPTS: usize = 8;

fn append(log: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    writeln!(f, "{line}").unwrap();
    f.sync_data().unwrap();
}

/// A few random milliseconds (no randomness crate: the clock's low bits).
fn jitter(max_ms: u64) -> Duration {
    let n = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos() as u64;
    Duration::from_millis((n / 1000) % (max_ms + 1))
}

/// Not a test on its own: run by [`kill_9_between_reservation_and_acknowledgement_loses_nothing`]
/// as a separate process (the test binary with `--exact`), it delivers
/// `dev-1`'s prompts and logs each step until it is killed.
#[tokio::test]
async fn crash_child() {
    let (Ok(state), Ok(log)) = (std::env::var(CRASH_STATE), std::env::var(CRASH_LOG)) else {
        return;
    };
    let log = Path::new(&log);
    let engine = Engine::open(StateDir::new(state)).await.unwrap();
    loop {
        let Some(r) = engine.reserve_prompt("dev-1").await.unwrap() else {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        };
        append(log, &format!("reserved {}", r.prompt.id));
        tokio::time::sleep(jitter(8)).await;
        append(log, &format!("accepted {}", r.prompt.id));
        tokio::time::sleep(jitter(8)).await;
        engine.acknowledge_prompt(&r.token).await.unwrap();
        append(log, &format!("acked {}", r.prompt.id));
        engine.finish_turn(&r.session.id, false).await.unwrap();
    }
}

#[tokio::test]
async fn kill_9_between_reservation_and_acknowledgement_loses_nothing() {
    let started = Instant::now();
    let mut redelivered = 0;
    for round in 0..CRASH_ROUNDS {
        let (f, task) = agent_with_task().await;
        f.engine
            .open_session("dev-1", &task, &user())
            .await
            .unwrap();
        let mut sent = Vec::new();
        for i in 0..CRASH_PROMPTS {
            let p = f
                .engine
                .send_prompt(NewPrompt::message("dev-1", &format!("prompt {i}")), &user())
                .await
                .unwrap();
            sent.push(p.prompt.id);
        }
        let log = f.dir.path().join("crash.log");
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "prompts::crash_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CRASH_STATE, f.dir.path().join("state"))
            .env(CRASH_LOG, &log)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Kill it after its `want`-th reservation, at a random point.
        let want = 1 + round * 2 % (CRASH_PROMPTS - 1);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.lines().filter(|l| l.starts_with("reserved ")).count() >= want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the child never reserved: {text}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(jitter(12)).await;
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();

        // This process delivers what is left.
        let mut here = Vec::new();
        while let Some(r) = f.engine.reserve_prompt("dev-1").await.unwrap() {
            here.push((r.prompt.id.clone(), r.attempt));
            f.engine.acknowledge_prompt(&r.token).await.unwrap();
            f.engine.finish_turn(&r.session.id, false).await.unwrap();
        }
        let text = std::fs::read_to_string(&log).unwrap();

        // Nothing lost: every prompt acknowledged, in the order sent.
        let mut twice = Vec::new();
        for id in &sent {
            let p = f.engine.prompt(id).await.unwrap();
            assert_eq!(p.status, PromptStatus::Acknowledged, "{id}: {p:?}\n{text}");
            match p.attempts {
                1 => {}
                2 => twice.push(id.clone()),
                n => panic!("{id} delivered {n} times\n{text}"),
            }
        }
        // At most the one in flight at the kill is delivered once more.
        assert!(twice.len() <= 1, "{twice:?}\n{text}");
        if let Some(id) = twice.first() {
            // The row the child held (its log line may have died with it):
            // back at the head of the queue, this process's first delivery.
            assert_eq!(here.first(), Some(&(id.clone(), 2)), "{text}");
            let requeued = events_of(&f.engine, "prompt.requeued").await;
            assert_eq!(requeued.len(), 1);
            assert_eq!(requeued[0].payload["prompt"], id.as_str());
            redelivered += 1;
        }
        let acked: Vec<String> = events_of(&f.engine, "prompt.acknowledged")
            .await
            .into_iter()
            .map(|e| e.payload["prompt"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(acked, sent, "acknowledged in queue order\n{text}");
    }
    eprintln!(
        "kill -9 rounds: {CRASH_ROUNDS}, in flight at the kill and redelivered: {redelivered}, {:?}",
        started.elapsed()
    );
}

/// The queue's throughput with 20 agents, each with a session: every
/// prompt sent, reserved, acknowledged and its turn finished, 20 agents'
/// drivers at once on one store. A figure, not a bound: run with
/// `cargo test -p berth-engine --test all prompts::throughput -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run by hand"]
async fn throughput_with_20_agents() {
    const AGENTS: usize = 20;
    const EACH: usize = 25;
    let f = Fixture::new().await;
    let cfg = f.dir.path().join("state/projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replacen("max_sessions = 4", "max_sessions = 20", 1),
    )
    .unwrap();
    let mut names = Vec::new();
    for i in 0..AGENTS {
        let name = format!("dev-{i}");
        f.agent(&name, AgentImpl::Real).await;
        let t = f.engine.create_task("demo", &name, &user()).await.unwrap();
        f.engine.open_session(&name, &t.id, &user()).await.unwrap();
        names.push((name, t.id));
    }
    let engine = std::sync::Arc::new(f.second().await);
    let started = Instant::now();
    let mut drivers = Vec::new();
    for (name, task) in names {
        let engine = engine.clone();
        drivers.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            for i in 0..EACH {
                let new = NewPrompt {
                    task: Some(task.clone()),
                    ..NewPrompt::message(&name, &format!("prompt {i}"))
                };
                let queued = Instant::now();
                engine.send_prompt(new, &user()).await.unwrap();
                let r = engine.reserve_prompt(&name).await.unwrap().unwrap();
                latencies.push(queued.elapsed());
                engine.acknowledge_prompt(&r.token).await.unwrap();
                engine.finish_turn(&r.session.id, false).await.unwrap();
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for d in drivers {
        latencies.extend(d.await.unwrap());
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let n = AGENTS * EACH;
    eprintln!(
        "{n} prompts through the queue with {AGENTS} agents in {elapsed:?}: {:.0} prompts/s \
         (send+reserve+acknowledge+finish); queued→reserved p50 {:?}, p99 {:?}",
        n as f64 / elapsed.as_secs_f64(),
        latencies[n / 2],
        latencies[n * 99 / 100],
    );
}

/// No more turns run at once in a project than `[agent] max_sessions`: the
/// next agent's prompt waits, with that reason, until a turn ends.
#[tokio::test]
async fn a_project_runs_at_most_max_sessions_turns_at_once() {
    let (f, task) = agent_with_task().await;
    let cfg = f.dir.path().join("state/projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replacen("max_sessions = 4", "max_sessions = 1", 1),
    )
    .unwrap();
    let first = in_a_turn(&f, &task).await;
    f.agent("dev-2", AgentImpl::Real).await;
    let other = f
        .engine
        .create_task("demo", "other", &user())
        .await
        .unwrap();
    f.engine
        .open_session("dev-2", &other.id, &user())
        .await
        .unwrap();
    f.engine
        .send_prompt(NewPrompt::message("dev-2", "hello"), &user())
        .await
        .unwrap();
    assert!(f.engine.reserve_prompt("dev-2").await.unwrap().is_none());
    let queue = f.engine.prompt_queue(Some("dev-2")).await.unwrap();
    assert!(
        queue[0].reason.as_deref().unwrap().contains("max_sessions"),
        "{queue:?}"
    );
    f.engine.finish_turn(&first.id, false).await.unwrap();
    let r = f.engine.reserve_prompt("dev-2").await.unwrap().unwrap();
    assert_eq!(r.prompt.id, queue[0].id);
}
