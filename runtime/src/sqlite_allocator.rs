//! SQLite's allocations through the binary's allocator, mimalloc, alone.
//!
//! SQLite calls C's `malloc` unless told otherwise, so the store's page
//! cache, its parsed schema and every prepared statement went to glibc's
//! allocator while the rest of berth used mimalloc: two heaps, and glibc's
//! slower calls. A one-shot `berth exec` spent about 0.43 M instructions in
//! glibc's `malloc` and `free`, most of them SQLite's. Told once, before
//! SQLite initialises, SQLite calls mimalloc for every block from then on:
//! 5.02 M -> 4.60 M instructions for that exec on one state (its pages only
//! moved heaps: the page faults stayed). Each connection's lookaside arena
//! goes too (below).

use std::ffi::{c_int, c_void};

use libmimalloc_sys as mi;
use libsqlite3_sys as ffi;

// mimalloc's C library always has it; the `-sys` crate declares it only
// with its `extended` feature (and the `cty` crate that brings).
unsafe extern "C" {
    /// The bytes usable in a mimalloc block, at least what was asked.
    fn mi_usable_size(block: *const c_void) -> usize;
}

/// SQLite refused a setting (it had already initialised): it keeps its
/// own, which work as before.
#[derive(Debug)]
pub struct NotTaken(pub c_int);

/// Makes mimalloc SQLite's only allocator: SQLite's blocks come from it,
/// and no connection keeps a lookaside arena of its own. Call before
/// anything opens a database (SQLite takes the settings only before it
/// initialises).
pub fn use_mimalloc_alone() -> Result<(), NotTaken> {
    let methods = ffi::sqlite3_mem_methods {
        xMalloc: Some(sqlite_malloc),
        xFree: Some(sqlite_free),
        xRealloc: Some(sqlite_realloc),
        xSize: Some(sqlite_size),
        xRoundup: Some(sqlite_roundup),
        xInit: Some(sqlite_init),
        xShutdown: Some(sqlite_shutdown),
        pAppData: std::ptr::null_mut(),
    };
    // SAFETY: SQLITE_CONFIG_MALLOC takes one pointer to a
    // `sqlite3_mem_methods`, which SQLite copies before it returns; every
    // function in it has the signature SQLite's header gives.
    let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &raw const methods) };
    if rc != ffi::SQLITE_OK {
        return Err(NotTaken(rc));
    }
    // No lookaside: SQLite's own arena of small blocks for each connection
    // (120 KB by default), every slot of which it writes as it opens the
    // connection, so 30 fresh pages faulted in by every one-shot `berth`
    // command, for blocks mimalloc already serves from its free lists. A
    // one-shot exec: 650 -> 608 page faults, 0.984x the wall time (medians
    // of 500 interleaved pairs), 0.3 % more instructions.
    // SAFETY: SQLITE_CONFIG_LOOKASIDE takes two ints, a slot size and a
    // count; zero and zero is none.
    let rc = unsafe { ffi::sqlite3_config(ffi::SQLITE_CONFIG_LOOKASIDE, 0 as c_int, 0 as c_int) };
    match rc {
        ffi::SQLITE_OK => Ok(()),
        rc => Err(NotTaken(rc)),
    }
}

/// SQLite asks for a positive size and needs eight-byte alignment, which
/// every mimalloc block has (it is made of whole words).
unsafe extern "C" fn sqlite_malloc(size: c_int) -> *mut c_void {
    match usize::try_from(size) {
        // SAFETY: mimalloc's `malloc` takes any size.
        Ok(size) => unsafe { mi::mi_malloc(size) },
        Err(_) => std::ptr::null_mut(),
    }
}

unsafe extern "C" fn sqlite_free(block: *mut c_void) {
    // SAFETY: SQLite frees only what `sqlite_malloc` or `sqlite_realloc`
    // gave it, so a mimalloc block.
    unsafe { mi::mi_free(block) }
}

unsafe extern "C" fn sqlite_realloc(block: *mut c_void, size: c_int) -> *mut c_void {
    match usize::try_from(size) {
        // SAFETY: `block` is a mimalloc block (as in `sqlite_free`).
        Ok(size) => unsafe { mi::mi_realloc(block, size) },
        Err(_) => std::ptr::null_mut(),
    }
}

