//! Validated project, agent and task names.
//!
//! These names become path components of the state directory (`forge/<p>.git`,
//! `agents/<p>/<a>.git`, `worktrees/<p>/<a>`) and ref components
//! (`refs/heads/agent/<a>/<t>`). A name that could climb out of its directory,
//! hide as a dotfile, read as a command-line option or break a ref is refused
//! here, once, so every path the crate builds from a name is safe by
//! construction.
//!
//! This is berth's one rule for a project or agent name: the engine, the
//! sandbox (a Docker container is named `berth-<project>.<agent>` and
//! labelled with both) and git all accept exactly what it accepts, and every
//! edge (the CLI, the API, the MCP server, the hook) parses a name into one of
//! these types before it goes further. Lowercase ASCII letters, digits, `-`
//! and `_`; starting with a letter or digit; at most [`MAX_NAME_LEN`] bytes.
//! No `.`: the container name joins project and agent with `.`, so `a.b`+`c`
//! and `a`+`b.c` would be one container (and a name with `.` once passed the
//! engine and git, then failed at a mounted `berth up` after its worktree
//! existed). No uppercase: Docker refuses it in image and volume names and two
//! names differing only in case would collide on a case-insensitive disk.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, NameKind, Result};

/// The longest project, agent or task name: a container is named
/// `berth-<project>.<agent>.<instance>` and Docker's names stay short.
pub const MAX_NAME_LEN: usize = 48;

/// What a valid name is, said to whoever gave an invalid one.
pub const NAME_RULE: &str = "use lowercase letters, digits, `-` or `_`, starting with a letter or digit, at most 48 characters (no `.`: it joins project and agent in container names)";

/// Whether `name` follows the one name rule (see the module doc).
pub fn is_valid_name(name: &str) -> bool {
    let ok_first = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    ok_first
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_'))
}

fn validate(kind: NameKind, name: &str) -> Result<()> {
    if is_valid_name(name) {
        Ok(())
    } else {
        Err(Error::InvalidName {
            kind,
            name: name.to_owned(),
            reason: NAME_RULE.to_owned(),
        })
    }
}

macro_rules! name_type {
    ($(#[$doc:meta])* $ty:ident, $kind:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        #[serde(try_from = "String", into = "String")]
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

        impl TryFrom<String> for $ty {
            type Error = Error;
            fn try_from(s: String) -> Result<Self> {
                Self::new(s)
            }
        }

        impl From<$ty> for String {
            fn from(name: $ty) -> String {
                name.0
            }
        }

        impl std::ops::Deref for $ty {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
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

    /// One row per case of the rule; every name type follows the same one.
    #[test]
    fn names_follow_the_one_rule() {
        let table: &[(&str, bool, &str)] = &[
            ("web", true, "lowercase letters"),
            ("dev-1", true, "a hyphen and a digit"),
            ("my_project_v2", true, "an underscore"),
            ("0x", true, "a digit first"),
            ("a-_-b", true, "separators inside"),
            ("9f3a0b", true, "a hex id"),
            ("", false, "empty"),
            ("-rf", false, "a hyphen first: would read as an option"),
            ("_x", false, "an underscore first"),
            (".hidden", false, "a dot first: a dotfile"),
            (
                "my_project.v2",
                false,
                "a dot: joins project and agent in a container name",
            ),
            ("a..b", false, "dots: climbs out of a directory"),
            ("..", false, "the parent directory"),
            ("x.lock", false, "a ref lock file"),
            ("x.git", false, "a repository suffix"),
            ("Dev", false, "uppercase"),
            ("a/b", false, "a path separator"),
            ("a\\b", false, "a backslash"),
            ("spa ce", false, "a space"),
            ("new\nline", false, "a newline"),
            ("ümlaut", false, "non-ASCII"),
            (&"x".repeat(MAX_NAME_LEN), true, "the longest"),
            (&"x".repeat(MAX_NAME_LEN + 1), false, "one byte too long"),
        ];
        for (name, ok, case) in table {
            assert_eq!(is_valid_name(name), *ok, "{case}: {name:?}");
            assert_eq!(
                ProjectName::new(*name).is_ok(),
                *ok,
                "project, {case}: {name:?}"
            );
            assert_eq!(
                AgentName::new(*name).is_ok(),
                *ok,
                "agent, {case}: {name:?}"
            );
            assert_eq!(TaskName::new(*name).is_ok(), *ok, "task, {case}: {name:?}");
        }
        assert!(NAME_RULE.contains(&MAX_NAME_LEN.to_string()));
    }

    #[test]
    fn a_refused_name_says_the_rule() {
        let err = AgentName::new("../etc").unwrap_err().to_string();
        assert_eq!(err, format!("invalid agent name `../etc`: {NAME_RULE}"));
        let err = ProjectName::new("a\nb").unwrap_err().to_string();
        assert!(err.starts_with("invalid project name `a\\nb`"), "{err}");
    }

    #[test]
    fn names_parse_from_json_only_when_valid() {
        let p: ProjectName = serde_json::from_str("\"demo\"").unwrap();
        assert_eq!(p, "demo");
        assert_eq!(serde_json::to_string(&p).unwrap(), "\"demo\"");
        assert!(serde_json::from_str::<ProjectName>("\"my.proj\"").is_err());
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
