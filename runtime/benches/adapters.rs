#![allow(clippy::unwrap_used, clippy::expect_used)]
//! What the adapters cost per call, end to end with real processes:
//!
//! - `berth hook claude-code`: wall time of one hook process (spawn, read the
//!   payload, decide, print), as Claude Code pays it before every tool call —
//!   with the project's settings only, with `--project` (berth.toml and
//!   permissions.json), and with `--agent` (opens the store for autonomy).
//! - `berth mcp`: round-trip time of one tool call from the official Python
//!   MCP client over stdio (needs the SDK: `$BERTH_MCP_PYTHON`, the venv
//!   `.ci/run` makes, or `python3`; skipped with a note otherwise).
//!
//! `cargo bench -p berth --bench adapters` (`-- N` sets the calls per case).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(300);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let proj = dir.path().join("proj");
    setup(dir.path(), &state, &proj);

    println!("berth hook claude-code: wall time per call, {n} calls each (ms)");
    let payload = json!({
        "session_id": "bench", "transcript_path": "/tmp/bench.jsonl",
        "cwd": proj.display().to_string(), "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls -la src | grep rs && cargo test --quiet", "description": "bench"},
    })
    .to_string();
    for (name, args) in [
        ("settings.json only", vec![]),
        ("--project demo", vec!["--project", "demo"]),
        ("--agent dev-1", vec!["--agent", "dev-1"]),
    ] {
        let mut times = Vec::with_capacity(n);
        for _ in 0..n {
            let start = Instant::now();
            let mut child = Command::new(env!("CARGO_BIN_EXE_berth"))
                .args(["hook", "claude-code"])
                .args(&args)
                .env("BERTH_HOME", &state)
                .env_remove("CLAUDE_PROJECT_DIR")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(payload.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            times.push(start.elapsed().as_secs_f64() * 1000.0);
            assert!(
                String::from_utf8_lossy(&out.stdout).contains("permissionDecision"),
                "{out:?}"
            );
        }
        report(name, &mut times);
    }

    println!(
        "\nberth mcp: tool-call round trip from the Python MCP SDK over stdio, {n} calls each (ms)"
    );
    let Some(python) = python() else {
        println!("  skipped: no Python with the `mcp` package (see tests/mcp.rs)");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/mcp_client.py");
    let mut child = Command::new(python)
        .arg(script)
        .args([env!("CARGO_BIN_EXE_berth"), "mcp", "--agent", "dev-1"])
        .env("BERTH_HOME", &state)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut next = || -> Value { serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap() };
    let _initialized = next();
    for (name, tool, args) in [
        (
            "read_file a.txt (file_read)",
            "read_file",
            json!({"path": "a.txt"}),
        ),
        (
            "run_command `cat a.txt` (terminal)",
            "run_command",
            json!({"command": "cat a.txt"}),
        ),
    ] {
        writeln!(
            stdin,
            "{}",
            json!({"op": "bench", "tool": tool, "args": args, "n": n})
        )
        .unwrap();
        stdin.flush().unwrap();
        let r = next();
        assert_eq!(r["last"]["structured"]["status"], "executed", "{r}");
        let mut times: Vec<f64> = r["ms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        report(name, &mut times);
    }
    drop(stdin);
    let _ = child.wait();
}

fn setup(dir: &Path, state: &Path, proj: &Path) {
    std::fs::create_dir_all(proj.join(".claude")).unwrap();
    std::fs::write(
        proj.join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash(ls:*)", "Bash(grep:*)", "Bash(cargo test:*)"], "deny": ["Read(./.env)"]}}"#,
    )
    .unwrap();
    let src = dir.join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("a.txt"), "a\n").unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "a.txt"],
        &["commit", "-q", "-m", "init"],
    ] {
        let st = Command::new("git")
            .args([
                "-c",
                "user.name=Bench",
                "-c",
                "user.email=bench@example.com",
            ])
            .args(args)
            .current_dir(&src)
            .status()
            .unwrap();
        assert!(st.success());
    }
    let src = src.display().to_string();
    for args in [
        &["init"][..],
        &["project", "add", "demo", "--from", &src],
        &["agent", "activate", "dev-1", "--project", "demo"],
        &["up", "dev-1", "--project", "demo"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_berth"))
            .args(args)
            .env("BERTH_HOME", state)
            .output()
            .unwrap();
        assert!(out.status.success(), "berth {args:?}: {out:?}");
    }
}

fn python() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Some(p) = std::env::var_os("BERTH_MCP_PYTHON") {
        candidates.push(PathBuf::from(p));
    }
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join(".cache/berth-mcp-venv/bin/python"));
    }
    candidates.push(PathBuf::from("python3"));
    candidates.into_iter().find(|c| {
        Command::new(c)
            .args(["-c", "import mcp"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn report(name: &str, times: &mut [f64]) {
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() as f64 - 1.0) * p).round() as usize];
    let mean = times.iter().sum::<f64>() / times.len() as f64;
    println!(
        "  {name:<38} mean {mean:7.2}  p50 {:7.2}  p95 {:7.2}  p99 {:7.2}  max {:7.2}",
        pct(0.5),
        pct(0.95),
        pct(0.99),
        times[times.len() - 1]
    );
}
