//! A real state directory with a real project: a git repository made with
//! the git CLI (a test may; the runtime never does), imported by the engine.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use berth_engine::{
    ActionParams, Actor, AgentImpl, Engine, NewProject, Outcome, Proposal, ProposeStatus, StateDir,
};
use berth_policy::Action;

pub mod postgres;

/// A project or agent name, parsed by berth's one name rule (the type is the
/// call's: `&named("dev-1")` where an `&AgentName` goes).
pub fn named<N: std::str::FromStr>(name: &str) -> N
where
    N::Err: std::fmt::Debug,
{
    name.parse().unwrap()
}

pub struct Fixture {
    pub dir: tempfile::TempDir,
    pub engine: Engine,
}

/// Releases the berths' own disks under a state directory when dropped:
/// declared after the `TempDir` holding it, it runs first.
pub struct ReleaseDisks(pub PathBuf);

impl Drop for ReleaseDisks {
    fn drop(&mut self) {
        berth_engine::release_disks_under(&self.0);
    }
}

impl Drop for Fixture {
    /// A berth left up keeps its own disk mounted in the state directory
    /// (berth as root): it goes before the directory does, even when the
    /// test fails.
    fn drop(&mut self) {
        berth_engine::release_disks_under(&self.dir.path().join("state"));
    }
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=Ada",
            "-c",
            "user.email=ada@example.com",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A source repository with one commit on `main`.
pub fn source_repo(root: &Path) -> PathBuf {
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    git(&src, &["init", "-q"]);
    std::fs::write(src.join("README.md"), "# demo\n").unwrap();
    git(&src, &["add", "README.md"]);
    git(&src, &["commit", "-q", "-m", "init"]);
    src
}

pub fn user() -> Actor {
    Actor::user("ada")
}

/// Proposes `action` by `agent` and, when it waits, approves it as [`user`]:
/// its outcome.
pub async fn run_action(
    engine: &Engine,
    agent: &str,
    action: Action,
    params: ActionParams,
) -> Outcome {
    let p = engine
        .propose(
            Proposal::by_agent(&named(agent), action).params(params),
            None,
        )
        .await
        .unwrap();
    match p.status {
        ProposeStatus::Executed { outcome } => outcome,
        ProposeStatus::Pending { .. } => {
            engine
                .approve(&p.id, &user(), false, None)
                .await
                .unwrap()
                .outcome
        }
        ProposeStatus::Refused { reason } => panic!("refused: {reason}"),
    }
}

impl Fixture {
    /// A state directory with project `demo`.
    pub async fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let src = source_repo(dir.path());
        Fixture::from_source(dir, src).await
    }

    /// A state directory in `dir` with project `demo` imported from `src`.
    pub async fn from_source(dir: tempfile::TempDir, src: PathBuf) -> Fixture {
        postgres::prepare_state(&dir.path().join("state")).await;
        let engine = Engine::init(StateDir::new(dir.path().join("state")))
            .await
            .unwrap();
        engine
            .add_project(
                NewProject {
                    name: named("demo"),
                    from: src,
                    base: None,
                    forge_url: None,
                },
                &user(),
            )
            .await
            .unwrap();
        // The runner has no confinement of its own yet: these tests turn
        // auto mode on for runner berths, so they accept it (the refusal is
        // tests/confinement.rs's).
        let cfg = dir.path().join("state/projects/demo/berth.toml");
        let text = std::fs::read_to_string(&cfg).unwrap();
        std::fs::write(
            &cfg,
            text.replacen("allow_unconfined = false", "allow_unconfined = true", 1),
        )
        .unwrap();
        Fixture { dir, engine }
    }

    pub fn state(&self) -> StateDir {
        StateDir::new(self.dir.path().join("state"))
    }

    /// Another engine on the same state directory: another process's view.
    pub async fn second(&self) -> Engine {
        Engine::open(self.state()).await.unwrap()
    }

    /// Activates `name` in `demo` and brings its berth up in runner mode.
    pub async fn up_runner(&self, name: &str) {
        self.agent(name, AgentImpl::Real).await;
        let info = self
            .engine
            .up(
                &named(name),
                &named("demo"),
                Some(berth_engine::BerthMode::Runner),
                &user(),
            )
            .await
            .unwrap();
        assert_eq!(info.mode, Some(berth_engine::BerthMode::Runner));
    }

