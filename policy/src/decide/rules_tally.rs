//! What stage 5 (the rules file) counts over the segments of one command:
//! how many are commands, which an allow rule matched (the first of them
//! and its rule, for the reason), and which none did. Each segment's
//! judgement says how it counts ([`Counted`]), so a segment equal to an
//! earlier one counts again without being judged again
//! ([`super::repeats`]).

use crate::rules::CommandRule;

/// What stage 5 has seen so far over the segments of one command.
#[derive(Default)]
pub(super) struct RulesTally<'a> {
    /// Segments that are commands.
    pub commands: usize,
    /// Segments an allow rule matched.
    pub allowed: usize,
    /// The first of them and its rule: why it is allowed is the reason
    /// when it is the only one (worded then, not for every command).
    pub first_allowed: Option<(usize, &'a CommandRule)>,
    /// The commands no allow rule matched.
    pub unmatched: Vec<usize>,
}

/// What one segment adds to the [`RulesTally`].
#[derive(Clone, Copy)]
pub(super) enum Counted<'a> {
    /// Not a command: rules do not apply.
    NotACommand,
    /// A command this allow rule matched.
    Allowed(&'a CommandRule),
    /// A command no allow rule matched.
    Unmatched,
}

impl<'a> RulesTally<'a> {
    /// Counts the segment at `idx`.
    pub fn count(&mut self, idx: usize, counted: Counted<'a>) {
        match counted {
            Counted::NotACommand => {}
            Counted::Allowed(rule) => {
                self.commands += 1;
                if self.allowed == 0 {
                    self.first_allowed = Some((idx, rule));
                }
                self.allowed += 1;
            }
            Counted::Unmatched => {
                self.commands += 1;
                self.unmatched.push(idx);
            }
        }
    }
}
