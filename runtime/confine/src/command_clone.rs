//! Starting a command's process from its PID 1 as `posix_spawn` does —
//! `CLONE_VM | CLONE_VFORK` on a stack of its own, so PID 1's memory is
//! neither copied nor faulted in page by page (a fork of PID 1 cost ~60–100
//! µs an exec here) — and, when PID 1 was cloned before the exec's cgroup
//! was named (a resident's standby, [`crate::resident`]), straight into
//! that cgroup: `clone3` with `CLONE_INTO_CGROUP`, so the command is born
//! there and no migration waits for the kernel's RCU grace period.
//!
//! The C library offers `clone3` with a new stack to no one, so that one
//! call is a few instructions of assembly: the child side calls the entry
//! on its own stack and never comes back into Rust code that expects the
//! parent's frames (x86-64 only; elsewhere a standby is never made, and
//! every PID 1 is cloned into its cgroup as before).

use std::os::fd::RawFd;

use crate::ConfineError;

/// `CLONE_INTO_CGROUP` (Linux 5.7): the child starts in the cgroup2
/// directory named by `cgroup`.
pub(crate) const CLONE_INTO_CGROUP: u64 = 0x2_0000_0000;

/// Whether this build starts a command straight into a cgroup
/// ([`start_on_own_stack`] with a cgroup).
pub(crate) const INTO_CGROUP: bool = cfg!(target_arch = "x86_64");

/// `struct clone_args` of `clone3(2)`, up to `cgroup` (version 2, 88 bytes).
#[repr(C)]
#[derive(Default)]
pub(crate) struct CloneArgs {
    pub flags: u64,
    pub pidfd: u64,
    pub child_tid: u64,
    pub parent_tid: u64,
    pub exit_signal: u64,
    pub stack: u64,
    pub stack_size: u64,
    pub tls: u64,
    pub set_tid: u64,
    pub set_tid_size: u64,
    pub cgroup: u64,
}

/// What the command's process runs first, on its own stack, with the
/// argument given to [`start_on_own_stack`]; it execs or `_exit`s.
pub(crate) type Entry = extern "C" fn(*mut libc::c_void) -> libc::c_int;

/// The stack the command's process sets itself up on, in PID 1's memory
/// until it execs (its lowest page a guard): ample for the shim's command
/// set-up, which builds a Landlock ruleset and at worst formats an error.
const COMMAND_STACK: usize = 1 << 20;

