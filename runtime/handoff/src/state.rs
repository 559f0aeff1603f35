//! Where berth's state directory is, and which parts of it other users can
//! read: what berth needs before and after it hands an exec to
//! the server on that state, and what the engine uses for the same answers
//! (`berth_engine::StateDir`, `berth_engine::private_state`).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// The state directory's mode when berth creates it.
pub const STATE_DIR_MODE: u32 = 0o700;
/// The store's mode when berth creates it (SQLite gives its `-wal` and
/// `-shm` files the store's own mode).
pub const STORE_MODE: u32 = 0o600;

/// The store's file in the state directory.
pub const STORE_FILE: &str = "berth.db";

/// The socket a `berth serve` on the state listens on, only for its own uid.
pub const SOCKET_FILE: &str = "berth.sock";

/// The state directory: `--state`, else `$BERTH_HOME`, else
/// `~/.local/share/berth`; `None` when none of them is set.
pub fn locate(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("BERTH_HOME").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME")
        .filter(|v| !v.is_empty())
        .map(|h| PathBuf::from(h).join(".local/share/berth"))
}

/// A part of the state that group or other can reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exposed {
    pub path: PathBuf,
    /// Its permission bits.
    pub mode: u32,
    /// The mode it should have.
    pub wanted: u32,
}

impl std::fmt::Display for Exposed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is open to other users (mode {:04o}): it holds berth's store, token and agents' repositories; run `chmod {:o} {}`",
            self.path.display(),
            self.mode,
            self.wanted,
            self.path.display()
        )
    }
}

/// Reading a mode failed (not: the file is missing).
#[derive(Debug, thiserror::Error)]
#[error("reading the mode of {}: {source}", path.display())]
pub struct ExposureError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

/// The parts of the state at `root` that group or other can read (or, for
/// the directory, traverse): the directory and the store with its WAL files.
pub fn exposure(root: &Path) -> Result<Vec<Exposed>, ExposureError> {
    let db = root.join(STORE_FILE);
    let mut candidates = vec![(root.to_path_buf(), STATE_DIR_MODE)];
    for suffix in ["", "-wal", "-shm"] {
        let mut p = db.clone().into_os_string();
        p.push(suffix);
        candidates.push((PathBuf::from(p), STORE_MODE));
    }
    let mut out = Vec::new();
    for (path, wanted) in candidates {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) => {
                let mode = meta.permissions().mode() & 0o7777;
                if mode & 0o077 != 0 {
                    out.push(Exposed { path, mode, wanted });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(ExposureError { path, source }),
        }
    }
    Ok(out)
}
