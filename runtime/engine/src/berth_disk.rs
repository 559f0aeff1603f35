//! The berth's own disk, as the engine runs it: made and mounted at `up`
//! before the worktree is provisioned, taken away at `down` once the
//! worktree is recycled, and found again by reconcile after a crash.
//!
//! When berth is root, each berth's directory
//! (`<state>/berths/<project>/<agent>`, holding its worktree, its agent
//! repository and a runner berth's `$HOME` and `/tmp`) is a loop-mounted ext4 image of `[sandbox] disk` bytes and
//! `disk_inodes` files, kept at `<state>/disks/<project>/<agent>.img`
//! ([`berth_sandbox::disk`]). A container and a runner exec see the same
//! directory, so one bound serves both modes. Where berth cannot make one,
//! the berth comes up unbounded and says so, unless `disk_required`.
//!
//! Order matters at both ends: the disk is mounted before provisioning (the
//! repository and the worktree are created inside it) and unmounted only
//! after the container is gone, the execs are killed and the worktree is
//! recycled; the store never lives on it.
//!
//! A new disk is a copy of a template formatted once per size, inode count
//! and e2fsprogs, kept in `<state>/disk-templates` (see
//! [`berth_sandbox::disk`]); `mkfs.ext4` runs per berth only where no
//! template can be used.

use std::path::{Path, PathBuf};

use berth_sandbox::disk::{self, Attached, DiskSpec};
use serde::Serialize;

use crate::Engine;
use crate::agents::Agent;
use crate::config::{ByteSize, ProjectConfig};
use crate::error::{EngineError, Result};

/// The berth's disk as `up` settled it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DiskOutcome {
    /// A disk of its own is mounted at the berth's directory.
    Own {
        attached: Attached,
        /// What is free on it, before the checkout.
        free_bytes: u64,
    },
    /// No disk of its own: what the agent writes counts against the host's
    /// disk. The note says why and what to do.
    Unbounded { note: String },
}

/// What reconcile did with one berth's disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReconciledDisk {
    pub project: String,
    pub agent: String,
    /// The berth's directory.
    pub mount_point: PathBuf,
    /// `removed`: no worktree recorded for it, unmounted and deleted;
    /// `remounted`: a worktree recorded on it, mounted again (after a reboot).
    pub outcome: &'static str,
}

/// What `berth doctor` says about the berths' disks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiskDoctor {
    /// Why no berth gets a disk of its own on this host (and what to do);
    /// `None` when they do.
    pub unbounded: Option<String>,
    /// Berths with a worktree that is not on a disk of their own although
    /// the host could give them one (made before, or while berth was not
    /// root): `(project, agent)`.
    pub without_disk: Vec<(String, String)>,
    /// Berths whose disk image is there but not mounted (after a reboot):
    /// `berth reconcile` mounts them again.
    pub unmounted: Vec<(String, String)>,
}

/// `<state>/disks/<project>/<agent>.img`: berth's own file, never on a path
/// an agent can name.
pub(crate) fn image_path(state_root: &Path, project: &str, agent: &str) -> PathBuf {
    state_root
        .join("disks")
        .join(project)
        .join(format!("{agent}.img"))
}

/// `<state>/disk-templates`: the formatted images berths' disks are copied
/// from (one per size, inode count and e2fsprogs), berth's alone (0700).
pub(crate) fn templates_dir(state_root: &Path) -> PathBuf {
    state_root.join("disk-templates")
}

/// `<state>/berths/<project>/<agent>`, the berth's directory.
pub(crate) fn berth_dir(state_root: &Path, project: &str, agent: &str) -> PathBuf {
    state_root.join("berths").join(project).join(agent)
}

/// The files the berth's disk holds: `[sandbox] disk_inodes`, at most one
/// per 8 KiB of `disk` (ext4 refuses inode tables that crowd out the data:
/// the default count on a small disk).
pub(crate) fn disk_inodes(config: &ProjectConfig) -> u64 {
    config
        .sandbox
        .disk_inodes
        .min(config.sandbox.disk.bytes() / 8192)
}

