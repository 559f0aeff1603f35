//! `decide()` over a realistic mix: short agent commands (sampled from the
//! replay corpus and the public policy cases, read at bench time and skipped
//! when absent), long compound commands, heredocs, and the cost at 1 KB,
//! 10 KB and 100 KB (which should grow linearly).
//!
//! Run: `cargo bench -p berth-policy --bench decide`. The targets
//! (issue 2): a typical command ≤ 5 µs on one core; linear in length.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use berth_policy::case::{Case, CaseRules, Inputs};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

#[path = "../../runtime/src/allocator.rs"]
mod allocator;

/// The berth binary's allocator (runtime/src/allocator.rs): the figures are the
/// binary's.
#[global_allocator]
static GLOBAL: allocator::Mimalloc = allocator::Mimalloc;

/// Cases from a policy-case JSON-lines file, every `step`-th terminal one.
fn sample(path: &str, step: usize) -> Vec<Inputs> {
    let Ok(text) = std::fs::read_to_string(path) else {
        eprintln!("bench: {path} is absent; its sample is skipped");
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Case>(l).ok())
        .filter(|c| c.command.is_some() && c.action.as_deref().unwrap_or("terminal") == "terminal")
        .step_by(step)
        .filter_map(|c| c.inputs().ok())
        .collect()
}

/// A case file kept in the project (`tests/cases/`), so the bench needs
/// nothing beside the clone.
fn project_cases(file: &str) -> String {
    format!("{}/tests/cases/{file}", env!("CARGO_MANIFEST_DIR"))
}

/// A case in the container frame with an allow list, as agents run.
fn inputs(command: &str) -> Inputs {
    Case {
        command: Some(command.to_string()),
        rules: Some(CaseRules {
            allow: [
                "git status",
                "git diff",
                "git log",
                "ls",
                "cat",
                "grep",
                "rg",
                "cargo test",
                "cargo build",
                "npm test",
                "npm run",
                "cd",
                "echo",
                "head",
                "tail",
                "wc",
                "sed",
                "awk",
                "find",
                "xargs",
                "sort",
                "uniq",
                "mkdir",
                "cp",
                "mv",
                "touch",
                "python3",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            ask: vec!["npm publish".into()],
            deny: vec!["rm -rf".into(), "git push --force".into()],
        }),
        mode: Some("manual".into()),
        frame: Some("container".into()),
        ..Case::default()
    }
    .inputs()
    .expect("a well-formed bench case")
}

const TYPICAL: &[(&str, &str)] = &[
    ("git_status", "git status --short"),
    ("cargo_test", "cargo test --workspace -- --nocapture"),
    ("cd_and_test", "cd /work && npm test"),
    ("grep_pipe", "grep -rn 'fn decide' src | head -20"),
    ("find_xargs", "find . -name '*.rs' -print0 | xargs -0 wc -l"),
    (
        "redirect",
        "cargo build --release 2>&1 | tail -n 50 > /tmp/build.log",
    ),
];

fn compound() -> String {
    "cd /work/app && git fetch origin && git checkout -b fix/parser origin/main \
     && for f in src/*.rs; do rustfmt --check \"$f\" || echo \"$f needs fmt\"; done; \
     if [ -f Cargo.lock ]; then cargo test --locked 2>&1 | tee /tmp/test.log; else cargo test; fi \
     && grep -c '^test .* ok$' /tmp/test.log | xargs -I{} echo passed: {} \
     && (cd docs && make html >/dev/null) && git add -A && git commit -m \"fix: parser $(date +%F)\""
        .to_string()
}

fn heredoc(lines: usize, quoted: bool) -> String {
    let delim = if quoted { "'EOF'" } else { "EOF" };
    let mut s = format!("mkdir -p /work/src && cat > /work/src/generated.rs <<{delim}\n");
    for i in 0..lines {
        s.push_str(&format!(
            "pub fn f{i}(x: u32) -> u32 {{ x + {i} }} // $HOME `id`\n"
        ));
    }
    s.push_str("EOF\ncargo build");
    s
}

/// A realistic mix repeated to about `bytes` bytes.
fn sized(bytes: usize) -> String {
    let unit = "cd /work && git status --short && grep -rn 'TODO' src | head -5; \
                cat <<'EOF' > /work/notes.txt\nline one $x\nEOF\n\
                for f in a b c; do echo \"$f\" >> /work/out.log; done; ";
    let mut s = String::with_capacity(bytes + unit.len());
    while s.len() + unit.len() <= bytes {
        s.push_str(unit);
    }
    s.push_str("true");
    s
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("typical");
    for (name, cmd) in TYPICAL {
        let i = inputs(cmd);
        g.bench_function(*name, |b| b.iter(|| black_box(i.decide())));
    }
    g.finish();

    // The corpus mix: one iteration decides every sampled command; the time
    // per command is the iteration's time over the element count.
    let mut mix = sample(&project_cases("replay-tldr-dev.jsonl"), 7);
    mix.extend(sample(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases/public.jsonl"),
        1,
    ));
    if !mix.is_empty() {
        let mut g = c.benchmark_group("corpus_mix");
        g.throughput(Throughput::Elements(mix.len() as u64));
        g.bench_function(format!("{}_commands", mix.len()), |b| {
            b.iter(|| {
                for i in &mix {
                    black_box(i.decide());
                }
            })
        });
        g.finish();
    }

    let mut g = c.benchmark_group("shapes");
    let comp = inputs(&compound());
    g.bench_function("compound_12_segments", |b| {
        b.iter(|| black_box(comp.decide()))
    });
    let hq = inputs(&heredoc(50, true));
    g.bench_function("heredoc_quoted_50_lines", |b| {
        b.iter(|| black_box(hq.decide()))
    });
    let hu = inputs(&heredoc(50, false));
    g.bench_function("heredoc_unquoted_50_lines", |b| {
        b.iter(|| black_box(hu.decide()))
    });
    g.finish();

    let mut g = c.benchmark_group("scaling");
    g.measurement_time(Duration::from_secs(8));
    for kb in [1usize, 10, 100] {
        let text = sized(kb * 1024);
        g.throughput(Throughput::Bytes(text.len() as u64));
        let case = inputs(&text);
        g.bench_function(format!("{kb}KB"), |b| b.iter(|| black_box(case.decide())));
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
