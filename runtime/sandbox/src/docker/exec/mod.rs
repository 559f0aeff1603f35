//! One command in a berth's container: create, start, stream, deadline, exit
//! code, and the process group it leaves behind.
//!
//! Docker has no "kill this exec", its client timeout does not bound an exec's
//! stream, and when an exec's main process exits Docker keeps the stream open
//! (up to ~2 s) while background children hold its pipes — children that then
//! run on, unowned. So every command runs under a small `sh` wrapper:
//!
//! ```sh
//! sh -c WRAPPER berth-exec <token> <command…>
//! ```
//!
//! The wrapper starts the command in a new session (`setsid`), so the command
//! and everything it forks form one process group the wrapper knows, waits for
//! it, kills whatever is left of that group, and exits with the command's
//! status. Leftover background processes therefore die with every exec, and the
//! stream closes as soon as the command ends.
//!
//! On a timeout a second exec (the same uid, inside the container) finds the
//! wrapper by its `<token>` in `/proc/*/cmdline`, kills its child's process
//! group and the wrapper. We chose that over `killpg` on the host pid that
//! `inspect_exec` reports: the host pid is only meaningful when berth shares the
//! engine's pid namespace and may signal uid 1000 (root, same host), while the
//! in-container kill works for a non-root berth, a remote engine and a future
//! pod backend alike. The token also names the berth process that started the
//! exec, so [`reconcile`](super::DockerBackend::reconcile) can kill execs whose
//! owner died. A process that calls `setsid` itself leaves the group; only the
//! container (`down`) contains those.
//!
//! The image must provide `/bin/sh`, `setsid` and `tr` (busybox or coreutils +
//! util-linux); `up` checks that once.

pub(crate) mod agent;
mod stop;
mod token;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bollard::Docker;
use bollard::container::LogOutput;
use bollard::exec::{CreateExecOptions, StartExecOptions, StartExecResults};
use bollard::query_parameters::{EventsOptionsBuilder, StartContainerOptions};
use futures_util::StreamExt;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

use super::{DockerError, is_conflict, is_not_found};
use crate::SandboxError;
use crate::action_execs::process_start;
use crate::capture::TailBuffer;
use crate::exec::{ExecOutcome, ExecRequest, ExitStatus, OutputChunk, OutputSink, Program};

pub use agent::EXEC_SOCKETS_MOUNT;
pub(crate) use stop::*;
pub(crate) use token::*;

/// Runs `"$@"` (after the token) in its own session and kills what is left of
/// that session's process group when it ends. `$0` is `berth-exec`, `$1` the
/// token. stdin reaches the command through fd 3 (a background job would
/// otherwise get /dev/null).
///
/// Docker reports one integer, so "killed by SIGKILL" and "exited 137" look
/// the same; so does `wait` in the shell. The shell's job table still knows
/// (`Killed` against `Done(137)`), so for codes 129–192 the wrapper appends
/// `jobs -l` to stderr behind a marker ([`JOBS_MARKER`]), which the reader
/// strips. `{ }` keeps `jobs` in the wrapper's shell, where the job is.
///
/// The out-of-memory killer often takes a child (a compiler under `make`, a
/// test under a runner) while the command itself exits 2 or even 0, so the
/// exit code cannot tell. The wrapper reads the container's memory cgroup
/// counter `oom_kill` (cgroup v1 `memory.oom_control`, v2 `memory.events`,
/// both visible and world-readable inside the container) before and after;
/// when it grew, a report line of its own says [`OOM_WORD`], whatever the
/// code. `k` reads in the wrapper's own shell (no command substitution: no
/// fork, and a subshell before `jobs -l` would let the shell forget the job).
///
/// Its last line reports the exit code ([`EXIT_WORD`]), written after the
/// process group is killed: the reader takes the code from there and spares
/// an `inspect_exec` (and its polling while Docker catches up with the
/// exit). Without that line (the wrapper itself died) Docker's code is asked
/// for. The command could print such a line itself, but it only ever lies
/// about its own exit code, which it chooses anyway; the wrapper's line comes
/// last.
pub(crate) const WRAPPER: &str = "shift; k() { v=0; for f in /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events; do if [ -r $f ]; then while read -r a b; do if [ \"$a\" = oom_kill ]; then v=$b; return; fi; done < $f; fi; done; }; k; o=$v; exec 3<&0; setsid \"$@\" <&3 3<&- & c=$!; exec 3<&- </dev/null; wait $c 2>/dev/null; r=$?; kill -KILL -$c 2>/dev/null; if [ $r -gt 128 ] && [ $r -le 192 ]; then { printf '\\036berth-jobs '; jobs -l; } >&2; fi; k; [ \"$v\" = \"$o\" ] || printf '\\036berth-jobs oom\\n' >&2; printf '\\036berth-jobs exit %d\\n' $r >&2; exit $r";

