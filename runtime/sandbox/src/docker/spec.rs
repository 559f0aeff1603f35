//! What a Docker berth is made of, and the container configuration it becomes.
//!
//! The worktree is mounted read-write at `/work`. The agent's own repository is
//! mounted read-write at its *host* path, because the worktree's `.git` file
//! names its admin directory there by absolute path; the forge's objects, which
//! the agent repository borrows through alternates, are mounted read-only at
//! theirs. Nothing else of the host is visible, and never the Docker socket.
//! Mounts use `Mount`, not `Binds`: a bind string silently creates a missing
//! host path as a root-owned directory, a `Mount` fails.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

use berth_policy::frame::{DEFAULT_HOME, WORK};
use berth_policy::{Frame, Mount as FrameMount, MountKind, PathMap};
use bollard::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use sha2::{Digest, Sha256};

use super::{
    AGENT_LABEL, DockerError, INSTANCE_LABEL, MANAGED_LABEL, PROJECT_LABEL, SPEC_LABEL,
    WORK_ACCESS_LABEL, WORKER_LABEL, WORKTREE_LABEL,
};
use crate::WorkAccess;
use crate::confined_files::{ConfinedFiles, FileMount, LinkTargets};
use crate::docker::EXEC_SOCKETS_MOUNT;
use crate::image::{CheckedImage, ImageInfo, ImageRef, TOOLS_BIN, TOOLS_MOUNT};
use berth_confine::git_env::GitIdentity;

/// Resource limits of one berth's container (the policy's `Limits` are
/// patterns, not resources).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ResourceLimits {
    /// Memory, bytes; swap is set equal, so there is none.
    pub memory_bytes: i64,
    /// CPUs, fractional (`nano_cpus`).
    pub cpus: f64,
    /// Processes and threads.
    pub pids: i64,
    /// Size of the tmpfs `/tmp`.
    pub tmp_bytes: u64,
    /// Files and directories the tmpfs `/tmp` may hold.
    pub tmp_inodes: u64,
    /// Size of the tmpfs `$HOME`.
    pub home_bytes: u64,
    /// Files and directories the tmpfs `$HOME` may hold.
    pub home_inodes: u64,
}

impl Default for ResourceLimits {
    fn default() -> Self {
        ResourceLimits {
            memory_bytes: 2 << 30,
            cpus: 2.0,
            pids: 512,
            tmp_bytes: 256 << 20,
            tmp_inodes: 65_536,
            home_bytes: 256 << 20,
            home_inodes: 65_536,
        }
    }
}

/// The container's network.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Network {
    /// Only loopback.
    #[default]
    None,
    /// A Docker network by name (`bridge`, or one the user made).
    Named(String),
}

/// A further host directory made visible in the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraMount {
    pub host: PathBuf,
    /// Where it appears in the container (absolute).
    pub target: String,
    pub read_only: bool,
    /// Whether the policy treats paths under it as in scope.
    pub in_scope: bool,
}

