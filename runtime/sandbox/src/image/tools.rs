//! berth's own tools in any image: a host directory mounted read-only at
//! `/opt/berth`, so a berth runs on an image that has no shell, no git and no
//! user of its own.
//!
//! The directory is assembled once per [`ToolsSource::key`] (the recipe text,
//! the metadata of its top-level host inputs and of `berth-helper`) from the
//! same recipe that builds the default agent image: the recipe's files are
//! copied beneath `root/` at their host paths, with the symlinks on the way
//! (absolute ones re-pointed beneath `/opt/berth/root`). Programs are exposed
//! in `bin/` (the directory berth appends to the image's `PATH`) and git's
//! helpers in `git-core/` (its `GIT_EXEC_PATH`):
//!
//! - a static program (busybox and its applets) is a symlink to its copy;
//! - a dynamically linked one (git, `berth-helper`) is a small script run by
//!   the static busybox `sh` that starts its copy through the copied loader
//!   (`ld.so --inhibit-cache --library-path … --argv0 "$0"`): the image's own
//!   loader and libraries, if it has any, are never used, and an image without
//!   glibc's loader (where Debian's git exits 127) runs it all the same.
//!
//! A finished directory is never changed: it is assembled under a temporary
//! name and renamed into place, so two berth processes never see half of one,
//! and a host upgrade makes a new one beside it rather than altering one a
//! running container has mounted. The root must belong to the user berth runs
//! as and be writable by no one else: whatever is in it runs in every berth.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

use super::elf::{self, ElfKind};
use super::recipe::{HostEntry, HostInput, Recipe};
use super::rootfs::{Entry, EntryKind, Rootfs, host_command, resolve_link};
use super::{ImageError, ImageRef, hex};
use crate::docker::ContainerSpec;

/// Where the tools appear in a container.
pub const TOOLS_MOUNT: &str = "/opt/berth";
/// berth's programs: appended to the image's `PATH`.
pub const TOOLS_BIN: &str = "/opt/berth/bin";
/// The static shell berth's exec wrapper runs under in an image of any kind.
pub const TOOLS_SHELL: &str = "/opt/berth/bin/sh";
/// The shell commands run under when the image has one (and berth's own
/// scripts in the default agent image).
pub const IMAGE_SHELL: &str = "/bin/sh";
/// git's exec-path among the tools.
pub const TOOLS_GIT_EXEC_PATH: &str = "/opt/berth/git-core";
/// Environment variable naming the host directory of tool sets.
pub const TOOLS_DIR_ENV: &str = "BERTH_TOOLS_DIR";

/// Bumped when the layout changes, so older directories are not reused.
const LAYOUT_VERSION: u32 = 1;
/// Beneath the tool set: the recipe's files at their host paths.
const SYSROOT: &str = "root";
/// Written last into a finished tool set.
const COMPLETE_MARK: &str = ".complete";
/// Symlinks followed in a row before a path is called a loop.
const MAX_LINK_DEPTH: usize = 40;
/// Hex characters of the key that name the directory.
const KEY_HEX_LEN: usize = 16;

/// What a tool set is made from.
#[derive(Debug, Clone)]
pub struct ToolsSource {
    /// Busybox, git and their libraries, as the agent image's recipe says.
    pub recipe: Recipe,
    /// `berth-helper`, shipped with its libraries when found.
    pub helper: Option<PathBuf>,
}

/// A tool set on the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSet {
    /// The directory mounted at [`TOOLS_MOUNT`].
    pub dir: PathBuf,
    pub key: String,
    /// Assembled by this call (else it existed).
    pub built: bool,
}

impl ToolSet {
    /// Whether `berth-helper` (the exec agent's program) is among the tools.
    pub fn has_helper(&self) -> bool {
        self.dir.join("bin/berth-helper").exists()
    }
}

impl ToolsSource {
    /// The compiled-in agent recipe and the `berth-helper` beside this
    /// program, if there is one.
    pub fn host_default() -> Result<ToolsSource, ImageError> {
        Ok(ToolsSource {
            recipe: Recipe::default_agent()?,
            helper: berth_worktrees::locate_helper().ok(),
        })
    }

