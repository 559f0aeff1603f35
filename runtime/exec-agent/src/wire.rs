//! The frames berth and the exec agent exchange over one connection.
//!
//! A frame is a kind byte, a big-endian `u32` length and that many bytes.
//! Every kind has its own bound, checked from the header before anything is
//! buffered, and every payload is parsed totally: a frame that is not exactly
//! one of these is an error, never a guess. berth reads what the container
//! sends as untrusted input (a command of the agent can answer in the
//! agent's place); the agent reads what berth sends the same way.
//!
//! One connection is one exec: berth sends [`ToAgent::Token`] and
//! [`ToAgent::Request`], then stdin ([`ToAgent::Stdin`] …
//! [`ToAgent::StdinEnd`]) and, at its deadline, [`ToAgent::Kill`]. The agent
//! answers with output ([`FromAgent::Stdout`], [`FromAgent::Stderr`]) and one
//! last frame: [`FromAgent::Ended`], or [`FromAgent::Failed`] when the
//! command could not start.
//!
//! Or a connection asks for the egress proxy's listener instead of an exec
//! (a mounted berth whose berth process is not root, so cannot enter the
//! container's network namespace itself): berth sends
//! [`ToAgent::ProxyListener`] first, and the agent answers with no frame at
//! all but one byte carrying the listening socket (`SCM_RIGHTS`), which
//! berth checks before serving it.

use serde::{Deserialize, Serialize};

/// The largest stdin or output chunk in one frame.
pub const MAX_CHUNK: usize = 64 * 1024;
/// The largest request (argv and environment).
pub const MAX_REQUEST: usize = 1 << 20;
/// The largest token: `bx.<boot>.<pid>.<start>.<seq>.a<action>.` fits well
/// within it.
pub const MAX_TOKEN: usize = 200;
/// The largest ending or failure report.
const MAX_REPORT: usize = 4096;
/// Kind byte and length.
const HEADER: usize = 5;

/// A frame that is not one of this protocol's.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    #[error("unknown frame kind {0:#04x}")]
    UnknownKind(u8),
    #[error("frame kind {kind:#04x} of {len} bytes exceeds its bound of {max}")]
    TooLong { kind: u8, len: usize, max: usize },
    #[error("frame kind {kind:#04x} must be empty, got {len} bytes")]
    NotEmpty { kind: u8, len: usize },
    #[error("the token is not of the form berth makes ([A-Za-z0-9._-], 1..={MAX_TOKEN} bytes)")]
    BadToken,
    #[error("frame kind {kind:#04x} does not parse: {message}")]
    BadPayload { kind: u8, message: String },
}

/// What one exec runs: built by berth, read by the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecSpec {
    /// The program and its arguments; never empty.
    pub argv: Vec<String>,
    /// Set on top of the agent's environment (the container's).
    pub env: Vec<(String, String)>,
    /// The working directory, a container path.
    pub cwd: String,
    /// Whether stdin frames follow (else the command reads `/dev/null`).
    pub stdin: bool,
    /// When `argv[0]` is `/bin/sh` and the image has none, this shell (berth's
    /// injected busybox) instead.
    pub fallback_shell: Option<String>,
}

/// How the command ended, after its process group was killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ending {
    /// Its exit code, when it exited.
    pub code: Option<i32>,
    /// The signal that killed it, when one did.
    pub signal: Option<i32>,
    /// The container's memory cgroup killed a process while it ran.
    pub oom: bool,
}

/// Why the command never started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The working directory does not exist (or is no directory).
    MissingCwd,
    /// Anything else: the program could not be started.
    Spawn,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartFailure {
    pub kind: FailureKind,
    pub message: String,
}

/// berth → agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToAgent {
    Token(String),
    Request(ExecSpec),
    Stdin(Vec<u8>),
    StdinEnd,
    Kill,
    /// Bind `127.0.0.1:<port>` here and send the listener back.
    ProxyListener(u16),
}

/// agent → berth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromAgent {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Ended(Ending),
    Failed(StartFailure),
}

