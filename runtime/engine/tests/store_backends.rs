#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The two stores: PostgreSQL's schema is SQLite's (tables, columns, their
//! type class and nullability, every index's columns, uniqueness and
//! partiality), and on PostgreSQL, where ids commit out of order under
//! concurrent writers unless appends queue, a follower reading the log by
//! `id > $n` while several processes' worth of engines write misses no
//! event, and their concurrent claims take each task once; two writers
//! that deadlock there end with the aborted one run again whole, its
//! event appended once. These tests start PostgreSQL whichever store the
//! suite runs on.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use berth_engine::events::{Actor, NewEvent, emit};
use berth_engine::store::{Store, StoreLocation, Tx};
use berth_engine::{AgentImpl, Engine, EventFilter, LogWake, StateDir, TaskStatus};
use sqlx::Row;

use crate::common::{self, Fixture, postgres, user};

/// A column: its type class, and whether it takes NULL.
type Columns = BTreeMap<String, (String, bool)>;
/// An index: its table, its columns in order, unique, partial.
type Index = (String, String, bool, bool);

fn class(declared: &str) -> String {
    let t = declared.to_ascii_lowercase();
    if t.contains("int") {
        "integer".into()
    } else if t.contains("char") || t.contains("text") {
        "text".into()
    } else if t.contains("blob") || t.contains("bytea") {
        "blob".into()
    } else if t.contains("real") || t.contains("double") || t.contains("float") {
        "real".into()
    } else {
        t
    }
}

async fn sqlite_schema(store: &Store) -> (BTreeMap<String, Columns>, BTreeSet<Index>) {
    let pool = store.pool();
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite%' AND name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut schema = BTreeMap::new();
    let mut indexes = BTreeSet::new();
    for table in tables {
        let mut columns = Columns::new();
        let mut pk: Vec<(i64, String)> = Vec::new();
        for r in sqlx::query("SELECT name, type, \"notnull\", pk FROM pragma_table_info($1)")
            .bind(&table)
            .fetch_all(pool)
            .await
            .unwrap()
        {
            let name: String = r.get(0);
            let ty: String = r.get(1);
            let notnull: i64 = r.get(2);
            let in_pk: i64 = r.get(3);
            if in_pk > 0 {
                pk.push((in_pk, name.clone()));
            }
            // A primary key never holds NULL on PostgreSQL; on SQLite only
            // an INTEGER one is sure not to: berth never stores NULL in one.
            columns.insert(name, (class(&ty), notnull == 0 && in_pk == 0));
        }
        pk.sort();
        let mut pk_listed = false;
        for r in sqlx::query("SELECT name, \"unique\", origin, partial FROM pragma_index_list($1)")
            .bind(&table)
            .fetch_all(pool)
            .await
            .unwrap()
        {
            let name: String = r.get(0);
            let unique: i64 = r.get(1);
            let origin: String = r.get(2);
            let partial: i64 = r.get(3);
            pk_listed |= origin == "pk";
            let cols: Vec<String> =
                sqlx::query_scalar("SELECT name FROM pragma_index_info($1) ORDER BY seqno")
                    .bind(&name)
                    .fetch_all(pool)
                    .await
                    .unwrap();
            indexes.insert((table.clone(), cols.join(","), unique != 0, partial != 0));
        }
        if !pk_listed && !pk.is_empty() {
            // An INTEGER PRIMARY KEY is the rowid: no index of its own.
            let cols: Vec<String> = pk.into_iter().map(|(_, c)| c).collect();
            indexes.insert((table.clone(), cols.join(","), true, false));
        }
        schema.insert(table, columns);
    }
    (schema, indexes)
}

