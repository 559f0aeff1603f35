//! `berth exec` handing its action to a `berth serve` on the same state
//! (`runtime/handoff/src/client.rs`, offered first in `berth`'s `main`): it prints and exits exactly as a run
//! in its own process does (output bytes, stderr, exit codes, `--json`,
//! pending and refused), the server's process runs it with the caller's
//! environment, Ctrl-C on the client cancels it, and where the server's
//! engine would act otherwise (an engine setting) or no server answers (a
//! stale socket) the client runs it itself. A
//! module of the `serve` test binary (`cargo test --test serve handoff::`).

use std::io::{BufRead as _, BufReader};
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use super::http::Target;
use super::server::{Served, State, wait_for};

/// A runner berth `dev-1` whose terminal actions run without asking.
fn berth() -> State {
    let state = State::with_project();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    state
}

/// The last action of `dev-1`.
fn last_action(state: &State) -> Value {
    let v: Value =
        serde_json::from_str(&state.ok(&["actions", "--json", "--agent", "dev-1"])).unwrap();
    v.as_array().unwrap().last().cloned().unwrap_or(Value::Null)
}

fn last_id(state: &State) -> String {
    last_action(state)["id"].as_str().unwrap().to_string()
}

/// The process (pid) that recorded itself as running the last action.
fn last_executor(state: &State) -> Option<u32> {
    last_action(state)["executor"]
        .as_str()?
        .split(':')
        .nth(1)?
        .parse()
        .ok()
}

