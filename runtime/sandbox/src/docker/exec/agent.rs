//! A command through the berth's exec agent: a socket round trip and a fork
//! in the container instead of a Docker API exec (the `berth-exec-agent`
//! crate says why and how the agent side works).
//!
//! berth binds `.<pid>-<seq>` in the berth's socket directory (berth's own,
//! mounted read-only at [`EXEC_SOCKETS_MOUNT`]), makes it connectable and
//! renames it to `<pid>-<seq>.sock`; the agent connects out to it. berth
//! never connects by path into a directory the agent can write. What comes
//! back is untrusted input: frames are bounded and parsed totally
//! ([`berth_exec_agent::wire`]), and anything else ends the exec as lost.
//!
//! When no agent answers within [`AGENT_ANSWER`] (the container restarted,
//! a command killed the agent), nothing ran: the request comes back
//! ([`AgentRun::Unanswered`]) and the caller runs it through Docker and
//! starts the agent again ([`start`]). A connection accepted but never
//! sent a request runs nothing either: the agent starts the command only
//! on the request frame.
//!
//! At the deadline berth closes its half of the connection; the exec's
//! process kills the command's process group at once and berth reads what
//! is left until the connection ends, within the drain grace.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use berth_exec_agent::wire::{
    Decoder, ExecSpec, FailureKind, Frame, FromAgent, MAX_CHUNK, ToAgent,
};
use bollard::exec::{CreateExecOptions, StartExecOptions};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixListener;
use tokio::time::Instant;

use super::{DRAIN_GRACE, SIGKILL, Target, forward};
use crate::SandboxError;
use crate::capture::TailBuffer;
use crate::docker::{ContainerSpec, DockerError};
use crate::exec::{ExecOutcome, ExecRequest, ExitStatus, OutputChunk, OutputSink};
use crate::image::TOOLS_BIN;

/// Where a berth's socket directory appears in its container.
pub const EXEC_SOCKETS_MOUNT: &str = "/run/berth-exec";
/// How long a published socket waits for the agent. A live agent connects
/// within a millisecond; this only bounds what a dead one costs (once: the
/// fallback starts it again).
const AGENT_ANSWER: Duration = Duration::from_millis(400);
/// After an agent did not answer, how long commands go straight through
/// Docker (each would otherwise wait [`AGENT_ANSWER`] for an agent that
/// may never come); the next one after it tries the agent again.
const UNANSWERED_FOR: Duration = Duration::from_secs(30);
/// Marks, in the socket directory, that the agent did not answer (berth
/// writes it; its age is what counts).
const UNANSWERED_MARK: &str = ".unanswered";
/// `sun_path` holds 108 bytes with its NUL; a longer directory gets no agent.
const MAX_SOCKET_PATH: usize = 107;
/// The longest socket name berth makes: `<pid>-<seq>.sock`.
const MAX_SOCKET_NAME: usize = 10 + 1 + 20 + 5;

impl ContainerSpec {
    /// This berth's socket directory on the host: `<root>/<16 hex>`, named by
    /// a hash of the container name so the path stays short for `sun_path`.
    /// `None` without a root or when the path would be too long.
    pub fn exec_sockets(&self) -> Option<PathBuf> {
        let root = self.exec_socket_root.as_ref()?;
        let hash = Sha256::digest(self.container_name().as_bytes());
        let name: String = hash[..8].iter().map(|b| format!("{b:02x}")).collect();
        let dir = root.join(name);
        (dir.as_os_str().len() + 1 + MAX_SOCKET_NAME <= MAX_SOCKET_PATH).then_some(dir)
    }

    /// Makes the socket directory (and its root): berth's own, writable by
    /// no one else, readable by the berth's uid through the mount. Blocking.
    pub(crate) fn prepare_exec_sockets(&self) -> Result<(), DockerError> {
        let Some(dir) = self.exec_sockets() else {
            return Ok(());
        };
        let io = |op: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| DockerError::Io { op, path, source }
        };
        for d in [dir.parent().unwrap_or(&dir), dir.as_path()] {
            match std::fs::create_dir(d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io("create the exec socket directory", d)(e)),
            }
            let md = std::fs::symlink_metadata(d).map_err(io("stat", d))?;
            if !md.is_dir() || md.uid() != crate::identity::current_uid() {
                return Err(DockerError::Io {
                    op: "use the exec socket directory (not a directory of berth's own)",
                    path: d.to_path_buf(),
                    source: std::io::Error::from(std::io::ErrorKind::PermissionDenied),
                });
            }
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
                .map_err(io("set the mode of", d))?;
        }
        Ok(())
    }
}

