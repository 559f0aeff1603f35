//! The exec shim: what runs between berth and the command, in the child, so
//! berth's own process gets no `pre_exec`, no namespace and no limit.
//!
//! Three processes:
//! 1. **the shim** (host PID namespace): dies with berth, joins the exec's
//!    cgroups, enters a user namespace when not root, forks a child into new
//!    mount, PID, IPC, UTS and network namespaces, then forwards signals to the
//!    next one and exits as the command did (by the same signal, or code) as
//!    soon as PID 1 reports it;
//! 2. **PID 1** of the new PID namespace: brings `lo` up, builds the mount
//!    tree and pivots into it, starts the command (a vfork on a stack of its
//!    own, as `posix_spawn` does), lets go of its stdio, reaps every orphan, and
//!    forwards signals to every process of the namespace. When it exits —
//!    the command finished, or it was killed — the kernel kills everything
//!    left in the namespace, `setsid` daemons included;
//! 3. **the command**: its own session, rlimits, the berth's uid (when root),
//!    no capabilities, `PR_SET_NO_NEW_PRIVS`, Landlock, seccomp, then
//!    `execvp`.
//!
//! A setup failure prints one line on stderr and exits with
//! [`SETUP_FAILED`]; the command never runs unconfined.

use std::convert::Infallible;
use std::ffi::{CString, OsString};
use std::fs::File;
use std::io::Write;
use std::mem::ManuallyDrop;
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::process::ExitCode;
use std::sync::Arc;

use crate::landlock_rules::HeldPaths;
use crate::spec::{ExecSpec, Network, Rlimit, read_framed};
use crate::{ConfineError, cgroup, command_clone, landlock_rules, mount_tree, seccomp_filter};

/// The exit code of a confinement that could not be set up (as `env` and
/// container runtimes use 125 for "the wrapper failed").
pub const SETUP_FAILED: u8 = 125;

/// Signals the shim and PID 1 pass on instead of dying of.
pub(crate) const FORWARDED: &[libc::c_int] = &[
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
];

/// The shim's entry: `ARGS = [shim, "--", program, args...]`, the spec framed
/// on stdin. Returns only on a setup failure (success ends in the command's
/// own status).
pub fn main_from_args(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    match run(args.into_iter().skip(1).collect()) {
        Ok(never) => match never {},
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "berth: confinement: {e}");
            ExitCode::from(SETUP_FAILED)
        }
    }
}

fn parse(args: Vec<OsString>) -> Result<Vec<CString>, ConfineError> {
    let mut args = args.into_iter();
    if args.next().as_deref() != Some(std::ffi::OsStr::new("--")) {
        return Err(ConfineError::Usage("the first argument must be --".into()));
    }
    let argv: Vec<CString> = args
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<_, _>>()
        .map_err(|_| ConfineError::Usage("an argument holds a NUL byte".into()))?;
    if argv.is_empty() {
        return Err(ConfineError::Usage("no program after --".into()));
    }
    Ok(argv)
}

pub(crate) fn check(rc: libc::c_int, op: &str) -> Result<(), ConfineError> {
    if rc != 0 {
        return Err(ConfineError::last(op));
    }
    Ok(())
}

