//! Pushing an agent's branch to the forge: its own prefix, never forced,
//! bounded.
//!
//! This is not a git transport push. A libgit2 push from the agent repository
//! (`remote_anonymous(forge)`) reads the agent's configuration, and an agent
//! that sets `url.<anything>.pushInsteadOf = <forge path>` would send berth's
//! root-privileged push into any repository on the host. Instead berth does
//! what receive-pack would, in two processes:
//!
//! 1. berth reads the forge's value of the ref and the forge's tips;
//! 2. `berth-helper`, as the agent and confined (it never sees more than the
//!    agent repository and the forge's objects), reads the branch tip, refuses
//!    a tip that does not contain the forge's (non-fast-forward), checks every
//!    new object's size by its header against `max_object_bytes` and their
//!    total against `max_push_bytes`, and streams a pack of them;
//! 3. berth reads at most `max_push_bytes` of that pack into an unnamed
//!    temporary file, measures every entry itself (`pack_scan.rs`: a delta by
//!    its declared result; nothing held whole), indexes it into the forge,
//!    checks the new objects again by header there, and moves the forge ref
//!    with a compare-and-swap against the value read in 1.
//!
//! When the forge is a git server, step 1 reads the mirror just refreshed
//! from the server, the pack lands in the mirror, and step 3's ref move is a
//! git2 push of the one ref to the server, with the same expected old value
//! checked by berth and by the server's receive-pack, before the mirror's
//! ref moves (`forge_remote.rs`). The agent repository is never a remote
//! and never pushed from: the push is from the mirror, berth's own.
//!
//! Pushing what the forge already has writes nothing and says so.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom, Write};

use git2::{Oid, Repository};

use std::path::Path;

use crate::Worktrees;
use crate::agent::open_agent_repo;
use crate::commit::agent_confinement;
use crate::error::{self, Error, Op, Result};
use crate::fence::Fence;
use crate::forge::{open_forge, ref_tip};
use crate::forge_remote::{Forge, RefUpdate};
use crate::helper_process;
use crate::helper_protocol::{Answer, PackJob, PackReady, WireError, write_answer};
use crate::layout::Layout;
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName, agent_ref_prefix, branch_ref};
use crate::object_bounds::{GitLimits, check_new_objects};
use crate::pack_scan::{PackRefusal, scan_pack};

/// What `push` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushOutcome {
    /// The full ref pushed (`refs/heads/agent/<agent>/…`).
    pub refname: String,
    /// The commit the forge's ref is at now.
    pub oid: Oid,
    /// What the forge's ref was before (`None`: it was created).
    pub previous: Option<Oid>,
    /// False when the forge already had exactly this commit (a no-op).
    pub updated: bool,
    /// How many objects were copied into the forge.
    pub objects: usize,
}

impl Worktrees {
    /// Pushes the agent's `branch` (short name, `agent/<agent>/…`) from its
    /// repository to the project's forge, fast-forward only, within the
    /// default [`GitLimits`].
    pub fn push(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        branch: &str,
    ) -> Result<PushOutcome> {
        self.push_bounded(project, agent, branch, &GitLimits::default())
    }

    /// [`Worktrees::push`] within `limits` (`[git] max_object_bytes`,
    /// `max_push_bytes`): a push holding a larger object, or adding more, is
    /// refused and the forge is unchanged.
    pub fn push_bounded(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        branch: &str,
        limits: &GitLimits,
    ) -> Result<PushOutcome> {
        let refname = agent_branch_ref(agent, branch)?;
        self.push_into(project, agent, &refname, &refname, limits, false, None)
    }

    /// [`Worktrees::push_bounded`] under an agent lease: the forge refuses
    /// it with [`Error::ForgeFenced`] when it has seen a higher token for
    /// the agent (another driver took the agent over), and a forge server
    /// that cannot check the token refuses it with [`Error::ForgeUnfenced`]
    /// before anything is sent (`fence.rs`).
    pub fn push_fenced(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        branch: &str,
        limits: &GitLimits,
        fence: &Fence,
    ) -> Result<PushOutcome> {
        if fence.agent != *agent {
            return Err(Error::InvalidInput {
                op: Op::Push,
                field: "fence",
                value: fence.agent.to_string(),
                reason: format!("a push of agent {agent} carries that agent's own lease"),
            });
        }
        let refname = agent_branch_ref(agent, branch)?;
        self.push_into(
            project,
            agent,
            &refname,
            &refname,
            limits,
            false,
            Some(fence),
        )
    }

