//! Identity commits and restricted pushes, checked in the real repositories.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use berth_worktrees::{CommitOutcome, CommitRequest, Error, Identity, PushOutcome};
use common::*;

#[test]
fn commit_writes_identity_and_trailers_and_stages_everything() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let wt = &info.path;
    // An addition (nested, and a dotfile), a modification, a deletion, and
    // ignored output that must stay out.
    std::fs::create_dir_all(wt.join("src/deep")).unwrap();
    std::fs::write(wt.join("src/deep/new.rs"), "fn g() {}\n").unwrap();
    std::fs::write(wt.join(".env.example"), "X=1\n").unwrap();
    std::fs::write(wt.join("README.md"), "hello, world\n").unwrap();
    std::fs::remove_file(wt.join("src/lib.rs")).unwrap();
    std::fs::create_dir_all(wt.join("target")).unwrap();
    std::fs::write(wt.join("target/out.o"), "binary").unwrap();

    let out =
        f.wt.commit(
            p,
            &a,
            &commit_request("Rework the library\n\nMove f into deep.", "act-1"),
        )
        .unwrap();
    assert!(out.created);
    assert_eq!(out.branch, "agent/dev-1/t1");

    let repo = &info.agent_repo;
    let sha = out.oid.to_string();
    assert_eq!(
        git(repo, &["rev-parse", "refs/heads/agent/dev-1/t1"]).trim(),
        sha
    );
    assert_eq!(
        show(repo, &sha, "%an%n%ae%n%cn%n%ce%n%B"),
        "dev-1[bot]\ndev-1@berth.local\ndev-1[bot]\ndev-1@berth.local\n\
         Rework the library\n\nMove f into deep.\n\n\
         Co-authored-by: Ada Lovelace <ada@example.com>\nBerth-Action: act-1\n\n"
    );
    // git itself parses the trailers.
    assert_eq!(
        git(
            repo,
            &["log", "-1", "--format=%(trailers:only,unfold)", &sha]
        ),
        "Co-authored-by: Ada Lovelace <ada@example.com>\nBerth-Action: act-1\n\n"
    );
    assert_eq!(
        git(
            repo,
            &[
                "diff-tree",
                "--no-commit-id",
                "--name-status",
                "-r",
                &format!("{sha}~1"),
                &sha
            ]
        ),
        "A\t.env.example\nM\tREADME.md\nA\tsrc/deep/new.rs\nD\tsrc/lib.rs\n"
    );
    // The worktree is clean for git too (the index was written).
    assert_eq!(git(wt, &["status", "--porcelain"]), "");
    // Nothing reached the forge.
    assert!(!f.forge_refs().contains_key("refs/heads/agent/dev-1/t1"));
}

#[test]
fn commit_is_idempotent_by_action_id_and_refuses_empty_commits() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();

    // Nothing changed yet.
    let err =
        f.wt.commit(p, &a, &commit_request("nothing", "act-0"))
            .unwrap_err();
    assert!(matches!(err, Error::NothingToCommit { .. }), "{err}");
    assert!(err.to_string().contains("nothing to commit"), "{err}");

    std::fs::write(info.path.join("a.txt"), "1\n").unwrap();
    let first = f.wt.commit(p, &a, &commit_request("one", "act-1")).unwrap();
    // A retry of the same action returns the first commit, even with new
    // changes in the worktree and after later commits.
    std::fs::write(info.path.join("b.txt"), "2\n").unwrap();
    let retry = f.wt.commit(p, &a, &commit_request("one", "act-1")).unwrap();
    assert_eq!(
        retry,
        CommitOutcome {
            created: false,
            ..first.clone()
        }
    );
    let second = f.wt.commit(p, &a, &commit_request("two", "act-2")).unwrap();
    assert!(second.created);
    let retry = f.wt.commit(p, &a, &commit_request("one", "act-1")).unwrap();
    assert_eq!(retry.oid, first.oid);
    assert!(!retry.created);
    assert_eq!(
        git(
            &info.agent_repo,
            &[
                "rev-list",
                "--count",
                "refs/remotes/forge/main..agent/dev-1/t1"
            ]
        )
        .trim(),
        "2"
    );
}

#[test]
fn commit_takes_a_configured_identity_and_refuses_bad_requests() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    std::fs::write(info.path.join("a.txt"), "1\n").unwrap();
    let req = CommitRequest {
        message: "custom".to_owned(),
        action_id: "act-9".to_owned(),
        identity: Some(Identity::new("Reviewer Bot", "review@corp.example").unwrap()),
        co_author: None,
    };
    let out = f.wt.commit(p, &a, &req).unwrap();
    assert_eq!(
        show(&info.agent_repo, &out.oid.to_string(), "%an <%ae>%n%B"),
        "Reviewer Bot <review@corp.example>\ncustom\n\nBerth-Action: act-9\n\n"
    );

    for (message, action) in [("", "act-x"), ("ok", "has space"), ("ok", "")] {
        let err =
            f.wt.commit(p, &a, &commit_request(message, action))
                .unwrap_err();
        assert!(matches!(err, Error::InvalidInput { .. }), "{err}");
    }
}

