//! Followups (the Kin ADR, D4–D6): after a pipeline task is done — at once in
//! auto mode, when a person approves it in review mode — the project's
//! generator command reads the task and its steps' output as JSON on stdin
//! and prints JSON lines of followup tasks:
//!
//! ```json
//! {"title": "Fix the lint", "steps": ["cargo clippy --fix"], "write": true}
//! {"title": "Apply the migration", "steps": ["./migrate"], "permission_blocked": true}
//! ```
//!
//! A followup inherits the project's mode, never the task's override (that
//! override was a one-off); a followup generates no followups itself, which
//! ends any loop. An item blocked by permissions becomes a pending choice —
//! rerun | manual_task | skip — that auto mode resolves as `rerun` (with write
//! access; a rerun that fails again becomes a manual task tagged
//! `auto_escalated`) and review mode leaves to a person (`berth actions`,
//! `berth resolve ID CHOICE`). Everything berth creates here carries an
//! origin key, so generating again after a crash creates nothing twice.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_policy::Action;
use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::actions::{ActionParams, ActionResult, ActionStatus, Proposal};
use crate::config::ExecutionMode;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms, short};
use crate::pipeline::Run;
use crate::tasks::{NewTask, PipelineStep, Task, TaskSource, insert_task};

/// One line of the generator's output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FollowupItem {
    pub title: String,
    #[serde(default)]
    pub steps: Vec<String>,
    #[serde(default)]
    pub write: bool,
    /// The work needs access the agent did not have.
    #[serde(default)]
    pub permission_blocked: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The options of a permission-blocked followup.
pub const CHOICE_OPTIONS: [&str; 3] = ["rerun", "manual_task", "skip"];

/// A decision berth leaves to a person (or takes itself in auto mode).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Choice {
    pub id: String,
    pub project: String,
    pub task: String,
    pub agent: Option<String>,
    pub kind: String,
    pub item: FollowupItem,
    pub options: Vec<String>,
    /// pending | resolving | resolved
    pub status: String,
    pub choice: Option<String>,
    pub resolved_by: Option<String>,
    pub result: Option<serde_json::Value>,
    pub created_at: i64,
}

const CHOICE_COLUMNS: &str = "id, project, task_id, agent, kind, item, options, status, choice, resolved_by, result, created_at";

fn choice_from_row(r: &sqlx::any::AnyRow) -> Result<Choice> {
    let op = "reading a choice";
    let get =
        |c: &str| -> Result<String> { r.try_get::<String, _>(c).map_err(EngineError::store(op)) };
    let result: Option<String> = r.try_get("result").map_err(EngineError::store(op))?;
    Ok(Choice {
        id: get("id")?,
        project: get("project")?,
        task: get("task_id")?,
        agent: r.try_get("agent").map_err(EngineError::store(op))?,
        kind: get("kind")?,
        item: serde_json::from_str(&get("item")?).map_err(|e| EngineError::corrupt(op, e))?,
        options: serde_json::from_str(&get("options")?).map_err(|e| EngineError::corrupt(op, e))?,
        status: get("status")?,
        choice: r.try_get("choice").map_err(EngineError::store(op))?,
        resolved_by: r.try_get("resolved_by").map_err(EngineError::store(op))?,
        result: result
            .map(|j| serde_json::from_str(&j).map_err(|e| EngineError::corrupt(op, e)))
            .transpose()?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
    })
}

/// Parses the generator's output: the items, and a note per line skipped.
pub fn parse_items(stdout: &str) -> (Vec<FollowupItem>, Vec<String>) {
    let mut items = Vec::new();
    let mut skipped = Vec::new();
    for (n, line) in stdout.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_str::<FollowupItem>(line) {
            Ok(item) if item.title.trim().is_empty() => {
                skipped.push(format!("line {}: an empty title", n + 1));
            }
            Ok(item) if item.steps.iter().any(|s| s.trim().is_empty()) => {
                skipped.push(format!("line {}: an empty step", n + 1));
            }
            Ok(item) => items.push(item),
            Err(e) => skipped.push(format!("line {}: {e}", n + 1)),
        }
    }
    (items, skipped)
}

