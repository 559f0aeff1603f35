//! A task's page as a review, not a log: what waits for a person on this
//! task (its cards, with their buttons), the steps as a timeline with what
//! each did and printed, the execution mode with its switch (what it
//! changes said before the click), the agent's auto-mode switch, and the
//! event log below, each action linked to its events and back.
//!
//! Rendered on the server like the approvals ([`crate::page`]): every value
//! through [`esc`], every output clamped with "show all".

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use berth_engine::{
    ActionRecord, ActionResult, ActionStatus, Agent, AutonomyReport, Event, ExecutionMode, Task,
    ids,
};
use berth_policy::Action;

use crate::card;
use crate::page::{agent_card, esc, seg};

/// Events linked under one step.
const STEP_EVENTS: usize = 6;

/// What a task's page shows.
pub struct TaskView<'a> {
    pub task: &'a Task,
    pub actions: &'a [ActionRecord],
    pub events: &'a [Event],
    /// The project's execution mode (the task's when it has none).
    pub project_mode: ExecutionMode,
    /// The task's agent and its autonomy report, when it has one.
    pub agent: Option<(&'a Agent, &'a AutonomyReport)>,
    pub now_ms: i64,
    /// A file write's diff, by action id (see [`crate::diff`]).
    pub extras: &'a HashMap<String, String>,
    /// The task's PRs ([`crate::pr_panel`]).
    pub prs: &'a [crate::pr_panel::PrView],
}

/// The task page's body.
pub fn render_task(v: &TaskView<'_>) -> String {
    let task = v.task;
    let mut o = String::new();
    let _ = write!(
        o,
        "<section id=\"task\" data-task-id=\"{id}\" data-cursor=\"{cursor}\"><h1>{title}</h1>\
         <p class=\"meta\">task <code>{id}</code> · project {project} · agent {agent} · status \
         <b id=\"task-status\">{status}</b></p><p id=\"task-diagnosis\">{diag}</p>",
        id = esc(&task.id),
        cursor = v.events.last().map(|e| e.id).unwrap_or(0),
        title = esc(&task.title),
        project = esc(&task.project),
        agent = esc(task.agent.as_deref().unwrap_or("-")),
        status = esc(task.status.as_str()),
        diag = esc(task.diagnosis.as_deref().unwrap_or("")),
    );
    o.push_str(&mode_switch(task, v.project_mode));
    o.push_str("</section>");

    let waiting: Vec<&ActionRecord> = v
        .actions
        .iter()
        .filter(|a| a.status == ActionStatus::Pending)
        .collect();
    let _ = write!(
        o,
        "<section id=\"waiting\"><h2>Waiting for you (<span id=\"pending-count\">{}</span>)</h2>",
        waiting.len()
    );
    if waiting.is_empty() {
        o.push_str("<p class=\"empty\" id=\"nothing-pending\">Nothing of this task waits for a person.</p>");
    }
    o.push_str("<div id=\"pending-list\">");
    for a in waiting {
        let extra = v.extras.get(&a.id).map(String::as_str).unwrap_or("");
        o.push_str(&card::action_card(a, v.now_ms, extra));
    }
    o.push_str("</div></section>");

    o.push_str(&crate::pr_panel::render_prs(v.prs));
    let shown = shown_steps(v);
    o.push_str(&timeline(v, &shown));
    // An event's action links to its step only when the step is on the page
    // (a pipeline shows each step's last run; an action may come after the
    // steps were read).
    let on_page: HashSet<&str> = shown
        .iter()
        .filter_map(|s| match s {
            Shown::Ran(a) => Some(a.id.as_str()),
            Shown::NotRun(_) => None,
        })
        .collect();

    if let Some((agent, report)) = v.agent {
        o.push_str("<section id=\"task-agent\"><h2>Its agent</h2>");
        o.push_str(&agent_card(agent, report));
        o.push_str("</section>");
    }

    o.push_str(
        "<section id=\"log\"><h2>Event log</h2><table><thead><tr><th scope=\"col\">#</th>\
         <th scope=\"col\">at</th><th scope=\"col\">type</th><th scope=\"col\">actor</th>\
         <th scope=\"col\">action</th><th scope=\"col\">status</th></tr></thead><tbody id=\"events\">",
    );
    for e in v.events {
        o.push_str(&event_row(e, &on_page));
    }
    o.push_str("</tbody></table></section>");
    o
}

