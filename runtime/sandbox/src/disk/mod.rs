//! A berth's own disk: one ext4 image per berth, loop-mounted at the berth's
//! directory, so what an agent writes to `/work` and to its repository is
//! bounded in bytes and in files, in both modes.
//!
//! This engine's storage driver (fuse-overlayfs) cannot limit a container's
//! writable layer, and a runner exec writes host directories: a file system of
//! a fixed size under the worktree is the one bound both modes share. The
//! image is berth's own file in its state directory, never on a path an agent
//! can name; `mkfs.ext4` runs on that file only. The loop device is attached
//! with `LOOP_CONFIGURE` and `LO_FLAGS_AUTOCLEAR`, so it goes away with its
//! last mount — and one attached by a process that died before mounting goes
//! away with that process — and the file system is mounted `nosuid,nodev`
//! with `mount(2)`. Only root can do any of this: [`unavailable`] says, in
//! words for a person, why a berth gets no disk of its own here.
//!
//! The image is a copy of a template formatted once per size, inode count
//! and e2fsprogs ([`template`]), with a fresh UUID and directory hash seed;
//! where no template can be used, `mkfs.ext4` makes it as before, and the log
//! says why.
//!
//! A full disk is the agent's own problem (ENOSPC inside its berth); berth's
//! store, events and state live on other file systems.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use rustix::mount::{MountFlags, UnmountFlags};

mod superblock;
mod template;

pub use superblock::{FsIdentity, SuperblockError};
pub use template::TemplateError;

/// What a berth's disk is and where it goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskSpec {
    /// The image file, in berth's state directory (sparse: it takes what the
    /// file system holds, never more than `bytes`).
    pub image: PathBuf,
    /// The berth's directory, where the file system is mounted.
    pub mount_point: PathBuf,
    /// The file system's size.
    pub bytes: u64,
    /// How many files and directories it may hold (ext4 rounds up to fill
    /// its block groups).
    pub inodes: u64,
    /// Where formatted templates are kept (a directory of berth's state that
    /// only berth writes): a new image is a copy of one. `None`: every
    /// image is made by `mkfs.ext4`.
    pub templates: Option<PathBuf>,
}

/// How a new image was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Made {
    /// Copied from its template, with a fresh UUID and hash seed.
    FromTemplate,
    /// By `mkfs.ext4` (no template directory, or the template could not be
    /// used: the log says why).
    ByMkfs,
}

/// What [`attach`] found or did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attached {
    /// A new image was made and mounted.
    Created(Made),
    /// The image was there (a berth kept across `down`, or a reboot) and
    /// has been mounted again.
    Remounted,
    /// It was mounted already.
    AlreadyMounted,
}

/// What [`release`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Released {
    /// A mount at the berth's directory was taken away.
    pub unmounted: bool,
    /// It was busy and has been detached lazily: it goes when the last
    /// process using it ends.
    pub lazily: bool,
    /// The image file was deleted.
    pub image_removed: bool,
}

/// The size and room of a mounted disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiskUsage {
    pub bytes_total: u64,
    pub bytes_free: u64,
    pub files_total: u64,
    pub files_free: u64,
}

/// A mount read from `/proc/self/mountinfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountEntry {
    pub mount_point: PathBuf,
    /// The per-mount options (`rw,nosuid,nodev,relatime`).
    pub options: String,
    pub fs_type: String,
    pub source: String,
}

/// Why a disk could not be attached or released.
#[derive(Debug, thiserror::Error)]
pub enum DiskError {
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("mkfs.ext4 on {}: {message}", image.display())]
    Mkfs { image: PathBuf, message: String },
    #[error("attaching {} to a loop device: {message}", image.display())]
    Loop { image: PathBuf, message: String },
    #[error(
        "{} already holds files that are not on the berth's own disk (made before it had one, or while berth was not root); take the berth down (`berth down`) so the next `berth up` starts it on a disk of its own",
        path.display()
    )]
    NotEmpty { path: PathBuf },
    #[error("{} is a mount of {found}, not of the berth's disk {}", mount_point.display(), image.display())]
    ForeignMount {
        mount_point: PathBuf,
        image: PathBuf,
        found: String,
    },
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> DiskError + 'a {
    move |source| DiskError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

