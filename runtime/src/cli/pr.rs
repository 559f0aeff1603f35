//! `berth pr list|show|merge|close|export`.

use std::path::PathBuf;

use berth_engine::{Actor, Engine, ProposeStatus};

use super::{EXIT_PENDING, EXIT_REFUSED, print_json};

#[derive(Debug, clap::Subcommand)]
pub enum PrCommand {
    List {
        #[arg(long)]
        project: Option<String>,
        #[arg(long)]
        json: bool,
    },
    Show {
        /// The PR number (or id prefix).
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Propose merging the PR into its base (a git_merge action: into a
    /// protected branch it always waits for `berth approve`).
    Merge {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Fetch the PR's branch (merged: its merge commit) into a repository as
    /// `refs/berth/pr/<number>`, leaving its checkout, index and branches alone.
    Export {
        /// The PR number (or id prefix).
        id: String,
        /// The repository to fetch into (default: the project's source).
        #[arg(long)]
        to: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Close the PR without merging: its task is returned.
    Close {
        id: String,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(engine: &Engine, cmd: PrCommand) -> anyhow::Result<u8> {
    let user = Actor::current_user();
    match cmd {
        PrCommand::List { project, json } => {
            let prs = engine.prs(project.as_deref()).await?;
            if json {
                print_json(&prs)?;
            } else if prs.is_empty() {
                println!("no PRs");
            } else {
                for p in prs {
                    println!(
                        "#{:<4} {:<7} {:<10} {:<8} {} → {}  {}",
                        p.number,
                        p.status.as_str(),
                        p.project,
                        p.agent,
                        p.branch,
                        p.base,
                        p.title
                    );
                }
            }
            Ok(0)
        }
        PrCommand::Show { id, json } => {
            let p = engine.pr(&id).await?;
            if json {
                print_json(&p)?;
            } else {
                println!(
                    "PR #{} ({}) in {}: {}",
                    p.number,
                    p.status.as_str(),
                    p.project,
                    p.title
                );
                println!("  {} → {} at {}", p.branch, p.base, p.head);
                println!(
                    "  by {} for task {}",
                    p.agent,
                    p.task.as_deref().unwrap_or("-")
                );
                if let Some(c) = &p.merge_commit {
                    println!("  merged as {c}");
                }
            }
            Ok(0)
        }
        PrCommand::Merge { id, json } => {
            let proposed = engine.merge_pr(&id, &user).await?;
            if json {
                print_json(&proposed)?;
            }
            Ok(match &proposed.status {
                ProposeStatus::Executed { outcome } if outcome.succeeded => {
                    if !json {
                        println!("merged");
                    }
                    0
                }
                ProposeStatus::Executed { outcome } => {
                    eprintln!(
                        "berth: merge failed: {}",
                        outcome.diagnostic.as_deref().unwrap_or("failed")
                    );
                    1
                }
                ProposeStatus::Pending { reason } => {
                    if !json {
                        println!(
                            "merge pending ({reason}): approve with `berth approve {}`",
                            &proposed.id[..8]
                        );
                    }
                    EXIT_PENDING
                }
                ProposeStatus::Refused { reason } => {
                    eprintln!("berth: merge refused: {reason}");
                    EXIT_REFUSED
                }
            })
        }
        PrCommand::Export { id, to, json } => {
            let to = to.map(|d| std::fs::canonicalize(&d).unwrap_or(d));
            let e = engine.export_pr(&id, to.as_deref(), &user).await?;
            if json {
                print_json(&e)?;
            } else {
                println!(
                    "PR #{} ({}) exported to {} as {} at {}",
                    e.pr,
                    e.status.as_str(),
                    e.repo.display(),
                    e.refname,
                    e.commit
                );
                println!("  look at it: {}", e.show);
                println!("  merge it:   {}", e.merge);
            }
            Ok(0)
        }
        PrCommand::Close { id, reason, json } => {
            let p = engine.close_pr(&id, &user, reason.as_deref()).await?;
            if json {
                print_json(&p)?;
            } else {
                println!("PR #{} closed; its task was returned", p.number);
            }
            Ok(0)
        }
    }
}
