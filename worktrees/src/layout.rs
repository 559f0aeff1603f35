//! Where everything lives in the state directory.
//!
//! One place computes every path so that the rest of the crate never derives a
//! location from something an agent can write (a worktree's `.git` file, the
//! `gitdir` file in its admin directory): a path is always `Layout` + validated
//! names.
//!
//! ```text
//! <state>/forge/<project>.git                  bare forge (or a forge server's mirror); only berth writes it
//! <state>/berths/<project>/<agent>/            the berth's directory: everything the agent writes
//!                                              on the host (one disk image of its own when berth is root)
//! <state>/berths/<project>/<agent>/<agent>.git the agent's bare repository (alternates → forge objects)
//! <state>/berths/<project>/<agent>/<agent>.git/worktrees/<agent>   its worktree's admin directory
//! <state>/berths/<project>/<agent>/<agent>     the linked worktree (mounted at /work)
//! <state>/agents/<project>/<agent>.worktree    berth's record of the live worktree (the branch)
//! <state>/projects/<project>/                  project configuration (berth.toml, permissions.json)
//! <state>/locks/forge/<project>.lock           writer lock of the forge
//! <state>/locks/agents/<project>/<agent>.lock  writer lock of the agent repository
//! ```
//!
//! The agent repository and the worktree share one directory so that one
//! bounded file system can hold both (the engine mounts a loop-backed ext4
//! image there; a rename between them, or from the repository's staging name,
//! never crosses a mount). Only `<agent>.git` and the worktree are handed to
//! the agent (and chowned to its uid); the berth's directory itself, the
//! record and the locks stay berth's.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Op, Result};
use crate::names::{AgentName, ProjectName};

/// The paths of one state directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// A layout rooted at `state_dir` (used as given; [`crate::Worktrees::open`]
    /// makes it absolute and canonical).
    pub fn new(state_dir: impl Into<PathBuf>) -> Self {
        Self {
            root: state_dir.into(),
        }
    }

    /// The state directory.
    pub fn state_dir(&self) -> &Path {
        &self.root
    }

    /// `<state>/forge`.
    pub fn forge_dir(&self) -> PathBuf {
        self.root.join("forge")
    }

    /// `<state>/forge/<project>.git`, the project's bare forge.
    pub fn forge(&self, project: &ProjectName) -> PathBuf {
        self.forge_dir().join(format!("{project}.git"))
    }

    /// `<state>/forge/<project>.git/objects`, mounted read-only into berths.
    pub fn forge_objects(&self, project: &ProjectName) -> PathBuf {
        self.forge(project).join("objects")
    }

    /// `<state>/agents/<project>`, berth-owned directory of the records of
    /// the project's live worktrees.
    pub fn agents_dir(&self, project: &ProjectName) -> PathBuf {
        self.root.join("agents").join(project.as_str())
    }

    /// `<state>/berths/<project>`, berth-owned parent of the berths'
    /// directories.
    pub fn berths_dir(&self, project: &ProjectName) -> PathBuf {
        self.root.join("berths").join(project.as_str())
    }

    /// `<state>/berths/<project>/<agent>`, berth-owned directory holding the
    /// agent's repository and its worktree (and nothing of berth's own).
    pub fn berth_dir(&self, project: &ProjectName, agent: &AgentName) -> PathBuf {
        self.berths_dir(project).join(agent.as_str())
    }

    /// `<state>/berths/<project>/<agent>/<agent>.git`, the agent's bare
    /// repository.
    pub fn agent_repo(&self, project: &ProjectName, agent: &AgentName) -> PathBuf {
        self.berth_dir(project, agent)
            .join(Self::agent_repo_name(agent))
    }

    /// The admin directory of the agent's worktree inside its repository.
    pub fn worktree_admin(&self, project: &ProjectName, agent: &AgentName) -> PathBuf {
        self.agent_repo(project, agent)
            .join("worktrees")
            .join(agent.as_str())
    }

    /// `<state>/agents/<project>/<agent>.worktree`: berth's record that the
    /// worktree was completely provisioned, holding its branch. Written last by
    /// provisioning, removed first by recycling; outside everything the agent can
    /// write.
    pub fn worktree_record(&self, project: &ProjectName, agent: &AgentName) -> PathBuf {
        self.agents_dir(project).join(format!("{agent}.worktree"))
    }

    /// `<state>/berths/<project>/<agent>/<agent>`, the agent's linked
    /// worktree.
    pub fn worktree(&self, project: &ProjectName, agent: &AgentName) -> PathBuf {
        self.berth_dir(project, agent).join(agent.as_str())
    }

    /// `<state>/projects/<project>`, the project's configuration directory.
    pub fn project_config_dir(&self, project: &ProjectName) -> PathBuf {
        self.root.join("projects").join(project.as_str())
    }

    /// `<state>/locks/forge/<project>.lock`, the forge's writer lock file.
    pub fn forge_lock(&self, project: &ProjectName) -> PathBuf {
        self.root
            .join("locks")
            .join("forge")
            .join(format!("{project}.lock"))
    }

    /// `<state>/locks/agents/<project>/<agent>.lock`, the agent repository's
    /// writer lock file.
    pub fn agent_lock(&self, project: &ProjectName, agent: &AgentName) -> PathBuf {
        self.root
            .join("locks")
            .join("agents")
            .join(project.as_str())
            .join(format!("{agent}.lock"))
    }

    pub(crate) fn agent_repo_name(agent: &AgentName) -> String {
        format!("{agent}.git")
    }
}

