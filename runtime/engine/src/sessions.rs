//! Agents' sessions (issue 18): one conversation of an agent with its task,
//! spanning the task. A task has one primary session; prompts
//! (`prompts.rs`) are delivered to it.
//!
//! `idle → running → idle | waiting_for_input → running …`, and `ended`
//! from any other status. `running` is one turn under way: a prompt was
//! handed to the agent's program and it has not finished. A session is
//! opened explicitly — by the driver that starts work on a task — and
//! never by a prompt: a prompt for an agent with no promptable session
//! waits in the queue with its reason instead of creating a surprise one.
//!
//! Every status write is a guarded `UPDATE … WHERE status IN (what the
//! table allows)` checked by the rows it touched, as `transitions.rs` does
//! for tasks and agents: two processes never both start a turn of one
//! session. The process running a turn is recorded (`runner`,
//! `host:pid:start`), so a turn whose process died is found and ended
//! (`prompts.rs` reclaims it) instead of holding the session for good.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, EVENT_COLUMNS, EVENT_JOIN, NewEvent, emit, event_from_row, kind};
use crate::ids::{new_id, now_ms};
use crate::store::Tx;

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Between turns: a prompt is delivered at once.
    Idle,
    /// A turn is under way: prompts queue, never interrupting it.
    Running,
    /// The agent asked for input: a prompt is delivered at once.
    WaitingForInput,
    /// Over (its task archived or deleted, or ended by a person).
    Ended,
}

impl SessionStatus {
    pub const ALL: [SessionStatus; 4] = [
        SessionStatus::Idle,
        SessionStatus::Running,
        SessionStatus::WaitingForInput,
        SessionStatus::Ended,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Running => "running",
            SessionStatus::WaitingForInput => "waiting_for_input",
            SessionStatus::Ended => "ended",
        }
    }

    pub fn parse(s: &str) -> Option<SessionStatus> {
        SessionStatus::ALL.into_iter().find(|v| v.as_str() == s)
    }

    /// Whether a prompt is delivered to it at once.
    pub fn is_promptable(self) -> bool {
        matches!(self, SessionStatus::Idle | SessionStatus::WaitingForInput)
    }

    /// The table of moves.
    pub fn can_move_to(self, to: SessionStatus) -> bool {
        use SessionStatus::*;
        matches!(
            (self, to),
            (Idle | WaitingForInput, Running)
                | (Running, Idle | WaitingForInput)
                | (Idle | Running | WaitingForInput, Ended)
        )
    }

    /// The statuses `to` can be reached from, quoted for an `IN (…)`.
    fn sources_sql(to: SessionStatus) -> String {
        let quoted: Vec<String> = SessionStatus::ALL
            .into_iter()
            .filter(|s| s.can_move_to(to))
            .map(|s| format!("'{}'", s.as_str()))
            .collect();
        format!("({})", quoted.join(", "))
    }
}

/// A session as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub id: String,
    pub agent: String,
    pub project: String,
    pub task: String,
    pub status: SessionStatus,
    pub primary: bool,
    /// The process running its turn (`host:pid:start`), while running.
    pub runner: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub ended_at: Option<i64>,
    /// The session's directory in berth's state, where its turns' output
    /// is kept as it arrives (`session_output.rs`); None until a turn
    /// wrote there. Filled by [`Engine::session`] and [`Engine::sessions`].
    #[serde(default)]
    pub output_dir: Option<std::path::PathBuf>,
}

pub(crate) const SESSION_COLUMNS: &str = "id, agent, project, task_id, status, is_primary, runner, \
     created_at, updated_at, ended_at";

