#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The `berth` binary end to end: real processes, a real store on disk, real
//! git. Errors must say what to do; JSON output keeps its documented shape.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Cli {
    dir: tempfile::TempDir,
}

impl Drop for Cli {
    /// A berth left up keeps its own disk mounted in the state directory
    /// (berth as root): it goes before the directory does, failed or not.
    fn drop(&mut self) {
        berth_engine::release_disks_under(&self.dir.path().join("state"));
    }
}

impl Cli {
    fn new() -> Cli {
        Cli {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(args)
            .env("BERTH_HOME", self.state())
            .env("USER", "ada")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "berth {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn err(&self, args: &[&str]) -> (i32, String) {
        let out = self.run(args);
        assert!(!out.status.success(), "berth {args:?} succeeded");
        (
            out.status.code().unwrap(),
            String::from_utf8(out.stderr).unwrap(),
        )
    }

    /// An initialised state with project `demo` and real agent `dev-1`, up.
    /// A user's repository with one commit, to import.
    fn source_repo(&self) -> PathBuf {
        let src = self.dir.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("a.txt"), "a\n").unwrap();
        git(&src, &["add", "a.txt"]);
        git(&src, &["commit", "-q", "-m", "init"]);
        src
    }

    fn with_project(self) -> Cli {
        let src = self.source_repo();
        self.ok(&["init"]);
        self.ok(&["project", "add", "demo", "--from", src.to_str().unwrap()]);
        // These tests are about the CLI, not containers: every berth is a
        // runner, whether or not a Docker engine answers (tests/mounted.rs
        // covers mounted mode).
        let config = self.config();
        let text = std::fs::read_to_string(&config).unwrap();
        assert!(text.contains("\nmode = \"auto\"\n"), "{text}");
        std::fs::write(
            &config,
            text.replace("\nmode = \"auto\"\n", "\nmode = \"runner\"\n"),
        )
        .unwrap();
        self.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
        self.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
        self
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

    fn config(&self) -> PathBuf {
        self.state().join("projects/demo/berth.toml")
    }
}

fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(["-c", "user.name=Ada", "-c", "user.email=ada@example.com"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success());
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
    ];
    for (args, want) in cases {
        let (code, err) = cli.err(args);
        assert_eq!(code, 2, "{args:?}");
        assert!(
            err.starts_with(&format!("berth: {want}")),
            "{args:?}: {err}"
        );
    }
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

/// The old `[sandbox] network = "…"` still works, and `up` says on stderr
/// what to write instead, naming the file and line.
#[test]
fn up_warns_of_the_old_network_form_and_names_the_table() {
    let cli = Cli::new().with_project();
    cli.ok(&["down", "dev-1"]);
    let text = std::fs::read_to_string(cli.config()).unwrap();
    let at = text.find("\n[sandbox.network]\n").unwrap();
    let end = text[at + 1..].find("\n[").unwrap() + at + 1;
    let old =
        text[..at].replace("\npids = 512\n", "\npids = 512\nnetwork = \"none\"\n") + &text[end..];
    let line = old
        .lines()
        .position(|l| l.starts_with("network = "))
        .unwrap()
        + 1;
    std::fs::write(cli.config(), old).unwrap();
    let out = cli.run(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    let want = format!(
        "berth: warning: {}:{line}: `[sandbox] network = \"none\"` is the old form: write the table\n[sandbox.network]\nmode = \"none\"\n",
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
            std::thread::sleep(std::time::Duration::from_millis(50 + next(400)));
            if child.try_wait().unwrap().is_none() {
                kills += 1;
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
    let mine = cli.dir.path().join("mine");
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