/// How an exec through the agent went.
pub(crate) enum AgentRun {
    /// The agent ran it and reported its end.
    Done(ExecOutcome),
    /// The connection ended without a report (the exec's process was
    /// killed: `berth cancel`, the memory limit, a restart). The outcome
    /// says signal 9; the caller asks Docker what happened.
    Lost(ExecOutcome, SystemTime),
    /// The deadline passed and the connection did not end within the drain
    /// grace: the exec's process may be stuck, so the caller kills the
    /// exec by its token through Docker.
    Unconfirmed(ExecOutcome),
    /// No agent answered; nothing ran.
    Unanswered(ExecRequest, Option<OutputSink>),
}

/// What the agent is told to run.
pub(crate) struct AgentExec<'a> {
    pub dir: &'a Path,
    pub token: &'a str,
    pub argv: Vec<String>,
    /// berth's shell, when the image may have no `/bin/sh`.
    pub fallback_shell: Option<String>,
}

/// Runs `request` through the agent listening on `exec.dir`.
pub(crate) async fn run(
    exec: AgentExec<'_>,
    request: ExecRequest,
    mut sink: Option<OutputSink>,
) -> Result<AgentRun, SandboxError> {
    let started = Instant::now();
    let started_wall = SystemTime::now();
    let deadline = started
        .checked_add(request.timeout)
        .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 24 * 3600));
    if recently_unanswered(exec.dir) {
        return Ok(AgentRun::Unanswered(request, sink));
    }
    let Some(conn) = publish_and_accept(exec.dir, AGENT_ANSWER).await else {
        mark_unanswered(exec.dir);
        return Ok(AgentRun::Unanswered(request, sink));
    };
    let (mut reader, mut writer) = conn.into_split();

    let spec = ExecSpec {
        argv: exec.argv,
        env: request
            .env
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        cwd: request.cwd.clone(),
        stdin: request.stdin.is_some(),
        fallback_shell: exec.fallback_shell,
    };
    let mut head = ToAgent::Token(exec.token.to_string()).encode();
    head.extend(ToAgent::Request(spec).encode());
    // stdin beside the reading (a command may fill its stdout before it
    // reads its input); the half stays open until the exec ends or its
    // deadline passes, when dropping it tells the agent to kill.
    let stdin = request.stdin.clone();
    let writer_task = tokio::spawn(async move {
        if writer.write_all(&head).await.is_err() {
            return;
        }
        if let Some(bytes) = stdin {
            for chunk in bytes.chunks(MAX_CHUNK) {
                if writer
                    .write_all(&ToAgent::Stdin(chunk.to_vec()).encode())
                    .await
                    .is_err()
                {
                    return;
                }
            }
            if writer.write_all(&ToAgent::StdinEnd.encode()).await.is_err() {
                return;
            }
        }
        std::future::pending::<()>().await;
    });

    let mut stdout = TailBuffer::new(request.output_cap);
    let mut stderr = TailBuffer::new(request.output_cap);
    let mut decoder = Decoder::new();
    let mut buf = vec![0u8; 2 * MAX_CHUNK];
    let mut timed_out = false;
    let mut ending = None;
    let mut failure = None;
    // Until the deadline, then within the drain grace.
    let mut until = deadline;
    let mut sink_gone = false;
    // The agent closed the connection (its exec process is gone).
    let mut closed = false;
    'read: loop {
        // Whole frames first.
        loop {
            let frame = match decoder.next_frame::<FromAgent>() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "the exec agent sent a bad frame; the exec is lost");
                    break 'read;
                }
            };
            let chunk = match frame {
                FromAgent::Stdout(bytes) => {
                    stdout.push(&bytes);
                    OutputChunk::Stdout(bytes)
                }
                FromAgent::Stderr(bytes) => {
                    stderr.push(&bytes);
                    OutputChunk::Stderr(bytes)
                }
                FromAgent::Ended(e) => {
                    ending = Some(e);
                    break 'read;
                }
                FromAgent::Failed(f) => {
                    failure = Some(f);
                    break 'read;
                }
            };
            if timed_out {
                forward(&mut sink, chunk).await;
                continue;
            }
            // A full sink is waited for before the connection is read further:
            // the agent's writes then wait, and so do the command's.
            let Some(s) = sink.as_ref() else {
                continue;
            };
            let held = match tokio::time::timeout_at(deadline, s.reserve()).await {
                Ok(Ok(permit)) => {
                    permit.send(chunk);
                    None
                }
                Ok(Err(_)) => {
                    sink_gone = true;
                    None
                }
                Err(_) => Some(chunk),
            };
            if sink_gone {
                sink = None;
            }
            if let Some(chunk) = held {
                forward(&mut sink, chunk).await;
                timed_out = true;
                until = Instant::now() + DRAIN_GRACE;
                // Dropping berth's half is the kill.
                writer_task.abort();
            }
        }
        match tokio::time::timeout_at(until, reader.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                closed = true;
                break;
            }
            Ok(Ok(n)) => decoder.push(&buf[..n]),
            Err(_) if timed_out => break,
            Err(_) => {
                timed_out = true;
                until = Instant::now() + DRAIN_GRACE;
                // Dropping berth's half is the kill.
                writer_task.abort();
            }
        }
    }
    writer_task.abort();
    drop(reader);

    if let Some(f) = failure {
        return Err(match f.kind {
            FailureKind::MissingCwd => SandboxError::MissingCwd {
                cwd: request.cwd,
                host: None,
            },
            FailureKind::Spawn => SandboxError::Backend {
                op: "exec agent",
                message: f.message,
            },
        });
    }
    let mut outcome = ExecOutcome {
        status: ExitStatus::Signaled(SIGKILL),
        stdout: stdout.finish(),
        stderr: stderr.finish(),
        timed_out,
        oom_killed: false,
        container_restarted: false,
        duration: started.elapsed(),
    };
    match ending {
        _ if timed_out && !closed && ending.is_none() => Ok(AgentRun::Unconfirmed(outcome)),
        _ if timed_out => Ok(AgentRun::Done(outcome)),
        Some(e) => {
            outcome.status = match (e.code, e.signal) {
                (Some(code), _) => ExitStatus::Exited(code),
                (None, Some(signal)) => ExitStatus::Signaled(signal),
                (None, None) => ExitStatus::Signaled(SIGKILL),
            };
            outcome.oom_killed = e.oom;
            Ok(AgentRun::Done(outcome))
        }
        None => Ok(AgentRun::Lost(outcome, started_wall)),
    }
}

