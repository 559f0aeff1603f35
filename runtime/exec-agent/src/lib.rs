//! The exec agent: how a command reaches a berth's container without a
//! Docker API exec.
//!
//! A Docker exec costs dockerd, containerd and runc tens of milliseconds;
//! agent sandboxes built for speed (OpenHands' action server, e2b's daemon)
//! keep a process inside instead. berth does the same without giving that
//! process any way in: berth binds a unix socket in a per-berth directory
//! only berth can write, mounted read-only into the container; the agent
//! ([`listen`]), started in the container as the berth's uid, sees the socket
//! appear (inotify) and connects *out* to it. berth never `connect()`s by
//! path anywhere an agent can write, and the socket is the berth's alone.
//!
//! Per connection the agent starts [`run`] in a fresh process whose command
//! line carries the exec's token (`… exec-run berth-exec <token>`), the form
//! berth's in-container kill script already finds (`berth cancel`, a
//! deadline the agent could not keep); that process runs the command in its
//! own session, streams its output back, and kills the session's process
//! group when the command ends or berth goes away.
//!
//! The agent holds no authority the container does not already have: it is
//! the berth's uid inside the berth's namespaces. A command of the agent can
//! kill it or answer in its place, so berth treats every frame it reads as
//! untrusted input ([`wire`]: bounded, totally parsed) and, when no agent
//! answers, runs the command through Docker as before.

pub mod listen;
pub mod run;
pub mod wire;
