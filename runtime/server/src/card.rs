//! One pending action as a card a person decides on: bounded whatever the
//! agent sent, each reason said once in plain words, a risk level first.
//!
//! A card holds at most [`CLAMP_LINES`] lines / [`CLAMP_CHARS`] characters
//! of its command (or path, message, content): a 200k-character command is
//! shown once, clipped, behind a "show all" button whose script fetches the
//! whole from `/api/actions/{id}` and sets it as text. The segments table,
//! the reasons and every other value are capped too, so a page of
//! [`crate::page::PENDING_PAGE`] cards stays small. Control characters are
//! shown as their Unicode pictures by [`crate::page::esc`]: no raw NUL or
//! escape sequence reaches the page.

use std::fmt::Write as _;

use berth_engine::{ActionRecord, ActorKind, ids};
use berth_policy::{Action, Decision, Finding, Location, RuleMatch, Stage, Verdict};

use crate::page::{esc, task_link};
use crate::risk::{Assessment, Risk, assess};

/// Lines of code a card shows before "show all".
pub const CLAMP_LINES: usize = 6;
/// Characters of code a card shows before "show all".
pub const CLAMP_CHARS: usize = 480;
/// Characters of one reason, one argv, one path.
const SHORT_CHARS: usize = 240;
/// Segments and reasons listed on a card; the rest are counted.
const LISTED: usize = 8;

/// `s` cut to `max` characters, with an ellipsis when cut.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

/// What a card shows of long text: its first lines, bounded in characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clamped<'a> {
    pub shown: &'a str,
    /// Whether anything was left out.
    pub clipped: bool,
    pub lines: usize,
}

pub fn clamp(s: &str) -> Clamped<'_> {
    let lines = s.lines().count().max(1);
    let mut end = s.len();
    if let Some((i, _)) = s.match_indices('\n').nth(CLAMP_LINES - 1) {
        end = i;
    }
    if let Some((i, _)) = s[..end].char_indices().nth(CLAMP_CHARS) {
        end = i;
    }
    Clamped {
        shown: &s[..end],
        clipped: end < s.len(),
        lines,
    }
}

/// How an action is described: its type, the text that says what it does,
/// and which field of `GET /api/actions/{id}` holds that text whole (for
/// "show all").
pub fn describe(a: &ActionRecord) -> (String, String, &'static str) {
    let kind = a.action.kind().to_string();
    let (what, field) = match &a.action {
        Action::Terminal { command } => (command.clone(), "action.command"),
        Action::FileRead { path } | Action::FileWrite { path } => (path.clone(), "action.path"),
        Action::GitPush { branch } => (branch.clone(), "action.branch"),
        Action::GitMerge { target } => (
            format!(
                "into {target}{}",
                a.params
                    .pr
                    .as_deref()
                    .map(|p| format!(" (PR {})", ids::short(p)))
                    .unwrap_or_default()
            ),
            "",
        ),
        Action::GitCommit => (
            a.params.message.clone().unwrap_or_default(),
            "params.message",
        ),
        Action::PrOpen => (a.params.title.clone().unwrap_or_default(), "params.title"),
        Action::PrComment => (a.params.body.clone().unwrap_or_default(), "params.body"),
        Action::PrResolveThread => (a.params.thread.clone().unwrap_or_default(), "params.thread"),
        _ => (String::new(), ""),
    };
    (kind, what, field)
}

/// Long text as a clamped code block, with "show all" when clipped.
pub fn code_block(id: &str, text: &str, field: &str, class: &str) -> String {
    let c = clamp(text);
    let mut o = format!(
        "<pre class=\"code {class}\" data-field=\"{field}\">{}</pre>",
        esc(c.shown),
        field = esc(field),
        class = esc(class),
    );
    if c.clipped {
        let _ = write!(
            o,
            "<button type=\"button\" class=\"show-all\" data-show=\"{field}\" data-action-id=\"{id}\">\
             Show all ({lines} line{s}, {bytes} bytes)</button>",
            field = esc(field),
            id = esc(id),
            lines = c.lines,
            s = if c.lines == 1 { "" } else { "s" },
            bytes = text.len(),
        );
    }
    o
}

