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

/// Checks a name used as a path component and in branch names: projects,
/// agents. Lowercase ASCII letters, digits, `-`, `_` and `.`; starting with a
/// letter or digit; at most 64 bytes.
pub fn check_name(what: &'static str, name: &str) -> crate::Result<()> {
    let ok_first = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let ok_rest = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'));
    if ok_first && ok_rest && name.len() <= 64 && !name.contains("..") && !name.ends_with(".lock") {
        Ok(())
    } else {
        Err(crate::EngineError::Invalid {
            what,
            value: name.to_string(),
            why: "use lowercase letters, digits, `-`, `_` or `.`, starting with a letter or digit, at most 64 characters".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["dev-1", "p", "my_project.v2", "0x"] {
            assert!(check_name("agent", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Dev",
            "-x",
            "a/b",
            "a..b",
            "x.lock",
            "a b",
            &"a".repeat(65),
        ] {
            assert!(check_name("agent", bad).is_err(), "{bad}");
        }
    }
}
