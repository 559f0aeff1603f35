//! `berth doctor`: every part berth depends on, checked where it can be
//! without running an agent, each finding with what to do.
//!
//! A person runs the doctor when something does not work, or before trusting
//! a machine with agents; it must name the part (the Docker engine, an
//! image, a confinement mechanism, the state's permissions, berth's own
//! helper programs, the host's git, the berths' disks and uids) and the one
//! command or setting that fixes it, and never stop at the first problem.
//! The checks only read: nothing is built, pulled, started or removed here.

use serde::Serialize;

use berth_sandbox::docker::DockerBackend;

use crate::Engine;
use crate::config::{BerthMode, ProjectConfig};
use crate::error::Result;
use crate::project_image::{context_problem, image_ref};
use berth_sandbox::image::{ImageRef, ToolsSource, default_tools_root, find_tools};

/// How a part stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// In place.
    Ok,
    /// Works, with a limit a person should know (a fallback, a weaker bound).
    Warn,
    /// Something berth needs is missing: some commands will fail.
    Fail,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Ok => "ok",
            CheckStatus::Warn => "warn",
            CheckStatus::Fail => "fail",
        }
    }
}

/// One finding of the doctor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    /// The part checked: `state`, `devcontainer`, `docker`, `image`,
    /// `runner`, `cgroups` (what entering an exec's cgroup costs), `helper`,
    /// `tools` (berth's tools for images that lack them), `git`, `disk`,
    /// `uid`, `orphans`.
    pub part: &'static str,
    pub status: CheckStatus,
    /// What was found.
    pub detail: String,
    /// What to do, when something is to be done.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn ok(part: &'static str, detail: impl Into<String>) -> Check {
        Check {
            part,
            status: CheckStatus::Ok,
            detail: detail.into(),
            fix: None,
        }
    }

    fn with(
        part: &'static str,
        status: CheckStatus,
        detail: impl Into<String>,
        fix: impl Into<String>,
    ) -> Check {
        Check {
            part,
            status,
            detail: detail.into(),
            fix: Some(fix.into()),
        }
    }
}

/// Every finding, in the order a person would fix them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Checkup {
    pub checks: Vec<Check>,
}

impl Checkup {
    /// The worst status found (`Ok` when there are no checks).
    pub fn worst(&self) -> CheckStatus {
        if self.checks.iter().any(|c| c.status == CheckStatus::Fail) {
            CheckStatus::Fail
        } else if self.checks.iter().any(|c| c.status == CheckStatus::Warn) {
            CheckStatus::Warn
        } else {
            CheckStatus::Ok
        }
    }
}

impl Engine {
    /// Checks every part berth depends on; see the module doc.
    pub async fn checkup(&self) -> Result<Checkup> {
        let mut checks = Vec::new();
        self.check_state(&mut checks);
        let configs = self.project_configs().await?;
        check_devcontainers(&configs, &mut checks);
        let docker = check_docker(&configs, &mut checks).await;
        if let Some(backend) = &docker {
            check_images(backend, self.state.root(), &configs, &mut checks).await;
            self.check_branch_images(&configs, &mut checks).await;
        }
        check_runner(&mut checks);
        check_cgroup_migrations(&mut checks);
        check_helpers(&mut checks);
        check_git(&mut checks);
        self.check_disks(&mut checks).await?;
        self.check_uids(&mut checks).await?;
        if docker.is_some() {
            self.check_orphans(&mut checks).await;
        }
        Ok(Checkup { checks })
    }

    fn check_state(&self, checks: &mut Vec<Check>) {
        match crate::private_state::exposure(&self.state) {
            Ok(exposed) if exposed.is_empty() => checks.push(Check::ok(
                "state",
                format!(
                    "{} and its store are private to this user",
                    self.state.root().display()
                ),
            )),
            Ok(exposed) => {
                for e in exposed {
                    checks.push(Check::with(
                        "state",
                        CheckStatus::Warn,
                        format!(
                            "{} is open to other users (mode {:04o})",
                            e.path.display(),
                            e.mode
                        ),
                        format!("chmod {:o} {}", e.wanted, e.path.display()),
                    ));
                }
            }
            Err(e) => checks.push(Check::with(
                "state",
                CheckStatus::Fail,
                format!("cannot read the state's permissions: {e}"),
                "check that this user owns the state directory (BERTH_STATE or --state)",
            )),
        }
    }

