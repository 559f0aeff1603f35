//! A file write shown as what it changes: a line diff of the current file
//! (read through the berth's confined file read, [`berth_engine::WriteBase`])
//! against the proposed content, as hunks with three lines of context.
//!
//! Myers' O((N+M)·D) algorithm on the lines left once the common head and
//! tail are cut, with D capped ([`MAX_EDITS`]): a rewrite beyond the cap is
//! shown as the old lines removed and the new added. A card shows the first
//! [`CARD_LINES`] lines of the diff; "show all" fetches the whole from
//! `/api/pages/actions/{id}/diff`, capped at [`FULL_LINES`].

use std::fmt::Write as _;

use berth_engine::WriteBase;

use crate::page::esc;

/// Edits Myers' search tries before it gives up on a minimal diff.
pub const MAX_EDITS: usize = 1_000;
/// Lines of a diff a card shows.
pub const CARD_LINES: usize = 12;
/// Lines of a diff the "show all" fragment shows (at 400 characters a
/// line, 2 MB at most).
pub const FULL_LINES: usize = 5_000;
/// Characters of one diff line shown.
const LINE_CHARS: usize = 400;
/// Lines of context around a change.
const CONTEXT: usize = 3;

/// One line of a diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// The lines that turn `old` into `new`, shortest edit first.
pub fn diff_lines<'a>(old: &'a str, new: &'a str) -> Vec<Line<'a>> {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (am, bm) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    let mut out: Vec<Line<'a>> = a[..head].iter().map(|l| Line::Same(l)).collect();
    match myers(am, bm) {
        Some(mid) => out.extend(mid),
        None => {
            out.extend(am.iter().map(|l| Line::Del(l)));
            out.extend(bm.iter().map(|l| Line::Add(l)));
        }
    }
    out.extend(a[a.len() - tail..].iter().map(|l| Line::Same(l)));
    out
}

