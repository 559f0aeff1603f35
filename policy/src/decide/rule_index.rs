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

use rustc_hash::FxHashMap;

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
    /// Positions in `all` of the allow rules with a fixed first word, by
    /// that word.
    by_program: FxHashMap<&'r str, Vec<usize>>,
    /// Positions in `all` of the allow rules with no fixed first word.
    any_program: Vec<usize>,
}

impl<'r> CommandRules<'r> {
    pub fn new(rules: &'r RuleSet) -> CommandRules<'r> {
        let mut split = CommandRules {
            deny: Vec::new(),
            ask: Vec::new(),
            all: &rules.commands,
            indexed: false,
            by_program: FxHashMap::default(),
            any_program: Vec::new(),
        };
        let mut allow = 0;
        for r in &rules.commands {
            match r.list {
                RuleList::Deny => split.deny.push(r),
                RuleList::Ask => split.ask.push(r),
                RuleList::Allow => allow += 1,
            }
        }
        if allow > SCAN_ALLOW {
            split.indexed = true;
            for (i, r) in rules.commands.iter().enumerate() {
                if r.list != RuleList::Allow {
                    continue;
                }
                match r.pattern.program() {
                    Some(p) => split.by_program.entry(p).or_default().push(i),
                    None => split.any_program.push(i),
                }
            }
        }
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
        let named = self
            .by_program
            .get(program.text.as_str())
            .map_or(&[][..], Vec::as_slice);
        // The two position lists merged in ascending order.
        let (mut a, mut b) = (named.iter().peekable(), self.any_program.iter().peekable());
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
