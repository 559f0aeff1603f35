//! A person's decisions on a proposed action: approve (and run), deny,
//! retry an interrupted one — and berth's own resume of its delivery
//! effects after a crash. Approval and retry are one claim-and-run: a
//! conditional UPDATE to `executing` checked by rows affected, so two
//! deciders never both run it.

use std::sync::Arc;

use berth_policy::{Decision, Verdict};
use berth_sandbox::Sandbox;

use super::propose::needs_berth;
use super::record::{ACTION_COLUMNS, action_in_tx, from_row, to_json};
use super::{ActionRecord, ActionStatus, Approved, OutputSink};
use crate::Engine;
use crate::agents::{Agent, AgentStatus};
use crate::config::ProjectConfig;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;
use crate::permissions;
use crate::tasks::TaskStatus;
use crate::transitions::{self, AgentMove, TaskMove};

impl Engine {
    /// Approves a pending action as `user` and executes it. With `always`,
    /// first adds an allow rule per segment to the project's rules file.
    pub async fn approve(
        &self,
        id: &str,
        user: &Actor,
        always: bool,
        sink: Option<OutputSink>,
    ) -> Result<Approved> {
        let record = self.action(id).await?;
        self.approve_read(record, user, always, sink).await
    }

    /// [`Engine::approve`] of an action already read (`approve_anywhere`
    /// reads it to route it first).
    pub(super) async fn approve_read(
        &self,
        record: ActionRecord,
        user: &Actor,
        always: bool,
        sink: Option<OutputSink>,
    ) -> Result<Approved> {
        // Cheap refusal for the many when many approve at once; the claim
        // below is what decides.
        if record.status != ActionStatus::Pending {
            return Err(not_pending(&record));
        }
        let run = self.berth_to_run(&record).await?;
        // Checked again now: the agent may have swapped a directory for a
        // link since it proposed (execution is confined anyway).
        let recheck = run
            .sandbox
            .as_ref()
            .and_then(|sb| FileRecheck::at_approval(sb.as_ref(), &record));
        if let Some(refusal) = recheck.as_ref().and_then(|r| r.refusal.clone()) {
            return self
                .refuse_at_approval(
                    &record,
                    user,
                    ActionStatus::Pending,
                    refusal,
                    recheck.and_then(|r| r.resolved),
                )
                .await;
        }
        let resolved_now = recheck.and_then(|r| r.resolved);
        let rules = if always {
            permissions::rules_for_action(&record.action, &record.decision)
        } else {
            Vec::new()
        };
        let claim = Claim::Approval {
            always,
            rules,
            resolved: resolved_now,
        };
        self.claim_and_run(&record, run, user, claim, sink).await
    }

