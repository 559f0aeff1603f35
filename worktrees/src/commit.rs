//! Committing an agent's worktree on its behalf.
//!
//! Like `git add -A && git commit`, but with git2 (no hooks, no fsmonitor, no
//! filters run from the agent's configuration), under the agent's identity,
//! and idempotent by action id: a retried action finds the commit it made
//! earlier on the branch through its `Berth-Action:` trailer instead of making a
//! second one (the engine may retry a step after a crash).
//!
//! berth itself never opens the agent's repository for a commit: the staging
//! and the ref and reflog writes run in `berth-helper` as the agent, confined
//! (see [`Worktrees::commit`]).

use std::path::Path;

use git2::{IndexAddOption, Oid, Repository, Sort};

use crate::Worktrees;
use crate::agent::open_worktree_repo;
use crate::confined;
use crate::error::{self, Error, Op, Result};
use crate::helper_process;
use crate::helper_protocol::{Answer, CommitDone, CommitJob, Confinement, WireError};
use crate::identity::{Identity, action_trailers, check_action_id, compose_message};
use crate::layout::Layout;
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName, agent_ref_prefix};
use crate::ownership::current_uid;

/// How far back on the agent's branch a retried action is looked for.
const ACTION_SEARCH_LIMIT: usize = 10_000;

/// A commit to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRequest {
    /// The message (cleaned up like git does; the trailers are added).
    pub message: String,
    /// The id of the action, written as the `Berth-Action:` trailer.
    pub action_id: String,
    /// Author and committer; `None` is the agent's default identity.
    pub identity: Option<Identity>,
    /// The person the agent works for, as a `Co-authored-by:` trailer.
    pub co_author: Option<Identity>,
}

/// What `commit` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOutcome {
    /// The commit (the new one, or the one the action made before).
    pub oid: Oid,
    /// The branch it is on (short name).
    pub branch: String,
    /// False when the action had already committed.
    pub created: bool,
}

impl Worktrees {
    /// Stages every change in the agent's worktree (additions, modifications,
    /// deletions; `.gitignore` honoured) and commits it on the worktree's
    /// branch, which must be one of the agent's (`agent/<agent>/…`).
    ///
    /// The work runs in `berth-helper`, as the agent repository's owner and
    /// inside a Landlock ruleset holding only the worktree, the agent
    /// repository and the forge's objects: links the agent plants (a reflog
    /// pointing at a host file, a directory swapped for a link to a root-only
    /// one) lead nowhere berth could be made to read or write.
    ///
    /// Returns the earlier commit with `created: false` when this action id
    /// already committed on the branch; fails with [`Error::NothingToCommit`]
    /// when there is nothing to commit.
    pub fn commit(
        &self,
        project: &ProjectName,
        agent: &AgentName,
        request: &CommitRequest,
    ) -> Result<CommitOutcome> {
        let op = Op::Commit;
        // Refuse a bad request before starting anything.
        checked_message(request)?;
        let pair = |i: &Identity| (i.name().to_owned(), i.email().to_owned());
        let _lock = RepoLock::acquire(&self.layout.agent_lock(project, agent))?;
        let job = CommitJob {
            confinement: agent_confinement(&self.layout, project, agent, true, op)?,
            state_dir: self.layout.state_dir().to_path_buf(),
            project: project.to_string(),
            agent: agent.to_string(),
            message: request.message.clone(),
            action_id: request.action_id.clone(),
            identity: request.identity.as_ref().map(pair),
            co_author: request.co_author.as_ref().map(pair),
        };
        let (running, answer) = helper_process::start::<_, CommitDone>(op, "git-commit", &job)?;
        let helper = running.helper.clone();
        running.finish()?;
        match answer {
            Answer::Ok(done) => {
                let oid = Oid::from_str(&done.oid).map_err(error::git(op, &helper, None))?;
                tracing::info!(%oid, branch = %done.branch, action = %request.action_id, created = done.created, "committed");
                Ok(CommitOutcome {
                    oid,
                    branch: done.branch,
                    created: done.created,
                })
            }
            Answer::Error(e) => Err(e.into_error(op, &helper)),
        }
    }
}

