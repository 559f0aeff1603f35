//! From queueing a prompt to the `command` agent's program starting
//! (issue 18's benchmark; `prompts::throughput_with_20_agents` measures
//! queued-to-reserved): each run sends a prompt and runs the turn, whose
//! program is `date +%s%N` — it prints the moment it started, on the same
//! clock the prompt's queueing was read from. Between the two: the send,
//! the reservation, opening the program's runner, writing the prompt file,
//! the output files and the `session.turn_started` event, and the exec
//! shim's confinement up to the program's `exec`.
//!
//!   cargo bench -p berth-engine --bench command_turn [-- N]
//!
//! N turns (default 50) one after another, in a runner berth, and as a
//! baseline N bare runner execs of the same program (the exec shim's
//! confinement alone): what berth's queue and bookkeeping add is the
//! difference.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use berth_engine::{Actor, AgentImpl, Engine, NewPrompt};
use berth_sandbox::{ExecRequest, Runner, RunnerConfig, Sandbox};

mod common;

use common::{DiskGuard, bench_project, named};

fn since_epoch_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i128
}

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let n = times.len();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let total: Duration = times.iter().sum();
    println!(
        "{name:<34} n={n:<4} mean {:>7.2} ms  median {:>7.2} ms  p95 {:>7.2} ms  min {:>7.2} ms",
        ms(total) / n as f64,
        ms(times[n / 2]),
        ms(times[(n * 95 / 100).min(n - 1)]),
        ms(times[0]),
    );
}

/// One turn: (queued → program started, queued → turn recorded).
async fn turn(engine: &Engine, user: &Actor, i: usize) -> (Duration, Duration) {
    let queued = since_epoch_ns();
    let start = Instant::now();
    engine
        .send_prompt(NewPrompt::message("dev-1", &format!("turn {i}")), user)
        .await
        .unwrap();
    let t = engine
        .run_command_turn(&named("dev-1"))
        .await
        .unwrap()
        .expect("the prompt was deliverable");
    let whole = start.elapsed();
    assert_eq!(t.exit_code, Some(0), "{t:?}");
    let started: i128 = t.stdout_tail.trim().parse().expect("date +%s%N");
    let to_start = u64::try_from(started - queued).expect("the program started after the send");
    (Duration::from_nanos(to_start), whole)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50);
    let tmp = tempfile::tempdir().unwrap();
    let _disks = DiskGuard(tmp.path().join("state"));
    let user = Actor::user("bench");
    let (engine, _) = bench_project(tmp.path(), &user).await;
    engine
        .activate_agent(&named("dev-1"), &named("bench"), AgentImpl::Command, &user)
        .await
        .unwrap();
    engine
        .set_agent_command("dev-1", vec!["date".into(), "+%s%N".into()], &user)
        .await
        .unwrap();
    let info = engine
        .up(&named("dev-1"), &named("bench"), None, &user)
        .await
        .unwrap();
    let task = engine.create_task("bench", "bench", &user).await.unwrap();
    engine.open_session("dev-1", &task.id, &user).await.unwrap();

    // Warm-up: the first turn opens the store's caches.
    for i in 0..2 {
        turn(&engine, &user, i).await;
    }
    let (mut to_start, mut whole) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let (s, w) = turn(&engine, &user, i).await;
        to_start.push(s);
        whole.push(w);
    }
    println!("command agent turns in a runner berth ({n} runs, one after another)");
    report("queued → program started", to_start);
    report("queued → turn recorded", whole);

    // The baseline: the same program through a bare runner exec (the exec
    // shim's confinement, no store, no prompt, no files).
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let runner = Runner::new(RunnerConfig::new(info.worktree.unwrap(), &home)).unwrap();
    let mut bare = Vec::with_capacity(n);
    for _ in 0..n {
        let asked = since_epoch_ns();
        let out = runner
            .exec(ExecRequest::argv(["date", "+%s%N"]), None)
            .await
            .unwrap();
        let started: i128 = String::from_utf8_lossy(&out.stdout.bytes)
            .trim()
            .parse()
            .unwrap();
        bare.push(Duration::from_nanos(
            u64::try_from(started - asked).unwrap(),
        ));
    }
    report("baseline: bare exec → started", bare);
    engine.down(&named("dev-1"), false, &user).await.unwrap();
    engine.close().await;
}
