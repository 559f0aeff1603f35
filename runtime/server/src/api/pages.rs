//! The pages' content: the approvals and a task, rendered on the server
//! ([`crate::page`]) and answered as HTML fragments under `/api/pages/…`.
//!
//! The page routes answer a shell only; the page's script fetches these
//! with the session's secret, which `/api/*` requires beside the cookie. So
//! a cookie replayed by another server on this host (cookies are not
//! isolated by port) reads no command, path or task.

use std::collections::HashMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use berth_engine::{ActionFilter, ActionRecord, ActionStatus, EventFilter};
use serde::Deserialize;

use crate::AppState;
use crate::api::PathArgs;
use crate::body::QueryArgs;
use crate::diff;
use crate::error::ApiError;
use crate::page::{PENDING_PAGE, PendingPage, esc, fragment, render_approvals};
use crate::sessions_panel::AgentRow;
use crate::task_page::{TaskView, render_task};

#[derive(Debug, Deserialize)]
pub(crate) struct ApprovalsQuery {
    /// The last pending action of the previous page.
    after: Option<String>,
}

/// `/api/pages/approvals`: what waits for a person (a page of it), the
/// commands running now (with their Stop buttons), the agents with their
/// auto-mode switch, sessions, prompt queue and prompt form, the tasks, and
/// each project's network allow and deny lists.
pub(crate) async fn approvals(
    State(app): State<AppState>,
    QueryArgs(q): QueryArgs<ApprovalsQuery>,
) -> Result<Response, ApiError> {
    let e = &app.engine;
    let after = match q.after {
        Some(a) => Some(e.action(&a).await?.id),
        None => None,
    };
    let mut pending = e
        .actions(&ActionFilter {
            pending_only: true,
            after,
            limit: Some(PENDING_PAGE as i64 + 1),
            ..ActionFilter::default()
        })
        .await?;
    let next = (pending.len() > PENDING_PAGE).then(|| {
        pending.truncate(PENDING_PAGE);
        pending.last().map(|a| a.id.clone()).unwrap_or_default()
    });
    let waiting = e.pending_count().await?;
    let running = e.executing_actions().await?;
    let mut agents = Vec::new();
    for agent in e.agents().await? {
        agents.push(AgentRow {
            report: e.autonomy_report(&agent.name).await?,
            sessions: e.sessions(Some(&agent.name)).await?,
            turns: e.last_turns(&agent.name).await?,
            queue: e.prompt_queue(Some(&agent.name)).await?,
            agent,
        });
    }
    let tasks = e.tasks(None).await?;
    // Each project's execution mode, for the tasks that follow it (a
    // project removed since has none).
    let names: std::collections::BTreeSet<&str> =
        tasks.iter().map(|t| t.project.as_str()).collect();
    let mut project_modes = HashMap::new();
    for name in names {
        if let Ok(p) = e.load_project(name).await {
            project_modes.insert(name.to_string(), p.config.execution.mode);
        }
    }
    let cursor = e.latest_event_id().await?;
    let extras = diffs(e, &pending).await?;
    let page = PendingPage {
        actions: &pending,
        waiting,
        next: next.as_deref(),
        now_ms: berth_engine::ids::now_ms(),
        extras: &extras,
    };
    let mut body = render_approvals(&page, &running, &agents, &tasks, &project_modes, cursor);
    // Each project's network lists, editable (a project whose files do not
    // read is left out: its own pages say why).
    let mut lists = Vec::new();
    for p in e.projects().await? {
        if let Ok(l) = e.network_list(&p.name).await {
            lists.push(l);
        }
    }
    body.push_str(&crate::network_panel::network_section(&lists));
    Ok(fragment(StatusCode::OK, body))
}

/// `/api/pages/actions/{id}/diff`: a file write's whole diff (up to
/// [`diff::FULL_LINES`] lines), for its card's "show all".
pub(crate) async fn action_diff(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Response, ApiError> {
    let e = &app.engine;
    let a = e.action(&id).await?;
    let body = match e.file_write_base(&a).await? {
        Some(base) => diff::render(
            &base,
            a.params.content.as_deref().unwrap_or(""),
            diff::FULL_LINES,
            None,
        ),
        None => format!(
            "<p class=\"diff-head\">{} is a {} action: it writes no file.</p>",
            esc(&a.id),
            esc(a.action.kind())
        ),
    };
    Ok(fragment(StatusCode::OK, body))
}

/// `/api/pages/tasks/{id}`: the task, its actions, and its event log.
pub(crate) async fn task(
    State(app): State<AppState>,
    PathArgs(id): PathArgs<String>,
) -> Result<Response, ApiError> {
    let e = &app.engine;
    let task = match e.task(&id).await {
        Ok(t) => t,
        Err(err) => {
            let api = ApiError::from(err);
            let body = format!("<h1>No such task</h1><p>{}</p>", esc(&api.message));
            return Ok(fragment(api.status, body));
        }
    };
    // Bounded like the API's pages: the first actions and events of the
    // task (the API pages through the rest; the live log appends).
    let actions = e
        .actions(&ActionFilter {
            task: Some(task.id.clone()),
            limit: Some(crate::api::actions::MAX_LIMIT),
            ..ActionFilter::default()
        })
        .await?;
    let events = e
        .events(&EventFilter {
            task: Some(task.id.clone()),
            limit: Some(crate::api::events::MAX_LIMIT),
            ..EventFilter::default()
        })
        .await?;
    let pending: Vec<ActionRecord> = actions
        .iter()
        .filter(|a| a.status == ActionStatus::Pending)
        .cloned()
        .collect();
    let extras = diffs(e, &pending).await?;
    let project_mode = e.load_project(&task.project).await?.config.execution.mode;
    let agent = match task.agent.as_deref() {
        Some(name) => match e.agent(name).await {
            Ok(a) => {
                let report = e.autonomy_report(&a.name).await?;
                Some((a, report))
            }
            // Gone since (removed): the task keeps its name.
            Err(_) => None,
        },
        None => None,
    };
    let mut prs = Vec::new();
    for pr in e.prs(Some(&task.project)).await? {
        if pr.task.as_deref() != Some(task.id.as_str()) {
            continue;
        }
        let n = pr.number.to_string();
        prs.push(crate::pr_panel::PrView {
            feedback: e.pr_feedback(&n).await?,
            conversation: e.pr_threads(&n).await?,
            automation: e.pr_automation(&n).await?,
            changes: e.pr_changes(&n).await?,
            pr,
        });
    }
    let view = TaskView {
        prs: &prs,
        task: &task,
        actions: &actions,
        events: &events,
        project_mode,
        agent: agent.as_ref().map(|(a, r)| (a, r)),
        now_ms: berth_engine::ids::now_ms(),
        extras: &extras,
    };
    Ok(fragment(StatusCode::OK, render_task(&view)))
}

/// A pending file write shows what it changes: the current file, read in
/// the agent's berth through its confined file read, diffed against the
/// proposed content; by action id.
async fn diffs(
    e: &berth_engine::Engine,
    pending: &[ActionRecord],
) -> Result<HashMap<String, String>, ApiError> {
    let mut extras = HashMap::new();
    for a in pending {
        if let Some(base) = e.file_write_base(a).await? {
            let content = a.params.content.as_deref().unwrap_or("");
            extras.insert(
                a.id.clone(),
                diff::render(&base, content, diff::CARD_LINES, Some(&a.id)),
            );
        }
    }
    Ok(extras)
}
