//! `berth events|metrics|outbox drain`.

use anyhow::Context;
use berth_engine::{Engine, EventFilter, ids};

use super::print_json;

#[derive(Debug, clap::Args)]
pub struct EventsArgs {
    #[arg(long)]
    agent: Option<String>,
    /// Only events of this type (e.g. proposed_action.created).
    #[arg(long = "type")]
    kind: Option<String>,
    #[arg(long)]
    task: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
pub struct MetricsArgs {
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Subcommand)]
pub enum OutboxCommand {
    /// Print every unprocessed outbox row and mark it processed.
    Drain {
        #[arg(long)]
        json: bool,
    },
}

pub async fn events(engine: &Engine, a: EventsArgs) -> anyhow::Result<u8> {
    let task = match &a.task {
        Some(t) => Some(engine.task(t).await?.id),
        None => None,
    };
    let events = engine
        .events(&EventFilter {
            agent: a.agent,
            kind: a.kind,
            task,
            ..EventFilter::default()
        })
        .await?;
    if a.json {
        print_json(&events)?;
        return Ok(0);
    }
    for e in events {
        let status = e
            .payload
            .get("status")
            .and_then(|s| s.as_str())
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default();
        println!(
            "{:>6} {} {:<26} {:<16} {}{}{}",
            e.id,
            ids::rfc3339(e.at),
            e.kind,
            e.actor.to_string(),
            e.agent.as_deref().unwrap_or("-"),
            e.action
                .as_deref()
                .map(|x| format!(" action {}", ids::short(x)))
                .unwrap_or_default(),
            status
        );
    }
    Ok(0)
}

pub async fn metrics(engine: &Engine, a: MetricsArgs) -> anyhow::Result<u8> {
    let m = engine.metrics(a.agent.as_deref()).await?;
    if a.json {
        print_json(&m)?;
        return Ok(0);
    }
    println!("proposed actions        {}", m.proposed);
    println!("  auto-approved         {}", m.auto_approved);
    println!("  pending at proposal   {}", m.pending_at_proposal);
    println!("  refused by policy     {}", m.refused_by_policy);
    println!("human approvals         {}", m.human_approvals);
    println!("human denials           {}", m.human_denials);
    println!("executed / failed       {} / {}", m.executed, m.failed);
    println!("interrupted             {}", m.interrupted);
    println!("cancelled               {}", m.cancelled);
    println!("pending now             {}", m.pending_now);
    Ok(0)
}

pub async fn outbox(engine: &Engine, cmd: OutboxCommand) -> anyhow::Result<u8> {
    match cmd {
        OutboxCommand::Drain { json } => {
            // Deliver, then mark: a reader that goes away (a closed pipe ends
            // berth) or a crash leaves the rows for the next drain.
            let rows = engine.pending_outbox().await?;
            if json {
                print_json(&serde_json::json!({ "messages": rows }))?;
            } else {
                for r in &rows {
                    println!(
                        "{:>6} {} {:<26} {}:{}",
                        r.id,
                        ids::rfc3339(r.at),
                        r.kind,
                        r.aggregate_type,
                        ids::short(&r.aggregate_id)
                    );
                }
            }
            std::io::Write::flush(&mut std::io::stdout()).context("writing the outbox rows")?;
            let pruned = match rows.last() {
                Some(last) => engine.mark_outbox_processed(last.id).await?,
                None => engine.mark_outbox_processed(0).await?,
            };
            if json {
                eprintln!("{} drained, {} pruned", rows.len(), pruned);
            } else {
                println!("{} drained, {} pruned", rows.len(), pruned);
            }
        }
    }
    Ok(0)
}
