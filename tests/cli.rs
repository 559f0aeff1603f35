#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `berth` binary end to end: real processes, a real store on disk, real
//! git. Errors must say what to do; JSON output keeps its documented shape.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::fixture::{Fixture, git, git_out};

/// This module's fixture: the shared one, and project `demo` set up as the
/// CLI tests need it.
pub(crate) struct Cli(Fixture);

impl std::ops::Deref for Cli {
    type Target = Fixture;
    fn deref(&self) -> &Fixture {
        &self.0
    }
}

impl Cli {
    pub(crate) fn new() -> Cli {
        Cli(Fixture::new())
    }

    /// Project `demo` and real agent `dev-1`, up. These tests are about the
    /// CLI, not containers: every berth is a runner, whether or not a
    /// Docker engine answers (tests/mounted.rs covers mounted mode).
    pub(crate) fn with_project(self) -> Cli {
        let f = self.0.with_berth_mode("runner");
        f.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
        f.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
        Cli(f)
    }

    /// `n` noop agents (`noop-0`…) and `n` tasks for them to take.
    fn with_noop_agents(self, n: usize) -> Cli {
        for i in 0..n {
            let name = format!("noop-{i}");
            let title = format!("task {i}");
            self.ok(&[
                "agent",
                "activate",
                &name,
                "--project",
                "demo",
                "--impl",
                "noop",
            ]);
            self.ok(&["task", "create", "--project", "demo", "--title", &title]);
        }
        self
    }
}

