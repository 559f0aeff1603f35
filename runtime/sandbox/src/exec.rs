//! The exec contract: what a request says and what an outcome reports, the
//! same for every backend.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::SandboxError;

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
    /// The engine action this exec runs, when it runs one: it names the
    /// exec, so any berth process can end it by the action id alone
    /// ([`Sandbox::cancel`](crate::Sandbox::cancel)). ASCII letters and
    /// digits only.
    pub action: Option<String>,
    /// The environment the command starts with in place of the backend's
    /// own, before `env`: what a runner derives from the environment of the
    /// process the action runs for ([`Sandbox::environment_from`]), when
    /// that is not the process running it (a `berth exec` handed to a
    /// server). Backends whose commands take nothing from berth's
    /// environment (a container) ignore it.
    ///
    /// [`Sandbox::environment_from`]: crate::Sandbox::environment_from
    pub base_env: Option<BTreeMap<String, String>>,
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

    /// Checks what every backend refuses before running anything: a working
    /// directory that is not `project_root` or inside it (relative, `.` or `..`
    /// components, or elsewhere), an empty argv, environment names that cannot
    /// be set, and NUL bytes (which no exec can pass).
    pub fn validate(&self, project_root: &str) -> Result<(), SandboxError> {
        check_cwd(project_root, &self.cwd)?;
        match &self.program {
            Program::Argv(argv) => {
                if argv.is_empty() {
                    return Err(SandboxError::InvalidRequest(
                        "empty argv: name the program to run".to_string(),
                    ));
                }
                if argv[0].is_empty() {
                    return Err(SandboxError::InvalidRequest(
                        "argv[0] is empty: name the program to run".to_string(),
                    ));
                }
                for arg in argv {
                    no_nul("an argv element", arg)?;
                }
            }
            Program::Shell(line) => no_nul("the command line", line)?,
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                return Err(SandboxError::InvalidRequest(format!(
                    "environment name {name:?} cannot be set: use a non-empty name without '=' or NUL"
                )));
            }
            no_nul(&format!("the value of {name}"), value)?;
        }
        if let Some(action) = &self.action
            && !valid_action_id(action)
        {
            return Err(SandboxError::InvalidRequest(format!(
                "action id {action:?} cannot name an exec: use ASCII letters and digits (at most 64)"
            )));
        }
        Ok(())
    }

    fn new(program: Program) -> Self {
        ExecRequest {
            program,
            cwd: berth_policy::frame::WORK.to_string(),
            env: BTreeMap::new(),
            stdin: None,
            timeout: crate::DEFAULT_TIMEOUT,
            output_cap: crate::DEFAULT_OUTPUT_CAP,
            action: None,
            base_env: None,
        }
    }
}

