//! A project whose forge is a git server: `berth project add --forge-url`
//! against `git http-backend` on loopback (the worktrees crate's test
//! server), and the noop agent's whole round trip — provisioning from the
//! mirror, its push and the approved merge landing on the server; and the
//! same server behind TLS (`https://`, a certificate of the test's own).

use std::io::Write;
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::fixture::{Fixture, git, git_out};
use crate::smart_http::SmartHttpServer;
use crate::tls_front::TlsFront;

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

/// Project `demo` added on the forge server at `url`, and the noop
/// agent's one task delivered through it: its PR, as `pr show` says.
fn deliver_one_task(f: &Fixture, url: &str) -> serde_json::Value {
    let added = f.json(&["project", "add", "demo", "--forge-url", url, "--json"]);
    assert_eq!(added["project"]["source"], url);
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
    f.json(&["pr", "show", "#1", "--json"])
}

#[test]
fn a_project_on_a_forge_server_goes_round_trip_through_the_server() {
    let f = Fixture::new();
    let server = server_for(&f);
    let url = server.url("app.git");
    f.ok(&["init"]);
    let pr = deliver_one_task(&f, &url);
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

/// A forge server over `https://`: trusted through `SSL_CERT_FILE`, the
/// agent's push lands on the server; a host that does not trust the
/// certificate is told so (`forge_certificate`), not that the server is
/// down, and nothing is added.
#[test]
fn a_forge_server_over_tls_is_trusted_only_with_its_certificate() {
    let mut f = Fixture::new();
    let server = server_for(&f);
    let tls = TlsFront::start(f.root(), server.addr().port());
    let url = tls.url("app.git");

    // Not trusted: the system's store does not hold the test's CA.
    f.ok(&["init"]);
    let (_, err) = f.err(&["project", "add", "demo", "--forge-url", &url]);
    assert!(err.contains("does not trust"), "{err}");
    assert!(err.contains("SSL_CERT_FILE"), "{err}");
    let listed = f.json(&["project", "ls", "--json"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");

    // Trusted: the whole round trip to the server, over TLS.
    f.set_env("SSL_CERT_FILE", tls.ca.to_str().unwrap());
    let pr = deliver_one_task(&f, &url);
    let branch = pr["branch"].as_str().unwrap().to_string();
    let on_server = git_out(
        &server.repo("app.git"),
        &["rev-parse", &format!("refs/heads/{branch}")],
    );
    assert_eq!(pr["head"].as_str(), Some(on_server.as_str()));

    // A repository that moved on the same server: followed, as git does
    // (`http.followRedirects=initial`), and the requests after go there.
    let moved = tls.url("moved.git");
    let added = f.json(&["project", "add", "moved", "--forge-url", &moved, "--json"]);
    assert_eq!(added["project"]["base_branch"], "main", "{added}");
    let synced = f.json(&["project", "sync", "moved", "--json"]);
    assert_eq!(synced["status"], "up_to_date", "{synced}");
    // Never from https:// to plain http://.
    let (_, err) = f.err(&[
        "project",
        "add",
        "down",
        "--forge-url",
        &tls.url("downgrade.git"),
    ]);
    assert!(err.contains("does not leave https://"), "{err}");
}

/// `SSL_CERT_FILE` as a FIFO, watched: a reader of it waits until the
/// watcher sees it and hands it `content` (the watcher counts each).
struct WatchedCertFile {
    path: std::path::PathBuf,
    reads: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
}

impl WatchedCertFile {
    fn new(dir: &Path, content: Vec<u8>) -> WatchedCertFile {
        use std::os::unix::fs::OpenOptionsExt;
        let path = dir.join("certs.fifo");
        let made = Command::new("mkfifo").arg(&path).status().unwrap();
        assert!(made.success());
        let (reads, stop) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let watcher = {
            let (path, reads, stop) = (path.clone(), reads.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    // Opening a FIFO's write end without blocking succeeds
                    // only while a reader holds it open.
                    match std::fs::OpenOptions::new()
                        .write(true)
                        .custom_flags(libc::O_NONBLOCK)
                        .open(&path)
                    {
                        Ok(mut w) => {
                            reads.fetch_add(1, Ordering::SeqCst);
                            let _ = w.write_all(&content);
                            drop(w);
                            // The same reader, until it has read to the end
                            // and closed: not counted again.
                            while std::fs::OpenOptions::new()
                                .write(true)
                                .custom_flags(libc::O_NONBLOCK)
                                .open(&path)
                                .is_ok()
                            {
                                std::thread::sleep(std::time::Duration::from_millis(5));
                            }
                        }
                        Err(_) => std::thread::sleep(std::time::Duration::from_millis(20)),
                    }
                }
            })
        };
        WatchedCertFile {
            path,
            reads,
            stop,
            watcher: Some(watcher),
        }
    }

    fn reads(&self) -> usize {
        self.reads.load(Ordering::SeqCst)
    }
}

impl Drop for WatchedCertFile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }
}

/// berth reads TLS trust roots only in a process that reaches an
/// `https://` forge: a whole round trip on a plain `http://` forge never
/// opens `SSL_CERT_FILE` (git2's own `https` feature would, in every process
/// at libgit2's init, ~30 ms each), and the first `https://` call does.
#[test]
fn trust_roots_are_read_only_by_a_process_that_reaches_an_https_forge() {
    let mut f = Fixture::new();
    let server = server_for(&f);
    let tls = TlsFront::start(f.root(), server.addr().port());
    let watched = WatchedCertFile::new(f.root(), std::fs::read(&tls.ca).unwrap());
    f.set_env("SSL_CERT_FILE", watched.path.to_str().unwrap());
    f.ok(&["init"]);
    let pr = deliver_one_task(&f, &server.url("app.git"));
    assert_eq!(pr["status"], "open", "{pr}");
    f.json(&["actions", "--json"]);
    assert_eq!(
        watched.reads(),
        0,
        "a process with no https:// forge read SSL_CERT_FILE"
    );

    let url = tls.url("app.git");
    let added = f.json(&["project", "add", "tls", "--forge-url", &url, "--json"]);
    assert_eq!(added["project"]["source"], url.as_str());
    assert_eq!(
        watched.reads(),
        1,
        "the https:// forge's process read its roots once"
    );
}
