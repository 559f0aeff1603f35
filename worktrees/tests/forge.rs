//! Importing projects into the forge, listing them, and `forge_has`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use berth_worktrees::{Error, Oid, Worktrees};
use common::*;

#[test]
fn import_copies_every_branch_and_tag_and_takes_head_as_base() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(&tmp.path().join("src"), &[("a.txt", "a\n")]);
    git(&src, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(src.join("b.txt"), "b\n").unwrap();
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "feature"]);
    git(&src, &["tag", "-a", "v1", "-m", "release"]);
    git(&src, &["checkout", "-q", "main"]);
    // A dirty source does not matter: only commits are imported.
    std::fs::write(src.join("untracked"), "x").unwrap();

    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    let info = wt.import_project(&project("web"), &src, None).unwrap();

    let forge = wt.layout().forge(&project("web"));
    assert_eq!(info.forge, forge);
    assert_eq!(info.base_branch, "main");
    assert_eq!(
        info.base_head.to_string(),
        git(&src, &["rev-parse", "main"]).trim()
    );
    assert_eq!(
        info.config_dir,
        tmp.path()
            .join("state/projects/web")
            .canonicalize()
            .unwrap()
    );
    assert!(info.config_dir.is_dir());

    let mut src_refs = refs(&src);
    src_refs.retain(|r, _| r.starts_with("refs/heads/") || r.starts_with("refs/tags/"));
    assert_eq!(refs(&forge), src_refs);
    assert_eq!(
        git(&forge, &["symbolic-ref", "HEAD"]).trim(),
        "refs/heads/main"
    );
    assert_eq!(
        git(&forge, &["rev-parse", "--is-bare-repository"]).trim(),
        "true"
    );
    // The forge does not remember where it came from.
    assert_eq!(git(&forge, &["remote"]).trim(), "");
    git(&forge, &["fsck", "--no-progress"]);

    // An explicit base.
    let other = wt
        .import_project(&project("web2"), &src, Some("feature"))
        .unwrap();
    assert_eq!(other.base_branch, "feature");
    assert_eq!(
        wt.projects()
            .unwrap()
            .iter()
            .map(|p| (p.name.to_string(), p.base_branch.clone()))
            .collect::<Vec<_>>(),
        vec![
            ("web".to_owned(), "main".to_owned()),
            ("web2".to_owned(), "feature".to_owned())
        ]
    );
    assert_eq!(wt.project(&project("web")).unwrap(), info);
}

#[test]
fn import_refuses_what_it_cannot_use() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(&tmp.path().join("src"), &[("a.txt", "a\n")]);
    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    wt.import_project(&project("web"), &src, None).unwrap();

    // The name is taken.
    let err = wt.import_project(&project("web"), &src, None).unwrap_err();
    assert!(matches!(err, Error::ProjectExists { .. }), "{err}");
    assert!(err.to_string().contains("already exists"), "{err}");

    // Not a repository (and a directory inside one is not one either).
    let plain = tmp.path().join("plain");
    std::fs::create_dir(&plain).unwrap();
    std::fs::create_dir(src.join("sub")).unwrap();
    for path in [plain.clone(), src.join("sub"), tmp.path().join("nope")] {
        let err = wt.import_project(&project("x"), &path, None).unwrap_err();
        assert!(matches!(err, Error::NotARepository { .. }), "{err}");
        assert!(
            err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }

    // A base branch that does not exist.
    let err = wt
        .import_project(&project("x"), &src, Some("nope"))
        .unwrap_err();
    assert!(
        matches!(err, Error::UnknownBranch { ref branch, .. } if branch == "nope"),
        "{err}"
    );

    // A detached source HEAD and no base.
    let detached = source_repo(&tmp.path().join("detached"), &[("a", "a")]);
    git(&detached, &["checkout", "-q", "--detach"]);
    let err = wt
        .import_project(&project("x"), &detached, None)
        .unwrap_err();
    assert!(matches!(err, Error::NoBaseBranch { .. }), "{err}");
    assert!(err.to_string().contains("pass the base branch"), "{err}");

    // None of the failures left a project or a staging directory behind.
    assert_eq!(wt.projects().unwrap().len(), 1);
    let forge_dir: Vec<_> = std::fs::read_dir(wt.layout().forge_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(forge_dir, vec!["web.git".to_owned()]);
}

#[test]
fn import_refuses_a_source_owned_by_another_user() {
    if !require_root("import_refuses_a_source_owned_by_another_user") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(&tmp.path().join("src"), &[("a.txt", "a\n")]);
    std::process::Command::new("chown")
        .args(["-R", "1000:1000"])
        .arg(&src)
        .status()
        .unwrap();
    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    let err = wt.import_project(&project("web"), &src, None).unwrap_err();
    assert!(
        matches!(err, Error::UntrustedOwner { owner: 1000, .. }),
        "{err}"
    );
}

#[test]
fn forge_has_follows_the_branch() {
    let f = Fixture::new();
    let main = f.forge_refs()["refs/heads/main"].parse::<Oid>().unwrap();
    // Extend main in the source and import it as a second project to get a
    // descendant; in the first project, main's tip and its ancestors count.
    let first = git(&f.source, &["rev-list", "--max-parents=0", "main"]);
    let first: Oid = first.trim().parse().unwrap();
    assert!(f.wt.forge_has(&f.project, "main", main).unwrap());
    assert!(f.wt.forge_has(&f.project, "main", first).unwrap());
    // A commit the forge does not have, a branch that does not exist.
    let unknown: Oid = "1111111111111111111111111111111111111111".parse().unwrap();
    assert!(!f.wt.forge_has(&f.project, "main", unknown).unwrap());
    assert!(!f.wt.forge_has(&f.project, "nope", main).unwrap());
    assert!(f.wt.forge_has(&f.project, "bad name", main).is_err());
}
