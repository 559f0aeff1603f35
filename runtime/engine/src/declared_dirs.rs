//! `[sandbox] toolchains` and `caches`: the directories a project shows to
//! its berths' commands at their own paths (read-only and read-write), what
//! each one adds to a command's environment, and whether a berth's uid can
//! reach them.
//!
//! **Form.** An entry is a path (`"/opt/rust"`) or a table that also names
//! the variables the tool needs and the directory of its programs:
//! `{ path = "/root/.rustup", env = { RUSTUP_HOME = "{path}" }, path_bin =
//! "bin" }` (or `[[sandbox.toolchains]]`). `{path}` in a value is the
//! entry's path; `path_bin` is appended to `PATH` in both modes. A variable
//! the policy reads as changing what runs (`berth_policy::env`) may only
//! point into declared directories — else any project file could make an
//! allowed `cargo test` run a program from anywhere — and `PATH`, `HOME`
//! and berth's forced git settings cannot be set here at all; a refusal
//! names the file and the line.
//!
//! **Reach.** When berth runs as root, its commands run as the berth's own
//! uid, and a declared directory that is itself closed to it (a 0700
//! `/root/.pyenv`), or that lies below a closed directory inside another
//! shown directory (a 0700 directory in `/opt`, a system directory the
//! runner shows as it is), is shown but cannot be entered. `berth up` names
//! each such directory and the directory that blocks it, from mode bits
//! alone (berth's own process never switches uid to ask the kernel). The
//! ancestors of a directory shown at its own path are otherwise made fresh
//! (0755) in the runner's root and by Docker, so a closed `/root` alone does
//! not block `/root/.cargo`.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::error::{EngineError, Result};

/// What every command of a berth gets from its declared directories: the
/// variables, and the directories appended to `PATH` (in declaration order,
/// toolchains first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeclaredEnv {
    pub vars: BTreeMap<String, String>,
    pub path_append: Vec<String>,
}

/// The environment `[sandbox] toolchains` and `caches` declare.
pub fn declared_env(sandbox: &crate::config::sandbox::SandboxConfig) -> DeclaredEnv {
    let mut env = DeclaredEnv::default();
    for dir in sandbox.toolchains.iter().chain(&sandbox.caches) {
        env.vars.extend(dir.resolved_env());
        env.path_append.extend(dir.bin_dir());
    }
    env
}

/// Names a declared directory cannot set: berth sets them itself.
pub(crate) fn reserved(name: &str) -> Option<&'static str> {
    if name == "PATH" {
        Some("berth sets PATH: write `path_bin = \"bin\"` to append the entry's programs")
    } else if name == "HOME" {
        Some("berth sets HOME to the berth's own home")
    } else if name.starts_with("GIT_CONFIG") {
        Some(
            "berth sets the GIT_CONFIG_* variables that keep repository configuration from starting programs",
        )
    } else {
        None
    }
}

pub(crate) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why `path` is no directory to declare, or `None`.
pub(crate) fn bad_path(path: &Path) -> Option<&'static str> {
    if !path.is_absolute() {
        Some("must be absolute (write the full path, e.g. \"/opt/rust\")")
    } else if path
        .components()
        .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        Some("must not contain `..` (write the directory's own path)")
    } else if path.starts_with("/work") || path == Path::new("/") {
        Some("must not be `/` or lie under /work, where the worktree is shown")
    } else {
        None
    }
}

