//! A running Docker berth: the [`Sandbox`] of one agent's container.

use std::sync::Arc;

use berth_policy::{Frame, PathMap};
use tokio::sync::RwLock;

use super::exec::{self, Target};
use super::{BerthSpec, DockerBackend};
use crate::confined_files::ConfinedFiles;
use crate::image::ImageInfo;
use crate::{
    AccessEnforcement, ExecOutcome, ExecRequest, OutputSink, Sandbox, SandboxError, SandboxKind,
    WorkAccess,
};

/// One agent's container, brought up (or adopted) by [`DockerBackend::up`].
#[derive(Debug)]
pub struct DockerBerth {
    backend: DockerBackend,
    spec: BerthSpec,
    image: ImageInfo,
    name: String,
    user: String,
    frame: Frame,
    path_map: PathMap,
    files: Arc<ConfinedFiles>,
    /// Execs hold it shared; changing the access recreates the container and
    /// holds it exclusively, so no exec straddles the swap.
    access: RwLock<WorkAccess>,
    adopted: bool,
}

impl DockerBerth {
    pub(crate) fn new(
        backend: DockerBackend,
        spec: BerthSpec,
        image: ImageInfo,
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
            backend,
            spec,
            image,
            adopted,
        }
    }

    /// The container's name.
    pub fn container_name(&self) -> &str {
        &self.name
    }

    pub fn spec(&self) -> &BerthSpec {
        &self.spec
    }

    /// The image the container runs.
    pub fn image(&self) -> &ImageInfo {
        &self.image
    }

    /// Whether `up` found this container running and took it over.
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// How `/work` is mounted now.
    pub async fn work_access(&self) -> WorkAccess {
        *self.access.read().await
    }

    pub fn backend(&self) -> &DockerBackend {
        &self.backend
    }
}

#[async_trait::async_trait]
impl Sandbox for DockerBerth {
    fn kind(&self) -> SandboxKind {
        SandboxKind::Docker
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
        let _access = self.access.read().await;
        let target = Target {
            docker: self.backend.docker(),
            container: &self.name,
            user: &self.user,
        };
        exec::run(&target, request, sink).await
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
            self.backend
                .recreate(&self.spec, &self.image, access)
                .await?;
            *current = access;
        }
        Ok(AccessEnforcement::Enforced)
    }
}
