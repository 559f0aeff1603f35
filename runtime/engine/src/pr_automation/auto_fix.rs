//! The auto-fix cycle of one PR (kandev's steps 1–12): pending checks end
//! it; the feedback is filtered to prompt-worthy signals (failed completed
//! checks, unresolved review threads, conflicts with the base — berth's
//! own status threads never count); a snapshot equal to the last one
//! prompted ends it; otherwise the rendered `ci-auto-fix` prompt goes to
//! the session the spec chooses, replacing a pending auto-fix prompt for
//! the same PR (the round count unchanged) or counting a new round — the
//! 11th is refused and auto-fix pauses ("Auto-fix 10/10").
//!
//! The signature is recorded only once the prompt is queued or accepted;
//! a crash between the two leaves the prompt queued and the snapshot
//! unrecorded, so the next pass sends it again and it coalesces into the
//! pending row (or, delivered already, is delivered once more: at least
//! once, never lost).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::forge::Forge;
use super::state::{AutomationRow, MAX_FIX_ROUNDS};
use super::template::{AUTO_FIX, render_fix};
use crate::Engine;
use crate::checks::{CheckStatus, PrFeedback};
use crate::error::{EngineError, Result};
use crate::events::{Actor, ActorKind};
use crate::pr_review::{AuthorKind, PrConversation};
use crate::prompts::{NewPrompt, PromptKey, Sent};
use crate::prs::{PrStatus, PullRequest};

/// Lines of a failed check's output tail shown in the snapshot.
const TAIL_LINES: usize = 40;

/// One prompt-worthy signal of a PR's feedback.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Signal {
    /// A completed check failed on the head.
    FailedCheck {
        name: String,
        head: String,
        exit_code: Option<i64>,
        tail: String,
    },
    /// An unresolved review thread, at its last comment by someone other
    /// than the agent (the agent's own replies are not new feedback).
    Thread {
        thread: String,
        path: Option<String>,
        line: Option<i64>,
        last_comment: String,
        author: String,
        body: String,
    },
    /// The head conflicts with the base's tip on these paths.
    Conflict { head: String, paths: Vec<String> },
}

impl Signal {
    /// What identifies the signal (its text aside): the signature's part.
    fn identity(&self) -> String {
        match self {
            Signal::FailedCheck { name, head, .. } => format!("check|{name}|{head}"),
            Signal::Thread {
                thread,
                last_comment,
                ..
            } => format!("thread|{thread}|{last_comment}"),
            Signal::Conflict { head, paths } => format!("conflict|{head}|{}", paths.join("\u{1f}")),
        }
    }
}

/// The prompt-worthy part of a PR's feedback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub pr: i64,
    pub head: Option<String>,
    pub signals: Vec<Signal>,
}

impl Snapshot {
    /// Filters `feedback` and `conversation` down to what is worth a
    /// prompt, in a stable order.
    pub fn of(feedback: &PrFeedback, conversation: &PrConversation) -> Snapshot {
        let mut signals = Vec::new();
        for c in &feedback.checks {
            if c.status == CheckStatus::Failure {
                signals.push(Signal::FailedCheck {
                    name: c.name.clone(),
                    head: c.head.clone(),
                    exit_code: c.exit_code,
                    tail: last_lines(&c.output_tail, TAIL_LINES),
                });
            }
        }
        for t in &conversation.threads {
            if t.resolved || t.author_kind == AuthorKind::Bot {
                continue;
            }
            let Some(last) = t
                .comments
                .iter()
                .rev()
                .find(|c| c.author_kind == AuthorKind::User)
            else {
                continue;
            };
            let first = t.comments.first().unwrap_or(last);
            signals.push(Signal::Thread {
                thread: t.id.clone(),
                path: first.path.clone(),
                line: first.line,
                last_comment: last.id.clone(),
                author: last.author.clone(),
                body: last.body.clone(),
            });
        }
        if let (Some(head), false) = (&feedback.head, feedback.conflicts.is_empty()) {
            let mut paths = feedback.conflicts.clone();
            paths.sort();
            signals.push(Signal::Conflict {
                head: head.clone(),
                paths,
            });
        }
        signals.sort();
        Snapshot {
            pr: feedback.pr,
            head: feedback.head.clone(),
            signals,
        }
    }

    /// The hex SHA-256 of the signals' identities: equal snapshots (text
    /// aside) have equal signatures.
    pub fn signature(&self) -> String {
        let mut h = Sha256::new();
        for s in &self.signals {
            h.update(s.identity().as_bytes());
            h.update([0u8]);
        }
        format!("{:x}", h.finalize())
    }

