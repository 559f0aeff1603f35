//! A formatted ext4 image made once and copied for each berth, so `berth up`
//! does not run `mkfs.ext4` (a process, a thousand writes and four fsyncs:
//! 6 ms on a quiet host, hundreds under I/O load) for every berth.
//!
//! One template per key — the disk's size, its inode count, and the format:
//! `mkfs.ext4`'s arguments, the program's identity (its file's device, inode,
//! size and modification time, which an e2fsprogs upgrade changes) and
//! `mke2fs.conf`. The key is in the template's name
//! (`ext4-<format>-<bytes>-<inodes>.img`), so a changed key finds no template
//! and one is made; templates of another format are removed then. They live
//! in a directory of berth's state that only berth writes (mode 0700).
//!
//! A template is made as `mkfs.ext4` makes a berth's disk today, then given
//! `metadata_csum_seed` ([`super::superblock`]), so that a copy can take a
//! new UUID by rewriting its superblocks alone. After the file system comes a
//! 4 KiB trailer: the key, the number of non-zero 4 KiB pages and a SHA-256
//! of them with their offsets. The template is written under a temporary
//! name, synced and renamed: a reader sees a whole template or none.
//!
//! A copy reads the template's data (`SEEK_DATA`/`SEEK_HOLE`), writes its
//! non-zero pages into the berth's new sparse image (what the template holds:
//! about 4 MiB for 8 GiB), and gives every superblock copy a fresh random
//! UUID and directory hash seed on the way. It is not synced: the file system
//! flushes the loop device when it mounts, which syncs the image. The
//! template is checked twice: its length and trailer before the copy (a
//! truncated or partly written template is refused), the digest of what was
//! copied after it (a damaged one is refused and the copy thrown away). A
//! refused template is made again; when none can be made the caller falls
//! back to `mkfs.ext4`. Reflinks are not used: the copy reads every page to
//! check it anyway, and writes only the non-zero ones.

use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};

use super::superblock::{self, FsIdentity, Layout, SuperblockError};
use super::{DiskError, DiskSpec};

const PAGE: usize = 4096;
const CHUNK: usize = 1 << 20;
const TRAILER_LEN: u64 = 4096;
const TRAILER_MAGIC: &str = "berth disk template 1";
/// A temporary file of a maker that died is removed after this long.
const STALE_TMP: Duration = Duration::from_secs(3600);

static ZERO_PAGE: [u8; PAGE] = [0; PAGE];

/// Why a template could not be used (the disk is then made by `mkfs.ext4`).
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// Reading or writing a file, or `mkfs.ext4` making the template.
    #[error(transparent)]
    Disk(#[from] Box<DiskError>),
    #[error("the disk template {} is damaged or incomplete: {why}", path.display())]
    Damaged { path: PathBuf, why: String },
    #[error("the disk template {}: {source}", path.display())]
    Superblock {
        path: PathBuf,
        #[source]
        source: SuperblockError,
    },
    #[error(
        "no disk template can be made with this mkfs.ext4 ({why}); {} says so until e2fsprogs or mke2fs.conf change",
        marker.display()
    )]
    Unusable { marker: PathBuf, why: String },
    #[error("mkfs.ext4 is not installed")]
    NoMkfs,
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> TemplateError + 'a {
    move |source| Box::new(super::io(what, path)(source)).into()
}

fn not_found(e: &TemplateError) -> bool {
    matches!(e, TemplateError::Disk(d)
        if matches!(&**d, DiskError::Io { source, .. } if source.kind() == ErrorKind::NotFound))
}

/// A template's key: its name without the extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TemplateKey {
    /// The format's hash, 16 hex digits.
    format: String,
    bytes: u64,
    inodes: u64,
}

