//! Bringing berths up, taking them down, and reconciling what a crashed berth
//! process left behind.
//!
//! Every step is idempotent and safe against a second berth process doing the
//! same: the container name is deterministic, a duplicate create is a 409 that
//! turns into adoption, and only containers carrying `berth.managed=1` are ever
//! removed.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use bollard::exec::CreateExecOptions;
use bollard::models::ContainerCreateBody;
use bollard::query_parameters::{
    CreateContainerOptionsBuilder, ListContainersOptionsBuilder, RemoveContainerOptionsBuilder,
    StartContainerOptions,
};

use super::exec::{self, ExecOwner, PROBE_SCRIPT, Target};
use super::spec::{container_name, container_name_in, idles_as_berths_helper};
use super::{
    AGENT_LABEL, ContainerSpec, DockerBackend, DockerBerth, DockerError, INSTANCE_LABEL,
    MANAGED_LABEL, PROJECT_LABEL, SPEC_LABEL, WORKER_LABEL, WORKTREE_LABEL, is_conflict,
    is_not_found, status_of,
};
use crate::image::{ImageInfo, ImageRef, TOOLS_MOUNT, TOOLS_SHELL};
use crate::{SandboxError, WorkAccess};

/// A berth container as the engine lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BerthContainer {
    pub name: String,
    pub id: String,
    /// Empty when the label is missing.
    pub project: String,
    pub agent: String,
    /// Empty when the container has no instance label.
    pub instance: String,
    /// Docker's state: `running`, `exited`, `created`, ….
    pub state: String,
    /// The host worktree its label names; empty when the label is missing.
    pub worktree: String,
}

/// The state directory a berth container's worktree label points into:
/// worktrees lie at `<state>/berths/<project>/<agent>/<agent>`. `None` when
/// the path does not have that shape (an older or foreign container), so
/// nothing can be said about it.
pub fn state_dir_of_worktree(worktree: &Path) -> Option<PathBuf> {
    if !worktree.is_absolute() {
        return None;
    }
    let berths = worktree.ancestors().nth(3)?;
    (berths.file_name()? == "berths").then(|| berths.parent().map(Path::to_path_buf))?
}

/// What reconcile did with one container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ContainerReconcileAction {
    /// Running, with a live worktree: kept. `stale_execs` were commands whose
    /// berth process had died; they were killed.
    Adopted { stale_execs: usize },
    /// Removed, with the reason.
    Removed { reason: String },
}

/// The report of [`DockerBackend::reconcile`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerReconcileReport {
    pub entries: Vec<(BerthContainer, ContainerReconcileAction)>,
}

impl ContainerReconcileReport {
    pub fn adopted(&self) -> impl Iterator<Item = &BerthContainer> {
        self.entries
            .iter()
            .filter(|(_, a)| matches!(a, ContainerReconcileAction::Adopted { .. }))
            .map(|(c, _)| c)
    }

    pub fn removed(&self) -> impl Iterator<Item = &BerthContainer> {
        self.entries
            .iter()
            .filter(|(_, a)| matches!(a, ContainerReconcileAction::Removed { .. }))
            .map(|(c, _)| c)
    }
}

impl DockerBackend {
    /// Brings a berth up: adopts its running container when the container
    /// matches the spec, else (re)creates and starts it. Idempotent.
    pub async fn up(&self, mut spec: ContainerSpec) -> Result<DockerBerth, DockerError> {
        let access = spec.work_access;
        let (image, adopted) = self.bring_up(&spec, access).await?;
        // Held by the berth from now on: a later bring-up (its container
        // gone) inspects the image as it is then.
        spec.checked_image = None;
        if adopted {
            tracing::debug!(container = %spec.container_name(), "adopted running berth container");
        }
        Ok(DockerBerth::new(self.clone(), spec, image, access, adopted))
    }

