//! A running Docker berth: the [`Sandbox`] of one agent's container.
//!
//! Two ways to get one: [`DockerBackend::up`] brings the berth up (validates
//! the spec, resolves the image, adopts or creates the container), and
//! [`DockerBerth::attach`] names the container `up` recorded
//! ([`record`](super::record)) without a Docker call — what every command
//! after `up` uses. The engine is contacted only when a command runs, and an
//! attached berth whose container has gone brings it up again then.

use std::sync::Arc;

use berth_policy::{Frame, PathMap};
use tokio::sync::{OnceCell, RwLock};

use super::exec::agent::{self, AgentRun};
use super::exec::{self, Run, Target};
use super::{ContainerSpec, DockerBackend, DockerConnection, DockerError};
use crate::confined_files::ConfinedFiles;
use crate::egress_port::{EGRESS_PORT, EgressServing, container_listener};
use crate::image::ImageInfo;
use crate::{
    AccessEnforcement, BerthMode, ExecOutcome, ExecRequest, OutputSink, Sandbox, SandboxError,
    WorkAccess,
};

/// One agent's container, brought up (or adopted) by [`DockerBackend::up`],
/// or attached to by [`DockerBerth::attach`].
#[derive(Debug)]
pub struct DockerBerth {
    connection: DockerConnection,
    spec: ContainerSpec,
    /// Known after `up`; resolved when first needed after `attach`.
    image: OnceCell<ImageInfo>,
    name: String,
    user: String,
    frame: Frame,
    path_map: PathMap,
    files: Arc<ConfinedFiles>,
    /// Execs hold it shared; changing the access recreates the container and
    /// holds it exclusively, so no exec straddles the swap.
    access: RwLock<WorkAccess>,
    adopted: bool,
    /// The exec agent's socket directory, when the berth has one.
    exec_sockets: Option<std::path::PathBuf>,
}

impl DockerBerth {
    pub(crate) fn new(
        backend: DockerBackend,
        spec: ContainerSpec,
        image: ImageInfo,
        access: WorkAccess,
        adopted: bool,
    ) -> DockerBerth {
        DockerBerth::with(
            DockerConnection::connected(backend),
            spec,
            OnceCell::new_with(Some(image)),
            access,
            adopted,
        )
    }

    /// The berth whose container `up` recorded for `spec`, without asking
    /// Docker: no validation, no image inspect, no adoption. `None` when
    /// there is no record, or the spec has changed since it was written
    /// (then bring it up). The connection is made when a command runs; a
    /// container removed since is brought up again then.
    pub fn attach(connection: DockerConnection, spec: ContainerSpec) -> Option<DockerBerth> {
        let access = spec.recorded_access()?;
        Some(DockerBerth::with(
            connection,
            spec,
            OnceCell::new(),
            access,
            true,
        ))
    }

    fn with(
        connection: DockerConnection,
        spec: ContainerSpec,
        image: OnceCell<ImageInfo>,
        access: WorkAccess,
        adopted: bool,
    ) -> DockerBerth {
        DockerBerth {
            name: spec.container_name(),
            user: format!("{}:{}", spec.uid, spec.gid),
            frame: spec.frame(),
            path_map: spec.path_map(),
            files: Arc::new(spec.confined_files()),
            access: RwLock::new(access),
            // The agent is berth-helper in berth's tools: without it, every
            // command goes through Docker.
            exec_sockets: spec
                .exec_sockets()
                .filter(|_| berth_worktrees::locate_helper().is_ok()),
            connection,
            spec,
            image,
            adopted,
        }
    }

    /// Where this berth's Docker execs run.
    fn target<'a>(&'a self, backend: &'a DockerBackend) -> Target<'a> {
        Target {
            docker: backend.docker(),
            container: &self.name,
            user: &self.user,
            shell: self.spec.shell(),
        }
    }

