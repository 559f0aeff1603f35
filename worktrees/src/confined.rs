//! Destructive file operations that cannot leave berth's own directories.
//!
//! Recycling, reconciling and chowning run as root on directories an agent
//! writes: its repository and its worktree. An agent can put a symlink anywhere
//! in them (`worktrees -> /`, `refs -> /etc`), and a path-based
//! `remove_dir_all(".../<agent>.git/worktrees/<agent>")` would resolve it. So
//! these operations start from a trusted directory that berth created
//! (`<state>/agents/<project>`, `<state>/worktrees/<project>`) and descend with
//! `openat(O_NOFOLLOW | O_DIRECTORY)` one component at a time, acting on entries
//! with `unlinkat` / `fchownat(AT_SYMLINK_NOFOLLOW)` relative to the directory
//! descriptor. A symlink is never followed, only removed (or left alone) as
//! the link it is, so nothing outside the trusted directory is touched, even if
//! the agent swaps paths while berth works.

use std::ffi::{CStr, OsStr};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// What is at a path, without following a symlink there or on the way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dir,
    File,
    Symlink,
    Other,
}

fn components(rel: &Path) -> io::Result<Vec<&OsStr>> {
    rel.components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is not a plain relative path inside a berth directory",
                    rel.display()
                ),
            )),
        })
        .collect()
}

/// Opens `root` (trusted, may be reached through symlinks the operator made) and
/// then every component of `rel` without following symlinks.
fn open_dir(root: &Path, rel: &[&OsStr]) -> io::Result<OwnedFd> {
    let mut fd = rustix::fs::open(
        root,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    for name in rel {
        fd = rustix::fs::openat(&fd, *name, DIR_FLAGS, Mode::empty())?;
    }
    Ok(fd)
}

/// Like [`open_dir`], but `O_PATH`: enough to look at entries (`statat`),
/// and allowed where the directory itself may not be read (a helper whose
/// Landlock ruleset holds the agent's directories but not their parent).
fn open_dir_path(root: &Path, rel: &[&OsStr]) -> io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let mut fd = rustix::fs::open(root, flags, Mode::empty())?;
    for name in rel {
        fd = rustix::fs::openat(&fd, *name, flags | OFlags::NOFOLLOW, Mode::empty())?;
    }
    Ok(fd)
}

fn kind_of(mode: u32) -> Kind {
    match FileType::from_raw_mode(mode) {
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        FileType::Symlink => Kind::Symlink,
        _ => Kind::Other,
    }
}

fn is_missing(e: &io::Error) -> bool {
    // ENOTDIR / ELOOP: a component on the way is a file or a symlink, so the
    // thing asked about does not exist as berth laid it out.
    matches!(
        rustix::io::Errno::from_io_error(e),
        Some(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP)
    )
}

/// The `stat` of what is at `root/rel`, not following a link there or on the
/// way; `None` when nothing is there (or a component on the way is not a real
/// directory). `rel` must name an entry.
fn stat_beneath(root: &Path, rel: &[&OsStr]) -> io::Result<Option<rustix::fs::Stat>> {
    let Some((last, parents)) = rel.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no entry named below a berth root directory",
        ));
    };
    let dir = match open_dir_path(root, parents) {
        Ok(fd) => fd,
        Err(e) if is_missing(&e) => return Ok(None),
        Err(e) => return Err(e),
    };
    match rustix::fs::statat(&dir, *last, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What is at `root/rel`; `None` when nothing is there (or a component on the
/// way is not a real directory).
pub(crate) fn kind(root: &Path, rel: &Path) -> io::Result<Option<Kind>> {
    let parts = components(rel)?;
    if parts.is_empty() {
        return Ok(Some(Kind::Dir));
    }
    Ok(stat_beneath(root, &parts)?.map(|st| kind_of(st.st_mode)))
}

/// The owner of what is at `root/rel` (not following a link there or on the
/// way); `None` when nothing is there.
pub(crate) fn owner(root: &Path, rel: &Path) -> io::Result<Option<crate::Owner>> {
    let parts = components(rel)?;
    Ok(stat_beneath(root, &parts)?.map(|st| crate::Owner {
        uid: st.st_uid,
        gid: st.st_gid,
    }))
}

/// Creates the directory `root/rel` (mode 0755), its parents reached without
/// following a link. `Ok(false)` when something is there already.
pub(crate) fn create_dir(root: &Path, rel: &Path) -> io::Result<bool> {
    let parts = components(rel)?;
    let Some((last, parents)) = parts.split_last() else {
        return Ok(false);
    };
    let dir = open_dir(root, parents)?;
    match rustix::fs::mkdirat(&dir, *last, Mode::from_raw_mode(0o755)) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::EXIST) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Creates the file `root/rel` (mode 0644) with `content`; it must not exist,
/// and neither it nor a directory on the way may be a link.
pub(crate) fn write_new(root: &Path, rel: &Path, content: &[u8]) -> io::Result<()> {
    let parts = components(rel)?;
    let Some((last, parents)) = parts.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no file named below a berth root directory",
        ));
    };
    let dir = open_dir(root, parents)?;
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir, *last, flags, Mode::from_raw_mode(0o644))?;
    let mut file = std::fs::File::from(fd);
    io::Write::write_all(&mut file, content)
}

