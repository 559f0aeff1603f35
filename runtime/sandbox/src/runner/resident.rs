//! The runner's side of a berth's resident (`berth_confine::resident`): find
//! it by its socket, start it when there is none, and hand it one exec.
//!
//! - **Which resident.** One per berth and per confinement: the socket is
//!   `exec-<fingerprint>.sock` in the berth's private directory, the
//!   fingerprint a hash of what the execs share (the tree, the uid, the
//!   network, the limits), of the bound directories' identities and of the
//!   shim's file, so a changed setting, a directory made again or an
//!   upgraded berth starts a new resident and the old one leaves when idle.
//! - **Starting.** Under an exclusive lock on `exec-<fingerprint>.lock`, so
//!   two berth processes never start two; the resident joins its own cgroups
//!   (`berth/<project>/<agent>/resident-<fingerprint>`, holding the berth's
//!   limits), and says `ready` once it listens.
//! - **Paths.** The socket is reached as `/proc/self/fd/<dir>/<name>`
//!   through a descriptor of the directory: a state directory's path may be
//!   longer than a socket address holds (108 bytes).
//!
//! Anything that keeps a resident from starting is logged and the exec runs
//! through the shim, as without one.

use std::io::{Read as _, Write as _};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use berth_confine::ExecSpec;
use berth_confine::cgroup::{CgroupLimits, CgroupRoots, ExecCgroups, berth_dir};
use berth_confine::resident::wire::{ExecOrder, Reply, send_order, signal_line};
use berth_confine::resident::{READY, RESIDENT_ARG, ResidentSpec};
use sha2::Digest as _;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _};

/// How long a resident stays without an exec.
pub(super) const IDLE: Duration = Duration::from_secs(300);

/// The name of a resident's cgroups begins so (`resident-<fingerprint>`).
pub(super) const CGROUP_PREFIX: &str = "resident-";

/// How long berth waits for a new resident's `ready`.
const START_WAIT: Duration = Duration::from_secs(10);

/// Where a berth's resident lives and what it holds.
pub(super) struct Place<'a> {
    /// berth's private directory for the berth's residents.
    pub dir: &'a Path,
    pub shim: &'a Path,
    /// The shared part of every exec's spec (`work_read_only` false).
    pub berth: ExecSpec,
    pub roots: &'a CgroupRoots,
    /// `(project, agent)` of the berth's cgroups.
    pub names: (&'a str, &'a str),
    pub limits: CgroupLimits,
    /// The runner's hash of `berth` and `limits`, kept between its execs.
    pub shared: &'a SharedHash,
}

/// The hash of what a berth's execs share (its spec and limits), kept by
/// the runner for the spec and limits it was made from: serialising and
/// hashing the spec anew was most of the cost of finding the resident.
#[derive(Default)]
pub(super) struct SharedHash(std::sync::Mutex<Option<(ExecSpec, CgroupLimits, sha2::Sha256)>>);

impl std::fmt::Debug for SharedHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SharedHash")
    }
}

impl SharedHash {
    /// The hasher with `berth` and `limits` in it.
    fn of(&self, berth: &ExecSpec, limits: CgroupLimits) -> Result<sha2::Sha256, String> {
        if let Ok(kept) = self.0.lock()
            && let Some((spec, l, hash)) = kept.as_ref()
            && *l == limits
            && spec == berth
        {
            return Ok(hash.clone());
        }
        let mut hash = sha2::Sha256::new();
        let json = serde_json::to_vec(berth).map_err(|e| e.to_string())?;
        hash.update(&json);
        hash.update(format!("{limits:?}"));
        if let Ok(mut kept) = self.0.lock() {
            *kept = Some((berth.clone(), limits, hash.clone()));
        }
        Ok(hash)
    }
}

/// The fingerprint of what a resident holds.
fn fingerprint(place: &Place<'_>) -> Result<String, String> {
    let mut hash = place.shared.of(&place.berth, place.limits)?;
    // The directories as they are now: one made again (a worktree
    // recycled, a disk mounted anew) is not the one the resident bound.
    let berth = &place.berth;
    let dirs = std::iter::once(&berth.worktree)
        .chain(berth.private_tmp.iter())
        .chain(berth.writable.iter())
        .chain(berth.readable.iter());
    for dir in dirs {
        if let Ok(meta) = std::fs::metadata(dir) {
            hash.update(format!("{}:{}:{};", dir.display(), meta.dev(), meta.ino()));
        }
    }
    let shim =
        std::fs::metadata(place.shim).map_err(|e| format!("{}: {e}", place.shim.display()))?;
    hash.update(format!(
        "{}:{}:{}:{}:{}",
        place.shim.display(),
        shim.dev(),
        shim.ino(),
        shim.size(),
        shim.mtime_nsec() + shim.mtime() * 1_000_000_000
    ));
    Ok(hash.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// Opens `dir` (made 0700, with its parents, when missing) as a path
/// descriptor.
fn open_dir(dir: &Path) -> Result<std::fs::File, String> {
    use std::os::unix::fs::DirBuilderExt as _;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .recursive(true)
        .create(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
        .open(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))
}

/// Connects to the berth's resident, starting it first when none listens.
/// Blocking: run it on the blocking pool.
pub(super) fn connect(place: Place<'_>) -> Result<UnixStream, String> {
    let fp = fingerprint(&place)?;
    let dir = open_dir(place.dir)?;
    let name = format!("exec-{fp}.sock");
    let short = PathBuf::from(format!("/proc/self/fd/{}/{name}", dir.as_raw_fd()));
    if let Ok(stream) = UnixStream::connect(&short) {
        return Ok(stream);
    }
    let lock_path = place.dir.join(format!("exec-{fp}.lock"));
    let lock = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&lock_path)
        .map_err(|e| format!("{}: {e}", lock_path.display()))?;
    // SAFETY: flock on a descriptor we own; released when it closes.
    if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(format!(
            "lock {}: {}",
            lock_path.display(),
            std::io::Error::last_os_error()
        ));
    }
    if let Ok(stream) = UnixStream::connect(&short) {
        return Ok(stream);
    }
    start(&place, &fp, &name)?;
    UnixStream::connect(&short).map_err(|e| format!("connect to the new resident: {e}"))
}

