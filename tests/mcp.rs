#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `berth mcp` with a real MCP client: the official Python SDK (`mcp`)
//! drives the server over stdio (tests/mcp_client.py), against a real store,
//! real git and the runner. Between two calls of one session a person acts
//! through the CLI (`berth approve`), as they would.
//!
//! The client's Python comes from `$BERTH_MCP_PYTHON`, else the venv `.ci/run`
//! makes (`~/.cache/berth-mcp-venv`), else `python3`; one without the `mcp`
//! package fails the test with the command that installs it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

/// An initialised state with project `demo` and agent `dev-1`, up in runner mode.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Drop for Fixture {
    /// A berth left up keeps its own disk mounted in the state directory
    /// (berth as root): it goes before the directory does, failed or not.
    fn drop(&mut self) {
        berth_engine::release_disks_under(&self.dir.path().join("state"));
    }
}

impl Fixture {
    fn new() -> Fixture {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        let src = f.dir.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("a.txt"), "a\n").unwrap();
        git(&src, &["add", "a.txt"]);
        git(&src, &["commit", "-q", "-m", "init"]);
        f.ok(&["init"]);
        f.ok(&["project", "add", "demo", "--from", src.to_str().unwrap()]);
        f.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
        f.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
        f
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

    /// The agent's worktree on the host (`/work` in its frame).
    fn worktree(&self, agent: &str) -> PathBuf {
        let ls: Value = serde_json::from_str(&self.ok(&["ls", "--json"])).unwrap();
        let b = ls
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["agent"] == agent)
            .unwrap();
        PathBuf::from(b["worktree"].as_str().unwrap())
    }

    fn client(&self, agent: &str) -> Client {
        Client::start(&self.state(), agent)
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

/// The Python that has the official MCP SDK.
fn python() -> PathBuf {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("BERTH_MCP_PYTHON") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache/berth-mcp-venv/bin/python"));
    }
    candidates.push(PathBuf::from("python3"));
    for c in &candidates {
        let ok = Command::new(c)
            .args(["-c", "import mcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return c.clone();
        }
    }
    panic!(
        "no Python with the MCP SDK (tried {candidates:?}): run `python3 -m venv ~/.cache/berth-mcp-venv && \
         ~/.cache/berth-mcp-venv/bin/pip install mcp` (as .ci/run does), or set BERTH_MCP_PYTHON"
    );
}

/// One MCP session: the Python client with `berth mcp` as its server.
struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    initialized: Value,
}

impl Client {
    fn start(state: &Path, agent: &str) -> Client {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client.py");
        let mut child = Command::new(python())
            .arg(script)
            .args([env!("CARGO_BIN_EXE_berth"), "mcp", "--agent", agent])
            .env("BERTH_HOME", state)
            .env("USER", "ada")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut c = Client {
            child,
            stdin,
            lines,
            initialized: Value::Null,
        };
        c.initialized = c.next();
        c
    }

    fn next(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|e| panic!("the MCP client said nothing ({e}); its stderr is above"));
        serde_json::from_str(&line).unwrap()
    }

    fn send(&mut self, req: Value) -> Value {
        writeln!(self.stdin, "{req}").unwrap();
        self.stdin.flush().unwrap();
        self.next()
    }

    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.send(json!({"op": "call", "tool": tool, "args": args}))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A tool result's structured content without what differs run to run.
fn stable(result: &Value) -> Value {
    let mut s = result["structured"].clone();
    if let Some(o) = s.as_object_mut() {
        o.remove("action_id");
        if let Some(r) = o.get_mut("result").and_then(Value::as_object_mut) {
            r.remove("duration_ms");
            r.remove("commit");
        }
    }
    s
}

fn action_id(result: &Value) -> String {
    result["structured"]["action_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no action id in {result}"))
        .to_string()
}

