//! `berth prompt`, `berth sessions`, `berth queue`: a person's message for
//! an agent's session, the sessions, and the durable prompt queue (issue
//! 18); `berth agent turn` runs a `command` agent's program for its queue.
//! Thin: one engine call each, printed as text or `--json`.

use anyhow::Context as _;
use berth_engine::{Actor, AgentImpl, AgentName, Engine, NewPrompt, Prompt, Sent, Session};

use super::print_json;

#[derive(Debug, clap::Args)]
pub struct PromptArgs {
    /// The agent whose session takes it.
    pub agent: String,
    /// The message.
    pub text: String,
    /// The task whose session it is for (default: the agent's current task).
    #[arg(long)]
    pub task: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    /// Only this agent's sessions.
    pub agent: Option<String>,
    /// Open (or show) AGENT's primary session for this task; prompts
    /// waiting for one are then delivered to it.
    #[arg(long, value_name = "TASK", requires = "agent")]
    pub open: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct QueueArgs {
    /// Only this agent's queue.
    pub agent: Option<String>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct TurnArgs {
    pub agent: String,
    #[arg(long)]
    pub json: bool,
}

/// The argv of `--command` for `--impl command` (required there, refused
/// elsewhere), split as a POSIX shell would without running one.
pub fn command_argv(
    implementation: AgentImpl,
    command: Option<&str>,
) -> anyhow::Result<Option<Vec<String>>> {
    match (implementation, command) {
        (AgentImpl::Command, Some(line)) => {
            let argv = shlex::split(line)
                .with_context(|| format!("--command `{line}`: unbalanced quotes"))?;
            Ok(Some(argv))
        }
        (AgentImpl::Command, None) => {
            anyhow::bail!(
                "--impl command needs --command 'PROGRAM ARGS…' (with {{prompt_file}} or {{prompt}})"
            )
        }
        (_, Some(_)) => anyhow::bail!("--command is for --impl command"),
        (_, None) => Ok(None),
    }
}

/// `berth agent turn`: every deliverable prompt, one turn each.
pub async fn turns(engine: &Engine, a: TurnArgs) -> anyhow::Result<u8> {
    let agent = AgentName::new(a.agent.as_str())?;
    let mut turns = Vec::new();
    while let Some(t) = engine.run_command_turn(&agent).await? {
        if !a.json {
            let end = match (t.exit_code, t.timed_out) {
                (_, true) => "timed out".to_string(),
                (Some(c), false) => format!("exit {c}"),
                (None, false) => "killed".to_string(),
            };
            println!("prompt {} → {end} ({} ms)", short(&t.prompt), t.duration_ms);
            for line in t
                .stdout_tail
                .lines()
                .rev()
                .take(5)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
            {
                println!("    {line}");
            }
        }
        turns.push(t);
    }
    if a.json {
        print_json(&turns)?;
    } else if turns.is_empty() {
        println!(
            "{}: no deliverable prompt (`berth queue {}` says why)",
            a.agent, a.agent
        );
    }
    Ok(0)
}

pub async fn prompt(engine: &Engine, a: PromptArgs) -> anyhow::Result<u8> {
    let new = NewPrompt {
        task: a.task,
        ..NewPrompt::message(&a.agent, &a.text)
    };
    let sent = engine.send_prompt(new, &Actor::current_user()).await?;
    if a.json {
        print_json(&sent)?;
        return Ok(0);
    }
    let p = &sent.prompt;
    let what = match sent.sent {
        Sent::Queued => "queued",
        Sent::Coalesced => "coalesced into a pending prompt",
        Sent::Replaced => "replaced a pending prompt",
    };
    println!("prompt {} for {}: {what}", short(&p.id), p.agent);
    match (&p.reason, sent.deliverable) {
        (_, true) => println!("its session is promptable: delivered at the agent's next turn"),
        (Some(why), false) => println!("waiting: {why}"),
        (None, false) => {}
    }
    Ok(0)
}

pub async fn sessions(engine: &Engine, a: SessionsArgs) -> anyhow::Result<u8> {
    if let (Some(agent), Some(task)) = (&a.agent, &a.open) {
        let s = engine
            .open_session(agent, task, &Actor::current_user())
            .await?;
        if a.json {
            print_json(&[&s])?;
        } else {
            print_session(&s);
        }
        return Ok(0);
    }
    let list = engine.sessions(a.agent.as_deref()).await?;
    if a.json {
        print_json(&list)?;
        return Ok(0);
    }
    if list.is_empty() {
        println!("no sessions");
    }
    for s in &list {
        print_session(s);
    }
    Ok(0)
}

pub async fn queue(engine: &Engine, a: QueueArgs) -> anyhow::Result<u8> {
    let list = engine.prompt_queue(a.agent.as_deref()).await?;
    if a.json {
        print_json(&list)?;
        return Ok(0);
    }
    if list.is_empty() {
        println!("no pending prompts");
    }
    for p in &list {
        print_prompt(p);
    }
    Ok(0)
}

fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

fn print_session(s: &Session) {
    println!(
        "{}  {}  {}  task {}{}{}",
        short(&s.id),
        s.agent,
        s.status.as_str(),
        short(&s.task),
        if s.primary { "  primary" } else { "" },
        s.output_dir
            .as_ref()
            .map(|d| format!("  output {}", d.display()))
            .unwrap_or_default()
    );
}

fn print_prompt(p: &Prompt) {
    let first_line = p.body.lines().next().unwrap_or("");
    println!(
        "{}  {}  {}  {}  {}{}",
        short(&p.id),
        p.agent,
        p.status.as_str(),
        p.kind,
        first_line.chars().take(60).collect::<String>(),
        if p.coalesced > 0 {
            format!("  (+{} coalesced)", p.coalesced)
        } else {
            String::new()
        }
    );
    if let Some(why) = &p.reason {
        println!("    {why}");
    }
}
