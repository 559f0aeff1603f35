//! The next exec's PID 1, cloned ahead of its order: a resident keeps one
//! standing by, already in new PID and mount namespaces with its `/proc`
//! mounted, waiting on a socket pair for the order the resident hands it.
//!
//! Why: the clone of PID and mount namespaces and PID 1's mounts were
//! ~0.35 ms of every exec's start (bpftrace here: `clone3` 146 µs, then
//! 228 µs to the command's clone), and none of it depends on the order.
//! What does — the exec's cgroup — is why a PID 1 could not be cloned
//! before: it was cloned straight into that cgroup (`CLONE_INTO_CGROUP`;
//! a migration afterwards waits for an RCU grace period, 8–15 ms here),
//! and berth names the cgroup after the action, so it exists only once the
//! order does. A standby PID 1 stays in the resident's own cgroups (whose
//! limits bound the berth's execs together) and starts the *command*
//! straight into the exec's cgroup instead ([`crate::command_clone`]):
//! everything the exec runs is born there, and `cgroup.kill` of it ends
//! the command's whole tree, after which PID 1 reports and leaves (its
//! PID namespace's end kills whatever else is in it, as before).
//!
//! The resident checks an order before it hands it over
//! ([`super::exec::check_order`]), so a bad one is refused on berth's
//! connection; an exec with a network namespace of its own (an allow-list
//! berth's proxy port) is cloned for its order as before, and a standby
//! refuses one. A standby dies with its resident (parent-death signal).

use std::convert::Infallible;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use super::exec::{self, Attached};
use super::intake::Taking;
use super::wire::{self, ExecOrder};
use crate::command_clone::{self, CloneArgs};
use crate::shim::{self, check};
use crate::{ConfineError, mount_tree};

/// How long the resident waits for a standby to take its order's bytes.
const HAND_TIMEOUT: Duration = Duration::from_secs(2);

/// A PID 1 standing by, as its resident holds it.
pub(super) struct Standby {
    pid: libc::pid_t,
    /// The resident's end of the pair the order goes over.
    orders: UnixStream,
    /// The read end of its status pipe (the resident's, as a cold exec's).
    status: OwnedFd,
}

/// The resident's standby, and whether to clone the next one.
pub(super) struct StandbySlot {
    standby: Option<Standby>,
    /// An exec a standby could have run started since the last clone.
    wanted: bool,
}

impl StandbySlot {
    /// Empty, and wanting a standby where this build can start a command
    /// into a cgroup.
    pub(super) fn new() -> StandbySlot {
        StandbySlot {
            standby: None,
            wanted: command_clone::INTO_CGROUP,
        }
    }

    /// The standby, for an order it can run (none with a network namespace
    /// of its own); any such order wants the next one cloned.
    pub(super) fn take_for(&mut self, order: &ExecOrder) -> Option<Standby> {
        if order.egress_port.is_some() {
            return None;
        }
        self.wanted = command_clone::INTO_CGROUP;
        self.standby.take()
    }

    /// A standby taken for an order that was then refused.
    pub(super) fn put_back(&mut self, standby: Standby) {
        self.standby = Some(standby);
    }

    /// Clones a standby when there is none and one is wanted: once after
    /// each exec that could have used one, so a clone that fails is not
    /// retried in a loop and an allow-list berth keeps none idle.
    pub(super) fn fill(&mut self, taking: &Taking<'_>) {
        if self.standby.is_none() && self.wanted {
            self.wanted = false;
            self.standby = Standby::clone_ahead(taking).ok();
        }
    }

    /// A child was reaped: the standby, if it was that one, is gone.
    pub(super) fn reaped(&mut self, pid: libc::pid_t) {
        if self.standby.as_ref().is_some_and(|s| s.pid == pid) {
            self.standby = None;
        }
    }

    /// The resident is leaving: the standby goes too.
    pub(super) fn kill(&self) {
        if let Some(standby) = &self.standby {
            // SAFETY: killing our own child.
            unsafe { libc::kill(standby.pid, libc::SIGKILL) };
        }
    }
}

