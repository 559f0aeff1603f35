//! Docker berths against the real engine: git inside the container, isolation
//! between agents, hardening seen from inside, limits, write access, and the
//! lifecycle. Each test uses its own project; its containers go with it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use berth_sandbox::docker::{DockerBerth, ResourceLimits};
use berth_sandbox::{BerthMode, ExecOutcome, ExecRequest, ExitStatus, Sandbox, WorkAccess};
use common::{Layout, git, text};

async fn sh(berth: &DockerBerth, line: &str) -> ExecOutcome {
    let mut r = ExecRequest::shell(line);
    r.timeout = Duration::from_secs(60);
    r.env = BTreeMap::from([
        ("GIT_AUTHOR_NAME".to_string(), "dev-1[bot]".to_string()),
        (
            "GIT_AUTHOR_EMAIL".to_string(),
            "dev-1@berth.invalid".to_string(),
        ),
        ("GIT_COMMITTER_NAME".to_string(), "dev-1[bot]".to_string()),
        (
            "GIT_COMMITTER_EMAIL".to_string(),
            "dev-1@berth.invalid".to_string(),
        ),
    ]);
    berth.exec(r, None).await.unwrap()
}

/// Runs a command that must succeed; returns its stdout.
async fn ok(berth: &DockerBerth, line: &str) -> String {
    let out = sh(berth, line).await;
    assert_eq!(
        out.status,
        ExitStatus::Exited(0),
        "{line}: stdout {} stderr {}",
        text(&out.stdout.bytes),
        text(&out.stderr.bytes)
    );
    text(&out.stdout.bytes)
}

#[tokio::test]
async fn git_works_at_work_on_the_agents_branch() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("git");
    let spec = layout.spec("dev-1");
    let repo = spec.agent_repo.clone();
    let berth = backend.up(spec).await.unwrap();
    assert_eq!(berth.kind(), BerthMode::Mounted);
    assert!(!berth.adopted());

    assert_eq!(ok(&berth, "id -u; pwd").await, "1000\n/work\n");
    assert_eq!(
        ok(&berth, "git rev-parse --abbrev-ref HEAD").await,
        "agent/dev-1/t1\n"
    );
    assert_eq!(ok(&berth, "git status --porcelain").await, "");
    ok(&berth, "echo change >> README.md && echo new > new.txt").await;
    assert_eq!(
        ok(&berth, "git status --porcelain").await,
        " M README.md\n?? new.txt\n"
    );
    assert!(ok(&berth, "git diff").await.contains("+change"));
    ok(&berth, "git add -A && git commit -q -m 'agent work'").await;
    assert_eq!(
        ok(&berth, "git log --format=%s%x09%an").await,
        "agent work\tdev-1[bot]\nfirst\ttest\n"
    );
    // The commit is on the agent's branch in its own repository, as the host
    // sees it; the forge did not change.
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s", "agent/dev-1/t1"]),
        "agent work\n"
    );
    let forge_branches = git(&layout.forge, &["branch", "--format=%(refname:short)"]);
    assert_eq!(forge_branches, "main\n");
    let new_object = git(&repo, &["rev-parse", "agent/dev-1/t1"]);
    let in_forge = std::process::Command::new("git")
        .args([
            "-c",
            "safe.directory=*",
            "cat-file",
            "-e",
            new_object.trim(),
        ])
        .current_dir(&layout.forge)
        .status()
        .unwrap();
    assert!(
        !in_forge.success(),
        "the agent's objects stay out of the forge"
    );
}

