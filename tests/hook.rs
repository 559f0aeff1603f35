#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `berth hook claude-code` with payloads in the schema Claude Code documents
//! for `PreToolUse`, through the real binary: the decision JSON on stdout is
//! asserted whole. The developer's project has its own `.claude/settings.json`
//! (and `.claude/settings.local.json`); berth's project `demo` and agent
//! `dev-1` live in a real state directory, for `--project` and `--agent`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

struct Fixture {
    dir: tempfile::TempDir,
}

const SETTINGS: &str = r#"{
  "permissions": {
    "allow": ["Bash(ls:*)", "Bash(grep:*)", "Bash(cargo test:*)"],
    "deny": ["Read(./.env)", "Bash(curl:*)"],
    "additionalDirectories": ["../shared"]
  },
  "hooks": {}
}
"#;

const SETTINGS_LOCAL: &str = r#"{"permissions": {"allow": ["Bash(make build)"]}}
"#;

impl Fixture {
    fn new() -> Fixture {
        let f = Fixture {
            dir: tempfile::tempdir().unwrap(),
        };
        let proj = f.project();
        std::fs::create_dir_all(proj.join(".claude")).unwrap();
        std::fs::create_dir_all(f.dir.path().join("shared")).unwrap();
        std::fs::create_dir_all(f.home()).unwrap();
        std::fs::write(proj.join(".claude/settings.json"), SETTINGS).unwrap();
        std::fs::write(proj.join(".claude/settings.local.json"), SETTINGS_LOCAL).unwrap();
        std::fs::write(proj.join(".env"), "TOKEN=x\n").unwrap();
        std::os::unix::fs::symlink("/etc", proj.join("etc-link")).unwrap();

        // berth's own state: project `demo` (default permissions.json, an
        // extra deny template in berth.toml) and agent `dev-1`.
        let src = f.dir.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("a.txt"), "a\n").unwrap();
        git(&src, &["add", "a.txt"]);
        git(&src, &["commit", "-q", "-m", "init"]);
        f.berth(&["init"]);
        f.berth(&["project", "add", "demo", "--from", src.to_str().unwrap()]);
        let config = f.state().join("projects/demo/berth.toml");
        let text = std::fs::read_to_string(&config).unwrap();
        std::fs::write(
            &config,
            // Auto mode is accepted whatever berth's sandbox (the hook
            // judges the host's own tool calls).
            text.replacen("deny = []", "deny = [\"make deploy\"]", 1)
                .replacen("allow_unconfined = false", "allow_unconfined = true", 1),
        )
        .unwrap();
        f.berth(&["agent", "activate", "dev-1", "--project", "demo"]);
        f
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn p(&self) -> String {
        self.project().display().to_string()
    }

    fn berth(&self, args: &[&str]) {
        let out = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(args)
            .env("BERTH_HOME", self.state())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "berth {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs the hook; returns its stdout (parsed, when any), stderr and exit code.
    fn hook(&self, args: &[&str], stdin: &[u8]) -> (Option<Value>, String, i32) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(["hook", "claude-code"])
            .args(args)
            .env("BERTH_HOME", self.state())
            .env("HOME", self.home())
            .env_remove("CLAUDE_PROJECT_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin).unwrap();
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        let parsed = (!stdout.trim().is_empty()).then(|| {
            assert_eq!(stdout.lines().count(), 1, "one JSON line: {stdout}");
            serde_json::from_str(&stdout).unwrap()
        });
        (
            parsed,
            String::from_utf8(out.stderr).unwrap(),
            out.status.code().unwrap(),
        )
    }

    /// A PreToolUse payload as Claude Code sends it.
    fn payload(&self, tool: &str, input: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "session_id": "abc123",
            "transcript_path": format!("{}/.claude/projects/x/abc123.jsonl", self.home().display()),
            "cwd": self.p(),
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": input,
            "tool_use_id": "toolu_01ABC123",
        }))
        .unwrap()
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

/// (case, hook arguments, tool, tool_input, the whole stdout).
type DecisionCase = (
    &'static str,
    &'static [&'static str],
    &'static str,
    Value,
    Option<Value>,
);

/// (case, hook arguments, stdin, the whole stdout, stderr).
type InputCase = (
    &'static str,
    &'static [&'static str],
    Vec<u8>,
    Option<Value>,
    &'static str,
);

fn decision(d: &str, reason: &str) -> Option<Value> {
    Some(json!({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": d,
            "permissionDecisionReason": reason,
        }
    }))
}

