//! Who copies the store's WAL back into the database, and on which thread.
//!
//! SQLite's automatic checkpoint runs on the connection whose commit made
//! the WAL cross its size ([`WAL_PAGES`]): that commit then waits for the
//! copy and its two fsyncs. In a one-shot `berth` command that is the
//! right place (the process is about to exit, and a later one would only
//! find a longer WAL to read). In `berth serve` and the MCP server it is a
//! request's: one action in every eight or so paid a millisecond or more
//! for it, in its latency. A long-running process asks for its checkpoints
//! in the background instead ([`Checkpoints::in_background`]): the commit
//! that crosses the size only wakes a thread of the store's own, which
//! checkpoints on a connection of its own while requests go on (a WAL-mode
//! checkpoint does not block writers). Should the thread fall behind, a
//! commit that finds the WAL at [`INLINE_PAGES`] checkpoints itself, as
//! before: the WAL stays bounded whatever happens to the thread.
//!
//! A one-shot command on a state whose store keeper runs
//! (`store/keeper.rs`) leaves its checkpoints to the keeper
//! ([`Checkpoints::to_keeper`]): its commits cross the size without
//! waiting for a copy and two fsyncs, and [`INLINE_PAGES`] bounds the WAL
//! should the keeper be gone.
//!
//! The hook is SQLite's `sqlite3_wal_hook`, set on each of berth's own
//! connections (`store/direct.rs`); it replaces the automatic checkpoint's
//! own hook on that connection, and does what it did when nothing asked for
//! the background.

use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use libsqlite3_sys as ffi;

use super::direct::DirectSqlite;
use super::sqlite::WAL_PAGES;

/// WAL pages past which a commit checkpoints itself even when a thread
/// has been asked to: the thread is behind (or its process is exiting).
pub(super) const INLINE_PAGES: c_int = 4 * WAL_PAGES as c_int;

/// The checkpoint policy of one store file, shared by its connections.
#[derive(Debug)]
pub(super) struct Checkpoints {
    path: PathBuf,
    /// The PRAGMAs the thread's connection runs as it opens.
    settings: String,
    background: AtomicBool,
    /// A store keeper checkpoints (`store/keeper.rs`).
    keeper: AtomicBool,
    wanted: Mutex<Wanted>,
    wake: Condvar,
    /// Checkpoints run by a committing connection, and by the thread.
    inline_runs: AtomicU64,
    background_runs: AtomicU64,
}

#[derive(Debug, Default)]
struct Wanted {
    /// A commit crossed [`WAL_PAGES`] since the thread last looked.
    checkpoint: bool,
    /// The pool closed: the thread leaves.
    closed: bool,
    started: bool,
}

impl Checkpoints {
    pub(super) fn new(path: PathBuf, settings: String) -> Arc<Checkpoints> {
        Arc::new(Checkpoints {
            path,
            settings,
            background: AtomicBool::new(false),
            keeper: AtomicBool::new(false),
            wanted: Mutex::new(Wanted::default()),
            wake: Condvar::new(),
            inline_runs: AtomicU64::new(0),
            background_runs: AtomicU64::new(0),
        })
    }

    /// From now on a commit that crosses [`WAL_PAGES`] leaves the
    /// checkpoint to the store's thread (started on the first such commit).
    pub(super) fn in_background(&self) {
        self.background.store(true, Ordering::Relaxed);
    }

    /// From now on a commit that crosses [`WAL_PAGES`] leaves the
    /// checkpoint to the state's store keeper, which looks at the WAL's
    /// size several times a second while the store is written.
    pub(super) fn to_keeper(&self) {
        self.keeper.store(true, Ordering::Relaxed);
    }

    /// Sets the hook on `db`, a connection that holds `self` (an `Arc`)
    /// until it closes: the pointer handed to SQLite outlives every call.
    pub(super) fn watch(self: &Arc<Self>, db: NonNull<ffi::sqlite3>) {
        // SAFETY: an open handle; `committed` has the hook's signature and
        // its argument is this `Checkpoints`, kept alive by the connection
        // (see above).
        unsafe {
            ffi::sqlite3_wal_hook(
                db.as_ptr(),
                Some(committed),
                Arc::as_ptr(self).cast_mut().cast(),
            );
        }
    }

