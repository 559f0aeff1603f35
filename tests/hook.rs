#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `berth hook claude-code` with payloads in the schema Claude Code documents
//! for `PreToolUse`, through the real binary: the decision JSON on stdout is
//! asserted whole. The developer's project has its own `.claude/settings.json`
//! (and `.claude/settings.local.json`); berth's project `demo` and agent
//! `dev-1` live in a real state directory, for `--project` and `--agent`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::fixture::Fixture;

/// This module's fixture: the shared one, with a developer's project
/// (`proj`, its `.claude/` settings) and home beside berth's state.
struct Hook(Fixture);

impl std::ops::Deref for Hook {
    type Target = Fixture;
    fn deref(&self) -> &Fixture {
        &self.0
    }
}

const SETTINGS: &str = r#"{
  "permissions": {
    "allow": ["Bash(ls:*)", "Bash(grep:*)", "Bash(cargo test:*)"],
    "deny": ["Read(./.env)", "Bash(curl:*)"],
    "additionalDirectories": ["../notes"]
  },
  "hooks": {}
}
"#;

const SETTINGS_LOCAL: &str = r#"{"permissions": {"allow": ["Bash(make build)"]}}
"#;

impl Hook {
    fn new() -> Hook {
        // berth's own state: project `demo` (default permissions.json, an
        // extra deny template in berth.toml) and agent `dev-1`.
        let f = Hook(Fixture::new().with_project());
        let proj = f.project();
        std::fs::create_dir_all(proj.join(".claude")).unwrap();
        std::fs::create_dir_all(f.root().join("notes")).unwrap();
        std::fs::create_dir_all(f.home()).unwrap();
        std::fs::write(proj.join(".claude/settings.json"), SETTINGS).unwrap();
        std::fs::write(proj.join(".claude/settings.local.json"), SETTINGS_LOCAL).unwrap();
        std::fs::write(proj.join(".env"), "TOKEN=x\n").unwrap();
        std::os::unix::fs::symlink("/etc", proj.join("etc-link")).unwrap();
        f.edit_config(|text| {
            // Auto mode is accepted whatever berth's sandbox (the hook
            // judges the host's own tool calls).
            text.replacen("deny = []", "deny = [\"make deploy\"]", 1)
                .replacen("allow_unconfined = false", "allow_unconfined = true", 1)
        });
        f.berth(&["agent", "activate", "dev-1", "--project", "demo"]);
        f
    }

    /// The developer's project, where Claude Code runs.
    fn project(&self) -> PathBuf {
        self.root().join("proj")
    }

    fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    fn p(&self) -> String {
        self.project().display().to_string()
    }

    fn berth(&self, args: &[&str]) {
        self.ok(args);
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
        self.payload_in("default", tool, input)
    }

