//! `berth pr list|show|merge|close|export|checks|watch` (the review
//! feedback commands are `pr_review.rs`, the automation's `pr_auto.rs`).

use std::path::PathBuf;

use berth_engine::{Actor, CheckStatus, Engine, PrFeedback, ProposeStatus};

use super::{EXIT_PENDING, EXIT_REFUSED, print_json};

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
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
    /// The PR's checks on its current head (`[[checks]]` in berth.toml)
    /// and its conflicts with its base; `--run` runs the checks due first.
    /// Exits 1 when a check failed or the PR conflicts.
    Checks {
        id: String,
        /// Run the checks due on the current head (each head once).
        #[arg(long)]
        run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Run every open PR's checks on its current head, as `berth serve`
    /// does in the background; `--once` for one pass (else every
    /// `--every` seconds until interrupted).
    Watch {
        #[arg(long)]
        once: bool,
        #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
        every: u64,
        #[arg(long)]
        json: bool,
    },
    #[command(flatten)]
    Review(super::pr_review::PrReviewCommand),
    #[command(flatten)]
    Auto(super::pr_auto::PrAutoCommand),
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
        PrCommand::Checks { id, run, json } => {
            let feedback = if run {
                engine.run_pr_checks(&id).await?
            } else {
                engine.pr_feedback(&id).await?
            };
            if json {
                print_json(&feedback)?;
            } else {
                print_feedback(&feedback);
            }
            let failed = feedback
                .checks
                .iter()
                .any(|c| c.status == CheckStatus::Failure);
            Ok(u8::from(failed || !feedback.conflicts.is_empty()))
        }
        PrCommand::Watch { once, every, json } => loop {
            let pass = engine.watch_prs().await?;
            if json {
                print_json(&pass)?;
            } else {
                for f in &pass {
                    print_feedback(f);
                }
            }
            if once {
                return Ok(0);
            }
            tokio::time::sleep(std::time::Duration::from_secs(every)).await;
        },
        PrCommand::Review(c) => super::pr_review::run(engine, c).await,
        PrCommand::Auto(c) => super::pr_auto::run(engine, c).await,
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

fn print_feedback(f: &PrFeedback) {
    match &f.head {
        Some(head) => println!(
            "PR #{} ({}) at {}",
            f.pr,
            f.status.as_str(),
            &head[..head.len().min(12)]
        ),
        None => println!(
            "PR #{} ({}): its branch is gone from the forge",
            f.pr,
            f.status.as_str()
        ),
    }
    if f.checks.is_empty() {
        println!("  no checks (add [[checks]] to the project's berth.toml)");
    }
    for c in &f.checks {
        let code = c
            .exit_code
            .map(|c| format!(" (exit {c})"))
            .unwrap_or_default();
        println!("  {:<12} {}{code}", c.status.as_str(), c.name);
        if c.status == CheckStatus::Failure {
            for line in c
                .output_tail
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                println!("      {line}");
            }
        }
    }
    if f.conflicts.is_empty() {
        println!("  merges cleanly into {}", f.base);
    } else {
        println!("  conflicts with {} in: {}", f.base, f.conflicts.join(", "));
    }
    println!(
        "  {} unresolved thread(s), {}/{} approvals{}; {}",
        f.unresolved_threads,
        f.approvals,
        f.approvals_required,
        if f.review_requested {
            ", review requested"
        } else {
            ""
        },
        if f.ready {
            "ready to merge"
        } else {
            "not ready"
        }
    );
}
