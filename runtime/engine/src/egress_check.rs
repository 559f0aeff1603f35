//! The egress proxy of a PR check's berth: a `[[checks]]` entry with
//! `network = true` in an `allowlist` project reaches only what the
//! project's allow-list permits, through berth's proxy on the check's own
//! loopback (the same runner handoff as an agent's exec,
//! [`berth_sandbox::egress_port`]).
//!
//! A check is berth's own effect and nobody watches it, so nothing is held
//! for a person: the project's rules decide each connection under manual
//! autonomy (the agent's auto mode never lifts it), `auto_approve` — an
//! allow rule — goes through, anything else is refused at once with the
//! reason. The check runs the agent's code, so it must not reach further
//! than the agent could without asking. Connections are recorded as
//! `network.connected` with the check's name (actor `system`).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use berth_egress::{BerthKey, Connected, Gate, Verdict};
use berth_policy::network::HostRule;
use berth_policy::{Action, Autonomy};
use berth_sandbox::egress_port::EgressHook;

use crate::Engine;
use crate::egress_gate::{EngineGate, decide_connection, or_refused, record_connection};
use crate::egress_serving::EnginePort;
use crate::error::Result;

/// The gate a check's proxy asks: the project's allow-list alone.
pub(crate) struct CheckGate {
    /// The agents' gate, for the project's host rules and the records.
    project: EngineGate,
    engine: Arc<Engine>,
    /// The check's name, as its connections are recorded.
    check: String,
}

impl CheckGate {
    fn judge(&self, berth: &BerthKey, host: &str, port: u16) -> Result<Verdict> {
        let action = Action::NetworkConnect {
            host: host.to_string(),
            port,
        };
        // Manual: an allow rule approves; the agent's autonomy is not read.
        let decision =
            match decide_connection(&self.engine, &berth.project, &action, &Autonomy::manual())? {
                Ok(decision) => decision,
                Err(refused) => return Ok(refused),
            };
        Ok(match decision.verdict {
            berth_policy::Verdict::AutoApprove => Verdict::Allow,
            berth_policy::Verdict::Deny => Verdict::Deny(format!("berth: {}", decision.reason)),
            berth_policy::Verdict::RequireApproval => Verdict::Deny(format!(
                "berth: {host} is not on project {}'s allow-list ([sandbox.network] allow); \
                 a check's connections are never held for approval",
                berth.project
            )),
        })
    }
}

#[async_trait]
impl Gate for CheckGate {
    async fn decide(&self, berth: &BerthKey, host: &str, port: u16) -> Verdict {
        or_refused(self.judge(berth, host, port))
    }

    fn host_rules(&self, berth: &BerthKey) -> Arc<Vec<HostRule>> {
        self.project.host_rules(berth)
    }

    fn wait(&self, _berth: &BerthKey) -> Duration {
        Duration::ZERO
    }

    async fn connected(&self, record: Connected) {
        if let Err(e) = record_connection(&self.engine, &record, Some(&self.check)).await {
            tracing::error!(error = %e, host = %record.host, check = %self.check,
                "egress: a check's connection could not be recorded");
        }
    }
}

impl Engine {
    /// The proxy of check `check`'s berth on a PR of `agent` in `project`.
    pub(crate) fn check_egress_hook(&self, project: &str, agent: &str, check: &str) -> EgressHook {
        let engine = Arc::new(self.sibling());
        EgressHook {
            port: Arc::new(EnginePort::new(
                Arc::clone(&engine),
                Arc::new(CheckGate {
                    project: EngineGate::new(Arc::clone(&engine)),
                    engine,
                    check: check.to_string(),
                }),
                BerthKey {
                    project: project.to_string(),
                    agent: agent.to_string(),
                },
            )),
            handoff_dir: self.state.root().join("execs"),
            container_door: self.egress_container_door(),
        }
    }
}