    /// What [`up`](Self::up) does, with `/work` mounted as `access`: the
    /// image the container runs, and whether the container was adopted.
    /// Records the container for [`DockerBerth::attach`] once it runs.
    pub(crate) async fn bring_up(
        &self,
        spec: &ContainerSpec,
        access: WorkAccess,
    ) -> Result<(ImageInfo, bool), DockerError> {
        {
            let spec = spec.clone();
            tokio::task::spawn_blocking(move || {
                spec.validate()?;
                spec.write_identity()?;
                spec.prepare_exec_sockets()
            })
            .await
            .map_err(|source| DockerError::Task {
                op: "validate the berth spec",
                source,
            })??;
        }
        // Inspected once per `up`: the engine's check just found it.
        let image = match &spec.checked_image {
            Some(checked) if checked.of == spec.image => checked.found.clone(),
            _ => self.ensure_image(&spec.image).await?,
        };
        let tools = tools_of(spec).await?;
        let has_helper = tools.as_ref().is_some_and(|t| t.has_helper());
        if let Some(why) = crate::egress_port::no_proxy_listener(spec, has_helper) {
            return Err(DockerError::InvalidSpec {
                project: spec.project.clone(),
                agent: spec.agent.clone(),
                message: why,
            });
        }
        let name = spec.container_name();
        let body = spec.container_body(&image, access, tools.as_ref().map(|t| t.dir.as_path()));

        // Until the container is known to run as the spec says, no process
        // attaches to it.
        spec.forget_container();
        // The wrapper's tools: the default image has them by its recipe, any
        // other image gets berth's; only an image that has neither (none
        // today) pays for the probe exec.
        let probe = !matches!(spec.image, ImageRef::DefaultAgent) && !spec.injects_tools();
        // Created first: a berth comes up from down far more often than it
        // is brought up again, and a container of that name, running or
        // not, answers 409 — then it is adopted when it matches the spec,
        // else replaced (`create_and_start`).
        let adopted = self
            .create_and_start(&name, body, &image, probe, spec.shell())
            .await?;
        // A container created now starts its agent as its main process's
        // child; an adopted one may have lost it (a command killed it).
        let has_agent = spec.exec_sockets().is_some() && has_helper;
        if has_agent
            && !adopted
            && let Some(dir) = spec.exec_sockets()
        {
            exec::agent::clear_unanswered(&dir);
        }
        if has_agent && adopted {
            let user = format!("{}:{}", spec.uid, spec.gid);
            let target = Target {
                docker: self.docker(),
                container: &name,
                user: &user,
                shell: spec.shell(),
            };
            // Without it commands still run, through Docker, and the first
            // of them starts it again.
            match exec::agent::start(&target).await {
                Ok(()) => {
                    if let Some(dir) = spec.exec_sockets() {
                        exec::agent::clear_unanswered(&dir);
                    }
                }
                Err(e) => {
                    tracing::warn!(container = %name, error = %e, "could not start the exec agent")
                }
            }
        }
        spec.record_container(access);
        Ok((image, adopted))
    }

    /// True when a running managed container named `name` matches `body`
    /// (and was adopted); removes a managed one that does not match.
    async fn adopt_if_matching(
        &self,
        name: &str,
        body: &ContainerCreateBody,
    ) -> Result<bool, DockerError> {
        let found = match self.docker().inspect_container(name, None).await {
            Ok(found) => found,
            Err(e) if is_not_found(&e) => return Ok(false),
            Err(source) => {
                return Err(DockerError::Api {
                    op: "inspect container",
                    target: name.to_string(),
                    source,
                });
            }
        };
        let labels = found
            .config
            .as_ref()
            .and_then(|c| c.labels.clone())
            .unwrap_or_default();
        let want = body.labels.clone().unwrap_or_default();
        if labels.get(MANAGED_LABEL).map(String::as_str) != Some("1")
            || labels.get(PROJECT_LABEL) != want.get(PROJECT_LABEL)
            || labels.get(AGENT_LABEL) != want.get(AGENT_LABEL)
        {
            return Err(DockerError::Foreign {
                name: name.to_string(),
            });
        }
        let running = found
            .state
            .as_ref()
            .and_then(|s| s.running)
            .unwrap_or(false);
        if running && labels.get(SPEC_LABEL) == want.get(SPEC_LABEL) {
            return Ok(true);
        }
        tracing::info!(
            container = name,
            running,
            "replacing berth container that does not match its spec"
        );
        self.remove(name).await?;
        Ok(false)
    }

