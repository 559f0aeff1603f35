//! An agent's repository and worktree: provisioning, and opening them safely.
//!
//! Provisioning is idempotent because every `berth` process may retry any step:
//! asking again for the same task returns the live worktree (never "already
//! exists"), and whatever a crash left behind — a half-checked-out worktree, an
//! admin directory whose worktree is gone — is removed by name and built again.
//! "Live" is decided by berth's own record (`<agent>.worktree`, outside the
//! agent's reach, written last), not by anything inside the agent's directories.
//!
//! The agent repository is created complete (alternates included) under a
//! temporary name and renamed into place. Its base ref `refs/remotes/forge/<base>`
//! is refreshed from the forge on every provisioning; since the repository
//! borrows the forge's objects there is nothing to transfer, only a ref to
//! write (a libgit2 fetch would also read the agent's `url.*.insteadOf`).
//! When the forge is a server, its mirror is refreshed from the server first
//! (`forge_remote.rs`); the agent repository still borrows only the mirror.
//!
//! Opening: the agent can rewrite anything in its repository and worktree,
//! including the worktree's `.git` file and the admin directory's `gitdir`
//! file. `git_repository_open_from_worktree` follows both, so berth does not use
//! it: it opens the admin directory itself as a bare repository and sets the
//! working directory to the [`Layout`] path. The two files libgit2 still reads
//! to find the object store (`commondir`, `objects/info/alternates`) are
//! checked against what berth wrote first.

use std::fs::OpenOptions;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use git2::build::CheckoutBuilder;
use git2::{Oid, Repository, RepositoryInitOptions, RepositoryOpenFlags};

use crate::Worktrees;
use crate::agent_git::RefsJobParts;
use crate::confined::{self, Kind};
use crate::error::{self, Error, Op, Result};
use crate::forge::{base_branch, open_forge, ref_tip};
use crate::forge_remote::Forge;
use crate::layout::Layout;
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName, TaskName, agent_branch};
use crate::object_bounds::check_checkout_size;
use crate::ownership::{Owner, current_uid};

/// The reason written into the worktree's `locked` file: `git worktree prune`
/// run inside a container (where the worktree's host path is invisible) would
/// otherwise delete its admin directory.
const LOCK_REASON: &str = "berth: live until its task's gate resolves";

/// A provisioned worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeInfo {
    /// The worktree directory (`<state>/berths/<project>/<agent>/<agent>`).
    pub path: PathBuf,
    /// The agent's repository (mount it at this same path in a container).
    pub agent_repo: PathBuf,
    /// The forge's object directory the repository borrows (mount read-only).
    pub forge_objects: PathBuf,
    /// The branch checked out, `agent/<agent>/<task>`.
    pub branch: String,
    /// The project's base branch it started from.
    pub base_branch: String,
    /// The branch's tip.
    pub head: Oid,
    /// Whether this call created the worktree (false: it was live already).
    pub created: bool,
}

impl Worktrees {
    /// Returns the agent's live worktree for `task`, creating its repository
    /// and worktree first when needed.
    ///
    /// The branch `agent/<agent>/<task>` starts from the agent repository's
    /// branch if it has one, else from the forge's branch of that name (work
    /// pushed before), else from the base branch. With `owner`, the repository
    /// and the worktree are chowned to it (mounted mode); later host-side writes
    /// keep that owner. Fails with [`Error::AgentBusy`] when the agent has a
    /// live worktree for another task.
    pub fn provision(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        task: &TaskName,
        owner: Option<Owner>,
    ) -> Result<WorktreeInfo> {
        self.provision_within(
            project,
            agent,
            task,
            owner,
            crate::GitLimits::DEFAULT_MAX_CHECKOUT_BYTES,
        )
    }

    /// [`Worktrees::provision`], refusing a checkout that would write more
    /// than `max_checkout_bytes` (`[git] max_checkout_bytes`; measured from
    /// object headers before anything is written: [`Error::CheckoutTooLarge`]).
    pub fn provision_within(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        task: &TaskName,
        owner: Option<Owner>,
        max_checkout_bytes: u64,
    ) -> Result<WorktreeInfo> {
        self.provision_announcing(project, agent, task, owner, max_checkout_bytes, |_| ())
    }