/// Whether `action` can name an exec: it becomes part of a cgroup, a file
/// and a shell pattern, so ASCII letters and digits only, 1 to 64 of them.
pub fn valid_action_id(action: &str) -> bool {
    !action.is_empty() && action.len() <= 64 && action.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// Checks that `cwd` is `project_root` or a directory inside it, written as a
/// plain absolute path. `..` and `.` are refused rather than normalised: the
/// decision judged the path as written, and the backend must run what was
/// judged.
pub fn check_cwd(project_root: &str, cwd: &str) -> Result<(), SandboxError> {
    let refuse = |why: &str| {
        Err(SandboxError::InvalidRequest(format!(
            "working directory {cwd:?} {why}: use {project_root} or an absolute path inside it"
        )))
    };
    if !cwd.starts_with('/') {
        return refuse("is not an absolute path");
    }
    if cwd.split('/').any(|c| c == "." || c == "..") {
        return refuse("has a '.' or '..' component");
    }
    let root = project_root.trim_end_matches('/');
    let cwd_trimmed = if cwd.len() > 1 {
        cwd.trim_end_matches('/')
    } else {
        cwd
    };
    let inside = cwd_trimmed == root
        || cwd_trimmed
            .strip_prefix(root)
            .is_some_and(|rest| rest.starts_with('/'));
    if !inside {
        return refuse("is outside the project");
    }
    no_nul("the working directory", cwd)
}

fn no_nul(what: &str, s: &str) -> Result<(), SandboxError> {
    if s.contains('\0') {
        return Err(SandboxError::InvalidRequest(format!(
            "{what} contains a NUL byte, which no process can receive"
        )));
    }
    Ok(())
}

/// A request as the backend will run it: after the frame → host translation in
/// the runner, unchanged in a container. Logged beside the request as decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedExec {
    pub program: Program,
    /// The working directory where the process starts.
    pub cwd: PathBuf,
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

/// Where an exec streams its output as it arrives: a bounded channel, so a
/// slow reader slows the command (its pipe fills and its writes wait) instead
/// of berth holding everything the command prints. Its receiver must be read
/// while the exec runs, or dropped (which only stops the streaming).
pub type OutputSink = tokio::sync::mpsc::Sender<OutputChunk>;

/// Chunks an [`output_channel`] holds before the command waits for its
/// reader; a chunk is at most one pipe read (64 KiB) or one Docker frame.
pub const OUTPUT_CHANNEL_CHUNKS: usize = 16;

/// A sink and its receiver, bounded by [`OUTPUT_CHANNEL_CHUNKS`].
pub fn output_channel() -> (OutputSink, tokio::sync::mpsc::Receiver<OutputChunk>) {
    tokio::sync::mpsc::channel(OUTPUT_CHANNEL_CHUNKS)
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
    /// The sandbox's container was restarted while this command ran: by
    /// berth, to end a timed-out command that outlived its kill (this one,
    /// when `timed_out`), or by someone else. Every command running in the
    /// berth at that moment was killed with it.
    pub container_restarted: bool,
    pub duration: Duration,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_must_lie_inside_the_project() {
        let cases: &[(&str, bool)] = &[
            ("/work", true),
            ("/work/", true),
            ("/work/src", true),
            ("/work/src/deep/", true),
            ("/workspace", false),
            ("/work2/x", false),
            ("/", false),
            ("/etc", false),
            ("work", false),
            ("", false),
            ("/work/../etc", false),
            ("/work/./src", false),
            ("/work/src/..", false),
        ];
        for (cwd, ok) in cases {
            let result = check_cwd("/work", cwd);
            assert_eq!(result.is_ok(), *ok, "{cwd:?}: {result:?}");
            if let Err(e) = result {
                assert!(
                    matches!(e, SandboxError::InvalidRequest(_)),
                    "{cwd:?}: {e:?}"
                );
                assert!(e.to_string().contains("/work"), "{e}");
            }
        }
    }

    #[test]
    fn validate_refuses_what_no_exec_can_run() {
        let mut with_bad_env = ExecRequest::shell("true");
        with_bad_env.env.insert("A=B".into(), "x".into());
        let mut with_nul_value = ExecRequest::shell("true");
        with_nul_value.env.insert("A".into(), "x\0y".into());
        let with_action = |id: &str| {
            let mut request = ExecRequest::shell("true");
            request.action = Some(id.to_string());
            request
        };
        let cases: Vec<(&str, ExecRequest, bool)> = vec![
            ("plain shell", ExecRequest::shell("true"), true),
            ("plain argv", ExecRequest::argv(["true"]), true),
            ("empty argv", ExecRequest::argv(Vec::<String>::new()), false),
            ("empty program", ExecRequest::argv([""]), false),
            ("nul in argv", ExecRequest::argv(["echo", "a\0b"]), false),
            ("nul in shell", ExecRequest::shell("echo a\0b"), false),
            ("bad env name", with_bad_env, false),
            ("nul in env value", with_nul_value, false),
            ("action id", with_action("0123abcDEF"), true),
            ("action id with a slash", with_action("../x"), false),
            ("action id with a glob", with_action("a*"), false),
            ("empty action id", with_action(""), false),
        ];
        for (name, request, ok) in cases {
            let result = request.validate("/work");
            assert_eq!(result.is_ok(), ok, "{name}: {result:?}");
        }
    }

    #[test]
    fn exit_status_follows_the_shell_convention() {
        let cases = [
            (ExitStatus::Exited(0), 0, true, false, false),
            (ExitStatus::Exited(126), 126, false, false, true),
            (ExitStatus::Exited(127), 127, false, true, false),
            (ExitStatus::Signaled(15), 143, false, false, false),
            (ExitStatus::Signaled(9), 137, false, false, false),
        ];
        for (status, code, success, not_found, not_executable) in cases {
            assert_eq!(
                (
                    status.code(),
                    status.success(),
                    status.not_found(),
                    status.not_executable()
                ),
                (code, success, not_found, not_executable),
                "{status:?}"
            );
        }
    }
}