#[test]
fn initialize_lists_the_tools_with_their_schemas() {
    let f = Fixture::new();
    let mut c = f.client("dev-1");
    assert_eq!(
        (&c.initialized["server"], &c.initialized["tools_capability"]),
        (&json!("berth"), &json!(true)),
        "{}",
        c.initialized
    );
    let tools = c.send(json!({"op": "list_tools"}));
    // name → (properties, required): every tool takes exactly these.
    let mut got = serde_json::Map::new();
    for t in tools["tools"].as_array().unwrap() {
        let schema = &t["input_schema"];
        assert_eq!(schema["type"], "object", "{t}");
        assert!(
            t["description"].as_str().is_some_and(|d| d.len() > 40),
            "{t}"
        );
        let props = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (name, p) in &props {
            assert!(
                p["description"].as_str().is_some_and(|d| !d.is_empty()),
                "{}.{name} has no description",
                t["name"]
            );
        }
        let mut required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().map(|v| v.as_str().unwrap()).collect())
            .unwrap_or_default();
        required.sort_unstable();
        got.insert(
            t["name"].as_str().unwrap().to_string(),
            json!({"properties": props.keys().collect::<Vec<_>>(), "required": required}),
        );
    }
    assert_eq!(
        Value::Object(got),
        json!({
            "action_status": {"properties": ["id"], "required": ["id"]},
            "commit": {"properties": ["message"], "required": ["message"]},
            "list_files": {"properties": ["path"], "required": []},
            "open_pr": {"properties": ["title"], "required": ["title"]},
            "push": {"properties": [], "required": []},
            "read_file": {"properties": ["path"], "required": ["path"]},
            "run_command": {"properties": ["command", "cwd", "timeout_secs"], "required": ["command"]},
            "write_file": {"properties": ["content", "path"], "required": ["content", "path"]},
        })
    );
}

