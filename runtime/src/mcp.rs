//! `berth mcp --agent AGENT`: the Model Context Protocol over stdio, so an
//! MCP-capable agent uses its berth as its hands. The same tools are served
//! over streamable HTTP for each turn of a `command` agent (`http`), and
//! their arguments are checked in `tool_args`.
//!
//! Every tool is one proposed action through [`Engine::propose`] — the same
//! policy, the same log, the agent as the actor — exactly what `berth exec`
//! and the agent loop call. Nothing here decides: a tool call returns what the
//! engine made of the proposal — the output, or the id of the action waiting
//! for a person and how that person approves it, or the reason and stage of a
//! refusal. `action_status` lets the agent see what became of an action it
//! left pending.
//!
//! `list_files` is a `file_read` of a directory (the engine lists it through
//! the berth's path map) rather than a terminal `ls`: the same autonomy, rules
//! and scope as reading a file, and no shell an agent could abuse.
//!
//! Errors an agent can act on (an unknown agent, a berth that is down, an
//! unknown action) are tool errors (`isError`) with the engine's message,
//! which says what to do; the server keeps serving. stdout carries the
//! protocol only: logs go to stderr.
//!
//! Arguments are checked before anything is proposed (an empty command, a
//! NUL byte, a relative `cwd`, a `timeout_secs` outside 1..=86400, an empty
//! commit message or PR title): such a call is a tool error saying what to
//! pass instead, never an action waiting for a person. Every tool declares
//! one `outputSchema`, the `status`-tagged shape of its structured content
//! (executed, pending, refused, error). The text block is not the JSON
//! serialisation the specification suggests (a SHOULD, for clients without
//! structured content): it is what a model reads — a file verbatim, a
//! command's output unescaped, the words saying how a person approves an
//! action — and the structured content holds the same facts for programs.
//!
//! The protocol revisions are those rmcp knows but 2025-03-26, the only one
//! requiring servers to accept JSON-RPC batches (`wire` says why); the line
//! gate in `wire` answers parse errors, batches and malformed `tools/call`
//! params as JSON-RPC 2.0 asks. Host paths never reach the agent
//! (`frame_paths`).

mod frame_paths;
pub mod http;
mod review_tools;
mod tool_args;
mod wire;

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use berth_engine::{
    ActionParams, ActionRecord, ActionResult, AgentName, Engine, EngineError, Proposal,
    ProposeStatus, Proposed, StateDir,
};
use berth_policy::Action;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, JsonObject, ProtocolVersion, ServerCapabilities,
    ServerConfig,
};
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tool_args::{
    ActionStatusArgs, Checked, CommitArgs, ListFilesArgs, NoArgs, OpenPrArgs, PathArgs,
    RunCommandArgs, WriteFileArgs, accept,
};

#[derive(Debug, clap::Args)]
pub struct McpArgs {
    /// The agent whose berth the tools act in (`berth agent activate`, `berth up`).
    #[arg(long)]
    agent: String,
}

/// Runs the server until the client closes stdin.
pub fn run(state: Option<PathBuf>, args: McpArgs) -> anyhow::Result<u8> {
    init_logging();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    rt.block_on(serve(state, args))
}

/// Logs to stderr (stdout is the protocol); `RUST_LOG` overrides the level.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("berth=info,warn"));
    // A second initialisation only fails; there is none.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

