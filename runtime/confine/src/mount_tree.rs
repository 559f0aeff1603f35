//! The exec's filesystem: a fresh root (a tmpfs) holding only what the spec
//! lets it see, then `pivot_root` into it and the old root detached.
//!
//! Why a new root rather than tmpfs over the hidden places: a deny-list of
//! places to hide misses whatever it did not name (a new socket under
//! `/run`, another user's home, a mount added later), while an allow-list of
//! binds shows only what was named. The worktree is bound at `/work`, so the
//! command sees the frame a container gives and no command text is rewritten.
//!
//! Sources are opened (`O_PATH`) before anything is mounted, so mounting the
//! new root's tmpfs on `/tmp` cannot hide a source that lives under `/tmp`.
//! Each bind is cloned detached (`open_tree`), given `nosuid,nodev` (devices
//! keep `dev`) and read-only where asked (`mount_setattr`, which only sets
//! flags, so those a user namespace has locked stay), and attached
//! (`move_mount`) to a mountpoint opened beneath the new root without
//! following symlinks.

use std::ffi::CString;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::ConfineError;
use crate::spec::{DEFAULT_SYSTEM_DIRS, ExecSpec};

/// Where the new root's tmpfs is mounted before the pivot (in the private
/// mount namespace only).
const STAGING: &str = "/tmp";
/// Secrets inside the system directories, covered by an empty file or
/// directory (readable by uid 0 even without capabilities, and by the
/// `shadow` group).
const MASKED: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssh",
    "/etc/ssl/private",
];

/// The device nodes a command gets.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

fn cstr(path: &Path) -> Result<CString, ConfineError> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| ConfineError::Path {
        what: "path with a NUL byte",
        path: path.to_path_buf(),
        source: std::io::Error::from_raw_os_error(libc::EINVAL),
    })
}

fn sys_mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> Result<(), ConfineError> {
    let source_c = source.map(cstr).transpose()?;
    let target_c = cstr(target)?;
    let fstype_c = fstype.and_then(|s| CString::new(s).ok());
    let data_c = data.and_then(|s| CString::new(s).ok());
    // SAFETY: every pointer is either null or a NUL-terminated string that
    // outlives the call.
    let rc = unsafe {
        libc::mount(
            source_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            target_c.as_ptr(),
            fstype_c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()),
            flags,
            data_c
                .as_ref()
                .map_or(std::ptr::null(), |c| c.as_ptr().cast()),
        )
    };
    if rc != 0 {
        return Err(ConfineError::last(format!(
            "mount {} on {}",
            source.map_or_else(
                || fstype.unwrap_or("-").to_string(),
                |s| s.display().to_string()
            ),
            target.display()
        )));
    }
    Ok(())
}

/// What goes at one place of the new root.
enum Entry {
    /// Bind the opened source here.
    Bind {
        source: OwnedFd,
        target: PathBuf,
        dir: bool,
        writable: bool,
        device: bool,
    },
    /// A symlink (a top-level `/bin -> usr/bin`).
    Symlink { target: PathBuf, points_to: PathBuf },
}

