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

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::Engine;
use crate::actions::{ActionRecord, ActionResult, Outcome};
use crate::agents::Agent;
use crate::config::ReviewConfig;
use crate::error::{EngineError, ErrorKind, Result};
use crate::events::{Actor, ActorKind, NewEvent, emit, kind};
use crate::ids::{new_id, now_ms, short};
use crate::prs::{PrStatus, PullRequest};

/// The longest comment, in bytes.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// The longest path a line comment names, in bytes.
const MAX_PATH_BYTES: usize = 4096;

/// Why a comment, thread, review or review request was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    #[error("the {what} is empty: say something")]
    EmptyText { what: &'static str },
    #[error("the {what} is {bytes} bytes: at most {max}")]
    TooLong {
        what: &'static str,
        bytes: usize,
        max: usize,
    },
    #[error("the {what} contains a NUL byte: remove it")]
    Nul { what: &'static str },
    #[error("invalid path `{path}` for a line comment: {why}")]
    BadPath { path: String, why: &'static str },
    #[error("a line comment names its file: add --path with --line")]
    LineWithoutPath,
    #[error("line {line} is not a line: lines count from 1")]
    BadLine { line: i64 },
    #[error(
        "a reply belongs to its thread's place: drop --path and --line when replying to {thread}"
    )]
    ReplyWithPlace { thread: String },
    #[error("PR #{pr} has no thread `{thread}`: list them with `berth pr threads {pr}`")]
    UnknownThread { pr: i64, thread: String },
    #[error("thread `{thread}` matches several threads of PR #{pr}: give more characters")]
    AmbiguousThread { pr: i64, thread: String },
    #[error("thread {thread} of PR #{pr} is already resolved (by {by})")]
    AlreadyResolved { pr: i64, thread: String, by: String },
    #[error("PR #{pr} is {status}: only an open PR can be {what}")]
    NotOpen {
        pr: i64,
        status: &'static str,
        what: &'static str,
    },
    #[error("a review is --approve or --request-changes (`{given}` is neither)")]
    UnknownState { given: String },
    #[error("reviewer `{reviewer}` is not a login: {why}")]
    BadReviewer { reviewer: String, why: &'static str },
    #[error("{agent} names PR #{pr} of project `{pr_project}`, not its own project `{project}`")]
    OtherProject {
        agent: String,
        project: String,
        pr: i64,
        pr_project: String,
    },
    #[error("agent `{agent}` has no open PR for its task: name the PR (`pr`)")]
    NoPrForAgent { agent: String },
}

impl ReviewError {
    /// Its kind and stable code, for the API's answer.
    pub(crate) fn class(&self) -> (ErrorKind, &'static str) {
        match self {
            ReviewError::UnknownThread { .. } => (ErrorKind::NotFound, "unknown_thread"),
            ReviewError::AmbiguousThread { .. } => (ErrorKind::Ambiguous, "ambiguous_id"),
            ReviewError::AlreadyResolved { .. } | ReviewError::NotOpen { .. } => {
                (ErrorKind::Conflict, "invalid_state")
            }
            ReviewError::NoPrForAgent { .. } | ReviewError::OtherProject { .. } => {
                (ErrorKind::Conflict, "invalid_state")
            }
            _ => (ErrorKind::Invalid, "invalid_value"),
        }
    }
}

/// Who wrote a comment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthorKind {
    /// A person.
    User,
    /// An agent, through a `pr_comment` action.
    Agent,
    /// berth itself: a status comment (never blocks readiness).
    Bot,
}

impl AuthorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthorKind::User => "user",
            AuthorKind::Agent => "agent",
            AuthorKind::Bot => "bot",
        }
    }

    fn of(actor: &Actor) -> AuthorKind {
        match actor.kind {
            ActorKind::User => AuthorKind::User,
            ActorKind::Agent => AuthorKind::Agent,
            ActorKind::System => AuthorKind::Bot,
        }
    }

    fn parse(s: &str) -> Result<AuthorKind> {
        Ok(match s {
            "user" => AuthorKind::User,
            "agent" => AuthorKind::Agent,
            "bot" => AuthorKind::Bot,
            other => {
                return Err(EngineError::corrupt(
                    "reading a PR comment",
                    format!("author kind `{other}`"),
                ));
            }
        })
    }
}