/// Removes every resident socket in `dir`: each resident notices within a
/// second and leaves, killing its execs (`berth down` as a user, where no
/// cgroup reaches them).
pub fn dismiss_all(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("exec-") && name.ends_with(".sock") {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Starts the resident and waits for its `ready`.
fn start(place: &Place<'_>, fp: &str, name: &str) -> Result<(), String> {
    let (project, agent) = place.names;
    let cgroups = ExecCgroups::create(
        place.roots,
        project,
        agent,
        &format!("{CGROUP_PREFIX}{fp}"),
        place.limits,
    );
    for missing in &cgroups.missing {
        tracing::debug!(%missing, "resident cgroup");
    }
    let mut berth = place.berth.clone();
    berth.cgroups = cgroups.paths();
    let spec = ResidentSpec {
        berth,
        socket: place.dir.join(name),
        exec_cgroups: cgroups
            .unified
            .as_ref()
            .map(|_| berth_dir(&place.roots.unified, project, agent)),
        idle_secs: IDLE.as_secs(),
    };
    let framed = berth_confine::spec::framed(&spec).map_err(|e| e.to_string())?;
    let mut child = std::process::Command::new(place.shim)
        .arg(RESIDENT_ARG)
        .current_dir("/")
        .env_clear()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("start {}: {e}", place.shim.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(&framed)
            .map_err(|e| format!("send the resident its spec: {e}"))?;
    }
    let stdout = child.stdout.take();
    // The first process returns as soon as it has forked the resident.
    let _ = child.wait();
    let Some(stdout) = stdout else {
        return Err("the resident has no stdout".into());
    };
    let line = read_line_within(stdout, START_WAIT)?;
    if line == READY {
        Ok(())
    } else if line.is_empty() {
        Err("the resident exited without a word".into())
    } else {
        Err(line)
    }
}

/// The first line of `pipe` (without its newline), waiting at most `wait`.
fn read_line_within(pipe: std::process::ChildStdout, wait: Duration) -> Result<String, String> {
    let deadline = std::time::Instant::now() + wait;
    let mut pipe = pipe;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 4096 {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let mut fd = libc::pollfd {
            fd: pipe.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: polling one descriptor we own.
        if ms == 0 || unsafe { libc::poll(&mut fd, 1, ms) } == 0 {
            return Err(format!("no word from the resident within {wait:?}"));
        }
        match pipe.read(&mut byte) {
            Ok(0) => break,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) => line.push(byte[0]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read the resident's word: {e}")),
        }
    }
    Ok(String::from_utf8_lossy(&line).into_owned())
}

/// The exec's descriptors: berth's ends of its three pipes, and the
/// command's ends to send.
pub(super) struct Pipes {
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    pub stderr: OwnedFd,
    pub theirs: [OwnedFd; 3],
}

pub(super) fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: a pipe into a local array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both ends were just made and are owned by no one else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Pipes {
    pub fn new() -> std::io::Result<Pipes> {
        let (in_r, in_w) = pipe()?;
        let (out_r, out_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        Ok(Pipes {
            stdin: in_w,
            stdout: out_r,
            stderr: err_r,
            theirs: [in_r, out_w, err_w],
        })
    }
}

/// Why the resident is not running an exec.
#[derive(Debug)]
pub(super) enum NotStarted {
    /// It certainly did not start: no resident, the order not sent, or
    /// refused. The shim may run the command instead.
    Never(String),
    /// The order went out and no answer came: the command may have begun
    /// (the resident kills it once berth's end closes) and must not run a
    /// second time.
    Unknown(String),
}

/// One exec the resident runs, from berth's side.
pub(super) struct ResidentExec {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::net::unix::OwnedReadHalf>>,
    writer: tokio::net::unix::OwnedWriteHalf,
    /// The exec's PID 1 (its process group), as the host numbers it.
    pub pid: i32,
    /// The status PID 1 writes to berth directly, and what of its four
    /// bytes has arrived (kept across a cancelled [`Self::wait`]); `None`
    /// once it ended without them (PID 1 was killed): the resident's line
    /// then says how PID 1 ended.
    status: Option<(tokio::net::unix::pipe::Receiver, [u8; 4], usize)>,
}

impl ResidentExec {
    /// Sends the order on `stream` and waits for `started`. Blocking on the
    /// send (a few hundred bytes into an empty socket).
    pub async fn start(
        mut stream: UnixStream,
        order: ExecOrder,
        fds: Vec<OwnedFd>,
        status: OwnedFd,
    ) -> Result<ResidentExec, NotStarted> {
        let raw: Vec<_> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
        send_order(&mut stream, &order, &raw).map_err(|e| NotStarted::Never(e.to_string()))?;
        // berth's copy of the status pipe's write end closes here: the read
        // end ends when PID 1's does.
        drop(fds);
        // From here the resident may have started the command: no error
        // below lets the shim run it again.
        let unknown = |e: std::io::Error| NotStarted::Unknown(e.to_string());
        let status = tokio::net::unix::pipe::Receiver::from_owned_fd(status).map_err(unknown)?;
        stream.set_nonblocking(true).map_err(unknown)?;
        let stream = tokio::net::UnixStream::from_std(stream).map_err(unknown)?;
        let (read, writer) = stream.into_split();
        let mut lines = tokio::io::BufReader::new(read).lines();
        match lines.next_line().await {
            Ok(Some(line)) => match Reply::parse(&line) {
                Some(Reply::Started(pid)) => Ok(ResidentExec {
                    lines,
                    writer,
                    pid,
                    status: Some((status, [0; 4], 0)),
                }),
                Some(Reply::Refused(why)) => Err(NotStarted::Never(why)),
                _ => Err(NotStarted::Unknown(format!("the resident said {line:?}"))),
            },
            Ok(None) => Err(NotStarted::Unknown(
                "the resident closed the connection".into(),
            )),
            Err(e) => Err(NotStarted::Unknown(format!(
                "read the resident's answer: {e}"
            ))),
        }
    }

    /// The command's wait status: from PID 1's own pipe, else from the
    /// resident's line. A resident gone without one reports the exec killed.
    /// Cancel-safe: what arrived stays for the next call.
    pub async fn wait(&mut self) -> std::process::ExitStatus {
        use std::os::unix::process::ExitStatusExt as _;
        use tokio::io::AsyncReadExt as _;
        while let Some((pipe, bytes, got)) = &mut self.status {
            match pipe.read(&mut bytes[*got..]).await {
                Ok(n) if n > 0 => {
                    *got += n;
                    if *got == bytes.len() {
                        let status = i32::from_ne_bytes(*bytes);
                        self.status = None;
                        return std::process::ExitStatus::from_raw(status);
                    }
                }
                // Ended short: PID 1 died before it wrote.
                _ => self.status = None,
            }
        }
        loop {
            match self.lines.next_line().await {
                Ok(Some(line)) => {
                    if let Some(Reply::Status(status)) = Reply::parse(&line) {
                        return std::process::ExitStatus::from_raw(status);
                    }
                }
                Ok(None) | Err(_) => return std::process::ExitStatus::from_raw(libc::SIGKILL),
            }
        }
    }

    /// Passes `signal` to the exec's PID 1, which forwards it to every
    /// process of the exec.
    pub async fn signal(&mut self, signal: i32) {
        let _ = self.writer.write_all(signal_line(signal).as_bytes()).await;
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn spec(uid: u32) -> ExecSpec {
        ExecSpec {
            parent_pid: 0,
            worktree: "/srv/wt".into(),
            work_read_only: false,
            cwd: "/work".into(),
            writable: vec!["/srv/home".into()],
            readable: vec![],
            private_tmp: None,
            system_dirs: vec![],
            network: berth_confine::Network::None,
            uid: Some(uid),
            gid: Some(uid),
            rlimits: vec![],
            cgroups: vec![],
            egress: None,
        }
    }

    fn digest(hash: sha2::Sha256) -> Vec<u8> {
        hash.finalize().to_vec()
    }

    /// The kept hash is the one a fresh computation gives, and a changed
    /// spec or limit is hashed anew (it names another resident).
    #[test]
    fn the_kept_hash_follows_the_spec_and_limits() {
        let kept = SharedHash::default();
        let limits = CgroupLimits::default();
        let first = digest(kept.of(&spec(1000), limits).unwrap());
        assert_eq!(first, digest(kept.of(&spec(1000), limits).unwrap()));
        assert_eq!(
            first,
            digest(SharedHash::default().of(&spec(1000), limits).unwrap())
        );
        let other_uid = digest(kept.of(&spec(1001), limits).unwrap());
        assert_ne!(first, other_uid);
        let limited = CgroupLimits {
            processes: Some(64),
            ..limits
        };
        let other_limits = digest(kept.of(&spec(1001), limited).unwrap());
        assert_ne!(other_uid, other_limits);
        assert_eq!(first, digest(kept.of(&spec(1000), limits).unwrap()));
    }
}