/// The state directory is made 0700 and the store 0600 (its WAL files
/// follow it); when others can read either, every start says so and names
/// the `chmod` that fixes it.
#[test]
fn the_state_is_private_and_an_open_one_is_reported() {
    use std::os::unix::fs::PermissionsExt as _;
    let cli = Cli::new();
    cli.ok(&["init"]);
    let state = cli.state();
    let db = state.join("berth.db");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&db), 0o600);
    let quiet = cli.run(&["project", "ls"]);
    assert!(quiet.status.success());
    assert!(
        !String::from_utf8_lossy(&quiet.stderr).contains("warning"),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    for suffix in ["-wal", "-shm"] {
        let p = state.join(format!("berth.db{suffix}"));
        if p.exists() {
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
    }

    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = cli.run(&["project", "ls"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("chmod 700 {}", state.display()))
            && err.contains(&format!("chmod 600 {}", db.display()))
            && err.contains("mode 0755")
            && err.contains("mode 0644"),
        "{err}"
    );
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    let fixed = cli.run(&["project", "ls"]);
    assert!(!String::from_utf8_lossy(&fixed.stderr).contains("chmod"));
}

#[test]
fn a_missing_state_says_to_run_init() {
    let cli = Cli::new();
    let (code, err) = cli.err(&["ls"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no berth state at") && err.contains("run `berth init` first"),
        "{err}"
    );
    assert!(!cli.state().exists());
}

/// The first `project add` on a new machine creates the state (0700) instead
/// of sending the user to `berth init`; the project is then there.
#[test]
fn the_first_project_add_creates_the_state() {
    use std::os::unix::fs::PermissionsExt;
    let cli = Cli::new();
    let src = cli.source_repo();
    let out = cli.run(&["project", "add", "demo", "--from", src.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("created the state directory"), "{stderr}");
    let mode = std::fs::metadata(cli.state()).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "state mode {mode:o}");
    assert!(cli.ok(&["project", "ls"]).contains("demo"));
}

#[test]
fn unknown_names_say_what_to_do() {
    let cli = Cli::new().with_project();
    let cases: &[(&[&str], &str)] = &[
        (
            &["exec", "ghost", "--", "ls"],
            "unknown agent `ghost`: list them with `berth ls`",
        ),
        (
            &["up", "dev-1", "--project", "nope"],
            "agent `dev-1` belongs to project `demo`, not `nope`",
        ),
        (
            &["task", "create", "--project", "nope", "--title", "t"],
            "unknown project `nope`",
        ),
        (
            &["approve", "abcdef12"],
            "unknown action `abcdef12`: list them with `berth actions`",
        ),
        (&["deny", "zz"], "unknown action `zz`"),
        (
            &["pr", "show", "9"],
            "unknown PR `9`: list them with `berth pr list`",
        ),
        (
            &["autonomy", "set", "dev-1", "terminal", "sometimes"],
            "invalid mode `sometimes`",
        ),
        (
            &["up", "dev-1", "--project", "demo", "--mode", "mounted"],
            "agent `dev-1` is already up in runner mode",
        ),
        // One rule for names, at the edge: a name with `.` used to pass
        // here and fail at a mounted `up` after its worktree existed.
        (
            &["project", "add", "my_project.v2", "--from", "."],
            "invalid project name `my_project.v2`: use lowercase letters, digits, `-` or `_`, \
             starting with a letter or digit, at most 48 characters (no `.`: it joins project and \
             agent in container names)",
        ),
        (
            &["agent", "activate", "dev.2", "--project", "demo"],
            "invalid agent name `dev.2`",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = cli.err(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(
            err.starts_with(&format!("berth: {want}")),
            "{args:?}: {err}"
        );
    }
    assert!(!cli.state().join("projects/my_project.v2").exists());
    let agents = cli.ok(&["ls"]);
    assert!(!agents.contains("dev.2"), "{agents}");
}

#[test]
fn a_broken_config_names_file_line_and_key_and_nothing_is_decided() {
    let cli = Cli::new().with_project();
    let text = std::fs::read_to_string(cli.config()).unwrap();
    let broken = text.replace("pids = 512", "pids = \"many\"");
    let line = broken
        .lines()
        .position(|l| l.starts_with("pids = "))
        .unwrap()
        + 1;
    std::fs::write(cli.config(), broken).unwrap();
    let (code, err) = cli.err(&["exec", "dev-1", "--", "ls"]);
    assert_eq!(code, 2);
    let want = format!(
        "berth: {}:{line}:8: key `sandbox.pids`: invalid type",
        cli.config().display()
    );
    assert!(err.starts_with(&want), "{err}");
    let events = cli.ok(&["events", "--type", "proposed_action.created", "--json"]);
    assert_eq!(events.trim(), "[]", "nothing decided from a broken file");
}

#[test]
fn exec_json_has_the_documented_shape_and_pending_exits_3() {
    let cli = Cli::new().with_project();
    let out = cli.run(&["exec", "dev-1", "--json", "--", "echo", "hi"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "action_id",
            "container_restarted",
            "diagnostic",
            "exit_code",
            "oom_killed",
            "stage",
            "status",
            "stderr",
            "stdout",
            "timed_out",
            "truncated",
            "verdict"
        ]
    );
    assert_eq!(v["oom_killed"], false);
    assert_eq!(v["container_restarted"], false);
    assert!(v["diagnostic"].is_null());
    assert_eq!(v["status"], "pending");
    assert_eq!(v["verdict"], "require_approval");
    assert!(v["exit_code"].is_null());
    let id = v["action_id"].as_str().unwrap();

    // Approving runs it; the output streams and the command's code is kept.
    let out = cli.ok(&["approve", &id[..8]]);
    assert!(out.starts_with("hi\n"), "{out}");
    let actions = cli.ok(&["actions", "--json"]);
    let list: serde_json::Value = serde_json::from_str(&actions).unwrap();
    assert_eq!(list[0]["status"], "executed");
    assert_eq!(list[0]["result"]["stdout"], "hi\n");

    let out = cli.run(&["exec", "dev-1", "--", "exit 7"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("approve with `berth approve "), "{err}");
}

#[test]
fn metrics_and_outbox_over_the_log() {
    let cli = Cli::new().with_project();
    let v: serde_json::Value =
        serde_json::from_str(&cli.run_json(&["exec", "dev-1", "--json", "--", "true"])).unwrap();
    let id = v["action_id"].as_str().unwrap().to_string();
    cli.ok(&["deny", &id, "--reason", "no"]);
    let m: serde_json::Value = serde_json::from_str(&cli.ok(&["metrics", "--json"])).unwrap();
    assert_eq!(
        (
            m["proposed"].as_i64(),
            m["human_approvals"].as_i64(),
            m["human_denials"].as_i64()
        ),
        (Some(1), Some(0), Some(1))
    );
    // Deliver, then mark: a drain whose reader is already gone dies at its
    // first write and marks nothing, so the next drain still has every row.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let lost = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["outbox", "drain", "--json"])
        .env("BERTH_HOME", cli.state())
        .stdout(writer)
        .output()
        .unwrap();
    assert!(!lost.status.success(), "a drain into a closed pipe fails");
    let drained: serde_json::Value =
        serde_json::from_str(&cli.ok(&["outbox", "drain", "--json"])).unwrap();
    let types: Vec<&str> = drained["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert!(
        types.ends_with(&["proposed_action.created", "proposed_action.denied"]),
        "{types:?}"
    );
    let again: serde_json::Value =
        serde_json::from_str(&cli.ok(&["outbox", "drain", "--json"])).unwrap();
    assert_eq!(again["messages"], serde_json::json!([]));
    let denied = cli.ok(&[
        "events",
        "--type",
        "proposed_action.denied",
        "--agent",
        "dev-1",
        "--json",
    ]);
    let evs: serde_json::Value = serde_json::from_str(&denied).unwrap();
    assert_eq!(
        evs[0]["actor"],
        serde_json::json!({"kind": "user", "id": "ada"})
    );
}

#[test]
fn up_says_the_runner_has_no_container_boundary_and_down_recycles() {
    let cli = Cli::new().with_project();
    let out = cli.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    assert!(out.contains("no container boundary"), "{out}");
    let ls: serde_json::Value = serde_json::from_str(&cli.ok(&["ls", "--json"])).unwrap();
    assert_eq!(ls[0]["mode"], "runner");
    let wt = PathBuf::from(ls[0]["worktree"].as_str().unwrap());
    assert!(wt.is_dir());
    cli.ok(&["down", "dev-1", "--keep-worktree"]);
    assert!(wt.is_dir());
    cli.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    cli.ok(&["down", "dev-1"]);
    assert!(!wt.exists());
    let ls: serde_json::Value = serde_json::from_str(&cli.ok(&["ls", "--json"])).unwrap();
    assert!(ls[0]["mode"].is_null());
}

impl Cli {
    fn run_json(&self, args: &[&str]) -> String {
        String::from_utf8(self.run(args).stdout).unwrap()
    }
}

#[test]
fn exec_streams_and_exits_with_the_commands_code() {
    let cli = Cli::new().with_project();
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let out = cli.run(&["exec", "dev-1", "--", "echo out; echo err >&2; exit 5"]);
    assert_eq!(out.status.code(), Some(5));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "err\n");
    let out = cli.run(&[
        "exec",
        "dev-1",
        "--timeout",
        "1",
        "--json",
        "--",
        "sleep 30",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["timed_out"].as_bool()),
        (Some("executed"), Some(true))
    );
    assert_eq!(v["stage"], "autonomy");
}

/// The peak resident memory of a live process (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `berth exec` of a command printing a lot, behind a pipe nobody reads for
/// a while and then a slow reader: the command is held back instead of berth
/// holding its output (before: 800 MB after 2 s paused and 6 s read at
/// 6 MB/s here; 1.47 GB in 12 s in the report), and every byte arrives once
/// read at full speed. `BERTH_TEST_EXEC_BYTES` sets the size (default 1 GiB).
#[test]
fn exec_behind_a_paused_reader_stays_small_and_loses_nothing() {
    use std::io::Read as _;
    use std::time::{Duration, Instant};
    let size: u64 = std::env::var("BERTH_TEST_EXEC_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1 << 30);
    const BOUND: u64 = 256 << 20;
    let cli = Cli::new().with_project();
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let command = format!("head -c {size} /dev/zero");
    let mut child = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["exec", "dev-1", "--timeout", "600", "--", &command])
        .env("BERTH_HOME", cli.state())
        .env("USER", "ada")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // The reader pauses...
    std::thread::sleep(Duration::from_secs(2));
    if let Some(status) = child.try_wait().unwrap() {
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        panic!("berth exited ({status}) while its output was not read: {err}");
    }
    let mut stdout = child.stdout.take().unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    let mut read = |limit: usize, total: &mut u64| {
        let n = stdout.read(&mut buf[..limit]).unwrap();
        assert!(
            buf[..n].iter().all(|b| *b == 0),
            "stdout changed on the way"
        );
        *total += n as u64;
        n
    };
    // ...then reads slowly (about 6 MB/s)...
    let slow = Instant::now();
    while slow.elapsed() < Duration::from_secs(4) && read(64 << 10, &mut total) > 0 {
        std::thread::sleep(Duration::from_millis(10));
    }
    let held = peak_rss(pid).unwrap_or(0);
    // ...then at full speed, to the end.
    let mut peak = held;
    loop {
        let n = read(1 << 20, &mut total);
        if n == 0 {
            break;
        }
        if total % (64 << 20) < n as u64 {
            peak = peak.max(peak_rss(pid).unwrap_or(0));
        }
    }
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(total, size, "bytes on stdout; stderr: {stderr}");
    assert_eq!(stderr, "");
    eprintln!(
        "berth exec of {size} bytes: peak RSS {} MiB after 2 s paused and 4 s slow, {} MiB overall",
        held >> 20,
        peak >> 20
    );
    assert!(held < BOUND, "{} MiB held behind a slow reader", held >> 20);
    assert!(peak < BOUND, "{} MiB at its peak", peak >> 20);
}

#[test]
fn noop_agents_in_separate_processes_each_deliver_one_task() {
    const N: usize = 3;
    let cli = Cli::new().with_project().with_noop_agents(N);
    // Run them truly at once.
    let procs: Vec<_> = (0..N)
        .map(|i| {
            Command::new(env!("CARGO_BIN_EXE_berth"))
                .args([
                    "agent",
                    "run",
                    &format!("noop-{i}"),
                    "--until-idle",
                    "--json",
                ])
                .env("BERTH_HOME", cli.state())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for p in procs {
        let out = p.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tasks: serde_json::Value =
        serde_json::from_str(&cli.ok(&["task", "ls", "--json"])).unwrap();
    let tasks = tasks.as_array().unwrap();
    assert!(
        tasks.iter().all(|t| t["status"] == "in_review"),
        "{tasks:?}"
    );
    let mut agents: Vec<&str> = tasks.iter().map(|t| t["agent"].as_str().unwrap()).collect();
    agents.sort();
    assert_eq!(agents, ["noop-0", "noop-1", "noop-2"], "one task per agent");
    let prs: serde_json::Value = serde_json::from_str(&cli.ok(&["pr", "list", "--json"])).unwrap();
    assert_eq!(prs.as_array().unwrap().len(), N);
    let m: serde_json::Value = serde_json::from_str(&cli.ok(&["metrics", "--json"])).unwrap();
    assert_eq!(
        (m["auto_approved"].as_i64(), m["human_approvals"].as_i64()),
        (Some(3 * N as i64), Some(0))
    );
}

#[test]
fn a_broken_rules_file_names_file_line_and_column() {
    let cli = Cli::new().with_project();
    let rules = cli.state().join("projects/demo/permissions.json");
    std::fs::write(&rules, "{\n  \"allow\": [\"ls\",,]\n}\n").unwrap();
    let (code, err) = cli.err(&["exec", "dev-1", "--", "ls"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with(&format!("berth: {}:2:", rules.display())),
        "{err}"
    );
    let (_, err) = cli.err(&["autonomy", "show", "dev-1"]);
    assert!(
        err.starts_with(&format!("berth: {}:2:", rules.display())),
        "{err}"
    );
}

#[test]
fn a_pr_merge_waits_for_a_person_then_resolves_the_gate() {
    let cli = Cli::new().with_project();
    cli.ok(&[
        "agent",
        "activate",
        "noop-1",
        "--project",
        "demo",
        "--impl",
        "noop",
    ]);
    let t: serde_json::Value = serde_json::from_str(&cli.ok(&[
        "task",
        "create",
        "--project",
        "demo",
        "--title",
        "ship it",
        "--json",
    ]))
    .unwrap();
    let task = t["id"].as_str().unwrap().to_string();
    cli.ok(&["up", "noop-1", "--project", "demo", "--mode", "runner"]);
    cli.ok(&["agent", "run", "noop-1", "--until-idle"]);
    let out = cli.run(&["pr", "merge", "1"]);
    assert_eq!(out.status.code(), Some(3), "into protected main: pending");
    let pending: serde_json::Value =
        serde_json::from_str(&cli.ok(&["actions", "--pending", "--json"])).unwrap();
    assert_eq!(
        pending[0]["action"],
        serde_json::json!({"type": "git_merge", "target": "main"})
    );
    assert_eq!(pending[0]["decision"]["stage"], "never_auto");
    let id = pending[0]["id"].as_str().unwrap().to_string();
    cli.ok(&["approve", &id]);
    let pr: serde_json::Value =
        serde_json::from_str(&cli.ok(&["pr", "show", "#1", "--json"])).unwrap();
    assert_eq!(pr["status"], "merged");
    let events: serde_json::Value =
        serde_json::from_str(&cli.ok(&["events", "--task", &task[..8], "--json"])).unwrap();
    let types: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(types.last(), Some(&"worktree.recycled"), "{types:?}");
    assert!(types.contains(&"task.done"), "{types:?}");
    let (_, err) = cli.err(&["pr", "close", "1"]);
    assert!(
        err.contains("PR #1 is merged: only an open PR can be closed"),
        "{err}"
    );
}

/// The old `[sandbox] network = "…"` and `[agent] env = [...]` still work,
/// and `up` says on stderr what to write instead, naming the file and line.
#[test]
fn up_warns_of_the_old_network_and_agent_env_forms_and_names_the_tables() {
    let cli = Cli::new().with_project();
    cli.ok(&["down", "dev-1"]);
    let text = std::fs::read_to_string(cli.config()).unwrap();
    let at = text.find("\n[sandbox.network]\n").unwrap();
    let end = text[at + 1..].find("\n[").unwrap() + at + 1;
    let old =
        text[..at].replace("\npids = 512\n", "\npids = 512\nnetwork = \"none\"\n") + &text[end..];
    // And `[agent] env = [...]` for the table `[agent.env]`.
    let at = old.find("\n[agent.env]\n").unwrap();
    let end = old[at + 1..].find("\n[").unwrap() + at + 1;
    let old = old[..at].replace(
        "\nmax_sessions = 4\n",
        "\nmax_sessions = 4\nenv = [\"ANTHROPIC_API_KEY\"]\n",
    ) + &old[end..];
    let line_of = |start: &str| old.lines().position(|l| l.starts_with(start)).unwrap() + 1;
    let (line, env_line) = (line_of("network = "), line_of("env = "));
    std::fs::write(cli.config(), &old).unwrap();
    let out = cli.run(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let want = format!(
        "berth: warning: {}:{line}: `[sandbox] network = \"none\"` is the old form: write the table\n[sandbox.network]\nmode = \"none\"\n",
        cli.config().display()
    );
    assert!(err.contains(&want), "{err}");
    let want = format!(
        "berth: warning: {}:{env_line}: `[agent] env = [...]` is the old form: write the table\n[agent.env]\npass = [\"ANTHROPIC_API_KEY\"]\ninstead (it means the same)\n",
        cli.config().display()
    );
    assert!(err.contains(&want), "{err}");
}

/// `berth decide --batch … | head -1`: a listing whose reader closes the pipe
/// ends quietly (killed by SIGPIPE, as every Unix tool), never with a panic
/// and exit 101. The replay's verdicts are far more than a pipe buffer.
#[test]
fn a_listing_piped_into_head_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    let cases = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../policy/tests/cases/replay-tldr-dev.jsonl"
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["decide", "--batch", cases])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.contains("\"verdict\""), "first line: {first}");
    // The reader is gone: the rest of the output meets a closed pipe.
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert_eq!(
        out.status.signal(),
        Some(SIGPIPE),
        "status {:?}, stderr: {stderr}",
        out.status
    );
}

/// SIGPIPE's number on Linux (no libc dependency for one constant).
const SIGPIPE: i32 = 13;

/// `kill -9` of noop loops at random points, then a clean `--until-idle` for
/// each: berth's own effects (commit, push, PR) that a kill interrupted are
/// resumed by the next loop, so every task reaches review with exactly one
/// commit past main and one PR, no step proposed twice, nothing blocked.
/// `BERTH_CRASH_ROUNDS` (default 3) and `BERTH_CRASH_SEED` for longer runs.
#[test]
fn kill_9_of_noop_loops_never_leaves_a_delivery_for_a_person() {
    const N: usize = 3;
    let rounds: u64 = std::env::var("BERTH_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    let mut rng: u64 = std::env::var("BERTH_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed);
    let mut next = |below: u64| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) % below
    };
    let (mut kills, mut interrupted_seen) = (0, 0);
    // The kill comes within this many milliseconds of the start; a run that
    // was over by then halves it, so the kills keep landing mid-run however
    // quick a run is on this machine (a runner exec is ~2 ms in process).
    let mut within: u64 = 400;
    for round in 0..rounds {
        let cli = Cli::new().with_project().with_noop_agents(N);
        for _ in 0..4 * N {
            let agent = format!("noop-{}", next(N as u64));
            let mut child = Command::new(env!("CARGO_BIN_EXE_berth"))
                .args(["agent", "run", &agent, "--until-idle"])
                .env("BERTH_HOME", cli.state())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(5 + next(within)));
            if child.try_wait().unwrap().is_none() {
                kills += 1;
            } else {
                within = (within / 2).max(60);
            }
            child.kill().ok(); // SIGKILL: no cleanup runs.
            child.wait().unwrap();
        }
        for i in 0..N {
            cli.ok(&["agent", "run", &format!("noop-{i}"), "--until-idle"]);
        }
        let tasks: serde_json::Value =
            serde_json::from_str(&cli.ok(&["task", "ls", "--json"])).unwrap();
        let tasks = tasks.as_array().unwrap();
        assert_eq!(tasks.len(), N);
        assert!(
            tasks.iter().all(|t| t["status"] == "in_review"),
            "round {round}: {tasks:#?}"
        );
        let prs: serde_json::Value =
            serde_json::from_str(&cli.ok(&["pr", "list", "--json"])).unwrap();
        let prs = prs.as_array().unwrap();
        assert_eq!(prs.len(), N, "round {round}: one PR per task: {prs:#?}");
        let forge = cli.state().join("forge/demo.git");
        for pr in prs {
            let branch = pr["branch"].as_str().unwrap();
            let count = Command::new("git")
                .args(["-C", forge.to_str().unwrap(), "rev-list", "--count"])
                .arg(format!("main..{branch}"))
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&count.stdout).trim(),
                "1",
                "round {round}: {branch} has one commit past main"
            );
        }
        let all: serde_json::Value = serde_json::from_str(&cli.ok(&["actions", "--json"])).unwrap();
        let all = all.as_array().unwrap();
        assert_eq!(
            all.len(),
            3 * N,
            "round {round}: each step proposed once: {all:#?}"
        );
        assert!(
            all.iter().all(|a| a["status"] == "executed"),
            "round {round}: {all:#?}"
        );
        let interrupted: serde_json::Value =
            serde_json::from_str(&cli.ok(&["events", "--type", "action.interrupted", "--json"]))
                .unwrap();
        interrupted_seen += interrupted.as_array().map_or(0, Vec::len);
    }
    eprintln!(
        "{rounds} rounds: {kills} kills landed mid-run, {interrupted_seen} actions interrupted"
    );
    assert!(kills > 0, "no kill landed: the test tested nothing");
}

/// As an unprivileged user (`setpriv` to nobody, when the tests run as root)
/// a berth gets no disk of its own: `berth up` and `berth doctor` say that
/// /work is not limited and why; with `[sandbox] disk_required = true`,
/// `berth up` fails instead, provisioning nothing.
#[test]
fn as_a_user_up_and_doctor_say_the_disk_is_not_limited() {
    if berth_sandbox::identity::current_uid() != 0 {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    // nobody must reach the binaries and the state: a fresh 0755 directory
    // in /tmp (a target directory under /root is closed to it).
    let dir = tempfile::Builder::new()
        .prefix("berth-disk-user-")
        .tempdir_in("/tmp")
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let berth = PathBuf::from(env!("CARGO_BIN_EXE_berth"));
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for name in ["berth", "berth-helper", "berth-exec-shim"] {
        std::fs::copy(berth.with_file_name(name), bin.join(name)).unwrap();
    }
    let home = dir.path().join("home");
    let src = home.join("src");
    std::fs::create_dir_all(&src).unwrap();
    git(&src, &["init", "-q", "-b", "main"]);
    std::fs::write(src.join("a.txt"), "a\n").unwrap();
    git(&src, &["add", "a.txt"]);
    git(&src, &["commit", "-q", "-m", "init"]);
    let st = Command::new("chown")
        .args(["-R", "nobody:nogroup"])
        .arg(&home)
        .status()
        .unwrap();
    assert!(st.success());
    let state = home.join("state");
    let run = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(bin.join("berth"))
            .args(args)
            .env("HOME", &home)
            .env("BERTH_HOME", &state)
            .env("BERTH_EXEC_SHIM", bin.join("berth-exec-shim"))
            .env("USER", "nobody")
            .output()
            .expect("setpriv (util-linux) runs berth as nobody")
    };
    let ok = |args: &[&str]| {
        let out = run(args);
        assert!(
            out.status.success(),
            "berth {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    ok(&["init"]);
    ok(&["project", "add", "demo", "--from", src.to_str().unwrap()]);
    ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    let said = "disk use of /work is not limited";
    let why = "berth is not running as root";
    let up = ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    assert!(up.contains(said) && up.contains(why), "{up}");
    let doctor = ok(&["doctor"]);
    assert!(doctor.contains(said) && doctor.contains(why), "{doctor}");
    ok(&["down", "dev-1"]);

    let config = state.join("projects/demo/berth.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replacen("disk_required = false", "disk_required = true", 1),
    )
    .unwrap();
    let out = run(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "up succeeded");
    assert!(
        stderr.contains("[sandbox] disk_required = true") && stderr.contains(why),
        "{stderr}"
    );
    assert!(!state.join("berths/demo/dev-1/dev-1").exists());
}

/// The documented JSON of every command: `docs/cli-json.md`, parsed.
pub(crate) struct JsonDoc {
    /// Command (`task ls`) → (shape, every field, the fields always present).
    commands: std::collections::BTreeMap<String, (String, Vec<String>, Vec<String>)>,
}

impl JsonDoc {
    pub(crate) fn load() -> JsonDoc {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/cli-json.md");
        let text = std::fs::read_to_string(path).unwrap();
        let rows: Vec<Vec<String>> = text
            .lines()
            .filter(|l| {
                l.starts_with("| ") && !l.starts_with("| Command") && !l.starts_with("| Record")
            })
            .map(|l| {
                l.trim_matches('|')
                    .split(" | ")
                    .map(|c| c.trim().to_string())
                    .collect()
            })
            .collect();
        let mut records = std::collections::BTreeMap::new();
        for r in rows.iter().filter(|r| r.len() == 2) {
            records.insert(r[0].clone(), top_level_names(&r[1]));
        }
        let mut commands = std::collections::BTreeMap::new();
        for r in rows.iter().filter(|r| r.len() == 3) {
            let name = r[0].trim_matches('`').to_string();
            let mut fields = Vec::new();
            for n in top_level_names(&r[2]) {
                match n.strip_prefix('[') {
                    Some(record) => fields.extend(
                        records
                            .get(record.trim_end_matches(']'))
                            .unwrap_or_else(|| panic!("{name}: no record {n}"))
                            .clone(),
                    ),
                    None => fields.push(n),
                }
            }
            let all: Vec<String> = fields
                .iter()
                .map(|f| f.trim_end_matches('?').to_string())
                .collect();
            let always: Vec<String> = fields.into_iter().filter(|f| !f.ends_with('?')).collect();
            commands.insert(name, (r[1].clone(), all, always));
        }
        assert!(commands.len() > 30, "{:?}", commands.keys());
        JsonDoc { commands }
    }

    /// Checks one command's stdout against its row.
    pub(crate) fn check(&self, command: &str, stdout: &str) {
        let (shape, all, always) = self
            .commands
            .get(command)
            .unwrap_or_else(|| panic!("`{command}` is not in docs/cli-json.md"));
        assert_eq!(
            stdout.trim_end().lines().count(),
            if command == "decide" {
                stdout.trim_end().lines().count()
            } else {
                1
            },
            "{command}: one line: {stdout}"
        );
        let v: serde_json::Value = serde_json::from_str(stdout)
            .unwrap_or_else(|e| panic!("{command}: not JSON ({e}): {stdout}"));
        let objects: Vec<&serde_json::Value> = match shape.as_str() {
            "object" => vec![&v],
            "array" => v
                .as_array()
                .unwrap_or_else(|| panic!("{command}: not an array: {v}"))
                .iter()
                .collect(),
            other => panic!("{command}: unknown shape {other}"),
        };
        for o in objects {
            let keys: Vec<&String> = o
                .as_object()
                .unwrap_or_else(|| panic!("{command}: not an object: {o}"))
                .keys()
                .collect();
            for k in &keys {
                assert!(all.contains(k), "{command}: `{k}` is not documented: {o}");
            }
            for f in always {
                assert!(
                    keys.contains(&f),
                    "{command}: documented `{f}` missing: {o}"
                );
            }
        }
    }
}

/// The backticked and `[Record]` names of a cell, outside parentheses.
fn top_level_names(cell: &str) -> Vec<String> {
    let mut depth = 0usize;
    let mut outside = String::new();
    for c in cell.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            _ if depth == 0 => outside.push(c),
            _ => {}
        }
    }
    let mut names = Vec::new();
    for (i, part) in outside.split('`').enumerate() {
        if i % 2 == 1 {
            names.push(part.to_string());
        } else {
            for r in part.split('[').skip(1) {
                if let Some((name, _)) = r.split_once(']') {
                    names.push(format!("[{name}]"));
                }
            }
        }
    }
    names
}

/// The leaf subcommands of `berth`, from its own `--help`.
fn leaf_commands(prefix: &[&str]) -> Vec<String> {
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(prefix)
        .arg("--help")
        .output()
        .unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    let subs: Vec<String> = help
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|s| s != "help")
        .collect();
    if subs.is_empty() {
        return vec![prefix.join(" ")];
    }
    // A command that prints and has subcommands too (`events`, `events
    // archive`) is a leaf itself.
    let prints = !prefix.is_empty() && help.contains("--json");
    prints
        .then(|| prefix.join(" "))
        .into_iter()
        .chain(subs.iter().flat_map(|s| {
            let mut p = prefix.to_vec();
            p.push(s);
            leaf_commands(&p)
        }))
        .collect()
}