/// Where a runner berth's residents listen (as `BerthPlaces::residents`).
pub(crate) fn residents_dir(state_root: &Path, project: &str, agent: &str) -> PathBuf {
    state_root.join("residents").join(project).join(agent)
}

/// The plain words for a berth without a disk of its own.
pub(crate) fn unbounded_note(why: &str) -> String {
    format!(
        "disk use of /work is not limited: what the agent writes to its worktree and repository (and, in runner mode, to its $HOME and /tmp) counts against this host's disk ({why})"
    )
}

/// Releases every berth disk mounted under `state_root` (unmounted, images
/// deleted): for a test's state directory before it is removed, and for a
/// person clearing a state directory by hand. Returns the mount points.
pub fn release_disks_under(state_root: &Path) -> Vec<PathBuf> {
    let berths = state_root.join("berths");
    let mut released = Vec::new();
    for entry in disk::mounts_under(&berths).unwrap_or_default() {
        let point = entry.mount_point;
        let (Some(agent), Some(project)) = (
            point.file_name().and_then(|n| n.to_str()),
            point
                .parent()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str()),
        ) else {
            continue;
        };
        let image = image_path(state_root, project, agent);
        let scope = berth_sandbox::provider::cgroup_scope(
            &berth_sandbox::provider::instance_of(state_root),
            project,
        );
        let _ = berth_sandbox::runner::end_berth_processes(
            &residents_dir(state_root, project, agent),
            &scope,
            agent,
        );
        if disk::release(&image, &point).is_ok() {
            released.push(point);
        }
    }
    released
}

impl Engine {
    /// Mounts the berth's own disk at its directory (making it when there is
    /// none). Where it cannot be made the berth is unbounded, said in the
    /// note — an error only with `[sandbox] disk_required = true`.
    pub(crate) async fn settle_disk(
        &self,
        agent: &Agent,
        config: &ProjectConfig,
    ) -> Result<DiskOutcome> {
        let unbounded = |why: String| -> Result<DiskOutcome> {
            if config.sandbox.disk_required {
                Err(EngineError::DiskUnavailable {
                    agent: agent.name.clone(),
                    why,
                })
            } else {
                Ok(DiskOutcome::Unbounded {
                    note: unbounded_note(&why),
                })
            }
        };
        if let Some(why) = disk::unavailable() {
            return unbounded(why);
        }
        let spec = DiskSpec {
            image: image_path(self.state.root(), &agent.project, &agent.name),
            mount_point: berth_dir(self.state.root(), &agent.project, &agent.name),
            bytes: config.sandbox.disk.bytes(),
            inodes: disk_inodes(config),
            templates: Some(templates_dir(self.state.root())),
        };
        let point = spec.mount_point.clone();
        let attached = tokio::task::spawn_blocking(move || {
            disk::attach(&spec).and_then(|a| disk::usage(&spec.mount_point).map(|u| (a, u)))
        })
        .await
        .map_err(EngineError::interrupted("mounting the berth's disk"))?;
        match attached {
            Ok((attached, usage)) => {
                tracing::info!(agent = %agent.name, mount_point = %point.display(), ?attached, bytes = usage.bytes_total, files = usage.files_total, "the berth's own disk is mounted");
                Ok(DiskOutcome::Own {
                    attached,
                    free_bytes: usage.bytes_free,
                })
            }
            Err(e) => {
                tracing::warn!(agent = %agent.name, error = %e, "the berth gets no disk of its own");
                unbounded(e.to_string())
            }
        }
    }

