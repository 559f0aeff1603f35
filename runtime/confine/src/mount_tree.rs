//! The exec's filesystem: a fresh root (a tmpfs) holding only what the spec
//! lets it see, then `pivot_root` into it and the old root detached.
//!
//! Why a new root rather than tmpfs over the hidden places: a deny-list of
//! places to hide misses whatever it did not name (a new socket under
//! `/run`, another user's home, a mount added later), while an allow-list of
//! binds shows only what was named. The worktree is bound at `/work`, so the
//! command sees the frame a container gives and no command text is rewritten.
//!
//! Sources are opened (`O_PATH`) before anything is mounted and bound from
//! `/proc/self/fd/N`, so mounting the new root's tmpfs on `/tmp` cannot hide
//! a source that lives under `/tmp`. Each bind is then remounted with
//! `nosuid,nodev` (devices keep `dev`), read-only where asked, keeping the
//! flags the source mount has locked (a user namespace may not clear them).

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

/// `MS_*` flags a bind keeps from its source mount (a user namespace may
/// not clear locked ones on remount).
fn locked_flags(source: &OwnedFd) -> libc::c_ulong {
    // SAFETY: `statvfs` is plain data; zeroed is a valid value.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor and a pointer to a local.
    if unsafe { libc::fstatvfs(source.as_raw_fd(), &mut st) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_RDONLY, libc::MS_RDONLY),
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag & st_flag != 0)
        .fold(0, |acc, (_, ms)| acc | ms)
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

fn mount_entry(root: &Path, entry: &Entry) -> Result<(), ConfineError> {
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
            let at = inside(root, target);
            make_mountpoint(&at, *dir)?;
            let from = PathBuf::from(format!("/proc/self/fd/{}", source.as_raw_fd()));
            sys_mount(Some(&from), &at, None, libc::MS_BIND | libc::MS_REC, None)?;
            let mut flags =
                libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID | locked_flags(source);
            if !*device {
                flags |= libc::MS_NODEV;
            }
            if !*writable {
                flags |= libc::MS_RDONLY;
            }
            sys_mount(None, &at, None, flags, None)
        }
    }
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
    for entry in &entries {
        mount_entry(root, entry)?;
    }
    drop(entries);
    mask_secrets(root)?;
    dev_links(root)?;
    let proc_dir = root.join("proc");
    make_mountpoint(&proc_dir, true)?;
    sys_mount(
        None,
        &proc_dir,
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
