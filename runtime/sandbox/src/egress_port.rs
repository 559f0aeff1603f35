//! How an allow-list berth reaches its egress proxy: a listener on
//! `127.0.0.1:`[`EGRESS_PORT`] inside the berth's own network namespace,
//! which berth itself accepts on, for the exec's duration.
//!
//! The berth keeps no route out (the runner's exec namespace and the
//! container's `network none` hold only `lo`). A listening socket belongs
//! to the namespace it was made in, whoever accepts on it, so berth makes
//! one there and serves it as that berth's listener — the proxy knows which
//! berth asks from the listener a connection arrived on, never from what the
//! client says:
//!
//! - **runner** — PID 1 of the exec binds it before the command exists and
//!   hands it to berth over a unix socket berth made for that exec alone in
//!   its private state ([`berth_confine::egress_handoff`]) or, when the
//!   berth's resident forks the exec, over a socket pair whose end rides
//!   with the exec's order ([`RunnerDoor::paired`]); the namespace and the
//!   listener end with the exec.
//! - **mounted** — berth (root) enters the container's network namespace on
//!   a thread of its own ([`container_listener`]), binds there with
//!   `SO_REUSEPORT` (so `berth serve` and a one-shot `berth exec` on the same
//!   berth can both serve it; only uid 0 can join that port, never the
//!   berth's uid) and leaves; the command runs after the listener exists.
//!   A berth process that is not root cannot enter it: the berth's exec
//!   agent, already in that namespace as the berth's uid, binds the port
//!   (`SO_REUSEPORT` too) and hands the listener over on a socket berth
//!   published for it, checked as the runner's is
//!   ([`ContainerDoor::ExecAgent`]). There the berth's uid can join the
//!   port, so a process the agent left could take some of the agent's own
//!   connections: it reaches nothing through them that it could not reach
//!   itself (no route out), and no other berth's.
//!
//! **A berth process that is not root, a berth without an exec agent**
//! (`[sandbox] exec_agent = false`, no `berth-helper` in berth's tools, or a
//! state path too long for the agent's sockets): `berth up` refuses it
//! ([`no_proxy_listener`]), naming the ways out — the exec agent back, berth
//! as root, or the runner. Nothing else can make the listener: the port has
//! to be bound inside the container's namespace, by root entering it or by
//! a process already there, and handing it to berth needs a channel that
//! carries a descriptor — the agent's socket directory is the only one
//! berth mounts. A `docker exec` of `berth-helper` could bind the port, but
//! its only way back is dockerd's byte stream, so it would have to relay
//! every connection through dockerd instead of handing the listener over:
//! a second proxy in the container, in the agent's reach, with no
//! listener berth holds to know the berth by. Refused at `up`, the person
//! sees why before any command runs; an exec of such a berth (brought up
//! by a root berth, run by one that is not) still finds the port closed.
//!
//! **Who runs the proxy**: the berth process that runs the exec, for the
//! exec's duration ([`EgressPort::serve`]; the engine backs it with its
//! gate). `berth serve` runs every exec of its agents, so it serves them all;
//! a one-shot `berth exec` serves its own. No proxy daemon has to be running,
//! and none outlives the exec that needed it: a process the agent leaves in
//! a container after its exec finds the port closed (refused, never open).
//!
//! Every exec of such a berth gets `HTTP_PROXY`/`HTTPS_PROXY` (both
//! spellings) naming the port and `NO_PROXY=localhost,127.0.0.1`
//! ([`proxy_env`]).

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::SandboxError;

/// The proxy's port on a berth's loopback (Squid's, which clients and
/// people recognise as a proxy's).
pub const EGRESS_PORT: u16 = 3128;

/// How long a runner exec's PID 1 has to hand its listener over.
const HANDOFF_WAIT: Duration = Duration::from_secs(10);

/// What serves a berth's proxy listener: the engine's gate behind it.
pub trait EgressPort: Send + Sync + std::fmt::Debug {
    /// Starts serving `listener` as this berth's; it is served until the
    /// returned value is dropped. `Err` says why it cannot be served.
    fn serve(&self, listener: TcpListener) -> Result<EgressServing, String>;
}

