//! The one place a decision's [`Context`] is assembled from a project, so a
//! decision means the same whoever asks: the engine's proposals, the Claude
//! Code hook and `berth decide` all build it here.
//!
//! What the project fixes — its rules, its protected branches and its
//! `[policy]` limits (compiled once, when `berth.toml` was parsed) — is read
//! from the loaded files; what each caller knows — the frame, the working
//! directory, the agent's autonomy — is passed in. Nothing is read or
//! compiled here: the context only borrows, and `decide` only reads it.

use berth_policy::{Autonomy, Context, Frame, RuleSet};

use crate::config::ProjectConfig;

impl ProjectConfig {
    /// The context of one decision in this project, under `rules` (the
    /// project's `permissions.json`, and whatever else the caller adds to
    /// it), in `frame` at `cwd`, for an agent with `autonomy`. A caller
    /// without a project passes [`ProjectConfig::default`]: the built-in
    /// protected branches and no extra limits.
    pub fn policy_context<'a>(
        &'a self,
        rules: &'a RuleSet,
        frame: &'a Frame,
        cwd: &'a str,
        autonomy: &'a Autonomy,
    ) -> Context<'a> {
        Context {
            frame,
            cwd,
            autonomy,
            rules,
            protected_branches: &self.git.protected_branches,
            limits: self.limits(),
        }
    }
}
