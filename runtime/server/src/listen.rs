//! Where the server listens, and the secret that guards TCP.
//!
//! The default is a unix socket in the state directory, mode 0600: the
//! filesystem is the access control, so no token is needed. TCP is for a
//! browser, which cannot open a unix socket: it is loopback only unless the
//! person forces otherwise, and every request carries a bearer token (or
//! the session cookie the page gets by exchanging that token), read from a
//! file in the state directory created with mode 0600. A TCP server may
//! answer on the state's socket as well (`Options::state_socket`), with the
//! socket's access, so a shell's `berth exec` reaches it.
//!
//! The socket's mode lets in every process of berth's uid, and a runner
//! berth's commands may run as that uid: each peer is identified when it is
//! accepted (`SO_PEERCRED`), and one inside a berth exec's cgroup is refused.

use std::io::{Read as _, Write as _};
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use axum::extract::Request;
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use axum::serve::IncomingStream;

use crate::error::{ApiError, ServeError};

/// Where to listen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listen {
    /// A unix socket at this path.
    Unix(PathBuf),
    /// A TCP address (port 0: any free port).
    Tcp(SocketAddr),
}

impl Listen {
    /// Parses `unix:PATH`, `HOST:PORT` (`localhost:PORT` is 127.0.0.1), or
    /// `[V6]:PORT`.
    pub fn parse(value: &str) -> Result<Listen, ServeError> {
        let bad = |why: &str| ServeError::BadListen {
            value: value.to_string(),
            why: why.to_string(),
        };
        if let Some(path) = value.strip_prefix("unix:") {
            if path.is_empty() {
                return Err(bad("give the socket's path after `unix:`"));
            }
            return Ok(Listen::Unix(PathBuf::from(path)));
        }
        if let Some(port) = value.strip_prefix("localhost:") {
            let port: u16 = port
                .parse()
                .map_err(|_| bad("the port must be a number from 0 to 65535"))?;
            return Ok(Listen::Tcp(SocketAddr::from(([127, 0, 0, 1], port))));
        }
        value.parse::<SocketAddr>().map(Listen::Tcp).map_err(|_| {
            bad("use 127.0.0.1:PORT (port 0 picks a free one), [::1]:PORT, or unix:PATH")
        })
    }

    /// Fails unless the address is loopback or the person forced it.
    pub fn check_loopback(&self, allow_non_loopback: bool) -> Result<(), ServeError> {
        match self {
            Listen::Tcp(addr) if !is_loopback(addr.ip()) && !allow_non_loopback => {
                Err(ServeError::NonLoopback {
                    addr: addr.to_string(),
                })
            }
            _ => Ok(()),
        }
    }
}

fn is_loopback(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => v4.is_loopback(),
        IpAddr::V6(v6) => {
            v6.is_loopback() || v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
    }
}

/// Binds the unix socket at `path`, mode 0600, with no moment at which
/// anyone else could connect: it is bound inside a fresh directory only we
/// can enter, narrowed, then renamed into place. A socket file left by a
/// server that died is replaced; one that still answers is not.
pub(crate) fn bind_unix(path: &Path) -> Result<tokio::net::UnixListener, ServeError> {
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(ServeError::SocketInUse {
                path: path.to_path_buf(),
            });
        }
        std::fs::remove_file(path).map_err(ServeError::io("removing the stale socket", path))?;
    }
    let parent = path.parent().unwrap_or(Path::new("."));
    let private = parent.join(format!(".berth-sock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&private);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&private)
        .map_err(ServeError::io("creating", &private))?;
    let tmp = private.join("s");
    let bound = (|| {
        let std_listener =
            std::os::unix::net::UnixListener::bind(&tmp).map_err(|source| ServeError::Bind {
                addr: tmp.display().to_string(),
                source,
            })?;
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
            .map_err(ServeError::io("narrowing the socket's mode", &tmp))?;
        std::fs::rename(&tmp, path).map_err(ServeError::io("moving the socket to", path))?;
        std_listener
            .set_nonblocking(true)
            .map_err(ServeError::io("configuring", path))?;
        tokio::net::UnixListener::from_std(std_listener)
            .map_err(ServeError::io("listening on", path))
    })();
    let _ = std::fs::remove_dir_all(&private);
    bound
}

/// The peer of a unix-socket connection, judged when it is accepted.
#[derive(Debug, Clone)]
pub(crate) struct UnixPeer {
    /// Why this peer may not use the socket; `None` lets it in.
    refused: Option<String>,
}

impl Connected<IncomingStream<'_, tokio::net::UnixListener>> for UnixPeer {
    fn connect_info(stream: IncomingStream<'_, tokio::net::UnixListener>) -> Self {
        let pid = stream.io().peer_cred().ok().and_then(|c| c.pid());
        UnixPeer {
            refused: peer_refusal(pid),
        }
    }
}

