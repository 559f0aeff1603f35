//! Lifecycle prompts of one PR: a review newly requested of the project's
//! reviewer, and the PR's entry into merged or closed.
//!
//! - Review requested: the first complete observation is a quiet baseline;
//!   a false → true edge prompts once; a false observation re-arms. When
//!   the reviewer identity (`[review] login`) changes, the row rebinds to
//!   it and resets the baseline without prompting; a failed lookup keeps
//!   the old identity and baseline and is retried on the next pass.
//! - Terminal: merged or closed prompts once per observed entry — also when
//!   the PR is already terminal at its first observation; a stable state
//!   stays quiet.
//!
//! The texts are berth's own, filled only with the PR's number, branch and
//! base. An edge is stamped only once its prompt is queued (durably: the
//! queue delivers it when a session becomes promptable, and never opens
//! one) or coalesced into the same pending observation; a prompt that
//! could not be queued leaves the edge unstamped, to be tried again.

use serde::Serialize;

use super::forge::Forge;
use super::state::AutomationRow;
use super::template::{Lifecycle, render_lifecycle};
use crate::Engine;
use crate::checks::PrFeedback;
use crate::error::Result;
use crate::events::{Actor, ActorKind};
use crate::prompts::{NewPrompt, PromptKey};
use crate::prs::{PrStatus, PullRequest};

/// What one lifecycle pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LifecyclePass {
    /// The events prompted (`review_requested`, `merged`, `closed`).
    pub prompted: Vec<String>,
    /// The reviewer identity changed to this (baseline reset, no prompt).
    pub rebound: Option<Option<String>>,
    /// A failure (recorded as the PR's error).
    pub error: Option<String>,
}

/// The actor of lifecycle prompts.
pub(crate) fn actor() -> Actor {
    Actor {
        kind: ActorKind::System,
        id: "lifecycle".into(),
    }
}

impl Engine {
    /// One lifecycle pass over `pr` with `feedback`, updating `row`.
    pub(crate) async fn lifecycle_pass<F: Forge>(
        &self,
        forge: &F,
        pr: &PullRequest,
        feedback: &PrFeedback,
        row: &mut AutomationRow,
    ) -> Result<LifecyclePass> {
        let mut pass = LifecyclePass::default();
        if row.switches.on_review_request && pr.status == PrStatus::Open {
            match forge.reviewer_login(pr).await {
                Err(e) => {
                    let why = format!(
                        "looking up the reviewer identity failed (kept `{}`): {e}",
                        row.reviewer_login.as_deref().unwrap_or("any reviewer")
                    );
                    row.fail("lifecycle", why.clone());
                    pass.error = Some(why);
                }
                Ok(login) if login != row.reviewer_login => {
                    // A change from an identity that had a baseline is a
                    // rebinding (logged); the first binding is not.
                    if row.review_requested.is_some() {
                        pass.rebound = Some(login.clone());
                    }
                    row.reviewer_login = login;
                    // The identity's first observation is its baseline.
                    row.review_requested = Some(feedback.review_requested);
                }
                Ok(_) => match (row.review_requested, feedback.review_requested) {
                    (None, now) => row.review_requested = Some(now),
                    (Some(false), true) => {
                        match self.lifecycle_prompt(pr, Lifecycle::ReviewRequested).await {
                            Ok(()) => {
                                row.review_requested = Some(true);
                                pass.prompted
                                    .push(Lifecycle::ReviewRequested.event().into());
                            }
                            Err(why) => {
                                row.fail("lifecycle", why.clone());
                                pass.error = Some(why);
                            }
                        }
                    }
                    (Some(true), false) => row.review_requested = Some(false),
                    (Some(_), _) => {}
                },
            }
        }
        let terminal = match pr.status {
            PrStatus::Merged if row.switches.on_merged => Some(Lifecycle::Merged),
            PrStatus::Closed if row.switches.on_closed => Some(Lifecycle::Closed),
            _ => None,
        };
        if let Some(event) = terminal
            && row.terminal_prompted.as_deref() != Some(event.event())
        {
            match self.lifecycle_prompt(pr, event).await {
                Ok(()) => {
                    row.terminal_prompted = Some(event.event().into());
                    pass.prompted.push(event.event().into());
                }
                Err(why) => {
                    row.fail("lifecycle", why.clone());
                    pass.error = Some(why);
                }
            }
        }
        if pass.error.is_none() {
            row.clear("lifecycle");
        }
        Ok(pass)
    }

    /// Queues `event`'s prompt for the PR's task session (coalesced by
    /// task, repository, PR and event). Err: why it could not be queued.
    async fn lifecycle_prompt(
        &self,
        pr: &PullRequest,
        event: Lifecycle,
    ) -> std::result::Result<(), String> {
        let Some(task) = pr.task.as_deref() else {
            return Err("the PR has no task: no session to prompt".into());
        };
        let new = NewPrompt {
            agent: pr.agent.clone(),
            task: Some(task.to_string()),
            kind: "lifecycle".into(),
            body: render_lifecycle(event, pr),
            key: Some(PromptKey {
                repository: pr.project.clone(),
                pr: Some(format!("#{}", pr.number)),
                event: event.event().into(),
            }),
            replace: false,
        };
        self.send_prompt(new, &actor())
            .await
            .map(|_| ())
            .map_err(|e| format!("the {} prompt was not queued: {e}", event.event()))
    }
}
