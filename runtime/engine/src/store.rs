//! The store: SQLite on disk through sqlx, in WAL mode, with versioned
//! migrations embedded in the binary.
//!
//! Every query the engine runs is plain SQL that Postgres accepts as well
//! (`$N` parameters, no SQLite-only functions), because Postgres is the store
//! when berth runs across hosts. Write transactions start with
//! `BEGIN IMMEDIATE` so that two processes never both read-then-upgrade and
//! fail with "database is locked"; the busy timeout makes them queue instead.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Sqlite, SqlitePool, Transaction};

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
];

/// A handle on the store; cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    pool: SqlitePool,
    path: PathBuf,
}

pub type Tx = Transaction<'static, Sqlite>;

impl Store {
    /// Opens (and with `create`, creates) the database at `path` and applies
    /// pending migrations.
    pub async fn open(path: &Path, create: bool) -> Result<Store> {
        let opts = SqliteConnectOptions::from_str("sqlite:")
            .map_err(EngineError::store("configuring the store"))?
            .filename(path)
            .create_if_missing(create)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(30))
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(opts)
            .await
            .map_err(EngineError::store("opening the store"))?;
        let store = Store {
            pool,
            path: path.to_path_buf(),
        };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> Result<()> {
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
            })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A write transaction: takes the write lock up front.
    pub async fn write(&self, op: &'static str) -> Result<Tx> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .map_err(EngineError::store(op))
    }

    /// Closes the pool, checkpointing the WAL.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}
