//! Provisioning agent repositories and worktrees: layout, sharing, locking,
//! idempotence and repair of leftovers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use berth_worktrees::{Error, RecycleOptions, WorktreeInfo};
use common::*;

/// Files in an object directory other than the (empty) `info`/`pack` scaffolding.
fn object_files(objects: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(objects) {
        let rel = entry
            .strip_prefix(objects)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if entry.is_file() && rel != "info/alternates" {
            found.push(rel);
        }
    }
    found
}

/// Provisioning inflates every object of the checkout; libgit2 does it with
/// the zlib linked into this build, which must be zlib-ng (the workspace's
/// `git2` feature `zlib-ng-compat`), not the system's zlib: the system's
/// inflate costs a quarter more instructions per checkout
/// (`benches/provision.rs`).
#[test]
fn libgit2_inflates_with_zlib_ng() {
    // SAFETY: zlibVersion takes nothing and returns a pointer to a static,
    // NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(libz_sys::zlibVersion()) };
    let version = version.to_string_lossy();
    assert!(
        version.contains("zlib-ng"),
        "libgit2's zlib is {version:?}, not zlib-ng"
    );
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

#[test]
fn provision_creates_a_locked_worktree_sharing_the_forge_objects() {
    let f = Fixture::new();
    let layout = f.wt.layout();
    let main = f.forge_refs()["refs/heads/main"].clone();

    let info =
        f.wt.provision(&f.project, &agent("dev-1"), &task("t1"), None)
            .unwrap();
    assert_eq!(
        info,
        WorktreeInfo {
            path: f.state().join("berths/web/dev-1/dev-1"),
            agent_repo: f.state().join("berths/web/dev-1/dev-1.git"),
            forge_objects: f.state().join("forge/web.git/objects"),
            branch: "agent/dev-1/t1".to_owned(),
            base_branch: "main".to_owned(),
            head: main.parse().unwrap(),
            created: true,
        }
    );

    // The checkout is complete and clean, on the agent's branch.
    assert_eq!(
        std::fs::read_to_string(info.path.join("README.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(git(&info.path, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&info.path, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/agent/dev-1/t1"
    );

    // The agent repository borrows the forge's objects and holds none itself.
    let alternates =
        std::fs::read_to_string(info.agent_repo.join("objects/info/alternates")).unwrap();
    assert_eq!(alternates, format!("{}\n", info.forge_objects.display()));
    assert_eq!(
        object_files(&info.agent_repo.join("objects")),
        Vec::<String>::new()
    );
    assert_eq!(
        git(&info.agent_repo, &["rev-parse", "--is-bare-repository"]).trim(),
        "true"
    );
    assert_eq!(
        git(&info.agent_repo, &["rev-parse", "refs/remotes/forge/main"]).trim(),
        main
    );

    // Locked while live, with a reason.
    let list = git(&info.agent_repo, &["worktree", "list", "--porcelain"]);
    assert!(
        list.contains(&format!("worktree {}", info.path.display())),
        "{list}"
    );
    assert!(list.contains("locked berth: live"), "{list}");

    // berth's record, outside the agent's directories.
    assert_eq!(
        std::fs::read_to_string(layout.worktree_record(&f.project, &agent("dev-1"))).unwrap(),
        "agent/dev-1/t1\n"
    );
    // The forge did not change.
    assert_eq!(f.forge_refs()["refs/heads/main"], main);
}

#[test]
fn provision_again_returns_the_live_worktree() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let first = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    std::fs::write(first.path.join("work.txt"), "in progress\n").unwrap();

    let again = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    assert_eq!(
        again,
        WorktreeInfo {
            created: false,
            ..first.clone()
        }
    );
    // Uncommitted work survives.
    assert_eq!(
        std::fs::read_to_string(first.path.join("work.txt")).unwrap(),
        "in progress\n"
    );

    // After a commit the live worktree reports the new head.
    let c =
        f.wt.commit(p, &a, &commit_request("work", "act-1"))
            .unwrap();
    assert_eq!(
        f.wt.provision(p, &a, &task("t1"), None).unwrap().head,
        c.oid
    );

    // An agent that unlocked its worktree gets it locked again.
    git(
        &first.agent_repo,
        &["worktree", "unlock", first.path.to_str().unwrap()],
    );
    f.wt.provision(p, &a, &task("t1"), None).unwrap();
    assert!(git(&first.agent_repo, &["worktree", "list", "--porcelain"]).contains("locked"));

    // Another task while this one is live is refused, saying what to do.
    let err = f.wt.provision(p, &a, &task("t2"), None).unwrap_err();
    assert!(matches!(err, Error::AgentBusy { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("agent/dev-1/t1") && msg.contains("agent/dev-1/t2") && msg.contains("recycle"),
        "{msg}"
    );
}

#[test]
fn provision_repairs_what_a_crash_left() {
    let f = Fixture::new();
    let layout = f.wt.layout();
    let p = &f.project;

    // A half-created worktree: the directory exists, berth never recorded it.
    let a = agent("half");
    let wt_dir = layout.worktree(p, &a);
    std::fs::create_dir_all(wt_dir.join("partial")).unwrap();
    std::fs::write(wt_dir.join("partial/file"), "x").unwrap();
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    assert!(info.created);
    assert!(!wt_dir.join("partial").exists());
    assert_eq!(git(&info.path, &["status", "--porcelain"]), "");

    // A worktree directory deleted from under berth: the admin directory and
    // the record are stale.
    let a = agent("deleted");
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    std::fs::remove_dir_all(&info.path).unwrap();
    let again = f.wt.provision(p, &a, &task("t"), None).unwrap();
    assert!(again.created);
    assert_eq!(git(&again.path, &["status", "--porcelain"]), "");

    // Crash after the worktree was added but before berth recorded it.
    let a = agent("unrecorded");
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    std::fs::remove_file(layout.worktree_record(p, &a)).unwrap();
    std::fs::write(info.path.join("stray"), "x").unwrap();
    let again = f.wt.provision(p, &a, &task("t"), None).unwrap();
    assert!(again.created);
    assert!(!again.path.join("stray").exists());

    // Crash inside repository creation: a staging directory.
    let a = agent("staged");
    std::fs::create_dir_all(layout.berth_dir(p, &a).join(".init-staged.git/objects")).unwrap();
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    assert!(info.created);
    assert!(!layout.berth_dir(p, &a).join(".init-staged.git").exists());
}

#[test]
fn a_new_worktree_resumes_work_pushed_before() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    std::fs::write(info.path.join("new.txt"), "pushed\n").unwrap();
    let c =
        f.wt.commit(p, &a, &commit_request("add new.txt", "act-1"))
            .unwrap();
    f.wt.push(p, &a, &info.branch).unwrap();
    f.wt.recycle(
        p,
        &a,
        RecycleOptions {
            remove_repository: true,
            ..RecycleOptions::default()
        },
    )
    .unwrap();
    assert!(!info.agent_repo.exists());

    let again = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    assert_eq!(again.head, c.oid);
    assert_eq!(
        std::fs::read_to_string(again.path.join("new.txt")).unwrap(),
        "pushed\n"
    );
    // A different task starts from the base.
    f.wt.recycle(p, &a, RecycleOptions::default()).unwrap();
    let other = f.wt.provision(p, &a, &task("t2"), None).unwrap();
    assert_eq!(other.head.to_string(), f.forge_refs()["refs/heads/main"]);
}

#[test]
fn provision_of_an_unknown_project_names_the_missing_forge() {
    let f = Fixture::new();
    let err =
        f.wt.provision(&project("nope"), &agent("a"), &task("t"), None)
            .unwrap_err();
    assert!(
        matches!(
            err,
            Error::Missing {
                what: "forge repository",
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("forge/nope.git is missing"), "{msg}");
    assert!(msg.contains("berth project add"), "{msg}");
}

#[test]
fn checkout_applies_attributes_and_modes_like_git() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(
        &tmp.path().join("src"),
        &[
            (".gitattributes", "*.crlf text eol=crlf\n*.id ident\n"),
            ("a.crlf", "one\ntwo\n"),
            ("b.id", "$Id$\n"),
            ("plain.txt", "one\ntwo\n"),
            ("run.sh", "#!/bin/sh\n"),
        ],
    );
    std::os::unix::fs::symlink("plain.txt", src.join("link")).unwrap();
    std::fs::set_permissions(
        src.join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "modes"]);
    let plain = source_repo(&tmp.path().join("plain"), &[("plain.txt", "one\ntwo\n")]);

    let wt = berth_worktrees::Worktrees::open(tmp.path().join("state")).unwrap();
    wt.import_project(&project("attrs"), &src, None).unwrap();
    wt.import_project(&project("plain"), &plain, None).unwrap();
    let a = wt
        .provision(&project("attrs"), &agent("a"), &task("t"), None)
        .unwrap();
    let p = wt
        .provision(&project("plain"), &agent("a"), &task("t"), None)
        .unwrap();

    // What git itself checks out.
    let reference = tmp.path().join("reference");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            src.to_str().unwrap(),
            reference.to_str().unwrap(),
        ],
    );
    for file in ["a.crlf", "b.id", "plain.txt", "run.sh", ".gitattributes"] {
        assert_eq!(
            std::fs::read(a.path.join(file)).unwrap(),
            std::fs::read(reference.join(file)).unwrap(),
            "{file}"
        );
    }
    assert_eq!(
        std::fs::read(a.path.join("a.crlf")).unwrap(),
        b"one\r\ntwo\r\n"
    );
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions())
    };
    assert_eq!(mode(&a.path.join("run.sh")) & 0o111, 0o111);
    assert_eq!(
        std::fs::read_link(a.path.join("link")).unwrap(),
        Path::new("plain.txt")
    );
    assert_eq!(git(&a.path, &["status", "--porcelain"]), "");
    // Without attributes, content is the blob, byte for byte.
    assert_eq!(
        std::fs::read(p.path.join("plain.txt")).unwrap(),
        b"one\ntwo\n"
    );
    assert_eq!(git(&p.path, &["status", "--porcelain"]), "");
}
