//! Auto mode on a runner berth: what it lifts on this machine, what the
//! runner's confinement still holds, and the refusal when that confinement
//! is not available.
//!
//! In a container, the path scope that auto mode lifts is the container's
//! own filesystem; on a runner berth it is the host's. So turning auto mode
//! on for a runner berth says so, in every interface (the CLI, the API's
//! autonomy report, the page), and where the runner cannot confine its
//! commands (no namespaces, Landlock or seccomp on this machine, or a build
//! without them) auto mode is refused unless the project's `berth.toml`
//! accepts it with `[sandbox] allow_unconfined = true`.

use std::path::Path;

/// The berth exec cgroup a process's `/proc/<pid>/cgroup` text names, if
/// any: `berth serve` refuses peers that are commands berth confines.
pub use berth_sandbox::runner::exec_cgroup_in;

use crate::Engine;
use crate::agents::Agent;
use crate::config::{BerthMode, ProjectConfig};
use crate::error::{EngineError, Result};

/// What the runner's confinement lacks on this machine, for a person;
/// `None` when every part of it is in place.
///
/// Each runner exec is confined by `berth-exec-shim` (namespaces, the
/// worktree at `/work`, Landlock, seccomp, cgroups; see
/// [`berth_sandbox::runner::CONFINEMENT`]). Its parts are checked here as
/// far as they can be without starting it: the shim itself, Landlock in the
/// kernel's security modules, and — when berth is not root — user
/// namespaces for an unprivileged user. A part found missing here also
/// stops every exec (status 125 with the reason), so auto mode is refused
/// rather than promised.
pub fn runner_confinement_note() -> Option<String> {
    let mut missing = Vec::new();
    if let Err(why) = berth_sandbox::runner::locate_shim() {
        missing.push(why);
    }
    match std::fs::read_to_string("/sys/kernel/security/lsm") {
        Ok(lsm) if lsm.split(',').any(|m| m.trim() == "landlock") => {}
        Ok(_) => missing.push(
            "Landlock is not among the kernel's security modules (boot with lsm=…,landlock)"
                .to_string(),
        ),
        // securityfs not mounted: the shim finds out at its first exec.
        Err(_) => {}
    }
    if berth_sandbox::identity::current_uid() != 0 {
        let disabled = |path: &str| {
            std::fs::read_to_string(path)
                .map(|v| v.trim() == "0")
                .unwrap_or(false)
        };
        if disabled("/proc/sys/kernel/unprivileged_userns_clone")
            || disabled("/proc/sys/user/max_user_namespaces")
        {
            missing.push(
                "unprivileged user namespaces are disabled on this machine (kernel.unprivileged_userns_clone / user.max_user_namespaces)"
                    .to_string(),
            );
        }
    }
    if missing.is_empty() {
        None
    } else {
        Some(missing.join("; "))
    }
}

/// Said plainly wherever a runner berth is shown: what confines its
/// commands here, as whom they run, and what is missing on this machine.
pub fn runner_note() -> String {
    let identity = if berth_sandbox::identity::current_uid() == 0 {
        "as the berth's own uid"
    } else {
        "as your user, mapped in a user namespace"
    };
    let mut note = format!(
        "runner mode (Linux only): commands run on this host {identity}, each in namespaces of its \
         own (/work is the worktree, a private /tmp, system directories read-only, only loopback) \
         under Landlock and seccomp; there is no container boundary: they share this host's \
         kernel (mounted mode adds one)"
    );
    if let Some(missing) = runner_confinement_note() {
        note.push_str(&format!(
            "; not available here: {missing} — commands do not run until it is"
        ));
    }
    note
}

/// What still holds on a runner berth in auto mode, given what the
/// runner's confinement lacks (`missing`).
pub fn runner_auto_mode_note(missing: Option<&str>) -> String {
    let lifted = "Auto mode on a runner berth lifts the path scope on this machine: commands run on \
                  the host, not in a container, and may name and write paths outside the project \
                  without asking.";
    match missing {
        None => format!(
            "{lifted} What still holds: the runner's confinement (its own namespaces showing only \
             the worktree at /work, the agent repository, a private /tmp and declared directories; \
             Landlock writes only there; seccomp; no network unless the project opens it; the \
             process, file-size, CPU and memory limits), and the policy's deny rules, always-ask \
             patterns and never-auto action types."
        ),
        Some(missing) => format!(
            "{lifted} The runner's confinement is not available here ({missing}): only the \
             policy's deny rules, always-ask patterns and never-auto action types still hold \
             (accepted by `[sandbox] allow_unconfined = true`)."
        ),
    }
}

