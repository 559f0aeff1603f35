//! A project's `devcontainer.json` (the convention of VS Code, Codespaces
//! and DevPod), read from the project's base branch in the forge — a blob of
//! the branch's tree, never an agent's worktree, so a change an agent makes
//! takes effect only after its PR is merged and a person reads the file
//! again (`berth project add`, `berth image build --project P`).
//!
//! What was read is kept as a snapshot beside `berth.toml`
//! (`<state>/projects/P/devcontainer.snapshot.json`: the branch, the commit,
//! the file's text, the image built from it) and applied each time the
//! project's configuration is loaded ([`mapping::apply`]), so `berth.toml`
//! keys, which override devcontainer values, are always the current ones.
//! A broken file is an error naming its line and column; the snapshot read
//! before it stays as it was.

pub mod jsonc;
pub mod mapping;
mod post;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use mapping::{Applied, DevImage, PostCommand};
pub use post::PostRun;

use crate::Engine;
use crate::config::ProjectConfig;
use crate::error::{EngineError, Result};
use crate::state::StateDir;

/// Where berth looks when `berth.toml` names no file, in this order.
pub const DEFAULT_PATHS: &[&str] = &[".devcontainer/devcontainer.json", ".devcontainer.json"];
/// The largest `devcontainer.json` berth reads.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// A `devcontainer.json` that berth cannot use.
#[derive(Debug, thiserror::Error)]
pub enum DevcontainerError {
    #[error(
        "{file}:{line}:{column}: {message}; fix the file on the project's base branch (then `berth project sync` and `berth image build --project P` read it again); what berth read before is kept"
    )]
    Syntax {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error(
        "{file}: key `{key}`: {message}; fix the file on the project's base branch; what berth read before is kept"
    )]
    Invalid {
        file: String,
        key: String,
        message: String,
    },
    #[error(
        "{file} is not on branch {branch}, which berth.toml's `[sandbox] devcontainer` names; commit it there or remove the key"
    )]
    Missing { file: String, branch: String },
    #[error(
        "project {project}'s devcontainer.json builds its image from a Dockerfile, not built since berth read the file: run `berth image build --project {project}`"
    )]
    NotBuilt { project: String },
    #[error(
        "{path}: the devcontainer snapshot berth wrote is unreadable ({message}); run `berth image build --project P` to read the file again"
    )]
    Snapshot { path: PathBuf, message: String },
}

/// What berth read: the file's text at a commit of a branch, and the image
/// built from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snapshot {
    pub branch: String,
    pub commit: String,
    pub path: String,
    pub text: String,
    /// `berth-build:<hash>` once `berth image build --project P` built the
    /// file's Dockerfile at this commit.
    #[serde(default)]
    pub built_image: Option<String>,
}

impl Snapshot {
    /// How errors name the file: `<branch>:<path>`.
    pub fn file(&self) -> String {
        format!("{}:{}", self.branch, self.path)
    }

    /// The file applied under `config`.
    pub fn apply(&self, config: &ProjectConfig) -> std::result::Result<Applied, DevcontainerError> {
        let value = jsonc::parse(&self.text).map_err(|e| DevcontainerError::Syntax {
            file: self.file(),
            line: e.at.line,
            column: e.at.column,
            message: e.message,
        })?;
        let mut applied = mapping::apply(&value, &self.file(), &self.path, config)?;
        applied.branch = self.branch.clone();
        applied.commit = self.commit.clone();
        if let DevImage::Build { built, .. } = &mut applied.image {
            *built = self.built_image.clone();
        }
        Ok(applied)
    }
}

/// `<state>/projects/P/devcontainer.snapshot.json`.
pub fn snapshot_path(state: &StateDir, project: &str) -> PathBuf {
    state
        .project_dir(project)
        .join("devcontainer.snapshot.json")
}

/// The snapshot of `project`, if berth read a file for it.
pub fn load_snapshot(state: &StateDir, project: &str) -> Result<Option<Snapshot>> {
    crate::state::read_json(snapshot_path(state, project), |path, message| {
        DevcontainerError::Snapshot { path, message }
    })
}

/// The snapshot of `project` applied under `config`, if there is one.
pub fn load_applied(
    state: &StateDir,
    project: &str,
    config: &ProjectConfig,
) -> Result<Option<Applied>> {
    match load_snapshot(state, project)? {
        Some(s) => Ok(Some(s.apply(config)?)),
        None => Ok(None),
    }
}

fn write_snapshot(path: &Path, snapshot: &Snapshot) -> Result<()> {
    crate::state::replace_json(path, snapshot, "writing the devcontainer snapshot")
}

/// What reading the file found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum DevcontainerRead {
    /// The branch holds no file (any snapshot of an older one is removed).
    Absent { branch: String },
    /// Read and applied; the snapshot is replaced.
    Read { applied: Box<Applied> },
}

/// A Dockerfile build of the file's image, checked out of the forge.
pub struct DevcontainerBuild {
    /// The checkout; removed when this is dropped.
    _dir: tempfile::TempDir,
    pub build: berth_sandbox::image::DockerfileBuild,
    pub commit: String,
}

