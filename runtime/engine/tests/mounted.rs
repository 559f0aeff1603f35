#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Mounted berths through the engine, against the real Docker engine: `up`
//! in a container on the agent's worktree (owned by the container's uid while
//! berth runs as root), git inside it on the agent's branch, the engine's own
//! git2 and file actions on those repositories, isolation between agents and
//! from the forge, the memory limit reported as such, `down` leaving nothing,
//! reconcile, and `container_remove` going through the policy.
//!
//! The hardening itself (capabilities, NoNewPrivs, loopback only, the pids
//! limit) is checked from inside by the sandbox crate's `docker_berth` tests;
//! here it is the engine's wiring that is under test. Without an engine the
//! tests skip with the reason, except under `CI=true`, where they fail.

use crate::common;

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use berth_engine::{
    ActionParams, ActionResult, AgentImpl, BerthMode, DockerProvider, Engine, EventFilter,
    NewProject, Outcome, Proposal, ProposeStatus, StateDir,
};
use berth_policy::Action;
use berth_policy::autonomy::Approval;
use berth_sandbox::docker::DockerBackend;
use berth_sandbox::image::{NoProgress, Recipe};
use common::{named, source_repo, user};

pub(crate) struct Mounted {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) engine: Engine,
    pub(crate) backend: DockerBackend,
    pub(crate) project: String,
}