async fn postgres_schema(store: &Store) -> (BTreeMap<String, Columns>, BTreeSet<Index>) {
    let pool = store.pool();
    let mut schema: BTreeMap<String, Columns> = BTreeMap::new();
    for r in sqlx::query(
        "SELECT table_name::text, column_name::text, data_type::text, is_nullable::text \
         FROM information_schema.columns \
         WHERE table_schema = 'public' AND table_name <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap()
    {
        let table: String = r.get(0);
        let column: String = r.get(1);
        let ty: String = r.get(2);
        let nullable: String = r.get(3);
        schema
            .entry(table)
            .or_default()
            .insert(column, (class(&ty), nullable == "YES"));
    }
    let mut indexes = BTreeSet::new();
    for r in sqlx::query(
        "SELECT t.relname::text, \
                (SELECT string_agg(a.attname::text, ',' ORDER BY k.ord) \
                   FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord) \
                   JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum), \
                ix.indisunique, ix.indpred IS NOT NULL \
         FROM pg_index ix \
         JOIN pg_class t ON t.oid = ix.indrelid \
         JOIN pg_namespace n ON n.oid = t.relnamespace \
         WHERE n.nspname = 'public' AND t.relname <> '_sqlx_migrations'",
    )
    .fetch_all(pool)
    .await
    .unwrap()
    {
        indexes.insert((r.get(0), r.get(1), r.get(2), r.get(3)));
    }
    (schema, indexes)
}

/// Both migration directories, applied to empty stores, give one schema.
#[tokio::test]
async fn the_postgres_schema_is_the_sqlite_schema() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = Store::open(&dir.path().join("berth.db"), true)
        .await
        .unwrap();
    let url = postgres::server().database().await;
    let pg = Store::connect(&StoreLocation::parse(&url).unwrap(), true)
        .await
        .unwrap();
    let (s_tables, s_indexes) = sqlite_schema(&sqlite).await;
    let (p_tables, p_indexes) = postgres_schema(&pg).await;
    assert!(s_tables.len() > 20, "{s_tables:?}");
    assert!(s_tables.contains_key("session_events"));
    for (table, columns) in &s_tables {
        assert_eq!(
            Some(columns),
            p_tables.get(table),
            "table {table}: sqlite (left) and postgres (right) differ"
        );
    }
    assert_eq!(
        s_tables.keys().collect::<Vec<_>>(),
        p_tables.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        s_indexes.difference(&p_indexes).collect::<Vec<_>>(),
        Vec::<&Index>::new(),
        "indexes sqlite has and postgres lacks"
    );
    assert_eq!(
        p_indexes.difference(&s_indexes).collect::<Vec<_>>(),
        Vec::<&Index>::new(),
        "indexes postgres has and sqlite lacks"
    );
    // Migrating again is a no-op on both.
    assert_eq!(
        Store::connect(&StoreLocation::parse(&url).unwrap(), false)
            .await
            .unwrap()
            .applied_migrations()
            .await
            .unwrap(),
        // 12 (SQLite's schema as of its 12) and each one since.
        (12..=pg.latest_migration()).collect::<Vec<_>>()
    );
}

/// A fixture on its own PostgreSQL database, whichever store the suite
/// runs on.
async fn postgres_fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    postgres::store_state_on_postgres(&dir.path().join("state")).await;
    let src = common::source_repo(dir.path());
    let f = Fixture::from_source(dir, src).await;
    assert_eq!(f.engine.store().backend(), berth_engine::Backend::Postgres);
    assert!(
        !f.state().db().exists(),
        "no SQLite file beside a PostgreSQL store"
    );
    f
}

/// An engine whose PostgreSQL writers take only the narrow locks (the
/// default), whatever `BERTH_STORE_LOCKS` says: what the tests below prove
/// correct without the one lock of `BERTH_STORE_LOCKS=single`.
fn narrow(engine: Engine) -> Engine {
    engine.store().serialise_writers(false);
    engine
}

/// Four engines on one PostgreSQL store (four processes' worth of pools
/// and write gates) append events concurrently while a follower reads
/// `after` its cursor, as `berth events --follow` and the outbox's
/// consumers do: it sees every event, each once, in id order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_postgres_a_follower_misses_no_event_of_concurrent_writers() {
    let f = postgres_fixture().await;
    let start = f.engine.latest_event_id().await.unwrap();
    const WRITERS: usize = 4;
    const EACH: usize = 25;
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let engine = narrow(Engine::open(f.state()).await.unwrap());
        writers.push(tokio::spawn(async move {
            for i in 0..EACH {
                engine
                    .create_task("demo", &format!("w{w} t{i}"), &user())
                    .await
                    .unwrap();
            }
        }));
    }
    let follower = Engine::open(f.state()).await.unwrap();
    let mut seen = Vec::new();
    let mut cursor = start;
    let mut writing = true;
    while writing {
        writing = !writers.iter().all(|w| w.is_finished());
        let page = follower
            .events(&EventFilter {
                after: Some(cursor),
                limit: Some(1000),
                ..EventFilter::default()
            })
            .await
            .unwrap();
        for e in page {
            assert!(e.id > cursor, "out of order: {} after {cursor}", e.id);
            cursor = e.id;
            seen.push(e.id);
        }
    }
    for w in writers {
        w.await.unwrap();
    }
    let all: Vec<i64> = f
        .engine
        .events(&EventFilter {
            after: Some(start),
            limit: Some(10_000),
            ..EventFilter::default()
        })
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert!(all.len() >= WRITERS * EACH, "{}", all.len());
    assert_eq!(seen, all, "the follower missed events the log holds");
}