    /// What names the tool set: the layout version, the recipe text and the
    /// size, mtime and inode of each top-level input (a package upgrade
    /// changes them). Cheap: a few `stat`s, no `ldd`.
    pub fn key(&self) -> Result<String, ImageError> {
        let mut h = Sha256::new();
        h.update(format!("berth-tools {LAYOUT_VERSION}\n"));
        h.update(self.recipe.source.as_bytes());
        h.update(b"\0");
        // A preset's files are found by running its toolchain: its name in
        // the recipe text and its program's metadata stand for them here.
        let inputs = std::iter::once(self.recipe.busybox.path.as_path())
            .chain(self.recipe.host.iter().filter_map(HostEntry::path))
            .chain(self.helper.as_deref());
        for path in inputs {
            let md = std::fs::metadata(path).map_err(|source| ImageError::Io {
                op: "stat a tool input",
                path: path.to_path_buf(),
                source,
            })?;
            h.update(format!(
                "{}\0{} {} {}.{}\n",
                path.display(),
                md.len(),
                md.ino(),
                md.mtime(),
                md.mtime_nsec()
            ));
        }
        Ok(hex(&h.finalize())[..KEY_HEX_LEN].to_string())
    }
}

/// Where tool sets live when the spec names no directory:
/// `$BERTH_TOOLS_DIR`, else `$XDG_CACHE_HOME/berth/tools`, else
/// `$HOME/.cache/berth/tools`, else `/var/tmp/berth-tools-<uid>` (checked
/// like any other: it must be the user's own).
pub fn default_tools_root() -> PathBuf {
    let absolute = |name: &str| {
        std::env::var_os(name)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(dir) = absolute(TOOLS_DIR_ENV) {
        return dir;
    }
    if let Some(cache) = absolute("XDG_CACHE_HOME") {
        return cache.join("berth").join("tools");
    }
    if let Some(home) = absolute("HOME") {
        return home.join(".cache").join("berth").join("tools");
    }
    PathBuf::from(format!(
        "/var/tmp/berth-tools-{}",
        crate::identity::current_uid()
    ))
}

/// The tool set of `source` beneath `root` if it is assembled; nothing is
/// written (`berth doctor`). Blocking.
pub fn find_tools(root: &Path, source: &ToolsSource) -> Result<Option<ToolSet>, ImageError> {
    let key = source.key()?;
    let dir = root.join(&key);
    if !dir.join(COMPLETE_MARK).is_file() {
        return Ok(None);
    }
    check_private(root)?;
    check_private(&dir)?;
    Ok(Some(ToolSet {
        dir,
        key,
        built: false,
    }))
}

/// The tool set of `source` beneath `root`, assembled when missing. Blocking.
pub fn ensure_tools(root: &Path, source: &ToolsSource) -> Result<ToolSet, ImageError> {
    let key = source.key()?;
    let dir = root.join(&key);
    if dir.join(COMPLETE_MARK).is_file() {
        check_private(root)?;
        check_private(&dir)?;
        return Ok(ToolSet {
            dir,
            key,
            built: false,
        });
    }
    let io = |op: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ImageError::Io { op, path, source }
    };
    if std::fs::symlink_metadata(root).is_err() {
        // Made here: 0755 whatever the umask says (checked just below).
        make_dir(root)?;
    }
    check_private(root)?;
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let tmp = root.join(format!(".build-{key}-{}-{nanos}", std::process::id()));
    let assembled = assemble(&tmp, source).and_then(|()| {
        let mark = tmp.join(COMPLETE_MARK);
        std::fs::write(&mark, format!("{key}\n")).map_err(io("finish the tools", &mark))
    });
    if let Err(e) = assembled {
        let _ = std::fs::remove_dir_all(&tmp);
        return Err(e);
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => {
            tracing::info!(dir = %dir.display(), "assembled berth's injected tools");
            Ok(ToolSet {
                dir,
                key,
                built: true,
            })
        }
        // Another berth process finished the same set first: use theirs.
        Err(_) if dir.join(COMPLETE_MARK).is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
            check_private(&dir)?;
            Ok(ToolSet {
                dir,
                key,
                built: false,
            })
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(io("put the tools in place", &dir)(e))
        }
    }
}

