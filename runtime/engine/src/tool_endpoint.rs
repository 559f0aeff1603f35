//! The seam between a `command` agent's turn and berth's MCP tools served
//! outside the confinement (issue 18's `{mcp_config}`).
//!
//! The engine does not speak MCP: the `berth` binary does (`berth mcp`,
//! rmcp). So a turn whose program takes `{mcp_config}` or `{mcp_url}` asks
//! the [`ToolEndpoints`] the binary registered ([`Engine::serve_tools_with`])
//! for an endpoint bound to the turn's agent, writes the client
//! configuration for it, runs the program, and closes the endpoint when the
//! program exits. The endpoint is alive exactly for the turn; its bearer
//! token binds the agent (the client names none), so every tool call is a
//! proposal by that agent through the engine's one path.
//!
//! A process with no registered endpoints (the engine's own tests, a
//! library user) refuses such a turn: the prompt goes back to its queue.

use std::sync::Arc;

use crate::Engine;
use crate::error::Result;

/// Opens an MCP endpoint per turn: what the binary implements.
#[async_trait::async_trait]
pub trait ToolEndpoints: Send + Sync {
    /// An endpoint serving `agent`'s berth tools, listening until
    /// [`ToolEndpoint::close`].
    async fn open(&self, agent: &crate::AgentName) -> Result<Box<dyn ToolEndpoint>>;
}

/// One turn's endpoint.
#[async_trait::async_trait]
pub trait ToolEndpoint: Send + Sync {
    /// Where a client posts (`http://127.0.0.1:PORT/mcp`).
    fn url(&self) -> &str;
    /// The bearer token every request must carry.
    fn bearer_token(&self) -> &str;
    /// Stops listening (a new connection is refused at once) and waits for
    /// the proposals under way to be recorded.
    async fn close(self: Box<Self>);
}

/// The MCP client configuration for `endpoint`, in Claude Code's
/// `--mcp-config` format: one server named `berth`, streamable HTTP, the
/// token as a header.
pub fn mcp_config_json(endpoint: &dyn ToolEndpoint) -> String {
    let config = serde_json::json!({
        "mcpServers": {
            "berth": {
                "type": "http",
                "url": endpoint.url(),
                "headers": { "Authorization": format!("Bearer {}", endpoint.bearer_token()) },
            }
        }
    });
    format!("{config:#}\n")
}

impl Engine {
    /// Serves `command` agents' turns their tools through `endpoints` (the
    /// binary registers its streamable HTTP server once, at start). A
    /// second registration is ignored.
    pub fn serve_tools_with(&self, endpoints: Arc<dyn ToolEndpoints>) {
        if self.tool_endpoints.set(endpoints).is_err() {
            tracing::debug!("tool endpoints were already registered");
        }
    }

    pub(crate) fn tool_endpoints(&self) -> Option<&Arc<dyn ToolEndpoints>> {
        self.tool_endpoints.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixed;

    #[async_trait::async_trait]
    impl ToolEndpoint for Fixed {
        fn url(&self) -> &str {
            "http://127.0.0.1:4242/mcp"
        }
        fn bearer_token(&self) -> &str {
            "t0k\"en"
        }
        async fn close(self: Box<Self>) {}
    }

    #[test]
    fn the_config_is_claude_codes_mcp_config_format() {
        let v: serde_json::Value = serde_json::from_str(&mcp_config_json(&Fixed)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"mcpServers": {"berth": {
                "type": "http",
                "url": "http://127.0.0.1:4242/mcp",
                "headers": {"Authorization": "Bearer t0k\"en"}
            }}})
        );
    }
}
