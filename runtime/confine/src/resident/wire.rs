//! The resident's socket protocol, one connection per exec:
//!
//! - berth sends one [`ExecOrder`] framed as the exec spec is (its length in
//!   decimal, a newline, the JSON), with the exec's descriptors attached
//!   (`SCM_RIGHTS`): stdin, stdout, stderr, the exec's cgroup2 directory
//!   when it has one, and the end of berth's egress handoff pair when the
//!   berth's connections go through berth's proxy;
//! - the resident answers in [`Reply`] lines: `started PID` (the exec's
//!   PID 1 as the host sees it), then `status WAIT_STATUS`, or `refused WHY`;
//! - berth may send `signal N` lines meanwhile; closing its end kills the
//!   exec (as the shim's parent-death signal did).
//!
//! Both ends are berth's own (the socket lies in a directory only berth can
//! write, and the resident checks its peer's uid); still, what is read is
//! bounded and parsed totally.

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;

use serde::{Deserialize, Serialize};

use crate::ConfineError;
use crate::spec::Rlimit;

/// The most descriptors an order carries (stdin, stdout, stderr, cgroup,
/// berth's status pipe, egress handoff).
pub const MAX_FDS: usize = 6;

/// The largest order accepted (argv and environment of one command).
const MAX_ORDER: usize = 4 << 20;

/// One exec, as berth asks the resident for it. What the berth shares (the
/// tree, the uid, the network) was fixed when the resident started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecOrder {
    /// The program and its arguments (`argv[0]` is looked up in `PATH`).
    pub argv: Vec<String>,
    /// The command's whole environment.
    pub env: Vec<(String, String)>,
    /// The working directory, a path under `/work`.
    pub cwd: String,
    pub rlimits: Vec<(Rlimit, u64)>,
    /// `/work` read-only for this exec.
    pub work_read_only: bool,
    /// The name of the exec's cgroup2 directory (below the berth's), whose
    /// descriptor is the fourth one attached: the exec is cloned into it,
    /// and the resident removes it once the exec is gone.
    pub cgroup: Option<String>,
    /// berth's own status pipe is attached next (after the cgroup's
    /// descriptor, before the egress handoff): PID 1 writes the command's
    /// wait status on it (four bytes, native order) as it does on the
    /// resident's, so berth hears of the end one wake-up sooner than
    /// through the resident's `status` line, which still follows (and is
    /// what berth reads when PID 1 died without writing).
    #[serde(default)]
    pub status_pipe: bool,
    /// The exec gets a network namespace of its own (only `lo`), where its
    /// PID 1 binds the proxy's port `127.0.0.1:PORT` and sends the listener
    /// back over the last descriptor attached (berth's egress handoff):
    /// the listener names the exec's berth to berth's proxy.
    #[serde(default)]
    pub egress_port: Option<u16>,
}

/// What the resident says on an exec's connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The exec's PID 1, as the host's PID namespace numbers it (its own
    /// process group too).
    Started(i32),
    /// The command's wait status (as `waitpid` gives it).
    Status(i32),
    /// The exec did not start, and why.
    Refused(String),
}

impl Reply {
    pub fn line(&self) -> String {
        match self {
            Reply::Started(pid) => format!("started {pid}\n"),
            Reply::Status(status) => format!("status {status}\n"),
            Reply::Refused(why) => format!("refused {}\n", why.replace('\n', " ")),
        }
    }

    /// Reads one line (without its newline); `None` for anything else.
    pub fn parse(line: &str) -> Option<Reply> {
        let (word, rest) = line.split_once(' ')?;
        match word {
            "started" => rest.parse().ok().map(Reply::Started),
            "status" => rest.parse().ok().map(Reply::Status),
            "refused" => Some(Reply::Refused(rest.to_string())),
            _ => None,
        }
    }
}

/// The `signal N` line berth sends to pass a signal to the exec.
pub fn signal_line(signal: i32) -> String {
    format!("signal {signal}\n")
}

