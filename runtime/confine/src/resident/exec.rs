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
//! whatever is left in the namespace. A PID 1 cloned ahead of its order
//! ([`super::standby`]) takes the same steps from [`take_descriptors`] on.

use std::convert::Infallible;
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;

use crate::seccomp_filter::Program;

use super::wire::ExecOrder;
use crate::command_clone::{self, CloneArgs};
use crate::landlock_rules::HeldPaths;
use crate::shim::{self, check};
use crate::spec::ExecSpec;
use crate::{ConfineError, SETUP_FAILED, mount_tree};

/// What one exec is, checked before anything is cloned: the command as
/// the shim's PID 1 would run it, and its environment (the shim's is its
/// own).
pub(super) struct Prepared {
    pub(super) command: shim::CommandSetup,
    env: Vec<(CString, CString)>,
}

/// What [`prepare`] refuses in an order's text, found without building
/// anything (the resident's check before it hands an order to a standby).
fn check_text(order: &ExecOrder) -> Result<(), ConfineError> {
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
    if order.argv.iter().any(|a| a.contains('\0')) {
        return Err(nul("an argument"));
    }
    for (name, value) in &order.env {
        if name.is_empty() || name.contains('=') {
            return Err(ConfineError::Usage(format!(
                "{name:?} is not an environment name"
            )));
        }
        if name.contains('\0') {
            return Err(nul("an environment name"));
        }
        if value.contains('\0') {
            return Err(nul("an environment value"));
        }
    }
    if order.cwd.contains('\0') {
        return Err(nul("the working directory"));
    }
    Ok(())
}

