//! Executing an approved action. Terminal commands run in the berth's
//! sandbox; file and git actions are performed by the runtime itself, under
//! its own restrictions (a push only of the agent's own branch, never forced;
//! a PR only from that branch). File actions are the sandbox's: it opens
//! beneath the mount a path is on and follows no link out of it
//! (`berth_sandbox::confined_files`). Every failure becomes an outcome with a diagnostic that
//! is never empty.

use std::sync::Arc;
use std::time::Duration;

use berth_policy::Action;
use berth_sandbox::{AccessEnforcement, ExecRequest, FileContent, Sandbox, WorkAccess};

use crate::Engine;
use crate::actions::{ActionRecord, ActionResult, CallerEnv, Outcome, OutputSink};
use crate::agents::Agent;
use crate::config::ProjectConfig;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};

impl Engine {
    /// Executes `record` with its project's `config` (as loaded for the
    /// decision); never fails: an error is a failed outcome.
    pub(crate) async fn execute(
        &self,
        record: &ActionRecord,
        agent: &Agent,
        config: &ProjectConfig,
        sandbox: Option<Arc<dyn Sandbox>>,
        sink: Option<OutputSink>,
        caller_env: Option<&CallerEnv>,
    ) -> Outcome {
        match self
            .try_execute(record, agent, config, sandbox, sink, caller_env)
            .await
        {
            Ok(o) => o,
            Err(e) => Outcome::failed(format!("{} failed: {e}", record.action.kind()), None),
        }
    }

    async fn try_execute(
        &self,
        record: &ActionRecord,
        agent: &Agent,
        config: &ProjectConfig,
        sandbox: Option<Arc<dyn Sandbox>>,
        sink: Option<OutputSink>,
        caller_env: Option<&CallerEnv>,
    ) -> Result<Outcome> {
        let no_berth = || EngineError::NoBerth {
            agent: agent.name.clone(),
            project: agent.project.clone(),
        };
        match &record.action {
            Action::Terminal { command } => {
                let sb = sandbox.ok_or_else(no_berth)?;
                self.run_terminal(record, config, sb.as_ref(), command, sink, caller_env)
                    .await
            }
            // The sandbox performs file actions, confined beneath the mount
            // the path is on; the engine never opens a worktree path itself.
            Action::FileRead { path } => {
                let sb = sandbox.ok_or_else(no_berth)?;
                let read = sb
                    .read_file(&file_frame_path(sb.as_ref(), record, path))
                    .await?;
                let (bytes, content) = match read.content {
                    FileContent::File(bytes) => (
                        bytes.len() as u64,
                        String::from_utf8_lossy(&bytes).into_owned(),
                    ),
                    FileContent::Listing(names) => (names.len() as u64, names),
                };
                Ok(Outcome::ok(ActionResult::FileRead {
                    path: read.frame_path,
                    host_path: read.host_path.display().to_string(),
                    bytes,
                    content,
                }))
            }
            Action::FileWrite { path } => {
                let sb = sandbox.ok_or_else(no_berth)?;
                let content = record.params.content.clone().unwrap_or_default();
                let written = sb
                    .write_file(
                        &file_frame_path(sb.as_ref(), record, path),
                        content.into_bytes(),
                    )
                    .await?;
                Ok(Outcome::ok(ActionResult::FileWrite {
                    path: written.frame_path,
                    host_path: written.host_path.display().to_string(),
                    bytes: written.bytes,
                }))
            }
            Action::GitCommit => self.exec_commit(record, agent, config).await,
            Action::GitPush { branch } => self.exec_push(record, agent, config, branch).await,
            Action::PrOpen => self.exec_pr_open(record, agent).await,
            Action::GitMerge { target } => self.exec_merge(record, target).await,
            Action::PrComment => self.exec_pr_comment(record, agent).await,
            Action::PrResolveThread => self.exec_pr_resolve_thread(record, agent).await,
            Action::ContainerRemove => {
                let container = self.remove_agent_container(agent).await?;
                Ok(Outcome::ok(ActionResult::ContainerRemove { container }))
            }
            // The egress proxy holds the connection and lets it through once
            // the action is approved: nothing more to run here.
            Action::NetworkConnect { host, port } => {
                Ok(Outcome::ok(ActionResult::NetworkConnect {
                    host: host.clone(),
                    port: *port,
                }))
            }
            Action::Parallelize => self.exec_parallelize(record).await,
            Action::RaiseMaxParallel => self.exec_raise_max_parallel(record).await,
            Action::InstructionPatch => self.exec_instruction_patch(record).await,
            other => Ok(Outcome::failed(
                format!(
                    "berth has no executor for `{}` actions in this version; nothing was done",
                    other.kind()
                ),
                None,
            )),
        }
    }