/// What a comment says and where: on the PR, on a file's line, or a reply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewComment {
    pub body: String,
    /// The file (relative to the repository's root) of a line comment.
    #[serde(default)]
    pub path: Option<String>,
    /// Its line, from 1.
    #[serde(default)]
    pub line: Option<i64>,
    /// The thread (or a comment in it) this replies to.
    #[serde(default)]
    pub reply_to: Option<String>,
}

/// One comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrComment {
    pub id: String,
    pub pr: i64,
    pub thread: String,
    pub author_kind: AuthorKind,
    pub author: String,
    pub body: String,
    pub path: Option<String>,
    pub line: Option<i64>,
    /// The head of the PR's branch the line comment was made on.
    pub commit: Option<String>,
    pub created_at: i64,
}

/// A thread: its first comment, its replies, and whether it is resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrThread {
    pub id: String,
    pub pr: i64,
    /// Who started it (`bot`: a status thread, never blocking).
    pub author_kind: AuthorKind,
    pub resolved: bool,
    pub resolved_by: Option<Actor>,
    pub resolved_at: Option<i64>,
    /// Oldest first; the first one started the thread.
    pub comments: Vec<PrComment>,
    pub created_at: i64,
}

impl PrThread {
    /// Still waiting for someone: unresolved, and not berth's own status.
    pub fn blocks(&self) -> bool {
        !self.resolved && self.author_kind != AuthorKind::Bot
    }
}

/// A review's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    Approve,
    RequestChanges,
}

impl ReviewState {
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Approve => "approve",
            ReviewState::RequestChanges => "request_changes",
        }
    }

    pub fn parse(s: &str) -> std::result::Result<ReviewState, ReviewError> {
        match s {
            "approve" => Ok(ReviewState::Approve),
            "request_changes" => Ok(ReviewState::RequestChanges),
            other => Err(ReviewError::UnknownState {
                given: other.to_string(),
            }),
        }
    }
}

/// A submitted review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrReview {
    pub id: String,
    pub pr: i64,
    pub state: ReviewState,
    pub actor: Actor,
    pub body: Option<String>,
    /// The PR branch's head in the forge when it was submitted.
    pub head: Option<String>,
    pub created_at: i64,
}

/// A review asked of a reviewer; `cleared_at` once they reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewRequest {
    pub id: String,
    pub pr: i64,
    pub reviewer: String,
    pub requested_by: String,
    pub requested_at: i64,
    pub cleared_at: Option<i64>,
    pub cleared_by: Option<String>,
}

/// Everything said on a PR (`berth pr threads`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrConversation {
    pub pr: i64,
    pub threads: Vec<PrThread>,
    /// Oldest first.
    pub reviews: Vec<PrReview>,
    pub review_requests: Vec<ReviewRequest>,
}

/// The review side of a PR's readiness.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReviewSummary {
    pub unresolved_threads: u32,
    /// People whose latest review approves.
    pub approvals: u32,
    pub approvals_required: u32,
    /// An open request for the project's reviewer (`[review] login`; any
    /// open request when none is configured).
    pub review_requested: bool,
}

fn check_text(what: &'static str, text: &str) -> std::result::Result<(), ReviewError> {
    if text.trim().is_empty() {
        return Err(ReviewError::EmptyText { what });
    }
    if text.contains('\0') {
        return Err(ReviewError::Nul { what });
    }
    if text.len() > MAX_BODY_BYTES {
        return Err(ReviewError::TooLong {
            what,
            bytes: text.len(),
            max: MAX_BODY_BYTES,
        });
    }
    Ok(())
}

fn check_path(path: &str) -> std::result::Result<(), ReviewError> {
    let bad = |why| {
        Err(ReviewError::BadPath {
            path: path.to_string(),
            why,
        })
    };
    if path.is_empty() {
        return bad("it is empty");
    }
    if path.contains('\0') || path.chars().any(char::is_control) {
        return bad("it contains a control character");
    }
    if path.len() > MAX_PATH_BYTES {
        return bad("it is longer than 4096 bytes");
    }
    if path.starts_with('/') {
        return bad("give it relative to the repository's root");
    }
    if path
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return bad("no empty, `.` or `..` components");
    }
    Ok(())
}

/// A reviewer login, as `[review] login` takes it.
fn check_reviewer(reviewer: &str) -> std::result::Result<(), ReviewError> {
    let why = if reviewer.trim().is_empty() {
        Some("it is empty")
    } else if reviewer
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        Some("no spaces or control characters")
    } else if reviewer.len() > 100 {
        Some("at most 100 bytes")
    } else {
        None
    };
    match why {
        Some(why) => Err(ReviewError::BadReviewer {
            reviewer: reviewer.to_string(),
            why,
        }),
        None => Ok(()),
    }
}

