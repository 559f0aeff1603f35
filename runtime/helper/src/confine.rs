//! Confining the helper before it opens anything an agent controls.
//!
//! In order:
//! 1. open the directories of the ruleset (`O_PATH`, no link followed at the
//!    last component: berth computed them under its own directories);
//! 2. as root with a target uid: a private mount namespace in which the
//!    target uid can reach those directories at their own paths (a state
//!    directory under `/root` is otherwise unreachable to it: an ancestor it
//!    cannot search is covered with an empty tmpfs holding only the path down
//!    to bind mounts of the three directories), then `setgroups([])`,
//!    `setresgid`, `setresuid`;
//! 3. not dumpable (a process of the agent's uid cannot ptrace it);
//! 4. libgit2 reads no system, global or XDG configuration;
//! 5. `PR_SET_NO_NEW_PRIVS` and a Landlock ruleset (the best ABI the kernel
//!    has): read the `read` and `write` directories and the system libraries,
//!    write only the `write` directories. Without Landlock it refuses: a uid
//!    switch alone still reaches every world-readable host file, and without
//!    root Landlock is the whole confinement.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result, bail};
use berth_worktrees::Confinement;
use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope,
};

/// The newest Landlock ABI this build knows; older kernels get what they have.
const BEST_ABI: ABI = ABI::V10;

/// System paths the process may read (shared libraries a late `dlopen` or NSS
/// lookup could want). Missing ones are skipped.
const SYSTEM_READ: &[&str] = &["/usr", "/lib", "/lib64", "/lib32", "/etc/ld.so.cache"];

/// Confines this process as `c` says.
pub fn confine(c: &Confinement) -> Result<()> {
    let write = open_dirs(&c.write)?;
    let read = open_dirs(&c.read)?;
    // SAFETY: geteuid cannot fail and touches no memory.
    let euid = unsafe { libc::geteuid() };
    if let Some(uid) = c.uid {
        let gid = c.gid.unwrap_or(uid);
        if euid != 0 {
            bail!("asked to run as uid {uid}, but the helper is not root (euid {euid})");
        }
        if uid == 0 {
            bail!("refusing to \"switch\" to uid 0: the agent's work never runs as root");
        }
        let targets: Vec<(&Path, &OwnedFd)> = c
            .write
            .iter()
            .map(PathBuf::as_path)
            .zip(write.iter())
            .chain(c.read.iter().map(PathBuf::as_path).zip(read.iter()))
            .collect();
        reach(&targets, uid, gid)?;
        switch_user(uid, gid)?;
    }
    // SAFETY: prctl with PR_SET_DUMPABLE and an integer argument touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error()).context("PR_SET_DUMPABLE");
    }
    no_user_git_config()?;
    // SAFETY: prctl with PR_SET_NO_NEW_PRIVS and integer arguments touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error()).context("PR_SET_NO_NEW_PRIVS");
    }
    landlock(&read, &write)
}

fn open_dirs(paths: &[PathBuf]) -> Result<Vec<OwnedFd>> {
    paths
        .iter()
        .map(|p| {
            open_path(
                p,
                libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            )
            .with_context(|| format!("opening {} for the ruleset", p.display()))
        })
        .collect()
}

fn open_path(path: &Path, flags: i32) -> std::io::Result<OwnedFd> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Whether `uid:gid` (no supplementary groups) may search a directory.
fn searchable(path: &Path, uid: u32, gid: u32) -> std::io::Result<bool> {
    let meta = std::fs::metadata(path)?;
    use std::os::unix::fs::MetadataExt;
    let mode = meta.mode();
    Ok(if meta.uid() == uid {
        mode & 0o100 != 0
    } else if meta.gid() == gid {
        mode & 0o010 != 0
    } else {
        mode & 0o001 != 0
    })
}

/// Makes every target reachable by `uid` at its own path, in a private mount
/// namespace when an ancestor is not searchable by it.
fn reach(targets: &[(&Path, &OwnedFd)], uid: u32, gid: u32) -> Result<()> {
    // SAFETY: unshare with CLONE_NEWNS only changes this process's mount
    // namespace; the process is single-threaded here.
    let private = unsafe { libc::unshare(libc::CLONE_NEWNS) } == 0;
    if private {
        mount(
            None,
            Path::new("/"),
            None,
            libc::MS_REC | libc::MS_PRIVATE,
            None,
        )
        .context("making the mount namespace private")?;
    }
    // A bind mount's source must be a mount of this namespace: open the
    // targets again here, before anything is covered, and check they are the
    // directories the ruleset holds.
    let mut here = Vec::new();
    for (target, ruled) in targets {
        let fd = open_path(
            target,
            libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        )
        .with_context(|| format!("opening {}", target.display()))?;
        if identity(&fd)? != identity(ruled)? {
            bail!(
                "{} changed while the helper confined itself",
                target.display()
            );
        }
        here.push((*target, fd));
    }
    let mut covered: Vec<PathBuf> = Vec::new();
    for (target, fd) in &here {
        let names: Vec<_> = target
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n),
                _ => None,
            })
            .collect();
        let mut at = PathBuf::from("/");
        for (i, name) in names.iter().enumerate() {
            at.push(name);
            let last = i + 1 == names.len();
            let in_tmpfs = covered.iter().any(|m| at.starts_with(m) && at != *m);
            if in_tmpfs {
                match std::fs::create_dir(&at) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e).with_context(|| format!("mkdir {}", at.display())),
                }
                if last {
                    let source = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
                    mount(Some(&source), &at, None, libc::MS_BIND, None)
                        .with_context(|| format!("binding {}", at.display()))?;
                }
            } else if !last
                && !searchable(&at, uid, gid).with_context(|| at.display().to_string())?
            {
                if !private {
                    bail!(
                        "uid {uid} cannot search {} on the way to {}, and no private mount namespace could be made to bridge it; put berth's state directory where uid {uid} can traverse (e.g. /var/lib/berth, mode 0755)",
                        at.display(),
                        target.display()
                    );
                }
                mount(
                    Some(Path::new("tmpfs")),
                    &at,
                    Some("tmpfs"),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    Some("mode=0755,size=64k"),
                )
                .with_context(|| format!("covering {}", at.display()))?;
                covered.push(at.clone());
            }
        }
    }
    Ok(())
}

