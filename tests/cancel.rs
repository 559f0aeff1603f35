//! `berth cancel` against a runner berth, process against process: a
//! `berth exec` runs a command in one process, `berth cancel` stops it from
//! another; the command's whole tree is gone, the action ends `cancelled`
//! with its output so far, and the berth stays up. Also what a cancel of an
//! action that is not running says, and a cancel whose executing process
//! is killed with SIGKILL before it records the end (the next berth process
//! records `cancelled`). Mounted berths: tests/mounted.rs.

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cli::{Cli, JsonDoc};

/// `berth exec dev-1 -- COMMAND` in a process of its own; its stdout lines
/// arrive on the receiver as the command prints them.
fn spawn_exec(cli: &Cli, command: &str) -> (Child, mpsc::Receiver<String>) {
    let mut child = cli
        .command(&["exec", "dev-1", "--", command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

fn actions(cli: &Cli) -> Vec<Value> {
    let v: Value = serde_json::from_str(&cli.ok(&["actions", "--json"])).unwrap();
    v.as_array().unwrap().clone()
}

fn action(cli: &Cli, id: &str) -> Value {
    actions(cli)
        .into_iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("no action {id}"))
}

/// The id of the action running `command`, once it is executing and has
/// printed `line`.
fn running(cli: &Cli, rx: &mpsc::Receiver<String>, command: &str, line: &str) -> String {
    let until = Instant::now() + Duration::from_secs(30);
    let mut seen = false;
    while !seen {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => seen = l == line,
            Err(e) => panic!("`{line}` never came from the command: {e}"),
        }
    }
    let a = actions(cli)
        .into_iter()
        .find(|a| a["action"]["command"] == command)
        .unwrap();
    assert_eq!(a["status"], "executing", "{a}");
    a["id"].as_str().unwrap().to_string()
}

/// The pids in the exec cgroup the runner named after `id`, and the cgroup.
fn exec_cgroup(id: &str) -> Option<(PathBuf, Vec<i32>)> {
    let root = Path::new("/sys/fs/cgroup/unified/berth");
    for scope in std::fs::read_dir(root).ok()?.filter_map(Result::ok) {
        let dir = scope.path().join("dev-1").join(format!("action-{id}"));
        if let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) {
            let pids = procs.lines().filter_map(|l| l.parse().ok()).collect();
            return Some((dir, pids));
        }
    }
    None
}

