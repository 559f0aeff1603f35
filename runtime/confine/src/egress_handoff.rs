//! The egress proxy's door into a runner exec: a TCP listener on
//! `127.0.0.1:PORT` inside the exec's own network namespace, served by berth.
//!
//! An exec of an allow-list berth has a network namespace holding only `lo`,
//! so nothing it opens leaves the machine. Its proxy (`HTTP_PROXY`) must
//! still be reachable on that loopback. A listening socket belongs to the
//! namespace it was made in, whoever later accepts on it: PID 1 of the exec
//! binds `127.0.0.1:PORT` in the new namespace (before the mount tree hides
//! the host, before the command exists) and hands the listener to berth over
//! a unix socket berth made for this exec alone, in its private state
//! directory (`SCM_RIGHTS`) — or, for an exec a berth's resident forks, over
//! one end of a socket pair berth attached to the exec's order. berth then
//! serves it as that berth's proxy listener for the exec's duration: the
//! listener it arrived on says which berth asks, never anything the client
//! sends. No forwarder process runs beside the command, no socket file is
//! visible to it, and the namespace and its listener end with the exec.
//!
//! Both ends live here so the framing (one byte, one descriptor) is in one
//! place; berth checks what it receives is a listening IPv4 TCP socket on
//! loopback before serving it. A mounted berth's exec agent hands its
//! container's listener over with the same two calls ([`send_listener`],
//! [`receive_listener`]) when berth cannot enter the container's namespace
//! itself (it is not root).

use std::io::IoSlice;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::os::fd::{AsFd as _, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::ConfineError;

/// Where PID 1 hands the listener over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressHandoff {
    /// berth's private directory holding the handoff socket (connected to
    /// relative to it, so its length never meets `sun_path`'s bound).
    pub dir: PathBuf,
    /// The handoff socket's name in `dir`.
    pub name: String,
    /// The loopback port the proxy listens on inside the exec.
    pub port: u16,
}

/// PID 1's side: binds `127.0.0.1:port` in the current network namespace and
/// sends the listener to berth. Single-threaded callers only (it changes the
/// working directory for the connect, then goes back to `/`).
pub fn hand_over(h: &EgressHandoff) -> Result<(), ConfineError> {
    let listener = bind_loopback(h.port)?;
    std::env::set_current_dir(&h.dir).map_err(|source| ConfineError::Path {
        what: "enter the egress handoff directory",
        path: h.dir.clone(),
        source,
    })?;
    let stream = UnixStream::connect(&h.name);
    let back = std::env::set_current_dir("/");
    let stream = stream.map_err(|source| ConfineError::Path {
        what: "connect to berth's egress handoff",
        path: h.dir.join(&h.name),
        source,
    })?;
    back.map_err(|source| ConfineError::Sys {
        op: "chdir /".into(),
        source,
    })?;
    send_fd(stream.as_fd(), listener.as_raw_fd())
}

/// A resident exec's PID 1's side: binds `127.0.0.1:port` in the current
/// network namespace (the exec's own) and sends the listener over
/// `stream`, the end of a socket pair berth attached to the exec's order:
/// no path, so the exec's mount tree may already hide berth's directories.
pub fn hand_over_through(stream: BorrowedFd<'_>, port: u16) -> Result<(), ConfineError> {
    let listener = bind_loopback(port)?;
    send_fd(stream, listener.as_raw_fd())
}

fn bind_loopback(port: u16) -> Result<TcpListener, ConfineError> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, port)).map_err(|source| ConfineError::Sys {
        op: format!("bind the proxy's port 127.0.0.1:{port}"),
        source,
    })
}

