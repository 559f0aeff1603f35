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
    pub fn locate(explicit: Option<&Path>) -> Option<StateDir> {
        if let Some(p) = explicit {
            return Some(StateDir::new(p));
        }
        if let Some(p) = std::env::var_os("BERTH_HOME").filter(|v| !v.is_empty()) {
            return Some(StateDir::new(PathBuf::from(p)));
        }
        std::env::var_os("HOME")
            .filter(|v| !v.is_empty())
            .map(|h| StateDir::new(PathBuf::from(h).join(".local/share/berth")))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The SQLite store.
    pub fn db(&self) -> PathBuf {
        self.root.join("berth.db")
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
