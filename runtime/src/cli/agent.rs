//! `berth agent activate|auto-mode|resume|run|rm` and `berth autonomy set|show`.

use berth_engine::{Actor, AgentImpl, AgentName, AgentRemoval, AgentRun, Engine, ProjectName};
use berth_policy::Approval;

use super::print_json;

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ImplArg {
    Real,
    Noop,
    /// An agent CLI berth starts for each delivered prompt (`--command`).
    Command,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Switch {
    On,
    Off,
}

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum AgentCommand {
    /// Create an agent in a project (or change its implementation) and seed
    /// auto_approve for git_commit, git_push, pr_open, pr_comment,
    /// pr_resolve_thread and file_read.
    Activate {
        agent: String,
        #[arg(long)]
        project: String,
        #[arg(long = "impl", value_enum, default_value = "real")]
        implementation: ImplArg,
        /// `--impl command`: the program and its arguments, split as a shell
        /// would (no shell runs it); `{prompt}`, `{prompt_file}`, `{task}`,
        /// `{workdir}`, `{session_id}` are filled in for each prompt, and
        /// `{mcp_config}` (a Claude Code `--mcp-config` file) or `{mcp_url}`
        /// name berth's MCP tools, served for the turn.
        #[arg(long, value_name = "ARGV")]
        command: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Auto mode: writes the wildcard `*` as auto_approve (on) or require_approval (off).
    AutoMode {
        agent: String,
        switch: Switch,
        #[arg(long)]
        json: bool,
    },
    /// Resume an agent the circuit breaker paused.
    Resume {
        agent: String,
        #[arg(long)]
        json: bool,
    },
    /// Drive a noop agent's loop in the foreground.
    Run {
        agent: String,
        /// Return when it cannot go on (no task, waiting for a person, in review).
        #[arg(long)]
        until_idle: bool,
        #[arg(long)]
        json: bool,
    },
    /// Run a `command` agent's program for each deliverable prompt of its
    /// queue, one turn at a time, until none is left.
    Turn(super::prompts::TurnArgs),
    /// Remove an agent: its berth goes down (its uncommitted and unpushed
    /// work saved into the forge first, as `berth down` does), then its
    /// repository, container, disk and records; its pending actions are
    /// denied. `berth agent activate` makes it again, with a fresh berth.
    Rm {
        agent: String,
        /// Refuse unless the agent is in this project.
        #[arg(long)]
        project: Option<String>,
        /// Save nothing: what the worktree held that the forge does not is lost.
        #[arg(long)]
        discard: bool,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum AutonomyCommand {
    /// Set the mode of an action type, or of `*` (the wildcard).
    Set {
        agent: String,
        /// An action type (terminal, file_read, git_commit, …) or `*`.
        action_type: String,
        /// auto_approve | require_approval | deny
        mode: String,
        #[arg(long)]
        json: bool,
    },
    /// Remove the mode written for an action type (or `*`): it resolves as if never set.
    Unset {
        agent: String,
        /// An action type (terminal, file_read, git_commit, …) or `*`.
        action_type: String,
        #[arg(long)]
        json: bool,
    },
    /// What the agent's autonomy resolves to, what auto mode lifts, what still asks.
    Show {
        agent: String,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(engine: &Engine, cmd: AgentCommand) -> anyhow::Result<u8> {
    let user = Actor::current_user();
    match cmd {
        AgentCommand::Activate {
            agent,
            project,
            implementation,
            command,
            json,
        } => {
            let i = match implementation {
                ImplArg::Real => AgentImpl::Real,
                ImplArg::Noop => AgentImpl::Noop,
                ImplArg::Command => AgentImpl::Command,
            };
            let argv = super::prompts::command_argv(i, command.as_deref())?;
            let (agent, project) = (AgentName::new(agent)?, ProjectName::new(project)?);
            let mut a = engine.activate_agent(&agent, &project, i, &user).await?;
            if let Some(argv) = argv {
                a = engine.set_agent_command(&agent, argv, &user).await?;
                // Said plainly, whatever the output format.
                eprintln!("note: {}", berth_engine::command::OPEN_NETWORK_NOTE);
                // What should change in the project's berth.toml (an old
                // `[agent] env` form), as `berth up` says it too.
                if let Ok((config, _)) = engine.load_project_files(&a.project) {
                    for w in &config.warnings {
                        eprintln!("berth: warning: {w}");
                    }
                }
            }
            if json {
                print_json(&a)?;
                return Ok(0);
            }
            println!(
                "agent {} ({}) active in project {} as {}",
                a.name,
                a.implementation.as_str(),
                a.project,
                a.identity()
            );
        }
        AgentCommand::Resume { agent, json } => {
            let a = engine.resume_agent(&agent, &user).await?;
            if json {
                print_json(&a)?;
                return Ok(0);
            }
            println!("agent {} resumed: {}", a.name, a.status.as_str());
        }
        AgentCommand::AutoMode {
            agent,
            switch,
            json,
        } => {
            let on = matches!(switch, Switch::On);
            engine.set_auto_mode(&agent, on, &user).await?;
            if json {
                let note = match on {
                    true => engine.autonomy_report(&agent).await?.runner_host,
                    false => None,
                };
                print_json(&serde_json::json!({
                    "agent": agent,
                    "auto_mode": on,
                    "note": note,
                }))?;
            } else if on {
                println!(
                    "auto mode on for {agent}: `*` = auto_approve. See `berth autonomy show {agent}` for what it lifts and what still asks."
                );
                if let Some(note) = engine.autonomy_report(&agent).await?.runner_host {
                    println!("{note}");
                }
            } else {
                println!(
                    "auto mode off for {agent}: `*` = require_approval; the path scope limit applies again."
                );
            }
        }
        AgentCommand::Rm {
            agent,
            project,
            discard,
            json,
        } => {
            let r = engine
                .remove_agent(&agent, project.as_deref(), discard, &user)
                .await?;
            if json {
                print_json(&r)?;
                return Ok(0);
            }
            print_agent_removal(&r);
        }
        AgentCommand::Turn(a) => return super::prompts::turns(engine, a).await,
        AgentCommand::Run {
            agent,
            until_idle,
            json,
        } => {
            let report = engine
                .run_agent(&AgentName::new(agent.as_str())?, until_idle)
                .await?;
            if json {
                print_json(&report)?;
            } else {
                for (task, state) in &report.delivered {
                    println!("task {} → {state}", &task[..8.min(task.len())]);
                }
                match &report.stopped {
                    AgentRun::Idle => println!("{agent}: idle, no task to claim"),
                    AgentRun::AwaitingApproval { action, step } => println!(
                        "{agent}: awaiting approval of {step} {}: `berth approve {}` then run the agent again",
                        &action[..8],
                        &action[..8]
                    ),
                    AgentRun::InReview { task } => {
                        println!("{agent}: task {} in review: `berth pr list`", &task[..8])
                    }
                    AgentRun::Blocked { task, diagnosis } => {
                        println!("{agent}: task {} blocked: {diagnosis}", &task[..8])
                    }
                    AgentRun::Paused => println!("{agent}: paused"),
                }
            }
        }
    }
    Ok(0)
}

/// What removing one agent did, in words.
pub(super) fn print_agent_removal(r: &AgentRemoval) {
    println!("agent {} removed from project {}", r.agent, r.project);
    if let Some(container) = &r.container {
        println!("  container {container} removed");
    }
    match &r.saved {
        Some(saved) => super::berths::print_saved(saved, &r.project),
        None if r.discarded => println!("  its work was discarded (--discard)"),
        None => {}
    }
    if !r.denied.is_empty() {
        let ids: Vec<&str> = r.denied.iter().map(|i| &i[..8.min(i.len())]).collect();
        println!("  its pending actions were denied: {}", ids.join(", "));
    }
    if !r.unassigned.is_empty() {
        let ids: Vec<&str> = r.unassigned.iter().map(|i| &i[..8.min(i.len())]).collect();
        println!("  its tasks no longer name it: {}", ids.join(", "));
    }
}

pub async fn run_autonomy(engine: &Engine, cmd: AutonomyCommand) -> anyhow::Result<u8> {
    match cmd {
        AutonomyCommand::Set {
            agent,
            action_type,
            mode,
            json,
        } => {
            let m = Approval::parse(&mode).ok_or_else(|| {
                anyhow::anyhow!("invalid mode `{mode}`: use auto_approve, require_approval or deny")
            })?;
            engine
                .set_autonomy(&agent, &action_type, m, &Actor::current_user())
                .await?;
            let note = match action_type == berth_policy::autonomy::WILDCARD
                && m == Approval::AutoApprove
            {
                true => engine.autonomy_report(&agent).await?.runner_host,
                false => None,
            };
            if json {
                print_json(&serde_json::json!({
                    "agent": agent,
                    "action_type": action_type,
                    "mode": m.as_str(),
                    "note": note,
                }))?;
            } else {
                println!("{agent}: {action_type} = {}", m.as_str());
                if let Some(note) = note {
                    println!("{note}");
                }
            }
        }
        AutonomyCommand::Unset {
            agent,
            action_type,
            json,
        } => {
            let removed = engine
                .unset_autonomy(&agent, &action_type, &Actor::current_user())
                .await?;
            if json {
                print_json(&serde_json::json!({
                    "agent": agent,
                    "action_type": action_type,
                    "removed": removed,
                }))?;
            } else if removed {
                let now = engine.autonomy(&agent).await?.resolve(&action_type);
                println!(
                    "{agent}: {action_type} unset; it now resolves to {}",
                    now.mode.as_str()
                );
            } else {
                println!("{agent}: nothing was written for {action_type}: nothing to unset");
            }
        }
        AutonomyCommand::Show { agent, json } => {
            let r = engine.autonomy_report(&agent).await?;
            if json {
                print_json(&r)?;
                return Ok(0);
            }
            println!("autonomy of {agent}:");
            if r.modes.is_empty() {
                println!("  (nothing written: every type resolves to require_approval by default)");
            }
            for (k, m) in &r.modes {
                println!("  {k:<20} {}", m.as_str());
            }
            println!("resolved:");
            for (k, res) in &r.resolved {
                println!(
                    "  {k:<20} {:<17} ({})",
                    res.mode.as_str(),
                    res.origin.as_str()
                );
            }
            if r.auto_mode {
                println!("auto mode is ON. It lifts:");
                for l in &r.lifts {
                    println!("  - {l}");
                }
            } else {
                println!(
                    "auto mode is off (`berth agent auto-mode {agent} on` lifts the path scope limit and the partial allow)."
                );
            }
            println!("still asks (or denies) whatever the switch says:");
            for s in &r.still_asks {
                println!("  - {s}");
            }
            if let Some(note) = &r.runner_host {
                println!("on this machine: {note}");
            }
        }
    }
    Ok(0)
}
