//! The egress proxy with the engine's gate: a project in
//! `[sandbox.network] mode = "allowlist"`, a local HTTP server on loopback
//! as the registry, a client speaking CONNECT to the berth's listener. The
//! decisions read the project's berth.toml and permissions.json and the
//! agent's autonomy from the store; a held connection is a pending
//! `network_connect` a person approves with `approve`; every connection
//! that went through is a `network.connected` event.

use std::sync::Arc;
use std::time::Duration;

use berth_egress::{BerthKey, Egress};
use berth_engine::egress_gate::EngineGate;
use berth_engine::{AgentImpl, EventFilter};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::common::{Fixture, registry, user};

/// Project `demo` with `[sandbox.network]` set from `lines`, `rules` as its
/// permissions.json, agent dev-1, and the proxy serving dev-1's listener.
async fn setup(network: &[(&str, &str)], rules: &str) -> (Fixture, Arc<berth_engine::Engine>, u16) {
    let f = Fixture::new().await;
    f.agent("dev-1", AgentImpl::Noop).await;
    let state = f.state();
    let cfg = state.project_config("demo");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    for (key, value) in network {
        text = berth_engine::projects::with_key(&text, "sandbox.network", key, value);
    }
    std::fs::write(&cfg, text).unwrap();
    std::fs::write(state.project_rules("demo"), rules).unwrap();
    let engine = Arc::new(berth_engine::Engine::open(state).await.unwrap());
    // `registry.test`: a name the rules do not know, served on loopback.
    let hosts: berth_egress::FixedHosts = Arc::new(
        [(
            "registry.test".to_string(),
            vec![std::net::IpAddr::from([127, 0, 0, 1])],
        )]
        .into_iter()
        .collect(),
    );
    let proxy = Egress::new(Arc::new(EngineGate::new(Arc::clone(&engine))))
        .with_hosts(hosts)
        .listen_loopback(BerthKey {
            project: "demo".into(),
            agent: "dev-1".into(),
        })
        .await
        .unwrap()
        .port();
    (f, engine, proxy)
}

async fn through(proxy: u16, host: &str, port: u16) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
    let req = format!(
        "CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\nGET /simple/ HTTP/1.1\r\nHost: {host}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), s.read_to_end(&mut out))
        .await
        .expect("the proxy answers")
        .unwrap();
    String::from_utf8_lossy(&out).to_string()
}

pub(crate) async fn events(
    engine: &berth_engine::Engine,
    kind: &str,
) -> Vec<berth_engine::events::Event> {
    engine
        .events(&EventFilter {
            kind: Some(kind.into()),
            ..EventFilter::default()
        })
        .await
        .unwrap()
}

