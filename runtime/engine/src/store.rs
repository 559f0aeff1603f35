//! The store: berth's database, one of two backends behind sqlx's `Any`
//! types. SQLite on disk, in WAL mode, is the embedded default;
//! PostgreSQL is the store when berth runs across hosts, chosen by a URL
//! (`BERTH_STORE`, or `[store] url` in the state directory's `store.toml`:
//! [`StoreLocation::resolve`]). Each backend has its own migrations, embedded
//! in the binary, under the same numbers; a test proves the two schemas the
//! same.
//!
//! Every query the engine runs is plain SQL both accept (`$N` parameters, no
//! SQLite-only functions), and every row is read as an [`AnyRow`] (i64,
//! text, blob, floats: the types both stores have), so the row readers and
//! queries are written once. They run on [`Store::pool`] or on a
//! transaction ([`Tx`]): sqlx's pool and transactions on PostgreSQL; on
//! SQLite, berth's own connections, which run each statement on the
//! calling thread instead of sending it to a worker thread and waiting for
//! the answer (`store/direct.rs`, `store/pool.rs`). On SQLite, write transactions start with
//! `BEGIN IMMEDIATE` so that two processes never both read-then-upgrade and
//! fail with "database is locked"; the busy timeout makes them queue
//! instead. On PostgreSQL a write transaction is a `BEGIN` (read committed)
//! and writers run side by side: what needs one writer at a time takes a
//! narrow advisory lock for it ([`Tx::lock`], [`StoreLock`]) — the event
//! log's appends (so ids commit in order for `id > $n` followers), the
//! outbox's drain, and the few writes that read a set of rows and decide
//! from it (a PR's next number, a free berth uid, a lease, an agent's row
//! before it exists). Claims are conditional updates (`… WHERE status =
//! 'queued' RETURNING`), which PostgreSQL re-checks on the row's newest
//! version after waiting for its lock, and the task claim picks its
//! candidate with `FOR UPDATE SKIP LOCKED` so claimers do not all race for
//! the same oldest row. On SQLite every [`Tx::lock`] is a no-op: the
//! database's one writer already holds them all.
//!
//! These narrow locks are PostgreSQL's default (issue 23). Two writers that
//! lock the same things in opposite orders can still deadlock, and
//! PostgreSQL then aborts one: the writes that can meet such a cycle run
//! through [`Store::retrying`] (`store/retry.rs`), which runs the aborted
//! transaction's whole body again. Where a cycle was found its order is
//! fixed at the root too: a task's archive or removal takes its project's
//! lock first, as a prompt's reservation does, so the two never hold each
//! other's rows. `BERTH_STORE_LOCKS=single` (every process of the store
//! alike) goes back to one lock every writer takes first, SQLite's single
//! writer copied: no deadlock, and one writer at a time across hosts.
//!
//! Within one process, write transactions also queue on a gate *before* they
//! take a connection: a write transaction holds at most one connection, and
//! a writer waiting for its turn holds none, so the readers a transaction
//! does (and every other reader) always find a connection. Without the gate,
//! twenty concurrent approvals each held a connection of sqlx's bounded pool
//! while waiting for SQLite's write lock, and the one holding the lock
//! waited for a connection to read with: 30 s stalls, 500s, and outcomes
//! lost. On SQLite the gate also keeps this process's writers from taking
//! turns at SQLite's lock by sleeping: one waits at the gate, in order.
//!
//! A connection goes back to the pool clean or not at all: after a failed
//! write (a full disk fails the `COMMIT`, and SQLite may already have rolled
//! the transaction back, so a `ROLLBACK` fails and the driver still counts
//! a transaction open) the connection is closed instead of handed out again
//! with every later `BEGIN` failing on it.

use std::borrow::Cow;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::migrate::{MigrateError, Migration, MigrationType, Migrator};
use sqlx::pool::PoolConnectionMetadata;
use sqlx::{AnyConnection, AnyPool, Connection};
use tokio::sync::{Mutex, OwnedMutexGuard};

