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
//! - **One per store.** The keeper holds an exclusive `flock` on the
//!   lock beside the store's file ([`lock_path`]: `berth.db-keeper.lock`)
//!   for its life, and writes its pid there: beside the file, not in the
//!   state directory, so a store named elsewhere (`sqlite:PATH`) has its
//!   own whichever state directory a command names. A
//!   one-shot command that can take the lock finds no keeper
//!   ([`find`]) and starts one (the binary's part: `berth store keep`);
//!   two commands that race start two, and the second to lock leaves.
//! - **Holding nothing else.** The keeper runs no statement but `PRAGMA
//!   data_version` and checkpoints, holds no transaction (writers never
//!   wait for it), and accepts no input.
//! - **Checkpoints.** A one-shot command that finds the keeper running
//!   leaves its checkpoints to it (`store/checkpoints.rs`): the commit
//!   that crossed `WAL_PAGES` used to wait for the copy and its two fsyncs
//!   (about 3 ms, one `berth exec` in twenty). The keeper reads the WAL's
//!   size from the index's header in the `-shm` file ([`WalIndex`]) ten
//!   times a second while the store is written, and checkpoints past
//!   `WAL_PAGES`; past `INLINE_PAGES` a commit checkpoints itself, so the
//!   WAL stays bounded should the keeper be gone.
//! - **Leaving.** After [`IDLE`] without a commit by anyone, or once the
//!   store's file or the lock file is no longer the one it opened (the
//!   state removed, or made again). A crash of the keeper loses nothing: a
//!   connection holds no state of its own.
//!
//! PostgreSQL stores have no keeper: the database server holds what a
//! connection would.

use std::fs::File;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rustix::fs::{FlockOperation, flock};

use super::sqlite::WAL_PAGES;
use super::{Store, StoreLocation};
use crate::error::{EngineError, Result};
use crate::state::StateDir;

/// The keeper's lock of the SQLite store at `store`: beside it, with the
/// WAL's files (`berth.db-keeper.lock`).
pub fn lock_path(store: &Path) -> PathBuf {
    beside(store, "-keeper.lock")
}

/// `store`'s path with `suffix` after it, as SQLite names its `-wal` and
/// `-shm` files.
fn beside(store: &Path, suffix: &str) -> PathBuf {
    let mut name = store.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// How long a keeper stays without a commit to the store (the residents'
/// idle time: `berth_sandbox`'s runner).
pub const IDLE: Duration = Duration::from_secs(300);

/// How often the keeper looks at the store while it is written, and
/// while it is not.
const LOOK_BUSY: Duration = Duration::from_millis(100);
const LOOK_IDLE: Duration = Duration::from_secs(1);

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

/// What a one-shot command finds of the state's keeper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeeperFound {
    /// One holds the lock: leave the checkpoints to it.
    Running,
    /// None: start one.
    Missing,
    /// Not a SQLite store, or a lock that cannot be looked at (a read-only
    /// state, another user's): no keeper, which is only a saving lost.
    NotApplicable,
}