/// The state directory: `explicit` (`--state-dir`), else `$BERTH_HOME`, else
/// `$XDG_DATA_HOME/berth`, else `~/.local/share/berth`.
///
/// Empty variables count as unset; a relative `XDG_DATA_HOME` is ignored, as the
/// XDG specification says.
pub fn resolve_state_dir(explicit: Option<PathBuf>) -> Result<PathBuf> {
    resolve_with(explicit, |key| std::env::var_os(key))
}

fn resolve_with(
    explicit: Option<PathBuf>,
    env: impl Fn(&str) -> Option<OsString>,
) -> Result<PathBuf> {
    let set = |key: &str| env(key).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = explicit {
        if dir.as_os_str().is_empty() {
            return Err(Error::StateDir {
                op: Op::ResolveStateDir,
                reason: "--state-dir is empty; give a directory".to_owned(),
            });
        }
        return Ok(dir);
    }
    if let Some(dir) = set("BERTH_HOME") {
        return Ok(dir);
    }
    if let Some(dir) = set("XDG_DATA_HOME").filter(|d| d.is_absolute()) {
        return Ok(dir.join("berth"));
    }
    if let Some(home) = set("HOME").filter(|d| d.is_absolute()) {
        return Ok(home.join(".local").join("share").join("berth"));
    }
    Err(Error::StateDir {
        op: Op::ResolveStateDir,
        reason: "no state directory: --state-dir, BERTH_HOME, XDG_DATA_HOME and HOME are all unset; pass --state-dir DIR or set BERTH_HOME".to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_dir_precedence() {
        // (explicit, BERTH_HOME, XDG_DATA_HOME, HOME) -> expected
        type Row<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
            Option<&'a str>,
        );
        let table: &[Row] = &[
            (Some("/x"), Some("/b"), Some("/d"), Some("/h"), Some("/x")),
            (None, Some("/b"), Some("/d"), Some("/h"), Some("/b")),
            (None, Some(""), Some("/d"), Some("/h"), Some("/d/berth")),
            (None, None, Some("/d"), Some("/h"), Some("/d/berth")),
            (
                None,
                None,
                Some("rel"),
                Some("/h"),
                Some("/h/.local/share/berth"),
            ),
            (None, None, None, Some("/h"), Some("/h/.local/share/berth")),
            (None, None, None, Some(""), None),
            (None, None, None, None, None),
            (Some(""), Some("/b"), None, None, None),
        ];
        for (explicit, berth, xdg, home, want) in table {
            let env = |key: &str| {
                match key {
                    "BERTH_HOME" => *berth,
                    "XDG_DATA_HOME" => *xdg,
                    "HOME" => *home,
                    _ => None,
                }
                .map(OsString::from)
            };
            let got = resolve_with(explicit.map(PathBuf::from), env);
            match want {
                Some(want) => assert_eq!(got.unwrap(), PathBuf::from(want)),
                None => {
                    let msg = got.unwrap_err().to_string();
                    assert!(msg.contains("state"), "{msg}");
                }
            }
        }
    }

    #[test]
    fn paths_are_built_from_names() {
        let layout = Layout::new("/s");
        let p = ProjectName::new("web").unwrap();
        let a = AgentName::new("dev-1").unwrap();
        let got = [
            layout.forge(&p),
            layout.berth_dir(&p, &a),
            layout.agent_repo(&p, &a),
            layout.worktree_admin(&p, &a),
            layout.worktree_record(&p, &a),
            layout.worktree(&p, &a),
            layout.project_config_dir(&p),
            layout.forge_lock(&p),
            layout.agent_lock(&p, &a),
        ];
        let want = [
            "/s/forge/web.git",
            "/s/berths/web/dev-1",
            "/s/berths/web/dev-1/dev-1.git",
            "/s/berths/web/dev-1/dev-1.git/worktrees/dev-1",
            "/s/agents/web/dev-1.worktree",
            "/s/berths/web/dev-1/dev-1",
            "/s/projects/web",
            "/s/locks/forge/web.lock",
            "/s/locks/agents/web/dev-1.lock",
        ]
        .map(PathBuf::from);
        assert_eq!(got, want);
    }
}
