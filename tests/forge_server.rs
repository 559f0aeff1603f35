//! A project whose forge is a git server: `berth project add --forge-url`
//! against `git http-backend` on loopback (the worktrees crate's test
//! server), and the noop agent's whole round trip — provisioning from the
//! mirror, its push and the approved merge landing on the server; and the
//! same server behind TLS (`https://`, a certificate of the test's own).

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};

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

/// A TLS front for a loopback HTTP server: Python's `ssl` module with a
/// self-signed certificate for 127.0.0.1 (made by `openssl req`), every
/// connection forwarded to `backend`. Killed when dropped.
struct TlsFront {
    child: Child,
    port: u16,
    cert: std::path::PathBuf,
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TLS_FORWARDER: &str = r#"
import socket, ssl, sys, threading
cert, key, backend = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(64)
print(ls.getsockname()[1], flush=True)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(c):
    try:
        t = ctx.wrap_socket(c, server_side=True)
    except (ssl.SSLError, OSError):
        c.close()
        return
    u = socket.create_connection(("127.0.0.1", backend))
    threading.Thread(target=pump, args=(t, u), daemon=True).start()
    pump(u, t)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

impl TlsFront {
    fn start(dir: &Path, backend: u16) -> TlsFront {
        let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            ])
            .args(["-subj", "/CN=127.0.0.1"])
            .args(["-addext", "subjectAltName=IP:127.0.0.1"])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stderr(Stdio::null())
            .status()
            .expect("openssl (scripts/test.sh installs it)");
        assert!(made.success());
        let mut child = Command::new("python3")
            .args(["-c", TLS_FORWARDER])
            .arg(&cert)
            .arg(&key)
            .arg(backend.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap();
        TlsFront { child, port, cert }
    }
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
    let url = format!("https://127.0.0.1:{}/app.git", tls.port);

    // Not trusted: the system's store does not hold the test's certificate.
    f.ok(&["init"]);
    let (_, err) = f.err(&["project", "add", "demo", "--forge-url", &url]);
    assert!(err.contains("does not trust"), "{err}");
    assert!(err.contains("SSL_CERT_FILE"), "{err}");
    let listed = f.json(&["project", "ls", "--json"]);
    assert_eq!(listed.as_array().map(Vec::len), Some(0), "{listed}");

    // Trusted: the whole round trip to the server, over TLS.
    f.set_env("SSL_CERT_FILE", tls.cert.to_str().unwrap());
    let added = f.json(&["project", "add", "demo", "--forge-url", &url, "--json"]);
    assert_eq!(added["project"]["source"], url.as_str());
    f.ok(&[
        "agent",
        "activate",
        "noop-1",
        "--project",
        "demo",
        "--impl",
        "noop",
    ]);
    f.new_task("ship it over TLS");
    f.ok(&["up", "noop-1", "--project", "demo", "--mode", "runner"]);
    f.ok(&["agent", "run", "noop-1", "--until-idle"]);
    let pr = f.json(&["pr", "show", "#1", "--json"]);
    let branch = pr["branch"].as_str().unwrap().to_string();
    let on_server = git_out(
        &server.repo("app.git"),
        &["rev-parse", &format!("refs/heads/{branch}")],
    );
    assert_eq!(pr["head"].as_str(), Some(on_server.as_str()));
}
