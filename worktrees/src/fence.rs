//! The fencing token at the forge: a push from an agent's stale lease holder
//! is refused by the forge itself, not only by the store.
//!
//! A driver checks its agent lease in the store before each effect
//! (`runtime/engine/src/agent_lease.rs`), but between that check and a push
//! another host can take the lease over and read the forge: without a fence
//! at the forge, the stale push could still land after that read. So a
//! push made under a lease carries the lease's token ([`Fence`]), and a
//! takeover *raises* the agent's token at the forge
//! ([`Worktrees::raise_fence`]) before it reads anything there.
//!
//! # Directory forge
//!
//! berth writes every ref itself under the forge's writer lock. The highest
//! token the forge has seen for an agent is the file
//! `<forge>/berth-fence/<agent>` (inside the forge's berth-owned directory,
//! never mounted into a berth), read and written under that same lock: a
//! publish carrying a lower token is refused with [`Error::ForgeFenced`]
//! before its ref moves, a higher one is recorded. A raise takes the lock,
//! so a stale publish either finished before it (and the takeover's read
//! sees it) or is checked after it (and refused).
//!
//! # Server forge
//!
//! The token travels as the push option `berth-fence=<agent>:<token>`, and
//! the server's repository runs berth's hook (`scripts/berth-fence-hook.sh`,
//! installed as its `pre-receive` and `reference-transaction` hooks, with
//! `receive.advertisePushOptions=true`): the check is made in
//! reference-transaction's `prepared` state, under the ref's lock, and a
//! raise returns only once every older push that passed that check has
//! committed or aborted — see the script for the argument. The raise is a
//! push of `refs/berth/fence/<agent>` (a blob holding the token) and needs
//! the hook's `berth-fence: ok` answer.
//!
//! What holds without the hook: a server that does not advertise push
//! options refuses nothing — berth does not push there under a lease at all
//! ([`Error::ForgeUnfenced`], nothing sent), and a takeover's raise fails
//! the same way, so a worker does not take an agent over on an unfenced
//! server (the agent waits, the error saying how to set the server up). A
//! server that takes push options but runs no hook accepts a fenced push
//! unchecked (berth warns, after the fact) and fails every raise: no
//! takeover goes on there either. A push made with no lease (a person's
//! `berth agent run`, a merge, a sync) carries no token and is not fenced.

use std::io::Write;

use git2::Repository;

use crate::Worktrees;
use crate::error::{self, Error, Op, Result};
use crate::forge::open_forge;
use crate::forge_remote::Forge;
use crate::lock::RepoLock;
use crate::names::{AgentName, ProjectName};

/// The push option that carries a token to a server's hook.
pub(crate) const PUSH_OPTION: &str = "berth-fence";

/// Where a directory forge keeps each agent's highest token.
const FENCE_DIR: &str = "berth-fence";

/// A lease's fencing token, as the forge sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The agent the lease is of.
    pub agent: AgentName,
    /// The lease's token (grows at every change of holder).
    pub token: u64,
}

impl Fence {
    /// The push option a server's hook reads.
    pub(crate) fn push_option(&self) -> String {
        format!("{PUSH_OPTION}={}:{}", self.agent, self.token)
    }

    /// The server's ref a raise pushes.
    pub(crate) fn refname(&self) -> String {
        format!("refs/berth/fence/{}", self.agent)
    }

    /// What the hook answers when it took this token.
    pub(crate) fn accepted_line(&self) -> String {
        format!("{PUSH_OPTION}: ok {} {}", self.agent, self.token)
    }

    /// The stale refusal in the hook's answer for this fence: the highest
    /// token the server has seen.
    pub(crate) fn stale_in(&self, said: &str) -> Option<u64> {
        let prefix = format!("{PUSH_OPTION}: stale {} {} ", self.agent, self.token);
        said.lines().find_map(|l| {
            l.trim()
                .strip_prefix(&prefix)
                .and_then(|rest| rest.trim().parse().ok())
        })
    }
}

/// The highest token directory forge `repo` has seen for `agent` (0: none).
fn recorded(repo: &Repository, agent: &AgentName, op: Op) -> Result<u64> {
    let path = repo.path().join(FENCE_DIR).join(agent.as_str());
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().map_err(|_| Error::Tampered {
            op,
            path,
            expected: "a fencing token (a number)".to_owned(),
            found: text.chars().take(40).collect(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(error::io(op, &path)(e)),
    }
}

/// Records `token` as the highest for `agent` in directory forge `repo`
/// (written beside and renamed over: never half a number).
fn record(repo: &Repository, agent: &AgentName, token: u64, op: Op) -> Result<()> {
    let dir = repo.path().join(FENCE_DIR);
    std::fs::create_dir_all(&dir).map_err(error::io(op, &dir))?;
    let mut file = tempfile::NamedTempFile::new_in(&dir).map_err(error::io(op, &dir))?;
    writeln!(file, "{token}").map_err(error::io(op, &dir))?;
    let path = dir.join(agent.as_str());
    file.persist(&path)
        .map_err(|e| error::io(op, &path)(e.error))?;
    Ok(())
}

/// The directory forge's check before a fenced ref update (call under the
/// forge's writer lock): a token below the highest seen is refused, a higher
/// one recorded.
pub(crate) fn check_directory(repo: &Repository, fence: &Fence, op: Op) -> Result<()> {
    let current = recorded(repo, &fence.agent, op)?;
    if fence.token < current {
        return Err(Error::ForgeFenced {
            agent: fence.agent.to_string(),
            token: fence.token,
            current,
            forge: repo.path().display().to_string(),
        });
    }
    if fence.token > current {
        record(repo, &fence.agent, fence.token, op)?;
    }
    Ok(())
}

impl Worktrees {
    /// Raises `fence.agent`'s token at the project's forge to `fence.token`
    /// (a takeover, before it reads the forge): from then on the forge
    /// refuses a push carrying a lower one. Returns the token the forge had
    /// seen before (0: none; always 0 for a server, which keeps its own).
    /// A token below the forge's is [`Error::ForgeFenced`]: this lease is
    /// itself stale.
    pub fn raise_fence(&self, project: &ProjectName, fence: &Fence) -> Result<u64> {
        let op = Op::RaiseFence;
        let _lock = RepoLock::acquire(&self.layout.forge_lock(project))?;
        let forge = open_forge(&self.layout, project, op)?;
        match Forge::of(&forge, op)? {
            Forge::Directory => {
                let before = recorded(&forge, &fence.agent, op)?;
                check_directory(&forge, fence, op)?;
                tracing::info!(project = %project, agent = %fence.agent, token = fence.token, before, "fence raised at the forge");
                Ok(before)
            }
            server @ Forge::Http { .. } => {
                server.raise_on_server(&forge, fence, op)?;
                Ok(0)
            }
        }
    }
}
