//! What the egress proxy costs a berth's client, against a direct loopback
//! connection, in one run: a 100 MB download (through a CONNECT tunnel, and
//! as a plain-HTTP forward) and the time per connection (connect, one small
//! request and answer, close), each connection a real `berth_policy::decide`
//! of `network_connect`, recorded.
//!
//! The same client and server serve every path, built as the real ones are
//! — apart from the proxy: the server is blocking threads (one per
//! connection, 64 KiB writes), the client a blocking read loop (64 KiB
//! reads) on the bench's main thread, and the proxy a tokio runtime of its
//! own with two workers, as in a berth process. A direct download is the
//! client reading the server's socket; through the proxy, the same client
//! reads the proxy's.
//!
//! On loopback a download is bound by CPU, nearly all of it the kernel's,
//! and this machine's CPUs are shared, so wall time alone says more about
//! the neighbours than about the proxy. Each download is measured three
//! ways: wall time, the whole process's CPU time (`getrusage`: client,
//! server and proxy, user and system), and the proxy's own CPU time (its
//! runtime's threads' `schedstat`). The load average is printed with each
//! table. Paths are interleaved so load changes hit each alike; medians of
//! `BERTH_BENCH_RUNS` (default 7).
//!
//! The same downloads again from a server paced to a link's speed
//! (`BERTH_BENCH_LINK_MBIT`, default 1000; 0 leaves it out; median of 3):
//! a registry behind a real link, where the link and not the CPU bounds a
//! download, and what the proxy's CPU adds per byte runs beside it.
//!
//! `cargo bench -p berth-egress --bench proxy_cost`; `BERTH_BENCH_MB` and
//! `BERTH_BENCH_ROUNDS` change the download size and the connection rounds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_egress::{BerthKey, Egress};
use berth_policy::decision::RuleList;
use berth_policy::{Autonomy, RuleSet};

/// The tests' gate: each connection a real `berth_policy::decide`.
#[path = "../tests/policy_gate.rs"]
mod policy_gate;
use policy_gate::PolicyGate;

/// A server that answers each request head with `size` bytes: blocking,
/// a thread per connection; paced to `link` bytes a second when given (a
/// registry behind a link of that speed).
fn server(size: usize, link: Option<f64>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let block = Arc::new(vec![b'x'; 1 << 16]);
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let block = Arc::clone(&block);
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n");
                if s.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let started = Instant::now();
                let mut left = size;
                while left > 0 {
                    let n = left.min(block.len());
                    if s.write_all(&block[..n]).is_err() {
                        return;
                    }
                    left -= n;
                    if let Some(rate) = link {
                        let due = Duration::from_secs_f64((size - left) as f64 / rate);
                        if let Some(wait) = due.checked_sub(started.elapsed()) {
                            std::thread::sleep(wait);
                        }
                    }
                }
            });
        }
    });
    port
}

#[derive(Clone, Copy, PartialEq)]
enum Path {
    Direct,
    Tunnel(u16),
    Forward(u16),
}

