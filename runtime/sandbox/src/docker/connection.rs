//! Reaching the Docker engine: once per process, and only when a call needs it.
//!
//! bollard's `negotiate_version()` asks `GET /version`, which costs dockerd
//! about 4.5 ms on every call (it runs `runc --version` and `docker-init
//! --version`) — paid by every `berth exec` process before its command ran.
//! `GET /_ping` answers the same question in its `API-Version` header for
//! about 0.1 ms, so the version is negotiated from there: the lower of the
//! engine's and bollard's, never pinned (a 1.53 client talking to a 1.41
//! daemon with a version prefix gets HTTP 400).
//!
//! [`DockerConnection`] defers even that ping to the first call that needs
//! the engine, so a process that decides an action is pending or refused
//! makes no Docker call at all; a failed connection is not remembered, so a
//! later call retries once the engine is back.

use std::sync::Arc;
use std::time::Duration;

use bollard::{API_DEFAULT_VERSION, ClientVersion, Docker};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::OnceCell;

use super::{ConnectOptions, DockerBackend, DockerError};

/// Bound on the ping's response head: dockerd's is a few hundred bytes.
const MAX_PING_HEAD: usize = 16 * 1024;

/// A Docker client whose API version is negotiated from `/_ping` on
/// `socket` (a unix socket path).
pub(super) async fn negotiated_client(
    socket: &str,
    timeout: Duration,
) -> Result<Docker, DockerError> {
    let unavailable = |source| DockerError::EngineUnavailable {
        socket: socket.to_string(),
        source,
    };
    let secs = timeout.as_secs().max(1);
    let server = tokio::time::timeout(Duration::from_secs(secs), ping_api_version(socket))
        .await
        .map_err(|_| unavailable(bollard::errors::Error::RequestTimeoutError))?
        .map_err(unavailable)?;
    let version = if server < *API_DEFAULT_VERSION {
        server
    } else {
        *API_DEFAULT_VERSION
    };
    Docker::connect_with_unix(socket, secs, &version).map_err(unavailable)
}

/// `GET /_ping` over `socket`: the engine's `API-Version` header.
async fn ping_api_version(socket: &str) -> Result<ClientVersion, bollard::errors::Error> {
    let mut stream = tokio::net::UnixStream::connect(socket).await?;
    stream
        .write_all(b"GET /_ping HTTP/1.1\r\nHost: docker\r\nConnection: close\r\n\r\n")
        .await?;
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_PING_HEAD {
            return Err(bollard::errors::Error::APIVersionParseError {});
        }
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    parse_ping_head(&head)
}

/// The API version of a `/_ping` response head; an error for anything but a
/// 200 with a `major.minor` `API-Version` header.
fn parse_ping_head(head: &[u8]) -> Result<ClientVersion, bollard::errors::Error> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let status = lines.next().unwrap_or_default();
    let code = status.split(' ').nth(1).unwrap_or_default();
    if code != "200" {
        return Err(bollard::errors::Error::DockerResponseServerError {
            status_code: code.parse().unwrap_or(0),
            message: format!("GET /_ping answered `{}`", status.trim()),
        });
    }
    lines
        .take_while(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("api-version"))
        .and_then(|(_, value)| {
            let (major, minor) = value.trim().split_once('.')?;
            Some(ClientVersion {
                major_version: major.parse().ok()?,
                minor_version: minor.parse().ok()?,
            })
        })
        .ok_or(bollard::errors::Error::APIVersionParseError {})
}

/// The engine, connected on first use and then shared: cheap to clone, and
/// every clone shares the one connection.
#[derive(Debug, Clone, Default)]
pub struct DockerConnection {
    options: ConnectOptions,
    backend: Arc<OnceCell<DockerBackend>>,
}

impl DockerConnection {
    /// Connects at the first [`backend`](Self::backend) call, not now.
    pub fn deferred(options: ConnectOptions) -> DockerConnection {
        DockerConnection {
            options,
            backend: Arc::new(OnceCell::new()),
        }
    }

    /// Over an engine already connected.
    pub fn connected(backend: DockerBackend) -> DockerConnection {
        DockerConnection {
            options: ConnectOptions::default(),
            backend: Arc::new(OnceCell::new_with(Some(backend))),
        }
    }

    /// The engine, connecting (and negotiating) when not yet connected.
    pub async fn backend(&self) -> Result<DockerBackend, DockerError> {
        self.backend
            .get_or_try_init(|| DockerBackend::connect_with(self.options.clone()))
            .await
            .cloned()
    }

    /// Whether a connection has been made (tests observe that a decision
    /// alone never contacts the engine).
    pub fn is_connected(&self) -> bool {
        self.backend.initialized()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_ping_head_names_the_api_version() {
        let head = b"HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nDocker-Experimental: false\r\nOstype: linux\r\n\r\n";
        let v = parse_ping_head(head).unwrap();
        assert_eq!((v.major_version, v.minor_version), (1, 41));
        let lower = b"HTTP/1.1 200 OK\r\napi-version:1.53\r\n\r\nOK";
        assert_eq!(parse_ping_head(lower).unwrap().minor_version, 53);
        for bad in [
            &b"HTTP/1.1 200 OK\r\nServer: x\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\nApi-Version: one\r\n\r\n",
            b"HTTP/1.1 500 Internal Server Error\r\nApi-Version: 1.41\r\n\r\n",
            b"",
            // A header after the head's end is the body's, not the head's.
            b"HTTP/1.1 200 OK\r\n\r\nApi-Version: 1.41\r\n",
        ] {
            assert!(
                parse_ping_head(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