    /// [`Worktrees::provision_within`], calling `ready` with the worktree's
    /// path as soon as the agent repository and the worktree's directory
    /// exist, owned as asked: for a new worktree before the checkout fills
    /// it, for a live one at the end (its refs refreshed by the helper as
    /// their current owner, then re-owned when asked). What a caller
    /// may start then: something that needs the directories to exist but
    /// not their content, like a container that bind-mounts them (`berth
    /// up` creates it while the checkout runs). Not called when
    /// provisioning fails first.
    pub fn provision_announcing(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        task: &TaskName,
        owner: Option<Owner>,
        max_checkout_bytes: u64,
        ready: impl FnOnce(&Path),
    ) -> Result<WorktreeInfo> {
        let op = Op::Provision;
        let layout = &self.layout;
        let branch = agent_branch(agent, task);
        let refname = format!("refs/heads/{branch}");
        let _lock = RepoLock::acquire(&layout.agent_lock(project, agent))?;

        let forge = open_forge(layout, project, op)?;
        // A server's mirror first takes in the server's base and task
        // branches (a directory forge is the forge: nothing to do).
        let location = Forge::of(&forge, op)?;
        if location != Forge::Directory {
            let _forge_lock = RepoLock::acquire(&layout.forge_lock(project))?;
            location.refresh(&forge, op)?;
        }
        let (base, base_tip) = base_branch(&forge, op)?;
        // The berth's directory holds the repository and the worktree; the
        // records' directory only berth's records. (When the engine gives the
        // berth a disk of its own, it is mounted at the berth's directory.)
        let berth_dir = layout.berth_dir(project, agent);
        for dir in [&berth_dir, &layout.agents_dir(project)] {
            std::fs::create_dir_all(dir).map_err(error::io(op, dir))?;
        }

        let repo_path = layout.agent_repo(project, agent);
        let repo_rel = PathBuf::from(Layout::agent_repo_name(agent));
        if confined::kind(&berth_dir, &repo_rel)
            .map_err(error::io(op, &repo_path))?
            .is_none()
        {
            init_agent_repo(layout, project, agent, &base)?;
        }
        check_agent_repo(layout, project, agent, op)?;
        let owner = match owner {
            Some(o) => Some(o),
            None => foreign_owner(&repo_path, op)?,
        };

        // The agent's view of the base branch is refreshed by the git job
        // below (the objects are already there through alternates). berth
        // never opens the agent repository as itself: every ref it writes
        // there is written by berth-helper, as the repository's owner.
        let base_mirror = Some((format!("refs/remotes/forge/{base}"), base_tip));
        let git_job = |base_mirror, create_at, checkout: bool| {
            let parts = RefsJobParts {
                op,
                base_mirror,
                refname: refname.clone(),
                create_at,
                checkout,
                max_checkout_bytes,
                check_clean: false,
                delete_branch: false,
            };
            RefsJobParts::head_required(layout, project, agent, parts)
        };

        let worktree = layout.worktree(project, agent);
        let admin = layout.worktree_admin(project, agent);
        let record = read_record(layout, project, agent, op)?;
        let worktree_kind = confined::kind(&berth_dir, Path::new(agent.as_str()))
            .map_err(error::io(op, &worktree))?;
        if let Some(live_branch) = record.as_deref()
            && worktree_kind == Some(Kind::Dir)
            && admin_present(layout, project, agent, op)?
        {
            if live_branch != branch {
                return Err(Error::AgentBusy {
                    project: project.to_string(),
                    agent: agent.to_string(),
                    worktree,
                    live_branch: live_branch.to_owned(),
                    requested_branch: branch,
                });
            }
            // Live: make sure it is still locked (the agent may have
            // unlocked it) and owned as asked.
            let locked = admin_rel(agent).join("locked");
            if confined::kind(&berth_dir, &locked)
                .map_err(error::io(op, &admin))?
                .is_none()
            {
                confined::write_new(&berth_dir, &locked, LOCK_REASON.as_bytes())
                    .map_err(error::io(op, &berth_dir.join(&locked)))?;
            }
            let head = git_job(base_mirror, None, false)?;
            if let Some(owner) = owner {
                chown_agent(layout, project, agent, owner, true, op)?;
            }
            // Only now: the refs are refreshed by the helper as the current
            // owner, then everything is given to the one asked for (a new
            // uid), which is what a container checks it is mounted as.
            ready(&worktree);
            return Ok(WorktreeInfo {
                path: worktree,
                agent_repo: repo_path,
                forge_objects: layout.forge_objects(project),
                branch,
                base_branch: base,
                head,
                created: false,
            });
        }

        // Not live: whatever is there is a leftover of a crash or of a
        // worktree whose directory was deleted. Remove it by name.
        remove_record(layout, project, agent, op)?;
        if confined::remove(&berth_dir, Path::new(agent.as_str()))
            .map_err(error::io(op, &worktree))?
        {
            tracing::warn!(worktree = %worktree.display(), "removed a half-created worktree");
        }
        let admin_rel = admin_rel(agent);
        if confined::remove(&berth_dir, &admin_rel).map_err(error::io(op, &admin))? {
            tracing::warn!(admin = %admin.display(), "removed a stale worktree admin directory");
        }

        // Refuses a `worktrees` directory that is a symlink.
        admin_present(layout, project, agent, op)?;
        let start = ref_tip(&forge, &refname, op)?.unwrap_or(base_tip);
        add_worktree(layout, project, agent, &refname)?;
        // The admin directory and the worktree were just made by berth (and
        // the repository too, when it is new): give them to the owner before
        // its helper writes there, so what the checkout writes is the
        // owner's from the start and no walk over it follows.
        if let Some(owner) = owner {
            chown_agent(layout, project, agent, owner, true, op)?;
        }
        ready(&worktree);
        // One helper process writes the refs, creates the branch and checks
        // its tip out.
        let head = git_job(base_mirror, Some(start), true)?;

        write_record(layout, project, agent, &branch, op)?;
        tracing::info!(project = %project, agent = %agent, branch = %branch, "worktree provisioned");
        Ok(WorktreeInfo {
            path: worktree,
            agent_repo: repo_path,
            forge_objects: layout.forge_objects(project),
            branch,
            base_branch: base,
            head,
            created: true,
        })
    }
}

