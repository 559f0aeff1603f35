//! The shim binary on its own: a bad spec or command line is refused with
//! status 125 and a reason, before anything runs; a good one runs the command
//! at `/work` with its input after the spec. (Building this test also builds
//! `berth-exec-shim`, which the runner's tests find beside their binaries.)
//! And the command's Landlock ruleset and seccomp filter alone, each as if
//! the layers above it had let everything through.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

use berth_confine::{ExecSpec, Network};

const SHIM: &str = env!("CARGO_BIN_EXE_berth-exec-shim");

fn spec(worktree: &std::path::Path) -> ExecSpec {
    ExecSpec {
        parent_pid: std::process::id() as i32,
        worktree: worktree.to_path_buf(),
        work_read_only: false,
        cwd: "/work".into(),
        writable: vec![],
        readable: vec![],
        private_tmp: None,
        system_dirs: vec![],
        network: Network::None,
        uid: None,
        gid: None,
        rlimits: vec![],
        cgroups: vec![],
        egress: None,
    }
}

fn shim(args: &[&str], input: &[u8]) -> (i32, String, String) {
    let mut child = Command::new(SHIM)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A refused shim exits without reading: a broken pipe is expected.
    let _ = child.stdin.take().unwrap().write_all(input);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let good = berth_confine::spec::framed(&spec(dir.path())).unwrap();
    let cases: Vec<(Vec<&str>, Vec<u8>, &str)> = vec![
        (
            vec!["sh", "-c", "touch /work/ran"],
            good.clone(),
            "first argument must be --",
        ),
        (vec!["--"], good.clone(), "no program"),
        (
            vec!["--", "sh", "-c", "touch /work/ran"],
            b"garbage".to_vec(),
            "exec spec",
        ),
        (
            vec!["--", "sh", "-c", "touch /work/ran"],
            b"5\n{}".to_vec(),
            "exec spec",
        ),
    ];
    for (args, input, needle) in cases {
        let (code, _, stderr) = shim(&args, &input);
        assert_eq!(code, 125, "{args:?}: {stderr}");
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
    // A spec naming another parent: berth is gone, nothing runs.
    let mut orphan = spec(dir.path());
    orphan.parent_pid = 1;
    let (code, _, stderr) = shim(
        &["--", "sh", "-c", "touch /work/ran"],
        &berth_confine::spec::framed(&orphan).unwrap(),
    );
    assert_eq!(code, 125, "{stderr}");
    assert!(!dir.path().join("ran").exists());
}

#[test]
fn the_command_runs_at_work_with_its_input() {
    let dir = tempfile::tempdir().unwrap();
    let mut input = berth_confine::spec::framed(&spec(dir.path())).unwrap();
    input.extend_from_slice(b"from stdin");
    let (code, stdout, stderr) = shim(&["--", "sh", "-c", "pwd; cat; exit 7"], &input);
    assert_eq!(
        (code, stdout.as_str()),
        (7, "/work\nfrom stdin"),
        "{stderr}"
    );
}

/// An exec's cgroup is removed as soon as it empties, and not before: a
/// cgroup that still holds a process stays after a bounded wait (it is
/// left for `kill_berth`), and once killed it is gone. Needs root and a
/// cgroup2 hierarchy with `cgroup.kill`; says so and passes elsewhere.
#[test]
fn an_exec_cgroup_is_removed_once_empty_and_kept_while_busy() {
    use berth_confine::cgroup::{CgroupLimits, CgroupRoots, ExecCgroups};
    use std::time::Duration;
    let roots = CgroupRoots::default();
    let action = format!("test-{}", std::process::id());
    let cgroups = ExecCgroups::create(
        &roots,
        "confine-test",
        "remove",
        &action,
        CgroupLimits::default(),
    );
    let Some(dir) = cgroups.unified.clone() else {
        eprintln!("skipped: no exec cgroup here: {:?}", cgroups.missing);
        return;
    };
    let mut sleeper = Command::new("sleep").arg("30").spawn().unwrap();
    std::fs::write(dir.join("cgroup.procs"), sleeper.id().to_string()).unwrap();
    cgroups.remove(Duration::from_millis(200));
    assert!(dir.is_dir(), "a busy cgroup must stay: {}", dir.display());
    assert!(cgroups.kill().unwrap());
    cgroups.remove(Duration::from_secs(5));
    assert!(
        !dir.exists(),
        "an emptied cgroup must go: {}",
        dir.display()
    );
    assert!(
        sleeper.wait().unwrap().code().is_none(),
        "killed by cgroup.kill"
    );
    for parent in dir.ancestors().skip(1).take(2) {
        let _ = std::fs::remove_dir(parent);
    }
}

/// The command's Landlock ruleset alone (`landlock_rules::restrict`), on
/// a thread of its own (a ruleset binds the thread that asks and what it
/// starts): with no mount tree hiding anything, the command still reads
/// only its readable and writable paths and writes only the writable ones;
/// a listed path that does not exist is skipped, not an error. The same
/// with its paths opened per exec (the shim), held open by a resident, and
/// held but for one the exec opens itself (what it mounts anew).
#[test]
fn landlock_alone_keeps_a_command_to_its_paths() {
    use berth_confine::landlock_rules::{Enforcement, HeldPaths, Paths, restrict};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let at = move |rel: &str| root.join(rel);
    for sub in ["ro", "rw", "out"] {
        std::fs::create_dir(at(sub)).unwrap();
        std::fs::write(at(&format!("{sub}/f")), sub).unwrap();
    }
    let paths = Paths {
        write: vec![at("rw"), at("missing-w")],
        read: vec![at("ro"), at("missing-r")],
    };
    let held_all = HeldPaths::open(&paths, &[]);
    assert!(held_all.fds().count() >= 3, "ro, rw and / are held");
    assert!(
        held_all.fds().all(|fd| fd >= 10),
        "held descriptors stay clear of the 0-3 an exec's PID 1 moves to"
    );
    let ro = at("ro");
    let held_but_ro = HeldPaths::open(&paths, &[ro.as_path()]);
    let ways = [
        ("opened per exec", None),
        ("held", Some(Arc::new(held_all))),
        ("held but ro", Some(Arc::new(held_but_ro))),
    ];
    for (way, held) in ways {
        let (paths, at) = (paths.clone(), at.clone());
        let probe = move || {
            let enforced = restrict(&paths, held.as_deref()).unwrap();
            let read = |rel: &str| std::fs::read_to_string(at(rel)).is_ok();
            let write = |rel: &str| std::fs::write(at(rel), "x").is_ok();
            let wrote = [write("ro/new"), write("rw/new"), write("out/new")];
            std::fs::remove_file(at("rw/new")).ok();
            (enforced, [read("ro/f"), read("rw/f"), read("out/f")], wrote)
        };
        let (enforced, read, write) = std::thread::spawn(probe).join().unwrap();
        if enforced == Enforcement::None {
            eprintln!("skipped: no Landlock on this kernel");
            return;
        }
        assert_eq!(read, [true, true, false], "{way}: reads of ro, rw, out");
        assert_eq!(
            write,
            [false, true, false],
            "{way}: writes into ro, rw, out"
        );
    }
    // This thread was never restricted.
    assert!(std::fs::read_to_string(at("out/f")).is_ok());
}

/// The arguments that make a call match `when` and would make it fail
/// harmlessly were it let through: every other argument all ones (a bad
/// pointer, descriptor or flag set), a masked argument with every other bit
/// set too (`clone` with contradictory flags is `EINVAL`).
fn matching_args(when: berth_confine::seccomp_filter::Match) -> [u64; 6] {
    use berth_confine::seccomp_filter::Match;
    let mut args = [u64::MAX; 6];
    match when {
        Match::Always => {}
        Match::ArgEq { arg, value } => args[arg as usize] = value,
        Match::ArgMasked { arg, mask, value } => args[arg as usize] = value | !mask,
        Match::Socket { domain, ty } => {
            args[0] = domain;
            args[1] = ty | !0xf;
        }
    }
    args
}

fn raw_call(nr: i64, a: [u64; 6]) -> Result<i64, i32> {
    // SAFETY: the probes' arguments make each call fail before it acts
    // (bad pointers, descriptors and flags), or the filter refuses it.
    let rc = unsafe { libc::syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]) };
    if rc < 0 {
        Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    } else {
        Ok(rc)
    }
}

