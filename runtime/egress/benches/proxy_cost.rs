//! What the egress proxy costs a berth's client, against a direct loopback
//! connection, in one run: the time of a 100 MB download (through a CONNECT
//! tunnel, and as a plain-HTTP forward) and the time per connection
//! (connect, one small request and answer, close) with each connection a
//! real `berth_policy::decide` of `network_connect`. Printed as ratios and
//! the added time per connection.
//!
//! `cargo bench -p berth-egress --bench proxy_cost`; `BERTH_BENCH_MB` and
//! `BERTH_BENCH_ROUNDS` change the download size and the connection rounds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_egress::{BerthKey, Egress};
use berth_policy::decision::RuleList;
use berth_policy::{Autonomy, RuleSet};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The tests' gate: each connection a real `berth_policy::decide`.
#[path = "../tests/policy_gate.rs"]
mod policy_gate;
use policy_gate::PolicyGate;

/// A server that answers each request head with `size` bytes.
async fn server(size: usize) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = l.local_addr().unwrap().port();
    let block = Arc::new(vec![b'x'; 1 << 16]);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let block = Arc::clone(&block);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
                if s.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let mut left = size;
                while left > 0 {
                    let n = left.min(block.len());
                    if s.write_all(&block[..n]).await.is_err() {
                        return;
                    }
                    left -= n;
                }
                let _ = s.shutdown().await;
            });
        }
    });
    port
}

#[derive(Clone, Copy)]
enum Path {
    Direct,
    Tunnel,
    Forward,
}

/// One request of `path` to the server at `port`; returns the bytes read.
async fn fetch(path: Path, proxy: u16, port: u16) -> usize {
    let target = match path {
        Path::Direct => port,
        Path::Tunnel | Path::Forward => proxy,
    };
    let mut s = TcpStream::connect(("127.0.0.1", target)).await.unwrap();
    s.set_nodelay(true).unwrap();
    let request = match path {
        Path::Direct => "GET /f HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_string(),
        Path::Tunnel => format!(
            "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\nGET /f HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        ),
        Path::Forward => {
            format!("GET http://127.0.0.1:{port}/f HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        }
    };
    s.write_all(request.as_bytes()).await.unwrap();
    let mut total = 0;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = s.read(&mut buf).await.unwrap();
        if n == 0 {
            return total;
        }
        total += n;
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mb: usize = std::env::var("BERTH_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let rounds: usize = std::env::var("BERTH_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut rules = RuleSet::default();
        rules.add_host(RuleList::Allow, "127.0.0.1", None).unwrap();
        let gate = Arc::new(PolicyGate {
            rules,
            autonomy: Autonomy::default(),
            wait: Duration::ZERO,
            pending: Mutex::new(Vec::new()),
            connected: Mutex::new(Vec::new()),
        });
        let proxy = Egress::new(gate)
            .listen_loopback(BerthKey {
                project: "bench".into(),
                agent: "dev-1".into(),
            })
            .await
            .unwrap()
            .port();
        let big = server(mb << 20).await;
        let small = server(64).await;

        // Downloads, interleaved so the machine's load hits each alike.
        let mut times = [Vec::new(), Vec::new(), Vec::new()];
        for _ in 0..5 {
            for (i, path) in [Path::Direct, Path::Tunnel, Path::Forward]
                .into_iter()
                .enumerate()
            {
                let t = Instant::now();
                let n = fetch(path, proxy, big).await;
                times[i].push(t.elapsed());
                assert!(n > mb << 20, "short download: {n}");
            }
        }
        let [direct, tunnel, forward] = times.map(median);
        let rate = |d: Duration| (mb as f64) / d.as_secs_f64();
        println!("download of {mb} MB (median of 5):");
        println!(
            "  direct   {:>8.1} ms  {:>7.0} MB/s",
            direct.as_secs_f64() * 1e3,
            rate(direct)
        );
        println!(
            "  CONNECT  {:>8.1} ms  {:>7.0} MB/s  ratio {:.2}x",
            tunnel.as_secs_f64() * 1e3,
            rate(tunnel),
            tunnel.as_secs_f64() / direct.as_secs_f64()
        );
        println!(
            "  forward  {:>8.1} ms  {:>7.0} MB/s  ratio {:.2}x",
            forward.as_secs_f64() * 1e3,
            rate(forward),
            forward.as_secs_f64() / direct.as_secs_f64()
        );

        // Connections: connect, one small request and answer, close.
        let mut conn = [Vec::new(), Vec::new()];
        for _ in 0..rounds {
            for (i, path) in [Path::Direct, Path::Tunnel].into_iter().enumerate() {
                let t = Instant::now();
                fetch(path, proxy, small).await;
                conn[i].push(t.elapsed());
            }
        }
        let [cd, ct] = conn.map(median);
        println!("one connection, a 64-byte answer (median of {rounds}):");
        println!("  direct   {:>8.3} ms", cd.as_secs_f64() * 1e3);
        println!(
            "  CONNECT  {:>8.3} ms  added {:.3} ms  ratio {:.2}x",
            ct.as_secs_f64() * 1e3,
            (ct.as_secs_f64() - cd.as_secs_f64()) * 1e3,
            ct.as_secs_f64() / cd.as_secs_f64()
        );
    });
}
