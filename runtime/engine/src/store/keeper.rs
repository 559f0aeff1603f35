//! The store's keeper: one idle process per state that holds its SQLite
//! store open between one-shot `berth` commands.
//!
//! SQLite keeps the WAL's index in the `-shm` file, and trusts it only
//! while a connection holds it: the first connection of a process that
//! finds no other one open truncates the file and rebuilds the index by
//! reading every frame written since the last checkpoint (`store/sqlite.rs`,
//! `WAL_PAGES`). Every one-shot command (`berth exec`, `berth ls`, …) was
//! such a first connection, and paid for the rebuild: about 0.4 ms of a
//! 5 ms `berth exec true`. With a keeper holding a connection, a command
//! finds the index whole and reads only its header.
//!
//! - **One per state.** The keeper holds an exclusive `flock` on
//!   `<state>/store-keeper.lock` for its life, and writes its pid there. A
//!   one-shot command that can take the lock finds no keeper
//!   ([`wanted`]) and starts one (the binary's part: `berth store keep`);
//!   two commands that race start two, and the second to lock leaves.
//! - **Holding nothing else.** The keeper runs no statement but `PRAGMA
//!   data_version`, holds no transaction (writers and checkpoints never
//!   wait for it), accepts no input, and leaves its checkpoints to the
//!   committing connections as before.
//! - **Leaving.** After [`IDLE`] without a commit by anyone, or once the
//!   store's file or the lock file is no longer the one it opened (the
//!   state removed, or made again). A crash of the keeper loses nothing: a
//!   connection holds no state of its own.
//!
//! PostgreSQL stores have no keeper (the server keeps its own state).

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

use super::{Store, StoreLocation};
use crate::error::{EngineError, Result};
use crate::state::StateDir;

/// The keeper's lock, in the state directory.
pub const LOCK_FILE: &str = "store-keeper.lock";

/// How long a keeper stays without a commit to the store (the residents'
/// idle time: `berth_sandbox`'s runner).
pub const IDLE: Duration = Duration::from_secs(300);

/// How often the keeper looks at the store and the lock file.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// Why a keeper ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeeperEnd {
    /// Another keeper holds the lock.
    AlreadyKept,
    /// The store is not a SQLite file.
    NotSqlite,
    /// Nothing was committed for the idle time.
    Idle,
    /// The store's file or the lock file is gone or another one.
    StateGone,
}

/// Whether `state` has a SQLite store and no keeper: a one-shot command
/// then starts one. Anything that keeps the lock from being looked at (a
/// read-only state, another user's) is a no: a keeper is only a saving.
pub fn wanted(state: &StateDir) -> bool {
    if !matches!(StoreLocation::resolve(state), Ok(StoreLocation::Sqlite(_))) {
        return false;
    }
    match open_lock(&state.root().join(LOCK_FILE)) {
        // The lock is dropped (and released) as this returns.
        Ok(lock) => flock(&lock, FlockOperation::NonBlockingLockExclusive).is_ok(),
        Err(err) => {
            tracing::debug!("the store's keeper not looked for: {err}");
            false
        }
    }
}

/// Keeps the store of `state` open until it idles for `idle` or the state
/// goes (`berth store keep`).
pub async fn keep(state: &StateDir, idle: Duration) -> Result<KeeperEnd> {
    let path = match StoreLocation::resolve(state)? {
        StoreLocation::Sqlite(path) => path,
        StoreLocation::Postgres(_) => return Ok(KeeperEnd::NotSqlite),
    };
    let lock_path = state.root().join(LOCK_FILE);
    let mut lock = open_lock(&lock_path).map_err(EngineError::io("opening", &lock_path))?;
    if flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Ok(KeeperEnd::AlreadyKept);
    }
    // The pid, for whoever looks (the lock says whether it is alive).
    lock.set_len(0)
        .and_then(|()| writeln!(lock, "{}", std::process::id()))
        .map_err(EngineError::io("writing", &lock_path))?;
    let identity = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
    let (store_id, lock_id) = (identity(&path), identity(&lock_path));
    if store_id.is_none() {
        return Ok(KeeperEnd::StateGone);
    }
    let store = Store::open_one_shot(&StoreLocation::Sqlite(path.clone())).await?;
    let end = watch(&store, idle, || {
        identity(&path) == store_id && identity(&lock_path) == lock_id
    })
    .await;
    store.close().await;
    end
}

/// Looks at the store every [`LOOK_EVERY`] until it idles or `same` says
/// the state is no longer the one opened.
async fn watch(store: &Store, idle: Duration, same: impl Fn() -> bool) -> Result<KeeperEnd> {
    let mut seen: Option<i64> = None;
    let mut last_commit = Instant::now();
    loop {
        if !same() {
            return Ok(KeeperEnd::StateGone);
        }
        // Changes when another connection commits (SQLite's documentation
        // of `data_version`); reading it takes the WAL index's header.
        let version: i64 = sqlx::query_scalar("PRAGMA data_version")
            .fetch_one(store.pool())
            .await
            .map_err(EngineError::store("reading the store's data version"))?;
        if seen != Some(version) {
            seen = Some(version);
            last_commit = Instant::now();
        } else if last_commit.elapsed() >= idle {
            return Ok(KeeperEnd::Idle);
        }
        tokio::time::sleep(LOOK_EVERY.min(idle)).await;
    }
}

/// The lock file, created private (0600) and never through a link.
fn open_lock(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(rustix::fs::OFlags::NOFOLLOW.bits() as i32)
        .open(path)
}
