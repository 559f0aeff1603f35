//! One cgroup per exec, so every process it started — `setsid` daemons
//! included — can be found and killed later, by this berth process or another
//! one (`berth down`, crash recovery, `berth serve`).
//!
//! The kill uses cgroup2's `cgroup.kill`. On this machine kind cgroup v1 holds
//! the controllers and cgroup2 is mounted without any at
//! `/sys/fs/cgroup/unified`: enough for `cgroup.kill` and `cgroup.procs`. The
//! limits (`pids.max`, `memory.limit_in_bytes`) come from the v1 `pids` and
//! `memory` hierarchies when they are there and writable. Every exec's cgroup
//! is `berth/<project>/<agent>/<action>` in each hierarchy. The runner makes
//! them (it alone knows the names and removes them); the shim joins them
//! before anything else, so its children are born inside.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::ConfineError;

/// Where the hierarchies are mounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgroupRoots {
    /// A cgroup2 hierarchy (with `cgroup.kill`, Linux 5.14+).
    pub unified: PathBuf,
    /// The v1 `pids` hierarchy.
    pub pids: PathBuf,
    /// The v1 `memory` hierarchy.
    pub memory: PathBuf,
}

impl Default for CgroupRoots {
    fn default() -> Self {
        let unified = if Path::new("/sys/fs/cgroup/unified/cgroup.procs").exists() {
            "/sys/fs/cgroup/unified"
        } else {
            "/sys/fs/cgroup"
        };
        CgroupRoots {
            unified: unified.into(),
            pids: "/sys/fs/cgroup/pids".into(),
            memory: "/sys/fs/cgroup/memory".into(),
        }
    }
}

/// The limits an exec's cgroups carry.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CgroupLimits {
    /// Processes (and threads) at once, in the v1 `pids` cgroup.
    pub processes: Option<u64>,
    /// Bytes of memory, in the v1 `memory` cgroup.
    pub memory: Option<u64>,
}

/// Checks one name component (project, agent or action): it becomes a
/// directory name, so nothing that walks elsewhere.
pub fn valid_component(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 128
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+@".contains(&b))
}

/// The berth's directory (`berth/<project>/<agent>`) below a hierarchy's root.
pub fn berth_dir(root: &Path, project: &str, agent: &str) -> PathBuf {
    root.join("berth").join(project).join(agent)
}

/// The berth exec cgroup a process is in, read from its `/proc/<pid>/cgroup`
/// (`hierarchy-id:controllers:path` lines): the first path under `berth/`
/// in any hierarchy (a path seen from a cgroup namespace may begin with
/// `/..`), or `None`. `berth serve` refuses such a peer on its socket.
pub fn exec_cgroup_in(proc_cgroup: &str) -> Option<&str> {
    proc_cgroup
        .lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .find(|path| {
            let mut rest = path.trim_start_matches('/');
            while let Some(r) = rest.strip_prefix("../") {
                rest = r;
            }
            rest.starts_with("berth/")
        })
}

/// The cgroups of one exec, made by [`ExecCgroups::create`].
#[derive(Debug, Default)]
pub struct ExecCgroups {
    /// The cgroup2 directory with `cgroup.kill`, when one could be made.
    pub unified: Option<PathBuf>,
    /// The v1 directories made for limits.
    pub v1: Vec<PathBuf>,
    /// What could not be made, in words for the outcome.
    pub missing: Vec<String>,
}

fn cg_err(op: &'static str, path: &Path, source: std::io::Error) -> ConfineError {
    ConfineError::Cgroup {
        op,
        path: path.to_path_buf(),
        source,
    }
}

impl ExecCgroups {
    /// Makes `berth/<project>/<agent>/<action>` in each hierarchy that is
    /// there and writable, and sets the limits. Nothing here is fatal: what
    /// could not be made is listed in `missing` (the PID namespace still ends
    /// the tree; rlimits still bound processes for a non-root user).
    pub fn create(
        roots: &CgroupRoots,
        project: &str,
        agent: &str,
        action: &str,
        limits: CgroupLimits,
    ) -> ExecCgroups {
        let mut made = ExecCgroups::default();
        if ![project, agent, action].iter().all(|c| valid_component(c)) {
            made.missing.push(format!(
                "cgroup name {project}/{agent}/{action} is not a plain name"
            ));
            return made;
        }
        let dir = berth_dir(&roots.unified, project, agent).join(action);
        match fs::create_dir_all(&dir) {
            Ok(()) if dir.join("cgroup.kill").exists() => made.unified = Some(dir),
            Ok(()) => {
                let _ = fs::remove_dir(&dir);
                made.missing.push(format!(
                    "{} has no cgroup.kill (Linux 5.14+): background processes are ended by the PID namespace only",
                    roots.unified.display()
                ));
            }
            Err(e) => made.missing.push(format!(
                "no cgroup in {} ({e}): background processes are ended by the PID namespace only",
                roots.unified.display()
            )),
        }
        let v1 = [
            (&roots.pids, limits.processes, "pids.max", "processes"),
            (
                &roots.memory,
                limits.memory,
                "memory.limit_in_bytes",
                "memory",
            ),
        ];
        for (root, limit, file, what) in v1 {
            let Some(limit) = limit else { continue };
            let dir = berth_dir(root, project, agent).join(action);
            let result = fs::create_dir_all(&dir)
                .and_then(|()| fs::write(dir.join(file), limit.to_string()));
            match result {
                Ok(()) => made.v1.push(dir),
                Err(e) => {
                    let _ = fs::remove_dir(&dir);
                    made.missing.push(format!(
                        "the {what} limit has no v1 cgroup in {} ({e})",
                        root.display()
                    ));
                }
            }
        }
        made
    }

