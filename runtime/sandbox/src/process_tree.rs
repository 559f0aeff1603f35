//! The processes one runner exec started, read from `/proc`, and how to signal
//! them.
//!
//! The exec's own process group catches ordinary background children
//! (`sleep 1000 &`, `(sleep 1000 &)`), so `killpg` does most of the work. Two
//! kinds of process leave the group: one that called `setsid`/`setpgid` while
//! its parent is still alive (still found through the parent links, so the tree
//! is snapshot before anything is killed), and one that did so *and* was
//! orphaned (reparented to init: no link back). The second kind is found only
//! if it still holds the exec's stdout or stderr pipe — which is exactly the
//! kind that would hang the exec — by scanning `/proc/*/fd` for the pipe's
//! inode. A daemon that closed its descriptors escapes; only a cgroup (the
//! Docker backend) contains it.
//!
//! berth does not make itself a child subreaper (`PR_SET_CHILD_SUBREAPER`),
//! which would keep orphans findable: the attribute is process-wide, every
//! orphan of every exec would then have to be reaped by berth, and reaping
//! with `waitpid(-1)` would steal exit statuses from tokio's own child
//! handling. Containment of daemons is the container's job.
//!
//! Pids are recorded with their start time and re-checked before each signal,
//! so a reused pid is never signalled. Zombies count as gone: they hold nothing
//! and cannot be killed (init on some hosts never reaps them).

use std::fs;
use std::os::fd::RawFd;

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;

/// A process, identified across pid reuse by its start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ProcId {
    pub pid: i32,
    pub start: u64,
}

/// The fields of `/proc/PID/stat` this module needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub start: u64,
    /// Zombie or dead: nothing left to kill.
    pub gone: bool,
}

impl Stat {
    fn id(&self) -> ProcId {
        ProcId {
            pid: self.pid,
            start: self.start,
        }
    }
}

/// Parses one `/proc/PID/stat` line. The command name is in parentheses and
/// may itself contain spaces and parentheses, so fields are counted from the
/// last `)`.
pub(crate) fn parse_stat(line: &str) -> Option<Stat> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let pid = line[..open].trim().parse().ok()?;
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    // rest[0] is field 3 (state); starttime is field 22.
    let state = rest.first()?;
    Some(Stat {
        pid,
        ppid: rest.get(1)?.parse().ok()?,
        pgrp: rest.get(2)?.parse().ok()?,
        start: rest.get(19)?.parse().ok()?,
        gone: matches!(*state, "Z" | "X" | "x"),
    })
}

fn read_stat(pid: i32) -> Option<Stat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

fn all_pids() -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

fn all_stats() -> Vec<Stat> {
    all_pids().into_iter().filter_map(read_stat).collect()
}

/// The live members of process group `pgid`, and every live descendant of
/// them and of `root` (which may have left the group).
pub(crate) fn tree(root: Option<i32>, pgid: i32) -> Vec<ProcId> {
    tree_in(&all_stats(), root, pgid)
}

pub(crate) fn tree_in(stats: &[Stat], root: Option<i32>, pgid: i32) -> Vec<ProcId> {
    let mut found: Vec<i32> = stats
        .iter()
        .filter(|s| s.pgrp == pgid)
        .map(|s| s.pid)
        .chain(root)
        .collect();
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        for s in stats {
            if s.ppid == parent && !found.contains(&s.pid) {
                found.push(s.pid);
            }
        }
        i += 1;
    }
    stats
        .iter()
        .filter(|s| !s.gone && found.contains(&s.pid))
        .map(Stat::id)
        .collect()
}

/// Whether the group has no member at all (not even a zombie).
pub(crate) fn group_empty(pgid: i32) -> bool {
    killpg(Pid::from_raw(pgid), None) == Err(Errno::ESRCH)
}

/// Whether the group has a member that is not a zombie.
pub(crate) fn group_alive(pgid: i32) -> bool {
    // Members may all be zombies that no one reaps.
    !group_empty(pgid) && all_stats().iter().any(|s| s.pgrp == pgid && !s.gone)
}

