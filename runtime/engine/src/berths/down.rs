//! `berth down`: closing a berth's sandbox, saving what its worktree holds
//! that the forge does not, and recycling the worktree.

use super::*;

impl Engine {
    /// Takes an agent's berth down; recycles its worktree unless
    /// `keep_worktree`, saving first what the recycle would lose (see
    /// [`Engine::down_with`]).
    pub async fn down(
        &self,
        agent: &AgentName,
        keep_worktree: bool,
        actor: &Actor,
    ) -> Result<BerthInfo> {
        self.down_with(agent, keep_worktree, false, actor).await
    }

    /// Takes an agent's berth down; recycles its worktree unless
    /// `keep_worktree`. Before the recycle, uncommitted changes and commits
    /// the forge does not hold are saved under `refs/berth/saved/<agent>/…`
    /// in the forge ([`BerthInfo::saved`]) unless `discard`.
    /// Refuses to recycle the worktree of an agent holding a task: a pending
    /// action must never outlive its worktree (ADR 0048, D5).
    pub async fn down_with(
        &self,
        agent: &AgentName,
        keep_worktree: bool,
        discard: bool,
        actor: &Actor,
    ) -> Result<BerthInfo> {
        let a = self.agent(agent).await?;
        if let (Some(task), false) = (&a.task, keep_worktree) {
            return Err(EngineError::HoldsTask {
                agent: agent.to_string(),
                task: crate::ids::short(task).to_string(),
                status: a.status.as_str(),
                kept: kept_for_task(&a),
            });
        }
        let loaded = self.load_project(&a.project).await?;
        self.close_berth(&a, &loaded.config, keep_worktree, actor)
            .await?;
        let mut saved = None;
        if !keep_worktree {
            saved = self
                .recycle_after_down(&a, &loaded.project, None, discard)
                .await?;
        }
        let instance = instance_of(self.state.root());
        let mut info = BerthInfo::of(&self.agent(agent).await?, &instance);
        info.saved = saved;
        if a.task.is_some() && keep_worktree {
            info.note = Some(kept_for_task(&a));
        }
        Ok(info)
    }

    /// Removes the berth's container and records the berth down at once,
    /// its worktree still there (`container.removed`, `berth.down`). Until
    /// the container is gone the berth stays recorded up, so a failed close
    /// is retried by the next `down`; after it nothing leaves the store
    /// saying "up". Does nothing but drop cached sandboxes when already down.
    pub(crate) async fn close_berth(
        &self,
        a: &Agent,
        config: &ProjectConfig,
        keep_worktree: bool,
        actor: &Actor,
    ) -> Result<()> {
        // The provider takes down what it brought up: a container, or a
        // runner berth's running execs (daemons included) and its `/tmp`.
        let mut removed = None;
        if let (Some(mode), Some(worktree)) = (a.berth, a.worktree.clone()) {
            let spec = self.berth_spec(a, mode, worktree, config, OpenAs::TAKING_DOWN);
            removed = self.provider.close(&spec).await?;
        }
        self.sandboxes.drop_agent(&a.name);
        if a.berth.is_none() {
            return Ok(());
        }
        let system = Actor::system();
        let mut tx = self.store.write("taking a berth down").await?;
        sqlx::query("UPDATE agents SET berth_mode = NULL, updated_at = $1 WHERE name = $2")
            .bind(now_ms())
            .bind(&a.name)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("taking a berth down"))?;
        if let Some(container) = removed {
            emit(
                &mut tx,
                NewEvent::new(kind::CONTAINER_REMOVED, &system)
                    .project(&a.project)
                    .agent(&a.name)
                    .payload(serde_json::json!({ "container": container })),
            )
            .await?;
        }
        emit(
            &mut tx,
            NewEvent::new(kind::BERTH_DOWN, actor)
                .project(&a.project)
                .agent(&a.name)
                .payload(serde_json::json!({ "keep_worktree": keep_worktree })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("taking a berth down"))
    }