/// The seccomp filter alone, on a thread of its own (a filter and
/// `no_new_privs` bind the thread that sets them): every entry of the
/// table is refused with its answer, calls made through x86-64's x32
/// numbering are refused, and what the table leaves out still works.
#[test]
fn the_seccomp_filter_alone_refuses_each_entry_and_nothing_else() {
    use berth_confine::seccomp_filter::{DENIED, Refusal, install, program};
    let probe = |filtered: bool| {
        move || {
            if filtered {
                // SAFETY: this thread's own flag.
                assert_eq!(
                    unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) },
                    0
                );
                install(&program().unwrap()).unwrap();
            }
            let entries: Vec<_> = DENIED
                .iter()
                .map(|d| (d.name, d.refusal, raw_call(d.nr, matching_args(d.when))))
                .collect();
            let x32 = raw_call(0x4000_0000 | libc::SYS_getpid, [0; 6]);
            // SAFETY: plain calls; the descriptors are closed at once.
            let allowed = unsafe {
                let mut pair = [0; 2];
                let fds = [
                    libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0),
                    libc::socket(libc::AF_INET6, libc::SOCK_DGRAM, 0),
                    libc::socket(libc::AF_NETLINK, libc::SOCK_RAW, 0),
                    if libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, pair.as_mut_ptr()) == 0
                    {
                        libc::close(pair[1]);
                        pair[0]
                    } else {
                        -1
                    },
                ];
                for fd in fds.iter().filter(|fd| **fd >= 0) {
                    libc::close(*fd);
                }
                fds.map(|fd| fd >= 0)
            };
            (
                entries,
                x32,
                allowed,
                raw_call(libc::SYS_getpid, [0; 6]).is_ok(),
            )
        }
    };
    let (entries, x32, allowed, getpid) = std::thread::spawn(probe(true)).join().unwrap();
    for (name, refusal, result) in entries {
        let errno = match refusal {
            Refusal::Eperm => libc::EPERM,
            Refusal::Enosys => libc::ENOSYS,
        };
        assert_eq!(result, Err(errno), "{name} under the filter");
    }
    assert_eq!(
        x32,
        Err(libc::EPERM),
        "an x32-numbered getpid under the filter"
    );
    assert_eq!(
        allowed, [true; 4],
        "inet stream, inet6 datagram, netlink, socketpair"
    );
    assert!(getpid);
    // Unfiltered, the same probes fail otherwise (or succeed): the answers
    // above are the filter's. (As root: an unprivileged caller gets EPERM
    // from mount and pivot_root themselves.)
    // SAFETY: a plain id query.
    if unsafe { libc::geteuid() } == 0 {
        let (entries, x32, ..) = std::thread::spawn(probe(false)).join().unwrap();
        for (name, refusal, result) in entries {
            let errno = match refusal {
                Refusal::Eperm => libc::EPERM,
                Refusal::Enosys => libc::ENOSYS,
            };
            assert_ne!(result, Err(errno), "{name} unfiltered");
        }
        assert_ne!(x32, Err(libc::EPERM), "an x32-numbered getpid unfiltered");
    }
}
