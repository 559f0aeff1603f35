//! Shared by the Docker tests: the engine (or a skip, never under CI), the
//! default image, real git repositories laid out as berth lays them, and a
//! guard that removes a test's containers even when the test fails.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use berth_sandbox::docker::{ContainerSpec, DockerBackend};
use berth_sandbox::image::{NoProgress, Recipe};

/// Connects to the engine. Without one: under `CI=true` the test fails, else
/// it is skipped with the reason printed.
pub async fn engine() -> Option<DockerBackend> {
    match DockerBackend::connect().await {
        Ok(b) => Some(b),
        Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("CI=true and the Docker engine is unavailable, which fails the run: {e}")
        }
        Err(e) => {
            eprintln!("skipping: no Docker engine: {e}");
            None
        }
    }
}

/// The engine, or return from the test (see [`engine`]).
#[macro_export]
macro_rules! engine_or_skip {
    () => {
        match common::engine().await {
            Some(b) => b,
            None => return,
        }
    };
}

static IMAGE_BUILT: tokio::sync::Mutex<bool> = tokio::sync::Mutex::const_new(false);

/// Builds the default agent image once per test binary (a no-op when it is
/// current).
pub async fn default_image(backend: &DockerBackend) {
    let mut built = IMAGE_BUILT.lock().await;
    if !*built {
        let recipe = Recipe::default_agent().unwrap();
        backend
            .build_image(&recipe, &mut NoProgress)
            .await
            .expect("building the default agent image");
        *built = true;
    }
}

