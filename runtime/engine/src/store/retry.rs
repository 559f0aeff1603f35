//! Running a write transaction again, from the start, when PostgreSQL
//! aborted it as a deadlock (SQLSTATE `40P01`) or a serialization failure
//! (`40001`). With the narrow locks (the default on PostgreSQL since issue
//! 23: [`super::Store::serialise_writers`]) writers of several hosts run side by
//! side, each locking only the rows and names it touches; two that lock
//! the same two things in opposite orders wait for each other, and
//! PostgreSQL breaks the cycle by failing one of them. Nothing of the
//! failed transaction was written (PostgreSQL aborts all of it), so running
//! its whole body again is correct; replaying half of it never is.
//!
//! Why here and not in [`super::Store::write`]: `write` hands a [`super::Tx`] to
//! code that runs its queries, decides, and commits, in some 90 places; it
//! cannot re-run what its caller did between `BEGIN` and the failure. So
//! the retry takes the body as a closure that builds its transaction
//! itself ([`super::Store::retrying`]): each attempt is a new `write`, new
//! reads, new decisions. It wraps the writes that lock several rows other
//! writers also lock, from other hosts, in an order that can meet theirs
//! the other way round: a prompt's reservation, acknowledgement and
//! release, a session's opening, turn end and end, a task's claim, archive
//! and removal, a project's removal, a prompt's send, and an action's
//! outcome (`action.executed` is logged before its task and agent move, so
//! it holds the event log's lock while it waits for their rows). Most
//! others lock one row, or their rows and then the event log, which a
//! transaction takes last (`Tx::lock`), and cannot close a cycle. A PR
//! check's claim (`checks.rs`) and a worker taking an agent over
//! (`worker.rs`) once logged before they wrote a row; they now write their
//! rows first. A write found to close a cycle is wrapped the same way (the
//! warning below names it), and `BERTH_STORE_LOCKS=single` rules every
//! cycle out meanwhile.
//!
//! What an aborted attempt leaves: nothing outside the store. Its events
//! and outbox rows are rolled back with it (the log's ids it took are
//! skipped, which followers allow: they read `id > n`); its `pg_notify` is
//! delivered only at commit; and every wrapped body keeps its effects
//! outside the store (a reply, an in-memory count, a message delivered)
//! after its commit, so an attempt that fails has done none of them.

use std::future::Future;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use super::Store;
use crate::error::{EngineError, Result};

/// Attempts of one write, the first included.
pub const ATTEMPTS: u32 = 5;

/// The backoff before the second attempt; it doubles each time, up to
/// [`MAX_BACKOFF`], and half of it is random (so two writers that failed
/// together do not collide again in step).
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(320);

impl Store {
    /// Runs `attempt` (a write transaction's whole body: it calls
    /// [`Store::write`], does its work and commits) and, when PostgreSQL
    /// aborted it as a deadlock or serialization failure, runs it again
    /// from the start after a jittered backoff, up to [`ATTEMPTS`] times in
    /// all; then [`EngineError::StoreConflict`]. Any other outcome is
    /// returned as it is. On SQLite the one writer never meets either
    /// error: one attempt. The body must keep what it does outside the
    /// store until after its commit (see the module doc).
    pub async fn retrying<T, F, Fut>(&self, op: &'static str, mut attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut n = 1;
        loop {
            let err = match attempt().await {
                Err(e) => e,
                ok => return ok,
            };
            let Some(code) = conflict_code(&err) else {
                return Err(err);
            };
            if n >= ATTEMPTS {
                return Err(EngineError::StoreConflict {
                    op,
                    attempts: n,
                    code,
                });
            }
            let wait = backoff(n);
            tracing::warn!(
                op,
                attempt = n,
                of = ATTEMPTS,
                sqlstate = code,
                wait_ms = wait.as_millis() as u64,
                error = %err,
                "PostgreSQL aborted a write transaction against a concurrent writer: \
                 nothing of it was written; running it again from the start"
            );
            tokio::time::sleep(wait).await;
            n += 1;
        }
    }
}

/// The SQLSTATE of an error PostgreSQL aborts a transaction with when it
/// lost to another writer, and whose whole transaction may run again:
/// `40P01` (deadlock detected) and `40001` (serialization failure).
pub fn conflict_code(err: &EngineError) -> Option<&'static str> {
    let EngineError::Store { source, .. } = err else {
        return None;
    };
    match source.as_database_error()?.code()?.as_ref() {
        "40P01" => Some("40P01"),
        "40001" => Some("40001"),
        _ => None,
    }
}

