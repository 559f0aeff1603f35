//! The engine's side of the egress proxy ([`berth_egress`]): each
//! connection out of an agent's berth decided as a `network_connect` action
//! under the project's rules and the agent's autonomy, a held one proposed
//! as a pending action a person approves, and each connection that went
//! through recorded as `network.connected`.
//!
//! Allowed and denied connections are decided here without a row in the
//! store: a package install opens hundreds of connections, and only the
//! ones a person must answer become actions. Anything that fails here
//! (an unknown agent, a project file that does not read) refuses the
//! connection: the proxy fails closed.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use berth_egress::{BerthKey, Connected, Gate, Settled, Settlement, Verdict};
use berth_policy::network::HostRule;
use berth_policy::{Action, Autonomy, Decision, Frame};

use crate::actions::{ActionStatus, Proposal, ProposeStatus};
use crate::config::NetworkMode;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::{AgentName, Engine};

/// How often a held connection looks at its pending action.
const POLL: Duration = Duration::from_millis(200);

/// The gate the proxy asks, backed by an engine.
pub struct EngineGate {
    engine: Arc<Engine>,
}

impl EngineGate {
    pub fn new(engine: Arc<Engine>) -> EngineGate {
        EngineGate { engine }
    }

    async fn judge(&self, berth: &BerthKey, host: &str, port: u16) -> Result<Verdict> {
        let agent = self.engine.agent(&berth.agent).await?;
        if agent.project != berth.project {
            return Ok(Verdict::Deny(format!(
                "berth: agent {} is not in project {}",
                agent.name, berth.project
            )));
        }
        let autonomy = crate::agents::load_autonomy(self.engine.store.pool(), &agent.name).await?;
        let action = Action::NetworkConnect {
            host: host.to_string(),
            port,
        };
        let decision = match decide_connection(&self.engine, &agent.project, &action, &autonomy)? {
            Ok(decision) => decision,
            Err(refused) => return Ok(refused),
        };
        match decision.verdict {
            berth_policy::Verdict::AutoApprove => return Ok(Verdict::Allow),
            berth_policy::Verdict::Deny => {
                return Ok(Verdict::Deny(format!("berth: {}", decision.reason)));
            }
            berth_policy::Verdict::RequireApproval => {}
        }
        let name = AgentName::new(agent.name.clone()).map_err(|e| EngineError::Invalid {
            what: "agent name",
            value: agent.name.clone(),
            why: e.to_string(),
        })?;
        let proposed = self
            .engine
            .propose(Proposal::by_agent(&name, action), None)
            .await?;
        Ok(match proposed.status {
            ProposeStatus::Pending { .. } => Verdict::Pending {
                action: proposed.id.clone(),
                settled: Box::new(PendingAction {
                    engine: Arc::clone(&self.engine),
                    id: proposed.id,
                }),
            },
            ProposeStatus::Executed { .. } => Verdict::Allow,
            ProposeStatus::Refused { reason } => Verdict::Deny(format!("berth: {reason}")),
        })
    }
}

/// Writes `c` as a `network.connected` event. `check` names the PR check
/// whose berth made the connection (actor `system`, berth's own effect);
/// without it the connection is the agent's (actor: the agent).
pub(crate) async fn record_connection(
    engine: &Engine,
    c: &Connected,
    check: Option<&str>,
) -> Result<()> {
    let actor = match check {
        Some(_) => Actor::system(),
        None => Actor::agent(&c.berth.agent),
    };
    let mut ev = NewEvent::new(kind::NETWORK_CONNECTED, &actor)
        .project(&c.berth.project)
        .agent(&c.berth.agent)
        .payload(serde_json::json!({
            "host": c.host,
            "port": c.port,
            "address": c.addr.to_string(),
            "bytes_out": c.bytes_out,
            "bytes_in": c.bytes_in,
            "duration_ms": u64::try_from(c.duration.as_millis()).unwrap_or(u64::MAX),
            "approved_action": c.action,
            "check": check,
        }));
    if let Some(a) = &c.action {
        ev = ev.action(a);
    }
    let mut tx = engine.store.write("recording a connection").await?;
    emit(&mut tx, ev).await?;
    tx.commit()
        .await
        .map_err(EngineError::store("recording a connection"))
}

