//! `sync_project` and `export_commit` against real repositories: what they
//! refuse, and that a refusal changes nothing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use berth_worktrees::{Error, GitLimits, Oid, SyncStatus, Worktrees, pr_export_ref};
use common::*;

fn commit_file(repo: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    std::fs::write(repo.join(name), bytes).unwrap();
    git(repo, &["add", name]);
    git(repo, &["commit", "-q", "-m", name]);
    git(repo, &["rev-parse", "HEAD"]).trim().to_owned()
}

#[test]
fn sync_statuses_and_refusals_leave_the_forge_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(&tmp.path().join("src"), &[("a.txt", "a\n")]);
    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    let info = wt.import_project(&project("web"), &src, None).unwrap();
    let forge = wt.layout().forge(&project("web"));
    let limits = GitLimits {
        max_object_bytes: 1024,
        ..GitLimits::default()
    };

    let s = wt.sync_project(&project("web"), &src, &limits).unwrap();
    assert_eq!((s.status, s.after), (SyncStatus::UpToDate, info.base_head));

    // An object over the bound: refused before anything is fetched.
    let big = commit_file(&src, "big.bin", &vec![b'x'; 4096]);
    let before = refs(&forge);
    let err = wt.sync_project(&project("web"), &src, &limits).unwrap_err();
    assert!(matches!(err, Error::ObjectTooLarge { .. }), "{err}");
    assert_eq!(refs(&forge), before);
    assert!(
        git_cmd(&forge, &["cat-file", "-e", &big])
            .output()
            .unwrap()
            .status
            .code()
            != Some(0),
        "no object came in"
    );

    // Within the default bound it fast-forwards.
    let s = wt
        .sync_project(&project("web"), &src, &GitLimits::default())
        .unwrap();
    assert_eq!(s.status, SyncStatus::FastForwarded);
    assert_eq!(s.after.to_string(), big);
    assert_eq!(git(&forge, &["rev-parse", "main"]).trim(), big);
    git(&forge, &["fsck", "--no-progress"]);

    // The source rewound below the forge: the forge is ahead, unchanged.
    git(&src, &["reset", "-q", "--hard", "HEAD~1"]);
    let s = wt
        .sync_project(&project("web"), &src, &GitLimits::default())
        .unwrap();
    assert_eq!(s.status, SyncStatus::ForgeAhead);
    assert_eq!(git(&forge, &["rev-parse", "main"]).trim(), big);

    // And moved on elsewhere: diverged, unchanged.
    commit_file(&src, "other.txt", b"other\n");
    let before = refs(&forge);
    let err = wt
        .sync_project(&project("web"), &src, &GitLimits::default())
        .unwrap_err();
    assert!(matches!(err, Error::Diverged { .. }), "{err}");
    assert_eq!(refs(&forge), before);

    // The base branch gone from the source.
    git(&src, &["checkout", "-q", "-b", "elsewhere"]);
    git(&src, &["branch", "-q", "-D", "main"]);
    let err = wt
        .sync_project(&project("web"), &src, &GitLimits::default())
        .unwrap_err();
    assert!(matches!(err, Error::SourceLacksBase { .. }), "{err}");
    assert!(err.to_string().contains("nothing was changed"), "{err}");
}

#[test]
fn export_writes_only_refs_under_refs_berth_and_only_forge_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(&tmp.path().join("src"), &[("a.txt", "a\n")]);
    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    let info = wt.import_project(&project("web"), &src, None).unwrap();
    let target = source_repo(&tmp.path().join("target"), &[("t.txt", "t\n")]);
    let before = refs(&target);

    let bad_refs = [
        "refs/heads/main",
        "HEAD",
        "refs/berth/../heads/main",
        "refs/berthx/pr/1",
    ];
    for refname in bad_refs {
        let err = wt
            .export_commit(&project("web"), info.base_head, "main", &target, refname)
            .unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput { .. }),
            "{refname}: {err}"
        );
    }
    // A commit not reachable from the branch named.
    let stranger = Oid::from_str(git(&target, &["rev-parse", "HEAD"]).trim()).unwrap();
    let err = wt
        .export_commit(
            &project("web"),
            stranger,
            "main",
            &target,
            &pr_export_ref(1),
        )
        .unwrap_err();
    assert!(matches!(err, Error::CommitMissing { .. }), "{err}");
    let err = wt
        .export_commit(
            &project("web"),
            info.base_head,
            "gone",
            &target,
            &pr_export_ref(1),
        )
        .unwrap_err();
    assert!(matches!(err, Error::CommitMissing { .. }), "{err}");
    assert_eq!(refs(&target), before, "refusals write nothing");

    let e = wt
        .export_commit(
            &project("web"),
            info.base_head,
            "main",
            &target,
            &pr_export_ref(7),
        )
        .unwrap();
    assert_eq!(e.refname, "refs/berth/pr/7");
    let mut want = before.clone();
    want.insert("refs/berth/pr/7".to_owned(), info.base_head.to_string());
    assert_eq!(refs(&target), want, "one ref more, nothing else");
}