const LOOP_CONTROL: &str = "/dev/loop-control";
const LOOP_CTL_GET_FREE: libc::c_ulong = 0x4C82;
const LOOP_CONFIGURE: libc::c_ulong = 0x4C0A;
const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LO_FLAGS_AUTOCLEAR: u32 = 4;

/// `struct loop_info64` of `<linux/loop.h>`.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

/// `struct loop_config` of `<linux/loop.h>` (Linux 5.8).
#[repr(C)]
struct LoopConfig {
    fd: u32,
    block_size: u32,
    info: LoopInfo64,
    reserved: [u64; 8],
}

/// Where `mkfs.ext4` is: the usual places (root's `PATH` may lack `/sbin`
/// under `sudo`), then `PATH`.
pub fn mkfs_program() -> Option<PathBuf> {
    let fixed = ["/usr/sbin/mkfs.ext4", "/sbin/mkfs.ext4"].map(PathBuf::from);
    let path = std::env::var_os("PATH").unwrap_or_default();
    fixed
        .into_iter()
        .chain(std::env::split_paths(&path).map(|d| d.join("mkfs.ext4")))
        .find(|p| p.is_file())
}

/// Why berths get no disk of their own on this host, in words for a person
/// (with what to do); `None` when they do.
pub fn unavailable() -> Option<String> {
    if crate::identity::current_uid() != 0 {
        return Some(
            "berth is not running as root, and only root can mount a berth's own disk image; run berth as root (a system service) to bound it with [sandbox] disk".to_string(),
        );
    }
    if !Path::new(LOOP_CONTROL).exists() {
        return Some(format!(
            "this host has no {LOOP_CONTROL} (no loop devices: `modprobe loop`, or give a container `--device /dev/loop-control`)"
        ));
    }
    if mkfs_program().is_none() {
        return Some(
            "mkfs.ext4 is not installed (Debian and Ubuntu: `apt-get install e2fsprogs`)"
                .to_string(),
        );
    }
    None
}

/// Mounts the berth's disk at its directory, making the image first when
/// there is none. Idempotent: a disk mounted already is left as it is.
/// Refuses a directory that holds files of its own (they would be hidden).
pub fn attach(spec: &DiskSpec) -> Result<Attached, DiskError> {
    let mount_point = &spec.mount_point;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o755)
        .create(mount_point)
        .map_err(io("creating", mount_point))?;
    if let Some(entry) = mounted_at(mount_point)? {
        return match backing_file_of(&entry.source) {
            Some(found) if same_file(&found, &spec.image) => Ok(Attached::AlreadyMounted),
            found => Err(DiskError::ForeignMount {
                mount_point: mount_point.clone(),
                image: spec.image.clone(),
                found: found
                    .map(|f| format!("{} ({})", entry.source, f.display()))
                    .unwrap_or(entry.source),
            }),
        };
    }
    let mut entries = std::fs::read_dir(mount_point).map_err(io("reading", mount_point))?;
    if entries.next().is_some() {
        return Err(DiskError::NotEmpty {
            path: mount_point.clone(),
        });
    }
    let created = match std::fs::symlink_metadata(&spec.image) {
        Ok(m) if m.is_file() => None,
        Ok(_) => {
            return Err(DiskError::Io {
                what: "using as a disk image",
                path: spec.image.clone(),
                source: std::io::Error::other("not a regular file"),
            });
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Some(make_image(spec)?),
        Err(e) => return Err(io("reading", &spec.image)(e)),
    };
    let mounted = attach_and_mount(&spec.image, mount_point);
    if let Err(e) = mounted {
        if created.is_some() {
            let _ = std::fs::remove_file(&spec.image);
        }
        return Err(e);
    }
    Ok(created.map_or(Attached::Remounted, Attached::Created))
}

