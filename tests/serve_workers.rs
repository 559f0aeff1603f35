//! Workers on several hosts (issue 23's acceptance, on one machine): three
//! `berth serve --worker` processes with state directories of their own,
//! one PostgreSQL store (started by the engine's test harness) and one
//! forge server (`git http-backend` on loopback; the kill test reaches it
//! over `https://` through a TLS front), N noop agents with one
//! task each, and a `kill -9` of the worker holding the most agents while
//! tasks are delivered. Every task is delivered exactly once: one pushed
//! commit on the server per task, one executed push and PR action, one PR,
//! and the dead worker's agents taken over by the others, each takeover
//! recorded with what did not survive. A module of the `serve` test binary
//! (`cargo test --test serve workers::`).
//!
//! A person's approval received by a worker that does not hold the agent
//! (its API, `berth approve` on another host) is recorded in the store and
//! runs on the worker that holds it — or, when that worker is killed before
//! running it, once on the worker that takes the agent over.
//!
//! Knobs: `BERTH_TEST_WORKER_AGENTS` (default 9) agents and tasks. The
//! ignored `fleet_throughput` is the fleet's benchmark (tasks per second
//! with 1, 2 and 3 workers against one SQLite process).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::fixture::{Fixture, git, git_out};
use super::postgres;
use super::server::{Served, State, signal, wait_for};
use super::smart_http::{SmartHttpServer, install_fence_hook};
use super::tls_front::TlsFront;