    /// Copies the commit at the agent repository's `refname` into the forge
    /// under `forge_ref`, fast-forward only. With `only_new`, a commit the
    /// forge already holds is not written again (`updated: false`): what
    /// `save_unpushed` needs, where the forge's own ref is a new one.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_into(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        refname: &str,
        forge_ref: &str,
        limits: &GitLimits,
        only_new: bool,
        fence: Option<&Fence>,
    ) -> Result<PushOutcome> {
        let op = Op::Push;
        let refname = refname.to_owned();
        let _agent_lock = RepoLock::acquire(&self.layout.agent_lock(project, agent))?;
        let _forge_lock = RepoLock::acquire(&self.layout.forge_lock(project))?;
        let forge = open_forge(&self.layout, project, op)?;
        // A server's mirror learns the ref's value on the server first: the
        // compare-and-swap below expects it.
        let location = Forge::of(&forge, op)?;
        location.refresh(&forge, op)?;
        let previous = ref_tip(&forge, forge_ref, op)?;
        let forge_tips = forge_tips(&forge, &refname)?;
        // Packing only reads: the agent repository is not writable to it.
        let mut confinement = agent_confinement(&self.layout, project, agent, false, op)?;
        let writable = std::mem::take(&mut confinement.write);
        confinement.read.extend(writable);
        let job = PackJob {
            confinement,
            state_dir: self.layout.state_dir().to_path_buf(),
            project: project.to_string(),
            agent: agent.to_string(),
            refname: refname.clone(),
            previous: previous.map(|o| o.to_string()),
            forge_tips: forge_tips.iter().map(Oid::to_string).collect(),
            max_object_bytes: limits.max_object_bytes,
            max_push_bytes: limits.max_push_bytes,
        };
        let (mut running, answer) = helper_process::start::<_, PackReady>(op, "git-pack", &job)?;
        let ready = match answer {
            Answer::Ok(ready) => ready,
            Answer::Error(e) => {
                let helper = running.helper.clone();
                running.finish()?;
                return Err(e.into_error(op, &helper));
            }
        };
        let forge_git = |e| error::git(op, forge.path(), Some(forge_ref))(e);
        let local = Oid::from_str(&ready.tip).map_err(forge_git)?;
        let known = only_new && forge.find_commit(local).is_ok();
        if previous == Some(local) || known {
            if known {
                // Its pack (if any) is not wanted: the helper is stopped.
                drop(running);
            } else {
                running.finish()?;
            }
            return Ok(PushOutcome {
                refname: forge_ref.to_owned(),
                oid: local,
                previous,
                updated: false,
                objects: 0,
            });
        }
        if ready.objects > 0 {
            let received = receive_pack(&forge, &mut running.stdout, &refname, limits);
            let mut file = match received {
                Ok(file) => file,
                // berth's own bound: the helper may still be writing.
                Err(e) => {
                    drop(running);
                    return Err(e);
                }
            };
            // A cut pack: the helper's own error says why.
            running.finish()?;
            let pack = index_pack(&forge, &mut file, &refname, limits)?;
            drop(file);
            // Bounded again where it landed: by header, never inflated.
            let landed =
                check_new_objects(&forge, &[local], &forge_tips, limits.max_object_bytes, op);
            if let Err(e) = landed {
                remove_pack(&forge, &pack);
                return Err(e);
            }
        } else {
            running.finish()?;
        }
        // The commit and its tree must now be in the forge itself.
        forge
            .find_commit(local)
            .and_then(|c| c.tree().map(|_| ()))
            .map_err(forge_git)?;
        let log = format!("berth: push from agent {agent}");
        let update = RefUpdate {
            refname: forge_ref,
            previous,
            new: Some(local),
            log: &log,
            fence,
        };
        location.publish(&forge, update, op)?;
        let objects = ready.objects;
        tracing::info!(refname = %forge_ref, oid = %local, objects, "pushed to forge");
        Ok(PushOutcome {
            refname: forge_ref.to_owned(),
            oid: local,
            previous,
            updated: true,
            objects,
        })
    }
}

