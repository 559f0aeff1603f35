//! Every case of the public policy cases passes: a copy of
//! `../shared/policy-cases/public.jsonl` kept in `tests/cases/`, so a fresh
//! clone with nothing beside it runs them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use berth_policy::case::Case;

#[test]
fn public_cases_pass() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cases/public.jsonl");
    let text = std::fs::read_to_string(path).expect("the public policy cases at tests/cases/");
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
    assert!(n >= 60, "only {n} cases read");
    assert!(
        failures.is_empty(),
        "{} of {n} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