/// Creates the linked worktree the way `git worktree add` lays it out; the
/// branch is checked out into it by [`checkout_worktree`] in berth-helper.
///
/// Not `git_worktree_add`: that opens the new worktree through its `.git` file
/// and checks out in "safe" mode against an empty directory; writing the four
/// admin files here and forcing a checkout through [`open_worktree_repo`] is
/// both faster and never reads a path back from the worktree. The worktree is
/// locked from its first moment, so no `git worktree prune` can take a half-made
/// one, and a crash before berth's record is written leaves a leftover that the
/// next provisioning (or reconcile) removes.
fn add_worktree(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    refname: &str,
) -> Result<()> {
    let op = Op::Provision;
    let admin = layout.worktree_admin(project, agent);
    let worktree = layout.worktree(project, agent);
    // Every entry is made relative to berth's own directories, never through
    // a link the agent could swap in (its repository's `worktrees` included).
    let berth_dir = layout.berth_dir(project, agent);
    let admin_rel = admin_rel(agent);
    let worktrees_rel = admin_rel.parent().unwrap_or(&admin_rel);
    confined::create_dir(&berth_dir, worktrees_rel)
        .map_err(error::io(op, &berth_dir.join(worktrees_rel)))?;
    if !confined::create_dir(&berth_dir, &admin_rel).map_err(error::io(op, &admin))? {
        return Err(tampered(op, admin, "nothing", "an entry made meanwhile"));
    }
    let gitdir = format!("{}\n", worktree.join(".git").display());
    let head = format!("ref: {refname}\n");
    for (name, content) in [
        ("locked", LOCK_REASON),
        ("commondir", "../..\n"),
        ("gitdir", gitdir.as_str()),
        ("HEAD", head.as_str()),
    ] {
        let rel = admin_rel.join(name);
        confined::write_new(&berth_dir, &rel, content.as_bytes())
            .map_err(error::io(op, &berth_dir.join(&rel)))?;
    }
    if !confined::create_dir(&berth_dir, Path::new(agent.as_str()))
        .map_err(error::io(op, &worktree))?
    {
        return Err(tampered(op, worktree, "nothing", "an entry made meanwhile"));
    }
    let dot_git = Path::new(agent.as_str()).join(".git");
    confined::write_new(
        &berth_dir,
        &dot_git,
        format!("gitdir: {}\n", admin.display()).as_bytes(),
    )
    .map_err(error::io(op, &worktree.join(".git")))?;
    Ok(())
}

