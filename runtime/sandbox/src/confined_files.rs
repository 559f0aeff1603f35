//! berth's file actions (`file_read`, a directory listing, `file_write`)
//! confined beneath the mount a frame path falls in.
//!
//! The trees these actions touch — the worktree at `/work`, the agent's
//! repository, a runner's extra roots — are written by the agent, which can
//! plant links in them (committed, or made with `ln -s` in a command) and swap
//! a directory for a link between berth's check and berth's use. A plain path
//! operation follows those links on the host, where `rootfs -> /` is the
//! host's root. So nothing here opens a path by name: the mount's root
//! directory is opened once per operation, and every open below it is
//! `openat2(rootfd, rel, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` — the
//! kernel refuses (`EXDEV`, `ELOOP`) any resolution that would leave the
//! root, whatever the agent does at the same moment. Writes add `O_NOFOLLOW`
//! on the last component and create missing parents with `mkdirat` on a
//! directory fd obtained that way; reads are bounded by the fd's `fstat`;
//! every fd is `O_CLOEXEC`. In a container berth what berth creates is
//! `fchown`ed, on its fd, to the container's uid.
//!
//! The kernel's answer is also the decision's: [`ConfinedFiles::resolve`]
//! follows a frame path's links in the frame (an absolute target is a
//! container path in a container berth, a host path in the runner), reading
//! each link with `readlinkat` on an `O_PATH | O_NOFOLLOW` fd opened beneath
//! its mount, so the reason of a refusal names the link, its target and where
//! the path leads without berth following anything. An absolute link that
//! stays in its mount (`/work/a -> /work/b`) is refused by `RESOLVE_BENEATH`
//! as written; the operation then runs once more on the resolved path, still
//! beneath the root, so the retry cannot escape either.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use berth_policy::scope::normalize;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::frame_links::{BENEATH, STRICT, mount_of, resolve};
pub use crate::frame_links::{LinkStep, LinkTargets, Resolution};

/// The largest file `file_read` returns, and the largest listing (bytes of
/// names).
pub const MAX_READ: u64 = 16 << 20;

/// One mount of a berth's frame, as the file actions see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileMount {
    /// Where it is in the frame (`/work`).
    pub frame: String,
    /// Its root on this host.
    pub host: PathBuf,
    /// Whether `file_write` may write under it.
    pub writable: bool,
}

/// Which file action, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOp {
    Read,
    Write,
}

impl FileOp {
    fn done(self) -> &'static str {
        match self {
            FileOp::Read => "read",
            FileOp::Write => "written",
        }
    }
}

/// What a read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileContent {
    /// A regular file's bytes.
    File(Vec<u8>),
    /// A directory's entries, sorted, one a line, `/` after a directory and
    /// `@` after a link (not followed: where it points is a read of its own).
    Listing(String),
}

/// A read, with where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The frame path, normalised.
    pub frame_path: String,
    /// The host path of what was opened (beneath the mount's root).
    pub host_path: PathBuf,
    pub content: FileContent,
}

/// A write, with where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileWritten {
    pub frame_path: String,
    pub host_path: PathBuf,
    pub bytes: u64,
    /// Whether the file was created by this write.
    pub created: bool,
}

