//! The exec path of a Docker berth against the real engine: streams, stdin,
//! exit codes, the output cap, the deadline and the process group.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use berth_sandbox::docker::DockerBerth;
use berth_sandbox::{ExecRequest, ExitStatus, OutputChunk, Sandbox, SandboxError};
use common::{Layout, text};

async fn berth(test: &str) -> Option<(Layout, DockerBerth)> {
    let backend = common::engine().await?;
    common::default_image(&backend).await;
    let layout = Layout::new(test);
    let berth = backend.up(layout.spec("a")).await.unwrap();
    Some((layout, berth))
}

macro_rules! berth_or_skip {
    ($test:expr) => {
        match berth($test).await {
            Some(b) => b,
            None => return,
        }
    };
}

/// The processes in the container other than its init and keep-alive, and
/// the one listing them.
async fn strays(berth: &DockerBerth) -> Vec<String> {
    let out = berth
        .exec(ExecRequest::shell("ps -o pid=,args="), None)
        .await
        .unwrap();
    text(&out.stdout.bytes)
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.contains("docker-init")
                && !l.ends_with("sleep infinity")
                && !l.contains("ps -o pid=,args=")
                && !l.contains("berth-exec")
        })
        .map(str::to_string)
        .collect()
}

#[tokio::test]
async fn streams_are_separate_and_arrive_through_the_sink() {
    let (_layout, berth) = berth_or_skip!("streams");
    let (tx, mut rx) = berth_sandbox::output_channel();
    let out = berth
        .exec(
            ExecRequest::shell("echo out1; echo err1 >&2; sleep 0.2; echo out2; echo err2 >&2"),
            Some(tx),
        )
        .await
        .unwrap();
    assert_eq!(out.status, ExitStatus::Exited(0));
    assert_eq!(text(&out.stdout.bytes), "out1\nout2\n");
    assert_eq!(text(&out.stderr.bytes), "err1\nerr2\n");
    assert!(!out.timed_out && !out.oom_killed);
    let mut chunks = Vec::new();
    while let Ok(c) = rx.try_recv() {
        chunks.push(c);
    }
    let joined = |pick: fn(&OutputChunk) -> Option<&Vec<u8>>| {
        chunks
            .iter()
            .filter_map(pick)
            .flatten()
            .copied()
            .collect::<Vec<u8>>()
    };
    let sink_out = joined(|c| match c {
        OutputChunk::Stdout(b) => Some(b),
        OutputChunk::Stderr(_) => None,
    });
    let sink_err = joined(|c| match c {
        OutputChunk::Stderr(b) => Some(b),
        OutputChunk::Stdout(_) => None,
    });
    assert_eq!(text(&sink_out), "out1\nout2\n");
    assert_eq!(text(&sink_err), "err1\nerr2\n");
}

#[tokio::test]
async fn exit_statuses_follow_the_shell_convention() {
    let (_layout, berth) = berth_or_skip!("codes");
    let cases: Vec<(ExecRequest, ExitStatus)> = vec![
        (ExecRequest::shell("exit 0"), ExitStatus::Exited(0)),
        (ExecRequest::shell("exit 3"), ExitStatus::Exited(3)),
        (
            ExecRequest::shell("no-such-command-x"),
            ExitStatus::Exited(127),
        ),
        (
            ExecRequest::argv(["no-such-program-x"]),
            ExitStatus::Exited(127),
        ),
        (ExecRequest::argv(["/etc/passwd"]), ExitStatus::Exited(126)),
        (
            ExecRequest::shell("kill -TERM $$"),
            ExitStatus::Signaled(15),
        ),
        (ExecRequest::shell("kill -KILL $$"), ExitStatus::Signaled(9)),
        (
            ExecRequest::argv(["sh", "-c", "exit 42"]),
            ExitStatus::Exited(42),
        ),
    ];
    for (request, want) in cases {
        let program = request.program.clone();
        let out = berth.exec(request, None).await.unwrap();
        assert_eq!(out.status, want, "{program:?}: {}", text(&out.stderr.bytes));
    }
    let out = berth
        .exec(ExecRequest::argv(["no-such-program-x"]), None)
        .await
        .unwrap();
    assert!(
        text(&out.stderr.bytes).contains("no-such-program-x"),
        "{out:?}"
    );
}

