//! Workers on several hosts (`berth serve --worker NAME`): state
//! directories of their own, one shared store and one forge server.
//!
//! A worker's name is the owner of every agent lease it takes
//! (`agent_lease.rs`) and a label on every container it creates, so that
//! another worker can tell whose containers an agent left behind. What a
//! worker needs on its host it makes from the shared parts:
//!
//! - **projects** ([`Engine::join_server_projects`]): a project of the
//!   store whose forge is a git server, and which this state directory does
//!   not hold, gets a local mirror of that server and the default project
//!   files (`berth.toml`, `permissions.json`; a host that wants others
//!   copies its own);
//! - **berths**: the agents' worktrees are provisioned from the mirror as
//!   on any host, by the same `up` the agent's loop calls each pass; a task
//!   branch that reached the forge is where the new worktree starts.
//!
//! # Taking an agent over
//!
//! When a worker takes the lease of an agent whose previous holder's lease
//! ran out (a worker that died) or was given up, it first
//! ([`Engine::take_over_agent`]):
//!
//! 1. marks the actions that a dead executor left `executing` interrupted
//!    ([`Engine::recover`]: on this host by the process's pid; on another
//!    host, the agent's own delivery steps, since that host's driver lost
//!    the lease), each resumed once by the delivery chain, which finds its
//!    effect when it happened;
//! 2. removes the previous worker's containers for the agent, found on this
//!    host's container engine by their labels (`berth.agent`,
//!    `berth.worker`) — a worker on another engine cannot reach them, which
//!    the takeover says;
//! 3. compares what the store says was done with what the forge holds: a
//!    commit that was made on the dead worker's host and never pushed did
//!    not survive. The task's delivery starts again in a new round
//!    (`task.delivery_restarted`), whose steps have idempotency keys of their
//!    own (`task:<id>:r<round>:<step>`), so the work is committed, pushed
//!    and opened as a PR once more, and the lost commit is named (a push
//!    of it still waiting for a person is cancelled: the new round asks
//!    again);
//! 4. records `agent.taken_over`: who had it, the fencing token, the
//!    containers removed, the branch tip and saved work the forge holds for
//!    it (what survived), what did not, and the actions a person approved
//!    that had not run (`approvals`): the agent's first pass here runs them
//!    under the new lease (`actions/route.rs`), so an approval outlives a
//!    `kill -9` of the worker that was to run it.
//!
//! Before step 1 the takeover raises the agent's fencing token at the
//! forge (`fence.rs` in berth-worktrees): the forge refuses from then on a
//! push carrying the previous holder's token, and a push of the previous
//! holder's that got past the forge's check before the raise has landed by
//! the time the raise returns, so step 3 reads all it wrote. A forge server
//! without berth's fence hook fails the raise, and with it the takeover.
//!
//! Every effect after that carries the lease (the `AgentIo` fencing check,
//! as for servers sharing one state directory; each push carries the token
//! to the forge), and the forge's ref compare-and-swap refuses a push from
//! a stale holder whose idea of the branch is older than the new holder's
//! (`forge_remote.rs`).

use serde::Serialize;
use sqlx::Row;

use crate::Engine;
use crate::actions::{ActionResult, ActionStatus};
use crate::agent_lease::AgentLease;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};

/// What a takeover found and did (the `agent.taken_over` payload).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Takeover {
    /// The holder the lease was taken from.
    pub previous_owner: String,
    /// The new lease's fencing token.
    pub token: i64,
    /// The previous worker's containers for the agent, removed.
    pub containers_removed: Vec<String>,
    /// Why the previous worker's containers could not be looked for (no
    /// container engine here, or it failed).
    pub containers_unreachable: Option<String>,
    /// Actions a dead executor left running, now marked interrupted.
    pub interrupted: Vec<String>,
    /// Actions of the agent a person approved that had not run (status
    /// `approved`, `actions/route.rs`): this worker runs them under its
    /// lease, in the agent's first pass.
    pub approvals: Vec<String>,
    /// The agent's task, if it had one.
    pub task: Option<String>,
    /// The task branch's tip on the forge (what survived of its work).
    pub forge_tip: Option<String>,
    /// The agent's saved work on the forge (`refs/berth/saved/<agent>/…`).
    pub saved: Vec<String>,
    /// What did not survive, one line each.
    pub lost: Vec<String>,
    /// The delivery round the task goes on in (0: the first).
    pub round: i64,
}

