//! Decides every case of a policy-case JSON-lines file, `rounds` times, and
//! prints the verdict counts — the decision alone, without `berth`'s process
//! start and output, for instruction counts that compare two versions of the
//! policy in one run:
//!
//! ```sh
//! cargo build --release -p berth-policy --example decide_cases
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!   target/release/examples/decide_cases policy/tests/cases/replay-tldr-dev.jsonl 1
//! ```
//!
//! The cases are parsed as the batch parses them (and their rules
//! compiled, cached) before the rounds; with `rounds` = 0 only that set-up runs, so the difference of two
//! runs is the decisions' own cost. A third argument `brief` decides with
//! `decide_brief` (verdict, stage and reason alone, as the batch does).
use std::collections::BTreeMap;

use berth_policy::case::{CaseLine, RulesCache};

#[path = "../../runtime/src/allocator.rs"]
mod allocator;

/// The berth binary's allocator (runtime/src/allocator.rs): the figures are the
/// binary's.
#[global_allocator]
static GLOBAL: allocator::Mimalloc = allocator::Mimalloc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: decide_cases FILE [ROUNDS]")?;
    let rounds: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(1);
    let brief = args.next().as_deref() == Some("brief");
    let text = std::fs::read_to_string(&path)?;
    let mut cache = RulesCache::default();
    let mut inputs = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        // As the batch reads a line: its strings borrowed.
        let case: CaseLine<'_> = serde_json::from_str(line)?;
        inputs.push(case.inputs_cached(&mut cache)?);
    }
    let mut verdicts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for _ in 0..rounds {
        for i in &inputs {
            let verdict = if brief {
                i.decide_brief().verdict
            } else {
                i.decide().verdict
            };
            *verdicts.entry(verdict.as_str()).or_default() += 1;
        }
    }
    println!("{} cases × {rounds}: {verdicts:?}", inputs.len());
    Ok(())
}
