//! The approvals page's shell and content, and the shared page layout,
//! rendered on the server (a task's page: [`crate::task_page`]).
//!
//! No front-end build: HTML written here, one small script and one style
//! sheet served from `/assets/` (the Content-Security-Policy allows scripts
//! and styles from this origin only, so nothing inline would run anyway).
//!
//! The page routes (`/`, `/tasks/{id}`) answer a shell without data: the
//! session cookie reaches every server on this host, which could replay it.
//! The script fetches the rendered content from `/api/pages/…` (in
//! [`crate::api::pages`]), which, like all of `/api`, needs the session's
//! secret as well as its cookie, and inserts it.
//! Every value from the store goes through [`esc`] — a command line, a path
//! or a task title is whatever an agent or a person typed.
//!
//! ADR 0167 D5: before the click, each pending action says what auto mode
//! lifts for that very command and what would still ask; the agents list
//! says what the switch lifts and what still asks.

use std::fmt::Write as _;

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use berth_engine::{ActionRecord, Agent, AutonomyReport, ExecutionMode, Task, ids};
use serde::Deserialize;

use crate::AppState;
use crate::auth::{Access, SESSION_COOKIE};
use crate::body::QueryArgs;
use crate::card;
use crate::error::ApiError;
use crate::sessions_panel::{self, AgentRow};

pub(crate) const APP_JS: &str = include_str!("../assets/app.js");
pub(crate) const APP_CSS: &str = include_str!("../assets/app.css");

/// Escapes text for HTML content and double- or single-quoted attributes,
/// and makes control characters visible: a C0 control becomes its Unicode
/// picture (NUL → `␀`, ESC → `␛`), DEL `␡`, a C1 control `�`, and a
/// bidirectional override or isolate is named (`[U+202E]`) so it cannot
/// reorder what a person reads. Newlines and tabs stay.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            '\u{0}'..='\u{1f}' => {
                out.push(char::from_u32(0x2400 + u32::from(c)).unwrap_or('\u{fffd}'));
            }
            '\u{7f}' => out.push('\u{2421}'),
            '\u{80}'..='\u{9f}' => out.push('\u{fffd}'),
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                let _ = write!(out, "[U+{:04X}]", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// A path segment for a link: ids and names are plain, but nothing else
/// reaches an `href` unencoded.
pub(crate) fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// A link to a task's page, its id shortened.
pub(crate) fn task_link(task: &str) -> String {
    format!(
        "<a class=\"task-link\" href=\"/tasks/{}\">task {}</a>",
        seg(task),
        esc(ids::short(task))
    )
}

fn layout(title: &str, page: &str, body: &str) -> String {
    layout_with_head(title, page, "", body)
}

/// [`layout`] with `head` (markup already escaped) added to the head.
fn layout_with_head(title: &str, page: &str, head: &str, body: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">{head}\
         <title>{title}</title><link rel=\"stylesheet\" href=\"/assets/app.css\">\
         <script src=\"/assets/app.js\" defer></script></head>\
         <body data-page=\"{page}\"><a class=\"skip\" href=\"#content\">Skip to content</a><header><a class=\"home\" href=\"/\">berth</a>\
         <span class=\"live\" id=\"live\" hidden>live</span></header><main id=\"content\">{body}</main></body></html>\n",
        title = esc(title),
        page = esc(page),
    )
}

fn html(status: StatusCode, text: String) -> Response {
    (status, Html(text)).into_response()
}

