//! Where the store's queries run: [`StorePool`], what `Store::pool()` gives
//! for reads and single statements, and [`TxConn`], what a write
//! transaction derefs to. Both are sqlx executors over the `Any` database,
//! so every query of the engine is written once, `sqlx::query(…)` run on
//! `store.pool()` or `&mut *tx`, whichever the backend.
//!
//! On PostgreSQL they are sqlx's pool and transaction. On SQLite they are
//! berth's own connections (`store/direct.rs`), each statement run on the
//! task's own thread: a connection is taken from an idle list (opened when
//! the list is empty), used, and put back, so a read costs no trip to
//! another thread. A statement SQLite refuses as busy (another process
//! writing) is run again after an async sleep, never waited for on the
//! async thread, until [`super::BUSY`] has passed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::{self, TryStreamExt};
use sqlx::any::{AnyQueryResult, AnyRow, AnyStatement, AnyTypeInfo};
use sqlx::{Any, AnyPool, Either, Execute, Executor, Transaction};
use sqlx_core::any::AnyValueKind;
use sqlx_core::describe::Describe;

use super::BUSY;
use super::checkpoints::Checkpoints;
use super::direct::{DirectSqlite, RunError, Want};

type BoxStream<'a, T> = std::pin::Pin<Box<dyn futures_util::Stream<Item = T> + Send + 'a>>;
type BoxFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

/// Idle SQLite connections kept for the next query; more are opened when
/// tasks on several threads query at once, and closed when given back past
/// this many.
const IDLE_KEPT: usize = 4;

/// The store's connections: sqlx's pool on PostgreSQL, berth's own on
/// SQLite. Cheap to clone.
#[derive(Debug, Clone)]
pub enum StorePool {
    Sqlite(Arc<DirectPool>),
    Postgres(AnyPool),
}

impl StorePool {
    /// Closes every idle connection (SQLite: the ones in use close when
    /// given back after this) or the whole pool (PostgreSQL).
    pub async fn close(&self) {
        match self {
            StorePool::Sqlite(direct) => direct.close(),
            StorePool::Postgres(pool) => pool.close().await,
        }
    }
}

/// SQLite connections to one file, opened with the store's settings.
#[derive(Debug)]
pub struct DirectPool {
    path: PathBuf,
    /// The PRAGMAs each connection runs once, as it opens.
    settings: String,
    idle: Mutex<Idle>,
    checkpoints: Arc<Checkpoints>,
}

#[derive(Debug, Default)]
struct Idle {
    connections: Vec<DirectSqlite>,
    closed: bool,
}

impl DirectPool {
    pub(super) fn new(path: PathBuf, settings: String) -> DirectPool {
        DirectPool {
            checkpoints: Checkpoints::new(path.clone(), settings.clone()),
            path,
            settings,
            idle: Mutex::new(Idle::default()),
        }
    }

    /// A long-running process's checkpoints: on a thread of their own, not
    /// on the commit that crosses the WAL's size (`store/checkpoints.rs`).
    pub(super) fn checkpoint_in_background(&self) {
        self.checkpoints.in_background();
    }

    /// A one-shot process on a state whose store keeper runs: its commits
    /// leave the checkpoints to the keeper (`store/keeper.rs`).
    pub(super) fn checkpoint_by_keeper(&self) {
        self.checkpoints.to_keeper();
    }

    #[cfg(test)]
    pub(super) fn checkpoints(&self) -> &Arc<Checkpoints> {
        &self.checkpoints
    }

    /// An idle connection, or a new one (opened off the async threads: the
    /// file's open and its settings can wait on the disk;
    /// `berth_sandbox::blocking_work`).
    pub(super) async fn take(self: &Arc<Self>, create: bool) -> Result<Held, sqlx::Error> {
        if let Some(conn) = self.lock_idle().connections.pop() {
            return Ok(Held {
                conn: Some(conn),
                pool: Arc::clone(self),
            });
        }
        let pool = Arc::clone(self);
        let conn = berth_sandbox::blocking_work::spawn(move || {
            let mut conn = DirectSqlite::open(&pool.path, create, &pool.settings)?;
            conn.checkpoint_with(&pool.checkpoints);
            Ok::<_, sqlx::Error>(conn)
        })
        .await
        .map_err(|e| sqlx::Error::Io(std::io::Error::other(e)))??;
        Ok(Held {
            conn: Some(conn),
            pool: Arc::clone(self),
        })
    }

