//! A real state directory with a real project, and `berth serve` as a real
//! process over it. The server is stopped with SIGTERM (graceful) or, when a
//! test fails, killed by the guard's drop.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::fixture::Fixture;
use super::http::{Client, Target};

/// The shared fixture (`support/fixture.rs`), initialised; `berth serve`
/// runs over its state.
pub struct State(pub Fixture);

impl std::ops::Deref for State {
    type Target = Fixture;
    fn deref(&self) -> &Fixture {
        &self.0
    }
}

impl std::ops::DerefMut for State {
    fn deref_mut(&mut self) -> &mut Fixture {
        &mut self.0
    }
}

impl State {
    pub fn new() -> State {
        let f = Fixture::new();
        f.source_repo();
        f.ok(&["init"]);
        State(f)
    }

    /// With project `demo` added by the CLI.
    pub fn with_project() -> State {
        // Runner berths: the server's tests are not about containers
        // (tests/mounted.rs is). The runner has no confinement of its own
        // yet: auto mode on these runner berths is accepted
        // (`a_runner_berth_says_what_auto_mode_lifts` turns it back off).
        let f = Fixture::new().with_berth_mode("runner");
        f.edit_config(|text| {
            text.replacen("allow_unconfined = false", "allow_unconfined = true", 1)
        });
        State(f)
    }

    pub fn token(&self) -> String {
        std::fs::read_to_string(self.state().join("api-token"))
            .unwrap()
            .trim()
            .to_string()
    }
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
        let stderr = state.root().join(format!(
            "serve-{}.err",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let mut child = state
            .command(&["serve"])
            .args(args)
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
