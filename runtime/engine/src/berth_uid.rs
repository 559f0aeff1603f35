//! The berth's uid: one per berth, from the project's `[host] uid_range`,
//! recorded in the store (`agents.uid`), checked at every `berth up` against
//! the host's passwd and group databases and `/etc/subuid`/`/etc/subgid`.
//!
//! uid 1000 is a person on many hosts: a setuid binary an agent makes in
//! `/work` would run as that person for anyone on the host. So a berth gets a
//! uid nobody has (gid = uid); its agent repository and worktree are chowned
//! to it and its container runs as it, with the passwd entry berth writes.
//! A berth made before this existed keeps the uid it was made with (the owner
//! of its agent repository) — moving it re-owns every file — and `berth
//! doctor` lists those whose uid is a host account, with the command that
//! moves them (`berth up AGENT --project P --new-uid`).

use std::collections::BTreeSet;
use std::os::unix::fs::MetadataExt;

use berth_sandbox::identity::{self, HostIds};
use serde::Serialize;

use crate::Engine;
use crate::agents::Agent;
use crate::config::ProjectConfig;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::store::{StoreLock, Tx};

/// A berth whose uid the host also gives to someone, as `berth doctor`
/// shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UidFinding {
    pub agent: String,
    pub project: String,
    pub uid: u32,
    /// Who else the host says has it.
    pub claims: Vec<String>,
    /// What moves the berth to a uid of its own.
    pub command: String,
}

/// The first uid of `[first, last]` from `first + offset` on (wrapping) that
/// is neither `used` nor `claimed`. Looks at every uid of the range at most
/// once.
pub(crate) fn pick_uid(
    range: [u32; 2],
    offset: u64,
    used: &BTreeSet<u32>,
    mut claimed: impl FnMut(u32) -> bool,
) -> Option<u32> {
    let [first, last] = range;
    if first > last {
        return None;
    }
    let size = u64::from(last - first) + 1;
    (0..size)
        .map(|i| first as u64 + (offset + i) % size)
        .filter_map(|u| u32::try_from(u).ok())
        .find(|u| !used.contains(u) && !claimed(*u))
}

/// Where in the range a state directory starts looking: two berth
/// installations on one host (two users, parallel tests) then rarely meet at
/// one uid, although neither can see the other's records.
fn offset_of(instance: &str, range: [u32; 2]) -> u64 {
    let size = u64::from(range[1].saturating_sub(range[0])) + 1;
    // FNV-1a, stable across builds.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in instance.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h % size
}

impl Engine {
    /// The uid recorded for `agent`'s berth.
    async fn recorded_uid(&self, agent: &str) -> Result<Option<u32>> {
        let op = "reading a berth's uid";
        let uid: Option<i64> = sqlx::query_scalar("SELECT uid FROM agents WHERE name = $1")
            .bind(agent)
            .fetch_optional(self.store.pool())
            .await
            .map_err(EngineError::store(op))?
            .flatten();
        uid.map(|u| {
            u32::try_from(u).map_err(|_| EngineError::corrupt(op, format!("uid {u} of `{agent}`")))
        })
        .transpose()
    }

    /// The uid a berth from before `[host] uid_range` was made with: the
    /// owner of its agent repository, when that is not berth itself (a
    /// repository only the runner used before runner berths had a uid was
    /// never handed to one).
    fn uid_made_with(&self, agent: &Agent) -> Option<u32> {
        let repo = self.git().agent_repo(&agent.project, &agent.name);
        let owner = std::fs::symlink_metadata(&repo).ok()?.uid();
        (owner != identity::current_uid() && owner != 0).then_some(owner)
    }

    /// The uid a berth of `mode` is opened with after `up`: a container's
    /// always; a runner berth's only when berth is root and it has one.
    pub(crate) async fn uid_for_open(
        &self,
        agent: &Agent,
        mode: crate::config::BerthMode,
        config: &ProjectConfig,
    ) -> Result<Option<u32>> {
        match mode {
            crate::config::BerthMode::Mounted => {
                Ok(Some(self.container_uid_for_open(agent, config).await?))
            }
            crate::config::BerthMode::Runner => self.runner_uid_for_open(agent).await,
        }
    }

