//! Resolving a recipe against this host into the image's root filesystem
//! (written as a tar by [`super::context_stream`]).
//!
//! Every host file keeps its host path in the image, with the symlinks on the
//! way reproduced, so compiled-in paths (the ELF interpreter, git's exec-path
//! and templates) resolve in the image as they do on the host. Hard links stay
//! hard links (a hand-built git has ~140 names for one 4 MB binary). A
//! directory on the way to a host input is made traversable (`x` for all):
//! it holds only what the recipe names, so a toolchain under `/root` (0700)
//! is reachable by the agent user. The
//! fingerprint covers the recipe and each resolved file's metadata, not its
//! bytes: checking whether the image is current must stay cheap, and a package
//! upgrade changes size or mtime.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::ImageError;
use super::elf::{self, ElfKind};
use super::recipe::{Applets, HostEntry, Recipe};

/// Bumped when the way a recipe is assembled changes, so old tags go stale.
const ASSEMBLY_VERSION: u32 = 1;
/// Symlinks followed in a row before a path is called a loop.
const MAX_LINK_DEPTH: usize = 40;

/// One entry of the image's root filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    pub kind: EntryKind,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub mtime: i64,
}

#[cfg(test)]
impl Entry {
    /// An entry of `kind` owned by `owner` (uid and gid), mtime 0.
    pub(crate) fn test(kind: EntryKind, mode: u32, owner: u32) -> Entry {
        Entry {
            kind,
            mode,
            uid: owner,
            gid: owner,
            mtime: 0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Dir,
    /// A host file copied as is.
    HostFile {
        host: PathBuf,
        size: u64,
    },
    /// A second name of a file already in the image.
    HardLink {
        to: String,
    },
    Symlink {
        target: String,
    },
    Generated {
        content: Vec<u8>,
    },
}

/// A recipe resolved against this host.
#[derive(Debug, Clone)]
pub struct Rootfs {
    pub(crate) entries: BTreeMap<String, Entry>,
    /// Hex SHA-256 of the recipe and every resolved input.
    pub(crate) fingerprint: String,
    /// The directories `ldd` found shared libraries in, as it named them
    /// (the injected tools' loader searches them).
    pub(crate) library_dirs: BTreeSet<String>,
}

impl Rootfs {
    /// Number of entries (files, directories, links).
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Bytes of file content the image will hold.
    pub fn content_bytes(&self) -> u64 {
        self.entries
            .values()
            .map(|e| match &e.kind {
                EntryKind::HostFile { size, .. } => *size,
                EntryKind::Generated { content } => content.len() as u64,
                _ => 0,
            })
            .sum()
    }

    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Resolves `recipe` against this host: stats every input, runs `ldd` on
    /// ELF files whose libraries are wanted and `busybox --list`. Blocking.
    pub fn resolve(recipe: &Recipe) -> Result<Rootfs, ImageError> {
        let mut r = Resolver::new();
        for (path, target) in &recipe.links {
            r.put(
                path.clone(),
                Entry {
                    kind: EntryKind::Symlink {
                        target: target.clone(),
                    },
                    mode: 0o777,
                    uid: 0,
                    gid: 0,
                    mtime: 0,
                },
            )?;
        }

        // busybox first, so a recipe's host file replaces an applet of the same
        // name rather than the other way round.
        check_static(&recipe.busybox.path)?;
        r.add(&recipe.busybox.path, false, None, 0)?;
        let bb_image_path = r.resolved_image_path(&recipe.busybox.path)?;
        let applets = list_applets(&recipe.busybox.path)?;
        let wanted: Vec<String> = match &recipe.busybox.applets {
            Applets::All(_) => applets.clone(),
            Applets::Only(list) => {
                if let Some(missing) = list.iter().find(|a| !applets.contains(a)) {
                    return Err(ImageError::HostInput {
                        path: recipe.busybox.path.clone(),
                        message: format!("busybox has no applet {missing:?}"),
                    });
                }
                list.clone()
            }
        };

        for entry in &recipe.host {
            match entry {
                HostEntry::Files(input) => r.add(&input.path, input.libraries, Some(input), 0)?,
                HostEntry::Preset { preset, path } => {
                    let files = preset.files(path.as_deref())?;
                    for input in &files.host {
                        r.add(&input.path, input.libraries, Some(input), 0)?;
                    }
                    for (path, target) in files.links {
                        r.put_in_dir(
                            path,
                            Entry {
                                kind: EntryKind::Symlink { target },
                                mode: 0o777,
                                uid: 0,
                                gid: 0,
                                mtime: 0,
                            },
                        )?;
                    }
                }
            }
        }

        r.ensure_dir(&recipe.busybox.dir, 0o755)?;
        for applet in &wanted {
            let path = format!("{}/{applet}", recipe.busybox.dir);
            if applet == "busybox" || r.entries.contains_key(&path) {
                continue;
            }
            r.entries.insert(
                path,
                Entry {
                    kind: EntryKind::Symlink {
                        target: bb_image_path.clone(),
                    },
                    mode: 0o777,
                    uid: 0,
                    gid: 0,
                    mtime: 0,
                },
            );
        }

        let user = &recipe.user;
        let generated = [
            (
                "/etc/passwd".to_string(),
                format!(
                    "root:x:0:0:root:/root:/sbin/nologin\n{}:x:{}:{}:{}:{}:/bin/sh\n",
                    user.name, user.uid, user.gid, user.name, user.home
                ),
                0o644,
            ),
            (
                "/etc/group".to_string(),
                format!("root:x:0:\n{}:x:{}:\n", user.name, user.gid),
                0o644,
            ),
        ];
        let files = generated.into_iter().chain(
            recipe
                .file
                .iter()
                .map(|f| (f.path.clone(), f.content.clone(), f.mode)),
        );
        for (path, content, mode) in files {
            r.put_in_dir(
                path,
                Entry {
                    kind: EntryKind::Generated {
                        content: content.into_bytes(),
                    },
                    mode,
                    uid: 0,
                    gid: 0,
                    mtime: 0,
                },
            )?;
        }
        // /tmp for everyone (sticky); the home and /work for the agent.
        r.ensure_dir("/tmp", 0o1777)?;
        for dir in [user.home.as_str(), berth_policy::frame::WORK] {
            if let Some((parent, _)) = dir.rsplit_once('/')
                && !parent.is_empty()
            {
                r.ensure_dir(parent, 0o755)?;
            }
            r.put(
                dir.to_string(),
                Entry {
                    kind: EntryKind::Dir,
                    mode: 0o755,
                    uid: user.uid,
                    gid: user.gid,
                    mtime: 0,
                },
            )?;
        }

        let fingerprint = fingerprint(recipe, &r.entries);
        Ok(Rootfs {
            entries: r.entries,
            fingerprint,
            library_dirs: r.library_dirs,
        })
    }
}

struct Resolver {
    entries: BTreeMap<String, Entry>,
    /// (dev, ino) of each host file already added → its image path.
    inodes: HashMap<(u64, u64), String>,
    visited: HashSet<PathBuf>,
    ldd_done: HashSet<(u64, u64)>,
    library_dirs: BTreeSet<String>,
}

impl Resolver {
    fn new() -> Resolver {
        Resolver {
            entries: BTreeMap::new(),
            inodes: HashMap::new(),
            visited: HashSet::new(),
            ldd_done: HashSet::new(),
            library_dirs: BTreeSet::new(),
        }
    }

    /// Adds an entry, accepting an identical one already there.
    fn put(&mut self, path: String, entry: Entry) -> Result<(), ImageError> {
        match self.entries.get(&path) {
            None => {
                self.entries.insert(path, entry);
                Ok(())
            }
            Some(existing) if same_kind(existing, &entry) => Ok(()),
            Some(existing) => Err(ImageError::Conflict {
                path,
                message: format!("{:?} and {:?}", kind_name(existing), kind_name(&entry)),
            }),
        }
    }

    /// [`put`](Self::put), making the entry's parent directories first.
    fn put_in_dir(&mut self, path: String, entry: Entry) -> Result<(), ImageError> {
        if let Some((parent, _)) = path.rsplit_once('/')
            && !parent.is_empty()
        {
            self.ensure_dir(parent, 0o755)?;
        }
        self.put(path, entry)
    }

    /// Makes `dir` and its parents directories unless they exist in the image.
    fn ensure_dir(&mut self, dir: &str, mode: u32) -> Result<(), ImageError> {
        let mut acc = String::new();
        for c in dir.split('/').filter(|c| !c.is_empty()) {
            acc.push('/');
            acc.push_str(c);
            match self.entries.get(&acc) {
                Some(Entry {
                    kind: EntryKind::Symlink { target },
                    ..
                }) => {
                    // Continue below the link's target, as the kernel would.
                    let resolved = resolve_link(Path::new(&acc), Path::new(target));
                    let rest = dir[acc.len()..].to_string();
                    let next = format!("{}{rest}", resolved.display());
                    return self.ensure_dir(&next, mode);
                }
                Some(_) => {}
                None => {
                    self.entries.insert(
                        acc.clone(),
                        Entry {
                            kind: EntryKind::Dir,
                            mode: if acc == dir { mode } else { 0o755 },
                            uid: 0,
                            gid: 0,
                            mtime: 0,
                        },
                    );
                }
            }
        }
        Ok(())
    }

    /// The image path a host path's file ends up at, after its symlinks.
    fn resolved_image_path(&self, host: &Path) -> Result<String, ImageError> {
        let real = std::fs::canonicalize(host).map_err(|source| ImageError::Io {
            op: "resolve a host path",
            path: host.to_path_buf(),
            source,
        })?;
        Ok(real.to_string_lossy().into_owned())
    }

    /// Adds a host path at the same image path, with every symlink on the way.
    fn add(
        &mut self,
        host: &Path,
        libraries: bool,
        input: Option<&super::recipe::HostInput>,
        depth: usize,
    ) -> Result<(), ImageError> {
        if depth > MAX_LINK_DEPTH {
            return Err(ImageError::HostInput {
                path: host.to_path_buf(),
                message: "too many levels of symbolic links".to_string(),
            });
        }
        let host = normalize(host);
        if !self.visited.insert(host.clone()) {
            return Ok(());
        }
        let io = |op: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| ImageError::Io { op, path, source }
        };
        let comps: Vec<_> = host.components().skip(1).collect();
        let mut cur = PathBuf::from("/");
        for (i, c) in comps.iter().enumerate() {
            cur.push(c);
            let md = std::fs::symlink_metadata(&cur).map_err(io("stat a host input", &cur))?;
            if md.file_type().is_symlink() {
                let target = std::fs::read_link(&cur).map_err(io("read a symlink", &cur))?;
                self.put(
                    cur.to_string_lossy().into_owned(),
                    Entry {
                        kind: EntryKind::Symlink {
                            target: target.to_string_lossy().into_owned(),
                        },
                        mode: 0o777,
                        uid: 0,
                        gid: 0,
                        mtime: md.mtime(),
                    },
                )?;
                let mut next = resolve_link(&cur, &target);
                for rest in &comps[i + 1..] {
                    next.push(rest);
                }
                return self.add(&next, libraries, input, depth + 1);
            }
            let is_last = i + 1 == comps.len();
            if !is_last {
                if !md.is_dir() {
                    return Err(ImageError::HostInput {
                        path: cur.clone(),
                        message: "not a directory".to_string(),
                    });
                }
                let key = cur.to_string_lossy().into_owned();
                // An ancestor only leads to what the recipe names, so it is
                // made traversable (never listable or writable beyond its host
                // mode): a toolchain under a private home (`/root`, 0700)
                // reaches the agent user, and nothing else of that home is in
                // the image.
                self.entries.entry(key).or_insert(Entry {
                    kind: EntryKind::Dir,
                    mode: (md.mode() & 0o7777 & !0o6000) | 0o111,
                    uid: 0,
                    gid: 0,
                    mtime: md.mtime(),
                });
                continue;
            }
            let key = cur.to_string_lossy().into_owned();
            if md.is_dir() {
                self.put(
                    key,
                    Entry {
                        kind: EntryKind::Dir,
                        mode: md.mode() & 0o1777,
                        uid: 0,
                        gid: 0,
                        mtime: md.mtime(),
                    },
                )?;
                let mut children: Vec<_> = std::fs::read_dir(&cur)
                    .map_err(io("list a host directory", &cur))?
                    .map(|d| d.map(|d| d.file_name()))
                    .collect::<Result<_, _>>()
                    .map_err(io("list a host directory", &cur))?;
                children.sort();
                for name in children {
                    let name_str = name.to_string_lossy();
                    if input.is_some_and(|i| i.excludes(&name_str)) {
                        continue;
                    }
                    self.add(&cur.join(&name), libraries, input, depth)?;
                }
            } else if md.is_file() {
                let inode = (md.dev(), md.ino());
                let kind = match self.inodes.get(&inode) {
                    Some(first) if *first != key => EntryKind::HardLink { to: first.clone() },
                    _ => {
                        self.inodes.insert(inode, key.clone());
                        EntryKind::HostFile {
                            host: cur.clone(),
                            size: md.len(),
                        }
                    }
                };
                self.put(
                    key,
                    Entry {
                        kind,
                        // No set-id bits: no-new-privileges ignores them anyway,
                        // and the image should not suggest otherwise.
                        mode: md.mode() & 0o777,
                        uid: 0,
                        gid: 0,
                        mtime: md.mtime(),
                    },
                )?;
                if libraries && self.ldd_done.insert(inode) && is_elf(&cur)? {
                    for lib in ldd(&cur)? {
                        if let Some(dir) = lib.parent() {
                            self.library_dirs.insert(dir.to_string_lossy().into_owned());
                        }
                        self.add(&lib, false, None, 0)?;
                    }
                }
            } else {
                return Err(ImageError::HostInput {
                    path: cur.clone(),
                    message: "neither a file, a directory nor a symlink".to_string(),
                });
            }
        }
        Ok(())
    }
}

fn same_kind(a: &Entry, b: &Entry) -> bool {
    match (&a.kind, &b.kind) {
        (EntryKind::Dir, EntryKind::Dir) => true,
        (EntryKind::Symlink { target: x }, EntryKind::Symlink { target: y }) => x == y,
        _ => a == b,
    }
}

fn kind_name(e: &Entry) -> String {
    match &e.kind {
        EntryKind::Dir => "a directory".to_string(),
        EntryKind::HostFile { host, .. } => format!("the host file {}", host.display()),
        EntryKind::HardLink { to } => format!("a hard link to {to}"),
        EntryKind::Symlink { target } => format!("a symlink to {target}"),
        EntryKind::Generated { .. } => "a generated file".to_string(),
    }
}

/// Where a symlink at `link` pointing at `target` leads.
pub(crate) fn resolve_link(link: &Path, target: &Path) -> PathBuf {
    if target.is_absolute() {
        normalize(target)
    } else {
        normalize(&link.parent().unwrap_or(Path::new("/")).join(target))
    }
}

/// Lexical normalisation; sound here because every prefix walked so far is a
/// real directory (symlinks are resolved component by component).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for c in p.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(n) => out.push(n),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

fn is_elf(path: &Path) -> Result<bool, ImageError> {
    let mut magic = [0u8; 4];
    let mut f = std::fs::File::open(path).map_err(|source| ImageError::Io {
        op: "open a host file",
        path: path.to_path_buf(),
        source,
    })?;
    Ok(f.read_exact(&mut magic).is_ok() && magic == *b"\x7fELF")
}

/// Fails unless `path` is an ELF executable without an interpreter (static).
fn check_static(path: &Path) -> Result<(), ImageError> {
    let bytes = std::fs::read(path).map_err(|source| ImageError::Io {
        op: "read busybox",
        path: path.to_path_buf(),
        source,
    })?;
    let not_static = |why: &str| ImageError::HostInput {
        path: path.to_path_buf(),
        message: format!(
            "{why}: the image needs a statically linked busybox (Debian: apt-get install busybox-static)"
        ),
    };
    match elf::classify(&bytes).map_err(not_static)? {
        ElfKind::Static => Ok(()),
        ElfKind::NotElf => Err(not_static("not a 64-bit little-endian ELF file")),
        ElfKind::Dynamic { .. } => {
            Err(not_static("dynamically linked (it has an ELF interpreter)"))
        }
    }
}

pub(crate) fn host_command(program: &str) -> Command {
    let mut c = Command::new(program);
    c.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("LC_ALL", "C")
        .current_dir("/");
    c
}

fn list_applets(busybox: &Path) -> Result<Vec<String>, ImageError> {
    let out = host_command(&busybox.to_string_lossy())
        .arg("--list")
        .output()
        .map_err(|source| ImageError::Io {
            op: "run busybox --list",
            path: busybox.to_path_buf(),
            source,
        })?;
    if !out.status.success() {
        return Err(ImageError::HostInput {
            path: busybox.to_path_buf(),
            message: format!(
                "`busybox --list` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let mut applets: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|a| !a.is_empty() && !a.contains('/'))
        .map(str::to_string)
        .collect();
    applets.sort();
    applets.dedup();
    Ok(applets)
}

/// The absolute paths of the shared objects `ldd` lists for an ELF file,
/// the interpreter included.
fn ldd(path: &Path) -> Result<Vec<PathBuf>, ImageError> {
    let out = host_command("ldd")
        .arg(path)
        .output()
        .map_err(|source| ImageError::Io {
            op: "run ldd",
            path: path.to_path_buf(),
            source,
        })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        // Static executables make ldd fail with this message: nothing to add.
        if stdout.contains("not a dynamic executable")
            || String::from_utf8_lossy(&out.stderr).contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        return Err(ImageError::HostInput {
            path: path.to_path_buf(),
            message: format!(
                "ldd failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    parse_ldd(&stdout).map_err(|message| ImageError::HostInput {
        path: path.to_path_buf(),
        message,
    })
}

fn parse_ldd(stdout: &str) -> Result<Vec<PathBuf>, String> {
    let mut libs = Vec::new();
    for line in stdout.lines() {
        let line = line.trim();
        if let Some((name, rest)) = line.split_once("=>") {
            let rest = rest.trim();
            if rest.starts_with("not found") {
                return Err(format!(
                    "needs {} which the dynamic loader cannot find",
                    name.trim()
                ));
            }
            if let Some(p) = rest
                .split_whitespace()
                .next()
                .filter(|p| p.starts_with('/'))
            {
                libs.push(PathBuf::from(p));
            }
        } else if let Some(p) = line
            .split_whitespace()
            .next()
            .filter(|p| p.starts_with('/'))
        {
            libs.push(PathBuf::from(p));
        }
    }
    Ok(libs)
}

fn fingerprint(recipe: &Recipe, entries: &BTreeMap<String, Entry>) -> String {
    let mut h = Sha256::new();
    h.update(format!("berth-image-assembly {ASSEMBLY_VERSION}\n"));
    h.update(recipe.source.as_bytes());
    h.update(b"\0");
    for (path, e) in entries {
        let kind = match &e.kind {
            EntryKind::Dir => "dir".to_string(),
            EntryKind::HostFile { host, size } => format!("file {} {size}", host.display()),
            EntryKind::HardLink { to } => format!("hardlink {to}"),
            EntryKind::Symlink { target } => format!("symlink {target}"),
            EntryKind::Generated { content } => {
                format!("generated {}", hex(&Sha256::digest(content)))
            }
        };
        h.update(format!(
            "{path}\0{kind}\0{:o} {} {} {}\n",
            e.mode, e.uid, e.gid, e.mtime
        ));
    }
    hex(&h.finalize())
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn ldd_output_lists_paths_and_rejects_missing_libraries() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibz.so.1 => /lib/x86_64-linux-gnu/libz.so.1 (0x1)\n\t/lib64/ld-linux-x86-64.so.2 (0x2)\n";
        assert_eq!(
            parse_ldd(out).unwrap(),
            vec![
                PathBuf::from("/lib/x86_64-linux-gnu/libz.so.1"),
                PathBuf::from("/lib64/ld-linux-x86-64.so.2")
            ]
        );
        let err = parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err();
        assert!(err.contains("libfoo.so.1"), "{err}");
    }

    #[test]
    fn normalize_and_links() {
        let cases = [
            ("/usr/lib/git-core/git", "../../bin/git", "/usr/bin/git"),
            ("/lib64", "usr/lib64", "/usr/lib64"),
            ("/usr/lib64/ld.so", "/lib/x/ld.so", "/lib/x/ld.so"),
        ];
        for (link, target, want) in cases {
            assert_eq!(
                resolve_link(Path::new(link), Path::new(target)),
                PathBuf::from(want)
            );
        }
    }

    #[test]
    fn a_private_ancestor_becomes_traversable_and_the_input_keeps_its_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let private = dir.path().join("private");
        let tool = private.join("tool");
        std::fs::create_dir_all(&tool).unwrap();
        std::fs::write(tool.join("run"), b"x").unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o750)).unwrap();
        let mut r = Resolver::new();
        r.add(&tool, false, None, 0).unwrap();
        let mode = |p: &Path| r.entries[&*p.to_string_lossy()].mode;
        // The ancestor: traversable, still not listable by others.
        assert_eq!(mode(&private), 0o711);
        // The input itself keeps its host mode, and so does its content.
        assert_eq!(mode(&tool), 0o750);
        assert!(matches!(
            r.entries[&*tool.join("run").to_string_lossy()].kind,
            EntryKind::HostFile { size: 1, .. }
        ));
    }

    #[test]
    fn a_dynamic_busybox_is_refused() {
        let err = check_static(Path::new("/usr/bin/env"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("busybox-static"), "{err}");
    }
}
