//! A PR's checks (`[[checks]]`): run as berth's own effect on each head of
//! the PR, once per head, in a throwaway checkout confined like a runner
//! exec; and its conflicts with the base's tip, recomputed when it moves.
//! In an `allowlist` project a check with `network` reaches only what the
//! allow-list permits, through berth's proxy in its own berth.

use berth_engine::projects::with_key;

use crate::cli::Cli;
use crate::fixture::Fixture;
use crate::net::loopback_registry;

/// A project whose noop agent has opened PR #1; the task's id.
pub(crate) fn pr_open(cli: &Fixture) -> String {
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

fn checks_json(cli: &Fixture, args: &[&str]) -> (Option<i32>, serde_json::Value) {
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

/// `[sandbox.network] mode = "allowlist"`: a check with `network` runs in
/// its own fresh berth whose only way out is berth's proxy on its
/// loopback. An allowed name goes through and is a `network.connected` of
/// the check; a name no rule allows is refused at once — never held for a
/// person, though the agent is in auto mode — and a denied one with the
/// deny rule's reason; around the proxy, nothing. A check without
/// `network` has no proxy at all.
#[test]
fn a_check_with_network_reaches_only_the_allow_list_through_berths_proxy() {
    let (port, seen) = loopback_registry();
    let mut f = Fixture::new().with_berth_mode("runner");
    f.set_env(
        "BERTH_EGRESS_HOSTS",
        "registry.test=127.0.0.1,unknown.test=127.0.0.1,blocked.test=127.0.0.1",
    );
    f.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    f.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    f.edit_config(|t| {
        let t = with_key(&t, "sandbox.network", "mode", "\"allowlist\"");
        let t = with_key(&t, "sandbox.network", "allow", "[\"registry.test\"]");
        let t = with_key(&t, "sandbox.network", "deny", "[\"blocked.test\"]");
        with_key(&t, "sandbox.network", "wait_secs", "30")
    });
    pr_open(&f);
    f.ok(&["agent", "auto-mode", "noop-1", "on"]);
    let curl = "curl -sS --fail-with-body --max-time 20";
    f.edit_config(|text| {
        let mut text = text;
        for (name, network, command) in [
            (
                "fetch",
                true,
                format!("{curl} http://registry.test:{port}/allowed"),
            ),
            (
                "unknown",
                true,
                format!("{curl} http://unknown.test:{port}/unknown"),
            ),
            (
                "blocked",
                true,
                format!("{curl} http://blocked.test:{port}/blocked"),
            ),
            (
                "around",
                true,
                format!("{curl} --noproxy '*' http://127.0.0.1:{port}/around"),
            ),
            (
                "offline",
                false,
                format!("{curl} --proxy http://127.0.0.1:3128 http://registry.test:{port}/offline"),
            ),
        ] {
            text.push_str(&format!(
                "\n[[checks]]\nname = \"{name}\"\nnetwork = {network}\ncommand = \"{}\"\n",
                command.replace('\\', "\\\\").replace('"', "\\\"")
            ));
        }
        text
    });
    let started = std::time::Instant::now();
    let (code, ran) = checks_json(&f, &["pr", "checks", "1", "--run", "--json"]);
    assert_eq!(code, Some(1), "{ran}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(25),
        "nothing was held: {:?}",
        started.elapsed()
    );
    let check = |name: &str| -> (String, String) {
        let c = ran["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("{name}: {ran}"));
        (
            c["status"].as_str().unwrap().to_string(),
            c["output_tail"].as_str().unwrap().to_string(),
        )
    };
    assert_eq!(check("fetch"), ("success".into(), "ok /allowed\n".into()));
    let (status, out) = check("unknown");
    assert!(
        status == "failure" && out.contains("allow-list") && out.contains("unknown.test"),
        "{status}: {out}"
    );
    let (status, out) = check("blocked");
    assert!(
        status == "failure" && out.contains("deny rule") && out.contains("blocked.test"),
        "{status}: {out}"
    );
    assert_eq!(check("around").0, "failure");
    assert_eq!(check("offline").0, "failure");
    assert_eq!(*seen.lock().unwrap(), ["/allowed"]);

    // The one connection is the check's, in the agent's log; no
    // `network_connect` was proposed.
    let log = f.json(&["net", "log", "noop-1", "--json"]);
    let rows = log.as_array().unwrap();
    assert_eq!(rows.len(), 1, "{log}");
    assert_eq!(rows[0]["host"], "registry.test");
    assert_eq!(rows[0]["check"], "fetch");
    assert_eq!(rows[0]["address"], format!("127.0.0.1:{port}"));
    let events = f.json(&["events", "--json"]);
    let held = events
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "proposed_action.created")
        .filter(|e| e["payload"]["action"]["type"] == "network_connect")
        .count();
    assert_eq!(held, 0, "{events}");
}