#[tokio::test]
async fn one_agent_cannot_touch_another_or_the_forge() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("isolation");
    let a = layout.spec("a");
    let b_paths = layout.agent("b");
    let objects = a.forge_objects.clone();
    let berth = backend.up(a).await.unwrap();

    // Agent B's worktree and repository are not mounted: not even visible.
    for path in [&b_paths.worktree, &b_paths.repo] {
        let out = sh(&berth, &format!("ls {}", path.display())).await;
        assert_ne!(
            out.status,
            ExitStatus::Exited(0),
            "{} is visible",
            path.display()
        );
        let out = sh(
            &berth,
            &format!("mkdir -p {0} && echo x > {0}/planted", path.display()),
        )
        .await;
        assert!(
            !path.join("planted").exists(),
            "a write reached {} ({})",
            path.display(),
            text(&out.stderr.bytes)
        );
    }
    // The forge's objects are there, read-only.
    let out = sh(&berth, &format!("touch {}/planted", objects.display())).await;
    assert_ne!(out.status, ExitStatus::Exited(0));
    assert!(
        text(&out.stderr.bytes).contains("Read-only file system"),
        "{}",
        text(&out.stderr.bytes)
    );
    let pack_dir = objects.join("pack");
    let out = sh(&berth, &format!("rm -rf {}", pack_dir.display())).await;
    assert_ne!(out.status, ExitStatus::Exited(0));
    assert!(pack_dir.exists());
    // Nor the forge's refs (not mounted at all).
    let forge_head = layout.forge.join("HEAD");
    let out = sh(&berth, &format!("cat {}", forge_head.display())).await;
    assert_ne!(out.status, ExitStatus::Exited(0));
}

#[tokio::test]
async fn hardening_holds_from_inside() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("hardening");
    let berth = backend.up(layout.spec("a")).await.unwrap();

    let status = ok(
        &berth,
        "grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status",
    )
    .await;
    assert_eq!(
        status,
        "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n"
    );
    assert_eq!(ok(&berth, "ls /sys/class/net").await, "lo\n");
    let dev: Vec<String> = ok(&berth, "tail -n +3 /proc/net/dev")
        .await
        .lines()
        .map(|l| l.split(':').next().unwrap().trim().to_string())
        .collect();
    assert_eq!(dev, vec!["lo".to_string()]);
    assert_eq!(ok(&berth, "id -u; id -g").await, "1000\n1000\n");
    // The Docker socket is nowhere.
    let out = sh(&berth, "ls -la /var/run/docker.sock /run/docker.sock").await;
    assert_ne!(out.status, ExitStatus::Exited(0));
    // Root files are not the agent's.
    let out = sh(&berth, "echo x >> /etc/passwd").await;
    assert_ne!(out.status, ExitStatus::Exited(0));
}

#[tokio::test]
async fn the_pids_limit_holds_against_a_fork_loop() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("pids");
    let mut spec = layout.spec("a");
    spec.limits = ResourceLimits {
        pids: 40,
        ..ResourceLimits::default()
    };
    let berth = backend.up(spec).await.unwrap();
    // Try to start 200 sleepers; the limit stops it well short (the shell
    // gives up at its first failed fork).
    let out = sh(
        &berth,
        "i=0; while [ $i -lt 200 ]; do sleep 30 & i=$((i+1)); echo $i; done",
    )
    .await;
    let started: usize = text(&out.stdout.bytes)
        .lines()
        .last()
        .unwrap_or("0")
        .parse()
        .unwrap();
    assert!(started < 40, "{started} sleepers under a 40 pids limit");
    assert_ne!(out.status, ExitStatus::Exited(0));
    assert!(
        text(&out.stderr.bytes).contains("fork"),
        "expected a fork failure, stderr: {}",
        text(&out.stderr.bytes)
    );
    // The leftover sleepers died with the exec: the berth is usable at once.
    assert_eq!(ok(&berth, "echo alive").await, "alive\n");
}

