//! A `command` agent's output kept in berth's state (issue 18): each
//! session has a directory, `<state>/sessions/<session id>/`, and each turn
//! writes its program's stdout and stderr there *as they arrive*, so a
//! `kill -9` of berth mid-turn leaves what the program printed until then
//! (the `session.turn_ended` event, which a crash never writes, keeps only
//! 4 KiB tails).
//!
//! - **Where.** `<prompt id>-<attempt>.stdout` and `.stderr`: one pair per
//!   turn, a redelivered prompt's second run beside its first.
//! - **Whose.** berth's: the directories are made 0700 and the files 0600
//!   under the state directory, itself 0700, which no berth's uid can
//!   traverse; the program never gets a path into it.
//! - **Bounded.** The first [`TURN_OUTPUT_CAP`] bytes of each stream are
//!   kept; past it a line saying so ends the file, and the rest is counted,
//!   not written. The event's tail still holds the end.
//! - **Not fatal.** The program's turn does not depend on this copy: a
//!   write that fails (a full disk) is logged once and the turn goes on.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};

use berth_sandbox::exec::OutputChunk;
use serde::Serialize;

use crate::error::{EngineError, Result};
use crate::state::StateDir;

/// Bytes of each stream a turn keeps in its session directory.
pub const TURN_OUTPUT_CAP: u64 = 1024 * 1024;

/// The mode of the sessions' directories.
const DIR_MODE: u32 = 0o700;
/// The mode of a turn's output files.
const FILE_MODE: u32 = 0o600;

/// Where one turn's output is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnFiles {
    pub stdout: PathBuf,
    pub stderr: PathBuf,
}

/// The directory of session `session`, when `session` is a name berth
/// made (letters and digits: never a path).
pub fn session_dir(state: &StateDir, session: &str) -> Option<PathBuf> {
    (!session.is_empty() && session.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| state.sessions_dir().join(session))
}

/// The files of the turn running prompt `prompt`'s `attempt`-th delivery
/// in session `session`.
pub fn turn_files(
    state: &StateDir,
    session: &str,
    prompt: &str,
    attempt: i64,
) -> Result<TurnFiles> {
    let invalid = |value: &str| EngineError::Invalid {
        what: "session output",
        value: value.to_string(),
        why: "an id holds letters and digits only".into(),
    };
    let dir = session_dir(state, session).ok_or_else(|| invalid(session))?;
    if prompt.is_empty() || !prompt.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(invalid(prompt));
    }
    Ok(TurnFiles {
        stdout: dir.join(format!("{prompt}-{attempt}.stdout")),
        stderr: dir.join(format!("{prompt}-{attempt}.stderr")),
    })
}

/// One stream's file, written up to [`TURN_OUTPUT_CAP`].
struct StreamFile {
    file: File,
    path: PathBuf,
    written: u64,
    total: u64,
    /// The truncation line was written: nothing more is.
    noted: bool,
    failed: bool,
}

impl StreamFile {
    fn create(path: &Path) -> Result<StreamFile> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(FILE_MODE)
            .open(path)
            .map_err(EngineError::io("creating a turn's output file", path))?;
        Ok(StreamFile {
            file,
            path: path.to_path_buf(),
            written: 0,
            total: 0,
            noted: false,
            failed: false,
        })
    }

    fn write(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if self.failed || self.noted {
            return;
        }
        let room = usize::try_from(TURN_OUTPUT_CAP - self.written).unwrap_or(usize::MAX);
        let kept = &bytes[..bytes.len().min(room)];
        let mut result = self.file.write_all(kept);
        self.written += kept.len() as u64;
        if result.is_ok() && self.total > TURN_OUTPUT_CAP {
            // Said once, where the kept bytes end.
            self.noted = true;
            result = self.file.write_all(
                format!(
                    "\n[berth: output truncated: the first {TURN_OUTPUT_CAP} bytes of this stream \
                     are kept here, the last 4 KiB in the session.turn_ended event]\n"
                )
                .as_bytes(),
            );
        }
        if let Err(e) = result {
            self.failed = true;
            tracing::warn!(path = %self.path.display(), error = %e,
                "a turn's output is no longer kept in its session directory");
        }
    }
}

