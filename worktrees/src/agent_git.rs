//! The git work of provisioning and recycling that touches an agent's
//! repository, run in `berth-helper` as the repository's owner and confined.
//!
//! Provisioning writes refs into the agent's repository (the base mirror
//! `refs/remotes/forge/<base>`, the task's branch) and checks the branch out
//! into the worktree; recycling reads the worktree's status and deletes the
//! branch (a ref and its reflog). The agent can change its repository at the same moment
//! (a reflog or a ref directory swapped for a link, `core.logAllRefUpdates`
//! set in its config), so berth does not do that work as itself: it runs
//! here, like a commit (`commit.rs`).

use git2::Oid;
use serde::{Deserialize, Serialize};

use crate::agent::{checkout_worktree, open_agent_repo};
use crate::commit::agent_confinement;
use crate::error::{self, Error, Op, Result};
use crate::forge::ref_tip;
use crate::helper_process;
use crate::helper_protocol::{Answer, Confinement, WireError};
use crate::layout::Layout;
use crate::names::{AgentName, ProjectName};
use crate::recycle::check_clean;

/// `git-provision`: refresh the base mirror, resolve (or create) the task's
/// branch, and optionally check it out into the worktree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefsJob {
    /// Where and as whom.
    pub confinement: Confinement,
    /// The state directory (canonical).
    pub state_dir: std::path::PathBuf,
    /// The project.
    pub project: String,
    /// The agent.
    pub agent: String,
    /// `refs/remotes/forge/<base>` and the forge's tip of the base.
    pub base_mirror: Option<(String, String)>,
    /// The task's branch (`refs/heads/agent/<agent>/<task>`).
    pub refname: String,
    /// Create the branch at this commit when it is missing.
    pub create_at: Option<String>,
    /// Check the branch's tip (once created) out into the worktree, forced.
    /// berth never opens the agent repository itself, so it does not know
    /// the tip beforehand: one process writes the refs and checks out.
    #[serde(default)]
    pub checkout: bool,
    /// Refuse the checkout when it would write more than this
    /// (`[git] max_checkout_bytes`).
    #[serde(default = "default_max_checkout_bytes")]
    pub max_checkout_bytes: u64,
    /// Fail with the changes when the worktree has uncommitted ones.
    #[serde(default)]
    pub check_clean: bool,
    /// Delete the branch (after everything else).
    #[serde(default)]
    pub delete_branch: bool,
}

fn default_max_checkout_bytes() -> u64 {
    crate::GitLimits::DEFAULT_MAX_CHECKOUT_BYTES
}

/// What a provisioning job found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefsDone {
    /// The branch's tip (`None`: missing and not created).
    pub head: Option<String>,
    /// Whether the branch was deleted.
    #[serde(default)]
    pub branch_deleted: bool,
}

/// Stops libgit2 from re-hashing every object it reads (and from re-checking
/// that each object it names exists), for the rest of this process, when
/// `job` checks a tree out (nothing otherwise); says whether it did. `berth-helper git-refs` calls it once confined, before
/// [`run_refs_job`]; nothing else may: the setting is process-wide, and
/// berth's own process (`berth`, `berth serve`) keeps verifying.
///
/// Re-hashing was 1.81 G of the 3.32 G instructions of checking out 10,000
/// files (`benches/provision.rs`); git's own checkout does not re-hash.
///
/// Why the checkout can trust an object's name here:
/// - The process is confined (`berth-helper`): it reads only the forge's
///   objects and the agent's repository, writes only that repository and
///   the worktree, as the berth's uid. Nothing it reads decides anything
///   for berth: what it writes is the agent's own worktree.
/// - The forge's objects were hashed when they entered, by berth, in its
///   own process: a pushed pack is indexed by `git2::Indexer` (`push.rs`),
///   an import is a libgit2 fetch into a fresh forge (the same indexer), a
///   merge commit is written by libgit2, and in each case an object's name
///   is the SHA-1 libgit2 computed over its bytes, never a name the pusher
///   claims. No agent can write there (berth owns it; containers and this
///   helper get it read-only). Re-hashing at read would only find a later
///   corruption of berth's own disk, which no agent can cause.
/// - The agent repository's own objects are the agent's: one whose content
///   does not match its name (even one shadowing a forge object, since
///   local objects are looked up before the alternates) changes only what
///   lands in that agent's worktree — bytes the agent can write there
///   itself. Every path out of the agent repository hashes again: a push is
///   re-indexed by berth (`push.rs`), and `git-commit`/`git-pack` never
///   turn verification off.
/// - Sizes stay bounded without the hash: `max_checkout_bytes` is checked
///   from object headers first, and libgit2 inflates an object into a
///   buffer of the size its header declares, refusing a longer stream.
pub fn skip_rehash_for_checkout(job: &RefsJob) -> bool {
    if !job.checkout {
        return false;
    }
    git2::opts::strict_hash_verification(false);
    // The index the checkout writes names the blobs of a tree this process
    // just read: looking each one up again to see it exists (strict object
    // creation) re-reads 10,000 headers. The refs this job writes name
    // commits berth resolved in the forge.
    git2::opts::strict_object_creation(false);
    true
}

