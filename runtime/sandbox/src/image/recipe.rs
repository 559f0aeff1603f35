//! The recipe of an agent image: which host files, which busybox applets, which
//! generated files. It is data, not a script, so its hash names what it builds.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::ImageError;
use super::host_preset::HostPreset;

/// The default agent image's recipe, `images/agent/recipe.toml`, compiled in so
/// the binary needs no checkout to build or check it.
pub const DEFAULT_RECIPE: &str = include_str!("../../../../images/agent/recipe.toml");
/// Where [`DEFAULT_RECIPE`] lives in the repository (for messages).
pub const DEFAULT_RECIPE_PATH: &str = "images/agent/recipe.toml";

/// A parsed recipe.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// The image's repository name; the tag is the hash.
    pub name: String,
    pub user: User,
    pub busybox: Busybox,
    #[serde(default)]
    pub host: Vec<HostEntry>,
    /// Symlinks made in the image: path → target, as `ln -s target path`.
    #[serde(default)]
    pub links: BTreeMap<String, String>,
    #[serde(default)]
    pub file: Vec<GeneratedFile>,
    /// The image's environment (`ENV`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The recipe text, hashed into the tag.
    #[serde(skip)]
    pub(crate) source: String,
    /// Where the text came from, for messages.
    #[serde(skip)]
    pub(crate) origin: String,
}

/// The unprivileged user commands run as.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub home: String,
}

/// The static busybox and its applets.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Busybox {
    /// The host path of a statically linked busybox.
    pub path: PathBuf,
    /// Where the applet links go in the image.
    pub dir: String,
    pub applets: Applets,
}

/// Which applets to link.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Applets {
    /// `"all"`: every applet `busybox --list` names.
    All(AllApplets),
    /// Only these.
    Only(Vec<String>),
}

/// The literal `"all"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AllApplets {
    All,
}

/// A `[[host]]` entry: host files by path, or a toolchain of this machine
/// by name (`preset = "rust"`), which expands into host files at build time.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "HostEntryFields")]
pub enum HostEntry {
    Files(HostInput),
    Preset {
        preset: HostPreset,
        /// The toolchain's program to ask (`rustc`, `python3`, `node`)
        /// instead of the one on `PATH`.
        path: Option<PathBuf>,
    },
}

/// A `[[host]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HostEntryFields {
    path: Option<PathBuf>,
    preset: Option<HostPreset>,
    libraries: Option<bool>,
    exclude: Option<Vec<String>>,
}

impl TryFrom<HostEntryFields> for HostEntry {
    type Error = String;

    fn try_from(f: HostEntryFields) -> Result<HostEntry, String> {
        match (f.preset, f.path) {
            (Some(preset), path) => {
                if f.libraries.is_some() || f.exclude.is_some() {
                    return Err(format!(
                        "preset {:?} chooses its own files: `libraries` and `exclude` go with a `path` entry",
                        preset.name()
                    ));
                }
                Ok(HostEntry::Preset { preset, path })
            }
            (None, Some(path)) => Ok(HostEntry::Files(HostInput {
                path,
                libraries: f.libraries.unwrap_or(false),
                exclude: f.exclude.unwrap_or_default(),
            })),
            (None, None) => Err(
                "a [[host]] entry names a `path` (host files) or a `preset` (\"rust\", \"python\", \"node\")"
                    .to_string(),
            ),
        }
    }
}

impl HostEntry {
    /// The host path the entry names: its files, or its preset's program.
    pub fn path(&self) -> Option<&Path> {
        match self {
            HostEntry::Files(input) => Some(&input.path),
            HostEntry::Preset { path, .. } => path.as_deref(),
        }
    }

    /// The entry's host files, when it names them by path.
    pub fn files(&self) -> Option<&HostInput> {
        match self {
            HostEntry::Files(input) => Some(input),
            HostEntry::Preset { .. } => None,
        }
    }
}

/// A host file or directory copied to the same path in the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostInput {
    pub path: PathBuf,
    /// Also copy the shared libraries `ldd` lists for each ELF file.
    pub libraries: bool,
    /// File names left out of a directory; a trailing `*` matches a prefix.
    pub exclude: Vec<String>,
}

/// A file the recipe writes itself.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratedFile {
    pub path: String,
    #[serde(default = "default_mode")]
    pub mode: u32,
    pub content: String,
}

fn default_mode() -> u32 {
    0o644
}

