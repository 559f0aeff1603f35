//! `POST /api/actions/stream`: a proposal whose command's output comes back
//! as it is written, then the action's end — what `berth exec` needs to hand
//! its action to a running server instead of opening the store and loading
//! the policy in a process of its own.
//!
//! The answer is newline-delimited JSON: `{"stdout":"<base64>"}` and
//! `{"stderr":"<base64>"}` lines while the command runs (bytes exactly as
//! written, in order within each stream), then one last line, either
//! `{"end": <ExecReport>}` (its `stdout` and `stderr` null when they were
//! streamed) or `{"error": {"code", "message"}}`. A reader
//! that stops reading holds the command's output back at its source, as
//! `berth exec` does in its own process.
//!
//! The proposal runs on a task of its own, so a client that goes away
//! neither cuts its record short nor leaves it `executing`: when the answer
//! is dropped before its last line (Ctrl-C on `berth exec`, a killed
//! client), the action the request proposed is cancelled as the person who
//! runs the server — found by its idempotency key, which the server makes
//! when the request brings none.
//!
//! `caller_env` (the caller's whole environment) runs the action as the
//! caller's own process would have: a runner berth's command takes `PATH`
//! and the inherited variables from it rather than from the server's
//! (`Sandbox::environment_from`). Where an engine setting (`BERTH_*`,
//! `DOCKER_*`) differs, the server's engine would act otherwise than the
//! caller's: the answer is 409 `caller_environment_differs` and nothing is
//! proposed. The variables live as long as the proposal: never logged,
//! stored or passed on beyond the command's own environment.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use berth_engine::{
    ActionParams, ActionStatus, Actor, AgentName, CallerEnv, Engine, EngineError, OutputChunk,
    Proposal, output_channel,
};
use berth_policy::Action;
use serde::Deserialize;
use tokio::sync::mpsc;

use super::{parse_name, required, resolve_task};
use crate::AppState;
use crate::body::JsonBody;
use crate::error::ApiError;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StreamBody {
    agent: Option<String>,
    action: Option<Action>,
    #[serde(default)]
    params: ActionParams,
    /// The task the action serves (id or prefix).
    task: Option<String>,
    idempotency_key: Option<String>,
    /// False: no output lines, only the end (which holds the recorded
    /// output, capped).
    #[serde(default = "yes")]
    output: bool,
    /// The caller's environment: the action runs as the caller's own
    /// process would have run it (see the module docs).
    caller_env: Option<BTreeMap<String, String>>,
}

fn yes() -> bool {
    true
}

/// Lines waiting for the client: a few, so a slow reader holds the command.
const LINES_AHEAD: usize = 4;

/// How long a dropped answer's cancel looks for its action to start
/// executing before it leaves it be (the proposal is decided by then).
const CANCEL_SEARCH: Duration = Duration::from_secs(30);

/// Proposes and streams. See the module docs.
pub(crate) async fn propose_streaming(
    State(app): State<AppState>,
    JsonBody(b): JsonBody<StreamBody>,
) -> Result<Response, ApiError> {
    let asked_at = berth_engine::ids::now_ms();
    let example = r#"{"agent": "dev-1", "action": {"type": "terminal", "command": "cargo test"}}"#;
    let agent: AgentName = parse_name(&required(b.agent, "agent", example)?)?;
    let action = required(b.action, "action", example)?;
    let caller_env = b.caller_env.map(CallerEnv::new);
    if let Some(name) = caller_env
        .as_ref()
        .and_then(CallerEnv::engine_setting_differs)
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "caller_environment_differs",
            format!(
                "`{name}` is set otherwise in the caller's environment than in this server's, and it \
                 chooses how berth works: run it in the caller's own process \
                 (`berth exec --local`), or start `berth serve` from that environment"
            ),
        ));
    }
    let task = resolve_task(&app.engine, b.task).await?;
    let key = b
        .idempotency_key
        .unwrap_or_else(|| format!("stream-{}", berth_engine::ids::new_id()));
    let mut proposal = Proposal::by_agent(&agent, action)
        .params(b.params)
        .task(task)
        .key(key.clone());
    if let Some(env) = caller_env {
        proposal = proposal.caller_env(env);
    }

    let (lines, received) = mpsc::channel::<Bytes>(LINES_AHEAD);
    let ended = Arc::new(AtomicBool::new(false));
    tokio::spawn(run(
        app.engine.clone(),
        proposal,
        b.output,
        lines,
        ended.clone(),
    ));
    let watch = DroppedAnswer {
        engine: app.engine.clone(),
        user: app.user.clone(),
        key,
        asked_at,
        ended,
    };
    let body = futures_util::stream::unfold((received, watch), |(mut received, watch)| async {
        received.recv().await.map(|line| {
            (
                Ok::<Bytes, std::convert::Infallible>(line),
                (received, watch),
            )
        })
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(body),
    )
        .into_response())
}