pub(crate) fn session_from_row(r: &sqlx::any::AnyRow) -> Result<Session> {
    let op = "reading a session";
    let get = EngineError::store(op);
    let status: String = r.try_get("status").map_err(get)?;
    let primary: i64 = r.try_get("is_primary").map_err(EngineError::store(op))?;
    Ok(Session {
        id: r.try_get("id").map_err(EngineError::store(op))?,
        agent: r.try_get("agent").map_err(EngineError::store(op))?,
        project: r.try_get("project").map_err(EngineError::store(op))?,
        task: r.try_get("task_id").map_err(EngineError::store(op))?,
        status: SessionStatus::parse(&status)
            .ok_or_else(|| EngineError::corrupt(op, format!("session status `{status}`")))?,
        primary: primary != 0,
        runner: r.try_get("runner").map_err(EngineError::store(op))?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
        updated_at: r.try_get("updated_at").map_err(EngineError::store(op))?,
        ended_at: r.try_get("ended_at").map_err(EngineError::store(op))?,
        output_dir: None,
    })
}

/// Moves session `id` to `to` in `tx` when the table allows it from its
/// status now (and, with `only_from`, from that status only). `runner`
/// is recorded for a move to `running` and cleared otherwise. Returns
/// whether it moved.
pub(crate) async fn move_session(
    tx: &mut Tx,
    id: &str,
    to: SessionStatus,
    only_from: Option<SessionStatus>,
    runner: Option<&str>,
) -> Result<bool> {
    let sources = match only_from {
        Some(from) if from.can_move_to(to) => format!("('{}')", from.as_str()),
        Some(_) => return Ok(false),
        None => SessionStatus::sources_sql(to),
    };
    let now = now_ms();
    let n = sqlx::query(&format!(
        "UPDATE agent_sessions SET status = $1, runner = $2, updated_at = $3, \
         ended_at = CASE WHEN $1 = 'ended' THEN $3 ELSE ended_at END \
         WHERE id = $4 AND status IN {sources}"
    ))
    .bind(to.as_str())
    .bind(runner.filter(|_| to == SessionStatus::Running))
    .bind(now)
    .bind(id)
    .execute(&mut **tx)
    .await
    .map_err(EngineError::store("moving a session"))?
    .rows_affected();
    Ok(n == 1)
}

/// The agent's open primary session for `task` (any open one of the agent
/// when `task` is None, the newest first), read in `tx`.
pub(crate) async fn open_session_of(
    tx: &mut Tx,
    agent: &str,
    task: Option<&str>,
) -> Result<Option<Session>> {
    let row = sqlx::query(&format!(
        "SELECT {SESSION_COLUMNS} FROM agent_sessions \
         WHERE agent = $1 AND (CAST($2 AS TEXT) IS NULL OR task_id = $2) \
           AND is_primary = 1 AND status <> 'ended' \
         ORDER BY created_at DESC, id LIMIT 1"
    ))
    .bind(agent)
    .bind(task)
    .fetch_optional(&mut **tx)
    .await
    .map_err(EngineError::store("reading a session"))?;
    row.as_ref().map(session_from_row).transpose()
}

/// The open primary session of task `task` (at most one), read in `db`.
async fn primary_session_of<'c, E>(db: E, task: &str) -> Result<Option<Session>>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let row = sqlx::query(&format!(
        "SELECT {SESSION_COLUMNS} FROM agent_sessions \
         WHERE task_id = $1 AND is_primary = 1 AND status <> 'ended'"
    ))
    .bind(task)
    .fetch_optional(db)
    .await
    .map_err(EngineError::store("reading a session"))?;
    row.as_ref().map(session_from_row).transpose()
}

/// Ends every open session of `task` in `tx` (its task was archived or
/// deleted). Returns their ids.
pub(crate) async fn end_task_sessions(tx: &mut Tx, task: &str) -> Result<Vec<String>> {
    let now = now_ms();
    sqlx::query_scalar(
        "UPDATE agent_sessions SET status = 'ended', runner = NULL, updated_at = $1, ended_at = $1 \
         WHERE task_id = $2 AND status <> 'ended' RETURNING id",
    )
    .bind(now)
    .bind(task)
    .fetch_all(&mut **tx)
    .await
    .map_err(EngineError::store("ending a task's sessions"))
}