/// Why the process `pid` (from `SO_PEERCRED`) may not use the socket: it is
/// a command berth confines (its `/proc/<pid>/cgroup` lies under `berth/`),
/// or it cannot be told apart from one (fail closed).
fn peer_refusal(pid: Option<i32>) -> Option<String> {
    let Some(pid) = pid.filter(|p| *p > 0) else {
        return Some(
            "the peer's process is not visible to berth serve (no pid from SO_PEERCRED: another PID namespace?), so it cannot be told apart from a command berth runs".into(),
        );
    };
    let path = format!("/proc/{pid}/cgroup");
    match std::fs::read_to_string(&path) {
        Ok(text) => berth_engine::confinement::exec_cgroup_in(&text).map(|cgroup| {
            format!(
                "process {pid} is a command running inside a berth (cgroup {cgroup}): berth serve does not answer the commands it confines; use the berth CLI or API from outside the berth"
            )
        }),
        Err(e) => Some(format!(
            "cannot read {path} ({e}), so process {pid} cannot be told apart from a command berth runs"
        )),
    }
}

/// In front of every route on the unix socket: a peer judged at accept as
/// a berth's command gets 403 with the reason, and the refusal is logged.
pub(crate) async fn refuse_berth_execs(req: Request, next: Next) -> Response {
    let refused = match req.extensions().get::<ConnectInfo<UnixPeer>>() {
        Some(ConnectInfo(peer)) => peer.refused.clone(),
        None => Some("the peer of this connection was not identified".into()),
    };
    match refused {
        Some(why) => {
            tracing::warn!(method = %req.method(), path = %req.uri().path(), "refused a peer on the unix socket: {why}");
            ApiError::new(StatusCode::FORBIDDEN, "peer_in_berth", why).into_response()
        }
        None => next.run(req).await,
    }
}

pub(crate) async fn bind_tcp(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: addr.to_string(),
            source,
        })
}

/// The API token's length in hex characters (32 random bytes).
const TOKEN_HEX: usize = 64;

/// The token in `path`: created on first use (mode 0600, 32 random bytes as
/// hex), refused if others can read it.
pub fn load_or_create_token(path: &Path) -> Result<String, ServeError> {
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut f) => {
            let token = random_hex(32, path)?;
            f.write_all(format!("{token}\n").as_bytes())
                .and_then(|_| f.sync_all())
                .map_err(ServeError::io("writing the API token to", path))?;
            tracing::info!(path = %path.display(), "generated a new API token");
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let meta =
                std::fs::metadata(path).map_err(ServeError::io("reading the API token", path))?;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(ServeError::TokenExposed {
                    path: path.to_path_buf(),
                    mode,
                });
            }
            let text = std::fs::read_to_string(path)
                .map_err(ServeError::io("reading the API token", path))?;
            let token = text.trim().to_string();
            if token.len() < 32 || !token.bytes().all(|b| b.is_ascii_graphic()) {
                return Err(ServeError::TokenMalformed {
                    path: path.to_path_buf(),
                    why: "expected at least 32 printable characters".into(),
                });
            }
            Ok(token)
        }
        Err(e) => Err(ServeError::io("creating the API token", path)(e)),
    }
}