/// A worker's name: 1 to 64 ASCII letters, digits, `-`, `_` or `.`.
fn check_worker_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(EngineError::Invalid {
            what: "worker name",
            value: name.to_string(),
            why: "use 1 to 64 ASCII letters, digits, `-`, `_` or `.`".to_string(),
        })
    }
}

impl Engine {
    /// Makes this process the worker `name` (once; a second call with
    /// another name is refused).
    pub fn set_worker(&self, name: &str) -> Result<()> {
        check_worker_name(name)?;
        let set = self.worker.get_or_init(|| name.to_string());
        if set != name {
            return Err(EngineError::Invalid {
                what: "worker name",
                value: name.to_string(),
                why: format!("this process is already the worker {set}"),
            });
        }
        Ok(())
    }

    /// The worker this process is, if it is one.
    pub fn worker(&self) -> Option<&str> {
        self.worker.get().map(String::as_str)
    }

    /// Mirrors every project of the store whose forge is a git server and
    /// which this state directory does not hold yet, and writes its default
    /// project files: what a worker on a new host needs before it can bring
    /// an agent of that project up. Returns the projects joined.
    pub async fn join_server_projects(&self) -> Result<Vec<String>> {
        let mut joined = Vec::new();
        for p in self.projects().await? {
            if !berth_worktrees::Forge::names_a_server(&p.source) || self.git().has_forge(&p.name) {
                continue;
            }
            let imported = self
                .git()
                .import_project_from_server(&p.name, &p.source, Some(&p.base_branch))
                .await?;
            self.write_project_files(&p.name, &imported.co_author)?;
            tracing::info!(project = %p.name, url = %p.source, "joined a project from its forge server");
            joined.push(p.name);
        }
        Ok(joined)
    }

    /// Whether this host can bring up berths of `project`: its state
    /// directory holds the project's forge or a mirror of it. A worker
    /// leaves the agents of a project it cannot reach to the others.
    pub fn holds_forge(&self, project: &str) -> bool {
        self.git().has_forge(project)
    }