/// Every command that prints takes `--json` and is in docs/cli-json.md; the
/// doc names no command berth does not have.
#[test]
fn every_command_that_prints_takes_json_and_is_documented() {
    let doc = JsonDoc::load();
    // Their own protocols (documented in the README), and a shell script.
    let protocols = ["hook", "mcp", "serve", "completions"];
    let leaves = leaf_commands(&[]);
    for leaf in &leaves {
        if protocols.iter().any(|p| leaf.split(' ').next() == Some(*p)) {
            continue;
        }
        assert!(
            doc.commands.contains_key(leaf),
            "`berth {leaf}` is not in docs/cli-json.md"
        );
        let args: Vec<&str> = leaf.split(' ').chain(["--help"]).collect();
        let out = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(&args)
            .output()
            .unwrap();
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(help.contains("--json"), "`berth {leaf}` has no --json");
    }
    for documented in doc.commands.keys() {
        assert!(
            leaves.contains(documented),
            "docs/cli-json.md names `{documented}`, which berth does not have"
        );
    }
}

/// Each command's `--json`, run against a real store and git, has the
/// fields docs/cli-json.md gives it.
#[test]
fn json_output_matches_docs_cli_json_md() {
    let doc = JsonDoc::load();
    let cli = Cli::new();
    let mut checked = std::collections::BTreeSet::new();
    let mut json = |command: &str, args: &[&str], code: i32| -> serde_json::Value {
        // `--json` before a command line's `--`.
        let at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        let mut full: Vec<&str> = args.to_vec();
        full.insert(at, "--json");
        let out = cli.run(&full);
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(
            out.status.code(),
            Some(code),
            "berth {full:?}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        doc.check(command, &stdout);
        checked.insert(command.to_string());
        serde_json::from_str(&stdout).unwrap()
    };
    let src = cli.source_repo();
    let v = json("init", &["init"], 0);
    assert_eq!(v["state"], cli.state().to_str().unwrap());
    let v = json(
        "project add",
        &["project", "add", "demo", "--from", src.to_str().unwrap()],
        0,
    );
    assert_eq!(v["project"]["name"], "demo");
    let config = cli.config();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("\nmode = \"auto\"\n", "\nmode = \"runner\"\n"),
    )
    .unwrap();
    json("project ls", &["project", "ls"], 0);
    json(
        "project set-mode",
        &["project", "set-mode", "demo", "review"],
        0,
    );
    let v = json(
        "agent activate",
        &["agent", "activate", "dev-1", "--project", "demo"],
        0,
    );
    assert_eq!(
        (v["name"].as_str(), v["impl"].as_str()),
        (Some("dev-1"), Some("real"))
    );
    json(
        "agent activate",
        &[
            "agent",
            "activate",
            "noop-1",
            "--project",
            "demo",
            "--impl",
            "noop",
        ],
        0,
    );
    let v = json(
        "autonomy set",
        &["autonomy", "set", "dev-1", "terminal", "auto_approve"],
        0,
    );
    assert_eq!(v["mode"], "auto_approve");
    json("autonomy show", &["autonomy", "show", "dev-1"], 0);
    let v = json(
        "agent auto-mode",
        &["agent", "auto-mode", "dev-1", "off"],
        0,
    );
    assert_eq!(v["auto_mode"], false);
    let v = json(
        "up",
        &["up", "dev-1", "--project", "demo", "--mode", "runner"],
        0,
    );
    assert_eq!(v["mode"], "runner");
    json("ls", &["ls"], 0);

    // A pipeline task, in review mode: run, reject, run, approve.
    let t = json(
        "task create",
        &[
            "task",
            "create",
            "--project",
            "demo",
            "--title",
            "pipe",
            "--step",
            "echo x",
        ],
        0,
    );
    let pipe = t["id"].as_str().unwrap().to_string();
    // Sessions and the prompt queue (tests/prompts.rs: their behaviour).
    let v = json("prompt", &["prompt", "dev-1", "hello"], 0);
    assert_eq!(v["sent"], "queued");
    let v = json("sessions", &["sessions", "dev-1", "--open", &pipe], 0);
    assert_eq!(v[0]["status"], "idle");
    json("sessions", &["sessions"], 0);
    let v = json("queue", &["queue", "dev-1"], 0);
    assert_eq!(v[0]["body"], "hello");
    json("task set-mode", &["task", "set-mode", &pipe, "review"], 0);
    let r = json("task run", &["task", "run", &pipe, "--agent", "dev-1"], 0);
    assert_eq!(r["task"], pipe.as_str());
    let t = json(
        "task reject",
        &["task", "reject", &pipe, "--reason", "again"],
        0,
    );
    assert_eq!(t["diagnosis"], "again");
    json("task run", &["task", "run", &pipe, "--agent", "dev-1"], 0);
    json("task approve", &["task", "approve", &pipe], 0);
    json("task ls", &["task", "ls"], 0);
    json("task show", &["task", "show", &pipe], 0);

    // Actions: one runs, one is approved, one denied.
    let v = json("exec", &["exec", "dev-1", "--", "echo hi"], 0);
    assert_eq!(v["stdout"], "hi\n");
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "require_approval"]);
    let v = json("exec", &["exec", "dev-1", "--", "echo two"], 3);
    let id = v["action_id"].as_str().unwrap().to_string();
    let v = json("approve", &["approve", &id], 0);
    assert_eq!(v["id"], id.as_str());
    let v = json("exec", &["exec", "dev-1", "--", "echo three"], 3);
    let id = v["action_id"].as_str().unwrap().to_string();
    let v = json("deny", &["deny", &id, "--reason", "no"], 0);
    assert_eq!(v["status"], "denied");
    json("actions", &["actions"], 0);

    // A noop agent delivers a task: a PR, merged by a person.
    json(
        "task create",
        &["task", "create", "--project", "demo", "--title", "t"],
        0,
    );
    json("agent run", &["agent", "run", "noop-1", "--until-idle"], 0);
    let prs = json("pr list", &["pr", "list"], 0);
    let number = prs[0]["number"].to_string();
    json("pr show", &["pr", "show", &number], 0);
    let v = json("pr checks", &["pr", "checks", &number, "--run"], 0);
    assert_eq!(v["conflicts"], serde_json::json!([]));
    let v = json("pr watch", &["pr", "watch", "--once"], 0);
    assert_eq!(v[0]["pr"].to_string(), number);
    let v = json("pr export", &["pr", "export", &number], 0);
    assert_eq!(v["ref"], format!("refs/berth/pr/{number}"));
    let v = json("project sync", &["project", "sync", "demo"], 0);
    assert_eq!(v["status"], "up_to_date");
    json("pr merge", &["pr", "merge", &number], 3);
    json(
        "pr close",
        &["pr", "close", &number, "--reason", "not now"],
        0,
    );

    json("saved ls", &["saved", "ls"], 0);
    let v = json(
        "saved drop",
        &["saved", "drop", "demo", "refs/berth/saved/dev-1/none"],
        1,
    );
    assert_eq!(v["dropped"], false);
    let v = json("store migrate", &["store", "migrate"], 0);
    assert_eq!(v["backend"], "sqlite");
    assert_eq!(v["applied"].as_array().unwrap().last(), Some(&v["latest"]));
    json("events", &["events"], 0);
    json("net log", &["net", "log"], 0);
    json("metrics", &["metrics"], 0);
    json("outbox drain", &["outbox", "drain"], 0);
    let archive = cli.state().join("old-events.jsonl");
    let v = json(
        "events archive",
        &[
            "events",
            "archive",
            "--before",
            "2000-01-01",
            "--to",
            archive.to_str().unwrap(),
        ],
        0,
    );
    assert_eq!(
        (v["events"].as_u64(), v["last_id"].is_null()),
        (Some(0), true)
    );
    json("doctor", &["doctor"], 0);
    json("reconcile", &["reconcile"], 0);
    let v = json("down", &["down", "dev-1"], 0);
    assert_eq!(v["worktree"], "recycled");
    // `up` without --project: the agent knows its project.
    let v = json("up", &["up", "dev-1", "--mode", "runner"], 0);
    assert_eq!(
        (v["project"].as_str(), v["mode"].as_str()),
        (Some("demo"), Some("runner"))
    );
    assert!(
        v["container"].is_null(),
        "a runner berth has no container: {v}"
    );
    let (_, err) = cli.err(&["up", "ghost"]);
    assert!(
        err.contains("berth agent activate ghost --project"),
        "{err}"
    );

    // Unset: the type resolves as if never written; a second unset removes nothing.
    cli.ok(&["autonomy", "set", "dev-1", "git_push", "deny"]);
    let v = json(
        "autonomy unset",
        &["autonomy", "unset", "dev-1", "git_push"],
        0,
    );
    assert_eq!(v["removed"], true);
    let show = json("autonomy show", &["autonomy", "show", "dev-1"], 0);
    assert!(show["modes"].get("git_push").is_none(), "{show}");
    let v = json(
        "autonomy unset",
        &["autonomy", "unset", "dev-1", "git_push"],
        0,
    );
    assert_eq!(v["removed"], false);
    let evs = json("events", &["events", "--type", "agent.autonomy_set"], 0);
    let last = evs.as_array().unwrap().last().unwrap();
    assert_eq!(
        last["payload"],
        serde_json::json!({"action_type": "git_push", "mode": null})
    );
    let v = json(
        "decide",
        &["decide", "--mode", "auto", "--", "echo", "hi"],
        0,
    );
    assert_eq!(v["verdict"], "auto_approve");

    // Removal: an ended task archived, one never started removed, then an
    // agent (its dirty work saved) and the project.
    let v = json("task archive", &["task", "archive", &pipe], 0);
    assert!(v["archived_at"].is_i64(), "{v}");
    let ls = json("task ls", &["task", "ls"], 0);
    assert!(!ls.to_string().contains(&pipe), "{ls}");
    let ls = json("task ls", &["task", "ls", "--all"], 0);
    assert!(ls.to_string().contains(&pipe), "{ls}");
    let t = json(
        "task create",
        &["task", "create", "--project", "demo", "--title", "never"],
        0,
    );
    let never = t["id"].as_str().unwrap().to_string();
    let v = json("task rm", &["task", "rm", &never[..8]], 0);
    assert_eq!(v["title"], "never");
    let (_, err) = cli.err(&["task", "rm", &pipe]);
    assert!(err.contains("berth task archive"), "{err}");
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    cli.ok(&["exec", "dev-1", "--", "echo mine > mine.txt"]);
    // Several words after `--` are a program and its arguments, each one
    // word (as `docker exec` takes them): `sh -c` gets its script whole,
    // and `$HOME` is not expanded.
    assert_eq!(
        cli.ok(&["exec", "dev-1", "--", "sh", "-c", "echo one  two"]),
        "one two\n"
    );
    assert_eq!(cli.ok(&["exec", "dev-1", "--", "echo", "$HOME"]), "$HOME\n");
    let v = json(
        "agent rm",
        &["agent", "rm", "dev-1", "--project", "demo"],
        0,
    );
    let saved = v["saved"]["refname"].as_str().unwrap().to_string();
    assert!(saved.starts_with("refs/berth/saved/dev-1/"), "{v}");
    let (_, err) = cli.err(&["up", "dev-1"]);
    assert!(err.contains("was removed"), "{err}");
    let (_, err) = cli.err(&["project", "rm", "demo"]);
    assert!(err.contains(&saved) && err.contains("--discard"), "{err}");
    let v = json("project rm", &["project", "rm", "demo", "--discard"], 0);
    assert_eq!(v["project"], "demo");
    assert!(!cli.state().join("forge/demo.git").exists());
    let v = json("project ls", &["project", "ls"], 0);
    assert_eq!(v, serde_json::json!([]));

    // Not run here, each for its reason; every other documented command was.
    let elsewhere = [
        ("agent resume", "needs an agent the circuit breaker paused"),
        ("retry", "needs an action a crash interrupted"),
        ("resolve", "needs a followup blocked by permissions"),
        ("image build", "needs the Docker engine (tests/mounted.rs)"),
        (
            "image ls",
            "needs the Docker engine (tests/mounted_image.rs)",
        ),
        (
            "image rm",
            "needs the Docker engine (tests/mounted_image.rs)",
        ),
        ("cancel", "needs a running command (tests/cancel.rs)"),
        (
            "agent turn",
            "needs a command agent's program (tests/prompts.rs)",
        ),
        ("pr comment", "checked in tests/pr_review.rs"),
        ("pr resolve", "checked in tests/pr_review.rs"),
        ("pr review", "checked in tests/pr_review.rs"),
        ("pr request-review", "checked in tests/pr_review.rs"),
        ("pr threads", "checked in tests/pr_review.rs"),
        ("pr auto", "checked in tests/pr_automation.rs"),
        ("pr auto-prompt", "checked in tests/pr_automation.rs"),
    ];
    for c in doc.commands.keys() {
        assert!(
            checked.contains(c) || elsewhere.iter().any(|(e, _)| e == c),
            "`{c}` is documented but its JSON is not checked"
        );
    }
}

