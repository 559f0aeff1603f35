//! Command-line parsing and dispatch. Each subcommand lives in its own module
//! and returns the process exit code.

mod decide;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "berth",
    version,
    about = "An execution sandbox runtime for AI coding agents"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decide one action, or a batch of policy cases, without running anything.
    Decide(decide::DecideArgs),
}

pub fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Decide(args) => decide::run(args),
    }
}