    /// Each project's `berth.toml`, read once for every check. A broken one
    /// is the project's own finding, said by every command that loads it;
    /// here the project is left out.
    /// A project's image built from its Dockerfile on the base branch,
    /// whose context changed there since: a warning naming the rebuild (a
    /// merged change is not in the image until then).
    async fn check_branch_images(
        &self,
        configs: &[(String, ProjectConfig)],
        checks: &mut Vec<Check>,
    ) {
        for (project, config) in configs {
            let Some(record) = config.dockerfile_image.as_ref() else {
                continue;
            };
            if !config.sandbox.build.is_set()
                || config.sandbox.mode.fixed() == Some(BerthMode::Runner)
            {
                continue;
            }
            let Ok(p) = self.project(project).await else {
                continue;
            };
            match self.dockerfile_image_note(project, &p.base_branch, record).await {
                Ok(Some(note)) => checks.push(Check::with(
                    "image",
                    CheckStatus::Warn,
                    note,
                    format!("berth image build --project {project}"),
                )),
                Ok(None) => {}
                Err(e) => checks.push(Check::with(
                    "image",
                    CheckStatus::Warn,
                    format!("project {project}'s Dockerfile context could not be read on its base branch: {e}"),
                    format!("berth image build --project {project}"),
                )),
            }
        }
    }

    async fn project_configs(&self) -> Result<Vec<(String, ProjectConfig)>> {
        let mut configs = Vec::new();
        for p in self.projects().await? {
            if let Ok((config, _)) = self.load_project_files(&p.name) {
                configs.push((p.name, config));
            }
        }
        Ok(configs)
    }

    async fn check_disks(&self, checks: &mut Vec<Check>) -> Result<()> {
        let disks = self.disk_doctor().await?;
        match disks.unbounded {
            Some(note) => checks.push(Check::with(
                "disk",
                CheckStatus::Warn,
                note,
                "run berth as root for a disk per berth, or bound the state directory's file system",
            )),
            None => checks.push(Check::ok(
                "disk",
                "each berth's worktree and repository live on a disk of its own ([sandbox] disk, disk_inodes)",
            )),
        }
        for (project, agent) in disks.unmounted {
            checks.push(Check::with(
                "disk",
                CheckStatus::Fail,
                format!(
                    "{agent} ({project}): its disk is not mounted (a reboot?), so its worktree is not where berth looks"
                ),
                "berth reconcile",
            ));
        }
        for (project, agent) in disks.without_disk {
            checks.push(Check::with(
                "disk",
                CheckStatus::Warn,
                format!(
                    "{agent} ({project}) has a worktree on this host's disk, not on one of its own (made before, or while berth was not root): what it writes is not limited"
                ),
                format!("berth down {agent}, then berth up {agent} --project {project}"),
            ));
        }
        Ok(())
    }

    async fn check_uids(&self, checks: &mut Vec<Check>) -> Result<()> {
        let findings = self.doctor().await?;
        if findings.is_empty() {
            checks.push(Check::ok(
                "uid",
                "every berth's uid is its own: no host account, group or subordinate range has it",
            ));
        }
        for f in findings {
            checks.push(Check::with(
                "uid",
                CheckStatus::Fail,
                format!(
                    "{} ({}) runs as uid {}, which the host also gives to someone: {}",
                    f.agent,
                    f.project,
                    f.uid,
                    f.claims.join("; ")
                ),
                f.command,
            ));
        }
        Ok(())
    }

