//! What the engine's benches share: a state directory with one project and
//! one agent, `dev-1`, whose autonomy auto-approves `terminal`, and its
//! runner berth up.
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

use std::process::Command;

use berth_engine::{Actor, AgentImpl, Engine, NewProject, Proposal, Proposed, StateDir};
use berth_policy::{Action, Approval};

/// A project or agent name, parsed (the type is the call's).
pub fn named<N: std::str::FromStr>(name: &str) -> N
where
    N::Err: std::fmt::Debug,
{
    name.parse().unwrap()
}

pub fn git(dir: &std::path::Path, args: &[&str]) {
    let ok = Command::new("git")
        .args([
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@example.com",
        ])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// The engine of a new state directory under `root` (`root/state`), with
/// project `bench` (an empty repository).
pub async fn bench_project(root: &std::path::Path, user: &Actor) -> (Engine, StateDir) {
    let src = root.join("src");
    std::fs::create_dir_all(&src).unwrap();
    git(&src, &["init", "-q", "-b", "main"]);
    git(&src, &["commit", "-q", "--allow-empty", "-m", "init"]);
    let state = StateDir::new(root.join("state"));
    let engine = Engine::init(state.clone()).await.unwrap();
    engine
        .add_project(
            NewProject {
                name: named("bench"),
                from: src,
                base: None,
                forge_url: None,
            },
            user,
        )
        .await
        .unwrap();
    (engine, state)
}

/// The engine of a new state directory under `root` (`root/state`), with
/// project `bench` and agent `dev-1` up in a runner berth.
pub async fn runner_berth(root: &std::path::Path, user: &Actor) -> (Engine, StateDir) {
    let (engine, state) = bench_project(root, user).await;
    engine
        .activate_agent(&named("dev-1"), &named("bench"), AgentImpl::Real, user)
        .await
        .unwrap();
    engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, user)
        .await
        .unwrap();
    engine
        .up(&named("dev-1"), &named("bench"), None, user)
        .await
        .unwrap();
    (engine, state)
}

/// Releases the berths' own disks under a state directory when dropped
/// (berth as root mounts one per berth); a bench's temporary state would
/// otherwise leave them mounted after it ends.
pub struct DiskGuard(pub std::path::PathBuf);

impl Drop for DiskGuard {
    fn drop(&mut self) {
        berth_engine::release_disks_under(&self.0);
    }
}

/// `command` proposed as a terminal action by `dev-1`.
pub async fn propose_terminal(engine: &Engine, command: &str) -> Proposed {
    engine
        .propose(
            Proposal::by_agent(
                &named("dev-1"),
                Action::Terminal {
                    command: command.into(),
                },
            ),
            None,
        )
        .await
        .unwrap()
}
