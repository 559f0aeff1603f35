//! The action pipeline: one code path for every caller (agent loop, CLI,
//! API, MCP).
//!
//! `propose` resolves the agent's autonomy, loads the project's rules and
//! limits, decides in the berth's frame, records `proposed_action.created`
//! with the final status and the decision (actor: the proposer), and — when
//! auto-approved — translates and executes at once. `approve` and `deny`
//! record the person's decision (actor: the user) and execute or refuse.
//! Every caller gets `executed | pending | refused` and must look at it
//! (ADR 0048: a caller that ignored the status closed tasks with no commit).
//!
//! State moves only through conditional UPDATEs (`… WHERE status = 'pending'`)
//! checked by rows affected, so two processes approving one action execute it
//! once. An action is marked `executing` with the process that runs it before
//! anything runs; after a crash, `recover` marks it `interrupted` and nothing
//! re-runs it on its own.

use std::sync::Arc;

use berth_policy::{Action, Context, Decision, Verdict};
use berth_sandbox::Sandbox;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::agents::{Agent, AgentStatus, load_autonomy};
use crate::error::{EngineError, Result};
use crate::events::{Actor, ActorKind, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms};
use crate::permissions::{self, RuleChange};
use crate::tasks::TaskStatus;
use crate::transitions::{self, AgentMove, AgentMoved, TaskMove};

/// Inputs of an action beyond what the policy judges.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionParams {
    /// terminal: the working directory in the frame (default `/work`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// terminal: the deadline in seconds (default: the project's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
    /// file_write: the new content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// git_commit: the message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// pr_open: the title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// git_merge: the PR being merged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr: Option<String>,
    /// terminal: run with `/work` read-only (a pipeline step that did not ask
    /// to write). Part of the action, so whoever executes it — the pipeline,
    /// or a person's `berth approve` in another process — enforces it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// A request to act.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub agent: String,
    pub action: Action,
    pub params: ActionParams,
    /// The task the action serves, when it is part of its delivery.
    pub task: Option<String>,
    /// Makes a retry safe: the same key returns the first proposal's state
    /// and never runs the action twice. A new random key when `None`.
    pub idempotency_key: Option<String>,
    /// Who asks: the agent, or a person acting on its berth (`berth pr merge`).
    pub proposer: Actor,
}

impl Proposal {
    /// A proposal by the agent itself.
    pub fn by_agent(agent: &str, action: Action) -> Proposal {
        Proposal {
            agent: agent.to_string(),
            action,
            params: ActionParams::default(),
            task: None,
            idempotency_key: None,
            proposer: Actor::agent(agent),
        }
    }

    pub fn params(mut self, params: ActionParams) -> Self {
        self.params = params;
        self
    }

    pub fn key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    pub fn task(mut self, task: Option<String>) -> Self {
        self.task = task;
        self
    }
}

/// The status `proposed_action.created` records: what the decision (and the
/// host-side guard) made of the proposal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CreatedStatus {
    AutoApproved,
    Pending,
    Denied,
}

impl CreatedStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CreatedStatus::AutoApproved => "auto_approved",
            CreatedStatus::Pending => "pending",
            CreatedStatus::Denied => "denied",
        }
    }
}

/// Where an action stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    /// Waits for a person.
    Pending,
    /// Approved and running (in the process named by `executor`).
    Executing,
    Executed,
    Failed,
    /// Denied by the policy.
    Refused,
    /// Denied by a person.
    Denied,
    /// Was executing when its process died; never re-run on its own.
    Interrupted,
}

impl ActionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ActionStatus::Pending => "pending",
            ActionStatus::Executing => "executing",
            ActionStatus::Executed => "executed",
            ActionStatus::Failed => "failed",
            ActionStatus::Refused => "refused",
            ActionStatus::Denied => "denied",
            ActionStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<ActionStatus> {
        Some(match s {
            "pending" => ActionStatus::Pending,
            "executing" => ActionStatus::Executing,
            "executed" => ActionStatus::Executed,
            "failed" => ActionStatus::Failed,
            "refused" => ActionStatus::Refused,
            "denied" => ActionStatus::Denied,
            "interrupted" => ActionStatus::Interrupted,
            _ => return None,
        })
    }
}

