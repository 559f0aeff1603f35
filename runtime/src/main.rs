//! The `berth` command.

fn main() -> anyhow::Result<()> {
    Ok(())
}
