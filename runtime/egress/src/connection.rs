//! One connection through the proxy: read the head, ask the gate, hold a
//! pending one, resolve once and check every address, connect to the
//! address checked, forward both ways, record what went through.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_policy::network::{Host, check_resolved};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::head::{Target, read_head};
use crate::open::OpenConnections;
use crate::{BerthKey, Connected, Gate, Settlement, Verdict};

/// The copy buffers: a request is small, a download is not. The proxy's
/// own CPU for a 100 MB download on loopback (`benches/proxy_cost.rs`,
/// the runtime's threads' schedstat, one run): 68 ms with tokio's default
/// 8 KiB, 52 ms with 64 KiB, 40 ms with 256 KiB, 37 ms with 1 MiB — 256
/// KiB reads what the socket holds in one call. What is left is the
/// kernel's (~95% system time): the second TCP connection's processing and
/// the two copies through this buffer; `splice(2)` (socket → pipe → socket,
/// pages by reference) cut the proxy's own CPU to 33–36 ms but raised the
/// process's total by 25–35 ms (the pages stay referenced, so the sender's
/// socket allocates afresh and the client's reads cost more), so it is not
/// used. The bytes are plain after the head: no HTTP framing is parsed.
const UP_BUFFER: usize = 16 * 1024;
const DOWN_BUFFER: usize = 256 * 1024;

/// How long a connect to an allowed host may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);

/// Names resolved to fixed addresses instead of through DNS (an
/// `/etc/hosts` of the proxy's own: a local mirror, a test's registry).
pub type FixedHosts = Arc<HashMap<String, Vec<IpAddr>>>;

/// The proxy: one per host, serving a listener per berth.
pub struct Egress<G: Gate> {
    gate: Arc<G>,
    hosts: FixedHosts,
    /// Its connections still open (`open.rs`): drained before the process
    /// serving it exits.
    open: Arc<OpenConnections>,
}

impl<G: Gate> Clone for Egress<G> {
    fn clone(&self) -> Self {
        Egress {
            gate: Arc::clone(&self.gate),
            hosts: Arc::clone(&self.hosts),
            open: Arc::clone(&self.open),
        }
    }
}

impl<G: Gate> Egress<G> {
    pub fn new(gate: Arc<G>) -> Self {
        Egress {
            gate,
            hosts: FixedHosts::default(),
            open: Arc::default(),
        }
    }

    /// Its open connections, to drain before the process exits.
    pub fn open_connections(&self) -> Arc<OpenConnections> {
        Arc::clone(&self.open)
    }

    /// Resolves the names in `hosts` (lower case, no trailing dot) to their
    /// addresses, never through DNS. The addresses are checked like any
    /// resolved address: an internal one only when named in an allow rule.
    pub fn with_hosts(mut self, hosts: FixedHosts) -> Self {
        self.hosts = hosts;
        self
    }

    /// Serves `berth`'s listener until it fails: every connection on it is
    /// that berth's.
    pub async fn serve(&self, listener: TcpListener, berth: BerthKey) -> std::io::Result<()> {
        loop {
            let (stream, _) = listener.accept().await?;
            let this = self.clone();
            let berth = berth.clone();
            tokio::spawn(async move {
                let _open = this.open.open();
                this.handle(stream, berth).await;
            });
        }
    }

