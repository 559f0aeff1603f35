//! The environment that keeps repository configuration from starting
//! programs: an agent can write `.git/config` in any nested repository under
//! `/work`, and an allowed `git status` would run its `core.fsmonitor`.
//! `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` override every configuration file,
//! nested repositories' included; `GIT_CONFIG_NOSYSTEM` drops `/etc/gitconfig`.

use serde::{Deserialize, Serialize};

/// Settings forced on every git a confined command runs, with why.
pub const FORCED_GIT_CONFIG: &[(&str, &str, &str)] = &[
    ("core.fsmonitor", "false", "runs a program on every status"),
    (
        "core.hooksPath",
        "/dev/null",
        "hooks run programs on commit, checkout, merge",
    ),
    ("core.pager", "cat", "a pager is a program"),
    ("core.sshCommand", "", "ssh transport command"),
    ("diff.external", "", "external diff program"),
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
        assert_eq!(get("GIT_CONFIG_COUNT"), Some("6"));
        assert_eq!(get("GIT_CONFIG_KEY_0"), Some("core.fsmonitor"));
        assert_eq!(get("GIT_CONFIG_VALUE_0"), Some("false"));
        assert_eq!(get("GIT_CONFIG_KEY_5"), Some("credential.helper"));
        assert_eq!(get("GIT_CONFIG_NOSYSTEM"), Some("1"));
        assert_eq!(get("GIT_CONFIG_KEY_6"), None);
    }

    #[test]
    fn the_identity_follows_the_forced_keys() {
        let id = GitIdentity {
            name: "dev-1[bot]".into(),
            email: "dev-1@berth.local".into(),
        };
        let env = git_environment(Some(&id));
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("GIT_CONFIG_COUNT"), Some("8"));
        assert_eq!(get("GIT_CONFIG_KEY_6"), Some("user.name"));
        assert_eq!(get("GIT_CONFIG_VALUE_6"), Some("dev-1[bot]"));
        assert_eq!(get("GIT_CONFIG_KEY_7"), Some("user.email"));
        assert_eq!(get("GIT_CONFIG_VALUE_7"), Some("dev-1@berth.local"));
    }
}
