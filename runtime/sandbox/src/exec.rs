//! The exec contract: what a request says and what an outcome reports, the
//! same for every backend.

use std::collections::BTreeMap;
use std::time::Duration;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Program {
    /// An argv, run without a shell.
    Argv(Vec<String>),
    /// A command line, run by `sh -c`.
    Shell(String),
}

/// One exec.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    pub program: Program,
    /// Working directory in the frame; must lie inside `/work`.
    pub cwd: String,
    /// Extra environment; the backend starts from a clean allow-listed one.
    pub env: BTreeMap<String, String>,
    pub stdin: Option<Vec<u8>>,
    /// The deadline; the whole process tree is killed when it passes.
    pub timeout: Duration,
    /// Bytes of each stream kept; beyond it the tail is kept and the
    /// truncation reported.
    pub output_cap: usize,
}

impl ExecRequest {
    pub fn shell(command: impl Into<String>) -> Self {
        Self::new(Program::Shell(command.into()))
    }

    pub fn argv<I, S>(argv: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::new(Program::Argv(argv.into_iter().map(Into::into).collect()))
    }

    fn new(program: Program) -> Self {
        ExecRequest {
            program,
            cwd: berth_policy::frame::WORK.to_string(),
            env: BTreeMap::new(),
            stdin: None,
            timeout: crate::DEFAULT_TIMEOUT,
            output_cap: crate::DEFAULT_OUTPUT_CAP,
        }
    }
}

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    /// Exited with a code. 126: found but not executable; 127: not found.
    Exited(i32),
    /// Killed by a signal.
    Signaled(i32),
}

impl ExitStatus {
    /// The shell's convention: the code, or 128 + the signal.
    pub fn code(self) -> i32 {
        match self {
            ExitStatus::Exited(c) => c,
            ExitStatus::Signaled(s) => 128 + s,
        }
    }

    pub fn success(self) -> bool {
        self == ExitStatus::Exited(0)
    }

    pub fn not_found(self) -> bool {
        self == ExitStatus::Exited(127)
    }

    pub fn not_executable(self) -> bool {
        self == ExitStatus::Exited(126)
    }
}

/// Captured output of one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Output {
    /// The bytes kept: everything, or the tail when truncated.
    pub bytes: Vec<u8>,
    /// Total bytes the stream produced.
    pub total: u64,
    pub truncated: bool,
}

/// A chunk of output as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputChunk {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
}

/// The result of one exec.
#[derive(Debug, Clone)]
pub struct ExecOutcome {
    pub status: ExitStatus,
    pub stdout: Output,
    pub stderr: Output,
    /// The deadline passed and the process tree was killed.
    pub timed_out: bool,
    /// The sandbox's memory limit killed a process of this command (exit 137
    /// from the out-of-memory killer, not from a signal someone sent).
    pub oom_killed: bool,
    pub duration: Duration,
}
