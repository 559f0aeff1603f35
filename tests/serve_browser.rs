#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The approvals page in a real browser: Debian's headless Chromium driven
//! over WebDriver (chromedriver), against `berth serve --listen 127.0.0.1:0`
//! on a real store. It logs in with the token, sees the pending actions
//! with their segments, rules and paths and the auto-mode note, approves
//! and denies with the buttons, stops a running command with its Stop
//! button, and watches the noop agent's task move on to review after its
//! approved commit. Under `CI=true` a missing Chromium or chromedriver is a
//! failure (`.ci/run` installs them).

#[path = "support/fixture.rs"]
mod fixture;
#[path = "support/http.rs"]
mod http;
#[path = "support/server.rs"]
mod server;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use http::{Client, Target};
use serde_json::{Value, json};
use server::{Served, State, wait_for};

// The W3C WebDriver web element identifier.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

/// A chromedriver this test started, and its one session.
/// How often a lookup is repeated when the page replaced what it found.
const STALE_RETRIES: usize = 20;

struct Browser {
    driver: Child,
    wd: Client,
    session: String,
}

impl Browser {
    fn start(chromium: &std::path::Path, chromedriver: &std::path::Path) -> Browser {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let wd = Client::new(
            Target::Tcp(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
            None,
        );
        let mut b = Browser {
            driver,
            wd,
            session: String::new(),
        };
        wait_for("chromedriver", Duration::from_secs(20), || {
            let ok = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
                && b.wd.raw("GET", "/status", &[], None).json()["value"]["ready"] == true;
            ok.then_some(())
        });
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu",
                         "--disable-dev-shm-usage", "--window-size=1200,1600"]
            }
        }}});
        let r = b.wd.call("POST", "/session", Some(&caps));
        assert_eq!(r.status, 200, "new session: {}", r.text());
        b.session = r.json()["value"]["sessionId"].as_str().unwrap().to_string();
        b
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let url = format!("/session/{}{path}", self.session);
        let empty = json!({});
        let body = match method {
            "GET" => None,
            _ => Some(body.as_ref().unwrap_or(&empty)),
        };
        let r = self.wd.call(method, &url, body);
        let v = r.json();
        assert_eq!(r.status, 200, "{method} {path}: {v}");
        v["value"].clone()
    }

    fn go(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    fn find_all(&self, css: &str) -> Vec<String> {
        self.cmd(
            "POST",
            "/elements",
            Some(json!({"using": "css selector", "value": css})),
        )
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            e[ELEMENT]
                .as_str()
                .unwrap_or_else(|| panic!("no element id in {e}"))
                .to_string()
        })
        .collect()
    }

    /// Waits for an element to exist.
    fn find(&self, css: &str) -> String {
        wait_for(css, Duration::from_secs(20), || {
            self.find_all(css).into_iter().next()
        })
    }

    fn text(&self, css: &str) -> String {
        for _ in 0..STALE_RETRIES {
            let el = self.find(css);
            if let Some(t) = self.element_text(&el) {
                return t;
            }
        }
        panic!("{css}: the element went stale {STALE_RETRIES} times in a row");
    }

    /// The texts of every element `css` finds. The page re-renders as it
    /// polls, so an element found may be gone when its text is asked
    /// ("stale element reference"): then the whole list is found again.
    fn texts(&self, css: &str) -> Vec<String> {
        for _ in 0..STALE_RETRIES {
            let found: Option<Vec<String>> = self
                .find_all(css)
                .iter()
                .map(|el| self.element_text(el))
                .collect();
            if let Some(texts) = found {
                return texts;
            }
        }
        panic!("{css}: an element went stale {STALE_RETRIES} times in a row");
    }

    /// An element's text, `None` when the page replaced it meanwhile.
    fn element_text(&self, el: &str) -> Option<String> {
        let url = format!("/session/{}/element/{el}/text", self.session);
        let r = self.wd.call("GET", &url, None);
        let v = r.json();
        if r.status == 404 && v["value"]["error"] == "stale element reference" {
            return None;
        }
        assert_eq!(r.status, 200, "GET {url}: {v}");
        Some(v["value"].as_str().unwrap().to_string())
    }

    fn click(&self, css: &str) {
        let el = self.find(css);
        self.cmd("POST", &format!("/element/{el}/click"), Some(json!({})));
    }

    fn type_in(&self, css: &str, text: &str) {
        let el = self.find(css);
        self.cmd(
            "POST",
            &format!("/element/{el}/value"),
            Some(json!({ "text": text })),
        );
    }

    fn script(&self, js: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": js, "args": []})),
        )
    }

    /// Waits until the element's text is `want` (up to a minute: behind a
    /// click the server's loop may push and open a PR through confined
    /// helper processes, slow on a loaded 2-core machine).
    fn wait_text(&self, css: &str, want: &str) {
        let mut last = String::new();
        let ok = (0..1200).any(|_| {
            last = self.texts(css).into_iter().next().unwrap_or_default();
            let hit = last == want;
            if !hit {
                std::thread::sleep(Duration::from_millis(50));
            }
            hit
        });
        assert!(ok, "{css}: wanted {want:?}, last saw {last:?}");
    }

    fn screenshot(&self, path: &std::path::Path) {
        use std::io::Write as _;
        let b64 = self.cmd("GET", "/screenshot", None);
        let bytes = base64_decode(b64.as_str().unwrap());
        std::fs::File::create(path)
            .unwrap()
            .write_all(&bytes)
            .unwrap();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self
                .wd
                .raw("DELETE", &format!("/session/{}", self.session), &[], None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| -> u32 {
        match c {
            b'A'..=b'Z' => u32::from(c - b'A'),
            b'a'..=b'z' => u32::from(c - b'a') + 26,
            b'0'..=b'9' => u32::from(c - b'0') + 52,
            b'+' => 62,
            _ => 63,
        }
    };
    let clean: Vec<u8> = s
        .bytes()
        .filter(|c| *c != b'=' && !c.is_ascii_whitespace())
        .collect();
    let mut out = Vec::with_capacity(clean.len() * 3 / 4);
    for chunk in clean.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= val(*c) << (18 - 6 * i);
        }
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..chunk.len().saturating_sub(1)]);
    }
    out
}

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
    assert!(
        browser
            .text(&format!("{card} .why"))
            .starts_with("Waits because of scope:")
    );
    // ADR 0167 D5: before the click, what auto mode would lift and what still asks.
    let note = browser.text(&format!("{card} .automode"));
    assert!(
        note.contains("Auto mode is off for dev-1")
            && note.contains("Turning it on would lift:")
            && note.contains("[scope]")
            && note.contains("[partial_allow]")
            && note.contains("Still asks in auto mode: nothing for this command."),
        "{note}"
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

    // Deny, with a reason typed into the card.
    let deny_card = format!("#action-{to_deny}");
    browser.type_in(&format!("{deny_card} input.reason"), "not now");
    browser.click(&format!("{deny_card} button.deny"));
    browser.wait_text(&format!("{deny_card} .outcome"), "denied");
    let rec = api
        .call("GET", &format!("/api/actions/{to_deny}"), None)
        .json();
    assert_eq!(
        (rec["status"].as_str(), rec["diagnostic"].as_str()),
        (Some("denied"), Some("not now"))
    );

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

    // Approve the noop agent's commit: the server's loop goes on to push
    // and PR, and the task page follows it into review.
    let commit_card = format!("#action-{commit}");
    assert!(
        browser
            .text(&format!("{commit_card} h3"))
            .starts_with("git_commit")
    );
    browser.click(&format!("{commit_card} button.approve"));
    browser.wait_text(&format!("{commit_card} .outcome"), "approved and executed");
    browser.go(&format!("{base}/tasks/{task_id}"));
    browser.wait_text("#task-status", "in_review");
    // The actions table follows the log too: the PR the loop opened is there.
    wait_for("the pr_open row", Duration::from_secs(60), || {
        browser
            .texts("#task-action-rows tr")
            .into_iter()
            .find(|r| r.contains("pr_open") && r.contains("executed"))
    });
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
    let shot = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("serve-task-page.png");
    browser.screenshot(&shot);
    assert!(std::fs::metadata(&shot).unwrap().len() > 1000);

    drop(browser);
    served.stop();
}