use crate::archive::StoreConfig;
use crate::error::{EngineError, Result};
use crate::state::StateDir;

mod checkpoints;
mod direct;
pub mod keeper;
mod pool;
mod retry;
mod sqlite;

use pool::TxInner;
pub use pool::{DirectPool, StorePool, TxConn};
use sqlite::{direct_pool, sqlite_pool};

/// SQLite's migrations, in order. Append; never edit one that shipped.
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
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
    (
        13,
        "insertion order",
        include_str!("../migrations/0013_insertion_order.sql"),
    ),
    (
        14,
        "routed approval",
        include_str!("../migrations/0014_routed_approval.sql"),
    ),
    (
        15,
        "outbox trigger",
        include_str!("../migrations/0015_outbox_trigger.sql"),
    ),
];

/// PostgreSQL's migrations: SQLite's schema as of its migration 12 in one
/// step, then one file per later SQLite migration, under the same number.
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        12,
        "schema as of sqlite 12",
        include_str!("../migrations/postgres/0012_schema.sql"),
    ),
    (
        13,
        "insertion order",
        include_str!("../migrations/postgres/0013_insertion_order.sql"),
    ),
    (
        14,
        "routed approval",
        include_str!("../migrations/postgres/0014_routed_approval.sql"),
    ),
    (
        15,
        "outbox trigger",
        include_str!("../migrations/postgres/0015_outbox_trigger.sql"),
    ),
];

/// The environment variable naming the store by URL; it wins over
/// `store.toml`.
pub const STORE_ENV: &str = "BERTH_STORE";

/// How long a write waits for SQLite's lock (another process) and for its
/// turn at this process's gate.
const BUSY: Duration = Duration::from_secs(30);

/// Connections in the pool: one for the writer, the rest for readers.
const CONNECTIONS: u32 = 8;

/// The database a store is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Its name in messages and JSON: `sqlite`, `postgres`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }

    /// The SQL for the text at `key` of the JSON object in TEXT `column`:
    /// the one expression the two stores spell differently.
    pub(crate) fn json_text(self, column: &str, key: &str) -> String {
        match self {
            Backend::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Backend::Postgres => format!("(({column})::json ->> '{key}')"),
        }
    }

    /// What a `SELECT` inside a write transaction ends with to lock the
    /// rows it reads until the transaction ends, so that what it decides
    /// from them still holds at commit: `FOR UPDATE` on PostgreSQL; nothing
    /// on SQLite, whose write transaction is the only writer.
    pub(crate) fn for_update(self) -> &'static str {
        match self {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE",
        }
    }

    /// [`Backend::for_update`], passing over rows another transaction
    /// holds: for a claim, which takes any one candidate.
    pub(crate) fn for_update_skip_locked(self) -> &'static str {
        match self {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        }
    }

    /// The backend a connection talks to (sqlx's name for its driver).
    pub fn of(conn: &AnyConnection) -> Backend {
        if conn.backend_name() == "PostgreSQL" {
            Backend::Postgres
        } else {
            Backend::Sqlite
        }
    }
}

/// What `berth store migrate` says: the store (a URL's password hidden),
/// its backend, the newest migration this binary knows, and the versions
/// applied to the store.
#[derive(Debug, Clone, serde::Serialize)]
pub struct MigrationReport {
    pub store: String,
    pub backend: &'static str,
    pub latest: i64,
    pub applied: Vec<i64>,
}

/// Where the store is: a SQLite file (the embedded default, `<state>/berth.db`)
/// or a PostgreSQL server's database, by URL.
#[derive(Clone, PartialEq, Eq)]
pub enum StoreLocation {
    Sqlite(PathBuf),
    Postgres(String),
}

impl std::fmt::Debug for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

/// The location for messages: a URL's password never shows.
impl std::fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreLocation::Sqlite(path) => write!(f, "{}", path.display()),
            StoreLocation::Postgres(url) => f.write_str(&redacted(url)),
        }
    }
}

