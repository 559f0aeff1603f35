//! Each fact stored once (issue 17): the decision with its action only, the
//! outbox by reference and emptied on delivery, the key not a second copy of
//! the id; a store an older berth made migrates and reads back the same; old
//! events are archived to a file before they leave the store.

use crate::common;

use berth_engine::{AgentImpl, Engine, EventFilter, Proposal, StateDir};
use berth_policy::{Action, Approval};
use common::{Fixture, named, user};

fn terminal(command: &str) -> Proposal {
    Proposal::by_agent(
        &named("dev-1"),
        Action::Terminal {
            command: command.into(),
        },
    )
}

/// Agent `dev-1` up in a runner berth, `terminal` auto-approved.
async fn runner_agent() -> Fixture {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    f.engine
        .up(&named("dev-1"), &named("demo"), None, &user())
        .await
        .unwrap();
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();
    f
}

/// The events of type `kind` about action `id`.
async fn events_of(f: &Fixture, kind: &str, id: &str) -> Vec<berth_engine::Event> {
    f.engine
        .events(&EventFilter {
            kind: Some(kind.into()),
            action: Some(id.into()),
            ..Default::default()
        })
        .await
        .unwrap()
}

/// A store made by berth at 789bfcb (schema version 4: the decision in the
/// action, its event and the outbox; processed outbox rows kept; the key a
/// copy of the id), dumped with `sqlite3 .dump`, with what `berth events
/// --json` and `berth actions --json` printed from it then. Opened by this
/// berth, it migrates, and the log and the actions read back the same.
#[tokio::test]
async fn a_store_made_before_migrates_and_reads_back_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDir::new(dir.path().join("state"));
    std::fs::create_dir_all(state.root()).unwrap();
    {
        use sqlx::ConnectOptions;
        let mut conn = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(state.db())
            .create_if_missing(true)
            .connect()
            .await
            .unwrap();
        sqlx::raw_sql(include_str!("fixtures/store_v4.sql"))
            .execute(&mut conn)
            .await
            .unwrap();
    }
    let engine = Engine::open(state).await.unwrap();
    let events = engine.events(&EventFilter::default()).await.unwrap();
    let expected: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/store_v4_events.json")).unwrap();
    assert_eq!(serde_json::to_value(&events).unwrap(), expected);
    let actions = engine.actions(&Default::default()).await.unwrap();
    let expected: serde_json::Value =
        serde_json::from_str(include_str!("fixtures/store_v4_actions.json")).unwrap();
    assert_eq!(serde_json::to_value(&actions).unwrap(), expected);

    let pool = engine.store().pool();
    // No key was given: none is stored, and each action is found by its id.
    let keys: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM proposed_actions WHERE idempotency_key IS NOT NULL",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    assert_eq!(keys, 0);
    for a in &actions {
        let found = engine.action_by_key(&a.id).await.unwrap().unwrap();
        assert_eq!(found.id, a.id);
    }
    // The one row not processed then is still to deliver, as its event.
    let pending = engine.pending_outbox().await.unwrap();
    let last = events.last().unwrap();
    assert_eq!(
        pending.iter().map(|m| m.id).collect::<Vec<_>>(),
        [last.id],
        "{pending:?}"
    );
    assert_eq!(pending[0].payload["payload"], last.payload);
    assert_eq!(pending[0].payload["event_id"], last.id);
}