    async fn check_orphans(&self, checks: &mut Vec<Check>) {
        match self.orphan_containers(false).await {
            Ok(orphans) if orphans.is_empty() => {}
            Ok(orphans) => checks.push(Check::with(
                "orphans",
                CheckStatus::Warn,
                format!(
                    "{} berth container(s) outlive their deleted state directory ({}): they run until removed",
                    orphans.len(),
                    orphans
                        .iter()
                        .map(|o| o.container.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                "berth reconcile --orphans",
            )),
            Err(e) => checks.push(Check::with(
                "orphans",
                CheckStatus::Warn,
                format!("could not look for orphan berth containers: {e}"),
                "check the Docker engine, then berth doctor again",
            )),
        }
    }
}

/// The runner's confinement: the shim, Landlock, user namespaces.
fn check_runner(checks: &mut Vec<Check>) {
    match crate::confinement::runner_confinement_note() {
        None => checks.push(Check::ok(
            "runner",
            "runner berths are confined: namespaces with the worktree at /work, Landlock, seccomp, cgroups",
        )),
        Some(missing) => checks.push(Check::with(
            "runner",
            CheckStatus::Fail,
            format!("runner berths cannot be confined here: {missing}"),
            "fix what is named; until then runner execs fail, and auto mode on a runner berth is refused unless [sandbox] allow_unconfined = true",
        )),
    }
}

/// What a runner exec pays to enter its cgroup. Moving a process into a
/// cgroup takes the kernel's cgroup-wide threadgroup lock for writing, and
/// by default that waits for an RCU grace period: 5–10 ms (measured here:
/// 7–10 ms of a 13.7 ms exec of `true`). A berth's resident forks each exec
/// straight into its cgroup and pays it once, at its start; an exec the
/// shim sets up (the resident could not start) pays it every time. With
/// a cgroup hierarchy mounted `favordynmods` (Linux 6.0+) the kernel keeps
/// the lock ready for writers instead — 0.3 ms — at a small cost to every
/// fork and exit on the host. Without a remount (which only a reboot
/// undoes), expedited RCU grace periods (`/sys/kernel/rcu_expedited`,
/// reversible) shorten the wait instead: measured here under load, a
/// migration's median 7.8–8.5 ms became 1.5–3.9 ms. Host-wide choices, so
/// berth says them and leaves them to the person.
fn check_cgroup_migrations(checks: &mut Vec<Check>) {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else {
        return;
    };
    let sysfs = |name: &str| std::fs::read_to_string(format!("/sys/kernel/{name}")).ok();
    let expedited = rcu_expedited(
        sysfs("rcu_expedited").as_deref(),
        sysfs("rcu_normal").as_deref(),
    );
    match cgroup_migrations_favoured(&mounts) {
        None => {}
        Some((true, _)) => checks.push(Check::ok(
            "cgroups",
            "cgroup migrations are quick (a hierarchy is mounted favordynmods): a runner exec enters its cgroup in well under a millisecond",
        )),
        Some((false, _)) if expedited => checks.push(Check::ok(
            "cgroups",
            "cgroup migrations wait only for expedited RCU grace periods (/sys/kernel/rcu_expedited is 1): a runner exec enters its cgroup within a few milliseconds",
        )),
        Some((false, mount)) => checks.push(Check::with(
            "cgroups",
            CheckStatus::Warn,
            "a runner exec the shim sets up (when the berth's resident cannot start), and each berth's resident as it starts, waits 5–10 ms for the kernel to move it into its cgroup (an RCU grace period: the default favours forks over migrations)",
            format!(
                "for quicker runner execs, as root: mount -o remount,favordynmods {mount} (Linux 6.0+; host-wide, makes every fork and exit a little slower; undone only by a reboot), or echo 1 > /sys/kernel/rcu_expedited (host-wide, every RCU wait interrupts all CPUs; echo 0 undoes it)"
            ),
        )),
    }
}

/// Whether the kernel expedites RCU grace periods: `rcu_expedited` set and
/// `rcu_normal` (which overrides it) not. Unreadable counts as not set.
fn rcu_expedited(expedited: Option<&str>, normal: Option<&str>) -> bool {
    let set = |v: Option<&str>| v.is_some_and(|v| v.trim().parse::<u64>().is_ok_and(|n| n != 0));
    set(expedited) && !set(normal)
}

/// From `/proc/self/mounts`: whether any cgroup hierarchy is mounted
/// `favordynmods`, and a cgroup2 mount point (else a v1 one) to remount;
/// `None` without cgroups.
fn cgroup_migrations_favoured(mounts: &str) -> Option<(bool, String)> {
    let mut favoured = false;
    let (mut v2, mut v1) = (None, None);
    for line in mounts.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, point, fstype, options, ..] = fields[..] else {
            continue;
        };
        let slot = match fstype {
            "cgroup2" => &mut v2,
            "cgroup" => &mut v1,
            _ => continue,
        };
        favoured |= options.split(',').any(|o| o == "favordynmods");
        slot.get_or_insert_with(|| point.to_owned());
    }
    v2.or(v1).map(|mount| (favoured, mount))
}

