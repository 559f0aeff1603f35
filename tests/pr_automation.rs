//! A PR's automation as a person drives it from the CLI (`berth pr auto`,
//! `berth pr auto-prompt`, `berth pr watch`), end to end with the noop
//! agent: a failing check → one auto-fix prompt → the agent's fix commit →
//! checks green → auto-merge proposed, waiting for a person into protected
//! main → approved → merged → one terminal prompt. Every JSON answer is
//! checked against docs/cli-json.md.

use serde_json::Value;

use crate::cli::{Cli, JsonDoc};
use crate::pr_checks::pr_open;

fn json(cli: &Cli, doc: &JsonDoc, command: &str, args: &[&str]) -> Value {
    let mut full = args.to_vec();
    full.push("--json");
    let out = cli.run(&full);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "berth {full:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    doc.check(command, &stdout);
    serde_json::from_str(&stdout).unwrap()
}

fn prompts_of(cli: &Cli, kind: &str) -> Vec<Value> {
    let events = cli.json(&["events", "--type", "prompt.queued", "--json"]);
    events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["payload"]["kind"] == kind)
        .cloned()
        .collect()
}

#[test]
fn a_failing_check_is_fixed_by_one_prompt_then_merged_after_a_person_approves() {
    let cli = Cli::new().with_project();
    let doc = JsonDoc::load();
    cli.edit_config(|text| {
        format!("{text}\n[[checks]]\nname = \"fixed\"\ncommand = \"cat noop/*.fix.md\"\n")
    });
    pr_open(&cli);
    // Shown before anything is on.
    let a = json(&cli, &doc, "pr auto", &["pr", "auto", "1"]);
    assert_eq!(a["state"], "disabled");
    assert!(a.get("evaluated").is_none());

    let a = json(
        &cli,
        &doc,
        "pr auto",
        &[
            "pr",
            "auto",
            "1",
            "--fix",
            "on",
            "--merge",
            "on",
            "--on-terminal",
            "merged",
        ],
    );
    assert_eq!(a["state"], "both+lifecycle", "{a}");
    assert_eq!(a["evaluated"]["fix"]["result"], "checks_pending", "{a}");

    // The watcher: the check fails, one auto-fix prompt; again: none more.
    cli.ok(&["pr", "watch", "--once"]);
    cli.ok(&["pr", "watch", "--once"]);
    let fixes = prompts_of(&cli, "auto_fix");
    assert_eq!(fixes.len(), 1, "{fixes:?}");
    let a = json(&cli, &doc, "pr auto", &["pr", "auto", "1"]);
    assert_eq!(a["chips"][0], "Auto-fix 1/10", "{a}");

    // The noop agent answers with a fix commit; the next pass checks the
    // new head (green) and proposes the merge, which waits for a person.
    cli.ok(&["agent", "run", "noop-1", "--until-idle"]);
    cli.ok(&["pr", "watch", "--once"]);
    let checks = cli.json(&["pr", "checks", "1", "--json"]);
    assert_eq!(checks["ready"], true, "{checks}");
    let a = json(&cli, &doc, "pr auto", &["pr", "auto", "1"]);
    let action = a["merge_action"]
        .as_str()
        .unwrap_or_else(|| panic!("{a}"))
        .to_string();
    assert_eq!(a["chips"][1], "merge proposed", "{a}");
    let pending = cli.json(&["actions", "--pending", "--json"]);
    assert!(
        pending
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["id"] == action.as_str()),
        "{pending}"
    );
    cli.ok(&["approve", &action[..8]]);
    let pr = cli.json(&["pr", "show", "1", "--json"]);
    assert_eq!(pr["status"], "merged");
    cli.ok(&["pr", "watch", "--once"]);
    cli.ok(&["pr", "watch", "--once"]);
    let terminal = prompts_of(&cli, "lifecycle");
    assert_eq!(terminal.len(), 1, "{terminal:?}");
    assert_eq!(prompts_of(&cli, "auto_fix").len(), 1);
}

#[test]
fn a_projects_auto_fix_prompt_is_shown_edited_and_reset() {
    let cli = Cli::new().with_project();
    let doc = JsonDoc::load();
    let t = json(
        &cli,
        &doc,
        "pr auto-prompt",
        &["pr", "auto-prompt", "--project", "demo"],
    );
    assert_eq!(t["edited"], false);
    assert!(t["body"].as_str().unwrap().contains("{{pr.feedback}}"));
    let file = cli.state().join("../my-prompt.md");
    std::fs::write(&file, "Mine: {{pr.feedback}}").unwrap();
    let t = json(
        &cli,
        &doc,
        "pr auto-prompt",
        &[
            "pr",
            "auto-prompt",
            "--project",
            "demo",
            "--set",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(
        (t["edited"].clone(), t["body"].clone()),
        (Value::Bool(true), Value::from("Mine: {{pr.feedback}}"))
    );
    let t = json(
        &cli,
        &doc,
        "pr auto-prompt",
        &["pr", "auto-prompt", "--project", "demo", "--reset"],
    );
    assert_eq!(t["edited"], false);
    let out = cli.run(&["pr", "auto-prompt", "--project", "nope"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nope"), "{err}");
}