    /// A pending file action whose path now leads out of its mount, found
    /// when `user` approved it: refused instead, with the reason naming the
    /// link and its target, recorded with an event; nothing runs. Fails
    /// like an approval of an action that is no longer pending when another
    /// process decided it first. `from`: the status it is refused from
    /// (`pending`; `approved` when the holder of its agent runs an approval
    /// received elsewhere, `route.rs`).
    pub(super) async fn refuse_at_approval(
        &self,
        record: &ActionRecord,
        user: &Actor,
        from: ActionStatus,
        refusal: Decision,
        resolved: Option<String>,
    ) -> Result<Approved> {
        let reason = refusal.reason.clone();
        let decision = crate::stored_decision::for_store(refusal);
        let now = now_ms();
        let op = "refusing an action at approval";
        let mut tx = self.store.write(op).await?;
        let refused = sqlx::query(&format!(
            "UPDATE proposed_actions SET status = 'refused', \
             decision_at_proposal = COALESCE(decision_at_proposal, decision), decision = $1, verdict = $2, stage = $3, \
             decided_by = $4, decided_at = $5, diagnostic = $6, resolved_path = COALESCE($7, resolved_path), \
             updated_at = $5 WHERE id = $8 AND status = $9 RETURNING {ACTION_COLUMNS}"
        ))
        .bind(to_json(&decision)?)
        .bind(decision.verdict.as_str())
        .bind(decision.stage.as_str())
        .bind(&user.id)
        .bind(now)
        .bind(&reason)
        .bind(resolved.as_deref())
        .bind(&record.id)
        .bind(from.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let record = claimed_or_not_pending(&mut tx, refused, &record.id, op).await?;
        emit(
            &mut tx,
            NewEvent::new(kind::ACTION_REFUSED_AT_APPROVAL, &Actor::system())
                .project(&record.project)
                .agent(&record.agent)
                .task(record.task.as_deref())
                .action(&record.id)
                .payload(serde_json::json!({
                    "approved_by": user.id,
                    "reason": reason,
                    "resolved_path": record.resolved_path,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        self.after_refusal(&record).await?;
        Err(EngineError::RefusedAtApproval {
            id: record.id,
            reason,
        })
    }

    /// Re-executes an interrupted action, as `user` decided (never on its
    /// own). Safe for the delivery chain: a commit finds the earlier commit
    /// of the same action by its trailer, a push of what the forge already
    /// has is a no-op, a PR is found by its action. Recorded as a human
    /// approval with `retry: true`.
    pub async fn retry(
        &self,
        id: &str,
        user: &Actor,
        sink: Option<OutputSink>,
    ) -> Result<Approved> {
        self.retry_as(id, user, serde_json::json!({ "retry": true }), sink)
            .await
    }

    /// Resumes one of berth's own delivery effects (a commit, a push, a PR)
    /// that a crash interrupted: berth can see whether each happened, and
    /// re-executing finds it instead of repeating it (the commit's action-id
    /// trailer, the forge's ref, the PR recorded for its action), so the
    /// chain moves on without a person. A terminal command's effect cannot
    /// be seen: it stays interrupted for a person (`berth retry`).
    pub(crate) async fn resume_own_effect(&self, record: &ActionRecord) -> Result<ActionRecord> {
        if !is_own_delivery_effect(&record.action) {
            return Err(EngineError::NotOwnEffect {
                id: record.id.clone(),
                kind: record.action.kind().to_string(),
            });
        }
        let resumed = self
            .retry_as(
                &record.id,
                &Actor::system(),
                serde_json::json!({ "retry": true, "resumed_after_crash": true }),
                None,
            )
            .await?;
        self.action(&resumed.id).await
    }

    async fn retry_as(
        &self,
        id: &str,
        user: &Actor,
        payload: serde_json::Value,
        sink: Option<OutputSink>,
    ) -> Result<Approved> {
        let record = self.action(id).await?;
        let run = self.berth_to_run(&record).await?;
        self.claim_and_run(&record, run, user, Claim::Retry { payload }, sink)
            .await
    }

    /// The agent of `record`, its project's configuration (loaded once: the
    /// run reads it) and the berth it runs in. The berth first: an action
    /// that cannot run now stays as it is.
    pub(super) async fn berth_to_run(&self, record: &ActionRecord) -> Result<RunInputs> {
        let agent = self.agent(&record.agent).await?;
        let project = self.load_project(&record.project).await?;
        let sandbox = self
            .sandbox_for(&agent, &project.config, needs_berth(&record.action))
            .await?;
        Ok(RunInputs {
            agent,
            config: project.config,
            sandbox,
        })
    }

    /// The claim-and-run approval and retry share: one conditional UPDATE
    /// to `executing` checked by the row it returns (exactly one decider
    /// runs the action), `proposed_action.approved` and what the decision
    /// means for the task, in one transaction; then the run.
    pub(super) async fn claim_and_run(
        &self,
        record: &ActionRecord,
        run: RunInputs,
        user: &Actor,
        claim: Claim,
        sink: Option<OutputSink>,
    ) -> Result<Approved> {
        let (op, from) = match &claim {
            Claim::Approval { .. } => ("approving an action", ActionStatus::Pending),
            Claim::Retry { .. } => ("retrying an action", ActionStatus::Interrupted),
            Claim::Routed { .. } => (
                "running an approval received elsewhere",
                ActionStatus::Approved,
            ),
        };
        let resolved = match &claim {
            Claim::Approval { resolved, .. } | Claim::Routed { resolved, .. } => {
                resolved.as_deref()
            }
            Claim::Retry { .. } => None,
        };
        let now = now_ms();
        let mut tx = self.store.write(op).await?;
        // The person decided already for a routed approval (`decided_by`,
        // `decided_at` stay theirs), and its claim holds only while the lease
        // does, in the same statement: a holder that lost the agent runs
        // nothing.
        let sql = match &claim {
            Claim::Routed { .. } => format!(
                "UPDATE proposed_actions SET status = 'executing', executor = $1, \
                 resolved_path = COALESCE($2, resolved_path), diagnostic = NULL, cancel_requested_by = NULL, updated_at = $3 \
                 WHERE id = $4 AND status = 'approved' AND EXISTS (SELECT 1 FROM agent_leases l \
                 WHERE l.agent = proposed_actions.agent AND l.owner = $5 AND l.token = $6 AND l.until_ms > $3) \
                 RETURNING {ACTION_COLUMNS}"
            ),
            _ => format!(
                "UPDATE proposed_actions SET status = 'executing', decided_by = $1, decided_at = $2, executor = $3, \
                 resolved_path = COALESCE($5, resolved_path), diagnostic = NULL, cancel_requested_by = NULL, updated_at = $2 \
                 WHERE id = $4 AND status = $6 RETURNING {ACTION_COLUMNS}"
            ),
        };
        let query = match &claim {
            Claim::Routed { lease, .. } => sqlx::query(&sql)
                .bind(crate::recovery::executor_id())
                .bind(resolved)
                .bind(now)
                .bind(&record.id)
                .bind(&lease.owner)
                .bind(lease.token),
            _ => sqlx::query(&sql)
                .bind(&user.id)
                .bind(now)
                .bind(crate::recovery::executor_id())
                .bind(&record.id)
                .bind(resolved)
                .bind(from.as_str()),
        };
        let claimed = query
            .fetch_optional(&mut *tx)
            .await
            .map_err(EngineError::store(op))?;
        let Some(claimed) = claimed else {
            let current = action_in_tx(&mut tx, &record.id, op).await?;
            return Err(match claim {
                Claim::Approval { .. } => not_pending(&current),
                // Still approved: it was the lease that failed the claim.
                Claim::Routed { lease, .. } if current.status == ActionStatus::Approved => {
                    EngineError::AgentLeaseLost {
                        agent: lease.agent.clone(),
                        owner: lease.owner.clone(),
                        now_held_by: None,
                    }
                }
                Claim::Routed { .. } => not_pending(&current),
                Claim::Retry { .. } => EngineError::WrongStatus {
                    what: "action",
                    id: current.id.clone(),
                    status: current.status.as_str().to_string(),
                    rule: "only an interrupted action can be retried".into(),
                },
            });
        };
        let record = from_row(&claimed)?;
        let (event, actor, payload) = match &claim {
            Claim::Approval { always, rules, .. } => (
                kind::ACTION_APPROVED,
                user.clone(),
                serde_json::json!({ "always": always, "rules": rules }),
            ),
            Claim::Retry { payload } => (kind::ACTION_APPROVED, user.clone(), payload.clone()),
            // The person's approval is in the log already; this says which
            // worker runs it, under which lease.
            Claim::Routed {
                lease, approval, ..
            } => (
                kind::ACTION_APPROVAL_RUN,
                Actor::system(),
                serde_json::json!({
                    "worker": lease.owner,
                    "token": lease.token,
                    "approved_by": record.decided_by,
                    "received_by": approval.received_by,
                }),
            ),
        };
        emit(
            &mut tx,
            NewEvent::new(event, &actor)
                .project(&record.project)
                .agent(&record.agent)
                .task(record.task.as_deref())
                .action(&record.id)
                .payload(payload),
        )
        .await?;
        if let Some(task) = &record.task {
            match claim {
                // The agent that waited on its delivery step goes back to work.
                Claim::Approval { .. } if crate::gate::is_chain(record.action.kind()) => {
                    resume_agent(&mut tx, &run.agent.name, task).await?;
                }
                // Its agent went back to work when the person decided.
                Claim::Approval { .. } | Claim::Routed { .. } => {}
                // A task of this agent blocked on this interruption goes back to work.
                Claim::Retry { .. } => unblock(&mut tx, task, &record.agent).await?,
            }
        }
        tx.commit().await.map_err(EngineError::store(op))?;

        let rules = match claim {
            Claim::Approval { always, rules, .. } | Claim::Routed { always, rules, .. } => {
                let patterns: Vec<String> =
                    rules.iter().filter_map(|r| r.pattern.clone()).collect();
                if always && !patterns.is_empty() {
                    permissions::append_allow(
                        &self.state.project_rules(&record.project),
                        &patterns,
                    )?;
                }
                rules
            }
            Claim::Retry { .. } => Vec::new(),
        };
        let outcome = self
            .run_and_finish(&record, &run.agent, &run.config, run.sandbox, sink, None)
            .await?;
        Ok(Approved {
            id: record.id,
            outcome,
            rules,
        })
    }

    /// Denies a pending action as `user`.
    pub async fn deny(&self, id: &str, user: &Actor, reason: Option<&str>) -> Result<ActionRecord> {
        let record = self.action(id).await?;
        if record.status != ActionStatus::Pending {
            return Err(not_pending(&record));
        }
        let now = now_ms();
        let op = "denying an action";
        let mut tx = self.store.write(op).await?;
        let claimed = sqlx::query(&format!(
            "UPDATE proposed_actions SET status = 'denied', decided_by = $1, decided_at = $2, diagnostic = $3, \
             updated_at = $2 WHERE id = $4 AND status = 'pending' RETURNING {ACTION_COLUMNS}"
        ))
        .bind(&user.id)
        .bind(now)
        .bind(reason)
        .bind(&record.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let record = claimed_or_not_pending(&mut tx, claimed, &record.id, op).await?;
        emit(
            &mut tx,
            NewEvent::new(kind::ACTION_DENIED, user)
                .project(&record.project)
                .agent(&record.agent)
                .task(record.task.as_deref())
                .action(&record.id)
                .payload(serde_json::json!({ "reason": reason })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("denying an action"))?;
        self.after_refusal(&record).await?;
        Ok(record)
    }
}

/// What running an action needs, resolved once before it is claimed.
pub(super) struct RunInputs {
    agent: Agent,
    /// Its project's `berth.toml`, as loaded here: the run reads it.
    config: ProjectConfig,
    pub(super) sandbox: Option<Arc<dyn Sandbox>>,
}

/// How a decision claims an action to run it.
pub(super) enum Claim {
    /// A person approves a pending action (with `always`, its allow rules).
    Approval {
        always: bool,
        rules: Vec<permissions::RuleChange>,
        /// Where a file action's path leads now, checked at approval.
        resolved: Option<String>,
    },
    /// A person (or berth, after a crash) runs an interrupted action again.
    Retry { payload: serde_json::Value },
    /// The worker holding the agent runs an approval a person gave in
    /// another process (`route.rs`), under its lease.
    Routed {
        lease: crate::agent_lease::AgentLease,
        approval: super::route::RoutedApproval,
        always: bool,
        rules: Vec<permissions::RuleChange>,
        resolved: Option<String>,
    },
}

/// `task`, blocked while held by `agent`, goes back to work; any other is
/// left as it is.
async fn unblock(tx: &mut crate::store::Tx, task: &str, agent: &str) -> Result<()> {
    let blocked: Option<String> = sqlx::query_scalar(
        "SELECT id FROM tasks WHERE id = $1 AND status = 'blocked' AND agent = $2",
    )
    .bind(task)
    .bind(agent)
    .fetch_optional(&mut **tx)
    .await
    .map_err(EngineError::store("retrying an action"))?;
    if blocked.is_some() {
        let mv = TaskMove::to(TaskStatus::InProgress).only_from(&[TaskStatus::Blocked]);
        let _ = transitions::task(tx, task, mv, None).await?;
    }
    Ok(())
}

/// The agent goes back to work on `task` (an action it waited on was approved).
/// Only an agent that waited on `task` moves; any other is left as it is.
pub(super) async fn resume_agent(tx: &mut crate::store::Tx, agent: &str, task: &str) -> Result<()> {
    let waited: Option<String> = sqlx::query_scalar(
        "SELECT name FROM agents WHERE name = $1 AND task_id = $2 AND status = 'awaiting_approval'",
    )
    .bind(agent)
    .bind(task)
    .fetch_optional(&mut **tx)
    .await
    .map_err(EngineError::store("resuming an agent"))?;
    if waited.is_none() {
        return Ok(());
    }
    let back = AgentMove::follow(task, AgentStatus::Working);
    let _ = transitions::agent(tx, agent, back).await?;
    let _ = transitions::task(tx, task, TaskMove::to(TaskStatus::InProgress), None).await?;
    Ok(())
}

/// The row a conditional `UPDATE … WHERE status = 'pending' RETURNING`
/// claimed, as a record; when it claimed none (another person decided
/// first), `NotPending` with the action as it is now, read in the
/// transaction (never from the pool while it is held).
pub(super) async fn claimed_or_not_pending(
    tx: &mut crate::store::Tx,
    claimed: Option<sqlx::any::AnyRow>,
    id: &str,
    op: &'static str,
) -> Result<ActionRecord> {
    match claimed {
        Some(row) => from_row(&row),
        None => Err(not_pending(&action_in_tx(tx, id, op).await?)),
    }
}

/// A pending file action checked again when a person approves it.
pub(super) struct FileRecheck {
    /// The decision as a refusal, when its path now leads out of its mount.
    pub(super) refusal: Option<Decision>,
    /// Where its path leads on the host now.
    pub(super) resolved: Option<String>,
}

impl FileRecheck {
    /// `None` for an action that is not a file action.
    pub(super) fn at_approval(sandbox: &dyn Sandbox, record: &ActionRecord) -> Option<FileRecheck> {
        let cwd = record
            .params
            .cwd
            .clone()
            .unwrap_or_else(|| sandbox.frame().project_root().to_string());
        let resolved = crate::berths::file_host_path(sandbox, &record.action, &cwd)?;
        let mut decision = record.decision.clone();
        crate::berths::host_check(sandbox, &record.action, &mut decision, &cwd);
        Some(FileRecheck {
            refusal: (decision.verdict == Verdict::Deny).then_some(decision),
            resolved: Some(resolved),
        })
    }
}

/// The answer to a second approver (or denier): where the action stands
/// now, and who decided it.
pub(super) fn not_pending(current: &ActionRecord) -> EngineError {
    let by = match (current.status, current.decided_by.as_deref()) {
        (
            ActionStatus::Approved
            | ActionStatus::Executing
            | ActionStatus::Executed
            | ActionStatus::Failed,
            Some(who),
        ) => {
            format!(" (approved by {who})")
        }
        (ActionStatus::Denied, Some(who)) => format!(" (denied by {who})"),
        _ => String::new(),
    };
    EngineError::NotPending {
        id: current.id.clone(),
        status: current.status.as_str().into(),
        decided: by,
    }
}

/// berth's own effects in the delivery chain: it can tell whether each
/// happened, so a crash never leaves them for a person.
pub(crate) fn is_own_delivery_effect(action: &berth_policy::Action) -> bool {
    matches!(
        action,
        berth_policy::Action::GitCommit
            | berth_policy::Action::GitPush { .. }
            | berth_policy::Action::PrOpen
    )
}
