#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The API under load: proposed actions per second over the unix socket
//! with 16 concurrent clients (each on its own kept-alive connection), and
//! the latency of each request (p50, p99, max). Two loads:
//! - `executed`: `true`, auto-approved, run by the runner in the agent's
//!   worktree — the whole path: HTTP, decision, log, process, result;
//! - `pending`: the same command for an agent whose terminal actions need a
//!   person — HTTP, decision and log, nothing run.
//!
//! `cargo bench -p berth --bench api` (BERTH_BENCH_PER_CLIENT=N to change
//! the requests per client, default 50). Bounded: 16 × N requests per load.

#[path = "../../tests/support/fixture.rs"]
mod fixture;
#[path = "../../tests/support/http.rs"]
mod http;
#[path = "../../tests/support/server.rs"]
mod server;

use std::time::{Duration, Instant};

use server::{Served, State};

const CLIENTS: usize = 16;

fn main() {
    let per_client: usize = std::env::var("BERTH_BENCH_PER_CLIENT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let state = State::with_project();
    for agent in ["runs", "waits"] {
        state.ok(&["agent", "activate", agent, "--project", "demo"]);
        state.ok(&["up", agent, "--project", "demo", "--mode", "runner"]);
    }
    state.ok(&["autonomy", "set", "runs", "terminal", "auto_approve"]);
    let served = Served::start(&state, &["--no-agent-loops"]);
    println!("berth serve over the unix socket: {CLIENTS} clients × {per_client} proposals each");
    println!(
        "{:<10} {:>8} {:>9} {:>11} {:>9} {:>9} {:>9}",
        "load", "actions", "wall s", "actions/s", "p50 ms", "p99 ms", "max ms"
    );
    for (load, agent, want) in [
        ("executed", "runs", "executed"),
        ("pending", "waits", "pending"),
    ] {
        let client = served.client(&state);
        // Warm up: the agent's sandbox is opened, the store's pages are hot.
        let mut warm = client.keep_alive();
        for _ in 0..5 {
            let body = format!(
                r#"{{"agent": "{agent}", "action": {{"type": "terminal", "command": "true"}}}}"#
            );
            assert_eq!(
                warm.call("POST", "/api/actions", body.as_bytes()).status,
                200
            );
        }
        let start = Instant::now();
        let workers: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let client = client.clone();
                let agent = agent.to_string();
                let want = want.to_string();
                std::thread::spawn(move || {
                    let mut conn = client.keep_alive();
                    let body = format!(
                        r#"{{"agent": "{agent}", "action": {{"type": "terminal", "command": "true"}}}}"#
                    );
                    let mut latencies = Vec::with_capacity(per_client);
                    for _ in 0..per_client {
                        let t = Instant::now();
                        let r = conn.call("POST", "/api/actions", body.as_bytes());
                        latencies.push(t.elapsed());
                        assert_eq!(r.status, 200, "{}", r.text());
                        assert_eq!(r.json()["status"]["status"], want.as_str(), "{}", r.text());
                    }
                    latencies
                })
            })
            .collect();
        let mut all: Vec<Duration> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        let wall = start.elapsed();
        all.sort();
        let pct = |p: f64| {
            let i = ((all.len() as f64 * p).ceil() as usize).clamp(1, all.len()) - 1;
            all[i].as_secs_f64() * 1000.0
        };
        println!(
            "{:<10} {:>8} {:>9.2} {:>11.1} {:>9.1} {:>9.1} {:>9.1}",
            load,
            all.len(),
            wall.as_secs_f64(),
            all.len() as f64 / wall.as_secs_f64(),
            pct(0.50),
            pct(0.99),
            all.last().unwrap().as_secs_f64() * 1000.0
        );
    }
    served.stop();
}
