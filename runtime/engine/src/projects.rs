//! Projects: a forge imported from a source repository, and the project's
//! configuration files in the state directory.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sqlx::Row;

use crate::config::ProjectConfig;
use crate::error::{EngineError, Result};
use crate::events::{Actor, NewEvent, emit, kind};
use crate::ids::now_ms;
use crate::{Engine, ProjectName, permissions, state};

/// A project as the store holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub name: String,
    /// The repository it was imported from.
    pub source: String,
    pub base_branch: String,
    /// The bare forge repository.
    pub forge: PathBuf,
    pub created_at: i64,
}

/// What `add_project` needs.
#[derive(Debug, Clone)]
pub struct NewProject {
    /// Parsed at the edge that took it (berth's one name rule).
    pub name: ProjectName,
    pub from: PathBuf,
    /// The branch PRs target; the source's current branch when `None`.
    pub base: Option<String>,
    /// A git server (smart HTTP, `http://…`) that is the project's forge:
    /// the project is imported from it instead of `from` (which is then
    /// empty), and this host keeps a mirror of it.
    pub forge_url: Option<String>,
}

/// A project with its parsed configuration and rules, as a decision needs them.
#[derive(Debug, Clone)]
pub struct LoadedProject {
    pub project: Project,
    pub config: ProjectConfig,
    pub rules: berth_policy::RuleSet,
    pub config_path: PathBuf,
    pub rules_path: PathBuf,
}

fn from_row(r: &sqlx::any::AnyRow) -> Result<Project> {
    let e = EngineError::store("reading a project");
    let forge: String = r.try_get("forge").map_err(e)?;
    Ok(Project {
        name: r
            .try_get("name")
            .map_err(EngineError::store("reading a project"))?,
        source: r
            .try_get("source")
            .map_err(EngineError::store("reading a project"))?,
        base_branch: r
            .try_get("base_branch")
            .map_err(EngineError::store("reading a project"))?,
        forge: PathBuf::from(forge),
        created_at: r
            .try_get("created_at")
            .map_err(EngineError::store("reading a project"))?,
    })
}

