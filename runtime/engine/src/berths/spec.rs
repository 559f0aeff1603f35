//! A project's settings become a berth's sandbox spec here, once: the
//! runner's whole configuration or a container's whole spec
//! ([`berth_sandbox::BerthSpec`]), which the provider then opens as-is.
//! Nothing after this reads `[sandbox]` to open a berth.
//!
//! The decision is made in the berth's [`Frame`] before any of this
//! matters; the sandbox's path map translates only afterwards.

use std::path::PathBuf;

use berth_policy::Frame;
use berth_sandbox::docker::{ContainerSpec, ExtraMount, Network, ResourceLimits};
use berth_sandbox::egress_port::proxy_env;
use berth_sandbox::provider::{cgroup_scope, instance_of};
use berth_sandbox::{BerthBackend, BerthMode, BerthSpec, RunnerBerth, RunnerConfig};

use crate::Engine;
use crate::agents::Agent;
use crate::config::{NetworkConfig, NetworkMode, ProjectConfig};

/// Docker's default network, where `[sandbox.network] mode = "open"` puts a
/// container unless `docker_network` names another.
const DEFAULT_BRIDGE: &str = "bridge";

/// Where one berth's parts live on the host, under the state directory.
#[derive(Debug, Clone)]
pub(crate) struct BerthPlaces {
    /// This state directory's mark on its containers and cgroups.
    pub instance: String,
    /// The worker this process is (`berth serve --worker`), put on its
    /// containers as a label.
    pub worker: Option<String>,
    /// The worktree (`/work` in the frame).
    pub worktree: PathBuf,
    /// The agent's own repository.
    pub agent_repo: PathBuf,
    /// The forge's objects (the agent repository's alternates), read-only.
    pub forge_objects: PathBuf,
    /// A runner berth's `HOME` (`<berth dir>/.home`, on the berth's own
    /// disk when it has one), kept across `down --keep-worktree`.
    pub home: PathBuf,
    /// A runner berth's `/tmp` (`<berth dir>/.tmp`), emptied at `down`.
    pub private_tmp: PathBuf,
    /// Where a container's `/etc/passwd` and `/etc/group` are written
    /// (`<state>/identities/<project>/<agent>`, never mounted whole).
    pub identity_dir: PathBuf,
    /// Where each runner exec records its process group (`<state>/execs`),
    /// so `berth cancel` finds it without cgroups.
    pub exec_records: PathBuf,
    /// Where a runner berth's resident listens (`<state>/residents/<project>/<agent>`,
    /// berth's own, 0700): the process that holds the berth's namespaces and
    /// forks each exec.
    pub residents: PathBuf,
    /// Where each container's exec agent finds its sockets
    /// (`<state>/sockets/<hash>`, mounted read-only into the container).
    pub exec_sockets: PathBuf,
}

/// The uid a berth is opened with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpenAs {
    /// The berth's own uid (gid = uid): always for a container; for a
    /// runner berth when berth is root and the berth has one. `None` keeps
    /// a runner's commands at uid 0 with no capabilities as root, or the
    /// user's own uid.
    pub uid: Option<u32>,
    /// Bring-up: the runner berth's home is given to its uid whole.
    pub claim_home: bool,
}

impl OpenAs {
    /// Taking a berth (or its container) down names it; no uid matters.
    pub const TAKING_DOWN: OpenAs = OpenAs {
        uid: None,
        claim_home: false,
    };
}

