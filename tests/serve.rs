#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `berth serve` end to end: the real binary serving a real store, over the
//! unix socket and over loopback TCP with the token. Every JSON answer is
//! checked against the schema `/openapi.json` documents for its path and
//! status, and bad input gets the documented JSON error.

#[path = "support/fixture.rs"]
mod fixture;
#[path = "serve_exec_handoff.rs"]
mod handoff;
#[path = "support/http.rs"]
mod http;
#[path = "support/server.rs"]
mod server;
#[path = "serve_store.rs"]
mod store;
// The engine tests' PostgreSQL (Debian's, started as the `postgres` user)
// and the worktrees crate's smart-HTTP forge server, for the workers' test.
#[path = "../runtime/engine/tests/common/postgres.rs"]
mod postgres;
#[path = "../worktrees/tests/common/smart_http.rs"]
mod smart_http;
#[path = "support/tls_front.rs"]
mod tls_front;
#[path = "serve_workers.rs"]
mod workers;

use std::time::Duration;

use http::Client;
use serde_json::{Value, json};
use server::{Served, State, wait_for};

type Header<'a> = (&'a str, &'a str);

/// A client that checks each answer against the OpenAPI document.
struct Api {
    c: Client,
    doc: Value,
}

impl Api {
    fn new(c: Client) -> Api {
        Api {
            c,
            doc: berth_server::openapi::document().unwrap(),
        }
    }

    /// `method template` with `args` put into the template's `{…}` in order,
    /// then `query`. Returns the status and the JSON body.
    fn call(
        &self,
        method: &str,
        template: &str,
        args: &[&str],
        query: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut path = String::new();
        let mut args = args.iter();
        let mut rest = template;
        while let Some(start) = rest.find('{') {
            let end = rest[start..].find('}').unwrap() + start;
            path.push_str(&rest[..start]);
            path.push_str(args.next().expect("an argument per placeholder"));
            rest = &rest[end + 1..];
        }
        path.push_str(rest);
        path.push_str(query);
        let r = self.c.call(&method.to_uppercase(), &path, body.as_ref());
        assert_eq!(
            r.header("content-type"),
            Some("application/json"),
            "{method} {path}: {}",
            r.text()
        );
        let v = r.json();
        if let Err(e) =
            berth_server::openapi::check_response(&self.doc, method, template, r.status, &v)
        {
            panic!("{method} {path} → {}: {e}\n{v:#}", r.status);
        }
        (r.status, v)
    }

    fn ok(&self, method: &str, template: &str, args: &[&str], body: Option<Value>) -> Value {
        let (s, v) = self.call(method, template, args, "", body);
        assert!(
            (200..300).contains(&s),
            "{method} {template} {args:?} → {s}: {v}"
        );
        v
    }

    /// Expects a JSON error with this status and code.
    fn err(
        &self,
        method: &str,
        template: &str,
        args: &[&str],
        body: Option<Value>,
        status: u16,
        code: &str,
    ) -> String {
        let (s, v) = self.call(method, template, args, "", body);
        assert_eq!(
            (s, v["error"]["code"].as_str().unwrap_or("")),
            (status, code),
            "{method} {template} {args:?}: {v}"
        );
        let msg = v["error"]["message"].as_str().unwrap().to_string();
        assert!(!msg.is_empty());
        msg
    }
}

