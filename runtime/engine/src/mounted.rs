//! Mounted berths: the provider that opens one Docker container per agent
//! (and the runner, for berths that ask for it).
//!
//! The connection to the Docker engine is made on first need, not when the
//! engine opens: every CLI call opens an engine, and only those that touch a
//! mounted berth should pay for the connection — or fail when the Docker
//! engine is down. A failed connection is not remembered, so a later call
//! retries once the engine is back. An action in a berth that is up attaches
//! to its recorded container without a Docker call
//! ([`DockerBerth::attach`]), so only a command that runs contacts the
//! engine: a pending or refused action never does.
//!
//! The project's `[sandbox]` settings become the container's spec here; the
//! decision has already been made in the container's frame, and the berth's
//! path map translates only afterwards (the sandbox crate does both).

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use berth_sandbox::Sandbox;
use berth_sandbox::docker::{
    ConnectOptions, ContainerReconcileAction, ContainerSpec, DockerBackend, DockerBerth,
    DockerConnection, ExtraMount, Network, ResourceLimits,
};
use berth_sandbox::image::ImageRef;

use crate::berths::{
    BerthSpec, OpenedSandbox, OrphanContainer, ReconciledContainer, SandboxProvider,
};
use crate::config::{BerthMode, NetworkConfig, NetworkMode, ProjectConfig};
use crate::error::{EngineError, Result};

/// Docker's default network, where `[sandbox.network] mode = "open"` puts a
/// container unless `docker_network` names another.
const DEFAULT_BRIDGE: &str = "bridge";

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
    pub async fn backend(&self) -> Result<DockerBackend> {
        Ok(self.connection.backend().await?)
    }

    /// Whether this provider has contacted the Docker engine yet.
    pub fn connected(&self) -> bool {
        self.connection.is_connected()
    }
}

/// The image a project names: "" is the default agent image.
pub fn image_of(config: &ProjectConfig) -> ImageRef {
    match config.sandbox.image.trim() {
        "" => ImageRef::DefaultAgent,
        name => ImageRef::Named(name.to_string()),
    }
}

/// A container's network from `[sandbox.network]`: `none` is Docker's
/// `none` (only loopback), `open` the default bridge or `docker_network`.
fn container_network(network: &NetworkConfig) -> Network {
    match (network.mode, network.docker_network.as_str()) {
        (NetworkMode::None, _) => Network::None,
        (NetworkMode::Open, "") => Network::Named(DEFAULT_BRIDGE.to_string()),
        (NetworkMode::Open, name) => Network::Named(name.to_string()),
    }
}

/// The container spec of a berth, from the project's `[sandbox]` settings.
pub fn container_spec(spec: &BerthSpec) -> ContainerSpec {
    let s = &spec.config.sandbox;
    let mut c = ContainerSpec::new(
        &spec.project,
        &spec.agent,
        &spec.worktree,
        &spec.agent_repo,
        &spec.forge_objects,
    );
    c.instance = spec.instance.clone();
    c.image = image_of(&spec.config);
    c.uid = spec.uid;
    c.gid = spec.uid;
    c.identity_dir = Some(spec.identity_dir.clone());
    c.limits = ResourceLimits {
        memory_bytes: i64::try_from(s.memory_mb.saturating_mul(1 << 20)).unwrap_or(i64::MAX),
        cpus: s.cpus,
        pids: i64::try_from(s.pids).unwrap_or(i64::MAX),
        tmp_bytes: s.tmp_mb.saturating_mul(1 << 20),
        tmp_inodes: s.tmp_inodes,
        home_bytes: s.home_mb.saturating_mul(1 << 20),
        home_inodes: s.home_inodes,
    };
    c.network = container_network(&s.network);
    c.git_identity = crate::git::agent_git_identity(&spec.agent);
    c.read_only_root = s.read_only_root;
    // The project's extra roots are in scope in the runner; in a container
    // they are visible only when mounted, at the same path.
    c.extra_mounts = spec
        .config
        .scope
        .extra_roots
        .iter()
        .map(|r| ExtraMount {
            host: PathBuf::from(r),
            target: r.clone(),
            read_only: false,
            in_scope: true,
        })
        .collect();
    // Declared toolchains read-only and caches read-write, at their own
    // paths (outside the policy's scope: they are not the project).
    let declared = s
        .toolchains
        .iter()
        .map(|d| (d, true))
        .chain(s.caches.iter().map(|d| (d, false)));
    c.extra_mounts
        .extend(declared.map(|(dir, read_only)| ExtraMount {
            host: PathBuf::from(&dir.path),
            target: dir.path.clone(),
            read_only,
            in_scope: false,
        }));
    // The variables they carry, and their programs after the image's PATH.
    let declared = crate::declared_dirs::declared_env(s);
    c.env.extend(declared.vars);
    c.path_append = declared.path_append;
    c
}