/// Whether `p` is still the same, not-yet-dead process.
pub(crate) fn alive(p: ProcId) -> bool {
    read_stat(p.pid).is_some_and(|s| s.start == p.start && !s.gone)
}

/// Signals the group and each listed process that is still the one recorded.
pub(crate) fn signal_tree(pgid: i32, procs: &[ProcId], signal: Signal) {
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(e) => tracing::warn!(pgid, %signal, error = %e, "signalling the process group failed"),
    }
    for p in procs {
        if alive(*p) {
            match kill(Pid::from_raw(p.pid), signal) {
                Ok(()) | Err(Errno::ESRCH) => {}
                Err(e) => {
                    tracing::warn!(pid = p.pid, %signal, error = %e, "signalling a process failed")
                }
            }
        }
    }
}

/// The inode of the pipe behind `fd` in this process, if it is a pipe.
pub(crate) fn pipe_inode(fd: RawFd) -> Option<u64> {
    let target = fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    parse_pipe_link(target.to_str()?)
}

fn parse_pipe_link(link: &str) -> Option<u64> {
    link.strip_prefix("pipe:[")?.strip_suffix(']')?.parse().ok()
}

/// Live processes other than this one that hold any of the pipes.
pub(crate) fn pipe_holders(inodes: &[u64]) -> Vec<ProcId> {
    let me = std::process::id() as i32;
    let mut holders = Vec::new();
    for pid in all_pids() {
        if pid == me {
            continue;
        }
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds.filter_map(Result::ok).any(|fd| {
            fs::read_link(fd.path())
                .ok()
                .and_then(|t| parse_pipe_link(t.to_str()?))
                .is_some_and(|ino| inodes.contains(&ino))
        });
        if holds && let Some(stat) = read_stat(pid).filter(|s| !s.gone) {
            holders.push(stat.id());
        }
    }
    holders
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_lines_with_awkward_names() {
        let line = "4242 (a) b (c) S 17 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 100 18446744073709551615";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                pid: 4242,
                ppid: 17,
                pgrp: 4242,
                start: 987654,
                gone: false
            })
        );
        let zombie = "7 (sleep) Z 1 5 5 0 -1 4227084 0 0 0 0 0 0 0 0 20 0 1 0 555 0 0";
        assert_eq!(
            parse_stat(zombie).map(|s| (s.ppid, s.gone)),
            Some((1, true))
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn tree_follows_parents_out_of_the_group() {
        let stat = |pid, ppid, pgrp, gone| Stat {
            pid,
            ppid,
            pgrp,
            start: pid as u64,
            gone,
        };
        let stats = [
            stat(1, 0, 1, false),
            stat(10, 1, 10, false),  // the exec's main process, group leader
            stat(11, 10, 10, false), // a background child
            stat(12, 11, 12, false), // setsid'd grandchild: left the group
            stat(13, 12, 12, false), // its child
            stat(14, 1, 10, false),  // orphan still in the group
            stat(15, 1, 10, true),   // zombie in the group
            stat(20, 1, 20, false),  // unrelated
        ];
        let pids: Vec<i32> = tree_in(&stats, Some(10), 10)
            .iter()
            .map(|p| p.pid)
            .collect();
        assert_eq!(pids, vec![10, 11, 12, 13, 14]);
        // After the main process is gone, the group still leads to the rest.
        let pids: Vec<i32> = tree_in(&stats[2..], None, 10)
            .iter()
            .map(|p| p.pid)
            .collect();
        assert_eq!(pids, vec![11, 12, 13, 14]);
    }

    #[test]
    fn finds_this_process_stat_and_pipes() {
        let me = std::process::id() as i32;
        let stat = read_stat(me).unwrap();
        assert_eq!(stat.pid, me);
        assert!(alive(stat.id()));
        assert!(!alive(ProcId {
            pid: me,
            start: stat.start + 1
        }));
        assert_eq!(parse_pipe_link("pipe:[12345]"), Some(12345));
        assert_eq!(parse_pipe_link("/dev/null"), None);
        assert_eq!(parse_pipe_link("socket:[12345]"), None);
    }
}
