//! `propose`: the decision, recorded with the final status, and — when it
//! is auto-approved — the first run. Apart from a person's decisions
//! (`decide.rs`) because this is the one step an agent takes on its own.

use berth_policy::{Action, Verdict};

use super::{
    ActionRecord, ActionStatus, CreatedStatus, OutputSink, Proposal, ProposeStatus, Proposed,
    record::to_json,
};
use crate::Engine;
use crate::agents::{Agent, AgentStatus, ProposingAgent};
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms};
use crate::tasks::TaskStatus;
use crate::transitions::{self, AgentMove, AgentMoved, TaskMove};

impl Engine {
    /// Proposes an action. See the module docs.
    pub async fn propose(&self, proposal: Proposal, sink: Option<OutputSink>) -> Result<Proposed> {
        // The agent's row, whether its project is live, its autonomy and
        // whether the key is held, in one read: each read is a hop to a
        // store connection's worker and back. The held action is read only
        // for a replay.
        let ProposingAgent {
            agent,
            project_live,
            autonomy,
            key_held,
        } = self
            .agent_for_proposal(&proposal.agent, proposal.idempotency_key.as_deref())
            .await?;
        if key_held
            && let Some(key) = &proposal.idempotency_key
            && let Some(existing) = self.action_by_key(key).await?
        {
            return replay(existing, &proposal);
        }
        // An agent proposes for its own task only: a proposal naming another
        // agent's task (or another project's) would move that task when it
        // waits, fails or is refused.
        if let Some(task_id) = proposal.task.as_deref() {
            let task = self.task(task_id).await?;
            if task.project != agent.project
                || task.agent.as_deref().is_some_and(|a| a != agent.name)
            {
                return Err(EngineError::NotOwnTask {
                    task: crate::ids::short(&task.id).to_string(),
                    owner: task.agent.as_deref().unwrap_or("no agent").to_string(),
                    project: task.project,
                    agent: agent.name,
                });
            }
        }
        // The project's files (parsed again only when one changed); its
        // row was read with the agent's.
        if !project_live {
            return Err(EngineError::UnknownProject(agent.project.clone()));
        }
        let (config, rules) = self.load_project_files(&agent.project)?;
        let sandbox = self
            .sandbox_for(&agent, &config, needs_berth(&proposal.action))
            .await?;
        let default_frame = crate::berths::runner_frame(&config);
        let frame = sandbox
            .as_ref()
            .map(|s| s.frame().clone())
            .unwrap_or(default_frame);
        let cwd = proposal
            .params
            .cwd
            .clone()
            .unwrap_or_else(|| frame.project_root().to_string());
        let ctx = config.policy_context(&rules, &frame, &cwd, &autonomy);
        let mut decision = berth_policy::decide(&proposal.action, &ctx);

        // The host checks only raise: a file action led out of its mount by
        // a link is refused; an auto-approved action whose judged paths
        // escape the scope through a symlink on the host waits for a person.
        let hold_reason = sandbox.as_ref().and_then(|sb| {
            crate::berths::host_check(sb.as_ref(), &proposal.action, &mut decision, &cwd)
        });
        let resolved_path = sandbox
            .as_ref()
            .and_then(|sb| crate::berths::file_host_path(sb.as_ref(), &proposal.action, &cwd));
        let (created_status, status) = match (decision.verdict, &hold_reason) {
            (Verdict::Deny, _) => (CreatedStatus::Denied, ActionStatus::Refused),
            (Verdict::RequireApproval, _) | (Verdict::AutoApprove, Some(_)) => {
                (CreatedStatus::Pending, ActionStatus::Pending)
            }
            (Verdict::AutoApprove, None) => (CreatedStatus::AutoApproved, ActionStatus::Executing),
        };
        // From here on, the decision as stored: bounded in bytes, whatever
        // the command (the guard above has seen the whole of it).
        let decision = crate::stored_decision::for_store(decision);

        let id = new_id();
        let key = proposal
            .idempotency_key
            .clone()
            .unwrap_or_else(|| id.clone());
        let now = now_ms();
        let executor = (status == ActionStatus::Executing).then(crate::recovery::executor_id);
        let mut tx = self.store.write("recording a proposed action").await?;
        let inserted = sqlx::query(
            "INSERT INTO proposed_actions (id, idempotency_key, agent, project, task_id, action_type, action, params, \
             decision, verdict, stage, created_status, status, hold_reason, proposer_kind, proposer_id, executor, \
             created_at, updated_at, resolved_path) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $18, $19) \
             ON CONFLICT (idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING",
        )
        .bind(&id)
        // None: the action's own id is its key (read back as such).
        .bind(proposal.idempotency_key.as_deref())
        .bind(&agent.name)
        .bind(&agent.project)
        .bind(proposal.task.as_deref())
        .bind(proposal.action.kind())
        .bind(to_json(&proposal.action)?)
        .bind(to_json(&proposal.params)?)
        .bind(to_json(&decision)?)
        .bind(decision.verdict.as_str())
        .bind(decision.stage.as_str())
        .bind(created_status.as_str())
        .bind(status.as_str())
        .bind(hold_reason.as_deref())
        .bind(proposal.proposer.kind.as_str())
        .bind(&proposal.proposer.id)
        .bind(executor.as_deref())
        .bind(now)
        .bind(resolved_path.as_deref())
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("recording a proposed action"))?
        .rows_affected();
        if inserted == 0 {
            // Another process used the key between our read and our write.
            drop(tx);
            let existing = self.action_by_key(&key).await?.ok_or_else(|| {
                EngineError::corrupt("recording a proposed action", "key vanished")
            })?;
            return replay(existing, &proposal);
        }
        emit(
            &mut tx,
            NewEvent::new(kind::ACTION_PROPOSED, &proposal.proposer)
                .project(&agent.project)
                .agent(&agent.name)
                .task(proposal.task.as_deref())
                .action(&id)
                // The action, its decision and its key are the action row's:
                // the log's reader joins them in (stored once).
                .payload(serde_json::json!({
                    "status": created_status.as_str(),
                    "held": hold_reason,
                    "resolved_path": resolved_path,
                })),
        )
        .await?;
        if status == ActionStatus::Pending && crate::gate::is_chain(proposal.action.kind()) {
            self.note_awaiting(&mut tx, &agent, proposal.task.as_deref(), &id)
                .await?;
        }
        tx.commit()
            .await
            .map_err(EngineError::store("recording a proposed action"))?;

