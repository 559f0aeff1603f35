//! After a crash: actions that were executing when their process died.
//!
//! Each `executing` row names its executor (`host:pid:start-time`). At start,
//! berth marks `interrupted` every one whose executor is gone from this host
//! (the pid is dead or now belongs to a process started at another time).
//! An action a person had asked to cancel (`berth cancel`) is marked
//! `cancelled` instead: what they wanted happened, its process died with it.
//! A terminal command is never re-run on its own (its effect cannot be seen):
//! a person decides (`berth retry`). berth's own delivery effects — commit,
//! push, PR — are resumed by the next loop that picks the task up
//! (`Engine::resume_own_effect`): re-executing one finds its effect when it
//! happened, so the chain moves on and nothing is done twice. An executor on
//! another host is left alone: only that host can tell whether it lives.

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty() && !h.contains(':'))
        .unwrap_or_else(|| "localhost".into())
}

/// The start time of `pid` in clock ticks since boot (field 22 of its stat).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: skip past
    // its closing parenthesis, then field 22 is the 20th after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// This process, as an executor id: derived once per process (every
/// action it claims names it; reading the host's name and this process's
/// start time from /proc for each cost two file reads per action). Keyed
/// by the pid, so a forked child never names itself by its parent.
pub fn executor_id() -> String {
    static THIS: std::sync::OnceLock<(u32, String)> = std::sync::OnceLock::new();
    let pid = std::process::id();
    let derive = || format!("{}:{pid}:{}", hostname(), start_time(pid).unwrap_or(0));
    match THIS.get_or_init(|| (pid, derive())) {
        (of, id) if *of == pid => id.clone(),
        _ => derive(),
    }
}

/// The host part of executor id `id` (`host:pid:start`).
pub(crate) fn executor_host(id: &str) -> Option<&str> {
    let mut parts = id.rsplitn(3, ':');
    parts.next()?;
    parts.next()?;
    parts.next()
}

/// Whether `id` names an executor on another host than this one.
pub(crate) fn executor_elsewhere(id: &str) -> bool {
    executor_host(id).is_some_and(|h| h != hostname())
}

/// Whether the executor named by `id` is certainly gone.
pub fn executor_is_dead(id: &str) -> bool {
    let mut parts = id.rsplitn(3, ':');
    let (Some(start), Some(pid), Some(host)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    if host != hostname() {
        return false;
    }
    let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>()) else {
        return false;
    };
    match start_time(pid) {
        None => true,
        Some(now) => now != start,
    }
}

impl Engine {
    /// Marks the actions of dead executors `interrupted` (`action.interrupted`),
    /// or `cancelled` (`action.cancelled`) when a person had asked to cancel
    /// them. Returns their ids.
    pub async fn recover(&self) -> Result<Vec<String>> {
        self.recover_matching(|executor, _| executor_is_dead(executor))
            .await
    }

