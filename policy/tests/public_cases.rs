//! Every case of the public policy cases passes: a copy of
//! the brief's public policy cases (`public.jsonl`) kept in `tests/cases/`, so a fresh
//! clone with nothing beside it runs them; and so does every case of
//! `wrapper-regressions.jsonl` (denied programs behind wrappers, once a stray
//! file at the repository root), and of `mount-words.jsonl` (bare words
//! naming a host mount below the cwd).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::case::Case;

#[test]
fn public_cases_pass() {
    cases_pass("public.jsonl", 60);
}

#[test]
fn wrapper_regression_cases_pass() {
    cases_pass("wrapper-regressions.jsonl", 180);
}

/// A bare word is a path where the cwd holds an out-of-scope mount of that
/// name (`cd /srv && rm -rf git` above a host mount at `/srv/git`).
#[test]
fn mount_word_cases_pass() {
    cases_pass("mount-words.jsonl", 10);
}

fn cases_pass(file: &str, at_least: usize) {
    let path = format!("{}/tests/cases/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the policy cases at tests/cases/");
    let mut failures = Vec::new();
    let mut n = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Case = serde_json::from_str(line).unwrap();
        let d = case.inputs().unwrap().decide();
        n += 1;
        let want = case.expect.clone().unwrap();
        if d.verdict.as_str() != want {
            failures.push(format!(
                "{}: want {want}, got {} ({}: {})",
                case.id.clone().unwrap_or_default(),
                d.verdict.as_str(),
                d.stage.as_str(),
                d.reason
            ));
        }
    }
    assert!(n >= at_least, "only {n} cases read from {file}");
    assert!(
        failures.is_empty(),
        "{} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
