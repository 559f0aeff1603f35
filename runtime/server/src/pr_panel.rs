//! A task's PRs on its page (issue 19, "Where it shows"): each PR's checks
//! with their output tails, its conflicts, its unresolved threads, its
//! automation (the chips such as "Auto-fix 3/10" or "paused", the last
//! error, and a switch per automation with what it does said before the
//! click), and its diff against where it left its base.
//!
//! Rendered on the server like the rest of the page: every value through
//! [`esc`]; switches are buttons the page's script sends as `PUT
//! /api/prs/{id}/automation`, with the same headers as approve and deny.

use std::fmt::Write as _;

use berth_engine::pr_automation::PrAutomation;
use berth_engine::{CheckStatus, PrConversation, PrFeedback, PullRequest, WriteBase};

use crate::card::clip;
use crate::diff;
use crate::page::esc;

/// Characters of a check's output tail shown.
const TAIL_CHARS: usize = 1_500;
/// Lines of one file's diff shown.
const FILE_LINES: usize = 40;

/// One PR as its panel shows it.
pub struct PrView {
    pub pr: PullRequest,
    pub feedback: PrFeedback,
    pub conversation: PrConversation,
    pub automation: PrAutomation,
    pub changes: Vec<berth_engine::FileChange>,
}

/// The task's PRs, or nothing when it has none.
pub fn render_prs(prs: &[PrView]) -> String {
    if prs.is_empty() {
        return String::new();
    }
    let mut o = String::from("<section id=\"prs\"><h2>Pull requests</h2>");
    for v in prs {
        o.push_str(&render_pr(v));
    }
    o.push_str("</section>");
    o
}

fn render_pr(v: &PrView) -> String {
    let (pr, f, a) = (&v.pr, &v.feedback, &v.automation);
    let mut o = String::new();
    let _ = write!(
        o,
        "<article class=\"pr\" id=\"pr-{n}\" data-pr=\"{n}\" aria-labelledby=\"pr-{n}-title\">\
         <h3 id=\"pr-{n}-title\">PR #{n}: {title}</h3>\
         <p class=\"meta\"><code>{branch}</code> → <code>{base}</code> · <b class=\"pr-status\">{status}</b>{head}</p>",
        n = pr.number,
        title = esc(&pr.title),
        branch = esc(&pr.branch),
        base = esc(&pr.base),
        status = esc(pr.status.as_str()),
        head = f
            .head
            .as_deref()
            .map(|h| format!(" · head <code>{}</code>", esc(&h[..h.len().min(12)])))
            .unwrap_or_default(),
    );
    o.push_str(&automation(pr.number, a));
    o.push_str(&checks(f));
    if !f.conflicts.is_empty() {
        let _ = write!(
            o,
            "<h4>Conflicts with {}</h4><ul class=\"conflicts\">",
            esc(&f.base)
        );
        for p in &f.conflicts {
            let _ = write!(o, "<li><code>{}</code></li>", esc(p));
        }
        o.push_str("</ul>");
    }
    o.push_str(&threads(v));
    o.push_str(&changes(&v.changes));
    o.push_str("</article>");
    o
}

fn automation(n: i64, a: &PrAutomation) -> String {
    let mut o = format!(
        "<div class=\"automation\"><h4>Automation: <span class=\"auto-state\">{}</span></h4><p class=\"chips\">",
        esc(&a.state)
    );
    for c in &a.chips {
        let _ = write!(o, "<span class=\"chip\">{}</span> ", esc(c));
    }
    o.push_str("</p>");
    if let Some(e) = &a.last_error {
        let _ = write!(o, "<p class=\"auto-error\" role=\"status\">{}</p>", esc(e));
    }
    let s = &a.switches;
    let rows: [(&str, bool, &str, &str); 5] = [
        (
            "fix",
            s.fix,
            "Auto-fix",
            "new failed checks, review comments and conflicts become one prompt for the agent (at most 10 rounds)",
        ),
        (
            "merge",
            s.merge,
            "Auto-merge",
            "proposes the merge once the PR is ready; into a protected branch it waits here for your approval, never automatic",
        ),
        (
            "on_review_request",
            s.on_review_request,
            "Prompt on review request",
            "the agent is told once when a review is newly requested",
        ),
        (
            "on_merged",
            s.on_merged,
            "Prompt when merged",
            "the agent is told once when the PR is merged",
        ),
        (
            "on_closed",
            s.on_closed,
            "Prompt when closed",
            "the agent is told once when the PR is closed unmerged",
        ),
    ];
    let _ = write!(
        o,
        "<ul class=\"switches\" aria-label=\"Automation switches of PR #{n}\">"
    );
    for (key, on, name, says) in rows {
        let (verb, to) = if on { ("off", "false") } else { ("on", "true") };
        let _ = write!(
            o,
            "<li><span class=\"switch-now\">{name}: <b>{now}</b></span> \
             <button type=\"button\" data-verb=\"pr-auto\" data-pr=\"{n}\" data-switch=\"{key}\" data-on=\"{to}\">Turn {lower} {verb}</button> \
             <span class=\"says\">{says}</span></li>",
            now = if on { "on" } else { "off" },
            lower = name.to_lowercase(),
        );
    }
    o.push_str("</ul><p class=\"outcome\" aria-live=\"polite\"></p></div>");
    o
}

