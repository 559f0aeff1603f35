//! The crate's integration tests in one binary (one link step, as ripgrep's
//! tests/tests.rs): each module is one area; `table` is the harness the class
//! tables share. `totality` stays a binary of its own: it installs a counting
//! global allocator.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod table;

mod actions;
mod auto_mode_limits;
mod bash_quoting;
mod bash_segments;
mod brief_matches_full;
mod classes;
mod deny_meaning;
mod gtfobins_meaning;
mod machine_meaning;
mod network;
mod option_meaning;
mod path_meaning;
mod program_meaning;
mod public_cases;
mod regressions;
mod replay;
mod segment_bound;
mod shell_meaning;
