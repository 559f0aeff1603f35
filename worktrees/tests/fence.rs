//! The fencing token at the forge (`fence.rs`): a stale lease holder's push
//! is refused by the forge itself — a directory forge by berth under the
//! forge's lock, a forge server by berth's hook (`scripts/berth-fence-hook.sh`)
//! on a real `git http-backend`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::thread::JoinHandle;

use berth_worktrees::{Error, Fence, GitLimits, ProjectInfo, Result, Worktrees};

use crate::common::smart_http::{fence_hook_script, install_fence_hook};
use crate::common::*;
use crate::forge_server::ServerFixture;

const BRANCH: &str = "agent/dev-1/t1";
const REF: &str = "refs/heads/agent/dev-1/t1";

fn fence(token: u64) -> Fence {
    Fence {
        agent: agent("dev-1"),
        token,
    }
}

fn commit_file(wt: &Worktrees, info: &ProjectInfo, file: &str, action: &str) -> String {
    let a = agent("dev-1");
    let worktree = wt.layout().worktree(&info.name, &a);
    std::fs::write(worktree.join(file), format!("{file}\n")).unwrap();
    wt.commit(&info.name, &a, &commit_request("Change", action))
        .unwrap()
        .oid
        .to_string()
}

fn push(wt: &Worktrees, info: &ProjectInfo, token: u64) -> Result<String> {
    wt.push_fenced(
        &info.name,
        &agent("dev-1"),
        BRANCH,
        &GitLimits::default(),
        &fence(token),
    )
    .map(|o| o.oid.to_string())
}

#[test]
fn a_directory_forge_refuses_a_stale_token_and_takes_the_current_one() {
    let tmp = tempfile::tempdir().unwrap();
    let src = source_repo(&tmp.path().join("src"), &[("a.txt", "a\n")]);
    let wt = Worktrees::open(tmp.path().join("state")).unwrap();
    let info = wt.import_project(&project("web"), &src, None).unwrap();
    wt.provision(&info.name, &agent("dev-1"), &task("t1"), None)
        .unwrap();

    // The first holder (token 1) pushes.
    let first = commit_file(&wt, &info, "one.txt", "act-1");
    assert_eq!(push(&wt, &info, 1).unwrap(), first);
    assert_eq!(refs(&info.forge).get(REF), Some(&first));

    // A takeover raises the token to 2 before it reads the forge.
    assert_eq!(wt.raise_fence(&info.name, &fence(2)).unwrap(), 1);

    // The old holder, stale, pushes again: refused, the ref stays.
    let second = commit_file(&wt, &info, "two.txt", "act-2");
    match push(&wt, &info, 1).unwrap_err() {
        Error::ForgeFenced {
            agent,
            token,
            current,
            ..
        } => assert_eq!((agent.as_str(), token, current), ("dev-1", 1, 2)),
        e => panic!("expected ForgeFenced, got {e}"),
    }
    assert_eq!(refs(&info.forge).get(REF), Some(&first));
    // A stale lease cannot raise either.
    assert!(matches!(
        wt.raise_fence(&info.name, &fence(1)).unwrap_err(),
        Error::ForgeFenced { current: 2, .. }
    ));

    // The new holder's token is taken.
    assert_eq!(push(&wt, &info, 2).unwrap(), second);
    assert_eq!(refs(&info.forge).get(REF), Some(&second));
    // Another agent's fence is its own.
    let other = Fence {
        agent: agent("dev-2"),
        token: 1,
    };
    assert_eq!(wt.raise_fence(&info.name, &other).unwrap(), 0);
}

/// A forge server (`forge_server.rs`'s fixture: `git http-backend` holding
/// `web.git`, a state directory mirroring it) with berth's fence hook
/// installed and agent dev-1's berth on task t1, and another host's state
/// directory mirroring the same server: where the takeover happens.
struct Fenced {
    server: ServerFixture,
    other: Worktrees,
}

impl std::ops::Deref for Fenced {
    type Target = ServerFixture;
    fn deref(&self) -> &ServerFixture {
        &self.server
    }
}

/// Where a held stale push (token 1) waits, in its ref update.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hold {
    /// Before the fence hook's check under the ref's lock.
    BeforeCheck,
    /// After it passed.
    AfterCheck,
}

