//! The crate's integration tests in one binary: the proxy over real sockets
//! on loopback, deciding through the real policy.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod policy_gate;
mod proxy;
