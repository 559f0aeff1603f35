//! A project whose forge is a git server: `berth project add --forge-url`
//! against `git http-backend` on loopback (the worktrees crate's test
//! server), and the noop agent's whole round trip — provisioning from the
//! mirror, its push and the approved merge landing on the server.

use std::net::TcpListener;

use crate::fixture::{Fixture, git, git_out};
use crate::smart_http::SmartHttpServer;

/// A server holding `app.git`, a bare copy of the fixture's source
/// repository that accepts pushes.
fn server_for(f: &Fixture) -> SmartHttpServer {
    let root = f.root().join("srv");
    std::fs::create_dir_all(&root).unwrap();
    let src = f.source_repo();
    git(
        &root,
        &["clone", "-q", "--bare", src.to_str().unwrap(), "app.git"],
    );
    git(
        &root.join("app.git"),
        &["config", "http.receivepack", "true"],
    );
    SmartHttpServer::start(&root)
}

#[test]
fn a_project_on_a_forge_server_goes_round_trip_through_the_server() {
    let f = Fixture::new();
    let server = server_for(&f);
    let url = server.url("app.git");
    f.ok(&["init"]);
    let added = f.json(&["project", "add", "demo", "--forge-url", &url, "--json"]);
    assert_eq!(added["project"]["source"], url.as_str());
    assert_eq!(added["project"]["base_branch"], "main");

    f.ok(&[
        "agent",
        "activate",
        "noop-1",
        "--project",
        "demo",
        "--impl",
        "noop",
    ]);
    f.new_task("ship it");
    f.ok(&["up", "noop-1", "--project", "demo", "--mode", "runner"]);
    f.ok(&["agent", "run", "noop-1", "--until-idle"]);
    let pr = f.json(&["pr", "show", "#1", "--json"]);
    let branch = pr["branch"].as_str().unwrap().to_string();
    assert!(branch.starts_with("agent/noop-1/"), "{branch}");
    let served = server.repo("app.git");
    let on_server = git_out(&served, &["rev-parse", &format!("refs/heads/{branch}")]);
    assert_eq!(pr["head"].as_str(), Some(on_server.as_str()));

    let out = f.run(&["pr", "merge", "1"]);
    assert_eq!(out.status.code(), Some(3), "into protected main: pending");
    let pending = f.json(&["actions", "--pending", "--json"]);
    let id = pending[0]["id"].as_str().unwrap().to_string();
    f.ok(&["approve", &id]);
    let pr = f.json(&["pr", "show", "#1", "--json"]);
    assert_eq!(pr["status"], "merged");
    let main = git_out(&served, &["rev-parse", "refs/heads/main"]);
    assert_eq!(pr["merge_commit"].as_str(), Some(main.as_str()));

    // Someone else's commit on the server's main: `project sync` is the
    // mirror following the server.
    let other = f.root().join("other");
    git(
        f.root(),
        &[
            "clone",
            "-q",
            served.to_str().unwrap(),
            other.to_str().unwrap(),
        ],
    );
    std::fs::write(other.join("b.txt"), "b\n").unwrap();
    git(&other, &["add", "b.txt"]);
    git(&other, &["commit", "-q", "-m", "upstream"]);
    git(&other, &["push", "-q", "origin", "HEAD:main"]);
    let upstream = git_out(&other, &["rev-parse", "HEAD"]);
    let synced = f.json(&["project", "sync", "demo", "--json"]);
    assert_eq!(synced["status"], "fast_forwarded", "{synced}");
    assert_eq!(synced["before"].as_str(), Some(main.as_str()));
    assert_eq!(synced["after"].as_str(), Some(upstream.as_str()));
    let again = f.json(&["project", "sync", "demo", "--json"]);
    assert_eq!(again["status"], "up_to_date", "{again}");
}

#[test]
fn a_forge_server_that_does_not_answer_is_named_with_what_to_do() {
    let f = Fixture::new();
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    f.ok(&["init"]);
    let url = format!("http://127.0.0.1:{port}/app.git");
    let (_, err) = f.err(&["project", "add", "demo", "--forge-url", &url]);
    assert!(
        err.contains(&format!("the forge server at {url} did not answer")),
        "{err}"
    );
    assert!(err.contains("Start the server again"), "{err}");
    let (_, err) = f.err(&[
        "project",
        "add",
        "demo",
        "--from",
        "/x",
        "--forge-url",
        &url,
    ]);
    assert!(err.contains("cannot be used with"), "{err}");
    let listed = f.json(&["project", "ls", "--json"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");
}
