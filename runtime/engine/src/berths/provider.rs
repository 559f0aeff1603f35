//! The seam between the engine and its sandboxes: what a provider needs to
//! open a berth ([`BerthSpec`]), the [`SandboxProvider`] trait the runner and
//! the Docker provider ([`crate::mounted`]) implement, and the runner's own
//! bring-up on the host.

use std::collections::BTreeSet;
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::Arc;

use berth_policy::Frame;
use berth_sandbox::Sandbox;
use serde::Serialize;

use crate::config::{BerthMode, ProjectConfig};
use crate::error::{EngineError, Result};

/// What a provider needs to open an agent's sandbox.
#[derive(Debug, Clone)]
pub struct BerthSpec {
    /// This state directory's mark on its containers ([`instance_of`]).
    pub instance: String,
    pub agent: String,
    pub project: String,
    pub mode: BerthMode,
    /// The worktree on the host (`/work` in the frame).
    pub worktree: PathBuf,
    /// The agent's own repository on the host.
    pub agent_repo: PathBuf,
    /// The forge's objects on the host (the agent repository's alternates),
    /// read-only in a container.
    pub forge_objects: PathBuf,
    /// A runner berth's `HOME`, on the host
    /// (`<state>/berths/<project>/<agent>/.home`, on the berth's own disk
    /// when it has one), kept across `down --keep-worktree`, gone with the
    /// worktree at `down`.
    pub home: PathBuf,
    /// mounted: the berth's uid (gid = uid), which owns the worktree and the
    /// agent repository ([`crate::berth_uid`]).
    pub uid: u32,
    /// runner, berth root: the berth's uid (gid = uid), which owns the
    /// worktree, the agent repository, the home and the private `/tmp`, and
    /// which every command switches to. `None` (berth not root, or a berth
    /// brought up before runner berths had a uid) keeps uid 0 with no
    /// capabilities as root, or the user's own uid.
    pub runner_uid: Option<u32>,
    /// mounted: where the container's `/etc/passwd` and `/etc/group` are
    /// written (`<state>/identities/<project>/<agent>`, never mounted whole).
    pub identity_dir: PathBuf,
    /// A runner berth's `/tmp`, on the host
    /// (`<state>/berths/<project>/<agent>/.tmp`, on the berth's own disk when
    /// it has one), emptied at `down`.
    pub private_tmp: PathBuf,
    /// runner: where each exec running an action records its process group
    /// (`<state>/execs`, private to berth), so `berth cancel` finds it
    /// without cgroups.
    pub exec_records: PathBuf,
    pub config: ProjectConfig,
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

/// Opens and closes sandboxes. The Docker backend implements this too.
#[async_trait::async_trait]
pub trait SandboxProvider: Send + Sync {
    /// Opens (or adopts) the sandbox of a berth: its bring-up.
    async fn open(&self, spec: &BerthSpec) -> Result<OpenedSandbox>;
    /// The sandbox of a berth that is up, as cheaply as the provider can
    /// name it: what every action after `berth up` runs in. A provider that
    /// cannot attach opens.
    async fn attach(&self, spec: &BerthSpec) -> Result<Arc<dyn Sandbox>> {
        Ok(self.open(spec).await?.sandbox)
    }
    /// Removes what `open` created. Returns the container removed, if any.
    async fn close(&self, spec: &BerthSpec) -> Result<Option<String>>;
    /// The mode of `sandbox.mode = "auto"`, with a note for the person when
    /// it is a fallback.
    async fn auto_mode(&self) -> Result<(BerthMode, Option<String>)> {
        Ok((BerthMode::Runner, None))
    }
    /// Fails when `mode` cannot open, before anything is provisioned for it.
    async fn check(&self, mode: BerthMode, _config: &ProjectConfig) -> Result<()> {
        match mode {
            BerthMode::Runner => Ok(()),
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
    ) -> Result<Vec<ReconciledContainer>> {
        Ok(Vec::new())
    }
    /// Berth containers (of any state directory) whose state directory no
    /// longer exists; removed with `remove`.
    async fn orphans(&self, _remove: bool) -> Result<Vec<OrphanContainer>> {
        Ok(Vec::new())
    }
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

/// The provider of this build: the runner; mounted mode is not here yet.
#[derive(Debug, Default)]
pub struct LocalProvider;

#[async_trait::async_trait]
impl SandboxProvider for LocalProvider {
    async fn open(&self, spec: &BerthSpec) -> Result<OpenedSandbox> {
        match spec.mode {
            BerthMode::Runner => Ok(OpenedSandbox {
                sandbox: open_runner(spec)?,
                created_container: None,
            }),
            BerthMode::Mounted => Err(mounted_unavailable()),
        }
    }

    async fn close(&self, spec: &BerthSpec) -> Result<Option<String>> {
        match spec.mode {
            BerthMode::Runner => Ok(None),
            BerthMode::Mounted => Err(mounted_unavailable()),
        }
    }
}

pub(crate) fn mounted_unavailable() -> EngineError {
    EngineError::ModeUnavailable {
        mode: "mounted",
        why: "this engine was opened without the Docker provider; use `--mode runner` (or sandbox.mode = \"runner\" in berth.toml)".into(),
    }
}

/// The mark of one state directory on its containers: a hash of its path, so
/// two state directories on one Docker engine (two users, parallel tests)
/// never share a container name nor reconcile each other's containers.
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

/// The frame of a runner berth: the host frame as the agent sees it — the
/// project at `/work` — plus the project's extra roots.
pub fn runner_frame(config: &ProjectConfig) -> Frame {
    Frame::Host {
        project_root: berth_policy::frame::WORK.to_string(),
        extra_roots: config.scope.extra_roots.clone(),
        home: berth_policy::frame::DEFAULT_HOME.to_string(),
    }
}

pub(crate) fn open_runner(spec: &BerthSpec) -> Result<Arc<dyn Sandbox>> {
    let mut config = berth_sandbox::RunnerConfig::new(&spec.worktree, &spec.home);
    config.extra_roots = spec
        .config
        .scope
        .extra_roots
        .iter()
        .map(PathBuf::from)
        .collect();
    make_private_dir(&spec.private_tmp)?;
    let new_home = make_private_dir(&spec.home)?;
    config.confinement.private_tmp = Some(spec.private_tmp.clone());
    config.confinement.exec_records = Some(spec.exec_records.clone());
    if let Some(uid) = spec.runner_uid {
        // The berth's own /tmp, whatever an earlier exec left in it; a home
        // made here (its disk was made again) is the berth's too.
        let owner = berth_worktrees::Owner { uid, gid: uid };
        chown_berth_dir(&spec.private_tmp, owner)?;
        if new_home {
            chown_berth_dir(&spec.home, owner)?;
        }
        config.confinement.uid = Some((uid, uid));
    }
    config.confinement.limits = berth_sandbox::runner::CgroupLimits {
        processes: Some(spec.config.sandbox.pids),
        memory: Some(spec.config.sandbox.memory_mb << 20),
    };
    // Counted per exec inside a user namespace (berth not root).
    config.rlimits.nproc = Some(spec.config.sandbox.pids);
    config.confinement.agent_repo = Some(spec.agent_repo.clone());
    config.confinement.readable = vec![spec.forge_objects.clone()];
    // Declared toolchains read-only, caches read-write, at their own paths.
    let sandbox = &spec.config.sandbox;
    config
        .confinement
        .readable
        .extend(sandbox.toolchains.iter().map(|d| PathBuf::from(&d.path)));
    config.confinement.writable = sandbox
        .caches
        .iter()
        .map(|d| PathBuf::from(&d.path))
        .collect();
    // The variables they carry, and their programs after the rest of PATH.
    let declared = crate::declared_dirs::declared_env(sandbox);
    config.env = declared.vars;
    config.path_append = declared.path_append;
    config.confinement.network = runner_network(&spec.config.sandbox.network);
    config.confinement.git_identity = crate::git::agent_git_identity(&spec.agent);
    let scope = cgroup_scope(&spec.instance, &spec.project);
    if berth_sandbox::runner::cgroup_name_valid(&scope, &spec.agent) {
        config.confinement.cgroup_name = Some((scope, spec.agent.clone()));
    }
    Ok(Arc::new(berth_sandbox::Runner::new(config)?))
}

/// Makes `dir` (and its parents) 0700 when it is missing; whether it was.
pub(crate) fn make_private_dir(dir: &std::path::Path) -> Result<bool> {
    if dir.is_dir() {
        return Ok(false);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(EngineError::io("creating", dir))?;
    Ok(true)
}

/// Gives a berth's directory (`<state>/<kind>/<project>/<agent>`, its
/// parent made by berth) and everything in it to `owner`, through the
/// fd-relative walk that follows no link an agent planted.
pub(crate) fn chown_berth_dir(dir: &std::path::Path, owner: berth_worktrees::Owner) -> Result<()> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(EngineError::NotBerthDir {
            path: dir.to_path_buf(),
        });
    };
    berth_worktrees::chown_beneath(parent, std::path::Path::new(name), owner)
        .map_err(EngineError::io("giving to the berth's uid", dir))
}

/// The first part of a runner berth's exec cgroups
/// (`berth/<project>@<instance>/<agent>/<action>`): the state directory's
/// mark keeps one state directory's `down` from killing another's execs.
pub(crate) fn cgroup_scope(instance: &str, project: &str) -> String {
    format!("{project}@{instance}")
}

/// A runner exec's network: `none` is a network namespace of its own
/// holding only `lo`; `open` stays in the host's (`docker_network` names a
/// container's network and means nothing here). The old `[sandbox] network`
/// string named a container's network only: read from it, the runner keeps
/// only `lo`, as it did.
pub(crate) fn runner_network(
    network: &crate::config::NetworkConfig,
) -> berth_sandbox::runner::Network {
    match network.mode {
        crate::config::NetworkMode::Open if network.legacy.is_none() => {
            berth_sandbox::runner::Network::Open
        }
        _ => berth_sandbox::runner::Network::None,
    }
}

#[cfg(test)]
mod runner_network_tests {
    use super::*;
    use crate::config::ProjectConfig;
    use berth_sandbox::runner::Network;

    #[test]
    fn only_the_table_opens_a_runner_berths_network() {
        let network = |t: &str| {
            runner_network(
                &ProjectConfig::parse(t, "berth.toml")
                    .unwrap()
                    .sandbox
                    .network,
            )
        };
        assert_eq!(network(""), Network::None);
        assert_eq!(
            network("[sandbox.network]\nmode = \"open\"\n"),
            Network::Open
        );
        // The old string named a container's network only.
        assert_eq!(network("[sandbox]\nnetwork = \"bridge\"\n"), Network::None);
        assert_eq!(network("[sandbox]\nnetwork = \"none\"\n"), Network::None);
    }
}
