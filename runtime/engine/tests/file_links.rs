#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
//! Links the agent controls, against the runner's file actions and its
//! symlink guard: a file action whose path a link leads out of the worktree
//! is refused at decision (with where it leads); a pending write whose
//! directory becomes a link before the approval writes nothing outside and
//! says why; a process flipping a directory and a link while auto-approved
//! reads and writes run never gets one of them outside (rounds:
//! `BERTH_RACE_ROUNDS`, 200 by default); and a plain word (`cat notes`) that
//! names a link out of the worktree holds the command as `cat ./notes` does.

use crate::common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use berth_engine::{
    ActionParams, ActionResult, ActionStatus, AgentImpl, EngineError, EventFilter, Proposal,
    ProposeStatus,
};
use berth_policy::{Action, Approval, Verdict};
use common::{Fixture, named, user};

async fn up(f: &Fixture, agent: &str) -> std::path::PathBuf {
    f.agent(agent, AgentImpl::Real).await;
    f.engine
        .up(&named(agent), &named("demo"), None, &user())
        .await
        .unwrap()
        .worktree
        .unwrap()
}

fn write(path: &str, content: &str) -> Proposal {
    Proposal::by_agent(
        &named("dev-1"),
        Action::FileWrite {
            path: path.to_string(),
        },
    )
    .params(ActionParams {
        content: Some(content.to_string()),
        ..ActionParams::default()
    })
}

fn read(path: &str) -> Proposal {
    Proposal::by_agent(
        &named("dev-1"),
        Action::FileRead {
            path: path.to_string(),
        },
    )
}

/// Writes need a person from now on.
async fn writes_need_approval(f: &Fixture) {
    f.engine
        .set_autonomy("dev-1", "file_write", Approval::RequireApproval, &user())
        .await
        .unwrap();
}

/// Proposes a write that must wait for a person; its id.
async fn pending_write(f: &Fixture, path: &str, content: &str) -> String {
    let p = f.engine.propose(write(path, content), None).await.unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Pending { .. }),
        "{:?}",
        p.status
    );
    p.id
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[tokio::test]
async fn a_file_action_a_link_leads_out_of_the_worktree_is_refused_at_decision() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    let outside = f.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), "OUTSIDE\n").unwrap();
    std::os::unix::fs::symlink(outside.join("secret"), wt.join("hostinfo")).unwrap();
    std::os::unix::fs::symlink(&outside, wt.join("rootfs")).unwrap();
    for path in ["hostinfo", "rootfs", "/work/rootfs/secret"] {
        let p = f.engine.propose(read(path), None).await.unwrap();
        assert_eq!(p.decision.verdict, Verdict::Deny, "{path}");
        let ProposeStatus::Refused { reason } = &p.status else {
            panic!("{path}: {:?}", p.status)
        };
        assert!(
            reason.contains(&outside.display().to_string()) && reason.contains("nothing was read"),
            "{path}: {reason}"
        );
    }
    // A person cannot approve it either: it never waits.
    f.engine
        .set_autonomy("dev-1", "file_write", Approval::RequireApproval, &user())
        .await
        .unwrap();
    let p = f
        .engine
        .propose(write("rootfs/planted", "x"), None)
        .await
        .unwrap();
    assert!(
        matches!(p.status, ProposeStatus::Refused { .. }),
        "{:?}",
        p.status
    );
    assert_eq!(names(&outside), ["secret"]);
}