impl TemplateKey {
    /// The key of the disk `spec` describes, made by `mkfs` with `config`.
    pub(crate) fn new(
        bytes: u64,
        inodes: u64,
        mkfs: &Path,
        config: Option<&Path>,
    ) -> Result<Self, TemplateError> {
        let program = std::fs::metadata(mkfs).map_err(io("reading", mkfs))?;
        let config_text = match config {
            Some(c) => match std::fs::read(c) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == ErrorKind::NotFound => None,
                Err(e) => return Err(io("reading", c)(e)),
            },
            None => None,
        };
        Ok(Self::from_parts(
            bytes,
            inodes,
            &FormatInputs {
                // The inode count is in the key apart from the format.
                mkfs_args: &super::mkfs_args(0).join(" "),
                mkfs_path: mkfs,
                mkfs_identity: [
                    program.dev(),
                    program.ino(),
                    program.len(),
                    program.mtime().cast_unsigned(),
                    program.mtime_nsec().cast_unsigned(),
                ],
                config: config_text.as_deref(),
            },
        ))
    }

    fn from_parts(bytes: u64, inodes: u64, inputs: &FormatInputs<'_>) -> Self {
        let mut h = Sha256::new();
        h.update(TRAILER_MAGIC.as_bytes());
        h.update([0]);
        h.update(inputs.mkfs_args.as_bytes());
        h.update([0]);
        h.update(inputs.mkfs_path.as_os_str().as_encoded_bytes());
        h.update([0]);
        for n in inputs.mkfs_identity {
            h.update(n.to_le_bytes());
        }
        match inputs.config {
            Some(text) => {
                h.update([1]);
                h.update(text);
            }
            None => h.update([0]),
        }
        let format: String = h.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        Self {
            format,
            bytes,
            inodes,
        }
    }

    fn stem(&self) -> String {
        format!("ext4-{}-{}-{}", self.format, self.bytes, self.inodes)
    }

    /// The template's file name.
    pub(crate) fn file_name(&self) -> String {
        format!("{}.img", self.stem())
    }

    fn marker_name(&self) -> String {
        format!("{}.unusable", self.stem())
    }
}

/// What the format part of a key is made of.
struct FormatInputs<'a> {
    mkfs_args: &'a str,
    mkfs_path: &'a Path,
    /// The program file's device, inode, size, mtime and its nanoseconds.
    mkfs_identity: [u64; 5],
    config: Option<&'a [u8]>,
}

/// `mke2fs.conf`, where `mkfs.ext4` reads it.
fn mke2fs_config() -> PathBuf {
    std::env::var_os("MKE2FS_CONFIG")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/etc/mke2fs.conf"))
}

/// The key of `spec`'s template on this host.
pub(crate) fn key_for(spec: &DiskSpec) -> Result<TemplateKey, TemplateError> {
    let mkfs = super::mkfs_program().ok_or(TemplateError::NoMkfs)?;
    TemplateKey::new(spec.bytes, spec.inodes, &mkfs, Some(&mke2fs_config()))
}

/// What the trailer says of the template's content.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seal {
    pages: u64,
    sha256: [u8; 32],
}

impl Seal {
    fn trailer(&self, key: &TemplateKey) -> Vec<u8> {
        let text = format!(
            "{TRAILER_MAGIC}\nname {}\npages {}\nsha256 {}\n",
            key.file_name(),
            self.pages,
            hex(&self.sha256)
        );
        let mut out = text.into_bytes();
        out.resize(TRAILER_LEN as usize, 0);
        out
    }

