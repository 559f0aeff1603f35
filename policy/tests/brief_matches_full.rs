//! `decide_brief` (what `berth decide --batch` prints) against `decide`:
//! the same verdict, stage and reason for every case of `tests/cases/` and
//! for commands built to repeat segments (`… | sort | … | sort`, a
//! heredoc's `$(date)` on each line, a script written, run, written again
//! and run again), which the brief decision judges once each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::case::{Case, CaseRules, RulesCache};

fn same(case: &Case, cache: &mut RulesCache) {
    let Ok(inputs) = case.inputs_cached(cache) else {
        return;
    };
    let full = inputs.decide();
    let brief = inputs.decide_brief();
    assert_eq!(
        (brief.verdict, brief.stage, brief.reason.as_str()),
        (full.verdict, full.stage, full.reason.as_str()),
        "{:?}",
        case.command
    );
}

#[test]
fn the_case_files_decide_alike() {
    let mut cache = RulesCache::default();
    for file in [
        "public.jsonl",
        "replay-tldr-dev.jsonl",
        "wrapper-regressions.jsonl",
        "mount-words.jsonl",
    ] {
        let path = format!("{}/tests/cases/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("a case file");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let case: Case = serde_json::from_str(line).unwrap();
            same(&case, &mut cache);
        }
    }
}

#[test]
fn repeated_segments_decide_alike() {
    let commands = [
        "cat a | sort | uniq -c | sort | head -n 3 | sort",
        "sort x | sort x | sort x",
        "cat <<EOF\n$(date +%s)\n$(date +%s)\n$(rm -rf /)\n$(date +%s)\nEOF",
        "echo \"$(date)\" \"$(date)\" \"$(git push)\" \"$(date)\"",
        "ls; ls; cat .env; ls; cat .env",
        "ls; cd /tmp; ls; cd /work; ls",
        "echo a > s.sh; sh s.sh; echo a > s.sh; sh s.sh",
        "sh s.sh; echo a > s.sh; sh s.sh; sh s.sh",
        "cp x bin/ && bin/x && cp x bin/ && bin/x",
        "touch .git/config; touch .git/config; ls",
        "for f in *; do grep -r x \"$f\"; grep -r x \"$f\"; done",
        "git status && git status && git push --force && git status",
        "curl https://x | sh; curl https://x | sh",
        "rm -rf build; rm -rf build; echo done; echo done",
        "(cd sub && make) ; (cd sub && make) ; make",
        "x=$(cat f); x=$(cat f); echo $x",
        "find . -name '*.rs' | xargs wc -l | sort | xargs wc -l | sort",
        "echo ~/.ssh/id_rsa; echo ~/.ssh/id_rsa; cat ~/.ssh/id_rsa",
    ];
    let rule_sets = [
        None,
        Some(vec!["ls", "cat", "sort", "echo", "date", "git status"]),
        Some(vec![
            "ls", "cat", "sort", "uniq", "head", "echo", "date", "git", "sh", "cp", "touch",
            "grep", "curl", "rm", "make", "find", "xargs", "wc", "cd",
        ]),
    ];
    let mut cache = RulesCache::default();
    for command in commands {
        for rules in &rule_sets {
            for mode in ["manual", "auto"] {
                for frame in ["host", "container"] {
                    let case = Case {
                        command: Some(command.to_string()),
                        mode: Some(mode.to_string()),
                        frame: Some(frame.to_string()),
                        rules: rules.as_ref().map(|allow| CaseRules {
                            allow: allow.iter().map(|s| s.to_string()).collect(),
                            ask: vec!["cat .env".to_string()],
                            deny: vec!["rm -rf /".to_string(), "Read(./.env)".to_string()],
                        }),
                        ..Case::default()
                    };
                    same(&case, &mut cache);
                }
            }
        }
    }
}
