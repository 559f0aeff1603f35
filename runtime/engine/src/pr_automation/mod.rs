//! Per-PR automation (issue 19; kandev's task PR automation): switches a
//! person sets on a task's PR — auto-fix, auto-merge, and the lifecycle
//! prompts (review requested, merged, closed) — and the cycles that act on
//! them at each evaluation.
//!
//! An evaluation of one PR reads its feedback through the [`Forge`]
//! (`forge.rs`: the local forge today), then, in this order:
//! 1. a moved head sends a task that went back to work for an auto-fix
//!    round back to review (`in_progress → in_review`);
//! 2. the lifecycle prompts (`lifecycle.rs`) — before the CI cycles, and
//!    each cycle clears only its own error, so a lifecycle success never
//!    erases a same-pass auto-fix or auto-merge error;
//! 3. auto-fix (`auto_fix.rs`);
//! 4. auto-merge (`auto_merge.rs`).
//!
//! The row (`state.rs`) is written once at the end, with the checkpoints
//! of every cycle that acted; each cycle's effect is idempotent by its
//! own key (the prompt queue coalesces an identical observation; a merge
//! proposal carries an idempotency key), so a crash before the row is
//! written repeats at most a delivery, never a merge.
//!
//! The watcher (`berth pr watch`, `berth serve`'s background) evaluates
//! every PR with a switch on after running its checks; turning a switch
//! on (or saving options while on) evaluates at once. Archiving or
//! deleting the task purges its rows (`prompts::purge_task`): no
//! evaluation can wake it. A merged or closed PR stops auto-fix and
//! auto-merge; its terminal prompt stays eligible once per entry.

mod auto_fix;
mod auto_merge;
mod forge;
mod lifecycle;
pub(crate) mod state;
pub mod template;

use serde::Serialize;

pub use auto_fix::{FixPass, Signal, Snapshot};
pub use auto_merge::{MergePass, readiness_signature};
pub use lifecycle::LifecyclePass;
pub use state::{AutomationRow, MAX_FIX_ROUNDS, Switches};
pub use template::PromptTemplate;

use self::forge::{Forge, LocalForge};
use crate::Engine;
use crate::agents::AgentStatus;
use crate::checks::PrFeedback;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::prs::{PrStatus, PullRequest};
use crate::store::StoreLock;
use crate::tasks::TaskStatus;
use crate::transitions;

/// A change of a PR's switches: None leaves a switch as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SwitchChange {
    pub fix: Option<bool>,
    pub merge: Option<bool>,
    pub on_review_request: Option<bool>,
    pub on_merged: Option<bool>,
    pub on_closed: Option<bool>,
    /// The task's own auto-fix prompt: `Some(None)` goes back to the
    /// project's.
    pub prompt_override: Option<Option<String>>,
}

/// A PR's automation as the CLI, the API and the page show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrAutomation {
    pub pr: i64,
    pub switches: Switches,
    /// `disabled`, `auto_fix`, `auto_merge`, `both`, with `+lifecycle`
    /// when a lifecycle prompt is on.
    pub state: String,
    /// The chips the page shows: `Auto-fix 3/10`, `paused`, `merge
    /// pending`, ….
    pub chips: Vec<String>,
    pub fix_rounds: i64,
    pub fix_rounds_max: i64,
    pub fix_paused: bool,
    pub merge_action: Option<String>,
    pub merge_failed: bool,
    pub reviewer_login: Option<String>,
    pub terminal_prompted: Option<String>,
    pub last_error: Option<String>,
    pub has_prompt_override: bool,
}

/// What one evaluation of a PR did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Evaluation {
    pub pr: i64,
    /// The head moved and the task went back to review.
    pub back_to_review: bool,
    pub lifecycle: LifecyclePass,
    pub fix: FixPass,
    pub merge: MergePass,
    pub automation: PrAutomation,
}

