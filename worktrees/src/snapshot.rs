//! What berth reads of a PR on its own: a throwaway checkout of one forge
//! commit (where a project's checks run, never in an agent's berth),
//! whether a branch would merge into another now (a PR's conflicts), the
//! files a branch changes since it left its target (a PR's diff, as text
//! bounded per file), and a checkout of one directory of a commit, by its
//! tree: the build context of a project's Dockerfile on its base branch.
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

/// The tip of forge branch `branch`.
fn forge_tip(forge: &git2::Repository, branch: &str, op: Op) -> Result<Oid> {
    let refname = branch_ref(branch)?;
    forge
        .refname_to_id(&refname)
        .map_err(|_| Error::UnknownBranch {
            op,
            repo: forge.path().to_path_buf(),
            branch: branch.to_owned(),
        })
}

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
        let (ours, theirs) = (
            forge_tip(&forge, target, op)?,
            forge_tip(&forge, source, op)?,
        );
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

/// One file a branch changes against where it left its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    /// Its text before (None: it did not exist, or is not shown).
    pub old: Option<String>,
    /// Its text after (None: deleted, or not shown).
    pub new: Option<String>,
    /// Why its text is not shown (binary, too large).
    pub skipped: Option<String>,
}

/// The blob's text, or why it is not shown.
fn blob_text(
    forge: &git2::Repository,
    id: Oid,
    max_bytes: usize,
) -> std::result::Result<Option<String>, String> {
    if id.is_zero() {
        return Ok(None);
    }
    let blob = forge.find_blob(id).map_err(|e| e.message().to_string())?;
    if blob.size() > max_bytes {
        return Err(format!("{} bytes; larger than shown", blob.size()));
    }
    if blob.is_binary() {
        return Err("not text".into());
    }
    match std::str::from_utf8(blob.content()) {
        Ok(t) => Ok(Some(t.to_owned())),
        Err(_) => Err("not UTF-8 text".into()),
    }
}

impl Worktrees {
    /// The files forge branch `source` changes since it left `target` (the
    /// merge base), in path order: at most `max_files`, each file's text
    /// shown up to `max_bytes`. What a PR's diff is.
    pub fn branch_changes(
        &self,
        project: &ProjectName,
        source: &str,
        target: &str,
        max_files: usize,
        max_bytes: usize,
    ) -> Result<Vec<FileChange>> {
        let op = Op::Snapshot;
        let forge = open_forge(&self.layout, project, op)?;
        let (head, base) = (
            forge_tip(&forge, source, op)?,
            forge_tip(&forge, target, op)?,
        );
        let git = |e| error::git(op, forge.path(), Some(source))(e);
        let from = forge.merge_base(head, base).map_err(git)?;
        let old_tree = forge.find_commit(from).map_err(git)?.tree().map_err(git)?;
        let new_tree = forge.find_commit(head).map_err(git)?.tree().map_err(git)?;
        let diff = forge
            .diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None)
            .map_err(git)?;
        let mut out = Vec::new();
        for delta in diff.deltas().take(max_files) {
            let path = delta
                .new_file()
                .path()
                .or(delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let old = blob_text(&forge, delta.old_file().id(), max_bytes);
            let new = blob_text(&forge, delta.new_file().id(), max_bytes);
            out.push(match (old, new) {
                (Ok(old), Ok(new)) => FileChange {
                    path,
                    old,
                    new,
                    skipped: None,
                },
                (Err(why), _) | (_, Err(why)) => FileChange {
                    path,
                    old: None,
                    new: None,
                    skipped: Some(why),
                },
            });
        }
        Ok(out)
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
