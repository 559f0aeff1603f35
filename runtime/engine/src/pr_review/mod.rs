//! A PR's review feedback: comments and their threads, reviews (approve /
//! request changes) and review requests (issue 19's feedback model), and
//! what they mean for the PR's readiness to merge.
//!
//! A person comments, resolves, reviews and asks for reviews directly
//! (`berth pr comment|resolve|review|request-review`, the API): each is a
//! fact about the PR recorded with its event, not an action on a berth. An
//! agent comments and resolves only through the actions `pr_comment` and
//! `pr_resolve_thread` (MCP `comment_pr`, `resolve_pr_thread`), which the
//! policy decides like `pr_open`; executing one writes the row with the
//! action's id, so a retry finds what it wrote instead of writing twice.
//!
//! A top-level comment starts a thread (its id is the thread's); replies
//! name the thread. A thread berth itself started (a `bot` status comment)
//! never blocks readiness. An approval is recorded on the PR only: the
//! task's gate resolves when the PR is merged or closed, never here.

mod reading;
mod records;

use crate::Engine;
use crate::actions::{ActionRecord, ActionResult, Outcome};
use crate::agents::Agent;
use crate::config::ReviewConfig;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms, short};
use crate::prs::{PrStatus, PullRequest};
use crate::store::StoreLock;
pub use records::{
    AuthorKind, MAX_BODY_BYTES, NewComment, PrComment, PrConversation, PrReview, PrThread,
    ReviewError, ReviewRequest, ReviewState, ReviewSummary,
};
use records::{check_path, check_reviewer, check_text};

/// An error in what the agent asked (a PR or thread that is not there, a
/// comment that cannot be): its action fails saying so. berth's own trouble
/// (the store, the forge) stays an error.
fn is_agents_mistake(e: &EngineError) -> bool {
    matches!(
        e,
        EngineError::Review(_) | EngineError::UnknownId { .. } | EngineError::AmbiguousId { .. }
    )
}

impl Engine {
    /// Comments on PR `pr` as `author` (a person; berth itself for a bot
    /// status comment): a new thread, or a reply in `reply_to`'s thread.
    pub async fn comment_pr(
        &self,
        pr: &str,
        comment: &NewComment,
        author: &Actor,
    ) -> Result<PrComment> {
        let pr = self.pr(pr).await?;
        self.write_comment(&pr, comment, author, None).await
    }

    /// The PR's threads (oldest first, each with its comments), reviews and
    /// review requests.
    pub async fn pr_threads(&self, pr: &str) -> Result<PrConversation> {
        let pr = self.pr(pr).await?;
        self.conversation_of(&pr).await
    }

    /// Marks thread `thread` (an id or unique prefix, or a comment in it)
    /// of PR `pr` resolved, by `by`.
    pub async fn resolve_pr_thread(&self, pr: &str, thread: &str, by: &Actor) -> Result<PrThread> {
        let pr = self.pr(pr).await?;
        let thread = self.thread_id(&pr, thread).await?;
        if !self.mark_resolved(&pr, &thread, by, None).await? {
            let t = self.thread_of(&pr, &thread).await?;
            let by = t
                .resolved_by
                .map(|a| a.to_string())
                .unwrap_or_else(|| "someone".into());
            return Err(ReviewError::AlreadyResolved {
                pr: pr.number,
                thread: short(&thread).to_string(),
                by,
            }
            .into());
        }
        self.thread_of(&pr, &thread).await
    }