/// Makes a sparse image of `spec.bytes` and an ext4 file system on it,
/// owned by root (the agent's repository and worktree inside are given to
/// the berth's uid; the berth's directory stays berth's). No blocks are
/// reserved for root: the agent is never root. A copy of the template when
/// there is a template directory, `mkfs.ext4` otherwise or when the
/// template fails.
fn make_image(spec: &DiskSpec) -> Result<Made, DiskError> {
    let image = &spec.image;
    if let Some(parent) = image.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(io("creating", parent))?;
    }
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(image)
        .map_err(io("creating", image))?;
    let made = file
        .set_len(spec.bytes)
        .map_err(io("sizing", image))
        .and_then(|()| fill_image(spec, file));
    if made.is_err() {
        let _ = std::fs::remove_file(image);
    }
    made
}

/// Puts a file system on `file` (`spec.image`, all holes).
fn fill_image(spec: &DiskSpec, file: File) -> Result<Made, DiskError> {
    let image = &spec.image;
    if let Some(dir) = &spec.templates {
        match template::copy_into(dir, spec, &file) {
            Ok(identity) => {
                tracing::debug!(image = %image.display(), uuid = %identity.uuid_string(), "the berth's disk is a copy of its template");
                return Ok(Made::FromTemplate);
            }
            Err(e) => {
                tracing::warn!(image = %image.display(), error = %e, "the berth's disk template cannot be used: the disk is made by mkfs.ext4");
                // Nothing of a partial copy stays: all holes again.
                file.set_len(0)
                    .and_then(|()| file.set_len(spec.bytes))
                    .map_err(io("sizing", image))?;
            }
        }
    }
    drop(file);
    run_mkfs(image, spec.inodes).map(|()| Made::ByMkfs)
}

/// The path of `spec`'s template in `dir`, whether it exists or not (its
/// name is its key: the format, size and inode count).
pub fn template_path(dir: &Path, spec: &DiskSpec) -> Result<PathBuf, TemplateError> {
    template::path_for(dir, spec)
}

/// The UUID and directory hash seed of the ext4 file system in `image`.
pub fn filesystem_identity(image: &Path) -> Result<FsIdentity, TemplateError> {
    template::identity_of(image)
}

/// `mkfs.ext4`'s arguments for a berth's disk of `inodes` files, before the
/// image's path.
pub(crate) fn mkfs_args(inodes: u64) -> Vec<String> {
    [
        "-F",
        "-q",
        "-m",
        "0",
        "-L",
        "berth",
        "-N",
        &inodes.to_string(),
        // The file is new and sparse, so its unwritten inode tables and
        // journal already read as zeros: writing them out (~70 MB of an
        // 8 GiB disk, then synced) is work `berth up` waits for and leaks
        // nothing when skipped. The mount skips the kernel's background
        // zeroing for the same reason (`noinit_itable`).
        "-E",
        "root_owner=0:0,lazy_itable_init=1,lazy_journal_init=1",
    ]
    .map(str::to_string)
    .to_vec()
}

pub(crate) fn run_mkfs(image: &Path, inodes: u64) -> Result<(), DiskError> {
    let mkfs_error = |message: String| DiskError::Mkfs {
        image: image.to_path_buf(),
        message,
    };
    let program = mkfs_program().ok_or_else(|| mkfs_error("mkfs.ext4 is not installed".into()))?;
    let out = Command::new(program)
        .args(mkfs_args(inodes))
        .arg(image)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| mkfs_error(e.to_string()))?;
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(mkfs_error(format!(
            "{}: {}",
            out.status,
            stderr.trim().chars().take(500).collect::<String>()
        )))
    }
}