#[test]
fn commands_run_wait_for_a_person_or_are_refused() {
    let f = Fixture::new();
    let wt = f.worktree("dev-1");
    // Keep 64 bytes of each stream, so a long output shows its cut.
    let config = f.state().join("projects/demo/berth.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        text.replace("output_cap_bytes = 1048576", "output_cap_bytes = 64"),
    )
    .unwrap();
    std::fs::write(wt.join("long.txt"), "0123456789\n".repeat(10)).unwrap();
    let mut c = f.client("dev-1");

    // Allowed by the project's default rules: it runs, the output comes back.
    let r = c.call("run_command", json!({"command": "cat a.txt && ls a.txt"}));
    assert_eq!(
        (&r["is_error"], stable(&r)),
        (
            &json!(false),
            json!({
                "status": "executed", "succeeded": true, "diagnostic": null,
                "result": {
                    "kind": "terminal", "command": "cat a.txt && ls a.txt", "cwd": "/work",
                    "exit_code": 0, "timed_out": false,
                    "stdout": "a\na.txt\n", "stderr": "",
                    "stdout_truncated": false, "stderr_truncated": false,
                }
            })
        ),
        "{r}"
    );
    assert!(
        r["text"].as_str().unwrap().starts_with("exit code 0 "),
        "{r}"
    );

    // It ran and failed: the exit code and stderr, as a tool error.
    let r = c.call("run_command", json!({"command": "ls missing.txt"}));
    assert_eq!(r["is_error"], true, "{r}");
    assert_eq!(r["structured"]["result"]["exit_code"], 2, "{r}");
    assert!(
        r["structured"]["result"]["stderr"]
            .as_str()
            .unwrap()
            .contains("missing.txt"),
        "{r}"
    );

    // Output beyond the cap: the tail is kept and the cut said.
    let r = c.call("run_command", json!({"command": "cat long.txt"}));
    assert_eq!(
        (
            &r["structured"]["result"]["stdout_truncated"],
            r["structured"]["result"]["stdout"].as_str().unwrap().len()
        ),
        (&json!(true), 64),
        "{r}"
    );
    assert!(
        r["text"]
            .as_str()
            .unwrap()
            .contains("--- stdout (truncated: only the last part is kept) ---"),
        "{r}"
    );

    // No rule and no autonomy for terminal: it waits; nothing ran.
    let r = c.call("run_command", json!({"command": "echo hi > out.txt"}));
    let id = action_id(&r);
    assert_eq!(
        (&r["is_error"], stable(&r)),
        (
            &json!(false),
            json!({
                "status": "pending", "stage": "autonomy",
                "reason": "no rule matches `echo hi`; no autonomy is set for this action type: approval is required by default",
                "approve": format!("berth approve {id}"),
                "deny": format!("berth deny {id}"),
            })
        ),
        "{r}"
    );
    assert!(
        r["text"]
            .as_str()
            .unwrap()
            .contains(&format!("A person approves it with `berth approve {id}`")),
        "{r}"
    );
    assert!(!wt.join("out.txt").exists());
    let s = c.call("action_status", json!({"id": id}));
    assert_eq!(s["structured"]["status"], "pending", "{s}");

    // A person approves it from the CLI: it runs there; the agent sees it.
    f.ok(&["approve", &id]);
    assert_eq!(std::fs::read_to_string(wt.join("out.txt")).unwrap(), "hi\n");
    let s = c.call("action_status", json!({"id": &id[..8]}));
    assert_eq!(
        (&s["structured"]["status"], &s["structured"]["succeeded"]),
        (&json!("executed"), &json!(true)),
        "{s}"
    );

    // A person denies another: the agent sees the refusal and who made it.
    let r = c.call("run_command", json!({"command": "touch later.txt"}));
    let id = action_id(&r);
    f.ok(&["deny", &id, "--reason", "not now"]);
    let s = c.call("action_status", json!({"id": id}));
    assert_eq!(
        (
            &s["is_error"],
            &s["structured"]["status"],
            &s["structured"]["reason"]
        ),
        (
            &json!(true),
            &json!("refused"),
            &json!("denied by ada: not now")
        ),
        "{s}"
    );
    assert!(!wt.join("later.txt").exists());

    // A built-in deny template: refused, with the stage and the reason.
    let r = c.call("run_command", json!({"command": "ls && rm -rf /"}));
    assert_eq!(
        (&r["is_error"], stable(&r)),
        (
            &json!(true),
            json!({
                "status": "refused", "stage": "deny_template",
                "reason": "`rm -rf /` meets the built-in deny template: `rm -r` of `/`",
            })
        ),
        "{r}"
    );
    assert!(
        r["text"]
            .as_str()
            .unwrap()
            .starts_with("REFUSED: nothing ran."),
        "{r}"
    );

    // The same log the CLI reads: every action by the agent, as the agent.
    let actions: Value = serde_json::from_str(&f.ok(&["actions", "--json"])).unwrap();
    let seen: Vec<(&str, &str, &str)> = actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["proposer"]["kind"].as_str().unwrap(),
                a["proposer"]["id"].as_str().unwrap(),
                a["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("agent", "dev-1", "executed"),
            ("agent", "dev-1", "failed"),
            ("agent", "dev-1", "executed"),
            ("agent", "dev-1", "executed"),
            ("agent", "dev-1", "denied"),
            ("agent", "dev-1", "refused"),
        ]
    );
}