/// `berth completions bash`, sourced by real bash, completes subcommands,
/// nested subcommands and argument values; zsh and fish get their own
/// scripts, and an unknown shell is an error that lists the known ones.
#[test]
fn completions_complete_in_real_bash() {
    let berth = env!("CARGO_BIN_EXE_berth");
    // (words typed, the word being completed, what COMPREPLY must hold)
    let cases: &[(&[&str], &[&str])] = &[
        (&["berth", "auto"], &["autonomy"]),
        (&["berth", "autonomy", "u"], &["unset"]),
        (&["berth", "project", "s"], &["sync", "set-mode"]),
        (&["berth", "completions", "f"], &["fish"]),
        (&["berth", "events", "--j"], &["--json"]),
    ];
    for (words, expected) in cases {
        let array = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" ");
        let cword = words.len() - 1;
        let (cur, prev) = (words[cword], words[cword - 1]);
        let script = format!(
            "source <('{berth}' completions bash) && COMP_WORDS=({array}) && COMP_CWORD={cword} && _berth berth '{cur}' '{prev}' && printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        let out = Command::new("bash").args(["-c", &script]).output().unwrap();
        assert!(
            out.status.success(),
            "{words:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        assert_eq!(&got, expected, "{words:?}");
    }
    for (shell, marker) in [("zsh", "#compdef berth"), ("fish", "complete -c berth")] {
        let out = Command::new(berth)
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success(), "{shell}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            text.contains(marker),
            "{shell}: {}",
            &text[..200.min(text.len())]
        );
        assert!(text.contains("autonomy"), "{shell}");
    }
    let out = Command::new(berth)
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("bash") && err.contains("zsh") && err.contains("fish"),
        "{err}"
    );
}

