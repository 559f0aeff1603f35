//! `berth exec` handing its action to a `berth serve` that runs on the same
//! state, over the server's unix socket (`<state>/berth.sock`).
//!
//! A one-shot process pays, before its command runs, for opening the store
//! (SQLite parses the schema and reads the write-ahead log anew in every
//! process), the project's files and the policy's set-up; a running server
//! has paid once. So when one answers, `berth exec` sends it the proposal
//! (`POST /api/actions/stream`), prints the command's output as the lines
//! arrive, and prints and exits with the server's report of the end: the
//! same [`ExecReport`](crate::ExecReport) the local path prints
//! ([`crate::report::print`]), so the two cannot say different things.
//! Ctrl-C (or any death of this process) closes the socket, and the server
//! cancels the action.
//!
//! What is handed off runs as it would have here: the request carries this
//! process's environment, and a runner berth's command takes `PATH` and the
//! inherited variables from it, not from the server's. Where an engine
//! setting differs (`BERTH_*`, `DOCKER_*`: the server's engine would act
//! otherwise) the server answers 409 — and the caller runs the action
//! itself, as it does when no server answers, the socket is stale, its
//! owner is another uid, the server is older than this route, or `--local`
//! says so. Any answer but the stream comes before anything was proposed,
//! so falling back never runs an action twice ([`Handoff::NotTaken`]); once
//! the stream began, a failure is reported ([`HandoffError`]), not retried.
//!
//! The socket is in the state directory, which is the user's own (0700): no
//! agent can put a socket there. The server's answer is still read as
//! input: the head bounded (`http.rs`), each line bounded and parsed whole.

use std::collections::BTreeMap;
use std::io::{self, BufRead as _, BufReader, Read};
use std::os::unix::fs::FileTypeExt as _;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use crate::output::Stream;
use crate::report::{self, ExecReport};
use crate::state::SOCKET_FILE;
use crate::{HandoffError, http};

/// How long the server may take to begin its answer (it decides nothing
/// before it answers: it checks the environment and starts the proposal).
const ANSWER_WAIT: Duration = Duration::from_secs(15);

/// The longest line the server may send: an `end` holds the recorded
/// output (capped by the project's `max_output_bytes`), in JSON.
const MAX_LINE: usize = 256 << 20;

/// What `berth exec` proposes: its agent, its shell line, where and how
/// long it runs, and how it reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecRequest {
    pub agent: String,
    /// The shell line (`command_line` of the words after `--`).
    pub command: String,
    pub cwd: Option<String>,
    pub timeout_secs: Option<u64>,
    /// One JSON object at the end instead of streamed output.
    pub json: bool,
}

/// What became of an exec offered to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handoff {
    /// No server took it: nothing was proposed; run it here.
    NotTaken,
    /// The server ran it to its end; this is `berth exec`'s exit code.
    Ended(u8),
}

