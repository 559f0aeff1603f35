//! The egress proxy wired into berths: each exec of an allow-list berth
//! gets its proxy listener on its own loopback
//! ([`berth_sandbox::egress_port`]), and this serves it with the engine's
//! gate ([`crate::egress_gate::EngineGate`]) as that berth's.
//!
//! The proxy runs in the berth process that runs the exec, for the exec's
//! duration: `berth serve` for the execs it runs, a one-shot `berth exec`
//! for its own. A held connection's pending `network_connect` is read from
//! the store, so a person approves it from any process (`berth approve`, the
//! page). The gate holds an engine of its own over the same store and state
//! (never the one whose sandbox cache holds this port: no cycle).
//!
//! Names the proxy resolves without DNS (a local mirror, a test's registry)
//! are the engine's [`Engine::set_egress_hosts`]; the CLI reads them from
//! `BERTH_EGRESS_HOSTS` (`name=address,…`), which only whoever starts berth
//! can set — never an agent.

use std::collections::HashMap;
use std::net::{IpAddr, TcpListener};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use berth_egress::{BerthKey, Connected, Egress, FixedHosts, Gate, OpenConnections, Verdict};
use berth_policy::decision::RuleList;
use berth_policy::network::{Host, HostPattern, HostRule};
use berth_sandbox::egress_port::{ContainerDoor, EgressHook, EgressPort, EgressServing};

use crate::Engine;
use crate::egress_gate::EngineGate;
use crate::error::{EngineError, Result};

/// One berth's port: serves its listeners with `gate`.
pub(crate) struct EnginePort<G> {
    engine: Arc<Engine>,
    gate: Arc<G>,
    berth: BerthKey,
}

impl<G> EnginePort<G> {
    pub(crate) fn new(engine: Arc<Engine>, gate: Arc<G>, berth: BerthKey) -> EnginePort<G> {
        EnginePort {
            engine,
            gate,
            berth,
        }
    }
}

impl<G> std::fmt::Debug for EnginePort<G> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnginePort")
            .field("berth", &self.berth)
            .finish_non_exhaustive()
    }
}

/// The open connections of every proxy this process serves, shared by an
/// engine and its siblings (the ports' engines): [`OpenProxies::drain`]
/// at the engine's close lets them end and be recorded.
#[derive(Debug, Clone, Default)]
pub(crate) struct OpenProxies(Arc<Mutex<Vec<Weak<OpenConnections>>>>);

/// How long a closing process lets its proxies' open connections end by
/// themselves, then how long it waits for the ones it cut to be recorded.
const DRAIN_FINISH: Duration = Duration::from_secs(2);
const DRAIN_RECORD: Duration = Duration::from_secs(3);

impl OpenProxies {
    fn add(&self, open: &Arc<OpenConnections>) {
        if let Ok(mut v) = self.0.lock() {
            v.retain(|w| w.strong_count() > 0);
            v.push(Arc::downgrade(open));
        }
    }

    /// Waits for the open connections to end (then cuts them) and be
    /// recorded, within [`DRAIN_FINISH`] and [`DRAIN_RECORD`].
    pub(crate) async fn drain(&self) {
        let open: Vec<Arc<OpenConnections>> = match self.0.lock() {
            Ok(v) => v.iter().filter_map(Weak::upgrade).collect(),
            Err(_) => return,
        };
        for o in open {
            let left = o.drain(DRAIN_FINISH, DRAIN_RECORD).await;
            if left > 0 {
                tracing::warn!(
                    left,
                    "egress: connections still open at exit could not be recorded in time"
                );
            }
        }
    }
}

/// Stops serving a listener when dropped.
struct Serving(tokio::task::JoinHandle<()>);

impl Drop for Serving {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<G: Gate> EgressPort for EnginePort<G> {
    fn serve(&self, listener: TcpListener) -> std::result::Result<EgressServing, String> {
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("the proxy listener: {e}"))?;
        let listener = tokio::net::TcpListener::from_std(listener)
            .map_err(|e| format!("the proxy listener: {e}"))?;
        let hosts = self.engine.egress_hosts();
        let proxy = Egress::new(Arc::clone(&self.gate)).with_hosts(hosts);
        self.engine.egress_open.add(&proxy.open_connections());
        let berth = self.berth.clone();
        let task = tokio::spawn(async move {
            if let Err(e) = proxy.serve(listener, berth).await {
                tracing::warn!(error = %e, "egress: a berth's listener failed");
            }
        });
        Ok(EgressServing(Box::new(Serving(task))))
    }
}

impl Engine {
    /// The proxy of `agent`'s berth in `project`, for its sandbox spec.
    pub(crate) fn egress_hook(&self, project: &str, agent: &str) -> EgressHook {
        let engine = Arc::new(self.sibling());
        EgressHook {
            port: Arc::new(EnginePort {
                gate: Arc::new(EngineGate::new(Arc::clone(&engine))),
                engine,
                berth: BerthKey {
                    project: project.to_string(),
                    agent: agent.to_string(),
                },
            }),
            handoff_dir: self.state.root().join("execs"),
            container_door: self.egress_container_door(),
        }
    }