    /// The visible text that replaces `{{pr.feedback}}`.
    pub fn render(&self, base: &str) -> String {
        let mut out = String::new();
        let short = |h: &str| h.chars().take(12).collect::<String>();
        for s in &self.signals {
            match s {
                Signal::FailedCheck {
                    name,
                    head,
                    exit_code,
                    tail,
                } => {
                    let code =
                        exit_code.map_or("no exit code".to_string(), |c| format!("exit {c}"));
                    out.push_str(&format!(
                        "- Check `{name}` failed on {} ({code}). Its output ends:\n",
                        short(head)
                    ));
                    for l in tail.lines() {
                        out.push_str("    ");
                        out.push_str(l);
                        out.push('\n');
                    }
                }
                Signal::Thread {
                    thread,
                    path,
                    line,
                    author,
                    body,
                    ..
                } => {
                    let at = match (path, line) {
                        (Some(p), Some(l)) => format!(" on {p}:{l}"),
                        (Some(p), None) => format!(" on {p}"),
                        _ => String::new(),
                    };
                    out.push_str(&format!(
                        "- Review thread {}{at}, {author} wrote:\n",
                        short(thread)
                    ));
                    for l in body.lines() {
                        out.push_str("    > ");
                        out.push_str(l);
                        out.push('\n');
                    }
                }
                Signal::Conflict { head, paths } => out.push_str(&format!(
                    "- {} conflicts with the tip of {base} in: {}\n",
                    short(head),
                    paths.join(", ")
                )),
            }
        }
        out
    }
}

fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// What one auto-fix pass did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum FixPass {
    /// Auto-fix is off, or the PR is merged or closed.
    Off,
    /// Paused after its 10th round: no feedback work.
    Exhausted,
    /// A check is queued or running: nothing until it ends.
    ChecksPending,
    /// Nothing prompt-worthy.
    Clean,
    /// The same snapshot was prompted already.
    Unchanged,
    /// A prompt was sent (`round` counts it; a replacement keeps the
    /// count).
    Prompted {
        prompt: String,
        session: String,
        round: i64,
        sent: Sent,
    },
    /// A new round would be the 11th: auto-fix paused.
    Paused,
    /// It failed (recorded as the PR's error; retried on a later change).
    Failed { error: String },
}

/// The actor of auto-fix prompts.
pub(crate) fn actor() -> Actor {
    Actor {
        kind: ActorKind::System,
        id: "auto-fix".into(),
    }
}

impl Engine {
    /// One auto-fix pass over `pr` with `feedback`, updating `row`.
    pub(crate) async fn auto_fix_pass<F: Forge>(
        &self,
        forge: &F,
        pr: &PullRequest,
        feedback: &PrFeedback,
        row: &mut AutomationRow,
    ) -> Result<FixPass> {
        if !row.switches.fix || pr.status != PrStatus::Open {
            return Ok(FixPass::Off);
        }
        if row.fix_paused {
            return Ok(FixPass::Exhausted);
        }
        if feedback
            .checks
            .iter()
            .any(|c| matches!(c.status, CheckStatus::Queued | CheckStatus::InProgress))
        {
            return Ok(FixPass::ChecksPending);
        }
        let conversation = match forge.conversation(pr).await {
            Ok(c) => c,
            Err(e) => return Ok(failed(row, format!("reading the PR's threads failed: {e}"))),
        };
        let snapshot = Snapshot::of(feedback, &conversation);
        if snapshot.signals.is_empty() {
            row.clear("fix");
            return Ok(FixPass::Clean);
        }
        let signature = snapshot.signature();
        if row.fix_signature.as_deref() == Some(signature.as_str()) {
            return Ok(FixPass::Unchanged);
        }
        let replaces = self.pending_fix_prompt(pr).await?;
        if !replaces && row.fix_rounds >= MAX_FIX_ROUNDS {
            row.fix_paused = true;
            row.fail(
                "fix",
                format!(
                    "Auto-fix {MAX_FIX_ROUNDS}/{MAX_FIX_ROUNDS}: paused; new feedback needs a person \
                     (turn auto-fix off and on to start over)"
                ),
            );
            return Ok(FixPass::Paused);
        }
        let Some(task) = pr.task.as_deref() else {
            return Ok(failed(
                row,
                "the PR has no task: no session to prompt".into(),
            ));
        };
        let Some(session) = self.fix_session(task, row.fix_session.as_deref()).await? else {
            return Ok(failed(
                row,
                format!(
                    "no promptable session: task {} has no open session \
                     (`berth sessions {} --open {}`); no session is opened for it",
                    crate::ids::short(task),
                    pr.agent,
                    crate::ids::short(task)
                ),
            ));
        };
        let template = match &row.prompt_override {
            Some(t) => t.clone(),
            None => self.prompt_template(&pr.project, AUTO_FIX).await?.body,
        };
        let body = render_fix(&template, pr, &snapshot.render(&pr.base));
        let new = NewPrompt {
            agent: pr.agent.clone(),
            task: Some(task.to_string()),
            kind: "auto_fix".into(),
            body,
            key: Some(PromptKey {
                repository: pr.project.clone(),
                pr: Some(format!("#{}", pr.number)),
                event: format!("ci_auto_fix:{}", &signature[..16]),
            }),
            replace: true,
        };
        let sent = match self.send_prompt(new, &actor()).await {
            Ok(s) => s,
            Err(e) => return Ok(failed(row, format!("the prompt was not queued: {e}"))),
        };
        if sent.sent == Sent::Queued {
            row.fix_rounds += 1;
        }
        row.fix_signature = Some(signature);
        row.fix_checkpoint = serde_json::to_string(&snapshot).ok();
        row.fix_session = Some(session.clone());
        row.fix_prompt = Some(sent.prompt.id.clone());
        row.clear("fix");
        Ok(FixPass::Prompted {
            prompt: sent.prompt.id,
            session,
            round: row.fix_rounds,
            sent: sent.sent,
        })
    }

