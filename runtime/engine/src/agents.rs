//! Agents: their durable implementation, their autonomy, their loop state.
//!
//! ADR 0018: `impl` is durable, so a noop agent never comes back as a real
//! one (which would spend tokens nobody asked for) — and anything that is not
//! `noop` reads as `real`, the safe default. Activation seeds `auto_approve`
//! for the git delivery chain and `file_read`, never for `git_merge`.
//! ADR 0167: auto mode is the wildcard `*` resolved to `auto_approve`; the
//! switch writes or overwrites exactly that wildcard.

use std::path::PathBuf;

use berth_policy::{Approval, Autonomy};
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::config::BerthMode;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;
use crate::store::{StoreLock, Tx};
pub use crate::transitions::AgentStatus;
use crate::{AgentName, Engine, ProjectName};

/// Which loop drives an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentImpl {
    /// Driven by a model (through `berth mcp`, the API, …).
    Real,
    /// The built-in agent that needs no model.
    Noop,
    /// An agent CLI berth starts for each delivered prompt (`command.rs`).
    Command,
}

impl AgentImpl {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentImpl::Real => "real",
            AgentImpl::Noop => "noop",
            AgentImpl::Command => "command",
        }
    }

    /// Anything but `noop` or `command` is `real` (ADR 0018: production
    /// is the safe default).
    pub fn from_stored(s: &str) -> AgentImpl {
        match s {
            "noop" => AgentImpl::Noop,
            "command" => AgentImpl::Command,
            _ => AgentImpl::Real,
        }
    }
}

/// An agent as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Agent {
    pub name: String,
    pub project: String,
    #[serde(rename = "impl")]
    pub implementation: AgentImpl,
    pub status: AgentStatus,
    pub task: Option<String>,
    /// The berth's mode while it is up.
    pub berth: Option<BerthMode>,
    pub worktree: Option<PathBuf>,
    pub branch: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Agent {
    /// Its name and its project's, typed. Both were parsed when it was
    /// activated; one that no longer parses is a corrupt row.
    pub fn names(&self) -> Result<(AgentName, ProjectName)> {
        Ok((
            AgentName::new(self.name.as_str())?,
            ProjectName::new(self.project.as_str())?,
        ))
    }

    /// The git identity of its commits.
    pub fn identity(&self) -> String {
        identity(&self.name)
    }
}

/// `<agent>[bot]`.
pub fn identity(agent: &str) -> String {
    format!("{agent}[bot]")
}

/// The action types activation seeds with `auto_approve` (ADR 0018). Never
/// `git_merge`: a merge is a person's call.
pub const ACTIVATION_SEEDS: [&str; 6] = [
    "git_commit",
    "git_push",
    "pr_open",
    "pr_comment",
    "pr_resolve_thread",
    "file_read",
];

pub(crate) const AGENT_COLUMNS: &str =
    "name, project, impl, status, task_id, berth_mode, worktree, branch, created_at, updated_at";

/// What a proposal reads of its agent before it decides
/// ([`Engine::agent_for_proposal`]).
#[derive(Debug)]
pub(crate) struct ProposingAgent {
    pub(crate) agent: Agent,
    /// Its project is not removed.
    pub(crate) project_live: bool,
    pub(crate) autonomy: Autonomy,
    /// An action holds the proposal's idempotency key: the proposal is a
    /// replay, answered from that action.
    pub(crate) key_held: bool,
}

/// The agent, or [`EngineError::AgentRemoved`] when `berth agent rm`
/// removed it.
fn not_removed(a: Agent) -> Result<Agent> {
    if a.status == AgentStatus::Removed {
        return Err(EngineError::AgentRemoved {
            agent: a.name,
            project: a.project,
        });
    }
    Ok(a)
}