/// The project allows several agents at once, whatever its default is.
fn roomy(state: &State) {
    let cfg = state.state().join("projects/demo/berth.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    // Runner berths: these tests are about the API, not containers (a berth
    // the loop brings up in `auto` would otherwise be a container); auto mode
    // on them is accepted although the runner confines nothing yet.
    std::fs::write(
        &cfg,
        text.replace("max_parallel = 1", "max_parallel = 8")
            .replace("\nmode = \"auto\"\n", "\nmode = \"runner\"\n")
            .replacen("allow_unconfined = false", "allow_unconfined = true", 1),
    )
    .unwrap();
}

#[derive(Debug, Clone, Copy)]
enum Transport {
    Socket,
    Tcp,
}

fn start(state: &State, t: Transport, extra: &[&str]) -> Served {
    let mut args: Vec<&str> = match t {
        Transport::Socket => vec![],
        Transport::Tcp => vec!["--listen", "127.0.0.1:0"],
    };
    args.extend_from_slice(extra);
    Served::start(state, &args)
}

/// Every endpoint family, through the same calls the CLI makes, over both
/// transports. The agent loops are off so that each step is the test's.
#[test]
fn every_endpoint_family_over_the_socket_and_over_tcp() {
    for t in [Transport::Socket, Transport::Tcp] {
        let state = State::new();
        let served = start(&state, t, &["--no-agent-loops"]);
        let api = Api::new(served.client(&state));
        every_endpoint_family(&api, &state);
        let (code, _) = served.stop();
        assert_eq!(code, Some(0), "{t:?}");
    }
}

fn every_endpoint_family(api: &Api, state: &State) {
    let src = state.source_repo();
    let src = src.to_str().unwrap();

    // Projects.
    let p = api.ok(
        "post",
        "/api/projects",
        &[],
        Some(json!({"name": "demo", "from": src})),
    );
    assert_eq!(
        (p["name"].as_str(), p["base_branch"].as_str()),
        (Some("demo"), Some("main"))
    );
    roomy(state);
    api.err(
        "post",
        "/api/projects",
        &[],
        Some(json!({"name": "demo", "from": src})),
        409,
        "already_exists",
    );
    let m = api.err(
        "post",
        "/api/projects",
        &[],
        Some(json!({"name": "rel", "from": "src"})),
        422,
        "invalid_value",
    );
    assert!(m.contains("absolute path"), "{m}");
    api.err(
        "post",
        "/api/projects",
        &[],
        Some(json!({"name": "nope", "from": "/nonexistent/repo"})),
        422,
        "repository_unusable",
    );
    let list = api.ok("get", "/api/projects", &[], None);
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(
        api.ok("get", "/api/projects/{name}", &["demo"], None)["name"],
        "demo"
    );
    api.err(
        "get",
        "/api/projects/{name}",
        &["ghost"],
        None,
        404,
        "unknown_project",
    );

    // Agents and berths.
    let a = api.ok(
        "post",
        "/api/agents",
        &[],
        Some(json!({"name": "dev-1", "project": "demo"})),
    );
    assert_eq!(
        (a["impl"].as_str(), a["status"].as_str()),
        (Some("real"), Some("idle"))
    );
    api.ok(
        "post",
        "/api/agents",
        &[],
        Some(json!({"name": "noop-1", "project": "demo", "impl": "noop"})),
    );
    api.err(
        "post",
        "/api/agents",
        &[],
        Some(json!({"name": "x", "project": "ghost"})),
        404,
        "unknown_project",
    );
    api.err(
        "post",
        "/api/agents",
        &[],
        Some(json!({"name": "x", "project": "demo", "impl": "robot"})),
        422,
        "invalid_body",
    );
    let names: Vec<String> = api
        .ok("get", "/api/agents", &[], None)
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["dev-1", "noop-1"]);
    api.err(
        "get",
        "/api/agents/{name}",
        &["ghost"],
        None,
        404,
        "unknown_agent",
    );
    let up = api.ok(
        "post",
        "/api/agents/{name}/up",
        &["dev-1"],
        Some(json!({"mode": "runner"})),
    );
    assert_eq!(
        (up["mode"].as_str(), up["branch"].as_str()),
        (Some("runner"), Some("agent/dev-1/scratch"))
    );
    api.ok(
        "post",
        "/api/agents/{name}/up",
        &["noop-1"],
        Some(json!({"mode": "runner"})),
    );
    api.err(
        "post",
        "/api/agents/{name}/up",
        &["dev-1"],
        Some(json!({"project": "other"})),
        409,
        "wrong_project",
    );
    let berths = api.ok("get", "/api/berths", &[], None);
    assert!(
        berths
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["mode"] == "runner")
    );
    assert_eq!(
        api.ok("get", "/api/agents/{name}", &["dev-1"], None)["berth"],
        "runner"
    );

    // Autonomy and the auto-mode switch (ADR 0167): the answer says what
    // the switch lifts and what still asks.
    let on = api.ok(
        "put",
        "/api/agents/{name}/auto-mode",
        &["dev-1"],
        Some(json!({"on": true})),
    );
    assert_eq!(on["auto_mode"], true);
    assert!(on["lifts"].as_array().unwrap().len() >= 2, "{on}");
    assert!(
        on["runner_host"]
            .as_str()
            .is_some_and(|n| n.contains("lifts the path scope on this machine")),
        "{on}"
    );
    assert!(!on["still_asks"].as_array().unwrap().is_empty());
    let off = api.ok(
        "put",
        "/api/agents/{name}/auto-mode",
        &["dev-1"],
        Some(json!({"on": false})),
    );
    assert_eq!(
        (
            off["auto_mode"].as_bool(),
            off["lifts"].as_array().unwrap().len()
        ),
        (Some(false), 0)
    );
    api.err(
        "put",
        "/api/agents/{name}/auto-mode",
        &["dev-1"],
        Some(json!({})),
        422,
        "invalid_body",
    );
    let set = api.ok(
        "put",
        "/api/agents/{name}/autonomy/{action_type}",
        &["dev-1", "terminal"],
        Some(json!({"mode": "auto_approve"})),
    );
    let terminal = set["resolved"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r[0] == "terminal")
        .unwrap()
        .clone();
    assert_eq!(
        terminal[1],
        json!({"mode": "auto_approve", "origin": "specific"})
    );
    let m = api.err(
        "put",
        "/api/agents/{name}/autonomy/{action_type}",
        &["dev-1", "terminal"],
        Some(json!({"mode": "sometimes"})),
        422,
        "invalid_value",
    );
    assert!(m.contains("auto_approve, require_approval or deny"), "{m}");
    api.err(
        "put",
        "/api/agents/{name}/autonomy/{action_type}",
        &["dev-1", "teleport"],
        Some(json!({"mode": "deny"})),
        422,
        "invalid_value",
    );
    assert_eq!(
        api.ok("get", "/api/agents/{name}/autonomy", &["dev-1"], None)["agent"],
        "dev-1"
    );
    api.err(
        "get",
        "/api/agents/{name}/autonomy",
        &["ghost"],
        None,
        404,
        "unknown_agent",
    );

    // Tasks and claiming.
    let t1 = api.ok(
        "post",
        "/api/tasks",
        &[],
        Some(json!({"project": "demo", "title": "first"})),
    );
    let t1_id = t1["id"].as_str().unwrap().to_string();
    assert_eq!(t1["status"], "todo");
    api.err(
        "post",
        "/api/tasks",
        &[],
        Some(json!({"project": "demo", "title": "  "})),
        422,
        "invalid_value",
    );
    api.err(
        "post",
        "/api/tasks",
        &[],
        Some(json!({"project": "demo"})),
        422,
        "invalid_body",
    );
    let by_prefix = api.ok("get", "/api/tasks/{id}", &[&t1_id[..8]], None);
    assert_eq!(by_prefix["id"], t1_id.as_str());
    api.err(
        "get",
        "/api/tasks/{id}",
        &["ffffffff"],
        None,
        404,
        "unknown_task",
    );
    let claimed = api.ok("post", "/api/agents/{name}/claim", &["dev-1"], None);
    assert_eq!(
        (
            claimed["task"]["id"].as_str(),
            claimed["task"]["status"].as_str(),
            claimed["task"]["agent"].as_str()
        ),
        (Some(t1_id.as_str()), Some("in_progress"), Some("dev-1"))
    );

    // Prompts and sessions: dev-1 holds t1 but has no session, so a
    // prompt waits (durably) with its reason and opens none.
    let sent = api.ok(
        "post",
        "/api/agents/{name}/prompts",
        &["dev-1"],
        Some(json!({"text": "start with the README"})),
    );
    assert_eq!(
        (sent["sent"].as_str(), sent["deliverable"].as_bool()),
        (Some("queued"), Some(false))
    );
    assert_eq!(sent["prompt"]["task"], t1_id.as_str());
    let queue = api.ok("get", "/api/agents/{name}/queue", &["dev-1"], None);
    assert_eq!(queue[0]["id"], sent["prompt"]["id"]);
    assert_eq!(api.ok("get", "/api/queue", &[], None), queue);
    let sessions = api.ok("get", "/api/agents/{name}/sessions", &["dev-1"], None);
    assert_eq!(sessions, json!([]));
    assert_eq!(api.ok("get", "/api/sessions", &[], None), json!([]));
    api.err(
        "post",
        "/api/agents/{name}/prompts",
        &["dev-1"],
        Some(json!({})),
        422,
        "invalid_body",
    );
    api.err(
        "get",
        "/api/agents/{name}/queue",
        &["ghost"],
        None,
        404,
        "unknown_agent",
    );
    let again = api.ok("post", "/api/agents/{name}/claim", &["dev-1"], None);
    assert_eq!(again, json!({"task": null}), "an agent holds one task");
    let (s, tasks) = api.call("get", "/api/tasks", &[], "?project=demo", None);
    assert_eq!((s, tasks.as_array().unwrap().len()), (200, 1));
    let m = api.err(
        "post",
        "/api/agents/{name}/down",
        &["dev-1"],
        None,
        409,
        "invalid_state",
    );
    assert!(m.contains("--keep-worktree"), "{m}");

    // Proposing: executed, pending, refused; idempotency.
    let ran = api.ok(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": "echo hi > out.txt; test -s out.txt && echo written"}})),
    );
    assert_eq!(ran["status"]["status"], "executed", "{ran}");
    let result = &ran["status"]["outcome"]["result"];
    assert_eq!(
        (result["exit_code"].as_i64(), result["stdout"].as_str()),
        (Some(0), Some("written\n"))
    );
    let pending = api.ok(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": "cat /etc/hostname"}})),
    );
    assert_eq!(pending["status"]["status"], "pending");
    assert_eq!(pending["decision"]["stage"], "scope");
    let pending_id = pending["id"].as_str().unwrap().to_string();
    let refused = api.ok(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": "rm -rf /"}})),
    );
    assert_eq!(refused["status"]["status"], "refused");
    let keyed = json!({"agent": "dev-1", "action": {"type": "terminal", "command": "true"}, "idempotency_key": "k-1"});
    let first = api.ok("post", "/api/actions", &[], Some(keyed.clone()));
    let second = api.ok("post", "/api/actions", &[], Some(keyed));
    assert_eq!(
        (
            first["replayed"].as_bool(),
            second["replayed"].as_bool(),
            &second["id"]
        ),
        (Some(false), Some(true), &first["id"])
    );
    api.err(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": "false"}, "idempotency_key": "k-1"})),
        409,
        "idempotency_key_conflict",
    );
    api.err(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "ghost", "action": {"type": "terminal", "command": "true"}})),
        404,
        "unknown_agent",
    );
    api.err(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1"})),
        422,
        "invalid_body",
    );
    api.err(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": "true"}, "task": "ffffffff"})),
        404,
        "unknown_task",
    );
    api.err(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "noop-1", "action": {"type": "terminal", "command": "true"}, "sudo": true})),
        422,
        "invalid_body",
    );

    // Listing, approving, denying, retrying.
    let (_, listed) = api.call("get", "/api/actions", &[], "?pending", None);
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [pending_id.as_str()]);
    let (_, all) = api.call(
        "get",
        "/api/actions",
        &[],
        "?agent=dev-1&pending=false",
        None,
    );
    assert_eq!(all.as_array().unwrap().len(), 4);
    let shown = api.ok("get", "/api/actions/{id}", &[&pending_id[..8]], None);
    assert_eq!(
        shown["decision"]["segments"][0]["argv"],
        json!(["cat", "/etc/hostname"])
    );
    let approved = api.ok("post", "/api/actions/{id}/approve", &[&pending_id], None);
    assert_eq!(approved["outcome"]["succeeded"], true);
    assert_eq!(
        approved["outcome"]["result"]["stdout"]
            .as_str()
            .unwrap()
            .trim(),
        std::fs::read_to_string("/etc/hostname").unwrap().trim()
    );
    let m = api.err(
        "post",
        "/api/actions/{id}/approve",
        &[&pending_id],
        Some(json!({})),
        409,
        "not_pending",
    );
    assert!(m.contains("is executed, not pending"), "{m}");
    api.err(
        "post",
        "/api/actions/{id}/approve",
        &["ffffffff"],
        None,
        404,
        "unknown_action",
    );
    api.err(
        "post",
        "/api/actions/{id}/approve",
        &[&pending_id],
        Some(json!({"alwyas": true})),
        422,
        "invalid_body",
    );
    let to_deny = api.ok(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": "ls /root"}})),
    );
    let deny_id = to_deny["id"].as_str().unwrap().to_string();
    let denied = api.ok(
        "post",
        "/api/actions/{id}/deny",
        &[&deny_id],
        Some(json!({"reason": "not now"})),
    );
    assert_eq!(
        (
            denied["status"].as_str(),
            denied["decided_by"].as_str(),
            denied["diagnostic"].as_str()
        ),
        (Some("denied"), Some("ada"), Some("not now"))
    );
    api.err(
        "post",
        "/api/actions/{id}/deny",
        &[&deny_id],
        None,
        409,
        "not_pending",
    );
    api.err(
        "post",
        "/api/actions/{id}/retry",
        &[&deny_id],
        None,
        409,
        "invalid_state",
    );
    api.err(
        "post",
        "/api/actions/{id}/retry",
        &["ffffffff"],
        None,
        404,
        "unknown_action",
    );

    // The log: decisions with their actors (ADR 0048), filters, cursors.
    let (_, approvals) = api.call(
        "get",
        "/api/events",
        &[],
        "?agent=dev-1&type=proposed_action.approved",
        None,
    );
    let approvals = approvals.as_array().unwrap();
    assert_eq!(approvals.len(), 1);
    assert_eq!(
        (&approvals[0]["actor"], approvals[0]["action"].as_str()),
        (
            &json!({"kind": "user", "id": "ada"}),
            Some(pending_id.as_str())
        )
    );
    let (_, page1) = api.call("get", "/api/events", &[], "?limit=3", None);
    let page1 = page1.as_array().unwrap();
    assert_eq!(page1.len(), 3);
    let after = page1[2]["id"].as_i64().unwrap();
    let (_, page2) = api.call(
        "get",
        "/api/events",
        &[],
        &format!("?after={after}&limit=2"),
        None,
    );
    let page2 = page2.as_array().unwrap();
    assert!(page2.iter().all(|e| e["id"].as_i64().unwrap() > after));
    assert_eq!(page2.len(), 2);
    let (_, by_task) = api.call(
        "get",
        "/api/events",
        &[],
        &format!("?task={}", &t1_id[..8]),
        None,
    );
    let kinds: Vec<&str> = by_task
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["task.created", "task.claimed", "prompt.queued"]);
    for (query, code, status) in [
        ("?limit=0", "invalid_query", 400),
        ("?limit=20000", "invalid_query", 400),
        ("?after=soon", "invalid_query", 400),
        ("?agnet=dev-1", "invalid_query", 400),
        ("?task=ffffffff", "unknown_task", 404),
    ] {
        let (s, v) = api.call("get", "/api/events", &[], query, None);
        assert_eq!(
            (s, v["error"]["code"].as_str()),
            (status, Some(code)),
            "{query}: {v}"
        );
    }
    let metrics = api.ok("get", "/api/metrics", &[], None);
    assert_eq!(
        (
            metrics["human_approvals"].as_i64(),
            metrics["human_denials"].as_i64(),
            metrics["refused_by_policy"].as_i64()
        ),
        (Some(1), Some(1), Some(1))
    );

    // The outbox drains once.
    let drained = api.ok("post", "/api/outbox/drain", &[], None);
    assert!(drained["messages"].as_array().unwrap().len() > 10);
    let again = api.ok("post", "/api/outbox/drain", &[], None);
    assert_eq!(again, json!({"messages": [], "pruned": 0}));

    // PRs: the noop agent delivers a task; merge waits for a person, close
    // returns the task.
    let t2 = api.ok(
        "post",
        "/api/tasks",
        &[],
        Some(json!({"project": "demo", "title": "second"})),
    );
    let t2_id = t2["id"].as_str().unwrap().to_string();
    let run = api.ok("post", "/api/agents/{name}/run", &["noop-1"], None);
    assert_eq!(run["stopped"], json!({"state": "in_review", "task": t2_id}));
    assert_eq!(run["delivered"], json!([[t2_id, "in_review"]]));
    api.err(
        "post",
        "/api/agents/{name}/run",
        &["dev-1"],
        None,
        409,
        "invalid_state",
    );
    let prs = api.ok("get", "/api/prs", &[], None);
    let prs = prs.as_array().unwrap();
    assert_eq!(prs.len(), 1);
    assert_eq!(
        (
            prs[0]["number"].as_i64(),
            prs[0]["status"].as_str(),
            prs[0]["task"].as_str()
        ),
        (Some(1), Some("open"), Some(t2_id.as_str()))
    );
    assert_eq!(
        api.ok("get", "/api/prs/{id}", &["1"], None)["title"],
        "second"
    );
    api.err("get", "/api/prs/{id}", &["9"], None, 404, "unknown_pr");

    // Review feedback: a line comment starts a thread, a reply joins it;
    // resolving it and an approval make the PR ready, and the task stays in
    // review (only merging or closing moves it).
    let c = api.ok(
        "post",
        "/api/prs/{id}/comments",
        &["1"],
        Some(json!({"body": "why?", "path": "a.txt", "line": 1})),
    );
    let thread = c["thread"].as_str().unwrap().to_string();
    let reply = api.ok(
        "post",
        "/api/prs/{id}/comments",
        &["1"],
        Some(json!({"body": "because", "reply_to": &thread[..8]})),
    );
    assert_eq!(reply["thread"], thread.as_str());
    api.err(
        "post",
        "/api/prs/{id}/comments",
        &["1"],
        Some(json!({"body": " "})),
        422,
        "invalid_value",
    );
    api.err(
        "post",
        "/api/prs/{id}/threads/{thread}/resolve",
        &["1", "abcd1234"],
        None,
        404,
        "unknown_thread",
    );
    let feedback = api.ok("get", "/api/prs/{id}/checks", &["1"], None);
    assert_eq!(
        (&feedback["unresolved_threads"], &feedback["ready"]),
        (&json!(1), &json!(false)),
        "{feedback}"
    );
    let t = api.ok(
        "post",
        "/api/prs/{id}/threads/{thread}/resolve",
        &["1", &thread],
        None,
    );
    assert_eq!(
        (&t["resolved"], &t["resolved_by"]["kind"]),
        (&json!(true), &json!("user"))
    );
    api.err(
        "post",
        "/api/prs/{id}/threads/{thread}/resolve",
        &["1", &thread],
        None,
        409,
        "invalid_state",
    );
    let review = api.ok(
        "post",
        "/api/prs/{id}/reviews",
        &["1"],
        Some(json!({"state": "approve", "body": "lgtm"})),
    );
    assert_eq!(review["state"], "approve");
    api.err(
        "post",
        "/api/prs/{id}/reviews",
        &["1"],
        Some(json!({"state": "maybe"})),
        422,
        "invalid_value",
    );
    api.err(
        "post",
        "/api/prs/{id}/reviews",
        &["1"],
        None,
        422,
        "invalid_body",
    );
    let request = api.ok(
        "post",
        "/api/prs/{id}/review-requests",
        &["1"],
        Some(json!({"reviewer": "carol"})),
    );
    assert_eq!(request["reviewer"], "carol");
    let conversation = api.ok("get", "/api/prs/{id}/threads", &["1"], None);
    assert_eq!(
        conversation["threads"][0]["comments"]
            .as_array()
            .unwrap()
            .len(),
        2,
        "{conversation}"
    );
    let feedback = api.ok("get", "/api/prs/{id}/checks", &["1"], None);
    assert_eq!(
        (
            &feedback["ready"],
            &feedback["approvals"],
            &feedback["review_requested"]
        ),
        (&json!(true), &json!(1), &json!(true)),
        "{feedback}"
    );
    assert_eq!(
        api.ok("get", "/api/tasks/{id}", &[&t2_id], None)["status"],
        "in_review"
    );
    let auto = api.ok("get", "/api/prs/{id}/automation", &["1"], None);
    assert_eq!(
        (&auto["state"], &auto["fix_rounds"]),
        (&json!("disabled"), &json!(0))
    );
    let auto = api.ok(
        "put",
        "/api/prs/{id}/automation",
        &["1"],
        Some(json!({"on_merged": true, "fix": true})),
    );
    assert_eq!(
        (
            &auto["state"],
            &auto["switches"]["on_merged"],
            &auto["chips"][0]
        ),
        (
            &json!("auto_fix+lifecycle"),
            &json!(true),
            &json!("Auto-fix 0/10")
        ),
        "{auto}"
    );
    api.err(
        "put",
        "/api/prs/{id}/automation",
        &["1"],
        Some(json!({"fix": "yes"})),
        422,
        "invalid_body",
    );
    let prompt = api.ok(
        "get",
        "/api/projects/{name}/prompts/ci-auto-fix",
        &["demo"],
        None,
    );
    assert_eq!(prompt["edited"], false, "{prompt}");
    let prompt = api.ok(
        "put",
        "/api/projects/{name}/prompts/ci-auto-fix",
        &["demo"],
        Some(json!({"body": "Ours: {{pr.feedback}}"})),
    );
    assert_eq!(
        (&prompt["edited"], &prompt["body"]),
        (&json!(true), &json!("Ours: {{pr.feedback}}"))
    );
    let prompt = api.ok(
        "put",
        "/api/projects/{name}/prompts/ci-auto-fix",
        &["demo"],
        Some(json!({"body": null})),
    );
    assert_eq!(prompt["edited"], false, "{prompt}");
    api.err(
        "put",
        "/api/projects/{name}/prompts/ci-auto-fix",
        &["demo"],
        Some(json!({"body": " "})),
        422,
        "invalid_value",
    );
    let merge = api.ok("post", "/api/prs/{id}/merge", &["1"], None);
    assert_eq!(
        merge["status"]["status"], "pending",
        "main is protected: {merge}"
    );
    let merge_id = merge["id"].as_str().unwrap();
    let merged = api.ok("post", "/api/actions/{id}/approve", &[merge_id], None);
    assert_eq!(merged["outcome"]["succeeded"], true, "{merged}");
    assert_eq!(
        api.ok("get", "/api/prs/{id}", &["%231"], None)["status"],
        "merged"
    );
    assert_eq!(
        api.ok("get", "/api/tasks/{id}", &[&t2_id], None)["status"],
        "done"
    );
    api.err(
        "post",
        "/api/prs/{id}/merge",
        &["1"],
        None,
        409,
        "invalid_state",
    );

    let t3 = api.ok(
        "post",
        "/api/tasks",
        &[],
        Some(json!({"project": "demo", "title": "third"})),
    );
    let run = api.ok("post", "/api/agents/{name}/run", &["noop-1"], None);
    assert_eq!(run["stopped"]["state"], "in_review");
    let closed = api.ok(
        "post",
        "/api/prs/{id}/close",
        &["2"],
        Some(json!({"reason": "not needed"})),
    );
    assert_eq!(closed["status"], "closed");
    let t3 = api.ok(
        "get",
        "/api/tasks/{id}",
        &[t3["id"].as_str().unwrap()],
        None,
    );
    assert_eq!(t3["status"], "returned");
    assert!(
        t3["diagnosis"].as_str().unwrap().contains("not needed"),
        "{t3}"
    );
    api.err(
        "post",
        "/api/prs/{id}/close",
        &["2"],
        None,
        409,
        "invalid_state",
    );

    // Down, keeping the worktree of the task it holds.
    let down = api.ok(
        "post",
        "/api/agents/{name}/down",
        &["dev-1"],
        Some(json!({"keep_worktree": true})),
    );
    assert_eq!(down["mode"], Value::Null);
    // The page (a shell), its content and the document answer too.
    let page = api.c.raw("GET", "/", &[], None);
    assert_eq!(page.status, 200);
    assert!(page.text().contains("/assets/app.js"), "{}", page.text());
    let content = api.c.raw("GET", "/api/pages/approvals", &[], None);
    assert_eq!(content.status, 200);
    assert!(
        content.text().contains("Waiting for you"),
        "{}",
        content.text()
    );
    let doc = api.c.raw("GET", "/openapi.json", &[], None);
    assert_eq!(doc.json()["openapi"], "3.1.0");
}