fn bash(command: &str) -> Value {
    json!({"command": command, "description": "a step", "timeout": 120000})
}

#[test]
fn decisions_on_documented_payloads() {
    let f = Fixture::new();
    let p = f.p();
    let settings = format!("{p}/.claude/settings.json");
    let local = format!("{p}/.claude/settings.local.json");
    let rules = format!("{}/projects/demo/permissions.json", f.state().display());
    f.berth(&["agent", "auto-mode", "dev-1", "on"]);
    f.berth(&["autonomy", "set", "dev-1", "file_write", "auto_approve"]);
    let cases: Vec<DecisionCase> = vec![
        (
            "allowed compound Bash",
            &[],
            "Bash",
            bash("ls -la | grep foo && cargo test --quiet"),
            decision(
                "allow",
                &format!(
                    "berth allow (stage allow_rule; `ls -la` by allow \"Bash(ls:*)\" ({settings}:3:15), \
                     `grep foo` by allow \"Bash(grep:*)\" ({settings}:3:29), \
                     `cargo test --quiet` by allow \"Bash(cargo test:*)\" ({settings}:3:45)): \
                     every segment matches an allow rule (3 segments)"
                ),
            ),
        ),
        (
            "settings.local.json is read too",
            &[],
            "Bash",
            bash("make build"),
            decision(
                "allow",
                &format!(
                    "berth allow (stage allow_rule; segment 1 of 1 `make build`): \
                     `make build` matches the allow rule allow \"Bash(make build)\" ({local}:1:28)"
                ),
            ),
        ),
        (
            "partially allowed Bash asks",
            &[],
            "Bash",
            bash("ls && rm notes.txt"),
            decision(
                "ask",
                "berth ask (stage partial_allow; segment 2 of 2 `rm notes.txt`): \
                 only part of the command is allowed: no allow rule matches `rm notes.txt`",
            ),
        ),
        (
            "a deny rule denies the whole line",
            &[],
            "Bash",
            bash("ls; curl -s https://example.com"),
            decision(
                "deny",
                &format!(
                    "berth deny (stage deny_rule; segment 2 of 2 `curl -s https://example.com`): \
                     `curl -s https://example.com` matches the deny rule deny \"Bash(curl:*)\" ({settings}:4:30)"
                ),
            ),
        ),
        (
            "a push asks even in auto mode",
            &["--agent", "dev-1"],
            "Bash",
            bash("git push origin main"),
            decision(
                "ask",
                "berth ask (stage privileged; segment 1 of 1 `git push origin main`): \
                 `git push origin main`: `git push` pushes to a remote — approval is required in every mode",
            ),
        ),
        (
            "auto mode allows what no rule names",
            &["--agent", "dev-1"],
            "Bash",
            bash("npm run lint"),
            decision(
                "allow",
                "berth allow (stage autonomy; segment 1 of 1 `npm run lint`): \
                 no rule matches `npm run lint`; the agent's autonomy for this action is auto_approve (wildcard)",
            ),
        ),
        (
            "a symlink out of the project asks even when allowed",
            &["--agent", "dev-1"],
            "Bash",
            bash("ls etc-link/ssl"),
            decision(
                "ask",
                &format!(
                    "berth ask (held after the decision): {p}/etc-link/ssl resolves on the host to /etc/ssl \
                     through the symlink(s) {p}/etc-link, outside the project; \
                     berth allow (stage allow_rule; segment 1 of 1 `ls etc-link/ssl`): \
                     `ls etc-link/ssl` matches the allow rule allow \"ls\" ({rules}:3:5)"
                ),
            ),
        ),
        (
            "a plain word naming a symlink out of the project asks as a path does",
            &["--agent", "dev-1"],
            "Bash",
            bash("ls etc-link"),
            decision(
                "ask",
                &format!(
                    "berth ask (held after the decision): {p}/etc-link resolves on the host to /etc \
                     through the symlink(s) {p}/etc-link, outside the project; \
                     berth allow (stage allow_rule; segment 1 of 1 `ls etc-link`): \
                     `ls etc-link` matches the allow rule allow \"ls\" ({rules}:3:5)"
                ),
            ),
        ),
        (
            "a write to Claude Code's settings asks even in auto mode",
            &["--agent", "dev-1"],
            "Write",
            json!({"file_path": format!("{p}/.claude/settings.json"), "content": "{}"}),
            decision(
                "ask",
                &format!(
                    "berth ask (held after the decision): {p}/.claude/settings.json is in {p}/.claude, \
                     whose settings hold the rules berth reads and this hook: a person decides; \
                     berth allow (stage autonomy; segment 1 of 1 `write {p}/.claude/settings.json`): \
                     the agent's autonomy for this action is auto_approve (specific)"
                ),
            ),
        ),
        (
            "Read of .env meets the Read(./.env) deny",
            &[],
            "Read",
            json!({"file_path": format!("{p}/.env"), "offset": 1, "limit": 20}),
            decision(
                "deny",
                &format!(
                    "berth deny (stage deny_rule; segment 1 of 1 `read {p}/.env`): \
                     {p}/.env meets the deny rule deny \"Read(./.env)\" ({settings}:4:14)"
                ),
            ),
        ),
        (
            "Edit outside the project asks",
            &["--agent", "dev-1"],
            "Edit",
            json!({"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"}),
            decision(
                "ask",
                "berth ask (stage scope; segment 1 of 1 `write /etc/hosts`): /etc/hosts is outside the project scope",
            ),
        ),
        (
            "additionalDirectories are in scope",
            &["--project", "demo"],
            "Bash",
            bash("ls ../shared"),
            decision(
                "allow",
                &format!(
                    "berth allow (stage allow_rule; segment 1 of 1 `ls ../shared`): \
                     `ls ../shared` matches the allow rule allow \"ls\" ({rules}:3:5)"
                ),
            ),
        ),
        (
            "MultiEdit inside the project with file_write autonomy",
            &["--agent", "dev-1"],
            "MultiEdit",
            json!({"file_path": format!("{p}/src/lib.rs"), "edits": [{"old_string": "a", "new_string": "b"}]}),
            decision(
                "allow",
                &format!(
                    "berth allow (stage autonomy; segment 1 of 1 `write {p}/src/lib.rs`): \
                     the agent's autonomy for this action is auto_approve (specific)"
                ),
            ),
        ),
        (
            "manual: a Write no rule names asks",
            &[],
            "Write",
            json!({"file_path": format!("{p}/notes.md"), "content": "x"}),
            decision(
                "ask",
                &format!(
                    "berth ask (stage autonomy; segment 1 of 1 `write {p}/notes.md`): \
                     the agent's autonomy for this action is require_approval (wildcard)"
                ),
            ),
        ),
        (
            "--project: permissions.json allows, berth.toml adds a deny template",
            &["--project", "demo"],
            "Bash",
            bash("cat README.md && make deploy"),
            decision(
                "deny",
                "berth deny (stage deny_template; segment 2 of 2 `make deploy`): \
                 `make deploy` meets the built-in deny template: the project's deny template `make deploy`",
            ),
        ),
    ];
    let mut failures = Vec::new();
    for (name, args, tool, input, want) in cases {
        let (got, stderr, code) = f.hook(args, &f.payload(tool, input));
        if (got.as_ref(), code, stderr.as_str()) != (want.as_ref(), 0, "") {
            failures.push(format!(
                "{name}:\n  want {}\n  got  {} (exit {code}, stderr {stderr:?})",
                want.map(|w| w.to_string()).unwrap_or_default(),
                got.map(|g| g.to_string()).unwrap_or_default()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn bad_input_fails_closed_and_other_tools_get_no_opinion() {
    let f = Fixture::new();
    let cases: Vec<InputCase> = vec![
        (
            "malformed JSON asks, and says why on stderr",
            &[],
            b"{\"tool_name\": \"Bash\", ".to_vec(),
            decision(
                "ask",
                "berth could not decide, so a person must: malformed PreToolUse payload: \
                 not JSON (EOF while parsing a value at line 1 column 22)",
            ),
            "berth hook: malformed PreToolUse payload: not JSON (EOF while parsing a value at line 1 column 22)\n",
        ),
        (
            "Bash without a command asks",
            &[],
            f.payload("Bash", json!({"description": "no command"})),
            decision(
                "ask",
                "berth could not decide, so a person must: malformed PreToolUse payload: \
                 Bash: no `tool_input.command` string",
            ),
            "berth hook: malformed PreToolUse payload: Bash: no `tool_input.command` string\n",
        ),
        (
            "an unknown agent asks",
            &["--agent", "ghost"],
            f.payload("Bash", bash("ls")),
            decision(
                "ask",
                "berth could not decide, so a person must: unknown agent `ghost`: list them with `berth ls`, \
                 create one with `berth agent activate AGENT --project P`",
            ),
            "berth hook: unknown agent `ghost`: list them with `berth ls`, create one with `berth agent activate AGENT --project P`\n",
        ),
        (
            "an unknown project asks",
            &["--project", "nope"],
            f.payload("Read", json!({"file_path": "README.md"})),
            decision(
                "ask",
                &format!(
                    "berth could not decide, so a person must: unknown project `nope`: no {}/projects/nope/berth.toml \
                     (list projects with `berth project ls`)",
                    f.state().display()
                ),
            ),
            "",
        ),
        (
            "a project name that is not one asks",
            &["--project", "../etc"],
            f.payload("Bash", bash("ls")),
            decision(
                "ask",
                "berth could not decide, so a person must: invalid project name `../etc`: use lowercase letters, \
                 digits, `-`, `_` or `.`, starting with a letter or digit, at most 64 characters",
            ),
            "berth hook: invalid project name `../etc`: use lowercase letters, digits, `-`, `_` or `.`, \
             starting with a letter or digit, at most 64 characters\n",
        ),
        (
            "a tool berth does not govern: no output, Claude Code's own rules apply",
            &[],
            f.payload(
                "WebFetch",
                json!({"url": "https://example.com", "prompt": "x"}),
            ),
            None,
            "",
        ),
        (
            "not a PreToolUse payload: no opinion, said on stderr",
            &[],
            serde_json::to_vec(&json!({
                "session_id": "abc123", "cwd": f.p(), "hook_event_name": "PostToolUse",
                "tool_name": "Bash", "tool_input": bash("ls"), "tool_response": {}
            }))
            .unwrap(),
            None,
            "berth hook: `PostToolUse` is not a PreToolUse payload: no opinion (install the hook under hooks.PreToolUse)\n",
        ),
    ];
    let mut failures = Vec::new();
    for (name, args, stdin, want, want_err) in cases {
        let (got, stderr, code) = f.hook(args, &stdin);
        // The unknown project's stderr names the state path: compare its start.
        let err_ok = if want_err.is_empty() && name.contains("unknown project") {
            stderr.starts_with("berth hook: unknown project `nope`")
        } else {
            stderr == want_err
        };
        if got != want || code != 0 || !err_ok {
            failures.push(format!(
                "{name}:\n  want {} / {want_err:?}\n  got  {} / {stderr:?} (exit {code})",
                want.map(|w| w.to_string()).unwrap_or_default(),
                got.map(|g| g.to_string()).unwrap_or_default()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_broken_settings_file_asks_and_names_file_line_and_column() {
    let f = Fixture::new();
    let settings = f.project().join(".claude/settings.json");
    std::fs::write(
        &settings,
        "{\"permissions\": {\"allow\": [\"Bash(ls:*)\",]}}\n",
    )
    .unwrap();
    let (got, stderr, code) = f.hook(&[], &f.payload("Bash", bash("ls")));
    let got = got.unwrap();
    let reason = got["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert_eq!(
        (
            &got["hookSpecificOutput"]["permissionDecision"],
            code,
            reason.starts_with(&format!(
                "berth could not decide, so a person must: {}:1:",
                settings.display()
            )),
            stderr.starts_with(&format!("berth hook: {}:1:", settings.display())),
        ),
        (&json!("ask"), 0, true, true),
        "{reason} / {stderr}"
    );
}

#[test]
fn the_project_directory_comes_from_claude_project_dir() {
    let f = Fixture::new();
    // Claude Code's cwd is a subdirectory; the project is $CLAUDE_PROJECT_DIR:
    // `../.env` from src/ is the project's .env, which the rule denies.
    let sub = f.project().join("src");
    std::fs::create_dir_all(&sub).unwrap();
    let mut payload: Value =
        serde_json::from_slice(&f.payload("Bash", bash("cat ../README.md"))).unwrap();
    payload["cwd"] = json!(sub.display().to_string());
    let out = Command::new(env!("CARGO_BIN_EXE_berth"))
        .args(["hook", "claude-code", "--project", "demo"])
        .env("BERTH_HOME", f.state())
        .env("HOME", f.home())
        .env("CLAUDE_PROJECT_DIR", f.project())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin
                .take()
                .unwrap()
                .write_all(payload.to_string().as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    // In scope (the project root, not the cwd) and allowed by permissions.json.
    assert_eq!(
        got["hookSpecificOutput"]["permissionDecision"], "allow",
        "{got}"
    );
}