/// Checks `tip` of `refname` out into the agent's worktree, forced: run by
/// `berth-helper` (`agent_git.rs`).
pub(crate) fn checkout_worktree(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    refname: &str,
    tip: Oid,
    max_checkout_bytes: u64,
) -> Result<()> {
    let op = Op::Provision;
    let admin = layout.worktree_admin(project, agent);
    let repo = open_worktree_repo(layout, project, agent, op)?;
    let git = |e| error::git(op, &admin, Some(refname))(e);
    let tree = repo.find_commit(tip).and_then(|c| c.tree()).map_err(git)?;
    // Measured before a byte is written: a small repository can name one
    // large blob at thousands of paths.
    check_checkout_size(&repo, tree.id(), refname, max_checkout_bytes, op)?;
    let mut checkout = CheckoutBuilder::new();
    checkout.force();
    // Looking up attributes for every file is a fifth of libgit2's checkout;
    // skip it only when no filter can apply.
    if !filters_may_apply(&repo, &tree).map_err(git)? {
        checkout.disable_filters(true);
    }
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .map_err(git)?;
    Ok(())
}

/// Whether a checkout filter (end-of-line conversion, `ident`, a filter
/// driver) could apply to `tree` in `repo`. Filters are selected by attributes
/// or by `core.autocrlf`; so: any `.gitattributes` in the tree, an attributes
/// file of the repository, the user or the system, or `core.autocrlf` set to
/// anything but false. Anything unreadable counts as "may apply".
fn filters_may_apply(
    repo: &Repository,
    tree: &git2::Tree<'_>,
) -> std::result::Result<bool, git2::Error> {
    let config = repo.config()?.snapshot()?;
    if config.get_bool("core.autocrlf").unwrap_or(true) && config.get_entry("core.autocrlf").is_ok()
    {
        return Ok(true);
    }
    if config.get_entry("core.attributesFile").is_ok() {
        return Ok(true);
    }
    let mut candidates = vec![
        repo.commondir().join("info/attributes"),
        PathBuf::from("/etc/gitattributes"),
    ];
    match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(xdg) => candidates.push(PathBuf::from(xdg).join("git/attributes")),
        None => {
            if let Some(home) = std::env::var_os("HOME") {
                candidates.push(PathBuf::from(home).join(".config/git/attributes"));
            }
        }
    }
    if candidates
        .iter()
        .any(|p| std::fs::symlink_metadata(p).is_ok())
    {
        return Ok(true);
    }
    let mut found = false;
    tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        if entry.name_bytes() == b".gitattributes" {
            found = true;
            git2::TreeWalkResult::Abort
        } else {
            git2::TreeWalkResult::Ok
        }
    })
    .or_else(|e| if found { Ok(()) } else { Err(e) })?;
    Ok(found)
}

/// `<agent>.git/worktrees/<agent>`, relative to the berth's directory.
pub(crate) fn admin_rel(agent: &AgentName) -> PathBuf {
    Path::new(&Layout::agent_repo_name(agent))
        .join("worktrees")
        .join(agent.as_str())
}

