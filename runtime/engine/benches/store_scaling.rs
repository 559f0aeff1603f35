//! The store under several writers and as it grows (issue 23): actions per
//! second through the engine with 1, 2 and 3 writers on PostgreSQL against
//! one on SQLite, with PostgreSQL's writers serialised by one lock (how the
//! store ran before the narrow locks) and without; and the store's time per
//! action as the store grows from 10k to 1M actions.
//!
//!   cargo bench -p berth-engine --bench store_scaling [-- N [MAX]]
//!
//! An action here is what a person-gated proposal costs the store: the
//! proposal decided (pending) and logged, then denied by a person and
//! logged — two write transactions, each with its event and outbox row.
//! Nothing is executed: execution runs on the agent's own host, the store
//! is what every host shares. Each writer is an engine with its own pool
//! and write gate (another process's worth), proposing for its own agent;
//! N (default 300) actions per writer. The rounds alternate so drift in the
//! machine's load falls on every configuration alike, and each figure is
//! the median of three rounds.
//!
//! Growth: simulated rows (a real action's and its events' rows copied,
//! new ids) are inserted in bulk up to 10k, 100k and MAX (default 1M)
//! actions, and at each size N real actions are timed on top, on each
//! store.
//!
//! PostgreSQL is Debian's, started by the test harness as it starts it for
//! the engine's tests (durability off, as there).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;
#[path = "../tests/common/postgres.rs"]
mod postgres;

use berth_engine::{Actor, AgentImpl, Engine, Proposal, ProposeStatus, StateDir};
use berth_policy::{Action, Approval};
use common::named;

/// One state directory on a store: SQLite's file, or a new PostgreSQL
/// database named in `store.toml`; project `bench` and agents `w0`..`w{n}`
/// in runner berths, whose terminal actions wait for a person.
async fn setup(root: &std::path::Path, pg: bool, agents: usize, user: &Actor) -> StateDir {
    if pg {
        postgres::store_state_on_postgres(&root.join("state")).await;
    }
    let (engine, state) = common::bench_project(root, user).await;
    for w in 0..agents {
        let name = format!("w{w}");
        engine
            .activate_agent(&named(&name), &named("bench"), AgentImpl::Noop, user)
            .await
            .unwrap();
        engine
            .set_autonomy(&name, "terminal", Approval::RequireApproval, user)
            .await
            .unwrap();
        engine
            .up(&named(&name), &named("bench"), None, user)
            .await
            .unwrap();
    }
    engine.close().await;
    state
}

/// One action: proposed (pending), then denied by `user`.
async fn action(engine: &Engine, agent: &str, user: &Actor) {
    let p = engine
        .propose(
            Proposal::by_agent(
                &named(agent),
                Action::Terminal {
                    command: "true".into(),
                },
            ),
            None,
        )
        .await
        .unwrap();
    assert!(matches!(p.status, ProposeStatus::Pending { .. }));
    engine.deny(&p.id, user, Some("bench")).await.unwrap();
}