impl Drop for Mounted {
    /// Removes the test's containers even when it fails, then the berths'
    /// own disks (a mount would outlive the state directory).
    fn drop(&mut self) {
        let names: Vec<String> = std::process::Command::new("docker")
            .args(["ps", "-aq", "--filter"])
            .arg(format!("label=berth.project={}", self.project))
            .output()
            .map(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .split_whitespace()
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if !names.is_empty() {
            let _ = std::process::Command::new("docker")
                .args(["rm", "-f"])
                .args(&names)
                .output();
        }
        berth_engine::release_disks_under(&self.dir.path().join("state"));
    }
}

static IMAGE: tokio::sync::Mutex<bool> = tokio::sync::Mutex::const_new(false);

/// The engine with the Docker provider on a fresh state directory with one
/// project (a unique name: container names are per project and agent), or
/// `None` (skip) without a Docker engine outside CI.
pub(crate) async fn mounted(test: &str, berth_toml: &str) -> Option<Mounted> {
    mounted_as(test, berth_toml, None).await
}

/// [`mounted`], with the project named `project` when given.
async fn mounted_as(test: &str, berth_toml: &str, project: Option<&str>) -> Option<Mounted> {
    let backend = match DockerBackend::connect().await {
        Ok(b) => b,
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true and the Docker engine is unavailable, which fails the run: {e}")
        }
        Err(e) => {
            eprintln!("skipping: no Docker engine: {e}");
            return None;
        }
    };
    {
        let mut built = IMAGE.lock().await;
        if !*built {
            backend
                .build_image(&Recipe::default_agent().unwrap(), &mut NoProgress)
                .await
                .expect("building the default agent image");
            *built = true;
        }
    }
    static N: AtomicU32 = AtomicU32::new(0);
    let project = project.map(str::to_string).unwrap_or_else(|| {
        format!(
            "m{}-{}-{test}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let src = source_repo(dir.path());
    let state = StateDir::new(dir.path().join("state"));
    common::postgres::prepare_state(state.root()).await;
    let init = Engine::init(state.clone()).await.unwrap();
    init.close().await;
    let engine = Engine::open_with(
        state,
        Arc::new(DockerProvider::with_backend(backend.clone())),
    )
    .await
    .unwrap();
    engine
        .add_project(
            NewProject {
                name: named(&project),
                from: src,
                base: None,
                forge_url: None,
            },
            &user(),
        )
        .await
        .unwrap();
    if !berth_toml.is_empty() {
        let file = dir
            .path()
            .join("state/projects")
            .join(&project)
            .join("berth.toml");
        let text = std::fs::read_to_string(&file).unwrap();
        let mut text = text;
        for line in berth_toml.lines() {
            let (key, _) = line.split_once('=').unwrap();
            let key = key.trim();
            let start = text
                .find(&format!("\n{key} = "))
                .unwrap_or_else(|| panic!("no {key} in berth.toml"));
            let end = text[start + 1..].find('\n').unwrap() + start + 1;
            text.replace_range(start + 1..end, line);
        }
        std::fs::write(&file, text).unwrap();
    }
    Some(Mounted {
        dir,
        engine,
        backend,
        project,
    })
}

impl Mounted {
    /// Sets `agent`'s autonomy for `kind` as the person.
    async fn autonomy(&self, agent: &str, kind: &str, mode: Approval) {
        self.engine
            .set_autonomy(agent, kind, mode, &user())
            .await
            .unwrap();
    }

    pub(crate) async fn up(&self, agent: &str) -> PathBuf {
        let info = self.try_up(agent).await.unwrap();
        assert_eq!(info.mode, Some(BerthMode::Mounted));
        assert!(info.note.is_none(), "no runner note: {:?}", info.note);
        info.worktree.unwrap()
    }

    /// Activates `agent` and brings its berth up mounted: what `up` said.
    pub(crate) async fn try_up(
        &self,
        agent: &str,
    ) -> berth_engine::Result<berth_engine::BerthInfo> {
        self.engine
            .activate_agent(
                &named(agent),
                &named(&self.project),
                AgentImpl::Real,
                &user(),
            )
            .await
            .unwrap();
        self.engine
            .up(
                &named(agent),
                &named(&self.project),
                Some(BerthMode::Mounted),
                &user(),
            )
            .await
    }

    /// Proposes `action` as `agent`, approving it when it waits.
    async fn run(&self, agent: &str, action: Action, params: ActionParams) -> Outcome {
        common::run_action(&self.engine, agent, action, params).await
    }

    /// A terminal command's exit code and output.
    pub(crate) async fn sh(&self, agent: &str, command: &str) -> (i32, String, String) {
        let o = self
            .run(
                agent,
                Action::Terminal {
                    command: command.into(),
                },
                ActionParams::default(),
            )
            .await;
        match o.result {
            Some(ActionResult::Terminal {
                exit_code,
                stdout,
                stderr,
                ..
            }) => (exit_code, stdout, stderr),
            other => panic!(
                "{command}: no terminal result: {other:?} ({:?})",
                o.diagnostic
            ),
        }
    }

    pub(crate) async fn ok(&self, agent: &str, command: &str) -> String {
        let (code, out, err) = self.sh(agent, command).await;
        assert_eq!(code, 0, "{command}: {err}");
        out
    }

    pub(crate) fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn agent_repo(&self, agent: &str) -> PathBuf {
        self.state()
            .join("berths")
            .join(&self.project)
            .join(agent)
            .join(format!("{agent}.git"))
    }

    fn forge_objects(&self) -> PathBuf {
        self.state()
            .join("forge")
            .join(format!("{}.git", self.project))
            .join("objects")
    }

    pub(crate) async fn container_exists(&self, agent: &str) -> bool {
        let name = format!(
            "berth-{}.{agent}.{}",
            self.project,
            berth_engine::berths::instance_of(&self.state())
        );
        self.backend
            .docker()
            .inspect_container(&name, None)
            .await
            .is_ok()
    }

    /// The uid recorded for `agent`'s berth.
    async fn uid(&self, agent: &str) -> u32 {
        let uid: Option<i64> = sqlx::query_scalar("SELECT uid FROM agents WHERE name = $1")
            .bind(agent)
            .fetch_one(self.engine.store().pool())
            .await
            .unwrap();
        u32::try_from(uid.expect("a recorded uid")).unwrap()
    }

    /// How many events of `kind` the log holds.
    async fn count_events(&self, kind: &str) -> usize {
        self.event_types()
            .await
            .into_iter()
            .filter(|t| t == kind)
            .count()
    }

    pub(crate) async fn event_types(&self) -> Vec<String> {
        self.engine
            .events(&EventFilter::default())
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }
}

macro_rules! mounted_or_skip {
    ($test:expr) => {
        mounted_or_skip!($test, "")
    };
    ($test:expr, $toml:expr) => {
        match mounted($test, $toml).await {
            Some(m) => m,
            None => return,
        }
    };
}

#[tokio::test]
async fn git_inside_the_container_works_on_the_agents_branch_and_the_host_side_keeps_working() {
    let m = mounted_or_skip!("git");
    let wt = m.up("dev-1").await;
    let uid = m.uid("dev-1").await;
    // The container's uid owns what it must write, though berth runs as root.
    for path in [&wt, &m.agent_repo("dev-1")] {
        assert_eq!(
            std::fs::metadata(path).unwrap().uid(),
            uid,
            "{}",
            path.display()
        );
    }
    assert_eq!(m.ok("dev-1", "id -u").await, format!("{uid}\n"));
    assert_eq!(m.ok("dev-1", "pwd").await, "/work\n");
    let status = m.ok("dev-1", "git status --porcelain=v1 -b").await;
    assert_eq!(status, "## agent/dev-1/scratch\n");
    let log = m
        .ok(
            "dev-1",
            "echo inside > inside.txt && git add inside.txt && \
             git -c user.name=dev -c user.email=dev@x commit -qm 'from inside' && \
             git log --format=%s -2",
        )
        .await;
    assert_eq!(log, "from inside\ninit\n");

    // The engine's own writes (git2, file actions) on those repositories:
    // they work, and what they create belongs to the container's uid.
    let w = m
        .run(
            "dev-1",
            Action::FileWrite {
                path: "/work/sub/dir/host.txt".into(),
            },
            ActionParams {
                content: Some("from the host side\n".into()),
                ..ActionParams::default()
            },
        )
        .await;
    assert!(w.succeeded, "{:?}", w.diagnostic);
    for p in ["sub", "sub/dir", "sub/dir/host.txt"] {
        assert_eq!(std::fs::metadata(wt.join(p)).unwrap().uid(), uid, "{p}");
    }
    assert_eq!(
        m.ok(
            "dev-1",
            "echo more >> sub/dir/host.txt && git add -A && echo ok"
        )
        .await,
        "ok\n"
    );
    let c = m
        .run(
            "dev-1",
            Action::GitCommit,
            ActionParams {
                message: Some("host commit".into()),
                ..ActionParams::default()
            },
        )
        .await;
    assert!(
        c.succeeded,
        "git2 commit on a repository of the berth's uid: {:?}",
        c.diagnostic
    );
    assert_eq!(
        m.ok("dev-1", "git log --format=%s -1 && git status --porcelain")
            .await,
        "host commit\n"
    );
    assert_eq!(
        std::fs::metadata(m.agent_repo("dev-1").join("HEAD"))
            .unwrap()
            .uid(),
        uid
    );
    // A path only in the container is not a file of this host.
    let r = m
        .run(
            "dev-1",
            Action::FileRead {
                path: "/etc/passwd".into(),
            },
            ActionParams::default(),
        )
        .await;
    assert!(!r.succeeded);
    assert!(
        r.diagnostic
            .as_deref()
            .unwrap_or("")
            .contains("container's own filesystem"),
        "{:?}",
        r.diagnostic
    );
}

/// Every exec carries the agent's git identity and the forced git settings:
/// a plain `git commit` at `/work` is by `dev-1[bot]` (berth wrote nothing
/// into the agent's repository config), and a nested repository's
/// `core.fsmonitor` starts no program.
#[tokio::test]
async fn plain_git_commit_is_by_the_agent_and_nested_repository_config_starts_nothing() {
    let m = mounted_or_skip!("gitenv");
    m.up("dev-1").await;
    let log = m
        .ok(
            "dev-1",
            "echo x > x.txt && git add x.txt && git commit -qm x && \
             git log -1 --format='%an <%ae>|%cn <%ce>'",
        )
        .await;
    assert_eq!(
        log,
        "dev-1[bot] <dev-1@berth.local>|dev-1[bot] <dev-1@berth.local>\n"
    );
    let config = std::fs::read_to_string(m.agent_repo("dev-1").join("config")).unwrap();
    assert!(!config.contains("[user]"), "{config}");

    let status = m
        .ok(
            "dev-1",
            "mkdir sub && cd sub && git init -q && \
             git config core.fsmonitor 'touch /work/pwned; false' && \
             git config core.hooksPath /work/hooks && \
             mkdir /work/hooks && printf '#!/bin/sh\\ntouch /work/pwned-hook\\n' > /work/hooks/pre-commit && \
             chmod +x /work/hooks/pre-commit && \
             echo f > f && git status --short && git add f && git commit -qm f && echo committed",
        )
        .await;
    assert!(
        status.contains("?? f") && status.contains("committed"),
        "{status}"
    );
    let (code, out, _) = m.sh("dev-1", "ls /work").await;
    assert_eq!(code, 0);
    assert!(
        !out.contains("pwned"),
        "repository config ran a program: {out}"
    );
}

/// `[sandbox.network] mode = "open"` puts the container on Docker's default
/// bridge (an interface besides `lo`); the default `none` leaves only `lo`.
#[tokio::test]
async fn declared_toolchains_are_read_only_and_caches_writable_at_their_own_paths() {
    use std::os::unix::fs::PermissionsExt;
    let dir = |prefix: &str, mode: u32| {
        let d = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir_in("/srv")
            .unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(mode)).unwrap();
        d
    };
    // Open to all: only the read-only mount keeps the berth from writing.
    let tools = dir("berth-toolchain-", 0o777);
    std::fs::create_dir(tools.path().join("bin")).unwrap();
    let hello = tools.path().join("bin/hello");
    std::fs::write(&hello, "#!/bin/sh\necho hello-from-toolchain\n").unwrap();
    std::fs::set_permissions(&hello, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cache = dir("berth-cache-", 0o777);
    // The table form: the variables it carries (one the policy reads as
    // changing what runs, pointing into it) and its programs on PATH.
    let toml = format!(
        "toolchains = [{{ path = {:?}, env = {{ RUSTUP_HOME = \"{{path}}\", TOOL_FLAVOUR = \"plain\" }}, path_bin = \"bin\" }}]\ncaches = [{:?}]",
        tools.path().display().to_string(),
        cache.path().display().to_string()
    );
    let m = mounted_or_skip!("tc", &toml);
    m.up("dev").await;
    assert_eq!(
        m.ok("dev", &hello.display().to_string()).await,
        "hello-from-toolchain\n"
    );
    assert_eq!(m.ok("dev", "hello").await, "hello-from-toolchain\n");
    assert_eq!(
        m.ok(
            "dev",
            "echo \"$RUSTUP_HOME $TOOL_FLAVOUR\"; echo \"$PATH\" | tr : '\\n' | tail -n 1"
        )
        .await,
        format!(
            "{} plain\n{}\n",
            tools.path().display(),
            tools.path().join("bin").display()
        )
    );
    // The image's own PATH still comes first (`tr` and `tail` above were
    // found through it).
    let path = m.ok("dev", "echo \"$PATH\"").await;
    assert!(
        path.split(':').count() > 1 && !path.starts_with(&tools.path().display().to_string()),
        "{path}"
    );
    let planted = tools.path().join("planted");
    let (code, _, _) = m
        .sh("dev", &format!("echo x > {}", planted.display()))
        .await;
    assert_ne!(code, 0, "a toolchain is read-only in the container");
    assert!(!planted.exists());
    let cached = cache.path().join("c.txt");
    m.ok("dev", &format!("echo cached > {}", cached.display()))
        .await;
    assert_eq!(std::fs::read_to_string(&cached).unwrap(), "cached\n");
}

#[tokio::test]
async fn the_network_mode_names_the_containers_network() {
    let m = mounted_or_skip!("net");
    let file = m
        .state()
        .join("projects")
        .join(&m.project)
        .join("berth.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    let at = text.find("\n[sandbox.network]\n").unwrap();
    let open = format!(
        "{}{}",
        &text[..at],
        text[at..].replacen("\nmode = \"none\"\n", "\nmode = \"open\"\n", 1)
    );
    let interfaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '";
    m.up("closed").await;
    assert_eq!(m.ok("closed", interfaces).await, "lo ");
    std::fs::write(&file, open).unwrap();
    m.up("opened").await;
    let listed = m.ok("opened", interfaces).await;
    assert!(listed.contains("eth0") && listed.contains("lo"), "{listed}");
}

#[tokio::test]
async fn agents_cannot_reach_each_other_nor_write_the_forge() {
    let m = mounted_or_skip!("isolation");
    let wt_a = m.up("a").await;
    let wt_b = m.up("b").await;
    std::fs::write(wt_b.join("secret.txt"), "b's\n").unwrap();
    let repo_b = m.agent_repo("b");
    let objects = m.forge_objects();
    let cases = [
        format!("ls {}", wt_b.display()),
        format!("cat {}/secret.txt", wt_b.display()),
        format!("ls {}", repo_b.display()),
        format!("touch {}/x", objects.display()),
        format!("touch {}/../HEAD", objects.display()),
        "ls /var/run/docker.sock".to_string(),
    ];
    for command in &cases {
        let (code, out, _) = m.sh("a", command).await;
        assert_ne!(code, 0, "{command} succeeded in a's berth: {out}");
    }
    // The forge's objects are readable (the agent repository borrows them)…
    let n = m
        .ok("a", &format!("ls {} | wc -l", objects.display()))
        .await;
    assert!(n.trim().parse::<u32>().unwrap() > 0);
    // …and not writable by the engine on the agent's behalf either.
    let w = m
        .run(
            "a",
            Action::FileWrite {
                path: format!("{}/planted", objects.display()),
            },
            ActionParams {
                content: Some("x".into()),
                ..ActionParams::default()
            },
        )
        .await;
    assert!(!w.succeeded);
    assert!(!objects.join("planted").exists());
    assert!(w.diagnostic.unwrap().contains("read-only"));
    // a's own worktree is untouched by all this.
    assert!(!wt_a.join("x").exists());
}

/// Proposes a file action as `agent`; the reason when it was refused.
async fn refused(m: &Mounted, agent: &str, action: Action, content: Option<&str>) -> String {
    let p = m
        .engine
        .propose(
            Proposal::by_agent(&named(agent), action.clone()).params(ActionParams {
                content: content.map(str::to_string),
                ..ActionParams::default()
            }),
            None,
        )
        .await
        .unwrap();
    match p.status {
        ProposeStatus::Refused { reason } => reason,
        other => panic!("{action:?} was not refused: {other:?}"),
    }
}

#[tokio::test]
async fn file_actions_never_follow_a_link_to_the_host() {
    let m = mounted_or_skip!("links");
    let wt = m.up("dev-1").await;
    let hostname = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    // As a repository that commits them checks them out.
    std::os::unix::fs::symlink("/", wt.join("rootfs")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", wt.join("hostinfo")).unwrap();
    let read = |path: &str| Action::FileRead { path: path.into() };
    for path in ["hostinfo", "rootfs", "rootfs/etc", "rootfs/root/.ssh"] {
        let why = refused(&m, "dev-1", read(path), None).await;
        assert!(why.contains("nothing was read"), "{path}: {why}");
        assert!(
            hostname.trim().is_empty() || !why.contains(hostname.trim()),
            "{path}: {why}"
        );
    }
    let why = refused(&m, "dev-1", read("hostinfo"), None).await;
    assert!(
        why.contains("/work/hostinfo -> /etc/hostname")
            && why.contains("resolves to /etc/hostname"),
        "{why}"
    );

    // Links the agent makes inside the container, to host paths.
    let hostside = m.dir.path().join("hostside");
    std::fs::create_dir_all(&hostside).unwrap();
    let rules = m
        .state()
        .join("projects")
        .join(&m.project)
        .join("permissions.json");
    let rules_before = std::fs::read(&rules).unwrap();
    m.ok(
        "dev-1",
        &format!(
            "ln -s /etc/shadow shadow && ln -s {} st && ln -s {} out && ln -s {} perms && \
             ln -s /work/README.md inner && echo ok",
            m.state().display(),
            hostside.display(),
            rules.display()
        ),
    )
    .await;
    for path in ["shadow", "st", "st/berth.db", "perms"] {
        refused(&m, "dev-1", read(path), None).await;
    }
    m.autonomy("dev-1", "file_write", Approval::AutoApprove)
        .await;
    for path in [
        "out/planted.txt",
        "out/new/dir/planted.txt",
        "perms",
        "st/planted",
    ] {
        let why = refused(
            &m,
            "dev-1",
            Action::FileWrite { path: path.into() },
            Some("{\"permissions\": {\"allow\": [\"Bash(sudo:*)\"]}}"),
        )
        .await;
        assert!(why.contains("nothing was written"), "{path}: {why}");
    }
    assert_eq!(
        std::fs::read_dir(&hostside).unwrap().count(),
        0,
        "nothing was created on the host"
    );
    assert_eq!(std::fs::read(&rules).unwrap(), rules_before);
    assert!(!m.state().join("planted").exists());
    // An absolute link is a container path: one into /work is followed there.
    let o = m.run("dev-1", read("inner"), ActionParams::default()).await;
    let Some(ActionResult::FileRead { content, .. }) = o.result else {
        panic!("{:?}", o.diagnostic)
    };
    assert_eq!(content, "# demo\n");
}

/// A pending write shows where it lands on the host; once the agent, in
/// its container, swaps the directory for a link out of `/work`, approving
/// it runs nothing and says why.
#[tokio::test]
async fn a_pending_write_is_checked_again_at_approval() {
    let m = mounted_or_skip!("approval");
    let wt = m.up("dev-1").await;
    m.ok("dev-1", "mkdir -p /work/d && echo ok").await;
    m.autonomy("dev-1", "file_write", Approval::RequireApproval)
        .await;
    let p = m
        .engine
        .propose(
            Proposal::by_agent(
                &named("dev-1"),
                Action::FileWrite {
                    path: "d/notes.txt".into(),
                },
            )
            .params(ActionParams {
                content: Some("from the agent\n".into()),
                ..ActionParams::default()
            }),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Pending { .. }),
        "{:?}",
        p.status
    );
    let pending = m.engine.action(&p.id).await.unwrap();
    assert_eq!(
        pending.resolved_path.as_deref(),
        Some(wt.join("d/notes.txt").to_str().unwrap())
    );
    m.ok(
        "dev-1",
        "mv /work/d /work/d.real && ln -s /tmp /work/d && echo ok",
    )
    .await;
    let err = m
        .engine
        .approve(&p.id, &user(), false, None)
        .await
        .unwrap_err();
    let why = err.to_string();
    assert!(
        why.contains("/work/d -> /tmp") && why.contains("nothing was written"),
        "{why}"
    );
    let (code, _, _) = m.sh("dev-1", "test -e /tmp/notes.txt").await;
    assert_eq!(code, 1, "nothing written through the link");
    assert!(!wt.join("d.real/notes.txt").exists());
}

#[tokio::test]
async fn the_memory_limit_is_reported_as_out_of_memory() {
    let m = mounted_or_skip!("oom", "memory_mb = 64");
    m.up("dev-1").await;
    let o = m
        .run(
            "dev-1",
            Action::Terminal {
                command: "head -c 400m /dev/zero | tail > /dev/null".into(),
            },
            ActionParams::default(),
        )
        .await;
    assert!(!o.succeeded);
    let d = o.diagnostic.unwrap();
    assert!(
        d.contains("out of memory") && d.contains("memory_mb = 64"),
        "{d}"
    );
    // A victim under a command that exits 0 is said too, and logged.
    let o = m
        .run(
            "dev-1",
            Action::Terminal {
                command: "tail < /dev/zero > /dev/null; echo after".into(),
            },
            ActionParams::default(),
        )
        .await;
    assert!(o.succeeded);
    let d = o.diagnostic.clone().unwrap_or_default();
    assert!(
        d.contains("memory limit killed a process") && d.contains("exited 0"),
        "{d}"
    );
    assert!(
        matches!(
            o.result,
            Some(ActionResult::Terminal {
                oom_killed: true,
                ..
            })
        ),
        "{:?}",
        o.result
    );
    let ooms = m.count_events("command.oom_killed").await;
    assert_eq!(ooms, 2);
    assert_eq!(m.ok("dev-1", "echo alive").await, "alive\n");
}

#[tokio::test]
async fn each_berth_has_a_uid_of_its_own_that_no_host_account_has() {
    let m = mounted_or_skip!("uids");
    let wt_a = m.up("a").await;
    let wt_b = m.up("b").await;
    let (a, b) = (m.uid("a").await, m.uid("b").await);
    assert_ne!(a, b, "two berths, two uids");
    let range = berth_engine::config::DEFAULT_UID_RANGE;
    for uid in [a, b] {
        assert!((range[0]..=range[1]).contains(&uid), "{uid}");
        assert!(
            berth_sandbox::identity::host_claims(uid).is_empty(),
            "uid {uid} is the host's"
        );
    }
    assert_eq!(
        m.ok("a", "id -u; id -un; echo $HOME").await,
        format!("{a}\nagent\n/home/agent\n")
    );
    assert_eq!(m.ok("b", "id -u").await, format!("{b}\n"));
    // A setuid binary the agent makes belongs to the berth's uid, not 1000.
    m.ok("a", "cp /bin/sh s && chmod u+s s").await;
    let md = std::fs::metadata(wt_a.join("s")).unwrap();
    assert_eq!(md.uid(), a);
    assert_ne!(md.mode() & 0o4000, 0);
    assert_eq!(std::fs::metadata(&wt_b).unwrap().uid(), b);
    // up again keeps the uid.
    m.up("a").await;
    assert_eq!(m.uid("a").await, a);
    assert!(m.engine.doctor().await.unwrap().is_empty());
    let set = m.count_events("berth.uid_set").await;
    assert_eq!(set, 2);
}

#[tokio::test]
async fn a_berth_made_before_keeps_its_uid_until_moved() {
    let m = mounted_or_skip!("olduid");
    let wt = m.up("old").await;
    // As a berth made before uids were recorded: owned by 1000, none recorded.
    for p in [&wt, &m.agent_repo("old")] {
        let st = std::process::Command::new("chown")
            .args(["-R", "1000:1000"])
            .arg(p)
            .status()
            .unwrap();
        assert!(st.success());
    }
    sqlx::query("UPDATE agents SET uid = NULL WHERE name = 'old'")
        .execute(m.engine.store().pool())
        .await
        .unwrap();
    let info = m
        .engine
        .up(
            &named("old"),
            &named(&m.project),
            Some(BerthMode::Mounted),
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(m.uid("old").await, 1000, "kept as made");
    assert_eq!(m.ok("old", "id -u").await, "1000\n");
    let host_has_1000 = !berth_sandbox::identity::host_claims(1000).is_empty();
    let findings = m.engine.doctor().await.unwrap();
    let command = format!("berth up old --project {} --new-uid", m.project);
    if host_has_1000 {
        let note = info.note.unwrap_or_default();
        assert!(
            note.contains("uid 1000") && note.contains(&command),
            "{note}"
        );
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].uid, 1000);
        assert_eq!(findings[0].command, command);
    } else {
        assert!(findings.is_empty(), "{findings:?}");
    }
    // The command doctor names moves it: a uid of its own, files re-owned.
    let info = m
        .engine
        .up_with(
            &named("old"),
            &named(&m.project),
            Some(BerthMode::Mounted),
            berth_engine::UpOptions { new_uid: true },
            &user(),
        )
        .await
        .unwrap();
    let uid = m.uid("old").await;
    assert_ne!(uid, 1000);
    assert!(
        info.note
            .unwrap_or_default()
            .contains(&format!("to uid {uid}"))
    );
    assert_eq!(m.ok("old", "id -u").await, format!("{uid}\n"));
    assert_eq!(std::fs::metadata(&wt).unwrap().uid(), uid);
    assert_eq!(std::fs::metadata(m.agent_repo("old")).unwrap().uid(), uid);
    assert!(m.engine.doctor().await.unwrap().is_empty());
}

#[tokio::test]
async fn down_leaves_nothing_and_container_remove_asks_first() {
    let m = mounted_or_skip!("down");
    let wt = m.up("dev-1").await;
    assert!(m.container_exists("dev-1").await);

    // container_remove is never auto: it waits for a person, then the next
    // command gets a fresh container on the same worktree.
    m.ok("dev-1", "echo gone > /tmp/mark").await;
    m.autonomy("dev-1", "*", Approval::AutoApprove).await;
    let p = m
        .engine
        .propose(
            Proposal::by_agent(&named("dev-1"), Action::ContainerRemove),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Pending { .. }),
        "{:?}",
        p.status
    );
    assert!(m.container_exists("dev-1").await);
    let approved = m.engine.approve(&p.id, &user(), false, None).await.unwrap();
    assert!(
        approved.outcome.succeeded,
        "{:?}",
        approved.outcome.diagnostic
    );
    assert!(!m.container_exists("dev-1").await);
    let (code, _, _) = m.sh("dev-1", "test -e /tmp/mark").await;
    assert_eq!(code, 1, "a fresh container");
    assert!(wt.is_dir());

    m.engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap();
    assert!(!m.container_exists("dev-1").await);
    assert!(!wt.exists());
    let left = m.backend.list_berths(Some(&m.project)).await.unwrap();
    assert!(left.is_empty(), "{left:?}");
    let types = m.event_types().await;
    for want in [
        "container.created",
        "container.removed",
        "worktree.recycled",
        "berth.down",
    ] {
        assert!(types.iter().any(|t| t == want), "no {want} in {types:?}");
    }
}

#[tokio::test]
async fn a_containers_work_stops_at_the_berths_own_disk_and_down_leaves_no_disk() {
    use berth_sandbox::disk;
    if let Some(why) = disk::unavailable() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true and berths cannot get a disk of their own here: {why}");
        }
        eprintln!("skipping: {why}");
        return;
    }
    let m = mounted_or_skip!("disk", "disk = \"64MiB\"\ndisk_inodes = 4096");
    let wt = m.up("dev-1").await;
    let berth_dir = m.state().join("berths").join(&m.project).join("dev-1");
    let image = m.state().join("disks").join(&m.project).join("dev-1.img");
    assert_eq!(wt, berth_dir.join("dev-1"));
    let mount = disk::mounted_at(&berth_dir).unwrap().expect("mounted");
    assert_eq!(mount.fs_type, "ext4");