/// A turn's two files, written as its chunks arrive.
pub(crate) struct TurnOutputWriter {
    stdout: StreamFile,
    stderr: StreamFile,
}

impl TurnOutputWriter {
    /// Makes the session's directory (0700) and the turn's files (0600,
    /// emptied if a crashed run of the same attempt left them).
    pub(crate) fn create(state: &StateDir, files: &TurnFiles) -> Result<TurnOutputWriter> {
        let sessions = state.sessions_dir();
        for dir in [Some(sessions.as_path()), files.stdout.parent()]
            .into_iter()
            .flatten()
        {
            match std::fs::DirBuilder::new().mode(DIR_MODE).create(dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(EngineError::io("creating a session directory", dir)(e)),
            }
        }
        Ok(TurnOutputWriter {
            stdout: StreamFile::create(&files.stdout)?,
            stderr: StreamFile::create(&files.stderr)?,
        })
    }

    pub(crate) fn write(&mut self, chunk: &OutputChunk) {
        match chunk {
            OutputChunk::Stdout(b) => self.stdout.write(b),
            OutputChunk::Stderr(b) => self.stderr.write(b),
        }
    }

    /// Whether either stream outgrew what its file keeps.
    pub(crate) fn truncated(&self) -> bool {
        self.stdout.total > TURN_OUTPUT_CAP || self.stderr.total > TURN_OUTPUT_CAP
    }
}

/// Writes every chunk `rx` receives through `writer` until the exec drops
/// its sink; returns the writer. Runs on a blocking thread: the writes are
/// plain file writes, one per chunk, and need no flush to survive berth's
/// death (they are in the kernel once `write` returns).
pub(crate) fn keep_output(
    mut writer: TurnOutputWriter,
    mut rx: tokio::sync::mpsc::Receiver<OutputChunk>,
) -> tokio::task::JoinHandle<TurnOutputWriter> {
    tokio::task::spawn_blocking(move || {
        while let Some(chunk) = rx.blocking_recv() {
            writer.write(&chunk);
        }
        writer
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streams_file_keeps_its_head_and_says_when_it_was_cut() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        let files = turn_files(&state, "s1", "p1", 2).unwrap();
        assert!(files.stdout.ends_with("sessions/s1/p1-2.stdout"));
        let mut w = TurnOutputWriter::create(&state, &files).unwrap();
        let chunk = vec![b'x'; 64 * 1024];
        for _ in 0..20 {
            w.write(&OutputChunk::Stdout(chunk.clone()));
        }
        w.write(&OutputChunk::Stderr(b"oops\n".to_vec()));
        assert!(w.truncated());
        let out = std::fs::read(&files.stdout).unwrap();
        let head = &out[..TURN_OUTPUT_CAP as usize];
        assert!(head.iter().all(|b| *b == b'x'));
        let note = String::from_utf8_lossy(&out[TURN_OUTPUT_CAP as usize..]);
        assert!(
            note.starts_with("\n[berth: output truncated: the first 1048576 bytes"),
            "{note}"
        );
        assert_eq!(std::fs::read(&files.stderr).unwrap(), b"oops\n");
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&files.stdout), FILE_MODE);
        assert_eq!(mode(files.stdout.parent().unwrap()), DIR_MODE);
    }

    #[test]
    fn an_id_is_never_a_path() {
        let state = StateDir::new("/s");
        assert!(turn_files(&state, "../x", "p", 1).is_err());
        assert!(turn_files(&state, "s", "a/b", 1).is_err());
        assert!(session_dir(&state, "").is_none());
    }
}
