//! An exec's token: which berth process owns it (boot, pid and start time)
//! and, for one that runs an action, which action, so another process can
//! find it (`berth cancel`) or judge its owner dead (reconcile).

use super::*;

/// `bx.<boot>.<pid>.<start>.` — this process, unique across restarts and
/// pid reuse: the boot id, the pid and its start time.
pub(crate) fn owner_token() -> &'static str {
    static OWNER: OnceLock<String> = OnceLock::new();
    OWNER.get_or_init(|| {
        let boot = boot_id();
        let pid = std::process::id();
        let start = process_start(pid).unwrap_or(0);
        format!("bx.{boot}.{pid}.{start}.")
    })
}

/// `<owner><seq>.`, and `a<action>.` after it when the exec runs an action
/// (found by it: [`super::cancel`]).
pub(crate) fn next_token(action: Option<&str>) -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    match action {
        Some(action) => format!("{}{seq}.a{action}.", owner_token()),
        None => format!("{}{seq}.", owner_token()),
    }
}

pub(super) fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().replace('-', "").chars().take(12).collect())
        .unwrap_or_else(|_| "noboot".to_string())
}

/// The owner of an exec, parsed from its token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExecOwner {
    /// The token prefix naming the owner (ends with `.`).
    pub prefix: String,
    pub(super) boot: String,
    pub(super) pid: u32,
    pub(super) start: u64,
}

impl ExecOwner {
    /// From an exec's arguments (`-c WRAPPER berth-exec <token> …`).
    pub(crate) fn from_arguments(args: &[String]) -> Option<ExecOwner> {
        let i = args.iter().position(|a| a == "berth-exec")?;
        let token = args.get(i + 1)?;
        let mut parts = token.strip_prefix("bx.")?.split('.');
        let boot = parts.next()?.to_string();
        let pid = parts.next()?.parse().ok()?;
        let start = parts.next()?.parse().ok()?;
        Some(ExecOwner {
            prefix: format!("bx.{boot}.{pid}.{start}."),
            boot,
            pid,
            start,
        })
    }

    /// True when the owner is known dead: same boot, and its pid is gone or
    /// now belongs to a process started at another time. An owner from another
    /// boot (or another host) cannot be judged and counts as alive.
    pub(crate) fn is_dead(&self) -> bool {
        if self.boot != boot_id() {
            return false;
        }
        process_start(self.pid) != Some(self.start)
    }
}