fn open_path(path: &Path) -> Result<OwnedFd, std::io::Error> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: a plain open of a NUL-terminated path; the descriptor is owned
    // below.
    let fd = unsafe { libc::open(c.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn bind(path: &Path, target: &Path, writable: bool, device: bool) -> Result<Entry, ConfineError> {
    let source = open_path(path).map_err(|source| ConfineError::Path {
        what: "open for binding",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(Entry::Bind {
        source,
        target: target.to_path_buf(),
        dir: path.is_dir(),
        writable,
        device,
    })
}

/// The entries of the new root, sources opened. Missing system directories
/// are skipped; a missing worktree or private tmp is an error; missing
/// writable or readable directories are skipped (nothing to show).
fn plan(spec: &ExecSpec) -> Result<Vec<Entry>, ConfineError> {
    let mut entries = Vec::new();
    let system: Vec<PathBuf> = if spec.system_dirs.is_empty() {
        DEFAULT_SYSTEM_DIRS.iter().map(PathBuf::from).collect()
    } else {
        spec.system_dirs.clone()
    };
    for dir in &system {
        match fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(points_to) = fs::read_link(dir) {
                    entries.push(Entry::Symlink {
                        target: dir.clone(),
                        points_to,
                    });
                }
            }
            Ok(_) => entries.push(bind(dir, dir, false, false)?),
            Err(_) => {}
        }
    }
    for (dirs, writable) in [(&spec.readable, false), (&spec.writable, true)] {
        for dir in dirs {
            if dir.starts_with("/work") {
                // Its mountpoint would be made inside the worktree, and it
                // would hide part of it.
                return Err(ConfineError::Path {
                    what: "a directory shown at its own path lies under /work, where the worktree is \
                           mounted (move berth's state directory out of /work)",
                    path: dir.clone(),
                    source: std::io::Error::from_raw_os_error(libc::EINVAL),
                });
            }
            if dir.exists() {
                entries.push(bind(dir, dir, writable, false)?);
            }
        }
    }
    entries.push(bind(
        &spec.worktree,
        Path::new("/work"),
        !spec.work_read_only,
        false,
    )?);
    if let Some(tmp) = &spec.private_tmp {
        entries.push(bind(tmp, Path::new("/tmp"), true, false)?);
        entries.push(bind(tmp, Path::new("/var/tmp"), true, false)?);
    }
    for name in DEVICES {
        let dev = Path::new("/dev").join(name);
        if dev.exists() {
            entries.push(bind(&dev, &dev, true, true)?);
        }
    }
    // Shallow places first, so a deeper mountpoint is made inside its parent's
    // mount (a home under the private tmp lands in that tmp, not under it).
    entries.sort_by_key(|e| match e {
        Entry::Bind { target, .. } | Entry::Symlink { target, .. } => target.components().count(),
    });
    Ok(entries)
}

fn make_mountpoint(at: &Path, dir: bool) -> Result<(), ConfineError> {
    let made = if dir {
        fs::create_dir_all(at)
    } else {
        if let Some(parent) = at.parent() {
            fs::create_dir_all(parent).map_err(|source| ConfineError::Path {
                what: "make a mountpoint",
                path: at.to_path_buf(),
                source,
            })?;
        }
        fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(at)
            .map(drop)
    };
    made.map_err(|source| ConfineError::Path {
        what: "make a mountpoint",
        path: at.to_path_buf(),
        source,
    })
}

fn inside(root: &Path, target: &Path) -> PathBuf {
    root.join(target.strip_prefix("/").unwrap_or(target))
}

fn mount_entry(root: &Path, root_fd: &OwnedFd, entry: &Entry) -> Result<(), ConfineError> {
    match entry {
        Entry::Symlink { target, points_to } => {
            let at = inside(root, target);
            std::os::unix::fs::symlink(points_to, &at).map_err(|source| ConfineError::Path {
                what: "make a symlink",
                path: at,
                source,
            })
        }
        Entry::Bind {
            source,
            target,
            dir,
            writable,
            device,
        } => {
            let mut attrs = MOUNT_ATTR_NOSUID;
            if !*device {
                attrs |= MOUNT_ATTR_NODEV;
            }
            if !*writable {
                attrs |= MOUNT_ATTR_RDONLY;
            }
            let tree = detached_bind(source, attrs)?;
            let at = open_beneath(root_fd, target, *dir)?;
            // SAFETY: both descriptors are ours; empty paths with the flags
            // that say so.
            let rc = unsafe {
                libc::syscall(
                    libc::SYS_move_mount,
                    tree.as_raw_fd(),
                    c"".as_ptr(),
                    at.as_raw_fd(),
                    c"".as_ptr(),
                    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
                )
            };
            if rc != 0 {
                return Err(ConfineError::last(format!("mount on {}", target.display())));
            }
            Ok(())
        }
    }
}

/// `open_tree`/`mount_setattr`/`move_mount` (Linux 5.12+): a bind is made
/// detached, its flags set (only ever set, so flags a user namespace has
/// locked stay), then attached to a mountpoint opened without following
/// symlinks — no path is looked up twice.
const OPEN_TREE_CLONE: libc::c_uint = 1;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;
const MOUNT_ATTR_RDONLY: u64 = 0x1;
const MOUNT_ATTR_NOSUID: u64 = 0x2;
const MOUNT_ATTR_NODEV: u64 = 0x4;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

fn detached_bind(source: &OwnedFd, attrs: u64) -> Result<OwnedFd, ConfineError> {
    // SAFETY: clones the mount tree at `source` into a new detached tree,
    // returned as a descriptor we own below.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            source.as_raw_fd(),
            c"".as_ptr(),
            OPEN_TREE_CLONE
                | AT_RECURSIVE
                | libc::AT_EMPTY_PATH as libc::c_uint
                | libc::O_CLOEXEC as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(ConfineError::last("open_tree (Linux 5.2+)"));
    }
    // SAFETY: `fd` is a new descriptor owned by no one else.
    let tree = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
    set_attrs(
        tree.as_raw_fd(),
        c"",
        libc::AT_EMPTY_PATH as libc::c_uint | AT_RECURSIVE,
        attrs,
    )
    .map_err(|source| ConfineError::Sys {
        op: "mount_setattr (Linux 5.12+)".into(),
        source,
    })?;
    Ok(tree)
}

/// Sets `attrs` on the mount at `path` relative to `dirfd`
/// (`mount_setattr(2)`).
fn set_attrs(
    dirfd: libc::c_int,
    path: &std::ffi::CStr,
    flags: libc::c_uint,
    attrs: u64,
) -> std::io::Result<()> {
    let attr = MountAttr {
        attr_set: attrs,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a NUL-terminated path, and a pointer to a local struct with
    // its size.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            dirfd,
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Opens (`O_PATH`) the mountpoint `target` beneath the new root, making
/// each missing directory — or the final empty file — on the way, and never
/// following a symlink: a mountpoint may lie under a directory a command can
/// write (a home under the private `/tmp`), where a planted symlink must not
/// lead the setup out.
fn open_beneath(root: &OwnedFd, target: &Path, dir: bool) -> Result<OwnedFd, ConfineError> {
    let fail = |source: std::io::Error| ConfineError::Path {
        what: "make a mountpoint (no symlinks on the way)",
        path: target.to_path_buf(),
        source,
    };
    let parts: Vec<&std::ffi::OsStr> = target
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(part) => Some(part),
            _ => None,
        })
        .collect();
    // SAFETY: duplicating a descriptor we hold.
    let mut current = root.try_clone().map_err(fail)?;
    for (i, part) in parts.iter().enumerate() {
        let name = CString::new(part.as_bytes())
            .map_err(|_| fail(std::io::Error::from_raw_os_error(libc::EINVAL)))?;
        let last = i + 1 == parts.len();
        // SAFETY: *at calls relative to a descriptor we own, on a
        // NUL-terminated name; each new descriptor is owned below.
        let fd = unsafe {
            if last && !dir {
                let made = libc::openat(
                    current.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_CREAT
                        | libc::O_EXCL
                        | libc::O_WRONLY
                        | libc::O_NOFOLLOW
                        | libc::O_CLOEXEC,
                    0o644,
                );
                if made >= 0 {
                    libc::close(made);
                } else if std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST) {
                    return Err(fail(std::io::Error::last_os_error()));
                }
                libc::openat(
                    current.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            } else {
                if libc::mkdirat(current.as_raw_fd(), name.as_ptr(), 0o755) != 0
                    && std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
                {
                    return Err(fail(std::io::Error::last_os_error()));
                }
                libc::openat(
                    current.as_raw_fd(),
                    name.as_ptr(),
                    libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            }
        };
        if fd < 0 {
            return Err(fail(std::io::Error::last_os_error()));
        }
        // SAFETY: `fd` was just opened and is owned by no one else.
        current = unsafe { OwnedFd::from_raw_fd(fd) };
    }
    if !dir {
        // SAFETY: fstat into a zeroed local.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: a valid descriptor and a pointer to a local.
        let rc = unsafe { libc::fstat(current.as_raw_fd(), &mut st) };
        if rc != 0 || st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return Err(fail(std::io::Error::from_raw_os_error(libc::ELOOP)));
        }
    }
    Ok(current)
}

/// The parts of `/proc` that reach the whole host (sysctls, the magic SysRq
/// key, interrupts, buses), bound read-only over themselves as bubblewrap
/// does: a command keeping uid 0 owns them, and Landlock may be missing.
const PROC_READ_ONLY: &[&str] = &["sys", "sysrq-trigger", "irq", "bus", "fs"];

fn proc_read_only_parts(proc_dir: &Path) -> Result<(), ConfineError> {
    for part in PROC_READ_ONLY {
        let path = proc_dir.join(part);
        let Ok(source) = open_path(&path) else {
            continue;
        };
        let tree = detached_bind(
            &source,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        )?;
        // SAFETY: both descriptors are ours; empty paths with the flags that
        // say so.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_move_mount,
                tree.as_raw_fd(),
                c"".as_ptr(),
                source.as_raw_fd(),
                c"".as_ptr(),
                MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
            )
        };
        if rc != 0 {
            return Err(ConfineError::last(format!(
                "bind {} read-only",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Covers each [`MASKED`] path the new root shows: a directory with an
/// empty read-only tmpfs, a file with an empty file.
fn mask_secrets(root: &Path) -> Result<(), ConfineError> {
    let empty = root.join(".empty");
    make_mountpoint(&empty, false)?;
    for path in MASKED {
        let at = inside(root, Path::new(path));
        let Ok(meta) = fs::symlink_metadata(&at) else {
            continue;
        };
        if meta.is_dir() {
            sys_mount(
                None,
                &at,
                Some("tmpfs"),
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                Some("size=4k,mode=0755"),
            )?;
        } else if meta.is_file() {
            sys_mount(Some(&empty), &at, None, libc::MS_BIND, None)?;
            sys_mount(
                None,
                &at,
                None,
                libc::MS_BIND
                    | libc::MS_REMOUNT
                    | libc::MS_RDONLY
                    | libc::MS_NOSUID
                    | libc::MS_NODEV,
                None,
            )?;
        }
    }
    Ok(())
}

fn dev_links(root: &Path) -> Result<(), ConfineError> {
    for (name, to) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        let at = root.join("dev").join(name);
        std::os::unix::fs::symlink(to, &at).map_err(|source| ConfineError::Path {
            what: "make a symlink",
            path: at,
            source,
        })?;
    }
    let shm = root.join("dev/shm");
    make_mountpoint(&shm, true)?;
    sys_mount(
        None,
        &shm,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=1777,size=64m"),
    )
}

/// Builds the new root and pivots into it. Runs as PID 1 of the exec's PID
/// namespace, in its private mount namespace.
pub fn enter(spec: &ExecSpec) -> Result<(), ConfineError> {
    build(spec, true)
}

/// Builds the new root without a `/proc` (only its mountpoint) and pivots
/// into it: the resident's tree, shared by the berth's execs, each of which
/// mounts the `/proc` of its own PID namespace ([`exec_mounts`]).
pub fn enter_without_proc(spec: &ExecSpec) -> Result<(), ConfineError> {
    build(spec, false)
}

/// What [`exec_mounts`] mounts anew for each exec: a resident never holds
/// a descriptor of these (it would name the resident's, not the exec's).
pub const MOUNTED_PER_EXEC: [&str; 1] = ["/proc"];

/// What one exec adds to the resident's tree, in its own mount namespace
/// (a copy of the resident's): the `/proc` of its PID namespace, and
/// `/work` read-only when the exec must not write it.
pub fn exec_mounts(work_read_only: bool) -> Result<(), ConfineError> {
    exec_proc()?;
    if work_read_only {
        make_work_read_only()?;
    }
    Ok(())
}

/// The `/proc` of the calling PID 1's namespace, in its own mount
/// namespace: what a standby PID 1 mounts before its order comes.
pub fn exec_proc() -> Result<(), ConfineError> {
    mount_proc(Path::new(MOUNTED_PER_EXEC[0]))
}

/// `/work` read-only, in the calling process's own mount namespace only.
pub fn make_work_read_only() -> Result<(), ConfineError> {
    set_attrs(libc::AT_FDCWD, c"/work", AT_RECURSIVE, MOUNT_ATTR_RDONLY).map_err(|source| {
        ConfineError::Sys {
            op: "make /work read-only".into(),
            source,
        }
    })
}

fn mount_proc(proc_dir: &Path) -> Result<(), ConfineError> {
    sys_mount(
        None,
        proc_dir,
        Some("proc"),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )
    .map_err(|e| match e {
        ConfineError::Sys { source, .. } => ConfineError::Unavailable {
            mechanism: "a /proc for the exec's PID namespace",
            remedy: "the host's /proc is partly covered (a container?): run berth where /proc is fully visible",
            source,
        },
        other => other,
    })?;
    proc_read_only_parts(proc_dir)
}

fn build(spec: &ExecSpec, with_proc: bool) -> Result<(), ConfineError> {
    // Nothing mounted here propagates back to the host.
    sys_mount(
        None,
        Path::new("/"),
        None,
        libc::MS_REC | libc::MS_PRIVATE,
        None,
    )?;
    let entries = plan(spec)?;
    let root = Path::new(STAGING);
    sys_mount(
        None,
        root,
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NODEV,
        Some("mode=0755,size=1m"),
    )?;
    make_mountpoint(&root.join("dev"), true)?;
    sys_mount(
        None,
        &root.join("dev"),
        Some("tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some("mode=0755,size=64k"),
    )?;
    if spec.private_tmp.is_none() {
        for tmp in ["tmp", "var/tmp"] {
            let at = root.join(tmp);
            make_mountpoint(&at, true)?;
            sys_mount(
                None,
                &at,
                Some("tmpfs"),
                libc::MS_NOSUID | libc::MS_NODEV,
                Some("mode=1777"),
            )?;
        }
    }
    let root_fd = open_path(root).map_err(|source| ConfineError::Path {
        what: "open the new root",
        path: root.to_path_buf(),
        source,
    })?;
    for entry in &entries {
        mount_entry(root, &root_fd, entry)?;
    }
    drop(root_fd);
    drop(entries);
    mask_secrets(root)?;
    dev_links(root)?;
    let proc_dir = root.join("proc");
    make_mountpoint(&proc_dir, true)?;
    if with_proc {
        mount_proc(&proc_dir)?;
    }
    // The new root itself cannot be written.
    sys_mount(
        None,
        root,
        None,
        libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
        None,
    )?;
    pivot(root)
}

fn pivot(root: &Path) -> Result<(), ConfineError> {
    let root_c = cstr(root)?;
    let dot = c".";
    // SAFETY: plain system calls on NUL-terminated paths.
    unsafe {
        if libc::chdir(root_c.as_ptr()) != 0 {
            return Err(ConfineError::last("chdir to the new root"));
        }
        // pivot_root(".", "."): the old root is stacked under the new one and
        // detached next, so no directory for it is needed.
        if libc::syscall(libc::SYS_pivot_root, dot.as_ptr(), dot.as_ptr()) != 0 {
            return Err(ConfineError::last("pivot_root"));
        }
        if libc::umount2(dot.as_ptr(), libc::MNT_DETACH) != 0 {
            return Err(ConfineError::last("detach the old root"));
        }
        if libc::chdir(c"/".as_ptr()) != 0 {
            return Err(ConfineError::last("chdir /"));
        }
    }
    Ok(())
}

/// The paths a command may write and read inside the new root, for
/// Landlock.
pub fn landlock_paths(spec: &ExecSpec) -> crate::landlock_rules::Paths {
    let mut write: Vec<PathBuf> = spec.writable.clone();
    write.extend(["/tmp", "/var/tmp", "/dev"].map(PathBuf::from));
    let mut read: Vec<PathBuf> = if spec.system_dirs.is_empty() {
        DEFAULT_SYSTEM_DIRS.iter().map(PathBuf::from).collect()
    } else {
        spec.system_dirs.clone()
    };
    read.extend(spec.readable.iter().cloned());
    read.push("/proc".into());
    if spec.work_read_only {
        read.push("/work".into());
    } else {
        write.push("/work".into());
    }
    crate::landlock_rules::Paths { write, read }
}
