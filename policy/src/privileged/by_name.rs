//! The privileged limit's tables indexed by program name, built once.
//!
//! Every invocation of every segment is checked, and almost none is a
//! program the limit knows: scanning each table (the verb table alone has
//! some 300 rows) per invocation was a tenth of a decision. One hash
//! lookup says which tables name the program; the tables stay the source.

use std::sync::LazyLock;

use rustc_hash::FxHashMap;

use super::tables::{
    CLOUD_CLIS, HTTP_CLIENTS, MACHINE, PRIVILEGE, RAW_NETWORK, READ_BY_NAME, REMOTE_SHELL, TUNNEL,
    VERBS,
};

/// A class a program belongs to by its name alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fixed {
    /// Runs a command with another user's privilege.
    Privilege,
    /// Changes the machine's power state.
    Machine,
    /// Opens a raw network connection.
    RawNetwork,
    /// Runs commands on another machine.
    RemoteShell,
    /// Exposes this machine to another network.
    Tunnel,
}

/// What the tables say of one program name.
#[derive(Debug, Default)]
pub(super) struct Known {
    /// The first of `PRIVILEGE`, `MACHINE`, `RAW_NETWORK`, `REMOTE_SHELL`,
    /// `TUNNEL` that names it.
    pub fixed: Option<Fixed>,
    /// Its verb sequences in `VERBS`, in the table's order.
    pub verbs: Vec<&'static [&'static str]>,
    /// In `CLOUD_CLIS`.
    pub cloud: bool,
    /// In `HTTP_CLIENTS`.
    pub http: bool,
    /// In `machine::ADMIN`: read by [`super::machine::administers`].
    pub admin: bool,
}

static BY_NAME: LazyLock<FxHashMap<&'static str, Known>> = LazyLock::new(|| {
    let mut map: FxHashMap<&'static str, Known> = FxHashMap::default();
    for (names, fixed) in [
        (PRIVILEGE, Fixed::Privilege),
        (MACHINE, Fixed::Machine),
        (RAW_NETWORK, Fixed::RawNetwork),
        (REMOTE_SHELL, Fixed::RemoteShell),
        (TUNNEL, Fixed::Tunnel),
    ] {
        for name in names {
            map.entry(name).or_default().fixed.get_or_insert(fixed);
        }
    }
    for (tool, verbs) in VERBS {
        map.entry(tool).or_default().verbs.push(verbs);
    }
    for name in CLOUD_CLIS {
        map.entry(name).or_default().cloud = true;
    }
    for name in HTTP_CLIENTS {
        map.entry(name).or_default().http = true;
    }
    for name in super::machine::ADMIN {
        map.entry(name).or_default().admin = true;
    }
    for name in READ_BY_NAME {
        map.entry(name).or_default();
    }
    map
});

/// What the tables say of `name`; `None` when no table names it (the limit
/// has nothing more to read of the invocation).
pub(super) fn known(name: &str) -> Option<&'static Known> {
    BY_NAME.get(name)
}
