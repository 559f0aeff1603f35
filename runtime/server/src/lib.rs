//! `berth serve`: the HTTP/JSON API over the engine, a server-sent-events
//! stream of the log, the approvals page, and the background work (recovery
//! at start, the noop agents' loops, pipelines resumed once a person approves,
//! the store's retention).
//!
//! A thin layer, on purpose: every handler makes the engine call the CLI
//! makes for the same command, with the same arguments, and answers with the
//! engine's own types — so an action proposed over HTTP is decided, run and
//! logged exactly as one proposed from a terminal, and the two can never
//! drift apart. The store is the single source of truth; this process keeps
//! nothing that another `berth` process would need to see (sessions of the
//! page are the one exception, and losing them only means logging in again).
//!
//! Access: a unix socket (mode 0600) by default, where the filesystem is
//! the access control; or loopback TCP, where every request carries the
//! bearer token from `<state>/api-token` or the page's session cookie
//! (see [`auth`]).

mod api;
mod auth;
mod background;
mod body;
mod card;
mod diff;
mod error;
mod listen;
mod network_panel;
pub mod openapi;
pub mod page;
mod pr_panel;
pub mod risk;
mod routes;
pub mod sessions_panel;
mod task_page;

use std::future::{Future, IntoFuture as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use berth_engine::{Actor, Engine};
use tokio::sync::watch;

pub use body::MAX_BODY_BYTES;
pub use error::{ApiError, ServeError};
pub use listen::{Listen, load_or_create_token};
pub use routes::Route;

pub use crate::auth::{DEFAULT_SESSION_TTL, SECRET_HEADER, constant_time_eq};

use crate::auth::Access;
use crate::background::LogFollower;

/// The name of the token file in the state directory.
pub const TOKEN_FILE: &str = "api-token";
/// The name of the default socket in the state directory (where the
/// `berth exec` looks for a server to hand its action to).
pub use berth_handoff::state::SOCKET_FILE;
/// How long shutdown waits for open connections to finish.
const GRACE: Duration = Duration::from_secs(10);

/// What every handler shares.
#[derive(Clone)]
pub(crate) struct AppState {
    pub(crate) engine: Arc<Engine>,
    pub(crate) access: Access,
    /// Who decides through this server: the person who runs it.
    pub(crate) user: Actor,
    pub(crate) log: LogFollower,
    pub(crate) shutdown: watch::Receiver<bool>,
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: Listen,
    /// Permit a TCP address that is not loopback (refused otherwise).
    pub allow_non_loopback: bool,
    /// Drive the noop agents' loops, resume pipelines a person unblocked,
    /// and run open PRs' checks, in the background.
    pub drive_agents: bool,
    /// How often the log's cursor is polled for writes by other processes.
    pub poll: Duration,
    /// How often every noop agent gets a pass even when the log is quiet.
    pub rescan: Duration,
    /// How long a page session lasts before the page must log in again.
    pub session_ttl: Duration,
    /// How often the store's retention is applied (and once at start).
    pub retention_every: Duration,
    /// How long an agent's lease holds without renewal: after a server
    /// dies, another takes its agents over this long after its last
    /// renewal (renewed every third of it).
    pub agent_lease: Duration,
    /// At most this many agents driven at once (leases held); `None`: no cap.
    /// Workers sharing a fleet use it to share the agents out.
    pub max_agents: Option<usize>,
    /// With a TCP `listen`, answer on this unix socket too (the state's
    /// `berth.sock`, as the CLI sets it): a shell's `berth exec` hands its
    /// action to this server while a browser uses the TCP address. One
    /// that another live server holds is left to it (a warning).
    pub state_socket: Option<PathBuf>,
}

impl Options {
    pub fn new(listen: Listen) -> Options {
        Options {
            listen,
            allow_non_loopback: false,
            drive_agents: true,
            poll: Duration::from_millis(250),
            rescan: Duration::from_secs(5),
            session_ttl: DEFAULT_SESSION_TTL,
            retention_every: Duration::from_secs(3600),
            agent_lease: Duration::from_secs(30),
            max_agents: None,
            state_socket: None,
        }
    }
}

/// Where a person reaches a bound server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Endpoint {
    Unix {
        path: PathBuf,
    },
    Tcp {
        addr: SocketAddr,
        token_file: PathBuf,
    },
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix { path } => write!(f, "unix:{}", path.display()),
            Endpoint::Tcp { addr, .. } => write!(f, "http://{addr}"),
        }
    }
}