pub(crate) fn agent_from_row(r: &sqlx::any::AnyRow) -> Result<Agent> {
    let op = "reading an agent";
    let s =
        |c: &str| -> Result<String> { r.try_get::<String, _>(c).map_err(EngineError::store(op)) };
    let o = |c: &str| -> Result<Option<String>> {
        r.try_get::<Option<String>, _>(c)
            .map_err(EngineError::store(op))
    };
    let berth = match o("berth_mode")? {
        None => None,
        Some(m) => Some(
            BerthMode::parse(&m)
                .ok_or_else(|| EngineError::corrupt(op, format!("berth mode `{m}`")))?,
        ),
    };
    Ok(Agent {
        name: s("name")?,
        project: s("project")?,
        implementation: AgentImpl::from_stored(&s("impl")?),
        status: AgentStatus::parse(&s("status")?)?,
        task: o("task_id")?,
        berth,
        worktree: o("worktree")?.map(PathBuf::from),
        branch: o("branch")?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
        updated_at: r.try_get("updated_at").map_err(EngineError::store(op))?,
    })
}

/// What auto mode lifts for an agent, and what still asks (ADR 0167 D5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AutonomyReport {
    pub agent: String,
    /// Every written mode, by action type (`*` included).
    pub modes: Vec<(String, Approval)>,
    /// The mode and origin each known action type resolves to.
    pub resolved: Vec<(String, berth_policy::Resolved)>,
    pub auto_mode: bool,
    /// What the switch lifts, when on.
    pub lifts: Vec<String>,
    /// What still asks (or is denied) in any mode.
    pub still_asks: Vec<String>,
    /// On a runner berth: that auto mode lifts the path scope on this
    /// machine, and what the runner's confinement still holds.
    pub runner_host: Option<String>,
}

