//! `berth task create|ls|show|run|set-mode|approve|reject|archive|rm`.

use berth_engine::{
    Actor, Engine, ExecutionMode, NewTask, PipelineEnd, PipelineReport, PipelineStep, TaskSource,
};

use super::print_json;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ExecutionModeArg {
    Auto,
    Review,
}

impl ExecutionModeArg {
    pub fn mode(self) -> ExecutionMode {
        match self {
            ExecutionModeArg::Auto => ExecutionMode::Auto,
            ExecutionModeArg::Review => ExecutionMode::Review,
        }
    }
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum TaskExecutionModeArg {
    Auto,
    Review,
    /// The project's mode.
    Inherit,
}

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum TaskCommand {
    /// Create a task: an agent task, or with `--step` a pipeline task.
    Create {
        #[arg(long)]
        project: String,
        #[arg(long)]
        title: String,
        /// This task's execution mode (default: the project's).
        #[arg(long, value_enum)]
        mode: Option<ExecutionModeArg>,
        /// A pipeline step: a command run in the agent's berth (repeat, in order).
        #[arg(long = "step", value_name = "CMD")]
        steps: Vec<String>,
        /// Steps may write /work (otherwise they run read-only).
        #[arg(long)]
        write: bool,
        #[arg(long)]
        json: bool,
    },
    /// List tasks (not the archived ones, unless `--all`).
    Ls {
        #[arg(long)]
        project: Option<String>,
        /// Archived tasks too.
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// A task and, for a pipeline task, its run.
    Show {
        task: String,
        #[arg(long)]
        json: bool,
    },
    /// Run (or resume) a pipeline task in its agent's berth.
    Run {
        task: String,
        /// The agent whose berth runs the steps (default: the task's, else
        /// the project's only agent).
        #[arg(long)]
        agent: Option<String>,
        /// Run a blocked task's pipeline over from its first step (never
        /// done on its own: a blocked step may have been interrupted half-done).
        #[arg(long)]
        restart: bool,
        #[arg(long)]
        json: bool,
    },
    /// Set a task's own execution mode, or `inherit` the project's.
    SetMode {
        task: String,
        mode: TaskExecutionModeArg,
        #[arg(long)]
        json: bool,
    },
    /// Approve a pipeline task in review: done, then its followups.
    Approve {
        task: String,
        #[arg(long)]
        json: bool,
    },
    /// Return a pipeline task in review, with the reason.
    Reject {
        task: String,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        json: bool,
    },
    /// Archive an ended task (done, returned, blocked): it leaves `task ls`
    /// (`task ls --all` still shows it); its history stays.
    Archive {
        task: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a task that never started (todo, no action or run names it);
    /// any other is archived instead (`task archive`).
    Rm {
        task: String,
        #[arg(long)]
        json: bool,
    },
}

/// Exit codes of `berth task run`: done or in review → 0; waiting for a
/// person → 3; blocked → 1.
fn run_exit(end: &PipelineEnd) -> u8 {
    match end {
        PipelineEnd::Done | PipelineEnd::InReview => 0,
        PipelineEnd::Waiting { .. } => super::EXIT_PENDING,
        PipelineEnd::Blocked { .. } => 1,
    }
}

fn print_report(r: &PipelineReport) {
    let t = &r.task[..8];
    if let Some(note) = &r.access_note {
        println!("note: read-only steps ran with /work writable: {note}");
    }
    match &r.end {
        PipelineEnd::Done => println!("task {t} done ({} mode, run {})", r.mode.as_str(), r.run),
        PipelineEnd::InReview => println!(
            "task {t} in review: `berth task approve {t}` or `berth task reject {t} --reason R`"
        ),
        PipelineEnd::Waiting { action, step } => println!(
            "task {t} waits at step {step}: `berth approve {}` then `berth task run {t}`",
            &action[..8]
        ),
        PipelineEnd::Blocked { diagnosis } => println!("task {t} blocked: {diagnosis}"),
    }
    for f in &r.followups {
        println!("followup task {} created", &f[..8]);
    }
}

pub async fn run(engine: &Engine, cmd: TaskCommand) -> anyhow::Result<u8> {
    let user = Actor::current_user();
    match cmd {
        TaskCommand::Create {
            project,
            title,
            mode,
            steps,
            write,
            json,
        } => {
            let new = NewTask {
                execution_mode: mode.map(ExecutionModeArg::mode),
                steps: (!steps.is_empty()).then(|| {
                    steps
                        .into_iter()
                        .map(|command| PipelineStep {
                            command,
                            write: false,
                        })
                        .collect()
                }),
                write,
                source: TaskSource::User,
                ..NewTask::new(&project, &title)
            };
            let t = engine.create_task_with(new, &user).await?;
            if json {
                print_json(&t)?;
            } else {
                let kind = match &t.steps {
                    Some(s) => format!(" (pipeline of {} steps)", s.len()),
                    None => String::new(),
                };
                println!(
                    "task {} created in {}: {}{kind}",
                    &t.id[..8],
                    t.project,
                    t.title
                );
            }
        }
        TaskCommand::Ls { project, all, json } => {
            let mut tasks = engine.tasks(project.as_deref()).await?;
            if !all {
                tasks.retain(|t| t.archived_at.is_none());
            }
            if json {
                print_json(&tasks)?;
            } else {
                for t in tasks {
                    println!(
                        "{}  {:<18} {:<9} {:<10} {:<8} {}{}{}",
                        &t.id[..8],
                        match t.archived_at {
                            Some(_) => format!("{} (archived)", t.status.as_str()),
                            None => t.status.as_str().to_string(),
                        },
                        t.kind().as_str(),
                        t.project,
                        t.agent.as_deref().unwrap_or("-"),
                        t.title,
                        if t.tags.is_empty() {
                            String::new()
                        } else {
                            format!("  [{}]", t.tags.join(", "))
                        },
                        t.diagnosis.map(|d| format!("  ({d})")).unwrap_or_default()
                    );
                }
            }
        }
        TaskCommand::Show { task, json } => {
            let t = engine.task(&task).await?;
            let run = engine.pipeline_state(&t.id).await?;
            if json {
                print_json(&serde_json::json!({ "task": t, "run": run }))?;
            } else {
                println!("{}  {}  {}", t.id, t.status.as_str(), t.title);
                println!(
                    "mode: {}",
                    t.execution_mode
                        .map(|m| m.as_str())
                        .unwrap_or("inherit (the project's)")
                );
                for (i, s) in t.steps.iter().flatten().enumerate() {
                    println!("step {}: {}", i + 1, s.command);
                }
                if let Some(r) = run {
                    println!("run: {r}");
                }
                if let Some(d) = &t.diagnosis {
                    println!("diagnosis: {d}");
                }
            }
        }
        TaskCommand::Run {
            task,
            agent,
            restart,
            json,
        } => {
            let r = engine
                .run_pipeline_with(&task, agent.as_deref(), restart, &user)
                .await?;
            if json {
                print_json(&r)?;
            } else {
                print_report(&r);
            }
            return Ok(run_exit(&r.end));
        }
        TaskCommand::SetMode { task, mode, json } => {
            let m = match mode {
                TaskExecutionModeArg::Auto => Some(ExecutionMode::Auto),
                TaskExecutionModeArg::Review => Some(ExecutionMode::Review),
                TaskExecutionModeArg::Inherit => None,
            };
            let t = engine.set_task_mode(&task, m, &user).await?;
            if json {
                print_json(&t)?;
                return Ok(0);
            }
            println!(
                "task {}: mode {} (applies from its next run)",
                &t.id[..8],
                m.map(|m| m.as_str()).unwrap_or("inherit")
            );
        }
        TaskCommand::Approve { task, json } => {
            let r = engine.approve_task(&task, &user).await?;
            if json {
                print_json(&r)?;
            } else {
                println!("task {} approved: done", &r.task[..8]);
                for f in &r.followups {
                    println!("followup task {} created", &f[..8]);
                }
            }
        }
        TaskCommand::Archive { task, json } => {
            let t = engine.archive_task(&task, &user).await?;
            if json {
                print_json(&t)?;
                return Ok(0);
            }
            println!(
                "task {} ({}) archived: `berth task ls --all` shows it",
                &t.id[..8],
                t.status.as_str()
            );
        }
        TaskCommand::Rm { task, json } => {
            let t = engine.remove_task(&task, &user).await?;
            if json {
                print_json(&t)?;
                return Ok(0);
            }
            println!("task {} removed: {}", &t.id[..8], t.title);
        }
        TaskCommand::Reject { task, reason, json } => {
            let t = engine.reject_task(&task, &reason, &user).await?;
            if json {
                print_json(&t)?;
                return Ok(0);
            }
            println!("task {} returned: {reason}", &t.id[..8]);
        }
    }
    Ok(0)
}
