//! What one confined exec gets: the spec the runner writes on the shim's
//! stdin (length-framed JSON, before the command's own input), so nothing of
//! it sits in argv or the environment and the command inherits the rest of
//! the pipe as its stdin.

use std::io::{Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::ConfineError;

/// The largest spec accepted (a few paths and numbers; bounded so a broken
/// writer cannot make the shim allocate without end).
const MAX_SPEC: usize = 1 << 20;

/// The system directories bound read-only at their own paths when the spec
/// names none (those missing on a host are skipped; top-level symlinks such
/// as `/bin -> usr/bin` are recreated as symlinks).
pub const DEFAULT_SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
];

/// Whether the exec's network namespace is cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// A network namespace holding only `lo`.
    #[default]
    None,
    /// The host's network (no network namespace).
    Open,
}

/// A resource limit the shim sets on the command (soft and hard alike, never
/// above the shim's own hard limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rlimit {
    Core,
    OpenFiles,
    AddressSpace,
    Processes,
    FileSize,
    CpuSeconds,
}

/// The spec of one confined exec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecSpec {
    /// berth's pid: the shim dies with it (`PR_SET_PDEATHSIG`) and refuses to
    /// start when its parent is already someone else.
    pub parent_pid: i32,
    /// The worktree on the host, bound at `/work`.
    pub worktree: PathBuf,
    /// `/work` read-only (a read-only bind, and no Landlock write right).
    pub work_read_only: bool,
    /// The working directory, a path under `/work`.
    pub cwd: String,
    /// Host directories bound read-write at their own paths (the berth's home,
    /// the agent repository, extra roots).
    pub writable: Vec<PathBuf>,
    /// Host directories bound read-only at their own paths (declared
    /// toolchains, the forge's objects).
    pub readable: Vec<PathBuf>,
    /// The per-berth directory bound at `/tmp` and `/var/tmp`; `None` mounts a
    /// fresh tmpfs per exec.
    pub private_tmp: Option<PathBuf>,
    /// System directories bound read-only; empty takes [`DEFAULT_SYSTEM_DIRS`].
    pub system_dirs: Vec<PathBuf>,
    pub network: Network,
    /// When the shim runs as root: the uid and gid the command runs as. `None`
    /// keeps uid 0 with every capability dropped. Ignored when not root (the
    /// user namespace maps the caller's own ids).
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    pub rlimits: Vec<(Rlimit, u64)>,
    /// cgroup directories (their `cgroup.procs`) the shim joins first, so
    /// every process of the exec is in them.
    pub cgroups: Vec<PathBuf>,
    /// An allow-list berth's proxy: PID 1 binds its port on the exec's
    /// loopback and hands the listener to berth
    /// ([`crate::egress_handoff`]). Only with [`Network::None`].
    #[serde(default)]
    pub egress: Option<crate::EgressHandoff>,
}

/// Writes `spec` framed: its length in decimal and a newline, then the JSON.
pub fn write_framed(out: &mut impl Write, spec: &impl Serialize) -> Result<(), ConfineError> {
    let json = serde_json::to_vec(spec).map_err(|e| ConfineError::Spec(e.to_string()))?;
    let mut framed = format!("{}\n", json.len()).into_bytes();
    framed.extend_from_slice(&json);
    out.write_all(&framed)
        .map_err(|e| ConfineError::Spec(format!("write: {e}")))
}

/// The framed spec as bytes, for writers that are not `Write` (an async pipe).
pub fn framed(spec: &impl Serialize) -> Result<Vec<u8>, ConfineError> {
    let mut out = Vec::new();
    write_framed(&mut out, spec)?;
    Ok(out)
}

/// Reads one framed spec, byte by byte up to the newline and then exactly
/// its length, so not one byte of the command's input is consumed. `input`
/// must be unbuffered (a `File` on fd 0, not `Stdin`).
pub fn read_framed(input: &mut impl Read) -> Result<ExecSpec, ConfineError> {
    read_framed_as(input)
}

/// [`read_framed`] for any framed value (the resident's spec).
pub fn read_framed_as<T: serde::de::DeserializeOwned>(
    input: &mut impl Read,
) -> Result<T, ConfineError> {
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match input.read(&mut byte) {
            Ok(0) => return Err(ConfineError::Spec("end of input before the length".into())),
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if header.len() < 8 && byte[0].is_ascii_digit() => header.push(byte[0]),
            Ok(_) => return Err(ConfineError::Spec("malformed length line".into())),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(ConfineError::Spec(e.to_string())),
        }
    }
    let len: usize = std::str::from_utf8(&header)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|n| *n <= MAX_SPEC)
        .ok_or_else(|| ConfineError::Spec("length missing or too large".into()))?;
    let mut json = vec![0u8; len];
    input
        .read_exact(&mut json)
        .map_err(|e| ConfineError::Spec(format!("spec body: {e}")))?;
    serde_json::from_slice(&json).map_err(|e| ConfineError::Spec(e.to_string()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn spec() -> ExecSpec {
        ExecSpec {
            parent_pid: 1,
            worktree: "/srv/wt".into(),
            work_read_only: false,
            cwd: "/work".into(),
            writable: vec!["/srv/home".into()],
            readable: vec![],
            private_tmp: None,
            system_dirs: vec![],
            network: Network::None,
            uid: Some(1000),
            gid: Some(1000),
            rlimits: vec![(Rlimit::FileSize, 64 << 20)],
            cgroups: vec![],
            egress: None,
        }
    }

    #[test]
    fn framing_leaves_the_rest_of_the_input() {
        let mut bytes = framed(&spec()).unwrap();
        bytes.extend_from_slice(b"command input");
        let mut reader = std::io::Cursor::new(bytes);
        assert_eq!(read_framed(&mut reader).unwrap(), spec());
        let mut rest = String::new();
        reader.read_to_string(&mut rest).unwrap();
        assert_eq!(rest, "command input");
    }

    #[test]
    fn bad_frames_are_refused() {
        for bad in [&b""[..], b"12", b"x\n{}", b"999999999\n", b"5\n{}"] {
            let err = read_framed(&mut std::io::Cursor::new(bad.to_vec())).unwrap_err();
            assert!(matches!(err, ConfineError::Spec(_)), "{bad:?}: {err}");
        }
    }
}
