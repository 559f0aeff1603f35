//! `berth actions|approve|deny|cancel`.

use berth_engine::{ActionFilter, ActionRecord, ActionResult, Actor, Approval, Engine};

use super::print_json;

#[derive(Debug, clap::Args)]
pub struct ActionsArgs {
    /// Only the actions waiting for a person.
    #[arg(long)]
    pending: bool,
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ApproveArgs {
    /// The action id (or a unique prefix of it).
    id: String,
    /// Also add an allow rule per segment to the project's permissions.json
    /// (never for shells, interpreters, wrappers or privileged commands).
    #[arg(long)]
    always: bool,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ResolveArgs {
    /// The choice's id (or a unique prefix of it), as `berth actions` lists it.
    id: String,
    /// rerun | manual_task | skip
    choice: String,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct RetryArgs {
    /// The interrupted action's id (or a unique prefix of it).
    id: String,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct DenyArgs {
    id: String,
    #[arg(long)]
    reason: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct CancelArgs {
    /// The executing action's id (or a unique prefix of it).
    id: String,
    #[arg(long)]
    json: bool,
}

fn describe(a: &ActionRecord) -> String {
    match &a.action {
        berth_policy::Action::Terminal { command } => format!("terminal: {command}"),
        berth_policy::Action::FileRead { path } => format!("file_read {path}"),
        berth_policy::Action::FileWrite { path } => format!("file_write {path}"),
        berth_policy::Action::GitPush { branch } => format!("git_push {branch}"),
        berth_policy::Action::GitMerge { target } => format!("git_merge into {target}"),
        other => other.kind().to_string(),
    }
}

pub async fn list(engine: &Engine, a: ActionsArgs) -> anyhow::Result<u8> {
    let actions = engine
        .actions(&ActionFilter {
            pending_only: a.pending,
            agent: a.agent,
            ..ActionFilter::default()
        })
        .await?;
    let choices = engine.choices(a.pending).await?;
    if a.json {
        print_json(&actions)?;
        return Ok(0);
    }
    for c in &choices {
        println!(
            "{}  choice {:<9} {:<10} followup \"{}\" blocked by permissions (task {}){}",
            &c.id[..8],
            c.status,
            c.agent.as_deref().unwrap_or("-"),
            c.item.title,
            &c.task[..8],
            match &c.choice {
                Some(ch) => format!(": {ch}"),
                None => format!(": `berth resolve {} {}`", &c.id[..8], c.options.join("|")),
            }
        );
    }
    if actions.is_empty() {
        println!(
            "{}",
            if a.pending {
                "no pending actions"
            } else {
                "no actions"
            }
        );
    }
    for x in actions {
        println!(
            "{}  {:<11} {:<10} {:<15} {}",
            &x.id[..8],
            x.status.as_str(),
            x.agent,
            x.decision.stage.as_str(),
            describe(&x)
        );
        if x.status == berth_engine::ActionStatus::Pending {
            println!(
                "          why: {}",
                x.hold_reason.as_deref().unwrap_or(&x.decision.reason)
            );
            if let Some(r) = &x.resolved_path {
                println!("          acts on (host): {r}");
            }
            for (i, s) in x.decision.segments.iter().enumerate() {
                let outside: Vec<&str> = s
                    .paths
                    .iter()
                    .filter(|p| !p.location.in_scope())
                    .map(|p| p.written.as_str())
                    .collect();
                println!(
                    "          segment {}: {}{}",
                    i + 1,
                    s.argv.join(" "),
                    if outside.is_empty() {
                        String::new()
                    } else {
                        format!("  (outside scope: {})", outside.join(", "))
                    }
                );
            }
        }
    }
    Ok(0)
}

pub async fn approve(engine: &Engine, a: ApproveArgs) -> anyhow::Result<u8> {
    let (sink, printer) = match a.json {
        true => (None, None),
        false => {
            let (sink, printer) = super::live_output::printer();
            (Some(sink), Some(printer))
        }
    };
    let approval = engine
        .approve_anywhere(&a.id, &Actor::current_user(), a.always, sink)
        .await?;
    if let Some(p) = printer {
        p.finish().await;
    }
    let approved = match approval {
        Approval::Executed(approved) => approved,
        // Another worker holds the agent: recorded for it to run.
        Approval::Routed(routed) => {
            if a.json {
                print_json(&routed)?;
            } else {
                println!("{} {}", &routed.id[..8], routed.message);
            }
            return Ok(0);
        }
    };
    if a.json {
        print_json(&approved)?;
        return Ok(if approved.outcome.succeeded { 0 } else { 1 });
    }
    for r in &approved.rules {
        match (&r.pattern, &r.skipped) {
            (Some(p), _) => println!("allow rule added: \"{p}\""),
            (None, Some(why)) => println!("no rule for `{}`: {why}", r.argv.join(" ")),
            _ => {}
        }
    }
    let id = &approved.id[..8];
    if approved.outcome.succeeded {
        match &approved.outcome.result {
            Some(ActionResult::Terminal { exit_code, .. }) => {
                println!("{id} approved and executed (exit {exit_code})")
            }
            Some(ActionResult::FileRead { content, .. }) => print!("{content}"),
            _ => println!("{id} approved and executed"),
        }
        Ok(0)
    } else {
        eprintln!(
            "{id} approved; it failed: {}",
            approved
                .outcome
                .diagnostic
                .as_deref()
                .unwrap_or("no diagnostic")
        );
        Ok(1)
    }
}

pub async fn deny(engine: &Engine, a: DenyArgs) -> anyhow::Result<u8> {
    let r = engine
        .deny(&a.id, &Actor::current_user(), a.reason.as_deref())
        .await?;
    if a.json {
        print_json(&r)?;
    } else {
        println!("{} denied", &r.id[..8]);
    }
    Ok(0)
}

pub async fn cancel(engine: &Engine, a: CancelArgs) -> anyhow::Result<u8> {
    let c = engine.cancel_action(&a.id, &Actor::current_user()).await?;
    if a.json {
        print_json(&c)?;
        return Ok(0);
    }
    let id = &c.action.id[..8];
    let what = describe(&c.action);
    match c.action.status {
        berth_engine::ActionStatus::Cancelled => println!(
            "{id} cancelled ({what}, agent {}): its output so far is in `berth events --json` (action.cancelled) and `berth actions --json`",
            c.action.agent
        ),
        berth_engine::ActionStatus::Executing => println!(
            "{id} cancel requested ({what}, agent {}){}; the process executing it ({}) has not recorded the end yet: `berth actions` shows it when it does",
            c.action.agent,
            if c.killed {
                " and its command killed"
            } else {
                ""
            },
            c.action.executor.as_deref().unwrap_or("unknown")
        ),
        other => println!(
            "{id} ended {} before the cancel took effect ({what})",
            other.as_str()
        ),
    }
    Ok(0)
}

pub async fn retry(engine: &Engine, a: RetryArgs) -> anyhow::Result<u8> {
    let r = engine.retry(&a.id, &Actor::current_user(), None).await?;
    if a.json {
        print_json(&r)?;
    } else if r.outcome.succeeded {
        println!("{} re-executed", &r.id[..8]);
    } else {
        eprintln!(
            "{} re-executed; it failed: {}",
            &r.id[..8],
            r.outcome.diagnostic.as_deref().unwrap_or("no diagnostic")
        );
    }
    Ok(if r.outcome.succeeded { 0 } else { 1 })
}

pub async fn resolve(engine: &Engine, a: ResolveArgs) -> anyhow::Result<u8> {
    let c = engine
        .resolve_choice(&a.id, &a.choice, &Actor::current_user())
        .await?;
    if a.json {
        print_json(&c)?;
    } else {
        println!(
            "choice {} resolved as {}: {}",
            &c.id[..8],
            c.choice.as_deref().unwrap_or("-"),
            c.result.map(|r| r.to_string()).unwrap_or_default()
        );
    }
    Ok(0)
}
