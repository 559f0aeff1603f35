//! A PR's automation row (`pr_automation`, migration 0011): the switches a
//! person set and the checkpoints each cycle keeps, read and written in
//! the caller's transaction. The checkpoints live only here — never in
//! memory — so a restart neither prompts twice nor retries a merge.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::error::{EngineError, Result};
use crate::ids::now_ms;
use crate::store::Tx;

/// The most auto-fix rounds a PR gets before auto-fix pauses.
pub const MAX_FIX_ROUNDS: i64 = 10;

/// The switches of one PR's automation. All off: disabled (watching only
/// updates the view).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switches {
    /// Auto-fix: prompt the agent with new prompt-worthy feedback.
    pub fix: bool,
    /// Auto-merge: propose the merge when the PR becomes ready.
    pub merge: bool,
    /// Prompt once when a review is newly requested of the reviewer.
    pub on_review_request: bool,
    /// Prompt once when the PR is merged.
    pub on_merged: bool,
    /// Prompt once when the PR is closed without merging.
    pub on_closed: bool,
}

impl Switches {
    /// Any switch on.
    pub fn any(&self) -> bool {
        self.fix || self.merge || self.on_review_request || self.on_merged || self.on_closed
    }

    /// The lifecycle prompts are wanted.
    pub fn lifecycle(&self) -> bool {
        self.on_review_request || self.on_merged || self.on_closed
    }
}

/// One PR's automation as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutomationRow {
    pub pr_id: String,
    pub task: Option<String>,
    pub switches: Switches,
    /// The task's own auto-fix prompt (instead of the project's).
    pub prompt_override: Option<String>,
    pub fix_rounds: i64,
    pub fix_paused: bool,
    pub fix_signature: Option<String>,
    /// The snapshot last prompted (JSON).
    pub fix_checkpoint: Option<String>,
    pub fix_session: Option<String>,
    pub fix_prompt: Option<String>,
    pub merge_signature: Option<String>,
    pub merge_action: Option<String>,
    pub merge_failed: bool,
    pub reviewer_login: Option<String>,
    /// The last review-request observation; None: no baseline yet.
    pub review_requested: Option<bool>,
    /// The terminal state already prompted for.
    pub terminal_prompted: Option<String>,
    pub observed_head: Option<String>,
    pub last_error: Option<String>,
    /// The cycle whose failure `last_error` is (`fix`, `merge`,
    /// `lifecycle`).
    pub error_cycle: Option<String>,
    pub updated_at: i64,
}

const COLUMNS: &str = "pr_id, task_id, fix, merge, on_review_request, on_merged, on_closed, \
    prompt_override, fix_rounds, fix_paused, fix_signature, fix_checkpoint, fix_session, \
    fix_prompt, merge_signature, merge_action, merge_failed, reviewer_login, review_requested, \
    terminal_prompted, observed_head, last_error, error_cycle, updated_at";

fn from_row(r: &sqlx::any::AnyRow) -> Result<AutomationRow> {
    let op = "reading a PR's automation";
    let flag = |c: &str| -> Result<bool> {
        Ok(r.try_get::<i64, _>(c).map_err(EngineError::store(op))? != 0)
    };
    let text = |c: &str| -> Result<Option<String>> { r.try_get(c).map_err(EngineError::store(op)) };
    let requested: Option<i64> = r
        .try_get("review_requested")
        .map_err(EngineError::store(op))?;
    Ok(AutomationRow {
        pr_id: r.try_get("pr_id").map_err(EngineError::store(op))?,
        task: text("task_id")?,
        switches: Switches {
            fix: flag("fix")?,
            merge: flag("merge")?,
            on_review_request: flag("on_review_request")?,
            on_merged: flag("on_merged")?,
            on_closed: flag("on_closed")?,
        },
        prompt_override: text("prompt_override")?,
        fix_rounds: r.try_get("fix_rounds").map_err(EngineError::store(op))?,
        fix_paused: flag("fix_paused")?,
        fix_signature: text("fix_signature")?,
        fix_checkpoint: text("fix_checkpoint")?,
        fix_session: text("fix_session")?,
        fix_prompt: text("fix_prompt")?,
        merge_signature: text("merge_signature")?,
        merge_action: text("merge_action")?,
        merge_failed: flag("merge_failed")?,
        reviewer_login: text("reviewer_login")?,
        review_requested: requested.map(|v| v != 0),
        terminal_prompted: text("terminal_prompted")?,
        observed_head: text("observed_head")?,
        last_error: text("last_error")?,
        error_cycle: text("error_cycle")?,
        updated_at: r.try_get("updated_at").map_err(EngineError::store(op))?,
    })
}

/// The PR's row, if it has one, read through `db` (the pool, or a
/// transaction).
pub(crate) async fn read<'c, E>(db: E, pr_id: &str) -> Result<Option<AutomationRow>>
where
    E: sqlx::Executor<'c, Database = sqlx::Any>,
{
    let row = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM pr_automation WHERE pr_id = $1"
    ))
    .bind(pr_id)
    .fetch_optional(db)
    .await
    .map_err(EngineError::store("reading a PR's automation"))?;
    row.as_ref().map(from_row).transpose()
}