    /// The thread leaves (after a checkpoint it is running).
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_all();
    }

    /// How many checkpoints committing connections ran, and the thread.
    #[cfg(test)]
    pub(super) fn runs(&self) -> (u64, u64) {
        (
            self.inline_runs.load(Ordering::Relaxed),
            self.background_runs.load(Ordering::Relaxed),
        )
    }

    fn lock(&self) -> MutexGuard<'_, Wanted> {
        // The flags stay whole whatever panicked while they were held.
        self.wanted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A commit crossed the size: wake the thread, starting it the first
    /// time. `false` when no thread could be started (the caller
    /// checkpoints itself).
    fn ask(self: &Arc<Self>) -> bool {
        let mut wanted = self.lock();
        if wanted.closed {
            return false;
        }
        wanted.checkpoint = true;
        if !wanted.started {
            let me = Arc::clone(self);
            let spawned = std::thread::Builder::new()
                .name("berth-checkpoint".into())
                .spawn(move || me.serve());
            match spawned {
                Ok(_) => wanted.started = true,
                Err(e) => {
                    tracing::debug!(error = %e, "no checkpoint thread; the commit checkpoints");
                    return false;
                }
            }
        }
        drop(wanted);
        self.wake.notify_one();
        true
    }

    /// The thread: waits for a commit's call, checkpoints, again, until the
    /// pool closes. Its connection is opened at its first checkpoint.
    fn serve(self: Arc<Self>) {
        let mut conn: Option<DirectSqlite> = None;
        loop {
            {
                let mut wanted = self.lock();
                while !wanted.checkpoint && !wanted.closed {
                    wanted = self
                        .wake
                        .wait(wanted)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if wanted.closed {
                    return;
                }
                wanted.checkpoint = false;
            }
            if conn.is_none() {
                match DirectSqlite::open(&self.path, false, &self.settings) {
                    Ok(opened) => conn = Some(opened),
                    Err(e) => {
                        tracing::warn!(error = %e, "the store's checkpoint thread cannot open the store; commits checkpoint themselves");
                        self.background.store(false, Ordering::Relaxed);
                        return;
                    }
                }
            }
            if let Some(conn) = conn.as_mut() {
                // PASSIVE: as much as no reader still needs, waiting for no
                // one; busy (another process checkpointing) is fine.
                match conn.exec_plain("PRAGMA wal_checkpoint(PASSIVE)") {
                    Ok(()) => {
                        self.background_runs.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => tracing::debug!(error = %e, "background checkpoint"),
                }
            }
        }
    }
}

/// The WAL hook: SQLite calls it after each commit on a watched connection,
/// with the WAL's size in pages.
unsafe extern "C" fn committed(
    arg: *mut c_void,
    db: *mut ffi::sqlite3,
    name: *const c_char,
    pages: c_int,
) -> c_int {
    if pages < WAL_PAGES as c_int {
        return ffi::SQLITE_OK;
    }
    // SAFETY: `arg` is the `Checkpoints` that `watch` set, which the
    // connection keeps alive while it can commit.
    let checkpoints = unsafe { &*arg.cast::<Checkpoints>() };
    if checkpoints.keeper.load(Ordering::Relaxed) && pages < INLINE_PAGES {
        return ffi::SQLITE_OK;
    }
    if checkpoints.background.load(Ordering::Relaxed) && pages < INLINE_PAGES {
        // SAFETY: the pointer came from an `Arc` (`watch`), alive here:
        // this borrows it for one more owner without taking the caller's.
        let shared = unsafe {
            Arc::increment_strong_count(arg.cast::<Checkpoints>());
            Arc::from_raw(arg.cast::<Checkpoints>())
        };
        if shared.ask() {
            return ffi::SQLITE_OK;
        }
    }
    // What SQLite's own hook does: a passive checkpoint of this database,
    // its failure no failure of the commit.
    // SAFETY: the handle and schema name SQLite passed to this hook.
    unsafe { ffi::sqlite3_wal_checkpoint(db, name) };
    checkpoints.inline_runs.fetch_add(1, Ordering::Relaxed);
    ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::store::{Store, StorePool};

    /// `commits` write transactions of two pages or so each (a 6 KB blob),
    /// `pause` apart.
    async fn write_pages(store: &Store, commits: usize, pause: Duration) {
        sqlx::query("CREATE TABLE scratch (b BLOB)")
            .execute(store.pool())
            .await
            .unwrap();
        for i in 0..commits {
            let mut tx = store.write("a test").await.unwrap();
            sqlx::query("INSERT INTO scratch (b) VALUES ($1)")
                .bind(vec![i as u8; 6000])
                .execute(&mut *tx)
                .await
                .unwrap();
            tx.commit().await.unwrap();
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
        }
    }

    fn runs(store: &Store) -> (u64, u64) {
        match store.pool() {
            StorePool::Sqlite(direct) => direct.checkpoints().runs(),
            StorePool::Postgres(_) => unreachable!("a SQLite store"),
        }
    }

    /// A one-shot command's commit checkpoints the WAL itself when it
    /// crosses the size, as SQLite's own hook did; no thread is started.
    #[tokio::test]
    async fn a_one_shot_commit_checkpoints_itself() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("berth.db"), true)
            .await
            .unwrap();
        write_pages(&store, 500, Duration::ZERO).await;
        let (inline, background) = runs(&store);
        assert!(inline >= 2, "{inline} checkpoints by commits");
        assert_eq!(background, 0);
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM scratch")
            .fetch_one(store.pool())
            .await
            .unwrap();
        assert_eq!(count, 500);
    }

    /// A server's commits leave every checkpoint to the store's thread (the
    /// writer here pauses a millisecond between commits, so the thread is
    /// never 750 pages behind), and what was written stays readable.
    #[tokio::test]
    async fn a_servers_commits_leave_the_checkpoints_to_the_thread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("berth.db");
        let store = Store::open(&path, true).await.unwrap();
        store.checkpoint_in_background();
        write_pages(&store, 500, Duration::from_millis(1)).await;
        let mut waited = 0;
        while runs(&store).1 < 2 && waited < 100 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            waited += 1;
        }
        let (inline, background) = runs(&store);
        assert_eq!(inline, 0, "checkpoints run by commits");
        assert!(background >= 2, "{background} checkpoints by the thread");
        store.close().await;
        let reopened = Store::open(&path, false).await.unwrap();
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM scratch")
            .fetch_one(reopened.pool())
            .await
            .unwrap();
        assert_eq!(count, 500);
    }
}