/// The first line (1-based) of `text` where `needle` appears, else the
/// line of `key` in `[sandbox]`, else 1.
fn line_of(text: &str, needle: &str, key: &str) -> usize {
    text.lines()
        .position(|l| !is_comment(l) && l.contains(needle))
        .map(|i| i + 1)
        .or_else(|| crate::config::key_line::find_key_line(text, "sandbox", key))
        .unwrap_or(1)
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

/// The first line where `name` is a key (`NAME =`), else the entry's line.
fn line_of_var(text: &str, name: &str, dir: &str, key: &str) -> usize {
    text.lines()
        .position(|l| {
            !is_comment(l)
                && l.match_indices(name).any(|(at, _)| {
                    let before = l[..at].chars().next_back();
                    let after = l[at + name.len()..].trim_start();
                    before.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
                        && after.starts_with('=')
                })
        })
        .map(|i| i + 1)
        .unwrap_or_else(|| line_of(text, &format!("{dir:?}"), key))
}

/// Checks `[sandbox] toolchains` and `caches`: each path absolute, without
/// `..`, never `/` nor under `/work`; `path_bin` a plain relative
/// directory; each variable a name berth does not set itself, and — when the
/// policy reads it as changing what runs — pointing only into declared
/// directories. Errors name `file` and the line.
pub(crate) fn check(
    sandbox: &crate::config::sandbox::SandboxConfig,
    text: &str,
    file: &str,
) -> Result<()> {
    let declared: Vec<&Path> = sandbox
        .toolchains
        .iter()
        .chain(&sandbox.caches)
        .map(|d| Path::new(&d.path))
        .collect();
    let fail = |line: usize, message: String| EngineError::Config {
        file: file.to_string(),
        line,
        column: 1,
        message,
    };
    for (key, list) in [
        ("toolchains", &sandbox.toolchains),
        ("caches", &sandbox.caches),
    ] {
        for dir in list {
            let at = || line_of(text, &format!("{:?}", dir.path), key);
            if let Some(why) = bad_path(Path::new(&dir.path)) {
                return Err(fail(
                    at(),
                    format!("key `sandbox.{key}`: {:?} {why}", dir.path),
                ));
            }
            if let Some(bin) = &dir.path_bin {
                let bin_path = Path::new(bin);
                if bin.is_empty()
                    || bin_path.is_absolute()
                    || bin_path
                        .components()
                        .any(|c| !matches!(c, std::path::Component::Normal(_)))
                {
                    return Err(fail(
                        line_of(text, "path_bin", key),
                        format!(
                            "key `sandbox.{key}` ({}): path_bin {bin:?} must be a directory below the entry's path, such as \"bin\"",
                            dir.path
                        ),
                    ));
                }
            }
            for (name, value) in dir.resolved_env() {
                let at = || line_of_var(text, &name, &dir.path, key);
                let why = if !valid_name(&name) {
                    Some("is not a variable name (letters, digits and `_`, not starting with a digit)".to_string())
                } else if let Some(why) = reserved(&name) {
                    Some(format!("cannot be set here: {why}"))
                } else if value.contains(['\0', '\n']) {
                    Some("holds a NUL or a newline".to_string())
                } else if berth_policy::env::is_dangerous_env(&name) {
                    value
                        .split(':')
                        .find(|part| {
                            let part = Path::new(part);
                            bad_path(part).is_some() || !declared.iter().any(|d| part.starts_with(d))
                        })
                        .map(|part| {
                            format!(
                                "changes what a command runs, so it may only point into declared toolchains or caches; {part:?} is not in one (declare the directory, or drop the variable)"
                            )
                        })
                } else {
                    None
                };
                if let Some(why) = why {
                    return Err(fail(
                        at(),
                        format!(
                            "key `sandbox.{key}` ({}): env {name} = {value:?} {why}",
                            dir.path
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Why `uid`/`gid` cannot reach `dir` (search every directory from `/` down
/// to `dir` itself), or `None` when it can.
/// `shown`: the other directories shown at their own paths; from the
/// deepest of them holding `dir` (else from `dir` itself) the host's modes
/// are what the berth's uid meets.
pub fn unreachable_by(
    dir: &Path,
    uid: u32,
    gid: u32,
    what: &str,
    shown: &[PathBuf],
) -> Option<String> {
    let from = shown
        .iter()
        .filter(|s| dir.starts_with(s) && s.as_path() != dir)
        .max_by_key(|s| s.components().count())
        .map_or(dir, PathBuf::as_path);
    let mut prefix = PathBuf::new();
    let mut checking = false;
    for part in dir.components() {
        prefix.push(part);
        checking |= prefix == from;
        let meta = match std::fs::metadata(&prefix) {
            Ok(meta) => meta,
            Err(e) => {
                return Some(format!(
                    "declared {what} {} cannot be used: {}: {e}",
                    dir.display(),
                    prefix.display()
                ));
            }
        };
        if !meta.is_dir() {
            return Some(format!(
                "declared {what} {} cannot be used: {} is not a directory",
                dir.display(),
                prefix.display()
            ));
        }
        let mode = meta.mode();
        let search = !checking
            || (if meta.uid() == uid {
                mode & 0o100 != 0
            } else if meta.gid() == gid {
                mode & 0o010 != 0
            } else {
                mode & 0o001 != 0
            });
        if !search {
            return Some(format!(
                "{} is {:04o} (owner uid {}): the berth's uid {uid} cannot reach the declared {what} {}; make it searchable (chmod o+x {}) or declare a directory the uid can enter",
                prefix.display(),
                mode & 0o7777,
                meta.uid(),
                dir.display(),
                prefix.display()
            ));
        }
    }
    None
}

/// One note per declared directory of `sandbox` that `uid` cannot reach in
/// a berth of `mode` (a runner also shows the host's system directories).
pub fn unreachable_notes(
    sandbox: &crate::config::sandbox::SandboxConfig,
    uid: u32,
    mode: berth_sandbox::BerthMode,
) -> Vec<String> {
    let mut shown: Vec<PathBuf> = sandbox
        .toolchains
        .iter()
        .chain(&sandbox.caches)
        .map(|d| PathBuf::from(&d.path))
        .collect();
    if mode == berth_sandbox::BerthMode::Runner {
        shown.extend(
            berth_sandbox::runner::DEFAULT_SYSTEM_DIRS
                .iter()
                .map(PathBuf::from),
        );
    }
    let toolchains = sandbox.toolchains.iter().map(|d| (&d.path, "toolchain"));
    let caches = sandbox.caches.iter().map(|d| (&d.path, "cache"));
    toolchains
        .chain(caches)
        .filter_map(|(dir, what)| unreachable_by(Path::new(dir), uid, uid, what, &shown))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    use crate::config::{DeclaredDir, ProjectConfig};

    #[test]
    fn an_entry_is_a_path_or_a_table_carrying_its_environment() {
        let text = "[sandbox]\ntoolchains = [\"/opt/go\", { path = \"/root/.rustup\", env = { RUSTUP_HOME = \"{path}\" } }]\n\n[[sandbox.caches]]\npath = \"/root/.cargo\"\nenv = { CARGO_HOME = \"{path}\", CARGO_TERM_COLOR = \"never\" }\npath_bin = \"bin\"\n";
        let c = ProjectConfig::parse(text, "berth.toml").unwrap();
        assert_eq!(c.sandbox.toolchains[0], DeclaredDir::plain("/opt/go"));
        let env = declared_env(&c.sandbox);
        assert_eq!(
            env.vars,
            BTreeMap::from([
                ("RUSTUP_HOME".to_string(), "/root/.rustup".to_string()),
                ("CARGO_HOME".to_string(), "/root/.cargo".to_string()),
                ("CARGO_TERM_COLOR".to_string(), "never".to_string()),
            ])
        );
        assert_eq!(env.path_append, ["/root/.cargo/bin"]);
    }

    #[test]
    fn a_variable_that_changes_what_runs_points_only_into_declared_directories() {
        let refused = [
            // Outside every declared directory: refused, at its own line
            // (not at a comment naming it).
            (
                "# env = { RUSTC_WRAPPER = \"…\" }\n[sandbox]\ntoolchains = [\"/opt/go\"]\n[[sandbox.caches]]\npath = \"/srv/c\"\nenv = { RUSTC_WRAPPER = \"/usr/local/bin/evil\" }\n",
                6,
                "RUSTC_WRAPPER",
            ),
            // Each part of a list.
            (
                "[sandbox]\ntoolchains = [{ path = \"/opt/py\", env = { PYTHONPATH = \"{path}/lib:/home/me/lib\" } }]\n",
                2,
                "\"/home/me/lib\" is not in one",
            ),
            (
                "[sandbox]\ntoolchains = [{ path = \"/opt/go\", env = { GOROOT = \"{path}/../x\" } }]\n",
                2,
                "GOROOT",
            ),
            // Names berth sets itself.
            (
                "[sandbox]\ntoolchains = [{ path = \"/opt/go\", env = { PATH = \"/opt/go/bin\" } }]\n",
                2,
                "path_bin",
            ),
            (
                "[sandbox]\ntoolchains = [{ path = \"/opt/go\", env = { HOME = \"/opt/go\" } }]\n",
                2,
                "HOME",
            ),
            (
                "[sandbox]\ntoolchains = [{ path = \"/opt/go\", env = { GIT_CONFIG_COUNT = \"0\" } }]\n",
                2,
                "GIT_CONFIG",
            ),
            (
                "[sandbox]\ntoolchains = [{ path = \"/opt/go\", path_bin = \"../bin\" }]\n",
                2,
                "path_bin",
            ),
            (
                "[sandbox]\ntoolchains = [{ path = \"/opt/go\", env = { \"1X\" = \"a\" } }]\n",
                2,
                "not a variable name",
            ),
            (
                "[sandbox]\n\n[[sandbox.toolchains]]\npath = \"opt/go\"\n",
                4,
                "must be absolute",
            ),
        ];
        for (text, line, want) in refused {
            match ProjectConfig::parse(text, "berth.toml") {
                Err(EngineError::Config {
                    file,
                    line: l,
                    message,
                    ..
                }) => {
                    assert_eq!(
                        (file.as_str(), l),
                        ("berth.toml", line),
                        "{text:?}: {message}"
                    );
                    assert!(message.contains(want), "{want:?} not in {message}");
                }
                other => panic!("{text:?} parsed: {other:?}"),
            }
        }
        // Into a declared directory (any of them), or a plain variable.
        let allowed = "[sandbox]\ntoolchains = [{ path = \"/opt/go\", env = { GOROOT = \"{path}\", GOFLAGS_X = \"-v\", JAVA_HOME = \"/srv/jdk/current\" } }]\ncaches = [\"/srv/jdk\"]\n";
        ProjectConfig::parse(allowed, "berth.toml").unwrap();
    }

    #[test]
    fn a_dir_under_a_closed_ancestor_is_named_with_the_ancestor() {
        let closed = tempfile::tempdir().unwrap();
        std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = closed.path().join("cargo");
        std::fs::create_dir(&dir).unwrap();
        let owner = std::fs::metadata(closed.path()).unwrap().uid();
        let stranger = owner.wrapping_add(12_345);
        let shown = [closed.path().to_path_buf()];
        // Below a closed directory that is itself shown: blocked there.
        let note = unreachable_by(&dir, stranger, stranger, "toolchain", &shown).unwrap();
        assert!(
            note.starts_with(&format!("{} is 0700", closed.path().display()))
                && note.contains(&format!("toolchain {}", dir.display())),
            "{note}"
        );
        // Its owner reaches it; so does anyone once the ancestor is searchable.
        assert_eq!(
            unreachable_by(&dir, owner, owner, "toolchain", &shown),
            None
        );
        // Its ancestors not shown: they are made fresh, only its own mode counts.
        assert_eq!(
            unreachable_by(&dir, stranger, stranger, "toolchain", &[]),
            None
        );
        assert!(
            unreachable_by(closed.path(), stranger, stranger, "toolchain", &[])
                .unwrap()
                .contains("is 0700")
        );
        std::fs::set_permissions(closed.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        assert_eq!(
            unreachable_by(&dir, stranger, stranger, "toolchain", &shown),
            None
        );
        let gone = closed.path().join("missing");
        assert!(
            unreachable_by(&gone, owner, owner, "cache", &[])
                .unwrap()
                .contains("cannot be used")
        );
    }
}
