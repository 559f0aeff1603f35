//! Reconcile after a berth process dies mid-exec: a child process (this test
//! binary, re-run in a child mode) brings a berth up, starts a long exec and
//! is killed with SIGKILL; reconcile must adopt the live berth and kill the
//! orphaned exec, and remove the containers of berths that are gone.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::time::Duration;

use berth_sandbox::docker::{ContainerReconcileAction, ContainerSpec, DockerBackend, DockerBerth};
use berth_sandbox::{ExecRequest, OutputChunk, Sandbox};
use common::{Layout, text};

const CHILD_ENV: &str = "BERTH_TEST_RECONCILE_CHILD";

/// The child: bring the berth up (adopting the parent's container), start an
/// exec that runs for minutes, say so, and hang until killed. Ignored: it
/// tests nothing on its own, the test below runs it by name.
#[tokio::test]
#[ignore = "run by the test below in a child process"]
async fn child_process_holding_an_exec() {
    let spec = std::env::var(CHILD_ENV)
        .expect("run by the test below, which sets the berth's spec in the environment");
    let parts: Vec<&str> = spec.split('\n').collect();
    let spec = ContainerSpec::new(parts[0], parts[1], parts[2], parts[3], parts[4]);
    let backend = DockerBackend::connect().await.unwrap();
    let berth = backend.up(spec).await.unwrap();
    let (tx, mut rx) = berth_sandbox::output_channel();
    let exec = tokio::spawn(async move {
        berth
            .exec(
                ExecRequest::shell("echo started; sleep 300 & sleep 301"),
                Some(tx),
            )
            .await
    });
    while let Some(chunk) = rx.recv().await {
        if let OutputChunk::Stdout(b) = chunk
            && text(&b).contains("started")
        {
            println!("CHILD-EXEC-STARTED");
            break;
        }
    }
    let _ = exec.await;
}

async fn running_execs(backend: &DockerBackend, berth: &DockerBerth) -> usize {
    let c = backend
        .docker()
        .inspect_container(berth.container_name(), None)
        .await
        .unwrap();
    let mut n = 0;
    for id in c.exec_ids.unwrap_or_default() {
        if backend.docker().inspect_exec(&id).await.unwrap().running == Some(true) {
            n += 1;
        }
    }
    n
}

async fn processes(berth: &DockerBerth) -> String {
    let out = berth
        .exec(
            ExecRequest::shell("ps -o args= | grep -c '^sleep 30[01]' || true"),
            None,
        )
        .await
        .unwrap();
    text(&out.stdout.bytes).trim().to_string()
}

#[tokio::test]
async fn reconcile_after_the_owner_is_killed_mid_exec() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("reconcile");
    let spec = layout.spec("a");
    let berth = backend.up(spec.clone()).await.unwrap();

    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            common::test_path(module_path!(), "child_process_holding_an_exec").as_str(),
            "--ignored",
            "--nocapture",
        ])
        .env(
            CHILD_ENV,
            [
                spec.project.as_str(),
                &spec.agent,
                &spec.worktree.to_string_lossy(),
                &spec.agent_repo.to_string_lossy(),
                &spec.forge_objects.to_string_lossy(),
            ]
            .join("\n"),
        )
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let started = tokio::task::spawn_blocking(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .any(|l| l.contains("CHILD-EXEC-STARTED"))
    });
    let started = tokio::time::timeout(Duration::from_secs(60), started)
        .await
        .expect("the child did not start its exec in 60 s")
        .unwrap();
    assert!(started, "the child ended before starting its exec");
    child.kill().unwrap(); // SIGKILL: no destructor, no cleanup
    child.wait().unwrap();

    // The orphan keeps running: Docker has no idea its owner is gone.
    assert_eq!(running_execs(&backend, &berth).await, 1);
    assert_eq!(processes(&berth).await, "2");

    // Another agent whose worktree is gone, and one whose container stopped.
    let gone = backend.up(layout.spec("gone")).await.unwrap();
    let stopped = backend.up(layout.spec("stopped")).await.unwrap();
    backend
        .docker()
        .stop_container(
            stopped.container_name(),
            Some(bollard::query_parameters::StopContainerOptions {
                t: Some(0),
                signal: None,
            }),
        )
        .await
        .unwrap();

    let live: BTreeSet<(String, String)> = [
        (layout.project.clone(), "a".to_string()),
        (layout.project.clone(), "stopped".to_string()),
    ]
    .into();
    let report = backend
        .reconcile_project(&layout.project, &live)
        .await
        .unwrap();
    let mut got: Vec<(String, ContainerReconcileAction)> = report
        .entries
        .iter()
        .map(|(c, a)| (c.agent.clone(), a.clone()))
        .collect();
    got.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        got,
        vec![
            (
                "a".to_string(),
                ContainerReconcileAction::Adopted { stale_execs: 1 }
            ),
            (
                "gone".to_string(),
                ContainerReconcileAction::Removed {
                    reason: "its worktree no longer exists".to_string()
                }
            ),
            (
                "stopped".to_string(),
                ContainerReconcileAction::Removed {
                    reason: "it is not running (exited)".to_string()
                }
            ),
        ]
    );
    assert_eq!(processes(&berth).await, "0");
    assert_eq!(running_execs(&backend, &berth).await, 0);
    drop((gone, stopped));

    // Reconciling again changes nothing; the adopted berth works.
    let again = backend
        .reconcile_project(&layout.project, &live)
        .await
        .unwrap();
    assert_eq!(again.removed().count(), 0);
    assert_eq!(
        again
            .entries
            .iter()
            .map(|(c, a)| (c.agent.as_str(), a.clone()))
            .collect::<Vec<_>>(),
        vec![("a", ContainerReconcileAction::Adopted { stale_execs: 0 })]
    );
    let out = berth
        .exec(ExecRequest::shell("echo ok"), None)
        .await
        .unwrap();
    assert_eq!(text(&out.stdout.bytes), "ok\n");

    // With no live worktree at all, nothing of the project is left.
    let report = backend
        .reconcile_project(&layout.project, &BTreeSet::new())
        .await
        .unwrap();
    assert_eq!(report.removed().count(), 1);
    assert_eq!(
        backend.list_berths(Some(&layout.project)).await.unwrap(),
        vec![]
    );
}

/// A worker taking an agent over removes the containers the dead worker
/// made for it (`berth.worker` label), on this engine whatever their state
/// directory, and leaves another worker's container of the same agent.
#[tokio::test]
async fn a_dead_workers_containers_of_an_agent_are_removed_by_label() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("worker-takeover");
    let mut dead = layout.spec("a1");
    let mut live = dead.clone();
    dead.instance = "i-dead".into();
    dead.worker = Some("w-dead".into());
    live.instance = "i-live".into();
    live.worker = Some("w-live".into());
    let dead = backend.up(dead).await.unwrap();
    let live = backend.up(live).await.unwrap();
    let removed = backend
        .remove_worker_containers(&layout.project, "a1", "w-dead")
        .await
        .unwrap();
    assert_eq!(removed, vec![dead.container_name().to_string()]);
    let left: Vec<String> = backend
        .list_berths(Some(&layout.project))
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(left, vec![live.container_name().to_string()]);
    // Again: nothing of the dead worker's is left.
    assert!(
        backend
            .remove_worker_containers(&layout.project, "a1", "w-dead")
            .await
            .unwrap()
            .is_empty()
    );
    // The live worker's own, removed the same way: the test leaves none.
    assert_eq!(
        backend
            .remove_worker_containers(&layout.project, "a1", "w-live")
            .await
            .unwrap(),
        vec![live.container_name().to_string()]
    );
}
