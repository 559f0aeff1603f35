//! The fixed cost of one runner exec: `true` as an argv and as a command line,
//! through the shim set up per exec and through the berth's resident, and
//! both for an allow-list berth (the exec's own network namespace, whose
//! proxy listener PID 1 hands berth), beside a bare `tokio::process` spawn
//! of `true` for comparison. Prints the median and p99 of each.
//!
//! `cargo bench -p berth-sandbox --bench runner_exec` (iterations:
//! `BERTH_BENCH_ITERATIONS`, default 500).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use berth_sandbox::egress_port::{ContainerDoor, EgressHook, EgressPort, EgressServing};
use berth_sandbox::{ExecRequest, Runner, RunnerConfig, Sandbox};

/// Holds each listener it is handed until the exec ends: the handoff's
/// cost without a proxy behind it.
#[derive(Debug)]
struct HeldPort;

impl EgressPort for HeldPort {
    fn serve(&self, listener: std::net::TcpListener) -> Result<EgressServing, String> {
        Ok(EgressServing(Box::new(listener)))
    }
}

fn stats(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let n = samples.len();
    let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    let mean = samples.iter().sum::<Duration>() / n as u32;
    println!(
        "{name:<28} n={n:<5} median {:>8.3} ms   p99 {:>8.3} ms   mean {:>8.3} ms",
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        mean.as_secs_f64() * 1e3,
    );
}

async fn measure<F, Fut>(iterations: usize, mut f: F) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..iterations.div_ceil(10) {
        f().await;
    }
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        f().await;
        samples.push(start.elapsed());
    }
    samples
}

fn main() {
    let iterations: usize = std::env::var("BERTH_BENCH_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // In the system's temporary directory, not the target directory: that
    // may lie under /work, where a home shown at its own path cannot.
    let dir = tempfile::Builder::new()
        .prefix("berth-bench-")
        .tempdir()
        .unwrap();
    let worktree = dir.path().join("wt");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let shim_runner = Runner::new(RunnerConfig::new(&worktree, &home)).unwrap();
    let mut config = RunnerConfig::new(&worktree, &home);
    config.confinement.resident = Some(dir.path().join("residents"));
    let resident_runner = Runner::new(config).unwrap();
    let allow_list = |resident: bool| {
        let mut config = RunnerConfig::new(&worktree, &home);
        config.confinement.egress = Some(EgressHook {
            port: std::sync::Arc::new(HeldPort),
            handoff_dir: dir.path().join("handoff"),
            container_door: ContainerDoor::default(),
        });
        if resident {
            config.confinement.resident = Some(dir.path().join("residents"));
        }
        Runner::new(config).unwrap()
    };
    let (shim_allow_list, resident_allow_list) = (allow_list(false), allow_list(true));

    runtime.block_on(async {
        let bare = measure(iterations, || async {
            let status = tokio::process::Command::new("true").status().await.unwrap();
            assert!(status.success());
        })
        .await;
        stats("bare tokio spawn of true", bare);

        for (name, runner, request) in [
            (
                "shim argv [true]",
                &shim_runner,
                ExecRequest::argv(["true"]),
            ),
            (
                "shim shell `true`",
                &shim_runner,
                ExecRequest::shell("true"),
            ),
            (
                "shim shell, /work paths",
                &shim_runner,
                ExecRequest::shell("test -d /work && true"),
            ),
            (
                "resident argv [true]",
                &resident_runner,
                ExecRequest::argv(["true"]),
            ),
            (
                "resident shell `true`",
                &resident_runner,
                ExecRequest::shell("true"),
            ),
            (
                "allow-list shim argv [true]",
                &shim_allow_list,
                ExecRequest::argv(["true"]),
            ),
            (
                "allow-list resident argv",
                &resident_allow_list,
                ExecRequest::argv(["true"]),
            ),
        ] {
            let samples = measure(iterations, || {
                let request = request.clone();
                async move {
                    let outcome = runner.exec(request, None).await.unwrap();
                    assert!(outcome.status.success());
                }
            })
            .await;
            stats(name, samples);
        }
    });
}
