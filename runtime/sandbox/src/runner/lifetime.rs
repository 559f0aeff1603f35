//! One exec's life once launched (through the shim or the berth's
//! resident): its record and process group noted, its input written, its
//! output drained, its deadline kept (SIGTERM, then SIGKILL and
//! `cgroup.kill` after the grace), and its cgroup removed when it ends. A
//! caller that drops the exec half-way (cancelled) leaves nothing running:
//! [`GroupGuard`] kills the group and the cgroup and stops the readers.

use std::collections::BTreeSet;
use std::os::unix::process::ExitStatusExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use berth_confine::cgroup::ExecCgroups;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use super::launch::{Launched, Stdio};
use super::{CGROUP_EMPTY_WAIT, Runner, blocking, lock};
use crate::SandboxError;
use crate::capture::{Stream, drain};
use crate::exec::{ExecOutcome, ExecRequest, ExitStatus, Output, OutputSink};

/// How long to wait for output pipes to reach their end after the exec is
/// gone, before giving up on them.
const DRAIN_GRACE: Duration = Duration::from_millis(1000);

impl Runner {
    /// Runs `launched` (`request`'s exec, begun at `started`) to its end or
    /// its deadline, and reports it.
    pub(super) async fn supervise(
        &self,
        mut launched: Launched,
        stdio: Stdio,
        cgroups: ExecCgroups,
        request: ExecRequest,
        sink: Option<OutputSink>,
        started: Instant,
    ) -> Result<ExecOutcome, SandboxError> {
        let cap = request.output_cap.min(self.config.max_output_cap);
        let cgroups = Arc::new(cgroups);
        let pgid = launched.pid();
        // Another process finds the exec by its action: through its cgroup2
        // directory, named after the action, whose `cgroup.kill` ends every
        // process in it at once; only an exec without one needs the record
        // of its process group (a file made and removed per exec).
        let _record = match &cgroups.unified {
            Some(_) => None,
            None => crate::action_execs::ExecRecord::keep(
                self.config.confinement.exec_records.as_deref(),
                request.action.as_deref(),
                pgid,
            ),
        };
        lock(&self.running).insert(pgid);
        let mut guard = GroupGuard {
            pgid,
            cgroups: Arc::clone(&cgroups),
            running: Arc::clone(&self.running),
            armed: true,
            readers: Vec::new(),
        };

        let (stop_tx, stop_rx) = watch::channel(false);
        let Stdio {
            stdin: stdin_pipe,
            stdout: stdout_pipe,
            stderr: stderr_pipe,
            first_input,
        } = stdio;
        let stdout = stdout_pipe.map(|pipe| {
            tokio::spawn(drain(
                pipe,
                Stream::Stdout,
                cap,
                sink.clone(),
                stop_rx.clone(),
            ))
        });
        let stderr =
            stderr_pipe.map(|pipe| tokio::spawn(drain(pipe, Stream::Stderr, cap, sink, stop_rx)));
        guard
            .readers
            .extend(stdout.iter().chain(stderr.iter()).map(|r| r.abort_handle()));
        let input = request.stdin;
        let stdin_writer = stdin_pipe.map(|mut pipe| {
            tokio::spawn(async move {
                // The spec first (for the shim), then the command's input.
                // A command that does not read its input closes the pipe:
                // that is its choice, not an error.
                if pipe.write_all(&first_input).await.is_ok()
                    && let Some(data) = input
                {
                    let _ = pipe.write_all(&data).await;
                }
                let _ = pipe.shutdown().await;
            })
        });

        // A timeout too large to add is as good as none (a century).
        let deadline = tokio::time::Instant::from_std(
            started
                .checked_add(request.timeout)
                .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 86_400)),
        );
        let grace = self.config.kill_grace;
        let (status, timed_out) = match tokio::time::timeout_at(deadline, launched.wait()).await {
            Ok(status) => (status, false),
            Err(_) => {
                tracing::debug!(pgid, timeout = ?request.timeout, "deadline passed; killing the exec");
                (launched.kill(pgid, &cgroups, grace).await, true)
            }
        };
        let status = status.map_err(|source| SandboxError::Io {
            op: "wait for the command",
            source,
        })?;
        // The shim's PID namespace is gone with it; what the cgroup still
        // holds (nothing, unless the kernel is slow to reap) is killed.
        let outputs = collect_output(stdout, stderr, &stop_tx).await;
        if let Some(writer) = stdin_writer {
            writer.abort();
        }
        guard.armed = false;
        lock(&self.running).remove(&pgid);
        if !cgroups.paths().is_empty() {
            let cgroups = Arc::clone(&cgroups);
            let clean_up = move |wait| {
                let _ = cgroups.kill();
                cgroups.remove(wait);
            };
            match launched {
                // The resident removes its exec's cgroup once PID 1 is
                // reaped, and PID 1's exit ends every process of the exec:
                // one try here, in case the resident is gone — an open and
                // a rmdir, made on this thread, not worth a trip to the
                // blocking pool; and before the outcome, so a later exec of
                // the same action never meets this one's cleanup.
                Launched::Resident(_) => clean_up(Duration::ZERO),
                Launched::Shim(..) => {
                    blocking(move || clean_up(CGROUP_EMPTY_WAIT)).await;
                }
            }
        }
        let (stdout, stderr) = outputs;
        Ok(ExecOutcome {
            status: exit_status(status),
            stdout,
            stderr,
            timed_out,
            // rlimits end a runner command with an error, not an OOM kill.
            oom_killed: false,
            container_restarted: false,
            duration: started.elapsed(),
        })
    }
}

