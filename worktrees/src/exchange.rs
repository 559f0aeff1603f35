//! Getting work in and out of the forge after the import: the user's new
//! upstream commits come in by fast-forwarding the forge's base branch from
//! the source repository, and a PR's branch or merge goes back to the user's
//! repository as a ref of its own.
//!
//! Both directions are fetches with git2, never the `git` CLI. A sync only
//! ever fast-forwards the base branch (compare-and-swap against the tip it
//! judged, under the forge's writer lock) and measures the new objects by
//! header against `[git] max_object_bytes` first, as the import does. An
//! export writes one ref under `refs/berth/pr/` in the user's repository and
//! nothing else: not `HEAD`, not the index, not the working tree.

use std::path::{Path, PathBuf};

use git2::{AutotagOption, FetchOptions, Oid, Repository};

use crate::Worktrees;
use crate::error::{self, Error, Op, Result};
use crate::forge::{base_branch, open_forge, ref_tip};
use crate::forge_remote::{Forge, RefUpdate};
use crate::lock::RepoLock;
use crate::names::{ProjectName, branch_ref};
use crate::object_bounds::{GitLimits, check_new_objects};
use crate::ownership;

/// Where the forge's base branch stood against the source's after a sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncStatus {
    /// The forge was moved forward to the source's tip.
    FastForwarded,
    /// Both were at the same commit.
    UpToDate,
    /// The forge holds commits the source lacks (merged PRs) and nothing
    /// new: the forge is unchanged.
    ForgeAhead,
    /// A server forge's base branch was rewritten on the server (not a
    /// fast-forward): this host's mirror followed it, as it follows the
    /// server in everything.
    RewrittenOnServer,
}

/// What [`Worktrees::sync_project`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synced {
    /// The base branch (short name).
    pub base_branch: String,
    /// The forge's tip before.
    pub before: Oid,
    /// The forge's tip after.
    pub after: Oid,
    /// The source's tip.
    pub source_tip: Oid,
    /// What happened.
    pub status: SyncStatus,
}

/// What [`Worktrees::export_commit`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exported {
    /// The repository written to (its git directory).
    pub repo: PathBuf,
    /// The full ref name written.
    pub refname: String,
    /// The commit it points at.
    pub commit: Oid,
}

/// The ref a PR is exported as: `refs/berth/pr/<number>`.
pub fn pr_export_ref(number: u64) -> String {
    format!("refs/berth/pr/{number}")
}

/// Opens a user's repository, applying libgit2's owner rule (off for this
/// process, see ownership.rs) to its git and work directories.
fn open_user_repo(path: &Path, op: Op) -> Result<Repository> {
    let repo = Repository::open(path).map_err(|e| Error::NotARepository {
        op,
        path: path.to_path_buf(),
        message: e.message().to_owned(),
    })?;
    ownership::check_source_owner(op, repo.path())?;
    if let Some(workdir) = repo.workdir() {
        ownership::check_source_owner(op, workdir)?;
    }
    Ok(repo)
}

fn utf8_url(path: &Path, op: Op) -> Result<&str> {
    path.to_str().ok_or_else(|| Error::InvalidInput {
        op,
        field: "repository path",
        value: path.display().to_string(),
        reason: "libgit2 needs a UTF-8 path".to_owned(),
    })
}

/// Fetches the objects of `remote_ref` from `from` into `into`, writing no
/// ref and no FETCH_HEAD.
fn fetch_objects(into: &Repository, from: &Path, remote_ref: &str, op: Op) -> Result<()> {
    let url = utf8_url(from, op)?;
    let git = |e| error::git(op, into.path(), Some(remote_ref))(e);
    crate::forge_remote::prepare_network();
    let mut remote = into.remote_anonymous(url).map_err(git)?;
    let mut opts = FetchOptions::new();
    opts.update_fetchhead(false)
        .download_tags(AutotagOption::None);
    remote
        .fetch(&[remote_ref], Some(&mut opts), None)
        .map_err(git)?;
    Ok(())
}

fn has_object(repo: &Repository, oid: Oid, op: Op) -> Result<bool> {
    Ok(repo
        .odb()
        .map_err(error::git(op, repo.path(), None))?
        .exists(oid))
}

