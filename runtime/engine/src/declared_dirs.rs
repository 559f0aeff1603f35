//! `[sandbox] toolchains` and `caches` as a berth's uid sees them: when
//! berth runs as root, its commands run as the berth's own uid, and a
//! directory under a 0700 `/root` (where rustup, cargo and pyenv install
//! themselves) is shown to them but cannot be entered. `berth up` names each
//! such directory and the ancestor that blocks it, from mode bits alone
//! (berth's own process never switches uid to ask the kernel).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Why `uid`/`gid` cannot reach `dir` (search every directory from `/` down
/// to `dir` itself), or `None` when it can.
pub fn unreachable_by(dir: &Path, uid: u32, gid: u32, what: &str) -> Option<String> {
    let mut prefix = PathBuf::new();
    for part in dir.components() {
        prefix.push(part);
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
        let search = if meta.uid() == uid {
            mode & 0o100 != 0
        } else if meta.gid() == gid {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !search {
            return Some(format!(
                "{} is {:04o} (owner uid {}): the berth's uid {uid} cannot reach the declared {what} {}; install it under a directory the uid can search (e.g. /opt) or make {} searchable (chmod o+x)",
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

/// One note per declared directory of `sandbox` that `uid` cannot reach.
pub fn unreachable_notes(sandbox: &crate::config::SandboxConfig, uid: u32) -> Vec<String> {
    let toolchains = sandbox.toolchains.iter().map(|d| (d, "toolchain"));
    let caches = sandbox.caches.iter().map(|d| (d, "cache"));
    toolchains
        .chain(caches)
        .filter_map(|(dir, what)| unreachable_by(Path::new(dir), uid, uid, what))
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
        let note = unreachable_by(&dir, stranger, stranger, "toolchain").unwrap();
        assert!(
            note.starts_with(&format!("{} is 0700", closed.path().display()))
                && note.contains(&format!("toolchain {}", dir.display())),
            "{note}"
        );
        // Its owner reaches it; so does anyone once the ancestor is searchable.
        assert_eq!(unreachable_by(&dir, owner, owner, "toolchain"), None);
        std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        assert_eq!(unreachable_by(&dir, stranger, stranger, "toolchain"), None);
        let gone = closed.path().join("missing");
        assert!(
            unreachable_by(&gone, owner, owner, "cache")
                .unwrap()
                .contains("cannot be used")
        );
    }
}
