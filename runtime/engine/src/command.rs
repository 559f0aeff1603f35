//! The `command` agent (issue 18): any agent CLI as a berth agent. For each
//! prompt delivered from its queue, berth starts the program the person
//! gave (`berth agent activate … --impl command --command '…'`), confined
//! like a runner exec, and the session runs until it exits.
//!
//! - **Confinement.** The program runs through the runner's exec shim in a
//!   runner of its own opened from the agent's berth (a runner berth's, or
//!   beside a mounted berth's container, on the host): the berth's uid,
//!   its home and private `/tmp`, `/work` bound read-only (it changes
//!   files only through berth's tools, as proposed actions), berth's state
//!   directory not in its mount tree. Its network: with `[agent]
//!   model_hosts`, only those hosts, through berth's egress proxy on its
//!   runner's loopback (`egress_serving.rs`'s `ModelHostsGate`); without
//!   it, open, and `activate` says so.
//! - **The prompt.** Written beneath the berth's private `/tmp` through
//!   [`ConfinedFiles`] (never through a link the agent planted), at
//!   `/tmp/berth-prompt-<id>.md`: `{prompt_file}`. `{prompt}` is the text,
//!   `{task}` the task, `{session_id}` the session, `{workdir}` `/work`.
//! - **Tools.** A template naming `{mcp_config}` or `{mcp_url}` gets an MCP
//!   endpoint for the turn, served outside the confinement by the binary
//!   (`tool_endpoint.rs`): `{mcp_url}` is its address, `{mcp_config}` a
//!   file beside the prompt (`/tmp/berth-mcp-<id>.json`, mode 0600, the
//!   berth's uid's) in Claude Code's `--mcp-config` format holding the
//!   turn's bearer token, which `BERTH_MCP_URL` and `BERTH_MCP_TOKEN` also
//!   carry in the program's environment. The token binds the agent; the
//!   endpoint closes when the program exits.
//! - **Acceptance.** The prompt is acknowledged once the program ran (its
//!   exec returned); a failure to start it puts the prompt back in the
//!   queue. A crash of berth mid-turn leaves the prompt unacknowledged: the
//!   next turn delivers it again (at least once).
//! - **Bounds.** A turn's deadline (`[agent] turn_timeout_secs`) kills the
//!   program's process tree; its output is capped, and the event keeps
//!   only the tail. Its output is also written, as it arrives, to the
//!   session's directory in berth's state (`session_output.rs`), bounded.
//! - **A crash of berth.** The program dies with the berth process that
//!   started it: its exec shim has berth as its parent-death signal's
//!   source and is the first process of the program's PID namespace, so
//!   the kernel kills the whole tree. The output written until then stays
//!   in the session's directory; the prompt, never acknowledged, is
//!   delivered again. A program that fails or times out counts toward the
//!   circuit breaker (`breaker.rs`): at the threshold the agent is paused
//!   and its prompts wait until `berth agent resume`.

use std::collections::BTreeMap;
use std::time::Duration;

use berth_sandbox::confined_files::{ConfinedFiles, FileMount, LinkTargets};
use berth_sandbox::exec::{ExecRequest, ExitStatus};
use berth_sandbox::{AccessEnforcement, WorkAccess};
use serde::Serialize;

use crate::agents::{Agent, AgentImpl};
use crate::config::{BerthMode, NetworkMode};
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::{now_ms, short};
use crate::prompts::Reservation;
use crate::session_output::{TurnFiles, TurnOutputWriter, keep_output, turn_files};
use crate::tool_endpoint::ToolEndpoint;
use crate::{AgentName, Engine};

/// The placeholders a command template may use.
pub const PLACEHOLDERS: [&str; 7] = [
    "{prompt}",
    "{prompt_file}",
    "{task}",
    "{workdir}",
    "{session_id}",
    "{mcp_config}",
    "{mcp_url}",
];

/// The program's environment variables naming its turn's MCP endpoint.
pub const MCP_URL_ENV: &str = "BERTH_MCP_URL";
pub const MCP_TOKEN_ENV: &str = "BERTH_MCP_TOKEN";

/// Whether a template asks for berth's MCP tools.
fn takes_tools(template: &[String]) -> bool {
    template
        .iter()
        .any(|a| a.contains("{mcp_config}") || a.contains("{mcp_url}"))
}

