//! `berth`: the whole program — the CLI, the server and the adapters in one
//! binary. An exec that a running `berth serve` takes is handed to it first
//! (`early_handoff.rs`), before the rest starts.

mod allocator;
mod cli;
mod early_handoff;
mod hook;
mod mcp;
mod sqlite_allocator;

use clap::Parser;

/// mimalloc, called directly where the layout lets it (`allocator.rs`).
#[global_allocator]
static GLOBAL: allocator::Mimalloc = allocator::Mimalloc;

fn main() -> std::process::ExitCode {
    // First: what berth runs must not read its environment or memory
    // through /proc (see ENFORCEMENT.md, "berth itself").
    if let Err(err) = berth_confine::make_non_dumpable() {
        eprintln!("berth: {err}");
        return std::process::ExitCode::from(2);
    }
    // Before anything opens the store: SQLite allocates through mimalloc
    // alone.
    if let Err(sqlite_allocator::NotTaken(rc)) = sqlite_allocator::use_mimalloc_alone() {
        tracing::debug!(rc, "SQLite keeps its own allocation settings");
    }
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let handoff_tried = match early_handoff::hand_off(&argv) {
        early_handoff::Early::Ended(code) => return code,
        early_handoff::Early::NotTaken => true,
        early_handoff::Early::NotRead => false,
    };
    let args = cli::Cli::parse_from(argv);
    // A listing piped into `head` ends quietly; the long-running commands
    // (serve, the MCP server, the hook, the agent loop) keep SIGPIPE ignored
    // so a closed peer is an error they handle, not their death.
    if args.command.prints_to_a_pipe()
        && let Err(err) = berth_confine::default_sigpipe()
    {
        eprintln!("berth: {err}");
        return std::process::ExitCode::from(2);
    }
    match cli::run(args, handoff_tried) {
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

#[cfg(test)]
mod allocator_tests {
    use std::alloc::{GlobalAlloc as _, Layout};

    use crate::allocator::Mimalloc;

    /// Each size up to 4 KiB and some larger, at each alignment up to 64:
    /// the block is aligned as asked, keeps its bytes through a `realloc`
    /// and is zeroed when asked.
    #[test]
    fn blocks_are_aligned_as_their_layout_asks() {
        let a = Mimalloc;
        let sizes = (1..=4096).chain([8191, 65_536, 1 << 20]);
        for size in sizes {
            for align in [1, 2, 4, 8, 16, 32, 64] {
                let layout = Layout::from_size_align(size, align).unwrap();
                // SAFETY: a non-zero size; each block is freed once, by
                // this allocator, with the layout it was made with.
                unsafe {
                    let p = a.alloc(layout);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0, "{size} at {align}");
                    p.write_bytes(0xa5, size);
                    let q = a.realloc(p, layout, size * 2 + 8);
                    assert!(!q.is_null());
                    assert_eq!(q as usize % align, 0, "{size} at {align}, grown");
                    assert!(
                        std::slice::from_raw_parts(q, size)
                            .iter()
                            .all(|&b| b == 0xa5)
                    );
                    a.dealloc(q, Layout::from_size_align(size * 2 + 8, align).unwrap());
                    let z = a.alloc_zeroed(layout);
                    assert_eq!(z as usize % align, 0, "{size} at {align}, zeroed");
                    assert!(std::slice::from_raw_parts(z, size).iter().all(|&b| b == 0));
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
