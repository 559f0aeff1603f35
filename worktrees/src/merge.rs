//! Merging forge branches, and what a branch changes (for PR records).
//!
//! The forge has no worktree, and gets none: the merge happens in memory
//! (`merge_commits`), and only a clean result is written — a merge commit's
//! objects, then the target ref by compare-and-swap. A conflict writes nothing
//! and names every conflicting path.

use git2::{Delta, DiffOptions, MergeOptions, Oid, Repository};

use crate::Worktrees;
use crate::error::{self, Error, Op, Result};
use crate::forge::{open_forge, ref_tip};
use crate::forge_remote::{Forge, RefUpdate};
use crate::identity::Identity;
use crate::lock::RepoLock;
use crate::names::{ProjectName, branch_ref};

/// A merge of one forge branch into another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeRequest {
    /// The branch to merge (short name).
    pub source: String,
    /// The branch to merge into (short name).
    pub target: String,
    /// Author and committer of a merge commit.
    pub identity: Identity,
    /// The merge commit's message; `None`: `Merge branch '<source>' into <target>`.
    pub message: Option<String>,
}

/// How the target moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeKind {
    /// The target already contained the source; nothing was written.
    UpToDate,
    /// The target was moved forward to the source.
    FastForward,
    /// A merge commit was written.
    MergeCommit,
}

/// What `merge` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOutcome {
    /// The target's tip now.
    pub oid: Oid,
    /// How it got there.
    pub kind: MergeKind,
}

/// How a file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// New file.
    Added,
    /// Changed content or mode.
    Modified,
    /// Removed file.
    Deleted,
    /// Something else (type change).
    Other,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    /// Its path (the new path; the old one for deletions).
    pub path: String,
    /// How it changed.
    pub kind: ChangeKind,
    /// Lines added.
    pub insertions: usize,
    /// Lines removed.
    pub deletions: usize,
}

/// What a branch changes relative to its base (`git diff base...branch`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiffStat {
    /// The merge base the diff starts from.
    pub merge_base: Oid,
    /// The branch tip.
    pub head: Oid,
    /// The changed files, by path.
    pub files: Vec<ChangedFile>,
    /// Lines added in total.
    pub insertions: usize,
    /// Lines removed in total.
    pub deletions: usize,
}

fn tip(forge: &Repository, refname: &str, branch: &str, op: Op) -> Result<Oid> {
    ref_tip(forge, refname, op)?.ok_or_else(|| Error::UnknownBranch {
        op,
        repo: forge.path().to_path_buf(),
        branch: branch.to_owned(),
    })
}

