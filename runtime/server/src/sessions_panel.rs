//! An agent's sessions, its pending prompts and the form that sends it a
//! prompt, on the approvals page (issue 18, "Where it shows"): what a
//! person needs to see that an agent is busy, idle or waiting, what it will
//! be told next, and how its last turn ended (and where all of its output
//! is kept) — without the CLI.
//!
//! Bounded like the cards: at most [`LISTED_SESSIONS`] sessions (the open
//! ones first) and [`LISTED_PROMPTS`] prompts per agent, the rest counted;
//! a prompt's text clipped; an output tail is at most 4 KiB as the engine
//! keeps it. Every value goes through [`esc`].
//!
//! The form posts nothing by itself: the page's script sends the text to
//! `POST /api/agents/{name}/prompts` with the same headers as approve and
//! deny (the session's secret and `X-Berth-Request`), so a cross-site form
//! or a replayed cookie cannot queue a prompt. The sessions and the queue
//! sit in their own block (`.agent-state`), which the script replaces when
//! a `prompt.*` or `session.*` event arrives; the form keeps what is typed.

use std::collections::HashMap;
use std::fmt::Write as _;

use berth_engine::{Agent, AutonomyReport, Event, Prompt, Session, SessionStatus, ids};

use crate::card::{self, when};
use crate::page::{esc, seg, task_link};

/// Sessions listed per agent; the rest are counted.
pub const LISTED_SESSIONS: usize = 5;
/// Pending prompts listed per agent; the rest are counted.
pub const LISTED_PROMPTS: usize = 10;
/// Characters of a prompt's text shown.
const PROMPT_CHARS: usize = 480;

/// One agent as the approvals page shows it.
#[derive(Debug, Clone)]
pub struct AgentRow {
    pub agent: Agent,
    pub report: AutonomyReport,
    /// Its sessions, oldest first (as [`berth_engine::Engine::sessions`]).
    pub sessions: Vec<Session>,
    /// The last `session.turn_ended` of each session, by session id.
    pub turns: HashMap<String, Event>,
    /// Its pending prompts (queued or reserved), in queue order.
    pub queue: Vec<Prompt>,
}

/// The part of an agent's card under its auto-mode note: sessions, queue,
/// and the send form.
pub fn agent_work(row: &AgentRow, now_ms: i64) -> String {
    let name = &row.agent.name;
    let mut o = format!("<div class=\"agent-work\">{}", agent_state(row, now_ms));
    let field = format!("prompt-text-{}", seg(name));
    let _ = write!(
        o,
        "<form class=\"send-prompt\" method=\"post\" data-agent=\"{agent}\">\
         <label for=\"{field}\">Send {agent} a prompt (for its current task; it waits in the queue while the agent is busy)</label>\
         <textarea id=\"{field}\" name=\"text\" rows=\"3\" required></textarea>\
         <div class=\"decide\"><button type=\"submit\" class=\"send\">Send prompt</button></div>\
         <p class=\"outcome\" role=\"status\" aria-live=\"polite\"></p></form></div>",
        agent = esc(name),
        field = esc(&field),
    );
    o
}

/// The sessions and the queue: the block the script replaces on a
/// `prompt.*` or `session.*` event.
pub fn agent_state(row: &AgentRow, now_ms: i64) -> String {
    let name = &row.agent.name;
    let mut o = format!(
        "<div class=\"agent-state\" id=\"agent-state-{}\">",
        esc(&seg(name))
    );
    o.push_str(&sessions(row, now_ms));
    o.push_str(&queue(row, now_ms));
    o.push_str("</div>");
    o
}

fn sessions(row: &AgentRow, now_ms: i64) -> String {
    let mut o = String::from("<h4>Sessions</h4>");
    if row.sessions.is_empty() {
        o.push_str(
            "<p class=\"empty no-sessions\">No session yet: a prompt waits in the queue until \
             one is opened for a task.</p>",
        );
        return o;
    }
    // Open ones first, then the newest ended.
    let mut listed: Vec<&Session> = row.sessions.iter().collect();
    listed.sort_by_key(|s| {
        (
            s.status == SessionStatus::Ended,
            std::cmp::Reverse(s.created_at),
        )
    });
    let hidden = listed.len().saturating_sub(LISTED_SESSIONS);
    listed.truncate(LISTED_SESSIONS);
    o.push_str("<ul class=\"sessions\">");
    for s in listed {
        let _ = write!(
            o,
            "<li class=\"session\" data-session-id=\"{id}\" data-status=\"{status}\">\
             <span class=\"status\">{status}</span>{primary} · {task} · opened {opened} · \
             <span class=\"id\">session {short}</span>",
            id = esc(&s.id),
            status = esc(s.status.as_str()),
            primary = if s.primary { " · primary" } else { "" },
            task = task_link(&s.task),
            opened = when(s.created_at, now_ms),
            short = esc(ids::short(&s.id)),
        );
        match row.turns.get(&s.id) {
            Some(e) => o.push_str(&last_turn(e, now_ms)),
            None => o.push_str("<p class=\"last-turn\">No turn has ended yet.</p>"),
        }
        o.push_str("</li>");
    }
    o.push_str("</ul>");
    if hidden > 0 {
        let _ = write!(
            o,
            "<p class=\"more\">{hidden} older session{} not shown (<code>berth sessions {}</code>).</p>",
            if hidden == 1 { "" } else { "s" },
            esc(&row.agent.name),
        );
    }
    o
}