/// Attaches `image` to a free loop device (auto-clearing) and mounts it at
/// `mount_point`. The device is held open until the mount holds it.
fn attach_and_mount(image: &Path, mount_point: &Path) -> Result<(), DiskError> {
    let loop_error = |message: String| DiskError::Loop {
        image: image.to_path_buf(),
        message,
    };
    let backing = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(image)
        .map_err(io("opening", image))?;
    let control = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(LOOP_CONTROL)
        .map_err(|e| loop_error(format!("{LOOP_CONTROL}: {e}")))?;
    let mut last = String::new();
    // Another process may take the device the kernel named free: try again.
    for _ in 0..16 {
        // SAFETY: LOOP_CTL_GET_FREE takes no argument and returns an index.
        let index = unsafe { libc::ioctl(control.as_raw_fd(), LOOP_CTL_GET_FREE as _) };
        if index < 0 {
            return Err(loop_error(format!(
                "no free loop device: {}",
                std::io::Error::last_os_error()
            )));
        }
        let device = PathBuf::from(format!("/dev/loop{index}"));
        let dev = match open_device(&device) {
            Ok(d) => d,
            Err(e) => {
                last = format!("{}: {e}", device.display());
                continue;
            }
        };
        match configure(&dev, &backing, image) {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                last = format!("{} was taken meanwhile", device.display());
                continue;
            }
            Err(e) => return Err(loop_error(format!("{}: {e}", device.display()))),
        }
        drop(backing);
        let mounted = rustix::mount::mount(
            &device,
            mount_point,
            "ext4",
            MountFlags::NOSUID | MountFlags::NODEV,
            Some(c"noinit_itable"),
        );
        // The mount holds the device now; closing ours lets it clear itself
        // when the mount goes (at once, when the mount failed).
        drop(dev);
        return mounted.map_err(|e| DiskError::Io {
            what: "mounting the berth's disk at",
            path: mount_point.to_path_buf(),
            source: e.into(),
        });
    }
    Err(loop_error(last))
}

fn open_device(device: &Path) -> std::io::Result<File> {
    // devtmpfs makes the node as the device is added; wait briefly for it.
    for _ in 0..50 {
        match OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(device)
        {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                std::thread::sleep(Duration::from_millis(10))
            }
            other => return other,
        }
    }
    Err(std::io::Error::from(ErrorKind::NotFound))
}

