//! An iterative, no-follow walk of a directory tree an agent can write, with a
//! bounded number of open directories.
//!
//! An agent nests directories faster than any stack grows: `mkdir d; cd d` in
//! a loop makes 5,000 levels in under a second, and a walk that recurses once
//! per level (or holds one descriptor per level) aborts the whole berth
//! process — every berth, under `berth serve` — on the stack or on the file
//! limit. This walk keeps its position in a heap-allocated stack of frames
//! (a name and a `(dev, ino)` per level) and holds descriptors for at most
//! [`MAX_OPEN_DIRS`] of the deepest levels plus the walk's root.
//!
//! Going down opens each directory by name relative to its parent's
//! descriptor with `O_NOFOLLOW | O_DIRECTORY`, so a symlink is never followed.
//! Going back up to a level whose descriptor was released opens `..` from the
//! child and accepts it only when it is the very directory recorded on the way
//! down (same device and inode) — the same guarantee a held descriptor gives.
//! When it is not (the agent moved a directory while berth worked), the level
//! is opened again from the walk's root, component by component, each checked
//! the same way; if that fails too the walk stops with an error, having acted
//! only on what it found inside the tree. Nothing here ever uses a full path.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, Stat};

/// Directory descriptors a walk holds below its root, however deep the tree.
pub(crate) const MAX_OPEN_DIRS: usize = 32;

pub(crate) const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// What a walk does with what it finds.
pub(crate) trait Visit {
    /// A directory just opened, before any of its entries (`fd` is it).
    fn enter(&mut self, _fd: &OwnedFd, _st: &Stat) -> io::Result<()> {
        Ok(())
    }
    /// Whether to go into the subdirectory `name`, `depth` levels below the
    /// walk's root (its entries are at `depth + 1`).
    fn descend(&mut self, _depth: usize, _name: &CStr) -> bool {
        true
    }
    /// An entry that is not a directory (a symlink is one, never followed),
    /// in the directory `dir`, which is `rel` below the walk's root.
    fn entry(&mut self, dir: &OwnedFd, name: &CStr, st: &Stat, rel: &Path) -> io::Result<()>;
    /// A subdirectory `name` of `parent` whose entries have all been visited.
    fn leave(&mut self, _parent: &OwnedFd, _name: &CStr) -> io::Result<()> {
        Ok(())
    }
}

/// A directory's identity: what a directory opened again must match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Id {
    dev: u64,
    ino: u64,
}

impl Id {
    fn of(st: &Stat) -> Id {
        Id {
            dev: st.st_dev,
            ino: st.st_ino,
        }
    }
}

/// One level of the walk.
struct Frame {
    /// Its name in its parent (empty for the root).
    name: CString,
    id: Id,
    /// Held for the root and the deepest [`MAX_OPEN_DIRS`] levels.
    fd: Option<OwnedFd>,
    /// Subdirectories still to visit, listed when the level was entered.
    subdirs: Vec<CString>,
}

pub(crate) fn is_dir(st: &Stat) -> bool {
    FileType::from_raw_mode(st.st_mode) == FileType::Directory
}

/// Walks the tree whose root directory is `root` (already opened by the
/// caller without following links), depth first; `visit` sees every entry
/// once. Returns at the first error.
pub(crate) fn walk(root: OwnedFd, visit: &mut impl Visit) -> io::Result<()> {
    let st = rustix::fs::fstat(&root)?;
    visit.enter(&root, &st)?;
    let mut rel = PathBuf::new();
    let subdirs = list(&root, 0, &rel, visit)?;
    let mut frames = vec![Frame {
        name: CString::default(),
        id: Id::of(&st),
        fd: Some(root),
        subdirs,
    }];
    loop {
        let depth = frames.len() - 1;
        let Some(top) = frames.last_mut() else {
            return Ok(());
        };
        if let Some(name) = top.subdirs.pop() {
            let Some(dir) = top.fd.as_ref() else {
                return Err(lost());
            };
            let st = match rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => st,
                Err(rustix::io::Errno::NOENT) => continue,
                Err(e) => return Err(e.into()),
            };
            if !is_dir(&st) {
                // Replaced since it was listed: act on it as what it is now.
                visit.entry(dir, &name, &st, &rel)?;
                continue;
            }
            let child = rustix::fs::openat(dir, name.as_c_str(), DIR_FLAGS, Mode::empty())?;
            let st = rustix::fs::fstat(&child)?;
            visit.enter(&child, &st)?;
            rel.push(std::ffi::OsStr::from_bytes(name.to_bytes()));
            let subdirs = list(&child, depth + 1, &rel, visit)?;
            frames.push(Frame {
                name,
                id: Id::of(&st),
                fd: Some(child),
                subdirs,
            });
            // The budget: release the shallowest held level below the root.
            if frames.len() > MAX_OPEN_DIRS + 1 {
                let index = frames.len() - 1 - MAX_OPEN_DIRS;
                frames[index].fd = None;
            }
        } else {
            let Some(done) = frames.pop() else {
                return Ok(());
            };
            if frames.is_empty() {
                return Ok(());
            }
            rel.pop();
            let child = done.fd.ok_or_else(lost)?;
            reopen_parent(&mut frames, &child)?;
            drop(child);
            let parent = frames.last().and_then(|f| f.fd.as_ref()).ok_or_else(lost)?;
            visit.leave(parent, &done.name)?;
        }
    }
}