    /// Puts `conn` back when it is clean (no transaction left open) and
    /// the list has room; otherwise it closes.
    fn give(&self, conn: DirectSqlite) {
        if conn.in_transaction() {
            tracing::warn!(
                "a store connection still holds a transaction after its rollback \
                 (a failed write: a full disk?): closing it"
            );
            return;
        }
        let mut idle = self.lock_idle();
        if !idle.closed && idle.connections.len() < IDLE_KEPT {
            idle.connections.push(conn);
        }
    }

    fn close(&self) {
        let mut idle = self.lock_idle();
        idle.closed = true;
        idle.connections.clear();
        drop(idle);
        self.checkpoints.close();
    }

    fn lock_idle(&self) -> std::sync::MutexGuard<'_, Idle> {
        // A panic while the list was locked left it whole (pushes and pops).
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A connection taken from a [`DirectPool`]: given back when dropped,
/// after a rollback of whatever transaction is still open on it.
#[derive(Debug)]
pub(super) struct Held {
    conn: Option<DirectSqlite>,
    pool: Arc<DirectPool>,
}

impl Held {
    fn conn(&mut self) -> Result<&mut DirectSqlite, sqlx::Error> {
        self.conn.as_mut().ok_or(sqlx::Error::PoolClosed)
    }

    /// Runs plain SQL (`BEGIN`, `COMMIT`, `ROLLBACK`).
    pub(super) fn exec_plain(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        self.conn()?.exec_plain(sql)
    }

    /// Runs `sql` on this connection; a busy refusal is retried (see the
    /// module docs).
    pub(super) async fn run(
        &mut self,
        sql: &str,
        args: &[AnyValueKind<'_>],
        want: Want,
        cache: bool,
    ) -> Result<Vec<Either<AnyQueryResult, AnyRow>>, sqlx::Error> {
        let deadline = tokio::time::Instant::now() + BUSY;
        let mut pause = Duration::from_millis(1);
        loop {
            match self.conn()?.run(sql, args, want, cache) {
                Ok(out) => return Ok(out),
                Err(RunError::Failed(e)) => return Err(e),
                Err(RunError::Busy(busy)) => {
                    if tokio::time::Instant::now() + pause > deadline {
                        return Err(busy.into_error());
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
            }
        }
    }
}

/// A store dropped without [`StorePool::close`] lets its checkpoint thread
/// (if one started) leave too, with its connection.
impl Drop for DirectPool {
    fn drop(&mut self) {
        self.checkpoints.close();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        if conn.in_transaction()
            && let Err(e) = conn.exec_plain("ROLLBACK")
        {
            tracing::debug!(error = %e, "rolling back a dropped store transaction");
        }
        self.pool.give(conn);
    }
}

/// What a write transaction ([`super::Tx`]) derefs to: its connection, to
/// run queries on with `.execute(&mut *tx)`.
#[derive(Debug)]
pub struct TxConn(pub(super) TxInner);

#[derive(Debug)]
pub(super) enum TxInner {
    Sqlite(Held),
    Postgres(Transaction<'static, Any>),
}

/// Runs `query` on berth's SQLite connection `held`: its SQL and its
/// arguments as sqlx encoded them; kept prepared when sqlx would keep it
/// (a query with arguments, not marked one-off).
async fn run_query<'q, E: Execute<'q, Any>>(
    held: &mut Held,
    mut query: E,
    want: Want,
) -> Result<Vec<Either<AnyQueryResult, AnyRow>>, sqlx::Error> {
    let sql = query.sql();
    let persistent = query.persistent();
    let arguments = query.take_arguments().map_err(sqlx::Error::Encode)?;
    let cache = persistent && arguments.is_some();
    let args: Vec<AnyValueKind<'q>> = arguments.map(|a| a.values.0).unwrap_or_default();
    held.run(sql, &args, want, cache).await
}

/// The rows and results of `run`, as sqlx's stream of them.
fn as_stream<'e>(
    run: impl std::future::Future<Output = Result<Vec<Either<AnyQueryResult, AnyRow>>, sqlx::Error>>
    + Send
    + 'e,
) -> BoxStream<'e, Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>> {
    Box::pin(
        stream::once(run)
            .map_ok(|out| stream::iter(out.into_iter().map(Ok)))
            .try_flatten(),
    )
}

/// The first row of `out`.
fn first_row(out: Vec<Either<AnyQueryResult, AnyRow>>) -> Option<AnyRow> {
    out.into_iter().find_map(Either::right)
}

fn unsupported<'e, T: Send + 'e>(what: &str) -> BoxFuture<'e, Result<T, sqlx::Error>> {
    let e = sqlx::Error::Protocol(format!("berth's SQLite connections do not {what}"));
    Box::pin(std::future::ready(Err(e)))
}

impl<'c> Executor<'c> for &'c StorePool {
    type Database = Any;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        match self {
            StorePool::Postgres(pool) => pool.fetch_many(query),
            StorePool::Sqlite(direct) => as_stream(async move {
                run_query(&mut direct.take(false).await?, query, Want::All).await
            }),
        }
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        match self {
            StorePool::Postgres(pool) => pool.fetch_optional(query),
            StorePool::Sqlite(direct) => Box::pin(async move {
                let mut held = direct.take(false).await?;
                Ok(first_row(
                    run_query(&mut held, query, Want::FirstRow).await?,
                ))
            }),
        }
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, Result<AnyStatement<'q>, sqlx::Error>>
    where
        'c: 'e,
    {
        match self {
            StorePool::Postgres(pool) => pool.prepare_with(sql, parameters),
            StorePool::Sqlite(_) => unsupported("prepare statements for sqlx"),
        }
    }