/// The execution mode in force, whose it is, and the switch — with what
/// each mode does said before the click.
fn mode_switch(task: &Task, project_mode: ExecutionMode) -> String {
    let (mode, whose) = match task.execution_mode {
        Some(m) => (m, "this task's own"),
        None => (project_mode, "the project's"),
    };
    let other = match mode {
        ExecutionMode::Auto => ExecutionMode::Review,
        ExecutionMode::Review => ExecutionMode::Auto,
    };
    let mut o = format!(
        "<div class=\"mode\" id=\"task-mode\"><p>Execution mode: <b class=\"mode-now\">{mode}</b> ({whose}; \
         the project {project} is in <b>{pmode}</b>). It decides how a pipeline task ends, never what \
         a step may do: each step's action still goes through the policy and asks as it would.</p>",
        mode = mode.as_str(),
        project = esc(&task.project),
        pmode = project_mode.as_str(),
    );
    let _ = write!(
        o,
        "<p class=\"mode-says\">{}</p><div class=\"decide\">\
         <button type=\"button\" data-verb=\"task-mode\" data-task-id=\"{id}\" data-mode=\"{other}\">Switch this task to {other}</button>",
        mode_words(other),
        id = esc(&task.id),
        other = other.as_str(),
    );
    if task.execution_mode.is_some() {
        let _ = write!(
            o,
            "<button type=\"button\" data-verb=\"task-mode\" data-task-id=\"{}\" data-mode=\"inherit\">Follow the project's ({})</button>",
            esc(&task.id),
            project_mode.as_str()
        );
    }
    let pother = match project_mode {
        ExecutionMode::Auto => ExecutionMode::Review,
        ExecutionMode::Review => ExecutionMode::Auto,
    };
    let _ = write!(
        o,
        "<button type=\"button\" data-verb=\"project-mode\" data-project=\"{p}\" data-mode=\"{m}\">Switch project {pe} to {m}</button>\
         </div><p class=\"outcome\" aria-live=\"polite\"></p></div>",
        p = esc(&task.project),
        pe = esc(&task.project),
        m = pother.as_str(),
    );
    o
}

/// What a mode does, said before the switch.
fn mode_words(mode: ExecutionMode) -> &'static str {
    match mode {
        ExecutionMode::Auto => {
            "Auto: a run that succeeds ends done with no review and its followups are made at once; \
             a step that fails on a permission error is retried once with /work writable. Still asks: \
             every step the policy asks about, every privileged action."
        }
        ExecutionMode::Review => {
            "Review: a run that succeeds waits in review for your approval; any failure blocks the \
             task. Still asks: every step the policy asks about, as in auto."
        }
    }
}

/// What one line of the timeline shows.
enum Shown<'a> {
    /// The action that ran the step (an agent task's: each action).
    Ran(&'a ActionRecord),
    /// A pipeline's declared command, not run yet.
    NotRun(&'a str),
}

/// The steps: a pipeline's declared steps, each with the action that ran
/// it last; an agent task's actions in order.
fn shown_steps<'a>(v: &TaskView<'a>) -> Vec<Shown<'a>> {
    match &v.task.steps {
        Some(steps) => steps
            .iter()
            .map(|step| {
                v.actions
                    .iter()
                    .rev()
                    .find(|a| {
                        matches!(&a.action, Action::Terminal { command } if *command == step.command)
                    })
                    .map_or(Shown::NotRun(&step.command), Shown::Ran)
            })
            .collect(),
        None => v.actions.iter().map(Shown::Ran).collect(),
    }
}

/// The timeline of [`shown_steps`].
fn timeline(v: &TaskView<'_>, shown: &[Shown<'_>]) -> String {
    let mut o = String::from("<section id=\"timeline\"><h2>Steps</h2><ol class=\"timeline\">");
    let mut events: HashMap<&str, Vec<&Event>> = HashMap::new();
    for e in v.events {
        if let Some(a) = e.action.as_deref() {
            events.entry(a).or_default().push(e);
        }
    }
    if v.task.steps.is_none() && v.actions.is_empty() {
        o.push_str("<li class=\"empty\">No step yet: the agent has proposed nothing.</li>");
    }
    for (i, step) in shown.iter().enumerate() {
        match step {
            Shown::Ran(a) => o.push_str(&step_item(i + 1, a, &events, v.now_ms)),
            Shown::NotRun(command) => {
                let _ = write!(
                    o,
                    "<li class=\"step\" data-status=\"not_run\"><div class=\"step-head\"><span class=\"n\">{n}</span> \
                     <span class=\"status\">not run yet</span></div>{code}</li>",
                    n = i + 1,
                    code = card::code_block("", command, "", "what"),
                );
            }
        }
    }
    o.push_str("</ol></section>");
    o
}

