//! Pull requests: records in the store pointing at branches in the local
//! forge. No network: opening one checks that the agent's branch is in the
//! forge and records its head; merging is a `git_merge` action (never
//! auto-approved into a protected branch); merging or closing resolves the
//! task's gate and recycles the agent's worktree.

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::actions::{ActionParams, ActionRecord, ActionResult, Outcome, Proposal, Proposed};
use crate::agents::Agent;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::gate::AfterSettle;
use crate::ids::{new_id, now_ms};
use crate::store::{StoreLock, Tx};
use crate::tasks::TaskStatus;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrStatus {
    Open,
    Merged,
    Closed,
}

impl PrStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PrStatus::Open => "open",
            PrStatus::Merged => "merged",
            PrStatus::Closed => "closed",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    pub id: String,
    pub number: i64,
    pub project: String,
    pub agent: String,
    pub task: Option<String>,
    /// The `pr_open` action that opened it.
    pub action: String,
    pub branch: String,
    pub base: String,
    /// The branch's head in the forge when it was opened.
    pub head: String,
    pub title: String,
    pub status: PrStatus,
    pub merge_commit: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const PR_COLUMNS: &str = "id, number, project, agent, task_id, action_id, branch, base, head, title, status, merge_commit, created_at, updated_at";

fn from_row(r: &sqlx::any::AnyRow) -> Result<PullRequest> {
    let op = "reading a PR";
    let g =
        |c: &str| -> Result<String> { r.try_get::<String, _>(c).map_err(EngineError::store(op)) };
    let status = g("status")?;
    Ok(PullRequest {
        id: g("id")?,
        number: r.try_get("number").map_err(EngineError::store(op))?,
        project: g("project")?,
        agent: g("agent")?,
        task: r.try_get("task_id").map_err(EngineError::store(op))?,
        action: g("action_id")?,
        branch: g("branch")?,
        base: g("base")?,
        head: g("head")?,
        title: g("title")?,
        status: match status.as_str() {
            "open" => PrStatus::Open,
            "merged" => PrStatus::Merged,
            "closed" => PrStatus::Closed,
            other => return Err(EngineError::corrupt(op, format!("PR status `{other}`"))),
        },
        merge_commit: r.try_get("merge_commit").map_err(EngineError::store(op))?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
        updated_at: r.try_get("updated_at").map_err(EngineError::store(op))?,
    })
}

/// Merging `pr` into its base, proposed by `by` on the PR agent's berth
/// (`key`: its idempotency key).
pub(crate) fn merge_proposal(
    pr: &PullRequest,
    by: &Actor,
    key: Option<String>,
) -> Result<Proposal> {
    Ok(Proposal {
        agent: crate::AgentName::new(pr.agent.as_str())?,
        action: berth_policy::Action::GitMerge {
            target: pr.base.clone(),
        },
        params: ActionParams {
            pr: Some(pr.id.clone()),
            ..ActionParams::default()
        },
        task: pr.task.clone(),
        idempotency_key: key,
        caller_env: None,
        proposer: by.clone(),
    })
}

impl Engine {
    pub async fn prs(&self, project: Option<&str>) -> Result<Vec<PullRequest>> {
        let rows = sqlx::query(&format!(
            "SELECT {PR_COLUMNS} FROM prs WHERE (CAST($1 AS TEXT) IS NULL OR project = $1) ORDER BY number"
        ))
        .bind(project)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing PRs"))?;
        rows.iter().map(from_row).collect()
    }

    /// The files PR `id` changes since its branch left its base (its
    /// diff), bounded: at most 50 files, each file's text up to 256 KiB.
    /// A merged or closed PR whose branch is gone shows none.
    pub async fn pr_changes(&self, id: &str) -> Result<Vec<berth_worktrees::FileChange>> {
        let pr = self.pr(id).await?;
        let changes = self
            .git()
            .branch_changes(&pr.project, &pr.branch, &pr.base, 50, 256 * 1024)
            .await;
        match changes {
            Err(_) if pr.status != PrStatus::Open => Ok(Vec::new()),
            other => other,
        }
    }

    /// A PR by number (`3`, `#3`) or id prefix.
    pub async fn pr(&self, id: &str) -> Result<PullRequest> {
        let n = id.trim_start_matches('#');
        let row = if let Ok(number) = n.parse::<i64>() {
            sqlx::query(&format!("SELECT {PR_COLUMNS} FROM prs WHERE number = $1"))
                .bind(number)
                .fetch_optional(self.store.pool())
                .await
        } else {
            let full = self.resolve_id("prs", "PR", "berth pr list", id).await?;
            sqlx::query(&format!("SELECT {PR_COLUMNS} FROM prs WHERE id = $1"))
                .bind(full)
                .fetch_optional(self.store.pool())
                .await
        }
        .map_err(EngineError::store("reading a PR"))?;
        row.as_ref()
            .map(from_row)
            .transpose()?
            .ok_or_else(|| EngineError::UnknownId {
                what: "PR",
                id: id.to_string(),
                list: "berth pr list",
            })
    }