/// An agent's worktree deeper than any stack (an agent nests 5,000
/// directories in under a second): taking its berth down is that call's
/// answer, and the server goes on serving — the recursive walk aborted the
/// whole `berth serve` process, every agent's berth with it.
#[test]
fn a_very_deep_worktree_goes_down_and_the_server_keeps_serving() {
    let state = State::with_project();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    let wt = state.state().join("berths/demo/dev-1/dev-1");
    // Chains of 1,000 stacked under one another: no path exceeds PATH_MAX.
    let made = std::process::Command::new("sh")
        .arg("-c")
        .arg(
            r#"set -e; p=$(printf 'd/%.0s' $(seq 1000)); mkdir -p "t/$p"; n=1000
while [ "$n" -lt 5000 ]; do mkdir -p "n/$p"; mv t "n/$p"; mv n t; n=$((n + 1001)); done
mv t deep"#,
        )
        .current_dir(&wt)
        .status()
        .unwrap();
    assert!(made.success());

    let served = start(&state, Transport::Socket, &["--no-agent-loops"]);
    let api = Api::new(served.client(&state));
    // What cannot be committed cannot be saved: refused until discarded.
    let m = api.err(
        "post",
        "/api/agents/{name}/down",
        &["dev-1"],
        Some(json!({"keep_worktree": false})),
        409,
        "save_failed",
    );
    assert!(m.contains("--discard"), "{m}");
    assert!(wt.exists());
    let down = api.ok(
        "post",
        "/api/agents/{name}/down",
        &["dev-1"],
        Some(json!({"keep_worktree": false, "discard": true})),
    );
    assert_eq!(down["mode"], Value::Null);
    assert!(!wt.exists());
    let agents = api.ok("get", "/api/agents", &[], None);
    assert!(agents.to_string().contains("dev-1"), "{agents}");
    let (code, _) = served.stop();
    assert_eq!(code, Some(0));
}

