//! Finding and running `berth-helper`, the confined process that does berth's
//! git work on an agent's repository.
//!
//! The helper is found at `$BERTH_HELPER`, else beside the running binary,
//! else in its parent directory (test binaries live in `target/debug/deps`,
//! the helper in `target/debug`). It runs with an empty environment (no
//! `HOME`, so libgit2 finds no user configuration), gets one JSON request on
//! stdin and answers one JSON line on stdout; berth reads at most
//! [`MAX_ANSWER_BYTES`] of that line and [`MAX_STDERR_BYTES`] of stderr.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::thread::JoinHandle;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::{Error, Op, Result};
use crate::helper_protocol::Answer;

/// The helper's binary name.
pub const HELPER_NAME: &str = "berth-helper";
/// The longest answer line berth reads.
pub const MAX_ANSWER_BYTES: u64 = 64 * 1024;
/// The most stderr berth keeps for a diagnostic.
const MAX_STDERR_BYTES: u64 = 16 * 1024;

/// Where the helper is, or where it was looked for.
pub fn locate_helper() -> Result<PathBuf> {
    let mut searched = Vec::new();
    if let Some(path) = std::env::var_os("BERTH_HELPER").filter(|v| !v.is_empty()) {
        let path = PathBuf::from(path);
        if path.is_file() {
            return Ok(path);
        }
        searched.push(path);
        return Err(Error::HelperMissing { searched });
    }
    if let Ok(exe) = std::env::current_exe() {
        let mut dir = exe.parent().map(Path::to_path_buf);
        for _ in 0..2 {
            let Some(d) = dir else { break };
            let candidate = d.join(HELPER_NAME);
            if candidate.is_file() {
                return Ok(candidate);
            }
            searched.push(candidate);
            dir = d.parent().map(Path::to_path_buf);
        }
    }
    Err(Error::HelperMissing { searched })
}

/// A running helper: its answer read, its stdout left for what follows.
pub(crate) struct Running {
    pub helper: PathBuf,
    child: Child,
    pub stdout: BufReader<ChildStdout>,
    stderr: Option<JoinHandle<String>>,
    op: Op,
}

/// Starts `berth-helper <subcommand>`, writes `request` and reads its answer
/// line.
pub(crate) fn start<Req: Serialize, T: DeserializeOwned>(
    op: Op,
    subcommand: &str,
    request: &Req,
) -> Result<(Running, Answer<T>)> {
    let helper = locate_helper()?;
    let fail = |message: String| Error::Helper {
        op,
        helper: helper.clone(),
        message,
    };
    let body = serde_json::to_vec(request).map_err(|e| fail(format!("request: {e}")))?;
    let mut child = Command::new(&helper)
        .arg(subcommand)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| fail(format!("could not start it: {e}")))?;
    let stderr = child.stderr.take().map(|mut err| {
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            let _ = Read::by_ref(&mut err)
                .take(MAX_STDERR_BYTES)
                .read_to_end(&mut kept);
            // Drain the rest so the helper never blocks on a full pipe.
            let _ = std::io::copy(&mut err, &mut std::io::sink());
            String::from_utf8_lossy(&kept).into_owned()
        })
    });
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(fail("its pipes were not set up".to_owned()));
    };
    let mut running = Running {
        helper: helper.clone(),
        child,
        stdout: BufReader::new(stdout),
        stderr,
        op,
    };
    if let Err(e) = stdin.write_all(&body) {
        return Err(running.failure(format!("writing the request: {e}")));
    }
    drop(stdin);
    let mut line = Vec::new();
    let read = Read::by_ref(&mut running.stdout)
        .take(MAX_ANSWER_BYTES)
        .read_until(b'\n', &mut line);
    if let Err(e) = read {
        return Err(running.failure(format!("reading its answer: {e}")));
    }
    if line.last() != Some(&b'\n') {
        let why = if line.is_empty() {
            "it gave no answer".to_owned()
        } else {
            format!("its answer was cut at {} bytes", line.len())
        };
        return Err(running.failure(why));
    }
    match serde_json::from_slice::<Answer<T>>(&line) {
        Ok(answer) => Ok((running, answer)),
        Err(e) => Err(running.failure(format!("unreadable answer: {e}"))),
    }
}

impl Running {
    /// Waits for the helper; an error when it did not exit cleanly.
    pub(crate) fn finish(mut self) -> Result<()> {
        let status = self.child.wait();
        let stderr = self.stderr.take().and_then(|h| h.join().ok());
        match status {
            Ok(s) if s.success() => Ok(()),
            Ok(s) => Err(Error::Helper {
                op: self.op,
                helper: self.helper.clone(),
                message: format!("exited with {s}: {}", stderr.unwrap_or_default().trim_end()),
            }),
            Err(e) => Err(Error::Helper {
                op: self.op,
                helper: self.helper.clone(),
                message: format!("could not wait for it: {e}"),
            }),
        }
    }

    /// Kills the helper and describes why, with what it said on stderr.
    pub(crate) fn failure(mut self, why: String) -> Error {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let stderr = self.stderr.take().and_then(|h| h.join().ok());
        Error::Helper {
            op: self.op,
            helper: self.helper.clone(),
            message: format!("{why}; stderr: {}", stderr.unwrap_or_default().trim_end()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // Never leave a helper behind (an error path that did not finish it).
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