    // The container writes /work on the berth's disk: ENOSPC at its size,
    // and the host gives the image no more than that.
    let (code, _, stderr) = m
        .sh("dev-1", "dd if=/dev/zero of=/work/big bs=1M count=200")
        .await;
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    let taken = std::fs::metadata(&image).unwrap().blocks() * 512;
    assert!(
        taken <= (64 << 20) + (1 << 20),
        "the image takes {taken} bytes"
    );
    assert_eq!(m.ok("dev-1", "rm /work/big && echo gone").await, "gone\n");

    // Files stop near disk_inodes.
    let (code, out, stderr) = m
        .sh(
            "dev-1",
            "mkdir /work/many && cd /work/many && i=0; while true > f$i 2>/dev/null; do i=$((i+1)); [ $i -gt 100000 ] && break; done; echo $i; true > one-more",
        )
        .await;
    let made: u64 = out
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{out:?} {stderr}"));
    assert!((1000..8192).contains(&made), "{made} files were made");
    assert_ne!(code, 0);
    assert!(stderr.contains("No space left on device"), "{stderr}");

    // down: the container, then the worktree, then the disk. A full disk
    // holds no save commit: `down` says so until told to discard.
    let refused = m
        .engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("--discard"), "{refused}");
    assert!(berth_dir.join("dev-1/many").is_dir(), "nothing removed");
    m.engine
        .down_with(&named("dev-1"), false, true, &user())
        .await
        .unwrap();
    assert!(!m.container_exists("dev-1").await);
    assert!(disk::mounted_at(&berth_dir).unwrap().is_none());
    assert_eq!(disk::loops_backed_by(&image), Vec::<PathBuf>::new());
    assert!(!image.exists() && !berth_dir.exists());
}

