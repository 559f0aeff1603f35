//! The exec agent's main loop, inside the container: watch berth's socket
//! directory, connect to each socket berth publishes, hand the connection
//! to a fresh [`crate::run`] process.
//!
//! berth binds `.<name>` in the directory, makes it connectable and renames
//! it to `<name>.sock`, so the agent only ever sees whole sockets
//! (`IN_MOVED_TO`). It reads the exec's token frame itself — exactly that
//! frame, so the request stays for the exec's process — and forks that
//! process: the agent is single-threaded, so the child runs [`crate::run`]
//! at once, without loading the program again (an `execve` of
//! `berth-helper` through berth's loader cost more than the rest of an
//! exec of `true` in the container). The child writes its command line
//! over the agent's (the kernel shows a process's argument area as it is
//! now): `berth-helper exec-run berth-exec <token>`, the form berth's kill
//! script looks for. When the title does not fit in the agent's argument
//! area, or the fork fails, the agent starts that process as itself again
//! instead (`/proc/self/exe` with this process's own command line up to
//! `exec-agent`, which also works when berth's loader started it), with
//! `exec-run berth-exec <token>` after it.
//!
//! A connection whose first frame asks for the egress proxy's listener
//! ([`ToAgent::ProxyListener`]) is answered here, with no child: the agent
//! is in the container's network namespace as the berth's uid, so it binds
//! `127.0.0.1:<port>` there (`SO_REUSEPORT`, as berth does when it enters
//! the namespace as root) and sends the listener back over the connection
//! ([`berth_confine::egress_handoff::send_listener`]), then closes its copy.
//! The port is berth's to serve; the agent never accepts on it.
//!
//! One agent per container: it holds the abstract socket
//! [`SINGLETON`] in the container's network namespace, and a second one
//! started by another berth process exits at once.

use std::ffi::OsString;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::run::CONNECTION_FD;
use crate::wire::{Frame, ToAgent, WireError};

/// The abstract socket that makes the agent one per container.
pub const SINGLETON: &[u8] = b"berth-exec-agent";
/// The subcommand that runs one exec; berth's kill script finds its
/// `berth-exec <token>`.
pub const RUN_SUBCOMMAND: &str = "exec-run";
/// The subcommand this loop runs under.
pub const LISTEN_SUBCOMMAND: &str = "exec-agent";
/// The subcommand a berth's container runs as its main process: it starts
/// the agent, then idles (as `sleep infinity` did), so `berth up` needs no
/// exec to start the agent.
pub const IDLE_SUBCOMMAND: &str = "exec-agent-idle";
/// How long berth has to send the token once connected.
const TOKEN_WAIT: Duration = Duration::from_secs(2);
/// How often children are reaped when nothing happens.
const REAP_EVERY_MS: i32 = 1000;

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("{op} {path}: {source}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Runs the agent on `dir` until the container stops. Returns at once when
/// another agent already serves this container.
pub fn listen(dir: &Path) -> Result<(), ListenError> {
    let io = |op: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ListenError::Io { op, path, source }
    };
    let singleton = match SocketAddr::from_abstract_name(SINGLETON)
        .and_then(|addr| UnixListener::bind_addr(&addr))
    {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => return Ok(()),
        Err(e) => return Err(io("hold the agent's singleton socket for", dir)(e)),
    };
    let relaunch = relaunch_prefix();
    let inotify = Inotify::watch(dir).map_err(io("watch", dir))?;
    let agent = Agent {
        relaunch,
        // The exec's process keeps none of the agent's own: a second agent
        // must be able to take the singleton while an exec still runs.
        own_fds: [singleton.as_raw_fd(), inotify.fd.as_raw_fd()],
        title_room: argument_area().map_or(0, |(start, end)| end.saturating_sub(start)),
    };
    // Sockets published before the agent started.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            serve(dir, &entry.file_name().into_vec(), &agent);
        }
    }
    loop {
        for name in inotify
            .wait(REAP_EVERY_MS)
            .map_err(io("read events of", dir))?
        {
            serve(dir, &name, &agent);
        }
        reap();
    }
}

