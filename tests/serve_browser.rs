#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The approvals page in a real browser: Debian's headless Chromium driven
//! over WebDriver (chromedriver), against `berth serve --listen 127.0.0.1:0`
//! on a real store. It logs in with the token, sees the pending actions
//! with their segments, rules and paths and the auto-mode note, approves
//! and denies with the buttons, stops a running command with its Stop
//! button, and watches the noop agent's task move on to review after its
//! approved commit. Under `CI=true` a missing Chromium or chromedriver is a
//! failure (`.ci/run` installs them).

#[path = "support/browser.rs"]
mod browser;
#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/http.rs"]
mod http;
#[path = "serve_network_page.rs"]
mod network_page;
#[path = "serve_pr_page.rs"]
mod pr_page;
#[path = "serve_prompts_page.rs"]
mod prompts_page;
#[path = "support/server.rs"]
mod server;

use std::time::Duration;

use browser::{Browser, chromium_and_driver, which};
use http::Target;
use serde_json::{Value, json};
use server::{Served, State, wait_for};

#[test]
fn approve_and_deny_in_headless_chromium_and_watch_the_task_move_on() {
    let (Some(chromium), Some(chromedriver)) = (which("chromium"), which("chromedriver")) else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!(
                "chromium and chromedriver are needed under CI=true: apt-get install -y chromium chromium-driver (.ci/run does)"
            );
        }
        eprintln!(
            "skipping: chromium or chromedriver is not installed (apt-get install -y chromium chromium-driver)"
        );
        return;
    };

    let state = State::with_project();
    let cfg = state.state().join("projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, text.replace("max_parallel = 1", "max_parallel = 8")).unwrap();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&[
        "agent",
        "activate",
        "noop-1",
        "--project",
        "demo",
        "--impl",
        "noop",
    ]);
    state.ok(&["up", "noop-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&[
        "autonomy",
        "set",
        "noop-1",
        "git_commit",
        "require_approval",
    ]);
    let task: Value = serde_json::from_str(&state.ok(&[
        "task",
        "create",
        "--project",
        "demo",
        "--title",
        "shown in a browser",
        "--json",
    ]))
    .unwrap();
    let task_id = task["id"].as_str().unwrap().to_string();

    let served = Served::start(&state, &["--listen", "127.0.0.1:0"]);
    let Target::Tcp(addr) = served.target else {
        panic!("not TCP")
    };
    let api = served.client(&state);
    let propose = |command: &str| -> String {
        let r = api.call(
            "POST",
            "/api/actions",
            Some(&json!({"agent": "dev-1", "action": {"type": "terminal", "command": command}})),
        );
        let v = r.json();
        assert_eq!(v["status"]["status"], "pending", "{v}");
        v["id"].as_str().unwrap().to_string()
    };
    // A command with markup in it: the page must show it as text.
    let terminal = propose("echo '<img src=x onerror=window.__xss=1>' && cat /etc/hostname");
    let to_deny = propose("ls /root");
    let commit = wait_for(
        "the noop agent's pending commit",
        Duration::from_secs(30),
        || {
            let v = api
                .call("GET", "/api/actions?pending&agent=noop-1", None)
                .json();
            v[0]["id"].as_str().map(str::to_string)
        },
    );

    let browser = Browser::start(&chromium, &chromedriver);
    let base = format!("http://{addr}");
    browser.go(&format!("{base}/login?token={}", state.token()));

    // The pending terminal action, segment by segment.
    let card = format!("#action-{terminal}");
    browser.find(&card);
    // The login answer handed the page its session's secret and moved on
    // to `/`; from the page, the cookie alone opens no API call.
    let probe = browser.script(
        "const s = localStorage.getItem('berth-session-secret') || '';\
         const bare = new XMLHttpRequest(); bare.open('GET', '/api/agents', false); bare.send();\
         const withs = new XMLHttpRequest(); withs.open('GET', '/api/agents', false);\
         withs.setRequestHeader('X-Berth-Session-Secret', s); withs.send();\
         return [location.pathname, s.length, bare.status, withs.status];",
    );
    assert_eq!(probe, json!(["/", 64, 403, 200]));
    assert_eq!(browser.text("#pending-count"), "3");
    // How berth read it, segment by segment: folded under the reasons.
    browser.click(&format!("{card} details.segments summary"));
    let segments = browser.texts(&format!("{card} tr.segment"));
    assert_eq!(segments.len(), 2, "{segments:?}");
    assert!(
        segments[0].contains("echo <img src=x onerror=window.__xss=1>")
            && segments[0].contains("no rule"),
        "{segments:?}"
    );
    let rules = state.state().join("projects/demo/permissions.json");
    assert!(
        segments[1].contains("cat /etc/hostname")
            && segments[1].contains(&format!("allow \"cat\" ({}:", rules.display()))
            && segments[1].contains("/etc/hostname → /etc/hostname (outside the scope)"),
        "{segments:?}"
    );
    // ADR 0167 D5: before the click, each reason says whether auto mode
    // would lift it, and the card what the switch would change.
    let lifts = browser.texts(&format!("{card} .reasons li.lifts"));
    assert!(
        lifts.iter().any(|r| r.starts_with("scope "))
            && lifts.iter().any(|r| r.starts_with("partial_allow "))
            && lifts
                .iter()
                .all(|r| r.ends_with("— auto mode would lift this")),
        "{lifts:?}"
    );
    assert!(
        browser
            .find_all(&format!("{card} .reasons li.still-asks"))
            .is_empty()
    );
    assert_eq!(
        browser.text(&format!("{card} .automode")),
        "Auto mode is off for this agent. Turning it on would let this run without asking."
    );
    let agent_note = browser.text("article.agent[data-agent=\"noop-1\"]");
    assert!(
        agent_note.contains("Auto mode is off.") && agent_note.contains("Still asks"),
        "{agent_note}"
    );
    // Escaped, not executed.
    assert_eq!(
        browser.script("return document.querySelectorAll('main img').length"),
        json!(0)
    );
    assert_eq!(
        browser.script("return window.__xss === undefined"),
        json!(true)
    );

    // A new pending action appears without a reload (the event stream).
    let late = propose("ls /var");
    browser.find(&format!("#action-{late}"));
    // The count follows: up with the new one, down as each is decided.
    browser.wait_text("#pending-count", "4");

    // Approve: it runs, and the card says so.
    browser.click(&format!("{card} button.approve"));
    browser.wait_text(
        &format!("{card} .outcome"),
        "approved and executed (exit 0)",
    );
    let rec = api
        .call("GET", &format!("/api/actions/{terminal}"), None)
        .json();
    assert_eq!(
        (rec["status"].as_str(), rec["decided_by"].as_str()),
        (Some("executed"), Some("ada"))
    );

    browser.wait_text("#pending-count", "3");

    // Deny, with a reason typed into the card.
    let deny_card = format!("#action-{to_deny}");
    browser.type_in(&format!("{deny_card} input.reason"), "not now");
    // A deny waits five seconds in the page, with an Undo: undone, nothing
    // is sent; denied again, it is sent once the grace is over.
    browser.click(&format!("{deny_card} button.deny"));
    undo_the_deny(&browser, &deny_card);
    std::thread::sleep(Duration::from_secs(6));
    let rec = api
        .call("GET", &format!("/api/actions/{to_deny}"), None)
        .json();
    assert_eq!(rec["status"], "pending", "undone: {rec}");
    browser.click(&format!("{deny_card} button.deny"));
    browser.wait_text(&format!("{deny_card} .outcome"), "denied");
    let rec = api
        .call("GET", &format!("/api/actions/{to_deny}"), None)
        .json();
    assert_eq!(
        (rec["status"].as_str(), rec["diagnostic"].as_str()),
        (Some("denied"), Some("not now"))
    );
    browser.wait_text("#pending-count", "2");
    // Denied elsewhere (the API here): the card and the count follow the
    // event stream.
    let r = api.call(
        "POST",
        &format!("/api/actions/{late}/deny"),
        Some(&json!({})),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    browser.wait_text(
        &format!("#action-{late} .outcome"),
        "denied by user:ada elsewhere",
    );
    browser.wait_text("#pending-count", "1");

    // Stop a command another process runs: the page lists it under
    // "Running now" with a Stop button; the click cancels it.
    state.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let command = "echo before; sleep 306.5";
    std::thread::scope(|scope| {
        let exec = scope.spawn(|| state.run(&["exec", "dev-1", "--", command]));
        let running = wait_for("the command running", Duration::from_secs(30), || {
            let v = api.call("GET", "/api/actions?agent=dev-1", None).json();
            v.as_array()
                .unwrap()
                .iter()
                .find(|a| a["action"]["command"] == command && a["status"] == "executing")
                .map(|a| a["id"].as_str().unwrap().to_string())
        });
        browser.go(&format!("{base}/"));
        let running_card = format!("#running-{running}");
        assert!(
            browser
                .text(&format!("{running_card} h3"))
                .contains("sleep 306.5")
        );
        browser.click(&format!("{running_card} button.stop"));
        browser.wait_text(
            &format!("{running_card} .outcome"),
            "stopped: cancelled, its output so far kept",
        );
        let out = exec.join().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "before\n");
        let rec = api
            .call("GET", &format!("/api/actions/{running}"), None)
            .json();
        assert_eq!(rec["status"], "cancelled", "{rec}");
    });

    // The task's page is a review: the noop agent's commit waits there
    // with its buttons. Approved there, the server's loop goes on to push
    // and PR, and the page follows it into review.
    let commit_card = format!("#action-{commit}");
    assert!(
        browser
            .text(&format!("{commit_card} h2"))
            .starts_with("git_commit")
    );
    browser.go(&format!("{base}/tasks/{task_id}"));
    let waiting = format!("#waiting {commit_card}");
    browser.find(&waiting);
    assert_eq!(browser.text("#waiting #pending-count"), "1");
    let mode = browser.text("#task-mode");
    assert!(
        mode.starts_with("Execution mode: review (the project's; the project demo is in review)")
            && mode.contains("Auto: a run that succeeds ends done with no review"),
        "{mode}"
    );
    assert!(
        browser
            .text("#task-agent article.agent")
            .contains("Auto mode is off.")
    );
    browser.click(&format!("{waiting} button.approve"));
    browser.wait_text(&format!("{commit_card} .outcome"), "approved and executed");
    browser.wait_text("#task-status", "in_review");
    browser.wait_text("#waiting #pending-count", "0");
    // The timeline follows the log: each step with what it did, linked to
    // its events; the PR the loop opened is there.
    let pr_step = wait_for("the pr_open step", Duration::from_secs(60), || {
        browser
            .texts("#timeline li.step")
            .into_iter()
            .find(|r| r.contains("pr_open") && r.contains("executed"))
    });
    assert!(
        pr_step.contains("opened PR #") && pr_step.contains("events: #"),
        "{pr_step}"
    );
    let commit_step = browser.text(&format!("#step-{commit}"));
    assert!(commit_step.contains("committed "), "{commit_step}");
    // The log follows the event stream, which may trail the API the status
    // and the actions table read: wait for it rather than read it once.
    let kinds = [
        "task.claimed",
        "proposed_action.approved",
        "action.executed",
        "task.in_review",
    ];
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !kinds.iter().all(|kind| seen.iter().any(|k| k == kind)) {
        assert!(
            std::time::Instant::now() < deadline,
            "{kinds:?} in the task page's log {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
        seen = browser.texts("#events tr.event td.type");
    }
    if let Some(v) = browser.axe_violations() {
        assert!(v.is_empty(), "axe-core on the task page: {v:#?}");
    }
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-task-page.png");
    browser.screenshot(&shot);
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000);
    // On a phone too, nothing is wider than the screen.
    browser.viewport(390, 844, true);
    let fit = browser.script("return [document.scrollingElement.scrollWidth, window.innerWidth];");
    assert!(
        fit[0].as_f64() <= fit[1].as_f64() && fit[1] == json!(390),
        "{fit}"
    );
    browser.screenshot(
        &std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-task-page-390.png"),
    );
    browser.viewport(1200, 1600, false);
    // The execution mode's switch: this task to auto, said on the page
    // and in the store.
    browser.click("#task-mode button[data-mode=\"auto\"]");
    wait_for("the task in auto", Duration::from_secs(20), || {
        browser
            .text("#task-mode")
            .starts_with("Execution mode: auto (this task's own;")
            .then_some(())
    });
    let t = api
        .call("GET", &format!("/api/tasks/{task_id}"), None)
        .json();
    assert_eq!(t["execution_mode"], "auto", "{t}");

    drop(browser);
    served.stop();
}

