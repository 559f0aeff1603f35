//! `berth serve` and its store under pressure: many people approving at
//! once, a full disk, and list answers that stay bounded however much the
//! store holds. A module of the `serve` test binary
//! (`cargo test --test serve store::`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Barrier};

use serde_json::{Value, json};

use super::Api;
use super::fixture::Fixture;
use super::http::Client;
use super::server::{Served, State};

/// Approvers (and actions) in the concurrency test; `BERTH_TEST_APPROVERS`
/// runs more.
fn approvers() -> usize {
    std::env::var("BERTH_TEST_APPROVERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32)
}

/// A project with agent `dev-1` up in a runner berth (terminal actions wait
/// for a person) and a server with its agent loops off.
fn serving(state: &State) -> Served {
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    Served::start(state, &["--no-agent-loops"])
}

fn propose(api: &Api, command: &str) -> Value {
    api.ok(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": command}})),
    )
}

/// `POST /api/actions/{id}/approve` for every id at once (one thread each,
/// released together); every answer is checked against the OpenAPI document.
fn approve_at_once(client: &Client, ids: &[String]) -> Vec<(u16, Value)> {
    let doc = Arc::new(berth_server::openapi::document().unwrap());
    let start = Arc::new(Barrier::new(ids.len()));
    let threads: Vec<_> = ids
        .iter()
        .map(|id| {
            let (client, doc, start, id) = (client.clone(), doc.clone(), start.clone(), id.clone());
            std::thread::spawn(move || {
                start.wait();
                let r = client.call(
                    "POST",
                    &format!("/api/actions/{id}/approve"),
                    Some(&json!({})),
                );
                let v = r.json();
                if let Err(e) = berth_server::openapi::check_response(
                    &doc,
                    "post",
                    "/api/actions/{id}/approve",
                    r.status,
                    &v,
                ) {
                    panic!("approve {id} → {}: {e}\n{v:#}", r.status);
                }
                (r.status, v)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

/// The worktree an executed terminal action ran in.
fn ran_in(action: &Value) -> PathBuf {
    PathBuf::from(
        action["result"]["host_cwd"]
            .as_str()
            .unwrap_or_else(|| panic!("{action}")),
    )
}

/// Many people approving one action: exactly one runs it, the others are
/// told where it stands (409), nobody gets a 500 or waits out a timeout; and
/// many actions approved at once each run once with their outcome recorded.
#[test]
fn concurrent_approvals_run_each_action_once_and_record_every_outcome() {
    let n = approvers();
    let state = State::with_project();
    let served = serving(&state);
    let client = served.client(&state);
    let api = Api::new(client.clone());

    let one = propose(&api, "echo once >> once.log");
    assert_eq!(one["status"]["status"], "pending", "{one}");
    let id = one["id"].as_str().unwrap().to_string();
    let t = std::time::Instant::now();
    let answers = approve_at_once(&client, &vec![id.clone(); n]);
    let took = t.elapsed();
    let won: Vec<_> = answers.iter().filter(|(s, _)| *s == 200).collect();
    let refused: Vec<_> = answers
        .iter()
        .filter(|(s, v)| *s == 409 && v["error"]["code"] == "not_pending")
        .collect();
    assert_eq!(
        (won.len(), refused.len()),
        (1, n - 1),
        "one approval runs, the rest are told it is not pending: {answers:?}"
    );
    assert_eq!(won[0].1["outcome"]["succeeded"], true, "{:?}", won[0]);
    for (_, v) in &refused {
        let m = v["error"]["message"].as_str().unwrap();
        assert!(
            m.contains(&id) && (m.contains("executing") || m.contains("executed")),
            "the answer names the action's current state: {m}"
        );
    }
    assert!(
        took < std::time::Duration::from_secs(20),
        "{n} approvals took {took:?}"
    );
    let shown = api.ok("get", "/api/actions/{id}", &[&id], None);
    assert_eq!(shown["status"], "executed", "{shown}");
    assert_eq!(
        std::fs::read_to_string(ran_in(&shown).join("once.log")).unwrap(),
        "once\n",
        "run exactly once"
    );

    // n actions, each approved by its own client at the same moment.
    let ids: Vec<String> = (0..n)
        .map(|i| {
            let p = propose(&api, &format!("echo {i} >> many.log"));
            assert_eq!(p["status"]["status"], "pending", "{p}");
            p["id"].as_str().unwrap().to_string()
        })
        .collect();
    let answers = approve_at_once(&client, &ids);
    let failed: Vec<_> = answers.iter().filter(|(s, _)| *s != 200).collect();
    assert!(failed.is_empty(), "every approval answers 200: {failed:?}");
    let mut cwd = None;
    for id in &ids {
        let a = api.ok("get", "/api/actions/{id}", &[id], None);
        assert_eq!(a["status"], "executed", "every outcome recorded: {a}");
        cwd = Some(ran_in(&a));
    }
    let log = std::fs::read_to_string(cwd.unwrap().join("many.log")).unwrap();
    let mut lines: Vec<usize> = log.lines().map(|l| l.parse().unwrap()).collect();
    lines.sort_unstable();
    assert_eq!(lines, (0..n).collect::<Vec<_>>(), "each ran exactly once");
    let (code, _) = served.stop();
    assert_eq!(code, Some(0));
}

/// A tmpfs mounted for the test, unmounted on drop (a failed test too).
struct Mounted(PathBuf);

impl Mounted {
    /// Mounts a `size` tmpfs at `at`. Only root may: elsewhere the test
    /// is skipped, except under `CI=true`, where it fails.
    fn tmpfs(at: &Path, size: &str) -> Option<Mounted> {
        std::fs::create_dir_all(at).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output()
            .unwrap();
        if out.status.success() {
            return Some(Mounted(at.to_path_buf()));
        }
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "mounting a tmpfs needs root (CI runs as root): {why}"
        );
        eprintln!("skipped: mounting a tmpfs failed (not root?): {why}");
        None
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.0)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            // Something still holds a file there: detach it now, it goes
            // when that lets go.
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

/// Writes zeros to `path` until the filesystem refuses.
fn fill(path: &Path) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0u8; 64 * 1024];
    loop {
        if let Err(e) = f.write_all(&block).and_then(|_| f.sync_data()) {
            assert_eq!(e.kind(), std::io::ErrorKind::StorageFull, "{e}");
            return;
        }
    }
}

/// A full disk under the state directory: a proposal that cannot be
/// recorded is refused with a clear error and never runs; once space is
/// freed, the same server records and runs again (no restart, no
/// "non-zero transaction depth").
#[test]
fn a_full_disk_refuses_what_it_cannot_record_and_recovers_when_space_is_freed() {
    let fixture = Fixture::new();
    let src = fixture.source_repo();
    let Some(_mounted) = Mounted::tmpfs(&fixture.state(), "24m") else {
        return;
    };
    let state = State(fixture);
    state.ok(&["init"]);
    state.ok(&["project", "add", "demo", "--from", src.to_str().unwrap()]);
    let cfg = state.state().join("projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(
        &cfg,
        text.replace("\nmode = \"auto\"\n", "\nmode = \"runner\"\n"),
    )
    .unwrap();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let served = Served::start(&state, &["--no-agent-loops"]);
    let client = served.client(&state);
    let api = Api::new(client.clone());
    let first = propose(&api, "touch before");
    assert_eq!(first["status"]["status"], "executed", "{first}");
    let worktree = PathBuf::from(
        first["status"]["outcome"]["result"]["host_cwd"]
            .as_str()
            .unwrap(),
    );

    let filler = state.state().join("filler");
    fill(&filler);
    // A command whose decision is large (many segments) and whose outcome
    // is small: its proposal is the write that meets the full disk. The
    // store reuses its log's space, so it may take a few.
    let command = |i: usize| format!("touch marker-{i}{}", "; true".repeat(300));
    let mut refused = None;
    for i in 0..200 {
        let (status, v) = api.call(
            "post",
            "/api/actions",
            &[],
            "",
            Some(
                json!({"agent": "dev-1", "action": {"type": "terminal", "command": command(i)},
                        "idempotency_key": format!("full-{i}")}),
            ),
        );
        if status == 200 {
            assert_eq!(v["status"]["status"], "executed", "{v}");
            continue;
        }
        assert_eq!(
            (status, v["error"]["code"].as_str()),
            (507, Some("disk_full")),
            "{v}"
        );
        let m = v["error"]["message"].as_str().unwrap();
        assert!(m.contains("full") && m.contains("free space"), "{m}");
        refused = Some(i);
        break;
    }
    let i = refused.expect("the disk filled up within 200 proposals");
    assert!(
        !worktree.join(format!("marker-{i}")).exists(),
        "a proposal that could not be recorded ran"
    );
    // A few more while full: each refused the same way, none runs, and none
    // leaves the server unable to write later.
    for j in 1000..1010 {
        let (status, v) = api.call(
            "post",
            "/api/actions",
            &[],
            "",
            Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": command(j)}})),
        );
        assert_eq!(status, 507, "{v}");
        assert!(!worktree.join(format!("marker-{j}")).exists());
    }

    std::fs::remove_file(&filler).unwrap();
    // The same key again: it was never recorded, so it is new and runs now.
    let again = api.ok(
        "post",
        "/api/actions",
        &[],
        Some(
            json!({"agent": "dev-1", "action": {"type": "terminal", "command": command(i)},
                    "idempotency_key": format!("full-{i}")}),
        ),
    );
    assert_eq!(
        (
            again["replayed"].as_bool(),
            again["status"]["status"].as_str()
        ),
        (Some(false), Some("executed")),
        "{again}"
    );
    assert!(worktree.join(format!("marker-{i}")).exists());
    // Every connection of the pool writes again.
    for k in 0..24 {
        let p = propose(&api, &format!("touch after-{k}"));
        assert_eq!(p["status"]["status"], "executed", "{p}");
    }
    eprintln!(
        "connections closed after a failed write: {}",
        served.log().matches("still counts a transaction").count()
    );
    let (code, _) = served.stop();
    assert_eq!(code, Some(0));
    assert!(
        !served_log_says(&state, "non-zero transaction depth"),
        "the server's log shows a connection left mid-transaction"
    );
}

fn served_log_says(state: &State, what: &str) -> bool {
    std::fs::read_dir(state.root())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("serve-"))
        .any(|e| {
            std::fs::read_to_string(e.path())
                .unwrap_or_default()
                .contains(what)
        })
}

/// Every list stays bounded however much the store holds, and pages through
/// all of it: `/api/actions` and `/api/events` never answer more than their
/// maximum page, the approvals page shows a page of what waits with a link
/// to the next, and a 100,000-segment command waits for a person (even in
/// auto mode) with a small stored decision and a clipped card.
#[test]
fn lists_are_paged_and_a_huge_command_stays_small() {
    const ACTIONS_MAX: usize = 200;
    let state = State::with_project();
    let served = serving(&state);
    let client = served.client(&state);
    let api = Api::new(client.clone());
    let n = ACTIONS_MAX + 30;
    let ids: Vec<String> = (0..n)
        .map(|i| {
            let p = propose(&api, &format!("echo {i} > /etc/x"));
            assert_eq!(p["status"]["status"], "pending", "{p}");
            p["id"].as_str().unwrap().to_string()
        })
        .collect();

    // Actions: a default page, a maximum, and every one exactly once.
    let (_, first) = api.call("get", "/api/actions", &[], "", None);
    assert_eq!(first.as_array().unwrap().len(), 50);
    let (status, v) = api.call("get", "/api/actions", &[], "?limit=201", None);
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("invalid_query"))
    );
    let (status, v) = api.call("get", "/api/actions", &[], "?after=ffffffff", None);
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (404, Some("unknown_action"))
    );
    let mut seen = Vec::new();
    let mut query = format!("?pending&limit={ACTIONS_MAX}");
    loop {
        let (_, page) = api.call("get", "/api/actions", &[], &query, None);
        let page = page.as_array().unwrap();
        assert!(page.len() <= ACTIONS_MAX);
        let Some(last) = page.last() else { break };
        seen.extend(page.iter().map(|a| a["id"].as_str().unwrap().to_string()));
        query = format!(
            "?pending&limit={ACTIONS_MAX}&after={}",
            last["id"].as_str().unwrap()
        );
    }
    assert_eq!(seen, ids, "every action once, oldest first");

    // Events: the same, by id.
    let (status, _) = api.call("get", "/api/events", &[], "?limit=1001", None);
    assert_eq!(status, 400);
    let (_, first) = api.call("get", "/api/events", &[], "", None);
    assert_eq!(first.as_array().unwrap().len(), 100);
    let (mut after, mut created, mut pages) = (0i64, 0usize, 0usize);
    loop {
        let (_, page) = api.call(
            "get",
            "/api/events",
            &[],
            &format!("?limit=100&after={after}"),
            None,
        );
        let page = page.as_array().unwrap();
        assert!(page.len() <= 100);
        let Some(last) = page.last() else { break };
        for e in page {
            let id = e["id"].as_i64().unwrap();
            assert!(id > after, "ids grow: {id} after {after}");
            after = id;
            created += usize::from(e["type"] == "proposed_action.created");
        }
        assert_eq!(last["id"].as_i64(), Some(after));
        pages += 1;
    }
    assert_eq!(created, n);
    assert!(pages >= 3, "{pages} pages");

    // The approvals page's content: 25 cards a page, a link to the next
    // (a page path, whose content is under /api/pages), all of them.
    let mut cards = Vec::new();
    let mut path = "/api/pages/approvals".to_string();
    loop {
        let r = client.call("GET", &path, None);
        assert_eq!(r.status, 200);
        let html = r.text();
        assert!(html.contains(&format!("<span id=\"pending-count\">{n}</span>")));
        let here: Vec<String> = html
            .split("data-action-id=\"")
            .skip(1)
            .map(|s| s[..32].to_string())
            .filter(|id| html.contains(&format!("id=\"action-{id}\"")))
            .collect();
        let mut unique = here.clone();
        unique.dedup();
        assert!(unique.len() <= 25, "{} cards on one page", unique.len());
        cards.extend(unique);
        match html.split("id=\"pending-next\" href=\"").nth(1) {
            Some(rest) => {
                let link = &rest[..rest.find('"').unwrap()];
                let query = link.strip_prefix('/').unwrap();
                path = format!("/api/pages/approvals{query}");
            }
            None => break,
        }
    }
    assert_eq!(
        cards, ids,
        "every pending action on one page or another, once"
    );

    // A 100,000-segment command (600 KB) in auto mode.
    state.ok(&["agent", "activate", "auto-1", "--project", "demo"]);
    state.ok(&["up", "auto-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&["autonomy", "set", "auto-1", "*", "auto_approve"]);
    let huge = api.ok(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "auto-1", "action": {"type": "terminal", "command": "true; ".repeat(100_000)}})),
    );
    assert_eq!(huge["status"]["status"], "pending", "never auto-approved");
    assert_eq!(huge["decision"]["stage"], "opaque");
    let id = huge["id"].as_str().unwrap();
    let shown = api.ok("get", "/api/actions/{id}", &[id], None);
    let decision = serde_json::to_vec(&shown["decision"]).unwrap().len();
    assert!(decision <= 64 * 1024, "a {decision} byte decision");
    assert_eq!(shown["decision"]["segments"], json!([]));
    let (_, last) = api.call(
        "get",
        "/api/actions",
        &[],
        &format!("?pending&after={}", ids[n - 1]),
        None,
    );
    assert_eq!(last.as_array().unwrap().len(), 1);
    let page = client
        .call(
            "GET",
            &format!("/api/pages/approvals?after={}", ids[n - 1]),
            None,
        )
        .text();
    assert!(
        page.contains(id) && page.len() < 64 * 1024,
        "a {} byte page",
        page.len()
    );
    let (code, _) = served.stop();
    assert_eq!(code, Some(0));
}
