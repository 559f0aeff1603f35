//! Pushing an agent's branch to the forge: its own prefix, never forced.
//!
//! This is not a git transport push. A libgit2 push from the agent repository
//! (`remote_anonymous(forge)`) reads the agent's configuration, and an agent
//! that sets `url.<anything>.pushInsteadOf = <forge path>` would send berth's
//! root-privileged push into any repository on the host. Instead berth does
//! what receive-pack would, in process:
//!
//! 1. read the branch tip from the agent repository;
//! 2. refuse a ref outside `refs/heads/agent/<agent>/`, and a tip that does not
//!    contain what the forge has (non-fast-forward, with both ids);
//! 3. pack the objects the forge lacks (the agent repository sees the forge's
//!    objects through alternates, so the forge's tips mark what to leave out)
//!    and index the pack into the forge;
//! 4. move the forge ref with a compare-and-swap against the value read in 2.
//!
//! Pushing what the forge already has writes nothing and says so.

use git2::{Oid, Repository};

use crate::Worktrees;
use crate::agent::open_agent_repo;
use crate::error::{self, Error, Op, Result};
use crate::forge::{open_forge, ref_tip};
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName, agent_ref_prefix, branch_ref};

/// What `push` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushOutcome {
    /// The full ref pushed (`refs/heads/agent/<agent>/…`).
    pub refname: String,
    /// The commit the forge's ref is at now.
    pub oid: Oid,
    /// What the forge's ref was before (`None`: it was created).
    pub previous: Option<Oid>,
    /// False when the forge already had exactly this commit (a no-op).
    pub updated: bool,
    /// How many objects were copied into the forge.
    pub objects: usize,
}

impl Worktrees {
    /// Pushes the agent's `branch` (short name, `agent/<agent>/…`) from its
    /// repository to the project's forge, fast-forward only.
    pub fn push(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        branch: &str,
    ) -> Result<PushOutcome> {
        let op = Op::Push;
        let refname = branch_ref(branch)?;
        let prefix = agent_ref_prefix(agent);
        if !refname.starts_with(&prefix) || refname.len() == prefix.len() {
            return Err(Error::RefNotAllowed {
                op,
                agent: agent.to_string(),
                refname,
                allowed_prefix: prefix,
            });
        }

        let _agent_lock = RepoLock::acquire(&self.layout.agent_lock(project, agent))?;
        let _forge_lock = RepoLock::acquire(&self.layout.forge_lock(project))?;
        let forge = open_forge(&self.layout, project, op)?;
        let agent_repo = open_agent_repo(&self.layout, project, agent, op)?;

        let local = ref_tip(&agent_repo, &refname, op)?.ok_or_else(|| Error::UnknownBranch {
            op,
            repo: agent_repo.path().to_path_buf(),
            branch: branch.to_owned(),
        })?;
        let agent_git = |e| error::git(op, agent_repo.path(), Some(&refname))(e);
        agent_repo.find_commit(local).map_err(agent_git)?;
        let previous = ref_tip(&forge, &refname, op)?;
        if previous == Some(local) {
            return Ok(PushOutcome {
                refname,
                oid: local,
                previous,
                updated: false,
                objects: 0,
            });
        }
        if let Some(forge_oid) = previous {
            // The forge's objects are visible in the agent repository.
            let contains = agent_repo
                .graph_descendant_of(local, forge_oid)
                .map_err(agent_git)?;
            if !contains {
                return Err(Error::NonFastForward {
                    refname,
                    forge: forge.path().to_path_buf(),
                    forge_oid,
                    local_oid: local,
                });
            }
        }

        let objects = copy_objects(&agent_repo, &forge, local, &refname)?;
        let forge_git = |e| error::git(op, forge.path(), Some(&refname))(e);
        // The commit and its tree must now be in the forge itself.
        forge
            .find_commit(local)
            .and_then(|c| c.tree().map(|_| ()))
            .map_err(forge_git)?;
        let log = format!("berth: push from agent {agent}");
        match previous {
            Some(old) => forge.reference_matching(&refname, local, true, old, &log),
            None => forge.reference(&refname, local, false, &log),
        }
        .map_err(forge_git)?;
        tracing::info!(refname = %refname, oid = %local, objects, "pushed to forge");
        Ok(PushOutcome {
            refname,
            oid: local,
            previous,
            updated: true,
            objects,
        })
    }
}

/// Copies every object reachable from `tip` that is not reachable from a forge
/// branch or tag into the forge, as one pack. Returns the object count.
fn copy_objects(agent: &Repository, forge: &Repository, tip: Oid, refname: &str) -> Result<usize> {
    let op = Op::Push;
    let agent_git = |e| error::git(op, agent.path(), Some(refname))(e);
    let forge_git = |e| error::git(op, forge.path(), Some(refname))(e);

    let mut walk = agent.revwalk().map_err(agent_git)?;
    walk.push(tip).map_err(agent_git)?;
    for r in forge.references().map_err(forge_git)? {
        let r = r.map_err(forge_git)?;
        let is_branch_or_tag = r
            .name()
            .is_ok_and(|n| n.starts_with("refs/heads/") || n.starts_with("refs/tags/"));
        if let (true, Some(oid)) = (is_branch_or_tag, r.target()) {
            // Peel tags to commits; anything that is not a commit bounds nothing.
            if let Ok(commit) = forge
                .find_object(oid, None)
                .and_then(|o| o.peel_to_commit())
            {
                walk.hide(commit.id()).map_err(agent_git)?;
            }
        }
    }
    let mut builder = agent.packbuilder().map_err(agent_git)?;
    builder.insert_walk(&mut walk).map_err(agent_git)?;
    let count = builder.object_count();
    if count == 0 {
        return Ok(0);
    }
    let mut pack = git2::Buf::new();
    builder.write_buf(&mut pack).map_err(agent_git)?;
    let odb = forge.odb().map_err(forge_git)?;
    let mut writer = odb.packwriter().map_err(forge_git)?;
    std::io::Write::write_all(&mut writer, &pack).map_err(|source| Error::Io {
        op,
        path: forge.path().join("objects/pack"),
        source,
    })?;
    writer.commit().map_err(forge_git)?;
    Ok(count)
}