/// Everything that makes one agent's container (the engine's `BerthSpec`
/// is what any provider needs; this is what the Docker backend builds from it).
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerSpec {
    /// The berth installation (one state directory) the container belongs
    /// to, so two installations on one Docker engine never meet at a name
    /// nor reconcile each other's containers. Empty: none (the name is then
    /// `berth-<project>.<agent>`).
    pub instance: String,
    /// The worker that creates the container (`berth serve --worker`),
    /// put on it as the [`WORKER_LABEL`] label; `None` outside worker mode.
    pub worker: Option<String>,
    pub project: String,
    pub agent: String,
    /// The agent's worktree (host path), mounted at `/work`.
    pub worktree: PathBuf,
    /// The agent's own repository (host path), mounted read-write at that path.
    pub agent_repo: PathBuf,
    /// The forge's object directory (host path), mounted read-only at that path.
    pub forge_objects: PathBuf,
    pub image: ImageRef,
    /// The uid and gid commands run as; they must own the worktree and the
    /// agent repository.
    pub uid: u32,
    pub gid: u32,
    pub limits: ResourceLimits,
    pub network: Network,
    /// Mount the image read-only (the default): only `/work`, the agent
    /// repository and the bounded tmpfs `/tmp` and `$HOME` are writable.
    pub read_only_root: bool,
    /// A berth-private host directory (never mounted itself) where `up`
    /// writes the container's `/etc/passwd` and `/etc/group`, naming `uid`
    /// with a home at `$HOME`; they are bound read-only over the image's.
    /// `None`: the image's own files.
    pub identity_dir: Option<PathBuf>,
    pub extra_mounts: Vec<ExtraMount>,
    /// Environment of every command (on top of the image's).
    pub env: BTreeMap<String, String>,
    /// Directories appended to the image's `PATH` (declared toolchains'
    /// programs).
    pub path_append: Vec<String>,
    /// `user.name`/`user.email` of the agent's own git commands, set with the
    /// forced git settings in every exec's environment (as in the runner).
    pub git_identity: Option<GitIdentity>,
    /// How `/work` is mounted when the container is created.
    pub work_access: WorkAccess,
    /// Where berth keeps its injected tools on the host, one directory per
    /// tool set ([`crate::image::ensure_tools`]); `None`:
    /// [`default_tools_root`](crate::image::default_tools_root). Any image
    /// but the default agent image gets them read-only at `/opt/berth`.
    pub tools_root: Option<PathBuf>,
    /// A berth-private host directory (never mounted itself) under which
    /// each berth gets the directory of its exec agent's sockets
    /// ([`exec_sockets`](Self::exec_sockets)), mounted read-only at
    /// [`EXEC_SOCKETS_MOUNT`]. `None`: no exec agent, every command is a
    /// Docker exec.
    pub exec_socket_root: Option<PathBuf>,
    /// An allow-list berth's proxy, served on the container's loopback for
    /// each exec ([`crate::egress_port`]); not part of the container's
    /// configuration.
    pub egress: Option<crate::egress_port::EgressHook>,
    /// The image as the engine's check found it just before this spec was
    /// made ([`SandboxProvider::check`](crate::provider::SandboxProvider::check)):
    /// bring-up uses it instead of inspecting the image again when it is of
    /// [`image`](Self::image). `None`: bring-up inspects it. Not part of the
    /// container's configuration (nor of its spec hash, which takes the
    /// image id either way).
    pub checked_image: Option<CheckedImage>,
}

impl ContainerSpec {
    /// A spec with the hardened defaults: the default agent image, uid 1000
    /// (the engine gives each berth its own), no network, the default limits,
    /// a read-only root.
    pub fn new(
        project: impl Into<String>,
        agent: impl Into<String>,
        worktree: impl Into<PathBuf>,
        agent_repo: impl Into<PathBuf>,
        forge_objects: impl Into<PathBuf>,
    ) -> ContainerSpec {
        ContainerSpec {
            instance: String::new(),
            worker: None,
            project: project.into(),
            agent: agent.into(),
            worktree: worktree.into(),
            agent_repo: agent_repo.into(),
            forge_objects: forge_objects.into(),
            image: ImageRef::DefaultAgent,
            uid: 1000,
            gid: 1000,
            limits: ResourceLimits::default(),
            network: Network::None,
            read_only_root: true,
            identity_dir: None,
            extra_mounts: Vec::new(),
            env: BTreeMap::new(),
            path_append: Vec::new(),
            git_identity: None,
            work_access: WorkAccess::ReadWrite,
            tools_root: None,
            exec_socket_root: None,
            egress: None,
            checked_image: None,
        }
    }

    /// The container's name: `berth-<project>.<agent>`, with `.<instance>`
    /// when the spec has one (names hold no `.`, so two berths can never meet
    /// at one name).
    pub fn container_name(&self) -> String {
        container_name_in(&self.instance, &self.project, &self.agent)
    }