/// `url` with the password between `:` and `@` of its authority replaced.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) if userinfo.contains(':') => {
            let user = userinfo.split(':').next().unwrap_or_default();
            format!("{scheme}://{user}:***@{host}{tail}")
        }
        _ => url.to_string(),
    }
}

impl StoreLocation {
    /// A store URL: `postgres://…` or `postgresql://…` names a PostgreSQL
    /// database; `sqlite:PATH` (or `sqlite://PATH`) a SQLite file. Anything
    /// else is refused, never taken for a file name.
    pub fn parse(url: &str) -> Result<StoreLocation> {
        let url = url.trim();
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreLocation::Postgres(url.to_string()));
        }
        if let Some(path) = url.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if !path.is_empty() {
                return Ok(StoreLocation::Sqlite(PathBuf::from(path)));
            }
        }
        Err(EngineError::StoreUrl { url: redacted(url) })
    }

    /// The store of `state`: `$BERTH_STORE` when set, else `[store] url` in
    /// its `store.toml`, else its SQLite file.
    pub fn resolve(state: &StateDir) -> Result<StoreLocation> {
        if let Some(url) = std::env::var(STORE_ENV)
            .ok()
            .filter(|v| !v.trim().is_empty())
        {
            return StoreLocation::parse(&url);
        }
        match StoreConfig::load(state)?.store.url {
            Some(url) => StoreLocation::parse(&url),
            None => Ok(StoreLocation::Sqlite(state.db())),
        }
    }

    pub fn backend(&self) -> Backend {
        match self {
            StoreLocation::Sqlite(_) => Backend::Sqlite,
            StoreLocation::Postgres(_) => Backend::Postgres,
        }
    }
}

/// A handle on the store; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: StorePool,
    location: StoreLocation,
    /// One write transaction at a time in this process (see the module docs).
    writer: Arc<Mutex<()>>,
    /// On PostgreSQL with `BERTH_STORE_LOCKS=single` ([`single_lock_asked`]),
    /// every write transaction takes [`WRITER_LOCK`] first (one writer
    /// across processes); by default only the narrow locks. The store
    /// benchmark switches it ([`Store::serialise_writers`]).
    serialised: Arc<AtomicBool>,
}