fn view(pr: &PullRequest, row: &AutomationRow) -> PrAutomation {
    let s = row.switches;
    let mut state = match (s.fix, s.merge) {
        (false, false) => "disabled",
        (true, false) => "auto_fix",
        (false, true) => "auto_merge",
        (true, true) => "both",
    }
    .to_string();
    if s.lifecycle() {
        state = if state == "disabled" {
            "lifecycle".into()
        } else {
            format!("{state}+lifecycle")
        };
    }
    let mut chips = Vec::new();
    if s.fix {
        chips.push(format!("Auto-fix {}/{MAX_FIX_ROUNDS}", row.fix_rounds));
        if row.fix_paused {
            chips.push("paused".into());
        }
    }
    if s.merge {
        chips.push(match (row.merge_failed, row.merge_action.is_some()) {
            (true, _) => "merge failed".into(),
            (false, true) if pr.status == PrStatus::Open => "merge proposed".into(),
            _ => "auto-merge on".into(),
        });
    }
    PrAutomation {
        pr: pr.number,
        switches: s,
        state,
        chips,
        fix_rounds: row.fix_rounds,
        fix_rounds_max: MAX_FIX_ROUNDS,
        fix_paused: row.fix_paused,
        merge_action: row.merge_action.clone(),
        merge_failed: row.merge_failed,
        reviewer_login: row.reviewer_login.clone(),
        terminal_prompted: row.terminal_prompted.clone(),
        last_error: row.last_error.clone(),
        has_prompt_override: row.prompt_override.is_some(),
    }
}

/// The largest task override taken, in bytes.
const MAX_OVERRIDE: usize = 16 * 1024;

impl Engine {
    /// PR `pr`'s automation (every switch off when none was set).
    pub async fn pr_automation(&self, pr: &str) -> Result<PrAutomation> {
        let pr = self.pr(pr).await?;
        let row = state::read(self.store.pool(), &pr.id)
            .await?
            .unwrap_or_else(|| AutomationRow::new(&pr.id, pr.task.as_deref()));
        Ok(view(&pr, &row))
    }

