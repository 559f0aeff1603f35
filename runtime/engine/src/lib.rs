//! berth's engine: the store, the action pipeline, approvals, the event log
//! with actors, autonomy, tasks and the agents' delivery chain.
//!
//! Every interface — the CLI, `berth serve`'s HTTP API, the MCP server, the
//! Claude Code hook — is a thin layer over [`Engine`]'s calls, so that one
//! code path decides, executes and records every action whoever asks. The
//! store is the single source of truth: each step is a durable, idempotent
//! state transition, and any `berth` process can perform any step (the CLI
//! does one and exits; `berth agent run` drives a loop; a server drives all).
//! Nothing here assumes one process or one host beyond what the store
//! guarantees.
//!
//! Where each [`Engine`] method lives (private steps sit beside the
//! public call they serve):
//!
//! | file | methods |
//! |---|---|
//! | `lib.rs` | `init`, `open`, `open_with`, `open_one_shot_with`, `state`, `store`, `events`, `latest_event_id`, the outbox (`drain_outbox`, `pending_outbox`, `mark_outbox_processed`), `close` |
//! | `projects.rs` | `add_project`, `projects`, `project`, `load_project`, `load_project_files`, `set_project_mode` |
//! | `agents.rs` | `activate_agent`, `agent`, `agents`, autonomy (`autonomy`, `set_autonomy`, `unset_autonomy`, `set_auto_mode`, `autonomy_report`) |
//! | `breaker.rs` | `resume_agent`, `consecutive_failures` |
//! | `tasks.rs` | `create_task`, `create_task_with`, `set_task_mode`, `tasks`, `task`, `claim_task` |
//! | `transitions.rs` | no method: the task and agent state machines every status write goes through |
//! | `actions/propose.rs` | `propose` |
//! | `actions/decide.rs` | `approve`, `deny`, `retry` (and berth's resume of its own effects) |
//! | `actions/cancel.rs` | `cancel_action` |
//! | `actions/record.rs` | `action`, `action_by_key`, `actions`, `pending_count` |
//! | `actions/finish.rs`, `execute.rs` | running a claimed action and recording its end |
//! | `gate.rs` | what an action's outcome means for its task: the gate, returns, releases |
//! | `agent_io.rs`, `noop.rs` | `agent_io`, `agent_io_under` (the delivery chain), `run_agent`, `run_agent_under` |
//! | `agent_lease.rs` | `take_agent_lease`, `renew_agent_leases`, `release_agent_leases` (which driver drives an agent) |
//! | `pipeline/mod.rs` | `run_pipeline`, `run_pipeline_with`, `pipelines_to_resume`, `pipeline_state` |
//! | `pipeline/end.rs` | `approve_task`, `reject_task` (`lease.rs`, `drive.rs`: the run's steps) |
//! | `followups.rs` | `choices`, `choice`, `resolve_choice` |
//! | `prs.rs` | `prs`, `pr`, `merge_pr`, `close_pr` |
//! | `checks.rs` | `pr_feedback`, `run_pr_checks`, `watch_prs` |
//! | `pr_automation/mod.rs` (`auto_fix.rs`, `auto_merge.rs`, `lifecycle.rs`, `forge.rs`, `state.rs`, `template.rs`) | `pr_automation`, `set_pr_automation`, `evaluate_pr_automation`, `automate_prs`, `prompt_template`, `set_prompt_template` |
//! | `pr_review/mod.rs` (`records.rs`, `reading.rs`) | `comment_pr`, `pr_threads`, `resolve_pr_thread`, `review_pr`, `request_pr_review` (and the agent's `pr_comment`, `pr_resolve_thread`) |
//! | `berths/mod.rs` | `berths`, `saved_work`, `drop_saved_work` (and the host checks of a decided action) |
//! | `berths/up.rs`, `berths/down.rs`, `berths/reconcile.rs` | `up`, `up_with`; `down`, `down_with`; `reconcile_berths`, `orphan_containers` |
//! | `berths/spec.rs` | no method: a project's settings as a berth's sandbox spec, built once (the providers that open it are the sandbox crate's `provider` module) |
//! | `removal.rs` | `remove_agent`, `remove_project`, `archive_task`, `remove_task` |
//! | `command.rs` | `set_agent_command`, `agent_command`, `run_command_turn` (the `command` agent) |
//! | `tool_endpoint.rs` | `serve_tools_with` (the MCP endpoint a `command` agent's turn gets) |
//! | `sessions.rs` | `open_session`, `session`, `sessions`, `finish_turn`, `end_session` |
//! | `session_output.rs` | a turn's output kept in `<state>/sessions/<id>/` as it arrives |
//! | `prompts.rs` | `send_prompt`, `prompt_queue`, `prompt` |
//! | `prompt_delivery.rs` | `reserve_prompt`, `acknowledge_prompt`, `release_prompt` |
//! | `berth_disk.rs`, `berth_uid.rs` | `disk_doctor`, `reconcile_disks`, `doctor` |
//! | `exchange.rs` | `sync_project`, `export_pr` |
//! | `parallel.rs` | `instructions_path`, `consider_parallelize` |
//! | `recovery.rs` | `recover` |
//! | `metrics.rs` | `metrics` |
//! | `archive.rs` | `archive_events` |

