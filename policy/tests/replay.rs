//! The false-prompt budget over the tldr-dev replay: 1,769 realistic agent
//! commands, each with a rules file that allows its own programs (a copy of
//! the brief's replay file `tldr-dev.jsonl` kept in `tests/cases/`, CC BY 4.0, see
//! `tests/cases/README.md`). Every case is in the container frame with only the
//! project mount, so a prompt from the scope stage is false by construction;
//! prompts from the privileged limit are the contract. The rest must stay
//! auto-approved (POLICY.md's amendment raised what is asked; this keeps it
//! from raising what is not).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use berth_policy::case::{Case, RulesCache};
use berth_policy::{Stage, Verdict};

/// Share of the cases outside the privileged limit that must stay
/// auto-approved (the floor; 99.1 % before the amendment).
const MIN_AUTO_SHARE: f64 = 0.97;

#[test]
fn replay_keeps_false_prompts_within_budget() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/cases/replay-tldr-dev.jsonl"
    );
    let text = std::fs::read_to_string(path).expect("the replay corpus at tests/cases/");
    let mut cache = RulesCache::default();
    let mut stages: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut scope_prompts = Vec::new();
    let mut denied = Vec::new();
    let (mut total, mut privileged, mut auto) = (0usize, 0usize, 0usize);
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Case = serde_json::from_str(line).unwrap();
        let d = case.inputs_cached(&mut cache).unwrap().decide();
        total += 1;
        if d.verdict == Verdict::AutoApprove {
            auto += 1;
            continue;
        }
        *stages.entry(d.stage.as_str()).or_default() += 1;
        let id = case.id.clone().unwrap_or_default();
        match d.stage {
            Stage::Privileged => privileged += 1,
            Stage::Scope => scope_prompts.push(format!("{id}: {}", d.reason)),
            _ => {}
        }
        if d.verdict == Verdict::Deny {
            denied.push(format!("{id}: {} ({})", d.stage.as_str(), d.reason));
        }
    }
    assert!(total >= 1700, "only {total} replay cases read");
    eprintln!("replay: {total} cases, {auto} auto-approved, prompts by stage: {stages:?}");
    assert!(
        scope_prompts.is_empty(),
        "scope-stage prompts are false by construction:\n{}",
        scope_prompts.join("\n")
    );
    let outside = total - privileged;
    let share = auto as f64 / outside as f64;
    assert!(
        share >= MIN_AUTO_SHARE,
        "{auto} of {outside} cases outside the privileged limit auto-approved ({:.1} %), below {:.0} %; prompts by stage: {stages:?}",
        share * 100.0,
        MIN_AUTO_SHARE * 100.0
    );
}