    /// Whether an auto-fix prompt for `pr` waits in its agent's queue (a
    /// new one replaces it: no new round).
    async fn pending_fix_prompt(&self, pr: &PullRequest) -> Result<bool> {
        // `prompts.rs`'s replace key: task, repository, PR, kind.
        let key = format!(
            "{}|{}|#{}|kind:auto_fix",
            pr.task.as_deref().unwrap_or("-"),
            pr.project,
            pr.number
        );
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM prompts WHERE agent = $1 AND status = 'queued' \
             AND kind = 'auto_fix' AND replace_key = $2",
        )
        .bind(&pr.agent)
        .bind(key)
        .fetch_one(self.store.pool())
        .await
        .map_err(EngineError::store("reading pending auto-fix prompts"))?;
        Ok(n > 0)
    }

    /// The session an auto-fix prompt for `task` goes to: the one the last
    /// round went to, if still open; else the task's open primary
    /// session; else its newest open one. None: no open session (none is
    /// opened for it).
    async fn fix_session(&self, task: &str, last: Option<&str>) -> Result<Option<String>> {
        let open: Vec<(String, i64)> = sqlx::query_as(
            "SELECT id, is_primary FROM agent_sessions WHERE task_id = $1 AND status <> 'ended' \
             ORDER BY created_at DESC, id",
        )
        .bind(task)
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("choosing an auto-fix session"))?;
        if let Some(l) = last
            && open.iter().any(|(id, _)| id == l)
        {
            return Ok(Some(l.to_string()));
        }
        Ok(open
            .iter()
            .find(|(_, primary)| *primary != 0)
            .or(open.first())
            .map(|(id, _)| id.clone()))
    }
}

fn failed(row: &mut AutomationRow, why: String) -> FixPass {
    row.fail("fix", why.clone());
    FixPass::Failed { error: why }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed_check(name: &str, head: &str, tail: &str) -> Signal {
        Signal::FailedCheck {
            name: name.into(),
            head: head.into(),
            exit_code: Some(1),
            tail: tail.into(),
        }
    }

    #[test]
    fn the_signature_ignores_text_and_order_but_not_identity() {
        let a = Snapshot {
            pr: 1,
            head: Some("h1".into()),
            signals: vec![failed_check("test", "h1", "boom")],
        };
        let same_text_changed = Snapshot {
            signals: vec![failed_check("test", "h1", "boom, differently")],
            ..a.clone()
        };
        assert_eq!(a.signature(), same_text_changed.signature());
        let new_head = Snapshot {
            signals: vec![failed_check("test", "h2", "boom")],
            ..a.clone()
        };
        assert_ne!(a.signature(), new_head.signature());
        let other_check = Snapshot {
            signals: vec![failed_check("lint", "h1", "boom")],
            ..a.clone()
        };
        assert_ne!(a.signature(), other_check.signature());
    }

    #[test]
    fn the_rendered_snapshot_names_each_signal() {
        let s = Snapshot {
            pr: 3,
            head: Some("0123456789abcdef".into()),
            signals: vec![
                failed_check("test", "0123456789abcdef", "line 1\nassertion failed"),
                Signal::Conflict {
                    head: "0123456789abcdef".into(),
                    paths: vec!["a.txt".into()],
                },
            ],
        };
        let text = s.render("main");
        assert!(text.contains("Check `test` failed on 0123456789ab (exit 1)"));
        assert!(text.contains("    assertion failed"));
        assert!(text.contains("conflicts with the tip of main in: a.txt"));
    }

    #[test]
    fn a_long_tail_keeps_its_last_lines() {
        let text: String = (0..100).map(|i| format!("l{i}\n")).collect();
        let kept = last_lines(&text, TAIL_LINES);
        assert_eq!(kept.lines().count(), TAIL_LINES);
        assert!(kept.ends_with("l99"));
    }
}