/// Bad input of every kind gets the documented JSON error, over both
/// transports; TCP also refuses a missing or wrong token.
#[test]
fn bad_input_gets_a_json_error_that_says_what_to_do() {
    for t in [Transport::Socket, Transport::Tcp] {
        let state = State::with_project();
        state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
        let served = start(&state, t, &["--no-agent-loops"]);
        let c = served.client(&state);
        let big = vec![b' '; berth_server::MAX_BODY_BYTES + 1];
        let json_ct = [("Content-Type", "application/json")];
        // (method, path, headers, body, status, code)
        type Case<'a> = (
            &'a str,
            &'a str,
            &'a [Header<'a>],
            Option<&'a [u8]>,
            u16,
            &'a str,
        );
        let cases: Vec<Case> = vec![
            (
                "POST",
                "/api/actions",
                &json_ct,
                Some(b"{\"agent\": \"dev-1\", "),
                400,
                "malformed_json",
            ),
            (
                "POST",
                "/api/actions",
                &json_ct,
                Some(b"not json"),
                400,
                "malformed_json",
            ),
            (
                "POST",
                "/api/tasks",
                &[("Content-Type", "text/plain")],
                Some(b"{}"),
                415,
                "unsupported_media_type",
            ),
            (
                "POST",
                "/api/tasks",
                &json_ct,
                Some(&big),
                413,
                "body_too_large",
            ),
            (
                "POST",
                "/api/tasks",
                &json_ct,
                Some(b"[1, 2]"),
                422,
                "invalid_body",
            ),
            (
                "POST",
                "/api/actions",
                &json_ct,
                Some(br#"{"agent": "ghost", "action": {"type": "terminal", "command": "ls"}}"#),
                404,
                "unknown_agent",
            ),
            ("GET", "/api/agents/ghost", &[], None, 404, "unknown_agent"),
            (
                "POST",
                "/api/agents/ghost/up",
                &[],
                None,
                404,
                "unknown_agent",
            ),
            (
                "PUT",
                "/api/agents/ghost/auto-mode",
                &json_ct,
                Some(b"{\"on\": true}"),
                404,
                "unknown_agent",
            ),
            ("GET", "/api/actions/zz", &[], None, 404, "unknown_action"),
            (
                "GET",
                "/api/actions?pending=maybe",
                &[],
                None,
                400,
                "invalid_query",
            ),
            ("GET", "/api/nowhere", &[], None, 404, "no_route"),
            (
                "DELETE",
                "/api/agents",
                &[],
                None,
                405,
                "method_not_allowed",
            ),
            (
                "GET",
                "/api/events/stream",
                &[("Last-Event-ID", "yesterday")],
                None,
                400,
                "invalid_header",
            ),
        ];
        for (method, path, headers, body, status, code) in cases {
            let r = c.raw(method, path, headers, body);
            let v = r.json();
            assert_eq!(
                (r.status, v["error"]["code"].as_str()),
                (status, Some(code)),
                "{t:?} {method} {path}: {v}"
            );
            assert!(!v["error"]["message"].as_str().unwrap().is_empty());
            assert_eq!(r.header("content-type"), Some("application/json"));
        }
        // Every answer carries the restrictive headers.
        let r = c.raw("GET", "/", &[], None);
        let csp = r.header("content-security-policy").unwrap();
        assert!(
            csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
            "{csp}"
        );
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
        served.stop();
    }
}

/// TCP: the token file is private; a request without the token, with a
/// wrong one, or with another Host is refused; the page's session needs the
/// CSRF header for writes.
#[test]
fn tcp_requires_the_token_and_the_page_session_requires_the_csrf_header() {
    use std::os::unix::fs::PermissionsExt as _;
    let state = State::with_project();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    let served = start(&state, Transport::Tcp, &["--no-agent-loops"]);
    let token_file = state.state().join("api-token");
    assert_eq!(
        std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let token = state.token();
    assert_eq!(token.len(), 64);
    let rest = wait_for(
        "the lines after the address",
        Duration::from_secs(5),
        || {
            let lines = served.stdout_rest.lock().unwrap().join("\n");
            lines.contains("approvals page").then_some(lines)
        },
    );
    assert!(
        rest.contains(token_file.to_str().unwrap()),
        "the token's path is printed: {rest}"
    );
    assert!(!rest.contains(&token), "the token itself is not printed");

    let anon = Client::new(served.target.clone(), None);
    let wrong = Client::new(served.target.clone(), Some("0".repeat(64)));
    let right = served.client(&state);
    let http::Target::Tcp(addr) = served.target else {
        panic!()
    };
    // (client, method, path, headers, status, code)
    type Case<'a> = (&'a Client, &'a str, &'a str, &'a [Header<'a>], u16, &'a str);
    let cases: Vec<Case> = vec![
        (&anon, "GET", "/api/agents", &[], 401, "unauthorized"),
        (&anon, "GET", "/openapi.json", &[], 401, "unauthorized"),
        (&anon, "POST", "/api/tasks", &[], 401, "unauthorized"),
        (&wrong, "GET", "/api/agents", &[], 401, "unauthorized"),
        (
            &anon,
            "GET",
            "/api/agents",
            &[("Authorization", "Basic YWRhOmFkYQ==")],
            401,
            "unauthorized",
        ),
        (
            &right,
            "GET",
            "/api/agents",
            &[("Host", "evil.example:80")],
            421,
            "bad_host",
        ),
    ];
    for (c, method, path, headers, status, code) in cases {
        let r = c.raw(method, path, headers, None);
        assert_eq!(
            (r.status, r.json()["error"]["code"].as_str()),
            (status, Some(code)),
            "{method} {path} {headers:?}"
        );
    }
    assert_eq!(right.raw("GET", "/api/agents", &[], None).status, 200);
    let localhost = right.raw(
        "GET",
        "/api/agents",
        &[("Host", &format!("localhost:{}", addr.port()))],
        None,
    );
    assert_eq!(localhost.status, 200);

    // The page without a session says how to log in; a wrong token is refused.
    let page = anon.raw("GET", "/", &[], None);
    assert_eq!(page.status, 401);
    assert!(page.text().contains("/login?token="), "{}", page.text());
    let bad_login = anon.raw(
        "GET",
        &format!("/login?token={}", "0".repeat(64)),
        &[],
        None,
    );
    assert_eq!(bad_login.status, 401);
    assert!(bad_login.header("set-cookie").is_none());
    // The right token: a session cookie, HttpOnly and SameSite=Strict, and
    // the session's secret, in the login answer only.
    let (session, secret) = log_in(&anon, &token);
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut h = vec![("Cookie", session.as_str())];
        h.extend_from_slice(extra);
        h
    };
    let page = anon.raw("GET", "/", &with(&[]), None);
    assert_eq!(page.status, 200);
    assert!(
        !page.text().contains(&secret),
        "a page fetched with the cookie alone does not carry the secret"
    );
    // Nor any data: the pages are shells, their content is under /api/pages
    // (the secret needed there too). A task and a pending action with
    // known text, which the content shows and a shell must not.
    let title = "a task title only the content shows";
    let made = right.raw(
        "POST",
        "/api/tasks",
        &[("Content-Type", "application/json")],
        Some(format!("{{\"project\": \"demo\", \"title\": \"{title}\"}}").as_bytes()),
    );
    assert_eq!(made.status, 201, "{}", made.text());
    let task_id = made.json()["id"].as_str().unwrap().to_string();
    let command = "ls /root/only-the-content-shows-this";
    let proposed = right.raw(
        "POST",
        "/api/actions",
        &[("Content-Type", "application/json")],
        Some(
            format!(
                "{{\"agent\": \"dev-1\", \"task\": \"{task_id}\", \"action\": {{\"type\": \"terminal\", \"command\": \"{command}\"}}}}"
            )
            .as_bytes(),
        ),
    );
    assert_eq!(
        proposed.json()["status"]["status"],
        "pending",
        "{}",
        proposed.text()
    );
    let task_path = format!("/tasks/{task_id}");
    let fragment_paths = [
        "/api/pages/approvals".to_string(),
        format!("/api/pages{task_path}"),
    ];
    for (shell, fragment) in ["/", task_path.as_str()].into_iter().zip(&fragment_paths) {
        let page = anon.raw("GET", shell, &with(&[]), None);
        assert_eq!(page.status, 200, "{shell}");
        assert!(
            !page.text().contains(title)
                && !page.text().contains(&task_id)
                && !page.text().contains(command),
            "{shell} with the cookie alone shows no data: {}",
            page.text()
        );
        let refused = anon.raw("GET", fragment, &with(&[]), None);
        assert_eq!(
            (refused.status, refused.json()["error"]["code"].as_str()),
            (403, Some("session_secret_missing")),
            "{fragment}"
        );
        let shown = anon.raw(
            "GET",
            fragment,
            &with(&[])
                .into_iter()
                .chain([("X-Berth-Session-Secret", secret.as_str())])
                .collect::<Vec<_>>(),
            None,
        );
        assert_eq!(shown.status, 200, "{fragment}");
        assert!(
            shown.text().contains(title) && shown.text().contains(command),
            "{fragment}: {}",
            shown.text()
        );
    }
    // The cookie alone (as another server on 127.0.0.1 receives it) opens
    // no API call, not even a read.
    let cookie_only = anon.raw("GET", "/api/agents", &with(&[]), None);
    assert_eq!(
        (
            cookie_only.status,
            cookie_only.json()["error"]["code"].as_str()
        ),
        (403, Some("session_secret_missing")),
        "{}",
        cookie_only.text()
    );
    assert!(cookie_only.text().contains("X-Berth-Session-Secret"));
    let body = br#"{"project": "demo", "title": "from the page"}"#;
    let json_ct = ("Content-Type", "application/json");
    let secret_h = ("X-Berth-Session-Secret", secret.as_str());
    let read = anon.raw(
        "GET",
        "/api/agents",
        &[("Cookie", session.as_str()), secret_h],
        None,
    );
    assert_eq!(read.status, 200, "{}", read.text());
    let no_csrf = anon.raw(
        "POST",
        "/api/tasks",
        &[("Cookie", session.as_str()), secret_h, json_ct],
        Some(body),
    );
    assert_eq!(
        (no_csrf.status, no_csrf.json()["error"]["code"].as_str()),
        (403, Some("csrf_header_missing"))
    );
    let ok = anon.raw(
        "POST",
        "/api/tasks",
        &[
            ("Cookie", session.as_str()),
            secret_h,
            json_ct,
            ("X-Berth-Request", "1"),
        ],
        Some(body),
    );
    assert_eq!(ok.status, 201, "{}", ok.text());
    // Another session's secret does not open this one.
    let (other_session, other_secret) = log_in(&anon, &token);
    assert_ne!(other_secret, secret);
    let crossed = anon.raw(
        "GET",
        "/api/agents",
        &[
            ("Cookie", session.as_str()),
            ("X-Berth-Session-Secret", other_secret.as_str()),
        ],
        None,
    );
    assert_eq!(
        (crossed.status, crossed.json()["error"]["code"].as_str()),
        (403, Some("session_secret_wrong"))
    );
    let theirs = anon.raw(
        "GET",
        "/api/agents",
        &[
            ("Cookie", other_session.as_str()),
            ("X-Berth-Session-Secret", other_secret.as_str()),
        ],
        None,
    );
    assert_eq!(theirs.status, 200);
    let forged = anon.raw(
        "GET",
        "/api/agents",
        &[("Cookie", "berth_session=0123"), secret_h],
        None,
    );
    assert_eq!(forged.status, 401);
    // Bearer-token clients need no secret.
    assert_eq!(right.raw("GET", "/api/agents", &[], None).status, 200);
    // A session does not outlive the server.
    served.stop();
    let again = start(&state, Transport::Tcp, &["--no-agent-loops"]);
    let anon = Client::new(again.target.clone(), None);
    assert_eq!(
        anon.raw(
            "GET",
            "/api/agents",
            &[("Cookie", session.as_str()), secret_h],
            None
        )
        .status,
        401
    );
    assert_eq!(state.token(), token, "the token file is reused");
    again.stop();
}