    /// The same in another `permission_mode`.
    fn payload_in(&self, mode: &str, tool: &str, input: Value) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "session_id": "abc123",
            "transcript_path": format!("{}/.claude/projects/x/abc123.jsonl", self.home().display()),
            "cwd": self.p(),
            "permission_mode": mode,
            "hook_event_name": "PreToolUse",
            "tool_name": tool,
            "tool_input": input,
            "tool_use_id": "toolu_01ABC123",
        }))
        .unwrap()
    }
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
    let f = Hook::new();
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
        // permission-modes: in `default` only reads run without asking, so
        // Claude Code asks for the part no rule allows: berth leaves it to
        // Claude Code's own flow (no output) instead of asking twice.
        (
            "partially allowed Bash gets no opinion",
            &[],
            "Bash",
            bash("ls && rm notes.txt"),
            None,
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
                    "berth ask (stage never_auto; segment 1 of 1 `write {p}/.claude/settings.json`): writing {p}/.claude/settings.json is never auto-approved: `.claude` is protected (Claude Code's settings, hooks and commands: hooks run shell commands, settings grant permissions)"
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
            bash("ls ../notes"),
            decision(
                "allow",
                &format!(
                    "berth allow (stage allow_rule; segment 1 of 1 `ls ../notes`): \
                     `ls ../notes` matches the allow rule allow \"ls\" ({rules}:3:5)"
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
            "no agent: a Write no rule names gets no opinion",
            &[],
            "Write",
            json!({"file_path": format!("{p}/notes.md"), "content": "x"}),
            None,
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
    let f = Hook::new();
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
                 digits, `-` or `_`, starting with a letter or digit, at most 48 characters (no `.`: it joins \
                 project and agent in container names)",
            ),
            "berth hook: invalid project name `../etc`: use lowercase letters, digits, `-` or `_`, \
             starting with a letter or digit, at most 48 characters (no `.`: it joins project and agent \
             in container names)\n",
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
    let f = Hook::new();
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
    // Agent SDK permissions: "In dontAsk mode a matching ask rule is denied
    // instead, because that mode never prompts." What berth cannot decide
    // would ask, so under dontAsk it is denied.
    let (got, _, code) = f.hook(&[], &f.payload_in("dontAsk", "Bash", bash("ls")));
    let got = got.unwrap();
    assert_eq!(
        (&got["hookSpecificOutput"]["permissionDecision"], code),
        (&json!("deny"), 0),
        "{got}"
    );
}

#[test]
fn the_project_directory_comes_from_claude_project_dir() {
    let f = Hook::new();
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

/// (case, `.claude/settings.json`, hook arguments, permission_mode, tool,
/// tool_input, the whole stdout, stderr with `{settings}` for the file).
type ParityCase = (
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
    &'static str,
    Value,
    Option<Value>,
    &'static str,
);

/// Never allow what Claude Code would not, and ask no more than it would
/// alone. Each row quotes the passage of Claude Code's documentation
/// (code.claude.com/docs/en: permissions, permission-modes, hooks) it
/// relies on.
#[test]
fn answers_match_claude_codes_documented_meaning() {
    let f = Hook::new();
    let p = f.p();
    let proj = f.project();
    std::os::unix::fs::symlink(".env", proj.join("env-link")).unwrap();
    std::fs::create_dir_all(proj.join("src")).unwrap();
    std::fs::write(proj.join("src/lib.rs"), "\n").unwrap();
    f.berth(&["agent", "auto-mode", "dev-1", "on"]);
    f.berth(&["autonomy", "set", "dev-1", "file_read", "require_approval"]);
    let settings = f.project().join(".claude/settings.json");
    let s = settings.display().to_string();
    const NONE: &str = r#"{"permissions": {}}"#;
    const DEFAULT: &str = SETTINGS;
    let cases: Vec<ParityCase> = vec![
        // permissions: "An unanchored allow glob such as `"*"`, `"B*"`, or
        // `"mcp__*"` is skipped with a warning and doesn't auto-approve anything."
        (
            "an unanchored allow glob approves nothing",
            r#"{"permissions": {"allow": ["*", "B*"]}}"#,
            &[],
            "default",
            "Bash",
            bash("rm -rf build"),
            None,
            "berth hook: warning: {settings}:1:28: `*` is an allow glob in the tool-name position, which Claude Code skips and which approves nothing: skipped\n\
             berth hook: warning: {settings}:1:33: `B*` is an allow glob in the tool-name position, which Claude Code skips and which approves nothing: skipped\n",
        ),
        // permissions: "The pattern must match the full tool name: `"*"`
        // matches every tool".
        (
            "a deny glob covers every tool",
            r#"{"permissions": {"deny": ["*"]}}"#,
            &[],
            "default",
            "Read",
            json!({"file_path": format!("{p}/src/lib.rs")}),
            decision(
                "deny",
                &format!(
                    "berth deny (stage deny_rule; segment 1 of 1 `read {p}/src/lib.rs`): {p}/src/lib.rs meets the deny rule deny \"Read\" ({s}:1:27)"
                ),
            ),
            "",
        ),
        (
            "a deny glob covers Bash too",
            r#"{"permissions": {"deny": ["B*"]}}"#,
            &[],
            "default",
            "Bash",
            bash("ls"),
            decision(
                "deny",
                &format!(
                    "berth deny (stage deny_rule; segment 1 of 1 `ls`): `ls` matches the deny rule deny \"Bash\" ({s}:1:27)"
                ),
            ),
            "",
        ),
        // permissions: "If you write a path rule for `Write`, `NotebookEdit`,
        // `Glob`, or the legacy `MultiEdit` tool instead, Claude Code accepts
        // the rule but never consults it".
        (
            "an allow Write(…) path rule approves nothing",
            r#"{"permissions": {"allow": ["Write(docs/**)", "MultiEdit(docs/**)"]}}"#,
            &[],
            "default",
            "Write",
            json!({"file_path": format!("{p}/docs/a.md"), "content": "x"}),
            None,
            "berth hook: warning: {settings}:1:28: `Write(docs/**)` is a path rule for Write, which Claude Code accepts but never consults (write `Edit(…)`): skipped\n\
             berth hook: warning: {settings}:1:46: `MultiEdit(docs/**)` is a path rule for MultiEdit, which Claude Code accepts but never consults (write `Edit(…)`): skipped\n",
        ),
        (
            "an allow Edit(…) path rule approves a Write",
            r#"{"permissions": {"allow": ["Edit(docs/**)"]}}"#,
            &[],
            "default",
            "Write",
            json!({"file_path": format!("{p}/docs/a.md"), "content": "x"}),
            decision(
                "allow",
                &format!(
                    "berth allow (stage allow_rule; segment 1 of 1 `write {p}/docs/a.md`): {p}/docs/a.md meets the allow rule allow \"Edit(docs/**)\" ({s}:1:28)"
                ),
            ),
            "",
        ),
        // permission-modes: "`default` | Reads only" run without asking:
        // berth's fallback (no rule, no agent) leaves the call to Claude Code.
        (
            "no settings, no agent: a Read inside the project gets no opinion",
            NONE,
            &[],
            "default",
            "Read",
            json!({"file_path": format!("{p}/src/lib.rs")}),
            None,
            "",
        ),
        (
            "no settings, no agent: ls gets no opinion",
            NONE,
            &[],
            "default",
            "Bash",
            bash("ls -la"),
            None,
            "",
        ),
        (
            "a partly allowed command gets no opinion",
            DEFAULT,
            &[],
            "default",
            "Bash",
            bash("ls && rm notes.txt"),
            None,
            "",
        ),
        // permission-modes: acceptEdits "lets Claude create and edit files in
        // your working directory without prompting".
        (
            "acceptEdits: a write inside the project is allowed",
            NONE,
            &[],
            "acceptEdits",
            "Edit",
            json!({"file_path": format!("{p}/src/lib.rs"), "old_string": "a", "new_string": "b"}),
            decision(
                "allow",
                &format!(
                    "berth allow (permission mode acceptEdits): a write of {p}/src/lib.rs, inside the project, that no rule settles"
                ),
            ),
            "",
        ),
        (
            "acceptEdits: a command is answered as in default",
            NONE,
            &[],
            "acceptEdits",
            "Bash",
            bash("npm run lint"),
            None,
            "",
        ),
        (
            "acceptEdits: a write outside the project asks",
            NONE,
            &[],
            "acceptEdits",
            "Write",
            json!({"file_path": "/etc/hosts", "content": "x"}),
            decision(
                "ask",
                "berth ask (stage scope; segment 1 of 1 `write /etc/hosts`): /etc/hosts is outside the project scope",
            ),
            "",
        ),
        // permission-modes: plan "Reads, plus classifier-approved commands":
        // Claude Code's plan flow decides; "Deny rules block in every mode".
        (
            "plan: an allowed command gets no opinion",
            DEFAULT,
            &[],
            "plan",
            "Bash",
            bash("ls"),
            None,
            "",
        ),
        (
            "plan: a deny still denies",
            DEFAULT,
            &[],
            "plan",
            "Bash",
            bash("curl -s https://example.com"),
            decision(
                "deny",
                &format!(
                    "berth deny (stage deny_rule; segment 1 of 1 `curl -s https://example.com`): `curl -s https://example.com` matches the deny rule deny \"Bash(curl:*)\" ({s}:4:30)"
                ),
            ),
            "",
        ),
        // permission-modes: bypassPermissions "disables permission prompts
        // and safety checks"; "Deny rules block in every mode, including
        // `bypassPermissions`"; explicit ask rules still prompt.
        (
            "bypassPermissions: berth's auto mode lifts the scope",
            NONE,
            &[],
            "bypassPermissions",
            "Edit",
            json!({"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"}),
            decision(
                "allow",
                "berth allow (stage autonomy; segment 1 of 1 `write /etc/hosts`): the agent's autonomy for this action is auto_approve (wildcard)",
            ),
            "",
        ),
        (
            "bypassPermissions: a privileged command still asks",
            NONE,
            &[],
            "bypassPermissions",
            "Bash",
            bash("git push origin main"),
            decision(
                "ask",
                "berth ask (stage privileged; segment 1 of 1 `git push origin main`): `git push origin main`: `git push` pushes to a remote — approval is required in every mode",
            ),
            "",
        ),
        (
            "bypassPermissions: a deny still denies",
            DEFAULT,
            &[],
            "bypassPermissions",
            "Read",
            json!({"file_path": format!("{p}/.env")}),
            decision(
                "deny",
                &format!(
                    "berth deny (stage deny_rule; segment 1 of 1 `read {p}/.env`): {p}/.env meets the deny rule deny \"Read(./.env)\" ({s}:4:14)"
                ),
            ),
            "",
        ),
        (
            "bypassPermissions: a written ask still asks",
            r#"{"permissions": {"ask": ["Bash(make release:*)"]}}"#,
            &[],
            "bypassPermissions",
            "Bash",
            bash("make release"),
            decision(
                "ask",
                &format!(
                    "berth ask (stage ask_rule; segment 1 of 1 `make release`): `make release` matches the ask rule ask \"Bash(make release:*)\" ({s}:1:26)"
                ),
            ),
            "",
        ),
        // permission-modes: dontAsk "auto-denies every tool call that would
        // otherwise prompt you".
        (
            "dontAsk: what would ask is denied",
            NONE,
            &[],
            "dontAsk",
            "Edit",
            json!({"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"}),
            decision(
                "deny",
                "berth deny (permission mode dontAsk: what would ask is denied); berth ask (stage scope; segment 1 of 1 `write /etc/hosts`): /etc/hosts is outside the project scope",
            ),
            "",
        ),
        // permissions (Claude Code skips what it cannot read): one unreadable
        // allow entry is skipped, the rest still apply.
        (
            "an unreadable allow entry is skipped with a warning",
            r#"{"permissions": {"allow": ["Bash(echo don't)", "Bash(ls:*)"]}}"#,
            &[],
            "default",
            "Bash",
            bash("ls"),
            decision(
                "allow",
                &format!(
                    "berth allow (stage allow_rule; segment 1 of 1 `ls`): `ls` matches the allow rule allow \"Bash(ls:*)\" ({s}:1:48)"
                ),
            ),
            "berth hook: warning: {settings}:1:28: `Bash(echo don't)` is an allow entry berth cannot read (cannot read `Bash(echo don't)`: an unterminated quote in `echo don't`): skipped\n",
        ),
        (
            "an unreadable deny entry fails closed",
            r#"{"permissions": {"deny": ["Bash(echo don't)"]}}"#,
            &[],
            "default",
            "Bash",
            bash("ls"),
            decision(
                "ask",
                &format!(
                    "berth could not decide, so a person must: {s}:1:27: cannot read `Bash(echo don't)`: an unterminated quote in `echo don't`"
                ),
            ),
            "berth hook: {settings}:1:27: cannot read `Bash(echo don't)`: an unterminated quote in `echo don't`\n",
        ),
        // permissions: "Deny rules: apply when either the symlink path or
        // its target matches. A symlink that points to a denied file is
        // itself denied."
        (
            "a Read through a symlink to a denied file is denied",
            DEFAULT,
            &[],
            "default",
            "Read",
            json!({"file_path": format!("{p}/env-link")}),
            decision(
                "deny",
                &format!(
                    "berth deny (through a symlink): {p}/env-link resolves on the host to {p}/.env; berth deny (stage deny_rule; segment 1 of 1 `read {p}/.env`): {p}/.env meets the deny rule deny \"Read(./.env)\" ({s}:4:14)"
                ),
            ),
            "",
        ),
        (
            "a command naming a symlink to a denied file is denied",
            DEFAULT,
            &["--agent", "dev-1"],
            "default",
            "Bash",
            bash("cat env-link"),
            decision(
                "deny",
                &format!(
                    "berth deny (through a symlink): {p}/env-link resolves on the host to {p}/.env; berth deny (stage deny_rule; segment 1 of 1 `read {p}/.env`): {p}/.env meets the deny rule deny \"Read(./.env)\" ({s}:4:14)"
                ),
            ),
            "",
        ),
        // permissions: "A symlink inside an allowed directory that points
        // outside it still prompts you."
        (
            "a Read through a symlink out of the project asks",
            NONE,
            &[],
            "default",
            "Read",
            json!({"file_path": format!("{p}/etc-link/hostname")}),
            decision(
                "ask",
                &format!(
                    "berth ask (held after the decision): {p}/etc-link/hostname resolves on the host to /etc/hostname through the symlink(s) {p}/etc-link, outside the project; berth ask (stage autonomy; segment 1 of 1 `read {p}/etc-link/hostname`): no autonomy is set for this action type: approval is required by default"
                ),
            ),
            "",
        ),
        // permission-modes: "Writes to protected paths are never
        // auto-approved except in `bypassPermissions` mode"; `.claude` is one.
        (
            "no agent: a write to .claude/ asks",
            NONE,
            &[],
            "default",
            "Write",
            json!({"file_path": format!("{p}/.claude/settings.json"), "content": "{}"}),
            decision(
                "ask",
                &format!(
                    "berth ask (stage never_auto; segment 1 of 1 `write {p}/.claude/settings.json`): writing {p}/.claude/settings.json is never auto-approved: `.claude` is protected (Claude Code's settings, hooks and commands: hooks run shell commands, settings grant permissions)"
                ),
            ),
            "",
        ),
        (
            "acceptEdits: a write to .claude/ asks",
            NONE,
            &[],
            "acceptEdits",
            "Edit",
            json!({"file_path": format!("{p}/.claude/settings.json"), "old_string": "a", "new_string": "b"}),
            decision(
                "ask",
                &format!(
                    "berth ask (stage never_auto; segment 1 of 1 `write {p}/.claude/settings.json`): writing {p}/.claude/settings.json is never auto-approved: `.claude` is protected (Claude Code's settings, hooks and commands: hooks run shell commands, settings grant permissions)"
                ),
            ),
            "",
        ),
        (
            "plan: a scope ask gets no opinion",
            NONE,
            &[],
            "plan",
            "Edit",
            json!({"file_path": "/etc/hosts", "old_string": "a", "new_string": "b"}),
            None,
            "",
        ),
        (
            "dontAsk: what berth leaves to Claude Code stays so",
            NONE,
            &[],
            "dontAsk",
            "Bash",
            bash("cat README.md"),
            None,
            "",
        ),
        (
            "an agent's specific require_approval asks",
            NONE,
            &["--agent", "dev-1"],
            "default",
            "Read",
            json!({"file_path": format!("{p}/src/lib.rs")}),
            decision(
                "ask",
                &format!(
                    "berth ask (stage autonomy; segment 1 of 1 `read {p}/src/lib.rs`): the agent's autonomy for this action is require_approval (specific)"
                ),
            ),
            "",
        ),
        (
            "bypassPermissions: an agent's specific require_approval still asks",
            NONE,
            &["--agent", "dev-1"],
            "bypassPermissions",
            "Read",
            json!({"file_path": format!("{p}/src/lib.rs")}),
            decision(
                "ask",
                &format!(
                    "berth ask (stage autonomy; segment 1 of 1 `read {p}/src/lib.rs`): the agent's autonomy for this action is require_approval (specific)"
                ),
            ),
            "",
        ),
        // hooks: "Match `Bash|PowerShell` in hooks that inspect shell
        // commands"; berth cannot analyse PowerShell: opaque, so it asks.
        (
            "PowerShell asks as an opaque command",
            NONE,
            &[],
            "default",
            "PowerShell",
            json!({"command": "Get-ChildItem -Recurse"}),
            decision(
                "ask",
                "berth ask (stage opaque): a PowerShell command, which berth cannot analyse",
            ),
            "",
        ),
        (
            "dontAsk: PowerShell is denied",
            NONE,
            &[],
            "dontAsk",
            "PowerShell",
            json!({"command": "Get-ChildItem -Recurse"}),
            decision(
                "deny",
                "berth deny (permission mode dontAsk: what would ask is denied); berth ask (stage opaque): a PowerShell command, which berth cannot analyse",
            ),
            "",
        ),
    ];
    let mut failures = Vec::new();
    for (name, text, args, mode, tool, input, want, want_err) in cases {
        std::fs::write(&settings, text).unwrap();
        let (got, stderr, code) = f.hook(args, &f.payload_in(mode, tool, input));
        let want_err = want_err.replace("{settings}", &settings.display().to_string());
        if (got.as_ref(), code, stderr.as_str()) != (want.as_ref(), 0, want_err.as_str()) {
            failures.push(format!(
                "{name}:\n  want {} / {want_err:?}\n  got  {} / {stderr:?} (exit {code})",
                want.map(|w| w.to_string()).unwrap_or_default(),
                got.map(|g| g.to_string()).unwrap_or_default()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// hooks: "Hook output strings, including `additionalContext`,
/// `systemMessage`, and plain stdout, are capped at 10,000 characters."
/// A 2 MB command's reason stays within the cap, cut on a character
/// boundary (the command is multi-byte) with a marker.
#[test]
fn the_reason_is_bounded_by_claude_codes_cap() {
    let f = Hook::new();
    let command = format!("curl -s https://example.com/{}", "é".repeat(1 << 20));
    let (got, stderr, code) = f.hook(&[], &f.payload("Bash", bash(&command)));
    let got = got.unwrap();
    let out = &got["hookSpecificOutput"];
    let reason = out["permissionDecisionReason"].as_str().unwrap();
    let marker = reason.rsplit_once(" … [").map(|(_, m)| m);
    assert_eq!(
        (
            &out["permissionDecision"],
            reason.chars().count() <= 10_000,
            reason.starts_with(
                "berth deny (stage deny_rule; segment 1 of 1 `curl -s https://example.com/éé"
            ),
            marker.is_some_and(|m| m.ends_with(" characters truncated]")),
            code,
            stderr.as_str(),
        ),
        (&json!("deny"), true, true, true, 0, ""),
        "{} characters: …{}",
        reason.chars().count(),
        reason.chars().rev().take(60).collect::<String>()
    );
}

/// hooks: PreToolUse "Matches on tool name: `Bash`, `PowerShell`, `Edit`,
/// `Write`, `Read`, …"; permissions: "`notebook_path` for NotebookEdit", and
/// `MultiEdit` is "the legacy `MultiEdit` tool". The README's matcher names
/// exactly the tools the hook answers for; each gets an answer with
/// `deny: ["*"]` ("`"*"` matches every tool"): Claude Code's own deny rule
/// decides PowerShell, which berth cannot analyse and asks about.
#[test]
fn the_readme_matcher_names_the_tools_the_hook_answers_for() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
    let section = readme.split("## Claude Code hook").nth(1).unwrap();
    let matcher = section
        .lines()
        .find_map(|l| l.trim().strip_prefix("\"matcher\": \""))
        .and_then(|l| l.split('"').next())
        .unwrap();
    let mut tools: Vec<&str> = matcher.split('|').collect();
    tools.sort_unstable();
    assert_eq!(
        tools,
        [
            "Bash",
            "Edit",
            "NotebookEdit",
            "PowerShell",
            "Read",
            "Write"
        ]
    );
    let f = Hook::new();
    let p = f.p();
    std::fs::write(
        f.project().join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["*"]}}"#,
    )
    .unwrap();
    for tool in tools {
        let input = match tool {
            "Bash" | "PowerShell" => json!({"command": "ls"}),
            "NotebookEdit" => json!({"notebook_path": format!("{p}/a.ipynb"), "new_source": "x"}),
            _ => {
                json!({"file_path": format!("{p}/a.txt"), "content": "x", "old_string": "a", "new_string": "b"})
            }
        };
        let (got, _, _) = f.hook(&[], &f.payload(tool, input));
        let decision = got
            .as_ref()
            .map(|g| g["hookSpecificOutput"]["permissionDecision"].clone());
        let want = if tool == "PowerShell" { "ask" } else { "deny" };
        assert_eq!(decision, Some(json!(want)), "{tool}: {got:?}");
    }
}

/// permissions: "A symlink that points to a denied file is itself denied",
/// also when the project itself is reached through a symlink (as `/tmp` is
/// `/private/tmp` on macOS): the project's rules keep its own spelling.
#[test]
fn a_symlink_to_a_denied_file_is_denied_in_a_project_reached_through_a_symlink() {
    let f = Hook::new();
    std::os::unix::fs::symlink(".env", f.project().join("env-link")).unwrap();
    let via = f.root().join("via");
    std::os::unix::fs::symlink(f.root(), &via).unwrap();
    let p = via.join("proj").display().to_string();
    let mut payload: Value =
        serde_json::from_slice(&f.payload("Read", json!({"file_path": format!("{p}/env-link")})))
            .unwrap();
    payload["cwd"] = json!(p);
    let (got, stderr, code) = f.hook(&[], payload.to_string().as_bytes());
    let settings = format!("{p}/.claude/settings.json");
    assert_eq!(
        (got, stderr.as_str(), code),
        (
            decision(
                "deny",
                &format!(
                    "berth deny (through a symlink): {p}/env-link resolves on the host to {p}/.env; \
                     berth deny (stage deny_rule; segment 1 of 1 `read {p}/.env`): \
                     {p}/.env meets the deny rule deny \"Read(./.env)\" ({settings}:4:14)"
                )
            ),
            "",
            0
        )
    );
}

/// permissions ("Protected paths"): "Writes to these paths are never
/// auto-approved … in every mode", and an allow rule does not pre-approve
/// them; hooks: a hook's `"allow"` "skips the permission prompt". So with
/// `allow: ["Edit", "Bash(echo *)"]` berth's answer for a write to a
/// protected path — by a file tool or a command's write target — is `ask`,
/// never `allow` (POLICY.md amendment point 10, from the policy); other
/// writes stay allowed. permissions: a `Read` deny "also" blocks writes to
/// the path, and `Read(secrets/**)` in deny matches at any depth (point 14).
#[test]
fn protected_paths_and_read_denies_are_never_allowed() {
    let f = Hook::new();
    let p = f.p();
    std::fs::write(
        f.project().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Edit", "Bash(echo *)", "Bash(cat *)"], "deny": ["Read(.env)", "Read(secrets/**)"]}}"#,
    )
    .unwrap();
    std::fs::write(f.project().join(".claude/settings.local.json"), "{}").unwrap();
    let write = |path: &str| json!({"file_path": format!("{p}/{path}"), "content": "x"});
    let rows: Vec<(&str, Value, &str)> = vec![
        ("Write", write(".git/hooks/pre-commit"), "ask"),
        ("Write", write(".git/config"), "ask"),
        ("Write", write(".husky/pre-commit"), "ask"),
        ("Write", write(".envrc"), "ask"),
        ("Write", write(".mcp.json"), "ask"),
        ("Write", write(".vscode/settings.json"), "ask"),
        ("Write", write("sub/.git/hooks/post-checkout"), "ask"),
        (
            "Bash",
            bash("echo 'rm -rf ~' > .git/hooks/pre-commit"),
            "ask",
        ),
        ("Bash", bash("echo x >> .envrc"), "ask"),
        ("Write", write("src/lib.rs"), "allow"),
        ("Bash", bash("echo x > notes.txt"), "allow"),
        ("Write", write(".env"), "deny"),
        ("Bash", bash("cat .e*"), "deny"),
        ("Bash", bash("cat deep/er/secrets/key.pem"), "deny"),
        ("Write", write("deep/secrets/key.pem"), "deny"),
    ];
    let mut wrong = Vec::new();
    for (tool, input, want) in &rows {
        let (got, stderr, code) = f.hook(&[], &f.payload(tool, input.clone()));
        let answer = got
            .as_ref()
            .and_then(|g| g["hookSpecificOutput"]["permissionDecision"].as_str())
            .unwrap_or("(no output)")
            .to_string();
        if answer != *want || code != 0 {
            wrong.push(format!(
                "{tool} {input}: want {want}, got {answer} ({code}) {stderr}"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The hook opens the store before each tool call that names an agent,
/// and starts the store's keeper when there is none, as one-shot commands
/// do (`tests/store_keeper.rs`).
#[test]
fn the_hook_starts_the_stores_keeper() {
    use crate::store_keeper::{keeper_pid, stop_keeper};
    let f = Hook::new();
    let started = stop_keeper(&f);
    let (_, stderr, code) = f.hook(
        &["--agent", "dev-1"],
        &f.payload("Bash", json!({"command": "ls"})),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_ne!(keeper_pid(&f), started);
}
