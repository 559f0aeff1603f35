//! The durable prompt queue (issue 18, with kandev's semantics): messages
//! for an agent's session — a task's first instructions, a person's
//! `berth prompt`, later automation — kept in the store until the agent's
//! executor accepted them.
//!
//! - Sending records the prompt `queued`, with the reason it waits when
//!   its session is not promptable now (busy: a turn running, the agent
//!   awaiting approval or paused; or no open session — a prompt never
//!   opens one). A promptable session gets it at the executor's next
//!   [`Engine::reserve_prompt`], which is at once for a driver that waits.
//! - Identical observations coalesce by their key (task, repository, PR,
//!   event) into the pending row; different events or PRs never merge. A
//!   sender that asks replaces the pending prompt of the same kind for the
//!   same PR in place instead of appending another.
//! - Delivery reserves the head row without deleting it: a guarded move of
//!   its session to `running` and of the row to `reserved` under a fresh
//!   token, by this process (`host:pid:start`), in one transaction. The row
//!   is acknowledged only once the executor accepted the prompt. A process
//!   that dies in between leaves the row reserved by a dead process: the
//!   next reservation puts it back at its place and delivers it again
//!   (at-least-once: a crash after acceptance delivers twice; nothing is
//!   lost). The delivery half lives in `prompt_delivery.rs`.
//! - Archiving or deleting a task purges its queued and reserved rows,
//!   ends its sessions and advances its queue generation in the archive's
//!   own transaction (`removal.rs` calls [`purge_task`]): a reservation
//!   that loses that race cannot be acknowledged, and a row carrying an
//!   older generation is purged instead of delivered.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, ActorKind, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms, short};
use crate::sessions::{Session, SessionStatus, open_session_of};
use crate::store::Tx;

/// The largest prompt body taken, in bytes.
pub const MAX_BODY: usize = 64 * 1024;

/// What an observation is about: prompts with equal keys (and the same
/// task) are one observation and coalesce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptKey {
    pub repository: String,
    /// The PR (its number or URL), when the observation is about one.
    #[serde(default)]
    pub pr: Option<String>,
    /// The event observed (`ci_failed`, `review_requested`, `merged`, …).
    pub event: String,
}

/// A prompt to send.
#[derive(Debug, Clone)]
pub struct NewPrompt {
    pub agent: String,
    /// The task whose session it is for; None: the agent's current task
    /// (or its newest open session's).
    pub task: Option<String>,
    /// What sent it: `message` (a person), `task` (its first
    /// instructions), or an automation's name (`lifecycle`, `auto_fix`).
    pub kind: String,
    pub body: String,
    /// Coalesce identical observations by this key.
    pub key: Option<PromptKey>,
    /// Replace the pending prompt of the same kind for the same PR instead
    /// of appending (needs `key`).
    pub replace: bool,
}

impl NewPrompt {
    /// A person's message for `agent`'s current session.
    pub fn message(agent: &str, body: &str) -> NewPrompt {
        NewPrompt {
            agent: agent.to_string(),
            task: None,
            kind: "message".into(),
            body: body.to_string(),
            key: None,
            replace: false,
        }
    }
}

/// Where a prompt stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptStatus {
    /// Waiting for a promptable session (`reason` says why it waits).
    Queued,
    /// Handed to the executor, not yet acknowledged.
    Reserved,
    /// The executor accepted it.
    Acknowledged,
    /// Its task was archived or deleted before it was acknowledged.
    Purged,
}

impl PromptStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PromptStatus::Queued => "queued",
            PromptStatus::Reserved => "reserved",
            PromptStatus::Acknowledged => "acknowledged",
            PromptStatus::Purged => "purged",
        }
    }

    fn parse(s: &str) -> Option<PromptStatus> {
        [
            PromptStatus::Queued,
            PromptStatus::Reserved,
            PromptStatus::Acknowledged,
            PromptStatus::Purged,
        ]
        .into_iter()
        .find(|p| p.as_str() == s)
    }
}

/// A prompt as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prompt {
    pub id: String,
    /// Its place in the agent's queue.
    pub seq: i64,
    pub agent: String,
    pub project: String,
    pub task: Option<String>,
    pub session: Option<String>,
    pub kind: String,
    pub body: String,
    pub coalesce_key: Option<String>,
    pub status: PromptStatus,
    /// Why it waits (queued), or why it was purged.
    pub reason: Option<String>,
    /// How many times it was handed to an executor.
    pub attempts: i64,
    /// How many identical observations were coalesced into it.
    pub coalesced: i64,
    pub generation: i64,
    pub sender: Actor,
    pub created_at: i64,
    pub updated_at: i64,
}

