//! The proxy end to end on loopback: a local HTTP server stands in for a
//! registry; a client speaks CONNECT or plain HTTP to a berth's listener.
//! The gate decides with `berth_policy::decide` over real host rules; a
//! pending decision is settled by the test through a channel (the engine's
//! gate settles it from its store).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use berth_egress::{BerthKey, Connected, Egress, Settlement};
use berth_policy::decision::RuleList;
use berth_policy::{Autonomy, RuleSet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::policy_gate::PolicyGate;

/// A registry: answers every request with `200` and a body naming the path.
async fn registry() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&buf).to_string();
                let path = head.split(' ').nth(1).unwrap_or("?").to_string();
                let body = format!("package index at {path}\n");
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
                let _ = s.shutdown().await;
            });
        }
    });
    port
}

struct Setup {
    gate: Arc<PolicyGate>,
    proxy: u16,
    registry: u16,
}

async fn setup(
    allow: &[&str],
    ask: &[&str],
    deny: &[&str],
    autonomy: Autonomy,
    wait: Duration,
) -> Setup {
    let mut rules = RuleSet::default();
    for (list, hosts) in [
        (RuleList::Allow, allow),
        (RuleList::Ask, ask),
        (RuleList::Deny, deny),
    ] {
        for h in hosts {
            rules.add_host(list, h, None).unwrap();
        }
    }
    let gate = Arc::new(PolicyGate {
        rules,
        autonomy,
        wait,
        pending: Mutex::new(Vec::new()),
        connected: Mutex::new(Vec::new()),
    });
    // `inward.test`: a public-looking name that resolves inward.
    let hosts: berth_egress::FixedHosts = Arc::new(
        [(
            "inward.test".to_string(),
            vec![std::net::IpAddr::from([127, 0, 0, 1])],
        )]
        .into_iter()
        .collect(),
    );
    let proxy = Egress::new(Arc::clone(&gate))
        .with_hosts(hosts)
        .listen_loopback(BerthKey {
            project: "p".into(),
            agent: "dev-1".into(),
        })
        .await
        .unwrap()
        .port();
    Setup {
        gate,
        proxy,
        registry: registry().await,
    }
}

/// Sends `request` to the proxy and reads until it closes.
async fn ask_proxy(proxy: u16, request: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", proxy)).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut out))
        .await
        .expect("the proxy answers")
        .unwrap();
    String::from_utf8_lossy(&out).to_string()
}