impl Cli {
    fn src(&self) -> PathBuf {
        self.root().join("src")
    }

    fn forge_main(&self) -> String {
        git_out(
            &self.state().join("forge/demo.git"),
            &["rev-parse", "refs/heads/main"],
        )
    }

    /// A noop agent's PR #1, open.
    fn with_open_pr(self) -> Cli {
        let cli = self.with_noop_agents(1);
        cli.ok(&["up", "noop-0", "--project", "demo", "--mode", "runner"]);
        cli.ok(&["agent", "run", "noop-0", "--until-idle"]);
        assert_eq!(cli.json(&["pr", "show", "1", "--json"])["status"], "open");
        cli
    }

    /// Merges PR #1 (into protected main: approved by a person).
    fn merge_pr_1(&self) -> String {
        assert_eq!(self.run(&["pr", "merge", "1"]).status.code(), Some(3));
        let pending = self.json(&["actions", "--pending", "--json"]);
        self.ok(&["approve", pending[0]["id"].as_str().unwrap()]);
        let pr = self.json(&["pr", "show", "1", "--json"]);
        assert_eq!(pr["status"], "merged");
        pr["merge_commit"].as_str().unwrap().to_string()
    }

    fn commit_upstream(&self, file: &str) -> String {
        std::fs::write(self.src().join(file), format!("{file}\n")).unwrap();
        git(&self.src(), &["add", file]);
        git(&self.src(), &["commit", "-q", "-m", file]);
        git_out(&self.src(), &["rev-parse", "HEAD"])
    }
}

