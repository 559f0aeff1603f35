//! The crate's integration tests in one binary (one link step, as ripgrep's
//! tests/tests.rs): each module is one area, `common` the shared fixture (a
//! real store, forge and berths). `confinement` stays a binary of its own: it
//! names a missing exec shim in its process's environment.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod agent_lease;
mod archive_race;
mod berth_disk;
mod checkout_bounds;
mod command_agent;
mod decisions;
mod declared_dirs;
mod delivery;
mod egress;
mod egress_berths;
mod events_doc;
mod file_links;
mod mounted;
mod pipeline;
mod pipelines;
mod pr_automation;
mod pr_review;
mod prompts;
mod removal;
mod runner_env;
mod runner_identity;
mod saved_work;
mod store;
mod store_backends;
mod store_once;
mod team;