    /// An allow-list berth's proxy listener in the container's network
    /// namespace, served for one exec (see [`crate::egress_port`]). `None`
    /// (the port stays closed: the command's connections are refused) when
    /// the berth has no proxy or the listener cannot be made, which is
    /// logged.
    async fn egress_door(&self, backend: &DockerBackend) -> Option<EgressServing> {
        let hook = self.spec.egress.as_ref()?;
        let made = if hook
            .container_door
            .through_exec_agent(crate::identity::current_uid())
        {
            match &self.exec_sockets {
                Some(dir) => agent::proxy_listener(&self.target(backend), dir, EGRESS_PORT).await,
                None => Err(SandboxError::Backend {
                    op: "make the proxy's listener in the container",
                    message:
                        "berth is not root and the berth has no exec agent ([sandbox] exec_agent)"
                            .to_string(),
                }),
            }
        } else {
            let pid = match backend.docker().inspect_container(&self.name, None).await {
                Ok(c) => c.state.and_then(|s| s.pid).filter(|p| *p > 0)?,
                Err(_) => return None,
            };
            let pid = u32::try_from(pid).ok()?;
            match tokio::task::spawn_blocking(move || container_listener(pid)).await {
                Ok(made) => made,
                Err(e) => Err(SandboxError::Backend {
                    op: "make the proxy's listener in the container",
                    message: e.to_string(),
                }),
            }
        };
        let listener = match made {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(container = %self.name, error = %e, "egress: no proxy listener in the container");
                return None;
            }
        };
        match hook.port.serve(listener) {
            Ok(serving) => Some(serving),
            Err(e) => {
                tracing::warn!(container = %self.name, error = %e, "egress: the container's proxy is not served");
                None
            }
        }
    }

    /// Ends an exec of the agent that did not settle (its deadline not
    /// confirmed, or its connection lost): kills what may still run of it
    /// by its token through Docker, and for a lost one asks Docker what
    /// happened since `lost_since`.
    async fn kill_unsettled(
        &self,
        token: &str,
        outcome: ExecOutcome,
        lost_since: Option<std::time::SystemTime>,
    ) -> Result<ExecOutcome, SandboxError> {
        let backend = self.connection.backend().await?;
        let target = self.target(&backend);
        exec::kill_by_token(&target, token).await?;
        Ok(match lost_since {
            Some(since) => agent::explain_lost(&target, outcome, since).await,
            None => outcome,
        })
    }

    /// The container's name.
    pub fn container_name(&self) -> &str {
        &self.name
    }

    pub fn spec(&self) -> &ContainerSpec {
        &self.spec
    }

    /// The image the container runs, once known (after `up`, or once an
    /// attached berth needed it).
    pub fn image(&self) -> Option<&ImageInfo> {
        self.image.get()
    }

    /// The image, resolved now when not known yet.
    async fn image_with(&self, backend: &DockerBackend) -> Result<ImageInfo, DockerError> {
        self.image
            .get_or_try_init(|| backend.ensure_image(&self.spec.image))
            .await
            .cloned()
    }

    /// Whether `up` found this container running and took it over (always,
    /// for an attached berth).
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// How `/work` is mounted now.
    pub async fn work_access(&self) -> WorkAccess {
        *self.access.read().await
    }

    /// The engine, connected when a command first needed it.
    pub fn connection(&self) -> &DockerConnection {
        &self.connection
    }
}

#[async_trait::async_trait]
impl Sandbox for DockerBerth {
    fn kind(&self) -> BerthMode {
        BerthMode::Mounted
    }

    fn frame(&self) -> &Frame {
        &self.frame
    }

    fn path_map(&self) -> &PathMap {
        &self.path_map
    }

    /// On the host, beneath each mount's root: a link the agent made
    /// points, for the host, at the host, so nothing is followed out of a
    /// mount; absolute targets are read as container paths.
    fn files(&self) -> Arc<ConfinedFiles> {
        Arc::clone(&self.files)
    }