/// What a person sees of their checkout: the branch, HEAD, the index file,
/// and `git status`.
fn checkout_view(src: &Path) -> (String, String, Vec<u8>, String) {
    (
        git_out(src, &["symbolic-ref", "HEAD"]),
        git_out(src, &["rev-parse", "HEAD"]),
        std::fs::read(src.join(".git/index")).unwrap(),
        git_out(src, &["status", "--porcelain", "--untracked-files=all"]),
    )
}

#[test]
fn sync_fast_forwards_the_forge_to_new_upstream_commits() {
    let cli = Cli::new().with_project();
    let before = cli.forge_main();
    let s = cli.json(&["project", "sync", "demo", "--json"]);
    assert_eq!(s["status"], "up_to_date");
    assert_eq!(s["after"], before.as_str());

    let upstream = cli.commit_upstream("b.txt");
    let s = cli.json(&["project", "sync", "demo", "--json"]);
    assert_eq!(s["status"], "fast_forwarded", "{s}");
    assert_eq!(s["before"], before.as_str());
    assert_eq!(s["after"], upstream.as_str());
    assert_eq!(cli.forge_main(), upstream);
    let events = cli.json(&["events", "--json"]);
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["type"] == "project.synced"),
        "{events}"
    );
    let text = cli.ok(&["project", "sync", "demo"]);
    assert!(text.contains("up to date"), "{text}");
}

