//! berth's state is private to berth's uid: the state directory is created
//! 0700 and the store 0600, and every start checks that group and other
//! still cannot read them.
//!
//! The store holds every command an agent proposed, its output, the
//! decisions and the rules; the state directory also holds the API token,
//! the agents' repositories and `berth.sock`. Another local account able to
//! read them learns everything the agents saw, and one able to traverse the
//! directory can reach the socket. The API token already refuses to be read
//! when others can (`berth_server::load_or_create_token`); the directory
//! and the store get a warning that names the `chmod` to run, on every start,
//! rather than a refusal: an existing state directory made before this check
//! keeps working, and says what to fix.

use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::Path;

use crate::error::{EngineError, Result};
use crate::state::StateDir;

pub use berth_handoff::state::{Exposed, STATE_DIR_MODE, STORE_MODE};

/// Creates the state directory (mode 0700 for what is created) and the
/// store's file `store` (mode 0600; `None` for a PostgreSQL store) when they
/// are missing. An existing directory or store keeps its mode: [`exposure`]
/// reports it.
pub fn create(state: &StateDir, store: Option<&Path>) -> Result<()> {
    let root = state.root();
    if !root.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(STATE_DIR_MODE)
            .create(root)
            .map_err(EngineError::io("creating", root))?;
        // The umask may have narrowed the mode further, never widened it;
        // set it exactly so the check below has nothing to say.
        std::fs::set_permissions(root, std::fs::Permissions::from_mode(STATE_DIR_MODE))
            .map_err(EngineError::io("setting the mode of", root))?;
    }
    let Some(db) = store else {
        return Ok(());
    };
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(STORE_MODE)
        .open(db)
    {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(EngineError::io("creating", db)(e)),
    }
}

/// The parts of the state that group or other can read (or, for the
/// directory, traverse): the directory and the store with its WAL files
/// (`berth_handoff::state::exposure`, which a handed-off exec asks too).
pub fn exposure(state: &StateDir) -> Result<Vec<Exposed>> {
    berth_handoff::state::exposure(state.root())
        .map_err(|e| EngineError::io("reading the mode of", &e.path)(e.source))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn created_private_and_opened_up_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::new(tmp.path().join("a/state"));
        create(&state, Some(&state.db())).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(state.root()), 0o700);
        assert_eq!(mode(&state.db()), 0o600);
        assert_eq!(exposure(&state).unwrap(), Vec::new());

        std::fs::set_permissions(state.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(state.db(), std::fs::Permissions::from_mode(0o640)).unwrap();
        let found = exposure(&state).unwrap();
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!((found[0].mode, found[0].wanted), (0o755, 0o700));
        assert_eq!((found[1].mode, found[1].wanted), (0o640, 0o600));
        let said = found[0].to_string();
        assert!(
            said.contains(&format!("chmod 700 {}", state.root().display())),
            "{said}"
        );
        // An existing directory keeps its mode: create does not hide it.
        create(&state, Some(&state.db())).unwrap();
        assert_eq!(exposure(&state).unwrap().len(), 2);
    }
}