/// Agents (and tasks) in the run.
fn agents() -> usize {
    std::env::var("BERTH_TEST_WORKER_AGENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(9)
}

/// A fresh database on the harness's PostgreSQL: its URL.
fn database() -> String {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(postgres::server().database())
}

/// A host: a state directory of its own on the shared store.
fn host(store: &str) -> State {
    let mut f = Fixture::new();
    f.set_env("BERTH_STORE", store);
    f.ok(&["init"]);
    State(f)
}

fn events(state: &State, kind: &str) -> Vec<Value> {
    let v = state.json(&["events", "--type", kind, "--json"]);
    v.as_array().unwrap().clone()
}

/// A fleet's shared parts: the store, the forge server, and `hosts` state
/// directories of their own on them, project `demo` added on the first
/// (its files copied to the others: runner berths) with `agents` noop
/// agents activated.
struct Fleet {
    hosts: Vec<State>,
    forge: SmartHttpServer,
    /// The TLS front the hosts reach the forge through, when they do.
    _tls: Option<TlsFront>,
}

impl Fleet {
    fn new(hosts: usize, agents: &[String]) -> Fleet {
        Fleet::on(Some(database()), hosts, agents, false)
    }

    /// [`Fleet::new`] with the forge reached over `https://` (a TLS front
    /// with a CA of the test's own, which every host trusts through
    /// `SSL_CERT_FILE`).
    fn over_tls(hosts: usize, agents: &[String]) -> Fleet {
        Fleet::on(Some(database()), hosts, agents, true)
    }

    /// [`Fleet::new`] on `store` (`None`: one host on its own SQLite store,
    /// the single-process baseline).
    fn on(store: Option<String>, hosts: usize, agents: &[String], tls: bool) -> Fleet {
        let mut hosts: Vec<State> = match &store {
            Some(store) => (0..hosts).map(|_| host(store)).collect(),
            None => {
                let f = Fixture::new();
                f.ok(&["init"]);
                vec![State(f)]
            }
        };
        let srv = hosts[0].root().join("srv");
        std::fs::create_dir_all(&srv).unwrap();
        let src = hosts[0].source_repo();
        git(
            &srv,
            &["clone", "-q", "--bare", src.to_str().unwrap(), "app.git"],
        );
        git(
            &srv.join("app.git"),
            &["config", "http.receivepack", "true"],
        );
        // The forge server set up as the README says: berth's fence hook.
        install_fence_hook(&srv.join("app.git"));
        let forge = SmartHttpServer::start(&srv);
        let tls = tls.then(|| TlsFront::start(hosts[0].root(), forge.addr().port()));
        let url = match &tls {
            Some(front) => {
                for h in &mut hosts {
                    h.0.set_env("SSL_CERT_FILE", front.ca.to_str().unwrap());
                }
                front.url("app.git")
            }
            None => forge.url("app.git"),
        };
        hosts[0].ok(&["project", "add", "demo", "--forge-url", &url]);
        hosts[0].edit_config(|t| {
            t.replace("\nmode = \"auto\"\n", "\nmode = \"runner\"\n")
                .replacen("allow_unconfined = false", "allow_unconfined = true", 1)
        });
        let config = std::fs::read_to_string(hosts[0].config()).unwrap();
        for h in &hosts[1..] {
            std::fs::create_dir_all(h.config().parent().unwrap()).unwrap();
            std::fs::write(h.config(), &config).unwrap();
        }
        for a in agents {
            hosts[0].ok(&[
                "agent",
                "activate",
                a,
                "--project",
                "demo",
                "--impl",
                "noop",
            ]);
        }
        Fleet {
            hosts,
            forge,
            _tls: tls,
        }
    }

    /// `berth serve --worker w<i+1>` on host `i`, with 5 s leases (short
    /// for a quick takeover; long enough that a loaded CI machine renews
    /// them in time).
    fn worker(&self, i: usize, max_agents: usize) -> Served {
        let sock = format!("unix:{}", self.hosts[i].root().join("w.sock").display());
        let name = format!("w{}", i + 1);
        let cap = max_agents.to_string();
        Served::start(
            &self.hosts[i],
            &[
                "--listen",
                &sock,
                "--worker",
                &name,
                "--agent-lease",
                "5",
                "--max-agents",
                &cap,
            ],
        )
    }

    /// The highest fencing token the server's fence hook recorded for
    /// `agent` (`scripts/berth-fence-hook.sh`).
    fn fence_token(&self, agent: &str) -> i64 {
        let path = self
            .forge
            .repo("app.git")
            .join("berth-fence")
            .join(format!("{agent}.token"));
        std::fs::read_to_string(&path)
            .unwrap_or_default()
            .trim()
            .parse()
            .unwrap_or(0)
    }

    /// How many commits the server's `branch` has over `main`.
    fn commits_ahead(&self, branch: &str) -> String {
        git_out(
            &self.forge.repo("app.git"),
            &["rev-list", "--count", &format!("main..refs/heads/{branch}")],
        )
        .trim()
        .to_string()
    }
}

/// [`wait_for`], with the workers' logs in the failure.
fn wait_seeing<T>(
    what: &str,
    timeout: Duration,
    workers: &[&Served],
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        if Instant::now() > deadline {
            // The end of each log: what each worker did last.
            let logs: Vec<String> = workers
                .iter()
                .map(|w| {
                    let log = w.log();
                    let lines: Vec<&str> = log.lines().collect();
                    lines[lines.len().saturating_sub(60)..].join("\n")
                })
                .collect();
            panic!(
                "timed out after {timeout:?} waiting for {what}; the workers' logs:\n{}",
                logs.join("\n----\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn tasks_in_review(h: &State) -> usize {
    let v = h.json(&["task", "ls", "--json"]);
    v.as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "in_review")
        .count()
}

/// Executed actions of `kind` for `task`.
fn executed(actions: &Value, task: &str, kind: &str) -> usize {
    actions
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["task"] == task && a["action"]["type"] == kind && a["status"] == "executed")
        .count()
}

#[test]
fn three_workers_deliver_every_task_once_through_a_kill() {
    let started = Instant::now();
    let n = agents();
    let names: Vec<String> = (1..=n).map(|i| format!("noop-{i}")).collect();
    // Over https://: the fencing token's push option and the takeovers'
    // raises go through berth's own TLS transport.
    let fleet = Fleet::over_tls(3, &names);
    let hosts = &fleet.hosts;

    // Each worker drives at most half the agents (rounded up), so the two
    // that survive a kill have room for all of them.
    let cap = n.div_ceil(2);
    let mut workers: Vec<Option<Served>> = (0..3).map(|i| Some(fleet.worker(i, cap))).collect();
    let tasks: BTreeSet<String> = (1..=n)
        .map(|i| hosts[1].new_task(&format!("task {i}")))
        .collect();

    // Mid-run: the first task is in review.
    wait_for("the first delivery", Duration::from_secs(90), || {
        (tasks_in_review(&hosts[2]) >= 1).then_some(())
    });
    // Who holds what now: the last lease taken of each agent.
    let mut holder: BTreeMap<String, String> = BTreeMap::new();
    for e in events(&hosts[2], "agent.lease_taken") {
        holder.insert(
            e["agent"].as_str().unwrap().to_string(),
            e["payload"]["owner"].as_str().unwrap().to_string(),
        );
    }
    let mut per_worker: BTreeMap<&str, usize> = BTreeMap::new();
    for w in holder.values() {
        *per_worker.entry(w.as_str()).or_default() += 1;
    }
    let victim = per_worker
        .iter()
        .max_by_key(|(_, c)| **c)
        .map(|(w, _)| w.to_string())
        .unwrap();
    let victim_index: usize = victim[1..].parse::<usize>().unwrap() - 1;
    let delivered_at_kill = tasks_in_review(&hosts[2]);
    workers[victim_index].take().unwrap().crash();
    let orphaned: BTreeSet<String> = holder
        .iter()
        .filter(|(_, w)| **w == victim)
        .map(|(a, _)| a.clone())
        .collect();
    let survivor = &hosts[(victim_index + 1) % 3];

    let alive: Vec<&Served> = workers.iter().flatten().collect();
    wait_seeing(
        "every task in review",
        Duration::from_secs(180),
        &alive,
        || (tasks_in_review(survivor) == n).then_some(()),
    );
    // Every agent of the dead worker is taken over by a survivor, and the
    // takeover says what did not survive.
    let taken_over = wait_for("the takeovers", Duration::from_secs(30), || {
        let t = events(survivor, "agent.taken_over");
        let agents: BTreeSet<String> = t
            .iter()
            .filter(|e| e["payload"]["previous_owner"] == victim.as_str())
            .map(|e| e["agent"].as_str().unwrap().to_string())
            .collect();
        orphaned.is_subset(&agents).then_some(t)
    });
    let leases = events(survivor, "agent.lease_taken");
    for e in &taken_over {
        assert!(!e["payload"]["lost"].as_array().unwrap().is_empty(), "{e}");
        let last = leases
            .iter()
            .rev()
            .find(|l| l["agent"] == e["agent"])
            .unwrap();
        assert_ne!(last["payload"]["owner"], victim.as_str(), "{last}");
        // The takeover raised the agent's token on the forge server: a push
        // of the dead worker's would be refused there.
        let agent = e["agent"].as_str().unwrap();
        let token = e["payload"]["token"].as_i64().unwrap();
        assert!(fleet.fence_token(agent) >= token, "{agent}: {e}");
    }

    // Exactly once: per task one executed push and PR action, one commit
    // action per delivery round, one PR, one commit on the server's branch.
    let restarts = events(survivor, "task.delivery_restarted");
    let actions = survivor.json(&["actions", "--json"]);
    let prs = survivor.json(&["pr", "list", "--json"]);
    let prs = prs.as_array().unwrap();
    assert_eq!(prs.len(), n, "one PR per task: {prs:?}");
    for task in &tasks {
        let rounds = restarts
            .iter()
            .filter(|e| e["task"] == task.as_str())
            .count();
        assert_eq!(executed(&actions, task, "git_push"), 1, "task {task}");
        assert_eq!(executed(&actions, task, "pr_open"), 1, "task {task}");
        assert_eq!(
            executed(&actions, task, "git_commit"),
            1 + rounds,
            "task {task}"
        );
        let pr: Vec<&Value> = prs.iter().filter(|p| p["task"] == task.as_str()).collect();
        assert_eq!(pr.len(), 1, "task {task}: {prs:?}");
        let branch = pr[0]["branch"].as_str().unwrap();
        assert_eq!(fleet.commits_ahead(branch), "1", "task {task}: {branch}");
    }
    // No event twice: each action executed once in the log.
    let mut seen = BTreeSet::new();
    for e in events(survivor, "action.executed") {
        let id = e["action"].as_str().unwrap_or_default().to_string();
        assert!(
            seen.insert(id.clone()),
            "action {id} executed twice in the log"
        );
    }
    for w in workers.iter_mut().filter_map(Option::take) {
        w.stop();
    }
    eprintln!(
        "workers: {n} agents, {delivered_at_kill} delivered before the kill of {victim} \
         (held {}), {} takeovers, {} restarted deliveries, {:.1} s",
        orphaned.len(),
        taken_over.len(),
        restarts.len(),
        started.elapsed().as_secs_f64()
    );
}

/// A commit made on a worker that dies before pushing it does not survive:
/// the worker taking the agent over names it, cancels the push still waiting
/// for a person, and delivers the task again in a new round; the person
/// approves the new push with `berth approve` on the dead worker's host (a
/// process that does not hold the agent), the new holder runs it, and the
/// server's branch holds one commit.
#[test]
fn a_commit_lost_with_its_worker_is_named_and_the_task_delivered_again() {
    let fleet = Fleet::new(2, &["noop-1".to_string()]);
    let hosts = &fleet.hosts;
    hosts[0].ok(&["autonomy", "set", "noop-1", "git_push", "require_approval"]);
    let w1 = fleet.worker(0, 10);
    let task = hosts[0].new_task("lost and found");
    let pending_push = |h: &State| -> Option<Value> {
        let v = h.json(&["actions", "--pending", "--json"]);
        v.as_array()
            .unwrap()
            .iter()
            .find(|a| a["action"]["type"] == "git_push")
            .cloned()
    };
    let old_push = wait_for("w1's push waiting", Duration::from_secs(60), || {
        pending_push(&hosts[0])
    });
    w1.crash();
    let w2 = fleet.worker(1, 10);
    let new_push = wait_seeing(
        "w2's push of the new round",
        Duration::from_secs(60),
        &[&w2],
        || pending_push(&hosts[1]).filter(|p| p["id"] != old_push["id"]),
    );
    let taken = events(&hosts[1], "agent.taken_over");
    assert_eq!(taken.len(), 1, "{taken:?}");
    let t = &taken[0]["payload"];
    assert_eq!(t["previous_owner"], "w1");
    // Raised on the forge server before the takeover read it.
    assert_eq!(fleet.fence_token("noop-1"), t["token"].as_i64().unwrap());
    assert_eq!(t["round"], 1);
    assert!(
        t["lost"][0].as_str().unwrap().contains("never pushed"),
        "{t}"
    );
    let all = hosts[1].json(&["actions", "--json"]);
    let old = all
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == old_push["id"])
        .unwrap();
    assert_eq!(old["status"], "cancelled", "{old}");

    let id = new_push["id"].as_str().unwrap();
    let said = hosts[0].ok(&["approve", id]);
    assert!(said.contains("runs on worker w2"), "{said}");
    wait_seeing(
        "the task in review",
        Duration::from_secs(60),
        &[&w2],
        || (tasks_in_review(&hosts[1]) == 1).then_some(()),
    );
    assert_eq!(ran_on(&hosts[1], id), vec!["w2".to_string()]);
    let actions = hosts[1].json(&["actions", "--json"]);
    assert_eq!(
        executed(&actions, &task, "git_commit"),
        2,
        "one lost, one kept"
    );
    assert_eq!(executed(&actions, &task, "git_push"), 1);
    assert_eq!(executed(&actions, &task, "pr_open"), 1);
    let prs = hosts[1].json(&["pr", "list", "--json"]);
    let branch = prs[0]["branch"].as_str().unwrap();
    assert_eq!(fleet.commits_ahead(branch), "1");
    w2.stop();
}

/// The workers named by the `proposed_action.approval_run` events of
/// action `id`: who ran a person's approval received elsewhere.
fn ran_on(h: &State, id: &str) -> Vec<String> {
    events(h, "proposed_action.approval_run")
        .iter()
        .filter(|e| e["action"] == id)
        .map(|e| {
            e["payload"]["worker"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

/// How many `action.executed` events action `id` has.
fn executions(h: &State, id: &str) -> usize {
    events(h, "action.executed")
        .iter()
        .filter(|e| e["action"] == id)
        .count()
}

/// The pending action of `kind`, if any (read through `h`'s store).
fn pending(h: &State, kind: &str) -> Option<Value> {
    let v = h.json(&["actions", "--pending", "--json"]);
    v.as_array()
        .unwrap()
        .iter()
        .find(|a| a["action"]["type"] == kind)
        .cloned()
}

/// The action `id` as the store holds it.
fn action(h: &State, id: &str) -> Value {
    let all = h.json(&["actions", "--json"]);
    all.as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("no action {id}: {all}"))
}

/// Who holds `agent` now: the owner of its last `agent.lease_taken`.
fn holder(h: &State, agent: &str) -> Option<String> {
    events(h, "agent.lease_taken")
        .iter()
        .rev()
        .find(|e| e["agent"] == agent)
        .and_then(|e| e["payload"]["owner"].as_str().map(str::to_string))
}

/// Two workers beside each other, w1 holding noop-1 with a task whose
/// first step of `asks` waits for a person.
struct Waiting {
    fleet: Fleet,
    w1: Served,
    w2: Served,
    task: String,
    /// The step waiting.
    action: Value,
}

/// noop-1's `asks` steps wait for a person; w1 takes the agent and a task
/// (`title`) up to the first of them, then w2 starts while w1 holds it and
/// serves the fleet's approvals.
fn waiting_on_w1(asks: &[&str], title: &str) -> Waiting {
    let fleet = Fleet::new(2, &["noop-1".to_string()]);
    let hosts = &fleet.hosts;
    for kind in asks {
        hosts[0].ok(&["autonomy", "set", "noop-1", kind, "require_approval"]);
    }
    let w1 = fleet.worker(0, 10);
    let task = hosts[0].new_task(title);
    let action = wait_for("w1's step waiting", Duration::from_secs(60), || {
        pending(&hosts[0], asks[0])
    });
    let w2 = fleet.worker(1, 10);
    assert_eq!(holder(&hosts[1], "noop-1").as_deref(), Some("w1"));
    Waiting {
        fleet,
        w1,
        w2,
        task,
        action,
    }
}

/// An approval given on the worker that does not hold the agent (its API)
/// and one given with `berth approve` on that worker's host both run on
/// the holder: the push and the PR are executed by w1's process, each once,
/// and the answers say where they run.
#[test]
fn an_approval_on_a_worker_not_holding_the_agent_runs_on_the_holder() {
    let Waiting {
        fleet,
        w1,
        w2,
        task,
        action: push,
    } = waiting_on_w1(&["git_push", "pr_open"], "approved elsewhere");
    let hosts = &fleet.hosts;

    let push_id = push["id"].as_str().unwrap();
    let api = super::Api::new(w2.client(&hosts[1]));
    let (status, answer) = api.call("post", "/api/actions/{id}/approve", &[push_id], "", None);
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["status"], "approved", "{answer}");
    assert_eq!(answer["runs_on"], "w1", "{answer}");
    assert_eq!(answer["received_by"], "w2", "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains("runs on worker w1"),
        "{answer}"
    );
    // A second approval of the same action is refused: it is decided.
    api.err(
        "post",
        "/api/actions/{id}/approve",
        &[push_id],
        None,
        409,
        "not_pending",
    );

    let pr = wait_seeing(
        "w1's PR waiting",
        Duration::from_secs(60),
        &[&w1, &w2],
        || pending(&hosts[1], "pr_open"),
    );
    let pushed = action(&hosts[1], push_id);
    assert_eq!(pushed["status"], "executed", "{pushed}");
    // Run by w1's process (`host:pid:start`), not by w2's.
    let executor = pushed["executor"].as_str().unwrap();
    assert_eq!(
        executor.split(':').nth(1),
        Some(w1.pid().to_string().as_str()),
        "{executor}"
    );
    assert_eq!(ran_on(&hosts[1], push_id), vec!["w1".to_string()]);
    let approved = events(&hosts[1], "proposed_action.approved");
    let approval = approved.iter().find(|e| e["action"] == push_id).unwrap();
    assert_eq!(approval["payload"]["routed_to"], "w1", "{approval}");
    assert_eq!(approval["actor"]["kind"], "user", "{approval}");

    // `berth approve` on w2's host, a process that holds nothing.
    let pr_id = pr["id"].as_str().unwrap();
    let said = hosts[1].json(&["approve", pr_id, "--json"]);
    assert_eq!(said["status"], "approved", "{said}");
    assert_eq!(said["runs_on"], "w1", "{said}");
    wait_seeing(
        "the task in review",
        Duration::from_secs(60),
        &[&w1, &w2],
        || (tasks_in_review(&hosts[1]) == 1).then_some(()),
    );
    assert_eq!(ran_on(&hosts[1], pr_id), vec!["w1".to_string()]);
    for id in [push_id, pr_id] {
        assert_eq!(executions(&hosts[1], id), 1, "action {id}");
    }
    let actions = hosts[1].json(&["actions", "--json"]);
    assert_eq!(executed(&actions, &task, "git_push"), 1);
    assert_eq!(executed(&actions, &task, "pr_open"), 1);
    let prs = hosts[1].json(&["pr", "list", "--json"]);
    assert_eq!(prs.as_array().unwrap().len(), 1, "{prs}");
    w2.stop();
    w1.stop();
}

/// The holder is stopped, the PR is approved on the other worker, and the
/// holder is killed before it could run it: the approval stays in the store
/// (`approved`), and the worker taking the agent over runs it once.
#[test]
fn an_approval_outlives_a_kill_of_the_holder_and_runs_once_on_the_next() {
    let Waiting {
        fleet,
        w1,
        w2,
        task,
        action: pr,
    } = waiting_on_w1(&["pr_open"], "outlives its worker");
    let hosts = &fleet.hosts;

    // Stopped, w1 cannot run anything between the approval and its death.
    signal(w1.pid(), "STOP");
    let id = pr["id"].as_str().unwrap();
    let api = super::Api::new(w2.client(&hosts[1]));
    let (status, answer) = api.call("post", "/api/actions/{id}/approve", &[id], "", None);
    assert_eq!(status, 202, "{answer}");
    assert_eq!(answer["status"], "approved", "{answer}");
    // w1's lease may have run out meanwhile (a loaded machine): then no
    // worker holds the agent and the answer says so.
    assert!(
        answer["runs_on"] == "w1" || answer["runs_on"].is_null(),
        "{answer}"
    );
    assert_eq!(action(&hosts[1], id)["status"], "approved");
    w1.crash();

    wait_seeing(
        "the task in review",
        Duration::from_secs(90),
        &[&w2],
        || (tasks_in_review(&hosts[1]) == 1).then_some(()),
    );
    let taken = events(&hosts[1], "agent.taken_over");
    assert_eq!(taken.len(), 1, "{taken:?}");
    let t = &taken[0]["payload"];
    assert_eq!(t["previous_owner"], "w1", "{t}");
    assert_eq!(t["approvals"], serde_json::json!([id]), "{t}");
    assert_eq!(ran_on(&hosts[1], id), vec!["w2".to_string()]);
    assert_eq!(executions(&hosts[1], id), 1);
    let actions = hosts[1].json(&["actions", "--json"]);
    assert_eq!(executed(&actions, &task, "pr_open"), 1);
    let prs = hosts[1].json(&["pr", "list", "--json"]);
    let prs = prs.as_array().unwrap();
    assert_eq!(prs.len(), 1, "{prs:?}");
    assert_eq!(fleet.commits_ahead(prs[0]["branch"].as_str().unwrap()), "1");
    w2.stop();
}

/// A benchmark, not a check (ignored; it asserts no time): tasks delivered
/// per second through the whole path — each noop agent's claim, commit,
/// push and PR through `berth serve` and the forge server — with 1, 2 and
/// 3 workers on PostgreSQL, against one `berth serve` on SQLite with the
/// same forge server and agents. `BERTH_BENCH_AGENTS` (default 12) agents
/// with one task each; one line per setup:
///
/// ```sh
/// cargo test -p berth --test serve workers::fleet_throughput -- --ignored --nocapture
/// ```
#[test]
#[ignore = "a benchmark: run it with --ignored --nocapture"]
fn fleet_throughput() {
    let n: usize = std::env::var("BERTH_BENCH_AGENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    let names: Vec<String> = (1..=n).map(|i| format!("noop-{i}")).collect();
    let mut baseline = None;
    for workers in [0usize, 1, 2, 3] {
        let fleet = if workers == 0 {
            Fleet::on(None, 1, &names, false)
        } else {
            Fleet::new(workers, &names)
        };
        let hosts = &fleet.hosts;
        let served: Vec<Served> = if workers == 0 {
            let sock = format!("unix:{}", hosts[0].root().join("s.sock").display());
            vec![Served::start(&hosts[0], &["--listen", &sock])]
        } else {
            (0..workers).map(|i| fleet.worker(i, n)).collect()
        };
        let started = Instant::now();
        for i in 1..=n {
            hosts[0].new_task(&format!("task {i}"));
        }
        let alive: Vec<&Served> = served.iter().collect();
        wait_seeing(
            "every task in review",
            Duration::from_secs(600),
            &alive,
            || (tasks_in_review(&hosts[0]) == n).then_some(()),
        );
        let secs = started.elapsed().as_secs_f64();
        let actions = hosts[0].json(&["actions", "--json"]);
        let executed = actions
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["status"] == "executed")
            .count();
        let per_sec = n as f64 / secs;
        let base = *baseline.get_or_insert(per_sec);
        let setup = if workers == 0 {
            "1 serve, SQLite".to_string()
        } else {
            format!("{workers} worker(s), PostgreSQL")
        };
        println!(
            "fleet_throughput: {setup}: {n} tasks in {secs:.1} s, {per_sec:.2} tasks/s ({:.2}x the SQLite process), {executed} actions executed, {:.1} actions/s",
            per_sec / base,
            executed as f64 / secs
        );
        drop(served);
    }
}