/// One request of `path` to the server at `port`; returns the bytes read.
fn fetch(path: Path, port: u16, buf: &mut [u8]) -> usize {
    let target = match path {
        Path::Direct => port,
        Path::Tunnel(proxy) | Path::Forward(proxy) => proxy,
    };
    let mut s = TcpStream::connect(("127.0.0.1", target)).unwrap();
    s.set_nodelay(true).unwrap();
    let request = match path {
        Path::Direct => "GET /f HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_string(),
        Path::Tunnel(_) => format!(
            "CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\nGET /f HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
        ),
        Path::Forward(_) => {
            format!("GET http://127.0.0.1:{port}/f HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        }
    };
    s.write_all(request.as_bytes()).unwrap();
    let mut total = 0;
    loop {
        let n = s.read(buf).unwrap();
        if n == 0 {
            return total;
        }
        total += n;
    }
}

/// The process's CPU time so far, user and system, of every thread it has
/// had.
fn process_cpu() -> Duration {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) }, 0);
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// The CPU time of the threads `tids` of this process (nanoseconds on CPU,
/// from each one's `schedstat`).
fn threads_cpu(tids: &[i32]) -> Duration {
    let ns: u64 = tids
        .iter()
        .filter_map(|t| std::fs::read_to_string(format!("/proc/self/task/{t}/schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// One measurement: wall, the process's CPU, the proxy's CPU.
#[derive(Clone, Copy, Default)]
struct Cost {
    wall: Duration,
    cpu: Duration,
    proxy: Duration,
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

struct Runs(Vec<Cost>);

impl Runs {
    fn wall(&self) -> Duration {
        median(&self.0.iter().map(|c| c.wall).collect::<Vec<_>>())
    }
    fn cpu(&self) -> Duration {
        median(&self.0.iter().map(|c| c.cpu).collect::<Vec<_>>())
    }
    fn proxy(&self) -> Duration {
        median(&self.0.iter().map(|c| c.proxy).collect::<Vec<_>>())
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Downloads of `mb` MB from `server` by each of `paths`, interleaved,
/// `runs` times; prints the medians against the first path's.
fn downloads(
    title: &str,
    paths: &[(&str, Path)],
    server: u16,
    mb: usize,
    runs: usize,
    tids: &Mutex<Vec<i32>>,
    buf: &mut [u8],
) {
    let load_before = loadavg();
    let mut costs: Vec<Runs> = paths.iter().map(|_| Runs(Vec::new())).collect();
    for _ in 0..runs {
        for (i, (_, path)) in paths.iter().enumerate() {
            let tids = tids.lock().unwrap().clone();
            let (cpu0, proxy0) = (process_cpu(), threads_cpu(&tids));
            let t = Instant::now();
            let n = fetch(*path, server, buf);
            let wall = t.elapsed();
            assert!(n > mb << 20, "short download: {n}");
            costs[i].0.push(Cost {
                wall,
                cpu: process_cpu() - cpu0,
                proxy: threads_cpu(&tids) - proxy0,
            });
        }
    }
    let load_after = loadavg();
    println!("{title}, median of {runs} (load average {load_before} before, {load_after} after):");
    println!(
        "  {:<8} {:>9} {:>7} {:>9} {:>7} {:>10}",
        "", "wall ms", "ratio", "cpu ms", "ratio", "proxy cpu"
    );
    let (dw, dc) = (costs[0].wall(), costs[0].cpu());
    for ((name, _), c) in paths.iter().zip(&costs) {
        println!(
            "  {:<8} {:>9.1} {:>6.2}x {:>9.1} {:>6.2}x {:>7.1} ms",
            name,
            ms(c.wall()),
            c.wall().as_secs_f64() / dw.as_secs_f64(),
            ms(c.cpu()),
            c.cpu().as_secs_f64() / dc.as_secs_f64(),
            ms(c.proxy()),
        );
    }
}

fn main() {
    let mb = env_or("BERTH_BENCH_MB", 100);
    let rounds = env_or("BERTH_BENCH_ROUNDS", 300);
    let runs = env_or("BERTH_BENCH_RUNS", 7).max(1);
    let link_mbit = env_or("BERTH_BENCH_LINK_MBIT", 1000);

    // The proxy: a runtime of its own, its threads known by id.
    let tids = Arc::new(Mutex::new(Vec::new()));
    let rt = {
        let tids = Arc::clone(&tids);
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .on_thread_start(move || {
                // SAFETY: gettid has no preconditions.
                tids.lock().unwrap().push(unsafe { libc::gettid() });
            })
            .enable_all()
            .build()
            .unwrap()
    };
    let proxy = rt.block_on(async {
        let mut rules = RuleSet::default();
        rules.add_host(RuleList::Allow, "127.0.0.1", None).unwrap();
        let gate = Arc::new(PolicyGate {
            rules,
            autonomy: Autonomy::default(),
            wait: Duration::ZERO,
            pending: Mutex::new(Vec::new()),
            connected: Mutex::new(Vec::new()),
        });
        Egress::new(gate)
            .listen_loopback(BerthKey {
                project: "bench".into(),
                agent: "dev-1".into(),
            })
            .await
            .unwrap()
            .port()
    });
    let small = server(64, None);
    let mut buf = vec![0u8; 1 << 16];

    let paths = [
        ("direct", Path::Direct),
        ("CONNECT", Path::Tunnel(proxy)),
        ("forward", Path::Forward(proxy)),
    ];
    let big = server(mb << 20, None);
    let title = format!("download of {mb} MB on loopback");
    downloads(&title, &paths, big, mb, runs, &tids, &mut buf);
    if link_mbit > 0 {
        let paced = server(mb << 20, Some(link_mbit as f64 * 1e6 / 8.0));
        let title = format!("download of {mb} MB from a server paced to {link_mbit} Mbit/s");
        downloads(&title, &paths, paced, mb, runs.min(3), &tids, &mut buf);
    }

    // Connections: connect, one small request and answer, close.
    let mut conn = [Vec::new(), Vec::new()];
    for _ in 0..rounds {
        for (i, path) in [Path::Direct, Path::Tunnel(proxy)].into_iter().enumerate() {
            let t = Instant::now();
            fetch(path, small, &mut buf);
            conn[i].push(t.elapsed());
        }
    }
    let (cd, ct) = (median(&conn[0]), median(&conn[1]));
    println!(
        "one connection, a 64-byte answer, median of {rounds} (load average {}):",
        loadavg()
    );
    println!("  direct   {:>8.3} ms", ms(cd));
    println!(
        "  CONNECT  {:>8.3} ms  added {:.3} ms  ratio {:.2}x",
        ms(ct),
        ms(ct) - ms(cd),
        ct.as_secs_f64() / cd.as_secs_f64()
    );
    drop(rt);
}
