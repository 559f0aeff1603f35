//! A segment as people read it (wrappers and program), for the reasons
//! that quote it — made only when a reason does: most segments of most
//! commands raise nothing, and an allowed one's reason is written in one
//! buffer with it.

use std::cell::OnceCell;
use std::fmt;

use crate::arg;
use crate::segment::{SegKind, Segment};

/// Most characters of a segment a reason quotes.
const MAX: usize = 120;

/// Bytes rendered before the cut: more than the bytes of `MAX + 1` chars
/// of four bytes, so that a text cut there is cut at the same char.
const LIMIT: usize = 4 * (MAX + 2);

/// One segment's text for reasons, made on first use.
pub(super) struct Shown<'s> {
    seg: &'s Segment,
    text: OnceCell<String>,
}

impl<'s> Shown<'s> {
    pub(super) fn new(seg: &'s Segment) -> Shown<'s> {
        Shown {
            seg,
            text: OnceCell::new(),
        }
    }

    pub(super) fn as_str(&self) -> &str {
        self.text.get_or_init(|| display(self.seg))
    }

    /// Appends the text to `out`, without keeping a copy when none was made.
    pub(super) fn push_onto(&self, out: &mut String) {
        match self.text.get() {
            Some(t) => out.push_str(t),
            None => display_into(out, self.seg),
        }
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A segment as people read it: wrappers and program.
pub(super) fn display(seg: &Segment) -> String {
    let mut s = String::with_capacity(32);
    display_into(&mut s, seg);
    s
}

/// [`display`] appended to `out`.
fn display_into(out: &mut String, seg: &Segment) {
    let start = out.len();
    for inv in seg
        .chain
        .iter()
        .map(Vec::as_slice)
        .chain(Some(seg.argv.as_slice()).filter(|a| !a.is_empty()))
    {
        // Past `LIMIT` the text is cut below: not rendered further.
        if out.len() >= start + LIMIT {
            break;
        }
        if out.len() > start {
            out.push(' ');
        }
        arg::render_within(out, inv, start + LIMIT);
    }
    if out.len() == start {
        out.push_str(match seg.kind {
            SegKind::NotACommand => "(assignment or redirection)",
            _ => "(unparsed)",
        });
        return;
    }
    // Bytes bound chars: most segments are short, and counted no further.
    if out.len() - start > MAX
        && let Some((cut, _)) = out[start..].char_indices().nth(MAX)
    {
        out.truncate(start + cut);
        out.push('…');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text as it was made before rendering stopped at `LIMIT`: all of
    /// it, then cut.
    fn cut_after_rendering_all(seg: &Segment) -> String {
        let parts: Vec<String> = seg
            .chain
            .iter()
            .map(|inv| arg::render(inv))
            .chain(Some(arg::render(&seg.argv)).filter(|_| !seg.argv.is_empty()))
            .collect();
        let all = parts.join(" ");
        match all.char_indices().nth(MAX) {
            Some((cut, _)) if all.len() > MAX => format!("{}…", &all[..cut]),
            _ => all,
        }
    }

    #[test]
    fn long_segments_are_cut_where_they_were() {
        for line in [
            "echo short",
            &format!("sudo env X=1 echo {}", "ü".repeat(300)),
            &format!(
                "echo '{}' \"$(date)\" {}",
                "it's ".repeat(80),
                "日本".repeat(90)
            ),
            &format!("cat <<E\n{}\nE", "x".repeat(5000)),
            &format!("printf %s {}", "a".repeat(119)),
            &format!("nohup timeout 5 echo {}", "é'".repeat(61)),
        ] {
            let analysis = crate::segment::analyze(line.as_bytes(), "/work", "/home/agent");
            for seg in &analysis.segments {
                if seg.argv.is_empty() && seg.chain.is_empty() {
                    continue;
                }
                assert_eq!(display(seg), cut_after_rendering_all(seg), "{line}");
            }
        }
    }
}
