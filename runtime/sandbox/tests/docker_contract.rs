//! The shared exec contract, run against a Docker berth.
//!
//! The contract wants an empty `/work`, so the berth's worktree here is an
//! empty directory (owned by the container's uid) rather than a git worktree;
//! the repository and forge mounts are empty directories too. Without an
//! engine these tests fail with the reason (the contract macro cannot skip).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::chown;

use berth_sandbox::Sandbox;
use berth_sandbox::contract::ContractFixture;
use berth_sandbox::docker::{ContainerSpec, DockerBerth};

struct DockerFixture {
    // Drops first: the container goes before its directories.
    _guard: common::ProjectGuard,
    berth: DockerBerth,
    _dir: tempfile::TempDir,
}

impl ContractFixture for DockerFixture {
    fn sandbox(&self) -> &dyn Sandbox {
        &self.berth
    }
}

/// A berth whose commands go through its exec agent (the engine's berths).
async fn docker_fixture() -> DockerFixture {
    fixture(true).await
}

/// A berth without an exec agent: every command a Docker exec.
async fn docker_exec_fixture() -> DockerFixture {
    fixture(false).await
}

async fn fixture(exec_agent: bool) -> DockerFixture {
    let Some(backend) = common::engine().await else {
        panic!("the exec contract against Docker needs a Docker engine (see the reason above)");
    };
    common::default_image(&backend).await;
    let project = common::project_name("contract");
    let dir = tempfile::Builder::new()
        .prefix("berth-contract-")
        .tempdir()
        .unwrap();
    let worktree = dir.path().join("worktree");
    let repo = dir.path().join("agent.git");
    let objects = dir.path().join("forge.git/objects");
    for d in [&worktree, &repo, &objects] {
        std::fs::create_dir_all(d).unwrap();
    }
    for d in [&worktree, &repo] {
        chown(d, Some(1000), Some(1000)).unwrap();
    }
    let mut spec = ContainerSpec::new(&project, "a", &worktree, &repo, &objects);
    if exec_agent {
        spec.exec_socket_root = Some(dir.path().join("sockets"));
    }
    let berth = backend.up(spec).await.unwrap();
    DockerFixture {
        _guard: common::ProjectGuard { project },
        berth,
        _dir: dir,
    }
}

berth_sandbox::exec_contract_tests!(docker_fixture);

/// The same contract through Docker's exec API alone (no exec agent, or
/// one that does not answer).
mod through_docker_exec {
    use super::docker_exec_fixture;
    berth_sandbox::exec_contract_tests!(docker_exec_fixture);
}