    /// Recycles the worktree of a berth that is down. On success the record
    /// forgets the worktree; on failure it keeps it (a down berth with a
    /// worktree left), the failure goes on the log (`worktree.recycle_failed`)
    /// and the next `down` recycles again — as does `up`, whose provisioning
    /// removes a worktree left half-recycled before making a fresh one.
    pub(crate) async fn recycle_after_down(
        &self,
        a: &Agent,
        project: &crate::projects::Project,
        task: Option<&str>,
        discard: bool,
    ) -> Result<Option<SavedRef>> {
        let system = Actor::system();
        // Saved first: the berth's disk (and the agent repository on it) goes
        // after the recycle. A save that fails stops the recycle.
        let saved = if discard || a.worktree.is_none() {
            None
        } else {
            let saved = self
                .git()
                .save_unpushed(project, &a.name, &save_stamp())
                .await;
            if let Err(e) = &saved {
                self.record_recycle_failed(
                    a,
                    task,
                    a.worktree.as_deref(),
                    format!("saving its work first: {e}"),
                )
                .await?;
            }
            saved
                .map_err(|e| EngineError::SaveFailed {
                    agent: a.name.clone(),
                    source: Box::new(e),
                })?
                .map(|s| SavedRef {
                    refname: s.refname,
                    commit: s.oid.to_string(),
                    forge: project.forge.clone(),
                    committed_changes: s.committed_changes,
                })
        };
        let recycled = match self.git().recycle(project, &a.name).await {
            Ok(recycled) => recycled,
            Err(e) => {
                let worktree = a.worktree.clone().unwrap_or_else(|| {
                    self.state
                        .root()
                        .join("berths")
                        .join(&a.project)
                        .join(&a.name)
                        .join(&a.name)
                });
                tracing::warn!(agent = %a.name, worktree = %worktree.display(), error = %e, "recycling a worktree failed");
                self.record_recycle_failed(a, task, Some(&worktree), e.to_string())
                    .await?;
                return Err(EngineError::RecycleFailed {
                    agent: a.name.clone(),
                    worktree,
                    source: Box::new(e),
                });
            }
        };
        let mut tx = self.store.write("recycling a worktree").await?;
        let forgotten = sqlx::query("UPDATE agents SET worktree = NULL, branch = NULL, updated_at = $1 WHERE name = $2 AND berth_mode IS NULL AND task_id IS NULL")
            .bind(now_ms())
            .bind(&a.name)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("recycling a worktree"))?
            .rows_affected();
        if recycled {
            emit(
                &mut tx,
                NewEvent::new(kind::WORKTREE_RECYCLED, &system)
                    .project(&a.project)
                    .agent(&a.name)
                    .task(task)
                    .payload(serde_json::json!({
                        "worktree": a.worktree,
                        "branch": a.branch,
                        "saved": saved.as_ref().map(|s| &s.refname),
                    })),
            )
            .await?;
        }
        tx.commit()
            .await
            .map_err(EngineError::store("recycling a worktree"))?;
        if forgotten == 1 {
            // Last: the berth's own disk, with its agent repository (the
            // branch was deleted with the worktree; the forge keeps what was
            // pushed). Not when the berth came up again meanwhile.
            if let Err(e) = self.release_disk(&a.project, &a.name).await {
                tracing::warn!(agent = %a.name, error = %e, "the berth's disk could not be released; the next `down` or `berth reconcile` releases it");
            }
            // A runner berth's home goes with its worktree (with the disk
            // when it had one; here when it had none).
            let dir = crate::berth_disk::berth_dir(self.state.root(), &a.project, &a.name);
            let removed = tokio::task::spawn_blocking(move || {
                berth_worktrees::remove_beneath(&dir, std::path::Path::new(".home"))
            })
            .await;
            if let Ok(Err(e)) = removed {
                tracing::warn!(agent = %a.name, error = %e, "the berth's home could not be removed; the next `down` removes it");
            }
        }
        Ok(saved)
    }

    /// `worktree.recycle_failed`: the save or the recycle of `a`'s worktree
    /// failed, and why (the worktree is kept).
    async fn record_recycle_failed(
        &self,
        a: &Agent,
        task: Option<&str>,
        worktree: Option<&std::path::Path>,
        error: String,
    ) -> Result<()> {
        let op = "recording a failed recycle";
        let mut tx = self.store.write(op).await?;
        emit(
            &mut tx,
            NewEvent::new(kind::WORKTREE_RECYCLE_FAILED, &Actor::system())
                .project(&a.project)
                .agent(&a.name)
                .task(task)
                .payload(serde_json::json!({
                    "worktree": worktree,
                    "branch": a.branch,
                    "error": error,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))
    }
}

/// What `down` keeps of an agent holding a task, and why.
fn kept_for_task(a: &Agent) -> String {
    let what = format!(
        "its worktree{} and branch{} are kept",
        a.worktree
            .as_ref()
            .map(|w| format!(" {}", w.display()))
            .unwrap_or_default(),
        a.branch
            .as_ref()
            .map(|b| format!(" {b}"))
            .unwrap_or_default(),
    );
    let task = a.task.as_deref().map(crate::ids::short).unwrap_or_default();
    let why = match a.status {
        crate::agents::AgentStatus::InReview => format!(
            "task {task} is in review: its PR is judged on that branch and a change the review asks for is made in that worktree; they are recycled when the PR is merged or closed"
        ),
        crate::agents::AgentStatus::AwaitingApproval => format!(
            "task {task} has an action waiting for a person, which runs in that worktree; they are recycled when the task is resolved"
        ),
        _ => format!(
            "task {task} ({}) is worked on there; they are recycled when the task is resolved",
            a.status.as_str()
        ),
    };
    format!("{what}: {why}")
}

/// A save's name: the UTC time to the millisecond, `2026-12-02T074000123Z`.
fn save_stamp() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}
