//! Ordinary programs that run a command or write a file through their
//! options (the GTFOBins class; POLICY.md, "Spelling does not change
//! meaning", points 2 and 10): each row is a command line, the allow rules,
//! the mode, the frame and the verdict the contract gives. Rows that must
//! be asked run in auto mode (nothing lifts them); rows that must not
//! over-prompt run in manual mode with the program allowed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::program_meaning::{Row, check};
use crate::table::{ASK, AUTO, F, M};
use F::{Container, Host};
use M::{Auto, Manual};

/// A wrapper's own output file is written as a redirection's target is;
/// one that pipes into a command (`strace -o '|cmd'`) runs it unseen.
#[rustfmt::skip]
const WRAPPER_WRITES: &[Row] = &[
    ("strace -o '|git push origin main' ls", &["strace", "ls"], Auto, Host, ASK),
    ("strace -o'!git-push' ls", &["strace", "ls"], Auto, Host, ASK),
    ("strace --output='|git-push' ls", &["strace", "ls"], Auto, Container, ASK),
    ("strace -o .git/hooks/pre-commit ls", &["strace", "ls"], Auto, Host, ASK),
    ("strace -fo~/.bashrc ls", &["strace", "ls"], Auto, Host, ASK),
    ("ltrace -o .git/hooks/pre-commit ls", &["ltrace", "ls"], Auto, Container, ASK),
    ("valgrind --log-file=.git/hooks/pre-commit ./a.out", &["valgrind"], Auto, Host, ASK),
    ("time -o ~/.bashrc ls", &["time", "ls"], Auto, Host, ASK),
    ("script -q ~/.bashrc -c ls", &["script", "ls"], Auto, Host, ASK),
    ("script -a -c ls .git/hooks/pre-commit", &["script", "ls"], Auto, Container, ASK),
    ("script -c ls -O .envrc", &["script", "ls"], Auto, Container, ASK),
    ("strace -o trace.txt ls", &["strace", "ls"], Manual, Container, AUTO),
    ("strace -f -o trace.txt cargo test", &["strace", "cargo test"], Manual, Container, AUTO),
    ("valgrind --log-file=vg.txt ./a.out", &["valgrind", "./a.out"], Manual, Container, AUTO),
    ("script -q -c 'npm test' build.log", &["script", "npm test"], Manual, Container, AUTO),
];

#[test]
fn wrapper_writes() {
    check(WRAPPER_WRITES);
}
