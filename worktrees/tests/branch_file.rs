//! Reading one file of a forge branch's tip (`forge_branch_file`): the
//! blob committed on the branch, never what a worktree holds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use berth_worktrees::{Error, Worktrees};
use common::*;

#[test]
fn a_file_is_read_from_the_branch_tip_and_nothing_else_is() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(
        &tmp.path().join("src"),
        &[
            (".devcontainer/devcontainer.json", "{\"image\": \"a\"}\n"),
            ("big.txt", &"x".repeat(4096)),
        ],
    );
    std::os::unix::fs::symlink("big.txt", src.join("link")).unwrap();
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "link"]);
    git(&src, &["checkout", "-q", "-b", "other"]);
    std::fs::write(src.join(".devcontainer/devcontainer.json"), "{}\n").unwrap();
    git(&src, &["commit", "-q", "-am", "other"]);
    git(&src, &["checkout", "-q", "main"]);
    // Uncommitted changes in the source are no branch's.
    std::fs::write(src.join(".devcontainer/devcontainer.json"), "dirty\n").unwrap();

    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    let p = project("web");
    wt.import_project(&p, &src, None).unwrap();
    let main = git(&src, &["rev-parse", "main"]);

    let file = wt
        .forge_branch_file(&p, "main", ".devcontainer/devcontainer.json", 1024)
        .unwrap()
        .unwrap();
    assert_eq!(file.content, b"{\"image\": \"a\"}\n");
    assert_eq!(file.commit.to_string(), main.trim());
    assert_eq!(wt.forge_branch_tip(&p, "main").unwrap(), file.commit);
    let other = wt
        .forge_branch_file(&p, "other", ".devcontainer/devcontainer.json", 1024)
        .unwrap()
        .unwrap();
    assert_eq!(other.content, b"{}\n");

    assert_eq!(
        wt.forge_branch_file(&p, "main", ".devcontainer.json", 1024)
            .unwrap(),
        None
    );
    for (path, want) in [
        ("big.txt", "over the 1024 bytes"),
        ("link", "not a regular file"),
        (".devcontainer", "not a regular file"),
        ("../x", "not a plain path"),
        ("/etc/passwd", "not a plain path"),
        (".devcontainer//devcontainer.json", "not a plain path"),
    ] {
        match wt.forge_branch_file(&p, "main", path, 1024) {
            Err(e @ Error::BranchPath { .. }) => {
                assert!(e.to_string().contains(want), "{path}: {e}")
            }
            other => panic!("{path}: {other:?}"),
        }
    }
    assert!(matches!(
        wt.forge_branch_file(&p, "nope", "big.txt", 1024),
        Err(Error::UnknownBranch { .. })
    ));
}