    /// The proxy of a `command` agent's program: only `model_hosts`
    /// (`[agent] model_hosts`), every connection recorded as the agent's.
    pub(crate) fn model_hosts_hook(
        &self,
        project: &str,
        agent: &str,
        model_hosts: &[String],
    ) -> Result<EgressHook> {
        let engine = Arc::new(self.sibling());
        let gate = ModelHostsGate::new(Arc::clone(&engine), model_hosts)?;
        Ok(EgressHook {
            port: Arc::new(EnginePort {
                gate: Arc::new(gate),
                engine,
                berth: BerthKey {
                    project: project.to_string(),
                    agent: agent.to_string(),
                },
            }),
            handoff_dir: self.state.root().join("execs"),
            container_door: self.egress_container_door(),
        })
    }

    /// Names the egress proxy resolves to fixed addresses instead of DNS
    /// (see the module docs); replaces the previous set.
    pub fn set_egress_hosts(&self, hosts: HashMap<String, Vec<IpAddr>>) {
        if let Ok(mut h) = self.egress_hosts.lock() {
            *h = Arc::new(hosts);
        }
    }

    /// How mounted berths' proxy listeners are made from now on: by
    /// privilege (the default: berth enters the container's namespace as
    /// root, else asks the exec agent), or always through the exec agent
    /// (what a berth that is not root does; tests force it as root).
    pub fn set_egress_container_door(&self, door: ContainerDoor) {
        if let Ok(mut d) = self.egress_door.lock() {
            *d = door;
        }
    }

    pub(crate) fn egress_container_door(&self) -> ContainerDoor {
        self.egress_door.lock().map(|d| *d).unwrap_or_default()
    }

    pub(crate) fn egress_hosts(&self) -> FixedHosts {
        self.egress_hosts
            .lock()
            .map(|h| Arc::clone(&h))
            .unwrap_or_default()
    }
}

/// The gate of a `command` agent's program: the model's hosts go through,
/// anything else is refused at once (no person is asked: the program is not
/// the agent's proposals, it is the agent). Connections are recorded as the
/// project's are.
pub(crate) struct ModelHostsGate {
    records: EngineGate,
    allowed: Vec<HostPattern>,
    /// The same as allow rules: a model host that resolves to an internal
    /// address is reached only because it is named here.
    rules: Arc<Vec<HostRule>>,
}

impl ModelHostsGate {
    pub(crate) fn new(engine: Arc<Engine>, model_hosts: &[String]) -> Result<ModelHostsGate> {
        let invalid = |host: &String, why: String| EngineError::Invalid {
            what: "[agent] model_hosts entry",
            value: host.clone(),
            why,
        };
        let mut allowed = Vec::new();
        let mut rules = Vec::new();
        for host in model_hosts {
            allowed.push(HostPattern::parse(host).map_err(|why| invalid(host, why))?);
            rules.push(
                HostRule::new(RuleList::Allow, host, host, None)
                    .map_err(|why| invalid(host, why))?,
            );
        }
        Ok(ModelHostsGate {
            records: EngineGate::new(engine),
            allowed,
            rules: Arc::new(rules),
        })
    }
}

#[async_trait]
impl Gate for ModelHostsGate {
    async fn decide(&self, _berth: &BerthKey, host: &str, _port: u16) -> Verdict {
        let named = Host::parse(host)
            .map(|h| self.allowed.iter().any(|p| p.matches(&h)))
            .unwrap_or(false);
        if named {
            Verdict::Allow
        } else {
            Verdict::Deny(format!(
                "berth: {host} is not one of the model's hosts ([agent] model_hosts in berth.toml)"
            ))
        }
    }

    fn host_rules(&self, _berth: &BerthKey) -> Arc<Vec<HostRule>> {
        Arc::clone(&self.rules)
    }

    fn wait(&self, _berth: &BerthKey) -> std::time::Duration {
        std::time::Duration::ZERO
    }

    async fn connected(&self, record: Connected) {
        self.records.connected(record).await;
    }
}

/// Reads `name=address,name=address…` (as `BERTH_EGRESS_HOSTS` holds it):
/// names lower-cased without a trailing dot; a name given twice has each
/// address.
pub fn parse_egress_hosts(text: &str) -> Result<HashMap<String, Vec<IpAddr>>> {
    let mut hosts: HashMap<String, Vec<IpAddr>> = HashMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let invalid = |why: &str| EngineError::Invalid {
            what: "egress host",
            value: entry.to_string(),
            why: why.to_string(),
        };
        let (name, addr) = entry
            .split_once('=')
            .ok_or_else(|| invalid("expected name=address"))?;
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| invalid("the address is not an IP address"))?;
        let name = name.trim().trim_end_matches('.').to_ascii_lowercase();
        if name.is_empty() {
            return Err(invalid("no name"));
        }
        hosts.entry(name).or_default().push(addr);
    }
    Ok(hosts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hosts_read() {
        let h = parse_egress_hosts("Registry.Test.=127.0.0.1, a=::1,a=10.0.0.1").unwrap();
        assert_eq!(
            h["registry.test"],
            vec!["127.0.0.1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(h["a"].len(), 2);
        for bad in ["x", "x=notip", "=1.2.3.4"] {
            assert!(parse_egress_hosts(bad).is_err(), "{bad}");
        }
    }
}