/// Logs in with the API token: the session cookie (`berth_session=…`) and
/// the session's secret, read from the login answer.
fn log_in(anon: &Client, token: &str) -> (String, String) {
    let login = anon.raw("GET", &format!("/login?token={token}"), &[], None);
    assert_eq!(login.status, 200, "{}", login.text());
    let cookie = login.header("set-cookie").unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && cookie.contains("Max-Age="),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_string();
    assert!(!session.contains(token), "the cookie is not the token");
    let html = login.text();
    let marker = "<meta name=\"berth-session-secret\" content=\"";
    let rest = &html[html.find(marker).expect(&html) + marker.len()..];
    let secret = rest[..rest.find('"').unwrap()].to_string();
    assert_eq!(secret.len(), 64, "{html}");
    assert!(
        !session.contains(&secret),
        "the secret is not in the cookie"
    );
    (session, secret)
}

/// A page session expires: the page and the API then say to log in again;
/// a bearer token is unaffected.
#[test]
fn a_page_session_expires() {
    let state = State::with_project();
    let served = start(
        &state,
        Transport::Tcp,
        &["--no-agent-loops", "--session-ttl", "2"],
    );
    let token = state.token();
    let anon = Client::new(served.target.clone(), None);
    let (session, secret) = log_in(&anon, &token);
    let headers = [
        ("Cookie", session.as_str()),
        ("X-Berth-Session-Secret", secret.as_str()),
    ];
    assert_eq!(anon.raw("GET", "/api/agents", &headers, None).status, 200);
    std::thread::sleep(Duration::from_millis(2_300));
    let expired = anon.raw("GET", "/api/agents", &headers, None);
    assert_eq!(
        (expired.status, expired.json()["error"]["code"].as_str()),
        (401, Some("session_expired")),
        "{}",
        expired.text()
    );
    let msg = expired.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        msg.contains("expired")
            && msg.contains("reload the page and log in again")
            && msg.contains("2s"),
        "{msg}"
    );
    let page = anon.raw("GET", "/", &[("Cookie", session.as_str())], None);
    assert_eq!(page.status, 401);
    assert!(
        page.text().contains("expired") && page.text().contains("/login?token="),
        "{}",
        page.text()
    );
    assert_eq!(
        served
            .client(&state)
            .raw("GET", "/api/agents", &[], None)
            .status,
        200
    );
    // A new login opens a new session.
    let (fresh, fresh_secret) = log_in(&anon, &token);
    let again = anon.raw(
        "GET",
        "/api/agents",
        &[
            ("Cookie", fresh.as_str()),
            ("X-Berth-Session-Secret", fresh_secret.as_str()),
        ],
        None,
    );
    assert_eq!(again.status, 200);
    served.stop();
}

/// Auto mode on a runner berth: refused while the runner's confinement is
/// not available and `[sandbox] allow_unconfined` is off (CLI and API);
/// once accepted, the CLI, the API's answer and the page say that the path
/// scope is lifted on this machine and what still holds.
#[test]
fn auto_mode_on_a_runner_berth_says_the_host_and_needs_allow_unconfined() {
    let mut state = State::with_project();
    // The runner cannot confine here: its exec shim is named where nothing is.
    state.set_env("BERTH_EXEC_SHIM", "/nonexistent/berth-exec-shim");
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    let cfg = state.state().join("projects/demo/berth.toml");
    let accepted = std::fs::read_to_string(&cfg).unwrap();
    assert!(accepted.contains("allow_unconfined = true"), "{accepted}");
    std::fs::write(
        &cfg,
        accepted.replacen("allow_unconfined = true", "allow_unconfined = false", 1),
    )
    .unwrap();

    for args in [
        &["agent", "auto-mode", "dev-1", "on"][..],
        &["autonomy", "set", "dev-1", "*", "auto_approve"][..],
    ] {
        let out = state.run(args);
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("auto mode refused for `dev-1`")
                && err.contains("runner's confinement is not available here")
                && err.contains("allow_unconfined = true")
                && err.contains(cfg.to_str().unwrap()),
            "{err}"
        );
    }
    // A specific type may still be auto-approved: only the wildcard is auto mode.
    state.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);

    let served = start(&state, Transport::Socket, &["--no-agent-loops"]);
    let api = served.client(&state);
    let on = json!({"on": true});
    let refused = api.call("PUT", "/api/agents/dev-1/auto-mode", Some(&on));
    assert_eq!(
        (refused.status, refused.json()["error"]["code"].as_str()),
        (409, Some("unconfined")),
        "{}",
        refused.text()
    );
    let report = api.call("GET", "/api/agents/dev-1/autonomy", None).json();
    assert_eq!(report["auto_mode"], false, "nothing was written");

    std::fs::write(&cfg, &accepted).unwrap();
    let r = api.call("PUT", "/api/agents/dev-1/auto-mode", Some(&on));
    assert_eq!(r.status, 200, "{}", r.text());
    let note = r.json()["runner_host"].as_str().unwrap().to_string();
    assert!(
        note.contains("lifts the path scope on this machine")
            && note.contains("not available here")
            && note.contains("only the policy"),
        "{note}"
    );
    let page = api.raw("GET", "/api/pages/approvals", &[], None).text();
    assert!(
        page.contains("class=\"runner-host\"")
            && page.contains("lifts the path scope on this machine"),
        "{page}"
    );
    served.stop();
    state.ok(&["agent", "auto-mode", "dev-1", "off"]);
    let said = state.ok(&["agent", "auto-mode", "dev-1", "on"]);
    assert!(
        said.contains("lifts the path scope on this machine") && said.contains("only the policy"),
        "{said}"
    );
}

