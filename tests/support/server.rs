//! A real state directory with a real project, and `berth serve` as a real
//! process over it. The server is stopped with SIGTERM (graceful) or, when a
//! test fails, killed by the guard's drop.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::http::{Client, Target};

pub const BERTH: &str = env!("CARGO_BIN_EXE_berth");

/// A temporary state directory with project `demo` imported from a git
/// repository made with the git CLI (tests may; berth never does).
pub struct State {
    pub dir: tempfile::TempDir,
    /// Set for every `berth` this state runs (the CLI and `serve`).
    pub env: Vec<(String, String)>,
}

impl Drop for State {
    /// A berth left up keeps its own disk mounted in the state directory
    /// (berth as root): it goes before the directory does, failed or not.
    fn drop(&mut self) {
        berth_engine::release_disks_under(&self.root());
    }
}

impl State {
    pub fn new() -> State {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        git(&src, &["init", "-q", "-b", "main"]);
        std::fs::write(src.join("a.txt"), "a\n").unwrap();
        git(&src, &["add", "a.txt"]);
        git(&src, &["commit", "-q", "-m", "init"]);
        let s = State {
            dir,
            env: Vec::new(),
        };
        s.ok(&["init"]);
        s
    }

    /// With project `demo` added by the CLI.
    pub fn with_project() -> State {
        let s = State::new();
        let src = s.source();
        s.ok(&["project", "add", "demo", "--from", src.to_str().unwrap()]);
        // Runner berths: the server's tests are not about containers
        // (tests/mounted.rs is).
        let cfg = s.root().join("projects/demo/berth.toml");
        let text = std::fs::read_to_string(&cfg).unwrap();
        assert!(text.contains("\nmode = \"auto\"\n"), "{text}");
        // The runner has no confinement of its own yet: auto mode on these
        // runner berths is accepted (`a_runner_berth_says_what_auto_mode_lifts`
        // turns it back off).
        std::fs::write(
            &cfg,
            text.replace("\nmode = \"auto\"\n", "\nmode = \"runner\"\n")
                .replacen("allow_unconfined = false", "allow_unconfined = true", 1),
        )
        .unwrap();
        s
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn source(&self) -> PathBuf {
        self.dir.path().join("src")
    }

    /// Runs the CLI: another process on the same store.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(BERTH)
            .args(args)
            .envs(self.env.iter().cloned())
            .env("BERTH_HOME", self.root())
            .env("USER", "ada")
            .output()
            .unwrap()
    }

    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.status.success(),
            "berth {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn token(&self) -> String {
        std::fs::read_to_string(self.root().join("api-token"))
            .unwrap()
            .trim()
            .to_string()
    }
}

pub fn git(dir: &Path, args: &[&str]) {
    let st = Command::new("git")
        .args(["-c", "user.name=Ada", "-c", "user.email=ada@example.com"])
        .args(args)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success());
}

/// A running `berth serve`.
pub struct Served {
    child: Option<Child>,
    pub target: Target,
    pub stderr: PathBuf,
    pub stdout_rest: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

impl Served {
    /// Starts `berth serve ARGS` on `state` and waits for the line that
    /// says where it listens.
    pub fn start(state: &State, args: &[&str]) -> Served {
        let stderr = state.dir.path().join(format!(
            "serve-{}.err",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let mut child = Command::new(BERTH)
            .arg("serve")
            .args(args)
            .envs(state.env.iter().cloned())
            .env("BERTH_HOME", state.root())
            .env("USER", "ada")
            .env("BERTH_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut lines = BufReader::new(stdout).lines();
        let first = match lines.next() {
            Some(Ok(l)) => l,
            _ => {
                let st = child.wait().unwrap();
                panic!(
                    "berth serve exited ({st}) before listening: {}",
                    std::fs::read_to_string(&stderr).unwrap_or_default()
                );
            }
        };
        let addr = first
            .strip_prefix("berth serve: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line: {first}"));
        let target = Target::parse(addr);
        let rest = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = rest.clone();
        std::thread::spawn(move || {
            for l in lines.map_while(Result::ok) {
                sink.lock().unwrap().push(l);
            }
        });
        Served {
            child: Some(child),
            target,
            stderr,
            stdout_rest: rest,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// A client with the state's token when serving TCP.
    pub fn client(&self, state: &State) -> Client {
        match self.target {
            Target::Unix(_) => Client::new(self.target.clone(), None),
            Target::Tcp(_) => Client::new(self.target.clone(), Some(state.token())),
        }
    }

    /// SIGTERM, then waits; returns the exit code and how long it took.
    pub fn stop(mut self) -> (Option<i32>, Duration) {
        let mut child = self.child.take().unwrap();
        let t = Instant::now();
        signal(child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                return (st.code(), t.elapsed());
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("berth serve did not stop within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL: a crash.
    pub fn crash(mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Sends a signal to a process this test started.
pub fn signal(pid: u32, name: &str) {
    let st = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(st.success());
}

/// Polls `f` until it returns `Some`, or panics with `what` after `timeout`.
pub fn wait_for<T>(what: &str, timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
