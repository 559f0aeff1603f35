//! Confinement of one runner exec, bubblewrap's model: set up by a shim in
//! the child ([`shim`]), never in berth's own process.
//!
//! The runner (in `berth-sandbox`) makes the exec's cgroups ([`cgroup`]),
//! adds the git environment ([`git_env`]), and spawns `berth-exec-shim --
//! PROGRAM ARGS` with an [`ExecSpec`] framed on its stdin ([`spec`]). The shim
//! builds the namespaces and the mount tree ([`mount_tree`]), then Landlock
//! ([`landlock_rules`]), seccomp ([`seccomp_filter`]) and rlimits, and runs
//! the command as PID 2 of its own PID namespace.
//!
//! A runner berth with a state directory keeps a [`resident`] instead: one
//! process that holds the berth's cgroups, namespaces and tree, and forks
//! each exec from there.

pub mod cgroup;
mod command_clone;
pub mod egress_handoff;
mod error;
pub mod git_env;
pub mod landlock_rules;
pub mod mount_tree;
pub mod resident;
pub mod seccomp_filter;
pub mod shim;
pub mod spec;

pub use egress_handoff::EgressHandoff;
pub use error::ConfineError;
pub use shim::{SETUP_FAILED, main_from_args};
pub use spec::{ExecSpec, Network, Rlimit};

/// The shim's binary name, looked for beside berth's executable.
pub const SHIM_NAME: &str = "berth-exec-shim";
/// The environment variable that names the shim's path explicitly.
pub const SHIM_ENV: &str = "BERTH_EXEC_SHIM";

/// Restores the default action of `SIGPIPE` (the Rust runtime ignores it, so
/// a write to a closed pipe is an error that `println!` turns into a panic).
/// A listing piped into `head` then ends quietly, as every Unix tool does.
/// Only for commands whose whole output goes to stdout: a server keeps the
/// signal ignored and handles `EPIPE` on its sockets.
pub fn default_sigpipe() -> Result<(), ConfineError> {
    // SAFETY: sets a signal's disposition to its default; no handler runs.
    if unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) } == libc::SIG_ERR {
        return Err(ConfineError::last("restore the default SIGPIPE action"));
    }
    Ok(())
}

/// Makes the calling process non-dumpable (`PR_SET_DUMPABLE 0`): its
/// `/proc/<pid>/environ`, `mem` and `fd` become root's, and no process of the
/// same uid may ptrace it. berth calls this first thing, so what it runs (a
/// runner command as the same user) cannot read its tokens.
pub fn make_non_dumpable() -> Result<(), ConfineError> {
    // SAFETY: a plain prctl on this process.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        return Err(ConfineError::last("make berth non-dumpable"));
    }
    Ok(())
}
