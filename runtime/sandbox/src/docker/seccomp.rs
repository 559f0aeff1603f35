//! berth's own seccomp profile for its containers: an allow-list, written
//! for berth, of the system calls a coding agent's tools need.
//!
//! Why not Docker's default: Docker 20.10's default profile allows
//! `io_uring_setup`/`io_uring_enter`/`io_uring_register`, and io_uring opens
//! files and sockets without the system calls a profile can judge. Why not
//! "the default minus a list": a profile whose default action is *allow*
//! allows everything the list forgets (with one, `keyctl` went from refused
//! to allowed). So the default action here is `EPERM`, and every allowed
//! call is in [`FAMILIES`], grouped, with why it is there. The families
//! follow what Docker's default allows without capabilities, minus io_uring;
//! calls that need a capability the container does not have (`mount`,
//! `bpf`, `perf_event_open`, `unshare`, `setns`, …) are simply absent, as are
//! the kernel keyring (`keyctl`, `add_key`, `request_key`) and
//! `userfaultfd`, which exploits use to stretch race windows.
//!
//! `ptrace` stays allowed as Docker's default allows it: a process may trace
//! only its own uid's processes in its own container, with no capabilities,
//! and debuggers and `strace` need it.
//!
//! Names a kernel or architecture does not know are skipped by the runtime
//! (runc resolves each name and ignores unknown ones), so one table serves
//! x86_64 and aarch64; the profile lists no extra architectures, so only the
//! native one is allowed at all.

use serde_json::{Value, json};

/// One family of allowed system calls.
#[derive(Debug)]
pub struct Family {
    pub name: &'static str,
    /// Why a berth needs it, in one line.
    pub why: &'static str,
    pub syscalls: &'static [&'static str],
}

