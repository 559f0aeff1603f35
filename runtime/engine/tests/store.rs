#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The store on disk: WAL, migrations, the missing-state error, atomic
//! claims across processes' worth of connections, the log and the outbox.

use crate::common;

use std::collections::HashSet;

use berth_engine::{ActorKind, AgentImpl, Backend, Engine, EngineError, EventFilter, StateDir};
use common::{Fixture, named, user};

#[tokio::test]
async fn init_creates_a_wal_store_with_every_table() {
    let f = Fixture::new().await;
    let pool = f.engine.store().pool();
    let tables_sql = match f.engine.store().backend() {
        Backend::Sqlite => {
            let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(pool)
                .await
                .unwrap();
            assert_eq!(mode, "wal");
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'"
        }
        Backend::Postgres => {
            "SELECT table_name::text FROM information_schema.tables \
             WHERE table_schema = 'public' AND table_name NOT LIKE '\\_%' ESCAPE '\\'"
        }
    };
    let mut tables: Vec<String> = sqlx::query_scalar(tables_sql)
        .fetch_all(pool)
        .await
        .unwrap();
    tables.sort();
    assert_eq!(
        tables,
        [
            "agent_leases",
            "agent_sessions",
            "agents",
            "autonomy",
            "outbox",
            "pending_choices",
            "pipeline_runs",
            "pr_automation",
            "pr_checks",
            "pr_comments",
            "pr_review_requests",
            "pr_reviews",
            "pr_threads",
            "projects",
            "prompt_templates",
            "prompts",
            "proposed_actions",
            "prs",
            "session_events",
            "task_prompt_generations",
            "tasks"
        ]
    );
    let applied: Vec<i64> =
        sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY version")
            .fetch_all(pool)
            .await
            .unwrap();
    let expected: &[i64] = match f.engine.store().backend() {
        Backend::Sqlite => &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
        // PostgreSQL starts at SQLite's schema of 12.
        Backend::Postgres => &[12, 13, 14, 15],
    };
    assert_eq!(applied, expected);
    // Opening again applies nothing new and keeps the data.
    let again = f.second().await;
    assert_eq!(again.projects().await.unwrap().len(), 1);
}

#[tokio::test]
async fn a_missing_state_directory_says_to_run_init() {
    let dir = tempfile::tempdir().unwrap();
    let err = Engine::open(StateDir::new(dir.path().join("nope")))
        .await
        .err()
        .unwrap();
    assert!(matches!(err, EngineError::StateMissing { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("run `berth init`"), "{msg}");
    assert!(
        !dir.path().join("nope").exists(),
        "opening must not create the state"
    );
}

/// A store a newer berth migrated (a migration this binary does not know)
/// is not opened, and the error says whose it is and what to run: never a
/// migration down, never sqlx's "previously applied but missing".
#[tokio::test]
async fn a_store_a_newer_berth_migrated_says_to_run_that_berth() {
    let f = Fixture::new().await;
    let pool = f.engine.store().pool();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99, 'from a newer berth', $1, $2, 0)",
    )
    .bind(true)
    .bind(vec![0_u8; 48])
    .execute(pool)
    .await
    .unwrap();
    if f.engine.store().backend() == Backend::Sqlite {
        // What the newer berth records after its migrator ran.
        sqlx::query("PRAGMA user_version = 99")
            .execute(pool)
            .await
            .unwrap();
    }
    let latest = f.engine.store().latest_migration();
    let err = match Engine::open(f.state()).await {
        Ok(_) => panic!("a store migrated by a newer berth was opened"),
        Err(e) => e,
    };
    assert!(
        matches!(err, EngineError::StoreNewer { found: 99, known, .. } if known == latest),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("was migrated by a newer berth"), "{msg}");
    assert!(msg.contains(&format!("knows up to {latest}")), "{msg}");
}