fn run(args: Vec<OsString>) -> Result<Infallible, ConfineError> {
    let argv = parse(args)?;
    // SAFETY: fd 0 is the pipe berth gave; the File is never dropped, so it
    // stays open for the command, and reading it unbuffered leaves the
    // command's input in place.
    let mut stdin = ManuallyDrop::new(unsafe { File::from_raw_fd(0) });
    let spec = read_framed(&mut *stdin)?;

    // SAFETY: plain prctl/getppid calls.
    unsafe {
        check(
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ),
            "set the parent-death signal",
        )?;
        if libc::getppid() != spec.parent_pid {
            return Err(ConfineError::Usage(
                "berth exited before the exec started".into(),
            ));
        }
    }
    cgroup::join(&spec.cgroups)?;
    // SAFETY: plain id queries.
    let (root, uid, gid) = unsafe { (libc::geteuid() == 0, libc::getuid(), libc::getgid()) };
    if !root {
        enter_user_namespace(uid, gid)?;
    }
    let mut flags =
        libc::CLONE_NEWNS | libc::CLONE_NEWPID | libc::CLONE_NEWIPC | libc::CLONE_NEWUTS;
    if spec.network == Network::None {
        flags |= libc::CLONE_NEWNET;
    }
    let mask = block_signals()?;
    let mut pipe = [0; 2];
    // SAFETY: a pipe into a local array.
    check(
        unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) },
        "make the status pipe",
    )?;
    let [status_r, status_w] = pipe;
    // A fork whose child alone gets the new namespaces: this process never
    // holds them, so its exit does not wait for their teardown (PID 1's does,
    // after the status is reported).
    // SAFETY: clone without CLONE_VM and with no new stack is fork; the shim
    // is single-threaded, so the child may do anything.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone,
            (flags | libc::SIGCHLD) as libc::c_ulong,
            0usize,
            0usize,
            0usize,
            0usize,
        )
    };
    match pid as libc::pid_t {
        -1 => Err(ConfineError::Unavailable {
            mechanism: "mount, PID and network namespaces",
            remedy: "run berth as root or where user namespaces are allowed",
            source: std::io::Error::last_os_error(),
        }),
        0 => {
            // SAFETY: closing our copy of the read end.
            unsafe { libc::close(status_r) };
            let code = match pid1(&spec, &argv, &mask, status_w, root) {
                Ok(never) => match never {},
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "berth: confinement: {e}");
                    i32::from(SETUP_FAILED)
                }
            };
            // SAFETY: leaving without running the parent's exit handlers.
            unsafe { libc::_exit(code) }
        }
        child => {
            // SAFETY: closing our copy of the write end.
            unsafe { libc::close(status_w) };
            exit_like(wait_for_status(child, status_r, &mask)?)
        }
    }
}

pub(crate) fn enter_user_namespace(uid: libc::uid_t, gid: libc::gid_t) -> Result<(), ConfineError> {
    // SAFETY: unshare changes only this process's namespaces.
    if unsafe { libc::unshare(libc::CLONE_NEWUSER) } != 0 {
        return Err(ConfineError::Unavailable {
            mechanism: "an unprivileged user namespace",
            remedy: "allow them (sysctl user.max_user_namespaces > 0, kernel.unprivileged_userns_clone = 1, or the AppArmor userns restriction off) or run berth as root",
            source: std::io::Error::last_os_error(),
        });
    }
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|source| ConfineError::Path {
            what: "write the user namespace map",
            path: file.into(),
            source,
        })
    };
    write("/proc/self/setgroups", "deny".into())?;
    write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

pub(crate) fn block_signals() -> Result<libc::sigset_t, ConfineError> {
    // SAFETY: sigset operations on a local.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in FORWARDED.iter().chain([libc::SIGCHLD].iter()) {
            libc::sigaddset(&mut set, *sig);
        }
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(ConfineError::last("block signals"));
        }
        Ok(set)
    }
}

/// Waits for `child`, passing each forwarded signal to `forward`; reaps any
/// other child on the way (PID 1 adopts orphans). Returns the child's wait
/// status.
pub(crate) fn forward_until_exit(
    child: libc::pid_t,
    mask: &libc::sigset_t,
    mut forward: impl FnMut(libc::c_int),
) -> libc::c_int {
    loop {
        // Reap first: the child may have exited before the signal was blocked
        // for good.
        loop {
            let mut status = 0;
            // SAFETY: waitpid into a local.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid == child {
                return status;
            }
            if pid <= 0 {
                break;
            }
        }
        // SAFETY: waiting on a blocked set; the info is not needed.
        let sig = unsafe { libc::sigwaitinfo(mask, std::ptr::null_mut()) };
        if sig > 0 && sig != libc::SIGCHLD {
            forward(sig);
        }
    }
}

