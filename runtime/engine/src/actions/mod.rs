//! The action pipeline: one code path for every caller (agent loop, CLI,
//! API, MCP).
//!
//! `propose` resolves the agent's autonomy, loads the project's rules and
//! limits, decides in the berth's frame, records `proposed_action.created`
//! with the final status and the decision (actor: the proposer), and — when
//! auto-approved — translates and executes at once. `approve` and `deny`
//! record the person's decision (actor: the user) and execute or refuse.
//! Every caller gets `executed | pending | refused` and must look at it
//! (ADR 0048: a caller that ignored the status closed tasks with no commit).
//!
//! State moves only through conditional UPDATEs (`… WHERE status = 'pending'`)
//! checked by rows affected, so two processes approving one action execute it
//! once. An action is marked `executing` with the process that runs it before
//! anything runs; after a crash, `recover` marks it `interrupted` and nothing
//! re-runs it on its own.
//!
//! One concern a file: `proposal` (what a caller asks and gets back),
//! `outcome` (what an executed action produced), `record` (how the store
//! holds an action), `propose` (the decision and the first run), `decide`
//! (a person's approval, denial or retry: one claim-and-run), `route` (an
//! approval received by a process that does not hold the agent, run by the
//! worker that does), `cancel` (a person stops an executing one), `finish`
//! (running a claimed action and recording its end), `exec_report` (what
//! `berth exec` says about a terminal action, wherever it ran).

mod cancel;
pub(crate) mod decide;
mod exec_report;
mod finish;
mod outcome;
mod preview;
mod proposal;
mod propose;
mod record;
mod route;

pub use cancel::Cancelled;
pub use exec_report::{ExecReport, ExecStatus};
pub use outcome::{ActionResult, Outcome};
pub use preview::WriteBase;
pub use proposal::{
    ActionParams, Approved, CallerEnv, OutputChunk, OutputSink, Proposal, ProposeStatus, Proposed,
    output_channel,
};
pub use record::{ActionFilter, ActionRecord, ActionStatus, CreatedStatus};
pub use route::{Approval, Routed, RoutedApproval};
