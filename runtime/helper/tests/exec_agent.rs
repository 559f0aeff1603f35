//! The exec agent's two subcommands on this host, without Docker:
//! `exec-run` (one exec on a connection at fd 3) and `exec-agent` (the loop
//! that connects to the sockets berth publishes). In a container they run
//! the same way; `berth-sandbox`'s Docker tests run the exec contract
//! through them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use berth_exec_agent::wire::{Decoder, Ending, ExecSpec, FailureKind, Frame, FromAgent, ToAgent};

const HELPER: &str = env!("CARGO_BIN_EXE_berth-helper");

fn spec(argv: &[&str]) -> ExecSpec {
    ExecSpec {
        argv: argv.iter().map(|s| s.to_string()).collect(),
        env: vec![("BERTH_T".to_string(), "v".to_string())],
        cwd: "/".to_string(),
        stdin: false,
        fallback_shell: None,
    }
}

/// `exec-run` on one end of a socket pair; berth's end comes back.
fn exec_run() -> (Child, UnixStream) {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let fd = theirs.as_raw_fd();
    let mut cmd = Command::new(HELPER);
    cmd.args(["exec-run", "berth-exec", "bx.test.1.2.3."])
        .stdin(Stdio::null());
    // SAFETY: dup2 in the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    drop(theirs);
    (child, ours)
}

/// Every frame until the agent closes the connection.
fn frames(conn: &mut UnixStream) -> Vec<FromAgent> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        let n = conn.read(&mut buf).unwrap();
        if n == 0 {
            return out;
        }
        d.push(&buf[..n]);
        while let Some(f) = d.next_frame::<FromAgent>().unwrap() {
            out.push(f);
        }
    }
}

fn streams(frames: &[FromAgent]) -> (String, String, Option<Ending>) {
    let (mut out, mut err, mut end) = (Vec::new(), Vec::new(), None);
    for f in frames {
        match f {
            FromAgent::Stdout(b) => out.extend_from_slice(b),
            FromAgent::Stderr(b) => err.extend_from_slice(b),
            FromAgent::Ended(e) => end = Some(*e),
            FromAgent::Failed(f) => panic!("failed: {f:?}"),
        }
    }
    (
        String::from_utf8(out).unwrap(),
        String::from_utf8(err).unwrap(),
        end,
    )
}

fn run(spec: ExecSpec, stdin: Option<&[u8]>) -> Vec<FromAgent> {
    let (mut child, mut conn) = exec_run();
    let mut spec = spec;
    spec.stdin = stdin.is_some();
    conn.write_all(&ToAgent::Request(spec).encode()).unwrap();
    if let Some(bytes) = stdin {
        conn.write_all(&ToAgent::Stdin(bytes.to_vec()).encode())
            .unwrap();
        conn.write_all(&ToAgent::StdinEnd.encode()).unwrap();
    }
    let got = frames(&mut conn);
    assert!(child.wait().unwrap().success());
    got
}

fn gone(pid: &str) -> bool {
    // A zombie is dead too: it holds nothing but its entry.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
    }
}

