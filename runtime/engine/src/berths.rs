//! Berths: an agent's worktree and the sandbox its commands run in.
//!
//! The engine knows sandboxes only through [`SandboxProvider`]: the local
//! provider opens the runner (processes on the host inside the worktree —
//! no container boundary) and answers "not available" for mounted mode; the
//! Docker provider ([`crate::mounted`]) opens both. A berth is durable in the
//! store (mode, worktree, branch), so any process can reopen it: the one that
//! approves an action is rarely the one that proposed it.
//!
//! In mounted mode the agent's repository and worktree belong to the
//! container's uid (chowned when provisioned, also when berth runs as root);
//! the engine's git2 keeps working on them because the worktrees crate turns
//! libgit2's owner check off for repositories it finds through its layout.

use std::collections::{BTreeSet, HashMap};
use std::os::unix::fs::DirBuilderExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use berth_policy::{Action, Decision, Finding, Frame, Stage, Verdict};
use berth_sandbox::host_scope::judged_paths;
use berth_sandbox::{FileOp, Sandbox};
use serde::Serialize;

use crate::agents::Agent;
use crate::config::{BerthMode, ProjectConfig};
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;
use crate::{AgentName, Engine, ProjectName};

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

/// How `berth up` treats what it finds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpOptions {
    /// Give the berth a new uid from `[host] uid_range` (re-owning its
    /// repository and worktree, recreating its container).
    pub new_uid: bool,
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

