#![allow(clippy::unwrap_used, clippy::expect_used)]
//! A runner berth's execs through the engine, as the project's configuration
//! and the agent make them: the network `[sandbox.network] mode` names (a
//! loopback server the test runs on the host is reachable with `open`, not
//! with `none`), and the agent's git identity, so a plain `git commit` at
//! `/work` works without berth writing into the agent's repository config.

use crate::common;

use std::path::PathBuf;

use berth_engine::{AgentImpl, BerthMode};
use common::{Fixture, named, user};

/// Project `demo` with `[sandbox.network] mode = network`, and `dev-1` up in
/// runner mode: its worktree.
async fn runner_berth(f: &Fixture, network: &str) -> PathBuf {
    let path = f.state().project_config("demo");
    let text = std::fs::read_to_string(&path).unwrap();
    let old = "\n[sandbox.network]\n";
    let at = text
        .find(old)
        .expect("the default berth.toml has the table");
    let rest = &text[at..];
    let rest = rest.replacen(
        "\nmode = \"none\"\n",
        &format!("\nmode = \"{network}\"\n"),
        1,
    );
    std::fs::write(&path, format!("{}{rest}", &text[..at])).unwrap();
    f.agent("dev-1", AgentImpl::Real).await;
    let info = f
        .engine
        .up(
            &named("dev-1"),
            &named("demo"),
            Some(BerthMode::Runner),
            &user(),
        )
        .await
        .unwrap();
    assert_eq!(info.mode, Some(BerthMode::Runner));
    info.worktree.unwrap()
}

async fn sh(f: &Fixture, command: &str) -> (i32, String, String) {
    common::terminal(&f.engine, "dev-1", command).await
}

/// Whether a runner exec of a berth with `network` reaches a TCP server on
/// the host's loopback, and whether the server saw it.
async fn reaches_the_hosts_loopback(network: &str) -> (bool, bool) {
    let f = Fixture::new().await;
    let wt = runner_berth(&f, network).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(
        wt.join("probe.py"),
        format!(
            "import socket\n\
             try:\n\
             \x20   socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\n\
             except OSError as e: print('refused', e.errno)\n"
        ),
    )
    .unwrap();
    let (code, out, err) = sh(&f, "python3 /work/probe.py").await;
    assert_eq!(code, 0, "{out} {err}");
    assert!(
        out.starts_with("connected") || out.starts_with("refused"),
        "{out} {err}"
    );
    listener.set_nonblocking(true).unwrap();
    (out.starts_with("connected"), listener.accept().is_ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_none_keeps_an_exec_off_the_hosts_loopback() {
    assert_eq!(reaches_the_hosts_loopback("none").await, (false, false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_open_lets_an_exec_reach_the_hosts_loopback() {
    assert_eq!(reaches_the_hosts_loopback("open").await, (true, true));
}

/// A plain `git commit` at `/work` is by the agent, as berth's own commits
/// are, and berth wrote nothing into the agent's repository config.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_commit_at_work_is_by_the_agent() {
    let f = Fixture::new().await;
    let wt = runner_berth(&f, "none").await;
    std::fs::write(wt.join("notes.txt"), "n\n").unwrap();
    let (code, out, err) = sh(
        &f,
        "git add notes.txt && git commit -q -m x && git log -1 --format='%an <%ae>|%cn <%ce>'",
    )
    .await;
    assert_eq!(code, 0, "{out} {err}");
    assert_eq!(
        out.trim(),
        "dev-1[bot] <dev-1@berth.local>|dev-1[bot] <dev-1@berth.local>",
        "{err}"
    );
    let config = f
        .dir
        .path()
        .join("state/berths/demo/dev-1/dev-1.git/config");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(!text.contains("[user]"), "{text}");
}