/// A status in words.
fn status_words(s: ActionStatus) -> &'static str {
    match s {
        ActionStatus::Pending => "waits for you",
        ActionStatus::Approved => "approved; runs on the worker holding the agent",
        ActionStatus::Executing => "running",
        ActionStatus::Executed => "executed",
        ActionStatus::Failed => "failed",
        ActionStatus::Denied => "denied",
        ActionStatus::Refused => "refused",
        ActionStatus::Cancelled => "cancelled",
        ActionStatus::Interrupted => "interrupted",
    }
}

fn step_item(
    n: usize,
    a: &ActionRecord,
    events: &HashMap<&str, Vec<&Event>>,
    now_ms: i64,
) -> String {
    let (kind, what, field) = card::describe(a);
    let mut o = format!(
        "<li class=\"step\" id=\"step-{id}\" data-action-id=\"{id}\" data-status=\"{status}\">\
         <div class=\"step-head\"><span class=\"n\">{n}</span> <span class=\"kind\">{kind}</span> \
         <span class=\"status status-{status}\">{words}</span> · {when}{wait}</div>",
        id = esc(&a.id),
        status = esc(a.status.as_str()),
        kind = esc(&kind),
        words = status_words(a.status),
        when = card::when(a.created_at, now_ms),
        wait = if a.status == ActionStatus::Pending {
            format!(" · <a href=\"#action-{}\">decide it above</a>", seg(&a.id))
        } else {
            String::new()
        },
    );
    if !what.is_empty() {
        o.push_str(&card::code_block(&a.id, &what, field, "what"));
    }
    o.push_str(&output(a));
    if let Some(d) = a.diagnostic.as_deref() {
        let _ = write!(o, "<p class=\"diagnostic\">{}</p>", card::plain(d));
    }
    if let Some(list) = events.get(a.id.as_str()) {
        o.push_str("<p class=\"step-events\">events: ");
        let links: Vec<String> = list
            .iter()
            .take(STEP_EVENTS)
            .map(|e| {
                format!(
                    "<a href=\"#event-{id}\">#{id} {kind}</a>",
                    id = e.id,
                    kind = esc(&e.kind)
                )
            })
            .collect();
        o.push_str(&links.join(", "));
        if list.len() > STEP_EVENTS {
            let _ = write!(o, " and {} more", list.len() - STEP_EVENTS);
        }
        o.push_str("</p>");
    }
    o.push_str("</li>");
    o
}

/// What an executed step printed (clamped, "show all" for the rest) or
/// did, in one line.
fn output(a: &ActionRecord) -> String {
    let Some(r) = &a.result else {
        return String::new();
    };
    match r {
        ActionResult::Terminal {
            exit_code,
            timed_out,
            stdout,
            stderr,
            duration_ms,
            ..
        } => {
            let mut o = format!(
                "<p class=\"ran\">exit {exit_code}{} in {duration_ms} ms</p>",
                if *timed_out { " (timed out)" } else { "" }
            );
            if !stdout.is_empty() {
                o.push_str(&card::code_block(&a.id, stdout, "result.stdout", "stdout"));
            }
            if !stderr.is_empty() {
                o.push_str(&card::code_block(&a.id, stderr, "result.stderr", "stderr"));
            }
            o
        }
        ActionResult::FileWrite { path, bytes, .. } => {
            format!(
                "<p class=\"ran\">wrote {bytes} bytes to <code>{}</code></p>",
                esc(path)
            )
        }
        ActionResult::FileRead { path, bytes, .. } => {
            format!(
                "<p class=\"ran\">read {bytes} bytes of <code>{}</code></p>",
                esc(path)
            )
        }
        ActionResult::GitCommit { commit, branch, .. } => format!(
            "<p class=\"ran\">committed <code>{}</code> on {}</p>",
            esc(ids::short(commit)),
            esc(branch)
        ),
        ActionResult::GitPush { branch, commit } => format!(
            "<p class=\"ran\">pushed {} at <code>{}</code></p>",
            esc(branch),
            esc(ids::short(commit))
        ),
        ActionResult::PrOpen { number, base, .. } => {
            format!(
                "<p class=\"ran\">opened PR #{number} into {}</p>",
                esc(base)
            )
        }
        ActionResult::GitMerge { target, commit, .. } => format!(
            "<p class=\"ran\">merged into {} at <code>{}</code></p>",
            esc(target),
            esc(ids::short(commit))
        ),
        _ => String::new(),
    }
}