    /// Every directory the shim must join.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.unified.iter().chain(self.v1.iter()).cloned().collect()
    }

    /// Kills every process in the exec's cgroup2 directory. `Ok(false)` when
    /// there is none to kill through (nothing was claimed).
    pub fn kill(&self) -> Result<bool, ConfineError> {
        match &self.unified {
            Some(dir) => kill_dir(dir).map(|()| true),
            None => Ok(false),
        }
    }

    /// Waits (bounded) for the cgroups to empty, then removes them.
    pub fn remove(&self, wait: Duration) {
        for dir in self.unified.iter().chain(self.v1.iter()) {
            remove_when_empty(dir, wait);
        }
    }
}

fn kill_dir(dir: &Path) -> Result<(), ConfineError> {
    let file = dir.join("cgroup.kill");
    fs::write(&file, "1").map_err(|e| cg_err("write cgroup.kill", dir, e))
}

/// How long to sleep between looks at a v1 cgroup's `cgroup.procs` (it
/// has no `cgroup.events` to wait on).
const V1_POLL: Duration = Duration::from_millis(1);

/// Removes `dir` as soon as it is empty, waiting at most `wait`. An exec's
/// cgroup is usually empty already, or about to be: its PID 1 is tearing
/// its namespaces down. A cgroup2 directory says when it empties
/// (`cgroup.events` turns `populated 0` and wakes a `poll` for
/// `POLLPRI`), so the wait ends the moment it does; a fixed sleep between
/// looks cost every exec up to that sleep (5 ms) after its command ended.
fn remove_when_empty(dir: &Path, wait: Duration) {
    let until = Instant::now() + wait;
    // Whether the last wait ended on an empty cgroup: the removal right
    // after it should succeed, and a second failure sleeps instead of
    // spinning.
    let mut emptied = false;
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            // Busy: processes are still in it.
            Err(e) if Instant::now() >= until => {
                tracing::debug!(dir = %dir.display(), error = %e, "cgroup left behind");
                return;
            }
            Err(_) => {}
        }
        if emptied || !wait_unpopulated(dir, until) {
            // No `cgroup.events` (a v1 hierarchy), or still busy once
            // empty: look again shortly.
            std::thread::sleep(V1_POLL);
            emptied = false;
        } else {
            emptied = true;
        }
    }
}

/// Waits until `dir`'s `cgroup.events` says `populated 0`, or `until`.
/// False when there is no such file to wait on.
fn wait_unpopulated(dir: &Path, until: Instant) -> bool {
    use std::io::{Read, Seek};
    use std::os::fd::AsRawFd;
    let Ok(mut events) = fs::File::open(dir.join("cgroup.events")) else {
        return false;
    };
    let mut text = String::new();
    loop {
        text.clear();
        if events.rewind().is_err() || events.read_to_string(&mut text).is_err() {
            return false;
        }
        if text.lines().any(|l| l == "populated 0") {
            return true;
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        let mut fd = libc::pollfd {
            fd: events.as_raw_fd(),
            events: libc::POLLPRI,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: polling one descriptor we own, for at most `ms`.
        if unsafe { libc::poll(&mut fd, 1, ms) } < 0
            && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted
        {
            return false;
        }
    }
}

/// Kills every exec cgroup of one berth (`berth/<project>/<agent>/*` in the
/// cgroup2 hierarchy) and removes them with their v1 twins. Returns the
/// cgroups it killed through `cgroup.kill`.
pub fn kill_berth(
    roots: &CgroupRoots,
    project: &str,
    agent: &str,
    wait: Duration,
) -> Result<Vec<PathBuf>, ConfineError> {
    let dir = berth_dir(&roots.unified, project, agent);
    let entries = match fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(cg_err("list", &dir, e)),
    };
    let mut killed = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        kill_dir(&path)?;
        killed.push(path);
    }
    for path in &killed {
        remove_when_empty(path, wait);
        if let Some(action) = path.file_name() {
            for root in [&roots.pids, &roots.memory] {
                remove_when_empty(&berth_dir(root, project, agent).join(action), wait);
            }
        }
    }
    Ok(killed)
}

/// Moves the calling process into each directory (writing `0` to
/// `cgroup.procs` means "me").
pub fn join(dirs: &[PathBuf]) -> Result<(), ConfineError> {
    for dir in dirs {
        fs::write(dir.join("cgroup.procs"), "0").map_err(|e| cg_err("join", dir, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_under_berth_is_in_an_exec_cgroup() {
        let exec = "12:pids:/berth/p@i/a/x\n0::/berth/p@i/a/x\n";
        assert_eq!(exec_cgroup_in(exec), Some("/berth/p@i/a/x"));
        assert_eq!(
            exec_cgroup_in("0::/../berth/p@i/a/x\n"),
            Some("/../berth/p@i/a/x")
        );
        for other in [
            "0::/user.slice/user-0.slice/session-1.scope\n",
            "0::/\n",
            "0::/berthx/a\n",
            "5:memory:/system.slice/berth.service\n",
            "",
        ] {
            assert_eq!(exec_cgroup_in(other), None, "{other:?}");
        }
    }

    #[test]
    fn names_are_plain_components() {
        for (name, ok) in [
            ("dev-1", true),
            ("exec-42-7", true),
            ("a.b_c+d@e", true),
            ("", false),
            (".", false),
            ("..", false),
            ("a/b", false),
            ("a b", false),
        ] {
            assert_eq!(valid_component(name), ok, "{name:?}");
        }
    }
}
