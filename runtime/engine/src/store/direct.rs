//! berth's own SQLite connections, which run each statement on the calling
//! thread. sqlx's SQLite driver gives every connection a worker thread and
//! sends it each statement and each result over channels: a round trip of
//! two thread wake-ups per statement (40–80 µs on a two-core VM, where a
//! sleeping CPU must be woken for each), while the statements berth runs
//! take SQLite 2–20 µs. An executed action ran ten of them (a read, two
//! write transactions of four, the cancel check): most of what the engine
//! added to an exec. Here a statement is a few C calls on the thread that
//! asks, and its rows are read into sqlx's `Any` rows as sqlx's own driver
//! reads them (by each value's SQLite type), so every query and row reader
//! of the engine runs unchanged on either driver.
//!
//! Nothing here waits on another process: a connection's busy timeout is
//! zero, and a statement SQLite refuses as busy (another process holds the
//! write lock) comes back as [`Busy`] for the caller to retry after an
//! async sleep ([`super::pool`]); only a statement that did nothing is
//! busy, so running it again is safe. Each connection is used by one task
//! at a time (it is moved in and out of the store's idle list), which is
//! what SQLite's multi-thread mode asks.

use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use libsqlite3_sys as ffi;
use sqlx::Either;
use sqlx_core::any::{
    AnyColumn, AnyQueryResult, AnyRow, AnyTypeInfo, AnyTypeInfoKind, AnyValue, AnyValueKind,
};
use sqlx_core::ext::ustr::UStr;

use super::checkpoints::Checkpoints;

/// Prepared statements kept per connection, by their SQL; past this many
/// the cache is emptied (SQL built from a variable list of values would
/// otherwise grow it without bound).
const CACHED_STATEMENTS: usize = 256;

/// A statement SQLite refused because another connection holds the lock it
/// needs: nothing was done; run it again later.
#[derive(Debug)]
pub(super) struct Busy;

impl Busy {
    /// SQLite's own error for it, once the caller stops retrying.
    pub(super) fn into_error(self) -> sqlx::Error {
        sqlx::Error::Database(Box::new(SqliteFailure {
            code: ffi::SQLITE_BUSY,
            message: "database is locked".to_string(),
        }))
    }
}

/// What running a statement can end in.
pub(super) enum RunError {
    Busy(Busy),
    Failed(sqlx::Error),
}

impl From<sqlx::Error> for RunError {
    fn from(e: sqlx::Error) -> RunError {
        RunError::Failed(e)
    }
}

/// How much of a query's result the caller wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Want {
    /// Every row and each statement's result, in order.
    All,
    /// The first row, if any (the statement is stopped there, as sqlx's
    /// `fetch_optional` does).
    FirstRow,
}

/// A statement's result columns, shared by every row it yields.
#[derive(Clone)]
struct Columns {
    /// Each column's index by its name.
    names: Arc<sqlx_core::HashMap<UStr, usize>>,
    list: Arc<[AnyColumn]>,
}

/// One prepared statement and its result columns.
struct Prepared {
    stmt: NonNull<ffi::sqlite3_stmt>,
    columns: Option<Columns>,
}

/// An open SQLite connection driven on the calling thread.
pub(super) struct DirectSqlite {
    db: NonNull<ffi::sqlite3>,
    cache: HashMap<String, Prepared>,
    /// Who checkpoints the WAL after this connection's commits, kept for
    /// as long as SQLite may call the hook that points to it.
    wal: Option<Arc<Checkpoints>>,
}

impl std::fmt::Debug for DirectSqlite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectSqlite")
            .field("cached", &self.cache.len())
            .finish()
    }
}

// SAFETY: the handle and its statements are used only through `&mut self`
// (one thread at a time), which SQLite's multi-thread mode
// (SQLITE_OPEN_NOMUTEX) allows; nothing in it is tied to the thread that
// opened it.
unsafe impl Send for DirectSqlite {}

