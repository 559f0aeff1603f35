//! Bytes the store takes per proposed action (issue 17: 3.8 KB at 22ccd55,
//! goal ≤ 1.5 KB), and which tables and indexes hold them.
//!
//!   cargo bench -p berth-engine --bench store_bytes [-- N]
//!
//! N (default 10000) actions go through the engine into a fresh store, as a
//! mix: 80 % `true` auto-approved and executed in a runner berth, then 10 %
//! left pending and 10 % denied by a person. The store is then checkpointed
//! and vacuumed, and its size (`page_count * page_size`) divided by N, with
//! and without the store the setup made before the first action. The split
//! by table and index comes from SQLite's `dbstat` table. Not a timed test:
//! a figure to compare before and after a change to the schema.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
use common::named;

use berth_engine::{Actor, Proposal, ProposeStatus};
use berth_policy::{Action, Approval};

/// The store's size once compacted: checkpointed and vacuumed.
async fn compacted_bytes(pool: &berth_engine::store::StorePool) -> i64 {
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(pool)
        .await
        .unwrap();
    sqlx::query("VACUUM").execute(pool).await.unwrap();
    sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
        .execute(pool)
        .await
        .unwrap();
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(pool)
        .await
        .unwrap();
    let size: i64 = sqlx::query_scalar("PRAGMA page_size")
        .fetch_one(pool)
        .await
        .unwrap();
    pages * size
}

fn terminal(command: &str) -> Proposal {
    Proposal::by_agent(
        &named("dev-1"),
        Action::Terminal {
            command: command.into(),
        },
    )
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
    let pool = engine.store().pool().clone();
    let before = compacted_bytes(&pool).await;

    let executed_n = n * 8 / 10;
    let start = std::time::Instant::now();
    for _ in 0..executed_n {
        let p = engine.propose(terminal("true"), None).await.unwrap();
        assert!(
            matches!(&p.status, ProposeStatus::Executed { outcome } if outcome.succeeded),
            "every `true` must be auto-approved and executed: {:?}",
            p.status
        );
    }
    engine
        .set_autonomy("dev-1", "terminal", Approval::RequireApproval, &user)
        .await
        .unwrap();
    for i in executed_n..n {
        let p = engine.propose(terminal("touch f"), None).await.unwrap();
        assert_eq!(p.status.name(), "pending");
        if i % 2 == 0 {
            engine.deny(&p.id, &user, Some("not now")).await.unwrap();
        }
    }
    let took = start.elapsed();
    let after = compacted_bytes(&pool).await;

    println!(
        "{n} actions ({executed_n} executed, {} pending or denied) in {:.1} s",
        n - executed_n,
        took.as_secs_f64()
    );
    println!(
        "store: {after} bytes compacted = {:.0} B per action ({:.0} B per action over the {before} bytes before the first)",
        after as f64 / n as f64,
        (after - before) as f64 / n as f64
    );
    let by_object: Result<Vec<(String, String, i64)>, _> = sqlx::query_as(
        "SELECT d.name, COALESCE(m.tbl_name, d.name), SUM(d.pgsize) FROM dbstat d \
         LEFT JOIN sqlite_master m ON m.name = d.name GROUP BY d.name ORDER BY 3 DESC",
    )
    .fetch_all(&pool)
    .await;
    match by_object {
        Ok(rows) => {
            println!("by table and index (dbstat, bytes per action):");
            for (name, table, bytes) in rows {
                if bytes as f64 / n as f64 >= 1.0 {
                    println!(
                        "  {:<40} {:<18} {:>7.0} B {:>5.1} %",
                        name,
                        table,
                        bytes as f64 / n as f64,
                        bytes as f64 * 100.0 / after as f64
                    );
                }
            }
        }
        Err(e) => {
            println!("no dbstat ({e}); JSON column bytes per action:");
            for (table, cols) in [
                (
                    "proposed_actions",
                    "LENGTH(action) + LENGTH(params) + LENGTH(decision) + COALESCE(LENGTH(result), 0)",
                ),
                ("session_events", "LENGTH(payload)"),
            ] {
                let bytes: i64 =
                    sqlx::query_scalar(&format!("SELECT COALESCE(SUM({cols}), 0) FROM {table}"))
                        .fetch_one(&pool)
                        .await
                        .unwrap();
                println!("  {table:<40} {:>7.0} B", bytes as f64 / n as f64);
            }
        }
    }
    engine.close().await;
}
