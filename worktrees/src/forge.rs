//! The forge: one bare repository per project that only berth writes.
//!
//! A project is imported from a local repository: every branch and tag is
//! fetched with git2 into a fresh bare repository built beside the forge
//! directory and renamed into place, so a crash never leaves half a forge under
//! the project's name. The forge's `HEAD` names the project's base branch —
//! the branch agents start from — so no other file has to agree with it.
//!
//! A project can instead be imported from a git server
//! ([`Worktrees::import_project_from_server`]): the same directory is then
//! this host's mirror of the server (`forge_remote.rs`).
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
use crate::forge_remote::Forge;
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
    /// Where the forge lives: [`Forge::Directory`] (`forge` is the forge), or
    /// a server `forge` mirrors.
    pub location: Forge,
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
        location: Forge::of(&forge, op)?,
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
        let _lock = claim_forge_name(layout, name)?;

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

        install_forge(layout, name, |staging| {
            build_forge(staging, src.path(), src_url, &base)
        })?;
        tracing::info!(project = %name, forge = %layout.forge(name).display(), base = %base, "project imported");
        project_info(layout, name, op)
    }

    /// Imports project `name` from the git server at `url` (smart HTTP,
    /// `http://…`): `<state>/forge/<name>.git` becomes this host's mirror of
    /// it, holding the server's branches and tags; provisioning refreshes it
    /// and every push goes to the server first (`forge_remote.rs`).
    ///
    /// The base branch is `base`, else the server's default branch. Refuses
    /// what the server holds over `limits.max_object_bytes` (read by header
    /// once fetched beside the forge directory); nothing is left in the forge
    /// then, nor when the server does not answer.
    pub fn import_project_from_server(
        &self,
        name: &ProjectName,
        url: &str,
        base: Option<&str>,
        limits: &GitLimits,
    ) -> Result<ProjectInfo> {
        let op = Op::ImportProject;
        let server = Forge::http(url, op)?;
        let layout = &self.layout;
        let _lock = claim_forge_name(layout, name)?;
        let mut base_found = String::new();
        install_forge(layout, name, |staging| {
            base_found = build_mirror(staging, &server, base, limits)?;
            Ok(())
        })?;
        tracing::info!(project = %name, url = %url, mirror = %layout.forge(name).display(), base = %base_found, "project imported from a forge server");
        project_info(layout, name, op)
    }

    /// Brings the project's forge server's branches and tags into this
    /// host's mirror (nothing for a directory forge). Provisioning and
    /// pushes do it themselves; this is for a caller that reads the forge
    /// without either.
    pub fn refresh_forge(&self, project: &ProjectName) -> Result<Forge> {
        let op = Op::RefreshForge;
        let forge = open_forge(&self.layout, project, op)?;
        let location = Forge::of(&forge, op)?;
        if location != Forge::Directory {
            let _lock = RepoLock::acquire(&self.layout.forge_lock(project))?;
            location.refresh(&forge, op)?;
        }
        Ok(location)
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
    /// A server forge is asked itself (its mirror is refreshed first: a crash
    /// between the server taking a push and the mirror's ref moving leaves
    /// only the server knowing).
    pub fn forge_has(&self, project: &ProjectName, branch: &str, oid: Oid) -> Result<bool> {
        let op = Op::ForgeHas;
        let refname = branch_ref(branch)?;
        let forge = open_forge(&self.layout, project, op)?;
        let location = Forge::of(&forge, op)?;
        if location != Forge::Directory {
            let _lock = RepoLock::acquire(&self.layout.forge_lock(project))?;
            location.refresh(&forge, op)?;
        }
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

/// Takes the forge's writer lock for a new project `name`, refusing a name
/// whose forge exists. The lock is held as long as the guard lives.
fn claim_forge_name(layout: &Layout, name: &ProjectName) -> Result<RepoLock> {
    let forge_path = layout.forge(name);
    let lock = RepoLock::acquire(&layout.forge_lock(name))?;
    if std::fs::symlink_metadata(&forge_path).is_ok() {
        return Err(Error::ProjectExists {
            name: name.to_string(),
            forge: forge_path,
        });
    }
    Ok(lock)
}

/// Builds project `name`'s forge with `build` beside the forge directory,
/// then renames it into place (a crash never leaves half a forge under the
/// project's name; a failed build leaves nothing), and makes the project's
/// configuration directory. Call under [`claim_forge_name`]'s lock.
fn install_forge(
    layout: &Layout,
    name: &ProjectName,
    build: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    let op = Op::ImportProject;
    let forge_path = layout.forge(name);
    let forge_dir = layout.forge_dir();
    let staging_name = format!(".import-{name}.git");
    let staging = forge_dir.join(&staging_name);
    confined::remove(&forge_dir, Path::new(&staging_name)).map_err(error::io(op, &staging))?;
    let result = build(&staging)
        .and_then(|()| std::fs::rename(&staging, &forge_path).map_err(error::io(op, &forge_path)));
    if let Err(e) = result {
        if let Err(cleanup) = confined::remove(&forge_dir, Path::new(&staging_name)) {
            tracing::warn!(path = %staging.display(), error = %cleanup, "could not remove a failed import");
        }
        return Err(e);
    }
    let config_dir = layout.project_config_dir(name);
    std::fs::create_dir_all(&config_dir).map_err(error::io(op, &config_dir))
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

/// A fresh bare repository for a forge at `path`, its `HEAD` on `base_ref`,
/// keeping reflogs.
fn init_forge_repo(path: &Path, base_ref: &str) -> Result<Repository> {
    let op = Op::ImportProject;
    let forge = Repository::init_opts(
        path,
        RepositoryInitOptions::new()
            .bare(true)
            .no_reinit(true)
            .mkdir(true)
            .mkpath(false)
            .initial_head(base_ref),
    )
    .map_err(error::git(op, path, None))?;
    // The forge is the audit trail of what was pushed and merged: keep reflogs
    // (libgit2 writes none for bare repositories unless asked).
    forge
        .config()
        .and_then(|mut c| c.set_bool("core.logAllRefUpdates", true))
        .map_err(error::git(op, path, None))?;
    Ok(forge)
}

/// Builds a server's mirror at `path`: records the server, fetches its
/// branches and tags, bounds their objects and points `HEAD` at the base
/// branch. Returns the base branch.
fn build_mirror(
    path: &Path,
    server: &Forge,
    base: Option<&str>,
    limits: &GitLimits,
) -> Result<String> {
    let op = Op::ImportProject;
    let url = server.url().unwrap_or_default();
    let given = base.map(branch_ref).transpose()?;
    let mirror = init_forge_repo(path, given.as_deref().unwrap_or("refs/heads/main"))?;
    server.record(&mirror, op)?;
    let base = match base {
        Some(b) => b.to_owned(),
        None => server
            .server_head(&mirror, op)?
            .ok_or_else(|| Error::NoBaseBranch {
                source_repo: PathBuf::from(url),
                head: "not a branch the server names".to_owned(),
            })?,
    };
    let base_ref = branch_ref(&base)?;
    server.refresh(&mirror, op)?;
    let tips = source_tips(&mirror)?;
    check_new_objects(&mirror, &tips, &[], limits.max_object_bytes, op)?;
    if ref_tip(&mirror, &base_ref, op)?.is_none() {
        return Err(Error::UnknownBranch {
            op,
            repo: PathBuf::from(url),
            branch: base,
        });
    }
    mirror
        .set_head(&base_ref)
        .map_err(error::git(op, path, Some(&base_ref)))?;
    Ok(base)
}

fn build_forge(path: &Path, source: &Path, source_url: &str, base: &str) -> Result<()> {
    let op = Op::ImportProject;
    let base_ref = branch_ref(base)?;
    let forge = init_forge_repo(path, &base_ref)?;

    crate::forge_remote::prepare_network();
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