#[tokio::test]
async fn the_memory_limit_kills_and_is_reported_as_oom() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("oom");
    let mut spec = layout.spec("a");
    spec.limits = ResourceLimits {
        memory_bytes: 64 << 20,
        ..ResourceLimits::default()
    };
    let berth = backend.up(spec).await.unwrap();
    // `tail` keeps a whole newline-free "line" in memory. The killer takes
    // `tail`, so the shell running the pipeline exits with 137 itself.
    let out = sh(&berth, "head -c 400m /dev/zero | tail > /dev/null").await;
    assert_eq!(out.status, ExitStatus::Exited(137), "{out:?}");
    assert!(
        out.oom_killed,
        "exit 137 from the memory limit must say OOM"
    );
    assert!(!out.timed_out);
    // The victim itself at the top: a signal death, still out of memory.
    let out = sh(&berth, "exec tail < /dev/zero").await;
    assert_eq!(out.status, ExitStatus::Signaled(9), "{out:?}");
    assert!(out.oom_killed);
    // A child killed while the command itself exits 0 (a compiler under a
    // build tool that shrugs): still said.
    let out = sh(&berth, "tail < /dev/zero > /dev/null; echo after").await;
    assert_eq!(out.status, ExitStatus::Exited(0), "{out:?}");
    assert_eq!(text(&out.stdout.bytes), "after\n");
    assert!(out.oom_killed, "{out:?}");
    assert!(!text(&out.stderr.bytes).contains("berth-jobs"), "{out:?}");
    // A plain SIGKILL is not an out-of-memory kill.
    let out = sh(&berth, "kill -9 $$").await;
    assert_eq!(out.status, ExitStatus::Signaled(9));
    assert!(!out.oom_killed);
    assert_eq!(ok(&berth, "echo alive").await, "alive\n");
    let fine = sh(&berth, "echo alive").await;
    assert!(!fine.oom_killed && !fine.container_restarted, "{fine:?}");
}

#[tokio::test]
async fn a_restart_for_a_deadline_is_said_to_every_command_it_kills() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("restart");
    let mut spec = layout.spec("a");
    spec.limits.pids = 30;
    let berth = std::sync::Arc::new(backend.up(spec).await.unwrap());
    // Another command of the agent, running when the restart comes.
    let bystander = {
        let berth = berth.clone();
        tokio::spawn(async move { sh(&berth, "sleep 60; echo finished").await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Fills the pids limit, so not even the kill exec can start: only a
    // restart ends it by its deadline.
    // The loop's shell dies at its first failed fork; the command goes on
    // as a sleeper (`exec` needs no fork).
    let mut hog = ExecRequest::shell("(while :; do sleep 100 & done) 2>/dev/null; exec sleep 1000");
    hog.timeout = Duration::from_secs(2);
    let hog = berth.exec(hog, None).await.unwrap();
    assert!(hog.timed_out, "{hog:?}");
    assert!(hog.container_restarted, "{hog:?}");
    let bystander = bystander.await.unwrap();
    assert!(bystander.container_restarted, "{bystander:?}");
    assert!(
        !bystander.oom_killed && !bystander.timed_out,
        "{bystander:?}"
    );
    assert!(!text(&bystander.stdout.bytes).contains("finished"));
    // The berth works again.
    assert_eq!(ok(&berth, "echo alive").await, "alive\n");
}

#[tokio::test]
async fn work_access_flips_by_recreating_the_container() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("access");
    let spec = layout.spec("a");
    let worktree = spec.worktree.clone();
    let berth = backend.up(spec).await.unwrap();
    ok(&berth, "echo one > one.txt").await;

    let enforced = berth.set_work_access(WorkAccess::ReadOnly).await.unwrap();
    assert_eq!(enforced, berth_sandbox::AccessEnforcement::Enforced);
    assert_eq!(berth.work_access().await, WorkAccess::ReadOnly);
    let out = sh(&berth, "echo two > two.txt").await;
    assert_ne!(out.status, ExitStatus::Exited(0));
    assert!(text(&out.stderr.bytes).contains("Read-only"), "{out:?}");
    assert!(!worktree.join("two.txt").exists());
    assert_eq!(ok(&berth, "cat one.txt").await, "one\n");
    // Still the same berth, by name and labels.
    let listed = backend.list_berths(Some(&layout.project)).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].name, berth.container_name());

    berth.set_work_access(WorkAccess::ReadWrite).await.unwrap();
    ok(&berth, "echo two > two.txt").await;
    assert_eq!(
        std::fs::read_to_string(worktree.join("two.txt")).unwrap(),
        "two\n"
    );
}