impl Fenced {
    fn new() -> Fenced {
        let server = ServerFixture::new();
        install_fence_hook(&server.server_repo());
        server
            .wt
            .provision(&server.info.name, &agent("dev-1"), &task("t1"), None)
            .unwrap();
        let other = Worktrees::open(server.tmp.path().join("other")).unwrap();
        other
            .import_project_from_server(
                &project("web"),
                &server.server.url("web.git"),
                None,
                &GitLimits::default(),
            )
            .unwrap();
        Fenced { server, other }
    }

    fn repo(&self) -> PathBuf {
        self.server_repo()
    }

    fn server_ref(&self) -> Option<String> {
        refs(&self.repo()).get(REF).cloned()
    }

    /// The highest token the server's hook has recorded for dev-1.
    fn server_token(&self) -> Option<String> {
        std::fs::read_to_string(self.repo().join("berth-fence/dev-1.token"))
            .ok()
            .map(|t| t.trim().to_owned())
    }

    /// Commits, then starts a push of token 1 whose ref update stops at
    /// `hold` until the file this returns exists; returns once it stopped,
    /// with the commit and the push's thread.
    fn stale_push_held(&self, hold: Hold) -> (String, PathBuf, JoinHandle<Result<String>>) {
        use std::os::unix::fs::PermissionsExt;
        let (waiting, go) = (self.tmp.path().join("waiting"), self.tmp.path().join("go"));
        let hooks = self.repo().join("hooks");
        std::fs::copy(fence_hook_script(), hooks.join("berth-fence")).unwrap();
        let wrapper = hooks.join("reference-transaction");
        let before = if hold == Hold::BeforeCheck {
            "yes"
        } else {
            "no"
        };
        // (The fence hook's pre-receive looks for its own name in this file.)
        let script = format!(
            r#"#!/bin/sh
# runs berth-fence, holding token 1's ref update
stale=no
[ "$1" = prepared ] && grep -q '^dev-1 1 ' berth-fence/inflight/$PPID 2>/dev/null && stale=yes
hold() {{ : > '{waiting}'; while [ ! -f '{go}' ]; do sleep 0.05; done; }}
[ $stale = yes ] && [ {before} = yes ] && hold
BERTH_FENCE_RECEIVE_PACK=$PPID "$(dirname "$0")/berth-fence" "$@" || exit 1
[ $stale = yes ] && [ {before} = no ] && hold
exit 0
"#,
            waiting = waiting.display(),
            go = go.display()
        );
        std::fs::write(&wrapper, script).unwrap();
        for p in [&wrapper, &hooks.join("berth-fence")] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let commit = commit_file(&self.wt, &self.info, "two.txt", "act-2");
        let (wt, info) = (self.wt.clone(), self.info.clone());
        let pushing = std::thread::spawn(move || push(&wt, &info, 1));
        // No deadline: the test's own timeout bounds it.
        while !waiting.exists() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        (commit, go, pushing)
    }
}

#[test]
fn a_forge_server_refuses_a_stale_holders_push_after_the_takeovers_raise() {
    let f = Fenced::new();
    let first = commit_file(&f.wt, &f.info, "one.txt", "act-1");
    assert_eq!(push(&f.wt, &f.info, 1).unwrap(), first);
    assert_eq!(f.server_ref(), Some(first.clone()));
    assert_eq!(f.server_token().as_deref(), Some("1"));

    f.other.raise_fence(&f.info.name, &fence(2)).unwrap();
    assert_eq!(f.server_token().as_deref(), Some("2"));
    assert_eq!(
        git(&f.repo(), &["cat-file", "-p", "refs/berth/fence/dev-1"]),
        "2\n"
    );

    let second = commit_file(&f.wt, &f.info, "two.txt", "act-2");
    match push(&f.wt, &f.info, 1).unwrap_err() {
        Error::ForgeFenced {
            agent,
            token,
            current,
            forge,
        } => {
            assert_eq!((agent.as_str(), token, current), ("dev-1", 1, 2));
            assert_eq!(forge, f.server.server.url("web.git"));
        }
        e => panic!("expected ForgeFenced, got {e}"),
    }
    assert_eq!(f.server_ref(), Some(first.clone()));
    assert_eq!(refs(&f.info.forge).get(REF), Some(&first));

    assert_eq!(push(&f.wt, &f.info, 2).unwrap(), second);
    assert_eq!(f.server_ref(), Some(second));
    // An unfenced push (no lease: a person's own run) is not checked.
    let third = commit_file(&f.wt, &f.info, "three.txt", "act-3");
    let out = f.wt.push(&f.info.name, &agent("dev-1"), BRANCH).unwrap();
    assert_eq!(out.oid.to_string(), third);
}

