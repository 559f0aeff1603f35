//! `berth up`: provisioning an agent's worktree and repository, its uid and
//! disk, and opening (or adopting) its sandbox.

use super::*;

/// How `berth up` treats what it finds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpOptions {
    /// Give the berth a new uid from `[host] uid_range` (re-owning its
    /// repository and worktree, recreating its container).
    pub new_uid: bool,
}

impl Engine {
    /// Brings an agent's berth up: its worktree (on its task's branch, or its
    /// scratch branch when it has no task) and its sandbox. Idempotent.
    pub async fn up(
        &self,
        agent: &AgentName,
        project: &ProjectName,
        mode: Option<BerthMode>,
        actor: &Actor,
    ) -> Result<BerthInfo> {
        self.up_with(agent, project, mode, UpOptions::default(), actor)
            .await
    }

    /// [`up`](Self::up) with options (`berth up --new-uid`).
    pub async fn up_with(
        &self,
        agent: &AgentName,
        project: &ProjectName,
        mode: Option<BerthMode>,
        options: UpOptions,
        actor: &Actor,
    ) -> Result<BerthInfo> {
        let a = self.agent(agent).await?;
        if a.project != project.as_str() {
            return Err(EngineError::WrongProject {
                agent: agent.to_string(),
                actual: a.project,
                requested: project.to_string(),
            });
        }
        let loaded = self.load_project(project).await?;
        let (mode, fallback) = match mode.or(a.berth).or(loaded.config.sandbox.mode.fixed()) {
            Some(m) => (m, None),
            None => self.provider.auto_mode().await?,
        };
        if let Some(current) = a.berth
            && current != mode
        {
            return Err(EngineError::AlreadyUp {
                agent: agent.to_string(),
                mode: current.as_str(),
            });
        }
        if mode == BerthMode::Runner
            && crate::agents::load_autonomy(self.store.pool(), agent)
                .await?
                .resolve(berth_policy::autonomy::WILDCARD)
                .is_auto_mode()
        {
            // Auto mode was turned on while the berth would have been a
            // container: a runner berth must pass the same gate.
            self.check_runner_auto_mode(&a, mode, &loaded.config)?;
        }
        let branch = branch_for(&a.name, a.task.as_deref());
        let system = Actor::system();
        if let Some(old) = a.branch.as_deref().filter(|b| *b != branch) {
            // A worktree on another branch: its scratch branch, now that it has
            // a task (a task's worktree is only recycled when the task leaves).
            if self.git().recycle(&loaded.project, &a.name).await? {
                let mut tx = self.store.write("recycling a worktree").await?;
                emit(
                    &mut tx,
                    NewEvent::new(kind::WORKTREE_RECYCLED, &system)
                        .project(project)
                        .agent(agent)
                        .payload(serde_json::json!({ "worktree": a.worktree, "branch": old })),
                )
                .await?;
                tx.commit()
                    .await
                    .map_err(EngineError::store("recycling a worktree"))?;
            }
        }
        // Before anything is provisioned: a mounted berth with no engine or
        // no image fails here, naming what to do.
        // A Dockerfile's context is never read from where an agent writes.
        if mode == BerthMode::Mounted
            && let Some(why) =
                crate::project_image::context_problem(&loaded.config, self.state.root())
        {
            return Err(EngineError::Invalid {
                what: "sandbox.build.context",
                value: loaded.config.sandbox.build.context.clone(),
                why,
            });
        }
        if mode == BerthMode::Mounted
            && let Some(problem) = crate::devcontainer::image_problem(project, &loaded.config)
        {
            return Err(problem.into());
        }
        // A Dockerfile on the base branch: the image built from it, once
        // built, and a word when the branch has moved on since.
        if mode == BerthMode::Mounted
            && let Some(problem) = crate::project_image::build_problem(project, &loaded.config)
        {
            return Err(problem.into());
        }
        let image_note = match (mode, &loaded.config.dockerfile_image) {
            (BerthMode::Mounted, Some(record)) if loaded.config.sandbox.build.is_set() => {
                self.dockerfile_image_note(project, &loaded.project.base_branch, record)
                    .await?
            }
            _ => None,
        };
        let image = crate::project_image::image_ref(&loaded.config);
        let checked = self.provider.check(mode, &image).await;
        let checked_image = checked.map_err(|e| {
            // The recorded image of a Dockerfile on the base branch, gone
            // (`berth image rm`) or unusable: building it again mends it.
            match (&loaded.config.dockerfile_image, image) {
                (Some(record), berth_sandbox::image::ImageRef::Named(tag))
                    if mode == BerthMode::Mounted && record.tag == tag =>
                {
                    crate::project_image::ProjectImageError::Unusable {
                        project: project.to_string(),
                        tag,
                        why: e.to_string(),
                    }
                    .into()
                }
                _ => EngineError::from(e),
            }
        })?;
        // The berth's own uid (mounted, and runner when berth is root):
        // allocated, checked against the host, or kept as made; it owns the
        // repository and the worktree. A runner berth of a berth not root
        // runs as the user, whom its user namespace maps.
        let own_uid = mode.owns_uid();
        let (uid, uid_note) = if own_uid {
            self.settle_uid(&a, &loaded.config, options.new_uid).await?
        } else {
            (loaded.config.sandbox.uid, None)
        };
        let owner = own_uid.then_some(berth_worktrees::Owner { uid, gid: uid });
        // The berth's own disk is mounted before anything is provisioned:
        // the repository and the worktree are created on it.
        let disk = self.settle_disk(&a, &loaded.config).await?;
        let max_checkout_bytes = match &disk {
            crate::berth_disk::DiskOutcome::Own { free_bytes, .. } => {
                loaded.config.git.max_checkout_bytes.min(*free_bytes)
            }
            crate::berth_disk::DiskOutcome::Unbounded { .. } => {
                loaded.config.git.max_checkout_bytes
            }
        };
        // A runner berth shares the directories with its own checks at
        // open; a mounted berth's container only bind-mounts them: it is
        // created and started while the checkout fills the worktree, so
        // `up` takes about the longer of the two, not their sum.
        let open_as = OpenAs {
            uid: owner.is_some().then_some(uid),
            claim_home: owner.is_some(),
        };
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel::<PathBuf>();
        let overlap = mode == BerthMode::Mounted;
        let task_part = crate::git::task_part(a.task.as_deref());
        let provisioning = self.git().provision_announcing(
            &loaded.project,
            &a.name,
            &task_part,
            owner,
            max_checkout_bytes,
            overlap.then_some(ready_tx),
        );
        let checked_image = Mutex::new(Some(checked_image));
        let open_spec = |worktree: PathBuf| {
            let mut spec = self.berth_spec(&a, mode, worktree, &loaded.config, open_as);
            // The image the check found a moment ago: not inspected again.
            if let berth_sandbox::BerthBackend::Mounted(container) = &mut spec.backend {
                container.checked_image = checked_image
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take()
                    .flatten();
            }
            spec
        };
        let early_open = async {
            // Dropped unsent: provisioning failed before the directories
            // were there (or the berth is not mounted).
            let worktree = ready_rx.await.ok()?;
            let spec = open_spec(worktree);
            self.sandboxes.drop_agent(agent);
            let opened = self.provider.open(&spec).await;
            Some((spec, opened))
        };
        let (provisioned, early) = tokio::join!(provisioning, early_open);
        let provisioned = match provisioned {
            Ok(p) => p,
            Err(e) => {
                // A container made for a worktree that could not be
                // provisioned is removed again.
                if let Some((spec, Ok(opened))) = &early
                    && opened.created_container.is_some()
                {
                    self.sandboxes.drop_agent(agent);
                    if let Err(close) = self.provider.close(spec).await {
                        tracing::warn!(agent = agent.as_str(), error = %close, "removing the container of a berth whose worktree could not be provisioned failed; reconcile removes it");
                    }
                }
                return Err(self
                    .provision_failed_on_disk(&a, &loaded.config, &disk, e)
                    .await);
            }
        };
        if provisioned.created {
            // Logged at once: a sandbox that fails to open must not hide it.
            let mut tx = self.store.write("recording a worktree").await?;
            emit(
                &mut tx,
                NewEvent::new(kind::WORKTREE_CREATED, &system)
                    .project(project)
                    .agent(agent)
                    .task(a.task.as_deref())
                    .payload(serde_json::json!({
                        "worktree": provisioned.worktree,
                        "branch": provisioned.branch,
                        "base": provisioned.base,
                    })),
            )
            .await?;
            tx.commit()
                .await
                .map_err(EngineError::store("recording a worktree"))?;
        }
        // A runner berth's home keeps what its commands wrote before a
        // `down --keep-worktree` (as root, when runner berths had no uid):
        // bring-up gives all of it to the berth's uid (`open_as` above).
        let (spec, opened) = match early {
            Some((spec, opened)) => (spec, opened?),
            None => {
                let spec = open_spec(provisioned.worktree.clone());
                self.sandboxes.drop_agent(agent);
                let opened = self.provider.open(&spec).await?;
                (spec, opened)
            }
        };
        self.sandboxes.put(
            (a.name.clone(), provisioned.worktree.clone()),
            opened.sandbox.clone(),
        );

        // A container this call created must not outlive a record that could
        // not be written: nothing would say it is there.
        let recorded = async {
            let mut tx = self.store.write("bringing a berth up").await?;
            sqlx::query(
                "UPDATE agents SET berth_mode = $1, worktree = $2, branch = $3, updated_at = $4 WHERE name = $5",
            )
            .bind(mode.as_str())
            .bind(provisioned.worktree.display().to_string())
            .bind(&provisioned.branch)
            .bind(now_ms())
            .bind(agent.as_str())
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("bringing a berth up"))?;
            if let Some(container) = &opened.created_container {
                emit(
                    &mut tx,
                    NewEvent::new(kind::CONTAINER_CREATED, &system)
                        .project(project)
                        .agent(agent)
                        .payload(serde_json::json!({ "container": container })),
                )
                .await?;
            }
            if a.berth.is_none() {
                emit(
                    &mut tx,
                    NewEvent::new(kind::BERTH_UP, actor)
                        .project(project)
                        .agent(agent)
                        .payload(serde_json::json!({
                            "mode": mode.as_str(),
                            "worktree": provisioned.worktree,
                            "branch": branch,
                            "fallback": fallback,
                            "disk": match &disk {
                                crate::berth_disk::DiskOutcome::Own { .. } => serde_json::json!({
                                    "bytes": loaded.config.sandbox.disk.bytes(),
                                    "inodes": crate::berth_disk::disk_inodes(&loaded.config),
                                }),
                                crate::berth_disk::DiskOutcome::Unbounded { .. } => serde_json::Value::Null,
                            },
                        })),
                )
                .await?;
            }
            tx.commit()
                .await
                .map_err(EngineError::store("bringing a berth up"))?;
            Ok::<(), EngineError>(())
        }
        .await;
        if let Err(e) = recorded {
            if opened.created_container.is_some() {
                self.sandboxes.drop_agent(agent);
                if let Err(close) = self.provider.close(&spec).await {
                    tracing::warn!(agent = agent.as_str(), error = %close, "removing a container whose berth could not be recorded failed; reconcile removes it");
                }
            }
            return Err(e);
        }
        let instance = instance_of(self.state.root());
        let mut info = BerthInfo::of(&self.agent(agent).await?, &instance);
        // The berth's uid must reach each declared toolchain and cache.
        let unreachable = if own_uid {
            crate::declared_dirs::unreachable_notes(&loaded.config.sandbox, uid, mode)
        } else {
            Vec::new()
        };
        for note in unreachable.into_iter().rev() {
            tracing::warn!(agent = agent.as_str(), %note, "a declared directory is out of the berth's reach");
            info.note = Some(match info.note {
                Some(n) => format!("{note}; {n}"),
                None => note,
            });
        }
        if let crate::berth_disk::DiskOutcome::Unbounded { note } = disk {
            info.note = Some(match info.note {
                Some(n) => format!("{note}; {n}"),
                None => note,
            });
        }
        if let Some(note) = uid_note {
            info.note = Some(match info.note {
                Some(n) => format!("{note}; {n}"),
                None => note,
            });
        }
        if let Some(note) = image_note {
            tracing::info!(agent = agent.as_str(), %note, "the berth runs an image older than its Dockerfile");
            info.note = Some(match info.note {
                Some(n) => format!("{note}; {n}"),
                None => note,
            });
        }
        if let Some(why) = fallback {
            info.note = Some(match info.note {
                Some(n) => format!("{why}; {n}"),
                None => why,
            });
        }
        // devcontainer.json's post commands, proposed by the agent through
        // the policy: post-create when the berth was made (its container,
        // or a runner berth's worktree), post-start when it came up.
        if let Some(d) = &loaded.config.devcontainer {
            let created = opened.created_container.is_some()
                || (mode == BerthMode::Runner && provisioned.created);
            let started = a.berth.is_none() || opened.created_container.is_some();
            info.devcontainer = self
                .propose_post_commands(agent, d, created, started)
                .await?;
        }
        Ok(info)
    }
}