/// Runs a `git-commit` request: what `berth-helper` calls once it is
/// confined. Never call it in berth's own process.
pub fn run_commit_job(job: &CommitJob) -> Answer<CommitDone> {
    let result = (|| {
        let layout = Layout::new(&job.state_dir);
        let project = ProjectName::new(&job.project)?;
        let agent = AgentName::new(&job.agent)?;
        let identity = |p: &Option<(String, String)>| {
            p.as_ref()
                .map(|(name, email)| Identity::new(name, email))
                .transpose()
        };
        let request = CommitRequest {
            message: job.message.clone(),
            action_id: job.action_id.clone(),
            identity: identity(&job.identity)?,
            co_author: identity(&job.co_author)?,
        };
        commit_in_worktree(&layout, &project, &agent, &request)
    })();
    match result {
        Ok(c) => Answer::Ok(CommitDone {
            oid: c.oid.to_string(),
            branch: c.branch,
            created: c.created,
        }),
        Err(e) => Answer::Error(WireError::from(&e)),
    }
}

/// The confinement of helper work on an agent's repository: as its owner
/// (read from the trusted parent directory, without following a link) when
/// berth is root; writing only the repository (and, `with_worktree`, the
/// worktree), reading the forge's objects too.
pub(crate) fn agent_confinement(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    with_worktree: bool,
    op: Op,
) -> Result<Confinement> {
    let berth_dir = layout.berth_dir(project, agent);
    let repo = layout.agent_repo(project, agent);
    let owner = match confined::owner(&berth_dir, Path::new(&Layout::agent_repo_name(agent))) {
        Ok(Some(o)) => o,
        Ok(None) => {
            return Err(Error::Missing {
                op,
                what: "agent repository",
                path: repo,
                hint: "provision the agent first",
            });
        }
        Err(e) => return Err(error::io(op, &repo)(e)),
    };
    let switch = current_uid() == 0 && owner.uid != 0;
    let mut write = vec![repo];
    if with_worktree {
        let worktree = layout.worktree(project, agent);
        match confined::kind(&berth_dir, Path::new(agent.as_str())) {
            Ok(Some(confined::Kind::Dir)) => write.insert(0, worktree),
            Ok(None) => {
                return Err(Error::Missing {
                    op,
                    what: "worktree directory",
                    path: worktree,
                    hint: "provision the agent again",
                });
            }
            Ok(Some(_)) => {
                return Err(Error::Tampered {
                    op,
                    path: worktree,
                    expected: "a directory".to_owned(),
                    found: "something else".to_owned(),
                });
            }
            Err(e) => return Err(error::io(op, &worktree)(e)),
        }
    }
    Ok(Confinement {
        uid: switch.then_some(owner.uid),
        gid: switch.then_some(owner.gid),
        read: vec![layout.forge_objects(project)],
        write,
    })
}

/// The commit message with its trailers, once the request is checked.
fn checked_message(request: &CommitRequest) -> Result<String> {
    check_action_id(&request.action_id)?;
    compose_message(
        &request.message,
        request.co_author.as_ref(),
        &request.action_id,
    )
}