/// Starts `entry(arg)` in a new process that shares this one's memory
/// until it execs or exits (`CLONE_VM | CLONE_VFORK`: this process waits
/// until then), on a stack of its own, into `cgroup` (a cgroup2 directory's
/// descriptor) when one is given. The child changes only what is its own
/// despite the shared memory: its process (session, limits, credentials,
/// working directory, descriptors, Landlock, seccomp — none shared without
/// `CLONE_THREAD`, `CLONE_FS` or `CLONE_FILES`) — and this process's heap,
/// where its allocations stay behind, consistent, as this process is
/// stopped meanwhile.
///
/// # Safety
/// `arg` must be what `entry` expects and stay valid until this returns
/// (it does: `CLONE_VFORK` returns only once the child has exec'd or
/// exited); the calling process must be single-threaded.
pub(crate) unsafe fn start_on_own_stack(
    entry: Entry,
    arg: *mut libc::c_void,
    cgroup: Option<RawFd>,
) -> Result<libc::pid_t, ConfineError> {
    let page = page_size();
    // SAFETY: a fresh private anonymous mapping, unmapped below once the
    // child no longer runs on it; the guard page is inside it.
    let stack = unsafe {
        let stack = libc::mmap(
            std::ptr::null_mut(),
            COMMAND_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_STACK,
            -1,
            0,
        );
        if stack == libc::MAP_FAILED {
            return Err(ConfineError::last("map the command's stack"));
        }
        if libc::mprotect(stack, page, libc::PROT_NONE) != 0 {
            let e = ConfineError::last("guard the command's stack");
            libc::munmap(stack, COMMAND_STACK);
            return Err(e);
        }
        stack
    };
    let pid = match cgroup {
        // SAFETY: the child runs `entry` on the top of the new stack (it
        // grows down; the mapping is page-aligned, so the top is 16-byte
        // aligned) with `arg`, which outlives it (the caller's promise);
        // CLONE_VFORK returns here only once the child has exec'd or
        // exited, and only then is the stack unmapped.
        None => unsafe {
            libc::clone(
                entry,
                stack.cast::<u8>().add(COMMAND_STACK).cast(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                arg,
            )
        },
        Some(dir) => {
            let mut args = CloneArgs {
                flags: (libc::CLONE_VM | libc::CLONE_VFORK) as u64 | CLONE_INTO_CGROUP,
                exit_signal: libc::SIGCHLD as u64,
                stack: stack as u64,
                stack_size: COMMAND_STACK as u64,
                cgroup: dir as u64,
                ..CloneArgs::default()
            };
            // SAFETY: as for `clone` above; `args` names the whole mapping
            // as the stack (the kernel starts the child at its top).
            unsafe { clone3_on_stack(&mut args, entry, arg) }
        }
    };
    let error = (pid < 0).then(|| ConfineError::last("start the command"));
    // SAFETY: the child has exec'd or exited (CLONE_VFORK), or was never
    // made: nothing runs on the stack any more.
    unsafe { libc::munmap(stack, COMMAND_STACK) };
    match error {
        Some(e) => Err(e),
        None => Ok(pid),
    }
}

fn page_size() -> usize {
    // SAFETY: a plain query.
    usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096)
}

/// `clone3(args)` whose child calls `entry(arg)` on the stack `args` names
/// and exits with what it returns. Returns the child's pid, or -1 with
/// `errno` set.
///
/// # Safety
/// `args` must name a mapped stack that outlives the child's use of it,
/// and `entry` must be safe to call with `arg` there.
#[cfg(target_arch = "x86_64")]
unsafe fn clone3_on_stack(args: &mut CloneArgs, entry: Entry, arg: *mut libc::c_void) -> i32 {
    let ret: i64;
    // SAFETY: the system call returns twice. In this process it sets rax
    // (and clobbers rcx and r11, as every syscall does) and falls through
    // to the end of the block. In the child rax is 0 and rsp the top of
    // the new stack: it clears the frame pointer (no frame above), keeps
    // the psABI's 16-byte alignment at the call, passes `arg` as the one
    // argument, and exits with the entry's return value if it ever
    // returns; it never leaves the block. r12 and r13 carry `arg` and
    // `entry` across the system call, which preserves them.
    unsafe {
        std::arch::asm!(
            "syscall",
            "test rax, rax",
            "jnz 2f",
            "xor ebp, ebp",
            "and rsp, -16",
            "mov rdi, r12",
            "call r13",
            "mov edi, eax",
            "mov eax, {exit}",
            "syscall",
            "ud2",
            "2:",
            exit = const libc::SYS_exit,
            inlateout("rax") libc::SYS_clone3 => ret,
            in("rdi") std::ptr::from_mut(args),
            in("rsi") std::mem::size_of::<CloneArgs>(),
            in("r12") arg,
            in("r13") entry,
            lateout("rcx") _,
            lateout("r11") _,
            options(nostack),
        );
    }
    if ret < 0 {
        // The raw system call returns -errno; callers read errno.
        // SAFETY: writing this thread's errno.
        unsafe { *libc::__errno_location() = -ret as libc::c_int };
        return -1;
    }
    ret as i32
}

/// Elsewhere no standby is made ([`INTO_CGROUP`]); a call is an error.
#[cfg(not(target_arch = "x86_64"))]
unsafe fn clone3_on_stack(_: &mut CloneArgs, _: Entry, _: *mut libc::c_void) -> i32 {
    // SAFETY: writing this thread's errno.
    unsafe { *libc::__errno_location() = libc::ENOSYS };
    -1
}