    /// Opens a listener of `berth`'s own on a free loopback port and serves
    /// it in the background; returns its address (what the berth's
    /// forwarder, or `HTTP_PROXY`, points at).
    pub async fn listen_loopback(&self, berth: BerthKey) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0)).await?;
        let addr = listener.local_addr()?;
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.serve(listener, berth).await {
                tracing::error!(error = %e, "egress: a berth's listener failed");
            }
        });
        Ok(addr)
    }

    /// Serves one client connection of `berth`.
    pub async fn handle<S>(&self, mut client: S, berth: BerthKey)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send,
    {
        let (head, early) = match read_head(&mut client).await {
            Ok(h) => h,
            Err(e) => {
                refuse(&mut client, 400, &e.to_string()).await;
                return;
            }
        };
        let (host, port) = (head.target.host().to_string(), head.target.port());
        let action = match self.gate.decide(&berth, &host, port).await {
            Verdict::Allow => None,
            Verdict::Deny(reason) => {
                refuse(&mut client, 403, &reason).await;
                return;
            }
            Verdict::Pending { action, settled } => {
                let wait = self.gate.wait(&berth);
                match tokio::time::timeout(wait, settled.wait()).await {
                    Ok(Settlement::Approved) => Some(action),
                    Ok(Settlement::Denied(why)) => {
                        let reason = format!(
                            "berth: network_connect {action} to {host}:{port} was denied: {why}"
                        );
                        refuse(&mut client, 403, &reason).await;
                        return;
                    }
                    Err(_) => {
                        let reason = format!(
                            "berth: {host}:{port} waits for approval of action {action}; retry once it is approved"
                        );
                        refuse(&mut client, 403, &reason).await;
                        return;
                    }
                }
            }
        };
        let upstream = match self.connect(&berth, &host, port).await {
            Ok(u) => u,
            Err(reason) => {
                refuse(&mut client, 403, &reason).await;
                return;
            }
        };
        let (mut upstream, addr) = upstream;
        let started = Instant::now();
        let mut sent = match &head.target {
            Target::Connect { .. } => {
                if client
                    .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .is_err()
                {
                    return;
                }
                Vec::new()
            }
            Target::Http { .. } => head.origin_request(),
        };
        sent.extend_from_slice(&early);
        let mut bytes_out = sent.len() as u64;
        let mut bytes_in = 0;
        if upstream.write_all(&sent).await.is_ok() {
            let copy = tokio::io::copy_bidirectional_with_sizes(
                &mut client,
                &mut upstream,
                UP_BUFFER,
                DOWN_BUFFER,
            );
            tokio::select! {
                copied = copy => match copied {
                    Ok((o, i)) => {
                        bytes_out += o;
                        bytes_in = i;
                    }
                    Err(e) => {
                        tracing::debug!(%host, port, error = %e, "egress: a connection ended with an error")
                    }
                },
                // The process serving the proxy is exiting: recorded now,
                // with the bytes of its head only (the copy's counts end
                // with it).
                () = self.open.cut() => {
                    tracing::debug!(%host, port, "egress: a connection cut at the process's exit");
                }
            }
        }
        self.gate
            .connected(Connected {
                berth,
                host,
                port,
                addr,
                bytes_out,
                bytes_in,
                duration: started.elapsed(),
                action,
            })
            .await;
    }

    /// Resolves `host` once, checks every address, and connects to one of
    /// them (never resolving again). `Err` is the refusal's reason.
    async fn connect(
        &self,
        berth: &BerthKey,
        host: &str,
        port: u16,
    ) -> Result<(TcpStream, SocketAddr), String> {
        let parsed = Host::parse(host).map_err(|e| format!("berth: {e}"))?;
        let addrs: Vec<SocketAddr> = match &parsed {
            Host::Ip(ip) => vec![SocketAddr::new(*ip, port)],
            Host::Name(name) => match self.hosts.get(name) {
                Some(fixed) => fixed.iter().map(|ip| SocketAddr::new(*ip, port)).collect(),
                None => tokio::net::lookup_host((name.as_str(), port))
                    .await
                    .map_err(|e| format!("berth: {host} does not resolve: {e}"))?
                    .collect(),
            },
        };
        if addrs.is_empty() {
            return Err(format!("berth: {host} resolves to no address"));
        }
        let rules = self.gate.host_rules(berth);
        for a in &addrs {
            check_resolved(&rules, &parsed, canonical(a.ip()))
                .map_err(|e| format!("berth: {e}"))?;
        }
        let mut last = String::new();
        for a in addrs {
            match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(a)).await {
                Ok(Ok(s)) => return Ok((s, a)),
                Ok(Err(e)) => last = e.to_string(),
                Err(_) => last = "timed out".to_string(),
            }
        }
        Err(format!("berth: cannot reach {host}:{port}: {last}"))
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 one it is.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Answers the client with a refusal and closes: the reason in the status
/// line (what clients print for a failed tunnel) and in the body.
async fn refuse<S: AsyncWrite + Unpin>(client: &mut S, status: u16, reason: &str) {
    let line: String = reason
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '-'
            }
        })
        .take(300)
        .collect();
    let body = format!("{line}\n");
    let text = format!(
        "HTTP/1.1 {status} {line}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tracing::info!(status, reason = %reason, "egress: refused a connection");
    let _ = client.write_all(text.as_bytes()).await;
    let _ = client.shutdown().await;
}