/// Whether auto mode may be on for `agent` whose berth runs (or would run)
/// in `mode`: the note to show when it may, the refusal when the runner's
/// confinement lacks something (`missing`) and `allow_unconfined` is off.
pub fn check_auto_mode(
    agent: &str,
    mode: BerthMode,
    missing: Option<&str>,
    allow_unconfined: bool,
    config: &Path,
) -> Result<Option<String>> {
    if mode != BerthMode::Runner {
        return Ok(None);
    }
    match missing {
        Some(missing) if !allow_unconfined => Err(EngineError::Unconfined {
            agent: agent.to_string(),
            missing: missing.to_string(),
            config: config.to_path_buf(),
        }),
        _ => Ok(Some(runner_auto_mode_note(missing))),
    }
}

impl Engine {
    /// Before auto mode goes on for `agent`: refuses it on an unconfined
    /// runner berth (unless the project accepts it), and otherwise returns
    /// what a runner berth must be told. A berth that is not up is judged by
    /// the mode `berth up` would pick (`sandbox.mode = "auto"` asks the
    /// provider, as `up` does).
    pub(crate) async fn gate_auto_mode(&self, a: &Agent) -> Result<Option<String>> {
        let (config, _) = self.load_project_files(&a.project)?;
        let mode = match a.berth.or(config.sandbox.mode.fixed()) {
            Some(m) => m,
            None => self.provider.auto_mode().await?.0,
        };
        self.check_runner_auto_mode(a, mode, &config)
    }

    /// [`check_auto_mode`] for `agent`'s project, with this runner's
    /// confinement.
    pub(crate) fn check_runner_auto_mode(
        &self,
        a: &Agent,
        mode: BerthMode,
        config: &ProjectConfig,
    ) -> Result<Option<String>> {
        check_auto_mode(
            &a.name,
            mode,
            runner_confinement_note().as_deref(),
            config.sandbox.allow_unconfined,
            &self.state.project_config(&a.project),
        )
    }

    /// What the autonomy report says about the host: the note of a runner
    /// berth (up, or the configured mode; with `sandbox.mode = "auto"` and
    /// no berth up, the runner is the fallback, so it is said too).
    pub(crate) fn runner_host_note(&self, a: &Agent, config: &ProjectConfig) -> Option<String> {
        match a.berth.or(config.sandbox.mode.fixed()) {
            Some(BerthMode::Mounted) => None,
            Some(BerthMode::Runner) | None => {
                Some(runner_auto_mode_note(runner_confinement_note().as_deref()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn auto_mode_is_refused_only_on_an_unconfined_runner_not_accepted() {
        let cfg = Path::new("/s/projects/demo/berth.toml");
        // A container: nothing to say.
        assert_eq!(
            check_auto_mode("a", BerthMode::Mounted, Some("x"), false, cfg).unwrap(),
            None
        );
        // A confined runner: allowed, and says what still holds.
        let confined = check_auto_mode("a", BerthMode::Runner, None, false, cfg)
            .unwrap()
            .unwrap();
        assert!(
            confined.contains("lifts the path scope on this machine")
                && confined.contains("Landlock"),
            "{confined}"
        );
        // An unconfined runner: refused, naming the key and the file.
        let refused = check_auto_mode("a", BerthMode::Runner, Some("no seccomp"), false, cfg)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("no seccomp")
                && refused.contains("allow_unconfined = true")
                && refused.contains("/s/projects/demo/berth.toml"),
            "{refused}"
        );
        // Accepted: allowed, and says only the policy holds.
        let accepted = check_auto_mode("a", BerthMode::Runner, Some("no seccomp"), true, cfg)
            .unwrap()
            .unwrap();
        assert!(
            accepted.contains("not available here (no seccomp)")
                && accepted.contains("only the policy"),
            "{accepted}"
        );
    }
}
