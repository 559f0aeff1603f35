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

/// `AUDIT_ARCH_*` of the architecture berth was built for: the filter
/// refuses calls made through any other ABI (a 32-bit `int 0x80` call
/// numbers its system calls differently).
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 62 | 0x8000_0000 | 0x4000_0000;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 183 | 0x8000_0000 | 0x4000_0000;

/// x86-64's x32 ABI: the same architecture, the call number with this bit
/// set. A deny-list keyed by number would let `mount | X32` through on a
/// kernel built with x32, so every number at or above it is refused.
#[cfg(target_arch = "x86_64")]
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

/// Offsets in `struct seccomp_data`: the call number, the architecture, and
/// the low 32 bits of argument `i` (the table compares 32-bit values).
const DATA_NR: u32 = 0;
const DATA_ARCH: u32 = 4;
const fn data_arg_low(i: u8) -> u32 {
    let low_half = if cfg!(target_endian = "little") { 0 } else { 4 };
    16 + 8 * i as u32 + low_half
}

/// The compiled filter: one classic BPF program for the whole table, built
/// once per process and installed by every confined command.
#[derive(Debug, Clone)]
pub struct Program(Vec<libc::sock_filter>);

impl Program {
    /// How many instructions it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// An instruction before its jumps are resolved to offsets.
#[derive(Debug, Clone, Copy)]
enum Step {
    Load(u32),
    And(u32),
    /// `if A == k` go to `then`, else to `otherwise`; `Fall` continues.
    JumpEq {
        k: u32,
        then: Jump,
        otherwise: Jump,
    },
    /// `if A >= k` go to `then`, else to `otherwise`.
    JumpGe {
        k: u32,
        then: Jump,
        otherwise: Jump,
    },
    Return(u32),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Jump {
    Fall,
    /// The refusal's answer, at the program's end.
    Refuse(Refusal),
    /// The start of the block of rules for one call number.
    Block(usize),
    /// Step number.
    At(usize),
}

fn answer(refusal: Refusal) -> u32 {
    let errno = match refusal {
        Refusal::Eperm => libc::EPERM,
        Refusal::Enosys => libc::ENOSYS,
    };
    libc::SECCOMP_RET_ERRNO | (errno as u32 & libc::SECCOMP_RET_DATA)
}

fn low32(value: u64, what: &str) -> Result<u32, ConfineError> {
    u32::try_from(value).map_err(|_| {
        ConfineError::Seccomp(format!(
            "{what}: {value:#x} does not fit the 32 bits compared"
        ))
    })
}

/// Compiles [`DENIED`] into one program: the architecture checked, then a
/// binary search over the refused call numbers ([`search`]: an
/// unconditional refusal jumps straight to its answer), then each
/// conditional number's rules in turn, each condition reloading its
/// argument; the answers last, shared. A call no entry matches is allowed.
/// One program, not one per answer: the kernel compiles each filter a
/// command installs and runs every one on every call it makes.
pub fn program() -> Result<Program, ConfineError> {
    // Per call number, in table order: `None` once an entry refuses it
    // always (a condition beside that would be shadowed), else its rules.
    let mut calls: Vec<(u32, Refusal, Option<Vec<Match>>)> = Vec::new();
    for entry in DENIED {
        let nr = low32(entry.nr as u64, entry.name)?;
        let slot = match calls.iter().position(|(n, ..)| *n == nr) {
            Some(i) => &mut calls[i],
            None => {
                calls.push((nr, entry.refusal, Some(Vec::new())));
                let last = calls.len() - 1;
                &mut calls[last]
            }
        };
        if slot.1 != entry.refusal {
            return Err(ConfineError::Seccomp(format!(
                "{} is listed with two answers",
                entry.name
            )));
        }
        match (entry.when, &mut slot.2) {
            (Match::Always, rules) => *rules = None,
            (when, Some(rules)) => rules.push(when),
            (_, None) => {}
        }
    }
    let mut steps = vec![
        Step::Load(DATA_ARCH),
        Step::JumpEq {
            k: AUDIT_ARCH,
            then: Jump::Fall,
            otherwise: Jump::Refuse(Refusal::Eperm),
        },
        Step::Load(DATA_NR),
    ];
    #[cfg(target_arch = "x86_64")]
    steps.push(Step::JumpGe {
        k: X32_SYSCALL_BIT,
        then: Jump::Refuse(Refusal::Eperm),
        otherwise: Jump::Fall,
    });
    let mut blocks: Vec<(Refusal, &[Match])> = Vec::new();
    let mut numbers: Vec<(u32, Jump)> = Vec::with_capacity(calls.len());
    for (nr, refusal, rules) in &calls {
        let then = match rules {
            None => Jump::Refuse(*refusal),
            Some(rules) => {
                blocks.push((*refusal, rules));
                Jump::Block(blocks.len() - 1)
            }
        };
        numbers.push((*nr, then));
    }
    numbers.sort_unstable_by_key(|(nr, _)| *nr);
    search(&mut steps, &numbers);
    let mut block_starts = Vec::with_capacity(blocks.len());
    for (refusal, rules) in blocks {
        block_starts.push(steps.len());
        for when in rules {
            rule_steps(&mut steps, *when, refusal)?;
        }
        steps.push(Step::Return(libc::SECCOMP_RET_ALLOW));
    }
    resolve(&steps, &block_starts)
}

/// Refused numbers compared one by one at most; more are split in two.
const COMPARED_IN_TURN: usize = 3;

/// The search for the call number among `numbers` (sorted, distinct): more
/// than [`COMPARED_IN_TURN`] are split in two by one `>=` comparison, so a
/// call meets about log2(n) + 3 comparisons, not n. Why it matters: when a
/// filter is installed, the kernel runs it once for every call number of
/// the architecture to learn which calls it always allows (the answer it
/// then caches); through a chain of comparisons that emulation costs about
/// 1 µs per instruction of the chain, in each exec's `seccomp()`. Measured
/// here (fork, install, exit; 400 times): this table as a chain 46.4 µs an
/// install, as this search 29.6 µs.
fn search(steps: &mut Vec<Step>, numbers: &[(u32, Jump)]) {
    if numbers.len() <= COMPARED_IN_TURN {
        for &(nr, then) in numbers {
            steps.push(Step::JumpEq {
                k: nr,
                then,
                otherwise: Jump::Fall,
            });
        }
        steps.push(Step::Return(libc::SECCOMP_RET_ALLOW));
        return;
    }
    let (low, high) = numbers.split_at(numbers.len() / 2);
    let split = steps.len();
    // Its `then` is the high half's first step, known once the low half is
    // laid out.
    steps.push(Step::JumpGe {
        k: high[0].0,
        then: Jump::At(split),
        otherwise: Jump::Fall,
    });
    search(steps, low);
    let high_start = steps.len();
    if let Some(Step::JumpGe { then, .. }) = steps.get_mut(split) {
        *then = Jump::At(high_start);
    }
    search(steps, high);
}

/// One rule: every condition must hold for the refusal; the first that
/// does not sends the call on to the next rule, just past this one.
fn rule_steps(steps: &mut Vec<Step>, when: Match, refusal: Refusal) -> Result<(), ConfineError> {
    let conditions: Vec<(u8, Option<u64>, u64)> = match when {
        Match::Always => Vec::new(),
        Match::ArgEq { arg, value } => vec![(arg, None, value)],
        Match::ArgMasked { arg, mask, value } => vec![(arg, Some(mask), value)],
        Match::Socket { domain, ty } => vec![(0, None, domain), (1, Some(SOCK_TYPE_MASK), ty)],
    };
    // Each condition: a load, its mask, a comparison.
    let end = steps.len()
        + conditions
            .iter()
            .map(|(_, mask, _)| 2 + usize::from(mask.is_some()))
            .sum::<usize>();
    let last = conditions.len().saturating_sub(1);
    for (i, (arg, mask, value)) in conditions.iter().enumerate() {
        if *arg > 5 {
            return Err(ConfineError::Seccomp(format!(
                "argument {arg} does not exist"
            )));
        }
        steps.push(Step::Load(data_arg_low(*arg)));
        if let Some(mask) = mask {
            steps.push(Step::And(low32(*mask, "a mask")?));
        }
        steps.push(Step::JumpEq {
            k: low32(*value, "a value")?,
            then: if i == last {
                Jump::Refuse(refusal)
            } else {
                Jump::Fall
            },
            otherwise: Jump::At(end),
        });
    }
    if conditions.is_empty() {
        steps.push(Step::Return(answer(refusal)));
    }
    Ok(())
}

/// Lays the steps out with the shared answers after them and turns every
/// jump into its forward offset (classic BPF jumps forward only, at most
/// 255 instructions).
fn resolve(steps: &[Step], block_starts: &[usize]) -> Result<Program, ConfineError> {
    let answers = [Refusal::Eperm, Refusal::Enosys];
    let offset = |at: usize, jump: Jump| -> Result<u8, ConfineError> {
        let to = match jump {
            Jump::Fall => at + 1,
            Jump::Refuse(r) => steps.len() + usize::from(r == Refusal::Enosys),
            Jump::At(to) => to,
            Jump::Block(b) => *block_starts
                .get(b)
                .ok_or_else(|| ConfineError::Seccomp("a block without a start".into()))?,
        };
        to.checked_sub(at + 1)
            .and_then(|d| u8::try_from(d).ok())
            .ok_or_else(|| {
                ConfineError::Seccomp(format!("a jump from {at} to {to} is out of reach"))
            })
    };
    let code = |c: u32| c as u16;
    let mut out = Vec::with_capacity(steps.len() + answers.len());
    for (at, step) in steps.iter().enumerate() {
        out.push(match *step {
            Step::Load(k) => libc::sock_filter {
                code: code(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS),
                jt: 0,
                jf: 0,
                k,
            },
            Step::And(k) => libc::sock_filter {
                code: code(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K),
                jt: 0,
                jf: 0,
                k,
            },
            Step::JumpEq { k, then, otherwise } => libc::sock_filter {
                code: code(libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K),
                jt: offset(at, then)?,
                jf: offset(at, otherwise)?,
                k,
            },
            Step::JumpGe { k, then, otherwise } => libc::sock_filter {
                code: code(libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K),
                jt: offset(at, then)?,
                jf: offset(at, otherwise)?,
                k,
            },
            Step::Return(k) => libc::sock_filter {
                code: code(libc::BPF_RET | libc::BPF_K),
                jt: 0,
                jf: 0,
                k,
            },
        });
    }
    for refusal in answers {
        out.push(libc::sock_filter {
            code: code(libc::BPF_RET | libc::BPF_K),
            jt: 0,
            jf: 0,
            k: answer(refusal),
        });
    }
    Ok(Program(out))
}

/// Installs the filter on the calling thread (after `PR_SET_NO_NEW_PRIVS`).
pub fn install(program: &Program) -> Result<(), ConfineError> {
    let len = u16::try_from(program.0.len())
        .map_err(|_| ConfineError::Seccomp("the program is too long".into()))?;
    let prog = libc::sock_fprog {
        len,
        filter: program.0.as_ptr().cast_mut(),
    };
    // SAFETY: the kernel copies the program, which lives until the call
    // returns; no flags.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0u32,
            &prog as *const libc::sock_fprog,
        )
    };
    if rc != 0 {
        return Err(ConfineError::Seccomp(format!(
            "install the filter: {}",
            std::io::Error::last_os_error()
        )));
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

    /// `struct seccomp_data` as the kernel lays it out: the call number,
    /// the architecture, the instruction pointer, the six arguments.
    fn seccomp_data(arch: u32, nr: u32, args: [u64; 6]) -> [u8; 64] {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, arg) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&arg.to_ne_bytes());
        }
        data
    }

    /// Runs the program as the kernel would on one call: its answer and how
    /// many instructions it took. Any instruction the compiler does not emit
    /// fails the test.
    fn run(program: &Program, arch: u32, nr: u32, args: [u64; 6]) -> (u32, usize) {
        let data = seccomp_data(arch, nr, args);
        let (mut a, mut pc, mut ran) = (0u32, 0usize, 0usize);
        loop {
            let insn = program.0[pc];
            ran += 1;
            let code = u32::from(insn.code);
            let k = insn.k;
            pc += 1;
            match code {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    let at = k as usize;
                    a = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
                }
                c if c == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => a &= k,
                c if c == libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K => {
                    pc += usize::from(if a == k { insn.jt } else { insn.jf });
                }
                c if c == libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K => {
                    pc += usize::from(if a >= k { insn.jt } else { insn.jf });
                }
                c if c == libc::BPF_RET | libc::BPF_K => return (k, ran),
                other => panic!("instruction {other:#x} at {}", pc - 1),
            }
        }
    }

    /// What the table means for one call, read from the table itself.
    fn meant(arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        if arch != AUDIT_ARCH {
            return answer(Refusal::Eperm);
        }
        #[cfg(target_arch = "x86_64")]
        if nr >= X32_SYSCALL_BIT {
            return answer(Refusal::Eperm);
        }
        let low = |i: u8| args[usize::from(i)] as u32;
        for d in DENIED.iter().filter(|d| d.nr as u32 == nr) {
            let hit = match d.when {
                Match::Always => true,
                Match::ArgEq { arg, value } => low(arg) == value as u32,
                Match::ArgMasked { arg, mask, value } => low(arg) & mask as u32 == value as u32,
                Match::Socket { domain, ty } => {
                    low(0) == domain as u32 && low(1) & SOCK_TYPE_MASK as u32 == ty as u32
                }
            };
            if hit {
                return answer(d.refusal);
            }
        }
        libc::SECCOMP_RET_ALLOW
    }

    /// The program answers every call as the table means, whatever its
    /// layout: every call number up to past the highest the kernel has,
    /// through the x32 numbering and another architecture, with arguments
    /// that match each entry, miss it by one bit, or are all zeros or ones.
    #[test]
    fn the_program_answers_every_call_as_the_table_means() {
        let program = program().unwrap();
        let mut argument_sets = vec![[0u64; 6], [u64::MAX; 6]];
        for d in DENIED {
            let mut args = [0u64; 6];
            match d.when {
                Match::Always => {}
                Match::ArgEq { arg, value } | Match::ArgMasked { arg, value, .. } => {
                    args[usize::from(arg)] = value;
                }
                Match::Socket { domain, ty } => {
                    args[0] = domain;
                    args[1] = ty | libc::SOCK_CLOEXEC as u64;
                }
            }
            argument_sets.push(args);
            for i in 0..2 {
                let mut near = args;
                near[i] ^= 1;
                argument_sets.push(near);
            }
        }
        let mut checked = 0;
        for arch in [AUDIT_ARCH, AUDIT_ARCH ^ 1, 0x4000_0003] {
            for nr in (0..1100u32).chain(DENIED.iter().map(|d| d.nr as u32 | 0x4000_0000)) {
                for args in &argument_sets {
                    let (got, _) = run(&program, arch, nr, *args);
                    assert_eq!(
                        got,
                        meant(arch, nr, *args),
                        "arch {arch:#x} call {nr} {args:x?}"
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 100_000, "{checked} calls checked");
    }

    /// A call the table does not name leaves the program after a handful of
    /// instructions, not after a comparison with every refused number: the
    /// kernel emulates the filter for each call number when it installs it
    /// (see [`search`]), so the longest such path is what each exec pays.
    #[test]
    fn an_allowed_call_leaves_after_a_few_instructions() {
        let program = program().unwrap();
        let refused: std::collections::BTreeSet<u32> = DENIED.iter().map(|d| d.nr as u32).collect();
        let longest = (0..1100u32)
            .filter(|nr| !refused.contains(nr))
            .map(|nr| run(&program, AUDIT_ARCH, nr, [0; 6]).1)
            .max()
            .unwrap();
        // Four to reach the number (arch, its check, the load, x32), about
        // log2(distinct numbers) splits, at most three comparisons, the answer.
        let distinct = refused.len();
        let bound = 4 + (usize::BITS - distinct.leading_zeros()) as usize + COMPARED_IN_TURN + 1;
        assert!(
            longest <= bound,
            "an allowed call ran {longest} instructions (at most {bound} for {distinct} numbers)"
        );
        assert!(
            longest < distinct,
            "{longest} instructions: a chain, not a search"
        );
    }

    #[test]
    fn the_table_compiles_to_one_short_program() {
        let program = program().unwrap();
        // The two programs seccompiler made of this table held 183
        // instructions; the kernel compiles each one a command installs.
        assert!(
            (40..=100).contains(&program.len()),
            "{} instructions",
            program.len()
        );
    }
}