/// A listener being served; dropping it stops serving.
pub struct EgressServing(pub Box<dyn Send + Sync>);

/// How a mounted berth's listener is made in its container.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ContainerDoor {
    /// berth enters the container's network namespace when it runs as root,
    /// else asks the exec agent.
    #[default]
    ByPrivilege,
    /// Always through the exec agent: what a berth process that is not root
    /// does (a test forces it as root).
    ExecAgent,
}

impl ContainerDoor {
    /// Whether the listener comes from the exec agent, for a berth process
    /// of `uid`.
    pub fn through_exec_agent(self, uid: u32) -> bool {
        self == ContainerDoor::ExecAgent || uid != 0
    }
}

/// Why a mounted allow-list berth brought up by this process could get no
/// proxy listener in its container (see the module docs), with what to do;
/// `None` when it can. `has_helper`: berth's tools for the container hold
/// `berth-helper` (the exec agent).
pub fn no_proxy_listener(spec: &crate::docker::ContainerSpec, has_helper: bool) -> Option<String> {
    let hook = spec.egress.as_ref()?;
    if !hook
        .container_door
        .through_exec_agent(crate::identity::current_uid())
    {
        return None;
    }
    let missing = if spec.exec_socket_root.is_none() {
        "[sandbox] exec_agent = false"
    } else if spec.exec_sockets().is_none() {
        "berth's state directory has a path too long for the exec agent's sockets"
    } else if !has_helper {
        "berth's tools have no berth-helper"
    } else {
        return None;
    };
    Some(format!(
        "[sandbox.network] mode = \"allowlist\" needs the berth's exec agent when berth does not run as root: the agent makes the proxy's listener inside the container, and without it the berth would have no way out at all ({missing}). Set [sandbox] exec_agent = true (the default), run berth as root, or use the runner (berth up --mode runner)"
    ))
}

/// An allow-list berth's proxy: what serves it, and the private directory
/// where a runner exec hands its listener over.
#[derive(Clone, Debug)]
pub struct EgressHook {
    pub port: Arc<dyn EgressPort>,
    /// berth's private directory (0700, never visible to a command) for the
    /// runner's per-exec handoff sockets.
    pub handoff_dir: PathBuf,
    /// A mounted berth: how the listener is made in its container.
    pub container_door: ContainerDoor,
}

impl PartialEq for EgressHook {
    /// Not part of what a berth is (its container's configuration, its
    /// spec's equality): any two hooks are alike.
    fn eq(&self, _other: &EgressHook) -> bool {
        true
    }
}

/// The environment that points an exec's clients at the proxy.
pub fn proxy_env() -> BTreeMap<String, String> {
    let url = format!("http://127.0.0.1:{EGRESS_PORT}");
    let mut env = BTreeMap::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        env.insert(name.to_string(), url.clone());
    }
    for name in ["NO_PROXY", "no_proxy"] {
        env.insert(name.to_string(), "localhost,127.0.0.1".to_string());
    }
    env
}

/// A runner exec's door: the handoff socket, and the task that receives
/// the listener and keeps it served. Dropping it (the exec ended) stops
/// serving and removes the socket.
pub(crate) struct RunnerDoor {
    task: tokio::task::JoinHandle<()>,
    /// The handoff socket's path; `None` for a socket pair's door.
    path: Option<PathBuf>,
}

impl Drop for RunnerDoor {
    fn drop(&mut self) {
        self.task.abort();
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }
}

static HANDOFF_COUNTER: AtomicU64 = AtomicU64::new(0);

