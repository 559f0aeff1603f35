//! A task's PRs on its page (issue 19, "Where it shows"), in headless
//! Chromium against `berth serve` on a real store and forge: the noop
//! agent's PR with its failed check (and the output tail), an unresolved
//! review thread, its diff, and the automation switches with what each
//! does; turning auto-fix on from the page evaluates the PR at once (one
//! auto-fix prompt, the chip "Auto-fix 1/10"), by mouse and then, for
//! auto-merge, by keyboard alone. axe-core finds nothing; it fits 390 px.

use crate::browser::{Browser, chromium_and_driver};
use crate::http::Target;
use crate::server::{Served, State};

#[test]
fn the_task_page_shows_its_pr_and_switches_its_automation() {
    let Some((chromium, chromedriver)) = chromium_and_driver() else {
        return;
    };
    let state = State::with_project();
    state.edit_config(|text| {
        format!("{text}\n[[checks]]\nname = \"fixed\"\ncommand = \"echo 'not <b>yet</b>'; cat noop/*.fix.md\"\n")
    });
    state.ok(&[
        "agent",
        "activate",
        "noop-1",
        "--project",
        "demo",
        "--impl",
        "noop",
    ]);
    let task = state.new_task("paged");
    state.ok(&["agent", "run", "noop-1", "--until-idle"]);
    // It fails (exit 1 says so).
    assert_eq!(
        state.run(&["pr", "checks", "1", "--run"]).status.code(),
        Some(1)
    );
    state.ok(&[
        "pr",
        "comment",
        "1",
        "please <i>rename</i> it",
        "--path",
        "README.md",
        "--line",
        "1",
    ]);

    let served = Served::start(&state, &["--listen", "127.0.0.1:0"]);
    let Target::Tcp(addr) = served.target else {
        panic!("not TCP")
    };
    let api = served.client(&state);
    let browser = Browser::start(&chromium, &chromedriver);
    browser.go(&format!("http://{addr}/login?token={}", state.token()));
    browser.go(&format!("http://{addr}/tasks/{task}"));
    let pr = "#prs article.pr[data-pr=\"1\"]";
    browser.find(pr);
    assert!(browser.text(&format!("{pr} h3")).starts_with("PR #1: "));
    assert_eq!(browser.text(&format!("{pr} .pr-status")), "open");
    assert_eq!(
        browser.text(&format!("{pr} li.check .check-status")),
        "failed"
    );
    browser.click(&format!("{pr} li.check details summary"));
    assert!(
        browser
            .text(&format!("{pr} li.check pre.tail"))
            .contains("not <b>yet</b>"),
        "a check's output is text"
    );
    assert_eq!(browser.text(&format!("{pr} .thread-count")), "1");
    let thread = browser.text(&format!("{pr} li.thread"));
    assert!(
        thread.contains("README.md:1") && thread.contains("please <i>rename</i> it"),
        "{thread}"
    );
    assert_eq!(
        browser.text(&format!("{pr} h4.changes-head")),
        "Changes (1 file)"
    );
    assert_eq!(browser.text(&format!("{pr} .auto-state")), "disabled");
    let says = browser.text(&format!("{pr} ul.switches"));
    assert!(says.contains("never automatic"), "{says}");

    // Auto-fix on, by mouse: the evaluation runs at once.
    browser.click(&format!("{pr} button[data-switch=\"fix\"]"));
    browser.wait_text(&format!("{pr} .auto-state"), "auto_fix");
    assert_eq!(browser.text(&format!("{pr} .chip")), "Auto-fix 1/10");
    // One prompt (the server's loop may already have handed it to the
    // noop agent, which answers it with a fix commit).
    let prompted = api
        .call("GET", "/api/events?type=automation.fix_prompted", None)
        .json();
    assert_eq!(prompted.as_array().unwrap().len(), 1, "{prompted}");
    assert_eq!(prompted[0]["payload"]["round"], 1);

    // Auto-merge on, by keyboard alone: focus its switch, Enter.
    browser.script(&format!(
        "document.querySelector('{}').focus();",
        format!("{pr} button[data-switch=\"merge\"]").replace('\'', "\\'")
    ));
    browser.keys("\u{E007}");
    browser.wait_text(&format!("{pr} .auto-state"), "both");
    let auto = api.call("GET", "/api/prs/1/automation", None).json();
    assert_eq!(auto["switches"]["merge"], true, "{auto}");

    if let Some(v) = browser.axe_violations() {
        assert!(v.is_empty(), "axe-core on the task page with a PR: {v:#?}");
    }
    browser.viewport(390, 844, true);
    let wider = browser.script(
        "return Array.from(document.querySelectorAll('#prs *')).filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).length",
    );
    assert_eq!(
        wider,
        serde_json::json!(0),
        "nothing of the PR is wider than a phone"
    );
}
