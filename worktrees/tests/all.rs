//! The crate's integration tests in one binary (one link step, as ripgrep's
//! tests/tests.rs): each module is one area, `common` the shared fixtures.
//! `hostile_helper` stays a binary of its own: it sets `BERTH_HELPER` for
//! its whole process.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod branch_file;
mod commit_push;
mod concurrency;
mod confined_git;
mod diagnostics;
mod exchange;
mod fence;
mod forge;
mod forge_server;
mod isolation;
mod merge;
mod object_trust;
mod ownership;
mod provision;
mod recycle_reconcile;
