//! The forge: one bare repository per project that only berth writes.
//!
//! A project is imported from a local repository: every branch and tag is
//! fetched with git2 into a fresh bare repository built beside the forge
//! directory and renamed into place, so a crash never leaves half a forge under
//! the project's name. The forge's `HEAD` names the project's base branch —
//! the branch agents start from — so no other file has to agree with it.
//!
//! An import refuses a shallow source (its forge would miss the history
//! below the graft: commits there fail with "object not found") and a source
//! holding an object over `[git] max_object_bytes` (measured by header before
//! anything is copied).

use std::path::{Path, PathBuf};

use git2::{AutotagOption, FetchOptions, Oid, Repository, RepositoryInitOptions};

use crate::Worktrees;
use crate::confined;
use crate::error::{self, Error, Op, Result};
use crate::layout::Layout;
use crate::lock::RepoLock;
use crate::names::{ProjectName, branch_ref};
use crate::object_bounds::{GitLimits, check_new_objects};
use crate::ownership;

/// A project in the forge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectInfo {
    /// Its name.
    pub name: ProjectName,
    /// `<state>/forge/<name>.git`.
    pub forge: PathBuf,
    /// The branch agents start from (the forge's `HEAD`).
    pub base_branch: String,
    /// The tip of the base branch.
    pub base_head: Oid,
    /// `<state>/projects/<name>/`, for `berth.toml` and `permissions.json`.
    pub config_dir: PathBuf,
}

/// Opens a project's forge, naming it as missing when the project is unknown.
pub(crate) fn open_forge(layout: &Layout, project: &ProjectName, op: Op) -> Result<Repository> {
    let path = layout.forge(project);
    if !path.is_dir() {
        return Err(Error::Missing {
            op,
            what: "forge repository",
            path,
            hint: "add the project first (berth project add NAME --from PATH)",
        });
    }
    Repository::open_bare(&path).map_err(error::git(op, &path, None))
}

/// The base branch (short name) and its tip.
pub(crate) fn base_branch(forge: &Repository, op: Op) -> Result<(String, Oid)> {
    let path = forge.path();
    let head = forge
        .find_reference("HEAD")
        .map_err(error::git(op, path, Some("HEAD")))?;
    let target = head
        .symbolic_target()
        .ok()
        .flatten()
        .ok_or_else(|| Error::Tampered {
            op,
            path: path.join("HEAD"),
            expected: "a symbolic ref to the base branch".to_owned(),
            found: "a detached HEAD".to_owned(),
        })?;
    let branch = target
        .strip_prefix("refs/heads/")
        .unwrap_or(target)
        .to_owned();
    let tip = forge
        .refname_to_id(target)
        .map_err(|_| Error::UnknownBranch {
            op,
            repo: path.to_path_buf(),
            branch: branch.clone(),
        })?;
    Ok((branch, tip))
}

/// The tip of `refname` in `repo`, `None` when the ref does not exist.
pub(crate) fn ref_tip(repo: &Repository, refname: &str, op: Op) -> Result<Option<Oid>> {
    match repo.refname_to_id(refname) {
        Ok(oid) => Ok(Some(oid)),
        Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
        Err(e) => Err(error::git(op, repo.path(), Some(refname))(e)),
    }
}

fn project_info(layout: &Layout, name: &ProjectName, op: Op) -> Result<ProjectInfo> {
    let forge = open_forge(layout, name, op)?;
    let (base_branch, base_head) = base_branch(&forge, op)?;
    Ok(ProjectInfo {
        name: name.clone(),
        forge: layout.forge(name),
        base_branch,
        base_head,
        config_dir: layout.project_config_dir(name),
    })
}