/// A unique project name for one test.
pub fn project_name(test: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let test: String = test
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .take(20)
        .collect();
    format!("t{}-{n}-{test}", std::process::id())
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    // The repositories belong to uid 1000; the test (root) verifies them.
    let out = Command::new("git")
        .args(["-c", "safe.directory=*"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.invalid")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.invalid")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// berth's layout for one project in a temp dir: a bare forge with one
/// commit, and per agent a bare repository borrowing the forge's objects and a
/// linked worktree on `agent/<agent>/t1`, both owned by uid 1000.
pub struct Layout {
    /// Removes the project's containers on drop (first: fields drop in order).
    _guard: ProjectGuard,
    pub dir: tempfile::TempDir,
    pub project: String,
    pub forge: PathBuf,
}

pub struct AgentPaths {
    pub worktree: PathBuf,
    pub repo: PathBuf,
    pub forge_objects: PathBuf,
}

impl Layout {
    pub fn new(test: &str) -> Layout {
        let project = project_name(test);
        let dir = tempfile::Builder::new()
            .prefix("berth-docker-")
            .tempdir()
            .unwrap();
        let root = dir.path();
        let seed = root.join("seed");
        std::fs::create_dir_all(&seed).unwrap();
        git(&seed, &["init", "-q", "-b", "main"]);
        std::fs::write(seed.join("README.md"), "hello\n").unwrap();
        git(&seed, &["add", "README.md"]);
        git(&seed, &["commit", "-q", "-m", "first"]);
        let forge = root.join("forge").join(format!("{project}.git"));
        std::fs::create_dir_all(forge.parent().unwrap()).unwrap();
        git(
            root,
            &[
                "clone",
                "-q",
                "--bare",
                seed.to_str().unwrap(),
                forge.to_str().unwrap(),
            ],
        );
        Layout {
            _guard: ProjectGuard {
                project: project.clone(),
            },
            dir,
            project,
            forge,
        }
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Provisions an agent as the worktrees crate would, chowned to 1000.
    /// Where `agent`'s worktree is (its `/work`).
    pub fn worktree(&self, agent: &str) -> PathBuf {
        self.root()
            .join("worktrees")
            .join(&self.project)
            .join(agent)
    }

    pub fn agent(&self, agent: &str) -> AgentPaths {
        self.agent_owned_by(agent, 1000)
    }

    /// Provisions an agent whose repository and worktree belong to `uid`.
    pub fn agent_owned_by(&self, agent: &str, uid: u32) -> AgentPaths {
        let root = self.root();
        let repo = root
            .join("agents")
            .join(&self.project)
            .join(format!("{agent}.git"));
        std::fs::create_dir_all(repo.parent().unwrap()).unwrap();
        git(root, &["init", "-q", "--bare", repo.to_str().unwrap()]);
        let objects = self.forge.join("objects");
        std::fs::write(
            repo.join("objects/info/alternates"),
            format!("{}\n", objects.display()),
        )
        .unwrap();
        let main = git(&self.forge, &["rev-parse", "refs/heads/main"]);
        git(&repo, &["update-ref", "refs/heads/main", main.trim()]);
        let worktree = self.worktree(agent);
        std::fs::create_dir_all(worktree.parent().unwrap()).unwrap();
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("agent/{agent}/t1"),
                worktree.to_str().unwrap(),
                "main",
            ],
        );
        for p in [&repo, &worktree] {
            let st = Command::new("chown")
                .args(["-R", &format!("{uid}:{uid}")])
                .arg(p)
                .status()
                .unwrap();
            assert!(st.success());
        }
        AgentPaths {
            worktree,
            repo,
            forge_objects: objects,
        }
    }

    pub fn spec(&self, agent: &str) -> ContainerSpec {
        let p = self.agent(agent);
        ContainerSpec::new(&self.project, agent, p.worktree, p.repo, p.forge_objects)
    }

    /// A spec whose berth runs as `uid` (gid = uid), with the passwd and
    /// group files berth writes for it.
    pub fn spec_with_uid(&self, agent: &str, uid: u32) -> ContainerSpec {
        let p = self.agent_owned_by(agent, uid);
        let mut spec =
            ContainerSpec::new(&self.project, agent, p.worktree, p.repo, p.forge_objects);
        spec.uid = uid;
        spec.gid = uid;
        spec.identity_dir = Some(self.root().join("identity").join(agent));
        spec
    }
}

/// Removes every container of a project when dropped, through the API, on a
/// runtime of its own (drop cannot await).
pub struct ProjectGuard {
    pub project: String,
}

impl Drop for ProjectGuard {
    fn drop(&mut self) {
        let project = self.project.clone();
        with_engine_on_own_runtime(move |b| async move {
            if let Ok(list) = b.list_berths(Some(&project)).await {
                for c in list {
                    let _ = b.down(&c.project, &c.agent).await;
                }
            }
        });
    }
}

/// Runs `work` against the engine on a runtime of its own, on a thread of
/// its own (a guard's drop cannot await, and may run inside a runtime).
fn with_engine_on_own_runtime<F, Fut>(work: F)
where
    F: FnOnce(DockerBackend) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()>,
{
    let _ = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            if let Ok(b) = DockerBackend::connect().await {
                work(b).await;
            }
        });
    })
    .join();
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The name libtest knows a test by, for re-running it in a child process:
/// `module::name` in the crate's one test binary, `name` in a binary of its
/// own. `module_path` is the caller's `module_path!()`.
pub fn test_path(module_path: &str, name: &str) -> String {
    match module_path.split_once("::") {
        Some((_, module)) => format!("{module}::{name}"),
        None => name.to_string(),
    }
}

/// Removes a test image repository's tags when dropped.
pub struct ImageGuard(pub String);

impl Drop for ImageGuard {
    fn drop(&mut self) {
        let repo = self.0.clone();
        with_engine_on_own_runtime(move |b| async move {
            let filters =
                std::collections::HashMap::from([("reference".to_string(), vec![repo.clone()])]);
            let options = bollard::query_parameters::ListImagesOptionsBuilder::default()
                .filters(&filters)
                .build();
            for img in b
                .docker()
                .list_images(Some(options))
                .await
                .unwrap_or_default()
            {
                let _ = b
                    .docker()
                    .remove_image(
                        &img.id,
                        Some(bollard::query_parameters::RemoveImageOptions {
                            force: true,
                            ..Default::default()
                        }),
                        None,
                    )
                    .await;
            }
        });
    }
}