    async fn run_terminal(
        &self,
        record: &ActionRecord,
        config: &ProjectConfig,
        sb: &dyn Sandbox,
        command: &str,
        sink: Option<OutputSink>,
        caller_env: Option<&CallerEnv>,
    ) -> Result<Outcome> {
        let cwd = record
            .params
            .cwd
            .clone()
            .unwrap_or_else(|| sb.frame().project_root().to_string());
        let mut req = ExecRequest::shell(command);
        req.cwd = cwd.clone();
        // Handed over by another process: its command starts as it would
        // have there.
        req.base_env = caller_env.and_then(|env| sb.environment_from(env.vars()));
        // devcontainer.json's remoteEnv: each command's own variables.
        if let Some(d) = &config.devcontainer {
            req.env.extend(d.remote_env.clone());
        }
        req.timeout = Duration::from_secs(
            record
                .params
                .timeout_secs
                .unwrap_or(config.sandbox.timeout_secs),
        );
        req.output_cap = config.sandbox.output_cap_bytes;
        // Names the exec, so `berth cancel` finds it from any process.
        req.action = Some(record.id.clone());
        // The sandbox translates frame paths itself (after the decision); this
        // is its host form, so both forms go on record.
        let prepared = sb.prepare(&req)?;
        let host_command = match &prepared.program {
            berth_sandbox::Program::Shell(line) => line.clone(),
            berth_sandbox::Program::Argv(argv) => argv.join(" "),
        };
        let host_cwd = prepared.cwd.display().to_string();
        // Every terminal action sets the access it needs: the sandbox is
        // shared by everything this process runs in the berth.
        let access = if record.params.read_only {
            WorkAccess::ReadOnly
        } else {
            WorkAccess::ReadWrite
        };
        let access_note = match sb.set_work_access(access).await? {
            AccessEnforcement::Enforced => None,
            AccessEnforcement::NotEnforced(why) => Some(why),
        };
        // Cancelled while its berth was set up: it does not start (a cancel
        // after this point finds the exec by its action and kills it).
        if let Some(by) = self.cancel_requested_by(&record.id).await? {
            return Ok(Outcome::failed(
                format!("cancelled by {by} before its command started"),
                None,
            ));
        }
        // What was put on record is what runs: translated once.
        let out = sb.exec_prepared(req, prepared, sink).await?;
        let exit_code = out.status.code();
        let result = ActionResult::Terminal {
            command: command.to_string(),
            host_command,
            cwd,
            host_cwd,
            exit_code,
            timed_out: out.timed_out,
            stdout: String::from_utf8_lossy(&out.stdout.bytes).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr.bytes).into_owned(),
            stdout_truncated: out.stdout.truncated,
            stderr_truncated: out.stderr.truncated,
            duration_ms: u64::try_from(out.duration.as_millis()).unwrap_or(u64::MAX),
            access_note,
            oom_killed: out.oom_killed,
            container_restarted: out.container_restarted,
        };
        self.record_exec_events(record, sb, command, &out, config.sandbox.memory_mb)
            .await;
        let timeout_secs = record
            .params
            .timeout_secs
            .unwrap_or(config.sandbox.timeout_secs);
        if out.timed_out && out.container_restarted {
            return Ok(Outcome::failed(
                format!(
                    "timed out after {timeout_secs} s; its processes outlived the kill, so berth restarted the berth's container: every other command running in this berth was killed too (event {})",
                    kind::CONTAINER_RESTARTED
                ),
                Some(result),
            ));
        }
        if out.timed_out {
            return Ok(Outcome::failed(
                format!("timed out after {timeout_secs} s; the whole process tree was killed"),
                Some(result),
            ));
        }
        if out.container_restarted {
            return Ok(Outcome::failed(
                format!(
                    "killed: the berth's container was restarted while this command ran, which ends every command in it (berth does that when a timed-out command outlives its kill: see event {})",
                    kind::CONTAINER_RESTARTED
                ),
                Some(result),
            ));
        }
        let oom = format!(
            "the berth's memory limit killed a process of this command (out of memory; sandbox.memory_mb = {})",
            config.sandbox.memory_mb
        );
        if out.oom_killed && out.status.success() {
            let mut o = Outcome::ok(result);
            o.diagnostic = Some(format!("{oom}, although the command exited 0"));
            return Ok(o);
        }
        if !out.status.success() {
            let tail = last_line(&out.stderr.bytes).or_else(|| last_line(&out.stdout.bytes));
            let what = match out.status {
                berth_sandbox::ExitStatus::Exited(code) if out.oom_killed => {
                    format!("{oom}; it exited with code {code}")
                }
                _ if out.oom_killed => format!(
                    "killed by the berth's memory limit (out of memory; sandbox.memory_mb = {})",
                    config.sandbox.memory_mb
                ),
                berth_sandbox::ExitStatus::Signaled(s) => format!("killed by signal {s}"),
                _ if out.status.not_found() => "exited with 127 (command not found)".to_string(),
                _ if out.status.not_executable() => "exited with 126 (not executable)".to_string(),
                _ => format!("exited with code {exit_code}"),
            };
            return Ok(Outcome::failed(
                match tail {
                    Some(t) => format!("{what}: {t}"),
                    None => what,
                },
                Some(result),
            ));
        }
        Ok(Outcome::ok(result))
    }
}

