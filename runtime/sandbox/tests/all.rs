//! The crate's integration tests in one binary (one link step, as ripgrep's
//! tests/tests.rs): each module is one area; `common` holds the Docker
//! fixtures, `host_procs` finds a runner exec's processes from the host.
//! `runner_confinement` stays a binary of its own: it copies itself and runs
//! its cases again as `nobody` (`setpriv`), by name.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod common;
mod host_procs;

mod confined_files;
mod disk_template;
mod docker_berth;
mod docker_contract;
mod docker_dockerfile;
mod docker_exec;
mod docker_exec_agent;
mod docker_files;
mod docker_image;
mod docker_reconcile;
mod docker_tools;
mod runner;
mod runner_cancel;
mod runner_contract;
mod runner_resident;
