//! A pipeline of 10 `true` steps end to end: lease, run row, ten proposals
//! (decide, log, set read-only `/work`, run, log), done,
//! `task_auto_approved`, `pipeline_completed` — in the runner (Landlock for
//! read-only), or with `mounted` in a Docker berth (read-only `/work` is the
//! container recreated with the mount read-only; needs a Docker engine).
//!
//!   cargo bench -p berth-engine --bench pipeline [-- N] [mounted]
//!
//! N pipelines (default 50) run one after another by one agent whose
//! autonomy auto-approves `terminal`. Two baselines beside it: the same ten
//! steps with write access (`--write`: no Landlock ruleset to build), and ten
//! bare `true` execs through the runner with no store at all — what berth's
//! bookkeeping costs is the difference.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use std::sync::Arc;

use berth_engine::{
    Actor, AgentImpl, BerthMode, DockerProvider, Engine, ExecutionMode, NewProject, NewTask,
    PipelineEnd, PipelineStep, StateDir,
};
use berth_policy::Approval;
use berth_sandbox::docker::DockerBackend;
use berth_sandbox::image::{NoProgress, Recipe};
use berth_sandbox::{ExecRequest, Runner, RunnerConfig, Sandbox};

mod common;

use common::{git, named};

const STEPS: usize = 10;

fn report(name: &str, mut times: Vec<Duration>) {
    times.sort();
    let n = times.len();
    let total: Duration = times.iter().sum();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{name:<34} n={n:<4} mean {:>7.1} ms  median {:>7.1} ms  p95 {:>7.1} ms  per step {:>6.2} ms",
        ms(total) / n as f64,
        ms(times[n / 2]),
        ms(times[(n * 95 / 100).min(n - 1)]),
        ms(total) / (n * STEPS) as f64,
    );
}

async fn pipelines(engine: &Engine, n: usize, write: bool, user: &Actor) -> Vec<Duration> {
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t = engine
            .create_task_with(
                NewTask {
                    execution_mode: Some(ExecutionMode::Auto),
                    steps: Some(
                        (0..STEPS)
                            .map(|_| PipelineStep {
                                command: "true".into(),
                                write: false,
                            })
                            .collect(),
                    ),
                    write,
                    ..NewTask::new("bench", &format!("bench {i}"))
                },
                user,
            )
            .await
            .unwrap();
        let start = Instant::now();
        let r = engine.run_pipeline(&t.id, None, user).await.unwrap();
        times.push(start.elapsed());
        assert_eq!(r.end, PipelineEnd::Done, "{r:?}");
    }
    times
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(50);
    let mounted = std::env::args().any(|a| a == "mounted");
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["commit", "-q", "--allow-empty", "-m", "init"]);
    let state = StateDir::new(tmp.path().join("state"));
    let engine = Engine::init(state.clone()).await.unwrap();
    let engine = if mounted {
        let backend = DockerBackend::connect()
            .await
            .expect("`mounted` needs a Docker engine");
        backend
            .build_image(&Recipe::default_agent().unwrap(), &mut NoProgress)
            .await
            .unwrap();
        engine.close().await;
        Engine::open_with(
            state.clone(),
            Arc::new(DockerProvider::with_backend(backend)),
        )
        .await
        .unwrap()
    } else {
        engine
    };
    let user = Actor::user("bench");
    engine
        .add_project(
            NewProject {
                name: named("bench"),
                from: src,
                base: None,
                forge_url: None,
            },
            &user,
        )
        .await
        .unwrap();
    engine
        .activate_agent(&named("dev-1"), &named("bench"), AgentImpl::Real, &user)
        .await
        .unwrap();
    engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user)
        .await
        .unwrap();
    let mode = if mounted {
        BerthMode::Mounted
    } else {
        BerthMode::Runner
    };
    let info = engine
        .up(&named("dev-1"), &named("bench"), Some(mode), &user)
        .await
        .unwrap();

    // Warm-up: the first run opens the sandbox and the store's caches.
    pipelines(&engine, 2, false, &user).await;
    println!(
        "pipeline of {STEPS} `true` steps, {}, auto mode ({n} runs each)",
        mode.as_str()
    );
    report("read-only steps", pipelines(&engine, n, false, &user).await);
    report(
        "steps with write access",
        pipelines(&engine, n, true, &user).await,
    );
    if mounted {
        // The bare exec in a container: `cargo bench -p berth-sandbox --bench docker_exec`.
        engine.down(&named("dev-1"), false, &user).await.unwrap();
        engine.close().await;
        return;
    }

    let worktree = info.worktree.unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let runner = Runner::new(RunnerConfig::new(&worktree, &home)).unwrap();
    let mut bare = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        for _ in 0..STEPS {
            let out = runner.exec(ExecRequest::shell("true"), None).await.unwrap();
            assert!(out.status.success());
        }
        bare.push(start.elapsed());
    }
    report("baseline: 10 bare runner execs", bare);
    engine.close().await;
}