    /// [`recover`](Self::recover) of the executing actions for which
    /// `gone(executor, action)` holds: their executor is known to be gone.
    pub(crate) async fn recover_matching(
        &self,
        gone: impl Fn(&str, &crate::actions::ActionRecord) -> bool,
    ) -> Result<Vec<String>> {
        let rows: Vec<(String, Option<String>, Option<String>)> = sqlx::query_as(
            "SELECT id, executor, cancel_requested_by FROM proposed_actions WHERE status = 'executing'",
        )
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("finding interrupted actions"))?;
        let mut interrupted = Vec::new();
        for (id, executor, cancel_requested_by) in rows {
            let Some(executor) = executor else { continue };
            let record = self.action(&id).await?;
            if !gone(&executor, &record) {
                continue;
            }
            if let Some(by) = cancel_requested_by {
                if self.cancel_orphan(&record, &by).await? {
                    interrupted.push(id);
                }
                continue;
            }
            let diagnostic = format!(
                "the berth process that was executing it ({executor}) stopped before recording an outcome; \
                 it was not re-run: check its effect, then propose it again"
            );
            let mut tx = self.store.write("marking an action interrupted").await?;
            let n = sqlx::query(
                "UPDATE proposed_actions SET status = 'interrupted', diagnostic = $1, updated_at = $2 \
                 WHERE id = $3 AND status = 'executing' AND executor = $4 AND cancel_requested_by IS NULL",
            )
            .bind(&diagnostic)
            .bind(now_ms())
            .bind(&id)
            .bind(&executor)
            .execute(&mut *tx)
            .await
            .map_err(EngineError::store("marking an action interrupted"))?
            .rows_affected();
            if n == 1 {
                let system = Actor::system();
                emit(
                    &mut tx,
                    NewEvent::new(kind::ACTION_INTERRUPTED, &system)
                        .project(&record.project)
                        .agent(&record.agent)
                        .task(record.task.as_deref())
                        .action(&id)
                        .payload(serde_json::json!({
                            "action_type": record.action.kind(),
                            "executor": executor,
                            "diagnostic": diagnostic,
                        })),
                )
                .await?;
            }
            tx.commit()
                .await
                .map_err(EngineError::store("marking an action interrupted"))?;
            // A person asked to cancel it since it was read: theirs.
            let cancelled = match n {
                0 => match self.cancel_requested_by(&id).await? {
                    Some(by) => self.cancel_orphan(&record, &by).await?,
                    None => false,
                },
                _ => false,
            };
            if n == 1 || cancelled {
                interrupted.push(id);
            }
        }
        if !interrupted.is_empty() {
            self.reconcile_repositories().await?;
        }
        Ok(interrupted)
    }

    /// A process died with an action under way — perhaps in the middle of a
    /// git write that left a `*.lock` file behind, which would refuse every
    /// later write (a retry, a recycle) for good. Repairs the repositories of
    /// every agent with nothing under way in a living process (their own
    /// commands may be writing their repository); the worktrees crate also
    /// skips any repository another berth process holds.
    async fn reconcile_repositories(&self) -> Result<()> {
        let rows: Vec<(String, String, Option<String>)> = sqlx::query_as(
            "SELECT project, agent, executor FROM proposed_actions WHERE status = 'executing'",
        )
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("finding live agents"))?;
        let live: Vec<(String, String)> = rows
            .into_iter()
            .filter(|(_, _, e)| e.as_deref().is_none_or(|e| !executor_is_dead(e)))
            .map(|(p, a, _)| (p, a))
            .collect();
        for done in self.git().reconcile(live).await? {
            tracing::warn!(%done, "repaired after a crash");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_dead_pid_is_not() {
        assert!(!executor_is_dead(&executor_id()));
        // pid_max is at most 4194304: this pid cannot exist.
        assert!(executor_is_dead(&format!("{}:4194305:1", hostname())));
        // Same pid, other start time: a reused pid.
        let pid = std::process::id();
        assert!(executor_is_dead(&format!("{}:{pid}:1", hostname())));
        // Another host: cannot tell, so never dead.
        assert!(!executor_is_dead("elsewhere:4194305:1"));
        assert!(!executor_is_dead("garbage"));
    }

    #[test]
    fn the_executor_id_is_derived_once_and_names_this_process_as_proc_does() {
        let pid = std::process::id();
        let fresh = format!("{}:{pid}:{}", hostname(), start_time(pid).unwrap());
        assert_eq!(executor_id(), fresh);
        assert_eq!(executor_id(), executor_id());
    }

    #[test]
    fn an_executor_is_elsewhere_only_when_its_host_is_named_and_another() {
        assert!(!executor_elsewhere(&executor_id()));
        assert!(executor_elsewhere("elsewhere:4194305:1"));
        assert_eq!(executor_host("h.example:12:34"), Some("h.example"));
        assert!(!executor_elsewhere("garbage"));
        assert!(!executor_elsewhere("12:34"));
    }
}
