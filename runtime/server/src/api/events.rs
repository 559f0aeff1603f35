//! `berth events|metrics|outbox drain`, and the live stream of the log.
//!
//! The stream reads the store, never an in-process feed: it starts at a
//! cursor (`after`, or `Last-Event-ID` when a browser reconnects, or the
//! log's newest id when neither is given) and asks the engine for what
//! follows, so events written by any process arrive, in order, once each.
//! Between reads it waits for the server's follower to see the cursor move.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use berth_engine::{Engine, Event, EventFilter, Metrics, OutboxMessage};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::{page_limit, resolve_task, within_page_bytes};
use crate::AppState;
use crate::body::QueryArgs;
use crate::error::ApiError;

/// The most events one list answer holds; page on with `after`.
pub(crate) const MAX_LIMIT: i64 = 1_000;
const DEFAULT_LIMIT: i64 = 100;
/// How many events the stream reads from the store at a time.
const STREAM_BATCH: i64 = 256;
/// A stream looks at the store at least this often, even when the follower
/// is quiet (a safety net: the follower polls far more often).
const STREAM_IDLE_RECHECK: Duration = Duration::from_secs(5);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    agent: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    task: Option<String>,
    action: Option<String>,
    after: Option<i64>,
    limit: Option<i64>,
}

pub(crate) async fn list(
    State(app): State<AppState>,
    QueryArgs(q): QueryArgs<ListQuery>,
) -> Result<Json<Vec<Event>>, ApiError> {
    let limit = page_limit(q.limit, DEFAULT_LIMIT, MAX_LIMIT)?;
    let task = resolve_task(&app.engine, q.task).await?;
    let page = app
        .engine
        .events(&EventFilter {
            agent: q.agent,
            kind: q.kind,
            task,
            action: q.action,
            after: q.after,
            limit: Some(limit),
        })
        .await?;
    Ok(Json(within_page_bytes(page)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamQuery {
    agent: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
    task: Option<String>,
    action: Option<String>,
    after: Option<i64>,
}

/// Server-sent events: one `message` per log event, its `id` the event's
/// id, its data the event as JSON.
pub(crate) async fn stream(
    State(app): State<AppState>,
    headers: HeaderMap,
    QueryArgs(q): QueryArgs<StreamQuery>,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    let resumed = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.trim().parse::<i64>().map_err(|_| {
                ApiError::bad_request(
                    "invalid_header",
                    format!("Last-Event-ID must be an event id, not `{v}`"),
                )
            })
        })
        .transpose()?;
    let after = match resumed.or(q.after) {
        Some(a) => a,
        None => app.engine.latest_event_id().await?,
    };
    let task = resolve_task(&app.engine, q.task).await?;
    let follow = Follow {
        engine: app.engine.clone(),
        filter: EventFilter {
            agent: q.agent,
            kind: q.kind,
            task,
            action: q.action,
            after: Some(after),
            limit: Some(STREAM_BATCH),
        },
        buffered: VecDeque::new(),
        latest: app.log.subscribe(),
        shutdown: app.shutdown.clone(),
        failed: false,
    };
    let stream =
        futures_util::stream::unfold(
            follow,
            |mut f| async move { f.next().await.map(|e| (Ok(e), f)) },
        );
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

struct Follow {
    engine: Arc<Engine>,
    filter: EventFilter,
    buffered: VecDeque<Event>,
    latest: watch::Receiver<i64>,
    shutdown: watch::Receiver<bool>,
    failed: bool,
}

impl Follow {
    /// The next event to send; `None` ends the stream (shutdown, or after
    /// a store error has been sent as an `error` event).
    async fn next(&mut self) -> Option<SseEvent> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(e) = self.buffered.pop_front() {
                self.filter.after = Some(e.id);
                let data = serde_json::to_string(&e).unwrap_or_default();
                return Some(SseEvent::default().id(e.id.to_string()).data(data));
            }
            if *self.shutdown.borrow() {
                return None;
            }
            // Marks the current cursor seen *before* reading, so a move
            // that happens during the read wakes the wait below.
            self.latest.borrow_and_update();
            match self.engine.events(&self.filter).await {
                Ok(events) if !events.is_empty() => {
                    self.buffered.extend(events);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    self.failed = true;
                    let body = crate::error::ApiError::from(e).body();
                    return Some(SseEvent::default().event("error").data(body));
                }
            }
            tokio::select! {
                changed = self.latest.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                _ = self.shutdown.wait_for(|s| *s) => return None,
                _ = tokio::time::sleep(STREAM_IDLE_RECHECK) => {}
            }
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MetricsQuery {
    agent: Option<String>,
}

pub(crate) async fn metrics(
    State(app): State<AppState>,
    QueryArgs(q): QueryArgs<MetricsQuery>,
) -> Result<Json<Metrics>, ApiError> {
    Ok(Json(app.engine.metrics(q.agent.as_deref()).await?))
}

#[derive(Debug, Serialize)]
pub(crate) struct Drained {
    messages: Vec<OutboxMessage>,
    pruned: u64,
}

/// Every undelivered outbox message, its row deleted (two drainers never
/// get one message twice).
pub(crate) async fn drain_outbox(State(app): State<AppState>) -> Result<Json<Drained>, ApiError> {
    let (messages, pruned) = app.engine.drain_outbox().await?;
    Ok(Json(Drained { messages, pruned }))
}
