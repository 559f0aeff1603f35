//! One exec of the resident: cloned into its own PID and mount namespaces
//! (and, with `CLONE_INTO_CGROUP`, straight into its cgroup — no migration,
//! so no wait for the kernel's RCU grace period; for an allow-list berth,
//! into a network namespace of its own too, where PID 1 binds the proxy's
//! port and sends berth the listener before the command exists), it mounts
//! its own `/proc`, takes the exec's descriptors as 0, 1 and 2, and from
//! there is the shim's PID 1: it starts the command
//! ([`crate::shim::command`]: limits, uid, Landlock, seccomp, exec),
//! forwards signals to every process of its namespace, and reports the
//! command's wait status on a pipe. When it exits, the kernel kills
//! whatever is left in the namespace.

use std::convert::Infallible;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use crate::seccomp_filter::Program;

use super::wire::ExecOrder;
use crate::landlock_rules::HeldPaths;
use crate::shim::{self, check};
use crate::spec::ExecSpec;
use crate::{ConfineError, SETUP_FAILED, mount_tree};

/// `CLONE_INTO_CGROUP` (Linux 5.7): the child starts in the cgroup2
/// directory named by `cgroup`.
const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// `struct clone_args` of `clone3(2)`, up to `cgroup` (version 2, 88 bytes).
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// What one exec is, checked before anything is cloned: the command as
/// the shim's PID 1 would run it, and its environment (the shim's is its
/// own).
struct Prepared {
    command: shim::CommandSetup,
    env: Vec<(CString, CString)>,
}

fn prepare(
    berth: &ExecSpec,
    order: &ExecOrder,
    held: &Arc<HeldPaths>,
) -> Result<Prepared, ConfineError> {
    let nul = |what: &str| ConfineError::Usage(format!("{what} holds a NUL byte"));
    if order.argv.is_empty() {
        return Err(ConfineError::Usage("no program".into()));
    }
    if !order.cwd.starts_with("/work") {
        return Err(ConfineError::Usage(format!(
            "the working directory {} is not under /work",
            order.cwd
        )));
    }
    let argv = order
        .argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| nul("an argument"))?;
    let mut env = Vec::with_capacity(order.env.len());
    for (name, value) in &order.env {
        if name.is_empty() || name.contains('=') {
            return Err(ConfineError::Usage(format!(
                "{name:?} is not an environment name"
            )));
        }
        env.push((
            CString::new(name.as_bytes()).map_err(|_| nul("an environment name"))?,
            CString::new(value.as_bytes()).map_err(|_| nul("an environment value"))?,
        ));
    }
    let spec = ExecSpec {
        cwd: order.cwd.clone(),
        rlimits: order.rlimits.clone(),
        work_read_only: order.work_read_only,
        cgroups: Vec::new(),
        egress: None,
        ..berth.clone()
    };
    Ok(Prepared {
        // The resident emptied its bounding set and opened the berth's
        // Landlock paths once ([`super::serve`]).
        command: shim::CommandSetup::new(
            spec,
            argv,
            shim::Inherited::FromResident(Arc::clone(held)),
        )?,
        env,
    })
}

/// The descriptors attached to an order, by what each is: stdin, stdout,
/// stderr, then the cgroup's directory, berth's status pipe and the egress
/// handoff's end, each when the order names it, in that order.
struct Attached<'a> {
    stdio: &'a [OwnedFd],
    cgroup: Option<&'a OwnedFd>,
    berth_status: Option<&'a OwnedFd>,
    egress: Option<(u16, &'a OwnedFd)>,
}

