//! An approval runs where the agent is: on a fleet of workers (`berth serve
//! --worker NAME`, a state directory each, one store), an agent's berth and
//! worktree exist only on the worker holding its lease, so a person's
//! approval received by any other process — another worker's page or API,
//! `berth approve` on any host — must run on that holder.
//!
//! The receiver records the person's decision in the store at once, as
//! status `approved` with what the holder needs of it (`approval`: `always`,
//! who received it, which worker held the agent), in the same transaction
//! as `proposed_action.approved`: the decision survives the receiver dying
//! right after. Nothing runs there. The log's append wakes every worker
//! (`Engine::log_signal`; the driver's rescan is the fallback); the holder's
//! next pass of the agent runs the agent's approved actions under its lease
//! ([`Engine::run_routed_approvals`]) through the same claim-and-run as a
//! local approval: a conditional UPDATE from `approved` to `executing` that
//! holds only while the holder's lease does (`decide.rs`), then
//! `proposed_action.approval_run` naming the worker. A holder that dies
//! before its claim leaves the action `approved` for the worker taking the
//! agent over; one that dies after it leaves it `executing`, which the
//! takeover marks interrupted and the delivery chain resumes once (its
//! effects are found when they happened) — the action never runs twice.
//!
//! An agent never driven under a worker's lease (a real agent, one driven
//! by `berth serve` processes sharing one state directory) is approved and
//! run by the receiver, as before: that process can reach its berth.

use serde::{Deserialize, Serialize};

use super::decide::{Claim, FileRecheck, claimed_or_not_pending, not_pending, resume_agent};
use super::record::{ACTION_COLUMNS, to_json};
use super::{ActionRecord, ActionStatus, Approved, OutputSink};
use crate::Engine;
use crate::agent_lease::AgentLease;
use crate::error::{EngineError, Result};
use crate::events::{Actor, emit, kind};
use crate::ids::now_ms;
use crate::permissions;

/// What the holder needs of a person's approval received elsewhere (the
/// `approval` column; who and when are `decided_by`, `decided_at`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoutedApproval {
    /// Add the action's allow rules (on the holder, whose rules decide
    /// the agent's proposals).
    #[serde(default)]
    pub always: bool,
    /// The process that received it: a worker's name, or an executor id
    /// (`host:pid:start`) for any other.
    pub received_by: String,
    /// The worker that held the agent when it was received; `None` when
    /// none did (the next worker to take the agent runs it).
    pub routed_to: Option<String>,
}

/// The answer to an approval recorded for another process to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Routed {
    pub id: String,
    /// Always `approved`: decided, not run yet.
    pub status: &'static str,
    pub agent: String,
    /// The worker that holds the agent and runs the action; `None` when no
    /// worker holds it now (the next to take the agent runs it).
    pub runs_on: Option<String>,
    pub received_by: String,
    /// What to tell the person, one line.
    pub message: String,
}

/// What a person's approval did: ran here, or was recorded for the worker
/// holding the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Approval {
    Executed(Approved),
    Routed(Routed),
}

/// Whether a lease owner is a worker's name (`worker.rs`: letters, digits,
/// `-`, `_`, `.`) rather than a server's executor id (`host:pid:start`),
/// which shares its state directory with whoever approves beside it.
fn is_worker(owner: &str) -> bool {
    !owner.contains(':')
}

impl Engine {
    /// Approves a pending action as `user`: runs it here when this process
    /// can (see the module documentation), else records the approval for
    /// the worker holding the agent and returns at once.
    pub async fn approve_anywhere(
        &self,
        id: &str,
        user: &Actor,
        always: bool,
        sink: Option<OutputSink>,
    ) -> Result<Approval> {
        let record = self.action(id).await?;
        if record.status != ActionStatus::Pending {
            return Err(not_pending(&record));
        }
        match self.approval_route(&record.agent).await? {
            None => Ok(Approval::Executed(
                self.approve_read(record, user, always, sink).await?,
            )),
            Some(runs_on) => Ok(Approval::Routed(
                self.record_routed_approval(&record, user, always, runs_on)
                    .await?,
            )),
        }
    }

    /// Where an approval of `agent`'s action runs: `None` here; `Some` on
    /// the worker named (`Some(None)`: no worker holds the agent now).
    async fn approval_route(&self, agent: &str) -> Result<Option<Option<String>>> {
        let row: Option<(String, i64)> =
            sqlx::query_as("SELECT owner, until_ms FROM agent_leases WHERE agent = $1")
                .bind(agent)
                .fetch_optional(self.store.pool())
                .await
                .map_err(EngineError::store("reading an agent's lease"))?;
        Ok(match row {
            None => None,
            Some((owner, _)) if !is_worker(&owner) => None,
            Some((owner, until)) if until > now_ms() => {
                (self.worker() != Some(owner.as_str())).then_some(Some(owner))
            }
            Some(_) => Some(None),
        })
    }