/// The page a browser gets without a session.
pub(crate) fn login_needed(why: &str) -> Response {
    let body = format!(
        "<h1>Log in</h1><p>{}.</p><p>Open <code>/login?token=TOKEN</code>, where TOKEN is the \
         contents of the file <code>api-token</code> in berth's state directory (its path is printed \
         when <code>berth serve</code> starts). The token is exchanged once for a session cookie.</p>",
        esc(why)
    );
    html(
        StatusCode::UNAUTHORIZED,
        layout("berth — log in", "login", &body),
    )
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LoginQuery {
    token: Option<String>,
}

/// The `<meta>` name under which the login answer hands the page its
/// session's secret.
pub const SECRET_META: &str = "berth-session-secret";

/// Exchanges the API token for a session cookie (HttpOnly, SameSite=Strict,
/// this server only, expiring) and the session's secret: the answer is a
/// short page whose script keeps the secret in this origin's storage (which,
/// unlike the cookie, no other port of this host can read) and goes on to
/// the approvals page. The secret is written nowhere else: a page fetched
/// with the cookie alone does not carry it.
pub(crate) async fn login(
    State(app): State<AppState>,
    QueryArgs(q): QueryArgs<LoginQuery>,
) -> Response {
    let Access::Token(access) = &app.access else {
        // The unix socket needs no login.
        return Redirect::to("/").into_response();
    };
    let Some(token) = q.token else {
        return login_needed("this page needs the API token once");
    };
    if !access.token_matches(token.trim()) {
        return login_needed("that token is wrong");
    }
    let root = app.engine.state().root();
    let (session, secret) = match (
        crate::listen::random_hex(32, root),
        crate::listen::random_hex(32, root),
    ) {
        (Ok(s), Ok(k)) => (s, k),
        (Err(e), _) | (_, Err(e)) => {
            return ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", e.to_string())
                .into_response();
        }
    };
    access.open_session(session.clone(), secret.clone());
    let cookie = format!(
        "{SESSION_COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/; Max-Age={}",
        access.ttl().as_secs()
    );
    let head = format!("<meta name=\"{SECRET_META}\" content=\"{}\">", esc(&secret));
    let body = format!(
        "<h1>Logged in</h1><p>This session lasts {}. Continue to <a id=\"continue\" href=\"/\">the approvals</a>.</p>",
        crate::auth::human_duration(access.ttl())
    );
    let mut r = html(
        StatusCode::OK,
        layout_with_head("berth — logged in", "logged-in", &head, &body),
    );
    match HeaderValue::from_str(&cookie) {
        Ok(v) => {
            r.headers_mut().insert(header::SET_COOKIE, v);
            r
        }
        Err(_) => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the session cookie could not be encoded",
        )
        .into_response(),
    }
}

pub(crate) async fn app_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        APP_JS,
    )
        .into_response()
}

pub(crate) async fn app_css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], APP_CSS).into_response()
}

/// Pending actions on one approvals page; the rest follow page by page
/// (`/?after=<the last one's id>`). With each card's command clipped and
/// each stored decision bounded, a page stays a few megabytes at most.
pub const PENDING_PAGE: usize = 25;

/// `/`: the approvals page's shell. Its content (what waits for a person,
/// the agents, the tasks) is fetched by the page's script from
/// `/api/pages/approvals` with the session's secret: a cookie replayed by
/// another server on this host opens the shell alone.
pub(crate) async fn approvals() -> Response {
    shell("berth — approvals", "approvals")
}

/// `/tasks/{id}`: a task page's shell; its content is fetched from
/// `/api/pages/tasks/{id}` as the approvals' is.
pub(crate) async fn task_page() -> Response {
    shell("berth — task", "task")
}

/// A page that holds no data: the script fills `main` from the fragment
/// route (the same path under `/api/pages`), sending the session's secret.
fn shell(title: &str, page: &str) -> Response {
    html(
        StatusCode::OK,
        layout(
            title,
            page,
            "<p id=\"loading\" class=\"empty\">Loading…</p><noscript><p>This page needs \
             JavaScript: its content is fetched with the session's secret, which only this \
             page holds.</p></noscript>",
        ),
    )
}

/// An HTML fragment for `main`, from a fragment route.
pub(crate) fn fragment(status: StatusCode, body: String) -> Response {
    html(status, body)
}

/// One page of the pending actions.
#[derive(Debug, Clone, Copy)]
pub struct PendingPage<'a> {
    pub actions: &'a [ActionRecord],
    /// How many wait in all.
    pub waiting: i64,
    /// The cursor of the next page, when there is one.
    pub next: Option<&'a str>,
    /// Now, in milliseconds since the epoch: cards say how long ago.
    pub now_ms: i64,
    /// Markup (escaped) shown under a card's code, by action id: a file
    /// write's diff.
    pub extras: &'a std::collections::HashMap<String, String>,
}

