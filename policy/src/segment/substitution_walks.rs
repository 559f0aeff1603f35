//! The segments of a substitution walked before, pushed again for a copy
//! of it met in the same circumstances.
//!
//! The parser shares one tree among the copies of a plain `$(…)` text in a
//! line (`shell/plain_subs.rs`): a heredoc that logs `$(date +%s)` on each
//! of its lines holds one tree many times. Walking each copy made the same
//! segments again (words evaluated, wrappers and the program looked at),
//! ~3.9 K instructions a copy; a replay pushes the kept segments again,
//! shared (`Arc`): neither copied nor, once the walk is done, derived,
//! dropped or compared with an earlier copy again (`derive_normalized`,
//! `decide::repeats`).
//!
//! Why the replayed segments are the segments a walk would push: the walk of a
//! substitution is a function of its tree, the state it starts in (cwd,
//! `pushd` stack) and the walker's fields; it pushes segments and may
//! change those fields. A walk is kept only when it ran with no function
//! defined and none being defined (the walk reads the function table, a
//! map this does not compare), no pipe words waiting, and left every field
//! it could change as it found it (the nesting depth, the nested-script,
//! brace-expansion and wrapper-chain budgets, the `shopt` flags, the
//! wrappers it runs under). A copy is replayed only when it meets the same
//! tree (the same `Arc`, which the record holds so that its address is
//! never reused) with all of those equal — so its walk would read exactly
//! what the kept one read, push the same segments and change nothing.
//! The walker's other fields are set once per line (`home`, `CDPATH`
//! named) or set by the walk of a substitution itself (in a child
//! process, so `piped_or_background`). No walk changes a segment it did not
//! push: the segments before are never read.

use std::sync::Arc;

use super::{Segment, State, Walker};
use crate::arg::Arg;
use crate::shell::ast::List;

/// Most walks kept per line.
const MAX_WALKS: usize = 32;

/// What a walk of a substitution reads besides its tree and the segments
/// it pushes, when no function is defined and no pipe words wait.
#[derive(PartialEq, Eq)]
pub(super) struct WalkInputs {
    state: State,
    via: Vec<Vec<Arg>>,
    depth: usize,
    budget: usize,
    expansion_budget: usize,
    chain_budget: usize,
    lastpipe: bool,
    cdable_vars: bool,
}

struct Walked {
    tree: Arc<List>,
    inputs: WalkInputs,
    segments: Vec<Arc<Segment>>,
}

/// The walks of shared substitution trees kept in one line.
#[derive(Default)]
pub(super) struct SubstitutionWalks {
    walked: Vec<Walked>,
}