impl RunnerDoor {
    /// Makes this exec's handoff socket in the hook's directory and starts
    /// waiting for PID 1; returns the door and the spec's part.
    pub(crate) fn open(
        hook: &EgressHook,
    ) -> Result<(RunnerDoor, berth_confine::EgressHandoff), SandboxError> {
        let name = format!(
            "egress-{}-{}.sock",
            std::process::id(),
            HANDOFF_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let listener = bind_in(&hook.handoff_dir, &name)?;
        let path = hook.handoff_dir.join(&name);
        let task = serve_received(hook, move || {
            berth_confine::egress_handoff::receive(&listener, EGRESS_PORT, HANDOFF_WAIT)
        });
        let handoff = berth_confine::EgressHandoff {
            dir: hook.handoff_dir.clone(),
            name,
            port: EGRESS_PORT,
        };
        Ok((
            RunnerDoor {
                task,
                path: Some(path),
            },
            handoff,
        ))
    }

    /// A door for an exec the berth's resident forks: a socket pair, whose
    /// other end (returned) goes with the exec's order; its PID 1 sends the
    /// listener back on it. Nothing is made on the filesystem.
    pub(crate) fn paired(hook: &EgressHook) -> Result<(RunnerDoor, OwnedFd), SandboxError> {
        let (ours, theirs) = UnixStream::pair().map_err(|source| SandboxError::Io {
            op: "make the exec's egress handoff pair",
            source,
        })?;
        let task = serve_received(hook, move || {
            berth_confine::egress_handoff::receive_listener(&ours, EGRESS_PORT, HANDOFF_WAIT)
        });
        Ok((RunnerDoor { task, path: None }, OwnedFd::from(theirs)))
    }
}

/// Waits (on the blocking pool) for the listener `receive` gets from the
/// exec, then serves it until the task is aborted (its door dropped).
fn serve_received(
    hook: &EgressHook,
    receive: impl FnOnce() -> Result<TcpListener, berth_confine::ConfineError> + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let port = Arc::clone(&hook.port);
    tokio::spawn(async move {
        let received = tokio::task::spawn_blocking(receive).await;
        let listener = match received {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "egress: no proxy listener from the exec");
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "egress: the handoff task failed");
                return;
            }
        };
        match port.serve(listener) {
            Ok(serving) => {
                // Served until the door drops (this task is aborted).
                std::future::pending::<()>().await;
                drop(serving);
            }
            Err(e) => tracing::warn!(error = %e, "egress: the exec's proxy is not served"),
        }
    })
}

/// Binds a unix socket `name` in `dir` through the directory's descriptor
/// (`/proc/self/fd/N/name`), so a long state path never meets the 108-byte
/// bound of `sun_path`.
fn bind_in(dir: &Path, name: &str) -> Result<UnixListener, SandboxError> {
    let io = |source| SandboxError::Io {
        op: "make the exec's egress handoff socket",
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let d = std::fs::File::open(dir).map_err(io)?;
    let short = format!("/proc/self/fd/{}/{name}", d.as_raw_fd());
    let _ = std::fs::remove_file(dir.join(name));
    UnixListener::bind(short).map_err(io)
}

/// A listener on `127.0.0.1:`[`EGRESS_PORT`] in the network namespace of
/// the process `pid` (a container's init), made on a thread of its own that
/// enters the namespace and ends there. Needs root (`CAP_SYS_ADMIN` for
/// `setns`). Blocking.
pub fn container_listener(pid: u32) -> Result<TcpListener, SandboxError> {
    let ns_path = format!("/proc/{pid}/ns/net");
    let ns = std::fs::File::open(&ns_path).map_err(|source| SandboxError::Io {
        op: "open the container's network namespace",
        source,
    })?;
    let made = std::thread::spawn(move || -> std::io::Result<OwnedFd> {
        // SAFETY: setns on this thread only (a network namespace may be
        // entered by one thread of many); the thread ends right after.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        berth_confine::egress_handoff::reuseport_listener(EGRESS_PORT).map(OwnedFd::from)
    })
    .join()
    .map_err(|_| SandboxError::Backend {
        op: "make the proxy's listener in the container",
        message: "the thread panicked".into(),
    })?
    .map_err(|source| SandboxError::Io {
        op: "make the proxy's listener in the container (berth must run as root)",
        source,
    })?;
    Ok(TcpListener::from(made))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_berth_that_is_not_root_asks_the_exec_agent() {
        assert!(!ContainerDoor::ByPrivilege.through_exec_agent(0));
        assert!(ContainerDoor::ByPrivilege.through_exec_agent(1000));
        assert!(ContainerDoor::ExecAgent.through_exec_agent(0));
    }
}