pub(crate) use crate::image::IMAGE_SHELL;

/// Put before [`WRAPPER`] when it runs under another shell than the image's:
/// when the image has no `/bin/sh` (`$2`, after the token), the command runs
/// under the wrapper's shell instead. A `test`, no fork.
fn fallback_prefix(shell: &str) -> String {
    format!("if [ ! -x \"$2\" ]; then t=$1; shift 2; set -- \"$t\" {shell} \"$@\"; fi; ")
}

/// The wrapper's report when the memory cgroup killed a process while the
/// command ran.
const OOM_WORD: &str = "oom";

/// Starts the wrapper's report of its exit code.
const EXIT_WORD: &str = "exit ";

/// Starts the wrapper's report of how its command ended.
const JOBS_MARKER: &[u8] = b"\x1eberth-jobs ";

/// Kills every wrapper whose command line holds `$1` (a token or a token
/// prefix), its child's process group and the child itself (the child may not
/// have reached `setsid` yet).
const KILL_SCRIPT: &str = r#"for d in /proc/[0-9]*; do p=${d#/proc/}; [ "$p" = "$$" ] && continue; case " $(tr '\0' ' ' < "$d/cmdline" 2>/dev/null) " in *" berth-exec $1"*) c=; read -r c < "$d/task/$p/children" 2>/dev/null; for g in $c; do kill -KILL -"$g" "$g" 2>/dev/null; done; kill -KILL "$p" 2>/dev/null;; esac; done; exit 0"#;

/// Checks the image has what the wrapper and the kill script need.
pub(crate) const PROBE_SCRIPT: &str = "for t in setsid tr kill; do command -v $t >/dev/null 2>&1 || { echo \"missing: $t\"; exit 1; }; done";

/// How long the killed tree's last output is still collected after a timeout.
/// Docker closes an exec's stream at most ~2 s after its main process exits.
const DRAIN_GRACE: Duration = Duration::from_secs(3);
/// How long an exec that died with its wrapper waits to see whether its
/// container is restarting ([`restarted_since`]).
const RESTART_SETTLE: Duration = Duration::from_millis(1500);
/// Bound on the kill exec and on waiting for a killed exec to stop.
const KILL_BUDGET: Duration = Duration::from_secs(10);
const SIGKILL: i32 = 9;

/// Sends `chunk` to the sink, waiting for room; a receiver that went away
/// only stops the streaming.
async fn forward(sink: &mut Option<OutputSink>, chunk: OutputChunk) {
    if let Some(s) = sink.as_ref()
        && s.send(chunk).await.is_err()
    {
        *sink = None;
    }
}

/// Where execs run: the container and the identity of its commands.
pub(crate) struct Target<'a> {
    pub docker: &'a Docker,
    pub container: &'a str,
    /// `uid:gid`.
    pub user: &'a str,
    /// The shell berth's own scripts run under (`/bin/sh`, or the injected
    /// `/opt/berth/bin/sh`).
    pub shell: &'a str,
}

