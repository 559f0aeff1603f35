//! What each key of a `devcontainer.json` becomes in a berth, given the
//! project's `berth.toml` (whose keys win): the image or the Dockerfile
//! build, the container's and the commands' variables, the user (never a
//! uid), mounts (only those `berth.toml` declares), the post-create and
//! post-start commands (proposed actions of the agent), and a note for
//! everything berth does not do — `features` unsupported, other keys
//! ignored — so nothing in the file is silently dropped.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;
use serde_json::{Map, Value};

use super::DevcontainerError;
use crate::config::ProjectConfig;

/// Where the project's mounted berths get their image from, per the file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DevImage {
    /// The file names no image (berth.toml's, or the default agent image).
    #[default]
    None,
    /// `image`: a local image by name.
    Named { name: String },
    /// `build`: a Dockerfile in the repository, built from the branch's
    /// commit by `berth image build --project P`.
    Build {
        /// The context's directory in the repository (`""`: its root).
        context: String,
        /// The Dockerfile's path inside the context.
        dockerfile: String,
        args: BTreeMap<String, String>,
        /// The image built from it (`berth-build:<hash>`), once built.
        built: Option<String>,
    },
    /// berth.toml names the image (`[sandbox] image` or `[sandbox.build]`):
    /// the file's is not used.
    Overridden,
}

/// One `postCreateCommand` or `postStartCommand` entry, as a shell line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PostCommand {
    /// `postCreateCommand` or `postStartCommand`.
    pub hook: &'static str,
    /// The entry's name in the object form.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub command: String,
}

/// A project's `devcontainer.json` as berth applies it.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct Applied {
    /// The branch it was read from.
    pub branch: String,
    /// The branch's commit when it was read.
    pub commit: String,
    /// The file's path in the repository.
    pub path: String,
    pub image: DevImage,
    /// `containerEnv`: every command's environment in the berth.
    pub container_env: BTreeMap<String, String>,
    /// `remoteEnv`: added to each command's environment.
    pub remote_env: BTreeMap<String, String>,
    /// `remoteUser` (or `containerUser`): a name only, never a uid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// `postCreateCommand`s, then `postStartCommand`s; an object form's
    /// entries by name (the format runs them in parallel).
    pub post_commands: Vec<PostCommand>,
    /// What berth says about the file: what it maps how, refuses, ignores.
    pub notes: Vec<String>,
}

/// The project's workspace inside a berth.
const WORKSPACE: &str = berth_policy::frame::WORK;

/// Keys berth reads (the rest are listed as ignored).
const READ_KEYS: &[&str] = &[
    "image",
    "build",
    "dockerFile",
    "context",
    "containerEnv",
    "remoteEnv",
    "remoteUser",
    "containerUser",
    "mounts",
    "postCreateCommand",
    "postStartCommand",
    "features",
    "initializeCommand",
    "dockerComposeFile",
    "name",
    "$schema",
];

