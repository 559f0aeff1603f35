//! Which process drives an agent: a lease in the store, so that two
//! drivers sharing a store (two `berth serve` processes today; workers on
//! several hosts later) never drive one agent at once, and a driver that
//! died loses its agents after the lease runs out instead of holding them
//! for ever.
//!
//! A driver takes an agent's lease before a pass and renews every lease it
//! holds while it lives. Another driver may take a lease only after its
//! `until_ms`; the takeover gives the lease the next `token`. The token is
//! a fencing token: an [`AgentIo`](crate::agent_io::AgentIo) made under a
//! lease checks, before each effect (a claim, a proposal, a delivery step),
//! that its token is still the agent's, so a driver that was only paused
//! (a stopped process, a lost heartbeat) stops at its next effect instead
//! of acting beside the new holder. The check is not in the effect's own
//! transaction: between the check and the effect the old holder can still
//! finish one step, which the steps' idempotency keys (`task:<id>:<step>`)
//! then keep from being done twice. The forge checks the token too: this
//! process's pushes of the agent's work carry it, and a takeover raises it
//! at the forge before reading there (`worker.rs`), so the forge refuses a
//! stale holder's push even in that window (`fence.rs` in berth-worktrees).
//!
//! Time is each driver's own clock in milliseconds since the epoch; the
//! hosts of one store are assumed to agree to well within a lease.

use std::time::Duration;

use sqlx::Row;

use crate::Engine;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;
use crate::store::StoreLock;

/// An agent's lease as one driver holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentLease {
    pub agent: String,
    /// Who holds it: a driver's name, unique per process.
    pub owner: String,
    /// Grows at every change of holder; effects made under the lease check it.
    pub token: i64,
    /// When it runs out unless renewed (ms since the epoch).
    pub until_ms: i64,
    /// The holder this take moved the lease from (one whose lease ran out
    /// or who gave it up); `None` when the lease was kept or is the
    /// agent's first. A worker takes the agent over from it (`worker.rs`).
    pub taken_from: Option<String>,
}

fn ttl_ms(ttl: Duration) -> i64 {
    i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX / 2)
}

