//! Old events out of the store: `berth events archive` writes the events
//! older than a date to a JSONL file, one event per line as `berth events
//! --json` shows it (the payload whole), fsyncs the file and only then
//! deletes those events, and no other (issue 17: a retention setting for a
//! log that otherwise grows with every action).
//!
//! What is never archived: an event still in the outbox (not delivered
//! yet), and the newest event, whose id keeps the log's ids growing (SQLite
//! gives a new row the largest id + 1, and a follower's cursor is an id).
//! The retention is a setting of the store, so it lives beside it in the
//! state directory: `store.toml`, `[store] retain_events_days`. `berth
//! serve` applies it on its own ([`Engine::apply_retention`], at start and
//! every hour); `berth events archive` applies it when asked.

use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{EVENT_COLUMNS, EVENT_JOIN, event_from_row};
use crate::state::StateDir;

/// The events an archive before `$2` may take: old, delivered from the
/// outbox, and not the newest (whose id keeps the log's ids growing).
const ARCHIVABLE: &str = "e.at < $2 \
     AND e.id < (SELECT MAX(id) FROM session_events) \
     AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = e.id)";

/// Events read (and ids deleted) per statement.
const PAGE: i64 = 500;

const DAY_MS: i64 = 24 * 3600 * 1000;

/// `<state>/store.toml`: the settings of the store itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    pub store: StoreSection,
}

/// `[store]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreSection {
    /// Events older than this many days are what `berth events archive`
    /// takes when no `--before` is given. None: no retention (the default).
    pub retain_events_days: Option<u32>,
    /// The store itself, by URL (`postgres://…`; `sqlite:PATH`). None: the
    /// state directory's SQLite file. `$BERTH_STORE` wins over it.
    pub url: Option<String>,
}

impl StoreConfig {
    /// The state directory's `store.toml`; the defaults when there is none.
    pub fn load(state: &StateDir) -> Result<StoreConfig> {
        let path = state.store_config();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(StoreConfig::default());
            }
            Err(e) => return Err(EngineError::io("reading", &path)(e)),
        };
        toml::from_str(&text).map_err(|e| {
            let (line, column) = e
                .span()
                .map(|s| crate::config::line_col(&text, s.start))
                .unwrap_or((1, 1));
            EngineError::Config {
                file: path.display().to_string(),
                line,
                column,
                message: e.message().trim().to_string(),
            }
        })
    }

    /// The cut-off the retention gives at `now_ms`: events before it are
    /// old. None without a retention.
    pub fn cutoff_ms(&self, now_ms: i64) -> Option<i64> {
        self.store
            .retain_events_days
            .map(|d| now_ms - i64::from(d) * DAY_MS)
    }
}

/// What an archive did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Archived {
    /// The file the events were written to.
    pub path: PathBuf,
    /// Events written to it, and deleted from the store (the same ones).
    pub events: u64,
    /// The first and last id archived (None when there were none).
    pub first_id: Option<i64>,
    pub last_id: Option<i64>,
    /// The cut-off: events before this time (ms since the epoch).
    pub before: i64,
}

impl Engine {
    /// Applies `<state>/store.toml`'s retention at `now_ms`: the events it
    /// calls old go to a new file under `<state>/archive/` and out of the
    /// store. None without a retention, or when no event is old (no file
    /// is made for nothing).
    pub async fn apply_retention(&self, now_ms: i64) -> Result<Option<Archived>> {
        let Some(before_ms) = StoreConfig::load(&self.state)?.cutoff_ms(now_ms) else {
            return Ok(None);
        };
        let old: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM session_events e WHERE e.id > $1 AND {ARCHIVABLE}"
        ))
        .bind(0i64)
        .bind(before_ms)
        .fetch_one(self.store.pool())
        .await
        .map_err(EngineError::store("counting old events"))?;
        if old == 0 {
            return Ok(None);
        }
        let to = self.archive_path(before_ms)?;
        self.archive_events(before_ms, &to).await.map(Some)
    }

    /// A new archive's file for the events before `before_ms`:
    /// `<state>/archive/events-before-<time>-<now>.jsonl` (the directory
    /// made 0700 when missing).
    pub fn archive_path(&self, before_ms: i64) -> Result<PathBuf> {
        let dir = self.state.archive_dir();
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .map_err(EngineError::io("creating", &dir))?;
        let stamp = crate::ids::rfc3339(before_ms).replace(':', "");
        Ok(dir.join(format!(
            "events-before-{stamp}-{}.jsonl",
            crate::ids::now_ms()
        )))
    }

    /// Writes every event before `before_ms` (but those still in the outbox
    /// and the newest) to `to`, a new file, fsyncs it, then deletes exactly
    /// those events. A failure before the fsync deletes nothing.
    pub async fn archive_events(&self, before_ms: i64, to: &Path) -> Result<Archived> {
        let op = "archiving events";
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(to)
            .map_err(EngineError::io("creating the archive", to))?;
        let mut ids: Vec<i64> = Vec::new();
        let mut after = 0i64;
        loop {
            let rows = sqlx::query(&format!(
                "SELECT {EVENT_COLUMNS} FROM session_events e {EVENT_JOIN} \
                 WHERE e.id > $1 AND {ARCHIVABLE} ORDER BY e.id LIMIT $3"
            ))
            .bind(after)
            .bind(before_ms)
            .bind(PAGE)
            .fetch_all(self.store.pool())
            .await
            .map_err(EngineError::store(op))?;
            let Some(last) = rows.last() else { break };
            after = sqlx::Row::try_get(last, "id").map_err(EngineError::store(op))?;
            let mut lines = Vec::new();
            for r in &rows {
                let event = event_from_row(r)?;
                serde_json::to_writer(&mut lines, &event)
                    .map_err(|e| EngineError::corrupt(op, e))?;
                lines.push(b'\n');
                ids.push(event.id);
            }
            file.write_all(&lines)
                .map_err(EngineError::io("writing the archive", to))?;
        }
        file.sync_all()
            .map_err(EngineError::io("syncing the archive", to))?;
        drop(file);
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            // The new file's name is durable too.
            std::fs::File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(EngineError::io("syncing the archive's directory", dir))?;
        }

        // Written and synced: now delete exactly what was written.
        let mut tx = self.store.write(op).await?;
        for chunk in ids.chunks(PAGE as usize) {
            let params = (1..=chunk.len())
                .map(|i| format!("${i}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!("DELETE FROM session_events WHERE id IN ({params})");
            let mut q = sqlx::query(&sql);
            for id in chunk {
                q = q.bind(id);
            }
            q.execute(&mut *tx).await.map_err(EngineError::store(op))?;
        }
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(Archived {
            path: to.to_path_buf(),
            events: ids.len() as u64,
            first_id: ids.first().copied(),
            last_id: ids.last().copied(),
            before: before_ms,
        })
    }
}
