//! Recycling one agent's worktree, and reconciling crash leftovers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use berth_worktrees::{Error, ReconcileAction, RecycleOptions, RecycleReport};
use common::*;

fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn recycle_refuses_uncommitted_work_unless_forced_and_touches_only_that_agent() {
    let f = Fixture::new();
    let p = &f.project;
    let (a, b) = (agent("dev-1"), agent("dev-2"));
    let ia = f.wt.provision(p, &a, &task("t"), None).unwrap();
    let ib = f.wt.provision(p, &b, &task("t"), None).unwrap();
    std::fs::write(ib.path.join("b-work.txt"), "uncommitted\n").unwrap();
    let b_repo = tree(&ib.agent_repo);
    let b_wt = tree(&ib.path);

    // Ignored output does not count; a modification and an untracked file do.
    std::fs::create_dir_all(ia.path.join("target")).unwrap();
    std::fs::write(ia.path.join("target/out"), "x").unwrap();
    std::fs::write(ia.path.join("README.md"), "changed\n").unwrap();
    std::fs::write(ia.path.join("new.txt"), "new\n").unwrap();
    let err = f.wt.recycle(p, &a, RecycleOptions::default()).unwrap_err();
    match &err {
        Error::DirtyWorktree { changes, .. } => {
            assert_eq!(changes, &vec!["README.md".to_owned(), "new.txt".to_owned()])
        }
        other => panic!("expected DirtyWorktree, got {other}"),
    }
    assert!(err.to_string().contains("recycle with force"), "{err}");
    assert!(ia.path.join("new.txt").exists());

    let report =
        f.wt.recycle(
            p,
            &a,
            RecycleOptions {
                force: true,
                ..RecycleOptions::default()
            },
        )
        .unwrap();
    assert_eq!(
        report,
        RecycleReport {
            worktree_removed: true,
            admin_removed: true,
            branch_deleted: None,
            repository_removed: false,
        }
    );
    assert!(!ia.path.exists());
    assert!(!f.wt.layout().worktree_admin(p, &a).exists());
    assert!(!f.wt.layout().worktree_record(p, &a).exists());
    assert_eq!(
        git(&ia.agent_repo, &["worktree", "list", "--porcelain"]),
        format!("worktree {}\nbare\n\n", ia.agent_repo.display())
    );
    // The branch stays in the agent repository.
    git(
        &ia.agent_repo,
        &["rev-parse", "--verify", "refs/heads/agent/dev-1/t"],
    );

    // The other agent is exactly as it was, still locked.
    assert_eq!(tree(&ib.agent_repo), b_repo);
    assert_eq!(tree(&ib.path), b_wt);
    assert!(git(&ib.agent_repo, &["worktree", "list", "--porcelain"]).contains("locked"));

    // Recycling again finds nothing to do.
    assert_eq!(
        f.wt.recycle(p, &a, RecycleOptions::default()).unwrap(),
        RecycleReport::default()
    );
}

#[test]
fn recycle_can_delete_the_branch_and_the_forge_keeps_what_was_pushed() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    std::fs::write(info.path.join("x.txt"), "x\n").unwrap();
    let c = f.wt.commit(p, &a, &commit_request("x", "act-1")).unwrap();
    f.wt.push(p, &a, &info.branch).unwrap();
    let report =
        f.wt.recycle(
            p,
            &a,
            RecycleOptions {
                delete_branch: true,
                ..RecycleOptions::default()
            },
        )
        .unwrap();
    assert_eq!(report.branch_deleted.as_deref(), Some("agent/dev-1/t"));
    assert!(!refs(&info.agent_repo).contains_key("refs/heads/agent/dev-1/t"));
    assert_eq!(
        f.forge_refs()["refs/heads/agent/dev-1/t"],
        c.oid.to_string()
    );
}