/// A CONNECT, then a GET through the tunnel.
fn tunnel(host: &str, port: u16) -> String {
    format!(
        "CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\nGET /simple/ HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
}

async fn wait_connected(gate: &PolicyGate, n: usize) -> Vec<Connected> {
    for _ in 0..200 {
        let c = gate.connected.lock().unwrap().clone();
        if c.len() >= n {
            return c;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    gate.connected.lock().unwrap().clone()
}

/// Waits until the gate has handed out `n` pending decisions.
async fn wait_pending(gate: &PolicyGate, n: usize) {
    for _ in 0..200 {
        if gate.pending.lock().unwrap().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn allowed_connect_and_plain_http_go_through_and_are_recorded() {
    let s = setup(
        &["127.0.0.1"],
        &[],
        &[],
        Autonomy::manual(),
        Duration::from_secs(5),
    )
    .await;
    let out = ask_proxy(s.proxy, &tunnel("127.0.0.1", s.registry)).await;
    assert!(
        out.starts_with("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK"),
        "{out}"
    );
    assert!(out.ends_with("package index at /simple/\n"), "{out}");

    let plain = format!(
        "GET http://127.0.0.1:{}/simple/wheel/ HTTP/1.1\r\nHost: 127.0.0.1\r\nProxy-Connection: keep-alive\r\n\r\n",
        s.registry
    );
    let out = ask_proxy(s.proxy, &plain).await;
    assert!(out.starts_with("HTTP/1.1 200 OK"), "{out}");
    assert!(out.ends_with("package index at /simple/wheel/\n"), "{out}");

    let c = wait_connected(&s.gate, 2).await;
    assert_eq!(c.len(), 2, "{c:?}");
    for r in &c {
        assert_eq!(
            (r.berth.agent.as_str(), r.host.as_str(), r.port),
            ("dev-1", "127.0.0.1", s.registry)
        );
        assert_eq!(r.addr.port(), s.registry);
        assert!(r.bytes_out > 30 && r.bytes_in > 30, "{r:?}");
        assert_eq!(r.action, None);
    }
}

#[tokio::test]
async fn denied_hosts_get_403_with_the_reason_and_nothing_is_recorded() {
    let s = setup(
        &["127.0.0.1"],
        &[],
        &["blocked.test"],
        Autonomy::auto(),
        Duration::from_secs(5),
    )
    .await;
    let cases = [
        (
            tunnel("blocked.test", 443),
            "deny rule",
            "a deny rule holds in auto mode",
        ),
        (
            tunnel("127.0.0.2", s.registry),
            "loopback",
            "loopback not named in allow",
        ),
        (
            tunnel("2130706433", s.registry),
            "",
            "127.0.0.1 spelt as one number is the named 127.0.0.1",
        ),
        (
            tunnel("169.254.169.254", 80),
            "metadata",
            "the cloud metadata address",
        ),
        (
            "GET /relative HTTP/1.1\r\n\r\n".to_string(),
            "400",
            "a request the proxy cannot read",
        ),
    ];
    for (request, want, why) in &cases[..2] {
        let out = ask_proxy(s.proxy, request).await;
        assert!(out.starts_with("HTTP/1.1 403 berth: "), "{why}: {out}");
        assert!(out.contains(want), "{why}: {out}");
    }
    // The decimal spelling of the named 127.0.0.1 is that address: named, allowed.
    let out = ask_proxy(s.proxy, &cases[2].0).await;
    assert!(out.contains("package index"), "{out}");
    for (request, want, why) in &cases[3..] {
        let out = ask_proxy(s.proxy, request).await;
        assert!(out.starts_with("HTTP/1.1 4"), "{why}: {out}");
        assert!(out.contains(want), "{why}: {out}");
    }
    let c = wait_connected(&s.gate, 1).await;
    assert_eq!(c.len(), 1, "only the allowed one is recorded: {c:?}");
}

#[tokio::test]
async fn a_name_that_resolves_inward_is_refused_unless_named() {
    let s = setup(&[], &[], &[], Autonomy::auto(), Duration::from_secs(5)).await;
    let out = ask_proxy(s.proxy, &tunnel("inward.test", s.registry)).await;
    assert!(
        out.starts_with("HTTP/1.1 403 berth: inward.test resolves to "),
        "auto mode approves the name, the resolved address is refused: {out}"
    );
    // A loopback name is refused before it is resolved.
    let out = ask_proxy(s.proxy, &tunnel("localhost", s.registry)).await;
    assert!(
        out.starts_with("HTTP/1.1 403") && out.contains("a loopback name"),
        "{out}"
    );
    let s = setup(
        &["inward.test"],
        &[],
        &[],
        Autonomy::manual(),
        Duration::from_secs(5),
    )
    .await;
    let out = ask_proxy(s.proxy, &tunnel("inward.test", s.registry)).await;
    assert!(out.contains("package index"), "named in allow: {out}");
}

#[tokio::test]
async fn a_pending_connection_is_held_then_goes_through_when_approved() {
    // An ask rule holds 127.0.0.1 (named in allow) for a person.
    let s = setup(
        &["127.0.0.1"],
        &["127.0.0.1"],
        &[],
        Autonomy::auto(),
        Duration::from_secs(10),
    )
    .await;
    let (proxy, registry) = (s.proxy, s.registry);
    let client =
        tokio::spawn(async move { ask_proxy(proxy, &tunnel("127.0.0.1", registry)).await });
    // Wait until the proxy holds it, then approve.
    wait_pending(&s.gate, 1).await;
    let id = s.gate.settle(Settlement::Approved);
    let out = client.await.unwrap();
    assert!(out.contains("package index at /simple/"), "{out}");
    let c = wait_connected(&s.gate, 1).await;
    assert_eq!(c.first().and_then(|r| r.action.clone()), Some(id));
}

#[tokio::test]
async fn a_pending_connection_is_refused_naming_the_action_when_denied_or_not_answered() {
    let s = setup(
        &["127.0.0.1"],
        &["127.0.0.1"],
        &[],
        Autonomy::auto(),
        Duration::from_millis(300),
    )
    .await;
    let started = std::time::Instant::now();
    let out = ask_proxy(s.proxy, &tunnel("127.0.0.1", s.registry)).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert!(
        out.starts_with("HTTP/1.1 403 berth: 127.0.0.1:")
            && out.contains("waits for approval of action act-1; retry"),
        "{out}"
    );

    let (proxy, registry) = (s.proxy, s.registry);
    let client =
        tokio::spawn(async move { ask_proxy(proxy, &tunnel("127.0.0.1", registry)).await });
    wait_pending(&s.gate, 2).await;
    s.gate.pending.lock().unwrap().remove(0);
    s.gate.settle(Settlement::Denied("not this one".into()));
    let out = client.await.unwrap();
    assert!(
        out.contains("network_connect act-2") && out.contains("was denied: not this one"),
        "{out}"
    );
    assert!(wait_connected(&s.gate, 1).await.is_empty());
}

/// A server that answers one request and then keeps its connection open
/// (it never closes): the proxy's copy of such a connection does not end
/// by itself.
async fn lingering_server() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                return;
            };
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await;
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                .await;
            held.push(s);
        }
    });
    port
}

/// A connection still open when the process serving the proxy exits (a
/// one-shot `berth exec` whose command ended while the server kept the
/// connection) is recorded by the drain, which cuts it within its bound.
#[tokio::test]
async fn a_connection_open_at_exit_is_cut_and_recorded_by_the_drain() {
    let s = setup(
        &["127.0.0.1"],
        &[],
        &[],
        Autonomy::manual(),
        Duration::from_secs(5),
    )
    .await;
    let proxy = Egress::new(Arc::clone(&s.gate));
    let open = proxy.open_connections();
    let port = proxy
        .listen_loopback(BerthKey {
            project: "p".into(),
            agent: "dev-1".into(),
        })
        .await
        .unwrap()
        .port();
    let upstream = lingering_server().await;

    let mut c = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    c.write_all(
        format!("GET http://127.0.0.1:{upstream}/pkg/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            .as_bytes(),
    )
    .await
    .unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 256];
    while !got.ends_with(b"ok\n") {
        let n = tokio::time::timeout(Duration::from_secs(20), c.read(&mut chunk))
            .await
            .expect("the answer comes through")
            .unwrap();
        assert!(n > 0, "closed early: {got:?}");
        got.extend_from_slice(&chunk[..n]);
    }
    drop(c);

    // The server keeps its side open: nothing is recorded yet.
    assert_eq!(wait_connected(&s.gate, 1).await.len(), 0);
    assert_eq!(open.count(), 1);

    let left = open
        .drain(Duration::from_millis(100), Duration::from_secs(10))
        .await;
    assert_eq!(left, 0);
    let c = s.gate.connected.lock().unwrap().clone();
    assert_eq!(c.len(), 1, "{c:?}");
    assert_eq!((c[0].host.as_str(), c[0].port), ("127.0.0.1", upstream));
}