impl Engine {
    /// Runs the generator for a done task (when the project has one and the
    /// task is no followup itself). Returns the followup tasks it created.
    /// Never fails on the generator's account: that is logged.
    pub(crate) async fn generate_followups(&self, task: &Task, run: &Run) -> Result<Vec<String>> {
        if task.source != TaskSource::User {
            return Ok(Vec::new());
        }
        let (config, _) = self.load_project_files(&task.project)?;
        if !config.followups.enabled || config.followups.command.trim().is_empty() {
            return Ok(Vec::new());
        }
        let input = self.followup_input(task, run).await?;
        let mut env = BTreeMap::new();
        env.insert("BERTH_TASK".to_string(), task.id.clone());
        env.insert("BERTH_PROJECT".to_string(), task.project.clone());
        let ran = self
            .run_host_command(
                &task.project,
                &config.followups.command,
                serde_json::to_vec(&input)
                    .map_err(|e| EngineError::corrupt("encoding followup input", e))?,
                env,
                Duration::from_secs(config.followups.timeout_secs.max(1)),
            )
            .await;
        let failure = match &ran {
            Err(e) => Some(e.to_string()),
            Ok(o) if o.timed_out => Some(format!(
                "timed out after {} s; its process tree was killed",
                config.followups.timeout_secs
            )),
            Ok(o) if !o.status.success() => Some(format!(
                "exited with code {}: {}",
                o.status.code(),
                String::from_utf8_lossy(&o.stderr.bytes).trim()
            )),
            Ok(_) => None,
        };
        let system = Actor::system();
        if let Some(why) = failure {
            tracing::warn!(task = %task.id, %why, "followup generator failed");
            let mut tx = self.store.write("recording a generator's failure").await?;
            let id = emit(
                &mut tx,
                NewEvent::new(kind::FOLLOWUPS_FAILED, &system)
                    .project(&task.project)
                    .agent(&run.agent)
                    .task(Some(&task.id))
                    .payload(serde_json::json!({ "run": run.run, "diagnostic": why })),
            )
            .await?;
            tx.commit()
                .await
                .map_err(EngineError::store("recording a generator's failure"))?;
            self.fire_hooks(&task.project, &[id]).await;
            return Ok(Vec::new());
        }
        let stdout = ran
            .map(|o| String::from_utf8_lossy(&o.stdout.bytes).into_owned())
            .unwrap_or_default();
        let (items, skipped) = parse_items(&stdout);
        let mut created = Vec::new();
        let mut choices = Vec::new();
        let mut fired = Vec::new();
        let mut tx = self.store.write("creating followups").await?;
        for (n, item) in items.iter().enumerate() {
            let key = format!("followup:{}:{}:{n}", task.id, run.run);
            if item.permission_blocked {
                let id = new_id();
                let now = now_ms();
                let inserted = sqlx::query(
                    "INSERT INTO pending_choices (id, origin_key, project, task_id, agent, kind, item, options, status, \
                     created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'followup_permission', $6, $7, 'pending', $8, $8) \
                     ON CONFLICT (origin_key) DO NOTHING",
                )
                .bind(&id)
                .bind(&key)
                .bind(&task.project)
                .bind(&task.id)
                .bind(&run.agent)
                .bind(serde_json::to_string(item).map_err(|e| EngineError::corrupt("creating followups", e))?)
                .bind(serde_json::to_string(&CHOICE_OPTIONS).map_err(|e| EngineError::corrupt("creating followups", e))?)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(EngineError::store("creating followups"))?
                .rows_affected();
                if inserted == 1 {
                    fired.push(
                        emit(
                            &mut tx,
                            NewEvent::new(kind::CHOICE_CREATED, &system)
                                .project(&task.project)
                                .agent(&run.agent)
                                .task(Some(&task.id))
                                .payload(serde_json::json!({
                                    "choice": id,
                                    "item": item,
                                    "options": CHOICE_OPTIONS,
                                })),
                        )
                        .await?,
                    );
                    choices.push(id);
                }
                continue;
            }
            let new = NewTask {
                project: task.project.clone(),
                title: item.title.clone(),
                // The project's mode, never the task's override (D6).
                execution_mode: None,
                steps: (!item.steps.is_empty()).then(|| {
                    item.steps
                        .iter()
                        .map(|c| PipelineStep {
                            command: c.clone(),
                            write: false,
                        })
                        .collect()
                }),
                write: item.write && !item.steps.is_empty(),
                parent: Some(task.id.clone()),
                source: TaskSource::Followup,
                tags: vec!["followup".into()],
                origin_key: Some(key),
            };
            let (id, new_row) = insert_task(&mut tx, &new, &system).await?;
            if new_row {
                created.push(id);
            }
        }
        if !created.is_empty() || !choices.is_empty() || !skipped.is_empty() {
            fired.push(
                emit(
                    &mut tx,
                    NewEvent::new(kind::FOLLOWUPS_GENERATED, &system)
                        .project(&task.project)
                        .agent(&run.agent)
                        .task(Some(&task.id))
                        .payload(serde_json::json!({
                            "run": run.run,
                            "tasks": created,
                            "choices": choices,
                            "skipped": skipped,
                        })),
                )
                .await?,
            );
        }
        tx.commit()
            .await
            .map_err(EngineError::store("creating followups"))?;
        self.fire_hooks(&task.project, &fired).await;
        if run.mode == ExecutionMode::Auto {
            // D5: auto mode decides for the person, as `rerun`.
            // Pending ones, and any a crash left half-resolved.
            for c in self.choices(false).await? {
                if c.task == task.id
                    && c.status != "resolved"
                    && let Err(e) = self.resolve_choice_as(&c.id, "rerun", &system, true).await
                {
                    // Another living process is resolving it: its call.
                    tracing::warn!(choice = %c.id, error = %e, "choice left to its resolver");
                }
            }
        }
        Ok(created)
    }

