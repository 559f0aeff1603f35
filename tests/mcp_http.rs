//! A `command` agent's `{mcp_config}` end to end (issue 18): for each turn
//! berth serves the agent's MCP tools over streamable HTTP on a loopback
//! port with a per-turn bearer token, outside the program's confinement.
//! The real binary, store, git and runner; the program is
//! `scripts/mcp-agent.py` (an agent CLI's stand-in, standard library only)
//! or a shell that holds the turn open while the test, on the host, knocks
//! with no token, a wrong one, and the official Python SDK's streamable
//! HTTP client (`tests/mcp_http_client.py`). After the turn nothing
//! listens.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::fixture::{Fixture, git};

/// This module's fixture: project `demo` (a README and
/// `scripts/mcp-agent.py` in its repository) in one berth mode, `command`
/// agent `dev-1` running `command`, up, with terminal and file writes
/// auto-approved, a session open on a task and a prompt queued for it.
struct Turn(Fixture);

impl std::ops::Deref for Turn {
    type Target = Fixture;
    fn deref(&self) -> &Fixture {
        &self.0
    }
}

impl Turn {
    fn new(command: &str) -> Turn {
        Turn::in_mode(command, "runner")
    }

    fn in_mode(command: &str, mode: &str) -> Turn {
        let f = Fixture::new();
        let src = f.source_repo();
        std::fs::write(
            src.join("README.md"),
            "# demo\n\nA project for berth's tests.\n",
        )
        .unwrap();
        std::fs::create_dir_all(src.join("scripts")).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/mcp-agent.py");
        std::fs::copy(script, src.join("scripts/mcp-agent.py")).unwrap();
        git(&src, &["add", "README.md", "scripts"]);
        git(&src, &["commit", "-q", "-m", "readme and the agent"]);
        let f = f.with_berth_mode(mode);
        // A turn that goes wrong ends in a minute, not half an hour.
        f.edit_config(|t| t.replacen("turn_timeout_secs = 1800", "turn_timeout_secs = 60", 1));
        f.activate_command("dev-1", command);
        for kind in ["terminal", "file_write"] {
            f.ok(&["autonomy", "set", "dev-1", kind, "auto_approve"]);
        }
        f.ok(&["up", "dev-1", "--project", "demo"]);
        let task = crate::prompts::new_task(&f);
        f.ok(&["sessions", "dev-1", "--open", &task]);
        f.ok(&["prompt", "dev-1", "Write notes about the README"]);
        Turn(f)
    }

    /// The program's private `/tmp` on the host.
    fn program_tmp(&self) -> PathBuf {
        self.state().join("berths/demo/dev-1/.tmp")
    }
}

/// POSTs an `initialize` to `url` with `authorization` (if any): the
/// response's status code.
fn post_status(url: &str, authorization: Option<&str>) -> u16 {
    post_status_as(url, authorization, None)
}

/// The same naming `host` in the `Host` header (default: the address).
fn post_status_as(url: &str, authorization: Option<&str>, host: Option<&str>) -> u16 {
    let addr = url
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/mcp"))
        .unwrap();
    let host = host.unwrap_or(addr);
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}})
    .to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{auth}Content-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    let line = String::from_utf8_lossy(&head).to_string();
    line[9..12].parse().unwrap()
}

/// Whether connecting to `url`'s address is refused.
fn refused(url: &str) -> bool {
    let addr = url
        .strip_prefix("http://")
        .and_then(|r| r.strip_suffix("/mcp"))
        .unwrap();
    matches!(TcpStream::connect(addr), Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused)
}

#[test]
fn a_turn_opens_a_pr_through_its_endpoint_as_the_agent_and_the_endpoint_goes_with_it() {
    opens_a_pr_through_its_endpoint("runner");
}