#[tokio::test]
async fn reconcile_adopts_live_berths_and_removes_orphans() {
    let m = mounted_or_skip!("reconcile");
    // Another state directory with the same project and agent names on the
    // same engine: its container is its own, and reconcile leaves it alone.
    let other = mounted_as("reconcile", "", Some(&m.project)).await.unwrap();
    other.up("keep").await;
    m.up("keep").await;
    let gone = m.up("gone").await;
    // A berth whose worktree vanished behind berth's back: its container is
    // an orphan.
    std::fs::remove_dir_all(&gone).unwrap();
    let report = m.engine.reconcile_berths().await.unwrap();
    let mut seen: Vec<(String, bool)> = report
        .iter()
        .map(|r| (r.agent.clone(), r.adopted))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![("gone".to_string(), false), ("keep".to_string(), true)]
    );
    assert!(m.container_exists("keep").await);
    assert!(!m.container_exists("gone").await);
    assert!(
        other.container_exists("keep").await,
        "the other state's berth"
    );
    assert_eq!(other.ok("keep", "echo other").await, "other\n");
    let types = m.event_types().await;
    assert!(types.iter().any(|t| t == "container.adopted"), "{types:?}");
    // The adopted berth still runs commands.
    assert_eq!(m.ok("keep", "echo still").await, "still\n");
}