/// berth's own programs beside the binary: the git helper and the exec shim
/// (the shim is part of the runner check).
fn check_helpers(checks: &mut Vec<Check>) {
    match berth_worktrees::locate_helper() {
        Ok(path) => checks.push(Check::ok(
            "helper",
            format!("berth-helper (berth's git work, confined) is at {}", path.display()),
        )),
        Err(e) => checks.push(Check::with(
            "helper",
            CheckStatus::Fail,
            format!("berth-helper is missing: {e}"),
            "install berth-helper beside the berth binary (cargo build --bin berth-helper), or set BERTH_HELPER",
        )),
    }
}

/// The default agent image copies the host's git (Debian's, with its
/// libraries); berth itself never runs the git CLI on an agent's repository.
fn check_git(checks: &mut Vec<Check>) {
    let git = std::path::Path::new("/usr/bin/git");
    if git.is_file() {
        checks.push(Check::ok(
            "git",
            "/usr/bin/git is here: the default agent image can give berths git",
        ));
    } else {
        checks.push(Check::with(
            "git",
            CheckStatus::Warn,
            "/usr/bin/git is missing: `berth image build` cannot give the default agent image git",
            "sudo apt-get install git",
        ));
    }
}

/// What berth makes of each project's devcontainer.json: where it was read,
/// that the user it names is not used as a uid, and every key refused or
/// unsupported (a warning then).
fn check_devcontainers(configs: &[(String, ProjectConfig)], checks: &mut Vec<Check>) {
    for (project, config) in configs {
        let Some(d) = &config.devcontainer else {
            continue;
        };
        let detail = format!(
            "project {project}: {} read from {} at {}{}",
            d.path,
            d.branch,
            crate::ids::short(&d.commit),
            if d.notes.is_empty() {
                String::new()
            } else {
                format!("; {}", d.notes.join("; "))
            }
        );
        let refused = d
            .notes
            .iter()
            .any(|n| n.starts_with("refused:") || n.starts_with("unsupported:"));
        checks.push(if refused {
            Check::with(
                "devcontainer",
                CheckStatus::Warn,
                detail,
                format!(
                    "change devcontainer.json on {} or declare what it needs in berth.toml, then `berth image build --project {project}`",
                    d.branch
                ),
            )
        } else {
            Check::ok("devcontainer", detail)
        });
    }
}

/// The Docker engine: a warning when berths fall back to the runner, a
/// failure when a project fixes mounted mode. The connection, for the checks
/// that need it.
async fn check_docker(
    configs: &[(String, ProjectConfig)],
    checks: &mut Vec<Check>,
) -> Option<DockerBackend> {
    let fixed_mounted: Vec<&str> = configs
        .iter()
        .filter(|(_, c)| c.sandbox.mode.fixed() == Some(BerthMode::Mounted))
        .map(|(p, _)| p.as_str())
        .collect();
    match DockerBackend::connect().await {
        Ok(backend) => {
            checks.push(Check::ok(
                "docker",
                format!(
                    "the Docker engine answers at {}: mounted berths run in containers",
                    backend.socket()
                ),
            ));
            Some(backend)
        }
        Err(e) => {
            let (status, consequence) = if fixed_mounted.is_empty() {
                (
                    CheckStatus::Warn,
                    "berths run as runner berths on this host (sandbox.mode = \"auto\")"
                        .to_string(),
                )
            } else {
                (
                    CheckStatus::Fail,
                    format!(
                        "project(s) {} fix sandbox.mode = \"mounted\" and cannot come up",
                        fixed_mounted.join(", ")
                    ),
                )
            };
            checks.push(Check::with(
                "docker",
                status,
                format!("the Docker engine does not answer ({e}): {consequence}"),
                "start it (sudo systemctl start docker), or set DOCKER_HOST to its socket; a user needs to be in the docker group",
            ));
            None
        }
    }
}

