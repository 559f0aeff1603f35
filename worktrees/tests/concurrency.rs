//! Eight agents provisioning, committing and pushing at once, each through its
//! own `Worktrees` handle (as separate engine tasks would).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier};

use berth_worktrees::{Oid, Worktrees};
use common::*;

const AGENTS: usize = 8;
const ROUNDS: usize = 3;

#[test]
fn eight_agents_work_concurrently_without_interference() {
    let f = Fixture::new();
    let state = f.state().to_path_buf();
    let barrier = Arc::new(Barrier::new(AGENTS));
    let threads: Vec<_> = (0..AGENTS)
        .map(|i| {
            let (state, barrier, project) = (state.clone(), barrier.clone(), f.project.clone());
            std::thread::spawn(move || {
                let wt = Worktrees::open(&state).unwrap();
                let a = agent(&format!("dev-{i}"));
                barrier.wait();
                let info = wt.provision(&project, &a, &task("t"), None).unwrap();
                // Everyone asks twice, racing the others.
                assert!(
                    !wt.provision(&project, &a, &task("t"), None)
                        .unwrap()
                        .created
                );
                let mut commits = Vec::new();
                for round in 0..ROUNDS {
                    std::fs::write(
                        info.path.join(format!("dev-{i}-{round}.txt")),
                        format!("{i}/{round}\n"),
                    )
                    .unwrap();
                    let c = wt
                        .commit(
                            &project,
                            &a,
                            &commit_request(
                                &format!("dev-{i} round {round}"),
                                &format!("{i}-{round}"),
                            ),
                        )
                        .unwrap();
                    let pushed = wt.push(&project, &a, &info.branch).unwrap();
                    assert_eq!((pushed.oid, pushed.updated), (c.oid, true));
                    commits.push(c.oid);
                }
                (a, info, commits)
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();

    let forge = f.forge();
    git(&forge, &["fsck", "--no-progress", "--no-dangling"]);
    let forge_refs = f.forge_refs();
    let main = &forge_refs["refs/heads/main"];
    let mut want: BTreeMap<String, String> = BTreeMap::new();
    want.insert("refs/heads/main".to_owned(), main.clone());
    for (i, (a, info, commits)) in results.iter().enumerate() {
        let tip: &Oid = commits.last().unwrap();
        want.insert(format!("refs/heads/{}", info.branch), tip.to_string());
        // Each branch holds exactly this agent's commits, by this agent, with
        // exactly its files.
        let log = git(
            &forge,
            &[
                "log",
                "--format=%an|%ae|%(trailers:key=Berth-Action,valueonly)",
                &format!("{main}..{tip}"),
            ],
        );
        let want_log: String = (0..ROUNDS)
            .rev()
            .map(|r| format!("{a}[bot]|{a}@berth.local|{i}-{r}\n\n"))
            .collect();
        assert_eq!(log, want_log, "{a}");
        let mut want_files: Vec<String> =
            vec![".gitignore".into(), "README.md".into(), "src/lib.rs".into()];
        want_files.extend((0..ROUNDS).map(|r| format!("dev-{i}-{r}.txt")));
        want_files.sort();
        let files = git(&forge, &["ls-tree", "-r", "--name-only", &tip.to_string()]);
        assert_eq!(files.lines().collect::<Vec<_>>(), want_files, "{a}");
        // Its worktree is clean and on its branch.
        assert_eq!(git(&info.path, &["status", "--porcelain"]), "", "{a}");
        let repo_head = git(&info.agent_repo, &["rev-parse", &info.branch]);
        assert_eq!(repo_head.trim(), tip.to_string(), "{a}");
    }
    assert_eq!(forge_refs, want);
}

const PROCESSES: usize = 4;

/// Writers in different processes: each child process commits, pushes and
/// merges its agent's branch into `main`; the per-repository file locks keep
/// every forge update intact.
#[test]
fn processes_serialise_their_writes() {
    let f = Fixture::new();
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..PROCESSES)
        .map(|i| {
            std::process::Command::new(&exe)
                .args([
                    test_path(module_path!(), "child_process_writer").as_str(),
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("BERTH_TEST_STATE", f.state())
                .env("BERTH_TEST_AGENT", format!("proc-{i}"))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // All children run at once; only then are they waited for.
    let children: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    for (i, out) in children.iter().enumerate() {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "child {i}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            stdout.contains("1 passed"),
            "child {i} did not run its test: {stdout}"
        );
    }
    let forge = f.forge();
    git(&forge, &["fsck", "--no-progress", "--no-dangling"]);
    let files = git(&forge, &["ls-tree", "-r", "--name-only", "main"]);
    for i in 0..PROCESSES {
        for r in 0..ROUNDS {
            assert!(
                files.contains(&format!("proc-{i}-{r}.txt")),
                "main lacks proc-{i}-{r}.txt:\n{files}"
            );
        }
    }
}

#[test]
#[ignore = "run as a child process by processes_serialise_their_writes"]
fn child_process_writer() {
    let state = std::env::var("BERTH_TEST_STATE").expect("BERTH_TEST_STATE");
    let name = std::env::var("BERTH_TEST_AGENT").expect("BERTH_TEST_AGENT");
    let wt = Worktrees::open(state).unwrap();
    let (p, a) = (project("web"), agent(&name));
    let info = wt.provision(&p, &a, &task("t"), None).unwrap();
    let merger = berth_worktrees::Identity::new("Merge Bot", "merge@berth.local").unwrap();
    for r in 0..ROUNDS {
        std::fs::write(info.path.join(format!("{name}-{r}.txt")), "x\n").unwrap();
        wt.commit(&p, &a, &commit_request("work", &format!("{name}-{r}")))
            .unwrap();
        wt.push(&p, &a, &info.branch).unwrap();
        wt.merge(
            &p,
            &berth_worktrees::MergeRequest {
                source: info.branch.clone(),
                target: "main".to_owned(),
                identity: merger.clone(),
                message: None,
            },
        )
        .unwrap();
    }
}