/// Every row with a switch on, oldest PR first (what the watcher
/// evaluates), read from `pool`.
pub(crate) async fn enabled(pool: &crate::store::StorePool) -> Result<Vec<AutomationRow>> {
    let rows = sqlx::query(&format!(
        "SELECT {COLUMNS} FROM pr_automation \
         WHERE fix = 1 OR merge = 1 OR on_review_request = 1 OR on_merged = 1 OR on_closed = 1 \
         ORDER BY pr_id"
    ))
    .fetch_all(pool)
    .await
    .map_err(EngineError::store("listing PR automation"))?;
    rows.iter().map(from_row).collect()
}

/// Writes `row` whole (insert, or every column of the PR's row), in `tx`.
pub(crate) async fn write(tx: &mut Tx, row: &AutomationRow) -> Result<()> {
    let set = COLUMNS
        .split(',')
        .map(str::trim)
        .filter(|c| *c != "pr_id")
        .map(|c| format!("{c} = excluded.{c}"))
        .collect::<Vec<_>>()
        .join(", ");
    sqlx::query(&format!(
        "INSERT INTO pr_automation ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, \
          $20, $21, $22, $23, $24) ON CONFLICT (pr_id) DO UPDATE SET {set}"
    ))
    .bind(&row.pr_id)
    .bind(&row.task)
    .bind(i64::from(row.switches.fix))
    .bind(i64::from(row.switches.merge))
    .bind(i64::from(row.switches.on_review_request))
    .bind(i64::from(row.switches.on_merged))
    .bind(i64::from(row.switches.on_closed))
    .bind(&row.prompt_override)
    .bind(row.fix_rounds)
    .bind(i64::from(row.fix_paused))
    .bind(&row.fix_signature)
    .bind(&row.fix_checkpoint)
    .bind(&row.fix_session)
    .bind(&row.fix_prompt)
    .bind(&row.merge_signature)
    .bind(&row.merge_action)
    .bind(i64::from(row.merge_failed))
    .bind(&row.reviewer_login)
    .bind(row.review_requested.map(i64::from))
    .bind(&row.terminal_prompted)
    .bind(&row.observed_head)
    .bind(&row.last_error)
    .bind(&row.error_cycle)
    .bind(now_ms())
    .execute(&mut **tx)
    .await
    .map_err(EngineError::store("writing a PR's automation"))?;
    Ok(())
}

/// Removes the rows of `task`'s PRs (its archive or delete), in `tx`.
pub(crate) async fn purge_task(tx: &mut Tx, task: &str) -> Result<u64> {
    Ok(sqlx::query("DELETE FROM pr_automation WHERE task_id = $1")
        .bind(task)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store("purging a task's PR automation"))?
        .rows_affected())
}

impl AutomationRow {
    /// A fresh row: every switch off, no checkpoint.
    pub(crate) fn new(pr_id: &str, task: Option<&str>) -> AutomationRow {
        AutomationRow {
            pr_id: pr_id.to_string(),
            task: task.map(str::to_string),
            switches: Switches::default(),
            prompt_override: None,
            fix_rounds: 0,
            fix_paused: false,
            fix_signature: None,
            fix_checkpoint: None,
            fix_session: None,
            fix_prompt: None,
            merge_signature: None,
            merge_action: None,
            merge_failed: false,
            reviewer_login: None,
            review_requested: None,
            terminal_prompted: None,
            observed_head: None,
            last_error: None,
            error_cycle: None,
            updated_at: 0,
        }
    }

    /// Whether an evaluation of its PR, now `status`, can still do
    /// anything: an open PR can; a merged or closed one only until the
    /// terminal prompt its switches ask for was queued (then it is quiet
    /// for good, and the watcher stops reading it).
    pub(crate) fn wants_evaluation(&self, status: crate::prs::PrStatus) -> bool {
        use crate::prs::PrStatus;
        let wanted = match status {
            PrStatus::Open => return true,
            PrStatus::Merged => self.switches.on_merged,
            PrStatus::Closed => self.switches.on_closed,
        };
        wanted && self.terminal_prompted.as_deref() != Some(status.as_str())
    }

    /// Records a failure of `cycle`.
    pub(crate) fn fail(&mut self, cycle: &str, why: impl Into<String>) {
        self.last_error = Some(why.into());
        self.error_cycle = Some(cycle.to_string());
    }

    /// Clears the error when it was `cycle`'s (a later success of that
    /// cycle); another cycle's error stays.
    pub(crate) fn clear(&mut self, cycle: &str) {
        if self.error_cycle.as_deref() == Some(cycle) {
            self.last_error = None;
            self.error_cycle = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prs::PrStatus;

    #[test]
    fn a_terminal_pr_is_evaluated_only_until_its_terminal_prompt() {
        let mut row = AutomationRow::new("p", Some("t"));
        row.switches.fix = true;
        assert!(row.wants_evaluation(PrStatus::Open));
        assert!(
            !row.wants_evaluation(PrStatus::Merged),
            "fix alone stops at merge"
        );
        row.switches.on_merged = true;
        assert!(row.wants_evaluation(PrStatus::Merged));
        assert!(!row.wants_evaluation(PrStatus::Closed));
        row.terminal_prompted = Some("merged".into());
        assert!(!row.wants_evaluation(PrStatus::Merged));
    }
}