/// Maps the parsed file `value` read from `path` at `branch`/`commit`.
pub fn apply(
    value: &Value,
    file: &str,
    path: &str,
    config: &ProjectConfig,
) -> Result<Applied, DevcontainerError> {
    let invalid = |key: &str, message: String| DevcontainerError::Invalid {
        file: file.to_string(),
        key: key.to_string(),
        message,
    };
    let Value::Object(obj) = value else {
        return Err(invalid("", "the file must hold one JSON object".into()));
    };
    let mut out = Applied {
        path: path.to_string(),
        ..Applied::default()
    };
    let dir = path.rsplit_once('/').map(|(d, _)| d).unwrap_or("");

    // The image: `image`, or `build` (or the old top-level `dockerFile`).
    let image = string_at(obj, "image", file)?;
    let build = match obj.get("build") {
        None | Some(Value::Null) => None,
        Some(Value::Object(b)) => Some(b.clone()),
        Some(_) => return Err(invalid("build", "must be an object".into())),
    };
    let legacy_dockerfile = string_at(obj, "dockerFile", file)?;
    let dockerfile = match (&build, &legacy_dockerfile) {
        (Some(b), _) => string_at(b, "dockerfile", file)?,
        (None, Some(d)) => Some(d.clone()),
        (None, None) => None,
    };
    let context = match &build {
        Some(b) => string_at(b, "context", file)?,
        None => string_at(obj, "context", file)?,
    };
    out.image = match (image, dockerfile) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "image",
                "both `image` and `build.dockerfile` name the image; keep one".into(),
            ));
        }
        (Some(name), None) if name.trim().is_empty() => {
            return Err(invalid("image", "must not be empty".into()));
        }
        (Some(name), None) => DevImage::Named { name },
        (None, Some(dockerfile)) => {
            let args = match build.as_ref().and_then(|b| b.get("args")) {
                None | Some(Value::Null) => BTreeMap::new(),
                Some(v) => string_map(v, "build.args", file)?,
            };
            if let Some(b) = &build {
                let extra: Vec<&str> = b
                    .keys()
                    .map(String::as_str)
                    .filter(|k| !["dockerfile", "context", "args"].contains(k))
                    .collect();
                if !extra.is_empty() {
                    out.notes.push(format!(
                        "ignored: build.{} (berth builds with the Dockerfile, the context and args only, with no network)",
                        extra.join(", build.")
                    ));
                }
            }
            let context = join_inside(dir, context.as_deref().unwrap_or("."))
                .map_err(|why| invalid("build.context", why))?;
            let full =
                join_inside(dir, &dockerfile).map_err(|why| invalid("build.dockerfile", why))?;
            let inside = match context.as_str() {
                "" => Some(full.as_str()),
                c => full.strip_prefix(c).and_then(|r| r.strip_prefix('/')),
            };
            let Some(inside) = inside.filter(|r| !r.is_empty()) else {
                return Err(invalid(
                    "build.dockerfile",
                    format!(
                        "{full} is not inside the build context {}; move it there or widen `context`",
                        if context.is_empty() {
                            "(the repository)"
                        } else {
                            &context
                        }
                    ),
                ));
            };
            DevImage::Build {
                dockerfile: inside.to_string(),
                context,
                args,
                built: None,
            }
        }
        (None, None) => DevImage::None,
    };
    if obj.contains_key("dockerComposeFile") {
        out.notes.push(
            "unsupported: dockerComposeFile (berth runs one container per berth; name an `image` or a `build` instead)"
                .into(),
        );
    }
    let s = &config.sandbox;
    if out.image != DevImage::None && (!s.image.trim().is_empty() || s.build.is_set()) {
        out.notes.push(
            "berth.toml names the image ([sandbox] image or [sandbox.build]): the file's image is not used (berth.toml keys override devcontainer values)"
                .into(),
        );
        out.image = DevImage::Overridden;
    }

    // Variables: containerEnv first, as remoteEnv may refer to it.
    let declared = crate::declared_dirs::declared_env(s);
    let declared_dirs: Vec<&str> = s
        .toolchains
        .iter()
        .chain(&s.caches)
        .map(|d| d.path.as_str())
        .collect();
    for (key, target) in [("containerEnv", true), ("remoteEnv", false)] {
        let Some(v) = obj.get(key) else { continue };
        let vars = match v {
            Value::Object(m) => m,
            Value::Null => continue,
            _ => return Err(invalid(key, "must be an object of strings".into())),
        };
        for (name, value) in vars {
            let value = match value {
                Value::String(s) => s.clone(),
                // remoteEnv's null unsets a variable: nothing to set here.
                Value::Null => continue,
                _ => {
                    return Err(invalid(&format!("{key}.{name}"), "must be a string".into()));
                }
            };
            let refused = |why: String| format!("refused: {key}.{name}: {why}");
            let value = match substitute(&value, (!target).then_some(&out.container_env)) {
                Ok(v) => v,
                Err(why) => {
                    out.notes.push(refused(why));
                    continue;
                }
            };
            if let Some(why) = env_problem(name, &value, &declared_dirs) {
                out.notes.push(refused(why));
                continue;
            }
            if declared.vars.contains_key(name) {
                out.notes.push(format!(
                    "{key}.{name}: berth.toml's declared directories set it; theirs is used (berth.toml keys override devcontainer values)"
                ));
                continue;
            }
            let map = if target {
                &mut out.container_env
            } else {
                &mut out.remote_env
            };
            map.insert(name.clone(), value);
        }
    }

    // The user: a name, never a uid.
    let remote_user = string_at(obj, "remoteUser", file)?;
    let container_user = string_at(obj, "containerUser", file)?;
    if let Some((key, user)) = remote_user
        .map(|u| ("remoteUser", u))
        .or(container_user.map(|u| ("containerUser", u)))
    {
        out.notes.push(format!(
            "{key} {user:?} is not used as a uid: commands run as the berth's own uid (never root), with HOME={} writable and berth's own",
            berth_policy::frame::DEFAULT_HOME
        ));
        out.user = Some(user);
    }

    apply_mounts(obj, file, config, &mut out)?;

    for hook in ["postCreateCommand", "postStartCommand"] {
        let Some(v) = obj.get(hook) else { continue };
        let entries: Vec<(Option<String>, &Value)> = match v {
            Value::Object(m) => m.iter().map(|(k, v)| (Some(k.clone()), v)).collect(),
            other => vec![(None, other)],
        };
        for (name, v) in entries {
            let at = match &name {
                Some(n) => format!("{hook}.{n}"),
                None => hook.to_string(),
            };
            // Variables are put in before an array's words are quoted.
            let line = match v {
                Value::String(s) => substitute(s, None),
                Value::Array(words) => {
                    let words: Option<Vec<&str>> = words.iter().map(Value::as_str).collect();
                    let words = words.ok_or_else(|| {
                        invalid(&at, "an array command must hold strings only".into())
                    })?;
                    words
                        .iter()
                        .map(|w| substitute(w, None).map(|w| shell_word(&w)))
                        .collect::<Result<Vec<_>, _>>()
                        .map(|w| w.join(" "))
                }
                Value::Null => continue,
                _ => {
                    return Err(invalid(
                        &at,
                        "must be a string, an array of strings, or an object of those".into(),
                    ));
                }
            };
            match line {
                Ok(command) if command.trim().is_empty() => {}
                Ok(command) => out.post_commands.push(PostCommand {
                    hook,
                    name,
                    command,
                }),
                Err(why) => out.notes.push(format!("refused: {at}: {why}")),
            }
        }
    }

    if let Some(features) = obj.get("features") {
        let ids: Vec<String> = match features {
            Value::Object(m) => m.keys().cloned().collect(),
            _ => Vec::new(),
        };
        if !ids.is_empty() {
            out.notes.push(format!(
                "unsupported: features ({}): berth does not install Dev Container Features; put what they install in the Dockerfile",
                ids.join(", ")
            ));
        }
    }
    if obj.contains_key("initializeCommand") {
        out.notes.push(
            "ignored: initializeCommand (it would run on the host; berth runs nothing of the file there)"
                .into(),
        );
    }
    let ignored: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !READ_KEYS.contains(k))
        .collect();
    if !ignored.is_empty() {
        out.notes.push(format!(
            "ignored: {} (berth does not read them)",
            ignored.join(", ")
        ));
    }
    Ok(out)
}

