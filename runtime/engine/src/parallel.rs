//! Growing a project's team, always by a person's decision (ADR 0018, D4):
//! `parallelize` (a second agent beside one that has more work than it can
//! claim), `raise_max_parallel` (the project's limit) and
//! `instruction_patch` (an agent's instructions). The policy never
//! auto-approves any of them; each executor records what it did in the
//! action's result, which the log keeps.
//!
//! berth proposes `parallelize` itself when a project has at least two
//! claimable tasks and fewer agents than `[agents] max_parallel`, once per
//! team size (the idempotency key names it), so a denial is not asked again
//! until the team changes. Accepting creates `<agent>-2` (or the next free
//! suffix) with the same implementation (a noop agent's twin is noop: ADR
//! 0018), the instructions of the agent it copies, and the seed's fixed
//! autonomy set — `auto_approve` for the delivery chain
//! ([`ACTIVATION_SEEDS`], never `git_merge`), not a copy of the base agent's
//! rows: without it one-click acceptance would turn into three manual
//! approvals per task, and a copy would hand the twin every widening a
//! person granted the base agent alone.

use std::path::PathBuf;

use berth_policy::Action;

use crate::Engine;
use crate::actions::{ActionRecord, ActionResult, Outcome, Proposal};
use crate::agents::ACTIVATION_SEEDS;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;

impl Engine {
    /// An agent's instructions file (`<state>/instructions/<agent>.md`).
    pub fn instructions_path(&self, agent: &str) -> PathBuf {
        self.state
            .root()
            .join("instructions")
            .join(format!("{agent}.md"))
    }