    /// What the generator reads: the task and its steps' last outcomes.
    async fn followup_input(&self, task: &Task, run: &Run) -> Result<serde_json::Value> {
        let mut steps = Vec::new();
        for (i, step) in task.steps.iter().flatten().enumerate() {
            let mut last = None;
            for attempt in [1, 0] {
                let key = format!("pipeline:{}:{}:{i}:{attempt}", task.id, run.run);
                if let Some(r) = self.action_by_key(&key).await? {
                    last = Some(r);
                    break;
                }
            }
            let (exit_code, stdout, stderr) = match last.as_ref().and_then(|r| r.result.as_ref()) {
                Some(ActionResult::Terminal {
                    exit_code,
                    stdout,
                    stderr,
                    ..
                }) => (Some(*exit_code), stdout.clone(), stderr.clone()),
                _ => (None, String::new(), String::new()),
            };
            steps.push(serde_json::json!({
                "command": step.command,
                "exit_code": exit_code,
                "stdout": stdout,
                "stderr": stderr,
            }));
        }
        Ok(serde_json::json!({
            "task": { "id": task.id, "project": task.project, "title": task.title },
            "run": run.run,
            "mode": run.mode.as_str(),
            "steps": steps,
        }))
    }

    /// Choices, oldest first; only pending ones with `pending_only`.
    pub async fn choices(&self, pending_only: bool) -> Result<Vec<Choice>> {
        let rows = sqlx::query(&format!(
            "SELECT {CHOICE_COLUMNS} FROM pending_choices WHERE ($1 = 0 OR status = 'pending') ORDER BY created_at, id"
        ))
        .bind(i64::from(pending_only))
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing choices"))?;
        rows.iter().map(choice_from_row).collect()
    }