/// The paths a merge's index holds conflicts at, sorted, each once.
pub(crate) fn conflict_paths(index: &git2::Index) -> std::result::Result<Vec<String>, git2::Error> {
    let mut paths: Vec<String> = index
        .conflicts()?
        .filter_map(|c| c.ok())
        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
        .map(|entry| String::from_utf8_lossy(&entry.path).into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

impl Worktrees {
    /// Merges forge branch `source` into `target`: fast-forward when possible,
    /// else a merge commit under `identity`. A conflict is
    /// [`Error::MergeConflict`] with the forge untouched.
    pub fn merge(&self, project: &ProjectName, request: &MergeRequest) -> Result<MergeOutcome> {
        let op = Op::Merge;
        let source_ref = branch_ref(&request.source)?;
        let target_ref = branch_ref(&request.target)?;
        let signature = request.identity.signature(op)?;
        let _lock = RepoLock::acquire(&self.layout.forge_lock(project))?;
        let forge = open_forge(&self.layout, project, op)?;
        let git = |r: &str| error::git(op, forge.path(), Some(r));
        // A server's mirror merges what the server holds now.
        let location = Forge::of(&forge, op)?;
        location.refresh(&forge, op)?;

        let source = tip(&forge, &source_ref, &request.source, op)?;
        let target = tip(&forge, &target_ref, &request.target, op)?;
        if source == target
            || forge
                .graph_descendant_of(target, source)
                .map_err(git(&target_ref))?
        {
            return Ok(MergeOutcome {
                oid: target,
                kind: MergeKind::UpToDate,
            });
        }
        let log = format!("berth: merge {} into {}", request.source, request.target);
        // The target moves from the tip judged here, never forced.
        let move_target = |new| {
            let update = RefUpdate {
                refname: &target_ref,
                previous: Some(target),
                new: Some(new),
                log: &log,
                fence: None,
            };
            location.publish(&forge, update, op)
        };
        if forge
            .graph_descendant_of(source, target)
            .map_err(git(&source_ref))?
        {
            move_target(source)?;
            return Ok(MergeOutcome {
                oid: source,
                kind: MergeKind::FastForward,
            });
        }

        let ours = forge.find_commit(target).map_err(git(&target_ref))?;
        let theirs = forge.find_commit(source).map_err(git(&source_ref))?;
        let mut index = forge
            .merge_commits(&ours, &theirs, Some(&MergeOptions::new()))
            .map_err(git(&source_ref))?;
        if index.has_conflicts() {
            let paths = conflict_paths(&index).map_err(git(&source_ref))?;
            return Err(Error::MergeConflict {
                forge: forge.path().to_path_buf(),
                source_branch: request.source.clone(),
                target_branch: request.target.clone(),
                paths,
            });
        }
        let tree_id = index.write_tree_to(&forge).map_err(git(&target_ref))?;
        let tree = forge.find_tree(tree_id).map_err(git(&target_ref))?;
        let message = match &request.message {
            Some(m) => m.clone(),
            None => format!(
                "Merge branch '{}' into {}\n",
                request.source, request.target
            ),
        };
        let oid = forge
            .commit(
                None,
                &signature,
                &signature,
                &message,
                &tree,
                &[&ours, &theirs],
            )
            .map_err(git(&target_ref))?;
        move_target(oid)?;
        tracing::info!(source = %request.source, target = %request.target, %oid, "merged");
        Ok(MergeOutcome {
            oid,
            kind: MergeKind::MergeCommit,
        })
    }

    /// What forge branch `branch` changes relative to `base`, from their merge
    /// base (what a pull request shows).
    pub fn branch_diff_stat(
        &self,
        project: &ProjectName,
        branch: &str,
        base: &str,
    ) -> Result<DiffStat> {
        let op = Op::DiffStat;
        let branch_refname = branch_ref(branch)?;
        let base_refname = branch_ref(base)?;
        let forge = open_forge(&self.layout, project, op)?;
        let git = |r: &str| error::git(op, forge.path(), Some(r));
        let head = tip(&forge, &branch_refname, branch, op)?;
        let base_tip = tip(&forge, &base_refname, base, op)?;
        let merge_base = forge
            .merge_base(base_tip, head)
            .map_err(git(&branch_refname))?;
        let old = forge
            .find_commit(merge_base)
            .and_then(|c| c.tree())
            .map_err(git(&base_refname))?;
        let new = forge
            .find_commit(head)
            .and_then(|c| c.tree())
            .map_err(git(&branch_refname))?;
        let diff = forge
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut DiffOptions::new()))
            .map_err(git(&branch_refname))?;
        let mut files = Vec::new();
        for i in 0..diff.deltas().len() {
            let Some(delta) = diff.get_delta(i) else {
                continue;
            };
            let kind = match delta.status() {
                Delta::Added => ChangeKind::Added,
                Delta::Modified => ChangeKind::Modified,
                Delta::Deleted => ChangeKind::Deleted,
                _ => ChangeKind::Other,
            };
            let path = delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let (insertions, deletions) =
                match git2::Patch::from_diff(&diff, i).map_err(git(&branch_refname))? {
                    Some(patch) => {
                        let (_, add, del) = patch.line_stats().map_err(git(&branch_refname))?;
                        (add, del)
                    }
                    None => (0, 0),
                };
            files.push(ChangedFile {
                path,
                kind,
                insertions,
                deletions,
            });
        }
        files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(DiffStat {
            merge_base,
            head,
            insertions: files.iter().map(|f| f.insertions).sum(),
            deletions: files.iter().map(|f| f.deletions).sum(),
            files,
        })
    }
}
