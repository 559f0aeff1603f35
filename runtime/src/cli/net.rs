//! `berth net log [AGENT]`: the connections out of berths that went through
//! berth's egress proxy (`network.connected` events), one a line.

use berth_engine::{Engine, ids};

use super::print_json;

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum NetCommand {
    /// The connections that went through the egress proxy, oldest first.
    Log {
        /// Only this agent's connections.
        agent: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(engine: &Engine, c: NetCommand) -> anyhow::Result<u8> {
    let NetCommand::Log { agent, json } = c;
    if let Some(a) = &agent {
        // An unknown agent is an error, not an empty log.
        engine.agent(a).await?;
    }
    let connections = engine.connections(agent.as_deref()).await?;
    if json {
        print_json(&connections)?;
        return Ok(0);
    }
    if connections.is_empty() {
        eprintln!("no connections went through berth's egress proxy");
    }
    for c in connections {
        println!(
            "{} {:<12} {}:{} ({}) out {} B, in {} B, {} ms{}",
            ids::rfc3339(c.at),
            c.agent.as_deref().unwrap_or("-"),
            c.host,
            c.port,
            c.address,
            c.bytes_out,
            c.bytes_in,
            c.duration_ms,
            c.approved_action
                .as_deref()
                .map(|a| format!(", approved as action {}", ids::short(a)))
                .unwrap_or_default()
        );
    }
    Ok(0)
}