/// Stages and commits in the agent's worktree: the core of
/// [`Worktrees::commit`], run by `berth-helper` as the agent.
fn commit_in_worktree(
    layout: &Layout,
    project: &ProjectName,
    agent: &AgentName,
    request: &CommitRequest,
) -> Result<CommitOutcome> {
    let op = Op::Commit;
    let message = checked_message(request)?;
    let identity = request
        .identity
        .clone()
        .unwrap_or_else(|| Identity::for_agent(agent));
    let signature = identity.signature(op)?;

    let repo = open_worktree_repo(layout, project, agent, op)?;
    let worktree = layout.worktree(project, agent);
    let refname = checked_out_branch(&repo, agent, op)?;
    let branch = refname.trim_start_matches("refs/heads/").to_owned();
    let git = |r: Option<&str>| error::git(op, repo.path(), r);
    let tip = repo.refname_to_id(&refname).map_err(git(Some(&refname)))?;

    if let Some(oid) = find_action(&repo, tip, &request.action_id)? {
        tracing::info!(%oid, action = %request.action_id, "action already committed");
        return Ok(CommitOutcome {
            oid,
            branch,
            created: false,
        });
    }

    let index_lock = layout.worktree_admin(project, agent).join("index.lock");
    let index_err = |e: git2::Error| {
        if e.code() == git2::ErrorCode::Locked {
            Error::Locked {
                op,
                lock_file: index_lock.clone(),
                source: e,
            }
        } else {
            error::git(op, repo.path(), None)(e)
        }
    };
    let mut index = repo.index().map_err(index_err)?;
    index
        .update_all(std::iter::empty::<&str>(), None)
        .map_err(index_err)?;
    index
        .add_all(std::iter::empty::<&str>(), IndexAddOption::DEFAULT, None)
        .map_err(index_err)?;
    index.write().map_err(index_err)?;
    let tree_id = index.write_tree().map_err(git(None))?;
    let parent = repo.find_commit(tip).map_err(git(Some(&refname)))?;
    if parent.tree_id() == tree_id {
        return Err(Error::NothingToCommit { worktree, branch });
    }
    let tree = repo.find_tree(tree_id).map_err(git(None))?;
    // Updating the ref checks that it is still at `tip` (an agent's own
    // commit in between fails this instead of being lost).
    let oid = repo
        .commit(
            Some(&refname),
            &signature,
            &signature,
            &message,
            &tree,
            &[&parent],
        )
        .map_err(git(Some(&refname)))?;
    Ok(CommitOutcome {
        oid,
        branch,
        created: true,
    })
}

/// The branch the worktree's HEAD is on; it must be the agent's.
fn checked_out_branch(repo: &Repository, agent: &AgentName, op: Op) -> Result<String> {
    let prefix = agent_ref_prefix(agent);
    let head = repo
        .find_reference("HEAD")
        .map_err(error::git(op, repo.path(), Some("HEAD")))?;
    match head.symbolic_target().ok().flatten() {
        Some(target) if target.starts_with(&prefix) => Ok(target.to_owned()),
        target => Err(Error::RefNotAllowed {
            op,
            agent: agent.to_string(),
            refname: target.map_or_else(
                || {
                    format!(
                        "HEAD (detached at {})",
                        head.target().map(|o| o.to_string()).unwrap_or_default()
                    )
                },
                |t| format!("HEAD -> {t}"),
            ),
            allowed_prefix: prefix,
        }),
    }
}

/// The commit on the branch (before `tip`, back to the base) that carries
/// `action_id`, if any.
fn find_action(repo: &Repository, tip: Oid, action_id: &str) -> Result<Option<Oid>> {
    let op = Op::Commit;
    let git = |e| error::git(op, repo.path(), None)(e);
    let mut walk = repo.revwalk().map_err(git)?;
    walk.set_sorting(Sort::TOPOLOGICAL).map_err(git)?;
    walk.push(tip).map_err(git)?;
    // Commits of the base are not the agent's; stop there.
    for r in repo.references_glob("refs/remotes/forge/*").map_err(git)? {
        if let Some(oid) = r.ok().and_then(|r| r.target()) {
            // A base the agent rewrote may not resolve; it only bounds the walk.
            let _ = walk.hide(oid);
        }
    }
    for oid in walk.take(ACTION_SEARCH_LIMIT) {
        let oid = oid.map_err(git)?;
        let commit = repo.find_commit(oid).map_err(git)?;
        let message = String::from_utf8_lossy(commit.message_bytes());
        if action_trailers(&message).any(|v| v == action_id) {
            return Ok(Some(oid));
        }
    }
    Ok(None)
}