        // The row as written, without reading it back.
        let record = ActionRecord {
            id: id.clone(),
            idempotency_key: key,
            agent: agent.name.clone(),
            project: agent.project.clone(),
            task: proposal.task.clone(),
            action: proposal.action.clone(),
            params: proposal.params.clone(),
            decision: decision.clone(),
            created_status,
            status,
            hold_reason,
            resolved_path,
            proposer: proposal.proposer.clone(),
            decided_by: None,
            decided_at: None,
            executor,
            result: None,
            diagnostic: None,
            created_at: now,
            updated_at: now,
        };
        let status = match status {
            ActionStatus::Executing => {
                let outcome = self
                    .run_and_finish(
                        &record,
                        &agent,
                        &config,
                        sandbox,
                        sink,
                        proposal.caller_env.as_ref(),
                    )
                    .await?;
                ProposeStatus::Executed { outcome }
            }
            ActionStatus::Refused => {
                self.after_refusal(&record).await?;
                record.propose_status()
            }
            _ => record.propose_status(),
        };
        Ok(Proposed {
            id,
            status,
            decision,
            replayed: false,
        })
    }

    /// The agent waits on this action when it belongs to its delivery chain.
    async fn note_awaiting(
        &self,
        tx: &mut crate::store::Tx,
        agent: &Agent,
        task: Option<&str>,
        action_id: &str,
    ) -> Result<()> {
        let Some(task) = task else { return Ok(()) };
        let waits = AgentMove::follow(task, AgentStatus::AwaitingApproval);
        let moved = transitions::agent(tx, &agent.name, waits).await?;
        if moved == AgentMoved::NotHolding {
            return Ok(());
        }
        // Its task waits with it (a paused agent stays paused, its task waits).
        let _ =
            transitions::task(tx, task, TaskMove::to(TaskStatus::AwaitingApproval), None).await?;
        if moved != AgentMoved::Paused {
            let actor = Actor::agent(&agent.name);
            emit(
                tx,
                NewEvent::new(kind::AGENT_AWAITING, &actor)
                    .project(&agent.project)
                    .agent(&agent.name)
                    .task(Some(task))
                    .action(action_id),
            )
            .await?;
        }
        Ok(())
    }
}

pub(super) fn needs_berth(action: &Action) -> bool {
    matches!(
        action,
        Action::Terminal { .. } | Action::FileRead { .. } | Action::FileWrite { .. }
    )
}

/// The answer to a proposal whose idempotency key was used before.
fn replay(existing: ActionRecord, proposal: &Proposal) -> Result<Proposed> {
    if existing.agent != proposal.agent.as_str() || existing.action != proposal.action {
        return Err(EngineError::KeyConflict {
            key: existing.idempotency_key,
            id: existing.id,
            existing: format!("{} by {}", existing.action.kind(), existing.agent),
        });
    }
    Ok(Proposed {
        id: existing.id.clone(),
        status: existing.propose_status(),
        decision: existing.decision,
        replayed: true,
    })
}
