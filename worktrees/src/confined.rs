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
//! the agent swaps paths while berth works. Whole trees are walked by
//! [`crate::walk`]: iteratively, with a bounded number of open directories,
//! so no depth an agent can make exhausts berth's stack or descriptors.

use std::ffi::{CStr, OsStr};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};

use crate::walk::{self, DIR_FLAGS, Visit};

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
    if walk::is_dir(&st) {
        let child = rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())?;
        walk::walk(child, &mut Removal)?;
        rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?;
    } else {
        rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
    }
    Ok(true)
}

/// Empties a tree: every entry unlinked, every directory once it is empty.
struct Removal;

impl Visit for Removal {
    fn entry(&mut self, dir: &OwnedFd, name: &CStr, _: &Stat, _: &Path) -> io::Result<()> {
        match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn leave(&mut self, parent: &OwnedFd, name: &CStr) -> io::Result<()> {
        rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)?;
        Ok(())
    }
}

/// Changes the owner of everything under `root/rel` (and `rel` itself) to
/// `uid:gid`, without following symlinks (links themselves are re-owned).
/// A regular file with more than one hard link that berth does not already
/// own for `uid` is skipped: it could be a link to a file outside the tree.
pub(crate) fn chown_tree(root: &Path, rel: &Path, uid: u32, gid: u32) -> io::Result<()> {
    let parts = components(rel)?;
    let dir = open_dir(root, &parts)?;
    walk::walk(dir, &mut Chown { uid, gid })
}

/// Re-owns what it visits; each entry is opened (`O_PATH | O_NOFOLLOW`) and
/// checked through that descriptor, so the inode re-owned is the one checked.
struct Chown {
    uid: u32,
    gid: u32,
}

impl Chown {
    fn owns(&self, st: &Stat) -> bool {
        st.st_uid == self.uid && st.st_gid == self.gid
    }

    fn ids(&self) -> (Option<rustix::fs::Uid>, Option<rustix::fs::Gid>) {
        (
            Some(rustix::fs::Uid::from_raw(self.uid)),
            Some(rustix::fs::Gid::from_raw(self.gid)),
        )
    }
}

impl Visit for Chown {
    fn enter(&mut self, fd: &OwnedFd, st: &Stat) -> io::Result<()> {
        if !self.owns(st) {
            let (u, g) = self.ids();
            rustix::fs::fchown(fd, u, g)?;
        }
        Ok(())
    }

    fn entry(&mut self, dir: &OwnedFd, name: &CStr, st: &Stat, _: &Path) -> io::Result<()> {
        if self.owns(st) {
            return Ok(());
        }
        let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let st = rustix::fs::fstat(&fd)?;
        if self.owns(&st) {
            return Ok(());
        }
        if kind_of(st.st_mode) == Kind::File && st.st_nlink > 1 {
            tracing::warn!(
                name = %name.to_string_lossy(),
                "not re-owning a hard-linked file in an agent directory"
            );
            return Ok(());
        }
        let (u, g) = self.ids();
        rustix::fs::chownat(&fd, c"", u, g, AtFlags::EMPTY_PATH)?;
        Ok(())
    }
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
    let mut sweep = LockSweep {
        base: root.join(rel),
        skip,
        removed: Vec::new(),
    };
    walk::walk(dir, &mut sweep)?;
    Ok(sweep.removed)
}

// Deep enough for refs/heads/agent/<agent>/<task> and worktrees/<name>/…
const MAX_SWEEP_DEPTH: usize = 16;

/// Removes the lock files a crashed git operation left.
struct LockSweep<'a> {
    base: PathBuf,
    skip: &'a [&'a str],
    removed: Vec<PathBuf>,
}

