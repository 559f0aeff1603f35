//! A PR's checks (`[[checks]]`): run as berth's own effect on each head of
//! the PR, once per head, in a throwaway checkout confined like a runner
//! exec; and its conflicts with the base's tip, recomputed when it moves.

use crate::cli::Cli;

/// A project whose noop agent has opened PR #1; the task's id.
pub(crate) fn pr_open(cli: &Cli) -> String {
    cli.ok(&[
        "agent",
        "activate",
        "noop-1",
        "--project",
        "demo",
        "--impl",
        "noop",
    ]);
    let t = cli.json(&[
        "task",
        "create",
        "--project",
        "demo",
        "--title",
        "checked",
        "--json",
    ]);
    cli.ok(&["up", "noop-1", "--project", "demo", "--mode", "runner"]);
    cli.ok(&["agent", "run", "noop-1", "--until-idle"]);
    t["id"].as_str().unwrap().to_string()
}

fn checks_json(cli: &Cli, args: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = cli.run(args);
    let v = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), v)
}

#[test]
fn checks_run_once_per_head_confined_and_say_what_failed() {
    let cli = Cli::new().with_project();
    pr_open(&cli);
    let escape = cli.state().join("escaped");
    let config = cli.config();
    let config_before = std::fs::read_to_string(&config).unwrap();
    cli.edit_config(|text| {
        format!(
            "{text}\n[[checks]]\nname = \"file\"\ncommand = \"test -f a.txt && echo found\"\n\
             \n[[checks]]\nname = \"broken\"\ncommand = \"echo it broke >&2; exit 3\"\n\
             \n[[checks]]\nname = \"confined\"\n\
             command = \"echo x > {} 2>/dev/null; echo x >> {} 2>/dev/null; echo built > out.txt; cat out.txt\"\n",
            escape.display(),
            config.display()
        )
    });
    // Nothing runs until asked (or watched): every check is due.
    let (code, before) = checks_json(&cli, &["pr", "checks", "1", "--json"]);
    assert_eq!(code, Some(0), "{before}");
    let statuses = |v: &serde_json::Value| -> Vec<(String, String)> {
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                (
                    c["name"].as_str().unwrap().to_string(),
                    c["status"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert!(
        statuses(&before).iter().all(|(_, s)| s == "queued"),
        "{before}"
    );

    let (code, ran) = checks_json(&cli, &["pr", "checks", "1", "--run", "--json"]);
    assert_eq!(code, Some(1), "a failed check exits 1: {ran}");
    assert_eq!(
        statuses(&ran),
        [
            ("file".to_string(), "success".to_string()),
            ("broken".to_string(), "failure".to_string()),
            ("confined".to_string(), "success".to_string()),
        ]
    );
    let broken = &ran["checks"][1];
    assert_eq!(broken["exit_code"], 3);
    assert!(
        broken["output_tail"].as_str().unwrap().contains("it broke"),
        "{broken}"
    );
    assert!(
        ran["checks"][2]["output_tail"]
            .as_str()
            .unwrap()
            .contains("built")
    );
    assert!(!escape.exists(), "a check wrote berth's state directory");
    let config_after = std::fs::read_to_string(&config).unwrap();
    assert!(
        config_after.starts_with(&config_before) && !config_after.ends_with("x\n"),
        "a check wrote the project's berth.toml"
    );
    assert_eq!(ran["conflicts"], serde_json::json!([]));
    // The throwaway checkouts are gone.
    let left: Vec<_> = std::fs::read_dir(cli.state().join("checks"))
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");

    // Once per head: a second run, and the watcher, run nothing again.
    let (_, again) = checks_json(&cli, &["pr", "checks", "1", "--run", "--json"]);
    assert_eq!(again["checks"], ran["checks"]);
    cli.ok(&["pr", "watch", "--once"]);
    let events = cli.json(&["events", "--json"]);
    let count = |kind: &str| {
        events
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == kind)
            .count()
    };
    assert_eq!(
        (count("check.queued"), count("check.started")),
        (3, 3),
        "each check ran once on this head"
    );
    assert_eq!((count("check.passed"), count("check.failed")), (2, 1));
    // Never counted as decisions.
    let metrics = cli.json(&["metrics", "--json"]);
    assert_eq!(
        metrics["proposed"],
        count("proposed_action.created"),
        "{metrics}"
    );
}

#[test]
fn a_pr_that_conflicts_with_its_moved_base_says_where() {
    let cli = Cli::new().with_project();
    let task = pr_open(&cli);
    let (_, clean) = checks_json(&cli, &["pr", "checks", "1", "--json"]);
    assert_eq!(clean["conflicts"], serde_json::json!([]), "{clean}");
    // The base moves with a different file at the PR's path.
    let short = &task[..8];
    let path = format!("noop/{short}.md");
    let src = cli.root().join("src");
    std::fs::create_dir_all(src.join("noop")).unwrap();
    std::fs::write(src.join(&path), "not the agent's\n").unwrap();
    let git = |args: &[&str]| {
        let s = std::process::Command::new("git")
            .current_dir(&src)
            .args(args)
            .status()
            .unwrap();
        assert!(s.success(), "git {args:?}");
    };
    git(&["add", "."]);
    git(&[
        "-c",
        "user.name=a",
        "-c",
        "user.email=a@b",
        "commit",
        "-qm",
        "base moves",
    ]);
    cli.ok(&["project", "sync", "demo"]);
    let (code, moved) = checks_json(&cli, &["pr", "checks", "1", "--json"]);
    assert_eq!(moved["conflicts"], serde_json::json!([path]), "{moved}");
    assert_eq!(code, Some(1), "a conflicting PR exits 1");
    let text = cli.run(&["pr", "checks", "1"]);
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("conflicts with main in: noop/"), "{text}");
}
