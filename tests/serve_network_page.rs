//! The approvals page's network section (issue 21: "the allow-list editable
//! from the page") in headless Chromium against `berth serve` on a real
//! store: it lists the project's allowed and denied hosts with the file each
//! is written in (a preset's without a Remove button); the form adds a host
//! and a button removes one, through the same headers as approve and deny,
//! and the project's `berth.toml` and the gate follow; "Always allow" on a
//! pending `network_connect` adds its host, which the section then shows
//! from `permissions.json` and removes again. axe-core finds nothing.

use std::time::Duration;

use berth_engine::projects::with_key;
use serde_json::json;

use crate::browser::{Browser, chromium_and_driver};
use crate::http::Target;
use crate::server::{Served, State, wait_for};

#[test]
fn the_page_edits_a_projects_network_lists_and_always_allows_a_held_host() {
    let Some((chromium, chromedriver)) = chromium_and_driver() else {
        return;
    };
    let state = State::with_project();
    state.edit_config(|t| {
        let t = with_key(&t, "sandbox.network", "mode", "\"allowlist\"");
        let t = with_key(&t, "sandbox.network", "allow", "[\"registry.test\"]");
        let t = with_key(&t, "sandbox.network", "deny", "[\"blocked.test\"]");
        with_key(&t, "sandbox.network", "allow_presets", "[\"crates\"]")
    });
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);

    let served = Served::start(&state, &["--listen", "127.0.0.1:0"]);
    let Target::Tcp(addr) = served.target else {
        panic!("not TCP")
    };
    let api = served.client(&state);
    // A connection the rules do not name: held for a person.
    let held = api
        .call(
            "POST",
            "/api/actions",
            Some(&json!({
                "agent": "dev-1",
                "action": {"type": "network_connect", "host": "mirror.test", "port": 443},
            })),
        )
        .json();
    assert_eq!(held["status"]["status"], "pending", "{held}");
    let held = held["id"].as_str().unwrap().to_string();

    let browser = Browser::start(&chromium, &chromedriver);
    browser.go(&format!("http://{addr}/login?token={}", state.token()));
    let section = "article.network[data-project=\"demo\"]";
    browser.find(&format!("{section} form.net-add"));
    let hosts = |list: &str| browser.texts(&format!("{section} ul.hosts.{list} li.host code"));
    assert_eq!(hosts("deny"), ["blocked.test"]);
    let allowed = hosts("allow");
    assert_eq!(allowed[0], "registry.test", "{allowed:?}");
    assert!(
        allowed.iter().any(|h| h == "static.crates.io"),
        "{allowed:?}"
    );
    // A preset's hosts have no Remove button; berth.toml's have.
    let buttons = browser.script(&format!(
        "return Array.from(document.querySelectorAll('{}')).map(function (b) {{ return b.dataset.host; }})",
        format!("{section} button.net-remove").replace('\'', "\\'")
    ));
    assert_eq!(buttons, json!(["registry.test", "blocked.test"]));

    // The form adds a host to the allow list, in berth.toml.
    browser.type_in(&format!("{section} input.host"), "Files.Example.Test");
    browser.click(&format!("{section} form.net-add button[type=\"submit\"]"));
    wait_for("the added host", Duration::from_secs(20), || {
        hosts("allow")
            .iter()
            .any(|h| h == "files.example.test")
            .then_some(())
    });
    let config = std::fs::read_to_string(state.config()).unwrap();
    assert!(
        config.contains("allow = [\"registry.test\", \"files.example.test\"]"),
        "{config}"
    );
    let list = api.call("GET", "/api/projects/demo/network", None).json();
    assert!(
        list["allow"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["host"] == "files.example.test" && r["source"] == "berth.toml"),
        "{list}"
    );

    // Remove the denied host with its button: the deny list is empty.
    browser.click(&format!(
        "{section} ul.hosts.deny button[data-host=\"blocked.test\"]"
    ));
    wait_for("the removed host", Duration::from_secs(20), || {
        hosts("deny").is_empty().then_some(())
    });
    let config = std::fs::read_to_string(state.config()).unwrap();
    assert!(config.contains("deny = []"), "{config}");

    // "Always allow" on the held connection: approved, and its host is on
    // the allow list from permissions.json, removable like the others.
    let always = format!("article.action[data-action-id=\"{held}\"] button.always");
    assert_eq!(browser.text(&always), "Always allow mirror.test");
    browser.click(&always);
    wait_for("the approval", Duration::from_secs(20), || {
        let a = api
            .call("GET", &format!("/api/actions/{held}"), None)
            .json();
        (a["status"] == "executed").then_some(())
    });
    let rules =
        std::fs::read_to_string(berth_engine::StateDir::new(state.state()).project_rules("demo"))
            .unwrap();
    assert!(rules.contains("WebFetch(domain:mirror.test)"), "{rules}");
    // The section is shown anew on the next host change; reload it now.
    browser.go(&format!("http://{addr}/"));
    wait_for("the always-allowed host", Duration::from_secs(20), || {
        hosts("allow")
            .iter()
            .any(|h| h == "mirror.test")
            .then_some(())
    });
    if let Some(v) = browser.axe_violations() {
        assert!(v.is_empty(), "axe-core on the network section: {v:#?}");
    }
    browser.click(&format!(
        "{section} ul.hosts.allow button[data-host=\"mirror.test\"]"
    ));
    wait_for(
        "the always-allowed host removed",
        Duration::from_secs(20),
        || (!hosts("allow").iter().any(|h| h == "mirror.test")).then_some(()),
    );
    let list = api.call("GET", "/api/projects/demo/network", None).json();
    assert!(!list.to_string().contains("mirror.test"), "{list}");

    // Each change is an event.
    let events = api.call("GET", "/api/events", None).json();
    let kinds: Vec<&str> = events
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|k| k.starts_with("project.network_rule"))
        .collect();
    assert_eq!(
        kinds,
        [
            "project.network_rule_added",
            "project.network_rule_removed",
            "project.network_rule_removed"
        ]
    );

    drop(browser);
    served.stop();
}