    /// A person changes PR `pr`'s switches (`berth pr auto`, the API, the
    /// page). Turning auto-fix on starts its rounds over (and ends a
    /// pause); turning a lifecycle prompt on resets its baseline. With a
    /// switch on, the PR is evaluated at once.
    pub async fn set_pr_automation(
        &self,
        pr: &str,
        change: SwitchChange,
        by: &Actor,
    ) -> Result<Evaluation> {
        let pr = self.pr(pr).await?;
        if let Some(Some(t)) = &change.prompt_override
            && (t.trim().is_empty() || t.len() > MAX_OVERRIDE)
        {
            return Err(EngineError::Invalid {
                what: "auto-fix prompt",
                value: t.chars().take(64).collect(),
                why: format!("1 to {MAX_OVERRIDE} bytes"),
            });
        }
        let archived: Option<i64> = match &pr.task {
            Some(t) => sqlx::query_scalar("SELECT archived_at FROM tasks WHERE id = $1")
                .bind(t)
                .fetch_optional(self.store.pool())
                .await
                .map_err(EngineError::store("reading a PR's task"))?
                .flatten(),
            None => None,
        };
        if archived.is_some() {
            return Err(EngineError::WrongStatus {
                what: "PR",
                id: format!("#{}", pr.number),
                status: "its task is archived".into(),
                rule: "an archived task's PRs take no automation".into(),
            });
        }
        let op = "setting a PR's automation";
        let mut tx = self.store.write(op).await?;
        // The row is read, changed and written back: one writer per PR.
        tx.lock(StoreLock::Pr(&pr.id)).await?;
        let mut row = state::read(&mut *tx, &pr.id)
            .await?
            .unwrap_or_else(|| AutomationRow::new(&pr.id, pr.task.as_deref()));
        let was = row.switches;
        let set = |now: bool, to: Option<bool>| to.unwrap_or(now);
        row.switches = Switches {
            fix: set(was.fix, change.fix),
            merge: set(was.merge, change.merge),
            on_review_request: set(was.on_review_request, change.on_review_request),
            on_merged: set(was.on_merged, change.on_merged),
            on_closed: set(was.on_closed, change.on_closed),
        };
        let s = row.switches;
        if s.fix && !was.fix {
            row.fix_rounds = 0;
            row.fix_paused = false;
            row.clear("fix");
        }
        if s.merge && !was.merge {
            row.merge_failed = false;
            row.clear("merge");
        }
        if s.on_review_request && !was.on_review_request {
            row.review_requested = None;
        }
        if (s.on_merged && !was.on_merged) || (s.on_closed && !was.on_closed) {
            row.terminal_prompted = None;
        }
        if let Some(o) = change.prompt_override {
            row.prompt_override = o;
        }
        state::write(&mut tx, &row).await?;
        emit(
            &mut tx,
            NewEvent::new(kind::AUTOMATION_SWITCHED, by)
                .project(&pr.project)
                .agent(&pr.agent)
                .task(pr.task.as_deref())
                .payload(serde_json::json!({
                    "pr": pr.number,
                    "fix": s.fix,
                    "merge": s.merge,
                    "on_review_request": s.on_review_request,
                    "on_merged": s.on_merged,
                    "on_closed": s.on_closed,
                    "prompt_override": row.prompt_override.is_some(),
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        self.evaluate_pr_automation(&pr.id).await
    }

    /// One evaluation of PR `pr`'s automation (module docs), on its
    /// feedback now (checks are not run here: the watcher runs them
    /// first).
    pub async fn evaluate_pr_automation(&self, pr: &str) -> Result<Evaluation> {
        let forge = LocalForge { engine: self };
        let pr = forge.pull_request(pr).await?;
        let feedback = forge.feedback(&pr, false).await?;
        self.evaluate_with(&forge, &pr, &feedback).await
    }

    /// Evaluates every PR with a switch on; a PR's failure is recorded on
    /// it and the others go on.
    pub async fn automate_prs(&self) -> Result<Vec<Evaluation>> {
        self.automate_prs_with(&[]).await
    }

    /// As [`automate_prs`](Engine::automate_prs), on the feedback the
    /// watcher's pass just read (by PR number) where it has it, instead of
    /// reading it again.
    pub(crate) async fn automate_prs_with(&self, known: &[PrFeedback]) -> Result<Vec<Evaluation>> {
        let forge = LocalForge { engine: self };
        let mut out = Vec::new();
        for row in state::enabled(self.store.pool()).await? {
            let pr = forge.pull_request(&row.pr_id).await?;
            if !row.wants_evaluation(pr.status) {
                continue;
            }
            let read = match known.iter().find(|f| f.pr == pr.number) {
                Some(f) => Ok(f.clone()),
                None => forge.feedback(&pr, false).await,
            };
            let feedback = match read {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!(pr = pr.number, error = %e, "a PR's feedback could not be read");
                    self.record_failure(
                        &pr,
                        "fix",
                        &format!("reading the PR's feedback failed: {e}"),
                    )
                    .await?;
                    continue;
                }
            };
            match self.evaluate_with(&forge, &pr, &feedback).await {
                Ok(e) => out.push(e),
                Err(e) => {
                    tracing::warn!(pr = pr.number, error = %e, "a PR's automation failed");
                    self.record_failure(&pr, "fix", &format!("evaluating the PR failed: {e}"))
                        .await?;
                }
            }
        }
        Ok(out)
    }

    async fn evaluate_with<F: Forge>(
        &self,
        forge: &F,
        pr: &PullRequest,
        feedback: &PrFeedback,
    ) -> Result<Evaluation> {
        let mut row = state::read(self.store.pool(), &pr.id)
            .await?
            .unwrap_or_else(|| AutomationRow::new(&pr.id, pr.task.as_deref()));
        let before = row.clone();
        let back_to_review = self.follow_head(pr, feedback, &mut row).await?;
        let (lifecycle, fix, merge) = if row.switches.any() {
            let lifecycle = self.lifecycle_pass(forge, pr, feedback, &mut row).await?;
            let fix = self.auto_fix_pass(forge, pr, feedback, &mut row).await?;
            let merge = self.auto_merge_pass(forge, pr, feedback, &mut row).await?;
            (lifecycle, fix, merge)
        } else {
            (LifecyclePass::default(), FixPass::Off, MergePass::Off)
        };
        self.record(pr, &before, &row, &lifecycle, &fix, &merge)
            .await?;
        Ok(Evaluation {
            pr: pr.number,
            back_to_review,
            lifecycle,
            fix,
            merge,
            automation: view(pr, &row),
        })
    }

    /// The head moved since the last evaluation: a task that went back to
    /// work for an auto-fix round goes back to review.
    async fn follow_head(
        &self,
        pr: &PullRequest,
        feedback: &PrFeedback,
        row: &mut AutomationRow,
    ) -> Result<bool> {
        let moved = row.observed_head.is_some() && feedback.head != row.observed_head;
        row.observed_head = feedback.head.clone();
        let (true, Some(task), PrStatus::Open) = (moved, pr.task.as_deref(), pr.status) else {
            return Ok(false);
        };
        let op = "sending a task back to review";
        let mut tx = self.store.write(op).await?;
        let system = Actor::system();
        let event = NewEvent::new(kind::TASK_IN_REVIEW, &system)
            .project(&pr.project)
            .agent(&pr.agent)
            .task(Some(task))
            .payload(serde_json::json!({ "pr": pr.number, "head": feedback.head }));
        let statuses = (TaskStatus::InProgress, TaskStatus::InReview);
        let back = transitions::task_from(
            &mut tx,
            task,
            &pr.agent,
            statuses,
            AgentStatus::InReview,
            event,
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(back)
    }

    /// Writes the row and the events of what the cycles did.
    async fn record(
        &self,
        pr: &PullRequest,
        before: &AutomationRow,
        row: &AutomationRow,
        lifecycle: &LifecyclePass,
        fix: &FixPass,
        merge: &MergePass,
    ) -> Result<()> {
        let op = "recording a PR's automation";
        let mut tx = self.store.write(op).await?;
        // Archived or deleted meanwhile: its row was purged; write nothing.
        if let Some(t) = &pr.task
            && !crate::prompts::task_is_active(&mut tx, t).await?
        {
            return Ok(());
        }
        state::write(&mut tx, row).await?;
        let system = Actor::system();
        let ev = |k: &'static str, payload: serde_json::Value| {
            NewEvent::new(k, &system)
                .project(&pr.project)
                .agent(&pr.agent)
                .task(pr.task.as_deref())
                .payload(payload)
        };
        if let Some(login) = &lifecycle.rebound {
            emit(
                &mut tx,
                ev(
                    kind::AUTOMATION_REVIEWER_REBOUND,
                    serde_json::json!({ "pr": pr.number, "login": login }),
                ),
            )
            .await?;
        }
        for event in &lifecycle.prompted {
            emit(
                &mut tx,
                ev(
                    kind::AUTOMATION_LIFECYCLE_PROMPTED,
                    serde_json::json!({ "pr": pr.number, "event": event }),
                ),
            )
            .await?;
        }
        match fix {
            FixPass::Prompted {
                prompt,
                session,
                round,
                sent,
            } => {
                emit(
                    &mut tx,
                    ev(
                        kind::AUTOMATION_FIX_PROMPTED,
                        serde_json::json!({
                            "pr": pr.number, "prompt": prompt, "session": session,
                            "round": round, "sent": sent,
                        }),
                    ),
                )
                .await?;
            }
            FixPass::Paused => {
                emit(
                    &mut tx,
                    ev(
                        kind::AUTOMATION_FIX_PAUSED,
                        serde_json::json!({ "pr": pr.number, "rounds": row.fix_rounds }),
                    ),
                )
                .await?;
            }
            _ => {}
        }
        if let MergePass::Proposed { action, status } = merge {
            emit(
                &mut tx,
                ev(
                    kind::AUTOMATION_MERGE_PROPOSED,
                    serde_json::json!({ "pr": pr.number, "action": action, "status": status }),
                ),
            )
            .await?;
        }
        if row.last_error.is_some() && row.last_error != before.last_error {
            emit(
                &mut tx,
                ev(
                    kind::AUTOMATION_FAILED,
                    serde_json::json!({
                        "pr": pr.number, "cycle": row.error_cycle, "error": row.last_error,
                    }),
                ),
            )
            .await?;
        }
        tx.commit().await.map_err(EngineError::store(op))
    }

    async fn record_failure(&self, pr: &PullRequest, cycle: &str, why: &str) -> Result<()> {
        let Some(mut row) = state::read(self.store.pool(), &pr.id).await? else {
            return Ok(());
        };
        let before = row.clone();
        row.fail(cycle, why);
        self.record(
            pr,
            &before,
            &row,
            &LifecyclePass::default(),
            &FixPass::Off,
            &MergePass::Off,
        )
        .await
    }
}
