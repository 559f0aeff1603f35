//! `berth-full`: the whole `berth` program — the CLI, the server and the
//! adapters in one binary. Users run `berth` (`front.rs`), which hands an
//! exec to a running server itself and runs this binary, with the same
//! arguments, for everything else.

mod cli;
mod hook;
mod mcp;

use clap::Parser;

/// The policy's parser and walker allocate many small strings; mimalloc
/// handles that pattern markedly better than glibc's allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // First: what berth runs must not read its environment or memory
    // through /proc (see ENFORCEMENT.md, "berth itself").
    if let Err(err) = berth_confine::make_non_dumpable() {
        eprintln!("berth: {err}");
        return std::process::ExitCode::from(2);
    }
    let args = cli::Cli::parse();
    // A listing piped into `head` ends quietly; the long-running commands
    // (serve, the MCP server, the hook, the agent loop) keep SIGPIPE ignored
    // so a closed peer is an error they handle, not their death.
    if args.command.prints_to_a_pipe()
        && let Err(err) = berth_confine::default_sigpipe()
    {
        eprintln!("berth: {err}");
        return std::process::ExitCode::from(2);
    }
    match cli::run(args) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(err) => {
            eprintln!("berth: {}", error_text(&err));
            std::process::ExitCode::from(2)
        }
    }
}

/// The error and its causes, each cause only when the text so far does not
/// already say it (many errors quote their source in their own message).
fn error_text(err: &anyhow::Error) -> String {
    let mut text = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !text.contains(&cause) {
            text.push_str(": ");
            text.push_str(&cause);
        }
    }
    text
}
