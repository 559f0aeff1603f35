//! The exec contract as a test suite, run against every backend.
//!
//! Each clause is an async function over `&dyn Sandbox`; the
//! [`exec_contract_tests!`](crate::exec_contract_tests) macro turns them into one
//! `#[tokio::test]` each, so the runner and Docker backends are held to exactly
//! the same checks. Everything is observed from inside the sandbox (pid files
//! under `/work`, a second exec to look for survivors), so the clauses work the
//! same for host processes and containers. No clause times anything: deadlines
//! only bound how long a broken backend can hang a test.
//!
//! A backend's test file:
//!
//! ```ignore
//! struct Fixture { /* keeps the worktree (and container) alive */ }
//! impl berth_sandbox::contract::ContractFixture for Fixture {
//!     fn sandbox(&self) -> &dyn berth_sandbox::Sandbox { &self.runner }
//! }
//! async fn fixture() -> Fixture { /* ... */ }
//! berth_sandbox::exec_contract_tests!(fixture);
//! ```
//!
//! The fixture's `/work` must start empty and writable, and `/tmp` inside the
//! sandbox must be writable. Needs `sh` with `kill`, `trap` and `wait`, and
//! `cat`, `printf`, `tr`, `seq`, `head`, `sleep`, `chmod`, `grep`, `touch`,
//! `mkdir`, `rm`, `rmdir`, `mv`, `ln`, `true`, `false` and `/proc` inside the
//! sandbox (busybox has them all).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::sync::mpsc::Receiver;

use crate::{
    AccessEnforcement, ExecOutcome, ExecRequest, ExitStatus, Output, OutputChunk, OutputSink,
    Sandbox, SandboxError, WorkAccess,
};

/// What a backend's test provides: a fresh sandbox with an empty `/work`,
/// kept alive (with its worktree, container…) as long as the fixture lives.
pub trait ContractFixture: Send + Sync {
    fn sandbox(&self) -> &dyn Sandbox;
}

/// The deadline of an exec that should finish on its own: generous, only so a
/// broken backend fails instead of hanging.
const NO_HANG: Duration = Duration::from_secs(120);
/// How long after its deadline an exec may take to return before the clause
/// calls it hung (the backend's kill grace is far shorter).
const RETURN_BOUND: Duration = Duration::from_secs(60);

/// Expands to one `#[tokio::test]` per contract clause, in a module
/// `exec_contract`. The argument is a callable returning a future of a
/// [`ContractFixture`]: an `async fn` name or an `|| async { … }` closure.
/// The calling crate needs `tokio` (macros, multi-thread runtime) as a
/// dev-dependency.
#[macro_export]
macro_rules! exec_contract_tests {
    ($fixture:expr) => {
        $crate::exec_contract_tests!(@clauses $fixture;
            argv_runs_without_a_shell,
            shell_runs_a_command_line,
            cwd_inside_work,
            cwd_outside_work_is_refused,
            missing_cwd_is_a_typed_error,
            env_is_passed,
            stdin_is_optional,
            streams_are_separate_and_live,
            exit_codes_are_real,
            timeout_kills_the_whole_tree,
            output_cap_keeps_the_tail,
            finished_exec_leaves_no_background_children,
            large_output_does_not_deadlock,
            a_slow_reader_throttles_the_command,
            read_only_work_refuses_writes,
        );
    };
    (@clauses $fixture:expr; $($clause:ident),* $(,)?) => {
        mod exec_contract {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $clause() {
                    let fixture = ($fixture)().await;
                    $crate::contract::$clause(
                        $crate::contract::ContractFixture::sandbox(&fixture),
                    )
                    .await;
                }
            )*
        }
    };
}

fn shell(line: &str) -> ExecRequest {
    let mut request = ExecRequest::shell(line);
    request.timeout = NO_HANG;
    request
}

fn argv(args: &[&str]) -> ExecRequest {
    let mut request = ExecRequest::argv(args.iter().copied());
    request.timeout = NO_HANG;
    request
}

/// Runs a request that must be accepted, and must return within its deadline
/// plus [`RETURN_BOUND`].
async fn run(sb: &dyn Sandbox, request: ExecRequest) -> ExecOutcome {
    run_with_sink(sb, request, None).await
}