impl Worktrees {
    /// Imports the local repository at `source` as project `name`: a bare forge
    /// with all its branches and tags, and an empty configuration directory.
    ///
    /// The base branch is `base`, else the branch `source`'s HEAD is on. Fails
    /// when the project exists, when `source` is not a repository (it must be
    /// the repository itself, not a directory inside it), when it belongs to
    /// another user, or when the base branch does not exist there.
    pub fn import_project(
        &self,
        name: &ProjectName,
        source: &Path,
        base: Option<&str>,
    ) -> Result<ProjectInfo> {
        self.import_project_bounded(name, source, base, &GitLimits::default())
    }

    /// [`Worktrees::import_project`], refusing a source that holds an object
    /// over `limits.max_object_bytes` (read by header) or is a shallow clone;
    /// nothing is left in the forge then.
    pub fn import_project_bounded(
        &self,
        name: &ProjectName,
        source: &Path,
        base: Option<&str>,
        limits: &GitLimits,
    ) -> Result<ProjectInfo> {
        let op = Op::ImportProject;
        let layout = &self.layout;
        let forge_path = layout.forge(name);
        let _lock = RepoLock::acquire(&layout.forge_lock(name))?;
        if std::fs::symlink_metadata(&forge_path).is_ok() {
            return Err(Error::ProjectExists {
                name: name.to_string(),
                forge: forge_path,
            });
        }

        let src = Repository::open(source).map_err(|e| Error::NotARepository {
            op,
            path: source.to_path_buf(),
            message: e.message().to_owned(),
        })?;
        // libgit2's own owner check is off for this process (ownership.rs);
        // apply its rule here, outside the state directory.
        ownership::check_source_owner(op, src.path())?;
        if let Some(workdir) = src.workdir() {
            ownership::check_source_owner(op, workdir)?;
        }
        if src.is_shallow() {
            return Err(Error::ShallowSource {
                source_repo: src.path().to_path_buf(),
            });
        }
        let base = match base {
            Some(b) => b.to_owned(),
            None => source_head_branch(&src)?,
        };
        // The fetch below packs every object in this process: measure first.
        let tips = source_tips(&src)?;
        check_new_objects(&src, &tips, &[], limits.max_object_bytes, op)?;
        branch_ref(&base)?;
        let src_url = src.path().to_str().ok_or_else(|| Error::InvalidInput {
            op,
            field: "source path",
            value: src.path().display().to_string(),
            reason: "libgit2 needs a UTF-8 path".to_owned(),
        })?;

        // Build beside the forge, then rename into place.
        let forge_dir = layout.forge_dir();
        let staging_name = format!(".import-{name}.git");
        let staging = forge_dir.join(&staging_name);
        confined::remove(&forge_dir, Path::new(&staging_name)).map_err(error::io(op, &staging))?;
        let result = build_forge(&staging, src.path(), src_url, &base).and_then(|()| {
            std::fs::rename(&staging, &forge_path).map_err(error::io(op, &forge_path))
        });
        if let Err(e) = result {
            if let Err(cleanup) = confined::remove(&forge_dir, Path::new(&staging_name)) {
                tracing::warn!(path = %staging.display(), error = %cleanup, "could not remove a failed import");
            }
            return Err(e);
        }

        let config_dir = layout.project_config_dir(name);
        std::fs::create_dir_all(&config_dir).map_err(error::io(op, &config_dir))?;
        tracing::info!(project = %name, forge = %forge_path.display(), base = %base, "project imported");
        project_info(layout, name, op)
    }

