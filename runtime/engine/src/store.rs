//! The store: SQLite on disk through sqlx, in WAL mode, with versioned
//! migrations embedded in the binary.
//!
//! Every query the engine runs is plain SQL that Postgres accepts as well
//! (`$N` parameters, no SQLite-only functions), because Postgres is the store
//! when berth runs across hosts. Write transactions start with
//! `BEGIN IMMEDIATE` so that two processes never both read-then-upgrade and
//! fail with "database is locked"; the busy timeout makes them queue instead.
//!
//! Within one process, write transactions also queue on a gate *before* they
//! take a connection from the pool: a write transaction holds at most one
//! connection, and a writer waiting for its turn holds none, so the readers
//! a transaction does (and every other reader) always find a connection.
//! Without the gate, twenty concurrent approvals each held a connection while
//! waiting for SQLite's write lock, and the one holding the lock waited for a
//! connection to read with: 30 s stalls, 500s, and outcomes lost.
//!
//! A connection goes back to the pool clean or not at all: after a failed
//! write (a full disk fails the `COMMIT`, and SQLite may already have rolled
//! the transaction back, so the driver's own `ROLLBACK` fails and it still
//! counts a transaction open) the pool closes the connection instead of
//! handing out one on which every later `BEGIN` fails.

use std::borrow::Cow;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sqlx::{Connection, Sqlite, SqlitePool, Transaction};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::error::{EngineError, Result};

/// The migrations, in order. Append; never edit one that shipped.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "init", include_str!("../migrations/0001_init.sql")),
    (
        2,
        "pipelines",
        include_str!("../migrations/0002_pipelines.sql"),
    ),
    (
        3,
        "berth uid",
        include_str!("../migrations/0003_berth_uid.sql"),
    ),
    (
        4,
        "resolved path",
        include_str!("../migrations/0004_resolved_path.sql"),
    ),
    (5, "removal", include_str!("../migrations/0005_removal.sql")),
    (
        6,
        "cancel request",
        include_str!("../migrations/0006_cancel_request.sql"),
    ),
    (
        7,
        "store once",
        include_str!("../migrations/0007_store_once.sql"),
    ),
    (
        8,
        "pr checks",
        include_str!("../migrations/0008_pr_checks.sql"),
    ),
    (
        9,
        "sessions and prompts",
        include_str!("../migrations/0009_sessions_prompts.sql"),
    ),
    (
        10,
        "pr review",
        include_str!("../migrations/0010_pr_review.sql"),
    ),
    (
        11,
        "pr automation",
        include_str!("../migrations/0011_pr_automation.sql"),
    ),
    (
        12,
        "agent leases",
        include_str!("../migrations/0012_agent_leases.sql"),
    ),
];

/// How long a write waits for SQLite's lock (another process) and for its
/// turn at this process's gate.
const BUSY: Duration = Duration::from_secs(30);

/// Connections in the pool: one for the writer, the rest for readers.
const CONNECTIONS: u32 = 8;

/// Pages of WAL after which a commit checkpoints it (SQLite's default is
/// 1,000, 4 MiB). The WAL is kept between processes, and the first
/// connection of each new process reads every frame written since the
/// last checkpoint to rebuild its index: 2.2 ms at 4 MiB against 0.4 ms
/// small, on every one-shot `berth` command. A checkpoint costs its
/// fsyncs once per this many pages, on the commit that crosses it; every
/// other commit costs none (synchronous = NORMAL).
const WAL_PAGES: u32 = 256;

/// What a checkpointed WAL is truncated back to (bytes), so the file does
/// not stay at the largest size it ever reached.
const WAL_BYTES: u64 = 1 << 20;

/// A handle on the store; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
    path: PathBuf,
    /// One write transaction at a time in this process (see the module docs).
    writer: Arc<Mutex<()>>,
}

/// A write transaction, holding this process's write gate until it is
/// committed or dropped (a drop rolls back). It derefs to the connection, so
/// queries run on it with `.execute(&mut *tx)`.
#[derive(Debug)]
pub struct Tx {
    // Field order is drop order: the transaction (rolled back when still
    // open) goes before the gate opens for the next writer.
    tx: Transaction<'static, Sqlite>,
    _turn: OwnedMutexGuard<()>,
}