/// The device and inode of an open file.
fn identity(fd: &OwnedFd) -> Result<(u64, u64)> {
    // SAFETY: fstat writes into a zeroed stat buffer that lives for the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: `fd` is open; `st` is a valid buffer.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error()).context("fstat");
    }
    Ok((st.st_dev, st.st_ino))
}

fn mount(
    source: Option<&Path>,
    target: &Path,
    fstype: Option<&str>,
    flags: libc::c_ulong,
    data: Option<&str>,
) -> std::io::Result<()> {
    let cstr = |b: &[u8]| {
        CString::new(b).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))
    };
    let source = source.map(|s| cstr(s.as_os_str().as_bytes())).transpose()?;
    let target = cstr(target.as_os_str().as_bytes())?;
    let fstype = fstype.map(|s| cstr(s.as_bytes())).transpose()?;
    let data = data.map(|s| cstr(s.as_bytes())).transpose()?;
    let ptr = |c: &Option<CString>| c.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
    // SAFETY: every pointer is null or a NUL-terminated string alive for the call.
    let rc = unsafe {
        libc::mount(
            ptr(&source),
            target.as_ptr(),
            ptr(&fstype),
            flags,
            ptr(&data).cast(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn switch_user(uid: u32, gid: u32) -> Result<()> {
    // SAFETY: setgroups with a zero count reads no memory; setresgid and
    // setresuid take integers. glibc applies them to every thread (there is
    // only this one).
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return Err(std::io::Error::last_os_error()).context("setgroups([])");
        }
        if libc::setresgid(gid, gid, gid) != 0 {
            return Err(std::io::Error::last_os_error()).context(format!("setresgid({gid})"));
        }
        if libc::setresuid(uid, uid, uid) != 0 {
            return Err(std::io::Error::last_os_error()).context(format!("setresuid({uid})"));
        }
    }
    let (mut r, mut e, mut s) = (0, 0, 0);
    // SAFETY: the three pointers are to live locals.
    if unsafe { libc::getresuid(&mut r, &mut e, &mut s) } != 0 || [r, e, s] != [uid; 3] {
        bail!("the switch to uid {uid} did not hold (now {r}/{e}/{s})");
    }
    Ok(())
}

/// libgit2 reads no system, global, XDG or program-data configuration (and
/// the process has no `HOME`: berth clears the environment).
fn no_user_git_config() -> Result<()> {
    for level in [
        git2::ConfigLevel::System,
        git2::ConfigLevel::Global,
        git2::ConfigLevel::XDG,
        git2::ConfigLevel::ProgramData,
    ] {
        // SAFETY: libgit2's global options are set here, before any other
        // libgit2 call and with no other thread running.
        unsafe { git2::opts::set_search_path(level, "") }
            .with_context(|| format!("emptying libgit2's {level:?} configuration search path"))?;
    }
    Ok(())
}

fn landlock(read: &[OwnedFd], write: &[OwnedFd]) -> Result<()> {
    let all = AccessFs::from_all(BEST_ABI);
    let reading: BitFlags<AccessFs> = AccessFs::from_read(BEST_ABI);
    let unavailable = |e: landlock::RulesetError| {
        anyhow::anyhow!(
            "Landlock could not be set up ({e}); berth will not do git work on an agent's repository unconfined — use a kernel with Landlock enabled (5.13+, `lsm=landlock`)"
        )
    };
    let mut ruleset = Ruleset::default()
        .handle_access(all)
        .map_err(unavailable)?
        .scope(Scope::from_all(BEST_ABI))
        .map_err(unavailable)?
        .create()
        .map_err(unavailable)?;
    for fd in write {
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, all))
            .map_err(unavailable)?;
    }
    for fd in read {
        ruleset = ruleset
            .add_rule(PathBeneath::new(fd, reading))
            .map_err(unavailable)?;
    }
    for path in SYSTEM_READ {
        let Ok(fd) = open_path(Path::new(path), libc::O_PATH | libc::O_CLOEXEC) else {
            continue;
        };
        // A file (ld.so.cache) gets only the rights a file can have.
        let rule = PathBeneath::new(fd, reading).set_compatibility(CompatLevel::BestEffort);
        ruleset = ruleset.add_rule(rule).map_err(unavailable)?;
    }
    if let Ok(null) = open_path(Path::new("/dev/null"), libc::O_PATH | libc::O_CLOEXEC) {
        let rule = PathBeneath::new(null, AccessFs::ReadFile | AccessFs::WriteFile);
        ruleset = ruleset.add_rule(rule).map_err(unavailable)?;
    }
    let status = ruleset.restrict_self().map_err(unavailable)?;
    if status.ruleset == RulesetStatus::NotEnforced {
        bail!(
            "Landlock is not available on this kernel; berth will not do git work on an agent's repository unconfined — use a kernel with Landlock enabled (5.13+, `lsm=landlock`)"
        );
    }
    if !status.no_new_privs {
        bail!("PR_SET_NO_NEW_PRIVS did not hold");
    }
    Ok(())
}
