//! The auto-merge cycle of one PR: when the PR is ready (open, every check
//! green, no conflicts, no unresolved thread, the approvals the project
//! requires) under a readiness signature not acted on yet, the merge is
//! proposed as a `git_merge` action by `system:auto-merge` — into a
//! protected branch it waits for a person (ADR 0167: never automatic),
//! elsewhere the agent's autonomy decides. A failed merge is not retried
//! until the signature changes. Auto-fix never merges.
//!
//! The proposal carries an idempotency key made of the PR, the signature
//! and the previous proposal: a crash between proposing and recording finds the same
//! action on the next pass, so a merge is never proposed (or run) twice
//! for one readiness. A pending auto-merge whose readiness is gone (the
//! head moved, a check failed) is denied, so approving a stale proposal
//! cannot merge what was not ready.

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::forge::Forge;
use super::state::AutomationRow;
use crate::Engine;
use crate::actions::{ActionStatus, ProposeStatus};
use crate::checks::PrFeedback;
use crate::error::Result;
use crate::events::{Actor, ActorKind};
use crate::prs::{PrStatus, PullRequest};

/// What one auto-merge pass did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum MergePass {
    /// Auto-merge is off, or the PR is merged or closed.
    Off,
    /// The PR is not ready.
    NotReady,
    /// This readiness was acted on already (proposed, or it failed).
    Unchanged,
    /// The merge was proposed: `status` what became of it (`merged`,
    /// `pending`, `failed`, `refused`).
    Proposed { action: String, status: String },
}

/// The actor of auto-merge proposals.
pub(crate) fn actor() -> Actor {
    Actor {
        kind: ActorKind::System,
        id: "auto-merge".into(),
    }
}

/// The hex SHA-256 of what the PR's readiness rests on: its head, each
/// check's run, its approvals.
pub fn readiness_signature(feedback: &PrFeedback) -> String {
    let mut h = Sha256::new();
    h.update(feedback.head.as_deref().unwrap_or("-").as_bytes());
    for c in &feedback.checks {
        h.update([0u8]);
        h.update(c.name.as_bytes());
        h.update(b"=");
        h.update(c.id.as_bytes());
    }
    h.update(format!("|approvals={}", feedback.approvals).as_bytes());
    format!("{:x}", h.finalize())
}

impl Engine {
    /// One auto-merge pass over `pr` with `feedback`, updating `row`.
    pub(crate) async fn auto_merge_pass<F: Forge>(
        &self,
        forge: &F,
        pr: &PullRequest,
        feedback: &PrFeedback,
        row: &mut AutomationRow,
    ) -> Result<MergePass> {
        if !row.switches.merge || pr.status != PrStatus::Open {
            return Ok(MergePass::Off);
        }
        let signature = readiness_signature(feedback);
        if !feedback.ready {
            self.deny_stale_merge(row, "the PR is no longer ready")
                .await?;
            return Ok(MergePass::NotReady);
        }
        if row.merge_signature.as_deref() == Some(signature.as_str()) {
            return Ok(MergePass::Unchanged);
        }
        self.deny_stale_merge(row, "a newer readiness replaces it")
            .await?;
        // The previous proposal's id makes each attempt's key new, and the
        // same across a crash before the record (the row is not written).
        let key = format!(
            "pr:{}:auto-merge:{}:after:{}",
            pr.id,
            &signature[..32],
            row.merge_action.as_deref().unwrap_or("none")
        );
        let proposed = match forge.propose_merge(pr, &key, &actor()).await {
            Ok(p) => p,
            Err(e) => {
                // Recorded against this readiness: not retried until it
                // changes.
                row.merge_signature = Some(signature);
                row.merge_failed = true;
                row.fail("merge", format!("the merge could not be proposed: {e}"));
                return Ok(MergePass::Proposed {
                    action: String::new(),
                    status: "failed".into(),
                });
            }
        };
        let status = match &proposed.status {
            ProposeStatus::Executed { outcome } if outcome.succeeded => {
                row.merge_failed = false;
                row.clear("merge");
                "merged"
            }
            ProposeStatus::Executed { outcome } => {
                row.merge_failed = true;
                row.fail(
                    "merge",
                    format!(
                        "the merge failed: {} (not retried until the PR's readiness changes)",
                        outcome.diagnostic.as_deref().unwrap_or("failed")
                    ),
                );
                "failed"
            }
            ProposeStatus::Pending { .. } => {
                row.merge_failed = false;
                row.clear("merge");
                "pending"
            }
            ProposeStatus::Refused { reason } => {
                row.merge_failed = true;
                row.fail("merge", format!("the merge was refused: {reason}"));
                "refused"
            }
        };
        row.merge_signature = Some(signature);
        row.merge_action = Some(proposed.id.clone());
        Ok(MergePass::Proposed {
            action: proposed.id,
            status: status.into(),
        })
    }

    /// Denies the auto-merge proposal `row` recorded, if it still waits
    /// for a person.
    async fn deny_stale_merge(&self, row: &mut AutomationRow, why: &str) -> Result<()> {
        let Some(id) = row.merge_action.clone() else {
            return Ok(());
        };
        let record = self.action(&id).await?;
        if record.status == ActionStatus::Pending {
            self.deny(&id, &actor(), Some(why)).await?;
            // Ready again with the same signature, it is proposed anew.
            row.merge_signature = None;
        }
        Ok(())
    }
}
