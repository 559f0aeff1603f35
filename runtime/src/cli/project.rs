//! `berth project add|ls|set-mode|sync|rm`.

use std::path::PathBuf;

use berth_engine::{Actor, Engine, NewProject, ProjectName};

use super::print_json;

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum ProjectCommand {
    /// Import a local git repository as a project, or use a git server as
    /// its forge.
    Add {
        name: String,
        /// The repository to import (its directory).
        #[arg(
            long,
            required_unless_present = "forge_url",
            conflicts_with = "forge_url"
        )]
        from: Option<PathBuf>,
        /// A git server that is the project's forge (smart HTTP,
        /// `http://HOST:PORT/PATH`): this host keeps a mirror of it, and
        /// berth pushes agents' branches there.
        #[arg(long)]
        forge_url: Option<String>,
        /// The branch PRs target (default: the repository's current branch).
        #[arg(long)]
        base: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// List projects.
    Ls {
        #[arg(long)]
        json: bool,
    },
    /// Fast-forward the forge's base branch from the repository the project
    /// was imported from (refusing divergence; nothing else changes).
    Sync {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Set the project's execution mode (`[execution] mode` in its berth.toml).
    SetMode {
        name: String,
        #[arg(value_enum)]
        mode: super::task::ExecutionModeArg,
        #[arg(long)]
        json: bool,
    },
    /// Remove a project: every agent as `berth agent rm` does, then its
    /// forge and state directories; its tasks are archived. Refuses while
    /// its forge holds saved work (`berth saved ls`), which would go with
    /// it. The repository it was imported from is never touched.
    Rm {
        name: String,
        /// Remove even with saved work, and save nothing from its agents.
        #[arg(long)]
        discard: bool,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(engine: &Engine, cmd: ProjectCommand) -> anyhow::Result<u8> {
    match cmd {
        ProjectCommand::Add {
            name,
            from,
            forge_url,
            base,
            json,
        } => {
            let from = from
                .map(|from| std::fs::canonicalize(&from).unwrap_or(from))
                .unwrap_or_default();
            let p = engine
                .add_project(
                    NewProject {
                        name: ProjectName::new(name)?,
                        from,
                        base,
                        forge_url,
                    },
                    &Actor::current_user(),
                )
                .await?;
            // The project is added whatever its devcontainer.json holds: a
            // broken one is said, and read again by `image build --project`.
            let devcontainer = engine.read_devcontainer(&p.name).await;
            if json {
                let mut out = serde_json::json!({
                    "project": p,
                    "config": engine.state().project_config(&p.name),
                    "rules": engine.state().project_rules(&p.name),
                });
                if !matches!(
                    devcontainer,
                    Ok(berth_engine::devcontainer::DevcontainerRead::Absent { .. })
                ) {
                    out["devcontainer"] = super::devcontainer::json(&devcontainer);
                }
                print_json(&out)?;
                return Ok(0);
            }
            println!(
                "project {} added: base branch {}, forge {}",
                p.name,
                p.base_branch,
                p.forge.display()
            );
            println!(
                "configuration: {} and {}",
                engine.state().project_config(&p.name).display(),
                engine.state().project_rules(&p.name).display()
            );
            super::devcontainer::print(&p.name, &devcontainer);
        }
        ProjectCommand::Sync { name, json } => {
            let s = engine.sync_project(&name, &Actor::current_user()).await?;
            if json {
                print_json(&s)?;
            } else {
                let short = |c: &str| c.get(..12).unwrap_or(c).to_string();
                match s.status {
                    "fast_forwarded" => println!(
                        "project {}: {} fast-forwarded {} → {} from {}",
                        s.project,
                        s.base_branch,
                        short(&s.before),
                        short(&s.after),
                        s.source
                    ),
                    "rewritten_on_server" => println!(
                        "project {}: {} was rewritten on the forge server {}: {} → {} (the mirror follows the server)",
                        s.project,
                        s.base_branch,
                        s.source,
                        short(&s.before),
                        short(&s.after)
                    ),
                    "forge_ahead" => println!(
                        "project {}: nothing new in {}; the forge's {} is ahead (merged PRs): take them out with `berth pr export PR`",
                        s.project, s.source, s.base_branch
                    ),
                    _ => println!(
                        "project {}: {} is up to date with {} at {}",
                        s.project,
                        s.base_branch,
                        s.source,
                        short(&s.after)
                    ),
                }
            }
        }
        ProjectCommand::SetMode { name, mode, json } => {
            engine
                .set_project_mode(&name, mode.mode(), &Actor::current_user())
                .await?;
            if json {
                print_json(&serde_json::json!({ "project": name, "mode": mode.mode().as_str() }))?;
                return Ok(0);
            }
            println!(
                "project {name}: execution mode {} (tasks without their own mode, from their next run)",
                mode.mode().as_str()
            );
        }
        ProjectCommand::Rm {
            name,
            discard,
            json,
        } => {
            let r = engine
                .remove_project(&name, discard, &Actor::current_user())
                .await?;
            if json {
                print_json(&r)?;
                return Ok(0);
            }
            for a in &r.agents {
                super::agent::print_agent_removal(a);
            }
            println!(
                "project {} removed: forge {} gone, tasks archived: {}; its source repository is untouched",
                r.project,
                r.forge.display(),
                r.archived.len()
            );
        }
        ProjectCommand::Ls { json } => {
            let projects = engine.projects().await?;
            if json {
                print_json(&projects)?;
            } else if projects.is_empty() {
                println!("no projects: add one with `berth project add NAME --from PATH`");
            } else {
                for p in projects {
                    println!(
                        "{:<20} base {:<12} from {}",
                        p.name, p.base_branch, p.source
                    );
                }
            }
        }
    }
    Ok(0)
}
