//! `berth saved ls|drop`: the work `berth down` saved into the forge before
//! recycling a worktree, kept until a person drops it.

use berth_engine::Engine;

use super::print_json;

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum SavedCommand {
    /// List the saved refs and how to fetch them.
    Ls {
        /// Only this project's.
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Drop one saved ref (its commits go with git's next collection).
    Drop {
        project: String,
        /// `refs/berth/saved/<agent>/<time>`, or the part after `saved/`.
        refname: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(engine: &Engine, c: SavedCommand) -> anyhow::Result<u8> {
    match c {
        SavedCommand::Ls { project, json } => {
            let saved = engine.saved_work(project.as_deref()).await?;
            if json {
                print_json(&saved)?;
                return Ok(0);
            }
            if saved.is_empty() {
                println!("no saved work");
            }
            for s in saved {
                println!(
                    "{} {} {}\n  git fetch {} {}",
                    s.project,
                    s.refname,
                    s.commit,
                    s.forge.display(),
                    s.refname
                );
            }
            Ok(0)
        }
        SavedCommand::Drop {
            project,
            refname,
            json,
        } => {
            let dropped = engine.drop_saved_work(&project, &refname).await?;
            if json {
                print_json(&serde_json::json!({
                    "project": project,
                    "ref": refname,
                    "dropped": dropped,
                }))?;
                return Ok(if dropped { 0 } else { 1 });
            }
            if dropped {
                println!("dropped {refname} from {project}'s forge");
                Ok(0)
            } else {
                eprintln!("no saved ref {refname} in {project}'s forge (see `berth saved ls`)");
                Ok(1)
            }
        }
    }
}
