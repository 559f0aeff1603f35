//! `berth serve`: the HTTP/JSON API, the approvals page and the background
//! work, until SIGINT or SIGTERM (see the `berth-server` crate).

use std::sync::Arc;

use anyhow::Context as _;
use berth_engine::Engine;
use berth_server::{Endpoint, Listen, Options, SOCKET_FILE, Server};

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Where to listen: `unix:PATH`, or a loopback `127.0.0.1:PORT` (port 0
    /// picks a free one) with a bearer token. Default: unix:<state>/berth.sock.
    /// A TCP server answers on unix:<state>/berth.sock too (unless another
    /// server holds it), so `berth exec` in a shell hands its actions to it.
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// Allow a TCP address that is not loopback. The API runs commands and
    /// approves actions, and plain HTTP carries the token in clear: only on
    /// a network you trust.
    #[arg(long)]
    allow_non_loopback: bool,
    /// Do not drive the noop agents' loops (nor the `command` agents' turns) in the background.
    #[arg(long)]
    no_agent_loops: bool,
    /// How long a page session lasts before the page must log in again,
    /// in seconds (default: 12 hours). Bearer-token clients are unaffected.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    session_ttl: Option<u64>,
    /// How long this server's lease on each agent it drives holds without
    /// renewal (default 30 s): when several servers share a state
    /// directory, the agents of one that died are taken over this long
    /// after its last renewal.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    agent_lease: Option<u64>,
    /// Run as the worker NAME, one of several hosts with state directories
    /// of their own sharing one PostgreSQL store and one forge server: NAME
    /// holds the agents' leases and labels the containers it creates
    /// (`berth.worker`); projects of the store this state directory lacks
    /// are mirrored from their forge server at start; an agent taken from a
    /// worker that died is taken over (its containers removed, its work
    /// re-provisioned from the forge; `agent.taken_over` says what did not
    /// survive). Names: 1 to 64 ASCII letters, digits, `-`, `_`, `.`.
    #[arg(long, value_name = "NAME")]
    worker: Option<String>,
    /// Drive at most N agents at once (the leases this server holds); the
    /// others are left to the servers or workers beside it. Default: no cap.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    max_agents: Option<u64>,
}

pub async fn run(engine: Arc<Engine>, a: ServeArgs) -> anyhow::Result<u8> {
    // A long-running process: its log goes to stderr (BERTH_LOG=debug for more).
    let filter = tracing_subscriber::EnvFilter::try_from_env("BERTH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
    let listen = match &a.listen {
        Some(v) => Listen::parse(v)?,
        None => Listen::Unix(engine.state().root().join(SOCKET_FILE)),
    };
    // A TCP server (the approvals page) answers on the state's socket too,
    // so `berth exec` in a shell hands its actions to it.
    let state_socket =
        matches!(listen, Listen::Tcp(_)).then(|| engine.state().root().join(SOCKET_FILE));
    let mut options = Options::new(listen);
    options.state_socket = state_socket;
    options.allow_non_loopback = a.allow_non_loopback;
    options.drive_agents = !a.no_agent_loops;
    if let Some(secs) = a.session_ttl {
        options.session_ttl = std::time::Duration::from_secs(secs);
    }
    if let Some(secs) = a.agent_lease {
        options.agent_lease = std::time::Duration::from_secs(secs);
    }
    options.max_agents = a
        .max_agents
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    if let Some(name) = &a.worker {
        engine.set_worker(name)?;
        let joined = engine
            .join_server_projects()
            .await
            .context("mirroring the store's projects from their forge servers")?;
        for p in &joined {
            tracing::info!(project = %p, worker = %name, "this worker joined a project from its forge server");
        }
    }
    // Before any berth comes up: containers a crashed berth left behind are
    // adopted or removed. Docker being down is not fatal to the API (runner
    // berths still work), except under CI, where it fails the run.
    match engine.reconcile_berths().await {
        Ok(report) => {
            for r in &report {
                if r.adopted {
                    tracing::info!(container = %r.container, stale_execs_killed = r.stale_execs_killed, "reconcile adopted a berth container");
                } else {
                    tracing::info!(container = %r.container, reason = r.reason.as_deref().unwrap_or(""), "reconcile removed a berth container");
                }
            }
        }
        Err(e) if berth_engine::berths::ci_requires_docker() => {
            return Err(e).context("reconciling berth containers at start (CI=true)");
        }
        Err(e) => tracing::warn!("berth containers not reconciled: {e}"),
    }
    // The berths' disks: a `down` that died before its disk went, or a
    // reboot that unmounted a kept berth's disk.
    match engine.reconcile_disks().await {
        Ok(report) => {
            for d in &report {
                tracing::info!(project = %d.project, agent = %d.agent, mount_point = %d.mount_point.display(), outcome = d.outcome, "reconcile settled a berth's disk");
            }
        }
        Err(e) => tracing::warn!("berth disks not reconciled: {e}"),
    }
    let server = Server::bind(engine.clone(), options).await?;
    // One line a script can read for the address (port 0 resolved).
    println!("berth serve: listening on {}", server.endpoint());
    match server.endpoint() {
        Endpoint::Unix { path } => println!(
            "  API over the unix socket (mode 0600; no token): curl --unix-socket {} http://berth/api/agents",
            path.display()
        ),
        Endpoint::Tcp { addr, token_file } => {
            println!(
                "  API token: {} (send `Authorization: Bearer <token>`)",
                token_file.display()
            );
            println!(
                "  approvals page: open http://{addr}/login?token=<the token> once in a browser"
            );
            if let Some(path) = server.state_socket() {
                println!(
                    "  `berth exec` hands its actions to this server over unix:{}",
                    path.display()
                );
            }
        }
    }
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    server
        .run(stop_signal())
        .await
        .context("berth serve stopped")?;
    engine.close().await;
    println!("berth serve: stopped");
    Ok(0)
}

/// SIGINT (Ctrl-C) or SIGTERM.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(e) => {
            tracing::warn!("cannot watch SIGTERM ({e}); stop with Ctrl-C");
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