impl ContainerSpec {
    /// Whether the container gets berth's tools at `/opt/berth`: every image
    /// but the default agent image, which has them by its recipe.
    pub fn injects_tools(&self) -> bool {
        !matches!(self.image, ImageRef::DefaultAgent)
    }

    /// Whether `/opt/berth` is mounted: for an image that needs berth's
    /// tools, and for any berth with an exec agent (`berth-helper` is its
    /// program).
    pub fn mounts_tools(&self) -> bool {
        self.injects_tools() || self.exec_socket_root.is_some()
    }

    /// The shell berth's own commands (the exec wrapper, the kill scripts)
    /// run under: the injected static busybox, or the default image's.
    pub fn shell(&self) -> &'static str {
        if self.injects_tools() {
            TOOLS_SHELL
        } else {
            IMAGE_SHELL
        }
    }

    /// The tool set this berth mounts, assembled when missing; `None` when
    /// the image needs none. Blocking.
    pub fn ensure_tools(&self) -> Result<Option<ToolSet>, ImageError> {
        if !self.mounts_tools() {
            return Ok(None);
        }
        let root = self.tools_root.clone().unwrap_or_else(default_tools_root);
        ensure_tools(&root, &ToolsSource::host_default()?).map(Some)
    }
}

/// Fails unless `path` is a directory of this user that no one else may
/// write: its programs run in every berth.
fn check_private(path: &Path) -> Result<(), ImageError> {
    let md = std::fs::symlink_metadata(path).map_err(|source| ImageError::Io {
        op: "stat the tools directory",
        path: path.to_path_buf(),
        source,
    })?;
    let me = crate::identity::current_uid();
    let problem = if !md.is_dir() {
        Some("not a directory (a symlink is not accepted)".to_string())
    } else if md.uid() != me {
        Some(format!(
            "owned by uid {}, not by berth's uid {me}",
            md.uid()
        ))
    } else if md.mode() & 0o022 != 0 {
        Some(format!(
            "mode {:o} lets others write it",
            md.mode() & 0o7777
        ))
    } else {
        None
    };
    match problem {
        Some(message) => Err(ImageError::Tools {
            path: path.to_path_buf(),
            message: format!("{message}; its programs would run in every berth"),
        }),
        None => Ok(()),
    }
}

/// Writes the tool set of `source` into the new directory `dest`.
fn assemble(dest: &Path, source: &ToolsSource) -> Result<(), ImageError> {
    let mut recipe = source.recipe.clone();
    if let Some(helper) = &source.helper {
        recipe.host.push(HostEntry::Files(HostInput {
            path: helper.clone(),
            libraries: true,
            exclude: Vec::new(),
        }));
    }
    let rootfs = Rootfs::resolve(&recipe)?;
    make_dir(dest)?;
    let sysroot = dest.join(SYSROOT);
    write_sysroot(&sysroot, &rootfs)?;

    let exec_path = git_exec_path(&recipe)?;
    let templates = rootfs
        .entries
        .iter()
        .find(|(p, e)| matches!(e.kind, EntryKind::Dir) && p.ends_with("/git-core/templates"))
        .map(|(p, _)| p.clone());
    let mut env = Vec::new();
    if exec_path.is_some() {
        env.push(("GIT_EXEC_PATH", TOOLS_GIT_EXEC_PATH.to_string()));
    }
    if let Some(t) = &templates {
        env.push(("GIT_TEMPLATE_DIR", in_mount(t)));
    }
    let mut exposer = Exposer {
        rootfs: &rootfs,
        sysroot: &sysroot,
        env,
        kinds: HashMap::new(),
    };

    let bin = dest.join("bin");
    make_dir(&bin)?;
    for (name, path) in children(&rootfs, &recipe.busybox.dir) {
        exposer.expose(&bin, name, path)?;
    }
    if let Some(helper) = &source.helper {
        let path = helper.to_string_lossy();
        exposer.expose(&bin, berth_worktrees::HELPER_NAME, &path)?;
    }
    if std::fs::symlink_metadata(bin.join("sh")).is_err() {
        return Err(ImageError::InvalidRecipe {
            origin: recipe.origin.clone(),
            message: format!(
                "busybox must provide `sh` in {}: berth's commands run under it",
                recipe.busybox.dir
            ),
        });
    }
    if let Some(exec_path) = exec_path {
        let git_core = dest.join("git-core");
        make_dir(&git_core)?;
        for (name, path) in children(&rootfs, &exec_path) {
            exposer.expose(&git_core, name, path)?;
        }
    }
    Ok(())
}

