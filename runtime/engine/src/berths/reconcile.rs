//! Reconciling berth containers with the store after a crash or a reboot,
//! and finding the containers of state directories that are gone.

use super::*;

impl Engine {
    /// Reconciles the containers of this state directory's projects with the
    /// berths the store has up in mounted mode: a running container whose
    /// worktree exists is adopted (and commands whose berth process died are
    /// killed in it), every other one is removed. Each step goes on the log
    /// (`container.adopted`, `container.removed`). Run it at start, before
    /// berths come up: a container another process has created but not yet
    /// started counts as an orphan.
    pub async fn reconcile_berths(&self) -> Result<Vec<ReconciledContainer>> {
        let projects: Vec<String> = self.projects().await?.into_iter().map(|p| p.name).collect();
        let live: BTreeSet<(String, String)> = self
            .agents()
            .await?
            .into_iter()
            .filter(|a| {
                a.berth == Some(BerthMode::Mounted)
                    && a.worktree.as_ref().is_some_and(|w| w.is_dir())
            })
            .map(|a| (a.project, a.name))
            .collect();
        let report = self
            .provider
            .reconcile(&instance_of(self.state.root()), &projects, &live)
            .await?;
        if report.is_empty() {
            return Ok(report);
        }
        let system = Actor::system();
        let mut tx = self.store.write("recording a reconcile").await?;
        for r in &report {
            let event = if r.adopted {
                kind::CONTAINER_ADOPTED
            } else {
                kind::CONTAINER_REMOVED
            };
            emit(
                &mut tx,
                NewEvent::new(event, &system)
                    .project(&r.project)
                    .agent(&r.agent)
                    .payload(serde_json::json!({
                        "container": r.container,
                        "by": "reconcile",
                        "reason": r.reason,
                        "stale_execs_killed": r.stale_execs_killed,
                    })),
            )
            .await?;
        }
        tx.commit()
            .await
            .map_err(EngineError::store("recording a reconcile"))?;
        for r in &report {
            self.sandboxes.drop_agent(&r.agent);
        }
        Ok(report)
    }

    /// Berth containers on this host's Docker engine whose state directory
    /// no longer exists (any state directory's, this one's included); with
    /// `remove`, they are removed. A container of a state directory that
    /// still exists is never one of them.
    pub async fn orphan_containers(&self, remove: bool) -> Result<Vec<OrphanContainer>> {
        Ok(self.provider.orphans(remove).await?)
    }

    /// Executes an approved `container_remove`: removes the agent's container
    /// (what runs in it ends, `/tmp` is lost); the berth stays up, and its next
    /// command starts a fresh container on the same worktree.
    pub(crate) async fn remove_agent_container(&self, agent: &Agent) -> Result<Option<String>> {
        let (Some(mode), Some(worktree)) = (agent.berth, agent.worktree.clone()) else {
            return Err(EngineError::NoBerth {
                agent: agent.name.clone(),
                project: agent.project.clone(),
            });
        };
        let loaded = self.load_project(&agent.project).await?;
        let spec = self.berth_spec(agent, mode, worktree, &loaded.config, OpenAs::TAKING_DOWN);
        let removed = self.provider.close(&spec).await?;
        self.sandboxes.drop_agent(&agent.name);
        if let Some(container) = &removed {
            let system = Actor::system();
            let mut tx = self.store.write("removing a container").await?;
            emit(
                &mut tx,
                NewEvent::new(kind::CONTAINER_REMOVED, &system)
                    .project(&agent.project)
                    .agent(&agent.name)
                    .payload(
                        serde_json::json!({ "container": container, "by": "container_remove" }),
                    ),
            )
            .await?;
            tx.commit()
                .await
                .map_err(EngineError::store("removing a container"))?;
        }
        Ok(removed)
    }
}
