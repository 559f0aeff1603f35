//! The environment that keeps repository configuration from starting
//! programs: an agent can write `.git/config` in any nested repository under
//! `/work`, and an allowed `git status` would run its `core.fsmonitor`.
//! `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n` override every configuration file,
//! nested repositories' included; `GIT_CONFIG_NOSYSTEM` drops `/etc/gitconfig`.

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

/// The variables to add to a command's environment (after the request's own,
/// so they win).
pub fn git_environment() -> Vec<(String, String)> {
    let mut env = vec![
        ("GIT_CONFIG_NOSYSTEM".to_string(), "1".to_string()),
        (
            "GIT_CONFIG_COUNT".to_string(),
            FORCED_GIT_CONFIG.len().to_string(),
        ),
    ];
    for (i, (key, value, _)) in FORCED_GIT_CONFIG.iter().enumerate() {
        env.push((format!("GIT_CONFIG_KEY_{i}"), (*key).to_string()));
        env.push((format!("GIT_CONFIG_VALUE_{i}"), (*value).to_string()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_forced_key_is_numbered() {
        let env = git_environment();
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("GIT_CONFIG_COUNT"), Some("6"));
        assert_eq!(get("GIT_CONFIG_KEY_0"), Some("core.fsmonitor"));
        assert_eq!(get("GIT_CONFIG_VALUE_0"), Some("false"));
        assert_eq!(get("GIT_CONFIG_KEY_5"), Some("credential.helper"));
        assert_eq!(get("GIT_CONFIG_NOSYSTEM"), Some("1"));
    }
}