impl Engine {
    /// Takes (or keeps) `agent`'s lease for `owner` for `ttl`: `None` when
    /// another driver holds it and it has not run out. A takeover of a
    /// lease that ran out, and the first lease of an agent, are
    /// `agent.lease_taken` events.
    pub async fn take_agent_lease(
        &self,
        agent: &str,
        owner: &str,
        ttl: Duration,
    ) -> Result<Option<AgentLease>> {
        let op = "taking an agent's lease";
        let now = now_ms();
        let until = now.saturating_add(ttl_ms(ttl));
        let mut tx = self.store.write(op).await?;
        // Two takers queue on the agent's lock (its lease row may not exist
        // yet to lock); a renewal in flight is waited for by the row lock.
        tx.lock(StoreLock::Agent(agent)).await?;
        let row = sqlx::query(&format!(
            "SELECT owner, token, until_ms FROM agent_leases WHERE agent = $1{}",
            tx.backend().for_update()
        ))
        .bind(agent)
        .fetch_optional(&mut *tx)
        .await
        .map_err(EngineError::store(op))?;
        let held: Option<(String, i64, i64)> = row
            .map(|r| -> std::result::Result<_, sqlx::Error> {
                Ok((
                    r.try_get("owner")?,
                    r.try_get("token")?,
                    r.try_get("until_ms")?,
                ))
            })
            .transpose()
            .map_err(EngineError::store(op))?;
        // (token, whether the lease changes hands, the holder before).
        let (token, taken, previous) = match held {
            Some((o, token, _)) if o == owner => (token, false, None),
            Some((o, _, until_ms)) if until_ms > now => {
                tracing::debug!(agent, holder = %o, "agent lease held by another driver");
                return Ok(None);
            }
            Some((o, token, _)) => (token.saturating_add(1), true, Some(o)),
            None => (1, true, None),
        };
        // A compare-and-swap on the token read above: should another driver
        // have taken or made the lease since (a store whose writers are not
        // serialised), nothing is written and this driver does not hold it.
        let read_token = if taken { token - 1 } else { token };
        let written = sqlx::query(
            "INSERT INTO agent_leases (agent, owner, token, until_ms, renewed_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (agent) DO UPDATE SET \
             owner = excluded.owner, token = excluded.token, until_ms = excluded.until_ms, \
             renewed_at = excluded.renewed_at WHERE agent_leases.token = $6",
        )
        .bind(agent)
        .bind(owner)
        .bind(token)
        .bind(until)
        .bind(now)
        .bind(read_token)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store(op))?
        .rows_affected();
        if written != 1 {
            tracing::debug!(agent, "agent lease taken by another driver meanwhile");
            return Ok(None);
        }
        if taken {
            emit(
                &mut tx,
                NewEvent::new(kind::AGENT_LEASE_TAKEN, &Actor::system())
                    .agent(agent)
                    .payload(serde_json::json!({
                        "owner": owner,
                        "token": token,
                        "previous_owner": &previous,
                    })),
            )
            .await?;
        }
        tx.commit().await.map_err(EngineError::store(op))?;
        // What this process's pushes of the agent carry to the forge.
        self.git.hold_fence(agent, token);
        Ok(Some(AgentLease {
            agent: agent.to_string(),
            owner: owner.to_string(),
            token,
            until_ms: until,
            taken_from: previous,
        }))
    }

    /// The agents whose lease `owner` holds now (not run out).
    pub async fn agents_leased_by(&self, owner: &str) -> Result<Vec<String>> {
        sqlx::query_scalar("SELECT agent FROM agent_leases WHERE owner = $1 AND until_ms > $2")
            .bind(owner)
            .bind(now_ms())
            .fetch_all(self.store.pool())
            .await
            .map_err(EngineError::store("listing the agents a driver holds"))
    }

    /// Renews every lease `owner` holds that has not been taken over, for
    /// `ttl` from now; returns how many.
    pub async fn renew_agent_leases(&self, owner: &str, ttl: Duration) -> Result<u64> {
        let now = now_ms();
        self.set_leases_until(
            owner,
            now.saturating_add(ttl_ms(ttl)),
            "renewing agent leases",
        )
        .await
    }

    /// Gives up every lease `owner` holds (a driver stopping cleanly), so
    /// another driver takes the agents at once rather than after the lease.
    pub async fn release_agent_leases(&self, owner: &str) -> Result<u64> {
        self.set_leases_until(owner, 0, "releasing agent leases")
            .await
    }

    async fn set_leases_until(&self, owner: &str, until: i64, op: &'static str) -> Result<u64> {
        let mut tx = self.store.write(op).await?;
        let n =
            sqlx::query("UPDATE agent_leases SET until_ms = $1, renewed_at = $2 WHERE owner = $3")
                .bind(until)
                .bind(now_ms())
                .bind(owner)
                .execute(&mut *tx)
                .await
                .map_err(EngineError::store(op))?
                .rows_affected();
        tx.commit().await.map_err(EngineError::store(op))?;
        Ok(n)
    }

    /// The fencing check: `lease` is still the agent's (same holder, same
    /// token, not run out).
    pub(crate) async fn check_agent_lease(&self, lease: &AgentLease) -> Result<()> {
        let row: Option<(String, i64, i64)> =
            sqlx::query_as("SELECT owner, token, until_ms FROM agent_leases WHERE agent = $1")
                .bind(&lease.agent)
                .fetch_optional(self.store.pool())
                .await
                .map_err(EngineError::store("reading an agent's lease"))?;
        // Who holds it now, when it is no longer this lease: another holder,
        // or nobody (it ran out, or it was released).
        let now_held_by = match row {
            Some((owner, token, until)) if owner == lease.owner && token == lease.token => {
                if until > now_ms() {
                    return Ok(());
                }
                None
            }
            Some((owner, _, _)) => Some(owner),
            None => None,
        };
        Err(EngineError::AgentLeaseLost {
            agent: lease.agent.clone(),
            owner: lease.owner.clone(),
            now_held_by,
        })
    }
}