/// Removes whatever is at `root/rel` (a file, a symlink — not its target — or a
/// whole directory tree). Returns whether something was there.
pub(crate) fn remove(root: &Path, rel: &Path) -> io::Result<bool> {
    let parts = components(rel)?;
    let Some((last, parents)) = parts.split_last() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "refusing to remove a berth root directory",
        ));
    };
    let dir = match open_dir(root, parents) {
        Ok(fd) => fd,
        Err(e) if is_missing(&e) => return Ok(false),
        Err(e) => return Err(e),
    };
    remove_entry(&dir, last)
}

fn remove_entry(dir: &OwnedFd, name: &OsStr) -> io::Result<bool> {
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(rustix::io::Errno::NOENT) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    if kind_of(st.st_mode) == Kind::Dir {
        let child = rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())?;
        for entry in entries(&child)? {
            remove_entry(&child, OsStr::from_bytes(entry.to_bytes()))?;
        }
        drop(child);
        rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?;
    } else {
        rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
    }
    Ok(true)
}

/// Names in a directory, read fully before the caller changes it.
fn entries(dir: &OwnedFd) -> io::Result<Vec<std::ffi::CString>> {
    let mut names = Vec::new();
    for entry in Dir::read_from(dir.as_fd())? {
        let entry = entry?;
        let name: &CStr = entry.file_name();
        if name.to_bytes() != b"." && name.to_bytes() != b".." {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// Changes the owner of everything under `root/rel` (and `rel` itself) to
/// `uid:gid`, without following symlinks (links themselves are re-owned).
/// A regular file with more than one hard link that berth does not already
/// own for `uid` is skipped: it could be a link to a file outside the tree.
pub(crate) fn chown_tree(root: &Path, rel: &Path, uid: u32, gid: u32) -> io::Result<()> {
    let parts = components(rel)?;
    let dir = open_dir(root, &parts)?;
    chown_dir(&dir, uid, gid)
}

fn chown_dir(dir: &OwnedFd, uid: u32, gid: u32) -> io::Result<()> {
    let (u, g) = (
        Some(rustix::fs::Uid::from_raw(uid)),
        Some(rustix::fs::Gid::from_raw(gid)),
    );
    let st = rustix::fs::fstat(dir)?;
    if st.st_uid != uid || st.st_gid != gid {
        rustix::fs::fchown(dir, u, g)?;
    }
    for name in entries(dir)? {
        let st = match rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(e.into()),
        };
        match kind_of(st.st_mode) {
            Kind::Dir => {
                let child = rustix::fs::openat(dir, name.as_c_str(), DIR_FLAGS, Mode::empty())?;
                chown_dir(&child, uid, gid)?;
            }
            kind => {
                if st.st_uid == uid && st.st_gid == gid {
                    continue;
                }
                if kind == Kind::File && st.st_nlink > 1 {
                    tracing::warn!(
                        name = %name.to_string_lossy(),
                        "not re-owning a hard-linked file in an agent directory"
                    );
                    continue;
                }
                rustix::fs::chownat(dir, name.as_c_str(), u, g, AtFlags::SYMLINK_NOFOLLOW)?;
            }
        }
    }
    Ok(())
}

/// Removes every regular file named `*.lock` under `root/rel`, skipping the
/// top-level directories named in `skip` (the object store holds none and can
/// be large). Returns the removed paths (as `root/rel/...`).
pub(crate) fn remove_lock_files(
    root: &Path,
    rel: &Path,
    skip: &[&str],
) -> io::Result<Vec<PathBuf>> {
    let parts = components(rel)?;
    let dir = match open_dir(root, &parts) {
        Ok(fd) => fd,
        Err(e) if is_missing(&e) => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut removed = Vec::new();
    sweep_locks(&dir, &root.join(rel), skip, 0, &mut removed)?;
    Ok(removed)
}

// Deep enough for refs/heads/agent/<agent>/<task> and worktrees/<name>/…
const MAX_SWEEP_DEPTH: usize = 16;

fn sweep_locks(
    dir: &OwnedFd,
    path: &Path,
    skip: &[&str],
    depth: usize,
    removed: &mut Vec<PathBuf>,
) -> io::Result<()> {
    for name in entries(dir)? {
        let bytes = name.to_bytes();
        let os = OsStr::from_bytes(bytes);
        if depth == 0 && skip.iter().any(|s| s.as_bytes() == bytes) {
            continue;
        }
        let st = match rustix::fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(rustix::io::Errno::NOENT) => continue,
            Err(e) => return Err(e.into()),
        };
        match kind_of(st.st_mode) {
            Kind::Dir if depth < MAX_SWEEP_DEPTH => {
                let child = rustix::fs::openat(dir, name.as_c_str(), DIR_FLAGS, Mode::empty())?;
                sweep_locks(&child, &path.join(os), skip, depth + 1, removed)?;
            }
            Kind::File if bytes.ends_with(b".lock") => {
                rustix::fs::unlinkat(dir, name.as_c_str(), AtFlags::empty())?;
                removed.push(path.join(os));
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;

    #[test]
    fn remove_never_follows_symlinks_out_of_the_root() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("precious"), "x").unwrap();
        fs::create_dir(outside.path().join("sub")).unwrap();
        fs::write(outside.path().join("sub/precious"), "x").unwrap();

        let root = tempfile::tempdir().unwrap();
        // a.git/worktrees is a symlink to the outside: the path through it must
        // not resolve.
        fs::create_dir_all(root.path().join("a.git")).unwrap();
        symlink(outside.path(), root.path().join("a.git/worktrees")).unwrap();
        assert!(!remove(root.path(), Path::new("a.git/worktrees/sub")).unwrap());
        assert!(outside.path().join("sub/precious").exists());

        // A tree holding a symlink to the outside: the link goes, the target stays.
        fs::create_dir_all(root.path().join("wt/deep")).unwrap();
        symlink(outside.path(), root.path().join("wt/deep/out")).unwrap();
        symlink(
            outside.path().join("precious"),
            root.path().join("wt/file-link"),
        )
        .unwrap();
        assert!(remove(root.path(), Path::new("wt")).unwrap());
        assert!(!root.path().join("wt").exists());
        assert!(outside.path().join("precious").exists());
        assert!(outside.path().join("sub/precious").exists());

        // The final component being a symlink removes only the link.
        symlink(outside.path(), root.path().join("link")).unwrap();
        assert!(remove(root.path(), Path::new("link")).unwrap());
        assert!(outside.path().join("precious").exists());

        assert!(remove(root.path(), Path::new("../x")).is_err());
        assert!(!remove(root.path(), Path::new("missing/child")).unwrap());
    }

    #[test]
    fn lock_sweep_removes_only_lock_files_inside() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("x.lock"), "").unwrap();
        let root = tempfile::tempdir().unwrap();
        fs::create_dir_all(root.path().join("r/refs/heads/agent/a")).unwrap();
        fs::create_dir_all(root.path().join("r/objects/ab")).unwrap();
        fs::write(root.path().join("r/index.lock"), "").unwrap();
        fs::write(root.path().join("r/refs/heads/agent/a/t.lock"), "").unwrap();
        fs::write(root.path().join("r/refs/heads/agent/a/t"), "").unwrap();
        fs::write(root.path().join("r/objects/ab/keep.lock"), "").unwrap();
        symlink(outside.path(), root.path().join("r/refs/out")).unwrap();
        symlink(
            outside.path().join("x.lock"),
            root.path().join("r/linked.lock"),
        )
        .unwrap();

        let mut removed = remove_lock_files(root.path(), Path::new("r"), &["objects"]).unwrap();
        removed.sort();
        let base = root.path().join("r");
        assert_eq!(
            removed,
            vec![
                base.join("index.lock"),
                base.join("refs/heads/agent/a/t.lock")
            ]
        );
        assert!(outside.path().join("x.lock").exists());
        assert!(base.join("objects/ab/keep.lock").exists());
        assert!(base.join("refs/heads/agent/a/t").exists());
    }

    #[test]
    fn kind_does_not_resolve_symlinks_on_the_way() {
        let outside = tempfile::tempdir().unwrap();
        fs::create_dir(outside.path().join("d")).unwrap();
        let root = tempfile::tempdir().unwrap();
        symlink(outside.path(), root.path().join("l")).unwrap();
        fs::create_dir(root.path().join("d")).unwrap();
        assert_eq!(
            kind(root.path(), Path::new("l")).unwrap(),
            Some(Kind::Symlink)
        );
        assert_eq!(kind(root.path(), Path::new("l/d")).unwrap(), None);
        assert_eq!(kind(root.path(), Path::new("d")).unwrap(), Some(Kind::Dir));
        assert_eq!(kind(root.path(), Path::new("nope")).unwrap(), None);
    }
}
