//! Who owns an agent's files, and libgit2's owner check.
//!
//! In mounted mode the container runs as a non-root uid (default 1000) that must
//! own its worktree and its repository, while berth runs as root (or as the
//! user). libgit2 then refuses to open those repositories ("repository path …
//! is not owned by current user"), even as root: it applies git's
//! `safe.directory` rule. git2 offers no per-repository way around it — the
//! exemption is either a process-wide switch or `safe.directory` entries in the
//! *global* git configuration, which would mean rewriting the operator's
//! `~/.gitconfig` (or redirecting libgit2's global config search path, also
//! process-wide).
//!
//! berth takes the switch, once, in [`allow_agent_owned_repositories`], and
//! narrows its effect itself:
//! - every repository berth opens under the state directory is found through
//!   [`crate::Layout`] from validated names, never discovered;
//! - the only repository berth opens outside the state directory, an import
//!   source, is checked by [`check_source_owner`] with libgit2's own rule (owned
//!   by the effective uid), so turning the switch off does not widen what berth
//!   reads there.
//!
//! What the check protects git from — configuration that runs programs
//! (`core.fsmonitor`, hooks, pagers) — does not exist in libgit2, which runs
//! none; the agent-controlled configuration that libgit2 *does* honour (`url.*.
//! insteadOf` on remotes) is kept out of reach by never using a remote of an
//! agent repository (see `push.rs`).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Once;

use crate::error::{Error, Op, Result};

/// A uid and gid to own an agent's worktree and repository (mounted mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The numeric user id.
    pub uid: u32,
    /// The numeric group id.
    pub gid: u32,
}

impl Owner {
    /// The uid and gid owning `path` (not following a symlink there).
    pub(crate) fn of(path: &Path) -> std::io::Result<Owner> {
        let meta = std::fs::symlink_metadata(path)?;
        Ok(Owner {
            uid: meta.uid(),
            gid: meta.gid(),
        })
    }
}

/// The effective uid of this process.
pub(crate) fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

static OWNER_VALIDATION_OFF: Once = Once::new();

/// Turns off libgit2's repository owner check for this process, once.
///
/// Called by [`crate::Worktrees::open`], before berth opens any repository,
/// because an agent repository chowned to the container's uid is otherwise
/// unreadable to berth. See the module documentation for why this is the
/// narrowest route git2 offers and how berth compensates.
pub(crate) fn allow_agent_owned_repositories() {
    OWNER_VALIDATION_OFF.call_once(|| {
        // SAFETY: git2 marks global libgit2 options unsafe because they are not
        // synchronised with concurrent libgit2 calls. This sets one boolean
        // that libgit2 only reads while opening a repository, and `call_once`
        // makes this the only write in the process.
        let result = unsafe { git2::opts::set_verify_owner_validation(false) };
        if let Err(e) = result {
            tracing::error!(error = %e, "could not turn off libgit2's owner validation");
        }
    });
}

/// libgit2's owner rule for a repository outside the state directory: its
/// directory must belong to the effective uid.
pub(crate) fn check_source_owner(op: Op, path: &Path) -> Result<()> {
    let owner = Owner::of(path).map_err(crate::error::io(op, path))?;
    let current = current_uid();
    if owner.uid != current {
        return Err(Error::UntrustedOwner {
            op,
            path: path.to_path_buf(),
            owner: owner.uid,
            current,
        });
    }
    Ok(())
}