#[test]
fn files_round_trip_inside_the_worktree_and_ask_outside_it() {
    let f = Fixture::new();
    let wt = f.worktree("dev-1");
    f.ok(&["autonomy", "set", "dev-1", "file_write", "auto_approve"]);
    std::os::unix::fs::symlink("/etc", wt.join("etc-link")).unwrap();
    let mut c = f.client("dev-1");

    let r = c.call(
        "write_file",
        json!({"path": "notes/todo.txt", "content": "first\nsecond\n"}),
    );
    assert_eq!(
        stable(&r),
        json!({
            "status": "executed", "succeeded": true, "diagnostic": null,
            "result": {"kind": "file_write", "path": "/work/notes/todo.txt", "bytes": 13},
        }),
        "{r}"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("notes/todo.txt")).unwrap(),
        "first\nsecond\n"
    );

    let r = c.call("read_file", json!({"path": "/work/notes/todo.txt"}));
    assert_eq!(
        (r["text"].as_str().unwrap(), stable(&r)),
        (
            "first\nsecond\n",
            json!({
                "status": "executed", "succeeded": true, "diagnostic": null,
                "result": {"kind": "file_read", "path": "/work/notes/todo.txt", "content": "first\nsecond\n", "bytes": 13},
            })
        ),
        "{r}"
    );

    let r = c.call("list_files", json!({"path": "notes"}));
    assert_eq!(
        stable(&r)["result"],
        json!({"kind": "file_read", "path": "/work/notes", "content": "todo.txt\n", "bytes": 9}),
        "{r}"
    );
    let r = c.call("list_files", json!({}));
    assert_eq!(
        r["structured"]["result"]["content"]
            .as_str()
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with(".git"))
            .collect::<Vec<_>>(),
        vec!["a.txt", "etc-link@", "notes/"],
        "{r}"
    );

    // Outside /work: the scope stage asks (file autonomy is not auto mode),
    // and nothing is read or written.
    let cases = [
        (
            "read_file",
            json!({"path": "/etc/hostname"}),
            "/etc/hostname is outside the project scope",
        ),
        (
            "write_file",
            json!({"path": "/tmp/berth-mcp-escape.txt", "content": "x"}),
            "/tmp/berth-mcp-escape.txt is outside the project scope",
        ),
        (
            "write_file",
            json!({"path": "../escape.txt", "content": "x"}),
            "/escape.txt is outside the project scope",
        ),
        (
            "list_files",
            json!({"path": "/"}),
            "/ is outside the project scope",
        ),
    ];
    for (tool, args, reason) in cases {
        let r = c.call(tool, args.clone());
        assert_eq!(
            (
                &r["structured"]["status"],
                &r["structured"]["stage"],
                &r["structured"]["reason"]
            ),
            (&json!("pending"), &json!("scope"), &json!(reason)),
            "{tool} {args}: {r}"
        );
    }
    assert!(!Path::new("/tmp/berth-mcp-escape.txt").exists());

    // Inside as written, outside through a link: refused, with where it
    // leads (no approval makes berth follow it).
    let r = c.call("read_file", json!({"path": "etc-link/hostname"}));
    assert_eq!(r["structured"]["status"], "refused", "{r}");
    assert!(
        r["structured"]["reason"]
            .as_str()
            .unwrap()
            .contains("resolves to /etc/hostname through the link(s) /work/etc-link -> /etc"),
        "{r}"
    );
}

#[test]
fn commit_push_and_open_pr_deliver_the_agents_branch() {
    let f = Fixture::new();
    f.ok(&["autonomy", "set", "dev-1", "file_write", "auto_approve"]);
    let mut c = f.client("dev-1");
    let r = c.call("write_file", json!({"path": "b.txt", "content": "b\n"}));
    assert_eq!(r["structured"]["succeeded"], true, "{r}");

    let r = c.call("commit", json!({"message": "add b"}));
    assert_eq!(
        stable(&r),
        json!({
            "status": "executed", "succeeded": true, "diagnostic": null,
            "result": {"kind": "git_commit", "branch": "agent/dev-1/scratch", "created": true},
        }),
        "{r}"
    );
    let commit = r["structured"]["result"]["commit"]
        .as_str()
        .unwrap()
        .to_string();

    let r = c.call("push", json!({}));
    assert_eq!(
        r["structured"]["result"],
        json!({"kind": "git_push", "branch": "agent/dev-1/scratch", "commit": commit}),
        "{r}"
    );

    let r = c.call("open_pr", json!({"title": "Add b"}));
    assert_eq!(
        (
            &r["structured"]["result"]["kind"],
            &r["structured"]["result"]["number"],
            &r["structured"]["result"]["base"]
        ),
        (&json!("pr_open"), &json!(1), &json!("main")),
        "{r}"
    );
    let prs = f.ok(&["pr", "list"]);
    assert!(prs.contains("Add b"), "{prs}");
}

