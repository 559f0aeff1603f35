//! The system calls a confined command is refused, as one table.
//!
//! The filter is a deny-list on top of the namespaces and Landlock: it closes
//! what those two do not govern (a path-named unix socket's `connect`,
//! io_uring's own socket operations) and the usual escapes from a namespace
//! or into the kernel's keyrings. Every entry returns EPERM, except `clone3`,
//! whose flags live in a structure a filter cannot read: it returns ENOSYS,
//! so the C library falls back to `clone`, whose namespace flags are checked.
//! `AF_INET`/`AF_INET6` stream and datagram sockets stay allowed (the network
//! proxy of a later issue is reached through loopback).

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

use crate::ConfineError;

/// When a table entry matches a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Every call.
    Always,
    /// Argument `arg` (32 bits) equals `value`.
    ArgEq { arg: u8, value: u64 },
    /// Argument `arg` with `mask` applied equals `value`.
    ArgMasked { arg: u8, mask: u64, value: u64 },
    /// A `socket` call of this domain (argument 0) whose type (argument 1,
    /// flags masked off) is this one.
    Socket { domain: u64, ty: u64 },
}

/// What a matching call gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    Eperm,
    /// "Not implemented": the caller falls back to an older call.
    Enosys,
}

/// One refused call: its name (for tests and messages), number, condition,
/// answer and why.
#[derive(Debug, Clone, Copy)]
pub struct Denied {
    pub name: &'static str,
    pub nr: libc::c_long,
    pub when: Match,
    pub refusal: Refusal,
    pub why: &'static str,
}

const fn always(name: &'static str, nr: libc::c_long, why: &'static str) -> Denied {
    Denied {
        name,
        nr,
        when: Match::Always,
        refusal: Refusal::Eperm,
        why,
    }
}

const fn clone_flag(flag: libc::c_int, why: &'static str) -> Denied {
    Denied {
        name: "clone",
        nr: libc::SYS_clone,
        when: Match::ArgMasked {
            arg: 0,
            mask: flag as u64,
            value: flag as u64,
        },
        refusal: Refusal::Eperm,
        why,
    }
}

/// The socket type's low bits (the rest are `SOCK_NONBLOCK`/`SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;
/// `SOCK_PACKET` (libc deprecates the name; the number is what a filter sees).
const SOCK_PACKET: u64 = 10;