/// Why a file action was refused or failed. Each names the frame path and
/// says whether anything was read or written.
#[derive(Debug, thiserror::Error)]
pub enum FileActionError {
    #[error("{frame_path} is not on a mount of this berth ({mounts}): {hint}; nothing was {}", op.done())]
    NotOnMount {
        frame_path: String,
        mounts: String,
        hint: String,
        op: FileOp,
    },
    /// The path leaves its mount through a link (or could not be resolved
    /// without following one).
    #[error("{}", escape_message(frame_path, mount, resolution.as_deref(), detail, *op))]
    Escape {
        frame_path: String,
        /// The mount the path is written under (frame path).
        mount: String,
        resolution: Option<Box<Resolution>>,
        /// What the kernel or the resolution said.
        detail: String,
        op: FileOp,
    },
    #[error("{frame_path} is on {mount}, mounted read-only in the berth: nothing was written")]
    ReadOnly { frame_path: String, mount: String },
    #[error("{frame_path} is {size} bytes; file_read returns at most {MAX_READ}: nothing was read")]
    TooLarge { frame_path: String, size: u64 },
    #[error(
        "{frame_path} has more entries than file_read returns ({MAX_READ} bytes of names): list a subdirectory, or use a terminal command"
    )]
    TooManyEntries { frame_path: String },
    #[error("{frame_path} is {kind}, not a regular file or a directory: nothing was {}", op.done())]
    NotRegular {
        frame_path: String,
        kind: &'static str,
        op: FileOp,
    },
    #[error(
        "{frame_path} has {links} hard links: berth writes only a file with one, so a write cannot reach a file by another name; nothing was written"
    )]
    HardLinked { frame_path: String, links: u64 },
    #[error(
        "this kernel has no openat2 (Linux 5.6 or later): berth cannot confine {frame_path} beneath its mount, so nothing was {}",
        op.done()
    )]
    NoOpenat2 { frame_path: String, op: FileOp },
    #[error("{what} {frame_path} (host path {}): {source}", host.display())]
    Io {
        what: &'static str,
        frame_path: String,
        host: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn escape_message(
    frame_path: &str,
    mount: &str,
    resolution: Option<&Resolution>,
    detail: &str,
    op: FileOp,
) -> String {
    let how = match resolution {
        Some(r) => r.describe(),
        None => format!("cannot be resolved without following a link ({detail})"),
    };
    format!(
        "{frame_path} {how}, outside {mount}: refused, nothing was {}; berth reads and writes only beneath the mount a path is written under",
        op.done()
    )
}

/// A mount selected for a frame path.
struct Located<'a> {
    path: String,
    index: usize,
    mount: &'a FileMount,
    /// Below the mount's root, without a leading `/`; empty for the root.
    rel: String,
}

impl Located<'_> {
    /// The refusal of a path that leads out of this mount.
    fn escape(
        &self,
        op: FileOp,
        resolution: Option<Resolution>,
        detail: String,
    ) -> FileActionError {
        FileActionError::Escape {
            frame_path: self.path.clone(),
            mount: self.mount.frame.clone(),
            resolution: resolution.map(Box::new),
            detail,
            op,
        }
    }

    fn host(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.mount.host.clone()
        } else {
            self.mount.host.join(rel)
        }
    }
}

/// A step that failed: because the kernel refused to leave the root, or for
/// another reason (already the error to return).
enum Attempt {
    Escape(Errno),
    Failed(FileActionError),
}

/// The file actions of one berth. See the module docs.
#[derive(Debug, Clone)]
pub struct ConfinedFiles {
    /// Longest frame prefix first.
    mounts: Vec<FileMount>,
    targets: LinkTargets,
    /// Who owns what berth creates (a container's uid and gid).
    owner: Option<(u32, u32)>,
    /// The mode of the files it writes (a secret's 0600), when not 0644.
    file_mode: Option<u32>,
    /// Said when a path is on no mount.
    off_mount_hint: String,
}

impl ConfinedFiles {
    /// Actions on `mounts`, with absolute link targets read as `targets`
    /// says.
    pub fn new(mounts: Vec<FileMount>, targets: LinkTargets) -> ConfinedFiles {
        let mut mounts: Vec<FileMount> = mounts
            .into_iter()
            .map(|m| FileMount {
                frame: normalize("/", &m.frame),
                ..m
            })
            .collect();
        mounts.sort_by_key(|m| std::cmp::Reverse(m.frame.len()));
        let off_mount_hint = match targets {
            LinkTargets::Frame => "it is in the container's own filesystem, not on a mount of this host: read or write it with a terminal command in the berth".to_string(),
            LinkTargets::Host => "berth's file actions reach only the worktree (/work) and the project's extra roots; a person can run a terminal command for anything else".to_string(),
        };
        ConfinedFiles {
            mounts,
            targets,
            owner: None,
            file_mode: None,
            off_mount_hint,
        }
    }