impl Engine {
    /// Opens the primary session of `agent` for `task` (idle), or returns
    /// the one already open. The task must be in the agent's project and
    /// not archived.
    pub async fn open_session(&self, agent: &str, task: &str, actor: &Actor) -> Result<Session> {
        self.store
            .retrying("opening a session", || {
                self.open_session_once(agent, task, actor)
            })
            .await
    }

    /// [`Engine::open_session`], one attempt: run again whole when
    /// PostgreSQL aborts it ([`crate::Store::retrying`]).
    async fn open_session_once(&self, agent: &str, task: &str, actor: &Actor) -> Result<Session> {
        let a = self.agent(agent).await?;
        let t = self.task(task).await?;
        if t.project != a.project {
            return Err(EngineError::WrongProject {
                agent: a.name,
                actual: a.project,
                requested: t.project,
            });
        }
        let op = "opening a session";
        // Already open (the noop agent asks on every pass): a read, no
        // write transaction. Whether it may be opened is checked below.
        if let Some(s) = primary_session_of(self.store.pool(), &t.id).await?
            && s.agent == a.name
        {
            return Ok(s);
        }
        let mut tx = self.store.write(op).await?;
        // The task's row is held until commit: an archive waits, and so does
        // another opener of its primary session (one per task).
        let archived: Option<Option<i64>> = sqlx::query_scalar(&format!(
            "SELECT archived_at FROM tasks WHERE id = $1{}",
            tx.backend().for_update()
        ))
        .bind(&t.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        match archived {
            Some(None) => {}
            Some(Some(_)) | None => {
                return Err(EngineError::WrongStatus {
                    what: "task",
                    id: crate::ids::short(&t.id).to_string(),
                    status: "archived or deleted".into(),
                    rule: "a session is opened only for an active task".into(),
                });
            }
        }
        if let Some(s) = primary_session_of(&mut *tx, &t.id).await? {
            if s.agent != a.name {
                return Err(EngineError::WrongStatus {
                    what: "task",
                    id: crate::ids::short(&t.id).to_string(),
                    status: format!("in session {} of agent `{}`", s.id, s.agent),
                    rule: "a task has one primary session".into(),
                });
            }
            return Ok(s);
        }
        let id = new_id();
        let now = now_ms();
        sqlx::query(
            "INSERT INTO agent_sessions (id, agent, project, task_id, status, is_primary, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, 'idle', 1, $5, $5)",
        )
        .bind(&id)
        .bind(&a.name)
        .bind(&a.project)
        .bind(&t.id)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        emit(
            &mut tx,
            NewEvent::new(kind::SESSION_OPENED, actor)
                .project(&a.project)
                .agent(&a.name)
                .task(Some(&t.id))
                .payload(serde_json::json!({ "session": id, "primary": true })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        self.session(&id).await
    }

    /// A session by id.
    pub async fn session(&self, id: &str) -> Result<Session> {
        let row = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM agent_sessions WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading a session"))?;
        let s = row
            .as_ref()
            .map(session_from_row)
            .transpose()?
            .ok_or_else(|| EngineError::UnknownId {
                what: "session",
                id: id.to_string(),
                list: "berth sessions",
            })?;
        Ok(self.with_output_dir(s))
    }

    /// `s` with the directory its turns' output is kept in, when it has one.
    fn with_output_dir(&self, mut s: Session) -> Session {
        s.output_dir =
            crate::session_output::session_dir(&self.state, &s.id).filter(|d| d.is_dir());
        s
    }

    /// The sessions of `agent` (of every agent when None), oldest first.
    pub async fn sessions(&self, agent: Option<&str>) -> Result<Vec<Session>> {
        if let Some(a) = agent {
            self.agent(a).await?;
        }
        let rows = sqlx::query(&format!(
            "SELECT {SESSION_COLUMNS} FROM agent_sessions \
             WHERE (CAST($1 AS TEXT) IS NULL OR agent = $1) ORDER BY created_at, id"
        ))
        .bind(agent)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing sessions"))?;
        rows.iter()
            .map(|r| session_from_row(r).map(|s| self.with_output_dir(s)))
            .collect()
    }

    /// The latest `session.turn_ended` event of each of `agent`'s
    /// sessions, by session id: a session's last exit code and output
    /// tails, as the approvals page shows them.
    pub async fn last_turns(
        &self,
        agent: &str,
    ) -> Result<std::collections::HashMap<String, crate::events::Event>> {
        let session = self.store.backend().json_text("payload", "session");
        let rows = sqlx::query(&format!(
            "SELECT {EVENT_COLUMNS} FROM session_events e {EVENT_JOIN} WHERE e.id IN \
             (SELECT MAX(id) FROM session_events WHERE agent = $1 AND type = $2 \
              GROUP BY {session})"
        ))
        .bind(agent)
        .bind(kind::SESSION_TURN_ENDED)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("reading sessions' last turns"))?;
        let mut out = std::collections::HashMap::with_capacity(rows.len());
        for row in &rows {
            let e = event_from_row(row)?;
            if let Some(session) = e.payload["session"].as_str() {
                out.insert(session.to_string(), e);
            }
        }
        Ok(out)
    }

    /// The turn of session `id` ended: `running` → `idle`, or
    /// `waiting_for_input` when the agent asked for input. The next queued
    /// prompt becomes deliverable. Returns whether it moved (false: it was
    /// not running).
    pub async fn finish_turn(&self, id: &str, waiting_for_input: bool) -> Result<bool> {
        self.store
            .retrying("finishing a session's turn", || {
                self.finish_turn_once(id, waiting_for_input)
            })
            .await
    }

    /// [`Engine::finish_turn`], one attempt.
    async fn finish_turn_once(&self, id: &str, waiting_for_input: bool) -> Result<bool> {
        let to = if waiting_for_input {
            SessionStatus::WaitingForInput
        } else {
            SessionStatus::Idle
        };
        let mut tx = self.store.write("finishing a session's turn").await?;
        let moved = move_session(&mut tx, id, to, Some(SessionStatus::Running), None).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("finishing a session's turn"))?;
        Ok(moved)
    }

    /// Ends session `id` (`session.ended`). Its queued prompts stay queued,
    /// with their reason, for a session opened later for the task.
    pub async fn end_session(&self, id: &str, why: &str, actor: &Actor) -> Result<Session> {
        self.store
            .retrying("ending a session", || self.end_session_once(id, why, actor))
            .await
    }

    /// [`Engine::end_session`], one attempt.
    async fn end_session_once(&self, id: &str, why: &str, actor: &Actor) -> Result<Session> {
        let s = self.session(id).await?;
        let mut tx = self.store.write("ending a session").await?;
        if move_session(&mut tx, &s.id, SessionStatus::Ended, None, None).await? {
            emit(
                &mut tx,
                NewEvent::new(kind::SESSION_ENDED, actor)
                    .project(&s.project)
                    .agent(&s.agent)
                    .task(Some(&s.task))
                    .payload(serde_json::json!({ "session": s.id, "reason": why })),
            )
            .await?;
        }
        tx.commit()
            .await
            .map_err(EngineError::store("ending a session"))?;
        self.session(&s.id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_turn_leaves_a_promptable_session_and_ended_is_final() {
        use SessionStatus::*;
        assert!(Idle.can_move_to(Running));
        assert!(WaitingForInput.can_move_to(Running));
        assert!(!Running.can_move_to(Running), "one turn at a time");
        assert!(Running.can_move_to(Idle) && Running.can_move_to(WaitingForInput));
        for s in SessionStatus::ALL {
            assert!(!Ended.can_move_to(s), "{s:?}");
            assert_eq!(s.is_promptable(), matches!(s, Idle | WaitingForInput));
        }
        assert_eq!(
            SessionStatus::sources_sql(Running),
            "('idle', 'waiting_for_input')"
        );
    }
}
