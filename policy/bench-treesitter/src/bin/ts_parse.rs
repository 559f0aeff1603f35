//! tree-sitter-bash merely parsing the commands of a policy-case corpus:
//! the yardstick for `berth decide --batch` (issue 2: berth in at most a
//! third of this parse time).
//!
//! `ts_parse FILE`: reads the JSON lines, then times the parse of every
//! `command` with one reused parser (JSON reading excluded, so the number
//! is tree-sitter's parse alone), and prints bytes, time and MB/s — in wall
//! time and in this thread's CPU time (from `/proc/thread-self/schedstat`),
//! which holds on a loaded machine where wall time does not.

use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: ts_parse FILE");
    let text = std::fs::read_to_string(&path).expect("read the corpus");
    let t0 = Instant::now();
    let commands: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("command").and_then(|c| c.as_str()).map(String::from))
        .collect();
    let json_time = t0.elapsed();
    let bytes: usize = commands.iter().map(String::len).sum();
    let mut parser = tree_sitter::Parser::new();
    parser
        .set_language(&tree_sitter_bash::LANGUAGE.into())
        .expect("the bash grammar loads");
    let c1 = cpu_seconds();
    let t1 = Instant::now();
    let (mut nodes, mut errors) = (0usize, 0usize);
    for c in &commands {
        let tree = parser.parse(c, None).expect("a tree");
        let root = tree.root_node();
        nodes += root.descendant_count();
        if root.has_error() {
            errors += 1;
        }
    }
    let parse = t1.elapsed();
    let cpu = cpu_seconds() - c1;
    let mb = bytes as f64 / 1_048_576.0;
    println!(
        "tree-sitter-bash: {} commands, {:.1} MB of command text, {nodes} nodes, {errors} with errors",
        commands.len(),
        mb
    );
    println!(
        "parse alone: {:.3} s = {:.2} MB/s of command text (JSON reading, not counted: {:.3} s; file {:.1} MB)",
        parse.as_secs_f64(),
        mb / parse.as_secs_f64(),
        json_time.as_secs_f64(),
        text.len() as f64 / 1_048_576.0
    );
    println!(
        "parse alone, CPU time: {cpu:.3} s = {:.2} MB/s of command text",
        mb / cpu
    );
}

/// This thread's time on a CPU, in seconds.
fn cpu_seconds() -> f64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(f64::NAN, |ns| ns as f64 / 1e9)
}