/// Reads a `signal N` line (without its newline).
pub fn parse_signal(line: &str) -> Option<i32> {
    line.strip_prefix("signal ")?
        .parse()
        .ok()
        .filter(|n| (1..=64).contains(n))
}

/// Sends `order` framed, with `fds` attached to its first byte.
pub fn send_order(
    stream: &mut UnixStream,
    order: &ExecOrder,
    fds: &[RawFd],
) -> Result<(), ConfineError> {
    if fds.len() > MAX_FDS {
        return Err(ConfineError::Spec(format!(
            "{} descriptors in one order",
            fds.len()
        )));
    }
    let json = serde_json::to_vec(order).map_err(|e| ConfineError::Spec(e.to_string()))?;
    let mut framed = format!("{}\n", json.len()).into_bytes();
    framed.extend_from_slice(&json);
    // The descriptors ride on the first byte; the rest follows plainly.
    send_byte_with_fds(stream, framed[0], fds)?;
    stream
        .write_all(&framed[1..])
        .map_err(|e| ConfineError::Spec(format!("send the order: {e}")))
}

/// Sends one byte with `fds` attached (`SCM_RIGHTS`).
fn send_byte_with_fds(stream: &UnixStream, byte: u8, fds: &[RawFd]) -> Result<(), ConfineError> {
    let mut byte = [byte];
    let space = cmsg_space(fds.len());
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: msghdr is plain data; every pointer set below points into a
    // local that outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if !fds.is_empty() {
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = space as _;
        // SAFETY: the control buffer holds CMSG_SPACE for `fds`; the header
        // and data pointers come from the CMSG macros over it.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of_val(fds) as u32) as _;
            std::ptr::copy_nonoverlapping(
                fds.as_ptr().cast::<u8>(),
                libc::CMSG_DATA(cmsg),
                std::mem::size_of_val(fds),
            );
        }
    }
    loop {
        // SAFETY: a socket we own and the message built above.
        let n = unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) };
        if n == 1 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            return Err(ConfineError::Spec(format!("send the order: {e}")));
        }
    }
}

fn cmsg_space(fds: usize) -> usize {
    // SAFETY: a pure size computation.
    unsafe { libc::CMSG_SPACE((fds * std::mem::size_of::<RawFd>()) as u32) as usize }
}

/// An order being read, a piece at a time as it arrives: the resident
/// reads every connection without blocking, so one peer that connects and
/// sends nothing (stopped, or dying) holds up no other exec.
#[derive(Default)]
pub struct OrderIntake {
    /// The bytes so far: the length line, then the JSON.
    bytes: Vec<u8>,
    /// The descriptors that came with them (close-on-exec).
    fds: Vec<OwnedFd>,
}

/// A whole order, its descriptors, and any bytes that followed it (the
/// first of berth's `signal` lines).
pub struct ReceivedOrder {
    pub order: ExecOrder,
    pub fds: Vec<OwnedFd>,
    pub rest: Vec<u8>,
}

