//! `[sandbox] toolchains` and `caches` as `berth.toml` spells them: a path
//! alone, or a table with the variables and `PATH` entry it brings. What a
//! berth does with them (checks, mounts, variables) is
//! [`crate::declared_dirs`]'s.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// One entry of `[sandbox] toolchains` or `caches`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredDir {
    /// The host directory, shown at this same path.
    pub path: String,
    /// Variables every command of the berth gets; `{path}` in a value is
    /// [`path`](Self::path).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A directory below `path` appended to `PATH` (`"bin"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bin: Option<String>,
}

impl DeclaredDir {
    /// An entry of the plain form: a path alone.
    pub fn plain(path: impl Into<String>) -> DeclaredDir {
        DeclaredDir {
            path: path.into(),
            ..DeclaredDir::default()
        }
    }

    /// The variables with `{path}` put in.
    pub fn resolved_env(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.env
            .iter()
            .map(|(name, value)| (name.clone(), value.replace("{path}", &self.path)))
    }

    /// The directory appended to `PATH`, when there is one.
    pub fn bin_dir(&self) -> Option<String> {
        self.path_bin.as_ref().map(|bin| {
            Path::new(&self.path)
                .join(bin)
                .to_string_lossy()
                .into_owned()
        })
    }
}

/// `"/opt/rust"` or `{ path = "/opt/rust", env = {…}, path_bin = "bin" }`.
pub(crate) fn path_or_table<'de, D>(d: D) -> std::result::Result<Vec<DeclaredDir>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    #[derive(Deserialize)]
    #[serde(
        untagged,
        expecting = "a directory path, or a table with `path` and optionally `env` and `path_bin`"
    )]
    enum Entry {
        Path(String),
        Table(DeclaredDir),
    }
    let entries = Vec::<Entry>::deserialize(d)?;
    Ok(entries
        .into_iter()
        .map(|e| match e {
            Entry::Path(path) => DeclaredDir::plain(path),
            Entry::Table(dir) => dir,
        })
        .collect())
}