/// A time as "5 min ago", with the exact time on hover.
pub fn when(at_ms: i64, now_ms: i64) -> String {
    let exact = ids::rfc3339(at_ms);
    format!(
        "<time datetime=\"{exact}\" title=\"{exact}\" data-at=\"{at_ms}\">{}</time>",
        esc(&relative(at_ms, now_ms)),
        exact = esc(&exact),
    )
}

/// How long ago, in words.
pub fn relative(at_ms: i64, now_ms: i64) -> String {
    let secs = (now_ms - at_ms).max(0) / 1000;
    match secs {
        0..=44 => "just now".into(),
        45..=89 => "1 min ago".into(),
        90..=3_599 => format!("{} min ago", (secs + 30) / 60),
        3_600..=86_399 => format!("{} h ago", secs / 3_600),
        _ => match secs / 86_400 {
            1 => "yesterday".into(),
            d => format!("{d} days ago"),
        },
    }
}

/// What a stage means, in words a person uses.
pub fn stage_words(stage: Stage) -> &'static str {
    match stage {
        Stage::DenyRule => "a rule denies it",
        Stage::DenyTemplate => "it meets a deny template",
        Stage::AutonomyDeny => "the agent may not do this",
        Stage::Privileged => "it has an effect outside the sandbox",
        Stage::NeverAuto => "this kind of action always asks",
        Stage::Scope => "it reaches outside the project",
        Stage::Opaque => "berth cannot tell what it does",
        Stage::AskRule => "a rule says to ask",
        Stage::PartialAllow => "a rule allows only part of it",
        Stage::AllowRule => "a rule allows it",
        Stage::Autonomy => "the agent's autonomy asks for this kind of action",
    }
}

/// A reason as a person reads it: escaped, clipped, `code` in backticks
/// shown as code, the engine's "required in every mode" left to the tag.
pub fn plain(reason: &str) -> String {
    let reason = reason
        .trim_end_matches(" — approval is required in every mode")
        .trim_end_matches(": never auto-approved");
    let clipped = clip(reason, SHORT_CHARS);
    let mut o = String::new();
    for (i, part) in clipped.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(o, "<code>{}</code>", esc(part));
        } else {
            o.push_str(&esc(part));
        }
    }
    o
}

/// Whether auto mode lifts a finding (the path scope and the partial
/// allow: [`berth_policy::explain::auto_mode_split`]).
fn liftable(f: &Finding) -> bool {
    matches!(f.stage, Stage::Scope | Stage::PartialAllow)
}

fn risk_badge(r: &Assessment) -> String {
    let (icon, word) = match r.risk {
        Risk::High => ("▲", "High risk"),
        Risk::Medium => ("◆", "Medium risk"),
        Risk::Low => ("●", "Low risk"),
    };
    format!(
        "<span class=\"risk risk-{level}\"><span class=\"icon\" aria-hidden=\"true\">{icon}</span> {word}</span>\
         <span class=\"because\">{because}</span>",
        level = r.risk.as_str(),
        because = plain(&r.because),
    )
}

/// The risk of a record, for sorting and the badge.
pub fn risk_of(a: &ActionRecord) -> Assessment {
    assess(&a.action, &a.decision)
}