async fn run_with_sink(
    sb: &dyn Sandbox,
    request: ExecRequest,
    sink: Option<OutputSink>,
) -> ExecOutcome {
    let what = format!("{:?}", request.program);
    let bound = request.timeout + RETURN_BOUND;
    match tokio::time::timeout(bound, sb.exec(request, sink)).await {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(e)) => panic!("exec {what} failed: {e}"),
        Err(_) => panic!("exec {what} did not return within {bound:?}"),
    }
}

/// Runs a setup command that must succeed.
async fn setup(sb: &dyn Sandbox, line: &str) {
    let outcome = run(sb, shell(line)).await;
    assert_eq!(
        outcome.status,
        ExitStatus::Exited(0),
        "setup {line:?} failed: {}",
        text(&outcome.stderr)
    );
}

fn text(output: &Output) -> String {
    String::from_utf8_lossy(&output.bytes).into_owned()
}

fn full(bytes: &[u8]) -> Output {
    Output {
        bytes: bytes.to_vec(),
        total: bytes.len() as u64,
        truncated: false,
    }
}

fn drain_chunks(rx: &mut Receiver<OutputChunk>) -> (Vec<u8>, Vec<u8>) {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    while let Ok(chunk) = rx.try_recv() {
        match chunk {
            OutputChunk::Stdout(b) => out.extend(b),
            OutputChunk::Stderr(b) => err.extend(b),
        }
    }
    (out, err)
}