fn send_fd(stream: BorrowedFd<'_>, fd: libc::c_int) -> Result<(), ConfineError> {
    let byte = [b'L'];
    let iov = [IoSlice::new(&byte)];
    // SAFETY: CMSG_SPACE is a pure size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: msghdr is plain data; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: the control buffer is CMSG_SPACE(int) bytes, room for one
    // header and one descriptor.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize;
        std::ptr::copy_nonoverlapping(
            (&fd as *const libc::c_int).cast::<u8>(),
            libc::CMSG_DATA(cmsg),
            std::mem::size_of::<libc::c_int>(),
        );
    }
    // SAFETY: a sendmsg on our own socket with the message built above.
    if unsafe { libc::sendmsg(stream.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) } != 1 {
        return Err(ConfineError::last("send the proxy's listener to berth"));
    }
    Ok(())
}

/// berth's side: waits up to `timeout` for PID 1 to connect to `handoff`,
/// receives one descriptor and checks it is a listening TCP socket on
/// `127.0.0.1:port`. Blocking.
pub fn receive(
    handoff: &UnixListener,
    port: u16,
    timeout: Duration,
) -> Result<TcpListener, ConfineError> {
    let mut pfd = libc::pollfd {
        fd: handoff.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
    // SAFETY: polling one descriptor we own.
    let ready = unsafe { libc::poll(&mut pfd, 1, ms) };
    if ready <= 0 {
        return Err(ConfineError::Sys {
            op: "wait for the exec's proxy listener".into(),
            source: std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the exec did not hand its listener over",
            ),
        });
    }
    let (stream, _) = handoff.accept().map_err(|source| ConfineError::Sys {
        op: "accept the exec's handoff".into(),
        source,
    })?;
    receive_listener(&stream, port, timeout)
}

/// Reads one descriptor from `stream` (waiting up to `timeout`) and checks
/// it is a listening TCP socket on `127.0.0.1:port`: what berth accepts
/// from whoever made its proxy's listener in a berth's namespace (a runner
/// exec's PID 1, a container's exec agent). Blocking.
pub fn receive_listener(
    stream: &UnixStream,
    port: u16,
    timeout: Duration,
) -> Result<TcpListener, ConfineError> {
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|source| ConfineError::Sys {
            op: "bound the handoff's read".into(),
            source,
        })?;
    let fd = recv_fd(stream)?;
    // SAFETY: the descriptor was just received and is owned by nothing else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    check_listener(&owned, port)?;
    Ok(TcpListener::from(owned))
}

/// Sends `listener` over `stream` (one byte and the descriptor,
/// `SCM_RIGHTS`): the other side is [`receive_listener`].
pub fn send_listener(stream: &UnixStream, listener: &TcpListener) -> Result<(), ConfineError> {
    send_fd(stream.as_fd(), listener.as_raw_fd())
}

/// A listener on `127.0.0.1:port` with `SO_REUSEADDR` and `SO_REUSEPORT`,
/// made in the calling thread's network namespace: the proxy's port in a
/// container, which more than one berth process may serve at once (only
/// sockets of the same uid join a port this way).
pub fn reuseport_listener(port: u16) -> std::io::Result<TcpListener> {
    // SAFETY: plain socket calls on a descriptor owned right away.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let owned = OwnedFd::from_raw_fd(fd);
        let one: libc::c_int = 1;
        for opt in [libc::SO_REUSEADDR, libc::SO_REUSEPORT] {
            if libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                opt,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(Ipv4Addr::LOCALHOST).to_be(),
            },
            sin_zero: [0; 8],
        };
        if libc::bind(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        ) != 0
            || libc::listen(fd, 128) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
        Ok(TcpListener::from(owned))
    }
}