#[tokio::test]
async fn the_root_is_read_only_and_tmp_and_home_are_bounded() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("roroot");
    let mut spec = layout.spec("a");
    assert!(spec.read_only_root, "read-only is the default");
    spec.limits.tmp_bytes = 2 << 20;
    spec.limits.tmp_inodes = 200;
    spec.limits.home_bytes = 2 << 20;
    let berth = backend.up(spec).await.unwrap();
    // The image is not writable, anywhere.
    for target in ["/usr/x", "/etc/x", "/x", "/usr/bin/x"] {
        let out = sh(&berth, &format!("echo x > {target}")).await;
        assert_ne!(out.status, ExitStatus::Exited(0), "{target} was writable");
        assert!(
            text(&out.stderr.bytes).contains("Read-only"),
            "{target}: {out:?}"
        );
    }
    // /tmp and $HOME are writable, executable, and bounded by size and inodes.
    assert_eq!(ok(&berth, "echo t > /tmp/x && cat /tmp/x").await, "t\n");
    assert_eq!(
        ok(
            &berth,
            "printf '#!/bin/sh\\necho ran\\n' > /tmp/s && chmod +x /tmp/s && /tmp/s"
        )
        .await,
        "ran\n"
    );
    assert_eq!(
        ok(&berth, "cd && pwd && echo h > f && cp /tmp/s ./s && ./s").await,
        "/home/agent\nran\n"
    );
    let out = sh(&berth, "dd if=/dev/zero of=/tmp/big bs=1024 count=4096").await;
    assert_ne!(out.status, ExitStatus::Exited(0));
    assert!(
        text(&out.stderr.bytes).contains("No space left on device"),
        "{out:?}"
    );
    let out = sh(
        &berth,
        "cd $HOME && dd if=/dev/zero of=big bs=1024 count=4096",
    )
    .await;
    assert!(
        text(&out.stderr.bytes).contains("No space left on device"),
        "{out:?}"
    );
    let out = sh(&berth, "rm -f /tmp/big; mkdir /tmp/n && cd /tmp/n && i=0; while [ $i -lt 400 ]; do touch f$i || exit 9; i=$((i+1)); done").await;
    assert_eq!(out.status, ExitStatus::Exited(9), "{out:?}");
    assert!(
        text(&out.stderr.bytes).contains("No space left on device"),
        "{out:?}"
    );
    // Mount options as the kernel shows them: exec (no noexec), nosuid, nodev.
    let mounts = ok(&berth, "grep -E ' /(tmp|home/agent) ' /proc/mounts").await;
    for line in mounts.lines() {
        assert!(!line.contains("noexec"), "{line}");
        assert!(line.contains("nosuid") && line.contains("nodev"), "{line}");
    }
    assert_eq!(mounts.lines().count(), 2, "{mounts}");
    ok(&berth, "echo w > /work/w").await;
}

