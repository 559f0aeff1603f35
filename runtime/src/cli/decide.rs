//! `berth decide`: one decision, or a batch of policy cases as JSON lines.

#[derive(Debug, clap::Args)]
pub struct DecideArgs {
    /// The command line to decide.
    #[arg(last = true)]
    pub command: Vec<String>,
}

pub fn run(_args: DecideArgs) -> anyhow::Result<u8> {
    anyhow::bail!("berth decide is not built yet")
}
