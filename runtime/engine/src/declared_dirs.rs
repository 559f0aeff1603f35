//! `[sandbox] toolchains` and `caches` as a berth's uid sees them: when
//! berth runs as root, its commands run as the berth's own uid, and a
//! declared directory that is itself closed to it (a 0700 `/root/.pyenv`),
//! or that lies below a closed directory inside another shown directory (a
//! 0700 directory in `/opt`, a system directory the runner shows as it is),
//! is shown but cannot be entered. `berth up` names each such directory and
//! the directory that blocks it, from mode bits alone (berth's own process
//! never switches uid to ask the kernel). The ancestors of a directory shown
//! at its own path are otherwise made fresh (0755) in the runner's root and
//! by Docker, so a closed `/root` alone does not block `/root/.cargo`.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why `uid`/`gid` cannot reach `dir` (search every directory from `/` down
/// to `dir` itself), or `None` when it can.
/// `shown`: the other directories shown at their own paths; from the
/// deepest of them holding `dir` (else from `dir` itself) the host's modes
/// are what the berth's uid meets.
pub fn unreachable_by(
    dir: &Path,
    uid: u32,
    gid: u32,
    what: &str,
    shown: &[PathBuf],
) -> Option<String> {
    let from = shown
        .iter()
        .filter(|s| dir.starts_with(s) && s.as_path() != dir)
        .max_by_key(|s| s.components().count())
        .map_or(dir, PathBuf::as_path);
    let mut prefix = PathBuf::new();
    let mut checking = false;
    for part in dir.components() {
        prefix.push(part);
        checking |= prefix == from;
        let meta = match std::fs::metadata(&prefix) {
            Ok(meta) => meta,
            Err(e) => {
                return Some(format!(
                    "declared {what} {} cannot be used: {}: {e}",
                    dir.display(),
                    prefix.display()
                ));
            }
        };
        if !meta.is_dir() {
            return Some(format!(
                "declared {what} {} cannot be used: {} is not a directory",
                dir.display(),
                prefix.display()
            ));
        }
        let mode = meta.mode();
        let search = !checking
            || (if meta.uid() == uid {
                mode & 0o100 != 0
            } else if meta.gid() == gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            });
        if !search {
            return Some(format!(
                "{} is {:04o} (owner uid {}): the berth's uid {uid} cannot reach the declared {what} {}; make it searchable (chmod o+x {}) or declare a directory the uid can enter",
                prefix.display(),
                mode & 0o7777,
                meta.uid(),
                dir.display(),
                prefix.display()
            ));
        }
    }
    None
}

/// One note per declared directory of `sandbox` that `uid` cannot reach in
/// a berth of `mode` (a runner also shows the host's system directories).
pub fn unreachable_notes(
    sandbox: &crate::config::SandboxConfig,
    uid: u32,
    mode: crate::config::BerthMode,
) -> Vec<String> {
    let mut shown: Vec<PathBuf> = sandbox
        .toolchains
        .iter()
        .chain(&sandbox.caches)
        .map(PathBuf::from)
        .collect();
    if mode == crate::config::BerthMode::Runner {
        shown.extend(
            berth_sandbox::runner::DEFAULT_SYSTEM_DIRS
                .iter()
                .map(PathBuf::from),
        );
    }
    let toolchains = sandbox.toolchains.iter().map(|d| (d, "toolchain"));
    let caches = sandbox.caches.iter().map(|d| (d, "cache"));
    toolchains
        .chain(caches)
        .filter_map(|(dir, what)| unreachable_by(Path::new(dir), uid, uid, what, &shown))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_dir_under_a_closed_ancestor_is_named_with_the_ancestor() {
        let closed = tempfile::tempdir().unwrap();
        std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = closed.path().join("cargo");
        std::fs::create_dir(&dir).unwrap();
        let owner = std::fs::metadata(closed.path()).unwrap().uid();
        let stranger = owner.wrapping_add(12_345);
        let shown = [closed.path().to_path_buf()];
        // Below a closed directory that is itself shown: blocked there.
        let note = unreachable_by(&dir, stranger, stranger, "toolchain", &shown).unwrap();
        assert!(
            note.starts_with(&format!("{} is 0700", closed.path().display()))
                && note.contains(&format!("toolchain {}", dir.display())),
            "{note}"
        );
        // Its owner reaches it; so does anyone once the ancestor is searchable.
        assert_eq!(
            unreachable_by(&dir, owner, owner, "toolchain", &shown),
            None
        );
        // Its ancestors not shown: they are made fresh, only its own mode counts.
        assert_eq!(
            unreachable_by(&dir, stranger, stranger, "toolchain", &[]),
            None
        );
        assert!(
            unreachable_by(closed.path(), stranger, stranger, "toolchain", &[])
                .unwrap()
                .contains("is 0700")
        );
        std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        assert_eq!(
            unreachable_by(&dir, stranger, stranger, "toolchain", &shown),
            None
        );
        let gone = closed.path().join("missing");
        assert!(
            unreachable_by(&gone, owner, owner, "cache", &[])
                .unwrap()
                .contains("cannot be used")
        );
    }
}