impl Engine {
    /// Imports `from` into a new forge, writes the default `berth.toml` and
    /// `permissions.json` (keeping files that already exist), and records it.
    pub async fn add_project(&self, new: NewProject, actor: &Actor) -> Result<Project> {
        if self.project_opt(&new.name).await?.is_some() {
            return Err(EngineError::AlreadyExists {
                what: "project",
                name: new.name.into(),
            });
        }
        let imported = match &new.forge_url {
            Some(url) => {
                self.git()
                    .import_project_from_server(&new.name, url, new.base.as_deref())
                    .await?
            }
            None => {
                self.git()
                    .import_project(&new.name, &new.from, new.base.as_deref())
                    .await?
            }
        };
        let source = match &new.forge_url {
            Some(url) => url.clone(),
            None => new.from.display().to_string(),
        };

        self.write_project_files(&new.name, &imported.co_author)?;

        let project = Project {
            name: new.name.to_string(),
            source,
            base_branch: imported.base_branch,
            forge: imported.forge,
            created_at: now_ms(),
        };
        let mut tx = self.store.write("adding a project").await?;
        // A project `berth project rm` removed keeps its row for the history
        // that names it: adding it again makes that row a project anew.
        let added = sqlx::query(
            "INSERT INTO projects (name, source, base_branch, forge, created_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (name) DO UPDATE SET source = excluded.source, base_branch = excluded.base_branch, \
             forge = excluded.forge, created_at = excluded.created_at, removed_at = NULL \
             WHERE projects.removed_at IS NOT NULL",
        )
        .bind(&project.name)
        .bind(&project.source)
        .bind(&project.base_branch)
        .bind(project.forge.display().to_string())
        .bind(project.created_at)
        .execute(&mut *tx)
        .await
        .map_err(EngineError::store("adding a project"))?
        .rows_affected();
        if added != 1 {
            return Err(EngineError::AlreadyExists {
                what: "project",
                name: project.name,
            });
        }
        emit(
            &mut tx,
            NewEvent::new(kind::PROJECT_ADDED, actor)
                .project(&project.name)
                .payload(serde_json::json!({
                    "source": project.source,
                    "base_branch": project.base_branch,
                    "forge": project.forge,
                })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("adding a project"))?;
        Ok(project)
    }

    /// Writes the default `berth.toml` and `permissions.json` of project
    /// `name` into this state directory, keeping files that already exist,
    /// and reads them back: a kept file that is broken fails now, not at
    /// the first decision.
    pub(crate) fn write_project_files(&self, name: &str, co_author: &str) -> Result<()> {
        let dir = self.state.project_dir(name);
        std::fs::create_dir_all(&dir).map_err(EngineError::io("creating", &dir))?;
        let config_path = self.state.project_config(name);
        if !config_path.exists() {
            let text = crate::config::default_toml(name, co_author);
            std::fs::write(&config_path, text).map_err(EngineError::io("writing", &config_path))?;
        }
        let rules_path = self.state.project_rules(name);
        if !rules_path.exists() {
            std::fs::write(&rules_path, permissions::DEFAULT_PERMISSIONS)
                .map_err(EngineError::io("writing", &rules_path))?;
        }
        self.load_project_files(name)?;
        Ok(())
    }

    /// Every project but the removed ones.
    pub async fn projects(&self) -> Result<Vec<Project>> {
        let rows = sqlx::query(
            "SELECT name, source, base_branch, forge, created_at FROM projects WHERE removed_at IS NULL ORDER BY name",
        )
        .fetch_all(self.store.pool())
        .await
        .map_err(EngineError::store("listing projects"))?;
        rows.iter().map(from_row).collect()
    }

    pub async fn project(&self, name: &str) -> Result<Project> {
        self.project_opt(name)
            .await?
            .ok_or_else(|| EngineError::UnknownProject(name.to_string()))
    }

    async fn project_opt(&self, name: &str) -> Result<Option<Project>> {
        let row = sqlx::query(
            "SELECT name, source, base_branch, forge, created_at FROM projects WHERE name = $1 AND removed_at IS NULL",
        )
        .bind(name)
        .fetch_optional(self.store.pool())
        .await
        .map_err(EngineError::store("reading a project"))?;
        row.as_ref().map(from_row).transpose()
    }

    /// The project's configuration and rules as the files are now: a broken
    /// file is an error naming file, line and column, and nothing is decided
    /// from it. Parsed again only when a file changed
    /// ([`crate::project_files_cache`]).
    pub fn load_project_files(&self, name: &str) -> Result<(ProjectConfig, berth_policy::RuleSet)> {
        self.project_files.load(&self.state, name)
    }

    pub async fn load_project(&self, name: &str) -> Result<LoadedProject> {
        let project = self.project(name).await?;
        let (config, rules) = self.load_project_files(name)?;
        Ok(LoadedProject {
            project,
            config,
            rules,
            config_path: self.state.project_config(name),
            rules_path: self.state.project_rules(name),
        })
    }
}

/// Every file [`project_files`] reads for `name`, in a fixed order: what a
/// kept load is checked against (`project_files_cache`), so a file read
/// there and not named here would let a kept load outlive its change.
pub(crate) fn project_file_paths(state: &state::StateDir, name: &str) -> [PathBuf; 4] {
    [
        state.project_config(name),
        state.project_rules(name),
        crate::devcontainer::snapshot_path(state, name),
        crate::project_image::record_path(state, name),
    ]
}

/// A project's `berth.toml` and `permissions.json` from `state`, read as the
/// engine reads them for every decision. Needs no store: the Claude Code hook
/// decides with these before every tool call and must not open one.
pub fn project_files(
    state: &state::StateDir,
    name: &str,
) -> Result<(ProjectConfig, berth_policy::RuleSet)> {
    let [config_path, rules_path, ..] = project_file_paths(state, name);
    let mut config = ProjectConfig::load(&config_path)?;
    config.devcontainer = crate::devcontainer::load_applied(state, name, &config)?;
    config.dockerfile_image = crate::project_image::load_record(state, name)?;
    let mut rules = if rules_path.exists() {
        berth_policy::RuleSet::load(&rules_path)?
    } else {
        berth_policy::RuleSet::default()
    };
    // `[sandbox.network]`'s hosts decide `network_connect` beside the
    // file's `WebFetch(domain:…)` rules.
    config.sandbox.network.add_rules(&mut rules);
    Ok((config, rules))
}

/// `text` (a `berth.toml`) with `[execution] mode` set to `mode`.
pub fn with_execution_mode(text: &str, mode: crate::config::ExecutionMode) -> String {
    with_key(text, "execution", "mode", &format!("\"{}\"", mode.as_str()))
}

/// `text` (a `berth.toml`) with `[table] key = value` (`value` written as
/// TOML): the line replaced where it is written, added to the table, or the
/// table appended. Everything else — comments included — is kept as written.
pub fn with_key(text: &str, wanted: &str, key: &str, value: &str) -> String {
    let line = format!("{key} = {value}");
    let mut out: Vec<String> = Vec::new();
    let mut table = String::new();
    let mut done = false;
    let mut in_execution_at: Option<usize> = None;
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with('[') {
            if table == wanted && !done {
                // The table ended without a mode line: add it at its end.
                out.insert(in_execution_at.unwrap_or(out.len()), line.clone());
                done = true;
            }
            table = t.trim_matches(|c| c == '[' || c == ']').trim().to_string();
            out.push(l.to_string());
            if table == wanted {
                in_execution_at = Some(out.len());
            }
            continue;
        }
        if table == wanted && !done && t.split_once('=').is_some_and(|(k, _)| k.trim() == key) {
            out.push(line.clone());
            done = true;
            continue;
        }
        out.push(l.to_string());
    }
    if !done {
        if table == wanted {
            out.push(line);
        } else {
            out.push(String::new());
            out.push(format!("[{wanted}]"));
            out.push(line);
        }
    }
    let mut s = out.join("\n");
    s.push('\n');
    s
}

