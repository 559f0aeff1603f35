//! The runner's bring-up and take-down on the host: the berth's private
//! `/tmp` and home made (0700) and given to its uid through the fd-relative
//! walk that follows no link an agent planted; at `down`, its running execs
//! killed (daemons included) and its `/tmp` emptied.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;
use std::sync::Arc;

use super::{ProviderError, ProviderResult, RunnerBerth};
use crate::{Runner, Sandbox};

/// Opens a runner berth off the async threads (giving a home to the
/// berth's uid walks all of it): [`crate::blocking_work`].
pub(crate) async fn open_runner_blocking(berth: &RunnerBerth) -> ProviderResult<Arc<dyn Sandbox>> {
    let berth = berth.clone();
    crate::blocking_work::spawn(move || open_runner(&berth))
        .await
        .map_err(|source| ProviderError::Interrupted {
            op: "opening a runner berth",
            source,
        })?
}

/// Opens a runner berth: its private directories first, then the runner.
pub fn open_runner(berth: &RunnerBerth) -> ProviderResult<Arc<dyn Sandbox>> {
    let config = &berth.config;
    let home = &config.home;
    let new_home = make_private_dir(home)?;
    if let Some(tmp) = &config.confinement.private_tmp {
        make_private_dir(tmp)?;
    }
    if let Some((uid, gid)) = config.confinement.uid {
        let owner = berth_worktrees::Owner { uid, gid };
        // The berth's own /tmp, whatever an earlier exec left in it; a home
        // made here (its disk was made again), or claimed at bring-up, is
        // the berth's too.
        if let Some(tmp) = &config.confinement.private_tmp {
            give_to_berth(tmp, owner)?;
        }
        if new_home || berth.claim_home {
            give_to_berth(home, owner)?;
        }
    }
    Ok(Arc::new(Runner::new(config.clone())?))
}

/// Kills the berth's running execs (and its resident) and empties its
/// private `/tmp`. Both are best effort (logged): the berth is going down
/// either way, and its next `up` starts from an empty `/tmp` only if this
/// one succeeded.
pub(crate) async fn close_runner(agent: &str, berth: &RunnerBerth) {
    if let Some(dir) = berth.config.confinement.resident.clone() {
        // Its resident leaves once its socket is gone (where no cgroup
        // reaches it); the cgroup kill below ends it at once as root.
        let _ = tokio::task::spawn_blocking(move || crate::runner::dismiss_residents(&dir)).await;
    }
    match crate::runner::kill_berth_execs(&berth.cgroup_scope, agent).await {
        Ok(killed) if !killed.is_empty() => {
            tracing::info!(
                agent,
                execs = killed.len(),
                "killed the berth's running execs"
            )
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(agent, error = %e, "could not kill the berth's execs"),
    }
    if let Some(tmp) = &berth.config.confinement.private_tmp
        && let Err(e) = std::fs::remove_dir_all(tmp)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(agent, error = %e, "could not empty the berth's /tmp");
    }
}

/// Makes `dir` (and its parents) 0700 when it is missing; whether it was.
fn make_private_dir(dir: &Path) -> ProviderResult<bool> {
    if dir.is_dir() {
        return Ok(false);
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|source| ProviderError::Io {
            op: "creating",
            path: dir.to_path_buf(),
            source,
        })?;
    Ok(true)
}

/// Gives a berth's directory (`<state>/<kind>/<project>/<agent>/…`, its
/// parent made by berth) and everything in it to `owner`.
fn give_to_berth(dir: &Path, owner: berth_worktrees::Owner) -> ProviderResult<()> {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(ProviderError::NotBerthDir {
            path: dir.to_path_buf(),
        });
    };
    berth_worktrees::chown_beneath(parent, Path::new(name), owner).map_err(|source| {
        ProviderError::Io {
            op: "giving to the berth's uid",
            path: dir.to_path_buf(),
            source,
        }
    })
}