#[test]
fn sync_refuses_divergence_says_what_to_do_and_changes_nothing() {
    let cli = Cli::new().with_project().with_open_pr();
    cli.merge_pr_1();
    let merged = cli.forge_main();
    // Merged PRs only: the forge is ahead, nothing to bring in.
    let s = cli.json(&["project", "sync", "demo", "--json"]);
    assert_eq!(s["status"], "forge_ahead", "{s}");
    assert_eq!(cli.forge_main(), merged);

    cli.commit_upstream("b.txt");
    let (code, err) = cli.err(&["project", "sync", "demo"]);
    assert_eq!(code, 2);
    assert!(err.contains("main has diverged"), "{err}");
    assert!(err.contains("nothing was changed"), "{err}");
    assert!(err.contains("berth pr export PR"), "{err}");
    assert_eq!(cli.forge_main(), merged, "the forge is unchanged");

    // Doing what it says: export, merge in the source, sync.
    cli.ok(&["pr", "export", "1"]);
    git(&cli.src(), &["merge", "-q", "--no-edit", "refs/berth/pr/1"]);
    let s = cli.json(&["project", "sync", "demo", "--json"]);
    assert_eq!(s["status"], "fast_forwarded", "{s}");
    assert_eq!(
        cli.forge_main(),
        git_out(&cli.src(), &["rev-parse", "HEAD"])
    );
}

