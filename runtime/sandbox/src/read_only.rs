//! Read-only `/work` for runner execs, with Landlock.
//!
//! A pipeline step that should not write runs with the worktree read-only. In a
//! container that is a read-only mount; on the host the runner uses Landlock:
//! the ruleset *handles* only write rights, so reading and executing stay
//! allowed everywhere, and grants them back beneath a few directories commands
//! legitimately write (`/dev`, `/tmp`, `/var/tmp`, the home directory) — never
//! the worktree. A write there then fails with EACCES ("Permission denied"),
//! which is what the pipeline's permission retry recognises.
//!
//! Landlock rules are unions over directory hierarchies with no exceptions, so
//! a writable directory that *contains* the worktree (a worktree under `/tmp`)
//! cannot be granted whole: its other entries are granted one by one down to
//! the worktree, and new entries created directly in such an ancestor are
//! refused. Symlinked entries are skipped, since a rule applies to where a link
//! points.
//!
//! The ruleset is built once, in the parent, when read-only is set; each later
//! exec applies it in `pre_exec` with two async-signal-safe system calls
//! (`PR_SET_NO_NEW_PRIVS`, `landlock_restrict_self`). Truncation is only
//! controlled from ABI 3 (Linux 6.2); older kernels are reported as not
//! enforcing read-only.

use std::fs;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, AccessFs, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr,
};

use crate::SandboxError;

/// Said when the kernel has no Landlock.
pub(crate) const LANDLOCK_UNAVAILABLE: &str =
    "Landlock is not available on this kernel: read-only cannot be enforced in runner mode";

/// The newest ABI whose write rights this module names; newer kernels enforce
/// these, older ones what they know (down to ABI 3).
const RIGHTS_ABI: ABI = ABI::V5;
/// The oldest ABI that controls truncation.
const MIN_ABI: i64 = 3;

/// The running kernel's Landlock ABI version, or the error it gave.
pub(crate) fn kernel_abi() -> Result<i64, io::Error> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute and size 0 this only queries the version.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if version < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(version)
    }
}

/// Whether read-only can be enforced given the probe's answer; the error is
/// the message for the user.
pub(crate) fn support(abi: &Result<i64, io::Error>) -> Result<(), String> {
    match abi {
        Err(_) | Ok(0) => Err(LANDLOCK_UNAVAILABLE.to_string()),
        Ok(v) if *v < MIN_ABI => Err(format!(
            "Landlock ABI {v} on this kernel cannot stop a command from truncating files: \
             read-only cannot be enforced in runner mode (needs ABI {MIN_ABI}, Linux 6.2 or later)"
        )),
        Ok(_) => Ok(()),
    }
}

/// The directories to grant write access beneath: each candidate that exists,
/// except the worktree and anything inside it; a candidate that contains the
/// worktree is replaced by its other entries (see the module docs).
pub(crate) fn writable_roots(worktree: &Path, candidates: &[PathBuf]) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for candidate in candidates {
        let Ok(canonical) = fs::canonicalize(candidate) else {
            tracing::debug!(path = %candidate.display(), "writable directory missing; skipped");
            continue;
        };
        add_root(worktree, canonical, &mut roots);
    }
    roots.sort();
    roots.dedup();
    roots
}

fn add_root(worktree: &Path, dir: PathBuf, roots: &mut Vec<PathBuf>) {
    if dir.starts_with(worktree) {
        tracing::debug!(path = %dir.display(), "writable directory lies in the worktree; not granted");
        return;
    }
    if !worktree.starts_with(&dir) {
        roots.push(dir);
        return;
    }
    let Ok(entries) = fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            continue;
        }
        let path = entry.path();
        if path == worktree {
            continue;
        }
        if kind.is_dir() {
            add_root(worktree, path, roots);
        } else {
            roots.push(path);
        }
    }
}