pub(super) fn prepare(
    berth: &ExecSpec,
    order: &ExecOrder,
    held: &Arc<HeldPaths>,
) -> Result<Prepared, ConfineError> {
    check_text(order)?;
    let nul = |what: &str| ConfineError::Usage(format!("{what} holds a NUL byte"));
    let argv = order
        .argv
        .iter()
        .map(|a| CString::new(a.as_bytes()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| nul("an argument"))?;
    let env = order
        .env
        .iter()
        .map(|(name, value)| {
            Ok((
                CString::new(name.as_bytes()).map_err(|_| nul("an environment name"))?,
                CString::new(value.as_bytes()).map_err(|_| nul("an environment value"))?,
            ))
        })
        .collect::<Result<Vec<_>, ConfineError>>()?;
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
pub(super) struct Attached<'a> {
    stdio: &'a [OwnedFd],
    cgroup: Option<&'a OwnedFd>,
    berth_status: Option<&'a OwnedFd>,
    egress: Option<(u16, &'a OwnedFd)>,
}

impl<'a> Attached<'a> {
    pub(super) fn sort(
        order: &ExecOrder,
        fds: &'a [OwnedFd],
    ) -> Result<Attached<'a>, ConfineError> {
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
    let mut args = CloneArgs {
        flags: (libc::CLONE_NEWPID | libc::CLONE_NEWNS) as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..CloneArgs::default()
    };
    if let Some(dir) = attached.cgroup {
        args.flags |= command_clone::CLONE_INTO_CGROUP;
        args.cgroup = dir.as_raw_fd() as u64;
    }
    // The proxy's listener must be the exec's alone: a namespace of its own.
    if attached.egress.is_some() {
        args.flags |= libc::CLONE_NEWNET as u64;
    }
    clone_pid1(&mut args, |status_w| {
        pid1(&prepared, &attached, status_w, filter, root)
    })
    .map_err(|source| ConfineError::Unavailable {
        mechanism: "a PID and mount namespace cloned into the exec's cgroup",
        remedy: "run berth on Linux 5.7 or later, as root or where user namespaces are allowed",
        source,
    })
}

/// Clones a PID 1 as `args` says (a fork: no `CLONE_VM`, no stack) with a
/// status pipe: the child runs `life` with the pipe's write end and, if it
/// fails, says why on its stderr and exits [`SETUP_FAILED`]. Returns the
/// child's pid and the pipe's read end.
pub(super) fn clone_pid1(
    args: &mut CloneArgs,
    life: impl FnOnce(OwnedFd) -> Result<Infallible, ConfineError>,
) -> std::io::Result<(libc::pid_t, OwnedFd)> {
    let mut pipe = [0; 2];
    // SAFETY: a pipe into a local array.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both ends were just made and are owned by no one else.
    let (status_r, status_w) =
        unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
    // SAFETY: clone3 without CLONE_VM and without a stack is fork; the
    // resident is single-threaded, so the child may do anything.
    let pid = unsafe {
        libc::syscall(
            libc::SYS_clone3,
            std::ptr::from_mut(args),
            std::mem::size_of::<CloneArgs>(),
        )
    };
    match pid {
        -1 => Err(std::io::Error::last_os_error()),
        0 => {
            drop(status_r);
            let code = match life(status_w) {
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

/// Checks an order as [`start`] would, without starting anything: what a
/// standby PID 1 is handed has passed this in the resident, so a bad order
/// is refused on berth's connection rather than failing unseen.
pub(super) fn check_order(order: &ExecOrder, fds: &[OwnedFd]) -> Result<(), ConfineError> {
    Attached::sort(order, fds)?;
    check_text(order)
}

/// The exec's PID 1, in the clone's child.
fn pid1(
    exec: &Prepared,
    attached: &Attached<'_>,
    status_w: OwnedFd,
    filter: &Program,
    root: bool,
) -> Result<Infallible, ConfineError> {
    let taken = take_descriptors(attached, status_w.as_raw_fd(), false)?;
    // In the exec's own network namespace, before the resident's
    // descriptors close (the handoff's copy is one) and before the command
    // exists: the listener is berth's from the start.
    if let Some((port, fd)) = taken.handoff {
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
    close_all_but(taken.first_free(), held_fds(exec))?;
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
    set_environment(exec)?;
    shim::run_command(&exec.command, filter, root, &mask, &taken.status_fds, None)
}

/// The berth's Landlock paths a resident holds open, which PID 1 keeps.
pub(super) fn held_fds(exec: &Prepared) -> impl Iterator<Item = RawFd> + '_ {
    exec.command
        .inherited
        .held()
        .into_iter()
        .flat_map(HeldPaths::fds)
}

/// Replaces PID 1's environment with the command's.
pub(super) fn set_environment(exec: &Prepared) -> Result<(), ConfineError> {
    // SAFETY: single-threaded; the environment is this process's alone.
    unsafe {
        libc::clearenv();
        for (name, value) in &exec.env {
            if libc::setenv(name.as_ptr(), value.as_ptr(), 1) != 0 {
                return Err(ConfineError::last("set the command's environment"));
            }
        }
    }
    Ok(())
}

/// Where PID 1 put the order's descriptors ([`take_descriptors`]).
pub(super) struct Taken {
    /// The status pipes, 3 (the resident's) and 4 (berth's, when sent).
    pub status_fds: Vec<libc::c_int>,
    /// The egress handoff's end and the proxy's port, moved above 9.
    pub handoff: Option<(u16, RawFd)>,
    /// The exec's cgroup directory, moved above 9, when asked to keep it.
    pub cgroup: Option<RawFd>,
}

impl Taken {
    /// The lowest descriptor number PID 1 does not hold as 0–4.
    pub(super) fn first_free(&self) -> u32 {
        3 + self.status_fds.len() as u32
    }
}

/// Takes the exec's descriptors as 0, 1, 2, the resident's status pipe
/// (`status_w`) as 3 and berth's as 4, first (so a failure after this
/// reaches the exec's stderr); what must outlive the numbers 0–4 — the
/// egress handoff, and the cgroup when `keep_cgroup` — moves above 9 first
/// (0–4 may be their numbers). Every copy is close-on-exec.
pub(super) fn take_descriptors(
    attached: &Attached<'_>,
    status_w: RawFd,
    keep_cgroup: bool,
) -> Result<Taken, ConfineError> {
    let above_9 = |fd: RawFd, what: &'static str| {
        // SAFETY: duplicating a descriptor of this process.
        let moved = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10) };
        match moved < 0 {
            true => Err(ConfineError::last(what)),
            false => Ok(moved),
        }
    };
    let status = above_9(status_w, "move the status pipe")?;
    let berth_status = attached
        .berth_status
        .map(|fd| above_9(fd.as_raw_fd(), "move berth's status pipe"))
        .transpose()?;
    let handoff = attached
        .egress
        .map(|(port, fd)| above_9(fd.as_raw_fd(), "move the egress handoff").map(|fd| (port, fd)))
        .transpose()?;
    let cgroup = match (keep_cgroup, attached.cgroup) {
        (true, Some(fd)) => Some(above_9(fd.as_raw_fd(), "move the cgroup's descriptor")?),
        _ => None,
    };
    // SAFETY: process-local descriptor moves in this new process.
    unsafe {
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
    }
    let mut status_fds = vec![3];
    if let Some(moved) = berth_status {
        // SAFETY: as above.
        unsafe {
            if libc::dup2(moved, 4) < 0 {
                return Err(ConfineError::last("take berth's status pipe"));
            }
            libc::fcntl(4, libc::F_SETFD, libc::FD_CLOEXEC);
        }
        status_fds.push(4);
    }
    Ok(Taken {
        status_fds,
        handoff,
        cgroup,
    })
}

/// Closes every descriptor numbered `from` or above but those in `keep`.
pub(super) fn close_all_but(
    from: u32,
    keep: impl Iterator<Item = RawFd>,
) -> Result<(), ConfineError> {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn berth() -> ExecSpec {
        ExecSpec {
            parent_pid: 1,
            worktree: "/tmp/wt".into(),
            work_read_only: false,
            cwd: "/work".into(),
            writable: Vec::new(),
            readable: Vec::new(),
            private_tmp: None,
            system_dirs: Vec::new(),
            network: crate::Network::None,
            uid: None,
            gid: None,
            rlimits: Vec::new(),
            cgroups: Vec::new(),
            egress: None,
        }
    }

    fn order() -> ExecOrder {
        ExecOrder {
            argv: vec!["sh".into(), "-c".into(), "true".into()],
            env: vec![("PATH".into(), "/usr/bin".into())],
            cwd: "/work/sub".into(),
            rlimits: Vec::new(),
            work_read_only: false,
            cgroup: None,
            status_pipe: false,
            egress_port: None,
        }
    }

    /// The resident's check before a standby takes an order refuses what
    /// building it would, with the same words, and nothing else.
    #[test]
    fn the_check_before_a_standby_agrees_with_preparing_the_order() {
        let held = Arc::new(HeldPaths::open(
            &crate::landlock_rules::Paths::default(),
            &[],
        ));
        let changes: Vec<fn(&mut ExecOrder)> = vec![
            |_| {},
            |o| o.argv.clear(),
            |o| o.argv[2] = "a\0b".into(),
            |o| o.cwd = "/tmp".into(),
            |o| o.cwd = "/work/a\0".into(),
            |o| o.env.push((String::new(), "x".into())),
            |o| o.env.push(("A=B".into(), "x".into())),
            |o| o.env.push(("A\0".into(), "x".into())),
            |o| o.env.push(("A".into(), "x\0".into())),
            |o| {
                o.argv[0] = "\0".into();
                o.cwd = "/elsewhere".into();
            },
            |o| {
                o.env.push(("B".into(), "\0".into()));
                o.cwd = "/work/\0".into();
            },
        ];
        let mut refused = 0;
        for change in &changes {
            let mut o = order();
            change(&mut o);
            let checked = check_text(&o).err().map(|e| e.to_string());
            let prepared = prepare(&berth(), &o, &held).err().map(|e| e.to_string());
            assert_eq!(checked, prepared, "{o:?}");
            refused += usize::from(checked.is_some());
        }
        assert_eq!(refused, changes.len() - 1);
    }
}