    /// Reads a trailer made for `key`; why not, otherwise.
    fn read(trailer: &[u8], key: &TemplateKey) -> Result<Self, String> {
        let end = trailer
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(trailer.len());
        let text = std::str::from_utf8(&trailer[..end]).map_err(|_| "no trailer".to_string())?;
        let mut lines = text.lines();
        if lines.next() != Some(TRAILER_MAGIC) {
            return Err("no trailer".into());
        }
        let mut field = |name: &str| -> Result<&str, String> {
            lines
                .next()
                .and_then(|l| l.strip_prefix(name))
                .and_then(|l| l.strip_prefix(' '))
                .ok_or_else(|| format!("the trailer has no {name}"))
        };
        let name = field("name")?;
        if name != key.file_name() {
            return Err(format!("the trailer is {name}'s"));
        }
        let pages = field("pages")?
            .parse()
            .map_err(|_| "the trailer's page count is not a number".to_string())?;
        let sha = field("sha256")?;
        let mut sha256 = [0u8; 32];
        if sha.len() != 64 {
            return Err("the trailer's digest is not SHA-256".into());
        }
        for (i, b) in sha256.iter_mut().enumerate() {
            *b = u8::from_str_radix(&sha[2 * i..2 * i + 2], 16)
                .map_err(|_| "the trailer's digest is not hex".to_string())?;
        }
        Ok(Self { pages, sha256 })
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A template that passed its checks before a copy.
struct Opened {
    file: File,
    path: PathBuf,
    seal: Seal,
    layout: Layout,
}

/// Copies the template for `spec` (made first when there is none, or when
/// the one there is damaged) into `dest`, the berth's new image of
/// `spec.bytes` bytes, all holes. Returns the copy's fresh identity.
pub(crate) fn copy_into(
    dir: &Path,
    spec: &DiskSpec,
    dest: &File,
) -> Result<FsIdentity, TemplateError> {
    let key = key_for(spec)?;
    make_dir(dir)?;
    let marker = dir.join(key.marker_name());
    if let Ok(why) = std::fs::read_to_string(&marker) {
        return Err(TemplateError::Unusable {
            marker,
            why: why.trim().to_string(),
        });
    }
    let path = dir.join(key.file_name());
    let identity = FsIdentity::random().map_err(io("drawing a random UUID for", &spec.image))?;
    let template = match open(&path, &key, spec.bytes) {
        Ok(t) => t,
        Err(e) if not_found(&e) => make(dir, &key, spec)?,
        Err(e @ TemplateError::Damaged { .. }) => {
            tracing::warn!(error = %e, "the berth's disk template is made again");
            remove(&path)?;
            make(dir, &key, spec)?
        }
        Err(e) => return Err(e),
    };
    match copy(&template, spec.bytes, dest, &identity) {
        Ok(()) => Ok(identity),
        Err(e @ TemplateError::Damaged { .. }) => {
            tracing::warn!(error = %e, "the berth's disk template is made again");
            remove(&path)?;
            dest.set_len(0)
                .and_then(|()| dest.set_len(spec.bytes))
                .map_err(io("emptying", &spec.image))?;
            let template = make(dir, &key, spec)?;
            copy(&template, spec.bytes, dest, &identity)?;
            Ok(identity)
        }
        Err(e) => Err(e),
    }
}

/// The path of `spec`'s template in `dir` (whether or not it exists).
pub(crate) fn path_for(dir: &Path, spec: &DiskSpec) -> Result<PathBuf, TemplateError> {
    Ok(dir.join(key_for(spec)?.file_name()))
}

fn make_dir(dir: &Path) -> Result<(), TemplateError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io("creating", dir))?;
    let meta = std::fs::symlink_metadata(dir).map_err(io("reading", dir))?;
    if !meta.is_dir() {
        return Err(io("using as the disk templates' directory", dir)(
            std::io::Error::other("not a directory"),
        ));
    }
    Ok(())
}

fn remove(path: &Path) -> Result<(), TemplateError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(io("removing", path)(e)),
        _ => Ok(()),
    }
}

