//! `berth task create|ls`.

use berth_engine::{Actor, Engine};

use super::print_json;

#[derive(Debug, clap::Subcommand)]
pub enum TaskCommand {
    /// Create a task an agent of the project will claim.
    Create {
        #[arg(long)]
        project: String,
        #[arg(long)]
        title: String,
        #[arg(long)]
        json: bool,
    },
    /// List tasks.
    Ls {
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(engine: &Engine, cmd: TaskCommand) -> anyhow::Result<u8> {
    match cmd {
        TaskCommand::Create {
            project,
            title,
            json,
        } => {
            let t = engine
                .create_task(&project, &title, &Actor::current_user())
                .await?;
            if json {
                print_json(&t)?;
            } else {
                println!("task {} created in {}: {}", &t.id[..8], t.project, t.title);
            }
        }
        TaskCommand::Ls { project, json } => {
            let tasks = engine.tasks(project.as_deref()).await?;
            if json {
                print_json(&tasks)?;
            } else {
                for t in tasks {
                    println!(
                        "{}  {:<18} {:<10} {:<8} {}{}",
                        &t.id[..8],
                        t.status.as_str(),
                        t.project,
                        t.agent.as_deref().unwrap_or("-"),
                        t.title,
                        t.diagnosis.map(|d| format!("  ({d})")).unwrap_or_default()
                    );
                }
            }
        }
    }
    Ok(0)
}