/// A deny in its grace: the card counts down; Undo sends nothing.
fn undo_the_deny(browser: &Browser, card: &str) {
    assert!(
        browser
            .text(&format!("{card} .outcome"))
            .starts_with("denying in ")
    );
    browser.click(&format!("{card} button.undo"));
    browser.wait_text(
        &format!("{card} .outcome"),
        "deny cancelled: nothing was sent",
    );
}

/// Where the screenshots a person looks at go: under `target/`.
fn shot_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Issue 22: a page of 24 pending actions — one a 200,000-character
/// command with control characters, two file writes — stays bounded, shows
/// no raw control character, sorts by risk with a word and an icon, says
/// each reason once, shows each file write's diff against the current file
/// (read in the berth), and fits a 390 px phone. Screenshots at 1280 and
/// 390 px are written under `target/tmp/`.
#[test]
fn a_page_of_24_stays_bounded_sorted_by_risk_shows_diffs_and_fits_a_phone() {
    let Some((chromium, chromedriver)) = chromium_and_driver() else {
        return;
    };
    let state = State::with_project();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&["autonomy", "set", "dev-1", "file_write", "require_approval"]);
    let served = Served::start(&state, &["--listen", "127.0.0.1:0"]);
    let Target::Tcp(addr) = served.target else {
        panic!("not TCP")
    };
    let api = served.client(&state);
    let propose = |action: Value, params: Value| -> String {
        let r = api.call(
            "POST",
            "/api/actions",
            Some(&json!({"agent": "dev-1", "action": action, "params": params})),
        );
        let v = r.json();
        assert_eq!(v["status"]["status"], "pending", "{v}");
        v["id"].as_str().unwrap().to_string()
    };
    let terminal =
        |command: &str| propose(json!({"type": "terminal", "command": command}), json!({}));

    // The file as it is: written by an approved file_write, through berth.
    let old: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let first = propose(
        json!({"type": "file_write", "path": "src/cart.ts"}),
        json!({"content": old}),
    );
    let r = api.call(
        "POST",
        &format!("/api/actions/{first}/approve"),
        Some(&json!({})),
    );
    assert_eq!(r.json()["outcome"]["succeeded"], true, "{}", r.text());

    // 24 pending: a 200k-character command with NUL and ESC in it, a
    // recursive rm, a read outside the scope, a plain test run, a change
    // to cart.ts, a new file, and ordinary commands.
    let huge = format!("echo '\u{0}\u{1b}[31m{}'", "A".repeat(200_000));
    let huge_id = terminal(&huge);
    let low = terminal("npm test");
    // With the agent's stated intent (MCP run_command's `description`).
    let rm = propose(
        json!({"type": "terminal", "command": "rm -rf build"}),
        json!({"description": "clean the <b>build</b> before `make`"}),
    );
    let read = terminal("cat /etc/hostname");
    let new_content = old.replace("line 7\n", "line seven <b>\n");
    let change = propose(
        json!({"type": "file_write", "path": "src/cart.ts"}),
        json!({"content": new_content}),
    );
    let created: String = (1..=30).map(|i| format!("fresh {i}\n")).collect();
    let create = propose(
        json!({"type": "file_write", "path": "src/new.ts"}),
        json!({"content": created}),
    );
    // An external effect: approving it takes a second click.
    let push = terminal("git push origin HEAD:refs/heads/main");
    for i in 0..17 {
        if i % 2 == 0 {
            terminal(&format!("make target{i}"));
        } else {
            terminal(&format!("ls /srv/dir{i}"));
        }
    }

    // The fragment itself: bounded, no raw control character.
    let html = api.call("GET", "/api/pages/approvals", None).text();
    assert!(html.len() < 200 * 1024, "a {} byte page", html.len());
    assert!(
        !html.contains('\u{0}') && !html.contains('\u{1b}'),
        "raw controls"
    );
    assert!(
        html.contains("echo &#39;␀␛[31mAAAA"),
        "controls made visible"
    );
    assert_eq!(
        html.matches(&"A".repeat(1_000)).count(),
        0,
        "the 200k command is clipped"
    );

    let browser = Browser::start(&chromium, &chromedriver);
    let base = format!("http://{addr}");
    browser.go(&format!("{base}/login?token={}", state.token()));
    browser.viewport(1280, 900, false);
    browser.find(&format!("#action-{huge_id}"));
    assert_eq!(browser.text("#pending-count"), "24");
    browser.screenshot(&shot_path("serve-approvals-1280.png"));
    if let Some(v) = browser.axe_violations() {
        assert!(v.is_empty(), "axe-core on the approvals page: {v:#?}");
        // The check can fail: an image without a text alternative is found.
        browser.script(
            "const i = document.createElement('img'); i.id = 'no-alt'; \
             document.getElementById('content').append(i);",
        );
        let found = browser.axe_violations().unwrap();
        assert!(found.iter().any(|v| v["id"] == "image-alt"), "{found:#?}");
        browser.script("document.getElementById('no-alt').remove();");
    }

    // Bounded in the browser too: the document and the big card.
    let sizes = browser.script(&format!(
        "return [document.documentElement.outerHTML.length, \
         document.getElementById('action-{huge_id}').outerHTML.length, \
         document.scrollingElement.scrollHeight];"
    ));
    let (doc, card, height) = (
        sizes[0].as_u64().unwrap(),
        sizes[1].as_u64().unwrap(),
        sizes[2].as_u64().unwrap(),
    );
    eprintln!(
        "24 pending actions: fragment {} bytes, document {doc} characters, the 200k card {card}, {height} px tall",
        html.len()
    );
    assert!(doc < 200 * 1024 && card < 8 * 1024, "{sizes}");
    assert!(height < 24 * 900, "the page is {height} px tall");
    let shown = browser.text(&format!("#action-{huge_id} pre.code"));
    assert!(shown.chars().count() <= 500, "{} characters", shown.len());
    assert!(
        browser
            .text(&format!("#action-{huge_id} button.show-all"))
            .starts_with("Show all (1 line, 2000")
    );

    // Sorted by risk, highest first; each card says its level in a word.
    let risks: Vec<String> = browser
        .script("return Array.from(document.querySelectorAll('#pending-list article.action')).map(a => a.dataset.risk)")
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let rank = |r: &str| {
        ["low", "medium", "high"]
            .iter()
            .position(|x| *x == r)
            .unwrap()
    };
    assert!(
        risks.windows(2).all(|w| rank(&w[0]) >= rank(&w[1])),
        "{risks:?}"
    );
    let said = |id: &str| {
        browser
            .text(&format!("#action-{id} .card-head"))
            .replace('\n', " ")
    };
    assert_eq!(said(&rm), "terminal ▲ High risk a recursive rm");
    assert_eq!(
        said(&read),
        "terminal ◆ Medium risk reads outside the project"
    );
    assert_eq!(said(&low), "terminal ● Low risk nothing risky found");
    assert_eq!(
        browser.text(&format!("#action-{rm} .intent")),
        "Intent clean the <b>build</b> before make"
    );

    // Each reason once, in words; the stage a small tag; the agent once;
    // a relative time with the exact one on hover.
    let reasons = browser.texts(&format!("#action-{read} .reasons li"));
    let mut unique = reasons.clone();
    unique.dedup();
    assert_eq!(reasons, unique);
    assert!(
        reasons.iter().any(|r| r.starts_with("scope ")
            && r.contains("/etc/hostname")
            && r.ends_with("— auto mode would lift this")),
        "{reasons:?}"
    );
    let card_text = browser.text(&format!("#action-{read}"));
    assert_eq!(card_text.matches("dev-1").count(), 1, "{card_text}");
    assert!(!card_text.contains('`'), "{card_text}");
    let time = browser.script(&format!(
        "const t = document.querySelector('#action-{read} time'); return [t.textContent, t.title];"
    ));
    assert_eq!(time[0], "just now");
    assert!(time[1].as_str().unwrap().ends_with('Z'), "{time}");

    // A file write shows its diff against the file in the berth.
    let diff_card = format!("#action-{change}");
    assert_eq!(
        browser.text(&format!("{diff_card} .diff-head")),
        "Changes the file: +1 −1 lines"
    );
    let diff = browser.text(&format!("{diff_card} pre.diff"));
    assert!(
        diff.contains("− line 7") && diff.contains("+ line seven <b>") && diff.contains("  line 4"),
        "{diff}"
    );
    assert!(!diff.contains("line 3\n"), "three lines of context: {diff}");
    let new_card = format!("#action-{create}");
    assert_eq!(
        browser.text(&format!("{new_card} .diff-head")),
        "New file, 30 lines"
    );
    assert!(
        !browser
            .text(&format!("{new_card} pre.diff"))
            .contains("fresh 13")
    );
    browser.click(&format!("{new_card} button.show-all"));
    wait_for("the whole new file", Duration::from_secs(20), || {
        browser
            .text(&format!("{new_card} pre.diff"))
            .contains("+ fresh 30")
            .then_some(())
    });

    // "Show all" of the 200k command: the whole, once, as text.
    browser.click(&format!("#action-{huge_id} button.show-all"));
    let whole = wait_for("the whole command", Duration::from_secs(20), || {
        let n = browser.script(&format!(
            "return document.querySelector('#action-{huge_id} pre.code').textContent"
        ));
        let s = n.as_str().unwrap().to_string();
        (s.len() > 200_000).then_some(s)
    });
    assert!(whole.starts_with("echo '␀␛[31mAAA"), "{}", &whole[..40]);
    assert_eq!(
        browser.script(&format!(
            "return document.querySelectorAll('#action-{huge_id} pre').length"
        )),
        json!(1)
    );

    // The keyboard: j/k move, d denies with the grace's Undo, a approves
    // on a second a.
    let current = || {
        browser.script("const c = document.querySelector('article.action.current'); return c && c.dataset.actionId;")
    };
    browser.keys("j");
    assert_eq!(current(), json!(rm), "the highest risk first");
    browser.keys("jk");
    assert_eq!(current(), json!(rm));
    assert_eq!(
        browser.script("return document.activeElement.dataset.actionId"),
        json!(rm)
    );
    browser.keys("d");
    undo_the_deny(&browser, &format!("#action-{rm}"));
    browser.keys("a");
    assert_eq!(
        browser.text(&format!("#action-{rm} .outcome")),
        "press a again (or Enter) to approve"
    );
    browser.keys("a");
    browser.wait_text(
        &format!("#action-{rm} .outcome"),
        "approved and executed (exit 0)",
    );
    browser.wait_text("#pending-count", "23");

    // A privileged action asks to confirm: the first click approves
    // nothing.
    let push_card = format!("#action-{push}");
    assert_eq!(
        said(&push),
        "terminal ▲ High risk has an effect outside the sandbox"
    );
    browser.click(&format!("{push_card} button.approve"));
    assert_eq!(
        browser.text(&format!("{push_card} button.approve")),
        "Confirm approve"
    );
    assert_eq!(
        browser.text(&format!("{push_card} .outcome")),
        "this has an effect outside the sandbox: click again to approve"
    );
    let rec = api
        .call("GET", &format!("/api/actions/{push}"), None)
        .json();
    assert_eq!(rec["status"], "pending", "{rec}");

    // A phone: nothing wider than the screen, 44 px targets, Approve next
    // to the command.
    browser.go(&format!("{base}/"));
    browser.viewport(390, 844, true);
    browser.find(&format!("#action-{read}"));
    let fit = browser.script(&format!(
        "const c = document.querySelector('#action-{read}');\
         const code = c.querySelector('pre.code').getBoundingClientRect();\
         const ok = c.querySelector('button.approve').getBoundingClientRect();\
         const no = c.querySelector('button.deny').getBoundingClientRect();\
         const card = c.getBoundingClientRect();\
         return [document.scrollingElement.scrollWidth, window.innerWidth,\
                 ok.height, no.height, ok.top - code.bottom, no.right <= card.right, ok.top];"
    ));
    let (scroll, inner) = (fit[0].as_f64().unwrap(), fit[1].as_f64().unwrap());
    assert_eq!(inner, 390.0, "{fit}");
    assert!(scroll <= inner, "{scroll} px wide at {inner}: {fit}");
    assert!(
        fit[2].as_f64().unwrap() >= 44.0 && fit[3].as_f64().unwrap() >= 44.0,
        "{fit}"
    );
    assert!(
        fit[4].as_f64().unwrap() < 40.0,
        "Approve right under the command: {fit}"
    );
    assert_eq!(fit[5], json!(true), "Deny inside its card: {fit}");
    browser.screenshot(&shot_path("serve-approvals-390.png"));
    for name in ["serve-approvals-1280.png", "serve-approvals-390.png"] {
        assert!(std::fs::metadata(shot_path(name)).unwrap().len() > 1000);
    }

    drop(browser);
    served.stop();
}