/// The full ref of the agent's `branch`, refused outside the agent's own
/// prefix (`agent/<agent>/…`).
fn agent_branch_ref(agent: &AgentName, branch: &str) -> Result<String> {
    let refname = branch_ref(branch)?;
    let prefix = agent_ref_prefix(agent);
    if !refname.starts_with(&prefix) || refname.len() == prefix.len() {
        return Err(Error::RefNotAllowed {
            op: Op::Push,
            agent: agent.to_string(),
            refname,
            allowed_prefix: prefix,
        });
    }
    Ok(refname)
}

/// The commits of the forge's branches and tags: what a push leaves out.
fn forge_tips(forge: &Repository, refname: &str) -> Result<Vec<Oid>> {
    let forge_git = |e| error::git(Op::Push, forge.path(), Some(refname))(e);
    let mut tips = Vec::new();
    for r in forge.references().map_err(forge_git)? {
        let r = r.map_err(forge_git)?;
        let is_branch_or_tag = r
            .name()
            .is_ok_and(|n| n.starts_with("refs/heads/") || n.starts_with("refs/tags/"));
        if let (true, Some(oid)) = (is_branch_or_tag, r.target()) {
            // Peel tags to commits; anything that is not a commit bounds nothing.
            if let Ok(commit) = forge
                .find_object(oid, None)
                .and_then(|o| o.peel_to_commit())
            {
                tips.push(commit.id());
            }
        }
    }
    Ok(tips)
}

/// Receives the pack the helper streams into an unnamed temporary file beside
/// the forge, reading at most `max_push_bytes`.
fn receive_pack(
    forge: &Repository,
    pack: &mut dyn Read,
    refname: &str,
    limits: &GitLimits,
) -> Result<File> {
    let op = Op::Push;
    let mut file = tempfile::tempfile_in(forge.path()).map_err(error::io(op, forge.path()))?;
    let copied = std::io::copy(&mut pack.take(limits.max_push_bytes + 1), &mut file)
        .map_err(error::io(op, forge.path()))?;
    if copied > limits.max_push_bytes {
        return Err(Error::PushTooLarge {
            refname: refname.to_owned(),
            bytes: copied,
            limit: limits.max_push_bytes,
        });
    }
    Ok(file)
}

/// Measures the received pack entry by entry (`pack_scan.rs`), then indexes
/// it into the forge. Returns the pack's name.
fn index_pack(
    forge: &Repository,
    file: &mut File,
    refname: &str,
    limits: &GitLimits,
) -> Result<String> {
    let op = Op::Push;
    let forge_git = |e| error::git(op, forge.path(), Some(refname))(e);
    let dir = forge.path().join("objects/pack");
    let io = |e| error::io(op, &dir)(e);
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let scanned = scan_pack(&mut BufReader::new(&mut *file), limits.max_object_bytes);
    let summary = scanned.map_err(|e| match e {
        PackRefusal::Io(source) => error::io(op, &dir)(source),
        refusal => Error::PackRefused {
            refname: refname.to_owned(),
            reason: refusal.to_string(),
            limit: limits.max_object_bytes,
        },
    })?;
    if summary.bytes > limits.max_push_bytes {
        return Err(Error::PushTooLarge {
            refname: refname.to_owned(),
            bytes: summary.bytes,
            limit: limits.max_push_bytes,
        });
    }
    file.seek(SeekFrom::Start(0)).map_err(io)?;
    let odb = forge.odb().map_err(forge_git)?;
    let mut indexer = git2::Indexer::new(Some(&odb), &dir, 0o444, true).map_err(forge_git)?;
    std::io::copy(file, &mut indexer).map_err(io)?;
    indexer.commit().map_err(forge_git)
}

/// Removes a pack berth indexed but refused.
fn remove_pack(forge: &Repository, name: &str) {
    let dir = forge.path().join("objects/pack");
    for ext in ["pack", "idx", "rev"] {
        let path = dir.join(format!("pack-{name}.{ext}"));
        if let Err(e) = std::fs::remove_file(&path)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(path = %path.display(), error = %e, "could not remove a refused pack");
        }
    }
}