pub mod actions;
pub mod agent_io;
pub mod agent_lease;
pub mod agents;
pub mod archive;
pub mod berth_disk;
pub mod berth_uid;
pub mod berths;
mod breaker;
pub mod checks;
pub mod checkup;
pub mod command;
pub mod config;
pub mod confinement;
pub mod declared_dirs;
pub mod devcontainer;
mod egress_check;
pub mod egress_gate;
pub mod egress_serving;
pub mod error;
pub mod events;
mod exchange;
mod execute;
pub mod followups;
mod gate;
pub mod git;
mod hooks;
pub mod ids;
pub mod log_signal;
pub mod metrics;
pub mod network_list;
pub mod noop;
mod outbox;
mod parallel;
pub mod permissions;
pub mod pipeline;
mod policy_context;
pub mod pr_automation;
pub mod pr_review;
pub mod private_state;
mod project_files_cache;
pub mod project_image;
pub mod projects;
mod prompt_delivery;
pub mod prompts;
pub mod prs;
pub mod recovery;
pub mod removal;
pub mod session_output;
pub mod sessions;
pub mod state;
pub mod store;
pub mod stored_decision;
pub mod tasks;
pub mod tool_endpoint;
mod transitions;
pub mod worker;

use std::sync::Arc;

pub use actions::{
    ActionFilter, ActionParams, ActionRecord, ActionResult, ActionStatus, Approval, Approved,
    CallerEnv, Cancelled, CreatedStatus, ExecReport, ExecStatus, Outcome, OutputChunk, OutputSink,
    Proposal, ProposeStatus, Proposed, Routed, WriteBase, output_channel,
};
pub use agent_io::{AgentIo, Delivery};
pub use agents::{ACTIVATION_SEEDS, Agent, AgentImpl, AgentStatus, AutonomyReport};
pub use berth_disk::{DiskDoctor, ReconciledDisk, release_disks_under};
pub use berth_uid::UidFinding;
/// Project and agent names: berth's one name rule, parsed at every edge.
pub use berth_worktrees::{AgentName, FileChange, ProjectName};
pub use berths::{
    BerthInfo, BerthSpec, DockerProvider, LocalProvider, OpenedSandbox, OrphanContainer,
    ReconciledContainer, SandboxProvider, SavedEntry, SavedRef, UpOptions,
};
pub use checks::{CheckRun, CheckStatus, PrFeedback};
pub use command::Turn;
pub use config::{BerthMode, BerthModeChoice, ExecutionMode, ProjectConfig};
pub use error::{EngineError, ErrorKind, Result};
pub use events::{Actor, ActorKind, Event, EventFilter};
pub use exchange::{PrExport, ProjectSync};
pub use followups::{Choice, FollowupItem};
pub use log_signal::{LogSignal, LogWake};
pub use metrics::Metrics;
pub use noop::{AgentRun, RunReport};
pub use outbox::OutboxMessage;
pub use pipeline::{PipelineEnd, PipelineReport};
pub use pr_review::{
    AuthorKind, NewComment, PrComment, PrConversation, PrReview, PrThread, ReviewError,
    ReviewRequest, ReviewState,
};
pub use projects::{NewProject, Project};
pub use prompts::{NewPrompt, Prompt, PromptKey, PromptSent, PromptStatus, Reservation, Sent};
pub use prs::{PrStatus, PullRequest};
pub use removal::{AgentRemoval, ProjectRemoval};
pub use sessions::{Session, SessionStatus};
pub use state::StateDir;
pub use store::{Backend, Store, StoreLocation};
pub use tasks::{NewTask, PipelineStep, Task, TaskKind, TaskSource, TaskStatus};
pub use tool_endpoint::{ToolEndpoint, ToolEndpoints};