#[tokio::test]
async fn a_missing_image_is_an_error_that_says_what_to_do_and_provisions_nothing() {
    let m = mounted_or_skip!("noimage", "image = \"berth-test-no-such-image:1\"");
    m.engine
        .activate_agent(
            &named("dev-1"),
            &named(&m.project),
            AgentImpl::Real,
            &user(),
        )
        .await
        .unwrap();
    let err = m
        .engine
        .up(
            &named("dev-1"),
            &named(&m.project),
            Some(BerthMode::Mounted),
            &user(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("berth-test-no-such-image:1") && err.contains("build or load it locally"),
        "{err}"
    );
    assert!(
        !m.state()
            .join("berths")
            .join(&m.project)
            .join("dev-1")
            .join("dev-1")
            .exists()
    );
    let a = m.engine.agent("dev-1").await.unwrap();
    assert_eq!(a.berth, None);
}

/// `up` creates a mounted berth's container while the checkout fills the
/// worktree (`up` takes the longer of the two, not their sum); a checkout
/// that fails then — here over `[git] max_checkout_bytes`, found by the
/// helper after the directories were announced — takes the container
/// just made with it, and `up` with the bound raised brings the berth up.
#[tokio::test]
async fn a_checkout_failing_while_its_container_is_made_leaves_no_container() {
    let m = mounted_or_skip!("overlap", "max_checkout_bytes = 1");
    let (agent, project) = (named("dev-1"), named(&m.project));
    m.engine
        .activate_agent(&agent, &project, AgentImpl::Real, &user())
        .await
        .unwrap();
    let containers = || {
        let out = std::process::Command::new("docker")
            .args(["ps", "-aq", "--filter"])
            .arg(format!("label=berth.project={}", m.project))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        - 1;
    let err = m
        .engine
        .up(&agent, &project, Some(BerthMode::Mounted), &user())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("max_checkout_bytes"), "{err}");
    assert_eq!(
        containers(),
        "",
        "no container outlives the failed checkout"
    );
    // It was made meanwhile (the checkout failed after the directories
    // were there), then removed.
    // A moment past now: `docker events` streams until then.
    let until = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 1;
    let events = std::process::Command::new("docker")
        .args(["events", "--since", &since.to_string()])
        .args(["--until", &until.to_string()])
        .args(["--filter", &format!("label=berth.project={}", m.project)])
        .args(["--filter", "type=container", "--format", "{{.Action}}"])
        .output()
        .unwrap();
    let actions = String::from_utf8_lossy(&events.stdout).to_string();
    assert!(
        actions.lines().any(|l| l == "create") && actions.lines().any(|l| l == "destroy"),
        "{actions}"
    );
    assert_eq!(m.engine.agent("dev-1").await.unwrap().berth, None);

    let config = m
        .state()
        .join("projects")
        .join(&m.project)
        .join("berth.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace(
            "\nmax_checkout_bytes = 1\n",
            "\nmax_checkout_bytes = 2147483648\n",
        ),
    )
    .unwrap();
    let up = m
        .engine
        .up(&agent, &project, Some(BerthMode::Mounted), &user())
        .await
        .unwrap();
    assert!(up.worktree.unwrap().join("README.md").exists());
    assert_ne!(containers(), "", "the berth's container runs");
}