/// A proposed action's decision is stored once, with the action; its
/// `proposed_action.created` event reads back whole (the action, the
/// decision, the key, the fields that are null).
#[tokio::test]
async fn the_decision_is_stored_once_and_the_event_reads_back_whole() {
    let f = runner_agent().await;
    let plain = f.engine.propose(terminal("true"), None).await.unwrap();
    let keyed = f
        .engine
        .propose(terminal("true").key("k-1"), None)
        .await
        .unwrap();
    let pool = f.engine.store().pool();
    let stored: Vec<(String, String)> = sqlx::query_as(
        "SELECT action_id, payload FROM session_events WHERE type = 'proposed_action.created' ORDER BY id",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    assert_eq!(stored.len(), 2);
    for (_, payload) in &stored {
        assert!(!payload.contains("decision"), "{payload}");
        assert!(!payload.contains("null"), "{payload}");
        assert!(!payload.contains(' '), "compact: {payload}");
    }
    let row: (String, String) =
        sqlx::query_as("SELECT decision, result FROM proposed_actions WHERE id = $1")
            .bind(&plain.id)
            .fetch_one(pool)
            .await
            .unwrap();
    assert!(
        !row.0.contains("null") && !row.1.contains("null"),
        "{row:?}"
    );
    let key_column = |id: &str| {
        let id = id.to_string();
        async move {
            sqlx::query_scalar::<_, Option<String>>(
                "SELECT idempotency_key FROM proposed_actions WHERE id = $1",
            )
            .bind(id)
            .fetch_one(pool)
            .await
            .unwrap()
        }
    };
    assert_eq!(key_column(&plain.id).await, None);
    assert_eq!(key_column(&keyed.id).await.as_deref(), Some("k-1"));

    for (p, key) in [(&plain, plain.id.as_str()), (&keyed, "k-1")] {
        let record = f.engine.action(&p.id).await.unwrap();
        assert_eq!(record.idempotency_key, key);
        // Stored without its nulls, read back the same.
        assert_eq!(record.decision, p.decision);
        let created = events_of(&f, "proposed_action.created", &p.id).await;
        let payload = &created[0].payload;
        assert_eq!(
            payload,
            &serde_json::json!({
                "status": "auto_approved",
                "action": record.action,
                "decision": record.decision,
                "held": null,
                "resolved_path": null,
                "idempotency_key": key,
            })
        );
        let executed = events_of(&f, "action.executed", &p.id).await;
        assert!(executed[0].payload["diagnostic"].is_null());
        // The summary of the row's result, joined back.
        let result = record.result.as_ref().unwrap();
        assert_eq!(executed[0].payload["result"]["exit_code"], 0);
        assert_eq!(
            executed[0].payload["result"]["host_cwd"],
            serde_json::to_value(result).unwrap()["host_cwd"]
        );
        let stored: String = sqlx::query_scalar(
            "SELECT payload FROM session_events WHERE type = 'action.executed' AND action_id = $1",
        )
        .bind(&p.id)
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(stored, r#"{"action_type":"terminal"}"#);
    }
    // A key is replayed; a second proposal by the same key is the first.
    let again = f
        .engine
        .propose(terminal("true").key("k-1"), None)
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.id, keyed.id);
    // The outbox names events; its messages carry them whole.
    let drained = f.engine.pending_outbox().await.unwrap();
    let events = f.engine.events(&EventFilter::default()).await.unwrap();
    assert_eq!(drained.len(), events.len());
    for (m, e) in drained.iter().zip(&events) {
        assert_eq!((m.id, &m.payload["payload"]), (e.id, &e.payload));
    }
}

/// Delivered outbox rows are deleted by the process that delivered them;
/// the log keeps every event.
#[tokio::test]
async fn delivered_outbox_rows_are_deleted_by_any_process() {
    let f = Fixture::new().await;
    f.engine.create_task("demo", "one", &user()).await.unwrap();
    let pending = f.engine.pending_outbox().await.unwrap();
    assert!(!pending.is_empty());
    let other = f.second().await;
    let deleted = other
        .mark_outbox_processed(pending.last().unwrap().id)
        .await
        .unwrap();
    assert_eq!(deleted as usize, pending.len());
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox")
        .fetch_one(f.engine.store().pool())
        .await
        .unwrap();
    assert_eq!(left, 0);
    assert_eq!(
        f.engine
            .events(&EventFilter::default())
            .await
            .unwrap()
            .len(),
        pending.len()
    );
}

/// `archive_events` writes the old events to a file, each as the log reads
/// it, then deletes exactly those: never one still in the outbox, never the
/// newest (the ids keep growing), nothing when the file cannot be made.
#[tokio::test]
async fn archiving_writes_the_old_events_then_deletes_only_those() {
    let f = Fixture::new().await;
    for title in ["one", "two"] {
        f.engine.create_task("demo", title, &user()).await.unwrap();
    }
    let delivered = f.engine.events(&EventFilter::default()).await.unwrap();
    f.engine.drain_outbox().await.unwrap();
    // Not delivered yet: kept, whatever its age.
    f.engine
        .create_task("demo", "three", &user())
        .await
        .unwrap();
    let all = f.engine.events(&EventFilter::default()).await.unwrap();
    let newest = all.last().unwrap().id;

    let to = f.dir.path().join("old.jsonl");
    std::fs::write(&to, "taken\n").unwrap();
    let far = berth_engine::ids::now_ms() + 86_400_000;
    assert!(f.engine.archive_events(far, &to).await.is_err());
    assert_eq!(f.engine.events(&EventFilter::default()).await.unwrap(), all);
    std::fs::remove_file(&to).unwrap();

    let done = f.engine.archive_events(far, &to).await.unwrap();
    let lines: Vec<berth_engine::Event> = std::fs::read_to_string(&to)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines, delivered);
    assert_eq!(done.events as usize, delivered.len());
    let left = f.engine.events(&EventFilter::default()).await.unwrap();
    assert_eq!(left, all[delivered.len()..]);
    assert_eq!(f.engine.latest_event_id().await.unwrap(), newest);
    // Deliver the rest: the newest stays; the next event's id follows it.
    f.engine.drain_outbox().await.unwrap();
    let again = f.dir.path().join("again.jsonl");
    f.engine.archive_events(far, &again).await.unwrap();
    let left = f.engine.events(&EventFilter::default()).await.unwrap();
    assert_eq!(left.iter().map(|e| e.id).collect::<Vec<_>>(), [newest]);
    f.engine.create_task("demo", "four", &user()).await.unwrap();
    assert!(f.engine.latest_event_id().await.unwrap() > newest);
    // Nothing older than the cut-off: nothing written, nothing deleted.
    let none = f.dir.path().join("none.jsonl");
    let done = f.engine.archive_events(0, &none).await.unwrap();
    assert_eq!((done.events, std::fs::read(&none).unwrap().len()), (0, 0));
}

/// Output cut to fit the store: the row's result no longer gives the
/// summary the log promised (the bytes of the whole output), so the event
/// keeps its own.
#[tokio::test]
async fn an_outcome_whose_output_was_cut_keeps_its_own_summary() {
    let f = runner_agent().await;
    let p = f
        .engine
        .propose(terminal("seq 1 30000"), None)
        .await
        .unwrap();
    let berth_engine::ProposeStatus::Executed { outcome } = &p.status else {
        panic!("{:?}", p.status)
    };
    let Some(berth_engine::ActionResult::Terminal { stdout, .. }) = &outcome.result else {
        panic!("{outcome:?}")
    };
    let whole = stdout.len();
    let record = f.engine.action(&p.id).await.unwrap();
    let Some(berth_engine::ActionResult::Terminal { stdout: kept, .. }) = &record.result else {
        panic!("{record:?}")
    };
    assert!(kept.len() < whole, "{} of {whole}", kept.len());
    let executed = events_of(&f, "action.executed", &p.id).await;
    assert_eq!(executed[0].payload["result"]["stdout_bytes"], whole);
}