/// What an executed action produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ActionResult {
    Terminal {
        /// The command as decided (frame) and as run (host).
        command: String,
        host_command: String,
        cwd: String,
        host_cwd: String,
        exit_code: i32,
        timed_out: bool,
        stdout: String,
        stderr: String,
        stdout_truncated: bool,
        stderr_truncated: bool,
        duration_ms: u64,
        /// Said when the command ran with `/work` writable although read-only
        /// was asked: the backend could not enforce it here.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        access_note: Option<String>,
        /// The berth's memory limit killed a process of this command
        /// (whatever the command's own exit code).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        oom_killed: bool,
        /// The berth's container was restarted while this command ran, which
        /// killed every command in it (berth does that to end a timed-out
        /// command that outlived its kill).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        container_restarted: bool,
    },
    FileRead {
        path: String,
        host_path: String,
        /// The file's text, or for a directory its listing: one entry a line,
        /// sorted, `/` after a directory and `@` after a symlink.
        content: String,
        bytes: u64,
    },
    FileWrite {
        path: String,
        host_path: String,
        bytes: u64,
    },
    GitCommit {
        branch: String,
        commit: String,
        /// False when a commit for this action already existed (a retry).
        created: bool,
    },
    GitPush {
        branch: String,
        commit: String,
    },
    PrOpen {
        pr: String,
        number: i64,
        branch: String,
        base: String,
        head: String,
        /// True when a PR was already open for this branch at this head: it
        /// is the one returned, and no second PR was opened.
        #[serde(default)]
        already_open: bool,
    },
    GitMerge {
        pr: String,
        target: String,
        commit: String,
    },
    /// The agent's container, removed (none when there was none to remove).
    ContainerRemove {
        container: Option<String>,
    },
    /// A second agent beside `of`, with its implementation and autonomy.
    Parallelize {
        agent: String,
        of: String,
        implementation: String,
        autonomy_rows: u64,
    },
    RaiseMaxParallel {
        project: String,
        from: u32,
        to: u32,
    },
    InstructionPatch {
        agent: String,
        path: String,
        bytes_before: Option<u64>,
        bytes: u64,
    },
}

impl ActionResult {
    /// A copy small enough for the store: output kept to its last 64 KiB.
    fn for_store(&self) -> ActionResult {
        const KEEP: usize = 64 * 1024;
        let mut r = self.clone();
        match &mut r {
            ActionResult::Terminal {
                stdout,
                stderr,
                stdout_truncated,
                stderr_truncated,
                ..
            } => {
                *stdout_truncated |= keep_tail(stdout, KEEP);
                *stderr_truncated |= keep_tail(stderr, KEEP);
            }
            ActionResult::FileRead { content, .. } => {
                keep_tail(content, KEEP);
            }
            _ => {}
        }
        r
    }

    /// The fields the log keeps (no output: that stays with the action).
    fn summary(&self) -> serde_json::Value {
        match self {
            ActionResult::Terminal {
                command,
                host_command,
                cwd,
                host_cwd,
                exit_code,
                timed_out,
                stdout,
                stderr,
                duration_ms,
                access_note,
                ..
            } => serde_json::json!({
                "command": command, "host_command": host_command, "cwd": cwd, "host_cwd": host_cwd,
                "exit_code": exit_code, "timed_out": timed_out, "duration_ms": duration_ms,
                "stdout_bytes": stdout.len(), "stderr_bytes": stderr.len(),
                "access_note": access_note,
            }),
            ActionResult::FileRead {
                path,
                host_path,
                bytes,
                ..
            } => {
                serde_json::json!({ "path": path, "host_path": host_path, "bytes": bytes })
            }
            other => serde_json::to_value(other).unwrap_or_default(),
        }
    }
}