/// Whether an agent failed to answer in this directory a moment ago.
fn recently_unanswered(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join(UNANSWERED_MARK))
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|age| age < UNANSWERED_FOR)
}

fn mark_unanswered(dir: &Path) {
    let _ = std::fs::write(dir.join(UNANSWERED_MARK), b"");
}

/// Forgets that an agent did not answer: one was just started.
pub(crate) fn clear_unanswered(dir: &Path) {
    let _ = std::fs::remove_file(dir.join(UNANSWERED_MARK));
}

/// How long a just-started agent has to answer the proxy listener's
/// request (a Docker exec starts it).
const AGENT_START: Duration = Duration::from_secs(5);

/// The egress proxy's listener on `127.0.0.1:port` in the container's
/// network namespace, made by the berth's exec agent (as the berth's uid,
/// in that namespace) and handed over on a published socket: how a berth
/// process that is not root, so cannot enter the namespace itself, gets it
/// ([`crate::egress_port`]). When no agent answers it is started once and
/// asked again. What comes back is checked as the runner's handoff is: a
/// listening TCP socket on `127.0.0.1:port`, or an error.
pub(crate) async fn proxy_listener(
    target: &Target<'_>,
    dir: &Path,
    port: u16,
) -> Result<std::net::TcpListener, SandboxError> {
    let op = "make the proxy's listener in the container through the exec agent";
    let answered = match recently_unanswered(dir) {
        true => None,
        false => publish_and_accept(dir, AGENT_ANSWER).await,
    };
    let conn = match answered {
        Some(conn) => conn,
        None => {
            start(target).await?;
            let conn = publish_and_accept(dir, AGENT_START).await.ok_or_else(|| {
                SandboxError::Backend {
                    op,
                    message: "the exec agent did not answer".to_string(),
                }
            })?;
            clear_unanswered(dir);
            conn
        }
    };
    let io = |source| SandboxError::Io { op, source };
    let mut conn = conn;
    conn.write_all(&ToAgent::ProxyListener(port).encode())
        .await
        .map_err(io)?;
    let conn = conn.into_std().map_err(io)?;
    conn.set_nonblocking(false).map_err(io)?;
    tokio::task::spawn_blocking(move || {
        berth_confine::egress_handoff::receive_listener(&conn, port, AGENT_START)
    })
    .await
    .map_err(|e| SandboxError::Backend {
        op,
        message: e.to_string(),
    })?
    .map_err(|e| SandboxError::Backend {
        op,
        message: e.to_string(),
    })
}