/// One state directory's engine. Cheap to share behind an `Arc`.
pub struct Engine {
    state: StateDir,
    store: Store,
    git: git::Git,
    provider: Arc<dyn SandboxProvider>,
    sandboxes: berths::SandboxCache,
    /// Projects' files parsed once, read again when changed (shared with
    /// this engine's siblings).
    project_files: Arc<project_files_cache::ProjectFilesCache>,
    /// Where a `command` agent's turn gets its MCP endpoint (the binary's).
    tool_endpoints: std::sync::OnceLock<Arc<dyn ToolEndpoints>>,
    /// Names the egress proxy resolves without DNS ([`egress_serving`]);
    /// shared with this engine's siblings.
    egress_hosts: Arc<std::sync::Mutex<berth_egress::FixedHosts>>,
    /// How a mounted berth's proxy listener is made in its container
    /// ([`Engine::set_egress_container_door`]).
    egress_door: Arc<std::sync::Mutex<berth_sandbox::egress_port::ContainerDoor>>,
    /// The open connections of every proxy this process serves
    /// ([`egress_serving`]): drained by [`Engine::close`], so a connection
    /// still open when a one-shot command ends is recorded before it exits.
    egress_open: egress_serving::OpenProxies,
    /// This process as a worker (`berth serve --worker NAME`, `worker.rs`):
    /// the name on its agents' leases and on every container it creates.
    worker: Arc<std::sync::OnceLock<String>>,
}

impl Engine {
    /// Creates the state directory (0700) and its store (0600) (idempotent),
    /// then opens it.
    pub async fn init(state: StateDir) -> Result<Engine> {
        // `store.toml` may name the store before the directory is made.
        let location = StoreLocation::resolve(&state)?;
        let file = match &location {
            StoreLocation::Sqlite(path) => Some(path.as_path()),
            StoreLocation::Postgres(_) => None,
        };
        private_state::create(&state, file)?;
        let store = Store::connect(&location, true).await?;
        Self::with_store(state, store, Arc::new(LocalProvider)).await
    }

    /// Opens an initialised state directory with the local sandbox provider.
    pub async fn open(state: StateDir) -> Result<Engine> {
        Self::open_with(state, Arc::new(LocalProvider)).await
    }

    /// Opens an initialised state directory with `provider` (the Docker
    /// backend brings its own). Marks interrupted actions of dead processes.
    pub async fn open_with(state: StateDir, provider: Arc<dyn SandboxProvider>) -> Result<Engine> {
        let location = Self::initialised(&state)?;
        let store = Store::connect(&location, false).await?;
        Self::with_store(state, store, provider).await
    }

    /// [`Engine::open_with`] for a process that runs one command and exits:
    /// the store on one connection ([`Store::open_one_shot`]).
    pub async fn open_one_shot_with(
        state: StateDir,
        provider: Arc<dyn SandboxProvider>,
    ) -> Result<Engine> {
        let location = Self::initialised(&state)?;
        let store = Store::open_one_shot(&location).await?;
        let mut engine = Self::with_store(state, store, provider).await?;
        engine.project_files = Arc::new(project_files_cache::ProjectFilesCache::one_shot());
        Ok(engine)
    }

    /// An initialised state directory's store, and a warning for each part
    /// of the directory others can read.
    fn initialised(state: &StateDir) -> Result<StoreLocation> {
        // A state directory `init` made: its SQLite file, or (with a
        // PostgreSQL store) the directory itself.
        let location = if state.root().is_dir() {
            StoreLocation::resolve(state)?
        } else {
            StoreLocation::Sqlite(state.db())
        };
        let made = match &location {
            StoreLocation::Sqlite(path) => path.is_file(),
            StoreLocation::Postgres(_) => true,
        };
        if !made {
            return Err(EngineError::StateMissing {
                path: state.root().to_path_buf(),
            });
        }
        for exposed in private_state::exposure(state)? {
            tracing::warn!("{exposed}");
        }
        Ok(location)
    }

    async fn with_store(
        state: StateDir,
        store: Store,
        provider: Arc<dyn SandboxProvider>,
    ) -> Result<Engine> {
        let engine = Engine {
            git: git::Git::open(state.root())?,
            state,
            store,
            provider,
            sandboxes: berths::SandboxCache::default(),
            project_files: Arc::default(),
            tool_endpoints: std::sync::OnceLock::new(),
            egress_hosts: Arc::default(),
            egress_door: Arc::default(),
            egress_open: egress_serving::OpenProxies::default(),
            worker: Arc::default(),
        };
        let interrupted = engine.recover().await?;
        if !interrupted.is_empty() {
            tracing::warn!(
                count = interrupted.len(),
                "actions interrupted by a crash were marked interrupted"
            );
            // The crashed process may have left commands running in a berth
            // container: reconcile kills them (and removes orphans).
            if let Err(e) = engine.reconcile_berths().await {
                tracing::warn!("berth containers not reconciled after a crash: {e}");
            }
        }
        Ok(engine)
    }

