#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Approval latency under 32 concurrent clients, over the unix socket of a
//! real `berth serve` (the store's write path under contention). Two loads:
//! - `distinct`: each client approves its own pending actions (`true`, run
//!   by the runner): claim, log, process, outcome — all 200;
//! - `same`: all 32 clients approve one action at the same moment, round
//!   after round: one 200 (which runs it), 31 answers of 409 `not_pending`.
//!
//! `cargo bench -p berth --bench approvals` (BERTH_BENCH_PER_CLIENT=N to
//! change the approvals per client, default 10). Bounded: 32 × N approvals
//! per load.

#[path = "../../tests/support/fixture.rs"]
mod fixture;
#[path = "../../tests/support/http.rs"]
mod http;
#[path = "../../tests/support/server.rs"]
mod server;

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use http::Client;
use server::{Served, State};

const CLIENTS: usize = 32;

fn main() {
    let per_client: usize = std::env::var("BERTH_BENCH_PER_CLIENT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let state = State::with_project();
    state.ok(&["agent", "activate", "waits", "--project", "demo"]);
    state.ok(&["up", "waits", "--project", "demo", "--mode", "runner"]);
    let served = Served::start(&state, &["--no-agent-loops"]);
    let client = served.client(&state);
    println!("berth serve over the unix socket: {CLIENTS} clients × {per_client} approvals each");
    println!(
        "{:<10} {:>9} {:>9} {:>11} {:>9} {:>9} {:>9}",
        "load", "requests", "wall s", "requests/s", "p50 ms", "p99 ms", "max ms"
    );

    // distinct: every client its own actions.
    let ids: Vec<Vec<String>> = (0..CLIENTS)
        .map(|_| (0..per_client).map(|_| pending(&client)).collect())
        .collect();
    let start = Arc::new(Barrier::new(CLIENTS));
    let t = Instant::now();
    let workers: Vec<_> = ids
        .into_iter()
        .map(|mine| {
            let (client, start) = (client.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let mut conn = client.keep_alive();
                mine.iter()
                    .map(|id| {
                        let t = Instant::now();
                        let r = conn.call("POST", &format!("/api/actions/{id}/approve"), b"{}");
                        assert_eq!(r.status, 200, "{}", r.text());
                        t.elapsed()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let all: Vec<Duration> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    report("distinct", all, t.elapsed());

    // same: every client approves one action, per_client rounds.
    let mut all = Vec::new();
    let mut wall = Duration::ZERO;
    for _ in 0..per_client {
        let id = pending(&client);
        let start = Arc::new(Barrier::new(CLIENTS));
        let t = Instant::now();
        let workers: Vec<_> = (0..CLIENTS)
            .map(|_| {
                let (client, start, id) = (client.clone(), start.clone(), id.clone());
                std::thread::spawn(move || {
                    let mut conn = client.keep_alive();
                    start.wait();
                    let t = Instant::now();
                    let r = conn.call("POST", &format!("/api/actions/{id}/approve"), b"{}");
                    assert!(r.status == 200 || r.status == 409, "{}", r.text());
                    (r.status, t.elapsed())
                })
            })
            .collect();
        let answers: Vec<(u16, Duration)> =
            workers.into_iter().map(|w| w.join().unwrap()).collect();
        wall += t.elapsed();
        assert_eq!(answers.iter().filter(|(s, _)| *s == 200).count(), 1);
        all.extend(answers.into_iter().map(|(_, d)| d));
    }
    report("same", all, wall);
    served.stop();
}

/// A new pending action (`true` for an agent whose terminal actions wait).
fn pending(client: &Client) -> String {
    let body =
        serde_json::json!({"agent": "waits", "action": {"type": "terminal", "command": "true"}});
    let r = client.call("POST", "/api/actions", Some(&body));
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["status"]["status"], "pending", "{v}");
    v["id"].as_str().unwrap().to_string()
}

fn report(load: &str, mut all: Vec<Duration>, wall: Duration) {
    all.sort();
    let pct = |p: f64| {
        let i = ((all.len() as f64 * p).ceil() as usize).clamp(1, all.len()) - 1;
        all[i].as_secs_f64() * 1000.0
    };
    println!(
        "{:<10} {:>9} {:>9.2} {:>11.1} {:>9.1} {:>9.1} {:>9.1}",
        load,
        all.len(),
        wall.as_secs_f64(),
        all.len() as f64 / wall.as_secs_f64(),
        pct(0.50),
        pct(0.99),
        all.last().unwrap().as_secs_f64() * 1000.0
    );
}