/// The error for a walk that lost a descriptor it must hold (a bug, not an
/// agent's doing).
fn lost() -> io::Error {
    io::Error::other("directory walk lost track of an open directory")
}

/// Visits every non-directory entry of `dir` and returns the names of the
/// subdirectories to go into.
fn list(
    dir: &OwnedFd,
    depth: usize,
    rel: &Path,
    visit: &mut impl Visit,
) -> io::Result<Vec<CString>> {
    let mut names = Vec::new();
    for entry in Dir::read_from(dir.as_fd())? {
        let entry = entry?;
        let name: &CStr = entry.file_name();
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            names.push(name.to_owned());
        }
    }
    let mut subdirs = Vec::new();
    for name in names {
        let st = match rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(e.into()),
        };
        if is_dir(&st) {
            if visit.descend(depth, &name) {
                subdirs.push(name);
            }
        } else {
            visit.entry(dir, &name, &st, rel)?;
        }
    }
    // Popped from the end: visit in listing order.
    subdirs.reverse();
    Ok(subdirs)
}

/// Makes sure the new top frame (the parent of `child`, just finished) holds
/// its descriptor: `..` of `child` when it is the recorded directory, else
/// opened again from the root.
fn reopen_parent(frames: &mut [Frame], child: &OwnedFd) -> io::Result<()> {
    let Some(parent) = frames.last_mut() else {
        return Ok(());
    };
    if parent.fd.is_some() {
        return Ok(());
    }
    let up = rustix::fs::openat(child, c"..", DIR_FLAGS, Mode::empty())?;
    if Id::of(&rustix::fs::fstat(&up)?) == parent.id {
        parent.fd = Some(up);
        return Ok(());
    }
    drop(up);
    tracing::warn!("a directory moved during a walk; opening it again from the walk's root");
    reopen_from_root(frames)
}