impl Standby {
    /// Clones PID 1 into new PID and mount namespaces (not into any exec's
    /// cgroup), where it mounts its `/proc` and waits for an order.
    fn clone_ahead(taking: &Taking<'_>) -> Result<Standby, ConfineError> {
        let sys = |op: &str| {
            let op = op.to_string();
            move |source| ConfineError::Sys { op, source }
        };
        let (orders, theirs) = UnixStream::pair().map_err(sys("make a standby's order pair"))?;
        orders
            .set_write_timeout(Some(HAND_TIMEOUT))
            .map_err(sys("bound a standby's order writes"))?;
        let mut args = CloneArgs {
            flags: (libc::CLONE_NEWPID | libc::CLONE_NEWNS) as u64,
            exit_signal: libc::SIGCHLD as u64,
            ..CloneArgs::default()
        };
        let (pid, status) =
            exec::clone_pid1(&mut args, |status_w| stand_by(theirs, status_w, taking))
                .map_err(sys("clone a standby PID 1"))?;
        Ok(Standby {
            pid,
            orders,
            status,
        })
    }

    /// Hands `order` (checked: [`exec::check_order`]) and its descriptors
    /// to the standby: its PID 1 and the read end of its status pipe, as
    /// [`exec::start`] returns them. On a failure the standby is killed
    /// (the resident reaps it) and the order may go to a cold clone.
    pub(super) fn start(
        self,
        order: &ExecOrder,
        fds: &[OwnedFd],
    ) -> Result<(libc::pid_t, OwnedFd), ConfineError> {
        let raw: Vec<RawFd> = fds.iter().map(AsRawFd::as_raw_fd).collect();
        let mut orders = self.orders;
        match wire::send_order(&mut orders, order, &raw) {
            Ok(()) => Ok((self.pid, self.status)),
            Err(e) => {
                // SAFETY: killing our own child.
                unsafe { libc::kill(self.pid, libc::SIGKILL) };
                Err(e)
            }
        }
    }
}

/// The standby's life, in the clone's child: ready everything the order
/// does not decide, wait for it, then run it as a cold PID 1 would — the
/// descriptors taken as 0–4, the rest closed, `/work` read-only if asked,
/// the command's environment, the command started into the exec's cgroup.
fn stand_by(
    orders: UnixStream,
    status_w: OwnedFd,
    taking: &Taking<'_>,
) -> Result<Infallible, ConfineError> {
    shim::pid1_bound_to_parent()?;
    // SAFETY: leading a process group, in this process (berth kills the
    // exec by it).
    check(unsafe { libc::setpgid(0, 0) }, "lead a process group")?;
    // Everything of the resident's but the order pair, the status pipe and
    // the berth's held Landlock paths (0–2 are the resident's /dev/null).
    let keep = [orders.as_raw_fd(), status_w.as_raw_fd()];
    let held = taking.held.fds();
    exec::close_all_but(3, keep.into_iter().chain(held))?;
    let mask = shim::block_signals()?;
    mount_tree::exec_proc()?;
    let mut orders = orders;
    // An error here — the resident left or dropped this standby, or an
    // order it could not read — ends it as a setup failure, never as a
    // success: an exec handed an order it did not run must not look run.
    let (order, fds) = wire::recv_order(&mut orders)?;
    if order.egress_port.is_some() {
        return Err(ConfineError::Usage(
            "a standby PID 1 has no network namespace of its own for a proxy port".into(),
        ));
    }
    let attached = Attached::sort(&order, &fds)?;
    let prepared = exec::prepare(taking.berth, &order, taking.held)?;
    let taken = exec::take_descriptors(&attached, status_w.as_raw_fd(), true)?;
    exec::close_all_but(
        taken.first_free(),
        exec::held_fds(&prepared).chain(taken.cgroup),
    )?;
    // Closed by close_range (or taken as 0–4): forgetting them keeps their
    // drops from closing someone else's number.
    std::mem::forget(fds);
    std::mem::forget(orders);
    std::mem::forget(status_w);
    if order.work_read_only {
        mount_tree::make_work_read_only()?;
    }
    exec::set_environment(&prepared)?;
    shim::run_command(
        &prepared.command,
        taking.filter,
        taking.root,
        &mask,
        &taken.status_fds,
        taken.cgroup,
    )
}
