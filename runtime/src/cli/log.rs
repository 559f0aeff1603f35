//! `berth events [archive]|metrics|outbox drain`.

use anyhow::Context;
use berth_engine::archive::StoreConfig;
use berth_engine::{Engine, EventFilter, ids};

use super::print_json;

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct EventsArgs {
    #[command(subcommand)]
    command: Option<EventsCommand>,
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

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
enum EventsCommand {
    /// Write the events older than a date to a JSONL file (fsynced), then
    /// delete them from the store. Never archived: events not yet taken
    /// from the outbox, and the newest event.
    Archive {
        /// Events before this date (YYYY-MM-DD, or an RFC 3339 time, UTC). Default: `[store] retain_events_days` in the
        /// state directory's store.toml.
        #[arg(long)]
        before: Option<String>,
        /// The file to write, which must not exist. Default:
        /// `<state>/archive/events-before-<time>.jsonl`.
        #[arg(long)]
        to: Option<std::path::PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, clap::Args)]
pub struct MetricsArgs {
    #[arg(long)]
    agent: Option<String>,
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum OutboxCommand {
    /// Print every undelivered outbox message, then delete its row.
    Drain {
        #[arg(long)]
        json: bool,
    },
}

pub async fn events(engine: &Engine, a: EventsArgs) -> anyhow::Result<u8> {
    if let Some(EventsCommand::Archive { before, to, json }) = a.command {
        return archive(engine, before.as_deref(), to, json).await;
    }
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
            // Deliver, then delete: a reader that goes away (a closed pipe
            // ends berth) or a crash leaves the rows for the next drain.
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

async fn archive(
    engine: &Engine,
    before: Option<&str>,
    to: Option<std::path::PathBuf>,
    json: bool,
) -> anyhow::Result<u8> {
    let before_ms = match before {
        Some(text) => ids::parse_time_ms("--before", text)?,
        None => StoreConfig::load(engine.state())?
            .cutoff_ms(ids::now_ms())
            .with_context(|| {
                format!(
                    "no --before, and no `[store] retain_events_days` in {}",
                    engine.state().store_config().display()
                )
            })?,
    };
    let to = match to {
        Some(path) => path,
        None => engine.archive_path(before_ms)?,
    };
    let done = engine.archive_events(before_ms, &to).await?;
    if json {
        print_json(&done)?;
    } else {
        println!(
            "{} events before {} archived to {} and deleted from the store",
            done.events,
            ids::rfc3339(before_ms),
            done.path.display()
        );
    }
    Ok(0)
}
