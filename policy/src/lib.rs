//! berth's decision over an agent's proposed actions.
//!
//! Every action an agent proposes — a compound shell command, a file write, a
//! commit, a push — passes one pure function, [`decide`], before anything runs.
//! This crate holds that function and everything it needs: a shell parser that
//! splits a command line into the simple commands that would really run
//! (wrappers seen through), the rules files, the built-in deny templates, the
//! external-effect limit, container-aware path scope, and autonomy resolution.
//!
//! It is pure: no async, no I/O but reading a rules file. The engine calls it
//! in the frame where a command runs, and translates paths to the host with
//! [`PathMap`] only after the decision. The contract is `design/POLICY.md`.

pub mod access;
pub mod action;
pub mod arg;
pub mod autonomy;
pub mod batch;
mod byte_set;
pub mod case;
mod case_json;
pub mod decide;
pub mod decision;
pub mod env;
pub mod explain;
pub mod frame;
pub mod glob_meet;
pub mod invocation;
mod json_spans;
pub mod name_fold;
pub mod network;
pub mod options;
pub mod path_words;
pub mod pathmap;
pub mod pattern;
mod plain_path;
pub mod privileged;
pub mod program;
pub mod protected;
pub mod rules;
pub mod scope;
pub mod segment;
pub mod shell;
#[cfg(test)]
mod short_strings;
mod substring;
pub mod template;
pub mod wrapper;

pub use action::Action;
pub use autonomy::{Approval, Autonomy, Origin, Resolved};
pub use decide::{Context, Limits, decide, decide_brief};
pub use decision::{
    Brief, Decision, Finding, Location, PathReport, RuleList, RuleMatch, RuleRef, SegmentReport,
    SourceLoc, Stage, Verdict,
};
pub use frame::{Frame, Mount, MountKind};
pub use pathmap::PathMap;
pub use rules::{RuleSet, RulesError};