/// Each image a project's berths would run (runner-only projects need none),
/// once per image: whether it is here (a Dockerfile's: whether it is built,
/// and that its context may be read), and, for any image but the default,
/// whether berth's tools can be injected into it.
async fn check_images(
    backend: &DockerBackend,
    state: &std::path::Path,
    configs: &[(String, ProjectConfig)],
    checks: &mut Vec<Check>,
) {
    let mut seen = std::collections::BTreeSet::new();
    let mut tools_needed = false;
    for (project, config) in configs {
        if config.sandbox.mode.fixed() == Some(BerthMode::Runner) {
            continue;
        }
        let image = image_ref(config);
        if !seen.insert(format!("{image:?}")) {
            continue;
        }
        tools_needed |= image != ImageRef::DefaultAgent;
        // An image berth builds for the project and has not built yet.
        let not_built = crate::devcontainer::image_problem(project, config)
            .map(|p| p.to_string())
            .or_else(|| {
                crate::project_image::build_problem(project, config).map(|p| p.to_string())
            });
        if let Some(problem) = not_built {
            checks.push(Check::with(
                "image",
                CheckStatus::Warn,
                problem,
                format!("berth image build --project {project}"),
            ));
            continue;
        }
        if let Some(problem) = context_problem(config, state) {
            checks.push(Check::with(
                "image",
                CheckStatus::Fail,
                format!("the Dockerfile of project {project}: {problem}"),
                "move the build context out of berth's state and set [sandbox.build] context",
            ));
            continue;
        }
        if let ImageRef::Dockerfile(build) = &image {
            checks.push(check_dockerfile_image(backend, project, build).await);
            continue;
        }
        let from_branch = config.dockerfile_image.is_some() && config.sandbox.build.is_set();
        let shown = match config.sandbox.image.trim() {
            _ if from_branch => {
                format!("the image built from project {project}'s Dockerfile on its base branch")
            }
            "" => "the default agent image".to_string(),
            name => format!("image {name}"),
        };
        match backend.ensure_image(&image).await {
            Ok(info) => checks.push(Check::ok(
                "image",
                format!(
                    "{shown} is here ({}), for project {}{}",
                    info.name,
                    project,
                    if image == ImageRef::DefaultAgent {
                        ""
                    } else {
                        "; berth's tools are injected at /opt/berth, so it needs no shell, git or user"
                    }
                ),
            )),
            Err(e) => checks.push(Check::with(
                "image",
                CheckStatus::Fail,
                format!("{shown} of project {}: {e}", project),
                match config.sandbox.image.trim() {
                    _ if from_branch => format!("berth image build --project {project}"),
                    "" => "berth image build".to_string(),
                    name => format!(
                        "build or load {name} locally (docker build -t {name} …; there is no registry), or set [sandbox] image = \"\" for the default"
                    ),
                },
            )),
        }
    }
    if tools_needed {
        checks.push(check_tools().await);
    }
}