/// Three engines on one PostgreSQL store (three processes' worth of pools
/// and write gates, no lock every writer takes) claim tasks for their own
/// agents, all at once: every agent gets a task while tasks are left, no
/// task goes to two agents, and each claimed task and its agent name each
/// other (none is left half-claimed). Then two engines at once take each
/// agent's first lease: one gets it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_postgres_concurrent_claimers_take_each_task_once() {
    let f = postgres_fixture().await;
    const ENGINES: usize = 3;
    const AGENTS: usize = 8;
    const SPARE: usize = 5;
    let agents_of = |e: usize| (0..AGENTS).map(move |a| format!("w{e}-{a}"));
    for e in 0..ENGINES {
        for name in agents_of(e) {
            f.agent(&name, AgentImpl::Noop).await;
        }
    }
    let mut made = BTreeSet::new();
    for i in 0..ENGINES * AGENTS + SPARE {
        let t = f
            .engine
            .create_task("demo", &format!("t{i}"), &user())
            .await
            .unwrap();
        made.insert(t.id);
    }
    let mut engines = Vec::new();
    for _ in 0..ENGINES {
        engines.push(Arc::new(narrow(Engine::open(f.state()).await.unwrap())));
    }
    let mut claimers = Vec::new();
    for (e, engine) in engines.iter().enumerate() {
        for name in agents_of(e) {
            let engine = engine.clone();
            claimers.push(tokio::spawn(async move {
                let task = engine.claim_task(&name).await.unwrap();
                (name, task)
            }));
        }
    }
    let mut claimed = BTreeMap::new();
    for c in claimers {
        let (agent, task) = c.await.unwrap();
        let task = task.unwrap_or_else(|| panic!("{agent} got no task while tasks were left"));
        assert!(made.contains(&task.id));
        if let Some(other) = claimed.insert(task.id.clone(), agent.clone()) {
            panic!("task {} claimed by {other} and {agent}", task.id);
        }
    }
    assert_eq!(claimed.len(), ENGINES * AGENTS);
    let tasks = f.engine.tasks(Some("demo")).await.unwrap();
    let todo = tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Todo)
        .count();
    assert_eq!(todo, SPARE, "the tasks nobody claimed are still to do");
    for t in tasks.iter().filter(|t| t.status != TaskStatus::Todo) {
        assert_eq!(t.status, TaskStatus::InProgress);
        let agent = claimed.get(&t.id).expect("a claimed task was claimed once");
        assert_eq!(t.agent.as_deref(), Some(agent.as_str()));
        assert_eq!(
            f.engine.agent(agent).await.unwrap().task.as_deref(),
            Some(t.id.as_str())
        );
    }
    let claims = common::events_of(&f.engine, "task.claimed").await;
    assert_eq!(claims.len(), ENGINES * AGENTS, "one task.claimed per claim");

    let mut takers = Vec::new();
    for e in 0..ENGINES {
        for name in agents_of(e) {
            for w in [e, (e + 1) % ENGINES] {
                let engine = engines[w].clone();
                let name = name.clone();
                takers.push(tokio::spawn(async move {
                    let lease = engine
                        .take_agent_lease(&name, &format!("worker-{w}"), Duration::from_secs(60))
                        .await
                        .unwrap();
                    (name, lease.is_some())
                }));
            }
        }
    }
    let mut holders: BTreeMap<String, usize> = BTreeMap::new();
    for t in takers {
        let (agent, took) = t.await.unwrap();
        *holders.entry(agent).or_default() += usize::from(took);
    }
    assert_eq!(holders.len(), ENGINES * AGENTS);
    for (agent, n) in holders {
        assert_eq!(n, 1, "{agent}'s first lease went to {n} workers");
    }
}