/// The command's wait status, as PID 1 reports it on the status pipe — read
/// as soon as it is written, without waiting for PID 1's own exit, which
/// tears down the namespaces (the kernel finishes that, and kills whatever is
/// left in them, whether or not anyone waits). Forwards signals to PID 1
/// meanwhile. When PID 1 dies without a report (killed), its own status.
fn wait_for_status(
    child: libc::pid_t,
    status_r: libc::c_int,
    mask: &libc::sigset_t,
) -> Result<libc::c_int, ConfineError> {
    // SAFETY: a signalfd for the already-blocked set, closed at exit.
    let sigfd = unsafe { libc::signalfd(-1, mask, libc::SFD_CLOEXEC) };
    if sigfd < 0 {
        return Err(ConfineError::last("signalfd"));
    }
    loop {
        let mut fds = [
            libc::pollfd {
                fd: status_r,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: sigfd,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: polling two descriptors we own.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(ConfineError::last("poll"));
        }
        if fds[0].revents != 0 {
            let mut raw = [0u8; 4];
            // SAFETY: reading into a local buffer from our pipe.
            let n = unsafe { libc::read(status_r, raw.as_mut_ptr().cast(), raw.len()) };
            if n == 4 {
                return Ok(i32::from_ne_bytes(raw));
            }
            // No report: PID 1 died first.
            let mut status = 0;
            // SAFETY: waiting for our own child.
            unsafe { libc::waitpid(child, &mut status, 0) };
            return Ok(status);
        }
        if fds[1].revents != 0 {
            // SAFETY: signalfd_siginfo is plain data; read fills it.
            let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
            // SAFETY: reading one record into a local.
            let n = unsafe {
                libc::read(
                    sigfd,
                    (&mut info as *mut libc::signalfd_siginfo).cast(),
                    std::mem::size_of::<libc::signalfd_siginfo>(),
                )
            };
            let sig = info.ssi_signo as libc::c_int;
            if n > 0 && sig != libc::SIGCHLD {
                // SAFETY: signalling our own child.
                unsafe { libc::kill(child, sig) };
            }
        }
    }
}

/// Exits the way the wait status says: the same code, or the same signal
/// (core dumps off), so berth sees `Signaled(n)` as it would without the shim.
fn exit_like(status: libc::c_int) -> ! {
    if libc::WIFEXITED(status) {
        // SAFETY: ending the process.
        unsafe { libc::_exit(libc::WEXITSTATUS(status)) }
    }
    let sig = if libc::WIFSIGNALED(status) {
        libc::WTERMSIG(status)
    } else {
        libc::SIGKILL
    };
    // SAFETY: resetting this process's own signal state and raising.
    unsafe {
        let no_core = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig)
    }
}

/// PID 1 of the exec's namespace.
fn pid1(
    spec: &ExecSpec,
    argv: &[CString],
    mask: &libc::sigset_t,
    status_w: libc::c_int,
    root: bool,
) -> Result<Infallible, ConfineError> {
    pid1_bound_to_parent()?;
    if spec.network == Network::None {
        loopback_up()?;
        // Before the mount tree hides berth's handoff socket and before
        // the command exists: the listener is berth's from the start.
        if let Some(h) = &spec.egress {
            crate::egress_handoff::hand_over(h)?;
        }
    }
    mount_tree::enter(spec)?;
    let filter = seccomp_filter::program()?;
    let setup = CommandSetup::new(spec.clone(), argv.to_vec(), Inherited::Nothing)?;
    run_command(&setup, &filter, root, mask, &[status_w], None)
}

/// PID 1 dies with its parent (the shim, or the resident) and is not
/// dumpable: no process of the berth's uid reads or traces it.
pub(crate) fn pid1_bound_to_parent() -> Result<(), ConfineError> {
    // SAFETY: plain prctl calls on this process.
    unsafe {
        check(
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ),
            "set the parent-death signal of PID 1",
        )?;
        check(
            libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0),
            "make PID 1 non-dumpable",
        )?;
    }
    Ok(())
}

/// One command as PID 1 runs it — the shim's and a resident exec's alike:
/// its spec, argv, working directory and Landlock paths, derived once.
pub(crate) struct CommandSetup {
    pub spec: ExecSpec,
    pub argv: Vec<CString>,
    pub cwd: CString,
    pub landlock: landlock_rules::Paths,
    /// What the command's process inherits, derived once by a resident.
    pub inherited: Inherited,
}

/// What a command's process is forked with, beyond its exec's spec.
#[derive(Debug, Clone)]
pub(crate) enum Inherited {
    /// Under the shim, nothing: the command empties its capability
    /// bounding set and opens its Landlock paths itself.
    Nothing,
    /// From a resident, which derived both once for all its execs: an
    /// empty bounding set ([`empty_bounding_set`]), and the berth's
    /// Landlock paths held open.
    FromResident(Arc<HeldPaths>),
}

impl Inherited {
    /// The held Landlock paths, if any.
    pub(crate) fn held(&self) -> Option<&HeldPaths> {
        match self {
            Inherited::Nothing => None,
            Inherited::FromResident(held) => Some(held),
        }
    }
}

