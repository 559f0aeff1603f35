//! Providers: how a berth's sandbox is brought up, attached to, and taken
//! down, behind one trait the engine holds ([`SandboxProvider`]).
//!
//! The engine translates a project's settings into a [`BerthSpec`] once —
//! the runner's whole [`RunnerConfig`](crate::RunnerConfig) or a container's
//! whole [`ContainerSpec`] — and a provider opens exactly that, as codex's
//! sandbox manager runs a transformed request as-is: nothing here reads
//! `berth.toml`, and nothing in the engine asks which backend it holds.
//! [`LocalProvider`] opens runner berths only; [`DockerProvider`] opens both
//! (its connection to the Docker engine is made on first need).

mod docker;
mod runner;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::docker::{ContainerSpec, DockerError};
use crate::{RunnerConfig, Sandbox, SandboxError};

pub use docker::{DockerProvider, ci_requires_docker};
pub use runner::open_runner;

/// Where a berth runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BerthMode {
    /// Processes on the host in the worktree: no container boundary.
    #[default]
    Runner,
    /// A Docker container per agent, the worktree at `/work`.
    Mounted,
}

impl BerthMode {
    pub fn as_str(self) -> &'static str {
        match self {
            BerthMode::Runner => "runner",
            BerthMode::Mounted => "mounted",
        }
    }

    pub fn parse(s: &str) -> Option<BerthMode> {
        match s {
            "runner" => Some(BerthMode::Runner),
            "mounted" => Some(BerthMode::Mounted),
            _ => None,
        }
    }

    /// Whether a berth of this mode runs as a uid of its own, which owns its
    /// repository and worktree: a container always does; a runner berth only
    /// when berth is root (otherwise its user namespace maps the user's uid).
    pub fn owns_uid(self) -> bool {
        match self {
            BerthMode::Mounted => true,
            BerthMode::Runner => crate::identity::current_uid() == 0,
        }
    }
}

/// Everything a provider needs to open one agent's berth, decided by the
/// engine once.
#[derive(Debug, Clone)]
pub struct BerthSpec {
    pub project: String,
    pub agent: String,
    pub backend: BerthBackend,
}

/// The backend's own spec.
#[derive(Debug, Clone)]
pub enum BerthBackend {
    Runner(Box<RunnerBerth>),
    Mounted(Box<ContainerSpec>),
}

impl BerthSpec {
    pub fn mode(&self) -> BerthMode {
        match self.backend {
            BerthBackend::Runner(_) => BerthMode::Runner,
            BerthBackend::Mounted(_) => BerthMode::Mounted,
        }
    }
}

/// A runner berth: its runner's configuration and what bring-up and
/// take-down do around it.
#[derive(Debug, Clone)]
pub struct RunnerBerth {
    /// The runner as every exec uses it: worktree, home, private `/tmp`,
    /// the berth's uid, limits, network, cgroup.
    pub config: RunnerConfig,
    /// The first part of the berth's exec cgroups
    /// ([`cgroup_scope`]), whose execs `close` kills.
    pub cgroup_scope: String,
    /// Bring-up gives the whole home to the berth's uid (it keeps what
    /// commands wrote before a `down --keep-worktree`, perhaps as root);
    /// an attach after `up` does not walk it again.
    pub claim_home: bool,
}

/// An opened sandbox, and whether opening it created a container.
pub struct OpenedSandbox {
    pub sandbox: Arc<dyn Sandbox>,
    pub created_container: Option<String>,
}

/// What reconcile did with one berth container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReconciledContainer {
    pub container: String,
    pub project: String,
    pub agent: String,
    /// Kept: the berth is up and its worktree exists.
    pub adopted: bool,
    /// Commands whose berth process had died, killed inside the container.
    pub stale_execs_killed: usize,
    /// Why it was removed (when not adopted).
    pub reason: Option<String>,
}

/// A berth container whose state directory is gone: nothing will ever take
/// it down but `berth reconcile --orphans`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OrphanContainer {
    pub container: String,
    pub project: String,
    pub agent: String,
    /// The worktree its label names (gone, with its state directory).
    pub worktree: PathBuf,
    /// Whether it was removed now.
    pub removed: bool,
}

/// Errors of bringing a berth up or down.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// This provider cannot open `mode` here; `why` says what to do.
    #[error("{mode} mode is not available: {why}")]
    ModeUnavailable { mode: &'static str, why: String },
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A berth directory without a parent or a name (never one berth made).
    #[error("{} is not a berth directory under the state directory", path.display())]
    NotBerthDir { path: PathBuf },
    /// A step run off the async threads panicked or was cancelled.
    #[error("{op}: {source}")]
    Interrupted {
        op: &'static str,
        #[source]
        source: crate::blocking_work::BlockingWorkError,
    },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(transparent)]
    Docker(#[from] DockerError),
}

pub type ProviderResult<T> = std::result::Result<T, ProviderError>;