/// `action` (a `network_connect`) decided under `project`'s rules and
/// `autonomy`; `Err` holds the refusal when the project's network is not
/// `allowlist` (then no rule decides anything).
pub(crate) fn decide_connection(
    engine: &Engine,
    project: &str,
    action: &Action,
    autonomy: &Autonomy,
) -> Result<std::result::Result<Decision, Verdict>> {
    let (config, rules) = crate::projects::project_files(engine.state(), project)?;
    let mode = config.sandbox.network.mode;
    if mode != NetworkMode::Allowlist {
        return Ok(Err(Verdict::Deny(format!(
            "berth: the network of project {project} is `{}`, not `allowlist`",
            mode.as_str()
        ))));
    }
    // A connection's decision reads no path: any frame will do.
    let frame = Frame::container("/work");
    let ctx = config.policy_context(&rules, &frame, "/work", autonomy);
    Ok(Ok(berth_policy::decide(action, &ctx)))
}

/// A gate's verdict, or a refusal saying why none could be reached: the
/// proxy fails closed.
pub(crate) fn or_refused(judged: Result<Verdict>) -> Verdict {
    judged.unwrap_or_else(|e| Verdict::Deny(format!("berth: cannot decide this connection: {e}")))
}

/// A held connection's pending `network_connect`, read from the store.
struct PendingAction {
    engine: Arc<Engine>,
    id: String,
}

#[async_trait]
impl Settled for PendingAction {
    async fn wait(self: Box<Self>) -> Settlement {
        loop {
            match self.engine.action(&self.id).await {
                Ok(r) => match r.status {
                    ActionStatus::Pending => {}
                    ActionStatus::Executing | ActionStatus::Executed => {
                        return Settlement::Approved;
                    }
                    other => {
                        return Settlement::Denied(format!("the action is {}", other.as_str()));
                    }
                },
                Err(e) => return Settlement::Denied(e.to_string()),
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

#[async_trait]
impl Gate for EngineGate {
    async fn decide(&self, berth: &BerthKey, host: &str, port: u16) -> Verdict {
        or_refused(self.judge(berth, host, port).await)
    }

    fn host_rules(&self, berth: &BerthKey) -> Arc<Vec<HostRule>> {
        let rules = crate::projects::project_files(self.engine.state(), &berth.project)
            .map(|(_, rules)| rules.network)
            .unwrap_or_default();
        Arc::new(rules)
    }

    fn wait(&self, berth: &BerthKey) -> Duration {
        crate::projects::project_files(self.engine.state(), &berth.project)
            .map(|(config, _)| Duration::from_secs(config.sandbox.network.wait_secs))
            .unwrap_or(Duration::ZERO)
    }

    async fn connected(&self, record: Connected) {
        if let Err(e) = record_connection(&self.engine, &record, None).await {
            tracing::error!(error = %e, host = %record.host, "egress: a connection could not be recorded");
        }
    }
}

/// One connection that went through the proxy, as `berth net log` and the
/// page show it: a `network.connected` event's fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NetworkConnection {
    /// The event's id.
    pub id: i64,
    pub at: i64,
    pub project: Option<String>,
    pub agent: Option<String>,
    pub host: String,
    pub port: u16,
    pub address: String,
    pub bytes_out: u64,
    pub bytes_in: u64,
    pub duration_ms: u64,
    pub approved_action: Option<String>,
    /// The PR check whose berth made the connection; `None`: the agent's
    /// own berth.
    pub check: Option<String>,
}

impl Engine {
    /// The connections of `agent` (or of every agent) that went through the
    /// egress proxy, oldest first.
    pub async fn connections(&self, agent: Option<&str>) -> Result<Vec<NetworkConnection>> {
        let events = self
            .events(&crate::EventFilter {
                agent: agent.map(str::to_string),
                kind: Some(kind::NETWORK_CONNECTED.to_string()),
                ..crate::EventFilter::default()
            })
            .await?;
        Ok(events
            .into_iter()
            .map(|e| {
                let p = &e.payload;
                let text = |k: &str| p[k].as_str().unwrap_or_default().to_string();
                let number = |k: &str| p[k].as_u64().unwrap_or_default();
                NetworkConnection {
                    id: e.id,
                    at: e.at,
                    project: e.project,
                    agent: e.agent,
                    host: text("host"),
                    port: u16::try_from(number("port")).unwrap_or_default(),
                    address: text("address"),
                    bytes_out: number("bytes_out"),
                    bytes_in: number("bytes_in"),
                    duration_ms: number("duration_ms"),
                    approved_action: p["approved_action"].as_str().map(str::to_string),
                    check: p["check"].as_str().map(str::to_string),
                }
            })
            .collect())
    }
}
