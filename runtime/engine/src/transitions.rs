//! The task and agent state machines, written down once.
//!
//! ARCHITECTURE.md ("Tasks") draws the task's statuses; [`TaskStatus::can_move_to`]
//! is that drawing as a table, and [`AgentStatus::can_move_to`] is the
//! agent's loop beside it. Every status write of the engine goes through
//! [`task`] or [`agent`]: one conditional UPDATE whose `WHERE status IN (…)`
//! is the table's list of statuses allowed to move there, checked by the
//! rows it touched. A move the table forbids is
//! [`EngineError::IllegalTransition`] and writes nothing — never a silent
//! overwrite of whatever another step (or another process) wrote first.
//! A move to the status the row already has is [`Moved::Already`]: nothing
//! is written, so settling the same fact twice (a retry, a replay) is safe.

use serde::{Deserialize, Serialize};

use crate::error::{EngineError, Result};
use crate::events::{NewEvent, emit};
use crate::ids::now_ms;
use crate::store::Tx;

/// Where a task stands (ARCHITECTURE.md, "Tasks").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Todo,
    InProgress,
    AwaitingApproval,
    InReview,
    Done,
    Returned,
    Blocked,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Todo => "todo",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::AwaitingApproval => "awaiting_approval",
            TaskStatus::InReview => "in_review",
            TaskStatus::Done => "done",
            TaskStatus::Returned => "returned",
            TaskStatus::Blocked => "blocked",
        }
    }

    pub fn parse(s: &str) -> Option<TaskStatus> {
        Some(match s {
            "todo" => TaskStatus::Todo,
            "in_progress" => TaskStatus::InProgress,
            "awaiting_approval" => TaskStatus::AwaitingApproval,
            "in_review" => TaskStatus::InReview,
            "done" => TaskStatus::Done,
            "returned" => TaskStatus::Returned,
            "blocked" => TaskStatus::Blocked,
            _ => return None,
        })
    }
}

/// Where an agent's loop stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentStatus {
    /// No task.
    Idle,
    /// Working on its task.
    Working,
    /// An action of its delivery chain waits for a person.
    AwaitingApproval,
    /// Its PR is open; the gate is with a person.
    InReview,
    /// Stopped by the circuit breaker until resumed.
    Paused,
    /// `berth agent rm`: its berth, repository and records are gone; the row
    /// stays for the history that names it. `berth agent activate` revives it.
    Removed,
}

impl AgentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentStatus::Idle => "idle",
            AgentStatus::Working => "working",
            AgentStatus::AwaitingApproval => "awaiting_approval",
            AgentStatus::InReview => "in_review",
            AgentStatus::Paused => "paused",
            AgentStatus::Removed => "removed",
        }
    }

    pub(crate) fn parse(s: &str) -> Result<AgentStatus> {
        Ok(match s {
            "idle" => AgentStatus::Idle,
            "working" => AgentStatus::Working,
            "awaiting_approval" => AgentStatus::AwaitingApproval,
            "in_review" => AgentStatus::InReview,
            "paused" => AgentStatus::Paused,
            "removed" => AgentStatus::Removed,
            other => {
                return Err(EngineError::corrupt(
                    "reading an agent",
                    format!("status `{other}`"),
                ));
            }
        })
    }
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 7] = [
        TaskStatus::Todo,
        TaskStatus::InProgress,
        TaskStatus::AwaitingApproval,
        TaskStatus::InReview,
        TaskStatus::Done,
        TaskStatus::Returned,
        TaskStatus::Blocked,
    ];

    /// Whether a task may go from this status to `to` (ARCHITECTURE.md,
    /// "Tasks"). The drawing's `todo → in_progress → (awaiting_approval ⇄
    /// in_progress) → in_review → done | returned`, `blocked` from a
    /// working status, and the PR's auto-fix round (`in_review →
    /// in_progress`, and `in_review → awaiting_approval` when the round's
    /// next delivery step waits for a person); a working task is returned
    /// when its delivery is refused or fails; a returned or blocked task
    /// goes back to work when it runs again (a pipeline's new run,
    /// `berth retry`). `done` is final.
    pub fn can_move_to(self, to: TaskStatus) -> bool {
        use TaskStatus::*;
        matches!(
            (self, to),
            (Todo, InProgress)
                | (
                    InProgress,
                    AwaitingApproval | InReview | Done | Returned | Blocked
                )
                | (AwaitingApproval, InProgress | InReview | Returned | Blocked)
                | (InReview, InProgress | AwaitingApproval | Done | Returned)
                | (Returned, InProgress)
                | (Blocked, InProgress)
        )
    }

    pub fn can_start(self) -> bool {
        self.can_move_to(TaskStatus::InProgress)
    }

    pub fn can_wait(self) -> bool {
        self.can_move_to(TaskStatus::AwaitingApproval)
    }

    pub fn can_review(self) -> bool {
        self.can_move_to(TaskStatus::InReview)
    }

    pub fn can_finish(self) -> bool {
        self.can_move_to(TaskStatus::Done)
    }

    pub fn can_return(self) -> bool {
        self.can_move_to(TaskStatus::Returned)
    }

    pub fn can_block(self) -> bool {
        self.can_move_to(TaskStatus::Blocked)
    }
}

