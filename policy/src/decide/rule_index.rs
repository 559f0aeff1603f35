//! The command rules of a rules file as one command's segments look them
//! up: each list apart, and the allow rules by the program they name.
//!
//! Every segment compares its deny and ask rules and looks for the first
//! allow rule that matches; scanning the whole file for each segment made a
//! command of 50 segments under 50 rules 5,000 comparisons and list checks.
//! The lists are split once per command, and past a few allow rules an
//! allow rule is looked for only among those naming the segment's program
//! and those naming none (globs, `*`) — in the file's order, so the first
//! match is the one a full scan finds.

use crate::arg::Arg;
use crate::decision::RuleList;
use crate::rules::{CommandRule, RuleSet};

/// Past this many allow rules they are indexed by program.
const SCAN_ALLOW: usize = 8;

/// One rules file's command rules, split for a command's segments.
pub(super) struct CommandRules<'r> {
    /// The deny rules, in the file's order.
    pub deny: Vec<&'r CommandRule>,
    /// The ask rules, in the file's order.
    pub ask: Vec<&'r CommandRule>,
    /// Every command rule, in the file's order.
    all: &'r [CommandRule],
    /// Whether the allow rules are indexed (there are more than
    /// [`SCAN_ALLOW`]).
    indexed: bool,
    /// The allow rules with a fixed first word: that word and the rule's
    /// position in `all`, sorted (so by word, then in the file's order).
    /// A sorted list, not a map of lists: one allocation a command.
    by_program: Vec<(&'r str, usize)>,
    /// Positions in `all` of the allow rules with no fixed first word.
    any_program: Vec<usize>,
}

impl<'r> CommandRules<'r> {
    pub fn new(rules: &'r RuleSet) -> CommandRules<'r> {
        let count = |list: RuleList| rules.commands.iter().filter(|r| r.list == list).count();
        let (deny, ask) = (count(RuleList::Deny), count(RuleList::Ask));
        let allow = rules.commands.len() - deny - ask;
        let mut split = CommandRules {
            deny: Vec::with_capacity(deny),
            ask: Vec::with_capacity(ask),
            all: &rules.commands,
            indexed: allow > SCAN_ALLOW,
            by_program: Vec::new(),
            any_program: Vec::new(),
        };
        if split.indexed {
            split.by_program.reserve_exact(allow);
        }
        for (i, r) in rules.commands.iter().enumerate() {
            match r.list {
                RuleList::Deny => split.deny.push(r),
                RuleList::Ask => split.ask.push(r),
                RuleList::Allow if split.indexed => match r.pattern.program() {
                    Some(p) => split.by_program.push((p, i)),
                    None => split.any_program.push(i),
                },
                RuleList::Allow => {}
            }
        }
        // Pushed in the file's order: a stable sort by word keeps it
        // within each word.
        split.by_program.sort_by(|a, b| a.0.cmp(b.0));
        split
    }

    /// The first allow rule (in the file's order) `matches` accepts, for an
    /// argv starting with `program`. A rule whose fixed first word is not
    /// `program`'s text never matches it (an allow rule compares the name
    /// as written, and a dynamic name never matches for sure), so only the
    /// others are tried.
    pub fn first_allow(
        &self,
        program: &Arg,
        matches: impl Fn(&CommandRule) -> bool,
    ) -> Option<&'r CommandRule> {
        if !self.indexed {
            return self
                .all
                .iter()
                .find(|r| r.list == RuleList::Allow && matches(r));
        }
        let name = program.text.as_str();
        let from = self.by_program.partition_point(|(p, _)| *p < name);
        let to = from
            + self
                .by_program
                .get(from..)
                .map_or(0, |rest| rest.partition_point(|(p, _)| *p == name));
        let named = self.by_program.get(from..to).unwrap_or_default();
        // The two position lists merged in ascending order.
        let (mut a, mut b) = (
            named.iter().map(|(_, i)| i).peekable(),
            self.any_program.iter().peekable(),
        );
        loop {
            let i = match (a.peek(), b.peek()) {
                (Some(&&x), Some(&&y)) if x < y => a.next(),
                (Some(_), Some(_)) | (None, Some(_)) => b.next(),
                (Some(_), None) => a.next(),
                (None, None) => return None,
            };
            let r = i.and_then(|&i| self.all.get(i))?;
            if matches(r) {
                return Some(r);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pattern::{Match, Side};

    /// The indexed lookup finds the rule a scan of the whole file finds:
    /// the first in the file's order, whether it names the program, names
    /// another, or is a glob or `*`.
    #[test]
    fn indexed_allow_finds_the_first_match_in_file_order() {
        let allow: Vec<String> = [
            "npm test",
            "git log",
            "Bash(git *)",
            "cargo build",
            "ls",
            "git status --short",
            "git status",
            "make",
            "npx prettier",
            "Bash(* --version)",
            "echo",
            "cat",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let rules = RuleSet::from_lists(&allow, &[], &[]).expect("rules");
        let split = CommandRules::new(&rules);
        assert!(split.indexed);
        let commands = [
            "git status",
            "git status --short",
            "git log -1",
            "ls -la",
            "node --version",
            "rm -rf x",
            "make all",
            "/bin/ls",
            "npx prettier --check .",
        ];
        for c in commands {
            let argv: Vec<Arg> = c.split(' ').map(Arg::lit).collect();
            let matches =
                |r: &CommandRule| r.pattern.matches(&argv, false, Side::Allow) == Match::Yes;
            let scanned = rules
                .commands
                .iter()
                .find(|r| r.list == RuleList::Allow && matches(r));
            let found = split.first_allow(&argv[0], matches);
            assert_eq!(
                found.map(|r| &r.pattern.raw),
                scanned.map(|r| &r.pattern.raw),
                "{c}"
            );
        }
    }
}