fn mounted_unavailable() -> EngineError {
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
fn make_private_dir(dir: &std::path::Path) -> Result<bool> {
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
fn chown_berth_dir(dir: &std::path::Path, owner: berth_worktrees::Owner) -> Result<()> {
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
fn cgroup_scope(instance: &str, project: &str) -> String {
    format!("{project}@{instance}")
}

/// A runner exec's network: `none` is a network namespace of its own
/// holding only `lo`; `open` stays in the host's (`docker_network` names a
/// container's network and means nothing here). The old `[sandbox] network`
/// string named a container's network only: read from it, the runner keeps
/// only `lo`, as it did.
fn runner_network(network: &crate::config::NetworkConfig) -> berth_sandbox::runner::Network {
    match network.mode {
        crate::config::NetworkMode::Open if network.legacy.is_none() => {
            berth_sandbox::runner::Network::Open
        }
        _ => berth_sandbox::runner::Network::None,
    }
}

/// The host-side checks of a decided action, which only ever tighten it.
///
/// A file action whose path leads out of the mount it is written under
/// through a link is refused: `decision` becomes a deny whose reason names
/// the link and where it leads (no approval makes berth follow it; execution
/// is confined anyway). An auto-approved action whose judged paths leave the
/// scope through a symlink on the host (runner) waits for a person: the
/// returned hold reason.
pub(crate) fn host_check(
    sandbox: &dyn Sandbox,
    action: &Action,
    decision: &mut Decision,
    cwd: &str,
) -> Option<String> {
    if let Some((path, op)) = file_target(action) {
        // The file check is the whole host check of a file action: its
        // execution is confined, whatever changes meanwhile.
        if decision.verdict == Verdict::Deny {
            return None;
        }
        let refusal = sandbox.check_file_path(&berth_policy::scope::normalize(cwd, path), op)?;
        let reason = refusal.to_string();
        decision.verdict = Verdict::Deny;
        decision.stage = Stage::Scope;
        decision.reason = reason.clone();
        decision.findings.push(Finding {
            stage: Stage::Scope,
            verdict: Verdict::Deny,
            reason,
            segment: None,
        });
        return None;
    }
    if decision.verdict != Verdict::AutoApprove {
        return None;
    }
    let findings = sandbox.check_host_paths(&judged_paths(decision, cwd));
    if findings.is_empty() {
        None
    } else {
        Some(
            findings
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

/// A file action's path and what it does to it.
fn file_target(action: &Action) -> Option<(&String, FileOp)> {
    match action {
        Action::FileRead { path } => Some((path, FileOp::Read)),
        Action::FileWrite { path } => Some((path, FileOp::Write)),
        _ => None,
    }
}

/// Where a file action's path leads on the host now — its links followed
/// within its mount, never out of it — for the person who decides on it;
/// where it leads instead when that is off its mount. `None` for an action
/// that is not a file action.
pub(crate) fn file_host_path(sandbox: &dyn Sandbox, action: &Action, cwd: &str) -> Option<String> {
    let (path, _) = file_target(action)?;
    let frame_path = berth_policy::scope::normalize(cwd, path);
    Some(match sandbox.files().host_path(&frame_path) {
        Ok(host) => host.to_string_lossy().into_owned(),
        Err(why) => why,
    })
}

/// A berth as `berth ls` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct BerthInfo {
    pub agent: String,
    pub project: String,
    #[serde(rename = "impl")]
    pub implementation: crate::agents::AgentImpl,
    pub status: crate::agents::AgentStatus,
    pub mode: Option<BerthMode>,
    /// The name of its Docker container while it is up in mounted mode.
    pub container: Option<String>,
    pub worktree: Option<PathBuf>,
    pub branch: Option<String>,
    pub task: Option<String>,
    /// What a person should know about this berth's isolation.
    pub note: Option<String>,
    /// Work `down` saved into the forge before recycling the worktree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub saved: Option<SavedRef>,
}

/// Work saved into the forge before a worktree was recycled, and how to get
/// it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SavedRef {
    /// The forge's ref (`refs/berth/saved/<agent>/<stamp>`).
    pub refname: String,
    /// The commit it holds.
    pub commit: String,
    /// The forge (a bare repository).
    pub forge: PathBuf,
    /// Whether uncommitted changes were committed into it.
    pub committed_changes: bool,
}

/// One saved ref in a forge (`berth saved ls`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SavedEntry {
    pub project: String,
    pub refname: String,
    pub commit: String,
    pub forge: PathBuf,
}

impl SavedRef {
    /// The command that fetches it into a repository of one's own.
    pub fn fetch_command(&self) -> String {
        let local = self.refname.trim_start_matches("refs/");
        format!(
            "git fetch {} {}:refs/{local}",
            self.forge.display(),
            self.refname
        )
    }
}

impl BerthInfo {
    /// `instance`: this state directory's ([`instance_of`]), which names
    /// its containers.
    fn of(a: &Agent, instance: &str) -> BerthInfo {
        BerthInfo {
            agent: a.name.clone(),
            project: a.project.clone(),
            implementation: a.implementation,
            status: a.status,
            mode: a.berth,
            container: (a.berth == Some(BerthMode::Mounted)).then(|| {
                berth_sandbox::docker::spec::container_name_in(instance, &a.project, &a.name)
            }),
            worktree: a.worktree.clone(),
            branch: a.branch.clone(),
            task: a.task.clone(),
            note: (a.berth == Some(BerthMode::Runner)).then(crate::confinement::runner_note),
            saved: None,
        }
    }
}

/// Sandboxes opened by this process, by agent and worktree.
#[derive(Default)]
pub(crate) struct SandboxCache {
    open: Mutex<HashMap<(String, PathBuf), Arc<dyn Sandbox>>>,
}

impl SandboxCache {
    fn get(&self, key: &(String, PathBuf)) -> Option<Arc<dyn Sandbox>> {
        self.open.lock().ok().and_then(|m| m.get(key).cloned())
    }
    fn put(&self, key: (String, PathBuf), sb: Arc<dyn Sandbox>) {
        if let Ok(mut m) = self.open.lock() {
            m.insert(key, sb);
        }
    }
    pub(crate) fn drop_agent(&self, agent: &str) {
        if let Ok(mut m) = self.open.lock() {
            m.retain(|(a, _), _| a != agent);
        }
    }
}

impl Engine {
    pub(crate) fn berth_spec(
        &self,
        agent: &Agent,
        mode: BerthMode,
        worktree: PathBuf,
        config: &ProjectConfig,
    ) -> BerthSpec {
        BerthSpec {
            instance: instance_of(self.state.root()),
            agent: agent.name.clone(),
            project: agent.project.clone(),
            mode,
            agent_repo: self.git().agent_repo(&agent.project, &agent.name),
            forge_objects: self
                .git()
                .forge_objects(&agent.project)
                .unwrap_or_else(|_| self.state.root().join("forge").join("objects")),
            // In the berth's directory, so on its own disk when it has one
            // (`.home` is no agent's name either).
            home: crate::berth_disk::berth_dir(self.state.root(), &agent.project, &agent.name)
                .join(".home"),
            uid: config.sandbox.uid,
            runner_uid: None,
            identity_dir: self
                .state
                .root()
                .join("identities")
                .join(&agent.project)
                .join(&agent.name),
            // In the berth's directory, so on its own disk when it has one
            // (`.tmp` is no agent's name: names start with a letter or digit).
            private_tmp: crate::berth_disk::berth_dir(
                self.state.root(),
                &agent.project,
                &agent.name,
            )
            .join(".tmp"),
            exec_records: self.state.root().join("execs"),
            worktree,
            config: config.clone(),
        }
    }

    /// The agent's sandbox when its berth is up; `NoBerth` when `required`
    /// and it is down.
    pub(crate) async fn sandbox_for(
        &self,
        agent: &Agent,
        config: &ProjectConfig,
        required: bool,
    ) -> Result<Option<Arc<dyn Sandbox>>> {
        let (Some(mode), Some(worktree)) = (agent.berth, agent.worktree.clone()) else {
            return if required {
                Err(EngineError::NoBerth {
                    agent: agent.name.clone(),
                    project: agent.project.clone(),
                })
            } else {
                Ok(None)
            };
        };
        let key = (agent.name.clone(), worktree.clone());
        if let Some(sb) = self.sandboxes.get(&key) {
            return Ok(Some(sb));
        }
        let mut spec = self.berth_spec(agent, mode, worktree, config);
        match mode {
            BerthMode::Mounted => spec.uid = self.uid_for_open(agent, config).await?,
            BerthMode::Runner => spec.runner_uid = self.runner_uid_for_open(agent).await?,
        }
        let sandbox = self.provider.attach(&spec).await?;
        self.sandboxes.put(key, sandbox.clone());
        Ok(Some(sandbox))
    }

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
        self.provider.check(mode, &loaded.config).await?;
        // The berth's own uid (mounted, and runner when berth is root):
        // allocated, checked against the host, or kept as made; it owns the
        // repository and the worktree. A runner berth of a berth not root
        // runs as the user, whom its user namespace maps.
        let own_uid = mode == BerthMode::Mounted || berth_sandbox::identity::current_uid() == 0;
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
        let provisioned = match self
            .git()
            .provision(
                &loaded.project,
                &a.name,
                &crate::git::task_part(a.task.as_deref()),
                owner,
                max_checkout_bytes,
            )
            .await
        {
            Ok(p) => p,
            Err(e) => {
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
        let mut spec = self.berth_spec(&a, mode, provisioned.worktree.clone(), &loaded.config);
        spec.uid = uid;
        if mode == BerthMode::Runner
            && let Some(owner) = owner
        {
            // Its home keeps what its commands wrote before a
            // `down --keep-worktree` (as root, when runner berths had no
            // uid): all of it is the berth's now.
            make_private_dir(&spec.home)?;
            let dir = spec.home.clone();
            tokio::task::spawn_blocking(move || chown_berth_dir(&dir, owner))
                .await
                .map_err(EngineError::interrupted(
                    "giving the berth's home to its uid",
                ))??;
            spec.runner_uid = Some(uid);
        }
        self.sandboxes.drop_agent(agent);
        let opened = self.provider.open(&spec).await?;
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
        if let Some(why) = fallback {
            info.note = Some(match info.note {
                Some(n) => format!("{why}; {n}"),
                None => why,
            });
        }
        Ok(info)
    }

    /// Takes an agent's berth down; recycles its worktree unless
    /// `keep_worktree`, saving first what the recycle would lose (see
    /// [`Engine::down_with`]).
    pub async fn down(
        &self,
        agent: &AgentName,
        keep_worktree: bool,
        actor: &Actor,
    ) -> Result<BerthInfo> {
        self.down_with(agent, keep_worktree, false, actor).await
    }

    /// Takes an agent's berth down; recycles its worktree unless
    /// `keep_worktree`. Before the recycle, uncommitted changes and commits
    /// the forge does not hold are saved under `refs/berth/saved/<agent>/…`
    /// in the forge ([`BerthInfo::saved`]) unless `discard`.
    /// Refuses to recycle the worktree of an agent holding a task: a pending
    /// action must never outlive its worktree (ADR 0048, D5).
    pub async fn down_with(
        &self,
        agent: &AgentName,
        keep_worktree: bool,
        discard: bool,
        actor: &Actor,
    ) -> Result<BerthInfo> {
        let a = self.agent(agent).await?;
        if let (Some(task), false) = (&a.task, keep_worktree) {
            return Err(EngineError::HoldsTask {
                agent: agent.to_string(),
                task: crate::ids::short(task).to_string(),
                status: a.status.as_str(),
                kept: kept_for_task(&a),
            });
        }
        let loaded = self.load_project(&a.project).await?;
        self.close_berth(&a, &loaded.config, keep_worktree, actor)
            .await?;
        let mut saved = None;
        if !keep_worktree {
            saved = self
                .recycle_after_down(&a, &loaded.project, None, discard)
                .await?;
        }
        let instance = instance_of(self.state.root());
        let mut info = BerthInfo::of(&self.agent(agent).await?, &instance);
        info.saved = saved;
        if a.task.is_some() && keep_worktree {
            info.note = Some(kept_for_task(&a));
        }
        Ok(info)
    }

    /// Removes the berth's container and records the berth down at once,
    /// its worktree still there (`container.removed`, `berth.down`). Until
    /// the container is gone the berth stays recorded up, so a failed close
    /// is retried by the next `down`; after it nothing leaves the store
    /// saying "up". Does nothing but drop cached sandboxes when already down.
    pub(crate) async fn close_berth(
        &self,
        a: &Agent,
        config: &ProjectConfig,
        keep_worktree: bool,
        actor: &Actor,
    ) -> Result<()> {
        let mut removed = None;
        if let (Some(mode), Some(worktree)) = (a.berth, a.worktree.clone()) {
            let spec = self.berth_spec(a, mode, worktree, config);
            removed = self.provider.close(&spec).await?;
        }
        if a.berth == Some(BerthMode::Runner) {
            // Every exec of the berth ends with it, daemons included.
            let scope = cgroup_scope(&instance_of(self.state.root()), &a.project);
            match berth_sandbox::runner::kill_berth_execs(&scope, &a.name).await {
                Ok(killed) if !killed.is_empty() => {
                    tracing::info!(
                        agent = %a.name,
                        execs = killed.len(),
                        "killed the berth's running execs"
                    )
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(agent = %a.name, error = %e, "could not kill the berth's execs")
                }
            }
            if let Some(worktree) = a.worktree.clone() {
                // Its private /tmp is emptied.
                let spec = self.berth_spec(a, BerthMode::Runner, worktree, config);
                if let Err(e) = std::fs::remove_dir_all(&spec.private_tmp)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(agent = %a.name, error = %e, "could not empty the berth's /tmp");
                }
            }
        }
        self.sandboxes.drop_agent(&a.name);
        if a.berth.is_none() {
            return Ok(());
        }
        let system = Actor::system();
        let mut tx = self.store.write("taking a berth down").await?;
        sqlx::query("UPDATE agents SET berth_mode = NULL, updated_at = $1 WHERE name = $2")
            .bind(now_ms())
            .bind(&a.name)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("taking a berth down"))?;
        if let Some(container) = removed {
            emit(
                &mut tx,
                NewEvent::new(kind::CONTAINER_REMOVED, &system)
                    .project(&a.project)
                    .agent(&a.name)
                    .payload(serde_json::json!({ "container": container })),
            )
            .await?;
        }
        emit(
            &mut tx,
            NewEvent::new(kind::BERTH_DOWN, actor)
                .project(&a.project)
                .agent(&a.name)
                .payload(serde_json::json!({ "keep_worktree": keep_worktree })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("taking a berth down"))
    }

    /// Recycles the worktree of a berth that is down. On success the record
    /// forgets the worktree; on failure it keeps it (a down berth with a
    /// worktree left), the failure goes on the log (`worktree.recycle_failed`)
    /// and the next `down` recycles again — as does `up`, whose provisioning
    /// removes a worktree left half-recycled before making a fresh one.
    pub(crate) async fn recycle_after_down(
        &self,
        a: &Agent,
        project: &crate::projects::Project,
        task: Option<&str>,
        discard: bool,
    ) -> Result<Option<SavedRef>> {
        let system = Actor::system();
        // Saved first: the berth's disk (and the agent repository on it) goes
        // after the recycle. A save that fails stops the recycle.
        let saved = if discard || a.worktree.is_none() {
            None
        } else {
            let saved = self
                .git()
                .save_unpushed(project, &a.name, &save_stamp())
                .await;
            if let Err(e) = &saved {
                let mut tx = self.store.write("recording a failed save").await?;
                emit(
                    &mut tx,
                    NewEvent::new(kind::WORKTREE_RECYCLE_FAILED, &system)
                        .project(&a.project)
                        .agent(&a.name)
                        .task(task)
                        .payload(serde_json::json!({
                            "worktree": a.worktree,
                            "branch": a.branch,
                            "error": format!("saving its work first: {e}"),
                        })),
                )
                .await?;
                tx.commit()
                    .await
                    .map_err(EngineError::store("recording a failed save"))?;
            }
            saved
                .map_err(|e| EngineError::SaveFailed {
                    agent: a.name.clone(),
                    source: Box::new(e),
                })?
                .map(|s| SavedRef {
                    refname: s.refname,
                    commit: s.oid.to_string(),
                    forge: project.forge.clone(),
                    committed_changes: s.committed_changes,
                })
        };
        let recycled = match self.git().recycle(project, &a.name).await {
            Ok(recycled) => recycled,
            Err(e) => {
                let worktree = a.worktree.clone().unwrap_or_else(|| {
                    self.state
                        .root()
                        .join("berths")
                        .join(&a.project)
                        .join(&a.name)
                        .join(&a.name)
                });
                tracing::warn!(agent = %a.name, worktree = %worktree.display(), error = %e, "recycling a worktree failed");
                let mut tx = self.store.write("recording a failed recycle").await?;
                emit(
                    &mut tx,
                    NewEvent::new(kind::WORKTREE_RECYCLE_FAILED, &system)
                        .project(&a.project)
                        .agent(&a.name)
                        .task(task)
                        .payload(serde_json::json!({
                            "worktree": worktree,
                            "branch": a.branch,
                            "error": e.to_string(),
                        })),
                )
                .await?;
                tx.commit()
                    .await
                    .map_err(EngineError::store("recording a failed recycle"))?;
                return Err(EngineError::RecycleFailed {
                    agent: a.name.clone(),
                    worktree,
                    source: Box::new(e),
                });
            }
        };
        let mut tx = self.store.write("recycling a worktree").await?;
        let forgotten = sqlx::query("UPDATE agents SET worktree = NULL, branch = NULL, updated_at = $1 WHERE name = $2 AND berth_mode IS NULL AND task_id IS NULL")
            .bind(now_ms())
            .bind(&a.name)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("recycling a worktree"))?
            .rows_affected();
        if recycled {
            emit(
                &mut tx,
                NewEvent::new(kind::WORKTREE_RECYCLED, &system)
                    .project(&a.project)
                    .agent(&a.name)
                    .task(task)
                    .payload(serde_json::json!({
                        "worktree": a.worktree,
                        "branch": a.branch,
                        "saved": saved.as_ref().map(|s| &s.refname),
                    })),
            )
            .await?;
        }
        tx.commit()
            .await
            .map_err(EngineError::store("recycling a worktree"))?;
        if forgotten == 1 {
            // Last: the berth's own disk, with its agent repository (the
            // branch was deleted with the worktree; the forge keeps what was
            // pushed). Not when the berth came up again meanwhile.
            if let Err(e) = self.release_disk(&a.project, &a.name).await {
                tracing::warn!(agent = %a.name, error = %e, "the berth's disk could not be released; the next `down` or `berth reconcile` releases it");
            }
            // A runner berth's home goes with its worktree (with the disk
            // when it had one; here when it had none).
            let dir = crate::berth_disk::berth_dir(self.state.root(), &a.project, &a.name);
            let removed = tokio::task::spawn_blocking(move || {
                berth_worktrees::remove_beneath(&dir, std::path::Path::new(".home"))
            })
            .await;
            if let Ok(Err(e)) = removed {
                tracing::warn!(agent = %a.name, error = %e, "the berth's home could not be removed; the next `down` removes it");
            }
        }
        Ok(saved)
    }

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
        self.provider.orphans(remove).await
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
        let spec = self.berth_spec(agent, mode, worktree, &loaded.config);
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

    /// The work saved before recycles, in every project's forge (or
    /// `project`'s): the project, the ref and its commit.
    pub async fn saved_work(&self, project: Option<&str>) -> Result<Vec<SavedEntry>> {
        let mut out = Vec::new();
        for p in self.projects().await? {
            if project.is_some_and(|want| want != p.name) {
                continue;
            }
            for (refname, commit) in self.git().saved(&p.name).await? {
                out.push(SavedEntry {
                    project: p.name.clone(),
                    refname,
                    commit,
                    forge: p.forge.clone(),
                });
            }
        }
        Ok(out)
    }

    /// Drops one saved ref from `project`'s forge; false when there was none.
    pub async fn drop_saved_work(&self, project: &str, refname: &str) -> Result<bool> {
        let loaded = self.load_project(project).await?;
        self.git().drop_saved(&loaded.project.name, refname).await
    }

    /// Every agent and its berth.
    pub async fn berths(&self) -> Result<Vec<BerthInfo>> {
        let instance = instance_of(self.state.root());
        Ok(self
            .agents()
            .await?
            .iter()
            .map(|a| BerthInfo::of(a, &instance))
            .collect())
    }
}

/// What `down` keeps of an agent holding a task, and why.
fn kept_for_task(a: &Agent) -> String {
    let what = format!(
        "its worktree{} and branch{} are kept",
        a.worktree
            .as_ref()
            .map(|w| format!(" {}", w.display()))
            .unwrap_or_default(),
        a.branch
            .as_ref()
            .map(|b| format!(" {b}"))
            .unwrap_or_default(),
    );
    let task = a.task.as_deref().map(crate::ids::short).unwrap_or_default();
    let why = match a.status {
        crate::agents::AgentStatus::InReview => format!(
            "task {task} is in review: its PR is judged on that branch and a change the review asks for is made in that worktree; they are recycled when the PR is merged or closed"
        ),
        crate::agents::AgentStatus::AwaitingApproval => format!(
            "task {task} has an action waiting for a person, which runs in that worktree; they are recycled when the task is resolved"
        ),
        _ => format!(
            "task {task} ({}) is worked on there; they are recycled when the task is resolved",
            a.status.as_str()
        ),
    };
    format!("{what}: {why}")
}

/// A save's name: the UTC time to the millisecond, `2026-12-02T074000123Z`.
fn save_stamp() -> String {
    humantime::format_rfc3339_millis(std::time::SystemTime::now())
        .to_string()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .collect()
}

/// `agent/<agent>/<task id, 8 digits>`, or `agent/<agent>/scratch` with no task.
pub fn branch_for(agent: &str, task: Option<&str>) -> String {
    match task {
        Some(t) => format!("agent/{agent}/{}", crate::ids::short(t)),
        None => format!("agent/{agent}/scratch"),
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