/// Every system call a berth may make without arguments checked.
pub const FAMILIES: &[Family] = &[
    Family {
        name: "files",
        why: "reading, writing and walking the worktree and the image",
        syscalls: &[
            "read",
            "write",
            "readv",
            "writev",
            "pread64",
            "pwrite64",
            "preadv",
            "pwritev",
            "preadv2",
            "pwritev2",
            "open",
            "openat",
            "openat2",
            "creat",
            "close",
            "close_range",
            "lseek",
            "stat",
            "fstat",
            "lstat",
            "newfstatat",
            "statx",
            "statfs",
            "fstatfs",
            "access",
            "faccessat",
            "faccessat2",
            "getdents",
            "getdents64",
            "readlink",
            "readlinkat",
            "truncate",
            "ftruncate",
            "fallocate",
            "fadvise64",
            "readahead",
            "fsync",
            "fdatasync",
            "sync",
            "syncfs",
            "sync_file_range",
            "flock",
            "fcntl",
            "dup",
            "dup2",
            "dup3",
            "ioctl",
            "sendfile",
            "splice",
            "tee",
            "vmsplice",
            "copy_file_range",
        ],
    },
    Family {
        name: "names",
        why: "creating, renaming and removing files and directories (git, builds)",
        syscalls: &[
            "mkdir",
            "mkdirat",
            "rmdir",
            "rename",
            "renameat",
            "renameat2",
            "link",
            "linkat",
            "unlink",
            "unlinkat",
            "symlink",
            "symlinkat",
            "mknod",
            "mknodat",
            "chdir",
            "fchdir",
            "getcwd",
            "umask",
        ],
    },
    Family {
        name: "attributes",
        why: "modes, owners (own files only, no capabilities), times and xattrs",
        syscalls: &[
            "chmod",
            "fchmod",
            "fchmodat",
            "chown",
            "fchown",
            "fchownat",
            "lchown",
            "utime",
            "utimes",
            "utimensat",
            "futimesat",
            "getxattr",
            "lgetxattr",
            "fgetxattr",
            "setxattr",
            "lsetxattr",
            "fsetxattr",
            "listxattr",
            "llistxattr",
            "flistxattr",
            "removexattr",
            "lremovexattr",
            "fremovexattr",
        ],
    },
    Family {
        name: "memory",
        why: "allocation and mapping; the cgroup bounds the total",
        syscalls: &[
            "brk",
            "mmap",
            "munmap",
            "mremap",
            "mprotect",
            "madvise",
            "mincore",
            "msync",
            "mlock",
            "mlock2",
            "munlock",
            "mlockall",
            "munlockall",
            "membarrier",
            "memfd_create",
            "pkey_alloc",
            "pkey_free",
            "pkey_mprotect",
        ],
    },
    Family {
        name: "processes",
        why: "running programs and waiting for them (clone is judged by its flags, below)",
        syscalls: &[
            "execve",
            "execveat",
            "fork",
            "vfork",
            "exit",
            "exit_group",
            "wait4",
            "waitid",
            "getpid",
            "getppid",
            "gettid",
            "getpgid",
            "setpgid",
            "getpgrp",
            "getsid",
            "setsid",
            "set_tid_address",
            "prctl",
            "arch_prctl",
            "getpriority",
            "setpriority",
            "ioprio_get",
            "ioprio_set",
            "getrlimit",
            "setrlimit",
            "prlimit64",
            "getrusage",
            "times",
            "sysinfo",
            "uname",
            "getcpu",
            "pidfd_open",
            "pidfd_send_signal",
            "rseq",
            "set_robust_list",
            "get_robust_list",
            "restart_syscall",
            "seccomp",
            "landlock_create_ruleset",
            "landlock_add_rule",
            "landlock_restrict_self",
        ],
    },
    Family {
        name: "identity",
        why: "reading and dropping ids; without capabilities no call can gain one",
        syscalls: &[
            "getuid",
            "geteuid",
            "getgid",
            "getegid",
            "getresuid",
            "getresgid",
            "getgroups",
            "setuid",
            "setgid",
            "setreuid",
            "setregid",
            "setresuid",
            "setresgid",
            "setfsuid",
            "setfsgid",
            "setgroups",
            "capget",
            "capset",
        ],
    },
    Family {
        name: "threads and scheduling",
        why: "threads, futexes and CPU affinity (runtimes, parallel builds)",
        syscalls: &[
            "futex",
            "futex_waitv",
            "sched_yield",
            "sched_getaffinity",
            "sched_setaffinity",
            "sched_getparam",
            "sched_setparam",
            "sched_getscheduler",
            "sched_setscheduler",
            "sched_get_priority_max",
            "sched_get_priority_min",
            "sched_rr_get_interval",
            "sched_getattr",
            "sched_setattr",
        ],
    },
    Family {
        name: "signals",
        why: "signal handling, and signalling the berth's own processes",
        syscalls: &[
            "rt_sigaction",
            "rt_sigprocmask",
            "rt_sigreturn",
            "rt_sigpending",
            "rt_sigsuspend",
            "rt_sigtimedwait",
            "rt_sigqueueinfo",
            "rt_tgsigqueueinfo",
            "sigaltstack",
            "kill",
            "tkill",
            "tgkill",
            "signalfd",
            "signalfd4",
            "pause",
        ],
    },
    Family {
        name: "time",
        why: "clocks, sleeps and timers",
        syscalls: &[
            "clock_gettime",
            "clock_getres",
            "clock_nanosleep",
            "gettimeofday",
            "time",
            "nanosleep",
            "alarm",
            "getitimer",
            "setitimer",
            "timer_create",
            "timer_delete",
            "timer_gettime",
            "timer_settime",
            "timer_getoverrun",
            "timerfd_create",
            "timerfd_gettime",
            "timerfd_settime",
        ],
    },
    Family {
        name: "waiting on descriptors",
        why: "event loops (poll, epoll, eventfd, inotify)",
        syscalls: &[
            "poll",
            "ppoll",
            "select",
            "pselect6",
            "epoll_create",
            "epoll_create1",
            "epoll_ctl",
            "epoll_wait",
            "epoll_pwait",
            "epoll_pwait2",
            "eventfd",
            "eventfd2",
            "inotify_init",
            "inotify_init1",
            "inotify_add_watch",
            "inotify_rm_watch",
            "pipe",
            "pipe2",
        ],
    },
    Family {
        name: "sockets",
        why: "local IPC and the network the berth is given (none by default); no raw sockets without CAP_NET_RAW",
        syscalls: &[
            "socket",
            "socketpair",
            "bind",
            "listen",
            "accept",
            "accept4",
            "connect",
            "getsockname",
            "getpeername",
            "getsockopt",
            "setsockopt",
            "sendto",
            "recvfrom",
            "sendmsg",
            "recvmsg",
            "sendmmsg",
            "recvmmsg",
            "shutdown",
        ],
    },
    Family {
        name: "System V and POSIX IPC",
        why: "shared memory and queues of test databases; the container has its own IPC namespace",
        syscalls: &[
            "shmget",
            "shmat",
            "shmdt",
            "shmctl",
            "semget",
            "semop",
            "semtimedop",
            "semctl",
            "msgget",
            "msgsnd",
            "msgrcv",
            "msgctl",
            "mq_open",
            "mq_unlink",
            "mq_timedsend",
            "mq_timedreceive",
            "mq_notify",
            "mq_getsetattr",
        ],
    },
    Family {
        name: "asynchronous I/O",
        why: "Linux AIO of databases and build tools (io_uring is not here: see the module doc)",
        syscalls: &[
            "io_setup",
            "io_destroy",
            "io_submit",
            "io_cancel",
            "io_getevents",
            "io_pgetevents",
        ],
    },
    Family {
        name: "randomness",
        why: "getrandom for every TLS library and hash seed",
        syscalls: &["getrandom"],
    },
    Family {
        name: "debugging",
        why: "ptrace and process_vm_*: same uid, same container, no capabilities (Docker's default allows them)",
        syscalls: &["ptrace", "process_vm_readv", "process_vm_writev"],
    },
];