#[test]
fn commit_refuses_a_worktree_switched_to_a_foreign_branch() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    git(&info.path, &["checkout", "-q", "-b", "main-copy"]);
    std::fs::write(info.path.join("a.txt"), "1\n").unwrap();
    let err =
        f.wt.commit(p, &a, &commit_request("x", "act-1"))
            .unwrap_err();
    assert!(matches!(err, Error::RefNotAllowed { .. }), "{err}");
    assert!(err.to_string().contains("refs/heads/main-copy"), "{err}");
}

#[test]
fn push_moves_only_the_agents_branch_fast_forward() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let before = f.forge_refs();

    std::fs::write(info.path.join("a.txt"), "1\n").unwrap();
    let c1 = f.wt.commit(p, &a, &commit_request("one", "act-1")).unwrap();
    let pushed = f.wt.push(p, &a, &info.branch).unwrap();
    assert_eq!(
        pushed,
        PushOutcome {
            refname: "refs/heads/agent/dev-1/t1".to_owned(),
            oid: c1.oid,
            previous: None,
            updated: true,
            objects: 3, // commit, root tree, blob
        }
    );
    let mut want = before.clone();
    want.insert("refs/heads/agent/dev-1/t1".to_owned(), c1.oid.to_string());
    assert_eq!(f.forge_refs(), want);
    git(&f.forge(), &["fsck", "--no-progress", "--no-dangling"]);
    assert_eq!(
        git(&f.forge(), &["show", &format!("{}:a.txt", c1.oid)]),
        "1\n"
    );
    assert!(f.wt.forge_has(p, &info.branch, c1.oid).unwrap());

    // Again: nothing to do, and it says so.
    let again = f.wt.push(p, &a, &info.branch).unwrap();
    assert_eq!(
        again,
        PushOutcome {
            previous: Some(c1.oid),
            updated: false,
            objects: 0,
            ..pushed.clone()
        }
    );

    // A fast-forward.
    std::fs::write(info.path.join("a.txt"), "2\n").unwrap();
    let c2 = f.wt.commit(p, &a, &commit_request("two", "act-2")).unwrap();
    let ff = f.wt.push(p, &a, &info.branch).unwrap();
    assert_eq!(
        (ff.previous, ff.oid, ff.updated),
        (Some(c1.oid), c2.oid, true)
    );
    assert!(f.wt.forge_has(p, &info.branch, c1.oid).unwrap());
    git(&f.forge(), &["fsck", "--no-progress", "--no-dangling"]);
}

#[test]
fn push_refuses_foreign_refs_and_rewritten_history() {
    let f = Fixture::new();
    let p = &f.project;
    let (a, b) = (agent("dev-1"), agent("dev-2"));
    let ia = f.wt.provision(p, &a, &task("t1"), None).unwrap();
    let ib = f.wt.provision(p, &b, &task("t1"), None).unwrap();
    std::fs::write(ib.path.join("b.txt"), "b\n").unwrap();
    f.wt.commit(p, &b, &commit_request("b", "act-b")).unwrap();

    // Another agent's branch, the base branch, a prefix look-alike.
    for branch in [
        "agent/dev-2/t1",
        "main",
        "agent/dev-1",
        "agent/dev-10/t1",
        "agent/dev-1x/t",
    ] {
        let err = f.wt.push(p, &a, branch).unwrap_err();
        assert!(
            matches!(err, Error::RefNotAllowed { .. }),
            "{branch}: {err}"
        );
        assert!(
            err.to_string().contains("refs/heads/agent/dev-1/*"),
            "{err}"
        );
    }
    assert!(!f.forge_refs().contains_key("refs/heads/agent/dev-2/t1"));

    // Non-fast-forward: the agent rewrites what it pushed.
    std::fs::write(ia.path.join("a.txt"), "1\n").unwrap();
    let c1 = f.wt.commit(p, &a, &commit_request("one", "act-1")).unwrap();
    f.wt.push(p, &a, &ia.branch).unwrap();
    git(&ia.path, &["reset", "-q", "--hard", "HEAD~1"]);
    std::fs::write(ia.path.join("a.txt"), "other\n").unwrap();
    let c2 =
        f.wt.commit(p, &a, &commit_request("rewritten", "act-2"))
            .unwrap();
    let before = f.forge_refs();
    let err = f.wt.push(p, &a, &ia.branch).unwrap_err();
    match &err {
        Error::NonFastForward {
            refname,
            forge_oid,
            local_oid,
            ..
        } => {
            assert_eq!(refname, "refs/heads/agent/dev-1/t1");
            assert_eq!((*forge_oid, *local_oid), (c1.oid, c2.oid));
        }
        other => panic!("expected NonFastForward, got {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("not a fast-forward") && msg.contains("never force-pushes"),
        "{msg}"
    );
    assert_eq!(f.forge_refs(), before);

    // A branch the agent repository does not have.
    let err = f.wt.push(p, &a, "agent/dev-1/none").unwrap_err();
    assert!(matches!(err, Error::UnknownBranch { .. }), "{err}");
}
