#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Nothing the agent made is thrown away: `down` saves a worktree's
//! uncommitted changes and unpushed commits into the forge under
//! `refs/berth/saved/<agent>/<time>` before recycling it (unless
//! `--discard`), saves nothing when there is nothing to lose, and a person
//! lists and drops what was saved.

use crate::common;

use berth_engine::{ActionParams, AgentImpl, BerthMode};
use berth_policy::Action;
use common::{Fixture, named, run_action, terminal, user};

/// What the agent leaves in its worktree before `down`.
struct Case {
    name: &'static str,
    /// Terminal commands run in the berth.
    commands: &'static [&'static str],
    /// Commit (without pushing) after the commands.
    commit: bool,
    /// More commands after the commit.
    after: &'static [&'static str],
    discard: bool,
    /// `None`: nothing saved. Else the files the saved commit holds, with
    /// their contents, and whether uncommitted changes went into it.
    saved: Option<(&'static [(&'static str, &'static str)], bool)>,
}

const CASES: &[Case] = &[
    Case {
        name: "clean tree at the forge's base",
        commands: &[],
        commit: false,
        after: &[],
        discard: false,
        saved: None,
    },
    Case {
        name: "a new file and a changed one",
        commands: &["echo new > new.txt", "echo changed > README.md"],
        commit: false,
        after: &[],
        discard: false,
        saved: Some((&[("new.txt", "new\n"), ("README.md", "changed\n")], true)),
    },
    Case {
        name: "a deleted file",
        commands: &["rm README.md", "echo kept > other.txt"],
        commit: false,
        after: &[],
        discard: false,
        saved: Some((&[("other.txt", "kept\n")], true)),
    },
    Case {
        name: "an unpushed commit, clean tree",
        commands: &["echo committed > c.txt"],
        commit: true,
        after: &[],
        discard: false,
        saved: Some((&[("c.txt", "committed\n")], false)),
    },
    Case {
        name: "an unpushed commit and changes after it",
        commands: &["echo committed > c.txt"],
        commit: true,
        after: &["echo later > d.txt"],
        discard: false,
        saved: Some((&[("c.txt", "committed\n"), ("d.txt", "later\n")], true)),
    },
    Case {
        name: "changes, discarded",
        commands: &["echo new > new.txt"],
        commit: false,
        after: &[],
        discard: true,
        saved: None,
    },
    Case {
        name: "ignored files only",
        commands: &["echo '*.log' > .gitignore"],
        commit: true,
        after: &["echo noise > x.log"],
        discard: false,
        // The commit of .gitignore is saved; the ignored file is not in it.
        saved: Some((&[(".gitignore", "*.log\n")], false)),
    },
];

#[tokio::test]
async fn down_saves_what_the_recycle_would_lose() {
    for case in CASES {
        let f = Fixture::new().await;
        f.agent("dev-1", AgentImpl::Real).await;
        f.engine
            .up(
                &named("dev-1"),
                &named("demo"),
                Some(BerthMode::Runner),
                &user(),
            )
            .await
            .unwrap();
        for c in case.commands {
            let (code, _, err) = terminal(&f.engine, "dev-1", c).await;
            assert_eq!(code, 0, "{}: {c}: {err}", case.name);
        }
        if case.commit {
            let o = run_action(
                &f.engine,
                "dev-1",
                Action::GitCommit,
                ActionParams {
                    message: Some("work".into()),
                    ..ActionParams::default()
                },
            )
            .await;
            assert!(o.succeeded, "{}: {:?}", case.name, o.diagnostic);
        }
        for c in case.after {
            let (code, _, err) = terminal(&f.engine, "dev-1", c).await;
            assert_eq!(code, 0, "{}: {c}: {err}", case.name);
        }
        let info = f
            .engine
            .down_with(&named("dev-1"), false, case.discard, &user())
            .await
            .unwrap();
        assert!(info.worktree.is_none(), "{}: recycled", case.name);
        let listed = f.engine.saved_work(None).await.unwrap();
        let Some((files, committed_changes)) = case.saved else {
            assert!(info.saved.is_none(), "{}: {:?}", case.name, info.saved);
            assert!(listed.is_empty(), "{}: {listed:?}", case.name);
            continue;
        };
        let saved = info
            .saved
            .unwrap_or_else(|| panic!("{}: nothing saved", case.name));
        assert!(
            saved.refname.starts_with("refs/berth/saved/dev-1/"),
            "{}: {}",
            case.name,
            saved.refname
        );
        assert_eq!(saved.committed_changes, committed_changes, "{}", case.name);
        assert_eq!(
            f.forge_git(&["rev-parse", &saved.refname]).trim(),
            saved.commit,
            "{}",
            case.name
        );
        for (path, content) in files {
            assert_eq!(
                f.forge_git(&["show", &format!("{}:{path}", saved.refname)]),
                *content,
                "{}: {path}",
                case.name
            );
        }
        let tree = f.forge_git(&["ls-tree", "-r", "--name-only", &saved.refname]);
        assert!(!tree.contains("x.log"), "{}: ignored file saved", case.name);
        if case.name == "a deleted file" {
            assert!(!tree.contains("README.md"), "{}: {tree}", case.name);
        }
        // Outside every agent's branches; the fetch command names it.
        assert!(
            !f.forge_git(&["branch", "--list"]).contains("saved"),
            "{}",
            case.name
        );
        assert!(saved.fetch_command().contains(&saved.refname));
        assert_eq!(listed.len(), 1, "{}: {listed:?}", case.name);
        assert_eq!(listed[0].refname, saved.refname);
        assert_eq!(listed[0].commit, saved.commit);

        // Kept until a person drops it.
        assert!(
            f.engine
                .drop_saved_work("demo", &saved.refname)
                .await
                .unwrap()
        );
        assert!(f.engine.saved_work(None).await.unwrap().is_empty());
        assert!(
            !f.engine
                .drop_saved_work("demo", &saved.refname)
                .await
                .unwrap(),
            "{}: dropped twice",
            case.name
        );
    }
}

/// A tip the forge already holds (pushed) is not saved again.
#[tokio::test]
async fn a_pushed_tip_is_not_saved() {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    let branch = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap()
        .branch
        .unwrap();
    let (code, _, err) = terminal(&f.engine, "dev-1", "echo x > x.txt").await;
    assert_eq!(code, 0, "{err}");
    for action in [Action::GitCommit, Action::GitPush { branch }] {
        let o = run_action(
            &f.engine,
            "dev-1",
            action,
            ActionParams {
                message: Some("work".into()),
                ..ActionParams::default()
            },
        )
        .await;
        assert!(o.succeeded, "{:?}", o.diagnostic);
    }
    let info = f
        .engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap();
    assert!(info.saved.is_none(), "{:?}", info.saved);
    assert!(f.engine.saved_work(None).await.unwrap().is_empty());
}

/// A name outside `refs/berth/saved/` is never dropped.
#[tokio::test]
async fn drop_touches_only_saved_refs() {
    let f = Fixture::new().await;
    let base = f.forge_git(&["symbolic-ref", "--short", "HEAD"]);
    for bad in [
        "",
        "refs/berth/saved/",
        "../../heads/main",
        "refs/heads/main",
    ] {
        let dropped = f.engine.drop_saved_work("demo", bad).await;
        assert!(!matches!(dropped, Ok(true)), "{bad}: {dropped:?}");
    }
    // The base branch is still there.
    assert!(!f.forge_git(&["rev-parse", base.trim()]).trim().is_empty());
}