/// System calls a berth must never make, with why: none may appear in
/// [`FAMILIES`] (a table test checks), so each fails with EPERM (the
/// container tests make the ones the issue names). `clone` and `personality`
/// are allowed only with the arguments [`profile`] checks; `clone3` fails
/// with ENOSYS instead, so that libc falls back to `clone`.
pub const REFUSED: &[(&str, &str)] = &[
    (
        "io_uring_setup",
        "io_uring opens and connects without the calls a profile judges",
    ),
    ("io_uring_enter", "io_uring"),
    ("io_uring_register", "io_uring"),
    (
        "keyctl",
        "the kernel keyring is not namespaced; no tool of an agent needs it",
    ),
    ("add_key", "the kernel keyring"),
    ("request_key", "the kernel keyring"),
    (
        "userfaultfd",
        "stretches kernel race windows for exploits; no build needs it",
    ),
    ("bpf", "loads programs into the kernel"),
    ("perf_event_open", "kernel profiling reveals the host"),
    (
        "unshare",
        "new namespaces (a user namespace gives capabilities)",
    ),
    ("setns", "entering other namespaces"),
    ("mount", "the filesystem layout is berth's"),
    ("umount2", "the filesystem layout is berth's"),
    ("pivot_root", "the filesystem layout is berth's"),
    ("chroot", "the filesystem layout is berth's"),
    (
        "open_by_handle_at",
        "the shocker escape: opens host files by handle",
    ),
    ("name_to_handle_at", "pairs with open_by_handle_at"),
    ("kexec_load", "the host's kernel"),
    ("init_module", "the host's kernel"),
    ("finit_module", "the host's kernel"),
    ("delete_module", "the host's kernel"),
    ("reboot", "the host"),
    ("swapon", "the host"),
    ("swapoff", "the host"),
    ("acct", "the host"),
    ("settimeofday", "the host's clock"),
    ("clock_settime", "the host's clock"),
    ("clock_adjtime", "the host's clock"),
    ("adjtimex", "the host's clock"),
    ("sethostname", "the UTS namespace is berth's"),
    ("setdomainname", "the UTS namespace is berth's"),
    ("fanotify_init", "watches whole filesystems"),
    ("lookup_dcookie", "kernel internals"),
    ("quotactl", "the host's quotas"),
    ("syslog", "the host's kernel log"),
    ("vhangup", "terminals"),
    ("iopl", "raw I/O ports"),
    ("ioperm", "raw I/O ports"),
    ("move_pages", "NUMA memory of other processes"),
    ("migrate_pages", "NUMA memory of other processes"),
    ("mbind", "NUMA policy"),
    ("set_mempolicy", "NUMA policy"),
    ("get_mempolicy", "NUMA policy"),
];

/// `CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC |
/// CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET`: `clone` is allowed only with
/// none of these (threads and `fork` never set them).
pub const CLONE_NAMESPACE_FLAGS: u64 = 0x7E02_0000;

/// `personality` values allowed: `PER_LINUX`, `UNAME26`, `PER_LINUX32`,
/// `UNAME26 | PER_LINUX32` and the query `0xffffffff` (as Docker's default).
pub const PERSONALITIES: &[u64] = &[0x0, 0x8, 0x2_0000, 0x2_0008, 0xffff_ffff];

const ENOSYS: u32 = 38;
const EPERM: u32 = 1;

