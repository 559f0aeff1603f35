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

#[test]
fn a_directory_is_named_by_its_tree_and_checked_out_without_following_links() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(
        &tmp.path().join("src"),
        &[
            ("docker/Dockerfile", "FROM scratch\n"),
            ("docker/sub/a.txt", "a\n"),
            ("README.md", "readme\n"),
        ],
    );
    std::os::unix::fs::symlink("/etc/hostname", src.join("docker/host")).unwrap();
    std::os::unix::fs::symlink("docker", src.join("linked")).unwrap();
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "links"]);

    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    let p = project("web");
    wt.import_project(&p, &src, None).unwrap();
    let main = git(&src, &["rev-parse", "main"]);
    let dir = wt.forge_branch_dir(&p, "main", "docker").unwrap().unwrap();
    assert_eq!(dir.commit.to_string(), main.trim());
    assert_eq!(
        dir.tree.to_string(),
        git(&src, &["rev-parse", "main:docker"]).trim()
    );
    let root = wt.forge_branch_dir(&p, "main", "").unwrap().unwrap();
    assert_eq!(
        root.tree.to_string(),
        git(&src, &["rev-parse", "main^{tree}"]).trim()
    );

    let dest = tmp.path().join("ctx");
    std::fs::create_dir(&dest).unwrap();
    wt.check_out_tree(&p, dir.tree, &dest, 1 << 20).unwrap();
    assert_eq!(
        std::fs::read_to_string(dest.join("Dockerfile")).unwrap(),
        "FROM scratch\n"
    );
    assert_eq!(
        std::fs::read_to_string(dest.join("sub/a.txt")).unwrap(),
        "a\n"
    );
    // The link is written as a link, never as what it points at.
    let host = std::fs::symlink_metadata(dest.join("host")).unwrap();
    assert!(host.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(dest.join("host")).unwrap(),
        std::path::Path::new("/etc/hostname")
    );
    assert!(!dest.join("README.md").exists());
    // Bounded like any checkout.
    let small = tmp.path().join("small");
    std::fs::create_dir(&small).unwrap();
    assert!(matches!(
        wt.check_out_tree(&p, dir.tree, &small, 4),
        Err(Error::CheckoutTooLarge { .. })
    ));

    assert_eq!(wt.forge_branch_dir(&p, "main", "nothing").unwrap(), None);
    for (path, want) in [
        ("docker/Dockerfile", "not a directory"),
        ("linked", "not a directory"),
        ("docker/../docker", "not a plain path"),
        ("/docker", "not a plain path"),
    ] {
        match wt.forge_branch_dir(&p, "main", path) {
            Err(e @ Error::BranchPath { .. }) => {
                assert!(e.to_string().contains(want), "{path}: {e}")
            }
            other => panic!("{path}: {other:?}"),
        }
    }
}