    /// Proposes `parallelize` for the project's first agent when it has
    /// two claimable tasks or more and room under `max_parallel`. Returns the
    /// proposal's id when one was made (or found).
    pub async fn consider_parallelize(&self, project: &str) -> Result<Option<String>> {
        let (config, _) = self.load_project_files(project)?;
        let agents: Vec<_> = self
            .agents()
            .await?
            .into_iter()
            .filter(|a| a.project == project)
            .collect();
        let claimable: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM tasks WHERE project = $1 AND status = 'todo' AND steps IS NULL",
        )
        .bind(project)
        .fetch_one(self.store.pool())
        .await
        .map_err(EngineError::store("counting claimable tasks"))?;
        let room = agents.len() < config.agents.max_parallel as usize;
        let Some(base) = agents.iter().min_by_key(|a| (a.created_at, a.name.clone())) else {
            return Ok(None);
        };
        if claimable < 2 || !room {
            return Ok(None);
        }
        let key = format!("parallelize:{project}:{}", agents.len());
        let p = self
            .propose(
                Proposal::by_agent(&base.names()?.0, Action::Parallelize).key(key),
                None,
            )
            .await?;
        Ok(Some(p.id))
    }

    /// `parallelize`: the twin of the proposing agent.
    pub(crate) async fn exec_parallelize(&self, record: &ActionRecord) -> Result<Outcome> {
        let base = self.agent(&record.agent).await?;
        let (config, _) = self.load_project_files(&base.project)?;
        let team = self
            .agents()
            .await?
            .into_iter()
            .filter(|a| a.project == base.project)
            .count();
        if team >= config.agents.max_parallel as usize {
            return Ok(Outcome::failed(
                format!(
                    "project `{}` already has {team} agents, its max_parallel; approve a raise_max_parallel first",
                    base.project
                ),
                None,
            ));
        }
        let mut name = None;
        for n in 2..100 {
            let candidate = format!("{}-{n}", base.name);
            if matches!(
                self.agent(&candidate).await,
                Err(EngineError::UnknownAgent(_))
            ) {
                name = Some(candidate);
                break;
            }
        }
        let Some(name) = name else {
            return Ok(Outcome::failed("no free agent name left", None));
        };
        let now = now_ms();
        let system = Actor::system();
        let mut tx = self.store.write("creating a parallel agent").await?;
        sqlx::query(
            "INSERT INTO agents (name, project, impl, status, created_at, updated_at) VALUES ($1, $2, $3, 'idle', $4, $4)",
        )
        .bind(&name)
        .bind(&base.project)
        .bind(base.implementation.as_str())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("creating a parallel agent"))?;
        // The seed's fixed set, not a copy of the base agent's rows: a person
        // who widened the base agent's autonomy (a terminal, git_merge) did
        // so for that agent; the twin starts from the delivery chain.
        let mut seeded = 0;
        for kind in ACTIVATION_SEEDS {
            seeded += sqlx::query(
                "INSERT INTO autonomy (agent, action_type, mode, updated_at) VALUES ($1, $2, 'auto_approve', $3)",
            )
            .bind(&name)
            .bind(kind)
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("seeding the parallel agent's autonomy"))?
            .rows_affected();
        }
        let from = self.instructions_path(&base.name);
        let instructions = if from.is_file() {
            let to = self.instructions_path(&name);
            std::fs::copy(&from, &to).map_err(EngineError::io("copying", &from))?;
            Some(to)
        } else {
            None
        };
        emit(
            &mut tx,
            NewEvent::new(kind::AGENT_ACTIVATED, &system)
                .project(&base.project)
                .agent(&name)
                .action(&record.id)
                .payload(serde_json::json!({
                    "impl": base.implementation.as_str(),
                    "identity": crate::agents::identity(&name),
                    "parallel_of": base.name,
                    "autonomy_rows": seeded,
                    "seeded": ACTIVATION_SEEDS,
                    "instructions": instructions,
                })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("creating a parallel agent"))?;
        Ok(Outcome::ok(ActionResult::Parallelize {
            agent: name,
            of: base.name.clone(),
            implementation: base.implementation.as_str().to_string(),
            autonomy_rows: seeded,
        }))
    }

    /// `raise_max_parallel`: `[agents] max_parallel` one higher in berth.toml.
    pub(crate) async fn exec_raise_max_parallel(&self, record: &ActionRecord) -> Result<Outcome> {
        let path = self.state.project_config(&record.project);
        let text = std::fs::read_to_string(&path).map_err(EngineError::io("reading", &path))?;
        let config = crate::config::ProjectConfig::parse(&text, &path.display().to_string())?;
        let from = config.agents.max_parallel;
        let to = from.saturating_add(1);
        let new = crate::projects::with_key(&text, "agents", "max_parallel", &to.to_string());
        let check = crate::config::ProjectConfig::parse(&new, &path.display().to_string())?;
        if check.agents.max_parallel != to {
            return Ok(Outcome::failed(
                format!(
                    "could not set max_parallel in {}: edit it by hand",
                    path.display()
                ),
                None,
            ));
        }
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(&tmp, &new).map_err(EngineError::io("writing", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(EngineError::io("replacing", &path))?;
        Ok(Outcome::ok(ActionResult::RaiseMaxParallel {
            project: record.project.clone(),
            from,
            to,
        }))
    }

    /// `instruction_patch`: the agent's instructions replaced by the
    /// action's content.
    pub(crate) async fn exec_instruction_patch(&self, record: &ActionRecord) -> Result<Outcome> {
        let Some(content) = record.params.content.as_deref() else {
            return Ok(Outcome::failed(
                "an instruction_patch carries the new instructions as its content; this one has none",
                None,
            ));
        };
        let path = self.instructions_path(&record.agent);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(EngineError::io("creating", dir))?;
        }
        let before = std::fs::read_to_string(&path).ok().map(|s| s.len() as u64);
        std::fs::write(&path, content).map_err(EngineError::io("writing", &path))?;
        Ok(Outcome::ok(ActionResult::InstructionPatch {
            agent: record.agent.clone(),
            path: path.display().to_string(),
            bytes_before: before,
            bytes: content.len() as u64,
        }))
    }
}