/// What the agent's loop hands each connection.
struct Agent {
    /// This program's command line up to `exec-agent`.
    relaunch: Vec<OsString>,
    /// The agent's own descriptors, closed in a forked exec process.
    own_fds: [RawFd; 2],
    /// Bytes of this process's argument area (0: unknown).
    title_room: usize,
}

/// Whether `name` is a socket berth published: `<[A-Za-z0-9_-]+>.sock`.
pub fn is_published_name(name: &[u8]) -> bool {
    name.strip_suffix(b".sock").is_some_and(|stem| {
        !stem.is_empty()
            && stem.len() <= 64
            && stem
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
    })
}

/// Connects to `dir/name`, reads the token and starts the exec's process.
/// Anything wrong (a socket already served, berth gone, a bad frame) drops
/// the connection: berth then runs the command through Docker.
fn serve(dir: &Path, name: &[u8], agent: &Agent) {
    if !is_published_name(name) {
        return;
    }
    let path = dir.join(std::ffi::OsStr::from_bytes(name));
    let Ok(mut conn) = UnixStream::connect(&path) else {
        return;
    };
    let token = match read_first(&mut conn) {
        Ok(ToAgent::Token(token)) => token,
        Ok(ToAgent::ProxyListener(port)) => {
            hand_over_proxy_listener(&conn, port);
            return;
        }
        _ => return,
    };
    let title = exec_title(&token);
    if title.len() <= agent.title_room {
        match fork_exec_process(conn, &title, &agent.own_fds) {
            Ok(()) => return,
            // The fork failed: start the process the long way.
            Err(back) => conn = back,
        }
    }
    let Some((program, args)) = agent.relaunch.split_first() else {
        return;
    };
    let fd = conn.as_raw_fd();
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg0(program)
        .args(args)
        .args([RUN_SUBCOMMAND, "berth-exec", token.as_str()])
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    // SAFETY: dup2 and fcntl are async-signal-safe and touch no memory of
    // the parent; they run in the child between fork and exec, putting the
    // connection at fd 3 without close-on-exec.
    unsafe {
        cmd.pre_exec(move || {
            let ok = if fd == CONNECTION_FD {
                libc::fcntl(fd, libc::F_SETFD, 0) >= 0
            } else {
                libc::dup2(fd, CONNECTION_FD) >= 0
            };
            if ok {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
    // The child has its own copy; a failed start drops the connection and
    // berth falls back.
    let _ = cmd.spawn();
}

/// The exec process's command line: what berth's kill script finds
/// (`berth-exec <token>`), NUL-separated as the kernel shows it.
fn exec_title(token: &str) -> Vec<u8> {
    let mut title = Vec::new();
    for word in [
        b"berth-helper".as_slice(),
        RUN_SUBCOMMAND.as_bytes(),
        b"berth-exec",
        token.as_bytes(),
    ] {
        title.extend_from_slice(word);
        title.push(0);
    }
    title
}

/// Forks the exec's process for `conn`: the child takes `title` as its
/// command line, closes the agent's own descriptors, puts `/dev/null` on
/// its stdin and stdout (as a started one gets) and runs the exec; it never
/// returns into the agent's loop. The connection comes back when the fork
/// fails.
fn fork_exec_process(conn: UnixStream, title: &[u8], own_fds: &[RawFd]) -> Result<(), UnixStream> {
    // SAFETY: the agent is single-threaded (nothing in `listen` starts a
    // thread), so the child is a whole copy of it: no lock is held by a
    // thread that is not there, and the child may allocate and run any
    // code. The child leaves through `_exit`, never back into the loop.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(conn);
    }
    if pid > 0 {
        // The child has its own copy of the connection.
        return Ok(());
    }
    set_title(title);
    // SAFETY: closing descriptors this child inherited and does not use;
    // `dup2` of /dev/null onto its stdin and stdout. Plain fd calls.
    unsafe {
        for fd in own_fds {
            libc::close(*fd);
        }
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            libc::close(null);
        }
    }
    let code = match crate::run::run(conn) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("berth-helper {RUN_SUBCOMMAND}: running an exec of the exec agent: {e}");
            1
        }
    };
    // SAFETY: ends this child without running the agent's destructors
    // (its listener, its watch) a second time.
    unsafe { libc::_exit(code) }
}