/// `n` bytes from the kernel's generator, as lowercase hex.
pub(crate) fn random_hex(n: usize, context: &Path) -> Result<String, ServeError> {
    let mut buf = vec![0u8; n];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(ServeError::io("reading random bytes for", context))?;
    let mut s = String::with_capacity(n * 2);
    for b in buf {
        s.push_str(&format!("{b:02x}"));
    }
    debug_assert!(n != 32 || s.len() == TOKEN_HEX);
    Ok(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn listen_addresses_parse_and_loopback_is_required() {
        let cases: &[(&str, Result<Listen, &str>, bool)] = &[
            (
                "127.0.0.1:0",
                Ok(Listen::Tcp("127.0.0.1:0".parse().unwrap())),
                true,
            ),
            (
                "localhost:8080",
                Ok(Listen::Tcp("127.0.0.1:8080".parse().unwrap())),
                true,
            ),
            ("[::1]:9", Ok(Listen::Tcp("[::1]:9".parse().unwrap())), true),
            (
                "unix:/tmp/x.sock",
                Ok(Listen::Unix("/tmp/x.sock".into())),
                true,
            ),
            (
                "0.0.0.0:8080",
                Ok(Listen::Tcp("0.0.0.0:8080".parse().unwrap())),
                false,
            ),
            (
                "192.168.1.4:80",
                Ok(Listen::Tcp("192.168.1.4:80".parse().unwrap())),
                false,
            ),
            (
                "[::]:80",
                Ok(Listen::Tcp("[::]:80".parse().unwrap())),
                false,
            ),
            ("unix:", Err("give the socket's path"), true),
            ("localhost:http", Err("the port must be a number"), true),
            ("example.com:80", Err("use 127.0.0.1:PORT"), true),
        ];
        for (value, want, loopback) in cases {
            let got = Listen::parse(value);
            match (want, &got) {
                (Ok(w), Ok(g)) => {
                    assert_eq!(g, w, "{value}");
                    assert_eq!(g.check_loopback(false).is_ok(), *loopback, "{value}");
                    assert!(g.check_loopback(true).is_ok(), "{value} forced");
                }
                (Err(w), Err(e)) => assert!(e.to_string().contains(w), "{value}: {e}"),
                _ => panic!("{value}: got {got:?}"),
            }
        }
        let refused = Listen::parse("0.0.0.0:1").unwrap().check_loopback(false);
        let msg = refused.unwrap_err().to_string();
        assert!(
            msg.contains("not a loopback address") && msg.contains("--allow-non-loopback"),
            "{msg}"
        );
    }

    #[test]
    fn the_token_is_created_private_reused_and_refused_when_exposed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("api-token");
        let first = load_or_create_token(&path).unwrap();
        assert_eq!(first.len(), TOKEN_HEX);
        assert!(first.bytes().all(|b| b.is_ascii_hexdigit()));
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(load_or_create_token(&path).unwrap(), first, "reused");

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = load_or_create_token(&path).unwrap_err().to_string();
        assert!(
            err.contains("readable by others") && err.contains("chmod 600"),
            "{err}"
        );

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(&path, "short\n").unwrap();
        let err = load_or_create_token(&path).unwrap_err().to_string();
        assert!(
            err.contains("malformed") && err.contains("delete it"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn the_socket_is_private_and_a_live_one_is_not_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("berth.sock");
        let listener = bind_unix(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Nothing left behind but the socket.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names, vec!["berth.sock".to_string()]);

        let err = bind_unix(&path).unwrap_err().to_string();
        assert!(err.contains("already answers"), "{err}");

        // A server that died leaves its socket: the next one replaces it.
        drop(listener);
        let again = bind_unix(&path);
        assert!(again.is_ok(), "{:?}", again.err());
    }
}