/// Opens and closes sandboxes.
#[async_trait::async_trait]
pub trait SandboxProvider: Send + Sync {
    /// Opens (or adopts) the sandbox of a berth: its bring-up.
    async fn open(&self, spec: &BerthSpec) -> ProviderResult<OpenedSandbox>;
    /// The sandbox of a berth that is up, as cheaply as the provider can
    /// name it: what every action after `berth up` runs in. A provider that
    /// cannot attach opens.
    async fn attach(&self, spec: &BerthSpec) -> ProviderResult<Arc<dyn Sandbox>> {
        Ok(self.open(spec).await?.sandbox)
    }
    /// Takes down what `open` brought up: a container is removed (and
    /// named in the answer); a runner berth's running execs are killed and
    /// its private `/tmp` emptied.
    async fn close(&self, spec: &BerthSpec) -> ProviderResult<Option<String>>;
    /// The mode of `sandbox.mode = "auto"`, with a note for the person when
    /// it is a fallback.
    async fn auto_mode(&self) -> ProviderResult<(BerthMode, Option<String>)> {
        Ok((BerthMode::Runner, None))
    }
    /// Fails when `mode` cannot open with `image`, before anything is
    /// provisioned for it. The image as found, when the check had to find
    /// it (mounted mode): the caller puts it in the spec it opens with
    /// ([`ContainerSpec::checked_image`](crate::docker::ContainerSpec::checked_image)),
    /// so bring-up does not inspect it again.
    async fn check(
        &self,
        mode: BerthMode,
        _image: &crate::image::ImageRef,
    ) -> ProviderResult<Option<crate::image::CheckedImage>> {
        match mode {
            BerthMode::Runner => Ok(None),
            BerthMode::Mounted => Err(mounted_unavailable()),
        }
    }
    /// Brings the containers of `projects` in line with the berths that are
    /// up: `live` holds each (project, agent) up in mounted mode whose
    /// worktree exists. Containers of other projects are not touched (another
    /// state directory may own them).
    async fn reconcile(
        &self,
        _instance: &str,
        _projects: &[String],
        _live: &BTreeSet<(String, String)>,
    ) -> ProviderResult<Vec<ReconciledContainer>> {
        Ok(Vec::new())
    }
    /// Berth containers (of any state directory) whose state directory no
    /// longer exists; removed with `remove`.
    async fn orphans(&self, _remove: bool) -> ProviderResult<Vec<OrphanContainer>> {
        Ok(Vec::new())
    }
    /// Removes the containers `worker` made for `agent` of `project` (a
    /// worker that died, whose agent another takes over); the names
    /// removed. Nothing without a container engine.
    async fn remove_worker_berths(
        &self,
        _project: &str,
        _agent: &str,
        _worker: &str,
    ) -> ProviderResult<Vec<String>> {
        Ok(Vec::new())
    }
}

/// The provider without Docker: runner berths only.
#[derive(Debug, Default)]
pub struct LocalProvider;

#[async_trait::async_trait]
impl SandboxProvider for LocalProvider {
    async fn open(&self, spec: &BerthSpec) -> ProviderResult<OpenedSandbox> {
        match &spec.backend {
            BerthBackend::Runner(runner) => Ok(OpenedSandbox {
                sandbox: runner::open_runner_blocking(runner).await?,
                created_container: None,
            }),
            BerthBackend::Mounted(_) => Err(mounted_unavailable()),
        }
    }

    async fn close(&self, spec: &BerthSpec) -> ProviderResult<Option<String>> {
        match &spec.backend {
            BerthBackend::Runner(runner) => {
                runner::close_runner(&spec.agent, runner).await;
                Ok(None)
            }
            BerthBackend::Mounted(_) => Err(mounted_unavailable()),
        }
    }
}

pub(crate) fn mounted_unavailable() -> ProviderError {
    ProviderError::ModeUnavailable {
        mode: "mounted",
        why: "this engine was opened without the Docker provider; use `--mode runner` (or sandbox.mode = \"runner\" in berth.toml)".into(),
    }
}

/// The mark of one state directory on its containers and exec cgroups: a
/// hash of its path, so two state directories on one host (two users,
/// parallel tests) never share a container name nor reconcile or kill each
/// other's.
pub fn instance_of(state_root: &std::path::Path) -> String {
    let canonical = std::fs::canonicalize(state_root).unwrap_or_else(|_| state_root.to_path_buf());
    // FNV-1a: stable across processes and builds, which std's hasher is not.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canonical.as_os_str().as_encoded_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:012x}", h >> 16)
}

/// The first part of a runner berth's exec cgroups
/// (`berth/<project>@<instance>/<agent>/<action>`): the state directory's
/// mark keeps one state directory's `down` from killing another's execs.
pub fn cgroup_scope(instance: &str, project: &str) -> String {
    format!("{project}@{instance}")
}