    /// Records `user`'s approval of pending `record` for another process
    /// to run: status `approved`, `proposed_action.approved`, and the agent
    /// back to work on a delivery step it waited on, in one transaction.
    async fn record_routed_approval(
        &self,
        record: &ActionRecord,
        user: &Actor,
        always: bool,
        runs_on: Option<String>,
    ) -> Result<Routed> {
        let op = "recording an approval for the agent's worker";
        let approval = RoutedApproval {
            always,
            received_by: self
                .worker()
                .map(str::to_string)
                .unwrap_or_else(crate::recovery::executor_id),
            routed_to: runs_on.clone(),
        };
        let rules = if always {
            permissions::rules_for_action(&record.action, &record.decision)
        } else {
            Vec::new()
        };
        let now = now_ms();
        let mut tx = self.store.write(op).await?;
        let claimed = sqlx::query(&format!(
            "UPDATE proposed_actions SET status = 'approved', decided_by = $1, decided_at = $2, approval = $3, \
             updated_at = $2 WHERE id = $4 AND status = 'pending' RETURNING {ACTION_COLUMNS}"
        ))
        .bind(&user.id)
        .bind(now)
        .bind(to_json(&approval)?)
        .bind(&record.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let record = claimed_or_not_pending(&mut tx, claimed, &record.id, op).await?;
        emit(
            &mut tx,
            record
                .event(kind::ACTION_APPROVED, user)
                .payload(serde_json::json!({
                    "always": always,
                    "rules": rules,
                    "received_by": approval.received_by,
                    "routed_to": approval.routed_to,
                })),
        )
        .await?;
        if let Some(task) = &record.task
            && crate::gate::is_chain(record.action.kind())
        {
            resume_agent(&mut tx, &record.agent, task).await?;
        }
        tx.commit().await.map_err(EngineError::store(op))?;
        let message = match &runs_on {
            Some(w) => format!(
                "approved; runs on worker {w}, which holds agent {}",
                record.agent
            ),
            None => format!(
                "approved; no worker holds agent {} now: it runs on the worker that takes it",
                record.agent
            ),
        };
        tracing::info!(action = %record.id, agent = %record.agent, runs_on = ?runs_on, "approval recorded for the agent's worker");
        Ok(Routed {
            id: record.id,
            status: ActionStatus::Approved.as_str(),
            agent: record.agent,
            runs_on,
            received_by: approval.received_by,
            message,
        })
    }

    /// The actions of `agent` a person approved in another process that
    /// have not run yet, oldest first.
    pub async fn routed_approvals(&self, agent: &str) -> Result<Vec<String>> {
        sqlx::query_scalar(
            "SELECT id FROM proposed_actions WHERE agent = $1 AND status = 'approved' \
             ORDER BY created_at, id",
        )
        .bind(agent)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing approvals to run"))
    }

    /// Runs every action of `lease.agent` a person approved in another
    /// process, oldest first, under `lease` (checked before each, and by
    /// each claim): what ran. Call where the agent's berth is up (an
    /// approved commit needs the worktree it commits).
    pub async fn run_routed_approvals(&self, lease: &AgentLease) -> Result<Vec<Approved>> {
        let mut ran = Vec::new();
        for id in self.routed_approvals(&lease.agent).await? {
            self.check_agent_lease(lease).await?;
            let record = self.action(&id).await?;
            if record.status != ActionStatus::Approved {
                continue;
            }
            let approval = self.routed_approval(&id).await?;
            let run = self.berth_to_run(&record).await?;
            let recheck = run
                .sandbox
                .as_ref()
                .and_then(|sb| FileRecheck::at_approval(sb.as_ref(), &record));
            let approver = Actor::user(record.decided_by.as_deref().unwrap_or("a person"));
            if let Some(refusal) = recheck.as_ref().and_then(|r| r.refusal.clone()) {
                let resolved = recheck.and_then(|r| r.resolved);
                match self
                    .refuse_at_approval(
                        &record,
                        &approver,
                        ActionStatus::Approved,
                        refusal,
                        resolved,
                    )
                    .await
                {
                    Err(EngineError::RefusedAtApproval { .. }) => continue,
                    Err(e) => return Err(e),
                    Ok(a) => {
                        ran.push(a);
                        continue;
                    }
                }
            }
            let rules = if approval.always {
                permissions::rules_for_action(&record.action, &record.decision)
            } else {
                Vec::new()
            };
            let claim = Claim::Routed {
                lease: lease.clone(),
                always: approval.always,
                approval,
                rules,
                resolved: recheck.and_then(|r| r.resolved),
            };
            tracing::info!(action = %record.id, agent = %lease.agent, worker = %lease.owner, "running an approval received elsewhere");
            ran.push(
                self.claim_and_run(&record, run, &approver, claim, None)
                    .await?,
            );
        }
        Ok(ran)
    }

    async fn routed_approval(&self, id: &str) -> Result<RoutedApproval> {
        let op = "reading an approval to run";
        let json: Option<String> =
            sqlx::query_scalar("SELECT approval FROM proposed_actions WHERE id = $1")
                .bind(id)
                .fetch_optional(self.store.pool())
                .await
                .map_err(EngineError::store(op))?
                .flatten();
        match json {
            Some(j) => serde_json::from_str(&j)
                .map_err(|e| EngineError::corrupt(op, format!("action {id}'s approval: {e}"))),
            None => Err(EngineError::corrupt(
                op,
                format!("action {id} is approved with no approval recorded"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_owns_a_lease_by_name_and_a_server_by_executor_id() {
        assert!(is_worker("w1"));
        assert!(is_worker("host-1.example"));
        assert!(!is_worker("host:123:456"));
    }
}