impl Recipe {
    /// The compiled-in default agent recipe.
    pub fn default_agent() -> Result<Recipe, ImageError> {
        Recipe::parse(DEFAULT_RECIPE, DEFAULT_RECIPE_PATH)
    }

    /// Reads a recipe file.
    pub fn from_file(path: &Path) -> Result<Recipe, ImageError> {
        let text = std::fs::read_to_string(path).map_err(|source| ImageError::ReadRecipe {
            path: path.to_path_buf(),
            source,
        })?;
        Recipe::parse(&text, &path.display().to_string())
    }

    /// Parses and checks recipe text; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<Recipe, ImageError> {
        let invalid = |message: String| ImageError::InvalidRecipe {
            origin: origin.to_string(),
            message,
        };
        let mut recipe: Recipe = toml::from_str(text).map_err(|e| invalid(e.to_string()))?;
        recipe.source = text.to_string();
        recipe.origin = origin.to_string();

        if !is_repository_name(&recipe.name) {
            return Err(invalid(format!(
                "name {:?}: use lowercase letters, digits, '.', '_', '-' and '/'",
                recipe.name
            )));
        }
        if recipe.user.uid == 0 {
            return Err(invalid(
                "user.uid 0: the agent user must not be root".to_string(),
            ));
        }
        if !is_user_name(&recipe.user.name) {
            return Err(invalid(format!(
                "user.name {:?}: use lowercase letters, digits, '_' and '-'",
                recipe.user.name
            )));
        }
        let mut image_paths = vec![
            ("user.home", recipe.user.home.as_str()),
            ("busybox.dir", recipe.busybox.dir.as_str()),
        ];
        image_paths.extend(recipe.links.keys().map(|p| ("links", p.as_str())));
        image_paths.extend(recipe.file.iter().map(|f| ("file.path", f.path.as_str())));
        for (field, path) in image_paths {
            if !is_clean_absolute(path) {
                return Err(invalid(format!(
                    "{field} {path:?}: an absolute path without '.', '..' or '//'"
                )));
            }
        }
        let host_paths = std::iter::once(("busybox.path", recipe.busybox.path.as_path())).chain(
            recipe
                .host
                .iter()
                .filter_map(|h| Some(("host.path", h.path()?))),
        );
        for (field, path) in host_paths {
            if !is_clean_absolute(&path.to_string_lossy()) {
                return Err(invalid(format!(
                    "{field} {}: an absolute path without '.', '..' or '//'",
                    path.display()
                )));
            }
        }
        for (key, value) in &recipe.env {
            if key.is_empty() || key.contains('=') || value.contains('\n') {
                return Err(invalid(format!("env {key:?}: not a valid variable")));
            }
        }
        for f in &recipe.file {
            if f.mode & !0o777 != 0 {
                return Err(invalid(format!(
                    "file {}: mode {:o} has bits beyond 0o777 (no set-id files)",
                    f.path, f.mode
                )));
            }
        }
        if let Applets::Only(list) = &recipe.busybox.applets
            && let Some(bad) = list.iter().find(|a| !is_file_name(a))
        {
            return Err(invalid(format!("busybox.applets: {bad:?} is not a name")));
        }
        Ok(recipe)
    }

    /// Where the recipe came from.
    pub fn origin(&self) -> &str {
        &self.origin
    }
}

impl HostInput {
    /// Whether a file name inside this directory is left out.
    pub(crate) fn excludes(&self, file_name: &str) -> bool {
        self.exclude
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => file_name.starts_with(prefix),
                None => file_name == pattern,
            })
    }
}

pub(crate) fn is_repository_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.bytes().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-' | b'/')
        })
        && s.as_bytes()[0].is_ascii_alphanumeric()
}

fn is_user_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 32
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'-'))
}

fn is_file_name(s: &str) -> bool {
    !s.is_empty() && s != "." && s != ".." && !s.contains('/') && !s.contains('\0')
}

