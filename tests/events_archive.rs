//! `berth events archive`: the old events go to a JSONL file, as `berth
//! events --json` printed them, and only then out of the store; the
//! retention in `<state>/store.toml` gives the cut-off when no `--before`
//! does.

use crate::cli::Cli;

fn events(cli: &Cli) -> Vec<serde_json::Value> {
    serde_json::from_str(&cli.ok(&["events", "--json"])).unwrap()
}

#[test]
fn archive_writes_old_events_to_a_file_then_deletes_them() {
    let cli = Cli::new().with_project();
    cli.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    cli.ok(&["exec", "dev-1", "--", "true"]);
    // Not delivered from the outbox yet: nothing is archived.
    let to = cli.state().join("first.jsonl");
    let out = cli.ok(&[
        "events",
        "archive",
        "--before",
        "2999-01-01",
        "--to",
        to.to_str().unwrap(),
        "--json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["events"], 0, "{v}");
    let before = events(&cli);
    cli.ok(&["outbox", "drain"]);

    // No --before and no retention: an error that names the setting.
    let (_, err) = cli.err(&["events", "archive"]);
    assert!(err.contains("retain_events_days"), "{err}");
    let config = cli.state().join("store.toml");
    std::fs::write(&config, "[store]\nretain_days = 1\n").unwrap();
    let (_, err) = cli.err(&["events", "archive"]);
    assert!(err.contains("store.toml:2"), "{err}");
    std::fs::write(&config, "[store]\nretain_events_days = 0\n").unwrap();
    let out = cli.ok(&["events", "archive", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let path = std::path::PathBuf::from(v["path"].as_str().unwrap());
    assert!(path.starts_with(cli.state().join("archive")), "{v}");
    let archived: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every event but the newest, each as `berth events --json` printed it
    // (a proposed action's decision joined back in).
    assert_eq!(archived, before[..before.len() - 1]);
    assert!(
        archived
            .iter()
            .any(|e| e["type"] == "proposed_action.created" && e["payload"]["decision"].is_object())
    );
    assert_eq!(v["events"], archived.len());
    assert_eq!(events(&cli), before[before.len() - 1..]);
    // The action itself stays, whole.
    let actions: Vec<serde_json::Value> =
        serde_json::from_str(&cli.ok(&["actions", "--json"])).unwrap();
    assert_eq!(actions[0]["decision"]["verdict"], "auto_approve");
}