impl Visit for LockSweep<'_> {
    fn descend(&mut self, depth: usize, name: &CStr) -> bool {
        let top_skipped = depth == 0 && self.skip.iter().any(|s| s.as_bytes() == name.to_bytes());
        depth < MAX_SWEEP_DEPTH && !top_skipped
    }

    fn entry(&mut self, dir: &OwnedFd, name: &CStr, st: &Stat, rel: &Path) -> io::Result<()> {
        if kind_of(st.st_mode) == Kind::File && name.to_bytes().ends_with(b".lock") {
            rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
            self.removed
                .push(self.base.join(rel).join(OsStr::from_bytes(name.to_bytes())));
        }
        Ok(())
    }
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

    /// Nests `depth` directories named `d` under `root` (fd-relative: the
    /// path is far longer than PATH_MAX) and returns the deepest.
    fn nest(root: &Path, depth: usize) -> OwnedFd {
        let mut fd = rustix::fs::open(root, DIR_FLAGS, Mode::empty()).unwrap();
        for _ in 0..depth {
            rustix::fs::mkdirat(&fd, "d", Mode::from_raw_mode(0o755)).unwrap();
            fd = rustix::fs::openat(&fd, "d", DIR_FLAGS, Mode::empty()).unwrap();
        }
        fd
    }

    const DEEP: usize = 20_000;

    /// A temporary directory in memory when the host has one: 20,000 levels
    /// cost the disk's journal seconds on a busy machine, and the walk does
    /// not depend on the filesystem.
    fn scratch() -> tempfile::TempDir {
        match Path::new("/dev/shm").is_dir() {
            true => tempfile::tempdir_in("/dev/shm").unwrap(),
            false => tempfile::tempdir().unwrap(),
        }
    }

    /// Runs `f` on a thread with a 256 KiB stack: a walk that recursed once
    /// per level would overflow it within a few hundred levels.
    fn on_a_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap()
    }

    fn open_fds() -> usize {
        fs::read_dir("/proc/self/fd").unwrap().count()
    }

    #[test]
    fn a_very_deep_tree_is_removed_without_following_its_links() {
        let outside = scratch();
        fs::write(outside.path().join("precious"), "x").unwrap();
        fs::create_dir(outside.path().join("sub")).unwrap();
        fs::write(outside.path().join("sub/precious"), "x").unwrap();
        let root = scratch();
        fs::create_dir(root.path().join("wt")).unwrap();
        let deepest = nest(&root.path().join("wt"), DEEP);
        // At the bottom: a link to a directory outside, a link to a file
        // outside, a hard link to a file outside, and a plain file.
        rustix::fs::symlinkat(outside.path(), &deepest, "out").unwrap();
        rustix::fs::symlinkat(outside.path().join("precious"), &deepest, "file-link").unwrap();
        rustix::fs::linkat(
            rustix::fs::CWD,
            outside.path().join("sub/precious"),
            &deepest,
            "hard",
            AtFlags::empty(),
        )
        .unwrap();
        rustix::fs::mkdirat(&deepest, "leaf", Mode::from_raw_mode(0o755)).unwrap();
        drop(deepest);

        let before = open_fds();
        let base = root.path().to_path_buf();
        let removed = on_a_small_stack(move || remove(&base, Path::new("wt")).unwrap());
        assert!(removed);
        assert!(!root.path().join("wt").exists());
        assert_eq!(fs::read(outside.path().join("precious")).unwrap(), b"x");
        assert_eq!(fs::read(outside.path().join("sub/precious")).unwrap(), b"x");
        // Other tests of this binary open files meanwhile (pipes to helpers,
        // lock files): the slack is for them, far below the one descriptor
        // per level (20,000) a leaking walk would keep.
        assert!(open_fds() <= before + 64, "descriptors leaked");
    }

    #[test]
    fn a_very_deep_tree_is_chowned_without_following_its_links() {
        if rustix::process::geteuid().as_raw() != 0 {
            eprintln!("skipping: chown needs root");
            return;
        }
        let outside = scratch();
        fs::write(outside.path().join("precious"), "x").unwrap();
        let root = scratch();
        fs::create_dir(root.path().join("wt")).unwrap();
        let deepest = nest(&root.path().join("wt"), DEEP);
        rustix::fs::symlinkat(outside.path(), &deepest, "out").unwrap();
        rustix::fs::linkat(
            rustix::fs::CWD,
            outside.path().join("precious"),
            &deepest,
            "hard",
            AtFlags::empty(),
        )
        .unwrap();
        let mine = rustix::fs::openat(
            &deepest,
            "mine",
            OFlags::CREATE | OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        drop(mine);
        drop(deepest);

        let (uid, gid) = (54_321, 54_322);
        let base = root.path().to_path_buf();
        on_a_small_stack(move || chown_tree(&base, Path::new("wt"), uid, gid).unwrap());

        // Every level, the plain file and the link itself are re-owned; the
        // link's target and the hard-linked foreign file are not.
        let mut fd = rustix::fs::open(root.path().join("wt"), DIR_FLAGS, Mode::empty()).unwrap();
        for level in 0..DEEP {
            let st = rustix::fs::fstat(&fd).unwrap();
            assert_eq!((st.st_uid, st.st_gid), (uid, gid), "level {level}");
            fd = rustix::fs::openat(&fd, "d", DIR_FLAGS, Mode::empty()).unwrap();
        }
        let owner = |name: &str| {
            let st = rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW).unwrap();
            (st.st_uid, st.st_gid)
        };
        assert_eq!(owner("mine"), (uid, gid));
        assert_eq!(owner("out"), (uid, gid));
        assert_eq!(owner("hard"), (0, 0));
        use std::os::unix::fs::MetadataExt;
        for target in [
            outside.path().to_path_buf(),
            outside.path().join("precious"),
        ] {
            let md = fs::metadata(&target).unwrap();
            assert_eq!((md.uid(), md.gid()), (0, 0), "{}", target.display());
        }
        // std's remove_dir_all (the temporary directory's cleanup) recurses.
        drop(fd);
        assert!(remove(root.path(), Path::new("wt")).unwrap());
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