fn wait_gone(pids: &[&str]) {
    let until = Instant::now() + Duration::from_secs(10);
    while !pids.iter().all(|p| gone(p)) {
        assert!(Instant::now() < until, "still running: {pids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_exec_streams_its_output_and_reports_how_it_ended() {
    let got = run(
        spec(&[
            "/bin/sh",
            "-c",
            "echo \"out $BERTH_T\"; echo err >&2; exit 3",
        ]),
        None,
    );
    let (out, err, end) = streams(&got);
    assert_eq!((out.as_str(), err.as_str()), ("out v\n", "err\n"));
    assert_eq!(
        end,
        Some(Ending {
            code: Some(3),
            signal: None,
            oom: false
        })
    );
    // A signal is a signal, not a code of 128 + n.
    let (_, _, end) = streams(&run(spec(&["/bin/sh", "-c", "kill -TERM $$"]), None));
    assert_eq!(end.map(|e| (e.code, e.signal)), Some((None, Some(15))));
    // stdin reaches the command, then its end.
    let (out, _, _) = streams(&run(spec(&["cat"]), Some(b"abc\n")));
    assert_eq!(out, "abc\n");
    // Without stdin the command reads end of file at once.
    let (out, _, end) = streams(&run(spec(&["/bin/sh", "-c", "cat; echo eof"]), None));
    assert_eq!((out.as_str(), end.and_then(|e| e.code)), ("eof\n", Some(0)));
}

#[test]
fn what_the_command_leaves_behind_dies_with_it() {
    let (out, _, end) = streams(&run(spec(&["/bin/sh", "-c", "sleep 300 & echo $!"]), None));
    assert_eq!(end.and_then(|e| e.code), Some(0));
    wait_gone(&[out.trim()]);
}

#[test]
fn berth_going_away_kills_the_command() {
    let (mut child, mut conn) = exec_run();
    conn.write_all(
        &ToAgent::Request(spec(&[
            "/bin/sh",
            "-c",
            "sleep 301 & echo $$ $!; sleep 302",
        ]))
        .encode(),
    )
    .unwrap();
    let mut d = Decoder::new();
    let mut buf = [0u8; 4096];
    let pids = loop {
        let n = conn.read(&mut buf).unwrap();
        assert!(n > 0, "ended before it printed");
        d.push(&buf[..n]);
        if let Some(FromAgent::Stdout(b)) = d.next_frame::<FromAgent>().unwrap() {
            break String::from_utf8(b).unwrap();
        }
    };
    drop(conn);
    child.wait().unwrap();
    let pids: Vec<&str> = pids.split_whitespace().collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    wait_gone(&pids);
}

#[test]
fn what_cannot_start_is_reported_and_what_is_not_the_protocol_starts_nothing() {
    let mut s = spec(&["true"]);
    s.cwd = "/nonexistent-berth-dir".to_string();
    let got = run(s, None);
    assert!(
        matches!(&got[..], [FromAgent::Failed(f)] if f.kind == FailureKind::MissingCwd),
        "{got:?}"
    );
    // A token where the request is due, or an unknown frame: nothing runs.
    for bad in [
        ToAgent::Token("bx.again".to_string()).encode(),
        vec![b'?', 0, 0, 0, 0],
    ] {
        let (mut child, mut conn) = exec_run();
        conn.write_all(&bad).unwrap();
        let got = frames(&mut conn);
        assert!(got.is_empty(), "{got:?}");
        assert!(!child.wait().unwrap().success());
    }
}

/// Publishes `name` in `dir` as berth does and accepts the agent's
/// connection.
fn publish(dir: &std::path::Path, name: &str) -> UnixStream {
    let staging = dir.join(format!(".{name}"));
    let listener = UnixListener::bind(&staging).unwrap();
    std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::fs::rename(&staging, dir.join(format!("{name}.sock"))).unwrap();
    listener.accept().unwrap().0
}

/// The loop: a socket published as berth publishes it is served; the
/// request after the token reaches the exec's process intact. A socket
/// whose first frame asks for the proxy's listener gets one back: a
/// listening socket on 127.0.0.1 at that port in the agent's namespace,
/// which berth's check accepts and which serves a connection; a request
/// for a port the agent cannot bind gets nothing, and the loop goes on.
/// (One test: the agent is one per network namespace.)
#[test]
fn the_agent_connects_to_a_published_socket() {
    let dir = tempfile::tempdir().unwrap();
    // Killed however the test ends: a live agent holds the namespace's
    // singleton, and the next run's agent would then serve nothing.
    let agent = KilledOnDrop(
        Command::new(HELPER)
            .args(["exec-agent"])
            .arg(dir.path())
            .spawn()
            .unwrap(),
    );
    let mut conn = publish(dir.path(), "7-1");
    let mut head = ToAgent::Token("bx.test.7.1.".to_string()).encode();
    head.extend(
        ToAgent::Request(spec(&[
            "/bin/sh",
            "-c",
            "tr '\\0' ' ' < /proc/$PPID/cmdline",
        ]))
        .encode(),
    );
    conn.write_all(&head).unwrap();
    let (out, _, end) = streams(&frames(&mut conn));
    assert_eq!(end.and_then(|e| e.code), Some(0));
    assert!(out.contains("exec-run berth-exec bx.test.7.1."), "{out:?}");

    // A free port, found by binding and dropping it: another process may
    // take it before the agent binds it (seen once under a full test run),
    // so a refusal is retried on a new port.
    let (port, listener) = (0..5)
        .find_map(|attempt| {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let port = probe.local_addr().unwrap().port();
            drop(probe);
            let mut conn = publish(dir.path(), &format!("7-2-{attempt}"));
            conn.write_all(&ToAgent::ProxyListener(port).encode())
                .unwrap();
            berth_confine::egress_handoff::receive_listener(&conn, port, Duration::from_secs(5))
                .ok()
                .map(|l| (port, l))
        })
        .expect("the agent handed over no listener in five attempts");
    let client = std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.write_all(b"through").unwrap();
    });
    let (mut accepted, _) = listener.accept().unwrap();
    let mut got = String::new();
    accepted.read_to_string(&mut got).unwrap();
    client.join().unwrap();
    assert_eq!(got, "through");

    // Taken by a listener without SO_REUSEPORT: the agent cannot bind it
    // and sends nothing; berth's read ends, empty.
    let squatter = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = squatter.local_addr().unwrap().port();
    let mut conn = publish(dir.path(), "7-3");
    conn.write_all(&ToAgent::ProxyListener(taken).encode())
        .unwrap();
    let err = berth_confine::egress_handoff::receive_listener(&conn, taken, Duration::from_secs(5))
        .unwrap_err();
    assert!(err.to_string().contains("receive"), "{err}");
    drop(agent);
}

/// A child process killed and reaped when dropped.
struct KilledOnDrop(std::process::Child);

impl Drop for KilledOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
