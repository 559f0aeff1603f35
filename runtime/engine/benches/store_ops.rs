//! What one store operation costs in process on SQLite: berth's own
//! connections (`store/direct.rs`, each statement on the calling thread)
//! against sqlx's SQLite driver (a worker thread per connection, each
//! statement sent to it and its answer awaited) on the same file, in the
//! same run, interleaved (berth, sqlx, berth, …), so a machine whose speed
//! drifts moves both alike. Three operations: a read of one row by key, an
//! empty write transaction (`BEGIN IMMEDIATE`, `COMMIT`), and a write
//! transaction appending one event to the log (its outbox row written by
//! the store's trigger), as the engine records an action. Prints each
//! one's median and p90 per driver and the medians' ratio.
//!
//!   cargo bench -p berth-engine --bench store_ops [-- N]
//!
//! N (default 2000) of each operation per driver, after a tenth as many
//! not counted.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::str::FromStr;
use std::time::{Duration, Instant};

#[path = "../../src/allocator.rs"]
mod allocator;

/// The berth binary's allocator (runtime/src/allocator.rs).
#[global_allocator]
static GLOBAL: allocator::Mimalloc = allocator::Mimalloc;

use berth_engine::store::Store;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};

const READ: &str = "SELECT id, type, payload FROM session_events WHERE id = $1";
const APPEND: &str = "INSERT INTO session_events (at, type, actor_kind, actor_id, payload) \
                      VALUES ($1, 'bench.appended', 'user', 'bench', '{}') RETURNING id";

/// Median and p90 of `samples`, in microseconds.
fn quantiles(samples: &mut [Duration]) -> (f64, f64) {
    samples.sort();
    let n = samples.len();
    let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1].as_secs_f64() * 1e6;
    (at(0.5), at(0.9))
}

#[derive(Default)]
struct Samples {
    read: Vec<Duration>,
    empty: Vec<Duration>,
    append: Vec<Duration>,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(2000);
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("berth.db");
    let store = Store::open(&path, true).await.unwrap();
    // sqlx's driver on the same file, set as the store set its own
    // connections (WAL is the file's; the rest is per connection).
    sqlx::any::install_default_drivers();
    let opts =
        AnyConnectOptions::from_str(&format!("sqlite://{}?mode=rw", path.display())).unwrap();
    let sqlx_pool = AnyPoolOptions::new()
        .max_connections(8)
        .test_before_acquire(false)
        .after_connect(|conn, _| {
            Box::pin(async move {
                sqlx::Executor::execute(
                    &mut *conn,
                    "PRAGMA busy_timeout = 30000; PRAGMA synchronous = NORMAL; \
                     PRAGMA wal_autocheckpoint = 256; PRAGMA foreign_keys = ON;",
                )
                .await?;
                Ok(())
            })
        })
        .connect_with(opts)
        .await
        .unwrap();
    let first: i64 = sqlx::query_scalar(APPEND)
        .bind(0_i64)
        .fetch_one(store.pool())
        .await
        .unwrap();

    let (mut ours, mut theirs) = (Samples::default(), Samples::default());
    let warm = (n / 10).max(1);
    for round in 0..warm + n {
        let keep = round >= warm;
        let at = round as i64;

        let t = Instant::now();
        let _row = sqlx::query(READ)
            .bind(first)
            .fetch_optional(store.pool())
            .await
            .unwrap();
        let ours_read = t.elapsed();
        let t = Instant::now();
        let _row = sqlx::query(READ)
            .bind(first)
            .fetch_optional(&sqlx_pool)
            .await
            .unwrap();
        let theirs_read = t.elapsed();

        let t = Instant::now();
        store.write("bench").await.unwrap().commit().await.unwrap();
        let ours_empty = t.elapsed();
        let t = Instant::now();
        sqlx_pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .unwrap()
            .commit()
            .await
            .unwrap();
        let theirs_empty = t.elapsed();

        let t = Instant::now();
        let mut tx = store.write("bench").await.unwrap();
        let _id: i64 = sqlx::query_scalar(APPEND)
            .bind(at)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let ours_append = t.elapsed();
        let t = Instant::now();
        let mut tx = sqlx_pool.begin_with("BEGIN IMMEDIATE").await.unwrap();
        let _id: i64 = sqlx::query_scalar(APPEND)
            .bind(at)
            .fetch_one(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        let theirs_append = t.elapsed();

        if keep {
            ours.read.push(ours_read);
            theirs.read.push(theirs_read);
            ours.empty.push(ours_empty);
            theirs.empty.push(theirs_empty);
            ours.append.push(ours_append);
            theirs.append.push(theirs_append);
        }
    }
    println!("{n} of each, interleaved; median (p90) per operation, µs:");
    for (what, o, t) in [
        ("read one row by key", &mut ours.read, &mut theirs.read),
        (
            "empty write transaction",
            &mut ours.empty,
            &mut theirs.empty,
        ),
        ("append one event", &mut ours.append, &mut theirs.append),
    ] {
        let (om, o9) = quantiles(o);
        let (tm, t9) = quantiles(t);
        println!(
            "  {what:<24} berth {om:8.1} ({o9:.1})   sqlx {tm:8.1} ({t9:.1})   berth / sqlx {:.3}x",
            om / tm
        );
    }
    sqlx_pool.close().await;
    store.close().await;
}