/// The profile as Docker takes it inline (`SecurityOpt: seccomp=<json>`).
pub fn profile() -> Value {
    let mut syscalls: Vec<Value> = FAMILIES
        .iter()
        .map(|f| {
            json!({
                "names": f.syscalls,
                "action": "SCMP_ACT_ALLOW",
                "comment": format!("{}: {}", f.name, f.why),
            })
        })
        .collect();
    syscalls.push(json!({
        "names": ["clone"],
        "action": "SCMP_ACT_ALLOW",
        "args": [{
            "index": 0,
            "value": CLONE_NAMESPACE_FLAGS,
            "valueTwo": 0,
            "op": "SCMP_CMP_MASKED_EQ",
        }],
        "comment": "processes and threads, never with a namespace flag",
    }));
    for value in PERSONALITIES {
        syscalls.push(json!({
            "names": ["personality"],
            "action": "SCMP_ACT_ALLOW",
            "args": [{ "index": 0, "value": value, "valueTwo": 0, "op": "SCMP_CMP_EQ" }],
        }));
    }
    syscalls.push(json!({
        "names": ["clone3"],
        "action": "SCMP_ACT_ERRNO",
        "errnoRet": ENOSYS,
        "comment": "its flags sit in memory a filter cannot read: ENOSYS makes libc use clone",
    }));
    json!({
        "defaultAction": "SCMP_ACT_ERRNO",
        "defaultErrnoRet": EPERM,
        "syscalls": syscalls,
    })
}

/// The `SecurityOpt` entry carrying [`profile`].
pub fn security_opt() -> String {
    format!("seccomp={}", profile())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::collections::BTreeSet;

    use super::*;

    fn allowed() -> BTreeSet<&'static str> {
        FAMILIES
            .iter()
            .flat_map(|f| f.syscalls.iter().copied())
            .collect()
    }

    #[test]
    fn no_call_is_both_allowed_and_refused() {
        let allowed = allowed();
        for (name, why) in REFUSED {
            assert!(
                !allowed.contains(name),
                "{name} is refused ({why}) but allowed"
            );
        }
        // clone and personality are only allowed with their arguments checked.
        assert!(!allowed.contains("clone") && !allowed.contains("personality"));
    }

    #[test]
    fn every_call_is_listed_once_with_a_reason() {
        let mut seen = BTreeSet::new();
        for f in FAMILIES {
            assert!(!f.why.trim().is_empty(), "{} has no reason", f.name);
            assert!(!f.syscalls.is_empty(), "{} is empty", f.name);
            for s in f.syscalls {
                assert!(seen.insert(*s), "{s} is listed twice");
                assert!(
                    s.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                    "{s:?} is not a system call name"
                );
            }
        }
        let mut refused = BTreeSet::new();
        for (name, why) in REFUSED {
            assert!(refused.insert(*name), "{name} refused twice");
            assert!(!why.is_empty());
        }
    }

    #[test]
    fn the_profile_denies_by_default_and_allows_only_the_table() {
        let p = profile();
        assert_eq!(p["defaultAction"], "SCMP_ACT_ERRNO");
        assert_eq!(p["defaultErrnoRet"], 1);
        let mut unconditional = BTreeSet::new();
        for rule in p["syscalls"].as_array().unwrap() {
            let names: Vec<&str> = rule["names"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            match rule["action"].as_str().unwrap() {
                "SCMP_ACT_ALLOW" if rule.get("args").is_none() => unconditional.extend(names),
                "SCMP_ACT_ALLOW" => {
                    assert!(names == ["clone"] || names == ["personality"], "{names:?}");
                }
                "SCMP_ACT_ERRNO" => assert_eq!(names, ["clone3"]),
                other => panic!("unexpected action {other}"),
            }
        }
        assert_eq!(unconditional, allowed());
        // The table's cases: what an agent's tools need, and what it must not get.
        let cases = [
            ("read", true),
            ("execve", true),
            ("ptrace", true),
            ("socket", true),
            ("io_uring_setup", false),
            ("io_uring_enter", false),
            ("keyctl", false),
            ("userfaultfd", false),
            ("bpf", false),
            ("perf_event_open", false),
            ("unshare", false),
            ("mount", false),
        ];
        for (name, want) in cases {
            assert_eq!(unconditional.contains(name), want, "{name}");
        }
        // The clone rule refuses every namespace flag, CLONE_NEWUSER included.
        let clone_newuser = 0x1000_0000u64;
        assert_ne!(CLONE_NAMESPACE_FLAGS & clone_newuser, 0);
        assert!(security_opt().starts_with("seccomp={"));
    }
}