fn keep_tail(s: &mut String, keep: usize) -> bool {
    if s.len() <= keep {
        return false;
    }
    let mut cut = s.len() - keep;
    while !s.is_char_boundary(cut) {
        cut += 1;
    }
    s.drain(..cut);
    true
}

/// How an executed action ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub succeeded: bool,
    pub result: Option<ActionResult>,
    /// Why it failed: never empty when `succeeded` is false.
    pub diagnostic: Option<String>,
}

impl Outcome {
    pub(crate) fn ok(result: ActionResult) -> Outcome {
        Outcome {
            succeeded: true,
            result: Some(result),
            diagnostic: None,
        }
    }

    pub(crate) fn failed(diagnostic: impl Into<String>, result: Option<ActionResult>) -> Outcome {
        let mut d: String = diagnostic.into();
        if d.trim().is_empty() {
            d = "failed with no diagnostic from the executor".into();
        }
        Outcome {
            succeeded: false,
            result,
            diagnostic: Some(d),
        }
    }
}

/// What `propose` made of a proposal. Every caller handles all three.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ProposeStatus {
    /// It ran (successfully or not: see the outcome).
    Executed { outcome: Outcome },
    /// It waits for a person (`berth approve ID`).
    Pending { reason: String },
    /// It will not run.
    Refused { reason: String },
}