    /// The frame commands are decided in: `/work` is the project, the agent's
    /// repository is in scope, the forge's objects are not.
    pub fn frame(&self) -> Frame {
        let mut mounts = vec![
            FrameMount {
                target: WORK.to_string(),
                kind: MountKind::Project,
            },
            FrameMount {
                target: self.agent_repo.to_string_lossy().into_owned(),
                kind: MountKind::Host { in_scope: true },
            },
            FrameMount {
                target: self.forge_objects.to_string_lossy().into_owned(),
                kind: MountKind::Host { in_scope: false },
            },
        ];
        mounts.extend(self.extra_mounts.iter().map(|m| FrameMount {
            target: m.target.clone(),
            kind: MountKind::Host {
                in_scope: m.in_scope,
            },
        }));
        Frame::Container {
            project_root: WORK.to_string(),
            mounts,
            home: DEFAULT_HOME.to_string(),
        }
    }

    /// Frame → host: `/work` is the worktree, the repositories are at their
    /// own paths, extra mounts at their targets.
    pub fn path_map(&self) -> PathMap {
        let mut map = PathMap::new()
            .with(WORK, &self.worktree)
            .with(&self.agent_repo.to_string_lossy(), &self.agent_repo)
            .with(&self.forge_objects.to_string_lossy(), &self.forge_objects);
        for m in &self.extra_mounts {
            map = map.with(&m.target, &m.host);
        }
        map
    }

    /// The file actions' view of the mounts (see [`crate::confined_files`]):
    /// the forge's objects and read-only extra mounts refuse writes, and
    /// what berth creates belongs to the container's uid and gid.
    pub fn confined_files(&self) -> ConfinedFiles {
        let mut mounts = vec![
            FileMount {
                frame: WORK.to_string(),
                host: self.worktree.clone(),
                writable: true,
            },
            FileMount {
                frame: self.agent_repo.to_string_lossy().into_owned(),
                host: self.agent_repo.clone(),
                writable: true,
            },
            FileMount {
                frame: self.forge_objects.to_string_lossy().into_owned(),
                host: self.forge_objects.clone(),
                writable: false,
            },
        ];
        mounts.extend(self.extra_mounts.iter().map(|m| FileMount {
            frame: m.target.clone(),
            host: m.host.clone(),
            writable: !m.read_only,
        }));
        ConfinedFiles::new(mounts, LinkTargets::Frame).with_owner(self.uid, self.gid)
    }

    fn invalid(&self, message: impl Into<String>) -> DockerError {
        DockerError::InvalidSpec {
            project: self.project.clone(),
            agent: self.agent.clone(),
            message: message.into(),
        }
    }

