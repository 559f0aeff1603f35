//! The environment that keeps repository configuration from starting
//! programs: an agent can write `.git/config` in any nested repository under
//! `/work`, and an allowed `git status` would run its `core.fsmonitor`.
//! `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` override every configuration file,
//! nested repositories' included; `GIT_CONFIG_NOSYSTEM` drops `/etc/gitconfig`.

use serde::{Deserialize, Serialize};

/// Settings forced on every git a confined command runs, with why.
///
/// Not here: `diff.external`. No value of it means "none" (an empty one makes
/// every `git diff` fail with "cannot run"), and only `--no-ext-diff` turns
/// it off. A repository's external diff therefore runs when the agent asks
/// for a diff — as the agent, inside the exec's confinement, never as berth
/// (berth's own git work runs no external program).
pub const FORCED_GIT_CONFIG: &[(&str, &str, &str)] = &[
    ("core.fsmonitor", "false", "runs a program on every status"),
    (
        "core.hooksPath",
        "/dev/null",
        "hooks run programs on commit, checkout, merge",
    ),
    ("core.pager", "cat", "a pager is a program"),
    // Plain `ssh` from PATH: an empty value makes git try to run "" for
    // every ssh remote.
    ("core.sshCommand", "ssh", "ssh transport command"),
    (
        "credential.helper",
        "",
        "credential helpers are programs and hold secrets",
    ),
];

/// Who the agent's own `git commit` is by: the identity berth's commits for
/// the agent use (`dev-1[bot] <dev-1@berth.local>`). Given as configuration
/// in the environment, so berth writes nothing into the agent's repository
/// config, and a plain `git commit` at `/work` works.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitIdentity {
    pub name: String,
    pub email: String,
}

/// The variables to add to a command's environment (after the request's own,
/// so they win): the forced settings, and `user.name`/`user.email` when an
/// identity is given.
pub fn git_environment(identity: Option<&GitIdentity>) -> Vec<(String, String)> {
    let mut settings: Vec<(&str, &str)> = FORCED_GIT_CONFIG
        .iter()
        .map(|(key, value, _)| (*key, *value))
        .collect();
    if let Some(id) = identity {
        settings.push(("user.name", &id.name));
        settings.push(("user.email", &id.email));
    }
    let mut env = vec![
        ("GIT_CONFIG_NOSYSTEM".to_string(), "1".to_string()),
        ("GIT_CONFIG_COUNT".to_string(), settings.len().to_string()),
    ];
    for (i, (key, value)) in settings.into_iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), key.to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), value.to_string()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_forced_key_is_numbered() {
        let env = git_environment(None);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("GIT_CONFIG_COUNT"), Some("5"));
        assert_eq!(get("GIT_CONFIG_KEY_0"), Some("core.fsmonitor"));
        assert_eq!(get("GIT_CONFIG_VALUE_0"), Some("false"));
        assert_eq!(get("GIT_CONFIG_KEY_4"), Some("credential.helper"));
        assert_eq!(get("GIT_CONFIG_NOSYSTEM"), Some("1"));
        assert_eq!(get("GIT_CONFIG_KEY_5"), None);
    }

    #[test]
    fn the_identity_follows_the_forced_keys() {
        let id = GitIdentity {
            name: "dev-1[bot]".into(),
            email: "dev-1@berth.local".into(),
        };
        let env = git_environment(Some(&id));
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("GIT_CONFIG_COUNT"), Some("7"));
        assert_eq!(get("GIT_CONFIG_KEY_5"), Some("user.name"));
        assert_eq!(get("GIT_CONFIG_VALUE_5"), Some("dev-1[bot]"));
        assert_eq!(get("GIT_CONFIG_KEY_6"), Some("user.email"));
        assert_eq!(get("GIT_CONFIG_VALUE_6"), Some("dev-1@berth.local"));
    }

    /// The forced settings leave everyday git working (a real git, a real
    /// repository): `diff` prints its patch, `log` runs without a pager,
    /// `commit` takes the identity — while the repository's own
    /// `core.fsmonitor` and hooks start nothing.
    #[test]
    fn everyday_git_works_under_the_forced_settings() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("ran");
        let repo = dir.path().join("r");
        let id = GitIdentity {
            name: "dev-1[bot]".into(),
            email: "dev-1@berth.local".into(),
        };
        let git = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(&repo)
                .env_remove("GIT_DIR")
                .env("HOME", dir.path())
                .envs(git_environment(Some(&id)))
                .output()
                .unwrap();
            (
                out.status.success(),
                String::from_utf8_lossy(&out.stdout).into_owned()
                    + &String::from_utf8_lossy(&out.stderr),
            )
        };
        std::fs::create_dir(&repo).unwrap();
        assert!(git(&["init", "-q"]).0);
        let touch = format!("touch {}; false", marker.display());
        assert!(git(&["config", "core.fsmonitor", &touch]).0);
        std::fs::create_dir_all(repo.join(".git/hooks")).unwrap();
        let hook = repo.join(".git/hooks/pre-commit");
        std::fs::write(&hook, format!("#!/bin/sh\n{touch}\n")).unwrap();
        std::fs::set_permissions(
            &hook,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .unwrap();
        std::fs::write(repo.join("f"), "a\n").unwrap();
        assert!(git(&["add", "f"]).0);
        let (ok, out) = git(&["commit", "-q", "-m", "one"]);
        assert!(ok, "{out}");
        std::fs::write(repo.join("f"), "b\n").unwrap();
        let (ok, out) = git(&["diff"]);
        assert!(ok && out.contains("-a\n+b"), "git diff: {out}");
        let (ok, out) = git(&["log", "--format=%an"]);
        assert!(ok && out.trim() == "dev-1[bot]", "git log: {out}");
        assert!(git(&["status", "--porcelain"]).0);
        assert!(!marker.exists(), "a repository program ran");
    }
}
