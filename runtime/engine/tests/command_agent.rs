//! The `command` agent (issue 18) with real processes under the runner's
//! confinement: each delivered prompt starts the program, the session runs
//! until it exits, its exit code and output tail are events; a failing, a
//! hanging and a flooding program are bounded; a program that writes the
//! worktree or reads berth's state is refused by the confinement.

use berth_engine::{AgentImpl, EventFilter, NewPrompt, PromptStatus, SessionStatus, Turn};

use crate::common::{Fixture, named, user};

/// `dev-1`, a `command` agent running `argv`, up in a runner berth, with
/// an open session on a task; `[agent] turn_timeout_secs = 2`.
async fn command_agent(argv: &[&str]) -> (Fixture, String) {
    let f = Fixture::new().await;
    let cfg = f.dir.path().join("state/projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = text
        .replacen("turn_timeout_secs = 1800", "turn_timeout_secs = 2", 1)
        .replacen("pass = []", "pass = [\"CARGO_PKG_NAME\"]", 1);
    assert!(text.contains("turn_timeout_secs = 2"), "{text}");
    std::fs::write(&cfg, text).unwrap();
    f.agent("dev-1", AgentImpl::Command).await;
    f.engine
        .set_agent_command(
            "dev-1",
            argv.iter().map(|s| s.to_string()).collect(),
            &user(),
        )
        .await
        .unwrap();
    f.engine
        .up(&named("dev-1"), &named("demo"), None, &user())
        .await
        .unwrap();
    let t = f
        .engine
        .create_task("demo", "write the docs", &user())
        .await
        .unwrap();
    f.engine
        .open_session("dev-1", &t.id, &user())
        .await
        .unwrap();
    (f, t.id)
}

/// The log's events of `kind`.
async fn events_of(f: &Fixture, kind: &str) -> Vec<berth_engine::Event> {
    f.engine
        .events(&EventFilter {
            kind: Some(kind.into()),
            ..Default::default()
        })
        .await
        .unwrap()
}

/// Sends `text` and runs one turn.
async fn turn(f: &Fixture, text: &str) -> Turn {
    f.engine
        .send_prompt(NewPrompt::message("dev-1", text), &user())
        .await
        .unwrap();
    f.engine
        .run_command_turn(&named("dev-1"))
        .await
        .unwrap()
        .expect("a prompt was deliverable")
}

#[tokio::test]
async fn each_prompt_starts_the_program_and_its_end_is_recorded() {
    let (f, task) = command_agent(&[
        "sh",
        "-c",
        "cat \"$1\"; echo \" task=$2 dir=$(pwd) named=$CARGO_PKG_NAME other=$CARGO_MANIFEST_DIR\"",
        "sh",
        "{prompt_file}",
        "{task}",
    ])
    .await;
    let t = turn(&f, "read README.md").await;
    assert_eq!(t.exit_code, Some(0), "{t:?}");
    // `[agent.env] pass` names pass from berth's environment; nothing else does.
    let named_value = std::env::var("CARGO_PKG_NAME").unwrap_or_default();
    assert!(!named_value.is_empty(), "cargo sets it for its tests");
    assert_eq!(
        t.stdout_tail,
        format!("read README.md task={task} dir=/work named={named_value} other=\n")
    );
    assert!(!t.timed_out && !t.truncated);
    let p = f.engine.prompt(&t.prompt).await.unwrap();
    assert_eq!(p.status, PromptStatus::Acknowledged);
    // The session ran the turn and is idle again: the next prompt goes.
    let s = f.engine.session(&t.session).await.unwrap();
    assert_eq!(s.status, SessionStatus::Idle);
    let ended = f
        .engine
        .events(&EventFilter {
            kind: Some("session.turn_ended".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].payload["exit_code"], 0);
    // From queueing to the program's start, as the log times them.
    let at = |kind: &'static str| {
        let engine = &f.engine;
        async move {
            engine
                .events(&EventFilter {
                    kind: Some(kind.into()),
                    ..Default::default()
                })
                .await
                .unwrap()[0]
                .at
        }
    };
    let latency = at("session.turn_started").await - at("prompt.queued").await;
    assert!(latency >= 0);
    eprintln!("queued → program started: {latency} ms");
    assert_eq!(ended[0].actor.to_string(), "agent:dev-1");
    // Nothing waits: no turn.
    assert!(
        f.engine
            .run_command_turn(&named("dev-1"))
            .await
            .unwrap()
            .is_none()
    );
    // The session's directory holds the turn's output until its project
    // is removed; the session stays, as history.
    let dir = t.output.stdout.parent().unwrap().to_path_buf();
    assert_eq!(
        f.engine.session(&t.session).await.unwrap().output_dir,
        Some(dir.clone())
    );
    f.engine
        .remove_project("demo", true, &user())
        .await
        .unwrap();
    assert!(!dir.exists(), "{dir:?}");
    assert_eq!(f.engine.session(&t.session).await.unwrap().output_dir, None);
}

#[tokio::test]
async fn a_failing_a_hanging_and_a_flooding_program_are_bounded() {
    let (f, _) = command_agent(&["sh", "-c", "{prompt}"]).await;
    let failed = turn(&f, "echo broken >&2; exit 3").await;
    assert_eq!(failed.exit_code, Some(3));
    assert_eq!(failed.stderr_tail, "broken\n");
    // Also kept in the session's directory, in berth's state.
    assert_eq!(std::fs::read(&failed.output.stderr).unwrap(), b"broken\n");
    assert!(
        failed
            .output
            .stderr
            .starts_with(f.dir.path().join("state/sessions"))
    );

    let started = std::time::Instant::now();
    let hung = turn(&f, "sleep 60").await;
    assert!(hung.timed_out, "{hung:?}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));

    // Two failures in a row count toward the circuit breaker…
    assert_eq!(f.engine.consecutive_failures("dev-1").await.unwrap(), 2);
    let flood = turn(&f, "head -c 5000000 /dev/zero | tr '\\0' x").await;
    assert_eq!(flood.exit_code, Some(0));
    assert!(flood.truncated);
    assert_eq!(flood.stdout_tail.len(), berth_engine::command::EVENT_TAIL);
    // The session's directory keeps the head, bounded, and says it was cut.
    assert!(flood.output_truncated);
    let kept = std::fs::read(&flood.output.stdout).unwrap();
    let cap = berth_engine::session_output::TURN_OUTPUT_CAP as usize;
    assert!(kept[..cap].iter().all(|b| *b == b'x'));
    let note = String::from_utf8_lossy(&kept[cap..]);
    assert!(note.starts_with("\n[berth: output truncated"), "{note}");
    assert!(kept.len() < cap + 512, "{}", kept.len());
    // Every turn was accepted and the session is free again.
    assert!(
        f.engine
            .prompt_queue(Some("dev-1"))
            .await
            .unwrap()
            .is_empty()
    );
    let s = f.engine.session(&flood.session).await.unwrap();
    assert_eq!(s.status, SessionStatus::Idle);
    // … a success resets the count; three failures pause the agent, and
    // its prompts wait until a person resumes it.
    assert_eq!(f.engine.consecutive_failures("dev-1").await.unwrap(), 0);
    for _ in 0..3 {
        assert_eq!(turn(&f, "exit 1").await.exit_code, Some(1));
    }
    assert_eq!(
        f.engine.agent("dev-1").await.unwrap().status,
        berth_engine::AgentStatus::Paused
    );
    let waiting = f
        .engine
        .send_prompt(NewPrompt::message("dev-1", "echo later"), &user())
        .await
        .unwrap();
    assert!(
        waiting.prompt.reason.as_deref().unwrap().contains("paused"),
        "{waiting:?}"
    );
    assert!(
        f.engine
            .run_command_turn(&named("dev-1"))
            .await
            .unwrap()
            .is_none()
    );
    f.engine.resume_agent("dev-1", &user()).await.unwrap();
    let later = f
        .engine
        .run_command_turn(&named("dev-1"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(later.stdout_tail, "later\n");
}

#[tokio::test]
async fn the_program_cannot_write_the_worktree_nor_read_berths_state() {
    let (f, _) = command_agent(&["sh", "-c", "{prompt}"]).await;
    let worktree = f.engine.agent("dev-1").await.unwrap().worktree.unwrap();
    let before = std::fs::read(worktree.join("README.md")).unwrap();
    let write = turn(&f, "echo pwned > /work/README.md").await;
    assert_ne!(write.exit_code, Some(0), "{write:?}");
    assert_eq!(std::fs::read(worktree.join("README.md")).unwrap(), before);
    assert!(!worktree.join("new.txt").exists());
    let create = turn(&f, "touch /work/new.txt").await;
    assert_ne!(create.exit_code, Some(0), "{create:?}");
    assert!(!worktree.join("new.txt").exists());

    // The store's file, or with a PostgreSQL store the file naming it.
    let db = match f.engine.store().location() {
        berth_engine::StoreLocation::Sqlite(path) => path.clone(),
        berth_engine::StoreLocation::Postgres(_) => f.dir.path().join("state/store.toml"),
    };
    assert!(db.is_file());
    let read = turn(&f, &format!("cat {}", db.display())).await;
    assert_ne!(read.exit_code, Some(0), "{read:?}");
    assert!(read.stdout_tail.is_empty(), "{read:?}");
    // What the program could not do, its output says.
    assert!(
        read.stderr_tail.contains("No such file") || read.stderr_tail.contains("denied"),
        "{read:?}"
    );
}

/// `{mcp_config}` is taken at setup; a process that serves no MCP
/// endpoint (this engine: the `berth` binary registers one) refuses the
/// turn before the program starts, and the prompt waits in its queue.
#[tokio::test]
async fn a_turn_needing_tools_in_a_process_without_endpoints_keeps_its_prompt() {
    let (f, _task) = command_agent(&["claude", "--mcp-config", "{mcp_config}"]).await;
    let sent = f
        .engine
        .send_prompt(NewPrompt::message("dev-1", "go"), &user())
        .await
        .unwrap();
    let err = f
        .engine
        .run_command_turn(&named("dev-1"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("takes `{mcp_config}`, but this berth process serves no MCP endpoint"),
        "{err}"
    );
    let p = f.engine.prompt(&sent.prompt.id).await.unwrap();
    assert_eq!(p.status, PromptStatus::Queued, "{p:?}");
    let started = events_of(&f, "session.turn_started").await;
    assert!(started.is_empty(), "{started:?}");
    f.agent("dev-2", AgentImpl::Real).await;
    assert!(
        f.engine
            .set_agent_command("dev-2", vec!["x".into()], &user())
            .await
            .is_err()
    );
}

/// The task deleted while its program runs: the purge wins (the prompt is
/// purged, the session ended), and the turn that ran is still recorded.
#[tokio::test]
async fn a_task_deleted_mid_turn_purges_its_prompt_and_keeps_the_turn() {
    let (f, task) = command_agent(&["sh", "-c", "sleep 1; echo done"]).await;
    f.engine
        .send_prompt(NewPrompt::message("dev-1", "go"), &user())
        .await
        .unwrap();
    let driver = f.second().await;
    let turn = tokio::spawn(async move { driver.run_command_turn(&named("dev-1")).await });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if !events_of(&f, "session.turn_started").await.is_empty() {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no turn started");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    f.engine.remove_task(&task, &user()).await.unwrap();
    let t = turn.await.unwrap().unwrap().expect("a turn ran");
    assert_eq!((t.exit_code, t.stdout_tail.as_str()), (Some(0), "done\n"));
    let p = f.engine.prompt(&t.prompt).await.unwrap();
    assert_eq!(p.status, PromptStatus::Purged);
    let s = f.engine.session(&t.session).await.unwrap();
    assert_eq!(s.status, SessionStatus::Ended);
    assert!(
        f.engine
            .run_command_turn(&named("dev-1"))
            .await
            .unwrap()
            .is_none()
    );
}