/// The wait before attempt `n + 1`: half of `FIRST_BACKOFF * 2^(n-1)`
/// (capped at [`MAX_BACKOFF`]), plus a random part up to the other half.
fn backoff(n: u32) -> Duration {
    let ceiling = FIRST_BACKOFF
        .saturating_mul(1 << n.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    let half = ceiling / 2;
    let micros = u64::try_from(half.as_micros()).unwrap_or(u64::MAX).max(1);
    half + Duration::from_micros(random() % micros)
}

/// A random number for the jitter: std's hasher keys are random per
/// instance (no dependency for a few bits of noise).
fn random() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_grows_is_capped_and_varies() {
        for n in 1..=ATTEMPTS + 10 {
            let ceiling = FIRST_BACKOFF
                .saturating_mul(1 << (n - 1).min(16))
                .min(MAX_BACKOFF);
            let w = backoff(n);
            assert!(w >= ceiling / 2 && w <= ceiling, "attempt {n}: {w:?}");
        }
        let waits: std::collections::BTreeSet<Duration> = (0..20).map(|_| backoff(5)).collect();
        assert!(waits.len() > 1, "no jitter: {waits:?}");
    }

    #[test]
    fn only_a_stores_abort_of_the_whole_transaction_is_retried() {
        let not_db = EngineError::Store {
            op: "x",
            source: sqlx::Error::PoolTimedOut,
        };
        assert_eq!(conflict_code(&not_db), None);
        assert_eq!(
            conflict_code(&EngineError::StoreBusy { op: "x", secs: 1 }),
            None
        );
        assert_eq!(conflict_code(&aborted("40P01")), Some("40P01"));
        assert_eq!(conflict_code(&aborted("40001")), Some("40001"));
        assert_eq!(conflict_code(&aborted("23505")), None);
    }

    /// A database error with `code`, as PostgreSQL's driver gives it.
    #[derive(Debug)]
    struct Coded(&'static str);

    impl std::fmt::Display for Coded {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "error with SQLSTATE {}", self.0)
        }
    }

    impl std::error::Error for Coded {}

    impl sqlx::error::DatabaseError for Coded {
        fn message(&self) -> &str {
            "aborted"
        }
        fn code(&self) -> Option<std::borrow::Cow<'_, str>> {
            Some(self.0.into())
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
            sqlx::error::ErrorKind::Other
        }
    }

    fn aborted(code: &'static str) -> EngineError {
        EngineError::Store {
            op: "x",
            source: sqlx::Error::Database(Box::new(Coded(code))),
        }
    }

    async fn sqlite_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("b.db"), true).await.unwrap();
        (dir, store)
    }

    #[tokio::test]
    async fn a_conflict_runs_the_whole_body_again_and_another_error_does_not() {
        let (_dir, store) = sqlite_store().await;
        let mut runs = 0;
        let out = store
            .retrying("x", || {
                runs += 1;
                let n = runs;
                async move { if n < 3 { Err(aborted("40P01")) } else { Ok(n) } }
            })
            .await
            .unwrap();
        assert_eq!((out, runs), (3, 3));

        let mut runs = 0;
        let err = store
            .retrying("x", || {
                runs += 1;
                async { Err::<(), _>(aborted("23505")) }
            })
            .await
            .unwrap_err();
        assert_eq!(runs, 1);
        assert!(matches!(err, EngineError::Store { .. }), "{err}");
    }

    #[tokio::test]
    async fn after_the_last_attempt_the_error_says_what_to_do() {
        let (_dir, store) = sqlite_store().await;
        let mut runs = 0;
        let err = store
            .retrying("reserving a prompt", || {
                runs += 1;
                async { Err::<(), _>(aborted("40001")) }
            })
            .await
            .unwrap_err();
        assert_eq!(runs, ATTEMPTS);
        assert!(
            matches!(
                err,
                EngineError::StoreConflict {
                    attempts: ATTEMPTS,
                    code: "40001",
                    ..
                }
            ),
            "{err:?}"
        );
        let said = err.to_string();
        assert!(said.contains("reserving a prompt"), "{said}");
        assert!(said.contains("BERTH_STORE_LOCKS=single"), "{said}");
        assert_eq!(err.code(), "store_conflict");
    }
}