impl Walker<'_> {
    /// Whether a walk's inputs can be compared: no function defined or
    /// being defined, no pipe words waiting.
    fn comparable(&self) -> bool {
        self.functions.is_empty() && self.current_function.is_none() && self.pipe_words.is_none()
    }

    /// What a walk of a substitution would read, when it can be compared.
    fn walk_inputs(&self, state: &State) -> Option<WalkInputs> {
        if !self.comparable() {
            return None;
        }
        Some(WalkInputs {
            state: state.clone(),
            via: self.via.clone(),
            depth: self.depth,
            budget: self.budget,
            expansion_budget: self.expansion_budget,
            chain_budget: self.chain_budget,
            lastpipe: self.lastpipe,
            cdable_vars: self.cdable_vars,
        })
    }

    /// Whether `inputs` are what a walk would read now: `walk_inputs(state)
    /// == Some(inputs)`, compared field by field without the copies.
    fn reads(&self, state: &State, inputs: &WalkInputs) -> bool {
        // Every field named: one added to `WalkInputs` must be compared
        // here before this compiles.
        let WalkInputs {
            state: kept_state,
            via,
            depth,
            budget,
            expansion_budget,
            chain_budget,
            lastpipe,
            cdable_vars,
        } = inputs;
        self.comparable()
            && kept_state == state
            && *via == self.via
            && *depth == self.depth
            && *budget == self.budget
            && *expansion_budget == self.expansion_budget
            && *chain_budget == self.chain_budget
            && *lastpipe == self.lastpipe
            && *cdable_vars == self.cdable_vars
    }

    /// Walks the command list of a `$(…)` or `<(…)`, or pushes again what
    /// the walk of the same shared tree in the same circumstances pushed.
    pub(super) fn walk_substitution(&mut self, tree: &Arc<List>, state: &State) {
        // A tree held only here is met once: nothing to keep or find.
        let shared = self.reuse_walks && Arc::strong_count(tree) > 1;
        if !shared || !self.comparable() {
            self.walk_subshell(tree, state);
            return;
        }
        let replay = self
            .substitution_walks
            .walked
            .iter()
            .position(|w| Arc::ptr_eq(&w.tree, tree) && self.reads(state, &w.inputs));
        if let Some(walked) = replay.and_then(|i| self.substitution_walks.walked.get(i)) {
            self.segments.extend_from_slice(&walked.segments);
            return;
        }
        let Some(inputs) = self.walk_inputs(state) else {
            self.walk_subshell(tree, state);
            return;
        };
        let start = self.segments.len();
        self.walk_subshell(tree, state);
        let unchanged = self.reads(state, &inputs);
        let walks = &mut self.substitution_walks.walked;
        if unchanged && walks.len() < MAX_WALKS {
            walks.push(Walked {
                tree: Arc::clone(tree),
                inputs,
                segments: self.segments.get(start..).unwrap_or_default().to_vec(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{analyze, analyze_walking_each};

    /// Lines where the same plain substitution comes back in different
    /// circumstances: a new cwd, a pipeline, a wrapper, a function, a
    /// nested script, `shopt`, a background job, brace expansion.
    const LINES: &[&str] = &[
        "cat > f <<E\n$(date +%s) $(date +%s)\n$(date +%s)\nE",
        "echo $(pwd); cd /tmp; echo $(pwd); cd -; echo $(pwd)",
        "echo $(pwd) && cd sub || cd ..; echo $(pwd)",
        "pushd /a; echo $(pwd); popd; echo $(pwd)",
        "echo $(id -u) | sudo tee $(id -u) | cat $(id -u)",
        "sudo sh -c 'echo $(id -u)'; echo $(id -u); env X=1 bash -c 'cat $(id -u)'",
        "f() { echo $(date); cd /x; }; echo $(date); f; echo $(date)",
        "echo $(date); g() { echo $(date); }; echo $(date)",
        "echo $(sh -c ls) $(sh -c ls) $(sh -c ls)",
        "echo $(cd /x) $(cd /x); echo $(pwd) $(pwd)",
        "shopt -s lastpipe; echo $(date) | cd /y; echo $(date)",
        "echo $(date) & echo $(date); (echo $(date)); { echo $(date); }",
        "echo {a,b}$(date) {c,d}$(date) $(date)",
        "for i in 1 2; do echo $(date); done; while x; do echo $(date); done",
        "case $(date) in $(date)) echo $(date);; esac",
        "x=$(date) y=$(date) cmd $(date) > $(date) < $(date)",
        "echo $((1 + $(date))) $(date) <(date) <(date) >(date)",
        "xargs -I{} sh -c 'echo $(date) {}' < $(date); find . -exec echo $(date) \\;",
        "nohup $(date) ; $(date) ; exec $(date)",
        "echo ${x:-$(date)} \"$(date)\" $(date)",
        "cd $(date); echo $(date); cd $(date) && echo $(date)",
        "eval 'echo $(date)'; eval echo '$(date)'; echo $(date)",
        "rm -rf $(date) $(date); sudo rm $(date)",
    ];

    #[test]
    fn replayed_walks_equal_walking_each_copy() {
        for line in LINES {
            for cwd in ["/work", "/"] {
                let replayed = analyze(line.as_bytes(), cwd, "/home/agent");
                let walked = analyze_walking_each(line.as_bytes(), cwd, "/home/agent");
                assert_eq!(replayed.segments, walked.segments, "{line}");
                assert_eq!(replayed.parse_error, walked.parse_error, "{line}");
            }
        }
    }

    #[test]
    fn copies_are_replayed() {
        // Each copy after the first is a replay: as many segments as
        // copies, all equal.
        let line = "cat > f <<E\n$(date +%s)\n$(date +%s)\n$(date +%s)\nE";
        let a = analyze(line.as_bytes(), "/work", "/home/agent");
        let dates: Vec<_> = a
            .segments
            .iter()
            .filter(|s| s.argv.first().is_some_and(|a| a.text == "date"))
            .collect();
        assert_eq!(dates.len(), 3);
        assert!(dates.iter().all(|s| *s == dates[0]));
    }
}
