//! A real headless Chromium over WebDriver (chromedriver) for the page's
//! tests: find, click, type, run a script, resize the viewport (through the
//! DevTools protocol chromedriver forwards), take a screenshot. No WebDriver
//! crate: the calls are a few JSON requests over the shared HTTP client.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::http::{Client, Target};
use super::server::wait_for;

// The W3C WebDriver web element identifier.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

pub fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(name))
            .find(|f| f.is_file())
    })
}

/// Chromium and chromedriver, or `None` (the test is skipped) when either
/// is missing; under `CI=true` a missing one is a failure.
pub fn chromium_and_driver() -> Option<(std::path::PathBuf, std::path::PathBuf)> {
    let (Some(chromium), Some(chromedriver)) = (which("chromium"), which("chromedriver")) else {
        assert_ne!(
            std::env::var("CI").as_deref(),
            Ok("true"),
            "chromium and chromedriver are needed under CI=true"
        );
        eprintln!("skipping: chromium or chromedriver is not installed");
        return None;
    };
    Some((chromium, chromedriver))
}

/// A chromedriver this test started, and its one session.
/// How often a lookup is repeated when the page replaced what it found.
const STALE_RETRIES: usize = 20;

pub struct Browser {
    driver: Child,
    wd: Client,
    session: String,
}

impl Browser {
    pub fn start(chromium: &std::path::Path, chromedriver: &std::path::Path) -> Browser {
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

    pub fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
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

    pub fn go(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    pub fn find_all(&self, css: &str) -> Vec<String> {
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
    pub fn find(&self, css: &str) -> String {
        wait_for(css, Duration::from_secs(20), || {
            self.find_all(css).into_iter().next()
        })
    }

    pub fn text(&self, css: &str) -> String {
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
    pub fn texts(&self, css: &str) -> Vec<String> {
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
    pub fn element_text(&self, el: &str) -> Option<String> {
        let url = format!("/session/{}/element/{el}/text", self.session);
        let r = self.wd.call("GET", &url, None);
        let v = r.json();
        // Replaced meanwhile (a reload).
        if self.went_stale(r.status, &v) {
            return None;
        }
        assert_eq!(r.status, 200, "GET {url}: {v}");
        Some(v["value"].as_str().unwrap().to_string())
    }

    /// Clicks the element `css` finds; found again when the page replaced
    /// it between the finding and the click (it re-renders as it polls).
    pub fn click(&self, css: &str) {
        self.act_on(css, "click", json!({}));
    }

    pub fn type_in(&self, css: &str, text: &str) {
        self.act_on(css, "value", json!({ "text": text }));
    }

    /// `POST /element/<el>/<verb>` on the element `css` finds, again on a
    /// fresh find while the one found went stale.
    fn act_on(&self, css: &str, verb: &str, body: Value) {
        for _ in 0..STALE_RETRIES {
            let el = self.find(css);
            let url = format!("/session/{}/element/{el}/{verb}", self.session);
            let r = self.wd.call("POST", &url, Some(&body));
            let v = r.json();
            if self.went_stale(r.status, &v) {
                continue;
            }
            assert_eq!(r.status, 200, "POST {url}: {v}");
            return;
        }
        panic!("{css}: the element went stale {STALE_RETRIES} times in a row");
    }

    /// Whether chromedriver's answer says the element is no longer the
    /// page's: a stale reference, or, mid-navigation, a node no longer in
    /// the document.
    fn went_stale(&self, status: u16, v: &Value) -> bool {
        let gone = v["value"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("does not belong to the document"));
        (status == 404 && v["value"]["error"] == "stale element reference") || gone
    }

    pub fn script(&self, js: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(json!({"script": js, "args": []})),
        )
    }

    /// Waits until the element's text is `want` (up to a minute: behind a
    /// click the server's loop may push and open a PR through confined
    /// helper processes, slow on a loaded 2-core machine).
    pub fn wait_text(&self, css: &str, want: &str) {
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

    /// Emulates a viewport `width` × `height` CSS pixels (a phone's when
    /// `mobile`), through the DevTools protocol: a headless window cannot
    /// be made narrower than Chromium's minimum, an emulated screen can.
    pub fn viewport(&self, width: u32, height: u32, mobile: bool) {
        self.cmd(
            "POST",
            "/goog/cdp/execute",
            Some(
                json!({"cmd": "Emulation.setDeviceMetricsOverride", "params": {
                    "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile
                }}),
            ),
        );
    }

    /// Runs `js` as an async script: it calls its last argument with the
    /// answer.
    pub fn script_async(&self, js: &str) -> Value {
        self.cmd(
            "POST",
            "/execute/async",
            Some(json!({"script": js, "args": []})),
        )
    }

    /// axe-core's violations on the page as it is now — each rule's id,
    /// impact and first offending nodes — or `None` when `axe.min.js`
    /// (`BERTH_AXE_JS`, which scripts/test.sh unpacks from PyPI's
    /// axe-selenium-python wheel) is not there; under `CI=true` that is a
    /// failure.
    pub fn axe_violations(&self) -> Option<Vec<Value>> {
        let path = std::env::var_os("BERTH_AXE_JS")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::PathBuf::from(std::env::var("HOME").unwrap_or_else(|_| "/root".into()))
                    .join(".cache/berth-axe/axe.min.js")
            });
        let Ok(axe) = std::fs::read_to_string(&path) else {
            assert_ne!(
                std::env::var("CI").as_deref(),
                Ok("true"),
                "no {}: scripts/test.sh unpacks it from the axe-selenium-python wheel",
                path.display()
            );
            eprintln!("skipping the accessibility check: no {}", path.display());
            return None;
        };
        // Injected over WebDriver: the page's Content-Security-Policy
        // allows no script but its own, and it stays so.
        self.script(&format!("{axe}\n;return typeof window.axe;"));
        let found = self.script_async(
            "const done = arguments[arguments.length - 1];\
             window.axe.run(document, {resultTypes: ['violations']}).then(function (r) {\
               done({passes: r.passes.length, violations: r.violations.map(function (v) { return {id: v.id, impact: v.impact, help: v.help,\
                 nodes: v.nodes.slice(0, 3).map(function (n) { return n.target.join(' ') + ' ' + n.failureSummary; })}; })});\
             }).catch(function (e) { done('axe failed: ' + e); });",
        );
        // A check that ran: axe passed rules on this page (a page it
        // could not read would pass none).
        let passes = found["passes"]
            .as_u64()
            .unwrap_or_else(|| panic!("{found}"));
        assert!(passes >= 10, "axe-core passed only {passes} rules: {found}");
        Some(found["violations"].as_array().unwrap().clone())
    }

    /// Presses keys on the page (each char of `keys`).
    pub fn keys(&self, keys: &str) {
        let actions: Vec<Value> = keys
            .chars()
            .flat_map(|c| {
                [
                    json!({"type": "keyDown", "value": c.to_string()}),
                    json!({"type": "keyUp", "value": c.to_string()}),
                ]
            })
            .collect();
        self.cmd(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
    }

    pub fn screenshot(&self, path: &std::path::Path) {
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
