//! `berth prompt`, `berth sessions` and `berth queue` end to end (issue
//! 18): the real binary against a real store. A prompt for an agent with
//! no session waits with its reason and opens none; a session opened for
//! the agent's task takes it; every `--json` has its documented shape
//! (tests/cli.rs checks the fields against docs/cli-json.md).

use crate::fixture::Fixture;

fn with_agent_and_task() -> (Fixture, String) {
    let f = Fixture::new().with_project();
    f.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    let id = new_task(&f);
    (f, id)
}

/// A task in `demo`: its id.
pub(crate) fn new_task(f: &Fixture) -> String {
    f.new_task("docs")
}

#[test]
fn a_prompt_waits_for_a_session_and_is_delivered_to_the_one_opened() {
    let (f, task) = with_agent_and_task();
    // No session: queued, with why, and no session appears.
    let out = f.ok(&["prompt", "dev-1", "read the README"]);
    assert!(out.contains("waiting: no promptable session"), "{out}");
    assert_eq!(
        f.json(&["sessions", "dev-1", "--json"]),
        serde_json::json!([])
    );
    let queue = f.json(&["queue", "dev-1", "--json"]);
    assert_eq!(queue.as_array().unwrap().len(), 1, "{queue}");
    assert_eq!(queue[0]["status"], "queued");
    assert_eq!(queue[0]["sender"]["id"], "ada");
    assert!(
        queue[0]["reason"]
            .as_str()
            .unwrap()
            .starts_with("no promptable session"),
        "{queue}"
    );

    // A session for the task: the next prompt is deliverable at once.
    let opened = f.json(&["sessions", "dev-1", "--open", &task, "--json"]);
    assert_eq!(opened[0]["status"], "idle");
    assert_eq!(opened[0]["task"], task.as_str());
    let sent = f.json(&["prompt", "dev-1", "then write the docs", "--json"]);
    assert_eq!(sent["sent"], "queued");
    assert_eq!(sent["deliverable"], true);
    assert_eq!(sent["prompt"]["task"], task.as_str());
    assert_eq!(sent["prompt"]["reason"], serde_json::Value::Null);
    let text = f.ok(&["queue"]);
    assert!(text.contains("then write the docs"), "{text}");
    let text = f.ok(&["sessions"]);
    assert!(
        text.contains("dev-1  idle") && text.contains("primary"),
        "{text}"
    );

    // The log has each step with its actor.
    let events = f.json(&["events", "--json"]);
    let prompt_events: Vec<(String, String)> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            let t = e["type"].as_str().unwrap();
            t.starts_with("prompt.") || t.starts_with("session.")
        })
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["actor"]["id"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        prompt_events,
        [
            ("prompt.queued".to_string(), "ada".to_string()),
            ("session.opened".into(), "ada".into()),
            ("prompt.queued".into(), "ada".into()),
        ]
    );
}

#[test]
fn prompts_for_unknown_agents_archived_tasks_or_empty_text_are_refused() {
    let (f, task) = with_agent_and_task();
    let (code, err) = f.err(&["prompt", "nobody", "hi"]);
    assert_eq!(code, 2);
    assert!(err.contains("nobody"), "{err}");
    let (_, err) = f.err(&["prompt", "dev-1", "   "]);
    assert!(err.contains("empty"), "{err}");
    // A deleted task takes no prompt.
    f.ok(&["task", "rm", &task]);
    let (_, err) = f.err(&["prompt", "dev-1", "hi", "--task", &task]);
    assert!(err.contains("unknown task"), "{err}");
    let (_, err) = f.err(&["sessions", "dev-1", "--open", &task]);
    assert!(err.contains("unknown task"), "{err}");
}