async fn serve(state: Option<PathBuf>, args: McpArgs) -> anyhow::Result<u8> {
    // The server starts whatever the state: a broken setup is what every tool
    // call answers (as a tool error), so the agent can tell its person.
    let located = StateDir::locate(state.as_deref());
    let state_root = located.as_ref().map(|d| d.root().to_path_buf());
    let engine = match located {
        None => Err(
            "no berth state directory: pass --state DIR or set BERTH_HOME in the MCP server's command".to_string(),
        ),
        Some(dir) => crate::cli::open_engine(dir)
            .await
            .map(Arc::new)
            .map_err(|e| e.to_string()),
    };
    if let Ok(e) = &engine {
        // A request never waits for the WAL's checkpoint.
        e.store().checkpoint_in_background();
    }
    match &engine {
        Ok(e) => match e.agent(&args.agent).await {
            Ok(a) => tracing::info!(agent = %a.name, project = %a.project, "berth mcp serving"),
            Err(err) => tracing::warn!("{err}"),
        },
        Err(err) => tracing::warn!("{err}"),
    }
    let mut server = BerthMcp::new(engine.clone(), args.agent);
    server.state_root = state_root;
    let inflight = server.inflight.clone();
    let tools = server
        .tool_router
        .list_all()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    let (pipe, answers) = wire::gate(tokio::io::stdin(), tokio::io::stdout(), tools);
    let running = server
        .serve(pipe)
        .await
        .context("the MCP handshake failed")?;
    let quit = running.waiting().await;
    // rmcp's last answers reach stdout once it has dropped its pipe end.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), answers).await;
    // Actions already under way finish and are recorded, client or not
    // (rmcp drains the requests in flight when the input closes; the permits
    // also cover a handler it dropped, whose proposal goes on in its task).
    let _all = inflight.acquire_many(INFLIGHT_PERMITS).await;
    if let Ok(e) = &engine {
        e.close().await;
    }
    tracing::info!(reason = ?quit, "berth mcp stopped");
    Ok(0)
}

/// The tools of one agent's berth.
#[derive(Clone)]
pub struct BerthMcp {
    engine: Result<Arc<Engine>, String>,
    agent: String,
    /// The state directory on the host (hidden from the agent's answers).
    state_root: Option<PathBuf>,
    /// One permit per proposal under way: shutdown waits for them all.
    inflight: Arc<Semaphore>,
    tool_router: ToolRouter<Self>,
}

/// More proposals than can ever be under way at once.
const INFLIGHT_PERMITS: u32 = 1 << 16;

/// The `outputSchema` of every tool: its structured content, by `status`.
fn result_schema() -> Arc<JsonObject> {
    let schema = json!({
        "type": "object",
        "properties": {
            "status": {"type": "string", "enum": ["executed", "pending", "refused", "error"]},
            "action_id": {"type": "string", "description": "The action's id (action_status, berth approve)."},
            "succeeded": {"type": "boolean"},
            "diagnostic": {"type": ["string", "null"], "description": "Why an executed action failed."},
            "result": {"type": ["object", "null"], "description": "What the action did, by `kind` (terminal, file_read, file_write, git_commit, git_push, pr_open, ...)."},
            "stage": {"type": "string", "description": "The policy stage that decided."},
            "reason": {"type": "string"},
            "approve": {"type": "string", "description": "The command a person approves it with."},
            "deny": {"type": "string", "description": "The command a person denies it with."},
            "error": {"type": "string", "description": "What went wrong and what to do; nothing was proposed or it could not be."}
        },
        "required": ["status"],
        "oneOf": [
            {"properties": {"status": {"const": "executed"}}, "required": ["action_id", "succeeded", "diagnostic", "result"]},
            {"properties": {"status": {"const": "pending"}}, "required": ["action_id", "stage", "reason", "approve", "deny"]},
            {"properties": {"status": {"const": "refused"}}, "required": ["action_id", "stage", "reason"]},
            {"properties": {"status": {"const": "error"}}, "required": ["error"]}
        ]
    });
    match schema {
        Value::Object(o) => Arc::new(o),
        _ => Arc::new(JsonObject::new()),
    }
}

#[tool_router]
impl BerthMcp {
    pub fn new(engine: Result<Arc<Engine>, String>, agent: String) -> Self {
        BerthMcp {
            engine,
            agent,
            state_root: None,
            inflight: Arc::new(Semaphore::new(INFLIGHT_PERMITS as usize)),
            tool_router: Self::tool_router() + Self::review_tool_router(),
        }
    }

