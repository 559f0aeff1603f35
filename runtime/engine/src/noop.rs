//! The noop agent (ADR 0018): a dev agent that needs no model. It proves the
//! execution infrastructure end to end — claim → worktree → a trivial file →
//! commit → push → PR → task in review — through the same [`AgentIo`] every
//! agent uses.
//!
//! The trivial file is the agent's *work*, written straight into its own
//! worktree the way a real agent edits files in its berth; it is not a
//! proposed action. What the runtime does on the agent's behalf afterwards —
//! commit, push, PR — is proposed, decided and logged. (So the log shows
//! exactly three proposals per task, the ones activation seeds.)

use std::time::Duration;

use berth_policy::frame::WORK;
use berth_sandbox::confined_files::{ConfinedFiles, FileMount, LinkTargets};
use serde::Serialize;

use crate::Engine;
use crate::agent_io::{AgentIo, Delivery};
use crate::agents::{AgentImpl, AgentStatus};
use crate::error::{EngineError, Result};
use crate::tasks::TaskStatus;

/// Why `run_agent` returned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AgentRun {
    /// No task to claim.
    Idle,
    /// An action waits for a person.
    AwaitingApproval { action: String, step: String },
    /// The task's PR is open; a person resolves the gate.
    InReview { task: String },
    /// The task is blocked.
    Blocked { task: String, diagnosis: String },
    /// Stopped by the circuit breaker.
    Paused,
}

/// What one pass did, for the caller to print.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunReport {
    /// Tasks delivered to review or returned in this run.
    pub delivered: Vec<(String, String)>,
    pub stopped: AgentRun,
}

/// The file the noop agent writes for a task.
pub fn work_file(task: &str) -> String {
    format!("noop/{}.md", crate::ids::short(task))
}

impl Engine {
    /// Drives a noop agent's loop in the foreground. With `until_idle` it
    /// returns as soon as it cannot go on (no task, waiting for a person, in
    /// review); otherwise it polls until interrupted.
    pub async fn run_agent(&self, agent: &crate::AgentName, until_idle: bool) -> Result<RunReport> {
        self.run_agent_under(agent, until_idle, None).await
    }

    /// [`run_agent`](Engine::run_agent) by a driver holding `lease`: every
    /// effect of the loop checks it first (`agent_lease.rs`).
    pub async fn run_agent_under(
        &self,
        agent: &crate::AgentName,
        until_idle: bool,
        lease: Option<crate::agent_lease::AgentLease>,
    ) -> Result<RunReport> {
        let a = self.agent(agent).await?;
        if a.implementation != AgentImpl::Noop {
            return Err(EngineError::NotNoop {
                agent: agent.to_string(),
            });
        }
        let io = match lease {
            Some(l) => self.agent_io_under(agent, l),
            None => self.agent_io(agent),
        };
        let mut delivered = Vec::new();
        loop {
            let stopped = self.noop_pass(&io, &mut delivered).await?;
            match stopped {
                None => continue,
                Some(s) if until_idle => {
                    return Ok(RunReport {
                        delivered,
                        stopped: s,
                    });
                }
                Some(_) => tokio::time::sleep(Duration::from_secs(1)).await,
            }
        }
    }

    /// One step of the noop loop; `Some` when it cannot go on now.
    async fn noop_pass(
        &self,
        io: &AgentIo<'_>,
        delivered: &mut Vec<(String, String)>,
    ) -> Result<Option<AgentRun>> {
        let a = io.agent().await?;
        if a.status == AgentStatus::Paused {
            return Ok(Some(AgentRun::Paused));
        }
        let Some(task_id) = a.task.clone() else {
            return Ok(match io.claim().await? {
                Some(_) => None,
                None => Some(AgentRun::Idle),
            });
        };
        let task = self.task(&task_id).await?;
        if task.status != TaskStatus::Blocked {
            // The task's primary session, where prompts for it (a person's,
            // auto-fix, lifecycle) are delivered.
            self.open_session(&a.name, &task.id, &crate::events::Actor::system())
                .await?;
        }
        match task.status {
            TaskStatus::InReview => {
                if self.answer_prompt(io, &a, &task).await? {
                    return Ok(None);
                }
                return Ok(Some(AgentRun::InReview { task: task.id }));
            }
            TaskStatus::Blocked => {
                return Ok(Some(AgentRun::Blocked {
                    task: task.id,
                    diagnosis: task.diagnosis.unwrap_or_default(),
                }));
            }
            _ => {}
        }
        let a = io.worktree().await?;
        let worktree = a.worktree.clone().ok_or_else(|| EngineError::NoBerth {
            agent: a.name.clone(),
            project: a.project.clone(),
        })?;
        let file = worktree.join(work_file(&task.id));
        if !file.exists() {
            let text = format!(
                "# {}\n\nDelivered by the noop agent {} for task {}.\n",
                task.title, a.name, task.id
            );
            self.write_work(&a, &worktree, &work_file(&task.id), text)
                .await?;
        }
        // Approvals received by another process, run here where the
        // worktree is (a step of the chain among them: `deliver` finds it
        // executed).
        let routed = io.run_routed().await?;
        if routed > 0 {
            tracing::info!(agent = %a.name, routed, "ran approvals received elsewhere");
        }
        match io.deliver(&task).await? {
            Delivery::InReview { .. } => {
                delivered.push((task.id.clone(), "in_review".into()));
                Ok(Some(AgentRun::InReview { task: task.id }))
            }
            Delivery::Waiting { action, step } => {
                Ok(Some(AgentRun::AwaitingApproval { action, step }))
            }
            Delivery::Returned { .. } => {
                delivered.push((task.id.clone(), "returned".into()));
                Ok(None)
            }
            Delivery::Blocked { diagnosis } => {
                io.block(&task, &diagnosis).await?;
                Ok(Some(AgentRun::Blocked {
                    task: task.id,
                    diagnosis,
                }))
            }
        }
    }
}