/// Runs a `git-provision` request: what `berth-helper` calls once confined.
pub fn run_refs_job(job: &RefsJob) -> Answer<RefsDone> {
    match provision_refs(job) {
        Ok((head, branch_deleted)) => Answer::Ok(RefsDone {
            head: head.map(|o| o.to_string()),
            branch_deleted,
        }),
        Err(e) => Answer::Error(WireError::from(&e)),
    }
}

fn provision_refs(job: &RefsJob) -> Result<(Option<Oid>, bool)> {
    let op = Op::Provision;
    let layout = Layout::new(&job.state_dir);
    let project = ProjectName::new(&job.project)?;
    let agent = AgentName::new(&job.agent)?;
    let oid = |s: &str| Oid::from_str(s).map_err(error::git(op, &job.state_dir, None));
    if job.check_clean {
        check_clean(&layout, &project, &agent)?;
    }
    let repo = open_agent_repo(&layout, &project, &agent, op)?;
    let git = |r: &str| error::git(op, repo.path(), Some(r));
    if let Some((mirror, tip)) = &job.base_mirror {
        repo.reference(mirror, oid(tip)?, true, "berth: refresh from forge")
            .map_err(git(mirror))?;
    }
    let mut head = ref_tip(&repo, &job.refname, op)?;
    if let (None, Some(start)) = (head, &job.create_at) {
        let start = oid(start)?;
        repo.reference(&job.refname, start, false, "berth: branch for task")
            .map_err(git(&job.refname))?;
        head = Some(start);
    }
    let mut deleted = false;
    if job.delete_branch {
        match repo.find_reference(&job.refname) {
            Ok(mut r) => {
                r.delete().map_err(git(&job.refname))?;
                deleted = true;
            }
            Err(e) if e.code() == git2::ErrorCode::NotFound => {}
            Err(e) => return Err(git(&job.refname)(e)),
        }
    }
    drop(repo);
    if let (true, Some(tip)) = (job.checkout, head) {
        checkout_worktree(
            &layout,
            &project,
            &agent,
            &job.refname,
            tip,
            job.max_checkout_bytes,
        )?;
    }
    Ok((head, deleted))
}

/// Runs a refs job in the helper, as the agent repository's owner: the
/// branch's tip, and whether it was deleted.
pub(crate) fn refs_in_helper(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    job: RefsJobParts,
) -> Result<(Option<Oid>, bool)> {
    let op = job.op;
    let with_worktree = job.checkout || job.check_clean;
    let request = RefsJob {
        confinement: agent_confinement(layout, project, agent, with_worktree, op)?,
        state_dir: layout.state_dir().to_path_buf(),
        project: project.to_string(),
        agent: agent.to_string(),
        base_mirror: job.base_mirror.map(|(r, o)| (r, o.to_string())),
        refname: job.refname,
        create_at: job.create_at.map(|o| o.to_string()),
        checkout: job.checkout,
        max_checkout_bytes: job.max_checkout_bytes,
        check_clean: job.check_clean,
        delete_branch: job.delete_branch,
    };
    let (running, answer) = helper_process::start::<_, RefsDone>(op, "git-refs", &request)?;
    let helper = running.helper.clone();
    running.finish()?;
    match answer {
        Answer::Ok(done) => {
            let head = done
                .head
                .map(|h| Oid::from_str(&h).map_err(error::git(op, &helper, None)))
                .transpose()?;
            Ok((head, done.branch_deleted))
        }
        Answer::Error(e) => Err(e.into_error(op, &helper)),
    }
}

/// The parts of a [`RefsJob`] the caller chooses.
pub(crate) struct RefsJobParts {
    pub op: Op,
    pub base_mirror: Option<(String, Oid)>,
    pub refname: String,
    pub create_at: Option<Oid>,
    pub checkout: bool,
    pub max_checkout_bytes: u64,
    pub check_clean: bool,
    pub delete_branch: bool,
}

impl RefsJobParts {
    /// The branch's tip, which must exist.
    pub(crate) fn head_required(
        layout: &Layout,
        project: &ProjectName,
        agent: &AgentName,
        parts: RefsJobParts,
    ) -> Result<Oid> {
        let refname = parts.refname.clone();
        refs_in_helper(layout, project, agent, parts)?
            .0
            .ok_or_else(|| Error::UnknownBranch {
                op: Op::Provision,
                repo: layout.agent_repo(project, agent),
                branch: refname.trim_start_matches("refs/heads/").to_owned(),
            })
    }
}
