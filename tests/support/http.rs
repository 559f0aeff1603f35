//! A small blocking HTTP/1.1 client over a unix socket or TCP, for tests
//! and the API benchmark: it writes requests byte for byte (so a test can
//! send malformed JSON, an oversized body or a wrong header), keeps a
//! connection alive when asked, and reads server-sent events.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

/// Where a server listens.
#[derive(Debug, Clone)]
pub enum Target {
    Unix(PathBuf),
    Tcp(SocketAddr),
}

impl Target {
    /// Parses the address `berth serve` prints (`unix:PATH`, `http://ADDR`).
    pub fn parse(printed: &str) -> Target {
        if let Some(p) = printed.strip_prefix("unix:") {
            Target::Unix(PathBuf::from(p))
        } else {
            Target::Tcp(
                printed
                    .trim_start_matches("http://")
                    .parse()
                    .unwrap_or_else(|_| panic!("not an address: {printed}")),
            )
        }
    }

    pub fn host(&self) -> String {
        match self {
            Target::Unix(_) => "berth".into(),
            Target::Tcp(a) => a.to_string(),
        }
    }

    pub fn connect(&self) -> Stream {
        match self {
            Target::Unix(p) => Stream::Unix(UnixStream::connect(p).unwrap()),
            Target::Tcp(a) => {
                let s = TcpStream::connect(a).unwrap();
                s.set_nodelay(true).unwrap();
                Stream::Tcp(s)
            }
        }
    }
}

pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn try_clone(&self) -> Stream {
        match self {
            Stream::Unix(s) => Stream::Unix(s.try_clone().unwrap()),
            Stream::Tcp(s) => Stream::Tcp(s.try_clone().unwrap()),
        }
    }

    pub fn set_read_timeout(&self, d: Option<Duration>) {
        match self {
            Stream::Unix(s) => s.set_read_timeout(d).unwrap(),
            Stream::Tcp(s) => s.set_read_timeout(d).unwrap(),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
        }
    }
}

/// An answer.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "status {}: not JSON ({e}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// One request, as bytes.
pub fn encode(
    method: &str,
    path: &str,
    host: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    keep_alive: bool,
) -> Vec<u8> {
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {host}\r\n"));
    }
    if !keep_alive {
        head.push_str("Connection: close\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    if let Some(b) = body {
        out.extend_from_slice(b);
    }
    out
}

/// Reads one response's status line and headers.
fn read_head<R: BufRead>(r: &mut R) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .unwrap_or_else(|| panic!("no status line: {line:?}"))
        .parse()
        .unwrap();
    let mut headers = Vec::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':').unwrap();
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    (status, headers)
}

fn find<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

/// Reads one chunk of a chunked body (`None` at the last, empty one).
fn read_chunk<R: BufRead>(r: &mut R) -> std::io::Result<Option<Vec<u8>>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
        .unwrap_or_else(|_| panic!("bad chunk size {line:?}"));
    if size == 0 {
        let mut end = String::new();
        r.read_line(&mut end)?;
        return Ok(None);
    }
    let mut buf = vec![0; size];
    r.read_exact(&mut buf)?;
    let mut crlf = [0u8; 2];
    r.read_exact(&mut crlf)?;
    Ok(Some(buf))
}

/// Reads one whole response.
fn read_response<R: BufRead>(r: &mut R) -> Response {
    let (status, headers) = read_head(r);
    let body = if let Some(n) = find(&headers, "content-length") {
        let mut b = vec![0; n.parse().unwrap()];
        r.read_exact(&mut b).unwrap();
        b
    } else if find(&headers, "transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        let mut b = Vec::new();
        while let Some(c) = read_chunk(r).unwrap() {
            b.extend(c);
        }
        b
    } else {
        let mut b = Vec::new();
        r.read_to_end(&mut b).unwrap();
        b
    };
    Response {
        status,
        headers,
        body,
    }
}

/// Sends one request on a new connection and reads the answer. The body is
/// written from another thread, so a server that answers before reading
/// all of it (413) is still heard.
pub fn send(target: &Target, raw: Vec<u8>) -> Response {
    let stream = target.connect();
    let mut writer = stream.try_clone();
    let w = std::thread::spawn(move || {
        // A server that refused the body may close before it is all sent.
        let _ = writer.write_all(&raw);
        let _ = writer.flush();
    });
    let mut r = BufReader::new(stream);
    let resp = read_response(&mut r);
    let _ = w.join();
    resp
}

