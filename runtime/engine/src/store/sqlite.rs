//! The SQLite side of the store's connections: berth's own connections to
//! the file ([`direct_pool`]), the sqlx pool the migrator runs on
//! ([`sqlite_pool`]), each connection's settings (WAL, `synchronous =
//! NORMAL`, the busy timeout) and the WAL kept between processes. Its own
//! file because `store.rs` holds what both backends share and had grown
//! past 900 lines; nothing here runs on PostgreSQL.

use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Once};

use sqlx::AnyConnection;
use sqlx::AnyPool;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::pool::PoolConnectionMetadata;

use super::{BUSY, DirectPool, PoolHook, release_clean};
use crate::error::{EngineError, Result};

/// Pages of WAL after which a commit checkpoints it (SQLite's default is
/// 1,000, 4 MiB). The WAL is kept between processes, and the first
/// connection of each new process reads every frame written since the
/// last checkpoint to rebuild its index: 2.2 ms at 4 MiB against 0.4 ms
/// small, on every one-shot `berth` command that finds no store keeper
/// holding the index (`store/keeper.rs`). A checkpoint costs its
/// fsyncs once per this many pages: in a one-shot command on the commit
/// that crosses it, in a server on the store's own thread
/// (`store/checkpoints.rs`); every other commit costs none (synchronous =
/// NORMAL).
pub(super) const WAL_PAGES: u32 = 256;

/// What a checkpointed WAL is truncated back to (bytes), so the file does
/// not stay at the largest size it ever reached.
const WAL_BYTES: u64 = 1 << 20;

/// A sqlx SQLite pool, for the migrator: the file in WAL mode, `synchronous
/// = NORMAL`, the busy timeout, foreign keys (sqlx's default) and the WAL
/// kept between processes.
pub(super) async fn sqlite_pool(path: &Path, create: bool, connections: u32) -> Result<AnyPool> {
    keep_wal_on_open();
    let url = sqlite_url(path, create);
    let opts =
        AnyConnectOptions::from_str(&url).map_err(EngineError::store("configuring the store"))?;
    AnyPoolOptions::new()
        .max_connections(connections)
        .acquire_timeout(BUSY)
        .after_connect(sqlite_settings)
        // A local file does not hang up: the ping sqlx sends before
        // each acquire only cost every read a round trip to the
        // connection's worker.
        .test_before_acquire(false)
        .after_release(release_clean)
        .connect_with(opts)
        .await
        .map_err(EngineError::store("opening the store"))
}

/// The store's SQLite connections (`store/direct.rs`) to the file at
/// `path`, with the settings [`sqlite_settings`] gives sqlx's, and the
/// foreign keys sqlx turns on by default.
pub(super) fn direct_pool(path: &Path) -> Arc<DirectPool> {
    keep_wal_on_open();
    Arc::new(DirectPool::new(
        path.to_path_buf(),
        format!("{} PRAGMA foreign_keys = ON;", settings_sql()),
    ))
}

/// The PRAGMAs every connection to the store runs as it opens.
fn settings_sql() -> String {
    format!(
        "PRAGMA busy_timeout = {}; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
         PRAGMA wal_autocheckpoint = {WAL_PAGES}; PRAGMA journal_size_limit = {WAL_BYTES};",
        BUSY.as_millis()
    )
}

/// What sqlx's SQLite options would set, which the Any driver's URL cannot
/// carry (it carries the open mode): the busy timeout ([`BUSY`]), WAL, and
/// `synchronous = NORMAL` (durable at each checkpoint, consistent always);
/// and the WAL kept between processes ([`keep_wal_on_open`]) bounded: it is
/// read whole by each process's first connection (the wal-index is rebuilt
/// when no connection holds it), see [`WAL_PAGES`] and [`WAL_BYTES`].
fn sqlite_settings(conn: &mut AnyConnection, _meta: PoolConnectionMetadata) -> PoolHook<'_, ()> {
    Box::pin(async move {
        let sql = settings_sql();
        sqlx::Executor::execute(&mut *conn, sql.as_str()).await?;
        Ok(())
    })
}

/// `sqlite://PATH?mode=rwc|rw`, the path percent-encoded (sqlx decodes it,
/// so a `%`, `?` or `#` in a directory name stays itself).
fn sqlite_url(path: &Path, create: bool) -> String {
    const PATH: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
        .add(b' ')
        .add(b'"')
        .add(b'#')
        .add(b'%')
        .add(b'<')
        .add(b'>')
        .add(b'?')
        .add(b'`')
        .add(b'{')
        .add(b'}');
    let encoded = percent_encoding::percent_encode(path.as_os_str().as_encoded_bytes(), PATH);
    let mode = if create { "rwc" } else { "rw" };
    format!("sqlite://{encoded}?mode={mode}")
}

/// Registers [`keep_wal`] with SQLite, once per process, for every
/// connection it opens from then on.
fn keep_wal_on_open() {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // No allocation statistics: with them every SQLite allocation takes
        // a process-wide mutex (a few percent of a one-shot command), and
        // berth reads none. Only possible before SQLite initialises, which
        // registering the extension below does; a refusal is only a cost.
        // SAFETY: MEMSTATUS takes one int; called before any connection.
        let rc = unsafe {
            libsqlite3_sys::sqlite3_config(
                libsqlite3_sys::SQLITE_CONFIG_MEMSTATUS,
                0 as std::ffi::c_int,
            )
        };
        if rc != libsqlite3_sys::SQLITE_OK {
            tracing::debug!(rc, "SQLite keeps its allocation statistics");
        }
        // SAFETY: `keep_wal` has the entry point's signature and stays
        // valid for the process's life; SQLite copies the pointer.
        let rc = unsafe { libsqlite3_sys::sqlite3_auto_extension(Some(keep_wal)) };
        if rc != libsqlite3_sys::SQLITE_OK {
            tracing::debug!(rc, "the store's WAL is not kept between processes");
        }
    });
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
///
/// An SQLite auto extension: SQLite calls it as it opens each connection,
/// with the connection's handle (which sqlx's `Any` driver does not give
/// out). It never fails the open: a setting not taken is only a cost.
unsafe extern "C" fn keep_wal(
    db: *mut libsqlite3_sys::sqlite3,
    _err: *mut *mut std::ffi::c_char,
    _api: *const libsqlite3_sys::sqlite3_api_routines,
) -> std::ffi::c_int {
    let mut on: std::ffi::c_int = 1;
    // SAFETY: SQLite passes the handle it is opening, used by no other
    // thread until the open returns. PERSIST_WAL reads and writes one int
    // through the pointer, which lives across the call; NO_CKPT_ON_CLOSE
    // takes an int and an optional int pointer (null: no report back), as
    // SQLite's documentation of sqlite3_db_config gives them.
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
        tracing::debug!(
            persist,
            no_ckpt,
            "the store's WAL is not kept between processes"
        );
    }
    libsqlite3_sys::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlite_path_keeps_its_special_characters() {
        let url = sqlite_url(Path::new("/tmp/a b/%20?#x/berth.db"), true);
        let opts = sqlx::sqlite::SqliteConnectOptions::from_str(&url).unwrap();
        assert_eq!(opts.get_filename(), Path::new("/tmp/a b/%20?#x/berth.db"));
        assert!(url.ends_with("?mode=rwc"), "{url}");
    }
}
