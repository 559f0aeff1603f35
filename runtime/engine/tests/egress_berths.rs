//! The egress proxy wired into real berths: an agent's commands in a runner
//! berth (curl, in the exec's own network namespace) and in a mounted berth
//! (busybox wget, in a container with `network none`) reach the registry a
//! local HTTP server stands in for, by name, only through berth's proxy on
//! their own loopback. Names resolve through the engine's fixed hosts (no
//! DNS); all traffic stays on this machine's loopback.
//!
//! Each berth: an allowed host goes through (plain HTTP, and CONNECT in the
//! runner); a denied one is refused with berth's reason in what the client
//! prints; an unknown one is a pending `network_connect` — approved, the
//! command completes; denied, it fails at once; with `wait_secs = 0` (no
//! one to ask) it is refused at once naming the action; a connection that
//! bypasses the proxy reaches nothing; every connection that went through is
//! a `network.connected` event.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use berth_engine::{Engine, StateDir};
use berth_sandbox::egress_port::ContainerDoor;

use berth_engine::{AgentImpl, NewPrompt};

use crate::common::{self, Fixture, named, registry, user};
use crate::egress::{events, wait_events};
use crate::mounted::mounted;

/// `[sandbox.network]` of `project` in `state`: allow-list mode,
/// `registry.test` and the loopback address the test names resolve to
/// allowed, `blocked.test` denied, held connections waiting `wait` seconds.
fn allowlist(state: &StateDir, project: &str, wait: u64) {
    let cfg = state.project_config(project);
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    for (key, value) in [
        ("mode", "\"allowlist\"".to_string()),
        ("allow", "[\"registry.test\", \"127.0.0.1\"]".to_string()),
        ("deny", "[\"blocked.test\"]".to_string()),
        ("wait_secs", wait.to_string()),
    ] {
        text = berth_engine::projects::with_key(&text, "sandbox.network", key, &value);
    }
    std::fs::write(&cfg, text).unwrap();
}

fn fixed_hosts(engine: &Engine) {
    let lo = vec!["127.0.0.1".parse().unwrap()];
    engine.set_egress_hosts(
        ["registry.test", "blocked.test", "unknown.test"]
            .into_iter()
            .map(|h| (h.to_string(), lo.clone()))
            .collect(),
    );
}

/// The id of a `network_connect` proposed after `before` of them, once
/// there is one.
async fn next_held(engine: &Engine, before: usize) -> String {
    for _ in 0..300 {
        let held: Vec<String> = events(engine, "proposed_action.created")
            .await
            .into_iter()
            .filter(|e| e.payload["action"]["type"] == "network_connect")
            .filter_map(|e| e.action)
            .collect();
        if held.len() > before {
            return held[before].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no network_connect was held");
}

async fn held_count(engine: &Engine) -> usize {
    events(engine, "proposed_action.created")
        .await
        .iter()
        .filter(|e| e.payload["action"]["type"] == "network_connect")
        .count()
}

/// How the test reaches a berth's commands and its client's flags.
struct Client<'a> {
    engine: &'a Engine,
    agent: &'a str,
    /// A plain-HTTP fetch through the proxy, printing the body (`{url}`).
    fetch: &'a str,
    /// The same fetch without the proxy.
    direct: &'a str,
    /// A fetch through a CONNECT tunnel, when the berth has such a client.
    tunnel: Option<&'a str>,
}

impl Client<'_> {
    async fn sh(&self, command: &str) -> (i32, String, String) {
        common::terminal(self.engine, self.agent, command).await
    }

    async fn get(&self, template: &str, url: &str) -> (i32, String) {
        let (code, out, err) = self.sh(&template.replace("{url}", url)).await;
        (code, format!("{out}{err}"))
    }
}