fn damaged(path: &Path, why: impl Into<String>) -> TemplateError {
    TemplateError::Damaged {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

/// Opens the template at `path` and checks what can be checked without
/// reading its data: a regular file, of the disk's size and a trailer, the
/// trailer made for `key`, a clean file system of that size.
fn open(path: &Path, key: &TemplateKey, bytes: u64) -> Result<Opened, TemplateError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(io("opening", path))?;
    let meta = file.metadata().map_err(io("reading", path))?;
    let want = bytes + TRAILER_LEN;
    if !meta.is_file() {
        return Err(damaged(path, "not a regular file"));
    }
    if meta.len() != want {
        return Err(damaged(
            path,
            format!("{} bytes long, not {want}", meta.len()),
        ));
    }
    let mut trailer = vec![0u8; TRAILER_LEN as usize];
    file.read_exact_at(&mut trailer, bytes)
        .map_err(io("reading", path))?;
    let seal = Seal::read(&trailer, key).map_err(|why| damaged(path, why))?;
    let mut sb = [0u8; superblock::LEN];
    file.read_exact_at(&mut sb, superblock::PRIMARY_OFFSET)
        .map_err(io("reading", path))?;
    let layout = superblock::layout(&sb).map_err(|e| damaged(path, e.to_string()))?;
    if layout
        .blocks
        .checked_mul(layout.block_size)
        .is_none_or(|fs| fs > bytes)
    {
        return Err(damaged(path, "its file system is larger than the disk"));
    }
    if layout.metadata_csum && !layout.csum_seed {
        return Err(damaged(path, "it lacks metadata_csum_seed"));
    }
    Ok(Opened {
        file,
        path: path.to_path_buf(),
        seal,
        layout,
    })
}

/// Makes the template for `key` (as `mkfs.ext4` makes a berth's disk, with
/// `metadata_csum_seed` added), under a temporary name, synced, then renamed
/// into place; removes templates of another format and temporary files a
/// maker that died left.
fn make(dir: &Path, key: &TemplateKey, spec: &DiskSpec) -> Result<Opened, TemplateError> {
    let path = dir.join(key.file_name());
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let tmp = dir.join(format!(
        ".{}.{}-{nanos}.tmp",
        key.file_name(),
        std::process::id()
    ));
    let made = make_at(&tmp, key, spec);
    if let Err(e) = made {
        let _ = std::fs::remove_file(&tmp);
        if let TemplateError::Superblock { source, .. } = &e {
            // The same mkfs.ext4 makes the same file system: do not run it
            // twice at every `up`.
            let marker = dir.join(key.marker_name());
            let _ = std::fs::write(&marker, format!("{source}\n"));
        }
        return Err(e);
    }
    std::fs::rename(&tmp, &path).map_err(io("renaming into place", &path))?;
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io("syncing", dir))?;
    remove_stale(dir, key);
    tracing::info!(template = %path.display(), "a berth disk template is made");
    open(&path, key, spec.bytes)
}

fn make_at(tmp: &Path, key: &TemplateKey, spec: &DiskSpec) -> Result<(), TemplateError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(tmp)
        .map_err(io("creating", tmp))?;
    file.set_len(spec.bytes).map_err(io("sizing", tmp))?;
    super::run_mkfs(tmp, spec.inodes).map_err(Box::new)?;
    let superblock_error = |source| TemplateError::Superblock {
        path: tmp.to_path_buf(),
        source,
    };
    let mut sb = [0u8; superblock::LEN];
    file.read_exact_at(&mut sb, superblock::PRIMARY_OFFSET)
        .map_err(io("reading", tmp))?;
    let layout = superblock::layout(&sb).map_err(superblock_error)?;
    for &(group, offset) in &layout.superblocks {
        file.read_exact_at(&mut sb, offset)
            .map_err(io("reading", tmp))?;
        superblock::pin_checksum_seed(&mut sb, offset, group).map_err(superblock_error)?;
        file.write_all_at(&sb, offset).map_err(io("writing", tmp))?;
    }
    let seal = scan(&file, tmp, spec.bytes, |_, _| Ok(()))?;
    file.write_all_at(&seal.trailer(key), spec.bytes)
        .map_err(io("writing", tmp))?;
    file.sync_all().map_err(io("syncing", tmp))
}

/// Removes templates (and their markers) of another format than `key`'s,
/// and temporary files older than an hour.
fn remove_stale(dir: &Path, key: &TemplateKey) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let current = format!("ext4-{}-", key.format);
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let stale = if name.starts_with('.') && name.ends_with(".tmp") {
            entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > STALE_TMP)
        } else {
            name.starts_with("ext4-") && !name.starts_with(&current)
        };
        if stale {
            match std::fs::remove_file(entry.path()) {
                Ok(()) => {
                    tracing::info!(file = %entry.path().display(), "a stale berth disk template is removed")
                }
                Err(e) => {
                    tracing::warn!(file = %entry.path().display(), error = %e, "removing a stale berth disk template failed")
                }
            }
        }
    }
}