/// Publishes a socket for one exec and waits up to `wait` for the agent to
/// connect; `None` when it does not (the socket is gone either way).
async fn publish_and_accept(dir: &Path, wait: Duration) -> Option<tokio::net::UnixStream> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    );
    let staging = dir.join(format!(".{name}"));
    let published = dir.join(format!("{name}.sock"));
    // A leftover of a killed berth process of the same pid.
    let _ = std::fs::remove_file(&staging);
    let listener = match UnixListener::bind(&staging) {
        Ok(l) => l,
        Err(e) => {
            tracing::debug!(dir = %dir.display(), error = %e, "no exec agent socket");
            return None;
        }
    };
    // The berth's uid connects; the directory keeps everyone else out of
    // berth's state, and the mount is read-only.
    let ready = std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o666))
        .and_then(|()| std::fs::rename(&staging, &published));
    let accepted = match ready {
        Ok(()) => tokio::time::timeout(wait, listener.accept()).await,
        Err(e) => {
            tracing::debug!(error = %e, "could not publish the exec socket");
            let _ = std::fs::remove_file(&staging);
            return None;
        }
    };
    // Unlinked at once: no second connection can reach it.
    let _ = std::fs::remove_file(&published);
    drop(listener);
    match accepted {
        Ok(Ok((conn, _))) => Some(conn),
        _ => None,
    }
}

/// Starts the berth's exec agent in its container (a detached exec as the
/// berth's uid). A second agent exits at once, so starting one too many is
/// harmless.
pub(crate) async fn start(target: &Target<'_>) -> Result<(), SandboxError> {
    let api = |op: &'static str| target.api_error(op);
    let options = CreateExecOptions {
        cmd: Some(vec![
            format!("{TOOLS_BIN}/berth-helper"),
            berth_exec_agent::listen::LISTEN_SUBCOMMAND.to_string(),
            EXEC_SOCKETS_MOUNT.to_string(),
        ]),
        user: Some(target.user.to_string()),
        attach_stdout: Some(false),
        attach_stderr: Some(false),
        ..Default::default()
    };
    let created = target
        .docker
        .create_exec(target.container, options)
        .await
        .map_err(api("create the exec agent in"))?;
    target
        .docker
        .start_exec(
            &created.id,
            Some(StartExecOptions {
                detach: true,
                tty: false,
                output_capacity: None,
            }),
        )
        .await
        .map_err(api("start the exec agent in"))?;
    Ok(())
}

/// What Docker knows of an exec the agent lost: whether the container
/// restarted, or the memory limit killed something, since it started.
pub(crate) async fn explain_lost(
    target: &Target<'_>,
    mut outcome: ExecOutcome,
    since: SystemTime,
) -> ExecOutcome {
    outcome.container_restarted = super::restarted_since(target, since).await;
    outcome.oom_killed = !outcome.container_restarted && super::oom_since(target, since).await;
    outcome
}
