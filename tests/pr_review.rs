//! A PR's review feedback as a person gives it (`berth pr comment`,
//! `resolve`, `review`, `request-review`, `threads`): comments and threads,
//! approvals recorded on the PR without resolving the task's gate, review
//! requests, and the PR view's readiness flipping with each. Against a real
//! store and git, with a noop agent's real PR. (An agent's side, through
//! MCP, is in tests/mcp.rs.)

use std::process::Output;

use serde_json::Value;

use crate::cli::{Cli, JsonDoc};
use crate::pr_checks::pr_open;

/// `berth ARGS --json` as user `who`: its JSON, checked against
/// docs/cli-json.md under `command`.
fn json_as(cli: &Cli, doc: &JsonDoc, who: &str, command: &str, args: &[&str]) -> Value {
    let mut full = args.to_vec();
    full.push("--json");
    let out: Output = cli.command(&full).env("USER", who).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        out.status.success(),
        "berth {full:?}: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    doc.check(command, &stdout);
    serde_json::from_str(&stdout).unwrap()
}

/// The PR view's review side: (unresolved, approvals, required, requested, ready).
fn readiness(cli: &Cli) -> (u64, u64, u64, bool, bool) {
    let f = cli.json(&["pr", "checks", "1", "--json"]);
    (
        f["unresolved_threads"].as_u64().unwrap(),
        f["approvals"].as_u64().unwrap(),
        f["approvals_required"].as_u64().unwrap(),
        f["review_requested"].as_bool().unwrap(),
        f["ready"].as_bool().unwrap(),
    )
}