impl Engine {
    /// Creates the agent (or updates its implementation) in `project`, and
    /// seeds `auto_approve` for the delivery chain and `file_read` where no
    /// mode is written yet.
    pub async fn activate_agent(
        &self,
        name: &AgentName,
        project: &ProjectName,
        implementation: AgentImpl,
        actor: &Actor,
    ) -> Result<Agent> {
        self.project(project).await?;
        let now = now_ms();
        let mut tx = self.store.write("activating an agent").await?;
        // The agent's row is read and then inserted or changed; it may not
        // exist yet to lock.
        tx.lock(StoreLock::Agent(name.as_str())).await?;
        let existing = sqlx::query_as::<_, (String, String)>(
            "SELECT project, status FROM agents WHERE name = $1",
        )
        .bind(name.as_str())
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store("activating an agent"))?;
        let revived = existing
            .as_ref()
            .is_some_and(|(_, s)| s == AgentStatus::Removed.as_str());
        match existing.map(|(p, _)| p) {
            // A removed agent is revived, idle, in the project asked for:
            // its berth, repository, uid and autonomy went with it, so it
            // starts as a new one would (its history keeps its old actions).
            Some(_) if revived => {
                let _ = crate::transitions::agent(
                    &mut tx,
                    name,
                    crate::transitions::AgentMove::revive(),
                )
                .await?;
                sqlx::query(
                    "UPDATE agents SET project = $1, impl = $2, created_at = $3, updated_at = $3 WHERE name = $4",
                )
                .bind(project.as_str())
                .bind(implementation.as_str())
                .bind(now)
                .bind(name.as_str())
                .execute(&mut *tx)
                .await
                .map_err(EngineError::store("activating an agent"))?;
            }
            Some(p) if p != project.as_str() => {
                return Err(EngineError::WrongProject {
                    agent: name.to_string(),
                    actual: p,
                    requested: project.to_string(),
                });
            }
            Some(_) => {
                sqlx::query("UPDATE agents SET impl = $1, updated_at = $2 WHERE name = $3")
                    .bind(implementation.as_str())
                    .bind(now)
                    .bind(name.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(EngineError::store("activating an agent"))?;
            }
            None => {
                sqlx::query(
                    "INSERT INTO agents (name, project, impl, status, created_at, updated_at) \
                     VALUES ($1, $2, $3, 'idle', $4, $4)",
                )
                .bind(name.as_str())
                .bind(project.as_str())
                .bind(implementation.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(EngineError::store("activating an agent"))?;
            }
        }
        let mut seeded = Vec::new();
        for kind in ACTIVATION_SEEDS {
            let n = sqlx::query(
                "INSERT INTO autonomy (agent, action_type, mode, updated_at) VALUES ($1, $2, 'auto_approve', $3) \
                 ON CONFLICT (agent, action_type) DO NOTHING",
            )
            .bind(name.as_str())
            .bind(kind)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("seeding autonomy"))?
            .rows_affected();
            if n > 0 {
                seeded.push(kind);
            }
        }
        emit(
            &mut tx,
            NewEvent::new(kind::AGENT_ACTIVATED, actor)
                .project(project)
                .agent(name)
                .payload(serde_json::json!({
                    "impl": implementation.as_str(),
                    "identity": identity(name),
                    "seeded": seeded,
                    "revived": revived,
                })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("activating an agent"))?;
        self.agent(name).await
    }

    /// The agent; [`EngineError::AgentRemoved`] for one `berth agent rm`
    /// removed, so nothing acts as it until it is activated again.
    pub async fn agent(&self, name: &str) -> Result<Agent> {
        not_removed(self.agent_record(name).await?)
    }

    /// [`Engine::agent`], and in the same read whether its project is live
    /// (not removed), the agent's autonomy, and whether an action already
    /// holds the proposal's idempotency `key`: what a proposal needs before
    /// it decides, where each read is a round trip to a store connection's
    /// worker.
    pub(crate) async fn agent_for_proposal(
        &self,
        name: &str,
        key: Option<&str>,
    ) -> Result<ProposingAgent> {
        // The agent's row once per autonomy row (or once, with none): one
        // read and one connection, where the agent, its autonomy and the
        // key took three. A key names the action that holds it, or the
        // keyless action whose id it is (`action_by_key`).
        let rows = sqlx::query(&format!(
            "SELECT a.*, u.action_type AS autonomy_type, u.mode AS autonomy_mode FROM \
             (SELECT {AGENT_COLUMNS}, (SELECT COUNT(*) FROM projects p \
              WHERE p.name = agents.project AND p.removed_at IS NULL) AS project_live, \
              (SELECT COUNT(*) FROM proposed_actions k WHERE CAST($2 AS TEXT) IS NOT NULL \
              AND (k.idempotency_key = $2 OR (k.idempotency_key IS NULL AND k.id = $2))) AS key_held \
              FROM agents WHERE name = $1) a \
             LEFT JOIN autonomy u ON u.agent = a.name"
        ))
        .bind(name)
        .bind(key)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("reading an agent"))?;
        let Some(first) = rows.first() else {
            return Err(EngineError::UnknownAgent(name.to_string()));
        };
        let agent = not_removed(agent_from_row(first)?)?;
        let live: i64 = first
            .try_get("project_live")
            .map_err(EngineError::store("reading an agent"))?;
        let key_held: i64 = first
            .try_get("key_held")
            .map_err(EngineError::store("reading an agent"))?;
        let mut autonomy = Autonomy::new();
        for r in &rows {
            let kind: Option<String> = r
                .try_get("autonomy_type")
                .map_err(EngineError::store("reading autonomy"))?;
            let mode: Option<String> = r
                .try_get("autonomy_mode")
                .map_err(EngineError::store("reading autonomy"))?;
            if let (Some(kind), Some(mode)) = (kind, mode) {
                set_mode(&mut autonomy, &kind, &mode);
            }
        }
        Ok(ProposingAgent {
            agent,
            project_live: live > 0,
            autonomy,
            key_held: key_held > 0,
        })
    }

    /// The agent's row whatever its status, a removed one included.
    pub(crate) async fn agent_record(&self, name: &str) -> Result<Agent> {
        let row = sqlx::query(&format!(
            "SELECT {AGENT_COLUMNS} FROM agents WHERE name = $1"
        ))
        .bind(name)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading an agent"))?;
        row.as_ref()
            .map(agent_from_row)
            .transpose()?
            .ok_or_else(|| EngineError::UnknownAgent(name.to_string()))
    }