/// A static program from `tests/programs`, built with the host's gcc into
/// `dir` and owned by `uid`.
fn build_static(name: &str, dir: &std::path::Path, uid: u32) -> std::path::PathBuf {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/programs")
        .join(format!("{name}.c"));
    let out = dir.join(name);
    let st = std::process::Command::new("gcc")
        .args(["-static", "-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("gcc (the tests build a static probe with it)");
    assert!(st.success(), "gcc -static {}", src.display());
    std::os::unix::fs::chown(&out, Some(uid), Some(uid)).unwrap();
    out
}

#[tokio::test]
async fn syscalls_outside_berths_profile_fail_with_eperm() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("seccomp");
    let spec = layout.spec("a");
    build_static("syscalls", &spec.worktree, spec.uid);
    let berth = backend.up(spec).await.unwrap();
    let report = ok(&berth, "./syscalls").await;
    let errno: BTreeMap<&str, i32> = report
        .lines()
        .map(|l| {
            let (name, e) = l.split_once(' ').unwrap();
            (name, e.parse().unwrap())
        })
        .collect();
    const EPERM: i32 = 1;
    const ENOSYS: i32 = 38;
    let cases = [
        ("io_uring_setup", EPERM),
        ("keyctl", EPERM),
        ("userfaultfd", EPERM),
        ("bpf", EPERM),
        ("perf_event_open", EPERM),
        ("unshare_newuser", EPERM),
        // Refused softly, so libc falls back to clone, whose flags are judged.
        ("clone3", ENOSYS),
        ("getpid", 0),
        ("fork", 0),
        // As Docker's default allows it: same uid, no capabilities.
        ("ptrace_traceme", 0),
    ];
    for (name, want) in cases {
        assert_eq!(errno.get(name), Some(&want), "{name} in:\n{report}");
    }
    // Ordinary work goes on under the profile: shells, pipes, git, threads of
    // busybox tools, files.
    assert_eq!(ok(&berth, "git status --porcelain").await, "?? syscalls\n");
    assert_eq!(
        ok(
            &berth,
            "echo a > f && cat f | tr a b && sort < f | head -1 && rm f"
        )
        .await,
        "b\na\n"
    );
    ok(&berth, "git add -A && git -c user.name=a -c user.email=a@b commit -qm probe && git log --oneline | wc -l").await;
}

#[tokio::test]
async fn the_berths_uid_owns_what_the_agent_makes_and_has_a_passwd_entry() {
    use std::os::unix::fs::MetadataExt;
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("identity");
    // A uid of the berth block (no host account), not 1000.
    let uid = 1_879_048_192 + 77;
    let spec = layout.spec_with_uid("a", uid);
    let worktree = spec.worktree.clone();
    let berth = backend.up(spec).await.unwrap();
    assert_eq!(
        ok(
            &berth,
            "id -u; id -g; id -un; echo $HOME; ls -dn $HOME | tr -s ' ' | cut -d' ' -f3,4"
        )
        .await,
        format!("{uid}\n{uid}\nagent\n/home/agent\n{uid} {uid}\n")
    );
    ok(&berth, "cp /bin/busybox s && chmod u+s s").await;
    let md = std::fs::metadata(worktree.join("s")).unwrap();
    assert_eq!(md.uid(), uid, "the setuid file belongs to the berth's uid");
    assert_ne!(md.uid(), 1000);
    assert_ne!(md.mode() & 0o4000, 0, "it is setuid");
    // The user database the container sees is berth's, read-only.
    let out = sh(&berth, "echo 'x:x:0:0::/:/bin/sh' >> /etc/passwd").await;
    assert_ne!(out.status, ExitStatus::Exited(0));
    assert!(berth_sandbox::identity::host_claims(uid).is_empty());
}

#[tokio::test]
async fn up_is_idempotent_and_down_leaves_nothing() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("lifecycle");
    let spec = layout.spec("a");
    let first = backend.up(spec.clone()).await.unwrap();
    ok(&first, "echo marker > /tmp/marker").await;
    // A second up (another process, or a restart) adopts the same container.
    let second = backend.up(spec.clone()).await.unwrap();
    assert!(second.adopted());
    assert_eq!(ok(&second, "cat /tmp/marker").await, "marker\n");

    // A changed spec replaces it.
    let mut changed = spec.clone();
    changed.limits.pids = 100;
    let third = backend.up(changed).await.unwrap();
    assert!(!third.adopted());
    let out = sh(&third, "cat /tmp/marker").await;
    assert_ne!(out.status, ExitStatus::Exited(0));

    assert!(backend.down(&layout.project, "a").await.unwrap());
    assert!(!backend.down(&layout.project, "a").await.unwrap());
    assert_eq!(
        backend.list_berths(Some(&layout.project)).await.unwrap(),
        vec![]
    );
    let err = third
        .exec(ExecRequest::shell("true"), None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("berth up"), "{err}");
}

