//! `berth exec` handing its action to a `berth serve` that runs on the same
//! state, over the server's unix socket (`<state>/berth.sock`).
//!
//! A one-shot process pays, before its command runs, for opening the store
//! (SQLite parses the schema and reads the write-ahead log anew in every
//! process), the project's files and the policy's set-up; a running server
//! has paid once. So when one answers, `berth exec` sends it the proposal
//! (`POST /api/actions/stream`), prints the command's output as the lines
//! arrive, and prints and exits with the server's report of the end: the
//! same [`ExecReport`] the local path prints, so the two cannot say
//! different things. Ctrl-C (or any death of this process) closes the
//! socket, and the server cancels the action.
//!
//! What is handed off runs as it would have here: the request carries this
//! process's environment, and a runner berth's command takes `PATH` and the
//! inherited variables from it, not from the server's. Where an engine
//! setting differs (`BERTH_*`, `DOCKER_*`: the server's engine would act
//! otherwise) the server answers 409 — and this process runs the action
//! itself, as it does when no server answers, the socket is stale, its
//! owner is another uid, the server is older than this route, or `--local`
//! says so. Any answer but the stream comes before anything was proposed,
//! so falling back never runs an action twice; once the stream began, a
//! failure is reported, not retried.
//!
//! The socket is in the state directory, which is the user's own (0700): no
//! agent can put a socket there. The server's answer is still read as
//! input: lines bounded, each parsed whole.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use base64::Engine as _;
use berth_engine::ExecReport;
use berth_engine::state::StateDir;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use serde::Deserialize;
use tokio::net::UnixStream;

use super::berths::{ExecArgs, report};
use super::live_output::Stream;

/// How long the server may take to begin its answer (it decides nothing
/// before it answers: it checks the environment and starts the proposal).
const ANSWER_WAIT: Duration = Duration::from_secs(15);

/// The longest line the server may send: an `end` holds the recorded
/// output (capped by the project's `max_output_bytes`), in JSON.
const MAX_LINE: usize = 256 << 20;

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

/// Runs `a` through the server on `dir` when one takes it: `Ok(None)` when
/// none did (nothing was proposed), else the exit code.
pub(super) async fn exec_through_server(
    dir: &StateDir,
    a: &ExecArgs,
) -> anyhow::Result<Option<u8>> {
    if a.local {
        return Ok(None);
    }
    let socket = dir.root().join(berth_server::SOCKET_FILE);
    let Some(stream) = connect(&socket).await else {
        return Ok(None);
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(e) => {
                tracing::debug!("berth serve at {}: {e}; running it here", socket.display());
                return Ok(None);
            }
        };
    tokio::spawn(connection);
    let caller_env: BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(n, v)| Some((n.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    let body = serde_json::json!({
        "agent": a.agent,
        "action": berth_policy::Action::Terminal { command: a.command_line() },
        "params": a.params(),
        "output": !a.json,
        "caller_env": caller_env,
    });
    let request = hyper::Request::post("/api/actions/stream")
        .header(hyper::header::HOST, "localhost")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(serde_json::to_vec(&body)?)))?;
    let answer = tokio::time::timeout(ANSWER_WAIT, sender.send_request(request))
        .await
        .map_err(|_| {
            anyhow::anyhow!(
                "berth serve at {} took the action but did not answer within {} s: it may have been \
                 proposed — see `berth actions --agent {}`",
                socket.display(),
                ANSWER_WAIT.as_secs(),
                a.agent
            )
        })?
        .with_context(|| {
            format!(
                "berth serve at {} did not answer: the action may have been proposed — see `berth actions --agent {}`",
                socket.display(),
                a.agent
            )
        })?;
    if answer.status() != hyper::StatusCode::OK {
        // Refused before anything was proposed (its environment differs,
        // an older server, a request it will not take): run it here, where
        // a real error says itself as it always does.
        let status = answer.status();
        let text = answer
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        tracing::debug!(
            "berth serve answered {status} ({}); running it here",
            String::from_utf8_lossy(&text)
        );
        return Ok(None);
    }
    read_stream(answer.into_body(), a).await.map(Some)
}

/// A connection to the server at `socket`, when one answers there as this
/// process's own uid.
async fn connect(socket: &Path) -> Option<UnixStream> {
    use std::os::unix::fs::FileTypeExt as _;
    let meta = std::fs::symlink_metadata(socket).ok()?;
    if !meta.file_type().is_socket() {
        return None;
    }
    let stream = match UnixStream::connect(socket).await {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!("berth serve at {}: {e}; running it here", socket.display());
            return None;
        }
    };
    let own = berth_sandbox::identity::current_uid();
    match stream.peer_cred() {
        Ok(cred) if cred.uid() == own => Some(stream),
        Ok(cred) => {
            tracing::warn!(
                "{} answers as uid {}, not as this user ({own}): running the action here",
                socket.display(),
                cred.uid()
            );
            None
        }
        Err(e) => {
            tracing::debug!("{}: {e}; running it here", socket.display());
            None
        }
    }
}

/// Prints the output lines as they come and returns the end's exit code.
async fn read_stream(mut body: hyper::body::Incoming, a: &ExecArgs) -> anyhow::Result<u8> {
    let gone = || {
        anyhow::anyhow!(
            "berth serve stopped answering before the action ended: see `berth actions --agent {}`",
            a.agent
        )
    };
    let (mut stdout, mut stderr) = (
        Stream::new(tokio::io::stdout()),
        Stream::new(tokio::io::stderr()),
    );
    let mut pending: Vec<u8> = Vec::new();
    // How much of `pending` is known to hold no newline: a long line that
    // comes in many pieces is scanned once, not once per piece.
    let mut scanned = 0;
    loop {
        while let Some(at) = pending[scanned..].iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = pending.drain(..=scanned + at).collect();
            scanned = 0;
            match serde_json::from_slice::<Line>(&line).with_context(|| {
                format!(
                    "berth serve sent a line this berth cannot read: {}",
                    preview(&line)
                )
            })? {
                Line::Stdout(b) => stdout.write(&decode(&b)?).await,
                Line::Stderr(b) => stderr.write(&decode(&b)?).await,
                Line::End(r) => return report(&r, a.json),
                Line::Error(e) => {
                    tracing::debug!(code = %e.code, "berth serve's error");
                    anyhow::bail!("{}", e.message)
                }
            }
        }
        scanned = pending.len();
        if pending.len() > MAX_LINE {
            anyhow::bail!("berth serve sent a line longer than {MAX_LINE} bytes");
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    pending.extend_from_slice(&data);
                }
            }
            Some(Err(e)) => return Err(gone()).context(e.to_string()),
            None => return Err(gone()),
        }
    }
}

fn decode(text: &str) -> anyhow::Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .context("berth serve sent output that is not base64")
}

fn preview(line: &[u8]) -> String {
    String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned()
}
