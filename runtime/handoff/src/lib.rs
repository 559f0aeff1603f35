//! `berth exec` handed to a `berth serve` running on the same state: all
//! berth needs to do it without the engine.
//!
//! A handed-off exec needs one request sent and its answer printed, so
//! berth does it first, before clap, its async runtime or its store
//! (`runtime/src/early_handoff.rs`): it reads its command line ([`argv`]);
//! when that is an exec and a server answers on the state's socket
//! ([`client`]), it proposes the action there and prints what the server
//! streams back; otherwise berth goes on and runs the command itself.
//!
//! What both paths print about an action's end is [`report`]: the engine
//! builds the [`ExecReport`], the server sends it as its stream's last line,
//! and one function prints it, so the paths cannot say different things.
//! Where the state lives and what in it others can read ([`state`]) is here
//! for the same reason: a handed-off exec warns as a run here does.

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