/// A `session.turn_ended` event: how the program ended and its output's
/// tails.
fn last_turn(e: &Event, now_ms: i64) -> String {
    let p = &e.payload;
    let ended = if p["timed_out"].as_bool() == Some(true) {
        "timed out".to_string()
    } else {
        match p["exit_code"].as_i64() {
            Some(c) => format!("exit {c}"),
            None => "killed by a signal".to_string(),
        }
    };
    let duration = p["duration_ms"]
        .as_i64()
        .map(|ms| format!(" after {:.1} s", ms as f64 / 1000.0))
        .unwrap_or_default();
    let mut o = format!(
        "<p class=\"last-turn\">Last turn: <b class=\"exit\">{}</b>{} · {}</p>",
        esc(&ended),
        esc(&duration),
        when(e.at, now_ms),
    );
    let tails = [("stdout", "stdout_tail"), ("stderr", "stderr_tail")];
    let shown: Vec<(&str, &str)> = tails
        .iter()
        .filter_map(|(label, key)| {
            p[*key]
                .as_str()
                .filter(|t| !t.is_empty())
                .map(|t| (*label, t))
        })
        .collect();
    if shown.is_empty() {
        o.push_str("<p class=\"tail-none\">It printed nothing.</p>");
        return o;
    }
    o.push_str("<details class=\"tails\"><summary>Its output's tail</summary>");
    for (label, text) in shown {
        let _ = write!(
            o,
            "<p class=\"tail-label\">{label}{}</p><pre class=\"code tail {label}\">{}</pre>",
            if p["truncated"].as_bool() == Some(true) {
                " (the end of it)"
            } else {
                ""
            },
            esc(text),
        );
    }
    // The whole of it (the first MiB of each stream), on berth's host.
    if let Some(dir) = p["output"]["stdout"]
        .as_str()
        .and_then(|f| std::path::Path::new(f).parent())
    {
        let _ = write!(
            o,
            "<p class=\"tail-kept\">All of it{}: in <code>{}</code> on berth's host.</p>",
            if p["output_truncated"].as_bool() == Some(true) {
                " up to 1 MiB a stream"
            } else {
                ""
            },
            esc(&dir.display().to_string()),
        );
    }
    o.push_str("</details>");
    o
}

fn queue(row: &AgentRow, now_ms: i64) -> String {
    let mut o = format!(
        "<h4>Queue (<span class=\"queue-count\">{}</span>)</h4>",
        row.queue.len()
    );
    if row.queue.is_empty() {
        o.push_str("<p class=\"empty no-prompts\">No prompt is pending.</p>");
        return o;
    }
    o.push_str("<ol class=\"queue\">");
    for p in row.queue.iter().take(LISTED_PROMPTS) {
        let _ = write!(
            o,
            "<li class=\"prompt\" data-prompt-id=\"{id}\" data-status=\"{status}\">\
             <p class=\"meta\"><span class=\"status\">{status}</span> · {kind} from {sender} · {at}{task}{coalesced}</p>\
             <pre class=\"code body\">{body}</pre>{reason}</li>",
            id = esc(&p.id),
            status = esc(p.status.as_str()),
            kind = esc(&p.kind),
            sender = esc(&format!("{}:{}", p.sender.kind.as_str(), p.sender.id)),
            at = when(p.created_at, now_ms),
            task = p
                .task
                .as_deref()
                .map(|t| format!(" · {}", task_link(t)))
                .unwrap_or_default(),
            coalesced = if p.coalesced > 0 {
                format!(" · {} more like it counted in", p.coalesced)
            } else {
                String::new()
            },
            body = esc(&card::clip(&p.body, PROMPT_CHARS)),
            reason = p
                .reason
                .as_deref()
                .map(|r| format!("<p class=\"reason\">Waiting: {}</p>", esc(r)))
                .unwrap_or_default(),
        );
    }
    o.push_str("</ol>");
    let hidden = row.queue.len().saturating_sub(LISTED_PROMPTS);
    if hidden > 0 {
        let _ = write!(
            o,
            "<p class=\"more\">{hidden} more pending (<code>berth queue {}</code>).</p>",
            esc(&row.agent.name),
        );
    }
    o
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_hostile_prompt_and_output_tail_render_as_text() {
        let evil = "<img src=x onerror=alert(1)>";
        let turn = Event {
            id: 3,
            at: 0,
            kind: "session.turn_ended".into(),
            actor: berth_engine::Actor::agent("dev-1"),
            project: None,
            agent: None,
            task: None,
            action: None,
            payload: serde_json::json!({
                "session": "s1", "exit_code": 3, "timed_out": false,
                "stdout_tail": evil, "stderr_tail": "", "truncated": false, "duration_ms": 1500,
                "output": {"stdout": "/s/sessions/s1/<p>-1.stdout", "stderr": "/s/sessions/s1/<p>-1.stderr"},
                "output_truncated": false,
            }),
        };
        let html = last_turn(&turn, 0);
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains("<b class=\"exit\">exit 3</b> after 1.5 s"),
            "{html}"
        );
        assert!(html.contains("&lt;img src=x"), "{html}");
        assert!(
            html.contains("All of it: in <code>/s/sessions/s1</code> on berth's host."),
            "{html}"
        );
        assert!(
            !html.contains("stderr"),
            "an empty tail is not shown: {html}"
        );
    }
}