    /// Every agent but the removed ones.
    pub async fn agents(&self) -> Result<Vec<Agent>> {
        let rows = sqlx::query(&format!(
            "SELECT {AGENT_COLUMNS} FROM agents WHERE status <> 'removed' ORDER BY project, name"
        ))
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing agents"))?;
        rows.iter().map(agent_from_row).collect()
    }

    /// The agent's autonomy map, as written.
    pub async fn autonomy(&self, agent: &str) -> Result<Autonomy> {
        self.agent(agent).await?;
        load_autonomy(self.store.pool(), agent).await
    }

    /// Writes one mode for an action type or `*`.
    pub async fn set_autonomy(
        &self,
        agent: &str,
        action_type: &str,
        mode: Approval,
        actor: &Actor,
    ) -> Result<()> {
        let a = self.agent(agent).await?;
        if action_type != berth_policy::autonomy::WILDCARD
            && !berth_policy::Action::KNOWN_KINDS.contains(&action_type)
        {
            return Err(EngineError::Invalid {
                what: "action type",
                value: action_type.to_string(),
                why: format!(
                    "use `*` or one of: {}",
                    berth_policy::Action::KNOWN_KINDS.join(", ")
                ),
            });
        }
        if action_type == berth_policy::autonomy::WILDCARD && mode == Approval::AutoApprove {
            // Auto mode: refused on an unconfined runner berth.
            self.gate_auto_mode(&a).await?;
        }
        let mut tx = self.store.write("setting autonomy").await?;
        write_mode(&mut tx, agent, action_type, mode).await?;
        emit(
            &mut tx,
            NewEvent::new(kind::AGENT_AUTONOMY, actor)
                .project(&a.project)
                .agent(agent)
                .payload(serde_json::json!({ "action_type": action_type, "mode": mode })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("setting autonomy"))
    }

    /// Removes the mode written for an action type or `*`, so it resolves as
    /// if never set (`agent.autonomy_set` with `mode` null). Returns whether
    /// a row was there.
    pub async fn unset_autonomy(
        &self,
        agent: &str,
        action_type: &str,
        actor: &Actor,
    ) -> Result<bool> {
        let a = self.agent(agent).await?;
        let mut tx = self.store.write("unsetting autonomy").await?;
        let removed = sqlx::query("DELETE FROM autonomy WHERE agent = $1 AND action_type = $2")
            .bind(agent)
            .bind(action_type)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("unsetting autonomy"))?
            .rows_affected()
            > 0;
        if removed {
            emit(
                &mut tx,
                NewEvent::new(kind::AGENT_AUTONOMY, actor)
                    .project(&a.project)
                    .agent(agent)
                    .payload(serde_json::json!({ "action_type": action_type, "mode": null })),
            )
            .await?;
        }
        tx.commit()
            .await
            .map_err(EngineError::store("unsetting autonomy"))?;
        Ok(removed)
    }

    /// The auto-mode switch: writes or overwrites the wildcard — `auto_approve`
    /// on, `require_approval` off (ADR 0167: off restores the scope limit).
    pub async fn set_auto_mode(&self, agent: &str, on: bool, actor: &Actor) -> Result<()> {
        let mode = if on {
            Approval::AutoApprove
        } else {
            Approval::RequireApproval
        };
        self.set_autonomy(agent, berth_policy::autonomy::WILDCARD, mode, actor)
            .await
    }