/// Builds the ruleset: write rights handled, granted beneath `roots` only.
/// Returns the ruleset's descriptor (close-on-exec, applied in `pre_exec`).
pub(crate) fn build_ruleset(worktree: &Path, roots: &[PathBuf]) -> Result<OwnedFd, SandboxError> {
    let fail = |what: String| SandboxError::Backend {
        op: "set /work read-only",
        message: what,
    };
    let write = AccessFs::from_write(RIGHTS_ABI);
    let file_write: BitFlags<AccessFs> = write & AccessFs::from_file(RIGHTS_ABI);
    let mut ruleset = Ruleset::default()
        .handle_access(write)
        .and_then(|r| r.create())
        .map_err(|e| fail(format!("create the Landlock ruleset: {e}")))?;
    for root in roots {
        let fd = match PathFd::new(root) {
            Ok(fd) => fd,
            Err(e) => {
                tracing::debug!(path = %root.display(), error = %e, "writable path vanished; skipped");
                continue;
            }
        };
        // The path may have been replaced since it was listed (by a command
        // still running): grant what the descriptor really is, never the
        // worktree or an ancestor of it.
        let Ok(opened) = fs::read_link(format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd())) else {
            continue;
        };
        if opened.starts_with(worktree) || worktree.starts_with(&opened) {
            tracing::warn!(path = %root.display(), opened = %opened.display(), "writable path now leads to the worktree; not granted");
            continue;
        }
        let rights = if opened.is_dir() { write } else { file_write };
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, rights))
            .map_err(|e| fail(format!("grant writes beneath {}: {e}", root.display())))?;
    }
    Option::<OwnedFd>::from(ruleset).ok_or_else(|| fail(LANDLOCK_UNAVAILABLE.to_string()))
}

/// Restricts the calling process with the ruleset `fd`. Runs in the child
/// between fork and exec: only system calls, no allocation.
pub(crate) fn restrict_self(fd: RawFd) -> io::Result<()> {
    nix::sys::prctl::set_no_new_privs().map_err(io::Error::from)?;
    // SAFETY: a plain system call on a descriptor the parent keeps open until
    // the spawn returns.
    let rc = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_follows_the_abi() {
        let cases: Vec<(Result<i64, io::Error>, Option<&str>)> = vec![
            (
                Err(io::Error::from_raw_os_error(libc::ENOSYS)),
                Some(LANDLOCK_UNAVAILABLE),
            ),
            (
                Err(io::Error::from_raw_os_error(libc::EOPNOTSUPP)),
                Some(LANDLOCK_UNAVAILABLE),
            ),
            (Ok(0), Some(LANDLOCK_UNAVAILABLE)),
            (Ok(1), Some("Landlock ABI 1")),
            (Ok(2), Some("Landlock ABI 2")),
            (Ok(3), None),
            (Ok(7), None),
        ];
        for (abi, want) in cases {
            let got = support(&abi);
            match want {
                None => assert_eq!(got, Ok(()), "{abi:?}"),
                Some(msg) => {
                    let err = got.unwrap_err();
                    assert!(err.contains(msg), "{abi:?}: {err}");
                    assert!(
                        err.contains("read-only cannot be enforced in runner mode"),
                        "{err}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_directory_holding_the_worktree_is_split_around_it() {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let worktree = base.join("state/worktrees/p/dev-1");
        fs::create_dir_all(&worktree).unwrap();
        fs::create_dir_all(base.join("state/worktrees/p/dev-2")).unwrap();
        fs::create_dir_all(base.join("state/forge")).unwrap();
        fs::create_dir_all(base.join("cache")).unwrap();
        fs::write(base.join("notes.txt"), "x").unwrap();
        std::os::unix::fs::symlink(&worktree, base.join("to-worktree")).unwrap();
        let home = base.join("home");
        fs::create_dir_all(&home).unwrap();

        let got = writable_roots(
            &worktree,
            &[
                base.clone(),
                home.clone(),
                worktree.join("sub"),
                worktree.clone(),
                base.join("missing"),
            ],
        );
        let want: Vec<PathBuf> = vec![
            base.join("cache"),
            base.join("home"),
            base.join("notes.txt"),
            base.join("state/forge"),
            base.join("state/worktrees/p/dev-2"),
        ];
        assert_eq!(got, want);
    }

    #[test]
    fn unrelated_directories_are_granted_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        let worktree = base.join("wt");
        fs::create_dir_all(&worktree).unwrap();
        let got = writable_roots(&worktree, &[PathBuf::from("/dev"), PathBuf::from("/dev/")]);
        assert_eq!(got, vec![PathBuf::from("/dev")]);
    }
}