/// A non-loopback address is refused, and says why, unless forced.
#[test]
fn a_non_loopback_address_is_refused_unless_forced() {
    let state = State::with_project();
    for addr in ["0.0.0.0:0", "[::]:0"] {
        let out = state.run(&["serve", "--listen", addr]);
        assert_eq!(out.status.code(), Some(2), "{addr}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("not a loopback address")
                && err.contains("--allow-non-loopback")
                && err.contains("token in clear"),
            "{err}"
        );
    }
    assert!(
        !state.state().join("api-token").exists(),
        "nothing was created"
    );
    let out = state.run(&["serve", "--listen", "example.com:80"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid listen address"));

    let served = Served::start(
        &state,
        &[
            "--listen",
            "0.0.0.0:0",
            "--allow-non-loopback",
            "--no-agent-loops",
        ],
    );
    let http::Target::Tcp(addr) = served.target else {
        panic!()
    };
    assert!(addr.ip().is_unspecified());
    let c = Client::new(
        http::Target::Tcp(std::net::SocketAddr::from(([127, 0, 0, 1], addr.port()))),
        Some(state.token()),
    );
    // Any Host may reach a forced address; the token is still required.
    assert_eq!(
        c.raw("GET", "/api/agents", &[("Host", "berth.lan")], None)
            .status,
        200
    );
    let anon = Client::new(c.target.clone(), None);
    assert_eq!(anon.raw("GET", "/api/agents", &[], None).status, 401);
    served.stop();
}

/// The stream delivers what other processes write, in order, once each;
/// resumes from Last-Event-ID; and ends when the server stops.
#[test]
fn the_event_stream_follows_the_store_across_processes() {
    let state = State::with_project();
    let served = start(&state, Transport::Socket, &["--no-agent-loops"]);
    let c = served.client(&state);
    let mut all = c.events("/api/events/stream", &[]);
    assert_eq!(all.status, 200);
    let ct = all
        .headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-type"))
        .unwrap()
        .1
        .clone();
    assert!(ct.starts_with("text/event-stream"), "{ct}");
    let mut tasks_only = c.events("/api/events/stream?type=task.created", &[]);
    // Nothing old: a stream without a cursor starts at the newest event.
    assert_eq!(all.next(Duration::from_millis(400)), None);

    // Another process writes.
    state.ok(&["task", "create", "--project", "demo", "--title", "one"]);
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["task", "create", "--project", "demo", "--title", "two"]);
    let mut got = Vec::new();
    while let Some(e) = all.next(Duration::from_secs(5)) {
        let v: Value = serde_json::from_str(&e.data).unwrap();
        assert_eq!(
            e.id.as_deref().map(|s| s.parse::<i64>().unwrap()),
            v["id"].as_i64()
        );
        got.push((
            v["id"].as_i64().unwrap(),
            v["type"].as_str().unwrap().to_string(),
        ));
        if got.len() == 3 {
            break;
        }
    }
    let kinds: Vec<&str> = got.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(kinds, ["task.created", "agent.activated", "task.created"]);
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "in order: {got:?}");
    let titles: Vec<String> = (0..2)
        .map(|_| {
            let e = tasks_only.next(Duration::from_secs(5)).unwrap();
            let v: Value = serde_json::from_str(&e.data).unwrap();
            v["payload"]["title"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(titles, ["one", "two"]);

    // A client that reconnects with Last-Event-ID gets what followed it.
    let first = got[0].0.to_string();
    let mut resumed = c.events(
        "/api/events/stream?after=999999",
        &[("Last-Event-ID", &first)],
    );
    let ids: Vec<i64> = (0..2)
        .map(|_| {
            resumed
                .next(Duration::from_secs(5))
                .unwrap()
                .id
                .unwrap()
                .parse()
                .unwrap()
        })
        .collect();
    assert_eq!(ids, [got[1].0, got[2].0]);

    // Stopping the server ends every stream and the server exits promptly.
    let sock = match &served.target {
        http::Target::Unix(p) => p.clone(),
        _ => unreachable!(),
    };
    let (code, took) = served.stop();
    assert_eq!(code, Some(0));
    assert!(all.ended(Duration::from_secs(5)), "the stream ended");
    assert!(took < Duration::from_secs(8), "stopped in {took:?}");
    assert!(!sock.exists(), "the socket file is removed");
}

/// Project `demo` with noop agent `noop-1` up in a runner berth, whose
/// commits wait for a person (so a test sees which server drove it).
fn noop_waiting_on_its_commit() -> State {
    let state = State::with_project();
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
    state
}

/// The server drives a noop agent on its own: the loop claims a task made
/// by another process, waits on a pending commit, and goes on to the PR
/// once a person approves it.
#[test]
fn the_server_drives_noop_agents_in_the_background() {
    let state = noop_waiting_on_its_commit();
    let served = start(&state, Transport::Socket, &[]);
    let api = Api::new(served.client(&state));
    let out = state.ok(&[
        "task",
        "create",
        "--project",
        "demo",
        "--title",
        "background",
        "--json",
    ]);
    let task: Value = serde_json::from_str(&out).unwrap();
    let task_id = task["id"].as_str().unwrap().to_string();
    let commit = wait_for("the pending commit", Duration::from_secs(30), || {
        let (_, v) = api.call("get", "/api/actions", &[], "?pending&agent=noop-1", None);
        v.as_array().unwrap().first().cloned()
    });
    assert_eq!(
        (commit["action"]["type"].as_str(), commit["task"].as_str()),
        (Some("git_commit"), Some(task_id.as_str()))
    );
    assert_eq!(
        api.ok("get", "/api/agents/{name}", &["noop-1"], None)["status"],
        "awaiting_approval"
    );
    api.ok(
        "post",
        "/api/actions/{id}/approve",
        &[commit["id"].as_str().unwrap()],
        None,
    );
    let t = wait_for("the task in review", Duration::from_secs(30), || {
        let t = api.ok("get", "/api/tasks/{id}", &[&task_id], None);
        (t["status"] == "in_review").then_some(t)
    });
    assert_eq!(t["agent"], "noop-1");
    let prs = api.ok("get", "/api/prs", &[], None);
    assert_eq!(prs[0]["task"], task_id.as_str());
    served.stop();
}

/// Two servers on one state directory: only the holder of an agent's lease
/// drives it; when the holder is killed, the other takes the agent over
/// once the lease runs out (the next fencing token, the killed holder
/// named) and finishes the task's delivery — one commit, one PR.
#[test]
fn two_servers_share_a_store_and_the_survivor_takes_over_a_killed_servers_agent() {
    let state = noop_waiting_on_its_commit();
    let sock = |n: &str| format!("unix:{}", state.root().join(n).display());
    let a = Served::start(&state, &["--listen", &sock("a.sock"), "--agent-lease", "2"]);
    let leases = || -> Vec<Value> {
        let out = state.ok(&["events", "--type", "agent.lease_taken", "--json"]);
        serde_json::from_str::<Value>(&out)
            .unwrap()
            .as_array()
            .unwrap()
            .clone()
    };
    let pending_commit = || -> Option<Value> {
        let out = state.ok(&["actions", "--pending", "--json"]);
        serde_json::from_str::<Value>(&out)
            .unwrap()
            .as_array()
            .unwrap()
            .first()
            .cloned()
    };
    let task_id = state.new_task("shared");
    let commit = wait_for(
        "server A's pending commit",
        Duration::from_secs(30),
        pending_commit,
    );
    let first = leases();
    assert_eq!(first.len(), 1, "{first:?}");
    let owner_a = first[0]["payload"]["owner"].as_str().unwrap().to_string();
    assert!(owner_a.contains(&format!(":{}:", a.pid())), "{owner_a}");

    // B starts beside A: A renews its lease, so B never takes the agent.
    let b = Served::start(&state, &["--listen", &sock("b.sock"), "--agent-lease", "2"]);
    std::thread::sleep(Duration::from_secs(4));
    assert_eq!(leases().len(), 1, "B took a lease A still renews");

    // A dies. The commit is approved (by a person, in a terminal); B takes
    // the agent over once A's lease runs out and goes on to push and PR.
    a.crash();
    state.ok(&["approve", commit["id"].as_str().unwrap()]);
    wait_for("B to deliver the task", Duration::from_secs(60), || {
        let t: Value =
            serde_json::from_str(&state.ok(&["task", "show", &task_id, "--json"])).ok()?;
        (t["task"]["status"] == "in_review").then_some(())
    });
    let all = leases();
    assert_eq!(all.len(), 2, "{all:?}");
    let taken = &all[1]["payload"];
    assert!(
        taken["owner"]
            .as_str()
            .unwrap()
            .contains(&format!(":{}:", b.pid())),
        "{taken}"
    );
    assert_eq!(taken["token"], 2);
    assert_eq!(taken["previous_owner"], owner_a.as_str());
    let prs: Value = serde_json::from_str(&state.ok(&["pr", "list", "--json"])).unwrap();
    assert_eq!(prs.as_array().unwrap().len(), 1, "{prs}");
    // One commit action for the task, executed once.
    let actions: Value = serde_json::from_str(&state.ok(&["actions", "--json"])).unwrap();
    let commits: Vec<&Value> = actions
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["task"] == task_id.as_str() && a["action"]["type"] == "git_commit")
        .collect();
    assert_eq!(commits.len(), 1, "{actions}");
    assert_eq!(commits[0]["status"], "executed");
    b.stop();
}

/// A crash while an action executes: the next server marks it interrupted
/// (and never re-runs it), as recovery promises.
#[test]
fn a_server_started_after_a_crash_marks_the_running_action_interrupted() {
    let state = State::with_project();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let served = start(&state, Transport::Socket, &["--no-agent-loops"]);
    let api = Api::new(served.client(&state));
    let c = served.client(&state);
    let proposer = std::thread::spawn(move || {
        // Its connection dies with the server: the answer is lost.
        let _ = std::panic::catch_unwind(|| {
            c.call(
                "POST",
                "/api/actions",
                Some(&json!({"agent": "dev-1", "action": {"type": "terminal", "command": "sleep 3"}})),
            )
        });
    });
    let running = wait_for("the action executing", Duration::from_secs(20), || {
        let (_, v) = api.call("get", "/api/actions", &[], "?agent=dev-1", None);
        v.as_array()
            .unwrap()
            .iter()
            .find(|a| a["status"] == "executing")
            .cloned()
    });
    served.crash();
    let _ = proposer.join();
    let again = start(&state, Transport::Socket, &["--no-agent-loops"]);
    let api = Api::new(again.client(&state));
    let id = running["id"].as_str().unwrap();
    let a = api.ok("get", "/api/actions/{id}", &[id], None);
    assert_eq!(a["status"], "interrupted", "{a}");
    assert!(
        a["diagnostic"].as_str().unwrap().contains("was not re-run"),
        "{a}"
    );
    let (_, ev) = api.call("get", "/api/events", &[], "?type=action.interrupted", None);
    assert_eq!(ev[0]["action"], id);
    assert_eq!(ev[0]["actor"]["kind"], "system");
    again.stop();
}

/// Pipeline tasks over the API: created with steps, run until a step waits
/// for a person, resumed by the server once the person approves it (no
/// second `run` call), then approved as a task in review; modes set per task
/// and per project; choices listed; a resume of an agent that is not paused
/// refused with a reason.
#[test]
fn pipelines_run_over_the_api_and_resume_in_the_background_after_an_approval() {
    let state = State::with_project();
    roomy(&state);
    state.ok(&["agent", "activate", "builder", "--project", "demo"]);
    state.ok(&["up", "builder", "--project", "demo", "--mode", "runner"]);
    let served = start(&state, Transport::Socket, &[]);
    let api = Api::new(served.client(&state));

    let (s, task) = api.call(
        "post",
        "/api/tasks",
        &[],
        "",
        Some(json!({
            "project": "demo",
            "title": "check",
            "steps": ["echo checked > /dev/null"],
            "mode": "review",
        })),
    );
    assert_eq!(s, 201, "{task}");
    assert_eq!(
        (&task["steps"], &task["execution_mode"], &task["source"]),
        (
            &json!([{"command": "echo checked > /dev/null"}]),
            &json!("review"),
            &json!("user")
        )
    );
    let id = task["id"].as_str().unwrap().to_string();

    // The agent has no rule for the step: it waits for a person.
    let report = api.ok("post", "/api/tasks/{id}/run", &[&id], None);
    assert_eq!(
        (&report["end"]["state"], &report["mode"], &report["agent"]),
        (&json!("waiting"), &json!("review"), &json!("builder"))
    );
    let action = report["end"]["action"].as_str().unwrap().to_string();
    assert_eq!(
        api.ok("get", "/api/tasks/{id}", &[&id], None)["status"],
        "awaiting_approval"
    );
    api.ok("post", "/api/actions/{id}/approve", &[&action], None);
    // No second run call: the server resumes the run.
    wait_for("the task in review", Duration::from_secs(30), || {
        let t = api.ok("get", "/api/tasks/{id}", &[&id], None);
        (t["status"] == "in_review").then_some(())
    });
    let done = api.ok("post", "/api/tasks/{id}/approve", &[&id], None);
    assert_eq!(done["end"]["state"], "done");
    assert_eq!(
        api.ok("get", "/api/tasks/{id}", &[&id], None)["status"],
        "done"
    );

    // A second task, returned by a person.
    let (_, t2) = api.call(
        "post",
        "/api/tasks",
        &[],
        "",
        Some(json!({"project": "demo", "title": "lint", "steps": ["true"], "write": true})),
    );
    let id2 = t2["id"].as_str().unwrap().to_string();
    assert_eq!(t2["write"], true);
    let t2 = api.ok(
        "put",
        "/api/tasks/{id}/mode",
        &[&id2],
        Some(json!({"mode": "auto"})),
    );
    assert_eq!(t2["execution_mode"], "auto");
    let t2 = api.ok(
        "put",
        "/api/tasks/{id}/mode",
        &[&id2],
        Some(json!({"mode": "inherit"})),
    );
    assert_eq!(t2.get("execution_mode"), None);
    api.err(
        "put",
        "/api/tasks/{id}/mode",
        &[&id2],
        Some(json!({"mode": "sometimes"})),
        422,
        "invalid_value",
    );
    api.ok(
        "put",
        "/api/projects/{name}/mode",
        &["demo"],
        Some(json!({"mode": "review"})),
    );
    let cfg = std::fs::read_to_string(state.state().join("projects/demo/berth.toml")).unwrap();
    assert!(cfg.contains("mode = \"review\""), "{cfg}");
    let msg = api.err(
        "post",
        "/api/tasks/{id}/reject",
        &[&id2],
        Some(json!({})),
        422,
        "invalid_body",
    );
    assert!(msg.contains("reason"), "{msg}");

    assert_eq!(
        api.ok("get", "/api/choices", &[], None),
        json!([]),
        "no followup was blocked"
    );
    let msg = api.err(
        "post",
        "/api/agents/{name}/resume",
        &["builder"],
        None,
        409,
        "invalid_state",
    );
    assert!(msg.contains("not paused"), "{msg}");
    served.stop();
}

/// A pending file write shows, over the API, on the page and in `berth
/// actions`, where its path leads on this host; approving it after the
/// agent swapped its directory for a link out of the worktree runs nothing
/// and answers 409 naming the link and its target.
#[test]
fn a_pending_file_write_shows_where_it_lands_and_is_checked_again_at_approval() {
    let state = State::with_project();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&["autonomy", "set", "dev-1", "file_write", "require_approval"]);
    let wt = state.state().join("berths/demo/dev-1/dev-1");
    std::fs::create_dir_all(wt.join("d")).unwrap();
    let outside = tempfile::tempdir().unwrap();
    let served = start(&state, Transport::Socket, &["--no-agent-loops"]);
    let api = Api::new(served.client(&state));
    let proposed = api.ok(
        "post",
        "/api/actions",
        &[],
        Some(json!({
            "agent": "dev-1",
            "action": {"type": "file_write", "path": "d/notes.txt"},
            "params": {"content": "from the agent\n"},
        })),
    );
    assert_eq!(proposed["status"]["status"], "pending", "{proposed}");
    let id = proposed["id"].as_str().unwrap();
    let landing = wt.join("d/notes.txt").display().to_string();
    let shown = api.ok("get", "/api/actions/{id}", &[id], None);
    assert_eq!(shown["resolved_path"], landing.as_str(), "{shown}");
    let page = api.c.raw("GET", "/api/pages/approvals", &[], None).text();
    assert!(
        page.contains(&format!(
            "class=\"resolved\">Acts on, on this host: <code>{landing}</code>"
        )),
        "{page}"
    );
    let listed = state.ok(&["actions", "--pending"]);
    assert!(
        listed.contains(&format!("acts on (host): {landing}")),
        "{listed}"
    );

    std::fs::rename(wt.join("d"), wt.join("d.real")).unwrap();
    std::os::unix::fs::symlink(outside.path(), wt.join("d")).unwrap();
    let msg = api.err(
        "post",
        "/api/actions/{id}/approve",
        &[id],
        Some(json!({})),
        409,
        "refused_at_approval",
    );
    assert!(
        msg.contains(&format!("/work/d -> {}", outside.path().display())),
        "{msg}"
    );
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    let after = api.ok("get", "/api/actions/{id}", &[id], None);
    assert_eq!(after["status"], "refused", "{after}");
    served.stop();
}

/// A cgroup under `berth/` in the unified hierarchy, as a runner exec's,
/// removed (leaf first) when dropped.
struct ExecCgroup {
    dirs: Vec<std::path::PathBuf>,
}

impl ExecCgroup {
    /// `berth/test@<pid>/a/b`, or `None` (skip) when it cannot be made
    /// outside CI: making one needs root.
    fn make() -> Option<ExecCgroup> {
        let top = std::path::Path::new("/sys/fs/cgroup/unified/berth")
            .join(format!("test@{}", std::process::id()));
        let leaf = top.join("a/b");
        match std::fs::create_dir_all(&leaf) {
            Ok(()) => Some(ExecCgroup {
                dirs: vec![leaf, top.join("a"), top],
            }),
            Err(e) if std::env::var("CI").as_deref() == Ok("true") => {
                panic!("CI=true and no exec cgroup could be made: {e}")
            }
            Err(e) => {
                eprintln!("skipping: cannot make a cgroup under berth/ (needs root): {e}");
                None
            }
        }
    }

    fn procs(&self) -> std::path::PathBuf {
        self.dirs[0].join("cgroup.procs")
    }
}

impl Drop for ExecCgroup {
    fn drop(&mut self) {
        for d in &self.dirs {
            let _ = std::fs::remove_dir(d);
        }
    }
}

/// On the unix socket, `berth serve` refuses a peer that runs inside a
/// berth exec's cgroup (403, the reason said and logged); a client outside
/// one is served.
#[test]
fn the_socket_refuses_a_peer_inside_a_berth_exec() {
    let Some(cgroup) = ExecCgroup::make() else {
        return;
    };
    let state = State::new();
    let served = start(&state, Transport::Socket, &["--no-agent-loops"]);
    let http::Target::Unix(socket) = &served.target else {
        panic!("not a unix socket: {:?}", served.target)
    };
    let normal = served.client(&state).call("GET", "/api/projects", None);
    assert_eq!(normal.status, 200, "{}", normal.text());

    // The shell joins the cgroup, then becomes curl (same pid).
    let script = format!(
        "echo $$ > '{}' && exec curl -s -w '\\n%{{http_code}}' --unix-socket '{}' http://berth/api/projects",
        cgroup.procs().display(),
        socket.display()
    );
    let out = std::process::Command::new("sh")
        .args(["-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (body, code) = stdout.rsplit_once('\n').unwrap();
    assert_eq!(code, "403", "{body}");
    let v: Value = serde_json::from_str(body).unwrap();
    assert_eq!(v["error"]["code"], "peer_in_berth", "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("inside a berth") && message.contains("/berth/test@"),
        "{message}"
    );
    let again = served.client(&state).call("GET", "/api/projects", None);
    assert_eq!(again.status, 200, "{}", again.text());
    let log = served.log();
    let (code, _) = served.stop();
    assert_eq!(code, Some(0));
    assert!(log.contains("refused a peer on the unix socket"), "{log}");
}

/// Whether a process whose argv is exactly `argv` runs on this host (a
/// runner exec's pids mean nothing outside its namespace; its argv does).
fn runs(argv: &[&str]) -> bool {
    let want: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(Result::ok)
        .any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| c == want)
                && std::fs::read_to_string(e.path().join("stat"))
                    .is_ok_and(|s| !s.rsplit(") ").next().is_some_and(|r| r.starts_with('Z')))
        })
}