    async fn exec(
        &self,
        request: ExecRequest,
        sink: Option<OutputSink>,
    ) -> Result<ExecOutcome, SandboxError> {
        request.validate(self.frame.project_root())?;
        // /work is the worktree on this host: a missing directory is a typed
        // error, as in the runner, rather than Docker's exit 126.
        if let Some(host) = self.path_map.to_host(&request.cwd)
            && !host.is_dir()
        {
            return Err(SandboxError::MissingCwd {
                cwd: request.cwd.clone(),
                host: Some(host),
            });
        }
        // After the request's own: the settings that keep repository
        // configuration from starting programs, and the agent's identity.
        let mut request = request;
        request.env.extend(berth_confine::git_env::git_environment(
            self.spec.git_identity.as_ref(),
        ));
        let access = self.access.read().await;
        // An allow-list berth's proxy, served for this exec whichever path
        // runs it (finding the container's namespace asks Docker).
        let egress = match &self.spec.egress {
            Some(_) => {
                let backend = self.connection.backend().await?;
                self.egress_door(&backend).await
            }
            None => None,
        };
        // The exec agent first: no Docker call at all when it answers
        // (but for an allow-list berth's proxy above).
        let token = exec::next_token(request.action.as_deref());
        let mut agent_missing = false;
        let (request, sink) = match &self.exec_sockets {
            Some(dir) => {
                let through = agent::AgentExec {
                    dir,
                    token: &token,
                    argv: exec::program_argv(&request.program),
                    fallback_shell: (self.spec.shell() != exec::IMAGE_SHELL)
                        .then(|| self.spec.shell().to_string()),
                };
                match agent::run(through, request, sink).await? {
                    AgentRun::Done(outcome) => return Ok(outcome),
                    AgentRun::Unconfirmed(outcome) => {
                        return self.kill_unsettled(&token, outcome, None).await;
                    }
                    AgentRun::Lost(outcome, since) => {
                        return self.kill_unsettled(&token, outcome, Some(since)).await;
                    }
                    AgentRun::Unanswered(request, sink) => {
                        agent_missing = true;
                        (request, sink)
                    }
                }
            }
            None => (request, sink),
        };
        let backend = self.connection.backend().await?;
        let target = self.target(&backend);
        if agent_missing {
            // For the next command; this one runs through Docker.
            if let Err(e) = agent::start(&target).await {
                tracing::debug!(container = %self.name, error = %e, "could not start the exec agent");
            }
        }
        let (request, sink) = match exec::run(&target, request, sink).await? {
            Run::Done(outcome) => return Ok(outcome),
            Run::ContainerGone(request, sink) => (request, sink),
        };
        drop(egress);
        // Taken down through berth (its record forgotten): say so.
        if self.spec.recorded_access().is_none() {
            return Err(exec::container_gone(&self.name));
        }
        // Removed behind berth's back (or by a reboot): bring it up again,
        // as it was, and run the command there.
        tracing::warn!(container = %self.name, "berth container is gone; bringing it up again");
        let (image, _) = backend.bring_up(&self.spec, *access).await?;
        let _ = self.image.set(image);
        let _egress = self.egress_door(&backend).await;
        match exec::run(&target, request, sink).await? {
            Run::Done(outcome) => Ok(outcome),
            Run::ContainerGone(..) => Err(exec::container_gone(&self.name)),
        }
    }

    async fn cancel(&self, action: &str) -> Result<bool, SandboxError> {
        let backend = self.connection.backend().await?;
        super::cancel::kill_by_action(&self.target(&backend), action).await
    }

    /// Recreates the container with `/work` mounted as asked (same name and
    /// labels, but the access label). Processes running in the old container
    /// end with it; `/tmp` starts empty.
    async fn set_work_access(&self, access: WorkAccess) -> Result<AccessEnforcement, SandboxError> {
        // Already so: no need to wait for the commands running now (a write
        // lock would wait for every one of them to end).
        if *self.access.read().await == access {
            return Ok(AccessEnforcement::Enforced);
        }
        let mut current = self.access.write().await;
        if *current != access {
            let backend = self.connection.backend().await?;
            let image = self.image_with(&backend).await?;
            backend.recreate(&self.spec, &image, access).await?;
            *current = access;
        }
        Ok(AccessEnforcement::Enforced)
    }
}
