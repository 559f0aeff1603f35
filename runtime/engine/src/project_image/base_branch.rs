//! A `[sandbox.build]` context on the project's base branch: checked out of
//! the forge (through git2, by the directory's tree, into a directory berth
//! makes and removes; a symlink in it stays a symlink) and built by `berth
//! image build --project P`, which records what it built
//! (`<state>/projects/P/dockerfile-image.json`: the branch, its tip, the
//! directory's tree, the settings and the image). `berth up` runs the
//! recorded image, and says when the directory has changed on the branch
//! since: a merged change takes effect once a person builds again. Never
//! read from an agent's worktree, and never through the `git` CLI.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::BUILD_REPOSITORY;
use crate::Engine;
use crate::config::{BuildConfig, BuildSource};
use crate::error::{EngineError, Result};
use crate::state::StateDir;

/// A project's Dockerfile image that cannot be built or run as asked.
#[derive(Debug, thiserror::Error)]
pub enum ProjectImageError {
    #[error(
        "project {project}'s Dockerfile ({context}/{dockerfile} on its base branch) {}: run `berth image build --project {project}`",
        if *changed { "has no image for berth.toml's current [sandbox.build] (the settings changed since it was built)" } else { "is not built" }
    )]
    NotBuilt {
        project: String,
        /// The context as shown: its path in the repository, `.` the root.
        context: String,
        dockerfile: String,
        /// An image was recorded, for other settings.
        changed: bool,
    },
    #[error(
        "project {project}: the build context {context} is not a directory on branch {branch}; commit the Dockerfile and its context there (berth reads them only from the base branch in the forge) or change [sandbox.build] context"
    )]
    NoContext {
        project: String,
        context: String,
        branch: String,
    },
    #[error(
        "project {project}'s image {tag}, built from its Dockerfile on the base branch, cannot be used ({why}): run `berth image build --project {project}`"
    )]
    Unusable {
        project: String,
        tag: String,
        why: String,
    },
    #[error(
        "{path}: the record of the project's Dockerfile image is unreadable ({message}); run `berth image build --project P` to write it again"
    )]
    Record { path: PathBuf, message: String },
}

/// What `berth image build --project P` built from the base branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// The base branch, and its tip when the context was checked out.
    pub branch: String,
    pub commit: String,
    /// `[sandbox.build]` as it was: the context's path in the repository
    /// (`""` the root), the Dockerfile in it, the arguments.
    pub context: String,
    pub dockerfile: String,
    #[serde(default)]
    pub args: BTreeMap<String, String>,
    /// The context directory's tree: the same whenever its content is.
    pub tree: String,
    /// `berth-build:<hash>`.
    pub tag: String,
}

impl BuildRecord {
    /// Whether the image was built for these settings.
    pub fn matches(&self, build: &BuildConfig) -> bool {
        build.source() == Some(BuildSource::BaseBranch(self.context.clone()))
            && build.dockerfile == self.dockerfile
            && build.args == self.args
    }
}

/// `<state>/projects/P/dockerfile-image.json`.
pub fn record_path(state: &StateDir, project: &str) -> PathBuf {
    state.project_dir(project).join("dockerfile-image.json")
}

/// The record of `project`'s Dockerfile image, if one was built.
pub fn load_record(state: &StateDir, project: &str) -> Result<Option<BuildRecord>> {
    crate::state::read_json(record_path(state, project), |path, message| {
        ProjectImageError::Record { path, message }
    })
}

/// How a context directory is shown: its path, `.` for the root.
pub(super) fn shown_dir(dir: &str) -> String {
    if dir.is_empty() {
        ".".to_string()
    } else {
        dir.to_string()
    }
}

/// A Dockerfile build of the context on the base branch, checked out of
/// the forge.
pub struct BaseBranchBuild {
    /// The checkout; removed when this is dropped.
    _dir: tempfile::TempDir,
    pub build: berth_sandbox::image::DockerfileBuild,
    /// What is recorded once it is built (with the tag then).
    pub record: BuildRecord,
}

