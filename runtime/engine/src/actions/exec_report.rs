//! What `berth exec` says about the terminal action it proposed, derived once
//! from the proposal's answer. The CLI prints and exits with it; a server the
//! CLI handed the action to (`POST /api/actions/stream`) sends it whole as its
//! stream's last line, so a handed-off exec prints, and exits with, exactly
//! what one run in the CLI's own process would.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{ActionResult, ActionStatus, ProposeStatus, Proposed};
use crate::Engine;
use crate::agents::Agent;
use crate::error::Result;

/// Where the proposal ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecStatus {
    Executed,
    Pending,
    Refused,
}

impl ExecStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecStatus::Executed => "executed",
            ExecStatus::Pending => "pending",
            ExecStatus::Refused => "refused",
        }
    }
}

/// A terminal action's end as `berth exec` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecReport {
    pub action_id: String,
    pub status: ExecStatus,
    /// The decision's verdict and the stage that made it.
    pub verdict: String,
    pub stage: String,
    /// Why it waits or was refused.
    pub reason: Option<String>,
    /// Executed and succeeded.
    pub succeeded: bool,
    /// The command's own exit code, when it ran and ended.
    pub exit_code: Option<i32>,
    /// Its recorded output (capped).
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub timed_out: bool,
    pub truncated: bool,
    pub oom_killed: bool,
    pub container_restarted: bool,
    pub diagnostic: Option<String>,
    /// The idempotency key had been used: nothing new ran.
    pub replayed: bool,
    /// A person (or its proposer going away) cancelled it while it ran.
    pub cancelled: bool,
}

impl Engine {
    /// The report of `proposed`: reads the action again only when it ran
    /// and failed, to tell a cancel from a failure.
    pub async fn exec_report(&self, proposed: &Proposed) -> Result<ExecReport> {
        let mut report = ExecReport {
            action_id: proposed.id.clone(),
            status: ExecStatus::Executed,
            verdict: proposed.decision.verdict.as_str().to_string(),
            stage: proposed.decision.stage.as_str().to_string(),
            reason: None,
            succeeded: false,
            exit_code: None,
            stdout: None,
            stderr: None,
            timed_out: false,
            truncated: false,
            oom_killed: false,
            container_restarted: false,
            diagnostic: None,
            replayed: proposed.replayed,
            cancelled: false,
        };
        match &proposed.status {
            ProposeStatus::Pending { reason } => {
                report.status = ExecStatus::Pending;
                report.reason = Some(reason.clone());
            }
            ProposeStatus::Refused { reason } => {
                report.status = ExecStatus::Refused;
                report.reason = Some(reason.clone());
            }
            ProposeStatus::Executed { outcome } => {
                report.succeeded = outcome.succeeded;
                report.diagnostic = outcome.diagnostic.clone();
                if let Some(ActionResult::Terminal {
                    exit_code,
                    stdout,
                    stderr,
                    timed_out,
                    stdout_truncated,
                    stderr_truncated,
                    oom_killed,
                    container_restarted,
                    ..
                }) = &outcome.result
                {
                    report.exit_code = Some(*exit_code);
                    report.stdout = Some(stdout.clone());
                    report.stderr = Some(stderr.clone());
                    report.timed_out = *timed_out;
                    report.truncated = *stdout_truncated || *stderr_truncated;
                    report.oom_killed = *oom_killed;
                    report.container_restarted = *container_restarted;
                }
                if !outcome.succeeded {
                    report.cancelled =
                        self.action(&proposed.id).await?.status == ActionStatus::Cancelled;
                }
            }
        }
        Ok(report)
    }

    /// The first variable that would make `agent`'s command, or this
    /// engine, act otherwise had this process been started with `vars` as
    /// its environment, or `None`. A server runs a command another berth
    /// process hands to it only when this is `None`: every `BERTH_*` and
    /// `DOCKER_*` variable (which choose the engine's parts; `BERTH_LOG` and
    /// `BERTH_HOME` only say where to log and which state, found already)
    /// and what the berth's commands take from berth's environment
    /// (a runner's `PATH` and inherited variables; a container's none).
    pub async fn caller_environment_differs(
        &self,
        agent: &Agent,
        vars: &BTreeMap<String, String>,
    ) -> Result<Option<String>> {
        let own: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?)))
            .filter(|(n, _)| chooses_parts(n))
            .collect();
        let theirs = vars.iter().filter(|(n, _)| chooses_parts(n));
        if let Some(name) = theirs
            .clone()
            .filter(|(n, v)| own.get(*n) != Some(*v))
            .map(|(n, _)| n)
            .chain(own.keys().filter(|n| !vars.contains_key(*n)))
            .min()
        {
            return Ok(Some(name.clone()));
        }
        let project = self.load_project(&agent.project).await?;
        Ok(self
            .sandbox_for(agent, &project.config, false)
            .await?
            .and_then(|sandbox| sandbox.environment_differs(vars)))
    }
}

/// Whether a variable chooses how berth itself works (see
/// [`Engine::caller_environment_differs`]).
fn chooses_parts(name: &str) -> bool {
    (name.starts_with("BERTH_") || name.starts_with("DOCKER_"))
        && name != "BERTH_LOG"
        && name != "BERTH_HOME"
}

#[cfg(test)]
mod tests {
    use super::chooses_parts;

    #[test]
    fn engine_settings_count_and_logging_does_not() {
        assert!(chooses_parts("DOCKER_HOST"));
        assert!(chooses_parts("BERTH_EXEC_SHIM"));
        assert!(chooses_parts("BERTH_EGRESS_HOSTS"));
        assert!(!chooses_parts("BERTH_LOG"));
        assert!(!chooses_parts("BERTH_HOME"));
        assert!(!chooses_parts("PATH"));
    }
}