/// Runs a `git-pack` request: what `berth-helper` calls once it is confined.
/// Writes the answer line to `out`, then (when it is `ok` with objects) the
/// pack. An error after the answer line is returned for the exit status.
pub fn run_pack_job(job: &PackJob, out: &mut dyn Write) -> std::io::Result<()> {
    match pack_for_forge(job, out) {
        Ok(()) => Ok(()),
        Err(PackFailure::Before(e)) => {
            write_answer::<PackReady>(out, &Answer::Error(WireError::from(&e)))
        }
        Err(PackFailure::After(e)) => Err(std::io::Error::other(e.to_string())),
    }
}

enum PackFailure {
    /// Nothing was written yet: answer with the error.
    Before(Error),
    /// The answer line is out: only the exit status can tell.
    After(Error),
}

fn pack_for_forge(job: &PackJob, out: &mut dyn Write) -> std::result::Result<(), PackFailure> {
    let op = Op::Push;
    let before = PackFailure::Before;
    let layout = Layout::new(&job.state_dir);
    let project = ProjectName::new(&job.project).map_err(before)?;
    let agent = AgentName::new(&job.agent).map_err(before)?;
    let refname = &job.refname;
    let oid = |s: &str| {
        Oid::from_str(s).map_err(|e| before(error::git(op, &job.state_dir, Some(refname))(e)))
    };
    let previous = job.previous.as_deref().map(oid).transpose()?;
    let forge_tips = job
        .forge_tips
        .iter()
        .map(|s| oid(s))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let agent_repo = open_agent_repo(&layout, &project, &agent, op).map_err(before)?;
    let agent_git = |e| before(error::git(op, agent_repo.path(), Some(refname))(e));
    let local = ref_tip(&agent_repo, refname, op)
        .map_err(before)?
        .ok_or_else(|| {
            before(Error::UnknownBranch {
                op,
                repo: agent_repo.path().to_path_buf(),
                branch: refname.trim_start_matches("refs/heads/").to_owned(),
            })
        })?;
    agent_repo.find_commit(local).map_err(agent_git)?;
    let ready = |objects, object_bytes| PackReady {
        tip: local.to_string(),
        objects,
        object_bytes,
    };
    let answer = |out: &mut dyn Write, r: PackReady| {
        write_answer(out, &Answer::Ok(r))
            .map_err(|e| PackFailure::After(error::io(op, Path::new("stdout"))(e)))
    };
    if previous == Some(local) {
        return answer(out, ready(0, 0));
    }
    if let Some(forge_oid) = previous {
        // The forge's objects are visible in the agent repository.
        let contains = agent_repo
            .graph_descendant_of(local, forge_oid)
            .map_err(agent_git)?;
        if !contains {
            return Err(before(Error::NonFastForward {
                refname: refname.clone(),
                forge: layout.forge(&project),
                forge_oid,
                local_oid: local,
            }));
        }
    }
    let new = check_new_objects(&agent_repo, &[local], &forge_tips, job.max_object_bytes, op)
        .map_err(before)?;
    if new.bytes > job.max_push_bytes {
        return Err(before(Error::PushTooLarge {
            refname: refname.clone(),
            bytes: new.bytes,
            limit: job.max_push_bytes,
        }));
    }
    let mut walk = agent_repo.revwalk().map_err(agent_git)?;
    walk.push(local).map_err(agent_git)?;
    for tip in &forge_tips {
        walk.hide(*tip).map_err(agent_git)?;
    }
    let mut builder = agent_repo.packbuilder().map_err(agent_git)?;
    builder.insert_walk(&mut walk).map_err(agent_git)?;
    let count = builder.object_count();
    answer(out, ready(count, new.bytes))?;
    if count == 0 {
        return Ok(());
    }
    let mut written: u64 = 0;
    let mut failed = None;
    let streamed = builder.foreach(|chunk| {
        written += chunk.len() as u64;
        if written > job.max_push_bytes {
            failed = Some(Error::PushTooLarge {
                refname: refname.clone(),
                bytes: written,
                limit: job.max_push_bytes,
            });
            return false;
        }
        match out.write_all(chunk) {
            Ok(()) => true,
            Err(e) => {
                failed = Some(error::io(op, Path::new("stdout"))(e));
                false
            }
        }
    });
    if let Some(e) = failed {
        return Err(PackFailure::After(e));
    }
    streamed
        .map_err(|e| PackFailure::After(error::git(op, agent_repo.path(), Some(refname))(e)))?;
    out.flush()
        .map_err(|e| PackFailure::After(error::io(op, Path::new("stdout"))(e)))
}
