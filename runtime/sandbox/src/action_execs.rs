//! Finding a runner exec by the action it runs, from any berth process.
//!
//! `berth cancel` (or `berth serve`'s Stop button) runs in another process
//! than the one executing the action, so the exec must be findable by the
//! action id alone:
//!
//! - **Its cgroup.** An exec that runs an action gets the cgroup
//!   `berth/<project>/<agent>/action-<id>` in each hierarchy (instead of
//!   `exec-<pid>-<n>`). The kill writes the cgroup2 `cgroup.kill` when there
//!   is one, and kills every pid listed in each hierarchy's `cgroup.procs`
//!   until it is empty (cgroup v1 has no `cgroup.kill`).
//! - **Its process group.** Without a cgroup2 directory to kill through
//!   (berth is not root, nothing delegated, a kernel without `cgroup.kill`)
//!   the executing process writes a record, `<dir>/<id>`, holding
//!   the shim's pid (its process group, and the PID namespace that dies with
//!   it) and its start time, in berth's private state directory — never a
//!   path an agent can write. The kill checks the start time, so a reused
//!   pid is never signalled.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use berth_confine::cgroup::{CgroupRoots, berth_dir};
use nix::sys::signal::Signal;
use nix::unistd::Pid;

/// The cgroup name of the exec that runs `action`.
pub fn cgroup_component(action: &str) -> String {
    format!("action-{action}")
}

/// How long a cancel keeps killing what a cgroup holds before it reports
/// that processes remain.
const EMPTY_WAIT: Duration = Duration::from_secs(3);

/// What one cancel found and killed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Killed {
    /// The exec cgroups killed.
    pub cgroups: Vec<PathBuf>,
    /// The recorded process group killed (the shim's pid), when there was a
    /// live one.
    pub process_group: Option<i32>,
}

impl Killed {
    pub fn found(&self) -> bool {
        !self.cgroups.is_empty() || self.process_group.is_some()
    }
}

/// The error of a cancel that found the exec and could not end it.
#[derive(Debug, thiserror::Error)]
#[error("{what} {}: {message}", path.display())]
pub struct KillError {
    what: &'static str,
    path: PathBuf,
    message: String,
}

/// Kills the exec of `action` in the berth `project`/`agent`: its cgroups
/// (every hierarchy under `roots`) and its recorded process group in
/// `records`. Blocking: it waits (bounded) for the cgroups to empty.
pub fn kill_action(
    roots: &CgroupRoots,
    project: &str,
    agent: &str,
    records: Option<&Path>,
    action: &str,
) -> Result<Killed, KillError> {
    let mut killed = Killed::default();
    // The recorded group first: the shim's death ends its PID namespace.
    if let Some(dir) = records
        && let Some((pid, start)) = read_record(&dir.join(action))
        && pid > 1
        && process_start(pid.unsigned_abs()) == Some(start)
    {
        let _ = nix::sys::signal::killpg(Pid::from_raw(pid), Signal::SIGKILL);
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        killed.process_group = Some(pid);
    }
    let name = cgroup_component(action);
    for root in [&roots.unified, &roots.pids, &roots.memory] {
        let dir = berth_dir(root, project, agent).join(&name);
        if !dir.is_dir() {
            continue;
        }
        empty_cgroup(&dir)?;
        killed.cgroups.push(dir);
    }
    Ok(killed)
}

/// Kills everything in one cgroup until it is empty: `cgroup.kill` where
/// the kernel has it, and SIGKILL to each pid `cgroup.procs` lists (a fork
/// may add one between two reads, so again until none is left).
fn empty_cgroup(dir: &Path) -> Result<(), KillError> {
    let fail = |message: String| KillError {
        what: "kill the processes of cgroup",
        path: dir.to_path_buf(),
        message,
    };
    let until = Instant::now() + EMPTY_WAIT;
    loop {
        let procs = match std::fs::read_to_string(dir.join("cgroup.procs")) {
            Ok(procs) => procs,
            // Removed meanwhile: its exec ended.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(fail(e.to_string())),
        };
        // Only real pids: 0 or a negative number would signal a group
        // (this process's own, for 0).
        let pids: Vec<i32> = procs
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .filter(|pid| *pid > 1)
            .collect();
        if pids.is_empty() {
            return Ok(());
        }
        let kill_file = dir.join("cgroup.kill");
        if kill_file.exists() {
            let _ = std::fs::write(&kill_file, "1");
        }
        for pid in &pids {
            let _ = nix::sys::signal::kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        if Instant::now() >= until {
            return Err(fail(format!(
                "{} process(es) still there after {EMPTY_WAIT:?}",
                pids.len()
            )));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The record of a running exec's process group; removed when dropped.
#[derive(Debug)]
pub(crate) struct ExecRecord {
    path: PathBuf,
}

impl ExecRecord {
    /// The record of the exec running `action` (process group `pid`) in
    /// `dir`, when both are given; a failure is logged and leaves only the
    /// exec's cgroup to find it by.
    pub(crate) fn keep(dir: Option<&Path>, action: Option<&str>, pid: i32) -> Option<ExecRecord> {
        let (dir, action) = (dir?, action?);
        match ExecRecord::write(dir, action, pid) {
            Ok(record) => Some(record),
            Err(e) => {
                tracing::warn!(action, error = %e, "could not record the exec's process group");
                None
            }
        }
    }

    /// Writes `<dir>/<action>`: the shim's pid and its start time. The
    /// directory is made 0700 when missing.
    pub(crate) fn write(dir: &Path, action: &str, pid: i32) -> std::io::Result<ExecRecord> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
        let start = u32::try_from(pid)
            .ok()
            .and_then(process_start)
            .ok_or_else(|| std::io::Error::other(format!("process {pid} has no start time")))?;
        let path = dir.join(action);
        let partial = dir.join(format!(".{action}.partial"));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&partial)?;
        // One write: `writeln!` on an unbuffered file makes one per piece.
        file.write_all(format!("{pid} {start}\n").as_bytes())?;
        drop(file);
        std::fs::rename(&partial, &path)?;
        Ok(ExecRecord { path })
    }
}

impl Drop for ExecRecord {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn read_record(path: &Path) -> Option<(i32, u64)> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut parts = text.split_whitespace();
    let pid = parts.next()?.parse().ok()?;
    let start = parts.next()?.parse().ok()?;
    Some((pid, start))
}

/// Field 22 of `/proc/<pid>/stat`: start time in clock ticks since boot.
pub(crate) fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces; fields resume after its ')'.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_names_a_live_group_and_is_gone_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let records = dir.path().join("execs");
        let me = std::process::id() as i32;
        let record = ExecRecord::write(&records, "abc", me).unwrap();
        let (pid, start) = read_record(&records.join("abc")).unwrap();
        assert_eq!(pid, me);
        assert_eq!(Some(start), process_start(me as u32));
        drop(record);
        assert!(!records.join("abc").exists());
    }

    #[test]
    fn a_stale_record_kills_nothing() {
        let dir = tempfile::tempdir().unwrap();
        // This process, with another start time: a reused pid.
        std::fs::write(
            dir.path().join("abc"),
            format!("{} 1\n", std::process::id()),
        )
        .unwrap();
        let roots = CgroupRoots {
            unified: dir.path().join("none"),
            pids: dir.path().join("none"),
            memory: dir.path().join("none"),
        };
        let killed = kill_action(&roots, "p", "a", Some(dir.path()), "abc").unwrap();
        assert!(!killed.found(), "{killed:?}");
    }
}