impl<'a> Attached<'a> {
    fn sort(order: &ExecOrder, fds: &'a [OwnedFd]) -> Result<Attached<'a>, ConfineError> {
        let want = 3
            + usize::from(order.cgroup.is_some())
            + usize::from(order.status_pipe)
            + usize::from(order.egress_port.is_some());
        if fds.len() != want {
            return Err(ConfineError::Usage(format!(
                "{} descriptors with the order, {want} expected",
                fds.len()
            )));
        }
        let (stdio, rest) = fds.split_at(3);
        let mut rest = rest.iter();
        let mut next = |named: bool| if named { rest.next() } else { None };
        let cgroup = next(order.cgroup.is_some());
        let berth_status = next(order.status_pipe);
        let egress = order.egress_port.zip(next(order.egress_port.is_some()));
        Ok(Attached {
            stdio,
            cgroup,
            berth_status,
            egress,
        })
    }
}

/// Starts one exec: returns its PID 1 (as the host numbers it) and the
/// read end of the pipe its status arrives on. `fds` are the order's
/// descriptors ([`Attached`]).
pub(crate) fn start(
    berth: &ExecSpec,
    order: &ExecOrder,
    fds: &[OwnedFd],
    filter: &Program,
    held: &Arc<HeldPaths>,
    root: bool,
) -> Result<(libc::pid_t, OwnedFd), ConfineError> {
    let attached = Attached::sort(order, fds)?;
    let prepared = prepare(berth, order, held)?;
    let mut pipe = [0; 2];
    // SAFETY: a pipe into a local array.
    check(
        unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) },
        "make the status pipe",
    )?;
    // SAFETY: both ends were just made and are owned by no one else.
    let (status_r, status_w) =
        unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
    let mut args = CloneArgs {
        flags: (libc::CLONE_NEWPID | libc::CLONE_NEWNS) as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..CloneArgs::default()
    };
    if let Some(dir) = attached.cgroup {
        args.flags |= CLONE_INTO_CGROUP;
        args.cgroup = dir.as_raw_fd() as u64;
    }
    // The proxy's listener must be the exec's alone: a namespace of its own.
    if attached.egress.is_some() {
        args.flags |= libc::CLONE_NEWNET as u64;
    }
    // SAFETY: clone3 without CLONE_VM and without a stack is fork; the
    // resident is single-threaded, so the child may do anything.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &mut args as *mut CloneArgs,
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match pid {
        -1 => Err(ConfineError::Unavailable {
            mechanism: "a PID and mount namespace cloned into the exec's cgroup",
            remedy: "run berth on Linux 5.7 or later, as root or where user namespaces are allowed",
            source: std::io::Error::last_os_error(),
        }),
        0 => {
            drop(status_r);
            let code = match pid1(&prepared, &attached, status_w, filter, root) {
                Ok(never) => match never {},
                Err(e) => {
                    let _ = writeln!(std::io::stderr(), "berth: confinement: {e}");
                    i32::from(SETUP_FAILED)
                }
            };
            // SAFETY: leaving without running the resident's exit handlers.
            unsafe { libc::_exit(code) }
        }
        child => Ok((child as libc::pid_t, status_r)),
    }
}

