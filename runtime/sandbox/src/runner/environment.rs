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
    let mut env = BTreeMap::new();
    let path = config
        .path
        .clone()
        .or_else(|| std::env::var("PATH").ok())
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
    for (name, value) in std::env::vars_os() {
        if let (Some(name), Some(value)) = (name.to_str(), value.to_str())
            && allowed(name)
        {
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
}