/// A follower in one engine wakes on an event another engine (its own pool:
/// another process, another host) appends: woken by the store's
/// notification, not by its poll interval (a minute: without the
/// notification the wait ends by the interval and the cause says so). On
/// SQLite the same follower polls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_follower_wakes_on_another_engines_append() {
    let f = postgres_fixture().await;
    let follower = Engine::open(f.state()).await.unwrap();
    let mut signal = follower.log_signal().await.unwrap();
    assert!(signal.listens());
    let before = follower.latest_event_id().await.unwrap();
    let writer = Engine::open(f.state()).await.unwrap();
    writer.create_task("demo", "wake", &user()).await.unwrap();
    assert_eq!(
        signal.wait(Duration::from_secs(60)).await,
        LogWake::Notified
    );
    assert!(follower.latest_event_id().await.unwrap() > before);

    let dir = tempfile::tempdir().unwrap();
    let sqlite = Engine::init(StateDir::new(dir.path().join("state")))
        .await
        .unwrap();
    let mut polled = sqlite.log_signal().await.unwrap();
    assert!(!polled.listens());
    assert_eq!(
        polled.wait(Duration::from_millis(1)).await,
        LogWake::Interval
    );
}

/// A real deadlock on PostgreSQL between two writers of two engines (two
/// pools: two hosts' worth), each updating the same two task rows in the
/// opposite order, held open at a barrier until both hold their first row.
/// The second runs through [`Store::retrying`] and appended an event
/// before the deadlock: PostgreSQL aborts it (the check runs in the writer
/// whose `deadlock_timeout` ends first: the second's is the default 1 s,
/// the first's 30 s), the first commits, and the second's whole body runs
/// again and commits. The end state is the second's, and its event is in
/// the log once: the aborted attempt's append went with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_postgres_a_deadlocked_write_runs_again_whole_and_appends_once() {
    let f = postgres_fixture().await;
    let a = f.engine.create_task("demo", "a", &user()).await.unwrap().id;
    let b = f.engine.create_task("demo", "b", &user()).await.unwrap().id;
    let first = narrow(Engine::open(f.state()).await.unwrap());
    let second = narrow(Engine::open(f.state()).await.unwrap());
    let barrier = Arc::new(tokio::sync::Barrier::new(2));

    let holder = tokio::spawn({
        let (barrier, a, b) = (barrier.clone(), a.clone(), b.clone());
        async move {
            let mut tx = first.store().write("first").await.unwrap();
            sqlx::query("SET LOCAL deadlock_timeout = '30s'")
                .execute(&mut *tx)
                .await
                .unwrap();
            retitle(&mut tx, &a, "first").await.unwrap();
            barrier.wait().await;
            // Waits for the second's row b until the second is aborted.
            retitle(&mut tx, &b, "first").await.unwrap();
            tx.commit().await.unwrap();
        }
    });

    let attempts = AtomicU32::new(0);
    let system = Actor::system();
    let outcome = second
        .store()
        .retrying("the second writer", || async {
            let n = attempts.fetch_add(1, Ordering::SeqCst) + 1;
            let mut tx = second.store().write("the second writer").await?;
            retitle(&mut tx, &b, "second").await?;
            emit(
                &mut tx,
                NewEvent::new("test.deadlock", &system)
                    .task(Some(&b))
                    .payload(serde_json::json!({ "attempt": n })),
            )
            .await?;
            if n == 1 {
                barrier.wait().await;
                first_waits(&f.engine).await;
            }
            // The first holds row a and waits for row b: a cycle.
            retitle(&mut tx, &a, "second").await?;
            tx.commit().await.map_err(stored)?;
            Ok(n)
        })
        .await;
    holder.await.unwrap();
    assert_eq!(outcome.unwrap(), 2, "aborted once, then committed");
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
    for id in [&a, &b] {
        assert_eq!(f.engine.task(id).await.unwrap().title, "second");
    }
    let appended = common::events_of(&f.engine, "test.deadlock").await;
    assert_eq!(appended.len(), 1, "{appended:?}");
    assert_eq!(appended[0].payload["attempt"], 2);
}

/// Sets task `id`'s title in `tx`.
async fn retitle(tx: &mut Tx, id: &str, title: &str) -> berth_engine::Result<()> {
    sqlx::query("UPDATE tasks SET title = $1 WHERE id = $2")
        .bind(title)
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(stored)?;
    Ok(())
}

/// A store error as the engine makes one (its SQLSTATE kept).
fn stored(source: sqlx::Error) -> berth_engine::EngineError {
    berth_engine::EngineError::Store {
        op: "the test's write",
        source,
    }
}

/// Returns once a backend of the store waits for a row lock (the first
/// writer, for row b): the second closes the cycle only then, so the
/// deadlock check runs in the second (its timeout ends first).
async fn first_waits(engine: &Engine) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity \
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .fetch_one(engine.store().pool())
        .await
        .unwrap();
        if waiting > 0 {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the first writer never waited"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