impl AgentStatus {
    pub const ALL: [AgentStatus; 6] = [
        AgentStatus::Idle,
        AgentStatus::Working,
        AgentStatus::AwaitingApproval,
        AgentStatus::InReview,
        AgentStatus::Paused,
        AgentStatus::Removed,
    ];

    /// Whether an agent may go from this status to `to`. An idle agent
    /// claims a task (`working`); while it holds one it follows the task
    /// (waiting for a person, in review, back to work in an auto-fix
    /// round) and is idle again when the task leaves it. The circuit
    /// breaker pauses it from any status; only `berth agent resume` ends a
    /// pause (idle, or working on the task it still holds) — a paused
    /// agent's task moves on without it. `berth agent rm` removes an agent
    /// that holds no task (idle or paused); `berth agent activate` revives a
    /// removed one, idle.
    pub fn can_move_to(self, to: AgentStatus) -> bool {
        use AgentStatus::*;
        matches!(
            (self, to),
            (Idle, Working)
                | (Working, AwaitingApproval | InReview | Idle)
                | (AwaitingApproval, Working | InReview | Idle)
                | (InReview, Working | AwaitingApproval | Idle)
                | (Idle | Working | AwaitingApproval | InReview, Paused)
                | (Paused, Idle | Working)
                | (Idle | Paused, Removed)
                | (Removed, Idle)
        )
    }

    pub fn can_claim(self) -> bool {
        self.can_move_to(AgentStatus::Working)
    }

    pub fn can_wait(self) -> bool {
        self.can_move_to(AgentStatus::AwaitingApproval)
    }

    pub fn can_review(self) -> bool {
        self.can_move_to(AgentStatus::InReview)
    }

    pub fn can_release(self) -> bool {
        self.can_move_to(AgentStatus::Idle)
    }

    pub fn can_pause(self) -> bool {
        self.can_move_to(AgentStatus::Paused)
    }

    pub fn can_be_removed(self) -> bool {
        self.can_move_to(AgentStatus::Removed)
    }
}

/// What a guarded move did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum Moved {
    /// The row moved; the event, when one was given, was written (its id).
    Moved(Option<i64>),
    /// The row already had the status: nothing was written.
    Already,
}

impl Moved {
    pub(crate) fn moved(self) -> bool {
        matches!(self, Moved::Moved(_))
    }

    /// The event written with the move, if any.
    pub(crate) fn event(self) -> Option<i64> {
        match self {
            Moved::Moved(id) => id,
            Moved::Already => None,
        }
    }
}

/// What a task's diagnosis becomes with a move.
#[derive(Debug, Clone, Copy)]
enum Diagnosis<'a> {
    Keep,
    Set(&'a str),
    Clear,
}

/// One move of a task: where to, and what else the row records with it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TaskMove<'a> {
    to: TaskStatus,
    /// The step moves only from these (within what the table allows).
    only_from: Option<&'a [TaskStatus]>,
    diagnosis: Diagnosis<'a>,
    agent: Option<&'a str>,
}