/// `POST /api/actions/{id}/cancel` stops a command another process runs
/// (`berth exec`): the approvals page lists it under "Running now" with a
/// Stop button (the command escaped); a page session needs the CSRF header
/// for it as for any write; the action ends `cancelled` with its output so
/// far, and the exec returns. A cancelled, a pending and an unknown action
/// get the documented errors.
#[test]
fn an_executing_command_is_stopped_over_the_api_and_the_page_offers_stop() {
    let state = State::with_project();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    let served = start(&state, Transport::Tcp, &["--no-agent-loops"]);
    let api = Api::new(served.client(&state));
    let anon = Client::new(served.target.clone(), None);
    let (session, secret) = log_in(&anon, &state.token());
    let page_headers = [
        ("Cookie", session.as_str()),
        ("X-Berth-Session-Secret", secret.as_str()),
    ];
    let command = "echo before; sleep 304.25; echo '<i>never</i>'";
    std::thread::scope(|scope| {
        let exec = scope.spawn(|| state.run(&["exec", "dev-1", "--", command]));
        let id = wait_for("the command running", Duration::from_secs(30), || {
            let (_, v) = api.call("get", "/api/actions", &[], "?agent=dev-1", None);
            let running = v
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["status"] == "executing")?;
            runs(&["sleep", "304.25"]).then(|| running["id"].as_str().unwrap().to_string())
        });

        let page = anon
            .raw("GET", "/api/pages/approvals", &page_headers, None)
            .text();
        assert!(
            page.contains(&format!("id=\"running-{id}\""))
                && page.contains(&format!(
                    "data-verb=\"cancel\" data-action-id=\"{id}\">Stop</button>"
                )),
            "{page}"
        );
        assert!(
            page.contains("&lt;i&gt;never&lt;/i&gt;") && !page.contains("<i>never"),
            "the command is escaped: {page}"
        );

        let path = format!("/api/actions/{id}/cancel");
        let json_ct = ("Content-Type", "application/json");
        let no_csrf = anon.raw(
            "POST",
            &path,
            &[page_headers[0], page_headers[1], json_ct],
            Some(b"{}"),
        );
        assert_eq!(
            (no_csrf.status, no_csrf.json()["error"]["code"].as_str()),
            (403, Some("csrf_header_missing"))
        );
        assert!(runs(&["sleep", "304.25"]), "nothing was stopped");

        let cancelled = anon.raw(
            "POST",
            &path,
            &[
                page_headers[0],
                page_headers[1],
                json_ct,
                ("X-Berth-Request", "1"),
            ],
            Some(b"{}"),
        );
        assert_eq!(cancelled.status, 200, "{}", cancelled.text());
        let v = cancelled.json();
        berth_server::openapi::check_response(
            &api.doc,
            "post",
            "/api/actions/{id}/cancel",
            200,
            &v,
        )
        .unwrap();
        assert_eq!(
            (v["status"].as_str(), v["killed"].as_bool()),
            (Some("cancelled"), Some(true)),
            "{v}"
        );
        assert_eq!(v["result"]["stdout"], "before\n", "{v}");
        let out = exec.join().unwrap();
        assert!(!out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), "before\n");
        assert!(!runs(&["sleep", "304.25"]), "the command survived");

        let m = api.err(
            "post",
            "/api/actions/{id}/cancel",
            &[&id],
            None,
            409,
            "not_executing",
        );
        assert!(m.contains("is cancelled, not executing"), "{m}");
        let (_, ev) = api.call(
            "get",
            "/api/events",
            &[],
            "?type=action.cancel_requested",
            None,
        );
        assert_eq!(
            (ev[0]["action"].as_str(), ev[0]["actor"]["id"].as_str()),
            (Some(id.as_str()), Some("ada"))
        );
    });
    api.err(
        "post",
        "/api/actions/{id}/cancel",
        &["ffffffff"],
        None,
        404,
        "unknown_action",
    );
    state.ok(&["autonomy", "set", "dev-1", "terminal", "require_approval"]);
    let pending = api.ok(
        "post",
        "/api/actions",
        &[],
        Some(json!({"agent": "dev-1", "action": {"type": "terminal", "command": "true"}})),
    );
    let m = api.err(
        "post",
        "/api/actions/{id}/cancel",
        &[pending["id"].as_str().unwrap()],
        None,
        409,
        "not_executing",
    );
    assert!(m.contains("deny it instead"), "{m}");
    let page = anon
        .raw("GET", "/api/pages/approvals", &page_headers, None)
        .text();
    assert!(page.contains("No command is running."), "{page}");
    served.stop();
}