impl CommandSetup {
    pub(crate) fn new(
        spec: ExecSpec,
        argv: Vec<CString>,
        inherited: Inherited,
    ) -> Result<Self, ConfineError> {
        let cwd = CString::new(spec.cwd.as_bytes())
            .map_err(|_| ConfineError::Usage("the working directory holds a NUL byte".into()))?;
        let landlock = mount_tree::landlock_paths(&spec);
        Ok(CommandSetup {
            spec,
            argv,
            cwd,
            landlock,
            inherited,
        })
    }
}

/// Empties this process's capability bounding set, so no program it (or a
/// child) execs gains a capability: uid 0 without capabilities keeps none
/// after exec. The capabilities this process holds now stay (the bounding
/// set limits only what an exec grants). Capabilities are numbered from 0
/// to the kernel's last with no gap, so the first number it rejects ends
/// the list (a system call per capability it has, not 64).
pub(crate) fn empty_bounding_set() -> Result<(), ConfineError> {
    for cap in 0..=63 {
        // SAFETY: a plain prctl on this process.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                return Ok(());
            }
            return Err(ConfineError::last("drop capabilities"));
        }
    }
    Ok(())
}

/// The rest of PID 1's life, the shim's and a resident exec's alike: starts
/// the command ([`spawn_command`]), forwards the blocked signals in `mask`
/// to every process of the namespace, writes the command's wait status on
/// each of `status_w` (the shim's pipe; a resident exec's pipe to its
/// resident, then berth's own), and exits — which ends the namespace. A
/// standby PID 1, cloned before its exec's cgroup was named, starts the
/// command `into_cgroup`.
pub(crate) fn run_command(
    setup: &CommandSetup,
    filter: &seccomp_filter::Program,
    root: bool,
    mask: &libc::sigset_t,
    status_w: &[libc::c_int],
    into_cgroup: Option<RawFd>,
) -> Result<Infallible, ConfineError> {
    let child = spawn_command(
        &CommandStart {
            setup,
            filter,
            root,
        },
        into_cgroup,
    )?;
    // The command has its own copies of the exec's stdin, stdout and
    // stderr; PID 1 writes nothing to them from here on, so it lets them
    // go: the output's end reaches berth when the command (and whatever it
    // left holding them) is gone, not only once PID 1 has reported and
    // left. Each of `status_w` is 3 or above.
    // SAFETY: closing this process's own 0–2, unused from here on.
    unsafe { libc::syscall(libc::SYS_close_range, 0u32, 2u32, 0u32) };
    let status = forward_until_exit(child, mask, |sig| {
        // SAFETY: every process of this namespace but PID 1 itself.
        unsafe { libc::kill(-1, sig) };
    });
    let bytes = status.to_ne_bytes();
    for &fd in status_w {
        // SAFETY: writing a local buffer to our pipe.
        unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        128 + libc::WTERMSIG(status)
    };
    // SAFETY: PID 1 leaving ends the namespace: the kernel kills the rest.
    unsafe { libc::_exit(code) }
}

/// What the command's process is handed through `clone`.
struct CommandStart<'a> {
    setup: &'a CommandSetup,
    filter: &'a seccomp_filter::Program,
    root: bool,
}

/// Starts the command's process ([`command_entry`]) on a stack of its own,
/// into `into_cgroup` when PID 1 is not in the exec's cgroup itself
/// ([`command_clone`]).
fn spawn_command(
    start: &CommandStart<'_>,
    into_cgroup: Option<RawFd>,
) -> Result<libc::pid_t, ConfineError> {
    // SAFETY: `command_entry` reads the `CommandStart` it is given, which
    // lives on this frame until the vfork'd child has exec'd or exited;
    // PID 1 is single-threaded.
    unsafe {
        command_clone::start_on_own_stack(
            command_entry,
            (start as *const CommandStart<'_>).cast_mut().cast(),
            into_cgroup,
        )
    }
}

/// The command's process, on its own stack in PID 1's memory.
extern "C" fn command_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the `CommandStart` `spawn_command` passed, alive
    // until this process execs or exits (PID 1 is stopped until then).
    let start = unsafe { &*arg.cast::<CommandStart<'_>>() };
    let code = match command(start.setup, start.filter, start.root) {
        Ok(never) => match never {},
        Err((code, e)) => {
            let _ = writeln!(std::io::stderr(), "berth: {e}");
            code
        }
    };
    // SAFETY: leaving without running PID 1's exit handlers (their state
    // is PID 1's memory).
    unsafe { libc::_exit(code) }
}

pub(crate) fn loopback_up() -> Result<(), ConfineError> {
    // SAFETY: a socket for the ioctl, closed below; the ifreq is plain data.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(ConfineError::last("socket for lo"));
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        for (i, b) in b"lo\0".iter().enumerate() {
            ifr.ifr_name[i] = *b as libc::c_char;
        }
        let result = if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut ifr) != 0 {
            Err(ConfineError::last("read the flags of lo"))
        } else {
            ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &ifr) != 0 {
                Err(ConfineError::last("bring lo up"))
            } else {
                Ok(())
            }
        };
        libc::close(fd);
        result
    }
}