    /// What berth creates is handed to `uid`:`gid` (on its fd).
    pub fn with_owner(mut self, uid: u32, gid: u32) -> ConfinedFiles {
        self.owner = Some((uid, gid));
        self
    }

    /// The files it writes get `mode` (created so, or set on the fd when
    /// they were there): a secret for the berth's uid alone is 0600.
    pub fn with_file_mode(mut self, mode: u32) -> ConfinedFiles {
        self.file_mode = Some(mode);
        self
    }

    pub fn mounts(&self) -> &[FileMount] {
        &self.mounts
    }

    fn mount_of(&self, path: &str) -> Option<(usize, String)> {
        mount_of(&self.mounts, path)
    }

    /// Where a frame path leads once its links are followed in the frame
    /// (see [`crate::frame_links`]). Fails, with why, on a loop or a path
    /// that changes while it is read.
    pub fn resolve(&self, frame_path: &str) -> Result<Resolution, String> {
        resolve(&self.mounts, self.targets, frame_path)
    }

    fn locate(&self, frame_path: &str, op: FileOp) -> Result<Located<'_>, FileActionError> {
        let path = normalize("/", frame_path);
        let Some((index, rel)) = self.mount_of(&path) else {
            return Err(FileActionError::NotOnMount {
                frame_path: path,
                mounts: self
                    .mounts
                    .iter()
                    .map(|m| m.frame.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                hint: self.off_mount_hint.clone(),
                op,
            });
        };
        Ok(Located {
            path,
            index,
            mount: &self.mounts[index],
            rel,
        })
    }

    fn open_root(at: &Located<'_>) -> Result<OwnedFd, FileActionError> {
        // The root is berth's own path (its state directory, a configured
        // extra root), not the agent's: it is the one open by name.
        rustix::fs::open(
            &at.mount.host,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| FileActionError::Io {
            what: "open the mount of",
            frame_path: at.path.clone(),
            host: at.mount.host.clone(),
            source: e.into(),
        })
    }

