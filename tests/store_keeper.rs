//! The store's keeper (`berth_engine::store::keeper`): a one-shot command
//! starts one per state, never two; it stays while the store is written
//! and leaves when idle, or at once when its state is removed.

use std::fs::File;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

use crate::fixture::Fixture;

/// How long a keeper may take to start or to leave (it looks every second):
/// a bound on waiting, not a figure under test.
const WAIT: Duration = Duration::from_secs(20);

fn lock_path(f: &Fixture) -> std::path::PathBuf {
    f.state().join("berth.db-keeper.lock")
}

/// Whether the lock is held by someone (a keeper): this process cannot take it.
fn lock_held(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    flock(&file, FlockOperation::NonBlockingLockShared).is_err()
}

/// The pid the keeper wrote, once it holds the lock.
pub(crate) fn keeper_pid(f: &Fixture) -> u32 {
    let path = lock_path(f);
    let start = Instant::now();
    loop {
        if lock_held(&path)
            && let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(start.elapsed() < WAIT, "no keeper took {}", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Alive and not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// The keepers running on `state`, by their command lines.
fn keepers_of(state: &Path) -> usize {
    let want = format!("--state\0{}\0store\0keep", state.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .parse::<u32>()
                .is_ok_and(alive)
        })
        .filter(|e| {
            std::fs::read(e.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(&want))
                .unwrap_or(false)
        })
        .count()
}

/// Stops the keeper a fixture's commands started (SIGTERM); its pid.
pub(crate) fn stop_keeper(f: &Fixture) -> u32 {
    let pid = keeper_pid(f);
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .unwrap();
    wait_gone(pid);
    pid
}

fn wait_gone(pid: u32) {
    let start = Instant::now();
    while alive(pid) {
        assert!(start.elapsed() < WAIT, "keeper {pid} did not leave");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn spawn_keeper(f: &Fixture, extra: &[&str]) -> Child {
    let mut args = vec!["store", "keep"];
    args.extend_from_slice(extra);
    f.command(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn wait_exit(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            start.elapsed() < WAIT,
            "keeper {} did not leave",
            child.id()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn one_shot_commands_start_one_keeper_which_leaves_with_its_state() {
    let f = Fixture::new().with_project();
    f.ok(&["ls"]);
    let pid = keeper_pid(&f);
    assert!(alive(pid));
    // Commands while it runs, some at once, start no other.
    let runs: Vec<Child> = (0..4)
        .map(|_| {
            f.command(&["ls"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut run in runs {
        assert!(run.wait().unwrap().success());
    }
    f.new_task("kept");
    assert_eq!(keeper_pid(&f), pid, "the keeper was replaced");
    assert_eq!(keepers_of(&f.state()), 1);
    // What it held is still the store's: the commands' writes read back.
    assert!(
        f.ok(&["task", "ls"]).contains("kept"),
        "{}",
        f.ok(&["task", "ls"])
    );

    std::fs::remove_dir_all(f.state()).unwrap();
    wait_gone(pid);
}

#[test]
fn a_keeper_stays_while_the_store_is_written_and_leaves_when_idle() {
    let f = Fixture::new().with_project();
    // The keeper `project add` started gives way to one that idles sooner.
    stop_keeper(&f);
    let mut keeper = spawn_keeper(&f, &["--idle-secs", "3"]);
    let pid = keeper_pid(&f);
    assert_eq!(pid, keeper.id());
    // Writes every half second for twice the idle time keep it.
    let start = Instant::now();
    let mut n = 0;
    while start.elapsed() < Duration::from_secs(6) {
        f.new_task(&format!("task {n}"));
        n += 1;
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            keeper.try_wait().unwrap().is_none(),
            "the keeper left while the store was written"
        );
    }
    assert!(wait_exit(&mut keeper).success());
    assert!(!lock_held(&lock_path(&f)));
}

#[test]
fn a_second_keeper_leaves_at_once_and_a_postgres_state_has_none() {
    let f = Fixture::new().with_project();
    // The keeper `project add` started.
    let pid = keeper_pid(&f);
    let mut second = spawn_keeper(&f, &[]);
    assert!(wait_exit(&mut second).success());
    assert!(alive(pid));
    assert_eq!(keeper_pid(&f), pid);

    // A store that is not the state's SQLite file is never kept.
    let g = Fixture::new();
    std::fs::create_dir_all(g.state()).unwrap();
    std::fs::write(
        g.state().join("store.toml"),
        "[store]\nurl = \"postgres://berth@127.0.0.1:1/none\"\n",
    )
    .unwrap();
    let mut keeper = spawn_keeper(&g, &[]);
    assert!(wait_exit(&mut keeper).success());
    let files: Vec<_> = std::fs::read_dir(g.state())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !files.iter().any(|n| n.to_string_lossy().contains("keeper")),
        "{files:?}"
    );
}

#[test]
fn a_keeper_keeps_no_pipe_its_starter_inherited() {
    use std::io::Read as _;
    let f = Fixture::new().with_project();
    let started = stop_keeper(&f);
    // `berth ls` with a pipe on descriptor 3, as a shell's `3>` leaves it
    // (no close-on-exec); the keeper it starts inherits it too.
    let (mut reader, writer) = std::io::pipe().unwrap();
    let status = std::process::Command::new("sh")
        .args(["-c", "exec \"$0\" --state \"$1\" ls 3>&2 2>/dev/null"])
        .arg(env!("CARGO_BIN_EXE_berth"))
        .arg(f.state())
        .stdout(Stdio::null())
        .stderr(writer)
        .status()
        .unwrap();
    assert!(status.success());
    let pid = keeper_pid(&f);
    assert_ne!(pid, started);
    // Every writer gone (berth exited, the keeper closed its copy): the
    // reader sees the end.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut rest = Vec::new();
        let _ = tx.send(reader.read_to_end(&mut rest).map(|_| rest.len()));
    });
    let read = rx
        .recv_timeout(WAIT)
        .expect("the keeper kept the pipe open");
    assert!(read.is_ok());
    assert!(alive(pid));
}