/// `berth serve` drives a `command` agent: a prompt sent through the API
/// to its idle session starts the program at once, and the turn's end is
/// in the log, without anyone running `berth agent turn`.
#[test]
fn serve_delivers_a_prompt_to_a_command_agent_at_once() {
    let state = State::with_project();
    state.activate_command("dev-1", r#"sh -c 'cat "$1"' sh {prompt_file}"#);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    let t = state.json(&[
        "task",
        "create",
        "--project",
        "demo",
        "--title",
        "docs",
        "--json",
    ]);
    let task = t["id"].as_str().unwrap();
    state.ok(&["sessions", "dev-1", "--open", task]);
    let served = Served::start(&state, &[]);
    let api = Api::new(served.client(&state));
    let sent = api.ok(
        "post",
        "/api/agents/{name}/prompts",
        &["dev-1"],
        Some(json!({"text": "hello over HTTP"})),
    );
    assert_eq!(sent["deliverable"], true, "{sent}");
    let ended = wait_for("the program's turn", Duration::from_secs(30), || {
        let (_, events) = api.call("get", "/api/events", &[], "?type=session.turn_ended", None);
        events.as_array().and_then(|e| e.first().cloned())
    });
    assert_eq!(ended["payload"]["exit_code"], 0, "{ended}");
    assert_eq!(
        ended["payload"]["stdout_tail"], "hello over HTTP",
        "{ended}"
    );
    assert_eq!(
        api.ok("get", "/api/agents/{name}/queue", &["dev-1"], None),
        json!([])
    );
    let sessions = api.ok("get", "/api/agents/{name}/sessions", &["dev-1"], None);
    assert_eq!(sessions[0]["status"], "idle", "{sessions}");
    served.stop();
}

/// `berth serve` applies the store's retention on its own (at start, then
/// every hour): the delivered old events go to a file under
/// `<state>/archive/` and out of the store, with nothing else asked.
#[test]
fn the_server_applies_the_events_retention_on_its_own() {
    let state = State::with_project();
    state.ok(&["agent", "activate", "dev-1", "--project", "demo"]);
    state.ok(&["autonomy", "set", "dev-1", "terminal", "auto_approve"]);
    state.ok(&["up", "dev-1", "--project", "demo", "--mode", "runner"]);
    state.ok(&["exec", "dev-1", "--", "true"]);
    state.ok(&["outbox", "drain"]);
    let events = |state: &State| -> Vec<Value> {
        serde_json::from_str(&state.ok(&["events", "--json"])).unwrap()
    };
    let before = events(&state);
    assert!(before.len() > 2, "{before:?}");
    // Without a retention the server archives nothing.
    let served = start(&state, Transport::Socket, &[]);
    let archive = state.state().join("archive");
    served.stop();
    assert!(!archive.exists(), "archived without a retention");

    std::fs::write(
        state.state().join("store.toml"),
        "[store]\nretain_events_days = 0\n",
    )
    .unwrap();
    let served = start(&state, Transport::Socket, &[]);
    let file = wait_for("the archive", Duration::from_secs(30), || {
        std::fs::read_dir(&archive)
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
    });
    served.stop();
    let archived: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Every event but the newest, as `berth events --json` printed them.
    assert_eq!(archived, before[..before.len() - 1]);
    let left = events(&state);
    assert!(
        left.iter()
            .all(|e| !archived.iter().any(|a| a["id"] == e["id"])),
        "archived events are still in the store: {left:?}"
    );
}