/// Builds a directory `levels` deep at `/work/<name>` from inside the
/// container, as an agent can: chains of 1,000 stacked under one another, so
/// no path the shell handles exceeds PATH_MAX however deep the tree gets.
const DEEP_TREE: &str = r#"set -e
p=$(printf 'd/%.0s' $(seq 1000))
mkdir -p "t/$p"
n=1000
while [ "$n" -lt "$LEVELS" ]; do
  mkdir -p "n/$p"; mv t "n/$p"; mv n t; n=$((n + 1001))
done
mv t "$NAME"; echo "$n""#;

#[tokio::test]
async fn down_up_and_commit_survive_a_worktree_5000_levels_deep() {
    let m = mounted_or_skip!("deep");
    let wt = m.up("dev-1").await;
    let built = m
        .ok("dev-1", &format!("LEVELS=5000 NAME=deep; {DEEP_TREE}"))
        .await;
    assert!(built.trim().parse::<u32>().unwrap() >= 5000, "{built}");
    // `up` again re-owns the worktree (a walk of the whole tree).
    m.engine
        .up(
            &named("dev-1"),
            &named(&m.project),
            Some(BerthMode::Mounted),
            &user(),
        )
        .await
        .unwrap();
    // A commit walks it too; it may refuse the paths, but as its own error.
    let c = m
        .run(
            "dev-1",
            Action::GitCommit,
            ActionParams {
                message: Some("deep".into()),
                ..ActionParams::default()
            },
        )
        .await;
    eprintln!("commit of a 5,000-level tree: {:?}", c.diagnostic);
    // What cannot be committed cannot be saved: `down` says so and keeps
    // the worktree until told to discard it.
    if let Err(e) = m.engine.down(&named("dev-1"), false, &user()).await {
        assert!(e.to_string().contains("--discard"), "{e}");
        assert!(wt.exists());
        m.engine
            .down_with(&named("dev-1"), false, true, &user())
            .await
            .unwrap();
    }
    assert!(!m.container_exists("dev-1").await);
    assert!(!wt.exists());
    let a = m.engine.agent("dev-1").await.unwrap();
    assert_eq!((a.berth, a.worktree), (None, None));
}