impl DirectSqlite {
    /// Opens the file at `path` (creating it with `create`), with the
    /// store's settings (`settings`: PRAGMAs run once, with the busy
    /// timeout of `settings` in force), then a busy timeout of zero.
    /// Blocking: call it off the async threads.
    pub(super) fn open(path: &Path, create: bool, settings: &str) -> Result<Self, sqlx::Error> {
        let name = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
            sqlx::Error::Configuration(
                format!("the store's path {} holds a NUL byte", path.display()).into(),
            )
        })?;
        let mut flags = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_NOMUTEX;
        if create {
            flags |= ffi::SQLITE_OPEN_CREATE;
        }
        let mut db: *mut ffi::sqlite3 = ptr::null_mut();
        // SAFETY: `name` is a NUL-terminated string alive across the call;
        // `db` receives a handle (or null) that is ours to close.
        let rc = unsafe { ffi::sqlite3_open_v2(name.as_ptr(), &mut db, flags, ptr::null()) };
        let Some(db) = NonNull::new(db) else {
            return Err(sqlx::Error::Io(std::io::Error::other(
                "SQLite could not allocate a connection",
            )));
        };
        let mut conn = DirectSqlite {
            db,
            cache: HashMap::new(),
            wal: None,
        };
        if rc != ffi::SQLITE_OK {
            return Err(conn.error());
        }
        // SAFETY: an open handle; extended codes are a flag on it.
        unsafe { ffi::sqlite3_extended_result_codes(conn.db.as_ptr(), 1) };
        conn.exec_plain(settings)?;
        // SAFETY: an open handle.
        unsafe { ffi::sqlite3_busy_timeout(conn.db.as_ptr(), 0) };
        Ok(conn)
    }

    /// Runs `sql` (statements without parameters or rows: settings,
    /// `BEGIN`, `COMMIT`, `ROLLBACK`). A busy refusal is an error here:
    /// the caller of a statement that can meet one uses [`Self::run`].
    pub(super) fn exec_plain(&mut self, sql: &str) -> Result<(), sqlx::Error> {
        match self.run(sql, &[], Want::All, false) {
            Ok(_) => Ok(()),
            Err(RunError::Failed(e)) => Err(e),
            Err(RunError::Busy(_)) => Err(self.error_with(ffi::SQLITE_BUSY)),
        }
    }

    /// Leaves the checkpoints after this connection's commits to
    /// `checkpoints` (`store/checkpoints.rs`).
    pub(super) fn checkpoint_with(&mut self, checkpoints: &Arc<Checkpoints>) {
        checkpoints.watch(self.db);
        self.wal = Some(Arc::clone(checkpoints));
    }

    /// Whether a transaction is open on this connection.
    pub(super) fn in_transaction(&self) -> bool {
        // SAFETY: an open handle.
        unsafe { ffi::sqlite3_get_autocommit(self.db.as_ptr()) == 0 }
    }

    /// Runs `sql` with `args` (its `$N` parameters name them by position,
    /// from 1; a bare `?` takes the next), statement by statement: each
    /// statement's rows, then its result. With [`Want::FirstRow`], stops at
    /// the first row. With `cache`, a single statement stays prepared for
    /// the next run of the same SQL. [`RunError::Busy`] only when nothing
    /// ran (a busy refusal after an earlier statement of `sql` is a
    /// failure: running it again would repeat that one).
    pub(super) fn run(
        &mut self,
        sql: &str,
        args: &[AnyValueKind<'_>],
        want: Want,
        cache: bool,
    ) -> Result<Vec<Either<AnyQueryResult, AnyRow>>, RunError> {
        let mut out = Vec::new();
        // The usual case: one statement, prepared once per connection.
        if let Some(prepared) = self.cache.get(sql) {
            let stmt = prepared.stmt;
            let columns = prepared.columns.clone();
            self.step_all(stmt, columns, args, want, &mut out)?;
            return Ok(out);
        }
        let mut rest = sql;
        let mut first = true;
        while !rest.trim().is_empty() {
            let (stmt, tail) = self.prepare(rest, cache)?;
            let Some(stmt) = stmt else {
                // Only a comment or white space was left.
                break;
            };
            let single = first && tail.trim().is_empty();
            first = false;
            let columns = self.column_names(stmt);
            let ran_before = !out.is_empty();
            let result = self.step_all(stmt, columns.clone(), args, want, &mut out);
            if single && cache {
                if self.cache.len() >= CACHED_STATEMENTS {
                    self.clear_cache();
                }
                self.cache
                    .insert(sql.to_string(), Prepared { stmt, columns });
            } else {
                // SAFETY: a statement of this connection, used no more.
                unsafe { ffi::sqlite3_finalize(stmt.as_ptr()) };
            }
            match result {
                Err(RunError::Busy(_)) if ran_before => {
                    return Err(RunError::Failed(self.error_with(ffi::SQLITE_BUSY)));
                }
                other => other?,
            }
            if want == Want::FirstRow && out.iter().any(|r| r.is_right()) {
                break;
            }
            rest = tail;
        }
        Ok(out)
    }

    /// Prepares the first statement of `sql` (to be kept with `keep`): the
    /// statement (none for only white space or a comment) and the text
    /// after it.
    fn prepare<'s>(
        &mut self,
        sql: &'s str,
        keep: bool,
    ) -> Result<(Option<NonNull<ffi::sqlite3_stmt>>, &'s str), RunError> {
        let len = c_int::try_from(sql.len()).map_err(|_| {
            RunError::Failed(sqlx::Error::Protocol(
                "a statement longer than 2 GiB".into(),
            ))
        })?;
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let mut tail: *const c_char = ptr::null();
        // SAFETY: `sql` is valid for `len` bytes (no NUL needed with an
        // explicit length); `tail` points into it (or at its end) after
        // the call; the statement is ours to finalize.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(
                self.db.as_ptr(),
                sql.as_ptr().cast(),
                len,
                // A statement kept for reuse says so (SQLite then keeps it
                // out of the connection's small lookaside memory).
                if keep {
                    ffi::SQLITE_PREPARE_PERSISTENT
                } else {
                    0
                },
                &mut stmt,
                &mut tail,
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(self.fail(rc));
        }
        let used = if tail.is_null() {
            sql.len()
        } else {
            // SAFETY: SQLite sets `tail` within `sql` or one past its end.
            let offset = unsafe { tail.offset_from(sql.as_ptr().cast()) };
            usize::try_from(offset).unwrap_or(sql.len()).min(sql.len())
        };
        // SQLite stops at a statement's end, never inside a character.
        let rest = sql.get(used..).unwrap_or("");
        Ok((NonNull::new(stmt), rest))
    }

    /// The names of `stmt`'s result columns, for its rows; none for a
    /// statement without rows.
    fn column_names(&self, stmt: NonNull<ffi::sqlite3_stmt>) -> Option<Columns> {
        // SAFETY: a prepared statement of this connection.
        let count = unsafe { ffi::sqlite3_column_count(stmt.as_ptr()) };
        if count <= 0 {
            return None;
        }
        let mut names = sqlx_core::HashMap::with_capacity(count as usize);
        let mut columns = Vec::with_capacity(count as usize);
        for i in 0..count {
            // SAFETY: `i` is below the column count; the name (UTF-8, owned
            // by the statement) is copied before the next call.
            let name = unsafe {
                let p = ffi::sqlite3_column_name(stmt.as_ptr(), i);
                if p.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(p).to_string_lossy().into_owned()
                }
            };
            let name = UStr::Shared(Arc::from(name.as_str()));
            let ordinal = i as usize;
            names.insert(name.clone(), ordinal);
            columns.push(AnyColumn {
                ordinal,
                name,
                type_info: AnyTypeInfo {
                    kind: AnyTypeInfoKind::Null,
                },
            });
        }
        Some(Columns {
            names: Arc::new(names),
            list: Arc::from(columns),
        })
    }

    /// Binds `args` to `stmt`, steps it to its end (or its first row), and
    /// resets it for the next use, whatever happened.
    fn step_all(
        &mut self,
        stmt: NonNull<ffi::sqlite3_stmt>,
        columns: Option<Columns>,
        args: &[AnyValueKind<'_>],
        want: Want,
        out: &mut Vec<Either<AnyQueryResult, AnyRow>>,
    ) -> Result<(), RunError> {
        // Reset however this ends, a panic included: a statement left
        // mid-way would hold its read snapshot, and every later read on
        // this connection would see the store as it was then.
        let _reset = ResetOnDrop(stmt);
        self.bind(stmt, args)
            .and_then(|()| self.step(stmt, columns.as_ref(), want, out))
    }

    /// Steps the bound `stmt` to its end (or its first row), its rows and
    /// then its result into `out`.
    fn step(
        &mut self,
        stmt: NonNull<ffi::sqlite3_stmt>,
        columns: Option<&Columns>,
        want: Want,
        out: &mut Vec<Either<AnyQueryResult, AnyRow>>,
    ) -> Result<(), RunError> {
        loop {
            // SAFETY: a prepared statement of this connection, bound.
            match unsafe { ffi::sqlite3_step(stmt.as_ptr()) } {
                ffi::SQLITE_ROW => {
                    out.push(Either::Right(self.row(stmt, columns)?));
                    if want == Want::FirstRow {
                        return Ok(());
                    }
                }
                ffi::SQLITE_DONE => {
                    // SAFETY: as above.
                    let read_only = unsafe { ffi::sqlite3_stmt_readonly(stmt.as_ptr()) } != 0;
                    let rows_affected = if read_only {
                        0
                    } else {
                        // SAFETY: an open handle.
                        u64::try_from(unsafe { ffi::sqlite3_changes64(self.db.as_ptr()) })
                            .unwrap_or(0)
                    };
                    out.push(Either::Left(AnyQueryResult {
                        rows_affected,
                        last_insert_id: None,
                    }));
                    return Ok(());
                }
                rc => return Err(self.fail(rc)),
            }
        }
    }

    /// Binds `args` to `stmt`'s parameters, as sqlx's driver does: `$N` or
    /// `?N` is argument N (from 1), a bare `?` the one after the last.
    fn bind(
        &mut self,
        stmt: NonNull<ffi::sqlite3_stmt>,
        args: &[AnyValueKind<'_>],
    ) -> Result<(), RunError> {
        // SAFETY: a prepared statement of this connection.
        let count = unsafe { ffi::sqlite3_bind_parameter_count(stmt.as_ptr()) };
        let mut next = 0usize;
        for param in 1..=count {
            // SAFETY: `param` is within the statement's parameters; the name
            // is owned by the statement and read at once.
            let name = unsafe {
                let p = ffi::sqlite3_bind_parameter_name(stmt.as_ptr(), param);
                (!p.is_null()).then(|| CStr::from_ptr(p).to_bytes())
            };
            let n = match name {
                None => {
                    next += 1;
                    next
                }
                Some(name) => std::str::from_utf8(name.get(1..).unwrap_or_default())
                    .ok()
                    .and_then(|digits| digits.parse::<usize>().ok())
                    .filter(|_| matches!(name.first(), Some(b'$' | b'?')))
                    .ok_or_else(|| {
                        RunError::Failed(sqlx::Error::Protocol(format!(
                            "a parameter named {} (berth binds $N parameters)",
                            String::from_utf8_lossy(name)
                        )))
                    })?,
            };
            next = next.max(n);
            let value = n.checked_sub(1).and_then(|i| args.get(i)).ok_or_else(|| {
                RunError::Failed(sqlx::Error::Protocol(format!(
                    "a statement names parameter {n} of {} bound",
                    args.len()
                )))
            })?;
            let s = stmt.as_ptr();
            // SAFETY: `param` is a parameter of `s`; text and blobs are
            // bound with SQLITE_TRANSIENT, so SQLite copies them before
            // the call returns.
            let rc = unsafe {
                match value {
                    AnyValueKind::Null(_) => ffi::sqlite3_bind_null(s, param),
                    AnyValueKind::Bool(b) => ffi::sqlite3_bind_int(s, param, c_int::from(*b)),
                    AnyValueKind::SmallInt(i) => ffi::sqlite3_bind_int(s, param, c_int::from(*i)),
                    AnyValueKind::Integer(i) => ffi::sqlite3_bind_int(s, param, *i),
                    AnyValueKind::BigInt(i) => ffi::sqlite3_bind_int64(s, param, *i),
                    AnyValueKind::Real(r) => ffi::sqlite3_bind_double(s, param, f64::from(*r)),
                    AnyValueKind::Double(d) => ffi::sqlite3_bind_double(s, param, *d),
                    AnyValueKind::Text(t) => ffi::sqlite3_bind_text64(
                        s,
                        param,
                        t.as_ptr().cast(),
                        t.len() as u64,
                        ffi::SQLITE_TRANSIENT(),
                        ffi::SQLITE_UTF8 as u8,
                    ),
                    AnyValueKind::Blob(b) => ffi::sqlite3_bind_blob64(
                        s,
                        param,
                        b.as_ptr().cast(),
                        b.len() as u64,
                        ffi::SQLITE_TRANSIENT(),
                    ),
                    // AnyValueKind is non-exhaustive: a kind sqlx adds later
                    // is refused, never bound as something else.
                    #[allow(unreachable_patterns)]
                    other => {
                        return Err(RunError::Failed(sqlx::Error::Protocol(format!(
                            "a value of a kind the store cannot bind: {other:?}"
                        ))));
                    }
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(self.fail(rc));
            }
        }
        Ok(())
    }

    /// The current row of `stmt`, each value by its SQLite type (INTEGER is
    /// a BIGINT, REAL a DOUBLE), as sqlx's driver maps them.
    fn row(
        &self,
        stmt: NonNull<ffi::sqlite3_stmt>,
        columns: Option<&Columns>,
    ) -> Result<AnyRow, RunError> {
        let Some(Columns {
            names,
            list: columns,
        }) = columns
        else {
            return Ok(AnyRow {
                column_names: Arc::default(),
                columns: Vec::new(),
                values: Vec::new(),
            });
        };
        let s = stmt.as_ptr();
        let mut values = Vec::with_capacity(columns.len());
        for i in 0..columns.len() {
            let col = i as c_int;
            // SAFETY: `col` is below the statement's column count and the
            // statement is on a row; text and blob pointers are valid for
            // the byte count SQLite gives (read after the pointer, as its
            // documentation asks) until the next step, and copied now.
            let kind = unsafe {
                match ffi::sqlite3_column_type(s, col) {
                    ffi::SQLITE_INTEGER => AnyValueKind::BigInt(ffi::sqlite3_column_int64(s, col)),
                    ffi::SQLITE_FLOAT => AnyValueKind::Double(ffi::sqlite3_column_double(s, col)),
                    ffi::SQLITE_TEXT => {
                        let p = ffi::sqlite3_column_text(s, col);
                        let n = ffi::sqlite3_column_bytes(s, col).max(0) as usize;
                        let bytes = if p.is_null() {
                            &[][..]
                        } else {
                            std::slice::from_raw_parts(p, n)
                        };
                        let text = std::str::from_utf8(bytes).map_err(|e| {
                            RunError::Failed(sqlx::Error::ColumnDecode {
                                index: i.to_string(),
                                source: Box::new(e),
                            })
                        })?;
                        AnyValueKind::Text(text.to_owned().into())
                    }
                    ffi::SQLITE_BLOB => {
                        let p = ffi::sqlite3_column_blob(s, col);
                        let n = ffi::sqlite3_column_bytes(s, col).max(0) as usize;
                        let bytes = if p.is_null() {
                            Vec::new()
                        } else {
                            std::slice::from_raw_parts(p.cast::<u8>(), n).to_vec()
                        };
                        AnyValueKind::Blob(bytes.into())
                    }
                    _ => AnyValueKind::Null(AnyTypeInfoKind::Null),
                }
            };
            values.push(AnyValue { kind });
        }
        Ok(AnyRow {
            column_names: names.clone(),
            columns: columns.to_vec(),
            values,
        })
    }

    /// A failure `rc` of the last call: [`Busy`] when another connection
    /// holds the lock, else the connection's error.
    fn fail(&self, rc: c_int) -> RunError {
        if rc & 0xff == ffi::SQLITE_BUSY {
            return RunError::Busy(Busy);
        }
        RunError::Failed(self.error_with(rc))
    }

    /// The connection's last error.
    fn error(&self) -> sqlx::Error {
        // SAFETY: an open (or failed-to-open) handle.
        let rc = unsafe { ffi::sqlite3_extended_errcode(self.db.as_ptr()) };
        self.error_with(rc)
    }

    /// The error `rc`, with the connection's message.
    fn error_with(&self, rc: c_int) -> sqlx::Error {
        // SAFETY: the message is owned by the handle and copied at once.
        let message = unsafe {
            let p = ffi::sqlite3_errmsg(self.db.as_ptr());
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        sqlx::Error::Database(Box::new(SqliteFailure { code: rc, message }))
    }

    fn clear_cache(&mut self) {
        for (_, prepared) in self.cache.drain() {
            // SAFETY: a statement of this connection, used no more.
            unsafe { ffi::sqlite3_finalize(prepared.stmt.as_ptr()) };
        }
    }
}

/// Resets a statement and clears its bindings when dropped.
struct ResetOnDrop(NonNull<ffi::sqlite3_stmt>);

impl Drop for ResetOnDrop {
    fn drop(&mut self) {
        // SAFETY: a prepared statement of the connection that is stepping
        // it, still alive (statements are finalized only by that
        // connection, after this guard's scope); a reset statement holds no
        // lock and no reference to the arguments (bound as copies).
        unsafe {
            ffi::sqlite3_reset(self.0.as_ptr());
            ffi::sqlite3_clear_bindings(self.0.as_ptr());
        }
    }
}

impl Drop for DirectSqlite {
    fn drop(&mut self) {
        self.clear_cache();
        // SAFETY: every statement was finalized (so the close succeeds);
        // the handle is ours and used no more.
        unsafe { ffi::sqlite3_close(self.db.as_ptr()) };
    }
}

/// A statement SQLite refused, as sqlx's driver reports one: the extended
/// result code (as text) and SQLite's message.
#[derive(Debug)]
pub(super) struct SqliteFailure {
    code: c_int,
    message: String,
}

impl std::fmt::Display for SqliteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "(code: {}) {}", self.code, self.message)
    }
}