/// Bytes of each stream an exec keeps; beyond it, the tail.
const OUTPUT_CAP: usize = 256 * 1024;

/// Bytes of each stream's tail the `session.turn_ended` event keeps.
pub const EVENT_TAIL: usize = 4 * 1024;

/// What the agent process is told about its network until the proxy lands.
pub const OPEN_NETWORK_NOTE: &str = "the agent's program runs with open network unless the project's \
     berth.toml names the model's hosts (`[agent] model_hosts`): then it reaches only those, through berth's proxy";

/// One turn of a `command` agent.
#[derive(Debug, Clone, Serialize)]
pub struct Turn {
    pub session: String,
    pub prompt: String,
    pub attempt: i64,
    /// None: killed by a signal (its deadline, or the out-of-memory killer).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// The tail of its output ([`EVENT_TAIL`] bytes at most, each stream).
    pub stdout_tail: String,
    pub stderr_tail: String,
    /// More output was written than the tail holds.
    pub truncated: bool,
    /// Where the turn's output is kept, as it arrived, in berth's state
    /// (`<state>/sessions/<session>/`): the first
    /// [`TURN_OUTPUT_CAP`](crate::session_output::TURN_OUTPUT_CAP) bytes of
    /// each stream.
    pub output: TurnFiles,
    /// More output was written than those files keep.
    pub output_truncated: bool,
    pub duration_ms: u64,
}

/// Checks a command template: a program and only known placeholders.
pub fn check_template(argv: &[String]) -> Result<()> {
    let invalid = |why: String| EngineError::Invalid {
        what: "agent command",
        value: argv.join(" "),
        why,
    };
    if argv.first().is_none_or(|p| p.trim().is_empty()) {
        return Err(invalid("it names no program".into()));
    }
    for arg in argv {
        let mut rest = arg.as_str();
        while let Some(at) = rest.find('{') {
            let tail = &rest[at..];
            let Some(end) = tail.find('}') else { break };
            let name = &tail[..=end];
            if name.len() > 2
                && name[1..name.len() - 1]
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_')
                && !PLACEHOLDERS.contains(&name)
            {
                return Err(invalid(format!(
                    "unknown placeholder `{name}`: use {}",
                    PLACEHOLDERS.join(", ")
                )));
            }
            rest = &tail[end + 1..];
        }
    }
    Ok(())
}

/// The last `max` bytes of `bytes` as text (cut on a character boundary).
fn tail(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(max)..]);
    text.trim_start_matches('\u{FFFD}').to_string()
}