/// The approvals page's body. `running`: the executing actions, each with
/// a Stop button (`berth cancel`); `agents`: each with its sessions, queue
/// and prompt form.
pub fn render_approvals(
    pending: &PendingPage<'_>,
    running: &[ActionRecord],
    agents: &[AgentRow],
    tasks: &[Task],
    project_modes: &std::collections::HashMap<String, ExecutionMode>,
    cursor: i64,
) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<section id=\"pending\" data-cursor=\"{cursor}\"><h1>Waiting for you \
         (<span id=\"pending-count\">{}</span>)</h1>",
        pending.waiting
    );
    if pending.actions.is_empty() {
        o.push_str("<p class=\"empty\" id=\"nothing-pending\">No action waits for a person.</p>");
    } else {
        o.push_str(
            "<p class=\"sort-note\">Highest risk first. Keys: <kbd>j</kbd>/<kbd>k</kbd> move, \
             <kbd>a</kbd> approve (twice to confirm), <kbd>d</kbd> deny (5 s to undo).</p>",
        );
    }
    o.push_str("<div id=\"pending-list\">");
    // Highest risk first; within a level, oldest first (a stable sort).
    let mut cards: Vec<&ActionRecord> = pending.actions.iter().collect();
    cards.sort_by_key(|a| std::cmp::Reverse(card::risk_of(a).risk));
    for a in cards {
        let extra = pending.extras.get(&a.id).map(String::as_str).unwrap_or("");
        o.push_str(&card::action_card(a, pending.now_ms, extra));
    }
    o.push_str("</div>");
    if let Some(next) = pending.next {
        let _ = write!(
            o,
            "<p class=\"more\"><a id=\"pending-next\" href=\"/?after={}\">The next {PENDING_PAGE} waiting →</a></p>",
            seg(next)
        );
    }
    o.push_str("</section>");
    o.push_str(&running_section(running));

    o.push_str("<section id=\"agents\"><h2>Agents</h2>");
    if agents.is_empty() {
        o.push_str("<p class=\"empty\">No agents yet.</p>");
    }
    for row in agents {
        o.push_str(&agent_card_with(
            &row.agent,
            &row.report,
            &sessions_panel::agent_work(row, pending.now_ms),
        ));
    }
    o.push_str("</section>");

    o.push_str("<section id=\"tasks\"><h2>Tasks</h2>");
    if tasks.is_empty() {
        o.push_str("<p class=\"empty\">No tasks yet.</p>");
    } else {
        o.push_str(
            "<table><thead><tr><th scope=\"col\">task</th><th scope=\"col\">status</th><th scope=\"col\">project</th><th scope=\"col\">agent</th><th scope=\"col\">mode</th><th scope=\"col\">title</th></tr></thead><tbody>",
        );
        for t in tasks {
            let _ = write!(
                o,
                "<tr class=\"task\" data-task-id=\"{id}\"><td><a href=\"/tasks/{href}\">{short}</a></td>\
                 <td class=\"status\">{status}</td><td>{project}</td><td>{agent}</td><td class=\"mode\">{mode}</td><td>{title}{diag}</td></tr>",
                id = esc(&t.id),
                href = seg(&t.id),
                short = esc(ids::short(&t.id)),
                status = esc(t.status.as_str()),
                project = esc(&t.project),
                agent = esc(t.agent.as_deref().unwrap_or("-")),
                // The execution mode in force, and whose it is.
                mode = match (t.execution_mode, project_modes.get(&t.project)) {
                    (Some(m), _) => format!("{} (task)", m.as_str()),
                    (None, Some(m)) => format!("{} (project)", m.as_str()),
                    (None, None) => "-".to_string(),
                },
                title = esc(&t.title),
                diag = t
                    .diagnosis
                    .as_deref()
                    .map(|d| format!(" <small>({})</small>", esc(d)))
                    .unwrap_or_default(),
            );
        }
        o.push_str("</tbody></table>");
    }
    o.push_str("</section>");
    o
}

/// The commands running now, each with a Stop button: it kills the
/// command's whole process tree and the action ends `cancelled` with its
/// output so far; the berth stays up.
fn running_section(running: &[ActionRecord]) -> String {
    let mut o = String::from("<section id=\"running\"><h2>Running now</h2>");
    if running.is_empty() {
        o.push_str("<p class=\"empty\" id=\"nothing-running\">No command is running.</p>");
    }
    for a in running {
        let (kind, what, _) = card::describe(a);
        let what = card::clip(&what, card::CLAMP_CHARS);
        let _ = write!(
            o,
            "<article class=\"action running\" id=\"running-{id}\" data-action-id=\"{id}\" data-state=\"executing\">\
             <h3><span class=\"kind\">{kind}</span> <code class=\"what\">{what}</code></h3>\
             <p class=\"meta\">agent <b class=\"agent\">{agent}</b> · project {project} · since {at} · <span class=\"id\">{short}</span></p>\
             <div class=\"decide\"><button type=\"button\" class=\"stop\" data-verb=\"cancel\" data-action-id=\"{id}\">Stop</button></div>\
             <p class=\"outcome\" aria-live=\"polite\"></p></article>",
            id = esc(&a.id),
            kind = esc(&kind),
            what = esc(&what),
            agent = esc(&a.agent),
            project = esc(&a.project),
            at = esc(&ids::rfc3339(a.decided_at.unwrap_or(a.created_at))),
            short = esc(ids::short(&a.id)),
        );
    }
    o.push_str("</section>");
    o
}