/// `mounts`: each one refused unless berth.toml declares the same directory
/// (a toolchain, a cache or an extra root, shown at its own path), which
/// berth then mounts as berth.toml says.
fn apply_mounts(
    obj: &Map<String, Value>,
    file: &str,
    config: &ProjectConfig,
    out: &mut Applied,
) -> Result<(), DevcontainerError> {
    let Some(mounts) = obj.get("mounts") else {
        return Ok(());
    };
    let Value::Array(mounts) = mounts else {
        return Err(DevcontainerError::Invalid {
            file: file.to_string(),
            key: "mounts".into(),
            message: "must be an array".into(),
        });
    };
    let s = &config.sandbox;
    let declared: Vec<(&str, &str)> = s
        .toolchains
        .iter()
        .map(|d| (d.path.as_str(), "[sandbox] toolchains, read-only"))
        .chain(
            s.caches
                .iter()
                .map(|d| (d.path.as_str(), "[sandbox] caches, read-write")),
        )
        .chain(
            config
                .scope
                .extra_roots
                .iter()
                .map(|r| (r.as_str(), "[scope] extra_roots")),
        )
        .collect();
    for (i, m) in mounts.iter().enumerate() {
        let fields = match m {
            Value::String(text) => mount_fields(text),
            Value::Object(o) => o
                .iter()
                .map(|(k, v)| {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    (k.clone(), v)
                })
                .collect(),
            _ => BTreeMap::new(),
        };
        let get = |keys: &[&str]| keys.iter().find_map(|k| fields.get(*k).cloned());
        let source = get(&["source", "src"]).unwrap_or_default();
        let target = get(&["target", "destination", "dst"]).unwrap_or_default();
        let kind = get(&["type"]).unwrap_or_else(|| "volume".into());
        let shown = format!("mounts[{i}] (source={source}, target={target}, type={kind})");
        let found = declared
            .iter()
            .find(|(path, _)| *path == source && *path == target);
        match found {
            Some((path, how)) if kind == "bind" => out.notes.push(format!(
                "{shown}: declared in berth.toml ({how}): {path} is mounted as berth.toml says"
            )),
            _ => out.notes.push(format!(
                "refused: {shown}: a mount widens what the berth reaches; declare the directory in berth.toml ([sandbox] toolchains or caches, shown at its own path) and write the mount as a bind of that path to itself"
            )),
        }
    }
    Ok(())
}

