//! The resident: one long-lived process per runner berth that holds what
//! every exec of the berth shares — its cgroups (and so its limits), its
//! mount, IPC, UTS and network namespaces, the mount tree pivoted into — and
//! forks each exec from there ([`exec`]). An allow-list berth's exec gets a
//! network namespace of its own, whose proxy port is that exec's alone.
//!
//! Why: the shim builds all of that again for every exec, and its first
//! write to `cgroup.procs` waits for an RCU grace period (8–15 ms on this
//! machine kind), the tree's twenty mounts and the old root's detach for
//! more. A process forked by a member of a cgroup is born in it, and
//! `clone3(CLONE_INTO_CGROUP)` places it in its own exec cgroup without a
//! migration; a copy of a small mount namespace costs a fraction of a
//! millisecond. Each exec still gets its own PID and mount namespace, its
//! own `/proc`, and the command its limits, uid, Landlock and seccomp, as
//! with the shim. The next exec's PID 1 is cloned ahead while the berth is
//! idle ([`standby`]), so an order finds its namespaces and `/proc` made.
//!
//! The resident is started by the first exec that finds none
//! (`berth-exec-shim --resident`, a [`ResidentSpec`] framed on stdin),
//! detaches (its own session; berth's exit does not end it), listens on a
//! unix socket in a directory only berth can write, says `ready` on its
//! stdout, and serves orders ([`wire`]) from peers of its own uid. It leaves
//! when idle for [`ResidentSpec::idle_secs`], when its socket is removed or
//! replaced (`berth down`), or when its cgroup is killed; its execs' PID 1s
//! die with it, and a resident that leaves by itself removes its cgroups.

mod exec;
mod intake;
mod standby;
pub mod wire;

use std::convert::Infallible;
use std::ffi::{CString, OsString};
use std::io::{Read, Write};
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::shim::{check, enter_user_namespace, loopback_up};
use crate::spec::{ExecSpec, Network, read_framed_as};
use crate::{ConfineError, cgroup, mount_tree, seccomp_filter};
use intake::{Intake, Taking};
use standby::StandbySlot;
use wire::Reply;

/// The shim's first argument that makes it a resident.
pub const RESIDENT_ARG: &str = "--resident";

/// The line a resident prints on its stdout once it serves.
pub const READY: &str = "ready";

/// The most execs one resident runs at once; more are refused.
const MAX_EXECS: usize = 256;

/// What a resident holds for its berth.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResidentSpec {
    /// What the berth's execs share: the tree (with `/work` writable; an
    /// exec makes its own copy read-only), the uid, the network, and the
    /// resident's own cgroups, whose limits bound the berth's execs together.
    /// Its `cwd`, `rlimits` and `egress` are not used.
    pub berth: ExecSpec,
    /// Where the resident listens.
    pub socket: PathBuf,
    /// The berth's cgroup2 directory, holding each exec's cgroup, when
    /// there is one: the resident removes an exec's cgroup once it is gone.
    pub exec_cgroups: Option<PathBuf>,
    /// Seconds without an exec or an order before the resident leaves.
    pub idle_secs: u64,
}

/// The shim's entry as a resident (`ARGS = [shim, "--resident"]`, the spec
/// framed on stdin). The process that berth started returns at once (berth
/// reaps it); the resident is its child, and says `ready` — or why not —
/// on the stdout they share.
pub fn main_from_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let mut args = args.into_iter().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(RESIDENT_ARG)) || args.next().is_some() {
        let _ = writeln!(
            std::io::stdout(),
            "usage: berth-exec-shim {RESIDENT_ARG} (spec framed on stdin)"
        );
        return ExitCode::from(crate::SETUP_FAILED);
    }
    // SAFETY: fd 0 is the pipe berth gave; read unbuffered and never
    // closed by this File.
    let mut stdin = ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(0) });
    let spec: ResidentSpec = match read_framed_as(&mut *stdin) {
        Ok(spec) => spec,
        Err(e) => {
            let _ = writeln!(std::io::stdout(), "berth: resident: {e}");
            return ExitCode::from(crate::SETUP_FAILED);
        }
    };
    // SAFETY: single-threaded; the child carries on alone.
    match unsafe { libc::fork() } {
        -1 => {
            let _ = writeln!(
                std::io::stdout(),
                "berth: resident: fork: {}",
                std::io::Error::last_os_error()
            );
            ExitCode::from(crate::SETUP_FAILED)
        }
        0 => {
            let code = match serve(&spec) {
                Ok(never) => match never {},
                Err(e) => {
                    let _ = writeln!(std::io::stdout(), "berth: resident: {e}");
                    i32::from(crate::SETUP_FAILED)
                }
            };
            // SAFETY: leaving without the parent's exit handlers.
            unsafe { libc::_exit(code) }
        }
        _ => ExitCode::SUCCESS,
    }
}