impl std::error::Error for SqliteFailure {}

impl sqlx::error::DatabaseError for SqliteFailure {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(self.code.to_string().into())
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn kind(&self) -> sqlx::error::ErrorKind {
        use sqlx::error::ErrorKind;
        match self.code {
            ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                ErrorKind::UniqueViolation
            }
            ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
            ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
            ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::Row;

    /// A row as text, for comparing two drivers' readings of it: each
    /// column's name and its value's kind and value (a NULL as `NULL`:
    /// sqlx tags it with the column's declared type, which no reader sees).
    fn shown(row: &AnyRow) -> String {
        row.columns
            .iter()
            .zip(&row.values)
            .map(|(c, v)| match &v.kind {
                AnyValueKind::Null(_) => format!("{}=NULL", c.name),
                kind => format!("{}={kind:?}", c.name),
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Every value kind, parameters by number (repeated and out of order),
    /// NULLs, expressions without a declared type, RETURNING, and the rows
    /// each write changed: what berth's connection reads is what sqlx's own
    /// SQLite driver reads through `Any`, query for query, on the same file.
    #[tokio::test]
    async fn rows_and_results_read_as_sqlx_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        sqlx::any::install_default_drivers();
        let url = format!("sqlite://{}?mode=rwc", path.display());
        let pool = sqlx::AnyPool::connect(&url).await.unwrap();
        sqlx::raw_sql(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, i INTEGER, r REAL, s TEXT, b BLOB, j TEXT, u TEXT UNIQUE);",
        )
        .execute(&pool)
        .await
        .unwrap();
        let mut direct = DirectSqlite::open(&path, false, "PRAGMA foreign_keys = ON;").unwrap();
        let text = |t: &'static str| AnyValueKind::Text(t.into());
        let steps: Vec<(&str, Vec<AnyValueKind<'static>>)> = vec![
            (
                "INSERT INTO t (i, r, s, b, j, u) VALUES ($1, $2, $3, $4, $5, $6)",
                vec![
                    AnyValueKind::BigInt(i64::MIN),
                    AnyValueKind::Double(-0.5),
                    text("naïve \u{2028} line"),
                    AnyValueKind::Blob(vec![0, 255, 7].into()),
                    text(r#"{"k":"v"}"#),
                    text("a"),
                ],
            ),
            (
                "INSERT INTO t (i, r, s, b, j, u) VALUES ($2, $1, $3, NULL, $3, $4)",
                vec![
                    AnyValueKind::Double(1e300),
                    AnyValueKind::Integer(7),
                    AnyValueKind::Null(AnyTypeInfoKind::Text),
                    text("b"),
                ],
            ),
            (
                "INSERT INTO t (i, s, u) VALUES ($1, $2, $3) RETURNING id, i * 2 AS twice, s",
                vec![AnyValueKind::Bool(true), text(""), text("c")],
            ),
            (
                "UPDATE t SET i = i + $1 WHERE i IS NOT NULL",
                vec![AnyValueKind::SmallInt(3)],
            ),
            (
                "SELECT id, i, r, s, b, json_extract(j, '$.k') AS k, COUNT(*) OVER () AS n, \
                 typeof(r) AS tr, NULL AS absent FROM t ORDER BY id",
                vec![],
            ),
            (
                "SELECT i FROM t WHERE i = $1",
                vec![AnyValueKind::BigInt(1)],
            ),
            ("DELETE FROM t WHERE u = $1", vec![text("c")]),
            ("SELECT COUNT(*), MAX(r), SUM(i) FROM t", vec![]),
        ];
        for (sql, args) in steps {
            // sqlx first: its rows and results, then berth's on a copy of
            // the file's state (each step runs once per driver, so writes
            // run on sqlx's and are undone before berth's run).
            let mut conn = pool.acquire().await.unwrap();
            sqlx::Executor::execute(&mut *conn, "BEGIN").await.unwrap();
            let mut q = sqlx::query(sql);
            for a in &args {
                q = match a.clone() {
                    AnyValueKind::Null(_) => q.bind(None::<String>),
                    AnyValueKind::Bool(b) => q.bind(b),
                    AnyValueKind::SmallInt(v) => q.bind(v),
                    AnyValueKind::Integer(v) => q.bind(v),
                    AnyValueKind::BigInt(v) => q.bind(v),
                    AnyValueKind::Double(v) => q.bind(v),
                    AnyValueKind::Text(v) => q.bind(v.into_owned()),
                    AnyValueKind::Blob(v) => q.bind(v.into_owned()),
                    other => panic!("{other:?}"),
                };
            }
            let theirs: Vec<String> = {
                use futures_util::TryStreamExt;
                sqlx::Executor::fetch_many(&mut *conn, q)
                    .map_ok(|r| match r {
                        Either::Left(done) => format!("done {}", done.rows_affected),
                        Either::Right(row) => shown(&row),
                    })
                    .try_collect()
                    .await
                    .unwrap()
            };
            sqlx::Executor::execute(&mut *conn, "ROLLBACK")
                .await
                .unwrap();
            drop(conn);
            let ours: Vec<String> = match direct.run(sql, &args, Want::All, true) {
                Ok(out) => out
                    .iter()
                    .map(|r| match r {
                        Either::Left(done) => format!("done {}", done.rows_affected),
                        Either::Right(row) => shown(row),
                    })
                    .collect(),
                Err(RunError::Failed(e)) => panic!("{sql}: {e}"),
                Err(RunError::Busy(_)) => panic!("{sql}: busy"),
            };
            // A SELECT's result: sqlx reports the last write's count
            // (sqlite3_changes is the connection's), berth none.
            let theirs: Vec<String> = theirs
                .into_iter()
                .map(|r| {
                    if sql.starts_with("SELECT") && r.starts_with("done") {
                        "done 0".to_string()
                    } else {
                        r
                    }
                })
                .collect();
            assert_eq!(ours, theirs, "{sql}");
            assert!(!ours.is_empty(), "{sql}");
        }
        // The decoders berth's row readers use work on berth's rows.
        let out = direct
            .run(
                "SELECT i, s, b FROM t WHERE u = $1",
                &[text("a")],
                Want::FirstRow,
                true,
            )
            .ok()
            .unwrap();
        let row = out.into_iter().find_map(Either::right).unwrap();
        assert_eq!(row.try_get::<i64, _>("i").unwrap(), i64::MIN + 3);
        assert_eq!(
            row.try_get::<String, _>("s").unwrap(),
            "naïve \u{2028} line"
        );
        assert_eq!(row.try_get::<Vec<u8>, _>(2).unwrap(), [0, 255, 7]);
        assert!(row.try_get::<Option<String>, _>("missing").is_err());
    }

    /// A unique violation is reported as sqlx's driver reports it (the
    /// extended code as text, the kind), and so is a statement SQLite
    /// cannot prepare; the connection stays usable after both.
    #[test]
    fn failures_carry_sqlites_code_and_leave_the_connection_usable() {
        let dir = tempfile::tempdir().unwrap();
        let mut direct = DirectSqlite::open(&dir.path().join("t.db"), true, "").unwrap();
        direct.exec_plain("CREATE TABLE t (u TEXT UNIQUE)").unwrap();
        let insert = "INSERT INTO t (u) VALUES ($1)";
        let a = [AnyValueKind::Text("a".into())];
        assert!(direct.run(insert, &a, Want::All, true).is_ok());
        let Err(RunError::Failed(sqlx::Error::Database(e))) =
            direct.run(insert, &a, Want::All, true)
        else {
            panic!("a duplicate was inserted");
        };
        assert_eq!(e.code().as_deref(), Some("2067"));
        assert_eq!(e.kind(), sqlx::error::ErrorKind::UniqueViolation);
        assert!(matches!(
            direct.run("SELEC nothing", &[], Want::All, true),
            Err(RunError::Failed(sqlx::Error::Database(_)))
        ));
        assert!(matches!(
            direct.run("SELECT $2", &a, Want::All, true),
            Err(RunError::Failed(sqlx::Error::Protocol(_)))
        ));
        let out = direct
            .run("SELECT COUNT(*) FROM t", &[], Want::FirstRow, true)
            .ok()
            .unwrap();
        let row = out.into_iter().find_map(Either::right).unwrap();
        assert_eq!(row.try_get::<i64, _>(0).unwrap(), 1);
        assert!(!direct.in_transaction());
    }

    /// A read that fails mid-row (text that is not UTF-8) leaves no
    /// snapshot behind: the connection's next read sees what another
    /// connection committed since.
    #[test]
    fn a_read_that_fails_mid_row_leaves_no_snapshot_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let wal = "PRAGMA journal_mode = WAL;";
        let mut writer = DirectSqlite::open(&path, true, wal).unwrap();
        writer
            .exec_plain(
                "CREATE TABLE t (s TEXT); INSERT INTO t VALUES ('ok'), (CAST(x'ff' AS TEXT))",
            )
            .unwrap();
        let mut reader = DirectSqlite::open(&path, false, wal).unwrap();
        let all = "SELECT s FROM t WHERE s IS NOT NULL";
        assert!(matches!(
            reader.run(all, &[], Want::All, true),
            Err(RunError::Failed(sqlx::Error::ColumnDecode { .. }))
        ));
        writer.exec_plain("INSERT INTO t VALUES (NULL)").unwrap();
        let count = "SELECT COUNT(*) FROM t";
        let out = reader.run(count, &[], Want::FirstRow, true).ok().unwrap();
        let row = out.into_iter().find_map(Either::right).unwrap();
        assert_eq!(row.try_get::<i64, _>(0).unwrap(), 3);
        // And the failed statement, kept, runs again from its start.
        assert!(reader.run(all, &[], Want::All, true).is_err());
    }

    /// Another connection's write lock makes `BEGIN IMMEDIATE` busy, at
    /// once (no wait on the calling thread), and without side effects: once
    /// the lock is gone the same statement takes it.
    #[test]
    fn a_held_write_lock_is_busy_at_once_and_retrying_takes_it_later() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.db");
        let settings = "PRAGMA busy_timeout = 30000; PRAGMA journal_mode = WAL;";
        let mut holder = DirectSqlite::open(&path, true, settings).unwrap();
        let mut other = DirectSqlite::open(&path, false, settings).unwrap();
        holder.exec_plain("BEGIN IMMEDIATE").unwrap();
        let started = std::time::Instant::now();
        assert!(matches!(
            other.run("BEGIN IMMEDIATE", &[], Want::All, false),
            Err(RunError::Busy(_))
        ));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        assert!(!other.in_transaction());
        // Reads go on beside the writer (WAL).
        assert!(other.run("SELECT 1", &[], Want::All, true).is_ok());
        holder.exec_plain("COMMIT").unwrap();
        other.exec_plain("BEGIN IMMEDIATE").unwrap();
        assert!(other.in_transaction());
    }
}
