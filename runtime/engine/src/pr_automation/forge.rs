//! What PR automation asks of a forge, as a trait, so the cycles never
//! name the provider: today the local forge (the project's bare
//! repository and the store's PR records, [`LocalForge`]); a remote GitHub
//! or Gitea forge is a second implementation of the same five questions,
//! with no change to the automation.

use crate::Engine;
use crate::actions::Proposed;
use crate::checks::PrFeedback;
use crate::error::Result;
use crate::events::Actor;
use crate::pr_review::PrConversation;
use crate::prs::PullRequest;

/// A forge's view of its PRs, as the automation needs it.
pub(crate) trait Forge {
    /// The PR's record now (status, branch, task).
    async fn pull_request(&self, id: &str) -> Result<PullRequest>;
    /// The lightweight feedback: head, checks, conflicts, review summary,
    /// readiness. `run_checks`: run the checks due on the head first.
    async fn feedback(&self, pr: &PullRequest, run_checks: bool) -> Result<PrFeedback>;
    /// The full feedback: every thread with its comments.
    async fn conversation(&self, pr: &PullRequest) -> Result<PrConversation>;
    /// The identity whose review requests prompt (`[review] login`); an
    /// error when it cannot be looked up now (the caller keeps the old
    /// one).
    async fn reviewer_login(&self, pr: &PullRequest) -> Result<Option<String>>;
    /// Proposes merging the PR into its base as `by`, under `key` (a retry
    /// with the same key finds the proposal already made).
    async fn propose_merge(&self, pr: &PullRequest, key: &str, by: &Actor) -> Result<Proposed>;
}

/// The local forge: the project's bare repository in berth's state and the
/// store's PR records.
pub(crate) struct LocalForge<'a> {
    pub(crate) engine: &'a Engine,
}

impl Forge for LocalForge<'_> {
    async fn pull_request(&self, id: &str) -> Result<PullRequest> {
        self.engine.pr(id).await
    }

    async fn feedback(&self, pr: &PullRequest, run_checks: bool) -> Result<PrFeedback> {
        self.engine.feedback_of(pr, run_checks).await
    }

    async fn conversation(&self, pr: &PullRequest) -> Result<PrConversation> {
        self.engine.conversation_of(pr).await
    }

    async fn reviewer_login(&self, pr: &PullRequest) -> Result<Option<String>> {
        let (config, _) = self.engine.load_project_files(&pr.project)?;
        Ok(config.review.login)
    }

    async fn propose_merge(&self, pr: &PullRequest, key: &str, by: &Actor) -> Result<Proposed> {
        let proposal = crate::prs::merge_proposal(pr, by, Some(key.to_string()))?;
        self.engine.propose(proposal, None).await
    }
}