/// Makes a directory immutable (`chattr +i`) until dropped; `None` where the
/// filesystem or the privileges do not allow it.
struct Immutable(PathBuf);

impl Immutable {
    fn set(path: PathBuf) -> Option<Immutable> {
        let ok = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Immutable(path))
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr")
            .arg("-i")
            .arg(&self.0)
            .status();
    }
}

#[tokio::test]
async fn a_failed_recycle_leaves_the_berth_down_and_the_next_down_or_up_finishes_it() {
    let m = mounted_or_skip!("recycle-fails");
    let wt = m.up("dev-1").await;
    m.ok("dev-1", "mkdir stuck && echo x > stuck/f").await;
    let Some(lock) = Immutable::set(wt.join("stuck")) else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("CI=true and `chattr +i` does not work here: run as root on ext4/xfs/btrfs");
        }
        eprintln!("skipping: `chattr +i` does not work here");
        return;
    };

    // The container goes, the worktree cannot: the berth is recorded down
    // with its worktree left, and the failure is on the log.
    let err = m
        .engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("could not be recycled") && text.contains("berth down dev-1"),
        "{text}"
    );
    assert!(!m.container_exists("dev-1").await);
    let a = m.engine.agent("dev-1").await.unwrap();
    assert_eq!(
        a.berth, None,
        "the store never says up once the container is gone"
    );
    assert_eq!(a.worktree.as_deref(), Some(wt.as_path()));
    let types = m.event_types().await;
    for want in ["container.removed", "berth.down", "worktree.recycle_failed"] {
        assert!(types.iter().any(|t| t == want), "no {want} in {types:?}");
    }

    // While the cause stays, every retry is that call's error, nothing more.
    assert!(
        m.engine
            .down(&named("dev-1"), false, &user())
            .await
            .is_err()
    );
    let up = m
        .engine
        .up(
            &named("dev-1"),
            &named(&m.project),
            Some(BerthMode::Mounted),
            &user(),
        )
        .await;
    assert!(up.is_err(), "{up:?}");
    assert_eq!(m.engine.agent("dev-1").await.unwrap().berth, None);
    assert!(!m.container_exists("dev-1").await);

    // The cause gone, `up` clears what was left and starts fresh; `down`
    // then recycles as usual.
    drop(lock);
    let info = m
        .engine
        .up(
            &named("dev-1"),
            &named(&m.project),
            Some(BerthMode::Mounted),
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(info.mode, Some(BerthMode::Mounted));
    // The first `down` saved the uncommitted file (committed on the branch,
    // which the failed recycle kept): `up` checks it out again, nothing lost.
    assert_eq!(std::fs::read_to_string(wt.join("stuck/f")).unwrap(), "x\n");
    assert_eq!(m.ok("dev-1", "git status --porcelain").await, "");
    assert_eq!(m.engine.saved_work(None).await.unwrap().len(), 1);
    m.engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap();
    assert!(!wt.exists());
    assert!(!m.container_exists("dev-1").await);
    let a = m.engine.agent("dev-1").await.unwrap();
    assert_eq!((a.berth, a.worktree), (None, None));

    // The same failure retried by `down` alone.
    let wt = m.up("dev-1").await;
    m.ok("dev-1", "mkdir stuck && echo x > stuck/f").await;
    let lock = Immutable::set(wt.join("stuck")).unwrap();
    assert!(
        m.engine
            .down(&named("dev-1"), false, &user())
            .await
            .is_err()
    );
    drop(lock);
    m.engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap();
    assert!(!wt.exists());
    let a = m.engine.agent("dev-1").await.unwrap();
    assert_eq!((a.berth, a.worktree), (None, None));
}

#[tokio::test]
async fn a_gate_settled_by_a_denial_removes_the_container_before_the_worktree() {
    let m = mounted_or_skip!("settle");
    m.engine
        .activate_agent(
            &named("dev-1"),
            &named(&m.project),
            AgentImpl::Noop,
            &user(),
        )
        .await
        .unwrap();
    m.autonomy("dev-1", "git_commit", Approval::RequireApproval)
        .await;
    m.engine
        .create_task(&m.project, "t", &user())
        .await
        .unwrap();
    let run = m
        .engine
        .run_agent(&named("dev-1"), true)
        .await
        .unwrap()
        .stopped;
    let berth_engine::AgentRun::AwaitingApproval { action, .. } = run else {
        panic!("{run:?}")
    };
    let wt = m.engine.agent("dev-1").await.unwrap().worktree.unwrap();
    assert!(m.container_exists("dev-1").await);
    m.engine.deny(&action, &user(), Some("no")).await.unwrap();
    // The task returned, the worktree recycled: its container went first,
    // and the store says so.
    assert!(!wt.exists());
    assert!(
        !m.container_exists("dev-1").await,
        "a container left running on a recycled worktree"
    );
    let a = m.engine.agent("dev-1").await.unwrap();
    assert_eq!((a.berth, a.worktree), (None, None));
    let types = m.event_types().await;
    for want in ["container.removed", "berth.down", "worktree.recycled"] {
        assert!(types.iter().any(|t| t == want), "no {want} in {types:?}");
    }
}