fn count(cli: &Cli, kind: &str) -> usize {
    cli.json(&["events", "--type", kind, "--json"])
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn comments_threads_approvals_and_requests_drive_readiness() {
    let cli = Cli::new().with_project();
    let task = pr_open(&cli);
    let doc = JsonDoc::load();
    // No checks, no threads, no approvals required: ready.
    assert_eq!(readiness(&cli), (0, 0, 0, false, true));
    cli.edit_config(|t| format!("{t}\n[review]\nlogin = \"carol\"\nrequired_approvals = 1\n"));
    assert_eq!(readiness(&cli), (0, 0, 1, false, false));

    // A person comments on a line: a thread, on the branch's head.
    let c = json_as(
        &cli,
        &doc,
        "ada",
        "pr comment",
        &[
            "pr",
            "comment",
            "1",
            "rename this",
            "--path",
            "a.txt",
            "--line",
            "1",
        ],
    );
    let thread = c["thread"].as_str().unwrap().to_string();
    assert_eq!(
        c["id"], c["thread"],
        "a top-level comment starts its thread"
    );
    assert_eq!(
        (&c["author_kind"], &c["author"], &c["path"], &c["line"]),
        (
            &Value::from("user"),
            &Value::from("ada"),
            &Value::from("a.txt"),
            &Value::from(1)
        )
    );
    let head = cli.json(&["pr", "checks", "1", "--json"])["head"].clone();
    assert_eq!(c["commit"], head);
    assert_eq!(readiness(&cli), (1, 0, 1, false, false));

    // A reply (by a prefix of the thread) joins it; a PR-level comment
    // starts a second thread.
    let r = json_as(
        &cli,
        &doc,
        "bob",
        "pr comment",
        &["pr", "comment", "1", "why?", "--reply-to", &thread[..8]],
    );
    assert_eq!(r["thread"], thread.as_str());
    assert_ne!(r["id"], r["thread"]);
    let second = cli.json(&["pr", "comment", "#1", "overall fine", "--json"]);
    assert_eq!(readiness(&cli), (2, 0, 1, false, false));

    let t = json_as(&cli, &doc, "ada", "pr threads", &["pr", "threads", "1"]);
    let threads = t["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 2, "{t}");
    let bodies: Vec<&str> = threads[0]["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies, ["rename this", "why?"]);
    assert_eq!(threads[0]["resolved"], false);

    // An approval counts toward readiness, and is recorded on the PR only:
    // the task stays in review, its agent holds it, the PR stays open.
    let v = json_as(
        &cli,
        &doc,
        "ada",
        "pr review",
        &["pr", "review", "1", "--approve", "-m", "lgtm"],
    );
    assert_eq!(
        (
            &v["state"],
            &v["actor"]["kind"],
            &v["actor"]["id"],
            &v["body"]
        ),
        (
            &Value::from("approve"),
            &Value::from("user"),
            &Value::from("ada"),
            &Value::from("lgtm")
        )
    );
    assert_eq!(readiness(&cli), (2, 1, 1, false, false));
    let task_now = cli.json(&["task", "show", &task, "--json"])["task"].clone();
    assert_eq!(task_now["status"], "in_review", "{task_now}");
    assert_eq!(task_now["agent"], "noop-1", "{task_now}");
    assert_eq!(cli.json(&["pr", "show", "1", "--json"])["status"], "open");
    assert_eq!(count(&cli, "task.done"), 0);

    // Resolving both threads makes it ready; resolving again says by whom.
    let v = json_as(
        &cli,
        &doc,
        "ada",
        "pr resolve",
        &["pr", "resolve", "1", &thread],
    );
    assert_eq!(
        (&v["resolved"], &v["resolved_by"]["id"]),
        (&Value::from(true), &Value::from("ada"))
    );
    let (_, err) = cli.err(&["pr", "resolve", "1", &thread]);
    assert!(err.contains("already resolved (by user:ada)"), "{err}");
    assert_eq!(readiness(&cli), (1, 1, 1, false, false));
    cli.ok(&["pr", "resolve", "1", second["thread"].as_str().unwrap()]);
    assert_eq!(readiness(&cli), (0, 1, 1, false, true));

    // A person's latest review is the one that counts.
    cli.ok(&["pr", "review", "1", "--request-changes", "-m", "wait"]);
    assert_eq!(readiness(&cli), (0, 0, 1, false, false));

    // A review request of the configured reviewer shows; another's does not;
    // the reviewer's own review clears it (and approves).
    let v = json_as(
        &cli,
        &doc,
        "ada",
        "pr request-review",
        &["pr", "request-review", "1", "--reviewer", "dave"],
    );
    assert_eq!(
        (&v["reviewer"], &v["cleared_at"]),
        (&Value::from("dave"), &Value::Null)
    );
    assert!(!readiness(&cli).3, "dave is not [review] login");
    cli.ok(&["pr", "request-review", "1", "--reviewer", "carol"]);
    let again = cli.json(&["pr", "request-review", "1", "--reviewer", "carol", "--json"]);
    assert_eq!(readiness(&cli), (0, 0, 1, true, false));
    json_as(
        &cli,
        &doc,
        "carol",
        "pr review",
        &["pr", "review", "1", "--approve"],
    );
    assert_eq!(readiness(&cli), (0, 1, 1, false, true));
    let t = cli.json(&["pr", "threads", "1", "--json"]);
    let carol = t["review_requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["reviewer"] == "carol")
        .unwrap();
    assert_eq!(carol["id"], again["id"], "asking twice kept one request");
    assert!(carol["cleared_at"].is_i64(), "{t}");
    assert_eq!(t["reviews"].as_array().unwrap().len(), 3);

    // The login can change: the flag follows it.
    cli.edit_config(|t| t.replace("login = \"carol\"", "login = \"dave\""));
    assert_eq!(readiness(&cli), (0, 1, 1, true, true));

    // Every step is an event with its actor.
    assert_eq!(count(&cli, "pr.comment_added"), 3);
    assert_eq!(count(&cli, "pr.thread_resolved"), 2);
    assert_eq!(count(&cli, "pr.review_submitted"), 3);
    assert_eq!(count(&cli, "pr.review_requested"), 2);
    let ev = cli.json(&["events", "--type", "pr.review_submitted", "--json"]);
    let last = ev.as_array().unwrap().last().unwrap();
    assert_eq!(
        (&last["actor"]["id"], &last["payload"]["cleared_request"]),
        (&Value::from("carol"), &Value::from(true)),
        "{last}"
    );
    // Still in review: only merging or closing the PR moves the task.
    assert_eq!(
        cli.json(&["task", "show", &task, "--json"])["task"]["status"],
        "in_review"
    );
}

#[test]
fn bad_input_is_refused_with_what_to_do() {
    let cli = Cli::new().with_project();
    pr_open(&cli);
    let refused = |args: &[&str], says: &str| {
        let (_, err) = cli.err(args);
        assert!(err.contains(says), "berth {args:?}: {err}");
    };
    refused(&["pr", "comment", "9", "hi"], "unknown PR `9`");
    refused(&["pr", "threads", "9"], "berth pr list");
    refused(&["pr", "comment", "1", "  "], "the comment is empty");
    refused(&["pr", "comment", "1", "x", "--line", "3"], "add --path");
    refused(
        &["pr", "comment", "1", "x", "--path", "../etc/passwd"],
        "invalid path `../etc/passwd`",
    );
    refused(
        &[
            "pr",
            "comment",
            "1",
            "x",
            "--path",
            "/etc/passwd",
            "--line",
            "1",
        ],
        "relative to the repository's root",
    );
    refused(&["pr", "comment", "1", "x", "--line", "0"], "0");
    refused(
        &["pr", "comment", "1", "x", "--reply-to", "abcd1234"],
        "PR #1 has no thread `abcd1234`: list them with `berth pr threads 1`",
    );
    refused(&["pr", "resolve", "1", "zz"], "has no thread `zz`");
    refused(&["pr", "review", "1"], "--approve");
    refused(
        &["pr", "review", "1", "--approve", "--request-changes"],
        "cannot be used with",
    );
    refused(
        &["pr", "request-review", "1", "--reviewer", "a b"],
        "is not a login",
    );
    let c = cli.json(&["pr", "comment", "1", "fine", "--json"]);
    refused(
        &[
            "pr",
            "comment",
            "1",
            "x",
            "--reply-to",
            c["thread"].as_str().unwrap(),
            "--path",
            "a.txt",
        ],
        "drop --path and --line",
    );
    // Nothing refused was recorded.
    assert_eq!(
        cli.json(&["pr", "threads", "1", "--json"])["threads"]
            .as_array()
            .unwrap()
            .len(),
        1
    );

    // A bad [review] table names its key and line.
    let good = std::fs::read_to_string(cli.config()).unwrap();
    cli.edit_config(|t| format!("{t}\n[review]\nlogin = \"\"\n"));
    refused(
        &["pr", "checks", "1"],
        "key `review.login`: must not be empty",
    );
    std::fs::write(cli.config(), &good).unwrap();
    cli.edit_config(|t| format!("{t}\n[review]\nrequired_approvals = 1000\n"));
    refused(
        &["pr", "checks", "1"],
        "key `review.required_approvals`: must be at most 100",
    );
    std::fs::write(cli.config(), &good).unwrap();
    cli.edit_config(|t| format!("{t}\n[review]\napprovals = 1\n"));
    refused(&["pr", "checks", "1"], "approvals");
    std::fs::write(cli.config(), &good).unwrap();

    // A closed PR takes no review and no request; its threads stay readable.
    cli.ok(&["pr", "close", "1"]);
    refused(
        &["pr", "review", "1", "--approve"],
        "PR #1 is closed: only an open PR can be reviewed",
    );
    refused(
        &["pr", "request-review", "1", "--reviewer", "carol"],
        "only an open PR can be sent for review",
    );
    cli.ok(&["pr", "threads", "1"]);
}