/// A direction's frames.
pub trait Frame: Sized {
    /// The bound on a payload of `kind`, or why `kind` is not one.
    fn bound(kind: u8) -> Result<usize, WireError>;
    /// The frame of `kind` with `payload` (within its bound).
    fn parse(kind: u8, payload: &[u8]) -> Result<Self, WireError>;
    /// The bytes on the wire.
    fn encode(&self) -> Vec<u8>;
}

fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER + payload.len());
    out.push(kind);
    // Every payload berth or the agent makes is within a bound far below
    // u32::MAX; a longer one would be cut by the reader's bound anyway.
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes());
    out.extend_from_slice(payload);
    out
}

fn json<T: Serialize>(kind: u8, value: &T) -> Vec<u8> {
    // Serializing these plain structs cannot fail; an empty payload would
    // be refused by the reader.
    frame(kind, &serde_json::to_vec(value).unwrap_or_default())
}

fn from_json<T: for<'de> Deserialize<'de>>(kind: u8, payload: &[u8]) -> Result<T, WireError> {
    serde_json::from_slice(payload).map_err(|e| WireError::BadPayload {
        kind,
        message: e.to_string(),
    })
}

fn empty(kind: u8, payload: &[u8]) -> Result<(), WireError> {
    if payload.is_empty() {
        Ok(())
    } else {
        Err(WireError::NotEmpty {
            kind,
            len: payload.len(),
        })
    }
}