    fn describe<'e, 'q: 'e>(self, sql: &'q str) -> BoxFuture<'e, Result<Describe<Any>, sqlx::Error>>
    where
        'c: 'e,
    {
        match self {
            StorePool::Postgres(pool) => pool.describe(sql),
            StorePool::Sqlite(_) => unsupported("describe statements"),
        }
    }
}

impl<'c> Executor<'c> for &'c mut TxConn {
    type Database = Any;

    fn fetch_many<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxStream<'e, Result<Either<AnyQueryResult, AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        match &mut self.0 {
            TxInner::Postgres(tx) => (&mut **tx).fetch_many(query),
            TxInner::Sqlite(held) => as_stream(run_query(held, query, Want::All)),
        }
    }

    fn fetch_optional<'e, 'q: 'e, E>(
        self,
        query: E,
    ) -> BoxFuture<'e, Result<Option<AnyRow>, sqlx::Error>>
    where
        'c: 'e,
        E: 'q + Execute<'q, Any>,
    {
        match &mut self.0 {
            TxInner::Postgres(tx) => (&mut **tx).fetch_optional(query),
            TxInner::Sqlite(held) => {
                Box::pin(
                    async move { Ok(first_row(run_query(held, query, Want::FirstRow).await?)) },
                )
            }
        }
    }

    fn prepare_with<'e, 'q: 'e>(
        self,
        sql: &'q str,
        parameters: &'e [AnyTypeInfo],
    ) -> BoxFuture<'e, Result<AnyStatement<'q>, sqlx::Error>>
    where
        'c: 'e,
    {
        match &mut self.0 {
            TxInner::Postgres(tx) => (&mut **tx).prepare_with(sql, parameters),
            TxInner::Sqlite(_) => unsupported("prepare statements for sqlx"),
        }
    }

    fn describe<'e, 'q: 'e>(self, sql: &'q str) -> BoxFuture<'e, Result<Describe<Any>, sqlx::Error>>
    where
        'c: 'e,
    {
        match &mut self.0 {
            TxInner::Postgres(tx) => (&mut **tx).describe(sql),
            TxInner::Sqlite(_) => unsupported("describe statements"),
        }
    }
}