/// A project's Dockerfile: its context read and checked, its image built or
/// not yet (nothing is built here).
async fn check_dockerfile_image(
    backend: &DockerBackend,
    project: &str,
    build: &berth_sandbox::image::DockerfileBuild,
) -> Check {
    let prepared = {
        let build = build.clone();
        tokio::task::spawn_blocking(move || build.prepare()).await
    };
    let context = match prepared {
        Ok(Ok(context)) => context,
        Ok(Err(e)) => {
            return Check::with(
                "image",
                CheckStatus::Fail,
                format!("the Dockerfile of project {project}: {e}"),
                "fix the Dockerfile or [sandbox.build]",
            );
        }
        Err(e) => {
            return Check::with(
                "image",
                CheckStatus::Fail,
                format!("the Dockerfile of project {project}: {e}"),
                "run berth doctor again",
            );
        }
    };
    match backend
        .ensure_image(&ImageRef::Named(context.tag.clone()))
        .await
    {
        Ok(_) => Check::ok(
            "image",
            format!(
                "the image of project {project}'s Dockerfile is built ({}); berth's tools are injected at /opt/berth",
                context.tag
            ),
        ),
        Err(_) => Check::with(
            "image",
            CheckStatus::Warn,
            format!(
                "the image of project {project}'s Dockerfile is not built for its current context ({}): the next `berth up` builds it",
                context.tag
            ),
            format!("berth image build --project {project}"),
        ),
    }
}

/// Whether berth's tools (busybox, git, berth-helper) can be injected into
/// an image that lacks them.
async fn check_tools() -> Check {
    let root = default_tools_root();
    let found = tokio::task::spawn_blocking(move || {
        let source = ToolsSource::host_default()?;
        find_tools(&root, &source).map(|set| (set, root))
    })
    .await;
    match found {
        Ok(Ok((Some(set), _))) => Check::ok(
            "tools",
            format!(
                "berth's tools for any image are assembled at {}",
                set.dir.display()
            ),
        ),
        Ok(Ok((None, root))) => Check::ok(
            "tools",
            format!(
                "berth's tools for any image will be assembled from this host under {} at the next `berth up`",
                root.display()
            ),
        ),
        Ok(Err(e)) => Check::with(
            "tools",
            CheckStatus::Fail,
            format!("berth's tools cannot be injected into images: {e}"),
            "install busybox-static and git (Debian: apt-get install busybox-static git), or set BERTH_TOOLS_DIR to a directory of yours",
        ),
        Err(e) => Check::with(
            "tools",
            CheckStatus::Fail,
            format!("berth's tools: {e}"),
            "run berth doctor again",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cgroup_migrations_are_favoured_by_any_hierarchy_mounted_so() {
        let hybrid = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\n\
                      cgroup /sys/fs/cgroup/pids cgroup rw,relatime,pids 0 0\n\
                      cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        assert_eq!(
            cgroup_migrations_favoured(hybrid),
            Some((false, "/sys/fs/cgroup/unified".to_owned()))
        );
        let tuned = hybrid.replace("cgroup2 rw,relatime", "cgroup2 rw,relatime,favordynmods");
        assert_eq!(
            cgroup_migrations_favoured(&tuned),
            Some((true, "/sys/fs/cgroup/unified".to_owned()))
        );
        let v1_only = "cgroup /sys/fs/cgroup/memory cgroup rw,memory,favordynmods 0 0\n";
        assert_eq!(
            cgroup_migrations_favoured(v1_only),
            Some((true, "/sys/fs/cgroup/memory".to_owned()))
        );
        // An option that only contains the word is not it.
        let lookalike = "cgroup2 /sys/fs/cgroup cgroup2 rw,nofavordynmods 0 0\n";
        assert_eq!(
            cgroup_migrations_favoured(lookalike),
            Some((false, "/sys/fs/cgroup".to_owned()))
        );
        // No cgroups: no finding.
        assert_eq!(
            cgroup_migrations_favoured("proc /proc proc rw 0 0\nshort line\n"),
            None
        );
    }

    #[test]
    fn rcu_grace_periods_are_expedited_only_when_set_and_not_overridden() {
        assert!(rcu_expedited(Some("1\n"), Some("0\n")));
        assert!(rcu_expedited(Some("1\n"), None));
        assert!(!rcu_expedited(Some("0\n"), Some("0\n")));
        // rcu_normal overrides rcu_expedited.
        assert!(!rcu_expedited(Some("1\n"), Some("1\n")));
        // Unreadable or not a number: not set.
        assert!(!rcu_expedited(None, Some("0\n")));
        assert!(!rcu_expedited(Some("yes"), None));
    }
}