    pub async fn choice(&self, id: &str) -> Result<Choice> {
        let full = self
            .resolve_id("pending_choices", "choice", "berth actions", id)
            .await?;
        let row = sqlx::query(&format!(
            "SELECT {CHOICE_COLUMNS} FROM pending_choices WHERE id = $1"
        ))
        .bind(&full)
        .fetch_one(self.store.pool())
        .await
        .map_err(EngineError::store("reading a choice"))?;
        choice_from_row(&row)
    }

    /// A person resolves a pending choice: `rerun`, `manual_task` or `skip`.
    pub async fn resolve_choice(&self, id: &str, choice: &str, user: &Actor) -> Result<Choice> {
        self.resolve_choice_as(id, choice, user, false).await
    }

    async fn resolve_choice_as(
        &self,
        id: &str,
        choice: &str,
        actor: &Actor,
        auto: bool,
    ) -> Result<Choice> {
        if !CHOICE_OPTIONS.contains(&choice) {
            return Err(EngineError::Invalid {
                what: "choice",
                value: choice.to_string(),
                why: format!("use one of: {}", CHOICE_OPTIONS.join(", ")),
            });
        }
        let c = self.choice(id).await?;
        let mut tx = self.store.write("resolving a choice").await?;
        // A choice a dead process was resolving is taken up again, with the
        // choice it had made (its reruns replay by their keys; one that was
        // interrupted is never re-run: it escalates).
        let resolver: Option<String> = sqlx::query_scalar(
            "SELECT resolver FROM pending_choices WHERE id = $1 AND status = 'resolving'",
        )
        .bind(&c.id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store("resolving a choice"))?
        .flatten();
        let orphaned = resolver
            .as_deref()
            .is_some_and(crate::recovery::executor_is_dead);
        let choice = match (&c.choice, orphaned) {
            (Some(earlier), true) => earlier.clone(),
            _ => choice.to_string(),
        };
        let choice = choice.as_str();
        let won = sqlx::query(
            "UPDATE pending_choices SET status = 'resolving', choice = $1, resolved_by = $2, resolver = $3, updated_at = $4 \
             WHERE id = $5 AND (status = 'pending' OR (status = 'resolving' AND $6 = 1 AND resolver = $7))",
        )
        .bind(choice)
        .bind(actor.to_string())
        .bind(crate::recovery::executor_id())
        .bind(now_ms())
        .bind(&c.id)
        .bind(i64::from(orphaned))
        // The dead resolver it was read with: of two processes taking up
        // one orphaned choice, the second finds the first's name and loses.
        .bind(resolver.as_deref())
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("resolving a choice"))?
        .rows_affected();
        tx.commit()
            .await
            .map_err(EngineError::store("resolving a choice"))?;
        if won != 1 {
            return Err(EngineError::WrongStatus {
                what: "choice",
                id: short(&c.id).to_string(),
                status: c.status.to_string(),
                rule: "only a pending choice can be resolved".into(),
            });
        }
        let result = match choice {
            "skip" => serde_json::json!({ "outcome": "skipped" }),
            "manual_task" => {
                let t = self.manual_task(&c, &["manual"], None, actor).await?;
                serde_json::json!({ "outcome": "manual_task", "task": t })
            }
            _ => match self.rerun_item(&c).await? {
                None => serde_json::json!({ "outcome": "rerun_succeeded" }),
                Some(why) => {
                    let tags: &[&str] = if auto {
                        &["manual", "auto_escalated"]
                    } else {
                        &["manual", "escalated"]
                    };
                    let t = self.manual_task(&c, tags, Some(&why), actor).await?;
                    serde_json::json!({ "outcome": "escalated", "task": t, "diagnostic": why })
                }
            },
        };
        let mut tx = self.store.write("resolving a choice").await?;
        sqlx::query(
            "UPDATE pending_choices SET status = 'resolved', result = $1, updated_at = $2 WHERE id = $3",
        )
        .bind(result.to_string())
        .bind(now_ms())
        .bind(&c.id)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("resolving a choice"))?;
        let mut ev = NewEvent::new(kind::CHOICE_RESOLVED, actor)
            .project(&c.project)
            .task(Some(&c.task))
            .payload(serde_json::json!({
                "choice": c.id,
                "chosen": choice,
                "auto": auto,
                "result": result,
            }));
        if let Some(a) = &c.agent {
            ev = ev.agent(a);
        }
        let ev_id = emit(&mut tx, ev).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("resolving a choice"))?;
        self.fire_hooks(&c.project, &[ev_id]).await;
        self.choice(&c.id).await
    }

    /// Runs a blocked item's steps again, with write access, as proposed
    /// terminal actions of the task's agent. `Some(why)` when it did not
    /// succeed (failed, refused, waiting for approval, or nothing to run).
    async fn rerun_item(&self, c: &Choice) -> Result<Option<String>> {
        let Some(agent) = &c.agent else {
            return Ok(Some("no agent to rerun it".into()));
        };
        if c.item.steps.is_empty() {
            return Ok(Some("the item has no steps to rerun".into()));
        }
        let a = self.agent(agent).await?;
        let (agent, project) = a.names()?;
        if a.berth.is_none() {
            self.up(&agent, &project, None, &Actor::system()).await?;
        }
        for (n, command) in c.item.steps.iter().enumerate() {
            let proposal = Proposal::by_agent(
                &agent,
                Action::Terminal {
                    command: command.clone(),
                },
            )
            .params(ActionParams::default())
            .task(Some(c.task.clone()))
            .key(format!("choice:{}:{n}", c.id));
            let p = self.propose(proposal, None).await?;
            let r = self.action(&p.id).await?;
            if r.status != ActionStatus::Executed {
                return Ok(Some(format!(
                    "rerun of `{command}` (action {}) is {}: {}",
                    short(&r.id),
                    r.status.as_str(),
                    r.diagnostic.as_deref().unwrap_or(&r.decision.reason)
                )));
            }
        }
        Ok(None)
    }

    async fn manual_task(
        &self,
        c: &Choice,
        tags: &[&str],
        why: Option<&str>,
        actor: &Actor,
    ) -> Result<String> {
        let mut title = format!("By hand: {}", c.item.title);
        if let Some(w) = why {
            title.push_str(&format!(" ({w})"));
        }
        let new = NewTask {
            project: c.project.clone(),
            title,
            execution_mode: None,
            steps: None,
            write: false,
            parent: Some(c.task.clone()),
            source: TaskSource::Manual,
            tags: tags.iter().map(|t| t.to_string()).collect(),
            origin_key: Some(format!("choice:{}:manual", c.id)),
        };
        let mut tx = self.store.write("creating a manual task").await?;
        let (id, _) = insert_task(&mut tx, &new, actor).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("creating a manual task"))?;
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generator_lines_become_items_or_notes() {
        let out = "{\"title\":\"a\",\"steps\":[\"true\"]}\n\n\
                   not json\n\
                   {\"title\":\"\"}\n\
                   {\"title\":\"b\",\"permission_blocked\":true,\"steps\":[\"x\"]}\n\
                   {\"title\":\"c\",\"steps\":[\" \"]}\n\
                   {\"title\":\"d\",\"colour\":1}\n";
        let (items, skipped) = parse_items(out);
        let titles: Vec<&str> = items.iter().map(|i| i.title.as_str()).collect();
        assert_eq!(titles, ["a", "b"]);
        assert!(items[1].permission_blocked);
        assert_eq!(skipped.len(), 4, "{skipped:?}");
        assert!(skipped[0].starts_with("line 3:"), "{skipped:?}");
        assert!(skipped[1].contains("empty title"));
        assert!(skipped[2].contains("empty step"));
        assert!(skipped[3].contains("unknown field"), "{skipped:?}");
    }
}
