//! A gate over the real policy (`berth_policy::decide` of each
//! `network_connect`), shared by the proxy's tests and its benchmark:
//! pending decisions wait on a channel the test holds.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use berth_egress::{BerthKey, Connected, Gate, Settled, Settlement, Verdict};
use berth_policy::network::HostRule;
use berth_policy::{Action, Autonomy, Context, Frame, Limits, RuleSet};
use tokio::sync::oneshot;

/// A gate over the real policy; pending decisions wait on a channel the
/// test holds.
pub struct PolicyGate {
    pub rules: RuleSet,
    pub autonomy: Autonomy,
    pub wait: Duration,
    pub pending: Mutex<Vec<(String, oneshot::Sender<Settlement>)>>,
    pub connected: Mutex<Vec<Connected>>,
}

struct Waiting(oneshot::Receiver<Settlement>);

#[async_trait]
impl Settled for Waiting {
    async fn wait(self: Box<Self>) -> Settlement {
        self.0.await.unwrap_or(Settlement::Denied("gone".into()))
    }
}

#[async_trait]
impl Gate for PolicyGate {
    async fn decide(&self, _berth: &BerthKey, host: &str, port: u16) -> Verdict {
        let frame = Frame::container("/work");
        let limits = Limits::default();
        let ctx = Context {
            frame: &frame,
            cwd: "/work",
            autonomy: &self.autonomy,
            rules: &self.rules,
            protected_branches: &[],
            limits: &limits,
        };
        let action = Action::NetworkConnect {
            host: host.to_string(),
            port,
        };
        let d = berth_policy::decide(&action, &ctx);
        match d.verdict {
            berth_policy::Verdict::AutoApprove => Verdict::Allow,
            berth_policy::Verdict::Deny => Verdict::Deny(format!("berth: {}", d.reason)),
            berth_policy::Verdict::RequireApproval => {
                let (tx, rx) = oneshot::channel();
                let mut p = self.pending.lock().unwrap();
                let id = format!("act-{}", p.len() + 1);
                p.push((id.clone(), tx));
                Verdict::Pending {
                    action: id,
                    settled: Box::new(Waiting(rx)),
                }
            }
        }
    }

    fn host_rules(&self, _berth: &BerthKey) -> Arc<Vec<HostRule>> {
        Arc::new(self.rules.network.clone())
    }

    fn wait(&self, _berth: &BerthKey) -> Duration {
        self.wait
    }

    async fn connected(&self, record: Connected) {
        self.connected.lock().unwrap().push(record);
    }
}

impl PolicyGate {
    pub fn settle(&self, how: Settlement) -> String {
        let (id, tx) = self.pending.lock().unwrap().remove(0);
        tx.send(how).unwrap();
        id
    }
}