/// Waits for `n` events of `kind` (the proxy records after the connection closes).
pub(crate) async fn wait_events(
    engine: &berth_engine::Engine,
    kind: &str,
    n: usize,
) -> Vec<berth_engine::events::Event> {
    for _ in 0..100 {
        let e = events(engine, kind).await;
        if e.len() >= n {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    events(engine, kind).await
}

/// The id of the `network_connect` a held connection proposed.
async fn held_action(engine: &berth_engine::Engine) -> String {
    wait_events(engine, "proposed_action.created", 1)
        .await
        .iter()
        .find(|e| e.payload["action"]["type"] == "network_connect")
        .and_then(|e| e.action.clone())
        .expect("a network_connect action was proposed")
}

#[tokio::test]
async fn allowed_goes_through_and_is_an_event_denied_is_refused() {
    let (registry, _) = registry().await;
    let (_f, engine, proxy) = setup(
        &[
            ("mode", "\"allowlist\""),
            ("allow", "[\"127.0.0.1\"]"),
            ("deny", "[\"blocked.test\"]"),
        ],
        "{}",
    )
    .await;
    let out = through(proxy, "127.0.0.1", registry).await;
    assert!(
        out.starts_with("HTTP/1.1 200 Connection established"),
        "{out}"
    );
    assert!(out.ends_with("package index at /simple/\n"), "{out}");
    let ev = wait_events(&engine, "network.connected", 1).await;
    assert_eq!(ev.len(), 1, "{ev:?}");
    let e = &ev[0];
    assert_eq!(
        (e.agent.as_deref(), e.project.as_deref()),
        (Some("dev-1"), Some("demo"))
    );
    assert_eq!(e.payload["host"], "127.0.0.1");
    assert_eq!(e.payload["port"], registry);
    assert_eq!(e.payload["address"], format!("127.0.0.1:{registry}"));
    assert!(e.payload["bytes_in"].as_u64().unwrap() > 30, "{e:?}");
    assert!(e.payload["bytes_out"].as_u64().unwrap() > 10, "{e:?}");
    assert!(e.payload["duration_ms"].is_u64());
    assert!(e.payload["approved_action"].is_null());

    for (host, port, why) in [
        ("blocked.test", 443, "deny rule"),
        ("169.254.169.254", 80, "metadata"),
        ("0x7f000002", registry, "loopback"),
    ] {
        let out = through(proxy, host, port).await;
        assert!(out.starts_with("HTTP/1.1 403 berth: "), "{host}: {out}");
        assert!(out.contains(why), "{host}: {out}");
    }
    assert_eq!(events(&engine, "network.connected").await.len(), 1);
}

#[tokio::test]
async fn a_held_connection_is_a_pending_action_a_person_approves() {
    let (registry, _) = registry().await;
    let (_f, engine, proxy) = setup(
        &[
            ("mode", "\"allowlist\""),
            ("allow", "[\"127.0.0.1\"]"),
            ("wait_secs", "30"),
        ],
        r#"{"ask": ["WebFetch(domain:127.0.0.1)"]}"#,
    )
    .await;
    let client = tokio::spawn(async move { through(proxy, "127.0.0.1", registry).await });
    let id = held_action(&engine).await;
    assert_eq!(
        engine.action(&id).await.unwrap().status,
        berth_engine::ActionStatus::Pending
    );
    engine.approve(&id, &user(), false, None).await.unwrap();
    let out = client.await.unwrap();
    assert!(out.ends_with("package index at /simple/\n"), "{out}");
    let ev = wait_events(&engine, "network.connected", 1).await;
    assert_eq!(ev[0].payload["approved_action"], id.as_str());
    assert_eq!(ev[0].action.as_deref(), Some(id.as_str()));
}

#[tokio::test]
async fn an_unanswered_connection_is_refused_naming_its_action_and_other_modes_refuse() {
    let (registry, _) = registry().await;
    let (_f, _engine, proxy) = setup(
        &[
            ("mode", "\"allowlist\""),
            ("allow", "[\"127.0.0.1\"]"),
            ("wait_secs", "1"),
        ],
        r#"{"ask": ["WebFetch(domain:127.0.0.1)"]}"#,
    )
    .await;
    let out = through(proxy, "127.0.0.1", registry).await;
    assert!(
        out.starts_with("HTTP/1.1 403 berth: 127.0.0.1:")
            && out.contains("waits for approval of action "),
        "{out}"
    );

    let (_f, _engine, proxy) = setup(&[("mode", "\"none\"")], "{}").await;
    let out = through(proxy, "127.0.0.1", registry).await;
    assert!(out.contains("is `none`, not `allowlist`"), "{out}");
}

#[tokio::test]
async fn approve_always_adds_the_host_as_a_network_allow_rule() {
    let (registry, _) = registry().await;
    let (f, engine, proxy) = setup(&[("mode", "\"allowlist\""), ("wait_secs", "30")], "{}").await;
    // registry.test: unknown to the rules, so the agent's autonomy (no
    // rule: require_approval) holds it.
    let client = tokio::spawn(async move { through(proxy, "registry.test", registry).await });
    let id = held_action(&engine).await;
    let approved = engine.approve(&id, &user(), true, None).await.unwrap();
    assert_eq!(
        approved
            .rules
            .iter()
            .filter_map(|r| r.pattern.clone())
            .collect::<Vec<_>>(),
        ["WebFetch(domain:registry.test)"]
    );
    // The first connection may have looked at the rules before they were
    // written (then registry.test's loopback address was not yet named).
    let _ = client.await.unwrap();
    let rules = std::fs::read_to_string(f.state().project_rules("demo")).unwrap();
    assert!(rules.contains("WebFetch(domain:registry.test)"), "{rules}");
    // Now named: the next connection goes through at once, no action.
    let before = events(&engine, "proposed_action.created").await.len();
    let out = through(proxy, "registry.test", registry).await;
    assert!(out.ends_with("package index at /simple/\n"), "{out}");
    assert_eq!(
        events(&engine, "proposed_action.created").await.len(),
        before
    );
}