/// Kills the exec (its shim's group, so its PID namespace, and its cgroup)
/// and stops its output readers if the exec is dropped half-way (its caller
/// cancelled), so nothing outlives it.
struct GroupGuard {
    pgid: i32,
    cgroups: Arc<ExecCgroups>,
    running: Arc<Mutex<BTreeSet<i32>>>,
    armed: bool,
    readers: Vec<tokio::task::AbortHandle>,
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if self.armed {
            let _ = nix::sys::signal::killpg(Pid::from_raw(self.pgid), Signal::SIGKILL);
            let _ = self.cgroups.kill();
            lock(&self.running).remove(&self.pgid);
            for reader in &self.readers {
                reader.abort();
            }
            let cgroups = Arc::clone(&self.cgroups);
            // Removal waits for the cgroup to empty: not on this thread.
            std::thread::spawn(move || cgroups.remove(CGROUP_EMPTY_WAIT));
        }
    }
}

type Reader = tokio::task::JoinHandle<Output>;

/// Waits for both output readers. Every process that could hold the pipes
/// lived in the exec's PID namespace, gone with its shim; should one still be
/// open after the grace (a kernel slow to reap), reading stops and what was
/// read is kept.
async fn collect_output(
    stdout: Option<Reader>,
    stderr: Option<Reader>,
    stop: &watch::Sender<bool>,
) -> (Output, Output) {
    let both = async {
        let out = match stdout {
            Some(r) => r.await.unwrap_or_default(),
            None => Output::default(),
        };
        let err = match stderr {
            Some(r) => r.await.unwrap_or_default(),
            None => Output::default(),
        };
        (out, err)
    };
    tokio::pin!(both);
    if let Ok(outputs) = tokio::time::timeout(DRAIN_GRACE, &mut both).await {
        return outputs;
    }
    tracing::warn!("output pipes still open after the exec ended; returning what was read");
    let _ = stop.send(true);
    both.await
}

fn exit_status(status: std::process::ExitStatus) -> ExitStatus {
    match (status.code(), status.signal()) {
        (Some(code), _) => ExitStatus::Exited(code),
        (None, Some(signal)) => ExitStatus::Signaled(signal),
        // Neither code nor signal cannot happen for a waited child; report it
        // as the shell would see an unknown failure.
        (None, None) => ExitStatus::Exited(255),
    }
}
