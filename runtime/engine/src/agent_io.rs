//! The side effects every agent shares (ADR 0018's `AgentIo`): claim a task,
//! bring up its worktree, emit, propose, and deliver the work as commit →
//! push → PR. The noop agent drives exactly this code — a noop with its own
//! copy would test the copy, not the infrastructure — and so will every real
//! agent's driver.
//!
//! Delivery proposes each step only after the previous one executed, under a
//! deterministic idempotency key (`task:<id>:<step>`; `task:<id>:r<n>:<step>`
//! in the n-th round a takeover restarted, `worker.rs`), so running the chain
//! again after an approval, a restart or a crash replays what already
//! happened instead of doing it twice.
//!
//! An `AgentIo` made under a driver's lease ([`Engine::agent_io_under`],
//! `agent_lease.rs`) checks the lease before each effect and stops with
//! `AgentLeaseLost` once another driver holds the agent; it also runs the
//! approvals a person gave the agent's actions in another process
//! (`actions/route.rs`), each under the lease.

use berth_policy::Action;
use serde::Serialize;

use crate::Engine;
use crate::actions::{ActionParams, ActionRecord, ActionStatus, Proposal, ProposeStatus, Proposed};
use crate::agent_lease::AgentLease;
use crate::agents::Agent;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::tasks::{Task, TaskStatus};
use crate::transitions::{self, TaskMove};

/// Where a task's delivery stands after one pass of the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Delivery {
    /// The PR is open; the task is in review (the gate).
    InReview { pr_action: String },
    /// A step waits for a person; nothing more is proposed.
    Waiting { action: String, step: String },
    /// A step was refused or failed; the task was returned.
    Returned { diagnosis: String },
    /// A step was interrupted and could not be verified; the task is blocked.
    Blocked { diagnosis: String },
}

/// The steps of delivery, in order.
const STEPS: [&str; 3] = ["git_commit", "git_push", "pr_open"];

/// One agent's side effects.
pub struct AgentIo<'e> {
    engine: &'e Engine,
    agent: crate::AgentName,
    /// The driver's lease each effect checks first (none: a person's own
    /// `berth agent run`, which no other driver fences).
    lease: Option<AgentLease>,
}

impl Engine {
    pub fn agent_io(&self, agent: &crate::AgentName) -> AgentIo<'_> {
        AgentIo {
            engine: self,
            agent: agent.clone(),
            lease: None,
        }
    }

    /// [`agent_io`](Engine::agent_io) for a driver holding `lease`.
    pub fn agent_io_under(&self, agent: &crate::AgentName, lease: AgentLease) -> AgentIo<'_> {
        AgentIo {
            lease: Some(lease),
            ..self.agent_io(agent)
        }
    }
}

