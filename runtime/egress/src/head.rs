//! The head of a request a client sends its proxy: `CONNECT host:port` or a
//! plain-HTTP request in absolute form (`GET http://host/path`). Read
//! strictly — a head berth cannot read is refused, never guessed at — and,
//! for plain HTTP, rewritten to the origin form the server expects, without
//! the `Proxy-*` headers meant for berth.

use tokio::io::{AsyncRead, AsyncReadExt};

/// The longest head berth reads.
pub const MAX_HEAD: usize = 16 * 1024;

/// Where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `CONNECT host:port`: a tunnel (TLS, usually).
    Connect { host: String, port: u16 },
    /// A plain-HTTP request; `path` is its origin form (`/simple/pkg/`).
    Http {
        host: String,
        port: u16,
        path: String,
    },
}

impl Target {
    pub fn host(&self) -> &str {
        match self {
            Target::Connect { host, .. } | Target::Http { host, .. } => host,
        }
    }

    pub fn port(&self) -> u16 {
        match self {
            Target::Connect { port, .. } | Target::Http { port, .. } => *port,
        }
    }
}

/// A request head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    pub method: String,
    pub target: Target,
    pub version: String,
    pub headers: Vec<(String, String)>,
}

/// A head berth will not forward.
#[derive(Debug, thiserror::Error)]
pub enum HeadError {
    #[error("reading the request: {0}")]
    Io(#[from] std::io::Error),
    #[error("the request head is longer than {MAX_HEAD} bytes")]
    TooLong,
    #[error("the connection closed before a request head")]
    Closed,
    #[error("a request berth's proxy does not read: {0}")]
    Malformed(String),
}

/// Reads one head from `r`; returns it and the bytes read past it (a body,
/// or a TLS hello sent early), which belong to the server.
pub async fn read_head<R: AsyncRead + Unpin>(r: &mut R) -> Result<(Head, Vec<u8>), HeadError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = find_end(&buf) {
            let rest = buf.split_off(end);
            return Ok((parse(&buf)?, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(HeadError::TooLong);
        }
        let n = r.read(&mut chunk).await?;
        if n == 0 {
            return Err(HeadError::Closed);
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4)
}

/// Parses a head (ending in an empty line).
pub fn parse(bytes: &[u8]) -> Result<Head, HeadError> {
    let bad = |m: &str| HeadError::Malformed(m.to_string());
    let text = std::str::from_utf8(bytes).map_err(|_| bad("the head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut words = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Err(bad("the request line is not `METHOD TARGET VERSION`"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(bad("only HTTP/1.x is proxied"));
    }
    let mut headers = Vec::new();
    for l in lines.take_while(|l| !l.is_empty()) {
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| bad("a header line without `:`"))?;
        if k.is_empty() || k.contains(char::is_whitespace) {
            return Err(bad("a header name with spaces"));
        }
        headers.push((k.to_string(), v.trim().to_string()));
    }
    let target = if method == "CONNECT" {
        let (host, port) = authority(target)?;
        Target::Connect {
            host,
            port: port.ok_or_else(|| bad("CONNECT needs a port"))?,
        }
    } else {
        let rest = target.strip_prefix("http://").ok_or_else(|| {
            bad("a plain request must name `http://host/…` (use CONNECT for https)")
        })?;
        let (auth, path) = match rest.find(['/', '?']) {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = authority(auth)?;
        let path = if path.starts_with('?') {
            format!("/{path}")
        } else {
            path.to_string()
        };
        Target::Http {
            host,
            port: port.unwrap_or(80),
            path,
        }
    };
    Ok(Head {
        method: method.to_string(),
        target,
        version: version.to_string(),
        headers,
    })
}

/// `host[:port]` or `[v6][:port]`; a user part is refused.
fn authority(a: &str) -> Result<(String, Option<u16>), HeadError> {
    let bad = |m: &str| HeadError::Malformed(format!("{m}: `{a}`"));
    if a.contains('@') {
        return Err(bad("credentials in the address"));
    }
    let (host, port) = if let Some(rest) = a.strip_prefix('[') {
        let (h, after) = rest.split_once(']').ok_or_else(|| bad("an unclosed `[`"))?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match a.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (a.to_string(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(bad("no host"));
    }
    let port = port
        .map(|p| {
            p.parse::<u16>()
                .map_err(|_| bad("a port that is not a number"))
        })
        .transpose()?;
    Ok((host, port))
}

impl Head {
    /// A plain-HTTP request as the server receives it: origin form, the
    /// `Proxy-*` headers dropped, `Host` the host decided on (a client's own
    /// `Host` could name another site served at the same address), and one
    /// request per connection (`Connection: close`), so a second request on
    /// the client's connection cannot ride on this one's decision.
    pub fn origin_request(&self) -> Vec<u8> {
        let Target::Http { host, port, path } = &self.target else {
            return Vec::new();
        };
        let mut out = format!("{} {} {}\r\n", self.method, path, self.version);
        if *port == 80 {
            out.push_str(&format!("Host: {host}\r\n"));
        } else {
            out.push_str(&format!("Host: {host}:{port}\r\n"));
        }
        for (k, v) in &self.headers {
            let lower = k.to_ascii_lowercase();
            if lower.starts_with("proxy-")
                || lower == "connection"
                || lower == "keep-alive"
                || lower == "host"
            {
                continue;
            }
            out.push_str(&format!("{k}: {v}\r\n"));
        }
        out.push_str("Connection: close\r\n\r\n");
        out.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn heads() {
        let h = parse(b"CONNECT registry.npmjs.org:443 HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        assert_eq!(
            h.target,
            Target::Connect {
                host: "registry.npmjs.org".into(),
                port: 443
            }
        );
        let h = parse(b"CONNECT [::1]:8080 HTTP/1.1\r\n\r\n").unwrap();
        assert_eq!(h.target.host(), "[::1]");
        let h = parse(
            b"GET http://pypi.test:8000/simple/?a=1 HTTP/1.1\r\nHost: evil.test\r\nAccept: */*\r\nProxy-Authorization: x\r\nConnection: keep-alive\r\n\r\n",
        )
        .unwrap();
        assert_eq!(
            h.target,
            Target::Http {
                host: "pypi.test".into(),
                port: 8000,
                path: "/simple/?a=1".into()
            }
        );
        let fwd = String::from_utf8(h.origin_request()).unwrap();
        assert_eq!(
            fwd,
            "GET /simple/?a=1 HTTP/1.1\r\nHost: pypi.test:8000\r\nAccept: */*\r\nConnection: close\r\n\r\n",
            "the Host decided on, never the client's"
        );
        for bad in [
            &b"CONNECT host HTTP/1.1\r\n\r\n"[..],
            b"GET /relative HTTP/1.1\r\n\r\n",
            b"GET https://x/ HTTP/1.1\r\n\r\n",
            b"GET http://user@x/ HTTP/1.1\r\n\r\n",
            b"CONNECT x:99999 HTTP/1.1\r\n\r\n",
            b"GET http://x/ HTTP/2\r\n\r\n",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