#[test]
fn export_of_an_open_and_a_merged_pr_writes_only_the_ref() {
    let cli = Cli::new().with_project().with_open_pr();
    let src = cli.src();
    // A checkout in use: a modified tracked file and an untracked one.
    std::fs::write(src.join("a.txt"), "edited\n").unwrap();
    std::fs::write(src.join("notes.txt"), "mine\n").unwrap();
    let view = checkout_view(&src);

    let pr = cli.json(&["pr", "show", "1", "--json"]);
    let e = cli.json(&["pr", "export", "1", "--json"]);
    assert_eq!(e["ref"], "refs/berth/pr/1");
    assert_eq!(e["status"], "open");
    assert_eq!(e["commit"], pr["head"], "{e}");
    assert_eq!(
        git_out(&src, &["rev-parse", "refs/berth/pr/1"]),
        pr["head"].as_str().unwrap()
    );
    assert!(
        e["merge"]
            .as_str()
            .unwrap()
            .ends_with("merge refs/berth/pr/1"),
        "{e}"
    );
    assert_eq!(
        checkout_view(&src),
        view,
        "HEAD, index and worktree untouched"
    );

    let merge_commit = cli.merge_pr_1();
    let text = cli.ok(&["pr", "export", "#1"]);
    assert!(text.contains("git -C "), "{text}");
    assert_eq!(
        git_out(&src, &["rev-parse", "refs/berth/pr/1"]),
        merge_commit
    );
    assert_eq!(
        checkout_view(&src),
        view,
        "HEAD, index and worktree untouched"
    );

    // --to another repository.
    let other = cli.root().join("other");
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q", "-b", "main"]);
    let e = cli.json(&[
        "pr",
        "export",
        "1",
        "--to",
        other.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(e["commit"], merge_commit.as_str());
    assert_eq!(
        git_out(&other, &["rev-parse", "refs/berth/pr/1"]),
        merge_commit
    );
}

#[test]
fn sync_and_export_errors_say_what_to_do() {
    let cli = Cli::new().with_project().with_open_pr();
    let not_a_repo = cli.root().join("plain");
    std::fs::create_dir_all(&not_a_repo).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["project", "sync", "nope"],
            "unknown project `nope`: list them with `berth project ls`",
        ),
        (
            &["pr", "export", "9"],
            "unknown PR `9`: list them with `berth pr list`",
        ),
        (
            &["pr", "export", "1", "--to", not_a_repo.to_str().unwrap()],
            "export: ",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = cli.err(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(
            err.starts_with(&format!("berth: {want}")),
            "{args:?}: {err}"
        );
    }
    let (_, err) = cli.err(&["pr", "export", "1", "--to", not_a_repo.to_str().unwrap()]);
    assert!(err.contains("is not a git repository"), "{err}");

    std::fs::rename(cli.src(), cli.root().join("moved")).unwrap();
    let (code, err) = cli.err(&["project", "sync", "demo"]);
    assert_eq!(code, 2);
    assert!(err.contains("the source repository"), "{err}");
    assert!(
        err.contains("is not there any more: put the repository back"),
        "{err}"
    );
    let (code, err) = cli.err(&["pr", "export", "1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("is not there any more: give the repository to export into with `--to DIR`"),
        "{err}"
    );
}

#[test]
fn down_saves_uncommitted_work_and_prints_how_to_get_it_back() {
    let cli = Cli::new().with_project();
    cli.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    let ls: serde_json::Value = serde_json::from_str(&cli.ok(&["ls", "--json"])).unwrap();
    let wt = PathBuf::from(ls[0]["worktree"].as_str().unwrap());
    std::fs::write(wt.join("unsaved.txt"), "keep me\n").unwrap();
    let out = cli.ok(&["down", "dev-1"]);
    assert!(!wt.exists(), "recycled");
    let fetch = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("get them back: "))
        .unwrap_or_else(|| panic!("no fetch command in {out}"));
    assert!(fetch.contains("refs/berth/saved/dev-1/"), "{out}");
    // The printed command works in a repository of one's own.
    let mine = cli.root().join("mine");
    std::fs::create_dir_all(&mine).unwrap();
    git(&mine, &["init", "-q"]);
    let words: Vec<&str> = fetch.split_whitespace().collect();
    assert_eq!(&words[..2], &["git", "fetch"], "{fetch}");
    git(&mine, &["fetch", "-q", words[2], words[3]]);
    let shown = Command::new("git")
        .args(["show", "FETCH_HEAD:unsaved.txt"])
        .current_dir(&mine)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&shown.stdout), "keep me\n");

    let listed = cli.ok(&["saved", "ls"]);
    let refname = words[3].split(':').next().unwrap();
    assert!(listed.contains(refname), "{listed}");
    cli.ok(&["saved", "drop", "demo", refname]);
    assert!(cli.ok(&["saved", "ls"]).contains("no saved work"));
    let (code, _) = cli.err(&["saved", "drop", "demo", refname]);
    assert_eq!(code, 1);

    // Clean: nothing saved, nothing said. --discard: nothing saved.
    for (write, args) in [
        (false, &["down", "dev-1"][..]),
        (true, &["down", "dev-1", "--discard"][..]),
    ] {
        cli.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
        if write {
            std::fs::write(wt.join("gone.txt"), "x\n").unwrap();
        }
        let out = cli.ok(args);
        assert!(!out.contains("saved"), "{args:?}: {out}");
        assert!(cli.ok(&["saved", "ls"]).contains("no saved work"));
    }
}

/// `berth doctor` names every part it checks and, for what is missing, the
/// part and the command that fixes it; a missing image or helper fails it.
#[test]
fn doctor_names_each_part_and_what_to_do() {
    let cli = Cli::new().with_project();
    let checks = |out: &Output| -> Vec<serde_json::Value> {
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["checks"].as_array().unwrap().clone()
    };
    let part = |checks: &[serde_json::Value], part: &str| -> Vec<serde_json::Value> {
        checks
            .iter()
            .filter(|c| c["part"] == part)
            .cloned()
            .collect()
    };
    let out = cli.run(&["doctor", "--json"]);
    let found = checks(&out);
    for p in ["state", "runner", "cgroups", "helper", "git", "disk", "uid"] {
        assert!(!part(&found, p).is_empty(), "no {p} check: {found:?}");
    }
    assert_eq!(part(&found, "helper")[0]["status"], "ok", "{found:?}");

    // A project that names an image this engine does not have (mode auto:
    // it would run in a container when Docker answers).
    let text = std::fs::read_to_string(cli.config()).unwrap();
    std::fs::write(
        cli.config(),
        text.replacen("\nmode = \"runner\"\n", "\nmode = \"auto\"\n", 1)
            .replacen("image = \"\"", "image = \"berth-no-such-image:1\"", 1),
    )
    .unwrap();
    let out = cli.run(&["doctor", "--json"]);
    let found = checks(&out);
    let docker = part(&found, "docker");
    if docker[0]["status"] == "ok" {
        let image = part(&found, "image");
        assert_eq!(image.len(), 1, "{found:?}");
        assert_eq!(image[0]["status"], "fail", "{image:?}");
        assert!(
            image[0]["detail"]
                .as_str()
                .unwrap()
                .contains("berth-no-such-image:1")
                && image[0]["fix"].as_str().unwrap().contains("docker build"),
            "{image:?}"
        );
        assert_eq!(out.status.code(), Some(1));
    } else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "no Docker engine under CI: {docker:?}"
        );
    }

    // berth-helper missing: named, with where it was looked for and the fix.
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["doctor"])
        .env("BERTH_HOME", cli.state())
        .env("BERTH_HELPER", cli.root().join("no-helper"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("fail helper") && text.contains("no-helper") && text.contains("fix:"),
        "{text}"
    );
}