    /// Reads a file, or lists a directory, at a frame path.
    pub fn read(&self, frame_path: &str) -> Result<FileRead, FileActionError> {
        let op = FileOp::Read;
        let at = self.locate(frame_path, op)?;
        let root = Self::open_root(&at)?;
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK;
        let attempt = |rel: &str, how: ResolveFlags| -> Result<OwnedFd, Attempt> {
            open_beneath(&root, rel, flags, Mode::empty(), how)
                .map_err(|e| self.attempt_error(&at, rel, "open", op, e))
        };
        let (fd, rel) = match attempt(&at.rel, BENEATH) {
            Ok(fd) => (fd, at.rel.clone()),
            Err(Attempt::Failed(e)) => return Err(e),
            Err(Attempt::Escape(errno)) => self.retry_resolved(&at, op, errno, |rel| {
                attempt(rel, STRICT).map(|fd| (fd, rel.to_string()))
            })?,
        };
        let host_path = at.host(&rel);
        let io = |what: &'static str| {
            let host = host_path.clone();
            let frame_path = at.path.clone();
            move |e: std::io::Error| FileActionError::Io {
                what,
                frame_path,
                host,
                source: e,
            }
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| io("inspect")(e.into()))?;
        let content = match FileType::from_raw_mode(stat.st_mode) {
            FileType::Directory => FileContent::Listing(list(fd, &at.path, &host_path)?),
            FileType::RegularFile => {
                let size = u64::try_from(stat.st_size).unwrap_or(0);
                if size > MAX_READ {
                    return Err(FileActionError::TooLarge {
                        frame_path: at.path.clone(),
                        size,
                    });
                }
                let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
                // Bounded even if the file grows after the fstat.
                std::fs::File::from(fd)
                    .take(MAX_READ + 1)
                    .read_to_end(&mut bytes)
                    .map_err(io("read"))?;
                if bytes.len() as u64 > MAX_READ {
                    return Err(FileActionError::TooLarge {
                        frame_path: at.path.clone(),
                        size: bytes.len() as u64,
                    });
                }
                FileContent::File(bytes)
            }
            other => {
                return Err(FileActionError::NotRegular {
                    frame_path: at.path.clone(),
                    kind: kind_name(other),
                    op,
                });
            }
        };
        Ok(FileRead {
            frame_path: at.path.clone(),
            host_path,
            content,
        })
    }

    /// Writes `content` to a frame path, creating the file and its missing
    /// parent directories.
    pub fn write(&self, frame_path: &str, content: &[u8]) -> Result<FileWritten, FileActionError> {
        let op = FileOp::Write;
        let at = self.locate(frame_path, op)?;
        if !at.mount.writable {
            return Err(FileActionError::ReadOnly {
                frame_path: at.path.clone(),
                mount: at.mount.frame.clone(),
            });
        }
        if at.rel.is_empty() {
            return Err(FileActionError::NotRegular {
                frame_path: at.path.clone(),
                kind: "the root directory of its mount",
                op,
            });
        }
        let root = Self::open_root(&at)?;
        let (created, rel) = match self.write_at(&at, &root, &at.rel, content, BENEATH) {
            Ok(created) => (created, at.rel.clone()),
            Err(Attempt::Failed(e)) => return Err(e),
            Err(Attempt::Escape(errno)) => self.retry_resolved(&at, op, errno, |rel| {
                self.write_at(&at, &root, rel, content, STRICT)
                    .map(|created| (created, rel.to_string()))
            })?,
        };
        Ok(FileWritten {
            frame_path: at.path.clone(),
            host_path: at.host(&rel),
            bytes: content.len() as u64,
            created,
        })
    }

    /// Writes below `root` at `rel` (non-empty); whether it created the file.
    fn write_at(
        &self,
        at: &Located<'_>,
        root: &OwnedFd,
        rel: &str,
        content: &[u8],
        how: ResolveFlags,
    ) -> Result<bool, Attempt> {
        let op = FileOp::Write;
        let (parent_rel, name) = match rel.rsplit_once('/') {
            Some((p, n)) => (p, n),
            None => ("", rel),
        };
        let parent = self.open_parents(at, root, parent_rel, how)?;
        let flags =
            OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::NONBLOCK;
        let fail = |what: &'static str, e: Errno| self.attempt_error(at, rel, what, op, e);
        let (fd, created) = match open_beneath(
            &parent,
            name,
            flags | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(self.file_mode.unwrap_or(0o644)),
            how,
        ) {
            Ok(fd) => (fd, true),
            // It exists (possibly as a link: `O_EXCL` never follows one).
            Err(Errno::EXIST) => (
                open_beneath(&parent, name, flags, Mode::empty(), how)
                    .map_err(|e| fail("open", e))?,
                false,
            ),
            Err(e) => return Err(fail("create", e)),
        };
        let io = |what: &'static str, e: std::io::Error| {
            Attempt::Failed(FileActionError::Io {
                what,
                frame_path: at.path.clone(),
                host: at.host(rel),
                source: e,
            })
        };
        let stat = rustix::fs::fstat(&fd).map_err(|e| io("inspect", e.into()))?;
        let kind = FileType::from_raw_mode(stat.st_mode);
        if kind != FileType::RegularFile {
            return Err(Attempt::Failed(FileActionError::NotRegular {
                frame_path: at.path.clone(),
                kind: kind_name(kind),
                op,
            }));
        }
        #[allow(clippy::useless_conversion)] // st_nlink is u32 on some targets
        let links = u64::from(stat.st_nlink);
        if links > 1 {
            return Err(Attempt::Failed(FileActionError::HardLinked {
                frame_path: at.path.clone(),
                links,
            }));
        }
        if created {
            self.hand_over(&fd)
                .map_err(|e| io("hand to the berth's uid", e))?;
        }
        if let Some(mode) = self.file_mode {
            // Created under the umask, or there before: the mode asked for.
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(mode))
                .map_err(|e| io("set the mode of", e.into()))?;
        }
        rustix::fs::ftruncate(&fd, 0).map_err(|e| io("truncate", e.into()))?;
        std::fs::File::from(fd)
            .write_all(content)
            .map_err(|e| io("write", e))?;
        Ok(created)
    }

    /// Opens (creating what is missing) the directory `parent_rel` below
    /// `root`, each step beneath the root.
    fn open_parents(
        &self,
        at: &Located<'_>,
        root: &OwnedFd,
        parent_rel: &str,
        how: ResolveFlags,
    ) -> Result<OwnedFd, Attempt> {
        let op = FileOp::Write;
        let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let mut dir = open_beneath(root, "", dir_flags, Mode::empty(), how)
            .map_err(|e| self.attempt_error(at, "", "open", op, e))?;
        let parts: Vec<&str> = parent_rel.split('/').filter(|p| !p.is_empty()).collect();
        for i in 0..parts.len() {
            let prefix = parts[..=i].join("/");
            match open_beneath(root, &prefix, dir_flags, Mode::empty(), how) {
                Ok(fd) => dir = fd,
                Err(Errno::NOENT) => {
                    let made = match rustix::fs::mkdirat(&dir, parts[i], Mode::from_raw_mode(0o755))
                    {
                        Ok(()) => true,
                        // Made meanwhile, or a dangling link: the open says.
                        Err(Errno::EXIST) => false,
                        Err(e) => return Err(self.attempt_error(at, &prefix, "create", op, e)),
                    };
                    let fd = open_beneath(
                        &dir,
                        parts[i],
                        dir_flags | OFlags::NOFOLLOW,
                        Mode::empty(),
                        how,
                    )
                    .map_err(|e| self.attempt_error(at, &prefix, "open", op, e))?;
                    if made {
                        self.hand_over(&fd).map_err(|e| {
                            Attempt::Failed(FileActionError::Io {
                                what: "hand to the berth's uid",
                                frame_path: at.path.clone(),
                                host: at.host(&prefix),
                                source: e,
                            })
                        })?;
                    }
                    dir = fd;
                }
                Err(e) => return Err(self.attempt_error(at, &prefix, "open", op, e)),
            }
        }
        Ok(dir)
    }

    fn hand_over(&self, fd: &OwnedFd) -> std::io::Result<()> {
        // `-1` means "leave as is" to the kernel: never an owner to set.
        if let Some((uid, gid)) = self.owner.filter(|(u, g)| *u != u32::MAX && *g != u32::MAX) {
            rustix::fs::fchown(
                fd,
                Some(rustix::fs::Uid::from_raw(uid)),
                Some(rustix::fs::Gid::from_raw(gid)),
            )?;
        }
        Ok(())
    }

    fn attempt_error(
        &self,
        at: &Located<'_>,
        rel: &str,
        what: &'static str,
        op: FileOp,
        e: Errno,
    ) -> Attempt {
        match e {
            Errno::XDEV | Errno::LOOP => Attempt::Escape(e),
            Errno::NOSYS => Attempt::Failed(FileActionError::NoOpenat2 {
                frame_path: at.path.clone(),
                op,
            }),
            e => Attempt::Failed(FileActionError::Io {
                what,
                frame_path: at.path.clone(),
                host: at.host(rel),
                source: e.into(),
            }),
        }
    }

    /// After the kernel refused to leave the root: resolve the path in the
    /// frame; if it stays in its mount, run `again` once on the resolved
    /// path (still beneath the root, following no link), else refuse.
    fn retry_resolved<T>(
        &self,
        at: &Located<'_>,
        op: FileOp,
        errno: Errno,
        again: impl FnOnce(&str) -> Result<T, Attempt>,
    ) -> Result<T, FileActionError> {
        let escape =
            |resolution: Option<Resolution>, detail: String| at.escape(op, resolution, detail);
        let resolution = match self.resolve(&at.path) {
            Ok(r) => r,
            Err(detail) => return Err(escape(None, detail)),
        };
        let same_mount = resolution.on_mount.as_deref() == Some(at.mount.frame.as_str());
        match self.mount_of(&resolution.resolved) {
            Some((index, rel))
                if same_mount && index == at.index && resolution.resolved != at.path =>
            {
                match again(&rel) {
                    Ok(v) => Ok(v),
                    Err(Attempt::Failed(e)) => Err(e),
                    Err(Attempt::Escape(e)) => Err(escape(
                        Some(resolution),
                        format!("it changed while berth opened it: {e}"),
                    )),
                }
            }
            _ => Err(escape(Some(resolution), errno.to_string())),
        }
    }

    /// Where a frame path leads on this host, for the person who decides on
    /// it: its links followed within the mount it is written under (never
    /// out of it), then the host path beneath that mount's root. `Err` says
    /// why there is none: the path is on no mount, leads out of its mount
    /// (naming the links), or could not be resolved.
    pub fn host_path(&self, frame_path: &str) -> Result<PathBuf, String> {
        let at = self
            .locate(frame_path, FileOp::Read)
            .map_err(|e| e.to_string())?;
        let resolution = self.resolve(&at.path)?;
        match self.mount_of(&resolution.resolved) {
            Some((index, rel))
                if index == at.index
                    && resolution.on_mount.as_deref() == Some(at.mount.frame.as_str()) =>
            {
                Ok(at.host(&rel))
            }
            _ => Err(format!(
                "{} {}, outside {}",
                at.path,
                resolution.describe(),
                at.mount.frame
            )),
        }
    }

    /// Decision time: why a file action on `frame_path` must be refused, if
    /// it must — its path leads out of the mount it is written under. A
    /// path on no mount is the decision's own business (and refused at
    /// execution).
    pub fn check(&self, frame_path: &str, op: FileOp) -> Option<FileActionError> {
        let at = self.locate(frame_path, op).ok()?;
        let escape =
            |resolution: Option<Resolution>, detail: String| at.escape(op, resolution, detail);
        match self.resolve(&at.path) {
            Ok(r) if r.on_mount.as_deref() == Some(at.mount.frame.as_str()) => None,
            Ok(r) => Some(escape(Some(r), "leaves its mount".to_string())),
            Err(detail) => Some(escape(None, detail)),
        }
    }
}