/// What a confined command may not call.
pub const DENIED: &[Denied] = &[
    always(
        "io_uring_setup",
        libc::SYS_io_uring_setup,
        "io_uring opens and connects sockets and files without the system calls this table and Landlock see",
    ),
    always(
        "io_uring_enter",
        libc::SYS_io_uring_enter,
        "io_uring: as io_uring_setup",
    ),
    always(
        "io_uring_register",
        libc::SYS_io_uring_register,
        "io_uring: as io_uring_setup",
    ),
    Denied {
        name: "socket",
        nr: libc::SYS_socket,
        when: Match::ArgEq {
            arg: 0,
            value: libc::AF_UNIX as u64,
        },
        refusal: Refusal::Eperm,
        why: "Landlock does not govern connect() to a path-named unix socket (berth.sock, docker.sock); socketpair stays allowed",
    },
    Denied {
        name: "socket",
        nr: libc::SYS_socket,
        when: Match::ArgEq {
            arg: 0,
            value: libc::AF_PACKET as u64,
        },
        refusal: Refusal::Eperm,
        why: "packet sockets see and forge link-layer traffic",
    },
    Denied {
        name: "socket",
        nr: libc::SYS_socket,
        when: Match::Socket {
            domain: libc::AF_INET as u64,
            ty: libc::SOCK_RAW as u64,
        },
        refusal: Refusal::Eperm,
        why: "raw IPv4 sockets forge packets (netlink, also SOCK_RAW, stays: it sees only the exec's own namespace)",
    },
    Denied {
        name: "socket",
        nr: libc::SYS_socket,
        when: Match::Socket {
            domain: libc::AF_INET6 as u64,
            ty: libc::SOCK_RAW as u64,
        },
        refusal: Refusal::Eperm,
        why: "raw IPv6 sockets forge packets",
    },
    Denied {
        name: "socket",
        nr: libc::SYS_socket,
        when: Match::Socket {
            domain: libc::AF_INET as u64,
            ty: SOCK_PACKET,
        },
        refusal: Refusal::Eperm,
        why: "the obsolete packet socket type, as AF_PACKET",
    },
    always(
        "unshare",
        libc::SYS_unshare,
        "new namespaces would undo the mount tree and the network cut",
    ),
    always(
        "setns",
        libc::SYS_setns,
        "joining another namespace leaves the confinement",
    ),
    clone_flag(
        libc::CLONE_NEWUSER,
        "clone into a new user namespace: as unshare",
    ),
    clone_flag(
        libc::CLONE_NEWNS,
        "clone into a new mount namespace: as unshare",
    ),
    clone_flag(
        libc::CLONE_NEWNET,
        "clone into a new network namespace: as unshare",
    ),
    clone_flag(
        libc::CLONE_NEWPID,
        "clone into a new PID namespace: as unshare",
    ),
    clone_flag(
        libc::CLONE_NEWCGROUP,
        "clone into a new cgroup namespace: as unshare",
    ),
    Denied {
        name: "clone3",
        nr: libc::SYS_clone3,
        when: Match::Always,
        refusal: Refusal::Enosys,
        why: "its flags are in memory a filter cannot read; ENOSYS makes the C library use clone, which is checked",
    },
    always(
        "mount",
        libc::SYS_mount,
        "remounting would expose or unlock what the mount tree hides",
    ),
    always(
        "umount2",
        libc::SYS_umount2,
        "unmounting would uncover what a mount hides",
    ),
    always(
        "pivot_root",
        libc::SYS_pivot_root,
        "changes the root the mount tree set",
    ),
    always(
        "open_tree",
        libc::SYS_open_tree,
        "the new mount API: as mount",
    ),
    always(
        "move_mount",
        libc::SYS_move_mount,
        "the new mount API: as mount",
    ),
    always("fsopen", libc::SYS_fsopen, "the new mount API: as mount"),
    always("fsmount", libc::SYS_fsmount, "the new mount API: as mount"),
    always("fspick", libc::SYS_fspick, "the new mount API: as mount"),
    always(
        "mount_setattr",
        libc::SYS_mount_setattr,
        "would clear a read-only mount flag",
    ),
    always(
        "keyctl",
        libc::SYS_keyctl,
        "kernel keyrings are shared per user beyond the namespaces",
    ),
    always("add_key", libc::SYS_add_key, "kernel keyrings: as keyctl"),
    always(
        "request_key",
        libc::SYS_request_key,
        "kernel keyrings: as keyctl",
    ),
    always(
        "bpf",
        libc::SYS_bpf,
        "eBPF is a large kernel attack surface and reads kernel memory",
    ),
    always(
        "userfaultfd",
        libc::SYS_userfaultfd,
        "widens kernel race windows; a classic exploit aid",
    ),
    always(
        "perf_event_open",
        libc::SYS_perf_event_open,
        "observes other processes and the kernel",
    ),
];

fn target_arch() -> Result<TargetArch, ConfineError> {
    TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|e| ConfineError::Seccomp(format!("architecture {}: {e}", std::env::consts::ARCH)))
}

fn condition(when: Match) -> Result<Vec<SeccompCondition>, ConfineError> {
    let make = |arg, op, value| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
            .map_err(|e| ConfineError::Seccomp(e.to_string()))
    };
    Ok(match when {
        Match::Always => Vec::new(),
        Match::ArgEq { arg, value } => vec![make(arg, SeccompCmpOp::Eq, value)?],
        Match::ArgMasked { arg, mask, value } => {
            vec![make(arg, SeccompCmpOp::MaskedEq(mask), value)?]
        }
        Match::Socket { domain, ty } => vec![
            make(0, SeccompCmpOp::Eq, domain)?,
            make(1, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), ty)?,
        ],
    })
}

