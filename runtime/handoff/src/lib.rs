//! `berth exec` handed to a `berth serve` running on the same state: all the
//! `berth` front binary needs to do it without the engine.
//!
//! A handed-off exec spends most of its client's time starting the client:
//! the whole `berth` binary (the engine, the server, the adapters: tens of
//! megabytes of code, tens of thousands of relocations written at every
//! start) to send one request and print its answer. So `berth` is a small
//! front (`runtime/src/front.rs`) built on this crate alone: it reads its
//! command line ([`argv`]); when that is an exec and a server answers on the
//! state's socket ([`client`]), it proposes the action there and prints what
//! the server streams back; for everything else it runs the full program
//! (`berth-full`, beside it), which also calls [`client`] first for an exec.
//!
//! What both binaries print about an action's end is [`report`]: the engine
//! builds the [`ExecReport`], the server sends it as its stream's last line,
//! and one function prints it, so the paths cannot say different things.
//! Where the state lives and what in it others can read ([`state`]) is here
//! for the same reason: the front warns as the full program does.

pub mod argv;
pub mod client;
mod error;
mod http;
mod output;
pub mod report;
pub mod state;

pub use client::{ExecRequest, Handoff, exec_through_server};
pub use error::HandoffError;
pub use report::{ExecReport, ExecStatus};
