//! `postCreateCommand` and `postStartCommand` after `berth up`: each entry
//! is a terminal action the agent proposes, decided by the policy like any
//! other — run at once when its autonomy and rules allow it, held as a
//! pending action for a person (`berth approve ID`) when they ask, refused
//! when they deny it. Never as root, never past the decision: berth only
//! proposes. The entries are independent proposals, post-create before
//! post-start and an object form's entries by name (the format runs them at
//! once); one that waits for a person does not hold back the next.

use berth_policy::Action;
use serde::Serialize;

use super::Applied;
use crate::AgentName;
use crate::Engine;
use crate::actions::{ActionParams, Proposal, ProposeStatus};
use crate::error::Result;
use crate::ids::short;

/// What became of one post command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PostRun {
    /// `postCreateCommand` or `postStartCommand`.
    pub hook: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub command: String,
    /// The proposed action's id.
    pub action: String,
    /// `executed`, `pending` (waits for `berth approve`) or `refused`.
    pub status: &'static str,
    /// An executed command's exit code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Why it waits, was refused or failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

impl Engine {
    /// Proposes `applied`'s post commands as `agent`: the post-create ones
    /// when the berth was `created`, the post-start ones when it `started`.
    pub(crate) async fn propose_post_commands(
        &self,
        agent: &AgentName,
        applied: &Applied,
        created: bool,
        started: bool,
    ) -> Result<Vec<PostRun>> {
        let mut runs = Vec::new();
        for c in &applied.post_commands {
            let due = match c.hook {
                "postCreateCommand" => created,
                _ => started,
            };
            if !due {
                continue;
            }
            let description = format!(
                "{}{} of {} at {} ({})",
                c.hook,
                c.name
                    .as_deref()
                    .map(|n| format!(" `{n}`"))
                    .unwrap_or_default(),
                applied.path,
                applied.branch,
                short(&applied.commit)
            );
            let proposal = Proposal::by_agent(
                agent,
                Action::Terminal {
                    command: c.command.clone(),
                },
            )
            .params(ActionParams {
                description: Some(description),
                ..ActionParams::default()
            });
            let proposed = self.propose(proposal, None).await?;
            let (status, exit_code, reason) = match &proposed.status {
                ProposeStatus::Executed { outcome } => (
                    "executed",
                    match &outcome.result {
                        Some(crate::actions::ActionResult::Terminal { exit_code, .. }) => {
                            Some(*exit_code)
                        }
                        _ => None,
                    },
                    outcome.diagnostic.clone(),
                ),
                ProposeStatus::Pending { reason } => ("pending", None, Some(reason.clone())),
                ProposeStatus::Refused { reason } => ("refused", None, Some(reason.clone())),
            };
            tracing::info!(agent = agent.as_str(), hook = c.hook, action = %proposed.id, status, "devcontainer post command proposed");
            runs.push(PostRun {
                hook: c.hook,
                name: c.name.clone(),
                command: c.command.clone(),
                action: proposed.id,
                status,
                exit_code,
                reason,
            });
        }
        Ok(runs)
    }
}