#[tokio::test]
async fn argv_arguments_arrive_verbatim_with_env_and_cwd() {
    let (layout, berth) = berth_or_skip!("argv");
    let worktree = layout
        .root()
        .join("worktrees")
        .join(&layout.project)
        .join("a");
    std::fs::create_dir_all(worktree.join("sub")).unwrap();
    let mut r = ExecRequest::argv([
        "sh",
        "-c",
        "printf '[%s]' \"$@\"; pwd; echo $GREETING",
        "sh",
        "a b",
        "$HOME",
        "'q'",
        "",
    ]);
    r.cwd = "/work/sub".to_string();
    r.env = BTreeMap::from([("GREETING".to_string(), "hi there".to_string())]);
    let out = berth.exec(r, None).await.unwrap();
    assert_eq!(
        text(&out.stdout.bytes),
        "[a b][$HOME]['q'][]/work/sub\nhi there\n"
    );
}

#[tokio::test]
async fn stdin_is_delivered_and_closed() {
    let (_layout, berth) = berth_or_skip!("stdin");
    let mut r = ExecRequest::shell("wc -c; cat >/dev/null; echo done");
    // More than any pipe buffer, so writing and reading must overlap.
    r.stdin = Some(vec![b'x'; 3 << 20]);
    let out = berth.exec(r, None).await.unwrap();
    assert_eq!(out.status, ExitStatus::Exited(0));
    assert_eq!(
        text(&out.stdout.bytes)
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["3145728", "done"]
    );

    let mut r = ExecRequest::shell("tr a-z A-Z");
    r.stdin = Some(b"hello\n".to_vec());
    let out = berth.exec(r, None).await.unwrap();
    assert_eq!(text(&out.stdout.bytes), "HELLO\n");
}

#[tokio::test]
async fn output_beyond_the_cap_keeps_the_tail() {
    let (_layout, berth) = berth_or_skip!("cap");
    let mut r = ExecRequest::shell(
        "i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done; echo end >&2",
    );
    r.output_cap = 20;
    let out = berth.exec(r, None).await.unwrap();
    let total: u64 = (0..2000).map(|i| format!("line{i}\n").len() as u64).sum();
    assert_eq!(out.stdout.total, total);
    assert!(out.stdout.truncated);
    assert_eq!(text(&out.stdout.bytes), "7\nline1998\nline1999\n");
    assert!(!out.stderr.truncated);
    assert_eq!(text(&out.stderr.bytes), "end\n");
}

#[tokio::test]
async fn a_timeout_kills_the_whole_tree_and_keeps_earlier_output() {
    let (_layout, berth) = berth_or_skip!("timeout");
    let mut r = ExecRequest::shell(
        "echo before; (sleep 300; echo child > /work/child) & sh -c 'sleep 301' & sleep 302; echo never",
    );
    r.timeout = Duration::from_secs(1);
    let out = berth.exec(r, None).await.unwrap();
    assert!(out.timed_out);
    assert_eq!(out.status, ExitStatus::Signaled(9));
    assert_eq!(text(&out.stdout.bytes), "before\n");
    // The kill is bounded by the kill exec and the stream's drain, far below
    // the 300 s the tree would have run.
    assert!(out.duration < Duration::from_secs(15), "{:?}", out.duration);
    assert_eq!(strays(&berth).await, Vec::<String>::new());
}

