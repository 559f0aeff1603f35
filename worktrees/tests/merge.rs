//! Merging forge branches in memory, and the diff stat of a branch.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use berth_worktrees::{
    ChangeKind, ChangedFile, Error, Identity, MergeKind, MergeOutcome, MergeRequest, Oid,
};
use common::*;

fn merger() -> Identity {
    Identity::new("Merge Bot", "merge@berth.local").unwrap()
}

fn request(source: &str, target: &str) -> MergeRequest {
    MergeRequest {
        source: source.to_owned(),
        target: target.to_owned(),
        identity: merger(),
        message: None,
    }
}

/// Provisions `name`, writes `files`, commits and pushes; returns the commit.
fn agent_work(f: &Fixture, name: &str, files: &[(&str, &str)]) -> (String, Oid) {
    let a = agent(name);
    let info = f.wt.provision(&f.project, &a, &task("t"), None).unwrap();
    for (path, content) in files {
        std::fs::write(info.path.join(path), content).unwrap();
    }
    let c =
        f.wt.commit(
            &f.project,
            &a,
            &commit_request(&format!("{name} work"), name),
        )
        .unwrap();
    f.wt.push(&f.project, &a, &info.branch).unwrap();
    (info.branch, c.oid)
}

#[test]
fn merge_fast_forwards_then_writes_a_merge_commit_then_is_up_to_date() {
    let f = Fixture::new();
    let p = &f.project;
    let main_before: Oid = f.forge_refs()["refs/heads/main"].parse().unwrap();
    let (b1, c1) = agent_work(&f, "dev-1", &[("one.txt", "1\n")]);
    let (b2, c2) = agent_work(&f, "dev-2", &[("two.txt", "2\n")]);

    let ff = f.wt.merge(p, &request(&b1, "main")).unwrap();
    assert_eq!(
        ff,
        MergeOutcome {
            oid: c1,
            kind: MergeKind::FastForward
        }
    );
    assert_eq!(f.forge_refs()["refs/heads/main"], c1.to_string());

    let merged = f.wt.merge(p, &request(&b2, "main")).unwrap();
    assert_eq!(merged.kind, MergeKind::MergeCommit);
    let forge = f.forge();
    let sha = merged.oid.to_string();
    assert_eq!(f.forge_refs()["refs/heads/main"], sha);
    assert_eq!(
        show(&forge, &sha, "%an <%ae>|%cn|%P|%s"),
        format!(
            "Merge Bot <merge@berth.local>|Merge Bot|{c1} {c2}|Merge branch '{b2}' into main\n"
        )
    );
    assert_eq!(
        git(&forge, &["ls-tree", "-r", "--name-only", &sha]),
        ".gitignore\nREADME.md\none.txt\nsrc/lib.rs\ntwo.txt\n"
    );
    git(&forge, &["fsck", "--no-progress", "--no-dangling"]);
    // The forge still has no worktree, and HEAD still names main.
    assert_eq!(
        git(&forge, &["worktree", "list", "--porcelain"]),
        format!("worktree {}\nbare\n\n", forge.display())
    );
    assert_eq!(
        git(&forge, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );

    let again = f.wt.merge(p, &request(&b2, "main")).unwrap();
    assert_eq!(
        again,
        MergeOutcome {
            oid: merged.oid,
            kind: MergeKind::UpToDate
        }
    );
    assert_ne!(main_before, merged.oid);
}

#[test]
fn a_conflict_lists_the_paths_and_leaves_the_forge_unchanged() {
    let f = Fixture::new();
    let p = &f.project;
    let (b1, _) = agent_work(
        &f,
        "dev-1",
        &[
            ("README.md", "from dev-1\n"),
            ("src/lib.rs", "one\n"),
            ("a.txt", "a\n"),
        ],
    );
    let (b2, _) = agent_work(
        &f,
        "dev-2",
        &[
            ("README.md", "from dev-2\n"),
            ("src/lib.rs", "two\n"),
            ("b.txt", "b\n"),
        ],
    );
    f.wt.merge(p, &request(&b1, "main")).unwrap();

    let forge = f.forge();
    let refs_before = f.forge_refs();
    let objects_before = git(&forge, &["count-objects", "-v"]);
    let err = f.wt.merge(p, &request(&b2, "main")).unwrap_err();
    match &err {
        Error::MergeConflict {
            paths,
            source_branch,
            target_branch,
            ..
        } => {
            assert_eq!(
                paths,
                &vec!["README.md".to_owned(), "src/lib.rs".to_owned()]
            );
            assert_eq!(
                (source_branch.as_str(), target_branch.as_str()),
                (b2.as_str(), "main")
            );
        }
        other => panic!("expected a conflict, got {other}"),
    }
    let msg = err.to_string();
    assert!(
        msg.contains("conflicts in 2 paths: README.md, src/lib.rs") && msg.contains("unchanged"),
        "{msg}"
    );
    assert_eq!(f.forge_refs(), refs_before);
    assert_eq!(git(&forge, &["count-objects", "-v"]), objects_before);
}

#[test]
fn merge_refuses_unknown_branches() {
    let f = Fixture::new();
    let err =
        f.wt.merge(&f.project, &request("nope", "main"))
            .unwrap_err();
    assert!(
        matches!(err, Error::UnknownBranch { ref branch, .. } if branch == "nope"),
        "{err}"
    );
    let err =
        f.wt.merge(&f.project, &request("main", "bad..name"))
            .unwrap_err();
    assert!(matches!(err, Error::InvalidName { .. }), "{err}");
}

#[test]
fn diff_stat_counts_what_the_branch_changes_since_its_base() {
    let f = Fixture::new();
    let p = &f.project;
    let a = agent("dev-1");
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    std::fs::write(info.path.join("README.md"), "hello\nmore\nlines\n").unwrap();
    std::fs::write(info.path.join("new.txt"), "n\n").unwrap();
    std::fs::remove_file(info.path.join("src/lib.rs")).unwrap();
    let c =
        f.wt.commit(p, &a, &commit_request("change", "act-1"))
            .unwrap();
    f.wt.push(p, &a, &info.branch).unwrap();
    // main moves on independently; it must not show up in the branch's diff.
    let (b2, _) = agent_work(&f, "dev-2", &[("other.txt", "o\n")]);
    f.wt.merge(p, &request(&b2, "main")).unwrap();

    let stat = f.wt.branch_diff_stat(p, &info.branch, "main").unwrap();
    assert_eq!(stat.head, c.oid);
    assert_eq!(stat.merge_base, info.head);
    assert_eq!(
        stat.files,
        vec![
            ChangedFile {
                path: "README.md".into(),
                kind: ChangeKind::Modified,
                insertions: 2,
                deletions: 0
            },
            ChangedFile {
                path: "new.txt".into(),
                kind: ChangeKind::Added,
                insertions: 1,
                deletions: 0
            },
            ChangedFile {
                path: "src/lib.rs".into(),
                kind: ChangeKind::Deleted,
                insertions: 0,
                deletions: 1
            },
        ]
    );
    assert_eq!((stat.insertions, stat.deletions), (3, 1));
    // git agrees.
    let numstat = git(
        &f.forge(),
        &["diff", "--numstat", &format!("main...{}", info.branch)],
    );
    assert_eq!(
        numstat,
        "2\t0\tREADME.md\n1\t0\tnew.txt\n0\t1\tsrc/lib.rs\n"
    );
}