/// The block's usable size, at least what was asked (SQLite's own
/// allocator answers with `malloc_usable_size` the same way).
unsafe extern "C" fn sqlite_size(block: *mut c_void) -> c_int {
    // SAFETY: `block` is a mimalloc block (as in `sqlite_free`).
    let size = unsafe { mi_usable_size(block) };
    c_int::try_from(size).unwrap_or(c_int::MAX)
}

/// What SQLite's own allocator answers: the size rounded up to eight.
unsafe extern "C" fn sqlite_roundup(size: c_int) -> c_int {
    size.saturating_add(7) & !7
}

unsafe extern "C" fn sqlite_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn sqlite_shutdown(_: *mut c_void) {}

#[cfg(test)]
mod tests {
    use std::ffi::CStr;

    use super::*;

    unsafe extern "C" {
        /// Whether the pointer lies in mimalloc's memory (not glibc's heap).
        fn mi_is_in_heap_region(p: *const c_void) -> bool;
    }

    // SQLite's settings are the process's: this is the only test in this
    // binary that touches SQLite, and it configures it before anything
    // initialises it.
    #[test]
    fn sqlite_allocates_from_mimalloc_alone_once_told_and_only_before_it_starts() {
        use_mimalloc_alone().unwrap();
        // SAFETY: SQLite's allocation calls, each block freed once by it;
        // the database handle is used on this thread only and closed.
        unsafe {
            let block = ffi::sqlite3_malloc(100).cast::<u8>();
            assert!(!block.is_null());
            assert!(mi_is_in_heap_region(block.cast()));
            assert!(ffi::sqlite3_msize(block.cast()) >= 100);
            block.write_bytes(0x5a, 100);
            let grown = ffi::sqlite3_realloc(block.cast(), 70_000).cast::<u8>();
            assert!(!grown.is_null());
            assert!(
                std::slice::from_raw_parts(grown, 100)
                    .iter()
                    .all(|&b| b == 0x5a)
            );
            assert!(mi_is_in_heap_region(grown.cast()));
            assert!(ffi::sqlite3_msize(grown.cast()) >= 70_000);
            ffi::sqlite3_free(grown.cast());

            // A database works on it, and its memory is mimalloc's.
            let mut db = std::ptr::null_mut();
            assert_eq!(
                ffi::sqlite3_open(c":memory:".as_ptr(), &mut db),
                ffi::SQLITE_OK
            );
            let sql = c"CREATE TABLE t(a TEXT); INSERT INTO t VALUES ('berth'), ('dock');";
            let rc = ffi::sqlite3_exec(
                db,
                sql.as_ptr(),
                None,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            );
            assert_eq!(
                rc,
                ffi::SQLITE_OK,
                "{:?}",
                CStr::from_ptr(ffi::sqlite3_errmsg(db))
            );
            let mut stmt = std::ptr::null_mut();
            let query = c"SELECT group_concat(a, '+') FROM t";
            assert_eq!(
                ffi::sqlite3_prepare_v2(db, query.as_ptr(), -1, &mut stmt, std::ptr::null_mut()),
                ffi::SQLITE_OK
            );
            assert_eq!(ffi::sqlite3_step(stmt), ffi::SQLITE_ROW);
            let text = CStr::from_ptr(ffi::sqlite3_column_text(stmt, 0).cast());
            assert_eq!(text.to_str().unwrap(), "berth+dock");
            assert!(mi_is_in_heap_region(stmt.cast()));
            assert!(mi_is_in_heap_region(db.cast()));
            ffi::sqlite3_finalize(stmt);
            // No lookaside arena: no block came from one.
            let (mut now, mut most) = (0, 0);
            let status = ffi::SQLITE_DBSTATUS_LOOKASIDE_HIT;
            assert_eq!(
                ffi::sqlite3_db_status(db, status, &mut now, &mut most, 0),
                ffi::SQLITE_OK
            );
            assert_eq!((now, most), (0, 0));
            assert_eq!(ffi::sqlite3_close(db), ffi::SQLITE_OK);
        }
        // Once SQLite runs, the setting is refused (and nothing changes).
        assert!(matches!(
            use_mimalloc_alone(),
            Err(NotTaken(ffi::SQLITE_MISUSE))
        ));
    }
}