    /// The delivery round of `task`: how many times its delivery started
    /// again after a takeover lost its commit (0: never).
    pub async fn delivery_round(&self, task: &str) -> Result<i64> {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM session_events WHERE type = $1 AND task_id = $2",
        )
        .bind(kind::TASK_DELIVERY_RESTARTED)
        .bind(task)
        .fetch_one(self.store.pool())
        .await
        .map_err(EngineError::store("reading a task's delivery round"))?;
        row.try_get::<i64, _>("n")
            .map_err(EngineError::store("reading a task's delivery round"))
    }

    /// Takes `lease.agent` over from `lease.taken_from` (see the module
    /// documentation); call right after [`take_agent_lease`]
    /// (Engine::take_agent_lease) returned a lease that changed hands.
    pub async fn take_over_agent(&self, lease: &AgentLease) -> Result<Takeover> {
        self.check_agent_lease(lease).await?;
        let previous = lease.taken_from.clone().unwrap_or_default();
        let a = self.agent(&crate::AgentName::new(&lease.agent)?).await?;
        // Before anything is read at the forge: from here on it refuses a
        // push of the previous holder's (a lower token), so what is read
        // below is all a stale holder ever wrote.
        self.git()
            .raise_fence(&a.project, &a.name, lease.token)
            .await?;
        let mut t = Takeover {
            previous_owner: previous.clone(),
            token: lease.token,
            task: a.task.clone(),
            ..Takeover::default()
        };
        // Dead executors on this host, and the agent's own delivery steps
        // an executor on another host left running: the lease ran out, so
        // that host's driver is gone (or fenced) and cannot record them.
        t.interrupted = self
            .recover_matching(|executor, r| {
                crate::recovery::executor_is_dead(executor)
                    || (r.agent == a.name
                        && crate::actions::decide::is_own_delivery_effect(&r.action)
                        && crate::recovery::executor_elsewhere(executor))
            })
            .await?;
        match self
            .provider
            .remove_worker_berths(&a.project, &a.name, &previous)
            .await
        {
            Ok(removed) => t.containers_removed = removed,
            Err(e) => t.containers_unreachable = Some(e.to_string()),
        }
        let project = self.project(&a.project).await?;
        // What the forge holds now, saved work included.
        self.git().refresh_forge(&a.project).await?;
        let saved_prefix = format!("refs/berth/saved/{}/", a.name);
        t.saved = self
            .git()
            .saved(&a.project)
            .await?
            .into_iter()
            .filter(|(r, _)| r.starts_with(&saved_prefix))
            .map(|(r, oid)| format!("{r} {oid}"))
            .collect();
        let mut restart = None;
        if let Some(task) = &a.task {
            t.round = self.delivery_round(task).await?;
            let branch = a
                .branch
                .clone()
                .unwrap_or_else(|| crate::agents::branch_for(&a.name, Some(task)));
            t.forge_tip = self.git().forge_head(&project, &branch).await?;
            let key = |step: &str| crate::agent_io::step_key_in(task, t.round, step);
            let commit = self.action_by_key(&key("git_commit")).await?;
            let push = self.action_by_key(&key("git_push")).await?;
            let pushed = push
                .as_ref()
                .is_some_and(|p| p.status == ActionStatus::Executed);
            if let Some(c) = commit.filter(|c| c.status == ActionStatus::Executed)
                && let Some(ActionResult::GitCommit { commit: oid, .. }) = &c.result
                && !pushed
                && !self.git().forge_has(&project, &branch, oid).await?
            {
                t.lost.push(format!(
                    "commit {oid} of task {task} (action {}), made on {previous} and never pushed: \
                     the task's delivery starts again",
                    crate::ids::short(&c.id)
                ));
                // A push of the lost commit still waiting for a person (or
                // approved and not run) would push the new round's work
                // under the old round's action: it is cancelled, and the
                // new round asks again.
                let waiting = push
                    .filter(|p| matches!(p.status, ActionStatus::Pending | ActionStatus::Approved))
                    .map(|p| p.id);
                restart = Some((task.clone(), oid.clone(), waiting));
            }
        }
        t.lost.push(format!(
            "whatever {previous} had not committed and pushed or saved to the forge"
        ));
        let cancelled_push = restart.as_ref().and_then(|(_, _, p)| p.clone());
        t.approvals = self
            .routed_approvals(&a.name)
            .await?
            .into_iter()
            .filter(|id| Some(id) != cancelled_push.as_ref())
            .collect();
        let mut tx = self.store.write("taking an agent over").await?;
        // The push's row first, the events after: the event log's lock is
        // taken last, as by every write (on PostgreSQL's narrow locks, the
        // other order could meet another writer's in a deadlock).
        let why = format!(
            "the commit it would push was lost with {previous}; the task's delivery starts again"
        );
        let mut cancelled_now = None;
        if let Some((_, _, Some(push))) = &restart {
            // Cancelled, not denied: a denial returns the task, and the
            // task goes on in the new round.
            let now = crate::ids::now_ms();
            let cancelled = sqlx::query(
                "UPDATE proposed_actions SET status = 'cancelled', decided_by = $1, \
                 decided_at = $2, diagnostic = $3, updated_at = $2 \
                 WHERE id = $4 AND status IN ('pending', 'approved')",
            )
            .bind(&Actor::system().id)
            .bind(now)
            .bind(&why)
            .bind(push)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("taking an agent over"))?
            .rows_affected();
            if cancelled == 1 {
                cancelled_now = Some(push);
            }
        }
        if let Some((task, oid, _)) = &restart {
            t.round += 1;
            emit(
                &mut tx,
                NewEvent::new(kind::TASK_DELIVERY_RESTARTED, &Actor::system())
                    .project(&a.project)
                    .agent(&a.name)
                    .task(Some(task))
                    .payload(serde_json::json!({
                        "round": t.round,
                        "lost_commit": oid,
                        "previous_owner": previous,
                    })),
            )
            .await?;
        }
        emit(
            &mut tx,
            NewEvent::new(kind::AGENT_TAKEN_OVER, &Actor::system())
                .project(&a.project)
                .agent(&a.name)
                .task(a.task.as_deref())
                .payload(serde_json::to_value(&t).map_err(|e| EngineError::Invalid {
                    what: "takeover record",
                    value: a.name.clone(),
                    why: e.to_string(),
                })?),
        )
        .await?;
        if let Some(push) = cancelled_now {
            emit(
                &mut tx,
                NewEvent::new(kind::ACTION_CANCELLED, &Actor::system())
                    .project(&a.project)
                    .agent(&a.name)
                    .task(a.task.as_deref())
                    .action(push)
                    .payload(serde_json::json!({
                        "action_type": "git_push",
                        "cancelled_by": Actor::system().id,
                        "result": null,
                        "diagnostic": why,
                    })),
            )
            .await?;
        }
        tx.commit()
            .await
            .map_err(EngineError::store("taking an agent over"))?;
        tracing::info!(agent = %a.name, previous = %previous, token = lease.token, lost = t.lost.len(), "agent taken over");
        Ok(t)
    }
}