impl Engine {
    /// The places of `agent`'s berth whose worktree is `worktree`.
    pub(crate) fn berth_places(&self, agent: &Agent, worktree: PathBuf) -> BerthPlaces {
        let root = self.state.root();
        // In the berth's directory, so on its own disk when it has one
        // (`.home` and `.tmp` are no agent's names: names start with a
        // letter or digit).
        let berth_dir = crate::berth_disk::berth_dir(root, &agent.project, &agent.name);
        BerthPlaces {
            instance: instance_of(root),
            worker: self.worker().map(str::to_string),
            agent_repo: self.git().agent_repo(&agent.project, &agent.name),
            forge_objects: self
                .git()
                .forge_objects(&agent.project)
                .unwrap_or_else(|_| root.join("forge").join("objects")),
            home: berth_dir.join(".home"),
            private_tmp: berth_dir.join(".tmp"),
            identity_dir: root
                .join("identities")
                .join(&agent.project)
                .join(&agent.name),
            exec_records: root.join("execs"),
            exec_sockets: root.join("sockets"),
            residents: crate::berth_disk::residents_dir(root, &agent.project, &agent.name),
            worktree,
        }
    }

    /// `agent`'s berth of `mode`, as its provider opens it.
    pub(crate) fn berth_spec(
        &self,
        agent: &Agent,
        mode: BerthMode,
        worktree: PathBuf,
        config: &ProjectConfig,
        open_as: OpenAs,
    ) -> BerthSpec {
        let places = self.berth_places(agent, worktree);
        // `allowlist`: the berth's proxy on its loopback, and its clients
        // pointed at it (berth_sandbox::egress_port).
        let egress = (config.sandbox.network.mode == NetworkMode::Allowlist)
            .then(|| self.egress_hook(&agent.project, &agent.name));
        let backend = match mode {
            BerthMode::Runner => {
                let mut runner = runner_berth(agent, &places, config, open_as);
                if let Some(hook) = egress {
                    runner.config.env.extend(proxy_env());
                    runner.config.confinement.egress = Some(hook);
                }
                BerthBackend::Runner(Box::new(runner))
            }
            BerthMode::Mounted => {
                let mut c = container_spec(
                    agent,
                    &places,
                    config,
                    open_as.uid.unwrap_or(config.sandbox.uid),
                );
                if let Some(hook) = egress {
                    c.env.extend(proxy_env());
                    c.egress = Some(hook);
                }
                BerthBackend::Mounted(Box::new(c))
            }
        };
        BerthSpec {
            project: agent.project.clone(),
            agent: agent.name.clone(),
            backend,
        }
    }
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

/// A runner berth from the project's `[sandbox]` and `[scope]` settings.
fn runner_berth(
    agent: &Agent,
    places: &BerthPlaces,
    config: &ProjectConfig,
    open_as: OpenAs,
) -> RunnerBerth {
    let sandbox = &config.sandbox;
    let mut runner = RunnerConfig::new(&places.worktree, &places.home);
    runner.extra_roots = config.scope.extra_roots.iter().map(PathBuf::from).collect();
    let confinement = &mut runner.confinement;
    confinement.private_tmp = Some(places.private_tmp.clone());
    confinement.exec_records = Some(places.exec_records.clone());
    confinement.resident = Some(places.residents.clone());
    confinement.uid = open_as.uid.map(|uid| (uid, uid));
    confinement.limits = berth_sandbox::runner::CgroupLimits {
        processes: Some(sandbox.pids),
        memory: Some(sandbox.memory_mb << 20),
    };
    confinement.agent_repo = Some(places.agent_repo.clone());
    confinement.readable = vec![places.forge_objects.clone()];
    // Declared toolchains read-only, caches read-write, at their own paths.
    confinement
        .readable
        .extend(sandbox.toolchains.iter().map(|d| PathBuf::from(&d.path)));
    confinement.writable = sandbox
        .caches
        .iter()
        .map(|d| PathBuf::from(&d.path))
        .collect();
    confinement.network = runner_network(&sandbox.network);
    confinement.git_identity = crate::git::agent_git_identity(&agent.name);
    let scope = cgroup_scope(&places.instance, &agent.project);
    if berth_sandbox::runner::cgroup_name_valid(&scope, &agent.name) {
        confinement.cgroup_name = Some((scope.clone(), agent.name.clone()));
    }
    // Counted per exec inside a user namespace (berth not root).
    runner.rlimits.nproc = Some(sandbox.pids);
    // The variables declared directories carry, and their programs after
    // the rest of PATH.
    let declared = crate::declared_dirs::declared_env(sandbox);
    // devcontainer.json's containerEnv under them (berth.toml's win).
    runner.env = config
        .devcontainer
        .as_ref()
        .map(|d| d.container_env.clone())
        .unwrap_or_default();
    runner.env.extend(declared.vars);
    runner.path_append = declared.path_append;
    RunnerBerth {
        config: runner,
        cgroup_scope: scope,
        claim_home: open_as.claim_home,
    }
}

/// A container's spec from the project's `[sandbox]` and `[scope]` settings.
fn container_spec(
    agent: &Agent,
    places: &BerthPlaces,
    config: &ProjectConfig,
    uid: u32,
) -> ContainerSpec {
    let s = &config.sandbox;
    let mut c = ContainerSpec::new(
        &agent.project,
        &agent.name,
        &places.worktree,
        &places.agent_repo,
        &places.forge_objects,
    );
    c.instance = places.instance.clone();
    c.worker = places.worker.clone();
    c.image = crate::project_image::image_ref(config);
    c.uid = uid;
    c.gid = uid;
    c.identity_dir = Some(places.identity_dir.clone());
    c.exec_socket_root = s.exec_agent.then(|| places.exec_sockets.clone());
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
    c.git_identity = crate::git::agent_git_identity(&agent.name);
    c.read_only_root = s.read_only_root;
    // The project's extra roots are in scope in the runner; in a container
    // they are visible only when mounted, at the same path.
    c.extra_mounts = config
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
    // devcontainer.json's containerEnv first: berth.toml's win.
    if let Some(d) = &config.devcontainer {
        c.env.extend(d.container_env.clone());
    }
    c.env.extend(declared.vars);
    c.path_append = declared.path_append;
    c
}

/// A container's network from `[sandbox.network]`: `none` is Docker's
/// `none` (only loopback), `open` the default bridge or `docker_network`.
fn container_network(network: &NetworkConfig) -> Network {
    match (network.mode, network.docker_network.as_str()) {
        // `allowlist`: no route out; the egress proxy is the only way.
        (NetworkMode::None | NetworkMode::Allowlist, _) => Network::None,
        (NetworkMode::Open, "") => Network::Named(DEFAULT_BRIDGE.to_string()),
        (NetworkMode::Open, name) => Network::Named(name.to_string()),
    }
}

/// A runner exec's network: `none` is a network namespace of its own
/// holding only `lo`; `open` stays in the host's (`docker_network` names a
/// container's network and means nothing here). The old `[sandbox] network`
/// string named a container's network only: read from it, the runner keeps
/// only `lo`, as it did.
fn runner_network(network: &NetworkConfig) -> berth_sandbox::runner::Network {
    match network.mode {
        NetworkMode::Open if network.legacy.is_none() => berth_sandbox::runner::Network::Open,
        _ => berth_sandbox::runner::Network::None,
    }
}

#[cfg(test)]
mod network_tests {
    use super::*;
    use berth_sandbox::runner::Network as RunnerNetwork;

    fn parse(t: &str) -> NetworkConfig {
        ProjectConfig::parse(t, "berth.toml")
            .unwrap()
            .sandbox
            .network
    }

    #[test]
    fn the_network_table_names_the_containers_network() {
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

    #[test]
    fn only_the_table_opens_a_runner_berths_network() {
        assert_eq!(runner_network(&parse("")), RunnerNetwork::None);
        assert_eq!(
            runner_network(&parse("[sandbox.network]\nmode = \"open\"\n")),
            RunnerNetwork::Open
        );
        // The old string named a container's network only.
        assert_eq!(
            runner_network(&parse("[sandbox]\nnetwork = \"bridge\"\n")),
            RunnerNetwork::None
        );
        assert_eq!(
            runner_network(&parse("[sandbox]\nnetwork = \"none\"\n")),
            RunnerNetwork::None
        );
    }
}
