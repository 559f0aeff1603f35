#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A runner berth's identity when berth runs as root: its commands, its file
//! actions and berth's git work for it all act as the berth's own uid (from
//! `[host] uid_range`, no host account), never as root — so nothing an agent
//! makes, a setuid binary included, belongs to root or to a person. When
//! berth is not root the user namespace maps the user's own uid and these
//! cases do not apply.

use crate::common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use berth_engine::{ActionParams, ActionResult, AgentImpl, Outcome};
use berth_policy::Action;
use common::{Fixture, named, run_action, user};

/// A fixture with agent `dev-1`, when berth is root (else these cases do
/// not apply: the user namespace maps the user's own uid).
async fn root_fixture() -> Option<Fixture> {
    if berth_sandbox::identity::current_uid() != 0 {
        eprintln!("skipped: berth is not root, so the user namespace maps the user's own uid");
        return None;
    }
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Real).await;
    Some(f)
}

async fn run(f: &Fixture, agent: &str, action: Action, params: ActionParams) -> Outcome {
    run_action(&f.engine, agent, action, params).await
}

/// Brings `agent` up in runner mode: its worktree.
async fn up_runner(f: &Fixture, agent: &str) -> PathBuf {
    f.engine
        .up(
            &named(agent),
            &named("demo"),
            Some(berth_engine::BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap()
        .worktree
        .unwrap()
}

/// A command's output; fails the test when it does not exit 0.
async fn ok(f: &Fixture, agent: &str, command: &str) -> String {
    let o = run(
        f,
        agent,
        Action::Terminal {
            command: command.into(),
        },
        ActionParams::default(),
    )
    .await;
    match o.result {
        Some(ActionResult::Terminal {
            exit_code: 0,
            stdout,
            ..
        }) => stdout,
        other => panic!("{command}: {other:?} ({:?})", o.diagnostic),
    }
}

async fn recorded_uid(f: &Fixture, agent: &str) -> u32 {
    let uid: Option<i64> = sqlx::query_scalar("SELECT uid FROM agents WHERE name = $1")
        .bind(agent)
        .fetch_one(f.engine.store().pool())
        .await
        .unwrap();
    u32::try_from(uid.expect("a runner berth of a root berth records its uid")).unwrap()
}

fn owner(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .uid()
}

fn state(f: &Fixture) -> PathBuf {
    f.dir.path().join("state")
}

#[tokio::test]
async fn as_root_a_runner_berth_runs_and_writes_as_its_own_uid() {
    let Some(f) = root_fixture().await else {
        return;
    };
    let wt = up_runner(&f, "dev-1").await;
    let uid = recorded_uid(&f, "dev-1").await;
    let range = berth_engine::config::DEFAULT_UID_RANGE;
    assert!((range[0]..=range[1]).contains(&uid), "{uid} out of range");
    assert!(
        berth_sandbox::identity::host_claims(uid).is_empty(),
        "uid {uid} is the host's"
    );
    let repo = state(&f).join("berths/demo/dev-1/dev-1.git");
    let home = state(&f).join("berths/demo/dev-1/.home");
    let tmp = state(&f).join("berths/demo/dev-1/.tmp");
    for dir in [&wt, &repo, &home, &tmp, &wt.join("README.md")] {
        assert_eq!(owner(dir), uid, "{}", dir.display());
    }

    // The command's identity, and what it writes in /work, /tmp and $HOME.
    assert_eq!(
        ok(&f, "dev-1", "id -u; id -g; id -G").await,
        format!("{uid}\n{uid}\n{uid}\n")
    );
    ok(
        &f,
        "dev-1",
        "echo c > /work/cmd.txt && echo t > /tmp/t.txt && echo h > \"$HOME/h.txt\"",
    )
    .await;
    assert_eq!(owner(&wt.join("cmd.txt")), uid);
    assert_eq!(owner(&tmp.join("t.txt")), uid);
    assert_eq!(owner(&home.join("h.txt")), uid);

    // A file action creates as the berth's uid, its directories too.
    let w = run(
        &f,
        "dev-1",
        Action::FileWrite {
            path: "/work/sub/dir/w.txt".into(),
        },
        ActionParams {
            content: Some("written\n".into()),
            ..ActionParams::default()
        },
    )
    .await;
    assert!(w.succeeded, "{:?}", w.diagnostic);
    for p in ["sub", "sub/dir", "sub/dir/w.txt"] {
        assert_eq!(owner(&wt.join(p)), uid, "{p}");
    }
    // The command can change what the file action made.
    ok(&f, "dev-1", "echo more >> sub/dir/w.txt").await;

    // berth's commit is made by its helper as the repository's owner: the
    // new objects belong to the berth's uid.
    let c = run(
        &f,
        "dev-1",
        Action::GitCommit,
        ActionParams {
            message: Some("runner commit".into()),
            ..ActionParams::default()
        },
    )
    .await;
    assert!(c.succeeded, "{:?}", c.diagnostic);
    let Some(ActionResult::GitCommit { commit, .. }) = &c.result else {
        panic!("{c:?}")
    };
    let object = repo.join("objects").join(&commit[..2]).join(&commit[2..]);
    assert_eq!(owner(&object), uid, "{}", object.display());
    assert_eq!(
        ok(&f, "dev-1", "git log --format=%s -1").await,
        "runner commit\n"
    );

    // A setuid binary the agent makes is the berth's uid's: it grants
    // nothing, in the exec nor on the host.
    let out = ok(
        &f,
        "dev-1",
        "cp /bin/id x && chmod u+s x && ./x -u && ./x -ru",
    )
    .await;
    assert_eq!(out, format!("{uid}\n{uid}\n"));
    let md = std::fs::metadata(wt.join("x")).unwrap();
    assert_eq!(md.uid(), uid);
    assert_ne!(md.permissions().mode() & 0o4000, 0, "setuid as made");

    // Reopened by another process (the berth is up, no `up`): same uid.
    let second = f.second().await;
    let outcome = run_action(
        &second,
        "dev-1",
        Action::Terminal {
            command: "id -u".into(),
        },
        ActionParams::default(),
    )
    .await;
    let Some(ActionResult::Terminal { stdout, .. }) = &outcome.result else {
        panic!("{outcome:?}")
    };
    assert_eq!(stdout, &format!("{uid}\n"));

    // Down (its worktree of the berth's uid recycled, its /tmp emptied) and
    // up again: the same uid, a fresh worktree of it.
    let down = f
        .engine
        .down(&named("dev-1"), false, &user())
        .await
        .unwrap();
    assert!(down.worktree.is_none(), "{down:?}");
    assert!(!tmp.join("t.txt").exists());
    let wt = up_runner(&f, "dev-1").await;
    assert_eq!(recorded_uid(&f, "dev-1").await, uid);
    assert_eq!(owner(&wt), uid);
    assert_eq!(ok(&f, "dev-1", "id -u").await, format!("{uid}\n"));
}

#[tokio::test]
async fn as_root_what_earlier_execs_left_as_root_becomes_the_berths() {
    let Some(f) = root_fixture().await else {
        return;
    };
    // A home and a /tmp with root's files in them, as runner berths without
    // a uid left them, and a link out that must not be followed.
    let home = state(&f).join("berths/demo/dev-1/.home");
    let tmp = state(&f).join("berths/demo/dev-1/.tmp");
    let outside = f.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("host.txt"), "host\n").unwrap();
    for dir in [&home, &tmp] {
        std::fs::create_dir_all(dir.join("deep/er")).unwrap();
        std::fs::write(dir.join("deep/er/old.txt"), "old\n").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("out")).unwrap();
    }
    up_runner(&f, "dev-1").await;
    let uid = recorded_uid(&f, "dev-1").await;
    for dir in [&home, &tmp] {
        for p in ["", "deep", "deep/er", "deep/er/old.txt", "out"] {
            assert_eq!(owner(&dir.join(p)), uid, "{}/{p}", dir.display());
        }
    }
    // Nothing through the link changed owner.
    assert_eq!(owner(&outside), 0);
    assert_eq!(owner(&outside.join("host.txt")), 0);
    assert_eq!(
        ok(
            &f,
            "dev-1",
            "echo new >> $HOME/deep/er/old.txt && cat /tmp/deep/er/old.txt"
        )
        .await,
        "old\n"
    );
}
