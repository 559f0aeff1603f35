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
    let mut config = RunnerConfig::new(&worktree, &home);
    config.kill_grace = Duration::from_secs(1);
    RunnerFixture {
        runner: Runner::new(config).unwrap(),
        _dir: dir,
    }
}

berth_sandbox::exec_contract_tests!(runner_fixture);
