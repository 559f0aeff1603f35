//! What `berth exec` says about the terminal action it proposed, derived once
//! from the proposal's answer. The CLI prints and exits with it; a server the
//! CLI handed the action to (`POST /api/actions/stream`) sends it whole as its
//! stream's last line, so a handed-off exec prints, and exits with, exactly
//! what one run in the CLI's own process would. The report's type and its
//! printer live in `berth-handoff`, whose client prints it without the
//! engine; the engine derives it here.

use super::{ActionResult, ActionStatus, ProposeStatus, Proposed};
use crate::Engine;
use crate::error::Result;

pub use berth_handoff::report::{ExecReport, ExecStatus};

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
}
