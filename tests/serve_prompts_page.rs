//! The approvals page's sessions, prompt queue and prompt form (issue 18,
//! "Where it shows") in headless Chromium against `berth serve` on a real
//! store: an agent with no session shows its waiting prompt with the
//! reason; a `command` agent shows its idle session with its last turn's
//! exit code and output tail; the form queues a prompt (the same headers
//! as approve and deny), and, typed and sent with the keyboard alone, a
//! prompt runs the command agent's real program, whose new turn the page
//! shows from the event stream. axe-core finds nothing; it fits 390 px.

use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::{Browser, chromium_and_driver};
use crate::http::Target;
use crate::server::{Served, State, wait_for};

#[test]
fn the_page_shows_sessions_and_the_queue_and_its_form_sends_a_prompt() {
    let Some((chromium, chromedriver)) = chromium_and_driver() else {
        return;
    };
    let state = State::with_project();
    // dev-1: no session, so its prompt waits with the reason.
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["prompt", "dev-1", "first <b>read</b> the README"]);
    // cmd-1: a command agent whose program prints its prompt; one turn
    // ran before the server started.
    state.activate_command("cmd-1", r#"sh -c 'cat "$1"' sh {prompt_file}"#);
    state.ok(&["up", "cmd-1", "--project", "demo", "--mode", "runner"]);
    let task = state.new_task("docs");
    let opened = state.json(&["sessions", "cmd-1", "--open", &task, "--json"]);
    let session = opened[0]["id"].as_str().unwrap().to_string();
    state.ok(&["prompt", "cmd-1", "before <i>serve</i>"]);
    state.ok(&["agent", "turn", "cmd-1"]);

    let served = Served::start(&state, &["--listen", "127.0.0.1:0"]);
    let Target::Tcp(addr) = served.target else {
        panic!("not TCP")
    };
    let api = served.client(&state);
    let browser = Browser::start(&chromium, &chromedriver);
    browser.go(&format!("http://{addr}/login?token={}", state.token()));
    let dev = "article.agent[data-agent=\"dev-1\"]";
    let cmd = "article.agent[data-agent=\"cmd-1\"]";
    browser.find(&format!("{dev} form.send-prompt"));

    // dev-1's queue: the waiting prompt, as text, with why it waits.
    assert_eq!(browser.text(&format!("{dev} .queue-count")), "1");
    let queued = browser.text(&format!("{dev} ol.queue li.prompt"));
    assert!(
        queued.starts_with("queued · message from user:ada")
            && queued.contains("first <b>read</b> the README")
            && queued.contains("Waiting: no promptable session"),
        "{queued}"
    );
    assert!(
        browser
            .text(&format!("{dev} .no-sessions"))
            .starts_with("No session yet")
    );
    // cmd-1's session: idle after its turn, which exited 0 and printed
    // its prompt.
    let li = format!("{cmd} li.session[data-session-id=\"{session}\"]");
    assert_eq!(browser.text(&format!("{li} .status")), "idle");
    assert!(
        browser.text(&li).contains("primary"),
        "{}",
        browser.text(&li)
    );
    assert_eq!(browser.text(&format!("{li} .exit")), "exit 0");
    browser.click(&format!("{li} details.tails summary"));
    assert_eq!(
        browser.text(&format!("{li} pre.tail.stdout")),
        "before <i>serve</i>"
    );
    assert_eq!(browser.text(&format!("{cmd} .queue-count")), "0");
    assert_eq!(
        browser.script("return document.querySelectorAll('.agent-state pre *, .agent-state p.meta *:not(span):not(time):not(a)').length"),
        json!(0),
        "a prompt's markup is text"
    );

    // The form: a prompt for dev-1 is queued, and the page says why it
    // waits.
    browser.type_in(&format!("{dev} textarea"), "second: run the tests");
    browser.click(&format!("{dev} button.send"));
    let said = wait_for("the form's answer", Duration::from_secs(20), || {
        let t = browser.text(&format!("{dev} form .outcome"));
        (t != "sending…" && !t.is_empty()).then_some(t)
    });
    assert!(
        said.starts_with("queued: waiting (no promptable session: agent `dev-1`"),
        "{said}"
    );
    let queue = api.call("GET", "/api/agents/dev-1/queue", None).json();
    let queue = queue.as_array().unwrap();
    assert_eq!(queue.len(), 2, "{queue:?}");
    assert_eq!(
        (queue[1]["body"].as_str(), queue[1]["sender"]["id"].as_str()),
        (Some("second: run the tests"), Some("ada"))
    );
    browser.wait_text(&format!("{dev} .queue-count"), "2");
    assert_eq!(
        browser.script(&format!(
            "return document.querySelector('{}').value",
            format!("{dev} textarea").replace('\'', "\\'")
        )),
        json!("")
    );

    // The keyboard alone: typed into cmd-1's form, Tab to Send, Enter.
    // The command agent's program runs it, and the page shows the new
    // turn from the event stream.
    browser.script(&format!(
        "document.querySelector('{}').focus();",
        format!("{cmd} textarea").replace('\'', "\\'")
    ));
    browser.keys("just do a jk");
    browser.keys("\u{E004}");
    assert_eq!(
        browser.script("return document.activeElement.className"),
        json!("send")
    );
    browser.keys("\u{E007}");
    wait_for(
        "the page showing the new turn",
        Duration::from_secs(60),
        || {
            let tail = browser.script(&format!(
                "const p = document.querySelector('{}'); return p && p.textContent;",
                format!("{li} pre.tail.stdout").replace('\'', "\\'")
            ));
            (tail == json!("just do a jk")).then_some(())
        },
    );
    assert_eq!(browser.text(&format!("{li} .status")), "idle");
    let turns = api
        .call("GET", "/api/events?type=session.turn_ended", None)
        .json();
    assert_eq!(turns.as_array().unwrap().len(), 2, "{turns}");
    assert_eq!(turns[1]["payload"]["exit_code"], 0, "{turns}");

    // Accessible, and a phone's width holds the forms and the tails.
    browser.click(&format!("{li} details.tails summary"));
    if let Some(v) = browser.axe_violations() {
        assert!(v.is_empty(), "axe-core on the agents' sessions: {v:#?}");
    }
    browser.viewport(390, 844, true);
    let fit: Value = browser.script(&format!(
        "const b = document.querySelector('{}').getBoundingClientRect();\
         return [document.scrollingElement.scrollWidth, window.innerWidth, b.height];",
        format!("{dev} button.send").replace('\'', "\\'")
    ));
    assert_eq!(fit[1], json!(390), "{fit}");
    assert!(fit[0].as_f64().unwrap() <= 390.0, "{fit}");
    assert!(fit[2].as_f64().unwrap() >= 44.0, "{fit}");

    drop(browser);
    served.stop();
}
