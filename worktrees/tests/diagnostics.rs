//! Every failure says what was being done, where, and why (ADR 0048: no
//! `{"", 2}`); a missing directory is named as missing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use berth_worktrees::{Error, Identity, MergeRequest, RecycleOptions};
use common::*;

#[test]
fn failures_name_the_operation_the_path_and_the_cause() {
    let f = Fixture::new();
    let p = &f.project;
    let layout = f.wt.layout().clone();
    let gone = agent("gone");
    let ig = f.wt.provision(p, &gone, &task("t"), None).unwrap();
    std::fs::remove_dir_all(&ig.path).unwrap();
    let merger = Identity::new("M", "m@x").unwrap();

    // (what happened, the error, words the message must contain)
    let cases: Vec<(&str, Error, Vec<String>)> = vec![
        (
            "commit after the worktree directory was deleted",
            f.wt.commit(p, &gone, &commit_request("x", "a"))
                .unwrap_err(),
            vec![
                "commit:".into(),
                "worktree directory".into(),
                "is missing".into(),
                ig.path.display().to_string(),
            ],
        ),
        (
            "commit for an agent never provisioned",
            f.wt.commit(p, &agent("never"), &commit_request("x", "a"))
                .unwrap_err(),
            vec![
                "commit:".into(),
                "agent repository".into(),
                "is missing".into(),
                layout.agent_repo(p, &agent("never")).display().to_string(),
            ],
        ),
        (
            "push for an agent never provisioned",
            f.wt.push(p, &agent("never"), "agent/never/t").unwrap_err(),
            vec!["push:".into(), "is missing".into(), "never.git".into()],
        ),
        (
            "merge in an unknown project",
            f.wt.merge(
                &project("ghost"),
                &MergeRequest {
                    source: "a".into(),
                    target: "main".into(),
                    identity: merger.clone(),
                    message: None,
                },
            )
            .unwrap_err(),
            vec![
                "merge:".into(),
                "forge repository".into(),
                "ghost.git is missing".into(),
            ],
        ),
        (
            "diff of an unknown branch",
            f.wt.branch_diff_stat(p, "agent/x/y", "main").unwrap_err(),
            vec![
                "diff stat:".into(),
                "agent/x/y".into(),
                "does not exist".into(),
                f.forge().display().to_string(),
            ],
        ),
        (
            "recycle of a worktree whose admin directory became a file",
            {
                let a = agent("odd");
                f.wt.provision(p, &a, &task("t"), None).unwrap();
                let admin = layout.worktree_admin(p, &a);
                std::fs::remove_dir_all(&admin).unwrap();
                std::fs::write(&admin, "not a directory").unwrap();
                f.wt.recycle(p, &a, RecycleOptions::default()).unwrap_err()
            },
            vec![
                "recycle:".into(),
                "changed from inside the berth".into(),
                "regular file".into(),
            ],
        ),
    ];
    for (what, err, words) in cases {
        let msg = err.to_string();
        assert!(!msg.trim().is_empty(), "{what}: empty message");
        for word in &words {
            assert!(
                msg.contains(word.as_str()),
                "{what}: {msg:?} lacks {word:?}"
            );
        }
    }
}

#[test]
fn libgit2_failures_keep_libgit2s_message_and_the_ref() {
    let f = Fixture::new();
    let (p, a) = (&f.project, agent("dev-1"));
    let info = f.wt.provision(p, &a, &task("t"), None).unwrap();
    std::fs::write(info.path.join("x"), "x").unwrap();
    // A stale ref lock blocks the commit's ref update.
    std::fs::write(info.agent_repo.join("refs/heads/agent/dev-1/t.lock"), "").unwrap();
    let err =
        f.wt.commit(p, &a, &commit_request("x", "act-1"))
            .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Git { .. }), "{msg}");
    assert!(msg.starts_with("commit in "), "{msg}");
    assert!(msg.contains("(refs/heads/agent/dev-1/t)"), "{msg}");
    assert!(msg.contains("t.lock"), "{msg}");
    assert!(msg.contains("class=") && msg.contains("code="), "{msg}");
}
