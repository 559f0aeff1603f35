//! The engine's view of the repositories: the forge, the agents' own
//! repositories and worktrees, through `berth-worktrees` (git2 only, no
//! `git` CLI against anything an agent can write). Every call runs in
//! `spawn_blocking`: libgit2 is synchronous, and writers of one repository
//! are serialised across processes by that crate's file locks.

use std::path::{Path, PathBuf};

use crate::error::{EngineError, Result};
use crate::projects::Project;
use crate::state::StateDir;

/// A project imported into its forge.
#[derive(Debug, Clone)]
pub struct Imported {
    pub forge: PathBuf,
    pub base_branch: String,
    /// `Name <email>` from the source repository's configuration, for the
    /// default `git.co_author`.
    pub co_author: String,
}

/// A provisioned worktree.
#[derive(Debug, Clone)]
pub struct Provisioned {
    pub worktree: PathBuf,
    pub base: String,
    pub created: bool,
}

/// A commit made for an action.
#[derive(Debug, Clone)]
pub struct Committed {
    pub branch: String,
    pub commit: String,
    pub created: bool,
}

/// The repositories of one state directory.
#[derive(Debug, Clone)]
pub struct Git {
    state: StateDir,
}

impl Git {
    pub fn new(state: StateDir) -> Git {
        Git { state }
    }

    pub fn agent_repo(&self, project: &str, agent: &str) -> PathBuf {
        self.state
            .root()
            .join("agents")
            .join(project)
            .join(format!("{agent}.git"))
    }

    pub async fn import_project(
        &self,
        _name: &str,
        _from: &Path,
        _base: Option<&str>,
    ) -> Result<Imported> {
        Err(pending())
    }

    pub async fn provision(
        &self,
        _project: &Project,
        _agent: &str,
        _branch: &str,
    ) -> Result<Provisioned> {
        Err(pending())
    }

    pub async fn recycle(&self, _project: &Project, _agent: &str) -> Result<bool> {
        Ok(false)
    }

    pub async fn forge_head(&self, _project: &Project, _branch: &str) -> Result<Option<String>> {
        Err(pending())
    }

    pub async fn merge(
        &self,
        _project: &Project,
        _branch: &str,
        _target: &str,
        _message: &str,
        _co_author: &str,
    ) -> Result<std::result::Result<String, Vec<String>>> {
        Err(pending())
    }
}

fn pending() -> EngineError {
    EngineError::Git {
        op: "git",
        message: "the worktrees integration is not built yet".into(),
    }
}

impl crate::Engine {
    pub(crate) async fn exec_commit(
        &self,
        _record: &crate::actions::ActionRecord,
        _agent: &crate::agents::Agent,
    ) -> Result<crate::actions::Outcome> {
        Err(pending())
    }
    pub(crate) async fn exec_push(
        &self,
        _record: &crate::actions::ActionRecord,
        _agent: &crate::agents::Agent,
        _branch: &str,
    ) -> Result<crate::actions::Outcome> {
        Err(pending())
    }
    pub(crate) async fn verify_interrupted(
        &self,
        _record: &crate::actions::ActionRecord,
    ) -> Result<bool> {
        Ok(false)
    }
}
