//! Validated project, agent and task names.
//!
//! These names become path components of the state directory (`forge/<p>.git`,
//! `agents/<p>/<a>.git`, `worktrees/<p>/<a>`) and ref components
//! (`refs/heads/agent/<a>/<t>`). A name that could climb out of its directory,
//! hide as a dotfile, read as a command-line option or break a ref is refused
//! here, once, so every path the crate builds from a name is safe by
//! construction. The rule is a whitelist: ASCII letters, digits, `-`, `_` and `.`,
//! starting with a letter or digit, at most 64 bytes, no `..`, not ending in
//! `.lock` or `.git`.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, NameKind, Result};

const MAX_LEN: usize = 64;

fn validate(kind: NameKind, name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        Some("it is empty".to_owned())
    } else if name.len() > MAX_LEN {
        Some(format!("it is longer than {MAX_LEN} bytes"))
    } else if name.starts_with('-') {
        Some("it starts with '-' (it would read as an option)".to_owned())
    } else if name.starts_with('.') {
        Some("it starts with '.'".to_owned())
    } else if name.contains("..") {
        Some("it contains '..'".to_owned())
    } else if name.ends_with(".lock") || name.ends_with(".git") {
        Some("it ends in '.lock' or '.git'".to_owned())
    } else {
        name.chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
            .map(|c| format!("it contains {c:?}"))
    };
    match reason {
        None => Ok(()),
        Some(reason) => Err(Error::InvalidName {
            kind,
            name: name.to_owned(),
            reason: format!(
                "{reason}; use ASCII letters, digits, '-', '_' and '.', starting with a letter or digit, at most {MAX_LEN} bytes"
            ),
        }),
    }
}

macro_rules! name_type {
    ($(#[$doc:meta])* $ty:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $ty(String);

        impl $ty {
            /// Validates `name`.
            pub fn new(name: impl Into<String>) -> Result<Self> {
                let name = name.into();
                validate($kind, &name)?;
                Ok(Self(name))
            }

            /// The name.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $ty {
            type Err = Error;
            fn from_str(s: &str) -> Result<Self> {
                Self::new(s)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

name_type!(
    /// A project name: `<state>/forge/<name>.git`, `<state>/projects/<name>/`.
    ProjectName,
    NameKind::Project
);
name_type!(
    /// An agent name: its repository, its worktree and its branch prefix
    /// `agent/<name>/`.
    AgentName,
    NameKind::Agent
);
name_type!(
    /// A task name: the last component of the agent's branch `agent/<agent>/<task>`.
    TaskName,
    NameKind::Task
);

/// The branch prefix an agent may write, as a full ref prefix.
pub(crate) fn agent_ref_prefix(agent: &AgentName) -> String {
    format!("refs/heads/agent/{agent}/")
}

/// The short name of an agent's branch for a task.
pub(crate) fn agent_branch(agent: &AgentName, task: &TaskName) -> String {
    format!("agent/{agent}/{task}")
}

/// Checks a caller-supplied short branch name and returns its full ref name.
pub(crate) fn branch_ref(branch: &str) -> Result<String> {
    let full = format!("refs/heads/{branch}");
    if branch.is_empty()
        || branch.starts_with('-')
        || branch.starts_with("refs/")
        || !git2::Reference::is_valid_name(&full)
    {
        return Err(Error::InvalidName {
            kind: NameKind::Branch,
            name: branch.to_owned(),
            reason: "not a valid branch name; give the short name, e.g. \"main\" or \"agent/dev-1/task-7\""
                .to_owned(),
        });
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_whitelist() {
        let table: &[(&str, bool)] = &[
            ("web", true),
            ("dev-1", true),
            ("task_7.b", true),
            ("A9", true),
            ("", false),
            ("-rf", false),
            (".hidden", false),
            ("a/b", false),
            ("a..b", false),
            ("..", false),
            ("x.lock", false),
            ("x.git", false),
            ("spa ce", false),
            ("new\nline", false),
            ("ümlaut", false),
            ("a\\b", false),
            (&"x".repeat(64), true),
            (&"x".repeat(65), false),
        ];
        for (name, ok) in table {
            assert_eq!(ProjectName::new(*name).is_ok(), *ok, "project {name:?}");
            assert_eq!(AgentName::new(*name).is_ok(), *ok, "agent {name:?}");
            assert_eq!(TaskName::new(*name).is_ok(), *ok, "task {name:?}");
        }
    }

    #[test]
    fn a_refused_name_says_what_is_allowed() {
        let err = AgentName::new("../etc").unwrap_err().to_string();
        assert!(err.contains("invalid agent name \"../etc\""), "{err}");
        assert!(err.contains("use ASCII letters"), "{err}");
    }

    #[test]
    fn branch_names_are_checked_as_refs() {
        assert_eq!(branch_ref("main").unwrap(), "refs/heads/main");
        assert_eq!(branch_ref("agent/a/t").unwrap(), "refs/heads/agent/a/t");
        for bad in [
            "",
            "-x",
            "a..b",
            "a b",
            "refs/heads/main",
            "a.lock",
            "a~1",
            "a:b",
        ] {
            assert!(branch_ref(bad).is_err(), "{bad:?}");
        }
    }
}
