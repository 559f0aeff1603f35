//! `berth store migrate`: applies the store's pending migrations and says
//! which are applied. Every process migrates the store it opens; this is
//! the explicit step for a PostgreSQL store that several hosts share (one
//! host migrates before the others start) and for a look at the version.
//! And, hidden, `berth store keep`: the store's keeper, which one-shot
//! commands start ([`use_keeper`]).

use std::os::unix::process::CommandExt as _;

use berth_engine::StateDir;
use berth_engine::store::keeper::{self, KeeperFound};
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
    /// Hold the SQLite store open until it idles (the store's keeper,
    /// which one-shot commands start: `berth_engine::store::keeper`).
    #[command(hide = true)]
    Keep {
        /// Leave after this many seconds without a commit.
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
        idle_secs: Option<u64>,
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
        StoreCommand::Keep { idle_secs } => {
            close_inherited();
            let idle = idle_secs.map_or(keeper::IDLE, std::time::Duration::from_secs);
            let end = keeper::keep(dir, idle).await?;
            tracing::debug!(?end, "the store's keeper leaves");
            Ok(0)
        }
    }
}

/// The store's keeper for a one-shot command on `dir`
/// (`berth_engine::store::keeper`): with one running, `store` leaves its
/// checkpoints to it; with none, this starts one: this program, `store
/// keep`, in its own process group, with no standard streams (a caller
/// reading this process's output to its end never waits for the keeper).
/// Not waited for; a keeper that cannot start is only a saving lost.
pub fn use_keeper(dir: &StateDir, store: &Store) {
    match keeper::find(store.location()) {
        KeeperFound::Running => store.checkpoint_by_keeper(),
        KeeperFound::NotApplicable => {}
        KeeperFound::Missing => {
            let started = std::env::current_exe().and_then(|program| {
                std::process::Command::new(program)
                    .arg("--state")
                    .arg(dir.root())
                    .args(["store", "keep"])
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .process_group(0)
                    .spawn()
            });
            if let Err(err) = started {
                tracing::debug!("the store's keeper did not start: {err}");
            }
        }
    }
}

/// Closes what the keeper inherited and does not use: every descriptor past
/// the standard three without close-on-exec. berth opens each of its own
/// with the flag (std, tokio and SQLite do), so one without it crossed the
/// exec that started this process: a pipe its starter's caller passed on
/// (a shell's `3>`, a build tool's) would otherwise stay open in a process
/// that lives for minutes, and whoever reads that pipe to its end would
/// wait for the keeper.
fn close_inherited() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<libc::c_int> = entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .filter(|&fd| fd > 2)
        .collect();
    for fd in fds {
        // SAFETY: F_GETFD reads a descriptor's flags and nothing else; a
        // number no longer open (the listing's own) only gives EBADF.
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
        if flags >= 0 && flags & libc::FD_CLOEXEC == 0 {
            // SAFETY: no object of this process owns `fd` (each of
            // berth's own carries FD_CLOEXEC, checked above): it is an
            // inherited descriptor nothing here reads or writes.
            unsafe { libc::close(fd) };
        }
    }
}
