//! A real smart-HTTP git server on loopback for the forge-server tests:
//! a tiny HTTP/1.1 server (std only) that hands every request to
//! `git http-backend` as CGI, the reference smart-HTTP implementation, with
//! `GIT_PROJECT_ROOT` set to a directory of bare repositories. It is the
//! server, not berth: running git there is what a real forge does.
//!
//! One request per connection (`Connection: close`), request bodies read
//! whole (`Content-Length` or chunked), responses buffered. A hook can run
//! just before the next push's ref advertisement, or just before the next
//! push reaches receive-pack: how a test makes someone else's update land
//! between berth's fetch and its push, or between the advertisement berth
//! checked and the push itself.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Where Debian installs git's CGI program.
pub const HTTP_BACKEND: &str = "/usr/lib/git-core/git-http-backend";

type Hook = Box<dyn FnOnce() + Send>;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// Before the next `GET …/info/refs?service=git-receive-pack`.
    PushAdvertisement,
    /// Before the next `POST …/git-receive-pack`.
    Receive,
}

type Hooks = Arc<Mutex<Vec<(Moment, Hook)>>>;

/// The server; stops (and refuses connections) when dropped.
pub struct SmartHttpServer {
    root: PathBuf,
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    hooks: Hooks,
}

impl SmartHttpServer {
    /// Serves the bare repositories under `root` on an ephemeral loopback
    /// port.
    pub fn start(root: &Path) -> SmartHttpServer {
        SmartHttpServer::start_at(root, "127.0.0.1:0".parse().unwrap())
    }

    /// [`SmartHttpServer::start`] on `addr` (a stopped server's address
    /// again: the same URL answers once more).
    pub fn start_at(root: &Path, addr: SocketAddr) -> SmartHttpServer {
        let listener = TcpListener::bind(addr).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let hooks: Hooks = Arc::new(Mutex::new(Vec::new()));
        let accept = {
            let (stop, hook, root) = (stop.clone(), hooks.clone(), root.to_path_buf());
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let (hook, root) = (hook.clone(), root.clone());
                    std::thread::spawn(move || {
                        if let Err(e) = serve(conn, &root, &hook) {
                            eprintln!("smart-http test server: {e}");
                        }
                    });
                }
            })
        };
        SmartHttpServer {
            root: root.to_path_buf(),
            addr,
            stop,
            accept: Some(accept),
            hooks,
        }
    }

    /// The URL of repository `name` (a path under the root).
    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// The repository `name` on disk.
    pub fn repo(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Runs `hook` once, at the next `moment`.
    pub fn before_next(&self, moment: Moment, hook: impl FnOnce() + Send + 'static) {
        self.hooks.lock().unwrap().push((moment, Box::new(hook)));
    }

    /// Stops serving: the port refuses connections from now on.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which sees the flag and drops the listener.
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.accept.take() {
            t.join().unwrap();
        }
    }
}

/// berth's fence hook as shipped (`scripts/berth-fence-hook.sh`).
pub fn fence_hook_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .map(|d| d.join("scripts/berth-fence-hook.sh"))
        .find(|p| p.is_file())
        .expect("scripts/berth-fence-hook.sh above the crate")
}

/// Sets the server's bare repository `repo` up as the README says: berth's
/// fence hook as its `pre-receive` and `reference-transaction` hooks, push
/// options advertised.
pub fn install_fence_hook(repo: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let script = fence_hook_script();
    for hook in ["pre-receive", "reference-transaction"] {
        let path = repo.join("hooks").join(hook);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::copy(&script, &path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let status = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["config", "receive.advertisePushOptions", "true"])
        .status()
        .unwrap();
    assert!(status.success());
}

impl Drop for SmartHttpServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(conn: TcpStream, root: &Path, hooks: &Mutex<Vec<(Moment, Hook)>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(conn.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut parts = request_line.split_whitespace();
    let (method, target) = match (parts.next(), parts.next()) {
        (Some(m), Some(t)) => (m.to_owned(), t.to_owned()),
        _ => return Ok(()),
    };
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size)?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(std::io::Error::other)?;
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk)?;
            if size == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..size]);
        }
    } else if let Some(len) = header("content-length") {
        let len: usize = len.parse().map_err(std::io::Error::other)?;
        body.resize(len, 0);
        reader.read_exact(&mut body)?;
    }
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let moment = if method == "POST" && path.ends_with("/git-receive-pack") {
        Some(Moment::Receive)
    } else if path.ends_with("/info/refs") && query.contains("service=git-receive-pack") {
        Some(Moment::PushAdvertisement)
    } else {
        None
    };
    if let Some(moment) = moment {
        let next = {
            let mut hooks = hooks.lock().unwrap();
            let at = hooks.iter().position(|(m, _)| *m == moment);
            at.map(|i| hooks.remove(i).1)
        };
        if let Some(run) = next {
            run();
        }
    }
    let mut cmd = Command::new(HTTP_BACKEND);
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GATEWAY_INTERFACE", "CGI/1.1")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_LENGTH", body.len().to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(ct) = header("content-type") {
        cmd.env("CONTENT_TYPE", ct);
    }
    if let Some(proto) = header("git-protocol") {
        cmd.env("GIT_PROTOCOL", proto);
    }
    if let Some(enc) = header("content-encoding") {
        cmd.env("HTTP_CONTENT_ENCODING", enc);
    }
    let mut child = cmd.spawn()?;
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&body));
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out)?;
    child.wait()?;
    let _ = writer.join();

    // CGI answer: headers, a blank line, the body.
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let (head, body) = match split {
        Some((i, n)) => (
            String::from_utf8_lossy(&out[..i]).into_owned(),
            &out[i + n..],
        ),
        None => (String::new(), &out[..]),
    };
    let mut status = "200 OK".to_owned();
    let mut response = Vec::new();
    let mut kept = String::new();
    for line in head.lines() {
        match line.split_once(':') {
            Some((k, v)) if k.eq_ignore_ascii_case("status") => status = v.trim().to_owned(),
            Some(_) => {
                kept.push_str(line.trim_end());
                kept.push_str("\r\n");
            }
            None => {}
        }
    }
    write!(
        response,
        "HTTP/1.1 {status}\r\n{kept}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )?;
    response.extend_from_slice(body);
    let mut conn = conn;
    conn.write_all(&response)?;
    conn.flush()
}
