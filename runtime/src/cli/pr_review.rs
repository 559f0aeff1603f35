//! `berth pr comment|resolve|review|request-review|threads`: a person's
//! side of a PR's review feedback. Each records a fact on the PR as the
//! user running berth; none of them moves the task (merging or closing the
//! PR resolves its gate).

use berth_engine::{Actor, Engine, NewComment, PrConversation, ReviewState};

use super::print_json;

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum PrReviewCommand {
    /// Comment on the PR, on a line of a file (`--path`, `--line`), or
    /// reply in a thread (`--reply-to`).
    Comment {
        /// The PR number (or id prefix).
        id: String,
        /// What you say.
        text: String,
        /// The file (relative to the repository's root) the comment is on.
        #[arg(long)]
        path: Option<String>,
        /// Its line, from 1 (with --path).
        #[arg(long, value_parser = clap::value_parser!(i64).range(1..))]
        line: Option<i64>,
        /// The thread (or a comment in it) to reply in.
        #[arg(long, value_name = "THREAD")]
        reply_to: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Mark a thread of the PR resolved.
    Resolve {
        id: String,
        /// The thread's id (or a unique prefix, or a comment in it).
        thread: String,
        #[arg(long)]
        json: bool,
    },
    /// Approve the PR or request changes. Recorded on the PR (and counted
    /// toward `[review] required_approvals`); the task stays in review
    /// until the PR is merged or closed.
    Review {
        id: String,
        #[arg(
            long,
            conflicts_with = "request_changes",
            required_unless_present = "request_changes"
        )]
        approve: bool,
        #[arg(long)]
        request_changes: bool,
        /// A message with the review.
        #[arg(short, long)]
        message: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Ask a reviewer to review the PR.
    RequestReview {
        id: String,
        /// The reviewer's login.
        #[arg(long)]
        reviewer: String,
        #[arg(long)]
        json: bool,
    },
    /// The PR's threads (with their comments), reviews and review requests.
    Threads {
        id: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(engine: &Engine, cmd: PrReviewCommand) -> anyhow::Result<u8> {
    let user = Actor::current_user();
    match cmd {
        PrReviewCommand::Comment {
            id,
            text,
            path,
            line,
            reply_to,
            json,
        } => {
            let comment = NewComment {
                body: text,
                path,
                line,
                reply_to,
            };
            let c = engine.comment_pr(&id, &comment, &user).await?;
            if json {
                print_json(&c)?;
            } else if c.thread == c.id {
                println!("PR #{}: thread {} started", c.pr, short(&c.thread));
            } else {
                println!("PR #{}: replied in thread {}", c.pr, short(&c.thread));
            }
        }
        PrReviewCommand::Resolve { id, thread, json } => {
            let t = engine.resolve_pr_thread(&id, &thread, &user).await?;
            if json {
                print_json(&t)?;
            } else {
                println!("PR #{}: thread {} resolved", t.pr, short(&t.id));
            }
        }
        PrReviewCommand::Review {
            id,
            approve,
            request_changes: _,
            message,
            json,
        } => {
            let state = if approve {
                ReviewState::Approve
            } else {
                ReviewState::RequestChanges
            };
            let r = engine
                .review_pr(&id, state, message.as_deref(), &user)
                .await?;
            if json {
                print_json(&r)?;
            } else {
                let what = match r.state {
                    ReviewState::Approve => "approved",
                    ReviewState::RequestChanges => "changes requested",
                };
                println!("PR #{}: {what} by {}", r.pr, r.actor.id);
            }
        }
        PrReviewCommand::RequestReview { id, reviewer, json } => {
            let r = engine.request_pr_review(&id, &reviewer, &user).await?;
            if json {
                print_json(&r)?;
            } else {
                println!("PR #{}: review requested of {}", r.pr, r.reviewer);
            }
        }
        PrReviewCommand::Threads { id, json } => {
            let c = engine.pr_threads(&id).await?;
            if json {
                print_json(&c)?;
            } else {
                print_conversation(&c);
            }
        }
    }
    Ok(0)
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn print_conversation(c: &PrConversation) {
    if c.threads.is_empty() {
        println!("PR #{}: no threads", c.pr);
    }
    for t in &c.threads {
        let state = match &t.resolved_by {
            Some(by) => format!("resolved by {}", by.id),
            None if t.resolved => "resolved".to_string(),
            None => "open".to_string(),
        };
        let place = t
            .comments
            .first()
            .and_then(|c| {
                c.path.as_ref().map(|p| match c.line {
                    Some(l) => format!(" on {p}:{l}"),
                    None => format!(" on {p}"),
                })
            })
            .unwrap_or_default();
        println!("thread {}{place} ({state})", short(&t.id));
        for m in &t.comments {
            println!("  {} ({}): {}", m.author, m.author_kind.as_str(), m.body);
        }
    }
    for r in &c.reviews {
        println!("review: {} by {}", r.state.as_str(), r.actor.id);
    }
    for r in &c.review_requests {
        let state = if r.cleared_at.is_some() {
            "done"
        } else {
            "open"
        };
        println!("review requested of {} ({state})", r.reviewer);
    }
}
