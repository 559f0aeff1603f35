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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use berth_policy::{Action, Autonomy, Decision, Frame, RuleSet, Stage, Verdict};

    use crate::config::ProjectConfig;

    fn decide(config: &ProjectConfig, action: Action) -> Decision {
        let rules = RuleSet::default();
        let frame = Frame::container("/work");
        let autonomy = Autonomy::auto();
        let ctx = config.policy_context(&rules, &frame, "/work", &autonomy);
        berth_policy::decide(&action, &ctx)
    }

    fn terminal(command: &str) -> Action {
        Action::Terminal {
            command: command.into(),
        }
    }

    #[test]
    fn the_policy_patterns_compiled_at_parse_are_what_decides() {
        let config = ProjectConfig::parse(
            "[policy]\nprivileged = [\"make release\"]\ndeny = [\"shred -u\"]\n",
            "berth.toml",
        )
        .unwrap();
        assert_eq!(config.limits().privileged.len(), 1);
        assert_eq!(config.limits().deny.len(), 1);
        let held = decide(&config, terminal("make release"));
        assert_eq!(
            (held.verdict, held.stage),
            (Verdict::RequireApproval, Stage::Privileged)
        );
        let denied = decide(&config, terminal("shred -u notes.txt"));
        assert_eq!(denied.verdict, Verdict::Deny, "{}", denied.reason);
        // No project (`berth decide`, the hook without one): no extra limits.
        let none = ProjectConfig::default();
        assert_eq!(
            decide(&none, terminal("make release")).verdict,
            Verdict::AutoApprove
        );
        assert_eq!(
            decide(&none, terminal("shred -u notes.txt")).verdict,
            Verdict::AutoApprove
        );
    }

    #[test]
    fn the_protected_branches_are_the_projects_or_main_and_master() {
        let merge = |target: &str| Action::GitMerge {
            target: target.into(),
        };
        let none = ProjectConfig::default();
        assert_eq!(decide(&none, merge("main")).stage, Stage::NeverAuto);
        assert_eq!(decide(&none, merge("master")).stage, Stage::NeverAuto);
        let config =
            ProjectConfig::parse("[git]\nprotected_branches = [\"release\"]\n", "berth.toml")
                .unwrap();
        assert_eq!(decide(&config, merge("release")).stage, Stage::NeverAuto);
        assert_ne!(decide(&config, merge("main")).stage, Stage::NeverAuto);
    }

    #[test]
    fn a_bad_policy_pattern_names_its_key_and_line() {
        for (text, want) in [
            (
                "[policy]\nprivileged = [\"\"]\n",
                "berth.toml:2:1: key `policy.privileged`: ``: ",
            ),
            (
                "[policy]\nprivileged = []\ndeny = [\"ok\", \"\"]\n",
                "berth.toml:3:1: key `policy.deny`: ``: ",
            ),
        ] {
            let err = ProjectConfig::parse(text, "berth.toml")
                .unwrap_err()
                .to_string();
            assert!(err.starts_with(want), "{text:?}: {err}");
        }
    }
}
