//! The errors of setting up a confined exec, each naming the step that failed
//! and, where there is one, what to do about it.

use std::path::PathBuf;

/// Why a confined exec could not be set up. The shim prints it on the
/// command's stderr and exits with [`crate::SETUP_FAILED`], so the runner's
/// outcome says it plainly.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    /// The spec on stdin was missing, truncated or not JSON.
    #[error("read the exec spec from stdin: {0}")]
    Spec(String),
    /// The command line of the shim itself was wrong.
    #[error("usage: berth-exec-shim -- PROGRAM [ARG...] (spec framed on stdin): {0}")]
    Usage(String),
    /// A kernel mechanism is missing or refused here; the message says which
    /// and what to change.
    #[error("{mechanism} is not available: {source}; {remedy}")]
    Unavailable {
        mechanism: &'static str,
        remedy: &'static str,
        #[source]
        source: std::io::Error,
    },
    /// A system call of the setup failed.
    #[error("{op}: {source}")]
    Sys {
        op: String,
        #[source]
        source: std::io::Error,
    },
    /// A path the spec names could not be used.
    #[error("{what} {}: {source}", path.display())]
    Path {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The Landlock ruleset could not be built or applied.
    #[error("Landlock: {0}")]
    Landlock(String),
    /// The seccomp filter could not be built or installed.
    #[error("seccomp: {0}")]
    Seccomp(String),
    /// A cgroup could not be made, joined, limited or killed.
    #[error("cgroup {}: {op}: {source}", path.display())]
    Cgroup {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ConfineError {
    /// The error of the system call just made, with what it was for.
    pub(crate) fn last(op: impl Into<String>) -> Self {
        ConfineError::Sys {
            op: op.into(),
            source: std::io::Error::last_os_error(),
        }
    }
}