/// The proposal, its output forwarded line by line, and its last line.
async fn run(
    engine: Arc<Engine>,
    proposal: Proposal,
    output: bool,
    lines: mpsc::Sender<Bytes>,
    ended: Arc<AtomicBool>,
) {
    let (sink, chunks) = match output {
        true => {
            let (sink, chunks) = output_channel();
            (Some(sink), Some(chunks))
        }
        false => (None, None),
    };
    let forward = async {
        let Some(mut chunks) = chunks else { return };
        let mut open = true;
        while let Some(chunk) = chunks.recv().await {
            // A client gone: go on draining, so the command is never held
            // by a reader nobody is; the dropped answer cancels it.
            if open {
                open = lines.send(output_line(&chunk)).await.is_ok();
            }
        }
    };
    let (proposed, ()) = tokio::join!(engine.propose(proposal, sink), forward);
    let last = match proposed {
        Ok(p) => match engine.exec_report(&p).await {
            Ok(mut report) => {
                // Streamed already: not sent twice.
                if output {
                    report.stdout = None;
                    report.stderr = None;
                }
                serde_json::json!({ "end": report })
            }
            Err(e) => error_line(&e),
        },
        Err(e) => error_line(&e),
    };
    ended.store(true, Ordering::SeqCst);
    let mut line = serde_json::to_vec(&last).unwrap_or_else(|_| {
        br#"{"error":{"code":"internal","message":"the end could not be encoded"}}"#.to_vec()
    });
    line.push(b'\n');
    let _ = lines.send(Bytes::from(line)).await;
}

fn output_line(chunk: &OutputChunk) -> Bytes {
    let (name, bytes) = match chunk {
        OutputChunk::Stdout(b) => ("stdout", b),
        OutputChunk::Stderr(b) => ("stderr", b),
    };
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut line = Vec::with_capacity(encoded.len() + name.len() + 8);
    line.extend_from_slice(b"{\"");
    line.extend_from_slice(name.as_bytes());
    line.extend_from_slice(b"\":\"");
    line.extend_from_slice(encoded.as_bytes());
    line.extend_from_slice(b"\"}\n");
    Bytes::from(line)
}

/// The error as the CLI would print it: its sentence, then each cause the
/// sentence does not already quote.
fn error_line(e: &EngineError) -> serde_json::Value {
    let mut message = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = c.source();
    }
    serde_json::json!({ "error": { "code": e.code(), "message": message } })
}

/// Held by the answer's body: dropped before the proposal ended, it
/// cancels the action the request proposed — never one a key already named
/// before the request came (a retry's replay answers with that one).
struct DroppedAnswer {
    engine: Arc<Engine>,
    user: Actor,
    key: String,
    /// When the request came (ms since the epoch).
    asked_at: i64,
    ended: Arc<AtomicBool>,
}

impl Drop for DroppedAnswer {
    fn drop(&mut self) {
        if self.ended.load(Ordering::SeqCst) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (engine, user, key, asked_at, ended) = (
            self.engine.clone(),
            self.user.clone(),
            std::mem::take(&mut self.key),
            self.asked_at,
            self.ended.clone(),
        );
        runtime.spawn(async move {
            let deadline = tokio::time::Instant::now() + CANCEL_SEARCH;
            while !ended.load(Ordering::SeqCst) && tokio::time::Instant::now() < deadline {
                match engine.action_by_key(&key).await {
                    // Proposed before this request: not its own.
                    Ok(Some(a)) if a.created_at < asked_at => return,
                    Ok(Some(a)) if a.status == ActionStatus::Executing => {
                        match engine.cancel_action(&a.id, &user).await {
                            Ok(_) => tracing::info!(action = %a.id, "its client went away: cancelled"),
                            Err(e) => tracing::warn!(action = %a.id, "its client went away; the cancel failed: {e}"),
                        }
                        return;
                    }
                    // Recorded, about to run.
                    Ok(Some(a)) if a.status == ActionStatus::Approved => {}
                    // Decided and not running (pending, refused, ended).
                    Ok(Some(_)) => return,
                    Ok(None) => {}
                    Err(e) => {
                        tracing::warn!("its client went away; looking for the action failed: {e}");
                        return;
                    }
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
    }
}