/// One pending action. `now_ms`: for the relative time; `extra`: markup
/// (already escaped) shown under the code — a file write's diff.
pub fn action_card(a: &ActionRecord, now_ms: i64, extra: &str) -> String {
    let d = &a.decision;
    let (kind, what, field) = describe(a);
    let risk = risk_of(a);
    let mut o = String::new();
    let _ = write!(
        o,
        "<article class=\"action risk-{level}\" id=\"action-{id}\" data-action-id=\"{id}\" data-state=\"pending\" \
         data-risk=\"{level}\" tabindex=\"-1\" aria-labelledby=\"title-{id}\">\
         <div class=\"card-head\"><h2 class=\"card-title\" id=\"title-{id}\"><span class=\"kind\">{kind}</span></h2>{badge}</div>",
        id = esc(&a.id),
        level = risk.risk.as_str(),
        kind = esc(&kind),
        badge = risk_badge(&risk),
    );
    o.push_str(&meta_line(a, now_ms));
    if let Some(said) = a.params.description.as_deref() {
        let _ = write!(
            o,
            "<p class=\"intent\"><span class=\"label\">Intent</span> {}</p>",
            plain(&clip(said, CLAMP_CHARS))
        );
    }
    if !what.is_empty() {
        o.push_str(&code_block(&a.id, &what, field, "what"));
    }
    o.push_str(extra);
    let _ = write!(
        o,
        "<div class=\"decide\"><button type=\"button\" class=\"approve\" data-verb=\"approve\" data-action-id=\"{id}\" \
         data-privileged=\"{privileged}\">Approve</button>{always}\
         <button type=\"button\" class=\"deny\" data-verb=\"deny\" data-action-id=\"{id}\">Deny</button>\
         <input class=\"reason\" type=\"text\" placeholder=\"reason (optional)\" aria-label=\"reason for denying\"></div>\
         <p class=\"outcome\" aria-live=\"polite\"></p>",
        id = esc(&a.id),
        // A connection: "always" adds its host to the project's allow list
        // (a `WebFetch(domain:…)` rule, shown in the network section).
        always = match &a.action {
            Action::NetworkConnect { host, .. } => format!(
                "<button type=\"button\" class=\"approve always\" data-verb=\"approve\" \
                 data-always=\"true\" data-action-id=\"{id}\">Always allow {host}</button>",
                id = esc(&a.id),
                host = esc(host),
            ),
            _ => String::new(),
        },
        privileged = has_stage(d, Stage::Privileged)
            || matches!(
                a.action,
                Action::GitPush { .. } | Action::PrOpen | Action::GitMerge { .. }
            ),
    );
    o.push_str(&reasons(a, d));
    if let Some(h) = &a.hold_reason {
        let _ = write!(o, "<p class=\"held\">Held on the host: {}</p>", plain(h));
    }
    if let Some(r) = &a.resolved_path {
        // Where the path leads on this host now (its links followed within
        // the worktree); checked again when approved.
        let _ = write!(
            o,
            "<p class=\"resolved\">Acts on, on this host: <code>{}</code></p>",
            esc(&clip(r, SHORT_CHARS))
        );
    }
    o.push_str(&segments(d));
    o.push_str("</article>");
    o
}

fn has_stage(d: &Decision, stage: Stage) -> bool {
    d.stage == stage || d.findings.iter().any(|f| f.stage == stage)
}

/// The agent (named once), its project and task, when, and who asked when
/// it was not the agent.
fn meta_line(a: &ActionRecord, now_ms: i64) -> String {
    let by_agent = a.proposer.kind == ActorKind::Agent && a.proposer.id == a.agent;
    format!(
        "<p class=\"meta\"><b class=\"agent\">{agent}</b> in {project}{task}{by} · {when} · <span class=\"id\">{short}</span></p>",
        agent = esc(&a.agent),
        project = esc(&a.project),
        task = a
            .task
            .as_deref()
            .map(|t| format!(" · {}", task_link(t)))
            .unwrap_or_default(),
        by = if by_agent {
            String::new()
        } else {
            format!(" · asked by {}", esc(&a.proposer.to_string()))
        },
        when = when(a.created_at, now_ms),
        short = esc(ids::short(&a.id)),
    )
}