    /// The uid a mounted berth's container runs as when it is opened (after
    /// `up`): the recorded one, else the one it was made with, else
    /// `sandbox.uid`.
    async fn container_uid_for_open(&self, agent: &Agent, config: &ProjectConfig) -> Result<u32> {
        Ok(match self.recorded_uid(&agent.name).await? {
            Some(u) => u,
            None => match self.uid_made_with(agent) {
                Some(u) => u,
                None if identity::current_uid() != 0 => identity::current_uid(),
                None => config.sandbox.uid,
            },
        })
    }

    /// The uid a runner berth's commands switch to when it is opened (after
    /// `up`), when berth is root: the recorded one, else the one it was made
    /// with. `None` when berth is not root (its user namespace maps the
    /// user's uid), or for a berth brought up before runner berths had a uid
    /// (its files are still berth's: its commands keep uid 0 with no
    /// capabilities until its next `up`).
    async fn runner_uid_for_open(&self, agent: &Agent) -> Result<Option<u32>> {
        if identity::current_uid() != 0 {
            return Ok(None);
        }
        Ok(match self.recorded_uid(&agent.name).await? {
            Some(u) => Some(u),
            None => self.uid_made_with(agent),
        })
    }

    /// At `berth up` of a mounted berth (and of a runner berth, berth root): the uid it runs as, recorded (when
    /// berth is not root: the user's own, not recorded, with a note). A new
    /// berth gets a free uid of the range; a recorded uid of the range that
    /// the host has since given to someone moves to the next free one; a berth
    /// made before keeps its uid (a note says when that is a host account);
    /// `fresh` always moves it. The note is for the person.
    pub(crate) async fn settle_uid(
        &self,
        agent: &Agent,
        config: &ProjectConfig,
        fresh: bool,
    ) -> Result<(u32, Option<String>)> {
        let me = identity::current_uid();
        if me != 0 {
            // Only root can give files to another uid: the berth runs as the
            // user's own uid, and says so.
            if fresh {
                return Err(EngineError::NeedsRoot { uid: me });
            }
            return Ok((
                me,
                Some(format!(
                    "berth is not running as root, so this berth runs as your own uid {me}: what the agent makes (a setuid file included) is yours; run berth as root for a uid of its own"
                )),
            ));
        }
        let range = config.host.uid_range;
        let in_range = |u: u32| range[0] <= u && u <= range[1];
        let host = HostIds::read();
        let recorded = self.recorded_uid(&agent.name).await?;
        let current = recorded.or_else(|| self.uid_made_with(agent));
        let why = match current {
            _ if fresh => "asked for (--new-uid)".to_string(),
            None => "a new berth".to_string(),
            Some(u) => {
                let claims = host.claims(u);
                if claims.is_empty() {
                    if recorded.is_none() {
                        self.record_uid(agent, u, "made before uids were recorded")
                            .await?;
                    }
                    return Ok((u, None));
                }
                if !in_range(u) {
                    // Made before: moving it is the person's call.
                    if recorded.is_none() {
                        self.record_uid(agent, u, "made before uids were recorded")
                            .await?;
                    }
                    return Ok((
                        u,
                        Some(format!(
                            "this berth runs as uid {u}, which the host also gives to someone ({}); `{}` gives it a uid of its own",
                            claims.join("; "),
                            move_command(agent)
                        )),
                    ));
                }
                format!("uid {u} is now taken on the host ({})", claims.join("; "))
            }
        };
        let uid = self
            .allocate_uid(agent, range, current, &host, &why)
            .await?;
        let note = current
            .filter(|_| fresh || recorded.is_some())
            .map(|old| format!("moved from uid {old} to uid {uid}: {why}"));
        Ok((uid, note))
    }

    /// Picks and records a free uid of `range` for `agent` (not `current`),
    /// in one write transaction, so two processes never pick the same one.
    async fn allocate_uid(
        &self,
        agent: &Agent,
        range: [u32; 2],
        current: Option<u32>,
        host: &HostIds,
        why: &str,
    ) -> Result<u32> {
        let op = "allocating a berth's uid";
        let mut tx = self.store.write(op).await?;
        tx.lock(StoreLock::BerthUids).await?;
        let mut used: BTreeSet<u32> = sqlx::query_scalar::<_, i64>(
            "SELECT uid FROM agents WHERE uid IS NOT NULL AND name <> $1",
        )
        .bind(&agent.name)
        .fetch_all(&mut *tx)
        .await
        .map_err(EngineError::store(op))?
        .into_iter()
        .filter_map(|u| u32::try_from(u).ok())
        .collect();
        used.extend(current);
        let offset = offset_of(
            &berth_sandbox::provider::instance_of(self.state.root()),
            range,
        );
        let uid =
            pick_uid(range, offset, &used, |u| !host.claims(u).is_empty()).ok_or_else(|| {
                EngineError::NoFreeUid {
                    project: agent.project.clone(),
                    from: range[0],
                    to: range[1],
                }
            })?;
        write_uid(&mut tx, agent, uid, current, why, false).await?;
        tx.commit().await.map_err(EngineError::store(op))?;
        tracing::info!(agent = %agent.name, uid, why, "berth uid allocated");
        Ok(uid)
    }

