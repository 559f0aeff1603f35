//! Prints every decision of policy-case JSON-lines files in full — the
//! decision's JSON (verdict, stage, reason, segments, findings, lifted) and
//! its `--explain` rendering — so two versions of the policy can be compared
//! byte for byte (`cmp`) when a change must not alter any decision:
//!
//! ```sh
//! cargo build --release -p berth-policy --example decide_dump
//! target/release/examples/decide_dump policy/tests/cases/*.jsonl > /tmp/before.txt
//! ```
use std::io::Write as _;

use berth_policy::case::{Case, RulesCache};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut cache = RulesCache::default();
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path)?;
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            write!(out, "{path}:{}: ", n + 1)?;
            let case: Case = match serde_json::from_str(line) {
                Ok(c) => c,
                Err(e) => {
                    writeln!(out, "not a case: {e}")?;
                    continue;
                }
            };
            match case.inputs_cached(&mut cache) {
                Ok(inputs) => {
                    let d = inputs.decide();
                    // The lean decision must say the same; a line only when not.
                    let b = inputs.decide_brief();
                    if (b.verdict, b.stage, b.reason.as_str())
                        != (d.verdict, d.stage, d.reason.as_str())
                    {
                        writeln!(out, "BRIEF DIFFERS: {b:?}")?;
                    }
                    writeln!(out, "{}", serde_json::to_string(&d)?)?;
                    writeln!(out, "{}", berth_policy::explain::render(&d))?;
                }
                Err(e) => writeln!(out, "no inputs: {e}")?,
            }
        }
    }
    out.flush()?;
    Ok(())
}
