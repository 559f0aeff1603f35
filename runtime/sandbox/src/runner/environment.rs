//! The environment a runner command starts with: cleared, then an
//! allow-list of berth's own variables, `PATH` (the configured one, with
//! the declared programs' directories after it), `HOME`, `TERM=dumb` and
//! the configured variables. Derived once per runner ([`base_env`]); the
//! request's own and the git settings go on top per exec (`super::run`).

use std::collections::BTreeMap;

use super::{DEFAULT_PATH, RunnerConfig};

/// Environment names passed from berth's environment when set. A trailing `*`
/// matches a prefix.
const INHERITED_ENV: &[&str] = &["LANG", "LANGUAGE", "LC_*", "TZ", "USER", "LOGNAME"];

/// The environment a command starts with, before the request's own: `PATH`,
/// `HOME` (the berth's, `home`), `TERM`, the inherited variables of berth's
/// own environment and the configured ones.
pub(super) fn base_env(config: &RunnerConfig, home: &str) -> BTreeMap<String, String> {
    let own: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
        .collect();
    base_env_from(
        config,
        home,
        own.iter().map(|(n, v)| (n.as_str(), v.as_str())),
    )
}

/// [`base_env`] had berth been started with `vars` as its environment: what
/// a server runs a command handed to it by another berth process with
/// (`Sandbox::environment_from`).
pub(super) fn base_env_from<'a>(
    config: &RunnerConfig,
    home: &str,
    vars: impl Iterator<Item = (&'a str, &'a str)> + Clone,
) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    let path = config
        .path
        .clone()
        .or_else(|| {
            vars.clone()
                .find(|(name, _)| *name == "PATH")
                .map(|(_, value)| value.to_string())
        })
        .unwrap_or_else(|| DEFAULT_PATH.to_string());
    env.insert("PATH".to_string(), append_path(path, &config.path_append));
    env.insert("HOME".to_string(), home.to_string());
    env.insert("TERM".to_string(), "dumb".to_string());
    let allowed = |name: &str| {
        INHERITED_ENV
            .iter()
            .copied()
            .chain(config.inherit_env.iter().map(String::as_str))
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == pattern,
            })
    };
    for (name, value) in vars {
        if allowed(name) {
            env.insert(name.to_string(), value.to_string());
        }
    }
    env.extend(config.env.clone());
    env
}

/// `path` with `dirs` after it, each once.
pub fn append_path(path: String, dirs: &[String]) -> String {
    let mut path = path;
    for dir in dirs {
        if !path.split(':').any(|p| p == dir) {
            if !path.is_empty() {
                path.push(':');
            }
            path.push_str(dir);
        }
    }
    path
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_programs_come_after_the_path_once() {
        let dirs = ["/opt/a/bin".to_string(), "/usr/bin".to_string()];
        assert_eq!(
            append_path("/usr/bin:/bin".into(), &dirs),
            "/usr/bin:/bin:/opt/a/bin"
        );
        assert_eq!(append_path(String::new(), &dirs[..1]), "/opt/a/bin");
    }

    fn config(inherit: &[&str]) -> RunnerConfig {
        RunnerConfig {
            inherit_env: inherit.iter().map(|s| (*s).to_string()).collect(),
            ..RunnerConfig::new("/w", "/h")
        }
    }

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(n, v)| ((*n).to_string(), (*v).to_string()))
            .collect()
    }

    fn env_of(config: &RunnerConfig, pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        let v = vars(pairs);
        base_env_from(
            config,
            "/h",
            v.iter().map(|(n, v)| (n.as_str(), v.as_str())),
        )
    }

    #[test]
    fn only_inherited_names_and_path_are_taken_from_the_environment() {
        let c = config(&["CARGO_*"]);
        let env = env_of(
            &c,
            &[
                ("PATH", "/p"),
                ("LANG", "C.UTF-8"),
                ("LC_ALL", "C"),
                ("CARGO_HOME", "/c"),
                ("AWS_SECRET_ACCESS_KEY", "s"),
                ("HOME", "/root"),
            ],
        );
        assert_eq!(env.get("PATH").map(String::as_str), Some("/p"));
        assert_eq!(env.get("HOME").map(String::as_str), Some("/h"));
        assert_eq!(env.get("LC_ALL").map(String::as_str), Some("C"));
        assert_eq!(env.get("CARGO_HOME").map(String::as_str), Some("/c"));
        assert!(!env.contains_key("AWS_SECRET_ACCESS_KEY"));
        // Without PATH in the environment, the default.
        assert_eq!(
            env_of(&c, &[]).get("PATH").map(String::as_str),
            Some(DEFAULT_PATH)
        );
    }

    #[test]
    fn environments_that_differ_only_outside_the_selection_give_the_same_commands_environment() {
        let c = config(&[]);
        let a = env_of(&c, &[("PATH", "/p"), ("SECRET", "1"), ("TZ", "UTC")]);
        let b = env_of(&c, &[("PATH", "/p"), ("SECRET", "2"), ("TZ", "UTC")]);
        assert_eq!(a, b);
        assert_ne!(a, env_of(&c, &[("PATH", "/q"), ("TZ", "UTC")]));
        // A configured PATH wins over the environment's.
        let fixed = RunnerConfig {
            path: Some("/fixed".into()),
            ..config(&[])
        };
        assert_eq!(
            env_of(&fixed, &[("PATH", "/q")])
                .get("PATH")
                .map(String::as_str),
            Some("/fixed")
        );
    }
}