pub(crate) const PROMPT_COLUMNS: &str = "seq, id, agent, project, task_id, session_id, kind, body, coalesce_key, \
     status, reason, attempts, coalesced, generation, sender_kind, sender_id, created_at, updated_at";

pub(crate) fn prompt_from_row(r: &sqlx::any::AnyRow) -> Result<Prompt> {
    let op = "reading a prompt";
    let s = |c: &str| -> Result<String> { r.try_get(c).map_err(EngineError::store(op)) };
    let o = |c: &str| -> Result<Option<String>> { r.try_get(c).map_err(EngineError::store(op)) };
    let i = |c: &str| -> Result<i64> { r.try_get(c).map_err(EngineError::store(op)) };
    let status = s("status")?;
    let sender_kind = s("sender_kind")?;
    Ok(Prompt {
        id: s("id")?,
        seq: i("seq")?,
        agent: s("agent")?,
        project: s("project")?,
        task: o("task_id")?,
        session: o("session_id")?,
        kind: s("kind")?,
        body: s("body")?,
        coalesce_key: o("coalesce_key")?,
        status: PromptStatus::parse(&status)
            .ok_or_else(|| EngineError::corrupt(op, format!("prompt status `{status}`")))?,
        reason: o("reason")?,
        attempts: i("attempts")?,
        coalesced: i("coalesced")?,
        generation: i("generation")?,
        sender: Actor {
            kind: match sender_kind.as_str() {
                "agent" => ActorKind::Agent,
                "user" => ActorKind::User,
                "system" => ActorKind::System,
                other => return Err(EngineError::corrupt(op, format!("sender `{other}`"))),
            },
            id: s("sender_id")?,
        },
        created_at: i("created_at")?,
        updated_at: i("updated_at")?,
    })
}

/// What sending did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sent {
    /// A new row in the queue.
    Queued,
    /// The same observation was pending: counted into it.
    Coalesced,
    /// The pending prompt of its kind for its PR now says this.
    Replaced,
}

/// A sent prompt and what became of it.
#[derive(Debug, Clone, Serialize)]
pub struct PromptSent {
    pub sent: Sent,
    /// The row it is (or was counted into).
    pub prompt: Prompt,
    /// Whether its session is promptable now: the executor's next
    /// reservation delivers it.
    pub deliverable: bool,
}

/// A prompt handed to the executor (`prompt_delivery.rs`): start the
/// turn, then [`Engine::acknowledge_prompt`] with `token` once it accepted the prompt
/// (or [`Engine::release_prompt`] when the handoff failed).
#[derive(Debug, Clone, Serialize)]
pub struct Reservation {
    pub token: String,
    pub attempt: i64,
    pub prompt: Prompt,
    pub session: Session,
}

fn invalid(what: &'static str, value: &str, why: &str) -> EngineError {
    EngineError::Invalid {
        what,
        value: value.chars().take(64).collect(),
        why: why.to_string(),
    }
}

fn check_new(new: &NewPrompt) -> Result<()> {
    if new.body.trim().is_empty() {
        return Err(invalid("prompt", "", "it is empty"));
    }
    if new.body.len() > MAX_BODY {
        return Err(invalid(
            "prompt",
            &new.body,
            &format!("{} bytes; at most {MAX_BODY}", new.body.len()),
        ));
    }
    let kind_ok = !new.kind.is_empty()
        && new.kind.len() <= 32
        && new
            .kind
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b == b'_');
    if !kind_ok {
        return Err(invalid("prompt kind", &new.kind, "1 to 32 of a-z and `_`"));
    }
    if new.replace && new.key.is_none() {
        return Err(invalid(
            "prompt",
            &new.kind,
            "replacing needs the key (repository, PR, event) of what it replaces",
        ));
    }
    Ok(())
}

/// The task's queue generation (0 before its first archive), in `tx`.
pub(crate) async fn generation(tx: &mut Tx, task: &str) -> Result<i64> {
    let g: Option<i64> =
        sqlx::query_scalar("SELECT generation FROM task_prompt_generations WHERE task_id = $1")
            .bind(task)
            .fetch_optional(&mut **tx)
            .await
            .map_err(EngineError::store("reading a task's queue generation"))?;
    Ok(g.unwrap_or(0))
}

