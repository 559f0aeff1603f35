//! Reading a PR's review feedback back from the store: its threads with
//! their comments, its reviews and review requests, and a thread named by
//! a prefix of its id (or of a comment in it).

use sqlx::Row;

use super::records::{
    AuthorKind, PrComment, PrConversation, PrReview, PrThread, ReviewError, ReviewRequest,
    ReviewState,
};
use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, ActorKind};
use crate::prs::PullRequest;

const COMMENT_COLUMNS: &str =
    "id, thread_id, author_kind, author, body, path, line, commit_sha, created_at";

fn comment_from_row(r: &sqlx::any::AnyRow, pr: i64) -> Result<PrComment> {
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
    /// The full id of `given` (a thread id or unique prefix of at least 4
    /// characters, or a comment in the thread) in `pr`.
    pub(super) async fn thread_id(&self, pr: &PullRequest, given: &str) -> Result<String> {
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

    pub(super) async fn thread_of(&self, pr: &PullRequest, thread: &str) -> Result<PrThread> {
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

    pub(super) async fn comment_by_action(
        &self,
        pr: &PullRequest,
        action: &str,
    ) -> Result<Option<PrComment>> {
        let row = sqlx::query(&format!(
            "SELECT {COMMENT_COLUMNS} FROM pr_comments WHERE action_id = $1"
        ))
        .bind(action)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading a PR comment"))?;
        row.map(|r| comment_from_row(&r, pr.number)).transpose()
    }

    pub(crate) async fn conversation_of(&self, pr: &PullRequest) -> Result<PrConversation> {
        let op = "reading a PR's threads";
        let pool = self.store.pool();
        let rows = sqlx::query(&format!(
            "SELECT {COMMENT_COLUMNS} FROM pr_comments WHERE pr_id = $1 ORDER BY created_at, seq"
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
             FROM pr_threads WHERE pr_id = $1 ORDER BY created_at, seq",
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
             WHERE pr_id = $1 ORDER BY created_at, seq",
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
             FROM pr_review_requests WHERE pr_id = $1 ORDER BY requested_at, seq",
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
