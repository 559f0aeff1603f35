//! Stopping an exec inside a container, which Docker 20.10 cannot do
//! itself: by its token (the wrapper's process group, found in `/proc`),
//! then waiting for it to end; and whether the container restarted or its
//! memory cgroup killed something meanwhile.

use super::*;

/// Kills an exec's tree when the future running it is dropped before the
/// exec finished, on a task of its own (drop cannot await). Best effort: a
/// runtime that is shutting down may not run it, and then reconcile does.
pub(super) struct CancelGuard {
    pub(super) docker: Docker,
    pub(super) container: String,
    pub(super) user: String,
    pub(super) shell: String,
    pub(super) token: String,
    pub(super) armed: bool,
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let docker = self.docker.clone();
        let container = std::mem::take(&mut self.container);
        let user = std::mem::take(&mut self.user);
        let shell = std::mem::take(&mut self.shell);
        let token = std::mem::take(&mut self.token);
        handle.spawn(async move {
            let target = Target {
                docker: &docker,
                container: &container,
                user: &user,
                shell: &shell,
            };
            if let Err(e) = kill_by_token(&target, &token).await {
                tracing::warn!(%container, error = %e, "killing a cancelled exec failed");
            }
        });
    }
}

/// Kills the exec's tree and waits until Docker sees it stopped; true when
/// that took a restart of the container.
pub(super) async fn kill_then_wait(
    target: &Target<'_>,
    exec_id: &str,
    token: &str,
) -> Result<bool, SandboxError> {
    if let Err(e) = kill_by_token(target, token).await {
        tracing::warn!(container = target.container, error = %e, "kill exec failed");
    }
    wait_stopped(target, exec_id).await
}

/// Waits for a killed exec to stop; if it will not, restarts the container —
/// the last resort, which kills every process in it — so that no exec
/// outlives its deadline. True when it restarted the container: the
/// caller's outcome says so, since every other command in the berth died
/// with it.
pub(super) async fn wait_stopped(target: &Target<'_>, exec_id: &str) -> Result<bool, SandboxError> {
    let until = Instant::now() + KILL_BUDGET;
    while Instant::now() < until {
        match target.docker.inspect_exec(exec_id).await {
            Ok(i) if i.running != Some(true) => return Ok(false),
            Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(e) if is_not_found(&e) => return Ok(false),
            Err(source) => {
                return Err(DockerError::Api {
                    op: "inspect exec in",
                    target: target.container.to_string(),
                    source,
                }
                .into());
            }
        }
    }
    tracing::warn!(
        container = target.container,
        exec = exec_id,
        "a timed-out exec survived its kill; restarting the container"
    );
    target
        .docker
        .restart_container(
            target.container,
            Some(bollard::query_parameters::RestartContainerOptions {
                signal: None,
                t: Some(0),
            }),
        )
        .await
        .map_err(|source| DockerError::Api {
            op: "restart container",
            target: target.container.to_string(),
            source,
        })?;
    Ok(true)
}

/// Whether the container stopped or (re)started after `since`: every exec
/// that was running in it then was killed with it. Asked only when an exec
/// died with its wrapper (no report), which a restart does; the engine
/// records the stop a moment after the processes die, so this looks again
/// for up to [`RESTART_SETTLE`] before answering no.
pub(super) async fn restarted_since(target: &Target<'_>, since: SystemTime) -> bool {
    let until = Instant::now() + RESTART_SETTLE;
    loop {
        let Ok(found) = target
            .docker
            .inspect_container(target.container, None)
            .await
        else {
            return false;
        };
        if let Some(state) = found.state {
            let moved = [state.started_at, state.finished_at]
                .into_iter()
                .flatten()
                .filter_map(|t| humantime::parse_rfc3339_weak(&t).ok())
                .any(|t| t > since);
            if moved || state.restarting == Some(true) || state.running == Some(false) {
                return true;
            }
        }
        if Instant::now() >= until {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Kills every exec whose token starts with `token` (one exec, or all execs
/// of one owner), from inside the container.
pub(crate) async fn kill_by_token(target: &Target<'_>, token: &str) -> Result<(), SandboxError> {
    let options = CreateExecOptions {
        cmd: Some(vec![
            target.shell.to_string(),
            "-c".to_string(),
            KILL_SCRIPT.to_string(),
            "berth-kill".to_string(),
            token.to_string(),
        ]),
        user: Some(target.user.to_string()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        tty: Some(false),
        ..Default::default()
    };
    let outcome = run_plain(target, options, KILL_BUDGET).await?;
    if outcome.0 != Some(0) {
        tracing::warn!(
            container = target.container,
            token,
            code = ?outcome.0,
            output = %String::from_utf8_lossy(&outcome.1),
            "kill exec did not succeed"
        );
    }
    Ok(())
}

/// Whether the container's memory cgroup killed something since `since`:
/// Docker emits an `oom` container event for each kill, while the container
/// itself keeps running (its `State.OOMKilled` stays false when an exec, not
/// the init, is the victim).
pub(super) async fn oom_since(target: &Target<'_>, since: SystemTime) -> bool {
    for attempt in 0..2 {
        if attempt > 0 {
            // The event and the exec's exit travel separately; give the event
            // a moment before deciding there was none.
            tokio::time::sleep(Duration::from_millis(150)).await;
        }
        let until = SystemTime::now();
        let options = EventsOptionsBuilder::default()
            .since(&unix_seconds(since))
            .until(&unix_seconds(until))
            .filters(&std::collections::HashMap::from([
                ("type".to_string(), vec!["container".to_string()]),
                ("container".to_string(), vec![target.container.to_string()]),
                ("event".to_string(), vec!["oom".to_string()]),
            ]))
            .build();
        let events = target.docker.events(Some(options));
        let found = tokio::time::timeout(Duration::from_secs(5), async {
            let mut events = Box::pin(events);
            matches!(events.next().await, Some(Ok(_)))
        })
        .await
        .unwrap_or(false);
        if found {
            return true;
        }
    }
    false
}

pub(super) fn unix_seconds(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    format!("{}.{:09}", d.as_secs(), d.subsec_nanos())
}
