//! `berth store migrate`: applies the store's pending migrations and says
//! which are applied. Every process migrates the store it opens; this is
//! the explicit step for a PostgreSQL store that several hosts share (one
//! host migrates before the others start) and for a look at the version.

use berth_engine::StateDir;
use berth_engine::store::{Store, StoreLocation};

use super::print_json;

#[derive(Debug, clap::Subcommand)]
#[command(defer = true)]
pub enum StoreCommand {
    /// Apply pending migrations to the store (`$BERTH_STORE`, else
    /// `store.toml`'s `[store] url`, else the state directory's SQLite file).
    Migrate {
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(dir: &StateDir, c: StoreCommand) -> anyhow::Result<u8> {
    match c {
        StoreCommand::Migrate { json } => {
            let location = StoreLocation::resolve(dir)?;
            let report = Store::migrate_at(&location).await?;
            if json {
                print_json(&report)?;
            } else {
                let newest = report.applied.last().copied().unwrap_or(0);
                println!(
                    "{} store {}: at migration {newest} of {} ({} applied)",
                    report.backend,
                    report.store,
                    report.latest,
                    report.applied.len()
                );
            }
            Ok(0)
        }
    }
}
