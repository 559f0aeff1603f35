//! The work `berth serve` does on its own: following the log, driving
//! the noop agents' loops, and keeping the store's retention.
//!
//! The store is the truth and other processes write it too (`berth approve`
//! in a terminal, a second server), so nothing here trusts in-process
//! signals alone: the follower looks at the log's cursor (a primary-key
//! maximum, cheap) and publishes it; a request handled here pokes it so the
//! next look is immediate, and on PostgreSQL another process's append, on
//! any host, wakes it through the store's notification
//! (`Engine::log_signal`); otherwise it looks once per interval. Event
//! streams and the agent driver wait on that published cursor.
//!
//! The driver runs the engine's own `run_agent(agent, until_idle)` — the
//! same call as `berth agent run --until-idle` — for each noop agent when
//! the log moves, one pass per agent at a time. A pass that fails is logged
//! and that agent waits before the next try, so a broken berth does not
//! spin.
//!
//! Several servers may share one store: each drives only the agents whose
//! lease it holds (`agent_lease.rs` in the engine), renews its leases
//! while it lives and gives them up when it stops; the agents of a server
//! that died are taken over by another once their leases run out. A
//! worker (`berth serve --worker NAME`, a state directory of its own) holds
//! its leases by its name and, before the first pass of an agent it took
//! from another, takes it over (the engine's `worker.rs`: the dead worker's
//! containers removed, what survived in the forge compared with the store).
//!
//! A person's approval received by a process that does not hold the agent
//! (another worker's page, `berth approve` elsewhere) is recorded in the
//! store and run by the holder (the engine's `actions/route.rs`): its event
//! moves the log, which wakes this driver (at once on PostgreSQL), and the
//! agent's next pass runs it under the lease.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use berth_engine::agent_lease::AgentLease;
use berth_engine::{AgentImpl, AgentStatus, Engine};
use tokio::sync::{Notify, watch};
use tokio::task::JoinSet;

/// How long a failed agent pass waits before the next try.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);
/// How long shutdown waits for agent passes in flight.
const DRAIN: Duration = Duration::from_secs(10);

/// The log's cursor as this process last saw it, and a way to ask for a
/// fresh look.
#[derive(Clone)]
pub(crate) struct LogFollower {
    latest: watch::Receiver<i64>,
    poke: Arc<Notify>,
}

impl LogFollower {
    /// Asks the follower to look at the store now (after a write).
    pub(crate) fn poke(&self) {
        self.poke.notify_one();
    }

    /// A receiver that wakes when the cursor moves.
    pub(crate) fn subscribe(&self) -> watch::Receiver<i64> {
        self.latest.clone()
    }
}