/// The same beside a mounted berth: the program runs on the host, confined
/// as the container's uid; its tools act in the container.
#[test]
fn a_turn_beside_a_mounted_berth_opens_a_pr_through_its_endpoint() {
    if !crate::docker::docker_answers() {
        return;
    }
    crate::mounted::image_build();
    opens_a_pr_through_its_endpoint("mounted");
}

fn opens_a_pr_through_its_endpoint(mode: &str) {
    let f = Turn::in_mode(
        "python3 scripts/mcp-agent.py {prompt_file} {mcp_config}",
        mode,
    );
    let ls = f.json(&["ls", "--json"]);
    assert_eq!(ls[0]["mode"], mode, "{ls}");
    let turns = f.json(&["agent", "turn", "dev-1", "--json"]);
    let turn = &turns[0];
    assert_eq!(turn["exit_code"], 0, "{turns}");
    let out = turn["stdout_tail"].as_str().unwrap();
    for line in [
        "prompt: Write notes about the README",
        "tools: ",
        "ran `cat README.md`",
        "first line '# demo'",
        "wrote AGENT_NOTES.md",
        "pushed agent/dev-1/scratch",
        "opened PR #1: agent/dev-1/scratch into main",
    ] {
        assert!(out.contains(line), "{line:?} not in {out}");
    }
    let tools = out.lines().find_map(|l| l.strip_prefix("tools: ")).unwrap();
    for tool in [
        "run_command",
        "read_file",
        "list_files",
        "write_file",
        "commit",
        "push",
        "open_pr",
        "action_status",
    ] {
        assert!(
            tools.split(", ").any(|t| t == tool),
            "{tool} not in {tools}"
        );
    }

    // The PR is in the forge, from the agent's branch.
    let prs = f.json(&["pr", "list", "--json"]);
    assert_eq!(prs.as_array().unwrap().len(), 1, "{prs}");
    assert_eq!(prs[0]["status"], "open");
    assert_eq!(prs[0]["branch"], "agent/dev-1/scratch");

    // Every step was a proposed action by the agent, decided and executed.
    let created = f.json(&["events", "--type", "proposed_action.created", "--json"]);
    let kinds: Vec<&str> = created
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["payload"]["action"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "terminal",
            "file_write",
            "git_commit",
            "git_push",
            "pr_open"
        ],
        "{created}"
    );
    for e in created.as_array().unwrap() {
        assert_eq!(e["actor"], json!({"kind": "agent", "id": "dev-1"}), "{e}");
        assert_eq!(e["agent"], "dev-1", "{e}");
    }
    let actions = f.json(&["actions", "--json"]);
    assert_eq!(actions.as_array().unwrap().len(), 5, "{actions}");
    for a in actions.as_array().unwrap() {
        assert_eq!(a["agent"], "dev-1", "{a}");
        assert_eq!(a["status"], "executed", "{a}");
    }
    // The file came through the tool, not through the (read-only) mount.
    let worktree = PathBuf::from(ls[0]["worktree"].as_str().unwrap());
    let notes = std::fs::read_to_string(worktree.join("AGENT_NOTES.md")).unwrap();
    assert!(notes.contains("The README begins: # demo"), "{notes}");

    // The turn named its endpoint; nothing listens there any more.
    let started = f.json(&["events", "--type", "session.turn_started", "--json"]);
    let url = started[0]["payload"]["tools"].as_str().unwrap().to_string();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    assert!(
        refused(&url),
        "{url} still accepts connections after the turn"
    );
}