fn recv_fd(stream: &UnixStream) -> Result<libc::c_int, ConfineError> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: a size computation.
    let space = unsafe { libc::CMSG_SPACE(std::mem::size_of::<libc::c_int>() as u32) } as usize;
    let mut control = vec![0u8; space];
    // SAFETY: msghdr is plain data; its pointers outlive the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = space;
    // SAFETY: a recvmsg into the buffers above; CMSG_CLOEXEC keeps the
    // descriptor from every child berth spawns.
    let n = unsafe { libc::recvmsg(stream.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(ConfineError::last("receive the exec's proxy listener"));
    }
    if n == 0 {
        // No errno to report: the other side ended without a listener (it
        // could not bind the port).
        return Err(ConfineError::Spec(
            "receive the exec's proxy listener: the connection ended with none (the port could not be bound in the berth)".into(),
        ));
    }
    if msg.msg_flags & libc::MSG_CTRUNC != 0 {
        return Err(ConfineError::Spec(
            "receive the exec's proxy listener: the handoff's control data was cut short".into(),
        ));
    }
    // SAFETY: reading the one header the buffer has room for.
    unsafe {
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
            || (*cmsg).cmsg_len
                != libc::CMSG_LEN(std::mem::size_of::<libc::c_int>() as u32) as usize
        {
            return Err(ConfineError::Spec(
                "the exec's handoff carried no single descriptor".into(),
            ));
        }
        let mut fd: libc::c_int = -1;
        std::ptr::copy_nonoverlapping(
            libc::CMSG_DATA(cmsg),
            (&mut fd as *mut libc::c_int).cast::<u8>(),
            std::mem::size_of::<libc::c_int>(),
        );
        Ok(fd)
    }
}

/// A listening IPv4 TCP socket bound to `127.0.0.1:port`, or an error.
fn check_listener(fd: &OwnedFd, port: u16) -> Result<(), ConfineError> {
    let int_opt = |opt: libc::c_int| -> Option<libc::c_int> {
        let mut v: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: getsockopt into a local int.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                (&mut v as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        (rc == 0).then_some(v)
    };
    let ok = int_opt(libc::SO_ACCEPTCONN) == Some(1)
        && int_opt(libc::SO_DOMAIN) == Some(libc::AF_INET)
        && int_opt(libc::SO_PROTOCOL) == Some(libc::IPPROTO_TCP);
    let bound = ok
        .then(|| {
            let dup = fd.try_clone().ok()?;
            TcpListener::from(dup).local_addr().ok()
        })
        .flatten();
    if bound != Some(SocketAddr::from((Ipv4Addr::LOCALHOST, port))) {
        return Err(ConfineError::Spec(format!(
            "the exec handed over something other than a listener on 127.0.0.1:{port}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_listener_crosses_and_anything_else_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let handoff = UnixListener::bind(dir.path().join("h.sock")).unwrap();
        let probe = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = probe.local_addr().unwrap().port();
        drop(probe);
        let h = EgressHandoff {
            dir: dir.path().to_path_buf(),
            name: "h.sock".into(),
            port,
        };
        // The test process is multi-threaded, so send from a plain stream
        // rather than hand_over's chdir.
        let sender = std::thread::spawn(move || {
            let l = TcpListener::bind((Ipv4Addr::LOCALHOST, h.port)).unwrap();
            let s = UnixStream::connect(h.dir.join(&h.name)).unwrap();
            send_fd(s.as_fd(), l.as_raw_fd()).unwrap();
        });
        let got = receive(&handoff, port, Duration::from_secs(5)).unwrap();
        sender.join().unwrap();
        assert_eq!(got.local_addr().unwrap().port(), port);

        // A connected socket, not a listener: refused.
        let sender = std::thread::spawn({
            let path = dir.path().join("h.sock");
            move || {
                let (a, _b) = UnixStream::pair().unwrap();
                let s = UnixStream::connect(path).unwrap();
                send_fd(s.as_fd(), a.as_raw_fd()).unwrap();
            }
        });
        let err = receive(&handoff, port, Duration::from_secs(5)).unwrap_err();
        sender.join().unwrap();
        assert!(err.to_string().contains("other than a listener"), "{err}");

        // Nobody connects: a timeout, not a hang.
        let err = receive(&handoff, port, Duration::from_millis(50)).unwrap_err();
        assert!(err.to_string().contains("did not hand"), "{err}");
    }
}