/// A client with optional credentials.
#[derive(Debug, Clone)]
pub struct Client {
    pub target: Target,
    pub token: Option<String>,
}

impl Client {
    pub fn new(target: Target, token: Option<String>) -> Client {
        Client { target, token }
    }

    fn auth(&self) -> Option<String> {
        self.token.as_ref().map(|t| format!("Bearer {t}"))
    }

    /// A request with these extra headers and raw body.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&[u8]>,
    ) -> Response {
        let auth = self.auth();
        let mut h: Vec<(&str, &str)> = headers.to_vec();
        if let Some(a) = &auth
            && !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("authorization"))
        {
            h.push(("Authorization", a));
        }
        send(
            &self.target,
            encode(method, path, &self.target.host(), &h, body, false),
        )
    }

    /// A JSON request (no body when `None`).
    pub fn call(&self, method: &str, path: &str, body: Option<&serde_json::Value>) -> Response {
        match body {
            Some(b) => {
                let bytes = serde_json::to_vec(b).unwrap();
                self.raw(
                    method,
                    path,
                    &[("Content-Type", "application/json")],
                    Some(&bytes),
                )
            }
            None => self.raw(method, path, &[], None),
        }
    }

    /// A kept-alive connection for many requests (the benchmark).
    pub fn keep_alive(&self) -> Conn {
        let s = self.target.connect();
        Conn {
            reader: BufReader::new(s.try_clone()),
            writer: s,
            host: self.target.host(),
            auth: self.auth(),
        }
    }

    /// Opens a server-sent-events stream.
    pub fn events(&self, path: &str, headers: &[(&str, &str)]) -> Events {
        let mut s = self.target.connect();
        let auth = self.auth();
        let mut h: Vec<(&str, &str)> = headers.to_vec();
        if let Some(a) = &auth {
            h.push(("Authorization", a));
        }
        h.push(("Accept", "text/event-stream"));
        s.write_all(&encode("GET", path, &self.target.host(), &h, None, false))
            .unwrap();
        let mut reader = BufReader::new(s);
        let (status, headers) = read_head(&mut reader);
        Events {
            status,
            headers,
            reader,
            pending: String::new(),
        }
    }
}

/// A kept-alive connection.
pub struct Conn {
    reader: BufReader<Stream>,
    writer: Stream,
    host: String,
    auth: Option<String>,
}

impl Conn {
    pub fn call(&mut self, method: &str, path: &str, body: &[u8]) -> Response {
        let mut h = vec![("Content-Type", "application/json")];
        if let Some(a) = &self.auth {
            h.push(("Authorization", a.as_str()));
        }
        self.writer
            .write_all(&encode(method, path, &self.host, &h, Some(body), true))
            .unwrap();
        read_response(&mut self.reader)
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// A server-sent-events stream being read.
pub struct Events {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    reader: BufReader<Stream>,
    pending: String,
}

impl Events {
    /// The next event (comments skipped), or `None` when the stream ended
    /// or nothing came within `timeout`.
    pub fn next(&mut self, timeout: Duration) -> Option<SseEvent> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..end + 2).collect();
                let mut ev = SseEvent {
                    id: None,
                    event: None,
                    data: String::new(),
                };
                let mut any = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        ev.id = Some(v.trim().to_string());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("event:") {
                        ev.event = Some(v.trim().to_string());
                        any = true;
                    } else if let Some(v) = line.strip_prefix("data:") {
                        if !ev.data.is_empty() {
                            ev.data.push('\n');
                        }
                        ev.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                        any = true;
                    }
                }
                if any {
                    return Some(ev);
                }
                continue;
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return None;
            }
            self.reader.get_ref().set_read_timeout(Some(left));
            match read_chunk(&mut self.reader) {
                Ok(Some(c)) => self.pending.push_str(&String::from_utf8_lossy(&c)),
                Ok(None) => return None,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return None;
                }
                Err(e) => panic!("reading the event stream: {e}"),
            }
        }
    }

    /// Whether the server ended the stream within `timeout`.
    pub fn ended(&mut self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return false;
            }
            self.reader.get_ref().set_read_timeout(Some(left));
            match read_chunk(&mut self.reader) {
                Ok(None) => return true,
                Ok(Some(_)) => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    return false;
                }
                Err(_) => return true,
            }
        }
    }
}