impl Engine {
    /// Sets the program of `command` agent `agent`: its argv template
    /// (`agent.command_set`).
    pub async fn set_agent_command(
        &self,
        agent: &str,
        argv: Vec<String>,
        actor: &Actor,
    ) -> Result<Agent> {
        let a = self.agent(agent).await?;
        if a.implementation != AgentImpl::Command {
            return Err(EngineError::WrongStatus {
                what: "agent",
                id: a.name,
                status: a.implementation.as_str().into(),
                rule: "only a `command` agent has a program (`--impl command`)".into(),
            });
        }
        check_template(&argv)?;
        let json = serde_json::to_string(&argv)
            .map_err(|e| EngineError::corrupt("setting an agent's command", e))?;
        let op = "setting an agent's command";
        let mut tx = self.store.write(op).await?;
        sqlx::query("UPDATE agents SET command = $1, updated_at = $2 WHERE name = $3")
            .bind(&json)
            .bind(now_ms())
            .bind(&a.name)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store(op))?;
        emit(
            &mut tx,
            NewEvent::new(kind::AGENT_COMMAND_SET, actor)
                .project(&a.project)
                .agent(&a.name)
                .payload(serde_json::json!({ "argv": argv, "network": "open" })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        self.agent(&a.name).await
    }

    /// The program of `command` agent `agent` (None when not set).
    pub async fn agent_command(&self, agent: &str) -> Result<Option<Vec<String>>> {
        let a = self.agent(agent).await?;
        let json: Option<String> = sqlx::query_scalar("SELECT command FROM agents WHERE name = $1")
            .bind(&a.name)
            .fetch_one(self.store.pool())
            .await
            .map_err(EngineError::store("reading an agent's command"))?;
        json.map(|j| {
            serde_json::from_str(&j)
                .map_err(|e| EngineError::corrupt("reading an agent's command", e))
        })
        .transpose()
    }

    /// Delivers the next deliverable prompt of `command` agent `agent` to
    /// a run of its program, and waits for the program to end. None: no
    /// prompt is deliverable now.
    pub async fn run_command_turn(&self, agent: &AgentName) -> Result<Option<Turn>> {
        let a = self.agent(agent).await?;
        let template =
            self.agent_command(&a.name)
                .await?
                .ok_or_else(|| EngineError::WrongStatus {
                    what: "agent",
                    id: a.name.clone(),
                    status: a.implementation.as_str().into(),
                    rule:
                        "it has no program: `berth agent activate NAME --project P --impl command \
                       --command '…'`"
                            .into(),
                })?;
        let (Some(_), Some(_)) = (a.berth, a.worktree.as_ref()) else {
            return Err(EngineError::NoBerth {
                agent: a.name.clone(),
                project: a.project.clone(),
            });
        };
        let Some(r) = self.reserve_prompt(&a.name).await? else {
            return Ok(None);
        };
        let outcome = self.command_turn(&a, &template, &r).await;
        let turn = match outcome {
            Ok(turn) => turn,
            Err(e) => {
                // Not accepted: back to its place in the queue.
                if let Err(again) = self.release_prompt(&r.token, &e.to_string()).await {
                    tracing::warn!(error = %again, "a prompt whose program did not start was not released");
                }
                return Err(e);
            }
        };
        match self.acknowledge_prompt(&r.token).await {
            Ok(_) => {}
            // Its task was archived or deleted while the program ran: the
            // purge won, the session is over; the turn is still recorded.
            Err(EngineError::WrongStatus { status, .. }) => {
                tracing::warn!(prompt = %r.prompt.id, %status, "a prompt's turn ended after its task's purge");
            }
            Err(e) => return Err(e),
        }
        let _ = self.finish_turn(&r.session.id, false).await?;
        let op = "recording a turn's end";
        let mut tx = self.store.write(op).await?;
        // The circuit breaker: a program that fails or hangs counts as the
        // agent's failure; one that exits 0 resets the count.
        if turn.exit_code == Some(0) && !turn.timed_out {
            crate::breaker::reset(&mut tx, &a.name).await?;
        } else {
            let why = match turn.exit_code {
                _ if turn.timed_out => "its program timed out".to_string(),
                Some(c) => format!("its program exited {c}"),
                None => "its program was killed".to_string(),
            };
            crate::breaker::count_failure(&mut tx, self, &a.name, &a.project, &why).await?;
        }
        emit(
            &mut tx,
            NewEvent::new(kind::SESSION_TURN_ENDED, &Actor::agent(&a.name))
                .project(&a.project)
                .agent(&a.name)
                .task(Some(&r.session.task))
                .payload(serde_json::json!({
                    "session": turn.session,
                    "prompt": turn.prompt,
                    "exit_code": turn.exit_code,
                    "timed_out": turn.timed_out,
                    "stdout_tail": turn.stdout_tail,
                    "stderr_tail": turn.stderr_tail,
                    "truncated": turn.truncated,
                    "output": turn.output,
                    "output_truncated": turn.output_truncated,
                    "duration_ms": turn.duration_ms,
                })),
        )
        .await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(Some(turn))
    }

    /// Starts the program for reservation `r` in a runner of its own and
    /// waits for it.
    async fn command_turn(&self, a: &Agent, template: &[String], r: &Reservation) -> Result<Turn> {
        let (mut config, _) = self.load_project_files(&a.project)?;
        let worktree = a.worktree.clone().ok_or_else(|| EngineError::NoBerth {
            agent: a.name.clone(),
            project: a.project.clone(),
        })?;
        // The program's own runner: the berth's, with the model's hosts
        // through berth's proxy, or open network when none are named.
        let model_hosts = config.agent.model_hosts.clone();
        let model_proxy = if model_hosts.is_empty() {
            config.sandbox.network.mode = NetworkMode::Open;
            None
        } else {
            config.sandbox.network.mode = NetworkMode::Allowlist;
            Some(self.model_hosts_hook(&a.project, &a.name, &model_hosts)?)
        };
        config.sandbox.network.legacy = None;
        let uid = match a.berth {
            Some(BerthMode::Mounted) if berth_sandbox::identity::current_uid() == 0 => {
                // Beside the container, as its uid: the worktree's owner.
                self.uid_for_open(a, BerthMode::Mounted, &config).await?
            }
            Some(BerthMode::Mounted) => None,
            _ => self.uid_for_open(a, BerthMode::Runner, &config).await?,
        };
        let open_as = crate::berths::OpenAs {
            uid,
            claim_home: false,
        };
        let private_tmp = self.berth_places(a, worktree.clone()).private_tmp;
        let mut spec = self.berth_spec(a, BerthMode::Runner, worktree, &config, open_as);
        // The project's gate decides the agent's proposals; the program
        // itself reaches only the model's hosts.
        if let (Some(hook), berth_sandbox::provider::BerthBackend::Runner(runner)) =
            (model_proxy, &mut spec.backend)
        {
            runner.config.confinement.egress = Some(hook);
        }
        let sandbox = self.provider.attach(&spec).await?;
        match sandbox.set_work_access(WorkAccess::ReadOnly).await? {
            AccessEnforcement::Enforced => {}
            other => {
                return Err(EngineError::Sandbox(
                    berth_sandbox::SandboxError::InvalidConfig(format!(
                        "the program's /work cannot be made read-only ({other:?}): not started"
                    )),
                ));
            }
        }
        // The prompt (and the tools' configuration), beneath the berth's
        // private /tmp.
        let mut files = ConfinedFiles::new(
            vec![FileMount {
                frame: "/tmp".to_string(),
                host: private_tmp,
                writable: true,
            }],
            LinkTargets::Frame,
        );
        if let Some(uid) = open_as.uid {
            files = files.with_owner(uid, uid);
        }
        let prompt_file = format!("/tmp/berth-prompt-{}.md", short(&r.prompt.id));
        write_confined(files.clone(), &prompt_file, r.prompt.body.as_bytes()).await?;

        let endpoint = if takes_tools(template) {
            let endpoints = self
                .tool_endpoints()
                .ok_or_else(|| EngineError::ToolEndpoint {
                    agent: a.name.clone(),
                    why:
                        "this berth process serves no MCP endpoint (run the turn with the `berth` \
                          binary: `berth agent turn`, `berth serve`)"
                            .into(),
                })?;
            let (name, _) = a.names()?;
            Some(endpoints.open(&name).await?)
        } else {
            None
        };
        let turn = self
            .run_program(
                a,
                template,
                r,
                sandbox.as_ref(),
                &config,
                &files,
                &prompt_file,
                endpoint.as_deref(),
            )
            .await;
        if let Some(endpoint) = endpoint {
            endpoint.close().await;
        }
        turn
    }

    /// Runs the program of a turn whose prompt is at `prompt_file`, its
    /// tools served at `endpoint`.
    #[allow(clippy::too_many_arguments)]
    async fn run_program(
        &self,
        a: &Agent,
        template: &[String],
        r: &Reservation,
        sandbox: &dyn berth_sandbox::Sandbox,
        config: &crate::ProjectConfig,
        files: &ConfinedFiles,
        prompt_file: &str,
        endpoint: Option<&dyn ToolEndpoint>,
    ) -> Result<Turn> {
        let mut env: BTreeMap<String, String> = config
            .agent
            .env
            .pass
            .iter()
            .filter_map(|name| std::env::var(name).ok().map(|v| (name.clone(), v)))
            .collect();
        let mut mcp_config = String::new();
        if let Some(endpoint) = endpoint {
            mcp_config = format!("/tmp/berth-mcp-{}.json", short(&r.prompt.id));
            let body = crate::tool_endpoint::mcp_config_json(endpoint);
            write_confined(
                files.clone().with_file_mode(0o600),
                &mcp_config,
                body.as_bytes(),
            )
            .await?;
            env.insert(MCP_URL_ENV.into(), endpoint.url().into());
            env.insert(MCP_TOKEN_ENV.into(), endpoint.bearer_token().into());
        }
        let mcp_url = endpoint.map(|e| e.url().to_string()).unwrap_or_default();
        let fill = |arg: &str| {
            arg.replace("{prompt_file}", prompt_file)
                .replace("{mcp_config}", &mcp_config)
                .replace("{mcp_url}", &mcp_url)
                .replace("{prompt}", &r.prompt.body)
                .replace("{task}", &r.session.task)
                .replace("{session_id}", &r.session.id)
                .replace("{workdir}", berth_policy::frame::WORK)
        };
        let argv: Vec<String> = template.iter().map(|a| fill(a)).collect();
        let mut request = ExecRequest::argv(argv);
        request.cwd = berth_policy::frame::WORK.to_string();
        request.env = env;
        request.timeout = Duration::from_secs(config.agent.turn_timeout_secs.max(1));
        request.output_cap = OUTPUT_CAP;
        // Its output, kept in the session's directory as it arrives.
        let output = turn_files(&self.state, &r.session.id, &r.prompt.id, r.attempt)?;
        let writer = {
            let (state, output) = (self.state.clone(), output.clone());
            tokio::task::spawn_blocking(move || TurnOutputWriter::create(&state, &output))
                .await
                .map_err(EngineError::interrupted("creating a turn's output files"))??
        };
        {
            let op = "recording a turn's start";
            let mut tx = self.store.write(op).await?;
            emit(
                &mut tx,
                NewEvent::new(kind::SESSION_TURN_STARTED, &Actor::system())
                    .project(&a.project)
                    .agent(&a.name)
                    .task(Some(&r.session.task))
                    .payload(serde_json::json!({
                        "session": r.session.id,
                        "prompt": r.prompt.id,
                        "program": template.first(),
                        "network": if config.agent.model_hosts.is_empty() { "open" } else { "model_hosts" },
                        "tools": endpoint.map(|e| e.url()),
                        "output": &output,
                    })),
            )
            .await?;
            tx.commit().await.map_err(EngineError::store(op))?;
        }
        let (sink, chunks) = berth_sandbox::exec::output_channel();
        let keeper = keep_output(writer, chunks);
        let out = sandbox.exec(request, Some(sink)).await;
        // The exec dropped its sink: the keeper has written everything.
        let writer = keeper
            .await
            .map_err(EngineError::interrupted("keeping a turn's output"))?;
        let out = out?;
        let exit_code = match out.status {
            ExitStatus::Exited(c) => Some(c),
            ExitStatus::Signaled(_) => None,
        };
        Ok(Turn {
            session: r.session.id.clone(),
            prompt: r.prompt.id.clone(),
            attempt: r.attempt,
            exit_code,
            timed_out: out.timed_out,
            truncated: out.stdout.total > EVENT_TAIL as u64 || out.stderr.total > EVENT_TAIL as u64,
            stdout_tail: tail(&out.stdout.bytes, EVENT_TAIL),
            stderr_tail: tail(&out.stderr.bytes, EVENT_TAIL),
            output,
            output_truncated: writer.truncated(),
            duration_ms: u64::try_from(out.duration.as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// Writes `body` at `frame_path` through `files`, off the async threads.
async fn write_confined(files: ConfinedFiles, frame_path: &str, body: &[u8]) -> Result<()> {
    let (path, body) = (frame_path.to_string(), body.to_vec());
    tokio::task::spawn_blocking(move || files.write(&path, &body))
        .await
        .map_err(EngineError::interrupted("writing a turn's file"))?
        .map_err(berth_sandbox::SandboxError::from)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split(' ').map(str::to_string).collect()
    }

    #[test]
    fn a_template_names_a_program_and_only_known_placeholders() {
        assert!(check_template(&argv("claude -p {prompt_file} --resume {session_id}")).is_ok());
        assert!(check_template(&argv("sh -c {prompt}")).is_ok());
        assert!(check_template(&[]).is_err());
        let unknown = check_template(&argv("x {promt}")).unwrap_err().to_string();
        assert!(
            unknown.contains("unknown placeholder `{promt}`"),
            "{unknown}"
        );
        assert!(check_template(&argv("claude --mcp-config {mcp_config}")).is_ok());
        assert!(takes_tools(&argv("codex -c url={mcp_url}")));
        assert!(!takes_tools(&argv("sh -c {prompt}")));
        // JSON braces are not placeholders.
        assert!(check_template(&argv(r#"x {"a":1}"#)).is_ok());
    }

    #[test]
    fn the_tail_is_bounded_and_cut_on_a_character() {
        let t = tail("é".repeat(10).as_bytes(), 5);
        assert!(t.len() <= 5 && t.chars().all(|c| c == 'é'), "{t:?}");
        assert_eq!(tail(b"abc", 10), "abc");
    }
}