impl<'a> TaskMove<'a> {
    pub(crate) fn to(to: TaskStatus) -> TaskMove<'a> {
        TaskMove {
            to,
            only_from: None,
            diagnosis: Diagnosis::Keep,
            agent: None,
        }
    }

    /// Narrows the move to what this step expects (a rejection moves only a
    /// task in review, a claim only a `todo` one).
    pub(crate) fn only_from(mut self, from: &'a [TaskStatus]) -> Self {
        self.only_from = Some(from);
        self
    }

    /// Records why (a block, a return).
    pub(crate) fn diagnosis(mut self, why: Option<&'a str>) -> Self {
        if let Some(why) = why {
            self.diagnosis = Diagnosis::Set(why);
        }
        self
    }

    /// Forgets the last diagnosis (a new run starts clean).
    pub(crate) fn clear_diagnosis(mut self) -> Self {
        self.diagnosis = Diagnosis::Clear;
        self
    }

    /// Assigns the task to `agent` with the move.
    pub(crate) fn agent(mut self, agent: &'a str) -> Self {
        self.agent = Some(agent);
        self
    }

    /// The statuses this move may start from: the table's, narrowed.
    fn sources(&self) -> Vec<TaskStatus> {
        TaskStatus::ALL
            .into_iter()
            .filter(|s| s.can_move_to(self.to))
            .filter(|s| self.only_from.is_none_or(|only| only.contains(s)))
            .collect()
    }
}

/// `('a', 'b', …)` for a `status IN` clause; the values are the enums' own
/// names, never input.
fn in_list(statuses: impl IntoIterator<Item = &'static str>) -> String {
    let quoted: Vec<String> = statuses.into_iter().map(|s| format!("'{s}'")).collect();
    format!("({})", quoted.join(", "))
}

/// Moves task `id` as `mv` says, in `tx`, and writes `event` with it — only
/// when the table allows the move from the task's status now. See the
/// module docs.
pub(crate) async fn task(
    tx: &mut Tx,
    id: &str,
    mv: TaskMove<'_>,
    event: Option<NewEvent<'_>>,
) -> Result<Moved> {
    let op = "moving a task";
    let sources = mv.sources();
    let (diagnosis, set_diagnosis) = match mv.diagnosis {
        Diagnosis::Keep => (None, false),
        Diagnosis::Set(why) => (Some(why), true),
        Diagnosis::Clear => (None, true),
    };
    let n = if sources.is_empty() {
        0
    } else {
        sqlx::query(&format!(
            "UPDATE tasks SET status = $1, agent = COALESCE($2, agent), \
             diagnosis = CASE WHEN $3 = 1 THEN $4 ELSE diagnosis END, updated_at = $5 \
             WHERE id = $6 AND status IN {}",
            in_list(sources.iter().map(|s| s.as_str()))
        ))
        .bind(mv.to.as_str())
        .bind(mv.agent)
        .bind(i64::from(set_diagnosis))
        .bind(diagnosis)
        .bind(now_ms())
        .bind(id)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected()
    };
    if n == 1 {
        let event = match event {
            Some(ev) => Some(emit(tx, ev).await?),
            None => None,
        };
        return Ok(Moved::Moved(event));
    }
    let now: Option<String> = sqlx::query_scalar("SELECT status FROM tasks WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(EngineError::store(op))?;
    let Some(now) = now else {
        return Err(EngineError::UnknownId {
            what: "task",
            id: id.to_string(),
            list: "berth task ls",
        });
    };
    if now == mv.to.as_str() {
        return Ok(Moved::Already);
    }
    Err(EngineError::IllegalTransition {
        what: "task",
        id: crate::ids::short(id).to_string(),
        from: now,
        to: mv.to.as_str(),
    })
}

/// Moves task `id` from exactly `from` to `to`, with `event`, and its agent
/// `agent` following to `agent_to`, in `tx`. A task in any other status is
/// left as it is (false): the move is an automation's, never a correction.
pub(crate) async fn task_from(
    tx: &mut Tx,
    id: &str,
    agent: &str,
    (from, to): (TaskStatus, TaskStatus),
    agent_to: AgentStatus,
    event: NewEvent<'_>,
) -> Result<bool> {
    let status: Option<String> = sqlx::query_scalar("SELECT status FROM tasks WHERE id = $1")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await
        .map_err(EngineError::store("reading a task's status"))?;
    if status.as_deref() != Some(from.as_str()) {
        return Ok(false);
    }
    let moved = task(tx, id, TaskMove::to(to).only_from(&[from]), None).await?;
    let moved = matches!(moved, Moved::Moved(_));
    if moved {
        let _ = self::agent(tx, agent, AgentMove::follow(id, agent_to)).await?;
        // The event after the agent's row: the log's lock is the last a
        // transaction takes, so no writer holding the agent's row waits
        // for the log while this one, holding the log, waits for the row.
        emit(tx, event).await?;
    }
    Ok(moved)
}

/// What a guarded move of an agent did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub(crate) enum AgentMoved {
    Moved,
    /// It already had the status: nothing was written.
    Already,
    /// It does not hold the task the move follows: the move is not its.
    NotHolding,
    /// It is paused and stays paused; only `berth agent resume` ends that.
    Paused,
}

