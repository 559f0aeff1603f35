//! A TLS front for the tests' loopback forge server (`https://` forges):
//! a CA and a certificate for 127.0.0.1 of the test's own, made by
//! `openssl`, and Python's `ssl` module forwarding each connection to the
//! plain-HTTP server. Shared by the CLI tests and the workers' tests.
//! Two paths answer a redirect instead: `/moved.git/…` to `/app.git/…` on
//! the same front, `/downgrade.git/…` to plain `http://` on the backend.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A TLS front for a loopback HTTP server: Python's `ssl` module with a
/// certificate for 127.0.0.1 signed by a CA of the test's own (both made by
/// `openssl`), every connection forwarded to `backend`. Killed when
/// dropped.
pub struct TlsFront {
    child: Child,
    pub port: u16,
    /// The CA's certificate, what a host must trust.
    pub ca: std::path::PathBuf,
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const TLS_FORWARDER: &str = r#"
import socket, ssl, sys, threading
cert, key, backend = sys.argv[1], sys.argv[2], int(sys.argv[3])
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(64)
print(ls.getsockname()[1], flush=True)
def pump(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass
def serve(c):
    try:
        t = ctx.wrap_socket(c, server_side=True)
    except (ssl.SSLError, OSError):
        c.close()
        return
    # A repository that moved: /moved.git/ redirects to /app.git/ on this
    # server, /downgrade.git/ to plain http:// on the backend.
    try:
        head = t.recv(65536)
    except (ssl.SSLError, OSError):
        t.close()
        return
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    for old, new in (("/moved.git/", "/app.git/"),
                     ("/downgrade.git/", "http://127.0.0.1:%d/app.git/" % backend)):
        if line.startswith("GET " + old):
            path = line.split(" ")[1]
            where = new + path[len(old):] if new.startswith("http") else path.replace(old, new, 1)
            t.sendall(("HTTP/1.1 301 Moved\r\nLocation: %s\r\nContent-Length: 0\r\n"
                       "Connection: close\r\n\r\n" % where).encode())
            t.close()
            return
    u = socket.create_connection(("127.0.0.1", backend))
    u.sendall(head)
    threading.Thread(target=pump, args=(t, u), daemon=True).start()
    pump(u, t)
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
"#;

fn openssl(dir: &Path, args: &[&str]) {
    let made = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stderr(Stdio::null())
        .status()
        .expect("openssl (scripts/test.sh installs it)");
    assert!(made.success(), "openssl {args:?}");
}

impl TlsFront {
    /// The `https://` URL of `repo` on the server behind this front.
    pub fn url(&self, repo: &str) -> String {
        format!("https://127.0.0.1:{}/{repo}", self.port)
    }

    pub fn start(dir: &Path, backend: u16) -> TlsFront {
        let dir = dir.join("tls");
        std::fs::create_dir_all(&dir).unwrap();
        let ec = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
        let ca =
            format!("req -x509 {ec} -days 2 -subj /CN=berth-test-ca -keyout ca.key -out ca.pem");
        openssl(&dir, &ca.split(' ').collect::<Vec<_>>());
        let leaf = format!("req {ec} -subj /CN=127.0.0.1 -keyout key.pem -out leaf.csr");
        openssl(&dir, &leaf.split(' ').collect::<Vec<_>>());
        std::fs::write(
            dir.join("leaf.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(
            &dir,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-extfile",
                "leaf.ext",
                "-out",
                "cert.pem",
            ],
        );
        let mut child = Command::new("python3")
            .args(["-c", TLS_FORWARDER])
            .arg(dir.join("cert.pem"))
            .arg(dir.join("key.pem"))
            .arg(backend.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap();
        TlsFront {
            child,
            port,
            ca: dir.join("ca.pem"),
        }
    }
}