/// Starts following the log. The task ends when `shutdown` turns true.
pub(crate) async fn follow_log(
    engine: Arc<Engine>,
    interval: Duration,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(LogFollower, tokio::task::JoinHandle<()>), berth_engine::EngineError> {
    let start = engine.latest_event_id().await?;
    let mut signal = engine.log_signal().await?;
    let (tx, rx) = watch::channel(start);
    let poke = Arc::new(Notify::new());
    let follower = LogFollower {
        latest: rx,
        poke: poke.clone(),
    };
    let handle = tokio::spawn(async move {
        let mut last = start;
        let mut failing = false;
        loop {
            tokio::select! {
                _ = poke.notified() => {}
                _ = signal.wait(interval) => {}
                _ = shutdown.wait_for(|s| *s) => break,
            }
            match engine.latest_event_id().await {
                Ok(id) => {
                    failing = false;
                    if id != last {
                        last = id;
                        tx.send_replace(id);
                    }
                }
                Err(e) => {
                    if !failing {
                        tracing::warn!("following the event log: {e}");
                    }
                    failing = true;
                }
            }
        }
    });
    Ok((follower, handle))
}

/// Drives every noop agent's loop, and every `command` agent's turns (its
/// program once per deliverable prompt, when its runner berth is up),
/// whenever the log moves, until shutdown;
/// then waits a little for passes in flight, so an action being executed is
/// recorded rather than left for recovery.
pub(crate) async fn drive_agents(
    engine: Arc<Engine>,
    mut latest: watch::Receiver<i64>,
    mut shutdown: watch::Receiver<bool>,
    rescan: Duration,
    lease_ttl: Duration,
    max_agents: Option<usize>,
) {
    // This process, as the holder of the agents' leases it drives: a
    // worker by its name (its peers have state directories of their own,
    // so it takes their agents over: `worker.rs` in the engine).
    let worker = engine.worker().map(str::to_string);
    let owner = worker
        .clone()
        .unwrap_or_else(berth_engine::recovery::executor_id);
    // Renewals on a task of their own: a long scan (many agents, a busy
    // store) must not let the leases of the agents in flight run out.
    let renewer = tokio::spawn(renew_leases(
        engine.clone(),
        owner.clone(),
        lease_ttl,
        shutdown.clone(),
    ));
    // A deadline of its own, not a sleep restarted by every other wake-up
    // (the renewals would keep it from ever firing).
    let mut rescan_tick = tokio::time::interval(rescan);
    rescan_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // (agent, whether a takeover was done, the pass's result).
    let mut running: JoinSet<(String, bool, Result<String, String>)> = JoinSet::new();
    // Agents this worker took from another whose takeover has not been
    // done yet (it is retried with the agent's next pass).
    let mut to_take_over: HashMap<String, AgentLease> = HashMap::new();
    let mut busy: HashSet<String> = HashSet::new();
    // Agents the log moved for while their pass ran: they get one more.
    let mut again: HashSet<String> = HashSet::new();
    let mut resting: HashMap<String, Instant> = HashMap::new();
    let mut scan = true;
    loop {
        if scan {
            scan = false;
            // A worker mirrors a project added since it started before it
            // drives that project's agents.
            if worker.is_some()
                && let Err(e) = engine.join_server_projects().await
            {
                tracing::warn!("mirroring the store's projects from their forge servers: {e}");
            }
            // With a cap, the agents this process holds now: it takes no
            // new one beyond the cap (workers share the fleet's agents).
            let mut held: Option<HashSet<String>> = match max_agents {
                None => None,
                Some(_) => match engine.agents_leased_by(&owner).await {
                    Ok(held) => Some(held.into_iter().collect()),
                    Err(e) => {
                        tracing::warn!("listing the agents this server holds: {e}");
                        Some(HashSet::new())
                    }
                },
            };
            match engine.agents().await {
                Ok(agents) => {
                    let now = Instant::now();
                    for a in agents {
                        let driven = match a.implementation {
                            AgentImpl::Noop => true,
                            AgentImpl::Command => a.berth.is_some(),
                            AgentImpl::Real => false,
                        };
                        if !driven || a.status == AgentStatus::Paused {
                            continue;
                        }
                        if busy.contains(&a.name) {
                            again.insert(a.name);
                            continue;
                        }
                        if resting.get(&a.name).is_some_and(|until| *until > now) {
                            continue;
                        }
                        // A worker leaves the agents of a project whose forge
                        // it has no copy of (a directory on another host) to
                        // the workers that have one.
                        if worker.is_some() && !engine.holds_forge(&a.project) {
                            continue;
                        }
                        if let (Some(held), Some(max)) = (&held, max_agents)
                            && !held.contains(&a.name)
                            && held.len() >= max
                        {
                            continue;
                        }
                        let lease = match engine.take_agent_lease(&a.name, &owner, lease_ttl).await
                        {
                            Ok(Some(lease)) => lease,
                            // Another server drives it.
                            Ok(None) => continue,
                            Err(e) => {
                                tracing::warn!(agent = %a.name, "taking the agent's lease: {e}");
                                continue;
                            }
                        };
                        if let Some(held) = &mut held {
                            held.insert(a.name.clone());
                        }
                        if worker.is_some() && lease.taken_from.is_some() {
                            to_take_over.insert(a.name.clone(), lease.clone());
                        }
                        let takeover = to_take_over.get(&a.name).map(|t| AgentLease {
                            token: lease.token,
                            until_ms: lease.until_ms,
                            ..t.clone()
                        });
                        busy.insert(a.name.clone());
                        let engine = engine.clone();
                        running.spawn(async move {
                            if let Some(t) = &takeover
                                && let Err(e) = engine.take_over_agent(t).await
                            {
                                return (a.name, false, Err(format!("taking the agent over: {e}")));
                            }
                            let r = match a.names() {
                                Ok((name, _)) if a.implementation == AgentImpl::Command => {
                                    // Approvals a person gave elsewhere
                                    // run here, where its berth is (a noop
                                    // agent's pass runs them itself, once
                                    // its worktree is up).
                                    match engine.run_routed_approvals(&lease).await {
                                        Ok(_) => command_turns(&engine, &name).await,
                                        Err(e) => Err(format!(
                                            "running approvals received elsewhere: {e}"
                                        )),
                                    }
                                }
                                Ok((name, _)) => engine
                                    .run_agent_under(&name, true, Some(lease))
                                    .await
                                    .map(|r| format!("{:?}", r.stopped))
                                    .map_err(|e| e.to_string()),
                                Err(e) => Err(e.to_string()),
                            };
                            (a.name, takeover.is_some(), r)
                        });
                    }
                }
                Err(e) => tracing::warn!("listing agents to drive: {e}"),
            }
        }
        tokio::select! {
            changed = latest.changed() => {
                if changed.is_err() {
                    break;
                }
                scan = true;
            }
            Some(done) = running.join_next(), if !running.is_empty() => {
                match done {
                    Ok((name, took_over, result)) => {
                        busy.remove(&name);
                        if took_over {
                            to_take_over.remove(&name);
                        }
                        match result {
                            Ok(report) => {
                                resting.remove(&name);
                                tracing::debug!(agent = %name, stopped = %report, "agent pass");
                            }
                            Err(e) => {
                                tracing::warn!(agent = %name, "agent pass failed (next try in {}s): {e}", RETRY_AFTER_FAILURE.as_secs());
                                resting.insert(name.clone(), Instant::now() + RETRY_AFTER_FAILURE);
                            }
                        }
                        if again.remove(&name) {
                            scan = true;
                        }
                    }
                    Err(e) => tracing::error!("an agent pass panicked: {e}"),
                }
            }
            _ = rescan_tick.tick() => scan = true,
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
    if !running.is_empty() {
        tracing::info!(passes = running.len(), "waiting for agent passes in flight");
        let drained = tokio::time::timeout(DRAIN, async {
            while running.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                "agent passes still running after {}s were stopped; recovery marks their actions interrupted",
                DRAIN.as_secs()
            );
        }
    }
    // No renewal after the release below (one in flight is cancelled).
    renewer.abort();
    if let Err(e) = renewer.await
        && e.is_panic()
    {
        tracing::error!("the lease renewals panicked: {e}");
    }
    // Stopping cleanly: another server takes the agents at once.
    if let Err(e) = engine.release_agent_leases(&owner).await {
        tracing::warn!("giving up this server's agent leases (they run out on their own): {e}");
    }
}

/// Renews every lease `owner` holds each third of `ttl` until shutdown.
async fn renew_leases(
    engine: Arc<Engine>,
    owner: String,
    ttl: Duration,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut renew = tokio::time::interval((ttl / 3).max(Duration::from_millis(100)));
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = renew.tick() => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
        if let Err(e) = engine.renew_agent_leases(&owner, ttl).await {
            tracing::warn!("renewing this server's agent leases: {e}");
        }
    }
}

/// A `command` agent's turns until no prompt is deliverable: how many ran.
async fn command_turns(engine: &Engine, agent: &berth_engine::AgentName) -> Result<String, String> {
    let mut turns = 0;
    while engine
        .run_command_turn(agent)
        .await
        .map_err(|e| e.to_string())?
        .is_some()
    {
        turns += 1;
    }
    Ok(format!("{turns} command turns"))
}

/// Resumes pipeline runs that waited for a person once every action they
/// waited on is decided (approved here, in a terminal or by another
/// server), whenever the log moves — what `berth task run T` again does in
/// a terminal. The pipeline's lease keeps a run that a terminal resumes at
/// the same time from running twice; a resumption that fails is logged and
/// tried again after a while.
pub(crate) async fn drive_pipelines(
    engine: Arc<Engine>,
    user: berth_engine::Actor,
    mut latest: watch::Receiver<i64>,
    mut shutdown: watch::Receiver<bool>,
    rescan: Duration,
) {
    let mut resting: HashMap<String, Instant> = HashMap::new();
    loop {
        let tasks = match engine.pipelines_to_resume().await {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!("listing pipelines to resume: {e}");
                Vec::new()
            }
        };
        for task in tasks {
            let now = Instant::now();
            if resting.get(&task).is_some_and(|until| *until > now) {
                continue;
            }
            let run = engine.run_pipeline_with(&task, None, false, &user);
            let result = tokio::select! {
                r = run => r,
                _ = shutdown.wait_for(|s| *s) => {
                    tracing::warn!(task = %task, "shutdown while a pipeline ran: recovery marks its action interrupted");
                    return;
                }
            };
            match result {
                Ok(report) => {
                    resting.remove(&task);
                    tracing::info!(task = %task, end = ?report.end, "pipeline resumed");
                }
                Err(e) => {
                    tracing::warn!(task = %task, "resuming a pipeline (next try in {}s): {e}", RETRY_AFTER_FAILURE.as_secs());
                    resting.insert(task, Instant::now() + RETRY_AFTER_FAILURE);
                }
            }
        }
        tokio::select! {
            changed = latest.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            _ = tokio::time::sleep(rescan) => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
}

/// Applies the store's retention (`<state>/store.toml`, `[store]
/// retain_events_days`) at start and every `every`, so a long-running
/// server's log does not grow without bound. A failure is logged and tried
/// again at the next turn: the events stay where they are.
pub(crate) async fn keep_retention(
    engine: Arc<Engine>,
    mut shutdown: watch::Receiver<bool>,
    every: Duration,
) {
    let mut turns = tokio::time::interval(every);
    turns.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = turns.tick() => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
        match engine.apply_retention(berth_engine::ids::now_ms()).await {
            Ok(Some(done)) => tracing::info!(
                events = done.events,
                path = %done.path.display(),
                "old events archived (store.toml's retain_events_days)"
            ),
            Ok(None) => {}
            Err(e) => tracing::warn!(
                "applying the events retention (next try in {}s): {e}",
                every.as_secs()
            ),
        }
    }
}

/// Runs every open PR's checks on its current head (`berth pr watch`'s
/// pass) at start and every `every`: a new head pushed by an agent is
/// checked without anyone asking. A failed pass is logged and tried again.
pub(crate) async fn watch_prs(
    engine: Arc<Engine>,
    mut shutdown: watch::Receiver<bool>,
    every: Duration,
) {
    loop {
        let pass = engine.watch_prs();
        tokio::select! {
            r = pass => if let Err(e) = r {
                tracing::warn!("watching PRs (next try in {}s): {e}", every.as_secs());
            },
            _ = shutdown.wait_for(|s| *s) => break,
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = shutdown.wait_for(|s| *s) => break,
        }
    }
}