/// `n` actions by each of `engines` at once; the wall time.
async fn round(engines: &[Arc<Engine>], n: usize, user: &Actor) -> Duration {
    let start = Instant::now();
    let mut writers = Vec::new();
    for (w, engine) in engines.iter().enumerate() {
        let engine = engine.clone();
        let user = user.clone();
        writers.push(tokio::spawn(async move {
            for _ in 0..n {
                action(&engine, &format!("w{w}"), &user).await;
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    start.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Copies the newest action's rows (the action and its events) `count`
/// times with new ids: a store that has seen that many more actions.
async fn simulate(engine: &Engine, count: usize) {
    let pool = engine.store().pool();
    let template: String = sqlx::query_scalar(
        "SELECT id FROM proposed_actions ORDER BY created_at DESC, id DESC LIMIT 1",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    let row = sqlx::query("SELECT * FROM proposed_actions WHERE id = $1")
        .bind(&template)
        .fetch_one(pool)
        .await
        .unwrap();
    use sqlx::{Column, Row};
    let cols: Vec<String> = row.columns().iter().map(|c| c.name().to_string()).collect();
    let exprs: Vec<String> = cols
        .iter()
        .map(|c| match c.as_str() {
            "id" => "t.id || '-' || CAST(g.n AS TEXT)".to_string(),
            "idempotency_key" => "NULL".to_string(),
            other => format!("t.{other}"),
        })
        .collect();
    // Batches, so one statement's series stays small.
    let batch = 50_000usize;
    let mut done = 0usize;
    let mut offset: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM proposed_actions")
        .fetch_one(pool)
        .await
        .unwrap();
    while done < count {
        let k = batch.min(count - done);
        let series = format!(
            "WITH RECURSIVE g(n) AS (SELECT {} UNION ALL SELECT n + 1 FROM g WHERE n < {})",
            offset + 1,
            offset + k as i64
        );
        sqlx::query(&format!(
            "{series} INSERT INTO proposed_actions ({}) SELECT {} FROM proposed_actions t, g WHERE t.id = $1",
            cols.join(", "),
            exprs.join(", ")
        ))
        .bind(&template)
        .execute(pool)
        .await
        .unwrap();
        sqlx::query(&format!(
            "{series} INSERT INTO session_events (at, type, actor_kind, actor_id, project, agent, task_id, action_id, payload) \
             SELECT e.at, e.type, e.actor_kind, e.actor_id, e.project, e.agent, e.task_id, \
             e.action_id || '-' || CAST(g.n AS TEXT), e.payload FROM session_events e, g WHERE e.action_id = $1"
        ))
        .bind(&template)
        .execute(pool)
        .await
        .unwrap();
        done += k;
        offset += k as i64;
    }
    if engine.store().backend() == berth_engine::Backend::Postgres {
        sqlx::query("ANALYZE").execute(pool).await.unwrap();
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1).filter_map(|a| a.parse().ok());
    let n: usize = args.next().unwrap_or(300);
    let max: usize = args.next().unwrap_or(1_000_000);
    let user = Actor::user("bench");

    // Writers.
    let sqlite_dir = tempfile::tempdir().unwrap();
    let sqlite_state = setup(sqlite_dir.path(), false, 1, &user).await;
    let _sqlite_disks = common::DiskGuard(sqlite_state.root().to_path_buf());
    let sqlite = vec![Arc::new(Engine::open(sqlite_state).await.unwrap())];
    let pg_dir = tempfile::tempdir().unwrap();
    let pg_state = setup(pg_dir.path(), true, 3, &user).await;
    let _pg_disks = common::DiskGuard(pg_state.root().to_path_buf());
    let mut pg = Vec::new();
    for _ in 0..3 {
        pg.push(Arc::new(Engine::open(pg_state.clone()).await.unwrap()));
    }
    // Warm both (connections, plans).
    round(&sqlite, 20, &user).await;
    round(&pg, 20, &user).await;
    let configs: Vec<(String, usize, bool, bool)> =
        std::iter::once(("sqlite, 1 writer".to_string(), 1, false, false))
            .chain((1..=3).flat_map(|w| {
                [
                    (
                        format!("postgres, {w} writer(s), one lock for all writers"),
                        w,
                        true,
                        true,
                    ),
                    (
                        format!("postgres, {w} writer(s), narrow locks"),
                        w,
                        true,
                        false,
                    ),
                ]
            }))
            .collect();
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for _ in 0..3 {
        for (i, (_, writers, on_pg, serialised)) in configs.iter().enumerate() {
            let engines = if *on_pg { &pg[..*writers] } else { &sqlite[..] };
            for e in engines {
                e.store().serialise_writers(*serialised);
            }
            let took = round(engines, n, &user).await;
            rates[i].push((writers * n) as f64 / took.as_secs_f64());
        }
    }
    let base = median(rates[0].clone());
    println!("actions/s (propose pending + deny, {n} per writer, median of 3 alternating rounds):");
    for ((name, ..), r) in configs.iter().zip(&rates) {
        let m = median(r.clone());
        println!("  {name:<55} {m:>7.0} actions/s  {:.2}x sqlite", m / base);
    }
    for e in &pg {
        e.store().serialise_writers(false);
    }

    // Growth.
    let mut sizes = vec![10_000usize, 100_000, max];
    sizes.retain(|s| *s <= max);
    sizes.dedup();
    for (name, engine) in [("sqlite", sqlite[0].clone()), ("postgres", pg[0].clone())] {
        let mut have: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM proposed_actions")
            .fetch_one(engine.store().pool())
            .await
            .unwrap();
        let mut first = None;
        for &size in &sizes {
            let add = (size as i64 - have).max(0) as usize;
            let fill = Instant::now();
            simulate(&engine, add).await;
            let filled = fill.elapsed();
            have = size as i64;
            let took = round(std::slice::from_ref(&engine), n, &user).await;
            let per = took.as_secs_f64() * 1000.0 / n as f64;
            let first = *first.get_or_insert(per);
            println!(
                "  {name}: at {size:>9} actions: {per:.3} ms per action ({:.2}x at 10k; {add} simulated in {:.1} s)",
                per / first,
                filled.as_secs_f64()
            );
        }
    }
    for e in sqlite.iter().chain(&pg) {
        e.close().await;
    }
}