/// `dev-1` up with every action auto-approved; runs `bystander`, and half
/// a second later a command that fills the pids limit and has a 2 s
/// deadline. Their outcomes, bystander first.
async fn beside_a_pids_hog(m: &Mounted, bystander: &str) -> (Outcome, Outcome) {
    m.up("dev-1").await;
    m.autonomy("dev-1", "*", Approval::AutoApprove).await;
    let bystander = m.run(
        "dev-1",
        Action::Terminal {
            command: bystander.into(),
        },
        ActionParams::default(),
    );
    let hog = async {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        m.run(
            "dev-1",
            Action::Terminal {
                command: "(while :; do sleep 100 & done) 2>/dev/null; exec sleep 1000".into(),
            },
            ActionParams {
                timeout_secs: Some(2),
                ..ActionParams::default()
            },
        )
        .await
    };
    tokio::join!(bystander, hog)
}

#[tokio::test]
async fn a_restart_for_a_deadline_is_logged_and_said_to_the_commands_it_killed() {
    // Through Docker's exec API: the exec agent kills without a new process.
    let m = mounted_or_skip!("restart", "pids = 30\nexec_agent = false");
    // Through Docker, not even the kill can start under the full pids
    // limit: only a restart of the container ends the hog by its deadline.
    let (bystander, hog) = beside_a_pids_hog(&m, "sleep 60; echo finished").await;
    assert!(!hog.succeeded);
    let d = hog.diagnostic.unwrap_or_default();
    assert!(
        d.contains("timed out after 2 s") && d.contains("restarted the berth's container"),
        "{d}"
    );
    assert!(!bystander.succeeded);
    let d = bystander.diagnostic.unwrap_or_default();
    assert!(
        d.contains("container was restarted while this command ran"),
        "{d}"
    );
    assert!(
        matches!(
            bystander.result,
            Some(ActionResult::Terminal {
                container_restarted: true,
                ..
            })
        ),
        "{:?}",
        bystander.result
    );
    let restarts = m.count_events("container.restarted").await;
    assert_eq!(restarts, 1);
    assert_eq!(m.ok("dev-1", "echo alive").await, "alive\n");
}

/// Through the exec agent the same deadline needs no restart: the agent's
/// exec process kills the command's group with a system call, where the
/// Docker path needs a new process the full pids limit refuses.
#[tokio::test]
async fn through_the_exec_agent_a_deadline_kills_without_a_restart() {
    let m = mounted_or_skip!("agentdeadline", "pids = 30");
    let (bystander, hog) = beside_a_pids_hog(&m, "sleep 4; echo finished").await;
    assert!(!hog.succeeded);
    let d = hog.diagnostic.unwrap_or_default();
    assert!(
        d.contains("timed out after 2 s") && !d.contains("restarted"),
        "{d}"
    );
    assert!(bystander.succeeded, "{:?}", bystander.diagnostic);
    assert_eq!(m.count_events("container.restarted").await, 0);
    assert_eq!(m.ok("dev-1", "echo alive").await, "alive\n");
}

#[tokio::test]
async fn a_range_with_no_free_uid_is_a_clear_error() {
    let m = mounted_or_skip!("fullrange", "uid_range = [1879100000, 1879100000]");
    m.up("a").await;
    assert_eq!(m.uid("a").await, 1_879_100_000);
    m.engine
        .activate_agent(&named("b"), &named(&m.project), AgentImpl::Real, &user())
        .await
        .unwrap();
    let err = m
        .engine
        .up(
            &named("b"),
            &named(&m.project),
            Some(BerthMode::Mounted),
            &user(),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("no free uid in [host] uid_range 1879100000..=1879100000")
            && err.contains("widen the range in berth.toml"),
        "{err}"
    );
    // Nothing was provisioned for b.
    assert!(!m.agent_repo("b").exists());
}

/// A state directory deleted behind berth's back leaves its berths'
/// containers running: another state's `reconcile --orphans` finds them by
/// their worktree label and removes them, and never touches a container of a
/// state directory that still exists.
#[tokio::test]
async fn orphans_of_a_deleted_state_directory_are_found_and_removed() {
    let m = mounted_or_skip!("orphan");
    let other = mounted_as("orphan2", "", None).await.unwrap();
    m.up("dev-1").await;
    other.up("dev-1").await;
    let name = |x: &Mounted| {
        format!(
            "berth-{}.dev-1.{}",
            x.project,
            berth_engine::berths::instance_of(&x.state())
        )
    };
    let (gone, kept) = (name(&m), name(&other));
    let listed = |o: &[berth_engine::OrphanContainer], c: &str| o.iter().any(|x| x.container == c);

    // Both state directories exist: neither container is an orphan.
    let found = other.engine.orphan_containers(false).await.unwrap();
    assert!(
        !listed(&found, &gone) && !listed(&found, &kept),
        "{found:?}"
    );

    let state = m.state();
    berth_engine::release_disks_under(&state);
    std::fs::remove_dir_all(&state).unwrap();
    assert!(m.container_exists("dev-1").await, "still running");

    // Without removing: reported, left alone.
    let found = other.engine.orphan_containers(false).await.unwrap();
    let entry = found
        .iter()
        .find(|x| x.container == gone)
        .unwrap_or_else(|| panic!("{gone} not among {found:?}"));
    assert!(!entry.removed);
    assert_eq!(
        (entry.project.as_str(), entry.agent.as_str()),
        (m.project.as_str(), "dev-1")
    );
    assert!(!listed(&found, &kept), "{found:?}");
    assert!(m.container_exists("dev-1").await);

    // Removing: the orphan goes, the living state's berth stays and runs.
    let removed = other.engine.orphan_containers(true).await.unwrap();
    assert!(
        removed.iter().any(|x| x.container == gone && x.removed),
        "{removed:?}"
    );
    assert!(!listed(&removed, &kept), "{removed:?}");
    assert!(!m.container_exists("dev-1").await);
    assert!(other.container_exists("dev-1").await);
    assert_eq!(other.ok("dev-1", "echo alive").await, "alive\n");
}