/// Reads the first `len` bytes of `src` where it holds data, page by page
/// (4 KiB at their absolute offsets, whatever the extents), and hands each
/// run of non-zero pages to `sink` after hashing it. What it returns does
/// not depend on how the data is laid out in extents, only on the content.
fn scan(
    src: &File,
    path: &Path,
    len: u64,
    mut sink: impl FnMut(u64, &mut [u8]) -> Result<(), TemplateError>,
) -> Result<Seal, TemplateError> {
    let mut sha = Sha256::new();
    let mut pages = 0u64;
    let mut buf = vec![0u8; CHUNK];
    let page = PAGE as u64;
    let mut pos = 0u64;
    while pos < len {
        let start = match rustix::fs::seek(src, rustix::fs::SeekFrom::Data(pos)) {
            Ok(s) => s,
            Err(rustix::io::Errno::NXIO) => break,
            Err(e) => return Err(io("reading", path)(e.into())),
        };
        if start >= len {
            break;
        }
        let end = rustix::fs::seek(src, rustix::fs::SeekFrom::Hole(start))
            .map_err(|e| io("reading", path)(e.into()))?
            .min(len);
        let mut at = (start / page * page).max(pos);
        let until = end.div_ceil(page).saturating_mul(page).min(len);
        while at < until {
            let n = usize::try_from(until - at).map_or(CHUNK, |n| n.min(CHUNK));
            let chunk = &mut buf[..n];
            src.read_exact_at(chunk, at).map_err(io("reading", path))?;
            // Runs of non-zero pages: [run_start, i) in this chunk.
            let mut run_start = None;
            for i in (0..n).step_by(PAGE) {
                let this = &chunk[i..(i + PAGE).min(n)];
                if this != &ZERO_PAGE[..this.len()] {
                    sha.update((at + i as u64).to_le_bytes());
                    sha.update(this);
                    pages += 1;
                    run_start.get_or_insert(i);
                } else if let Some(s) = run_start.take() {
                    sink(at + s as u64, &mut chunk[s..i])?;
                }
            }
            if let Some(s) = run_start {
                sink(at + s as u64, &mut chunk[s..n])?;
            }
            at += n as u64;
        }
        pos = until;
    }
    Ok(Seal {
        pages,
        sha256: sha.finalize().into(),
    })
}

/// Copies the template's non-zero pages into `dest`, each superblock copy
/// given `identity` on the way, and checks what was read against the seal.
fn copy(
    template: &Opened,
    bytes: u64,
    dest: &File,
    identity: &FsIdentity,
) -> Result<(), TemplateError> {
    let path = &template.path;
    let mut patched = 0usize;
    let superblocks = &template.layout.superblocks;
    let seal = scan(&template.file, path, bytes, |offset, run| {
        let end = offset + run.len() as u64;
        for &(group, at) in superblocks {
            if at >= offset && at + superblock::LEN as u64 <= end {
                let rel = usize::try_from(at - offset).unwrap_or(usize::MAX);
                let sb = run
                    .get_mut(rel..rel + superblock::LEN)
                    .ok_or_else(|| damaged(path, "a superblock out of place"))?;
                superblock::set_identity(sb, at, group, identity)
                    .map_err(|e| damaged(path, e.to_string()))?;
                patched += 1;
            }
        }
        dest.write_all_at(run, offset)
            .map_err(io("writing the berth's disk from", path))
    })?;
    if seal != template.seal {
        return Err(damaged(
            path,
            format!(
                "its content ({} pages) is not what its trailer says ({} pages, sha256 {})",
                seal.pages,
                template.seal.pages,
                hex(&template.seal.sha256)
            ),
        ));
    }
    if patched != superblocks.len() {
        return Err(damaged(
            path,
            format!(
                "{patched} of its {} superblock copies were found",
                superblocks.len()
            ),
        ));
    }
    Ok(())
}

