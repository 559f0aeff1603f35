//! What `berth exec` says about the terminal action it proposed: the report
//! the engine derives once from the proposal's answer, and the one function
//! that prints it and gives the exit code — wherever the action ran, in the
//! CLI's own process or in a server it was handed to (whose stream ends with
//! this report, whole), so the two cannot say different things.

use std::io::Write as _;

use serde::{Deserialize, Serialize};

use crate::HandoffError;

/// The exit code of an exec that waits for a person.
pub const EXIT_PENDING: u8 = 3;
/// The exit code of an exec the policy refused.
pub const EXIT_REFUSED: u8 = 4;

/// Where the proposal ended: the engine's `ProposeStatus` without its
/// payload, which the report carries flat.
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

/// Prints what `berth exec` says about its action (`--json`: one object on
/// stdout; else only what the exit code does not say, on stderr) and gives
/// its exit code: executed → the command's own, pending → [`EXIT_PENDING`],
/// refused → [`EXIT_REFUSED`].
pub fn print(r: &ExecReport, json: bool) -> Result<u8, HandoffError> {
    if json {
        let object = serde_json::json!({
            "action_id": r.action_id,
            "status": r.status.as_str(),
            "verdict": r.verdict,
            "stage": r.stage,
            "exit_code": r.exit_code,
            "stdout": r.stdout,
            "stderr": r.stderr,
            "timed_out": r.timed_out,
            "truncated": r.truncated,
            "oom_killed": r.oom_killed,
            "container_restarted": r.container_restarted,
            "diagnostic": r.diagnostic,
        });
        let mut line = serde_json::to_vec(&object).map_err(HandoffError::Encode)?;
        line.push(b'\n');
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(&line)
            .and_then(|()| stdout.flush())
            .map_err(HandoffError::Print)?;
    }
    let id = r.action_id.get(..8).unwrap_or(&r.action_id);
    let reason = r.reason.as_deref().unwrap_or("");
    // A person stopped it (`berth cancel`): say so, beside its output.
    if !json && r.cancelled {
        eprintln!("berth: {}", r.diagnostic.as_deref().unwrap_or("cancelled"));
    }
    Ok(match r.status {
        ExecStatus::Executed => match r.exit_code {
            Some(exit_code) => {
                if !json {
                    // What the exit code alone does not say: a deadline, the
                    // memory limit, a restart of the container.
                    if r.timed_out || r.oom_killed || r.container_restarted {
                        eprintln!("berth: {}", r.diagnostic.as_deref().unwrap_or("timed out"));
                    }
                    if r.replayed {
                        eprintln!("berth: action {id} had already run; its recorded result:");
                    }
                }
                u8::try_from(exit_code).unwrap_or(1)
            }
            None => {
                if !json {
                    eprintln!("berth: {}", r.diagnostic.as_deref().unwrap_or("failed"));
                }
                1
            }
        },
        ExecStatus::Pending => {
            if !json {
                eprintln!(
                    "berth: pending ({}: {reason}); approve with `berth approve {id}` or deny with `berth deny {id}`",
                    r.stage
                );
            }
            EXIT_PENDING
        }
        ExecStatus::Refused => {
            if !json {
                eprintln!("berth: refused ({}): {reason}", r.stage);
            }
            EXIT_REFUSED
        }
    })
}