#[async_trait::async_trait]
impl SandboxProvider for DockerProvider {
    async fn open(&self, spec: &BerthSpec) -> Result<OpenedSandbox> {
        match spec.mode {
            BerthMode::Runner => Ok(OpenedSandbox {
                sandbox: crate::berths::open_runner(spec)?,
                created_container: None,
            }),
            BerthMode::Mounted => {
                let backend = self.backend().await?;
                let berth = backend.up(container_spec(spec)).await?;
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
    async fn attach(&self, spec: &BerthSpec) -> Result<Arc<dyn Sandbox>> {
        if spec.mode == BerthMode::Mounted
            && let Some(berth) = DockerBerth::attach(self.connection.clone(), container_spec(spec))
        {
            return Ok(Arc::new(berth));
        }
        Ok(self.open(spec).await?.sandbox)
    }

    async fn close(&self, spec: &BerthSpec) -> Result<Option<String>> {
        match spec.mode {
            BerthMode::Runner => Ok(None),
            BerthMode::Mounted => {
                let backend = self.backend().await?;
                let c = container_spec(spec);
                let removed = backend.down_spec(&c).await?;
                Ok(removed.then(|| c.container_name()))
            }
        }
    }

    async fn auto_mode(&self) -> Result<(BerthMode, Option<String>)> {
        match self.backend().await {
            Ok(_) => Ok((BerthMode::Mounted, None)),
            Err(e) if self.strict => Err(EngineError::ModeUnavailable {
                mode: "mounted",
                why: format!("CI=true requires the Docker engine: {e}"),
            }),
            Err(e) => Ok((BerthMode::Runner, Some(format!("no container: {e}")))),
        }
    }

    async fn check(&self, mode: BerthMode, config: &ProjectConfig) -> Result<()> {
        match mode {
            BerthMode::Runner => Ok(()),
            BerthMode::Mounted => {
                let backend = self.backend().await?;
                backend.ensure_image(&image_of(config)).await?;
                Ok(())
            }
        }
    }

    async fn reconcile(
        &self,
        instance: &str,
        projects: &[String],
        live: &BTreeSet<(String, String)>,
    ) -> Result<Vec<ReconciledContainer>> {
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

    async fn orphans(&self, remove: bool) -> Result<Vec<OrphanContainer>> {
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

#[cfg(test)]
mod network_tests {
    use super::*;

    #[test]
    fn the_network_table_names_the_containers_network() {
        let parse = |t: &str| {
            ProjectConfig::parse(t, "berth.toml")
                .unwrap()
                .sandbox
                .network
        };
        assert_eq!(container_network(&parse("")), Network::None);
        assert_eq!(
            container_network(&parse("[sandbox.network]\nmode = \"open\"\n")),
            Network::Named("bridge".into())
        );
        assert_eq!(
            container_network(&parse(
                "[sandbox.network]\nmode = \"open\"\ndocker_network = \"br0\"\n"
            )),
            Network::Named("br0".into())
        );
        assert_eq!(
            container_network(&parse("[sandbox]\nnetwork = \"br0\"\n")),
            Network::Named("br0".into())
        );
        assert_eq!(
            container_network(&parse("[sandbox]\nnetwork = \"none\"\n")),
            Network::None
        );
    }
}