impl OrderIntake {
    /// Reads what `stream` holds now. `Ok(None)`: the order is not whole
    /// yet (a non-blocking stream had no more); a blocking stream waits
    /// for the next piece. Malformed, oversized or cut-short orders are
    /// errors.
    pub fn read_available(
        &mut self,
        stream: &UnixStream,
    ) -> Result<Option<ReceivedOrder>, ConfineError> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(whole) = self.whole()? {
                return Ok(Some(whole));
            }
            // Never more than the order still needs (its header's bound
            // until the length is known).
            let want = match frame_length(&self.bytes)? {
                Some((header, len)) => header + len - self.bytes.len(),
                None => 10,
            };
            let want = want.min(chunk.len());
            match recv_with_fds(stream, &mut chunk[..want], &mut self.fds)? {
                None => return Ok(None),
                Some(0) => {
                    return Err(ConfineError::Spec(
                        "the connection closed before the order".into(),
                    ));
                }
                Some(n) => self.bytes.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// The order, once every byte of it is here.
    fn whole(&mut self) -> Result<Option<ReceivedOrder>, ConfineError> {
        let Some((header, len)) = frame_length(&self.bytes)? else {
            return Ok(None);
        };
        if self.bytes.len() < header + len {
            return Ok(None);
        }
        let order = serde_json::from_slice(&self.bytes[header..header + len])
            .map_err(|e| ConfineError::Spec(e.to_string()))?;
        Ok(Some(ReceivedOrder {
            order,
            fds: std::mem::take(&mut self.fds),
            rest: self.bytes[header + len..].to_vec(),
        }))
    }
}

/// The order's length line, once whole: its size with the newline, and the
/// JSON's length. An over-long, non-decimal or oversized length is an error.
fn frame_length(bytes: &[u8]) -> Result<Option<(usize, usize)>, ConfineError> {
    let Some(end) = bytes.iter().take(10).position(|b| *b == b'\n') else {
        return match bytes.len() >= 10 {
            true => Err(ConfineError::Spec("malformed order length".into())),
            false => Ok(None),
        };
    };
    std::str::from_utf8(&bytes[..end])
        .ok()
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|s| s.parse().ok())
        .filter(|n| *n <= MAX_ORDER)
        .map(|len| Some((end + 1, len)))
        .ok_or_else(|| ConfineError::Spec("order length missing or too large".into()))
}

/// Receives one framed order and the descriptors sent with it (received
/// close-on-exec), waiting for it on a blocking stream.
pub fn recv_order(stream: &mut UnixStream) -> Result<(ExecOrder, Vec<OwnedFd>), ConfineError> {
    let mut intake = OrderIntake::default();
    loop {
        if let Some(got) = intake.read_available(stream)? {
            return Ok((got.order, got.fds));
        }
    }
}