/// The command line `berth exec|decide -- …` proposes. One argument is a
/// shell line as written (`-- 'make && make test'`); several are a
/// program's argv, each word quoted so the shell hands it over as one
/// word (`-- sh -c 'echo hi'` runs `echo hi`, as `docker exec` would).
pub fn command_line(words: &[String]) -> String {
    match words {
        [line] => line.clone(),
        _ => words
            .iter()
            .map(|w| berth_policy::shell::quote_word(w))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// One line of the server's answer.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Line {
    Stdout(String),
    Stderr(String),
    End(Box<ExecReport>),
    Error(ServerError),
}

#[derive(Deserialize)]
struct ServerError {
    code: String,
    message: String,
}

/// Runs `request` through the `berth serve` on the state at `state_root`
/// when one takes it, printing its output as it arrives and its report at
/// the end.
pub fn exec_through_server(
    state_root: &Path,
    request: &ExecRequest,
) -> Result<Handoff, HandoffError> {
    let socket = state_root.join(SOCKET_FILE);
    let Some(mut stream) = connect(&socket) else {
        return Ok(Handoff::NotTaken);
    };
    let body = request_body(request).map_err(HandoffError::Encode)?;
    // Bounded: a server that stops reading fails the request, not hangs it.
    let sent = stream
        .set_write_timeout(Some(ANSWER_WAIT))
        .and_then(|()| stream.set_read_timeout(Some(ANSWER_WAIT)))
        .and_then(|()| http::post_json(&mut stream, "/api/actions/stream", &body));
    if let Err(e) = sent {
        // Nothing sent whole: no proposal could have started.
        return match e.kind() {
            io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset => Ok(Handoff::NotTaken),
            _ => Err(broken(&socket, request, e)),
        };
    }
    let answer = match http::read_answer(stream) {
        Ok(a) => a,
        Err(e) if is_timeout(&e) => {
            return Err(HandoffError::NoAnswer {
                socket,
                secs: ANSWER_WAIT.as_secs(),
                agent: request.agent.clone(),
            });
        }
        Err(e) => return Err(broken(&socket, request, e)),
    };
    if answer.status != 200 {
        // Refused before anything was proposed (its environment differs,
        // an older server, a request it will not take): run it here, where
        // a real error says itself as it always does.
        return Ok(Handoff::NotTaken);
    }
    // The command may run as long as its deadline: no read timeout now.
    answer
        .body
        .get_ref()
        .set_read_timeout(None)
        .map_err(|e| broken(&socket, request, e))?;
    read_stream(answer.body, request).map(Handoff::Ended)
}

fn broken(socket: &Path, request: &ExecRequest, source: io::Error) -> HandoffError {
    HandoffError::Broken {
        socket: socket.to_path_buf(),
        agent: request.agent.clone(),
        source,
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// The request's JSON: the proposal, how it reports, and this process's
/// whole environment (what is not UTF-8 is left out).
fn request_body(request: &ExecRequest) -> serde_json::Result<Vec<u8>> {
    let caller_env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let mut params = serde_json::Map::new();
    if let Some(cwd) = &request.cwd {
        params.insert("cwd".into(), cwd.clone().into());
    }
    if let Some(secs) = request.timeout_secs {
        params.insert("timeout_secs".into(), secs.into());
    }
    serde_json::to_vec(&serde_json::json!({
        "agent": request.agent,
        "action": berth_policy::Action::Terminal { command: request.command.clone() },
        "params": params,
        "output": !request.json,
        "caller_env": caller_env,
    }))
}

/// A connection to the server at `socket`, when one answers there as this
/// process's own uid.
fn connect(socket: &Path) -> Option<UnixStream> {
    let meta = std::fs::symlink_metadata(socket).ok()?;
    if !meta.file_type().is_socket() {
        return None;
    }
    let stream = UnixStream::connect(socket).ok()?;
    (peer_uid(&stream)? == own_uid()).then_some(stream)
}

/// The uid of the process at the other end of `stream` (`SO_PEERCRED`).
fn peer_uid(stream: &UnixStream) -> Option<u32> {
    use std::os::fd::AsRawFd as _;
    let mut cred = libc::ucred {
        pid: 0,
        uid: 0,
        gid: 0,
    };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED writes one `ucred` through the pointer, whose
    // size `len` gives; both live across the call; the fd is the stream's.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &raw mut len,
        )
    };
    (rc == 0 && len as usize == std::mem::size_of::<libc::ucred>()).then_some(cred.uid)
}

/// This process's effective uid: the server must run as the same user.
fn own_uid() -> u32 {
    // SAFETY: geteuid has no failure and touches no memory.
    unsafe { libc::geteuid() }
}

/// Prints the output lines as they come and returns the end's exit code.
fn read_stream<R: Read>(body: R, request: &ExecRequest) -> Result<u8, HandoffError> {
    let gone = |detail: Option<String>| HandoffError::Gone {
        agent: request.agent.clone(),
        detail,
    };
    let (mut stdout, mut stderr) = (Stream::new(io::stdout()), Stream::new(io::stderr()));
    let mut reader = BufReader::with_capacity(64 << 10, body);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut reader)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut line)
            .map_err(|e| gone(Some(e.to_string())))?;
        if read == 0 {
            return Err(gone(None));
        }
        if line.last() != Some(&b'\n') {
            return Err(match line.len() > MAX_LINE {
                true => HandoffError::LineTooLong { max: MAX_LINE },
                false => gone(None),
            });
        }
        let parsed: Line =
            serde_json::from_slice(&line).map_err(|source| HandoffError::UnreadableLine {
                preview: String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned(),
                source,
            })?;
        match parsed {
            Line::Stdout(b) => stdout.write(&decode(&b)?),
            Line::Stderr(b) => stderr.write(&decode(&b)?),
            Line::End(r) => return report::print(&r, request.json),
            Line::Error(e) => {
                return Err(HandoffError::Server {
                    code: e.code,
                    message: e.message,
                });
            }
        }
    }
}

fn decode(text: &str) -> Result<Vec<u8>, HandoffError> {
    Ok(base64::engine::general_purpose::STANDARD.decode(text)?)
}