/// The identity of the file system in `image` (from its primary superblock).
pub(crate) fn identity_of(image: &Path) -> Result<FsIdentity, TemplateError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(image)
        .map_err(io("opening", image))?;
    let mut sb = [0u8; superblock::LEN];
    file.read_exact_at(&mut sb, superblock::PRIMARY_OFFSET)
        .map_err(io("reading", image))?;
    superblock::identity_of(&sb).map_err(|source| TemplateError::Superblock {
        path: image.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn inputs<'a>(identity: [u64; 5], config: Option<&'a [u8]>) -> FormatInputs<'a> {
        FormatInputs {
            mkfs_args: "-F -q",
            mkfs_path: Path::new("/usr/sbin/mkfs.ext4"),
            mkfs_identity: identity,
            config,
        }
    }

    #[test]
    fn the_key_changes_with_size_inodes_program_and_config() {
        let base = TemplateKey::from_parts(8 << 30, 1024, &inputs([1, 2, 3, 4, 5], Some(b"a")));
        assert_eq!(
            base,
            TemplateKey::from_parts(8 << 30, 1024, &inputs([1, 2, 3, 4, 5], Some(b"a")))
        );
        let others = [
            TemplateKey::from_parts(4 << 30, 1024, &inputs([1, 2, 3, 4, 5], Some(b"a"))),
            TemplateKey::from_parts(8 << 30, 2048, &inputs([1, 2, 3, 4, 5], Some(b"a"))),
            // e2fsprogs upgraded: a new file, another inode and mtime.
            TemplateKey::from_parts(8 << 30, 1024, &inputs([1, 9, 3, 4, 5], Some(b"a"))),
            TemplateKey::from_parts(8 << 30, 1024, &inputs([1, 2, 3, 4, 6], Some(b"a"))),
            TemplateKey::from_parts(8 << 30, 1024, &inputs([1, 2, 3, 4, 5], Some(b"b"))),
            TemplateKey::from_parts(8 << 30, 1024, &inputs([1, 2, 3, 4, 5], None)),
        ];
        for other in &others {
            assert_ne!(base.file_name(), other.file_name(), "{other:?}");
        }
        assert!(
            base.file_name()
                .starts_with(&format!("ext4-{}-", base.format))
        );
        assert_eq!(base.format.len(), 16);
    }

    #[test]
    fn a_trailer_reads_back_only_for_its_key() {
        let key = TemplateKey::from_parts(1 << 26, 4096, &inputs([0; 5], None));
        let other = TemplateKey::from_parts(1 << 26, 8192, &inputs([0; 5], None));
        let seal = Seal {
            pages: 17,
            sha256: [0xab; 32],
        };
        let trailer = seal.trailer(&key);
        assert_eq!(trailer.len() as u64, TRAILER_LEN);
        assert_eq!(Seal::read(&trailer, &key), Ok(seal.clone()));
        assert!(
            Seal::read(&trailer, &other)
                .unwrap_err()
                .contains("trailer is")
        );
        assert_eq!(Seal::read(&[0; 64], &key), Err("no trailer".to_string()));
        let mut cut = trailer.clone();
        let at = cut.iter().position(|&b| b == b'\n').unwrap();
        cut[at + 1..].fill(0);
        assert!(Seal::read(&cut, &key).unwrap_err().contains("no name"));
    }

    #[test]
    fn the_scan_depends_on_content_not_on_holes() {
        let dir = tempfile::tempdir().unwrap();
        let len = 64 * PAGE as u64;
        let write = |name: &str, dense: bool| {
            let path = dir.path().join(name);
            let f = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .unwrap();
            f.set_len(len).unwrap();
            if dense {
                f.write_all_at(&vec![0u8; len as usize], 0).unwrap();
            }
            f.write_all_at(b"x", 3 * PAGE as u64 + 5).unwrap();
            f.write_all_at(&[1u8; 2 * PAGE], 10 * PAGE as u64).unwrap();
            f.sync_all().unwrap();
            (f, path)
        };
        let (sparse, sp) = write("sparse", false);
        let (dense, dp) = write("dense", true);
        let mut runs = Vec::new();
        let a = scan(&sparse, &sp, len, |o, r| {
            runs.push((o, r.len()));
            Ok(())
        })
        .unwrap();
        let b = scan(&dense, &dp, len, |_, _| Ok(())).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.pages, 3);
        assert_eq!(
            runs,
            [(3 * PAGE as u64, PAGE), (10 * PAGE as u64, 2 * PAGE)]
        );
        dense.write_all_at(b"y", 40 * PAGE as u64).unwrap();
        assert_ne!(scan(&dense, &dp, len, |_, _| Ok(())).unwrap(), a);
    }
}