/// git's exec-path, as the recipe's git reports it (`git --exec-path`);
/// `None` when the recipe has no git.
fn git_exec_path(recipe: &Recipe) -> Result<Option<String>, ImageError> {
    let Some(git) = recipe
        .host
        .iter()
        .filter_map(|h| Some(&h.files()?.path))
        .find(|p| p.file_name().is_some_and(|n| n == "git") && p.is_file())
    else {
        return Ok(None);
    };
    let out = host_command(&git.to_string_lossy())
        .arg("--exec-path")
        .output()
        .map_err(|source| ImageError::Io {
            op: "run git --exec-path",
            path: git.clone(),
            source,
        })?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() || !path.starts_with('/') {
        return Err(ImageError::HostInput {
            path: git.clone(),
            message: format!("`git --exec-path` failed ({}): {path}", out.status),
        });
    }
    Ok(Some(path))
}

/// `(name, path)` of the entries directly inside `dir`.
fn children<'a>(rootfs: &'a Rootfs, dir: &'a str) -> impl Iterator<Item = (&'a str, &'a str)> {
    let prefix = format!("{dir}/");
    rootfs.entries.keys().filter_map(move |p| {
        let name = p.strip_prefix(&prefix)?;
        (!name.contains('/')).then_some((name, p.as_str()))
    })
}

/// A path of the tool set's root as the container sees it.
fn in_mount(image_path: &str) -> String {
    format!("{TOOLS_MOUNT}/{SYSROOT}{image_path}")
}

fn make_dir(path: &Path) -> Result<(), ImageError> {
    std::fs::create_dir_all(path)
        .and_then(|()| std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)))
        .map_err(|source| ImageError::Io {
            op: "create a tools directory",
            path: path.to_path_buf(),
            source,
        })
}

/// Copies the resolved recipe beneath `sysroot`. Modes lose every write bit
/// but the owner's and every set-id bit; hard links are made last, when
/// what they name exists.
fn write_sysroot(sysroot: &Path, rootfs: &Rootfs) -> Result<(), ImageError> {
    let io = |op: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ImageError::Io { op, path, source }
    };
    make_dir(sysroot)?;
    let at = |p: &str| sysroot.join(p.trim_start_matches('/'));
    let mode = |m: u32| std::fs::Permissions::from_mode(m & 0o755);
    for (path, e) in &rootfs.entries {
        let target = at(path);
        match &e.kind {
            EntryKind::Dir => make_dir(&target)?,
            EntryKind::Symlink { target: to } => {
                let to = if to.starts_with('/') {
                    in_mount(to)
                } else {
                    to.clone()
                };
                std::os::unix::fs::symlink(&to, &target).map_err(io("make a symlink", &target))?;
            }
            EntryKind::HostFile { host, size } => {
                let copied = std::fs::copy(host, &target).map_err(io("copy a tool", host))?;
                if copied != *size {
                    return Err(ImageError::HostInput {
                        path: host.clone(),
                        message: format!(
                            "changed while the tools were assembled ({copied} bytes, expected {size})"
                        ),
                    });
                }
                std::fs::set_permissions(&target, mode(e.mode))
                    .map_err(io("set a tool's mode", &target))?;
            }
            EntryKind::Generated { content } => {
                std::fs::write(&target, content).map_err(io("write a tool file", &target))?;
                std::fs::set_permissions(&target, mode(e.mode))
                    .map_err(io("set a tool's mode", &target))?;
            }
            EntryKind::HardLink { .. } => {}
        }
    }
    for (path, e) in &rootfs.entries {
        if let EntryKind::HardLink { to } = &e.kind {
            let target = at(path);
            std::fs::hard_link(at(to), &target).map_err(io("link a tool", &target))?;
        }
    }
    Ok(())
}