impl Engine {
    /// Reads `project`'s `devcontainer.json` from the tip of its base branch
    /// in the forge, checks it and keeps it as the project's snapshot. A
    /// broken file is an error and the old snapshot stays.
    pub async fn read_devcontainer(&self, project: &str) -> Result<DevcontainerRead> {
        let p = self.project(project).await?;
        let (config, _) = self.load_project_files(project)?;
        let named = config.sandbox.devcontainer.trim().to_string();
        let paths: Vec<String> = if named.is_empty() {
            DEFAULT_PATHS.iter().map(|s| s.to_string()).collect()
        } else {
            vec![named.trim_start_matches("./").to_string()]
        };
        let name = berth_worktrees::ProjectName::new(project)?;
        let branch = p.base_branch.clone();
        let found = self
            .git()
            .blocking(move |wt| {
                for path in &paths {
                    if let Some(f) = wt.forge_branch_file(&name, &branch, path, MAX_FILE_BYTES)? {
                        return Ok(Some(f));
                    }
                }
                Ok(None)
            })
            .await?;
        let path = snapshot_path(&self.state, project);
        let Some(file) = found else {
            if !named.is_empty() {
                return Err(DevcontainerError::Missing {
                    file: named,
                    branch: p.base_branch,
                }
                .into());
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(EngineError::io("removing", &path)(e)),
            }
            return Ok(DevcontainerRead::Absent {
                branch: p.base_branch,
            });
        };
        let text = String::from_utf8(file.content).map_err(|_| DevcontainerError::Invalid {
            file: format!("{}:{}", p.base_branch, file.path),
            key: String::new(),
            message: "the file is not UTF-8".into(),
        })?;
        let old = load_snapshot(&self.state, project).ok().flatten();
        let mut snapshot = Snapshot {
            branch: p.base_branch.clone(),
            commit: file.commit.to_string(),
            path: file.path,
            text,
            built_image: None,
        };
        // Unchanged file and commit: the image built from it still is.
        if let Some(old) = old
            && old.commit == snapshot.commit
            && old.text == snapshot.text
            && old.path == snapshot.path
        {
            snapshot.built_image = old.built_image;
        }
        // Checked before it replaces anything.
        let applied = snapshot.apply(&config)?;
        write_snapshot(&path, &snapshot)?;
        tracing::info!(project, commit = %snapshot.commit, path = %snapshot.path, "devcontainer.json read from the forge");
        Ok(DevcontainerRead::Read {
            applied: Box::new(applied),
        })
    }

    /// The Dockerfile build of `project`'s devcontainer image: the
    /// snapshot's commit checked out of the forge into a new directory
    /// under the project's configuration directory (no agent writes there),
    /// bounded like a PR check's checkout. `None` when the file builds
    /// nothing (or berth.toml names the image).
    pub async fn devcontainer_build(&self, project: &str) -> Result<Option<DevcontainerBuild>> {
        let Some(snapshot) = load_snapshot(&self.state, project)? else {
            return Ok(None);
        };
        let (config, _) = self.load_project_files(project)?;
        let applied = snapshot.apply(&config)?;
        let DevImage::Build {
            context,
            dockerfile,
            args,
            ..
        } = applied.image
        else {
            return Ok(None);
        };
        let parent = self.state.project_dir(project);
        let dir = tempfile::Builder::new()
            .prefix(".devcontainer-build-")
            .tempdir_in(&parent)
            .map_err(EngineError::io("creating a checkout in", &parent))?;
        let commit = berth_worktrees::Oid::from_str(&snapshot.commit).map_err(|e| {
            DevcontainerError::Snapshot {
                path: snapshot_path(&self.state, project),
                message: format!("commit {:?}: {e}", snapshot.commit),
            }
        })?;
        let name = berth_worktrees::ProjectName::new(project)?;
        let dest = dir.path().to_path_buf();
        let max = config
            .git
            .max_checkout_bytes
            .min(berth_sandbox::image::MAX_CONTEXT_BYTES);
        self.git()
            .blocking(move |wt| Ok(wt.check_out_commit(&name, commit, &dest, max)?))
            .await?;
        let context_dir = if context.is_empty() {
            dir.path().to_path_buf()
        } else {
            dir.path().join(&context)
        };
        Ok(Some(DevcontainerBuild {
            build: berth_sandbox::image::DockerfileBuild {
                name: crate::project_image::BUILD_REPOSITORY.to_string(),
                context: context_dir,
                dockerfile,
                args,
            },
            commit: snapshot.commit,
            _dir: dir,
        }))
    }

    /// Records that `tag` was built from `project`'s devcontainer.json at
    /// `commit` (unless the snapshot moved on meanwhile).
    pub fn record_devcontainer_image(&self, project: &str, commit: &str, tag: &str) -> Result<()> {
        let path = snapshot_path(&self.state, project);
        let Some(mut snapshot) = load_snapshot(&self.state, project)? else {
            return Ok(());
        };
        if snapshot.commit != commit {
            return Ok(());
        }
        snapshot.built_image = Some(tag.to_string());
        write_snapshot(&path, &snapshot)
    }
}

/// Why `config`'s devcontainer image cannot be used yet, or `None`.
pub fn image_problem(project: &str, config: &ProjectConfig) -> Option<DevcontainerError> {
    match config.devcontainer.as_ref().map(|d| &d.image) {
        Some(DevImage::Build { built: None, .. }) => Some(DevcontainerError::NotBuilt {
            project: project.to_string(),
        }),
        _ => None,
    }
}