    /// Every project in the forge, by name.
    pub fn projects(&self) -> Result<Vec<ProjectInfo>> {
        let op = Op::ListProjects;
        let dir = self.layout.forge_dir();
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&dir).map_err(error::io(op, &dir))? {
            let entry = entry.map_err(error::io(op, &dir))?;
            let file_name = entry.file_name();
            let Some(stem) = file_name.to_str().and_then(|n| n.strip_suffix(".git")) else {
                continue;
            };
            // Staging directories of imports start with '.', which no valid
            // name does.
            if let Ok(name) = ProjectName::new(stem) {
                names.push(name);
            }
        }
        names.sort();
        names
            .iter()
            .map(|name| project_info(&self.layout, name, op))
            .collect()
    }

    /// One project.
    pub fn project(&self, name: &ProjectName) -> Result<ProjectInfo> {
        project_info(&self.layout, name, Op::ListProjects)
    }

    /// Whether the forge's `branch` contains `oid` (is at it or past it): how
    /// the engine verifies, after a crash, that a push it logged happened.
    pub fn forge_has(&self, project: &ProjectName, branch: &str, oid: Oid) -> Result<bool> {
        let op = Op::ForgeHas;
        let refname = branch_ref(branch)?;
        let forge = open_forge(&self.layout, project, op)?;
        let Some(tip) = ref_tip(&forge, &refname, op)? else {
            return Ok(false);
        };
        if tip == oid {
            return Ok(true);
        }
        if !forge
            .odb()
            .map_err(error::git(op, forge.path(), None))?
            .exists(oid)
        {
            return Ok(false);
        }
        forge
            .graph_descendant_of(tip, oid)
            .map_err(error::git(op, forge.path(), Some(&refname)))
    }
}

/// What an import copies: the targets of the source's branches and tags.
fn source_tips(src: &Repository) -> Result<Vec<Oid>> {
    let git = |e| error::git(Op::ImportProject, src.path(), None)(e);
    let mut tips = Vec::new();
    for r in src.references().map_err(git)? {
        let r = r.map_err(git)?;
        let copied = r
            .name()
            .is_ok_and(|n| n.starts_with("refs/heads/") || n.starts_with("refs/tags/"));
        if let (true, Some(oid)) = (copied, r.target()) {
            tips.push(oid);
        }
    }
    Ok(tips)
}

/// The branch the source's HEAD is on.
fn source_head_branch(src: &Repository) -> Result<String> {
    let op = Op::ImportProject;
    let head = src
        .find_reference("HEAD")
        .map_err(error::git(op, src.path(), Some("HEAD")))?;
    match head
        .symbolic_target()
        .ok()
        .flatten()
        .and_then(|t| t.strip_prefix("refs/heads/"))
    {
        Some(branch) => Ok(branch.to_owned()),
        None => Err(Error::NoBaseBranch {
            source_repo: src.path().to_path_buf(),
            head: head.target().map_or_else(
                || "not a branch".to_owned(),
                |oid| format!("detached at {oid}"),
            ),
        }),
    }
}

fn build_forge(path: &Path, source: &Path, source_url: &str, base: &str) -> Result<()> {
    let op = Op::ImportProject;
    let base_ref = branch_ref(base)?;
    let forge = Repository::init_opts(
        path,
        RepositoryInitOptions::new()
            .bare(true)
            .no_reinit(true)
            .mkdir(true)
            .mkpath(false)
            .initial_head(&base_ref),
    )
    .map_err(error::git(op, path, None))?;
    // The forge is the audit trail of what was pushed and merged: keep reflogs
    // (libgit2 writes none for bare repositories unless asked).
    forge
        .config()
        .and_then(|mut c| c.set_bool("core.logAllRefUpdates", true))
        .map_err(error::git(op, path, None))?;

    let mut remote = forge
        .remote_anonymous(source_url)
        .map_err(error::git(op, path, None))?;
    let mut opts = FetchOptions::new();
    opts.update_fetchhead(false)
        .download_tags(AutotagOption::None);
    remote
        .fetch(
            &["+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*"],
            Some(&mut opts),
            Some("berth: import"),
        )
        .map_err(error::git(op, path, None))?;
    drop(remote);

    match ref_tip(&forge, &base_ref, op)? {
        Some(_) => Ok(()),
        None => Err(Error::UnknownBranch {
            op,
            repo: source.to_path_buf(),
            branch: base.to_owned(),
        }),
    }
}
