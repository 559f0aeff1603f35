//! Where object hashes are checked: berth's own process re-hashes every
//! object it reads; only the checkout of provisioning, in `berth-helper`,
//! does not (`skip_rehash_for_checkout` argues why). A forge object never
//! differs from its name — berth hashes objects where they enter — so the
//! test plants one by hand to see which side checks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;

use common::*;

/// Replaces the loose object `oid` in `repo` with the loose object of
/// `other` (same size, other bytes): its content no longer hashes to its name.
fn swap_loose_object(repo: &Path, oid: &str, other: &str) {
    let loose = |id: &str| repo.join("objects").join(&id[..2]).join(&id[2..]);
    let bytes = std::fs::read(loose(other)).unwrap();
    let target = loose(oid);
    std::fs::remove_file(&target).unwrap();
    std::fs::write(&target, bytes).unwrap();
}

#[test]
fn only_the_checkout_helper_trusts_object_names() {
    let f = Fixture::new();
    let forge = f.forge();
    let scratch = f.tmp.path().join("blobs");
    std::fs::create_dir(&scratch).unwrap();
    let write_blob = |name: &str, content: &str| {
        let path = scratch.join(name);
        std::fs::write(&path, content).unwrap();
        git(&forge, &["hash-object", "-w", path.to_str().unwrap()])
            .trim()
            .to_owned()
    };
    let right = write_blob("right", "right\n");
    let wrong = write_blob("wrong", "wrong\n");
    // A branch whose tree names `right`, as pushed work would.
    let base_tree = git(&forge, &["rev-parse", "main^{tree}"]);
    let listing = git(&forge, &["ls-tree", base_tree.trim()]);
    let tree_spec = format!("{listing}100644 blob {right}\tplanted.txt\n");
    let spec_path = scratch.join("tree");
    std::fs::write(&spec_path, tree_spec).unwrap();
    let tree = {
        let out = git_cmd(&forge, &["mktree"])
            .stdin(std::fs::File::open(&spec_path).unwrap())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let commit = git(
        &forge,
        &["commit-tree", &tree, "-p", "main", "-m", "planted"],
    );
    let a = agent("trust");
    git(
        &forge,
        &[
            "update-ref",
            &format!("refs/heads/agent/{a}/t"),
            commit.trim(),
        ],
    );
    swap_loose_object(&forge, &right, &wrong);

    // The helper's checkout writes the object's bytes without re-hashing.
    let info = f.wt.provision(&f.project, &a, &task("t"), None).unwrap();
    assert_eq!(
        std::fs::read_to_string(info.path.join("planted.txt")).unwrap(),
        "wrong\n"
    );

    // This process — berth's — still re-hashes, after provisioning too.
    let repo = git2::Repository::open_bare(&forge).unwrap();
    let err = repo
        .find_blob(git2::Oid::from_str(&right).unwrap())
        .expect_err("berth's own process must refuse an object that does not match its name");
    assert!(err.message().contains("hash mismatch"), "{err}");
}