/// What a run said: exit code, stdout bytes, stderr text.
fn said(out: &Output) -> (Option<i32>, Vec<u8>, String) {
    (
        out.status.code(),
        out.stdout.clone(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `--json`'s object without its action id (each run is a new action).
fn json_without_id(out: &Output) -> Value {
    let mut v: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert!(
        v["action_id"].as_str().is_some_and(|id| id.len() == 32),
        "{v}"
    );
    v.as_object_mut().unwrap().remove("action_id");
    v
}

#[test]
fn a_handed_off_exec_says_what_a_local_one_says_and_the_server_runs_it() {
    let state = berth();
    let served = Served::start(&state, &["--no-agent-loops"]);
    let line = "printf 'a\\000\\377b\\n'; echo to-err >&2; exit 7";
    let local = state.run(&["exec", "dev-1", "--local", "--", line]);
    assert_ne!(last_executor(&state), Some(served.pid()));
    let handed = state.run(&["exec", "dev-1", "--", line]);
    assert_eq!(
        last_executor(&state),
        Some(served.pid()),
        "the server's process ran it"
    );
    assert_eq!(said(&handed), said(&local));
    assert_eq!(said(&handed).0, Some(7));
    assert_eq!(said(&handed).1, b"a\0\xffb\n", "bytes as written");
    assert_eq!(said(&handed).2, "to-err\n");

    // 1.3 MB, streamed in many pieces.
    let big = "seq 1 200000";
    let handed = state.run(&["exec", "dev-1", "--", big]);
    assert_eq!(last_executor(&state), Some(served.pid()));
    let lines: String = (1..=200_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(handed.stdout, lines.as_bytes());

    // --json: the same object, but for the action's id.
    for line in ["echo hi; exit 3", "sleep 0.1; echo late >&2", big] {
        let local = state.run(&["exec", "dev-1", "--local", "--json", "--", line]);
        let handed = state.run(&["exec", "dev-1", "--json", "--", line]);
        assert_eq!(last_executor(&state), Some(served.pid()));
        assert_eq!(handed.status.code(), local.status.code(), "{line}");
        assert_eq!(json_without_id(&handed), json_without_id(&local), "{line}");
    }

    // A deadline: the same exit code and the same sentence about it.
    let timed = |local: bool| {
        let mut args = vec!["exec", "dev-1", "--timeout", "1"];
        if local {
            args.push("--local");
        }
        args.extend(["--", "echo started; sleep 30"]);
        let out = state.run(&args);
        (said(&out), last_executor(&state) == Some(served.pid()))
    };
    let (local, local_by_server) = timed(true);
    let (handed, by_server) = timed(false);
    assert!(!local_by_server && by_server);
    assert_eq!(handed, local);
    assert_eq!(handed.1, b"started\n");
    assert!(handed.2.starts_with("berth: "), "{}", handed.2);
    assert_ne!(handed.0, Some(0));

    // Pending and refused: the same codes and sentences, but for the ids.
    state.ok(&["autonomy", "set", "dev-1", "terminal", "require_approval"]);
    let held = |args: &[&str]| {
        let out = state.run(args);
        let id = last_id(&state);
        (out.status.code(), said(&out).2.replace(&id[..8], "ID"))
    };
    let local = held(&["exec", "dev-1", "--local", "--", "echo held"]);
    let handed = held(&["exec", "dev-1", "--", "echo held"]);
    assert_eq!(local.0, Some(3), "{}", local.1);
    assert_eq!(handed, local);
    let local = state.run(&["exec", "dev-1", "--local", "--", "sudo rm -rf /"]);
    let handed = state.run(&["exec", "dev-1", "--", "sudo rm -rf /"]);
    assert_eq!(local.status.code(), Some(4), "{}", said(&local).2);
    assert_eq!(said(&handed), said(&local));

    // An unknown agent (refused before the stream: the client runs it and
    // says its own error) and a berth that is down (the server's error, in
    // the stream): both as without a server.
    for agent in ["ghost", "dev-1"] {
        if agent == "dev-1" {
            state.ok(&["down", "dev-1", "--keep-worktree"]);
        }
        let (code, err) = state.err(&["exec", agent, "--", "true"]);
        let (local_code, local_err) = state.err(&["exec", agent, "--local", "--", "true"]);
        assert_eq!((code, &err), (local_code, &local_err));
        assert!(code == 2 && err.starts_with("berth: "), "{err}");
    }
    let (code, _) = served.stop();
    assert_eq!(code, Some(0));
}

/// `berth` hands an exec to the server first, before it starts anything
/// else (`runtime/src/early_handoff.rs`): a copy of the binary alone, with
/// no shim beside it to confine a command of its own, hands off and prints
/// as a run does; the same copy with `--local` runs the exec itself and
/// says what it lacks.
#[test]
fn berth_hands_an_exec_off_before_it_needs_anything_beside_it() {
    let state = berth();
    let served = Served::start(&state, &["--no-agent-loops"]);
    let alone = tempfile::tempdir().unwrap();
    let lone = alone.path().join("berth");
    std::fs::copy(env!("CARGO_BIN_EXE_berth"), &lone).unwrap();
    let out = state
        .command_of(&lone, &["exec", "dev-1", "--json", "--", "echo alone"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", said(&out).2);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["stdout"], "alone\n");
    assert_eq!(last_executor(&state), Some(served.pid()));
    let handed = last_id(&state);

    let out = state
        .command_of(&lone, &["exec", "dev-1", "--local", "--", "echo not-run"])
        .output()
        .unwrap();
    let (code, stdout, err) = said(&out);
    assert_ne!(code, Some(0), "{err}");
    assert!(!String::from_utf8_lossy(&stdout).contains("not-run"));
    assert!(err.contains("berth-exec-shim"), "{err}");
    assert_ne!(last_id(&state), handed, "run here, as its own action");
    assert_ne!(last_executor(&state), Some(served.pid()));
    let (code, _) = served.stop();
    assert_eq!(code, Some(0));
}

#[test]
fn a_handed_off_command_sees_the_callers_environment_and_an_engine_setting_keeps_it_local() {
    let state = berth();
    let served = Served::start(&state, &["--no-agent-loops"]);
    // TZ and PATH pass from berth's environment to a runner's commands: the
    // caller's, not the server's.
    let path = format!("{}:/opt/caller-only", std::env::var("PATH").unwrap());
    let out = state
        .command(&["exec", "dev-1", "--", "printenv TZ PATH"])
        .env("TZ", "Pacific/Chatham")
        .env("PATH", &path)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with(&format!("Pacific/Chatham\n{path}")),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        last_executor(&state),
        Some(served.pid()),
        "the server ran it"
    );
    // Without them, the command has none of them.
    let out = state
        .command(&["exec", "dev-1", "--", "printenv TZ || echo unset"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "unset\n");
    assert_eq!(last_executor(&state), Some(served.pid()));
    // The log level is no engine setting; the Docker engine's address is:
    // the client runs that one itself.
    for (name, value, by_server) in [
        ("BERTH_LOG", "debug", true),
        ("DOCKER_HOST", "unix:///nowhere.sock", false),
    ] {
        let out = state
            .command(&["exec", "dev-1", "--", "true"])
            .env(name, value)
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}");
        assert_eq!(
            last_executor(&state) == Some(served.pid()),
            by_server,
            "{name}"
        );
    }

    // A server gone without removing its socket: the client runs it.
    served.crash();
    assert!(state.state().join("berth.sock").exists());
    assert_eq!(state.ok(&["exec", "dev-1", "--", "echo here"]), "here\n");
}

#[test]
fn a_server_on_tcp_runs_a_shells_exec_through_the_states_socket() {
    let state = berth();
    let socket = state.state().join("berth.sock");
    let page = Served::start(&state, &["--listen", "127.0.0.1:0", "--no-agent-loops"]);
    assert!(matches!(page.target, Target::Tcp(_)));
    assert!(
        socket.exists(),
        "the TCP server answers on the state's socket"
    );
    assert_eq!(state.ok(&["exec", "dev-1", "--", "echo here"]), "here\n");
    assert_eq!(
        last_executor(&state),
        Some(page.pid()),
        "the TCP server ran it"
    );
    // The socket's peers need no token; the TCP address still does.
    assert_eq!(
        page.client(&state).call("GET", "/api/agents", None).status,
        200
    );

    // A second server on TCP leaves the socket to the first, and says so.
    let second = Served::start(&state, &["--listen", "127.0.0.1:0", "--no-agent-loops"]);
    assert!(
        second.log().contains("not answering on the state's socket"),
        "{}",
        second.log()
    );
    assert_eq!(state.ok(&["exec", "dev-1", "--", "echo again"]), "again\n");
    assert_eq!(last_executor(&state), Some(page.pid()));

    // The first stops: its socket goes with it, and the shell's exec runs
    // in its own process (the second server never took the socket).
    assert_eq!(page.stop().0, Some(0));
    assert!(!socket.exists(), "the socket was removed at stop");
    assert_eq!(state.ok(&["exec", "dev-1", "--", "echo alone"]), "alone\n");
    let executor = last_executor(&state);
    assert!(
        executor.is_some() && executor != Some(second.pid()),
        "{executor:?}"
    );
}

#[test]
fn ctrl_c_on_a_handed_off_exec_cancels_it_in_the_server() {
    let state = berth();
    let served = Served::start(&state, &["--no-agent-loops"]);
    let mut child = state
        .command(&[
            "exec",
            "dev-1",
            "--",
            "echo before; sleep 306.5; echo never",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    assert_eq!(first, "before\n", "output arrives while the command runs");
    wait_for("the sleep started", Duration::from_secs(30), || {
        super::runs(&["sleep", "306.5"]).then_some(())
    });
    assert_eq!(last_executor(&state), Some(served.pid()));
    // SAFETY: kill(2) on a child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let status = child.wait().unwrap();
    assert!(!status.success());
    let action = wait_for("the action cancelled", Duration::from_secs(30), || {
        let last = last_action(&state);
        (last["status"] == "cancelled").then_some(last)
    });
    assert!(!super::runs(&["sleep", "306.5"]), "its command is gone");
    assert_eq!(action["result"]["stdout"], "before\n", "{action}");
    assert!(
        action["diagnostic"]
            .as_str()
            .is_some_and(|d| d.starts_with("cancelled by ")),
        "{action}"
    );
    // The server goes on serving the berth.
    assert_eq!(state.ok(&["exec", "dev-1", "--", "echo after"]), "after\n");
    assert_eq!(last_executor(&state), Some(served.pid()));
}

/// `POST /api/actions/stream` as a program other than `berth exec` meets it:
/// each line of the answer is one of the documented shapes, the output
/// lines carry the command's bytes, an error found while proposing is the
/// last line, and a request the server will not run as asked (an engine
/// setting otherwise than here, a body without an agent) is a JSON error
/// before any stream.
#[test]
fn the_stream_route_answers_in_its_documented_lines() {
    use base64::Engine as _;
    let state = berth();
    let served = Served::start(&state, &["--no-agent-loops"]);
    let client = served.client(&state);
    let doc = berth_server::openapi::document().unwrap();
    let line_schema = serde_json::json!({"$ref": "#/components/schemas/ProposeStreamLine"});
    let stream = |body: Value| {
        let r = client.call("POST", "/api/actions/stream", Some(&body));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
        let lines: Vec<Value> = r
            .text()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        for (i, l) in lines.iter().enumerate() {
            berth_server::openapi::check(&doc, &line_schema, l, &format!("line {i}"))
                .unwrap_or_else(|e| panic!("{e}"));
        }
        lines
    };
    let terminal = |command: &str| serde_json::json!({"agent": "dev-1", "action": {"type": "terminal", "command": command}});

    let lines = stream(terminal("printf 'x\\001y'; printf err >&2; exit 5"));
    let decoded = |key: &str| -> Vec<u8> {
        lines
            .iter()
            .filter_map(|l| l[key].as_str())
            .flat_map(|b| base64::engine::general_purpose::STANDARD.decode(b).unwrap())
            .collect()
    };
    assert_eq!(decoded("stdout"), b"x\x01y");
    assert_eq!(decoded("stderr"), b"err");
    let end = &lines.last().unwrap()["end"];
    assert_eq!(end["status"], "executed", "{end}");
    assert_eq!(end["exit_code"], 5);
    assert!(end["stdout"].is_null(), "streamed, not sent twice: {end}");

    // Without output lines, the end holds the recorded output.
    let mut quiet = terminal("echo kept");
    quiet["output"] = Value::Bool(false);
    let lines = stream(quiet);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["end"]["stdout"], "kept\n");

    // An agent nobody activated: found while proposing, the last line.
    let mut ghost = terminal("true");
    ghost["agent"] = Value::from("ghost");
    let lines = stream(ghost);
    assert_eq!(lines.last().unwrap()["error"]["code"], "unknown_agent");

    // An engine setting the server does not share: nothing proposed.
    let before = last_id(&state);
    let mut other = terminal("true");
    // The server's environment is this test's (tests/support/server.rs),
    // but for the Docker engine's address.
    let mut caller: serde_json::Map<String, Value> =
        std::env::vars().map(|(n, v)| (n, Value::from(v))).collect();
    caller.insert("DOCKER_HOST".into(), "unix:///elsewhere.sock".into());
    other["caller_env"] = Value::Object(caller);
    let r = client.call("POST", "/api/actions/stream", Some(&other));
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["error"]["code"], "caller_environment_differs");
    assert!(r.text().contains("DOCKER_HOST"), "{}", r.text());
    assert_eq!(last_id(&state), before, "nothing was proposed");
    let r = client.call(
        "POST",
        "/api/actions/stream",
        Some(&serde_json::json!({"action": {"type": "terminal", "command": "true"}})),
    );
    assert_eq!(r.status, 422, "{}", r.text());
}