fn checks(f: &PrFeedback) -> String {
    if f.checks.is_empty() {
        return "<h4>Checks</h4><p class=\"empty\">No checks configured (<code>[[checks]]</code> in berth.toml).</p>".into();
    }
    let mut o = String::from("<h4>Checks</h4><ul class=\"checks\">");
    for c in &f.checks {
        let status = match c.status {
            CheckStatus::Queued => "queued",
            CheckStatus::InProgress => "running",
            CheckStatus::Success => "passed",
            CheckStatus::Failure => "failed",
        };
        let code = c
            .exit_code
            .map(|x| format!(" (exit {x})"))
            .unwrap_or_default();
        let _ = write!(
            o,
            "<li class=\"check {status}\"><b>{name}</b>: <span class=\"check-status\">{status}</span>{code}",
            name = esc(&c.name),
        );
        if !c.output_tail.is_empty() {
            let _ = write!(
                o,
                "<details><summary>output</summary><pre class=\"tail\">{}</pre></details>",
                esc(last_chars(&c.output_tail, TAIL_CHARS))
            );
        }
        o.push_str("</li>");
    }
    o.push_str("</ul>");
    o
}

fn threads(v: &PrView) -> String {
    let open: Vec<_> = v
        .conversation
        .threads
        .iter()
        .filter(|t| t.blocks())
        .collect();
    let mut o = format!(
        "<h4>Unresolved threads (<span class=\"thread-count\">{}</span>)</h4>",
        open.len()
    );
    if open.is_empty() {
        return o;
    }
    o.push_str("<ul class=\"threads\">");
    for t in open {
        let Some(last) = t.comments.last() else {
            continue;
        };
        let at = match (&last.path, last.line) {
            (Some(p), Some(l)) => format!(" on <code>{}:{l}</code>", esc(p)),
            (Some(p), None) => format!(" on <code>{}</code>", esc(p)),
            _ => String::new(),
        };
        let _ = write!(
            o,
            "<li class=\"thread\">{}{at}: {}</li>",
            esc(&last.author),
            esc(&clip(&last.body, 400))
        );
    }
    o.push_str("</ul>");
    o
}

fn changes(files: &[berth_engine::FileChange]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut o = format!(
        "<h4 class=\"changes-head\">Changes ({} file{})</h4>",
        files.len(),
        if files.len() == 1 { "" } else { "s" }
    );
    for c in files {
        let _ = write!(
            o,
            "<details class=\"pr-file\"><summary><code>{}</code></summary>",
            esc(&c.path)
        );
        match (&c.skipped, &c.new) {
            (Some(why), _) => {
                let _ = write!(o, "<p class=\"diff-head\">Not shown: {}</p>", esc(why));
            }
            (None, None) => o.push_str("<p class=\"diff-head\">Deleted.</p>"),
            (None, Some(new)) => {
                let base = match &c.old {
                    Some(t) => WriteBase::Text(t.clone()),
                    None => WriteBase::Absent,
                };
                o.push_str(&diff::render(&base, new, FILE_LINES, None));
            }
        }
        o.push_str("</details>");
    }
    o
}

/// The last `n` characters of `s`.
fn last_chars(s: &str, n: usize) -> &str {
    let start = s
        .char_indices()
        .rev()
        .nth(n.saturating_sub(1))
        .map_or(0, |(i, _)| i);
    &s[start..]
}

#[cfg(test)]
mod tests {
    use super::last_chars;

    #[test]
    fn the_last_characters_respect_character_boundaries() {
        assert_eq!(last_chars("abcdef", 3), "def");
        assert_eq!(last_chars("ab", 5), "ab");
        assert_eq!(last_chars("ééé", 2), "éé");
        assert_eq!(last_chars("", 2), "");
    }
}
