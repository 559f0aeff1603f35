//! One exec inside the container: the process [`crate::listen`] starts for a
//! connection, with the connection at fd 3 and the exec's token on its
//! command line.
//!
//! It does what the shell wrapper of the Docker path does, without a shell:
//! the command runs in its own session, so it and everything it forks form
//! one process group; when the command ends, what is left of that group is
//! killed, its output drained, and the ending reported — exit code or signal
//! straight from `wait` (no guessing between "killed" and "exited 137"), and
//! whether the container's memory cgroup killed anything meanwhile. berth's
//! kill ([`ToAgent::Kill`], at its deadline) and berth going away (the
//! connection closes) kill the group too.
//!
//! Output flows back as fast as berth reads it: a write to the connection
//! blocks, the command's pipes fill, the command waits.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::wire::{
    Decoder, Ending, ExecSpec, FailureKind, Frame, FromAgent, MAX_CHUNK, StartFailure, ToAgent,
    WireError,
};

/// Where [`crate::listen`] puts the connection.
pub const CONNECTION_FD: RawFd = 3;
/// stdin bytes buffered before the connection is read no further.
const STDIN_BACKLOG: usize = 1 << 20;
/// How long output is still drained after the group was killed: a process
/// that left the group (`setsid`) may hold the pipes for ever.
const DRAIN_GRACE: Duration = Duration::from_millis(300);
/// The memory cgroup's kill counter, cgroup v1 then v2.
const OOM_COUNTERS: [&str; 2] = [
    "/sys/fs/cgroup/memory/memory.oom_control",
    "/sys/fs/cgroup/memory.events",
];

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("fd {CONNECTION_FD} is not berth's connection: {0}")]
    NoConnection(std::io::Error),
    #[error("berth's connection: {0}")]
    Connection(#[source] std::io::Error),
    #[error(transparent)]
    Wire(#[from] WireError),
    #[error("berth sent {0} where the request was due")]
    OutOfOrder(&'static str),
    #[error("{op}: {source}")]
    Io {
        op: &'static str,
        #[source]
        source: std::io::Error,
    },
}

/// Runs the exec berth sends on fd [`CONNECTION_FD`].
pub fn run_on_connection_fd() -> Result<(), RunError> {
    // SAFETY: fcntl on a plain integer fd has no memory effects; it checks
    // that fd 3 is open before it is owned.
    if unsafe { libc::fcntl(CONNECTION_FD, libc::F_GETFD) } < 0 {
        return Err(RunError::NoConnection(std::io::Error::last_os_error()));
    }
    // SAFETY: fd 3 is open (checked above) and handed to this process by
    // the agent for this purpose alone; nothing else owns it.
    let conn = unsafe { OwnedFd::from_raw_fd(CONNECTION_FD) };
    run(UnixStream::from(conn))
}

/// Runs the one exec `conn` carries, to its end.
pub fn run(mut conn: UnixStream) -> Result<(), RunError> {
    let mut decoder = Decoder::new();
    let spec = loop {
        match decoder.next_frame::<ToAgent>()? {
            Some(ToAgent::Request(spec)) => break spec,
            Some(ToAgent::Token(_)) => return Err(RunError::OutOfOrder("a second token")),
            Some(_) => return Err(RunError::OutOfOrder("stdin or kill")),
            None => {}
        }
        let mut buf = [0u8; 8192];
        let n = conn.read(&mut buf).map_err(RunError::Connection)?;
        if n == 0 {
            return Ok(());
        }
        decoder.push(&buf[..n]);
    };
    let oom_before = oom_kills();
    let mut child = match spawn(&spec) {
        Ok(child) => child,
        Err(failure) => {
            let _ = conn.write_all(&FromAgent::Failed(failure).encode());
            return Ok(());
        }
    };
    let pgid = child.id() as libc::pid_t;
    let mut pump = Pump {
        stdin: child.stdin.take(),
        stdout: child.stdout.take(),
        stderr: child.stderr.take(),
        backlog: Vec::new(),
        stdin_done: !spec.stdin,
        pgid,
    };
    let ended = pump.run(&mut conn, &mut decoder, &mut child);
    // Whatever happened, nothing of the command outlives this process.
    kill_group(pgid);
    let status = match ended {
        Ok(status) => status,
        Err(e) => {
            let _ = child.wait();
            return Err(e);
        }
    };
    let ending = Ending {
        code: status.code(),
        signal: status.signal(),
        oom: oom_kills() != oom_before,
    };
    // A status with neither (stopped) cannot come from `wait` without
    // WUNTRACED; report it as killed rather than as nothing.
    let ending = if ending.code.is_none() && ending.signal.is_none() {
        Ending {
            signal: Some(libc::SIGKILL),
            ..ending
        }
    } else {
        ending
    };
    conn.write_all(&FromAgent::Ended(ending).encode())
        .map_err(RunError::Connection)
}

/// Starts the command in its own session, or says why it cannot start.
fn spawn(spec: &ExecSpec) -> Result<Child, StartFailure> {
    if !Path::new(&spec.cwd).is_dir() {
        return Err(StartFailure {
            kind: FailureKind::MissingCwd,
            message: format!("{} is not a directory", spec.cwd),
        });
    }
    let mut argv = spec.argv.iter();
    let mut program = argv.next().cloned().unwrap_or_default();
    // An image without /bin/sh runs shell lines under berth's own shell.
    if program == "/bin/sh"
        && let Some(fallback) = &spec.fallback_shell
        && !is_executable(Path::new("/bin/sh"))
    {
        program = fallback.clone();
    }
    let mut cmd = Command::new(&program);
    cmd.args(argv)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    // SAFETY: setsid is async-signal-safe and touches no memory of the
    // parent; it runs in the child between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd.spawn().map_err(|e| StartFailure {
        kind: FailureKind::Spawn,
        message: format!("{program}: {e}"),
    })
}