    pub async fn agent(&self, name: &str, imp: AgentImpl) {
        self.engine
            .activate_agent(&named(name), &named("demo"), imp, &user())
            .await
            .unwrap();
    }

    pub fn forge(&self) -> PathBuf {
        self.dir.path().join("state/forge/demo.git")
    }

    /// `git --git-dir=<forge> ARGS` (the forge is not agent-writable).
    pub fn forge_git(&self, args: &[&str]) -> String {
        let forge = self.forge();
        let mut all = vec!["--git-dir", forge.to_str().unwrap()];
        all.extend_from_slice(args);
        git(self.dir.path(), &all)
    }

    /// A pipeline task of `demo` (one `true` step, auto mode) run to
    /// `done` by `agent`, whose berth is up and whose autonomy runs
    /// `terminal`: an ended task no agent holds. Its id.
    pub async fn done_task(&self, agent: &str, title: &str) -> String {
        let t = self
            .engine
            .create_task_with(
                berth_engine::NewTask {
                    steps: Some(vec![berth_engine::PipelineStep {
                        command: "true".into(),
                        write: false,
                    }]),
                    execution_mode: Some(berth_engine::ExecutionMode::Auto),
                    ..berth_engine::NewTask::new("demo", title)
                },
                &user(),
            )
            .await
            .unwrap();
        self.engine
            .run_pipeline_with(&t.id, Some(agent), false, &user())
            .await
            .unwrap();
        assert_eq!(
            self.engine.task(&t.id).await.unwrap().status,
            berth_engine::TaskStatus::Done
        );
        t.id
    }

    pub async fn event_types(&self) -> Vec<String> {
        self.engine
            .events(&Default::default())
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.kind)
            .collect()
    }
}

/// The log's events of `kind`, oldest first.
pub async fn events_of(engine: &Engine, kind: &str) -> Vec<berth_engine::Event> {
    engine
        .events(&berth_engine::EventFilter {
            kind: Some(kind.into()),
            ..Default::default()
        })
        .await
        .unwrap()
}

/// `command` proposed as a terminal action by `agent`.
pub fn terminal_proposal(agent: &str, command: &str) -> berth_engine::Proposal {
    berth_engine::Proposal::by_agent(
        &named(agent),
        berth_policy::Action::Terminal {
            command: command.into(),
        },
    )
}

/// A terminal command proposed as `agent` (approved by the user when it
/// waits): its exit code, stdout and stderr.
pub async fn terminal(engine: &Engine, agent: &str, command: &str) -> (i32, String, String) {
    let p = engine
        .propose(terminal_proposal(agent, command), None)
        .await
        .unwrap();
    let outcome = match p.status {
        berth_engine::ProposeStatus::Executed { outcome } => outcome,
        berth_engine::ProposeStatus::Pending { .. } => {
            engine
                .approve(&p.id, &user(), false, None)
                .await
                .unwrap()
                .outcome
        }
        berth_engine::ProposeStatus::Refused { reason } => {
            panic!("{command}: refused: {reason}")
        }
    };
    match outcome.result {
        Some(berth_engine::ActionResult::Terminal {
            exit_code,
            stdout,
            stderr,
            ..
        }) => (exit_code, stdout, stderr),
        other => panic!("{command}: {other:?} ({:?})", outcome.diagnostic),
    }
}

/// A registry on the host's loopback: `200` and a body naming the path;
/// the paths it was asked for.
pub async fn registry() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = std::sync::Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let log = std::sync::Arc::clone(&log);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tokio::io::AsyncReadExt::read(&mut s, &mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let path = head.split(' ').nth(1).unwrap_or("?").to_string();
                log.lock().unwrap().push(path.clone());
                let body = format!("package index at {path}\n");
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tokio::io::AsyncWriteExt::write_all(&mut s, resp.as_bytes()).await;
                let _ = tokio::io::AsyncWriteExt::shutdown(&mut s).await;
            });
        }
    });
    (port, seen)
}