impl AgentIo<'_> {
    pub async fn agent(&self) -> Result<Agent> {
        self.engine.agent(&self.agent).await
    }

    /// The fencing check before an effect: the driver still holds the agent.
    async fn fence(&self) -> Result<()> {
        match &self.lease {
            Some(lease) => self.engine.check_agent_lease(lease).await,
            None => Ok(()),
        }
    }

    /// Runs the agent's actions a person approved in another process
    /// (`actions/route.rs`) under the driver's lease: how many ran. Only a
    /// driver holding a lease runs them (a person's own `berth agent run`
    /// holds none, and no approval is routed to it).
    pub async fn run_routed(&self) -> Result<usize> {
        match &self.lease {
            Some(lease) => Ok(self.engine.run_routed_approvals(lease).await?.len()),
            None => Ok(0),
        }
    }

    /// Claims the next task of the agent's project, if any.
    pub async fn claim(&self) -> Result<Option<Task>> {
        self.fence().await?;
        self.engine.claim_task(&self.agent).await
    }

    /// Brings the berth up on the task's branch (idempotent).
    pub async fn worktree(&self) -> Result<Agent> {
        self.fence().await?;
        let a = self.agent().await?;
        let (name, project) = a.names()?;
        self.engine
            .up(&name, &project, None, &Actor::agent(&a.name))
            .await?;
        self.agent().await
    }

    /// Records a fact of the agent's own (actor: the agent).
    pub async fn emit(
        &self,
        event: &str,
        task: Option<&str>,
        payload: serde_json::Value,
    ) -> Result<()> {
        self.fence().await?;
        let a = self.agent().await?;
        let actor = Actor::agent(&a.name);
        let mut tx = self.engine.store.write("recording an agent event").await?;
        emit(
            &mut tx,
            NewEvent::new(event, &actor)
                .project(&a.project)
                .agent(&a.name)
                .task(task)
                .payload(payload),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("recording an agent event"))
    }

    /// Proposes an action on the agent's behalf.
    pub async fn propose(
        &self,
        action: Action,
        params: ActionParams,
        task: Option<&str>,
        key: &str,
    ) -> Result<Proposed> {
        self.fence().await?;
        let proposal = Proposal::by_agent(&self.agent, action)
            .params(params)
            .task(task.map(str::to_string))
            .key(key);
        self.engine.propose(proposal, None).await
    }

    pub async fn propose_commit(&self, task: &Task, round: i64) -> Result<Proposed> {
        let params = ActionParams {
            message: Some(task.title.clone()),
            ..ActionParams::default()
        };
        self.propose(
            Action::GitCommit,
            params,
            Some(&task.id),
            &step_key_in(&task.id, round, "git_commit"),
        )
        .await
    }

    pub async fn propose_push(&self, task: &Task, round: i64) -> Result<Proposed> {
        let branch = self
            .agent()
            .await?
            .branch
            .unwrap_or_else(|| crate::agents::branch_for(&self.agent, Some(&task.id)));
        self.propose(
            Action::GitPush { branch },
            ActionParams::default(),
            Some(&task.id),
            &step_key_in(&task.id, round, "git_push"),
        )
        .await
    }

    pub async fn propose_pr(&self, task: &Task, round: i64) -> Result<Proposed> {
        let params = ActionParams {
            title: Some(task.title.clone()),
            ..ActionParams::default()
        };
        self.propose(
            Action::PrOpen,
            params,
            Some(&task.id),
            &step_key_in(&task.id, round, "pr_open"),
        )
        .await
    }

    /// Blocks the task with a diagnosis (`task.blocked`); the agent keeps it
    /// and its worktree until a person looks.
    pub async fn block(&self, task: &Task, diagnosis: &str) -> Result<()> {
        self.fence().await?;
        let a = self.agent().await?;
        let actor = Actor::agent(&a.name);
        let mut tx = self.engine.store.write("blocking a task").await?;
        let blocked = NewEvent::new(kind::TASK_BLOCKED, &actor)
            .project(&a.project)
            .agent(&a.name)
            .task(Some(&task.id))
            .payload(serde_json::json!({ "diagnosis": diagnosis }));
        let mv = TaskMove::to(TaskStatus::Blocked).diagnosis(Some(diagnosis));
        let _ = transitions::task(&mut tx, &task.id, mv, Some(blocked)).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("blocking a task"))
    }

    /// Runs the delivery chain as far as it can go now, in the task's
    /// current delivery round (`worker.rs`: a takeover that lost the
    /// round's commit starts a new one).
    pub async fn deliver(&self, task: &Task) -> Result<Delivery> {
        let round = self.engine.delivery_round(&task.id).await?;
        for step in STEPS {
            let existing = self
                .engine
                .action_by_key(&step_key_in(&task.id, round, step))
                .await?;
            let proposed = match existing {
                Some(rec) => match self.settled(&rec).await? {
                    Some(done) => done,
                    None => continue,
                },
                None => {
                    let p = match step {
                        "git_commit" => self.propose_commit(task, round).await?,
                        "git_push" => self.propose_push(task, round).await?,
                        _ => self.propose_pr(task, round).await?,
                    };
                    match &p.status {
                        ProposeStatus::Executed { outcome } if outcome.succeeded => continue,
                        ProposeStatus::Executed { outcome } => Delivery::Returned {
                            diagnosis: outcome.diagnostic.clone().unwrap_or_default(),
                        },
                        ProposeStatus::Pending { .. } => Delivery::Waiting {
                            action: p.id.clone(),
                            step: step.to_string(),
                        },
                        ProposeStatus::Refused { reason } => Delivery::Returned {
                            diagnosis: reason.clone(),
                        },
                    }
                }
            };
            return Ok(proposed);
        }
        let pr = self
            .engine
            .action_by_key(&step_key_in(&task.id, round, "pr_open"))
            .await?
            .map(|r| r.id)
            .unwrap_or_default();
        Ok(Delivery::InReview { pr_action: pr })
    }

    /// What an earlier proposal of a step means now: `None` to go on to the
    /// next step, or where delivery stops.
    async fn settled(&self, rec: &ActionRecord) -> Result<Option<Delivery>> {
        // A crash interrupted one of berth's own effects: resume it once (it
        // finds the effect if it happened), then read what it became.
        let resumed;
        let rec = if rec.status == ActionStatus::Interrupted {
            self.fence().await?;
            resumed = self.engine.resume_own_effect(rec).await?;
            &resumed
        } else {
            rec
        };
        Ok(match rec.status {
            ActionStatus::Executed => None,
            // Approved elsewhere: this driver's next pass runs it
            // (`run_routed`), the approval's event having woken it.
            ActionStatus::Pending | ActionStatus::Approved | ActionStatus::Executing => {
                Some(Delivery::Waiting {
                    action: rec.id.clone(),
                    step: rec.action.kind().to_string(),
                })
            }
            ActionStatus::Failed
            | ActionStatus::Refused
            | ActionStatus::Denied
            | ActionStatus::Cancelled => Some(Delivery::Returned {
                diagnosis: match rec.propose_status() {
                    ProposeStatus::Refused { reason } => reason,
                    _ => rec.diagnostic.clone().unwrap_or_default(),
                },
            }),
            ActionStatus::Interrupted => Some(Delivery::Blocked {
                diagnosis: format!(
                    "{} {} was interrupted again while it was resumed: \
                     inspect the worktree, then `berth retry {}`",
                    rec.action.kind(),
                    crate::ids::short(&rec.id),
                    crate::ids::short(&rec.id)
                ),
            }),
        })
    }
}

/// The idempotency key of delivery `step` of `task` in delivery `round`:
/// `task:<id>:<step>` in the first, `task:<id>:r<round>:<step>` after a
/// takeover restarted it.
pub(crate) fn step_key_in(task: &str, round: i64, step: &str) -> String {
    if round == 0 {
        format!("task:{task}:{step}")
    } else {
        format!("task:{task}:r{round}:{step}")
    }
}