#[tokio::test]
async fn a_directory_swapped_for_a_link_before_the_approval_gets_nothing_written_outside() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    writes_need_approval(&f).await;
    let outside = f.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(wt.join("d")).unwrap();
    let id = pending_write(&f, "d/notes.txt", "from the agent\n").await;
    // The pending record shows the person where the path leads on the host.
    let pending = f.engine.action(&id).await.unwrap();
    assert_eq!(
        pending.resolved_path.as_deref(),
        Some(wt.join("d/notes.txt").to_str().unwrap()),
        "{pending:?}"
    );
    // The agent swaps `d` for a link while the action waits.
    std::fs::rename(wt.join("d"), wt.join("d.real")).unwrap();
    std::os::unix::fs::symlink(&outside, wt.join("d")).unwrap();
    let err = f
        .engine
        .approve(&id, &user(), false, None)
        .await
        .unwrap_err();
    let why = err.to_string();
    assert!(
        matches!(err, EngineError::RefusedAtApproval { .. }),
        "{why}"
    );
    assert!(
        why.contains(&format!("/work/d -> {}", outside.display()))
            && why.contains("nothing was written"),
        "the person sees the link and where it leads: {why}"
    );
    assert!(names(&outside).is_empty(), "{:?}", names(&outside));
    assert!(!wt.join("d.real/notes.txt").exists());
    // Recorded: refused with that reason, where it led now, and an event.
    let refused = f.engine.action(&id).await.unwrap();
    assert_eq!(refused.status, ActionStatus::Refused);
    assert_eq!(refused.decision.verdict, Verdict::Deny);
    assert!(
        refused
            .decision
            .reason
            .contains(&format!("/work/d -> {}", outside.display())),
        "{}",
        refused.decision.reason
    );
    let now = refused.resolved_path.unwrap();
    assert!(now.contains(&outside.display().to_string()), "{now}");
    let events = f.engine.events(&EventFilter::default()).await.unwrap();
    assert!(
        events
            .iter()
            .any(|e| e.kind == "proposed_action.refused_at_approval"
                && e.action.as_deref() == Some(id.as_str())),
        "{events:?}"
    );
    // The proposal's event still shows the decision as it was proposed.
    let created = events
        .iter()
        .find(|e| e.kind == "proposed_action.created" && e.action.as_deref() == Some(id.as_str()))
        .unwrap();
    assert_eq!(
        created.payload["decision"],
        serde_json::to_value(&pending.decision).unwrap()
    );
    assert_eq!(pending.decision.verdict, Verdict::RequireApproval);
    // A second approval finds it decided.
    assert!(matches!(
        f.engine.approve(&id, &user(), false, None).await,
        Err(EngineError::NotPending { .. })
    ));
}

