#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `berth mcp` with a real MCP client: the official Python SDK (`mcp`)
//! drives the server over stdio (tests/mcp_client.py), against a real store,
//! real git and the runner. Between two calls of one session a person acts
//! through the CLI (`berth approve`), as they would. A second, independent
//! client library (FastMCP, tests/mcp_fastmcp_client.py) checks conformance,
//! and raw JSON-RPC lines check what no SDK sends (batches, invalid JSON,
//! malformed params). Each test quotes the specification passage it relies
//! on (MCP revisions 2025-03-26, 2025-06-18, 2025-11-25; JSON-RPC 2.0).
//!
//! The client's Python comes from `$BERTH_MCP_PYTHON`, else the venv `.ci/run`
//! makes (`~/.cache/berth-mcp-venv`), else `python3`; one without the `mcp`
//! package fails the test with the command that installs it.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fixture::Fixture;

/// This module's fixture: the shared one, with project `demo` and agent
/// `dev-1` up in runner mode.
struct Mcp(Fixture);

impl std::ops::Deref for Mcp {
    type Target = Fixture;
    fn deref(&self) -> &Fixture {
        &self.0
    }
}

impl Mcp {
    fn new() -> Mcp {
        let f = Fixture::new().with_project();
        f.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
        f.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
        Mcp(f)
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

/// The Python that has the official MCP SDK.
pub(crate) fn python() -> PathBuf {
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
pub(crate) struct Client {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    initialized: Value,
}

impl Client {
    pub(crate) fn start(state: &Path, agent: &str) -> Client {
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

    pub(crate) fn call(&mut self, tool: &str, args: Value) -> Value {
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
    let f = Mcp::new();
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
            "comment_pr": {"properties": ["body", "line", "path", "pr", "reply_to"], "required": ["body"]},
            "commit": {"properties": ["message"], "required": ["message"]},
            "list_files": {"properties": ["path"], "required": []},
            "open_pr": {"properties": ["title"], "required": ["title"]},
            "push": {"properties": [], "required": []},
            "read_file": {"properties": ["path"], "required": ["path"]},
            "resolve_pr_thread": {"properties": ["pr", "thread"], "required": ["thread"]},
            "run_command": {"properties": ["command", "cwd", "description", "timeout_secs"], "required": ["command"]},
            "write_file": {"properties": ["content", "path"], "required": ["content", "path"]},
        })
    );
}

#[test]
fn commands_run_wait_for_a_person_or_are_refused() {
    let f = Mcp::new();
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
    // With its stated intent, carried on the proposal for the person.
    let r = c.call(
        "run_command",
        json!({"command": "touch later.txt", "description": "mark the build as done"}),
    );
    let id = action_id(&r);
    let pending: Value = serde_json::from_str(&f.ok(&["actions", "--pending", "--json"])).unwrap();
    let shown = pending
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id.as_str())
        .unwrap_or_else(|| panic!("{id} in {pending}"));
    assert_eq!(
        shown["params"]["description"], "mark the build as done",
        "{shown}"
    );
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
    let f = Mcp::new();
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
    let f = Mcp::new();
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
    let first = r["structured"]["result"]["pr"].clone();
    assert_eq!(r["structured"]["result"]["already_open"], false, "{r}");

    // Again, for the same branch at the same head: the open PR, not #2.
    for title in ["Add b", "Add b again"] {
        let r = c.call("open_pr", json!({"title": title}));
        assert_eq!(
            (
                &r["structured"]["result"]["number"],
                &r["structured"]["result"]["pr"],
                &r["structured"]["result"]["already_open"]
            ),
            (&json!(1), &first, &json!(true)),
            "{r}"
        );
        assert!(
            r["text"]
                .as_str()
                .unwrap()
                .contains("PR #1 (agent/dev-1/scratch into main) is already open at this head: no second PR was opened"),
            "{r}"
        );
    }
    let prs = f.ok(&["pr", "list"]);
    assert!(prs.contains("Add b"), "{prs}");
    assert_eq!(
        prs.lines()
            .filter(|l| l.contains("agent/dev-1/scratch"))
            .count(),
        1,
        "{prs}"
    );
}

/// (tool, arguments, the whole error message).
type ErrorCall = (&'static str, Value, String);

#[test]
fn setup_errors_are_tool_errors_that_say_what_to_do() {
    let f = Mcp::new();
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
        assert_eq!(tools["tools"].as_array().unwrap().len(), 10);
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
    let f = Mcp::new();
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

/// `berth mcp` with no client library in between: JSON-RPC lines on its
/// stdin, its answers read line by line from its stdout.
struct RawSession {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl RawSession {
    fn start(state: &Path, agent: &str) -> RawSession {
        let mut child = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(["mcp", "--agent", agent])
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
        RawSession {
            child,
            stdin,
            lines,
        }
    }

    fn write(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    fn read(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("berth mcp answered nothing ({e})"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Writes `line` and reads the one answer it gets.
    fn ask(&mut self, line: &str) -> Value {
        self.write(line);
        self.read()
    }

    fn initialize(&mut self, version: &str) -> Value {
        let init = self.ask(
            &json!({
                "jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {
                    "protocolVersion": version, "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            })
            .to_string(),
        );
        self.write(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        init
    }
}

impl Drop for RawSession {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The protocol revision the server answers `initialize` with, per revision
/// a client asks for. MCP 2025-03-26, basic/index ("Batching"): "MCP
/// implementations MAY support sending JSON-RPC batches, but MUST support
/// receiving JSON-RPC batches." The 2025-06-18 changelog: "Remove support
/// for JSON-RPC batching". Berth does not speak 2025-03-26; lifecycle
/// (2025-06-18, "Version Negotiation"): "If the server supports the requested
/// protocol version, it MUST respond with the same version. Otherwise, the
/// server MUST respond with another protocol version it supports. This SHOULD
/// be the latest version supported by the server."
#[test]
fn protocol_revisions_offered_leave_out_the_one_that_requires_batches() {
    let f = Mcp::new();
    let mut answered = Vec::new();
    for asked in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let mut s = RawSession::start(&f.state(), "dev-1");
        let init = s.initialize(asked);
        answered.push((
            asked,
            init["result"]["protocolVersion"]
                .as_str()
                .unwrap()
                .to_string(),
        ));
    }
    assert_eq!(
        answered,
        vec![
            ("2024-11-05", "2024-11-05".to_string()),
            ("2025-03-26", "2025-11-25".to_string()),
            ("2025-06-18", "2025-06-18".to_string()),
            ("2025-11-25", "2025-11-25".to_string()),
        ]
    );
}

/// JSON-RPC lines the SDKs never send, answered as JSON-RPC 2.0 and the MCP
/// specification (2025-11-25) say, each followed by a ping that shows the
/// session goes on.
///
/// - JSON-RPC 2.0 §5.1: "-32700 Parse error: Invalid JSON was received by the
///   server"; §5 (Response object, id): "If there was an error in detecting
///   the id in the Request object (e.g. Parse error/Invalid Request), it MUST
///   be Null."
/// - A batch: MCP 2025-06-18 changelog "Remove support for JSON-RPC batching";
///   JSON-RPC 2.0 §4 "-32600 Invalid Request: The JSON sent is not a valid
///   Request object."
/// - MCP 2025-11-25 server/tools ("Error Handling"): "Protocol Errors:
///   Standard JSON-RPC errors for issues like: Unknown tools, Malformed
///   requests (requests that fail to satisfy CallToolRequest schema)";
///   JSON-RPC 2.0 §5.1 "-32602 Invalid params".
#[test]
fn jsonrpc_batches_parse_errors_and_invalid_params_are_answered() {
    let f = Mcp::new();
    let mut s = RawSession::start(&f.state(), "dev-1");
    let init = s.initialize("2025-06-18");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    let batch = json!([
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ])
    .to_string();
    let call = |id: i64, params: Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string()
    };
    // (line, id, code, what the message says)
    let cases: Vec<(String, Value, i64, &str)> = vec![
        (
            // The JSON-RPC 2.0 specification's own example of invalid JSON.
            r#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#.into(),
            Value::Null,
            -32700,
            "Parse error: the line is not JSON",
        ),
        ("\u{1}garbage".into(), Value::Null, -32700, "Parse error"),
        (
            batch,
            Value::Null,
            -32600,
            "JSON-RPC batches are not accepted",
        ),
        ("[]".into(), Value::Null, -32600, "batches are not accepted"),
        (
            call(3, json!({"name": "run_command", "arguments": "ls"})),
            json!(3),
            -32602,
            "`arguments` must be an object of the tool's parameters (see its inputSchema), not a string",
        ),
        (
            call(4, json!({"arguments": {"command": "ls"}})),
            json!(4),
            -32602,
            "`name` is missing: name the tool to call (one of ",
        ),
        (
            call(5, json!({"name": 7})),
            json!(5),
            -32602,
            "`name` must be a string",
        ),
        (
            call(6, json!({"name": "delete_everything", "arguments": {}})),
            json!(6),
            -32602,
            "unknown tool `delete_everything`: the tools are ",
        ),
        (
            call(7, json!("run_command")),
            json!(7),
            -32602,
            "params must be an object",
        ),
        // MCP 2025-11-25 basic ("Requests"): `params?: { [key: string]:
        // unknown }`; any method's params are an object, with the id kept.
        (
            json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": "x"}).to_string(),
            json!(9),
            -32602,
            "Invalid params for tools/list: params must be an object, not a string",
        ),
        // JSON-RPC 2.0 §4: a request has a `method`; the answer keeps its id.
        (
            json!({"jsonrpc": "2.0", "id": 10}).to_string(),
            json!(10),
            -32600,
            "Invalid Request: a message has a `method`",
        ),
    ];
    for (i, (line, id, code, says)) in cases.into_iter().enumerate() {
        let a = s.ask(&line);
        assert_eq!(
            (&a["jsonrpc"], &a["id"], &a["error"]["code"]),
            (&json!("2.0"), &id, &json!(code)),
            "{line}: {a}"
        );
        let message = a["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{line}: {message}");
        // Nothing else was answered (no member of a batch ran), and the
        // session goes on.
        let ping_id = 100 + i as i64;
        let pong = s.ask(&json!({"jsonrpc": "2.0", "id": ping_id, "method": "ping"}).to_string());
        assert_eq!(
            (&pong["id"], &pong["result"]),
            (&json!(ping_id), &json!({})),
            "{line}: {pong}"
        );
    }
    // Well-formed params reach the tool; arguments that do not fit its input
    // schema are a tool result (2025-11-25: "Input validation errors ...
    // Tool Execution Errors"), with structured content like every other.
    let a = s.ask(&call(
        8,
        json!({"name": "read_file", "arguments": {"path": 5}}),
    ));
    let r = &a["result"];
    assert_eq!(
        (&r["isError"], &r["structuredContent"]["status"]),
        (&json!(true), &json!("error")),
        "{a}"
    );
    assert_eq!(
        r["content"][0]["text"], r["structuredContent"]["error"],
        "{a}"
    );
    assert!(
        r["content"][0]["text"].as_str().unwrap().starts_with(
            "invalid arguments for read_file: invalid type: integer `5`, expected a string"
        ),
        "{a}"
    );
}

/// Arguments no action can be made of are tool errors that say what to pass,
/// never actions waiting for a person, and nothing is proposed. MCP
/// 2025-11-25 server/tools ("Error Handling"): "Tool Execution Errors:
/// Reported in tool results with isError: true: ... Input validation errors
/// (e.g., date in wrong format, value out of range)"; "Clients SHOULD provide
/// tool execution errors to language models to enable self-correction."
#[test]
fn arguments_no_action_can_be_made_of_are_tool_errors() {
    let f = Mcp::new();
    let mut c = f.client("dev-1");
    // (tool, arguments, the message after "invalid arguments for TOOL: ")
    let cases: [(&str, Value, &str); 14] = [
        (
            "run_command",
            json!({"command": ""}),
            "`command` is empty: pass the shell command line to run (e.g. `ls -la`)",
        ),
        (
            "run_command",
            json!({"command": " \t\n "}),
            "`command` is empty: pass the shell command line to run (e.g. `ls -la`)",
        ),
        (
            "run_command",
            json!({"command": "ls\u{0}-la"}),
            "`command` contains a NUL byte, which no command line, path or git message can hold: remove it",
        ),
        (
            "run_command",
            json!({"command": "ls", "cwd": "src"}),
            "`cwd` must be an absolute path in your berth's frame (e.g. /work/src), not `src`; leave it out for /work",
        ),
        (
            "run_command",
            json!({"command": "ls", "cwd": "/work\u{0}x"}),
            "`cwd` contains a NUL byte, which no command line, path or git message can hold: remove it",
        ),
        (
            "run_command",
            json!({"command": "ls", "timeout_secs": 0}),
            "`timeout_secs` must be at least 1 (seconds); leave it out for the project's default",
        ),
        (
            "run_command",
            json!({"command": "ls", "timeout_secs": 86_401}),
            "`timeout_secs` is at most 86400 (a day), not 86401; leave it out for the project's default",
        ),
        (
            "run_command",
            json!({"command": "ls", "timeout_secs": u64::MAX}),
            "`timeout_secs` is at most 86400 (a day), not 18446744073709551615; leave it out for the project's default",
        ),
        (
            "run_command",
            json!({"command": "ls", "timeout_secs": -1}),
            "invalid value: integer `-1`, expected u64 (see the tool's inputSchema)",
        ),
        (
            "read_file",
            json!({"path": "a.txt\u{0}"}),
            "`path` contains a NUL byte, which no command line, path or git message can hold: remove it",
        ),
        (
            "write_file",
            json!({"path": " ", "content": "x"}),
            "`path` is empty: name the file to write, e.g. /work/notes.txt",
        ),
        (
            "commit",
            json!({"message": "  "}),
            "`message` is empty: give the commit a message saying what the change does",
        ),
        (
            "open_pr",
            json!({"title": ""}),
            "`title` is empty: give the pull request a title saying what it changes",
        ),
        (
            "open_pr",
            json!({"title": "\n"}),
            "`title` is empty: give the pull request a title saying what it changes",
        ),
    ];
    for (tool, args, says) in cases {
        let r = c.call(tool, args.clone());
        let message = format!("invalid arguments for {tool}: {says}; nothing was proposed");
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
    let actions: Value = serde_json::from_str(&f.ok(&["actions", "--json"])).unwrap();
    assert_eq!(actions, json!([]), "nothing may be proposed");
}

/// Every tool answer of a runner-mode session, successes and errors alike,
/// shows frame paths only: neither the worktree's host path nor the state
/// directory's. The log (what a person reads) keeps the host paths, which
/// shows the answers had them to hide.
#[test]
fn host_paths_never_reach_the_agent_in_runner_mode() {
    let f = Mcp::new();
    let wt = f.worktree("dev-1");
    for kind in ["terminal", "file_write"] {
        f.ok(&["autonomy", "set", "dev-1", kind, "auto_approve"]);
    }
    let mut c = f.client("dev-1");
    let calls = [
        ("run_command", json!({"command": "pwd"})),
        ("run_command", json!({"command": "cat missing.txt"})),
        (
            "run_command",
            json!({"command": "ls", "cwd": "/work/no-such-dir"}),
        ),
        (
            "run_command",
            json!({"command": "git rev-parse --git-dir --show-toplevel"}),
        ),
        ("read_file", json!({"path": "missing.txt"})),
        ("read_file", json!({"path": "a.txt/below"})),
        ("list_files", json!({"path": "no-such-dir"})),
        ("write_file", json!({"path": "a.txt/below", "content": "x"})),
        ("read_file", json!({"path": ".git"})),
        ("commit", json!({"message": "nothing changed"})),
        ("open_pr", json!({"title": "not pushed"})),
        ("write_file", json!({"path": "b.txt", "content": "b\n"})),
        ("commit", json!({"message": "add b"})),
        ("push", json!({})),
    ];
    let hidden: Vec<String> = [
        wt.clone(),
        wt.canonicalize().unwrap(),
        f.state(),
        f.state().canonicalize().unwrap(),
    ]
    .iter()
    .map(|p| p.display().to_string())
    .collect();
    let mut answers = Vec::new();
    let mut pending = Vec::new();
    for (tool, args) in calls {
        let r = c.call(tool, args.clone());
        if r["structured"]["status"] == "pending" {
            pending.push(action_id(&r));
        }
        answers.push((format!("{tool} {args}"), r));
    }
    // What a person approved, as the agent then sees it.
    for id in pending {
        f.ok(&["approve", &id]);
        let r = c.call("action_status", json!({"id": id}));
        answers.push((format!("action_status {id}"), r));
    }
    for (call, r) in &answers {
        let answer = r.to_string();
        for h in &hidden {
            assert!(!answer.contains(h.as_str()), "{call} shows {h}: {r}");
        }
    }
    // Paths are translated (the worktree) or hidden (the rest of the state:
    // `git rev-parse --git-dir` names the agent's git directory), not dropped.
    let naming = |what: &str| {
        answers
            .iter()
            .filter(|(_, r)| r.to_string().contains(what))
            .count()
    };
    assert!(
        naming("/work") >= 5,
        "only {} answers name /work",
        naming("/work")
    );
    assert!(naming("<berth state>") >= 1, "{answers:?}");
    let log = f.ok(&["actions", "--json"]);
    assert!(log.contains(&wt.display().to_string()), "{log}");
}

/// The official SDK's client validates every successful structured result
/// against the tool's outputSchema (it fails the call when one does not fit),
/// so every test above also checks the schema; here the schema itself. MCP
/// 2025-11-25 server/tools ("Output Schema"): "If an output schema is
/// provided: Servers MUST provide structured results that conform to this
/// schema."
#[test]
fn every_tool_declares_the_output_schema_of_its_structured_content() {
    let f = Mcp::new();
    let mut c = f.client("dev-1");
    let tools = c.send(json!({"op": "list_tools"}));
    let tools = tools["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 10);
    for t in tools {
        let schema = &t["output_schema"];
        assert_eq!(
            (
                &schema["type"],
                &schema["required"],
                &schema["properties"]["status"]["enum"]
            ),
            (
                &json!("object"),
                &json!(["status"]),
                &json!(["executed", "pending", "refused", "error"])
            ),
            "{t}"
        );
        assert_eq!(
            schema, &tools[0]["output_schema"],
            "one shape for every tool"
        );
    }
}

/// FastMCP's client (PyPI `fastmcp`), not the official SDK: the handshake,
/// ping, the tool list, and one call per result status, each result checked
/// against the tool's outputSchema with `jsonschema` (errors too) and
/// hydrated by FastMCP through it.
#[test]
fn a_second_client_library_speaks_to_berth_mcp() {
    let f = Mcp::new();
    let calls = json!([
        {"tool": "read_file", "args": {"path": "a.txt"}},
        {"tool": "run_command", "args": {"command": "echo hi > out.txt"}},
        {"tool": "run_command", "args": {"command": "ls && rm -rf /"}},
        {"tool": "run_command", "args": {"command": "  "}},
        {"tool": "action_status", "args": {"id": "ffffffff"}},
    ]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_fastmcp_client.py");
    let out = Command::new(fastmcp_python())
        .arg(script)
        .arg(calls.to_string())
        .args([env!("CARGO_BIN_EXE_berth"), "mcp", "--agent", "dev-1"])
        .env("BERTH_HOME", f.state())
        .env("USER", "ada")
        .env("RUST_LOG", "warn")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (&got["server"], &got["ping"], &got["protocol_version"]),
        (&json!("berth"), &json!(true), &json!("2026-07-28")),
        "{got}"
    );
    let mut names: Vec<&str> = got["tools"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "action_status",
            "comment_pr",
            "commit",
            "list_files",
            "open_pr",
            "push",
            "read_file",
            "resolve_pr_thread",
            "run_command",
            "write_file"
        ]
    );
    // (status, is_error, hydrated through the schema: FastMCP does that for
    // results that are not errors)
    let seen: Vec<(Value, Value, Value, Value)> = got["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["structured"]["status"].clone(),
                c["is_error"].clone(),
                c["data_parsed"].clone(),
                c["schema_error"].clone(),
            )
        })
        .collect();
    let (t, fl, n) = (json!(true), json!(false), Value::Null);
    assert_eq!(
        seen,
        vec![
            (json!("executed"), fl.clone(), t.clone(), n.clone()),
            (json!("pending"), fl.clone(), t.clone(), n.clone()),
            (json!("refused"), t.clone(), fl.clone(), n.clone()),
            (json!("error"), t.clone(), fl.clone(), n.clone()),
            (json!("error"), t, fl, n),
        ],
        "{got}"
    );
    assert_eq!(got["calls"][0]["text"], "a\n", "{got}");
}

/// The Python with FastMCP (scripts/test.sh installs it beside the SDK).
fn fastmcp_python() -> PathBuf {
    let p = python();
    let ok = Command::new(&p)
        .args(["-c", "import fastmcp, jsonschema"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "{} has no fastmcp: run `{} -m pip install fastmcp` (scripts/test.sh does)",
        p.display(),
        p.display()
    );
    p
}

/// An agent's side of a PR review: it replies in a person's thread and
/// resolves it through `comment_pr` and `resolve_pr_thread`, each a
/// proposed action (`pr_comment`, `pr_resolve_thread`) that the seeds
/// auto-approve at activation; with its autonomy at require_approval the
/// comment waits for a person, and runs once approved. Arguments that
/// cannot work are tool errors; a thread that is not there is a failed
/// action that says so.
#[test]
fn an_agent_replies_and_resolves_pr_threads_as_proposed_actions() {
    let f = Mcp::new();
    f.ok(&["autonomy", "set", "dev-1", "file_write", "auto_approve"]);
    let mut c = f.client("dev-1");
    for (tool, args) in [
        ("write_file", json!({"path": "b.txt", "content": "b\n"})),
        ("commit", json!({"message": "add b"})),
        ("push", json!({})),
        ("open_pr", json!({"title": "Add b"})),
    ] {
        let r = c.call(tool, args);
        assert_eq!(r["structured"]["succeeded"], true, "{tool}: {r}");
    }
    let person: Value = serde_json::from_str(&f.ok(&[
        "pr",
        "comment",
        "1",
        "b needs a newline?",
        "--path",
        "b.txt",
        "--line",
        "1",
        "--json",
    ]))
    .unwrap();
    let thread = person["thread"].as_str().unwrap().to_string();

    // Seeded: the reply and the resolution run at once, as the agent.
    let r = c.call(
        "comment_pr",
        json!({"body": "it has one", "reply_to": &thread[..8]}),
    );
    assert_eq!(r["structured"]["status"], "executed", "{r}");
    assert_eq!(
        (
            &r["structured"]["result"]["kind"],
            &r["structured"]["result"]["thread"]
        ),
        (&json!("pr_comment"), &json!(thread)),
        "{r}"
    );
    let r = c.call("resolve_pr_thread", json!({"thread": &thread, "pr": 1}));
    assert_eq!(
        (
            &r["structured"]["result"]["kind"],
            &r["structured"]["result"]["already_resolved"]
        ),
        (&json!("pr_resolve_thread"), &json!(false)),
        "{r}"
    );
    let t: Value = serde_json::from_str(&f.ok(&["pr", "threads", "1", "--json"])).unwrap();
    let t0 = &t["threads"][0];
    assert_eq!(
        (
            &t0["resolved"],
            &t0["resolved_by"]["kind"],
            &t0["resolved_by"]["id"]
        ),
        (&json!(true), &json!("agent"), &json!("dev-1")),
        "{t}"
    );
    assert_eq!(
        (
            &t0["comments"][1]["author_kind"],
            &t0["comments"][1]["author"]
        ),
        (&json!("agent"), &json!("dev-1")),
        "{t}"
    );
    let decided: Value = serde_json::from_str(&f.ok(&["actions", "--json"])).unwrap();
    let kinds: Vec<(String, String)> = decided
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| {
            a["action"]["type"]
                .as_str()
                .is_some_and(|k| k.starts_with("pr_") && k != "pr_open")
        })
        .map(|a| {
            (
                a["action"]["type"].as_str().unwrap().to_string(),
                a["decision"]["stage"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let mut kinds = kinds;
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("pr_comment".to_string(), "autonomy".to_string()),
            ("pr_resolve_thread".to_string(), "autonomy".to_string())
        ]
    );
    // The events carry the agent as actor and the action.
    let ev: Value =
        serde_json::from_str(&f.ok(&["events", "--type", "pr.thread_resolved", "--json"])).unwrap();
    assert_eq!(
        ev[0]["actor"],
        json!({"kind": "agent", "id": "dev-1"}),
        "{ev}"
    );
    assert!(ev[0]["action"].is_string(), "{ev}");

    // Held: autonomy says ask. Nothing is written until a person approves.
    f.ok(&["autonomy", "set", "dev-1", "pr_comment", "require_approval"]);
    let r = c.call("comment_pr", json!({"body": "a new concern"}));
    assert_eq!(r["structured"]["status"], "pending", "{r}");
    let id = r["structured"]["action_id"].as_str().unwrap().to_string();
    let threads = |f: &Mcp| -> usize {
        let t: Value = serde_json::from_str(&f.ok(&["pr", "threads", "1", "--json"])).unwrap();
        t["threads"].as_array().unwrap().len()
    };
    assert_eq!(threads(&f), 1);
    f.ok(&["approve", &id]);
    assert_eq!(threads(&f), 2);
    let checks: Value = serde_json::from_str(&f.ok(&["pr", "checks", "1", "--json"])).unwrap();
    assert_eq!(
        (&checks["unresolved_threads"], &checks["ready"]),
        (&json!(1), &json!(false)),
        "the agent's own thread is open: {checks}"
    );

    // Arguments that cannot work: tool errors, nothing proposed.
    let before: Value = serde_json::from_str(&f.ok(&["actions", "--json"])).unwrap();
    for (tool, args, says) in [
        ("comment_pr", json!({"body": " "}), "`body` is empty"),
        (
            "comment_pr",
            json!({"body": "x", "line": 3}),
            "`line` needs `path`",
        ),
        (
            "comment_pr",
            json!({"body": "x", "pr": 0}),
            "a PR number from 1",
        ),
        (
            "resolve_pr_thread",
            json!({"thread": ""}),
            "`thread` is empty",
        ),
    ] {
        let r = c.call(tool, args);
        assert_eq!(r["structured"]["status"], "error", "{tool}: {r}");
        assert!(
            r["structured"]["error"].as_str().unwrap().contains(says),
            "{r}"
        );
    }
    let after: Value = serde_json::from_str(&f.ok(&["actions", "--json"])).unwrap();
    assert_eq!(
        before.as_array().unwrap().len(),
        after.as_array().unwrap().len()
    );
    // A thread that is not there: the action ran and failed, saying so.
    let r = c.call("resolve_pr_thread", json!({"thread": "abcd1234"}));
    assert_eq!(r["structured"]["succeeded"], false, "{r}");
    assert!(
        r["structured"]["diagnostic"]
            .as_str()
            .unwrap()
            .contains("PR #1 has no thread `abcd1234`"),
        "{r}"
    );
}