fn configure(dev: &File, backing: &File, image: &Path) -> std::io::Result<()> {
    let mut name = [0u8; 64];
    let bytes = image.as_os_str().as_bytes();
    let n = bytes.len().min(63);
    name[..n].copy_from_slice(&bytes[..n]);
    let config = LoopConfig {
        fd: u32::try_from(backing.as_raw_fd()).map_err(std::io::Error::other)?,
        block_size: 0,
        info: LoopInfo64 {
            lo_device: 0,
            lo_inode: 0,
            lo_rdevice: 0,
            lo_offset: 0,
            lo_sizelimit: 0,
            lo_number: 0,
            lo_encrypt_type: 0,
            lo_encrypt_key_size: 0,
            lo_flags: LO_FLAGS_AUTOCLEAR,
            lo_file_name: name,
            lo_crypt_name: [0; 64],
            lo_encrypt_key: [0; 32],
            lo_init: [0; 2],
        },
        reserved: [0; 8],
    };
    // SAFETY: LOOP_CONFIGURE reads one `struct loop_config`, which `config`
    // is (repr(C), the kernel's layout), alive for the call.
    let rc = unsafe {
        libc::ioctl(
            dev.as_raw_fd(),
            LOOP_CONFIGURE as _,
            &config as *const LoopConfig,
        )
    };
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// How long [`release`] waits for the kernel to let the image's loop
/// device go.
const LOOP_RELEASE_WAIT: Duration = Duration::from_secs(5);

/// Takes the berth's disk away: unmounts it (lazily when something still
/// uses it: a process of the berth that outlived its kill), detaches any loop
/// device still backed by the image, deletes the image, and removes the
/// berth's directory when it was the mount point and is empty now.
/// Idempotent: with nothing there it does nothing.
pub fn release(image: &Path, mount_point: &Path) -> Result<Released, DiskError> {
    let mut released = Released::default();
    // A mount stacked on another (two racing `up`s) is taken away too.
    for _ in 0..8 {
        if mounted_at(mount_point)?.is_none() {
            break;
        }
        match rustix::mount::unmount(mount_point, UnmountFlags::empty()) {
            Ok(()) => {}
            Err(rustix::io::Errno::BUSY) => {
                rustix::mount::unmount(mount_point, UnmountFlags::DETACH).map_err(|e| {
                    DiskError::Io {
                        what: "unmounting the berth's disk at",
                        path: mount_point.to_path_buf(),
                        source: e.into(),
                    }
                })?;
                released.lazily = true;
            }
            Err(e) => {
                return Err(DiskError::Io {
                    what: "unmounting the berth's disk at",
                    path: mount_point.to_path_buf(),
                    source: e.into(),
                });
            }
        }
        released.unmounted = true;
    }
    for device in loops_backed_by(image) {
        if let Ok(dev) = open_device(&device) {
            // SAFETY: LOOP_CLR_FD takes no argument.
            let _ = unsafe { libc::ioctl(dev.as_raw_fd(), LOOP_CLR_FD as _, 0) };
        }
    }
    // The kernel lets a loop device go after its last opener (the unmount,
    // the clear above) is done with it, a moment later under load: wait for
    // that, bounded, so the device is free for the next `up` when this
    // returns.
    let deadline = std::time::Instant::now() + LOOP_RELEASE_WAIT;
    while !loops_backed_by(image).is_empty() {
        if std::time::Instant::now() >= deadline {
            tracing::warn!(image = %image.display(), "a loop device still holds the berth's disk image; the kernel will release it when its last user closes it");
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    match std::fs::remove_file(image) {
        Ok(()) => released.image_removed = true,
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io("removing", image)(e)),
    }
    if released.unmounted || released.image_removed {
        match std::fs::remove_dir(mount_point) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            // Files of its own under the mount point: the caller's to keep.
            Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty => {}
            Err(e) => return Err(io("removing", mount_point)(e)),
        }
    }
    Ok(released)
}

/// The size and room of the file system mounted at `mount_point`.
pub fn usage(mount_point: &Path) -> Result<DiskUsage, DiskError> {
    let st = rustix::fs::statvfs(mount_point).map_err(|e| DiskError::Io {
        what: "measuring",
        path: mount_point.to_path_buf(),
        source: e.into(),
    })?;
    Ok(DiskUsage {
        bytes_total: st.f_blocks.saturating_mul(st.f_frsize),
        bytes_free: st.f_bavail.saturating_mul(st.f_frsize),
        files_total: st.f_files,
        files_free: st.f_favail,
    })
}

/// The mount whose mount point is `mount_point`, the last one when several
/// are stacked (the one a path lookup reaches).
pub fn mounted_at(mount_point: &Path) -> Result<Option<MountEntry>, DiskError> {
    let want = canonical_dir(mount_point);
    Ok(mounts()?.into_iter().rfind(|m| m.mount_point == want))
}

/// Every mount at or below `dir`.
pub fn mounts_under(dir: &Path) -> Result<Vec<MountEntry>, DiskError> {
    let want = canonical_dir(dir);
    Ok(mounts()?
        .into_iter()
        .filter(|m| m.mount_point.starts_with(&want))
        .collect())
}

/// `dir` with its existing part resolved (mountinfo shows resolved paths).
fn canonical_dir(dir: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(dir) {
        return c;
    }
    match (dir.parent(), dir.file_name()) {
        (Some(parent), Some(name)) => canonical_dir(parent).join(name),
        _ => dir.to_path_buf(),
    }
}

fn mounts() -> Result<Vec<MountEntry>, DiskError> {
    let path = Path::new("/proc/self/mountinfo");
    let text = std::fs::read(path).map_err(io("reading", path))?;
    Ok(parse_mountinfo(&text))
}

/// Reads mountinfo lines (`proc(5)`): the fifth field is the mount point
/// (octal-escaped), then after the ` - ` separator the type and the source.
pub fn parse_mountinfo(text: &[u8]) -> Vec<MountEntry> {
    let mut out = Vec::new();
    for line in text.split(|b| *b == b'\n') {
        let fields: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
        let Some(sep) = fields.iter().position(|f| *f == b"-") else {
            continue;
        };
        let (Some(point), Some(options), Some(fs_type), Some(source)) = (
            fields.get(4),
            fields.get(5),
            fields.get(sep + 1),
            fields.get(sep + 2),
        ) else {
            continue;
        };
        out.push(MountEntry {
            mount_point: PathBuf::from(OsString::from_vec(unescape(point))),
            options: String::from_utf8_lossy(options).into_owned(),
            fs_type: String::from_utf8_lossy(&unescape(fs_type)).into_owned(),
            source: String::from_utf8_lossy(&unescape(source)).into_owned(),
        });
    }
    out
}

/// Undoes mountinfo's `\ooo` escapes (space, tab, newline, backslash).
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|d| field[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                let v = d.iter().fold(0u32, |acc, c| acc * 8 + u32::from(c - b'0'));
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}

/// The file behind loop device `source` (`/dev/loopN`), from sysfs.
fn backing_file_of(source: &str) -> Option<PathBuf> {
    let name = Path::new(source).file_name()?.to_str()?;
    if !name.starts_with("loop") {
        return None;
    }
    let raw = std::fs::read(format!("/sys/block/{name}/loop/backing_file")).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let text = text.trim_end_matches('\n');
    Some(PathBuf::from(
        text.strip_suffix(" (deleted)").unwrap_or(text),
    ))
}

/// The loop devices whose backing file is `image`.
pub fn loops_backed_by(image: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("loop"))
        .map(|n| format!("/dev/{n}"))
        .filter(|dev| backing_file_of(dev).is_some_and(|f| same_file(&f, image)))
        .map(PathBuf::from)
        .collect()
}