    /// Runs a shell command line in the agent's berth, as a proposed terminal action.
    #[tool(
        description = "Run a shell command line in your berth (the project worktree at /work). The command is a proposed action: berth's policy decides it segment by segment. Returns its exit code, stdout and stderr (saying when output was truncated); or, when a person must approve it, the action id and how they approve it (nothing ran yet: call action_status later); or, when refused, the reason and the policy stage.",
        output_schema = result_schema(),
        annotations(
            title = "Run a command",
            destructive_hint = true,
            open_world_hint = false
        )
    )]
    async fn run_command(
        &self,
        Parameters(a): Parameters<Checked<RunCommandArgs>>,
    ) -> CallToolResult {
        let a = match accept("run_command", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let params = ActionParams {
            cwd: a.cwd,
            timeout_secs: a.timeout_secs,
            description: a.description.filter(|d| !d.trim().is_empty()),
            ..ActionParams::default()
        };
        let r = self
            .propose(Action::Terminal { command: a.command }, params)
            .await;
        self.answer(r).await
    }

    /// Reads a file of the berth, as a proposed file_read action.
    #[tool(
        description = "Read a text file in your berth, as a proposed file_read action (policy: file_read autonomy, Read(...) rules, the project scope). Returns the content, or the pending action id and how a person approves it, or the refusal's reason and stage.",
        output_schema = result_schema(),
        annotations(title = "Read a file", read_only_hint = true, open_world_hint = false)
    )]
    async fn read_file(&self, Parameters(a): Parameters<Checked<PathArgs>>) -> CallToolResult {
        let a = match accept("read_file", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let r = self
            .propose(Action::FileRead { path: a.path }, ActionParams::default())
            .await;
        self.answer(r).await
    }

    /// Lists a directory of the berth, as a proposed file_read of the directory.
    #[tool(
        description = "List a directory in your berth: a proposed file_read of the directory (the same policy as reading a file; no shell). Returns one entry a line, sorted, with / after a directory and @ after a symlink.",
        output_schema = result_schema(),
        annotations(title = "List files", read_only_hint = true, open_world_hint = false)
    )]
    async fn list_files(
        &self,
        Parameters(a): Parameters<Checked<ListFilesArgs>>,
    ) -> CallToolResult {
        let a = match accept("list_files", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let path = a
            .path
            .unwrap_or_else(|| berth_policy::frame::WORK.to_string());
        let r = self
            .propose(Action::FileRead { path }, ActionParams::default())
            .await;
        self.answer(r).await
    }

    /// Writes a file of the berth, as a proposed file_write action.
    #[tool(
        description = "Write a whole text file in your berth, as a proposed file_write action (policy: file_write autonomy, Edit(...) path rules, the project scope). Returns the bytes written, or the pending action id and how a person approves it, or the refusal's reason and stage.",
        output_schema = result_schema(),
        annotations(
            title = "Write a file",
            destructive_hint = true,
            open_world_hint = false
        )
    )]
    async fn write_file(
        &self,
        Parameters(a): Parameters<Checked<WriteFileArgs>>,
    ) -> CallToolResult {
        let a = match accept("write_file", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let params = ActionParams {
            content: Some(a.content),
            ..ActionParams::default()
        };
        let r = self
            .propose(Action::FileWrite { path: a.path }, params)
            .await;
        self.answer(r).await
    }

    /// Commits the worktree's changes, as a proposed git_commit action.
    #[tool(
        description = "Commit every change in your worktree on your branch under your identity (a proposed git_commit action). When you hold a task, the commit is part of its delivery: a commit that fails returns the task.",
        output_schema = result_schema(),
        annotations(title = "Commit", destructive_hint = false, open_world_hint = false)
    )]
    async fn commit(&self, Parameters(a): Parameters<Checked<CommitArgs>>) -> CallToolResult {
        let a = match accept("commit", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let params = ActionParams {
            message: Some(a.message),
            ..ActionParams::default()
        };
        let r = self.propose_chain(|_| Ok(Action::GitCommit), params).await;
        self.answer(r).await
    }

    /// Pushes the agent's branch to the project's forge, as a proposed git_push.
    #[tool(
        description = "Push your branch to the project's forge, fast-forward only (a proposed git_push action; pushes need a person's approval unless your autonomy allows them).",
        output_schema = result_schema(),
        annotations(title = "Push", destructive_hint = false, open_world_hint = true)
    )]
    async fn push(&self, Parameters(a): Parameters<Checked<NoArgs>>) -> CallToolResult {
        if let Err(e) = accept("push", a) {
            return e;
        }
        let r = self
            .propose_chain(
                |agent| match &agent.branch {
                    Some(branch) => Ok(Action::GitPush {
                        branch: branch.clone(),
                    }),
                    None => Err(EngineError::NoBerth {
                        agent: agent.name.clone(),
                        project: agent.project.clone(),
                    }),
                },
                ActionParams::default(),
            )
            .await;
        self.answer(r).await
    }

    /// Opens a pull request from the agent's branch, as a proposed pr_open.
    #[tool(
        description = "Open a pull request from your pushed branch into the project's base branch (a proposed pr_open action). When a PR is already open for the same branch at the same head, it is returned (already_open) and no second one is opened.",
        output_schema = result_schema(),
        annotations(
            title = "Open a pull request",
            destructive_hint = false,
            open_world_hint = true
        )
    )]
    async fn open_pr(&self, Parameters(a): Parameters<Checked<OpenPrArgs>>) -> CallToolResult {
        let a = match accept("open_pr", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let params = ActionParams {
            title: Some(a.title),
            ..ActionParams::default()
        };
        let r = self.propose_chain(|_| Ok(Action::PrOpen), params).await;
        self.answer(r).await
    }

    /// What became of one of the agent's actions.
    #[tool(
        description = "What became of one of your actions (one that was pending): still pending, executed (with its output), refused or denied (with the reason).",
        output_schema = result_schema(),
        annotations(
            title = "Action status",
            read_only_hint = true,
            open_world_hint = false
        )
    )]
    async fn action_status(
        &self,
        Parameters(a): Parameters<Checked<ActionStatusArgs>>,
    ) -> CallToolResult {
        let a = match accept("action_status", a) {
            Ok(a) => a,
            Err(e) => return e,
        };
        let engine = match &self.engine {
            Ok(e) => e,
            Err(msg) => return tool_error(msg),
        };
        let r = match engine.action(&a.id).await {
            Ok(record) if record.agent != self.agent => tool_error(&format!(
                "action {} belongs to agent `{}`, not to you (`{}`)",
                record.id, record.agent, self.agent
            )),
            Ok(record) => render(&record.id, &record.propose_status(), &record),
            Err(e) => tool_error(&e.to_string()),
        };
        self.answer(r).await
    }
}