enum Bound {
    Unix(tokio::net::UnixListener, PathBuf),
    Tcp(tokio::net::TcpListener),
}

/// A bound server, not yet serving: bind first, so the caller can print
/// where it listens (port 0 resolved) before anything is served.
pub struct Server {
    engine: Arc<Engine>,
    options: Options,
    bound: Bound,
    access: Access,
    endpoint: Endpoint,
    /// Beside a TCP address: the state's socket, bound (see
    /// [`Options::state_socket`]).
    state_socket: Option<(tokio::net::UnixListener, PathBuf)>,
}

impl Server {
    /// Binds the socket or the loopback port (refusing other addresses
    /// unless forced) and, for TCP, loads or creates the token file.
    pub async fn bind(engine: Arc<Engine>, options: Options) -> Result<Server, ServeError> {
        options.listen.check_loopback(options.allow_non_loopback)?;
        let (bound, access, endpoint) = match &options.listen {
            Listen::Unix(path) => {
                let l = listen::bind_unix(path)?;
                (
                    Bound::Unix(l, path.clone()),
                    Access::Socket,
                    Endpoint::Unix { path: path.clone() },
                )
            }
            Listen::Tcp(addr) => {
                let l = listen::bind_tcp(*addr).await?;
                let local = l.local_addr().map_err(|source| ServeError::Bind {
                    addr: addr.to_string(),
                    source,
                })?;
                let token_file = engine.state().root().join(TOKEN_FILE);
                let token = load_or_create_token(&token_file)?;
                // A forced non-loopback address may be reached by any name.
                let hosts = Listen::Tcp(local)
                    .check_loopback(false)
                    .is_ok()
                    .then(|| auth::loopback_hosts(local.port()));
                (
                    Bound::Tcp(l),
                    Access::Token(Arc::new(auth::TokenAccess::new(
                        token,
                        hosts,
                        options.session_ttl,
                    ))),
                    Endpoint::Tcp {
                        addr: local,
                        token_file,
                    },
                )
            }
        };
        let state_socket = match (&bound, &options.state_socket) {
            (Bound::Tcp(_), Some(path)) => match listen::bind_unix(path) {
                Ok(l) => Some((l, path.clone())),
                Err(e) => {
                    tracing::warn!(
                        "not answering on the state's socket ({e}): `berth exec` runs its actions in its own process"
                    );
                    None
                }
            },
            _ => None,
        };
        Ok(Server {
            engine,
            options,
            bound,
            access,
            endpoint,
            state_socket,
        })
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The unix socket a TCP server answers on too, when it bound one.
    pub fn state_socket(&self) -> Option<&std::path::Path> {
        self.state_socket.as_ref().map(|(_, p)| p.as_path())
    }

    /// Recovers, starts the background work, and serves until `signal`
    /// completes; then stops taking connections, lets open requests and
    /// agent passes finish (a bounded wait), and removes the socket file.
    pub async fn run<F>(self, signal: F) -> Result<(), ServeError>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        let interrupted = self.engine.recover().await?;
        if !interrupted.is_empty() {
            tracing::warn!(
                count = interrupted.len(),
                "actions a crash interrupted were marked interrupted (never re-run on their own: `berth retry ID`)"
            );
        }
        let (stop_tx, stop_rx) = watch::channel(false);
        let (log, follower) =
            background::follow_log(self.engine.clone(), self.options.poll, stop_rx.clone()).await?;
        let driver = self.options.drive_agents.then(|| {
            tokio::spawn(background::drive_agents(
                self.engine.clone(),
                log.subscribe(),
                stop_rx.clone(),
                self.options.rescan,
                self.options.agent_lease,
                self.options.max_agents,
            ))
        });
        let pipelines = self.options.drive_agents.then(|| {
            tokio::spawn(background::drive_pipelines(
                self.engine.clone(),
                Actor::current_user(),
                log.subscribe(),
                stop_rx.clone(),
                self.options.rescan,
            ))
        });
        let prs = self.options.drive_agents.then(|| {
            tokio::spawn(background::watch_prs(
                self.engine.clone(),
                stop_rx.clone(),
                self.options.rescan,
            ))
        });
        let retention = tokio::spawn(background::keep_retention(
            self.engine.clone(),
            stop_rx.clone(),
            self.options.retention_every,
        ));
        let state = AppState {
            engine: self.engine.clone(),
            access: self.access,
            user: Actor::current_user(),
            log,
            shutdown: stop_rx.clone(),
        };
        let stop = stop_tx.clone();
        let shutdown = async move {
            signal.await;
            tracing::info!("shutting down: finishing open requests");
            let _ = stop.send(true);
        };
        let served = match self.bound {
            Bound::Unix(l, path) => {
                let r = until_drained(serve_unix(l, app(state), shutdown), stop_rx.clone()).await;
                remove_socket(&path);
                r
            }
            Bound::Tcp(l) => {
                let tcp = axum::serve(l, app(state.clone()))
                    .with_graceful_shutdown(shutdown)
                    .into_future();
                match self.state_socket {
                    None => until_drained(tcp, stop_rx.clone()).await,
                    Some((unix, path)) => {
                        // The socket's mode is its access control, as
                        // when it is the only address.
                        let socket_app = app(AppState {
                            access: Access::Socket,
                            ..state
                        });
                        let mut stopped = stop_rx.clone();
                        let unix_shutdown = async move {
                            let _ = stopped.wait_for(|s| *s).await;
                        };
                        let both = async {
                            let (t, u) =
                                tokio::join!(tcp, serve_unix(unix, socket_app, unix_shutdown));
                            t.and(u)
                        };
                        let r = until_drained(both, stop_rx.clone()).await;
                        remove_socket(&path);
                        r
                    }
                }
            }
        };
        let _ = stop_tx.send(true);
        if let Some(d) = driver {
            let _ = d.await;
        }
        if let Some(p) = pipelines {
            let _ = p.await;
        }
        if let Some(p) = prs {
            let _ = p.await;
        }
        let _ = retention.await;
        let _ = follower.await;
        served
    }
}