/// Whether `task` exists and is not archived, in `tx`.
pub(crate) async fn task_is_active(tx: &mut Tx, task: &str) -> Result<bool> {
    let archived: Option<Option<i64>> =
        sqlx::query_scalar("SELECT archived_at FROM tasks WHERE id = $1")
            .bind(task)
            .fetch_optional(&mut **tx)
            .await
            .map_err(EngineError::store("reading a prompt's task"))?;
    Ok(matches!(archived, Some(None)))
}

/// The session a prompt of `agent` for `task` goes to, and why it cannot
/// go now (None: deliverable), read in `tx`.
pub(crate) async fn readiness(
    tx: &mut Tx,
    agent: &str,
    task: Option<&str>,
) -> Result<(Option<Session>, Option<String>)> {
    let op = "reading an agent's readiness";
    let status: Option<String> = sqlx::query_scalar("SELECT status FROM agents WHERE name = $1")
        .bind(agent)
        .fetch_optional(&mut **tx)
        .await
        .map_err(EngineError::store(op))?;
    let Some(status) = status else {
        return Err(EngineError::UnknownAgent(agent.to_string()));
    };
    let Some(session) = open_session_of(tx, agent, task).await? else {
        let of = task.map_or(String::new(), |t| format!(" for task {}", short(t)));
        return Ok((
            None,
            Some(format!(
                "no promptable session: agent `{agent}` has no open session{of}; \
                 it is delivered when one opens"
            )),
        ));
    };
    let why = match status.as_str() {
        "awaiting_approval" => Some(format!("busy: agent `{agent}` awaits a person's approval")),
        "paused" => Some(format!(
            "busy: agent `{agent}` is paused (`berth agent resume {agent}`)"
        )),
        "removed" => Some(format!("agent `{agent}` was removed")),
        _ if session.status == SessionStatus::Running => Some(format!(
            "busy: session {} is running a turn",
            short(&session.id)
        )),
        _ => {
            let others: i64 = sqlx::query_scalar(
                "SELECT COUNT(*) FROM agent_sessions WHERE agent = $1 AND status = 'running' AND id <> $2",
            )
            .bind(agent)
            .bind(&session.id)
            .fetch_one(&mut **tx)
            .await
            .map_err(EngineError::store(op))?;
            (others > 0).then(|| format!("busy: agent `{agent}` runs a turn of another session"))
        }
    };
    Ok((Some(session), why))
}

pub(crate) async fn read_prompt(tx: &mut Tx, id: &str) -> Result<Prompt> {
    let row = sqlx::query(&format!(
        "SELECT {PROMPT_COLUMNS} FROM prompts WHERE id = $1"
    ))
    .bind(id)
    .fetch_one(&mut **tx)
    .await
    .map_err(EngineError::store("reading a prompt"))?;
    prompt_from_row(&row)
}