    /// Records the uid a berth was made with, unless one is recorded by now.
    async fn record_uid(&self, agent: &Agent, uid: u32, why: &str) -> Result<()> {
        let op = "recording a berth's uid";
        let mut tx = self.store.write(op).await?;
        tx.lock(StoreLock::BerthUids).await?;
        write_uid(&mut tx, agent, uid, None, why, true).await?;
        tx.commit().await.map_err(EngineError::store(op))
    }

    /// `berth doctor`: berths whose uid (recorded, or made with) the host
    /// also gives to an account, a group or a subordinate range.
    pub async fn doctor(&self) -> Result<Vec<UidFinding>> {
        let host = HostIds::read();
        let mut findings = Vec::new();
        for agent in self.agents().await? {
            let uid = match self.recorded_uid(&agent.name).await? {
                Some(u) => u,
                None => match self.uid_made_with(&agent) {
                    Some(u) => u,
                    None => continue,
                },
            };
            let claims = host.claims(uid);
            if !claims.is_empty() {
                findings.push(UidFinding {
                    command: move_command(&agent),
                    agent: agent.name,
                    project: agent.project,
                    uid,
                    claims,
                });
            }
        }
        Ok(findings)
    }
}

/// Sets `agent`'s uid in `tx` (with `only_unset`, only where none is
/// recorded) and logs it.
async fn write_uid(
    tx: &mut Tx,
    agent: &Agent,
    uid: u32,
    previous: Option<u32>,
    why: &str,
    only_unset: bool,
) -> Result<()> {
    let op = "recording a berth's uid";
    let sql = if only_unset {
        "UPDATE agents SET uid = $1 WHERE name = $2 AND uid IS NULL"
    } else {
        "UPDATE agents SET uid = $1 WHERE name = $2"
    };
    let changed = sqlx::query(sql)
        .bind(i64::from(uid))
        .bind(&agent.name)
        .execute(&mut **tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
    if changed > 0 {
        emit(
            tx,
            NewEvent::new(kind::BERTH_UID_SET, &Actor::system())
                .project(&agent.project)
                .agent(&agent.name)
                .payload(serde_json::json!({ "uid": uid, "previous": previous, "why": why })),
        )
        .await?;
    }
    Ok(())
}

fn move_command(agent: &Agent) -> String {
    format!(
        "berth up {} --project {} --new-uid",
        agent.name, agent.project
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn picks_the_first_free_uid_from_the_offset_wrapping() {
        let range = [100_000, 100_009];
        let none = BTreeSet::new();
        let used: BTreeSet<u32> = [100_003, 100_004].into();
        type Case<'a> = (u64, &'a BTreeSet<u32>, Vec<u32>, Option<u32>);
        let cases: Vec<Case> = vec![
            (0, &none, vec![], Some(100_000)),
            (3, &used, vec![], Some(100_005)),
            (3, &used, vec![100_005], Some(100_006)),
            // Wraps past the end.
            (9, &none, vec![100_009], Some(100_000)),
            // An offset beyond the size is taken modulo it.
            (13, &used, vec![], Some(100_005)),
            // Nothing free: none.
            (0, &none, (100_000..=100_009).collect(), None),
        ];
        for (offset, used, claimed, want) in cases {
            let got = pick_uid(range, offset, used, |u| claimed.contains(&u));
            assert_eq!(
                got, want,
                "offset {offset} used {used:?} claimed {claimed:?}"
            );
        }
        assert_eq!(pick_uid([5, 4], 0, &none, |_| false), None);
        assert_eq!(
            pick_uid([u32::MAX - 1, u32::MAX - 1], 7, &none, |_| false),
            Some(u32::MAX - 1)
        );
    }

    #[test]
    fn the_offset_lies_in_the_range() {
        for instance in ["", "a", "9f3a0c1d2e3f"] {
            let range = crate::config::DEFAULT_UID_RANGE;
            assert!(offset_of(instance, range) <= u64::from(range[1] - range[0]));
        }
    }
}
