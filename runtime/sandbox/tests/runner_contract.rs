//! The shared exec contract, run against the local runner.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use berth_sandbox::contract::ContractFixture;
use berth_sandbox::{Runner, RunnerConfig, Sandbox};

struct RunnerFixture {
    runner: Runner,
    _dir: tempfile::TempDir,
}

impl ContractFixture for RunnerFixture {
    fn sandbox(&self) -> &dyn Sandbox {
        &self.runner
    }
}

async fn runner_fixture() -> RunnerFixture {
    runner_fixture_with(None).await
}

/// With `uid`, berth as root hands the worktree and the home to it and every
/// exec runs as it (as berth does for a runner berth); ignored when berth is
/// not root.
async fn runner_fixture_with(uid: Option<u32>) -> RunnerFixture {
    // Not under the target directory: that lies under /work on CI machines,
    // and a home shown at its own path may not lie under /work.
    let dir = tempfile::Builder::new()
        .prefix("berth-runner-")
        .tempdir()
        .unwrap();
    let worktree = dir.path().join("wt");
    let home = dir.path().join("home");
    std::fs::create_dir_all(&worktree).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let root = berth_sandbox::identity::current_uid() == 0;
    if let (Some(uid), true) = (uid, root) {
        for dir in [&worktree, &home] {
            std::os::unix::fs::chown(dir, Some(uid), Some(uid)).unwrap();
        }
    }
    let mut config = RunnerConfig::new(&worktree, &home);
    config.confinement.uid = uid.map(|u| (u, u));
    config.kill_grace = Duration::from_secs(1);
    RunnerFixture {
        runner: Runner::new(config).unwrap(),
        _dir: dir,
    }
}

berth_sandbox::exec_contract_tests!(runner_fixture);

/// The same contract with the berth's uid, as a runner berth of a root berth
/// runs (a uid of the default `[host] uid_range`).
mod as_berth_uid {
    use super::*;

    async fn runner_fixture_as_uid() -> RunnerFixture {
        runner_fixture_with(Some(0x7000_FFF0)).await
    }

    berth_sandbox::exec_contract_tests!(runner_fixture_as_uid);
}
