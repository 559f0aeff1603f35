//! Segments of one command that are the same as an earlier one (`… | sort
//! | uniq -c | sort`, a heredoc's `$(date +%s)` on every line): a decision
//! that keeps no per-segment report judges each distinct segment once. In
//! a batch of mixed commands about half the segments were such repeats.
//!
//! Why the decision stays the same: every stage is a function of the
//! segment, the context, and what was set up for the whole command before
//! the segments (`dotglob`, the rules split by list); none reads what
//! earlier segments raised. Two equal segments (`==`: every field, the cwd
//! and the normalised views included) therefore raise equal findings but
//! for the segment index each names, and count alike in stage 5. The brief
//! decision reads a finding's verdict, stage and reason only, taking the
//! first of the strongest: a repeat's findings come after the equal ones
//! of the segment it repeats, so they are never the one read, and what the
//! repeat adds to stage 5's count is kept. Whether a segment runs what an
//! earlier part of the command wrote depends on where it stands: a segment
//! that does is judged on its own, and no later one reuses its judgement.

use std::hash::Hasher;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHasher};

use crate::segment::Segment;

/// The segments of one command judged so far, each with what its
/// judgement left for the rest of the command (`T`).
pub(super) struct Repeats<T> {
    /// The first segment of each fingerprint, by index.
    first: FxHashMap<u64, usize>,
    /// What each judged segment left, by index.
    outcomes: Vec<Option<T>>,
}

impl<T: Copy> Repeats<T> {
    pub fn new(segments: usize) -> Self {
        Repeats {
            first: FxHashMap::default(),
            outcomes: vec![None; segments],
        }
    }

    /// What the segment at `idx` left when judged before, if it equals an
    /// earlier segment that was judged; otherwise `None`, and it may be
    /// repeated by a later one once [`Repeats::judged`] records it.
    pub fn earlier(&mut self, segments: &[Arc<Segment>], idx: usize) -> Option<T> {
        let seg = segments.get(idx)?;
        let first = *self.first.entry(fingerprint(seg)).or_insert(idx);
        // One shared segment (a replayed substitution's) is equal to itself
        // without a comparison.
        let equal = segments
            .get(first)
            .is_some_and(|f| Arc::ptr_eq(f, seg) || **f == **seg);
        if first == idx || !equal {
            return None;
        }
        self.outcomes.get(first).copied().flatten()
    }

    /// Records what judging the segment at `idx` left.
    pub fn judged(&mut self, idx: usize, outcome: T) {
        if let Some(slot) = self.outcomes.get_mut(idx) {
            *slot = Some(outcome);
        }
    }
}

/// A hash of the words of a segment: equal segments have equal ones, and
/// most different ones differ (a collision only costs a comparison).
fn fingerprint(seg: &Segment) -> u64 {
    let mut h = FxHasher::default();
    for a in &seg.argv {
        h.write(a.text.as_bytes());
        h.write_u8(0xff);
    }
    h.write_usize(seg.chain.len());
    for r in &seg.redirects {
        h.write(r.target.text.as_bytes());
        h.write_u8(0xff);
    }
    h.write_usize(seg.assigns.len());
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_gets_what_its_first_left() {
        let analysis = crate::segment::analyze(
            b"sort a | uniq -c | sort a | sort b; echo $(date) $(date)",
            "/work",
            "/home/agent",
        );
        let segs = &analysis.segments;
        let mut seen = Repeats::new(segs.len());
        let mut repeats = Vec::new();
        for idx in 0..segs.len() {
            match seen.earlier(segs, idx) {
                Some(first) => repeats.push((idx, first)),
                None => seen.judged(idx, idx),
            }
        }
        // Each repeat names the first equal segment, and is equal to it.
        assert!(!repeats.is_empty());
        for (idx, first) in repeats {
            assert!(first < idx);
            assert_eq!(segs[first], segs[idx]);
        }
        // `sort b` and `uniq -c` repeat nothing.
        let distinct: std::collections::HashSet<String> =
            segs.iter().map(|s| format!("{:?}", s.argv)).collect();
        assert!(distinct.len() >= 4, "{segs:?}");
    }
}
