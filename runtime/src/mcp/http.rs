//! `berth mcp`'s tools over MCP streamable HTTP, one endpoint per turn of
//! a `command` agent (issue 18's `{mcp_config}`): the engine's
//! [`ToolEndpoints`] seam, implemented here because the engine does not
//! speak MCP.
//!
//! The agent's program runs confined (no write to its worktree, no read of
//! berth's state); its tool calls must reach the engine from outside the
//! confinement, and a `berth mcp` child inside it would be cut off from the
//! store. So berth listens on 127.0.0.1 at a port the kernel picks, for the
//! turn only, and serves the very [`BerthMcp`] of the stdio server — the
//! same tools, the same proposals through [`berth_engine::Engine::propose`]
//! with the turn's agent as the actor — through rmcp's streamable HTTP
//! transport (the 2025-06-18 revision: JSON-RPC POSTed to one endpoint,
//! answered as JSON or SSE, sessions named by `Mcp-Session-Id`).
//!
//! Every request carries the turn's bearer token (a fresh 244-bit random
//! value, compared in constant time); without it, or with another, the
//! answer is 401 and nothing reaches the tools. The token is the only
//! thing that names the agent: a client cannot pick another. rmcp also
//! refuses a `Host` that is not this loopback address (DNS rebinding).
//! Closing stops listening at once (a new connection is refused), ends
//! the sessions, and waits for the proposals under way to be recorded.

use std::net::Ipv4Addr;
use std::sync::{Arc, Weak};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use berth_engine::{AgentName, Engine, EngineError, ToolEndpoint, ToolEndpoints};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use super::{BerthMcp, INFLIGHT_PERMITS};

/// The endpoint's path.
pub const PATH: &str = "/mcp";

/// How long closing waits for open connections before cutting them.
const CLOSE_GRACE: Duration = Duration::from_secs(5);

/// Opens the per-turn endpoints of one engine (registered with
/// [`Engine::serve_tools_with`]; it holds the engine weakly, so the
/// registration keeps nothing alive).
pub struct HttpEndpoints {
    engine: Weak<Engine>,
}

impl HttpEndpoints {
    /// Registers the endpoints of `engine` with it.
    pub fn register(engine: &Arc<Engine>) {
        engine.serve_tools_with(Arc::new(HttpEndpoints {
            engine: Arc::downgrade(engine),
        }));
    }
}

#[async_trait::async_trait]
impl ToolEndpoints for HttpEndpoints {
    async fn open(&self, agent: &AgentName) -> berth_engine::Result<Box<dyn ToolEndpoint>> {
        let unavailable = |why: String| EngineError::ToolEndpoint {
            agent: agent.to_string(),
            why,
        };
        let engine = self
            .engine
            .upgrade()
            .ok_or_else(|| unavailable("berth is shutting down".into()))?;
        let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| unavailable(format!("no loopback port to serve its tools on: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| unavailable(format!("the tools' listener has no address: {e}")))?;
        let token: Arc<str> = format!(
            "{}{}",
            berth_engine::ids::new_id(),
            berth_engine::ids::new_id()
        )
        .into();

        let mut server = BerthMcp::new(Ok(engine.clone()), agent.to_string());
        server.state_root = Some(engine.state().root().to_path_buf());
        let inflight = server.inflight.clone();
        let config = StreamableHttpServerConfig::default()
            .with_allowed_hosts(["127.0.0.1".to_string(), addr.to_string()]);
        let stop = config.cancellation_token.clone();
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let router = axum::Router::new()
            .route_service(PATH, service)
            .layer(middleware::from_fn_with_state(token.clone(), bearer));
        let shutdown = stop.clone();
        let name = agent.to_string();
        let serving = tokio::spawn(async move {
            let served = axum::serve(listener, router)
                .with_graceful_shutdown(shutdown.cancelled_owned())
                .await;
            if let Err(e) = served {
                tracing::warn!(agent = %name, "the turn's MCP endpoint stopped: {e}");
            }
        });
        tracing::info!(agent = %agent, %addr, "serving the turn's MCP tools");
        Ok(Box::new(HttpEndpoint {
            url: format!("http://{addr}{PATH}"),
            token,
            stop,
            serving: Some(serving),
            inflight,
        }))
    }
}

/// One turn's endpoint, listening until closed or dropped.
struct HttpEndpoint {
    url: String,
    token: Arc<str>,
    stop: tokio_util::sync::CancellationToken,
    serving: Option<JoinHandle<()>>,
    /// The permits of the proposals under way (shared by every session).
    inflight: Arc<Semaphore>,
}

#[async_trait::async_trait]
impl ToolEndpoint for HttpEndpoint {
    fn url(&self) -> &str {
        &self.url
    }

    fn bearer_token(&self) -> &str {
        &self.token
    }

    async fn close(mut self: Box<Self>) {
        self.stop.cancel();
        if let Some(mut serving) = self.serving.take()
            && tokio::time::timeout(CLOSE_GRACE, &mut serving)
                .await
                .is_err()
        {
            serving.abort();
        }
        // Proposals already under way finish and are recorded.
        let _all = self.inflight.acquire_many(INFLIGHT_PERMITS).await;
        tracing::info!(url = %self.url, "the turn's MCP endpoint closed");
    }
}

impl Drop for HttpEndpoint {
    /// A turn cancelled before it closed its endpoint: nothing listens on.
    fn drop(&mut self) {
        self.stop.cancel();
        if let Some(serving) = self.serving.take() {
            serving.abort();
        }
    }
}

/// Lets through only requests carrying the turn's bearer token.
async fn bearer(State(token): State<Arc<str>>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim());
    match given {
        Some(t) if berth_server::constant_time_eq(t.as_bytes(), token.as_bytes()) => {
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token: this endpoint serves one berth agent's turn, \
             and its token is in the turn's {mcp_config}\n",
        )
            .into_response(),
    }
}