/// Why it waits: each limit once, in plain words, with whether auto mode
/// lifts it — ADR 0167 D5, said before the click.
fn reasons(a: &ActionRecord, d: &Decision) -> String {
    let mut seen: Vec<(Stage, &str)> = Vec::new();
    let all: Vec<&Finding> = d
        .findings
        .iter()
        .chain(d.lifted.iter())
        .filter(|f| !matches!(f.stage, Stage::AllowRule))
        .filter(|f| {
            let key = (f.stage, f.reason.as_str());
            let new = !seen.contains(&key);
            if new {
                seen.push(key);
            }
            new
        })
        .collect();
    let on = d.autonomy.is_auto_mode();
    let mut o = String::from(
        "<div class=\"why\"><h3 class=\"why-title\">Why it asks</h3><ul class=\"reasons\">",
    );
    if all.is_empty() {
        let _ = write!(
            o,
            "<li><span class=\"tag\">{}</span> {}</li>",
            esc(d.stage.as_str()),
            plain(&d.reason)
        );
    }
    for f in all.iter().take(LISTED) {
        let (class, mode) = if liftable(f) {
            (
                "lifts",
                if on {
                    "auto mode lifted this"
                } else {
                    "auto mode would lift this"
                },
            )
        } else if f.verdict == Verdict::Deny {
            ("still-asks", "denied in every mode")
        } else {
            ("still-asks", "asks in every mode")
        };
        let _ = write!(
            o,
            "<li class=\"{class}\"><span class=\"tag\" title=\"{words}\">{stage}</span> {reason} \
             <span class=\"mode\">— {mode}</span></li>",
            stage = esc(f.stage.as_str()),
            words = esc(stage_words(f.stage)),
            reason = plain(&f.reason),
        );
    }
    if all.len() > LISTED {
        let _ = write!(
            o,
            "<li class=\"more\">and {} more (GET /api/actions/{} lists them)</li>",
            all.len() - LISTED,
            esc(&a.id)
        );
    }
    o.push_str("</ul>");
    let lifts = all.iter().filter(|f| liftable(f)).count();
    let holds = all.len() - lifts;
    let _ = write!(
        o,
        "<p class=\"automode\">Auto mode is <b>{state}</b> for this agent. {says}</p></div>",
        state = if on { "on" } else { "off" },
        says = match (lifts, holds) {
            (0, 0) => "It changes nothing here.".to_string(),
            (0, _) => "It would not change this: it still asks.".to_string(),
            (_, 0) if on => "It lifted every reason here.".to_string(),
            (_, 0) => "Turning it on would let this run without asking.".to_string(),
            (l, h) => format!(
                "It lifts {l} of these; {h} still ask{}.",
                if h == 1 { "s" } else { "" }
            ),
        },
    );
    o
}

fn rule_text(m: &RuleMatch) -> String {
    match m {
        RuleMatch::None => "no rule".into(),
        RuleMatch::NotACommand => "not a command (no rule applies)".into(),
        RuleMatch::Allow { rule } | RuleMatch::Ask { rule } | RuleMatch::Deny { rule } => {
            rule.to_string()
        }
    }
}

/// How berth read the command, segment by segment (folded: the detail a
/// policy author wants, not the first thing a reviewer reads).
fn segments(d: &Decision) -> String {
    if d.segments.is_empty() {
        return d
            .omitted
            .as_deref()
            .map(|m| format!("<p class=\"omitted\">{}</p>", plain(m)))
            .unwrap_or_default();
    }
    let mut o = format!(
        "<details class=\"segments\"><summary>How berth read it ({} segment{})</summary>\
         <table class=\"segments\"><thead><tr><th scope=\"col\">#</th><th scope=\"col\">runs</th>\
         <th scope=\"col\">rule</th><th scope=\"col\">notes</th></tr></thead><tbody>",
        d.segments.len(),
        if d.segments.len() == 1 { "" } else { "s" },
    );
    for (i, s) in d.segments.iter().enumerate().take(LISTED) {
        o.push_str(&segment_row(i, s));
    }
    o.push_str("</tbody></table>");
    if d.segments.len() > LISTED {
        let _ = write!(
            o,
            "<p class=\"more\">and {} more segments</p>",
            d.segments.len() - LISTED
        );
    }
    o.push_str("</details>");
    o
}

