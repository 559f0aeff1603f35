//! Hooks: per-project commands run on events (`[[hooks]]` in `berth.toml`).
//!
//! A hook runs on the host, outside every berth — it is the person's own
//! automation, written in a file agents cannot touch — with the event as
//! JSON on stdin, in the project's configuration directory, under the
//! runner's process-tree control (a clean environment, a deadline that kills
//! the whole tree, capped output). A hook that fails or times out is logged
//! (`hook.failed`) and never blocks what fired it. Hooks run after the
//! transaction that recorded their event commits; a crash between the two
//! means a resumed pipeline may run a hook again (at least once, never lost
//! silently).

use std::collections::BTreeMap;
use std::time::Duration;

use berth_sandbox::{ExecOutcome, ExecRequest, Runner, RunnerConfig, Sandbox};

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, Event, EventFilter, NewEvent, emit, kind};

/// The output kept of a hook or generator, per stream.
const HOST_OUTPUT_CAP: usize = 256 * 1024;

impl Engine {
    /// Runs `command` on the host in the project's configuration directory,
    /// with `stdin` and `env`, killed with its whole tree after `timeout`.
    pub(crate) async fn run_host_command(
        &self,
        project: &str,
        command: &str,
        stdin: Vec<u8>,
        env: BTreeMap<String, String>,
        timeout: Duration,
    ) -> Result<ExecOutcome> {
        let dir = self.state.project_dir(project);
        let mut config = RunnerConfig::new(&dir, &dir);
        // The person's own automation (notifications, generators): it keeps
        // the network; the rest of the runner's confinement holds.
        config.confinement.network = berth_sandbox::runner::Network::Open;
        let runner = Runner::new(config)?;
        // The command goes in a script file, run from the project's
        // directory, which the runner's exec shows at `/work`.
        let scripts = dir.join("run");
        std::fs::create_dir_all(&scripts).map_err(EngineError::io("creating", &scripts))?;
        // Named relative to the working directory: its host path is not
        // visible inside the exec.
        let name = format!("run/{}.sh", crate::ids::new_id());
        let script = dir.join(&name);
        std::fs::write(&script, command).map_err(EngineError::io("writing", &script))?;
        let mut req = ExecRequest::argv(["sh".to_string(), name]);
        req.cwd = berth_policy::frame::WORK.to_string();
        req.stdin = Some(stdin);
        req.env = env;
        req.timeout = timeout;
        req.output_cap = HOST_OUTPUT_CAP;
        let out = runner.exec(req, None).await;
        if let Err(e) = std::fs::remove_file(&script) {
            tracing::debug!(path = %script.display(), error = %e, "a host command's script was not removed");
        }
        Ok(out?)
    }

    /// Runs the project's hooks for each event in `ids` (in order). Never
    /// fails: a failing hook is logged.
    pub(crate) async fn fire_hooks(&self, project: &str, ids: &[i64]) {
        if ids.is_empty() {
            return;
        }
        let Ok((config, _)) = self.load_project_files(project) else {
            tracing::warn!(
                project,
                "hooks skipped: the project's berth.toml cannot be read"
            );
            return;
        };
        if config.hooks.is_empty() {
            return;
        }
        for id in ids {
            let event = match self.event_by_id(*id).await {
                Ok(Some(e)) => e,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(id, error = %e, "hooks skipped: the event cannot be read");
                    continue;
                }
            };
            for hook in config
                .hooks
                .iter()
                .filter(|h| h.event == event.kind || h.event == "*")
            {
                if let Err(why) = self
                    .run_hook(project, &hook.command, hook.timeout_secs, &event)
                    .await
                {
                    tracing::warn!(project, event = %event.kind, command = %hook.command, %why, "hook failed");
                    if let Err(e) = self
                        .record_hook_failure(project, &event, &hook.command, &why)
                        .await
                    {
                        tracing::warn!(error = %e, "could not record a hook's failure");
                    }
                }
            }
        }
    }

    /// One hook; `Err` says why it failed.
    async fn run_hook(
        &self,
        project: &str,
        command: &str,
        timeout_secs: u64,
        event: &Event,
    ) -> std::result::Result<(), String> {
        let stdin = serde_json::to_vec(event).map_err(|e| e.to_string())?;
        let mut env = BTreeMap::new();
        env.insert("BERTH_EVENT".to_string(), event.kind.clone());
        env.insert("BERTH_PROJECT".to_string(), project.to_string());
        if let Some(t) = &event.task {
            env.insert("BERTH_TASK".to_string(), t.clone());
        }
        let out = self
            .run_host_command(
                project,
                command,
                stdin,
                env,
                Duration::from_secs(timeout_secs.max(1)),
            )
            .await
            .map_err(|e| e.to_string())?;
        if out.timed_out {
            return Err(format!(
                "timed out after {timeout_secs} s; its process tree was killed"
            ));
        }
        if !out.status.success() {
            let tail = String::from_utf8_lossy(&out.stderr.bytes)
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(|l| format!(": {}", l.trim()))
                .unwrap_or_default();
            return Err(format!("exited with code {}{tail}", out.status.code()));
        }
        Ok(())
    }

    async fn record_hook_failure(
        &self,
        project: &str,
        event: &Event,
        command: &str,
        why: &str,
    ) -> Result<()> {
        let system = Actor::system();
        let mut tx = self.store.write("recording a hook's failure").await?;
        let mut ev = NewEvent::new(kind::HOOK_FAILED, &system)
            .project(project)
            .task(event.task.as_deref())
            .payload(serde_json::json!({
                "event": event.kind,
                "event_id": event.id,
                "command": command,
                "diagnostic": why,
            }));
        if let Some(a) = &event.agent {
            ev = ev.agent(a);
        }
        emit(&mut tx, ev).await?;
        tx.commit()
            .await
            .map_err(EngineError::store("recording a hook's failure"))
    }

    async fn event_by_id(&self, id: i64) -> Result<Option<Event>> {
        let mut found = self
            .events(&EventFilter {
                after: Some(id - 1),
                limit: Some(1),
                ..Default::default()
            })
            .await?;
        Ok(found.pop().filter(|e| e.id == id))
    }
}