#[test]
fn recycle_removes_symlinks_without_following_them() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("dir")).unwrap();
    std::fs::write(outside.path().join("dir/precious"), "keep\n").unwrap();
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    symlink(outside.path().join("dir"), info.path.join("link-to-dir")).unwrap();
    symlink(
        outside.path().join("dir/precious"),
        info.path.join("link-to-file"),
    )
    .unwrap();
    let admin = f.wt.layout().worktree_admin(p, &a);
    symlink(outside.path().join("dir"), admin.join("planted")).unwrap();

    f.wt.recycle(
        p,
        &a,
        RecycleOptions {
            force: true,
            ..RecycleOptions::default()
        },
    )
    .unwrap();
    assert!(!info.path.exists() && !admin.exists());
    assert_eq!(
        tree(outside.path()),
        vec![
            outside.path().join("dir"),
            outside.path().join("dir/precious")
        ]
    );
}

#[test]
fn reconcile_clears_stale_locks_only_for_agents_that_are_not_live() {
    let f = Fixture::new();
    let p = &f.project;
    let layout = f.wt.layout();
    let (dead, live) = (agent("dead"), agent("live"));
    let id = f.wt.provision(p, &dead, &task("t"), None).unwrap();
    let il = f.wt.provision(p, &live, &task("t"), None).unwrap();
    let lock_files = |repo: &Path, name: &str| -> Vec<PathBuf> {
        vec![
            repo.join("HEAD.lock"),
            repo.join("packed-refs.lock"),
            repo.join(format!("refs/heads/agent/{name}/t.lock")),
            repo.join(format!("worktrees/{name}/index.lock")),
        ]
    };
    for (info, name) in [(&id, "dead"), (&il, "live")] {
        std::fs::write(info.path.join("work.txt"), "w\n").unwrap();
        for lock in lock_files(&info.agent_repo, name) {
            std::fs::write(lock, "").unwrap();
        }
    }
    let forge_lock = f.forge().join("refs/heads/main.lock");
    std::fs::write(&forge_lock, "").unwrap();

    // A stale lock blocks a commit, and the error names it.
    let err =
        f.wt.commit(p, &dead, &commit_request("w", "act-1"))
            .unwrap_err();
    assert!(
        matches!(&err, Error::Locked { lock_file, .. } if *lock_file == id.agent_repo.join("worktrees/dead/index.lock")),
        "{err}"
    );
    assert!(err.to_string().contains("reconcile"), "{err}");

    let report = f.wt.reconcile(&[(p.clone(), live.clone())]).unwrap();
    let mut removed: Vec<PathBuf> = report
        .actions
        .iter()
        .map(|a| match a {
            ReconcileAction::RemovedLockFile { path } => path.clone(),
            other => panic!("unexpected action {other:?}"),
        })
        .collect();
    removed.sort();
    let mut want = lock_files(&id.agent_repo, "dead");
    want.push(forge_lock.clone());
    want.sort();
    assert_eq!(removed, want);
    for lock in lock_files(&il.agent_repo, "live") {
        assert!(
            lock.exists(),
            "{} of a live agent was removed",
            lock.display()
        );
    }
    assert!(layout.worktree(p, &live).exists());
    // The dead agent can commit again.
    f.wt.commit(p, &dead, &commit_request("w", "act-1"))
        .unwrap();
}