/// Looks for the keeper of the store at `location` (the one a command
/// opened: nothing is read again to find it).
pub fn find(location: &StoreLocation) -> KeeperFound {
    let StoreLocation::Sqlite(store) = location else {
        return KeeperFound::NotApplicable;
    };
    match open_lock(&lock_path(store)) {
        // Taken, the lock is released as `lock` drops on return.
        Ok(lock) => match flock(&lock, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => KeeperFound::Missing,
            Err(_) => KeeperFound::Running,
        },
        Err(err) => {
            tracing::debug!("the store's keeper not looked for: {err}");
            KeeperFound::NotApplicable
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
    let lock_path = lock_path(&path);
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
    let end = watch(&store, &path, idle, || {
        identity(&path) == store_id && identity(&lock_path) == lock_id
    })
    .await;
    store.close().await;
    end
}

/// Looks at the store until it idles for `idle` or `same` says the state
/// is no longer the one opened; checkpoints the WAL past `WAL_PAGES`.
async fn watch(
    store: &Store,
    path: &Path,
    idle: Duration,
    same: impl Fn() -> bool,
) -> Result<KeeperEnd> {
    // Opened once the store is (which makes the file); without it the
    // commits' own bound (INLINE_PAGES) checkpoints.
    let wal = WalIndex::open(path);
    if wal.is_none() {
        tracing::debug!("the store's keeper cannot read the WAL index; commits checkpoint");
    }
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
        let written = seen != Some(version);
        if written {
            seen = Some(version);
            last_commit = Instant::now();
            let pending = wal.as_ref().and_then(WalIndex::pending);
            if pending.is_some_and(|frames| frames >= WAL_PAGES) {
                // PASSIVE: what no reader still needs, waiting for no one;
                // busy (another process checkpointing) is fine.
                if let Err(e) = sqlx::query("PRAGMA wal_checkpoint(PASSIVE)")
                    .fetch_all(store.pool())
                    .await
                {
                    tracing::debug!(error = %e, "the keeper's checkpoint");
                }
            }
        } else if last_commit.elapsed() >= idle {
            return Ok(KeeperEnd::Idle);
        }
        let look = if written { LOOK_BUSY } else { LOOK_IDLE };
        tokio::time::sleep(look.min(idle)).await;
    }
}

/// The header of the WAL's index in the store's `-shm` file, as SQLite's
/// documentation of its WAL format gives it (native byte order): two
/// copies of a 48-byte header, `mxFrame` (the frames in the WAL) at offset
/// 16 of each, then the checkpoint's record, `nBackfill` (the frames
/// already copied back) at offset 96. Read, never written.
struct WalIndex {
    shm: File,
}

impl WalIndex {
    fn open(store: &Path) -> Option<WalIndex> {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(o_nofollow())
            .open(beside(store, "-shm"))
            .ok()
            .map(|shm| WalIndex { shm })
    }

    /// Frames in the WAL not yet copied back; `None` while a writer is
    /// changing the header (its two copies differ) or it cannot be read.
    fn pending(&self) -> Option<u32> {
        use std::os::unix::fs::FileExt as _;
        let mut head = [0u8; 100];
        self.shm.read_exact_at(&mut head, 0).ok()?;
        if head[..48] != head[48..96] {
            return None;
        }
        let word = |at: usize| {
            head.get(at..at + 4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_ne_bytes)
        };
        Some(word(16)?.saturating_sub(word(96)?))
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
        .custom_flags(o_nofollow())
        .open(path)
}

/// `O_NOFOLLOW`, as `OpenOptions::custom_flags` takes it.
fn o_nofollow() -> i32 {
    rustix::fs::OFlags::NOFOLLOW.bits() as i32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StorePool;
    use crate::store::checkpoints::INLINE_PAGES;

    /// A one-shot store whose keeper runs leaves its checkpoints to it:
    /// more than `INLINE_PAGES` written in commits of a few pages, and no
    /// commit checkpointed (without the keeper's, the bound would have
    /// made one do it); the keeper leaves when the state goes.
    #[tokio::test]
    async fn a_kept_store_leaves_its_checkpoints_to_the_keeper() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        Store::open(&state.db(), true).await.unwrap().close().await;
        assert_eq!(
            find(&StoreLocation::Sqlite(state.db())),
            KeeperFound::Missing
        );
        let kept = {
            let state = state.clone();
            tokio::spawn(async move { keep(&state, IDLE).await })
        };
        while find(&StoreLocation::Sqlite(state.db())) != KeeperFound::Running {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }

        let store = Store::open_one_shot(&StoreLocation::Sqlite(state.db()))
            .await
            .unwrap();
        store.checkpoint_by_keeper();
        sqlx::query("CREATE TABLE scratch (b BLOB)")
            .execute(store.pool())
            .await
            .unwrap();
        let commits = 2 * INLINE_PAGES as usize;
        for i in 0..commits {
            sqlx::query("INSERT INTO scratch (b) VALUES ($1)")
                .bind(vec![i as u8; 6000])
                .execute(store.pool())
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let StorePool::Sqlite(direct) = store.pool() else {
            unreachable!("a SQLite store")
        };
        let (inline, _) = direct.checkpoints().runs();
        assert_eq!(
            inline, 0,
            "{commits} commits, {inline} checkpointed themselves"
        );
        let pending = WalIndex::open(&state.db()).and_then(|w| w.pending());
        assert!(
            pending.is_some_and(|p| p < INLINE_PAGES as u32),
            "{pending:?} frames not checkpointed"
        );
        store.close().await;

        std::fs::remove_file(state.db()).unwrap();
        let end = tokio::time::timeout(Duration::from_secs(20), kept)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(end, KeeperEnd::StateGone);
    }

    /// A keeper's idle time runs from the last commit by anyone.
    #[tokio::test]
    async fn a_keeper_leaves_when_idle() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::new(dir.path());
        Store::open(&state.db(), true).await.unwrap().close().await;
        let started = Instant::now();
        let end = keep(&state, Duration::from_secs(1)).await.unwrap();
        assert_eq!(end, KeeperEnd::Idle);
        assert!(started.elapsed() >= Duration::from_secs(1));
        assert_eq!(
            find(&StoreLocation::Sqlite(state.db())),
            KeeperFound::Missing
        );
    }
}
