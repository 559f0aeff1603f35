//! Landlock inside the namespaces, as a second wall: should a mount slip, the
//! command still writes only the worktree, the writable directories and the
//! private tmp, and reads only those, the system directories and the readable
//! ones. Scopes (ABI 6) keep it from connecting to abstract unix sockets and
//! from signalling processes outside its domain (the shim, berth).

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope, path_beneath_rules,
};

use crate::ConfineError;

/// The newest ABI whose rights this module asks for; older kernels enforce
/// what they know (best effort), and the shim says so.
const ABI_WANTED: ABI = ABI::V7;

/// The paths (in the new root) a command may read and write, and only read.
#[derive(Debug, Default, Clone)]
pub struct Paths {
    pub write: Vec<PathBuf>,
    pub read: Vec<PathBuf>,
}

/// How much of the ruleset the kernel enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enforcement {
    Full,
    Partial,
    None,
}

/// Restricts the calling process (sets `PR_SET_NO_NEW_PRIVS` too). A path
/// that does not exist gets no rule: `path_beneath_rules` skips what it
/// cannot open (so no path is `stat`ed first).
pub fn restrict(paths: &Paths) -> Result<Enforcement, ConfineError> {
    let fail = |e: landlock::RulesetError| ConfineError::Landlock(e.to_string());
    let all = AccessFs::from_all(ABI_WANTED);
    let read = AccessFs::from_read(ABI_WANTED);
    let status = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .map_err(fail)?
        .scope(Scope::AbstractUnixSocket | Scope::Signal)
        .map_err(fail)?
        .create()
        .map_err(fail)?
        .add_rules(path_beneath_rules(&paths.read, read))
        .map_err(fail)?
        .add_rules(path_beneath_rules(&paths.write, all))
        .map_err(fail)?
        // Listing directories (not reading files) anywhere in the new root:
        // it holds only what the mount tree let in.
        .add_rules(path_beneath_rules(["/"], AccessFs::ReadDir))
        .map_err(fail)?
        .restrict_self()
        .map_err(fail)?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    })
}