/// [`exec_cgroup`] once it holds `at_least` processes, or as it is after
/// `within`: the command's first output line comes before the shell forks
/// what follows it (`sleep 300 &`), and the test once counted too early.
fn exec_cgroup_holding(id: &str, at_least: usize, within: Duration) -> Option<(PathBuf, Vec<i32>)> {
    let until = Instant::now() + within;
    loop {
        let found = exec_cgroup(id);
        // No cgroup (not root): nothing to wait for.
        let enough = found
            .as_ref()
            .is_none_or(|(_, pids)| pids.len() >= at_least);
        if enough || Instant::now() >= until {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn wait_exit(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let until = Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < until, "berth exec did not return");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// No process of `pids` is left (each is gone from /proc, or a zombie
/// waiting for its reaper).
fn all_gone(pids: &[i32]) -> bool {
    pids.iter().all(
        |pid| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat.rsplit(") ").next().is_some_and(|r| r.starts_with('Z')),
        },
    )
}

#[test]
fn cancel_stops_a_running_command_from_another_process_and_the_berth_stays_up() {
    let cli = Cli::new().with_project();
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let command = "echo before; sleep 300 & sleep 301; echo never";
    let (mut exec, rx) = spawn_exec(&cli, command);
    let id = running(&cli, &rx, command, "before");

    // Named by its action: any process finds it. As root, every process
    // of the command is in that cgroup (the background `sleep 300` too).
    let cgroup = exec_cgroup_holding(&id, 3, Duration::from_secs(5));
    if berth_sandbox::identity::current_uid() == 0 {
        let (_, pids) = cgroup
            .as_ref()
            .expect("the exec's cgroup is named after its action");
        assert!(pids.len() >= 3, "shim, shell and both sleeps: {pids:?}");
    }

    let asked = Instant::now();
    let out = cli.run(&["cancel", &id, "--json"]);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    JsonDoc::load().check("cancel", &stdout);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["killed"].as_bool()),
        (Some("cancelled"), Some(true)),
        "{v}"
    );
    let status = wait_exit(&mut exec, Duration::from_secs(10));
    eprintln!("cancel to exec's return: {:?}", asked.elapsed());
    assert!(!status.success(), "{status:?}");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut exec.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(stderr.contains("cancelled by ada"), "{stderr}");

    let a = action(&cli, &id);
    assert_eq!(a["status"], "cancelled", "{a}");
    assert_eq!(a["result"]["stdout"], "before\n", "{a}");
    assert!(
        a["diagnostic"]
            .as_str()
            .unwrap()
            .contains("cancelled by ada"),
        "{a}"
    );
    if let Some((dir, pids)) = cgroup {
        let until = Instant::now() + Duration::from_secs(5);
        while !all_gone(&pids) {
            assert!(
                Instant::now() < until,
                "a process of the command survived: {pids:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!dir.exists(), "the exec's cgroup is removed");
    }
    // The log: who asked, before the kill; then the end.
    let events: Value = serde_json::from_str(&cli.ok(&["events", "--json"])).unwrap();
    let types: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == id.as_str())
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let requested = types.iter().position(|t| *t == "action.cancel_requested");
    let cancelled = types.iter().position(|t| *t == "action.cancelled");
    assert!(requested.is_some() && requested < cancelled, "{types:?}");
    assert!(!types.contains(&"action.failed"), "{types:?}");
    let metrics: Value = serde_json::from_str(&cli.ok(&["metrics", "--json"])).unwrap();
    assert_eq!(
        (metrics["cancelled"].as_i64(), metrics["failed"].as_i64()),
        (Some(1), Some(0)),
        "{metrics}"
    );

    // The berth is still up: the next command runs.
    assert_eq!(cli.ok(&["exec", "dev-1", "--", "echo after"]), "after\n");
    let ls: Value = serde_json::from_str(&cli.ok(&["ls", "--json"])).unwrap();
    assert_eq!(ls[0]["mode"], "runner", "{ls}");
}

#[test]
fn cancel_of_an_action_that_is_not_running_says_what_to_do() {
    let cli = Cli::new().with_project();
    let (_, err) = cli.err(&["cancel", "feedbeef"]);
    assert!(
        err.contains("unknown action `feedbeef`") && err.contains("berth actions"),
        "{err}"
    );

    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let v: Value =
        serde_json::from_str(&cli.ok(&["exec", "dev-1", "--json", "--", "echo done"])).unwrap();
    let done = v["action_id"].as_str().unwrap().to_string();
    let (_, err) = cli.err(&["cancel", &done]);
    assert!(
        err.contains("is executed, not executing") && err.contains("already ended"),
        "{err}"
    );

    cli.ok(&["autonomy", "set", "dev-1", "terminal", "require_approval"]);
    let out = cli.run(&["exec", "dev-1", "--json", "--", "echo later"]);
    assert_eq!(out.status.code(), Some(3));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let pending = v["action_id"].as_str().unwrap().to_string();
    let (_, err) = cli.err(&["cancel", &pending]);
    assert!(
        err.contains("is pending, not executing")
            && err.contains(&format!("berth deny {}", &pending[..8])),
        "{err}"
    );
    // Nothing changed: it still waits for a person.
    assert_eq!(action(&cli, &pending)["status"], "pending");
}

#[test]
fn a_cancel_whose_executing_process_dies_is_recorded_cancelled_by_the_next_process() {
    let cli = Cli::new().with_project();
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let command = "echo up; sleep 302";
    let (mut exec, rx) = spawn_exec(&cli, command);
    let id = running(&cli, &rx, command, "up");

    // The executing process cannot record anything while stopped; the
    // cancel records its request, kills the command and waits.
    let stopped = Command::new("kill")
        .args(["-STOP", &exec.id().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let mut cancel = cli
        .command(&["cancel", &id])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    loop {
        let events: Value = serde_json::from_str(&cli.ok(&[
            "events",
            "--type",
            "action.cancel_requested",
            "--json",
        ]))
        .unwrap();
        if !events.as_array().unwrap().is_empty() {
            assert_eq!(events[0]["actor"]["id"], "ada", "{events}");
            break;
        }
        assert!(
            Instant::now() < until,
            "the cancel request was never recorded"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Both die before the end is recorded.
    cancel.kill().unwrap();
    cancel.wait().unwrap();
    exec.kill().unwrap();
    exec.wait().unwrap();
    assert_eq!(
        actions(&cli)
            .into_iter()
            .find(|a| a["id"] == id.as_str())
            .unwrap()["status"],
        "cancelled",
        "the next berth process records what the person asked for, not `interrupted`"
    );
    let a = action(&cli, &id);
    assert!(
        a["diagnostic"]
            .as_str()
            .unwrap()
            .contains("stopped before recording its output"),
        "{a}"
    );
    assert_eq!(cli.ok(&["exec", "dev-1", "--", "echo after"]), "after\n");
}

/// A pipeline step a person cancels is their call, as a denied step is:
/// the run blocks for them (the task `blocked`, saying who cancelled it)
/// and the agent is not paused.
#[test]
fn a_cancelled_pipeline_step_blocks_its_run_for_a_person() {
    let cli = Cli::new().with_project();
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let command = "echo step; sleep 305";
    let task: Value = serde_json::from_str(&cli.ok(&[
        "task",
        "create",
        "--project",
        "demo",
        "--title",
        "pipe",
        "--step",
        command,
        "--json",
    ]))
    .unwrap();
    let task = task["id"].as_str().unwrap().to_string();
    let mut run = cli
        .command(&["task", "run", &task, "--agent", "dev-1", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    let id = loop {
        if let Some(a) = actions(&cli)
            .into_iter()
            .find(|a| a["action"]["command"] == command && a["status"] == "executing")
        {
            break a["id"].as_str().unwrap().to_string();
        }
        assert!(Instant::now() < until, "the step never ran");
        std::thread::sleep(Duration::from_millis(50));
    };
    let line = cli.ok(&["cancel", &id]);
    assert!(line.contains("cancelled"), "{line}");
    wait_exit(&mut run, Duration::from_secs(15));
    let shown: Value = serde_json::from_str(&cli.ok(&["task", "show", &task, "--json"])).unwrap();
    assert_eq!(shown["task"]["status"], "blocked", "{shown}");
    let diagnosis = shown["task"]["diagnosis"].as_str().unwrap();
    assert!(
        diagnosis.contains("was cancelled") && diagnosis.contains("cancelled by ada"),
        "{diagnosis}"
    );
    let agents: Value = serde_json::from_str(&cli.ok(&["ls", "--json"])).unwrap();
    assert_ne!(agents[0]["status"], "paused", "{agents}");
    let paused: Value =
        serde_json::from_str(&cli.ok(&["events", "--type", "agent.paused", "--json"])).unwrap();
    assert!(paused.as_array().unwrap().is_empty(), "{paused}");
}