/// Opens the top frame again, name by name from its deepest ancestor that
/// still holds a descriptor (the root always does), checking every level's
/// identity.
fn reopen_from_root(frames: &mut [Frame]) -> io::Result<()> {
    let Some(top) = frames.len().checked_sub(1) else {
        return Ok(());
    };
    let Some(held) = frames[..top].iter().rposition(|f| f.fd.is_some()) else {
        return Err(lost());
    };
    let mut fd: Option<OwnedFd> = None;
    for index in held + 1..=top {
        let from = match (&fd, &frames[held].fd) {
            (Some(open), _) => open,
            (None, Some(ancestor)) => ancestor,
            (None, None) => return Err(lost()),
        };
        let frame = &frames[index];
        let next = rustix::fs::openat(from, frame.name.as_c_str(), DIR_FLAGS, Mode::empty())?;
        if Id::of(&rustix::fs::fstat(&next)?) != frame.id {
            return Err(io::Error::other(format!(
                "{} was replaced while berth walked the tree; try again once nothing changes it",
                frame.name.to_string_lossy()
            )));
        }
        fd = Some(next);
    }
    frames[top].fd = fd;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nests `depth` directories named `d` under `root`; returns them all.
    fn nest(root: &Path, depth: usize) -> Vec<OwnedFd> {
        let mut fds = vec![rustix::fs::open(root, DIR_FLAGS, Mode::empty()).unwrap()];
        for _ in 0..depth {
            let parent = fds.last().unwrap();
            rustix::fs::mkdirat(parent, "d", Mode::from_raw_mode(0o755)).unwrap();
            let next = rustix::fs::openat(parent, "d", DIR_FLAGS, Mode::empty()).unwrap();
            fds.push(next);
        }
        fds
    }

    fn touch(dir: &OwnedFd, name: &str) {
        let flags = OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC;
        drop(rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o644)).unwrap());
    }

    /// Counts entries and the deepest path; runs `at_bottom` once, at the
    /// entry named `bottom`.
    struct Probe<F: FnMut()> {
        entries: usize,
        deepest: usize,
        fds_at_bottom: Option<usize>,
        at_bottom: F,
    }

    impl<F: FnMut()> Visit for Probe<F> {
        fn entry(&mut self, _: &OwnedFd, name: &CStr, _: &Stat, rel: &Path) -> io::Result<()> {
            self.entries += 1;
            self.deepest = self.deepest.max(rel.components().count());
            if name.to_bytes() == b"bottom" {
                self.fds_at_bottom = Some(std::fs::read_dir("/proc/self/fd").unwrap().count());
                (self.at_bottom)();
            }
            Ok(())
        }
    }

    #[test]
    fn holds_a_bounded_number_of_directories_open() {
        let root = tempfile::tempdir().unwrap();
        let levels = nest(root.path(), 2_000);
        touch(levels.last().unwrap(), "bottom");
        touch(&levels[1_000], "middle");
        drop(levels);
        let before = std::fs::read_dir("/proc/self/fd").unwrap().count();
        let mut probe = Probe {
            entries: 0,
            deepest: 0,
            fds_at_bottom: None,
            at_bottom: || {},
        };
        let top = rustix::fs::open(root.path(), DIR_FLAGS, Mode::empty()).unwrap();
        walk(top, &mut probe).unwrap();
        assert_eq!((probe.entries, probe.deepest), (2, 2_000));
        // Other tests run beside this one and open files too: the slack is
        // for them, far below the 2,000 a descriptor per level would hold.
        let held = probe.fds_at_bottom.unwrap().saturating_sub(before);
        assert!(
            held <= MAX_OPEN_DIRS + 16,
            "{held} descriptors open at the bottom"
        );
        // std's remove_dir_all (the temporary directory's cleanup) recurses.
        crate::confined::remove(root.path(), Path::new("d")).unwrap();
    }

    #[test]
    fn a_directory_moved_during_the_walk_is_reopened_from_the_root_or_refused() {
        let root = tempfile::tempdir().unwrap();
        let depth = MAX_OPEN_DIRS * 4;
        let levels = nest(root.path(), depth);
        touch(levels.last().unwrap(), "bottom");
        touch(&levels[10], "shallow");
        drop(levels);
        // Moved out from under the walk: `..` of level 51 is then the root,
        // not level 50, so level 50 is opened again by name from the root.
        let mut chain = PathBuf::from(root.path());
        for _ in 0..50 {
            chain.push("d");
        }
        let from = chain.join("d");
        let to = root.path().join("moved");
        let mut probe = Probe {
            entries: 0,
            deepest: 0,
            fds_at_bottom: None,
            at_bottom: || std::fs::rename(&from, &to).unwrap(),
        };
        let top = rustix::fs::open(root.path(), DIR_FLAGS, Mode::empty()).unwrap();
        walk(top, &mut probe).unwrap();
        assert_eq!(probe.entries, 2, "bottom and shallow, each once");

        // Level 50 replaced by another directory of the same name: the walk
        // stops with an error rather than going on in a directory it never
        // listed.
        let root = tempfile::tempdir().unwrap();
        let levels = nest(root.path(), depth);
        touch(levels.last().unwrap(), "bottom");
        drop(levels);
        let mut chain = PathBuf::from(root.path());
        for _ in 0..50 {
            chain.push("d");
        }
        let level_50 = chain.clone();
        let aside = root.path().join("aside");
        let mut probe = Probe {
            entries: 0,
            deepest: 0,
            fds_at_bottom: None,
            at_bottom: || {
                std::fs::rename(level_50.join("d"), &aside).unwrap();
                std::fs::rename(&level_50, root.path().join("old")).unwrap();
                std::fs::create_dir(&level_50).unwrap();
            },
        };
        let top = rustix::fs::open(root.path(), DIR_FLAGS, Mode::empty()).unwrap();
        let err = walk(top, &mut probe).unwrap_err();
        assert!(err.to_string().contains("was replaced"), "{err}");
    }
}
