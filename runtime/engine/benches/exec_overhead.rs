//! What the engine adds to one exec, in process: `true` proposed by an agent
//! whose autonomy auto-approves it (decide, record, run in the warm runner
//! berth, record the outcome) beside the runner alone (the confinement,
//! no decision, no store) — through its resident, as the berth runs it, and
//! through the shim set up per exec — and a bare spawn of the same command
//! line (`sh -c true`, no confinement), all in one run, interleaved (bare,
//! shim, resident, engine, bare, …), so a machine whose speed drifts moves
//! them alike. Prints the median, p10 and p90 of each and the medians'
//! differences: what the confinement costs and what the engine costs per
//! action over it. This is the figure `berth serve` and the MCP server pay
//! per command (issue 17's in-process goals).
//!
//!   cargo bench -p berth-engine --bench exec_overhead [-- N]
//!
//! N (default 300) execs of each; a tenth as many first (2.5 s at least),
//! not counted.
//!
//!   cargo bench -p berth-engine --bench exec_overhead -- N --inline-checkpoints
//!
//! leaves the WAL's checkpoints to the commits that cross its size, as a
//! one-shot command does, instead of the store's thread (as `berth serve`
//! and the MCP server run): the two compared, by their p90s and means.
//!
//!   cargo bench -p berth-engine --bench exec_overhead -- N --only engine
//!
//! runs one kind alone (`bare`, `shim`, `resident` or `engine`), for an
//! instruction count of it: `valgrind --tool=callgrind` at two values of N,
//! the difference over the difference of N is what one exec costs berth's
//! process, all its threads (the store's worker among them) — stable on a
//! shared machine, where the wall-clock figures above swing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

mod common;

#[path = "../../src/allocator.rs"]
mod allocator;

/// The berth binary's allocator (runtime/src/allocator.rs): the figures are what
/// `berth serve` and the MCP server pay.
#[global_allocator]
static GLOBAL: allocator::Mimalloc = allocator::Mimalloc;

use berth_engine::{Actor, ProposeStatus};
use berth_sandbox::Sandbox as _;

/// Median, p10, p90 and mean of `samples`, in milliseconds.
fn quantiles(samples: &mut [Duration]) -> (f64, f64, f64, f64) {
    samples.sort();
    let n = samples.len();
    let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1].as_secs_f64() * 1e3;
    let mean = samples.iter().map(Duration::as_secs_f64).sum::<f64>() / n as f64 * 1e3;
    (at(0.5), at(0.1), at(0.9), mean)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.iter().find_map(|a| a.parse().ok()).unwrap_or(300);
    let only = args.iter().position(|a| a == "--only").map(|i| {
        args.get(i + 1)
            .cloned()
            .expect("--only bare|shim|resident|engine")
    });
    let runs = |kind: &str| only.as_deref().is_none_or(|o| o == kind);
    let tmp = tempfile::tempdir().unwrap();
    let user = Actor::user("bench");
    let (engine, _state) = common::runner_berth(tmp.path(), &user).await;
    // As `berth serve` and the MCP server run it; `--inline-checkpoints`:
    // as a one-shot command does (each commit that crosses the WAL's size
    // checkpoints), for the comparison.
    if !args.iter().any(|a| a == "--inline-checkpoints") {
        engine.store().checkpoint_in_background();
    }
    let _disks = common::DiskGuard(tmp.path().join("state"));

    // The runner alone, on the same worktree: the berth's own sandbox is
    // the engine's (its uid, its cgroup names); this one is configured as
    // `Runner::new` does for a worktree, which is the same confinement.
    let info = engine.agent("dev-1").await.unwrap();
    let worktree = info.worktree.unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let shim_runner =
        berth_sandbox::Runner::new(berth_sandbox::RunnerConfig::new(&worktree, &home)).unwrap();
    let mut config = berth_sandbox::RunnerConfig::new(&worktree, &home);
    config.confinement.resident = Some(tmp.path().join("residents"));
    let runner = berth_sandbox::Runner::new(config).unwrap();

    let bare = || async {
        let status = tokio::process::Command::new("sh")
            .args(["-c", "true"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .output()
            .await
            .unwrap()
            .status;
        assert!(status.success());
    };
    let confined = || async {
        let out = runner
            .exec(berth_sandbox::ExecRequest::shell("true"), None)
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    let through_shim = || async {
        let out = shim_runner
            .exec(berth_sandbox::ExecRequest::shell("true"), None)
            .await
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    let proposed = || async {
        let p = common::propose_terminal(&engine, "true").await;
        match &p.status {
            ProposeStatus::Executed { outcome } => assert!(outcome.succeeded, "{outcome:?}"),
            other => panic!("`true` must be auto-approved and run: {other:?}"),
        }
    };

    // Warm-up: a tenth as many, and long enough that the project's files,
    // written just now, have settled as a server's have (the engine parses
    // them again until they are `SETTLED`, 2 s, old).
    let settled = Instant::now() + Duration::from_millis(2500);
    // A fixed count (with --only, the same whatever N: an instruction
    // count compares runs at two N), the wait for
    // the files to settle slept, then a few more to read them settled.
    let warm_n = if only.is_some() { 20 } else { n.div_ceil(10) };
    let mut warm = 0;
    while warm < warm_n + 5 {
        if warm == warm_n {
            tokio::time::sleep_until(settled.into()).await;
        }
        if runs("bare") {
            bare().await;
        }
        if runs("shim") {
            through_shim().await;
        }
        if runs("resident") {
            confined().await;
        }
        if runs("engine") {
            proposed().await;
        }
        warm += 1;
    }
    if let Some(kind) = &only {
        for _ in 0..n {
            match kind.as_str() {
                "bare" => bare().await,
                "shim" => through_shim().await,
                "resident" => confined().await,
                "engine" => proposed().await,
                other => panic!("--only {other}: bare, shim, resident or engine"),
            }
        }
        println!("{n} of {kind} alone");
        engine.close().await;
        return;
    }
    let (mut b, mut sh, mut r, mut e) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for _ in 0..n {
        let t = Instant::now();
        bare().await;
        b.push(t.elapsed());
        let t = Instant::now();
        through_shim().await;
        sh.push(t.elapsed());
        let t = Instant::now();
        confined().await;
        r.push(t.elapsed());
        let t = Instant::now();
        proposed().await;
        e.push(t.elapsed());
    }
    let (bm, b10, b90, ba) = quantiles(&mut b);
    let (sm, s10, s90, sa) = quantiles(&mut sh);
    let (rm, r10, r90, ra) = quantiles(&mut r);
    let (em, e10, e90, ea) = quantiles(&mut e);
    println!("{n} of each, interleaved; median (p10–p90) and mean per exec:");
    println!("  bare spawn of sh -c true         {bm:7.3} ms ({b10:.3}–{b90:.3}) mean {ba:.3}");
    println!("  runner exec through the shim     {sm:7.3} ms ({s10:.3}–{s90:.3}) mean {sa:.3}");
    println!("  runner exec through its resident {rm:7.3} ms ({r10:.3}–{r90:.3}) mean {ra:.3}");
    println!("  engine propose → executed        {em:7.3} ms ({e10:.3}–{e90:.3}) mean {ea:.3}");
    println!(
        "  confinement over the bare spawn  {:7.3} ms; engine over the runner {:.3} ms; engine over the bare spawn {:.3} ms ({:.2}×)",
        rm - bm,
        em - rm,
        em - bm,
        em / bm
    );
    println!(
        "  means: engine over the runner {:.3} ms; engine over the bare spawn {:.3} ms",
        ea - ra,
        ea - ba
    );
    engine.close().await;
}