fn resource(limit: Rlimit) -> libc::__rlimit_resource_t {
    match limit {
        Rlimit::Core => libc::RLIMIT_CORE,
        Rlimit::OpenFiles => libc::RLIMIT_NOFILE,
        Rlimit::AddressSpace => libc::RLIMIT_AS,
        Rlimit::Processes => libc::RLIMIT_NPROC,
        Rlimit::FileSize => libc::RLIMIT_FSIZE,
        Rlimit::CpuSeconds => libc::RLIMIT_CPU,
    }
}

type Failed = (i32, ConfineError);

fn setup_failed(e: ConfineError) -> Failed {
    (i32::from(SETUP_FAILED), e)
}

/// The command's own process: limits, identity, walls, exec.
fn command(
    setup: &CommandSetup,
    filter: &seccomp_filter::Program,
    root: bool,
) -> Result<Infallible, Failed> {
    let CommandSetup {
        spec,
        argv,
        cwd,
        landlock,
        inherited,
    } = setup;
    // SAFETY: process-local system calls with local arguments.
    unsafe {
        libc::setsid();
        for (limit, value) in &spec.rlimits {
            let res = resource(*limit);
            let mut current = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::getrlimit(res, &mut current);
            let value = (*value).min(current.rlim_max);
            let new = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(res, &new) != 0 {
                return Err(setup_failed(ConfineError::last(format!(
                    "set {limit:?} limit"
                ))));
            }
        }
        // No capability survives exec: empty the bounding set while we still
        // may, unless the parent did.
        if let Inherited::Nothing = inherited {
            empty_bounding_set().map_err(setup_failed)?;
        }
        if root && let Some(uid) = spec.uid {
            let gid = spec.gid.unwrap_or(uid);
            // The system calls themselves, not the C library's wrappers,
            // which would signal every thread they believe shares these
            // credentials: this process shares PID 1's memory, not its ids.
            if libc::syscall(libc::SYS_setgroups, 0usize, std::ptr::null::<libc::gid_t>()) != 0
                || libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0
                || libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0
            {
                return Err(setup_failed(ConfineError::last(format!(
                    "switch to uid {uid} gid {gid}"
                ))));
            }
        }
        if libc::chdir(cwd.as_ptr()) != 0 {
            return Err(setup_failed(ConfineError::last(format!(
                "chdir {}",
                spec.cwd
            ))));
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(setup_failed(ConfineError::last("set no_new_privs")));
        }
    }
    match landlock_rules::restrict(landlock, inherited.held()).map_err(setup_failed)? {
        landlock_rules::Enforcement::Full => {}
        landlock_rules::Enforcement::Partial => {
            let _ = writeln!(
                std::io::stderr(),
                "berth: note: this kernel's Landlock enforces only part of the file rules (the namespaces still hold)"
            );
        }
        landlock_rules::Enforcement::None => {
            let _ = writeln!(
                std::io::stderr(),
                "berth: note: Landlock is not available on this kernel: only the namespaces confine files"
            );
        }
    }
    seccomp_filter::install(filter).map_err(setup_failed)?;
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: a null-terminated argv of live C strings; on success this never
    // returns.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
        libc::execvp(ptrs[0], ptrs.as_ptr());
    }
    let error = std::io::Error::last_os_error();
    let code = match error.raw_os_error() {
        Some(libc::ENOENT) => 127,
        _ => 126,
    };
    Err((
        code,
        ConfineError::Path {
            what: "run",
            path: std::path::PathBuf::from(std::ffi::OsStr::from_bytes(argv[0].as_bytes())),
            source: error,
        },
    ))
}