    /// The error of a provisioning that failed on the berth's own disk: a
    /// checkout larger than the room on it (measured before a byte was
    /// written) or one that ran out of room names `[sandbox] disk` and the
    /// size needed. A disk this `up` made holds nothing else and goes.
    pub(crate) async fn provision_failed_on_disk(
        &self,
        agent: &Agent,
        config: &ProjectConfig,
        disk: &DiskOutcome,
        error: EngineError,
    ) -> EngineError {
        let DiskOutcome::Own {
            attached,
            free_bytes,
        } = disk
        else {
            return error;
        };
        let too_small = match &error {
            EngineError::Worktrees(berth_worktrees::Error::CheckoutTooLarge {
                refname,
                size,
                limit,
                ..
            }) if limit == free_bytes && *limit < config.git.max_checkout_bytes => {
                Some((refname.clone(), *size))
            }
            other if other.to_string().contains("No space left on device") => Some((
                crate::agents::branch_for(&agent.name, agent.task.as_deref()),
                free_bytes.saturating_add(1),
            )),
            _ => None,
        };
        if matches!(attached, Attached::Created(_))
            && let Err(e) = self.release_disk(&agent.project, &agent.name).await
        {
            tracing::warn!(agent = %agent.name, error = %e, "removing the disk of a berth that did not come up failed; reconcile removes it");
        }
        match too_small {
            Some((refname, needed)) => EngineError::DiskTooSmall {
                agent: agent.name.clone(),
                why: format!(
                    "[sandbox] disk = \"{}\" leaves {} free, and checking out {refname} needs at least {}; raise [sandbox] disk in the project's berth.toml to at least {} (`berth down {}` first when it kept its worktree: a disk keeps its size) and run `berth up` again",
                    config.sandbox.disk,
                    shown_size(*free_bytes),
                    shown_size(needed),
                    suggested_disk(needed),
                    agent.name,
                ),
            },
            None => error,
        }
    }

    /// Unmounts and deletes the berth's own disk (nothing when it has none).
    /// Run once its container is gone and its worktree recycled.
    pub(crate) async fn release_disk(&self, project: &str, agent: &str) -> Result<()> {
        let root = self.state.root();
        let image = image_path(root, project, agent);
        let point = berth_dir(root, project, agent);
        let what = point.clone();
        let residents = residents_dir(root, project, agent);
        let scope = berth_sandbox::provider::cgroup_scope(
            &berth_sandbox::provider::instance_of(root),
            project,
        );
        let agent_name = agent.to_string();
        let released = tokio::task::spawn_blocking(move || {
            // Nothing of the berth may still hold its filesystem.
            if let Err(e) = berth_sandbox::runner::end_berth_processes(&residents, &scope, &agent_name) {
                tracing::warn!(agent = %agent_name, error = %e, "could not end the berth's processes before releasing its disk");
            }
            disk::release(&image, &point)
        })
            .await
            .map_err(EngineError::interrupted("releasing the berth's disk"))?
            .map_err(EngineError::disk("releasing the berth's disk"))?;
        if released.unmounted || released.image_removed {
            tracing::info!(agent, mount_point = %what.display(), ?released, "the berth's own disk is gone");
        }
        if released.lazily {
            tracing::warn!(agent, mount_point = %what.display(), "the berth's disk was still in use: detached lazily, it goes with the last process using it");
        }
        Ok(())
    }

    /// Whether berths get a disk of their own here, and which berths with a
    /// worktree have none.
    pub async fn disk_doctor(&self) -> Result<DiskDoctor> {
        let unbounded = disk::unavailable().map(|why| unbounded_note(&why));
        let mut without_disk = Vec::new();
        let mut unmounted = Vec::new();
        if unbounded.is_none() {
            for a in self.agents().await? {
                if a.worktree.is_none() {
                    continue;
                }
                let point = berth_dir(self.state.root(), &a.project, &a.name);
                if point.is_dir()
                    && disk::mounted_at(&point)
                        .map_err(EngineError::disk("reading the mount table"))?
                        .is_none()
                {
                    if image_path(self.state.root(), &a.project, &a.name).is_file() {
                        unmounted.push((a.project, a.name));
                    } else {
                        without_disk.push((a.project, a.name));
                    }
                }
            }
        }
        Ok(DiskDoctor {
            unbounded,
            without_disk,
            unmounted,
        })
    }