impl Tx {
    /// Commits. On failure the transaction is rolled back and its
    /// connection closed if the rollback could not make it clean.
    pub async fn commit(self) -> std::result::Result<(), sqlx::Error> {
        let Tx { tx, _turn } = self;
        tx.commit().await
    }

    /// Rolls back explicitly (a drop does the same).
    pub async fn rollback(self) -> std::result::Result<(), sqlx::Error> {
        let Tx { tx, _turn } = self;
        tx.rollback().await
    }
}

impl Deref for Tx {
    type Target = SqliteConnection;
    fn deref(&self) -> &SqliteConnection {
        &self.tx
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut SqliteConnection {
        &mut self.tx
    }
}

impl Store {
    /// Opens (and with `create`, creates) the database at `path` and applies
    /// pending migrations.
    pub async fn open(path: &Path, create: bool) -> Result<Store> {
        Self::open_pool(path, create, CONNECTIONS).await
    }

    /// Opens the database at `path` with a single connection, for a process
    /// that runs one command and exits (the CLI). sqlx gives a released
    /// connection back through a task it spawns, after a ping on the
    /// connection's worker thread: a pool with room for more found none idle
    /// when the next query came a moment later and opened another — a file
    /// open and a parse of the whole schema, the largest cost of a one-shot
    /// `berth exec` (two connections in most runs). With one, the next query
    /// waits for that return instead. The write gate is unchanged (one write
    /// transaction at a time); what one connection adds is that a read on
    /// the pool while this task holds a [`Tx`] would wait for the
    /// transaction's own connection until `BUSY`: the engine reads through
    /// the transaction inside one, and the CLI's tests run every one-shot
    /// command on this store.
    pub async fn open_one_shot(path: &Path) -> Result<Store> {
        Self::open_pool(path, false, 1).await
    }

    async fn open_pool(path: &Path, create: bool, connections: u32) -> Result<Store> {
        let opts = SqliteConnectOptions::from_str("sqlite:")
            .map_err(EngineError::store("configuring the store"))?
            .filename(path)
            .create_if_missing(create)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(BUSY)
            .foreign_keys(true)
            // The WAL kept between processes ([`keep_wal`]) is read whole
            // by each process's first connection (the wal-index is rebuilt
            // when no connection holds it): bounded (see [`WAL_PAGES`]).
            .pragma("wal_autocheckpoint", WAL_PAGES.to_string())
            .pragma("journal_size_limit", WAL_BYTES.to_string());
        let pool = SqlitePoolOptions::new()
            .max_connections(connections)
            .acquire_timeout(BUSY)
            .after_connect(|conn, _meta| Box::pin(keep_wal(conn)))
            // A local file does not hang up: the ping sqlx sends before
            // each acquire only cost every read a round trip to the
            // connection's worker.
            .test_before_acquire(false)
            .after_release(|conn, _meta| {
                Box::pin(async move {
                    // No transaction counted: nothing was left open, and no
                    // rollback is queued (the depth drops only once one
                    // ran), so the connection is clean without a round trip.
                    if !conn.is_in_transaction() {
                        return Ok(true);
                    }
                    // A dropped transaction's rollback is queued on the
                    // connection's worker: the ping runs after it, so the
                    // depth read next is the one it left.
                    conn.ping().await?;
                    let clean = !conn.is_in_transaction();
                    if !clean {
                        tracing::warn!(
                            "a store connection still counts a transaction after its rollback \
                             (a failed write: a full disk?): closing it"
                        );
                    }
                    Ok(clean)
                })
            })
            .connect_with(opts)
            .await
            .map_err(EngineError::store("opening the store"))?;
        let store = Store {
            pool,
            path: path.to_path_buf(),
            writer: Arc::new(Mutex::new(())),
        };
        store.migrate().await?;
        Ok(store)
    }

