//! Proposed actions per second through the whole path — decide, log,
//! execute `true` in the runner, log the outcome — and the store's size per
//! 10k actions.
//!
//!   cargo bench -p berth-engine --bench propose [-- N]
//!
//! N (default 10000) actions are proposed one after another by one agent
//! whose autonomy auto-approves `terminal` (a specific rule, not auto mode),
//! so every one of them is decided, logged, run and logged again. A second
//! pass measures the pending path (decide and log only) for comparison.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

mod common;

use berth_engine::{Actor, ProposeStatus};
use berth_policy::Approval;

fn dir_bytes(path: &std::path::Path, prefix: &str) -> u64 {
    std::fs::read_dir(path)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .sum()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(10_000);
    let tmp = tempfile::tempdir().unwrap();
    let user = Actor::user("bench");
    let (engine, state) = common::runner_berth(tmp.path(), &user).await;
    let _disks = common::DiskGuard(state.root().to_path_buf());
    let before = dir_bytes(state.root(), "berth.db");

    let start = Instant::now();
    let mut executed = 0usize;
    for _ in 0..n {
        let p = common::propose_terminal(&engine, "true").await;
        if let ProposeStatus::Executed { outcome } = &p.status {
            executed += usize::from(outcome.succeeded);
        }
    }
    let full = start.elapsed();
    assert_eq!(
        executed, n,
        "every `true` must be auto-approved and executed (is the real policy merged?)"
    );

    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(engine.store().pool())
        .await
        .unwrap();
    let after = dir_bytes(state.root(), "berth.db");
    let per_10k = (after - before) as f64 * 10_000.0 / n as f64;

    let mut shares = Vec::new();
    for (table, cols) in [
        (
            "proposed_actions",
            "LENGTH(action) + LENGTH(params) + LENGTH(decision) + COALESCE(LENGTH(result), 0)",
        ),
        ("session_events", "LENGTH(payload)"),
    ] {
        let bytes: i64 =
            sqlx::query_scalar(&format!("SELECT COALESCE(SUM({cols}), 0) FROM {table}"))
                .fetch_one(engine.store().pool())
                .await
                .unwrap();
        shares.push(format!("{table} {:.0} B", bytes as f64 / n as f64));
    }

    engine
        .set_autonomy("dev-1", "terminal", Approval::RequireApproval, &user)
        .await
        .unwrap();
    let m = n.min(2_000);
    let start = Instant::now();
    for _ in 0..m {
        common::propose_terminal(&engine, "true").await;
    }
    let pending = start.elapsed();

    // The runner alone, for scale: the same `true`, no decision, no store.
    let info = engine.agent("dev-1").await.unwrap();
    let wt = info.worktree.unwrap();
    let runner =
        berth_sandbox::Runner::new(berth_sandbox::RunnerConfig::new(&wt, tmp.path())).unwrap();
    let start = Instant::now();
    for _ in 0..m {
        use berth_sandbox::Sandbox as _;
        let out = runner
            .exec(berth_sandbox::ExecRequest::shell("true"), None)
            .await
            .unwrap();
        assert!(out.status.success());
    }
    let bare = start.elapsed();
    println!(
        "the runner alone, exec of `true`: {m} in {:.2} s = {:.0} execs/s ({:.2} ms each)",
        bare.as_secs_f64(),
        m as f64 / bare.as_secs_f64(),
        bare.as_secs_f64() * 1000.0 / m as f64
    );
    println!(
        "proposed actions, decide + log + execute `true` in the runner + log: {n} in {:.2} s = {:.0} actions/s ({:.2} ms each)",
        full.as_secs_f64(),
        n as f64 / full.as_secs_f64(),
        full.as_secs_f64() * 1000.0 / n as f64
    );
    println!(
        "pending path, decide + log only: {m} in {:.2} s = {:.0} actions/s",
        pending.as_secs_f64(),
        m as f64 / pending.as_secs_f64()
    );
    println!(
        "store growth: {:.2} MiB per 10k executed actions ({} bytes for {n}; events, outbox rows and action rows)",
        per_10k / (1024.0 * 1024.0),
        after - before
    );
    println!("JSON per executed action, by table: {}", shares.join(", "));
    engine.close().await;
}