#[tokio::test]
async fn a_pending_write_through_a_link_inside_the_worktree_shows_where_it_lands_and_runs() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    writes_need_approval(&f).await;
    std::fs::create_dir_all(wt.join("d.real")).unwrap();
    std::os::unix::fs::symlink("d.real", wt.join("d")).unwrap();
    let id = pending_write(&f, "d/notes.txt", "approved\n").await;
    let landing = wt.join("d.real/notes.txt");
    let pending = f.engine.action(&id).await.unwrap();
    assert_eq!(
        pending.resolved_path.as_deref(),
        Some(landing.to_str().unwrap())
    );
    let listed = f
        .engine
        .actions(&berth_engine::ActionFilter {
            pending_only: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(listed[0].resolved_path, pending.resolved_path);
    let a = f.engine.approve(&id, &user(), false, None).await.unwrap();
    assert!(a.outcome.succeeded, "{:?}", a.outcome);
    assert_eq!(std::fs::read_to_string(&landing).unwrap(), "approved\n");
    let done = f.engine.action(&id).await.unwrap();
    assert_eq!(
        done.resolved_path.as_deref(),
        Some(landing.to_str().unwrap())
    );
}

#[tokio::test]
async fn a_flipping_link_never_gets_a_read_or_a_write_outside() {
    let rounds: u64 = std::env::var("BERTH_RACE_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    f.engine
        .set_autonomy("dev-1", "file_write", Approval::AutoApprove, &user())
        .await
        .unwrap();
    let outside = f.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), "OUTSIDE\n").unwrap();
    std::fs::create_dir_all(wt.join("d")).unwrap();
    std::fs::write(wt.join("d/secret"), "inside\n").unwrap();
    std::os::unix::fs::symlink(&outside, wt.join("d.alt")).unwrap();

    // `d` is the directory, then the link, then the directory, …: each
    // exchange is atomic, as fast as the kernel allows.
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let flipper = {
        let (stop, flips) = (stop.clone(), flips.clone());
        let (a, b) = (wt.join("d"), wt.join("d.alt"));
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                if rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &a,
                    rustix::fs::CWD,
                    &b,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .is_err()
                {
                    break;
                }
                flips.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let started = Instant::now();
    let (mut done, mut refused, mut held, mut failed) = (0u32, 0u32, 0u32, 0u32);
    let mut escapes = Vec::new();
    for round in 0..rounds {
        for proposal in [
            write("d/notes.txt", &format!("round {round}\n")),
            read("d/secret"),
        ] {
            match f.engine.propose(proposal, None).await.unwrap().status {
                ProposeStatus::Executed { outcome } if outcome.succeeded => {
                    done += 1;
                    match outcome.result {
                        Some(ActionResult::FileRead {
                            content, host_path, ..
                        }) => {
                            if content != "inside\n"
                                || !host_path.starts_with(&*wt.to_string_lossy())
                            {
                                escapes.push(format!("read {content:?} at {host_path}"));
                            }
                        }
                        Some(ActionResult::FileWrite { host_path, .. }) => {
                            if !host_path.starts_with(&*wt.to_string_lossy()) {
                                escapes.push(format!("wrote at {host_path}"));
                            }
                        }
                        other => panic!("{other:?}"),
                    }
                }
                ProposeStatus::Executed { outcome } => {
                    failed += 1;
                    let why = outcome.diagnostic.unwrap_or_default();
                    assert!(!why.contains("OUTSIDE"), "{why}");
                }
                ProposeStatus::Refused { .. } => refused += 1,
                // Held for a person: nothing ran.
                ProposeStatus::Pending { .. } => held += 1,
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    let flips = flips.load(Ordering::Relaxed);
    eprintln!(
        "{rounds} rounds in {:?}: {flips} flips; {done} done, {refused} refused at decision, \
         {held} held, {failed} refused at execution, {} escapes",
        started.elapsed(),
        escapes.len()
    );
    assert!(
        flips > rounds,
        "the link flipped while actions ran: {flips}"
    );
    assert!(escapes.is_empty(), "{escapes:?}");
    assert_eq!(names(&outside), ["secret"], "nothing was created outside");
    assert_eq!(
        std::fs::read_to_string(outside.join("secret")).unwrap(),
        "OUTSIDE\n"
    );
}

#[tokio::test]
async fn a_plain_word_naming_a_link_out_of_the_worktree_holds_the_command() {
    let f = Fixture::new().await;
    let wt = up(&f, "dev-1").await;
    f.engine
        .set_autonomy("dev-1", "terminal", Approval::AutoApprove, &user())
        .await
        .unwrap();
    let outside = f.dir.path().join("id_rsa");
    std::fs::write(&outside, "PRIVATE KEY\n").unwrap();
    std::os::unix::fs::symlink(&outside, wt.join("notes")).unwrap();
    std::fs::create_dir_all(wt.join("sub")).unwrap();
    std::os::unix::fs::symlink(&outside, wt.join("sub/notes")).unwrap();

    let plain = f
        .engine
        .propose(
            Proposal::by_agent(
                &named("dev-1"),
                Action::Terminal {
                    command: "cat README.md".into(),
                },
            ),
            None,
        )
        .await
        .unwrap();
    assert!(
        matches!(plain.status, ProposeStatus::Executed { .. }),
        "{:?}",
        plain.status
    );
    for (command, cwd) in [
        ("cat notes", "/work"),
        ("cat ./notes", "/work"),
        ("cat notes", "/work/sub"),
        ("cat --file=notes", "/work"),
    ] {
        let p = f
            .engine
            .propose(
                Proposal::by_agent(
                    &named("dev-1"),
                    Action::Terminal {
                        command: command.into(),
                    },
                )
                .params(ActionParams {
                    cwd: Some(cwd.into()),
                    ..ActionParams::default()
                }),
                None,
            )
            .await
            .unwrap();
        let ProposeStatus::Pending { reason } = &p.status else {
            panic!("{command} in {cwd}: {:?}", p.status)
        };
        assert!(
            reason.contains(&outside.display().to_string()),
            "{command} in {cwd}: {reason}"
        );
    }
}

#[tokio::test]
async fn the_noop_agent_never_writes_through_a_link_the_repository_commits() {
    // A project whose repository commits `noop -> <a directory outside>`:
    // the noop agent writes `noop/<task>.md` in its worktree.
    let dir = tempfile::tempdir().unwrap();
    let _disks = common::ReleaseDisks(dir.path().join("state"));
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    common::git(&src, &["init", "-q"]);
    std::fs::write(src.join("README.md"), "# demo\n").unwrap();
    std::os::unix::fs::symlink(&outside, src.join("noop")).unwrap();
    common::git(&src, &["add", "README.md", "noop"]);
    common::git(&src, &["commit", "-q", "-m", "init"]);
    common::postgres::prepare_state(&dir.path().join("state")).await;
    let engine = berth_engine::Engine::init(berth_engine::StateDir::new(dir.path().join("state")))
        .await
        .unwrap();
    engine
        .add_project(
            berth_engine::NewProject {
                name: named("demo"),
                from: src,
                base: None,
                forge_url: None,
            },
            &user(),
        )
        .await
        .unwrap();
    engine
        .activate_agent(&named("dev-1"), &named("demo"), AgentImpl::Noop, &user())
        .await
        .unwrap();
    engine
        .create_task("demo", "Add a file", &user())
        .await
        .unwrap();
    let err = engine.run_agent(&named("dev-1"), true).await.unwrap_err();
    assert!(
        err.to_string().contains("/work/noop -> ")
            && err.to_string().contains("nothing was written"),
        "{err}"
    );
    assert!(names(&outside).is_empty(), "{:?}", names(&outside));
}