/// The acceptance scenario against one berth whose registry is `port`.
async fn scenario(
    c: &Client<'_>,
    state: &StateDir,
    project: &str,
    port: u16,
    seen: &Mutex<Vec<String>>,
) {
    // Allowed, by name: through the proxy, plain HTTP.
    let (code, out) = c
        .get(c.fetch, &format!("http://registry.test:{port}/simple/pkg/"))
        .await;
    assert_eq!((code, out.as_str()), (0, "package index at /simple/pkg/\n"));
    let mut through = 1;
    if let Some(tunnel) = c.tunnel {
        let (code, out) = c
            .get(tunnel, &format!("http://registry.test:{port}/tunnel/"))
            .await;
        assert_eq!((code, out.as_str()), (0, "package index at /tunnel/\n"));
        through += 1;
    }

    // Denied: refused, berth's reason in what the client prints.
    let (code, out) = c
        .get(c.fetch, &format!("http://blocked.test:{port}/nope/"))
        .await;
    assert!(
        out.contains("deny rule") && out.contains("blocked.test"),
        "{code} {out}"
    );
    assert!(!seen.lock().unwrap().iter().any(|p| p == "/nope/"));

    // Unknown, approved while the command waits: it completes.
    let before = held_count(c.engine).await;
    let url = format!("http://unknown.test:{port}/approved/");
    let approve = async {
        let id = next_held(c.engine, before).await;
        c.engine.approve(&id, &user(), false, None).await.unwrap();
        id
    };
    let ((code, out), id) = tokio::join!(c.get(c.fetch, &url), approve);
    assert_eq!(
        (code, out.as_str()),
        (0, "package index at /approved/\n"),
        "{id}"
    );
    through += 1;

    // Unknown, denied: the command fails at once, saying so.
    let url = format!("http://unknown.test:{port}/denied/");
    let started = Instant::now();
    let deny = async {
        let id = next_held(c.engine, before + 1).await;
        c.engine
            .deny(&id, &user(), Some("not this one"))
            .await
            .unwrap();
    };
    let ((code, out), ()) = tokio::join!(c.get(c.fetch, &url), deny);
    assert!(code != 0 && out.contains("was denied"), "{code} {out}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );

    // Nobody to ask (`wait_secs = 0`): refused at once, naming the action.
    allowlist(state, project, 0);
    let started = Instant::now();
    let (code, out) = c
        .get(c.fetch, &format!("http://unknown.test:{port}/later/"))
        .await;
    assert!(
        code != 0 && out.contains("waits for approval of action"),
        "{code} {out}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // Around the proxy: nothing there.
    let (code, out) = c
        .get(c.direct, &format!("http://127.0.0.1:{port}/direct/"))
        .await;
    assert_ne!(code, 0, "{out}");
    let paths = seen.lock().unwrap().clone();
    assert!(
        !paths
            .iter()
            .any(|p| p == "/direct/" || p == "/denied/" || p == "/later/"),
        "{paths:?}"
    );

    // Every connection that went through is an event of this agent.
    let connected = wait_events(c.engine, "network.connected", through).await;
    assert_eq!(connected.len(), through, "{connected:?}");
    for e in &connected {
        assert_eq!(e.agent.as_deref(), Some(c.agent));
        assert_eq!(e.payload["port"], port);
        assert_eq!(e.payload["address"], format!("127.0.0.1:{port}"));
        assert!(e.payload["bytes_in"].as_u64().unwrap() > 20, "{e:?}");
    }
    let approved: Vec<_> = connected
        .iter()
        .filter(|e| e.payload["host"] == "unknown.test")
        .collect();
    assert_eq!(approved.len(), 1, "{connected:?}");
    assert!(approved[0].payload["approved_action"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_berth_reaches_the_registry_only_through_its_proxy() {
    let (port, seen) = registry().await;
    let f = Fixture::new().await;
    allowlist(&f.state(), "demo", 30);
    fixed_hosts(&f.engine);
    f.up_runner("dev-1").await;
    let (code, env, _) = common::terminal(&f.engine, "dev-1", "env").await;
    assert_eq!(code, 0);
    for line in [
        "HTTP_PROXY=http://127.0.0.1:3128",
        "https_proxy=http://127.0.0.1:3128",
        "NO_PROXY=localhost,127.0.0.1",
    ] {
        assert!(env.lines().any(|l| l == line), "{line}: {env}");
    }
    let client = Client {
        engine: &f.engine,
        agent: "dev-1",
        fetch: "curl -sS --fail-with-body --max-time 60 {url}",
        direct: "curl -sS --max-time 5 --noproxy '*' {url}",
        tunnel: Some("curl -sS --max-time 60 --proxytunnel {url}"),
    };
    scenario(&client, &f.state(), "demo", port, &seen).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_berth_reaches_the_registry_only_through_its_proxy() {
    mounted_scenario("egress", ContainerDoor::ByPrivilege).await;
}

/// The same berth when its listener cannot be made by entering the
/// container's namespace (berth not root): the berth's exec agent binds it
/// as the berth's uid in the container and hands it over. Forced here as
/// root; a berth process that is not root takes this path on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_berth_gets_its_proxy_listener_from_its_exec_agent() {
    mounted_scenario("egress-agent", ContainerDoor::ExecAgent).await;
}

/// A berth process that is not root gets a mounted berth's listener only
/// from its exec agent, so with `[sandbox] exec_agent = false` `berth up`
/// refuses the berth, saying why and what to do (forced here as root, as
/// above); the same berth comes up when berth enters the namespace itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mounted_berth_without_its_exec_agent_is_refused_when_berth_is_not_root() {
    let Some(m) = mounted("egress-no-agent", "exec_agent = false").await else {
        return;
    };
    let state = StateDir::new(m.dir.path().join("state"));
    allowlist(&state, &m.project, 30);
    m.engine.set_egress_container_door(ContainerDoor::ExecAgent);
    let refused = m.try_up("dev-1").await.unwrap_err().to_string();
    for says in [
        "needs the berth's exec agent when berth does not run as root",
        "exec_agent = false",
        "exec_agent = true",
        "--mode runner",
    ] {
        assert!(refused.contains(says), "{says}: {refused}");
    }

    m.engine
        .set_egress_container_door(ContainerDoor::ByPrivilege);
    m.up("dev-1").await;
}

/// The acceptance scenario in a mounted berth (busybox wget) whose proxy
/// listener is made through `door`.
async fn mounted_scenario(test: &str, door: ContainerDoor) {
    let Some(m) = mounted(test, "").await else {
        return;
    };
    let (port, seen) = registry().await;
    let state = StateDir::new(m.dir.path().join("state"));
    allowlist(&state, &m.project, 30);
    fixed_hosts(&m.engine);
    m.engine.set_egress_container_door(door);
    m.up("dev-1").await;
    let client = Client {
        engine: &m.engine,
        agent: "dev-1",
        fetch: "wget -q -O - {url}",
        direct: "wget -q -T 5 -Y off -O - {url}",
        tunnel: None,
    };
    scenario(&client, &state, &m.project, port, &seen).await;
}

/// A simple index (PEP 503) of one wheel, made with Python's zipfile, in
/// `root/simple/example/`.
fn simple_index(root: &std::path::Path) {
    let script = r#"
import os, sys, zipfile
root = sys.argv[1]
d = os.path.join(root, "simple", "example")
os.makedirs(d)
wheel = "example-1.0-py3-none-any.whl"
with zipfile.ZipFile(os.path.join(d, wheel), "w") as z:
    z.writestr("example/__init__.py", "")
    z.writestr("example-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: example\nVersion: 1.0\n")
    z.writestr("example-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("example-1.0.dist-info/RECORD", "")
with open(os.path.join(d, "index.html"), "w") as f:
    f.write('<html><body><a href="%s">%s</a></body></html>\n' % (wheel, wheel))
"#;
    let status = std::process::Command::new("/usr/bin/python3")
        .args(["-c", script])
        .arg(root)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Kills the index server when the test ends, failed or not.
struct Server(std::process::Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pip_downloads_a_wheel_through_a_runner_berths_proxy() {
    if !std::path::Path::new("/usr/bin/python3").is_file() {
        eprintln!("skipping: no /usr/bin/python3");
        return;
    }
    let index = tempfile::tempdir().unwrap();
    simple_index(index.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = Server(
        std::process::Command::new("/usr/bin/python3")
            .args(["-m", "http.server", "--bind", "127.0.0.1"])
            .arg(port.to_string())
            .current_dir(index.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let f = Fixture::new().await;
    allowlist(&f.state(), "demo", 30);
    fixed_hosts(&f.engine);
    f.up_runner("dev-1").await;
    let (code, out, err) = common::terminal(
        &f.engine,
        "dev-1",
        &format!(
            "/usr/bin/python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check \
             --index-url http://registry.test:{port}/simple/ --trusted-host registry.test -d /tmp/dl example && ls /tmp/dl"
        ),
    )
    .await;
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("example-1.0-py3-none-any.whl"), "{out}\n{err}");
    let connected = wait_events(&f.engine, "network.connected", 2).await;
    assert!(
        connected.len() >= 2
            && connected
                .iter()
                .all(|e| e.payload["host"] == "registry.test"),
        "{connected:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runner_berth_reaches_a_tls_registry_through_a_connect_tunnel() {
    if !std::path::Path::new("/usr/bin/openssl").is_file() {
        eprintln!("skipping: no /usr/bin/openssl");
        return;
    }
    let site = tempfile::tempdir().unwrap();
    let made = std::process::Command::new("/usr/bin/openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=registry.test",
            "-addext",
            "subjectAltName=DNS:registry.test",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
        ])
        .current_dir(site.path())
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    std::fs::write(site.path().join("hello.txt"), "over tls\n").unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let serve = format!(
        "import http.server, ssl\n\
         s = http.server.HTTPServer(('127.0.0.1', {port}), http.server.SimpleHTTPRequestHandler)\n\
         c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n\
         c.load_cert_chain('cert.pem', 'key.pem')\n\
         s.socket = c.wrap_socket(s.socket, server_side=True)\n\
         s.serve_forever()\n"
    );
    let _server = Server(
        std::process::Command::new("/usr/bin/python3")
            .args(["-c", &serve])
            .current_dir(site.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    for _ in 0..100 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let f = Fixture::new().await;
    allowlist(&f.state(), "demo", 30);
    fixed_hosts(&f.engine);
    f.up_runner("dev-1").await;
    // The berth trusts the test's certificate: it is in the worktree.
    let worktree = f.dir.path().join("state/berths/demo/dev-1/dev-1");
    std::fs::copy(site.path().join("cert.pem"), worktree.join("test-ca.pem")).unwrap();
    let (code, out, err) = common::terminal(
        &f.engine,
        "dev-1",
        &format!(
            "curl -sS --fail-with-body --max-time 60 --cacert /work/test-ca.pem https://registry.test:{port}/hello.txt"
        ),
    )
    .await;
    assert_eq!((code, out.as_str()), (0, "over tls\n"), "{err}");
    let connected = wait_events(&f.engine, "network.connected", 1).await;
    assert_eq!(connected.len(), 1, "{connected:?}");
    assert_eq!(connected[0].payload["host"], "registry.test");
    assert_eq!(connected[0].payload["port"], port);
}

/// A `command` agent's program reaches only `[agent] model_hosts`, through
/// berth's proxy on its runner's loopback, though the project itself has no
/// network: the model's host answers, any other host is refused with
/// berth's reason, and the connection is an event of the agent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_agents_program_reaches_only_the_models_hosts() {
    let (port, seen) = registry().await;
    let f = Fixture::new().await;
    let cfg = f.state().project_config("demo");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let text = text.replacen("model_hosts = []", "model_hosts = [\"registry.test\"]", 1);
    assert!(text.contains("model_hosts = [\"registry.test\"]"), "{text}");
    std::fs::write(&cfg, text).unwrap();
    fixed_hosts(&f.engine);
    f.agent("dev-1", AgentImpl::Command).await;
    let program = format!(
        "curl -sS --max-time 30 http://registry.test:{port}/model/; \
         curl -sS --fail-with-body --max-time 30 http://unknown.test:{port}/other/; echo rc=$?"
    );
    f.engine
        .set_agent_command("dev-1", vec!["sh".into(), "-c".into(), program], &user())
        .await
        .unwrap();
    f.engine
        .up(&named("dev-1"), &named("demo"), None, &user())
        .await
        .unwrap();
    let t = f
        .engine
        .create_task("demo", "ask the model", &user())
        .await
        .unwrap();
    f.engine
        .open_session("dev-1", &t.id, &user())
        .await
        .unwrap();
    f.engine
        .send_prompt(NewPrompt::message("dev-1", "go"), &user())
        .await
        .unwrap();
    let turn = f
        .engine
        .run_command_turn(&named("dev-1"))
        .await
        .unwrap()
        .expect("a prompt was deliverable");
    let said = format!("{}{}", turn.stdout_tail, turn.stderr_tail);
    assert!(said.contains("package index at /model/"), "{said}");
    assert!(said.contains("not one of the model's hosts"), "{said}");
    assert!(!said.contains("rc=0"), "{said}");
    assert!(!seen.lock().unwrap().iter().any(|p| p == "/other/"));
    let connected = wait_events(&f.engine, "network.connected", 1).await;
    assert_eq!(connected.len(), 1, "{connected:?}");
    assert_eq!(connected[0].agent.as_deref(), Some("dev-1"));
    assert_eq!(connected[0].payload["host"], "registry.test");
    let started = events(&f.engine, "session.turn_started").await;
    assert_eq!(started[0].payload["network"], "model_hosts");
}