    async fn pr_by_action(&self, action: &str) -> Result<Option<PullRequest>> {
        let row = sqlx::query(&format!(
            "SELECT {PR_COLUMNS} FROM prs WHERE action_id = $1"
        ))
        .bind(action)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading a PR"))?;
        row.as_ref().map(from_row).transpose()
    }

    /// Executes `pr_open`: the agent's branch must be in the forge. Idempotent
    /// per action: a retry finds the PR it opened.
    pub(crate) async fn exec_pr_open(
        &self,
        record: &ActionRecord,
        agent: &Agent,
    ) -> Result<Outcome> {
        let to_result = |pr: &PullRequest, already_open: bool| ActionResult::PrOpen {
            pr: pr.id.clone(),
            number: pr.number,
            branch: pr.branch.clone(),
            base: pr.base.clone(),
            head: pr.head.clone(),
            already_open,
        };
        if let Some(pr) = self.pr_by_action(&record.id).await? {
            return Ok(Outcome::ok(to_result(&pr, false)));
        }
        let Some(branch) = agent.branch.clone() else {
            return Ok(Outcome::failed(
                format!("agent `{}` has no branch: its berth is down", agent.name),
                None,
            ));
        };
        let project = self.project(&record.project).await?;
        let Some(head) = self.git().forge_head(&project, &branch).await? else {
            return Ok(Outcome::failed(
                format!("branch {branch} is not in the forge: push it first (a git_push action)"),
                None,
            ));
        };
        // One open PR per branch and head: opening it again (an agent that
        // retries, or forgot) returns the open one instead of a duplicate.
        if let Some(pr) = self
            .open_pr_at(&record.project, &branch, &project.base_branch, &head)
            .await?
        {
            return Ok(Outcome::ok(to_result(&pr, true)));
        }
        let title = record
            .params
            .title
            .clone()
            .unwrap_or_else(|| branch.clone());
        let mut tx = self.store.write("opening a PR").await?;
        tx.lock(StoreLock::PrNumbers).await?;
        let number: i64 = sqlx::query_scalar("SELECT COALESCE(MAX(number), 0) + 1 FROM prs")
            .fetch_one(&mut *tx)
            .await
            .map_err(EngineError::store("opening a PR"))?;
        let now = now_ms();
        let id = new_id();
        sqlx::query(
            "INSERT INTO prs (id, number, project, agent, task_id, action_id, branch, base, head, title, status, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'open', $11, $11)",
        )
        .bind(&id)
        .bind(number)
        .bind(&record.project)
        .bind(&agent.name)
        .bind(record.task.as_deref())
        .bind(&record.id)
        .bind(&branch)
        .bind(&project.base_branch)
        .bind(&head)
        .bind(&title)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("opening a PR"))?;
        tx.commit()
            .await
            .map_err(EngineError::store("opening a PR"))?;
        let pr = self.pr(&number.to_string()).await?;
        Ok(Outcome::ok(to_result(&pr, false)))
    }

    /// The open PR of `branch` into `base` at `head` in `project`, if any.
    async fn open_pr_at(
        &self,
        project: &str,
        branch: &str,
        base: &str,
        head: &str,
    ) -> Result<Option<PullRequest>> {
        let row = sqlx::query(&format!(
            "SELECT {PR_COLUMNS} FROM prs WHERE project = $1 AND branch = $2 AND base = $3 AND head = $4 \
             AND status = 'open' ORDER BY number LIMIT 1"
        ))
        .bind(project)
        .bind(branch)
        .bind(base)
        .bind(head)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading a PR"))?;
        row.as_ref().map(from_row).transpose()
    }

    /// Executes `git_merge` of the PR named in the params into `target`.
    pub(crate) async fn exec_merge(&self, record: &ActionRecord, target: &str) -> Result<Outcome> {
        let Some(pr_id) = record.params.pr.as_deref() else {
            return Ok(Outcome::failed("git_merge names no PR (params.pr)", None));
        };
        let pr = self.pr(pr_id).await?;
        if pr.status != PrStatus::Open {
            return Ok(Outcome::failed(
                format!("PR #{} is {}, not open", pr.number, pr.status.as_str()),
                None,
            ));
        }
        if pr.base != target {
            return Ok(Outcome::failed(
                format!("PR #{} targets {}, not {target}", pr.number, pr.base),
                None,
            ));
        }
        let project = self.project(&pr.project).await?;
        let (config, _) = self.load_project_files(&pr.project)?;
        let message = format!(
            "Merge PR #{}: {}\n\nBerth-Action: {}",
            pr.number, pr.title, record.id
        );
        match self
            .git()
            .merge(
                &project,
                &pr.branch,
                target,
                &message,
                &config.git.co_author,
            )
            .await?
        {
            Ok(commit) => Ok(Outcome::ok(ActionResult::GitMerge {
                pr: pr.id,
                target: target.to_string(),
                commit,
            })),
            Err(conflicts) => Ok(Outcome::failed(
                format!(
                    "merging {} into {target} conflicts in: {}",
                    pr.branch,
                    conflicts.join(", ")
                ),
                None,
            )),
        }
    }

    /// A merged PR resolves its task's gate: `done`, agent released.
    pub(crate) async fn resolve_merged(
        &self,
        tx: &mut Tx,
        record: &ActionRecord,
        outcome: &Outcome,
    ) -> Result<AfterSettle> {
        let Some(ActionResult::GitMerge { pr, commit, .. }) = &outcome.result else {
            return Ok(AfterSettle::default());
        };
        sqlx::query("UPDATE prs SET status = 'merged', merge_commit = $1, updated_at = $2 WHERE id = $3 AND status = 'open'")
            .bind(commit)
            .bind(now_ms())
            .bind(pr)
            .execute(&mut **tx)
            .await
            .map_err(EngineError::store("merging a PR"))?;
        let pr_row = sqlx::query(&format!("SELECT {PR_COLUMNS} FROM prs WHERE id = $1"))
            .bind(pr)
            .fetch_one(&mut **tx)
            .await
            .map_err(EngineError::store("merging a PR"))?;
        let pr = from_row(&pr_row)?;
        let system = Actor::system();
        emit(
            tx,
            NewEvent::new(kind::PR_MERGED, &system)
                .project(&pr.project)
                .agent(&pr.agent)
                .task(pr.task.as_deref())
                .action(&record.id)
                .payload(
                    serde_json::json!({ "number": pr.number, "commit": commit, "base": pr.base }),
                ),
        )
        .await?;
        match &pr.task {
            Some(task) => {
                self.release(
                    tx,
                    &pr.project,
                    &pr.agent,
                    task,
                    TaskStatus::Done,
                    &format!("PR #{} merged", pr.number),
                    kind::TASK_DONE,
                )
                .await
            }
            None => Ok(AfterSettle::default()),
        }
    }

    /// Proposes merging PR `id` into its base, as `user` on the PR agent's
    /// berth. Into a protected branch this is always pending: approve it
    /// with `berth approve ID`.
    pub async fn merge_pr(&self, id: &str, user: &Actor) -> Result<Proposed> {
        let pr = self.pr(id).await?;
        if pr.status != PrStatus::Open {
            return Err(EngineError::WrongStatus {
                what: "PR",
                id: format!("#{}", pr.number),
                status: pr.status.as_str().to_string(),
                rule: "only an open PR can be merged".into(),
            });
        }
        self.propose(merge_proposal(&pr, user, None)?, None).await
    }

    /// Closes PR `id` without merging: the task is returned and the worktree recycled.
    pub async fn close_pr(
        &self,
        id: &str,
        user: &Actor,
        reason: Option<&str>,
    ) -> Result<PullRequest> {
        let pr = self.pr(id).await?;
        let mut tx = self.store.write("closing a PR").await?;
        let n = sqlx::query(
            "UPDATE prs SET status = 'closed', updated_at = $1 WHERE id = $2 AND status = 'open'",
        )
        .bind(now_ms())
        .bind(&pr.id)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("closing a PR"))?
        .rows_affected();
        if n != 1 {
            return Err(EngineError::WrongStatus {
                what: "PR",
                id: format!("#{}", pr.number),
                status: pr.status.as_str().to_string(),
                rule: "only an open PR can be closed".into(),
            });
        }
        emit(
            &mut tx,
            NewEvent::new(kind::PR_CLOSED, user)
                .project(&pr.project)
                .agent(&pr.agent)
                .task(pr.task.as_deref())
                .payload(serde_json::json!({ "number": pr.number, "reason": reason })),
        )
        .await?;
        let after = match &pr.task {
            Some(task) => {
                let why = match reason {
                    Some(r) => format!("PR #{} closed by {}: {r}", pr.number, user.id),
                    None => format!("PR #{} closed by {}", pr.number, user.id),
                };
                self.release(
                    &mut tx,
                    &pr.project,
                    &pr.agent,
                    task,
                    TaskStatus::Returned,
                    &why,
                    kind::TASK_RETURNED,
                )
                .await?
            }
            None => AfterSettle::default(),
        };
        tx.commit()
            .await
            .map_err(EngineError::store("closing a PR"))?;
        self.after_settle(after).await?;
        self.pr(&pr.id).await
    }
}