impl Worktrees {
    /// Fast-forwards project `name`'s base branch to the same branch in
    /// `source`. Up to date or ahead (the forge holds merged PRs the source
    /// lacks, and nothing new came in): unchanged. Diverged: refused with
    /// [`Error::Diverged`], unchanged. Objects over `limits.max_object_bytes`
    /// are refused before anything is fetched.
    pub fn sync_project(
        &self,
        name: &ProjectName,
        source: &Path,
        limits: &GitLimits,
    ) -> Result<Synced> {
        let op = Op::SyncProject;
        let _lock = RepoLock::acquire(&self.layout.forge_lock(name))?;
        let forge = open_forge(&self.layout, name, op)?;
        let location = Forge::of(&forge, op)?;
        location.refresh(&forge, op)?;
        let (branch, before) = base_branch(&forge, op)?;
        let refname = branch_ref(&branch)?;

        let src = open_user_repo(source, op)?;
        if src.is_shallow() {
            return Err(Error::ShallowSource {
                source_repo: src.path().to_path_buf(),
            });
        }
        let source_tip = ref_tip(&src, &refname, op)?.ok_or_else(|| Error::SourceLacksBase {
            source_repo: source.to_path_buf(),
            branch: branch.clone(),
        })?;
        let unchanged = |status| Synced {
            base_branch: branch.clone(),
            before,
            after: before,
            source_tip,
            status,
        };
        if source_tip == before {
            return Ok(unchanged(SyncStatus::UpToDate));
        }
        let source_has_forge_tip = has_object(&src, before, op)?
            && src
                .graph_descendant_of(source_tip, before)
                .map_err(error::git(op, src.path(), Some(&refname)))?;
        if !source_has_forge_tip {
            let forge_contains_source = has_object(&forge, source_tip, op)?
                && forge
                    .graph_descendant_of(before, source_tip)
                    .map_err(error::git(op, forge.path(), Some(&refname)))?;
            if forge_contains_source {
                return Ok(unchanged(SyncStatus::ForgeAhead));
            }
            return Err(Error::Diverged {
                source_repo: source.to_path_buf(),
                branch,
                forge_oid: before,
                source_oid: source_tip,
            });
        }

        check_new_objects(&src, &[source_tip], &[before], limits.max_object_bytes, op)?;
        fetch_objects(&forge, src.path(), &refname, op)?;
        if !has_object(&forge, source_tip, op)? {
            // The source's branch moved between the check and the fetch.
            return Err(Error::InvalidInput {
                op,
                field: "source branch",
                value: branch,
                reason: "it moved while berth was fetching it; run the sync again".to_owned(),
            });
        }
        let update = RefUpdate {
            refname: &refname,
            previous: Some(before),
            new: Some(source_tip),
            log: "berth: sync from source (fast-forward)",
            fence: None,
        };
        location.publish(&forge, update, op)?;
        tracing::info!(project = %name, %before, after = %source_tip, "project synced");
        Ok(Synced {
            base_branch: branch,
            before,
            after: source_tip,
            source_tip,
            status: SyncStatus::FastForwarded,
        })
    }

    /// For a project whose forge is a git server, the sync: this host's
    /// mirror takes in the server's branches and tags, and the result says
    /// how the base branch moved (`source_tip` is the server's). `None` for
    /// a directory forge, whose sync reads its source repository
    /// ([`Worktrees::sync_project`]).
    pub fn sync_from_server(&self, name: &ProjectName) -> Result<Option<Synced>> {
        let op = Op::SyncProject;
        let _lock = RepoLock::acquire(&self.layout.forge_lock(name))?;
        let forge = open_forge(&self.layout, name, op)?;
        let location = Forge::of(&forge, op)?;
        if location == Forge::Directory {
            return Ok(None);
        }
        let (branch, before) = base_branch(&forge, op)?;
        location.refresh(&forge, op)?;
        let (_, after) = base_branch(&forge, op)?;
        let status = if after == before {
            SyncStatus::UpToDate
        } else if forge
            .graph_descendant_of(after, before)
            .map_err(error::git(op, forge.path(), None))?
        {
            SyncStatus::FastForwarded
        } else {
            SyncStatus::RewrittenOnServer
        };
        Ok(Some(Synced {
            base_branch: branch,
            before,
            after,
            source_tip: after,
            status,
        }))
    }

    /// Fetches `commit`, reachable from the forge's `via_branch`, into the
    /// user's repository at `target` as `refname` (under `refs/berth/`),
    /// replacing what that ref held. Nothing else in `target` changes.
    pub fn export_commit(
        &self,
        project: &ProjectName,
        commit: Oid,
        via_branch: &str,
        target: &Path,
        refname: &str,
    ) -> Result<Exported> {
        let op = Op::ExportCommit;
        if !refname.starts_with("refs/berth/") || !git2::Reference::is_valid_name(refname) {
            return Err(Error::InvalidInput {
                op,
                field: "ref name",
                value: refname.to_owned(),
                reason: "an export writes only refs under refs/berth/".to_owned(),
            });
        }
        let via_ref = branch_ref(via_branch)?;
        let forge = open_forge(&self.layout, project, op)?;
        let reachable = match ref_tip(&forge, &via_ref, op)? {
            Some(tip) => {
                tip == commit
                    || (has_object(&forge, commit, op)?
                        && forge.graph_descendant_of(tip, commit).map_err(error::git(
                            op,
                            forge.path(),
                            Some(&via_ref),
                        ))?)
            }
            None => false,
        };
        if !reachable {
            return Err(Error::CommitMissing {
                forge: forge.path().to_path_buf(),
                oid: commit,
                hint: "its branch is gone from the forge (a closed PR's branch is not kept); nothing was exported",
            });
        }

        let repo = open_user_repo(target, op)?;
        fetch_objects(&repo, forge.path(), &via_ref, op)?;
        if !has_object(&repo, commit, op)? {
            return Err(Error::CommitMissing {
                forge: forge.path().to_path_buf(),
                oid: commit,
                hint: "the branch moved while berth was fetching it; run the export again",
            });
        }
        repo.reference(refname, commit, true, "berth: export")
            .map_err(error::git(op, repo.path(), Some(refname)))?;
        Ok(Exported {
            repo: repo.path().to_path_buf(),
            refname: refname.to_owned(),
            commit,
        })
    }
}