/// The exec's PID 1, in the clone's child.
fn pid1(
    exec: &Prepared,
    attached: &Attached<'_>,
    status_w: OwnedFd,
    filter: &Program,
    root: bool,
) -> Result<Infallible, ConfineError> {
    // SAFETY: process-local calls on this new process: it takes the exec's
    // descriptors as 0, 1, 2, its status pipe as 3 and berth's as 4 first
    // (so a failure below reaches the exec's stderr), closes everything
    // else of the resident's, dies with the resident, and leads its own
    // process group (berth kills it by group).
    let (handoff, status_fds) = unsafe {
        // The status pipes and the handoff first: 0–4 may be their numbers.
        let status = libc::fcntl(status_w.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
        if status < 0 {
            return Err(ConfineError::last("move the status pipe"));
        }
        let berth_status = match attached.berth_status {
            Some(fd) => {
                let moved = libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
                if moved < 0 {
                    return Err(ConfineError::last("move berth's status pipe"));
                }
                Some(moved)
            }
            None => None,
        };
        let handoff = match attached.egress {
            Some((port, fd)) => {
                let moved = libc::fcntl(fd.as_raw_fd(), libc::F_DUPFD_CLOEXEC, 10);
                if moved < 0 {
                    return Err(ConfineError::last("move the egress handoff"));
                }
                Some((port, moved))
            }
            None => None,
        };
        for (target, fd) in attached.stdio.iter().enumerate() {
            if libc::dup2(fd.as_raw_fd(), target as libc::c_int) < 0 {
                return Err(ConfineError::last("take the exec's descriptors"));
            }
        }
        if libc::dup2(status, 3) < 0 {
            return Err(ConfineError::last("take the status pipe"));
        }
        // Close-on-exec: the command never holds a status pipe (it could
        // write a status of its choosing).
        libc::fcntl(3, libc::F_SETFD, libc::FD_CLOEXEC);
        let mut status_fds = vec![3];
        if let Some(moved) = berth_status {
            if libc::dup2(moved, 4) < 0 {
                return Err(ConfineError::last("take berth's status pipe"));
            }
            libc::fcntl(4, libc::F_SETFD, libc::FD_CLOEXEC);
            status_fds.push(4);
        }
        (handoff, status_fds)
    };
    // In the exec's own network namespace, before the resident's
    // descriptors close (the handoff's copy is one) and before the command
    // exists: the listener is berth's from the start.
    if let Some((port, fd)) = handoff {
        shim::loopback_up()?;
        // SAFETY: `fd` was duplicated above and stays open until the
        // close_range below.
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        crate::egress_handoff::hand_over_through(fd, port)?;
    }
    // Every descriptor above the status pipes (the resident's, and the
    // copies made above) but the berth's held Landlock paths, which the
    // command builds its ruleset from (close-on-exec: its program never
    // has them).
    let held = exec
        .command
        .inherited
        .held()
        .into_iter()
        .flat_map(HeldPaths::fds);
    close_all_but(3 + status_fds.len() as u32, held)?;
    // SAFETY: leading a process group, in this process.
    check(unsafe { libc::setpgid(0, 0) }, "lead a process group")?;
    // No check of getppid() after this, as the shim makes: in its own PID
    // namespace PID 1's parent is always 0. The resident cloned it a moment
    // ago, and a resident that died since leaves an exec whose status no one
    // reads, as confined as any.
    shim::pid1_bound_to_parent()?;
    // The OwnedFds above were closed by close_range (or are 0–3 now):
    // forgetting them keeps their drops from closing someone else's number.
    std::mem::forget(status_w);
    let mask = shim::block_signals()?;
    mount_tree::exec_mounts(exec.command.spec.work_read_only)?;
    // SAFETY: single-threaded; the environment is this process's alone.
    unsafe {
        libc::clearenv();
        for (name, value) in &exec.env {
            if libc::setenv(name.as_ptr(), value.as_ptr(), 1) != 0 {
                return Err(ConfineError::last("set the command's environment"));
            }
        }
    }
    shim::run_command(&exec.command, filter, root, &mask, &status_fds)
}

/// Closes every descriptor numbered `from` or above but those in `keep`.
fn close_all_but(from: u32, keep: impl Iterator<Item = RawFd>) -> Result<(), ConfineError> {
    let close = |first: u32, last: u32| {
        // SAFETY: closing descriptors of this process that nothing here
        // uses any more (the kept ones lie outside the range).
        if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) } != 0 {
            return Err(ConfineError::last("close the resident's descriptors"));
        }
        Ok(())
    };
    let mut keep: Vec<u32> = keep
        .filter_map(|fd| u32::try_from(fd).ok())
        .filter(|&fd| fd >= from)
        .collect();
    keep.sort_unstable();
    let mut low = from;
    for kept in keep {
        if kept > low {
            close(low, kept - 1)?;
        }
        low = kept.saturating_add(1);
    }
    close(low, u32::MAX)
}