    /// Creates and starts the container `name`; `true` when a running one
    /// of that name matched `body` and was adopted instead.
    async fn create_and_start(
        &self,
        name: &str,
        body: ContainerCreateBody,
        image: &ImageInfo,
        probe: bool,
        shell: &str,
    ) -> Result<bool, DockerError> {
        let api = |op: &'static str| {
            let name = name.to_string();
            move |source| DockerError::Api {
                op,
                target: name,
                source,
            }
        };
        let user = body.user.clone().unwrap_or_default();
        let idles_as_helper = idles_as_berths_helper(&body);
        let options = CreateContainerOptionsBuilder::default().name(name).build();
        match self
            .docker()
            .create_container(Some(options), body.clone())
            .await
        {
            Ok(_) => {}
            // It exists: brought up before, or by another berth process a
            // moment ago. Use it if it is what we would have made.
            Err(e) if is_conflict(&e) => {
                if self.adopt_if_matching(name, &body).await? {
                    return Ok(true);
                }
                let options = CreateContainerOptionsBuilder::default().name(name).build();
                self.docker()
                    .create_container(Some(options), body)
                    .await
                    .map_err(api("create container"))?;
            }
            Err(source) => return Err(api("create container")(source)),
        }
        match self
            .docker()
            .start_container(name, None::<StartContainerOptions>)
            .await
        {
            Ok(()) => {}
            Err(e) if status_of(&e) == Some(304) => {}
            Err(source) => {
                let _ = self.remove(name).await;
                return Err(api("start container")(source));
            }
        }
        // A container idling as the image's `sleep infinity` may stop at
        // once (an image without `sleep`): say so now. One idling as
        // berth's own helper (from berth's tools, never exiting on its own)
        // needs no inspect; if it stopped all the same, the first exec
        // finds the container not running and starts it again.
        if idles_as_helper && !probe {
            return Ok(false);
        }
        let state = self
            .docker()
            .inspect_container(name, None)
            .await
            .map_err(api("inspect container"))?
            .state
            .unwrap_or_default();
        if state.running != Some(true) {
            let detail = format!(
                "exit code {}, {}; the image must run `sleep infinity`",
                state.exit_code.unwrap_or_default(),
                state
                    .error
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "no error reported".to_string())
            );
            let _ = self.remove(name).await;
            return Err(DockerError::NotRunning {
                name: name.to_string(),
                detail,
            });
        }
        // The exec wrapper needs a few tools; say so now rather than at the
        // first timeout. The default image has them by its recipe, so only
        // images a project names pay for this exec.
        if !probe {
            return Ok(false);
        }
        let target = Target {
            docker: self.docker(),
            container: name,
            user: &user,
            shell,
        };
        let probe = CreateExecOptions {
            cmd: Some(vec![
                shell.to_string(),
                "-c".to_string(),
                PROBE_SCRIPT.to_string(),
            ]),
            user: Some(user.clone()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            ..Default::default()
        };
        let result = exec::run_plain(&target, probe, std::time::Duration::from_secs(30)).await;
        let failure = match result {
            Ok((Some(0), _)) => None,
            Ok((code, out)) => Some(format!(
                "{shell} with setsid, tr and kill is required ({}; exit {code:?})",
                String::from_utf8_lossy(&out).trim()
            )),
            Err(e) => Some(e.to_string()),
        };
        if let Some(message) = failure {
            let _ = self.remove(name).await;
            return Err(DockerError::UnsuitableImage {
                image: image.name.clone(),
                message,
            });
        }
        Ok(false)
    }

    /// Replaces the berth's container with one whose `/work` is mounted as
    /// `access`.
    pub(crate) async fn recreate(
        &self,
        spec: &ContainerSpec,
        image: &ImageInfo,
        access: WorkAccess,
    ) -> Result<(), SandboxError> {
        let name = spec.container_name();
        let tools = tools_of(spec).await?;
        let body = spec.container_body(image, access, tools.as_ref().map(|t| t.dir.as_path()));
        spec.forget_container();
        self.remove(&name).await?;
        self.create_and_start(&name, body, image, false, spec.shell())
            .await?;
        spec.record_container(access);
        tracing::info!(container = %name, access = super::spec::access_label(access), "recreated berth container");
        Ok(())
    }

    /// Removes the berth container of `project`/`agent` (killing what runs in
    /// it, with its anonymous volumes). `Ok(false)` when there was none.
    pub async fn down(&self, project: &str, agent: &str) -> Result<bool, DockerError> {
        self.down_named(container_name(project, agent)).await
    }

    /// Removes the container of `spec` (its instance, project and agent);
    /// `Ok(false)` when there was none.
    pub async fn down_spec(&self, spec: &ContainerSpec) -> Result<bool, DockerError> {
        spec.forget_container();
        self.down_named(spec.container_name()).await
    }

    async fn down_named(&self, name: String) -> Result<bool, DockerError> {
        match self.docker().inspect_container(&name, None).await {
            Ok(found) => {
                let managed = found
                    .config
                    .and_then(|c| c.labels)
                    .is_some_and(|l| l.get(MANAGED_LABEL).map(String::as_str) == Some("1"));
                if !managed {
                    return Err(DockerError::Foreign { name });
                }
            }
            Err(e) if is_not_found(&e) => return Ok(false),
            Err(source) => {
                return Err(DockerError::Api {
                    op: "inspect container",
                    target: name,
                    source,
                });
            }
        }
        self.remove(&name).await
    }

    /// Force-removes a container with its anonymous volumes; `Ok(false)` if it
    /// was already gone.
    async fn remove(&self, name: &str) -> Result<bool, DockerError> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        match self.docker().remove_container(name, Some(options)).await {
            Ok(()) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            // Already being removed by someone else.
            Err(e) if is_conflict(&e) => Ok(false),
            Err(source) => Err(DockerError::Api {
                op: "remove container",
                target: name.to_string(),
                source,
            }),
        }
    }

    /// Removes every berth container of `agent` in `project` that `worker`
    /// created (labelled [`WORKER_LABEL`]`=worker`), whatever its state
    /// directory: what a worker taking the agent over from a worker that
    /// died does first, so the dead worker's berth can act no more. Returns
    /// the names removed (none when there were none, or another process
    /// removed them first).
    pub async fn remove_worker_containers(
        &self,
        project: &str,
        agent: &str,
        worker: &str,
    ) -> Result<Vec<String>, DockerError> {
        let labels = vec![
            format!("{MANAGED_LABEL}=1"),
            format!("{PROJECT_LABEL}={project}"),
            format!("{AGENT_LABEL}={agent}"),
            format!("{WORKER_LABEL}={worker}"),
        ];
        let mut removed = Vec::new();
        for c in self.list_labelled(labels).await? {
            if self.remove(&c.id).await? {
                tracing::info!(container = %c.name, worker, agent, "removed a dead worker's container");
                removed.push(c.name);
            }
        }
        Ok(removed)
    }

    /// Every berth container on this engine (all states), optionally of one
    /// project.
    pub async fn list_berths(
        &self,
        project: Option<&str>,
    ) -> Result<Vec<BerthContainer>, DockerError> {
        self.list_berths_in(None, project).await
    }

    /// [`list_berths`](Self::list_berths) of one berth installation.
    pub async fn list_berths_in(
        &self,
        instance: Option<&str>,
        project: Option<&str>,
    ) -> Result<Vec<BerthContainer>, DockerError> {
        let mut labels = vec![format!("{MANAGED_LABEL}=1")];
        if let Some(p) = project {
            labels.push(format!("{PROJECT_LABEL}={p}"));
        }
        if let Some(i) = instance {
            labels.push(format!("{INSTANCE_LABEL}={i}"));
        }
        self.list_labelled(labels).await
    }

    /// The berth containers (all states) carrying every label of `labels`
    /// (`key=value` each).
    async fn list_labelled(&self, labels: Vec<String>) -> Result<Vec<BerthContainer>, DockerError> {
        let filters = HashMap::from([("label".to_string(), labels)]);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        let list = self
            .docker()
            .list_containers(Some(options))
            .await
            .map_err(|source| DockerError::Api {
                op: "list containers",
                target: format!("labelled {MANAGED_LABEL}=1"),
                source,
            })?;
        Ok(list
            .into_iter()
            .map(|c| {
                let labels = c.labels.unwrap_or_default();
                let label = |k: &str| labels.get(k).cloned().unwrap_or_default();
                BerthContainer {
                    // Names come back with a leading '/'.
                    name: c
                        .names
                        .and_then(|n| n.into_iter().next())
                        .map(|n| n.trim_start_matches('/').to_string())
                        .unwrap_or_default(),
                    id: c.id.unwrap_or_default(),
                    project: label(PROJECT_LABEL),
                    agent: label(AGENT_LABEL),
                    instance: label(INSTANCE_LABEL),
                    state: c.state.map(|s| s.to_string()).unwrap_or_default(),
                    worktree: label(WORKTREE_LABEL),
                }
            })
            .collect())
    }

    /// Reconciles every berth container on this engine with the berths that
    /// should exist: `live` holds each (project, agent) whose worktree exists.
    /// Running containers of live berths are adopted (and execs whose berth
    /// process died are killed); the rest are removed. `live` must be
    /// complete: a berth missing from it loses its container. A container that
    /// is not running is removed too, including one another process created a
    /// moment ago and has not started yet (that `up` then fails and is
    /// retried): run reconcile at start, before berths come up.
    pub async fn reconcile(
        &self,
        live: &BTreeSet<(String, String)>,
    ) -> Result<ContainerReconcileReport, DockerError> {
        self.reconcile_in(None, None, live).await
    }

    /// [`reconcile`](Self::reconcile) limited to one project's containers.
    pub async fn reconcile_project(
        &self,
        project: &str,
        live: &BTreeSet<(String, String)>,
    ) -> Result<ContainerReconcileReport, DockerError> {
        self.reconcile_in(None, Some(project), live).await
    }

    /// [`reconcile`](Self::reconcile) limited to the containers of one berth
    /// installation (those labelled with `instance`), optionally of one project.
    pub async fn reconcile_instance(
        &self,
        instance: &str,
        project: Option<&str>,
        live: &BTreeSet<(String, String)>,
    ) -> Result<ContainerReconcileReport, DockerError> {
        self.reconcile_in(Some(instance), project, live).await
    }

    async fn reconcile_in(
        &self,
        instance: Option<&str>,
        project: Option<&str>,
        live: &BTreeSet<(String, String)>,
    ) -> Result<ContainerReconcileReport, DockerError> {
        let mut report = ContainerReconcileReport::default();
        for c in self.list_berths_in(instance, project).await? {
            let reason = if c.project.is_empty() || c.agent.is_empty() {
                Some("its project or agent label is missing".to_string())
            } else if c.name != container_name_in(&c.instance, &c.project, &c.agent) {
                Some(format!(
                    "its name does not match its labels (expected {})",
                    container_name_in(&c.instance, &c.project, &c.agent)
                ))
            } else if c.state != "running" {
                Some(format!("it is not running ({})", c.state))
            } else if !live.contains(&(c.project.clone(), c.agent.clone())) {
                Some("its worktree no longer exists".to_string())
            } else {
                None
            };
            let action = match reason {
                Some(reason) => {
                    self.remove(&c.name).await?;
                    tracing::info!(container = %c.name, %reason, "reconcile removed berth container");
                    ContainerReconcileAction::Removed { reason }
                }
                None => {
                    let stale_execs = self.kill_stale_execs(&c.name).await?;
                    ContainerReconcileAction::Adopted { stale_execs }
                }
            };
            report.entries.push((c, action));
        }
        Ok(report)
    }

    /// Berth containers of every installation whose state directory no
    /// longer exists (deleted, or a temporary one removed): nothing will ever
    /// take them down. With `remove`, each is removed; the answer says which
    /// were. A container whose worktree still exists, whose state directory
    /// still exists (that state's own reconcile decides about it) or whose
    /// worktree label berth cannot read is never counted.
    pub async fn orphans(&self, remove: bool) -> Result<Vec<(BerthContainer, bool)>, DockerError> {
        let mut out = Vec::new();
        for c in self.list_berths_in(None, None).await? {
            let worktree = Path::new(&c.worktree);
            let Some(state) = state_dir_of_worktree(worktree) else {
                continue;
            };
            // `symlink_metadata`: a path that exists in any form is not gone.
            if worktree.symlink_metadata().is_ok() || state.symlink_metadata().is_ok() {
                continue;
            }
            let removed = if remove {
                self.remove(&c.name).await?;
                tracing::info!(container = %c.name, state = %state.display(), "removed an orphan berth container");
                true
            } else {
                false
            };
            out.push((c, removed));
        }
        Ok(out)
    }

    /// Kills running execs whose berth process is dead; returns how many.
    async fn kill_stale_execs(&self, name: &str) -> Result<usize, DockerError> {
        let api = |op: &'static str| {
            let name = name.to_string();
            move |source| DockerError::Api {
                op,
                target: name,
                source,
            }
        };
        let found = self
            .docker()
            .inspect_container(name, None)
            .await
            .map_err(api("inspect container"))?;
        let user = found
            .config
            .as_ref()
            .and_then(|c| c.user.clone())
            .unwrap_or_default();
        // A container with berth's tools runs berth's scripts under their shell.
        let injected = found
            .mounts
            .iter()
            .flatten()
            .any(|m| m.destination.as_deref() == Some(TOOLS_MOUNT));
        let shell = if injected {
            TOOLS_SHELL
        } else {
            exec::IMAGE_SHELL
        };
        let mut dead_owners: BTreeSet<String> = BTreeSet::new();
        let mut stale = 0;
        for id in found.exec_ids.unwrap_or_default() {
            let inspected = match self.docker().inspect_exec(&id).await {
                Ok(i) => i,
                Err(e) if is_not_found(&e) => continue,
                Err(source) => return Err(api("inspect exec in")(source)),
            };
            if inspected.running != Some(true) {
                continue;
            }
            let args = inspected
                .process_config
                .and_then(|p| p.arguments)
                .unwrap_or_default();
            if let Some(owner) = ExecOwner::from_arguments(&args)
                && owner.is_dead()
            {
                stale += 1;
                dead_owners.insert(owner.prefix);
            }
        }
        let target = Target {
            docker: self.docker(),
            container: name,
            user: &user,
            shell,
        };
        for prefix in dead_owners {
            exec::kill_by_token(&target, &prefix)
                .await
                .map_err(|e| DockerError::Upkeep {
                    op: "kill stale execs",
                    source: Box::new(e),
                })?;
        }
        Ok(stale)
    }
}

/// The tool set `spec` mounts (assembled off the async threads when missing).
async fn tools_of(spec: &ContainerSpec) -> Result<Option<crate::image::ToolSet>, DockerError> {
    let spec = spec.clone();
    tokio::task::spawn_blocking(move || spec.ensure_tools())
        .await
        .map_err(|source| DockerError::Task {
            op: "assemble berth's tools",
            source,
        })?
        .map_err(DockerError::from)
}

#[cfg(test)]
mod orphan_tests {
    use super::*;

    #[test]
    fn a_worktree_label_names_its_state_directory_only_in_berths_layout() {
        let cases: &[(&str, Option<&str>)] = &[
            ("/tmp/x/state/berths/demo/dev-1/dev-1", Some("/tmp/x/state")),
            ("/s/berths/p/a/a", Some("/s")),
            // Not the layout: nothing can be said.
            ("/tmp/x/state/other/demo/dev-1/dev-1", None),
            ("relative/berths/p/a/a", None),
            ("", None),
            ("/berths", None),
            ("/a/a", None),
        ];
        for (worktree, want) in cases {
            assert_eq!(
                state_dir_of_worktree(Path::new(worktree)),
                want.map(PathBuf::from),
                "{worktree}"
            );
        }
    }
}