const COMMENT_COLUMNS: &str =
    "id, thread_id, author_kind, author, body, path, line, commit_sha, created_at";

fn comment_from_row(r: &sqlx::sqlite::SqliteRow, pr: i64) -> Result<PrComment> {
    let op = "reading a PR comment";
    let kind: String = r.try_get("author_kind").map_err(EngineError::store(op))?;
    Ok(PrComment {
        id: r.try_get("id").map_err(EngineError::store(op))?,
        pr,
        thread: r.try_get("thread_id").map_err(EngineError::store(op))?,
        author_kind: AuthorKind::parse(&kind)?,
        author: r.try_get("author").map_err(EngineError::store(op))?,
        body: r.try_get("body").map_err(EngineError::store(op))?,
        path: r.try_get("path").map_err(EngineError::store(op))?,
        line: r.try_get("line").map_err(EngineError::store(op))?,
        commit: r.try_get("commit_sha").map_err(EngineError::store(op))?,
        created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
    })
}

fn actor_from(kind: &str, id: String) -> Result<Actor> {
    let kind = match kind {
        "user" => ActorKind::User,
        "agent" => ActorKind::Agent,
        "system" => ActorKind::System,
        other => {
            return Err(EngineError::corrupt(
                "reading a PR review",
                format!("actor kind `{other}`"),
            ));
        }
    };
    Ok(Actor { kind, id })
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
        sqlx::query(
            "INSERT INTO pr_reviews (id, pr_id, state, actor_kind, actor, body, head, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
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
        let inserted = sqlx::query(
            "INSERT INTO pr_review_requests (id, pr_id, reviewer, requested_by, requested_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
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
            Err(e) => return Ok(Outcome::failed(e.to_string(), None)),
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
            Err(EngineError::Review(e)) => Ok(Outcome::failed(e.to_string(), None)),
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
            Err(e) => return Ok(Outcome::failed(e.to_string(), None)),
        };
        let Some(given) = record.params.thread.as_deref() else {
            return Ok(Outcome::failed(
                "pr_resolve_thread names no thread (params.thread)",
                None,
            ));
        };
        let thread = match self.thread_id(&pr, given).await {
            Ok(t) => t,
            Err(EngineError::Review(e)) => return Ok(Outcome::failed(e.to_string(), None)),
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
        if thread.is_none() {
            sqlx::query(
                "INSERT INTO pr_threads (id, pr_id, author_kind, created_at) VALUES ($1, $2, $3, $4)",
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
            "INSERT INTO pr_comments (id, pr_id, thread_id, author_kind, author, body, path, line, commit_sha, action_id, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
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

    /// The full id of `given` (a thread id or unique prefix of at least 4
    /// characters, or a comment in the thread) in `pr`.
    async fn thread_id(&self, pr: &PullRequest, given: &str) -> Result<String> {
        let unknown = || ReviewError::UnknownThread {
            pr: pr.number,
            thread: given.to_string(),
        };
        if given.len() < 4 || !given.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(unknown().into());
        }
        let low = given.to_ascii_lowercase();
        let high = format!("{low}g");
        let ids: Vec<String> = sqlx::query_scalar(
            "SELECT DISTINCT thread_id FROM pr_comments \
             WHERE pr_id = $1 AND ((id >= $2 AND id < $3) OR (thread_id >= $2 AND thread_id < $3)) LIMIT 2",
        )
        .bind(&pr.id)
        .bind(&low)
        .bind(&high)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("looking up a PR thread"))?;
        match ids.as_slice() {
            [one] => Ok(one.clone()),
            [] => Err(unknown().into()),
            _ => Err(ReviewError::AmbiguousThread {
                pr: pr.number,
                thread: given.to_string(),
            }
            .into()),
        }
    }

    async fn thread_of(&self, pr: &PullRequest, thread: &str) -> Result<PrThread> {
        self.conversation_of(pr)
            .await?
            .threads
            .into_iter()
            .find(|t| t.id == thread)
            .ok_or_else(|| {
                ReviewError::UnknownThread {
                    pr: pr.number,
                    thread: thread.to_string(),
                }
                .into()
            })
    }

    async fn comment_by_action(&self, pr: &PullRequest, action: &str) -> Result<Option<PrComment>> {
        let row = sqlx::query(&format!(
            "SELECT {COMMENT_COLUMNS} FROM pr_comments WHERE action_id = $1"
        ))
        .bind(action)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading a PR comment"))?;
        row.map(|r| comment_from_row(&r, pr.number)).transpose()
    }

    async fn conversation_of(&self, pr: &PullRequest) -> Result<PrConversation> {
        let op = "reading a PR's threads";
        let pool = self.store.pool();
        let rows = sqlx::query(&format!(
            "SELECT {COMMENT_COLUMNS} FROM pr_comments WHERE pr_id = $1 ORDER BY created_at, rowid"
        ))
        .bind(&pr.id)
        .fetch_all(pool)
        .await
        .map_err(EngineError::store(op))?;
        let mut comments: Vec<PrComment> = rows
            .iter()
            .map(|r| comment_from_row(r, pr.number))
            .collect::<Result<_>>()?;
        let rows = sqlx::query(
            "SELECT id, author_kind, resolved_by_kind, resolved_by, resolved_at, created_at \
             FROM pr_threads WHERE pr_id = $1 ORDER BY created_at, rowid",
        )
        .bind(&pr.id)
        .fetch_all(pool)
        .await
        .map_err(EngineError::store(op))?;
        let mut threads = Vec::with_capacity(rows.len());
        for r in &rows {
            let id: String = r.try_get("id").map_err(EngineError::store(op))?;
            let kind: String = r.try_get("author_kind").map_err(EngineError::store(op))?;
            let by_kind: Option<String> = r
                .try_get("resolved_by_kind")
                .map_err(EngineError::store(op))?;
            let by: Option<String> = r.try_get("resolved_by").map_err(EngineError::store(op))?;
            let resolved_at: Option<i64> =
                r.try_get("resolved_at").map_err(EngineError::store(op))?;
            let resolved_by = match (by_kind, by) {
                (Some(k), Some(id)) => Some(actor_from(&k, id)?),
                _ => None,
            };
            let (mine, rest) = comments.into_iter().partition(|c| c.thread == id);
            comments = rest;
            threads.push(PrThread {
                id,
                pr: pr.number,
                author_kind: AuthorKind::parse(&kind)?,
                resolved: resolved_at.is_some(),
                resolved_by,
                resolved_at,
                comments: mine,
                created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
            });
        }
        let rows = sqlx::query(
            "SELECT id, state, actor_kind, actor, body, head, created_at FROM pr_reviews \
             WHERE pr_id = $1 ORDER BY created_at, rowid",
        )
        .bind(&pr.id)
        .fetch_all(pool)
        .await
        .map_err(EngineError::store(op))?;
        let mut reviews = Vec::with_capacity(rows.len());
        for r in &rows {
            let state: String = r.try_get("state").map_err(EngineError::store(op))?;
            let kind: String = r.try_get("actor_kind").map_err(EngineError::store(op))?;
            reviews.push(PrReview {
                id: r.try_get("id").map_err(EngineError::store(op))?,
                pr: pr.number,
                state: ReviewState::parse(&state)
                    .map_err(|_| EngineError::corrupt(op, format!("review state `{state}`")))?,
                actor: actor_from(&kind, r.try_get("actor").map_err(EngineError::store(op))?)?,
                body: r.try_get("body").map_err(EngineError::store(op))?,
                head: r.try_get("head").map_err(EngineError::store(op))?,
                created_at: r.try_get("created_at").map_err(EngineError::store(op))?,
            });
        }
        let rows = sqlx::query(
            "SELECT id, reviewer, requested_by, requested_at, cleared_at, cleared_by \
             FROM pr_review_requests WHERE pr_id = $1 ORDER BY requested_at, rowid",
        )
        .bind(&pr.id)
        .fetch_all(pool)
        .await
        .map_err(EngineError::store(op))?;
        let mut review_requests = Vec::with_capacity(rows.len());
        for r in &rows {
            review_requests.push(ReviewRequest {
                id: r.try_get("id").map_err(EngineError::store(op))?,
                pr: pr.number,
                reviewer: r.try_get("reviewer").map_err(EngineError::store(op))?,
                requested_by: r.try_get("requested_by").map_err(EngineError::store(op))?,
                requested_at: r.try_get("requested_at").map_err(EngineError::store(op))?,
                cleared_at: r.try_get("cleared_at").map_err(EngineError::store(op))?,
                cleared_by: r.try_get("cleared_by").map_err(EngineError::store(op))?,
            });
        }
        Ok(PrConversation {
            pr: pr.number,
            threads,
            reviews,
            review_requests,
        })
    }
}
