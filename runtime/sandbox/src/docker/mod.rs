//! Docker berths: one container per agent, driven through bollard.
//!
//! The engine on CI machines is Docker 20.10 (API 1.41), so the client always
//! negotiates its API version. Containers are labelled (`berth.managed`,
//! `berth.project`, `berth.agent`) so any berth process can find, adopt or
//! remove them after a crash ([`DockerBackend::reconcile`]); their names are
//! deterministic, so two processes bringing up the same berth meet at one
//! container.
//!
//! Layout: [`spec`] (what a berth is made of and the container it becomes),
//! `connection` (reaching the engine once per process, on first need),
//! [`seccomp`] (the system calls a berth may make), [`berth`] (the
//! [`Sandbox`](crate::Sandbox) implementation), `exec` (one
//! command, its deadline and its process group), [`lifecycle`] (up, down,
//! reconcile), `record` (the container `up` left, which `attach` trusts).

pub mod berth;
mod cancel;
mod connection;
mod exec;
pub mod lifecycle;
mod record;
pub mod seccomp;
pub mod spec;

use std::path::PathBuf;
use std::time::Duration;

use bollard::Docker;

pub use berth::DockerBerth;
pub use connection::DockerConnection;
pub use exec::EXEC_SOCKETS_MOUNT;
pub use lifecycle::{
    BerthContainer, ContainerReconcileAction, ContainerReconcileReport, state_dir_of_worktree,
};
pub use spec::{ContainerSpec, ExtraMount, Network, ResourceLimits};

use crate::SandboxError;
use crate::image::ImageError;

/// Label on every container berth creates.
pub const MANAGED_LABEL: &str = "berth.managed";
pub const PROJECT_LABEL: &str = "berth.project";
pub const AGENT_LABEL: &str = "berth.agent";
/// Hash of the container configuration, so `up` adopts only a container that
/// matches its spec.
pub const SPEC_LABEL: &str = "berth.spec";
/// `rw` or `ro`: how `/work` is mounted.
pub const WORK_ACCESS_LABEL: &str = "berth.work-access";
/// The worktree's host path (for people reading `docker ps`).
pub const WORKTREE_LABEL: &str = "berth.worktree";
/// Which berth installation (state directory) the container belongs to;
/// absent for a spec without one.
pub const INSTANCE_LABEL: &str = "berth.instance";
/// Which worker (`berth serve --worker NAME`) created the container, so a
/// worker taking over an agent from one that died finds and removes the
/// dead worker's container for it; absent outside worker mode.
pub const WORKER_LABEL: &str = "berth.worker";

/// The client timeout when none is given. It bounds response headers only,
/// not exec streams, and must exceed every stop grace and build step.
pub const DEFAULT_CLIENT_TIMEOUT: Duration = Duration::from_secs(120);

/// Errors of the Docker backend. Each says what failed and on what.
#[derive(Debug, thiserror::Error)]
pub enum DockerError {
    #[error(
        "the Docker engine does not answer at {socket}: {source}. Start it (`service docker start` or `dockerd`), point DOCKER_HOST at a running engine, or run without containers: `--mode runner`"
    )]
    EngineUnavailable {
        socket: String,
        #[source]
        source: bollard::errors::Error,
    },
    #[error("docker {op} {target}: {source}")]
    Api {
        op: &'static str,
        target: String,
        #[source]
        source: bollard::errors::Error,
    },
    #[error(transparent)]
    Image(#[from] ImageError),
    #[error("invalid berth spec for {project}/{agent}: {message}")]
    InvalidSpec {
        project: String,
        agent: String,
        message: String,
    },
    #[error(
        "{path} is owned by uid {owner}, but the berth's container runs as uid {uid}: the worktree and the agent repository must belong to that uid (`chown -R {uid}:{gid} {path}`)"
    )]
    Ownership {
        path: PathBuf,
        owner: u32,
        uid: u32,
        gid: u32,
    },
    #[error(
        "container {name} exists but berth did not create it (no {MANAGED_LABEL} label): rename or remove it, berth will not touch it"
    )]
    Foreign { name: String },
    #[error("container {name} is not running after start: {detail}")]
    NotRunning { name: String, detail: String },
    #[error("image {image} cannot host berth commands: {message}")]
    UnsuitableImage { image: String, message: String },
    /// A step run off the async threads panicked or was cancelled.
    #[error("{op}: {source}")]
    Task {
        op: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
    /// A host directory berth keeps for the container (the exec agent's
    /// sockets) could not be made or is not berth's own.
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A command berth runs in the container for its own upkeep failed.
    #[error("{op}: {source}")]
    Upkeep {
        op: &'static str,
        #[source]
        source: Box<SandboxError>,
    },
}

/// How to reach the engine.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Bounds each request's response headers (whole seconds: the client
    /// truncates, so anything under a second would fail every call).
    pub timeout: Duration,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            timeout: DEFAULT_CLIENT_TIMEOUT,
        }
    }
}

/// A negotiated connection to the local Docker engine. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DockerBackend {
    docker: Docker,
    socket: String,
}

impl DockerBackend {
    /// Connects with the local defaults (`DOCKER_HOST` if it names a unix
    /// socket, else `/var/run/docker.sock`) and negotiates the API version.
    pub async fn connect() -> Result<DockerBackend, DockerError> {
        DockerBackend::connect_with(ConnectOptions::default()).await
    }

    pub async fn connect_with(options: ConnectOptions) -> Result<DockerBackend, DockerError> {
        let socket = socket_path();
        // Negotiated from `/_ping`, once per connection ([`connection`]):
        // 0.21 still works unnegotiated against 1.41 by accident (it drops
        // the version prefix); later clients send it. Negotiate always.
        let docker = connection::negotiated_client(&socket, options.timeout).await?;
        Ok(DockerBackend { docker, socket })
    }

    /// The bollard client, for callers that need an API this crate does not wrap
    /// (benchmarks compare against it).
    pub fn docker(&self) -> &Docker {
        &self.docker
    }

    /// The socket this backend talks to.
    pub fn socket(&self) -> &str {
        &self.socket
    }
}

/// The socket `connect_with_local_defaults` would use: `DOCKER_HOST` when it
/// names a unix socket, else the default one.
fn socket_path() -> String {
    match std::env::var("DOCKER_HOST") {
        Ok(h) if h.starts_with("unix://") => h.trim_start_matches("unix://").to_string(),
        _ => "/var/run/docker.sock".to_string(),
    }
}

pub(crate) fn is_not_found(e: &bollard::errors::Error) -> bool {
    status_of(e) == Some(404)
}

pub(crate) fn is_conflict(e: &bollard::errors::Error) -> bool {
    status_of(e) == Some(409)
}

pub(crate) fn status_of(e: &bollard::errors::Error) -> Option<u16> {
    match e {
        bollard::errors::Error::DockerResponseServerError { status_code, .. } => Some(*status_code),
        _ => None,
    }
}