/// Whether `token` is one berth makes: what the agent puts on a command
/// line, so nothing but these characters.
pub fn is_token(token: &str) -> bool {
    !token.is_empty()
        && token.len() <= MAX_TOKEN
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Frame for ToAgent {
    fn bound(kind: u8) -> Result<usize, WireError> {
        match kind {
            b'T' => Ok(MAX_TOKEN),
            b'Q' => Ok(MAX_REQUEST),
            b'I' => Ok(MAX_CHUNK),
            b'E' | b'X' => Ok(0),
            b'P' => Ok(2),
            other => Err(WireError::UnknownKind(other)),
        }
    }

    fn parse(kind: u8, payload: &[u8]) -> Result<Self, WireError> {
        match kind {
            b'T' => {
                let token = std::str::from_utf8(payload).map_err(|_| WireError::BadToken)?;
                if !is_token(token) {
                    return Err(WireError::BadToken);
                }
                Ok(ToAgent::Token(token.to_string()))
            }
            b'Q' => {
                let spec: ExecSpec = from_json(kind, payload)?;
                if spec.argv.is_empty() {
                    return Err(WireError::BadPayload {
                        kind,
                        message: "argv is empty".to_string(),
                    });
                }
                let nul = |s: &String| s.contains('\0');
                if spec.argv.iter().any(nul)
                    || spec
                        .env
                        .iter()
                        .any(|(k, v)| nul(k) || nul(v) || k.contains('='))
                    || nul(&spec.cwd)
                {
                    return Err(WireError::BadPayload {
                        kind,
                        message: "a NUL byte, or `=` in a variable name".to_string(),
                    });
                }
                Ok(ToAgent::Request(spec))
            }
            b'I' => Ok(ToAgent::Stdin(payload.to_vec())),
            b'E' => empty(kind, payload).map(|()| ToAgent::StdinEnd),
            b'X' => empty(kind, payload).map(|()| ToAgent::Kill),
            b'P' => match payload {
                [hi, lo] if u16::from_be_bytes([*hi, *lo]) != 0 => {
                    Ok(ToAgent::ProxyListener(u16::from_be_bytes([*hi, *lo])))
                }
                _ => Err(WireError::BadPayload {
                    kind,
                    message: "a port: two bytes, not zero".to_string(),
                }),
            },
            other => Err(WireError::UnknownKind(other)),
        }
    }

    fn encode(&self) -> Vec<u8> {
        match self {
            ToAgent::Token(t) => frame(b'T', t.as_bytes()),
            ToAgent::Request(spec) => json(b'Q', spec),
            ToAgent::Stdin(bytes) => frame(b'I', bytes),
            ToAgent::StdinEnd => frame(b'E', &[]),
            ToAgent::Kill => frame(b'X', &[]),
            ToAgent::ProxyListener(port) => frame(b'P', &port.to_be_bytes()),
        }
    }
}

impl Frame for FromAgent {
    fn bound(kind: u8) -> Result<usize, WireError> {
        match kind {
            b'O' | b'R' => Ok(MAX_CHUNK),
            b'Z' | b'F' => Ok(MAX_REPORT),
            other => Err(WireError::UnknownKind(other)),
        }
    }

    fn parse(kind: u8, payload: &[u8]) -> Result<Self, WireError> {
        match kind {
            b'O' => Ok(FromAgent::Stdout(payload.to_vec())),
            b'R' => Ok(FromAgent::Stderr(payload.to_vec())),
            b'Z' => {
                let ending: Ending = from_json(kind, payload)?;
                if ending.code.is_some() == ending.signal.is_some() {
                    return Err(WireError::BadPayload {
                        kind,
                        message: "exactly one of code and signal".to_string(),
                    });
                }
                Ok(FromAgent::Ended(ending))
            }
            b'F' => Ok(FromAgent::Failed(from_json(kind, payload)?)),
            other => Err(WireError::UnknownKind(other)),
        }
    }

    fn encode(&self) -> Vec<u8> {
        match self {
            FromAgent::Stdout(bytes) => frame(b'O', bytes),
            FromAgent::Stderr(bytes) => frame(b'R', bytes),
            FromAgent::Ended(ending) => json(b'Z', ending),
            FromAgent::Failed(failure) => json(b'F', failure),
        }
    }
}

/// Frames out of a byte stream: bytes go in as they arrive, whole frames
/// come out. A header over its kind's bound is an error before its payload
/// is buffered, so a peer cannot make the reader hold more than one bounded
/// frame.
#[derive(Debug, Default)]
pub struct Decoder {
    buffer: Vec<u8>,
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Appends bytes read from the peer.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// Bytes received but not yet a whole frame.
    pub fn pending(&self) -> usize {
        self.buffer.len()
    }

    /// The next whole frame, `None` until one has arrived.
    pub fn next_frame<F: Frame>(&mut self) -> Result<Option<F>, WireError> {
        if self.buffer.len() < HEADER {
            return Ok(None);
        }
        let kind = self.buffer[0];
        let len = u32::from_be_bytes([
            self.buffer[1],
            self.buffer[2],
            self.buffer[3],
            self.buffer[4],
        ]) as usize;
        let max = F::bound(kind)?;
        if len > max {
            return Err(WireError::TooLong { kind, len, max });
        }
        if self.buffer.len() < HEADER + len {
            return Ok(None);
        }
        let parsed = F::parse(kind, &self.buffer[HEADER..HEADER + len]);
        self.buffer.drain(..HEADER + len);
        parsed.map(Some)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn round_trip<F: Frame + PartialEq + std::fmt::Debug>(frames: Vec<F>) {
        let bytes: Vec<u8> = frames.iter().flat_map(Frame::encode).collect();
        // Byte by byte: no frame comes out before it is whole.
        let mut d = Decoder::new();
        let mut out = Vec::new();
        for b in bytes {
            d.push(&[b]);
            while let Some(f) = d.next_frame::<F>().unwrap() {
                out.push(f);
            }
        }
        assert_eq!(out, frames);
        assert_eq!(d.pending(), 0);
    }

    #[test]
    fn every_frame_round_trips() {
        round_trip(vec![
            ToAgent::Token("bx.abc.12.34.0.a7.".to_string()),
            ToAgent::Request(ExecSpec {
                argv: vec!["/bin/sh".into(), "-c".into(), "echo hi".into()],
                env: vec![("A".into(), "b=c".into())],
                cwd: "/work".into(),
                stdin: true,
                fallback_shell: Some("/opt/berth/bin/sh".into()),
            }),
            ToAgent::Stdin(b"data".to_vec()),
            ToAgent::Stdin(Vec::new()),
            ToAgent::StdinEnd,
            ToAgent::Kill,
            ToAgent::ProxyListener(3128),
        ]);
        round_trip(vec![
            FromAgent::Stdout(b"out".to_vec()),
            FromAgent::Stderr(vec![0, 255, 10]),
            FromAgent::Ended(Ending {
                code: Some(3),
                signal: None,
                oom: true,
            }),
            FromAgent::Failed(StartFailure {
                kind: FailureKind::MissingCwd,
                message: "no /work/x".into(),
            }),
        ]);
    }

    fn decode_one<F: Frame>(bytes: &[u8]) -> Result<Option<F>, WireError> {
        let mut d = Decoder::new();
        d.push(bytes);
        d.next_frame::<F>()
    }

    #[test]
    fn what_is_not_a_frame_of_the_protocol_is_an_error() {
        let cases: Vec<(&str, Vec<u8>, WireError)> = vec![
            (
                "unknown kind",
                frame(b'?', b""),
                WireError::UnknownKind(b'?'),
            ),
            (
                "an agent frame sent to the agent",
                frame(b'O', b"x"),
                WireError::UnknownKind(b'O'),
            ),
            (
                "over the bound, refused from the header alone",
                {
                    let mut h = vec![b'I'];
                    h.extend_from_slice(&u32::MAX.to_be_bytes());
                    h
                },
                WireError::TooLong {
                    kind: b'I',
                    len: u32::MAX as usize,
                    max: MAX_CHUNK,
                },
            ),
            (
                "kill with a payload",
                frame(b'X', b"x"),
                WireError::TooLong {
                    kind: b'X',
                    len: 1,
                    max: 0,
                },
            ),
            (
                "a token with a space",
                frame(b'T', b"bx 1"),
                WireError::BadToken,
            ),
            ("an empty token", frame(b'T', b""), WireError::BadToken),
            (
                "a proxy port of three bytes",
                frame(b'P', b"abc"),
                WireError::TooLong {
                    kind: b'P',
                    len: 3,
                    max: 2,
                },
            ),
            (
                "a token not UTF-8",
                frame(b'T', &[0xff]),
                WireError::BadToken,
            ),
        ];
        for (what, bytes, want) in cases {
            assert_eq!(decode_one::<ToAgent>(&bytes).unwrap_err(), want, "{what}");
        }
        for payload in [&b"\0\0"[..], b"\x0c"] {
            assert!(
                matches!(
                    decode_one::<ToAgent>(&frame(b'P', payload)),
                    Err(WireError::BadPayload { kind: b'P', .. })
                ),
                "{payload:?}"
            );
        }
        for (what, payload) in [
            ("not JSON", &b"{"[..]),
            ("unknown field", br#"{"argv":["a"],"env":[],"cwd":"/work","stdin":false,"fallback_shell":null,"x":1}"#),
            ("empty argv", br#"{"argv":[],"env":[],"cwd":"/work","stdin":false,"fallback_shell":null}"#),
            ("NUL in argv", br#"{"argv":["a\u0000b"],"env":[],"cwd":"/work","stdin":false,"fallback_shell":null}"#),
            ("= in a name", br#"{"argv":["a"],"env":[["A=B","c"]],"cwd":"/work","stdin":false,"fallback_shell":null}"#),
        ] {
            assert!(
                matches!(
                    decode_one::<ToAgent>(&frame(b'Q', payload)),
                    Err(WireError::BadPayload { kind: b'Q', .. })
                ),
                "{what}"
            );
        }
        for (what, payload) in [
            (
                "both code and signal",
                &br#"{"code":1,"signal":9,"oom":false}"#[..],
            ),
            ("neither", br#"{"code":null,"signal":null,"oom":false}"#),
            ("missing oom", br#"{"code":1,"signal":null}"#),
        ] {
            assert!(
                matches!(
                    decode_one::<FromAgent>(&frame(b'Z', payload)),
                    Err(WireError::BadPayload { kind: b'Z', .. })
                ),
                "{what}"
            );
        }
        assert!(matches!(
            decode_one::<FromAgent>(&frame(b'T', b"bx")),
            Err(WireError::UnknownKind(b'T'))
        ));
    }

    #[test]
    fn tokens_are_what_a_command_line_can_carry() {
        assert!(is_token("bx.0123abcd.42.999.7.aAct01."));
        for bad in ["", "a b", "a;b", "a\nb", "$(x)", &"a".repeat(MAX_TOKEN + 1)] {
            assert!(!is_token(bad), "{bad:?}");
        }
    }
}