impl Engine {
    /// Puts on the log what a command's outcome alone would not show others:
    /// a restart of the container (every command in it died) and an
    /// out-of-memory kill. A failure to record is logged, not the command's.
    async fn record_exec_events(
        &self,
        record: &ActionRecord,
        sb: &dyn Sandbox,
        command: &str,
        out: &berth_sandbox::ExecOutcome,
        memory_mb: u64,
    ) {
        let mut events = Vec::new();
        if out.container_restarted && out.timed_out {
            events.push((
                kind::CONTAINER_RESTARTED,
                serde_json::json!({
                    "why": "a timed-out command outlived its kill",
                    "command": command,
                    "mode": sb.kind().as_str(),
                    "effect": "every command running in the berth was killed",
                }),
            ));
        }
        if out.oom_killed {
            events.push((
                kind::COMMAND_OOM_KILLED,
                serde_json::json!({
                    "command": command,
                    "exit_code": out.status.code(),
                    "memory_mb": memory_mb,
                }),
            ));
        }
        if events.is_empty() {
            return;
        }
        let system = Actor::system();
        let result: Result<()> = async {
            let mut tx = self.store.write("recording a command's end").await?;
            for (event, payload) in events {
                emit(
                    &mut tx,
                    NewEvent::new(event, &system)
                        .project(&record.project)
                        .agent(&record.agent)
                        .task(record.task.as_deref())
                        .action(&record.id)
                        .payload(payload),
                )
                .await?;
            }
            tx.commit()
                .await
                .map_err(EngineError::store("recording a command's end"))
        }
        .await;
        if let Err(e) = result {
            tracing::warn!(action = %record.id, error = %e, "recording a command's end failed");
        }
    }
}

fn last_line(bytes: &[u8]) -> Option<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(300).collect())
}

/// A file action's path in the frame: relative paths against the action's
/// cwd, normalised lexically (as the decision judged it).
pub(crate) fn file_frame_path(sb: &dyn Sandbox, record: &ActionRecord, path: &str) -> String {
    let root = sb.frame().project_root();
    let cwd = record.params.cwd.as_deref().unwrap_or(root);
    berth_policy::scope::normalize(cwd, path)
}