/// Purges `task`'s queued and reserved prompts, ends its sessions and
/// advances its queue generation, in the caller's transaction (the archive
/// or delete of the task): stale work cannot come back after it.
pub(crate) async fn purge_task(
    tx: &mut Tx,
    task: &str,
    project: &str,
    actor: &Actor,
    why: &str,
) -> Result<Vec<String>> {
    let op = "purging a task's prompts";
    let reason = format!("purged: {why}");
    let purged: Vec<String> = sqlx::query_scalar(
        "UPDATE prompts SET status = 'purged', reason = $1, updated_at = $2 \
         WHERE task_id = $3 AND status IN ('queued', 'reserved') RETURNING id",
    )
    .bind(&reason)
    .bind(now_ms())
    .bind(task)
    .fetch_all(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    let generation: i64 = sqlx::query_scalar(
        "INSERT INTO task_prompt_generations (task_id, generation) VALUES ($1, 1) \
         ON CONFLICT (task_id) DO UPDATE SET generation = task_prompt_generations.generation + 1 \
         RETURNING generation",
    )
    .bind(task)
    .fetch_one(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    let sessions = crate::sessions::end_task_sessions(tx, task).await?;
    // Its PRs' automation stops with it: no evaluation can wake the task.
    crate::pr_automation::state::purge_task(tx, task).await?;
    if !purged.is_empty() || !sessions.is_empty() {
        emit(
            tx,
            NewEvent::new(kind::PROMPT_PURGED, actor)
                .project(project)
                .task(Some(task))
                .payload(serde_json::json!({
                    "prompts": purged,
                    "sessions": sessions,
                    "generation": generation,
                    "reason": why,
                })),
        )
        .await?;
    }
    Ok(purged)
}

impl Engine {
    /// Sends a prompt to an agent's session: queued (with the reason it
    /// waits), coalesced into the same pending observation, or replacing
    /// the pending prompt of its kind for its PR. Refused for an archived
    /// or deleted task and for a removed agent.
    pub async fn send_prompt(&self, new: NewPrompt, actor: &Actor) -> Result<PromptSent> {
        check_new(&new)?;
        self.store
            .retrying("queueing a prompt", || self.send_prompt_once(&new, actor))
            .await
    }

    /// [`Engine::send_prompt`], one attempt: run again whole when
    /// PostgreSQL aborts it ([`crate::Store::retrying`]).
    async fn send_prompt_once(&self, new: &NewPrompt, actor: &Actor) -> Result<PromptSent> {
        let a = self.agent(&new.agent).await?;
        let explicit = match &new.task {
            Some(t) => Some(self.task(t).await?),
            None => None,
        };
        if let Some(t) = &explicit
            && t.project != a.project
        {
            return Err(EngineError::WrongProject {
                agent: a.name,
                actual: a.project,
                requested: t.project.clone(),
            });
        }
        let op = "queueing a prompt";
        let mut tx = self.store.write(op).await?;
        let task = match explicit {
            Some(t) => Some(t.id),
            None => {
                let held: Option<Option<String>> =
                    sqlx::query_scalar("SELECT task_id FROM agents WHERE name = $1")
                        .bind(&a.name)
                        .fetch_optional(&mut *tx)
                        .await
                        .map_err(EngineError::store(op))?;
                match held.flatten() {
                    Some(t) => Some(t),
                    None => open_session_of(&mut tx, &a.name, None)
                        .await?
                        .map(|s| s.task),
                }
            }
        };
        let generation = match &task {
            Some(t) => {
                if !task_is_active(&mut tx, t).await? {
                    return Err(EngineError::WrongStatus {
                        what: "task",
                        id: short(t).to_string(),
                        status: "archived or deleted".into(),
                        rule: "only an active task's session takes a prompt".into(),
                    });
                }
                generation(&mut tx, t).await?
            }
            None => 0,
        };
        let scope = task.as_deref().unwrap_or("-");
        let coalesce_key = new.key.as_ref().map(|k| {
            format!(
                "{scope}|{}|{}|{}",
                k.repository,
                k.pr.as_deref().unwrap_or("-"),
                k.event
            )
        });
        let replace_key = new.key.as_ref().map(|k| {
            format!(
                "{scope}|{}|{}|kind:{}",
                k.repository,
                k.pr.as_deref().unwrap_or("-"),
                new.kind
            )
        });
        let (_, reason) = readiness(&mut tx, &a.name, task.as_deref()).await?;
        let row = NewRow {
            agent: &a.name,
            project: &a.project,
            task: task.as_deref(),
            coalesce_key: coalesce_key.as_deref(),
            replace_key: replace_key.as_deref(),
            reason: reason.as_deref(),
            generation,
        };
        let coalesced = match row.coalesce_key {
            Some(key) => coalesce(&mut tx, &row, key).await?,
            None => None,
        };
        let replaced = match (coalesced.is_none() && new.replace, row.replace_key) {
            (true, Some(key)) => replace(&mut tx, &row, key, new, actor).await?,
            _ => None,
        };
        let (sent, id, event, payload) = match coalesced.or(replaced) {
            Some(done) => done,
            None => insert(&mut tx, &row, new, actor).await?,
        };
        emit(
            &mut tx,
            NewEvent::new(event, actor)
                .project(&a.project)
                .agent(&a.name)
                .task(task.as_deref())
                .payload(payload),
        )
        .await?;
        let prompt = read_prompt(&mut tx, &id).await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(PromptSent {
            sent,
            deliverable: reason.is_none() && prompt.status == PromptStatus::Queued,
            prompt,
        })
    }

    /// The pending prompts (queued and reserved) of `agent` (of every agent
    /// when None), in queue order.
    pub async fn prompt_queue(&self, agent: Option<&str>) -> Result<Vec<Prompt>> {
        if let Some(a) = agent {
            self.agent(a).await?;
        }
        let rows = sqlx::query(&format!(
            "SELECT {PROMPT_COLUMNS} FROM prompts WHERE (CAST($1 AS TEXT) IS NULL OR agent = $1) \
             AND status IN ('queued', 'reserved') ORDER BY seq"
        ))
        .bind(agent)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing the prompt queue"))?;
        rows.iter().map(prompt_from_row).collect()
    }

    /// A prompt by id, whatever its status.
    pub async fn prompt(&self, id: &str) -> Result<Prompt> {
        let row = sqlx::query(&format!(
            "SELECT {PROMPT_COLUMNS} FROM prompts WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading a prompt"))?;
        row.as_ref()
            .map(prompt_from_row)
            .transpose()?
            .ok_or_else(|| EngineError::UnknownId {
                what: "prompt",
                id: id.to_string(),
                list: "berth queue",
            })
    }
}

/// What a sent prompt's row holds besides the sender's text.
struct NewRow<'a> {
    agent: &'a str,
    project: &'a str,
    task: Option<&'a str>,
    coalesce_key: Option<&'a str>,
    replace_key: Option<&'a str>,
    reason: Option<&'a str>,
    generation: i64,
}

/// What sending did: how, to which row, and the event that says so.
type SendStep = (Sent, String, &'static str, serde_json::Value);

/// Counts the observation into the pending (queued or reserved) row with
/// the same key, if there is one.
async fn coalesce(tx: &mut Tx, row: &NewRow<'_>, key: &str) -> Result<Option<SendStep>> {
    let op = "coalescing a prompt";
    let id: Option<String> = sqlx::query_scalar(
        "UPDATE prompts SET coalesced = coalesced + 1, updated_at = $1 WHERE seq = \
         (SELECT seq FROM prompts WHERE agent = $2 AND coalesce_key = $3 \
          AND status IN ('queued', 'reserved') ORDER BY seq LIMIT 1) RETURNING id",
    )
    .bind(now_ms())
    .bind(row.agent)
    .bind(key)
    .fetch_optional(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    let Some(id) = id else { return Ok(None) };
    let coalesced: i64 = sqlx::query_scalar("SELECT coalesced FROM prompts WHERE id = $1")
        .bind(&id)
        .fetch_one(&mut **tx)
        .await
        .map_err(EngineError::store(op))?;
    let payload = serde_json::json!({
        "prompt": id,
        "coalesce_key": key,
        "coalesced": coalesced,
    });
    Ok(Some((Sent::Coalesced, id, kind::PROMPT_COALESCED, payload)))
}

/// Rewrites the queued row of the same kind for the same PR with the new
/// text, if there is one (it keeps its place).
async fn replace(
    tx: &mut Tx,
    row: &NewRow<'_>,
    key: &str,
    new: &NewPrompt,
    actor: &Actor,
) -> Result<Option<SendStep>> {
    let id: Option<String> = sqlx::query_scalar(
        "UPDATE prompts SET body = $1, coalesce_key = $2, sender_kind = $3, sender_id = $4, \
         updated_at = $5 WHERE seq = (SELECT seq FROM prompts WHERE agent = $6 AND replace_key = $7 \
         AND status = 'queued' ORDER BY seq LIMIT 1) RETURNING id",
    )
    .bind(&new.body)
    .bind(row.coalesce_key)
    .bind(actor.kind.as_str())
    .bind(&actor.id)
    .bind(now_ms())
    .bind(row.agent)
    .bind(key)
    .fetch_optional(&mut **tx)
    .await
    .map_err(EngineError::store("replacing a prompt"))?;
    Ok(id.map(|id| {
        let payload = serde_json::json!({ "prompt": id, "kind": new.kind, "replace_key": key });
        (Sent::Replaced, id, kind::PROMPT_REPLACED, payload)
    }))
}

/// A new row at the end of the agent's queue.
async fn insert(tx: &mut Tx, row: &NewRow<'_>, new: &NewPrompt, actor: &Actor) -> Result<SendStep> {
    let id = new_id();
    sqlx::query(
        "INSERT INTO prompts (id, agent, project, task_id, kind, body, coalesce_key, replace_key, \
         status, reason, generation, sender_kind, sender_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', $9, $10, $11, $12, $13, $13)",
    )
    .bind(&id)
    .bind(row.agent)
    .bind(row.project)
    .bind(row.task)
    .bind(&new.kind)
    .bind(&new.body)
    .bind(row.coalesce_key)
    .bind(row.replace_key)
    .bind(row.reason)
    .bind(row.generation)
    .bind(actor.kind.as_str())
    .bind(&actor.id)
    .bind(now_ms())
    .execute(&mut **tx)
    .await
    .map_err(EngineError::store("queueing a prompt"))?;
    let payload = serde_json::json!({
        "prompt": id,
        "kind": new.kind,
        "reason": row.reason,
        "coalesce_key": row.coalesce_key,
        "generation": row.generation,
    });
    Ok((Sent::Queued, id, kind::PROMPT_QUEUED, payload))
}
