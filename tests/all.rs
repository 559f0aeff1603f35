//! berth's end-to-end tests of the binary in one test binary (one link step,
//! as ripgrep's tests/tests.rs): each module drives `berth` as a person or a
//! client would — the CLI, the Claude Code hook, the MCP server, mounted
//! berths, pipelines. `berth serve`'s tests (`serve`, `serve_browser`) stay
//! binaries of their own: they share the HTTP harness in `support/`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "support/docker.rs"]
mod docker;
#[path = "support/fixture.rs"]
mod fixture;
// The worktrees crate's smart-HTTP test server (`git http-backend` as CGI).
#[path = "../worktrees/tests/common/smart_http.rs"]
mod smart_http;
#[path = "support/tls_front.rs"]
mod tls_front;

mod cancel;
mod cli;
mod devcontainer;
mod events_archive;
mod forge_server;
mod hook;
mod mcp;
mod mcp_http;
mod mounted;
mod mounted_image;
mod net;
mod pipelines;
mod pr_automation;
mod pr_checks;
mod pr_review;
mod project_dockerfile;
mod prompts;
mod store_keeper;
