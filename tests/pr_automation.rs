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

/// `kill -9` of `berth pr watch --once` at random points while it runs
/// checks and auto-merge proposes merges for several PRs, then one clean
/// pass: every PR has exactly one `git_merge` action (a proposal a kill cut
/// off before its record is found again by its key, never made twice), and
/// every PR's automation records it. `BERTH_CRASH_ROUNDS` (default 2) and
/// `BERTH_CRASH_SEED` for longer runs; the loop's time is printed.
#[test]
fn kill_9_between_a_merge_proposal_and_its_record_never_proposes_twice() {
    const N: usize = 4;
    let started = std::time::Instant::now();
    let rounds: u64 = std::env::var("BERTH_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let mut rng: u64 = std::env::var("BERTH_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xa11e);
    let mut next = |below: u64| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) % below
    };
    let mut kills = 0;
    for round in 0..rounds {
        let cli = Cli::new().with_project();
        cli.edit_config(|t| format!("{t}\n[[checks]]\nname = \"ok\"\ncommand = \"true\"\n"));
        for i in 0..N {
            let agent = format!("noop-{i}");
            cli.ok(&[
                "agent",
                "activate",
                &agent,
                "--project",
                "demo",
                "--impl",
                "noop",
            ]);
            cli.ok(&[
                "task",
                "create",
                "--project",
                "demo",
                "--title",
                &format!("t{i}"),
            ]);
            cli.ok(&["agent", "run", &agent, "--until-idle"]);
        }
        for n in 1..=N {
            // Checks not run yet: turning it on proposes nothing.
            cli.ok(&["pr", "auto", &n.to_string(), "--merge", "on"]);
        }
        // Kills from early in the pass to late: the first ones cut it
        // while checks run or merges are proposed.
        for attempt in 0..6 {
            let mut child = cli
                .command(&["pr", "watch", "--once"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(std::time::Duration::from_millis(next(80) + attempt * 70));
            if child.try_wait().unwrap().is_none() {
                kills += 1;
            }
            child.kill().ok(); // SIGKILL: no cleanup runs.
            child.wait().unwrap();
        }
        cli.ok(&["pr", "watch", "--once"]);
        let actions = cli.json(&["actions", "--json"]);
        for n in 1..=N {
            let pr = cli.json(&["pr", "show", &n.to_string(), "--json"]);
            let id = pr["id"].as_str().unwrap();
            let merges: Vec<_> = actions
                .as_array()
                .unwrap()
                .iter()
                .filter(|a| a["action"]["type"] == "git_merge" && a["params"]["pr"] == id)
                .collect();
            assert_eq!(merges.len(), 1, "round {round}, PR #{n}: {merges:#?}");
            let auto = cli.json(&["pr", "auto", &n.to_string(), "--json"]);
            assert_eq!(
                auto["merge_action"], merges[0]["id"],
                "round {round}, PR #{n}: {auto}"
            );
        }
    }
    assert!(
        kills > 0,
        "no kill landed mid-pass: the loop tested nothing"
    );
    eprintln!(
        "kill -9 crash loop: {rounds} rounds, {kills} kills mid-pass, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