    /// What auto mode lifts for this agent and what still asks.
    pub async fn autonomy_report(&self, agent: &str) -> Result<AutonomyReport> {
        let a = self.agent(agent).await?;
        let autonomy = load_autonomy(self.store.pool(), agent).await?;
        let (config, rules) = self.load_project_files(&a.project)?;
        let wildcard = autonomy.resolve(berth_policy::autonomy::WILDCARD);
        let auto_mode = wildcard.is_auto_mode();
        let lifts = if auto_mode {
            vec![
                "the path scope limit: terminal commands and file writes may name paths outside the project without asking".into(),
                "the partial allow: a compound command with some segments allowed by permissions.json and others unmatched no longer asks".into(),
            ]
        } else {
            Vec::new()
        };
        let mut still = vec![
            "deny rules of permissions.json and the built-in deny templates (rm -rf /, mkfs, fork bombs, …): denied".to_string(),
            "privileged or external-effect commands (git push, PRs, publish, deploy, sudo, …) in a terminal: always ask".into(),
            "never-auto action types: git_merge into a protected branch, instruction_patch, parallelize, raise_max_parallel, container_remove".into(),
            "opaque commands berth cannot see into (a command from a variable, eval of a variable, a script from stdin, …)".into(),
        ];
        let asks: Vec<&str> = rules
            .commands
            .iter()
            .filter(|r| r.list == berth_policy::RuleList::Ask)
            .map(|r| r.pattern.raw.as_str())
            .collect();
        if !asks.is_empty() {
            still.push(format!(
                "ask rules written in permissions.json: {}",
                asks.join(", ")
            ));
        }
        if !config.policy.privileged.is_empty() {
            still.push(format!(
                "the project's extra privileged patterns: {}",
                config.policy.privileged.join(", ")
            ));
        }
        for (kind, mode) in autonomy.iter() {
            if kind != berth_policy::autonomy::WILDCARD && mode != Approval::AutoApprove {
                still.push(format!(
                    "{kind}: a specific `{}` rule, which the wildcard does not override",
                    mode.as_str()
                ));
            }
        }
        Ok(AutonomyReport {
            agent: agent.to_string(),
            modes: autonomy.iter().map(|(k, m)| (k.to_string(), m)).collect(),
            resolved: berth_policy::Action::KNOWN_KINDS
                .iter()
                .map(|k| (k.to_string(), autonomy.resolve(k)))
                .collect(),
            auto_mode,
            lifts,
            still_asks: still,
            runner_host: self.runner_host_note(&a, &config),
        })
    }
}

pub(crate) async fn load_autonomy(pool: &crate::store::StorePool, agent: &str) -> Result<Autonomy> {
    let rows = sqlx::query("SELECT action_type, mode FROM autonomy WHERE agent = $1")
        .bind(agent)
        .fetch_all(pool)
        .await
        .map_err(EngineError::store("reading autonomy"))?;
    let mut a = Autonomy::new();
    for r in rows {
        let kind: String = r
            .try_get("action_type")
            .map_err(EngineError::store("reading autonomy"))?;
        let mode: String = r
            .try_get("mode")
            .map_err(EngineError::store("reading autonomy"))?;
        set_mode(&mut a, &kind, &mode);
    }
    Ok(a)
}

/// One stored autonomy row into `autonomy`: a mode berth cannot read is
/// the strictest one (fail closed).
fn set_mode(autonomy: &mut Autonomy, kind: &str, mode: &str) {
    autonomy.set(kind, Approval::parse(mode).unwrap_or(Approval::Deny));
}

async fn write_mode(tx: &mut Tx, agent: &str, action_type: &str, mode: Approval) -> Result<()> {
    sqlx::query(
        "INSERT INTO autonomy (agent, action_type, mode, updated_at) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (agent, action_type) DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at",
    )
    .bind(agent)
    .bind(action_type)
    .bind(mode.as_str())
    .bind(now_ms())
    .execute(&mut **tx)
    .await
    .map_err(EngineError::store("setting autonomy"))?;
    Ok(())
}

/// `agent/<agent>/<task id, 8 digits>`, or `agent/<agent>/scratch` with no task.
pub fn branch_for(agent: &str, task: Option<&str>) -> String {
    match task {
        Some(t) => format!("agent/{agent}/{}", crate::ids::short(t)),
        None => format!("agent/{agent}/scratch"),
    }
}
