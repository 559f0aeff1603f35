//! The connections a proxy has open, so the process serving it can let
//! them end — and be recorded — before it exits.
//!
//! A connection is recorded (`Gate::connected`) only once both of its
//! directions have ended. A one-shot `berth exec` serves its berth's proxy
//! only for its own life: without this, a connection still open when the
//! command ended (the server slow to close, or keeping it alive) died with
//! the process, unrecorded. [`OpenConnections::drain`] waits for them,
//! then cuts what is still open so each records what it had, within
//! bounds: a hung server never holds a process's exit for long.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// A proxy's open connections: how many, and whether they are being cut.
#[derive(Debug, Default)]
pub struct OpenConnections {
    count: AtomicUsize,
    /// A connection ended (the count fell).
    ended: Notify,
    closing: AtomicBool,
    /// The process is exiting: connections stop forwarding and record.
    cut: Notify,
}

/// One open connection, counted until dropped (after it was recorded).
#[derive(Debug)]
pub(crate) struct Open<'a>(&'a OpenConnections);

impl Drop for Open<'_> {
    fn drop(&mut self) {
        self.0.count.fetch_sub(1, Ordering::AcqRel);
        self.0.ended.notify_waiters();
    }
}

impl OpenConnections {
    /// Counts one more open connection.
    pub(crate) fn open(&self) -> Open<'_> {
        self.count.fetch_add(1, Ordering::AcqRel);
        Open(self)
    }

    /// How many are open.
    pub fn count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    /// Resolves once [`OpenConnections::drain`] cuts the open connections.
    pub(crate) async fn cut(&self) {
        loop {
            // Registered before the flag is read: no wake-up is lost.
            let notified = self.cut.notified();
            if self.closing.load(Ordering::Acquire) {
                return;
            }
            notified.await;
        }
    }

    /// Waits up to `finish` for the open connections to end by themselves,
    /// then cuts the rest and waits up to `record` for them to be recorded.
    /// Returns how many were still open at the end (none, unless recording
    /// hung).
    pub async fn drain(&self, finish: Duration, record: Duration) -> usize {
        if self.wait_all_ended(finish).await {
            return 0;
        }
        self.closing.store(true, Ordering::Release);
        self.cut.notify_waiters();
        self.wait_all_ended(record).await;
        self.count()
    }

    /// Whether every connection ended within `within`.
    async fn wait_all_ended(&self, within: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let ended = self.ended.notified();
            if self.count() == 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, ended).await.is_err() {
                return self.count() == 0;
            }
        }
    }
}