/// One `recvmsg` into `buf`, keeping any descriptors that came with it;
/// more than [`MAX_FDS`] in all (or a truncated control message) is
/// refused, and what did arrive is closed. `None`: nothing to read now (a
/// non-blocking stream).
fn recv_with_fds(
    stream: &UnixStream,
    buf: &mut [u8],
    fds: &mut Vec<OwnedFd>,
) -> Result<Option<usize>, ConfineError> {
    let space = cmsg_space(MAX_FDS);
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: msghdr is plain data; its pointers point into locals that
    // outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    let n = loop {
        // SAFETY: a socket we own and the message built above.
        let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n as usize;
        }
        let e = std::io::Error::last_os_error();
        match e.kind() {
            std::io::ErrorKind::Interrupted => {}
            std::io::ErrorKind::WouldBlock => return Ok(None),
            _ => return Err(ConfineError::Spec(format!("receive the order: {e}"))),
        }
    };
    // SAFETY: walking the control messages the kernel wrote into `control`,
    // with the CMSG macros, within `msg_controllen`.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg);
                let bytes = (*cmsg).cmsg_len as usize - (data as usize - cmsg as usize);
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    fds.push(OwnedFd::from_raw_fd(fd));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 || fds.len() > MAX_FDS {
        fds.clear();
        return Err(ConfineError::Spec(
            "too many descriptors with the order".into(),
        ));
    }
    Ok(Some(n))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn order() -> ExecOrder {
        ExecOrder {
            argv: vec!["/bin/sh".into(), "-c".into(), "echo hi".into()],
            env: vec![("PATH".into(), "/usr/bin".into())],
            cwd: "/work".into(),
            rlimits: vec![(Rlimit::FileSize, 1 << 20)],
            work_read_only: true,
            cgroup: Some("action-x".into()),
            status_pipe: true,
            egress_port: Some(3128),
        }
    }

    #[test]
    fn an_order_arrives_whole_with_its_descriptors() {
        let (mut a, mut b) = UnixStream::pair().unwrap();
        let file = tempfile::tempfile().unwrap();
        // As many as an order may carry: stdio, cgroup, egress handoff.
        let raw = [file.as_raw_fd(); MAX_FDS];
        send_order(&mut a, &order(), &raw).unwrap();
        let (got, fds) = recv_order(&mut b).unwrap();
        assert_eq!(got, order());
        assert_eq!(fds.len(), MAX_FDS);
        // The received descriptors are close-on-exec.
        // SAFETY: fcntl on a descriptor we own.
        let flags = unsafe { libc::fcntl(fds[0].as_raw_fd(), libc::F_GETFD) };
        assert_eq!(flags & libc::FD_CLOEXEC, libc::FD_CLOEXEC);
    }

    /// An order arriving in pieces on a non-blocking stream is not whole
    /// until its last byte; its descriptors and what follows it are kept.
    #[test]
    fn an_order_read_piece_by_piece_is_whole_at_its_last_byte() {
        let (mut a, b) = UnixStream::pair().unwrap();
        b.set_nonblocking(true).unwrap();
        let file = tempfile::tempfile().unwrap();
        let mut framed = Vec::new();
        framed.extend(format!("{}\n", serde_json::to_vec(&order()).unwrap().len()).bytes());
        framed.extend(serde_json::to_vec(&order()).unwrap());
        let mut intake = OrderIntake::default();
        assert!(intake.read_available(&b).unwrap().is_none(), "nothing yet");
        // The descriptors ride on the first byte, as berth sends them.
        send_byte_with_fds(&a, framed[0], &[file.as_raw_fd()]).unwrap();
        for byte in &framed[1..] {
            assert!(intake.read_available(&b).unwrap().is_none());
            a.write_all(std::slice::from_ref(byte)).unwrap();
        }
        a.write_all(b"signal 15\n").unwrap();
        let got = intake.read_available(&b).unwrap().unwrap();
        assert_eq!(got.order, order());
        assert_eq!(got.fds.len(), 1);
        // What followed the order is berth's next line, whole: kept with
        // the order, or still in the stream.
        let mut after = got.rest.clone();
        let mut buf = [0u8; 64];
        while let Ok(n) = std::io::Read::read(&mut &b, &mut buf) {
            if n == 0 {
                break;
            }
            after.extend_from_slice(&buf[..n]);
        }
        assert_eq!(after, b"signal 15\n");
    }

    /// An order from a berth built before the proxy's port was part of it
    /// reads as one without a proxy.
    #[test]
    fn an_order_without_a_proxy_port_has_none() {
        let mut json = serde_json::to_value(order()).unwrap();
        json.as_object_mut().unwrap().remove("egress_port");
        let back: ExecOrder = serde_json::from_value(json).unwrap();
        assert_eq!(back.egress_port, None);
        assert_eq!(back.argv, order().argv);
    }

    #[test]
    fn bad_orders_are_refused() {
        for bad in [
            &b""[..],
            b"x\n{}",
            b"99999999999\n",
            b"2\n{}",
            b"5\n{\"a\":1}",
        ] {
            let (mut a, mut b) = UnixStream::pair().unwrap();
            a.write_all(bad).unwrap();
            drop(a);
            let err = recv_order(&mut b).unwrap_err();
            assert!(matches!(err, ConfineError::Spec(_)), "{bad:?}: {err}");
        }
    }

    #[test]
    fn replies_and_signals_read_back() {
        for reply in [
            Reply::Started(42),
            Reply::Status(256),
            Reply::Refused("no fork: EAGAIN\nsecond line".into()),
        ] {
            let line = reply.line();
            assert!(line.ends_with('\n') && line.matches('\n').count() == 1);
            let back = Reply::parse(line.trim_end_matches('\n')).unwrap();
            match (&reply, back) {
                (Reply::Refused(_), Reply::Refused(why)) => assert!(!why.contains('\n')),
                (r, b) => assert_eq!(*r, b),
            }
        }
        for junk in ["", "started", "started x", "status 1 2", "hello 1"] {
            assert_eq!(Reply::parse(junk), None, "{junk:?}");
        }
        assert_eq!(parse_signal(signal_line(15).trim_end()), Some(15));
        for junk in ["signal 0", "signal 65", "signal -9", "signal", "kill 9"] {
            assert_eq!(parse_signal(junk), None, "{junk:?}");
        }
    }
}