/// Makes programs of the root filesystem startable from a directory of the
/// tool set.
struct Exposer<'a> {
    rootfs: &'a Rootfs,
    sysroot: &'a Path,
    /// Set by every wrapper (git's exec-path and templates).
    env: Vec<(&'static str, String)>,
    /// What each final path is, read once.
    kinds: HashMap<String, ElfKind>,
}

impl Exposer<'_> {
    /// Puts `name` into `dir` for the image path `path`: a directory or a
    /// static program as a symlink, a dynamic program as a loader script.
    fn expose(&mut self, dir: &Path, name: &str, path: &str) -> Result<(), ImageError> {
        let link = dir.join(name);
        let io = |op: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| ImageError::Io { op, path, source }
        };
        let Some((real, entry)) = follow(&self.rootfs.entries, path) else {
            // A link that leads out of the recipe: nothing to start.
            return Ok(());
        };
        let kind = match &entry.kind {
            EntryKind::Dir => ElfKind::NotElf,
            EntryKind::HostFile { .. }
            | EntryKind::HardLink { .. }
            | EntryKind::Generated { .. } => match self.kinds.get(&real) {
                Some(k) => k.clone(),
                None => {
                    let file = self.sysroot.join(real.trim_start_matches('/'));
                    let bytes = std::fs::read(&file).map_err(io("read a tool", &file))?;
                    let kind = elf::classify(&bytes).map_err(|m| ImageError::HostInput {
                        path: PathBuf::from(&real),
                        message: m.to_string(),
                    })?;
                    self.kinds.insert(real.clone(), kind.clone());
                    kind
                }
            },
            EntryKind::Symlink { .. } => return Ok(()),
        };
        match kind {
            ElfKind::NotElf | ElfKind::Static => {
                std::os::unix::fs::symlink(in_mount(&real), &link)
                    .map_err(io("link a tool", &link))?;
            }
            ElfKind::Dynamic { interpreter } => {
                let Some((loader, _)) = follow(&self.rootfs.entries, &interpreter) else {
                    return Err(ImageError::HostInput {
                        path: PathBuf::from(&real),
                        message: format!(
                            "its loader {interpreter} is not among the tools (`libraries = true` copies it)"
                        ),
                    });
                };
                let script = self.wrapper(&real, &loader);
                std::fs::write(&link, script).map_err(io("write a tool wrapper", &link))?;
                std::fs::set_permissions(&link, std::fs::Permissions::from_mode(0o755))
                    .map_err(io("set a tool's mode", &link))?;
            }
        }
        Ok(())
    }

    /// The script that starts the dynamic program `real` through `loader`.
    fn wrapper(&self, real: &str, loader: &str) -> String {
        let library_path = self
            .rootfs
            .library_dirs
            .iter()
            .map(|d| in_mount(d))
            .collect::<Vec<_>>()
            .join(":");
        let mut s = format!(
            "#!{TOOLS_SHELL}\n# berth: {real} through the loader injected beside it, never the image's.\n"
        );
        for (k, v) in &self.env {
            s.push_str(&format!("export {k}={v}\n"));
        }
        s.push_str(&format!(
            "exec {} --inhibit-cache --library-path {library_path} --argv0 \"$0\" {} \"$@\"\n",
            in_mount(loader),
            in_mount(real)
        ));
        s
    }
}