#[test]
fn reconcile_prunes_only_what_is_provably_dead() {
    let f = Fixture::new();
    let p = &f.project;
    let layout = f.wt.layout();

    // A worktree directory deleted from under berth.
    let gone = agent("gone");
    let ig = f.wt.provision(p, &gone, &task("t"), None).unwrap();
    std::fs::remove_dir_all(&ig.path).unwrap();
    // A provisioning that died after the checkout, before berth's record.
    let half = agent("half");
    let ih = f.wt.provision(p, &half, &task("t"), None).unwrap();
    std::fs::remove_file(layout.worktree_record(p, &half)).unwrap();
    // A provisioning that died before the checkout: only the directory.
    let early = agent("early");
    std::fs::create_dir_all(layout.worktree(p, &early).join("partial")).unwrap();
    // Staging directories of interrupted creations.
    std::fs::create_dir_all(layout.berth_dir(p, &early).join(".init-early.git/objects")).unwrap();
    std::fs::create_dir_all(layout.forge_dir().join(".import-web.git/objects")).unwrap();
    // A healthy worktree of an agent that is not live: kept (its gate may be open).
    let idle = agent("idle");
    let ii = f.wt.provision(p, &idle, &task("t"), None).unwrap();
    std::fs::write(ii.path.join("pending.txt"), "awaiting review\n").unwrap();

    let report = f.wt.reconcile(&[]).unwrap();
    let want = vec![
        ReconcileAction::RemovedStaging {
            path: layout.berth_dir(p, &early).join(".init-early.git"),
        },
        ReconcileAction::RemovedHalfCreatedWorktree {
            project: p.clone(),
            agent: early.clone(),
            path: layout.worktree(p, &early),
        },
        ReconcileAction::RemovedStaleRecord {
            project: p.clone(),
            agent: gone.clone(),
            path: layout.worktree_record(p, &gone),
        },
        ReconcileAction::PrunedAdminDir {
            project: p.clone(),
            agent: gone.clone(),
            path: layout.worktree_admin(p, &gone),
        },
        ReconcileAction::RemovedHalfCreatedWorktree {
            project: p.clone(),
            agent: half.clone(),
            path: ih.path.clone(),
        },
        ReconcileAction::PrunedAdminDir {
            project: p.clone(),
            agent: half.clone(),
            path: layout.worktree_admin(p, &half),
        },
        ReconcileAction::RemovedStaging {
            path: layout.forge_dir().join(".import-web.git"),
        },
    ];
    assert_eq!(report.actions, want);

    assert_eq!(
        std::fs::read_to_string(ii.path.join("pending.txt")).unwrap(),
        "awaiting review\n"
    );
    assert!(git(&ii.agent_repo, &["worktree", "list", "--porcelain"]).contains("locked"));
    for repo in [&ig.agent_repo, &ih.agent_repo] {
        assert_eq!(
            git(repo, &["worktree", "list", "--porcelain"]),
            format!("worktree {}\nbare\n\n", repo.display())
        );
    }
    // A second pass finds nothing, and every agent can be provisioned again.
    assert_eq!(f.wt.reconcile(&[]).unwrap().actions, vec![]);
    for a in [&gone, &half, &early] {
        assert!(f.wt.provision(p, a, &task("t"), None).unwrap().created);
    }
}

#[test]
fn reconcile_skips_busy_agents_and_never_leaves_the_state_directory() {
    let f = Fixture::new();
    let p = &f.project;
    let layout = f.wt.layout();
    let (busy, tricky) = (agent("busy"), agent("tricky"));
    let ib = f.wt.provision(p, &busy, &task("t"), None).unwrap();
    let it = f.wt.provision(p, &tricky, &task("t"), None).unwrap();
    std::fs::write(ib.agent_repo.join("HEAD.lock"), "").unwrap();

    // The tricky agent plants symlinks to the outside in its repository.
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(outside.path().join("refs")).unwrap();
    std::fs::write(outside.path().join("refs/x.lock"), "").unwrap();
    std::fs::write(outside.path().join("y.lock"), "").unwrap();
    symlink(
        outside.path().join("refs"),
        it.agent_repo.join("refs/heads/out"),
    )
    .unwrap();
    symlink(outside.path().join("y.lock"), it.agent_repo.join("y.lock")).unwrap();

    // Another process holds the busy agent's writer lock.
    let held = std::fs::File::create(layout.agent_lock(p, &busy)).unwrap();
    rustix::fs::flock(&held, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let report = f.wt.reconcile(&[]).unwrap();
    drop(held);

    assert_eq!(
        report.actions,
        vec![ReconcileAction::SkippedBusy {
            lock: layout.agent_lock(p, &busy)
        }]
    );
    assert!(ib.agent_repo.join("HEAD.lock").exists());
    assert!(outside.path().join("refs/x.lock").exists());
    assert!(outside.path().join("y.lock").exists());

    // Once free, its lock file goes.
    let report = f.wt.reconcile(&[]).unwrap();
    assert_eq!(
        report.actions,
        vec![ReconcileAction::RemovedLockFile {
            path: ib.agent_repo.join("HEAD.lock")
        }]
    );
}