/// Creates the agent repository under a temporary name, complete with its
/// alternates, and renames it into place.
fn init_agent_repo(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    base: &str,
) -> Result<()> {
    let op = Op::Provision;
    let berth_dir = layout.berth_dir(project, agent);
    let staging_name = format!(".init-{agent}.git");
    let staging = berth_dir.join(&staging_name);
    confined::remove(&berth_dir, Path::new(&staging_name)).map_err(error::io(op, &staging))?;
    let repo = Repository::init_opts(
        &staging,
        RepositoryInitOptions::new()
            .bare(true)
            .no_reinit(true)
            .mkdir(true)
            .mkpath(false)
            // No copy of git's sample hooks and templates: nothing runs
            // them (berth never runs the git CLI on an agent's repository
            // on the host), and each would be one more file to write and
            // give to the berth's uid at every `berth up`.
            .external_template(false)
            .initial_head(base),
    )
    .map_err(error::git(op, &staging, None))?;
    drop(repo);
    let alternates = staging.join("objects/info/alternates");
    std::fs::write(&alternates, alternates_content(layout, project))
        .map_err(error::io(op, &alternates))?;
    let path = layout.agent_repo(project, agent);
    std::fs::rename(&staging, &path).map_err(error::io(op, &path))?;
    Ok(())
}

fn alternates_content(layout: &Layout, project: &ProjectName) -> String {
    format!("{}\n", layout.forge_objects(project).display())
}

/// Reads a small file berth wrote in an agent directory without following a
/// symlink, for comparison only.
fn read_small(path: &Path) -> std::io::Result<String> {
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)?;
    let mut buf = Vec::new();
    Read::by_ref(&mut file).take(4096).read_to_end(&mut buf)?;
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

fn shown(found: &str) -> String {
    let mut s: String = found.chars().take(120).collect();
    if found.chars().count() > 120 {
        s.push('…');
    }
    format!("{s:?}")
}

fn tampered(op: Op, path: PathBuf, expected: impl Into<String>, found: impl Into<String>) -> Error {
    Error::Tampered {
        op,
        path,
        expected: expected.into(),
        found: found.into(),
    }
}

fn expect_kind(berth_dir: &Path, rel: &Path, want: Kind, op: Op) -> Result<()> {
    let path = berth_dir.join(rel);
    match confined::kind(berth_dir, rel).map_err(error::io(op, &path))? {
        Some(k) if k == want => Ok(()),
        found => Err(tampered(
            op,
            path,
            format!("a {}", kind_name(Some(want))),
            kind_name(found),
        )),
    }
}

fn kind_name(kind: Option<Kind>) -> &'static str {
    match kind {
        Some(Kind::Dir) => "directory",
        Some(Kind::File) => "regular file",
        Some(Kind::Symlink) => "symlink",
        Some(Kind::Other) => "special file",
        None => "nothing",
    }
}