/// Myers' greedy search with its trace for the way back; `None` past
/// [`MAX_EDITS`].
fn myers<'a>(a: &[&'a str], b: &[&'a str]) -> Option<Vec<Line<'a>>> {
    let (n, m) = (a.len() as isize, b.len() as isize);
    let limit = MAX_EDITS.min(a.len() + b.len()) as isize;
    let off = limit + 1;
    let at = |k: isize| (k + off) as usize;
    let mut v = vec![0isize; (2 * off + 1) as usize];
    let mut trace: Vec<Vec<isize>> = Vec::new();
    for d in 0..=limit {
        trace.push(v.clone());
        let mut k = -d;
        while k <= d {
            let mut x = if k == -d || (k != d && v[at(k - 1)] < v[at(k + 1)]) {
                v[at(k + 1)]
            } else {
                v[at(k - 1)] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[at(k)] = x;
            if x >= n && y >= m {
                return Some(back(a, b, &trace, d, at));
            }
            k += 2;
        }
    }
    None
}

fn back<'a>(
    a: &[&'a str],
    b: &[&'a str],
    trace: &[Vec<isize>],
    depth: isize,
    at: impl Fn(isize) -> usize,
) -> Vec<Line<'a>> {
    let (mut x, mut y) = (a.len() as isize, b.len() as isize);
    let mut out = Vec::new();
    for d in (0..=depth).rev() {
        let v = &trace[d as usize];
        let k = x - y;
        let prev_k = if k == -d || (k != d && v[at(k - 1)] < v[at(k + 1)]) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = if d == 0 { 0 } else { v[at(prev_k)] };
        let prev_y = if d == 0 { 0 } else { prev_x - prev_k };
        while x > prev_x && y > prev_y {
            out.push(Line::Same(a[(x - 1) as usize]));
            x -= 1;
            y -= 1;
        }
        if d > 0 {
            if x == prev_x {
                out.push(Line::Add(b[(y - 1) as usize]));
            } else {
                out.push(Line::Del(a[(x - 1) as usize]));
            }
        }
        x = prev_x;
        y = prev_y;
    }
    out.reverse();
    out
}

/// A diff as hunks: the changed lines with [`CONTEXT`] lines around them,
/// `⋯` between hunks; at most `max` lines. Returns the markup, the lines
/// it has in all, and the lines added and removed.
fn render_lines(lines: &[Line<'_>], max: usize) -> (String, usize, usize, usize) {
    // Each changed line keeps CONTEXT lines either side: one pass, so a
    // 100,000-line new file costs 100,000 steps, not their square.
    let mut keep = vec![false; lines.len()];
    for (i, l) in lines.iter().enumerate() {
        if !matches!(l, Line::Same(_)) {
            let from = i.saturating_sub(CONTEXT);
            let to = (i + CONTEXT).min(lines.len() - 1);
            keep[from..=to].iter_mut().for_each(|k| *k = true);
        }
    }
    let (adds, dels) = lines.iter().fold((0, 0), |(a, d), l| match l {
        Line::Add(_) => (a + 1, d),
        Line::Del(_) => (a, d + 1),
        Line::Same(_) => (a, d),
    });
    let mut o = String::new();
    let mut shown = 0;
    let mut total = 0;
    let mut gap = false;
    for (i, l) in lines.iter().enumerate() {
        if !keep[i] {
            gap = true;
            continue;
        }
        if gap && total > 0 {
            total += 1;
            if shown < max {
                o.push_str("<span class=\"gap\">⋯</span>");
                shown += 1;
            }
        }
        gap = false;
        total += 1;
        if shown >= max {
            continue;
        }
        shown += 1;
        let (class, mark, text) = match l {
            Line::Same(t) => ("same", ' ', t),
            Line::Del(t) => ("del", '−', t),
            Line::Add(t) => ("add", '+', t),
        };
        // One block a line (the style sheet's): no newline between them,
        // or a copy would double every line.
        let _ = write!(
            o,
            "<span class=\"{class}\">{mark} {}</span>",
            esc(&crate::card::clip(text, LINE_CHARS))
        );
    }
    (o, total, adds, dels)
}

/// A file write's diff block: a headline (new file, lines added and
/// removed, or why there is no diff) and the first `max` lines; with
/// `show_all_for`, a "show all" button for that action when lines were
/// left out.
pub fn render(base: &WriteBase, content: &str, max: usize, show_all_for: Option<&str>) -> String {
    let old = match base {
        WriteBase::Absent => "",
        WriteBase::Text(t) => t.as_str(),
        WriteBase::Binary(bytes) => {
            return format!(
                "<div class=\"diff-block\"><p class=\"diff-head\">Replaces a file that is not text ({bytes} bytes) with {} bytes.</p></div>",
                content.len()
            );
        }
        WriteBase::Unreadable(why) => {
            return format!(
                "<div class=\"diff-block\"><p class=\"diff-head\">No diff: {}</p></div>",
                esc(&crate::card::clip(why, LINE_CHARS))
            );
        }
    };
    let lines = diff_lines(old, content);
    let (body, total, adds, dels) = render_lines(&lines, max);
    let head = match base {
        WriteBase::Absent => format!("New file, {adds} line{}", if adds == 1 { "" } else { "s" }),
        _ if adds + dels == 0 => "No change: the file already holds this content".into(),
        _ => format!(
            "Changes the file: <span class=\"add\">+{adds}</span> <span class=\"del\">−{dels}</span> lines"
        ),
    };
    let mut o = format!(
        "<div class=\"diff-block\"><p class=\"diff-head\">{head}</p><pre class=\"diff\">{body}</pre>"
    );
    match show_all_for {
        Some(id) if total > max => {
            let _ = write!(
                o,
                "<button type=\"button\" class=\"show-all\" data-show=\"diff\" data-action-id=\"{}\">Show all ({total} lines)</button>",
                esc(id)
            );
        }
        None if total > max => {
            let _ = write!(
                o,
                "<p class=\"more\">The first {max} of {total} lines: <code>params.content</code> of the action holds the whole.</p>"
            );
        }
        _ => {}
    }
    o.push_str("</div>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signs(old: &str, new: &str) -> String {
        diff_lines(old, new)
            .iter()
            .map(|l| match l {
                Line::Same(t) => format!(" {t}"),
                Line::Del(t) => format!("-{t}"),
                Line::Add(t) => format!("+{t}"),
            })
            .collect::<Vec<_>>()
            .join(",")
    }

    #[test]
    fn minimal_line_diffs() {
        let cases = [
            ("a\nb\nc", "a\nb\nc", " a, b, c"),
            ("a\nb\nc", "a\nx\nc", " a,-b,+x, c"),
            ("", "a\nb", "+a,+b"),
            ("a\nb", "", "-a,-b"),
            ("a\nb\nc\nd", "b\nc\nd\ne", "-a, b, c, d,+e"),
            ("x\na\ny", "a", "-x, a,-y"),
        ];
        for (old, new, want) in cases {
            assert_eq!(signs(old, new), want, "{old:?} → {new:?}");
        }
    }

    #[test]
    fn a_rewrite_past_the_cap_is_all_removed_then_all_added() {
        let old: String = (0..1_500).map(|i| format!("o{i}\n")).collect();
        let new: String = (0..1_500).map(|i| format!("n{i}\n")).collect();
        let lines = diff_lines(&old, &new);
        assert_eq!(lines.len(), 3_000);
        assert!(matches!(lines[0], Line::Del("o0")));
        assert!(matches!(lines[1_500], Line::Add("n0")));
    }

    #[test]
    fn a_huge_new_file_renders_in_one_pass_and_is_cut() {
        let big: String = (0..200_000).map(|i| format!("{i}\n")).collect();
        let t = std::time::Instant::now();
        let html = render(&WriteBase::Absent, &big, FULL_LINES, None);
        assert!(
            t.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            t.elapsed()
        );
        assert!(html.contains("New file, 200000 lines"));
        assert!(html.contains("The first 5000 of 200000 lines"));
        assert!(html.len() < 400 * 1024, "{}", html.len());
    }

    #[test]
    fn hunks_keep_context_and_bound_the_card() {
        let old: String = (0..100).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l50\n", "changed\n");
        let base = WriteBase::Text(old);
        let html = render(&base, &new, CARD_LINES, Some("id1"));
        assert!(html.contains("+1</span> <span class=\"del\">−1"), "{html}");
        assert!(html.contains("l47") && html.contains("l53") && !html.contains("l46"));
        assert!(!html.contains("show-all"), "8 lines fit: {html}");
        let new_file: String = (0..100).map(|i| format!("<n{i}>\n")).collect();
        let html = render(&WriteBase::Absent, &new_file, CARD_LINES, Some("id1"));
        assert!(html.contains("New file, 100 lines") && html.contains("&lt;n0&gt;"));
        assert!(html.contains("Show all (100 lines)") && !html.contains("n12"));
    }
}
