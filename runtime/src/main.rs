//! The `berth` command: one binary for the CLI, the server and the adapters.

mod cli;
mod hook;
mod mcp;

use clap::Parser;

/// The policy's parser and walker allocate many small strings; mimalloc
/// handles that pattern markedly better than glibc's allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(err) => {
            eprintln!("berth: {err:#}");
            std::process::ExitCode::from(2)
        }
    }
}
