//! The round trip with the user's repository after `berth project add`:
//! `sync` fast-forwards the forge's base branch from the repository the
//! project was imported from, `export` fetches a PR's branch (or, merged,
//! its merge commit) back into it as `refs/berth/pr/<number>`. Each is
//! recorded as an event; neither touches the user's checked-out branch.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::prs::PrStatus;

/// What `berth project sync` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectSync {
    pub project: String,
    /// The repository synced from.
    pub source: String,
    pub base_branch: String,
    /// `fast_forwarded`, `up_to_date`, or `forge_ahead` (the forge holds
    /// merged PRs the source lacks, and the source has nothing new).
    pub status: &'static str,
    /// The forge's base before and after.
    pub before: String,
    pub after: String,
}

/// What `berth pr export` wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrExport {
    pub pr: i64,
    pub project: String,
    /// The PR's status: an open PR exports its branch, a merged one its merge.
    pub status: PrStatus,
    /// The repository written to (its git directory).
    pub repo: PathBuf,
    /// The ref written: `refs/berth/pr/<number>`.
    #[serde(rename = "ref")]
    pub refname: String,
    pub commit: String,
    /// A git command that shows what was exported.
    pub show: String,
    /// A git command that merges it into the checked-out branch.
    pub merge: String,
}

fn sync_status(s: berth_worktrees::SyncStatus) -> &'static str {
    match s {
        berth_worktrees::SyncStatus::FastForwarded => "fast_forwarded",
        berth_worktrees::SyncStatus::UpToDate => "up_to_date",
        berth_worktrees::SyncStatus::ForgeAhead => "forge_ahead",
        berth_worktrees::SyncStatus::RewrittenOnServer => "rewritten_on_server",
    }
}

impl Engine {
    /// Fast-forwards `name`'s base branch in the forge from the repository
    /// it was imported from; refuses divergence, changing nothing.
    pub async fn sync_project(&self, name: &str, actor: &Actor) -> Result<ProjectSync> {
        let project = self.project(name).await?;
        // A server forge: the sync is the mirror following the server.
        let from_server = self.git().sync_from_server(&project.name).await?;
        let source = PathBuf::from(&project.source);
        if from_server.is_none() && !source.exists() {
            return Err(EngineError::RepositoryGone {
                what: "the source repository",
                project: project.name,
                path: source,
                hint: "put the repository back at that path; `berth pr export PR --to DIR` still takes work out",
            });
        }
        let synced = match from_server {
            Some(synced) => synced,
            None => {
                let (config, _) = self.load_project_files(name)?;
                self.git()
                    .sync_project(&project.name, &source, config.git.limits())
                    .await?
            }
        };
        let report = ProjectSync {
            project: project.name.clone(),
            source: project.source.clone(),
            base_branch: synced.base_branch,
            status: sync_status(synced.status),
            before: synced.before.to_string(),
            after: synced.after.to_string(),
        };
        if synced.before != synced.after {
            let mut tx = self.store.write("recording a sync").await?;
            emit(
                &mut tx,
                NewEvent::new(kind::PROJECT_SYNCED, actor)
                    .project(&project.name)
                    .payload(serde_json::json!({
                        "source": report.source,
                        "base_branch": report.base_branch,
                        "before": report.before,
                        "after": report.after,
                    })),
            )
            .await?;
            tx.commit()
                .await
                .map_err(EngineError::store("recording a sync"))?;
        }
        Ok(report)
    }

    /// Fetches PR `id`'s branch (open) or merge commit (merged) into `to`,
    /// by default the project's source repository, as
    /// `refs/berth/pr/<number>`.
    pub async fn export_pr(&self, id: &str, to: Option<&Path>, actor: &Actor) -> Result<PrExport> {
        let pr = self.pr(id).await?;
        let project = self.project(&pr.project).await?;
        let (commit, via) = match pr.status {
            PrStatus::Merged => {
                let commit = pr.merge_commit.clone().ok_or_else(|| {
                    EngineError::corrupt(
                        "exporting a PR",
                        format!("PR #{} merged without a merge commit", pr.number),
                    )
                })?;
                (commit, pr.base.clone())
            }
            PrStatus::Open | PrStatus::Closed => {
                let head = self
                    .git()
                    .forge_head(&project, &pr.branch)
                    .await?
                    .unwrap_or_else(|| pr.head.clone());
                (head, pr.branch.clone())
            }
        };
        let target = match to {
            Some(dir) => dir.to_path_buf(),
            None => PathBuf::from(&project.source),
        };
        if !target.exists() {
            return Err(EngineError::RepositoryGone {
                what: if to.is_some() {
                    "the repository"
                } else {
                    "the source repository"
                },
                project: project.name,
                path: target,
                hint: "give the repository to export into with `--to DIR`",
            });
        }
        let number = u64::try_from(pr.number).map_err(|_| {
            EngineError::corrupt("exporting a PR", format!("PR number {}", pr.number))
        })?;
        let refname = berth_worktrees::pr_export_ref(number);
        let exported = self
            .git()
            .export_commit(&project.name, &commit, &via, &target, &refname)
            .await?;
        let dir = berth_policy::shell::quote_word(&target.display().to_string());
        let report = PrExport {
            pr: pr.number,
            project: project.name.clone(),
            status: pr.status,
            repo: exported.repo,
            show: format!("git -C {dir} log --oneline --graph {refname}"),
            merge: format!("git -C {dir} merge {refname}"),
            refname,
            commit: exported.commit.to_string(),
        };
        let mut tx = self.store.write("recording an export").await?;
        emit(
            &mut tx,
            NewEvent::new(kind::PR_EXPORTED, actor)
                .project(&project.name)
                .payload(serde_json::json!({
                    "pr": report.pr,
                    "repo": report.repo,
                    "ref": report.refname,
                    "commit": report.commit,
                })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("recording an export"))?;
        Ok(report)
    }
}