/// An agent with its auto-mode switch and, before the click, what the
/// switch lifts and what still asks.
pub(crate) fn agent_card(a: &Agent, r: &AutonomyReport) -> String {
    agent_card_with(a, r, "")
}

/// [`agent_card`] with `work` (markup already escaped: its sessions, queue
/// and prompt form) at its end.
fn agent_card_with(a: &Agent, r: &AutonomyReport, work: &str) -> String {
    let mut o = String::new();
    let _ = write!(
        o,
        "<article class=\"agent\" data-agent=\"{name}\"><h3>{name} <small>{imp} · {project} · {status}{task}</small></h3>",
        name = esc(&a.name),
        imp = esc(a.implementation.as_str()),
        project = esc(&a.project),
        status = esc(a.status.as_str()),
        task = a
            .task
            .as_deref()
            .map(|t| format!(" · {}", task_link(t)))
            .unwrap_or_default(),
    );
    let _ = write!(
        o,
        "<p class=\"automode-state\">Auto mode is <b>{}</b>. \
         <button type=\"button\" class=\"toggle\" data-verb=\"auto-mode\" data-agent=\"{}\" data-on=\"{}\">Turn auto mode {}</button></p>",
        if r.auto_mode { "on" } else { "off" },
        esc(&a.name),
        if r.auto_mode { "false" } else { "true" },
        if r.auto_mode { "off" } else { "on" },
    );
    if r.auto_mode {
        o.push_str("<p>It lifts:</p><ul class=\"lifts\">");
        for l in &r.lifts {
            let _ = write!(o, "<li>{}</li>", esc(l));
        }
        o.push_str("</ul>");
    } else {
        o.push_str(
            "<p class=\"lifts\">Turning it on lifts the path scope limit and the partial allow for this agent \
             (each pending action above says what it would lift for that command).</p>",
        );
    }
    if let Some(note) = &r.runner_host {
        let _ = write!(o, "<p class=\"runner-host\">{}</p>", esc(note));
    }
    o.push_str("<p>Still asks (or denies) whatever the switch says:</p><ul class=\"still-asks\">");
    for s in &r.still_asks {
        let _ = write!(o, "<li>{}</li>", esc(s));
    }
    o.push_str("</ul>");
    o.push_str(work);
    o.push_str("</article>");
    o
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use berth_engine::{Actor, Event, TaskStatus};

    use super::*;

    #[test]
    fn text_and_links_are_escaped() {
        let cases = [
            (
                "<script>alert(1)</script>",
                "&lt;script&gt;alert(1)&lt;/script&gt;",
            ),
            ("a \"b\" 'c' & d", "a &quot;b&quot; &#39;c&#39; &amp; d"),
            ("plain", "plain"),
            // Controls made visible; newline and tab kept.
            (
                "a\0b\x1b[31m\x7f\u{85}\u{202e}x\n\ty",
                "a\u{2400}b\u{241b}[31m\u{2421}\u{fffd}[U+202E]x\n\ty",
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(esc(raw), want);
        }
        assert_eq!(seg("ab-12_.x"), "ab-12_.x");
        assert_eq!(seg("a/../b?c=\"d\""), "a%2F..%2Fb%3Fc%3D%22d%22");
    }

    #[test]
    fn a_hostile_task_and_event_render_as_text() {
        let evil = "<img src=x onerror=alert(1)>";
        let task = Task {
            id: "t\"><b>".into(),
            project: "demo".into(),
            title: evil.into(),
            status: TaskStatus::Blocked,
            agent: Some(evil.into()),
            diagnosis: Some(evil.into()),
            execution_mode: None,
            steps: None,
            write: false,
            parent: None,
            source: berth_engine::TaskSource::User,
            tags: Vec::new(),
            archived_at: None,
            created_at: 0,
            updated_at: 0,
        };
        let event = Event {
            id: 7,
            at: 0,
            kind: evil.into(),
            actor: Actor::agent(evil),
            project: None,
            agent: None,
            task: None,
            action: None,
            payload: serde_json::json!({"status": evil}),
        };
        let extras = std::collections::HashMap::new();
        let html = crate::task_page::render_task(&crate::task_page::TaskView {
            prs: &[],
            task: &task,
            actions: &[],
            events: &[event],
            project_mode: berth_engine::ExecutionMode::Review,
            agent: None,
            now_ms: 0,
            extras: &extras,
        });
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("\"><b>"), "{html}");
        assert_eq!(
            html.matches("&lt;img src=x onerror=alert(1)&gt;").count(),
            6,
            "{html}"
        );
        assert!(html.contains("data-cursor=\"7\""));
    }
}
