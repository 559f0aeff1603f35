//! Waking a follower of the event log when another process appends to it,
//! wherever that process runs: `berth serve`'s log follower (which wakes
//! the agent driver and the event streams) and any other reader of the log
//! by cursor.
//!
//! On PostgreSQL each transaction that appends to the log notifies a channel
//! ([`crate::store::LOG_CHANNEL`]), delivered by the server at commit to
//! every connection listening on it, on any host: a follower wakes at once
//! instead of at its next poll. A notification only says "look now"; the
//! follower still reads the log by cursor, so one lost with a dropped
//! connection costs one interval, never an event. On SQLite there is no
//! such channel between processes: the follower polls, as before.

use std::time::Duration;

use sqlx::postgres::PgListener;

use crate::error::{EngineError, Result};
use crate::store::{LOG_CHANNEL, Store, StoreLocation};

/// Why a follower's wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogWake {
    /// Another transaction appended to the log and committed.
    Notified,
    /// The poll interval passed (SQLite, or a listener that failed).
    Interval,
}

/// A follower's wake-up source. On PostgreSQL it holds one connection of
/// its own, listening; on SQLite nothing.
pub struct LogSignal {
    listener: Option<PgListener>,
    /// Whether the listener's last failure was logged (once per outage).
    failing: bool,
}

impl std::fmt::Debug for LogSignal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogSignal")
            .field("listening", &self.listener.is_some())
            .finish()
    }
}

impl LogSignal {
    /// Starts listening (PostgreSQL); what the log gets from now on wakes
    /// [`LogSignal::wait`].
    pub(crate) async fn open(store: &Store) -> Result<LogSignal> {
        let listener = match store.location() {
            StoreLocation::Sqlite(_) => None,
            StoreLocation::Postgres(url) => {
                let op = "listening for the event log";
                let mut l = PgListener::connect(url)
                    .await
                    .map_err(EngineError::store(op))?;
                l.listen(LOG_CHANNEL)
                    .await
                    .map_err(EngineError::store(op))?;
                Some(l)
            }
        };
        Ok(LogSignal {
            listener,
            failing: false,
        })
    }

    /// Whether appends by other processes wake this signal (PostgreSQL).
    pub fn listens(&self) -> bool {
        self.listener.is_some()
    }

    /// Waits until another transaction appends to the log and commits, or
    /// `interval` passes. Notifications that came while nobody waited are
    /// taken one at a time: a caller that reads the log after each wake-up
    /// never misses an append, and at worst looks once too often.
    pub async fn wait(&mut self, interval: Duration) -> LogWake {
        let Some(listener) = self.listener.as_mut() else {
            tokio::time::sleep(interval).await;
            return LogWake::Interval;
        };
        match tokio::time::timeout(interval, listener.recv()).await {
            Err(_) => LogWake::Interval,
            Ok(Ok(_)) => {
                self.failing = false;
                LogWake::Notified
            }
            // The connection dropped: the listener reconnects and listens
            // again on its next call. Until then, the interval.
            Ok(Err(e)) => {
                if !self.failing {
                    tracing::warn!("listening for the event log: {e}; polling until it is back");
                }
                self.failing = true;
                tokio::time::sleep(interval).await;
                LogWake::Interval
            }
        }
    }
}