impl Engine {
    /// Writes the project's execution mode into its `berth.toml`
    /// (`project.mode_set`). The file is checked before it replaces the old
    /// one, so a failure changes nothing.
    pub async fn set_project_mode(
        &self,
        name: &str,
        mode: crate::config::ExecutionMode,
        actor: &Actor,
    ) -> Result<()> {
        self.project(name).await?;
        let path = self.state.project_config(name);
        let text = std::fs::read_to_string(&path).map_err(EngineError::io("reading", &path))?;
        let new = with_execution_mode(&text, mode);
        let parsed = ProjectConfig::parse(&new, &path.display().to_string())?;
        if parsed.execution.mode != mode {
            return Err(EngineError::ModeNotSet { path });
        }
        let tmp = path.with_extension("toml.tmp");
        std::fs::write(&tmp, &new).map_err(EngineError::io("writing", &tmp))?;
        std::fs::rename(&tmp, &path).map_err(EngineError::io("replacing", &path))?;
        let mut tx = self.store.write("setting a project's mode").await?;
        emit(
            &mut tx,
            NewEvent::new(kind::PROJECT_MODE_SET, actor)
                .project(name)
                .payload(serde_json::json!({ "mode": mode.as_str() })),
        )
        .await?;
        tx.commit()
            .await
            .map_err(EngineError::store("setting a project's mode"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExecutionMode;

    #[test]
    fn the_mode_line_is_set_wherever_it_stands() {
        let cases: &[(&str, &str)] = &[
            (
                "# c\n[execution]\n# how\nmode = \"review\"\n\n[git]\n",
                "# c\n[execution]\n# how\nmode = \"auto\"\n\n[git]\n",
            ),
            (
                "[execution]\n[git]\nco_author = \"A <a@b>\"\n",
                "[execution]\nmode = \"auto\"\n[git]\nco_author = \"A <a@b>\"\n",
            ),
            ("[git]\n", "[git]\n\n[execution]\nmode = \"auto\"\n"),
            ("[execution]\n", "[execution]\nmode = \"auto\"\n"),
            (
                "[git]\nmode = \"x\"\n[execution]\nmode=\"review\"\n",
                "[git]\nmode = \"x\"\n[execution]\nmode = \"auto\"\n",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(
                with_execution_mode(text, ExecutionMode::Auto),
                *want,
                "{text:?}"
            );
        }
        let default = crate::config::default_toml("p", "A <a@example.com>");
        let set = with_execution_mode(&default, ExecutionMode::Auto);
        let c = ProjectConfig::parse(&set, "berth.toml").unwrap();
        assert_eq!(c.execution.mode, ExecutionMode::Auto);
        assert_eq!(set.lines().count(), default.lines().count());
    }
}