impl Target<'_> {
    /// The error of a Docker API call `op` on this container.
    pub(crate) fn api_error(
        &self,
        op: &'static str,
    ) -> impl FnOnce(bollard::errors::Error) -> DockerError + use<> {
        let container = self.container.to_string();
        move |source| DockerError::Api {
            op,
            target: container,
            source,
        }
    }
}

/// How [`run`] ended.
pub(crate) enum Run {
    /// The command ran (to its end or its deadline).
    Done(ExecOutcome),
    /// The container does not exist: nothing ran, and the request comes
    /// back for a retry once the berth is up again.
    ContainerGone(ExecRequest, Option<OutputSink>),
}

/// Runs one request to completion or its deadline.
pub(crate) async fn run(
    target: &Target<'_>,
    request: ExecRequest,
    mut sink: Option<OutputSink>,
) -> Result<Run, SandboxError> {
    let started = Instant::now();
    let started_wall = SystemTime::now();
    // Saturating: `Duration::MAX` means "no deadline", not an overflow.
    let deadline = started
        .checked_add(request.timeout)
        .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 24 * 3600));
    let token = next_token(request.action.as_deref());

    // With berth's tools the wrapper runs under their busybox, but the
    // command under the image's own `/bin/sh` when it has one: busybox runs
    // its applets before any program of the same name on `PATH`, which
    // would hide the image's own `ls`, `find` or `tar`.
    let wrapper = if target.shell == IMAGE_SHELL {
        WRAPPER.to_string()
    } else {
        format!("{}{WRAPPER}", fallback_prefix(target.shell))
    };
    let mut cmd = vec![
        target.shell.to_string(),
        "-c".to_string(),
        wrapper,
        "berth-exec".to_string(),
        token.clone(),
    ];
    cmd.extend(program_argv(&request.program));
    let env: Vec<String> = request
        .env
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    let options = CreateExecOptions {
        cmd: Some(cmd),
        env: Some(env),
        working_dir: Some(request.cwd.clone()),
        user: Some(target.user.to_string()),
        attach_stdin: Some(request.stdin.is_some()),
        attach_stdout: Some(true),
        attach_stderr: Some(true),
        // A TTY would merge stdout and stderr.
        tty: Some(false),
        ..Default::default()
    };

    let mut stdout = TailBuffer::new(request.output_cap);
    let mut stderr = TailBuffer::new(request.output_cap);
    let timed_out_outcome = |stdout: TailBuffer, stderr: TailBuffer| ExecOutcome {
        status: ExitStatus::Signaled(SIGKILL),
        stdout: stdout.finish(),
        stderr: stderr.finish(),
        timed_out: true,
        oom_killed: false,
        container_restarted: false,
        duration: started.elapsed(),
    };

    let exec_id = match tokio::time::timeout_at(deadline, create_exec(target, options)).await {
        Ok(Ok(Some(id))) => id,
        Ok(Ok(None)) => return Ok(Run::ContainerGone(request, sink)),
        Ok(Err(e)) => return Err(e),
        // Nothing was created, so nothing runs.
        Err(_) => return Ok(Run::Done(timed_out_outcome(stdout, stderr))),
    };
    // From here a process may run: if this future is dropped (the caller
    // gave up) or fails, the guard kills the exec's tree.
    let mut guard = CancelGuard {
        docker: target.docker.clone(),
        container: target.container.to_string(),
        user: target.user.to_string(),
        shell: target.shell.to_string(),
        token: token.clone(),
        armed: true,
    };
    let start = target.docker.start_exec(
        &exec_id,
        Some(StartExecOptions {
            detach: false,
            tty: false,
            output_capacity: None,
        }),
    );
    let (mut output, input) = match tokio::time::timeout_at(deadline, start).await {
        Ok(Ok(StartExecResults::Attached { output, input })) => (output, input),
        Ok(Ok(StartExecResults::Detached)) => {
            return Err(SandboxError::Backend {
                op: "docker exec",
                message: format!("exec {exec_id} in {} started detached", target.container),
            });
        }
        Ok(Err(source)) => {
            return Err(DockerError::Api {
                op: "start exec in",
                target: target.container.to_string(),
                source,
            }
            .into());
        }
        Err(_) => {
            let restarted = kill_then_wait(target, &exec_id, &token).await?;
            let mut outcome = timed_out_outcome(stdout, stderr);
            outcome.container_restarted = restarted;
            return Ok(Run::Done(outcome));
        }
    };

    // stdin is written beside the reading (a command may fill its stdout pipe
    // before it reads all its input), then closed, or the command would wait
    // for more forever.
    let stdin_task = request.stdin.map(|bytes| {
        let mut input = input;
        tokio::spawn(async move {
            let _ = input.write_all(&bytes).await;
            let _ = input.shutdown().await;
        })
    });

    let mut timed_out = false;
    let mut filter = StderrFilter::default();
    // Keeps the tail; returns the chunk for the sink.
    let mut deliver = |log: LogOutput| match log {
        LogOutput::StdErr { message } => {
            let pass = filter.push(&message);
            if pass.is_empty() {
                return None;
            }
            stderr.push(&pass);
            Some(OutputChunk::Stderr(pass))
        }
        LogOutput::StdOut { message } | LogOutput::Console { message } => {
            stdout.push(&message);
            Some(OutputChunk::Stdout(message.to_vec()))
        }
        LogOutput::StdIn { .. } => None,
    };
    // A full sink is waited for before the stream is read further: Docker's
    // connection then fills, the daemon stops reading the command's pipe and
    // the command's writes wait. The deadline still holds while waiting.
    let mut held = None;
    loop {
        match tokio::time::timeout_at(deadline, output.next()).await {
            Ok(Some(Ok(log))) => {
                let (Some(chunk), Some(s)) = (deliver(log), sink.as_ref()) else {
                    continue;
                };
                let room = match tokio::time::timeout_at(deadline, s.reserve()).await {
                    Ok(Ok(permit)) => {
                        permit.send(chunk);
                        true
                    }
                    Ok(Err(_)) => false,
                    Err(_) => {
                        held = Some(chunk);
                        timed_out = true;
                        break;
                    }
                };
                if !room {
                    // A receiver that went away only stops the streaming.
                    sink = None;
                }
            }
            Ok(Some(Err(e))) => {
                tracing::warn!(container = target.container, error = %e, "exec stream broke");
                break;
            }
            Ok(None) => break,
            Err(_) => {
                timed_out = true;
                break;
            }
        }
    }
    if timed_out {
        // A failed kill (the pids limit can refuse even the kill exec) is not
        // the end: the exec is checked below and, if it still runs, the
        // container is restarted.
        if let Err(e) = kill_by_token(target, &token).await {
            tracing::warn!(container = target.container, error = %e, "kill exec failed");
        }
        // What the killed tree wrote last is still worth having.
        if let Some(chunk) = held {
            forward(&mut sink, chunk).await;
        }
        let grace = Instant::now() + DRAIN_GRACE;
        while let Ok(Some(Ok(log))) = tokio::time::timeout_at(grace, output.next()).await {
            if let Some(chunk) = deliver(log) {
                forward(&mut sink, chunk).await;
            }
        }
    }
    drop(output);
    if let Some(task) = stdin_task {
        task.abort();
    }
    let rest = filter.finish();
    if !rest.is_empty() {
        stderr.push(&rest);
        forward(&mut sink, OutputChunk::Stderr(rest)).await;
    }

    // The wrapper reported how its command ended, after killing its group:
    // nothing of the command runs any more.
    let reported = filter.exit.filter(|_| !timed_out);
    // Else the stream has ended and Docker's exit code may lag it by a moment.
    let mut restarted = false;
    let code = if reported.is_some() {
        reported
    } else {
        loop {
            let inspected = target
                .docker
                .inspect_exec(&exec_id)
                .await
                .map_err(|source| DockerError::Api {
                    op: "inspect exec in",
                    target: target.container.to_string(),
                    source,
                })?;
            if inspected.running != Some(true) {
                break inspected.exit_code;
            }
            if Instant::now() >= deadline && !timed_out {
                timed_out = true;
                restarted = kill_then_wait(target, &exec_id, &token).await?;
                break None;
            }
            if timed_out {
                // Killed above; wait for it to be reaped, within the budget.
                restarted = wait_stopped(target, &exec_id).await?;
                break None;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    };

    let (status, oom_killed) = if timed_out {
        (ExitStatus::Signaled(SIGKILL), false)
    } else {
        let code = code.ok_or_else(|| SandboxError::Backend {
            op: "docker exec",
            message: format!(
                "exec {exec_id} in {} ended without an exit code",
                target.container
            ),
        })?;
        let code = i32::try_from(code).unwrap_or(i32::MAX);
        let oom_reported = filter.oom;
        let status = status_from_code(code, filter.jobs.as_deref());
        // A wrapper that reported outlived its command, so no restart killed
        // it.
        if code == 128 + SIGKILL && !oom_reported && reported.is_none() {
            // Killed with everything else in the container (a restart for
            // another command's deadline), or by the memory limit where the
            // wrapper could not read the counter (or was the victim itself).
            restarted = restarted_since(target, started_wall).await;
        }
        let oom = oom_reported
            || (code == 128 + SIGKILL && !restarted && oom_since(target, started_wall).await);
        (status, oom)
    };
    guard.armed = false;
    Ok(Run::Done(ExecOutcome {
        status,
        stdout: stdout.finish(),
        stderr: stderr.finish(),
        timed_out,
        oom_killed,
        container_restarted: restarted,
        duration: started.elapsed(),
    }))
}

/// The command line of `program` under the image's shell.
pub(crate) fn program_argv(program: &Program) -> Vec<String> {
    match program {
        Program::Shell(line) => vec![IMAGE_SHELL.to_string(), "-c".to_string(), line.clone()],
        Program::Argv(argv) => {
            // Through `sh -c 'exec "$@"'`, so a missing program is 127 and an
            // unexecutable one 126, with the shell's message, as in the runner
            // (a bare Docker exec reports 126 for both, on stdout).
            let mut cmd = vec![
                IMAGE_SHELL.to_string(),
                "-c".to_string(),
                "exec \"$@\"".to_string(),
                "sh".to_string(),
            ];
            cmd.extend(argv.iter().cloned());
            cmd
        }
    }
}

/// `create_exec`, starting the container once if it has stopped (an
/// out-of-memory kill of its init, a daemon restart). `None` when the
/// container does not exist.
async fn create_exec(
    target: &Target<'_>,
    options: CreateExecOptions<String>,
) -> Result<Option<String>, SandboxError> {
    let api = |op: &'static str| target.api_error(op);
    match target
        .docker
        .create_exec(target.container, options.clone())
        .await
    {
        Ok(created) => Ok(Some(created.id)),
        Err(e) if is_conflict(&e) => {
            tracing::warn!(
                container = target.container,
                "container not running; starting it"
            );
            target
                .docker
                .start_container(target.container, None::<StartContainerOptions>)
                .await
                .map_err(api("start stopped container"))?;
            let created = target
                .docker
                .create_exec(target.container, options)
                .await
                .map_err(api("create exec in"))?;
            Ok(Some(created.id))
        }
        Err(e) if is_not_found(&e) => Ok(None),
        Err(source) => Err(api("create exec in")(source).into()),
    }
}

/// The error of a container that does not exist (after a bring-up, or for
/// a helper exec, which does not bring berths up).
pub(crate) fn container_gone(container: &str) -> SandboxError {
    SandboxError::Backend {
        op: "docker exec",
        message: format!(
            "container {container} does not exist (removed by `berth down` or reconcile?); run `berth up`"
        ),
    }
}

/// Runs a helper exec to completion within `budget`; returns its exit code
/// and combined output.
pub(crate) async fn run_plain(
    target: &Target<'_>,
    options: CreateExecOptions<String>,
    budget: Duration,
) -> Result<(Option<i64>, Vec<u8>), SandboxError> {
    let api = |op: &'static str| target.api_error(op);
    let work = async {
        let id = create_exec(target, options)
            .await?
            .ok_or_else(|| container_gone(target.container))?;
        let mut bytes = Vec::new();
        if let StartExecResults::Attached { mut output, .. } = target
            .docker
            .start_exec(&id, None)
            .await
            .map_err(api("start exec in"))?
        {
            while let Some(Ok(log)) = output.next().await {
                bytes.extend_from_slice(&log.into_bytes());
            }
        }
        loop {
            let i = target
                .docker
                .inspect_exec(&id)
                .await
                .map_err(api("inspect exec in"))?;
            if i.running != Some(true) {
                return Ok::<_, SandboxError>((i.exit_code, bytes));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(budget, work)
        .await
        .map_err(|_| SandboxError::Backend {
            op: "docker exec",
            message: format!(
                "a helper exec in {} did not finish within {budget:?}",
                target.container
            ),
        })?
}

/// Docker reports a signal death as 128 + N, like an exit with that code;
/// the wrapper's `jobs -l` line tells them apart (`Done(137)` or bash's
/// `Exit 137` is an exit, a signal's name is a signal). Without the line (the
/// wrapper itself was killed) 128 + N is a signal, as Docker means it.
fn status_from_code(code: i32, jobs: Option<&str>) -> ExitStatus {
    if !(129..=128 + 64).contains(&code) {
        return ExitStatus::Exited(code);
    }
    match jobs {
        Some(j) if j.contains("Done") || j.contains("Exit") => ExitStatus::Exited(code),
        _ => ExitStatus::Signaled(code - 128),
    }
}

/// Passes stderr through, holding back and parsing the wrapper's
/// [`JOBS_MARKER`] report. The marker starts with an ASCII record separator,
/// which ordinary output does not contain, so output is held back only in the
/// rare chunk that has one.
#[derive(Default)]
struct StderrFilter {
    held: Vec<u8>,
    /// The wrapper's `jobs -l` line, when it wrote one.
    jobs: Option<String>,
    /// The wrapper reported an out-of-memory kill ([`OOM_WORD`]).
    oom: bool,
    /// The exit code the wrapper reported ([`EXIT_WORD`]).
    exit: Option<i64>,
}

impl StderrFilter {
    /// Takes a chunk; returns what may be passed on now.
    fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        if self.held.is_empty() && !chunk.contains(&0x1e) {
            return chunk.to_vec();
        }
        self.held.extend_from_slice(chunk);
        self.drain(false)
    }

    /// One report line of the wrapper (after the marker).
    fn report(&mut self, line: &[u8]) {
        let line = String::from_utf8_lossy(line).trim().to_string();
        if line == OOM_WORD {
            self.oom = true;
        } else if let Some(code) = line.strip_prefix(EXIT_WORD) {
            // The last report wins: the wrapper's is written last.
            self.exit = code.trim().parse().ok();
        } else {
            self.jobs = Some(line);
        }
    }

    /// At the end of the stream: whatever is still held.
    fn finish(&mut self) -> Vec<u8> {
        self.drain(true)
    }

    fn drain(&mut self, end: bool) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let Some(i) = self.held.iter().position(|&b| b == 0x1e) else {
                out.append(&mut self.held);
                break;
            };
            out.extend(self.held.drain(..i));
            let n = self.held.len().min(JOBS_MARKER.len());
            if self.held[..n] != JOBS_MARKER[..n] {
                out.push(self.held.remove(0));
                continue;
            }
            if n < JOBS_MARKER.len() {
                if end {
                    out.append(&mut self.held);
                }
                break;
            }
            match self.held.iter().position(|&b| b == b'\n') {
                Some(nl) => {
                    let line: Vec<u8> = self.held.drain(..=nl).collect();
                    self.report(&line[JOBS_MARKER.len()..]);
                }
                // The wrapper's last words with an empty job table: still
                // its report, not the command's output.
                None if end && self.held.len() <= 4096 => {
                    let line = std::mem::take(&mut self.held);
                    self.report(&line[JOBS_MARKER.len()..]);
                    break;
                }
                None => {
                    if end || self.held.len() > 4096 {
                        out.append(&mut self.held);
                    }
                    break;
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn codes_map_to_statuses() {
        let killed = Some("[1]+  8346 Killed");
        let done = Some("[1]+  8348 Done(137)");
        let cases = [
            (0, None, ExitStatus::Exited(0)),
            (1, None, ExitStatus::Exited(1)),
            (126, None, ExitStatus::Exited(126)),
            (127, None, ExitStatus::Exited(127)),
            (128, None, ExitStatus::Exited(128)),
            (137, killed, ExitStatus::Signaled(9)),
            (137, done, ExitStatus::Exited(137)),
            (
                137,
                Some("[1]+ Exit 137  sh -c ..."),
                ExitStatus::Exited(137),
            ),
            (137, None, ExitStatus::Signaled(9)),
            (143, Some("[1]+  9 Terminated"), ExitStatus::Signaled(15)),
            (255, None, ExitStatus::Exited(255)),
        ];
        for (code, jobs, want) in cases {
            assert_eq!(status_from_code(code, jobs), want, "{code} {jobs:?}");
        }
    }

    #[test]
    fn the_jobs_report_is_stripped_from_stderr_wherever_chunks_split() {
        let stream: &[u8] =
            b"err1\nerr2\x1e not ours\n\x1eberth-jobs [1]+  12 Killed  \n\x1eberth-jobs oom\n\x1eberth-jobs exit 137\n";
        let want_out: &[u8] = b"err1\nerr2\x1e not ours\n";
        for split in 0..=stream.len() {
            for split2 in split..=stream.len() {
                let mut f = StderrFilter::default();
                let mut out = f.push(&stream[..split]);
                out.extend(f.push(&stream[split..split2]));
                out.extend(f.push(&stream[split2..]));
                out.extend(f.finish());
                assert_eq!(out, want_out, "split at {split}/{split2}");
                assert_eq!(
                    f.jobs.as_deref(),
                    Some("[1]+  12 Killed"),
                    "split at {split}/{split2}"
                );
                assert!(f.oom, "split at {split}/{split2}");
                assert_eq!(f.exit, Some(137), "split at {split}/{split2}");
            }
        }
        // A truncated marker at the end is output, not a report.
        let mut f = StderrFilter::default();
        let mut out = f.push(b"x\x1eberth-jo");
        out.extend(f.finish());
        assert_eq!(out, b"x\x1eberth-jo");
        assert_eq!(f.jobs, None);
    }

    #[test]
    fn tokens_name_their_owner() {
        let token = next_token(Some("abc123"));
        assert!(token.ends_with(".aabc123."), "{token}");
        let args = vec![
            "-c".to_string(),
            WRAPPER.to_string(),
            "berth-exec".to_string(),
            token.clone(),
            "true".to_string(),
        ];
        let owner = ExecOwner::from_arguments(&args).unwrap();
        assert!(token.starts_with(&owner.prefix));
        assert_eq!(owner.prefix, owner_token());
        assert!(!owner.is_dead(), "this process is alive");
        let dead = ExecOwner {
            start: owner.start + 1,
            ..owner.clone()
        };
        assert!(dead.is_dead(), "same pid, other start time: a reused pid");
        assert_eq!(ExecOwner::from_arguments(&["true".to_string()]), None);
    }
}
