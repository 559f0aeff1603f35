//! What the store keeps of a decision: all of it when it is small, and
//! otherwise the verdict, stage and reason with as much of the evidence as
//! fits `MAX_STORED_DECISION_BYTES`. A decision is stored with its action
//! and again in the `proposed_action.created` event, listed by the API and
//! drawn by the approvals page; one hostile command once made it 30 MB.
//! The policy already bounds the segments it reports (`MAX_SEGMENTS`); this
//! bounds the bytes, whatever each segment holds.

use berth_policy::{Decision, Finding, SegmentReport};
use serde::Serialize;

/// The most bytes (as JSON) a stored decision takes.
pub const MAX_STORED_DECISION_BYTES: usize = 64 * 1024;

/// Words of a segment's argv, paths of a segment, and characters of any
/// one text kept when a decision is trimmed.
const KEEP_WORDS: usize = 32;
const KEEP_PATHS: usize = 16;
const KEEP_CHARS: usize = 512;

/// `d`, or a trimmed copy of it whose JSON fits the bound. The verdict and
/// stage are never changed; `omitted` says what was left out.
pub fn for_store(d: Decision) -> Decision {
    let whole = json_len(&d);
    if whole <= MAX_STORED_DECISION_BYTES {
        return d;
    }
    let Decision {
        verdict,
        stage,
        reason,
        autonomy,
        segments,
        findings,
        lifted,
        omitted,
    } = d;
    let mut out = Decision {
        verdict,
        stage,
        reason: clip(&reason, 4 * KEEP_CHARS),
        autonomy,
        segments: Vec::new(),
        findings: Vec::new(),
        lifted: Vec::new(),
        omitted: None,
    };
    // Room for the head, the note below, and the JSON around the lists.
    let mut room = MAX_STORED_DECISION_BYTES
        .saturating_sub(json_len(&out))
        .saturating_sub(2 * KEEP_CHARS);
    // The findings first (what holds the action back), then the segments
    // they point into, then the lifted limits.
    let (findings_n, lifted_n, segments_n) = (findings.len(), lifted.len(), segments.len());
    out.findings = take_fitting(findings.into_iter().map(clip_finding), &mut room);
    out.segments = take_fitting(segments.into_iter().map(clip_segment), &mut room);
    out.lifted = take_fitting(lifted.into_iter().map(clip_finding), &mut room);
    let note = format!(
        "stored in part (the whole decision was {whole} bytes, the store keeps {MAX_STORED_DECISION_BYTES}): \
         {} of {findings_n} findings, {} of {segments_n} segments (each to {KEEP_WORDS} words and {KEEP_PATHS} paths), \
         {} of {lifted_n} lifted limits",
        out.findings.len(),
        out.segments.len(),
        out.lifted.len(),
    );
    out.omitted = Some(match omitted {
        Some(first) => clip(&format!("{first}; {note}"), 2 * KEEP_CHARS),
        None => note,
    });
    out
}

fn json_len<T: Serialize>(v: &T) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX, |b| b.len())
}

/// The leading items that fit in `room` (each with its comma).
fn take_fitting<T: Serialize>(items: impl Iterator<Item = T>, room: &mut usize) -> Vec<T> {
    let mut kept = Vec::new();
    for item in items {
        let n = json_len(&item).saturating_add(1);
        if n > *room {
            break;
        }
        *room -= n;
        kept.push(item);
    }
    kept
}

fn clip_finding(mut f: Finding) -> Finding {
    f.reason = clip(&f.reason, KEEP_CHARS);
    f
}

fn clip_segment(mut s: SegmentReport) -> SegmentReport {
    s.argv.truncate(KEEP_WORDS);
    for w in s.argv.iter_mut().chain(s.wrappers.iter_mut()) {
        *w = clip(w, KEEP_CHARS);
    }
    s.wrappers.truncate(KEEP_WORDS);
    s.paths.truncate(KEEP_PATHS);
    for p in &mut s.paths {
        p.written = clip(&p.written, KEEP_CHARS);
        p.resolved = p.resolved.as_deref().map(|r| clip(r, KEEP_CHARS));
    }
    s.opaque = s.opaque.as_deref().map(|o| clip(o, KEEP_CHARS));
    s
}

/// At most `max` characters, with `…` when cut.
fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use berth_policy::{
        Action, Autonomy, Context, Frame, Limits, RuleSet, Verdict, decide::MAX_SEGMENTS,
    };

    use super::*;

    fn decide(command: &str) -> Decision {
        let rules = RuleSet::from_lists(&["cat".to_string()], &[], &[]).unwrap();
        let frame = Frame::container("/work");
        let autonomy = Autonomy::auto();
        let limits = Limits::default();
        berth_policy::decide(
            &Action::Terminal {
                command: command.to_string(),
            },
            &Context {
                frame: &frame,
                cwd: "/work",
                autonomy: &autonomy,
                rules: &rules,
                protected_branches: &[],
                limits: &limits,
            },
        )
    }

    #[test]
    fn a_small_decision_is_kept_whole() {
        let d = decide("cat a; cat b");
        assert_eq!(for_store(d.clone()), d);
    }

    #[test]
    fn a_large_decision_is_trimmed_to_the_bound_with_its_verdict() {
        // Long words in every segment, up to the policy's segment bound.
        let long = "x".repeat(2_000);
        let command = (0..MAX_SEGMENTS)
            .map(|i| format!("cat /etc/{i}{long} {long}"))
            .collect::<Vec<_>>()
            .join("; ");
        let d = decide(&command);
        assert!(json_len(&d) > MAX_STORED_DECISION_BYTES);
        let (verdict, stage) = (d.verdict, d.stage);
        let stored = for_store(d);
        assert!(json_len(&stored) <= MAX_STORED_DECISION_BYTES);
        assert_eq!((stored.verdict, stored.stage), (verdict, stage));
        assert_eq!(verdict, Verdict::AutoApprove);
        assert!(!stored.segments.is_empty());
        assert!(stored.omitted.unwrap().contains("stored in part"));
    }
}