/// Whether `found` (a path the kernel reports) names `image`.
fn same_file(found: &Path, image: &Path) -> bool {
    found == image || canonical_dir(image) == found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn mountinfo_lines_give_point_type_and_source() {
        let text = b"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n\
            100 36 7:3 / /s/berths/p/dev\\0401 rw,nosuid,nodev,relatime shared:5 - ext4 /dev/loop3 rw\n\
            bad line\n\
            101 36 0:5 / /run\\134x rw - tmpfs tmpfs rw\n";
        let got = parse_mountinfo(text);
        let want = [
            ("/mnt2", "rw,noatime", "ext3", "/dev/root"),
            (
                "/s/berths/p/dev 1",
                "rw,nosuid,nodev,relatime",
                "ext4",
                "/dev/loop3",
            ),
            ("/run\\x", "rw", "tmpfs", "tmpfs"),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (entry, (point, options, fs_type, source)) in got.iter().zip(want) {
            assert_eq!(entry.mount_point, PathBuf::from(point));
            assert_eq!(entry.options, options);
            assert_eq!(entry.fs_type, fs_type);
            assert_eq!(entry.source, source);
        }
    }

    #[test]
    fn unescape_leaves_what_is_not_an_escape() {
        for (raw, want) in [
            (&b"a\\040b"[..], &b"a b"[..]),
            (b"a\\04", b"a\\04"),
            (b"\\999", b"\\999"),
            (b"\\011\\012", b"\t\n"),
            (b"", b""),
        ] {
            assert_eq!(unescape(raw), want, "{:?}", String::from_utf8_lossy(raw));
        }
    }
}