#[test]
fn the_endpoint_wants_the_turns_token_and_speaks_to_the_official_sdk() {
    let f = Turn::new(
        "sh -c 'while [ ! -e /tmp/turn-done ]; do sleep 0.1; done; \
         echo \"$1 $BERTH_MCP_URL ${#BERTH_MCP_TOKEN} $2\"' sh {mcp_url} {mcp_config}",
    );
    let mut turn = Running(Some(
        f.command(&["agent", "turn", "dev-1", "--json"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let tmp = f.program_tmp();
    let deadline = Instant::now() + Duration::from_secs(60);
    let config = loop {
        let found = std::fs::read_dir(&tmp).ok().and_then(|d| {
            d.flatten()
                .map(|e| e.path())
                .find(|p| p.to_string_lossy().ends_with(".json"))
        });
        if let Some(p) = found
            && std::fs::metadata(&p).is_ok_and(|m| m.len() > 0)
        {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "no MCP config in {}",
            tmp.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let name = config.file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with("berth-mcp-"), "{name}");
    let meta = std::fs::metadata(&config).unwrap();
    assert_eq!(meta.mode() & 0o777, 0o600, "{}", config.display());
    // The berth's uid's (its worktree's owner): the confined program reads it.
    let ls = f.json(&["ls", "--json"]);
    let worktree = std::fs::metadata(ls[0]["worktree"].as_str().unwrap()).unwrap();
    assert_eq!(meta.uid(), worktree.uid(), "{}", config.display());
    let text = std::fs::read_to_string(&config).unwrap();
    let parsed: Value = serde_json::from_str(&text).unwrap();
    let server = &parsed["mcpServers"]["berth"];
    assert_eq!(server["type"], "http", "{parsed}");
    let url = server["url"].as_str().unwrap().to_string();
    let auth = server["headers"]["Authorization"]
        .as_str()
        .unwrap()
        .to_string();
    let token = auth.strip_prefix("Bearer ").unwrap();
    assert_eq!(token.len(), 64, "{token}");

    // No token, a wrong one of the same length, a short one: 401.
    assert_eq!(post_status(&url, None), 401);
    let wrong: String = token
        .chars()
        .map(|c| if c == '0' { '1' } else { '0' })
        .collect();
    assert_eq!(post_status(&url, Some(&format!("Bearer {wrong}"))), 401);
    assert_eq!(post_status(&url, Some("Bearer abc")), 401);
    assert_eq!(post_status(&url, Some(&format!("Basic {token}"))), 401);
    assert_eq!(post_status(&url, Some(&auth)), 200);
    // The right token from a page a browser was tricked into (DNS
    // rebinding): another host name is refused before the tools.
    let rebound = post_status_as(&url, Some(&auth), Some("evil.example:80"));
    assert!((400..500).contains(&rebound), "{rebound}");

    // The official SDK: initialize, list the tools, one call.
    let client = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_http_client.py");
    let out = Command::new(crate::mcp::python())
        .arg(client)
        .arg(&config)
        .arg("cat a.txt")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(seen["server"], "berth", "{seen}");
    assert_eq!(
        seen["tools"],
        json!([
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
        ]),
        "{seen}"
    );
    assert_eq!(seen["is_error"], false, "{seen}");
    assert_eq!(seen["structured"]["status"], "executed", "{seen}");
    assert_eq!(seen["structured"]["result"]["stdout"], "a\n", "{seen}");
    let actions = f.json(&["actions", "--json"]);
    assert_eq!(actions.as_array().unwrap().len(), 1, "{actions}");
    assert_eq!(actions[0]["agent"], "dev-1");
    assert_eq!(actions[0]["action"]["command"], "cat a.txt");

    // The program ends; so does the endpoint.
    std::fs::write(tmp.join("turn-done"), "").unwrap();
    let out = turn.0.take().unwrap().wait_with_output().unwrap();
    assert!(out.status.success());
    let turns: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(turns[0]["exit_code"], 0, "{turns}");
    // `{mcp_url}`, the environment and `{mcp_config}` name the same.
    assert_eq!(
        turns[0]["stdout_tail"],
        format!("{url} {url} 64 /tmp/{name}\n"),
        "{turns}"
    );
    assert!(
        refused(&url),
        "{url} still accepts connections after the turn"
    );
}

/// A running `berth agent turn`, killed if the test fails before it ends.
struct Running(Option<Child>);

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
