//! berth's egress proxy: the only way out of a berth whose network is an
//! allow-list.
//!
//! A berth in `[sandbox.network] mode = "allowlist"` has no route out; its
//! clients are pointed (`HTTP_PROXY`/`HTTPS_PROXY`) at this proxy. Each
//! connection — an HTTP `CONNECT host:port` for TLS, or a plain-HTTP request
//! in absolute form — is one `network_connect` decision, asked of a
//! [`Gate`]: allowed, it is forwarded and recorded; denied, the client gets
//! `403` with the reason in the status line (what pip, npm and curl print);
//! pending a person, the connection is held up to the gate's wait and then
//! refused naming the action, so the client's retry goes through once
//! approved.
//!
//! The proxy is keyed per berth by where a connection arrives: each berth
//! gets a listener of its own ([`Egress::serve`]), so the proxy knows which
//! agent asks without trusting anything the client says.
//!
//! The host is resolved once, every address it resolves to is checked
//! ([`berth_policy::network::check_resolved`]: a public name that resolves
//! inward is refused), and the connection goes to the address checked —
//! nothing is resolved again between the check and the connect (no DNS
//! rebinding).
//!
//! The gate is a trait so the engine can back it with its store (pending
//! actions, the event log) while this crate stays free of it.

mod connection;
mod head;
mod open;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

pub use connection::{Egress, FixedHosts};
pub use head::{Head, HeadError, Target};
pub use open::OpenConnections;

/// Which berth a connection came from: the listener's key.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BerthKey {
    pub project: String,
    pub agent: String,
}

/// What the gate says of one connection.
pub enum Verdict {
    /// Go ahead.
    Allow,
    /// Refused, with the one-line reason the client is shown.
    Deny(String),
    /// A person decides: the pending action's id, and what settles it.
    Pending {
        action: String,
        settled: Box<dyn Settled>,
    },
}

/// How a pending `network_connect` ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Settlement {
    Approved,
    Denied(String),
}

/// A pending decision the proxy waits on.
#[async_trait]
pub trait Settled: Send {
    /// Waits until a person approves or denies; the proxy bounds the wait.
    async fn wait(self: Box<Self>) -> Settlement;
}

/// One finished connection, for the event log (`network.connected`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connected {
    pub berth: BerthKey,
    pub host: String,
    pub port: u16,
    /// The address connected to (the one checked).
    pub addr: SocketAddr,
    /// Bytes from the berth out, and back in.
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub duration: Duration,
    /// The pending action a person approved, when it was one.
    pub action: Option<String>,
}

/// Decides connections and records them: the engine's side of the proxy.
#[async_trait]
pub trait Gate: Send + Sync + 'static {
    /// Decides a connection of `berth` to `host:port`.
    async fn decide(&self, berth: &BerthKey, host: &str, port: u16) -> Verdict;
    /// The host rules a name's resolved addresses are checked against (an
    /// internal address is reached only when named in an allow rule).
    fn host_rules(&self, berth: &BerthKey) -> Arc<Vec<berth_policy::network::HostRule>>;
    /// How long a pending connection is held (`[sandbox.network] wait_secs`).
    fn wait(&self, berth: &BerthKey) -> Duration;
    /// Records a connection that went through.
    async fn connected(&self, record: Connected);
}
