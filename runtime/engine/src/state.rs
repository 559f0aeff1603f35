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

/// The longest project or agent name: a container is named
/// `berth-<project>.<agent>.<instance>` and Docker's names stay short.
pub const MAX_NAME_LEN: usize = 48;

/// Checks a project or agent name, once, where a person gives it (`project
/// add`, `agent activate`, the hook): the one rule every place that uses the
/// name accepts — a path component, a branch name (`berth_worktrees`'
/// `ProjectName`/`AgentName`), a Docker container name and its labels.
/// Lowercase ASCII letters, digits, `-` and `_`; starting with a letter or
/// digit; at most [`MAX_NAME_LEN`] bytes. No `.`: the container name joins
/// project and agent with `.`, so `a.b`+`c` and `a`+`b.c` would be one
/// container (and a name with `.` passed here once, then failed at a mounted
/// `berth up` after its worktree existed).
pub fn check_name(what: &'static str, name: &str) -> crate::Result<()> {
    let ok_first = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let ok_rest = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_'));
    if ok_first && ok_rest && name.len() <= MAX_NAME_LEN {
        Ok(())
    } else {
        Err(crate::EngineError::Invalid {
            what,
            value: name.to_string(),
            why: format!(
                "use lowercase letters, digits, `-` or `_`, starting with a letter or digit, at most {MAX_NAME_LEN} characters (no `.`: it joins project and agent in container names)"
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["dev-1", "p", "my_project_v2", "0x", &"a".repeat(48)] {
            assert!(check_name("agent", good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "Dev",
            "-x",
            "a/b",
            "a..b",
            "x.lock",
            "my_project.v2",
            "a b",
            &"a".repeat(49),
        ] {
            assert!(check_name("agent", bad).is_err(), "{bad}");
        }
    }

    /// A name this check accepts is accepted everywhere it is used later:
    /// git's names (the sandbox checks a container's the same way).
    #[test]
    fn an_accepted_name_is_accepted_downstream() {
        for name in [
            "dev-1",
            "p",
            "my_project_v2",
            "0x",
            "a-_-b",
            &"z".repeat(48),
        ] {
            check_name("project", name).unwrap();
            berth_worktrees::ProjectName::new(name).unwrap();
            berth_worktrees::AgentName::new(name).unwrap();
        }
    }
}