/// Checks the parts of the agent repository through which libgit2 would find
/// other repositories: no symlinked top-level directories, no `commondir`
/// redirect, alternates naming exactly the forge's objects.
pub(crate) fn check_agent_repo(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    op: Op,
) -> Result<()> {
    let berth_dir = layout.berth_dir(project, agent);
    let repo = PathBuf::from(Layout::agent_repo_name(agent));
    let repo_path = berth_dir.join(&repo);
    match confined::kind(&berth_dir, &repo).map_err(error::io(op, &repo_path))? {
        None => {
            return Err(Error::Missing {
                op,
                what: "agent repository",
                path: repo_path,
                hint: "provision the agent first",
            });
        }
        Some(Kind::Dir) => {}
        found => return Err(tampered(op, repo_path, "a directory", kind_name(found))),
    }
    for dir in ["objects", "objects/info", "refs"] {
        expect_kind(&berth_dir, &repo.join(dir), Kind::Dir, op)?;
    }
    let commondir = repo.join("commondir");
    if let Some(found) =
        confined::kind(&berth_dir, &commondir).map_err(error::io(op, &repo_path))?
    {
        return Err(tampered(
            op,
            berth_dir.join(commondir),
            "no commondir file",
            kind_name(Some(found)),
        ));
    }
    // Directories libgit2 writes refs, reflogs and objects into for berth: a
    // symlinked one would carry berth's writes into another repository.
    let agent_dir = format!("agent/{agent}");
    for dir in [
        "refs/heads".to_owned(),
        "refs/heads/agent".to_owned(),
        format!("refs/heads/{agent_dir}"),
        "refs/remotes".to_owned(),
        "refs/remotes/forge".to_owned(),
        "logs".to_owned(),
        "logs/refs".to_owned(),
        "logs/refs/heads".to_owned(),
        "logs/refs/heads/agent".to_owned(),
        format!("logs/refs/heads/{agent_dir}"),
        "logs/refs/remotes".to_owned(),
        "logs/refs/remotes/forge".to_owned(),
        "worktrees".to_owned(),
        format!("worktrees/{agent}"),
        format!("worktrees/{agent}/logs"),
    ] {
        let rel = repo.join(&dir);
        match confined::kind(&berth_dir, &rel).map_err(error::io(op, &repo_path))? {
            None | Some(Kind::Dir) => {}
            found => {
                return Err(tampered(
                    op,
                    berth_dir.join(rel),
                    "a directory",
                    kind_name(found),
                ));
            }
        }
    }
    let objects = repo_path.join("objects");
    for entry in std::fs::read_dir(&objects).map_err(error::io(op, &objects))? {
        let entry = entry.map_err(error::io(op, &objects))?;
        if entry
            .file_type()
            .map_err(error::io(op, &entry.path()))?
            .is_symlink()
        {
            return Err(tampered(op, entry.path(), "a directory", "symlink"));
        }
    }
    let alternates_rel = repo.join("objects/info/alternates");
    expect_kind(&berth_dir, &alternates_rel, Kind::File, op)?;
    let alternates = berth_dir.join(&alternates_rel);
    let want = alternates_content(layout, project);
    let found = read_small(&alternates).map_err(error::io(op, &alternates))?;
    if found != want {
        return Err(tampered(op, alternates, shown(&want), shown(&found)));
    }
    Ok(())
}

/// Whether the worktree's admin directory is there (a real directory under a
/// real `worktrees` directory).
fn admin_present(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    op: Op,
) -> Result<bool> {
    let berth_dir = layout.berth_dir(project, agent);
    let admin = admin_rel(agent);
    let kind =
        |rel: &Path| confined::kind(&berth_dir, rel).map_err(error::io(op, &berth_dir.join(rel)));
    match kind(admin.parent().unwrap_or(&admin))? {
        None => return Ok(false),
        Some(Kind::Dir) => {}
        found => {
            return Err(tampered(
                op,
                berth_dir.join(admin.parent().unwrap_or(&admin)),
                "a directory",
                kind_name(found),
            ));
        }
    }
    match kind(&admin)? {
        None => Ok(false),
        Some(Kind::Dir) => Ok(true),
        found => Err(tampered(
            op,
            berth_dir.join(&admin),
            "a directory",
            kind_name(found),
        )),
    }
}

/// Opens the agent's bare repository after [`check_agent_repo`].
pub(crate) fn open_agent_repo(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    op: Op,
) -> Result<Repository> {
    check_agent_repo(layout, project, agent, op)?;
    let path = layout.agent_repo(project, agent);
    Repository::open_bare(&path).map_err(error::git(op, &path, None))
}