impl BerthMcp {
    /// `result` as the agent may see it: host paths (its worktree, the state
    /// directory) become frame paths or are hidden. Without a state there is
    /// no berth and no frame: the setup error names the path for the person.
    async fn answer(&self, mut result: CallToolResult) -> CallToolResult {
        let Ok(engine) = &self.engine else {
            return result;
        };
        let worktree = engine
            .agent(&self.agent)
            .await
            .ok()
            .and_then(|a| a.worktree);
        let paths = frame_paths::HostPaths::new(worktree.as_deref(), self.state_root.as_deref());
        for block in &mut result.content {
            if let ContentBlock::Text(text) = block {
                text.text = paths.to_frame(&text.text);
            }
        }
        if let Some(s) = &mut result.structured_content {
            paths.value_to_frame(s);
        }
        result
    }

    /// Proposes `action` as the agent and renders what the engine made of it.
    async fn propose(&self, action: Action, params: ActionParams) -> CallToolResult {
        let engine = match &self.engine {
            Ok(e) => e.clone(),
            Err(msg) => return tool_error(msg),
        };
        let agent = match AgentName::new(self.agent.as_str()) {
            Ok(a) => a,
            Err(e) => return tool_error(&e.to_string()),
        };
        let proposal = Proposal::by_agent(&agent, action).params(params);
        run_proposal(engine, proposal, self.inflight.clone()).await
    }

    /// Proposes a delivery step (commit, push, PR) for the task the agent holds.
    async fn propose_chain(
        &self,
        action: impl FnOnce(&berth_engine::Agent) -> Result<Action, EngineError>,
        params: ActionParams,
    ) -> CallToolResult {
        let engine = match &self.engine {
            Ok(e) => e.clone(),
            Err(msg) => return tool_error(msg),
        };
        let agent = match engine.agent(&self.agent).await {
            Ok(a) => a,
            Err(e) => return tool_error(&e.to_string()),
        };
        let action = match action(&agent) {
            Ok(a) => a,
            Err(e) => return tool_error(&e.to_string()),
        };
        let name = match agent.names() {
            Ok((name, _)) => name,
            Err(e) => return tool_error(&e.to_string()),
        };
        let proposal = Proposal::by_agent(&name, action)
            .params(params)
            .task(agent.task.clone());
        run_proposal(engine, proposal, self.inflight.clone()).await
    }
}

