//! The Docker provider: mounted berths in one container per agent, and
//! runner berths as [`LocalProvider`](super::LocalProvider) opens them.
//!
//! The connection to the Docker engine is made on first need, not when the
//! provider is made: every CLI call opens an engine, and only those that
//! touch a mounted berth should pay for the connection — or fail when the
//! Docker engine is down. A failed connection is not remembered, so a later
//! call retries once the engine is back. An action in a berth that is up
//! attaches to its recorded container without a Docker call
//! ([`DockerBerth::attach`]), so only a command that runs contacts the
//! engine: a pending or refused action never does.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use super::runner::{close_runner, open_runner_blocking};
use super::{
    BerthBackend, BerthMode, BerthSpec, OpenedSandbox, OrphanContainer, ProviderError,
    ProviderResult, ReconciledContainer, SandboxProvider,
};
use crate::Sandbox;
use crate::docker::{
    ConnectOptions, ContainerReconcileAction, DockerBackend, DockerBerth, DockerConnection,
};
use crate::image::{CheckedImage, ImageRef};

/// Whether this run is CI, where a missing Docker engine fails instead of
/// falling back to the runner.
pub fn ci_requires_docker() -> bool {
    std::env::var("CI").as_deref() == Ok("true")
}

/// Opens runner berths on the host and mounted berths in Docker.
pub struct DockerProvider {
    connection: DockerConnection,
    /// A missing engine is an error even for `auto` (CI).
    strict: bool,
}

impl Default for DockerProvider {
    fn default() -> Self {
        DockerProvider::new()
    }
}

impl DockerProvider {
    /// Connects on first need; strict under `CI=true`.
    pub fn new() -> DockerProvider {
        DockerProvider {
            connection: DockerConnection::deferred(ConnectOptions::default()),
            strict: ci_requires_docker(),
        }
    }

    /// A provider over an engine already connected (tests, benchmarks).
    pub fn with_backend(backend: DockerBackend) -> DockerProvider {
        DockerProvider {
            connection: DockerConnection::connected(backend),
            strict: ci_requires_docker(),
        }
    }

    /// The Docker engine, connecting when not yet connected.
    pub async fn backend(&self) -> ProviderResult<DockerBackend> {
        Ok(self.connection.backend().await?)
    }

    /// Whether this provider has contacted the Docker engine yet.
    pub fn connected(&self) -> bool {
        self.connection.is_connected()
    }
}

#[async_trait::async_trait]
impl SandboxProvider for DockerProvider {
    async fn open(&self, spec: &BerthSpec) -> ProviderResult<OpenedSandbox> {
        match &spec.backend {
            BerthBackend::Runner(runner) => Ok(OpenedSandbox {
                sandbox: open_runner_blocking(runner).await?,
                created_container: None,
            }),
            BerthBackend::Mounted(container) => {
                let backend = self.backend().await?;
                let berth = backend.up(container.as_ref().clone()).await?;
                let created = (!berth.adopted()).then(|| berth.container_name().to_string());
                Ok(OpenedSandbox {
                    sandbox: Arc::new(berth),
                    created_container: created,
                })
            }
        }
    }

    /// A mounted berth attaches to the container its `up` recorded, without
    /// a Docker call; without a record (or with a `[sandbox]` changed since)
    /// it is brought up.
    async fn attach(&self, spec: &BerthSpec) -> ProviderResult<Arc<dyn Sandbox>> {
        if let BerthBackend::Mounted(container) = &spec.backend
            && let Some(berth) =
                DockerBerth::attach(self.connection.clone(), container.as_ref().clone())
        {
            return Ok(Arc::new(berth));
        }
        Ok(self.open(spec).await?.sandbox)
    }

    async fn close(&self, spec: &BerthSpec) -> ProviderResult<Option<String>> {
        match &spec.backend {
            BerthBackend::Runner(runner) => {
                close_runner(&spec.agent, runner).await;
                Ok(None)
            }
            BerthBackend::Mounted(container) => {
                let backend = self.backend().await?;
                let removed = backend.down_spec(container).await?;
                Ok(removed.then(|| container.container_name()))
            }
        }
    }

    async fn auto_mode(&self) -> ProviderResult<(BerthMode, Option<String>)> {
        match self.backend().await {
            Ok(_) => Ok((BerthMode::Mounted, None)),
            Err(e) if self.strict => Err(ProviderError::ModeUnavailable {
                mode: "mounted",
                why: format!("CI=true requires the Docker engine: {e}"),
            }),
            Err(e) => Ok((BerthMode::Runner, Some(format!("no container: {e}")))),
        }
    }

    async fn check(
        &self,
        mode: BerthMode,
        image: &ImageRef,
    ) -> ProviderResult<Option<CheckedImage>> {
        match mode {
            BerthMode::Runner => Ok(None),
            BerthMode::Mounted => {
                let backend = self.backend().await?;
                let found = backend.ensure_image(image).await?;
                Ok(Some(CheckedImage {
                    of: image.clone(),
                    found,
                }))
            }
        }
    }

    async fn reconcile(
        &self,
        instance: &str,
        projects: &[String],
        live: &BTreeSet<(String, String)>,
    ) -> ProviderResult<Vec<ReconciledContainer>> {
        let backend = self.backend().await?;
        let mut entries = Vec::new();
        for project in projects {
            let report = backend
                .reconcile_instance(instance, Some(project), live)
                .await?;
            entries.extend(report.entries);
        }
        Ok(entries
            .into_iter()
            .map(|(c, action)| match action {
                ContainerReconcileAction::Adopted { stale_execs } => ReconciledContainer {
                    container: c.name,
                    project: c.project,
                    agent: c.agent,
                    adopted: true,
                    stale_execs_killed: stale_execs,
                    reason: None,
                },
                ContainerReconcileAction::Removed { reason } => ReconciledContainer {
                    container: c.name,
                    project: c.project,
                    agent: c.agent,
                    adopted: false,
                    stale_execs_killed: 0,
                    reason: Some(reason),
                },
            })
            .collect())
    }

    async fn remove_worker_berths(
        &self,
        project: &str,
        agent: &str,
        worker: &str,
    ) -> ProviderResult<Vec<String>> {
        let backend = self.backend().await?;
        Ok(backend
            .remove_worker_containers(project, agent, worker)
            .await?)
    }

    async fn orphans(&self, remove: bool) -> ProviderResult<Vec<OrphanContainer>> {
        let backend = self.backend().await?;
        Ok(backend
            .orphans(remove)
            .await?
            .into_iter()
            .map(|(c, removed)| OrphanContainer {
                container: c.name,
                project: c.project,
                agent: c.agent,
                worktree: PathBuf::from(c.worktree),
                removed,
            })
            .collect())
    }
}