#[tokio::test]
async fn unknown_names_and_ids_say_what_to_do() {
    let f = Fixture::new().await;
    let cases: Vec<(EngineError, &str)> = vec![
        (
            f.engine.agent("ghost").await.unwrap_err(),
            "unknown agent `ghost`",
        ),
        (
            f.engine.project("ghost").await.unwrap_err(),
            "unknown project `ghost`",
        ),
        (
            f.engine.action("abcd1234").await.unwrap_err(),
            "unknown action `abcd1234`: list them with `berth actions`",
        ),
        (f.engine.task("zz").await.unwrap_err(), "unknown task `zz`"),
        (f.engine.pr("7").await.unwrap_err(), "unknown PR `7`"),
        (
            f.engine
                .create_task("ghost", "t", &user())
                .await
                .unwrap_err(),
            "unknown project `ghost`",
        ),
    ];
    for (err, want) in cases {
        assert!(err.to_string().starts_with(want), "{err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_are_atomic_across_connections() {
    let f = Fixture::new().await;
    const AGENTS: usize = 6;
    const TASKS: usize = 4;
    for i in 0..AGENTS {
        f.agent(&format!("dev-{i}"), AgentImpl::Noop).await;
    }
    for i in 0..TASKS {
        f.engine
            .create_task("demo", &format!("task {i}"), &user())
            .await
            .unwrap();
    }
    // One engine (its own pool of connections) per agent, all at once.
    let mut engines = Vec::new();
    for _ in 0..AGENTS {
        engines.push(std::sync::Arc::new(f.second().await));
    }
    let mut handles = Vec::new();
    for (i, e) in engines.iter().enumerate() {
        let e = e.clone();
        handles.push(tokio::spawn(async move {
            // Twice: an agent that holds a task never takes a second.
            let a = e.claim_task(&format!("dev-{i}")).await.unwrap();
            let b = e.claim_task(&format!("dev-{i}")).await.unwrap();
            (a.map(|t| t.id), b.map(|t| t.id))
        }));
    }
    let mut won = Vec::new();
    for h in handles {
        let (a, b) = h.await.unwrap();
        assert!(
            a.is_none() || b.is_none(),
            "an agent claimed twice: {a:?} {b:?}"
        );
        won.extend(a.into_iter().chain(b));
    }
    let distinct: HashSet<_> = won.iter().collect();
    assert_eq!(won.len(), TASKS, "every task claimed once: {won:?}");
    assert_eq!(distinct.len(), TASKS);
    let claimed = f
        .engine
        .events(&EventFilter {
            kind: Some("task.claimed".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(claimed.len(), TASKS);
    assert!(claimed.iter().all(|e| e.actor.kind == ActorKind::Agent));
}

#[tokio::test]
async fn the_outbox_carries_the_same_facts_and_drains_once() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    f.engine.create_task("demo", "one", &user()).await.unwrap();
    let events = f.engine.events(&Default::default()).await.unwrap();
    let (drained, deleted) = f.engine.drain_outbox().await.unwrap();
    assert_eq!(deleted as usize, events.len());
    let kinds = |v: Vec<String>| v;
    assert_eq!(
        kinds(drained.iter().map(|m| m.kind.clone()).collect()),
        kinds(events.iter().map(|e| e.kind.clone()).collect()),
        "one outbox row per logged fact, in order"
    );
    for (m, e) in drained.iter().zip(&events) {
        assert_eq!(m.id, e.id);
        assert_eq!(m.payload["event_id"], e.id);
        assert_eq!(m.payload["payload"], e.payload);
    }
    let task_row = drained.iter().find(|m| m.kind == "task.created").unwrap();
    assert_eq!(task_row.aggregate_type, "task");
    // A second drain (another process) gets nothing; the log keeps everything.
    let (again, _) = f.second().await.drain_outbox().await.unwrap();
    assert!(again.is_empty());
    assert_eq!(f.engine.events(&Default::default()).await.unwrap(), events);
    // Drained rows are gone from the outbox.
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox")
        .fetch_one(f.engine.store().pool())
        .await
        .unwrap();
    assert_eq!(left, 0);
}

/// The outbox row is the store's to write (migration 15's trigger), in the
/// statement that appends the event: a row appended by any writer has
/// one, and a transaction that rolls back leaves neither.
#[tokio::test]
async fn every_appended_event_has_its_outbox_row_from_the_store_itself() {
    let f = Fixture::new().await;
    let pool = f.engine.store().pool();
    f.engine.drain_outbox().await.unwrap();
    let append = "INSERT INTO session_events (at, type, actor_kind, actor_id, payload) \
                  VALUES ($1, 'test.appended', 'user', 'test', '{}') RETURNING id";
    let id: i64 = sqlx::query_scalar(append)
        .bind(1_i64)
        .fetch_one(pool)
        .await
        .unwrap();
    let outbox: Vec<i64> = sqlx::query_scalar("SELECT event_id FROM outbox")
        .fetch_all(pool)
        .await
        .unwrap();
    assert_eq!(outbox, [id]);
    let mut tx = f.engine.store().write("a test").await.unwrap();
    let _: i64 = sqlx::query_scalar(append)
        .bind(2_i64)
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    let outbox: Vec<i64> = sqlx::query_scalar("SELECT event_id FROM outbox")
        .fetch_all(pool)
        .await
        .unwrap();
    assert_eq!(outbox, [id], "a rolled-back event leaves no outbox row");
}

#[tokio::test]
async fn agent_impl_is_durable_and_unknown_reads_as_real() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Noop).await;
    assert_eq!(
        f.second()
            .await
            .agent("dev-1")
            .await
            .unwrap()
            .implementation,
        AgentImpl::Noop
    );
    for stored in ["real", "REAL", "mystery", ""] {
        sqlx::query("UPDATE agents SET impl = $1 WHERE name = 'dev-1'")
            .bind(stored)
            .execute(f.engine.store().pool())
            .await
            .unwrap();
        assert_eq!(
            f.engine.agent("dev-1").await.unwrap().implementation,
            AgentImpl::Real,
            "{stored:?}"
        );
    }
}

#[tokio::test]
async fn a_full_id_that_does_not_exist_is_unknown() {
    let f = Fixture::new().await;
    let err = f.engine.action(&"ab".repeat(16)).await.unwrap_err();
    assert!(
        matches!(err, EngineError::UnknownId { what: "action", .. }),
        "{err:?}"
    );
}

#[tokio::test]
async fn the_latest_event_id_is_the_cursor_of_what_comes_next() {
    let f = Fixture::new().await;
    let before = f.engine.latest_event_id().await.unwrap();
    let all = f.engine.events(&EventFilter::default()).await.unwrap();
    assert_eq!(before, all.last().unwrap().id, "the newest event's id");
    f.engine.create_task("demo", "one", &user()).await.unwrap();
    // Another process's view sees the write: the store is the truth.
    let after = f.second().await.latest_event_id().await.unwrap();
    let new = f
        .engine
        .events(&EventFilter {
            after: Some(before),
            ..EventFilter::default()
        })
        .await
        .unwrap();
    assert_eq!(
        new.iter()
            .map(|e| (e.id, e.kind.as_str()))
            .collect::<Vec<_>>(),
        vec![(after, "task.created")]
    );
}

#[tokio::test]
async fn an_empty_log_has_cursor_zero() {
    let dir = tempfile::tempdir().unwrap();
    common::postgres::prepare_state(&dir.path().join("state")).await;
    let engine = Engine::init(StateDir::new(dir.path().join("state")))
        .await
        .unwrap();
    assert_eq!(engine.latest_event_id().await.unwrap(), 0);
}

/// A command of 100,000 simple commands (600 KB): opaque, so it waits for a
/// person even in auto mode, and what the store keeps of its decision — with
/// the action, in the log and in the outbox — is bounded, not 30 MB.
#[tokio::test]
async fn a_hundred_thousand_segment_command_stores_a_bounded_decision() {
    use berth_engine::stored_decision::MAX_STORED_DECISION_BYTES;
    use berth_policy::{Action, Approval, Stage, Verdict};

    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    f.engine
        .up(&named("dev-1"), &named("demo"), None, &user())
        .await
        .unwrap();
    f.engine
        .set_autonomy("dev-1", "*", Approval::AutoApprove, &user())
        .await
        .unwrap();
    let command = "true; ".repeat(100_000);
    let p = f
        .engine
        .propose(
            berth_engine::Proposal::by_agent(&named("dev-1"), Action::Terminal { command }),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        (p.decision.verdict, p.decision.stage),
        (Verdict::RequireApproval, Stage::Opaque),
        "{}",
        p.decision.reason
    );
    assert_eq!(p.status.name(), "pending");
    let pool = f.engine.store().pool();
    let stored: i64 =
        sqlx::query_scalar("SELECT LENGTH(decision) FROM proposed_actions WHERE id = $1")
            .bind(&p.id)
            .fetch_one(pool)
            .await
            .unwrap();
    assert!(
        stored as usize <= MAX_STORED_DECISION_BYTES,
        "{stored} bytes"
    );
    // The log holds neither the command nor the decision: the action does.
    let biggest: i64 = sqlx::query_scalar("SELECT MAX(LENGTH(payload)) FROM session_events")
        .fetch_one(pool)
        .await
        .unwrap();
    assert!((biggest as usize) < 4_096, "a {biggest} byte payload");
    let record = f.engine.action(&p.id).await.unwrap();
    assert!(record.decision.segments.is_empty());
    assert!(record.decision.omitted.is_some());
}

/// The store's version is recorded after the migrations ran, and a store
/// that has it opens without the migrator (which re-hashes every migration
/// on every open); a store an older berth made, without the version, runs
/// the migrator once and gets it.
#[tokio::test]
async fn a_migrated_store_records_its_version_and_opens_without_the_migrator() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("berth.db");
    let store = berth_engine::store::Store::open(&db, true).await.unwrap();
    let version = |s: &berth_engine::store::Store| {
        let pool = s.pool().clone();
        async move {
            sqlx::query_scalar::<_, i64>("PRAGMA user_version")
                .fetch_one(&pool)
                .await
                .unwrap()
        }
    };
    let latest = version(&store).await;
    assert!(latest >= 4, "{latest}");
    // The migrator would refuse this store (a shipped migration's checksum
    // changed); with the version recorded it is not run.
    sqlx::query("UPDATE _sqlx_migrations SET checksum = x'00' WHERE version = 1")
        .execute(store.pool())
        .await
        .unwrap();
    store.close().await;
    let store = berth_engine::store::Store::open(&db, false).await.unwrap();
    // Without the version (a store an older berth made), the migrator runs,
    // and here it finds the changed checksum: proof it ran.
    sqlx::query("PRAGMA user_version = 0")
        .execute(store.pool())
        .await
        .unwrap();
    store.close().await;
    let err = berth_engine::store::Store::open(&db, false)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Migrate { .. }), "{err}");
}

/// The WAL outlives the process that wrote it: closing neither
/// checkpoints it into the database nor deletes it, and the next opening
/// reads what was committed from it (one-shot CLI processes stop paying a
/// checkpoint and two file creations each).
#[tokio::test]
async fn the_wal_is_kept_between_processes_and_read_by_the_next() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("berth.db");
    let wal = dir.path().join("berth.db-wal");
    let store = berth_engine::store::Store::open(&db, true).await.unwrap();
    sqlx::query("CREATE TABLE kept (v TEXT)")
        .execute(store.pool())
        .await
        .unwrap();
    sqlx::query("INSERT INTO kept VALUES ('committed')")
        .execute(store.pool())
        .await
        .unwrap();
    let db_len = std::fs::metadata(&db).unwrap().len();
    store.close().await;
    let wal_len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    assert!(wal_len > 0, "the WAL was checkpointed or removed at close");
    assert_eq!(
        std::fs::metadata(&db).unwrap().len(),
        db_len,
        "close checkpointed into the database"
    );
    let store = berth_engine::store::Store::open(&db, false).await.unwrap();
    let v: String = sqlx::query_scalar("SELECT v FROM kept")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(v, "committed");
    store.close().await;
}