/// `type=bind,source=/a,target=/b,readonly` as its fields.
fn mount_fields(text: &str) -> BTreeMap<String, String> {
    text.split(',')
        .filter_map(|part| {
            let part = part.trim();
            if part.is_empty() {
                return None;
            }
            Some(match part.split_once('=') {
                Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
                None => (part.to_string(), "true".to_string()),
            })
        })
        .collect()
}

/// `dir/rel` normalized (`.` and `..` resolved) as a path inside the
/// repository (`""` is its root); an absolute path or one leaving the
/// repository is refused.
fn join_inside(dir: &str, rel: &str) -> Result<String, String> {
    if rel.starts_with('/') {
        return Err(format!(
            "{rel:?} is absolute; write it relative to the devcontainer.json's directory"
        ));
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in dir.split('/').chain(rel.split('/')) {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(format!(
                        "{rel:?} leads out of the repository; berth builds only from the repository's own files"
                    ));
                }
            }
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// A string field of `obj`; an error when it is there and not a string.
fn string_at(
    obj: &Map<String, Value>,
    key: &str,
    file: &str,
) -> Result<Option<String>, DevcontainerError> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(DevcontainerError::Invalid {
            file: file.to_string(),
            key: key.to_string(),
            message: "must be a string".into(),
        }),
    }
}

/// An object of strings (`build.args`); numbers and booleans as written.
fn string_map(
    v: &Value,
    key: &str,
    file: &str,
) -> Result<BTreeMap<String, String>, DevcontainerError> {
    let invalid = || DevcontainerError::Invalid {
        file: file.to_string(),
        key: key.to_string(),
        message: "must be an object of strings".into(),
    };
    let Value::Object(m) = v else {
        return Err(invalid());
    };
    m.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(n) => Ok((k.clone(), n.to_string())),
            Value::Bool(b) => Ok((k.clone(), b.to_string())),
            _ => Err(invalid()),
        })
        .collect()
}

