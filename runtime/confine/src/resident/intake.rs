//! How the resident takes orders: every connection is accepted at once and
//! read without blocking as its bytes arrive ([`OrderIntake`]), so a
//! peer that connects and sends nothing — stopped, or dying between its
//! connect and its order — holds up no other exec of the berth; it is
//! refused once [`ORDER_TIMEOUT`] has passed. A whole order is checked and
//! handed to the PID 1 standing by ([`super::standby`]), or started by a
//! clone of its own ([`exec::start`]); its connection then carries the
//! exec's replies.

use std::io::Write;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

use super::standby::StandbySlot;
use super::wire::{ExecOrder, OrderIntake, ReceivedOrder, Reply};
use super::{MAX_EXECS, Running, apply_signals, exec};
use crate::{ConfineError, ExecSpec, cgroup};

/// How long the resident waits for an order's bytes once connected.
const ORDER_TIMEOUT: Duration = Duration::from_secs(2);

/// The most connections whose orders are still arriving; more are refused.
const MAX_INTAKES: usize = 64;

/// A connection whose order is still arriving, read without blocking.
pub(super) struct Intake {
    pub(super) conn: UnixStream,
    order: OrderIntake,
    since: Instant,
}

/// The peer's uid, from the socket.
fn peer_uid(conn: &UnixStream) -> Option<libc::uid_t> {
    // SAFETY: getsockopt into a zeroed local of the right size.
    unsafe {
        let mut cred: libc::ucred = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        (libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&mut cred as *mut libc::ucred).cast(),
            &mut len,
        ) == 0)
            .then_some(cred.uid)
    }
}

/// What starting an exec needs of the resident.
pub(super) struct Taking<'a> {
    pub(super) berth: &'a ExecSpec,
    pub(super) filter: &'a crate::seccomp_filter::Program,
    /// The berth's Landlock paths, held open for every exec's ruleset.
    pub(super) held: &'a std::sync::Arc<crate::landlock_rules::HeldPaths>,
    pub(super) root: bool,
}

/// Accepts every waiting connection of the resident's own uid, and reads
/// what each has sent so far: an order that arrived whole at once starts
/// now, the others wait in `intakes` for the poll.
pub(super) fn accept(
    listener: &UnixListener,
    intakes: &mut Vec<Intake>,
    execs: &mut Vec<Running>,
    standby: &mut StandbySlot,
    taking: &Taking<'_>,
) {
    while let Ok((mut conn, _)) = listener.accept() {
        // SAFETY: a plain id query.
        if peer_uid(&conn) != Some(unsafe { libc::geteuid() }) {
            continue;
        }
        if intakes.len() >= MAX_INTAKES {
            refuse(
                &mut conn,
                format!("{MAX_INTAKES} orders are already arriving in this berth"),
            );
            continue;
        }
        if let Err(e) = conn.set_nonblocking(true) {
            refuse(&mut conn, format!("make the connection non-blocking: {e}"));
            continue;
        }
        intakes.push(Intake {
            conn,
            order: OrderIntake::default(),
            since: Instant::now(),
        });
        let last = intakes.len() - 1;
        let mut readable = vec![false; intakes.len()];
        readable[last] = true;
        take_orders(intakes, &readable, execs, standby, taking);
    }
}

/// Reads the connections `readable` marks; starts each order that is now
/// whole, refuses a malformed one, and one still not whole after
/// [`ORDER_TIMEOUT`].
pub(super) fn take_orders(
    intakes: &mut Vec<Intake>,
    readable: &[bool],
    execs: &mut Vec<Running>,
    standby: &mut StandbySlot,
    taking: &Taking<'_>,
) {
    let polled = std::mem::take(intakes);
    let marks = readable.iter().copied().chain(std::iter::repeat(false));
    for (mut intake, ready) in polled.into_iter().zip(marks) {
        let read = match ready {
            true => intake.order.read_available(&intake.conn),
            false => Ok(None),
        };
        match read {
            Ok(None) if intake.since.elapsed() < ORDER_TIMEOUT => intakes.push(intake),
            Ok(None) => refuse(
                &mut intake.conn,
                format!("the order did not arrive within {ORDER_TIMEOUT:?}"),
            ),
            Ok(Some(order)) => start(intake.conn, order, execs, standby, taking),
            Err(e) => refuse(&mut intake.conn, e.to_string()),
        }
    }
}

fn refuse(conn: &mut UnixStream, why: String) {
    // A blocking write of one short line: the peer's socket buffer holds it.
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_write_timeout(Some(ORDER_TIMEOUT));
    let _ = conn.write_all(Reply::Refused(why).line().as_bytes());
}

/// Starts one exec whose order arrived whole: checked, then handed to the
/// standby when there is one that can run it, else cloned for it.
fn start(
    mut conn: UnixStream,
    got: ReceivedOrder,
    execs: &mut Vec<Running>,
    standby: &mut StandbySlot,
    taking: &Taking<'_>,
) {
    let ReceivedOrder { order, fds, rest } = got;
    if execs.len() >= MAX_EXECS {
        refuse(
            &mut conn,
            format!("{MAX_EXECS} execs already run in this berth"),
        );
        return;
    }
    if let Some(name) = &order.cgroup
        && !cgroup::valid_component(name)
    {
        refuse(
            &mut conn,
            format!("cgroup name {name:?} is not a plain name"),
        );
        return;
    }
    let started = match standby.take_for(&order) {
        Some(ready) => match exec::check_order(&order, &fds) {
            // A standby that cannot take it (it died) leaves the order to
            // a clone of its own.
            Ok(()) => ready
                .start(&order, &fds)
                .or_else(|_| cold(&order, &fds, taking)),
            Err(e) => {
                standby.put_back(ready);
                Err(e)
            }
        },
        None => cold(&order, &fds, taking),
    };
    match started {
        Ok((pid, status)) => {
            drop(fds);
            let _ = conn.set_nonblocking(false);
            let _ = conn.set_write_timeout(Some(ORDER_TIMEOUT));
            let mut running = Running {
                pid,
                conn: Some(conn),
                pending: rest,
                status: Some(status),
                cgroup: order.cgroup,
                reported: false,
                waited: None,
            };
            running.report(&Reply::Started(pid));
            if let Some(conn) = &running.conn {
                let _ = conn.set_nonblocking(true);
            }
            apply_signals(&mut running);
            execs.push(running);
        }
        Err(e) => refuse(&mut conn, e.to_string()),
    }
}

/// Clones the exec's PID 1 for its order ([`exec::start`]).
fn cold(
    order: &ExecOrder,
    fds: &[OwnedFd],
    taking: &Taking<'_>,
) -> Result<(libc::pid_t, OwnedFd), ConfineError> {
    exec::start(
        taking.berth,
        order,
        fds,
        taking.filter,
        taking.held,
        taking.root,
    )
}