/// A lock a PostgreSQL write transaction takes for what must have one
/// writer at a time across processes; released at commit or rollback.
/// Each is an advisory lock in berth's own key space ([`LOCK_SPACE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreLock<'a> {
    /// Appending to the event log (and the outbox, whose rows are the
    /// log's ids): an identity hands out ids as rows are inserted, not as
    /// they commit, so without it a follower reading `id > $n` could pass
    /// an id whose transaction commits later and miss it for good. Taken by
    /// [`crate::events::emit`] on a transaction's first event.
    EventLog,
    /// Draining the outbox: two drainers never take one message twice.
    OutboxDrain,
    /// Numbering a new PR (`MAX(number) + 1`).
    PrNumbers,
    /// Choosing a free berth uid (every agent's uid is read).
    BerthUids,
    /// Writes that read an agent's rows and decide from them: its lease,
    /// its activation (the row may not exist yet to lock).
    Agent(&'a str),
    /// Writes that read a task's pipeline run and decide from it (its
    /// lease, its start).
    Task(&'a str),
    /// Writes that number a PR's reviews, threads and comments
    /// (`MAX(seq) + 1` per PR), or read its automation state.
    Pr(&'a str),
    /// Writes that count a project's running sessions against its limit.
    Project(&'a str),
}

impl<'a> StoreLock<'a> {
    /// The lock's two keys: a class, and a name within it (hashed by the
    /// server: `hashtext`). A collision only makes two unrelated writers
    /// queue.
    fn keys(self) -> (i32, &'a str) {
        match self {
            StoreLock::EventLog => (1, "events"),
            StoreLock::OutboxDrain => (2, "outbox"),
            StoreLock::PrNumbers => (3, "prs"),
            StoreLock::BerthUids => (4, "uids"),
            StoreLock::Agent(name) => (5, name),
            StoreLock::Task(id) => (6, id),
            StoreLock::Pr(id) => (7, id),
            StoreLock::Project(name) => (8, name),
        }
    }
}

/// The channel a PostgreSQL transaction that appended to the event log
/// notifies at commit.
pub(crate) const LOG_CHANNEL: &str = "berth_events";

/// The high half of every class berth's advisory locks use ("bt" in
/// ASCII), so they do not meet another application's in a shared
/// database.
const LOCK_SPACE: i32 = 0x6274_0000;

/// A write transaction, holding this process's write gate until it is
/// committed or dropped (a drop rolls back). It derefs to its connection,
/// so queries run on it with `.execute(&mut *tx)`.
#[derive(Debug)]
pub struct Tx {
    // Field order is drop order: the transaction (rolled back when still
    // open) goes before the gate opens for the next writer.
    conn: TxConn,
    _turn: OwnedMutexGuard<()>,
    backend: Backend,
    /// Whether this transaction took the writer lock ([`Store::serialise_writers`]),
    /// which covers every other.
    serialised: bool,
    /// Whether this transaction appended to the event log: it holds
    /// [`StoreLock::EventLog`] and has queued its notification.
    appended: bool,
}

impl Tx {
    /// Commits. On failure the transaction is rolled back and its
    /// connection closed if the rollback could not make it clean.
    pub async fn commit(self) -> std::result::Result<(), sqlx::Error> {
        let Tx { conn, .. } = self;
        match conn.0 {
            // On failure the connection's drop rolls back and closes it
            // when that did not leave it clean.
            TxInner::Sqlite(mut held) => held.exec_plain("COMMIT"),
            TxInner::Postgres(tx) => tx.commit().await,
        }
    }

    /// Rolls back explicitly (a drop does the same).
    pub async fn rollback(self) -> std::result::Result<(), sqlx::Error> {
        let Tx { conn, .. } = self;
        match conn.0 {
            TxInner::Sqlite(mut held) => held.exec_plain("ROLLBACK"),
            TxInner::Postgres(tx) => tx.rollback().await,
        }
    }

    /// Takes `lock` until this transaction ends (PostgreSQL; on SQLite the
    /// transaction is already the only writer). Take a keyed lock before
    /// the rows it guards are read, and before the transaction's first
    /// event: the event log's lock is always the last one a transaction
    /// takes, so two transactions never wait for each other's.
    pub async fn lock(&mut self, lock: StoreLock<'_>) -> Result<()> {
        if self.backend != Backend::Postgres {
            return Ok(());
        }
        let appending = lock == StoreLock::EventLog;
        if appending {
            if self.appended {
                return Ok(());
            }
            self.appended = true;
        }
        let (class, name) = lock.keys();
        // A first append also queues the log's notification, which
        // PostgreSQL delivers to listeners at commit ([`crate::log_signal`]):
        // one round trip for both.
        let sql = match (appending, self.serialised) {
            (false, true) => return Ok(()),
            (false, false) => "SELECT pg_advisory_xact_lock($1, hashtext($2))",
            (true, false) => "SELECT pg_advisory_xact_lock($1, hashtext($2)), pg_notify($3, '')",
            (true, true) => "SELECT $1, $2, pg_notify($3, '')",
        };
        sqlx::query(sql)
            .bind(LOCK_SPACE | class)
            .bind(name)
            .bind(LOG_CHANNEL)
            .execute(&mut self.conn)
            .await
            .map_err(EngineError::store("taking a store lock"))?;
        Ok(())
    }

    /// The backend this transaction runs on.
    pub fn backend(&self) -> Backend {
        self.backend
    }
}

impl Deref for Tx {
    type Target = TxConn;
    fn deref(&self) -> &TxConn {
        &self.conn
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut TxConn {
        &mut self.conn
    }
}

impl Store {
    /// Opens (and with `create`, creates) the SQLite store at `path` and
    /// applies pending migrations.
    pub async fn open(path: &Path, create: bool) -> Result<Store> {
        Store::connect(&StoreLocation::Sqlite(path.to_path_buf()), create).await
    }

    /// Opens the store at `location` and applies pending migrations. With
    /// `create`, a SQLite file is created when missing; a PostgreSQL
    /// database must exist (its tables are the migrations' to create).
    pub async fn connect(location: &StoreLocation, create: bool) -> Result<Store> {
        Store::connect_pool(location, create, CONNECTIONS).await
    }

    /// Opens the store at `location` for a process that runs one command
    /// and exits (the CLI). On PostgreSQL, with a single connection: sqlx
    /// gives a released connection back through a task it spawns, after a
    /// ping on the connection's worker, and a pool with room for more found
    /// none idle when the next query came a moment later and opened another
    /// (a connection's set-up, each time). With one, the next query waits
    /// for that return instead; a read on the pool while this task holds a
    /// [`Tx`] would wait for the transaction's own connection until `BUSY`:
    /// the engine reads through the transaction inside one, and the CLI's
    /// tests run every one-shot command on this store. SQLite's connections
    /// are berth's own (`store/direct.rs`), given back at once: one serves a
    /// one-shot command's reads and writes in turn.
    pub async fn open_one_shot(location: &StoreLocation) -> Result<Store> {
        Store::connect_pool(location, false, 1).await
    }

    async fn connect_pool(
        location: &StoreLocation,
        create: bool,
        connections: u32,
    ) -> Result<Store> {
        sqlx::any::install_default_drivers();
        let pool = match location {
            StoreLocation::Sqlite(path) => StorePool::Sqlite(direct_pool(path)),
            StoreLocation::Postgres(url) => {
                StorePool::Postgres(postgres_pool(url, connections).await?)
            }
        };
        let store = Store {
            pool,
            location: location.clone(),
            writer: Arc::new(Mutex::new(())),
            serialised: Arc::new(AtomicBool::new(
                location.backend() == Backend::Postgres && single_lock_asked(),
            )),
        };
        store.migrate(create).await?;
        Ok(store)
    }

    /// The migrations of this store's backend, newest last.
    fn migrations(&self) -> &'static [(i64, &'static str, &'static str)] {
        match self.backend() {
            Backend::Sqlite => SQLITE_MIGRATIONS,
            Backend::Postgres => POSTGRES_MIGRATIONS,
        }
    }

    /// The newest migration this binary knows for this store's backend.
    pub fn latest_migration(&self) -> i64 {
        self.migrations().last().map_or(0, |m| m.0)
    }

    /// Applies pending migrations. A SQLite store whose `user_version`
    /// already names the last migration skips the migrator (which reads its
    /// table and re-hashes every migration's SQL on every open: a cost each
    /// one-shot CLI process paid); only this function writes that version,
    /// after the migrator succeeded, which runs on a sqlx pool of one
    /// connection opened for it alone. PostgreSQL runs the migrator, which
    /// takes an advisory lock: workers starting together migrate once.
    async fn migrate(&self, create: bool) -> Result<()> {
        let latest = self.latest_migration();
        let migrating = match &self.pool {
            StorePool::Sqlite(direct) => {
                // The first connection, which creates the file when asked,
                // back in the idle list for the next query.
                drop(
                    direct
                        .take(create)
                        .await
                        .map_err(EngineError::store("opening the store"))?,
                );
                let version: i64 = sqlx::query_scalar("PRAGMA user_version")
                    .fetch_one(&self.pool)
                    .await
                    .map_err(EngineError::store("reading the store's version"))?;
                if version == latest {
                    return Ok(());
                }
                let StoreLocation::Sqlite(path) = &self.location else {
                    return Err(EngineError::corrupt(
                        "opening the store",
                        "backend mismatch",
                    ));
                };
                sqlite_pool(path, false, 1).await?
            }
            StorePool::Postgres(pool) => pool.clone(),
        };
        let sqlite = self.backend() == Backend::Sqlite;
        let migrations: Vec<Migration> = self
            .migrations()
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
            .run(&migrating)
            .await
            .map_err(|source| match source {
                // A migration this binary does not know, applied by a newer
                // one: say so (sqlx says only that it is missing).
                MigrateError::VersionMissing(found) if found > latest => EngineError::StoreNewer {
                    store: self.location.to_string(),
                    found,
                    known: latest,
                },
                source => EngineError::Migrate {
                    store: self.location.to_string(),
                    source,
                },
            })?;
        if sqlite {
            // A literal: PRAGMA takes no bound parameters.
            let recorded = sqlx::query(&format!("PRAGMA user_version = {latest}"))
                .execute(&migrating)
                .await;
            migrating.close().await;
            recorded.map_err(EngineError::store("recording the store's version"))?;
        }
        Ok(())
    }

    /// Opens the store at `location` (which must exist: a SQLite file `berth
    /// init` made, a PostgreSQL database someone created), applies what is
    /// pending, and says what the store holds now: `berth store migrate`.
    pub async fn migrate_at(location: &StoreLocation) -> Result<MigrationReport> {
        if let StoreLocation::Sqlite(path) = location
            && !path.is_file()
        {
            return Err(EngineError::StateMissing {
                path: path.parent().unwrap_or(path).to_path_buf(),
            });
        }
        let store = Store::connect(location, false).await?;
        let report = MigrationReport {
            store: location.to_string(),
            backend: store.backend().name(),
            latest: store.latest_migration(),
            applied: store.applied_migrations().await?,
        };
        store.close().await;
        Ok(report)
    }

    /// The migrations applied to this store (their versions, oldest first).
    pub async fn applied_migrations(&self) -> Result<Vec<i64>> {
        sqlx::query_scalar(
            "SELECT version FROM _sqlx_migrations WHERE success = $1 ORDER BY version",
        )
        .bind(true)
        .fetch_all(&self.pool)
        .await
        .map_err(EngineError::store("reading the store's migrations"))
    }

    /// Where reads and single statements run: `sqlx::query(…)` on it.
    pub fn pool(&self) -> &StorePool {
        &self.pool
    }

    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    pub fn backend(&self) -> Backend {
        self.location.backend()
    }

    /// A write transaction: waits for this process's write gate, then
    /// begins: on SQLite with the store's write lock taken up front (`BEGIN
    /// IMMEDIATE`), on PostgreSQL a plain `BEGIN`, beside other processes'
    /// writers; what must have one writer at a time takes its own lock
    /// ([`Tx::lock`]). Reads never wait for it. Never call it while holding
    /// a `Tx` (it would wait for itself until `BUSY` and fail).
    pub async fn write(&self, op: &'static str) -> Result<Tx> {
        let turn = tokio::time::timeout(BUSY, self.writer.clone().lock_owned())
            .await
            .map_err(|_| EngineError::StoreBusy {
                op,
                secs: BUSY.as_secs(),
            })?;
        let (conn, serialised) = match &self.pool {
            StorePool::Sqlite(direct) => {
                let mut held = direct.take(false).await.map_err(EngineError::store(op))?;
                // SQLite's write lock up front; another process holding it
                // is waited for with async sleeps, never on this thread.
                held.run("BEGIN IMMEDIATE", &[], direct::Want::All, false)
                    .await
                    .map_err(|e| match e {
                        sqlx::Error::Database(db) if db.code().as_deref() == Some("5") => {
                            EngineError::StoreBusy {
                                op,
                                secs: BUSY.as_secs(),
                            }
                        }
                        e => EngineError::store(op)(e),
                    })?;
                (TxConn(TxInner::Sqlite(held)), false)
            }
            StorePool::Postgres(pool) => {
                settle_released().await;
                let mut tx = pool.begin().await.map_err(EngineError::store(op))?;
                let serialised = self.serialised.load(Ordering::Relaxed);
                if serialised {
                    sqlx::query("SELECT pg_advisory_xact_lock($1)")
                        .bind(WRITER_LOCK)
                        .execute(&mut *tx)
                        .await
                        .map_err(EngineError::store(op))?;
                }
                (TxConn(TxInner::Postgres(tx)), serialised)
            }
        };
        Ok(Tx {
            conn,
            _turn: turn,
            backend: self.backend(),
            serialised,
            appended: false,
        })
    }

    /// With `on`, every later write transaction on PostgreSQL takes one
    /// lock every writer of every process takes first (SQLite's single
    /// writer, copied: `BERTH_STORE_LOCKS=single`); off, only the narrow
    /// locks (the default). For the store benchmark and the locks' own
    /// tests; all writers must agree on it (a writer without it is not
    /// excluded by it).
    #[doc(hidden)]
    pub fn serialise_writers(&self, on: bool) {
        self.serialised.store(on, Ordering::Relaxed);
    }

    /// For a process that serves many requests (`berth serve`, the MCP
    /// server): on SQLite, the WAL's checkpoints run on a thread of the
    /// store's own instead of in the commit that crosses the WAL's size,
    /// so no request waits for one (`store/checkpoints.rs`). Nothing on
    /// PostgreSQL.
    pub fn checkpoint_in_background(&self) {
        if let StorePool::Sqlite(direct) = &self.pool {
            direct.checkpoint_in_background();
        }
    }

    /// For a one-shot process on a state whose store keeper runs: a commit
    /// that crosses the WAL's size leaves the checkpoint to the keeper
    /// (`store/keeper.rs`). Nothing on PostgreSQL.
    pub fn checkpoint_by_keeper(&self) {
        if let StorePool::Sqlite(direct) = &self.pool {
            direct.checkpoint_by_keeper();
        }
    }

    /// Closes the pool. On SQLite the WAL stays as it is for the next
    /// process (`store/sqlite.rs`); SQLite checkpoints it as it grows, on commit.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Whether `BERTH_STORE_LOCKS=single` asks for one lock every PostgreSQL
/// writer takes first, instead of the narrow locks (the default, also
/// named by `narrow`). The narrow locks let writers on several hosts run
/// side by side; two that update the same rows in opposite orders can
/// deadlock, and the writes where that can happen are run again
/// ([`Store::retrying`]). One lock for every writer (as SQLite has) cannot
/// deadlock, at the cost of one writer at a time: the way back if a cycle
/// the retry does not cover shows up. Another value is warned about and
/// taken for the default.
fn single_lock_asked() -> bool {
    match std::env::var("BERTH_STORE_LOCKS") {
        Ok(v) if v == "single" => true,
        Ok(v) if v.is_empty() || v == "narrow" => false,
        Ok(v) => {
            tracing::warn!(
                value = %v,
                "BERTH_STORE_LOCKS is `single` or `narrow` (the default); taking the narrow locks"
            );
            false
        }
        Err(_) => false,
    }
}

/// The advisory lock every PostgreSQL write transaction takes first with
/// `BERTH_STORE_LOCKS=single` ("berth" in ASCII, so it does not meet another
/// application's in a shared database): [`Store::serialise_writers`].
const WRITER_LOCK: i64 = 0x0062_6572_7468;

/// What a pool's hook on a connection returns.
type PoolHook<'c, T> =
    Pin<Box<dyn Future<Output = std::result::Result<T, sqlx::Error>> + Send + 'c>>;

/// A PostgreSQL pool over `url`; sqlx pings a connection before handing it
/// out (a server can hang up).
async fn postgres_pool(url: &str, connections: u32) -> Result<AnyPool> {
    let opts =
        AnyConnectOptions::from_str(url).map_err(EngineError::store("configuring the store"))?;
    AnyPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(BUSY)
        .after_release(release_clean)
        .connect_with(opts)
        .await
        .map_err(EngineError::store("opening the store"))
}

/// Whether a released connection goes back to the pool: only clean.
fn release_clean(conn: &mut AnyConnection, _meta: PoolConnectionMetadata) -> PoolHook<'_, bool> {
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
}

/// Lets the connection this task released a moment ago start back to the
/// pool before it takes one. sqlx returns a dropped connection through a
/// task it spawns, which runs only once this task yields. The yield is not
/// enough on its own: that task pings the connection on its worker thread
/// before it is idle again, so a pool with room for more may still open
/// another (a file open and a parse of the whole schema). One-shot
/// commands therefore use a one-connection store
/// ([`Store::open_one_shot`]), whose next query waits for the return.
async fn settle_released() {
    tokio::task::yield_now().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_is_postgres_or_sqlite_and_nothing_else() {
        assert_eq!(
            StoreLocation::parse("postgres://u@h/db").unwrap().backend(),
            Backend::Postgres
        );
        assert_eq!(
            StoreLocation::parse("postgresql://u@h/db")
                .unwrap()
                .backend(),
            Backend::Postgres
        );
        assert_eq!(
            StoreLocation::parse("sqlite:/srv/b.db").unwrap(),
            StoreLocation::Sqlite(PathBuf::from("/srv/b.db"))
        );
        assert_eq!(
            StoreLocation::parse("sqlite:///srv/b.db").unwrap(),
            StoreLocation::Sqlite(PathBuf::from("/srv/b.db"))
        );
        for bad in ["", "sqlite:", "/srv/b.db", "mysql://u@h/db", "postgres:/x"] {
            assert!(StoreLocation::parse(bad).is_err(), "{bad}");
        }
    }

    /// Another process's write lock is waited for with async sleeps (the
    /// runtime's one thread goes on running other tasks meanwhile), and the
    /// write then starts; a transaction dropped unfinished leaves nothing,
    /// and its connection serves the next write.
    #[tokio::test]
    async fn a_write_waits_for_another_writer_off_the_thread_and_a_dropped_one_leaves_nothing() {
        use std::sync::atomic::AtomicU32;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("berth.db");
        let store = Store::open(&path, true).await.unwrap();
        let mut other = direct::DirectSqlite::open(&path, false, "").unwrap();
        other.exec_plain("BEGIN IMMEDIATE").unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            other.exec_plain("COMMIT").unwrap();
        });
        let ticks = Arc::new(AtomicU32::new(0));
        let ticker = tokio::spawn({
            let ticks = Arc::clone(&ticks);
            async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    ticks.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        let tx = store.write("a test").await.unwrap();
        ticker.abort();
        releaser.join().unwrap();
        assert!(
            ticks.load(Ordering::Relaxed) >= 3,
            "the wait held the thread"
        );
        tx.commit().await.unwrap();

        let append = "INSERT INTO session_events (at, type, actor_kind, actor_id, payload) \
                      VALUES ($1, 'test.appended', 'user', 'test', '{}')";
        let mut tx = store.write("a test").await.unwrap();
        sqlx::query(append)
            .bind(1_i64)
            .execute(&mut *tx)
            .await
            .unwrap();
        drop(tx);
        let count = || async {
            sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM session_events")
                .fetch_one(store.pool())
                .await
                .unwrap()
        };
        assert_eq!(count().await, 0);
        let mut tx = store.write("a test").await.unwrap();
        sqlx::query(append)
            .bind(2_i64)
            .execute(&mut *tx)
            .await
            .unwrap();
        tx.commit().await.unwrap();
        assert_eq!(count().await, 1);
    }

    #[test]
    fn a_urls_password_never_shows() {
        let at = StoreLocation::parse("postgres://berth:s3cret@db:5432/berth?sslmode=require")
            .unwrap()
            .to_string();
        assert_eq!(at, "postgres://berth:***@db:5432/berth?sslmode=require");
        assert!(!format!("{at:?}").contains("s3cret"));
        let err = StoreLocation::parse("mysql://u:s3cret@h/db").unwrap_err();
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert_eq!(redacted("postgres://u@h/db"), "postgres://u@h/db");
    }
}