/// Opens the agent's worktree through its repository: the admin directory as
/// the git directory, the [`Layout`] path as the working directory. Neither the
/// worktree's `.git` file nor the admin `gitdir` file is read.
pub(crate) fn open_worktree_repo(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    op: Op,
) -> Result<Repository> {
    check_agent_repo(layout, project, agent, op)?;
    let berth_dir = layout.berth_dir(project, agent);
    let admin_path = layout.worktree_admin(project, agent);
    let worktree = layout.worktree(project, agent);
    let admin = admin_rel(agent);
    let missing_worktree = || Error::Missing {
        op,
        what: "worktree directory",
        path: worktree.clone(),
        hint: "provision the agent again",
    };
    if !admin_present(layout, project, agent, op)? {
        return Err(Error::Missing {
            op,
            what: "worktree admin directory",
            path: admin_path,
            hint: "provision the agent again",
        });
    }
    expect_kind(&berth_dir, &admin.join("HEAD"), Kind::File, op)?;
    expect_kind(&berth_dir, &admin.join("commondir"), Kind::File, op)?;
    let commondir_path = admin_path.join("commondir");
    let found = read_small(&commondir_path).map_err(error::io(op, &commondir_path))?;
    let repo_path = layout.agent_repo(project, agent);
    if resolve_link(&admin_path, found.trim_end_matches(['\n', '\r'])) != repo_path {
        return Err(tampered(
            op,
            commondir_path,
            shown(&format!("{}/", repo_path.display())),
            shown(&found),
        ));
    }
    match confined::kind(&layout.berth_dir(project, agent), Path::new(agent.as_str()))
        .map_err(error::io(op, &worktree))?
    {
        Some(Kind::Dir) => {}
        None => return Err(missing_worktree()),
        found => {
            return Err(tampered(
                op,
                worktree.clone(),
                "a directory",
                kind_name(found),
            ));
        }
    }
    let repo = Repository::open_ext(
        &admin_path,
        RepositoryOpenFlags::NO_SEARCH | RepositoryOpenFlags::BARE,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
    .map_err(error::git(op, &admin_path, None))?;
    repo.set_workdir(&worktree, false)
        .map_err(error::git(op, &worktree, None))?;
    Ok(repo)
}

/// Resolves the content of a `commondir`-style file (absolute, or relative to
/// `base`) lexically, without touching the filesystem.
fn resolve_link(base: &Path, content: &str) -> PathBuf {
    let joined = base.join(content);
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// The uid:gid owning the agent repository when it is not this process's uid
/// (it was provisioned for a container): host-side writes must keep it.
pub(crate) fn foreign_owner(repo_path: &Path, op: Op) -> Result<Option<Owner>> {
    let owner = Owner::of(repo_path).map_err(error::io(op, repo_path))?;
    Ok((owner.uid != current_uid()).then_some(owner))
}

/// Gives the agent's repository (and, with `worktree`, its worktree) to `owner`.
pub(crate) fn chown_agent(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    owner: Owner,
    worktree: bool,
    op: Op,
) -> Result<()> {
    let berth_dir = layout.berth_dir(project, agent);
    confined::chown_tree(
        &berth_dir,
        Path::new(&Layout::agent_repo_name(agent)),
        owner.uid,
        owner.gid,
    )
    .map_err(error::io(op, &layout.agent_repo(project, agent)))?;
    if worktree {
        confined::chown_tree(&berth_dir, Path::new(agent.as_str()), owner.uid, owner.gid)
            .map_err(error::io(op, &layout.worktree(project, agent)))?;
    }
    Ok(())
}

/// The branch in berth's record of the agent's live worktree.
pub(crate) fn read_record(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    op: Op,
) -> Result<Option<String>> {
    let path = layout.worktree_record(project, agent);
    match std::fs::read_to_string(&path) {
        Ok(s) => Ok(Some(s.trim_end().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(error::io(op, &path)(e)),
    }
}

fn write_record(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    branch: &str,
    op: Op,
) -> Result<()> {
    let path = layout.worktree_record(project, agent);
    let tmp = layout
        .agents_dir(project)
        .join(format!(".{agent}.worktree.tmp"));
    std::fs::write(&tmp, format!("{branch}\n")).map_err(error::io(op, &tmp))?;
    std::fs::rename(&tmp, &path).map_err(error::io(op, &path))
}

pub(crate) fn remove_record(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    op: Op,
) -> Result<bool> {
    let path = layout.worktree_record(project, agent);
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(error::io(op, &path)(e)),
    }
}