/// `openat2` below `dir`; an empty `rel` is `dir` itself.
fn open_beneath(
    dir: &OwnedFd,
    rel: &str,
    flags: OFlags,
    mode: Mode,
    how: ResolveFlags,
) -> Result<OwnedFd, Errno> {
    let rel = if rel.is_empty() { "." } else { rel };
    rustix::fs::openat2(dir, rel, flags | OFlags::CLOEXEC, mode, how)
}

fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a directory",
        FileType::Symlink => "a link",
        FileType::Fifo => "a named pipe",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Unknown => "of an unknown kind",
    }
}

/// A directory's listing (see [`FileContent::Listing`]), at most
/// [`MAX_READ`] bytes of names; entries are never followed.
fn list(fd: OwnedFd, frame_path: &str, host: &Path) -> Result<String, FileActionError> {
    let io = |e: std::io::Error| FileActionError::Io {
        what: "list",
        frame_path: frame_path.to_string(),
        host: host.to_path_buf(),
        source: e,
    };
    let probe = fd.try_clone().map_err(io)?;
    let dir = Dir::new(fd).map_err(|e| io(e.into()))?;
    let mut names = Vec::new();
    let mut total = 0u64;
    for entry in dir {
        let entry = entry.map_err(|e| io(e.into()))?;
        let raw = entry.file_name().to_bytes();
        if raw == b"." || raw == b".." {
            continue;
        }
        let kind = match entry.file_type() {
            FileType::Unknown => {
                rustix::fs::statat(probe.as_fd(), entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)
                    .map(|s| FileType::from_raw_mode(s.st_mode))
                    .unwrap_or(FileType::Unknown)
            }
            k => k,
        };
        let mut name = OsStr::from_bytes(raw).to_string_lossy().into_owned();
        match kind {
            FileType::Directory => name.push('/'),
            FileType::Symlink => name.push('@'),
            _ => {}
        }
        total += name.len() as u64 + 1;
        if total > MAX_READ {
            return Err(FileActionError::TooManyEntries {
                frame_path: frame_path.to_string(),
            });
        }
        names.push(name);
    }
    names.sort();
    let mut out = names.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    Ok(out)
}