fn event_row(e: &Event, on_page: &HashSet<&str>) -> String {
    let status = e
        .payload
        .get("status")
        .and_then(|s| s.as_str())
        .unwrap_or("");
    let action = e
        .action
        .as_deref()
        .map(|a| match on_page.contains(a) {
            true => format!("<a href=\"#step-{}\">{}</a>", seg(a), esc(ids::short(a))),
            false => esc(ids::short(a)),
        })
        .unwrap_or_default();
    format!(
        "<tr class=\"event\" id=\"event-{id}\" data-event-id=\"{id}\"><td>{id}</td><td>{at}</td><td class=\"type\">{kind}</td>\
         <td>{actor}</td><td>{action}</td><td>{status}</td></tr>",
        id = e.id,
        at = esc(&ids::rfc3339(e.at)),
        kind = esc(&e.kind),
        actor = esc(&e.actor.to_string()),
        status = esc(status),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use berth_engine::{Actor, PipelineStep};

    use super::*;

    /// An executed `command` of agent dev-1, as the store would hold it.
    fn ran(id: &str, command: &str) -> ActionRecord {
        serde_json::from_value(serde_json::json!({
            "id": id, "idempotency_key": id, "agent": "dev-1", "project": "demo",
            "task": "t1", "action": {"type": "terminal", "command": command}, "params": {},
            "decision": {"verdict": "auto_approve", "stage": "allow_rule", "reason": "allowed",
                         "autonomy": {"mode": "require_approval", "origin": "wildcard"},
                         "segments": [], "findings": [], "lifted": []},
            "created_status": "auto_approved", "status": "executed", "hold_reason": null,
            "proposer": {"kind": "agent", "id": "dev-1"}, "decided_by": null,
            "decided_at": null, "executor": null, "result": null, "diagnostic": null,
            "created_at": 0, "updated_at": 0
        }))
        .unwrap()
    }

    fn event_of(id: i64, action: &str) -> Event {
        Event {
            id,
            at: 0,
            kind: "action.executed".into(),
            actor: Actor::agent("dev-1"),
            project: None,
            agent: None,
            task: None,
            action: Some(action.into()),
            payload: serde_json::json!({}),
        }
    }

    fn task(steps: Option<Vec<PipelineStep>>) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": "t1", "project": "demo", "title": "t", "status": "in_progress",
            "agent": "dev-1", "diagnosis": null, "execution_mode": null,
            "steps": steps, "write": false, "parent": null, "source": "user",
            "tags": [], "archived_at": null, "created_at": 0, "updated_at": 0
        }))
        .unwrap()
    }

    fn page(task: &Task, actions: &[ActionRecord], events: &[Event]) -> String {
        let extras = HashMap::new();
        render_task(&TaskView {
            prs: &[],
            task,
            actions,
            events,
            project_mode: berth_engine::ExecutionMode::Review,
            agent: None,
            now_ms: 0,
            extras: &extras,
        })
    }

    #[test]
    fn an_event_links_to_its_step_only_when_the_step_is_on_the_page() {
        // A pipeline step run twice shows its last run: the first run's
        // event names its action without a link to nowhere; an action the
        // steps were read without (it came after) has no link either.
        let steps: Vec<PipelineStep> =
            serde_json::from_value(serde_json::json!([{"command": "make test"}])).unwrap();
        let pipeline = task(Some(steps));
        let actions = [ran("aaaa1111", "make test"), ran("bbbb2222", "make test")];
        let events = [
            event_of(1, "aaaa1111"),
            event_of(2, "bbbb2222"),
            event_of(3, "cccc3333"),
        ];
        let html = page(&pipeline, &actions, &events);
        assert!(html.contains("id=\"step-bbbb2222\""), "{html}");
        assert!(html.contains("href=\"#step-bbbb2222\""), "{html}");
        for gone in ["aaaa1111", "cccc3333"] {
            assert!(!html.contains(&format!("id=\"step-{gone}\"")), "{html}");
            assert!(!html.contains(&format!("href=\"#step-{gone}\"")), "{html}");
            assert!(html.contains(&format!("<td>{gone}</td>")), "{html}");
        }
        // An agent task shows every action as a step: each is linked.
        let html = page(&task(None), &actions, &events[..2]);
        for id in ["aaaa1111", "bbbb2222"] {
            assert!(html.contains(&format!("href=\"#step-{id}\"")), "{html}");
        }
    }
}
