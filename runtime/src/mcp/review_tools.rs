//! The agent's side of a PR's review feedback: `comment_pr` (a comment on
//! the PR or a line of it, or a reply in a thread) and `resolve_pr_thread`.
//! Each is a proposed action (`pr_comment`, `pr_resolve_thread`) that the
//! policy decides like `pr_open` — seeded `auto_approve` at activation,
//! held for a person when the agent's autonomy or a rule says ask. Kept
//! apart from `mcp.rs` so its tools are one router added to the others.

use berth_engine::ActionParams;
use berth_policy::Action;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::tool_args::{ArgsProblem, Checked, accept, blank, nul_in};
use super::{BerthMcp, result_schema};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct CommentPrArgs {
    /// What you say (a reply should say what you fixed, or why nothing needed fixing).
    pub body: String,
    /// The PR's number (default: the open PR of your task).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub pr: Option<i64>,
    /// A file the comment is on, relative to the repository's root (or under /work).
    #[serde(default)]
    pub path: Option<String>,
    /// The line of `path` the comment is on, from 1.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub line: Option<u32>,
    /// The thread to reply in (its id from the PR's feedback); leave it out to start a thread.
    #[serde(default)]
    pub reply_to: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub struct ResolvePrThreadArgs {
    /// The thread's id (or a unique prefix of at least 4 characters).
    pub thread: String,
    /// The PR's number (default: the open PR of your task).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub pr: Option<i64>,
}

fn pr_problem(pr: Option<i64>) -> Option<String> {
    match pr {
        Some(n) if n < 1 => Some(format!(
            "`pr` is a PR number from 1, not {n}; leave it out for your task's PR"
        )),
        _ => None,
    }
}

impl ArgsProblem for CommentPrArgs {
    fn problem(&self) -> Option<String> {
        blank(
            "body",
            &self.body,
            "say what you have to say (e.g. what you fixed)",
        )
        .or_else(|| nul_in("body", &self.body))
        .or_else(|| pr_problem(self.pr))
        .or_else(|| nul_in("path", self.path.as_deref()?))
        .or_else(|| match (self.line, &self.path, &self.reply_to) {
            (Some(0), ..) => Some("`line` counts from 1".to_string()),
            (Some(_), None, _) => Some("`line` needs `path`: name the file the line is in".into()),
            (_, Some(_), Some(_)) => {
                Some("a reply stays where its thread is: leave out `path` and `line`".into())
            }
            _ => None,
        })
    }
}

impl ArgsProblem for ResolvePrThreadArgs {
    fn problem(&self) -> Option<String> {
        blank(
            "thread",
            &self.thread,
            "pass the thread's id from the PR's feedback",
        )
        .or_else(|| nul_in("thread", &self.thread))
        .or_else(|| pr_problem(self.pr))
    }
}

#[tool_router(router = review_tool_router, vis = "pub(super)")]
impl BerthMcp {
    /// Comments on a PR, as a proposed pr_comment.
    #[tool(
        description = "Comment on a pull request — on the PR, on a line of a file (path, line), or as a reply in a review thread (reply_to) — as a proposed pr_comment action. Reply to a reviewer's thread with what you fixed, then resolve it with resolve_pr_thread.",
        output_schema = result_schema(),
        annotations(
            title = "Comment on a pull request",
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn comment_pr(
        &self,
        Parameters(a): Parameters<Checked<CommentPrArgs>>,
    ) -> CallToolResult {
        let a = match accept("comment_pr", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let path = a
            .path
            .map(|p| p.strip_prefix("/work/").map(str::to_string).unwrap_or(p));
        let params = ActionParams {
            pr: a.pr.map(|n| n.to_string()),
            body: Some(a.body),
            path,
            line: a.line,
            thread: a.reply_to,
            ..ActionParams::default()
        };
        let r = self.propose_chain(|_| Ok(Action::PrComment), params).await;
        self.answer(r).await
    }

    /// Resolves a PR thread, as a proposed pr_resolve_thread.
    #[tool(
        description = "Mark a review thread of a pull request resolved (a proposed pr_resolve_thread action), once you addressed it; an unresolved thread keeps the PR from being ready to merge.",
        output_schema = result_schema(),
        annotations(
            title = "Resolve a PR thread",
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn resolve_pr_thread(
        &self,
        Parameters(a): Parameters<Checked<ResolvePrThreadArgs>>,
    ) -> CallToolResult {
        let a = match accept("resolve_pr_thread", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let params = ActionParams {
            pr: a.pr.map(|n| n.to_string()),
            thread: Some(a.thread),
            ..ActionParams::default()
        };
        let r = self
            .propose_chain(|_| Ok(Action::PrResolveThread), params)
            .await;
        self.answer(r).await
    }
}
