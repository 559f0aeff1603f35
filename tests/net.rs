//! `berth net log`: the connections that went through berth's egress proxy,
//! read from the `network.connected` events the engine's gate wrote. The
//! proxy runs in this test process on the CLI's state directory; a one-shot
//! HTTP server on loopback is the registry.

use std::sync::Arc;

use berth_egress::{BerthKey, Egress};
use berth_engine::egress_gate::EngineGate;
use berth_engine::projects::with_key;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::fixture::Fixture;

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
    let origin = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = origin.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        while let Ok((mut s, _)) = origin.accept() {
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\nfetched!\n",
            );
        }
    });
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
        "fetched!\n"
    );
    let out = cli.run(&[
        "exec",
        "dev-1",
        "--",
        &format!("curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:{port}/direct"),
    ]);
    assert!(!out.status.success(), "{out:?}");
    let v = cli.json(&["net", "log", "dev-1", "--json"]);
    let rows = v.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{v}");
    assert_eq!(rows[0]["host"], "registry.test");
    assert_eq!(rows[0]["address"], format!("127.0.0.1:{port}"));
}