impl Engine {
    /// Writes `rel` beneath the agent's worktree: never through a link (the
    /// worktree holds what the repository committed, links included); in a
    /// container berth it belongs to the container's uid, as the rest of
    /// the worktree does.
    async fn write_work(
        &self,
        a: &crate::agents::Agent,
        worktree: &std::path::Path,
        rel: &str,
        text: String,
    ) -> Result<()> {
        let mut files = ConfinedFiles::new(
            vec![FileMount {
                frame: WORK.to_string(),
                host: worktree.to_path_buf(),
                writable: true,
            }],
            LinkTargets::Frame,
        );
        if a.berth == Some(crate::config::BerthMode::Mounted) {
            let (config, _) = self.load_project_files(&a.project)?;
            files = files.with_owner(config.sandbox.uid, config.sandbox.uid);
        }
        let frame_path = format!("{WORK}/{rel}");
        tokio::task::spawn_blocking(move || files.write(&frame_path, text.as_bytes()))
            .await
            .map_err(EngineError::interrupted("writing the noop file"))?
            .map_err(berth_sandbox::SandboxError::from)?;
        Ok(())
    }

    /// A task in review with a prompt for its session: the noop agent takes
    /// it. An auto-fix prompt is
    /// answered with a fix commit pushed to the PR's branch
    /// ([`fix_file`]); any other prompt is only acknowledged. True when a
    /// prompt was taken.
    async fn answer_prompt(
        &self,
        io: &AgentIo<'_>,
        a: &crate::agents::Agent,
        task: &crate::tasks::Task,
    ) -> Result<bool> {
        let Some(r) = self.reserve_prompt(&a.name).await? else {
            return Ok(false);
        };
        self.acknowledge_prompt(&r.token).await?;
        // A fix answers its own task's PR only (a prompt for an earlier
        // task — its terminal prompt, say — is only taken).
        let answered = if r.prompt.kind == "auto_fix" && r.prompt.task.as_deref() == Some(&task.id)
        {
            self.answer_fix(io, a, task, &r.prompt).await
        } else {
            Ok(())
        };
        let _ = self.finish_turn(&r.session.id, false).await?;
        answered?;
        Ok(true)
    }

    async fn answer_fix(
        &self,
        io: &AgentIo<'_>,
        a: &crate::agents::Agent,
        task: &crate::tasks::Task,
        prompt: &crate::prompts::Prompt,
    ) -> Result<()> {
        let worktree = a.worktree.clone().ok_or_else(|| EngineError::NoBerth {
            agent: a.name.clone(),
            project: a.project.clone(),
        })?;
        let text = format!(
            "Fixed by the noop agent {} for prompt {} (attempt {}).\n",
            a.name, prompt.id, prompt.attempts
        );
        self.write_work(a, &worktree, &fix_file(&task.id), text)
            .await?;
        let key = |step: &str| format!("task:{}:prompt:{}:{step}", task.id, prompt.id);
        let commit = io
            .propose(
                berth_policy::Action::GitCommit,
                crate::actions::ActionParams {
                    message: Some(format!("Fix for {}", task.title)),
                    ..crate::actions::ActionParams::default()
                },
                Some(&task.id),
                &key("git_commit"),
            )
            .await?;
        if !matches!(&commit.status, crate::actions::ProposeStatus::Executed { outcome } if outcome.succeeded)
        {
            tracing::info!(prompt = %prompt.id, "the noop agent's fix commit did not run now");
            return Ok(());
        }
        let branch = a
            .branch
            .clone()
            .unwrap_or_else(|| crate::agents::branch_for(&a.name, Some(&task.id)));
        io.propose(
            berth_policy::Action::GitPush { branch },
            crate::actions::ActionParams::default(),
            Some(&task.id),
            &key("git_push"),
        )
        .await?;
        Ok(())
    }
}

/// The file the noop agent writes to answer an auto-fix prompt.
pub fn fix_file(task: &str) -> String {
    format!("noop/{}.fix.md", crate::ids::short(task))
}