/// The race the pre-receive check alone would lose: a stale push passes
/// pre-receive, then the raise happens, then the stale push reaches its ref
/// update. The check under the ref's lock refuses it.
#[test]
fn a_stale_push_that_passed_pre_receive_before_the_raise_is_refused_at_its_ref_update() {
    let f = Fenced::new();
    let first = commit_file(&f.wt, &f.info, "one.txt", "act-1");
    push(&f.wt, &f.info, 1).unwrap();
    let (second, go, stale) = f.stale_push_held(Hold::BeforeCheck);
    // The takeover's raise (on the other host), while the stale push holds
    // the ref's lock.
    f.other.raise_fence(&f.info.name, &fence(2)).unwrap();
    std::fs::write(&go, "").unwrap();
    // receive-pack dies once the hook aborts its transaction; berth reads
    // the server's fence to say why.
    match stale.join().unwrap().unwrap_err() {
        Error::ForgeFenced { token, current, .. } => assert_eq!((token, current), (1, 2)),
        e => panic!("expected ForgeFenced, got {e}"),
    }
    assert_eq!(f.server_ref(), Some(first.clone()));
    assert_ne!(f.server_ref(), Some(second));
    assert_eq!(refs(&f.info.forge).get(REF), Some(&first));
}

/// The other order: a stale push passed the check under the ref's lock
/// before the raise. The raise returns only once that push has landed, so
/// the new holder's read after it sees the push.
#[test]
fn a_raise_waits_for_an_older_push_already_past_the_check() {
    let f = Fenced::new();
    commit_file(&f.wt, &f.info, "one.txt", "act-1");
    push(&f.wt, &f.info, 1).unwrap();
    let (stale_commit, go, stale) = f.stale_push_held(Hold::AfterCheck);
    let raise = {
        let (wt, info) = (f.other.clone(), f.info.clone());
        std::thread::spawn(move || wt.raise_fence(&info.name, &fence(2)))
    };
    // Until the raise returns, or says (its mark in the hook's state) that
    // it waits for the older push.
    let inflight = f.repo().join("berth-fence/inflight");
    let raise_waits = || {
        std::fs::read_dir(&inflight).unwrap().any(|e| {
            std::fs::read_to_string(e.unwrap().path()).unwrap_or_default() == "dev-1 2 waiting\n"
        })
    };
    while !raise.is_finished() && !raise_waits() {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        !raise.is_finished(),
        "the raise returned while an older push was between its check and its ref update"
    );
    assert_eq!(f.server_token().as_deref(), Some("2"));
    std::fs::write(&go, "").unwrap();
    raise.join().unwrap().unwrap();
    // What the new holder reads after the raise includes the stale push.
    assert_eq!(f.server_ref(), Some(stale_commit.clone()));
    assert_eq!(stale.join().unwrap().unwrap(), stale_commit);
}

#[test]
fn a_server_without_the_fence_takes_no_fenced_push_and_no_raise() {
    let f = Fenced::new();
    let repo = f.repo();
    // Push options not advertised: nothing is sent.
    git(&repo, &["config", "receive.advertisePushOptions", "false"]);
    commit_file(&f.wt, &f.info, "one.txt", "act-1");
    let e = push(&f.wt, &f.info, 1).unwrap_err();
    assert!(matches!(e, Error::ForgeUnfenced { .. }), "{e}");
    assert!(
        e.to_string().contains("receive.advertisePushOptions"),
        "{e}"
    );
    assert_eq!(f.server_ref(), None);
    let e = f.other.raise_fence(&f.info.name, &fence(2)).unwrap_err();
    assert!(matches!(e, Error::ForgeUnfenced { .. }), "{e}");

    // Push options taken but no hook: the raise fails (no hook answered).
    git(&repo, &["config", "receive.advertisePushOptions", "true"]);
    for hook in ["pre-receive", "reference-transaction"] {
        std::fs::remove_file(repo.join("hooks").join(hook)).unwrap();
    }
    let e = f.other.raise_fence(&f.info.name, &fence(2)).unwrap_err();
    assert!(
        matches!(&e, Error::ForgeUnfenced { reason, .. } if reason.contains("no berth fence hook")),
        "{e}"
    );
}