impl Engine {
    /// The Dockerfile build of `project`'s `[sandbox.build]` context on its
    /// base branch: the directory's tree at the branch's tip, checked out
    /// into a new directory under the project's configuration directory (no
    /// agent writes there), bounded by `[git] max_checkout_bytes` and the
    /// largest context berth sends. `None` when the project builds no
    /// Dockerfile from its base branch.
    pub async fn base_branch_build(&self, project: &str) -> Result<Option<BaseBranchBuild>> {
        let p = self.project(project).await?;
        let (config, _) = self.load_project_files(project)?;
        let b = &config.sandbox.build;
        let Some(BuildSource::BaseBranch(context)) = b.source() else {
            return Ok(None);
        };
        let name = berth_worktrees::ProjectName::new(project)?;
        let branch = p.base_branch.clone();
        let parent = self.state.project_dir(project);
        let dir = tempfile::Builder::new()
            .prefix(".dockerfile-build-")
            .tempdir_in(&parent)
            .map_err(EngineError::io("creating a checkout in", &parent))?;
        let dest = dir.path().to_path_buf();
        let max = config
            .git
            .max_checkout_bytes
            .min(berth_sandbox::image::MAX_CONTEXT_BYTES);
        let (path, on) = (context.clone(), branch.clone());
        let found = self
            .git()
            .blocking(move |wt| {
                let Some(found) = wt.forge_branch_dir(&name, &on, &path)? else {
                    return Ok(None);
                };
                wt.check_out_tree(&name, found.tree, &dest, max)?;
                Ok(Some(found))
            })
            .await?;
        let Some(found) = found else {
            return Err(ProjectImageError::NoContext {
                project: project.to_string(),
                context: shown_dir(&context),
                branch,
            }
            .into());
        };
        tracing::info!(project, commit = %found.commit, context = %shown_dir(&context), "Dockerfile context checked out of the base branch");
        Ok(Some(BaseBranchBuild {
            build: berth_sandbox::image::DockerfileBuild {
                name: BUILD_REPOSITORY.to_string(),
                context: dir.path().to_path_buf(),
                dockerfile: b.dockerfile.clone(),
                args: b.args.clone(),
            },
            record: BuildRecord {
                branch,
                commit: found.commit.to_string(),
                context,
                dockerfile: b.dockerfile.clone(),
                args: b.args.clone(),
                tree: found.tree.to_string(),
                tag: String::new(),
            },
            _dir: dir,
        }))
    }

    /// Records that `tag` was built from `build`: `berth up` runs it from
    /// now on.
    pub fn record_dockerfile_image(
        &self,
        project: &str,
        build: &BaseBranchBuild,
        tag: &str,
    ) -> Result<()> {
        let record = BuildRecord {
            tag: tag.to_string(),
            ..build.record.clone()
        };
        crate::state::replace_json(
            &record_path(&self.state, project),
            &record,
            "writing the Dockerfile image record",
        )?;
        tracing::info!(project, tag, commit = %record.commit, "Dockerfile image recorded");
        Ok(())
    }

    /// What a person should know before a berth runs `record`'s image: the
    /// context directory changed (or went) on the base branch since it was
    /// built, so a merged change is not in it yet. `None` when the image is
    /// current.
    pub(crate) async fn dockerfile_image_note(
        &self,
        project: &str,
        base_branch: &str,
        record: &BuildRecord,
    ) -> Result<Option<String>> {
        let name = berth_worktrees::ProjectName::new(project)?;
        let (branch, path) = (base_branch.to_string(), record.context.clone());
        let now = self
            .git()
            .blocking(move |wt| Ok(wt.forge_branch_dir(&name, &branch, &path)?))
            .await?;
        let short = |c: &str| c.get(..12).unwrap_or(c).to_string();
        let what = match now {
            Some(now) if now.tree.to_string() == record.tree && base_branch == record.branch => {
                return Ok(None);
            }
            Some(now) => format!(
                "changed on {base_branch} since its image was built (at {}, now {})",
                short(&record.commit),
                short(&now.commit.to_string())
            ),
            None => format!("is no longer a directory on {base_branch}"),
        };
        Ok(Some(format!(
            "the Dockerfile's context {} {what}: this berth runs the image built before ({}); run `berth image build --project {project}` for the change to take effect",
            shown_dir(&record.context),
            record.tag
        )))
    }
}
