//! Mounted mode: berth runs as root, the berth's files belong to the
//! container's uid (1000), and both keep working on them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use berth_worktrees::{Owner, RecycleOptions};
use common::*;

const UID: u32 = 1000;

/// Paths under `dir` (and `dir`) not owned by uid:gid 1000.
fn not_owned(dir: &Path) -> Vec<PathBuf> {
    let mut bad = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        let meta = std::fs::symlink_metadata(&p).unwrap();
        if meta.uid() != UID || meta.gid() != UID {
            bad.push(p.clone());
        }
        if meta.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        }
    }
    bad
}

/// git as uid 1000, the way the container runs it.
fn git_as_agent(dir: &Path, args: &[&str]) -> String {
    let mut cmd = std::process::Command::new("setpriv");
    cmd.args([
        "--reuid",
        "1000",
        "--regid",
        "1000",
        "--clear-groups",
        "git",
    ])
    .current_dir(dir)
    .env("HOME", "/nonexistent")
    .env("GIT_CONFIG_GLOBAL", "/dev/null")
    .env("GIT_CONFIG_NOSYSTEM", "1")
    .env("GIT_AUTHOR_NAME", "In Container")
    .env("GIT_AUTHOR_EMAIL", "agent@container")
    .env("GIT_COMMITTER_NAME", "In Container")
    .env("GIT_COMMITTER_EMAIL", "agent@container")
    .args(args);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?} as uid 1000: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn provisioning_for_uid_1000_as_root_keeps_both_sides_working() {
    if !require_root("provisioning_for_uid_1000_as_root_keeps_both_sides_working") {
        return;
    }
    let f = Fixture::new();
    // uid 1000 must be able to reach the state directory, as it would reach
    // its mounts in a container.
    std::fs::set_permissions(f.tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (p, a) = (&f.project, agent("dev-1"));
    let owner = Owner { uid: UID, gid: UID };

    let info = f.wt.provision(p, &a, &task("t"), Some(owner)).unwrap();
    assert!(info.created);
    assert_eq!(not_owned(&info.agent_repo), Vec::<PathBuf>::new());
    assert_eq!(not_owned(&info.path), Vec::<PathBuf>::new());
    // berth's own directories stay berth's.
    for dir in [
        f.wt.layout().agents_dir(p),
        f.wt.layout().berths_dir(p),
        f.wt.layout().berth_dir(p, &a),
        f.forge(),
    ] {
        assert_eq!(
            std::fs::metadata(&dir).unwrap().uid(),
            0,
            "{}",
            dir.display()
        );
    }

    // The agent works in its worktree with git, as uid 1000.
    std::fs::write(info.path.join("by-agent.txt"), "agent\n").unwrap();
    std::fs::set_permissions(
        info.path.join("by-agent.txt"),
        std::fs::Permissions::from_mode(0o666),
    )
    .unwrap();
    git_as_agent(&info.path, &["add", "-A"]);
    git_as_agent(&info.path, &["commit", "-q", "-m", "agent commit"]);

    // berth (root) commits through libgit2 despite the foreign owner, and
    // everything it wrote is handed back to uid 1000.
    std::fs::write(info.path.join("by-berth.txt"), "berth\n").unwrap();
    let c =
        f.wt.commit(p, &a, &commit_request("berth commit", "act-1"))
            .unwrap();
    assert!(c.created);
    assert_eq!(not_owned(&info.agent_repo), Vec::<PathBuf>::new());
    let pushed = f.wt.push(p, &a, &info.branch).unwrap();
    assert!(pushed.updated);
    assert_eq!(
        f.forge_refs()["refs/heads/agent/dev-1/t"],
        c.oid.to_string()
    );
    assert_eq!(
        git(
            &f.forge(),
            &["log", "--format=%s", &format!("main..{}", info.branch)]
        ),
        "berth commit\nagent commit\n"
    );

    // And the agent can still write objects, refs and the index after berth did.
    std::fs::write(info.path.join("after.txt"), "after\n").unwrap();
    git_as_agent(&info.path, &["add", "-A"]);
    git_as_agent(&info.path, &["commit", "-q", "-m", "after berth"]);
    assert_eq!(git_as_agent(&info.path, &["status", "--porcelain"]), "");

    // Asking again is idempotent; recycling works on the foreign-owned tree.
    let again = f.wt.provision(p, &a, &task("t"), Some(owner)).unwrap();
    assert!(!again.created);
    f.wt.recycle(p, &a, RecycleOptions::default()).unwrap();
    assert!(!info.path.exists());
}