impl ProposeStatus {
    pub fn name(&self) -> &'static str {
        match self {
            ProposeStatus::Executed { .. } => "executed",
            ProposeStatus::Pending { .. } => "pending",
            ProposeStatus::Refused { .. } => "refused",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proposed {
    pub id: String,
    pub status: ProposeStatus,
    pub decision: Decision,
    /// True when the idempotency key had been used: nothing new happened.
    pub replayed: bool,
}

/// A proposed action as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionRecord {
    pub id: String,
    pub idempotency_key: String,
    pub agent: String,
    pub project: String,
    pub task: Option<String>,
    pub action: Action,
    pub params: ActionParams,
    pub decision: Decision,
    pub created_status: CreatedStatus,
    pub status: ActionStatus,
    /// Why a host-side guard held an auto-approved action for a person.
    pub hold_reason: Option<String>,
    /// A file action: where its path leads on the host (its links followed
    /// within its mount), as found when it was proposed and again when a
    /// person approved it — what the person is shown; where it leads
    /// instead, and through which links, when that is out of its mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_path: Option<String>,
    pub proposer: Actor,
    pub decided_by: Option<String>,
    pub decided_at: Option<i64>,
    pub executor: Option<String>,
    pub result: Option<ActionResult>,
    pub diagnostic: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl ActionRecord {
    /// The status a caller sees.
    pub fn propose_status(&self) -> ProposeStatus {
        match self.status {
            ActionStatus::Executed | ActionStatus::Failed => ProposeStatus::Executed {
                outcome: Outcome {
                    succeeded: self.status == ActionStatus::Executed,
                    result: self.result.clone(),
                    diagnostic: self.diagnostic.clone(),
                },
            },
            ActionStatus::Pending => ProposeStatus::Pending {
                reason: self
                    .hold_reason
                    .clone()
                    .unwrap_or_else(|| self.decision.reason.clone()),
            },
            ActionStatus::Executing => ProposeStatus::Pending {
                reason: format!(
                    "executing in {}",
                    self.executor.as_deref().unwrap_or("another process")
                ),
            },
            ActionStatus::Refused => ProposeStatus::Refused {
                reason: self.decision.reason.clone(),
            },
            ActionStatus::Denied => ProposeStatus::Refused {
                reason: format!(
                    "denied by {}{}",
                    self.decided_by.as_deref().unwrap_or("a person"),
                    self.diagnostic
                        .as_deref()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default()
                ),
            },
            ActionStatus::Interrupted => ProposeStatus::Refused {
                reason: self
                    .diagnostic
                    .clone()
                    .unwrap_or_else(|| "interrupted; never re-run on its own".into()),
            },
        }
    }
}

const ACTION_COLUMNS: &str = "id, idempotency_key, agent, project, task_id, action, params, decision, \
     created_status, status, hold_reason, resolved_path, proposer_kind, proposer_id, decided_by, decided_at, executor, \
     result, diagnostic, created_at, updated_at";

fn json<T: serde::de::DeserializeOwned>(s: &str, what: &str) -> Result<T> {
    serde_json::from_str(s)
        .map_err(|e| EngineError::corrupt("reading an action", format!("{what}: {e}")))
}

fn from_row(r: &sqlx::sqlite::SqliteRow) -> Result<ActionRecord> {
    let op = "reading an action";
    let s =
        |c: &str| -> Result<String> { r.try_get::<String, _>(c).map_err(EngineError::store(op)) };
    let o = |c: &str| -> Result<Option<String>> {
        r.try_get::<Option<String>, _>(c)
            .map_err(EngineError::store(op))
    };
    let created = s("created_status")?;
    let status = s("status")?;
    let proposer_kind = s("proposer_kind")?;
    Ok(ActionRecord {
        id: s("id")?,
        idempotency_key: s("idempotency_key")?,
        agent: s("agent")?,
        project: s("project")?,
        task: o("task_id")?,
        action: json(&s("action")?, "action")?,
        params: json(&s("params")?, "params")?,
        decision: json(&s("decision")?, "decision")?,
        created_status: match created.as_str() {
            "auto_approved" => CreatedStatus::AutoApproved,
            "pending" => CreatedStatus::Pending,
            "denied" => CreatedStatus::Denied,
            other => {
                return Err(EngineError::corrupt(
                    op,
                    format!("created status `{other}`"),
                ));
            }
        },
        status: ActionStatus::parse(&status)
            .ok_or_else(|| EngineError::corrupt(op, format!("status `{status}`")))?,
        hold_reason: o("hold_reason")?,
        resolved_path: o("resolved_path")?,
        proposer: Actor {
            kind: match proposer_kind.as_str() {
                "agent" => ActorKind::Agent,
                "user" => ActorKind::User,
                _ => ActorKind::System,
            },
            id: s("proposer_id")?,
        },
        decided_by: o("decided_by")?,
        decided_at: r.try_get("decided_at").map_err(EngineError::store(op))?,
        executor: o("executor")?,
        result: o("result")?.map(|j| json(&j, "result")).transpose()?,
        diagnostic: o("diagnostic")?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
        updated_at: r.try_get("updated_at").map_err(EngineError::store(op))?,
    })
}

/// Which actions to list, oldest first.
#[derive(Debug, Clone, Default)]
pub struct ActionFilter {
    pub pending_only: bool,
    pub agent: Option<String>,
    pub task: Option<String>,
    /// Only actions after this one (its full id) in the listing's order:
    /// a cursor to page on with.
    pub after: Option<String>,
    /// At most this many (all when `None`).
    pub limit: Option<i64>,
}

/// What `approve` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Approved {
    pub id: String,
    pub outcome: Outcome,
    /// `--always`: what happened to each segment.
    pub rules: Vec<RuleChange>,
}

/// A sink for a terminal action's output as it arrives: bounded, so a slow
/// reader throttles the command ([`berth_sandbox::output_channel`]).
pub type OutputSink = berth_sandbox::OutputSink;

impl Engine {
    /// Proposes an action. See the module docs.
    pub async fn propose(&self, proposal: Proposal, sink: Option<OutputSink>) -> Result<Proposed> {
        let agent = self.agent(&proposal.agent).await?;
        if let Some(key) = &proposal.idempotency_key
            && let Some(existing) = self.action_by_key(key).await?
        {
            return replay(existing, &proposal);
        }
        let project = self.load_project(&agent.project).await?;
        let sandbox = self
            .sandbox_for(&agent, &project.config, needs_berth(&proposal.action))
            .await?;
        let autonomy = load_autonomy(self.store.pool(), &agent.name).await?;
        let default_frame = crate::berths::runner_frame(&project.config);
        let frame = sandbox
            .as_ref()
            .map(|s| s.frame().clone())
            .unwrap_or(default_frame);
        let cwd = proposal
            .params
            .cwd
            .clone()
            .unwrap_or_else(|| frame.project_root().to_string());
        let limits = project.config.limits(&project.config_path)?;
        let ctx = Context {
            frame: &frame,
            cwd: &cwd,
            autonomy: &autonomy,
            rules: &project.rules,
            protected_branches: &project.config.git.protected_branches,
            limits: &limits,
        };
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
             ON CONFLICT (idempotency_key) DO NOTHING",
        )
        .bind(&id)
        .bind(&key)
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
                .payload(serde_json::json!({
                    "status": created_status.as_str(),
                    "action": proposal.action,
                    "decision": decision,
                    "held": hold_reason,
                    "resolved_path": resolved_path,
                    "idempotency_key": key,
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

        let record = self.action(&id).await?;
        let status = match status {
            ActionStatus::Executing => {
                let outcome = self.run_and_finish(&record, &agent, sandbox, sink).await?;
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
        // Cheap refusal for the many when many approve at once; the claim
        // below is what decides.
        if record.status != ActionStatus::Pending {
            return Err(not_pending(&record));
        }
        let agent = self.agent(&record.agent).await?;
        // The berth first: an action that cannot run now stays pending.
        let project = self.load_project(&record.project).await?;
        let sandbox = self
            .sandbox_for(&agent, &project.config, needs_berth(&record.action))
            .await?;
        // Checked again now: the agent may have swapped a directory for a
        // link since it proposed (execution is confined anyway).
        let recheck = sandbox
            .as_ref()
            .and_then(|sb| FileRecheck::at_approval(sb.as_ref(), &record));
        if let Some(refusal) = recheck.as_ref().and_then(|r| r.refusal.clone()) {
            return self
                .refuse_at_approval(&record, user, refusal, recheck.and_then(|r| r.resolved))
                .await;
        }
        let resolved_now = recheck.and_then(|r| r.resolved);
        let rules = if always {
            permissions::rules_for(&record.decision)
        } else {
            Vec::new()
        };
        let now = now_ms();
        let op = "approving an action";
        let mut tx = self.store.write(op).await?;
        // The claim: one conditional update, so exactly one approver runs it.
        let claimed = sqlx::query(&format!(
            "UPDATE proposed_actions SET status = 'executing', decided_by = $1, decided_at = $2, executor = $3, \
             resolved_path = COALESCE($5, resolved_path), updated_at = $2 \
             WHERE id = $4 AND status = 'pending' RETURNING {ACTION_COLUMNS}"
        ))
        .bind(&user.id)
        .bind(now)
        .bind(crate::recovery::executor_id())
        .bind(&record.id)
        .bind(resolved_now.as_deref())
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let record = claimed_or_not_pending(&mut tx, claimed, &record.id, op).await?;
        emit(
            &mut tx,
            NewEvent::new(kind::ACTION_APPROVED, user)
                .project(&record.project)
                .agent(&record.agent)
                .task(record.task.as_deref())
                .action(&record.id)
                .payload(serde_json::json!({ "always": always, "rules": rules })),
        )
        .await?;
        if let (Some(task), true) = (&record.task, crate::gate::is_chain(record.action.kind())) {
            resume_agent(&mut tx, &agent.name, task).await?;
        }
        tx.commit()
            .await
            .map_err(EngineError::store("approving an action"))?;

        if always {
            let patterns: Vec<String> = rules.iter().filter_map(|r| r.pattern.clone()).collect();
            if !patterns.is_empty() {
                permissions::append_allow(&self.state.project_rules(&record.project), &patterns)?;
            }
        }
        let outcome = self.run_and_finish(&record, &agent, sandbox, sink).await?;
        Ok(Approved {
            id: record.id,
            outcome,
            rules,
        })
    }

    /// A pending file action whose path now leads out of its mount, found
    /// when `user` approved it: refused instead, with the reason naming the
    /// link and its target, recorded with an event; nothing runs. Fails
    /// like an approval of an action that is no longer pending when another
    /// process decided it first.
    async fn refuse_at_approval(
        &self,
        record: &ActionRecord,
        user: &Actor,
        refusal: Decision,
        resolved: Option<String>,
    ) -> Result<Approved> {
        let reason = refusal.reason.clone();
        let decision = crate::stored_decision::for_store(refusal);
        let now = now_ms();
        let op = "refusing an action at approval";
        let mut tx = self.store.write(op).await?;
        let refused = sqlx::query(&format!(
            "UPDATE proposed_actions SET status = 'refused', decision = $1, verdict = $2, stage = $3, \
             decided_by = $4, decided_at = $5, diagnostic = $6, resolved_path = COALESCE($7, resolved_path), \
             updated_at = $5 WHERE id = $8 AND status = 'pending' RETURNING {ACTION_COLUMNS}"
        ))
        .bind(to_json(&decision)?)
        .bind(decision.verdict.as_str())
        .bind(decision.stage.as_str())
        .bind(&user.id)
        .bind(now)
        .bind(&reason)
        .bind(resolved.as_deref())
        .bind(&record.id)
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
            return Err(EngineError::State(format!(
                "action {} is a {}: only berth's own effects are resumed after a crash",
                record.id,
                record.action.kind()
            )));
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
        let agent = self.agent(&record.agent).await?;
        // The berth first: an action that cannot run now stays pending.
        let project = self.load_project(&record.project).await?;
        let sandbox = self
            .sandbox_for(&agent, &project.config, needs_berth(&record.action))
            .await?;
        let now = now_ms();
        let op = "retrying an action";
        let mut tx = self.store.write(op).await?;
        let claimed = sqlx::query(&format!(
            "UPDATE proposed_actions SET status = 'executing', decided_by = $1, decided_at = $2, executor = $3, \
             diagnostic = NULL, updated_at = $2 WHERE id = $4 AND status = 'interrupted' RETURNING {ACTION_COLUMNS}"
        ))
        .bind(&user.id)
        .bind(now)
        .bind(crate::recovery::executor_id())
        .bind(&record.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let Some(claimed) = claimed else {
            let current = action_in_tx(&mut tx, &record.id, op).await?;
            return Err(EngineError::State(format!(
                "action {} is {}: only an interrupted action can be retried",
                current.id,
                current.status.as_str()
            )));
        };
        let claimed = from_row(&claimed)?;
        emit(
            &mut tx,
            NewEvent::new(kind::ACTION_APPROVED, user)
                .project(&record.project)
                .agent(&record.agent)
                .task(record.task.as_deref())
                .action(&record.id)
                .payload(payload),
        )
        .await?;
        if let Some(task) = &record.task {
            // A task of this agent blocked on this interruption goes back to work.
            let blocked: Option<String> = sqlx::query_scalar(
                "SELECT id FROM tasks WHERE id = $1 AND status = 'blocked' AND agent = $2",
            )
            .bind(task)
            .bind(&record.agent)
            .fetch_optional(&mut *tx)
            .await
            .map_err(EngineError::store(op))?;
            if blocked.is_some() {
                let mv = TaskMove::to(TaskStatus::InProgress).only_from(&[TaskStatus::Blocked]);
                let _ = transitions::task(&mut tx, task, mv, None).await?;
            }
        }
        tx.commit()
            .await
            .map_err(EngineError::store("retrying an action"))?;
        let record = claimed;
        let outcome = self.run_and_finish(&record, &agent, sandbox, sink).await?;
        Ok(Approved {
            id: record.id,
            outcome,
            rules: Vec::new(),
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

    /// An action by id or unique prefix.
    pub async fn action(&self, id: &str) -> Result<ActionRecord> {
        let full = if id.len() == 32 {
            id.to_string()
        } else {
            self.resolve_id("proposed_actions", "action", "berth actions", id)
                .await?
        };
        let row = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM proposed_actions WHERE id = $1"
        ))
        .bind(&full)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading an action"))?;
        match row {
            Some(row) => from_row(&row),
            None => Err(EngineError::UnknownId {
                what: "action",
                id: id.to_string(),
                list: "berth actions",
            }),
        }
    }

    pub async fn action_by_key(&self, key: &str) -> Result<Option<ActionRecord>> {
        let row = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM proposed_actions WHERE idempotency_key = $1"
        ))
        .bind(key)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading an action"))?;
        row.as_ref().map(from_row).transpose()
    }

    pub async fn actions(&self, filter: &ActionFilter) -> Result<Vec<ActionRecord>> {
        let rows = sqlx::query(&format!(
            "SELECT {ACTION_COLUMNS} FROM proposed_actions \
             WHERE ($1 = 0 OR status = 'pending') AND (CAST($2 AS TEXT) IS NULL OR agent = $2) \
               AND (CAST($3 AS TEXT) IS NULL OR task_id = $3) \
               AND (CAST($4 AS TEXT) IS NULL \
                    OR (created_at, id) > (SELECT created_at, id FROM proposed_actions WHERE id = $4)) \
             ORDER BY created_at, id LIMIT $5"
        ))
        .bind(i64::from(filter.pending_only))
        .bind(filter.agent.as_deref())
        .bind(filter.task.as_deref())
        .bind(filter.after.as_deref())
        .bind(filter.limit.unwrap_or(i64::MAX))
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing actions"))?;
        rows.iter().map(from_row).collect()
    }

    /// How many actions wait for a person.
    pub async fn pending_count(&self) -> Result<i64> {
        sqlx::query_scalar("SELECT COUNT(*) FROM proposed_actions WHERE status = 'pending'")
            .fetch_one(self.store.pool())
            .await
            .map_err(EngineError::store("counting pending actions"))
    }

    /// Executes a claimed (`executing`) action and records how it ended.
    async fn run_and_finish(
        &self,
        record: &ActionRecord,
        agent: &Agent,
        sandbox: Option<Arc<dyn Sandbox>>,
        sink: Option<OutputSink>,
    ) -> Result<Outcome> {
        let outcome = self.execute(record, agent, sandbox, sink).await;
        if let Err(e) = self.finish(record, &outcome).await {
            // It ran, and the store would not take how it ended (a full
            // disk): the action stays `executing` until `berth serve` or a
            // recovery marks it interrupted; the log keeps what happened.
            tracing::error!(
                action = %record.id,
                succeeded = outcome.succeeded,
                diagnostic = outcome.diagnostic.as_deref().unwrap_or(""),
                "the outcome of an action that ran could not be recorded: {e}"
            );
            return Err(e);
        }
        Ok(outcome)
    }

    /// Records the end of an executing action: `action.executed` or
    /// `action.failed`, and what follows for its task.
    pub(crate) async fn finish(&self, record: &ActionRecord, outcome: &Outcome) -> Result<()> {
        let status = if outcome.succeeded {
            ActionStatus::Executed
        } else {
            ActionStatus::Failed
        };
        let stored = outcome.result.as_ref().map(|r| r.for_store());
        let mut tx = self.store.write("recording an action's outcome").await?;
        let n = sqlx::query(
            "UPDATE proposed_actions SET status = $1, result = $2, diagnostic = $3, updated_at = $4 \
             WHERE id = $5 AND status = 'executing'",
        )
        .bind(status.as_str())
        .bind(stored.as_ref().map(to_json).transpose()?)
        .bind(outcome.diagnostic.as_deref())
        .bind(now_ms())
        .bind(&record.id)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("recording an action's outcome"))?
        .rows_affected();
        if n != 1 {
            // Recovery marked it interrupted while we ran (we were thought
            // dead): the log already says so; say what really happened too.
            tracing::warn!(action = %record.id, "outcome of an action no longer executing");
        }
        let event = if outcome.succeeded {
            kind::ACTION_EXECUTED
        } else {
            kind::ACTION_FAILED
        };
        let actor = Actor::system();
        emit(
            &mut tx,
            NewEvent::new(event, &actor)
                .project(&record.project)
                .agent(&record.agent)
                .task(record.task.as_deref())
                .action(&record.id)
                .payload(serde_json::json!({
                    "action_type": record.action.kind(),
                    "result": outcome.result.as_ref().map(ActionResult::summary),
                    "diagnostic": outcome.diagnostic,
                })),
        )
        .await?;
        let after = self.settle_in_tx(&mut tx, record, outcome).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("recording an action's outcome"))?;
        self.after_settle(after).await
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

/// The agent goes back to work on `task` (an action it waited on was approved).
/// Only an agent that waited on `task` moves; any other is left as it is.
async fn resume_agent(tx: &mut crate::store::Tx, agent: &str, task: &str) -> Result<()> {
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
async fn claimed_or_not_pending(
    tx: &mut crate::store::Tx,
    claimed: Option<sqlx::sqlite::SqliteRow>,
    id: &str,
    op: &'static str,
) -> Result<ActionRecord> {
    match claimed {
        Some(row) => from_row(&row),
        None => Err(not_pending(&action_in_tx(tx, id, op).await?)),
    }
}

/// An action read inside a write transaction (never from the pool while
/// the transaction holds the write gate).
async fn action_in_tx(
    tx: &mut crate::store::Tx,
    id: &str,
    op: &'static str,
) -> Result<ActionRecord> {
    let row = sqlx::query(&format!(
        "SELECT {ACTION_COLUMNS} FROM proposed_actions WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(&mut **tx)
    .await
    .map_err(EngineError::store(op))?;
    match row {
        Some(row) => from_row(&row),
        None => Err(EngineError::UnknownId {
            what: "action",
            id: id.to_string(),
            list: "berth actions",
        }),
    }
}

/// The answer to a second approver (or denier): where the action stands
/// now, and who decided it.
/// A pending file action checked again when a person approves it.
struct FileRecheck {
    /// The decision as a refusal, when its path now leads out of its mount.
    refusal: Option<Decision>,
    /// Where its path leads on the host now.
    resolved: Option<String>,
}

impl FileRecheck {
    /// `None` for an action that is not a file action.
    fn at_approval(sandbox: &dyn Sandbox, record: &ActionRecord) -> Option<FileRecheck> {
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

fn not_pending(current: &ActionRecord) -> EngineError {
    let by = match (current.status, current.decided_by.as_deref()) {
        (ActionStatus::Executing | ActionStatus::Executed | ActionStatus::Failed, Some(who)) => {
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

fn needs_berth(action: &Action) -> bool {
    matches!(
        action,
        Action::Terminal { .. } | Action::FileRead { .. } | Action::FileWrite { .. }
    )
}

fn to_json<T: Serialize>(v: &T) -> Result<String> {
    serde_json::to_string(v).map_err(|e| EngineError::corrupt("encoding a value for the store", e))
}

/// The answer to a proposal whose idempotency key was used before.
fn replay(existing: ActionRecord, proposal: &Proposal) -> Result<Proposed> {
    if existing.agent != proposal.agent || existing.action != proposal.action {
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

/// berth's own effects in the delivery chain: it can tell whether each
/// happened, so a crash never leaves them for a person.
fn is_own_delivery_effect(action: &berth_policy::Action) -> bool {
    matches!(
        action,
        berth_policy::Action::GitCommit
            | berth_policy::Action::GitPush { .. }
            | berth_policy::Action::PrOpen
    )
}