/// This process's argument area, `[arg_start, arg_end)`, from
/// `/proc/self/stat` (fields 48 and 49, after the parenthesised name).
fn argument_area() -> Option<(usize, usize)> {
    let stat = std::fs::read("/proc/self/stat").ok()?;
    let after_name = stat.iter().rposition(|b| *b == b')')?;
    let fields: Vec<&[u8]> = stat.get(after_name + 2..)?.split(|b| *b == b' ').collect();
    // `fields[0]` is field 3 (the state).
    let field = |n: usize| -> Option<usize> {
        std::str::from_utf8(fields.get(n - 3)?)
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let (start, end) = (field(48)?, field(49)?);
    (start > 0 && end > start).then_some((start, end))
}

/// Writes `title` over this process's argument area and clears the rest of
/// it, so `/proc/<pid>/cmdline` shows `title`. Does nothing when it does
/// not fit (the caller checked) or the area is unknown.
fn set_title(title: &[u8]) {
    let Some((start, end)) = argument_area() else {
        return;
    };
    let room = end - start;
    if title.len() > room {
        return;
    }
    // SAFETY: `[start, end)` is this process's own argument area as the
    // kernel reports it: mapped, writable memory of its initial stack that
    // holds the argument strings and nothing else. This process is
    // single-threaded and reads its arguments no more, so overwriting
    // them in place races with nothing; both writes stay inside the area.
    unsafe {
        std::ptr::copy_nonoverlapping(title.as_ptr(), start as *mut u8, title.len());
        std::ptr::write_bytes((start + title.len()) as *mut u8, 0, room - title.len());
    }
}

/// Binds the proxy's port in this namespace and sends the listener to
/// berth; a failure drops the connection (berth logs that the port stays
/// closed).
fn hand_over_proxy_listener(conn: &UnixStream, port: u16) {
    use berth_confine::egress_handoff::{reuseport_listener, send_listener};
    if let Ok(listener) = reuseport_listener(port) {
        let _ = send_listener(conn, &listener);
    }
}

/// Reads exactly the first frame (no byte of the request after it): the
/// exec's token, or a request for the proxy's listener.
fn read_first(conn: &mut UnixStream) -> Result<ToAgent, WireError> {
    let bad = |_| WireError::BadToken;
    conn.set_read_timeout(Some(TOKEN_WAIT)).map_err(bad)?;
    let mut header = [0u8; 5];
    conn.read_exact(&mut header).map_err(bad)?;
    let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
    if !matches!(header[0], b'T' | b'P') {
        return Err(WireError::UnknownKind(header[0]));
    }
    let bound = ToAgent::bound(header[0])?;
    if len > bound {
        return Err(WireError::TooLong {
            kind: header[0],
            len,
            max: bound,
        });
    }
    let mut payload = vec![0u8; len];
    conn.read_exact(&mut payload).map_err(bad)?;
    conn.set_read_timeout(None).map_err(bad)?;
    ToAgent::parse(header[0], &payload)
}

/// This process's command line up to [`LISTEN_SUBCOMMAND`]: what starts
/// this program again, through the loader when the loader started it.
fn relaunch_prefix() -> Vec<OsString> {
    prefix_before(LISTEN_SUBCOMMAND)
}

/// This process's command line up to `subcommand`.
fn prefix_before(subcommand: &str) -> Vec<OsString> {
    let from_proc = std::fs::read("/proc/self/cmdline").ok().and_then(|raw| {
        let parts: Vec<OsString> = raw
            .split(|b| *b == 0)
            .map(|p| OsString::from_vec(p.to_vec()))
            .collect();
        let at = parts.iter().position(|p| p == subcommand)?;
        (at > 0).then(|| parts[..at].to_vec())
    });
    from_proc.unwrap_or_else(|| vec![OsString::from("berth-helper")])
}

/// The container's main process ([`IDLE_SUBCOMMAND`]): starts the agent on
/// `dir` as its child, then idles for good, reaping it when it ends. It
/// never exits — the container lives as long as `sleep infinity` kept it —
/// and never starts the agent again: an agent a command killed is started
/// again by berth (a detached exec) at the next command that finds none.
pub fn idle_with_agent(dir: &Path) -> ! {
    let mut argv = prefix_before(IDLE_SUBCOMMAND);
    let program = argv.remove(0);
    let started = std::process::Command::new(&program)
        .args(argv)
        .arg(LISTEN_SUBCOMMAND)
        .arg(dir)
        .spawn();
    if let Err(e) = started {
        eprintln!("berth-helper {IDLE_SUBCOMMAND}: the exec agent did not start: {e}");
    }
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer; it
        // blocks until a child of this process ends, or fails at once
        // when none is left.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid < 0 {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

/// Reaps the exec processes that ended.
fn reap() {
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
    }
}

/// One inotify watch on a directory, for names that appear in it.
struct Inotify {
    fd: OwnedFd,
}

impl Inotify {
    fn watch(dir: &Path) -> std::io::Result<Inotify> {
        // SAFETY: inotify_init1 takes flags and returns a new fd or -1.
        let raw = unsafe { libc::inotify_init1(libc::IN_CLOEXEC) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned this fd; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let path = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: `path` is a valid NUL-terminated string for the call.
        let wd = unsafe {
            libc::inotify_add_watch(
                fd.as_raw_fd(),
                path.as_ptr(),
                libc::IN_MOVED_TO | libc::IN_CREATE,
            )
        };
        if wd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Inotify { fd })
    }

    /// The names that appeared, waiting up to `timeout_ms`; empty on a
    /// timeout.
    fn wait(&self, timeout_ms: i32) -> std::io::Result<Vec<Vec<u8>>> {
        let mut pfd = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one live pollfd for the call's duration.
        let n = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if n <= 0 {
            let e = std::io::Error::last_os_error();
            return if n == 0 || e.kind() == std::io::ErrorKind::Interrupted {
                Ok(Vec::new())
            } else {
                Err(e)
            };
        }
        let mut buf = [0u8; 4096];
        // SAFETY: reads into a local buffer of the given length.
        let len = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if len < 0 {
            let e = std::io::Error::last_os_error();
            return if e.kind() == std::io::ErrorKind::Interrupted {
                Ok(Vec::new())
            } else {
                Err(e)
            };
        }
        Ok(parse_events(&buf[..len as usize]))
    }
}

/// The names in a buffer of `inotify_event`s (a fixed header, then a
/// NUL-padded name of `len` bytes).
fn parse_events(mut buf: &[u8]) -> Vec<Vec<u8>> {
    const FIXED: usize = std::mem::size_of::<libc::inotify_event>();
    let mut names = Vec::new();
    while buf.len() >= FIXED {
        // `len` is the last u32 of the fixed part.
        let len = u32::from_ne_bytes([
            buf[FIXED - 4],
            buf[FIXED - 3],
            buf[FIXED - 2],
            buf[FIXED - 1],
        ]) as usize;
        let Some(name) = buf.get(FIXED..FIXED + len) else {
            break;
        };
        let name: Vec<u8> = name.iter().copied().take_while(|b| *b != 0).collect();
        if !name.is_empty() {
            names.push(name);
        }
        buf = &buf[FIXED + len..];
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The area the exec's title is written over is this process's whole
    /// command line as the kernel shows it, and the title is what berth's
    /// kill script matches.
    #[test]
    fn the_argument_area_is_the_command_line() {
        let (start, end) = argument_area().unwrap();
        let cmdline = std::fs::read("/proc/self/cmdline").unwrap();
        assert_eq!(end - start, cmdline.len());
        let title = exec_title("bx.t.1.2.3.");
        let shown: Vec<u8> = title
            .iter()
            .map(|b| if *b == 0 { b' ' } else { *b })
            .collect();
        assert_eq!(shown, b"berth-helper exec-run berth-exec bx.t.1.2.3. ");
    }

    #[test]
    fn only_names_berth_publishes_are_served() {
        for good in [&b"123-4.sock"[..], b"a_b.sock"] {
            assert!(is_published_name(good), "{good:?}");
        }
        for bad in [
            &b".123.sock"[..],
            b"x.sock.tmp",
            b".sock",
            b"../x.sock",
            b"a b.sock",
            b"x",
        ] {
            assert!(!is_published_name(bad), "{bad:?}");
        }
    }
}