    /// Records `actor`'s review of the open PR `pr` at its current head.
    /// It clears the actor's open review request; it does not resolve the
    /// task's gate (merging or closing the PR does).
    pub async fn review_pr(
        &self,
        pr: &str,
        state: ReviewState,
        body: Option<&str>,
        actor: &Actor,
    ) -> Result<PrReview> {
        let pr = self.pr(pr).await?;
        self.require_open(&pr, "reviewed")?;
        let body = body.filter(|b| !b.trim().is_empty());
        if let Some(b) = body {
            check_text("review message", b)?;
        }
        let project = self.project(&pr.project).await?;
        let head = self.git().forge_head(&project, &pr.branch).await?;
        let op = "recording a PR review";
        let id = new_id();
        let now = now_ms();
        let mut tx = self.store.write(op).await?;
        // The PR's next `seq` is read from its rows: one writer per PR.
        tx.lock(StoreLock::Pr(&pr.id)).await?;
        sqlx::query(
            "INSERT INTO pr_reviews (id, pr_id, state, actor_kind, actor, body, head, created_at, seq) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, \
             (SELECT COALESCE(MAX(seq), 0) + 1 FROM pr_reviews WHERE pr_id = $2))",
        )
        .bind(&id)
        .bind(&pr.id)
        .bind(state.as_str())
        .bind(actor.kind.as_str())
        .bind(&actor.id)
        .bind(body)
        .bind(head.as_deref())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let cleared = sqlx::query(
            "UPDATE pr_review_requests SET cleared_at = $1, cleared_by = $2 \
             WHERE pr_id = $3 AND reviewer = $4 AND cleared_at IS NULL",
        )
        .bind(now)
        .bind(format!("review {id}"))
        .bind(&pr.id)
        .bind(&actor.id)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
        emit(
            &mut tx,
            NewEvent::new(kind::PR_REVIEW_SUBMITTED, actor)
                .project(&pr.project)
                .agent(&pr.agent)
                .task(pr.task.as_deref())
                .payload(serde_json::json!({
                    "pr": pr.number, "review": id, "state": state.as_str(),
                    "head": head, "cleared_request": cleared > 0,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(PrReview {
            id,
            pr: pr.number,
            state,
            actor: actor.clone(),
            body: body.map(str::to_string),
            head,
            created_at: now,
        })
    }

    /// Asks `reviewer` to review the open PR `pr`. Asking again while a
    /// request is open returns the open one.
    pub async fn request_pr_review(
        &self,
        pr: &str,
        reviewer: &str,
        by: &Actor,
    ) -> Result<ReviewRequest> {
        let pr = self.pr(pr).await?;
        self.require_open(&pr, "sent for review")?;
        check_reviewer(reviewer)?;
        let op = "requesting a PR review";
        let id = new_id();
        let now = now_ms();
        let mut tx = self.store.write(op).await?;
        // The PR's next `seq` is read from its rows: one writer per PR.
        tx.lock(StoreLock::Pr(&pr.id)).await?;
        let inserted = sqlx::query(
            "INSERT INTO pr_review_requests (id, pr_id, reviewer, requested_by, requested_at, seq) \
             VALUES ($1, $2, $3, $4, $5, \
             (SELECT COALESCE(MAX(seq), 0) + 1 FROM pr_review_requests WHERE pr_id = $2)) \
             ON CONFLICT DO NOTHING",
        )
        .bind(&id)
        .bind(&pr.id)
        .bind(reviewer)
        .bind(by.to_string())
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
        if inserted == 1 {
            emit(
                &mut tx,
                NewEvent::new(kind::PR_REVIEW_REQUESTED, by)
                    .project(&pr.project)
                    .agent(&pr.agent)
                    .task(pr.task.as_deref())
                    .payload(serde_json::json!({
                        "pr": pr.number, "reviewer": reviewer, "request": id,
                    })),
            )
            .await?;
        }
        tx.commit().await.map_err(EngineError::store(op))?;
        let conversation = self.conversation_of(&pr).await?;
        conversation
            .review_requests
            .into_iter()
            .find(|r| r.reviewer == reviewer && r.cleared_at.is_none())
            .ok_or_else(|| EngineError::corrupt(op, "the open request is gone"))
    }

    /// The review side of `pr`'s readiness, under the project's `[review]`.
    pub(crate) async fn review_summary(
        &self,
        pr: &PullRequest,
        config: &ReviewConfig,
    ) -> Result<ReviewSummary> {
        let c = self.conversation_of(pr).await?;
        let unresolved = c.threads.iter().filter(|t| t.blocks()).count();
        // Each person's latest review counts (they come oldest first).
        let mut latest = std::collections::BTreeMap::new();
        for r in &c.reviews {
            latest.insert((r.actor.kind.as_str(), r.actor.id.as_str()), r.state);
        }
        let approvals = latest
            .values()
            .filter(|s| **s == ReviewState::Approve)
            .count();
        let review_requested = c.review_requests.iter().any(|r| {
            r.cleared_at.is_none() && config.login.as_deref().is_none_or(|l| l == r.reviewer)
        });
        Ok(ReviewSummary {
            unresolved_threads: u32::try_from(unresolved).unwrap_or(u32::MAX),
            approvals: u32::try_from(approvals).unwrap_or(u32::MAX),
            approvals_required: config.required_approvals,
            review_requested,
        })
    }

    /// Executes `pr_comment`: the agent's comment, once per action.
    pub(crate) async fn exec_pr_comment(
        &self,
        record: &ActionRecord,
        agent: &Agent,
    ) -> Result<Outcome> {
        let to_result = |pr: &PullRequest, c: &PrComment| ActionResult::PrComment {
            pr: pr.id.clone(),
            number: pr.number,
            comment: c.id.clone(),
            thread: c.thread.clone(),
        };
        let pr = match self.agent_pr(record, agent).await {
            Ok(pr) => pr,
            Err(e) if is_agents_mistake(&e) => return Ok(Outcome::failed(e.to_string(), None)),
            Err(e) => return Err(e),
        };
        if let Some(c) = self.comment_by_action(&pr, &record.id).await? {
            return Ok(Outcome::ok(to_result(&pr, &c)));
        }
        let p = &record.params;
        let comment = NewComment {
            body: p.body.clone().unwrap_or_default(),
            path: p.path.clone(),
            line: p.line.map(i64::from),
            reply_to: p.thread.clone(),
        };
        let author = Actor::agent(&agent.name);
        match self
            .write_comment(&pr, &comment, &author, Some(&record.id))
            .await
        {
            Ok(c) => Ok(Outcome::ok(to_result(&pr, &c))),
            Err(e) if is_agents_mistake(&e) => Ok(Outcome::failed(e.to_string(), None)),
            Err(e) => Err(e),
        }
    }

    /// Executes `pr_resolve_thread`: resolved by the agent, or already.
    pub(crate) async fn exec_pr_resolve_thread(
        &self,
        record: &ActionRecord,
        agent: &Agent,
    ) -> Result<Outcome> {
        let pr = match self.agent_pr(record, agent).await {
            Ok(pr) => pr,
            Err(e) if is_agents_mistake(&e) => return Ok(Outcome::failed(e.to_string(), None)),
            Err(e) => return Err(e),
        };
        let Some(given) = record.params.thread.as_deref() else {
            return Ok(Outcome::failed(
                "pr_resolve_thread names no thread (params.thread)",
                None,
            ));
        };
        let thread = match self.thread_id(&pr, given).await {
            Ok(t) => t,
            Err(e) if is_agents_mistake(&e) => return Ok(Outcome::failed(e.to_string(), None)),
            Err(e) => return Err(e),
        };
        let by = Actor::agent(&agent.name);
        let fresh = self
            .mark_resolved(&pr, &thread, &by, Some(&record.id))
            .await?;
        Ok(Outcome::ok(ActionResult::PrResolveThread {
            pr: pr.id.clone(),
            number: pr.number,
            thread,
            already_resolved: !fresh,
        }))
    }

    /// The PR an agent's action is about: the one named, which must be in
    /// the agent's project, else the open PR of the action's task.
    async fn agent_pr(&self, record: &ActionRecord, agent: &Agent) -> Result<PullRequest> {
        let pr = match record.params.pr.as_deref() {
            Some(id) => self.pr(id).await?,
            None => {
                let task = record.task.as_deref().or(agent.task.as_deref());
                let open = self
                    .prs(Some(&agent.project))
                    .await?
                    .into_iter()
                    .rev()
                    .find(|p| {
                        p.status == PrStatus::Open
                            && p.agent == agent.name
                            && p.task.as_deref() == task
                    });
                open.ok_or_else(|| ReviewError::NoPrForAgent {
                    agent: agent.name.clone(),
                })?
            }
        };
        if pr.project != agent.project {
            return Err(ReviewError::OtherProject {
                agent: agent.name.clone(),
                project: agent.project.clone(),
                pr: pr.number,
                pr_project: pr.project,
            }
            .into());
        }
        Ok(pr)
    }

    fn require_open(&self, pr: &PullRequest, what: &'static str) -> Result<()> {
        if pr.status == PrStatus::Open {
            return Ok(());
        }
        Err(ReviewError::NotOpen {
            pr: pr.number,
            status: pr.status.as_str(),
            what,
        }
        .into())
    }

    /// Checks `comment` and writes it (with its thread when it starts one)
    /// and its event in one transaction.
    async fn write_comment(
        &self,
        pr: &PullRequest,
        comment: &NewComment,
        author: &Actor,
        action: Option<&str>,
    ) -> Result<PrComment> {
        check_text("comment", &comment.body)?;
        let thread = match &comment.reply_to {
            Some(t) => {
                if comment.path.is_some() || comment.line.is_some() {
                    return Err(ReviewError::ReplyWithPlace { thread: t.clone() }.into());
                }
                Some(self.thread_id(pr, t).await?)
            }
            None => None,
        };
        if let Some(path) = &comment.path {
            check_path(path)?;
        }
        if let Some(line) = comment.line {
            if comment.path.is_none() {
                return Err(ReviewError::LineWithoutPath.into());
            }
            if line < 1 {
                return Err(ReviewError::BadLine { line }.into());
            }
        }
        // A comment on a file is on the branch's head now.
        let commit = match &comment.path {
            Some(_) => {
                let project = self.project(&pr.project).await?;
                self.git().forge_head(&project, &pr.branch).await?
            }
            None => None,
        };
        let id = new_id();
        let thread_id = thread.clone().unwrap_or_else(|| id.clone());
        let author_kind = AuthorKind::of(author);
        let now = now_ms();
        let op = "recording a PR comment";
        let mut tx = self.store.write(op).await?;
        // The PR's next `seq` is read from its rows: one writer per PR.
        tx.lock(StoreLock::Pr(&pr.id)).await?;
        if thread.is_none() {
            sqlx::query(
                "INSERT INTO pr_threads (id, pr_id, author_kind, created_at, seq) VALUES ($1, $2, $3, $4, \
                 (SELECT COALESCE(MAX(seq), 0) + 1 FROM pr_threads WHERE pr_id = $2))",
            )
            .bind(&thread_id)
            .bind(&pr.id)
            .bind(author_kind.as_str())
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?;
        }
        sqlx::query(
            "INSERT INTO pr_comments (id, pr_id, thread_id, author_kind, author, body, path, line, commit_sha, action_id, created_at, seq) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
             (SELECT COALESCE(MAX(seq), 0) + 1 FROM pr_comments WHERE pr_id = $2))",
        )
        .bind(&id)
        .bind(&pr.id)
        .bind(&thread_id)
        .bind(author_kind.as_str())
        .bind(&author.id)
        .bind(&comment.body)
        .bind(comment.path.as_deref())
        .bind(comment.line)
        .bind(commit.as_deref())
        .bind(action)
        .bind(now)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let mut event = NewEvent::new(kind::PR_COMMENT_ADDED, author)
            .project(&pr.project)
            .agent(&pr.agent)
            .task(pr.task.as_deref())
            .payload(serde_json::json!({
                "pr": pr.number, "comment": id, "thread": thread_id,
                "reply": thread.is_some(), "author_kind": author_kind.as_str(),
                "path": comment.path, "line": comment.line, "commit": commit,
            }));
        event.action = action;
        emit(&mut tx, event).await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(PrComment {
            id,
            pr: pr.number,
            thread: thread_id,
            author_kind,
            author: author.id.clone(),
            body: comment.body.clone(),
            path: comment.path.clone(),
            line: comment.line,
            commit,
            created_at: now,
        })
    }

    /// Resolves `thread` by `by`; false when it was resolved already.
    async fn mark_resolved(
        &self,
        pr: &PullRequest,
        thread: &str,
        by: &Actor,
        action: Option<&str>,
    ) -> Result<bool> {
        let op = "resolving a PR thread";
        let mut tx = self.store.write(op).await?;
        let n = sqlx::query(
            "UPDATE pr_threads SET resolved_by_kind = $1, resolved_by = $2, resolved_at = $3, resolve_action_id = $4 \
             WHERE id = $5 AND pr_id = $6 AND resolved_at IS NULL",
        )
        .bind(by.kind.as_str())
        .bind(&by.id)
        .bind(now_ms())
        .bind(action)
        .bind(thread)
        .bind(&pr.id)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
        if n == 1 {
            let mut event = NewEvent::new(kind::PR_THREAD_RESOLVED, by)
                .project(&pr.project)
                .agent(&pr.agent)
                .task(pr.task.as_deref())
                .payload(serde_json::json!({ "pr": pr.number, "thread": thread }));
            event.action = action;
            emit(&mut tx, event).await?;
        }
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(n == 1)
    }
}
