//! The prompts automation sends: the `ci-auto-fix` template (embedded, a
//! project's edit of it, or a task's override) and the lifecycle
//! templates, which are berth's own and filled only with validated PR data
//! (its number, branch and state — never text an agent or a reviewer
//! wrote).
//!
//! A project's edit lives in `prompt_templates`; a project with no edited
//! row reads the embedded text of the berth it runs on, so a new berth's
//! default reaches every project that did not edit it. (Rows written
//! unedited by an earlier berth are read as the embedded text too.)

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;
use crate::prs::PullRequest;

/// The auto-fix template's name.
pub const AUTO_FIX: &str = "ci-auto-fix";

/// The embedded default of [`AUTO_FIX`].
pub const AUTO_FIX_DEFAULT: &str = include_str!("ci-auto-fix.md");

/// Where the visible PR snapshot goes in an auto-fix prompt.
pub const FEEDBACK_PLACEHOLDER: &str = "{{pr.feedback}}";

/// The largest template taken, in bytes (a prompt is at most 64 KiB).
const MAX_TEMPLATE: usize = 16 * 1024;

/// The templates a project may edit.
const EDITABLE: [&str; 1] = [AUTO_FIX];

/// An auto-fix prompt: `template` with the snapshot in place of
/// [`FEEDBACK_PLACEHOLDER`] (absent: no snapshot in the prompt), and the
/// PR it is about first.
pub(crate) fn render_fix(template: &str, pr: &PullRequest, snapshot: &str) -> String {
    let body = template.replace(FEEDBACK_PLACEHOLDER, snapshot);
    format!(
        "PR #{} ({} → {}), auto-fix:\n\n{body}",
        pr.number, pr.branch, pr.base
    )
}

/// The lifecycle event a prompt is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    ReviewRequested,
    Merged,
    Closed,
}

impl Lifecycle {
    pub(crate) fn event(self) -> &'static str {
        match self {
            Lifecycle::ReviewRequested => "review_requested",
            Lifecycle::Merged => "merged",
            Lifecycle::Closed => "closed",
        }
    }
}

/// A lifecycle prompt: berth's own text, with only the PR's number,
/// branch and base (names berth validated when the PR was opened).
pub(crate) fn render_lifecycle(event: Lifecycle, pr: &PullRequest) -> String {
    let (n, branch, base) = (pr.number, &pr.branch, &pr.base);
    match event {
        Lifecycle::ReviewRequested => format!(
            "@lifecycle: a review of PR #{n} ({branch} → {base}) was requested. \
             Read the PR's threads (`pr_threads`), make sure the branch is in the state \
             you want reviewed, and answer open questions in the threads."
        ),
        Lifecycle::Merged => format!(
            "@lifecycle: PR #{n} ({branch} → {base}) was merged. \
             Wrap up: note anything left for a follow-up task; make no further change on {branch}."
        ),
        Lifecycle::Closed => format!(
            "@lifecycle: PR #{n} ({branch} → {base}) was closed without merging. \
             Stop work on {branch}; note why it might have been closed for the task's owner."
        ),
    }
}

fn check_name(name: &str) -> Result<()> {
    if EDITABLE.contains(&name) {
        return Ok(());
    }
    Err(EngineError::Invalid {
        what: "prompt template",
        value: name.chars().take(64).collect(),
        why: format!("the templates a project may edit: {}", EDITABLE.join(", ")),
    })
}

fn embedded(name: &str) -> &'static str {
    match name {
        AUTO_FIX => AUTO_FIX_DEFAULT,
        _ => "",
    }
}

/// A template as a project has it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PromptTemplate {
    pub project: String,
    pub name: String,
    pub body: String,
    /// A person edited it (else the embedded default).
    pub edited: bool,
}

impl Engine {
    /// Project `project`'s template `name`: its edit, else the embedded
    /// default.
    pub async fn prompt_template(&self, project: &str, name: &str) -> Result<PromptTemplate> {
        check_name(name)?;
        self.project(project).await?;
        let row: Option<(String, i64)> = sqlx::query_as(
            "SELECT body, edited FROM prompt_templates WHERE project = $1 AND name = $2",
        )
        .bind(project)
        .bind(name)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading a prompt template"))?;
        let (body, edited) = match row {
            Some((body, edited)) if edited != 0 => (body, true),
            _ => (embedded(name).to_string(), false),
        };
        Ok(PromptTemplate {
            project: project.to_string(),
            name: name.to_string(),
            body,
            edited,
        })
    }

    /// A person edits project `project`'s template `name` (`None`: back to
    /// the embedded default).
    pub async fn set_prompt_template(
        &self,
        project: &str,
        name: &str,
        body: Option<&str>,
        by: &Actor,
    ) -> Result<PromptTemplate> {
        check_name(name)?;
        self.project(project).await?;
        if let Some(b) = body
            && (b.trim().is_empty() || b.len() > MAX_TEMPLATE)
        {
            return Err(EngineError::Invalid {
                what: "prompt template",
                value: b.chars().take(64).collect(),
                why: format!("1 to {MAX_TEMPLATE} bytes"),
            });
        }
        let op = "editing a prompt template";
        let mut tx = self.store.write(op).await?;
        match body {
            Some(b) => sqlx::query(
                "INSERT INTO prompt_templates (project, name, body, edited, updated_at) \
                 VALUES ($1, $2, $3, 1, $4) \
                 ON CONFLICT (project, name) DO UPDATE SET body = $3, edited = 1, updated_at = $4",
            )
            .bind(project)
            .bind(name)
            .bind(b)
            .bind(now_ms()),
            None => sqlx::query("DELETE FROM prompt_templates WHERE project = $1 AND name = $2")
                .bind(project)
                .bind(name),
        }
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        emit(
            &mut tx,
            NewEvent::new(kind::PROMPT_TEMPLATE_EDITED, by)
                .project(project)
                .payload(serde_json::json!({ "name": name, "default": body.is_none() })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        self.prompt_template(project, name).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_holds_the_placeholder_and_the_classification() {
        assert!(AUTO_FIX_DEFAULT.contains(FEEDBACK_PLACEHOLDER));
        assert!(AUTO_FIX_DEFAULT.contains("nothing actionable"));
        assert!(AUTO_FIX_DEFAULT.contains("resolve_pr_thread"));
    }

    #[test]
    fn unknown_templates_are_refused() {
        assert!(check_name(AUTO_FIX).is_ok());
        assert!(check_name("lifecycle").is_err());
        assert!(check_name("../x").is_err());
    }
}
