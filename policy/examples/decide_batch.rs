//! Runs `berth decide --batch`'s loop ([`berth_policy::batch::decide_lines`])
//! over a policy-case JSON-lines file, its output on stdout: the bytes the
//! binary writes, without the binary's start, for instruction counts of
//! the whole batch (reading each case, its rules, deciding, writing) and
//! for comparing two versions' output byte for byte:
//!
//! ```sh
//! cargo build --release -p berth-policy --example decide_batch
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!   target/release/examples/decide_batch policy/tests/cases/replay-tldr-dev.jsonl > /dev/null
//! ```

use std::io::Write;

#[path = "../../runtime/src/allocator.rs"]
mod allocator;

/// The berth binary's allocator (runtime/src/allocator.rs): the figures are the
/// binary's.
#[global_allocator]
static GLOBAL: allocator::Mimalloc = allocator::Mimalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: decide_batch FILE")?;
    let file = std::fs::File::open(&path)?;
    let reader = std::io::BufReader::with_capacity(1 << 16, file);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    berth_policy::batch::decide_lines(reader, &mut out)?;
    out.flush()?;
    Ok(())
}
