//! What berth reads of a PR on its own: a throwaway checkout of one forge
//! commit (where a project's checks run, never in an agent's berth), and
//! whether a branch would merge into another now (a PR's conflicts). Also a
//! checkout of one directory of a commit, by its tree: the build context of a
//! project's Dockerfile on its base branch.
//!
//! Both read the forge, which only berth writes. The checkout goes into a
//! directory the caller has just made empty under berth's state — no agent
//! has written it — and is bounded by `[git] max_checkout_bytes`, measured
//! from object headers before anything is written.

use std::path::Path;

use git2::{MergeOptions, Oid, Repository, Tree, build::CheckoutBuilder};

use crate::Worktrees;
use crate::error::{self, Error, Op, Result};
use crate::forge::open_forge;
use crate::merge::conflict_paths;
use crate::names::{ProjectName, branch_ref};
use crate::object_bounds::check_checkout_size;

impl Worktrees {
    /// Writes the tree of forge commit `commit` into `dest` (an empty
    /// directory berth made), refusing a tree of more than `max_bytes`.
    pub fn check_out_commit(
        &self,
        project: &ProjectName,
        commit: Oid,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<()> {
        let op = Op::Snapshot;
        let forge = open_forge(&self.layout, project, op)?;
        let name = commit.to_string();
        let git = |e| error::git(op, forge.path(), Some(&name))(e);
        let tree = forge
            .find_commit(commit)
            .map_err(git)?
            .tree()
            .map_err(git)?;
        write_tree(&forge, &tree, &name, dest, max_bytes, op)
    }

    /// Writes forge tree `tree` (a directory of a commit, as
    /// [`Worktrees::forge_branch_dir`] names it) into `dest`, an empty
    /// directory berth made, refusing a tree of more than `max_bytes`. A
    /// symlink in it is written as a symlink, never followed.
    pub fn check_out_tree(
        &self,
        project: &ProjectName,
        tree: Oid,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<()> {
        let op = Op::Snapshot;
        let forge = open_forge(&self.layout, project, op)?;
        let name = tree.to_string();
        let found = forge
            .find_tree(tree)
            .map_err(|e| error::git(op, forge.path(), Some(&name))(e))?;
        write_tree(&forge, &found, &name, dest, max_bytes, op)
    }

    /// The paths that would conflict if forge branch `source` were merged
    /// into `target` now; empty when it would merge cleanly (up to date and
    /// fast-forward included). The forge is not changed.
    pub fn merge_conflicts(
        &self,
        project: &ProjectName,
        source: &str,
        target: &str,
    ) -> Result<Vec<String>> {
        let op = Op::Snapshot;
        let forge = open_forge(&self.layout, project, op)?;
        let tip = |branch: &str| -> Result<Oid> {
            let refname = branch_ref(branch)?;
            forge
                .refname_to_id(&refname)
                .map_err(|_| Error::UnknownBranch {
                    op,
                    repo: forge.path().to_path_buf(),
                    branch: branch.to_owned(),
                })
        };
        let (ours, theirs) = (tip(target)?, tip(source)?);
        let git = |e| error::git(op, forge.path(), Some(source))(e);
        if ours == theirs
            || forge.graph_descendant_of(ours, theirs).map_err(git)?
            || forge.graph_descendant_of(theirs, ours).map_err(git)?
        {
            return Ok(Vec::new());
        }
        let ours = forge.find_commit(ours).map_err(git)?;
        let theirs = forge.find_commit(theirs).map_err(git)?;
        let index = forge
            .merge_commits(&ours, &theirs, Some(&MergeOptions::new()))
            .map_err(git)?;
        if !index.has_conflicts() {
            return Ok(Vec::new());
        }
        conflict_paths(&index).map_err(git)
    }
}

/// Writes `tree` into `dest` once its size is known to be within `max_bytes`.
fn write_tree(
    forge: &Repository,
    tree: &Tree<'_>,
    name: &str,
    dest: &Path,
    max_bytes: u64,
    op: Op,
) -> Result<()> {
    check_checkout_size(forge, tree.id(), name, max_bytes, op)?;
    let mut checkout = CheckoutBuilder::new();
    checkout.target_dir(dest).force().update_index(false);
    forge
        .checkout_tree(tree.as_object(), Some(&mut checkout))
        .map_err(|e| error::git(op, forge.path(), Some(name))(e))
}