    /// An engine over the same state, store and provider, with a sandbox
    /// cache of its own: what a berth's egress proxy decides with, held by
    /// that berth's sandbox without holding this engine (and its cache).
    pub(crate) fn sibling(&self) -> Engine {
        Engine {
            state: self.state.clone(),
            store: self.store.clone(),
            git: self.git.clone(),
            provider: Arc::clone(&self.provider),
            sandboxes: berths::SandboxCache::default(),
            project_files: Arc::clone(&self.project_files),
            tool_endpoints: self.tool_endpoints.clone(),
            egress_hosts: Arc::clone(&self.egress_hosts),
            egress_door: Arc::clone(&self.egress_door),
            egress_open: self.egress_open.clone(),
            worker: Arc::clone(&self.worker),
        }
    }

    pub fn state(&self) -> &StateDir {
        &self.state
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub(crate) fn git(&self) -> &git::Git {
        &self.git
    }

    /// The log, filtered.
    pub async fn events(&self, filter: &EventFilter) -> Result<Vec<Event>> {
        events::list(self.store.pool(), filter).await
    }

    /// A wake-up source for a follower of the log: on PostgreSQL it wakes
    /// as soon as any process appends (`LISTEN`), on SQLite at each poll
    /// ([`log_signal`]).
    pub async fn log_signal(&self) -> Result<log_signal::LogSignal> {
        log_signal::LogSignal::open(&self.store).await
    }

    /// The id of the newest event (0 when the log is empty): the `after`
    /// cursor of a follower that wants only what comes next. Cheap (the
    /// primary key's maximum), so followers in any process can poll it.
    pub async fn latest_event_id(&self) -> Result<i64> {
        events::latest_id(self.store.pool()).await
    }

    /// Drains the outbox: every undelivered message, its row deleted in
    /// the same transaction. Returns the messages and how many rows were
    /// deleted.
    pub async fn drain_outbox(&self) -> Result<(Vec<OutboxMessage>, u64)> {
        outbox::drain(&self.store).await
    }

    /// The undelivered outbox messages, left in the outbox: deliver them,
    /// then [`Engine::mark_outbox_processed`] up to the last id (at least once).
    pub async fn pending_outbox(&self) -> Result<Vec<OutboxMessage>> {
        outbox::pending(&self.store).await
    }

    /// Deletes the outbox rows up to `up_to`, after their messages were
    /// delivered. Returns how many were deleted.
    pub async fn mark_outbox_processed(&self, up_to: i64) -> Result<u64> {
        outbox::delivered(&self.store, up_to).await
    }

    /// Closes the store cleanly.
    pub async fn close(&self) {
        // The proxies' connections first: each is recorded in the store.
        self.egress_open.drain().await;
        self.store.close().await;
    }
}

/// The server and the MCP adapter share one `Engine` across tasks: it and
/// the futures of its calls must be `Send` (and it `Sync`). This fails to
/// compile otherwise.
#[cfg(test)]
#[allow(dead_code)]
fn engine_calls_are_send(e: &'static Engine) {
    fn send<T: Send>(_: T) {}
    fn sync<T: Sync>(_: &T) {}
    sync(e);
    let user = Actor::user("u");
    let (a, p) = (AgentName::new("a").unwrap(), ProjectName::new("p").unwrap());
    send(e.propose(
        Proposal::by_agent(&a, berth_policy::Action::GitCommit),
        None,
    ));
    send(e.approve("id", &user, false, None));
    send(e.deny("id", &user, None));
    send(e.retry("id", &user, None));
    send(e.run_agent(&a, true));
    send(e.up(&a, &p, None, &user));
    send(e.down(&a, false, &user));
    send(e.remove_agent("a", None, false, &user));
    send(e.remove_project("p", false, &user));
    send(e.merge_pr("1", &user));
    send(e.close_pr("1", &user, None));
    send(e.events(&EventFilter::default()));
    send(e.drain_outbox());
    send(e.metrics(None));
    send(e.claim_task("a"));
}