/// What an agent's task becomes with a move.
#[derive(Debug, Clone, Copy)]
enum Holding<'a> {
    /// The move follows `task`, which the agent must hold.
    Follows(&'a str),
    /// A claim: the agent holds no task and takes this one.
    Takes(&'a str),
    /// A release: the agent holds `task` and lets it go (even when paused).
    Drops(&'a str),
    /// The agent holds no task (a resume to idle).
    Free,
    /// The agent itself, whatever it holds (the breaker).
    Any,
}

/// One move of an agent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AgentMove<'a> {
    to: AgentStatus,
    holding: Holding<'a>,
    only_from: Option<&'a [AgentStatus]>,
}

/// Where an agent's task moves take it from: never from a pause, which
/// only `berth agent resume` ends.
const NOT_PAUSED: &[AgentStatus] = &[
    AgentStatus::Idle,
    AgentStatus::Working,
    AgentStatus::AwaitingApproval,
    AgentStatus::InReview,
];

impl<'a> AgentMove<'a> {
    /// The agent follows its task `task` to `to` (waiting, in review, back to work).
    pub(crate) fn follow(task: &'a str, to: AgentStatus) -> Self {
        AgentMove {
            to,
            holding: Holding::Follows(task),
            only_from: Some(NOT_PAUSED),
        }
    }

    /// An idle agent with no task takes `task` (`working`).
    pub(crate) fn claim(task: &'a str) -> Self {
        AgentMove {
            to: AgentStatus::Working,
            holding: Holding::Takes(task),
            only_from: Some(&[AgentStatus::Idle]),
        }
    }

    /// `task` leaves the agent: idle (a paused one stays paused).
    pub(crate) fn release(task: &'a str) -> Self {
        AgentMove {
            to: AgentStatus::Idle,
            holding: Holding::Drops(task),
            only_from: Some(NOT_PAUSED),
        }
    }

    /// `berth agent resume`: a paused agent goes back to work on the task
    /// it still holds, or is idle.
    pub(crate) fn resume(task: Option<&'a str>) -> Self {
        let (to, holding) = match task {
            Some(t) => (AgentStatus::Working, Holding::Follows(t)),
            None => (AgentStatus::Idle, Holding::Free),
        };
        AgentMove {
            to,
            holding,
            only_from: Some(&[AgentStatus::Paused]),
        }
    }

    /// `berth agent rm`: an agent that holds no task is removed.
    pub(crate) fn remove() -> Self {
        AgentMove {
            to: AgentStatus::Removed,
            holding: Holding::Free,
            only_from: None,
        }
    }

    /// `berth agent activate` of a removed agent: idle again.
    pub(crate) fn revive() -> Self {
        AgentMove {
            to: AgentStatus::Idle,
            holding: Holding::Free,
            only_from: Some(&[AgentStatus::Removed]),
        }
    }

    /// The agent itself moves to `to`, whatever it holds.
    pub(crate) fn itself(to: AgentStatus) -> Self {
        AgentMove {
            to,
            holding: Holding::Any,
            only_from: None,
        }
    }

    fn sources(&self) -> Vec<AgentStatus> {
        AgentStatus::ALL
            .into_iter()
            .filter(|s| s.can_move_to(self.to))
            .filter(|s| self.only_from.is_none_or(|only| only.contains(s)))
            .collect()
    }
}

/// Moves agent `name` as `mv` says, in `tx`: a guarded UPDATE as for tasks
/// (module docs). An agent that does not hold the task the move is about
/// is left alone ([`AgentMoved::NotHolding`]); a paused one keeps its pause
/// through its task's moves ([`AgentMoved::Paused`]), though a release
/// still takes the task from it.
pub(crate) async fn agent(tx: &mut Tx, name: &str, mv: AgentMove<'_>) -> Result<AgentMoved> {
    let op = "moving an agent";
    let sources = mv.sources();
    // `$3` is the task (NULL when the move is about none).
    let (holds, task, new_task) = match mv.holding {
        Holding::Follows(t) => ("task_id = $3", Some(t), "task_id"),
        Holding::Takes(t) => ("task_id IS NULL", Some(t), "$3"),
        Holding::Drops(t) => ("task_id = $3", Some(t), "NULL"),
        Holding::Free => ("task_id IS NULL", None, "task_id"),
        Holding::Any => ("1 = 1", None, "task_id"),
    };
    let n = if sources.is_empty() {
        0
    } else {
        sqlx::query(&format!(
            "UPDATE agents SET status = $1, task_id = {new_task}, updated_at = $2 \
             WHERE name = $4 AND {holds} AND status IN {}",
            in_list(sources.iter().map(|s| s.as_str()))
        ))
        .bind(mv.to.as_str())
        .bind(now_ms())
        .bind(task)
        .bind(name)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected()
    };
    if n == 1 {
        return Ok(AgentMoved::Moved);
    }
    let row: Option<(String, Option<String>)> =
        sqlx::query_as("SELECT status, task_id FROM agents WHERE name = $1")
            .bind(name)
            .fetch_optional(&mut **tx)
            .await
            .map_err(EngineError::store(op))?;
    let Some((now, held)) = row else {
        return Err(EngineError::UnknownAgent(name.to_string()));
    };
    let holds_it = match mv.holding {
        Holding::Follows(t) | Holding::Drops(t) => held.as_deref() == Some(t),
        Holding::Takes(_) | Holding::Free => held.is_none(),
        Holding::Any => true,
    };
    if !holds_it {
        return Ok(AgentMoved::NotHolding);
    }
    let moved = if now == mv.to.as_str() {
        AgentMoved::Already
    } else if now == AgentStatus::Paused.as_str() && !matches!(mv.holding, Holding::Any) {
        AgentMoved::Paused
    } else {
        return Err(EngineError::IllegalTransition {
            what: "agent",
            id: name.to_string(),
            from: now,
            to: mv.to.as_str(),
        });
    };
    if let Holding::Drops(t) = mv.holding {
        // The task leaves it whatever its status says.
        sqlx::query(
            "UPDATE agents SET task_id = NULL, updated_at = $1 WHERE name = $2 AND task_id = $3",
        )
        .bind(now_ms())
        .bind(name)
        .bind(t)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store(op))?;
    }
    Ok(moved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_moves(from: TaskStatus) -> Vec<TaskStatus> {
        TaskStatus::ALL
            .into_iter()
            .filter(|to| from.can_move_to(*to))
            .collect()
    }

    fn agent_moves(from: AgentStatus) -> Vec<AgentStatus> {
        AgentStatus::ALL
            .into_iter()
            .filter(|to| from.can_move_to(*to))
            .collect()
    }

    #[test]
    fn a_todo_task_can_only_start() {
        let s = TaskStatus::Todo;
        assert!(s.can_start());
        assert!(!s.can_wait());
        assert!(!s.can_review());
        assert!(!s.can_finish());
        assert!(!s.can_return());
        assert!(!s.can_block());
        assert_eq!(task_moves(s), [TaskStatus::InProgress]);
    }

    #[test]
    fn a_task_in_progress_can_wait_review_finish_return_or_block() {
        let s = TaskStatus::InProgress;
        assert!(!s.can_start(), "it is already in progress");
        assert!(s.can_wait());
        assert!(s.can_review());
        assert!(s.can_finish());
        assert!(s.can_return());
        assert!(s.can_block());
        assert!(!s.can_move_to(TaskStatus::Todo));
    }

    #[test]
    fn a_task_awaiting_approval_goes_back_to_work_or_ends_its_delivery() {
        let s = TaskStatus::AwaitingApproval;
        assert!(s.can_start());
        assert!(!s.can_wait());
        assert!(s.can_review());
        assert!(!s.can_finish(), "it passes the gate first");
        assert!(s.can_return());
        assert!(s.can_block());
        assert!(!s.can_move_to(TaskStatus::Todo));
    }

    #[test]
    fn a_task_in_review_is_decided_or_goes_into_an_auto_fix_round() {
        let s = TaskStatus::InReview;
        assert!(s.can_start());
        assert!(s.can_wait());
        assert!(!s.can_review());
        assert!(s.can_finish());
        assert!(s.can_return());
        assert!(!s.can_block(), "the gate is with a person, nothing works");
        assert!(!s.can_move_to(TaskStatus::Todo));
    }

    #[test]
    fn a_done_task_is_final() {
        assert_eq!(task_moves(TaskStatus::Done), []);
    }

    #[test]
    fn a_returned_task_can_only_run_again() {
        let s = TaskStatus::Returned;
        assert!(s.can_start());
        assert_eq!(task_moves(s), [TaskStatus::InProgress]);
    }

    #[test]
    fn a_blocked_task_can_only_go_back_to_work() {
        let s = TaskStatus::Blocked;
        assert!(s.can_start());
        assert!(!s.can_finish());
        assert!(!s.can_return());
        assert_eq!(task_moves(s), [TaskStatus::InProgress]);
    }

    #[test]
    fn no_status_moves_to_itself_or_back_to_todo() {
        for s in TaskStatus::ALL {
            assert!(!s.can_move_to(s), "{s:?}");
            assert!(!s.can_move_to(TaskStatus::Todo), "{s:?}");
        }
        for s in AgentStatus::ALL {
            assert!(!s.can_move_to(s), "{s:?}");
        }
    }

    #[test]
    fn an_idle_agent_can_claim_or_be_paused() {
        let s = AgentStatus::Idle;
        assert!(s.can_claim());
        assert!(!s.can_wait());
        assert!(!s.can_review());
        assert!(!s.can_release());
        assert!(s.can_pause());
    }

    #[test]
    fn a_working_agent_follows_its_task() {
        let s = AgentStatus::Working;
        assert!(!s.can_claim());
        assert!(s.can_wait());
        assert!(s.can_review());
        assert!(s.can_release());
        assert!(s.can_pause());
    }

    #[test]
    fn an_agent_awaiting_approval_goes_back_to_work_or_lets_its_task_go() {
        let s = AgentStatus::AwaitingApproval;
        assert!(s.can_claim(), "back to work on the task it holds");
        assert!(!s.can_wait());
        assert!(s.can_review());
        assert!(s.can_release());
        assert!(s.can_pause());
    }

    #[test]
    fn an_agent_in_review_waits_for_the_gate() {
        let s = AgentStatus::InReview;
        assert!(s.can_claim(), "an auto-fix round");
        assert!(s.can_wait());
        assert!(!s.can_review());
        assert!(s.can_release());
        assert!(s.can_pause());
    }

    #[test]
    fn a_paused_agent_only_resumes_or_is_removed() {
        let s = AgentStatus::Paused;
        assert!(!s.can_pause());
        assert!(!s.can_wait());
        assert!(!s.can_review());
        assert_eq!(
            agent_moves(s),
            [
                AgentStatus::Idle,
                AgentStatus::Working,
                AgentStatus::Removed
            ],
            "`berth agent resume`, `berth agent rm`"
        );
    }

    #[test]
    fn only_an_agent_without_a_task_is_removed_and_a_removed_one_only_revives() {
        assert!(AgentStatus::Idle.can_be_removed());
        assert!(AgentStatus::Paused.can_be_removed());
        for s in [
            AgentStatus::Working,
            AgentStatus::AwaitingApproval,
            AgentStatus::InReview,
        ] {
            assert!(!s.can_be_removed(), "{s:?} holds a task");
        }
        assert_eq!(agent_moves(AgentStatus::Removed), [AgentStatus::Idle]);
        assert_eq!(AgentMove::revive().sources(), [AgentStatus::Removed]);
        assert_eq!(
            AgentMove::remove().sources(),
            [AgentStatus::Idle, AgentStatus::Paused]
        );
    }

    #[test]
    fn a_narrowed_move_starts_only_from_what_the_table_allows() {
        let claim = TaskMove::to(TaskStatus::InProgress).only_from(&[TaskStatus::Todo]);
        assert_eq!(claim.sources(), [TaskStatus::Todo]);
        let nonsense = TaskMove::to(TaskStatus::Done).only_from(&[TaskStatus::Todo]);
        assert!(nonsense.sources().is_empty());
        assert_eq!(AgentMove::claim("t").sources(), [AgentStatus::Idle]);
        // A task's moves never end its agent's pause; only a resume does.
        assert!(
            !AgentMove::release("t")
                .sources()
                .contains(&AgentStatus::Paused)
        );
        assert!(
            !AgentMove::follow("t", AgentStatus::Working)
                .sources()
                .contains(&AgentStatus::Paused)
        );
        assert_eq!(AgentMove::resume(None).sources(), [AgentStatus::Paused]);
    }
}