/// Waits (bounded) until none of the processes whose pids are in `pid_files`
/// (paths under `/work`) is alive, looking from inside the sandbox. Zombies
/// count as gone: they run nothing and hold nothing.
async fn assert_no_survivors(sb: &dyn Sandbox, pid_files: &[&str]) {
    const CHECK: &str = r#"for f in "$@"; do
  if [ ! -s "$f" ]; then echo "no pid in $f"; continue; fi
  pid=$(cat "$f")
  if [ -d "/proc/$pid" ] && ! grep -q '^State:[[:space:]]*[ZX]' "/proc/$pid/status" 2>/dev/null; then
    echo "alive: $f (pid $pid)"
  fi
done"#;
    let mut args = vec!["sh", "-c", CHECK, "check"];
    args.extend_from_slice(pid_files);
    let mut report = String::new();
    for _ in 0..50 {
        let outcome = run(sb, argv(&args)).await;
        report = text(&outcome.stdout);
        if report.is_empty() {
            return;
        }
        if report.contains("no pid") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("processes survived their exec:\n{report}");
}

/// An argv runs as given, each element one argument, no shell in between.
pub async fn argv_runs_without_a_shell(sb: &dyn Sandbox) {
    let outcome = run(
        sb,
        argv(&[
            "sh",
            "-c",
            r#"printf '%s|' "$@""#,
            "x",
            "a b",
            "$HOME",
            "*",
            "c",
        ]),
    )
    .await;
    assert_eq!(
        outcome.status,
        ExitStatus::Exited(0),
        "{}",
        text(&outcome.stderr)
    );
    assert_eq!(outcome.stdout, full(b"a b|$HOME|*|c|"));
    assert_eq!(outcome.stderr, full(b""));
    assert!(!outcome.timed_out);

    let outcome = run(sb, argv(&["printf", "%s-%s", "one two", "three"])).await;
    assert_eq!(outcome.stdout, full(b"one two-three"));
}

/// A command line runs under `sh -c`, with its own exit code.
pub async fn shell_runs_a_command_line(sb: &dyn Sandbox) {
    let outcome = run(
        sb,
        shell("x=world; echo \"hello $x\" | tr a-z A-Z; echo oops >&2; exit 3"),
    )
    .await;
    assert_eq!(outcome.status, ExitStatus::Exited(3));
    assert_eq!(outcome.stdout, full(b"HELLO WORLD\n"));
    assert_eq!(outcome.stderr, full(b"oops\n"));
    assert!(!outcome.timed_out);
}

/// The working directory is the one asked for, inside `/work`.
pub async fn cwd_inside_work(sb: &dyn Sandbox) {
    setup(
        sb,
        "mkdir -p /work/sub/deeper && printf here > /work/sub/deeper/marker",
    )
    .await;
    let cases: Vec<(&str, ExecRequest)> = vec![
        ("/work/sub/deeper", argv(&["cat", "marker"])),
        ("/work/sub/deeper/", shell("cat marker")),
        ("/work", shell("cat sub/deeper/marker")),
        ("/work/sub", argv(&["cat", "deeper/marker"])),
    ];
    for (cwd, mut request) in cases {
        request.cwd = cwd.to_string();
        let outcome = run(sb, request).await;
        assert_eq!(
            outcome.stdout,
            full(b"here"),
            "cwd {cwd}: {}",
            text(&outcome.stderr)
        );
    }
}

/// A working directory outside `/work`, relative, or with `.`/`..`, is refused
/// before anything runs.
pub async fn cwd_outside_work_is_refused(sb: &dyn Sandbox) {
    for cwd in [
        "/",
        "/etc",
        "/tmp",
        "/workspace",
        "work",
        "",
        "/work/../etc",
        "/work/./x",
    ] {
        let mut request = shell("touch /work/ran");
        request.cwd = cwd.to_string();
        match sb.exec(request, None).await {
            Err(SandboxError::InvalidRequest(message)) => {
                assert!(message.contains("/work"), "cwd {cwd:?}: {message}")
            }
            other => panic!("cwd {cwd:?} should be refused, got {other:?}"),
        }
    }
    let outcome = run(sb, shell("test -e /work/ran && echo ran || echo clean")).await;
    assert_eq!(outcome.stdout, full(b"clean\n"));
}

/// A working directory that does not exist is a typed error naming it.
pub async fn missing_cwd_is_a_typed_error(sb: &dyn Sandbox) {
    for request in [shell("true"), argv(&["true"])] {
        let mut request = request;
        request.cwd = "/work/not-there".to_string();
        match sb.exec(request, None).await {
            Err(e @ SandboxError::MissingCwd { .. }) => {
                assert!(e.to_string().contains("/work/not-there"), "{e}")
            }
            other => panic!("expected MissingCwd, got {other:?}"),
        }
    }
}

/// The request's environment reaches the command; `/work` in a value means
/// the same place as everywhere else.
pub async fn env_is_passed(sb: &dyn Sandbox) {
    setup(sb, "printf 'via env' > /work/envfile").await;
    let mut request = shell(r#"printf '%s|' "$BERTH_CONTRACT"; cat "$BERTH_FILE""#);
    request.env = BTreeMap::from([
        ("BERTH_CONTRACT".to_string(), "a b=c".to_string()),
        ("BERTH_FILE".to_string(), "/work/envfile".to_string()),
    ]);
    let outcome = run(sb, request).await;
    assert_eq!(
        outcome.stdout,
        full(b"a b=c|via env"),
        "{}",
        text(&outcome.stderr)
    );
}

/// Stdin is the request's bytes, then end of file; without it, empty.
pub async fn stdin_is_optional(sb: &dyn Sandbox) {
    let mut request = argv(&["cat"]);
    request.stdin = Some(b"line 1\nline 2\n".to_vec());
    let outcome = run(sb, request).await;
    assert_eq!(outcome.stdout, full(b"line 1\nline 2\n"));

    let outcome = run(sb, argv(&["cat"])).await;
    assert_eq!(
        (outcome.status, outcome.stdout),
        (ExitStatus::Exited(0), full(b""))
    );
    assert!(!outcome.timed_out, "cat without stdin must see end of file");

    // Input the command never reads is not an error.
    let mut request = shell("echo ignored");
    request.stdin = Some(vec![b'x'; 4 << 20]);
    let outcome = run(sb, request).await;
    assert_eq!(
        (outcome.status, outcome.stdout),
        (ExitStatus::Exited(0), full(b"ignored\n"))
    );
}

/// Stdout and stderr are kept apart, and chunks reach the sink while the
/// command still runs: here the command cannot finish until a second exec,
/// started only once the first chunk arrived, lets it.
pub async fn streams_are_separate_and_live(sb: &dyn Sandbox) {
    let (tx, mut rx) = crate::output_channel();
    let slow = shell(
        "echo ready; echo warming >&2; \
         while [ ! -e /work/go ]; do sleep 1; done; \
         echo done; echo finished >&2",
    );
    let producer = run_with_sink(sb, slow, Some(tx));
    let releaser = async {
        let first = tokio::time::timeout(NO_HANG, rx.recv()).await;
        let first = match first {
            Ok(Some(chunk)) => chunk,
            _ => panic!("no output chunk arrived while the command was running"),
        };
        setup(sb, "touch /work/go").await;
        first
    };
    let (outcome, first) = tokio::join!(producer, releaser);
    assert!(!outcome.timed_out, "the command was never released");
    assert_eq!(outcome.status, ExitStatus::Exited(0));
    assert_eq!(outcome.stdout, full(b"ready\ndone\n"));
    assert_eq!(outcome.stderr, full(b"warming\nfinished\n"));
    let (mut out, mut err) = match first {
        OutputChunk::Stdout(b) => (b, Vec::new()),
        OutputChunk::Stderr(b) => (Vec::new(), b),
    };
    let (rest_out, rest_err) = drain_chunks(&mut rx);
    out.extend(rest_out);
    err.extend(rest_err);
    assert_eq!(
        (out, err),
        (b"ready\ndone\n".to_vec(), b"warming\nfinished\n".to_vec())
    );
}

/// Exit codes are the real ones: 126 and 127 as a shell reports them,
/// a signal as `Signaled`, for command lines and argv alike.
pub async fn exit_codes_are_real(sb: &dyn Sandbox) {
    setup(
        sb,
        "printf 'echo hi\\n' > /work/noexec.sh && chmod 644 /work/noexec.sh",
    )
    .await;
    let cases: Vec<(ExecRequest, ExitStatus)> = vec![
        (shell("exit 0"), ExitStatus::Exited(0)),
        (shell("exit 3"), ExitStatus::Exited(3)),
        (shell("exit 255"), ExitStatus::Exited(255)),
        (shell("/work/noexec.sh"), ExitStatus::Exited(126)),
        (shell("berth-no-such-command-7f3a"), ExitStatus::Exited(127)),
        (shell("kill -TERM $$"), ExitStatus::Signaled(15)),
        (shell("kill -KILL $$"), ExitStatus::Signaled(9)),
        (
            shell("sleep 1000 & kill -KILL $!; wait $!"),
            ExitStatus::Exited(137),
        ),
        (argv(&["true"]), ExitStatus::Exited(0)),
        (argv(&["false"]), ExitStatus::Exited(1)),
        (argv(&["/work/noexec.sh"]), ExitStatus::Exited(126)),
        (
            argv(&["berth-no-such-program-7f3a"]),
            ExitStatus::Exited(127),
        ),
        (
            argv(&["sh", "-c", "kill -TERM $$"]),
            ExitStatus::Signaled(15),
        ),
    ];
    for (request, want) in cases {
        let what = format!("{:?}", request.program);
        let outcome = run(sb, request).await;
        assert_eq!(
            outcome.status,
            want,
            "{what}: stderr {}",
            text(&outcome.stderr)
        );
        assert!(!outcome.timed_out, "{what}");
        if want == ExitStatus::Exited(127) || want == ExitStatus::Exited(126) {
            assert!(
                !outcome.stderr.bytes.is_empty(),
                "{what}: a 126/127 says why on stderr"
            );
        }
    }
}

/// At the deadline the whole tree dies — background children, orphaned
/// grandchildren, processes that ignore SIGTERM — and the outcome says so.
pub async fn timeout_kills_the_whole_tree(sb: &dyn Sandbox) {
    let cases = [
        (
            "wait",
            "echo $$ > /work/t1.main; sleep 1000 & echo $! > /work/t1.bg; wait",
        ),
        (
            "orphan",
            "(sleep 1000 & echo $! > /work/t2.bg); echo $$ > /work/t2.main; sleep 1000",
        ),
        (
            "ignores TERM",
            "trap '' TERM; echo $$ > /work/t3.main; sleep 1000 & echo $! > /work/t3.bg; wait",
        ),
    ];
    let run_case = |line: &'static str| async move {
        let mut request = shell(line);
        request.timeout = Duration::from_secs(3);
        run(sb, request).await
    };
    let (a, b, c) = tokio::join!(
        run_case(cases[0].1),
        run_case(cases[1].1),
        run_case(cases[2].1)
    );
    let outcomes = [(cases[0].0, a), (cases[1].0, b), (cases[2].0, c)];
    for (name, outcome) in outcomes {
        assert!(outcome.timed_out, "{name}: the deadline must be reported");
        assert!(!outcome.status.success(), "{name}: {:?}", outcome.status);
    }
    assert_no_survivors(
        sb,
        &[
            "/work/t1.main",
            "/work/t1.bg",
            "/work/t2.main",
            "/work/t2.bg",
            "/work/t3.main",
            "/work/t3.bg",
        ],
    )
    .await;
}

/// Output beyond the cap keeps the tail, and says how much there was; each
/// stream has its own cap.
pub async fn output_cap_keeps_the_tail(sb: &dyn Sandbox) {
    let mut request = shell("seq 1 5000; seq 1 10 >&2");
    request.output_cap = 1000;
    let outcome = run(sb, request).await;
    let all: String = (1..=5000).map(|i| format!("{i}\n")).collect();
    let tail = &all.as_bytes()[all.len() - 1000..];
    assert_eq!(
        outcome.stdout,
        Output {
            bytes: tail.to_vec(),
            total: all.len() as u64,
            truncated: true
        }
    );
    let err: String = (1..=10).map(|i| format!("{i}\n")).collect();
    assert_eq!(outcome.stderr, full(err.as_bytes()));
}

/// Background processes a finished command left behind are killed, and the
/// exec does not wait for them (nor for the output pipe they inherited).
pub async fn finished_exec_leaves_no_background_children(sb: &dyn Sandbox) {
    let cases = [
        (
            "holds stdout",
            "sleep 1000 & echo $! > /work/f1.bg; echo done",
        ),
        (
            "output redirected",
            "sleep 1000 > /dev/null 2>&1 & echo $! > /work/f2.bg; echo done",
        ),
        (
            "ignores TERM",
            "trap '' TERM; sleep 1000 & echo $! > /work/f3.bg; echo done",
        ),
        (
            "orphaned",
            "(sleep 1000 & echo $! > /work/f4.bg); echo done",
        ),
    ];
    for (name, line) in cases {
        let outcome = run(sb, shell(line)).await;
        assert!(
            !outcome.timed_out,
            "{name}: the exec waited for its background child"
        );
        assert_eq!(outcome.status, ExitStatus::Exited(0), "{name}");
        assert_eq!(outcome.stdout, full(b"done\n"), "{name}");
    }
    assert_no_survivors(
        sb,
        &["/work/f1.bg", "/work/f2.bg", "/work/f3.bg", "/work/f4.bg"],
    )
    .await;
}

/// Megabytes on both streams at once, and on stdin, neither deadlock nor get
/// lost.
pub async fn large_output_does_not_deadlock(sb: &dyn Sandbox) {
    let size = 6_000_000u64;
    let request = shell(&format!(
        "head -c {size} /dev/zero >&2 & head -c {size} /dev/zero; wait"
    ));
    let cap = request.output_cap;
    let outcome = run(sb, request).await;
    assert_eq!(outcome.status, ExitStatus::Exited(0));
    for (name, output) in [("stdout", &outcome.stdout), ("stderr", &outcome.stderr)] {
        assert_eq!(
            (output.total, output.truncated, output.bytes.len()),
            (size, true, cap),
            "{name}"
        );
        assert!(output.bytes.iter().all(|b| *b == 0), "{name}");
    }

    let input: Vec<u8> = (0..4_000_000u32).map(|i| (i % 251) as u8).collect();
    let mut request = argv(&["cat"]);
    request.stdin = Some(input.clone());
    request.output_cap = 8 << 20;
    let outcome = run(sb, request).await;
    assert_eq!(outcome.status, ExitStatus::Exited(0));
    assert!(
        outcome.stdout == full(&input),
        "4 MB through stdin came back changed"
    );
}

/// A sink whose reader pauses holds the command back — its writes wait —
/// instead of the backend holding everything it prints; once read, the
/// stream is complete. (`berth exec` behind a paused pipe held 1.47 GB.)
pub async fn a_slow_reader_throttles_the_command(sb: &dyn Sandbox) {
    let size: u64 = 64 << 20;
    let (tx, mut rx) = crate::output_channel();
    let request = shell(&format!(
        "rm -f /work/wrote-all; head -c {size} /dev/zero; touch /work/wrote-all"
    ));
    let exec = run_with_sink(sb, request, Some(tx));
    let reader = async {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let paused = run(
            sb,
            shell("if [ -e /work/wrote-all ]; then echo finished; else echo waiting; fi"),
        )
        .await;
        let mut total = 0u64;
        while let Some(chunk) = rx.recv().await {
            match chunk {
                OutputChunk::Stdout(b) => {
                    assert!(b.iter().all(|b| *b == 0), "stdout changed on the way");
                    total += b.len() as u64;
                }
                OutputChunk::Stderr(b) => panic!("stderr: {}", String::from_utf8_lossy(&b)),
            }
        }
        (text(&paused.stdout), total)
    };
    let (outcome, (paused, total)) = tokio::join!(exec, reader);
    assert_eq!(
        paused, "waiting\n",
        "the command wrote {size} bytes while nobody read its output: they were held somewhere"
    );
    assert_eq!(total, size, "bytes through the sink");
    assert_eq!(outcome.status, ExitStatus::Exited(0));
    assert!(!outcome.timed_out);
    assert_eq!(outcome.stdout.total, size);
}

/// Read-only `/work` refuses every kind of write with a permission error
/// (what the pipeline's permission retry recognises), still allows reading
/// and writing elsewhere, and read-write comes back.
pub async fn read_only_work_refuses_writes(sb: &dyn Sandbox) {
    setup(sb, "printf before > /work/ro.txt && mkdir -p /work/dir").await;
    match sb.set_work_access(WorkAccess::ReadOnly).await {
        Ok(AccessEnforcement::Enforced) => {}
        Ok(AccessEnforcement::NotEnforced(message)) => {
            assert!(!message.is_empty(), "NotEnforced must say why");
            assert_eq!(
                sb.set_work_access(WorkAccess::ReadWrite).await.unwrap(),
                AccessEnforcement::Enforced
            );
            return;
        }
        Err(e) => panic!("set read-only: {e}"),
    }
    let refused = [
        "echo x > /work/ro.txt",
        "echo x >> /work/ro.txt",
        "touch /work/new",
        "mkdir /work/newdir",
        "rm /work/ro.txt",
        "rmdir /work/dir",
        "mv /work/ro.txt /work/moved",
        "ln -s /etc /work/link",
        ": > /work/ro.txt",
    ];
    for line in refused {
        let outcome = run(sb, shell(line)).await;
        let stderr = text(&outcome.stderr).to_lowercase();
        assert!(
            !outcome.status.success(),
            "{line} must fail under read-only"
        );
        assert!(
            stderr.contains("permission denied") || stderr.contains("read-only file system"),
            "{line}: stderr must name a permission error: {stderr}"
        );
    }
    let outcome = run(
        sb,
        shell("cat /work/ro.txt; echo x > /dev/null && f=/tmp/berth-ro-$$ && echo y > $f && rm $f && echo ok"),
    )
    .await;
    assert_eq!(
        outcome.stdout,
        full(b"beforeok\n"),
        "{}",
        text(&outcome.stderr)
    );

    assert_eq!(
        sb.set_work_access(WorkAccess::ReadWrite).await.unwrap(),
        AccessEnforcement::Enforced
    );
    let outcome = run(
        sb,
        shell("echo after > /work/ro.txt && cat /work/ro.txt && touch /work/new"),
    )
    .await;
    assert_eq!(
        (outcome.status, outcome.stdout),
        (ExitStatus::Exited(0), full(b"after\n"))
    );
}