/// Why berth does not set variable `name` to `value`, or `None`: the same
/// rules as a declared directory's variables — names berth sets itself are
/// refused, and a variable that changes what a command runs may only point
/// into declared toolchains or caches.
fn env_problem(name: &str, value: &str, declared: &[&str]) -> Option<String> {
    if !crate::declared_dirs::valid_name(name) {
        return Some(
            "is not a variable name (letters, digits and `_`, not starting with a digit)".into(),
        );
    }
    if let Some(why) = crate::declared_dirs::reserved(name) {
        return Some(format!("cannot be set: {why}"));
    }
    if value.contains(['\0', '\n']) {
        return Some("holds a NUL or a newline".into());
    }
    if berth_policy::env::is_dangerous_env(name) {
        let outside = value.split(':').find(|part| {
            let p = Path::new(part);
            crate::declared_dirs::bad_path(p).is_some()
                || !declared.iter().any(|d| p.starts_with(d))
        });
        if let Some(part) = outside {
            return Some(format!(
                "changes what a command runs, so it may only point into declared toolchains or caches; {part:?} is not in one"
            ));
        }
    }
    None
}

/// `${…}` variables of the format put in: `containerWorkspaceFolder` (and
/// its basename) is `/work`; `containerEnv:NAME[:default]` (in `remoteEnv`)
/// is the file's own `containerEnv`. Anything from the host
/// (`localEnv`, `localWorkspaceFolder`) is refused: it would copy berth's
/// environment into the berth.
fn substitute(
    text: &str,
    container_env: Option<&BTreeMap<String, String>>,
) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("{:?}: an unclosed `${{`", text));
        };
        let var = &after[..end];
        let value = match var.split_once(':') {
            None if var == "containerWorkspaceFolder" => WORKSPACE.to_string(),
            None if var == "containerWorkspaceFolderBasename" => {
                WORKSPACE.trim_start_matches('/').to_string()
            }
            Some(("containerEnv", name_default)) if container_env.is_some() => {
                let (name, default) = match name_default.split_once(':') {
                    Some((n, d)) => (n, Some(d)),
                    None => (name_default, None),
                };
                match (container_env.and_then(|e| e.get(name)), default) {
                    (Some(v), _) => v.clone(),
                    (None, Some(d)) => d.to_string(),
                    (None, None) => {
                        return Err(format!(
                            "${{containerEnv:{name}}}: berth knows only the file's own containerEnv, which does not set {name}"
                        ));
                    }
                }
            }
            Some(("localEnv", _)) | None if var.starts_with("local") => {
                return Err(format!(
                    "${{{var}}} would copy the host's environment or paths into the berth; berth refuses it"
                ));
            }
            _ => return Err(format!("${{{var}}}: a variable berth does not put in")),
        };
        out.push_str(&value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `word` as one shell word.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./=:@%+,-".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn config(text: &str) -> ProjectConfig {
        ProjectConfig::parse(text, "berth.toml").unwrap()
    }

    fn applied(v: Value, toml: &str) -> Applied {
        apply(
            &v,
            "main:.devcontainer/devcontainer.json",
            ".devcontainer/devcontainer.json",
            &config(toml),
        )
        .unwrap()
    }

    #[test]
    fn build_paths_are_relative_to_the_files_directory() {
        let a = applied(
            json!({"build": {"dockerfile": "Dockerfile", "context": "..", "args": {"V": 1}}}),
            "",
        );
        assert_eq!(
            a.image,
            DevImage::Build {
                context: "".into(),
                dockerfile: ".devcontainer/Dockerfile".into(),
                args: BTreeMap::from([("V".into(), "1".into())]),
                built: None
            }
        );
        let a = applied(json!({"build": {"dockerfile": "Dockerfile"}}), "");
        assert!(
            matches!(&a.image, DevImage::Build { context, dockerfile, .. }
            if context == ".devcontainer" && dockerfile == "Dockerfile")
        );
        let a = applied(json!({"dockerFile": "../docker/Dev", "context": ".."}), "");
        assert!(
            matches!(&a.image, DevImage::Build { context, dockerfile, .. }
            if context.is_empty() && dockerfile == "docker/Dev")
        );
        for (v, want) in [
            (
                json!({"build": {"dockerfile": "../../D"}}),
                "leads out of the repository",
            ),
            (json!({"build": {"dockerfile": "/D"}}), "absolute"),
            (
                json!({"build": {"dockerfile": "../D"}}),
                "not inside the build context",
            ),
            (
                json!({"image": "a", "build": {"dockerfile": "D"}}),
                "keep one",
            ),
            (json!({"image": 3}), "must be a string"),
            (json!([1]), "one JSON object"),
        ] {
            let e = apply(&v, "f", ".devcontainer/devcontainer.json", &config(""))
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{v}: {e}");
        }
        let a = applied(json!({"image": "x"}), "[sandbox]\nimage = \"y\"\n");
        assert_eq!(a.image, DevImage::Overridden);
        assert!(
            a.notes[0].contains("berth.toml keys override"),
            "{:?}",
            a.notes
        );
    }

    #[test]
    fn variables_are_checked_and_substituted() {
        let a = applied(
            json!({
                "containerEnv": {"A": "1", "W": "${containerWorkspaceFolder}/x", "PATH": "/x",
                    "LD_PRELOAD": "/work/evil.so", "S": "${localEnv:HOME}", "RUSTUP_HOME": "/opt/rust"},
                "remoteEnv": {"B": "${containerEnv:A}-2", "C": "${containerEnv:NOPE:d}", "N": null}
            }),
            "[sandbox]\ntoolchains = [{ path = \"/opt/rust\", env = { RUSTUP_HOME = \"{path}\" } }]\n",
        );
        assert_eq!(
            a.container_env,
            BTreeMap::from([("A".into(), "1".into()), ("W".into(), "/work/x".into())])
        );
        assert_eq!(
            a.remote_env,
            BTreeMap::from([("B".into(), "1-2".into()), ("C".into(), "d".into())])
        );
        let notes = a.notes.join("\n");
        for want in [
            "refused: containerEnv.PATH: cannot be set",
            "refused: containerEnv.LD_PRELOAD: changes what a command runs",
            "refused: containerEnv.S: ${localEnv:HOME} would copy",
            "containerEnv.RUSTUP_HOME: berth.toml's declared directories set it",
        ] {
            assert!(notes.contains(want), "{want}: {notes}");
        }
    }

    #[test]
    fn commands_users_mounts_features_and_the_rest_are_said() {
        let a = applied(
            json!({
                "remoteUser": "vscode",
                "postCreateCommand": ["echo", "it's", "a b"],
                "postStartCommand": {"one": "make start", "two": ["ls", "${containerWorkspaceFolder}"]},
                "mounts": [
                    "source=/opt/cache,target=/opt/cache,type=bind",
                    {"source": "/etc", "target": "/etc", "type": "bind"},
                    "source=vol,target=/v,type=volume"
                ],
                "features": {"ghcr.io/devcontainers/features/node:1": {}},
                "forwardPorts": [3000],
                "customizations": {}
            }),
            "[sandbox]\ncaches = [\"/opt/cache\"]\n",
        );
        assert_eq!(
            a.post_commands
                .iter()
                .map(|c| (c.hook, c.name.as_deref(), c.command.as_str()))
                .collect::<Vec<_>>(),
            [
                ("postCreateCommand", None, "echo 'it'\\''s' 'a b'"),
                ("postStartCommand", Some("one"), "make start"),
                ("postStartCommand", Some("two"), "ls /work"),
            ]
        );
        assert_eq!(a.user.as_deref(), Some("vscode"));
        let notes = a.notes.join("\n");
        for want in [
            "remoteUser \"vscode\" is not used as a uid",
            "mounts[0] (source=/opt/cache, target=/opt/cache, type=bind): declared in berth.toml",
            "refused: mounts[1] (source=/etc, target=/etc, type=bind)",
            "refused: mounts[2] (source=vol, target=/v, type=volume)",
            "unsupported: features (ghcr.io/devcontainers/features/node:1)",
            "ignored: customizations, forwardPorts",
        ] {
            assert!(notes.contains(want), "{want}: {notes}");
        }
        let e = apply(
            &json!({"postCreateCommand": 3}),
            "f",
            "devcontainer.json",
            &config(""),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("postCreateCommand"), "{e}");
    }
}