fn segment_row(i: usize, s: &berth_policy::SegmentReport) -> String {
    let mut notes: Vec<String> = Vec::new();
    let outside: Vec<String> = s
        .paths
        .iter()
        .filter(|p| !p.location.in_scope())
        .take(LISTED)
        .map(|p| {
            let at = p.resolved.as_deref().unwrap_or("?");
            let whereto = if p.location == Location::Unknown {
                "not provable"
            } else {
                "outside the scope"
            };
            format!(
                "<span class=\"outside\"><code>{}</code> → <code>{}</code> ({whereto})</span>",
                esc(&clip(&p.written, SHORT_CHARS)),
                esc(&clip(at, SHORT_CHARS))
            )
        })
        .collect();
    if !outside.is_empty() {
        notes.push(format!("paths: {}", outside.join(", ")));
    }
    if let Some(op) = &s.opaque {
        notes.push(format!(
            "<span class=\"opaque\">opaque: {}</span>",
            plain(op)
        ));
    }
    if let Some(p) = &s.privileged {
        notes.push(format!(
            "<span class=\"privileged\">external effect: {}</span>",
            plain(p)
        ));
    }
    if let Some(t) = &s.template {
        notes.push(format!(
            "<span class=\"template\">deny template: {}</span>",
            plain(t)
        ));
    }
    let argv = if s.argv.is_empty() {
        "(no program)".to_string()
    } else {
        s.argv.join(" ")
    };
    let via = if s.wrappers.is_empty() {
        String::new()
    } else {
        format!(
            " <small class=\"wrappers\">via {}</small>",
            esc(&clip(&s.wrappers.join(" → "), SHORT_CHARS))
        )
    };
    format!(
        "<tr class=\"segment\"><td>{n}</td><td><code class=\"argv\">{argv}</code>{via}</td>\
         <td class=\"rule\">{rule}</td><td class=\"notes\">{notes}</td></tr>",
        n = i + 1,
        argv = esc(&clip(&argv, SHORT_CHARS)),
        rule = esc(&clip(&rule_text(&s.matched), SHORT_CHARS)),
        notes = notes.join("<br>"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_keeps_a_few_lines_and_characters() {
        let long = "x".repeat(200_000);
        let c = clamp(&long);
        assert_eq!((c.shown.len(), c.clipped, c.lines), (CLAMP_CHARS, true, 1));
        let many = (0..20)
            .map(|i| format!("line {i}"))
            .collect::<Vec<_>>()
            .join("\n");
        let c = clamp(&many);
        assert_eq!(c.shown.lines().count(), CLAMP_LINES);
        assert!(c.clipped && c.lines == 20);
        let short = clamp("npm test");
        assert_eq!((short.shown, short.clipped), ("npm test", false));
        // A character boundary, not a byte one.
        let wide = "é".repeat(1_000);
        assert_eq!(clamp(&wide).shown.chars().count(), CLAMP_CHARS);
    }

    #[test]
    fn times_read_as_words() {
        let cases = [
            (0, "just now"),
            (60, "1 min ago"),
            (300, "5 min ago"),
            (7_200, "2 h ago"),
            (86_400, "yesterday"),
            (3 * 86_400, "3 days ago"),
        ];
        for (ago, want) in cases {
            assert_eq!(relative(0, ago * 1000), want);
        }
        assert!(when(0, 1000).contains("title=\"1970-01-01T00:00:00.000Z\""));
    }

    #[test]
    fn reasons_show_backticks_as_code_and_escape() {
        assert_eq!(
            plain("`git push`: pushes to a remote — approval is required in every mode"),
            "<code>git push</code>: pushes to a remote"
        );
        assert_eq!(plain("`<b>` & x"), "<code>&lt;b&gt;</code> &amp; x");
    }
}