/// Serves `app` on a unix socket (each peer judged when accepted, a berth
/// exec's refused) until `shutdown`.
async fn serve_unix(
    l: tokio::net::UnixListener,
    app: Router,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = app
        .layer(middleware::from_fn(listen::refuse_berth_execs))
        .into_make_service_with_connect_info::<listen::UnixPeer>();
    axum::serve(l, app)
        .with_graceful_shutdown(shutdown)
        .into_future()
        .await
}

/// Removes a socket file this server bound, once it stopped serving (also
/// after connections outlived the grace period).
fn remove_socket(path: &std::path::Path) {
    if let Err(e) = std::fs::remove_file(path) {
        tracing::warn!(path = %path.display(), "removing the socket: {e}");
    }
}

/// Waits for the server to finish; after the stop signal, at most `GRACE`
/// (an event stream or a slow client must not hold shutdown forever).
async fn until_drained<F>(serving: F, mut stop: watch::Receiver<bool>) -> Result<(), ServeError>
where
    F: Future<Output = std::io::Result<()>>,
{
    tokio::pin!(serving);
    tokio::select! {
        r = &mut serving => return r.map_err(ServeError::Serve),
        _ = stop.wait_for(|s| *s) => {}
    }
    match tokio::time::timeout(GRACE, serving).await {
        Ok(r) => r.map_err(ServeError::Serve),
        Err(_) => {
            tracing::warn!(
                "connections still open {}s after the stop signal were dropped",
                GRACE.as_secs()
            );
            Ok(())
        }
    }
}

/// The whole application: routes, JSON fallbacks, access control, the body
/// limit, and the headers every answer carries.
pub(crate) fn app(state: AppState) -> Router {
    let (routes, _) = routes::table();
    routes
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            poke_after_writes,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), auth::guard))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::map_response(security_headers))
        .with_state(state)
}

/// Every route the server answers, as registered.
pub fn routes() -> Vec<Route> {
    routes::table().1
}

async fn no_route(req: Request) -> ApiError {
    ApiError::not_found(
        "no_route",
        format!(
            "no route for {} {}: see /openapi.json for the API's paths",
            req.method(),
            req.uri().path()
        ),
    )
}

async fn method_not_allowed(req: Request) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        format!(
            "{} is not a method of {}: see /openapi.json",
            req.method(),
            req.uri().path()
        ),
    )
}

/// A write done here shows up in streams at once, not at the next poll.
async fn poke_after_writes(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let writes = !matches!(*req.method(), Method::GET | Method::HEAD);
    let r = next.run(req).await;
    if writes {
        app.log.poke();
    }
    r
}

/// The page runs only this origin's script and style, is never framed, and
/// nothing is cached or leaks a referrer (a login URL carries the token).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
                   img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

async fn security_headers(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}
