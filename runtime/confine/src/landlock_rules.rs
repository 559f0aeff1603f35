//! Landlock inside the namespaces, as a second wall: should a mount slip, the
//! command still writes only the worktree, the writable directories and the
//! private tmp, and reads only those, the system directories and the readable
//! ones. Scopes (ABI 6) keep it from connecting to abstract unix sockets and
//! from signalling processes outside its domain (the shim, berth).

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, RulesetAttr,
    RulesetCreatedAttr, RulesetError, RulesetStatus, Scope,
};

use crate::ConfineError;

/// The newest ABI whose rights this module asks for; older kernels enforce
/// what they know (best effort), and the shim says so.
const ABI_WANTED: ABI = ABI::V7;

/// The paths (in the new root) a command may read and write, and only read.
#[derive(Debug, Default, Clone)]
pub struct Paths {
    pub write: Vec<PathBuf>,
    pub read: Vec<PathBuf>,
}

/// How much of the ruleset the kernel enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    Full,
    Partial,
    None,
}

/// A berth's Landlock paths opened once (`O_PATH`), by its resident: each
/// exec builds its ruleset from these descriptors instead of opening,
/// checking and closing every path again (five system calls a path, a
/// score of paths an exec). A rule binds the path's inode, so a descriptor
/// opened in the resident's mount tree holds in each exec's copy of the
/// tree; a path an exec mounts anew (`/proc`, a filesystem of its own) is
/// never held, and each exec opens it itself.
#[derive(Debug, Default)]
pub struct HeldPaths {
    /// Each held path, its descriptor, and whether it is a file (a file
    /// takes only the rights that apply to files).
    held: Vec<(PathBuf, OwnedFd, bool)>,
}

/// The lowest number a held descriptor takes: above the 0–3 an exec's PID 1
/// moves its own descriptors to, so none of those moves closes one.
const HELD_FD_FLOOR: libc::c_int = 10;

impl HeldPaths {
    /// Holds each of `paths` that exists, and `/`, but `fresh` (and what is
    /// under it). A path that cannot be opened is not held: an exec tries
    /// it again itself.
    pub fn open(paths: &Paths, fresh: &[&Path]) -> HeldPaths {
        let mut held: Vec<(PathBuf, OwnedFd, bool)> = Vec::new();
        let wanted = paths
            .read
            .iter()
            .chain(&paths.write)
            .map(PathBuf::as_path)
            .chain([Path::new("/")]);
        for path in wanted {
            if fresh.iter().any(|f| path.starts_with(f)) || held.iter().any(|(p, _, _)| p == path) {
                continue;
            }
            if let Some((fd, file)) = open_held(path) {
                held.push((path.to_path_buf(), fd, file));
            }
        }
        HeldPaths { held }
    }

    /// The held descriptors: they must stay open in each process that
    /// builds a ruleset from them (an exec's PID 1 and its command).
    pub fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.held.iter().map(|(_, fd, _)| fd.as_raw_fd())
    }

    fn get(&self, path: &Path) -> Option<(BorrowedFd<'_>, bool)> {
        self.held
            .iter()
            .find(|(p, _, _)| p == path)
            .map(|(_, fd, file)| (fd.as_fd(), *file))
    }
}

/// `path` opened `O_PATH | O_CLOEXEC` at [`HELD_FD_FLOOR`] or above, and
/// whether it is a file.
fn open_held(path: &Path) -> Option<(OwnedFd, bool)> {
    let opened = PathFd::new(path).ok()?;
    // SAFETY: F_DUPFD_CLOEXEC of a descriptor `opened` owns; the new one is
    // owned below, the old one closed when `opened` drops.
    let moved = unsafe {
        libc::fcntl(
            opened.as_fd().as_raw_fd(),
            libc::F_DUPFD_CLOEXEC,
            HELD_FD_FLOOR,
        )
    };
    if moved < 0 {
        return None;
    }
    // SAFETY: `moved` was just made and is owned by no one else.
    let fd = unsafe { OwnedFd::from_raw_fd(moved) };
    let file = is_file(fd.as_fd());
    Some((fd, file))
}

/// Whether `fd` is not a directory (a file, a device: the rights that
/// apply to directories cannot be granted on it). When `fstat` fails, a
/// directory, as the landlock crate's `path_beneath_rules` assumes.
fn is_file(fd: BorrowedFd<'_>) -> bool {
    // SAFETY: fstat into a zeroed local of the right type.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd.as_raw_fd(), &mut st) == 0 && (st.st_mode & libc::S_IFMT) != libc::S_IFDIR
    }
}

/// A rule's descriptor: held by the resident, or opened for this exec.
enum RuleFd<'a> {
    Held(BorrowedFd<'a>),
    Opened(PathFd),
}

impl AsFd for RuleFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            RuleFd::Held(fd) => *fd,
            RuleFd::Opened(fd) => fd.as_fd(),
        }
    }
}

/// The rules granting `access` beneath each of `paths`: from its held
/// descriptor when there is one, else opened now; a path that cannot be
/// opened gets no rule (so no path is `stat`ed first).
fn rules<'a>(
    paths: impl IntoIterator<Item = &'a Path> + 'a,
    access: BitFlags<AccessFs>,
    held: Option<&'a HeldPaths>,
) -> impl Iterator<Item = Result<PathBeneath<RuleFd<'a>>, RulesetError>> + 'a {
    paths.into_iter().filter_map(move |path| {
        let (fd, file) = match held.and_then(|h| h.get(path)) {
            Some((fd, file)) => (RuleFd::Held(fd), file),
            None => {
                let fd = PathFd::new(path).ok()?;
                let file = is_file(fd.as_fd());
                (RuleFd::Opened(fd), file)
            }
        };
        let access = if file {
            access & AccessFs::from_file(ABI_WANTED)
        } else {
            access
        };
        Some(Ok(PathBeneath::new(fd, access)))
    })
}

/// Restricts the calling process (sets `PR_SET_NO_NEW_PRIVS` too) to
/// `paths`, building the rules from `held` descriptors where it has them.
/// A path that does not exist gets no rule.
pub fn restrict(paths: &Paths, held: Option<&HeldPaths>) -> Result<Enforcement, ConfineError> {
    let fail = |e: RulesetError| ConfineError::Landlock(e.to_string());
    let all = AccessFs::from_all(ABI_WANTED);
    let read = AccessFs::from_read(ABI_WANTED);
    let status = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(fail)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rules(rules(paths.read.iter().map(PathBuf::as_path), read, held))
        .map_err(fail)?
        .add_rules(rules(paths.write.iter().map(PathBuf::as_path), all, held))
        .map_err(fail)?
        // Listing directories (not reading files) anywhere in the new root:
        // it holds only what the mount tree let in.
        .add_rules(rules([Path::new("/")], AccessFs::ReadDir.into(), held))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    })
}