fn is_executable(path: &Path) -> bool {
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return false;
    };
    // SAFETY: `c` is a valid NUL-terminated string for the call's duration.
    unsafe { libc::access(c.as_ptr(), libc::X_OK) == 0 }
}

/// Sums the memory cgroup's `oom_kill` counters this container can read.
fn oom_kills() -> u64 {
    let mut total = 0;
    for path in OOM_COUNTERS {
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for line in text.lines() {
            if let Some(n) = line.strip_prefix("oom_kill ") {
                total += n.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    total
}

fn kill_group(pgid: libc::pid_t) {
    if pgid > 0 {
        // SAFETY: a kill(2) of a process group this process created; no
        // memory is involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// The command's pipes and what is still owed to its stdin.
struct Pump {
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    backlog: Vec<u8>,
    /// berth said stdin ends (or the command gets none).
    stdin_done: bool,
    pgid: libc::pid_t,
}

/// Which descriptor a poll slot watches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    Conn,
    Stdin,
    Stdout,
    Stderr,
    Exit,
}

impl Pump {
    /// Pumps until the command has ended and its output is drained; the
    /// command's status.
    fn run(
        &mut self,
        conn: &mut UnixStream,
        decoder: &mut Decoder,
        child: &mut Child,
    ) -> Result<std::process::ExitStatus, RunError> {
        let pidfd = pidfd_open(child.id())?;
        for fd in [
            self.stdin.as_ref().map(AsRawFd::as_raw_fd),
            self.stdout.as_ref().map(AsRawFd::as_raw_fd),
            self.stderr.as_ref().map(AsRawFd::as_raw_fd),
        ]
        .into_iter()
        .flatten()
        {
            set_nonblocking(fd)?;
        }
        // Frames that came with the request.
        self.take_frames(decoder)?;
        let mut status = None;
        let mut drain_until: Option<Instant> = None;
        let mut buf = vec![0u8; MAX_CHUNK];
        loop {
            if self.stdin.is_some() && self.backlog.is_empty() && self.stdin_done {
                self.stdin = None;
            }
            if status.is_some() && self.stdout.is_none() && self.stderr.is_none() {
                break;
            }
            let mut fds = Vec::with_capacity(5);
            let mut slots = Vec::with_capacity(5);
            let mut watch = |fd: RawFd, events: libc::c_short, slot: Slot| {
                fds.push(libc::pollfd {
                    fd,
                    events,
                    revents: 0,
                });
                slots.push(slot);
            };
            if self.backlog.len() < STDIN_BACKLOG {
                watch(conn.as_raw_fd(), libc::POLLIN, Slot::Conn);
            }
            if let Some(s) = &self.stdin
                && !self.backlog.is_empty()
            {
                watch(s.as_raw_fd(), libc::POLLOUT, Slot::Stdin);
            }
            if let Some(s) = &self.stdout {
                watch(s.as_raw_fd(), libc::POLLIN, Slot::Stdout);
            }
            if let Some(s) = &self.stderr {
                watch(s.as_raw_fd(), libc::POLLIN, Slot::Stderr);
            }
            if status.is_none() {
                watch(pidfd.as_raw_fd(), libc::POLLIN, Slot::Exit);
            }
            let timeout = match drain_until {
                Some(until) => {
                    let left = until.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    left.as_millis().min(i32::MAX as u128) as i32
                }
                None => -1,
            };
            // SAFETY: `fds` is a live, correctly sized array of pollfd for
            // the call's duration.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(RunError::Io {
                    op: "poll",
                    source: e,
                });
            }
            for (pfd, slot) in fds.iter().zip(&slots) {
                if pfd.revents == 0 {
                    continue;
                }
                match slot {
                    Slot::Conn => {
                        let n = match conn.read(&mut buf) {
                            Ok(n) => n,
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                            Err(_) => 0,
                        };
                        if n == 0 {
                            // berth went away: nothing is left to report to.
                            kill_group(self.pgid);
                            let _ = child.wait();
                            return Err(RunError::Connection(std::io::Error::from(
                                std::io::ErrorKind::UnexpectedEof,
                            )));
                        }
                        decoder.push(&buf[..n]);
                        self.take_frames(decoder)?;
                    }
                    Slot::Stdin => self.feed_stdin(),
                    Slot::Stdout => {
                        if let Some(bytes) = read_chunk(&mut self.stdout, &mut buf) {
                            conn.write_all(&FromAgent::Stdout(bytes).encode())
                                .map_err(RunError::Connection)?;
                        }
                    }
                    Slot::Stderr => {
                        if let Some(bytes) = read_chunk(&mut self.stderr, &mut buf) {
                            conn.write_all(&FromAgent::Stderr(bytes).encode())
                                .map_err(RunError::Connection)?;
                        }
                    }
                    Slot::Exit => {
                        let ended = child.wait().map_err(|source| RunError::Io {
                            op: "wait for the command",
                            source,
                        })?;
                        status = Some(ended);
                        // The command is done: so is everything it left behind.
                        kill_group(self.pgid);
                        self.stdin = None;
                        drain_until = Some(Instant::now() + DRAIN_GRACE);
                    }
                }
            }
        }
        match status {
            Some(s) => Ok(s),
            // The drain ran out before the exit was seen: cannot happen, as
            // the drain starts at the exit; wait to be sure.
            None => child.wait().map_err(|source| RunError::Io {
                op: "wait for the command",
                source,
            }),
        }
    }

    /// Applies the whole frames `decoder` holds.
    fn take_frames(&mut self, decoder: &mut Decoder) -> Result<(), RunError> {
        while let Some(frame) = decoder.next_frame::<ToAgent>()? {
            match frame {
                ToAgent::Stdin(bytes) => {
                    if self.stdin.is_some() && !self.stdin_done {
                        self.backlog.extend_from_slice(&bytes);
                    }
                }
                ToAgent::StdinEnd => self.stdin_done = true,
                ToAgent::Kill => kill_group(self.pgid),
                ToAgent::Token(_) => return Err(RunError::OutOfOrder("a second token")),
                ToAgent::Request(_) => return Err(RunError::OutOfOrder("a second request")),
                ToAgent::ProxyListener(_) => {
                    return Err(RunError::OutOfOrder("a proxy listener request in an exec"));
                }
            }
        }
        Ok(())
    }

    /// Writes what the pipe takes of the stdin backlog; a command that
    /// stopped reading loses the rest, as a pipe's reader would.
    fn feed_stdin(&mut self) {
        let Some(stdin) = self.stdin.as_mut() else {
            self.backlog.clear();
            return;
        };
        match stdin.write(&self.backlog) {
            Ok(n) => {
                self.backlog.drain(..n);
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => {
                self.stdin = None;
                self.backlog.clear();
                self.stdin_done = true;
            }
        }
    }
}

/// What one read of a command's pipe gave: its bytes, or `None` when there
/// was nothing yet (`pipe` stays) or the pipe ended (`pipe` becomes `None`).
fn read_chunk<R: Read>(pipe: &mut Option<R>, buf: &mut [u8]) -> Option<Vec<u8>> {
    match pipe.as_mut()?.read(buf) {
        Ok(n) if n > 0 => Some(buf[..n].to_vec()),
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
            ) =>
        {
            None
        }
        Ok(_) | Err(_) => {
            *pipe = None;
            None
        }
    }
}

fn pidfd_open(pid: u32) -> Result<OwnedFd, RunError> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1;
    // no memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return Err(RunError::Io {
            op: "pidfd_open",
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: the kernel just returned this fd to this process; nothing else
    // owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

fn set_nonblocking(fd: RawFd) -> Result<(), RunError> {
    // SAFETY: F_GETFL/F_SETFL on an fd this process owns; no memory.
    let ok = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) >= 0
    };
    if ok {
        Ok(())
    } else {
        Err(RunError::Io {
            op: "make a pipe non-blocking",
            source: std::io::Error::last_os_error(),
        })
    }
}