/// One BPF program per refusal kind (a filter has one match action; the
/// kernel runs every installed filter).
pub fn programs() -> Result<Vec<BpfProgram>, ConfineError> {
    let arch = target_arch()?;
    let mut programs = Vec::new();
    for (refusal, errno) in [
        (Refusal::Eperm, libc::EPERM),
        (Refusal::Enosys, libc::ENOSYS),
    ] {
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for entry in DENIED.iter().filter(|d| d.refusal == refusal) {
            let conditions = condition(entry.when)?;
            let slot = rules.entry(entry.nr).or_default();
            if conditions.is_empty() {
                // Unconditional: an empty rule list matches every call.
                slot.clear();
                continue;
            }
            slot.push(
                SeccompRule::new(conditions).map_err(|e| ConfineError::Seccomp(e.to_string()))?,
            );
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(errno as u32),
            arch,
        )
        .map_err(|e| ConfineError::Seccomp(e.to_string()))?;
        programs
            .push(BpfProgram::try_from(filter).map_err(|e| ConfineError::Seccomp(e.to_string()))?);
    }
    Ok(programs)
}

/// Installs the filters on the calling thread (after `PR_SET_NO_NEW_PRIVS`).
pub fn install(programs: &[BpfProgram]) -> Result<(), ConfineError> {
    for program in programs {
        seccompiler::apply_filter(program).map_err(|e| ConfineError::Seccomp(e.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn every_entry_says_why_and_names_its_call() {
        for d in DENIED {
            assert!(d.why.len() > 10, "{}: a one-line why", d.name);
            assert!(d.nr > 0, "{}", d.name);
        }
        // Always-entries are not listed twice (a condition would be shadowed).
        let mut seen = std::collections::BTreeSet::new();
        for d in DENIED.iter().filter(|d| d.when == Match::Always) {
            assert!(seen.insert(d.nr), "{} listed twice", d.name);
        }
    }

    #[test]
    fn the_table_covers_the_escapes() {
        let names: Vec<&str> = DENIED.iter().map(|d| d.name).collect();
        for name in [
            "io_uring_setup",
            "io_uring_enter",
            "io_uring_register",
            "unshare",
            "setns",
            "keyctl",
            "add_key",
            "request_key",
            "bpf",
            "userfaultfd",
            "perf_event_open",
            "mount",
        ] {
            assert!(names.contains(&name), "{name} missing");
        }
        let refused_domains: Vec<u64> = DENIED
            .iter()
            .filter_map(|d| match d.when {
                Match::ArgEq { arg: 0, value } if d.nr == libc::SYS_socket => Some(value),
                _ => None,
            })
            .collect();
        assert!(refused_domains.contains(&(libc::AF_UNIX as u64)));
        assert!(refused_domains.contains(&(libc::AF_PACKET as u64)));
        assert!(!refused_domains.contains(&(libc::AF_INET as u64)));
        assert!(!refused_domains.contains(&(libc::AF_INET6 as u64)));
        assert!(!names.contains(&"socketpair"));
        let raw: Vec<u64> = DENIED
            .iter()
            .filter_map(|d| match d.when {
                Match::Socket { domain, ty } if ty == libc::SOCK_RAW as u64 => Some(domain),
                _ => None,
            })
            .collect();
        assert_eq!(raw, vec![libc::AF_INET as u64, libc::AF_INET6 as u64]);
    }

    #[test]
    fn the_filters_compile() {
        let programs = programs().unwrap();
        assert_eq!(programs.len(), 2);
        assert!(programs.iter().all(|p| !p.is_empty()));
    }
}