/// (tool, arguments, the whole error message).
type ErrorCall = (&'static str, Value, String);

#[test]
fn setup_errors_are_tool_errors_that_say_what_to_do() {
    let f = Fixture::new();
    f.ok(&["agent", "activate", "dev-2", "--project", "demo"]);
    let dev1_action: Value =
        serde_json::from_str(&f.ok(&["exec", "dev-1", "--json", "--", "ls"])).unwrap();
    let dev1_action = dev1_action["action_id"].as_str().unwrap().to_string();
    let empty = tempfile::tempdir().unwrap();
    let no_berth = "agent `dev-2` has no berth: run `berth up dev-2 --project demo`";
    // One session per setup; every call in it fails with its message, and
    // the session goes on (the server did not crash).
    let sessions: Vec<(Client, Vec<ErrorCall>)> = vec![
        (
            f.client("ghost"),
            vec![(
                "run_command",
                json!({"command": "ls"}),
                "unknown agent `ghost`: list them with `berth ls`, create one with `berth agent activate AGENT --project P`".into(),
            )],
        ),
        (
            f.client("dev-2"),
            vec![
                ("run_command", json!({"command": "ls"}), no_berth.into()),
                ("push", json!({}), no_berth.into()),
                (
                    "action_status",
                    json!({"id": dev1_action}),
                    format!("action {dev1_action} belongs to agent `dev-1`, not to you (`dev-2`)"),
                ),
                (
                    "action_status",
                    json!({"id": "ffffffff"}),
                    "unknown action `ffffffff`: list them with `berth actions`".into(),
                ),
            ],
        ),
        (
            Client::start(empty.path(), "dev-1"),
            vec![(
                "read_file",
                json!({"path": "a.txt"}),
                format!(
                    "no berth state at {}: run `berth init` first (the state directory comes from --state, then $BERTH_HOME, then ~/.local/share/berth)",
                    empty.path().display()
                ),
            )],
        ),
    ];
    for (mut c, calls) in sessions {
        for (tool, args, message) in calls {
            let r = c.call(tool, args.clone());
            assert_eq!(
                (
                    &r["is_error"],
                    r["text"].as_str().unwrap(),
                    &r["structured"]
                ),
                (
                    &json!(true),
                    message.as_str(),
                    &json!({"status": "error", "error": message})
                ),
                "{tool} {args}"
            );
        }
        let tools = c.send(json!({"op": "list_tools"}));
        assert_eq!(tools["tools"].as_array().unwrap().len(), 8);
        // Arguments that do not fit the schema: a tool error naming the field.
        let r = c.call("run_command", json!({"cwd": "/work"}));
        assert_eq!(r["is_error"], true, "{r}");
        assert!(
            r["text"]
                .as_str()
                .unwrap()
                .contains("missing field `command`"),
            "{r}"
        );
    }
}

#[test]
fn an_action_under_way_is_recorded_when_the_client_goes_away() {
    let f = Fixture::new();
    let wt = f.worktree("dev-1");
    f.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let mut c = f.client("dev-1");
    // The client cancels the call and closes the session (stdin) after
    // 0.3 s; it kills the server 2 s later if it is still there.
    let r = c.send(json!({
        "op": "call_and_leave", "tool": "run_command",
        "args": {"command": "sleep 1 && echo done > left.txt"}, "after_secs": 0.3,
    }));
    assert_eq!(r, json!({"left": true}));
    let status = c.child.wait().unwrap();
    assert!(status.success(), "{status}");
    assert_eq!(
        std::fs::read_to_string(wt.join("left.txt")).unwrap(),
        "done\n"
    );
    let actions: Value = serde_json::from_str(&f.ok(&["actions", "--json"])).unwrap();
    let last = actions.as_array().unwrap().last().unwrap();
    assert_eq!(
        (&last["status"], &last["result"]["exit_code"]),
        (&json!("executed"), &json!(0)),
        "{last}"
    );
}