/// An absolute path with no empty, `.` or `..` component.
pub(crate) fn is_clean_absolute(p: &str) -> bool {
    p == "/"
        || (p.starts_with('/')
            && !p.ends_with('/')
            && p[1..]
                .split('/')
                .all(|c| !c.is_empty() && c != "." && c != ".."))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn the_default_recipe_parses() {
        let r = Recipe::default_agent().unwrap();
        assert_eq!(r.name, "berth-agent");
        assert_eq!(
            r.user,
            User {
                name: "agent".into(),
                uid: 1000,
                gid: 1000,
                home: "/home/agent".into()
            }
        );
        assert_eq!(r.busybox.applets, Applets::All(AllApplets::All));
        assert!(
            r.host
                .iter()
                .any(|h| h.path() == Some(Path::new("/usr/bin/git")))
        );
    }

    const BASE: &str = r#"
name = "t"
[user]
name = "agent"
uid = 1000
gid = 1000
home = "/home/agent"
[busybox]
path = "/usr/bin/busybox"
dir = "/usr/bin"
applets = ["sh", "ls"]
"#;

    #[test]
    fn rejects_what_would_build_a_wrong_image() {
        let cases: &[(&str, &str)] = &[
            ("uid = 1000", "uid 0"),
            ("home = \"/home/agent\"", "user.home"),
            ("dir = \"/usr/bin\"", "busybox.dir"),
            ("name = \"t\"", "name"),
            ("applets = [\"sh\", \"ls\"]", "applets"),
        ];
        let replacements = [
            "uid = 0",
            "home = \"home/agent\"",
            "dir = \"/usr/../bin\"",
            "name = \"Bad Name\"",
            "applets = [\"../sh\"]",
        ];
        for ((from, want), to) in cases.iter().zip(replacements) {
            let text = BASE.replacen(from, to, 1);
            let err = Recipe::parse(&text, "case").unwrap_err().to_string();
            assert!(err.contains(want) && err.contains("case"), "{to}: {err}");
        }
        let extra = [
            (
                "[[file]]\npath = \"/etc/x\"\nmode = 0o4755\ncontent = \"\"\n",
                "set-id",
            ),
            ("[env]\n\"A=B\" = \"x\"\n", "env"),
            ("surprise = 1\n", "unknown field"),
        ];
        for (tail, want) in extra {
            let text = format!("{BASE}{tail}");
            let text = if tail.starts_with("surprise") {
                format!("{tail}{BASE}")
            } else {
                text
            };
            let err = Recipe::parse(&text, "case").unwrap_err().to_string();
            assert!(err.contains(want), "{tail}: {err}");
        }
    }

    #[test]
    fn a_host_entry_names_files_or_a_preset() {
        let ok: &[(&str, HostEntry)] = &[
            (
                "path = \"/usr/bin/git\"\nlibraries = true",
                HostEntry::Files(HostInput {
                    path: "/usr/bin/git".into(),
                    libraries: true,
                    exclude: vec![],
                }),
            ),
            (
                "preset = \"rust\"",
                HostEntry::Preset {
                    preset: HostPreset::Rust,
                    path: None,
                },
            ),
            (
                "preset = \"python\"\npath = \"/usr/bin/python3\"",
                HostEntry::Preset {
                    preset: HostPreset::Python,
                    path: Some("/usr/bin/python3".into()),
                },
            ),
            (
                "preset = \"node\"",
                HostEntry::Preset {
                    preset: HostPreset::Node,
                    path: None,
                },
            ),
        ];
        for (entry, want) in ok {
            let text = format!("{BASE}[[host]]\n{entry}\n");
            let r = Recipe::parse(&text, "case").unwrap();
            assert_eq!(r.host, std::slice::from_ref(want), "{entry}");
        }
        let refused = [
            ("preset = \"ruby\"", "unknown variant `ruby`"),
            (
                "preset = \"rust\"\nlibraries = true",
                "chooses its own files",
            ),
            (
                "preset = \"rust\"\nexclude = [\"x\"]",
                "chooses its own files",
            ),
            ("libraries = true", "names a `path`"),
            ("preset = \"python\"\npath = \"python3\"", "host.path"),
            ("path = \"/x\"\nsurprise = 1", "unknown field"),
        ];
        for (entry, want) in refused {
            let text = format!("{BASE}[[host]]\n{entry}\n");
            let err = Recipe::parse(&text, "case").unwrap_err().to_string();
            assert!(err.contains(want) && err.contains("case"), "{entry}: {err}");
        }
    }

    #[test]
    fn exclude_patterns_match_names_or_prefixes() {
        let h = HostInput {
            path: "/x".into(),
            libraries: false,
            exclude: vec!["git-http-*".into(), "git-imap-send".into()],
        };
        let cases = [
            ("git-http-fetch", true),
            ("git-imap-send", true),
            ("git-imap-send2", false),
            ("git", false),
        ];
        for (name, want) in cases {
            assert_eq!(h.excludes(name), want, "{name}");
        }
    }
}
