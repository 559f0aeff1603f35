//! The state directory: the store and the per-project configuration.
//!
//! Everything berth keeps lives under one directory (`--state`, `$BERTH_HOME`,
//! or `~/.local/share/berth`). Project configuration lives here, beside the
//! store and outside every worktree: an agent could write a file inside its
//! worktree, so rules are never read from there.

use std::path::{Path, PathBuf};

/// The layout of one state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateDir {
    root: PathBuf,
}

impl StateDir {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        StateDir { root: root.into() }
    }

    /// `--state`, else `$BERTH_HOME`, else `~/.local/share/berth`.
    /// (`berth_handoff::state::locate`: `berth` finds the state
    /// the same way before it hands an exec to a server.)
    pub fn locate(explicit: Option<&Path>) -> Option<StateDir> {
        berth_handoff::state::locate(explicit).map(StateDir::new)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The SQLite store.
    pub fn db(&self) -> PathBuf {
        self.root.join(berth_handoff::state::STORE_FILE)
    }

    /// `<state>/store.toml`: the store's own settings (the events' retention).
    pub fn store_config(&self) -> PathBuf {
        self.root.join("store.toml")
    }

    /// `<state>/archive`: where `berth events archive` writes by default.
    pub fn archive_dir(&self) -> PathBuf {
        self.root.join("archive")
    }

    /// `<state>/sessions`: each session's directory, where a `command`
    /// agent's turns keep their output (`session_output.rs`).
    pub fn sessions_dir(&self) -> PathBuf {
        self.root.join("sessions")
    }

    /// `<state>/projects/NAME`: the project's configuration files.
    pub fn project_dir(&self, project: &str) -> PathBuf {
        self.root.join("projects").join(project)
    }

    pub fn project_config(&self, project: &str) -> PathBuf {
        self.project_dir(project).join("berth.toml")
    }

    pub fn project_rules(&self, project: &str) -> PathBuf {
        self.project_dir(project).join("permissions.json")
    }
}

/// Writes `value` as the JSON file `path` (a record berth keeps beside a
/// project's configuration): a sibling `.json.tmp` first, then renamed over
/// it, so a reader sees the old file or the new one, never half of one.
pub(crate) fn replace_json<T: serde::Serialize>(
    path: &Path,
    value: &T,
    op: &'static str,
) -> crate::error::Result<()> {
    use crate::error::EngineError;
    let text = serde_json::to_string_pretty(value).map_err(|e| EngineError::corrupt(op, e))?;
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, text).map_err(EngineError::io("writing", &tmp))?;
    std::fs::rename(&tmp, path).map_err(EngineError::io("replacing", path))
}

/// The JSON file `path` as `T`; `None` when there is none. One that does not
/// parse is `bad(path, why)`.
pub(crate) fn read_json<T, E>(
    path: PathBuf,
    bad: impl FnOnce(PathBuf, String) -> E,
) -> crate::error::Result<Option<T>>
where
    T: serde::de::DeserializeOwned,
    E: Into<crate::error::EngineError>,
{
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(crate::error::EngineError::io("reading", &path)(e)),
    };
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| bad(path, e.to_string()).into())
}
