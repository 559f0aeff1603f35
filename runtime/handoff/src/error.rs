//! What can go wrong once a server has taken an exec: before that, every
//! failure is "not taken" and the caller runs the action itself
//! ([`crate::Handoff::NotTaken`]), so falling back never runs it twice.

use std::path::PathBuf;

/// A handed-off exec that failed after the server took it: the action may
/// have been proposed, so each message says where to look.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    #[error(
        "berth serve at {} took the action but did not answer within {secs} s: it may have been \
         proposed — see `berth actions --agent {agent}`",
        socket.display()
    )]
    NoAnswer {
        socket: PathBuf,
        secs: u64,
        agent: String,
    },
    #[error(
        "berth serve at {} did not answer: the action may have been proposed — see `berth actions --agent {agent}`: {source}",
        socket.display()
    )]
    Broken {
        socket: PathBuf,
        agent: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "berth serve stopped answering before the action ended: see `berth actions --agent {agent}`{}",
        detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default()
    )]
    Gone {
        agent: String,
        detail: Option<String>,
    },
    #[error("berth serve sent a line this berth cannot read: {preview}: {source}")]
    UnreadableLine {
        preview: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("berth serve sent a line longer than {max} bytes")]
    LineTooLong { max: usize },
    #[error("berth serve sent output that is not base64: {0}")]
    NotBase64(#[from] base64::DecodeError),
    /// The server's own error line: its message is the CLI's sentence.
    #[error("{message}")]
    Server { code: String, message: String },
    #[error("printing the report: {0}")]
    Print(#[source] std::io::Error),
    #[error("encoding the request: {0}")]
    Encode(#[source] serde_json::Error),
}