    /// Brings the berths' disks in line with the store after a crash or a
    /// reboot: a disk whose agent has no worktree recorded is unmounted and
    /// deleted (a `down` that died before it got there); the image of an
    /// agent with a worktree recorded is mounted again when it is not.
    pub async fn reconcile_disks(&self) -> Result<Vec<ReconciledDisk>> {
        let root = self.state.root().to_path_buf();
        let agents = self.agents().await?;
        let with_worktree: std::collections::BTreeSet<(String, String)> = agents
            .iter()
            .filter(|a| a.worktree.is_some())
            .map(|a| (a.project.clone(), a.name.clone()))
            .collect();
        // Every disk berth knows of: mounted at a berth's directory, or an
        // image in `<state>/disks`.
        let mut found: std::collections::BTreeSet<(String, String)> = Default::default();
        for entry in disk::mounts_under(&root.join("berths")).unwrap_or_default() {
            let point = entry.mount_point;
            if let (Some(agent), Some(project)) = (
                point.file_name().and_then(|n| n.to_str()),
                point
                    .parent()
                    .and_then(|p| p.file_name())
                    .and_then(|n| n.to_str()),
            ) && berth_dir(&root, project, agent) == point
            {
                found.insert((project.to_string(), agent.to_string()));
            }
        }
        for project in read_names(&root.join("disks")) {
            for image in read_names(&root.join("disks").join(&project)) {
                if let Some(agent) = image.strip_suffix(".img") {
                    found.insert((project.clone(), agent.to_string()));
                }
            }
        }
        let mut report = Vec::new();
        for (project, agent) in found {
            let point = berth_dir(&root, &project, &agent);
            if !with_worktree.contains(&(project.clone(), agent.clone())) {
                self.release_disk(&project, &agent).await?;
                report.push(ReconciledDisk {
                    project,
                    agent,
                    mount_point: point,
                    outcome: "removed",
                });
                continue;
            }
            let mounted = disk::mounted_at(&point)
                .map_err(EngineError::disk("reading the mount table"))?
                .is_some();
            let Some(a) = agents
                .iter()
                .find(|a| a.name == agent && a.project == project)
            else {
                continue;
            };
            if !mounted && disk::unavailable().is_none() {
                let loaded = self.load_project(&project).await?;
                if let DiskOutcome::Own {
                    attached: Attached::Remounted,
                    ..
                } = self.settle_disk(a, &loaded.config).await?
                {
                    report.push(ReconciledDisk {
                        project,
                        agent,
                        mount_point: point,
                        outcome: "remounted",
                    });
                }
            }
        }
        Ok(report)
    }
}

/// The UTF-8 names in `dir` (none when it is missing).
fn read_names(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// `free` as a size a person reads.
pub(crate) fn shown_size(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
    } else {
        format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
    }
}

/// The `[sandbox] disk` to suggest for a checkout of `needed` bytes: twice
/// what it needs (room to build), rounded up to a whole GiB, or MiB below one.
pub(crate) fn suggested_disk(needed: u64) -> ByteSize {
    let want = needed.saturating_mul(2).max(crate::config::MIN_DISK_BYTES);
    let unit: u64 = if want >= 1 << 30 { 1 << 30 } else { 1 << 20 };
    ByteSize(want.div_ceil(unit).saturating_mul(unit))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_leave_room_and_round_up() {
        for (needed, want) in [
            (1, "32MiB"),
            (40 << 20, "80MiB"),
            ((600 << 20) + 1, "2GiB"),
            (3 << 30, "6GiB"),
        ] {
            assert_eq!(suggested_disk(needed).to_string(), want, "{needed}");
        }
    }
}