/// Follows symlinks through the root filesystem's entries, component by
/// component; the final path and its entry, `None` when it leads outside.
fn follow<'a>(entries: &'a BTreeMap<String, Entry>, path: &str) -> Option<(String, &'a Entry)> {
    let mut path = path.to_string();
    for _ in 0..MAX_LINK_DEPTH {
        let comps: Vec<&str> = path.split('/').filter(|c| !c.is_empty()).collect();
        let mut acc = String::new();
        let mut next = None;
        for (i, c) in comps.iter().enumerate() {
            acc.push('/');
            acc.push_str(c);
            let entry = entries.get(&acc)?;
            if let EntryKind::Symlink { target } = &entry.kind {
                let mut to = resolve_link(Path::new(&acc), Path::new(target));
                for rest in &comps[i + 1..] {
                    to.push(rest);
                }
                next = Some(to.to_string_lossy().into_owned());
                break;
            }
        }
        match next {
            Some(n) => path = n,
            None => {
                let entry = entries.get(&acc)?;
                return Some((acc, entry));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::WorkAccess;
    use crate::image::ImageInfo;

    fn entry(kind: EntryKind) -> Entry {
        Entry::test(kind, 0o755, 0)
    }

    #[test]
    fn links_are_followed_inside_the_root_only() {
        let link = |t: &str| {
            entry(EntryKind::Symlink {
                target: t.to_string(),
            })
        };
        let entries = BTreeMap::from([
            ("/lib64".to_string(), link("usr/lib64")),
            ("/usr".to_string(), entry(EntryKind::Dir)),
            ("/usr/lib64".to_string(), entry(EntryKind::Dir)),
            (
                "/usr/lib64/ld.so".to_string(),
                link("/usr/lib/x86_64/ld.so"),
            ),
            ("/usr/lib".to_string(), entry(EntryKind::Dir)),
            ("/usr/lib/x86_64".to_string(), entry(EntryKind::Dir)),
            (
                "/usr/lib/x86_64/ld.so".to_string(),
                entry(EntryKind::Generated { content: vec![] }),
            ),
            ("/loop".to_string(), link("/loop")),
            ("/out".to_string(), link("/etc/shadow")),
        ]);
        let (real, _) = follow(&entries, "/lib64/ld.so").unwrap();
        assert_eq!(real, "/usr/lib/x86_64/ld.so");
        assert!(follow(&entries, "/loop").is_none());
        assert!(follow(&entries, "/out").is_none());
        assert!(follow(&entries, "/missing").is_none());
    }

    #[test]
    fn a_root_others_can_write_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        check_private(dir.path()).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_private(dir.path()).unwrap_err().to_string();
        assert!(err.contains("lets others write"), "{err}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/", &link).unwrap();
        let err = check_private(&link).unwrap_err().to_string();
        assert!(err.contains("symlink"), "{err}");
    }

    #[test]
    fn berths_tools_are_mounted_read_only_after_the_images_path() {
        let mut s = ContainerSpec::new("p", "a", "/s/wt", "/s/a.git", "/s/f/objects");
        assert!(!s.injects_tools());
        assert_eq!(s.shell(), "/bin/sh");
        s.image = ImageRef::Named("python:3".into());
        s.path_append = vec!["/opt/tc/bin".into()];
        assert!(s.injects_tools());
        assert_eq!(s.shell(), "/opt/berth/bin/sh");
        let img = ImageInfo {
            name: "python:3".into(),
            id: "sha256:1".into(),
            path: Some("/usr/local/bin:/usr/bin".into()),
        };
        let body = s.container_body(&img, WorkAccess::ReadWrite, Some(Path::new("/c/tools/k")));
        let env = body.env.clone().unwrap();
        assert!(
            env.contains(&"PATH=/usr/local/bin:/usr/bin:/opt/tc/bin:/opt/berth/bin".to_string()),
            "{env:?}"
        );
        let tools = body
            .host_config
            .unwrap()
            .mounts
            .unwrap()
            .into_iter()
            .find(|m| m.target.as_deref() == Some("/opt/berth"))
            .unwrap();
        assert_eq!(tools.source.as_deref(), Some("/c/tools/k"));
        assert_eq!(tools.read_only, Some(true));
    }
}