/// Runs the proposal on its own task, holding an in-flight permit: a client
/// that cancels its request or goes away must not leave an action
/// half-recorded as executing.
async fn run_proposal(
    engine: Arc<Engine>,
    proposal: Proposal,
    inflight: Arc<Semaphore>,
) -> CallToolResult {
    let kind = proposal.action.kind().to_string();
    let agent = proposal.agent.clone();
    let Ok(permit) = inflight.acquire_owned().await else {
        return tool_error("berth mcp is shutting down: nothing was proposed");
    };
    let handle = tokio::spawn(async move {
        let _permit = permit;
        let proposed = engine.propose(proposal, None).await?;
        let record = engine.action(&proposed.id).await?;
        Ok::<(Proposed, ActionRecord), EngineError>((proposed, record))
    });
    match handle.await {
        Ok(Ok((proposed, record))) => {
            tracing::info!(%agent, action = %kind, id = %proposed.id, status = proposed.status.name(), "proposed");
            render(&proposed.id, &proposed.status, &record)
        }
        Ok(Err(e)) => {
            tracing::info!(%agent, action = %kind, "{e}");
            tool_error(&e.to_string())
        }
        Err(e) => tool_error(&format!("the {kind} action's task failed: {e}")),
    }
}

fn tool_error(message: &str) -> CallToolResult {
    let mut r = CallToolResult::error(vec![ContentBlock::text(message)]);
    r.structured_content = Some(json!({ "status": "error", "error": message }));
    r
}

/// The tool result for an action: readable text for the model, the same
/// facts as structured content for programs.
fn render(id: &str, status: &ProposeStatus, record: &ActionRecord) -> CallToolResult {
    let stage = record.decision.stage.as_str();
    match status {
        ProposeStatus::Executed { outcome } => {
            let mut text = match &outcome.result {
                Some(r) => describe_result(r),
                None => String::new(),
            };
            if let Some(d) = &outcome.diagnostic {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!("failed: {d}"));
            }
            let structured = json!({
                "status": "executed",
                "action_id": id,
                "succeeded": outcome.succeeded,
                "diagnostic": outcome.diagnostic,
                "result": outcome.result.as_ref().map(result_json),
            });
            let mut r = if outcome.succeeded {
                CallToolResult::success(vec![ContentBlock::text(text)])
            } else {
                CallToolResult::error(vec![ContentBlock::text(text)])
            };
            r.structured_content = Some(structured);
            r
        }
        ProposeStatus::Pending { reason } => {
            let approve = format!("berth approve {id}");
            let text = format!(
                "PENDING: nothing ran yet. Action {id} ({what}) waits for a person (stage {stage}): {reason}.\n\
                 A person approves it with `{approve}` (or denies it with `berth deny {id}`), \
                 or on the approvals page of `berth serve`. Call action_status with this id to see what became of it.",
                what = record.action.kind(),
            );
            let mut r = CallToolResult::success(vec![ContentBlock::text(text)]);
            r.structured_content = Some(json!({
                "status": "pending",
                "action_id": id,
                "stage": stage,
                "reason": reason,
                "approve": approve,
                "deny": format!("berth deny {id}"),
            }));
            r
        }
        ProposeStatus::Refused { reason } => {
            let text = format!(
                "REFUSED: nothing ran. Action {id} ({what}) was refused at stage {stage}: {reason}",
                what = record.action.kind(),
            );
            let mut r = CallToolResult::error(vec![ContentBlock::text(text)]);
            r.structured_content = Some(json!({
                "status": "refused",
                "action_id": id,
                "stage": stage,
                "reason": reason,
            }));
            r
        }
    }
}

