#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Mounted mode through the `berth` binary, against the real Docker engine:
//! `berth image build`, the default mode of `berth up` with and without an
//! engine (and under `CI=true`), and a `berth exec` killed with SIGKILL while
//! its command runs — the next berth process marks the action interrupted,
//! kills the command left in the container and adopts the container.
//!
//! Without a Docker engine these tests skip with the reason, except under
//! `CI=true`, where they fail.

use crate::docker;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use docker::docker_answers;

use serde_json::Value;

use crate::fixture::{Fixture, expect_ok};

const BERTH: &str = env!("CARGO_BIN_EXE_berth");
/// A socket no engine listens on.
const NO_ENGINE: &str = "unix:///nonexistent/berth-test-docker.sock";

/// This module's fixture: the shared one, with a project of a unique name
/// (container names are per project and agent, and tests run at once), and
/// `berth` run without the caller's `DOCKER_HOST` and `CI` (each test sets
/// what it means).
struct State(Fixture);

impl std::ops::Deref for State {
    type Target = Fixture;
    fn deref(&self) -> &Fixture {
        &self.0
    }
}

impl State {
    fn new(test: &str) -> State {
        static N: AtomicU32 = AtomicU32::new(0);
        let project = format!(
            "c{}-{}-{test}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        State(Fixture::named(&project).with_project())
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = self.command(args);
        c.env_remove("DOCKER_HOST").env_remove("CI");
        c
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut c = self.cmd(args);
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        expect_ok(args, self.run_env(args, &[]))
    }

    fn up_mounted(&self, agent: &str) {
        let project = self.project_name();
        self.ok(&["up", agent, "--project", project, "--mode", "mounted"]);
    }

    fn json(&self, args: &[&str]) -> Value {
        serde_json::from_str(&self.ok(args)).unwrap()
    }

    fn activate(&self, agent: &str) {
        self.ok(&["agent", "activate", agent, "--project", self.project_name()]);
    }

    fn container(&self, agent: &str) -> String {
        format!(
            "berth-{}.{agent}.{}",
            self.project_name(),
            berth_engine::berths::instance_of(&self.state())
        )
    }

    /// The id of dev-1's container; empty when there is none.
    fn container_id(&self) -> String {
        let out = Command::new("docker")
            .args(["inspect", "--format", "{{.Id}}", &self.container("dev-1")])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The container's processes, as `docker top` lists them.
    fn top(&self, agent: &str) -> String {
        let out = Command::new("docker")
            .args(["top", &self.container(agent), "-o", "pid,args"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// `berth image build` (the image every mounted berth here runs).
pub(crate) fn image_build() -> String {
    let out = Command::new(BERTH)
        .args(["image", "build"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "berth image build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A state whose agent dev-1 is up in mounted mode, its commands
/// auto-approved.
fn mounted_dev_1(test: &str) -> State {
    image_build();
    let s = State::new(test);
    s.activate("dev-1");
    s.up_mounted("dev-1");
    s.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    s
}

#[test]
fn image_build_shows_progress_and_does_nothing_when_nothing_changed() {
    if !docker_answers() {
        return;
    }
    let first = image_build();
    assert!(first.contains("resolved"), "{first}");
    assert!(
        first.contains("berth-agent:latest -> berth-agent:"),
        "{first}"
    );
    let second = image_build();
    assert!(
        second.contains("is up to date: nothing to build") && second.contains("(unchanged)"),
        "{second}"
    );
    // `--json`: stdout holds one object (docs/cli-json.md), progress goes to stderr.
    let out = Command::new(BERTH)
        .args(["image", "build", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let v: Value = serde_json::from_str(&stdout).unwrap();
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(
        keys,
        ["bytes", "entries", "id", "latest", "tag", "up_to_date"]
    );
    assert_eq!(v["up_to_date"], true);
    assert_eq!(v["latest"], "berth-agent:latest");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("is up to date: nothing to build"),
        "{stderr}"
    );
}

#[test]
fn up_defaults_to_mounted_when_docker_answers_and_says_plainly_when_it_does_not() {
    if !docker_answers() {
        return;
    }
    image_build();
    let s = State::new("default");
    // (agent, --mode, environment, succeeds, mode shown, text expected)
    type Case<'a> = (
        &'a str,
        Option<&'a str>,
        &'a [(&'a str, &'a str)],
        bool,
        &'a str,
        &'a [&'a str],
    );
    let cases: [Case; 4] = [
        ("auto-docker", None, &[], true, "mounted", &[]),
        (
            "auto-none",
            None,
            &[("DOCKER_HOST", NO_ENGINE)],
            true,
            "runner",
            &[
                "/nonexistent/berth-test-docker.sock",
                "no container boundary",
            ],
        ),
        (
            "explicit-none",
            Some("mounted"),
            &[("DOCKER_HOST", NO_ENGINE)],
            false,
            "",
            &["/nonexistent/berth-test-docker.sock", "--mode runner"],
        ),
        (
            "ci-none",
            None,
            &[("DOCKER_HOST", NO_ENGINE), ("CI", "true")],
            false,
            "",
            &["CI=true requires the Docker engine"],
        ),
    ];
    for (agent, mode, env, succeeds, shown, texts) in cases {
        s.activate(agent);
        let mut args = vec!["up", agent, "--project", s.project_name(), "--json"];
        if let Some(m) = mode {
            args.extend(["--mode", m]);
        }
        let out = s.run_env(&args, env);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.success(), succeeds, "{agent}: {stdout}{stderr}");
        if succeeds {
            let info: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(info["mode"], shown, "{agent}");
            // `up --json` names the container, and it is there.
            if shown == "mounted" {
                assert_eq!(info["container"], s.container(agent).as_str(), "{agent}");
                let inspect = Command::new("docker")
                    .args([
                        "inspect",
                        "--format",
                        "{{.State.Running}}",
                        &s.container(agent),
                    ])
                    .output()
                    .unwrap();
                assert_eq!(
                    String::from_utf8_lossy(&inspect.stdout).trim(),
                    "true",
                    "{agent}"
                );
            } else {
                assert!(info["container"].is_null(), "{agent}: {info}");
            }
            let note = info["note"].as_str().unwrap_or("");
            for t in texts {
                assert!(note.contains(t), "{agent}: note {note:?} lacks {t:?}");
            }
        } else {
            for t in texts {
                assert!(stderr.contains(t), "{agent}: {stderr:?} lacks {t:?}");
            }
            // Nothing was provisioned for a berth that could not come up.
            assert!(
                !s.state()
                    .join("berths")
                    .join(s.project_name())
                    .join(agent)
                    .join(agent)
                    .exists()
            );
        }
    }
    let ls = s.json(&["ls", "--json"]);
    let modes: Vec<(String, Value)> = ls
        .as_array()
        .unwrap()
        .iter()
        .map(|b| (b["agent"].as_str().unwrap().to_string(), b["mode"].clone()))
        .collect();
    assert!(
        modes.contains(&("auto-docker".into(), "mounted".into())),
        "{modes:?}"
    );
    assert!(
        modes.contains(&("explicit-none".into(), Value::Null)),
        "{modes:?}"
    );
}

#[test]
fn a_berth_exec_killed_mid_command_takes_its_command_along() {
    if !docker_answers() {
        return;
    }
    let s = mounted_dev_1("killed");
    let before = s.container_id();
    assert!(!before.is_empty());

    let mut exec = s
        .cmd(&["exec", "dev-1", "--", "sleep 397"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !s.top("dev-1").contains("sleep 397") {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the command never started in the container"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    exec.kill().unwrap(); // SIGKILL: no cleanup runs.
    exec.wait().unwrap();
    // Its connection to the exec agent closed with it: the agent kills the
    // command's process group at once, nothing waits for a reconcile.
    let started = Instant::now();
    while s.top("dev-1").contains("sleep 397") {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the command outlives its client: {}",
            s.top("dev-1")
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    // The next berth process, whatever it is asked to do.
    let actions = s.json(&["actions", "--agent", "dev-1", "--json"]);
    let action = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"]["command"] == "sleep 397")
        .unwrap_or_else(|| panic!("{actions}"));
    assert_eq!(action["status"], "interrupted", "{action}");
    let adopted = s.json(&["events", "--type", "container.adopted", "--json"]);
    let adopted = adopted.as_array().unwrap();
    assert_eq!(adopted.len(), 1, "{adopted:?}");
    assert_eq!(adopted[0]["payload"]["stale_execs_killed"], 0);
    assert_eq!(s.container_id(), before, "adopted, not recreated");
    assert_eq!(s.ok(&["exec", "dev-1", "--", "echo alive"]), "alive\n");

    // An explicit reconcile finds nothing more to do; down leaves nothing.
    let report = s.json(&["reconcile", "--json"]);
    assert_eq!(report[0]["adopted"], true, "{report}");
    assert_eq!(report[0]["stale_execs_killed"], 0, "{report}");
    s.ok(&["down", "dev-1"]);
    assert!(s.container_id().is_empty(), "the container is gone");
    assert!(
        !s.state()
            .join("berths")
            .join(s.project_name())
            .join("dev-1")
            .join("dev-1")
            .exists()
    );
}

#[test]
fn berth_exec_says_when_the_memory_limit_killed_a_process_and_doctor_finds_nothing() {
    if !docker_answers() {
        return;
    }
    image_build();
    let s = State::new("oom");
    let toml = s
        .state()
        .join("projects")
        .join(s.project_name())
        .join("berth.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, text.replace("memory_mb = 2048", "memory_mb = 64")).unwrap();
    s.activate("dev-1");
    s.up_mounted("dev-1");
    // Auto mode: the policy is not under test here.
    s.ok(&["autonomy", "set", "dev-1", "*", "auto_approve"]);

    // The victim is a child; the command itself exits 0. Before, nothing
    // said so: the exit code was all `berth exec` showed.
    let out = s.run_env(
        &[
            "exec",
            "dev-1",
            "--",
            "tail < /dev/zero > /dev/null; echo after",
        ],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "after\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("berth: the berth's memory limit killed a process")
            && stderr.contains("memory_mb = 64"),
        "{stderr}"
    );
    // The command itself killed: its exit code, and the reason.
    let out = s.run_env(&["exec", "dev-1", "--", "exec tail < /dev/zero"], &[]);
    assert_eq!(out.status.code(), Some(137));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("killed by the berth's memory limit"),
        "{stderr}"
    );
    let j = s.json(&[
        "exec",
        "dev-1",
        "--json",
        "--",
        "tail < /dev/zero > /dev/null; true",
    ]);
    assert_eq!(j["oom_killed"], true, "{j}");
    assert_eq!(j["container_restarted"], false, "{j}");
    assert!(
        j["diagnostic"]
            .as_str()
            .unwrap_or("")
            .contains("out of memory"),
        "{j}"
    );
    let events = s.json(&["events", "--type", "command.oom_killed", "--json"]);
    assert_eq!(events.as_array().map(Vec::len), Some(3), "{events}");

    // The berth's uid is its own: doctor has nothing to say. As root its
    // worktree is on a disk of its own, and doctor says that too.
    let out = s.run_env(&["doctor"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("every berth's uid is its own"), "{stdout}");
    let disk_line = match berth_sandbox::disk::unavailable() {
        None => "live on a disk of its own",
        Some(_) => "disk use of /work is not limited",
    };
    assert!(stdout.contains(disk_line), "{stdout}");
}

/// A unix socket in front of the Docker engine's that counts the connections
/// made through it: bollard opens one per request, so it counts the API
/// calls of a `berth` process pointed at it with `DOCKER_HOST`.
struct CountingProxy {
    path: PathBuf,
    connections: std::sync::Arc<AtomicU32>,
}

impl CountingProxy {
    fn start(dir: &Path) -> CountingProxy {
        use std::os::unix::net::{UnixListener, UnixStream};
        let path = dir.join("docker-proxy.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let connections = std::sync::Arc::new(AtomicU32::new(0));
        let counted = connections.clone();
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                counted.fetch_add(1, Ordering::SeqCst);
                let Ok(engine) = UnixStream::connect("/var/run/docker.sock") else {
                    continue;
                };
                let pump = |mut from: UnixStream, mut to: UnixStream| {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                };
                pump(client.try_clone().unwrap(), engine.try_clone().unwrap());
                pump(engine, client);
            }
        });
        CountingProxy { path, connections }
    }

    fn host(&self) -> String {
        format!("unix://{}", self.path.display())
    }

    fn count(&self) -> u32 {
        self.connections.load(Ordering::SeqCst)
    }
}

#[test]
fn only_a_command_that_runs_contacts_the_engine_and_a_removed_container_comes_back() {
    if !docker_answers() {
        return;
    }
    image_build();
    let s = State::new("attach");
    s.activate("dev-1");
    s.up_mounted("dev-1");
    let proxy = CountingProxy::start(s.root());
    let env = [("DOCKER_HOST", proxy.host())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();

    // Pending (terminal needs approval by default), then refused: decided
    // and recorded, and the engine never asked.
    let out = s.run_env(&["exec", "dev-1", "--json", "--", "echo pending"], &env);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "pending", "{v}");
    s.ok(&["autonomy", "set", "dev-1", "terminal", "deny"]);
    let out = s.run_env(&["exec", "dev-1", "--json", "--", "echo refused"], &env);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["status"], "refused", "{v}");
    assert_eq!(proxy.count(), 0, "a decision alone made Docker calls");

    // A command that runs goes through the berth's exec agent: no Docker
    // call either.
    s.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let out = s.run_env(&["exec", "dev-1", "--", "echo ran"], &env);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "ran\n");
    assert_eq!(proxy.count(), 0, "Docker calls of one exec");

    // Removed behind berth's back: the next exec brings it up again.
    let gone = Command::new("docker")
        .args(["rm", "-f", &s.container("dev-1")])
        .output()
        .unwrap();
    assert!(gone.status.success());
    let out = s.run_env(&["exec", "dev-1", "--", "echo back"], &[]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "back\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // It idles as the exec agent's parent again.
    assert!(
        s.top("dev-1").contains("exec-agent-idle"),
        "{}",
        s.top("dev-1")
    );
}

/// `berth cancel` from another process stops a command in a mounted berth:
/// the kill runs inside the container, found by the action id in the
/// wrapper's token; the command and its background child are gone, the
/// action ends `cancelled` with its output so far, and the container is
/// the same one, still running commands.
#[test]
fn berth_cancel_stops_a_command_in_the_container_and_the_berth_stays_up() {
    if !docker_answers() {
        return;
    }
    let s = mounted_dev_1("cancel");
    let before = s.container_id();
    assert!(!before.is_empty());
    let command = "echo before; sleep 398 & sleep 399; echo never";
    let mut exec = s
        .cmd(&["exec", "dev-1", "--", command])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let id = loop {
        let running = s
            .json(&["actions", "--agent", "dev-1", "--json"])
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["action"]["command"] == command && a["status"] == "executing")
            .map(|a| a["id"].as_str().unwrap().to_string());
        let top = s.top("dev-1");
        if let Some(id) = running
            && top.contains("sleep 398")
            && top.contains("sleep 399")
        {
            break id;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the command never started in the container"
        );
        std::thread::sleep(Duration::from_millis(100));
    };

    let asked = Instant::now();
    let line = s.ok(&["cancel", &id]);
    assert!(
        line.contains("cancelled") && line.contains(&id[..8]),
        "{line}"
    );
    let status = loop {
        if let Some(status) = exec.try_wait().unwrap() {
            break status;
        }
        assert!(
            asked.elapsed() < Duration::from_secs(15),
            "berth exec did not return"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    eprintln!("mounted: cancel to exec's return: {:?}", asked.elapsed());
    assert!(!status.success());
    let output = exec.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "before\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cancelled by"), "{stderr}");

    let action = s
        .json(&["actions", "--agent", "dev-1", "--json"])
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id.as_str())
        .cloned()
        .unwrap();
    assert_eq!(action["status"], "cancelled", "{action}");
    assert_eq!(action["result"]["stdout"], "before\n", "{action}");
    let top = s.top("dev-1");
    assert!(
        !top.contains("sleep 398") && !top.contains("sleep 399"),
        "a process of the command survived: {top}"
    );
    assert_eq!(s.container_id(), before, "the same container");
    assert_eq!(s.ok(&["exec", "dev-1", "--", "echo alive"]), "alive\n");
    let restarted = s.json(&["events", "--type", "container.restarted", "--json"]);
    assert!(restarted.as_array().unwrap().is_empty(), "{restarted}");
}