#[tokio::test]
async fn background_leftovers_die_with_their_exec() {
    let (layout, berth) = berth_or_skip!("leftovers");
    let out = berth
        .exec(
            ExecRequest::shell(
                "(sleep 1; echo late > /work/late) & nohup sleep 200 >/dev/null 2>&1 & \
                 echo done > /work/done; echo done",
            ),
            None,
        )
        .await
        .unwrap();
    assert_eq!(out.status, ExitStatus::Exited(0));
    assert_eq!(text(&out.stdout.bytes), "done\n");
    // No process of the exec is left: `ps` in the container would list a
    // surviving `sleep 1` or `sleep 200`.
    assert_eq!(strays(&berth).await, Vec::<String>::new());
    // And none acts later. The exec's own file is where this looks (so a
    // wrong path cannot make the absence below pass); a surviving child
    // would write `late` one second in, and is given three.
    let worktree = layout.worktree("a");
    assert!(
        worktree.join("done").exists(),
        "{} is not the berth's /work",
        worktree.display()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert!(
        !worktree.join("late").exists(),
        "a background child outlived its exec"
    );
}

#[tokio::test]
async fn concurrent_execs_in_one_berth_stay_apart() {
    let (_layout, berth) = berth_or_skip!("concurrent");
    let berth = std::sync::Arc::new(berth);
    // One exec times out while others run: its kill must not reach them.
    let slow = {
        let berth = berth.clone();
        tokio::spawn(async move {
            let mut r = ExecRequest::shell("sleep 3; echo slow-done");
            r.timeout = Duration::from_secs(20);
            berth.exec(r, None).await.unwrap()
        })
    };
    let mut doomed = ExecRequest::shell("sleep 100");
    doomed.timeout = Duration::from_secs(1);
    let doomed = berth.exec(doomed, None).await.unwrap();
    assert!(doomed.timed_out);
    let slow = slow.await.unwrap();
    assert_eq!(slow.status, ExitStatus::Exited(0));
    assert_eq!(text(&slow.stdout.bytes), "slow-done\n");
}

#[tokio::test]
async fn bad_requests_are_refused_before_anything_runs() {
    let (_layout, berth) = berth_or_skip!("invalid");
    let mut outside = ExecRequest::shell("true");
    outside.cwd = "/tmp".to_string();
    let mut escape = ExecRequest::shell("true");
    escape.cwd = "/work/../etc".to_string();
    let mut bad_env = ExecRequest::shell("true");
    bad_env.env.insert("A=B".to_string(), "x".to_string());
    let empty = ExecRequest::argv(Vec::<String>::new());
    for r in [outside, escape, bad_env, empty] {
        let program = r.program.clone();
        let err = berth.exec(r, None).await.unwrap_err();
        assert!(
            matches!(err, SandboxError::InvalidRequest(_)),
            "{program:?}: {err}"
        );
    }
}

#[tokio::test]
async fn a_cancelled_exec_is_killed() {
    let (layout, berth) = berth_or_skip!("cancel");
    let berth = std::sync::Arc::new(berth);
    let (tx, mut rx) = berth_sandbox::output_channel();
    let running = {
        let berth = berth.clone();
        tokio::spawn(async move {
            berth
                .exec(
                    ExecRequest::shell("sleep 200 & echo $! > /work/bg.pid; echo up; sleep 201"),
                    Some(tx),
                )
                .await
        })
    };
    // Started: its first output arrived. Then the caller gives up.
    assert!(rx.recv().await.is_some());
    running.abort();
    let _ = running.await;
    let pid_file = layout
        .root()
        .join("worktrees")
        .join(&layout.project)
        .join("a/bg.pid");
    assert!(pid_file.exists());
    let mut left = Vec::new();
    for _ in 0..50 {
        left = strays(&berth).await;
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(left, Vec::<String>::new());
}

#[tokio::test]
async fn extreme_timeouts_are_accepted() {
    let (_layout, berth) = berth_or_skip!("extreme");
    for timeout in [Duration::MAX, Duration::ZERO] {
        let mut request = ExecRequest::shell("sleep 2");
        request.timeout = timeout;
        let outcome = tokio::time::timeout(Duration::from_secs(60), berth.exec(request, None))
            .await
            .expect("exec did not return")
            .unwrap();
        assert_eq!(outcome.timed_out, timeout.is_zero(), "{timeout:?}");
    }
    assert_eq!(strays(&berth).await, Vec::<String>::new());
}

/// `Sandbox::cancel` ends the exec of one action, found by the action id in
/// its wrapper's token, from a second handle on the container (as another
/// berth process has): its background child too, its output so far kept;
/// another action's exec in the same container runs on.
#[tokio::test]
async fn cancel_ends_one_actions_exec_and_no_other() {
    let (_layout, berth) = berth_or_skip!("cancel-action");
    let backend = common::engine().await.unwrap();
    let other_handle = backend.up(berth.spec().clone()).await.unwrap();
    let start = |action: &str, line: &str| {
        let mut request = ExecRequest::shell(line);
        request.action = Some(action.to_string());
        request
    };
    let (tx, mut rx) = berth_sandbox::output_channel();
    let cancelled = berth.exec(
        start("aaaa0001", "echo before; sleep 391 & sleep 392; echo never"),
        Some(tx),
    );
    let other = berth.exec(start("aaaa0002", "sleep 2; echo other"), None);
    let canceller = async {
        while !matches!(rx.recv().await, Some(OutputChunk::Stdout(b)) if b.starts_with(b"before")) {
        }
        assert!(
            !other_handle.cancel("ffff0000").await.unwrap(),
            "no such exec"
        );
        assert!(other_handle.cancel("aaaa0001").await.unwrap(), "found");
    };
    let (cancelled, other, ()) = tokio::join!(cancelled, other, canceller);
    let cancelled = cancelled.unwrap();
    assert_eq!(cancelled.status, ExitStatus::Signaled(9), "{cancelled:?}");
    assert_eq!(text(&cancelled.stdout.bytes), "before\n");
    assert!(!cancelled.timed_out && !cancelled.container_restarted);
    let other = other.unwrap();
    assert_eq!(
        (other.status, text(&other.stdout.bytes)),
        (ExitStatus::Exited(0), "other\n".to_string())
    );
    let left = strays(&berth).await;
    assert!(left.is_empty(), "{left:?}");
}
