//! Writes a large mixed corpus of policy cases (JSON lines) for batch
//! throughput: the replay commands as they are, compound chains of them,
//! heredocs (quoted and unquoted), long pipelines, loops and conditionals,
//! and long argument lists — each with allow rules.
//!
//! `make_corpus OUT MEGABYTES [CASES_DIR]` (default `../tests/cases`, the
//! policy crate's case files kept in the project: the replay and the
//! public cases). Deterministic: a fixed seed.

use std::io::Write;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

struct Seed {
    command: String,
    allow: Vec<String>,
}

fn read_seeds(cases: &str) -> Vec<Seed> {
    let mut seeds = Vec::new();
    for file in ["replay-tldr-dev.jsonl", "public.jsonl"] {
        let path = format!("{cases}/{file}");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {path}: {e} (give CASES_DIR)"));
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            let Some(command) = v.get("command").and_then(|c| c.as_str()) else {
                continue;
            };
            let allow = v
                .pointer("/rules/allow")
                .and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            seeds.push(Seed {
                command: command.to_string(),
                allow,
            });
        }
    }
    seeds
}

fn main() {
    let mut args = std::env::args().skip(1);
    let out = args
        .next()
        .expect("usage: make_corpus OUT MEGABYTES [CASES_DIR]");
    let mb: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .expect("MEGABYTES: a number");
    let cases = args
        .next()
        .unwrap_or_else(|| format!("{}/../tests/cases", env!("CARGO_MANIFEST_DIR")));
    let seeds = read_seeds(&cases);
    let one_liners: Vec<&Seed> = seeds.iter().filter(|s| !s.command.contains('\n')).collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let file = std::fs::File::create(&out).expect("create the corpus file");
    let mut w = std::io::BufWriter::new(file);
    let target = mb * 1024 * 1024;
    let (mut written, mut n) = (0usize, 0usize);
    let mut kinds = [0usize; 6];
    while written < target {
        let kind = match rng.below(100) {
            0..40 => 0,
            40..60 => 1,
            60..75 => 2,
            75..85 => 3,
            85..95 => 4,
            _ => 5,
        };
        kinds[kind] += 1;
        let mut allow: Vec<String> = Vec::new();
        let pick = |rng: &mut Rng, allow: &mut Vec<String>| -> String {
            let s = one_liners[rng.below(one_liners.len())];
            allow.extend(s.allow.iter().cloned());
            s.command.clone()
        };
        let command = match kind {
            // A replay command as it is.
            0 => {
                let s = &seeds[rng.below(seeds.len())];
                allow.extend(s.allow.iter().cloned());
                s.command.clone()
            }
            // A compound chain, some parts in a subshell or a substitution.
            1 => {
                let mut c = String::from("cd /work");
                for _ in 0..3 + rng.below(6) {
                    let sep = [" && ", "; ", " || ", " | "][rng.below(4)];
                    c.push_str(sep);
                    let p = pick(&mut rng, &mut allow);
                    match rng.below(6) {
                        0 => c.push_str(&format!("( {p} )")),
                        1 => c.push_str(&format!("echo \"$({p})\"")),
                        _ => c.push_str(&p),
                    }
                }
                allow.push("cd".into());
                allow.push("echo".into());
                c
            }
            // A heredoc: code lines, quoted or with expansions.
            2 => {
                let quoted = rng.below(2) == 0;
                let delim = if quoted { "'EOF'" } else { "EOF" };
                let mut c = format!("mkdir -p /work/gen && cat > /work/gen/f{n}.sh <<{delim}\n");
                for i in 0..5 + rng.below(60) {
                    let p = pick(&mut rng, &mut allow);
                    if quoted {
                        c.push_str(&format!("# step {i}: {p}\n{p}\n"));
                    } else {
                        c.push_str(&format!("echo \"step {i} in $PWD at $(date +%s)\" # {p}\n"));
                    }
                }
                c.push_str("EOF\nbash -n /work/gen/f");
                c.push_str(&format!("{n}.sh"));
                allow.extend(["mkdir", "cat", "bash -n"].map(String::from));
                c
            }
            // A long pipeline.
            3 => {
                let mut c = pick(&mut rng, &mut allow);
                for _ in 0..5 + rng.below(15) {
                    let stage = [
                        "grep -v '^#'",
                        "sort",
                        "uniq -c",
                        "sed -e 's/a/b/g'",
                        "awk '{print $1}'",
                        "head -n 100",
                        "tr -d '\\r'",
                        "cut -d: -f1",
                    ][rng.below(8)];
                    c.push_str(" | ");
                    c.push_str(stage);
                }
                allow.extend(
                    ["grep", "sort", "uniq", "sed", "awk", "head", "tr", "cut"].map(String::from),
                );
                c
            }
            // Loops and conditionals around replay commands.
            4 => {
                let a = pick(&mut rng, &mut allow);
                let b = pick(&mut rng, &mut allow);
                allow.extend(["test", "echo", "true"].map(String::from));
                match rng.below(3) {
                    0 => format!("for f in src/*.rs tests/*.rs; do {a}; echo \"$f\"; done"),
                    1 => format!("if test -f Cargo.toml; then\n  {a}\nelse\n  {b}\nfi"),
                    _ => format!(
                        "while true; do {a} && break; done; case \"$1\" in x) {b};; *) true;; esac"
                    ),
                }
            }
            // A long argument list.
            _ => {
                let mut c = String::from("git add --");
                for i in 0..20 + rng.below(80) {
                    c.push_str(&format!(" src/module_{i}/file_{}.rs", rng.below(1000)));
                }
                allow.push("git add".into());
                c
            }
        };
        allow.sort();
        allow.dedup();
        let line = serde_json::json!({
            "id": format!("bulk-{n}"),
            "command": command,
            "mode": if n % 3 == 0 { "auto" } else { "manual" },
            "frame": "container",
            "project_root": "/work",
            "cwd": "/work",
            "rules": {"allow": allow, "ask": [], "deny": ["rm -rf", "git push --force"]},
        });
        let text = line.to_string();
        w.write_all(text.as_bytes()).expect("write");
        w.write_all(b"\n").expect("write");
        written += text.len() + 1;
        n += 1;
    }
    w.flush().expect("flush");
    eprintln!(
        "{out}: {n} cases, {:.1} MB (replay {}, compound {}, heredoc {}, pipeline {}, loops {}, long args {})",
        written as f64 / 1048576.0,
        kinds[0],
        kinds[1],
        kinds[2],
        kinds[3],
        kinds[4],
        kinds[5]
    );
}