#[tokio::test]
async fn specs_that_would_weaken_the_berth_are_refused() {
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("refuse");
    let base = layout.spec("a");

    let mut root_uid = base.clone();
    root_uid.uid = 0;
    let mut wrong_owner = base.clone();
    wrong_owner.uid = 1234;
    let mut socket = base.clone();
    socket.extra_mounts.push(berth_sandbox::docker::ExtraMount {
        host: "/var/run".into(),
        target: "/host-run".into(),
        read_only: true,
        in_scope: false,
    });
    let mut nested = base.clone();
    nested.extra_mounts.push(berth_sandbox::docker::ExtraMount {
        host: layout.root().to_path_buf(),
        target: "/work/inner".into(),
        read_only: true,
        in_scope: false,
    });
    let mut host_net = base.clone();
    host_net.network = berth_sandbox::docker::Network::Named("host".into());
    let mut bad_name = base.clone();
    bad_name.agent = "a.b".into();
    let mut missing_image = base.clone();
    missing_image.image = berth_sandbox::image::ImageRef::Named("berth-no-such-image:1".into());

    let cases = [
        (root_uid, "uid 0"),
        (wrong_owner, "chown -R 1234:1000"),
        (socket, "Docker socket"),
        (nested, "one inside the other"),
        (host_net, "namespace with the host"),
        (bad_name, "agent name"),
        (missing_image, "berth-no-such-image:1"),
    ];
    for (spec, want) in cases {
        let err = backend.up(spec).await.unwrap_err().to_string();
        assert!(err.contains(want), "want {want:?} in: {err}");
    }
    assert_eq!(
        backend.list_berths(Some(&layout.project)).await.unwrap(),
        vec![]
    );
}

#[tokio::test]
async fn an_attached_berth_runs_in_the_recorded_container_and_brings_a_removed_one_up_again() {
    use berth_sandbox::docker::{ConnectOptions, DockerConnection};
    let backend = engine_or_skip!();
    common::default_image(&backend).await;
    let layout = Layout::new("attach");
    let mut spec = layout.spec("a");
    spec.identity_dir = Some(layout.root().join("identity").join("a"));
    let attach = |spec: &berth_sandbox::docker::ContainerSpec| {
        let connection = DockerConnection::deferred(ConnectOptions::default());
        DockerBerth::attach(connection.clone(), spec.clone()).map(|b| (b, connection))
    };
    assert!(
        attach(&spec).is_none(),
        "nothing is up: nothing to attach to"
    );

    let up = backend.up(spec.clone()).await.unwrap();
    ok(&up, "echo marker > /tmp/marker").await;
    let (attached, connection) = attach(&spec).expect("up recorded its container");
    assert_eq!(attached.frame(), up.frame());
    assert!(
        !connection.is_connected(),
        "attaching asks the engine nothing"
    );
    assert_eq!(
        ok(&attached, "cat /tmp/marker").await,
        "marker\n",
        "the container up left"
    );
    assert!(connection.is_connected());

    // Removed behind berth's back: the next command brings it up again.
    let name = attached.container_name().to_string();
    let out = std::process::Command::new("docker")
        .args(["rm", "-f", &name])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        ok(&attached, "echo back; cat /tmp/marker 2>&1 || true")
            .await
            .lines()
            .next(),
        Some("back")
    );
    let listed = backend.list_berths(Some(&layout.project)).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].state, "running");

    // A changed `[sandbox]` is not attached to: it goes through `up`.
    let mut changed = spec.clone();
    changed.limits.pids = 99;
    assert!(attach(&changed).is_none());

    // Taken down through berth: no attach, and a clear error, not a
    // container brought back behind the person's back.
    assert!(backend.down_spec(&spec).await.unwrap());
    assert!(attach(&spec).is_none());
    let err = attached
        .exec(ExecRequest::shell("true"), None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("berth up"), "{err}");
    assert_eq!(
        backend.list_berths(Some(&layout.project)).await.unwrap(),
        vec![]
    );
}
