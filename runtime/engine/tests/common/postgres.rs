//! The store the engine tests run on: each fixture's own SQLite file by
//! default; with `BERTH_TEST_STORE=postgres`, a PostgreSQL server this test
//! process starts once, and one database per fixture (named in the state
//! directory's `store.toml`, as a host names its store). The whole suite
//! runs on both stores (`scripts/test.sh` runs it twice).
//!
//! The server is Debian's (`/usr/lib/postgresql/N/bin`, or
//! `$BERTH_TEST_PG_BIN`). PostgreSQL refuses to run as root, so as root
//! `initdb` and `postgres` run as the `postgres` user, in a data directory
//! chowned to it. It listens on a unix socket in that directory only (no
//! port to collide with another process's), with durability off (a test's
//! data need not survive a crash), and dies with this process: its parent
//! is a thread that lives as long as the process, and the parent-death
//! signal stops it. A missing PostgreSQL is a failure, never a skip.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use sqlx::Connection;

/// The switch: `BERTH_TEST_STORE=postgres`.
pub fn on_postgres() -> bool {
    std::env::var("BERTH_TEST_STORE").is_ok_and(|v| v == "postgres")
}

/// A running server: where its socket is.
pub struct Server {
    dir: PathBuf,
    next: AtomicU64,
}

static SERVER: OnceLock<Server> = OnceLock::new();

/// The server, started on first use.
pub fn server() -> &'static Server {
    SERVER.get_or_init(start)
}

impl Server {
    /// A URL for database `name` on this server.
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgres://postgres@localhost/{name}?host={}",
            self.dir.display()
        )
    }

    /// A new, empty database; its URL.
    pub async fn database(&self) -> String {
        let name = format!(
            "t{}_{}",
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        sqlx::any::install_default_drivers();
        let mut admin = connect(&self.url("postgres")).await;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .unwrap();
        admin.close().await.unwrap();
        self.url(&name)
    }
}

/// The admin connection, retried while the server is still starting.
async fn connect(url: &str) -> sqlx::AnyConnection {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match sqlx::AnyConnection::connect(url).await {
            Ok(c) => return c,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the test PostgreSQL at {url} does not answer: {e}"),
        }
    }
}

/// Names a fresh database as `state`'s store (its `store.toml`) when the
/// tests run on PostgreSQL; nothing otherwise.
pub async fn prepare_state(state: &Path) {
    if on_postgres() {
        store_state_on_postgres(state).await;
    }
}

/// Names a new database on this process's server as the store of the state
/// directory `state` (its `store.toml`), whichever store the suite runs on.
pub async fn store_state_on_postgres(state: &Path) {
    let url = server().database().await;
    std::fs::create_dir_all(state).unwrap();
    std::fs::write(
        state.join("store.toml"),
        format!("[store]\nurl = {}\n", toml_string(&url)),
    )
    .unwrap();
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Debian's newest PostgreSQL binaries.
fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("BERTH_TEST_PG_BIN") {
        return PathBuf::from(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "BERTH_TEST_STORE=postgres, but no PostgreSQL in /usr/lib/postgresql \
             (install Debian's `postgresql`, or set BERTH_TEST_PG_BIN)"
        ),
    }
}

/// The `postgres` user's uid and gid when this process is root.
fn postgres_user() -> Option<(u32, u32)> {
    if rustix::process::geteuid().as_raw() != 0 {
        return None;
    }
    let out = Command::new("id")
        .args(["-u", "postgres"])
        .output()
        .unwrap();
    let uid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().expect(
        "tests run as root need a `postgres` user to run PostgreSQL as (Debian's package makes it)",
    );
    let out = Command::new("id")
        .args(["-g", "postgres"])
        .output()
        .unwrap();
    let gid: u32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    Some((uid, gid))
}

fn as_postgres(cmd: &mut Command, user: Option<(u32, u32)>) -> &mut Command {
    if let Some((uid, gid)) = user {
        cmd.uid(uid).gid(gid);
    }
    cmd.env("LC_ALL", "C")
}

/// Removes the data directories of earlier test processes that are gone
/// (their servers died with them).
fn remove_stale(parent: &Path) {
    for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("berth-test-pg-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn start() -> Server {
    let bin = bin_dir();
    let user = postgres_user();
    let parent = std::env::temp_dir();
    remove_stale(&parent);
    let dir = parent.join(format!("berth-test-pg-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir(&dir).unwrap();
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).unwrap();
    }
    let data = dir.join("data");
    let out = as_postgres(&mut Command::new(bin.join("initdb")), user)
        .arg("-D")
        .arg(&data)
        .args([
            "--auth=trust",
            "--username=postgres",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::File::create(dir.join("server.log")).unwrap();
    if let Some((uid, gid)) = user {
        std::os::unix::fs::chown(dir.join("server.log"), Some(uid), Some(gid)).unwrap();
    }
    let mut cmd = Command::new(bin.join("postgres"));
    as_postgres(&mut cmd, user)
        .arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(&dir)
        .args([
            "-c",
            "listen_addresses=",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=400",
            "-c",
            "shared_buffers=64MB",
        ])
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    // SAFETY: between fork and exec only the prctl system call runs.
    unsafe {
        cmd.pre_exec(|| {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::QUIT))
                .map_err(std::io::Error::from)
        });
    }
    // The parent-death signal fires when the forking *thread* ends: this
    // one lives as long as the server, which lives as long as the process.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || match cmd.spawn() {
        Ok(mut child) => {
            tx.send(Ok(())).unwrap();
            let _ = child.wait();
        }
        Err(e) => tx.send(Err(e)).unwrap(),
    });
    rx.recv()
        .unwrap()
        .unwrap_or_else(|e| panic!("starting {}: {e}", bin.join("postgres").display()));
    Server {
        dir,
        next: AtomicU64::new(0),
    }
}
