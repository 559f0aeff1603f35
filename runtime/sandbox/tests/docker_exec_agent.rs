//! The exec agent of a Docker berth against the real engine: commands go
//! through it, through Docker when it is gone (and it comes back), and
//! `berth cancel` finds its execs. The exec contract itself runs through it
//! in `docker_contract`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use berth_sandbox::docker::DockerBerth;
use berth_sandbox::{ExecRequest, ExitStatus, OutputChunk, Sandbox};
use common::{Layout, text};

async fn berth_with_agent(test: &str) -> (Layout, DockerBerth) {
    let Some(backend) = common::engine().await else {
        panic!("the exec agent tests need a Docker engine (see the reason above)");
    };
    common::default_image(&backend).await;
    let layout = Layout::new(test);
    let mut spec = layout.spec("a");
    spec.exec_socket_root = Some(layout.root().join("sockets"));
    let berth = backend.up(spec).await.unwrap();
    (layout, berth)
}

/// Which path ran a command: its parent is the agent's exec process
/// (`… exec-run berth-exec <token>`) or Docker's wrapper shell
/// (`sh -c WRAPPER berth-exec <token> …`).
#[derive(Debug, PartialEq, Eq)]
enum Path {
    Agent,
    DockerExec,
}

async fn path_of_a_command(berth: &DockerBerth) -> Path {
    let out = berth
        .exec(
            ExecRequest::shell("tr '\\0' ' ' < /proc/$PPID/cmdline"),
            None,
        )
        .await
        .unwrap();
    let parent = text(&out.stdout.bytes);
    assert!(parent.contains("berth-exec bx."), "{parent:?}");
    if parent.contains("exec-run berth-exec") {
        Path::Agent
    } else {
        Path::DockerExec
    }
}

/// Kills the agent from inside, as a command of the agent could.
async fn kill_the_agent(berth: &DockerBerth) {
    let out = berth
        .exec(
            ExecRequest::shell(
                "p=exec-agent; for d in /proc/[0-9]*; do case \" $(tr '\\0' ' ' < $d/cmdline 2>/dev/null)\" in *\" $p /run/\"*) kill -9 ${d#/proc/} && echo killed;; esac; done",
            ),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        text(&out.stdout.bytes),
        "killed\n",
        "{}",
        text(&out.stderr.bytes)
    );
}

/// The agent starts with the container, as the child of its main process
/// (`berth-helper exec-agent-idle`), so bringing a berth up needs no exec
/// to start it; the first command already goes through it.
#[tokio::test]
async fn the_agent_starts_with_the_container_as_its_main_process_child() {
    let (_layout, berth) = berth_with_agent("agent-main").await;
    assert_eq!(path_of_a_command(&berth).await, Path::Agent);
    let out = berth
        .exec(ExecRequest::shell("ps -o pid,ppid,args"), None)
        .await
        .unwrap();
    let ps = text(&out.stdout.bytes);
    let pid_of = |what: &str| -> Option<(String, String)> {
        ps.lines()
            .find(|l| l.contains(what) && !l.contains("exec-run") && !l.contains("docker-init"))
            .map(|l| {
                let mut f = l.split_whitespace();
                (
                    f.next().unwrap_or("").to_string(),
                    f.next().unwrap_or("").to_string(),
                )
            })
    };
    let (idle, _) = pid_of(" exec-agent-idle ").unwrap_or_else(|| panic!("{ps}"));
    let (_, agent_parent) = pid_of(" exec-agent /run").unwrap_or_else(|| panic!("{ps}"));
    assert_eq!(agent_parent, idle, "{ps}");
}

#[tokio::test]
async fn commands_go_through_the_agent_and_through_docker_while_it_is_gone() {
    let (_layout, berth) = berth_with_agent("agent-path").await;
    assert_eq!(path_of_a_command(&berth).await, Path::Agent);

    kill_the_agent(&berth).await;
    // Nothing answers: the command runs through Docker all the same, and
    // the agent is started again; for a while commands go straight through
    // Docker rather than wait for an agent that may not come.
    assert_eq!(path_of_a_command(&berth).await, Path::DockerExec);
    let dir = berth.spec().exec_sockets().unwrap();
    let mark = dir.join(".unanswered");
    assert!(mark.exists());
    assert_eq!(path_of_a_command(&berth).await, Path::DockerExec);
    // Once that while has passed (the mark's age is what counts), the
    // restarted agent serves them again.
    std::fs::remove_file(&mark).unwrap();
    let mut path = Path::DockerExec;
    for _ in 0..5 {
        path = path_of_a_command(&berth).await;
        if path == Path::Agent {
            break;
        }
        std::fs::remove_file(&mark).unwrap();
    }
    assert_eq!(path, Path::Agent, "the agent came back");
}

/// `berth cancel` from another handle (another berth process) finds an
/// exec of the agent by its action: the command and its background child
/// die, the output so far is kept, the agent serves the next command.
#[tokio::test]
async fn cancel_ends_an_exec_of_the_agent() {
    let (_layout, berth) = berth_with_agent("agent-cancel").await;
    assert_eq!(path_of_a_command(&berth).await, Path::Agent);
    let backend = common::engine().await.unwrap();
    let other_handle = backend.up(berth.spec().clone()).await.unwrap();
    let mut request = ExecRequest::shell("echo before; sleep 491 & sleep 492; echo never");
    request.action = Some("cccc0001".to_string());
    let (tx, mut rx) = berth_sandbox::output_channel();
    let cancelled = berth.exec(request, Some(tx));
    let canceller = async {
        while !matches!(rx.recv().await, Some(OutputChunk::Stdout(b)) if b.starts_with(b"before")) {
        }
        assert!(other_handle.cancel("cccc0001").await.unwrap(), "found");
    };
    let (cancelled, ()) = tokio::join!(cancelled, canceller);
    let cancelled = cancelled.unwrap();
    assert_eq!(cancelled.status, ExitStatus::Signaled(9), "{cancelled:?}");
    assert_eq!(text(&cancelled.stdout.bytes), "before\n");
    assert!(!cancelled.timed_out);
    let left = berth
        .exec(
            ExecRequest::shell("ps -o args= | grep -c '[s]leep 49' || true"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        text(&left.stdout.bytes).trim(),
        "0",
        "the background child died too"
    );
    assert_eq!(path_of_a_command(&berth).await, Path::Agent);
}

/// Each berth's sockets are its own: another berth's container cannot see
/// them, and its agent serves only its own commands.
#[tokio::test]
async fn a_berths_socket_directory_is_its_own() {
    let (layout, berth) = berth_with_agent("agent-own").await;
    let backend = common::engine().await.unwrap();
    let mut spec = layout.spec("b");
    spec.exec_socket_root = Some(layout.root().join("sockets"));
    let other = backend.up(spec).await.unwrap();
    let a = berth.spec().exec_sockets().unwrap();
    let b = other.spec().exec_sockets().unwrap();
    assert_ne!(a, b);
    for handle in [&berth, &other] {
        assert_eq!(path_of_a_command(handle).await, Path::Agent);
        let out = handle
            .exec(
                ExecRequest::shell("touch /run/berth-exec/x 2>&1; ls -a /run/berth-exec"),
                None,
            )
            .await
            .unwrap();
        let listing = text(&out.stdout.bytes);
        assert!(listing.contains("Read-only file system"), "{listing}");
        assert!(!listing.contains("x\n"), "{listing}");
    }
}