/// A `command` agent through the binary: `activate` says its program has
/// open network; each deliverable prompt runs the program in the berth's
/// confinement; `agent turn --json` has its documented shape.
#[test]
fn a_command_agent_runs_its_program_for_each_prompt() {
    let f = Fixture::new().with_berth_mode("runner");
    let (code, err) = f.err(&[
        "agent",
        "activate",
        "dev-1",
        "--project",
        "demo",
        "--impl",
        "command",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("--impl command needs --command"), "{err}");
    let out = f.run(&[
        "agent",
        "activate",
        "dev-1",
        "--project",
        "demo",
        "--impl",
        "command",
        "--command",
        r#"sh -c 'cat "$1"; echo; test -w /work && echo writable || echo read-only' sh {prompt_file}"#,
        "--json",
    ]);
    let stdout = crate::fixture::expect_ok(&["agent", "activate"], out.clone());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("open network"), "{stderr}");
    let agent: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(agent["impl"], "command");
    f.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    let task = new_task(&f);
    f.ok(&["sessions", "dev-1", "--open", &task]);
    f.ok(&["prompt", "dev-1", "hello from ada"]);

    let turns = f.ok(&["agent", "turn", "dev-1", "--json"]);
    crate::cli::JsonDoc::load().check("agent turn", &turns);
    let turns: serde_json::Value = serde_json::from_str(&turns).unwrap();
    assert_eq!(turns.as_array().unwrap().len(), 1, "{turns}");
    assert_eq!(turns[0]["exit_code"], 0, "{turns}");
    assert_eq!(turns[0]["stdout_tail"], "hello from ada\nread-only\n");
    assert_eq!(f.json(&["queue", "dev-1", "--json"]), serde_json::json!([]));
    let text = f.ok(&["agent", "turn", "dev-1"]);
    assert!(text.contains("no deliverable prompt"), "{text}");
}

/// Whether a process whose command line holds `token` is alive.
fn running(token: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(token))
            .unwrap_or(false)
    })
}

/// berth killed (-9) while its `command` agent's program runs a turn: the
/// program dies with it (the exec shim's parent-death signal ends its PID
/// namespace), what it printed before is in the session's directory in
/// berth's state (`berth sessions --json` names it), and the
/// unacknowledged prompt is delivered again by the next `berth agent
/// turn` — once more, not lost — its output beside the first run's.
#[test]
fn a_berth_killed_mid_turn_takes_the_program_down_keeps_its_output_and_the_prompt_comes_again() {
    let f = Fixture::new().with_berth_mode("runner");
    let token = format!("berth-crash-token-{}", std::process::id());
    let script = "if [ -e /tmp/once ]; then echo again; else \
                  echo before the kill; echo to stderr >&2; touch /tmp/once; sleep 60; fi";
    let command = format!("sh -c '{script}' {token}");
    f.activate_command("dev-1", &command);
    f.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    let task = new_task(&f);
    f.ok(&["sessions", "dev-1", "--open", &task]);
    f.ok(&["prompt", "dev-1", "work"]);

    let mut berth = f.command(&["agent", "turn", "dev-1"]).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    // Its mark in the berth's private /tmp says it is past `touch`.
    let once = f.state().join("berths/demo/dev-1/.tmp/once");
    while !(running(&token) && once.exists()) {
        assert!(
            std::time::Instant::now() < deadline,
            "the program never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Its output so far, already in the session's directory.
    let sessions = f.json(&["sessions", "dev-1", "--json"]);
    let dir = std::path::PathBuf::from(sessions[0]["output_dir"].as_str().unwrap());
    assert!(dir.starts_with(f.state().join("sessions")), "{sessions}");
    let prompt = f.json(&["queue", "dev-1", "--json"])[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let first = dir.join(format!("{prompt}-1.stdout"));
    let kept =
        |path: &std::path::Path, text: &str| std::fs::read_to_string(path).is_ok_and(|t| t == text);
    while !(kept(&first, "before the kill\n")
        && kept(&first.with_extension("stderr"), "to stderr\n"))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "its output never reached the session's directory"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    berth.kill().unwrap(); // SIGKILL
    berth.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running(&token) {
        assert!(
            std::time::Instant::now() < deadline,
            "the program outlived berth"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let queue = f.json(&["queue", "dev-1", "--json"]);
    assert_eq!(queue[0]["status"], "reserved", "{queue}");
    // What it printed before the kill is kept, berth's own.
    assert!(kept(&first, "before the kill\n"));
    assert!(kept(&first.with_extension("stderr"), "to stderr\n"));
    use std::os::unix::fs::PermissionsExt as _;
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&dir), mode(&first)), (0o700, 0o600));

    let turns = f.json(&["agent", "turn", "dev-1", "--json"]);
    assert_eq!(turns.as_array().unwrap().len(), 1, "{turns}");
    assert_eq!(turns[0]["attempt"], 2, "{turns}");
    assert_eq!(turns[0]["stdout_tail"], "again\n", "{turns}");
    let second = std::path::PathBuf::from(turns[0]["output"]["stdout"].as_str().unwrap());
    assert_eq!(second, dir.join(format!("{prompt}-2.stdout")));
    assert_eq!(std::fs::read_to_string(&second).unwrap(), "again\n");
    assert!(
        kept(&first, "before the kill\n"),
        "the first run's output stays"
    );
    assert_eq!(f.json(&["queue", "dev-1", "--json"]), serde_json::json!([]));
}