/// An executed action's result as text for the model.
fn describe_result(r: &ActionResult) -> String {
    match r {
        ActionResult::Terminal {
            exit_code,
            timed_out,
            stdout,
            stderr,
            stdout_truncated,
            stderr_truncated,
            duration_ms,
            oom_killed,
            container_restarted,
            ..
        } => {
            let mut t = if *timed_out {
                format!("timed out after {duration_ms} ms (exit code {exit_code})\n")
            } else {
                format!("exit code {exit_code} ({duration_ms} ms)\n")
            };
            if *oom_killed {
                t.push_str(
                    "the berth's memory limit killed a process of this command (out of memory)\n",
                );
            }
            if *container_restarted {
                t.push_str("the berth's container was restarted while this command ran: every command running in it was killed, and /tmp and $HOME are empty again\n");
            }
            for (name, body, truncated) in [
                ("stdout", stdout, stdout_truncated),
                ("stderr", stderr, stderr_truncated),
            ] {
                if body.is_empty() {
                    continue;
                }
                t.push_str(&format!("--- {name}"));
                if *truncated {
                    t.push_str(" (truncated: only the last part is kept)");
                }
                t.push_str(" ---\n");
                t.push_str(body);
                if !body.ends_with('\n') {
                    t.push('\n');
                }
            }
            t
        }
        ActionResult::FileRead { content, .. } => content.clone(),
        ActionResult::FileWrite { path, bytes, .. } => format!("wrote {bytes} bytes to {path}"),
        ActionResult::GitCommit {
            branch,
            commit,
            created,
        } => {
            if *created {
                format!("committed {commit} on {branch}")
            } else {
                format!("{commit} on {branch} was already committed by this action")
            }
        }
        ActionResult::GitPush { branch, commit } => format!("pushed {branch} at {commit}"),
        ActionResult::PrOpen {
            number,
            branch,
            base,
            already_open: true,
            ..
        } => format!(
            "PR #{number} ({branch} into {base}) is already open at this head: no second PR was opened"
        ),
        ActionResult::PrOpen {
            number,
            branch,
            base,
            ..
        } => format!("opened PR #{number}: {branch} into {base}"),
        ActionResult::GitMerge { target, commit, .. } => {
            format!("merged into {target} at {commit}")
        }
        ActionResult::PrComment { number, thread, .. } => {
            format!("commented on PR #{number} (thread {thread})")
        }
        ActionResult::PrResolveThread {
            number,
            thread,
            already_resolved,
            ..
        } => {
            let already = if *already_resolved { " already" } else { "" };
            format!("thread {thread} of PR #{number} is{already} resolved")
        }
        ActionResult::ContainerRemove { container } => match container {
            Some(c) => format!("removed container {c}; the next command starts a fresh one"),
            None => "there was no container to remove".to_string(),
        },
        ActionResult::NetworkConnect { host, port } => {
            format!("the connection to {host}:{port} may go through berth's proxy")
        }
        ActionResult::Parallelize { agent, of, .. } => {
            format!("agent {agent} created beside {of}")
        }
        ActionResult::RaiseMaxParallel { project, from, to } => {
            format!("max_parallel of {project} raised from {from} to {to}")
        }
        ActionResult::InstructionPatch { agent, bytes, .. } => {
            format!("instructions of {agent} replaced ({bytes} bytes)")
        }
    }
}

/// The result as the agent sees it: frame paths only (host paths stay with
/// the log).
fn result_json(r: &ActionResult) -> Value {
    let mut v = serde_json::to_value(r).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut v {
        map.retain(|k, _| !k.starts_with("host_"));
    }
    v
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for BerthMcp {
    /// Every revision rmcp knows but 2025-03-26: "MCP implementations ... MUST
    /// support receiving JSON-RPC batches" there, and 2025-06-18 removed
    /// batching. A client asking for 2025-03-26 is offered the newest
    /// revision with a handshake, as the lifecycle asks ("Otherwise, the
    /// server MUST respond with another protocol version it supports").
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Owned(
            ProtocolVersion::KNOWN_VERSIONS
                .iter()
                .filter(|v| **v != ProtocolVersion::V_2025_03_26)
                .cloned()
                .collect(),
        )
    }

    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("berth", env!("CARGO_PKG_VERSION")))
            .with_instructions(format!(
                "These tools act in the berth of agent `{}`: its worktree is /work. Every call is a proposed action that berth's policy decides; \
                 a pending one has not run until a person approves it (see action_status).",
                self.agent
            ))
    }
}