    /// Checks names, paths, ownership and limits on the host. Fails closed.
    pub fn validate(&self) -> Result<(), DockerError> {
        if !self.instance.is_empty() && !is_name(&self.instance) {
            return Err(self.invalid(format!(
                "instance {:?}: {}",
                self.instance,
                berth_worktrees::NAME_RULE
            )));
        }
        for (what, name) in [("project", &self.project), ("agent", &self.agent)] {
            if !is_name(name) {
                return Err(self.invalid(format!(
                    "{what} name {name:?}: {}",
                    berth_worktrees::NAME_RULE
                )));
            }
        }
        if self.uid == 0 {
            return Err(self.invalid("uid 0: berth commands never run as root"));
        }
        let l = &self.limits;
        if l.memory_bytes < (6 << 20) || l.cpus <= 0.0 || !l.cpus.is_finite() || l.pids < 8 {
            return Err(self.invalid(format!(
                "limits {l:?}: memory must be at least 6 MiB, cpus above 0, pids at least 8"
            )));
        }
        if l.tmp_bytes < (1 << 20)
            || l.home_bytes < (1 << 20)
            || l.tmp_inodes < 64
            || l.home_inodes < 64
        {
            return Err(self.invalid(format!(
                "limits {l:?}: /tmp and $HOME need at least 1 MiB and 64 inodes each"
            )));
        }
        if let Some(dir) = &self.identity_dir
            && !dir.is_absolute()
        {
            return Err(self.invalid(format!(
                "identity directory {}: not an absolute path",
                dir.display()
            )));
        }
        if let Network::Named(n) = &self.network
            && (n == "host" || n.starts_with("container:"))
        {
            return Err(self.invalid(format!(
                "network {n:?} would share a namespace with the host or another container; use none or a named network"
            )));
        }
        for (key, value) in &self.env {
            if key.is_empty() || key.contains('=') || key.contains('\0') || value.contains('\0') {
                return Err(self.invalid(format!("env {key:?}: not a valid variable")));
            }
        }

        let mut targets: Vec<(String, &str)> = Vec::new();
        let mounts = [
            (&self.worktree, "the worktree", true),
            (&self.agent_repo, "the agent repository", true),
            (&self.forge_objects, "the forge's objects", false),
        ];
        for (path, what, owned) in mounts {
            self.check_host_dir(path, what)?;
            if owned {
                let md = std::fs::metadata(path)
                    .map_err(|e| self.invalid(format!("{what} {}: {e}", path.display())))?;
                if md.uid() != self.uid {
                    return Err(DockerError::Ownership {
                        path: path.clone(),
                        owner: md.uid(),
                        uid: self.uid,
                        gid: self.gid,
                    });
                }
            }
        }
        targets.push((WORK.to_string(), "/work"));
        targets.push((
            self.agent_repo.to_string_lossy().into_owned(),
            "the agent repository",
        ));
        targets.push((
            self.forge_objects.to_string_lossy().into_owned(),
            "the forge's objects",
        ));
        for m in &self.extra_mounts {
            self.check_host_dir(&m.host, "an extra mount")?;
            if !crate::image::is_clean_absolute(&m.target) {
                return Err(self.invalid(format!(
                    "extra mount target {:?}: an absolute path without '.', '..' or '//'",
                    m.target
                )));
            }
            targets.push((m.target.clone(), "an extra mount"));
        }
        // Mount points must not nest: a repository inside /work would shadow the
        // worktree (or the other way round), and the container would not be the
        // layout the frame describes.
        for (i, (a, wa)) in targets.iter().enumerate() {
            if RESERVED.iter().any(|r| nests(a, r)) {
                return Err(self.invalid(format!(
                    "{wa} would be mounted at {a}, over the container's own {}; keep berth's state directory elsewhere",
                    RESERVED.iter().find(|r| nests(a, r)).copied().unwrap_or("/")
                )));
            }
            for (b, wb) in &targets[i + 1..] {
                if nests(a, b) || nests(b, a) {
                    return Err(self.invalid(format!(
                        "{wa} ({a}) and {wb} ({b}) would be mounted one inside the other; keep berth's state directory outside the worktree"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Writes the container's `/etc/passwd` and `/etc/group` into
    /// [`identity_dir`](Self::identity_dir) (when set), each replaced whole
    /// and only when its content changes. The directory is berth's own
    /// state, which no agent can write.
    pub fn write_identity(&self) -> Result<(), DockerError> {
        use std::os::unix::fs::PermissionsExt;
        let Some(dir) = &self.identity_dir else {
            return Ok(());
        };
        let fail = |path: &Path, e: std::io::Error| {
            self.invalid(format!(
                "writing the container's user database {}: {e}",
                path.display()
            ))
        };
        std::fs::create_dir_all(dir).map_err(|e| fail(dir, e))?;
        let files = [
            (
                "passwd",
                crate::identity::passwd_file(self.uid, DEFAULT_HOME),
            ),
            ("group", crate::identity::group_file(self.gid)),
        ];
        for (name, content) in files {
            let path = dir.join(name);
            if std::fs::read_to_string(&path).is_ok_and(|c| c == content) {
                continue;
            }
            let tmp = dir.join(format!(".{name}.new"));
            std::fs::write(&tmp, &content).map_err(|e| fail(&tmp, e))?;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644))
                .map_err(|e| fail(&tmp, e))?;
            std::fs::rename(&tmp, &path).map_err(|e| fail(&path, e))?;
        }
        Ok(())
    }

    fn check_host_dir(&self, path: &Path, what: &str) -> Result<(), DockerError> {
        if !path.is_absolute() {
            return Err(self.invalid(format!("{what} {}: not an absolute path", path.display())));
        }
        let real = std::fs::canonicalize(path)
            .map_err(|e| self.invalid(format!("{what} {}: {e}", path.display())))?;
        let md = std::fs::metadata(&real)
            .map_err(|e| self.invalid(format!("{what} {}: {e}", path.display())))?;
        if !md.is_dir() {
            return Err(self.invalid(format!("{what} {}: not a directory", path.display())));
        }
        // Never the engine's socket, nor a directory that holds it.
        for sock in ["/var/run/docker.sock", "/run/docker.sock"] {
            if let Ok(sock_real) = std::fs::canonicalize(sock)
                && sock_real.starts_with(&real)
            {
                return Err(self.invalid(format!(
                    "{what} {} contains the Docker socket {sock}: a berth never sees the engine",
                    path.display()
                )));
            }
        }
        if let Ok(entries) = std::fs::read_dir(&real) {
            for entry in entries.flatten() {
                if entry.file_name() == "docker.sock"
                    && entry.file_type().is_ok_and(|t| t.is_socket())
                {
                    return Err(self.invalid(format!(
                        "{what} {} holds a docker.sock: a berth never sees the engine",
                        path.display()
                    )));
                }
            }
        }
        Ok(())
    }

    /// The container configuration for `image`, with `/work` mounted as
    /// `access` says and the tool set `tools` (a host directory) at
    /// `/opt/berth`. Carries the labels, including the spec hash.
    pub(crate) fn container_body(
        &self,
        image: &ImageInfo,
        access: WorkAccess,
        tools: Option<&Path>,
    ) -> ContainerCreateBody {
        let bind = |source: &Path, target: &str, read_only: bool| Mount {
            target: Some(target.to_string()),
            source: Some(source.to_string_lossy().into_owned()),
            typ: Some(MountType::BIND),
            read_only: Some(read_only),
            ..Default::default()
        };
        // The exec agent starts with the container: its socket directory is
        // mounted and berth's helper is among the tools.
        let agent_main = self.exec_sockets().is_some()
            && tools.is_some_and(|d| d.join("bin/berth-helper").exists());
        let mut mounts = vec![
            bind(&self.worktree, WORK, access == WorkAccess::ReadOnly),
            bind(&self.agent_repo, &self.agent_repo.to_string_lossy(), false),
            bind(
                &self.forge_objects,
                &self.forge_objects.to_string_lossy(),
                true,
            ),
        ];
        mounts.extend(
            self.extra_mounts
                .iter()
                .map(|m| bind(&m.host, &m.target, m.read_only)),
        );
        let network = match &self.network {
            Network::None => "none".to_string(),
            Network::Named(n) => n.clone(),
        };
        if let Some(dir) = tools {
            mounts.push(bind(dir, TOOLS_MOUNT, true));
        }
        if let Some(dir) = self.exec_sockets() {
            mounts.push(bind(&dir, EXEC_SOCKETS_MOUNT, true));
        }
        if let Some(dir) = &self.identity_dir {
            mounts.push(bind(&dir.join("passwd"), "/etc/passwd", true));
            mounts.push(bind(&dir.join("group"), "/etc/group", true));
        }
        // Every writable place is bounded: the root is read-only (by
        // default), /tmp and $HOME are tmpfs with a size and an inode count.
        // `exec`, because Docker adds `noexec` otherwise and scripts and
        // build outputs run from /tmp; `nosuid,nodev` as always.
        let l = &self.limits;
        let tmpfs = HashMap::from([
            (
                "/tmp".to_string(),
                format!(
                    "rw,exec,nosuid,nodev,mode=1777,size={},nr_inodes={}",
                    l.tmp_bytes, l.tmp_inodes
                ),
            ),
            (
                DEFAULT_HOME.to_string(),
                format!(
                    "rw,exec,nosuid,nodev,mode=0700,uid={},gid={},size={},nr_inodes={}",
                    self.uid, self.gid, l.home_bytes, l.home_inodes
                ),
            ),
        ]);
        let host_config = HostConfig {
            mounts: Some(mounts),
            network_mode: Some(network),
            memory: Some(self.limits.memory_bytes),
            // Equal to memory: no swap, so the limit is the limit.
            memory_swap: Some(self.limits.memory_bytes),
            nano_cpus: Some((self.limits.cpus * 1e9) as i64),
            pids_limit: Some(self.limits.pids),
            readonly_rootfs: Some(self.read_only_root),
            tmpfs: Some(tmpfs),
            cap_drop: Some(vec!["ALL".to_string()]),
            security_opt: Some(vec![
                "no-new-privileges".to_string(),
                super::seccomp::security_opt(),
            ]),
            // docker-init reaps what commands leave behind and forwards signals.
            init: Some(true),
            ..Default::default()
        };
        let mut env: Vec<String> = vec![format!("HOME={DEFAULT_HOME}")];
        env.extend(self.env.iter().map(|(k, v)| format!("{k}={v}")));
        // The default image has its tools on its own PATH; its mount of
        // berth's tools serves the exec agent alone.
        let tools_on_path = tools.is_some() && self.injects_tools();
        if !self.path_append.is_empty() || tools_on_path {
            // Docker replaces the image's PATH with the container's: the
            // image's own first, then the declared directories, then berth's
            // tools (so the image's programs win over busybox's).
            let base = image
                .path
                .clone()
                .unwrap_or_else(|| crate::runner::DEFAULT_PATH.to_string());
            let mut append = self.path_append.clone();
            if tools_on_path {
                append.push(TOOLS_BIN.to_string());
            }
            env.push(format!(
                "PATH={}",
                crate::runner::append_path(base, &append)
            ));
        }

        let mut body = ContainerCreateBody {
            image: Some(image.name.clone()),
            // Whatever the image's entrypoint, the container only idles: every
            // command is an exec. With berth's helper at hand it idles as
            // the exec agent's parent, which it starts first, so bringing
            // the berth up needs no exec to start it.
            entrypoint: Some(vec![String::new()]),
            cmd: Some(if agent_main {
                vec![
                    idle_helper_program(),
                    berth_exec_agent::listen::IDLE_SUBCOMMAND.to_string(),
                    EXEC_SOCKETS_MOUNT.to_string(),
                ]
            } else {
                vec!["sleep".to_string(), "infinity".to_string()]
            }),
            user: Some(format!("{}:{}", self.uid, self.gid)),
            working_dir: Some(WORK.to_string()),
            env: Some(env),
            tty: Some(false),
            open_stdin: Some(false),
            host_config: Some(host_config),
            ..Default::default()
        };
        // The image id too: a rebuilt image means a new container.
        let hash = spec_hash(&body, &image.id);
        let mut labels = HashMap::from([
            (MANAGED_LABEL.to_string(), "1".to_string()),
            (PROJECT_LABEL.to_string(), self.project.clone()),
            (AGENT_LABEL.to_string(), self.agent.clone()),
            (SPEC_LABEL.to_string(), hash),
            (
                WORK_ACCESS_LABEL.to_string(),
                access_label(access).to_string(),
            ),
            (
                WORKTREE_LABEL.to_string(),
                self.worktree.to_string_lossy().into_owned(),
            ),
        ]);
        if !self.instance.is_empty() {
            labels.insert(INSTANCE_LABEL.to_string(), self.instance.clone());
        }
        if let Some(worker) = &self.worker {
            labels.insert(WORKER_LABEL.to_string(), worker.clone());
        }
        body.labels = Some(labels);
        body
    }
}

/// The container name of `project`/`agent` (no instance).
pub fn container_name(project: &str, agent: &str) -> String {
    container_name_in("", project, agent)
}

/// The container name of `project`/`agent` of berth installation `instance`
/// (empty: none).
pub fn container_name_in(instance: &str, project: &str, agent: &str) -> String {
    if instance.is_empty() {
        format!("berth-{project}.{agent}")
    } else {
        format!("berth-{project}.{agent}.{instance}")
    }
}

pub(crate) fn access_label(access: WorkAccess) -> &'static str {
    match access {
        WorkAccess::ReadWrite => "rw",
        WorkAccess::ReadOnly => "ro",
    }
}

/// Container paths no mount may cover.
const RESERVED: &[&str] = &[
    "/proc",
    "/sys",
    "/dev",
    "/etc",
    "/usr",
    "/bin",
    "/lib",
    TOOLS_MOUNT,
];

fn nests(inner: &str, outer: &str) -> bool {
    inner == outer || (inner.starts_with(outer) && inner.as_bytes().get(outer.len()) == Some(&b'/'))
}

/// berth's one name rule (`berth_worktrees`'): what the engine and git accept
/// is what a container name and its labels accept.
fn is_name(s: &str) -> bool {
    berth_worktrees::is_valid_name(s)
}

/// The program of a container that idles as the exec agent's parent:
/// berth's own helper, from the tools mounted read-only at `/opt/berth`.
fn idle_helper_program() -> String {
    format!("{TOOLS_BIN}/berth-helper")
}

/// Whether the container of `body` idles as berth's own helper (which
/// never exits on its own) rather than as the image's `sleep infinity`.
pub(crate) fn idles_as_berths_helper(body: &ContainerCreateBody) -> bool {
    body.cmd
        .as_ref()
        .and_then(|c| c.first())
        .is_some_and(|program| *program == idle_helper_program())
}

fn spec_hash(body: &ContainerCreateBody, image_id: &str) -> String {
    let mut h = Sha256::new();
    // Through a `Value`, whose maps are sorted: the body's `HashMap`s (tmpfs)
    // serialize in a different order each time.
    let canonical = serde_json::to_value(body)
        .and_then(|v| serde_json::to_vec(&v))
        .unwrap_or_default();
    h.update(canonical);
    h.update(image_id.as_bytes());
    crate::image::hex(&h.finalize())[..16].to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn names_never_collide() {
        assert_eq!(container_name("demo", "dev-1"), "berth-demo.dev-1");
        // With '-' allowed in both parts, only a separator names cannot hold
        // keeps ("a-b","c") and ("a","b-c") apart.
        assert_ne!(container_name("a-b", "c"), container_name("a", "b-c"));
        assert_eq!(
            container_name_in("9f3a", "demo", "dev-1"),
            "berth-demo.dev-1.9f3a"
        );
        assert_ne!(
            container_name_in("x", "demo", "dev-1"),
            container_name_in("y", "demo", "dev-1")
        );
        // ("a", "b", instance "c") is `berth-a.b.c`; no project or agent name
        // holds the '.' that would make another triple spell it.
        for bad in ["", "a.b", "a/b", "-a", "a b", &"x".repeat(49)] {
            assert!(!is_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn nesting_is_by_path_component() {
        let cases = [
            ("/work", "/work", true),
            ("/work/x", "/work", true),
            ("/workspace", "/work", false),
            ("/etc", "/etc", true),
            ("/etcetera", "/etc", false),
        ];
        for (a, b, want) in cases {
            assert_eq!(nests(a, b), want, "{a} in {b}");
        }
    }

    #[test]
    fn the_frame_scopes_the_repo_but_not_the_forge() {
        let s = ContainerSpec::new(
            "p",
            "a",
            "/s/wt/p/a",
            "/s/agents/p/a.git",
            "/s/forge/p.git/objects",
        );
        let Frame::Container {
            project_root,
            mounts,
            home,
        } = s.frame()
        else {
            panic!("not a container frame");
        };
        assert_eq!(project_root, "/work");
        assert_eq!(home, "/home/agent");
        assert_eq!(
            mounts,
            vec![
                FrameMount {
                    target: "/work".into(),
                    kind: MountKind::Project
                },
                FrameMount {
                    target: "/s/agents/p/a.git".into(),
                    kind: MountKind::Host { in_scope: true }
                },
                FrameMount {
                    target: "/s/forge/p.git/objects".into(),
                    kind: MountKind::Host { in_scope: false }
                },
            ]
        );
        let map = s.path_map();
        assert_eq!(
            map.to_host("/work/src"),
            Some(PathBuf::from("/s/wt/p/a/src"))
        );
        assert_eq!(
            map.to_host("/s/agents/p/a.git/HEAD"),
            Some(PathBuf::from("/s/agents/p/a.git/HEAD"))
        );
    }

    #[test]
    fn the_container_is_hardened_and_labelled() {
        let s = ContainerSpec::new("p", "a", "/s/wt", "/s/a.git", "/s/f/objects");
        let img = ImageInfo {
            name: "img".into(),
            id: "sha256:1".into(),
            path: None,
        };
        let body = s.container_body(&img, WorkAccess::ReadOnly, None);
        let hc = body.host_config.clone().unwrap();
        assert_eq!(hc.network_mode.as_deref(), Some("none"));
        assert_eq!(hc.cap_drop, Some(vec!["ALL".to_string()]));
        let opts = hc.security_opt.clone().unwrap();
        assert_eq!(opts[0], "no-new-privileges");
        assert_eq!(opts[1], super::super::seccomp::security_opt());
        assert_eq!(opts.len(), 2);
        assert_eq!(hc.readonly_rootfs, Some(true));
        let tmpfs = hc.tmpfs.clone().unwrap();
        assert_eq!(
            tmpfs["/tmp"],
            "rw,exec,nosuid,nodev,mode=1777,size=268435456,nr_inodes=65536"
        );
        assert_eq!(
            tmpfs["/home/agent"],
            "rw,exec,nosuid,nodev,mode=0700,uid=1000,gid=1000,size=268435456,nr_inodes=65536"
        );
        assert_eq!(hc.memory, hc.memory_swap);
        assert_eq!(hc.init, Some(true));
        assert_eq!(body.user.as_deref(), Some("1000:1000"));
        let mounts: Vec<_> = hc
            .mounts
            .unwrap()
            .into_iter()
            .map(|m| (m.source.unwrap(), m.target.unwrap(), m.read_only.unwrap()))
            .collect();
        assert_eq!(
            mounts,
            vec![
                ("/s/wt".into(), "/work".into(), true),
                ("/s/a.git".into(), "/s/a.git".into(), false),
                ("/s/f/objects".into(), "/s/f/objects".into(), true),
            ]
        );
        let labels = body.labels.unwrap();
        assert_eq!(labels[MANAGED_LABEL], "1");
        assert_eq!(labels[WORK_ACCESS_LABEL], "ro");
        // A different access is a different container.
        let rw = s
            .container_body(&img, WorkAccess::ReadWrite, None)
            .labels
            .unwrap();
        assert_ne!(rw[SPEC_LABEL], labels[SPEC_LABEL]);
        // The same spec hashes the same every time (its maps have no order).
        for _ in 0..20 {
            let again = s
                .container_body(&img, WorkAccess::ReadOnly, None)
                .labels
                .unwrap();
            assert_eq!(again[SPEC_LABEL], labels[SPEC_LABEL]);
        }
    }

    #[test]
    fn only_a_container_idling_as_berths_helper_skips_the_running_check() {
        let dir = tempfile::tempdir().unwrap();
        let tools = dir.path().join("tools");
        std::fs::create_dir_all(tools.join("bin")).unwrap();
        std::fs::write(tools.join("bin/berth-helper"), b"").unwrap();
        let mut s = ContainerSpec::new("p", "a", "/s/wt", "/s/a.git", "/s/f/objects");
        let img = ImageInfo {
            name: "img".into(),
            id: "sha256:1".into(),
            path: None,
        };
        // No exec agent: the image's `sleep infinity`, checked after start.
        let sleeps = s.container_body(&img, WorkAccess::ReadWrite, Some(&tools));
        assert_eq!(
            sleeps.cmd.as_deref(),
            Some(&["sleep".to_string(), "infinity".to_string()][..])
        );
        assert!(!idles_as_berths_helper(&sleeps));
        // With one, and berth's helper among the tools: berth's own program.
        s.exec_socket_root = Some(dir.path().join("sockets"));
        let helper = s.container_body(&img, WorkAccess::ReadWrite, Some(&tools));
        assert!(idles_as_berths_helper(&helper));
        // Without the helper among the tools it sleeps again.
        let no_tools = s.container_body(&img, WorkAccess::ReadWrite, None);
        assert!(!idles_as_berths_helper(&no_tools));
        // What the check found is not part of the container: same body,
        // same spec hash.
        s.checked_image = Some(CheckedImage {
            of: ImageRef::DefaultAgent,
            found: img.clone(),
        });
        let checked = s.container_body(&img, WorkAccess::ReadWrite, Some(&tools));
        assert_eq!(checked, helper);
    }
}
