//! `berth net log`: the connections that went through berth's egress proxy,
//! read from the `network.connected` events the engine's gate wrote. The
//! proxy runs in this test process on the CLI's state directory; a one-shot
//! HTTP server on loopback is the registry. And berth's own proxy for a
//! one-shot `berth exec`: in a runner berth, and in a mounted berth with
//! berth running as a uid that is not root.

use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::{Arc, Mutex};

use berth_egress::{BerthKey, Egress};
use berth_engine::egress_gate::EngineGate;
use berth_engine::projects::with_key;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::docker::docker_answers;
use crate::fixture::{Fixture, expect_ok};

/// Connects dev-1 through the proxy to a loopback server once; returns the
/// server's port.
async fn one_connection(state: std::path::PathBuf) -> u16 {
    let origin = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = origin.local_addr().unwrap().port();
    tokio::spawn(async move {
        let (mut s, _) = origin.accept().await.unwrap();
        let mut buf = [0u8; 1024];
        let _ = s.read(&mut buf).await;
        let _ = s
            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n")
            .await;
    });
    let engine = Arc::new(
        berth_engine::Engine::open(berth_engine::state::StateDir::new(state))
            .await
            .unwrap(),
    );
    let proxy = Egress::new(Arc::new(EngineGate::new(Arc::clone(&engine))))
        .listen_loopback(BerthKey {
            project: "demo".into(),
            agent: "dev-1".into(),
        })
        .await
        .unwrap();
    let mut c = TcpStream::connect(proxy).await.unwrap();
    let req = format!("GET http://127.0.0.1:{port}/simple/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    c.write_all(req.as_bytes()).await.unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).await.unwrap();
    assert!(out.ends_with("ok\n"), "{out}");
    for _ in 0..100 {
        if !engine.connections(Some("dev-1")).await.unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    port
}

#[test]
fn net_log_lists_the_connections_that_went_through() {
    let cli = Fixture::new().with_project();
    cli.edit_config(|t| {
        let t = with_key(&t, "sandbox.network", "mode", "\"allowlist\"");
        with_key(&t, "sandbox.network", "allow", "[\"127.0.0.1\"]")
    });
    cli.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    cli.ok(&["agent", "activate", "dev-2", "--project", "demo"]);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let port = rt.block_on(one_connection(cli.state()));

    let v = cli.json(&["net", "log", "dev-1", "--json"]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    let r = &rows[0];
    assert_eq!(r["agent"], "dev-1");
    assert_eq!(r["host"], "127.0.0.1");
    assert_eq!(r["port"], port);
    assert_eq!(r["address"], format!("127.0.0.1:{port}"));
    assert!(r["bytes_in"].as_u64().unwrap() > 20, "{r}");
    assert!(r["approved_action"].is_null());

    assert_eq!(
        cli.json(&["net", "log", "dev-2", "--json"]),
        serde_json::json!([])
    );
    let human = cli.ok(&["net", "log"]);
    assert!(
        human.contains("dev-1") && human.contains(&format!("127.0.0.1:{port} (127.0.0.1:{port})")),
        "{human}"
    );
    let (code, err) = cli.err(&["net", "log", "nobody"]);
    assert_ne!(code, 0);
    assert!(err.contains("nobody"), "{err}");
}

/// A one-shot `berth exec` in a runner berth with `mode = "allowlist"`: the
/// berth process serves the exec's proxy for the exec's duration, so curl
/// reaches a loopback server by a name `BERTH_EGRESS_HOSTS` fixes, and the
/// connection is in `berth net log` afterwards; around the proxy, nothing.
#[test]
fn a_one_shot_exec_reaches_an_allowed_host_through_its_own_proxy() {
    let (port, seen) = loopback_registry();
    let mut cli = Fixture::new().with_berth_mode("runner");
    cli.set_env("BERTH_EGRESS_HOSTS", "registry.test=127.0.0.1");
    cli.edit_config(|t| {
        let t = with_key(&t, "sandbox.network", "mode", "\"allowlist\"");
        with_key(&t, "sandbox.network", "allow", "[\"registry.test\"]")
    });
    cli.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    cli.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let url = format!("http://registry.test:{port}/pkg");
    assert_eq!(
        cli.ok(&[
            "exec",
            "dev-1",
            "--",
            &format!("curl -sS --fail-with-body --max-time 30 {url}")
        ]),
        "ok /pkg\n"
    );
    let out = cli.run(&[
        "exec",
        "dev-1",
        "--",
        &format!("curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{port}/direct"),
    ]);
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(*seen.lock().unwrap(), ["/pkg"]);
    let v = cli.json(&["net", "log", "dev-1", "--json"]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["host"], "registry.test");
    assert_eq!(rows[0]["address"], format!("127.0.0.1:{port}"));
}

/// A registry on loopback: answers every request with `ok <path>` and
/// records the paths it was asked for.
pub(crate) fn loopback_registry() -> (u16, Arc<Mutex<Vec<String>>>) {
    use std::io::{Read, Write};
    let origin = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = origin.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let paths = Arc::clone(&seen);
    std::thread::spawn(move || {
        while let Ok((mut s, _)) = origin.accept() {
            let mut buf = [0u8; 2048];
            let n = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = head.split(' ').nth(1).unwrap_or("").to_string();
            let path = path
                .rsplit_once(&format!(":{port}"))
                .map_or(path.clone(), |(_, p)| p.to_string());
            let body = format!("ok {path}\n");
            paths.lock().unwrap().push(path);
            let _ = s.write_all(
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
                .as_bytes(),
            );
        }
    });
    (port, seen)
}

/// The uid a test runs berth as when it runs as root: one no account has.
fn unused_uid() -> u32 {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let taken: Vec<u32> = passwd
        .lines()
        .filter_map(|l| l.split(':').nth(2)?.parse().ok())
        .collect();
    (61_000 + std::process::id() % 1000..)
        .find(|u| !taken.contains(u))
        .unwrap()
}

/// `cmd` run as `uid` (its own group, and `docker_gid` for the Docker
/// socket) when given, else as this process.
fn as_user(mut cmd: Command, uid: Option<u32>, docker_gid: u32) -> Command {
    if let Some(uid) = uid {
        // SAFETY: setgroups, setgid and setuid are async-signal-safe system
        // calls, in the child before it execs.
        unsafe {
            cmd.pre_exec(move || {
                let groups = [docker_gid];
                if libc::setgroups(1, groups.as_ptr()) != 0
                    || libc::setgid(uid) != 0
                    || libc::setuid(uid) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    cmd
}

/// berth itself as a uid that is not root, as a person runs it: its own
/// state directory and home, Docker through the socket's group, a mounted
/// berth in `mode = "allowlist"`. Not root, berth cannot enter the
/// container's network namespace, so the berth's exec agent makes the
/// proxy's listener there and hands it over (the path a root berth takes
/// only when forced). The agent's command reaches the allowed host through
/// the proxy, is refused the denied one with berth's reason, and reaches
/// nothing around the proxy; `berth net log` has the one connection.
/// Run as root, the test drops berth to a uid no account has; run as
/// another user, berth runs as that user.
#[test]
fn a_berth_that_is_not_root_proxies_its_mounted_berth_through_the_exec_agent() {
    if !docker_answers() {
        return;
    }
    // SAFETY: geteuid has no preconditions.
    let uid = (unsafe { libc::geteuid() } == 0).then(unused_uid);
    let docker_gid = std::fs::metadata("/var/run/docker.sock")
        .map(|m| m.gid())
        .unwrap();
    let (port, seen) = loopback_registry();
    let project = format!("u{}", std::process::id());
    let mut cli = Fixture::named(&project);
    cli.source_repo();
    if let Some(uid) = uid {
        let owner = format!("{uid}:{uid}");
        let st = Command::new("chown")
            .args(["-R", &owner])
            .arg(cli.root())
            .status()
            .unwrap();
        assert!(st.success());
    }
    let home = cli.root().to_str().unwrap().to_string();
    cli.set_env("HOME", &home);
    cli.set_env(
        "BERTH_EGRESS_HOSTS",
        "registry.test=127.0.0.1,blocked.test=127.0.0.1",
    );
    let run = |args: &[&str]| {
        as_user(cli.command(args), uid, docker_gid)
            .output()
            .unwrap()
    };
    let ok = |args: &[&str]| expect_ok(args, run(args));
    ok(&["init"]);
    ok(&[
        "project",
        "add",
        &project,
        "--from",
        cli.source_repo().to_str().unwrap(),
    ]);
    cli.edit_config(|t| {
        let t = with_key(&t, "sandbox.network", "mode", "\"allowlist\"");
        let t = with_key(&t, "sandbox.network", "allow", "[\"registry.test\"]");
        let t = with_key(&t, "sandbox.network", "deny", "[\"blocked.test\"]");
        with_key(&t, "sandbox.network", "wait_secs", "0")
    });
    ok(&["agent", "activate", "dev-1", "--project", &project]);
    let up = ok(&["up", "dev-1", "--project", &project, "--mode", "mounted"]);
    assert!(up.contains("berth is not running as root"), "{up}");
    ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);

    let exec = |command: String| run(&["exec", "dev-1", "--", &command]);
    let allowed = exec(format!("wget -q -O - http://registry.test:{port}/pkg/"));
    assert_eq!(
        String::from_utf8_lossy(&allowed.stdout),
        "ok /pkg/\n",
        "{allowed:?}"
    );
    let denied = exec(format!("wget -q -O - http://blocked.test:{port}/nope/"));
    let said = String::from_utf8_lossy(&denied.stderr);
    assert!(
        !denied.status.success() && said.contains("deny rule") && said.contains("blocked.test"),
        "{denied:?}"
    );
    let around = exec(format!(
        "wget -q -T 5 -Y off -O - http://127.0.0.1:{port}/direct/"
    ));
    assert!(!around.status.success(), "{around:?}");
    assert_eq!(*seen.lock().unwrap(), ["/pkg/"]);

    let v: serde_json::Value =
        serde_json::from_str(&ok(&["net", "log", "dev-1", "--json"])).unwrap();
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["host"], "registry.test");
    assert_eq!(rows[0]["address"], format!("127.0.0.1:{port}"));
}