    /// Applies pending migrations. A store whose `user_version` already
    /// names the last migration skips the migrator (which reads its table
    /// and re-hashes every migration's SQL on every open: a cost each
    /// one-shot CLI process paid); only this function writes that version,
    /// after the migrator succeeded.
    async fn migrate(&self) -> Result<()> {
        let latest = MIGRATIONS.last().map_or(0, |m| m.0);
        settle_released().await;
        let version: i64 = sqlx::query_scalar("PRAGMA user_version")
            .fetch_one(&self.pool)
            .await
            .map_err(EngineError::store("reading the store's version"))?;
        if version == latest {
            return Ok(());
        }
        let migrations: Vec<Migration> = MIGRATIONS
            .iter()
            .map(|(version, desc, sql)| {
                Migration::new(
                    *version,
                    Cow::Borrowed(*desc),
                    MigrationType::Simple,
                    Cow::Borrowed(*sql),
                    false,
                )
            })
            .collect();
        let migrator = Migrator {
            migrations: Cow::Owned(migrations),
            ..Migrator::DEFAULT
        };
        migrator
            .run(&self.pool)
            .await
            .map_err(|source| EngineError::Migrate {
                path: self.path.clone(),
                source,
            })?;
        // A literal: PRAGMA takes no bound parameters.
        sqlx::query(&format!("PRAGMA user_version = {latest}"))
            .execute(&self.pool)
            .await
            .map_err(EngineError::store("recording the store's version"))?;
        Ok(())
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write transaction: waits for this process's write gate, then takes
    /// SQLite's write lock up front. Never call it while holding a `Tx`
    /// (it would wait for itself until `BUSY` and fail).
    pub async fn write(&self, op: &'static str) -> Result<Tx> {
        let turn = tokio::time::timeout(BUSY, self.writer.clone().lock_owned())
            .await
            .map_err(|_| EngineError::StoreBusy {
                op,
                secs: BUSY.as_secs(),
            })?;
        settle_released().await;
        let tx = self
            .pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(EngineError::store(op))?;
        Ok(Tx { tx, _turn: turn })
    }

    /// Closes the pool. The WAL stays as it is for the next process
    /// ([`keep_wal`]); SQLite checkpoints it as it grows, on commit.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Lets the connection this task released a moment ago reach the pool
/// before it takes one. sqlx returns a dropped connection through a task it
/// spawns, which runs only once this task yields: a read followed at once
/// by a write (or by the next read) otherwise found no idle connection and
/// opened another — a file open and a parse of the whole schema, the
/// largest cost of a one-shot `berth` process (four connections per
/// `berth exec`).
async fn settle_released() {
    tokio::task::yield_now().await;
}

/// Keeps the WAL between processes: each one-shot `berth` process used to
/// checkpoint the WAL into the database and delete it when it closed, and
/// the next one to create it again (up to five fsyncs and two file
/// creations per CLI command, for nothing another process would miss).
/// With `SQLITE_FCNTL_PERSIST_WAL` the files stay, and with
/// `SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE` a closing connection leaves the
/// checkpoint to SQLite's automatic one (every 1,000 pages, on a commit).
/// What is committed is in the WAL, which every process reads: nothing a
/// reader sees changes. The `-wal` and `-shm` files keep the store's mode
/// (`private_state`).
async fn keep_wal(conn: &mut SqliteConnection) -> std::result::Result<(), sqlx::Error> {
    let mut handle = conn.lock_handle().await?;
    let db = handle.as_raw_handle().as_ptr();
    let mut on: std::ffi::c_int = 1;
    // SAFETY: `db` is this connection's open handle, locked for us by
    // `lock_handle` (no other thread uses it meanwhile) and alive while
    // `handle` is. PERSIST_WAL reads and writes one int through the
    // pointer, which lives across the call; NO_CKPT_ON_CLOSE takes an int
    // and an optional int pointer (null: no report back), as SQLite's
    // documentation of sqlite3_db_config gives them.
    let (persist, no_ckpt) = unsafe {
        (
            libsqlite3_sys::sqlite3_file_control(
                db,
                c"main".as_ptr(),
                libsqlite3_sys::SQLITE_FCNTL_PERSIST_WAL,
                (&raw mut on).cast(),
            ),
            libsqlite3_sys::sqlite3_db_config(
                db,
                libsqlite3_sys::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                1 as std::ffi::c_int,
                std::ptr::null_mut::<std::ffi::c_int>(),
            ),
        )
    };
    if persist != libsqlite3_sys::SQLITE_OK || no_ckpt != libsqlite3_sys::SQLITE_OK {
        // Only a cost, never a correctness matter: the store works either way.
        tracing::debug!(
            persist,
            no_ckpt,
            "the store's WAL is not kept between processes"
        );
    }
    Ok(())
}