/// The socket's identity, to notice its removal or replacement.
fn file_id(st: &libc::stat) -> (u64, u64) {
    (st.st_dev, st.st_ino)
}

fn cpath(path: &Path) -> Result<CString, ConfineError> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| ConfineError::Usage(format!("{} holds a NUL byte", path.display())))
}

/// Binds the socket under a temporary name and renames it into place, so
/// a client never connects to a half-made resident. Both through a
/// descriptor of the directory (`/proc/self/fd/N/name`): a state
/// directory's path may be longer than a socket address holds.
fn listen(socket: &Path) -> Result<(UnixListener, OwnedFd, CString, (u64, u64)), ConfineError> {
    let path_err = |what, source| ConfineError::Path {
        what,
        path: socket.to_path_buf(),
        source,
    };
    let (Some(dir), Some(name)) = (socket.parent(), socket.file_name()) else {
        return Err(ConfineError::Usage(format!(
            "socket {} has no directory",
            socket.display()
        )));
    };
    let dir_c = cpath(dir)?;
    // SAFETY: an O_PATH open of a NUL-terminated path; owned below.
    let dir_fd = unsafe {
        libc::open(
            dir_c.as_ptr(),
            libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if dir_fd < 0 {
        return Err(path_err(
            "open the socket's directory",
            std::io::Error::last_os_error(),
        ));
    }
    // SAFETY: just opened, owned by no one else.
    let dir_fd = unsafe { OwnedFd::from_raw_fd(dir_fd) };
    let name_c = CString::new(name.as_bytes())
        .map_err(|_| ConfineError::Usage("socket name holds a NUL byte".into()))?;
    // SAFETY: a plain pid query.
    let staging = format!(".{}.{}", name.to_string_lossy(), unsafe { libc::getpid() });
    let staging_c = CString::new(staging.as_bytes())
        .map_err(|_| ConfineError::Usage("socket name holds a NUL byte".into()))?;
    let through = PathBuf::from(format!("/proc/self/fd/{}", dir_fd.as_raw_fd()));
    let _ = std::fs::remove_file(through.join(&staging));
    let listener = UnixListener::bind(through.join(&staging))
        .map_err(|e| path_err("bind the resident's socket", e))?;
    let st = stat_at(&dir_fd, &staging_c).ok_or_else(|| {
        path_err(
            "stat the resident's socket",
            std::io::Error::last_os_error(),
        )
    })?;
    // SAFETY: renaming within a directory we hold, by plain names.
    let rc = unsafe {
        libc::renameat(
            dir_fd.as_raw_fd(),
            staging_c.as_ptr(),
            dir_fd.as_raw_fd(),
            name_c.as_ptr(),
        )
    };
    if rc != 0 {
        let source = std::io::Error::last_os_error();
        let _ = std::fs::remove_file(through.join(&staging));
        return Err(path_err("put the resident's socket in place", source));
    }
    listener
        .set_nonblocking(true)
        .map_err(|e| path_err("make the socket non-blocking", e))?;
    Ok((listener, dir_fd, name_c, file_id(&st)))
}

fn stat_at(dir: &OwnedFd, name: &CString) -> Option<libc::stat> {
    // SAFETY: fstatat into a zeroed local, relative to a directory we own.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        (libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        ) == 0)
            .then_some(st)
    }
}

/// One running exec.
pub(super) struct Running {
    pid: libc::pid_t,
    /// berth's end; `None` once it closed (the exec is killed) or the
    /// status went out.
    conn: Option<UnixStream>,
    /// Unread `signal` bytes from berth.
    pending: Vec<u8>,
    status: Option<OwnedFd>,
    cgroup: Option<String>,
    reported: bool,
    /// PID 1's own wait status, once reaped.
    waited: Option<i32>,
}

impl Running {
    pub(super) fn report(&mut self, reply: &Reply) {
        if let Some(conn) = &mut self.conn
            && conn.write_all(reply.line().as_bytes()).is_err()
        {
            self.conn = None;
        }
    }

    /// The status went out: berth's end is no longer needed.
    fn report_status(&mut self, status: i32) {
        if !self.reported {
            self.report(&Reply::Status(status));
            self.reported = true;
            self.conn = None;
        }
    }
}

fn serve(spec: &ResidentSpec) -> Result<Infallible, ConfineError> {
    // SAFETY: plain calls on this process: its own session (berth's group
    // and terminal signals do not reach it), not dumpable.
    unsafe {
        libc::setsid();
        check(
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0),
            "make the resident non-dumpable",
        )?;
    }
    cgroup::join(&spec.berth.cgroups)?;
    // SAFETY: plain id queries.
    let (root, uid, gid) = unsafe { (libc::geteuid() == 0, libc::getuid(), libc::getgid()) };
    if !root {
        enter_user_namespace(uid, gid)?;
    }
    let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    if spec.berth.network == Network::None {
        flags |= libc::CLONE_NEWNET;
    }
    // SAFETY: unshare changes only this process's namespaces.
    if unsafe { libc::unshare(flags) } != 0 {
        return Err(ConfineError::Unavailable {
            mechanism: "mount, IPC, UTS and network namespaces",
            remedy: "run berth as root or where user namespaces are allowed",
            source: std::io::Error::last_os_error(),
        });
    }
    if spec.berth.network == Network::None {
        loopback_up()?;
    }
    let (listener, socket_dir, socket_name, socket_id) = listen(&spec.socket)?;
    let exec_cgroups = match &spec.exec_cgroups {
        Some(dir) => {
            let c = cpath(dir)?;
            // SAFETY: an open of a NUL-terminated path; owned below.
            let fd = unsafe {
                libc::open(
                    c.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
                )
            };
            // SAFETY: just opened (or -1, not wrapped).
            (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
        }
        None => None,
    };
    let own_cgroups = open_own_cgroups(&spec.berth.cgroups)?;
    let mut berth = spec.berth.clone();
    berth.work_read_only = false;
    mount_tree::enter_without_proc(&berth)?;
    // Derived once for every exec: the seccomp filter, the berth's
    // Landlock paths held open (all but what each exec mounts anew), and an
    // empty bounding set each exec's command inherits (the resident execs
    // nothing itself; the capabilities it holds stay).
    let filter = seccomp_filter::program()?;
    let held = std::sync::Arc::new(crate::landlock_rules::HeldPaths::open(
        &mount_tree::landlock_paths(&berth),
        &mount_tree::MOUNTED_PER_EXEC.map(Path::new),
    ));
    crate::shim::empty_bounding_set()?;
    ready()?;
    let sigfd = child_signals()?;
    let idle = Duration::from_secs(spec.idle_secs.max(1));
    let mut last_use = Instant::now();
    let mut execs: Vec<Running> = Vec::new();
    let mut intakes: Vec<Intake> = Vec::new();
    let mut standby = StandbySlot::new();
    loop {
        let mut fds = vec![
            libc::pollfd {
                fd: listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigfd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        for intake in &intakes {
            fds.push(libc::pollfd {
                fd: intake.conn.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let exec_fds = 2 + intakes.len();
        // (index into execs, whether the fd is the status pipe)
        let mut owners = Vec::new();
        for (i, exec) in execs.iter().enumerate() {
            if let Some(conn) = &exec.conn {
                fds.push(libc::pollfd {
                    fd: conn.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
                owners.push((i, false));
            }
            if let Some(status) = &exec.status {
                fds.push(libc::pollfd {
                    fd: status.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                });
                owners.push((i, true));
            }
        }
        // SAFETY: polling descriptors we own, at most one second.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, 1000) };
        if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            return Err(ConfineError::last("poll"));
        }
        let readable: Vec<bool> = fds[2..exec_fds].iter().map(|p| p.revents != 0).collect();
        for (pollfd, (i, is_status)) in fds[exec_fds..].iter().zip(owners) {
            if pollfd.revents == 0 {
                continue;
            }
            let exec = &mut execs[i];
            if is_status {
                let mut raw = [0u8; 4];
                let got = exec.status.as_ref().map_or(0, |fd| {
                    // SAFETY: reading into a local buffer from our pipe.
                    unsafe { libc::read(fd.as_raw_fd(), raw.as_mut_ptr().cast(), raw.len()) }
                });
                exec.status = None;
                if got == 4 {
                    exec.report_status(i32::from_ne_bytes(raw));
                }
            } else {
                read_signals(exec);
            }
        }
        if fds[1].revents != 0 {
            drain_signalfd(&sigfd);
        }
        reap(&mut execs, &mut standby, exec_cgroups.as_ref());
        let taking = Taking {
            berth: &berth,
            filter: &filter,
            held: &held,
            root,
        };
        intake::take_orders(&mut intakes, &readable, &mut execs, &mut standby, &taking);
        if fds[0].revents != 0 {
            intake::accept(&listener, &mut intakes, &mut execs, &mut standby, &taking);
            last_use = Instant::now();
        }
        // Off the next order's path: with no order arriving, the next
        // exec's PID 1 is cloned ahead.
        if intakes.is_empty() {
            standby.fill(&taking);
        }
        if !execs.is_empty() || !intakes.is_empty() {
            last_use = Instant::now();
        }
        let ours = stat_at(&socket_dir, &socket_name).is_some_and(|st| file_id(&st) == socket_id);
        if !ours || last_use.elapsed() >= idle {
            standby.kill();
            for exec in &execs {
                // SAFETY: killing our own children's groups.
                unsafe { libc::kill(exec.pid, libc::SIGKILL) };
            }
            if ours {
                // SAFETY: removing our own socket by name in its directory.
                unsafe { libc::unlinkat(socket_dir.as_raw_fd(), socket_name.as_ptr(), 0) };
            }
            await_children(Duration::from_secs(2));
            if let Some(dir) = &exec_cgroups {
                for name in execs.iter().filter_map(|e| e.cgroup.as_deref()) {
                    if let Ok(name) = CString::new(name) {
                        // SAFETY: removing an empty directory by name
                        // beneath one we hold.
                        unsafe {
                            libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR)
                        };
                    }
                }
            }
            leave_own_cgroups(&own_cgroups);
            // SAFETY: leaving; any exec's PID 1 still here dies with us.
            unsafe { libc::_exit(0) }
        }
    }
}

/// One of the resident's own cgroups: its parent directory (opened before
/// the pivot hides `/sys/fs/cgroup`) and its name there.
struct OwnCgroup {
    parent: OwnedFd,
    name: CString,
}

fn open_own_cgroups(dirs: &[PathBuf]) -> Result<Vec<OwnCgroup>, ConfineError> {
    let mut own = Vec::new();
    for dir in dirs {
        let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
            continue;
        };
        let c = cpath(parent)?;
        // SAFETY: an O_PATH open of a NUL-terminated path; owned below.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            continue;
        }
        own.push(OwnCgroup {
            // SAFETY: just opened, owned by no one else.
            parent: unsafe { OwnedFd::from_raw_fd(fd) },
            name: CString::new(name.as_bytes())
                .map_err(|_| ConfineError::Usage("a cgroup name holds a NUL byte".into()))?,
        });
    }
    Ok(own)
}

/// Reaps children until none is left or `wait` has passed (killed execs'
/// PID 1s tearing their namespaces down).
fn await_children(wait: Duration) {
    let until = Instant::now() + wait;
    loop {
        let mut status = 0;
        // SAFETY: waitpid into a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid < 0 || Instant::now() >= until {
            return;
        }
        if pid == 0 {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// Moves the resident into each of its cgroups' parents and removes them,
/// so a resident that ends leaves no directory behind (one still busy is
/// left for `berth down`, which removes what is under the berth's).
fn leave_own_cgroups(own: &[OwnCgroup]) {
    for cgroup in own {
        // SAFETY: opening the parent's `cgroup.procs` beneath a directory we
        // hold, writing "0" (this process) to it, and closing it.
        unsafe {
            let fd = libc::openat(
                cgroup.parent.as_raw_fd(),
                c"cgroup.procs".as_ptr(),
                libc::O_WRONLY | libc::O_CLOEXEC,
            );
            if fd >= 0 {
                libc::write(fd, b"0".as_ptr().cast(), 1);
                libc::close(fd);
            }
        }
    }
    for cgroup in own {
        // SAFETY: removing an empty directory by name beneath one we hold.
        unsafe {
            libc::unlinkat(
                cgroup.parent.as_raw_fd(),
                cgroup.name.as_ptr(),
                libc::AT_REMOVEDIR,
            )
        };
    }
}

/// Says `ready` on stdout, then lets go of berth's pipes: 0, 1 and 2 become
/// `/dev/null` (of the new root).
fn ready() -> Result<(), ConfineError> {
    let line = format!("{READY}\n");
    // SAFETY: writing a local buffer to fd 1, then replacing 0–2.
    unsafe {
        libc::write(1, line.as_ptr().cast(), line.len());
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            return Err(ConfineError::last("open /dev/null"));
        }
        for fd in 0..3 {
            libc::dup2(null, fd);
        }
        libc::close(null);
    }
    Ok(())
}

/// SIGCHLD blocked and read from a signalfd (non-blocking).
fn child_signals() -> Result<OwnedFd, ConfineError> {
    // SAFETY: sigset operations on a local, then a signalfd we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        check(
            libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()),
            "block SIGCHLD",
        )?;
        let fd = libc::signalfd(-1, &set, libc::SFD_CLOEXEC | libc::SFD_NONBLOCK);
        if fd < 0 {
            return Err(ConfineError::last("signalfd"));
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

fn drain_signalfd(sigfd: &OwnedFd) {
    // SAFETY: signalfd_siginfo is plain data; reads into a local until the
    // non-blocking descriptor is empty.
    unsafe {
        let mut info: libc::signalfd_siginfo = std::mem::zeroed();
        while libc::read(
            sigfd.as_raw_fd(),
            (&mut info as *mut libc::signalfd_siginfo).cast(),
            std::mem::size_of::<libc::signalfd_siginfo>(),
        ) > 0
        {}
    }
}

/// Reaps every exited PID 1 (a standby that died unused too). A status
/// PID 1 did not write (it was killed)
/// goes out from the wait once its pipe has ended; a gone exec's cgroup is
/// removed.
fn reap(execs: &mut Vec<Running>, standby: &mut StandbySlot, exec_cgroups: Option<&OwnedFd>) {
    loop {
        let mut status = 0;
        // SAFETY: waitpid into a local.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            break;
        }
        if let Some(exec) = execs.iter_mut().find(|e| e.pid == pid) {
            exec.waited = Some(status);
        }
        standby.reaped(pid);
    }
    execs.retain_mut(|exec| {
        let Some(waited) = exec.waited else {
            return true;
        };
        if exec.status.is_some() {
            // Its report may still be in the pipe.
            return true;
        }
        exec.report_status(waited);
        if let (Some(dir), Some(name)) = (exec_cgroups, &exec.cgroup)
            && let Ok(name) = CString::new(name.as_bytes())
        {
            // SAFETY: removing an empty cgroup directory by name under a
            // directory we own; a busy one (a process still leaving) is
            // left for berth's sweep.
            unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), libc::AT_REMOVEDIR) };
        }
        false
    });
}

/// Reads berth's `signal N` lines; its end closing kills the exec.
fn read_signals(exec: &mut Running) {
    let Some(conn) = &mut exec.conn else { return };
    let mut buf = [0u8; 256];
    match conn.read(&mut buf) {
        Ok(0) => {
            // SAFETY: killing our own child.
            unsafe { libc::kill(exec.pid, libc::SIGKILL) };
            exec.conn = None;
        }
        Ok(n) => {
            exec.pending.extend_from_slice(&buf[..n]);
            apply_signals(exec);
        }
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(_) => {
            // SAFETY: killing our own child.
            unsafe { libc::kill(exec.pid, libc::SIGKILL) };
            exec.conn = None;
        }
    }
}

/// Passes on each whole `signal N` line berth sent; a runaway partial line
/// is dropped.
pub(super) fn apply_signals(exec: &mut Running) {
    while let Some(end) = exec.pending.iter().position(|b| *b == b'\n') {
        let line: Vec<u8> = exec.pending.drain(..=end).collect();
        if let Some(sig) = std::str::from_utf8(&line[..end])
            .ok()
            .and_then(wire::parse_signal)
        {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(exec.pid, sig) };
        }
    }
    if exec.pending.len() > 64 {
        exec.pending.clear();
    }
}
